#!/bin/bash
# ops_corrupt.sh FLASHSTOCK ENOSPC_PRELOAD -- operator paths around a
# damaged WAL, through the real commands.  One kept sale (24,000 buyers:
# three 1 MiB WAL files, every order in them acknowledged), the segment
# gone (a reboot); the reference is what `serve --recover` rebuilds from the
# untouched WAL.  Then, each on its own copy of the WAL:
#   2  a flipped byte inside the last file (valid commits after it): refused
#      by verify, --recover and a plain serve, naming the first bad LSN and
#      how many valid records follow; nothing cut; --accept-loss-after cuts
#      and lists every dropped order by number;
#   4  the first file corrupt: --recover refuses, the segment stays as it was
#      (empty), a retry gives the same answer; tables too small: the same;
#      kill -9 at several moments of a rebuild: the segment is empty or
#      complete, never half-built, and the next rebuild equals the reference;
#   11 the first / a middle WAL file deleted: verify and --recover name the
#      missing LSN range;
#   a snapshot past the WAL's end: refused; --accept-loss-after sets it aside;
#   disk full: cutting a torn tail needs no free block; no room in /dev/shm
#      for the rebuild: refused, nothing left behind, a retry succeeds.
# Every case asserts the exit code, the message, and that every acknowledged
# order is still in the WAL (bytes unchanged, or the dump) or named dropped.
set -u
fs=${1:?usage: ops_corrupt.sh path/to/flashstock path/to/libflash_enospc.so}
shim=${2:?usage: ops_corrupt.sh path/to/flashstock path/to/libflash_enospc.so}
t=$(mktemp -d "${TMPDIR:-/tmp}/flash-opscorrupt-XXXXXX")
name=/flash-opscorrupt-$$
base=${name#/}
kept=
bgpid=
cleanup() {
	[ -z "$bgpid" ] || kill -9 "$bgpid" 2>/dev/null
	"$fs" destroy --name "$name" --force >/dev/null 2>&1 || "$fs" destroy --name "$name" >/dev/null 2>&1
	rm -f /dev/shm/"$base".recover-* 2>/dev/null
	[ -z "$kept" ] || rm -rf "$kept"
	rm -rf "$t"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$t"/log-*; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; }; done; exit 1; }

recover() { # recover WALDIR [serve options...]
	local w=$1; shift
	"$fs" serve --name "$name" --wal "$w" --recover --once --no-snapshot --reconcile-every 0 "$@"
}
fresh() { rm -rf "$1"; mkdir -p "$1"; cp -a "$t/pristine"/. "$1"/; }
sums() { (cd "$1" && md5sum wal-*.log snap-* 2>/dev/null); }
# status --json without what no WAL record carries (refusals, retries, keys of
# refused orders: as wal_snapshot_cli.sh) and the process table (a daemon
# killed after the rename leaves its slot to the next attach's recovery,
# which counts it in "recoveries")
stable() { tr ',' '\n' | grep -v -E '"(requests|tokens|users|pct|sold_out|limit_hits|duplicates|cas_retries|token_rejects|procs|recoveries)"'; }
status_of() { "$fs" status --name "$name" --json | stable; }
seg_empty() { "$fs" status --name "$name" --json 2>/dev/null | grep -q '"activities":\[\],"skus":\[\],"units_total":0,'; }
no_tmp() { ! ls /dev/shm | grep -q "^$base\.recover-"; }
orders_of() { "$fs" wal dump --wal "$1" 2>/dev/null | sed -n 's/^\([0-9]*\) order .* order=\([0-9]*\) .*/\1 \2/p'; }
flip() { # flip FILE OFFSET: one byte inverted
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# OPS_CASES="2 4 11 7 8" runs only those cases (default: all), e.g. to see
# each one fail on its own
want() { [ -z "${OPS_CASES:-}" ] || [[ " $OPS_CASES " == *" $1 "* ]]; }
lsn_of() { echo $((16#$(basename "$1" | cut -c5-20))); }
with_full() { # with_full SUBSTR cmd...: fallocate refused (ENOSPC) for paths containing SUBSTR
	local sub=$1; shift
	LD_PRELOAD="$shim" FLASH_TEST_ENOSPC="$sub" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}

# ---- the sale, the reboot, the reference ----
# the unpaid round off: the reference below is the sale's orders alone
"$fs" demo --no-mysql --keep --json --name "$name" --buyers 24000 --units 24000 --procs 2 --unpaid-units 0 \
	--wal-file-mb 1 \
	>"$t/demo.out" 2>"$t/log-demo"
drc=$?
# read before any verdict, so a failed run's kept directory is removed too
kept=$(sed -n 's/.*"kept_dir":"\([^"]*\)".*/\1/p' "$t/demo.out" | tail -1)
[ $drc -eq 0 ] || fail "demo exit $drc; its report: $(grep -v '^{' "$t/demo.out" | tail -n 25)"
wal=$(sed -n 's/.*"kept_wal":"\([^"]*\)".*/\1/p' "$t/demo.out" | tail -1)
acked=$(sed -n 's/.*"orders_acked":\([0-9]*\).*/\1/p' "$t/demo.out" | tail -1)
[ -n "$kept" ] && [ -d "$wal" ] && [ -n "$acked" ] || fail "no kept WAL in: $(tail -1 "$t/demo.out")"
# one more batch, written once every record before it is durable, so a
# commit frame vouches for the whole sale (the demo's last batches may
# have been written while a sync was still on its way to disk)
"$fs" load --name "$name" --activity 99 --sku 1 --units 1 >/dev/null || fail "load after the demo"
"$fs" serve --name "$name" --wal "$wal" --once --no-snapshot --reconcile-every 0 2>"$t/log-seal" ||
	fail "serve --once after the demo: exit $?"
"$fs" destroy --name "$name" >/dev/null || fail "destroy after the demo"
mkdir "$t/pristine" && cp -a "$wal"/wal-*.log "$t/pristine/" || fail "copy"
mapfile -t files < <(cd "$t/pristine" && ls wal-*.log)
[ ${#files[@]} -ge 3 ] || fail "want 3 WAL files, have ${#files[@]}"
start2=$(lsn_of "${files[1]}"); start3=$(lsn_of "${files[2]}")
orders_of "$t/pristine" | sort -n >"$t/ref.orders"
[ "$(wc -l <"$t/ref.orders")" -eq "$acked" ] || fail "$acked orders acked, $(wc -l <"$t/ref.orders") in the WAL"
E=$("$fs" wal dump --wal "$t/pristine" | tail -1 | cut -d' ' -f1)
fresh "$t/w-ref"
"$fs" create --name "$name" >/dev/null || fail "create (reference)"
recover "$t/w-ref" 2>"$t/log-ref" || fail "reference recover exit $?"
grep -q "snapshot LSN 0, $E records after it applied" "$t/log-ref" || fail "reference: not all $E applied"
status_of >"$t/ref.status" || fail "status (reference)"
"$fs" destroy --name "$name" >/dev/null

bad=$((start3 + (100000 - 64) / 104))
caught=0
if want 2; then
# ---- 2: a flipped byte inside the last file is corruption, not a torn tail ----
fresh "$t/w2"
last="$t/w2/${files[2]}"
flip "$last" 100000
sums "$t/w2" >"$t/w2.sums"
"$fs" wal verify --wal "$t/w2" >"$t/v2" 2>&1
rc=$?; cp "$t/v2" "$t/log-v2"
[ $rc -eq 1 ] || fail "2: wal verify exit $rc"
grep -q "recovery: CORRUPT: .*first bad LSN $bad .*valid records follow" "$t/v2" || fail "2: verify does not name LSN $bad"
grep -q -- "--accept-loss-after $((bad - 1))" "$t/v2" || fail "2: verify does not say what to accept"
"$fs" create --name "$name" >/dev/null || fail "2: create"
recover "$t/w2" 2>"$t/log-2a"
rc=$?; [ $rc -eq 1 ] || fail "2: --recover exit $rc"
grep -q "first bad LSN $bad .*valid records follow" "$t/log-2a" || fail "2: --recover does not name LSN $bad"
grep -q "nothing rebuilt, nothing cut" "$t/log-2a" || fail "2: --recover message"
sums "$t/w2" | cmp -s - "$t/w2.sums" || fail "2: --recover changed the WAL"
seg_empty || fail "2: the segment is not as it was"
no_tmp || fail "2: a temporary segment was left"
"$fs" serve --name "$name" --wal "$t/w2" --once --no-snapshot --reconcile-every 0 2>"$t/log-2b"
rc=$?; [ $rc -eq 2 ] || fail "2: plain serve of a new segment on the old, corrupt WAL exit $rc"
grep -q "another incarnation\|incarnation" "$t/log-2b" || fail "2: plain serve: the refusal does not name the incarnation"
sums "$t/w2" | cmp -s - "$t/w2.sums" || fail "2: plain serve cut the corrupt WAL"
recover "$t/w2" --accept-loss-after $((bad - 2)) 2>"$t/log-2c"
rc=$?; [ $rc -eq 1 ] || fail "2: a wrong --accept-loss-after exit $rc"
grep -q "the last LSN that can be kept is $((bad - 1))" "$t/log-2c" || fail "2: wrong LSN not explained"
sums "$t/w2" | cmp -s - "$t/w2.sums" || fail "2: a wrong --accept-loss-after changed the WAL"
recover "$t/w2" --accept-loss-after $((bad - 1)) 2>"$t/log-2d" || fail "2: --accept-loss-after exit $?"
grep -q "dropped LSN $bad\.\.$bad: unreadable" "$t/log-2d" || fail "2: the bad LSN not named dropped"
awk -v b="$bad" '$1 > b' "$t/ref.orders" >"$t/2.want-dropped"
sed -n 's/.*dropped LSN \([0-9]*\): order, order \([0-9]*\) .*/\1 \2/p' "$t/log-2d" | sort -n >"$t/2.dropped"
[ -s "$t/2.want-dropped" ] || fail "2: no order after LSN $bad?"
cmp -s "$t/2.want-dropped" "$t/2.dropped" || fail "2: dropped orders not listed exactly ($(wc -l <"$t/2.dropped") of $(wc -l <"$t/2.want-dropped"))"
awk -v b="$bad" '$1 < b' "$t/ref.orders" >"$t/2.want-kept"
orders_of "$t/w2" | sort -n | cmp -s - "$t/2.want-kept" || fail "2: orders before LSN $bad not all kept"
"$fs" wal verify --wal "$t/w2" >/dev/null || fail "2: the WAL after the accepted cut does not verify"
"$fs" destroy --name "$name" >/dev/null

fi

if want 4; then
# ---- 4: a failed --recover leaves nothing that sells ----
fresh "$t/w4"
flip "$t/w4/${files[0]}" 500000
sums "$t/w4" >"$t/w4.sums"
"$fs" create --name "$name" >/dev/null || fail "4: create"
for try in 1 2; do
	recover "$t/w4" 2>"$t/log-4-$try"
	rc=$?; [ $rc -eq 1 ] || fail "4: --recover #$try exit $rc"
	grep -q "first bad LSN $(( (500000 - 64) / 104 + 1 ))" "$t/log-4-$try" || fail "4: #$try does not name the bad LSN"
	grep -q "not empty" "$t/log-4-$try" && fail "4: #$try refused as not empty"
	seg_empty || fail "4: #$try left a half-built segment"
	no_tmp || fail "4: #$try left a temporary segment"
	sums "$t/w4" | cmp -s - "$t/w4.sums" || fail "4: #$try changed the WAL"
done
"$fs" destroy --name "$name" >/dev/null
# a segment created too small for the history: fails mid-rebuild
fresh "$t/w4b"
"$fs" create --name "$name" --orders 1000 >/dev/null || fail "4b: create"
recover "$t/w4b" 2>"$t/log-4b"
rc=$?; [ $rc -eq 1 ] || fail "4b: --recover exit $rc"
grep -q "cannot be applied" "$t/log-4b" \
	|| fail "4b: no clear error"
seg_empty || fail "4b: a half-built segment is left"
no_tmp || fail "4b: a temporary segment was left"
"$fs" destroy --name "$name" >/dev/null
# kill -9 during a rebuild, then a rebuild again: the same segment
fresh "$t/w4c"
for d in 0.01 0.02 0.04 0.08 0.15 0.3; do
	"$fs" destroy --name "$name" --force >/dev/null 2>&1 || "$fs" destroy --name "$name" >/dev/null 2>&1
	"$fs" create --name "$name" >/dev/null || fail "4c: create"
	"$fs" serve --name "$name" --wal "$t/w4c" --recover --once --no-snapshot --reconcile-every 0 \
		2>"$t/log-4c" &
	bgpid=$!
	sleep "$d"
	kill -9 "$bgpid" 2>/dev/null
	wait "$bgpid" 2>/dev/null
	bgpid=
	no_tmp || caught=$((caught + 1))
	# the same command again, whatever the kill left (an empty placeholder,
	# or the complete segment when it landed after the rename)
	recover "$t/w4c" 2>"$t/log-4c2" || fail "4c: --recover again after kill -9 at +$d s: exit $?"
	seg_empty && fail "4c: --recover again after kill -9 at +$d s left the segment empty"
	status_of >"$t/4c.status" || fail "4c: status after kill -9 at +$d s"
	diff "$t/ref.status" "$t/4c.status" >"$t/4c.diff" \
		|| fail "4c: after kill -9 at +$d s the segment is not the reference: $(head -5 "$t/4c.diff")"
	no_tmp || fail "4c: a temporary segment outlived the next rebuild"
	orders_of "$t/w4c" | sort -n | cmp -s - "$t/ref.orders" || fail "4c: orders lost from the WAL"
done
"$fs" destroy --name "$name" >/dev/null

fi

if want 11; then
# ---- 11: a missing WAL file is named, in verify and --recover ----
fresh "$t/w11a"
rm "$t/w11a/${files[0]}"
"$fs" wal verify --wal "$t/w11a" >"$t/v11a" 2>&1
rc=$?; cp "$t/v11a" "$t/log-v11a"
[ $rc -eq 1 ] || fail "11: verify with the first file missing exit $rc"
grep -q "MISSING: .*missing LSN 1\.\.$((start2 - 1)).*${files[0]}" "$t/v11a" || fail "11: verify does not name LSN 1..$((start2 - 1))"
"$fs" create --name "$name" >/dev/null || fail "11: create"
recover "$t/w11a" 2>"$t/log-11a"
rc=$?; [ $rc -eq 1 ] || fail "11: --recover exit $rc"
grep -q "missing LSN 1\.\.$((start2 - 1))" "$t/log-11a" || fail "11: --recover does not name the missing range"
seg_empty || fail "11: a half-built segment is left"
no_tmp || fail "11: a temporary segment was left"
# ... also when the last file has a torn tail as well (the usual state after a crash)
fresh "$t/w11c"
rm "$t/w11c/${files[0]}"
head -c 64 /dev/urandom | dd of="$t/w11c/${files[2]}" bs=1 seek=$((64 + (E - start3) * 104 + 40)) \
	conv=notrunc 2>/dev/null
"$fs" wal verify --wal "$t/w11c" >"$t/v11c" 2>&1
rc=$?; cp "$t/v11c" "$t/log-v11c"
[ $rc -eq 1 ] || fail "11: verify (first file missing, torn tail) exit $rc"
grep -q "MISSING: .*missing LSN 1\.\.$((start2 - 1))" "$t/v11c" || fail "11: verify names the tail, not the missing start"
fresh "$t/w11b"
rm "$t/w11b/${files[1]}"
sums "$t/w11b" >"$t/w11b.sums"
"$fs" wal verify --wal "$t/w11b" >"$t/v11b" 2>&1
rc=$?; cp "$t/v11b" "$t/log-v11b"
[ $rc -eq 1 ] || fail "11: verify with a middle file missing exit $rc"
grep -q "MISSING: .*missing LSN $start2\.\.$((start3 - 1)).*${files[1]}" "$t/v11b" || fail "11: verify does not name the middle range"
recover "$t/w11b" 2>"$t/log-11b"
rc=$?; [ $rc -eq 1 ] || fail "11: --recover (middle) exit $rc"
grep -q "missing LSN $start2\.\.$((start3 - 1))" "$t/log-11b" || fail "11: --recover does not name the middle range"
seg_empty || fail "11: (middle) a half-built segment is left"
no_tmp || fail "11: (middle) a temporary segment was left"
sums "$t/w11b" | cmp -s - "$t/w11b.sums" || fail "11: (middle) the WAL changed"
"$fs" destroy --name "$name" >/dev/null

fi

if want 7; then
# ---- a snapshot newer than the WAL ----
fresh "$t/w7src"
"$fs" create --name "$name" >/dev/null || fail "7: create"
recover "$t/w7src" 2>"$t/log-7a" || fail "7: recover exit $?"
"$fs" load --name "$name" --activity 77 --sku 1 --units 30 --sku 2 --units 4 >/dev/null || fail "7: load"
"$fs" serve --name "$name" --wal "$t/w7src" --once --reconcile-every 0 2>"$t/log-7b" || fail "7: serve --once"
snap=$(ls "$t/w7src"/snap-*.fss | tail -1)
L=$(( 16#$(basename "$snap" | cut -c6-21) ))
[ "$L" -eq $((E + 3)) ] || fail "7: snapshot at $L, want $((E + 3))"
"$fs" destroy --name "$name" >/dev/null
fresh "$t/w7"
cp "$snap" "$t/w7/"
sums "$t/w7" >"$t/w7.sums"
"$fs" wal verify --wal "$t/w7" >"$t/v7" 2>&1
rc=$?; cp "$t/v7" "$t/log-v7"
[ $rc -eq 1 ] || fail "7: verify exit $rc"
grep -q "(LSN $L) is past the end of the WAL (LSN $E)" "$t/v7" || fail "7: verify does not say so"
recover "$t/w7" 2>"$t/log-7c"
rc=$?; [ $rc -eq 1 ] || fail "7: --recover exit $rc"
grep -q "(LSN $L) is past the end of the WAL (LSN $E)" "$t/log-7c" || fail "7: --recover does not say so"
grep -q -- "--accept-loss-after $E" "$t/log-7c" || fail "7: --recover does not say what to accept"
"$fs" status --name "$name" >/dev/null 2>&1 && fail "7: a segment was made"
no_tmp || fail "7: a temporary segment was left"
sums "$t/w7" | cmp -s - "$t/w7.sums" || fail "7: the WAL directory changed"
"$fs" create --name "$name" >/dev/null || fail "7: create 2"
recover "$t/w7" --accept-loss-after "$E" 2>"$t/log-7d" || fail "7: --accept-loss-after exit $?"
grep -q "set aside" "$t/log-7d" || fail "7: the snapshot was not set aside"
ls "$t/w7"/snap-*.fss >/dev/null 2>&1 && fail "7: the snapshot past the end is still used"
status_of | diff "$t/ref.status" - >"$t/7.diff" || fail "7: not the reference: $(head -5 "$t/7.diff")"
orders_of "$t/w7" | sort -n | cmp -s - "$t/ref.orders" || fail "7: orders lost from the WAL"
"$fs" destroy --name "$name" >/dev/null

fi

if want 8; then
# ---- disk full during recovery ----
# a torn tail (the last frame half written) cut on a full disk
fresh "$t/w8"
off=$((64 + (E - start3) * 104 + 40))
head -c 64 /dev/urandom | dd of="$t/w8/${files[2]}" bs=1 seek="$off" conv=notrunc 2>/dev/null
"$fs" create --name "$name" >/dev/null || fail "8: create"
with_full "$t/w8/" "$fs" serve --name "$name" --wal "$t/w8" --recover --once --no-snapshot \
	--reconcile-every 0 2>"$t/log-8a" || fail "8: --recover of a torn tail on a full disk exit $?"
grep -q "torn tail at LSN $E " "$t/log-8a" || fail "8: the torn tail not named"
awk -v b="$E" '$1 < b' "$t/ref.orders" >"$t/8.want"
orders_of "$t/w8" | sort -n | cmp -s - "$t/8.want" || fail "8: orders before the torn tail lost"
"$fs" wal verify --wal "$t/w8" >/dev/null || fail "8: the cut WAL does not verify"
"$fs" destroy --name "$name" >/dev/null
# no room in /dev/shm for the rebuild
fresh "$t/w9"
sums "$t/w9" >"$t/w9.sums"
"$fs" create --name "$name" >/dev/null || fail "9: create"
with_full "/dev/shm/$base.recover-" "$fs" serve --name "$name" --wal "$t/w9" --recover --once \
	--no-snapshot --reconcile-every 0 2>"$t/log-9a"
rc=$?; [ $rc -eq 1 ] || fail "9: --recover with /dev/shm full exit $rc"
grep -q "no room in /dev/shm" "$t/log-9a" || fail "9: no clear error"
seg_empty || fail "9: the segment is not as it was"
no_tmp || fail "9: a temporary segment was left"
sums "$t/w9" | cmp -s - "$t/w9.sums" || fail "9: the WAL changed"
recover "$t/w9" 2>"$t/log-9b" || fail "9: --recover once there is room: exit $?"
status_of | diff "$t/ref.status" - >"$t/9.diff" || fail "9: not the reference: $(head -5 "$t/9.diff")"
"$fs" destroy --name "$name" >/dev/null

fi

echo "ok: $acked acknowledged orders, WAL LSN 1..$E in ${#files[@]} files;"
echo "    corruption at LSN $bad refused (verify, --recover, serve), accepted by LSN with every"
echo "    dropped order named; failed and killed rebuilds left nothing ($caught of 6 kills mid-build);"
echo "    missing files, a snapshot past the end, a full disk and a full /dev/shm handled"
