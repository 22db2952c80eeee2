"""flashstock._feed -- the order feed (api/flashstock.h section 10) from Python.

    with flashstock.Feed(wal_dir, "fulfilment", from_start=True) as feed:
        for r in feed.records(wait_ms=1000):     # stops when idle for 1 s
            ship(r)                              # idempotent by r.order_no / r.lsn
            feed.commit(r.lsn)

A `Feed` is one flash_feed_t: the records of a WAL directory (the one
`flashstock serve --wal DIR` writes) under a durable consumer name, in LSN
order, only durable ones, at least once (a record comes again after a
restart until a commit covers its LSN).

Thread and fork rules (the header's "Synchronization" of section 10):

  - A flash_feed_t is used by one thread at a time, with no lock inside.
    Unlike a segment handle it is not bound to the thread that opened it,
    so a Feed may be passed between threads; but a call made while another
    thread is inside one (a next() waiting for records, say) raises
    FeedInUse at once instead of entering the library.  close() is the
    exception: it waits for a running call to return (at most its wait_ms),
    then closes.
  - Not after fork(): in a child made by os.fork() every Feed inherited from
    the parent is dropped by an os.register_at_fork() hook (no library call:
    the parent still owns the feed and its consumer lock); using it there
    raises Fork.  The child opens its own Feed -- under the same consumer
    name only once the parent closed its own (one open per name at a time,
    over all processes: Busy otherwise).
  - A Feed does not pickle: a consumer's position belongs to one open.

Divisions: 1. conversions  2. Feed  3. module-level calls  4. fork
"""
from __future__ import annotations

import os as _os
import threading
import weakref
from typing import Any, Iterator, List, Optional

from ._errors import Closed, FeedInUse, Timeout, error_for
from ._native import ffi, lib
from ._types import FeedInfo, FeedMissing, FeedRecord, FeedSource, FeedState, RecordType

__all__ = ["Feed", "feed_list", "feed_drop"]

_ETIMEOUT = lib.FLASH_ETIMEOUT

# every struct the module mirrors, used once so a size mismatch fails the import
for _s in ("flash_record", "flash_feed_opts", "flash_feed_rec", "flash_feed_info"):
    ffi.typeof("struct " + _s).fields
del _s


def _check(rc: int, detail: Optional[str] = None) -> None:
    if rc:
        raise error_for(rc, detail)


# ---------------------------------------------------------------- 1. conversions

# a record type or source a newer library adds stays a plain int instead of
# failing the read (as an unknown result code stays a FlashError)
_TYPES = {int(t): t for t in RecordType}
_SOURCES = {int(s): s for s in FeedSource}


def _record_from_c(c: Any) -> FeedRecord:
    x = c.fr_rec
    return FeedRecord(c.fr_lsn, c.fr_seq, _TYPES.get(x.type, x.type), x.slot, x.activity_id,
                      x.sku_id, x.qty, x.order_no, x.user_id, x.value, x.ts_ns, x.biz_day,
                      x.limit_slot, x.flags, x.request_id,
                      _SOURCES.get(c.fr_source, c.fr_source), FeedMissing(c.fr_missing),
                      c.fr_gap)


def _info_from_c(c: Any) -> FeedInfo:
    return FeedInfo(ffi.string(c.fi_name).decode(), FeedState(c.fi_state), bool(c.fi_open),
                    c.fi_committed_lsn, c.fi_durable_lsn, c.fi_first_lsn, c.fi_lag_records,
                    c.fi_lag_ns, c.fi_created_ns, c.fi_commit_ns)


# ---------------------------------------------------------------- 2. Feed

# every Feed alive, for the fork hook
_live: "weakref.WeakSet[Feed]" = weakref.WeakSet()


class Feed:
    """The order feed of WAL directory `wal_dir` for consumer `consumer`
    (flash_feed_open).  A consumer seen for the first time is registered:
    at the WAL's durable end, or with from_start=True at the oldest record
    still kept (no_create=True: an unknown consumer raises NotFound
    instead); a registered one resumes after its committed position.
    mysql_url (mysql://user:pass@host/db?socket=PATH) is the refill source
    for a range retention removed, mysql_stream the applier's stream
    (default "wal").  Raises NotFound, Busy (the name is open elsewhere),
    FeedIdentMismatch, InvalidArgument (bad name), ...

    Use it as a context manager or close() it; nothing is committed
    implicitly.  One thread at a time (see the module's documentation)."""

    def __init__(self, wal_dir: str, consumer: str, *, from_start: bool = False,
                 no_create: bool = False, mysql_url: Optional[str] = None,
                 mysql_stream: Optional[str] = None) -> None:
        self._wal_dir = wal_dir
        self._consumer = consumer
        self._ptr: Any = None
        self._forked = False
        # held for the duration of each library call; never blocking except
        # in close() (see FeedInUse)
        self._busy = threading.Lock()
        o = ffi.new("struct flash_feed_opts *")
        lib.flash_feed_opts_default(o)
        o.from_start = 1 if from_start else 0
        o.no_create = 1 if no_create else 0
        keep = []                       # the C strings live until the open returns
        if mysql_url is not None:
            keep.append(ffi.new("char[]", mysql_url.encode()))
            o.mysql_url = keep[-1]
        if mysql_stream is not None:
            keep.append(ffi.new("char[]", mysql_stream.encode()))
            o.mysql_stream = keep[-1]
        out = ffi.new("flash_feed_t **")
        _check(lib.flash_feed_open(wal_dir.encode(), consumer.encode(), o, out),
               "feed %s of %s" % (consumer, wal_dir))
        self._ptr = out[0]
        self._rec = ffi.new("struct flash_feed_rec *")  # next()'s buffer
        _live.add(self)

    # -- the object -----------------------------------------------------------

    @property
    def wal_dir(self) -> str:
        return self._wal_dir

    @property
    def consumer(self) -> str:
        return self._consumer

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def __enter__(self) -> "Feed":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<Feed %r of %r%s>" % (self._consumer, self._wal_dir,
                                      " closed" if self._ptr is None else "")

    def __reduce__(self) -> Any:
        raise TypeError("a Feed does not pickle: open the consumer in the other process")

    def close(self) -> None:
        """flash_feed_close(): no implicit commit -- what was not committed
        is handed out again after the next open.  Waits for a call running on
        another thread to return first.  Calling it again does nothing."""
        with self._busy:
            ptr, self._ptr = self._ptr, None
            if ptr is not None and not self._forked:
                lib.flash_feed_close(ptr)

    def __del__(self) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr is not None and not self._forked:
            self._ptr = None
            lib.flash_feed_close(ptr)

    def _enter(self) -> Any:
        """Take the feed for one call: its pointer, the busy lock held."""
        if not self._busy.acquire(blocking=False):
            raise FeedInUse()
        if self._ptr is None:
            self._busy.release()
            if self._forked:
                raise error_for(lib.FLASH_EFORK, "a Feed is not usable after fork(): open "
                                                 "one in the child")
            raise Closed(detail="the Feed is closed")
        return self._ptr

    # -- records --------------------------------------------------------------

    def next(self, wait_ms: int = 0) -> FeedRecord:
        """flash_feed_next(): the next record, waiting at most wait_ms for one
        to become durable (0: do not wait; the GIL is released meanwhile).
        Raises Timeout when none came (the feed is idle: call again), Lost,
        RefillUnavailable, Ahead, FeedIdentMismatch, Corrupt, ..."""
        p = self._enter()
        try:
            rc = lib.flash_feed_next(p, self._rec, wait_ms)
            if rc:
                raise error_for(rc)
            return _record_from_c(self._rec)
        finally:
            self._busy.release()

    def records(self, wait_ms: int = 0, *, follow: bool = False) -> Iterator[FeedRecord]:
        """Every record from here on, each waited for at most wait_ms: the
        iteration ends at the first wait that times out -- or, with
        follow=True, never (it waits again).  Other errors are raised."""
        while True:
            try:
                r = self.next(wait_ms)
            except Timeout:
                if follow:
                    continue
                return
            yield r

    def __iter__(self) -> Iterator[FeedRecord]:
        """The records durable now (records(0))."""
        return self.records(0)

    def commit(self, lsn: int) -> None:
        """flash_feed_commit(): every record with an LSN <= lsn is processed;
        durable when it returns (a later open resumes at lsn + 1).  lsn is at
        most the last LSN returned and not below the committed position (equal
        is a no-op): InvalidArgument otherwise."""
        p = self._enter()
        try:
            _check(lib.flash_feed_commit(p, lsn), "commit %d" % lsn)
        finally:
            self._busy.release()

    def rewind(self) -> None:
        """flash_feed_rewind(): the next next() returns again the record after
        the committed position."""
        p = self._enter()
        try:
            _check(lib.flash_feed_rewind(p))
        finally:
            self._busy.release()

    def info(self) -> FeedInfo:
        """flash_feed_info_get(): this consumer's state, as feed_list() shows it
        (committed_lsn is the committed position, not what was returned)."""
        p = self._enter()
        try:
            c = ffi.new("struct flash_feed_info *")
            _check(lib.flash_feed_info_get(p, c))
            return _info_from_c(c)
        finally:
            self._busy.release()


# ---------------------------------------------------------------- 3. module-level calls

def feed_list(wal_dir: str) -> List[FeedInfo]:
    """flash_feed_list(): every consumer registered in wal_dir, sorted by name,
    with its state, positions and lag ([] when none).  NotFound: no such
    WAL directory.  Lock-free; reads only."""
    n = ffi.new("size_t *")
    cap = 0
    arr: Any = ffi.NULL
    while True:
        _check(lib.flash_feed_list(wal_dir.encode(), arr, cap, n), wal_dir)
        if n[0] <= cap:
            return [_info_from_c(arr[i]) for i in range(n[0])]
        cap = n[0] + 4                  # consumers registered meanwhile: room for a few
        arr = ffi.new("struct flash_feed_info[]", cap)


def feed_drop(wal_dir: str, consumer: str) -> None:
    """flash_feed_drop(): unregister consumer (its position goes; retention no
    longer keeps WAL for it).  NotFound; Busy while it is open."""
    _check(lib.flash_feed_drop(wal_dir.encode(), consumer.encode()),
           "feed %s of %s" % (consumer, wal_dir))


# ---------------------------------------------------------------- 4. fork

def _after_fork_child() -> None:
    """In the child of os.fork(), before anything else runs: one thread, so
    no lock is needed; each busy lock is made anew (a parent thread may have
    held it).  The parent's feeds are forgotten without a library call."""
    for f in list(_live):
        f._forked = True
        f._ptr = None
        f._busy = threading.Lock()


_os.register_at_fork(after_in_child=_after_fork_child)
