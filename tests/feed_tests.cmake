# The order feed (flashstock.h section 10): tests/test_feed.c (made a program
# by the test_*.c glob) writes a WAL with a wal_t and reads it through the
# API; it also calls the daemon's retention (persist/feed_retain.c).
if(TARGET test_feed)
  target_link_libraries(test_feed PRIVATE flashstock_persist)
  set_tests_properties(test_feed PROPERTIES LABELS "persist;feed" TIMEOUT 120)
endif()

# The feed through the real binaries: a consumer and the daemon killed -9
# mid-stream, roll-over and snapshots, retention within and past its bound,
# lag metrics, usage (tests/cli_feed.sh says what each step proves).
# (ops_buyer is made by ops_tests.cmake, read after this file: generator
# expressions resolve once every fragment is read)
if(TARGET flashstock)
  add_test(NAME cli_feed
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_feed.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer>)
  set_tests_properties(cli_feed PROPERTIES LABELS "feed;cli" TIMEOUT 180)
endif()

# A lost consumer refilled from MariaDB (a private server started by the
# script itself, so it runs beside the other MySQL tests): every LSN served
# or reported as a gap, gaps exactly the restocks, every kept field equal to
# a reference consumer's, then the WAL (tests/cli_feed_refill.sh).
add_executable(feed_ops ${CMAKE_CURRENT_SOURCE_DIR}/feed_ops.c)
target_link_libraries(feed_ops PRIVATE flashstock_static)
if(TARGET flashstock)
  add_test(NAME cli_feed_refill
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_feed_refill.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:ops_buyer> $<TARGET_FILE:feed_ops>
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh)
  set_tests_properties(cli_feed_refill PROPERTIES LABELS "feed;cli;mysql" TIMEOUT 240)
endif()

# The README's C consumer (docs-draft/consuming-orders.md): built against the
# shared library and the public header only, run on a real sale, and the
# documented code compared with the file's marked region.
add_executable(example_feed_consumer ${CMAKE_CURRENT_SOURCE_DIR}/example_feed_consumer.c)
target_link_libraries(example_feed_consumer PRIVATE flashstock_shared)
if(TARGET flashstock)
  add_test(NAME cli_feed_example
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_feed_example.sh ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:flashstock> $<TARGET_FILE:ops_buyer> $<TARGET_FILE:feed_ops>
                   $<TARGET_FILE:example_feed_consumer>)
  set_tests_properties(cli_feed_example PROPERTIES LABELS "feed;cli" TIMEOUT 120)
endif()
