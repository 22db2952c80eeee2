#!/usr/bin/env bash
# configure_deps.sh -- a missing test dependency fails the configure.
#
#   configure_deps.sh SOURCE_DIR PKG
#
# Configures SOURCE_DIR in a scratch directory with a pkg-config that does
# not know PKG (every other package is found as usual) and passes only when
# the configure FAILS and names PKG.  With the tests off (-DFLASH_TESTS=OFF)
# a test-only dependency (cmocka, libmicrohttpd, hiredis) may be missing: that
# configure must succeed, so the check proves the tests are what require it.
set -u
src=$1 pkg=$2
real=$(command -v pkg-config) || { echo "configure_deps: no pkg-config" >&2; exit 1; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT

# the pkg-config without PKG: any query naming it fails as for an absent package
cat > "$T/pkg-config" <<WRAP
#!/bin/sh
for a in "\$@"; do
	case "\$a" in
	$pkg|$pkg[\ \<\>=]*) echo "Package $pkg was not found in the pkg-config search path." >&2; exit 1 ;;
	esac
done
exec "$real" "\$@"
WRAP
chmod +x "$T/pkg-config"

fail() { echo "configure_deps: $pkg: $*" >&2; exit 1; }

cmake -S "$src" -B "$T/on" -DPKG_CONFIG_EXECUTABLE="$T/pkg-config" > "$T/on.log" 2>&1
rc=$?
[ $rc -ne 0 ] || { cat "$T/on.log" >&2; fail "configure with the tests succeeded without $pkg"; }
grep -q -- "$pkg" "$T/on.log" || { cat "$T/on.log" >&2; fail "the failed configure does not name $pkg"; }

cmake -S "$src" -B "$T/off" -DFLASH_TESTS=OFF -DPKG_CONFIG_EXECUTABLE="$T/pkg-config" \
	> "$T/off.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$T/off.log" >&2; fail "configure without the tests failed (exit $rc)"; }
echo "configure_deps: without $pkg the configure fails and names it; with FLASH_TESTS=OFF it succeeds"
