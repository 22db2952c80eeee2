#!/usr/bin/env bash
# cli_expect.sh -- run one command, check its exit code AND its output.
#
#   cli_expect.sh RC REGEX COMMAND [ARGS...]
#
# Passes only when COMMAND exits with status RC and its output (stdout and
# stderr together) has a line matching the extended regular expression REGEX.
# ctest's PASS_REGULAR_EXPRESSION alone ignores the exit code: a command that
# prints its usage and then fails would pass.  Prints what it saw on failure.
set -u
if [ $# -lt 3 ]; then
	echo "usage: cli_expect.sh RC REGEX COMMAND [ARGS...]" >&2
	exit 2
fi
want_rc=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
ok=1
if [ "$rc" != "$want_rc" ]; then
	echo "cli_expect: '$*' exited $rc, expected $want_rc" >&2
	ok=0
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
	echo "cli_expect: output of '$*' has no line matching /$regex/" >&2
	ok=0
fi
if [ "$ok" -ne 1 ]; then
	printf -- '--- output ---\n%s\n--------------\n' "$out" >&2
	exit 1
fi
exit 0
