#!/bin/bash
# cli_durable_sigint.sh FLASHSTOCK -- Ctrl-C leaves nothing behind: SIGINT
# to `flashstock demo` while its MariaDB starts, and again while the buyers
# race, must end the demo with exit 1 and remove the segment, the private
# directory (WAL, MariaDB datadir) and every process it started (no
# mariadbd of that directory left).  The sale is far too large to finish
# before the signal, so the interrupt always lands.
set -u
F=${1:?usage: cli_durable_sigint.sh path/to/flashstock}
T=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; [ ! -f "$T/err" ] || cat "$T/err" >&2; exit 1; }

# run_until PATTERN: start a large demo, SIGINT it once stderr shows PATTERN
run_until() {
	"$F" demo --buyers 4000000 --units 1000000 --procs 2 > "$T/out" 2> "$T/err" &
	pid=$!
	local dpid=$pid i=0
	until grep -q -- "$1" "$T/err"; do
		kill -0 "$pid" 2>/dev/null || fail "demo exited before '$1'"
		i=$((i + 1))
		[ $i -lt 1200 ] || fail "no '$1' on stderr within 120 s"
		sleep 0.1
	done
	kill -INT "$pid"
	wait "$pid"; rc=$?
	pid=
	[ $rc = 1 ] || fail "demo interrupted at '$1' exited $rc, want 1"
	grep -q 'interrupted by signal 2' "$T/err" || fail "no 'interrupted' message"
	dir=$(sed -n 's/^demo: starting a private MariaDB in \(.*\)\/mariadb .*/\1/p' "$T/err")
	[ -n "$dir" ] || fail "no MariaDB start line"
	[ ! -e "$dir" ] || fail "private directory $dir left behind"
	if pgrep -f -- "--defaults-file=$dir/" >/dev/null; then fail "a MariaDB of $dir still runs"; fi
	if ls /dev/shm | grep -q "^flashstock-demo-$dpid-"; then fail "segment of demo $dpid left behind"; fi
	echo "interrupted at '$1': exit 1, $dir removed, no server left"
}
run_until 'starting a private MariaDB'
run_until 'demo: *[0-9.]* s  orders'
echo "cli_durable_sigint: all checks passed"
