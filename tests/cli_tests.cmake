# Tests of the `flashstock` command and of its CSV reader (tools/).
#
# test_csv is built by the test_*.c glob; it also needs the CSV reader,
# which lives outside the engine library.
if(TARGET test_csv AND TARGET flashstock_csv)
  target_link_libraries(test_csv PRIVATE flashstock_csv)
endif()

# test_demo_audit checks the demo's audit (tools/demo_check.c) on its own.
if(TARGET test_demo_audit)
  target_sources(test_demo_audit PRIVATE ${PROJECT_SOURCE_DIR}/tools/demo_check.c)
  target_include_directories(test_demo_audit PRIVATE ${PROJECT_SOURCE_DIR}/tools
                             ${PROJECT_SOURCE_DIR}/bench)
endif()

if(TARGET flashstock)
  # create/load/status/destroy: good CSV loads exactly, each bad CSV exits 2
  # naming line and column and changes nothing.
  add_test(NAME cli_load
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_load.sh $<TARGET_FILE:flashstock>)
  set_tests_properties(cli_load PROPERTIES TIMEOUT 120)

  # the demo: a whole sale, every invariant figure 0 on its last JSON line.
  add_test(NAME cli_demo
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_demo.sh $<TARGET_FILE:flashstock> 20000)
  set_tests_properties(cli_demo PROPERTIES TIMEOUT 180)
  # the same with 16-record rings: buyers meet full rings (FLASH_EBUSY) and
  # retry while the parent drains; every figure must still hold.
  add_test(NAME cli_demo_small_rings
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --ring 16)
  set_tests_properties(cli_demo_small_rings PROPERTIES TIMEOUT 180)
  # limit 3 per user, 5 skus, heavy retries and cancels.
  add_test(NAME cli_demo_limit3
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_demo.sh $<TARGET_FILE:flashstock> 20000
                   --limit 3 --skus 5 --procs 3 --cancel-pct 10 --retry-pct 50)
  set_tests_properties(cli_demo_limit3 PROPERTIES TIMEOUT 180)

  # usage: --help everywhere exits 0; an unknown command exits 2.
  foreach(cmd create destroy load status demo)
    add_test(NAME cli_help_${cmd} COMMAND flashstock ${cmd} --help)
    set_tests_properties(cli_help_${cmd} PROPERTIES PASS_REGULAR_EXPRESSION "usage: flashstock ${cmd}")
  endforeach()
  add_test(NAME cli_help COMMAND flashstock --help)
  set_tests_properties(cli_help PROPERTIES PASS_REGULAR_EXPRESSION "2  usage error")
  add_test(NAME cli_unknown_command_exits_2
           COMMAND bash -c "\"$1\" frobnicate; test $? = 2" sh $<TARGET_FILE:flashstock>)
endif()

# The CSV reader under random input (tests/fuzz_csv.c).  By default a
# program that replays seeds and a fixed stream of mutations (a ctest test);
# with -DFLASH_LIBFUZZER=ON and clang, a libFuzzer target instead:
#   CC=clang cmake -DFLASH_LIBFUZZER=ON ... && make fuzz_csv && ./tests/fuzz_csv
option(FLASH_LIBFUZZER "Build fuzz targets for libFuzzer (needs clang)" OFF)
add_executable(fuzz_csv ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_csv.c ${PROJECT_SOURCE_DIR}/tools/csv.c)
target_include_directories(fuzz_csv PRIVATE ${PROJECT_SOURCE_DIR}/tools)
if(FLASH_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  target_compile_definitions(fuzz_csv PRIVATE FLASH_LIBFUZZER=1)
  target_compile_options(fuzz_csv PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_csv PRIVATE -fsanitize=fuzzer,address,undefined)
else()
  add_test(NAME fuzz_csv_replay COMMAND fuzz_csv 20000)
  set_tests_properties(fuzz_csv_replay PROPERTIES TIMEOUT 120)
endif()
