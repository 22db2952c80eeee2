# Tests of the `flashstock` command and of its CSV reader (tools/).
#
# test_csv is built by the test_*.c glob; it also needs the CSV reader,
# which lives outside the engine library.
if(TARGET test_csv AND TARGET flashstock_csv)
  target_link_libraries(test_csv PRIVATE flashstock_csv)
endif()
