#!/bin/bash
# man.sh FLASHSTOCK OUTDIR -- the manual pages, made by help2man from the
# command's own --help: OUTDIR/flashstock.1 from `flashstock --help`, and
# OUTDIR/flashstock-CMD.1 from `flashstock CMD --help` for each command that
# `flashstock --help` lists (its "commands:" part, printed from the table in
# tools/flashstock.c: there is no second list to keep).  flashstock(1) names
# every command's page under SEE ALSO, and each names flashstock(1).
#
# The usage lines at the top of each --help become the page's SYNOPSIS as
# they are (help2man reads only "Usage:" lines one form deep); the rest is
# help2man's DESCRIPTION.  The version is what `flashstock --version`
# prints.  Pages of commands no longer listed are removed.  Run by the
# build (target flashstock_man, tools/CMakeLists.txt) whenever the command
# is rebuilt; tests/docs/man_pages.sh checks the result.
set -euo pipefail
fs=${1:?usage: man.sh FLASHSTOCK OUTDIR}
out=${2:?usage: man.sh FLASHSTOCK OUTDIR}
fail() { echo "man.sh: $*" >&2; exit 1; }

command -v help2man >/dev/null || fail "help2man not found (Debian package help2man)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

version=$("$fs" --version) || fail "$fs --version failed"
version=${version#flashstock }
"$fs" --help >"$tmp/flashstock.help" || fail "$fs --help failed"
# "  NAME  description" lines between "commands:" and the next blank line
awk '/^commands:$/ { c = 1; next }
     c && /^$/     { exit }
     c             { n = $1; sub(/^ *[^ ]+ +/, ""); print n "\t" $0 }' "$tmp/flashstock.help" >"$tmp/commands"
[ -s "$tmp/commands" ] || fail "$fs --help lists no commands"

# roff for one line of plain text: backslashes, option dashes, a leading dot
roff() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

# page NAME HELP_FILE DESCRIPTION SEE_ALSO_ROFF: help2man over a stand-in
# program that prints HELP_FILE less its usage lines, which go to SYNOPSIS
page() {
	local name=$1 help=$2 what=$3 see=$4
	# the usage block: "usage: ..." and the indented lines after it
	awk 'NR == 1 && !/^usage: / { exit }
	     NR > 1 && !/^[ \t]/ { exit }
	     { print }' "$help" >"$tmp/$name.usage"
	[ -s "$tmp/$name.usage" ] || fail "$name: --help does not begin with 'usage: '"
	tail -n +"$(($(wc -l <"$tmp/$name.usage") + 1))" "$help" | sed '/./,$!d' >"$tmp/$name.rest"
	[ -s "$tmp/$name.rest" ] || fail "$name: --help has nothing after its usage lines"
	{
		echo "[SYNOPSIS]"
		echo ".nf"
		sed -e 's/^usage: //' -e 's/^       //' "$tmp/$name.usage" | roff |
			sed 's/^\(flashstock\( [a-z][a-z]*\)\{0,1\}\)\( \|$\)/\\fB\1\\fR\3/'
		echo ".fi"
		echo "[SEE ALSO]"
		echo "$see"
	} >"$tmp/$name.h2m"
	printf '#!/bin/sh\nexec cat %q\n' "$tmp/$name.rest" >"$tmp/$name"
	chmod +x "$tmp/$name"
	help2man --no-info --section=1 --name="$what" --version-string="$name $version" \
		--source="flashstock $version" --manual="flashstock manual" \
		--include="$tmp/$name.h2m" --output="$tmp/$name.1" "$tmp/$name" ||
		fail "help2man failed for $name"
	# no hyphenation and a ragged right, as DocBook's pages have: the text
	# is full of identifiers, paths and URLs that neither split nor stretch
	sed -i '/^\.TH /a .nh\n.ad l' "$tmp/$name.1"
}

see=()
while IFS=$'\t' read -r cmd what; do
	"$fs" "$cmd" --help >"$tmp/flashstock-$cmd.help" 2>/dev/null || fail "$fs $cmd --help failed"
	page "flashstock-$cmd" "$tmp/flashstock-$cmd.help" "$what" ".BR flashstock (1)"
	see+=(".BR \\%flashstock\\-$cmd (1)")
done <"$tmp/commands"
page flashstock "$tmp/flashstock.help" "flash-sale stock, limits, tokens and orders in shared memory" \
	"$(printf '%s,\n' "${see[@]}" | sed '$s/,$//')"

mkdir -p "$out"
rm -f "$out"/flashstock.1 "$out"/flashstock-*.1
mv "$tmp"/*.1 "$out"/
echo "man.sh: $(($(wc -l <"$tmp/commands") + 1)) pages in $out"
