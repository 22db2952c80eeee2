#!/bin/sh
# mysql_fixture_test.sh -- tests/fixtures/mariadb.sh does what it promises:
# two private instances at once, no TCP port, export lines for eval,
# idempotent start/stop, a foreign directory refused, nothing left running.
set -u
sh=${1:?usage: mysql_fixture_test.sh path/to/mariadb.sh}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
A=$(mktemp -d "${TMPDIR:-/tmp}/fs-fix-a.XXXXXX")
B=$(mktemp -d "${TMPDIR:-/tmp}/fs-fix-b.XXXXXX")
F=$(mktemp -d "${TMPDIR:-/tmp}/fs-fix-f.XXXXXX")
cleanup() { "$sh" stop "$A" 2>/dev/null; "$sh" stop "$B" 2>/dev/null; rm -rf "$F"; }
sql() { mariadb --no-defaults --socket="$1/mysqld.sock" -uroot -B -N -e "$2"; }

out=$(FLASH_MARIADB_DIR=$A "$sh" start 2>/dev/null) || fail "start A"
echo "$out" | grep -q "^export FLASH_MYSQL_SOCKET='$A/mysqld.sock'$" || fail "start A printed: $out"
eval "$out"
[ "$FLASH_MARIADB_DIR" = "$A" ] || fail "eval gave FLASH_MARIADB_DIR=$FLASH_MARIADB_DIR"
"$sh" start "$B" >/dev/null 2>&1 || fail "start B"
[ "$(sql "$A" 'SELECT @@skip_networking, @@port')" = "$(printf '1\t0')" ] || fail "A listens on TCP"
[ "$(sql "$B" "SELECT @@datadir")" = "$B/data/" ] || fail "B datadir: $(sql "$B" 'SELECT @@datadir')"
[ "$(sql "$A" "SHOW DATABASES LIKE 'flashstock'")" = flashstock ] || fail "no database flashstock in A"
mariadb --defaults-file="$A/client.cnf" -B -N -e 'SELECT CURRENT_USER()' | grep -q '^flash@localhost$' \
	|| fail "client.cnf does not log in as flash"
[ "$(stat -c %a "$A/client.cnf")" = 600 ] || fail "client.cnf mode $(stat -c %a "$A/client.cnf")"
echo "$out" | grep -qi password && fail "start printed a password"

# Idempotent start: same instance, same answer.
out2=$(FLASH_MARIADB_DIR=$A "$sh" start 2>/dev/null) || fail "second start A"
[ "$out" = "$out2" ] || fail "second start printed something else"

"$sh" stop "$A" >/dev/null 2>&1 || fail "stop A"
[ -e "$A" ] && fail "A still exists after stop"
pgrep -f -- "--defaults-file=$A/my.cnf" >/dev/null && fail "A's server still runs"
"$sh" stop "$A" >/dev/null 2>&1 || fail "second stop A is not a no-op"
sql "$B" 'SELECT 1' >/dev/null || fail "stopping A touched B"
"$sh" env "$A" >/dev/null 2>&1 && fail "env on a stopped instance succeeded"

# A directory that is not ours is never used or removed.
echo keep >"$F/precious"
"$sh" start "$F" >/dev/null 2>&1 && fail "start in a foreign directory succeeded"
"$sh" stop "$F" >/dev/null 2>&1 && fail "stop of a foreign directory succeeded"
[ -f "$F/precious" ] || fail "a foreign file was removed"

"$sh" stop "$B" >/dev/null 2>&1 || fail "stop B"
pgrep -f -- "--defaults-file=$B/my.cnf" >/dev/null && fail "B's server still runs"
rm -rf "$F"
echo "mysql fixture script: ok"
