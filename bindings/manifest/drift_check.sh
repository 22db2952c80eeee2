#!/bin/bash
# drift_check.sh -- a change to api/flashstock.h that a binding does not
# follow fails that binding's check, with a line naming what changed
# (test bindings_manifest_drift_fails_each_binding_naming_the_field).
#
# The bindings as built (their mirrors follow the real header) are checked
# against the manifest of a copy of the header with two changes planted:
#   - struct flash_quiet gains a first field, planted_field: every binding
#     must name flash_quiet.planted_field;
#   - FLASH_OBS_BUCKETS becomes 33 (struct flash_hist grows): Java and
#     Python must name FLASH_OBS_BUCKETS, Go (whose constants are cgo's, so
#     never stale) the struct flash_hist it mirrors.
# The manifest is made as the build makes it: manifest.py on the copy, its
# probe compiled against the copy with CC and run.  First each check runs
# against the build's own manifest and must pass: the failures after are
# the planted changes', nothing else's.
#
# usage: drift_check.sh SRC BUILD CC PYTHON JAVA JUNIT_JAR JAVA_CP
#   SRC, BUILD: the source and build trees; CC: the C compiler; PYTHON: the
#   binding's interpreter; JAVA, JUNIT_JAR, JAVA_CP: as java_layout runs
# Exits nonzero with a line saying which expectation failed.
set -u
SRC=$1 BUILD=$2 CC=$3 PY=$4 JAVA=$5 JUNIT=$6 JCP=$7
fail() { echo "drift_check: FAIL: $*" >&2; exit 1; }

T=$(mktemp -d /tmp/flashstock-drift.XXXXXX) || fail "mktemp"
trap 'rm -rf "$T"' EXIT
REAL=$BUILD/bindings/manifest/flashstock.manifest
[ -s "$REAL" ] || fail "no manifest in the build: $REAL"

# the header with the two changes planted
mkdir "$T/api" "$T/gen"
sed -e 's/^struct flash_quiet {$/&\n\tuint64_t planted_field;/' \
    -e 's/^#define FLASH_OBS_BUCKETS 32 /#define FLASH_OBS_BUCKETS 33 /' \
    "$SRC/api/flashstock.h" >"$T/api/flashstock.h" || fail "sed"
[ "$(diff "$SRC/api/flashstock.h" "$T/api/flashstock.h" | grep -c '^>')" = 2 ] ||
	fail "the header's forms changed: the two plants did not both apply"
"$PY" "$SRC/bindings/manifest/manifest.py" "$T/api/flashstock.h" "$T/gen" || fail "manifest.py on the copy"
"$CC" -Wall -Wextra -Werror -I"$T/api" -o "$T/gen/probe" "$T/gen/manifest_probe.c" ||
	fail "compiling the copy's probe"
"$T/gen/probe" "$T/drift.manifest" || fail "running the copy's probe"
grep -qx 'field flash_quiet.planted_field 0 8' "$T/drift.manifest" ||
	fail "the copy's manifest lacks the planted field"
grep -qx 'const FLASH_OBS_BUCKETS 33' "$T/drift.manifest" ||
	fail "the copy's manifest lacks the planted constant"

# check NAME MANIFEST: run binding NAME's layout check against MANIFEST
check() {
	case $1 in
	go)
		FLASHSTOCK_MANIFEST=$2 "$BUILD/bindings/go/bin/flashstock.test" \
			-test.run '^TestLayoutOfEveryMirrorEqualsTheManifests$' -test.count=1 ;;
	java)
		"$JAVA" -Dflashstock.manifest="$2" -jar "$JUNIT" --disable-banner --disable-ansi-colors \
			--fail-if-no-tests --details=tree --class-path "$JCP" \
			--select-method 'flashstock.LayoutTest#everyMirroredOffsetAndSizeEqualsTheManifests' ;;
	python)
		(cd "$T" && FLASH_MANIFEST=$2 PYTHONPATH=$BUILD/bindings/python PYTHONDONTWRITEBYTECODE=1 \
			"$PY" -m pytest -q -p no:cacheprovider "$SRC/bindings/python/tests/test_api.py" \
			-k 'layouts_of_every_struct or constants_of_the_module or types_mirror_every_field') ;;
	esac
}

for b in go java python; do
	check $b "$REAL" >"$T/$b.ok.log" 2>&1 ||
		{ cat "$T/$b.ok.log" >&2; fail "$b: the check fails against the build's own manifest"; }
	if check $b "$T/drift.manifest" >"$T/$b.log" 2>&1; then
		cat "$T/$b.log" >&2
		fail "$b: the check passes against a header whose flash_quiet gained a field"
	fi
	case $b in
	go) want=("flash_quiet.planted_field" "struct flash_hist") ;;
	*) want=("flash_quiet.planted_field" "FLASH_OBS_BUCKETS") ;;
	esac
	for w in "${want[@]}"; do
		grep -qF "$w" "$T/$b.log" || { cat "$T/$b.log" >&2; fail "$b: the failure does not name $w"; }
	done
	echo "drift_check: $b fails on the planted header, naming: ${want[*]}"
	grep -F -m3 "${want[0]}" "$T/$b.log" | sed 's/^/    /'
done
echo "drift_check: ok"
