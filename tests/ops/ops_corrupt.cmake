# The operator-mistakes suite, corruption part (label "ops"): a damaged or
# incomplete WAL, failed and killed rebuilds, a full disk and a full
# /dev/shm, through the real `flashstock` command (tests/ops/ops_corrupt.sh).
# libflash_enospc.so (tests/ops/enospc_preload.c) makes fallocate(2) and
# posix_fallocate(3) fail with ENOSPC for chosen paths: a full file system
# as the program sees it, without a mount.
if(TARGET flashstock)
  add_library(flash_enospc MODULE ${CMAKE_CURRENT_SOURCE_DIR}/ops/enospc_preload.c)
  # a preload library must not carry the sanitizer runtime of the build
  target_compile_options(flash_enospc PRIVATE -fno-sanitize=all)
  target_link_options(flash_enospc PRIVATE -fno-sanitize=all)
  target_link_libraries(flash_enospc PRIVATE ${CMAKE_DL_LIBS})
  add_test(NAME ops_corrupt
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ops/ops_corrupt.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:flash_enospc>)
  set_tests_properties(ops_corrupt PROPERTIES TIMEOUT 900 LABELS ops)
endif()
# The rebuild killed at each of its crash points (and the engine's replay
# under it): the name is the placeholder or the complete rebuild, and the
# next rebuild equals an uninterrupted one.  Needs crash_tests.cmake's
# flashstock_persist_crash.
if(TARGET flashstock_persist_crash)
  add_executable(crash_rebuild ${CMAKE_CURRENT_SOURCE_DIR}/ops/crash_rebuild.c)
  target_compile_definitions(crash_rebuild PRIVATE FLASH_CRASHPOINTS=1)
  target_link_libraries(crash_rebuild PRIVATE flashstock_persist_crash)
  add_test(NAME crash_rebuild COMMAND crash_rebuild)
  set_tests_properties(crash_rebuild PROPERTIES LABELS "ops;crash" TIMEOUT 600)
endif()
