# faults_check.cmake -- the fault round's CI check (tests/bench/bench_tests.cmake):
#   cmake -DFLASHSTOCK=<flashstock> -DSLOWIO=<libflash_slowio.so> -DOUT=<dir> -P faults_check.cmake
# Runs `flashstock bench --faults --short` (a few seconds per fault,
# flashstock in sync durability and Redis + Lua) and checks what it produced: the
# table and the timeline are written, every fault of the table has a JSON
# row, every fault that can run did run and took effect (a killed process
# came back once, the slow-disk shim delayed WAL calls, the RabbitMQ sink
# reconnected after its broker was killed), and after every sale
# the invariants held: nothing oversold, no user over the limit, the counters agree, and for
# flashstock no acknowledged order lost and segment, WAL and MariaDB
# reconciled without a difference, and the broker confirmed every WAL record
# through `flashstock feed --to amqp://`.  Redis may lose acknowledged orders in a
# restart: that is counted in the table, not checked here.  Timings are never
# asserted.
cmake_minimum_required(VERSION 3.19)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

# sync only: the durability in which an acknowledgement is a promise about
# the disk; bench/run.sh --faults runs async too (CI time is the limit here)
set(args bench --faults --short -q -d sync --json --out ${OUT}
         --flashstock ${FLASHSTOCK} --slowio-preload ${SLOWIO})
message(STATUS "running: ${FLASHSTOCK} ${args}")
execute_process(COMMAND ${FLASHSTOCK} ${args} OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "stderr:\n${err}")
message(STATUS "stdout:\n${json}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench --faults exited ${rc}: a sale failed or an invariant broke")
endif()
foreach(f faults.md faults.json faults-timeline.dat faults-vars.gp)
  if(NOT EXISTS ${OUT}/${f})
    message(FATAL_ERROR "missing ${OUT}/${f}")
  endif()
endforeach()
file(READ ${OUT}/faults.md table)
if(NOT table MATCHES "\\| engine \\| durability \\| fault \\| ops/s clean \\| ops/s fault")
  message(FATAL_ERROR "faults.md holds no fault table:\n${table}")
endif()

# every fault the bench can inject, and the engine it belongs to
set(expect flashstock:mariadb-sigstop:sync flashstock:serve-sigkill:sync
           flashstock:wal-slow:sync flashstock:broker-stop:sync
           redis-lua:redis-sigkill:sync redis-lua:redis-sigstop:sync)
set(seen "")
string(REPLACE "\n" ";" lines "${json}")
foreach(line ${lines})
  if(line STREQUAL "")
    continue()
  endif()
  string(JSON eng ERROR_VARIABLE jerr GET "${line}" engine)
  if(jerr)
    message(FATAL_ERROR "not a fault row: ${line}: ${jerr}")
  endif()
  string(JSON fault GET "${line}" fault)
  string(JSON ran GET "${line}" ran)
  if(NOT ran)
    # a fault the build cannot inject says why, and is listed in the table
    string(JSON why GET "${line}" why)
    if(why STREQUAL "" OR NOT table MATCHES "${fault}.*NOT RUN")
      message(FATAL_ERROR "fault ${fault} not run without a reason in the table: ${line}")
    endif()
    message(STATUS "not run: ${fault}: ${why}")
    continue()
  endif()
  string(JSON dur GET "${line}" durability)
  list(APPEND seen ${eng}:${fault}:${dur})
  foreach(k failed oversold duplicates mismatch invariants_held acked orders)
    string(JSON v_${k} GET "${line}" ${k})
  endforeach()
  if(v_failed OR NOT v_invariants_held)
    message(FATAL_ERROR "sale failed or an invariant broke: ${line}")
  endif()
  if(NOT v_oversold EQUAL 0 OR NOT v_duplicates EQUAL 0 OR NOT v_mismatch EQUAL 0)
    message(FATAL_ERROR "oversold, over limit or counters disagree: ${line}")
  endif()
  if(NOT v_acked GREATER 0 OR NOT v_orders GREATER 0)
    message(FATAL_ERROR "the sale placed no order: ${line}")
  endif()
  if(eng STREQUAL "flashstock")
    string(JSON lost GET "${line}" lost)
    string(JSON diffs GET "${line}" reconcile_diffs)
    if(NOT lost EQUAL 0 OR NOT diffs EQUAL 0)
      message(FATAL_ERROR "flashstock lost acknowledged orders or disagrees with its WAL/MariaDB: ${line}")
    endif()
  endif()
  if(fault STREQUAL "wal-slow")
    # the shim counts the WAL writes and fdatasyncs it delayed: the fault took effect
    string(JSON slowed GET "${line}" slowed_calls)
    if(NOT slowed GREATER 0)
      message(FATAL_ERROR "wal-slow slowed no WAL call: ${line}")
    endif()
  endif()
  if(fault STREQUAL "broker-stop")
    # the sink saw the broker go, and afterwards the broker confirmed every WAL record
    string(JSON behind GET "${line}" sink_behind)
    string(JSON reconnects GET "${line}" sink_reconnects)
    if(NOT behind EQUAL 0 OR NOT reconnects GREATER 0)
      message(FATAL_ERROR "the sink did not reconnect, or left WAL records unconfirmed: ${line}")
    endif()
  endif()
  if(fault MATCHES "sigkill$|broker-stop")
    string(JSON restarts GET "${line}" restarts)
    if(NOT restarts EQUAL 1)
      message(FATAL_ERROR "the killed process was not restarted once: ${line}")
    endif()
  endif()
endforeach()
foreach(e ${expect})
  if(NOT e IN_LIST seen)
    message(FATAL_ERROR "no sale for ${e}")
  endif()
endforeach()
message(STATUS "faults: ${seen}: every invariant held")
