"""test_readme.py -- the README's "From Python" snippet is the tested
example: the code block of the "From Python" section of bindings/python/README.md,
of the project's README.md and of its docs/python.md equals the marked region
of example/quickstart.py, and quickstart.py run on a fresh segment places an
order, answers its retry with the same order number, refuses a buyer after
the last unit, and exits 2 on a destroyed segment.  Likewise the feed
consumer: the "## From Python" section of the project's docs/feed.md and the
binding README's "## The order feed" show the marked region of
example/consumer.py (which python_feed runs) unchanged; and the binding
README's "## Observation" snippet, its batch example (order_many), its
"## Reservations", its "## Versioned terms" and its "## Carts" examples run
and print what they say."""
import os
import re
import subprocess
import sys

import flashstock
from flashstock import Activity, ActivityFlag

SRC = os.environ.get("FLASH_PY_SRC", os.path.join(os.path.dirname(__file__), ".."))
QUICKSTART = os.path.join(SRC, "example", "quickstart.py")
CONSUMER = os.path.join(SRC, "example", "consumer.py")
TOP_README = os.path.join(SRC, "..", "..", "README.md")
TOP_DOCS = os.path.join(SRC, "..", "..", "docs")


def marked_region(path=QUICKSTART):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^# README begin\n(.*?)^# README end$", text, re.M | re.S)
    assert m, "no README markers in %s" % path
    return m.group(1)


def block_under(md_path, *headings):
    """The first ```python block under the nested headings (each one's text up
    to the next heading of its level or above), or None."""
    with open(md_path) as f:
        text = f.read()
    for h in headings:
        level = len(h) - len(h.lstrip("#"))
        m = re.search(r"^%s\n(.*?)(?=^#{1,%d} |\Z)" % (re.escape(h), level), text, re.M | re.S)
        if not m:
            return None
        text = m.group(1)
    c = re.search(r"^```python\n(.*?)^```$", text, re.M | re.S)
    assert c, "no python code block under %s in %s" % (headings, md_path)
    return c.group(1)


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
    # the binding's own README, the project's README and docs/python.md show it unchanged
    assert section_code(os.path.join(SRC, "README.md")) == want
    assert section_code(TOP_README) == want
    assert block_under(os.path.join(TOP_DOCS, "python.md"), "# From Python") == want


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


def test_feed_readme_snippets_are_the_marked_region_of_the_tested_consumer():
    want = marked_region(CONSUMER)
    assert block_under(os.path.join(TOP_DOCS, "feed.md"), "# Consuming orders", "## From Python") == want
    assert block_under(os.path.join(SRC, "README.md"), "## The order feed") == want


def test_obs_readme_snippet_runs(segs):
    code = block_under(os.path.join(SRC, "README.md"), "## Observation")
    assert code and '"/sale1"' in code
    name = segs.make("obsdoc")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 1)
        fs.order(activity_id=1, sku_id=10, user_id=1)
        try:
            fs.order(activity_id=1, sku_id=10, user_id=2)
        except flashstock.SoldOut:
            pass
    p = subprocess.run([sys.executable, "-c", "import flashstock\n" +
                        code.replace('"/sale1"', repr(name))],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"1 sold out; [1-9][0-9]* ns per order\n", p.stdout), p.stdout


def test_batch_readme_example_runs(segs):
    with open(os.path.join(SRC, "README.md")) as f:
        blocks = re.findall(r"^```python\n(.*?)^```$", f.read(), re.M | re.S)
    code = [b for b in blocks if "order_many" in b]
    assert len(code) == 1 and '"/sale1"' in code[0]
    name = segs.make("batchdoc")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 5)
    p = subprocess.run([sys.executable, "-c", "import flashstock\n" +
                        code[0].replace('"/sale1"', repr(name))],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = re.fullmatch(r"41 FLASH_OK order (\d+)\n42 FLASH_OK order (\d+)\n"
                     r"42 FLASH_EDUPLICATE order (\d+)\n", p.stdout)
    assert m and m.group(2) == m.group(3) != m.group(1), p.stdout
    with flashstock.open(name) as fs:
        assert fs.sku_get(1, 10).available == 3


def test_reservations_readme_example_runs(segs):
    code = block_under(os.path.join(SRC, "README.md"), "## Reservations")
    assert code and '"/sale1"' in code
    name = segs.make("resvdoc")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 5)
    p = subprocess.run([sys.executable, "-c", "import time\nimport flashstock\n" +
                        code.replace('"/sale1"', repr(name))],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "RESERVED\nACTIVE\nFLASH_EEXPIRED EXPIRED\n1 expired\n", p.stdout
    with flashstock.open(name) as fs:
        assert fs.sku_get(1, 10).available == 4       # the paid one's unit only
        s = fs.stats()
        assert (s.confirms, s.expiries) == (1, 2)


def test_versioned_terms_readme_example_runs(segs):
    code = block_under(os.path.join(SRC, "README.md"), "## Versioned terms")
    assert code and '"/sale1"' in code
    name = segs.make("termsdoc")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 5)
        fs.sku_price_set(1, 10, 1000)
    p = subprocess.run([sys.executable, "-c", "import flashstock\n" +
                        code.replace('"/sale1"', repr(name))],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "price 1000 limit 1\nFLASH_ESTALE new price 1500\navailable 3\n", p.stdout
    with flashstock.open(name) as fs:
        assert fs.stats().orders == 2                 # the stale order took nothing
        assert fs.sku_get(1, 10).price == 1500


def test_carts_readme_example_runs(segs):
    code = block_under(os.path.join(SRC, "README.md"), "## Carts")
    assert code and '"/sale1"' in code
    name = segs.make("cartdoc")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1, max_qty=3))
        fs.sku_add(1, 10, 5)
        fs.sku_add(1, 11, 2)
    p = subprocess.run([sys.executable, "-c", "import flashstock\n" +
                        code.replace('"/sale1"', repr(name))],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ("[(10, 1, 'ACTIVE'), (11, 2, 'ACTIVE')]\n"
                        "FLASH_ESOLD_OUT line 1 short [1]\n3 units back\n"), p.stdout
    with flashstock.open(name) as fs:
        assert [fs.sku_get(1, s).available for s in (10, 11)] == [5, 2]
