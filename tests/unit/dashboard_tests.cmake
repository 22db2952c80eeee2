# The dashboard (issue 12, section 3): tests/unit/test_dashboard.c is created by
# the generic loop in tests/CMakeLists.txt; it drives the daemon with
# --metrics in a thread, so it needs the persist library and the helpers.
if(TARGET test_dashboard)
  target_link_libraries(test_dashboard PRIVATE flashstock_persist flash_test_helpers)
  set_tests_properties(test_dashboard PROPERTIES LABELS "persist" TIMEOUT 120)
endif()
