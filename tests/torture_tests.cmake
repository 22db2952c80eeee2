# The kill loop (tests/torture.c): buyers and the WAL daemon killed with
# SIGKILL at random instants, then every invariant counted from the order
# records, the WAL and MySQL.  It starts its own private MariaDB in its own
# temporary directory (not the shared mysql_server_start fixture), so it runs
# alongside the other tests.  CI size: >= 2,000 kills over an async and a
# sync phase; `flashstock-torture --long SECONDS` for longer runs.
if(TARGET flashstock AND TARGET flashstock_persist)
  add_executable(flashstock-torture ${CMAKE_CURRENT_SOURCE_DIR}/torture.c)
  target_link_libraries(flashstock-torture PRIVATE flashstock_persist flashstock_fixture m)
  add_dependencies(flashstock-torture flashstock)
  add_test(NAME torture
           COMMAND flashstock-torture --kills 2000
                   --flashstock $<TARGET_FILE:flashstock>
                   --fixture ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh)
  set_tests_properties(torture PROPERTIES LABELS "torture" TIMEOUT 600)
endif()
