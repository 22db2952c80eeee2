#!/usr/bin/env python3
"""docs_check.py -- the documentation holds together.

usage: docs_check.py SOURCE_DIR links    every relative link in README.md,
                                         docs/*.md, persist/**/README.md and
                                         tests/**/README.md names a file or directory
                                         that exists, and a #fragment names a
                                         heading of the Markdown file it points
                                         into (GitHub's anchors)
       docs_check.py SOURCE_DIR size     README.md is the front page: under
                                         15 KB (15,360 bytes); the rest lives
                                         in docs/

Links inside fenced code blocks and inline code are not links and are not
checked; a link with a scheme (https:, mailto:) is not relative.  Every
problem is printed as FILE:LINE: what; exit 1 if there is any.  Whether a
code block shows a tested file's text is checked by the test that runs that
file (install_prefix, cli_feed_readme_consumer_ships_each_order_once,
python_readme, go_readme, java_readme_snippet; the README's "Terms and
versions" session is run, its comments held to the output, by
cli_terms_change_moves_the_version_and_a_stale_order_takes_nothing)."""
import glob
import os
import re
import sys

README_MAX = 15 * 1024

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose_lines(path):
    """(line number, text) of each line outside fenced code blocks."""
    with open(path, encoding="utf-8") as f:
        fenced = False
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line.rstrip("\n")


def slug(heading):
    """GitHub's anchor for a heading: its text without markup, lower case,
    punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link: its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    """Every anchor the headings of a Markdown file define (repeats get -1, -2, ...)."""
    if path not in _anchors:
        repeats, found = {}, set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            a = slug(m.group(2))
            if a in repeats:
                repeats[a] += 1
                found.add("%s-%d" % (a, repeats[a]))
            else:
                repeats[a] = 0
                found.add(a)
        _anchors[path] = found
    return _anchors[path]


def check_links(src):
    files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    files += sorted(glob.glob(os.path.join(src, "persist", "**", "README.md"), recursive=True))
    files += sorted(glob.glob(os.path.join(src, "tests", "**", "README.md"), recursive=True))
    problems = []
    checked = 0
    for path in files:
        rel = os.path.relpath(path, src)
        for n, line in prose_lines(path):
            targets = [m.group(1) for m in LINK.finditer(CODE_SPAN.sub("", line))]
            m = REF_DEF.match(line)
            if m:
                targets.append(m.group(1))
            for t in targets:
                if SCHEME.match(t):
                    continue
                checked += 1
                target, _, frag = t.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
                if not os.path.exists(dest):
                    problems.append("%s:%d: link to %s: no such file" % (rel, n, t))
                    continue
                if not os.path.realpath(dest).startswith(os.path.realpath(src) + os.sep):
                    problems.append("%s:%d: link to %s: outside the repository" % (rel, n, t))
                    continue
                if not frag:
                    continue
                if not dest.endswith(".md"):
                    problems.append("%s:%d: link to %s: a #fragment into a file that is not Markdown" % (rel, n, t))
                elif frag not in anchors(dest):
                    problems.append("%s:%d: link to %s: %s has no heading with anchor #%s"
                                    % (rel, n, t, os.path.relpath(dest, src), frag))
    for p in problems:
        print(p)
    print("docs_check links: %d files, %d relative links, %d broken" % (len(files), checked, len(problems)))
    return 1 if problems or checked == 0 else 0


def check_size(src):
    size = os.path.getsize(os.path.join(src, "README.md"))
    ok = size < README_MAX
    print("docs_check size: README.md is %d bytes, %s %d" % (size, "under" if ok else "NOT under", README_MAX))
    return 0 if ok else 1


def main(argv):
    if len(argv) != 3 or argv[2] not in ("links", "size"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return check_links(argv[1]) if argv[2] == "links" else check_size(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
