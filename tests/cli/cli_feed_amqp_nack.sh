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
# least once), nothing else does.  Before that: usage errors exit 2, and
# what retrying cannot mend (a refused login, an exchange of another type)
# ends the sink with 1, saying why.
. "$(dirname "$0")/amqp_lib.sh" amqpnack "$@"

# usage errors: exit 2, before anything is made
"$fs" feed --to http://x --wal "$d" --consumer c 2>"$d/usage.log"
[ $? -eq 2 ] || fail "feed --to http://x: not a usage error"
"$fs" feed --to amqp://127.0.0.1:1 --wal "$d" 2>"$d/usage.log"
[ $? -eq 2 ] || fail "feed --to without --consumer: not a usage error"
"$fs" feed --to amqp://127.0.0.1:1 --wal "$d" --consumer c --window 0 2>"$d/usage.log"
[ $? -eq 2 ] || fail "feed --to --window 0: not a usage error"
"$fs" feed --to x --help | grep -q "publisher confirms" || fail "feed --to --help"
"$fs" feed --to "@$d/no-such-file" --wal "$d" --consumer c 2>"$d/usage.log"
[ $? -eq 2 ] || fail "feed --to @missing-file: not a usage error"
[ ! -e "$d/feed" ] || fail "a usage error registered a consumer"

eval "$("$fixture" start "$FLASH_RABBITMQ_DIR")" || fail "rabbitmq fixture did not start"

sale_start 4096 100000
"$consumer" declare "$FLASH_AMQP_PORT" flash.nack q.nack 40 || fail "could not declare the queue"

"$buyer" "$name" 1 10 1 300 0 "$d/stop" "$d/acked" || fail "the buyer failed"

# what retrying cannot mend ends the sink with 1 and says why: a refused
# login, an exchange declared with another type
echo "amqp://guest:wrong@127.0.0.1:$FLASH_AMQP_PORT" >"$d/url"   # --to @FILE: the URL from a file
"$fs" feed --to "@$d/url" --wal "$d/wal" --consumer bad --exchange flash.nack 2>"$d/refused.log"
[ $? -eq 1 ] || fail "a refused login did not end the sink with 1"
grep -q "ACCESS_REFUSED" "$d/refused.log" || fail "refused login: $(cat "$d/refused.log")"
"$fs" feed --to "$FLASH_AMQP_URL" --wal "$d/wal" --consumer bad --exchange flash.nack \
	--exchange-type direct 2>"$d/refused.log"
[ $? -eq 1 ] || fail "an exchange of another type did not end the sink with 1"
grep -q "PRECONDITION_FAILED" "$d/refused.log" || fail "declare refused: $(cat "$d/refused.log")"
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
