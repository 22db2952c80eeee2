# The proof of issue 14 (tests/sql/lease_proof.c): three boxes sell one hot sku
# from leases of a private three-node Galera cluster (tests/fixtures/
# galera.sh) while boxes and a node are killed; every invariant is checked
# and the undersell figure is printed with its bound.  About a minute.
# The long run is the same program with --long (docs/boxes.md).
add_executable(lease_proof ${CMAKE_CURRENT_SOURCE_DIR}/sql/lease_proof.c)
target_link_libraries(lease_proof PRIVATE flashstock_persist)
if(TARGET flashstock)
  add_dependencies(lease_proof flashstock)
  add_test(NAME lease_proof
           COMMAND lease_proof --bin $<TARGET_FILE:flashstock>
                   --galera ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/galera.sh)
  set_tests_properties(lease_proof PROPERTIES LABELS "galera" TIMEOUT 300)
endif()

# serve --backstop refuses a bad command line before it touches anything.
if(TARGET flashstock)
  add_test(NAME cli_serve_backstop_without_box_id_is_a_usage_error
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_expect.sh 2 "--backstop needs --box-id"
                   $<TARGET_FILE:flashstock> serve --name /fs-x --wal /nonexistent/w
                   --backstop mysql://root@localhost/flash_central)
  add_test(NAME cli_serve_backstop_bad_url_is_a_usage_error
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_expect.sh 2 "--backstop: URL 2"
                   $<TARGET_FILE:flashstock> serve --name /fs-x --wal /nonexistent/w --box-id 1
                   --backstop mysql://root@localhost/flash_central,http://x)
endif()

# The applier against a Galera node that is not ready (1047): a retry,
# never a refusal (tests/sql/test_galera_applier.c, two nodes).
if(TARGET test_galera_applier AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/galera.sh)
  target_link_libraries(test_galera_applier PRIVATE flashstock_persist flash_test_helpers)
  set_tests_properties(test_galera_applier PROPERTIES TIMEOUT 300 LABELS galera
                       ENVIRONMENT "FLASH_GALERA_SH=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/galera.sh")
endif()
