# bench_tests.cmake -- CI for bench/ (label bench): the histogram's unit
# tests, a few-seconds smoke run of every built-in engine (correctness fields
# and JSON shape only, never a timing), proof that the bench reports a
# baseline that oversells (bench/smoke_check.cmake), and the fault round in
# its short mode: the table is produced and the invariants held after every
# fault (bench/faults_check.cmake).
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
  set_tests_properties(bench_smoke bench_break_baseline_is_reported PROPERTIES TIMEOUT 180 LABELS bench)
  # its flashstock sync rows start 2 x 64 buyer threads each (about 20 s of
  # set-up in the plain build while each thread's handle mapped the segment
  # on its own, several times that under ASan, which timed it out at 180 s)
  set_tests_properties(bench_smoke PROPERTIES TIMEOUT 480)
  # the workloads on 2 buyer processes, a million orders in each async hot
  # row (200,000 in the others), in async and in sync durability
  # (bench/smoke_check.cmake says which rows): what `flashstock bench` runs
  # by default must run (the plain build only: the figures are for the log,
  # never asserted)
  if(NOT FLASH_SANITIZE AND NOT FLASH_TSAN)
    add_test(NAME bench_twoproc_rows_run
             COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:flashstock-bench> -DMODE=twoproc
                     -DOUT=${CMAKE_CURRENT_BINARY_DIR}/bench_twoproc
                     -P ${PROJECT_SOURCE_DIR}/bench/smoke_check.cmake)
    set_tests_properties(bench_twoproc_rows_run PROPERTIES TIMEOUT 400 LABELS bench)
    add_test(NAME bench_twoproc_sync_rows_run
             COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:flashstock-bench> -DMODE=twoproc_sync
                     -DOUT=${CMAKE_CURRENT_BINARY_DIR}/bench_twoproc_sync
                     -P ${PROJECT_SOURCE_DIR}/bench/smoke_check.cmake)
    set_tests_properties(bench_twoproc_sync_rows_run PROPERTIES TIMEOUT 600 LABELS bench)
    # rows that keep both cores busy do not run beside the kill loop (torture)
    set_tests_properties(bench_twoproc_rows_run bench_twoproc_sync_rows_run PROPERTIES
                         RESOURCE_LOCK cpu_flood)
  endif()
  set_tests_properties(bench_hist PROPERTIES LABELS bench)
endif()
if(TARGET flashstock AND TARGET flash_slowio AND EXISTS ${PROJECT_SOURCE_DIR}/bench/faults.c)
  add_test(NAME bench_faults_invariants_hold_after_each_fault
           COMMAND ${CMAKE_COMMAND} -DFLASHSTOCK=$<TARGET_FILE:flashstock>
                   -DSLOWIO=$<TARGET_FILE:flash_slowio>
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR}/bench_faults
                   -P ${PROJECT_SOURCE_DIR}/bench/faults_check.cmake)
  set_tests_properties(bench_faults_invariants_hold_after_each_fault PROPERTIES TIMEOUT 300 LABELS bench)
  if(TARGET amqp_consumer)
    # the broker fixture's readiness is an AMQP login (tests/fixtures/rabbitmq.sh)
    set_tests_properties(bench_faults_invariants_hold_after_each_fault PROPERTIES
                         ENVIRONMENT "FLASH_AMQP_PROBE=$<TARGET_FILE:amqp_consumer> probe")
  endif()
endif()
