find_program(FLASH_PYTHON3 python3 REQUIRED)
# The shared library is exactly its header (tests/library_exports.py): it
# exports the functions api/flashstock.h declares and nothing else.
add_test(NAME library_exports_exactly_the_header
         COMMAND ${FLASH_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/library_exports.py
                 ${PROJECT_SOURCE_DIR} $<TARGET_FILE:flashstock_shared> exports)
set_tests_properties(library_exports_exactly_the_header PROPERTIES LABELS library TIMEOUT 60)
