#!/bin/bash
# ops_full_disk.sh FLASHSTOCK OPS_BUYER OPS_SYNC_BUYER ENOSPC_PRELOAD -- a
# full disk in sync durability, and the restart after it (issue 20, item 3),
# through the real commands.
#
# Eight sync buyers fill the WAL's first file (1 MiB) while the daemon runs
# on a disk that has no room for a second one (libflash_enospc.so refuses
# fallocate(2) in the WAL directory): the daemon exits 1 naming ENOSPC and
# marks the segment failed; every sync order after that is FLASH_EDURABILITY.
#   status_names_the_failure       `status` (text and --json) shows the
#       segment failed, the step, the error and what to do -- it used to show
#       nothing, and sync orders failed with no reason anywhere;
#   restart_on_a_damaged_wal_keeps_it   a daemon started on a copy of the
#       WAL whose last acknowledged frames are zeroed refuses (exit 1, the
#       existing message) and clears nothing: status still shows the failure;
#   restart_after_space_is_freed_clears_it   a plain restart (the shim gone:
#       space freed) proves the WAL whole, clears the failure with one line at
#       warn naming the failure and why it is safe, and a sync order is
#       acknowledged again -- it used to log only "serving" and keep
#       answering FLASH_EDURABILITY;
# then: every acknowledged order is in the WAL once, every placed order
# (those answered FLASH_EDURABILITY stand) is in it, and the next restart
# says nothing about durability.
set -u
fs=${1:?usage: ops_full_disk.sh flashstock ops_buyer ops_sync_buyer libflash_enospc.so}
buyer=${2:?usage: ops_full_disk.sh flashstock ops_buyer ops_sync_buyer libflash_enospc.so}
sync_buyer=${3:?usage: ops_full_disk.sh flashstock ops_buyer ops_sync_buyer libflash_enospc.so}
shim=${4:?usage: ops_full_disk.sh flashstock ops_buyer ops_sync_buyer libflash_enospc.so}
t=$(mktemp -d "${TMPDIR:-/tmp}/flash-opsfull-XXXXXX")
fail() {
	echo "FAIL: $*"
	for f in "$t"/log*; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
	exit 1
}
. "$(dirname "$0")/ops_lib.sh"
trap ops_cleanup EXIT

name=/flash-ops-$$-full
wal=$t/wal
ENOSPC_MSG="No space left on device"
# room for 16,000 orders; the first WAL file holds 10,079 after the catalog
caps="--activities 4 --skus 16 --shards 16 --users 16384 --orders 16384 --tokens 64 \
--requests 64 --locks 16 --procs 16 --ring 1024"
serve_args="--name $name --wal $wal --no-snapshot --reconcile-every 0 --wal-file-mb 1"
with_full() { # with_full cmd...: no new block in $wal (fallocate refused: ENOSPC)
	LD_PRELOAD="$shim" FLASH_TEST_ENOSPC="$wal/" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}
# one sync order, waiting up to 5 s for its fdatasync; prints its rc name
sync_order() { "$sync_buyer" "$name" 1 1 "$1" 1 5000 0 0 | cut -d' ' -f1; }

"$fs" create --name "$name" $caps --durability sync >/dev/null || fail "create: exit $?"
ops_segs=$name
"$fs" load --name "$name" --activity 1 --sku 1 --units 16000 >/dev/null || fail "load: exit $?"
# the first WAL file is made while the disk has room
"$fs" serve $serve_args --once 2>"$t/log-first" || fail "first serve --once: exit $?"

# ---- the disk fills ----
start=$(date +%s%N)
with_full "$fs" serve $serve_args 2>"$t/log-full" &
full_pid=$!
ops_pids=$full_pid
for i in $(seq 1 200); do
	grep -q "serving segment" "$t/log-full" && break
	kill -0 $full_pid 2>/dev/null || fail "the daemon exited before serving"
	sleep 0.05
done
bpids=
for b in 0 1 2 3 4 5 6 7; do
	"$buyer" --name "$name" --activity 1 --sku 1 --from $((b * 1300 + 1)) --to $((b * 1300 + 1300)) \
		--log "$t/acks.$b" --sync >"$t/buyer.$b" 2>&1 &
	bpids="$bpids $!"
done
for p in $bpids; do wait "$p"; done
wait $full_pid
rc=$?
echo "  the WAL's first file filled by 8 sync buyers in $((($(date +%s%N) - start) / 1000000)) ms"
[ $rc -eq 1 ] || fail "the daemon on a full disk: exit $rc, want 1"
grep -q "\[error\] WAL commit failed (new file: $ENOSPC_MSG)" "$t/log-full" || fail "no ENOSPC in the daemon's log"
ops_show "$t/log-full"
cat "$t"/acks.* >"$t/acks" 2>/dev/null
acked=$(wc -l <"$t/acks")
grep -h "FLASH_EDURABILITY\|durability failed" "$t"/buyer.* >/dev/null || fail "no buyer was told FLASH_EDURABILITY"
[ "$(sync_order 20001)" = FLASH_EDURABILITY ] || fail "a sync order after the failure is not FLASH_EDURABILITY"
echo "  $acked sync orders acknowledged, then FLASH_EDURABILITY"

# ---- status_names_the_failure ----
echo "case status_names_the_failure"
"$fs" status --name "$name" >"$t/st-failed" 2>&1 || fail "status: exit $?"
grep -q "^durability FAILED at [0-9T:-]*Z: creating the next WAL file failed: $ENOSPC_MSG" "$t/st-failed" ||
	fail "status does not show the failure: $(head -3 "$t/st-failed")"
grep -q "FLASH_EDURABILITY.*restart the daemon" "$t/st-failed" || fail "status does not say what to do: $(head -3 "$t/st-failed")"
grep "^durability FAILED" "$t/st-failed" | sed 's/^/  status: /'
"$fs" status --name "$name" --json >"$t/st-failed.json" 2>&1 || fail "status --json: exit $?"
grep -q '"durability":"sync","durability_failed":{"at":"[0-9T:-]*Z","at_ns":[0-9]*,"step":"new_file","errno":28,"error":"'"$ENOSPC_MSG"'"}' \
	"$t/st-failed.json" || fail "status --json does not show the failure: $(head -c 400 "$t/st-failed.json")"

# ---- restart_on_a_damaged_wal_keeps_it ----
echo "case restart_on_a_damaged_wal_keeps_it"
cp -a "$wal" "$t/damaged" || fail "copy"
f=$(cd "$t/damaged" && ls wal-*.log | tail -1)
E=$("$fs" wal dump --wal "$t/damaged" | tail -1 | cut -d' ' -f1)
# frames of 104 bytes after a 64-byte file header: the last 20 zeroed.  The
# durable mark may trail the end by the batch the failure cut short (up to
# one record per buyer): the zeroed frames reach below it, so this is damage
# to acknowledged records, not a torn tail
dd if=/dev/zero of="$t/damaged/$f" bs=2080 count=1 seek=$((64 + (E - 20) * 104)) oflag=seek_bytes conv=notrunc \
	2>/dev/null || fail "dd"
"$fs" serve --name "$name" --wal "$t/damaged" --no-snapshot --reconcile-every 0 --once 2>"$t/log-damaged"
rc=$?
[ $rc -eq 1 ] || fail "a restart on the damaged WAL: exit $rc, want 1"
grep -q "\[error\] .*LSN $((E - 19))\.\.[0-9]* are missing" "$t/log-damaged" ||
	fail "the refusal does not name LSN $((E - 19)).."
grep -q "\[error\] segment $name stays failed" "$t/log-damaged" || fail "the refusal does not say the segment stays failed"
grep -q "cleared" "$t/log-damaged" && fail "a refused restart logs a clear"
"$fs" status --name "$name" | grep -q "^durability FAILED at .*$ENOSPC_MSG" || fail "the refused restart cleared the failure"
[ "$(sync_order 20002)" = FLASH_EDURABILITY ] || fail "a sync order after the refused restart is not FLASH_EDURABILITY"
ops_show "$t/log-damaged"

# ---- restart_after_space_is_freed_clears_it ----
echo "case restart_after_space_is_freed_clears_it"
ops_serve_bg "$t/log-restart" $serve_args
grep -q "\[warn\] segment $name: durability failure cleared: creating the next WAL file failed: $ENOSPC_MSG (at [0-9T:-]*Z); WAL $wal is whole through LSN [0-9]* .*open for append" \
	"$t/log-restart" || fail "the restart does not say, at warn, what it cleared and why"
ops_show "$t/log-restart"
[ "$(sync_order 20003)" = FLASH_OK ] || fail "a sync order after the restart is not acknowledged"
"$fs" status --name "$name" >"$t/st-ok" 2>&1 || fail "status after the restart: exit $?"
grep -q "FAILED" "$t/st-ok" && fail "status still shows a failure: $(grep FAILED "$t/st-ok")"
"$fs" status --name "$name" --json | grep -q '"durability":"sync","durability_failed":null,' ||
	fail "status --json still shows a failure"
ops_serve_stop "$ops_pid"
# every acknowledged order is in the WAL once (comm wants the lexical order)
"$fs" wal dump --wal "$wal" >"$t/dump" 2>"$t/log-dump" || fail "wal dump: exit $?"
sed -n 's/^[0-9]* order .* order=\([0-9]*\) .*/\1/p' "$t/dump" | sort >"$t/dump.orders"
[ -z "$(uniq -d "$t/dump.orders")" ] || fail "an order number is in the WAL twice"
missing=$(sort "$t/acks" | comm -23 - "$t/dump.orders" | head -5 | tr '\n' ' ')
[ -z "$missing" ] || fail "acknowledged orders missing from the WAL: $missing"
# the orders told FLASH_EDURABILITY stand: every sold unit is an order record
sold=$("$fs" status --name "$name" --json | sed -n 's/.*"units_sold":\([0-9]*\),.*/\1/p')
n=$(wc -l <"$t/dump.orders")
[ "$n" -eq "$sold" ] || fail "$sold units sold, $n orders in the WAL"
echo "  $acked acknowledged orders in the WAL once; $n orders in it, one per unit sold"
"$fs" serve $serve_args --once 2>"$t/log-next" || fail "the next start: exit $?"
grep -q "durability fail" "$t/log-next" && fail "the next start talks about a failure: $(grep "durability fail" "$t/log-next")"

echo "ok: ENOSPC at the WAL's second file after $acked acknowledged sync orders: status names it"
echo "    (text and JSON); a restart on a damaged WAL keeps it; a plain restart once space is"
echo "    free proves the WAL whole, clears it at warn, and sync orders are acknowledged again;"
echo "    $n orders in the WAL, one per unit sold"
