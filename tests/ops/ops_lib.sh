# ops_lib.sh -- shared by the operator-mistakes tests (tests/ops/ops_*.sh); sourced.
#
# The caller sets fs (the flashstock binary), buyer (tests/ops_buyer), t (a
# private scratch directory) and defines fail().  Every segment name is
# /flash-ops-<pid>-<case>, so parallel runs never meet.

# Small segments: the cases need a few hundred orders, not 200 MiB.
ops_caps="--activities 4 --skus 16 --shards 16 --users 4096 --orders 4096 --tokens 64 \
--requests 64 --locks 16 --procs 16 --ring 1024"
ops_segs=""
ops_pids=""

# ops_create NAME [create options]: create and load activity 1, sku 1, 1000 units.
ops_create() {
	local name=$1
	shift
	"$fs" create --name "$name" $ops_caps "$@" >/dev/null || fail "create $name: exit $?"
	ops_segs="$ops_segs $name"
	ops_load "$name"
}

ops_load() {
	"$fs" load --name "$1" --activity 1 --sku 1 --units 1000 >/dev/null || fail "load $1: exit $?"
}

# ops_serve_bg LOG serve-args...: start `flashstock serve` in the background
# and wait for its "serving segment" line; sets ops_pid.
ops_serve_bg() {
	local log=$1
	shift
	"$fs" serve "$@" 2>"$log" &
	ops_pid=$!
	ops_pids="$ops_pids $ops_pid"
	local i
	for i in $(seq 1 200); do
		grep -q "serving segment" "$log" && return 0
		kill -0 "$ops_pid" 2>/dev/null || fail "serve $* exited before serving: $(cat "$log")"
		sleep 0.05
	done
	fail "serve $* did not start: $(cat "$log")"
}

# ops_serve_stop PID: SIGTERM, then its exit code must be 0.
ops_serve_stop() {
	kill -TERM "$1"
	wait "$1"
	local rc=$?
	[ "$rc" -eq 0 ] || fail "serve (pid $1) exit $rc after SIGTERM"
}

# ops_buy NAME FROM TO LOG [--sync]: orders for users FROM..TO, acknowledged ones logged.
ops_buy() {
	"$buyer" --name "$1" --activity 1 --sku 1 --from "$2" --to "$3" --log "$4" ${5:-} \
		>>"$t/buyer.out" 2>&1 || fail "buyer $2..$3 on $1: exit $?: $(tail -3 "$t/buyer.out")"
}

# ops_check_acked LOG WAL: every order number in LOG (the buyers' own
# acknowledgements) is an order record of WAL exactly once, and no order
# number is in WAL twice.
ops_check_acked() {
	local log=$1 wal=$2
	"$fs" wal dump --wal "$wal" >"$t/dump" 2>"$t/dump.err" || fail "wal dump $wal: $(cat "$t/dump.err")"
	sed -n 's/^[0-9]* order .* order=\([0-9]*\) .*/\1/p' "$t/dump" | sort >"$t/dump.orders"
	local dup
	dup=$(uniq -d "$t/dump.orders" | head -5 | tr '\n' ' ')
	[ -z "$dup" ] || fail "order number(s) in WAL $wal twice: $dup"
	local n missing
	n=$(wc -l <"$log")
	[ "$n" -gt 0 ] || fail "no acknowledged order in $log"
	missing=$(sort "$log" | comm -23 - "$t/dump.orders" | head -5 | tr '\n' ' ')
	[ -z "$missing" ] || fail "acknowledged order(s) missing from WAL $wal: $missing"
	echo "  $n acknowledged orders, each in $wal exactly once"
}

# ops_mariadb_start: a private MariaDB in $t/mariadb (tests/fixtures/mariadb.sh);
# sets ops_mysql_defaults (an option file naming the database and its user).
ops_mariadb_start() {
	ops_fixture=$(dirname "$0")/../fixtures/mariadb.sh
	local env
	env=$(sh "$ops_fixture" start "$t/mariadb" 2>"$t/mariadb.err") || fail "MariaDB: $(tail -5 "$t/mariadb.err")"
	eval "$env"
	ops_mysql_defaults=$FLASH_MYSQL_DEFAULTS_FILE
	ops_mariadb_dir=$t/mariadb
}

# ops_check_mysql LOG: every order number in LOG is in MariaDB's orders table
# (the applier applies each record once; order_no is its primary key).  The
# applier trails the WAL: the daemon must still run; this waits up to 60 s
# for it to catch up before it calls a number missing.
ops_check_mysql() {
	local log=$1 missing n i
	for i in $(seq 1 300); do
		mariadb --defaults-file="$ops_mysql_defaults" -N -e "SELECT order_no FROM orders" \
			2>"$t/mysql.err" | sort -n >"$t/mysql.orders" ||
			fail "SELECT orders: $(cat "$t/mysql.err")"
		missing=$(sort -n "$log" | comm -23 - "$t/mysql.orders" | head -5 | tr '\n' ' ')
		[ -z "$missing" ] && break
		sleep 0.2
	done
	[ -z "$missing" ] || fail "acknowledged order(s) missing from MariaDB: $missing"
	n=$(wc -l <"$log")
	echo "  $n acknowledged orders, each in MariaDB's orders table"
}

# ops_show LOG: print the log's error and warn lines (what the operator reads).
ops_show() {
	grep -E '\[(error|warn)\]' "$1" | sed 's/^[^ ]* /  said: /'
}

ops_cleanup() {
	local p s
	for p in $ops_pids; do kill -9 "$p" 2>/dev/null; done
	for p in $ops_pids; do wait "$p" 2>/dev/null; done
	# --force: a case's leftovers (records no daemon drained) are given up
	# on purpose; a plain destroy refuses them and would leave the segment
	for s in $ops_segs; do
		"$fs" destroy --name "$s" --force >/dev/null 2>&1 || "$fs" destroy --name "$s" >/dev/null 2>&1
	done
	[ -z "${ops_mariadb_dir:-}" ] || sh "$ops_fixture" stop "$ops_mariadb_dir" >/dev/null 2>&1
	rm -rf "$t"
}
