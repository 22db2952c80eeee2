# In-process multi-thread tests: tests/threads/test_threads_*.c (made programs by the
# test_*.c glob in tests/CMakeLists.txt).  They run in every build with the
# label "threads"; in a -DFLASH_TSAN=ON build (ThreadSanitizer on everything)
# they also carry the label "tsan" and any ThreadSanitizer report fails them.
#
# CI:  cmake -S . -B build-tsan -DFLASH_TSAN=ON && cmake --build build-tsan -j2 \
#      && ctest --test-dir build-tsan -L tsan --output-on-failure
#
# What ThreadSanitizer sees there (no suppressions):
#  - the segment protocol itself: all handles of a process share one
#    mapping of a segment (engine/segment.c), so two threads' handles touch
#    the same addresses; test_threads_shared_map proves it;
#  - ck's atomics as atomics: engine/tsan/ck_pr.h makes ck_pr loads acquire,
#    stores release and read-modify-writes seq_cst __atomic builtins (the
#    same order ck's x86-64 assembly gives), so a plain access published
#    through them is ordered and a plain access racing one is reported;
#  - the process-local state (handles, engine statics, test harness).
file(GLOB FLASH_THREAD_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*/test_threads_*.c)
foreach(src ${FLASH_THREAD_TESTS})
  get_filename_component(name ${src} NAME_WE)
  target_link_libraries(${name} PRIVATE flash_test_helpers)
  if(FLASH_TSAN)
    set_tests_properties(${name} PROPERTIES LABELS "threads;tsan" TIMEOUT 300
                         ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1")
  else()
    set_tests_properties(${name} PROPERTIES LABELS "threads" TIMEOUT 120)
  endif()
endforeach()
