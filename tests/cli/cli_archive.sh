#!/bin/bash
# cli_archive.sh FLASHSTOCK OPS_BUYER MARIADB_SH -- archiving through the
# real binaries, on a private MariaDB started here and stopped at the end.
#
# Part 1, `flashstock archive` by hand (serve --mysql runs, its archiver off):
#  - usage: --help, exit 2 for a missing --name / no choice of MariaDB check;
#  - refused, exit 1, nothing changed (no ARCHIVE record in the WAL, MariaDB's
#    activities.archived_lsn still NULL): an activity that has not ended, an
#    activity id the segment lacks, an ended one while the MariaDB asked has
#    applied less than the segment reflects;
#  - --dry-run lists it and changes nothing;
#  - once MariaDB has caught up: archived, exit 0; the ARCHIVE record is in
#    the WAL (`feed --json` prints it as "type":"archive") and MariaDB marks
#    the activity at that LSN; the other activity is untouched.
#  - `flashstock order` of one of its orders on a segment that no longer has
#    it (a fresh segment of the same name after serve stopped, and no segment
#    at all) reads MariaDB's row and says it is archived, at that LSN; an
#    order number nobody issued is a clear error, exit 1; by request id
#    (--request-id with activity, user, sku) MariaDB's row is found; the live
#    activity's order is read from the segment while it runs, and from
#    MariaDB (not archived) on the fresh segment.
#  - status shows the ended activity before, MariaDB's archived count after;
#    reconcile of segment, WAL and MariaDB agrees after the archive.
# Part 2, serve --archive-after-s 1 on a second segment and database: the
#  daemon archives an activity on its own once it has ended and MariaDB has
#  applied it -- not while MariaDB hangs (frozen) with its orders unapplied:
#  it waits, says so, and writes nothing -- (the ARCHIVE record appears in
#  the feed once MariaDB is thawed and caught up, MariaDB marks it,
#  flashstock_archived_total is 1) and leaves a live activity alone; the
#  snapshot thread replays the ARCHIVE record and writes a snapshot past it.
set -u
F=${1:?usage}; B=${2:?usage}; M=${3:?usage}
T=$(mktemp -d)
seg=/flash-archive-$$
seg2=/flash-archive2-$$
pids=""
frozen=0
cleanup() {
	[ "$frozen" = 1 ] && sh "$M" thaw "$T/db" >/dev/null 2>&1
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	"$F" destroy --name "$seg2" --force >/dev/null 2>&1 || "$F" destroy --name "$seg2" >/dev/null 2>&1
	sh "$M" stop "$T/db" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/serve.log" ] && tail -n 15 "$T/serve.log" >&2
	exit 1
}
has() { grep -q -- "$2" "$1" || fail "$1 lacks '$2': $(cat "$1")"; }

eval "$(sh "$M" start "$T/db")" || fail "MariaDB did not start"
URL="mysql://root@localhost/archive1?socket=$FLASH_MYSQL_SOCKET&create_db=1"
URL_BEHIND="mysql://root@localhost/archive_behind?socket=$FLASH_MYSQL_SOCKET&create_db=1"
URL2="mysql://root@localhost/archive2?socket=$FLASH_MYSQL_SOCKET&create_db=1"
sql() { mysql --socket="$FLASH_MYSQL_SOCKET" -uroot -N -B "$1" -e "$2"; }

caps="--activities 8 --skus 16 --shards 16 --users 4096 --orders 4096 --tokens 64 \
--requests 64 --locks 16 --procs 16 --ring 4096"
spid=
serve_start() {   # LOG ARGS...
	local log=$1; shift
	: > "$log"
	"$F" serve --wal-file-mb 1 --reconcile-every 0 "$@" 2>>"$log" &
	spid=$!
	pids="$pids $spid"
	for _ in $(seq 1 200); do
		grep -q "serving segment" "$log" && return 0
		kill -0 "$spid" 2>/dev/null || fail "serve exited: $(cat "$log")"
		sleep 0.05
	done
	fail "serve did not start"
}
serve_stop() {
	kill -TERM "$spid"
	wait "$spid" || fail "serve exit $? at SIGTERM"
}
archives() {      # WAL: the ARCHIVE records' lines (feed --json, peek)
	"$F" feed --wal "$1" --consumer "peek$RANDOM" --from-start --commit none --json 2>/dev/null |
		grep '"type":"archive"'
}
applied() { sql "$1" "SELECT lsn FROM applied_lsn WHERE stream='wal'"; }
wal_lsn() { "$F" status --name "$1" --json | sed -n 's/.*"wal_lsn":\([0-9]*\).*/\1/p'; }
caught_up() {     # DB SEG: MariaDB applied what the segment reflects (waits)
	for _ in $(seq 1 400); do
		local a w
		a=$(applied "$1" 2>/dev/null); w=$(wal_lsn "$2")
		[ -n "$a" ] && [ -n "$w" ] && [ "$w" -gt 0 ] && [ "$a" -ge "$w" ] && return 0
		sleep 0.05
	done
	fail "MariaDB $1 did not catch up with $2 (applied $(applied "$1"), segment $(wal_lsn "$2"))"
}

# ---- part 1 -----------------------------------------------------------------
"$F" archive --help > "$T/help" || fail "archive --help exit $?"
has "$T/help" "--no-mysql-check"
has "$T/help" "exit: 0 archived"
"$F" order --help > "$T/help" || fail "order --help exit $?"
has "$T/help" "--request-id"
"$F" archive --activity 1 --no-mysql-check 2>"$T/e"; rc=$?
[ $rc = 2 ] || fail "archive without --name: exit $rc, want 2"
"$F" archive --name "$seg" --activity 1 2>"$T/e"; rc=$?
[ $rc = 2 ] || fail "archive without a MariaDB choice: exit $rc, want 2"
has "$T/e" "give exactly one of --mysql URL"

"$F" create --name "$seg" $caps >/dev/null || fail "create"
W=$T/wal
serve_start "$T/serve.log" --name "$seg" --wal "$W" --mysql "$URL" --archive-after-s 0 --no-snapshot
"$F" load --name "$seg" --activity 1 --end +3 --sku 1 --units 100 >/dev/null || fail "load 1"
"$F" load --name "$seg" --activity 2 --end +3600 --sku 1 --units 100 >/dev/null || fail "load 2"
"$B" --name "$seg" --activity 1 --sku 1 --from 1 --to 20 --log "$T/acked1" >/dev/null || fail "buy 1"
"$B" --name "$seg" --activity 2 --sku 1 --from 1 --to 5 --log "$T/acked2" >/dev/null || fail "buy 2"
[ "$(wc -l < "$T/acked1")" = 20 ] || fail "20 orders acknowledged in activity 1"
caught_up archive1 "$seg"

unchanged() {     # nothing archived so far
	[ -z "$(archives "$W")" ] || fail "$1: an ARCHIVE record was written: $(archives "$W")"
	[ "$(sql archive1 "SELECT COUNT(*) FROM activities WHERE archived_lsn IS NOT NULL")" = 0 ] ||
		fail "$1: MariaDB marks an activity archived"
}
"$F" archive --name "$seg" --activity 2 --mysql "$URL" >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "archive of a live activity: exit $rc, want 1"
has "$T/e" "activity 2 has not ended"
has "$T/e" "nothing changed"
"$F" archive --name "$seg" --activity 7 --mysql "$URL" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "archive of an unknown activity: exit $rc, want 1"
has "$T/e" "activity 7 is not in segment"
while [ "$("$F" status --name "$seg" --json | sed -n 's/.*"id":1,[^}]*"end_ns":\([0-9]*\).*/\1/p')" -gt \
        "$(date +%s%N)" ]; do sleep 0.2; done
sleep 0.1
"$F" archive --name "$seg" --activity 1 --grace-s 3600 --mysql "$URL" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "archive within --grace-s: exit $rc, want 1"
has "$T/e" "less than --grace-s 3600 ago"
# a MariaDB that has applied nothing of this segment
"$F" archive --name "$seg" --activity 1 --mysql "$URL_BEHIND" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "archive while MariaDB is behind: exit $rc, want 1"
has "$T/e" "has applied up to LSN 0"
has "$T/e" "nothing changed"
"$F" archive --name "$seg" --ended --mysql "$URL" --dry-run >"$T/o" 2>"$T/e" || fail "dry run: $(cat "$T/e")"
has "$T/o" "would archive activity 1"
grep -q "activity 2" "$T/o" && fail "dry run lists the live activity 2: $(cat "$T/o")"
unchanged "the refusals and the dry run"
"$F" status --name "$seg" --json --mysql "$URL" > "$T/st" || fail "status --mysql"
has "$T/st" '"archiving":{"ended":1,"archived":0,"orders_used":'
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/st" || fail "status --json is not JSON"
"$F" status --name "$seg" > "$T/st" || fail "status"
has "$T/st" "ended, not archived  *1  (flashstock archive --ended)"
has "$T/st" "give --mysql URL"

"$F" archive --name "$seg" --ended --mysql "$URL" >"$T/o" 2>"$T/e" || fail "archive --ended: exit $?: $(cat "$T/e")"
has "$T/o" "archived activity 1: orders"
grep -q "activity 2" "$T/o" && fail "archive --ended took the live activity 2: $(cat "$T/o")"
for _ in $(seq 1 400); do [ -n "$(archives "$W")" ] && break; sleep 0.05; done
archives "$W" > "$T/arch"
[ "$(wc -l < "$T/arch")" = 1 ] || fail "one ARCHIVE record in the WAL: $(cat "$T/arch")"
has "$T/arch" '"activity_id":1,'
alsn=$(sed -n 's/^{"lsn":\([0-9]*\),.*/\1/p' "$T/arch")
caught_up archive1 "$seg"
[ "$(sql archive1 "SELECT archived_lsn FROM activities WHERE activity_id=1")" = "$alsn" ] ||
	fail "MariaDB: activity 1 archived_lsn $(sql archive1 "SELECT archived_lsn FROM activities WHERE activity_id=1"), want $alsn"
[ "$(sql archive1 "SELECT archived_lsn IS NULL FROM activities WHERE activity_id=2")" = 1 ] ||
	fail "MariaDB: activity 2 marked archived"
[ "$(sql archive1 "SELECT COUNT(*) FROM orders WHERE activity_id=1")" = 20 ] || fail "MariaDB kept 20 orders of activity 1"
"$F" status --name "$seg" --json --mysql "$URL" > "$T/st" || fail "status --mysql after archive"
has "$T/st" '"archived":1,'
# an archived id is never an activity again (MariaDB's rows and the limit
# keys are keyed by it): load refuses the input whole, adding nothing, not
# even the new activity 3 on the line before it
printf 'activity_id,sku_id,units\n3,1,10\n1,2,5\n' > "$T/again.csv"
"$F" status --name "$seg" --json > "$T/st_before" || fail "status before the re-add"
"$F" load --name "$seg" --csv "$T/again.csv" >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] || fail "load of an archived id: exit $rc, want 2 (bad input): $(cat "$T/o" "$T/e")"
has "$T/e" "again.csv:3"
has "$T/e" "activity 1 was archived, and an archived id is not used again"
"$F" status --name "$seg" --json > "$T/st_after" || fail "status after the re-add"
catalog() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["activities"]); print(d["skus"])' "$1"; }
catalog "$T/st_before" > "$T/a" && catalog "$T/st_after" > "$T/b" || fail "status --json: no catalog"
grep -q "'id': 2," "$T/a" || fail "the catalog read lacks activity 2: $(cat "$T/a")"
cmp -s "$T/a" "$T/b" || fail "the refused load changed the catalog: $(diff "$T/a" "$T/b")"

o1=$(head -n 1 "$T/acked1"); o2=$(head -n 1 "$T/acked2")
# an order of the live activity: the segment answers
"$F" order --name "$seg" "$o2" --json >"$T/o" 2>"$T/e" || fail "order from the segment: $(cat "$T/e")"
has "$T/o" "{\"order_no\":$o2,\"source\":\"segment\",\"archived\":false,"
has "$T/o" '"state":"active","activity_id":2,"sku_id":1,'
"$F" order --name "$seg" "$o2" >"$T/o" || fail "order from the segment (text)"
has "$T/o" "order $o2: active, activity 2, sku 1, user 1, qty 1"
has "$T/o" "(source segment)"
serve_stop
"$F" reconcile --name "$seg" --wal "$W" --mysql "$URL" > "$T/rec" 2>&1 || fail "reconcile after archive: $(cat "$T/rec")"
# the segment no longer has it: gone entirely ...
"$F" destroy --name "$seg" >/dev/null || fail "destroy"
"$F" order --name "$seg" "$o1" --mysql "$URL" --json >"$T/o" 2>"$T/e" || fail "order from MariaDB, no segment: $(cat "$T/e")"
has "$T/o" "\"order_no\":$o1,\"source\":\"mysql\",\"archived\":true,\"archived_lsn\":$alsn,"
has "$T/o" '"state":"active","activity_id":1,"sku_id":1,'
# ... or replaced by a fresh one that never numbered it
"$F" create --name "$seg" $caps >/dev/null || fail "create again"
"$F" order --name "$seg" "$o1" --mysql "$URL" >"$T/o" 2>"$T/e" || fail "order from MariaDB: $(cat "$T/e")"
has "$T/o" "order $o1: active, activity 1, sku 1"
has "$T/o" "source mysql; archived: activity 1 archived at LSN $alsn"
"$F" order --name "$seg" "$o1" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "order not in the segment, no MariaDB given: exit $rc, want 1"
has "$T/e" "give --mysql URL"
"$F" order --name "$seg" 999999 --mysql "$URL" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "order nobody issued: exit $rc, want 1"
has "$T/e" "order 999999: neither segment"
"$F" order --name "$seg" "$o2" --mysql "$URL" --json >"$T/o" || fail "order of the live activity"
has "$T/o" '"archived":false'
# by request id (the buyer sends none: give the row one, as a client minting ids would have)
u1=$(sql archive1 "SELECT user_id FROM orders WHERE order_no=$o1")
sql archive1 "UPDATE orders SET request_id=4242 WHERE order_no=$o1" || fail "set a request id"
"$F" order --name "$seg" --request-id 4242 --activity 1 --user "$u1" --sku 1 --mysql "$URL" --json >"$T/o" \
	2>"$T/e" || fail "order --request-id: $(cat "$T/e")"
has "$T/o" "\"order_no\":$o1,\"source\":\"mysql\",\"archived\":true,"
has "$T/o" '"request_id":4242,'
"$F" order --name "$seg" --request-id 4243 --activity 1 --user "$u1" --sku 1 --mysql "$URL" 2>"$T/e"; rc=$?
[ $rc = 1 ] || fail "order of an unknown request id: exit $rc, want 1"
has "$T/e" "with request id 4243"
"$F" order --name "$seg" --request-id 5 --activity 1 --user 1 2>"$T/e"; rc=$?
[ $rc = 2 ] || fail "--request-id without --sku: exit $rc, want 2"
"$F" destroy --name "$seg" >/dev/null

# ---- part 2: the daemon archives on its own ------------------------------------
W2=$T/wal2
"$F" create --name "$seg2" $caps >/dev/null || fail "create 2"
serve_start "$T/serve.log" --name "$seg2" --wal "$W2" --mysql "$URL2" --archive-after-s 1 --metrics 0 \
	--log-level info --snapshot-every 1
"$F" load --name "$seg2" --activity 3 --end +2 --sku 1 --units 50 >/dev/null || fail "load 3"
"$F" load --name "$seg2" --activity 4 --end +3600 --sku 1 --units 50 >/dev/null || fail "load 4"
# MariaDB hangs before the orders: they are in the WAL, not in MariaDB, and
# the due activity must wait for it
sh "$M" freeze "$T/db" 2>/dev/null || fail "freeze MariaDB"
frozen=1
"$B" --name "$seg2" --activity 3 --sku 1 --from 1 --to 10 --log "$T/acked3" >/dev/null || fail "buy 3"
for _ in $(seq 1 600); do grep -q "archiver: 1 activities due, waiting for MariaDB" "$T/serve.log" && break; sleep 0.1; done
has "$T/serve.log" "archiver: 1 activities due, waiting for MariaDB"
[ -z "$(archives "$W2")" ] || fail "archived while MariaDB had not applied the orders: $(archives "$W2")"
sh "$M" thaw "$T/db" 2>/dev/null || fail "thaw MariaDB"
frozen=0
for _ in $(seq 1 600); do [ -n "$(archives "$W2")" ] && break; sleep 0.1; done
archives "$W2" > "$T/arch2"
[ "$(wc -l < "$T/arch2")" = 1 ] || fail "the daemon wrote one ARCHIVE record: $(cat "$T/arch2")"
has "$T/arch2" '"activity_id":3,'
has "$T/serve.log" "archiver: archived activity 3"
port=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$T/serve.log" | tail -n 1)
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot reach the metrics port"
printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
cat <&3 > "$T/metrics"
exec 3<&-
has "$T/metrics" "^flashstock_archived_total 1$"
alsn2=$(sed -n 's/^{"lsn":\([0-9]*\),.*/\1/p' "$T/arch2")
for _ in $(seq 1 400); do
	[ "$(sql archive2 "SELECT COALESCE(archived_lsn, 0) FROM activities WHERE activity_id=3")" = "$alsn2" ] && break
	sleep 0.05
done
[ "$(sql archive2 "SELECT archived_lsn FROM activities WHERE activity_id=3")" = "$alsn2" ] ||
	fail "MariaDB did not mark activity 3 archived at $alsn2"
[ "$(sql archive2 "SELECT archived_lsn IS NULL FROM activities WHERE activity_id=4")" = 1 ] ||
	fail "the daemon archived the live activity 4"
# the snapshot thread replays the ARCHIVE record into its shadow like any other
for _ in $(seq 1 400); do
	s=$(sed -n 's/.*snapshot at LSN \([0-9]*\) written.*/\1/p' "$T/serve.log" | tail -n 1)
	[ -n "$s" ] && [ "$s" -ge "$alsn2" ] && break
	sleep 0.05
done
[ -n "$s" ] && [ "$s" -ge "$alsn2" ] || fail "no snapshot past the ARCHIVE record (LSN $alsn2)"
grep -q "shadow refused" "$T/serve.log" && fail "the snapshot's shadow refused a record"
serve_stop
echo "PASS"
