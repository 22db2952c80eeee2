# Kills and interleavings pinned to named crash points (tests/crash/point_races.c):
# the order-number refill, the lock-name insert, the fence of a lock grant.
# The engine with crash points (flashstock_crash, tests/crash/crash_tests.cmake),
# fs_crashpoint() wrapped so that a case ends the process, or runs a second
# handle's step, at exactly the point it names.
add_executable(point_races ${CMAKE_CURRENT_SOURCE_DIR}/crash/point_races.c)
target_compile_definitions(point_races PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(point_races PRIVATE flashstock_crash PkgConfig::CMOCKA "-Wl,--wrap=fs_crashpoint")
add_test(NAME point_races COMMAND point_races)
set_tests_properties(point_races PROPERTIES LABELS "engine;crash" TIMEOUT 120)
