#!/bin/bash
# cli_lease.sh FLASHSTOCK OPS_BUYER -- `flashstock lease` through the real
# binaries on the ctest MariaDB fixture ($FLASH_MARIADB_DIR):
#  - usage: no subcommand, an unknown one, a bad URL, an option another
#    subcommand takes: exit 2, nothing changed; --help exits 0;
#  - init is idempotent; pool loads and refuses a total below what is leased;
#  - a live box's fence is refused while its heartbeat is fresh;
#  - box 1 (serve --lease --mysql: its applier writes flash_box1) sells 7
#    and is killed -9: fenced; `reclaim --from-mysql-only` prints the backlog
#    by lease and LSN and returns nothing; with --accept-unknown it returns
#    leased - 7;
#  - box 2 (no applier) sells 5 and is killed -9: fenced; `reclaim --wal`
#    returns leased - 5 (sold from its segment, found by the WAL's identity:
#    tests/cli/lease_rejoin.sh), once (a second run finds nothing); status shows
#    0 stranded and the pool adds up.
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
	[ -f "$T/out" ] && { echo "== last command's output" >&2; cat "$T/out" >&2; }
	for l in "$T"/*.log; do [ -f "$l" ] && { echo "== $l" >&2; tail -n 12 "$l" >&2; }; done
	exit 1
}
sql() { mariadb --socket="$S" -N -B -e "$1"; }
C="mysql://root@localhost/flash_central?socket=$S"
sql "DROP DATABASE IF EXISTS flash_central; DROP DATABASE IF EXISTS flash_box1" || fail "fixture"

# --- usage --------------------------------------------------------------
"$F" lease >/dev/null 2>&1; [ $? -eq 2 ] || fail "no subcommand: want exit 2"
"$F" lease --help | grep -q 'reclaim --box N --wal DIR' || fail "--help"
"$F" lease frob --mysql "$C" 2>/dev/null; [ $? -eq 2 ] || fail "unknown subcommand: want 2"
"$F" lease init --mysql "http://x/y" 2>"$T/e"; [ $? -eq 2 ] || fail "bad URL: want 2"
grep -q 'does not start with mysql://' "$T/e" || fail "bad URL message"
"$F" lease init --mysql "$C" --box 3 2>"$T/e"; [ $? -eq 2 ] || fail "init --box: want 2"
grep -q 'init does not take --box' "$T/e" || fail "init --box message"
[ -z "$(sql "SHOW DATABASES LIKE 'flash_central'")" ] || fail "a refused command created the database"
"$F" lease pool --mysql "$C" --activity 1 2>/dev/null; [ $? -eq 2 ] || fail "pool without --sku/--total"
"$F" lease reclaim --mysql "$C" --box 1 2>/dev/null; [ $? -eq 2 ] || fail "reclaim without --wal/--from-mysql-only"

# --- init, pool ---------------------------------------------------------
"$F" lease init --mysql "$C" >/dev/null || fail "init"
"$F" lease init --mysql "$C" >/dev/null || fail "init twice"
"$F" lease pool --mysql "$C" --activity 1 --sku 1 --total 200 >/dev/null || fail "pool"
[ "$(sql "SELECT total, unleased FROM flash_central.fs_pool")" = "$(printf '200\t200')" ] || fail "pool row"

# --- boxes --------------------------------------------------------------
box() {   # box N [extra serve args]: segment, sku at 0 units, serve --lease
	local n=$1; shift
	local seg=/flash-cli-lease-$$-$n
	segs="$segs $seg"
	"$F" create --name "$seg" >/dev/null || fail "create $n"
	"$F" load --name "$seg" --activity 1 --sku 1 --units 0 >/dev/null || fail "load $n"
	"$F" serve --name "$seg" --wal "$T/wal$n" --no-snapshot --reconcile-every 0 --lease "$C" \
		--box-id "$n" --lease-min 10 --lease-max 20 --heartbeat-s 1 "$@" >"$T/serve$n.log" 2>&1 &
	eval "serve$n=$!"
	pids="$pids $!"
}
buy() {   # buy N SEG COUNT: COUNT units, retried while leases arrive
	local got=0 u=$((1000 * $1)) tries=0
	while [ "$got" -lt "$3" ]; do
		u=$((u + 1))
		out=$("$B" --name "$2" --activity 1 --sku 1 --from "$u" --to "$u" --log "$T/acked$1") ||
			fail "buyer"
		case $out in "acked 1 "*) got=$((got + 1)) ;; *) tries=$((tries + 1)); sleep 0.05 ;; esac
		[ "$tries" -lt 600 ] || fail "box $1 got no units"
	done
}
leased() { sql "SELECT COALESCE(SUM(units - returned), 0) FROM flash_central.fs_lease WHERE box_id = $1"; }

box 1 --mysql "mysql://root@localhost/flash_box1?socket=$S&create_db=1"
buy 1 /flash-cli-lease-$$-1 7
"$F" lease fence --mysql "$C" --box 1 >"$T/out" 2>&1; [ $? -eq 1 ] || fail "fence of a live box: want 1"
grep -q 'heartbeat is younger than 30 s' "$T/out" || fail "fence refusal message"
[ "$(sql "SELECT state FROM flash_central.fs_box WHERE box_id = 1")" = live ] || fail "refused fence changed the box"
# the applier has every order before the box dies
for i in $(seq 1200); do
	[ "$(sql "SELECT COUNT(*) FROM flash_box1.orders" 2>/dev/null)" = 7 ] && break
	sleep 0.05
done
[ "$(sql "SELECT COUNT(*) FROM flash_box1.orders")" = 7 ] || fail "applier did not catch up"
kill -KILL "$serve1"; wait "$serve1" 2>/dev/null
# read once the box is dead: a live agent may take its next lease at any time
L1=$(leased 1)
sleep 2   # the last heartbeat is older than --stale-s 1 now
"$F" lease fence --mysql "$C" --box 1 --stale-s 1 >"$T/out" || fail "fence of a dead box"
grep -q 'box 1 fenced' "$T/out" || fail "fence output"
"$F" lease fence --mysql "$C" --box 1 --force >/dev/null 2>&1; [ $? -eq 1 ] || fail "fence twice: want 1"
"$F" lease status --mysql "$C" >"$T/out" || fail "status"
grep -q "stranded: $L1 units" "$T/out" || fail "status: stranded $L1"
U0=$(sql "SELECT unleased FROM flash_central.fs_pool")
"$F" lease reclaim --mysql "$C" --box 1 --from-mysql-only >"$T/out" 2>&1; [ $? -eq 1 ] || fail "from-mysql-only without --accept-unknown: want 1"
grep -q 'UNKNOWN' "$T/out" && grep -q 'after LSN [1-9][0-9]*: unknown' "$T/out" || fail "backlog by lease and LSN"
grep -q 'sold up to LSN [0-9]*: 7' "$T/out" || fail "sold from MariaDB"
[ "$(sql "SELECT unleased FROM flash_central.fs_pool")" = "$U0" ] || fail "from-mysql-only returned without --accept-unknown"
"$F" lease reclaim --mysql "$C" --box 1 --from-mysql-only --accept-unknown >"$T/out" || fail "accept-unknown"
[ "$(sql "SELECT unleased FROM flash_central.fs_pool")" = $((U0 + L1 - 7)) ] || fail "accept-unknown returned the wrong count"

box 2
buy 2 /flash-cli-lease-$$-2 5
kill -KILL "$serve2"; wait "$serve2" 2>/dev/null
L2=$(leased 2)
"$F" lease fence --mysql "$C" --box 2 --force >"$T/out" || fail "fence --force"
grep -q 'the heartbeat condition was dropped' "$T/out" || fail "--force says so"
U1=$(sql "SELECT unleased FROM flash_central.fs_pool")
"$F" lease reclaim --mysql "$C" --box 2 --wal "$T/wal2" >"$T/out" || fail "reclaim --wal"
grep -q "sku 1/1: 5 sold by box 2, $((L2 - 5)) units back" "$T/out" || fail "reclaim output"
[ "$(sql "SELECT unleased FROM flash_central.fs_pool")" = $((U1 + L2 - 5)) ] || fail "reclaim --wal count"
"$F" lease reclaim --mysql "$C" --box 2 --wal "$T/wal2" >"$T/out" || fail "reclaim twice"
grep -q 'nothing to reclaim' "$T/out" || fail "second reclaim did something"
[ "$(sql "SELECT unleased FROM flash_central.fs_pool")" = $((U1 + L2 - 5)) ] || fail "second reclaim changed the pool"
"$F" lease status --mysql "$C" >"$T/out" || fail "status"
grep -q 'stranded: 0 units' "$T/out" || fail "stranded after reclaim"
grep -q MISMATCH "$T/out" && fail "pool does not add up"
[ "$(sql "SELECT unleased FROM flash_central.fs_pool")" = $((200 - 12)) ] || fail "pool = total - sold"
sql "DROP DATABASE flash_central; DROP DATABASE flash_box1"
echo "cli_lease: ok"
