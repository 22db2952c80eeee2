"""kill_buyer.py -- one buyer process of the kill test (test_kill.py), killed
with SIGKILL at any moment and started again by the test.

usage: kill_buyer.py NAME BUYER GEN USERS ACKS_FILE SEED [reserve]

Orders one unit of activity 1 / sku 10 for random users in 1..USERS, every
third one with a request id of its own ((BUYER << 48) | (GEN << 32) | n:
never reused by another buyer or a later incarnation of this one), and
cancels some of its orders (more while the sku is sold out, so units
churn), trying back to back up to TRIES_PER_S on average.  Half of its turns
place one order (FlashStock.order), the other half a batch of 2..16
(FlashStock.order_many).  It appends the order number of every ACKNOWLEDGED
order to ACKS_FILE right after the call returns -- one write(2), of "N\\n"
for an order, of a line "+N\\n" per order placed for a batch, on an O_APPEND
descriptor, so a kill leaves whole lines -- and "-N" after it cancelled
order N; a new incarnation takes over the orders its predecessors noted and
did not cancel.  Now and then it retries a request id, after the order or
later in the same batch: the retry must answer Duplicate with the first
order's number (in a batch, with the first one's refusal when it was
refused).  Sold out, limit reached and ring busy are expected refusals; any
other error ends the buyer with exit 1 and the error on stderr.

With "reserve" it places reservations instead (reserve(): one unit, 20 to
300 ms to pay) and pays (confirms) some, cancels some and leaves the rest to
the daemon's expirer, some at once and some later, when a few have passed
their deadline.  A third of its turns place a reservation of one unit of
sku 10, a third a cart reservation, a third a plain cart (ACTIVE at once;
some cancelled at once): a cart of 2..3 lines over skus 10, 11, 12, 1..2
units each (FlashStock.cart_order), settled by its number as a single
reservation is.  It notes each outcome right after its call returns: "rN"
reserved (one sku or a cart), "tN" a plain cart placed, "cN" confirmed,
"kN" cancelled, "xN" refused as expired (a confirm or cancel too late); a
cart's first note comes with "LN=SKUxQTY,..." (its lines as asked), in
the same write.
"""
import heapq
import os
import random
import sys
import time

import flashstock

TRIES_PER_S = 12000
BATCH_MAX = 16
EXPECTED = (flashstock.LimitReached, flashstock.SoldOut, flashstock.Busy)


def main(argv):
    name, buyer, gen, users, acks, seed = argv[1:7]
    buyer, gen, users = int(buyer), int(gen), int(users)
    rnd = random.Random(int(seed))
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    fs = flashstock.open(name)
    if argv[7:] == ["reserve"]:
        reserve(fs, fd, rnd, users)
    mine = adopt(acks)
    n = 0
    t0 = time.monotonic()
    while True:
        n += 1
        # Tries run back to back (so a kill is likely to land inside a call),
        # paced only to at most TRIES_PER_S on average: the segment's order
        # and request tables are sized for that, whatever the machine.
        ahead = n / TRIES_PER_S - (time.monotonic() - t0)
        if ahead > 0.01:
            time.sleep(ahead)
        if rnd.random() < 0.5:
            n = batch(fs, fd, rnd, buyer, gen, users, n, mine)
            continue
        # a request id on every third try (the table remembers each one)
        rid = (buyer << 48) | (gen << 32) | n if n % 3 == 0 else 0
        user = rnd.randint(1, users)
        try:
            r = fs.order(1, 10, user, request_id=rid)
        except flashstock.LimitReached:
            continue
        except flashstock.Busy:
            time.sleep(0.001)
            continue
        except flashstock.SoldOut:
            # churn: give one of ours back (and buy again)
            if mine and rnd.random() < 0.5:
                cancel(fs, fd, mine.pop(rnd.randrange(len(mine))))
            continue
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
            cancel(fs, fd, mine.pop(rnd.randrange(len(mine))))


RESERVE_TRIES_PER_S = 2000


def reserve(fs, fd, rnd, users):
    """Reservations until killed: each paid, cancelled or left to expire,
    decided at once or up to 400 ms later (pending, by when), so that some
    decisions come after the deadline and answer Expired."""
    pending = []                    # heap of (when, order number)
    n = 0
    t0 = time.monotonic()
    while True:
        n += 1
        now = time.monotonic()
        ahead = n / RESERVE_TRIES_PER_S - (now - t0)
        if ahead > 0.01:
            time.sleep(ahead)
        if pending and pending[0][0] <= now:
            settle(fs, fd, rnd, heapq.heappop(pending)[1])
            continue
        kind = rnd.randrange(3)
        user = rnd.randint(1, users)
        try:
            if kind == 0:
                r = fs.order(1, 10, user, reserve_ms=rnd.randint(20, 300))
            else:
                lines = [(sku, rnd.randint(1, 2))
                         for sku in rnd.sample(CART_SKUS, rnd.randint(2, len(CART_SKUS)))]
                r = fs.cart_order(1, user, lines,
                                  reserve_ms=rnd.randint(20, 300) if kind == 1 else 0)
        except flashstock.Busy:
            time.sleep(0.001)
            continue
        except (flashstock.LimitReached, flashstock.SoldOut):
            continue
        if kind:                    # the cart's lines, as asked, with its first note
            asked = b"L%d=%s\n" % (r.order_no, b",".join(b"%dx%d" % x for x in lines))
        if kind == 2:
            os.write(fd, b"t%d\n%s" % (r.order_no, asked))
            if rnd.random() < 0.3:
                cancel_cart(fs, fd, r.order_no)
            continue
        os.write(fd, b"r%d\n%s" % (r.order_no, asked if kind else b""))
        if rnd.random() < 0.5:
            settle(fs, fd, rnd, r.order_no)
        else:
            heapq.heappush(pending, (now + rnd.uniform(0, 0.4), r.order_no))


CART_SKUS = [10, 11, 12]


def cancel_cart(fs, fd, no):
    """Cancel plain cart no (every line) and note it "kN"."""
    while True:
        try:
            fs.cancel(no)
            os.write(fd, b"k%d\n" % no)
            return
        except flashstock.Busy:
            time.sleep(0.001)


def settle(fs, fd, rnd, no):
    """Pay (confirm) reservation no, cancel it, or leave it to expire."""
    x = rnd.random()
    if x < 0.2:
        return                      # never paid: the daemon expires it
    pay = x < 0.7
    while True:
        try:
            if pay:
                fs.confirm(no)
            else:
                fs.cancel(no)
            os.write(fd, b"%s%d\n" % (b"c" if pay else b"k", no))
            return
        except flashstock.Busy:
            time.sleep(0.001)
        except flashstock.Expired:
            os.write(fd, b"x%d\n" % no)
            return


def batch(fs, fd, rnd, buyer, gen, users, n, mine):
    """One batch of 2..16 tries (the first numbered n): each order is
    acknowledged once order_many returned it placed.  Returns the number of
    the batch's last try."""
    reqs = []
    retry_of = {}                   # index of a retry -> index of its first
    for _ in range(rnd.randint(2, BATCH_MAX)):
        firsts = [i for i, q in enumerate(reqs) if q[5] and i not in retry_of]
        if firsts and rnd.random() < 0.2:
            i = rnd.choice(firsts)
            retry_of[len(reqs)] = i
            reqs.append(reqs[i])
            continue
        if reqs:
            n += 1
        rid = (buyer << 48) | (gen << 32) | n if n % 3 == 0 else 0
        reqs.append((1, 10, rnd.randint(1, users), 1, 0, rid))
    got = fs.order_many(reqs)
    placed = [x.order_no for x in got if isinstance(x, flashstock.OrderResult)]
    if placed:
        os.write(fd, b"".join(b"+%d\n" % no for no in placed))
        mine.extend(placed)
    for i, x in enumerate(got):
        if i in retry_of:
            check_retry(reqs[i][5], got[retry_of[i]], x)
        elif not isinstance(x, (flashstock.OrderResult,) + EXPECTED):
            raise x
    if any(isinstance(x, flashstock.Busy) for x in got):
        time.sleep(0.001)
    if mine and any(isinstance(x, flashstock.SoldOut) for x in got) and rnd.random() < 0.5:
        cancel(fs, fd, mine.pop(rnd.randrange(len(mine))))
    for _ in placed:
        if mine and rnd.random() < 0.15:
            cancel(fs, fd, mine.pop(rnd.randrange(len(mine))))
    return n


def check_retry(rid, first, x):
    """A retry later in the batch than its first: Duplicate with the first
    outcome (an order's number, or its refusal).  Only after FLASH_EBUSY,
    which leaves the request id unrecorded, is it judged afresh."""
    if isinstance(first, flashstock.Busy):
        if not isinstance(x, (flashstock.OrderResult,) + EXPECTED):
            raise x
        return
    if not isinstance(x, flashstock.Duplicate):
        raise SystemExit("retry of request %d in a batch answered %r, want Duplicate of %r"
                         % (rid, x, first))
    if isinstance(first, flashstock.OrderResult):
        ok = x.first_ok and x.order_no == first.order_no
    else:
        ok = x.first_code == first.code
    if not ok:
        raise SystemExit("retry of request %d in a batch answered %s order %d, first %r"
                         % (rid, x.first_name, x.order_no, first))


def adopt(acks):
    """The orders earlier incarnations of this buyer placed and did not
    cancel, as far as they noted: a restarted buyer carries on with them
    (else the stock would end up held by the dead and nobody could churn)."""
    with open(acks) as f:
        nos = [int(x) for x in f.read().split()]
    placed = {n for n in nos if n > 0}
    return sorted(placed - {-n for n in nos if n < 0})


def cancel(fs, fd, no):
    """Cancel one of ours and note it ("-N"); one cancelled by an earlier
    incarnation that was killed before its note answers Cancelled."""
    while True:
        try:
            fs.cancel(no)
            break
        except flashstock.Busy:
            time.sleep(0.001)
        except flashstock.Cancelled:
            break
    os.write(fd, b"-%d\n" % no)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except flashstock.FlashError as e:
        sys.stderr.write("kill_buyer: %s (code %d)\n" % (e, e.code))
        sys.exit(1)
