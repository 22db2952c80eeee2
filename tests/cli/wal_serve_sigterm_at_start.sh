#!/bin/sh
# wal_serve_sigterm_at_start.sh FLASHSTOCK -- a SIGTERM that reaches
# `flashstock serve` while it is still starting (here: during the one
# connection it makes to check its --mysql URL, to a server that accepts
# and never answers) is a stop like any other: serve starts, drains the
# records already in the rings into the WAL, syncs them and exits 0 -- not
# 143, the default action of a signal nobody caught yet.
set -u
fs=$1
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-sigterm-start-XXXXXX")
name=/flash-sigterm-start-$$
pid=
lpid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	[ -n "$lpid" ] && kill -KILL "$lpid" 2>/dev/null
	"$fs" destroy --name "$name" --force >/dev/null 2>&1 || "$fs" destroy --name "$name" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- serve log:"; cat "$d/log" 2>/dev/null; exit 1; }

"$fs" create --name "$name" --procs 8 --users 1024 --orders 1024 --tokens 64 \
	--requests 64 --skus 16 --shards 64 --activities 4 >/dev/null || fail "create"
# One activity and two skus: three records in the rings before serve starts.
"$fs" load --name "$name" --activity 7 --sku 1 --units 100 --sku 2 --units 5 >/dev/null \
	|| fail "load"

# A "MySQL" on 127.0.0.1 that accepts connections and never says a word
# until it closes them all: serve's URL check waits in it.
python3 - "$d" <<'EOF' &
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(os.path.join(d, "port.tmp"), "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
held = []
end = time.time() + 60
s.settimeout(0.2)
while time.time() < end and not os.path.exists(os.path.join(d, "close")):
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    held.append(c)
    open(os.path.join(d, "accepted"), "a").close()
EOF
lpid=$!
i=0
until [ -s "$d/port" ]; do
	i=$((i + 1))
	[ $i -gt 200 ] && fail "the silent listener did not start"
	sleep 0.05
done
port=$(cat "$d/port")

"$fs" serve --name "$name" --wal "$d/wal" --idle-us 200 \
	--mysql "mysql://root@127.0.0.1:$port/flash" 2>"$d/log" &
pid=$!
# serve is inside its URL check once the listener has its connection
i=0
until [ -e "$d/accepted" ]; do
	i=$((i + 1))
	[ $i -gt 200 ] && fail "serve did not connect to the listener"
	kill -0 "$pid" 2>/dev/null || fail "serve exited early"
	sleep 0.05
done
grep -q "serving segment" "$d/log" && fail "serve was past its start already: the test proves nothing"
kill -TERM "$pid"
# then the "server" goes away: the check fails at once, and so do the
# applier's attempts while serve stops (MySQL down is not a reason to stay)
touch "$d/close"
wait "$pid"
rc=$?
pid=
[ $rc -eq 0 ] || fail "serve exited $rc after a SIGTERM during its start (143: killed by the signal)"
grep -q "stopping: 3 records written, durable LSN 3" "$d/log" || fail "records not all written"
"$fs" wal verify --wal "$d/wal" >"$d/v" || fail "wal verify: exit $?"
grep -q "1 files, 3 frames, LSN 1..3" "$d/v" || fail "wal verify: $(cat "$d/v")"
echo "ok: a SIGTERM during serve's start (its MySQL URL check) stopped it cleanly:"
echo "    3 records drained, synced and verified in the WAL, exit 0"
