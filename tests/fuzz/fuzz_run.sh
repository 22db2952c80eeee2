#!/bin/sh
# fuzz_run.sh -- run each libFuzzer target for a bounded number of executions
# (CI), or for a given time (a longer run).
#
# usage: tests/fuzz/fuzz_run.sh BUILD_DIR [RUNS] [libFuzzer flags ...]
#   BUILD_DIR  configured with -DCMAKE_C_COMPILER=clang -DFLASH_LIBFUZZER=ON,
#              targets fuzz_wal, fuzz_attach (and fuzz_csv) built
#   RUNS       executions per target (default 60000); -1 with
#              -max_total_time=SECONDS for a timed run
# Environment: FUZZ_TARGETS (default "wal attach csv"; a missing binary is
# skipped with a note), FUZZ_RUNS_<target> (executions of that target,
# instead of RUNS: fuzz_attach makes a segment per input, about 3 ms, six
# times fuzz_wal's cost), FUZZ_KEEP=DIR keeps the inputs that found new
# coverage there instead of a temporary directory.
#
# Each target starts from its committed seeds, tests/fuzz/corpus/<target>/ (read
# only; new inputs go to the work directory).  The targets run with ASan and
# UBSan; any crash, broken promise, leak or timeout (10 s per input) fails
# the run: the reproducer is copied to ./fuzz-artifacts/ and the script
# exits 1.  On success it prints, per target, the executions done and the
# coverage reached, and exits 0.
set -u
build=${1:?usage: fuzz_run.sh BUILD_DIR [RUNS] [libFuzzer flags ...]}
runs=${2:-60000}
[ $# -ge 2 ] && shift 2 || shift $#
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-run.XXXXXX")
# fuzz_wal's WAL files: tmpfs, so its many fdatasyncs cost nothing; removed at the end
waldir=$(mktemp -d /dev/shm/fuzz-run-wal.XXXXXX)
status=0

# The targets run at once (each libFuzzer process is single-threaded), then
# their results are read in order.
targets=
for t in ${FUZZ_TARGETS:-wal attach csv}; do
	bin=$build/tests/fuzz_$t
	if [ ! -x "$bin" ]; then
		echo "fuzz_$t: not built in $build, skipped"
		continue
	fi
	case $t in *[!a-z0-9_]*) echo "fuzz_run.sh: bad target name '$t'" >&2; exit 2 ;; esac
	targets="$targets $t"
	corpus=${FUZZ_KEEP:-$work}/$t
	mkdir -p "$corpus" "$work/art-$t"
	seeds=
	[ -d "$src/corpus/$t" ] && seeds=$src/corpus/$t
	case $t in
	wal) maxlen=8192 ;;
	*) maxlen=4096 ;;
	esac
	# shellcheck disable=SC2086
	eval "n=\${FUZZ_RUNS_$t:-$runs}"
	( FUZZ_WAL_DIR=$waldir "$bin" -runs="$n" -timeout=10 -rss_limit_mb=2048 -max_len=$maxlen \
		-print_final_stats=1 -artifact_prefix="$work/art-$t/" "$@" "$corpus" $seeds \
		>"$work/$t.log" 2>&1
	  echo $? >"$work/$t.rc" ) &
done
wait

for t in $targets; do
	rc=$(cat "$work/$t.rc")
	# executions: the final stats, or (fork mode) the last "#N: cov: ..." line
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
	[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$work/$t.log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1)
	# with -ignore_crashes/-ignore_timeouts the exit is 0: artifacts still fail the run
	[ -n "$(ls "$work/art-$t")" ] && [ $rc -eq 0 ] && rc=1
	if [ $rc -ne 0 ]; then
		status=1
		mkdir -p fuzz-artifacts
		cp "$work/art-$t/"* fuzz-artifacts/ 2>/dev/null
		grep -E 'ERROR|SUMMARY|runtime error|broken promise|ALARM|hang' "$work/$t.log" | sort | uniq -c | head -20
		grep -v '^"' "$work/$t.log" | tail -40
		echo "fuzz_$t: FAILED (exit $rc) after ${execs:-?} executions; reproducer(s) in ./fuzz-artifacts/:"
		ls fuzz-artifacts/
	else
		echo "fuzz_$t: ${execs:-?} executions, ${cov:-cov: ?} edges, no crash"
	fi
done
rm -rf "$work" "$waldir"
exit $status
