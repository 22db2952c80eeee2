"""flashstock -- the flash-sale inventory engine, from Python.

    import flashstock
    with flashstock.open("/sale1") as fs:
        res = fs.order(activity_id=1, sku_id=10, user_id=42, request_id=4201)
        print(res.order_no)

A `FlashStock` object (flashstock.open) stands for one segment.  The C
library's rule -- a handle belongs to the thread that opened it, and is
not usable in a forked child -- is kept here, not by the caller:

  - Threads.  Every thread that calls a method gets its own native handle
    (flash_open on its first call, kept in a threading.local); a handle is
    never passed to another thread.  It is closed when its thread ends or
    when the object is closed (close(), or the end of a `with` block),
    whichever comes first.  Each open handle holds one slot of the
    segment's process table (max_procs); open() itself holds none (it
    checks the segment with a read-only attach), so a thread that only
    opens and hands the object to others takes no slot.
  - Fork.  In a child made by os.fork() (multiprocessing's "fork" start
    method, too) every handle inherited from the parent is dropped by an
    os.register_at_fork() hook before any code of the child runs; the child
    opens its own on its first call.  So a child never sees FLASH_EFORK.
  - Spawn.  A FlashStock pickles as (name, options): the spawned process
    opens the segment again.

The order feed of a WAL directory (section 10 of the header) is
flashstock.Feed, feed_list() and feed_drop() (flashstock._feed, with its
own thread and fork rules); FlashStock.obs() gives the engine's
observation figures.

Errors: every negative code raises FlashError or one of its subclasses
(SoldOut, LimitReached, ...), which carry `.code` and `.name`.  Results are
frozen dataclasses (flashstock._types).  A batch of orders
(FlashStock.order_many) has an outcome per order: it returns, for each, its
OrderResult or the FlashError order() would have raised, and raises only
for the call itself.

Interpreter: CPython with its GIL (the handle's busy/dead pair relies on
it), tested with Debian 12's python3 (3.11) and python3-cffi (1.15); a
free-threaded build is refused at import.

Divisions: 1. module-level calls (codes, segments)  2. the per-thread
handle  3. FlashStock  4. fork
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import os as _os
import struct
import sys as _sys
import threading
import weakref
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

if not getattr(_sys, "_is_gil_enabled", lambda: True)():
    raise ImportError("flashstock needs CPython with the GIL: its per-thread handles rely on "
                      "it (this interpreter runs without; start it with PYTHON_GIL=1)")

from ._errors import (AttachError, BadToken, Busy, Cancelled, Closed, Corrupt,  # noqa: F401
                      DurabilityFailed, Duplicate, Ended, Exists, FateUnknown, FlashError,
                      Fork, Full, InvalidArgument, LimitReached, Locked, NoMemory, NoProc,
                      NoSegment, NotFound, NotOwner, NotStarted, PermissionDenied, ReadOnly,
                      RequestExpired, SoldOut, SystemFailure, WrongThread, error_for)
from ._errors import Archived, NotEnded  # noqa: F401
from ._errors import Destroyed  # noqa: F401
from ._errors import Confirmed, Expired, NotDue  # noqa: F401
from ._errors import Stale  # noqa: F401
from ._errors import (BadChecksum, BadLayout, BadMagic, BadMode, BadSize,  # noqa: F401
                      BadVersion, NotRegular, OwnerMismatch)
from ._errors import (Ahead, FeedIdentMismatch, FeedInUse, Lost,  # noqa: F401
                      RefillUnavailable, Timeout)
from ._native import ffi, lib
from ._types import (ActivityFlag, Activity, Durability, Ident, OrderInfo,  # noqa: F401
                     OrderRequest, OrderResult, OrderState, Quiet, Scope, SegOpts, SkuInfo,
                     Stats)
from ._types import CartLine, CartResult  # noqa: F401
from ._types import REC_F_CART, REC_F_LAST, REC_LINE_SHIFT
from ._types import (FeedInfo, FeedMissing, FeedRecord, FeedSource, FeedState,  # noqa: F401
                     Histogram, Obs, OpObs, RecordType)
from ._feed import Feed, feed_drop, feed_list  # noqa: F401

__all__ = [
    "open", "FlashStock", "seg_opts_default", "seg_size", "seg_create", "seg_destroy",
    "activity_check", "strerror", "rcname", "CODES",
    "ActivityFlag", "Activity", "Durability", "Ident", "OrderInfo", "OrderRequest", "OrderResult",
    "OrderState", "Quiet", "Scope", "SegOpts", "SkuInfo", "Stats",
    "FlashError", "SoldOut", "LimitReached", "NotStarted", "Ended", "NotFound", "BadToken",
    "Duplicate", "Full", "InvalidArgument", "DurabilityFailed", "Exists", "NoSegment",
    "AttachError", "ReadOnly", "Fork", "Cancelled", "Locked", "NotOwner", "Busy", "NoProc",
    "PermissionDenied", "NoMemory", "SystemFailure", "WrongThread", "FateUnknown", "Corrupt",
    "RequestExpired", "Closed", "error_for", "OwnerMismatch", "BadMode", "BadSize", "BadMagic", "BadVersion",
    "Archived", "NotEnded", "Destroyed", "Expired", "NotDue", "Confirmed", "RESERVE_MS_MAX",
    "Stale", "PRICE_MAX", "CartLine", "CartResult", "CART_LINES_MAX",
    "BadChecksum", "BadLayout", "NotRegular",
    "Feed", "feed_list", "feed_drop", "FeedInfo", "FeedMissing", "FeedRecord", "FeedSource",
    "FeedState", "RecordType", "Histogram", "Obs", "OpObs", "OBS_BUCKET_LE_NS",
    "Timeout", "Lost", "Ahead", "FeedIdentMismatch", "RefillUnavailable", "FeedInUse",
]

# ---------------------------------------------------------------- 1. module-level calls

# cffi compares each mirrored struct's field sizes with the C compiler's when
# the struct is first used; using them all here makes a mismatch fail the
# import instead of some later call.  (python_api's layout test also checks
# that no field is missing and every offset agrees.)
for _s in ("flash_seg_opts", "flash_activity", "flash_order_req", "flash_order_res",
           "flash_cart_line", "flash_cart_req", "flash_cart_res", "flash_sku_info",
           "flash_order_info", "flash_stats", "flash_ident", "flash_quiet",
           "flash_hist", "flash_obs"):
    ffi.typeof("struct " + _s).fields
del _s

#: every result code api/flashstock.h defined when the module was built, by name
CODES: Dict[str, int] = {
    name: getattr(lib, name)
    for name in (ffi.string(p).decode() for p in lib.flash_py_code_names)
}

VERSION = (lib.FLASH_VERSION_MAJOR, lib.FLASH_VERSION_MINOR)
SYNC_WAIT_MS_DEFAULT: int = lib.FLASH_SYNC_WAIT_MS_DEFAULT
LOCK_NAME_MAX: int = lib.FLASH_LOCK_NAME_MAX
#: the longest reservation (reserve_ms), a week
RESERVE_MS_MAX: int = lib.FLASH_RESERVE_MS_MAX
#: the highest price sku_price_set takes (INT64_MAX)
PRICE_MAX: int = lib.FLASH_PRICE_MAX
#: the most lines of a cart (cart_order)
CART_LINES_MAX: int = lib.FLASH_CART_LINES_MAX

# FeedRecord's cart and last read a record's flags as the header's macros do
# (python_api checks the line's bits against FLASH_REC_LINE)
if (REC_F_CART, REC_F_LAST) != (lib.FLASH_REC_F_CART, lib.FLASH_REC_F_LAST):
    raise ImportError("flashstock: FLASH_REC_F_* differ from the record flags FeedRecord reads")

#: the upper bound in ns of each observation histogram bucket
#: (flash_obs_bucket_le_ns; the last is 2**64 - 1: everything above)
OBS_BUCKET_LE_NS = tuple(int(lib.flash_obs_bucket_le_ns(b)) for b in range(lib.FLASH_OBS_BUCKETS))

# the cdef writes struct flash_obs's array bounds out (a whole struct):
# they must be the header's constants
_obs_f = dict(ffi.typeof("struct flash_obs").fields)
if (dict(ffi.typeof("struct flash_hist").fields)["bucket"].type.length != lib.FLASH_OBS_BUCKETS
        or _obs_f["time"].type.length != lib.FLASH_TIMES
        or _obs_f["results"].type.length != lib.FLASH_OP_COUNT
        or _obs_f["results"].type.item.length != lib.FLASH_OBS_CODES):
    raise ImportError("flashstock: struct flash_obs array bounds differ from api/flashstock.h")
del _obs_f

_EDUPLICATE = lib.FLASH_EDUPLICATE
_ESOLD_OUT = lib.FLASH_ESOLD_OUT
_EFATE_UNKNOWN = lib.FLASH_EFATE_UNKNOWN


def strerror(code: int) -> str:
    """flash_strerror(): a description of any result code."""
    return ffi.string(lib.flash_strerror(code)).decode()


def rcname(code: int) -> str:
    """flash_rcname(): the symbolic name of a result code ("FLASH_E?" if unknown)."""
    return ffi.string(lib.flash_rcname(code)).decode()


def _check(rc: int, detail: Optional[str] = None) -> None:
    if rc:
        raise error_for(rc, detail)


_OPTS_FIELDS = [f for f in SegOpts.__dataclass_fields__]


def _opts_from_c(c: Any) -> SegOpts:
    vals = {f: getattr(c, f) for f in _OPTS_FIELDS}
    vals["durability"] = Durability(vals["durability"])
    return SegOpts(**vals)


def seg_opts_default() -> SegOpts:
    """flash_seg_opts_default(): the default options (about 200 MiB of shm)."""
    c = ffi.new("struct flash_seg_opts *")
    lib.flash_seg_opts_default(c)
    return _opts_from_c(c)


def _opts_to_c(opts: Optional[SegOpts], overrides: Dict[str, int]) -> Any:
    c = ffi.new("struct flash_seg_opts *")
    lib.flash_seg_opts_default(c)
    if opts is not None:
        for f in _OPTS_FIELDS:
            setattr(c, f, int(getattr(opts, f)))
    for k, v in overrides.items():
        if k not in _OPTS_FIELDS:
            raise TypeError("unknown segment option %r" % k)
        setattr(c, k, int(v))
    return c


def seg_size(opts: Optional[SegOpts] = None, **overrides: int) -> int:
    """flash_seg_size(): bytes of shared memory a segment with these options needs.
    `overrides` replace single fields of `opts` (default: the defaults)."""
    out = ffi.new("uint64_t *")
    _check(lib.flash_seg_size(_opts_to_c(opts, overrides), out))
    return int(out[0])


def seg_create(name: str, opts: Optional[SegOpts] = None, **overrides: int) -> None:
    """flash_seg_create(): create segment `name` (O_EXCL).  `overrides` replace
    single fields of `opts` (default: the defaults), e.g. max_orders=4096."""
    _check(lib.flash_seg_create(name.encode(), _opts_to_c(opts, overrides)), name)


def seg_destroy(name: str) -> None:
    """flash_seg_destroy(): remove the segment's name."""
    _check(lib.flash_seg_destroy(name.encode()), name)


def _activity_to_c(a: Activity) -> Any:
    c = ffi.new("struct flash_activity *")
    c.id = a.id
    c.limit_per_user = a.limit_per_user
    c.max_qty = a.max_qty
    c.scope = int(a.scope)
    c.flags = int(a.flags)
    c.day_offset_s = a.day_offset_s
    c.start_ns = a.start_ns
    c.end_ns = a.end_ns
    c.version = a.version       # activity_update: the version the change is based on (0: any)
    return c


def _activity_from_c(c: Any) -> Activity:
    return Activity(c.id, c.limit_per_user, c.max_qty, Scope(c.scope), ActivityFlag(c.flags),
                    c.day_offset_s, c.start_ns, c.end_ns, c.version)


def _sku_from_c(c: Any) -> SkuInfo:
    return SkuInfo(c.activity_id, c.sku_id, c.shards, c.total, c.available, c.price, c.version)


def activity_check(a: Activity) -> None:
    """flash_activity_check(): raise InvalidArgument unless activity_add would take `a`."""
    _check(lib.flash_activity_check(_activity_to_c(a)))


def open(name: str, *, readonly: bool = False,  # noqa: A001 -- flashstock.open is the API
         sync_wait_ms: Optional[int] = None) -> "FlashStock":
    """Attach to segment `name`.  No process slot is taken here: each thread
    opens its own handle (and takes its slot) on its first call.  The segment
    is checked at once by a read-only attach, so a missing or unusable one
    raises here (NoSegment, AttachError, PermissionDenied, ...); what only a
    writable attach can meet -- NoProc (every slot taken), PermissionDenied
    on a segment this user may only read -- is raised by a thread's first call.
    readonly: map it read-only (monitors; no slot is taken, ever).
    sync_wait_ms: the sync wait bound of every handle this object opens
    (flash_sync_wait_set, 1 or more; default FLASH_SYNC_WAIT_MS_DEFAULT)."""
    return FlashStock(name, readonly=readonly, sync_wait_ms=sync_wait_ms)


# ---------------------------------------------------------------- 2. the per-thread handle

# Guards the one flash_close of each handle.  Replaced in a forked child
# (a thread of the parent may have held it at the fork).
_close_lock = threading.Lock()


class _Handle:
    """One native handle, used only by the thread that opened it (`tid`).

    busy/dead are a Dekker pair between the owner thread and a thread that
    closes the FlashStock: the owner stores busy=True and then loads dead
    before each call; close() stores dead=True and then loads busy, and
    closes the handle itself only when busy is False -- otherwise the owner
    closes it when its call returns.  Both run under the GIL, which makes
    the stores and loads sequentially consistent: at least one side sees
    the other's store, so a handle is never closed under a running call.
    (CPython with its GIL, as Debian's python3 is.)
    """
    __slots__ = ("ptr", "tid", "req", "res", "many_cap", "many_req", "many_res", "many_rcs",
                 "u32", "u64", "busy", "dead", "closed", "__weakref__")

    def __init__(self, ptr: Any) -> None:
        self.ptr = ptr
        self.tid = threading.get_ident()
        self.req = ffi.new("struct flash_order_req *")
        self.res = ffi.new("struct flash_order_res *")
        self.many_cap = 0               # order_many's arrays, grown on demand (_many_buffers)
        self.many_req: Any = None
        self.many_res: Any = None
        self.many_rcs: Any = None
        self.u32 = ffi.new("uint32_t *")
        self.u64 = ffi.new("uint64_t *")
        self.busy = False
        self.dead = False
        self.closed = False

    def release(self, _close: Any = lib.flash_close) -> None:
        """flash_close() once, from whichever thread gets here first (allowed
        from any thread once the owner has made its last call)."""
        with _close_lock:
            if self.closed:
                return
            self.closed = True
        _close(self.ptr)

    def __del__(self, _close: Any = lib.flash_close) -> None:
        # the owner thread ended (its threading.local went away) or the
        # object was dropped: nobody calls on it any more
        if not self.closed:
            self.closed = True
            _close(self.ptr)


# every FlashStock alive, for the fork hook
_live: "weakref.WeakSet[FlashStock]" = weakref.WeakSet()


# ---------------------------------------------------------------- 3. FlashStock

class FlashStock:
    """One segment, usable from any thread of the process (see the module's
    documentation).  Make it with flashstock.open(); close() it, or use it as
    a context manager."""

    def __init__(self, name: str, *, readonly: bool = False,
                 sync_wait_ms: Optional[int] = None) -> None:
        self._name = name
        self._bname = name.encode()
        self._readonly = readonly
        self._flags = lib.FLASH_RDONLY if readonly else 0
        self._sync_wait_ms = sync_wait_ms
        self._closed = False
        self._lock = threading.Lock()
        self._tls = threading.local()
        self._handles: "weakref.WeakSet[_Handle]" = weakref.WeakSet()
        if sync_wait_ms is not None and not 0 < sync_wait_ms <= 0xFFFFFFFF:
            raise InvalidArgument(lib.FLASH_EINVAL, "sync_wait_ms %r: 1 to 2**32 - 1"
                                  % (sync_wait_ms,))
        if readonly:
            # the read-only attach is this thread's handle (it holds no slot)
            _live.add(self)
            self._open_here()
        else:
            # checks the segment without a slot; each thread's first call
            # opens its writable handle
            out = ffi.new("flash_t **")
            _check(lib.flash_open(self._bname, lib.FLASH_RDONLY, out),
                   "flash_open %s" % self._name)
            lib.flash_close(out[0])
            _live.add(self)

    # -- the object ---------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "FlashStock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        # spawn (and pickling in general): the other process opens its own
        return (FlashStock._reopen, (self._name, self._readonly, self._sync_wait_ms))

    @staticmethod
    def _reopen(name: str, readonly: bool, sync_wait_ms: Optional[int]) -> "FlashStock":
        return FlashStock(name, readonly=readonly, sync_wait_ms=sync_wait_ms)

    def __repr__(self) -> str:
        return "<FlashStock %r%s%s>" % (self._name, " readonly" if self._readonly else "",
                                         " closed" if self._closed else "")

    def close(self) -> None:
        """Close every thread's handle: at once where its thread is not inside
        a call, else as that call returns.  Any later call raises Closed.
        Calling it again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            handles = list(self._handles)
            self._handles = weakref.WeakSet()
        me = threading.get_ident()
        for h in handles:
            h.dead = True               # (1) store dead, then (2) load busy
            if h.tid == me or not h.busy:
                h.release()

    def _forked(self) -> None:
        """In a forked child (from _after_fork_child): forget the parent's handles."""
        old = list(self._handles)
        self._lock = threading.Lock()
        self._tls = threading.local()
        self._handles = weakref.WeakSet()
        for h in old:
            h.dead = True
            h.release()

    # -- the calling thread's handle ------------------------------------------

    def _open_here(self) -> _Handle:
        if self._closed:
            raise Closed()
        out = ffi.new("flash_t **")
        _check(lib.flash_open(self._bname, self._flags, out), "flash_open %s" % self._name)
        h = _Handle(out[0])
        if self._sync_wait_ms is not None and not self._readonly:
            rc = lib.flash_sync_wait_set(h.ptr, self._sync_wait_ms)
            if rc:
                h.release()
                raise error_for(rc, "flash_sync_wait_set")
        with self._lock:
            closed = self._closed
            if not closed:
                self._handles.add(h)
        if closed:
            h.release()
            raise Closed()
        self._tls.h = h
        return h

    def _stale(self, h: _Handle) -> None:
        """The handle was closed under us (close() from another thread)."""
        h.busy = False
        h.release()
        with contextlib.suppress(AttributeError):
            del self._tls.h
        raise Closed()

    def _call(self, fn: Any, *args: Any) -> int:
        """fn(handle, *args) on the calling thread's handle; returns its rc."""
        try:
            h = self._tls.h
        except AttributeError:
            h = self._open_here()
        h.busy = True                   # (A) store busy, then (B) load dead
        if h.dead:
            self._stale(h)
        try:
            return fn(h.ptr, *args)
        finally:
            h.busy = False
            if h.dead:
                h.release()

    def _here(self) -> _Handle:
        try:
            return self._tls.h
        except AttributeError:
            return self._open_here()

    def slot(self) -> int:
        """This thread's handle's slot in the process table (-1: read-only)."""
        return self._call(lib.flash_slot)

    def recover(self) -> int:
        """flash_recover(): finish the operations of dead handles; returns how
        many dead handles were recovered."""
        out = self._here().u32
        _check(self._call(lib.flash_recover, out))
        return int(out[0])

    def seg_opts(self) -> SegOpts:
        """flash_seg_opts_get(): the options the segment was created with."""
        c = ffi.new("struct flash_seg_opts *")
        _check(self._call(lib.flash_seg_opts_get, c))
        return _opts_from_c(c)

    # -- catalog --------------------------------------------------------------

    def activity_add(self, a: Activity) -> None:
        """flash_activity_add()."""
        _check(self._call(lib.flash_activity_add, _activity_to_c(a)), "activity %d" % a.id)

    def sku_add(self, activity_id: int, sku_id: int, units: int, shards: int = 1) -> None:
        """flash_sku_add(): `units` of stock over `shards` stock slots."""
        _check(self._call(lib.flash_sku_add, activity_id, sku_id, units, shards))

    # -- terms and their versions -----------------------------------------------
    # An activity's terms (window, limit, max_qty, flags) and a sku's (its
    # price) carry a version that every change moves on.  A page shows the
    # versions with the terms (activity_get, sku_get); an order that names
    # them (order(activity_version=, sku_version=)) is refused Stale,
    # nothing taken, once either changed.

    def activity_get(self, activity_id: int) -> Activity:
        """flash_activity_get(): one activity's terms and their version
        (Activity.version).  Raises NotFound (none, or archived)."""
        c = ffi.new("struct flash_activity *")
        _check(self._call(lib.flash_activity_get, activity_id, c), "activity %d" % activity_id)
        return _activity_from_c(c)

    def activity_update(self, a: Activity) -> int:
        """flash_activity_update(): give live activity `a.id` the terms of `a`
        (window, limit_per_user, max_qty, flags) and return their new version.
        `a.version` 0 changes them whatever their version; the version read
        by activity_get() only if they are still at it, else Stale (another
        change came in between; nothing changed).  Raises InvalidArgument when scope or
        day_offset_s differ from the current ones or limit_per_user is lower
        (a limit may grow, never shrink), NotFound, Ended (being archived),
        Busy (nothing changed: retry), ...  Blocks briefly: it waits for the
        orders open in other handles (at most 2 s), buyers never wait for it."""
        out = self._here().u64
        _check(self._call(lib.flash_activity_update, _activity_to_c(a), out), "activity %d" % a.id)
        return int(out[0])

    def sku_price_set(self, activity_id: int, sku_id: int, price: int) -> int:
        """flash_sku_price_set(): set a sku's price (the shop's smallest unit,
        0..PRICE_MAX; a sku starts at 0) and return its terms' new version
        (moved on also for the same price: a republished page).  Raises
        NotFound, InvalidArgument, Busy, ...; blocks briefly as activity_update."""
        out = self._here().u64
        _check(self._call(lib.flash_sku_price_set, activity_id, sku_id, price, out),
               "sku %d/%d" % (activity_id, sku_id))
        return int(out[0])

    def activity_at(self, index: int) -> Activity:
        """flash_activity_at(): the catalog's index-th activity (NotFound past the end)."""
        c = ffi.new("struct flash_activity *")
        _check(self._call(lib.flash_activity_at, index, c))
        return _activity_from_c(c)

    def sku_at(self, index: int) -> SkuInfo:
        """flash_sku_at(): the catalog's index-th sku (NotFound past the end)."""
        c = ffi.new("struct flash_sku_info *")
        _check(self._call(lib.flash_sku_at, index, c))
        return _sku_from_c(c)

    def activities(self) -> Iterator[Activity]:
        """Every activity of the catalog, in index order."""
        i = 0
        while True:
            try:
                a = self.activity_at(i)
            except NotFound:
                return
            yield a
            i += 1

    def skus(self) -> Iterator[SkuInfo]:
        """Every sku of the catalog, in index order."""
        i = 0
        while True:
            try:
                s = self.sku_at(i)
            except NotFound:
                return
            yield s
            i += 1

    def sku_get(self, activity_id: int, sku_id: int) -> SkuInfo:
        """flash_sku_get(): total and available units of one sku."""
        c = ffi.new("struct flash_sku_info *")
        _check(self._call(lib.flash_sku_get, activity_id, sku_id, c))
        return _sku_from_c(c)

    # -- orders ---------------------------------------------------------------

    def order(self, activity_id: int, sku_id: int, user_id: int, qty: int = 1,
              token: int = 0, request_id: int = 0, reserve_ms: int = 0,
              activity_version: int = 0, sku_version: int = 0) -> OrderResult:
        """flash_order(): place an order.  Returns its OrderResult; raises
        SoldOut, LimitReached, NotStarted, Ended, BadToken, Duplicate (a known
        request id: .first_code, and .order_no when the first outcome was an
        order), FateUnknown (sync: placed, not yet durable: .order_no, .lsn),
        Stale, ... -- every refusal of flash_order() as its FlashError.
        reserve_ms: 0 places a plain order, ACTIVE at once; else a
        reservation, RESERVED (its units and limit slot held) until
        confirm() within that many ms (1..RESERVE_MS_MAX), expired after.
        activity_version, sku_version: 0 checks nothing; else the version
        of the activity's or the sku's terms the buyer saw (Activity.version,
        SkuInfo.version): once either changed the order raises Stale and
        takes nothing (token and request id untouched)."""
        try:
            h = self._tls.h
        except AttributeError:
            h = self._open_here()
        r = h.req                       # this thread's own request buffer
        r.activity_id = activity_id
        r.sku_id = sku_id
        r.user_id = user_id
        r.qty = qty
        r.reserve_ms = reserve_ms      # the buffer is reused: set every field
        r.token = token
        r.request_id = request_id
        r.activity_version = activity_version
        r.sku_version = sku_version
        h.busy = True                   # (A) store busy, then (B) load dead
        if h.dead:
            self._stale(h)
        s = h.res
        rc = _order(h.ptr, r, s)
        h.busy = False
        if h.dead:
            h.release()
        if rc:
            raise _order_error(rc, s)
        # OrderResult(...) without its frozen __init__ (a third of the cost
        # of a call): the slots' own descriptors set the fields
        o = _new_result(OrderResult)
        _set_order_no(o, s.order_no)
        _set_limit_slot(o, s.limit_slot)
        _set_lsn(o, s.lsn)
        return o

    def order_many(self, requests: Iterable[Sequence[int]]
                   ) -> List[Union[OrderResult, FlashError]]:
        """flash_order_many(): place a batch of orders in one call.  Each
        request is an OrderRequest (or a tuple of its fields in its order:
        activity_id, sku_id, user_id[, qty[, token[, request_id[, reserve_ms[,
        activity_version[, sku_version]]]]]]); each is
        judged and committed as order() would, one after another -- a later
        one sees the earlier ones (a user's second order meets its limit, a
        repeated request id is Duplicate).  Returns one item per request, in
        order: its OrderResult when placed, else the FlashError order() would
        have raised for it, returned, not raised (SoldOut, LimitReached,
        Stale, InvalidArgument for qty 0, Duplicate with .first_code and .order_no,
        FateUnknown with .order_no and .lsn -- in sync durability all the
        batch's placed orders are FateUnknown when its one wait fails): a
        refusal never stops the later orders.  Raises only for the call, with
        no order run: Closed, ReadOnly, ...; and TypeError or OverflowError,
        as order() does, for a request that is not one.  An empty batch
        returns [] (no library call; a closed object raises Closed)."""
        if not isinstance(requests, (list, tuple)):
            requests = list(requests)
        try:                            # every request whole: one pack each
            data = b"".join(_starmap(_pack_req, requests))
        except struct.error:
            data = _pack_slowly(requests)
        n = len(data) // _REQ_SIZE
        if n == 0:
            if self._closed:
                raise Closed()
            return []
        try:
            h = self._tls.h
        except AttributeError:
            h = self._open_here()
        if n <= h.many_cap:             # this thread's own arrays
            req, res, rcs = h.many_req, h.many_res, h.many_rcs
        else:
            req, res, rcs = _many_buffers(h, n)
        _memmove(req, data, len(data))
        h.busy = True                   # (A) store busy, then (B) load dead
        if h.dead:
            self._stale(h)
        rc = _order_many(h.ptr, req, n, res, rcs)
        h.busy = False
        if h.dead:
            h.release()
        if rc:
            raise error_for(rc)
        out: List[Union[OrderResult, FlashError]] = []
        add = out.append
        for rc, (order_no, first_rc, limit_slot, lsn) in zip(
                _unpack(rcs, n), _iter_res(_buffer(res, n * _RES_SIZE))):
            if rc:
                add(_refusal(rc, order_no, first_rc, limit_slot, lsn))
                continue
            o = _new_result(OrderResult)
            _set_order_no(o, order_no)
            _set_limit_slot(o, limit_slot)
            _set_lsn(o, lsn)
            add(o)
        return out

    def cart_order(self, activity_id: int, user_id: int,
                   lines: Sequence[Union[CartLine, Sequence[int]]], reserve_ms: int = 0,
                   token: int = 0, request_id: int = 0,
                   activity_version: int = 0) -> CartResult:
        """flash_cart_order(): place a cart -- 1..CART_LINES_MAX lines of
        distinct skus of one activity, each a CartLine or a tuple (sku_id,
        qty[, sku_version]) -- as one order, all or nothing: every line's
        units and one limit slot taken, or none.  Returns its CartResult
        (its number; its later lines hold the numbers after it: see
        order_lines()).  reserve_ms, token (for line 0's sku), request_id
        and activity_version are the cart's, as order() takes them;
        cancel(), confirm() and expire() of its number act on every line.
        Raises what order() raises; a refusal of one line (SoldOut, Stale,
        NotFound of its sku, InvalidArgument of its qty or a sku twice)
        carries its index in `.line`, and SoldOut every short line's in
        `.sold_out` (a list, .line among them).  An activity of Scope.SKU
        refuses carts: InvalidArgument."""
        lines = list(lines)
        if not 0 < len(lines) <= lib.FLASH_CART_LINES_MAX:
            raise InvalidArgument(lib.FLASH_EINVAL, "a cart of %d lines: 1 to %d"
                                  % (len(lines), lib.FLASH_CART_LINES_MAX))
        r = ffi.new("struct flash_cart_req *")
        r.activity_id = activity_id
        r.lines = len(lines)
        r.user_id = user_id
        r.reserve_ms = reserve_ms
        r.token = token
        r.request_id = request_id
        r.activity_version = activity_version
        for i, ln in enumerate(lines):
            x = CartLine(*ln)
            r.line[i].sku_id = x.sku_id
            r.line[i].qty = x.qty
            r.line[i].sku_version = x.sku_version
        s = ffi.new("struct flash_cart_res *")
        rc = self._call(lib.flash_cart_order, r, s)
        if rc:
            e = _refusal(rc, s.order_no, s.first_rc, s.limit_slot, s.lsn)
            e.line = int(s.line)  # type: ignore[attr-defined]
            if rc == _ESOLD_OUT:
                e.sold_out = [i for i in range(len(lines))  # type: ignore[attr-defined]
                              if s.sold_out >> i & 1]
            raise e
        return CartResult(int(s.order_no), int(s.limit_slot), int(s.lsn))

    def sync_wait_set(self, wait_ms: int) -> None:
        """flash_sync_wait_set() on the calling thread's handle.  For every
        thread's handle, give sync_wait_ms to flashstock.open() instead."""
        _check(self._call(lib.flash_sync_wait_set, wait_ms))

    def durable_wait(self, lsn: int, wait_ms: int) -> None:
        """flash_durable_wait(): wait until the record at `lsn` of the calling
        thread's handle is durable -- call it from the thread that placed the
        order (OrderResult.lsn, FateUnknown.lsn).  Raises FateUnknown if not
        within wait_ms."""
        _check(self._call(lib.flash_durable_wait, lsn, wait_ms))

    def cancel(self, order_no: int) -> int:
        """flash_cancel(): returns the units given back (a cart's number:
        every line's, the whole cart cancelled).  Raises Cancelled if
        it was cancelled already, FateUnknown (sync; .units_returned set)."""
        out = self._here().u32
        rc = self._call(lib.flash_cancel, order_no, out)
        if rc:
            e = error_for(rc)
            if rc == _EFATE_UNKNOWN:
                e.units_returned = int(out[0])  # type: ignore[attr-defined]
            raise e
        return int(out[0])

    # -- reservations -----------------------------------------------------------
    # An order placed with reserve_ms is RESERVED until exactly one of
    # confirm() (paid: ACTIVE), cancel() (CANCELLED) or an expiry at its
    # pay-by time (EXPIRED: units back) wins.  A confirm or a cancel that
    # comes after the pay-by time expires it and raises Expired.

    def confirm(self, order_no: int) -> None:
        """flash_confirm(): the reservation is paid: RESERVED -> ACTIVE.  An
        order ACTIVE already is answered the same (a retried payment
        callback).  Raises Expired when its pay-by time passed (it is
        expired now, its units back), Cancelled, NotFound, FateUnknown
        (sync: confirmed in memory, not yet durable), ..."""
        _check(self._call(lib.flash_confirm, order_no))

    def expire(self, order_no: int) -> int:
        """flash_expire(): expire the reservation once its pay-by time has
        come; returns the units given back.  Raises NotDue before it,
        Confirmed for an ACTIVE order, Expired when expired already (nothing
        given back), Cancelled, FateUnknown (sync; .units_returned set)."""
        out = self._here().u32
        rc = self._call(lib.flash_expire, order_no, out)
        if rc:
            e = error_for(rc)
            if rc == _EFATE_UNKNOWN:
                e.units_returned = int(out[0])  # type: ignore[attr-defined]
            raise e
        return int(out[0])

    def expire_due(self, max: int = 0) -> int:  # noqa: A002 -- flash_expire_due's name
        """flash_expire_due(): expire every reservation of the segment whose
        pay-by time has come, at most `max` (0: no bound) -- what a process
        without a daemon (`flashstock serve` expires them itself) must do;
        returns how many this call expired.  Raises the first failure other
        than the races another handle won, with .expired: those expired
        before it."""
        out = self._here().u32
        rc = self._call(lib.flash_expire_due, max, out)
        if rc:
            e = error_for(rc)
            e.expired = int(out[0])  # type: ignore[attr-defined]
            raise e
        return int(out[0])

    def restock(self, activity_id: int, sku_id: int, delta: int) -> None:
        """flash_restock(): add (delta > 0) or remove (delta < 0) unsold units."""
        _check(self._call(lib.flash_restock, activity_id, sku_id, delta))

    # -- tokens ---------------------------------------------------------------

    def token_issue(self, activity_id: int, sku_id: int, user_id: int, ttl_ms: int) -> int:
        """flash_token_issue(): a one-time token valid for ttl_ms."""
        out = self._here().u64
        _check(self._call(lib.flash_token_issue, activity_id, sku_id, user_id, ttl_ms, out))
        return int(out[0])

    def token_redeem(self, activity_id: int, sku_id: int, user_id: int, token: int) -> None:
        """flash_token_redeem(): use the token up outside an order (BadToken if not live)."""
        _check(self._call(lib.flash_token_redeem, activity_id, sku_id, user_id, token))

    # -- leased locks ---------------------------------------------------------

    def lock_acquire(self, name: str, owner: int, lease_ms: int) -> int:
        """flash_lock_acquire(): returns the grant's fencing token; Locked if held."""
        out = self._here().u64
        _check(self._call(lib.flash_lock_acquire, name.encode(), owner, lease_ms, out), name)
        return int(out[0])

    def lock_renew(self, name: str, owner: int, lease_ms: int) -> None:
        """flash_lock_renew(): extend the holder's lease; NotOwner otherwise."""
        _check(self._call(lib.flash_lock_renew, name.encode(), owner, lease_ms), name)

    def lock_release(self, name: str, owner: int) -> None:
        """flash_lock_release(): release, only for the holder."""
        _check(self._call(lib.flash_lock_release, name.encode(), owner), name)

    @contextlib.contextmanager
    def lock(self, name: str, owner: int, lease_ms: int) -> Iterator[int]:
        """`with fs.lock(name, owner, lease_ms) as fence:` -- acquire, release at the end."""
        fence = self.lock_acquire(name, owner, lease_ms)
        try:
            yield fence
        finally:
            self.lock_release(name, owner)

    # -- reading state --------------------------------------------------------

    def order_get(self, order_no: int) -> OrderInfo:
        """flash_order_get(): one order (state NONE for a number never completed)."""
        c = ffi.new("struct flash_order_info *")
        _check(self._call(lib.flash_order_get, order_no, c))
        return _order_info_from_c(c)

    def order_lines(self, order_no: int) -> List[OrderInfo]:
        """flash_order_lines(): every line of order `order_no`, in line order
        -- one for a plain order, 2..16 for a cart (each line's sku_id, qty
        and line; the cart's number, state and other fields).  Raises
        NotFound for a number that holds no order, also for the number of a
        cart's later line (the cart is order_no - line)."""
        cap = lib.FLASH_CART_LINES_MAX
        c = ffi.new("struct flash_order_info[]", cap)
        n = self._here().u32
        _check(self._call(lib.flash_order_lines, order_no, c, cap, n))
        return [_order_info_from_c(c[i]) for i in range(min(int(n[0]), cap))]

    def orders_max(self) -> int:
        """flash_orders_max(): the highest order number taken so far."""
        return int(self._call(lib.flash_orders_max))

    def stats(self) -> Stats:
        """flash_stats_get(): counters summed over every handle, and fill levels."""
        c = ffi.new("struct flash_stats *")
        _check(self._call(lib.flash_stats_get, c))
        vals = {f: getattr(c, f) for f in _STATS_FIELDS}
        vals["durability"] = Durability(vals["durability"])
        return Stats(**vals)

    def ident(self) -> Ident:
        """flash_ident_get(): the identity the segment shares with its WAL."""
        c = ffi.new("struct flash_ident *")
        _check(self._call(lib.flash_ident_get, c))
        return Ident(c.incarnation, c.wal_lsn, c.consumer_pid, c.consumer_slot)

    def quiet(self) -> Quiet:
        """flash_quiet_get(): the segment's activity (is it quiet?)."""
        c = ffi.new("struct flash_quiet *")
        _check(self._call(lib.flash_quiet_get, c))
        return Quiet(c.ops, c.consumed, c.pending, c.in_flight)


    def obs(self) -> Obs:
        """flash_obs_get(): the engine's observation figures summed over every
        slot of the segment (a reader's view, slot by slot): per operation its
        latency histogram and its calls per result code, and the lock wait
        and hold histograms.  The calling thread's handle first adds its own
        newest call; other handles' newest calls show once they make their
        next call or close."""
        c = ffi.new("struct flash_obs *")
        _check(self._call(lib.flash_obs_get, c))
        ops = {}
        for op in range(lib.FLASH_OP_COUNT):
            res = c.results[op]
            results = {_OBS_CODE_NAMES[i]: int(res[i])
                       for i in range(lib.FLASH_OBS_CODES) if res[i]}
            name = ffi.string(lib.flash_op_name(op)).decode()
            ops[name] = OpObs(name, _hist_from_c(c.time[op]), results)
        return Obs(ops, _hist_from_c(c.time[lib.FLASH_TIME_LOCK_WAIT]),
                   _hist_from_c(c.time[lib.FLASH_TIME_LOCK_HOLD]))


def _order_info_from_c(c: Any) -> OrderInfo:
    return OrderInfo(c.order_no, c.user_id, c.activity_id, c.sku_id, c.qty,
                     OrderState(c.state), c.limit_slot, c.biz_day, c.created_ns,
                     c.pay_by_ns, c.line, c.lines)


def _hist_from_c(h: Any) -> Histogram:
    return Histogram(tuple(zip(OBS_BUCKET_LE_NS, (int(x) for x in h.bucket))),
                     int(h.count), int(h.sum_ns))


def _obs_code_name(i: int) -> str:
    """results[op][i] -> the name of code -i; the last index counts every
    code at or below it (FLASH_OBS_CODES), an index without a code its number"""
    if i == lib.FLASH_OBS_CODES - 1:
        return "<=-%d" % i
    name = rcname(-i)
    return name if name != rcname(-10000) else str(-i)


_OBS_CODE_NAMES = [_obs_code_name(i) for i in range(lib.FLASH_OBS_CODES)]

_order = lib.flash_order
_new_result = OrderResult.__new__
_set_order_no = OrderResult.order_no.__set__  # type: ignore[attr-defined]
_set_limit_slot = OrderResult.limit_slot.__set__  # type: ignore[attr-defined]
_set_lsn = OrderResult.lsn.__set__  # type: ignore[attr-defined]
_STATS_FIELDS = list(Stats.__dataclass_fields__)


def _order_error(rc: int, res: Any) -> FlashError:
    return _refusal(rc, res.order_no, res.first_rc, res.limit_slot, res.lsn)


def _refusal(rc: int, order_no: int, first_rc: int, limit_slot: int, lsn: int) -> FlashError:
    """The error of an order's outcome rc, with the fields of its struct
    flash_order_res that rc gives a meaning."""
    e = error_for(rc)
    if rc == _EDUPLICATE:
        e.first_code = first_rc  # type: ignore[attr-defined]
        if first_rc == 0:
            e.order_no = order_no  # type: ignore[attr-defined]
            e.limit_slot = limit_slot  # type: ignore[attr-defined]
    elif rc == _EFATE_UNKNOWN:
        e.order_no = order_no  # type: ignore[attr-defined]
        e.limit_slot = limit_slot  # type: ignore[attr-defined]
        e.lsn = lsn  # type: ignore[attr-defined]
    return e


# order_many moves a batch in and out of C with the struct module: one pack
# per request and one unpack per result, where cffi's field-by-field access
# costs a call per field.  The formats are the structs' fields in order,
# with no padding between them; checked here against the C compiler's
# offsets and sizes, so a layout that differs fails the import.
_REQ_CODES = ("I", "I", "Q", "I", "I", "Q", "Q", "Q", "Q")    # struct flash_order_req
_RES_CODES = ("Q", "i", "I", "Q")                   # struct flash_order_res


def _packs_as(sname: str, codes: Sequence[str]) -> bool:
    fields = ffi.typeof("struct " + sname).fields
    off = 0
    for (_, f), code in zip(fields, codes):
        size = struct.calcsize("=" + code)
        if f.offset != off or ffi.sizeof(f.type) != size:
            return False
        off += size
    return len(fields) == len(codes) and off == ffi.sizeof("struct " + sname)


if not (_packs_as("flash_order_req", _REQ_CODES) and _packs_as("flash_order_res", _RES_CODES)):
    raise ImportError("flashstock: struct flash_order_req/res layout differs from the "
                      "packing formats of order_many")
_pack_c_req = struct.Struct("=" + "".join(_REQ_CODES)).pack


def _pack_req(activity_id: int, sku_id: int, user_id: int, qty: int = 1, token: int = 0,
              request_id: int = 0, reserve_ms: int = 0, activity_version: int = 0,
              sku_version: int = 0) -> bytes:
    """One request in OrderRequest's order (reserve_ms after request_id),
    packed in the struct's (reserve_ms after qty); a short tuple takes
    OrderRequest's defaults.  (The function call costs a few ns a request
    against a pack of the tuple as it is.)"""
    return _pack_c_req(activity_id, sku_id, user_id, qty, reserve_ms, token, request_id,
                       activity_version, sku_version)


_REQ_SIZE = struct.calcsize("=" + "".join(_REQ_CODES))
_iter_res = struct.Struct("=" + "".join(_RES_CODES)).iter_unpack
_RES_SIZE = struct.calcsize("=" + "".join(_RES_CODES))
_starmap = itertools.starmap
_order_many = lib.flash_order_many
_memmove = ffi.memmove
_unpack = ffi.unpack
_buffer = ffi.buffer

# a thread keeps order_many's arrays for batches up to this many orders;
# a larger batch has arrays of its own for the call
_MANY_KEEP = 1024


def _many_buffers(h: _Handle, n: int) -> Any:
    """Request, result and outcome arrays for a batch of n orders: the
    thread's own, grown (to a power of two) up to _MANY_KEEP orders."""
    if n > _MANY_KEEP:
        return (ffi.new("struct flash_order_req[]", n), ffi.new("struct flash_order_res[]", n),
                ffi.new("int[]", n))
    cap = 16
    while cap < n:
        cap *= 2
    h.many_req = ffi.new("struct flash_order_req[]", cap)
    h.many_res = ffi.new("struct flash_order_res[]", cap)
    h.many_rcs = ffi.new("int[]", cap)
    h.many_cap = cap
    return h.many_req, h.many_res, h.many_rcs


def _pack_slowly(requests: Sequence[Sequence[int]]) -> bytes:
    """The requests the one-pack path could not take: a value that is not
    an integer of its field's C type -- converted field by field as order()
    converts its arguments, so it raises what order() raises (TypeError,
    OverflowError)."""
    c = ffi.new("struct flash_order_req *")
    b = ffi.buffer(c)
    parts = []
    for q in requests:
        r = OrderRequest(*q)
        c.activity_id = r.activity_id
        c.sku_id = r.sku_id
        c.user_id = r.user_id
        c.qty = r.qty
        c.reserve_ms = r.reserve_ms
        c.token = r.token
        c.request_id = r.request_id
        c.activity_version = r.activity_version
        c.sku_version = r.sku_version
        parts.append(b[:])
    return b"".join(parts)


# ---------------------------------------------------------------- 4. fork

def _after_fork_child() -> None:
    """Runs in the child of os.fork() before anything else: the child has one
    thread, so no lock is needed, and every lock a parent thread held is
    made anew.  Each inherited handle is released with flash_close(), which
    in a forked child only unmaps (the parent's slot is left alone)."""
    global _close_lock
    _close_lock = threading.Lock()
    for fs in list(_live):
        fs._forked()


_os.register_at_fork(after_in_child=_after_fork_child)


def _at_exit() -> None:
    """Objects still open when the interpreter exits give their slots back
    (a thread still inside a call keeps its handle: its process's death
    frees it, through recovery)."""
    for fs in list(_live):
        fs.close()


atexit.register(_at_exit)
