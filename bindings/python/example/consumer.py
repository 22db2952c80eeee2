#!/usr/bin/python3
"""consumer.py -- the Python consumer of docs/feed.md ("Consuming orders";
its "From Python" section and bindings/python/README.md
show the marked region unchanged: tests/test_feed.py checks it and runs
this file on a real sale).  It behaves as tests/cli/example_feed_consumer.c:
one line per order and cancel, a commit every 100 records or whenever the
feed is idle, after the lines are written out.

usage: consumer.py [WAL_DIR [--idle-exit]]
  --idle-exit  stop at the first second without a new record (for tests)
"""
# README begin
import sys

import flashstock
from flashstock import RecordType


def process(r: flashstock.FeedRecord) -> None:
    """Act on one record.  Idempotent by order number: a record may come
    twice (at least once), e.g. after a crash between printing and committing."""
    if r.type == RecordType.ORDER:
        print("ship order %d: user %d, sku %d/%d x%d (lsn %d)"
              % (r.order_no, r.user_id, r.activity_id, r.sku_id, r.qty, r.lsn))
    elif r.type == RecordType.CANCEL:
        print("cancel order %d (lsn %d)" % (r.order_no, r.lsn))
    sys.stdout.flush()                  # processed = written out (raises if it failed)


def main(wal: str, idle_exit: bool) -> int:
    # first run: from the oldest record still kept; later runs resume after the commit
    with flashstock.Feed(wal, "fulfilment", from_start=True) as feed:
        done = 0                        # last LSN processed
        pending = 0                     # processed, not yet committed
        while True:
            try:
                r = feed.next(wait_ms=1000)     # sleeps until durable records come
            except flashstock.Timeout:
                r = None
            # other errors (flashstock.Lost: retention removed what we had not
            # committed; open with mysql_url= to refill it) end the run, uncommitted
            if r is not None:
                process(r)
                done = r.lsn
                pending += 1
                if pending < 100:
                    continue
            if pending:
                feed.commit(done)       # durable when it returns
                pending = 0
            if r is None and idle_exit:
                return 0
# README end


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/var/lib/flashstock/wal",
                      len(sys.argv) > 2 and sys.argv[2] == "--idle-exit"))
    except flashstock.FlashError as e:
        sys.stderr.write("feed: %s\n" % e)
        sys.exit(1)
