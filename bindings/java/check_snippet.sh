#!/bin/bash
# check_snippet.sh BINDINGS_JAVA_DIR -- the Java code block of
# README.md is exactly the region between "// README begin" and
# "// README end" of example/flashstock/example/Quickstart.java (which the
# test java_quickstart runs), less its two tabs of indent, and its second
# the region of the "// README reservations" markers, its third the region
# of the "// README terms" markers, its fourth the region of the
# "// README carts" markers, so the README's examples cannot rot.
set -u
d=${1:?usage: check_snippet.sh bindings/java}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sed -n '/^[[:space:]]*\/\/ README begin$/,/^[[:space:]]*\/\/ README end$/p' \
	"$d/example/flashstock/example/Quickstart.java" | sed '1d;$d;s/^\t\t//' >"$t/from_example"
awk '/^```java$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' "$d/README.md" >"$t/from_readme"
[ -s "$t/from_example" ] || fail "no README markers in Quickstart.java"
[ -s "$t/from_readme" ] || fail "no java code block in README.md"
diff -u "$t/from_readme" "$t/from_example" >&2 ||
	fail "README.md's java code differs from Quickstart.java's README region"
# the reservations example: the second java block
sed -n '/^[[:space:]]*\/\/ README reservations begin$/,/^[[:space:]]*\/\/ README reservations end$/p' \
	"$d/example/flashstock/example/Quickstart.java" | sed '1d;$d;s/^\t\t//' >"$t/resv_from_example"
awk '/^```java$/ { n++; if (n == 2) { code = 1; next } }
     code && /^```$/ { exit }
     code { print }' "$d/README.md" >"$t/resv_from_readme"
[ -s "$t/resv_from_example" ] || fail "no README reservations markers in Quickstart.java"
[ -s "$t/resv_from_readme" ] || fail "no second java code block (reservations) in README.md"
diff -u "$t/resv_from_readme" "$t/resv_from_example" >&2 ||
	fail "README.md's reservations code differs from Quickstart.java's README reservations region"
# the versioned terms example: the third java block
sed -n '/^[[:space:]]*\/\/ README terms begin$/,/^[[:space:]]*\/\/ README terms end$/p' \
	"$d/example/flashstock/example/Quickstart.java" | sed '1d;$d;s/^\t\t//' >"$t/terms_from_example"
awk '/^```java$/ { n++; if (n == 3) { code = 1; next } }
     code && /^```$/ { exit }
     code { print }' "$d/README.md" >"$t/terms_from_readme"
[ -s "$t/terms_from_example" ] || fail "no README terms markers in Quickstart.java"
[ -s "$t/terms_from_readme" ] || fail "no third java code block (versioned terms) in README.md"
diff -u "$t/terms_from_readme" "$t/terms_from_example" >&2 ||
	fail "README.md's versioned terms code differs from Quickstart.java's README terms region"
# the carts example: the fourth java block
sed -n '/^[[:space:]]*\/\/ README carts begin$/,/^[[:space:]]*\/\/ README carts end$/p' \
	"$d/example/flashstock/example/Quickstart.java" | sed '1d;$d;s/^\t\t//' >"$t/carts_from_example"
awk '/^```java$/ { n++; if (n == 4) { code = 1; next } }
     code && /^```$/ { exit }
     code { print }' "$d/README.md" >"$t/carts_from_readme"
[ -s "$t/carts_from_example" ] || fail "no README carts markers in Quickstart.java"
[ -s "$t/carts_from_readme" ] || fail "no fourth java code block (carts) in README.md"
diff -u "$t/carts_from_readme" "$t/carts_from_example" >&2 ||
	fail "README.md's carts code differs from Quickstart.java's README carts region"
# the project's docs/java.md shows the first too, under its "# From Java" heading
awk '/^# From Java$/ { sec = 1; next }
     sec && !code && /^#+ / { exit }
     sec && /^```java$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' "$d/../../docs/java.md" >"$t/from_top"
[ -s "$t/from_top" ] || fail "no java code block under \"# From Java\" in docs/java.md"
diff -u "$t/from_top" "$t/from_example" >&2 ||
	fail "docs/java.md's java code differs from Quickstart.java's README region"
echo "snippet: README.md and docs/java.md equal Quickstart.java's marked region ($(wc -l <"$t/from_example") lines)"
echo "snippet: README.md's reservations block equals its marked region ($(wc -l <"$t/resv_from_example") lines)"
echo "snippet: README.md's versioned terms block equals its marked region ($(wc -l <"$t/terms_from_example") lines)"
echo "snippet: README.md's carts block equals its marked region ($(wc -l <"$t/carts_from_example") lines)"
