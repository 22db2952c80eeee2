#!/bin/bash
# ops_wal_short.sh FLASHSTOCK OPS_BUYER -- a WAL that ends before what it
# promised (issue 20, item 2), through the real commands.  A daemon serves
# 300 acknowledged orders without snapshots and stops cleanly: DIR/DURABLE
# says every LSN through the last one, E, is durable.  Then the WAL's last
# 100 frames are damaged in place; nothing else vouches for them (no
# snapshot, no later commit), only the durable mark.
#   A. the last 100 frames zeroed exactly (the WAL ends cleanly at E-100):
#      `wal verify`, a plain `serve` of the live segment and `serve --recover`
#      after a reboot refuse it (exit 1), naming LSN E-99..E and what to run;
#      nothing rebuilt, nothing cut, DURABLE unchanged; a wrong
#      --accept-loss-after is refused; the right one rebuilds, logs the loss
#      at warn, and the next start and verify are clean;
#   B. the same frames zeroed from inside the first of them (a bad CRC at
#      E-99 with nothing valid after it, which the WAL alone would take for
#      a torn tail): corruption, refused by verify, a plain serve and
#      --recover, never cut; --accept-loss-after cuts it.
set -u
fs=${1:?usage: ops_wal_short.sh path/to/flashstock path/to/ops_buyer}
buyer=${2:?usage: ops_wal_short.sh path/to/flashstock path/to/ops_buyer}
t=$(mktemp -d "${TMPDIR:-/tmp}/flash-opsshort-XXXXXX")
fail() {
	echo "FAIL: $*"
	for f in "$t"/log*; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
	exit 1
}
. "$(dirname "$0")/ops_lib.sh"
trap ops_cleanup EXIT

name=/flash-ops-$$-short
wal=$t/wal
acks=$t/acks
sums() { (cd "$1" && md5sum wal-*.log DURABLE); }
recover() { # recover WALDIR LOG [serve options...]: after a reboot, into an empty segment
	local w=$1 log=$2
	shift 2
	"$fs" destroy --name "$name" --force >/dev/null 2>&1 || "$fs" destroy --name "$name" >/dev/null 2>&1
	"$fs" create --name "$name" $ops_caps >/dev/null || fail "create $name: exit $?"
	"$fs" serve --name "$name" --wal "$w" --recover --once --no-snapshot "$@" 2>"$log"
}
seg_empty() { "$fs" status --name "$name" --json 2>/dev/null | grep -q '"activities":\[\],"skus":\[\],'; }

# ---- the sale: 300 acknowledged orders, a clean stop ----
ops_create "$name"
ops_serve_bg "$t/log-serve" --name "$name" --wal "$wal" --no-snapshot
ops_buy "$name" 1 300 "$acks"
ops_serve_stop "$ops_pid"
ops_check_acked "$acks" "$wal"
ls "$wal"/snap-* >/dev/null 2>&1 && fail "a snapshot was written with --no-snapshot"
files=$(cd "$wal" && ls wal-*.log)
[ "$(echo "$files" | wc -l)" -eq 1 ] || fail "want one WAL file, have: $files"
E=$("$fs" wal dump --wal "$wal" | tail -1 | cut -d' ' -f1)
[ "$E" -eq 302 ] || fail "want LSN 1..302 (activity, sku, 300 orders), the WAL ends at $E"
# frames of 104 bytes (32-byte header, a 72-byte record) after a 64-byte file header
end=$((64 + E * 104))
"$fs" wal verify --wal "$wal" | grep -q "ends cleanly at .* offset $end\$" || fail "the WAL does not end at offset $end"
first=$((E - 99)) keep=$((E - 100))
from=$((64 + keep * 104))
cp -a "$wal" "$t/pristine" || fail "copy"

# ---- A: the last 100 frames zeroed: the WAL ends cleanly below its durable mark ----
echo "case A: the last 100 frames zeroed, DURABLE says $E"
dd if=/dev/zero of="$wal/$files" bs=$((end - from)) count=1 seek="$from" oflag=seek_bytes conv=notrunc \
	2>/dev/null || fail "dd"
"$fs" wal dump --wal "$wal" | tail -1 | grep -q "^$keep order " || fail "the zeroed WAL does not end at $keep"
sums "$wal" >"$t/a.sums"
"$fs" wal verify --wal "$wal" >"$t/log-a-verify" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "A: wal verify exit $rc, want 1"
grep -q "LSN $first\.\.$E" "$t/log-a-verify" || fail "A: verify does not name LSN $first..$E"
grep -q -- "--accept-loss-after $keep" "$t/log-a-verify" || fail "A: verify does not say what to accept"
"$fs" serve --name "$name" --wal "$wal" --once --no-snapshot 2>"$t/log-a-plain"
rc=$?
[ $rc -eq 1 ] || fail "A: plain serve of the live segment exit $rc, want 1"
grep -q "\[error\] .*LSN $first\.\.$E" "$t/log-a-plain" || fail "A: plain serve does not name LSN $first..$E"
ops_show "$t/log-a-plain"
sums "$wal" | cmp -s - "$t/a.sums" || fail "A: plain serve changed the WAL or its DURABLE"
recover "$wal" "$t/log-a-recover"
rc=$?
[ $rc -eq 1 ] || fail "A: serve --recover exit $rc, want 1"
grep -q "\[error\] .*LSN $first\.\.$E.*nothing rebuilt, nothing cut" "$t/log-a-recover" \
	|| fail "A: --recover does not name LSN $first..$E"
grep -q "\[error\] .*--accept-loss-after $keep" "$t/log-a-recover" || fail "A: --recover does not say what to accept"
ops_show "$t/log-a-recover"
sums "$wal" | cmp -s - "$t/a.sums" || fail "A: --recover changed the WAL or its DURABLE"
seg_empty || fail "A: --recover built a segment"
recover "$wal" "$t/log-a-wrong" --accept-loss-after $((keep - 1))
rc=$?
[ $rc -eq 1 ] || fail "A: a wrong --accept-loss-after exit $rc, want 1"
grep -q "the last LSN that can be kept is $keep" "$t/log-a-wrong" || fail "A: a wrong LSN not explained"
sums "$wal" | cmp -s - "$t/a.sums" || fail "A: a wrong --accept-loss-after changed the WAL"
recover "$wal" "$t/log-a-accept" --accept-loss-after "$keep" || fail "A: --accept-loss-after $keep exit $?"
grep -q "\[warn\] .*LSN $first\.\.$E" "$t/log-a-accept" || fail "A: the loss of LSN $first..$E not logged at warn"
ops_show "$t/log-a-accept"
grep -q "complete through LSN $keep" "$t/log-a-accept" || fail "A: not rebuilt through LSN $keep"
"$fs" wal verify --wal "$wal" >"$t/log-a-verify2" 2>&1 || fail "A: verify after the accepted loss exit $?"
"$fs" serve --name "$name" --wal "$wal" --once --no-snapshot 2>"$t/log-a-next" \
	|| fail "A: the next start exit $?"
grep -q "\[error\]" "$t/log-a-next" && fail "A: the next start logs an error"
n=$("$fs" wal dump --wal "$wal" | grep -c " order ")
[ "$n" -eq 200 ] || fail "A: $n orders kept, want 200"

# ---- B: zeroed from inside frame E-99: a bad frame below the durable mark ----
echo "case B: frames $first..$E zeroed from byte 40 of the first, DURABLE says $E"
rm -rf "$wal" && cp -a "$t/pristine" "$wal" || fail "copy back"
dd if=/dev/zero of="$wal/$files" bs=$((end - from - 40)) count=1 seek=$((from + 40)) oflag=seek_bytes \
	conv=notrunc 2>/dev/null || fail "dd"
sums "$wal" >"$t/b.sums"
"$fs" wal verify --wal "$wal" >"$t/log-b-verify" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "B: wal verify exit $rc, want 1"
grep -q "CORRUPT: .*first bad LSN $first .*not a torn tail.*DURABLE" "$t/log-b-verify" \
	|| fail "B: verify does not call LSN $first corrupt"
"$fs" wal verify --wal "$wal" --truncate >"$t/log-b-truncate" 2>&1 && fail "B: verify --truncate exit 0"
sums "$wal" | cmp -s - "$t/b.sums" || fail "B: verify --truncate cut a durable frame"
# the segment A rebuilt carries this WAL's identity: a plain restart
"$fs" serve --name "$name" --wal "$wal" --once --no-snapshot 2>"$t/log-b-plain"
rc=$?
[ $rc -eq 1 ] || fail "B: plain serve exit $rc, want 1"
grep -q "\[error\] .*LSN $first\.\.$E" "$t/log-b-plain" || fail "B: plain serve does not name LSN $first..$E"
ops_show "$t/log-b-plain"
sums "$wal" | cmp -s - "$t/b.sums" || fail "B: plain serve cut a durable frame"
recover "$wal" "$t/log-b-recover"
rc=$?
[ $rc -eq 1 ] || fail "B: serve --recover exit $rc, want 1"
grep -q "first bad LSN $first .*nothing rebuilt, nothing cut" "$t/log-b-recover" \
	|| fail "B: --recover does not refuse LSN $first"
sums "$wal" | cmp -s - "$t/b.sums" || fail "B: --recover cut a durable frame"
recover "$wal" "$t/log-b-accept" --accept-loss-after "$keep" || fail "B: --accept-loss-after $keep exit $?"
grep -q "\[warn\] .*LSN $first" "$t/log-b-accept" || fail "B: the loss not logged at warn"
"$fs" serve --name "$name" --wal "$wal" --once --no-snapshot 2>"$t/log-b-next" \
	|| fail "B: the next start exit $?"
"$fs" wal verify --wal "$wal" >/dev/null 2>&1 || fail "B: verify after the accepted loss exit $?"

echo "ok: 300 acknowledged orders, DURABLE through LSN $E; the last 100 frames zeroed (cleanly,"
echo "    or from inside a frame) refused by verify, serve and serve --recover, naming LSN"
echo "    $first..$E, nothing cut; --accept-loss-after $keep gives them up, logged at warn"
