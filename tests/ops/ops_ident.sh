#!/bin/bash
# ops_ident.sh FLASHSTOCK OPS_BUYER -- a WAL and its segment share one
# identity, one daemon serves a segment: the operator's mistakes around them,
# through the real commands.  Each case asserts the exit code, the message,
# and (from the buyers' own log of acknowledgements) that every acknowledged
# order is in the WAL exactly once afterwards.
#   1. reboot, then `serve` on the old WAL without --recover (with and without
#      snapshots): refused, exit 2, the message says what to run; running
#      exactly that rebuilds the segment and loses nothing
#   2. a second daemon on the segment with another WAL: refused, exit 2,
#      naming the running daemon's pid; nothing made; after kill -9 of the
#      first, a new daemon starts at once; another segment on the served WAL:
#      refused (one daemon per WAL directory)
#   3. the WAL directory moved: served from its new path; the old (now empty)
#      path is refused
#   4. rebuilt with the other durability (sync WAL, async segment): accepted,
#      logged once at warn
#   5. a backup of the WAL (copied while no daemon runs): given to the live
#      segment, which reflects more, it is refused; after losing the live
#      WAL the segment is rebuilt from it with every order up to the copy
#   6. the daemon feeding a private MariaDB killed with kill -9, a second
#      daemon refused meanwhile: every acknowledged order is in the WAL and
#      in MariaDB's orders table after the restart
set -u
fs=${1:?usage: ops_ident.sh path/to/flashstock path/to/ops_buyer}
buyer=${2:?usage: ops_ident.sh path/to/flashstock path/to/ops_buyer}
t=$(mktemp -d "${TMPDIR:-/tmp}/flash-opsid-XXXXXX")
fail() {
	echo "FAIL: $*"
	for f in "$t"/log*; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
	exit 1
}
. "$(dirname "$0")/ops_lib.sh"
trap ops_cleanup EXIT

# OPS_CASES="1 3" runs only those cases (all by default).
want_case() { case " ${OPS_CASES:-1 2 3 4 5 6} " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- 1. reboot, then serve without --recover ----------------------------
case1() {
for variant in snapshots no-snapshot; do
	name=/flash-ops-$$-reboot-$variant
	wal=$t/wal-reboot-$variant
	acks=$t/acks-reboot-$variant
	snapflag=
	[ $variant = no-snapshot ] && snapflag=--no-snapshot
	echo "case 1 ($variant): serve after a reboot without --recover"
	ops_create "$name"
	ops_serve_bg "$t/log1-$variant-a" --name "$name" --wal "$wal" $snapflag
	ops_buy "$name" 1 20 "$acks"
	ops_serve_stop "$ops_pid"
	"$fs" wal dump --wal "$wal" >"$t/before" || fail "wal dump"

	# the reboot: the segment is gone; the operator creates it and loads the catalog again
	"$fs" destroy --name "$name" >/dev/null || fail "destroy"
	ops_create "$name"
	"$fs" serve --name "$name" --wal "$wal" --once $snapflag 2>"$t/log1-$variant-b"
	rc=$?
	[ $rc -eq 2 ] || fail "serve on the old WAL of a new segment: exit $rc, want 2"
	ops_show "$t/log1-$variant-b"
	grep -q "WAL $wal belongs to segment incarnation [0-9a-f]\{16\}, not to $name (incarnation [0-9a-f]\{16\})" \
		"$t/log1-$variant-b" || fail "no identity message"
	"$fs" wal dump --wal "$wal" >"$t/after" || fail "wal dump"
	cmp -s "$t/before" "$t/after" || fail "the refused serve changed the WAL"
	cmd=$(sed -n 's/.*after a reboot run: \(.*\)$/\1/p' "$t/log1-$variant-b")
	if [ $variant = snapshots ]; then
		want="flashstock destroy --name $name --force && flashstock serve --recover --name $name --wal $wal"
	else
		want="flashstock destroy --name $name --force && flashstock create --name $name $(echo $ops_caps) \
--mode 0600 --durability async && flashstock serve --recover --name $name --wal $wal"
	fi
	[ "$cmd" = "$want" ] || fail "message says to run '$cmd', want '$want'"
	if [ $variant = no-snapshot ]; then
		# without a snapshot, --recover cannot make the segment: it says so
		# (--force: the new segment's load records are given up on purpose)
		"$fs" destroy --name "$name" --force >/dev/null 2>&1 || fail "destroy"
		"$fs" serve --recover --name "$name" --wal "$wal" --once $snapflag 2>"$t/log1-$variant-e"
		rc=$?
		[ $rc -eq 2 ] || fail "recover without segment or snapshot: exit $rc, want 2"
		ops_show "$t/log1-$variant-e"
		grep -q "segment $name does not exist and WAL $wal holds no snapshot to restore it from: create it first" \
			"$t/log1-$variant-e" || fail "recover without segment or snapshot: no clear message"
		ops_create "$name"
	fi
	# run exactly what it says (the daemon in the background)
	bash -c "$(echo "${cmd% && flashstock serve*}" | sed "s|flashstock |\"$fs\" |g")" >/dev/null 2>&1 ||
		fail "'${cmd% && flashstock serve*}' failed"
	ops_serve_bg "$t/log1-$variant-c" --recover --name "$name" --wal "$wal" $snapflag
	grep -q "were there already" "$t/log1-$variant-c" || fail "no recover line"
	grep -q " 0 were there already" "$t/log1-$variant-c" || fail "recover found records already there"
	ops_buy "$name" 21 40 "$acks"
	ops_serve_stop "$ops_pid"
	ops_check_acked "$acks" "$wal"
	n=$(wc -l <"$acks")
	[ "$n" -eq 40 ] || fail "$n orders acknowledged, want 40"
done
}

# ---- 2. two daemons on one segment --------------------------------------
case2() {
echo "case 2: a second daemon on the segment"
name=/flash-ops-$$-two
acks=$t/acks-two
ops_create "$name"
ops_serve_bg "$t/log2-a" --name "$name" --wal "$t/wal-A"
first=$ops_pid
ops_buy "$name" 1 20 "$acks"
"$fs" serve --name "$name" --wal "$t/wal-B" --once 2>"$t/log2-b"
rc=$?
[ $rc -eq 2 ] || fail "second daemon: exit $rc, want 2"
ops_show "$t/log2-b"
grep -q "segment $name is served by the daemon pid $first: one daemon per segment" "$t/log2-b" ||
	fail "second daemon: no message naming pid $first"
[ ! -e "$t/wal-B" ] || fail "the refused daemon made its WAL directory"
ops_buy "$name" 21 40 "$acks"
kill -9 "$first"
wait "$first" 2>/dev/null
# the dead daemon's claim is free at once; orders made meanwhile are kept
ops_buy "$name" 41 60 "$acks"
"$fs" serve --name "$name" --wal "$t/wal-A" --once 2>"$t/log2-c" ||
	fail "serve after kill -9 of the daemon: exit $?"
ops_check_acked "$acks" "$t/wal-A"
# one daemon per WAL directory: another segment on wal-A is refused too
ops_serve_bg "$t/log2-d" --name "$name" --wal "$t/wal-A"
second=$ops_pid
ops_create "$name-other"
"$fs" serve --name "$name-other" --wal "$t/wal-A" --once 2>"$t/log2-e"
rc=$?
[ $rc -eq 2 ] || fail "another segment on a served WAL: exit $rc, want 2"
ops_show "$t/log2-e"
grep -q "WAL $t/wal-A is locked by another daemon: one daemon per WAL directory; nothing was changed" \
	"$t/log2-e" || fail "no message about the daemon holding the WAL"
ops_serve_stop "$second"
ops_check_acked "$acks" "$t/wal-A"
}

# ---- 3. the WAL directory moved -----------------------------------------
case3() {
echo "case 3: the WAL directory moved"
name=/flash-ops-$$-moved
acks=$t/acks-moved
ops_create "$name"
ops_serve_bg "$t/log3-a" --name "$name" --wal "$t/wal-old"
ops_buy "$name" 1 20 "$acks"
ops_serve_stop "$ops_pid"
mv "$t/wal-old" "$t/wal-new"
# the old path (a unit file not updated): refused, nothing made there
"$fs" serve --name "$name" --wal "$t/wal-old" --once 2>"$t/log3-b"
rc=$?
[ $rc -eq 2 ] || fail "serve on the old, empty path: exit $rc, want 2"
ops_show "$t/log3-b"
grep -q "WAL $t/wal-old is empty, but segment $name reflects LSN [1-9][0-9]* of its WAL" "$t/log3-b" ||
	fail "old path: no clear message"
[ ! -e "$t/wal-old" ] || fail "the refused daemon made a WAL at the old path"
# the new path: the same WAL (identity is not the path)
ops_serve_bg "$t/log3-c" --name "$name" --wal "$t/wal-new"
ops_buy "$name" 21 40 "$acks"
ops_serve_stop "$ops_pid"
ops_check_acked "$acks" "$t/wal-new"
"$fs" destroy --name "$name" >/dev/null || fail "destroy"
"$fs" serve --recover --name "$name" --wal "$t/wal-new" --once 2>"$t/log3-d" ||
	fail "recover from the moved WAL: exit $?"
ops_check_acked "$acks" "$t/wal-new"
}

# ---- 4. rebuilt with the other durability -------------------------------
case4() {
echo "case 4: a sync WAL rebuilt into an async segment"
name=/flash-ops-$$-dur
acks=$t/acks-dur
wal=$t/wal-dur
ops_create "$name" --durability sync
ops_serve_bg "$t/log4-a" --name "$name" --wal "$wal" --no-snapshot
ops_buy "$name" 1 20 "$acks" --sync
ops_serve_stop "$ops_pid"
"$fs" destroy --name "$name" >/dev/null || fail "destroy"
"$fs" create --name "$name" $ops_caps --durability async >/dev/null || fail "create async"
ops_serve_bg "$t/log4-b" --recover --name "$name" --wal "$wal" --no-snapshot
grep -q "\[warn\] durability changed: WAL $wal was written in sync durability, segment $name is async" \
	"$t/log4-b" || fail "the durability change is not logged"
ops_show "$t/log4-b"
ops_buy "$name" 21 40 "$acks"
ops_serve_stop "$ops_pid"
"$fs" serve --name "$name" --wal "$wal" --once --no-snapshot 2>"$t/log4-c" || fail "restart: exit $?"
grep -q "durability changed" "$t/log4-c" && fail "the durability change is logged again at the next start"
ops_check_acked "$acks" "$wal"
}

# ---- 5. a backup of the WAL ---------------------------------------------
case5() {
echo "case 5: a backup of the WAL, and the backup given to the live segment"
name=/flash-ops-$$-backup
acks=$t/acks-backup
wal=$t/wal-live
ops_create "$name"
ops_serve_bg "$t/log5-a" --name "$name" --wal "$wal"
ops_buy "$name" 1 20 "$acks"
ops_serve_stop "$ops_pid"
cp -a "$wal" "$t/wal-backup" || fail "cp -a"
cp "$acks" "$acks-at-backup"
ops_serve_bg "$t/log5-b" --name "$name" --wal "$wal"
ops_buy "$name" 21 40 "$acks"
ops_serve_stop "$ops_pid"
# the backup is shorter than what the segment reflects: refused, unchanged
"$fs" wal dump --wal "$t/wal-backup" >"$t/before" || fail "wal dump"
"$fs" serve --name "$name" --wal "$t/wal-backup" --once 2>"$t/log5-c"
rc=$?
[ $rc -eq 2 ] || fail "serve on an old copy of its WAL: exit $rc, want 2"
ops_show "$t/log5-c"
grep -q "WAL $t/wal-backup ends at LSN 22, but segment $name reflects LSN 42 of it" "$t/log5-c" ||
	fail "old copy: no clear message"
"$fs" wal dump --wal "$t/wal-backup" >"$t/after" || fail "wal dump"
cmp -s "$t/before" "$t/after" || fail "the refused serve changed the backup"
ops_check_acked "$acks" "$wal"
# the live WAL lost with the segment: rebuild from the backup
"$fs" destroy --name "$name" >/dev/null || fail "destroy"
rm -rf "$wal"
"$fs" serve --recover --name "$name" --wal "$t/wal-backup" --once 2>"$t/log5-d" ||
	fail "recover from the backup: exit $?"
ops_check_acked "$acks-at-backup" "$t/wal-backup"
}

# ---- 6. the daemon killed with MariaDB attached --------------------------
case6() {
echo "case 6: kill -9 of the daemon feeding MariaDB, a second daemon meanwhile"
name=/flash-ops-$$-mysql
acks=$t/acks-mysql
wal=$t/wal-mysql
ops_mariadb_start
ops_create "$name"
ops_serve_bg "$t/log6-a" --name "$name" --wal "$wal" --mysql-defaults "$ops_mysql_defaults"
first=$ops_pid
ops_buy "$name" 1 30 "$acks"
"$fs" serve --name "$name" --wal "$t/wal-mysql-2" --mysql-defaults "$ops_mysql_defaults" --once \
	2>"$t/log6-b"
rc=$?
[ $rc -eq 2 ] || fail "second daemon with MariaDB: exit $rc, want 2"
grep -q "segment $name is served by the daemon pid $first" "$t/log6-b" || fail "no message naming pid $first"
kill -9 "$first"
wait "$first" 2>/dev/null
ops_buy "$name" 31 60 "$acks"
ops_serve_bg "$t/log6-c" --name "$name" --wal "$wal" --mysql-defaults "$ops_mysql_defaults"
ops_buy "$name" 61 90 "$acks"
ops_check_mysql "$acks"
ops_serve_stop "$ops_pid"
ops_check_acked "$acks" "$wal"
}

for c in 1 2 3 4 5 6; do
	want_case $c && case$c
done
echo "ok: identity refusals exit 2 with the command to run; one daemon per segment;"
echo "    a moved WAL serves; a durability change is logged; no acknowledged order lost"
