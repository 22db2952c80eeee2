#!/usr/bin/env bash
# soak_planted.sh FLASHSTOCK -- `flashstock soak --inject ...` plants three
# faults; each must turn exactly its check to FAIL, every other check must
# stay ok, and the run must exit 1.
set -uo pipefail
bin=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$bin" soak --days 2 --out "$out" --inject lost-ack,mysql-stock,retry >"$out/stdout" 2>"$out/stderr"
rc=$?
cat "$out/stdout"
fail=0
if [ "$rc" -ne 1 ]; then
	echo "soak_planted: exit $rc, expected 1" >&2
	cat "$out/stderr" >&2
	fail=1
fi
expect() {   # expect CHECK ok|FAIL
	if ! grep -Eq "^check  $1 +$2 " "$out/stdout"; then
		echo "soak_planted: check '$1' is not $2" >&2
		fail=1
	fi
}
expect 'acked orders durable' FAIL      # lost-ack
expect 'nothing leaked' FAIL            # mysql-stock
expect 'reconciler' FAIL                # mysql-stock, seen by the reconciler too
expect 'retries: first outcome' FAIL    # retry
expect 'nothing oversold' ok
expect 'limits held' ok
expect 'memory flat' ok
expect 'answers as documented' ok
expect 'one clock' ok
grep -q '^result   FAILED' "$out/stdout" || { echo "soak_planted: no FAILED result" >&2; fail=1; }
exit $fail
