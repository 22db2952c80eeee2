"""flashstock._types -- what the calls take and return, as frozen dataclasses
and enums.  Each dataclass mirrors one struct of api/flashstock.h field by
field (padding and reserved fields left out); the binding copies a struct
into one of these before it returns, so a result never aliases C memory.
OrderRequest, the one request a caller builds in bulk, is a named tuple
instead: a plain tuple of its fields serves as well.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, NamedTuple, Tuple

__all__ = [
    "Durability", "Scope", "OrderState", "ActivityFlag", "SegOpts", "Activity",
    "SkuInfo", "OrderRequest", "OrderResult", "OrderInfo", "Stats", "Ident", "Quiet",
    "CartLine", "CartResult",
    "Histogram", "OpObs", "Obs",
    "RecordType", "FeedSource", "FeedMissing", "FeedState", "FeedRecord", "FeedInfo",
]

INT64_MAX = (1 << 63) - 1


class Durability(enum.IntEnum):
    """enum flash_durability"""
    ASYNC = 0
    SYNC = 1


class Scope(enum.IntEnum):
    """enum flash_scope: what a per-user limit counts"""
    ACTIVITY = 0
    SKU = 1
    DAY = 2


class OrderState(enum.IntEnum):
    """enum flash_order_state"""
    NONE = 0
    ACTIVE = 1       # placed (paid, for a reservation)
    CANCELLED = 2
    RESERVED = 3     # a reservation not paid yet (FlashStock.confirm)
    EXPIRED = 4      # a reservation not paid in time (FlashStock.expire)


class ActivityFlag(enum.IntFlag):
    """FLASH_ACT_* flags of an activity"""
    NONE = 0
    CANCEL_RETURNS_QUOTA = 0x1
    TOKEN_REQUIRED = 0x2


@dataclass(frozen=True, slots=True)
class SegOpts:
    """struct flash_seg_opts: capacities and permissions of a segment.
    Start from flashstock.seg_opts_default() and dataclasses.replace()."""
    max_activities: int
    max_skus: int
    max_shards: int
    max_users: int
    max_tokens: int
    max_orders: int
    max_requests: int
    max_locks: int
    max_procs: int
    ring_records: int
    mode: int
    gid: int
    durability: Durability


@dataclass(frozen=True, slots=True)
class Activity:
    """struct flash_activity.  The default window is open from the epoch to
    the end of int64 nanoseconds (always open).  `version` is the version of
    these terms as the segment read them (activity_get, activity_at): a
    page shows it and an order names it (order(activity_version=)); it is
    ignored by activity_add, activity_update and activity_check."""
    id: int
    limit_per_user: int = 1
    max_qty: int = 1
    scope: Scope = Scope.ACTIVITY
    flags: ActivityFlag = ActivityFlag.NONE
    day_offset_s: int = 0
    start_ns: int = 0
    end_ns: int = INT64_MAX
    version: int = 0


@dataclass(frozen=True, slots=True)
class SkuInfo:
    """struct flash_sku_info; `sold` is total - available.  `price` is the
    one sku_price_set() set (0 until then), `version` the version of the
    sku's terms (its price), for order(sku_version=)."""
    activity_id: int
    sku_id: int
    shards: int
    total: int
    available: int
    price: int = 0
    version: int = 0

    @property
    def sold(self) -> int:
        return self.total - self.available


class OrderRequest(NamedTuple):
    """struct flash_order_req, one order of FlashStock.order_many() (the
    arguments of FlashStock.order(), in their order).  A tuple: a plain
    tuple of these fields, in this order, is taken alike.  reserve_ms
    (0: a plain order; else a reservation to confirm within that many ms)
    comes after request_id, not in the struct's place after qty: a tuple's
    positions are its API, and a tuple written before reservations (...,
    token, request_id) must not have its token read as a reservation.
    activity_version and sku_version (0: not checked) are the versions of
    the terms the buyer saw (Activity.version, SkuInfo.version): another
    is refused Stale, nothing taken; they come after reserve_ms, where the
    struct has them too."""
    activity_id: int
    sku_id: int
    user_id: int
    qty: int = 1
    token: int = 0
    request_id: int = 0
    reserve_ms: int = 0
    activity_version: int = 0
    sku_version: int = 0


@dataclass(frozen=True, slots=True)
class OrderResult:
    """struct flash_order_res of a placed order.  `lsn` is the position of
    its record in the ring of the handle of the thread that placed it (for
    FlashStock.durable_wait() from that thread)."""
    order_no: int
    limit_slot: int
    lsn: int


@dataclass(frozen=True, slots=True)
class OrderInfo:
    """struct flash_order_info (flash_order_get)."""
    order_no: int
    user_id: int
    activity_id: int
    sku_id: int
    qty: int
    state: OrderState
    limit_slot: int
    biz_day: int
    created_ns: int
    pay_by_ns: int = 0     # RESERVED, EXPIRED: the deadline (CLOCK_REALTIME ns); else 0
    line: int = 0          # a cart's line (cart_order): 0 .. lines - 1; 0 for a plain order
    lines: int = 0         # the order's lines: 1 plain, 2..16 a cart; 0 a number never used


class CartLine(NamedTuple):
    """struct flash_cart_line, one line of FlashStock.cart_order(): a sku of
    the cart's activity, its qty (1..max_qty) and, 0 for none, the version
    of the sku's terms the buyer saw.  A plain tuple (sku_id, qty) or
    (sku_id, qty, sku_version) is taken alike."""
    sku_id: int
    qty: int = 1
    sku_version: int = 0


@dataclass(frozen=True, slots=True)
class CartResult:
    """struct flash_cart_res of a placed cart: its number (line 0's; its
    later lines hold the numbers after it), the one limit slot it holds and
    the ring position of its last record (for FlashStock.durable_wait() from
    the thread that placed it).  A refusal raises instead, with the line it
    was refused for (.line) and, for SoldOut, every short line (.sold_out)."""
    order_no: int
    limit_slot: int
    lsn: int


@dataclass(frozen=True, slots=True)
class Stats:
    """struct flash_stats: counters summed over handles and fill levels."""
    orders: int
    cancels: int
    sold_out: int
    limit_hits: int
    token_rejects: int
    duplicates: int
    cas_retries: int
    recoveries: int
    rolled_back: int
    rolled_forward: int
    activities: int
    activities_cap: int
    skus: int
    skus_cap: int
    shards: int
    shards_cap: int
    users: int
    users_cap: int
    tokens: int
    tokens_cap: int
    requests: int
    requests_cap: int
    locks: int
    locks_cap: int
    procs: int
    procs_cap: int
    orders_used: int
    orders_cap: int
    segment_bytes: int
    durability: Durability
    confirms: int = 0      # reservations confirmed (paid)
    expiries: int = 0      # reservations expired unpaid


@dataclass(frozen=True, slots=True)
class Ident:
    """struct flash_ident: the identity a segment shares with its WAL."""
    incarnation: int
    wal_lsn: int
    consumer_pid: int
    consumer_slot: int


@dataclass(frozen=True, slots=True)
class Quiet:
    """struct flash_quiet; `quiet` is True when nothing is pending or in flight."""
    ops: int
    consumed: int
    pending: int
    in_flight: int

    @property
    def quiet(self) -> bool:
        return self.pending == 0 and self.in_flight == 0


# ---------------------------------------------------------------- observation

@dataclass(frozen=True, slots=True)
class Histogram:
    """struct flash_hist: latencies in ns.  `buckets` is every bucket as
    (le_ns, count): count of times below le_ns and at or above the previous
    bound (flash_obs_bucket_le_ns; the last bound is 2**64 - 1: everything
    above), not cumulative.  `count` is the sum of the counts."""
    buckets: Tuple[Tuple[int, int], ...]
    count: int
    sum_ns: int

    @property
    def mean_ns(self) -> float:
        return self.sum_ns / self.count if self.count else 0.0


@dataclass(frozen=True, slots=True)
class OpObs:
    """One operation of enum flash_op (`name` is flash_op_name(): "order",
    "cancel", ...): its latency histogram (orders: one in 16 per handle is
    timed) and its calls per result code, by the code's name ("FLASH_OK",
    "FLASH_ESOLD_OUT", ...; codes below -47 are counted together under
    "<=-47").  Only codes with at least one call are in `results`."""
    name: str
    time: Histogram
    results: Dict[str, int]

    @property
    def calls(self) -> int:
        return sum(self.results.values())


@dataclass(frozen=True, slots=True)
class Obs:
    """struct flash_obs summed over every slot of the segment (flash_obs_get):
    `ops` by operation name, in enum flash_op order, and the lock wait and
    lock hold histograms (FLASH_TIME_LOCK_WAIT, FLASH_TIME_LOCK_HOLD)."""
    ops: Dict[str, OpObs]
    lock_wait: Histogram
    lock_hold: Histogram


# ---------------------------------------------------------------- the order feed

class RecordType(enum.IntEnum):
    """enum flash_rec_type of a feed record; GAP (0) is the record a refill
    makes for a lost range that ends with LSNs it could not serve."""
    GAP = 0
    ORDER = 1
    CANCEL = 2
    RESTOCK = 3
    ACTIVITY = 4
    SKU = 5
    GEN = 6        # a request-id or limit generation moved or was cleared (reclamation)
    ARCHIVE = 7    # an ended activity was archived: activity_id, ts_ns; value = orders freed
    CONFIRM = 8    # a reservation was paid, now ACTIVE: its ORDER's fields (value: its pay-by ns)
    EXPIRE = 9     # a reservation expired unpaid: a CANCEL's fields (value: its pay-by ns)
    PRICE = 10     # a sku's price was set: activity_id, sku_id, value = price, order_no = version


class FeedSource(enum.IntEnum):
    """enum flash_feed_source"""
    WAL = 0
    MYSQL = 1


class FeedMissing(enum.IntFlag):
    """FLASH_FEED_MISS_*: fields a refill from MariaDB could not give back (left 0)"""
    NONE = 0
    SLOT = 0x1
    TS = 0x2
    VALUE = 0x4


class FeedState(enum.IntEnum):
    """enum flash_feed_state"""
    OK = 0
    LOST = 1


@dataclass(frozen=True, slots=True)
class FeedRecord:
    """struct flash_feed_rec, flat: its LSN (`lsn`, increasing: an idempotency
    key), `seq` (ring seq of the producing slot), every field of its
    struct flash_record (type .. request_id, meaning as in the header: e.g.
    `value` is a RESTOCK's delta, a SKU's units, an ACTIVITY's start_ns, a
    PRICE's price; `order_no` an ACTIVITY's, SKU's or PRICE's version of the
    terms, and an ACTIVITY with flags & 1 new terms of an existing one), and
    where it came from (`source`, `missing`, `gap`: the LSNs lsn - gap ..
    lsn - 1 a refill could not serve).  A `type` or `source` value this
    binding does not know (a newer library's) is left a plain int."""
    lsn: int
    seq: int
    type: RecordType
    slot: int
    activity_id: int
    sku_id: int
    qty: int
    order_no: int
    user_id: int
    value: int
    ts_ns: int
    biz_day: int
    limit_slot: int
    flags: int
    request_id: int
    source: FeedSource
    missing: FeedMissing
    gap: int

    # a cart's records (ORDER, CANCEL, EXPIRE, CONFIRM): one per line, the
    # line's sku_id and qty, the cart's order_no; flags say which line

    @property
    def cart(self) -> bool:
        """A line of a cart (FLASH_REC_F_CART)."""
        return bool(self.flags & REC_F_CART) and self.type in _LINE_TYPES

    @property
    def line(self) -> int:
        """A cart's line, 0..15 (FLASH_REC_LINE); 0 for any other record."""
        return (self.flags >> REC_LINE_SHIFT) & 0xF if self.cart else 0

    @property
    def last(self) -> bool:
        """The cart's last line (FLASH_REC_F_LAST); True for a plain order's
        one record, False for a record of no order."""
        if self.cart:
            return bool(self.flags & REC_F_LAST)
        return self.type in _LINE_TYPES


# the header's FLASH_REC_F_CART, FLASH_REC_F_LAST and FLASH_REC_LINE's shift
# (the package's import checks them against the C compiler's)
REC_F_CART = 0x0100
REC_F_LAST = 0x0200
REC_LINE_SHIFT = 10

_LINE_TYPES = frozenset((RecordType.ORDER, RecordType.CANCEL, RecordType.EXPIRE,
                         RecordType.CONFIRM))


@dataclass(frozen=True, slots=True)
class FeedInfo:
    """struct flash_feed_info: one registered consumer (flashstock.feed_list,
    Feed.info).  `lag_records` is durable - committed; `lag_ns` the age of the
    oldest record not committed (0 when caught up); times are CLOCK_REALTIME
    ns (`commit_ns` 0: never committed)."""
    name: str
    state: FeedState
    open: bool
    committed_lsn: int
    durable_lsn: int
    first_lsn: int
    lag_records: int
    lag_ns: int
    created_ns: int
    commit_ns: int

