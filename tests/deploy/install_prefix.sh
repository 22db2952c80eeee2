#!/bin/bash
# install_prefix.sh -- the install as a new user meets it: `cmake --install`
# into a temporary prefix, the README's C example (tests/deploy/example_app.c)
# built against that prefix with pkg-config exactly as the README says, run
# on a fresh segment made by the installed `flashstock`, the installed
# `flashstock --help` and a manual page for each of its commands, the
# monitoring files, the systemd unit and sysusers file.  Every step's exit
# code is checked; the first failure ends the test with a line saying which
# step failed.
#
# usage: install_prefix.sh CMAKE BUILD_DIR SOURCE_DIR LIBDIR BINDIR CC [APP_FLAGS [BINDINGS [MANDIR [DATADIR DOCDIR]]]]
#   LIBDIR, BINDIR: CMAKE_INSTALL_LIBDIR / _BINDIR (relative to the prefix)
#   DATADIR, DOCDIR: CMAKE_INSTALL_DATADIR / _DOCDIR (default share and
#              share/doc/flashstock): the monitoring files (docs/monitoring.md)
#   APP_FLAGS: extra compiler flags for the example (the sanitizer builds'
#              library needs its runtime linked in)
#   BINDINGS: the bindings built here ("python go java"): step 8 runs each
#             one's bindings/<lang>/install_check.sh against the prefix
#   MANDIR: CMAKE_INSTALL_MANDIR where the manual pages are built
#           (tools/man.sh): step 7 checks flashstock.1 and a page per command
set -u
CMAKE=$1 BUILD=$2 SRC=$3 LIBDIR=$4 BINDIR=$5 CC=$6 APP_FLAGS=${7:-} BINDINGS=${8:-} MANDIR=${9:-}
DATADIR=${10:-share} DOCDIR=${11:-share/doc/flashstock}

fail() { echo "install_prefix: FAIL: $*" >&2; exit 1; }

P=$(mktemp -d /tmp/flashstock-prefix.XXXXXX) || fail "mktemp"
SEG=/fs-install-$$
cleanup() {
	[ -x "$P/$BINDIR/flashstock" ] && "$P/$BINDIR/flashstock" destroy --name "$SEG" --force >/dev/null 2>&1 || "$P/$BINDIR/flashstock" destroy --name "$SEG" >/dev/null 2>&1
	rm -rf "$P"
}
trap cleanup EXIT

# 1. install into the prefix
"$CMAKE" --install "$BUILD" --prefix "$P" >"$P.log" 2>&1 || { cat "$P.log" >&2; rm -f "$P.log"; fail "cmake --install"; }
rm -f "$P.log"
for f in include/flashstock.h "$LIBDIR/libflashstock.a" "$LIBDIR/libflashstock.so" \
         "$LIBDIR/pkgconfig/flashstock.pc" "$BINDIR/flashstock"; do
	[ -e "$P/$f" ] || fail "not installed: $f"
done
# the feed's MariaDB refill, which libflashstock.so loads from its own directory
ls "$P/$LIBDIR"/libflashstock-mysql-*.so >/dev/null 2>&1 || fail "not installed: the refill plug-in"
# the monitoring files arrive unchanged: alert rules, their unit tests, the
# Grafana dashboard, the operator's page
for f in dashboards/flashstock.rules.yml dashboards/flashstock.rules.test.yml \
         dashboards/grafana-flashstock.json; do
	cmp -s "$SRC/$f" "$P/$DATADIR/flashstock/${f#dashboards/}" ||
		fail "not installed (or not as in the source): $DATADIR/flashstock/${f#dashboards/}"
done
cmp -s "$SRC/docs/monitoring.md" "$P/$DOCDIR/monitoring.md" ||
	fail "not installed (or not as in the source): $DOCDIR/monitoring.md"
if grep -q '^prefix=/' "$P/$LIBDIR/pkgconfig/flashstock.pc"; then
	fail "flashstock.pc names an absolute prefix: $(grep '^prefix=' "$P/$LIBDIR/pkgconfig/flashstock.pc")"
fi

# 2. pkg-config finds this prefix's flashstock, whatever prefix was configured
export PKG_CONFIG_PATH="$P/$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
inc=$(pkg-config --variable=includedir flashstock) || fail "pkg-config --variable=includedir"
[ "$(realpath "$inc")" = "$(realpath "$P/include")" ] || fail "includedir is $inc, not under $P"
lib=$(pkg-config --variable=libdir flashstock) || fail "pkg-config --variable=libdir"
[ "$(realpath "$lib")" = "$(realpath "$P/$LIBDIR")" ] || fail "libdir is $lib, not under $P"

# 3. the README and docs/library.md show the example's code unchanged (the
#    first C block under their "Using the library" heading)
sed -n '/^\/\* README begin \*\/$/,/^\/\* README end \*\/$/p' "$SRC/tests/deploy/example_app.c" |
	sed '1d;$d' >"$P/from_example.c"
[ -s "$P/from_example.c" ] || fail "no README markers in tests/deploy/example_app.c"
for doc in README.md docs/library.md; do
	awk '/^#+ Using the library$/ { sec = 1; next }
	     sec && !code && /^#+ / { exit }
	     sec && /^```c$/ { code = 1; next }
	     code && /^```$/ { exit }
	     code { print }' "$SRC/$doc" >"$P/from_doc.c"
	[ -s "$P/from_doc.c" ] || fail "$doc has no C block under \"Using the library\""
	diff -u "$P/from_doc.c" "$P/from_example.c" >&2 ||
		fail "the \"Using the library\" code of $doc differs from tests/deploy/example_app.c"
done

# 4. build the example as the README says (plus the run path for a prefix
#    the loader does not search, as the README says too)
# shellcheck disable=SC2046,SC2086   # word splitting of the flags is wanted
"$CC" -std=c11 -Wall -Wextra -Werror $APP_FLAGS -o "$P/app" "$SRC/tests/deploy/example_app.c" \
	$(pkg-config --cflags --libs flashstock) -Wl,-rpath,"$(pkg-config --variable=libdir flashstock)" ||
	fail "cc example_app.c \$(pkg-config --cflags --libs flashstock)"
readelf -d "$P/app" | grep -q 'NEEDED.*libflashstock\.so' || fail "the example is not linked with libflashstock.so"

# 5. a fresh segment from the installed command; activity 1 requires a token, sku 10 has one unit
"$P/$BINDIR/flashstock" create --name "$SEG" --activities 2 --skus 4 --shards 4 --users 64 \
	--orders 256 --tokens 64 --requests 64 --locks 4 --procs 8 --ring 64 >/dev/null ||
	fail "installed flashstock create"
"$P/$BINDIR/flashstock" load --name "$SEG" --activity 1 --token-required --sku 10 --units 1 >/dev/null ||
	fail "installed flashstock load"

# 6. run it: an order, the retry of the same request, a buyer too late
run() { # run EXPECTED_EXIT EXPECTED_LINE_REGEX USER REQUEST_ID
	local out rc
	out=$("$P/app" "$SEG" "$3" "$4")
	rc=$?
	[ "$rc" -eq "$1" ] || fail "example_app $3 $4 exited $rc, not $1 (printed: $out)"
	[[ $out =~ ^$2$ ]] || fail "example_app $3 $4 printed '$out', not /$2/"
	echo "example_app $3 $4: $out"
	got=$out
}
run 0 'FLASH_OK order [1-9][0-9]*' 42 4201
first=${got#FLASH_OK order }
run 1 "FLASH_EDUPLICATE order $first" 42 4201
run 1 'FLASH_ESOLD_OUT order 0' 43 4301
"$P/$BINDIR/flashstock" destroy --name "$SEG" --force >/dev/null 2>&1 || fail "installed flashstock destroy"
out=$("$P/app" "$SEG" 44 4401); rc=$?
[ "$rc" -eq 2 ] || fail "example_app on a destroyed segment exited $rc, not 2 (printed: $out)"

# 7. the installed command runs, and carries a run path to the prefix's
#    library directory (it links libflashstock statically; the run path is
#    for what it loads from its own prefix)
# shellcheck disable=SC2016   # a literal $ORIGIN
readelf -d "$P/$BINDIR/flashstock" | grep -E 'R(UN)?PATH' | grep -qF '$ORIGIN/' ||
	fail "the installed flashstock has no \$ORIGIN run path"
help=$("$P/$BINDIR/flashstock" --help) || fail "installed flashstock --help exited $?"
grep -q '^usage: flashstock' <<<"$help" || fail "installed flashstock --help printed no usage line"
# the manual: flashstock.1 and one page per command the installed --help lists
if [ -n "$MANDIR" ]; then
	cmds=$(awk '/^commands:$/ { c = 1; next } c && /^$/ { exit } c { print $1 }' <<<"$help")
	[ -n "$cmds" ] || fail "installed flashstock --help lists no commands"
	for page in flashstock $(sed 's/^/flashstock-/' <<<"$cmds"); do
		[ -s "$P/$MANDIR/man1/$page.1" ] || fail "not installed: $MANDIR/man1/$page.1"
	done
	echo "install_prefix: $(wc -w <<<"$cmds") command pages and flashstock.1 in $MANDIR/man1"
fi

# 7b. the README's main job from the prefix alone: the installed demo, run
#     from a directory with no source tree, finds its private MariaDB's
#     script under <datadir>/flashstock (no source path is compiled in)
for f in mariadb.sh galera.sh; do
	[ -x "$P/$DATADIR/flashstock/$f" ] || fail "not installed: $DATADIR/flashstock/$f"
done
(cd "$P" && "$P/$BINDIR/flashstock" demo --buyers 2000 --units 300 --procs 2 --name "$SEG-demo") \
	>"$P/demo.log" 2>&1 || { tail -20 "$P/demo.log" >&2; fail "the installed demo"; }
grep -q "mariadb.sh: started in" "$P/demo.log" || fail "the installed demo started no MariaDB"
grep -q '^result   OK' "$P/demo.log" || fail "the installed demo did not pass: $(tail -3 "$P/demo.log")"
echo "install_prefix: the installed demo ran from $P with its own MariaDB script"

# 8. the daemon's systemd files (systemd/): the unit template under
#    P/lib/systemd/system with ExecStart= this prefix's flashstock, which
#    systemd-analyze verify reads without a word; the sysusers.d file
unit=$P/lib/systemd/system/flashstock-serve@.service
[ -f "$unit" ] || fail "not installed: lib/systemd/system/flashstock-serve@.service"
[ -f "$P/lib/sysusers.d/flashstock.conf" ] || fail "not installed: lib/sysusers.d/flashstock.conf"
grep -q "^ExecStart=$P/$BINDIR/flashstock serve " "$unit" ||
	fail "the installed unit does not run $P/$BINDIR/flashstock: $(grep '^ExecStart=' "$unit")"
vout=$(systemd-analyze verify --man=no "$P/lib/systemd/system/flashstock-serve@install.service" 2>&1) ||
	fail "systemd-analyze verify of the installed unit: exit $?: $vout"
[ -z "$vout" ] || fail "systemd-analyze verify of the installed unit complains: $vout"

# 9. each binding from the prefix alone: its example built and run against
#    what the install put under P (no build-tree path, no library path)
for lang in $BINDINGS; do
	chk=$SRC/bindings/$lang/install_check.sh
	[ -f "$chk" ] || fail "no $chk"
	bash "$chk" "$P" || fail "the installed $lang binding (bindings/$lang/install_check.sh)"
	echo "install_prefix: $lang binding ok"
done
echo "install_prefix: ok ($P)"
