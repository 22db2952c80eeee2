#!/bin/bash
# pip_check.sh -- the Python binding as pip installs it, offline, into a
# virtualenv, against an installed libflashstock found by pkg-config
# (README.md, "Installing with pip"):
#
#   1. `cmake --install BUILD --prefix P` into a temporary prefix;
#   2. the refusals, each with a line saying what is missing and nothing
#      installed: without flashstock known to pkg-config; in a plain venv
#      (no --system-site-packages), which has no cffi offline;
#   3. `python3 -m venv --system-site-packages V` and, with
#      PKG_CONFIG_PATH=P/LIBDIR/pkgconfig, `V/bin/pip install
#      --no-build-isolation --no-index` of a copy of bindings/python (the
#      source tree is left unwritten; pip builds in the directory it is given);
#   4. the venv's interpreter imports the venv's package (flashstock.__file__
#      under V), version and library the prefix's, the extension loading
#      P's libflashstock.so by its run path (no LD_LIBRARY_PATH);
#   5. the binding's pytest files TESTS run with the venv's interpreter (no
#      PYTHONPATH; conftest.py refuses a package from anywhere but V),
#      against the manifest installed in P (pkg-config's manifestdir, whose
#      flashstock.cdef the package was built from).
#
# usage: pip_check.sh CMAKE BUILD_DIR SOURCE_DIR LIBDIR PYTHON TESTS...
#   LIBDIR: CMAKE_INSTALL_LIBDIR; PYTHON: the interpreter the venv is made
#   from (Debian's /usr/bin/python3, whose python3-cffi the venv sees)
# Exits nonzero with a line saying which step failed.
set -u
CMAKE=$1 BUILD=$2 SRC=$3 LIBDIR=$4 PY=$5
shift 5
TESTS=("$@")

fail() { echo "pip_check: FAIL: $*" >&2; exit 1; }
[ ${#TESTS[@]} -gt 0 ] || fail "usage: pip_check.sh CMAKE BUILD SRC LIBDIR PYTHON TESTS..."

T=$(mktemp -d /tmp/flashstock-pip.XXXXXX) || fail "mktemp"
trap 'rm -rf "$T"' EXIT
# a directory with no flashstock in it: `python -c` looks in the working
# directory first (ctest's is the build tree's package)
cd "$T" || fail "cd $T"
P=$T/prefix V=$T/venv
unset PYTHONPATH PYTHONHOME LD_LIBRARY_PATH PKG_CONFIG_PATH
# pip as a fresh machine has it: no configuration file, no local wheels or
# other index from the environment
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_REQUIRE_VIRTUALENV
export PIP_CONFIG_FILE=/dev/null PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# 1. the library, header and .pc file in a prefix of their own
"$CMAKE" --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log" >&2; fail "cmake --install"; }
[ -e "$P/$LIBDIR/pkgconfig/flashstock.pc" ] || fail "not installed: $LIBDIR/pkgconfig/flashstock.pc"

# the project as a user has it, minus what an earlier in-tree pip run left
cp -r "$SRC/bindings/python" "$T/src" || fail "cp bindings/python"
rm -rf "$T/src/build" "$T/src"/*.egg-info "$T/src/tests"
"$PY" -m venv --system-site-packages "$V" || fail "$PY -m venv --system-site-packages"

# 2. no flashstock for pkg-config (an empty search path): a clear refusal
mkdir "$T/nopc"
if PKG_CONFIG_LIBDIR=$T/nopc "$V/bin/pip" install --no-build-isolation --no-index "$T/src" \
	>"$T/nopc.log" 2>&1; then
	fail "pip install succeeded with no flashstock known to pkg-config"
fi
grep -q 'pkg-config does not find flashstock.*PKG_CONFIG_PATH' "$T/nopc.log" ||
	{ cat "$T/nopc.log" >&2; fail "pip's refusal does not say pkg-config misses flashstock"; }
if "$V/bin/python" -c 'import flashstock' 2>/dev/null; then
	fail "after the refused install the venv imports a flashstock"
fi
rm -rf "$T/src/build" "$T/src"/*.egg-info

export PKG_CONFIG_PATH=$P/$LIBDIR/pkgconfig
# a plain venv: pip and setuptools only, so no cffi offline
"$PY" -m venv "$T/plain" || fail "$PY -m venv"
if "$T/plain/bin/pip" install --no-build-isolation --no-index "$T/src" >"$T/plain.log" 2>&1; then
	fail "pip install succeeded in a venv without cffi"
fi
grep -q 'flashstock: the build needs cffi.*--system-site-packages' "$T/plain.log" ||
	{ cat "$T/plain.log" >&2; fail "pip's refusal in a plain venv does not say cffi is missing"; }
"$T/plain/bin/python" -c 'import flashstock' 2>/dev/null && fail "the plain venv imports a flashstock"
rm -rf "$T/src/build" "$T/src"/*.egg-info

# 3. the documented command
"$V/bin/pip" install --no-build-isolation --no-index "$T/src" >"$T/pip.log" 2>&1 ||
	{ cat "$T/pip.log" >&2; fail "pip install --no-build-isolation --no-index bindings/python"; }

# 4. what the venv imports
read -r file ver so < <("$V/bin/python" -c '
import os, flashstock, flashstock._native as n
print(os.path.realpath(flashstock.__file__), "%d.%d" % flashstock.VERSION, os.path.realpath(n.__file__))') ||
	fail "the venv's python cannot import flashstock"
case $file in
"$(realpath "$V")"/lib/python3*/site-packages/flashstock/__init__.py) ;;
*) fail "the venv imports $file, not its own site-packages' flashstock" ;;
esac
pcver=$(pkg-config --modversion flashstock)
[ "${pcver%.*}" = "$ver" ] || fail "flashstock.VERSION $ver, the prefix's library $pcver"
dist=$("$V/bin/python" -c 'import importlib.metadata as m; print(m.version("flashstock"))')
[ "$dist" = "$pcver" ] || fail "the installed distribution is version $dist, not $pcver"
lib=$(ldd "$so" | sed -n 's/.*libflashstock\.so[^ ]* => \([^ ]*\).*/\1/p')
case $(realpath "${lib:-/none}") in
"$(realpath "$P")"/*) ;;
*) fail "the extension loads '$lib', not the prefix's libflashstock.so: $(ldd "$so" | grep flashstock)" ;;
esac
[ -e "$(dirname "$file")/py.typed" ] || fail "py.typed not installed"
echo "pip_check: venv imports $file (version $ver, $(basename "$so") -> $lib)"

# 5. the binding's tests from the venv
manifest=$(pkg-config --variable=manifestdir flashstock)/flashstock.manifest
[ -e "$manifest" ] || fail "not installed: $manifest"
FLASH_PY_EXPECT_PKG=$(realpath "$V") FLASH_CLI=$P/bin/flashstock FLASH_MANIFEST=$manifest \
	FLASH_PY_SRC=$SRC/bindings/python \
	"$V/bin/python" -m pytest -q -rP -p no:cacheprovider "${TESTS[@]/#/$SRC/bindings/python/tests/}" ||
	fail "the binding's tests (${TESTS[*]}) from the venv"
echo "pip_check: ok"
