#!/bin/bash
# ops_fifo.sh FLASHSTOCK OPS_SYNC_BUYER -- issue 20, items 4 and 5, through
# the real commands: a file of a WAL directory that is not a regular file,
# and standard output that cannot be written.
#
#   wal_file_fifo_refused_by_verify_dump_and_serve    (item 4: each used to
#       block in open() for ever)
#   wal_file_directory_refused_naming_its_type
#   durable_and_lock_fifo_refused_by_serve            (DURABLE, LOCK)
#   snapshot_fifo_refused_by_snapshots_and_recover    (serve --recover used to
#       block and ignore SIGTERM; wal snapshots to block)
#   feed_position_fifo_refused                        (DIR/feed/NAME.pos)
#   load_csv_from_a_pipe_still_reads_it               (a FIFO with a writer is
#       a fine CSV source: only WAL directory files must be regular)
#   output_to_full_device_fails_saying_so             (item 5: wal dump,
#       wal verify, wal snapshots, status, --help to /dev/full: exit 1 and
#       "write error on standard output")
#
# One WAL is made first (a daemon, five orders, its snapshot at the stop, a
# feed consumer); each case works on a copy with one file replaced by a FIFO
# and asserts the exit code, the message naming the file and its type, that
# the command returned by itself (every command runs under `timeout`: a
# hang is a failure, not a hung test), and that nothing in the copy changed.
# Every case runs; the script exits 1 if any failed.
set -u
F=${1:?usage: ops_fifo.sh path/to/flashstock path/to/ops_sync_buyer [case...]}
BUYER=${2:?usage: ops_fifo.sh path/to/flashstock path/to/ops_sync_buyer [case...]}
shift 2
T=$(mktemp -d "${TMPDIR:-/tmp}/flash-opsfifo-XXXXXX")
PREFIX=fs-fifo-$$-$RANDOM
SEG=$PREFIX-w        # the segment the WAL belongs to
EMPTY=$PREFIX-e      # an empty segment for serve --recover
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	"$F" destroy --name "$SEG" --force >/dev/null 2>&1 || "$F" destroy --name "$SEG" >/dev/null 2>&1
	"$F" destroy --name "$EMPTY" --force >/dev/null 2>&1 || "$F" destroy --name "$EMPTY" >/dev/null 2>&1
	rm -f /dev/shm/"$PREFIX"-*
	rm -rf "$T"
}
trap cleanup EXIT

FAILED=0
CASE=""
fail() { echo "FAIL [$CASE]: $*" >&2; FAILED=$((FAILED + 1)); return 1; }
has() {
	grep -qF -- "$2" "$1" && return 0
	echo "--- $1:" >&2; cat "$1" >&2
	fail "missing: $2"
}
small="--activities 8 --skus 16 --shards 32 --users 4096 --orders 8192 --tokens 64 --requests 64
--locks 8 --procs 8 --ring 1024"
# bounded RC_VAR OUTFILE cmd...: run cmd with stdout and stderr to OUTFILE,
# for 10 s at most (then SIGTERM, and SIGKILL 2 s later: a command
# that blocks and ignores SIGTERM still ends).  A command that had to be
# stopped fails the case; RC_VAR gets its exit code.
bounded() {
	local _var=$1 _out=$2 _rc
	shift 2
	timeout -k 2 10 "$@" >"$_out" 2>&1
	_rc=$?
	printf -v "$_var" '%s' "$_rc"
	if [ "$_rc" = 124 ] || [ "$_rc" = 137 ]; then
		fail "blocked: '${*:1:3} ...' did not return within 10 s (exit $_rc: stopped by timeout)"
		return 1
	fi
	return 0
}
# sums DIR: checksums of the regular files of DIR and their names and types
sums() { (cd "$1" && find . -type f -exec md5sum {} + | sort; find . ! -type f | sort); }
# fifo_copy DIR REL: DIR is a copy of the WAL with file REL replaced by a FIFO
fifo_copy() {
	rm -rf "$1"; cp -a "$T/wal" "$1" || return 1
	rm -f "$1/$2"; mkfifo "$1/$2" || { fail "mkfifo $1/$2"; return 1; }
	sums "$1" >"$1.sums"
}
unchanged() { sums "$1" | cmp -s - "$1.sums" || fail "$1 changed: $(sums "$1" | diff "$1.sums" - | head -5)"; }
# serve's options for one pass, no snapshot, no MySQL
once="--once --no-snapshot --reconcile-every 0"

# ---- the WAL every case copies --------------------------------------------------
setup() {
	"$F" create --name "$SEG" $small >/dev/null || return 1
	"$F" create --name "$EMPTY" $small >/dev/null || return 1
	"$F" load --name "$SEG" --activity 1 --sku 1 --units 100 >/dev/null || return 1
	"$F" serve --name "$SEG" --wal "$T/wal" --reconcile-every 0 2>"$T/serve.log" &
	local sp=$! i
	PIDS+=("$sp")
	for ((i = 0; i < 200; i++)); do
		grep -q "serving segment" "$T/serve.log" && break
		sleep 0.05
	done
	"$BUYER" "$SEG" 1 1 1 5 0 0 0 >"$T/buy.out" 2>&1 || { cat "$T/buy.out"; return 1; }
	kill -TERM "$sp"
	wait "$sp" || { cat "$T/serve.log"; return 1; }
	timeout 10 "$F" feed --wal "$T/wal" --consumer c1 --from-start >/dev/null || return 1
	WALF=wal-0000000000000001.log
	SNAPF=$(cd "$T/wal" && ls snap-*.fss | tail -1)
	[ -f "$T/wal/$WALF" ] && [ -n "$SNAPF" ] && [ -f "$T/wal/feed/c1.pos" ] &&
		[ -f "$T/wal/DURABLE" ] && [ -f "$T/wal/LOCK" ] || { ls -lR "$T/wal"; return 1; }
}

# ---- item 4: a FIFO named as a WAL file ------------------------------------------
wal_file_fifo_refused_by_verify_dump_and_serve() {
	local d=$T/c-wal rc
	fifo_copy "$d" "$WALF" || return 1
	local want="$d/$WALF is a FIFO, not a regular file"
	bounded rc "$T/a1.err" "$F" wal verify --wal "$d" || return 1
	[ "$rc" = 1 ] || fail "wal verify: exit $rc, want 1"
	has "$T/a1.err" "$want" || return 1
	bounded rc "$T/a2.err" "$F" wal verify --wal "$d" --truncate || return 1
	[ "$rc" = 1 ] || fail "wal verify --truncate: exit $rc, want 1"
	has "$T/a2.err" "$want" || return 1
	bounded rc "$T/a3.err" "$F" wal dump --wal "$d" || return 1
	[ "$rc" = 1 ] || fail "wal dump: exit $rc, want 1"
	has "$T/a3.err" "$want" || return 1
	bounded rc "$T/a4.err" "$F" serve --name "$SEG" --wal "$d" $once || return 1
	[ "$rc" = 1 ] || fail "serve: exit $rc, want 1"
	has "$T/a4.err" "$want" || return 1
	bounded rc "$T/a5.err" "$F" serve --name "$EMPTY" --wal "$d" --recover $once || return 1
	[ "$rc" = 1 ] || fail "serve --recover: exit $rc, want 1"
	has "$T/a5.err" "$want" || return 1
	[ -p "$d/$WALF" ] || fail "the FIFO was removed or replaced"
	unchanged "$d"
}

# A directory has the name of a WAL file: refused, saying it is a directory.
wal_file_directory_refused_naming_its_type() {
	local d=$T/c-dir rc
	rm -rf "$d"; cp -a "$T/wal" "$d" || return 1
	rm -f "$d/$WALF"; mkdir "$d/$WALF"
	sums "$d" >"$d.sums"
	bounded rc "$T/b1.err" "$F" wal verify --wal "$d" || return 1
	[ "$rc" = 1 ] || fail "wal verify: exit $rc, want 1"
	has "$T/b1.err" "$d/$WALF is a directory, not a regular file" || return 1
	unchanged "$d"
}

durable_and_lock_fifo_refused_by_serve() {
	local f d rc
	for f in DURABLE LOCK; do
		d=$T/c-$f
		fifo_copy "$d" "$f" || return 1
		bounded rc "$T/c-$f.err" "$F" serve --name "$SEG" --wal "$d" $once || return 1
		[ "$rc" = 1 ] || fail "serve with $f a FIFO: exit $rc, want 1"
		has "$T/c-$f.err" "$d/$f is a FIFO, not a regular file" || return 1
		[ -p "$d/$f" ] || fail "the FIFO $f was removed or replaced"
		unchanged "$d"
	done
}

# ---- item 4: a FIFO named as the newest snapshot ---------------------------------
snapshot_fifo_refused_by_snapshots_and_recover() {
	local d=$T/c-snap rc
	fifo_copy "$d" "$SNAPF" || return 1
	local want="$d/$SNAPF is a FIFO, not a regular file"
	bounded rc "$T/d1.out" "$F" wal snapshots --wal "$d" || return 1
	[ "$rc" = 1 ] || fail "wal snapshots: exit $rc, want 1"
	has "$T/d1.out" "$want" || return 1
	bounded rc "$T/d2.out" "$F" wal verify --wal "$d" || return 1
	[ "$rc" = 1 ] || fail "wal verify: exit $rc, want 1"
	has "$T/d2.out" "$want" || return 1
	# it used to block in open() with SIGTERM ignored: under `timeout` a
	# hang ends in SIGKILL (exit 137), reported by bounded()
	bounded rc "$T/d3.err" "$F" serve --name "$EMPTY" --wal "$d" --recover $once || return 1
	[ "$rc" = 1 ] || fail "serve --recover: exit $rc, want 1"
	has "$T/d3.err" "$want" || return 1
	"$F" status --name "$EMPTY" --json >"$T/d3.status" 2>&1
	has "$T/d3.status" '"activities":[],"skus":[]' || return 1
	[ -p "$d/$SNAPF" ] || fail "the FIFO was removed or replaced"
	unchanged "$d"
}

feed_position_fifo_refused() {
	local d=$T/c-feed rc
	fifo_copy "$d" feed/c1.pos || return 1
	bounded rc "$T/e1.err" "$F" feed --wal "$d" --consumer c1 || return 1
	[ "$rc" = 1 ] || fail "feed: exit $rc, want 1"
	has "$T/e1.err" "$d/feed/c1.pos is a FIFO, not a regular file" || return 1
	[ -p "$d/feed/c1.pos" ] || fail "the FIFO was removed or replaced"
	unchanged "$d"
}

# A CSV read from a FIFO (with a writer) is not a WAL directory's file: it
# loads as before.
load_csv_from_a_pipe_still_reads_it() {
	local p=$T/csv.fifo rc
	mkfifo "$p"
	local head=activity_id,sku_id,units,shards,start,end,limit,max_qty,scope,cancel_returns_quota,token_required,day_offset_s
	printf '%s\n7,1,70,,,,,,,,,\n7,2,20,,,,,,,,,\n' "$head" >"$p" &
	local wp=$!
	PIDS+=("$wp")
	bounded rc "$T/f1.err" "$F" load --name "$SEG" --csv "$p" || return 1
	wait "$wp"
	[ "$rc" = 0 ] || { cat "$T/f1.err" >&2; fail "load --csv FIFO: exit $rc, want 0"; return 1; }
	printf '%s\n8,1,80,,,,,,,,,\n' "$head" |
		timeout -k 2 10 "$F" load --name "$SEG" --csv - >/dev/null 2>"$T/f2.err"; rc=$?
	[ "$rc" = 0 ] || { cat "$T/f2.err" >&2; fail "load --csv - from a pipe: exit $rc, want 0"; return 1; }
	"$F" status --name "$SEG" --json >"$T/f.status" || { fail "status"; return 1; }
	has "$T/f.status" '{"activity_id":7,"sku_id":2,"shards":1,"total":20,' || return 1
	has "$T/f.status" '{"activity_id":8,"sku_id":1,"shards":1,"total":80,' || return 1
}

# ---- item 5: output that cannot be written ----------------------------------------
output_to_full_device_fails_saying_so() {
	[ -w /dev/full ] || { echo "  (no /dev/full: skipped)"; return 0; }
	local rc what
	while read -r what; do
		# shellcheck disable=SC2086
		timeout -k 2 10 "$F" $what >/dev/full 2>"$T/g.err"; rc=$?
		[ "$rc" = 1 ] || fail "$what >/dev/full: exit $rc, want 1"
		has "$T/g.err" "flashstock: ${what%% *}: write error on standard output: No space left on device" ||
			return 1
	done <<EOF
wal dump --wal $T/wal
wal verify --wal $T/wal
wal verify --wal $T/wal --json
wal snapshots --wal $T/wal
status --name $SEG --json
status --name $SEG
feed --list --wal $T/wal
EOF
	timeout -k 2 10 "$F" --help >/dev/full 2>"$T/g.err"; rc=$?
	[ "$rc" = 1 ] || fail "--help >/dev/full: exit $rc, want 1"
	has "$T/g.err" "flashstock: write error on standard output: No space left on device" || return 1
}

ALL="wal_file_fifo_refused_by_verify_dump_and_serve wal_file_directory_refused_naming_its_type
durable_and_lock_fifo_refused_by_serve snapshot_fifo_refused_by_snapshots_and_recover
feed_position_fifo_refused load_csv_from_a_pipe_still_reads_it output_to_full_device_fails_saying_so"
CASE=setup
setup || { fail "making the WAL: $(tail -5 "$T/serve.log" 2>/dev/null)"; exit 1; }
for CASE in ${*:-$ALL}; do
	before=$FAILED
	"$CASE"
	[ "$FAILED" = "$before" ] && echo "ok   $CASE" || echo "FAIL $CASE"
done
[ "$FAILED" = 0 ] || { echo "$FAILED check(s) failed" >&2; exit 1; }
echo "all FIFO and output-error cases passed"
