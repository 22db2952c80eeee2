#!/bin/bash
# cli_load.sh FLASHSTOCK -- `flashstock create/load/status/destroy` end to end.
#
# Proves: a good CSV (LF and CRLF lines, comments, empty fields taking
# defaults, two activities) loads exactly what it says, as `status --json`
# shows; each kind of bad CSV fails with exit 2, names the line and column,
# and leaves the segment byte-for-byte as it was (status before == after),
# even when the bad row comes after good ones; flag errors exit 2; a missing
# segment exits 1 with the engine's reason.  A header naming only some
# columns, in any order (the seeds' warm-up list: activity_id,sku_id,units),
# loads with the documented defaults, and an omitted column leaves an
# existing activity as it is; an unknown, repeated or missing required
# column, a file without a header and a bad row among good ones exit 2 with
# nothing loaded, errors naming the column as the header calls it.
set -u
F=${1:?usage: cli_load.sh path/to/flashstock}
N=/fs-cli-load-$$-$RANDOM
T=$(mktemp -d)
trap '"$F" destroy --name "$N" --force >/dev/null 2>&1 || "$F" destroy --name "$N" >/dev/null 2>&1; "$F" destroy --name "$N-h" --force >/dev/null 2>&1 || "$F" destroy --name "$N-h" >/dev/null 2>&1; rm -rf "$T"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
has() { # has FILE STRING: the file contains the exact string
	grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "missing: $2"; }
}
HEADER=activity_id,sku_id,units,shards,start,end,limit,max_qty,scope,cancel_returns_quota,token_required,day_offset_s

"$F" create --name "$N" --skus 64 --orders 4096 >/dev/null || fail "create"
"$F" create --name "$N" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 1 ] || fail "create of an existing name: exit $rc, want 1"
has "$T/err" "flashstock: create $N: "

# ---- a good file ------------------------------------------------------------
{
	echo "$HEADER"
	echo "7,1,5000,4,now,+3600,1,1,activity,0,1,0"
	echo ""
	echo "# sku 2 takes the activity's fields from the row above"
	echo " 7 , 2 , 3000 ,,,,,,,,,"
	printf '8,1,2000,2,2026-01-01T00:00:00Z,2036-01-01T08:00:00+08:00,2,3,sku,yes,no,-3600\r\n'
	printf '8,5,0,,,,,,,,,\r\n'
} > "$T/good.csv"
"$F" load --name "$N" --csv "$T/good.csv" > "$T/out" 2>&1 || { cat "$T/out"; fail "good csv"; }
"$F" status --name "$N" --json > "$T/s1" || fail "status --json"
has "$T/s1" '"units_total":10000,"units_available":10000,"units_sold":0'
has "$T/s1" '{"activity_id":7,"sku_id":1,"shards":4,"total":5000,"available":5000,"sold":0,"price":0,"version":'
has "$T/s1" '{"activity_id":7,"sku_id":2,"shards":1,"total":3000,"available":3000,"sold":0,"price":0,"version":'
has "$T/s1" '{"activity_id":8,"sku_id":1,"shards":2,"total":2000,"available":2000,"sold":0,"price":0,"version":'
has "$T/s1" '{"activity_id":8,"sku_id":5,"shards":1,"total":0,"available":0,"sold":0,"price":0,"version":'
has "$T/s1" '"limit":1,"max_qty":1,"scope":"activity","cancel_returns_quota":false,"token_required":true,"day_offset_s":0,"version":'
has "$T/s1" '{"id":8,"start":"2026-01-01T00:00:00Z","end":"2036-01-01T00:00:00Z",'
has "$T/s1" '"limit":2,"max_qty":3,"scope":"sku","cancel_returns_quota":true,"token_required":false,"day_offset_s":-3600,"version":'
has "$T/s1" '"skus":{"used":4,"cap":64,'
has "$T/s1" '"shards":{"used":8,'
# activity 7's window is exactly one hour
s7=$(grep -o '"id":7,[^}]*' "$T/s1" | grep -o '"start_ns":[0-9]*' | cut -d: -f2)
e7=$(grep -o '"id":7,[^}]*' "$T/s1" | grep -o '"end_ns":[0-9]*' | cut -d: -f2)
[ $((e7 - s7)) = 3600000000000 ] || fail "activity 7 window: $s7 .. $e7"
"$F" status --name "$N" > "$T/text" || fail "status (text)"
has "$T/text" "token-required"

# ---- bad files: exit 2, line and column named, nothing loaded ---------------
bad() { # bad NAME EXPECTED-STDERR-SUBSTRING ROWS...
	local name=$1 want=$2; shift 2
	{ echo "$HEADER"; printf '%s\n' "$@"; } > "$T/$name.csv"
	"$F" load --name "$N" --csv "$T/$name.csv" > "$T/$name.out" 2> "$T/$name.err"; rc=$?
	[ $rc = 2 ] || { cat "$T/$name.err" >&2; fail "$name: exit $rc, want 2"; }
	has "$T/$name.err" "$T/$name.csv:$want"
	has "$T/$name.err" "nothing was loaded"
	"$F" status --name "$N" --json > "$T/s2" || fail "status after $name"
	cmp -s "$T/s1" "$T/s2" || { diff "$T/s1" "$T/s2" >&2; fail "$name changed the segment"; }
}
# each bad row follows a good row for a new activity 9: it must not load either
GOOD9="9,1,100,1,now,+60,1,1,activity,0,0,0"
bad columns  "3: column 12 (day_offset_s): expected 12 fields, found 11" \
	"$GOOD9" "9,2,100,1,now,+60,1,1,activity,0,0"
bad toomany  "3: column 13 (extra): expected 12 fields, found 13" \
	"$GOOD9" "9,2,100,1,now,+60,1,1,activity,0,0,0,0"
bad number   "3: column 3 (units): not a non-negative integer: '12a'" \
	"$GOOD9" "9,2,12a,1,,,,,,,,"
bad range    "3: column 4 (shards): '17' out of range [1, 16]" \
	"$GOOD9" "9,2,5,17,,,,,,,,"
bad scope    "3: column 9 (scope): expected activity, sku or day, got 'region'" \
	"$GOOD9" "9,2,5,1,,,,,region,,,"
bad dupsku   "3: column 2 (sku_id): sku 1 of activity 9 already given on line 2" \
	"$GOOD9" "9,1,5,1,,,,,,,,"
bad conflict "3: column 7 (limit): activity 9 was given limit 1 on line 2; this row says 2" \
	"$GOOD9" "9,2,5,1,,,2,,,,,"
bad time     "3: column 6 (end): 'tomorrow' is not a time" \
	"$GOOD9" "10,2,5,1,now,tomorrow,,,,,,"
bad window   "3: column 6 (end): activity 10: end" \
	"$GOOD9" "10,2,5,1,+60,+30,,,,,,"
bad quoted   "3: column 3 (units): quoted fields are not supported" \
	"$GOOD9" '10,2,"5",1,,,,,,,,'
bad boolean  "3: column 11 (token_required): not a boolean" \
	"$GOOD9" "10,2,5,1,,,,,,,maybe,"
bad existing "3: column 2 (sku_id): sku 1 of activity 7 is already in the segment" \
	"$GOOD9" "7,1,5,1,,,,,,,,"
bad actdiff  "3: column 7 (limit): activity 7 exists with limit 1, the input says 5" \
	"$GOOD9" "7,9,5,1,,,5,,,,,"
# a wrong header
printf 'activity,sku_id,units,shards,start,end,limit,max_qty,scope,cancel_returns_quota,token_required,day_offset_s\n9,1,1,,,,,,,,,\n' > "$T/header.csv"
"$F" load --name "$N" --csv "$T/header.csv" 2> "$T/header.err"; rc=$?
[ $rc = 2 ] || fail "header: exit $rc, want 2"
has "$T/header.err" "header.csv:1: column 1 (header): unknown column 'activity'; the columns are activity_id, sku_id, units,"
# a missing file
"$F" load --name "$N" --csv "$T/nope.csv" 2> "$T/nope.err"; rc=$?
[ $rc = 2 ] || fail "missing file: exit $rc, want 2"
"$F" status --name "$N" --json > "$T/s2"
cmp -s "$T/s1" "$T/s2" || fail "bad header or missing file changed the segment"

# ---- flags ------------------------------------------------------------------
"$F" load --name "$N" --activity 9 --sku 1 2>/dev/null; rc=$?
[ $rc = 2 ] || fail "--sku without --units: exit $rc, want 2"
"$F" load --name "$N" --activity 9 --scope region --sku 1 --units 1 2>/dev/null; rc=$?
[ $rc = 2 ] || fail "bad --scope: exit $rc, want 2"
"$F" load --name "$N" --activity 9 --bogus 2>/dev/null; rc=$?
[ $rc = 2 ] || fail "unknown option: exit $rc, want 2"
"$F" status --name "$N" --json > "$T/s2"
cmp -s "$T/s1" "$T/s2" || fail "a usage error changed the segment"
"$F" load --name "$N" --activity 9 --end +60 --scope day --sku 1 --units 10 --shards 2 --sku 2 --units 5 > "$T/out" || fail "load by flags"
"$F" status --name "$N" --json > "$T/s3"
has "$T/s3" '{"activity_id":9,"sku_id":1,"shards":2,"total":10,"available":10,"sold":0,"price":0,"version":'
has "$T/s3" '{"activity_id":9,"sku_id":2,"shards":1,"total":5,"available":5,"sold":0,"price":0,"version":'
has "$T/s3" '"units_total":10015,'
has "$T/s3" '"scope":"day"'

# ---- a header naming only some columns --------------------------------------
# Its own segment, so the figures above stay as they are.
H=$N-h
"$F" create --name "$H" --skus 64 --orders 4096 >/dev/null || fail "create $H"
DAY_NS=86400000000000
window() { # window FILE ACTIVITY: end_ns - start_ns of the activity
	local s e
	s=$(grep -o "\"id\":$2,[^}]*" "$1" | grep -o '"start_ns":[0-9]*' | cut -d: -f2)
	e=$(grep -o "\"id\":$2,[^}]*" "$1" | grep -o '"end_ns":[0-9]*' | cut -d: -f2)
	echo $((e - s))
}
# the seeds' warm-up: a plain list of skus and counts
printf 'activity_id,sku_id,units\n31,1,1000\n31,2,250\n31,3,0\n' > "$T/warm.csv"
"$F" load --name "$H" --csv "$T/warm.csv" > "$T/warm.out" 2>&1 || { cat "$T/warm.out"; fail "3-column csv"; }
"$F" status --name "$H" --json > "$T/h1" || fail "status --json ($H)"
has "$T/h1" '{"activity_id":31,"sku_id":1,"shards":1,"total":1000,"available":1000,"sold":0,"price":0,"version":'
has "$T/h1" '{"activity_id":31,"sku_id":2,"shards":1,"total":250,"available":250,"sold":0,"price":0,"version":'
has "$T/h1" '{"activity_id":31,"sku_id":3,"shards":1,"total":0,"available":0,"sold":0,"price":0,"version":'
has "$T/h1" '"units_total":1250,"units_available":1250,"units_sold":0'
has "$T/h1" '"limit":1,"max_qty":1,"scope":"activity","cancel_returns_quota":false,"token_required":false,"day_offset_s":0,"version":'
[ "$(window "$T/h1" 31)" = $DAY_NS ] || fail "activity 31: default window is not 24 h: $(window "$T/h1" 31)"

# columns in another order, spaces around names; an omitted column leaves
# the existing activity 31 as it is, a new activity 32 takes the defaults
printf ' sku_id , units,activity_id,scope,limit\n4,40,31,,\n1,70,32,sku,3\n' > "$T/order.csv"
"$F" load --name "$H" --csv "$T/order.csv" > "$T/order.out" 2>&1 || { cat "$T/order.out"; fail "reordered header"; }
"$F" status --name "$H" --json > "$T/h2" || fail "status --json ($H)"
has "$T/h2" '{"activity_id":31,"sku_id":4,"shards":1,"total":40,"available":40,"sold":0,"price":0,"version":'
has "$T/h2" '{"activity_id":32,"sku_id":1,"shards":1,"total":70,"available":70,"sold":0,"price":0,"version":'
has "$T/h2" '"limit":3,"max_qty":1,"scope":"sku","cancel_returns_quota":false,"token_required":false,"day_offset_s":0,"version":'
has "$T/h2" '"units_total":1360,'
[ "$(window "$T/h2" 32)" = $DAY_NS ] || fail "activity 32: default window is not 24 h"
grep -o '"id":31,[^}]*' "$T/h1" > "$T/a31.before"
grep -o '"id":31,[^}]*' "$T/h2" > "$T/a31.after"
cmp -s "$T/a31.before" "$T/a31.after" || fail "activity 31 changed when only a sku was added"

# the whole header, as before, still loads (its columns shuffled, too)
printf 'day_offset_s,token_required,cancel_returns_quota,scope,max_qty,limit,end,start,shards,units,sku_id,activity_id\n-60,1,1,day,2,2,+7200,now,2,9,1,33\n' > "$T/full.csv"
"$F" load --name "$H" --csv "$T/full.csv" > "$T/full.out" 2>&1 || { cat "$T/full.out"; fail "shuffled full header"; }
"$F" status --name "$H" --json > "$T/h3" || fail "status --json ($H)"
has "$T/h3" '{"activity_id":33,"sku_id":1,"shards":2,"total":9,"available":9,"sold":0,"price":0,"version":'
has "$T/h3" '"limit":2,"max_qty":2,"scope":"day","cancel_returns_quota":true,"token_required":true,"day_offset_s":-60,"version":'
[ "$(window "$T/h3" 33)" = 7200000000000 ] || fail "activity 33 window"

hbad() { # hbad NAME EXPECTED-STDERR-SUBSTRING LINES...: exit 2, nothing loaded
	local name=$1 want=$2; shift 2
	printf '%s\n' "$@" > "$T/$name.csv"
	"$F" load --name "$H" --csv "$T/$name.csv" > "$T/$name.out" 2> "$T/$name.err"; rc=$?
	[ $rc = 2 ] || { cat "$T/$name.err" >&2; fail "$name: exit $rc, want 2"; }
	has "$T/$name.err" "$T/$name.csv:$want"
	has "$T/$name.err" "nothing was loaded"
	"$F" status --name "$H" --json > "$T/h4" || fail "status after $name"
	cmp -s "$T/h3" "$T/h4" || { diff "$T/h3" "$T/h4" >&2; fail "$name changed the segment"; }
}
hbad unknown   "1: column 4 (header): unknown column 'colour'" \
	"activity_id,sku_id,units,colour" "40,1,5,red"
hbad repeated  "1: column 4 (header): 'sku_id' is also column 2" \
	"activity_id,sku_id,units,sku_id" "40,1,5,2"
hbad emptyname "1: column 3 (header): empty column name" \
	"activity_id,sku_id,,units" "40,1,,5"
hbad nosku     "1: header: no sku_id column" \
	"activity_id,units" "40,5"
hbad nounits   "1: header: no units column" \
	"sku_id,activity_id,shards" "1,40,1"
hbad noheader  "1: expected a header row naming the columns" \
	"40,1,5" "40,2,5"
hbad onlyhdr   "1: no rows after the header" \
	"activity_id,sku_id,units"
# a bad row between good ones, for a new activity and an existing one
hbad midrow    "3: column 3 (units): not a non-negative integer: 'x'" \
	"activity_id,sku_id,units" "40,1,5" "40,2,x" "31,9,5"
# errors name the column as this header calls it
hbad midorder  "3: column 1 (units): not a non-negative integer: 'lots'" \
	"units,activity_id,sku_id" "5,40,1" "lots,40,2"
hbad short     "3: column 3 (sku_id): expected 3 fields, found 2" \
	"units,activity_id,sku_id" "5,40,1" "5,40"
hbad long      "2: column 4 (extra): expected 3 fields, found 4" \
	"units,activity_id,sku_id" "5,40,1,1"
hbad existing  "2: column 1 (limit): activity 31 exists with limit 1, the input says 5" \
	"limit,activity_id,sku_id,units" "5,31,9,1"
hbad dupsku    "3: column 1 (sku_id): sku 4 of activity 31 is already in the segment" \
	"sku_id,activity_id,units" "5,31,1" "4,31,1"
hbad window    "2: column 5 (end): activity 41: end" \
	"activity_id,start,sku_id,units,end" "41,+60,1,1,+30"
hbad case      "1: column 3 (header): unknown column 'Units'" \
	"activity_id,sku_id,Units" "41,1,5"
# a start near the last time there is, with the end omitted: the default
# end stops at the last time rather than wrapping around to before start
printf 'activity_id,sku_id,units,start\n42,1,1,2262-04-11T00:00:00Z\n' > "$T/late.csv"
"$F" load --name "$H" --csv "$T/late.csv" > "$T/late.out" 2>&1 || { cat "$T/late.out"; fail "late start"; }
"$F" status --name "$H" --json > "$T/h5" || fail "status --json ($H)"
has "$T/h5" '"end_ns":9223372036854775807'
"$F" load --help > "$T/help" || fail "load --help"
has "$T/help" "activity_id,sku_id,units"
has "$T/help" "a header line naming the columns present,"
"$F" destroy --name "$H" --force >/dev/null 2>&1 || fail "destroy $H"

# ---- destroy, then no segment ------------------------------------------------
# loaded and never served: its catalog records are in no WAL, so a plain
# destroy refuses (exit 2, nothing changed); --force gives them up, saying so
"$F" destroy --name "$N" 2> "$T/err"; rc=$?
[ $rc = 2 ] || fail "destroy of a segment whose records no daemon drained: exit $rc, want 2"
has "$T/err" "records in no WAL yet: "
"$F" status --name "$N" >/dev/null || fail "the refused destroy removed $N"
"$F" destroy --name "$N" --force 2> "$T/err" || fail "destroy --force"
has "$T/err" "LOST: "
"$F" status --name "$N" 2> "$T/err"; rc=$?
[ $rc = 1 ] || fail "status of a removed segment: exit $rc, want 1"
has "$T/err" "flashstock: status: open $N: "
"$F" destroy --name "$N" 2>/dev/null; rc=$?
[ $rc = 1 ] || fail "second destroy: exit $rc, want 1"
echo "cli_load: all checks passed"
