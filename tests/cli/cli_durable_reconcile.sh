#!/bin/bash
# cli_durable_reconcile.sh FLASHSTOCK -- `flashstock reconcile` on a real
# sale: after `demo --keep` (segment, WAL and a private MariaDB left
# running) the three witnesses agree and reconcile exits 0; after a
# deliberate change of one sku's stock directly in MariaDB it exits 1 and
# names that sku (text and JSON); bad command lines exit 2 and change
# nothing; --repair prints one REPAIR line per change and exits 0, after
# which reconcile exits 0; a MySQL row the WAL never had is NOT REPAIRED and
# stays.  Everything the demo kept is removed at the end, whatever happens.
set -u
F=${1:?usage: cli_durable_reconcile.sh path/to/flashstock}
T=$(mktemp -d)
dir= seg= fixture=
cleanup() {
	if [ -n "$dir" ]; then
		[ -z "$fixture" ] || sh "$fixture" stop "$dir/mariadb" 2>/dev/null
		rm -rf "$dir"
	fi
	[ -z "$seg" ] || "$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# an unpaid round of 100 units: reservations paid, expired and sold again
# in the witnesses too, and 700 units in all (the threshold below)
"$F" demo --json --keep --buyers 3000 --units 600 --skus 3 --procs 2 --unpaid-units 100 > "$T/out" 2> "$T/err"; rc=$?
last=$(tail -n 1 "$T/out")
str() { printf '%s' "$last" | grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | cut -d'"' -f4; }
dir=$(str kept_dir); seg=$(str segment); wal=$(str kept_wal); defaults=$(str kept_mysql_defaults)
fixture=$(sed -n 's/^demo: remove:  sh \([^ ]*\) stop .*/\1/p' "$T/err")
if [ $rc != 0 ]; then
	cat "$T/out" "$T/err" >&2
	fail "demo --keep exited $rc"
fi
[ -n "$dir" ] && [ -n "$seg" ] && [ -n "$wal" ] && [ -n "$defaults" ] && [ -n "$fixture" ] ||
	fail "demo --keep did not say what it kept: $last"
[ -d "$wal" ] || fail "WAL $wal not kept"
[ -e "/dev/shm/${seg#/}" ] || fail "segment $seg not kept"

R() { "$F" reconcile --name "$seg" --wal "$wal" --mysql-defaults "$defaults" "$@"; }

# clean: exit 0, every witness, every order checked
R > "$T/r0" 2> "$T/r0e"; rc=$?
[ $rc = 0 ] || { cat "$T/r0" "$T/r0e" >&2; fail "reconcile on a clean run exited $rc"; }
# three skus of the sale and the unpaid round's one
grep -q '^reconcile: 0 difference(s) over 4 sku(s)' "$T/r0" || fail "clean report: $(cat "$T/r0")"
grep -q 'witnesses segment,wal,mysql' "$T/r0" || fail "not every witness compared: $(cat "$T/r0")"
acked=$(printf '%s' "$last" | grep -o '"orders_acked":[0-9]*' | cut -d: -f2)
checked=$(sed -n 's/.* \([0-9]*\) order(s) checked.*/\1/p' "$T/r0")
[ -n "$checked" ] && [ "$checked" -ge "$acked" ] || fail "orders checked $checked < acked $acked"
R --json > "$T/r0j" 2>&1; rc=$?
[ $rc = 0 ] || fail "reconcile --json on a clean run exited $rc"
grep -q '"differences":0' "$T/r0j" || fail "clean JSON: $(cat "$T/r0j")"
# segment and WAL alone agree too
"$F" reconcile --name "$seg" --wal "$wal" > "$T/r1" 2>&1 || fail "segment vs WAL: $(cat "$T/r1")"

# a deliberate difference: one unit of sku 2 handed back in MariaDB only
# (available + sold still equals total, so the table's CHECK lets it pass)
mariadb --defaults-file="$defaults" -e \
	"UPDATE item_stock SET available = available + 1, sold = sold - 1 WHERE activity_id = 1 AND sku_id = 2" ||
	fail "could not change item_stock"
R > "$T/r2" 2> "$T/r2e"; rc=$?
[ $rc = 1 ] || { cat "$T/r2" "$T/r2e" >&2; fail "reconcile after the change exited $rc, want 1"; }
grep -q '^DIFF available activity=1 sku=2 ' "$T/r2" || fail "no available DIFF for sku 2: $(cat "$T/r2")"
grep -q '^DIFF sold activity=1 sku=2 ' "$T/r2" || fail "no sold DIFF for sku 2: $(cat "$T/r2")"
if grep '^DIFF' "$T/r2" | grep -v ' sku=2 ' | grep -q .; then
	fail "differences reported for other skus: $(cat "$T/r2")"
fi
R --json > "$T/r2j" 2>/dev/null; rc=$?
[ $rc = 1 ] || fail "reconcile --json after the change exited $rc, want 1"
grep -q '"kind":"available","witnesses":"[a-z,]*","activity":1,"sku":2' "$T/r2j" ||
	fail "JSON does not name sku 2: $(cat "$T/r2j")"
# the threshold: 1 unit of 700 is 0.14%: an ALERT at the default 0.1%, none at 1%
grep -q 'ALERT' "$T/r2e" || fail "no ALERT at the default threshold: $(cat "$T/r2e")"
R --threshold 1 > /dev/null 2> "$T/r3e"; rc=$?
[ $rc = 1 ] || fail "reconcile --threshold 1 exited $rc, want 1"
if grep -q 'ALERT' "$T/r3e"; then fail "ALERT below the threshold"; fi

# usage errors exit 2 and change nothing
"$F" reconcile > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "reconcile without a witness exited $rc, want 2"
R --threshold x > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "--threshold x exited $rc, want 2"
"$F" reconcile --wal "$wal" --mysql x --mysql-defaults "$defaults" > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "--mysql with --mysql-defaults exited $rc, want 2"
"$F" reconcile --repair --name "$seg" --mysql-defaults "$defaults" > /dev/null 2> "$T/u1"; rc=$?
[ $rc = 2 ] || fail "--repair without --wal exited $rc, want 2"
grep -q -- '--repair needs --wal' "$T/u1" || fail "--repair without --wal: $(cat "$T/u1")"
"$F" reconcile --repair --name "$seg" --wal "$wal" > /dev/null 2> "$T/u2"; rc=$?
[ $rc = 2 ] || fail "--repair without MySQL exited $rc, want 2"
grep -q -- '--repair needs --mysql' "$T/u2" || fail "--repair without MySQL: $(cat "$T/u2")"
R --repair --json > /dev/null 2> "$T/u3"; rc=$?
[ $rc = 2 ] || fail "--repair --json exited $rc, want 2"
R --repair --threshold 0 > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "--repair --threshold 0 exited $rc, want 2"
"$F" reconcile --repair --help > "$T/u4" 2>&1; rc=$?
[ $rc = 0 ] || fail "reconcile --repair --help exited $rc, want 0"
grep -q -- '--repair' "$T/u4" || fail "--help does not describe --repair"
# the difference is still there: the refused commands did not touch it
R > /dev/null 2>&1; rc=$?
[ $rc = 1 ] || fail "the difference vanished (exit $rc)"

# --repair: the two changes of sku 2 printed, then agreement
avail=$(mariadb --defaults-file="$defaults" -N -e \
	"SELECT available FROM item_stock WHERE activity_id = 1 AND sku_id = 2")
R --repair > "$T/r5" 2> "$T/r5e"; rc=$?
[ $rc = 0 ] || { cat "$T/r5" "$T/r5e" >&2; fail "--repair exited $rc, want 0"; }
grep -q "^REPAIR item_stock 1/2 available $avail -> $((avail - 1))\$" "$T/r5" ||
	fail "no REPAIR line for available: $(cat "$T/r5")"
grep -q "^REPAIR item_stock 1/2 sold " "$T/r5" || fail "no REPAIR line for sold: $(cat "$T/r5")"
[ "$(grep -c '^REPAIR ' "$T/r5")" = 2 ] || fail "not exactly two REPAIR lines: $(cat "$T/r5")"
if grep -q 'NOT REPAIRED' "$T/r5"; then fail "NOT REPAIRED after a plain change: $(cat "$T/r5")"; fi
R > "$T/r6" 2>&1; rc=$?
[ $rc = 0 ] || fail "reconcile after --repair exited $rc: $(cat "$T/r6")"

# an order MariaDB has and the WAL never had: NOT REPAIRED, left in place
mariadb --defaults-file="$defaults" -e \
	"INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot, biz_day, scope_sku,
	 scope_day, created_ns, lsn) VALUES (987654321, 1, 2, 424242, 1, 1, 0, 0, 0, 0, 0)" ||
	fail "could not insert the foreign order"
R --repair > "$T/r7" 2>&1; rc=$?
[ $rc = 1 ] || fail "--repair with a foreign row exited $rc, want 1: $(cat "$T/r7")"
grep -q '^NOT REPAIRED missing activity=1 sku=2 \[wal\] order=987654321 .*(MySQL row absent from the WAL)' "$T/r7" ||
	fail "foreign row not reported NOT REPAIRED: $(cat "$T/r7")"
n=$(mariadb --defaults-file="$defaults" -N -e "SELECT COUNT(*) FROM orders WHERE order_no = 987654321")
[ "$n" = 1 ] || fail "the foreign row was touched (count $n)"
echo "cli_durable_reconcile: all checks passed"
