#!/bin/bash
# cli_demo.sh FLASHSTOCK [BUYERS [DEMO-OPTIONS...]] -- `flashstock demo --json`
# keeps its promises.
#
# Runs the demo, requires exit 0, and checks the JSON object on the last line
# of stdout: every invariant figure is exactly 0; the stock adds up
# (sold + available = units_total = 10000, sold = acked - cancelled since
# every order is one unit); every retry, repeat and second cancel got the
# answer the API promises; the scenario exercised each of them at least once;
# every acknowledged order is in the WAL once and (unless --no-mysql) in
# MySQL once, MySQL refused nothing, and the reconciler found no difference;
# and the private segment, directory and MariaDB are gone afterwards.
set -u
F=${1:?usage: cli_demo.sh path/to/flashstock [buyers [demo options...]]}
B=${2:-20000}
shift; shift
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mode=async; mysql=1
for a in "$@"; do
	case $a in
	sync) mode=sync ;;
	--no-mysql) mysql=0 ;;
	esac
done
"$F" demo --json --buyers "$B" "$@" > "$T/out" 2> "$T/err"; rc=$?
if [ $rc != 0 ]; then
	cat "$T/out" "$T/err" >&2
	fail "demo exited $rc"
fi
last=$(tail -n 1 "$T/out")
case $last in
	'{'*'}') ;;
	*) fail "last line is not a JSON object: $last" ;;
esac
val() { # the value of key $1 in the last line (numbers and booleans)
	local v
	v=$(printf '%s' "$last" | grep -o "\"$1\":[^,}]*" | head -n 1 | cut -d: -f2)
	[ -n "$v" ] || fail "key $1 missing from: $last"
	printf '%s' "$v"
}
eq() { [ "$(val "$1")" = "$2" ] || fail "$1 = $(val "$1"), want $2"; }
ge() { [ "$(val "$1")" -ge "$2" ] || fail "$1 = $(val "$1"), want >= $2"; }

eq ok true
for k in oversold users_over_limit leaked_units ring_mismatches client_mismatches \
         unexpected process_failures; do
	eq "$k" 0
done
eq buyers "$B"
eq units_total 10000
units=$(val units_total); sold=$(val sold); avail=$(val available)
[ $((sold + avail)) = "$units" ] || fail "sold $sold + available $avail != units_total $units"
acked=$(val orders_acked); cancelled=$(val orders_cancelled)
[ $((acked - cancelled)) = "$sold" ] || fail "acked $acked - cancelled $cancelled != sold $sold"
eq retries_ok "$(val retries)"
eq repeats_ok "$(val repeats)"
eq cancels_twice_ok "$cancelled"
ge retries 1
ge repeats 1
ge orders_cancelled 1
ge order_calls "$B"
ge records_drained "$acked"
# durable exactly once
[ "$(printf '%s' "$last" | grep -o '"durability":"[a-z]*"')" = "\"durability\":\"$mode\"" ] ||
	fail "durability is not $mode: $last"
# the unpaid round: every unit reserved, the unpaid share expired by the
# daemon and sold again; its reservations and later orders are durable too
eq unpaid_reserved 1000
eq unpaid_never_paid 300
eq unpaid_paid 700
eq unpaid_expired 300
eq unpaid_sold_again 300
all=$((acked + $(val unpaid_reserved) + $(val unpaid_sold_again)))
eq orders_in_wal "$all"
eq reconcile_diffs 0
ge wal_commits 1
if [ $mysql = 1 ]; then
	eq orders_in_mysql "$all"
	eq mysql_conflicts 0
	grep -q 'witnesses segment,wal,mysql' "$T/out" || fail "the reconciler did not compare MySQL"
else
	eq orders_in_mysql null
	eq mysql_conflicts null
	grep -q 'witnesses segment,wal;' "$T/out" || fail "the reconciler did not compare segment and WAL"
fi
# the private directory (WAL, MariaDB) is gone, and no server runs in it
dir=$(sed -n 's/^demo: starting the daemon: WAL in \(.*\)\/wal,.*/\1/p' "$T/err")
[ -n "$dir" ] || fail "no daemon start line on stderr"
[ ! -e "$dir" ] || fail "private directory $dir left behind"
if pgrep -f -- "--defaults-file=$dir/" >/dev/null; then
	fail "a MariaDB of $dir still runs"
fi
for k in orders_per_sec p50_ns p99_ns; do
	v=$(val "$k")
	case $v in ''|*[!0-9.]*) fail "$k is not a number: $v" ;; esac
done
seg=$(printf '%s' "$last" | grep -o '"segment":"[^"]*"' | cut -d'"' -f4)
[ -n "$seg" ] || fail "no segment name"
[ ! -e "/dev/shm/${seg#/}" ] || fail "segment $seg left behind"
# the demo refuses an existing name and removes nothing it did not make
"$F" create --name "$seg" >/dev/null || fail "create $seg"
"$F" demo --buyers 100 --name "$seg" >/dev/null 2>&1; rc=$?
[ $rc = 1 ] || fail "demo on an existing segment: exit $rc, want 1"
"$F" destroy --name "$seg" || fail "the demo removed a segment it did not create"
echo "cli_demo: all checks passed ($last)"
