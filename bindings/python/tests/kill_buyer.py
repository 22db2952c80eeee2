"""kill_buyer.py -- one buyer process of the kill test (test_kill.py), killed
with SIGKILL at any moment and started again by the test.

usage: kill_buyer.py NAME BUYER GEN USERS ACKS_FILE SEED

Orders one unit of activity 1 / sku 10 for random users in 1..USERS, every
other one with a request id of its own ((BUYER << 48) | (GEN << 32) | n:
never reused by another buyer or a later incarnation of this one), and
cancels some of its orders (more while the sku is sold out, so units churn
and a kill often lands inside an operation); it appends the order
number of every ACKNOWLEDGED order to ACKS_FILE right after the call
returns -- one write(2) of "N\\n" on an O_APPEND descriptor, so a kill leaves
whole lines.  Now and then it retries a request id: the retry must answer
Duplicate with the first order's number.  Sold out, limit reached and ring
busy are expected refusals; any other error ends the buyer with exit 1 and
the error on stderr.
"""
import os
import random
import sys
import time

import flashstock


def main(argv):
    name, buyer, gen, users, acks, seed = argv[1:7]
    buyer, gen, users = int(buyer), int(gen), int(users)
    rnd = random.Random(int(seed))
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    fs = flashstock.open(name)
    mine = []
    n = 0
    while True:
        n += 1
        # a request id on every other order (the table remembers each one)
        rid = (buyer << 48) | (gen << 32) | n if n % 2 else 0
        user = rnd.randint(1, users)
        try:
            r = fs.order(1, 10, user, request_id=rid)
        except flashstock.LimitReached:
            continue
        except (flashstock.SoldOut, flashstock.Busy):
            # churn: give one of ours back (and buy again), else wait a little
            if mine and rnd.random() < 0.5:
                cancel(fs, mine.pop(rnd.randrange(len(mine))))
            else:
                time.sleep(0.001)
            continue
        finally:
            # at most a few thousand tries a second, whatever the machine: the
            # segment's order and request tables are sized for that
            time.sleep(0.0002)
        os.write(fd, b"%d\n" % r.order_no)
        mine.append(r.order_no)
        if rid and rnd.random() < 0.2:
            try:
                fs.order(1, 10, user, request_id=rid)
                raise SystemExit("retry of request %d placed a second order" % rid)
            except flashstock.Duplicate as d:
                if not d.first_ok or d.order_no != r.order_no:
                    raise SystemExit("retry of request %d answered %s order %d, want order %d"
                                     % (rid, d.first_name, d.order_no, r.order_no))
        if rnd.random() < 0.15:
            cancel(fs, mine.pop(rnd.randrange(len(mine))))


def cancel(fs, no):
    while True:
        try:
            fs.cancel(no)
            return
        except flashstock.Busy:
            time.sleep(0.001)

if __name__ == "__main__":
    try:
        main(sys.argv)
    except flashstock.FlashError as e:
        sys.stderr.write("kill_buyer: %s (code %d)\n" % (e, e.code))
        sys.exit(1)
