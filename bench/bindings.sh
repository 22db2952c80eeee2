#!/bin/bash
# bench/bindings.sh -- the bindings side by side, in one run on one machine:
# the cost of one order from C, Python, Go and Java (one thread, one hot sku,
# a token and a request id per order: token redeem -> window -> per-user
# limit -> CAS deduct -> order record), and the same order chain through
# each language's Redis client running bench/seckill.lua (hiredis, redis-py,
# redigo) against one private redis-server.  Rounds are interleaved, so a
# load that comes and goes on the machine reaches every row alike; the table
# gives each row's median and range over the rounds.
#
# Each program also runs with --batch K: the same orders K to a call
# (flash_order_many and each binding's batch call), rows "..., batch K".
#
# usage: bash bench/bindings.sh [--build DIR] [--rounds R] [--orders N]
#                               [--redis-orders M] [--batch K] [--out FILE.md]
#   --build DIR        the plain build (default: build); it must have the
#                      bindings (cmake --build DIR)
#   --rounds R         rounds of every program (default 5)
#   --orders N         flashstock orders per program and round (default 200000)
#   --redis-orders M   Redis + Lua orders per program and round (default 20000)
#   --batch K          orders per batch call in the batch rows (default 16)
#   --out FILE.md      also write the table there (markdown)
#
# Each program makes its own private segment and destroys it; the redis
# server listens on a unix socket in a temporary directory only and is
# stopped at the end.  Prints progress on stderr, the table on stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$here/build rounds=5 orders=200000 rorders=20000 batch=16 out=

usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$(cd "$2" && pwd); shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--orders) orders=$2; shift 2 ;;
	--redis-orders) rorders=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bindings.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
	esac
done
for v in "$rounds" "$orders" "$rorders" "$batch"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bindings.sh: counts must be positive integers" >&2; exit 2; }
done

cloop=$build/bench/flashstock-order-loop
gobench=$build/bindings/go/bin/fsgo-bench
jcp=$build/bindings/java/flashstock.jar:$build/bindings/java/flashstock_java_bench.jar
for f in "$cloop" "$gobench" "$build/bindings/java/flashstock_java_bench.jar" \
         "$build/bindings/python/flashstock"; do
	[ -e "$f" ] || { echo "bindings.sh: $f is missing: build the plain tree first (cmake --build $build)" >&2; exit 2; }
done

tmp=$(mktemp -d)
rpid=
cleanup() {
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' --appendonly no \
	--dir "$tmp" --logfile "$tmp/redis.log" >/dev/null 2>&1 &
rpid=$!
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { echo "bindings.sh: redis-server did not start ($tmp/redis.log)" >&2; exit 1; }

lua=$here/bench/seckill.lua
run_c()      { "$cloop" --orders "$orders" --redis-socket "$sock" --redis-orders "$rorders" --lua "$lua"; }
run_python() { PYTHONPATH=$build/bindings/python /usr/bin/python3 "$here/bindings/python/bench/bench_orders.py" \
                   --orders "$orders" --redis-socket "$sock" --redis-orders "$rorders" --lua "$lua"; }
run_go()     { "$gobench" --orders "$orders" --redis-socket "$sock" --redis-orders "$rorders" --lua "$lua"; }
run_java()   { java -cp "$jcp" flashstock.Bench --orders "$orders"; }
# the batch rows: flashstock only (the Redis rows do not change)
run_c_batch()      { "$cloop" --orders "$orders" --batch "$batch"; }
run_python_batch() { PYTHONPATH=$build/bindings/python /usr/bin/python3 \
                         "$here/bindings/python/bench/bench_orders.py" --orders "$orders" --batch "$batch"; }
run_go_batch()     { "$gobench" --orders "$orders" --batch "$batch"; }
run_java_batch()   { java -cp "$jcp" flashstock.Bench --orders "$orders" --batch "$batch"; }

lines=$tmp/lines
: >"$lines"
for r in $(seq 1 "$rounds"); do
	for run in c python go java c_batch python_batch go_batch java_batch; do
		lang=${run%_batch} mark=
		[ "$run" != "$lang" ] && mark="batchrun=$batch "
		printf 'bindings.sh: round %d/%d: %s\n' "$r" "$rounds" "$run" >&2
		"run_$run" >"$tmp/one" || { echo "bindings.sh: the $run bench failed:" >&2; cat "$tmp/one" >&2; exit 1; }
		grep '^bench ' "$tmp/one" | sed "s/^bench /bench prog=$lang $mark/" >>"$lines" || { echo "bindings.sh: the $run bench printed no result" >&2; exit 1; }
	done
done

# median and range per (binding, engine); the C flashstock row is the base
table=$(awk '
	{ pr = b = e = ""; v = 0; k = 0
	  for (i = 2; i <= NF; i++) { split($i, kv, "=")
	      if (kv[1] == "prog") pr = kv[2]; else if (kv[1] == "binding") b = kv[2]
	      else if (kv[1] == "engine") e = kv[2]; else if (kv[1] == "ns_per_order") v = kv[2] + 0
	      else if (kv[1] == "batchrun") k = kv[2] }
	  # a batch run names its engines its own way (flashstock-batch16,
	  # c-batch, ...): the row is the engine, with the batch said after it
	  sub(/-batch[0-9]*$/, "", e)
	  # a program that also times the same loop in C in its own process
	  # (Go through cgo, Java through JNI) reports it as its C control row
	  if (b != pr || e == "c") { b = pr; e = "C loop, same process" }
	  if (k) e = e ", batch " k
	  k = b SUBSEP e
	  if (!(k in n)) order[++nk] = k
	  x[k, ++n[k]] = v }
	function med(k,   i, j, t, m) {
	  m = n[k]
	  for (i = 1; i <= m; i++) y[i] = x[k, i]
	  for (i = 2; i <= m; i++) for (j = i; j > 1 && y[j-1] > y[j]; j--) { t = y[j]; y[j] = y[j-1]; y[j-1] = t }
	  lo = y[1]; hi = y[m]
	  return (m % 2) ? y[(m + 1) / 2] : (y[m/2] + y[m/2 + 1]) / 2 }
	function us(ns) { return ns >= 1000 ? sprintf("%.2f us", ns / 1000) : sprintf("%.0f ns", ns) }
	END {
	  base = med("c" SUBSEP "flashstock")
	  print "| binding | engine | per order (median) | range over the rounds | vs C flashstock |"
	  print "|---|---|---|---|---|"
	  for (i = 1; i <= nk; i++) { split(order[i], p, SUBSEP)
	      m = med(order[i])
	      printf "| %s | %s | %s | %s .. %s | %.2fx |\n", p[1], p[2], us(m), us(lo), us(hi), m / base
	      if (p[2] == "flashstock") fl[p[1]] = m; else if (p[2] == "redis-lua") rl[p[1]] = m }
	  print ""
	  for (b in fl) if (b in rl)
	      printf "- %s: the same order through %s and seckill.lua takes %.1fx as long as through flashstock\n",
	             b, (b == "c" ? "hiredis" : b == "python" ? "redis-py" : b == "go" ? "redigo" : b "\x27s Redis client"), rl[b] / fl[b]
	}' "$lines")
echo "$table"
if [ -n "$out" ]; then
	{
		echo "\`bash bench/bindings.sh --rounds $rounds --orders $orders --redis-orders $rorders --batch $batch\`"
		echo "($(nproc) cores, $(date -u +%Y-%m-%d)):"
		echo
		echo "$table"
	} >"$out"
fi
