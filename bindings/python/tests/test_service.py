"""test_service.py -- the example service (example/service.py) on a fresh
segment served by a private daemon, driven by 12 concurrent HTTP clients
ordering three times the stock: exactly the stock is sold, no user holds
more than the limit, GET /stock agrees with the orders, a retried request
id answers its first order, and `flashstock reconcile` of segment and WAL
exits 0 once the service and the daemon are stopped."""
import collections
import http.client
import json
import os
import subprocess
import sys
import threading
import time

import flashstock
from flashstock import Activity

from conftest import Daemon, run_cli

CLIENTS = 12
STOCK = 60
USERS = 90          # each user tries twice: 180 tries for 60 units
LIMIT = 1
SERVICE = os.path.join(os.environ.get("FLASH_PY_SRC", os.path.dirname(__file__) + "/.."),
                       "example", "service.py")


def start_service(name):
    p = subprocess.Popen([sys.executable, SERVICE, "--name", name, "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("listening 127.0.0.1:"), line
    return p, int(line.rsplit(":", 1)[1])


def call(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def test_service_sells_exactly_the_stock_to_concurrent_clients(segs, tmpdir_path):
    name = segs.make("svc")
    wal = os.path.join(tmpdir_path, "wal")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1, limit_per_user=LIMIT))
        fs.sku_add(1, 10, STOCK, shards=2)
    daemon = Daemon(name, wal)
    svc, port = start_service(name)
    try:
        results = []            # (user, request id, status, reply)
        lock = threading.Lock()
        users = list(range(1, USERS + 1)) * 2

        def client(k):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            mine = []
            for i, u in enumerate(users[k::CLIENTS]):
                rid = 1_000_000 * (k + 1) + i
                mine.append((u, rid) + call(conn, "POST", "/order",
                                            {"user": u, "qty": 1, "request_id": rid}))
            conn.close()
            with lock:
                results.extend(mine)

        ths = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        assert len(results) == 2 * USERS
        ok = [(u, rid, r["order_no"]) for u, rid, st, r in results if st == 200]
        refused = collections.Counter(r["error"] for _, _, st, r in results if st == 409)
        others = [(st, r) for _, _, st, r in results if st not in (200, 409)]
        assert others == []
        assert len(ok) == STOCK, (len(ok), refused)
        assert len({no for _, _, no in ok}) == STOCK
        per_user = collections.Counter(u for u, _, _ in ok)
        assert max(per_user.values()) <= LIMIT
        assert set(refused) <= {"FLASH_ESOLD_OUT", "FLASH_ELIMIT"}, refused

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        st, stock = call(conn, "GET", "/stock?activity=1&sku=10")
        assert st == 200 and stock == {"total": STOCK, "available": 0, "sold": STOCK}
        # a retry of a request id that was sold answers the same order
        u0, rid0, no0 = ok[0]
        st, again = call(conn, "POST", "/order", {"user": u0, "qty": 1, "request_id": rid0})
        assert (st, again["order_no"], again["duplicate"]) == (200, no0, True)
        assert call(conn, "GET", "/stock?activity=1&sku=99")[0] == 404
        assert call(conn, "GET", "/stock?activity=x")[0] == 400
        assert call(conn, "POST", "/order", {"qty": 1})[0] == 400
        assert call(conn, "POST", "/order", {"user": 5, "sku": 99})[0] == 404
        conn.close()
        # every client has closed its connection, so the server's threads
        # ended and the binding closed their handles: the service holds none
        # (its main thread opened the object and never called it), the
        # daemon two (its drain's and its reservation expirer's), this test one
        with flashstock.open(name) as fs:
            deadline = time.time() + 30
            while fs.stats().procs != 3:
                assert time.time() < deadline, "handles open: %d" % fs.stats().procs
                time.sleep(0.05)
        print("%d clients, %d tries: %d sold (stock %d), refusals %s, users at most %d order(s)"
              % (CLIENTS, len(results), len(ok), STOCK, dict(refused), max(per_user.values())))
    finally:
        svc.terminate()
        rc = svc.wait(timeout=30)
        svc.stdout.close()
        daemon.stop()
    assert rc == 0, "service exited %d after SIGTERM" % rc
    rec = run_cli("reconcile", "--name", name, "--wal", wal, check=False)
    print(rec.stdout.strip())
    assert rec.returncode == 0, rec.stdout + rec.stderr
    with flashstock.open(name) as fs:
        st = fs.stats()
        # the service closed its handles as it stopped: nothing to recover
        assert st.recoveries == 0 and st.procs == 1, (st.recoveries, st.procs)
