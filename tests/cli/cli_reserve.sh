#!/bin/bash
# cli_reserve.sh FLASHSTOCK -- reservations (issue 22) through the real
# binaries, on a private segment and WAL (no MariaDB):
#  - bad command lines of `order --place/--reserve`, `confirm` and `expire`
#    (and a quantity above the activity's max_qty, which the segment catches)
#    exit 2 and change nothing: `status --json` reads the same before and after;
#  - with `flashstock serve` running its expirer: reservations placed by
#    `order --reserve` read reserved with their pay-by time; `confirm` pays
#    one (exit 0, and 0 again for the retried payment); the short unpaid ones
#    are expired by the daemon alone (waited for, bounded, never timed); then
#    `order` reads expired / active / reserved, their units and the limit
#    slot are back (`status --json`: units_available, reservations,
#    units_reserved, confirms, expiries), a late `confirm` exits 1 naming the
#    expiry, a second reservation of a user still holding one is refused with
#    exit 1, and /metrics counts flashstock_reservations_expired_total and
#    the units the reservation still waiting holds (flashstock_sku_reserved);
#  - with no daemon: `expire ORDER_NO` refuses a reservation not due and a
#    paid order (exit 1, saying why); `expire --all` expires the due one and
#    says how many, once (a second run: 0); the user's slot came back with it;
#  - a request id: its retry answers the first outcome -- the same reservation
#    (exit 0, saying so), or the same refusal (exit 1) -- and places nothing.
set -u
F=${1:?usage: cli_reserve.sh path/to/flashstock}
T=$(mktemp -d)
seg=/fs-cli-reserve-$$
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
# jnum FILE KEY: the number of "KEY": in a one-line JSON object (keys used
# here are unique in it)
jnum() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"; }
want() {   # FILE KEY VALUE
	[ "$(jnum "$1" "$2")" = "$3" ] || fail "$2 is '$(jnum "$1" "$2")', want $3: $(cat "$1")"
}
# place USER MS: a reservation of one unit; prints its order number
place() {
	"$F" order --name "$seg" --reserve "$2" --activity 1 --sku 1 --user "$1" --json > "$T/p" 2> "$T/pe" ||
		fail "reserve for user $1: exit $?: $(cat "$T/pe")"
	grep -q '"state":"reserved"' "$T/p" || fail "a reservation placed does not read reserved: $(cat "$T/p")"
	grep -q '"pay_by_ns":[0-9]' "$T/p" || fail "a reservation placed has no pay_by_ns: $(cat "$T/p")"
	jnum "$T/p" order_no
}
state() { "$F" order --name "$seg" "$1" --json | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p'; }
usage() {  # WHAT ARGS...: exit 2
	local what=$1; shift
	"$F" "$@" > "$T/u" 2>&1; local rc=$?
	[ $rc = 2 ] || fail "$what: exit $rc, want 2: $(cat "$T/u")"
}

"$F" create --name "$seg" --activities 4 --skus 4 --shards 4 --users 64 --orders 256 \
	--tokens 16 --requests 64 --procs 8 --ring 1024 > /dev/null || fail "create"
"$F" load --name "$seg" --activity 1 --limit 1 --max-qty 2 --cancel-returns-quota \
	--sku 1 --units 10 > /dev/null || fail "load"

# ---- bad input: exit 2, nothing changed ---------------------------------------
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
usage "--place without --user"       order --name "$seg" --place --activity 1 --sku 1
usage "--reserve 0"                  order --name "$seg" --reserve 0 --activity 1 --sku 1 --user 1
usage "--reserve above a week"       order --name "$seg" --reserve 604800001 --activity 1 --sku 1 --user 1
usage "--qty 0"                      order --name "$seg" --place --activity 1 --sku 1 --user 1 --qty 0
usage "--place with an ORDER_NO"     order --name "$seg" --place --activity 1 --sku 1 --user 1 7
usage "--qty without --place"        order --name "$seg" --qty 2 7
usage "--place with --mysql"         order --name "$seg" --place --activity 1 --sku 1 --user 1 \
                                     --mysql "mysql://root@localhost/x?socket=/nonexistent"
usage "--qty above max_qty"          order --name "$seg" --place --activity 1 --sku 1 --user 1 --qty 3
has "$T/u" "max_qty"
usage "confirm without --name"       confirm 1
usage "confirm without ORDER_NO"     confirm --name "$seg"
usage "confirm of a non-number"      confirm --name "$seg" x1
usage "confirm of two numbers"       confirm --name "$seg" 1 2
usage "expire with neither"          expire --name "$seg"
usage "expire with both"             expire --name "$seg" 1 --all
usage "expire --max without --all"   expire --name "$seg" --max 3 1
usage "expire --max 0"               expire --name "$seg" --all --max 0
"$F" status --name "$seg" --json > "$T/s_after" || fail "status"
cmp -s "$T/s_before" "$T/s_after" || { diff "$T/s_before" "$T/s_after" >&2; fail "a bad command line changed the segment"; }
want "$T/s_after" orders 0

# ---- with the daemon's expirer ------------------------------------------------
"$F" serve --name "$seg" --wal "$T/wal" --no-snapshot --reconcile-every 0 --metrics 0 \
	--expire-every-ms 20 2> "$T/serve.log" &
spid=$!
for _ in $(seq 1 200); do
	grep -q "serving segment" "$T/serve.log" && break
	kill -0 "$spid" 2>/dev/null || fail "serve exited"
	sleep 0.05
done
has "$T/serve.log" "serving segment"

short1=$(place 1 300) || exit 1
short2=$(place 2 300) || exit 1
paid=$(place 3 600000) || exit 1
held=$(place 4 600000) || exit 1
"$F" order --name "$seg" --place --activity 1 --sku 1 --user 5 > "$T/o" || fail "a plain order: exit $?"
has "$T/o" ": active, activity 1, sku 1, user 5"
plain=$(sed -n 's/^order \([0-9]*\): .*/\1/p' "$T/o")
"$F" order --name "$seg" "$held" > "$T/o" || fail "order $held"
has "$T/o" "order $held: reserved, pay by "

"$F" confirm --name "$seg" "$paid" > "$T/c" 2>&1 || fail "confirm $paid: exit $?: $(cat "$T/c")"
has "$T/c" "order $paid: confirmed: active"
"$F" confirm --name "$seg" "$paid" > "$T/c" 2>&1 || fail "confirm $paid again: exit $?: $(cat "$T/c")"
has "$T/c" "active already"

# the daemon expires the short ones by itself
for _ in $(seq 1 300); do
	[ "$(state "$short1")" = expired ] && [ "$(state "$short2")" = expired ] && break
	sleep 0.05
done
[ "$(state "$short1")" = expired ] || fail "the daemon did not expire $short1: $(state "$short1")"
[ "$(state "$short2")" = expired ] || fail "the daemon did not expire $short2: $(state "$short2")"
"$F" order --name "$seg" "$short1" > "$T/o" || fail "order $short1"
has "$T/o" "order $short1: expired unpaid, pay by "
"$F" order --name "$seg" "$short1" --json > "$T/o" || fail "order $short1 --json"
grep -q '"pay_by_ns":[0-9]' "$T/o" || fail "an expired reservation has no pay_by_ns: $(cat "$T/o")"
[ "$(state "$paid")" = active ] || fail "confirmed $paid reads $(state "$paid")"
[ "$(state "$held")" = reserved ] || fail "unpaid long $held reads $(state "$held")"
[ "$(state "$plain")" = active ] || fail "plain $plain reads $(state "$plain")"
"$F" order --name "$seg" "$plain" --json > "$T/o" || fail "order $plain --json"
has "$T/o" '"pay_by_ns":null'

"$F" status --name "$seg" --json > "$T/s" || fail "status"
want "$T/s" units_available 7      # 10 - paid - held - plain: the expired ones came back
want "$T/s" reservations 1
want "$T/s" units_reserved 1
want "$T/s" confirms 1
want "$T/s" expiries 2

"$F" confirm --name "$seg" "$short1" > "$T/c" 2>&1; rc=$?
[ $rc = 1 ] || fail "a late confirm: exit $rc, want 1"
has "$T/c" "flashstock: confirm: order $short1: reservation expired unpaid"
[ "$(state "$short1")" = expired ] || fail "a late confirm changed $short1"
"$F" order --name "$seg" --reserve 600000 --activity 1 --sku 1 --user 4 > "$T/o" 2> "$T/e"; rc=$?
[ $rc = 1 ] || fail "a second reservation of user 4 (limit 1): exit $rc, want 1"
has "$T/e" "flashstock: order: per-user limit reached"

port=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$T/serve.log" | tail -n 1)
[ -n "$port" ] || fail "no metrics port"
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot reach the metrics port"
printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
cat <&3 > "$T/metrics"
exec 3<&-
has "$T/metrics" "flashstock_reservations_expired_total 2"
has "$T/metrics" "flashstock_expiry_lag_seconds_count 2"
# the one unpaid reservation still waiting holds 1 unit (read from the order table)
has "$T/metrics" 'flashstock_sku_reserved{activity="1",sku="1"} 1'
kill -TERM "$spid"
wait "$spid"; rc=$?
spid=
[ $rc = 0 ] || fail "serve stop: exit $rc"

# ---- no daemon: flashstock expire ---------------------------------------------
# user 1's slot came back with the expiry (cancel-returns-quota)
late=$(place 1 200) || exit 1
"$F" expire --name "$seg" "$held" > "$T/x" 2>&1; rc=$?
[ $rc = 1 ] || fail "expire of a reservation not due: exit $rc, want 1"
has "$T/x" "flashstock: expire: order $held: reservation not due"
"$F" expire --name "$seg" "$paid" > "$T/x" 2>&1; rc=$?
[ $rc = 1 ] || fail "expire of a paid order: exit $rc, want 1"
has "$T/x" "order is ACTIVE"
for _ in $(seq 1 200); do
	"$F" order --name "$seg" "$late" | grep -q "(past: not expired yet)" && break
	sleep 0.05
done
[ "$(state "$late")" = reserved ] || fail "with no daemon, $late reads $(state "$late") before expire"
"$F" expire --name "$seg" --all > "$T/x" || fail "expire --all: exit $?"
has "$T/x" "expired 1 reservation"
[ "$(state "$late")" = expired ] || fail "expire --all left $late $(state "$late")"
[ "$(state "$held")" = reserved ] || fail "expire --all touched $held, not due"
"$F" expire --name "$seg" --all > "$T/x" || fail "expire --all again: exit $?"
has "$T/x" "expired 0 reservations"
"$F" expire --name "$seg" "$late" > "$T/x" 2>&1; rc=$?
[ $rc = 1 ] || fail "expire of an expired one: exit $rc, want 1"
has "$T/x" "reservation expired unpaid"
"$F" status --name "$seg" --json > "$T/s" || fail "status"
want "$T/s" units_available 7
want "$T/s" expiries 3
want "$T/s" reservations 1
"$F" status --name "$seg" > "$T/st" || fail "status (text)"
has "$T/st" "reserved: 1 reservations hold 1 of the units sold"
grep -q "^  expiries  *3$" "$T/st" || fail "status (text) does not count 3 expiries: $(cat "$T/st")"

# ---- a request id: a retry answers the first outcome, placing nothing -------
again() {  # USER ID: reserve with request id ID; stdout, stderr, exit code in $T/r*
	"$F" order --name "$seg" --reserve 600000 --activity 1 --sku 1 --user "$1" --request-id "$2" \
		> "$T/ro" 2> "$T/re"
	echo $? > "$T/rc"
}
again 6 9001
[ "$(cat "$T/rc")" = 0 ] || fail "a reservation with a request id: exit $(cat "$T/rc"): $(cat "$T/re")"
first=$(sed -n 's/^order \([0-9]*\): reserved.*/\1/p' "$T/ro")
[ -n "$first" ] || fail "no order placed: $(cat "$T/ro")"
again 6 9001
[ "$(cat "$T/rc")" = 0 ] || fail "the retry of request 9001: exit $(cat "$T/rc"): $(cat "$T/re")"
has "$T/ro" "order $first: reserved"
has "$T/re" "request id 9001 was placed before, as order $first"
again 4 9002
[ "$(cat "$T/rc")" = 1 ] || fail "user 4 over its limit: exit $(cat "$T/rc")"
has "$T/re" "per-user limit reached"
again 4 9002
[ "$(cat "$T/rc")" = 1 ] || fail "the retry of the refused request 9002: exit $(cat "$T/rc")"
has "$T/re" "the first outcome of request id 9002"
"$F" status --name "$seg" --json > "$T/s" || fail "status"
want "$T/s" reservations 2
want "$T/s" units_available 6
echo "PASS"
