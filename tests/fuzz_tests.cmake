# Fuzz targets for the WAL decoder (tests/fuzz_wal.c) and the segment attach
# validator (tests/fuzz_attach.c); seeds in tests/corpus/<target>/.
#
# Default build: each target is a program that runs its corpus and a fixed
# stream of mutations (tests/fuzz_main.h), registered with ctest (under
# -DFLASH_SANITIZE=ON it runs with ASan and UBSan).
#
# With clang and -DFLASH_LIBFUZZER=ON (the option tests/cli_tests.cmake
# declares), each is a libFuzzer target instead, and the code it exercises
# is compiled into it with coverage, ASan and UBSan (every UB report fatal):
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFLASH_LIBFUZZER=ON
#   make -C build-fuzz fuzz_wal fuzz_attach
#   tests/fuzz_run.sh build-fuzz          # a bounded run of both (CI)
set(FLASH_FUZZ_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus)
file(GLOB FLASH_FUZZ_ENGINE_SRC CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/engine/*.c ${PROJECT_SOURCE_DIR}/api/*.c)

if(FLASH_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(FLASH_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                       -fno-omit-frame-pointer)
  # the WAL, its system-call table and the fold, instrumented; the rest of
  # persist/ (the fold's SQL neighbours) comes uninstrumented from its library
  add_executable(fuzz_wal ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_wal.c ${FLASH_FUZZ_ENGINE_SRC}
                 ${PROJECT_SOURCE_DIR}/persist/storage/wal.c ${PROJECT_SOURCE_DIR}/persist/storage/crc32c.c
                 ${PROJECT_SOURCE_DIR}/persist/storage/pio.c ${PROJECT_SOURCE_DIR}/persist/storage/fold.c)
  target_link_libraries(fuzz_wal PRIVATE flashstock_persist)
  add_executable(fuzz_attach ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_attach.c ${FLASH_FUZZ_ENGINE_SRC})
  foreach(t fuzz_wal fuzz_attach)
    target_compile_definitions(${t} PRIVATE FLASH_LIBFUZZER=1)
    target_compile_options(${t} PRIVATE ${FLASH_FUZZ_FLAGS})
    target_link_options(${t} PRIVATE ${FLASH_FUZZ_FLAGS})
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/api ${PROJECT_SOURCE_DIR}/engine
                               ${FLASH_PERSIST_INCLUDE_DIRS})
    target_link_libraries(${t} PRIVATE PkgConfig::CK Threads::Threads rt)
  endforeach()
else()
  add_executable(fuzz_wal ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_wal.c)
  target_link_libraries(fuzz_wal PRIVATE flashstock_persist)
  add_executable(fuzz_attach ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_attach.c)
  target_link_libraries(fuzz_attach PRIVATE flashstock_static)
  # corpus + mutations; each run is the same bytes every time
  add_test(NAME fuzz_wal_replay COMMAND fuzz_wal 3000 ${FLASH_FUZZ_CORPUS}/wal)
  add_test(NAME fuzz_attach_replay COMMAND fuzz_attach 3000 ${FLASH_FUZZ_CORPUS}/attach)
  # reproducers of open bugs, tests/corpus/<target>-open/: each test fails
  # until its bugs are fixed (the fold's signed overflow shows under
  # -DFLASH_SANITIZE=ON only); a fixed bug's file then moves into
  # tests/corpus/<target>/ and stays as a regression seed
  set_tests_properties(fuzz_wal_replay fuzz_attach_replay PROPERTIES TIMEOUT 300)
  foreach(t wal attach)
    file(GLOB open_bugs ${FLASH_FUZZ_CORPUS}/${t}-open/*)
    if(open_bugs)   # git keeps no empty folder: no open bug, no test
      add_test(NAME fuzz_${t}_open_bugs COMMAND fuzz_${t} 0 ${FLASH_FUZZ_CORPUS}/${t}-open)
      set_tests_properties(fuzz_${t}_open_bugs PROPERTIES TIMEOUT 300)
    endif()
  endforeach()
endif()
