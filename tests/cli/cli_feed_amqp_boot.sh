#!/usr/bin/env bash
# cli_feed_amqp_boot.sh FLASHSTOCK AMQP_CONSUMER AMQP_BUYER FIXTURE -- units
# started together at boot: `flashstock feed --to amqp://` started before
# `flashstock serve` has made its WAL directory waits for it, as it waits
# for a broker that is down, instead of exiting; then it delivers.
#
#   - a sink started on a WAL directory that does not exist keeps running,
#     says on stderr that it waits, its status says waiting_for_wal 1, and
#     it makes nothing in the directory's parent;
#   - a sink stopped by SIGTERM while it waits exits 0 and registers nothing;
#   - serve then makes the directory, a buyer places 300 orders (a cancel
#     every 7th): the waiting sink says the directory is there, and every
#     acknowledged order and cancel reaches the consumer (check_delivery of
#     amqp_lib.sh); its status: waiting_for_wal 0, confirmed up to the WAL's
#     end, connections_lost 0.
. "$(dirname "$0")/amqp_lib.sh" amqpboot "$@"

eval "$("$fixture" start "$FLASH_RABBITMQ_DIR")" || fail "rabbitmq fixture did not start"
"$consumer" consume "$FLASH_AMQP_PORT" flash.boot q.boot "$d/received" "$d/ready" \
	2>"$d/consumer.log" &
cons_pid=$!
wait_for 20 "consumer did not bind its queue" test -f "$d/ready"

# a sink waiting for a directory nobody makes stops cleanly on SIGTERM
mkdir "$d/other"
"$fs" feed --to "$FLASH_AMQP_URL" --wal "$d/other/wal" --consumer amqp --exchange flash.boot \
	--backoff-max-ms 200 2>"$d/sink-other.log" &
other=$!
wait_for 20 "the sink on a missing directory did not say it waits" \
	grep -q "WAL directory $d/other/wal does not exist yet; waiting" "$d/sink-other.log"
kill -0 "$other" 2>/dev/null || fail "the sink on a missing directory exited: $(cat "$d/sink-other.log")"
kill -TERM "$other"
wait "$other"
rc=$?
[ "$rc" -eq 0 ] || fail "the waiting sink exited $rc on SIGTERM, want 0: $(cat "$d/sink-other.log")"
[ -z "$(ls -A "$d/other")" ] || fail "the waiting sink made something: $(ls -A "$d/other")"

# the sink first, as at boot: its WAL directory does not exist yet
"$fs" feed --to "$FLASH_AMQP_URL" --wal "$d/wal" --consumer amqp --from-start \
	--exchange flash.boot --backoff-max-ms 200 --status "$d/status" --progress-s 1 \
	2>"$d/sink.log" &
sink_pid=$!
wait_for 20 "the sink did not say it waits for the WAL directory" \
	grep -q "WAL directory $d/wal does not exist yet; waiting" "$d/sink.log"
wait_for 20 "the sink's status does not say it waits" status_ge waiting_for_wal 1
kill -0 "$sink_pid" 2>/dev/null || fail "the sink exited before serve started: $(cat "$d/sink.log")"
[ ! -e "$d/wal" ] || fail "the sink made the WAL directory itself"

# then the daemon, which makes the directory, and a buyer
sale_start 4096 100000
"$buyer" "$name" 1 10 1 300 7 "$d/stop" "$d/acked" || fail "the buyer failed"

wait_for 20 "the sink did not say the directory is there" \
	grep -q "WAL directory $d/wal is there; reading as consumer amqp" "$d/sink.log"
end=$("$fs" status --name "$name" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p')
[ -n "$end" ] || fail "no wal_lsn in status --json"
wait_for 60 "the sink did not confirm up to LSN $end" status_ge confirmed_lsn "$end"
check_delivery "$d/acked"
[ "$nwant" -ge 300 ] || fail "the buyer was acknowledged $nwant operations, want 300 orders and their cancels"
[ "$(status_field "$d/status" waiting_for_wal)" = 0 ] || fail "status still says waiting_for_wal: $(cat "$d/status")"
[ "$(status_field "$d/status" connections_lost)" = 0 ] || fail "a connection was lost: $(cat "$d/status")"
grep -q '"lost"' "$d/status" && fail "the status still has a field \"lost\": $(cat "$d/status")"
kill -TERM "$sink_pid"
wait "$sink_pid" || fail "the sink did not exit 0 on SIGTERM"
sink_pid=
echo "$delivery end_lsn=$end"
echo "PASS"
