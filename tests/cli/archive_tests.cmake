# Archiving as operators and MariaDB see it: `flashstock archive` refuses what
# is not ended or not applied and changes nothing, archives after the apply;
# `flashstock order` reads an archived order from MariaDB; `serve
# --archive-after-s` archives on its own (tests/cli/cli_archive.sh says what
# each step proves).  It starts its own MariaDB (tests/fixtures/mariadb.sh).
# (ops_buyer is made by ops_tests.cmake, read after this file: the generator
# expression finds it)
if(TARGET flashstock)
  add_test(NAME cli_archive_refuses_unended_or_unapplied_archives_applied_and_order_finds_it_in_mariadb
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_archive.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh)
  set_tests_properties(cli_archive_refuses_unended_or_unapplied_archives_applied_and_order_finds_it_in_mariadb
                       PROPERTIES LABELS "cli;mysql" TIMEOUT 240)
endif()
# the tools' catalog walks go past an entry an archive freed (FLASH_EARCHIVED
# from flash_activity_at / flash_sku_at): `archive --ended` archives the
# ended activities after it, `status` lists the live one (no MariaDB)
if(TARGET flashstock)
  add_test(NAME cli_archive_ended_and_status_walk_past_freed_catalog_entries
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_archive_past_freed.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_archive_ended_and_status_walk_past_freed_catalog_entries
                       PROPERTIES LABELS "cli" TIMEOUT 60)
endif()
