#!/usr/bin/env bash
# cli_feed_amqp_nack.sh FLASHSTOCK AMQP_CONSUMER AMQP_BUYER FIXTURE -- a
# basic.nack makes the RabbitMQ sink re-send from its last confirmed LSN,
# and its position never passes a nacked message.
#
# The only queue bound to the exchange holds at most 40 messages and
# refuses more (x-overflow reject-publish), so RabbitMQ nacks the 41st
# message and every one after it while nobody consumes.  The buyer places
# 300 orders, acknowledged by a real `flashstock serve`; the sink publishes,
# is nacked, reconnects and tries again.  Checked while the queue is full:
# the sink counted nacks, and its confirmed and committed LSNs stay below
# the LSN of the 41st order (the first message the queue refused).  Then a
# consumer drains the queue, and every acknowledged order arrives (at
# least once), nothing else does.
set -u
fs=$1
consumer=$2
buyer=$3
fixture=$4
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-amqpnack-XXXXXX")
name=/flash-amqpnack-$$
serve_pid= sink_pid= cons_pid= buyer_pids=()
export FLASH_AMQP_PROBE="$consumer probe"
export FLASH_RABBITMQ_DIR="$d/rabbit"

. "$(dirname "$0")/amqp_lib.sh"

eval "$("$fixture" start "$FLASH_RABBITMQ_DIR")" || fail "rabbitmq fixture did not start"

"$fs" create --name "$name" --durability sync --procs 16 --users 4096 --orders 4096 \
	--tokens 64 --requests 64 --skus 16 --shards 64 --activities 4 >/dev/null || fail "create"
"$fs" load --name "$name" --activity 1 --sku 10 --units 100000 >/dev/null || fail "load"
"$fs" serve --name "$name" --wal "$d/wal" --keep-wal --idle-us 200 2>"$d/serve.log" &
serve_pid=$!
wait_for 20 "serve did not start" grep -q "serving segment" "$d/serve.log"
"$consumer" declare "$FLASH_AMQP_PORT" flash.nack q.nack 40 || fail "could not declare the queue"

"$buyer" "$name" 1 10 1 300 0 "$d/stop" "$d/acked" || fail "the buyer failed"
"$fs" feed --to "$FLASH_AMQP_URL" --wal "$d/wal" --consumer amqp --from-start \
	--exchange flash.nack --window 16 --backoff-max-ms 200 --status "$d/status" \
	--progress-s 1 2>>"$d/sink.log" &
sink_pid=$!

# the LSN of the 41st order: the first message the full queue refuses
first_refused=$("$fs" wal dump --wal "$d/wal" | awk '$2 == "order" && ++n == 41 { print $1 }')
[ -n "$first_refused" ] || fail "the WAL holds fewer than 41 orders"
wait_for 30 "the sink was never nacked" status_ge nacked 1
wait_for 30 "the sink did not reconnect after a nack" status_ge reconnects 2
c=$(status_field "$d/status" confirmed_lsn)
k=$(status_field "$d/status" committed_lsn)
[ "$c" -lt "$first_refused" ] || fail "confirmed LSN $c passed the refused message at LSN $first_refused"
[ "$k" -lt "$first_refused" ] || fail "committed LSN $k passed the refused message at LSN $first_refused"
grep -q "basic.nack" "$d/sink.log" || fail "the sink did not say it was nacked"

# a consumer drains the queue: the sink gets everything through
"$consumer" consume "$FLASH_AMQP_PORT" flash.nack q.nack "$d/received" "$d/ready" 40 \
	2>"$d/consumer.log" &
cons_pid=$!
end=$("$fs" status --name "$name" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p')
wait_for 60 "the sink did not confirm up to LSN $end once the queue drained" \
	status_ge confirmed_lsn "$end"
check_delivery "$d/acked"
[ "$nwant" -eq 300 ] || fail "the buyer was acknowledged $nwant orders, not 300"
echo "$delivery nacked=$(status_field "$d/status" nacked) first_refused_lsn=$first_refused" \
     "confirmed_while_full=$c end_lsn=$end"
echo "PASS"
