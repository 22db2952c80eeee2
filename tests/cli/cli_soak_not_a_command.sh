#!/usr/bin/env bash
# cli_soak_not_a_command.sh FLASHSTOCK -- the installed command is the
# product, not the laboratory: the soak is a test tool of its own
# (tests/soak/, flashstock_soak, never installed), so `flashstock --help`
# lists no soak among its commands (nor, with it, the manual pages made from
# that list: tools/man.sh), and `flashstock soak` is an unknown command
# (exit 2, said so), as is its --help.
set -u
fs=$1
fail=0

help=$("$fs" --help) || { echo "flashstock --help exited $?" >&2; fail=1; }
# the "commands:" part of --help, one "  NAME  description" line each
cmds=$(printf '%s\n' "$help" | awk '/^commands:$/ { c = 1; next } c && /^$/ { exit } c { print $1 }')
if [ -z "$cmds" ]; then
	echo "flashstock --help lists no commands" >&2
	fail=1
fi
if printf '%s\n' "$cmds" | grep -qx soak; then
	echo "flashstock --help lists soak as a command:" >&2
	printf '%s\n' "$help" >&2
	fail=1
fi
for args in "soak" "soak --help"; do
	# shellcheck disable=SC2086
	out=$("$fs" $args 2>&1)
	rc=$?
	if [ "$rc" -ne 2 ]; then
		echo "flashstock $args exited $rc, expected 2 (unknown command)" >&2
		fail=1
	fi
	if ! printf '%s\n' "$out" | grep -q "^flashstock: unknown command 'soak'$"; then
		echo "flashstock $args did not say: unknown command 'soak'; it said:" >&2
		printf '%s\n' "$out" | head -n 5 >&2
		fail=1
	fi
done
exit $fail
