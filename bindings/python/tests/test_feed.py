"""test_feed.py -- the order feed from Python (flashstock.Feed, feed_list,
feed_drop) on a real sale: a private `flashstock serve` on a segment whose
WAL is in a temp directory, buyers through the binding.  The feed hands out
every durable record with every field and its LSN, in LSN order; commits
hold across opens; rewind re-reads from the committed position; one open per
consumer name; the thread rule (one thread at a time) and the fork rule
(not in a child) are enforced with their own errors; a consumer left behind
past serve's retention bound is listed lost and its next() raises Lost
(never a silent skip).  And the example
consumer (example/consumer.py) ships every acknowledged order once, prints
nothing new when run again, shows a new order on the next run, and after a
kill -9 mid-stream and a restart misses nothing, repeating only records
after its last commit."""
import dataclasses
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import flashstock
from flashstock import Activity, FeedMissing, FeedSource, FeedState, RecordType

from conftest import Daemon

SRC = os.environ.get("FLASH_PY_SRC", os.path.join(os.path.dirname(__file__), ".."))
CONSUMER = os.path.join(SRC, "example", "consumer.py")
INT64_MAX = (1 << 63) - 1


@pytest.fixture
def sale(segs, tmpdir_path):
    """(fs, wal): activity 1 (limit 1 per user), sku 10 of 100000 units, and a
    private serve writing the WAL; stopped (SIGTERM, exit 0) at the end."""
    name = segs.make("feed")
    fs = flashstock.open(name)
    fs.activity_add(Activity(id=1))
    fs.sku_add(1, 10, 100000)
    wal = os.path.join(tmpdir_path, "wal")
    d = Daemon(name, wal)
    try:
        yield fs, wal
        fs.close()
        d.stop()
    finally:
        d.kill()


def buy(fs, users, request_ids=None):
    """One order per user; waits until the last is durable (the records of one
    handle become durable in order).  Returns {user: order_no}."""
    out = {}
    res = None
    for u in users:
        res = fs.order(activity_id=1, sku_id=10, user_id=u,
                       request_id=(request_ids or {}).get(u, 0))
        out[u] = res.order_no
    if res is not None:
        fs.durable_wait(res.lsn, 10000)
    return out


def take(feed, n):
    return [feed.next(wait_ms=10000) for _ in range(n)]


# ---------------------------------------------------------------- the API

def test_feed_hands_a_price_set_as_a_price_record_and_new_terms_as_an_activity_update(sale):
    """Versioned terms in the feed: the add and the sku carry their versions
    (order_no), a price set is a PRICE record (value: the price, order_no:
    the version), an update an ACTIVITY record with flags 1 and its version."""
    fs, wal = sale
    a, s = fs.activity_get(1), fs.sku_get(1, 10)
    v_price = fs.sku_price_set(1, 10, 2500)
    v_act = fs.activity_update(dataclasses.replace(a, limit_per_user=2))
    buy(fs, [1])                        # the same handle's records: durable once it is
    with flashstock.Feed(wal, "terms", from_start=True) as feed:
        recs = take(feed, 5)
    assert [r.type for r in recs] == [RecordType.ACTIVITY, RecordType.SKU, RecordType.PRICE,
                                      RecordType.ACTIVITY, RecordType.ORDER]
    added, sku, price, update = recs[:4]
    assert (added.order_no, added.flags & 1) == (a.version, 0)
    assert (sku.activity_id, sku.sku_id, sku.order_no) == (1, 10, s.version)
    assert (price.activity_id, price.sku_id, price.value, price.order_no) == (1, 10, 2500, v_price)
    assert price.ts_ns > 0
    assert (update.activity_id, update.order_no, update.flags & 1) == (1, v_act, 1)
    assert update.biz_day & 0xff == 2                   # limit_per_user | scope << 8 | flags << 16



def test_feed_hands_a_cart_as_one_record_per_line_with_its_line_last_and_the_carts_number(sale):
    """A cart's ORDER and its CANCEL are one record per line, in line order:
    the line's sku and qty, the cart's number and user; cart, line and last
    from the flags; the request id on line 0 only."""
    fs, wal = sale
    fs.sku_add(1, 11, 100)
    fs.sku_add(1, 12, 100)
    r = fs.cart_order(1, 900, [(12, 1), (10, 1), (11, 1)], request_id=9001)
    fs.cancel(r.order_no)
    plain = fs.order(activity_id=1, sku_id=10, user_id=901)
    fs.durable_wait(plain.lsn, 10000)
    with flashstock.Feed(wal, "carts", from_start=True) as feed:
        recs = [x for x in take(feed, 11) if x.type in (RecordType.ORDER, RecordType.CANCEL)]
    assert [(x.type, x.sku_id, x.qty, x.order_no, x.user_id, x.cart, x.line, x.last)
            for x in recs] == \
        [(t, sku, 1, r.order_no, 900, True, i, i == 2)
         for t in (RecordType.ORDER, RecordType.CANCEL)
         for i, sku in enumerate((12, 10, 11))] + \
        [(RecordType.ORDER, 10, 1, plain.order_no, 901, False, 0, True)]
    assert [x.request_id for x in recs[:3]] == [9001, 0, 0]


def test_feed_hands_every_durable_record_with_its_fields_in_lsn_order_and_commits_hold(sale):
    fs, wal = sale
    t0 = time.time_ns()
    orders = buy(fs, [1, 2, 3, 4, 5], {3: 3003})
    assert fs.cancel(orders[2]) == 1
    with flashstock.Feed(wal, "t1", from_start=True) as feed:
        recs = take(feed, 8)
        with pytest.raises(flashstock.Timeout):
            feed.next(0)
        assert [r.type for r in recs] == [RecordType.ACTIVITY, RecordType.SKU] + \
            [RecordType.ORDER] * 5 + [RecordType.CANCEL]
        lsns = [r.lsn for r in recs]
        assert lsns == list(range(lsns[0], lsns[0] + 8)) and lsns[0] >= 1
        for r in recs:
            assert r.source == FeedSource.WAL and r.missing == FeedMissing.NONE and r.gap == 0
            assert r.seq >= 1
        act, sku = recs[0], recs[1]
        assert (act.activity_id, act.value, act.ts_ns) == (1, 0, INT64_MAX)  # start_ns, end_ns
        assert (sku.activity_id, sku.sku_id, sku.value, sku.qty) == (1, 10, 100000, 1)
        for u, r in zip([1, 2, 3, 4, 5], recs[2:7]):
            assert (r.order_no, r.user_id, r.activity_id, r.sku_id, r.qty, r.limit_slot) == \
                (orders[u], u, 1, 10, 1, 1)
            assert r.request_id == (3003 if u == 3 else 0)
            assert t0 <= r.ts_ns <= time.time_ns() and r.biz_day > 0
        cancel = recs[7]
        assert (cancel.order_no, cancel.user_id, cancel.qty) == (orders[2], 2, 1)

        info = feed.info()
        assert (info.name, info.state, info.open, info.committed_lsn) == \
            ("t1", FeedState.OK, True, 0)
        assert info.durable_lsn >= lsns[-1]
        feed.commit(lsns[3])
        assert feed.info().committed_lsn == lsns[3]
        feed.commit(lsns[3])                                # equal: a no-op
        with pytest.raises(flashstock.InvalidArgument):
            feed.commit(lsns[-1] + 1)                       # above the last returned
        with pytest.raises(flashstock.InvalidArgument):
            feed.commit(lsns[2])                            # below the committed
        feed.rewind()
        assert feed.next(10000) == recs[4]                  # after the committed position
        with pytest.raises(flashstock.Busy):                # one open per name
            flashstock.Feed(wal, "t1")
        (listed,) = [i for i in flashstock.feed_list(wal) if i.name == "t1"]
        assert listed.open and listed.committed_lsn == lsns[3]
        assert listed.lag_records == listed.durable_lsn - lsns[3]
    assert feed.closed
    with pytest.raises(flashstock.Closed):
        feed.next(0)
    with pytest.raises(TypeError):
        pickle.dumps(feed)

    # a commit survives the close: the next open resumes after it, and the
    # iteration gives what is durable now
    with flashstock.Feed(wal, "t1", no_create=True) as feed:
        assert list(feed) == recs[4:]
        feed.commit(lsns[-1])
    (listed,) = flashstock.feed_list(wal)
    assert (listed.name, listed.open, listed.committed_lsn) == ("t1", False, lsns[-1])
    assert listed.commit_ns > 0 and listed.created_ns > 0

    with pytest.raises(flashstock.NotFound):
        flashstock.Feed(wal, "nobody", no_create=True)
    with pytest.raises(flashstock.InvalidArgument):
        flashstock.Feed(wal, ".hidden")
    with pytest.raises(flashstock.FlashError) as ei:   # the refill option reaches the library
        flashstock.Feed(wal, "refill", mysql_url="http://not-mysql", mysql_stream="wal")
    assert ei.value.name == "FLASH_EMYSQL_CONFIG"
    # a new consumer without from_start starts at the durable end
    with flashstock.Feed(wal, "late") as late:
        with pytest.raises(flashstock.Timeout):
            late.next(0)
        new = buy(fs, [6])
        r = late.next(10000)
        assert (r.type, r.order_no, r.user_id, r.lsn) == (RecordType.ORDER, new[6], 6,
                                                          lsns[-1] + 1)
    assert [i.name for i in flashstock.feed_list(wal)] == ["late", "t1"]   # "refill": none
    flashstock.feed_drop(wal, "late")
    assert [i.name for i in flashstock.feed_list(wal)] == ["t1"]
    with pytest.raises(flashstock.NotFound):
        flashstock.feed_drop(wal, "late")


def test_a_feed_is_used_by_one_thread_at_a_time_and_never_in_a_forked_child(sale):
    fs, wal = sale
    buy(fs, [99])                       # the catalog's records are durable before the open
    feed = flashstock.Feed(wal, "t2")
    got = []
    waiter = threading.Thread(target=lambda: got.append(feed.next(wait_ms=30000)))
    waiter.start()
    while not feed._busy.locked():      # until the waiter is inside flash_feed_next
        time.sleep(0.01)
    with pytest.raises(flashstock.FeedInUse) as ei:
        feed.next(0)
    assert isinstance(ei.value, flashstock.Busy) and "one thread at a time" in str(ei.value)
    with pytest.raises(flashstock.FeedInUse):
        feed.commit(1)
    order_no = buy(fs, [7])[7]          # wakes the waiter with this order
    waiter.join(30)
    assert [(r.type, r.order_no) for r in got] == [(RecordType.ORDER, order_no)]
    feed.commit(got[0].lsn)             # another thread than the one that read it: allowed
    assert feed.info().committed_lsn == got[0].lsn

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the child: the parent's feed is not usable here
        os.close(r)
        try:
            feed.next(0)
            what = "no error"
        except flashstock.FlashError as e:
            what = e.name
        try:
            flashstock.Feed(wal, "t2")  # the parent holds the name
            what += " open"
        except flashstock.FlashError as e:
            what += " " + e.name
        os.write(w, what.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        child = f.read()
    os.waitpid(pid, 0)
    assert child == "FLASH_EFORK FLASH_EBUSY"
    with pytest.raises(flashstock.Timeout):     # the parent's feed is untouched
        feed.next(0)
    feed.close()
    feed.close()


def test_a_consumer_past_the_retention_bound_is_lost_and_its_next_raises_lost(segs, tmpdir_path):
    name = segs.make("lost", max_users=65536, max_orders=65536)
    fs = flashstock.open(name)
    fs.activity_add(Activity(id=1))
    fs.sku_add(1, 10, 1000000)
    wal = os.path.join(tmpdir_path, "wal")
    d = Daemon(name, wal, "--wal-file-mb", "1", "--snapshot-wal-bytes", "65536",
               "--snapshot-every", "1", "--feed-keep-bytes", "1", snapshots=True)
    try:
        buy(fs, [1])
        flashstock.Feed(wal, "slow").close()            # registered, never commits
        first = os.path.join(wal, "wal-0000000000000001.log")
        u = 2
        deadline = time.time() + 60
        while os.path.exists(first):    # orders until retention passes the bound
            assert time.time() < deadline, "retention never removed the first WAL file"
            buy(fs, range(u, u + 2000))
            u += 2000
            time.sleep(0.2)
        (info,) = flashstock.feed_list(wal)
        assert (info.name, info.state) == ("slow", FeedState.LOST)
        with flashstock.Feed(wal, "slow") as feed:
            with pytest.raises(flashstock.Lost) as ei:
                feed.next(0)
            assert ei.value.name == "FLASH_ELOST"
            with pytest.raises(flashstock.Lost):       # the position stays: again
                feed.next(0)
        flashstock.feed_drop(wal, "slow")
        assert flashstock.feed_list(wal) == []
        print("lost after %d orders" % (u - 1))
        fs.close()
        d.stop()
    finally:
        d.kill()


# ---------------------------------------------------------------- the example consumer

LINE = re.compile(r"^(?:ship order (\d+): user (\d+), sku 1/10 x1|cancel order (\d+)) "
                  r"\(lsn (\d+)\)$")


def parse(text):
    """[(kind, order_no, lsn)] of the consumer's output; every line must parse."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, "unexpected line %r" % line
        if m.group(1):
            out.append(("ship", int(m.group(1)), int(m.group(4))))
        else:
            out.append(("cancel", int(m.group(3)), int(m.group(4))))
    return out


def run_consumer(wal):
    p = subprocess.run([sys.executable, CONSUMER, wal, "--idle-exit"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return parse(p.stdout)


def test_example_consumer_ships_each_order_once_and_its_commit_holds(sale):
    fs, wal = sale
    orders = buy(fs, range(1, 301))
    assert fs.cancel(orders[7]) == 1
    first = run_consumer(wal)
    shipped = sorted(n for kind, n, _ in first if kind == "ship")
    assert shipped == sorted(orders.values())
    assert [n for kind, n, _ in first if kind == "cancel"] == [orders[7]]
    assert run_consumer(wal) == []                      # its commits held
    new = buy(fs, [1001])[1001]
    again = run_consumer(wal)
    assert [(kind, n) for kind, n, _ in again] == [("ship", new)]
    (info,) = flashstock.feed_list(wal)
    assert (info.name, info.committed_lsn, info.lag_records) == \
        ("fulfilment", again[0][2], info.durable_lsn - again[0][2])


def test_example_consumer_killed_mid_stream_misses_nothing_and_repeats_only_after_its_commit(
        sale):
    fs, wal = sale
    before = buy(fs, range(1, 401))
    during = {}

    def paced_buyer():                  # orders keep coming while the consumer streams
        for u in range(401, 701):
            during.update(buy(fs, [u]))
            time.sleep(0.002)

    p = subprocess.Popen([sys.executable, CONSUMER, wal], stdout=subprocess.PIPE, text=True)
    buyer = threading.Thread(target=paced_buyer)
    try:
        lines = []
        while len(lines) < 450:         # past the first orders, inside the paced ones
            if len(lines) == 100:
                buyer.start()
            line = p.stdout.readline()
            assert line, "the consumer ended early"
            lines.append(line)
        p.send_signal(signal.SIGKILL)
        p.wait()
        lines.append(p.stdout.read())   # what it printed before it died
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        if buyer.is_alive():
            buyer.join()
    killed = parse("".join(lines))
    (info,) = flashstock.feed_list(wal)
    committed = info.committed_lsn
    assert not info.open
    after = buy(fs, range(701, 801))
    rest = run_consumer(wal)

    every = {**before, **during, **after}
    printed = [n for _, n, _ in killed + rest]
    assert set(printed) == set(every.values())          # nothing missed
    # the restart begins right after the last commit: what it repeats is
    # exactly the killed run's lines past that commit
    assert all(lsn > committed for _, _, lsn in rest)
    repeated = [x for x in killed if x in set(rest)]
    assert repeated == [x for x in killed if x[2] > committed]
    assert len(printed) == len(every) + len(repeated)   # no other duplicate
    print("killed after %d lines (committed lsn %d), restart printed %d, %d of them again"
          % (len(killed), committed, len(rest), len(repeated)))
    killed_once = [x for x in killed if x[2] <= committed]
    assert len(killed_once) == len({n for _, n, _ in killed_once})
