#!/bin/bash
# cli_archive_past_freed.sh FLASHSTOCK -- the catalog walks of the tools
# skip an entry an archive freed (flash_activity_at / flash_sku_at answer
# FLASH_EARCHIVED for it, flashstock.h) and go on to the entries after it:
#  - `flashstock archive --ended` archives the ended activities that follow
#    a freed entry (the daemon's archiver makes the same walk:
#    persist/daemon/archiver.c archiver_ended), exit 0;
#  - `flashstock status` (text and --json) lists the live activity after
#    freed entries, exit 0.
# No MariaDB: --no-mysql-check.
set -u
F=${1:?usage}
T=$(mktemp -d)
seg=/flash-archfreed-$$
cleanup() { "$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$F" create --name "$seg" --no-reclaim --activities 8 --skus 16 --shards 16 --users 64 --orders 64 \
	--tokens 16 --requests 16 --locks 4 --procs 8 >/dev/null || fail "create"
for a in 1 2 3; do
	"$F" load --name "$seg" --activity $a --end +1 --sku 1 --units 10 >/dev/null || fail "load $a"
done
"$F" load --name "$seg" --activity 4 --end +3600 --sku 1 --units 10 >/dev/null || fail "load 4"
sleep 1.5
"$F" archive --name "$seg" --activity 1 --grace-s 0 --no-mysql-check >"$T/o" 2>"$T/e" ||
	fail "archive --activity 1: exit $?: $(cat "$T/e")"
# index 0 is free now: the walk must go past it
"$F" archive --name "$seg" --ended --grace-s 0 --no-mysql-check >"$T/o" 2>"$T/e" ||
	fail "archive --ended after a freed entry: exit $?: $(cat "$T/o" "$T/e")"
grep -q "activity 2" "$T/o" || fail "activity 2 not archived: $(cat "$T/o")"
grep -q "activity 3" "$T/o" || fail "activity 3 not archived: $(cat "$T/o")"
"$F" status --name "$seg" >"$T/st" 2>"$T/e" || fail "status after freed entries: exit $?: $(cat "$T/e")"
"$F" status --name "$seg" --json >"$T/js" 2>"$T/e" || fail "status --json: exit $?: $(cat "$T/e")"
grep -q '"id":4' "$T/js" || fail "status --json lacks the live activity 4: $(cat "$T/js")"
echo "ok: archive --ended and status walk past entries an archive freed"
