#!/bin/bash
# monitoring_live.sh -- the alert rules and the dashboard (dashboards/) against
# a real Prometheus scraping a live `flashstock serve --metrics` with MariaDB:
#
#  1. a private MariaDB (tests/fixtures/mariadb.sh), a segment, `serve --mysql
#     --metrics 127.0.0.1:0` (reconciler every second), a feed consumer
#     registered;
#  2. a private Prometheus on 127.0.0.1 (its TSDB in the temporary directory,
#     scrape and evaluation every 1 s) loading a copy of the shipped rules in
#     which only the `for:` durations are rewritten to 2s -- the shipped ones
#     (a minute for MariaDB down) would make the test wait that long; the
#     script checks that the copy differs in no other line;
#  3. every alert loaded and evaluating, none pending or firing while the sale
#     is healthy -- before and after the orders (tests/deploy/monitoring_traffic.c:
#     acknowledged, sold out, limit refusals, lock waits), once Prometheus has
#     seen MariaDB's sold units equal memory's;
#  4. MariaDB frozen (SIGSTOP of its server by pid, mariadb.sh freeze): the
#     shipped FlashstockMariaDBDown must fire, for this daemon, with its
#     annotations; thawed (SIGCONT), it must go;
#  5. every expression of the Grafana dashboard evaluated through
#     /api/v1/query, $instance as Grafana's "All" (.+) and $__rate_interval as
#     1m (the whole sale lies within it): each must return data, not all NaN.
#
# Every wait is bounded and fails with what it last saw; nothing measures time.
# Everything started here is stopped by pid on exit.
#
# usage: monitoring_live.sh FLASHSTOCK MONITORING_TRAFFIC MARIADB_SH SOURCE_DIR PROMETHEUS
set -u
F=${1:?usage: monitoring_live.sh FLASHSTOCK MONITORING_TRAFFIC MARIADB_SH SOURCE_DIR PROMETHEUS}
TR=${2:?} M=${3:?} SRC=${4:?} PROM=${5:?}
RULES=$SRC/dashboards/flashstock.rules.yml
DASH=$SRC/dashboards/grafana-flashstock.json
Q="python3 $SRC/tests/deploy/monitoring_prom.py"

T=$(mktemp -d /tmp/flash-mon.XXXXXX) || exit 1
seg=/fs-mon-$$
spid='' ppid_='' db=0 frozen=0
cleanup() {
	[ "$frozen" = 1 ] && sh "$M" thaw "$T/db" >/dev/null 2>&1
	[ -n "$ppid_" ] && kill -TERM "$ppid_" 2>/dev/null && wait "$ppid_" 2>/dev/null
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ "$db" = 1 ] && sh "$M" stop "$T/db" >/dev/null 2>&1
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "monitoring_live: FAIL: $*" >&2
	for f in serve.log prometheus.log; do
		[ -s "$T/$f" ] && { echo "--- last lines of $f:" >&2; tail -n 15 "$T/$f" >&2; }
	done
	exit 1
}
step() { echo "== $*"; }

# A TCP port no socket of this machine uses now (per /proc/net/tcp*), in
# 20000..32767, below the kernel's ephemeral range (as the fixtures pick theirs).
free_port() {
	local p hex
	while :; do
		p=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 12768 ))
		hex=$(printf '%04X' "$p")
		if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -qi ":$hex\$"; then
			echo "$p"
			return 0
		fi
	done
}

# ---- 1. MariaDB, the segment, the daemon --------------------------------------
step "MariaDB, segment, serve --mysql --metrics"
db=1
env=$(sh "$M" start "$T/db" 2>"$T/mariadb.log") || { cat "$T/mariadb.log" >&2; fail "MariaDB did not start"; }
eval "$env"
"$F" create --name "$seg" --activities 4 --skus 8 --shards 8 --users 1024 --orders 1024 \
	--tokens 16 --requests 256 --locks 8 --procs 16 --ring 1024 >/dev/null || fail "create"
"$F" load --name "$seg" --activity 1 --sku 1 --units 40 >/dev/null || fail "load"
"$F" load --name "$seg" --activity 2 --sku 1 --units 10 >/dev/null || fail "load activity 2"
"$F" serve --name "$seg" --wal "$T/wal" --mysql "$FLASH_MYSQL_URL" --metrics 127.0.0.1:0 \
	--reconcile-every 1 --no-snapshot 2>"$T/serve.log" &
spid=$!
for _ in $(seq 1 200); do
	grep -q "metrics on port" "$T/serve.log" && break
	kill -0 "$spid" 2>/dev/null || fail "serve exited"
	sleep 0.05
done
mport=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$T/serve.log" | tail -n 1)
[ -n "$mport" ] || fail "serve did not say its metrics port"
target=127.0.0.1:$mport
"$F" feed --wal "$T/wal" --consumer dashboard >/dev/null || fail "feed: register consumer dashboard"

# ---- 2. Prometheus with the rules (for: shortened) ------------------------------
step "Prometheus on 127.0.0.1, scraping $target every 1 s"
sed -E 's/^([[:space:]]+for:[[:space:]]*).*/\12s/' "$RULES" >"$T/rules.yml"
[ "$(grep -c '^[[:space:]]*for:' "$T/rules.yml")" = "$(grep -c '^[[:space:]]*- alert:' "$RULES")" ] ||
	fail "not one for: per alert in $RULES"
diff <(grep -v '^[[:space:]]*for:' "$RULES") <(grep -v '^[[:space:]]*for:' "$T/rules.yml") >&2 ||
	fail "the test's copy of the rules differs in more than for:"
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $T/rules.yml
scrape_configs:
  - job_name: flashstock
    static_configs:
      - targets: ['$target']
EOF
for attempt in 1 2 3; do   # a port taken between the pick and the bind: pick again
	pport=$(free_port)
	"$PROM" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
		--web.listen-address="127.0.0.1:$pport" --log.level=warn 2>"$T/prometheus.log" &
	ppid_=$!
	P=http://127.0.0.1:$pport
	for _ in $(seq 1 100); do
		kill -0 "$ppid_" 2>/dev/null || break
		grep -q "address already in use" "$T/prometheus.log" && break
		(exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && break
		sleep 0.1
	done
	kill -0 "$ppid_" 2>/dev/null && ! grep -q "address already in use" "$T/prometheus.log" && break
	kill -TERM "$ppid_" 2>/dev/null; wait "$ppid_" 2>/dev/null; ppid_=
	[ "$attempt" = 3 ] && fail "prometheus did not start: $(tail -n 5 "$T/prometheus.log")"
done
$Q ready "$P" 30 || fail "Prometheus not ready"
$Q rules-loaded "$P" "$RULES" 20 || fail "the rules are not loaded"
$Q wait-value "$P" "up{job=\"flashstock\",instance=\"$target\"}" 1 20 || fail "Prometheus does not scrape serve"
$Q wait-value "$P" "flashstock_mysql_connected{instance=\"$target\"}" 1 20 || fail "MariaDB not seen connected"

# ---- 3. a healthy sale: no alert ------------------------------------------------
step "a healthy sale raises no alert"
$Q evaluated "$P" 3 20 || fail "the rules are not evaluated"
$Q no-alerts "$P" || fail "an alert before any order"
out=$("$TR" --name "$seg" --activity 1 --sku 1 --users 60 --lock-waits 20 --reservations 10 \
	--reserve-activity 2) || fail "monitoring_traffic: $out"
[ "$out" = "ok 40 sold_out 20 limit 10 lock_waits 20 reserved 10" ] || fail "monitoring_traffic printed '$out'"
echo "traffic: $out"
$Q wait-value "$P" "flashstock_orders_total{instance=\"$target\"}" 50 20 || fail "the orders are not seen"
# the ten reservations were never paid: the daemon expires them after 300 ms
$Q wait-value "$P" "flashstock_reservations_expired_total{instance=\"$target\"}" 10 20 ||
	fail "the daemon did not expire the unpaid reservations"
# the reconciler read MariaDB after the applier: memory and MariaDB agree
$Q wait-value "$P" "flashstock_sku_mysql_sold{instance=\"$target\",activity=\"1\",sku=\"1\"}" 40 30 ||
	fail "MariaDB's sold units never reached 40 in Prometheus"
$Q wait-value "$P" "flashstock_sku_mysql_diff_units{instance=\"$target\",activity=\"1\",sku=\"1\"}" 0 20 ||
	fail "memory and MariaDB never agreed"
# three seconds of evaluations with for: 2s: anything the sale set off would be firing
$Q evaluated "$P" 3 20 || fail "the rules are not evaluated"
$Q no-alerts "$P" || fail "an alert after a healthy sale"

# ---- 4. MariaDB frozen: FlashstockMariaDBDown fires, thawed: it goes -----------------
step "MariaDB frozen (SIGSTOP)"
frozen=1
sh "$M" freeze "$T/db" 2>>"$T/mariadb.log" || fail "mariadb.sh freeze"
$Q wait-alert "$P" FlashstockMariaDBDown firing 30 job=flashstock instance="$target" severity=critical ||
	fail "FlashstockMariaDBDown did not fire while MariaDB was frozen"
sh "$M" thaw "$T/db" 2>>"$T/mariadb.log" || fail "mariadb.sh thaw"
frozen=0
step "MariaDB thawed (SIGCONT)"
$Q wait-alert "$P" FlashstockMariaDBDown gone 30 || fail "FlashstockMariaDBDown stayed after MariaDB came back"

# ---- 5. the dashboard ------------------------------------------------------------
step "every dashboard expression returns data"
$Q dashboard "$P" "$DASH" instance=.+ __rate_interval=1m || fail "the dashboard's expressions"

kill -TERM "$spid"
wait "$spid"; rc=$?
spid=
[ $rc = 0 ] || fail "serve exit $rc at SIGTERM"
kill -TERM "$ppid_"
wait "$ppid_"; rc=$?
ppid_=
[ $rc = 0 ] || fail "prometheus exit $rc at SIGTERM"
echo "PASS"
