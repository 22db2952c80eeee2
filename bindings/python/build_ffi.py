#!/usr/bin/python3
"""build_ffi.py -- the cffi definition of flashstock._native, the extension
module of the Python binding (API mode, out of line), for both builds:

  - CMake: `build_ffi.py CDEF OUT.c` writes the module's C source, which
    CMake compiles with the project's flags against libflashstock.so.
  - pip (setup.py, cffi_modules "build_ffi.py:ffi_from_pkgconfig"): the
    header, the declarations and the library of an installed libflashstock,
    found with pkg-config; setuptools compiles the module.

The cdef is not written here: it is flashstock.cdef, the bindings'
manifest's declarations, generated from api/flashstock.h at build time by
bindings/manifest/manifest.py (and installed with the library, under the
.pc file's manifestdir, for pip).  It declares every struct whole (no
"..."; an array whose bound is a macro has the C compiler's length), so the
generated module carries the C compiler's offset and size of every field,
and cffi refuses a struct whose field sizes differ from it; every integer
FLASH_* macro is a constant of the module with the C compiler's value.

Result codes: every FLASH_E* constant of the cdef, in the header's order,
is named in a C array the module exports (flash_py_code_names), so a code
added to the header is known to the binding on the next build without a
change here.  Codes the library returns that the header did not have when
the module was built still work: the error mapping asks flash_rcname() for
their names at run time.
"""
import os
import re
import subprocess
import sys

import cffi

# `#define FLASH_ESOLD_OUT ...` and the like: the result codes of the cdef.
CODE_RE = re.compile(r"^#define\s+(FLASH_E[A-Z0-9_]+)\s+\.\.\.\s*$", re.M)


def cdef_codes(cdef):
    """[name] of every result code the cdef declares, in its order."""
    return CODE_RE.findall(cdef)


def make_ffi(cdef, **build_args):
    """The FFI of flashstock._native for the manifest's declarations `cdef`
    (the text of flashstock.cdef): the cdef, the names of its FLASH_E*
    codes, and the module's source (build_args: include_dirs, libraries,
    ... for setuptools)."""
    codes = cdef_codes(cdef)
    if not codes:
        raise ValueError("no FLASH_E* code in the declarations")
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    # the names of the codes, for the error mapping: a C array the module exports
    names = ", ".join('"%s"' % name for name in codes)
    ffi.cdef("static const char *const flash_py_code_names[%d];" % len(codes))
    # the module's init function is defined by cffi's code; its prototype
    # here keeps -Wmissing-prototypes (and so -Werror) satisfied
    ffi.set_source("flashstock._native",
                   '#include "flashstock.h"\n'
                   "PyMODINIT_FUNC PyInit__native(void);\n"
                   "static const char *const flash_py_code_names[%d] = { %s };\n"
                   % (len(codes), names), **build_args)
    return ffi


class PkgConfigError(RuntimeError):
    pass


def pkg_config(*args):
    """`pkg-config ARGS flashstock`'s output, stripped; PkgConfigError when
    pkg-config is missing or does not know flashstock."""
    try:
        p = subprocess.run(["pkg-config", *args, "flashstock"], capture_output=True, text=True)
    except OSError as e:
        raise PkgConfigError("cannot run pkg-config (Debian: apt-get install pkg-config): %s" % e)
    if p.returncode != 0:
        raise PkgConfigError(
            "pkg-config does not find flashstock (%s): install libflashstock first "
            "(cmake --install BUILD --prefix P) and set "
            "PKG_CONFIG_PATH=P/lib/pkgconfig (P/lib/<multiarch>/pkgconfig on Debian's "
            "default layout)" % (" ".join(p.stderr.split()) or "exit %d" % p.returncode))
    return p.stdout.strip()


def installed_library():
    """(version, includedir, libdir, manifestdir) of the libflashstock
    pkg-config finds."""
    version = pkg_config("--modversion")
    inc = os.path.realpath(pkg_config("--variable=includedir"))
    libdir = os.path.realpath(pkg_config("--variable=libdir"))
    manifestdir = os.path.realpath(pkg_config("--variable=manifestdir"))
    return version, inc, libdir, manifestdir


def ffi_from_pkgconfig():
    """For setup.py (cffi_modules): the module built against the installed
    libflashstock that pkg-config finds -- its header and its manifest's
    declarations, and its library found at run time by the extension's run
    path (no LD_LIBRARY_PATH)."""
    _, inc, libdir, manifestdir = installed_library()
    cdef = os.path.join(manifestdir, "flashstock.cdef")
    try:
        with open(cdef, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise PkgConfigError("pkg-config names manifestdir %s, but: %s (libflashstock is "
                             "installed with the bindings' manifest when built with "
                             "FLASH_BINDINGS=ON)" % (manifestdir, e))
    return make_ffi(text, include_dirs=[inc], library_dirs=[libdir], libraries=["flashstock"],
                    runtime_library_dirs=[libdir])


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: build_ffi.py CDEF OUT.c\n")
        return 2
    cdef, out = argv[1], argv[2]
    with open(cdef, encoding="utf-8") as f:
        text = f.read()
    try:
        ffi = make_ffi(text)
    except ValueError as e:
        sys.stderr.write("build_ffi.py: %s: %s\n" % (cdef, e))
        return 1
    ffi.emit_c_code(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
