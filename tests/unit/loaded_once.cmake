# tests/unit/test_api_loaded_once.c (made a program by the test_*.c glob): the
# wrapper of fs_kt_claim0 (the one-bank claim) scribbles the journal index a claim has just
# written, so the read that follows meets a wild value.
if(TARGET test_api_loaded_once)
  target_link_libraries(test_api_loaded_once PRIVATE "-Wl,--wrap=fs_kt_claim0")
endif()
