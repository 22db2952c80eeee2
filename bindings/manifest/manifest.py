#!/usr/bin/python3
"""manifest.py -- the one description of api/flashstock.h that the
bindings (Python, Go, Java) are built and tested from, generated from the
header at build time (bindings/CMakeLists.txt).

    manifest.py HEADER OUTDIR

reads HEADER and writes into OUTDIR:

  flashstock.cdef      the header's declarations as cffi's cdef reads them:
                       every integer FLASH_* macro as `#define NAME ...`
                       (its value the C compiler's), every enum, struct,
                       typedef and FLASH_API function, comments dropped;
                       an array bound that is a macro becomes `...`.
                       The Python binding's extension is built from it.
  manifest_probe.c     a C program that prints, compiled against HEADER,
                       the manifest itself (flashstock.manifest, written
                       by running it: the C compiler is the authority on
                       every size, offset and value), one record a line:

      const NAME VALUE                    every integer FLASH_* macro
      enum NAME VALUE                     every enumerator
      struct NAME SIZE NFIELDS            every struct of the header
      field STRUCT.FIELD OFFSET SIZE      each of its fields, in order

The Go and Java binding's layout tests read flashstock.manifest, the
Python binding's test_api reads it too; none keeps its own copy.  A struct,
field or constant of the header that a binding does not follow fails that
binding's test with a line naming it.

The header is parsed by shape, as flashstock.h is written (one declaration
per statement, `FLASH_API` before every function); a declaration this
script cannot read stops it with the line, so the header cannot grow a
form the bindings silently miss.
"""
import os
import re
import sys

DEFINE_RE = re.compile(r"^#define\s+(FLASH_[A-Z0-9_]+)\s+(.+?)\s*$")
# object-like macros that are not integer constants
NOT_CONSTANTS = {"FLASH_API"}


class HeaderError(ValueError):
    pass


def strip_comments(text):
    """The text with every comment replaced by spaces (newlines kept, so
    line numbers stay)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def parse(text):
    """(constants, statements) of the header text: constants [name] of the
    integer FLASH_* macros in order; statements [(kind, name, body_text)]
    of the C declarations (kind: struct, enum, typedef, function)."""
    code = strip_comments(text)
    constants = []
    lines = []
    cond = 0          # inside `#ifdef __cplusplus` ... `#endif`
    for n, line in enumerate(code.split("\n"), 1):
        s = line.strip()
        if s.startswith("#"):
            if re.match(r"#\s*ifdef\s+__cplusplus", s):
                cond += 1
            elif cond and re.match(r"#\s*endif", s):
                cond -= 1
            m = DEFINE_RE.match(s)
            if m and m.group(1) not in NOT_CONSTANTS and "(" not in m.group(1):
                constants.append(m.group(1))
            lines.append("")
            continue
        lines.append("" if cond else line)
    body = "\n".join(lines)
    statements = []
    for stmt in split_statements(body):
        statements.append(classify(stmt))
    return constants, statements


def split_statements(body):
    """Top-level C statements (ending in `;` at brace depth 0)."""
    out, cur, depth = [], [], 0
    for ch in body:
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            s = " ".join("".join(cur).split())
            if s != ";":
                out.append(s)
            cur = []
    rest = "".join(cur).strip()
    if rest:
        raise HeaderError("text after the last declaration: %r" % rest[:80])
    return out


def classify(stmt):
    m = re.match(r"^(struct|enum) (\w+) \{(.*)\};$", stmt)
    if m:
        return (m.group(1), m.group(2), m.group(3).strip())
    if re.match(r"^typedef (struct|enum) \w+ \w+;$", stmt):
        return ("typedef", stmt.split()[-1].rstrip(";"), stmt)
    m = re.match(r"^FLASH_API (.+?\b(\w+) ?\(.*\));$", stmt)
    if m:
        return ("function", m.group(2), m.group(1))
    raise HeaderError("a declaration the manifest cannot read: %r" % stmt[:120])


def struct_fields(body):
    """[(name, declaration)] of a struct body `T a; T b, c; T d[N];`."""
    fields = []
    for decl in (d.strip() for d in body.split(";") if d.strip()):
        m = re.match(r"^((?:const |struct |enum |unsigned )*[\w]+(?: ?\*)*) ?(.+)$", decl)
        if not m:
            raise HeaderError("a struct field the manifest cannot read: %r" % decl)
        base, names = m.group(1), m.group(2)
        for part in (p.strip() for p in names.split(",")):
            pm = re.match(r"^(\**) ?(\w+)((?:\[[^\]]+\])*)$", part)
            if not pm:
                raise HeaderError("a struct field the manifest cannot read: %r" % decl)
            fields.append((pm.group(2), base, pm.group(1), pm.group(3)))
    return fields


def enumerators(body):
    return [e.split("=")[0].strip() for e in body.split(",") if e.strip()]


def cdef_text(constants, statements):
    """The declarations for cffi (see the module's comment)."""
    out = ["/* flashstock.cdef -- generated by bindings/manifest/manifest.py from",
           "   api/flashstock.h: do not edit */"]
    out += ["#define %s ..." % c for c in constants if c != "FLASH_OK"]
    out.append("#define FLASH_OK 0")
    for kind, name, body in statements:
        if kind == "struct":
            out.append("struct %s {" % name)
            for fname, base, stars, dims in struct_fields(body):
                dims = re.sub(r"\[[^\]]*[A-Za-z_][^\]]*\]", "[...]", dims)
                out.append("    %s %s%s%s;" % (base, stars, fname, dims))
            out.append("};")
        elif kind == "enum":
            out.append("enum %s { %s };" % (name, body))
        elif kind == "typedef":
            out.append(body)
        else:
            out.append(body + ";")
    return "\n".join(out) + "\n"


def probe_text(constants, statements):
    """manifest_probe.c (see the module's comment)."""
    out = ["/* manifest_probe.c -- generated by bindings/manifest/manifest.py from",
           " * api/flashstock.h: prints flashstock.manifest, the C compiler's sizes,",
           " * offsets and values (do not edit). */",
           "#include <stddef.h>",
           "#include <stdio.h>",
           "",
           '#include "flashstock.h"',
           "",
           "#define C(n)       printf(\"const %s %lld\\n\", #n, (long long)(n))",
           "#define E(n)       printf(\"enum %s %lld\\n\", #n, (long long)(n))",
           "#define S(t, n)    printf(\"struct %s %zu %d\\n\", #t, sizeof(struct t), n)",
           "#define F(t, f)    printf(\"field %s.%s %zu %zu\\n\", #t, #f, offsetof(struct t, f), \\",
           "                          sizeof(((struct t *)0)->f))",
           "",
           "/* usage: manifest_probe [OUT]: the manifest to OUT, or to stdout */",
           "int main(int argc, char **argv)",
           "{",
           "\tif (argc > 1 && !freopen(argv[1], \"w\", stdout)) {",
           "\t\tperror(argv[1]);",
           "\t\treturn 1;",
           "\t}"]
    out += ["\tC(%s);" % c for c in constants]
    for kind, name, body in statements:
        if kind == "enum":
            out += ["\tE(%s);" % e for e in enumerators(body)]
    for kind, name, body in statements:
        if kind == "struct":
            fields = struct_fields(body)
            out.append("\tS(%s, %d);" % (name, len(fields)))
            out += ["\tF(%s, %s);" % (name, f[0]) for f in fields]
    out += ["\treturn fclose(stdout) == 0 ? 0 : 1;", "}"]
    return "\n".join(out) + "\n"


def write_if_changed(path, text):
    """Leave an unchanged file alone: what depends on it is not rebuilt."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: manifest.py HEADER OUTDIR\n")
        return 2
    header, outdir = argv[1], argv[2]
    with open(header, encoding="utf-8") as f:
        text = f.read()
    try:
        constants, statements = parse(text)
    except HeaderError as e:
        sys.stderr.write("manifest.py: %s: %s\n" % (header, e))
        return 1
    os.makedirs(outdir, exist_ok=True)
    write_if_changed(os.path.join(outdir, "flashstock.cdef"), cdef_text(constants, statements))
    write_if_changed(os.path.join(outdir, "manifest_probe.c"), probe_text(constants, statements))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
