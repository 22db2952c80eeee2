# In-process multi-thread tests: tests/test_threads_*.c (made programs by the
# test_*.c glob in tests/CMakeLists.txt).  They run in every build with the
# label "threads"; in a -DFLASH_TSAN=ON build (ThreadSanitizer on everything)
# they also carry the label "tsan" and any ThreadSanitizer report fails them.
#
# CI:  cmake -S . -B build-tsan -DFLASH_TSAN=ON && cmake --build build-tsan -j2 \
#      && ctest --test-dir build-tsan -L tsan --output-on-failure
#
# No suppressions: each thread opens its own handle, and each handle maps the
# segment at its own address, so ThreadSanitizer checks the process-local
# state (handles, engine statics, test harness) and never sees ck's inline-asm
# atomics race with plain accesses of another mapping.
file(GLOB FLASH_THREAD_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/test_threads_*.c)
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
