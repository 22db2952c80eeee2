#!/bin/sh
# systemd_unit.sh UNIT SYSUSERS FLASHSTOCK -- the unit files as systemd reads
# them, without a running systemd (CI has none):
#  1. `systemd-analyze verify` of an instance of UNIT (the build tree's copy,
#     ExecStart= the built binary; tests/deploy/install_prefix.sh verifies the
#     installed one) exits 0 and prints nothing -- verify exits 0 on an
#     unknown key or a bad value and only prints them, so any line fails;
#     the same unit with a missing binary is refused (the check reads it);
#  2. UNIT's ExecStart=, expanded as systemd expands it (%i, the default
#     FLASHSTOCK_WAL, FLASHSTOCK_OPTS split into words), is a command
#     `flashstock serve` accepts and serves a segment with; run under strace,
#     it makes no system call outside the unit's SystemCallFilter= (the
#     groups expanded by systemd-analyze syscall-filter), opens no socket of
#     a family RestrictAddressFamilies= leaves out, and maps no memory
#     writable and executable at once (MemoryDenyWriteExecute=);
#  3. `systemd-sysusers --root` on SYSUSERS makes a system user flashstock
#     (uid below 1000, nologin) with its own group flashstock.
set -u
unit=$1 sysusers=$(realpath "$2") fs=$3
d=$(mktemp -d "${TMPDIR:-/tmp}/flash-unit-XXXXXX")
inst=fsunit$$
cleanup() {
	"$fs" destroy --name "/$inst" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. verify
cp "$unit" "$d/flashstock-serve@.service" || fail "copy $unit"
systemd-analyze verify --man=no "$d/flashstock-serve@$inst.service" >"$d/verify" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "systemd-analyze verify: exit $rc: $(cat "$d/verify")"
[ -s "$d/verify" ] && fail "systemd-analyze verify complains: $(cat "$d/verify")"
mkdir "$d/bad"
sed 's#^ExecStart=[^ ]*#ExecStart=/nonexistent/flashstock#' "$unit" >"$d/bad/flashstock-serve@.service"
systemd-analyze verify --man=no "$d/bad/flashstock-serve@$inst.service" >"$d/verify-bad" 2>&1 &&
	fail "systemd-analyze verify accepted a unit whose binary is missing"
grep -q "/nonexistent/flashstock is not executable" "$d/verify-bad" ||
	fail "systemd-analyze verify of a missing binary: $(cat "$d/verify-bad")"
for k in Type=notify NotifyAccess=main WatchdogSec= Restart=on-failure RestartPreventExitStatus=2 \
         User=flashstock Group=flashstock RemoveIPC=no; do
	grep -q "^$k" "$unit" || fail "the unit has no $k"
done
grep -Eq '^(PrivateDevices=(yes|true)|DynamicUser=(yes|true)|RemoveIPC=(yes|true)|ProtectProc=invisible)' "$unit" &&
	fail "the unit hides or removes shared memory: $(grep -E '^(PrivateDevices|DynamicUser|RemoveIPC|ProtectProc)=' "$unit")"

# 2. ExecStart, expanded: the instance is the segment without its slash
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$exec_line" ] || fail "no ExecStart="
wal="$d/state/$inst/wal"
mkdir -p "$d/state/$inst"
# FLASHSTOCK_OPTS as an operator's env file would set it; --once ends the run
cmdline=$(printf '%s\n' "$exec_line" | sed -e "s#%i#$inst#g" -e "s#\${FLASHSTOCK_WAL}#$wal#g" \
	-e 's#\$FLASHSTOCK_OPTS#--once --no-snapshot --reconcile-every 0#')
"$fs" create --name "/$inst" --procs 8 --users 64 --orders 64 --tokens 16 --requests 16 \
	--skus 4 --shards 4 --activities 2 >/dev/null || fail "create"
"$fs" load --name "/$inst" --activity 1 --sku 1 --units 10 >/dev/null || fail "load"
# LeakSanitizer (the ASan build) cannot run under ptrace: no leak check here
# shellcheck disable=SC2086   # split into words, as systemd splits ExecStart=
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -qq -o "$d/trace" $cmdline --metrics 127.0.0.1:0 >"$d/serve.log" 2>&1 ||
	fail "the unit's ExecStart ($cmdline) exited $?: $(cat "$d/serve.log")"
grep -q "stopping: 2 records written, durable LSN 2" "$d/serve.log" ||
	fail "the unit's ExecStart did not serve /$inst: $(cat "$d/serve.log")"
grep -q "metrics on port" "$d/serve.log" || fail "no metrics endpoint: $(cat "$d/serve.log")"
# the filter: each @group expanded (groups name groups)
filter=$(sed -n 's/^SystemCallFilter=//p' "$unit")
[ -n "$filter" ] || fail "the unit has no SystemCallFilter="
todo=$filter seen=
: >"$d/allowed"
while [ -n "$todo" ]; do
	set -- $todo
	g=$1; shift; todo=$*
	case " $seen " in *" $g "*) continue ;; esac
	seen="$seen $g"
	case $g in
	@*) for x in $(systemd-analyze syscall-filter "$g" | sed -e 1d -e 's/#.*//'); do
		todo="$todo $x"
	    done ;;
	*) echo "$g" >>"$d/allowed" ;;
	esac
done
sort -u "$d/allowed" -o "$d/allowed"
[ "$(wc -l <"$d/allowed")" -gt 50 ] || fail "SystemCallFilter=$filter expands to $(wc -l <"$d/allowed") calls"
sed -E 's/^[0-9]+ +//' "$d/trace" | grep -oE '^[a-z_0-9]+\(' | tr -d '(' | sort -u >"$d/used"
[ "$(wc -l <"$d/used")" -gt 20 ] || fail "strace saw $(wc -l <"$d/used") system calls"
outside=$(comm -23 "$d/used" "$d/allowed" | tr '\n' ' ')
[ -z "$outside" ] || fail "serve makes system calls outside SystemCallFilter=$filter: $outside"
families=$(sed -n 's/^RestrictAddressFamilies=//p' "$unit")
for f in $(grep -oE 'socket\(AF_[A-Z0-9]+' "$d/trace" | sed 's/socket(//' | sort -u); do
	case " $families " in *" $f "*) ;; *) fail "serve opens an $f socket, not in RestrictAddressFamilies=$families" ;; esac
done
grep -E 'mmap|mprotect' "$d/trace" | grep 'PROT_WRITE' | grep -q 'PROT_EXEC' &&
	fail "serve maps memory writable and executable: $(grep -E 'mmap|mprotect' "$d/trace" | grep PROT_WRITE | grep PROT_EXEC | head -3)"

# 3. sysusers
mkdir -p "$d/root/etc"
systemd-sysusers --root="$d/root" "$sysusers" >"$d/sysusers" 2>&1 ||
	fail "systemd-sysusers: exit $?: $(cat "$d/sysusers")"
grep -v '^Creating ' "$d/sysusers" | grep -q . && fail "systemd-sysusers complains: $(cat "$d/sysusers")"
pw=$(grep '^flashstock:' "$d/root/etc/passwd") || fail "no user flashstock: $(cat "$d/root/etc/passwd")"
gr=$(grep '^flashstock:' "$d/root/etc/group") || fail "no group flashstock: $(cat "$d/root/etc/group")"
uid=$(echo "$pw" | cut -d: -f3) gid=$(echo "$pw" | cut -d: -f4) shell=$(echo "$pw" | cut -d: -f7)
[ "$uid" -lt 1000 ] || fail "flashstock is not a system user (uid $uid): logind would remove its segments"
[ "$gid" = "$(echo "$gr" | cut -d: -f3)" ] || fail "flashstock's primary group is not flashstock: $pw / $gr"
case $shell in */nologin) ;; *) fail "flashstock has a login shell: $shell" ;; esac

echo "ok: systemd-analyze verify of flashstock-serve@$inst.service silent (a missing binary refused);"
echo "    its ExecStart served /$inst (2 records) with $(wc -l <"$d/used") kinds of system call, all in"
echo "    its SystemCallFilter; sysusers made system user flashstock (uid $uid,"
echo "    group flashstock, $shell)"
