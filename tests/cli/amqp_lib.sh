# amqp_lib.sh -- what the RabbitMQ sink's shell tests share (sourced by
# tests/cli/cli_feed_amqp*.sh): cleanup of everything they start, failure with
# the logs, polling, the sale and its daemon (sale_start), the sink's status
# figures, and the delivery check.
#
# Sourced as `. amqp_lib.sh TAG FLASHSTOCK CONSUMER BUYER FIXTURE` (the
# test's own arguments after its tag): it sets fs consumer buyer fixture, a
# temporary directory d and a segment name from TAG, and the RabbitMQ
# fixture's environment.  The sourcing script keeps the pids it starts in
# serve_pid sink_pid cons_pid buyer_pids (empty when not running).

set -u
fs=$2
consumer=$3
buyer=$4
fixture=$5
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-$1-XXXXXX")
name=/flash-$1-$$
serve_pid= sink_pid= cons_pid= buyer_pids=()
export FLASH_AMQP_PROBE="$consumer probe"
export FLASH_RABBITMQ_DIR="$d/rabbit"

frozen=
cleanup() {
	[ -z "$frozen" ] || "$fixture" thaw "$FLASH_RABBITMQ_DIR" >/dev/null 2>&1
	for p in "${buyer_pids[@]}" $sink_pid $cons_pid $serve_pid; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	"$fixture" stop "$FLASH_RABBITMQ_DIR" >/dev/null 2>&1
	"$fs" destroy --name "$name" --force >/dev/null 2>&1 || "$fs" destroy --name "$name" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 1' TERM INT HUP
# the broker goes with this script even if it is killed outright
export FLASH_RABBITMQ_OWNER=$$
fail() {
	echo "FAIL: $*"
	for f in "$d"/serve*.log "$d"/sink*.log "$d"/consumer.log; do
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

# check_delivery ACKED_FILE...: from what the buyers wrote down and what
# the consumer received ($d/received), fail unless every acknowledged order
# and cancel arrived at least once, nothing arrived that was not
# acknowledged (or told "unknown"), and each message's (type, order, LSN)
# is a record of the WAL.  Waits up to 60 s for the consumer to have it all,
# then stops the consumer.  Sets nwant and delivery (a summary line with the
# duplicates counted).
check_delivery() {
	cat "$@" >"$d/acked_all"
	grep -E '^(order|cancel) ' "$d/acked_all" | sort -u >"$d/want"
	grep -E '^unknown(-cancel)? ' "$d/acked_all" | sed 's/^unknown-cancel/cancel/; s/^unknown/order/' \
		| sort -u >"$d/maybe"
	nwant=$(wc -l <"$d/want")
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
	local missing extra total uniq_n bad_lsn
	missing=$(comm -23 "$d/want" "$d/got" | wc -l)
	extra=$(sort -u "$d/want" "$d/maybe" | comm -13 - "$d/got")
	total=$(wc -l <"$d/received")
	uniq_n=$(wc -l <"$d/got")
	bad_lsn=$(awk '{print $1, $2, $3}' "$d/received" | sort -u | comm -23 - "$d/wal_msgs" | head -3)
	delivery="acknowledged=$nwant received=$total unique=$uniq_n duplicates=$((total - uniq_n)) missing=$missing"
	[ "$missing" -eq 0 ] || fail "$missing acknowledged operations never arrived: $(comm -23 "$d/want" "$d/got" | head -3)"
	[ -z "$extra" ] || fail "arrived without being acknowledged: $(echo "$extra" | head -3)"
	[ -z "$bad_lsn" ] || fail "messages whose (type, order, lsn) the WAL does not hold: $bad_lsn"
}

# sale_start USERS UNITS: a sync segment (USERS users and orders), activity 1
# sku 10 with UNITS units, and `serve` on $d/wal (its pid in serve_pid),
# running when this returns
sale_start() {
	"$fs" create --name "$name" --durability sync --procs 16 --users "$1" --orders "$1" \
		--tokens 64 --requests 64 --skus 16 --shards 64 --activities 4 >/dev/null || fail "create"
	"$fs" load --name "$name" --activity 1 --sku 10 --units "$2" >/dev/null || fail "load"
	"$fs" serve --name "$name" --wal "$d/wal" --keep-wal --idle-us 200 2>"$d/serve.log" &
	serve_pid=$!
	wait_for 20 "serve did not start" grep -q "serving segment" "$d/serve.log"
}
