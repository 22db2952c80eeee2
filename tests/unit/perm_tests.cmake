# Permission tests as real unprivileged users.
#
# tests/fixtures/users.sh creates, before the first test that needs them,
# users A and B (members of one group) and C (a member of none), and removes
# them after the last; the tests start as root and run each check in a child
# that has become one of them (tests/common/unpriv.c).  The names carry a tag made
# from this build directory, so two build trees on one machine test at once.
# Not root: the fixture fails, and so do the tests that need it (ctest:
# "Not Run" = failed), never a silent pass.
string(MD5 FLASH_USERS_HASH "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${FLASH_USERS_HASH}" 0 10 FLASH_USERS_TAG)
set(FLASH_USERS_SH ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/users.sh)
add_test(NAME test_users_start COMMAND sh ${FLASH_USERS_SH} start ${FLASH_USERS_TAG})
add_test(NAME test_users_stop COMMAND sh ${FLASH_USERS_SH} stop ${FLASH_USERS_TAG})
set_tests_properties(test_users_start PROPERTIES FIXTURES_SETUP test_users TIMEOUT 60)
set_tests_properties(test_users_stop PROPERTIES FIXTURES_CLEANUP test_users TIMEOUT 60)

foreach(t test_perm_segment test_api_segment)
  if(TARGET ${t})
    set_property(TEST ${t} APPEND PROPERTY FIXTURES_REQUIRED test_users)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
                 "FLASH_TEST_USER_A=fsa${FLASH_USERS_TAG}" "FLASH_TEST_USER_B=fsb${FLASH_USERS_TAG}"
                 "FLASH_TEST_USER_C=fsc${FLASH_USERS_TAG}" "FLASH_TEST_GROUP=fsg${FLASH_USERS_TAG}")
  endif()
endforeach()
