#!/usr/bin/env bash
# cli_feed_amqp.sh FLASHSTOCK AMQP_CONSUMER AMQP_BUYER FIXTURE -- the RabbitMQ
# sink through the real binaries: a sync segment served by `flashstock serve`,
# buyers writing down what flash_order / flash_cancel acknowledged,
# `flashstock feed --to amqp://` publishing with confirms to a private
# rabbitmq-server, and a consumer (manual acks) writing down what arrived.
#
# Mid-stream the broker is killed (kill -9) and started again on its data,
# then the sink is killed (kill -9) and started again on its position.
# Afterwards, from what the consumer received:
#   - every acknowledged order and cancel arrived at least once,
#   - nothing arrived that was not acknowledged (or whose fate the buyer
#     was told is unknown),
#   - every message carries its LSN header and the LSNs agree with the WAL,
#   - duplicates (at least once) are counted and printed, not refused;
# and the sink's status shows the reconnect and a confirmed LSN equal to
# the WAL's end (nothing left unconfirmed), and a SIGTERM commits it.
set -u
fs=$1
consumer=$2
buyer=$3
fixture=$4
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-amqp-XXXXXX")
name=/flash-amqp-$$
serve_pid= sink_pid= cons_pid= buyer_pids=()
export FLASH_AMQP_PROBE="$consumer probe"
export FLASH_RABBITMQ_DIR="$d/rabbit"

cleanup() {
	for p in "${buyer_pids[@]}" $sink_pid $cons_pid $serve_pid; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	"$fixture" stop "$FLASH_RABBITMQ_DIR" >/dev/null 2>&1
	"$fs" destroy --name "$name" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$d"/serve.log "$d"/sink*.log "$d"/consumer.log; do
		[ -f "$f" ] && { echo "--- $f:"; tail -n 30 "$f"; }
	done
	exit 1
}
# wait_for SECONDS WHAT COMMAND...: poll until COMMAND succeeds
wait_for() {
	local s=$1 what=$2 i=0
	shift 2
	until "$@"; do
		i=$((i + 1))
		[ $i -gt $((s * 10)) ] && fail "$what (waited ${s}s)"
		sleep 0.1
	done
}
status_field() { # status_field FILE KEY: a number of the sink's status JSON
	sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" 2>/dev/null
}
status_ge() { # status_ge KEY N: the sink's status shows KEY >= N (read afresh each call)
	local v
	v=$(status_field "$d/status" "$1")
	[ -n "$v" ] && [ "$v" -ge "$2" ]
}

eval "$("$fixture" start "$FLASH_RABBITMQ_DIR")" || fail "rabbitmq fixture did not start"
url=$FLASH_AMQP_URL

"$fs" create --name "$name" --durability sync --procs 16 --users 65536 --orders 65536 \
	--tokens 64 --requests 64 --skus 16 --shards 64 --activities 4 >/dev/null || fail "create"
"$fs" load --name "$name" --activity 1 --sku 10 --units 1000000 >/dev/null || fail "load"
"$fs" serve --name "$name" --wal "$d/wal" --keep-wal --idle-us 200 2>"$d/serve.log" &
serve_pid=$!
wait_for 20 "serve did not start" grep -q "serving segment" "$d/serve.log"

"$consumer" consume "$FLASH_AMQP_PORT" flash.test q.test "$d/received" "$d/ready" \
	2>"$d/consumer.log" &
cons_pid=$!
wait_for 20 "consumer did not bind its queue" test -f "$d/ready"

start_sink() {
	"$fs" feed --to "$url" --wal "$d/wal" --consumer amqp --name "$name" --from-start \
		--exchange flash.test --window 64 --confirm-timeout-ms 5000 --backoff-max-ms 500 \
		--status "$d/status" --progress-s 1 2>>"$d/sink$1.log" &
	sink_pid=$!
}
start_sink 1

for b in 1 2; do
	"$buyer" "$name" 1 10 $((b * 1000000)) 20000 7 "$d/stop" "$d/acked$b" &
	buyer_pids+=($!)
done

# some traffic, then the broker dies mid-stream; orders keep flowing into the WAL
wait_for 30 "nothing confirmed before the broker kill" status_ge confirmed_lsn 200
"$fixture" crash "$FLASH_RABBITMQ_DIR" || fail "could not kill the broker"
lsn_at_kill=$(status_field "$d/status" confirmed_lsn)
sleep 1
"$fixture" resume "$FLASH_RABBITMQ_DIR" >/dev/null || fail "broker did not come back"
wait_for 60 "the sink did not reconnect" status_ge reconnects 1
wait_for 30 "the sink did not move past LSN $lsn_at_kill after the reconnect" \
	status_ge confirmed_lsn $((lsn_at_kill + 100))

# then the sink dies mid-stream and starts again from its committed position
kill -KILL "$sink_pid"
wait "$sink_pid" 2>/dev/null
lsn_at_sink_kill=$(cat "$d/wal/sink-amqp.pos")
sleep 0.5
start_sink 2
sleep 1
: >"$d/stop"
for p in "${buyer_pids[@]}"; do wait "$p" || fail "a buyer failed"; done
buyer_pids=()

# the sink catches up with the WAL's durable end and leaves nothing in flight
end=$("$fs" status --name "$name" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p')
[ -n "$end" ] || fail "no wal_lsn in status --json"
wait_for 60 "the sink did not confirm up to LSN $end" status_ge confirmed_lsn "$end"

# what was acknowledged, what arrived, and what the WAL says
cat "$d"/acked1 "$d"/acked2 >"$d/acked"
grep -E '^(order|cancel) ' "$d/acked" | sort -u >"$d/want"
grep -E '^unknown(-cancel)? ' "$d/acked" | sed 's/^unknown-cancel/cancel/; s/^unknown/order/' \
	| sort -u >"$d/maybe"
nwant=$(wc -l <"$d/want")
[ "$nwant" -gt 1000 ] || fail "only $nwant acknowledged operations: the test did not run long enough"
"$fs" wal dump --wal "$d/wal" | awk '$2 == "order" || $2 == "cancel" {
	for (i = 3; i <= NF; i++) if ($i ~ /^order=/) { sub("order=", "", $i); print $2, $i, $1 } }' \
	| sort >"$d/wal_msgs"
wait_for 60 "the consumer did not receive every acknowledged operation" \
	sh -c "awk '{print \$1, \$2}' '$d/received' | sort -u | comm -23 '$d/want' - | grep -q . && exit 1 || exit 0"
sleep 1   # let duplicates still in the queue come in
kill -TERM "$cons_pid"
wait "$cons_pid"
cons_pid=

awk '{print $1, $2}' "$d/received" | sort -u >"$d/got"
missing=$(comm -23 "$d/want" "$d/got" | wc -l)
extra=$(sort -u "$d/want" "$d/maybe" | comm -13 - "$d/got")
total=$(wc -l <"$d/received")
uniq_n=$(wc -l <"$d/got")
dups=$((total - uniq_n))
bad_lsn=$(awk '{print $1, $2, $3}' "$d/received" | sort -u | comm -23 - "$d/wal_msgs" | head -3)
echo "acknowledged=$nwant received=$total unique=$uniq_n duplicates=$dups missing=$missing" \
     "broker_killed_at_lsn=$lsn_at_kill sink_killed_at_committed_lsn=$lsn_at_sink_kill end_lsn=$end"
[ "$missing" -eq 0 ] || fail "$missing acknowledged operations never arrived: $(comm -23 "$d/want" "$d/got" | head -3)"
[ -z "$extra" ] || fail "arrived without being acknowledged: $(echo "$extra" | head -3)"
[ -z "$bad_lsn" ] || fail "messages whose (type, order, lsn) the WAL does not hold: $bad_lsn"
grep -q "connection lost" "$d/sink1.log" || fail "the sink did not report the lost connection"
grep -q "connected again; re-sending from LSN" "$d/sink1.log" || fail "the sink did not report the reconnect"
# a clean stop commits the confirmed LSN and prints the figures last
kill -TERM "$sink_pid"
wait "$sink_pid" || fail "the sink did not exit 0 on SIGTERM"
sink_pid=
[ "$(cat "$d/wal/sink-amqp.pos")" -ge "$end" ] || fail "position $(cat "$d/wal/sink-amqp.pos") after a clean stop, WAL end $end"
tail -n 1 "$d/sink2.log" | grep -q "^feed --to: confirmed_lsn=[0-9]* .* in_flight=0 .* connected=1" \
	|| fail "the sink's last progress line: $(tail -n 1 "$d/sink2.log")"
echo "PASS"
