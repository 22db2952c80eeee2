# The operator-mistakes suite (tests/ops/ops_misc.sh, label "ops"): each mistake
# an operator can make with create, load, status, serve and their MySQL URL,
# through the real binaries.  tests/ops/ops_sync_buyer.c places orders for it.
if(TARGET flashstock)
  add_executable(ops_sync_buyer ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_sync_buyer.c)
  target_link_libraries(ops_sync_buyer PRIVATE flashstock_static)
  add_test(NAME ops_misc
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_misc.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_sync_buyer>)
  set_tests_properties(ops_misc PROPERTIES TIMEOUT 300 LABELS ops)
  # the case that needs a MariaDB: a mistyped database name is refused
  if(TEST mysql_server_start)
    add_test(NAME ops_mysql_database
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_misc.sh $<TARGET_FILE:flashstock>
                     $<TARGET_FILE:ops_sync_buyer> mysql_unknown_database_refused_unless_create_db)
    set_tests_properties(ops_mysql_database PROPERTIES TIMEOUT 120 LABELS ops
                         FIXTURES_REQUIRED mariadb RESOURCE_LOCK mariadb
                         ENVIRONMENT "FLASH_MARIADB_DIR=${FLASH_TEST_MARIADB_DIR}")
  endif()
endif()
