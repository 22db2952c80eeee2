#!/usr/bin/python3
"""quickstart.py SEGMENT USER REQUEST_ID -- one buyer's order from Python,
the program the "From Python" sections of the README, docs/python.md and
bindings/python/README.md show (between the README markers;
tests/test_readme.py checks that they agree and runs it).
Activity 1 requires a token; sku 10 is the goods.  Prints the outcome's
name and the order number; exit 0 placed, 1 refused, 2 no such segment.
"""
import sys

import flashstock


# README begin
def buy(segment: str, user: int, request_id: int) -> int:
    with flashstock.open(segment) as fs:      # usable from any thread: a handle per thread inside
        token = fs.token_issue(1, 10, user, ttl_ms=60000)    # in a shop: with the page
        try:
            res = fs.order(activity_id=1, sku_id=10, user_id=user, qty=1,
                           token=token, request_id=request_id)
        except flashstock.Duplicate as e:     # a retry of request_id: its first outcome
            print(e.name, "order", e.order_no)
            return 1
        except flashstock.FlashError as e:    # SoldOut, LimitReached, ...: .code and .name
            print(e.name, "order 0")
            return 1
        print("FLASH_OK order", res.order_no)
        return 0
# README end


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: quickstart.py SEGMENT USER REQUEST_ID")
    try:
        sys.exit(buy(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    except flashstock.NoSegment as e:
        print(e, file=sys.stderr)
        sys.exit(2)
