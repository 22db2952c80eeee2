#!/bin/bash
# cli_carts.sh FLASHSTOCK -- carts (flash_cart_order: several skus of one
# activity in one order, all or nothing) through the real binary, on a
# private segment (no daemon, no MariaDB):
#  - bad command lines of `order --line` -- a sku twice, 17 lines, qty 0, a
#    bad SKU:QTY[:VERSION], version 0, --line with --sku, --qty or
#    --sku-version, with an ORDER_NO -- exit 2 naming what is wrong, and a
#    qty above max_qty and an activity of scope sku (which the segment
#    catches) exit 2 naming the line or the scope; an unknown sku exits 1
#    naming its line; nothing changed: `status --json` reads the same;
#  - a cart of three lines is placed: exit 0, the cart's number, its one
#    limit slot and a table of every line; each line's stock went down by
#    its qty; showing its number, and the number of a later line, print the
#    whole cart (--json: every line in "lines"); the user's one limit slot
#    is the cart's (a second cart of the user is refused, taking nothing);
#  - all or nothing: a cart with one line short is refused (exit 1) naming
#    that line and only it as short, with the units left; a cart with two
#    lines short lists both; every line's stock is unchanged and the user's
#    limit slot is still free (the cart that fits is placed next);
#  - a cart as a reservation: it reads reserved, `status` counts it once
#    with the units of every line; expired, every line's units come back
#    and the limit slot too; another, paid by `confirm`, reads active with
#    every line still taken; `expire --all` counts a due cart once;
#  - a request id: the retry of a cart answers the first cart, placing
#    nothing; a line naming its sku's old version is FLASH_ESTALE, naming
#    the line, taking nothing; a cart of one line reads as a plain order;
#  - the README's "Carts" block runs as its comments say (as cli_terms.sh
#    runs the "Terms and versions" one: one shell session, each command
#    exits 0 but the one a "# exit N:" line follows, each quoted text is
#    printed).
set -u
F=${1:?usage: cli_carts.sh path/to/flashstock}
T=$(mktemp -d)
seg=/fs-cli-carts-$$
seg2=/fs-cli-carts-readme-$$
README=$(cd "$(dirname "$0")/../.." && pwd)/README.md
cleanup() {
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	"$F" destroy --name "$seg2" --force >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
has() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "missing: $2"; }; }
hasnt() { grep -qF -- "$2" "$1" && { echo "--- $1:" >&2; cat "$1" >&2; fail "unexpected: $2"; }; return 0; }
# status --json is one line; the keys read here are unique in it (no python:
# its start is most of a test's time on a busy box)
# status_is KEY VALUE...: status --json into $T/s, each top-level KEY as given
status_is() {
	"$F" status --name "$seg" --json > "$T/s" || fail "status"
	while [ $# -ge 2 ]; do
		grep -q "\"$1\":$2[,}]" "$T/s" || fail "status: $1 is not $2: $(cat "$T/s")"
		shift 2
	done
}
# stock_is WANT WHAT [ACTIVITY]: activity 1's (or ACTIVITY's) skus read
# WANT, "SKU:AVAILABLE ..." ("10:5 11:3 12:2")
stock_is() {
	"$F" status --name "$seg" --json > "$T/s" || fail "status"
	local got
	got=$(grep -o "{\"activity_id\":${3:-1},\"sku_id\":[0-9]*,\"shards\":[0-9]*,\"total\":[0-9]*,\"available\":[0-9]*" \
		"$T/s" | sed 's/.*"sku_id":\([0-9]*\),.*"available":\([0-9]*\)$/\1:\2/' | paste -sd ' ')
	[ "$got" = "$1" ] || fail "$2: stock of activity ${3:-1} is '$got', want '$1': $(cat "$T/s")"
}
# cart USER ARGS...: `order --place --activity 1 --user USER ARGS...`;
# stdout $T/o, stderr $T/e, exit code $T/rc
cart() {
	local u=$1; shift
	"$F" order --name "$seg" --place --activity 1 --user "$u" "$@" > "$T/o" 2> "$T/e"
	echo $? > "$T/rc"
}
rc_is() { [ "$(cat "$T/rc")" = "$1" ] || fail "$2: exit $(cat "$T/rc"), want $1: $(cat "$T/o" "$T/e")"; }
usage() {  # WHAT ARGS...: exit 2
	local what=$1; shift
	"$F" "$@" > "$T/u" 2>&1; local rc=$?
	[ $rc = 2 ] || fail "$what: exit $rc, want 2: $(cat "$T/u")"
}
# unchanged WHAT: status --json reads as $T/s_before but for its counters
# (a refusal counts: sold_out, limit_hits); the per-user table too: a cart
# looks at every line's stock before the user's limit key goes in
nocount() {
	sed -e 's/"counters":{[^}]*}//' "$1" | tr , '\n'
}
unchanged() {
	"$F" status --name "$seg" --json > "$T/s_after" || fail "status"
	nocount "$T/s_before" > "$T/s_b"
	nocount "$T/s_after" > "$T/s_a"
	grep -q '"skus"' "$T/s_a" || fail "status --json: $(cat "$T/s_after")"
	cmp -s "$T/s_b" "$T/s_a" || { diff "$T/s_b" "$T/s_a" >&2; fail "$1 changed the segment"; }
}
# table_is FILE "LINE SKU QTY" ...: the line table of a cart, exactly
table_is() {
	local f=$1; shift
	awk 'p && NF == 3 { print $1, $2, $3 } /^  line  *sku  *qty$/ { p = 1 }' "$f" > "$T/table"
	printf '%s\n' "$@" > "$T/table_want"
	cmp -s "$T/table" "$T/table_want" || fail "the line table of $(cat "$f") is not: $*"
}
cartno() { sed -n 's/^order \([0-9]*\): .*cart of.*/\1/p' "$1"; }

"$F" create --name "$seg" --activities 4 --skus 8 --shards 8 --users 64 --orders 256 \
	--tokens 16 --requests 64 --procs 8 --ring 1024 > /dev/null || fail "create"
"$F" load --name "$seg" --csv - > /dev/null 2> "$T/e" <<EOF || fail "load: $(cat "$T/e")"
activity_id,sku_id,units,limit,max_qty,scope,cancel_returns_quota
1,10,5,1,3,activity,1
1,11,3,,,,
1,12,2,,,,
2,20,5,1,3,sku,
2,21,5,,,,
3,30,5,1,3,activity,
3,31,5,,,,
EOF

# ---- bad command lines: exit 2 (an unknown sku: 1), nothing changed ---------
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
P=(order --name "$seg" --place --activity 1 --user 9)
usage "a sku twice"               "${P[@]}" --line 10:1 --line 11:1 --line 10:2
has "$T/u" "--line '10:2': sku 10 is line 0 already: a cart's lines are distinct skus"
many=()
for i in $(seq 1 17); do many+=(--line "$((100 + i)):1"); done
usage "17 lines"                  "${P[@]}" "${many[@]}"
has "$T/u" "--line '117:1': a cart holds at most 16 lines"
usage "qty 0"                     "${P[@]}" --line 10:0
has "$T/u" "--line '10:0': qty 0 is out of range [1, 65535]"
usage "qty above 65535"           "${P[@]}" --line 10:65536
usage "sku 0"                     "${P[@]}" --line 0:1
has "$T/u" "sku 0 is out of range"
usage "version 0"                 "${P[@]}" --line 10:1:0
has "$T/u" "version 0 is out of range"
for bad in 10 10: :1 10:x 10:1:2:3 10:1: -1:1 " 10:1" 10:+1 10::1 18446744073709551616:1 ""; do
	usage "--line '$bad'"         "${P[@]}" --line "$bad"
	has "$T/u" "--line '$bad': give SKU:QTY or SKU:QTY:VERSION"
done
usage "--sku with --line"         "${P[@]}" --sku 10 --line 11:1
has "$T/u" "--line does not mix with --sku, --qty or --sku-version"
usage "--line then --sku"         "${P[@]}" --line 11:1 --sku 10
has "$T/u" "--line does not mix with --sku, --qty or --sku-version"
usage "--qty with --line"         "${P[@]}" --line 11:1 --qty 2
has "$T/u" "--line does not mix"
usage "--sku-version with --line" "${P[@]}" --line 11:1 --sku-version 5
has "$T/u" "--line does not mix"
usage "--line with an ORDER_NO"   order --name "$seg" --line 10:1 --activity 1 --user 9 7
usage "--line without --user"     order --name "$seg" --line 10:1 --activity 1
usage "a qty above max_qty"       "${P[@]}" --line 10:1 --line 11:4
has "$T/u" "line 1 (sku 11): qty 4 is more than activity 1 takes at once (its max_qty 3, per line)"
has "$T/u" "nothing changed"
usage "a cart of an activity of scope sku" order --name "$seg" --place --activity 2 --user 9 \
	--line 20:1 --line 21:1
has "$T/u" "activity 2 limits each sku apart (scope sku)"
cart 9 --line 10:1 --line 99:1
rc_is 1 "a cart with an unknown sku"
has "$T/e" "line 1: sku 99 is not in activity 1 of segment $seg (FLASH_ENOT_FOUND); nothing taken"
cart 9 --activity 7 --line 10:1
rc_is 1 "a cart of an unknown activity"
has "$T/e" "activity 7 is not in segment $seg"
unchanged "the refused command lines"
stock_is "10:5 11:3 12:2" "the refused command lines"

# ---- a cart placed: one number, one limit slot, every line taken ------------
cart 1 --line 10:2 --line 11:1 --line 12:1
rc_is 0 "a cart of three lines"
has "$T/o" ": active, activity 1, cart of 3 lines, user 1, 4 units, limit slot 1, day "
table_is "$T/o" "0 10 2" "1 11 1" "2 12 1"
no1=$(cartno "$T/o")
[ -n "$no1" ] || fail "no cart number: $(cat "$T/o")"
stock_is "10:3 11:2 12:1" "a cart of 10:2 11:1 12:1"
"$F" order --name "$seg" "$no1" > "$T/o" 2> "$T/e" || fail "order $no1: exit $?: $(cat "$T/e")"
has "$T/o" "order $no1: active, activity 1, cart of 3 lines, user 1, 4 units, limit slot 1"
table_is "$T/o" "0 10 2" "1 11 1" "2 12 1"
"$F" order --name "$seg" "$((no1 + 2))" > "$T/o" 2> "$T/e" || fail "order $((no1 + 2)): exit $?: $(cat "$T/e")"
has "$T/e" "$((no1 + 2)) is line 2 of cart $no1: showing the cart"
has "$T/o" "order $no1: active, activity 1, cart of 3 lines"
table_is "$T/o" "0 10 2" "1 11 1" "2 12 1"
"$F" order --name "$seg" "$no1" --json > "$T/o" || fail "order $no1 --json"
has "$T/o" '"lines":[{"line":0,"sku_id":10,"qty":2},{"line":1,"sku_id":11,"qty":1},{"line":2,"sku_id":12,"qty":1}]'
has "$T/o" '"limit_slot":1,'
# the cart holds user 1's one limit slot
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
cart 1 --line 10:1
rc_is 1 "a second cart of user 1 (limit 1)"
has "$T/e" "per-user limit reached"
unchanged "a cart over the user's limit"

# ---- all or nothing ---------------------------------------------------------
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
cart 2 --line 10:1 --line 11:3
rc_is 1 "a cart with line 1 short"
has "$T/e" "flashstock: order: sold out: line 1 (sku 11, qty 3) ran out; short: line 1 (sku 11: wants 3, 2 left); nothing taken"
hasnt "$T/e" "line 0 (sku 10"
[ -s "$T/o" ] && fail "a refused cart printed an order: $(cat "$T/o")"
unchanged "a cart with one line short"
stock_is "10:3 11:2 12:1" "a cart with one line short"
cart 2 --line 12:2 --line 10:1 --line 11:3
rc_is 1 "a cart with two lines short"
has "$T/e" "flashstock: order: sold out: line "
has "$T/e" "short: line 0 (sku 12: wants 2, 1 left), line 2 (sku 11: wants 3, 2 left); nothing taken"
unchanged "a cart with two lines short"
# user 2's limit slot is still free: the cart that fits is placed
cart 2 --line 10:1 --line 11:2
rc_is 0 "user 2's cart that fits"
table_is "$T/o" "0 10 1" "1 11 2"
stock_is "10:2 11:0 12:1" "user 2's cart"

# ---- a cart as a reservation: expired, every line back; paid, every line kept
cart 3 --reserve 300 --line 10:1 --line 12:1
rc_is 0 "a cart reserved"
has "$T/o" ": reserved, pay by "
has "$T/o" ", activity 1, cart of 2 lines, user 3, 2 units, limit slot 1"
no3=$(cartno "$T/o")
stock_is "10:1 11:0 12:0" "a cart reserved"
status_is reservations 1 units_reserved 2
"$F" status --name "$seg" > "$T/st" || fail "status (text)"
has "$T/st" "reserved: 1 reservations hold 2 of the units sold"
cart 4 --reserve 600000 --line 12:1
rc_is 1 "a cart of the unit the reservation holds"
has "$T/e" "sold out: line 0 (sku 12, qty 1) ran out; short: line 0 (sku 12: wants 1, 0 left)"
for _ in $(seq 1 200); do
	"$F" order --name "$seg" "$no3" | grep -q "(past: not expired yet)" && break
	sleep 0.05
done
"$F" expire --name "$seg" "$no3" > "$T/x" 2>&1 || fail "expire $no3: exit $?: $(cat "$T/x")"
"$F" order --name "$seg" "$no3" > "$T/o" || fail "order $no3"
has "$T/o" "order $no3: expired unpaid, pay by "
table_is "$T/o" "0 10 1" "1 12 1"
stock_is "10:2 11:0 12:1" "the reserved cart expired"
status_is reservations 0 units_reserved 0
# user 3's slot came back with the expiry (cancel-returns-quota)
cart 3 --reserve 600000 --line 10:1 --line 12:1
rc_is 0 "user 3's cart after the expiry"
no4=$(cartno "$T/o")
"$F" confirm --name "$seg" "$no4" > "$T/c" 2>&1 || fail "confirm $no4: exit $?: $(cat "$T/c")"
has "$T/c" "order $no4: confirmed: active"
"$F" order --name "$seg" "$no4" > "$T/o" || fail "order $no4"
has "$T/o" "order $no4: active, activity 1, cart of 2 lines"
table_is "$T/o" "0 10 1" "1 12 1"
stock_is "10:1 11:0 12:0" "the cart paid"
status_is reservations 0

# ---- a request id, and a line's stale version --------------------------------
# (activity 3)
cart 5 --activity 3 --line 30:1 --line 31:2 --request-id 500
rc_is 0 "a cart with a request id"
no5=$(cartno "$T/o")
cart 5 --activity 3 --line 30:1 --line 31:2 --request-id 500
rc_is 0 "the retry of a cart's request id"
has "$T/o" "order $no5: active, activity 3, cart of 2 lines"
has "$T/e" "request id 500 was placed before, as order $no5: nothing new was placed"
stock_is "30:4 31:3" "the retried cart" 3
av=$("$F" terms --name "$seg" --activity 3 --print-version) || fail "terms --print-version"
v31=$("$F" terms --name "$seg" --activity 3 --sku 31 --print-version) || fail "terms --sku --print-version"
"$F" terms --name "$seg" --activity 3 --sku 31 --price 700 > /dev/null || fail "terms --price"
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
cart 6 --activity 3 --activity-version "$av" --line 30:1 --line 31:1:"$v31"
rc_is 1 "a line naming its sku's old version"
has "$T/e" "flashstock: order: FLASH_ESTALE: the terms changed"
has "$T/e" "the order named activity version $av (now $av), line 1's sku version $v31 (now "
unchanged "a line naming its sku's old version"
v31=$("$F" terms --name "$seg" --activity 3 --sku 31 --print-version) || fail "terms --sku --print-version"
cart 6 --activity 3 --activity-version "$av" --line 30:1 --line 31:1:"$v31"
rc_is 0 "a cart naming the current versions"
stock_is "30:3 31:2" "a cart naming the current versions" 3
# a cart of one line is a plain order, shown as one
cart 7 --activity 3 --line 30:2
rc_is 0 "a cart of one line"
has "$T/o" ": active, activity 3, sku 30, user 7, qty 2, limit slot 1"
stock_is "30:1 31:2" "a cart of one line" 3
# `expire --all` expires a due cart once, every line back
cart 8 --activity 3 --reserve 100 --line 30:1 --line 31:2
rc_is 0 "a short reservation of a cart"
no8=$(cartno "$T/o")
stock_is "30:0 31:0" "a short reservation of a cart" 3
for _ in $(seq 1 200); do
	"$F" order --name "$seg" "$no8" | grep -q "(past: not expired yet)" && break
	sleep 0.05
done
"$F" expire --name "$seg" --all > "$T/x" 2>&1 || fail "expire --all: exit $?: $(cat "$T/x")"
has "$T/x" "expired 1 reservation"
stock_is "30:1 31:2" "expire --all of a cart" 3
"$F" order --name "$seg" "$no8" > "$T/o" || fail "order $no8"
has "$T/o" "order $no8: expired unpaid, pay by "

# ---- the README's example, on a segment of its own -------------------------
awk '/^## Carts/ { s = 1 } s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' "$README" \
	> "$T/readme" || fail "reading $README"
grep -q '^flashstock order .*--line' "$T/readme" || fail "no sh block with a cart under 'Carts' in $README"
bin=$(cd "$(dirname "$F")" && pwd)
n=0
: > "$T/r.vars"
while IFS= read -r line; do
	case $line in
	"# exit "*)    # the exit code of the command before
		want_rc=${line#"# exit "}
		want_rc=${want_rc%%:*}
		[ "$rc" = "$want_rc" ] || fail "README: '$cmd' exits $rc, its comment says $want_rc: $(cat "$T/r.out")"
		want_rc=checked
		;;
	"#"*)          # what the command before prints: its quoted texts, below
		;;
	*)
		[ "${want_rc:-checked}" = checked ] ||
			[ "$rc" = 0 ] || fail "README: '$cmd' exits $rc: $(cat "$T/r.out")"
		cmd=$line want_rc=pending
		PATH=$bin:$PATH bash -c ". '$T/r.vars'; ${line//\/sale/$seg2}
			rc=\$?; declare -p | grep -E '^declare -- [a-z][a-z0-9_]*=' > '$T/r.vars'; exit \$rc" \
			> "$T/r.out" 2>&1
		rc=$?
		n=$((n + 1))
		;;
	esac
	# a "quoted text" in a comment: printed (up to a closing " ...")
	case $line in *"#"*) ;; *) continue ;; esac
	printf '%s\n' "${line#*#}" | grep -o '"[^"]*"' | sed -e 's/^"//' -e 's/"$//' -e 's/ \.\.\.$//' > "$T/quoted"
	while IFS= read -r q; do
		grep -qF -- "$q" "$T/r.out" || fail "README: '$cmd' does not print '$q': $(cat "$T/r.out")"
	done < "$T/quoted"
done < "$T/readme"
[ "${want_rc:-checked}" = checked ] || [ "$rc" = 0 ] || fail "README: '$cmd' exits $rc: $(cat "$T/r.out")"
[ "$n" -ge 5 ] || fail "README: only $n commands run"
"$F" status --name "$seg2" > /dev/null 2>&1 && fail "README: its last command leaves $seg2 behind"
echo "PASS"
