#!/usr/bin/env python3
"""persist/'s layers call only down (persist/README.md).

    layers.py SOURCE_DIR

Reads every #include "..." of persist/<layer>/*.[ch] and fails, naming the
file, the line and the header, when:
  - a layer includes a header of a layer above it (storage < mysql < feed <
    reconcile < daemon);
  - a header name exists in two layers (headers are found by name);
  - a persist/ source or header sits outside a layer's folder;
and, outside persist/, when the engine or the API includes a persist/ header
(libflashstock's core knows nothing of the layers above it), when the
library (api/, engine/, persist/) includes a header of the command or the
bench, and when the bench includes one of the command: tools/ (the
`flashstock` command) sits on top and embeds the bench, never the reverse.

Above the command come the tests (tests/, the soak's tool tests/soak/
included), which may include any header below them, the command's too
(tests/soak/ links its helpers, tool.h): so the product -- the library,
the bench and the installed command -- includes no header of tests/ but
those of tests/fixtures/ (the private servers' runner fixture_run.h, which
the demo and the bench's fault round use and which is part of the product),
and a header name is never both in tools/ and in tests/ (found by name).
"""
import os
import re
import sys

LAYERS = ["storage", "mysql", "feed", "reconcile", "daemon"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    persist = os.path.join(src, "persist")
    owner, errors = {}, []
    for name in sorted(os.listdir(persist)):
        if name.endswith((".c", ".h")):
            errors.append(f"persist/{name}: outside every layer's folder")
    for rank, layer in enumerate(LAYERS):
        for name in os.listdir(os.path.join(persist, layer)):
            if name.endswith(".h"):
                if name in owner:
                    errors.append(f"{name}: in persist/{LAYERS[owner[name]]}/ and persist/{layer}/")
                owner[name] = rank
    checked = 0
    for rank, layer in enumerate(LAYERS):
        folder = os.path.join(persist, layer)
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(folder, name), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                checked += 1
                inc = m.group(1)
                if owner.get(inc, -1) > rank:
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"persist/{layer}/{name}:{line}: includes {inc}, of the layer "
                                  f"above it persist/{LAYERS[owner[inc]]}/")
    for top in ("engine", "api"):
        for name in sorted(os.listdir(os.path.join(src, top))):
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(src, top, name), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                checked += 1
                if m.group(1) in owner:
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"{top}/{name}:{line}: includes persist/'s {m.group(1)}")
    above = {}
    for top in ("tools", "bench"):
        for name in os.listdir(os.path.join(src, top)):
            if name.endswith(".h"):
                above[name] = top
    library = [(os.path.join("persist", layer), layer) for layer in LAYERS]
    library += [("engine", None), ("api", None), ("bench", None)]
    for folder, _ in library:
        for name in sorted(os.listdir(os.path.join(src, folder))):
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(src, folder, name), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                checked += 1
                top = above.get(m.group(1))
                if top == "tools" or (top == "bench" and not folder.startswith("bench")):
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"{folder}/{name}:{line}: includes {top}/'s {m.group(1)}")
    # the product never includes the laboratory: tests/'s headers, but the fixtures'
    lab = {}
    tests = os.path.join(src, "tests")
    for folder, dirs, names in os.walk(tests):
        rel = os.path.relpath(folder, src)
        dirs[:] = sorted(d for d in dirs if os.path.join(rel, d) != os.path.join("tests", "fixtures"))
        for name in names:
            if name.endswith(".h"):
                lab.setdefault(name, rel)
                if above.get(name) == "tools":
                    errors.append(f"{name}: in tools/ and {rel}/ (a header is found by its name)")
    if not lab:
        errors.append("no header of tests/ found: wrong source directory?")
    product = library + [("tools", None)]
    for folder, _ in product:
        for name in sorted(os.listdir(os.path.join(src, folder))):
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(src, folder, name), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                checked += 1
                if m.group(1) in lab:
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(f"{folder}/{name}:{line}: includes {lab[m.group(1)]}/'s {m.group(1)} "
                                  f"(the product includes nothing of the tests but tests/fixtures/)")
    if checked == 0:
        errors.append("no #include read: wrong source directory?")
    for e in errors:
        print(e)
    if errors:
        sys.exit(f"layers.py: {len(errors)} violation(s)")
    print(f"layers.py: {checked} includes of persist/, engine/, api/, bench/ and tools/ point down")


main()
