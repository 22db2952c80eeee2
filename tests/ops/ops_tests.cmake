# The operator-mistakes suite (label "ops"): what a person types after a
# reboot, a crash, a move or by mistake, through the real binaries, each case
# asserting the exit code, the message, and that every order the buyers were
# told they have (tests/ops/ops_buyer.c's log) is still in the WAL.
if(TARGET flashstock)
  add_executable(ops_buyer ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_buyer.c)
  target_link_libraries(ops_buyer PRIVATE flashstock_static)
  # identity of a WAL and its segment, one daemon per segment: a restart
  # without --recover after a reboot, a second daemon, a moved WAL directory,
  # a restart with the other durability, a backup, and kill -9 of a daemon
  # feeding a private MariaDB of its own (tests/fixtures/mariadb.sh).
  add_test(NAME ops_ident
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_ident.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(ops_ident PROPERTIES LABELS ops TIMEOUT 180)
  # a WAL that ends before the durable mark it published (DIR/DURABLE): its
  # last frames zeroed after a clean stop, no snapshot.  Damage, not a torn
  # tail: verify, a plain serve and --recover refuse it naming the missing
  # LSNs; --accept-loss-after gives them up, logged at warn.  No MariaDB.
  add_test(NAME ops_wal_short
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_wal_short.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(ops_wal_short PROPERTIES LABELS ops TIMEOUT 120)
endif()
