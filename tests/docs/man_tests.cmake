# The manual pages (tools/man.sh, target flashstock_man): a page for every
# command `flashstock --help` lists, each rendering without a groff warning
# and showing today's usage, and flashstock(1) naming them all
# (tests/docs/man_pages.sh).  Their install is checked by install_prefix.
if(TARGET flashstock_man)
  find_program(FLASH_GROFF groff REQUIRED)   # Debian package groff-base
  add_test(NAME man_page_for_every_command_renders_clean
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs/man_pages.sh $<TARGET_FILE:flashstock>
                   ${PROJECT_BINARY_DIR}/man)
  set_tests_properties(man_page_for_every_command_renders_clean PROPERTIES LABELS docs TIMEOUT 60)
endif()
