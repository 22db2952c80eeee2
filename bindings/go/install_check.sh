#!/bin/bash
# install_check.sh PREFIX -- the installed Go binding as a user meets it:
# a new module outside the source and build trees whose go.mod points at
# PREFIX/share/gocode/src/flashstock/go/flashstock with a replace
# directive, built offline with no cgo flags, pkg-config path or library
# path in the environment (the installed zz_prefix.go names PREFIX's
# include and library directories, with a run path).  It builds and runs a
# tiny program (an order, its retry, a buyer after the last unit) and the
# installed example service (a GET /stock through it) on a fresh segment
# made by PREFIX's flashstock command.  Exits nonzero with a line saying
# which step failed.
set -u
P=${1:?usage: install_check.sh PREFIX}
P=$(cd "$P" && pwd) || { echo "go install_check: FAIL: no prefix $1" >&2; exit 1; }
fail() { echo "go install_check: FAIL: $*" >&2; exit 1; }
MOD=$P/share/gocode/src/flashstock/go/flashstock
FS=$P/bin/flashstock
[ -f "$MOD/go.mod" ] || fail "not installed: $MOD/go.mod"
[ -f "$MOD/zz_prefix.go" ] || fail "not installed: $MOD/zz_prefix.go"
[ -x "$FS" ] || fail "not installed: $FS"

t=$(mktemp -d) || fail mktemp
SEG=/fs-go-install-$$
svc=
cleanup() {
	[ -n "$svc" ] && kill "$svc" 2>/dev/null && wait "$svc" 2>/dev/null
	"$FS" destroy --name "$SEG" --force >/dev/null 2>&1 || "$FS" destroy --name "$SEG" >/dev/null 2>&1
	rm -rf "$t"
}
trap cleanup EXIT

# only the prefix: nothing of the source or build tree reaches the compiler
unset CGO_CFLAGS CGO_LDFLAGS CGO_CPPFLAGS PKG_CONFIG_PATH LD_LIBRARY_PATH GOTOOLCHAIN GOROOT
export GOPROXY=off GOFLAGS=-mod=mod GOSUMDB=off GOENV=off GOWORK=off
export GOCACHE=$t/gocache GOPATH=$t/gopath CGO_ENABLED=1

mkdir -p "$t/app"
cat >"$t/app/go.mod" <<EOM
module fsgo-install-check

go 1.19

require flashstock/go/flashstock v0.0.0

replace flashstock/go/flashstock => $MOD
EOM
cat >"$t/app/main.go" <<'EOM'
// One buyer's order, as an application outside the project would place it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"flashstock/go/flashstock"
)

func main() {
	h, err := flashstock.Open(os.Args[1], flashstock.Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	defer h.Close()
	user, _ := strconv.ParseUint(os.Args[2], 10, 64)
	rid, _ := strconv.ParseUint(os.Args[3], 10, 64)
	r, err := h.Order(context.Background(), flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1, RequestID: rid})
	var fe *flashstock.Error
	switch {
	case err == nil:
		fmt.Println("FLASH_OK order", r.OrderNo)
	case errors.As(err, &fe):
		fmt.Println(fe.Name, "order", r.OrderNo)
		os.Exit(1)
	default:
		fmt.Println(err)
		os.Exit(3)
	}
}
EOM
(cd "$t/app" && go build -o "$t/order" .) >"$t/build.log" 2>&1 ||
	fail "go build of a program against $MOD: $(tail -5 "$t/build.log")"
(cd "$t/app" && go build -o "$t/example" flashstock/go/flashstock/example) >"$t/build.log" 2>&1 ||
	fail "go build of the installed example: $(tail -5 "$t/build.log")"
readelf -d "$t/order" | grep -E 'R(UN)?PATH' | grep -qF "$P/" ||
	fail "the program has no run path into $P"
lib=$(ldd "$t/order" | awk '/libflashstock/ { print $3 }')
[ "${lib#"$P"/}" != "$lib" ] || fail "the program loads libflashstock from '$lib', not from $P"

"$FS" create --name "$SEG" --activities 2 --skus 4 --shards 4 --users 64 --orders 256 --tokens 64 \
	--requests 64 --locks 4 --procs 8 --ring 64 >/dev/null || fail "installed flashstock create"
"$FS" load --name "$SEG" --activity 1 --sku 10 --units 1 >/dev/null || fail "installed flashstock load"

out=$("$t/order" "$SEG" 42 4201); rc=$?
[[ $rc -eq 0 && $out =~ ^FLASH_OK\ order\ [1-9][0-9]*$ ]] || fail "first order: exit $rc: $out"
first=${out#FLASH_OK order }
out=$("$t/order" "$SEG" 42 4201); rc=$?
[[ $rc -eq 1 && $out == "FLASH_EDUPLICATE order $first" ]] || fail "retry: exit $rc: $out"
out=$("$t/order" "$SEG" 43 4301); rc=$?
[[ $rc -eq 1 && $out == "FLASH_ESOLD_OUT order 0" ]] || fail "after the last unit: exit $rc: $out"

"$t/example" --name "$SEG" --listen 127.0.0.1:0 >"$t/svc.out" 2>"$t/svc.err" &
svc=$!
for _ in $(seq 1 100); do grep -q '^listening ' "$t/svc.out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening //p' "$t/svc.out")
[ -n "$addr" ] || fail "the installed example did not listen: $(cat "$t/svc.err")"
exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}" || fail "connect to the example at $addr"
printf 'GET /stock?activity=1&sku=10 HTTP/1.0\r\nHost: x\r\n\r\n' >&3
resp=$(cat <&3)
exec 3<&-
grep -q '"available":0' <<<"$resp" && grep -q '"sold":1' <<<"$resp" && grep -q '"total":1' <<<"$resp" ||
	fail "GET /stock through the installed example: $resp"
kill -TERM "$svc"; wait "$svc" || fail "the example exited $? after SIGTERM"
svc=
echo "go install_check: ok ($MOD)"
