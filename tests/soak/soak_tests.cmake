# tests/soak: the soak (README.md), months of daily sales on a shifted clock
# checked from the records -- a test tool, built with the tests and never
# installed: the laboratory lives here, the `flashstock` command is the
# product.  flashstock_soak drives the product from outside: its daemon is
# the real `flashstock serve` of the command built beside it (compiled in
# as the default of --flashstock), its MariaDB the fixture of this source
# tree (tests/fixtures/mariadb.sh, the default of --mysql-fixture); it links
# the command's helpers (flashstock_tool: messages, option values), the
# fixture runner and the persist/ library, whose WAL and MariaDB it checks.
#
#   build/tests/flashstock_soak --days 30 --out DIR --plot DIR/fill.png
set(FLASH_SOAK_DIR ${CMAKE_CURRENT_SOURCE_DIR}/soak)
add_executable(flashstock_soak ${FLASH_SOAK_DIR}/soak.c ${FLASH_SOAK_DIR}/soak_buyer.c
               ${FLASH_SOAK_DIR}/soak_check.c ${FLASH_SOAK_DIR}/soak_reclaim.c)
target_link_libraries(flashstock_soak PRIVATE flashstock_tool flashstock_persist
                      flashstock_fixture)
add_dependencies(flashstock_soak flashstock)
target_compile_definitions(flashstock_soak PRIVATE
                           FLASH_SOAK_FLASHSTOCK="$<TARGET_FILE:flashstock>"
                           FLASH_SOAK_FIXTURE="${PROJECT_SOURCE_DIR}/tests/fixtures/mariadb.sh")
# libfaketime is looked for at run time (soak.c), where Debian puts it for
# this architecture first; the soak builds without it, its tests require it
if(CMAKE_LIBRARY_ARCHITECTURE)
  target_compile_definitions(flashstock_soak PRIVATE FLASH_MULTIARCH="${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

# The soak's tests (issue 13's proof: tests/soak/soak.c, the test tool
# flashstock_soak): simulated days of daily sales on a shifted clock
# (libfaketime), buyers and the daemon killed, checked from the WAL, MariaDB
# and the buyers' outcome files.  Each run starts and stops its own MariaDB
# in its own temporary directory.

# the tool answers --help (every build): the soak lives on as a program of
# its own, outside the `flashstock` command (cli_soak_is_not_a_command)
add_test(NAME soak_tool_help_exits_0
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_expect.sh 0 "^usage: flashstock_soak --days N"
                 $<TARGET_FILE:flashstock_soak> --help)
set_tests_properties(soak_tool_help_exits_0 PROPERTIES LABELS soak TIMEOUT 60)

# The runs: plain build only, the sanitizers' runtimes refuse to load after
# libfaketime's LD_PRELOAD.
if(TARGET flashstock_soak AND NOT FLASH_SANITIZE AND NOT FLASH_TSAN)
  # libfaketime is required here, so a machine without it fails the
  # configure instead of a soak that cannot move its clock; the tests hand
  # it to the soak as FLASH_FAKETIME_LIB (the tool alone looks for it)
  find_file(FLASH_FAKETIME_LIB libfaketime.so.1
            PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/faketime /usr/lib/faketime
                  /usr/lib64/faketime /usr/local/lib/faketime
            NO_DEFAULT_PATH REQUIRED)
  # 30 days: every check of the soak holds (exit 0), the fill plotted
  add_test(NAME soak_30d
           COMMAND $<TARGET_FILE:flashstock_soak> --days 30
                   --out ${CMAKE_CURRENT_BINARY_DIR}/soak_30d
                   --plot ${CMAKE_CURRENT_BINARY_DIR}/soak_30d/fill.png)
  set_tests_properties(soak_30d PROPERTIES LABELS soak TIMEOUT 300)
  # 10 days in sync durability: every acknowledgement waits for the
  # fdatasync that covers it, also across the daemon's kill and restart
  add_test(NAME soak_10d_sync
           COMMAND $<TARGET_FILE:flashstock_soak> --days 10 --durability sync --seed 7
                   --out ${CMAKE_CURRENT_BINARY_DIR}/soak_10d_sync)
  set_tests_properties(soak_10d_sync PROPERTIES LABELS soak TIMEOUT 300)
  # the checks are not vacuous: a lost acknowledged order, a unit that
  # appears in MariaDB and a retry answered with another order each make
  # their check FAIL (and only those); a forged ORDER record in the WAL
  # (oversold, over the limit) fails the WAL's checks; a FLASH_EFULL answer
  # fails the memory-reclaimed check (10 days); each run exits 1
  add_test(NAME soak_checks_fail_on_planted_faults
           COMMAND bash ${FLASH_SOAK_DIR}/soak_planted.sh $<TARGET_FILE:flashstock_soak>)
  set_tests_properties(soak_checks_fail_on_planted_faults PROPERTIES LABELS soak TIMEOUT 300)
  set_tests_properties(soak_30d soak_10d_sync soak_checks_fail_on_planted_faults
                       PROPERTIES ENVIRONMENT FLASH_FAKETIME_LIB=${FLASH_FAKETIME_LIB})
endif()
