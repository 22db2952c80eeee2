"""test_readme.py -- the README's "From Python" snippet is the tested
example: the code block of the "From Python" section of bindings/python/README.md
and of the project's README.md equals the marked region of example/quickstart.py,
and quickstart.py run on a fresh segment places an order, answers its
retry with the same order number, refuses a buyer after the last unit, and
exits 2 on a destroyed segment."""
import os
import re
import subprocess
import sys

import flashstock
from flashstock import Activity, ActivityFlag

SRC = os.environ.get("FLASH_PY_SRC", os.path.join(os.path.dirname(__file__), ".."))
QUICKSTART = os.path.join(SRC, "example", "quickstart.py")


def marked_region():
    with open(QUICKSTART) as f:
        text = f.read()
    m = re.search(r"^# README begin\n(.*?)^# README end$", text, re.M | re.S)
    assert m, "no README markers in example/quickstart.py"
    return m.group(1)


def section_code(md_path):
    """The first ```python block of the "## From Python" section, or None."""
    with open(md_path) as f:
        text = f.read()
    m = re.search(r"^## From Python\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        return None
    c = re.search(r"^```python\n(.*?)^```$", m.group(1), re.M | re.S)
    assert c, "no python code block in the From Python section of %s" % md_path
    return c.group(1)


def test_readme_snippet_is_the_marked_region_of_the_tested_example():
    want = marked_region()
    # the binding's own README and the project's README show it unchanged
    assert section_code(os.path.join(SRC, "README.md")) == want
    assert section_code(os.path.join(SRC, "..", "..", "README.md")) == want


def run(name, user, rid):
    p = subprocess.run([sys.executable, QUICKSTART, name, str(user), str(rid)],
                       capture_output=True, text=True)
    return p.returncode, p.stdout.strip()


def test_quickstart_orders_retries_and_sells_out(segs):
    name = segs.make("quick")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1, flags=ActivityFlag.TOKEN_REQUIRED))
        fs.sku_add(1, 10, 1)
    rc, out = run(name, 42, 4201)
    assert rc == 0 and re.fullmatch(r"FLASH_OK order [1-9][0-9]*", out), out
    first = out.split()[-1]
    assert run(name, 42, 4201) == (1, "FLASH_EDUPLICATE order " + first)
    assert run(name, 43, 4301) == (1, "FLASH_ESOLD_OUT order 0")
    flashstock.seg_destroy(name)
    rc, out = run(name, 44, 4401)
    assert rc == 2
