#!/bin/bash
# ops_destroy.sh FLASHSTOCK OPS_BUYER -- `flashstock destroy` loses no
# acknowledged order (issue 20, item 1), through the real commands:
#   A. daemon_serving_refused_naming_its_pid: destroy, and destroy --force,
#      exit 2 naming the daemon; the segment keeps its name, so a create of
#      it fails instead of making a second segment beside the served one;
#      once the daemon stopped (it drained), destroy exits 0 and every
#      acknowledged order is in the WAL;
#   B. attached_buyer_refused_then_force_wal_drains_and_buyer_gets_edestroyed:
#      a buyer attached (20 orders acknowledged, no daemon, waiting to place
#      20 more): destroy exits 2 naming its pid and the undrained records;
#      a drain into another segment's WAL fails and leaves it closed, which
#      `status` shows (CLOSED, "destroyed": true); --force --wal DIR drains
#      them into DIR; the buyer's next order answers
#      FLASH_EDESTROYED (it used to be acknowledged into the unlinked segment
#      while a create and a new daemon served the name); the 20 are in DIR;
#   C. async_orders_undrained_refused_then_force_prints_the_loss: 30 orders
#      acknowledged with no daemon, the buyer gone: destroy exits 2 naming the
#      records per slot; --force exits 0 printing each record it gives up;
#   D. destroy_removes_the_shadows_dead_daemons_left: the snapshot shadow
#      NAME.shadow.PID of a pid that is gone (a daemon killed mid-snapshot
#      leaves one, as large as the segment) is removed with the segment and
#      said; one whose pid lives is kept.
# Every command runs under `timeout`: a hang fails the case.  Optional
# arguments after the two binaries pick cases (e.g. `B C`); default: all.
set -u
fs=${1:?usage: ops_destroy.sh path/to/flashstock path/to/ops_buyer [A|B|C|D...]}
buyer=${2:?usage: ops_destroy.sh path/to/flashstock path/to/ops_buyer [A|B|C|D...]}
shift 2
cases=${*:-A B C D}
t=$(mktemp -d "${TMPDIR:-/tmp}/flash-opsdestroy-XXXXXX")
fail() {
	echo "FAIL: $*"
	for f in "$t"/log* "$t"/buyer*; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
	exit 1
}
. "$(dirname "$0")/ops_lib.sh"
trap ops_cleanup EXIT

# destroy_rc OUT destroy-args...: run `flashstock destroy`, stderr and stdout to OUT.
destroy_rc() {
	local out=$1
	shift
	timeout 20 "$fs" destroy "$@" >"$out" 2>&1
}
has() { grep -qE -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$3: missing /$2/"; }; }
exists() { [ -e "/dev/shm/${1#/}" ]; }

# ---- A: a daemon serves the segment --------------------------------------------
case_A() {
echo "case A: daemon_serving_refused_naming_its_pid"
a=/flash-ops-$$-a
ops_create "$a"
ops_serve_bg "$t/log-a-serve" --name "$a" --wal "$t/wal-a" --no-snapshot --reconcile-every 0
ops_buy "$a" 1 20 "$t/acks-a"
destroy_rc "$t/a1" --name "$a"
rc=$?
[ $rc -eq 2 ] || fail "A: destroy while a daemon serves: exit $rc, want 2"
has "$t/a1" "a daemon serves it: pid $ops_pid" "A"
exists "$a" || fail "A: the refused destroy removed the name"
destroy_rc "$t/a2" --name "$a" --force
rc=$?
[ $rc -eq 2 ] || fail "A: destroy --force while a daemon serves: exit $rc, want 2"
has "$t/a2" "pid $ops_pid" "A --force"
timeout 20 "$fs" create --name "$a" $ops_caps >"$t/a3" 2>&1 && fail "A: a second segment was created beside the served one"
kill -0 "$ops_pid" 2>/dev/null || fail "A: the daemon is gone"
ops_buy "$a" 21 40 "$t/acks-a"   # the served segment still takes orders
ops_serve_stop "$ops_pid"
destroy_rc "$t/a4" --name "$a" || fail "A: destroy after the daemon stopped: exit $?: $(cat "$t/a4")"
exists "$a" && fail "A: the name is still there"
ops_check_acked "$t/acks-a" "$t/wal-a"
}

# ---- B: a buyer attached, no daemon --------------------------------------------
case_B() {
echo "case B: attached_buyer_refused_then_force_wal_drains_and_buyer_gets_edestroyed"
b=/flash-ops-$$-b
ops_create "$b"
"$buyer" --name "$b" --activity 1 --sku 1 --from 1 --to 40 --log "$t/acks-b" --at 21 --wait "$t/go-b" \
	>"$t/buyer-b.out" 2>"$t/buyer-b.err" &
bpid=$!
ops_pids="$ops_pids $bpid"
for i in $(seq 1 400); do
	grep -q waiting "$t/buyer-b.err" 2>/dev/null && break
	kill -0 "$bpid" 2>/dev/null || fail "B: the buyer exited early"
	sleep 0.05
done
[ "$(wc -l <"$t/acks-b")" -eq 20 ] || fail "B: the buyer acknowledged $(wc -l <"$t/acks-b") orders, want 20"
timeout 20 "$fs" status --name "$b" >"$t/b0s" 2>&1 || fail "B: status: exit $?"
timeout 20 "$fs" status --name "$b" --json >"$t/b0j" 2>&1 || fail "B: status --json: exit $?"
destroy_rc "$t/b1" --name "$b"
rc=$?
[ $rc -eq 2 ] || fail "B: destroy with a buyer attached: exit $rc, want 2"
has "$t/b1" "attached: 1 process slot: slot [0-9]+ \\(pid $bpid, running\\)" "B"
# 20 orders, and the activity and sku records of load
has "$t/b1" "undrained: 22 records in no WAL yet: " "B"
exists "$b" || fail "B: the refused destroy removed the name"
# --wal naming another segment's WAL: the drain is refused, nothing destroyed
destroy_rc "$t/b1w" --name "$b" --force --wal "$t/wal-a"
rc=$?
[ $rc -eq 1 ] || fail "B: destroy --force --wal with another segment's WAL: exit $rc, want 1"
has "$t/b1w" "cannot drain $b into $t/wal-a .*nothing destroyed" "B"
exists "$b" || fail "B: a failed drain removed the name"
# it stays closed to new orders, and status says so, in words and in JSON
# (before it, status of the open segment said nothing of the kind)
timeout 20 "$fs" status --name "$b" >"$t/b1s" 2>&1 || fail "B: status of the closed segment: exit $?"
has "$t/b1s" "^CLOSED: marked destroyed" "B: status"
timeout 20 "$fs" status --name "$b" --json >"$t/b1j" 2>&1 || fail "B: status --json of the closed segment: exit $?"
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["destroyed"] is not True)' "$t/b1j" \
	|| fail "B: status --json: \"destroyed\" is not true: $(cat "$t/b1j")"
grep -q "CLOSED" "$t/b0s" && fail "B: status of the open segment says CLOSED: $(cat "$t/b0s")"
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["destroyed"] is not False)' "$t/b0j" \
	|| fail "B: status --json of the open segment: \"destroyed\" is not false: $(cat "$t/b0j")"
destroy_rc "$t/b2" --name "$b" --force --wal "$t/wal-b"
rc=$?
[ $rc -eq 0 ] || fail "B: destroy --force --wal: exit $rc: $(cat "$t/b2")"
has "$t/b2" "drained 22 of 22 records into $t/wal-b" "B"
has "$t/b2" "pid $bpid, running" "B: the attached buyer named"
grep -q "LOST" "$t/b2" && fail "B: records lost although drained: $(cat "$t/b2")"
exists "$b" && fail "B: the name is still there"
# the operator makes the segment again and serves it, as in the report
ops_create "$b"
ops_serve_bg "$t/log-b-serve" --name "$b" --wal "$t/wal-b2" --no-snapshot --reconcile-every 0
touch "$t/go-b"
timeout 20 tail --pid="$bpid" -f /dev/null
wait "$bpid"
rc=$?
[ $rc -eq 1 ] || fail "B: the old buyer exit $rc, want 1 (its next order refused)"
has "$t/buyer-b.err" "user 21: the segment was destroyed" "B: the buyer's next order"
[ "$(wc -l <"$t/acks-b")" -eq 20 ] || fail "B: the old buyer acknowledged $(wc -l <"$t/acks-b") orders, want 20"
ops_serve_stop "$ops_pid"
ops_check_acked "$t/acks-b" "$t/wal-b"
}

# ---- C: acknowledged async orders, no daemon, nobody attached -------------------
case_C() {
echo "case C: async_orders_undrained_refused_then_force_prints_the_loss"
c=/flash-ops-$$-c
ops_create "$c"
ops_buy "$c" 1 30 "$t/acks-c"
destroy_rc "$t/c1" --name "$c"
rc=$?
[ $rc -eq 2 ] || fail "C: destroy with 30 undrained orders: exit $rc, want 2"
has "$t/c1" "undrained: 32 records in no WAL yet: " "C"
# load and then the buyer held the same slot, one after the other: its ring
# keeps the records of both, under no holder now
has "$t/c1" "slot [0-9]+ \\(free\\) 32" "C: per slot"
has "$t/c1" "serve --name $c --wal DIR --once" "C: how to keep them"
exists "$c" || fail "C: the refused destroy removed the name"
destroy_rc "$t/c2" --name "$c" --force
rc=$?
[ $rc -eq 0 ] || fail "C: destroy --force: exit $rc: $(cat "$t/c2")"
has "$t/c2" "LOST: 32 records in no WAL: " "C --force"
has "$t/c2" "slot [0-9]+ \\(free\\) 32" "C --force: per slot"
exists "$c" && fail "C: the name is still there"
destroy_rc "$t/c3" --name "$c"
rc=$?
[ $rc -eq 1 ] || fail "C: destroy of a removed segment: exit $rc, want 1"
timeout 10 "$fs" destroy --help | grep -q "FLASH_EDESTROYED" || fail "destroy --help does not say what buyers get"
}

# ---- D: snapshot shadows left by a daemon killed mid-snapshot ------------------
case_D() {
echo "case D: destroy_removes_the_shadows_dead_daemons_left"
d=/flash-ops-$$-d
"$fs" create --name "$d" $ops_caps >/dev/null || fail "D: create $d"
ops_segs="$ops_segs $d"
sh -c 'exit 0' &
dead=$!
wait "$dead"
kill -0 "$dead" 2>/dev/null && fail "D: pid $dead still exists"
for p in "$dead" "$$"; do
	"$fs" create --name "$d.shadow.$p" $ops_caps >/dev/null || fail "D: create the shadow $d.shadow.$p"
	ops_segs="$ops_segs $d.shadow.$p"
done
destroy_rc "$t/d1" --name "$d" || fail "D: destroy: exit $?: $(cat "$t/d1")"
exists "$d" && fail "D: the name is still there"
exists "$d.shadow.$dead" && fail "D: the shadow of pid $dead (gone) is still there"
has "$t/d1" "removed the shadow segment $d.shadow.$dead \\([0-9]+ MiB\\) that a daemon \\(pid $dead\\)" "D"
exists "$d.shadow.$$" || fail "D: the shadow of pid $$ (alive) was removed"
grep -q "shadow.$$" "$t/d1" && fail "D: destroy spoke of the live pid's shadow: $(cat "$t/d1")"
"$fs" destroy --name "$d.shadow.$$" >/dev/null 2>&1 || fail "D: destroy the live pid's shadow"
}

for c in $cases; do
	case $c in
	A|B|C|D) "case_$c" ;;
	*) fail "no case $c (A, B, C or D)" ;;
	esac
done
echo "ops_destroy: all checks passed ($cases)"
