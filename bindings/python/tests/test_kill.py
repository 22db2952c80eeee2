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
the batch call that returned it placed -- is an order in the WAL.

Beside them, RESERVERS buyers killed and started the same way place
reservations and carts (kill_buyer.py ... reserve: single-sku and cart
reservations, plain carts, over skus 10, 11, 12) on a segment of their own, with a
daemon and WAL of its own: `flashstock reconcile` does not read the CONFIRM
and EXPIRE records yet ("frame of an unknown type"), so the reservations
stay out of the WAL it reconciles.  Their checks, once the daemon's expirer
has settled every deadline: no reservation is left RESERVED, every one is
ACTIVE, CANCELLED or EXPIRED; the units held are exactly the ACTIVE ones'
(nothing oversold, no unit lost) -- for every sku, available + the units
of the live (ACTIVE, RESERVED) lines = total; every cart is whole (its
number reads as its line 0, order_lines gives every line with the cart's
state, each later number reads as that line, and its lines are those its
buyer asked for) or absent (no number reads as a line of a cart not there); no user holds more than the limit; each
outcome a buyer noted is the order's state (confirmed: ACTIVE, cancelled:
CANCELLED, refused as expired: EXPIRED); and the WAL has one ORDER record per
reservation and exactly one CONFIRM or EXPIRE record for each ACTIVE or
EXPIRED one, a CANCEL for each CANCELLED one -- a cart's, one per line
(a plain cart ACTIVE has its ORDERs only)."""
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
from flashstock import Activity, ActivityFlag, OrderState

from conftest import Daemon, run_cli

BUYERS = 4
USERS = 3000
LIMIT = 2
UNITS = 400
RESTOCK = 40            # units added every RESTOCK_EVERY_S by the test
RESTOCK_EVERY_S = 0.5
RUN_S = 15.0            # killing and restarting buyers for this long, per durability
RESERVERS = 2           # buyers placing reservations, on a segment of their own
R_UNITS = 60            # and R_RESTOCK more with each restock: paid ones hold theirs for good
R_RESTOCK = 20
R_CART_SKUS = (10, 11, 12)  # the carts' skus (reservers only): R_UNITS each, R_RESTOCK more
HERE = os.path.dirname(os.path.abspath(__file__))

# `wal dump` names each field for what it holds in its record's type (a
# sku's units, a restock's delta, an order's qty and user): key=value words
LINE = re.compile(r"^(\d+) (\w+) slot=\d+ seq=\d+((?: \w+=-?\w+)*)$")
RLINE = LINE


@pytest.mark.parametrize("durability", [flashstock.Durability.ASYNC, flashstock.Durability.SYNC],
                         ids=["async", "sync"])
def test_buyers_killed_at_random_lose_no_acknowledged_order_and_oversell_nothing(
        segs, tmpdir_path, durability):
    name = segs.make("kill", max_requests=1 << 19, max_orders=1 << 20, max_procs=64,
                     durability=durability,
                     ring_records=4096)
    wal = os.path.join(tmpdir_path, "wal")
    rname = segs.make("killr", max_requests=1 << 12, max_orders=1 << 20, max_procs=64,
                      durability=durability, ring_records=4096)
    rwal = os.path.join(tmpdir_path, "rwal")
    with flashstock.open(name) as fs, flashstock.open(rname) as rfs:
        for f, units in ((fs, UNITS), (rfs, R_UNITS)):
            f.activity_add(Activity(id=1, limit_per_user=LIMIT, max_qty=2,
                                    flags=ActivityFlag.CANCEL_RETURNS_QUOTA))
            f.sku_add(1, 10, units, shards=4)
        for sku in R_CART_SKUS[1:]:       # the carts' other skus
            rfs.sku_add(1, sku, R_UNITS, shards=4)
        daemon = Daemon(name, wal, "--recover-ms", "200")
        rdaemon = Daemon(rname, rwal, "--recover-ms", "200")
        rnd = random.Random(os.getpid())
        procs = {}
        gens = [0] * (BUYERS + RESERVERS)
        kills = rkills = 0
        exits = []

        def start(b):
            gens[b] += 1
            acks = os.path.join(tmpdir_path, "acks-%d" % b)
            args = [name, str(b + 1), str(gens[b]), str(USERS), acks, str(rnd.randrange(1 << 30))]
            if b >= BUYERS:
                args[0] = rname
                args.append("reserve")
            procs[b] = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "kill_buyer.py"), *args],
                stderr=subprocess.PIPE)

        def reap(b):
            p = procs[b]
            rc = p.wait()
            err = p.stderr.read().decode()
            p.stderr.close()
            if rc != -signal.SIGKILL:
                exits.append((b, rc, err))

        try:
            for b in range(BUYERS + RESERVERS):
                start(b)
            t0 = time.time()
            next_restock = t0 + RESTOCK_EVERY_S
            restocked = 0
            while time.time() - t0 < RUN_S:
                time.sleep(rnd.uniform(0.05, 0.4))
                b = rnd.randrange(BUYERS + RESERVERS)
                procs[b].send_signal(signal.SIGKILL)
                reap(b)
                if b < BUYERS:
                    kills += 1
                else:
                    rkills += 1
                start(b)
                if time.time() >= next_restock:
                    fs.restock(1, 10, RESTOCK)
                    for sku in R_CART_SKUS:
                        rfs.restock(1, sku, R_RESTOCK)
                    restocked += RESTOCK
                    next_restock += RESTOCK_EVERY_S
            for b in range(BUYERS + RESERVERS):   # the last kill of each buyer
                procs[b].send_signal(signal.SIGKILL)
                reap(b)
                if b < BUYERS:
                    kills += 1
                else:
                    rkills += 1
            assert exits == [], "buyers that ended on their own: %r" % exits
            # the reservations: dead reservers' operations finished by
            # recovery, then every deadline (300 ms at most) passed and the
            # daemon's expirer settled it, every record durable
            deadline = time.time() + 30
            while True:
                rfs.recover()
                rorders = [rfs.order_get(n) for n in range(1, rfs.orders_max() + 1)]
                if (not any(o.state == OrderState.RESERVED for o in rorders)
                        and rfs.quiet().quiet):
                    break
                assert time.time() < deadline, "reservations left RESERVED: %d" % sum(
                    o.state == OrderState.RESERVED for o in rorders)
                time.sleep(0.1)
            rskus = {sku: rfs.sku_get(1, sku) for sku in R_CART_SKUS}
            rlines = cart_lines(rfs, rorders)
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
            daemon_ok = daemon.p.poll() is None and rdaemon.p.poll() is None
            for d in (daemon, rdaemon):
                if d.p.poll() is None:
                    d.stop()
                else:
                    d.kill()
        assert daemon_ok, "a daemon died during the run"

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

    check_reservations(tmpdir_path, rwal, rorders, rskus, rlines, rkills)


def cart_lines(fs, orders):
    """{order number: [its lines]} of every order of `orders` (order_get of
    1..orders_max), each cart read whole by order_lines; asserts that every
    cart is whole or absent: a cart's number reads as its line 0 with its
    lines, order_lines gives every line (the cart's number, state and user,
    lines 0..n-1 over distinct skus), each later line's number reads NONE
    with that line and lines, and no other number reads as a line of a cart
    (a line left of a cart that is not there)."""
    out = {}
    owner = {}                  # number of a later line -> (cart, line, lines)
    for o in orders:
        if o.state == OrderState.NONE:
            continue
        assert o.line == 0 and o.lines >= 1, o
        ls = fs.order_lines(o.order_no) if o.lines > 1 else [o]
        assert [x.line for x in ls] == list(range(o.lines)), (o, ls)
        assert all((x.order_no, x.state, x.user_id, x.lines, x.limit_slot) ==
                   (o.order_no, o.state, o.user_id, o.lines, o.limit_slot) for x in ls), ls
        assert len({x.sku_id for x in ls}) == len(ls), ls
        out[o.order_no] = ls
        for i in range(1, o.lines):
            owner[o.order_no + i] = (o.order_no, i, o.lines)
    for o in orders:
        if o.state != OrderState.NONE:
            continue
        n = o.order_no
        if n in owner:
            assert (o.line, o.lines) == owner[n][1:], (n, o, owner[n])
        else:
            assert (o.line, o.lines) == (0, 0), "number %d: a line of no cart: %r" % (n, o)
    return out


def check_reservations(tmpdir_path, rwal, orders, skus, lines, rkills):
    """The reservation segment after the run (see the module's doc)."""
    by_state = collections.Counter(o.state for o in orders)
    placed = {o.order_no: o for o in orders if o.state != OrderState.NONE}
    assert by_state[OrderState.RESERVED] == 0
    assert set(by_state) <= {OrderState.NONE, OrderState.ACTIVE, OrderState.CANCELLED,
                             OrderState.EXPIRED}, by_state
    active = [o for o in placed.values() if o.state == OrderState.ACTIVE]
    # every sku: available + the units of its live lines (ACTIVE, RESERVED:
    # none is left RESERVED) = total -- no unit lost, none both held and
    # given back, none sold twice
    live = collections.Counter()
    for no, ls in lines.items():
        for x in ls:
            if x.state in (OrderState.ACTIVE, OrderState.RESERVED):
                live[x.sku_id] += x.qty
    for sku, info in skus.items():
        assert info.available + live[sku] == info.total, (info, live[sku])
    carts = {no: ls for no, ls in lines.items() if len(ls) > 1}
    per_user = collections.Counter(o.user_id for o in active)
    assert max(per_user.values(), default=0) <= LIMIT
    assert all(o.pay_by_ns == 0 for o in active)
    assert all(o.pay_by_ns > 0 for o in placed.values() if o.state == OrderState.EXPIRED)

    # what the reservers noted, each right after its call returned
    notes = collections.defaultdict(set)
    asked = {}                      # cart number -> [(sku, qty)] as the buyer asked
    for b in range(BUYERS, BUYERS + RESERVERS):
        with open(os.path.join(tmpdir_path, "acks-%d" % b)) as f:
            for w in f.read().split():
                if w[0] == "L":     # a cart's lines as asked: L<no>=<sku>x<qty>,...
                    no, ls = w[1:].split("=")
                    asked[int(no)] = [tuple(int(v) for v in x.split("x")) for x in ls.split(",")]
                else:
                    notes[w[0]].add(int(w[1:]))
    want = {"c": OrderState.ACTIVE, "k": OrderState.CANCELLED, "x": OrderState.EXPIRED}
    for kind, state in want.items():
        wrong = [n for n in notes[kind] if n not in placed or placed[n].state != state]
        assert wrong == [], "noted %s, not %s: %r" % (kind, state.name, wrong[:10])
    assert notes["r"] <= set(placed), sorted(notes["r"] - set(placed))[:10]
    # an ACTIVE order the reservers did not note confirmed: its confirm was
    # cut short by a kill, at most one call per kill
    assert notes["t"] <= set(placed), sorted(notes["t"] - set(placed))[:10]
    # every cart a buyer noted holds the lines it asked for, in its order
    wrong = [(n, want, [(x.sku_id, x.qty) for x in lines.get(n, [])]) for n, want in asked.items()
             if [(x.sku_id, x.qty) for x in lines.get(n, [])] != want]
    assert wrong == [], "carts whose lines are not those asked: %r" % wrong[:10]
    assert len(asked) > 10, "too few carts noted with their lines"
    # an ACTIVE order the reservers did not note confirmed (nor placed as a
    # plain cart): its confirm was cut short by a kill, at most one call per kill
    assert len({o.order_no for o in active} - notes["c"] - notes["t"]) <= rkills

    # the WAL: one ORDER per reservation, one CONFIRM per ACTIVE one, one
    # EXPIRE per EXPIRED one, one CANCEL per CANCELLED one
    recs = collections.defaultdict(list)
    for line in run_cli("wal", "dump", "--wal", rwal).stdout.splitlines():
        m = RLINE.match(line)
        assert m, "unparsed WAL line: %r" % line
        _, kind, words = m.groups()
        kv = dict(w.split("=", 1) for w in words.split())
        if kind in ("order", "cancel", "confirm", "expire"):
            recs[int(kv.get("order", kv.get("order_no", 0)))].append(kind)
    # a cart's: one of each per line (a plain cart's ACTIVE: no confirm)
    ends = {OrderState.ACTIVE: (["order", "confirm"],), OrderState.EXPIRED: (["order", "expire"],),
            OrderState.CANCELLED: (["order", "cancel"],)}
    cart_ends = {OrderState.ACTIVE: (["order"], ["order", "confirm"]),
                 OrderState.EXPIRED: (["order", "expire"],),
                 OrderState.CANCELLED: (["order", "cancel"],)}
    wrong = [(n, o.state.name, recs.get(n)) for n, o in placed.items()
             if recs.get(n) not in [[k for k in kinds for _ in range(o.lines)]
                                    for kinds in (cart_ends if n in carts
                                                  else ends)[o.state]]]
    assert wrong == [], "records of reservations: %r" % wrong[:10]
    assert set(recs) == set(placed), sorted(set(recs) ^ set(placed))[:10]
    print("reservations: %d placed, %d paid, %d cancelled, %d expired (%d noted reserved, %d paid, "
          "%d cancelled, %d refused as expired) after %d kills of reservers; %d carts of 2..3 "
          "lines (%d noted plain), each whole; held %s units of %s"
          % (len(placed), by_state[OrderState.ACTIVE], by_state[OrderState.CANCELLED],
             by_state[OrderState.EXPIRED], len(notes["r"]), len(notes["c"]), len(notes["k"]),
             len(notes["x"]), rkills, len(carts), len(notes["t"]), dict(live),
             {sku: i.total for sku, i in skus.items()}))
    assert len(carts) > 10 and len(notes["t"]) > 10, "too few carts to prove anything"
    assert any(placed[n].state == OrderState.EXPIRED for n in carts), "no cart expired"
    assert len(notes["c"]) > 10 and len(notes["k"]) > 10 and len(notes["x"]) > 0, \
        "too few outcomes of each kind to prove anything"
    assert by_state[OrderState.EXPIRED] > len(notes["x"]), "the daemon expired none"
