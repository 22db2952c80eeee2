# Tokens killed at every crash point (tests/crash/crash_tokens.c): a redeem, or an
# order refused after its token step, killed anywhere before it returns
# leaves the token live.  Links the crash-point engine (crash_tests.cmake,
# included before this fragment).
add_executable(crash_tokens ${CMAKE_CURRENT_SOURCE_DIR}/crash/crash_tokens.c)
target_compile_definitions(crash_tokens PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(crash_tokens PRIVATE flashstock_crash PkgConfig::CMOCKA)
add_test(NAME crash_tokens COMMAND crash_tokens)
set_tests_properties(crash_tokens PROPERTIES LABELS "engine;crash" TIMEOUT 120)
