#!/bin/sh
# wal_serve_sigterm.sh FLASHSTOCK -- `flashstock serve` stops cleanly on
# SIGTERM: records still in the rings are drained, written and synced, and
# the exit status is 0.  A second `serve --once` finds exactly those frames
# in the WAL and writes nothing twice.  Then `flashstock wal` verifies and
# dumps that WAL, finds a flipped byte (FLASH_EWAL_CRC at the right offset),
# refuses to cut it while DIR/DURABLE says it was durable, and cuts it as a
# torn tail once nothing vouches for it.
set -u
fs=$1
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-sigterm-XXXXXX")
name=/flash-sigterm-$$
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	"$fs" destroy --name "$name" --force >/dev/null 2>&1 || "$fs" destroy --name "$name" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- serve log:"; cat "$d"/log* 2>/dev/null; exit 1; }

"$fs" create --name "$name" --procs 8 --users 1024 --orders 1024 --tokens 64 \
	--requests 64 --skus 16 --shards 64 --activities 4 >/dev/null || fail "create"
"$fs" serve --name "$name" --wal "$d/wal" --idle-us 200 2>"$d/log1" &
pid=$!
# Wait until serve is up (its signal handler is installed before it logs).
i=0
until grep -q "serving segment" "$d/log1"; do
	i=$((i + 1))
	[ $i -gt 200 ] && fail "serve did not start"
	kill -0 "$pid" 2>/dev/null || fail "serve exited early"
	sleep 0.05
done
# One activity and two skus: three records, whenever serve drains them.
"$fs" load --name "$name" --activity 7 --sku 1 --units 100 --sku 2 --units 5 >/dev/null \
	|| fail "load"
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] || fail "serve exited $rc after SIGTERM"
grep -q "stopping: 3 records written, durable LSN 3" "$d/log1" || fail "records not all written"

"$fs" serve --name "$name" --wal "$d/wal" --once 2>"$d/log2" || fail "serve --once"
grep -q ": 3 frames in 1 files, last LSN 3" "$d/log2" || fail "WAL does not hold 3 frames"
grep -q "stopping: 0 records written, durable LSN 3" "$d/log2" || fail "records written twice"

"$fs" wal verify --wal "$d/wal" >"$d/v1" || fail "wal verify of a clean WAL: exit $?"
grep -q "1 files, 3 frames, LSN 1..3" "$d/v1" || fail "wal verify: $(cat "$d/v1")"
"$fs" wal dump --wal "$d/wal" >"$d/dump" || fail "wal dump"
[ "$(wc -l <"$d/dump")" -eq 3 ] || fail "wal dump: $(cat "$d/dump")"
head -1 "$d/dump" | grep -q "^1 activity slot=" || fail "wal dump first line: $(head -1 "$d/dump")"
grep -q "^3 sku .*sku=2 " "$d/dump" || fail "wal dump third line: $(cat "$d/dump")"

# Flip one payload byte of frame 3 (file header 64 bytes, frames of 104).
# The snapshots the clean stops wrote hold frame 3, and DIR/DURABLE says it
# was durable: either proves it (corruption, never cut).  Without both
# nothing vouches for the last commit's frames, and a bad one there is a
# torn tail.
rm -f "$d"/wal/snap-*.fss
f="$d/wal/wal-0000000000000001.log"
printf '\377' | dd of="$f" bs=1 seek=$((64 + 2 * 104 + 40)) conv=notrunc 2>/dev/null
"$fs" wal verify --wal "$d/wal" >"$d/v2" && fail "wal verify missed a flipped byte"
grep -q "offset 272: FLASH_EWAL_CRC" "$d/v2" || fail "wal verify: $(cat "$d/v2")"
"$fs" wal verify --wal "$d/wal" --truncate >"$d/v3" && fail "wal verify --truncate: exit 0"
grep -q "CORRUPT: .*first bad LSN 3 .*DURABLE says every LSN through 3" "$d/v3" \
	|| fail "wal verify --truncate of a durable frame: $(cat "$d/v3")"
grep -q "truncated:" "$d/v3" && fail "wal verify --truncate cut a frame DURABLE vouches for"
rm -f "$d/wal/DURABLE"
"$fs" wal verify --wal "$d/wal" --truncate >"$d/v3" && fail "wal verify --truncate: exit 0"
grep -q "truncated:" "$d/v3" || fail "wal verify --truncate: $(cat "$d/v3")"
"$fs" wal verify --wal "$d/wal" --json >"$d/v4" || fail "wal verify after truncation: exit $?"
grep -q '"stop":"ok".*"frames":2,"first_lsn":1,"last_lsn":2' "$d/v4" || fail "json: $(cat "$d/v4")"
echo "ok: serve drained and synced 3 records on SIGTERM, exit 0; restart wrote nothing twice;"
echo "    wal verify/dump read them, found a flipped byte at offset 272, kept it while"
echo "    DURABLE vouched for it, and cut it once nothing did"
