# The order feed (flashstock.h section 10): tests/unit/test_feed.c (made a program
# by the test_*.c glob) writes a WAL with a wal_t and reads it through the
# API; it also calls the daemon's retention (persist/feed/feed_retain.c).  The
# retention's calls to flash_feed_list and feed_registry_lock are wrapped,
# so a case can register consumers between its count and its copy, or make
# the lock fail (pass-through otherwise).
if(TARGET test_feed)
  target_link_libraries(test_feed PRIVATE flashstock_persist
                        "-Wl,--wrap=flash_feed_list" "-Wl,--wrap=feed_registry_lock")
  set_tests_properties(test_feed PROPERTIES LABELS "persist;feed" TIMEOUT 120)
endif()

# The feed through the real binaries: a consumer and the daemon killed -9
# mid-stream, roll-over and snapshots, retention within and past its bound,
# lag metrics, usage (tests/cli/cli_feed.sh says what each step proves).
# (ops_buyer is made by ops_tests.cmake, read after this file: generator
# expressions resolve once every fragment is read)
if(TARGET flashstock)
  add_test(NAME cli_feed_kills_rollover_retention_miss_nothing
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_feed.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(cli_feed_kills_rollover_retention_miss_nothing PROPERTIES LABELS "feed;cli" TIMEOUT 180)
endif()

# A lost consumer refilled from MariaDB (a private server started by the
# script itself, so it runs beside the other MySQL tests): every LSN served
# or reported as a gap, gaps exactly the restocks, every kept field equal to
# a reference consumer's, then the WAL (tests/cli/cli_feed_refill.sh).
# A second lost consumer is refilled through the shared library, which loads
# MariaDB only for it (tests/cli/feed_refill_shared.c: the refill plug-in).
add_executable(feed_ops ${CMAKE_CURRENT_SOURCE_DIR}/cli/feed_ops.c)
target_link_libraries(feed_ops PRIVATE flashstock_static)
add_executable(feed_refill_shared ${CMAKE_CURRENT_SOURCE_DIR}/cli/feed_refill_shared.c)
target_link_libraries(feed_refill_shared PRIVATE flashstock_shared)
add_dependencies(feed_refill_shared flashstock_refill)
if(TARGET flashstock)
  add_test(NAME cli_feed_lost_consumer_refilled_from_mariadb
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_feed_refill.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer> $<TARGET_FILE:feed_ops>
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh $<TARGET_FILE:feed_refill_shared>)
  set_tests_properties(cli_feed_lost_consumer_refilled_from_mariadb PROPERTIES LABELS "feed;cli;mysql" TIMEOUT 240)
endif()

# The documented C consumer (docs/feed.md, "From C"): built against the
# shared library and the public header only, run on a real sale, and the
# documented code compared with the file's marked region.
add_executable(example_feed_consumer ${CMAKE_CURRENT_SOURCE_DIR}/cli/example_feed_consumer.c)
target_link_libraries(example_feed_consumer PRIVATE flashstock_shared)
if(TARGET flashstock)
  add_test(NAME cli_feed_readme_consumer_ships_each_order_once
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_feed_example.sh ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:flashstock> $<TARGET_FILE:ops_buyer> $<TARGET_FILE:feed_ops>
                   $<TARGET_FILE:example_feed_consumer>)
  set_tests_properties(cli_feed_readme_consumer_ships_each_order_once PROPERTIES LABELS "feed;cli" TIMEOUT 120)
endif()

# `feed --help` exits 0 with its usage (the commit semantics are checked by
# cli_feed step 5).
if(TARGET flashstock)
  add_test(NAME cli_help_feed
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_expect.sh 0 "usage: flashstock feed"
                   $<TARGET_FILE:flashstock> feed --help)
endif()
