#!/bin/sh
# galera_fixture_test.sh -- tests/fixtures/galera.sh does what it promises:
# three nodes form one Synced cluster on 127.0.0.1 only, run as an
# unprivileged user, a row written on node 1 is read on node 3 (socket and
# TCP accounts), a SIGKILLed node 2 restarted rejoins (by IST) and reads the
# rows written while it was down, a SIGKILLed node 3 whose data is lost
# rejoins by SST (rsync, as the cluster's user) with every row, and stop
# leaves no process, no listening port, no directory and no user.
set -u
sh=${1:?usage: galera_fixture_test.sh path/to/galera.sh}
T=$(mktemp -d "${TMPDIR:-/tmp}/fs-galfix.XXXXXX") || exit 1
chmod 0711 "$T"     # the cluster's user passes through it to $D
D=$T/c
fail() {
	echo "FAIL: $*" >&2
	# what the cluster looked like, for the log
	"$sh" status "$D" >&2 2>&1
	[ -f "$D/start.log" ] && cat "$D/start.log" >&2
	for l in "$D"/n*/error.log; do
		[ -f "$l" ] && { echo "---- $l ----"; grep -E '\[(ERROR|Warning)\]|Shifting|SST|IST' "$l" | tail -n 15; } >&2
	done
	[ -n "${KEEP:-}" ] && exit 1
	"$sh" stop "$D" >/dev/null 2>&1
	rm -rf "$T"
	exit 1
}
# Reads are causal (wsrep_sync_wait = 1): a node applies another node's
# committed write sets asynchronously, so without it a read just after a
# write elsewhere may not see it yet (CI saw node 3 miss node 1's row).
sql() { # sql I SQL: as root over node I's socket
	mariadb --no-defaults --socket="$D/n$1/mysqld.sock" -uroot -B -N \
		-e "SET SESSION wsrep_sync_wait = 1; $2"
}
sql_tcp() { # sql_tcp I SQL: as user flash over node I's TCP port
	hp=$(sed -n "${1}p" "$D/nodes")
	mariadb --defaults-file="$D/client.cnf" --host="${hp%:*}" --port="${hp##*:}" -B -N \
		-e "SET SESSION wsrep_sync_wait = 1; $2"
}
listening() { # listening PORT: exit 0 if some socket listens on TCP PORT
	ss -Hltn "sport = :$1" | grep -q .
}

out=$(FLASH_GALERA_OWNER=$$ "$sh" start "$D" 3) || fail "start"
eval "$out"
[ "$FLASH_GALERA_DIR" = "$(cd "$D" && pwd -P)" ] || fail "FLASH_GALERA_DIR=$FLASH_GALERA_DIR"
[ "$FLASH_GALERA_N" = 3 ] || fail "FLASH_GALERA_N=$FLASH_GALERA_N"
echo "$out" | grep -qi password && fail "start printed a password"

# --- the cluster formed ----------------------------------------------------
"$sh" status "$D" >"$T/status" || { cat "$T/status" >&2; fail "status after start is not all Synced"; }
[ "$(wc -l <"$D/nodes")" = 3 ] || fail "nodes has $(wc -l <"$D/nodes") lines"
[ "$(grep -c '^127\.0\.0\.1:[0-9][0-9]*$' "$D/nodes")" = 3 ] || fail "nodes is not host:port lines: $(cat "$D/nodes")"
[ "$(paste -sd, "$D/nodes")" = "$FLASH_GALERA_NODES" ] || fail "FLASH_GALERA_NODES differs from nodes"
for i in 1 2 3; do
	[ "$(sql $i "SHOW STATUS LIKE 'wsrep_cluster_size'" | cut -f2)" = 3 ] || fail "node $i: cluster size is not 3"
	[ "$(sql $i "SHOW STATUS LIKE 'wsrep_local_state_comment'" | cut -f2)" = Synced ] || fail "node $i not Synced"
	[ "$(sql $i 'SELECT @@bind_address')" = 127.0.0.1 ] || fail "node $i binds $(sql $i 'SELECT @@bind_address')"
	p=$(sed -n "${i}p" "$D/pids")
	kill -0 "$p" 2>/dev/null || fail "node $i: pid $p from pids does not run"
	uid=$(awk '/^Uid:/ {print $2}' "/proc/$p/status")
	[ "$(id -u)" -ne 0 ] || [ "$uid" -ne 0 ] || fail "node $i (pid $p) runs as root"
	# every TCP socket it listens on is bound to 127.0.0.1
	ss -Hltnp | grep "pid=$p," | awk '{print $4}' >"$T/listen.$i"
	[ -s "$T/listen.$i" ] || fail "node $i listens on no TCP port"
	grep -v '^127\.0\.0\.1:' "$T/listen.$i" && fail "node $i listens outside 127.0.0.1"
done
urls=$(echo "$FLASH_GALERA_URLS" | tr ',' '\n' | grep -c '^mysql://root@localhost/flash_central?socket=')
[ "$urls" = 3 ] || fail "FLASH_GALERA_URLS: $FLASH_GALERA_URLS"
[ "$(stat -c %a "$D/client.cnf")" = 600 ] || fail "client.cnf mode $(stat -c %a "$D/client.cnf")"
[ "$(stat -c %a "$D/tcp_urls")" = 600 ] || fail "tcp_urls mode $(stat -c %a "$D/tcp_urls")"
ports=$(sed 's/^.*=//' "$D/ports")

# --- a row written on node 1 is read on node 3 -----------------------------
sql 1 "CREATE TABLE flash_central.t (id INT PRIMARY KEY, v VARCHAR(16));
       INSERT INTO flash_central.t VALUES (1, 'one')" || fail "write on node 1"
[ "$(sql 3 'SELECT v FROM flash_central.t WHERE id = 1')" = one ] || fail "node 3 does not read node 1's row"
[ "$(sql_tcp 3 'SELECT v FROM t WHERE id = 1')" = one ] || fail "user flash over TCP does not read it on node 3"

# --- node 2 SIGKILLed, rows written meanwhile, node 2 rejoins ---------------
p2=$(sed -n 2p "$D/pids")
"$sh" kill "$D" 2 || fail "kill node 2"
kill -0 "$p2" 2>/dev/null && fail "node 2 (pid $p2) still runs after kill"
[ "$(sed -n 2p "$D/pids")" = 0 ] || fail "pids still lists node 2"
"$sh" status "$D" >"$T/status" && fail "status is all-Synced with node 2 dead"
grep -q '^2 .* state down ' "$T/status" || fail "status does not say node 2 is down: $(cat "$T/status")"
sql 1 "INSERT INTO flash_central.t VALUES (2, 'two')" || fail "write on node 1 with node 2 down"
sql_tcp 3 "INSERT INTO t VALUES (3, 'three')" || fail "write on node 3 with node 2 down"
"$sh" restart "$D" 2 || fail "restart node 2"
[ "$(sed -n 2p "$D/pids")" != 0 ] || fail "pids does not list node 2 again"
"$sh" status "$D" >"$T/status" || { cat "$T/status" >&2; fail "status after restart is not all Synced"; }
[ "$(sql 2 'SELECT GROUP_CONCAT(v ORDER BY id) FROM flash_central.t')" = "one,two,three" ] ||
	fail "node 2 reads $(sql 2 'SELECT GROUP_CONCAT(v ORDER BY id) FROM flash_central.t')"
[ "$(cat "$D/n2/rejoined_by")" = IST ] || fail "node 2 rejoined by $(cat "$D/n2/rejoined_by"), not IST"
# and it takes writes again, seen by the others
sql 2 "INSERT INTO flash_central.t VALUES (4, 'four')" || fail "write on node 2 after rejoin"
[ "$(sql 1 'SELECT v FROM flash_central.t WHERE id = 4')" = four ] || fail "node 1 does not read node 2's row"

# --- node 3 SIGKILLed and its data lost: it rejoins by SST -----------------
"$sh" kill "$D" 3 || fail "kill node 3"
find "$D/n3/data" -mindepth 1 -delete || fail "empty node 3's datadir"
sql 1 "INSERT INTO flash_central.t VALUES (5, 'five')" || fail "write on node 1 with node 3 down"
"$sh" restart "$D" 3 || fail "restart node 3 on an empty datadir"
[ "$(cat "$D/n3/rejoined_by")" = SST ] || fail "node 3 rejoined by $(cat "$D/n3/rejoined_by"), not SST"
"$sh" status "$D" >"$T/status" || { cat "$T/status" >&2; fail "status after the SST is not all Synced"; }
[ "$(sql 3 'SELECT GROUP_CONCAT(v ORDER BY id) FROM flash_central.t')" = "one,two,three,four,five" ] ||
	fail "node 3 reads $(sql 3 'SELECT GROUP_CONCAT(v ORDER BY id) FROM flash_central.t') after its SST"
[ "$(sql_tcp 3 'SELECT CURRENT_USER()')" = flash@127.0.0.1 ] || fail "user flash lost on node 3 after the SST"

# --- stop leaves nothing ---------------------------------------------------
user=$(cat "$D/user")
pids=$(cat "$D/pids")
"$sh" stop "$D" || fail "stop"
for p in $pids; do kill -0 "$p" 2>/dev/null && fail "pid $p still runs after stop"; done
pgrep -f -- "--defaults-file=$(cd "$T" && pwd -P)/c/" >/dev/null && fail "a node of $D still runs"
for p in $ports; do listening "$p" && fail "port $p still listens after stop"; done
[ -e "$D" ] && fail "$D still exists after stop"
if [ "$(id -u)" -eq 0 ] && id -u "$user" >/dev/null 2>&1; then fail "user $user still exists"; fi
"$sh" stop "$D" >/dev/null 2>&1 || fail "second stop is not a no-op"
rm -rf "$T"
echo "galera fixture: ok"
