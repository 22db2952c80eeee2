"""test_threads_fork.py -- the thread and fork rules of a handle are kept by
the binding: one FlashStock used from many threads works with one native
handle per thread (closed when its thread ends or the object closes), also
for batches of orders (each thread's own arrays), and multiprocessing works
with both the fork and the spawn start method, the child never seeing
FLASH_EFORK or FLASH_EWRONG_THREAD.  Controls made with
raw library calls show that the engine does refuse a handle passed to
another thread or inherited by a fork, so the successes are the binding's
doing."""
import multiprocessing
import os
import threading
import time

import pytest

import flashstock
from flashstock import Activity, ActivityFlag
from flashstock._native import ffi, lib

THREADS = 8
PER_THREAD = 40


def sale(segs, units, limit=1):
    name = segs.make()
    fs = flashstock.open(name)
    fs.activity_add(Activity(id=1, limit_per_user=limit, flags=ActivityFlag.CANCEL_RETURNS_QUOTA))
    fs.sku_add(1, 10, units, shards=4)
    return fs


def test_one_object_many_threads_one_handle_each_closed_at_thread_end(segs):
    fs = sale(segs, units=THREADS * PER_THREAD)
    slots = {}
    errors = []
    barrier = threading.Barrier(THREADS)

    def buyer(t):
        try:
            for i in range(PER_THREAD):
                fs.order(1, 10, 1 + t * PER_THREAD + i, request_id=1 + t * PER_THREAD + i)
            slots[t] = fs.slot()
            barrier.wait()  # every thread's handle is open at once here
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(repr(e))

    ths = [threading.Thread(target=buyer, args=(t,)) for t in range(THREADS)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert errors == []
    main_slot = fs.slot()
    assert len(set(slots.values()) | {main_slot}) == THREADS + 1, slots
    s = fs.sku_get(1, 10)
    assert s.available == 0 and s.sold == THREADS * PER_THREAD
    st = fs.stats()
    assert st.orders == THREADS * PER_THREAD
    # the threads ended: their handles are closed, only this thread's is left
    assert st.procs == 1, st.procs
    print("%d threads, %d orders, slots %s, procs after join %d"
          % (THREADS, st.orders, sorted(slots.values()), st.procs))
    fs.close()


def test_batches_from_many_threads_answer_each_thread_its_own_orders(segs):
    units = THREADS * PER_THREAD // 2
    fs = sale(segs, units=units)
    got = {}
    errors = []
    barrier = threading.Barrier(THREADS)

    def buyer(t):
        try:
            users = [1 + t * PER_THREAD + i for i in range(PER_THREAD)]
            barrier.wait()
            out = []
            for k in range(0, PER_THREAD, 8):   # 8 users: a batch of 1..8, one of the rest
                out += fs.order_many([(1, 10, u) for u in users[k:k + 1 + (k + t) % 8]])
                out += fs.order_many([(1, 10, u) for u in users[k + 1 + (k + t) % 8:k + 8]])
            got[t] = list(zip(users, out))
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(repr(e))

    ths = [threading.Thread(target=buyer, args=(t,)) for t in range(THREADS)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert errors == []
    placed = {}
    for t, pairs in got.items():
        assert len(pairs) == PER_THREAD
        for user, x in pairs:
            if isinstance(x, flashstock.OrderResult):
                placed[x.order_no] = user
            else:
                assert isinstance(x, flashstock.SoldOut), x
    # the stock sold once, each order the one its thread asked for
    assert len(placed) == units
    for no, user in placed.items():
        assert fs.order_get(no).user_id == user
    s = fs.sku_get(1, 10)
    assert s.available == 0 and fs.stats().orders == units
    fs.close()


def test_control_a_raw_handle_on_another_thread_is_wrong_thread(segs):
    name = segs.make()
    out = ffi.new("flash_t **")
    assert lib.flash_open(name.encode(), 0, out) == 0
    h = out[0]
    got = []
    st = ffi.new("struct flash_stats *")
    t = threading.Thread(target=lambda: got.append(lib.flash_stats_get(h, st)))
    t.start()
    t.join()
    assert got == [lib.FLASH_EWRONG_THREAD]
    assert lib.flash_stats_get(h, st) == 0
    assert lib.flash_close(h) == 0


def test_close_from_another_thread_while_threads_order(segs):
    fs = sale(segs, units=10**9, limit=64)
    ended = []
    started = threading.Barrier(5)

    def buyer(t):
        n = 0
        started.wait()
        try:
            while True:
                if n % 1000 == 0:  # the order table and the ring (no consumer) bound the writes
                    fs.cancel(fs.order(1, 10, 1 + t).order_no)
                fs.sku_get(1, 10)
                fs.quiet()
                n += 1
        except flashstock.Closed:
            ended.append(("closed", n))
        except Exception as e:  # noqa: BLE001
            ended.append(("other", repr(e)))

    ths = [threading.Thread(target=buyer, args=(t,)) for t in range(4)]
    for t in ths:
        t.start()
    started.wait()
    time.sleep(0.3)
    fs.close()
    for t in ths:
        t.join(30)
    assert sorted(k for k, _ in ended) == ["closed"] * 4, ended
    with flashstock.open(fs.name) as again:
        st = again.stats()
        assert st.procs == 1, st.procs  # every handle of the closed object is gone
        assert again.quiet().in_flight == 0


# ---------------------------------------------------------------- processes

def _child_orders(fs, first_user, n, q):
    """In a child process: n orders on the object it got (inherited by fork,
    or unpickled by spawn); reports (pid, slot, order numbers, errors)."""
    nos, errs = [], []
    for u in range(first_user, first_user + n):
        try:
            nos.append(fs.order(1, 10, u).order_no)
        except flashstock.FlashError as e:
            errs.append(e.name)
    q.put((os.getpid(), fs.slot(), nos, errs))


_inherited = None


def _pool_order(user):
    r = _inherited.order(1, 10, user)
    return os.getpid(), _inherited.slot(), r.order_no


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_children_order_with_their_own_handles(segs, method):
    fs = sale(segs, units=1000)
    parent_slot = fs.slot()
    fs.order(1, 10, 999)  # the parent's handle is open and used before the fork
    ctx = multiprocessing.get_context(method)
    q = ctx.Queue()
    # a thread of the parent keeps ordering while the children are made
    stop = threading.Event()
    bg = []

    def background():
        u = 5000
        while not stop.is_set() and len(bg) < 200:  # leaves the children their units
            bg.append(fs.order(1, 10, u).order_no)
            u += 1
            time.sleep(0.001)

    t = threading.Thread(target=background)
    t.start()
    kids = [ctx.Process(target=_child_orders, args=(fs, 1 + 100 * k, 20, q)) for k in range(4)]
    for k in kids:
        k.start()
    res = [q.get(timeout=60) for _ in kids]
    for k in kids:
        k.join(60)
        assert k.exitcode == 0
    stop.set()
    t.join()
    slots = set()
    for pid, slot, nos, errs in res:
        assert errs == [], (method, pid, errs)
        assert len(nos) == 20
        assert slot != parent_slot
        slots.add(slot)
    assert len(slots) >= 1
    assert fs.slot() == parent_slot and fs.order(1, 10, 998).order_no > 0
    s = fs.sku_get(1, 10)
    assert s.sold == 4 * 20 + 2 + len(bg)
    print("%s: 4 children, 80 orders, child slots %s, parent slot %d"
          % (method, sorted(slots), parent_slot))
    fs.close()


def test_fork_pool_workers_inherit_the_object_and_open_their_own(segs):
    global _inherited
    fs = sale(segs, units=100)
    _inherited = fs
    parent_slot = fs.slot()
    with multiprocessing.get_context("fork").Pool(3) as pool:
        got = pool.map(_pool_order, range(1, 61))
    _inherited = None
    assert len({no for _, _, no in got}) == 60
    assert all(slot != parent_slot for _, slot, _ in got)
    assert fs.sku_get(1, 10).sold == 60
    fs.close()


def test_control_a_raw_handle_in_a_forked_child_is_efork(segs):
    name = segs.make()
    out = ffi.new("flash_t **")
    assert lib.flash_open(name.encode(), 0, out) == 0
    h = out[0]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        st = ffi.new("struct flash_stats *")
        os.write(w, str(lib.flash_stats_get(h, st)).encode())
        os._exit(0)
    os.close(w)
    rc = int(os.read(r, 32))
    os.close(r)
    os.waitpid(pid, 0)
    assert rc == lib.FLASH_EFORK
    assert lib.flash_close(h) == 0
