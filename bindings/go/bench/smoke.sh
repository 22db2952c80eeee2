#!/bin/bash
# bench/smoke.sh -- a tiny run of the Go bench (ctest go_bench): a private
# redis-server on a unix socket in a temporary directory, the bench with a
# few thousand orders per engine, and a check that it printed one line per
# engine; then a batch run (--batch 16, the last batch shorter) and a check
# for its three batch lines.  The bench itself exits 1 unless every order
# succeeded; no timing is asserted.
#
# usage: smoke.sh BENCH REDIS_SERVER SECKILL_LUA
set -u
BENCH=$1 REDIS=$2 LUA=$3
fail() { echo "go_bench: FAIL: $*" >&2; exit 1; }
t=$(mktemp -d) || fail mktemp
rpid=
cleanup() {
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
"$REDIS" --port 0 --unixsocket "$t/redis.sock" --unixsocketperm 700 --dir "$t" \
	--save '' --appendonly no --daemonize no >"$t/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 1 100); do [ -S "$t/redis.sock" ] && break; sleep 0.05; done
[ -S "$t/redis.sock" ] || fail "redis-server did not start: $(cat "$t/redis.log")"
out=$("$BENCH" --orders 3000 --redis-socket "$t/redis.sock" --lua "$LUA") || fail "bench exited $?: $out"
echo "$out"
for e in c flashstock flashstock-pool redis-lua; do
	grep -Eq "^bench binding=go engine=$e orders=3000 ns_per_order=[0-9.]+$" <<<"$out" ||
		fail "no line for engine $e"
done
out=$("$BENCH" --orders 3000 --batch 16) || fail "bench --batch 16 exited $?: $out"
echo "$out"
for e in c flashstock flashstock-pool; do
	grep -Eq "^bench binding=go engine=$e-batch batch=16 orders=3000 ns_per_order=[0-9.]+$" <<<"$out" ||
		fail "no line for engine $e-batch"
done
echo "go_bench: ok"
