#!/bin/bash
# man_pages.sh FLASHSTOCK MAN_DIR -- every command has its manual page, and
# every page renders clean.  The commands are the ones `flashstock --help`
# lists (tools/flashstock.c's table); for each, MAN_DIR/flashstock-CMD.1
# (made by tools/man.sh at build time) must
#   - render with groff -man -ww (every warning on) without a word on stderr,
#   - be titled FLASHSTOCK-CMD with a NAME line for flashstock-CMD,
#   - show as its synopsis the usage lines of today's `flashstock CMD --help`
#     (a page older than the command fails here),
# flashstock.1 must render clean and name every command's page under SEE
# ALSO, and MAN_DIR must hold no page of a command that is not listed.
set -u
F=${1:?usage: man_pages.sh FLASHSTOCK MAN_DIR}
M=${2:?usage: man_pages.sh FLASHSTOCK MAN_DIR}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "man_pages: FAIL: $*" >&2; exit 1; }

"$F" --help >"$T/help" || fail "$F --help exited $?"
awk '/^commands:$/ { c = 1; next } c && /^$/ { exit } c { print $1 }' "$T/help" >"$T/commands"
[ -s "$T/commands" ] || fail "flashstock --help lists no commands"

# render PAGE: plain text on stdout; any groff warning or error fails
render() {
	LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -rLL=78n -P-cbou "$1" 2>"$T/warn" >"$T/out" ||
		fail "groff failed on $1: $(cat "$T/warn")"
	[ ! -s "$T/warn" ] || fail "groff warns on $1: $(cat "$T/warn")"
	[ -s "$T/out" ] || fail "$1 renders empty"
	sed 's/\xe2\x80\x90/-/g' "$T/out"   # groff's hyphen (U+2010) as ASCII
}

n=0
while read -r cmd; do
	page=$M/flashstock-$cmd.1
	[ -f "$page" ] || fail "no manual page for '$cmd': $page"
	grep -q "^\.TH FLASHSTOCK-${cmd^^} " "$page" || fail "$page is not titled FLASHSTOCK-${cmd^^}"
	render "$page" >"$T/text"
	grep -q "^ *flashstock-$cmd - " "$T/text" || fail "$page has no NAME line for flashstock-$cmd"
	# the synopsis is the usage block of --help, as it is today
	"$F" "$cmd" --help >"$T/cmdhelp" || fail "flashstock $cmd --help exited $?"
	awk 'NR == 1 { sub(/^usage: /, ""); print; exit }' "$T/cmdhelp" >"$T/usage"
	[ -s "$T/usage" ] || fail "flashstock $cmd --help has no usage line"
	sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' "$T/text" | sed 's/^ *//' | grep -qxF -f "$T/usage" ||
		fail "$page: its synopsis is not today's usage line '$(cat "$T/usage")' (a stale page?)"
	sed -n '/^SEE ALSO/,$p' "$T/text" | grep -qF 'flashstock(1)' || fail "$page does not name flashstock(1) under SEE ALSO"
	n=$((n + 1))
done <"$T/commands"

top=$M/flashstock.1
[ -f "$top" ] || fail "no $top"
render "$top" >"$T/text"
sed -n '/^SEE ALSO/,$p' "$T/text" | tr -d '\n' | sed 's/  */ /g' >"$T/see"
while read -r cmd; do
	grep -qF "flashstock-$cmd(1)" "$T/see" || fail "flashstock(1) does not name flashstock-$cmd(1) under SEE ALSO"
done <"$T/commands"

# no page of a command the binary no longer has
for page in "$M"/flashstock-*.1; do
	cmd=${page##*/flashstock-}
	cmd=${cmd%.1}
	grep -qxF "$cmd" "$T/commands" || fail "$page: '$cmd' is not a command of flashstock --help"
done
echo "man_pages: $n command pages and flashstock(1) render clean, each with today's usage"
