"""flashstock._types -- what the calls take and return, as frozen dataclasses
and enums.  Each dataclass mirrors one struct of api/flashstock.h field by
field (padding and reserved fields left out); the binding copies a struct
into one of these before it returns, so a result never aliases C memory.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "Durability", "Scope", "OrderState", "ActivityFlag", "SegOpts", "Activity",
    "SkuInfo", "OrderResult", "OrderInfo", "Stats", "Ident", "Quiet",
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
    ACTIVE = 1
    CANCELLED = 2


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
    the end of int64 nanoseconds (always open)."""
    id: int
    limit_per_user: int = 1
    max_qty: int = 1
    scope: Scope = Scope.ACTIVITY
    flags: ActivityFlag = ActivityFlag.NONE
    day_offset_s: int = 0
    start_ns: int = 0
    end_ns: int = INT64_MAX


@dataclass(frozen=True, slots=True)
class SkuInfo:
    """struct flash_sku_info; `sold` is total - available."""
    activity_id: int
    sku_id: int
    shards: int
    total: int
    available: int

    @property
    def sold(self) -> int:
        return self.total - self.available


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
