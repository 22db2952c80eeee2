"""setup.py -- the pip build of the flashstock package (pyproject.toml has
the metadata): the extension flashstock._native compiled by cffi against
the installed libflashstock that pkg-config finds (build_ffi.py), its
version that library's.  Offline, on Debian 12:

    python3 -m venv --system-site-packages v
    PKG_CONFIG_PATH=P/lib/pkgconfig v/bin/pip install --no-build-isolation --no-index bindings/python

(README.md, "Installing with pip", says why each option is there.)
"""
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import build_ffi  # noqa: E402 -- from this directory, whatever the working directory
except ModuleNotFoundError as e:
    if e.name != "cffi":
        raise
    sys.exit("flashstock: the build needs cffi, which %s cannot import. Offline on Debian, "
             "make the venv with --system-site-packages (it then sees python3-cffi); with "
             "network access, pip install without --no-build-isolation fetches it."
             % sys.executable)

try:
    version, _, _, _ = build_ffi.installed_library()
except build_ffi.PkgConfigError as e:
    sys.exit("flashstock: %s" % e)

setup(version=version, cffi_modules=["build_ffi.py:ffi_from_pkgconfig"])
