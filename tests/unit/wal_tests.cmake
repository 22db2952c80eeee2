# WAL tests: tests/unit/test_wal_*.c and tests/sql/test_wal_serve_mysql.c are
# created by the generic loop in tests/CMakeLists.txt; they also need the
# persist library.
file(GLOB FLASH_WAL_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*/test_wal_*.c)
foreach(src ${FLASH_WAL_TESTS})
  get_filename_component(name ${src} NAME_WE)
  target_link_libraries(${name} PRIVATE flashstock_persist)
endforeach()
# test_wal_serve drives the daemon loop against real segments.
if(TARGET test_wal_serve AND TARGET flash_test_helpers)
  target_link_libraries(test_wal_serve PRIVATE flash_test_helpers)
endif()
# test_wal_faults: each I/O fault on a wal_t and through the daemon, then a restart.
if(TARGET test_wal_faults AND TARGET flash_test_helpers)
  target_link_libraries(test_wal_faults PRIVATE flash_test_helpers)
endif()
# `flashstock serve` and SIGTERM, through the real command.
if(TARGET flashstock)
  add_test(NAME wal_serve_sigterm
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/wal_serve_sigterm.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(wal_serve_sigterm PROPERTIES TIMEOUT 60)
  # ... and so does a SIGTERM that arrives while serve is still starting
  add_test(NAME wal_serve_sigterm_at_start
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/wal_serve_sigterm_at_start.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(wal_serve_sigterm_at_start PROPERTIES TIMEOUT 60)
endif()
# test_wal_serve_mysql: serve with the applier, on the private MariaDB that
# tests/sql/mysql_tests.cmake's fixture starts.
if(TARGET test_wal_serve_mysql)
  if(TARGET flash_test_helpers)
    target_link_libraries(test_wal_serve_mysql PRIVATE flash_test_helpers)
  endif()
  if(TEST mysql_server_start)
    set_tests_properties(test_wal_serve_mysql PROPERTIES FIXTURES_REQUIRED mariadb
                         RESOURCE_LOCK mariadb
                         ENVIRONMENT "FLASH_MARIADB_DIR=${CMAKE_BINARY_DIR}/mariadb-test")
  endif()
endif()
# test_wal_snapshot: snapshots and flash_seg_restore; it forges segment
# headers, so it reads the engine's layout (engine/fs.h).
if(TARGET test_wal_snapshot)
  target_link_libraries(test_wal_snapshot PRIVATE flash_test_helpers)
  target_include_directories(test_wal_snapshot PRIVATE ${PROJECT_SOURCE_DIR}/engine)
endif()
# Rebuild after a reboot through the real command: status --json before
# and after destroy + serve --recover (snapshot + WAL) is the same.
if(TARGET flashstock)
  add_test(NAME wal_snapshot_cli
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/wal_snapshot_cli.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(wal_snapshot_cli PROPERTIES TIMEOUT 180)
endif()
