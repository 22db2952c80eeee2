# The keyed tables and the bounded probe (tests/crash/ktab_probe.c): the engine
# with crash points (flashstock_crash, tests/crash/crash_tests.cmake), and
# fs_crashpoint wrapped so a child can stop itself right after the CAS that
# makes its key-table entry BUSY.
add_executable(ktab_probe ${CMAKE_CURRENT_SOURCE_DIR}/crash/ktab_probe.c)
target_compile_definitions(ktab_probe PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(ktab_probe PRIVATE flashstock_crash PkgConfig::CMOCKA "-Wl,--wrap=fs_crashpoint")
add_test(NAME ktab_probe COMMAND ktab_probe)
set_tests_properties(ktab_probe PROPERTIES LABELS "engine;crash" TIMEOUT 120)
