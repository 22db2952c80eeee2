#!/bin/bash
# cli_carts_mysql.sh FLASHSTOCK MARIADB_SH -- carts read back from MariaDB
# (`flashstock order --mysql`), through the real daemon and applier on a
# private MariaDB:
#  - a cart of three lines, a reserved cart the daemon expires, and a plain
#    order are applied (every line in order_lines, the expiry too); with the
#    segment gone, `order NO --mysql` shows the cart as the segment did: its
#    number, its one limit slot, a table of every line; the number of its
#    later line shows the cart (stderr says which line); --json has every
#    line in "lines"; the expired cart reads expired with both lines; the
#    plain order stays one line of text, one entry in "lines";
#  - by request id (line 0's sku), the cart with every line.
set -u
F=${1:?usage: cli_carts_mysql.sh path/to/flashstock path/to/mariadb.sh}
M=${2:?usage: cli_carts_mysql.sh path/to/flashstock path/to/mariadb.sh}
T=$(mktemp -d)
seg=/fs-cli-carts-mysql-$$
spid=
cleanup() {
	[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	"$F" destroy --name "$seg" --force >/dev/null 2>&1
	sh "$M" stop "$T/db" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/serve.log" ] && tail -n 15 "$T/serve.log" >&2
	exit 1
}
has() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "missing: $2"; }; }
table_is() {  # FILE "LINE SKU QTY" ...: the line table of a cart, exactly
	local f=$1; shift
	awk 'p && NF == 3 { print $1, $2, $3 } /^  line  *sku  *qty$/ { p = 1 }' "$f" > "$T/table"
	printf '%s\n' "$@" > "$T/table_want"
	cmp -s "$T/table" "$T/table_want" || fail "the line table of $(cat "$f") is not: $*"
}
num() { sed -n 's/^order \([0-9]*\): .*/\1/p' "$1"; }

eval "$(sh "$M" start "$T/db")" || fail "MariaDB did not start"
URL="mysql://root@localhost/carts?socket=$FLASH_MYSQL_SOCKET&create_db=1"
sql() { mysql --socket="$FLASH_MYSQL_SOCKET" -uroot -N -B carts -e "$1"; }

"$F" create --name "$seg" --orders 256 > /dev/null || fail "create"
printf 'activity_id,sku_id,units,max_qty,cancel_returns_quota\n1,10,5,3,1\n1,11,5,3,\n1,12,5,3,\n' |
	"$F" load --name "$seg" --csv - > /dev/null || fail "load"
"$F" serve --name "$seg" --wal "$T/wal" --mysql "$URL" --no-snapshot --reconcile-every 0 --metrics 0 \
	--expire-every-ms 20 2> "$T/serve.log" &
spid=$!
for _ in $(seq 1 200); do
	grep -q "serving segment" "$T/serve.log" && break
	kill -0 "$spid" 2>/dev/null || fail "serve exited"
	sleep 0.05
done
has "$T/serve.log" "serving segment"

"$F" order --name "$seg" --place --activity 1 --user 7 --line 10:1 --line 11:2 --line 12:3 \
	--request-id 77 > "$T/o" || fail "a cart: exit $?"
no=$(num "$T/o")
"$F" order --name "$seg" --reserve 200 --activity 1 --user 8 --line 10:2 --line 12:1 > "$T/o" ||
	fail "a reserved cart: exit $?"
no2=$(num "$T/o")
"$F" order --name "$seg" --place --activity 1 --user 9 --sku 11 > "$T/o" || fail "a plain order: exit $?"
no3=$(num "$T/o")
[ -n "$no" ] && [ -n "$no2" ] && [ -n "$no3" ] || fail "order numbers: '$no' '$no2' '$no3'"
# the applier has it all: five lines, the reserved cart expired by the daemon
for _ in $(seq 1 400); do
	[ "$(sql "SELECT COUNT(*) FROM order_lines" 2>/dev/null)" = 5 ] &&
		[ "$(sql "SELECT status FROM orders WHERE order_no = $no2" 2>/dev/null)" = EXPIRED ] &&
		[ "$(sql "SELECT COUNT(*) FROM order_lines WHERE order_no = $no2 AND status = 'EXPIRED'" 2>/dev/null)" = 2 ] &&
		[ -n "$(sql "SELECT order_no FROM orders WHERE order_no = $no3" 2>/dev/null)" ] && break
	sleep 0.05
done
[ "$(sql "SELECT COUNT(*) FROM order_lines")" = 5 ] || fail "order_lines: $(sql "SELECT * FROM order_lines")"
kill -TERM "$spid"
wait "$spid" || fail "serve exit $? at SIGTERM"
spid=
"$F" destroy --name "$seg" --force > /dev/null 2>&1

# ---- the segment gone: every order from MariaDB -----------------------------
"$F" order --name "$seg" "$no" --mysql "$URL" > "$T/o" 2> "$T/e" || fail "order $no --mysql: $(cat "$T/e")"
has "$T/o" "order $no: active, activity 1, cart of 3 lines, user 7, 6 units, limit slot 1, "
has "$T/o" ", request id 77, "
has "$T/o" "(source mysql; activity not archived)"
table_is "$T/o" "0 10 1" "1 11 2" "2 12 3"
"$F" order --name "$seg" "$((no + 2))" --mysql "$URL" > "$T/o" 2> "$T/e" || fail "order $((no + 2)) --mysql"
has "$T/e" "$((no + 2)) is line 2 of cart $no: showing the cart"
has "$T/o" "order $no: active, activity 1, cart of 3 lines"
table_is "$T/o" "0 10 1" "1 11 2" "2 12 3"
"$F" order --name "$seg" "$no" --mysql "$URL" --json > "$T/o" 2> /dev/null || fail "order $no --mysql --json"
has "$T/o" '"source":"mysql"'
has "$T/o" '"lines":[{"line":0,"sku_id":10,"qty":1},{"line":1,"sku_id":11,"qty":2},{"line":2,"sku_id":12,"qty":3}]}'
"$F" order --name "$seg" "$no2" --mysql "$URL" > "$T/o" 2> /dev/null || fail "order $no2 --mysql"
has "$T/o" "order $no2: expired, activity 1, cart of 2 lines, user 8, 3 units, limit slot 1, "
has "$T/o" ", expired at lsn "
table_is "$T/o" "0 10 2" "1 12 1"
"$F" order --name "$seg" "$no3" --mysql "$URL" > "$T/o" 2> /dev/null || fail "order $no3 --mysql"
has "$T/o" "order $no3: active, activity 1, sku 11, user 9, qty 1, limit slot 1, "
grep -q "^  line" "$T/o" && fail "a plain order shows a line table: $(cat "$T/o")"
"$F" order --name "$seg" "$no3" --mysql "$URL" --json > "$T/o" 2> /dev/null || fail "order $no3 --mysql --json"
has "$T/o" '"lines":[{"line":0,"sku_id":11,"qty":1}]}'
"$F" order --name "$seg" --request-id 77 --activity 1 --user 7 --sku 10 --mysql "$URL" > "$T/o" 2> /dev/null ||
	fail "order --request-id 77"
has "$T/o" "order $no: active, activity 1, cart of 3 lines"
table_is "$T/o" "0 10 1" "1 11 2" "2 12 3"
echo "PASS"
