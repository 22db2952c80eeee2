#!/usr/bin/env bash
# soak_planted.sh FLASHSTOCK_SOAK -- the soak's checks are not vacuous: faults
# planted with `flashstock_soak --inject` turn their checks to FAIL (and the
# run exits 1) while the checks they do not touch stay ok.
#   run 1: lost-ack, mysql-stock, retry -- each turns exactly its own check
#   run 2: wal-order (a forged ORDER record: more units than the sku has, for
#          a user holding the limit) -- the WAL's oversell and limit checks
#   run 3: full (a table answered FLASH_EFULL), 10 days -- memory reclaimed
set -uo pipefail
bin=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0

run() {   # run NAME FAULTS [DAYS]
	"$bin" --days "${3:-2}" --out "$out/$1" --inject "$2" >"$out/$1.out" 2>"$out/$1.err"
	local rc=$?
	cat "$out/$1.out"
	if [ "$rc" -ne 1 ]; then
		echo "soak_planted: $1: exit $rc, expected 1" >&2
		cat "$out/$1.err" >&2
		fail=1
	fi
	if ! grep -q '^result   FAILED' "$out/$1.out"; then
		echo "soak_planted: $1: no FAILED result; its stderr:" >&2
		cat "$out/$1.err" >&2
		fail=1
	fi
}
expect() {   # expect NAME CHECK ok|FAIL
	if ! grep -Eq "^check  $2 +$3 " "$out/$1.out"; then
		echo "soak_planted: $1: check '$2' is not $3" >&2
		fail=1
	fi
}

run one lost-ack,mysql-stock,retry
expect one 'acked orders durable' FAIL      # lost-ack
expect one 'nothing leaked' FAIL            # mysql-stock
expect one 'reconciler' FAIL                # mysql-stock, seen by the reconciler too
expect one 'retries: first outcome' FAIL    # retry
expect one 'nothing oversold' ok
expect one 'limits held' ok
expect one 'memory flat' ok
expect one 'answers as documented' ok
expect one 'one clock' ok

run two wal-order
expect two 'nothing oversold' FAIL
expect two 'limits held' FAIL
expect two 'retries: first outcome' ok
expect two 'memory flat' ok
expect two 'answers as documented' ok
expect two 'one clock' ok
# run 3: full (a table answered FLASH_EFULL once) -- the reclamation check,
# which needs 10 days for a verdict
run three full 10
expect three 'memory reclaimed' FAIL
expect three 'memory flat' ok
expect three 'answers as documented' ok
expect three 'retries: first outcome' ok
exit $fail
