# The documentation (tests/docs/docs_check.py): every relative link of
# README.md, docs/*.md and the READMEs of persist/ and tests/ resolves, file
# and #heading; README.md, the front page, stays under 15 KB.  That each code
# block shows its tested file's text is checked beside the file's own test
# (install_prefix, python_readme, go_readme, java_readme_snippet,
# cli_feed_readme_consumer_ships_each_order_once; the README's terms session is
# run by cli_terms_change_moves_the_version_and_a_stale_order_takes_nothing, its
# carts session by cli_carts_all_or_nothing_one_limit_slot_and_every_line_back_on_expiry).
find_program(FLASH_PYTHON3 python3 REQUIRED)
add_test(NAME docs_relative_links_resolve
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/docs_check.py ${PROJECT_SOURCE_DIR} links)
add_test(NAME readme_is_under_15_kb
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/docs_check.py ${PROJECT_SOURCE_DIR} size)
set_tests_properties(docs_relative_links_resolve readme_is_under_15_kb PROPERTIES LABELS docs TIMEOUT 60)
