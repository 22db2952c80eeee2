#!/usr/bin/python3
"""service.py -- a minimal flash-sale HTTP endpoint over flashstock, with
only the standard library (http.server's ThreadingHTTPServer).

usage: service.py --name SEGMENT [--listen 127.0.0.1:PORT] [--activity A] [--sku S]

  POST /order   {"user": N, "qty": 1, "request_id": R[, "activity": A, "sku": S]}
                200 {"order_no": .., "limit_slot": ..}
                409 {"error": "FLASH_ESOLD_OUT"} (FLASH_ELIMIT, FLASH_EENDED, ...)
                a known request_id answers its first outcome, with "duplicate": true
                202 {"order_no": .., "error": "FLASH_EFATE_UNKNOWN"}: placed, not yet durable
                400 bad JSON or argument, 404 unknown activity/sku, 503 retry later
  GET  /stock?activity=A&sku=S   200 {"total": .., "available": .., "sold": ..}

--listen PORT 0 picks a free port; the address is printed on stdout
("listening 127.0.0.1:PORT") once the server accepts connections.
SIGTERM or SIGINT: stop accepting, close the segment, exit 0.

Threads: the server runs one thread per connection, all sharing one
FlashStock object; the binding gives each thread its own native handle and
closes it when the thread ends, so nothing here knows about handles.
"""
import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import flashstock

# refusals of an order on its merits: the buyer learns the outcome
CONFLICT = (flashstock.SoldOut, flashstock.LimitReached, flashstock.NotStarted,
            flashstock.Ended, flashstock.BadToken, flashstock.Cancelled)
# capacity refusals: nothing was done, the client may retry
RETRY = (flashstock.Busy, flashstock.Full, flashstock.NoProc)


def order_reply(fs, body, default_activity, default_sku):
    """(status, JSON object) for one POST /order body."""
    try:
        req = json.loads(body)
        args = dict(activity_id=int(req.get("activity", default_activity)),
                    sku_id=int(req.get("sku", default_sku)), user_id=int(req["user"]),
                    qty=int(req.get("qty", 1)), request_id=int(req.get("request_id", 0)),
                    token=int(req.get("token", 0)))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return 400, {"error": "bad request: %s" % e}
    try:
        res = fs.order(**args)
        return 200, {"order_no": res.order_no, "limit_slot": res.limit_slot}
    except flashstock.Duplicate as d:
        if d.first_ok:
            return 200, {"order_no": d.order_no, "limit_slot": d.limit_slot, "duplicate": True}
        return 409, {"error": d.first_name, "duplicate": True}
    except flashstock.FateUnknown as e:
        return 202, {"order_no": e.order_no, "error": e.name}
    except CONFLICT as e:
        return 409, {"error": e.name}
    except flashstock.InvalidArgument as e:
        return 400, {"error": e.name}
    except flashstock.NotFound as e:
        return 404, {"error": e.name}
    except RETRY as e:
        return 503, {"error": e.name}
    except flashstock.FlashError as e:
        return 500, {"error": e.name}


def stock_reply(fs, query):
    try:
        q = parse_qs(query)
        info = fs.sku_get(int(q["activity"][0]), int(q["sku"][0]))
    except flashstock.NotFound as e:
        return 404, {"error": e.name}
    except flashstock.InvalidArgument as e:
        return 400, {"error": e.name}
    except (ValueError, KeyError) as e:
        return 400, {"error": "bad query: %s" % e}
    except flashstock.FlashError as e:
        return 500, {"error": e.name}
    return 200, {"total": info.total, "available": info.available, "sold": info.sold}


def make_handler(fs, activity, sku):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"   # keep-alive: one thread (one handle) per connection

        def reply(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n)
            if urlsplit(self.path).path != "/order":
                return self.reply(404, {"error": "no such path"})
            self.reply(*order_reply(fs, body, activity, sku))

        def do_GET(self):
            u = urlsplit(self.path)
            if u.path != "/stock":
                return self.reply(404, {"error": "no such path"})
            self.reply(*stock_reply(fs, u.query))

        def log_message(self, fmt, *args):  # quiet: a flash sale logs elsewhere
            pass

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description="flash-sale HTTP endpoint over flashstock")
    ap.add_argument("--name", required=True, help="segment name")
    ap.add_argument("--listen", default="127.0.0.1:0", help="ADDR:PORT (port 0: pick one)")
    ap.add_argument("--activity", type=int, default=1, help="default activity of an order")
    ap.add_argument("--sku", type=int, default=10, help="default sku of an order")
    a = ap.parse_args(argv)
    host, _, port = a.listen.rpartition(":")
    try:
        fs = flashstock.open(a.name)
    except flashstock.FlashError as e:
        print("service: cannot open segment %s: %s" % (a.name, e), file=sys.stderr)
        return 1
    with fs:
        srv = ThreadingHTTPServer((host or "127.0.0.1", int(port)), make_handler(fs, a.activity,
                                                                               a.sku))
        srv.daemon_threads = True

        def stop(signum, frame):
            threading.Thread(target=srv.shutdown).start()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        print("listening %s:%d" % srv.server_address[:2], flush=True)
        srv.serve_forever()
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
