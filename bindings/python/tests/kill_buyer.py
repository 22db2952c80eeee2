"""kill_buyer.py -- one buyer process of the kill test (test_kill.py), killed
with SIGKILL at any moment and started again by the test.

usage: kill_buyer.py NAME BUYER GEN USERS ACKS_FILE SEED

Orders one unit of activity 1 / sku 10 for random users in 1..USERS, each
with a request id of its own ((BUYER << 48) | (GEN << 32) | n: never reused
by another buyer or a later incarnation of this one), and appends the order
number of every ACKNOWLEDGED order to ACKS_FILE right after the call
returns -- one write(2) of "N\\n" on an O_APPEND descriptor, so a kill leaves
whole lines.  Now and then it retries a request id (the retry must answer
Duplicate with the first order's number) or cancels one of its own orders.
The expected refusals (sold out, limit, ring busy) are counted; any other
error ends the buyer with exit 1 and the error on stderr.
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
        rid = (buyer << 48) | (gen << 32) | n
        user = rnd.randint(1, users)
        try:
            r = fs.order(1, 10, user, request_id=rid)
        except (flashstock.SoldOut, flashstock.LimitReached, flashstock.Busy):
            time.sleep(0.002)
            continue
        os.write(fd, b"%d\n" % r.order_no)
        mine.append(r.order_no)
        if rnd.random() < 0.2:
            try:
                fs.order(1, 10, user, request_id=rid)
                raise SystemExit("retry of request %d placed a second order" % rid)
            except flashstock.Duplicate as d:
                if not d.first_ok or d.order_no != r.order_no:
                    raise SystemExit("retry of request %d answered %s order %d, want order %d"
                                     % (rid, d.first_name, d.order_no, r.order_no))
        if rnd.random() < 0.15 and mine:
            no = mine.pop(rnd.randrange(len(mine)))
            while True:
                try:
                    fs.cancel(no)
                    break
                except flashstock.Busy:
                    time.sleep(0.002)
        time.sleep(0.002)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except flashstock.FlashError as e:
        sys.stderr.write("kill_buyer: %s (code %d)\n" % (e, e.code))
        sys.exit(1)
