#!/bin/bash
# cli_feed_refill.sh FLASHSTOCK OPS_BUYER FEED_OPS MARIADB_SH [SHARED] -- a lost
# consumer refilled from MariaDB, through the real binaries, on a private
# MariaDB started here (tests/fixtures/mariadb.sh) and stopped at the end.
#
# serve --mysql applies every record; consumer 'ref' reads everything as it
# comes (the reference), consumer 'r' registers at LSN 0 and reads nothing.
# With --feed-keep-bytes 1 serve removes the files 'r' needs once snapshots
# and MariaDB cover them: 'r' is lost (feed exits 3).  Then
# `feed --consumer r --mysql URL` serves the removed range from MariaDB and
# continues from the WAL, no start-over:
#  - every LSN after r's position is accounted for exactly once: a record,
#    or inside the fr_gap of the next record (a "gap" line closes a range
#    that ends in missing LSNs: the test makes it end so);
#  - the LSNs it cannot give back are exactly the reference's restocks;
#  - every other record equals the reference's in every field MariaDB
#    keeps (slot and seq never; a cancel's ts_ns and a sku's units not:
#    the line says so in "missing");
#  - the WAL part equals the reference byte for byte (all fields);
#  - its commit makes it "ok" again, and a second run prints nothing.
# SHARED (tests/cli/feed_refill_shared.c, linked with libflashstock.so) refills
# consumer 'rs', lost beside 'r', through the shared library, which loads
# MariaDB only then (its refill plug-in), checked against the reference
# as r is: every LSN once, only restocks missing, the records the same.
set -u
F=${1:?usage}; B=${2:?usage}; O=${3:?usage}; M=${4:?usage}; S=${5:-}
T=$(mktemp -d)
W=$T/wal
seg=/flash-feed-refill-$$
pids=""
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	sh "$M" stop "$T/db" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	[ -f "$T/serve.log" ] && tail -n 15 "$T/serve.log" >&2
	exit 1
}

eval "$(sh "$M" start "$T/db")" || fail "MariaDB did not start"
URL="mysql://root@localhost/feedrefill?socket=$FLASH_MYSQL_SOCKET&create_db=1"

caps="--activities 4 --skus 16 --shards 16 --users 65536 --orders 65536 --tokens 64 \
--requests 64 --locks 16 --procs 16 --ring 4096"
"$F" create --name "$seg" $caps >/dev/null || fail "create"
# r at LSN 0 before anything: the catalog records are in its range too
mkdir -p "$W"
spid=
serve_start() {
	: > "$T/serve.log"
	"$F" serve --name "$seg" --wal "$W" --wal-file-mb 1 --snapshot-wal-bytes 65536 --snapshot-every 1 \
		--reconcile-every 0 --mysql "$URL" "$@" 2>>"$T/serve.log" &
	spid=$!
	pids="$pids $spid"
	for _ in $(seq 1 200); do
		grep -q "serving segment" "$T/serve.log" && return 0
		kill -0 "$spid" 2>/dev/null || fail "serve exited: $(cat "$T/serve.log")"
		sleep 0.05
	done
	fail "serve did not start"
}
serve_start --feed-keep-bytes 1
"$F" feed --wal "$W" --consumer r --from-start > /dev/null || fail "register r"
[ -z "$S" ] || "$F" feed --wal "$W" --consumer rs --from-start > /dev/null || fail "register rs"
"$F" feed --wal "$W" --consumer ref --from-start > /dev/null || fail "register ref"
"$F" load --name "$seg" --activity 1 --sku 1 --units 100000 >/dev/null || fail "load"
"$F" feed --wal "$W" --consumer ref --follow --json > "$T/ref" 2>"$T/ref.err" &
refp=$!
pids="$pids $refp"
buy() { "$B" --name "$seg" --activity 1 --sku 1 --from "$1" --to "$2" --log "$T/acked" >>"$T/buyer.out" 2>&1 ||
	fail "buyer $1..$2: $(tail -3 "$T/buyer.out")"; }
# 1 MiB files hold 10081 frames (LSNs 1..10081, 10082..20162, ...): the
# last LSN of the first two files is a restock, so whichever files go, the
# lost range ends with LSNs MariaDB cannot give back (a "gap" line closes it)
buy 1 9000                                             # LSNs 3..9002
"$O" --name "$seg" cancel 5 17 4000 || fail "cancels"  # 9003..9005
"$O" --name "$seg" restock 1 1 250 || fail "restock"   # 9006
buy 9001 10074                                         # 9007..10080
"$O" --name "$seg" restock 1 1 -3 || fail "restock -3" # 10081: end of file 1
buy 10075 20154                                        # 10082..20161
"$O" --name "$seg" restock 1 1 7 || fail "restock 7"   # 20162: end of file 2
"$O" --name "$seg" cancel 9005 || fail "cancel 9005"
buy 20155 30000
# wait for the removal that loses r (MariaDB and two snapshots past the
# first file must cover it: a few more orders move the snapshots on)
u=30000
for _ in $(seq 1 40); do
	grep -q "feed: consumer 'r' lost" "$T/serve.log" && [ ! -e "$W/wal-0000000000000001.log" ] && break
	buy $((u + 1)) $((u + 200))
	u=$((u + 200))
	sleep 0.25
done
grep -q "feed: consumer 'r' lost" "$T/serve.log" || fail "r never lost"
[ ! -e "$W/wal-0000000000000001.log" ] || fail "the first file is still there"
# ref keeps up (it is not lost: it commits as it goes)
for _ in $(seq 1 400); do
	"$F" feed --list --wal "$W" --json | grep -q '{"name":"ref","state":"ok","committed_lsn":\([0-9]*\),"durable_lsn":\1,' && break
	sleep 0.05
done
kill -TERM "$refp"
wait "$refp" || fail "ref exit $?: $(cat "$T/ref.err")"

"$F" feed --wal "$W" --consumer r --json > "$T/r0" 2>"$T/r0.err"; rc=$?
[ $rc = 3 ] || fail "lost consumer without --mysql exited $rc, want 3"
grep -q FLASH_ELOST "$T/r0.err" || fail "no FLASH_ELOST: $(cat "$T/r0.err")"

"$F" feed --wal "$W" --consumer r --mysql "$URL" --json > "$T/r1" 2>"$T/r1.err" ||
	fail "refill exited $?: $(cat "$T/r1.err")"
grep -q '"source":"mysql"' "$T/r1" || fail "nothing came from MariaDB"
grep -q '"type":"gap".*"source":"mysql"' "$T/r1" || fail "the lost range's missing end was not closed by a gap line: \
$(ls "$W"; grep -m 3 '"source":"wal"' "$T/r1")"
grep -q '"source":"wal"' "$T/r1" || fail "the refill did not continue from the WAL"

# the accounting and the comparison, one line per LSN: python, Debian's own
/usr/bin/python3 - "$T/ref" "$T/r1" <<'PY' || fail "refill differs from the reference (above)"
import json, sys
ref = {}
for line in open(sys.argv[1]):
    r = json.loads(line); ref[r["lsn"]] = r
got = [json.loads(l) for l in open(sys.argv[2])]
bad = []
nxt = 1                       # r was at LSN 0
served = gaps = 0
mysql_seen = False
for g in got:
    missing = set(range(g["lsn"] - g["gap"], g["lsn"]))
    if g["type"] == "gap":
        missing.add(g["lsn"])
    if g["lsn"] - g["gap"] != nxt:
        bad.append("LSN %d not accounted for (next line %d gap %d)" % (nxt, g["lsn"], g["gap"]))
    for l in missing:
        gaps += 1
        if ref[l]["type"] != "restock":
            bad.append("LSN %d (%s) reported missing" % (l, ref[l]["type"]))
    nxt = g["lsn"] + 1
    if g["type"] == "gap":
        continue
    served += 1
    want = ref[g["lsn"]]
    if g["source"] == "wal":
        if mysql_seen and g != want:
            bad.append("WAL record %d differs: %s vs %s" % (g["lsn"], g, want))
        continue
    mysql_seen = True
    # the record's own fields, named per type: the same names as the WAL's
    # line, the same values but those the refill says are missing
    if set(g) != set(want):
        bad.append("LSN %d fields %s, reference %s" % (g["lsn"], sorted(g), sorted(want)))
    skip = {"lsn", "source", "missing", "gap"} | set(g["missing"])
    if not {"slot", "seq"} <= set(g["missing"]):
        bad.append("LSN %d from MariaDB does not say slot and seq are missing" % g["lsn"])
    for k in sorted(set(want) - skip):
        if g.get(k) != want[k]:
            bad.append("LSN %d field %s: %r, reference %r" % (g["lsn"], k, g.get(k), want[k]))
    for k in g["missing"]:
        if k not in want or g[k] != 0:
            bad.append("LSN %d: missing field %s is not a field left 0: %r" % (g["lsn"], k, g.get(k)))
last = max(ref)
if nxt != last + 1:
    bad.append("ended at %d, reference at %d" % (nxt - 1, last))
lost_restocks = sorted(l for l, r in ref.items() if r["type"] == "restock")
for b in bad[:20]:
    print(b)
print("refill: %d served, %d gap LSN(s), restocks in the reference %s" % (served, gaps, lost_restocks))
sys.exit(1 if bad else 0)
PY
grep -c '"type":"cancel".*"source":"mysql"' "$T/r1" | grep -q '^[1-9]' || fail "no cancel came from MariaDB"
grep -q '"type":"activity".*"source":"mysql"' "$T/r1" || fail "the activity did not come from MariaDB"
# every acknowledged order is in the refilled stream
sort -u "$T/acked" > "$T/acked.s"
grep '"type":"order"' "$T/r1" | sed 's/.*"order_no":\([0-9]*\),.*/\1/' | sort -u > "$T/r1.orders"   # comm wants sort order
[ -z "$(comm -23 "$T/acked.s" "$T/r1.orders")" ] || fail "acknowledged orders missing after the refill"
"$F" feed --list --wal "$W" --json | grep -q '{"name":"r","state":"ok"' || fail "r not ok after the refill"
if [ -n "$S" ]; then
	"$S" "$W" rs "$URL" > "$T/rs" 2>"$T/rs.err" || fail "the shared library's refill: $(cat "$T/rs.err")"
	/usr/bin/python3 - "$T/ref" "$T/rs" <<'PY' || fail "the shared library's refill differs from the reference (above)"
import json, sys
# rs lines: LSN SOURCE TYPE ORDER_NO GAP (tests/cli/feed_refill_shared.c; an
# ACTIVITY's or SKU's ORDER_NO is its version).  Its
# lost range may end later than r's (retention may have removed another file
# since), so it is checked against the reference like r's: every LSN once,
# the missing ones restocks only, each record the reference's type and order.
types = {"gap": 0, "order": 1, "cancel": 2, "restock": 3, "activity": 4, "sku": 5, "gen": 6, "archive": 7,
         "confirm": 8, "expire": 9, "price": 10}
ref = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    # the record's order_no: a catalog record's is its version
    ref[r["lsn"]] = (types[r["type"]], r.get("order_no", r.get("version", 0)))
bad = []
nxt, served, gaps, from_mysql = 1, 0, 0, 0
for line in open(sys.argv[2]):
    lsn, src, typ, ono, gap = (int(x) for x in line.split())
    if lsn - gap != nxt:
        bad.append("LSN %d not accounted for (next line %d gap %d)" % (nxt, lsn, gap))
    missing = set(range(lsn - gap, lsn)) | ({lsn} if typ == 0 else set())
    for l in missing:
        gaps += 1
        if ref[l][0] != types["restock"]:
            bad.append("LSN %d (type %d) reported missing" % (l, ref[l][0]))
    nxt = lsn + 1
    if typ == 0:
        continue
    served += 1
    from_mysql += src
    if (typ, ono) != ref[lsn]:
        bad.append("LSN %d: type %d order %d, reference %s" % (lsn, typ, ono, ref[lsn]))
if nxt != max(ref) + 1:
    bad.append("ended at %d, reference at %d" % (nxt - 1, max(ref)))
if from_mysql == 0:
    bad.append("nothing came from MariaDB")
for x in bad[:20]:
    print(x)
print("shared-library refill: %d served (%d from MariaDB), %d gap LSN(s)" % (served, from_mysql, gaps))
sys.exit(1 if bad else 0)
PY
fi
"$F" feed --wal "$W" --consumer r --mysql "$URL" --json > "$T/r2" || fail "second run"
[ ! -s "$T/r2" ] || fail "a second run printed $(wc -l < "$T/r2") line(s)"
kill -TERM "$spid"
wait "$spid" || fail "serve exit $?"
echo "cli_feed_refill: all checks passed"
