#!/bin/bash
# ops_misc.sh FLASHSTOCK OPS_BUYER -- operator mistakes through the real
# commands: each case asserts the exit code, the message, and that nothing
# was changed or left behind.
#
#   create_too_big_fails_enomem_saying_bytes_needed   (issue 10, item 5)
#   load_all_or_nothing_engine_ranges                 (item 6)
#   mysql_url_secret_never_printed                    (item 7)
#   group_member_attaches_0660_segment                (item 8)
#   mysql_down_backs_off_in_daemon_log_format         (item 9)
#   attach_refuses_fifo_without_blocking              (item 10)
#   sync_wait_bounded_fate_unknown_then_durable       (item 12)
#   messages_say_why_and_exit_2                       (item 13)
#   reconcile_bad_mysql_url_exit_2_masked             (item 13: every command
#       taking --mysql refuses a malformed URL as serve does)
#   status_and_wal_verify_show_the_identity           (identity: incarnation,
#       LSN reflected, the daemon holding the claim)
#   mysql_unknown_database_refused_unless_create_db   (item 13; needs the
#       MariaDB fixture: ctest ops_mysql_database runs it alone)
#
# Every case runs (one failing does not hide the next); the script exits 1
# if any failed.  Segment names carry the pid so parallel runs never meet.
set -u
F=${1:?usage: ops_misc.sh path/to/flashstock path/to/ops_sync_buyer [case...]}
BUYER=${2:?usage: ops_misc.sh path/to/flashstock path/to/ops_sync_buyer [case...]}
shift 2
T=$(mktemp -d)
chmod 755 "$T"
PREFIX=fs-ops-$$-$RANDOM
SEGS=()
PIDS=()
OPS_USER=""
OPS_GROUP=""
OPS_OTHER=""

cleanup() {
	local p s
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	for s in "${SEGS[@]}"; do
		"$F" destroy --name "$s" --force >/dev/null 2>&1 || "$F" destroy --name "$s" >/dev/null 2>&1
		rm -f "/dev/shm/$s"
	done
	local i
	for i in 1 2 3 4 5 6 7 8; do
		{ [ -z "$OPS_USER" ] || ! id "$OPS_USER" >/dev/null 2>&1 || userdel "$OPS_USER"; } &&
		{ [ -z "$OPS_OTHER" ] || ! id "$OPS_OTHER" >/dev/null 2>&1 || userdel "$OPS_OTHER"; } &&
		{ [ -z "$OPS_GROUP" ] || ! getent group "$OPS_GROUP" >/dev/null || groupdel "$OPS_GROUP"; } &&
		break
		sleep 0.25
	done >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT

FAILED=0
CASE=""
# fail WHY: the current case failed; the case function returns after it.
fail() { echo "FAIL [$CASE]: $*" >&2; FAILED=$((FAILED + 1)); return 1; }
# has FILE STRING: the file contains the exact string (shows the file if not)
has() {
	grep -qF -- "$2" "$1" && return 0
	echo "--- $1:" >&2; cat "$1" >&2
	fail "missing: $2"
}
# hasnt FILE STRING
hasnt() {
	grep -qF -- "$2" "$1" || return 0
	echo "--- $1:" >&2; cat "$1" >&2
	fail "must not contain: $2"
}
# again CMD...: run CMD, retrying a few times while it fails (lock files)
again() {
	local i
	for ((i = 0; i < 20; i++)); do
		"$@" 2>"$T/again.err" && return 0
		sleep 0.25
	done
	cat "$T/again.err" >&2
	return 1
}
# newseg VAR SUFFIX: set VAR to a unique segment name, removed at the end
# (no command substitution: the name must be remembered by this shell)
newseg() { printf -v "$1" '%s' "$PREFIX-$2"; SEGS+=("$PREFIX-$2"); }
# small: capacities of a small segment
small() { echo --activities 8 --skus 16 --shards 32 --users 4096 --orders 8192 --tokens 64 \
              --requests 64 --locks 8 --procs 8 --ring 1024; }
# wait_for FILE STRING SECONDS: until the file holds the string
wait_for() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "--- $1:" >&2; cat "$1" >&2 2>/dev/null
	fail "no '$2' in $1 after $3 s"
}
# log_format_ok FILE: every line is '<UTC ms time> serve [<level>] <message>'
log_format_ok() {
	local bad
	bad=$(grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z serve \[(error|warn|info|debug)\] ' "$1")
	[ "$bad" = 0 ] && return 0
	grep -vE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z serve \[(error|warn|info|debug)\] ' "$1" |
		head -5 >&2
	fail "$bad line(s) of $1 not in the daemon's log format"
}

# ---- item 5 ------------------------------------------------------------------
# A segment larger than free /dev/shm: create fails with FLASH_ENOMEM and
# says how many bytes it needed and how many were free; no name is left.
# 4095 rings of 2^24 records need terabytes: more than /dev/shm has free on
# any machine this runs on, whatever else is running.
create_too_big_fails_enomem_saying_bytes_needed() {
	local n; newseg n big
	"$F" create --name "$n" --procs 4095 --ring 16777216 >"$T/big.out" 2>"$T/big.err"; local rc=$?
	[ -e "/dev/shm/$n" ] && { "$F" destroy --name "$n" --force >/dev/null 2>&1 || "$F" destroy --name "$n" >/dev/null 2>&1; fail "segment $n left behind"; return 1; }
	[ $rc = 1 ] || { cat "$T/big.err" >&2; fail "exit $rc, want 1"; return 1; }
	has "$T/big.err" "$(echo "flashstock: create $n: out of memory")" || return 1
	local need free
	need=$(grep -oE 'needs [0-9]+ bytes' "$T/big.err" | grep -oE '[0-9]+')
	free=$(grep -oE '/dev/shm has [0-9]+ bytes free' "$T/big.err" | grep -oE '[0-9]+')
	[ -n "$need" ] && [ -n "$free" ] || { cat "$T/big.err" >&2; fail "no 'needs N bytes, /dev/shm has M bytes free'"; return 1; }
	[ "$need" -gt "$free" ] || fail "needs $need <= free $free"
	"$F" status --name "$n" >/dev/null 2>"$T/big.st"; rc=$?
	[ $rc = 1 ] || fail "status after the failed create: exit $rc"
	has "$T/big.st" "no such segment"
}

# ---- item 6 ------------------------------------------------------------------
# A valid activity row, then a row the engine would refuse (day_offset_s
# 86400): exit 2 naming line and column, and nothing loaded -- the first
# activity is not there either.  The flag path says the same range.
load_all_or_nothing_engine_ranges() {
	local n; newseg n load
	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	"$F" status --name "$n" --json >"$T/l.before" || { fail "status"; return 1; }
	{
		echo "activity_id,sku_id,units,shards,start,end,limit,max_qty,scope,cancel_returns_quota,token_required,day_offset_s"
		echo "21,1,100,1,now,+3600,1,1,activity,0,0,0"
		echo "22,1,100,1,now,+3600,1,1,day,0,0,86400"
	} >"$T/l.csv"
	"$F" load --name "$n" --csv "$T/l.csv" >"$T/l.out" 2>"$T/l.err"; local rc=$?
	[ $rc = 2 ] || { cat "$T/l.err" >&2; fail "csv: exit $rc, want 2"; }
	has "$T/l.err" "$T/l.csv:3: column 12 (day_offset_s):" || return 1
	has "$T/l.err" "-86399, 86399" || return 1
	has "$T/l.err" "nothing was loaded" || return 1
	"$F" status --name "$n" --json >"$T/l.after" || { fail "status"; return 1; }
	cmp -s "$T/l.before" "$T/l.after" || { diff "$T/l.before" "$T/l.after" >&2; fail "segment changed"; return 1; }
	"$F" load --name "$n" --activity 23 --day-offset -86400 --sku 1 --units 5 >/dev/null 2>"$T/l.ferr"; rc=$?
	[ $rc = 2 ] || fail "flags: exit $rc, want 2"
	has "$T/l.ferr" "--day-offset: -86400 is out of range [-86399, 86399]" || return 1
	"$F" load --help >"$T/l.help"
	has "$T/l.help" "-86399..86399" || return 1
	# max_qty: the WAL record holds 16 bits, so the engine takes 1..65535
	"$F" load --name "$n" --activity 24 --max-qty 65536 --sku 1 --units 5 >/dev/null 2>"$T/l.qerr"; rc=$?
	[ $rc = 2 ] || fail "max-qty 65536: exit $rc, want 2"
	has "$T/l.qerr" "--max-qty: 65536 is out of range [1, 65535]" || return 1
	"$F" status --name "$n" --json >"$T/l.after2"
	cmp -s "$T/l.before" "$T/l.after2" || { diff "$T/l.before" "$T/l.after2" >&2; fail "segment changed by a refused flag load"; }
}

# ---- item 7 ------------------------------------------------------------------
# A password with '/' (not percent-encoded) in a malformed URL: the message
# shows neither the password nor the user, exit 2, no WAL directory made.
mysql_url_secret_never_printed() {
	local n; newseg n url
	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	"$F" serve --name "$n" --wal "$T/url-wal" --no-snapshot --reconcile-every 0 \
		--mysql "mysql://flash:s3/cr3t@localhost/db?socket=$T/none.sock" >"$T/u.out" 2>"$T/u.err"; local rc=$?
	hasnt "$T/u.err" "cr3t" || return 1
	hasnt "$T/u.err" "flash:" || return 1
	has "$T/u.err" "mysql://***@" || return 1
	[ $rc = 2 ] || fail "exit $rc, want 2"
	[ -e "$T/url-wal" ] && fail "the WAL directory was created"
	return 0
}

# ---- item 8 ------------------------------------------------------------------
# A 0660 segment created with --group G: a member of G (a real unprivileged
# user made here) reads it with status and places an order through
# flash_open(); a user outside G is refused.
group_member_attaches_0660_segment() {
	OPS_GROUP=fsog$$
	OPS_USER=fsou$$
	OPS_OTHER=fsox$$
	# other tests add users at the same time: /etc/passwd may be locked a moment
	again groupadd "$OPS_GROUP" || { fail "groupadd"; return 1; }
	again useradd -M -N -g "$OPS_GROUP" -s /bin/sh "$OPS_USER" || { fail "useradd"; return 1; }
	again useradd -M -N -s /bin/sh "$OPS_OTHER" || { fail "useradd"; return 1; }
	local n; newseg n grp
	"$F" create --name "$n" $(small) --mode 0660 --group "$OPS_GROUP" >/dev/null || { fail "create"; return 1; }
	"$F" load --name "$n" --activity 1 --sku 1 --units 10 >/dev/null || { fail "load"; return 1; }
	setpriv --reuid="$OPS_USER" --regid="$OPS_GROUP" --init-groups \
		"$F" status --name "$n" >"$T/g.out" 2>"$T/g.err"; local rc=$?
	[ $rc = 0 ] || { cat "$T/g.err" >&2; fail "status as a member of the group: exit $rc"; return 1; }
	setpriv --reuid="$OPS_USER" --regid="$OPS_GROUP" --init-groups \
		"$BUYER" "$n" 1 1 7 1 0 0 0 >"$T/g.buy" 2>&1
	has "$T/g.buy" "FLASH_OK order=" || return 1
	"$F" status --name "$n" --json >"$T/g.json"
	has "$T/g.json" '"total":10,"available":9,"sold":1' || return 1
	setpriv --reuid="$OPS_OTHER" --regid=nogroup --init-groups \
		"$F" status --name "$n" >/dev/null 2>"$T/g.oerr"; rc=$?
	[ $rc = 1 ] || fail "status as a user outside the group: exit $rc, want 1"
}

# ---- item 9 ------------------------------------------------------------------
# MariaDB down (a socket with no server) while orders flow: the applier's
# reconnects back off (a bounded number in ~3 s plus the stop's drain),
# every stderr line is in the daemon's format, no bogus row count.
mysql_down_backs_off_in_daemon_log_format() {
	local n; newseg n down
	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	"$F" load --name "$n" --activity 1 --sku 1 --units 100000 >/dev/null || { fail "load"; return 1; }
	"$F" serve --name "$n" --wal "$T/down-wal" --no-snapshot --reconcile-every 0 \
		--mysql "mysql://root@localhost/flashstock?socket=$T/no-server.sock" 2>"$T/d.err" &
	local sp=$!; PIDS+=("$sp")
	wait_for "$T/d.err" "MySQL applier started" 10 || return 1
	"$BUYER" "$n" 1 1 1000 4000 0 3 0 >"$T/d.buy" 2>&1
	kill -TERM "$sp"; wait "$sp"; local rc=$?
	[ $rc = 0 ] || fail "serve exit $rc, want 0"
	local orders attempts
	orders=$(grep -c '^FLASH_OK ' "$T/d.buy")
	attempts=$(grep -c 'connect to .* failed' "$T/d.err")
	echo "mysql down: $orders orders, $attempts connect attempts, $(wc -l <"$T/d.err") log lines" >&2
	[ -n "${OPS_VERBOSE:-}" ] && cat "$T/d.err" >&2
	[ "$orders" -gt 100 ] || fail "only $orders orders were placed"
	[ "$attempts" -ge 2 ] || fail "$attempts connect attempts: the applier did not retry"
	[ "$attempts" -le 40 ] || fail "$attempts connect attempts in ~11 s: no backoff"
	hasnt "$T/d.err" "18446744073709551615" || return 1
	log_format_ok "$T/d.err"
}

# ---- item 10 -----------------------------------------------------------------
# A FIFO planted under a segment's name: status, load and a writer's
# flash_open() refuse it at once, saying it is not a regular file.
attach_refuses_fifo_without_blocking() {
	local n; newseg n fifo
	mkfifo "/dev/shm/$n" || { fail "mkfifo"; return 1; }
	timeout 5 "$F" status --name "$n" >/dev/null 2>"$T/f.err"; local rc=$?
	[ $rc = 124 ] && { fail "status blocked on the FIFO"; return 1; }
	[ $rc = 1 ] || fail "status: exit $rc, want 1"
	has "$T/f.err" "not a regular file" || return 1
	timeout 5 "$F" load --name "$n" --activity 1 --sku 1 --units 1 >/dev/null 2>"$T/f.lerr"; rc=$?
	[ $rc = 1 ] || fail "load: exit $rc, want 1"
	has "$T/f.lerr" "not a regular file" || return 1
	timeout 5 "$BUYER" "$n" 1 1 1 1 0 0 0 >/dev/null 2>"$T/f.berr"; rc=$?
	[ $rc = 1 ] || fail "flash_open: exit $rc, want 1"
	has "$T/f.berr" "not a regular file" || return 1
	[ -p "/dev/shm/$n" ] || fail "the FIFO was removed or replaced"
	rm -f "/dev/shm/$n"
}

# ---- item 12 -----------------------------------------------------------------
# Sync durability with the daemon stopped (SIGSTOP): an order returns
# FLASH_EFATE_UNKNOWN with its order number once its wait bound passes;
# after SIGCONT the same handle learns it is durable, and the WAL holds it.
sync_wait_bounded_fate_unknown_then_durable() {
	local n; newseg n sync
	"$F" create --name "$n" $(small) --durability sync >/dev/null || { fail "create"; return 1; }
	"$F" load --name "$n" --activity 1 --sku 1 --units 100 >/dev/null || { fail "load"; return 1; }
	"$F" serve --name "$n" --wal "$T/sync-wal" --no-snapshot --reconcile-every 0 2>"$T/s.err" &
	local sp=$!; PIDS+=("$sp")
	wait_for "$T/s.err" "serving segment" 10 || return 1
	"$BUYER" "$n" 1 1 1 1 500 0 0 >"$T/s.first" 2>&1
	has "$T/s.first" "FLASH_OK order=" || return 1
	kill -STOP "$sp"
	"$BUYER" "$n" 1 1 2 1 500 0 1 >"$T/s.buy" 2>&1 &
	local bp=$!; PIDS+=("$bp")
	wait_for "$T/s.buy" "FLASH_EFATE_UNKNOWN order=" 30 || { kill -CONT "$sp"; return 1; }
	kill -CONT "$sp"
	wait "$bp"
	local ono
	ono=$(grep -oE 'FLASH_EFATE_UNKNOWN order=[0-9]+' "$T/s.buy" | grep -oE '[0-9]+$')
	[ -n "$ono" ] && [ "$ono" != 0 ] || { fail "no order number with FLASH_EFATE_UNKNOWN"; return 1; }
	has "$T/s.buy" "after-wait FLASH_OK order=$ono" || return 1
	kill -TERM "$sp"; wait "$sp"
	"$F" wal dump --wal "$T/sync-wal" >"$T/s.dump" || { fail "wal dump"; return 1; }
	local hits
	hits=$(grep -cE "^[0-9]+ order .* order=$ono " "$T/s.dump")
	[ "$hits" = 1 ] || { cat "$T/s.dump" >&2; fail "order $ono is $hits times in the WAL, want once"; }
}

# ---- item 13 -----------------------------------------------------------------
# Each mistyped value: exit 2, a message that says why, nothing created.
messages_say_why_and_exit_2() {
	local n; newseg n msg
	local rc
	"$F" create --name "$n" --orders 2000000000 >/dev/null 2>"$T/m1"; rc=$?
	[ $rc = 2 ] || fail "create --orders 2000000000: exit $rc, want 2"
	has "$T/m1" "--orders: 2000000000 is out of range [1, 67108864]" || return 1
	[ -e "/dev/shm/$n" ] && { fail "segment created"; return 1; }
	"$F" create --name "$n" --ring 8 >/dev/null 2>"$T/m1r"; rc=$?
	[ $rc = 2 ] || fail "create --ring 8: exit $rc, want 2"
	has "$T/m1r" "--ring: 8 is out of range [16, 16777216]" || return 1
	"$F" create --name "$n" --procs 5000 >/dev/null 2>"$T/m1p"; rc=$?
	[ $rc = 2 ] || fail "create --procs 5000: exit $rc, want 2"
	has "$T/m1p" "--procs: 5000 is out of range [1, 4095]" || return 1
	"$F" create --name "$n" --mode 0660 --group "nosuchgroup$$" >/dev/null 2>"$T/m2"; rc=$?
	[ $rc = 2 ] || fail "create --group nosuchgroup: exit $rc, want 2"
	has "$T/m2" "--group: no group named 'nosuchgroup$$'" || return 1
	[ -e "/dev/shm/$n" ] && { fail "segment created"; return 1; }

	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	"$F" status --name "$n" --json >"$T/m.before"
	"$F" serve --name "$n" --wal "$T/m-wal" --mysql "mysql:/localhost/db" >/dev/null 2>"$T/m3"; rc=$?
	[ $rc = 2 ] || fail "serve --mysql malformed: exit $rc, want 2"
	has "$T/m3" "--mysql:" || return 1
	[ -e "$T/m-wal" ] && fail "serve with a malformed --mysql created the WAL directory"
	"$F" load --name "$n" --csv /tmp >/dev/null 2>"$T/m4"; rc=$?
	[ $rc = 2 ] || fail "load --csv /tmp: exit $rc, want 2"
	has "$T/m4" "/tmp: Is a directory" || return 1
	"$F" load --name "$n" --csv "$T/nonexistent.csv" >/dev/null 2>"$T/m4b"; rc=$?
	[ $rc = 2 ] || fail "load --csv missing: exit $rc, want 2"
	"$F" load --name "$n" --activity 1 --end 9999-12-31T23:59:59Z --sku 1 --units 1 >/dev/null 2>"$T/m5"; rc=$?
	[ $rc = 2 ] || fail "load --end 9999: exit $rc, want 2"
	has "$T/m5" "--end: '9999-12-31T23:59:59Z' is after 2262-04-11T23:47:15Z" || return 1
	"$F" load --name "$n" --activity 1 --end 2026-02-30T00:00:00Z --sku 1 --units 1 >/dev/null 2>"$T/m6"; rc=$?
	[ $rc = 2 ] || fail "load --end Feb 30: exit $rc, want 2"
	has "$T/m6" "no such day" || return 1
	"$F" status --name "$n" --json >"$T/m.after"
	cmp -s "$T/m.before" "$T/m.after" || fail "segment changed"
	return 0
}

# ---- item 13, every command taking --mysql -----------------------------------
# reconcile with a malformed --mysql URL is a bad command line, as serve's:
# exit 2, the URL shown masked (no user, no password), nothing compared.
reconcile_bad_mysql_url_exit_2_masked() {
	local n; newseg n rurl
	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	local url rc i=0
	for url in "mysql://flash:s3/cr3t@localhost/db?socket=$T/none.sock" "mysql:/localhost/db" \
	           "mysql://flash:s3cr3t@localhost:99999/db"; do
		i=$((i + 1))
		"$F" reconcile --name "$n" --mysql "$url" >"$T/r$i.out" 2>"$T/r$i.err"; rc=$?
		[ $rc = 2 ] || { cat "$T/r$i.err" >&2; fail "reconcile --mysql '$url': exit $rc, want 2"; }
		has "$T/r$i.err" "flashstock reconcile: --mysql: bad URL " || return 1
		hasnt "$T/r$i.err" "cr3t" || return 1
		hasnt "$T/r$i.err" "flash:" || return 1
		hasnt "$T/r$i.out" "DIFF" || return 1
	done
	has "$T/r1.err" "mysql://***@" || return 1
	has "$T/r3.err" "the port '99999' is not 1..65535" || return 1
	# --repair too: refused before anything is read
	"$F" reconcile --repair --wal "$T/no-wal" --mysql "mysql:/localhost/db" >/dev/null 2>"$T/r4.err"; rc=$?
	[ $rc = 2 ] || fail "reconcile --repair with a malformed URL: exit $rc, want 2"
	has "$T/r4.err" "--mysql: bad URL" || return 1
	[ -e "$T/no-wal" ] && fail "reconcile --repair made the WAL directory"
	return 0
}

# ---- identity in status and wal verify ----------------------------------------
# status (text and --json) shows the segment's incarnation, the WAL LSN it
# reflects and the daemon holding the claim (its pid) or none; wal verify
# shows the WAL's incarnation, the same one.
status_and_wal_verify_show_the_identity() {
	local n; newseg n ident
	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	"$F" load --name "$n" --activity 1 --sku 1 --units 100 >/dev/null || { fail "load"; return 1; }
	"$F" status --name "$n" --json >"$T/i0.json" || { fail "status"; return 1; }
	"$F" status --name "$n" >"$T/i0.txt" || { fail "status"; return 1; }
	local inc
	inc=$(grep -oE '"incarnation":"[0-9a-f]{16}"' "$T/i0.json" | grep -oE '[0-9a-f]{16}')
	[ -n "$inc" ] && [ "$inc" != 0000000000000000 ] || { cat "$T/i0.json" >&2; fail "no incarnation in status --json"; return 1; }
	has "$T/i0.json" '"wal_lsn":0,"daemon_pid":null' || return 1
	has "$T/i0.txt" "identity incarnation $inc, reflects WAL LSN 0 (never served), daemon none" || return 1
	"$F" serve --name "$n" --wal "$T/ident-wal" --no-snapshot --reconcile-every 0 2>"$T/i.err" &
	local sp=$!; PIDS+=("$sp")
	wait_for "$T/i.err" "serving segment" 10 || return 1
	"$BUYER" "$n" 1 1 1 5 0 0 0 >"$T/i.buy" 2>&1
	"$F" status --name "$n" --json >"$T/i1.json"
	"$F" status --name "$n" >"$T/i1.txt"
	has "$T/i1.json" "\"incarnation\":\"$inc\"" || return 1
	has "$T/i1.json" "\"daemon_pid\":$sp,\"activities\"" || return 1
	has "$T/i1.txt" "daemon pid $sp" || return 1
	kill -TERM "$sp"; wait "$sp"
	"$F" wal verify --wal "$T/ident-wal" --json >"$T/iv.json"
	"$F" wal verify --wal "$T/ident-wal" >"$T/iv.txt"
	has "$T/iv.json" "\"incarnation\":\"$inc\"" || return 1
	has "$T/iv.txt" "incarnation $inc" || return 1
	local last
	last=$(grep -oE '"last_lsn":[0-9]+' "$T/iv.json" | grep -oE '[0-9]+$')
	[ -n "$last" ] && [ "$last" -gt 0 ] || { fail "no last_lsn in wal verify --json"; return 1; }
	"$F" status --name "$n" --json >"$T/i2.json"
	"$F" status --name "$n" >"$T/i2.txt"
	has "$T/i2.json" "\"incarnation\":\"$inc\",\"wal_lsn\":$last,\"daemon_pid\":null" || return 1
	has "$T/i2.txt" "identity incarnation $inc, reflects WAL LSN $last, daemon none" || return 1
	# an empty WAL directory records no incarnation
	mkdir "$T/empty-wal"
	"$F" wal verify --wal "$T/empty-wal" --json >"$T/ie.json"
	has "$T/ie.json" '"incarnation":null' || return 1
}

# ---- item 13, MySQL part (ctest ops_mysql_database, with the MariaDB fixture)
# A mistyped database name: serve refuses it (exit 2, nothing created: no
# WAL directory, no database); with create_db=1 in the URL it is created.
mysql_unknown_database_refused_unless_create_db() {
	[ -n "${FLASH_MARIADB_DIR:-}" ] || { fail "FLASH_MARIADB_DIR is not set (run as ctest ops_mysql_database)"; return 1; }
	local sock="$FLASH_MARIADB_DIR/mysqld.sock" db="flashstokc_$$" rc
	sql() { mariadb --no-defaults --socket="$sock" --user=root -B -N -e "$1"; }
	sql "DROP DATABASE IF EXISTS $db" || { fail "MariaDB at $sock"; return 1; }
	local n; newseg n db
	"$F" create --name "$n" $(small) >/dev/null || { fail "create"; return 1; }
	timeout -s INT 20 "$F" serve --name "$n" --wal "$T/db-wal" --no-snapshot --reconcile-every 0 \
		--mysql "mysql://root@localhost/$db?socket=$sock" >/dev/null 2>"$T/db.err"; rc=$?
	[ $rc = 124 ] && fail "serve accepted the unknown database and ran"
	[ $rc = 2 ] || fail "serve with an unknown database: exit $rc, want 2"
	has "$T/db.err" "database $db does not exist" || return 1
	has "$T/db.err" "create_db=1" || return 1
	[ -e "$T/db-wal" ] && fail "the WAL directory was created"
	[ -z "$(sql "SHOW DATABASES LIKE '$db'")" ] || fail "database $db was created"
	timeout 20 "$F" reconcile --name "$n" --mysql "mysql://root@localhost/$db?socket=$sock" >/dev/null 2>"$T/db.rerr"; rc=$?
	[ $rc != 0 ] || fail "reconcile with an unknown database: exit 0"
	[ -z "$(sql "SHOW DATABASES LIKE '$db'")" ] || fail "reconcile created database $db"
	timeout -s INT 60 "$F" serve --name "$n" --wal "$T/db-wal" --no-snapshot --reconcile-every 0 --once \
		--mysql "mysql://root@localhost/$db?socket=$sock&create_db=1" >/dev/null 2>"$T/db.err2"; rc=$?
	[ $rc = 0 ] || { cat "$T/db.err2" >&2; fail "serve with create_db=1: exit $rc"; }
	[ "$(sql "SHOW DATABASES LIKE '$db'")" = "$db" ] || fail "create_db=1 did not create $db"
	sql "DROP DATABASE IF EXISTS $db"
	log_format_ok "$T/db.err2"
}

ALL="create_too_big_fails_enomem_saying_bytes_needed load_all_or_nothing_engine_ranges
mysql_url_secret_never_printed group_member_attaches_0660_segment
mysql_down_backs_off_in_daemon_log_format attach_refuses_fifo_without_blocking
sync_wait_bounded_fate_unknown_then_durable messages_say_why_and_exit_2
reconcile_bad_mysql_url_exit_2_masked status_and_wal_verify_show_the_identity"
for CASE in ${*:-$ALL}; do
	before=$FAILED
	"$CASE"
	[ "$FAILED" = "$before" ] && echo "ok   $CASE" || echo "FAIL $CASE"
done
[ "$FAILED" = 0 ] || { echo "$FAILED check(s) failed" >&2; exit 1; }
echo "all operator-mistake cases passed"
