#!/bin/bash
# cli_reclaim.sh FLASHSTOCK OPS_BUYER -- a windowed segment served by the
# real binaries: `flashstock create --request-window-s 1 --limit-day-s 1`
# makes one (three banks per keyed table, `status` says so), ops_buyer fills
# the user table's first bank with per-day limit entries, and `flashstock
# serve` (its reclaimer looking every 100 ms) moves both tables' generations
# on and clears that bank: the log names the keys cleared, `status --json`
# and the metrics (flashstock_table_fill, flashstock_reclaimed_total) show
# them reclaimed and the bank clear, and a clean stop exits 0; its
# snapshots (a shadow replaying the generations) and `serve --recover` from
# the newest snapshot or from the WAL alone give every bank as it was.  Bad
# command lines exit 2.
set -u
F=${1:?usage: cli_reclaim.sh path/to/flashstock path/to/ops_buyer}
B=${2:?usage: cli_reclaim.sh path/to/flashstock path/to/ops_buyer}
T=$(mktemp -d)
seg=/fs-cli-reclaim-$$
spid=
cleanup() {
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

"$F" create --name "$seg" --no-reclaim --request-window-s 5 >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "--no-reclaim with --request-window-s: want exit 2"
"$F" create --name "$seg" --request-window-s 0 >/dev/null 2>&1
[ $? = 2 ] || fail "--request-window-s 0: want exit 2"

"$F" create --name "$seg" --activities 4 --skus 4 --shards 4 --users 64 --orders 1024 \
	--tokens 16 --requests 16 --procs 8 --ring 1024 --request-window-s 1 --limit-day-s 1 \
	> "$T/create" || fail "create"
has "$T/create" "windowed: request ids 1 s, business day 1 s, 3 banks per table"
"$F" load --name "$seg" --activity 1 --scope day --sku 1 --units 1000 >/dev/null || fail "load"
"$B" --name "$seg" --activity 1 --sku 1 --from 1 --to 20 --log "$T/acks" > "$T/buyer" || fail "buyer"
has "$T/buyer" "acked 20"
"$F" status --name "$seg" --json > "$T/s0" || fail "status"
has "$T/s0" '"users":{"banks":3,"gen_s":1,"gen":0,'
has "$T/s0" '{"gen":0,"keys":20,"cap":64,"state":"current","pinned_by":0}'
"$F" status --name "$seg" > "$T/t0" || fail "status (text)"
has "$T/t0" "generations"

"$F" serve --name "$seg" --wal "$T/wal" --snapshot-every 1 --reconcile-every 0 \
	--reclaim-every-ms 100 --metrics 0 2> "$T/serve.log" &
spid=$!
for _ in $(seq 1 300); do
	grep -q "reclaim: table users: a bank cleared, 20 keys" "$T/serve.log" && break
	kill -0 "$spid" 2>/dev/null || fail "serve exited"
	sleep 0.05
done
has "$T/serve.log" "reclaim: table users: a bank cleared, 20 keys"
"$F" status --name "$seg" --json > "$T/s1" || fail "status after the clear"
grep -o '"users":{[^]]*' "$T/s1" > "$T/u1"
has "$T/u1" '"reclaimed":20'
has "$T/u1" '{"gen":0,"keys":0,"cap":64,"state":"clear","pinned_by":0}'
# the exporter: fill per table and bank, keys reclaimed
port=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$T/serve.log" | tail -n 1)
[ -n "$port" ] || fail "no metrics port"
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot reach the metrics port"
printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
cat <&3 > "$T/metrics"
exec 3<&-
has "$T/metrics" 'flashstock_table_fill{table="users",bank="0"} 0'
has "$T/metrics" 'flashstock_table_fill{table="requests",bank="2"} 0'
has "$T/metrics" 'flashstock_reclaimed_total{table="users"} 20'
kill -TERM "$spid"
wait "$spid"; rc=$?
spid=
[ $rc = 0 ] || fail "serve stop: exit $rc"

! grep -q "snapshot.*\(fail\|error\)" "$T/serve.log" || fail "a snapshot failed"
ls "$T/wal"/snap-*.fss >/dev/null 2>&1 || fail "no snapshot written"
# "wait" says whether a generation is due now: the clock's, not the segment's
gens() { "$F" status --name "$seg" --json | grep -o '"generations":.*' | sed 's/"wait":"[a-z_]*",//g'; }
gens > "$T/g_live" || fail "status"

# rebuilt by serve --recover into the placeholder `create` made with the same
# options, from the newest snapshot and then from the WAL alone: every bank
# as the live segment had it
rebuild() {   # WHAT
	"$F" destroy --name "$seg" >/dev/null || fail "destroy"
	"$F" create --name "$seg" --activities 4 --skus 4 --shards 4 --users 64 --orders 1024 \
		--tokens 16 --requests 16 --procs 8 --ring 1024 --request-window-s 1 --limit-day-s 1 \
		>/dev/null || fail "create the placeholder"
	"$F" serve --name "$seg" --wal "$T/wal" --no-snapshot --reconcile-every 0 --no-reclaim \
		--recover --once 2> "$T/recover.log" || { cat "$T/recover.log" >&2; fail "serve --recover ($1)"; }
	gens > "$T/g_rebuilt" || fail "status"
	cmp -s "$T/g_live" "$T/g_rebuilt" ||
		{ cat "$T/g_live" "$T/g_rebuilt" >&2; fail "rebuilt generations differ ($1)"; }
}
rebuild "from the snapshot"
has "$T/recover.log" "restored from snapshot"
mkdir "$T/snaps" && mv "$T/wal"/snap-*.fss "$T/snaps/"
rebuild "from the WAL"
echo "PASS"
