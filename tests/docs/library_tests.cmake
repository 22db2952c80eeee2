find_program(FLASH_PYTHON3 python3 REQUIRED)
# The shared library is exactly its header (tests/docs/library_exports.py): it
# exports the functions api/flashstock.h declares and nothing else, and it
# loads no MariaDB client at start (the feed's refill loads its plug-in when
# it needs it: tests/cli/feed_refill_shared.c).
add_test(NAME library_exports_exactly_the_header
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/library_exports.py
                 ${PROJECT_SOURCE_DIR} $<TARGET_FILE:flashstock_shared> exports)
add_test(NAME library_loads_no_mariadb
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/library_exports.py
                 ${PROJECT_SOURCE_DIR} $<TARGET_FILE:flashstock_shared> needed)
set_tests_properties(library_exports_exactly_the_header library_loads_no_mariadb
                     PROPERTIES LABELS library TIMEOUT 60)
# persist/'s layers include only down, neither the engine nor the API
# includes persist/, the bench includes nothing of the command, which
# embeds it, and the product (library, bench, command) nothing of tests/
# but the fixture runner (tests/docs/layers.py, persist/README.md).
add_test(NAME persist_layers_include_only_down
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/layers.py ${PROJECT_SOURCE_DIR})
set_tests_properties(persist_layers_include_only_down PROPERTIES LABELS library TIMEOUT 60)
# No function of persist/ or tools/ (nor of the soak, tests/soak/) is over
# 120 lines (tests/docs/fnlen.py; an exception is listed there with its reason).
add_test(NAME functions_in_persist_and_tools_are_under_120_lines
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/docs/fnlen.py ${PROJECT_SOURCE_DIR})
set_tests_properties(functions_in_persist_and_tools_are_under_120_lines PROPERTIES LABELS library
                     TIMEOUT 60)
