#!/usr/bin/env bash
# tools/run.sh -- the README's two Quick start commands.
#
#   bash tools/run.sh demo [demo flags]   install what is missing, build, run `flashstock demo`
#   bash tools/run.sh test                install what is missing, build (ASan+UBSan, TSan,
#                                         libFuzzer), then every test: ctest in the ASan build
#                                         (all but the bench and the configure checks), the
#                                         thread tests under TSan, a bounded fuzz run --
#                                         meanwhile, in the background, the plain build and
#                                         clang's static analyzer over what ships (any report
#                                         fails) -- and last ctest in the plain build
#
# Works on a fresh Debian 12 machine as root.  Services the tests need (a private MariaDB
# on a unix socket, a private redis-server) are started by the tests themselves in
# temporary directories and stopped when they end; nothing is left running.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

PKGS=(build-essential cmake pkg-config libck-dev liburcu-dev libcmocka-dev
      libmariadb-dev mariadb-server redis-server libhiredis-dev libmicrohttpd-dev
      gnuplot-nox clang libclang-rt-14-dev clang-tools-14 procps passwd)
PKGS+=(openjdk-17-jdk-headless junit5)                   # bindings/java (JNI, JUnit 5)
PKGS+=(golang-go golang-github-gomodule-redigo-dev)      # bindings/go (cgo; redigo for its bench)
PKGS+=(python3 python3-dev python3-cffi python3-pytest python3-redis)  # bindings/python; python3 also
#   for tests/cli/cli_feed_refill.sh, which compares records LSN by LSN
PKGS+=(python3-venv python3-wheel)                        # python_pip: a venv, and setuptools' wheel
#   build in it (--no-build-isolation: the system's wheel, seen with --system-site-packages)
PKGS+=(librabbitmq-dev rabbitmq-server)                   # flashstock feed --to amqp:// and its tests
PKGS+=(galera-4 rsync iproute2 lsof)                     # tests/fixtures/galera.sh: the provider, the
#   SST method (wsrep_sst_rsync needs ss or lsof), ss for the fixture's port checks
PKGS+=(faketime)                                          # the soak (tests/soak/): the shifted clock (libfaketime)
PKGS+=(prometheus python3-yaml)                           # dashboards/: promtool check/test rules, the
#   live test's private Prometheus (tests/deploy/monitoring_*.sh); python3-yaml reads the rules in its checks
PKGS+=(help2man groff-base)                               # the manual pages (tools/man.sh) and their test
PKGS+=(libsystemd-dev)                                    # serve's sd_notify (persist/daemon/notify.c); systemd's
#   systemd-analyze and systemd-sysusers check the unit files (tests/deploy/systemd_tests.cmake)
PKGS+=(systemd strace)                                    # strace: the unit's system-call filter (systemd_unit)

log() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

install_deps() {
	local missing=()
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "run.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# policy-rc.d keeps the packages' own services from starting: the project
	# runs private instances only
	local prc=/usr/sbin/policy-rc.d created=0
	if [ ! -e "$prc" ]; then printf '#!/bin/sh\nexit 101\n' > "$prc"; chmod +x "$prc"; created=1; fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
	[ "$created" -eq 1 ] && rm -f "$prc"
	return 0
}

build() { # build DIR [cmake args...] [-- targets...]: quiet, but the log's tail on failure
	local dir=$1; shift
	local args=() targets=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
	[ $# -gt 0 ] && shift && targets=(--target "$@")
	log "building in $dir"
	mkdir -p "$dir"
	if ! { cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}" &&
	       cmake --build "$dir" -j "$(nproc)" "${targets[@]}"; } >"$dir/build.log" 2>&1; then
		tail -n 40 "$dir/build.log" >&2
		echo "run.sh: build in $dir failed (whole log: $dir/build.log)" >&2
		exit 1
	fi
}

# Clang's static analyzer over what ships (engine, persist, tools, bench; not
# tests/, which the sanitizer stages run instead: with them the stage took 8
# minutes of a 38-minute CI run).  analyze-build reads a Debug configure's
# compilation database and analyzes each source without compiling it
# (scan-build compiled everything a fifth time: 327 s of CPU against 262 s
# here, measured alone); only the bench's generated header is made first.
# --status-bugs makes any report fail the run; the HTML reports stay in
# build-scan/reports.
scan() {
	local dir=$here/build-scan
	log "static analysis (analyze-build) in $dir"
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! { cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 \
	           -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DFLASH_BINDINGS=OFF -DFLASH_TESTS=OFF &&
	       cmake --build "$dir" --target bench_lua_scripts &&
	       analyze-build-14 --status-bugs --cdb "$dir/compile_commands.json" -o "$dir/reports"; } \
	       >"$dir/build.log" 2>&1; then
		tail -n 20 "$dir/build.log" >&2
		# each report names its bug in its HTML's comments
		grep -rhoE '<!-- (BUGTYPE|BUGDESC|BUGFILE|BUGLINE) [^>]*-->' "$dir/reports" 2>/dev/null | head -n 40 >&2
		echo "run.sh: the static analysis found bugs or failed (log: $dir/build.log," \
		     "reports: $dir/reports)" >&2
		exit 1
	fi
}

# The test builds are for the tests: line tables (-g1) are all their
# sanitizer reports, stacks, gdb backtraces and crash_points' addr2line
# read, and compile in about half the time of full debug information
# (engine/order.c under ASan: 6.0 s against 10.7 s; CI is CPU-bound from
# its first minute to its last).  The plain build keeps the flag in its
# cache (build/, which `demo` shares): a later demo build has line tables too.
g1=-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
demo)
	install_deps
	build "$here/build"
	exec "$here/build/tools/flashstock" demo "$@"
	;;
test)
	install_deps
	# The plain build and the static analysis are needed only by the last
	# stage: they start first and run meanwhile, at the lowest CPU priority
	# (nice 19), on the CPU the sanitizer builds and stages leave idle (much of their time is spent
	# waiting on MariaDB, Galera, RabbitMQ and the lease tests' clocks), and
	# the plain stage waits for them.  Their own process group, ended if
	# this script ends first.  setsid makes a new session, and with the
	# kernel's autogroups (sched_autogroup_enabled) a session is scheduled as
	# one group against the others whatever its tasks' nice: the session's
	# own nice (/proc/self/autogroup) is what yields.  Without it the build
	# took half the CPU from the tests (a 2.9 s crash_stores filter took
	# 5.1 s beside two such loops, 3.0 s with it).
	log "plain build and static analysis: in the background at nice 19 (log: build-bg.log)"
	setsid bash -c 'renice -n 19 -p $$ >/dev/null; echo 19 >/proc/self/autogroup 2>/dev/null
		exec bash "$1" _build_plain' _ "$here/tools/run.sh" \
		>"$here/build-bg.log" 2>&1 &
	bg=$!
	trap 'kill -- -"$bg" 2>/dev/null' EXIT
	build "$here/build-asan" "$g1" -DFLASH_SANITIZE=ON
	build "$here/build-tsan" "$g1" -DFLASH_TSAN=ON -- tsan_tests
	build "$here/build-fuzz" "$g1" -DCMAKE_C_COMPILER=clang -DFLASH_LIBFUZZER=ON -- fuzz_wal fuzz_attach fuzz_csv
	# every test but the bench's: a measuring tool, whose checks run in the
	# plain stage.  Under ASan its rows took about 7 minutes of test time
	# (bench_smoke 270 s, the fault round 140-185 s) of a 14-minute stage,
	# and starved the MariaDB that the tests beside them shared.  Nor the
	# configure checks (label configure): cmake alone, no code of the build,
	# 45 s of the stage's test time.
	# One test more than there are cores: many tests wait on MariaDB,
	# Galera, RabbitMQ or their own clocks, and with one per core the CPU
	# sat a third idle (the plain stage alone at -j2: 69 % busy, 865 s;
	# the ASan stage alone at -j3: 96 % busy, 704 s).  In a whole clean-clone
	# run here the ASan stage took 788 s and the plain one 824 s at -j3
	# (980 s and 893 s at -j2 before, with the background build then taking
	# half the CPU, see above).  The test that asserts a time bound runs alone
	# under ASan (RUN_SERIAL), whatever -j says (tests/sql/lease_tests.cmake).
	jobs=$(( $(nproc) + 1 ))
	log "tests under AddressSanitizer + UndefinedBehaviorSanitizer"
	(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j"$jobs" -LE 'bench|configure' )
	# as many at once as above: one after the other, test_wal_serve (42 s)
	# and test_mysql_pump (23 s) took 96 s of CI, 52 s side by side
	log "multi-thread tests under ThreadSanitizer"
	(cd "$here/build-tsan" && ctest --output-on-failure -j"$jobs" -L tsan )
	log "libFuzzer targets, bounded run (ASan + UBSan)"
	(cd "$here/build-fuzz" && FUZZ_RUNS_attach=20000 \
		sh "$here/tests/fuzz/fuzz_run.sh" "$here/build-fuzz" 40000 -seed=1 )
	log "waiting for the plain build and the static analysis"
	if ! wait "$bg"; then
		cat "$here/build-bg.log" >&2
		exit 1
	fi
	trap - EXIT
	sed -n 's/^== \[[0-9ms]*\] //p' "$here/build-bg.log" | sed 's/^/   background: /' >&2
	log "all tests (plain build)"
	cd "$here/build" && exec ctest --output-on-failure -j"$jobs"
	;;
_build_plain)   # the background half of "test"
	build "$here/build" "$g1"
	scan
	log "plain build and static analysis done"
	;;
-h|--help|help|"")
	sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	[ -n "$cmd" ] && exit 0 || exit 2
	;;
*)
	echo "run.sh: unknown command '$cmd' (try: demo, test)" >&2
	exit 2
	;;
esac
