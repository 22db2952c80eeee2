#!/bin/bash
# cli_terms.sh FLASHSTOCK -- versioned terms (flashstock.h, "Terms and their
# versions") through the real binary, on a private segment (no daemon, no
# MariaDB):
#  - `load`'s price column sets a sku's price; `terms` shows the activity's
#    terms and each sku's price, each with a version, the versions all
#    different; `status` (JSON and text) shows the same versions and prices;
#  - `terms --limit --max-qty` changes only those: the window, scope and
#    flags are kept, the activity's version moves on (printed, old -> new),
#    the skus' versions do not; the new max_qty is what orders are held to;
#  - an order naming the old activity version exits 1 with FLASH_ESTALE and
#    "the terms changed: show the new terms", and takes nothing: `status
#    --json` reads the same, the user's limit slot is still free (the order
#    under the new version is placed, a third is refused at the new limit
#    2), and its request id is still free for the retry;
#  - `terms --sku --price` moves that sku's version only; an order naming
#    the old sku version (with or without an activity version) is
#    FLASH_ESTALE, taking nothing, the new one is placed;
#  - a change of the window and of a flag keeps the rest;
#  - the README's "Terms and versions" block runs as its comments say: each
#    command exits 0 but the one a "# exit N:" line follows, each line a
#    comment shows is printed (times aside), each quoted text is printed;
#  - bad input -- a lower limit, another scope or day offset, an empty
#    window, a price above FLASH_PRICE_MAX, a price without a sku or with
#    activity terms, contradicting flags, versions without --place, a bad
#    price column in `load` -- exits 2, an unknown activity or sku exits 1,
#    and nothing changed: `status --json` and `terms --json` read the same.
set -u
F=${1:?usage: cli_terms.sh path/to/flashstock}
T=$(mktemp -d)
seg=/fs-cli-terms-$$
seg2=/fs-cli-terms-readme-$$
README=$(cd "$(dirname "$0")/../.." && pwd)/README.md
cleanup() {
	"$F" destroy --name "$seg" --force >/dev/null 2>&1 || "$F" destroy --name "$seg" >/dev/null 2>&1
	"$F" destroy --name "$seg2" --force >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
has() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "missing: $2"; }; }
# jget FILE PATH...: values of a JSON document by dotted paths (list indexes
# as numbers), one line, space-separated; booleans and null as JSON spells
# them.  want FILE PATH VALUE [PATH VALUE...]: each is that value.  (One
# python3 per call: its start is most of this test's time.)
JSON_PY='import json, sys
def get(d, p):
    for k in p.split("."):
        d = d[int(k)] if isinstance(d, list) else d[k]
    return json.dumps(d) if isinstance(d, (bool, dict, list)) or d is None else str(d)
d, a = json.load(open(sys.argv[2])), sys.argv[3:]
if sys.argv[1] == "get":
    print(" ".join(get(d, p) for p in a))
else:
    bad = ["%s is %r, want %r" % (p, get(d, p), w) for p, w in zip(a[0::2], a[1::2]) if get(d, p) != w]
    sys.exit("; ".join(bad) or None)'
jget() { python3 -c "$JSON_PY" get "$@" || fail "no $* in: $(cat "$1")"; }
want() { python3 -c "$JSON_PY" want "$@" 2> "$T/want" || fail "$(cat "$T/want") in: $(cat "$1")"; }
# terms [ARGS...]: `terms --json` of activity 1 into $T/t
terms() { "$F" terms --name "$seg" --activity 1 --json "$@" > "$T/t" || fail "terms $*: exit $?"; }
# order USER [ARGS...]: a plain order of one unit of sku 1; exit code in $T/rc
order() {
	local u=$1; shift
	"$F" order --name "$seg" --place --activity 1 --sku 1 --user "$u" "$@" > "$T/o" 2> "$T/e"
	echo $? > "$T/rc"
}
rc_is() { [ "$(cat "$T/rc")" = "$1" ] || fail "$2: exit $(cat "$T/rc"), want $1: $(cat "$T/o" "$T/e")"; }
usage() {  # WHAT ARGS...: exit 2
	local what=$1; shift
	"$F" "$@" > "$T/u" 2>&1; local rc=$?
	[ $rc = 2 ] || fail "$what: exit $rc, want 2: $(cat "$T/u")"
}
refused() {  # WHAT ARGS...: exit 1
	local what=$1; shift
	"$F" "$@" > "$T/u" 2>&1; local rc=$?
	[ $rc = 1 ] || fail "$what: exit $rc, want 1: $(cat "$T/u")"
}
stale() {  # WHAT: the last order was refused FLASH_ESTALE, saying so
	rc_is 1 "$1"
	has "$T/e" "flashstock: order: FLASH_ESTALE: the terms changed: show the new terms"
	has "$T/e" "flashstock terms --name $seg --activity 1"
	has "$T/e" "nothing taken"
	[ -s "$T/o" ] && fail "$1: a refused order printed an order: $(cat "$T/o")"
	return 0
}
unchanged() {  # WHAT: status --json reads as $T/s_before
	"$F" status --name "$seg" --json > "$T/s_after" || fail "status"
	cmp -s "$T/s_before" "$T/s_after" ||
		{ diff <(tr , '\n' < "$T/s_before") <(tr , '\n' < "$T/s_after") >&2; fail "$1 changed the segment"; }
}

"$F" create --name "$seg" --activities 4 --skus 4 --shards 4 --users 64 --orders 256 \
	--tokens 16 --requests 64 --procs 8 --ring 1024 > /dev/null || fail "create"
"$F" load --name "$seg" --csv - > "$T/load" 2> "$T/e" <<EOF || fail "load: $(cat "$T/e")"
activity_id,sku_id,units,limit,max_qty,cancel_returns_quota,price
1,1,10,1,2,1,1999
1,2,5,,,,
EOF
has "$T/load" "activity 1 (new): 2 sku(s), 15 units added, 1 price(s) set; version "

# ---- the terms and their versions, as terms and status show them -----------
terms
want "$T/t" id 1 limit 1 max_qty 2 scope activity cancel_returns_quota true token_required false \
	skus.0.sku_id 1 skus.0.price 1999 skus.1.sku_id 2 skus.1.price 0 skus.1.total 5
v=$(jget "$T/t" version skus.0.version skus.1.version start_ns end_ns) || exit 1
read -r a0 s1v0 s2v0 start0 end0 <<< "$v"
[ "$a0" -gt 0 ] && [ "$s1v0" -gt 0 ] && [ "$s2v0" -gt 0 ] || fail "a version 0: $a0 $s1v0 $s2v0"
[ "$(printf '%s\n' "$a0" "$s1v0" "$s2v0" | sort -u | wc -l)" = 3 ] ||
	fail "a version issued twice: activity $a0, skus $s1v0 $s2v0"
has "$T/load" "; version $a0, window "
"$F" terms --name "$seg" --activity 1 > "$T/tt" || fail "terms (text): exit $?"
has "$T/tt" "activity 1: version $a0, window "
has "$T/tt" ", limit 1 per activity, max qty 2, cancel returns quota"
has "$T/tt" "  sku 1: price 1999, version $s1v0, 10 units, 10 available"
has "$T/tt" "  sku 2: price 0, version $s2v0, 5 units, 5 available"
"$F" terms --name "$seg" --activity 1 --sku 2 --json > "$T/t2" || fail "terms --sku 2: exit $?"
want "$T/t2" skus.0.sku_id 2
grep -q '"sku_id":1' "$T/t2" && fail "terms --sku 2 shows sku 1: $(cat "$T/t2")"
"$F" status --name "$seg" --json > "$T/s" || fail "status"
want "$T/s" activities.0.version "$a0" skus.0.price 1999 skus.0.version "$s1v0" skus.1.version "$s2v0"
"$F" status --name "$seg" > "$T/st" || fail "status (text)"
awk -v v="$a0" '$1 == 1 && $7 == v' "$T/st" | grep -q . || fail "status (text): no activity 1 at version $a0: $(cat "$T/st")"
awk -v v="$s1v0" '$1 == 1 && $2 == 1 && $7 == 1999 && $8 == v' "$T/st" | grep -q . ||
	fail "status (text): no sku 1 at price 1999, version $s1v0: $(cat "$T/st")"

# an order naming the current versions is placed; 3 units are above max_qty 2
order 1 --activity-version "$a0" --sku-version "$s1v0"
rc_is 0 "an order naming the current versions"
has "$T/o" ": active, activity 1, sku 1, user 1"
order 5 --qty 3
rc_is 2 "3 units under max_qty 2"

# ---- a change of the activity's terms keeps the rest, moves the version on --
"$F" terms --name "$seg" --activity 1 --limit 2 --max-qty 3 > "$T/c" 2> "$T/e" ||
	fail "terms --limit 2 --max-qty 3: exit $?: $(cat "$T/e")"
a1=$(sed -n "s/^activity 1: terms changed, version $a0 -> \([0-9]*\)$/\1/p" "$T/c")
[ -n "$a1" ] || fail "the change does not print 'version $a0 -> NEW': $(cat "$T/c")"
has "$T/c" "activity 1: version $a1, window "
has "$T/c" ", limit 2 per activity, max qty 3, cancel returns quota"
[ "$a1" -gt "$a0" ] && [ "$a1" -gt "$s1v0" ] && [ "$a1" -gt "$s2v0" ] ||
	fail "the new version $a1 is not past every one issued before ($a0 $s1v0 $s2v0)"
terms
want "$T/t" version "$a1" limit 2 max_qty 3 start_ns "$start0" end_ns "$end0" scope activity \
	cancel_returns_quota true token_required false skus.0.version "$s1v0" skus.1.version "$s2v0" \
	skus.0.price 1999

# ---- an order under the old version takes nothing ---------------------------
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
order 1 --activity-version "$a0" --sku-version "$s1v0" --request-id 77
stale "an order naming the old activity version"
has "$T/e" "the order named activity version $a0 (now $a1), sku version $s1v0 (now $s1v0)"
unchanged "an order refused FLASH_ESTALE"
# user 1 holds one slot of the new limit 2: the other is still free, and
# request id 77 too
order 1 --activity-version "$a1" --sku-version "$s1v0" --request-id 77
rc_is 0 "user 1's second order under the new version (limit 2)"
grep -q "placed before" "$T/e" && fail "request id 77 was taken by the stale order: $(cat "$T/e")"
has "$T/o" ": active, activity 1, sku 1, user 1"
order 1 --activity-version "$a1"
rc_is 1 "user 1's third order (limit 2)"
has "$T/e" "per-user limit reached"
order 5 --qty 3 --activity-version "$a1"
rc_is 0 "3 units under the new max_qty 3"

# ---- a price moves the sku's version only ----------------------------------
"$F" terms --name "$seg" --activity 1 --sku 1 --price 2499 > "$T/c" 2> "$T/e" ||
	fail "terms --price 2499: exit $?: $(cat "$T/e")"
s1v1=$(sed -n "s/^activity 1, sku 1: price 1999 -> 2499, version $s1v0 -> \([0-9]*\)$/\1/p" "$T/c")
[ -n "$s1v1" ] || fail "the price change does not print 'price 1999 -> 2499, version $s1v0 -> NEW': $(cat "$T/c")"
[ "$s1v1" -gt "$a1" ] || fail "the sku's new version $s1v1 is not past $a1"
has "$T/c" "  sku 1: price 2499, version $s1v1, 10 units, 5 available"
grep -q "sku 2" "$T/c" && fail "the price change of sku 1 shows sku 2: $(cat "$T/c")"
terms
want "$T/t" version "$a1" skus.0.price 2499 skus.0.version "$s1v1" skus.1.version "$s2v0" skus.1.price 0
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
order 2 --activity-version "$a1" --sku-version "$s1v0"
stale "an order naming the old sku version"
unchanged "an order naming the old sku version"
order 3 --sku-version "$s1v0"
stale "an order naming only the old sku version"
has "$T/e" "the order named activity version not named (now $a1), sku version $s1v0 (now $s1v1)"
unchanged "an order naming only the old sku version"
order 2 --activity-version "$a1" --sku-version "$s1v1"
rc_is 0 "an order naming the new versions"
"$F" terms --name "$seg" --activity 1 --sku 1 --price 2499 --json > "$T/c" || fail "terms --price --json: exit $?"
want "$T/c" changed price previous_version "$s1v1"
s1v2=$(jget "$T/c" new_version) || exit 1
[ "$s1v2" -gt "$s1v1" ] || fail "the same price set again did not move the version on: $s1v2"
want "$T/c" skus.0.version "$s1v2"

# ---- the window and a flag, the rest kept ----------------------------------
"$F" terms --name "$seg" --activity 1 --end +7200 --no-cancel-returns-quota --json > "$T/c" ||
	fail "terms --end --no-cancel-returns-quota: exit $?"
want "$T/c" changed activity previous_version "$a1" cancel_returns_quota false start_ns "$start0" \
	limit 2 max_qty 3
v=$(jget "$T/c" new_version version end_ns) || exit 1
read -r a2 av2 end2 <<< "$v"
[ "$a2" -gt "$s1v2" ] && [ "$av2" = "$a2" ] || fail "the new version $a2 (terms read: $av2) is not past $s1v2"
[ "$end2" != "$end0" ] || fail "--end +7200 left the end as it was"

# ---- bad input: exit 2 (unknown: exit 1), nothing changed -------------------
"$F" status --name "$seg" --json > "$T/s_before" || fail "status"
terms
cp "$T/t" "$T/t_before"
usage "a lower limit"                  terms --name "$seg" --activity 1 --limit 1
has "$T/u" "a limit may grow, never shrink"
usage "another scope"                  terms --name "$seg" --activity 1 --scope sku
has "$T/u" "a scope never changes"
usage "another day offset"             terms --name "$seg" --activity 1 --day-offset 60
usage "an end before the start"        terms --name "$seg" --activity 1 --start +7200 --end +3600
has "$T/u" "is not after start"
usage "a price above the maximum"      terms --name "$seg" --activity 1 --sku 1 --price 9223372036854775808
has "$T/u" "--price: 9223372036854775808 is out of range [0, 9223372036854775807]"
usage "a negative price"               terms --name "$seg" --activity 1 --sku 1 --price -1
usage "a price without a sku"          terms --name "$seg" --activity 1 --price 5
usage "a price with activity terms"    terms --name "$seg" --activity 1 --sku 1 --price 5 --limit 3
usage "--sku with activity terms"      terms --name "$seg" --activity 1 --sku 1 --limit 3
usage "contradicting flags"            terms --name "$seg" --activity 1 --token-required --no-token-required
usage "--limit 0"                      terms --name "$seg" --activity 1 --limit 0
usage "--max-qty 0"                    terms --name "$seg" --activity 1 --max-qty 0
usage "--limit twice"                  terms --name "$seg" --activity 1 --limit 3 --limit 4
usage "no --activity"                  terms --name "$seg" --limit 3
usage "no --name"                      terms --activity 1
usage "an argument"                    terms --name "$seg" --activity 1 7
usage "a bad time"                     terms --name "$seg" --activity 1 --end tomorrow
usage "versions without --place"       order --name "$seg" --activity-version 5 7
usage "--activity-version 0"           order --name "$seg" --place --activity 1 --sku 1 --user 9 --activity-version 0
refused "an unknown activity (change)" terms --name "$seg" --activity 99 --limit 5
has "$T/u" "activity 99 is not in segment $seg"
refused "an unknown activity (show)"   terms --name "$seg" --activity 99
has "$T/u" "activity 99 is not in segment $seg"
refused "an unknown sku (price)"       terms --name "$seg" --activity 1 --sku 9 --price 5
has "$T/u" "sku 9 of activity 1 is not in segment $seg"
printf 'activity_id,sku_id,units,price\n2,1,5,9223372036854775808\n' > "$T/bad.csv"
usage "a price above the maximum in load" load --name "$seg" --csv "$T/bad.csv"
has "$T/u" "bad.csv:2: column 4 (price): "
has "$T/u" "nothing was loaded"
usage "--price before any --sku in load" load --name "$seg" --activity 2 --price 5 --sku 1 --units 5
unchanged "the refused command lines"
terms
cmp -s "$T/t_before" "$T/t" || fail "the refused command lines changed the terms: $(cat "$T/t_before" "$T/t")"

# ---- the README's example, on a segment of its own -------------------------
awk '/^## Terms and versions/ { s = 1 } s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' "$README" \
	> "$T/readme" || fail "reading $README"
grep -q '^flashstock ' "$T/readme" || fail "no sh block of flashstock commands under 'Terms and versions' in $README"
bin=$(cd "$(dirname "$F")" && pwd)
n=0
: > "$T/r.vars"
while IFS= read -r line; do
	case $line in
	"# exit "*)    # the exit code of the command before
		want_rc=${line#"# exit "}
		want_rc=${want_rc%%:*}
		[ "$rc" = "$want_rc" ] || fail "README: '$cmd' exits $rc, its comment says $want_rc: $(cat "$T/r.out")"
		want_rc=checked
		;;
	"#"*)          # a line the command before prints; its times and versions vary
		re=$(printf '%s\n' "${line#"# "}" | sed -e 's/[][\.*^$]/\\&/g' \
			-e 's/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z/[0-9T:Z-]*/g' \
			-e 's/version [0-9][0-9]*/version [0-9][0-9]*/g')
		grep -qx -- "$re" "$T/r.out" || fail "README: '$cmd' does not print '${line#"# "}': $(cat "$T/r.out")"
		;;
	*)
		[ "${want_rc:-checked}" = checked ] ||
			[ "$rc" = 0 ] || fail "README: '$cmd' exits $rc: $(cat "$T/r.out")"
		cmd=$line want_rc=pending
		# one shell session, as a reader's: a variable a line sets
		# (av=$(...)) is there for the lines after it
		PATH=$bin:$PATH bash -c ". '$T/r.vars'; ${line//\/sale/$seg2}
			rc=\$?; declare -p | grep -E '^declare -- [a-z][a-z0-9_]*=' > '$T/r.vars'; exit \$rc" \
			> "$T/r.out" 2>&1
		rc=$?
		n=$((n + 1))
		;;
	esac
	# a "quoted text" in a comment: printed (up to a closing " ...")
	case $line in *"#"*) ;; *) continue ;; esac
	printf '%s\n' "${line#*#}" | grep -o '"[^"]*"' | sed -e 's/^"//' -e 's/"$//' -e 's/ \.\.\.$//' > "$T/quoted"
	while IFS= read -r q; do
		grep -qF -- "$q" "$T/r.out" || fail "README: '$cmd' does not print '$q': $(cat "$T/r.out")"
	done < "$T/quoted"
done < "$T/readme"
[ "${want_rc:-checked}" = checked ] || [ "$rc" = 0 ] || fail "README: '$cmd' exits $rc: $(cat "$T/r.out")"
[ "$n" -ge 6 ] || fail "README: only $n commands run"
"$F" status --name "$seg2" > /dev/null 2>&1 && fail "README: its last command leaves $seg2 behind"
echo "PASS"
