#!/usr/bin/python3
"""bench_orders.py -- the cost of one order from Python: flashstock through
this binding, and the same order chain through redis-py running
bench/seckill.lua, one thread, one hot sku, in the same run.

usage: bench_orders.py [--orders N] [--batch K] [--redis-socket PATH]
                       [--redis-orders M] [--lua FILE]

flashstock: the program creates its own private segment (/fs-pybench-PID,
destroyed at the end) sized for N orders, with one activity (limit 1 per
user, token required) and one sku of N + W units, so nothing refuses; its
ring holds every record, so no consumer is needed.  Tokens are issued before
the timed part, and W = max(N/5, 1000) orders placed untimed first touch
the tables' pages; the timed part is N calls of FlashStock.order() for users
1..N, each with its token and a request id: token redeem -> window ->
per-user limit -> CAS deduct -> order record.  With --batch K (K > 1) the
timed part places the same orders K at a time with FlashStock.order_many(),
the requests' tuples built in the timed part as a caller builds them (the
last batch may be smaller); the line then says engine=flashstock-batchK.

redis-lua (with --redis-socket, a redis-server the caller started): the
chain of bench/seckill.lua (GETDEL token, SADD buyer, conditional DECRBY,
RPUSH order), loaded with SCRIPT LOAD and called by EVALSHA with the keys
and arguments bench/eng_redis.c uses; tokens SET before the timed part.
The database is flushed first (give it a private server).

Prints one line per engine:
    bench binding=python engine=flashstock orders=N ns_per_order=X
    (--batch K: bench binding=python engine=flashstock-batchK orders=N batch=K ns_per_order=X)
    bench binding=python engine=redis-lua orders=M ns_per_order=X
and exits 1 if any order of the timed part was refused.
"""
import argparse
import os
import sys
import time

import flashstock
from flashstock import Activity, ActivityFlag, OrderResult

ACTIVITY, SKU = 1, 10
HERE = os.path.dirname(os.path.abspath(__file__))


def pow2_at_least(n):
    p = 16
    while p < n:
        p *= 2
    return p


def bench_flashstock(n, batch=1):
    name = "/fs-pybench-%d" % os.getpid()
    w = max(n // 5, 1000)   # untimed warm-up orders: the first touch of the tables' pages
    total = w + n
    flashstock.seg_create(name, max_activities=1, max_skus=1, max_shards=1, max_users=total,
                          max_tokens=total, max_orders=total + 128, max_requests=total, max_locks=1,
                          max_procs=4, ring_records=pow2_at_least(total + 16))
    try:
        with flashstock.open(name) as fs:
            fs.activity_add(Activity(id=ACTIVITY, limit_per_user=1,
                                     flags=ActivityFlag.TOKEN_REQUIRED))
            fs.sku_add(ACTIVITY, SKU, total)
            tokens = [fs.token_issue(ACTIVITY, SKU, u, 600000) for u in range(1, total + 1)]
            order = fs.order
            for u in range(1, w + 1):
                order(ACTIVITY, SKU, u, 1, tokens[u - 1], u)
            if batch == 1:
                t0 = time.perf_counter_ns()
                for u in range(w + 1, total + 1):
                    order(ACTIVITY, SKU, u, 1, tokens[u - 1], u)
                dt = time.perf_counter_ns() - t0
            else:
                dt = timed_batches(fs, w + 1, total + 1, batch, tokens)
            s = fs.sku_get(ACTIVITY, SKU)
            if s.available != 0 or fs.stats().orders != total:
                raise SystemExit("bench: flashstock sold %d of %d" % (s.sold, n))
    finally:
        flashstock.seg_destroy(name)
    return dt / n


def timed_batches(fs, first, end, k, tokens):
    """Users first..end-1 ordered k at a time with order_many; the time it
    took (ns).  A refusal ends the program (exit 1)."""
    order_many = fs.order_many
    placed = OrderResult
    refused = 0
    t0 = time.perf_counter_ns()
    for lo in range(first, end, k):
        got = order_many([(ACTIVITY, SKU, u, 1, tokens[u - 1], u)
                          for u in range(lo, min(lo + k, end))])
        for x in got:
            if x.__class__ is not placed:
                refused += 1
    dt = time.perf_counter_ns() - t0
    if refused:
        raise SystemExit("bench: flashstock refused %d orders of the timed batches" % refused)
    return dt


def bench_redis(sock, n, lua_path):
    import redis
    r = redis.Redis(unix_socket_path=sock)
    r.flushdb()
    with open(lua_path, "rb") as f:
        sha = r.script_load(f.read())
    r.set("stock:%d" % SKU, n)
    tokens = [(1 << 40) | u for u in range(1, n + 1)]
    p = r.pipeline(transaction=False)
    for u, t in zip(range(1, n + 1), tokens):
        p.set("tok:%d" % t, "%d:%d" % (u, SKU))
        if u % 1000 == 0:
            p.execute()
    p.execute()
    evalsha = r.evalsha
    buyers, stock, orders = "buyers:%d" % ACTIVITY, "stock:%d" % SKU, "orders:%d" % ACTIVITY
    refused = 0
    t0 = time.perf_counter_ns()
    for u, t in zip(range(1, n + 1), tokens):
        if evalsha(sha, 4, "tok:%d" % t, buyers, stock, orders, "%d:%d" % (u, SKU), u, 1,
                   SKU) <= 0:
            refused += 1
    dt = time.perf_counter_ns() - t0
    if refused or int(r.get(stock)) != 0 or r.llen(orders) != n:
        raise SystemExit("bench: redis-lua refused %d of %d orders" % (refused, n))
    r.close()
    return dt / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orders", type=int, default=200000, help="flashstock orders (default 200000)")
    ap.add_argument("--batch", type=int, default=1,
                    help="flashstock orders per order_many call (default 1: one order() each)")
    ap.add_argument("--redis-socket", help="unix socket of a private redis-server")
    ap.add_argument("--redis-orders", type=int, default=20000,
                    help="redis-lua orders (default 20000)")
    ap.add_argument("--lua", default=os.path.join(HERE, "..", "..", "..", "bench", "seckill.lua"),
                    help="the order script (default: the repository's bench/seckill.lua)")
    a = ap.parse_args(argv)
    if a.batch < 1:
        ap.error("--batch must be 1 or more")
    ns = bench_flashstock(a.orders, a.batch)
    if a.batch == 1:
        print("bench binding=python engine=flashstock orders=%d ns_per_order=%.0f"
              % (a.orders, ns), flush=True)
    else:
        print("bench binding=python engine=flashstock-batch%d orders=%d batch=%d ns_per_order=%.0f"
              % (a.batch, a.orders, a.batch, ns), flush=True)
    if a.redis_socket:
        ns = bench_redis(a.redis_socket, a.redis_orders, a.lua)
        print("bench binding=python engine=redis-lua orders=%d ns_per_order=%.0f"
              % (a.redis_orders, ns), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
