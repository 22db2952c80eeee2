# The daemon's reservation expirer in process (tests/unit/test_expirer.c,
# created by the generic loop in tests/CMakeLists.txt): it needs the persist
# library, whose daemon/ folder holds expirer.h.
if(TARGET test_expirer)
  target_link_libraries(test_expirer PRIVATE flashstock_persist flash_test_helpers)
  set_tests_properties(test_expirer PROPERTIES LABELS "engine" TIMEOUT 120)
endif()
