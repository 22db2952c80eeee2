#!/usr/bin/env python3
"""library_exports.py -- the shared library is exactly its header.

usage: library_exports.py SOURCE_DIR LIBFLASHSTOCK_SO CHECK

  exports  `nm -D --defined-only` of the .so names exactly the functions
           api/flashstock.h declares: none missing (an application would
           fail to link), none more (an internal function an application
           could come to depend on).  The consumer protocol
           (api/flashstock_consumer.h: the daemon's and the tools') is in
           neither list: those functions live in the static library only.
  needed   the .so's DT_NEEDED names no MariaDB client: an application
           that only places orders loads no MariaDB (the feed's refill
           loads it when a refill is needed).

The header is read with comments and preprocessor lines taken out; a
declaration is a name flash_* followed by "(" that is not a function-pointer
typedef's "(*name)".  Exits 0 when the check holds, 1 with the difference.
"""
import re
import subprocess
import sys


def declared(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    names = set(re.findall(r"\b(flash_[a-z0-9_]+)\s*\(", text))
    names -= set(re.findall(r"\(\s*\*\s*(flash_[a-z0-9_]+)\s*\)", text))
    return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] not in ("A", "U", "w", "v"):
            names.add(parts[2].split("@")[0])
    return names


def needed(lib):
    out = subprocess.run(["objdump", "-p", lib], check=True, capture_output=True,
                         text=True).stdout
    return [l.split()[1] for l in out.splitlines() if l.strip().startswith("NEEDED")]


def main():
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src, lib, check = sys.argv[1:]
    if check == "exports":
        public = declared(src + "/api/flashstock.h")
        consumer = declared(src + "/api/flashstock_consumer.h")
        have = exported(lib)
        missing = sorted(public - have)
        extra = sorted(have - public)
        leaked = sorted(consumer & have)
        if len(public) < 50:
            print("library_exports: only %d declarations read from flashstock.h: "
                  "the parser is broken" % len(public))
            return 1
        print("library_exports: flashstock.h declares %d functions; the .so exports %d"
              % (len(public), len(have)))
        for what, names in (("declared, not exported", missing),
                            ("exported, not declared", extra),
                            ("consumer protocol exported", leaked)):
            if names:
                print("library_exports: %s (%d): %s" % (what, len(names), " ".join(names)))
        return 1 if missing or extra or leaked else 0
    if check == "needed":
        libs = needed(lib)
        print("library_exports: NEEDED %s" % " ".join(libs))
        bad = [l for l in libs if "mariadb" in l or "mysql" in l]
        if bad:
            print("library_exports: the library loads %s at start" % " ".join(bad))
            return 1
        return 0
    print("library_exports: unknown check %r" % check, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
