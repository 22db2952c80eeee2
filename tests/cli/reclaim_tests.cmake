# Reclamation through the real binaries (tests/cli/cli_reclaim.sh): a windowed
# segment made by `flashstock create`, its user table's first bank filled by
# ops_buyer and cleared by `flashstock serve`'s reclaimer.
if(TARGET flashstock AND TARGET ops_buyer)
  add_test(NAME cli_reclaim
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_reclaim.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(cli_reclaim PROPERTIES TIMEOUT 120)
endif()

# A buyer stopped inside an order holds reclamation and nothing else: sync
# orders complete meanwhile, and the bank is cleared once it goes on
# (tests/cli/cli_stopped_buyer.sh; tests/cli/park_buyer.c stops itself at FS_PARK).
if(TARGET flashstock AND TARGET ops_buyer AND TARGET ops_sync_buyer AND TARGET flashstock_crash)
  add_executable(park_buyer ${CMAKE_CURRENT_SOURCE_DIR}/cli/park_buyer.c)
  target_compile_definitions(park_buyer PRIVATE FLASH_CRASHPOINTS=1)
  target_link_libraries(park_buyer PRIVATE flashstock_crash)
  add_test(NAME cli_stopped_buyer
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_stopped_buyer.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:park_buyer> $<TARGET_FILE:ops_sync_buyer> $<TARGET_FILE:ops_buyer>)
  set_tests_properties(cli_stopped_buyer PROPERTIES TIMEOUT 120)
endif()
