#!/bin/bash
# install_check.sh PREFIX -- the installed Java binding works from PREFIX
# alone: compiles the README's example (example/flashstock/example/
# Quickstart.java, from the source tree) against PREFIX/share/java/
# flashstock.jar and runs it, with no build-tree path and no library path:
# the jar must find PREFIX/lib/libflashstock_jni.so and that library the
# installed libflashstock.so.  Exits nonzero with a line saying what failed.
set -u
P=${1:?usage: install_check.sh PREFIX}
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "install_check (java): FAIL: $*" >&2; exit 1; }
jar=$P/share/java/flashstock.jar
[ -f "$jar" ] || fail "$jar not installed"
ls "$P"/lib*/libflashstock_jni.so >/dev/null 2>&1 || fail "no libflashstock_jni.so under $P/lib"
javac -Xlint:all -Werror -d "$t" -cp "$jar" "$here/example/flashstock/example/Quickstart.java" 2>"$t/javac.err" ||
	fail "javac of Quickstart.java against $jar: $(cat "$t/javac.err")"
# no LD_LIBRARY_PATH, no java.library.path: only what the install put in place
env -u LD_LIBRARY_PATH java -cp "$jar:$t" flashstock.example.Quickstart >"$t/out" 2>&1 ||
	fail "Quickstart against $P: $(cat "$t/out")"
grep -q '^quickstart: ok$' "$t/out" || fail "Quickstart did not finish: $(cat "$t/out")"
echo "install_check (java): Quickstart compiled and ran against $P only"
