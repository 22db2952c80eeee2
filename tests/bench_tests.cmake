# bench_tests.cmake -- CI for bench/: the histogram's unit tests, a
# few-seconds smoke run of every built-in engine (correctness fields and
# JSON shape only, never a timing), and proof that the bench reports a
# baseline that oversells (bench/smoke_check.cmake).
if(TARGET flashstock_bench)
  add_executable(bench_hist_test ${PROJECT_SOURCE_DIR}/bench/hist_test.c)
  target_link_libraries(bench_hist_test PRIVATE flashstock_bench PkgConfig::CMOCKA)
  add_test(NAME bench_hist COMMAND bench_hist_test)

  add_test(NAME bench_smoke
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:flashstock-bench> -DMODE=smoke
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR}/bench_smoke
                   -P ${PROJECT_SOURCE_DIR}/bench/smoke_check.cmake)
  add_test(NAME bench_break_baseline_is_reported
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:flashstock-bench> -DMODE=break
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR}/bench_break
                   -P ${PROJECT_SOURCE_DIR}/bench/smoke_check.cmake)
  set_tests_properties(bench_smoke bench_break_baseline_is_reported PROPERTIES TIMEOUT 180)
endif()
