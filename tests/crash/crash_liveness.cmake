# A recoverer killed mid-recovery is recorded with its identity, pid and
# start time (tests/crash/crash_liveness.c).  Links the crash-point engine
# (flashstock_crash, crash_tests.cmake; targets resolve at generation, so
# the order of the fragments does not matter).
add_executable(crash_liveness ${CMAKE_CURRENT_SOURCE_DIR}/crash/crash_liveness.c)
target_compile_definitions(crash_liveness PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(crash_liveness PRIVATE flashstock_crash PkgConfig::CMOCKA)
add_test(NAME crash_liveness COMMAND crash_liveness)
set_tests_properties(crash_liveness PROPERTIES LABELS "engine;crash" TIMEOUT 60)

# An order parked between its catalog read and its operation's begin is
# refused once the activity was archived (tests/crash/archive_park.c, FS_PARK).
add_executable(archive_park ${CMAKE_CURRENT_SOURCE_DIR}/crash/archive_park.c)
target_compile_definitions(archive_park PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(archive_park PRIVATE flashstock_crash PkgConfig::CMOCKA)
add_test(NAME archive_park COMMAND archive_park)
set_tests_properties(archive_park PROPERTIES LABELS "engine;crash" TIMEOUT 60)
