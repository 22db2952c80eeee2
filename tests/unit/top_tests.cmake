# `flashstock top` through the real binary (tests/unit/test_top.c, created by the
# generic loop in tests/CMakeLists.txt): a daemon with --metrics runs in the
# test's own thread, so it needs the persist library and the helpers.
if(TARGET test_top AND TARGET flashstock)
  target_link_libraries(test_top PRIVATE flashstock_persist flash_test_helpers util)
  add_dependencies(test_top flashstock)
  set_tests_properties(test_top PROPERTIES LABELS "tools" TIMEOUT 120
                       ENVIRONMENT "FLASH_BIN=$<TARGET_FILE:flashstock>")
endif()

# test_mysql_dashboard runs `flashstock top --metrics` against a daemon with
# MySQL (this fragment is read after mysql_tests.cmake, which sets the
# MySQL tests' environment: append to it).
if(TARGET test_mysql_dashboard AND TARGET flashstock)
  add_dependencies(test_mysql_dashboard flashstock)
  set_property(TEST test_mysql_dashboard APPEND PROPERTY ENVIRONMENT "FLASH_BIN=$<TARGET_FILE:flashstock>")
endif()
