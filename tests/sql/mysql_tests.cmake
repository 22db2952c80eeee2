# MySQL integration tests: tests/sql/test_mysql_*.c run against a private MariaDB
# that a ctest fixture starts (tests/fixtures/mariadb.sh) in a fixed directory
# under the build tree and stops after the last of them.
include(${PROJECT_SOURCE_DIR}/persist/mysql/mysql.cmake)

set(FLASH_TEST_MARIADB_DIR ${CMAKE_BINARY_DIR}/mariadb-test)
add_test(NAME mysql_server_start
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh start ${FLASH_TEST_MARIADB_DIR})
set_tests_properties(mysql_server_start PROPERTIES FIXTURES_SETUP mariadb TIMEOUT 120)
add_test(NAME mysql_server_stop
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh stop ${FLASH_TEST_MARIADB_DIR})
set_tests_properties(mysql_server_stop PROPERTIES FIXTURES_CLEANUP mariadb TIMEOUT 120)

file(GLOB FLASH_MYSQL_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*/test_mysql_*.c)
foreach(src ${FLASH_MYSQL_TESTS})
  get_filename_component(name ${src} NAME_WE)
  target_link_libraries(${name} PRIVATE flashstock_persist)
  if(TARGET flash_test_helpers)
    target_link_libraries(${name} PRIVATE flash_test_helpers)
  endif()
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED mariadb RESOURCE_LOCK mariadb
                       ENVIRONMENT "FLASH_MARIADB_DIR=${FLASH_TEST_MARIADB_DIR};FLASH_TEST_MARIADB_SH=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh")
endforeach()

# The fixture script itself: two instances at once, no TCP, idempotent,
# foreign directories refused, nothing left running.  No flashstock code
# runs in it: the plain build runs it, a sanitizer build would repeat it.
if(NOT FLASH_SANITIZE)
  add_test(NAME mysql_fixture_script
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sql/mysql_fixture_test.sh
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh)
  set_tests_properties(mysql_fixture_script PROPERTIES TIMEOUT 180)
endif()

# MariaDB halted and resumed in the middle of a sale, through the real
# binaries (create, serve --mysql --metrics, load, reconcile) with buyer
# processes, in async and sync durability: no acknowledged order lost or
# applied twice, the applier catches up, the reconciler finds nothing.
if(TARGET test_mysql_outage AND TARGET flashstock)
  target_link_libraries(test_mysql_outage PRIVATE flashstock_fixture)
  add_dependencies(test_mysql_outage flashstock)
  set_property(TEST test_mysql_outage APPEND PROPERTY ENVIRONMENT "FLASH_BIN=$<TARGET_FILE:flashstock>")
  set_tests_properties(test_mysql_outage PROPERTIES TIMEOUT 600)
endif()
