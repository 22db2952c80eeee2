# `flashstock destroy` against a segment in use (tests/ops/ops_destroy.sh, label
# "ops", issue 20 item 1): a daemon serving it, a buyer attached, acknowledged
# orders not yet in any WAL -- refused (exit 2) naming each; --force prints
# what it gives up, --force --wal drains first, and an attached buyer's next
# order answers FLASH_EDESTROYED.  tests/ops_buyer (ops_tests.cmake) buys.
if(TARGET flashstock)
  add_test(NAME ops_destroy
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_destroy.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(ops_destroy PROPERTIES LABELS ops TIMEOUT 120)
endif()
