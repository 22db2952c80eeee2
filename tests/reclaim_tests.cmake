# Reclamation through the real binaries (tests/cli_reclaim.sh): a windowed
# segment made by `flashstock create`, its user table's first bank filled by
# ops_buyer and cleared by `flashstock serve`'s reclaimer.
if(TARGET flashstock AND TARGET ops_buyer)
  add_test(NAME cli_reclaim
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_reclaim.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(cli_reclaim PROPERTIES TIMEOUT 120)
endif()
