# The order feed (flashstock.h section 10): tests/test_feed.c (made a program
# by the test_*.c glob) writes a WAL with a wal_t and reads it through the
# API; it also calls the daemon's retention (persist/feed_retain.c).
if(TARGET test_feed)
  target_link_libraries(test_feed PRIVATE flashstock_persist)
  set_tests_properties(test_feed PROPERTIES LABELS "persist;feed" TIMEOUT 120)
endif()
