# The operator-mistakes suite, issue 20 item 3 (label "ops"): a full disk in
# sync durability and the restart after it (tests/ops/ops_full_disk.sh).  The
# daemon exits 1 on ENOSPC and marks the segment failed; `status` shows the
# failure and why; a restart on a damaged WAL keeps it; a plain restart once
# space is free proves the WAL whole, clears it at warn, and sync orders are
# acknowledged again.  ops_buyer comes from ops_tests.cmake, ops_sync_buyer
# from ops_misc.cmake, libflash_enospc.so (a full file system, without a
# mount) from ops_corrupt.cmake.
if(TARGET flashstock)
  add_test(NAME ops_full_disk
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_full_disk.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer> $<TARGET_FILE:ops_sync_buyer>
                   $<TARGET_FILE:flash_enospc>)
  set_tests_properties(ops_full_disk PROPERTIES TIMEOUT 180 LABELS ops)
endif()
