#!/bin/sh
# demo_boxes_test.sh -- `flashstock demo --boxes 3` on the build at hand.
#
#   demo_boxes_test.sh FLASHSTOCK GALERA_SH
#
# The lease agent and the backstop are in the build (`flashstock lease`,
# `serve --lease ... --backstop ...`; a build without them fails): the demo
# runs three boxes on a private Galera cluster, exits 0, and its JSON says
# every invariant held (sold <= total, sold + held + pool = total, every
# acknowledged order in MariaDB once, no user over the limit) with units
# actually leased and sold.  It leaves nothing behind: no directory, no
# segment, no server, no daemon.
set -u
fs=${1:?usage: demo_boxes_test.sh FLASHSTOCK GALERA_SH}
gsh=${2:?usage: demo_boxes_test.sh FLASHSTOCK GALERA_SH}
T=$(mktemp -d "${TMPDIR:-/tmp}/fs-demoboxes.XXXXXX") || exit 1
chmod 0711 "$T"            # the cluster's user passes through the demo's directory
fail() {
	echo "FAIL: $*" >&2
	for d in "$T"/flashstock-boxes.*/galera; do [ -d "$d" ] && "$gsh" stop "$d" >/dev/null 2>&1; done
	rm -rf "$T"
	exit 1
}

# the lease work is in this build: a flashstock without it fails here, it
# does not pass
"$fs" lease --help >/dev/null 2>&1 || fail "this flashstock has no \`lease\` command"
help=$("$fs" serve --help 2>/dev/null)
echo "$help" | grep -q -- '--lease' || fail "serve has no --lease"
echo "$help" | grep -q -- '--backstop' || fail "serve has no --backstop"

TMPDIR=$T "$fs" demo --boxes 3 --buyers 12000 --units 1200 --sale-s 4 --json \
	>"$T/out" 2>"$T/err" &
demo=$!
wait $demo
rc=$?
echo "demo exit $rc"
cat "$T/err" | grep -E '^demo: step|failed' >&2

[ $rc = 0 ] || { cat "$T/out" "$T/err" >&2; fail "demo --boxes 3 exited $rc"; }
json=$(tail -n 1 "$T/out")
cat "$T/out"
echo "$json" | grep -q '^{"ok":true,"boxes":3,' || fail "JSON does not say ok: $json"
for k in users_over_limit orders_missing orders_extra unexpected; do
	echo "$json" | grep -q "\"$k\":0," || fail "$k is not 0: $json"
done
top=$(echo "$json" | sed 's/,"per_box".*//')     # the totals, not a box's figures
sold=$(echo "$top" | sed -n 's/.*"sold":\([0-9]*\),.*/\1/p')
leased=$(echo "$top" | sed -n 's/.*"leased":\([0-9]*\),"sold".*/\1/p')
[ "${sold:-0}" -gt 0 ] && [ "$sold" -le 1200 ] || fail "sold $sold not in 1..1200"
[ "${leased:-0}" -ge "$sold" ] || fail "leased $leased below sold $sold"
grep -q '^  FAIL' "$T/out" && fail "an invariant line says FAIL"

# nothing left behind
[ -z "$(ls -A "$T" | grep -v '^out$\|^err$')" ] || fail "left in its TMPDIR: $(ls -A "$T")"
ls /dev/shm 2>/dev/null | grep -q "^flashstock-demo-$demo-box" && fail "a segment of the demo is left"
pgrep -f -- "--defaults-file=$T/" >/dev/null && fail "a server of the demo still runs"
pgrep -f -- "flashstock-demo-$demo-box" >/dev/null && fail "a daemon of the demo still runs"
rm -rf "$T"
echo "demo --boxes 3: ok"
