#!/usr/bin/env python3
"""No function of persist/ or tools/ is over 120 lines, nor of the soak
(tests/soak/, the test tool that was once a command of tools/).

    fnlen.py SOURCE_DIR [MAX]

A function, in this tree's style, is a signature starting at column 0 and
a body from a "{" alone on its line to the first "}" alone on its line; its
length counts from the signature's first line to that "}".  Prints every
function over MAX (120) lines with its file and line, and fails if there
is one; a function that must be longer is listed, with its reason, in
EXCEPTIONS below.
"""
import glob
import os
import re
import sys

EXCEPTIONS = {}   # "path:function": "why it stays long"
SIGNATURE = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(\w+)\s*\(")


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line != "{" or i == 0:
            continue
        j = i - 1
        while j > 0 and not SIGNATURE.match(lines[j]):
            j -= 1
        m = SIGNATURE.match(lines[j])
        if not m:
            continue
        k = i
        while k < len(lines) and lines[k] != "}":
            k += 1
        yield m.group(1), j + 1, k - j + 1


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) == 3 else 120
    files = sorted(glob.glob(os.path.join(src, "persist", "*", "*.c")) +
                   glob.glob(os.path.join(src, "tools", "*.c")) +
                   glob.glob(os.path.join(src, "tests", "soak", "*.c")))
    long_ones, count = [], 0
    for path in files:
        rel = os.path.relpath(path, src)
        for name, line, n in functions(path):
            count += 1
            if n > limit and f"{rel}:{name}" not in EXCEPTIONS:
                long_ones.append(f"{rel}:{line}: {name} is {n} lines")
    if count == 0:
        sys.exit("fnlen.py: no function found: wrong source directory?")
    for x in long_ones:
        print(x)
    if long_ones:
        sys.exit(f"fnlen.py: {len(long_ones)} function(s) over {limit} lines")
    print(f"fnlen.py: {count} functions in {len(files)} files of persist/, tools/ and tests/soak/, "
          f"none over {limit} lines")


main()
