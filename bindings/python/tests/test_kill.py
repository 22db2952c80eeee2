"""test_kill.py -- Python buyer processes (kill_buyer.py) killed with SIGKILL
at random moments and started again, on one hot sku whose stock is far
below demand (per-user limit 2, request ids, retries, cancels, restocks by
the test; half the buyers' turns a single order, half a batch of 2..16
placed by one order_many call), served by a private `flashstock serve` writing a WAL, once in
async and once in sync durability (where an order is acknowledged only
once durable, so a kill often lands inside the call's wait).  Then,
from the records: `flashstock reconcile` of segment and WAL exits 0; in the
WAL no user holds more than the limit in active orders, the stock never
went below zero at any point of its history (nothing oversold); and every
order number a buyer wrote down as acknowledged -- by a single order or by
the batch call that returned it placed -- is an order in the WAL."""
import collections
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

import flashstock
from flashstock import Activity, ActivityFlag

from conftest import Daemon, run_cli

BUYERS = 4
USERS = 3000
LIMIT = 2
UNITS = 400
RESTOCK = 40            # units added every RESTOCK_EVERY_S by the test
RESTOCK_EVERY_S = 0.5
RUN_S = 15.0            # killing and restarting buyers for this long, per durability
HERE = os.path.dirname(os.path.abspath(__file__))

# `wal dump` names each field for what it holds in its record's type (a
# sku's units, a restock's delta, an order's qty and user): key=value words
LINE = re.compile(r"^(\d+) (\w+) slot=\d+ seq=\d+((?: \w+=-?\w+)*)$")


@pytest.mark.parametrize("durability", [flashstock.Durability.ASYNC, flashstock.Durability.SYNC],
                         ids=["async", "sync"])
def test_buyers_killed_at_random_lose_no_acknowledged_order_and_oversell_nothing(
        segs, tmpdir_path, durability):
    name = segs.make("kill", max_requests=1 << 19, max_orders=1 << 20, max_procs=64,
                     durability=durability,
                     ring_records=4096)
    wal = os.path.join(tmpdir_path, "wal")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1, limit_per_user=LIMIT,
                                 flags=ActivityFlag.CANCEL_RETURNS_QUOTA))
        fs.sku_add(1, 10, UNITS, shards=4)
        daemon = Daemon(name, wal, "--recover-ms", "200")
        rnd = random.Random(os.getpid())
        procs = {}
        gens = [0] * BUYERS
        kills = 0
        exits = []

        def start(b):
            gens[b] += 1
            acks = os.path.join(tmpdir_path, "acks-%d" % b)
            procs[b] = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "kill_buyer.py"), name, str(b + 1),
                 str(gens[b]), str(USERS), acks, str(rnd.randrange(1 << 30))],
                stderr=subprocess.PIPE)

        def reap(b):
            p = procs[b]
            rc = p.wait()
            err = p.stderr.read().decode()
            p.stderr.close()
            if rc != -signal.SIGKILL:
                exits.append((b, rc, err))

        try:
            for b in range(BUYERS):
                start(b)
            t0 = time.time()
            next_restock = t0 + RESTOCK_EVERY_S
            restocked = 0
            while time.time() - t0 < RUN_S:
                time.sleep(rnd.uniform(0.05, 0.4))
                b = rnd.randrange(BUYERS)
                procs[b].send_signal(signal.SIGKILL)
                reap(b)
                kills += 1
                start(b)
                if time.time() >= next_restock:
                    fs.restock(1, 10, RESTOCK)
                    restocked += RESTOCK
                    next_restock += RESTOCK_EVERY_S
            for b in range(BUYERS):   # the last kill of each buyer
                procs[b].send_signal(signal.SIGKILL)
                reap(b)
                kills += 1
            assert exits == [], "buyers that ended on their own: %r" % exits
            # dead buyers' operations in flight: finished by recovery (also
            # the daemon's); then wait until every record is durable
            fs.recover()
            deadline = time.time() + 30
            while not fs.quiet().quiet:
                assert time.time() < deadline, fs.quiet()
                fs.recover()
                time.sleep(0.05)
            sku = fs.sku_get(1, 10)
            st = fs.stats()
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()
            daemon_ok = daemon.p.poll() is None
            if daemon_ok:
                daemon.stop()
            else:
                daemon.kill()
        assert daemon_ok, "the daemon died during the run"

    # 1. segment and WAL agree (available + sold = total, sold = active orders)
    rec = run_cli("reconcile", "--name", name, "--wal", wal, check=False)
    print(rec.stdout.strip())
    assert rec.returncode == 0, rec.stdout + rec.stderr

    # 2. from the WAL: orders, cancels, stock at every step, users' active orders
    dump = run_cli("wal", "dump", "--wal", wal).stdout
    active = {}                     # order_no -> user
    wal_orders = set()
    total = available = 0
    lowest = None
    cancels = 0
    for line in dump.splitlines():
        m = LINE.match(line)
        assert m, "unparsed WAL line: %r" % line
        _, kind, words = m.groups()
        kv = dict(w.split("=", 1) for w in words.split())
        qty, order, user = int(kv.get("qty", 0)), int(kv.get("order", 0)), kv.get("user", "0")
        value = int(kv.get("units", kv.get("delta", 0)))   # a sku's units loaded, a restock's delta
        if kind == "sku":
            total += value
            available += value
        elif kind == "restock":
            total += value
            available += value
        elif kind == "order":
            assert order not in wal_orders, "order %d twice in the WAL" % order
            wal_orders.add(order)
            active[order] = int(user)
            available -= qty
        elif kind == "cancel":
            assert order in active, "cancel of order %d, not active in the WAL" % order
            del active[order]
            available += qty
            cancels += 1
        lowest = available if lowest is None else min(lowest, available)
    sold = total - available
    per_user = collections.Counter(active.values())
    worst = max(per_user.values()) if per_user else 0
    acked = set()
    batch_acked = set()             # "+N": placed by a batch
    for b in range(BUYERS):
        with open(os.path.join(tmpdir_path, "acks-%d" % b)) as f:
            notes = f.read().split()
        acked.update(int(x) for x in notes if int(x) > 0)
        batch_acked.update(int(x) for x in notes if x.startswith("+"))
    missing = sorted(acked - wal_orders)
    print("%s: kills %d; WAL: %d orders, %d cancels, total %d, sold %d, lowest available %d; "
          "%d users hold orders, at most %d each (limit %d); %d acknowledged by buyers "
          "(%d by batches), %d of them missing from the WAL; segment: total %d available %d, "
          "recoveries %d (operations rolled back %d, forward %d); %d orders placed but never "
          "acknowledged (killed between its commit point and the buyer's note); tables: %d of %d "
          "request ids, %d of %d order numbers"
          % (durability.name.lower(), kills, len(wal_orders), cancels, total, sold, lowest, len(per_user), worst, LIMIT,
             len(acked), len(batch_acked), len(missing), sku.total, sku.available, st.recoveries,
             st.rolled_back, st.rolled_forward, len(wal_orders - acked), st.requests,
             st.requests_cap, st.orders_used, st.orders_cap))
    assert kills >= 2 * BUYERS
    assert len(acked) > UNITS // 2, "too few orders were acknowledged to prove anything"
    assert len(batch_acked) > UNITS // 4, "too few orders were acknowledged by batches"
    assert len(acked - batch_acked) > UNITS // 4, "too few single orders were acknowledged"
    assert lowest >= 0, "the WAL's history oversold: available reached %d" % lowest
    assert 0 <= sold <= total
    assert (sku.total, sku.available) == (total, available)
    assert total == UNITS + restocked
    assert worst <= LIMIT, [u for u, n in per_user.items() if n > LIMIT][:10]
    assert missing == [], "acknowledged orders missing from the WAL: %r" % missing[:10]
