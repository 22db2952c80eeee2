#!/usr/bin/env bash
# cli_feed_amqp_carts.sh FLASHSTOCK AMQP_CONSUMER AMQP_BUYER FIXTURE -- carts
# through the RabbitMQ sink and a private rabbitmq-server, by the real
# binaries: a sync segment served by `flashstock serve`; carts placed with
# `flashstock order --line`, some as reservations, paid by `flashstock
# confirm` or left for the daemon to expire; `flashstock feed --to amqp://`
# publishing with confirms; a consumer (manual acks) writing down what
# arrived.  Afterwards:
#   - every line of every cart's operation arrived, as a message of its
#     own under the operation's routing key (order, order.reserved,
#     order.confirmed, order.expired), its message-id the cart's number and
#     the line (NUMBER-LINE);
#   - nothing else arrived (duplicates, at least once, are counted);
#   - each message is at the LSN of its own line's record in the WAL.
. "$(dirname "$0")/amqp_lib.sh" amqp-carts "$@"

eval "$("$fixture" start "$FLASH_RABBITMQ_DIR")" || fail "rabbitmq fixture did not start"

sale_start 4096 1000
for s in 11 12; do
	"$fs" load --name "$name" --activity 1 --sku "$s" --units 1000 >/dev/null || fail "load sku $s"
done

"$consumer" consume "$FLASH_AMQP_PORT" flash.test q.test "$d/received" "$d/ready" \
	2>"$d/consumer.log" &
cons_pid=$!
wait_for 20 "consumer did not bind its queue" test -f "$d/ready"
"$fs" feed --to "$FLASH_AMQP_URL" --wal "$d/wal" --consumer amqp --from-start \
	--exchange flash.test --window 64 --status "$d/status" --progress-s 1 2>>"$d/sink1.log" &
sink_pid=$!

# cart USER ARGS...: a cart placed (acknowledged: the segment is sync); its number
cart() {
	local u=$1; shift
	"$fs" order --name "$name" --place --activity 1 --user "$u" "$@" >"$d/o" 2>"$d/e" ||
		fail "a cart of user $u: exit $?: $(cat "$d/o" "$d/e")"
	local n
	n=$(sed -n 's/^order \([0-9]*\): .*cart of.*/\1/p' "$d/o")
	[ -n "$n" ] || fail "no cart number in: $(cat "$d/o")"
	echo "$n"
}
# want TYPE NUMBER LINES: the messages of one operation on a cart
want() {
	for ((i = 0; i < $3; i++)); do echo "$1 $2-$i"; done >>"$d/want"
}
: >"$d/want"
for u in $(seq 1 10); do                      # plain carts of three lines
	n=$(cart "$u" --line 10:1 --line 11:1 --line 12:1)
	want order "$n" 3
done
for u in $(seq 11 15); do                     # reservations, paid
	n=$(cart "$u" --reserve 600000 --line 10:1 --line 12:1)
	want order.reserved "$n" 2
	"$fs" confirm --name "$name" "$n" >"$d/c" 2>&1 || fail "confirm $n: $(cat "$d/c")"
	want order.confirmed "$n" 2
done
expired=()
for u in $(seq 16 20); do                     # reservations, left unpaid
	n=$(cart "$u" --reserve 300 --line 11:1 --line 12:1)
	want order.reserved "$n" 2
	want order.expired "$n" 2
	expired+=("$n")
done
# the daemon expires them at their deadline (serve's expirer)
for n in "${expired[@]}"; do
	wait_for 30 "cart $n did not expire" sh -c "'$fs' order --name '$name' $n | grep -q 'expired unpaid'"
done
sort -u "$d/want" -o "$d/want"
nwant=$(wc -l <"$d/want")
[ "$nwant" -eq 70 ] || fail "$nwant messages expected, the script means 70"

end=$("$fs" status --name "$name" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p')
[ -n "$end" ] || fail "no wal_lsn in status --json"
wait_for 60 "the sink did not confirm up to LSN $end" status_ge confirmed_lsn "$end"
wait_for 60 "the consumer did not receive every line" \
	sh -c "awk '{print \$1, \$2}' '$d/received' | sort -u | comm -23 '$d/want' - | grep -q . && exit 1 || exit 0"
sleep 1   # duplicates still in the queue
kill -TERM "$cons_pid"
wait "$cons_pid"
cons_pid=

awk '{print $1, $2}' "$d/received" | sort -u >"$d/got"
extra=$(comm -13 "$d/want" "$d/got")
[ -z "$extra" ] || fail "arrived, not an operation of a cart: $(echo "$extra" | head -3)"
# each message at its own line's record: the WAL's (type, order-line, lsn)
"$fs" wal dump --wal "$d/wal" | awk '{
	o = ""; l = ""; v = 0
	for (i = 3; i <= NF; i++) {
		if ($i ~ /^order=/) o = substr($i, 7)
		if ($i ~ /^line=/) l = substr($i, 6)
		if ($i ~ /^pay_by_ns=/) v = 1
	}
	if (o == "" || l == "") next
	t = $2
	if (t == "order" && v) t = "order.reserved"
	else if (t == "confirm") t = "order.confirmed"
	else if (t == "expire") t = "order.expired"
	print t, o "-" l, $1 }' | sort >"$d/wal_lines"
bad=$(awk '{print $1, $2, $3}' "$d/received" | sort -u | comm -23 - "$d/wal_lines" | head -3)
[ -z "$bad" ] || fail "messages whose (type, cart-line, lsn) the WAL does not hold: $bad"
total=$(wc -l <"$d/received")
echo "carts=20 messages_wanted=$nwant received=$total duplicates=$((total - $(wc -l <"$d/got"))) end_lsn=$end"

kill -TERM "$sink_pid"
wait "$sink_pid" || fail "the sink did not exit 0 on SIGTERM"
sink_pid=
echo "PASS"
