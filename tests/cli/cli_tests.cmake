# Tests of the `flashstock` command and of its CSV reader (tools/).
#
# test_csv is built by the test_*.c glob; it also needs the CSV reader,
# which lives outside the engine library.
if(TARGET test_csv AND TARGET flashstock_csv)
  target_link_libraries(test_csv PRIVATE flashstock_csv)
endif()

# test_demo_audit checks the demo's audit (tools/demo_check.c) on its own,
# and a buyer (tools/demo_buyer.c, its latency histogram bench/hist.c) run
# in the test's process.
if(TARGET test_demo_audit)
  target_sources(test_demo_audit PRIVATE ${PROJECT_SOURCE_DIR}/tools/demo_check.c
                 ${PROJECT_SOURCE_DIR}/tools/demo_buyer.c ${PROJECT_SOURCE_DIR}/bench/hist.c)
  target_include_directories(test_demo_audit PRIVATE ${PROJECT_SOURCE_DIR}/tools
                             ${PROJECT_SOURCE_DIR}/bench)
endif()

if(TARGET flashstock)
  # create/load/status/destroy: good CSV loads exactly, each bad CSV exits 2
  # naming line and column and changes nothing.
  add_test(NAME cli_load
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_load.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_load PROPERTIES TIMEOUT 120)

  # the demo: a whole sale with the daemon, its WAL and a private MariaDB
  # (each run starts and stops its own, in its own temporary directory, so
  # these tests run in parallel): every invariant figure 0 on its last JSON
  # line, orders_in_wal = orders_in_mysql = orders_acked, reconcile_diffs 0.
  add_test(NAME cli_demo
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_demo.sh $<TARGET_FILE:flashstock> 20000)
  set_tests_properties(cli_demo PROPERTIES TIMEOUT 180)
  # sync durability: every order returns after the fdatasync covering it.
  # The sync runs give the unpaid round a 4 s pay window (--pay-ms): placing
  # its 1000 reservations through sync rings under ASan on a busy 2-core
  # machine once took longer than the default 1 s, which the demo refuses
  # (a reservation would expire before every unit was reserved).
  add_test(NAME cli_durable_sync
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --durability sync --pay-ms 4000)
  set_tests_properties(cli_durable_sync PROPERTIES TIMEOUT 180)
  # WAL only (no MariaDB), sync, 16-record rings.
  add_test(NAME cli_durable_nomysql
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --no-mysql --durability sync --ring 16 --pay-ms 4000)
  set_tests_properties(cli_durable_nomysql PROPERTIES TIMEOUT 180)
  # sync, WAL only, each buyer's sync wait bounded at 1 ms: orders that
  # outlive it answer FLASH_EFATE_UNKNOWN, count as placed, and every figure
  # must still hold (every one of them in the WAL once).
  add_test(NAME cli_durable_fate_unknown
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --no-mysql --durability sync --sync-wait-ms 1 --pay-ms 4000)
  set_tests_properties(cli_durable_fate_unknown PROPERTIES TIMEOUT 180)
  # 16-record rings, async, WAL only: buyers meet full rings (FLASH_EBUSY)
  # and retry while the daemon drains; every figure must still hold.
  add_test(NAME cli_demo_small_rings
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --no-mysql --ring 16)
  set_tests_properties(cli_demo_small_rings PROPERTIES TIMEOUT 180)
  # limit 3 per user, 5 skus, heavy retries and cancels; MySQL's unique
  # index holds the same limit.
  add_test(NAME cli_demo_limit3
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --limit 3 --skus 5 --procs 3 --cancel-pct 10 --retry-pct 50)
  set_tests_properties(cli_demo_limit3 PROPERTIES TIMEOUT 180)
  # `flashstock reconcile` on a kept sale: exit 0 clean, exit 1 naming the
  # sku after a change made directly in MariaDB, exit 2 for bad command
  # lines (--repair without the WAL or MySQL); --repair prints its REPAIR
  # lines and exits 0, a foreign MySQL row stays NOT REPAIRED.
  add_test(NAME cli_durable_reconcile
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_durable_reconcile.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_durable_reconcile PROPERTIES TIMEOUT 180)
  # Ctrl-C while MariaDB starts and while buyers race: nothing left behind.
  add_test(NAME cli_durable_sigint
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_durable_sigint.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_durable_sigint PROPERTIES TIMEOUT 300)

  # reservations through the real binaries (tests/cli/cli_reserve.sh says what
  # each step proves): `order --reserve`, `confirm`, the daemon's expirer and
  # `expire --all` without one; every bad command line exits 2, changing nothing.
  add_test(NAME cli_reserve_confirm_expire_by_daemon_and_by_hand
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_reserve.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_reserve_confirm_expire_by_daemon_and_by_hand PROPERTIES LABELS cli TIMEOUT 120)

  # versioned terms through the real binary (tests/cli/cli_terms.sh says what
  # each step proves): `terms` shows and changes them, each change a new
  # version; an order naming an old one is FLASH_ESTALE and takes nothing;
  # every bad command line exits 2 (an unknown activity 1), changing nothing.
  add_test(NAME cli_terms_change_moves_the_version_and_a_stale_order_takes_nothing
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_terms.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_terms_change_moves_the_version_and_a_stale_order_takes_nothing
                       PROPERTIES LABELS cli TIMEOUT 120)

  # carts through the real binary (tests/cli/cli_carts.sh says what each step
  # proves): `order --line` places several skus as one order, all or nothing,
  # in one limit slot; a refusal names the line (sold out: every line short);
  # a reserved cart's expiry returns every line; every bad command line exits
  # 2, changing nothing; the README's "Carts" block runs as it says.
  add_test(NAME cli_carts_all_or_nothing_one_limit_slot_and_every_line_back_on_expiry
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_carts.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_carts_all_or_nothing_one_limit_slot_and_every_line_back_on_expiry
                       PROPERTIES LABELS cli TIMEOUT 120)

  # carts read back from MariaDB (tests/cli/cli_carts_mysql.sh): through the
  # daemon and its applier on a private MariaDB, `order --mysql` shows a cart
  # with every line (order_lines), the number of its later line shows the
  # cart, an expired cart both its lines, a plain order one line.
  add_test(NAME cli_carts_read_from_mariadb_with_every_line
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_carts_mysql.sh $<TARGET_FILE:flashstock>
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh)
  set_tests_properties(cli_carts_read_from_mariadb_with_every_line
                       PROPERTIES LABELS "cli;mysql" TIMEOUT 240)

  # usage: --help everywhere exits 0 and prints the usage; an unknown
  # command exits 2.  tests/cli/cli_expect.sh checks the exit code and the
  # output together (PASS_REGULAR_EXPRESSION alone ignores the exit code).
  foreach(cmd create destroy load status demo reconcile top order confirm expire archive terms)
    add_test(NAME cli_help_${cmd}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_expect.sh 0 "usage: flashstock ${cmd}"
                     $<TARGET_FILE:flashstock> ${cmd} --help)
  endforeach()
  add_test(NAME cli_help
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_expect.sh 0 "2  usage error"
                   $<TARGET_FILE:flashstock> --help)
  add_test(NAME cli_unknown_command_exits_2
           COMMAND bash -c "\"$1\" frobnicate; test $? = 2" sh $<TARGET_FILE:flashstock>)
  # the soak is a test tool (tests/soak/, flashstock_soak), not a command:
  # --help lists no soak, `flashstock soak` (and its --help) exits 2 as unknown
  add_test(NAME cli_soak_is_not_a_command
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_soak_not_a_command.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_soak_is_not_a_command PROPERTIES TIMEOUT 60)
endif()
