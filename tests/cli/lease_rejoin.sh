#!/bin/bash
# lease_rejoin.sh FLASHSTOCK OPS_BUYER -- a fenced box never sells from a
# lease returned for it (issue 14), on the ctest MariaDB fixture
# ($FLASH_MARIADB_DIR), two boxes on one sku of 40 units:
#  - box 1 sells 3 and holds the rest of its leases in its segment; it is
#    killed -9, fenced and reclaimed with `lease reclaim --wal` while its
#    segment is still on this machine: reclaim finds the segment by the
#    WAL's identity (and refuses --name of another one), takes its stock out
#    and counts sold from it; box 2 then sells everything the pool has (the
#    reclaimed units included);
#  - a buyer orders on box 1's segment at once (no daemon: orders go to the
#    segment's ring), then box 1's serve --lease restarts with a buyer
#    ordering from the first instant: every unit acknowledged over both boxes
#    together is at most 40;
#  - box 3 (sku 2) is killed -9 holding stock and restarted with a central
#    database that does not answer: its agent takes the stock out of the
#    segment before it registers (nothing sellable while it cannot tell
#    whether it was fenced); restarted with the right URL, it registers (not
#    fenced) and puts the same stock back; killed, fenced and its segment
#    destroyed, `lease reclaim` says the segment is not here and that a
#    rebuilt one is drained by its agent at start.
set -u
F=${1:?usage}; B=${2:?usage}
: "${FLASH_MARIADB_DIR:?run through ctest (mysql_server_start)}"
S=$FLASH_MARIADB_DIR/mysqld.sock
T=$(mktemp -d)
pids=""
segs=""
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	for s in $segs; do "$F" destroy --name "$s" --force >/dev/null 2>&1 || "$F" destroy --name "$s" >/dev/null 2>&1; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for l in "$T"/*.log "$T"/out; do [ -f "$l" ] && { echo "== $l" >&2; tail -n 15 "$l" >&2; }; done
	exit 1
}
sql() { mariadb --socket="$S" -N -B -e "$1"; }
C="mysql://root@localhost/flash_central?socket=$S"
sql "DROP DATABASE IF EXISTS flash_central" || fail "fixture"
"$F" lease init --mysql "$C" >/dev/null || fail "init"
"$F" lease pool --mysql "$C" --activity 1 --sku 1 --total 40 >/dev/null || fail "pool 1"
"$F" lease pool --mysql "$C" --activity 1 --sku 2 --total 40 >/dev/null || fail "pool 2"

seg() { echo "/flash-rejoin-$$-$1"; }
mkbox() {   # mkbox N SKU: the box's segment, its sku at 0 units
	segs="$segs $(seg "$1")"
	"$F" create --name "$(seg "$1")" >/dev/null || fail "create $1"
	"$F" load --name "$(seg "$1")" --activity 1 --sku "$2" --units 0 >/dev/null || fail "load $1"
}
serve() {   # serve N URL: serve --lease in the background, pid in serve<N>
	local n=$1
	"$F" serve --name "$(seg "$n")" --wal "$T/wal$n" --no-snapshot --reconcile-every 0 --lease "$2" \
		--box-id "$n" --lease-min 10 --lease-max 10 --heartbeat-s 1 >>"$T/serve$n.log" 2>&1 &
	eval "serve$n=$!"
	pids="$pids $!"
}
stop() { local p; eval "p=\$serve$1"; kill -KILL "$p"; wait "$p" 2>/dev/null; }
buy() {   # buy N SKU COUNT: COUNT units acknowledged, retried while leases arrive
	local got=0 u=$((1000 * $1)) tries=0 out
	while [ "$got" -lt "$3" ]; do
		u=$((u + 1))
		out=$("$B" --name "$(seg "$1")" --activity 1 --sku "$2" --from "$u" --to "$u" --log "$T/acked") ||
			fail "buyer"
		case $out in "acked 1 "*) got=$((got + 1)) ;; *) tries=$((tries + 1)); sleep 0.05 ;; esac
		[ "$tries" -lt 600 ] || fail "box $1 got no units"
	done
}
avail() {   # avail N SKU: the sku's available units in box N's segment
	"$F" status --name "$(seg "$1")" | awk -v s="$2" '$1 == 1 && $2 == s && NF == 8 { print $5 }'
}
acked() { [ -f "$T/acked" ] && wc -l <"$T/acked" || echo 0; }

# --- box 1 sells 3, dies holding stock; fenced and reclaimed -------------
mkbox 1 1
serve 1 "$C"
buy 1 1 3
for i in $(seq 200); do [ "$(avail 1 1)" -gt 0 ] && break; sleep 0.05; done
H1=$(avail 1 1)
[ "$H1" -gt 0 ] || fail "box 1 holds no stock"
stop 1
"$F" lease fence --mysql "$C" --box 1 --force >/dev/null || fail "fence box 1"
"$F" lease reclaim --mysql "$C" --box 1 --from-mysql-only --name "$(seg 1)" 2>/dev/null
[ $? -eq 2 ] || fail "--name without --wal: want exit 2"
mkbox x 1     # a segment of another incarnation: refused, nothing changed
"$F" lease reclaim --mysql "$C" --box 1 --wal "$T/wal1" --name "$(seg x)" >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q 'not the one this WAL belongs to' "$T/out" || fail "reclaim --name of another segment"
[ "$(avail 1 1)" = "$H1" ] || fail "a refused reclaim changed box 1's segment"
# the segment the WAL's identity names is found without --name
"$F" lease reclaim --mysql "$C" --box 1 --wal "$T/wal1" >"$T/out" 2>&1 || fail "reclaim box 1"
grep -q "segment $(seg 1): $H1 units of sku 1/1 taken out" "$T/out" || fail "reclaim did not drain box 1's segment"
[ "$(avail 1 1)" = 0 ] || fail "box 1's segment still sells $(avail 1 1) units after the reclaim"
echo "box 1 held $H1 units when it died; reclaim:"; cat "$T/out"

# --- box 2 sells every unit the pool has ----------------------------------
mkbox 2 1
serve 2 "$C"
buy 2 1 $((40 - 3))
echo "box 2 sold 37"

# --- box 1 comes back: buyers order from the first instant ---------------
"$B" --name "$(seg 1)" --activity 1 --sku 1 --from 5001 --to 5040 --log "$T/acked" >"$T/stale.out" ||
	fail "buyer on box 1 before its serve"
( for i in $(seq 60); do
	"$B" --name "$(seg 1)" --activity 1 --sku 1 --from $((6000 + 10 * i)) --to $((6009 + 10 * i)) \
		--log "$T/acked" >/dev/null || exit 1
  done ) &
buyer=$!
pids="$pids $buyer"
R=$(grep -c 'box 1 registered' "$T/serve1.log")
serve 1 "$C"
wait "$buyer" || fail "buyer on box 1 while its serve starts"
for i in $(seq 400); do [ "$(grep -c 'box 1 registered' "$T/serve1.log")" -gt "$R" ] && break; sleep 0.05; done
[ "$(grep -c 'box 1 registered' "$T/serve1.log")" -gt "$R" ] || fail "box 1 did not register again"
"$B" --name "$(seg 1)" --activity 1 --sku 1 --from 7001 --to 7040 --log "$T/acked" >/dev/null ||
	fail "buyer on box 1 after it registered"
stop 1
stop 2
N=$(acked)
echo "acknowledged over both boxes: $N of 40 (before box 1's serve: $(cat "$T/stale.out"))"
[ "$N" -le 40 ] || fail "oversold: $N units acknowledged of a total of 40"
[ "$(sql "SELECT unleased FROM flash_central.fs_pool WHERE sku_id = 1")" -ge 0 ] || fail "pool below 0"

# --- box 3: no stock sellable until it has registered ---------------------
mkbox 3 2
serve 3 "$C"
buy 3 2 2
for i in $(seq 200); do [ "$(avail 3 2)" -gt 0 ] && break; sleep 0.05; done
H3=$(avail 3 2)
[ "$H3" -gt 0 ] || fail "box 3 holds no stock"
stop 3
serve 3 "mysql://root@localhost/flash_central?socket=$T/no-such.sock"
for i in $(seq 400); do [ "$(avail 3 2)" = 0 ] && break; sleep 0.05; done
[ "$(avail 3 2)" = 0 ] || fail "box 3's agent left $(avail 3 2) units sellable before it registered"
stop 3
serve 3 "$C"
# registered, not fenced (epoch moved on, box live): what its open leases hold unsold is sellable again
held3() { echo $(($(sql "SELECT COALESCE(SUM(units - returned), 0) FROM flash_central.fs_lease WHERE
	box_id = 3 AND state = 'open'") - 2)); }
for i in $(seq 400); do [ "$(avail 3 2)" = "$(held3)" ] && [ "$(held3)" -gt 0 ] && break; sleep 0.05; done
[ "$(avail 3 2)" = "$(held3)" ] || fail "box 3 registered but holds $(avail 3 2) units, its leases $(held3)"
[ "$(avail 3 2)" -ge "$H3" ] || fail "box 3 holds $(avail 3 2) units, fewer than the $H3 it had"
stop 3
# its segment gone (a reboot): reclaim counts from the WAL and says that a
# segment rebuilt from it is drained by its agent at start
"$F" lease fence --mysql "$C" --box 3 --force >/dev/null || fail "fence box 3"
"$F" destroy --name "$(seg 3)" >/dev/null || fail "destroy box 3's segment"
"$F" lease reclaim --mysql "$C" --box 3 --wal "$T/wal3" >"$T/out" 2>&1 || fail "reclaim box 3"
grep -q "box 3's segment is not on this machine" "$T/out" && grep -q 'drained by its agent' "$T/out" &&
	grep -q 'sku 1/2: 2 sold by box 3' "$T/out" || fail "reclaim without the segment"
sql "DROP DATABASE flash_central"
echo "lease_rejoin: ok"
