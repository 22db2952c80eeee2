# The private Galera cluster (tests/fixtures/galera.sh) that the lease tests,
# the proof and `flashstock demo --boxes N` run on: the fixture script
# itself, on three nodes.  Its tools are required: a machine without them
# fails the configure, never skips the test.
find_file(FLASH_GALERA_PROVIDER libgalera_smm.so PATHS /usr/lib/galera /usr/lib64/galera
          REQUIRED NO_DEFAULT_PATH)              # galera-4
find_program(FLASH_RSYNC rsync REQUIRED)         # the SST method
find_program(FLASH_SS ss PATHS /usr/bin /usr/sbin /bin /sbin REQUIRED)  # iproute2: wsrep_sst_rsync, the test
find_program(FLASH_MARIADBD mariadbd PATHS /usr/sbin /usr/bin REQUIRED)

# No flashstock code runs in it: the plain build runs it, a sanitizer build
# would only repeat that run (71 s of the ASan stage).
if(NOT FLASH_SANITIZE)
  add_test(NAME galera_fixture_forms_3_nodes_replicates_rejoins_by_ist_and_by_sst_after_data_loss_stops_clean
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sql/galera_fixture_test.sh
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/galera.sh)
  set_tests_properties(galera_fixture_forms_3_nodes_replicates_rejoins_by_ist_and_by_sst_after_data_loss_stops_clean
                       PROPERTIES LABELS "galera" TIMEOUT 300)
endif()

# `flashstock demo --boxes 3` (tools/demo_boxes.c): the lease agent and the
# backstop are in the build, so it must exit 0 with every invariant held.
# Nothing is left.
if(TARGET flashstock)
  add_test(NAME demo_boxes_3_exits_0_with_every_invariant_held
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/demo_boxes_test.sh $<TARGET_FILE:flashstock>
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/galera.sh)
  set_tests_properties(demo_boxes_3_exits_0_with_every_invariant_held
                       PROPERTIES LABELS "galera;demo" TIMEOUT 300)
endif()
