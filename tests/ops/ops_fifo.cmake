# The operator-mistakes suite, issue 20 items 4 and 5 (label "ops"): a FIFO
# or a directory under the name of a WAL directory's file (WAL file, DURABLE,
# LOCK, snapshot, feed position) is refused at once, naming it and its type,
# instead of blocking in open() for ever; a command whose standard output
# cannot be written (/dev/full) exits 1 saying so (tests/ops/ops_fifo.sh).
# ops_sync_buyer comes from ops_misc.cmake.
if(TARGET flashstock)
  add_test(NAME ops_fifo
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_fifo.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_sync_buyer>)
  set_tests_properties(ops_fifo PROPERTIES TIMEOUT 120 LABELS ops)
endif()
