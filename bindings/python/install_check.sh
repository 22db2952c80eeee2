#!/bin/bash
# install_check.sh PREFIX -- the Python binding as installed by
# `cmake --install BUILD --prefix PREFIX`, with nothing of a build tree:
# the package under PREFIX/lib/python3/dist-packages is the one imported,
# its extension loads PREFIX's libflashstock.so by its run path (no
# LD_LIBRARY_PATH), and the README's example (example/quickstart.py) and
# the example service run against a segment made by PREFIX/bin/flashstock.
# Exits nonzero with one line saying what failed.
set -u
P=${1:?usage: install_check.sh PREFIX}
P=$(cd "$P" && pwd) || { echo "install_check(python): FAIL: no prefix $1" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
SEG=/fs-pyinst-$$
svc=

fail() { echo "install_check(python): FAIL: $*" >&2; exit 1; }
cleanup() {
	[ -z "$svc" ] || { kill "$svc" 2>/dev/null; wait "$svc" 2>/dev/null; }
	"$P/bin/flashstock" destroy --name "$SEG" --force >/dev/null 2>&1 || "$P/bin/flashstock" destroy --name "$SEG" >/dev/null 2>&1
	rm -f "$out"
}
out=$(mktemp) || fail "mktemp"
trap cleanup EXIT

pkg=$P/lib/python3/dist-packages/flashstock
for f in __init__.py _errors.py _feed.py _types.py py.typed; do
	[ -e "$pkg/$f" ] || fail "not installed: lib/python3/dist-packages/flashstock/$f"
done
so=$(ls "$pkg"/_native*.so 2>/dev/null | head -1)
[ -n "$so" ] || fail "not installed: the extension lib/python3/dist-packages/flashstock/_native*.so"
[ -x "$P/bin/flashstock" ] || fail "not installed: bin/flashstock"

# the environment of a user of the prefix: the package on the path, nothing else
export PYTHONPATH=$P/lib/python3/dist-packages
unset LD_LIBRARY_PATH PYTHONHOME
where=$("$PY" -c 'import flashstock, os; print(os.path.realpath(flashstock.__file__))') ||
	fail "python3 -c 'import flashstock' with PYTHONPATH=$PYTHONPATH"
[ "$where" = "$(realpath "$pkg/__init__.py")" ] || fail "imported $where, not the prefix's package"
lib=$(ldd "$so" | sed -n 's/.*libflashstock\.so[^ ]* => \([^ ]*\).*/\1/p')
[ -n "$lib" ] || fail "the extension does not find libflashstock.so: $(ldd "$so" | grep flashstock)"
case $(realpath "$lib") in
"$P"/*) ;;
*) fail "the extension loads $lib, not the prefix's libflashstock.so" ;;
esac

# a fresh segment from the installed command: activity 1 requires a token, sku 10 has one unit
"$P/bin/flashstock" create --name "$SEG" --activities 2 --skus 4 --shards 4 --users 64 \
	--orders 256 --tokens 64 --requests 64 --locks 4 --procs 16 --ring 64 >/dev/null ||
	fail "installed flashstock create"
"$P/bin/flashstock" load --name "$SEG" --activity 1 --token-required --sku 10 --units 1 >/dev/null ||
	fail "installed flashstock load"

# the README's example: an order, its retry, a buyer too late
got=$("$PY" "$HERE/example/quickstart.py" "$SEG" 42 4201) || fail "quickstart.py 42 4201 exited $? ($got)"
[[ $got =~ ^FLASH_OK\ order\ [1-9][0-9]*$ ]] || fail "quickstart.py 42 4201 printed '$got'"
no=${got##* }
got=$("$PY" "$HERE/example/quickstart.py" "$SEG" 42 4201)
[ "$got" = "FLASH_EDUPLICATE order $no" ] || fail "the retry printed '$got', not 'FLASH_EDUPLICATE order $no'"
got=$("$PY" "$HERE/example/quickstart.py" "$SEG" 43 4301)
[ "$got" = "FLASH_ESOLD_OUT order 0" ] || fail "a buyer after the last unit printed '$got'"
echo "install_check(python): quickstart.py: order $no, its retry, sold out"

# the example service answers /stock with the sale's state
"$PY" "$HERE/example/service.py" --name "$SEG" --listen 127.0.0.1:0 >"$out" &
svc=$!
for _ in $(seq 1 100); do grep -q '^listening ' "$out" && break; sleep 0.1; done
addr=$(sed -n 's/^listening //p' "$out")
[ -n "$addr" ] || fail "service.py did not print its address"
stock=$("$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen("http://%s/stock?activity=1&sku=10" % sys.argv[1]).read().decode())' "$addr") ||
	fail "GET /stock from service.py"
[ "$stock" = '{"total": 1, "available": 0, "sold": 1}' ] || fail "GET /stock answered $stock"
kill -TERM "$svc"
wait "$svc" || fail "service.py exited $? after SIGTERM"
svc=
echo "install_check(python): service.py: /stock $stock; ok ($P)"
