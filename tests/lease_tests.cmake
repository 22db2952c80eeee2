# The lease agent (persist/lease.c) through `flashstock serve --lease`
# against the MariaDB fixture (tests/mysql_tests.cmake registers the
# test_mysql_lease_* programs with the fixture and sets their environment,
# so this runs deferred, after it); the agent's test runs the real binary.
function(flash_lease_tests)
  if(TARGET test_mysql_lease_agent AND TARGET flashstock)
    add_dependencies(test_mysql_lease_agent flashstock)
    set_property(TEST test_mysql_lease_agent APPEND PROPERTY ENVIRONMENT "FLASH_BIN=$<TARGET_FILE:flashstock>")
    set_tests_properties(test_mysql_lease_agent PROPERTIES TIMEOUT 300)
  endif()
endfunction()
cmake_language(DEFER CALL flash_lease_tests)
