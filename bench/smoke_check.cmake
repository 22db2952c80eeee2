# smoke_check.cmake -- the bench's CI checks (tests/bench/bench_tests.cmake runs them):
#   cmake -DBENCH=<flashstock-bench> -DMODE=smoke|break -DOUT=<dir> -P smoke_check.cmake
# smoke: a tiny run of every built-in engine; every JSON line must parse with
#        exactly the report's keys, every engine must have a row, and every row
#        must show oversold = 0 and duplicates = 0 (or null: no users).
# twoproc: flashstock alone on 2 buyer processes, order by order and in batches
#        (flash_order_many): every workload in async durability, a million
#        orders in each hot row, 200,000 in the others.  Every row must run
#        and show oversold = 0, duplicates = 0 and no lost acknowledgement (the bench
#        exits 1 on any of them).  Main once shipped with a bench that could
#        not run two buyers: FLASH_EFULL from the order table.
# twoproc_sync: the same rows in sync durability, 200,000 orders each (2 x 64
#        buyer threads, each order acknowledged after the WAL's fdatasync).  They once took
#        minutes to start and mixed never finished: every buyer thread's
#        handle mapped and pre-faulted the whole segment on its own.
# break: the baselines run with their stock check removed (--break-baseline)
#        on little stock; every row must REPORT oversold > 0, which proves the
#        check catches a baseline that oversells.
# Timings are never asserted.
cmake_minimum_required(VERSION 3.19)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

execute_process(COMMAND ${BENCH} --list OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "flashstock-bench --list failed: ${rc}")
endif()
# engines built in: lines "<name>" with nothing after the name
string(REGEX MATCHALL "(^|\n)[a-z-]+[ ]*\n" built "${listing}")
set(engines "")
foreach(l ${built})
  string(STRIP "${l}" l)
  list(APPEND engines ${l})
endforeach()

if(MODE STREQUAL "smoke")
  string(REPLACE ";" "," elist "${engines}")
  set(args -q -e ${elist} -w hot,mixed -d async,sync --ops 1000 --json --out ${OUT})
elseif(MODE STREQUAL "twoproc")
  # the hot rows a million orders each, the other workloads 200,000 (at a
  # million the test took 48 s of CPU alone, 21 s now)
  set(engines flashstock flashstock-batch)
  set(args -q -e flashstock,flashstock-batch -w hot -d async -p 2 --ops 1000000
           --json --out ${OUT})
  set(args2 -q -e flashstock,flashstock-batch -w zipf,dedup,mixed -d async -p 2 --ops 200000
           --json --out ${OUT}/more)
  set(want_rows 8)
elseif(MODE STREQUAL "twoproc_sync")
  # every workload 200,000 orders: the ordering path and its order table are
  # the async rows' (a million in the hot ones, twoproc above); what is sync's
  # own (the buyer threads' set-up, the WAL's group commits) does not grow
  # with the count.  The hot rows at a million took 61 s of CPU of this
  # test's 2 cores.
  set(engines flashstock flashstock-batch)
  set(args -q -e flashstock,flashstock-batch -w hot,zipf,dedup,mixed -d sync -p 2 --ops 200000
           --json --out ${OUT})
  set(want_rows 8)
elseif(MODE STREQUAL "break")
  list(REMOVE_ITEM engines flashstock flashstock-batch)
  list(REMOVE_ITEM engines redis-lua-pipelined mysql-for-update)
  string(REPLACE ";" "," elist "${engines}")
  set(args -q -e ${elist} -w hot -d async --ops 2000 --stock 50 --break-baseline --json)
else()
  message(FATAL_ERROR "MODE must be smoke, twoproc, twoproc_sync or break")
endif()

message(STATUS "running: ${BENCH} ${args}")
execute_process(COMMAND ${BENCH} ${args} OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "stderr:\n${err}")
if(DEFINED args2 AND rc EQUAL 0)
  message(STATUS "running: ${BENCH} ${args2}")
  execute_process(COMMAND ${BENCH} ${args2} OUTPUT_VARIABLE json2 ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "stderr:\n${err}")
  string(APPEND json "${json2}")
endif()
message(STATUS "stdout:\n${json}")
if(NOT MODE STREQUAL "break" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "bench exited ${rc}: a row failed or a check found a problem")
endif()
if(MODE STREQUAL "break" AND NOT rc EQUAL 1)
  message(FATAL_ERROR "bench exited ${rc}; with a broken baseline it must exit 1")
endif()

string(REPLACE "\n" ";" lines "${json}")
set(keys engine workload durability procs threads orders_per_sec p50_ns p99_ns p999_ns oversold duplicates)
set(seen "")
set(nrows 0)
foreach(line ${lines})
  if(line STREQUAL "")
    continue()
  endif()
  string(JSON n ERROR_VARIABLE jerr LENGTH "${line}")
  if(jerr)
    message(FATAL_ERROR "not JSON: ${line}: ${jerr}")
  endif()
  list(LENGTH keys nk)
  if(NOT n EQUAL nk)
    message(FATAL_ERROR "row has ${n} keys, not ${nk}: ${line}")
  endif()
  foreach(k ${keys})
    string(JSON v ERROR_VARIABLE kerr GET "${line}" ${k})
    if(kerr)
      message(FATAL_ERROR "row lacks key '${k}': ${line}")
    endif()
  endforeach()
  string(JSON eng GET "${line}" engine)
  string(JSON over GET "${line}" oversold)
  string(JSON dup GET "${line}" duplicates)
  string(JSON dtype TYPE "${line}" duplicates)
  list(APPEND seen ${eng})
  math(EXPR nrows "${nrows} + 1")
  if(MODE MATCHES "^twoproc")
    string(JSON procs GET "${line}" procs)
    if(NOT procs EQUAL 2)
      message(FATAL_ERROR "not a 2-process row: ${line}")
    endif()
  endif()
  if(NOT MODE STREQUAL "break")
    if(NOT over EQUAL 0)
      message(FATAL_ERROR "oversold ${over} in: ${line}")
    endif()
    if(NOT dtype STREQUAL "NULL" AND NOT dup EQUAL 0)
      message(FATAL_ERROR "duplicates ${dup} in: ${line}")
    endif()
  else()
    if(NOT over GREATER 0)
      message(FATAL_ERROR "broken baseline not caught (oversold ${over}): ${line}")
    endif()
  endif()
endforeach()
foreach(e ${engines})
  if(NOT e IN_LIST seen)
    message(FATAL_ERROR "engine ${e} has no row")
  endif()
endforeach()
if(MODE STREQUAL "smoke")
  foreach(f table.md results.json throughput.dat)
    if(NOT EXISTS ${OUT}/${f})
      message(FATAL_ERROR "missing ${OUT}/${f}")
    endif()
  endforeach()
endif()
if(DEFINED want_rows AND NOT nrows EQUAL want_rows)
  message(FATAL_ERROR "${nrows} rows, not ${want_rows}: a row did not run")
endif()
message(STATUS "${MODE}: ${nrows} rows checked (${seen})")
