#!/usr/bin/env bash
# cli_feed_amqp.sh FLASHSTOCK AMQP_CONSUMER AMQP_BUYER FIXTURE -- the RabbitMQ
# sink through the real binaries: a sync segment served by `flashstock serve`,
# buyers writing down what flash_order / flash_cancel acknowledged,
# `flashstock feed --to amqp://` publishing with confirms to a private
# rabbitmq-server, and a consumer (manual acks) writing down what arrived.
#
# Mid-stream the broker is killed (kill -9) and started again on its data,
# then the sink is killed (kill -9) and started again on its position, then
# the broker hangs (SIGSTOP) past the sink's confirm timeout and comes back,
# then the daemon is killed (kill -9) and started again.
# Afterwards, from what the consumer received:
#   - every acknowledged order and cancel arrived at least once,
#   - nothing arrived that was not acknowledged (or whose fate the buyer
#     was told is unknown),
#   - every message carries its LSN header and the LSNs agree with the WAL,
#   - duplicates (at least once) are counted and printed, not refused;
# and the sink's status shows the reconnect and a confirmed LSN equal to
# the WAL's end (nothing left unconfirmed), and a SIGTERM commits it.
. "$(dirname "$0")/amqp_lib.sh" amqp "$@"

eval "$("$fixture" start "$FLASH_RABBITMQ_DIR")" || fail "rabbitmq fixture did not start"
url=$FLASH_AMQP_URL

sale_start 65536 1000000

"$consumer" consume "$FLASH_AMQP_PORT" flash.test q.test "$d/received" "$d/ready" \
	2>"$d/consumer.log" &
cons_pid=$!
wait_for 20 "consumer did not bind its queue" test -f "$d/ready"

start_sink() {
	"$fs" feed --to "$url" --wal "$d/wal" --consumer amqp --from-start \
		--exchange flash.test --window 64 --confirm-timeout-ms 1500 --backoff-max-ms 500 \
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
lsn_at_sink_kill=$(status_field "$d/status" committed_lsn)
sleep 0.5
start_sink 2
sleep 1
# then the broker hangs (SIGSTOP): no confirm comes, the sink gives the
# connection up after its confirm timeout and keeps trying; orders keep
# flowing into the WAL meanwhile
"$fixture" freeze "$FLASH_RABBITMQ_DIR" || fail "could not freeze the broker"
frozen=1
wait_for 30 "the sink did not give up on the hung broker" grep -q "no confirm within" "$d/sink2.log"
wal_at_thaw=$("$fs" status --name "$name" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p')
"$fixture" thaw "$FLASH_RABBITMQ_DIR" || fail "could not thaw the broker"
frozen=
wait_for 60 "the sink did not catch up after the broker hung" status_ge confirmed_lsn "$wal_at_thaw"
# then the daemon dies (kill -9) and starts again on its WAL: the sink only
# waits for new durable records and goes on
kill -KILL "$serve_pid"
wait "$serve_pid" 2>/dev/null
wal_at_serve_kill=$("$fs" wal dump --wal "$d/wal" | tail -n 1 | cut -d' ' -f1)
"$fs" serve --name "$name" --wal "$d/wal" --keep-wal --idle-us 200 2>"$d/serve2.log" &
serve_pid=$!
wait_for 30 "serve did not start again" grep -q "serving segment" "$d/serve2.log"
wait_for 60 "the sink did not go past LSN $wal_at_serve_kill after serve restarted" \
	status_ge confirmed_lsn $((wal_at_serve_kill + 50))
: >"$d/stop"
for p in "${buyer_pids[@]}"; do wait "$p" || fail "a buyer failed"; done
buyer_pids=()

# the sink catches up with the WAL's durable end and leaves nothing in flight
end=$("$fs" status --name "$name" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p')
[ -n "$end" ] || fail "no wal_lsn in status --json"
wait_for 60 "the sink did not confirm up to LSN $end" status_ge confirmed_lsn "$end"

check_delivery "$d"/acked1 "$d"/acked2
echo "$delivery broker_killed_at_lsn=$lsn_at_kill sink_killed_at_committed_lsn=$lsn_at_sink_kill" \
     "broker_thawed_at_wal_lsn=$wal_at_thaw serve_killed_at_wal_lsn=$wal_at_serve_kill end_lsn=$end"
[ "$nwant" -gt 1000 ] || fail "only $nwant acknowledged operations: the test did not run long enough"
grep -q "connection lost" "$d/sink1.log" || fail "the sink did not report the lost connection"
grep -q "connected again; re-sending from LSN" "$d/sink1.log" || fail "the sink did not report the reconnect"
# a clean stop commits the confirmed LSN and prints the figures last
kill -TERM "$sink_pid"
wait "$sink_pid" || fail "the sink did not exit 0 on SIGTERM"
sink_pid=
status_ge committed_lsn "$end" || fail "committed $(status_field "$d/status" committed_lsn) after a clean stop, WAL end $end"
# the sink is a consumer of the feed like any other: `feed --list` shows it caught up
"$fs" feed --list --wal "$d/wal" --json | grep -q "\"name\":\"amqp\",\"state\":\"ok\",\"committed_lsn\":$end," \
	|| fail "feed --list does not show consumer amqp at LSN $end: $("$fs" feed --list --wal "$d/wal" --json)"
tail -n 1 "$d/sink2.log" | grep -q "^feed --to: confirmed_lsn=[0-9]* .* in_flight=0 .* connected=1" \
	|| fail "the sink's last progress line: $(tail -n 1 "$d/sink2.log")"
echo "PASS"
