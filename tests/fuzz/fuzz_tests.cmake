# The CSV reader under random input (tests/fuzz/fuzz_csv.c).  By default a
# program that replays seeds and a fixed stream of mutations (a ctest test);
# with -DFLASH_LIBFUZZER=ON and clang, a libFuzzer target instead:
#   CC=clang cmake -DFLASH_LIBFUZZER=ON ... && make fuzz_csv && ./tests/fuzz_csv
option(FLASH_LIBFUZZER "Build fuzz targets for libFuzzer (needs clang)" OFF)
add_executable(fuzz_csv ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_csv.c ${PROJECT_SOURCE_DIR}/tools/csv.c)
target_include_directories(fuzz_csv PRIVATE ${PROJECT_SOURCE_DIR}/tools)
if(FLASH_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  target_compile_definitions(fuzz_csv PRIVATE FLASH_LIBFUZZER=1)
  target_compile_options(fuzz_csv PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_csv PRIVATE -fsanitize=fuzzer,address,undefined)
else()
  add_test(NAME fuzz_csv_replay COMMAND fuzz_csv 20000)
  set_tests_properties(fuzz_csv_replay PROPERTIES TIMEOUT 120)
endif()

# Fuzz targets for the WAL decoder (tests/fuzz/fuzz_wal.c) and the segment attach
# validator (tests/fuzz/fuzz_attach.c); seeds in tests/fuzz/corpus/<target>/.
#
# Default build: each target is a program that runs its corpus and a fixed
# stream of mutations (tests/fuzz/fuzz_main.h), registered with ctest (under
# -DFLASH_SANITIZE=ON it runs with ASan and UBSan).
#
# With clang and -DFLASH_LIBFUZZER=ON (the option declared
# above), each is a libFuzzer target instead, and the code it exercises
# is compiled into it with coverage, ASan and UBSan (every UB report fatal):
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFLASH_LIBFUZZER=ON
#   make -C build-fuzz fuzz_wal fuzz_attach
#   tests/fuzz/fuzz_run.sh build-fuzz          # a bounded run of both (CI)
set(FLASH_FUZZ_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
file(GLOB FLASH_FUZZ_ENGINE_SRC CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/engine/*.c ${PROJECT_SOURCE_DIR}/api/*.c)

if(FLASH_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(FLASH_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                       -fno-omit-frame-pointer)
  # the WAL, its system-call table and the fold, instrumented; the rest of
  # persist/ (the fold's SQL neighbours) comes uninstrumented from its library
  add_executable(fuzz_wal ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_wal.c ${FLASH_FUZZ_ENGINE_SRC}
                 ${PROJECT_SOURCE_DIR}/persist/storage/wal.c ${PROJECT_SOURCE_DIR}/persist/storage/crc32c.c
                 ${PROJECT_SOURCE_DIR}/persist/storage/pio.c ${PROJECT_SOURCE_DIR}/persist/storage/fold.c)
  target_link_libraries(fuzz_wal PRIVATE flashstock_persist)
  add_executable(fuzz_attach ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_attach.c ${FLASH_FUZZ_ENGINE_SRC})
  foreach(t fuzz_wal fuzz_attach)
    target_compile_definitions(${t} PRIVATE FLASH_LIBFUZZER=1)
    target_compile_options(${t} PRIVATE ${FLASH_FUZZ_FLAGS})
    target_link_options(${t} PRIVATE ${FLASH_FUZZ_FLAGS})
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/api ${PROJECT_SOURCE_DIR}/engine
                               ${FLASH_PERSIST_INCLUDE_DIRS})
    target_link_libraries(${t} PRIVATE PkgConfig::CK Threads::Threads rt)
  endforeach()
else()
  add_executable(fuzz_wal ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_wal.c)
  target_link_libraries(fuzz_wal PRIVATE flashstock_persist)
  add_executable(fuzz_attach ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_attach.c)
  target_link_libraries(fuzz_attach PRIVATE flashstock_static)
  # corpus + mutations; each run is the same bytes every time
  add_test(NAME fuzz_wal_replay COMMAND fuzz_wal 3000 ${FLASH_FUZZ_CORPUS}/wal)
  add_test(NAME fuzz_attach_replay COMMAND fuzz_attach 3000 ${FLASH_FUZZ_CORPUS}/attach)
  # reproducers of open bugs, tests/fuzz/corpus/<target>-open/: each test fails
  # until its bugs are fixed (the fold's signed overflow shows under
  # -DFLASH_SANITIZE=ON only); a fixed bug's file then moves into
  # tests/fuzz/corpus/<target>/ and stays as a regression seed
  set_tests_properties(fuzz_wal_replay fuzz_attach_replay PROPERTIES TIMEOUT 300)
  foreach(t wal attach)
    file(GLOB open_bugs ${FLASH_FUZZ_CORPUS}/${t}-open/*)
    if(open_bugs)   # git keeps no empty folder: no open bug, no test
      add_test(NAME fuzz_${t}_open_bugs COMMAND fuzz_${t} 0 ${FLASH_FUZZ_CORPUS}/${t}-open)
      set_tests_properties(fuzz_${t}_open_bugs PROPERTIES TIMEOUT 300)
    endif()
  endforeach()
endif()
