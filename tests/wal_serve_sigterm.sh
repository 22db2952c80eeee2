#!/bin/sh
# wal_serve_sigterm.sh FLASHSTOCK -- `flashstock serve` stops cleanly on
# SIGTERM: records still in the rings are drained, written and synced, and
# the exit status is 0.  A second `serve --once` finds exactly those frames
# in the WAL and writes nothing twice.
set -u
fs=$1
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-sigterm-XXXXXX")
name=/flash-sigterm-$$
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	"$fs" destroy --name "$name" >/dev/null 2>&1
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
echo "ok: serve drained and synced 3 records on SIGTERM, exit 0; restart wrote nothing twice"
