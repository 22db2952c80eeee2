#!/bin/bash
# cli_stopped_buyer.sh FLASHSTOCK PARK_BUYER OPS_SYNC_BUYER OPS_BUYER -- a buyer
# stopped inside an order (SIGSTOP with its operation open, tests/cli/park_buyer.c)
# on a windowed segment in sync durability, served by the real `flashstock
# serve` with its reclaimer looking every 100 ms.  A generation clear waits out
# every operation open at its start, so the stopped buyer holds reclamation:
# the user table's first bank keeps its keys while the buyer is stopped.  It
# must hold nothing else: sync orders by other buyers complete meanwhile
# (the drain never waits on a buyer), and once the buyer goes on, its order
# is placed and the bank is cleared.  The mean time of a sync order before
# and during the stop goes to the log: a figure, never asserted.
set -u
F=${1:?usage: cli_stopped_buyer.sh FLASHSTOCK PARK_BUYER OPS_SYNC_BUYER OPS_BUYER}
P=${2:?}
S=${3:?}
B=${4:?}
T=$(mktemp -d)
seg=/fs-cli-stopped-$$
spid= ppid_=
cleanup() {
	[ -n "$ppid_" ] && kill -KILL "$ppid_" 2>/dev/null && wait "$ppid_" 2>/dev/null
	[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/serve.log" ] && tail -n 20 "$T/serve.log" >&2
	exit 1
}
has() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "missing: $2"; }; }
now_ms() { date +%s%3N; }
# sync orders by OPS_SYNC_BUYER for users FROM..FROM+N-1: all must be placed;
# prints the mean milliseconds per order
sync_orders() {   # FROM N TAG
	local t0 t1
	t0=$(now_ms)
	"$S" "$seg" 1 1 "$1" "$2" 5000 0 1 > "$T/sync.$3" || fail "ops_sync_buyer ($3)"
	t1=$(now_ms)
	[ "$(grep -c '^FLASH_OK ' "$T/sync.$3")" = "$2" ] || { cat "$T/sync.$3" >&2; fail "not every sync order placed ($3)"; }
	echo "sync orders $3: $2 in $((t1 - t0)) ms, $(( (t1 - t0) / $2 )) ms each on average"
}
# the user table's first bank: its generation and keys
users_bank0() { "$F" status --name "$seg" --json | grep -o '"generations":.*' | grep -o '"users":{[^]]*' |
                grep -o '"bank":\[{"gen":[0-9]*,"keys":[0-9]*' | sed 's/"bank":\[//'; }

"$F" create --name "$seg" --activities 4 --skus 4 --shards 4 --users 256 --orders 1024 \
	--tokens 16 --requests 64 --procs 16 --ring 1024 --request-window-s 1 --limit-day-s 1 \
	--durability sync > "$T/create" || fail "create"
"$F" load --name "$seg" --activity 1 --scope day --sku 1 --units 1000 >/dev/null || fail "load"

# a daemon for the first keys (sync durability), stopped again: the buyer
# parks before the next daemon starts, so no clear runs before it is stopped
"$F" serve --name "$seg" --wal "$T/wal" --no-snapshot --reconcile-every 0 --no-reclaim \
	2> "$T/serve0.log" &
spid=$!
"$B" --name "$seg" --activity 1 --sku 1 --from 1 --to 20 --log "$T/acks" --sync > "$T/buyer" || fail "buyer"
has "$T/buyer" "acked 20"
kill -TERM "$spid"; wait "$spid" || fail "first daemon's stop"
spid=
[ "$(users_bank0)" = '{"gen":0,"keys":20' ] || fail "bank 0 should hold the 20 first keys: $(users_bank0)"

"$P" "$seg" 1 1 500 > "$T/park" &
ppid_=$!
for _ in $(seq 1 200); do
	[ "$(awk '{print $3}' "/proc/$ppid_/stat" 2>/dev/null)" = T ] && break
	sleep 0.05
done
[ "$(awk '{print $3}' "/proc/$ppid_/stat" 2>/dev/null)" = T ] || fail "park_buyer did not stop inside its order"

"$F" serve --name "$seg" --wal "$T/wal" --no-snapshot --reconcile-every 0 \
	--reclaim-every-ms 100 --metrics 0 2> "$T/serve.log" &
spid=$!
sleep 0.5
sync_orders 1000 20 before-the-generations-move
b0=$(users_bank0)   # the 20 first keys and those of the orders just placed, if still in gen 0
k0=${b0##*:}
[ "${b0%%,*}" = '{"gen":0' ] && [ "$k0" -ge 20 ] || fail "bank 0 should hold the first keys: $b0"
sleep 3   # two generations and more: bank 0 is due for its clear
kill -0 "$spid" 2>/dev/null || fail "serve exited"
sync_orders 2000 20 while-stopped
"$F" status --name "$seg" --json > "$T/s_stopped" || fail "status"
grep -o '"generations":.*' "$T/s_stopped" | grep -o '"users":{"banks":3,"gen_s":1,"gen":[0-9]*' > "$T/gen_stopped"
g=$(sed 's/.*"gen"://' "$T/gen_stopped")
[ -n "$g" ] && [ "$g" -ge 2 ] || { cat "$T/s_stopped" >&2; fail "the user table's generation did not move on (gen '$g')"; }
# the stopped buyer's open operation holds the clear: bank 0 keeps its keys
[ "$(users_bank0)" = "$b0" ] || fail "bank 0 cleared under an open operation: $(users_bank0), was $b0"
! grep -q "reclaim: table users: a bank cleared" "$T/serve.log" || fail "a users bank was cleared while the buyer was stopped"

kill -CONT "$ppid_"
wait "$ppid_"; rc=$?
ppid_=
[ $rc = 0 ] || { cat "$T/park" >&2; fail "the stopped buyer's order after SIGCONT: exit $rc"; }
has "$T/park" "FLASH_OK"
for _ in $(seq 1 200); do
	grep -q "reclaim: table users: a bank cleared, $k0 keys" "$T/serve.log" && break
	sleep 0.05
done
has "$T/serve.log" "reclaim: table users: a bank cleared, $k0 keys"
sync_orders 3000 20 after-the-buyer-went-on
kill -TERM "$spid"
wait "$spid"; rc=$?
spid=
[ $rc = 0 ] || fail "serve stop: exit $rc"
echo "PASS"
