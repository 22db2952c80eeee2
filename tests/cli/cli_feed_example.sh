#!/bin/bash
# cli_feed_example.sh SRC FLASHSTOCK OPS_BUYER FEED_OPS EXAMPLE -- the
# documented C consumer (docs/feed.md, "From C") is the
# marked region of tests/cli/example_feed_consumer.c, unchanged; built against
# the public library alone (EXAMPLE), it ships every acknowledged order of a
# real sale and the cancel, once; run again it prints nothing (its commits
# held), and a new order shows up on the next run.
set -u
SRC=${1:?usage}; F=${2:?usage}; B=${3:?usage}; O=${4:?usage}; X=${5:?usage}
T=$(mktemp -d)
seg=/flash-feed-example-$$
spid=
cleanup() {
	[ -z "$spid" ] || { kill -KILL "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# the documentation shows the tested code
sed -n '/^\/\* README begin \*\/$/,/^\/\* README end \*\/$/p' "$SRC/tests/cli/example_feed_consumer.c" |
	sed '1d;$d' > "$T/from_example.c"
awk '/^## From C$/ { sec = 1; next }
     sec && !code && /^#+ / { exit }
     sec && /^```c$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' "$SRC/docs/feed.md" > "$T/from_doc.c"
[ -s "$T/from_doc.c" ] || fail "docs/feed.md has no C block under \"## From C\""
[ -s "$T/from_example.c" ] || fail "no README markers in tests/cli/example_feed_consumer.c"
diff -u "$T/from_doc.c" "$T/from_example.c" >&2 ||
	fail "the documented consumer differs from tests/cli/example_feed_consumer.c"
readelf -d "$X" | grep -q 'NEEDED.*libflashstock\.so' || fail "the example is not linked with libflashstock.so"

caps="--activities 4 --skus 16 --shards 16 --users 4096 --orders 4096 --tokens 64 \
--requests 64 --locks 16 --procs 16 --ring 1024"
"$F" create --name "$seg" $caps >/dev/null || fail "create"
"$F" load --name "$seg" --activity 1 --sku 1 --units 100000 >/dev/null || fail "load"
"$F" serve --name "$seg" --wal "$T/wal" --no-snapshot --reconcile-every 0 2>"$T/serve.log" &
spid=$!
for _ in $(seq 1 200); do grep -q "serving segment" "$T/serve.log" && break; sleep 0.05; done
"$B" --name "$seg" --activity 1 --sku 1 --from 1 --to 1500 --log "$T/acked" >/dev/null || fail "buyer"
"$O" --name "$seg" cancel 7 || fail "cancel"
"$X" "$T/wal" --idle-exit > "$T/run1" || fail "example exited $?"
sed -n 's/^ship order \([0-9]*\):.*/\1/p' "$T/run1" | sort -n > "$T/shipped"
sort -n "$T/acked" > "$T/acked.s"
diff "$T/acked.s" "$T/shipped" > /dev/null || fail "shipped orders differ from the acknowledged ones"
[ "$(grep -c '^cancel order 7 ' "$T/run1")" = 1 ] || fail "the cancel of order 7 not printed once"
"$X" "$T/wal" --idle-exit > "$T/run2" || fail "second run exited $?"
[ ! -s "$T/run2" ] || fail "a second run printed $(wc -l < "$T/run2") line(s)"
"$B" --name "$seg" --activity 1 --sku 1 --from 2001 --to 2001 --log "$T/acked2" >/dev/null || fail "buyer 2"
"$X" "$T/wal" --idle-exit > "$T/run3" || fail "third run exited $?"
[ "$(grep -c '^ship order' "$T/run3")" = 1 ] && grep -q "^ship order $(cat "$T/acked2"): user 2001," "$T/run3" ||
	fail "third run: $(cat "$T/run3")"
kill -TERM "$spid"; wait "$spid" || fail "serve exit $?"
spid=
echo "cli_feed_example: all checks passed"
