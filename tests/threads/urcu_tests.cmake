# The daemon's liburcu hand-offs (persist/mysql/mysql_pump.c's wfcqueue,
# persist/daemon/rcu_box.c's RCU-published snapshots).  In a -DFLASH_TSAN=ON build
# their tests also carry the label "tsan": ThreadSanitizer checks the
# hand-offs themselves (persist/tsan/urcu/ makes liburcu's atomics visible
# to it), and any report fails them.
#
# The WAL's writer and sync roles and the daemon's fdatasync thread
# (persist/storage/wal.c, persist/daemon/serve.c) go under it too.
foreach(name test_mysql_pump test_mysql_pump_handoff test_wal_commit test_wal_serve)
  if(TARGET ${name} AND FLASH_TSAN)
    set_tests_properties(${name} PROPERTIES LABELS "tsan")
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
                 "TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1")
  endif()
endforeach()

# persist/daemon/rcu_box.c, alone and under metrics.c (threads label from
# tests/threads/tsan_tests.cmake; they need the persist library the other thread
# tests do not)
foreach(name test_threads_rcu_box test_threads_metrics_publish)
  if(TARGET ${name})
    target_link_libraries(${name} PRIVATE flashstock_persist)
  endif()
endforeach()

# What the TSan stage of CI builds (tools/run.sh): the programs of the tests
# labelled "tsan", not the whole tree again.
if(FLASH_TSAN)
  add_custom_target(tsan_tests)
  foreach(src ${FLASH_THREAD_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_dependencies(tsan_tests ${name})
  endforeach()
  foreach(name test_mysql_pump test_mysql_pump_handoff test_wal_commit test_wal_serve)
    if(TARGET ${name})
      add_dependencies(tsan_tests ${name})
    endif()
  endforeach()
endif()
