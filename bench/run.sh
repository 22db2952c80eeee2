#!/bin/sh
# run.sh -- the whole comparison in one command (under 10 minutes on 2 cores):
# every engine (flashstock, Redis + Lua unpipelined and pipelined with AOF off
# and appendfsync always, MariaDB conditional UPDATE and SELECT FOR UPDATE,
# the bare CAS loop) on every workload (hot, zipf, dedup, mixed), checked for
# overselling and duplicate buyers after each row.
#
#   bench/run.sh [-b BUILD_DIR] [-o RESULTS_DIR] [-- extra flashstock-bench options]
#   bench/run.sh --faults [-b BUILD_DIR] [-o RESULTS_DIR] [-- extra options]
#       the fault round instead (about 3 minutes): `flashstock bench --faults
#       -d async,sync` -- one sale per fault, 5 s clean, 5 s fault, 2.5 s after,
#       5,000 requests/s -- writing faults.md, faults.json, faults.png
#       (bench/plot_faults.gp) and the timeline data.  `--faults -- --short` is the
#       ctest's few-seconds-per-fault mode; `--window S` makes it longer.
#
# Writes into RESULTS_DIR (default BUILD_DIR/bench-results/<UTC time>):
#   table.md        the markdown table (also printed)
#   results.json    one JSON object per row
#   bench.log       progress and messages
#   machine.txt     nproc, CPU model, kernel, date
#   throughput.png, latency-<workload>.png   (gnuplot, bench/plot.gp)
#   throughput.dat, throughput-bars.dat, throughput-vars.gp, curve-*.dat  the plot data
# Exit status: the bench's (0: every row ran and every check is clean).
set -eu

src=$(cd "$(dirname "$0")/.." && pwd -P)
build=$src/build
out=
faults=0
while [ $# -gt 0 ]; do
	case $1 in
	--faults) faults=1; shift ;;
	-b) build=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || out=$build/bench-results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"

if [ ! -x "$build/bench/flashstock-bench" ]; then
	cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target flashstock-bench -j2 >/dev/null

if [ "$faults" = 1 ]; then
	cmake --build "$build" --target flashstock flash_slowio -j2 >/dev/null
	{
		echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "nproc:   $(nproc)"
		echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before the run)"
		echo "command: $build/tools/flashstock bench --faults -d async,sync --out $out $*"
	} >"$out/machine.txt"
	cat "$out/machine.txt"
	rc=0
	"$build/tools/flashstock" bench --faults -d async,sync --out "$out" "$@" \
		>/dev/null 2>"$out/bench.log" || rc=$?   # the table is in faults.md
	cat "$out/faults.md" 2>/dev/null || cat "$out/bench.log" >&2
	if command -v gnuplot >/dev/null 2>&1; then
		gnuplot -e "dir='$out'" "$src/bench/plot_faults.gp" || echo "run.sh: gnuplot failed" >&2
	fi
	echo
	echo "results in $out (exit $rc)"
	exit $rc
fi

{
	echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "nproc:   $(nproc)"
	echo "cpu:     $(lscpu | sed -n 's/^Model name: *//p')"
	echo "kernel:  $(uname -sr)"
	echo "redis:   $(redis-server --version 2>/dev/null | cut -d' ' -f3)"
	echo "mariadb: $( (mariadbd --version || mysqld --version) 2>/dev/null | head -1)"
	# what one synchronous 4 KiB write costs on the WAL's file system now
	f=$(mktemp "${TMPDIR:-/tmp}/flashbench-dsync.XXXXXX")
	t0=$(date +%s%N)
	dd if=/dev/zero of="$f" bs=4096 count=300 oflag=dsync 2>/dev/null || true
	t1=$(date +%s%N)
	rm -f "$f"
	echo "dsync:   $(( (t1 - t0) / 300000 )) us per synchronous 4 KiB write (dd oflag=dsync, 300 writes, ${TMPDIR:-/tmp})"
	echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before the run)"
	echo "command: $build/bench/flashstock-bench -w hot,zipf,dedup,mixed -d async,sync -D 8 --out $out $*"
} >"$out/machine.txt"
cat "$out/machine.txt"

rc=0
# -D 8: no row measures longer than 8 s (the op counts are then caps), which
# keeps the whole run under 10 minutes even on a busy machine.
"$build/bench/flashstock-bench" -w hot,zipf,dedup,mixed -d async,sync -D 8 --out "$out" "$@" \
	2>"$out/bench.log" || rc=$?
cat "$out/table.md"

if command -v gnuplot >/dev/null 2>&1; then
	gnuplot -e "dir='$out'" "$src/bench/plot.gp" || echo "run.sh: gnuplot failed" >&2
else
	echo "run.sh: gnuplot not found: no plots" >&2
fi
echo
echo "results in $out (exit $rc)"
exit $rc
