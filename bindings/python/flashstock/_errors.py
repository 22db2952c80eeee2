"""flashstock._errors -- the one error space of flashstock as Python exceptions.

Every call of the C library returns 0 or a negative FLASH_E* code.  The
binding raises `FlashError` (or a subclass) for every negative code: the
exception carries the code (`.code`) and its symbolic name (`.name`, from
flash_rcname(), e.g. "FLASH_ESOLD_OUT"); str() adds flash_strerror().

The common refusals have their own subclasses, found by code.  A code
without one -- including codes added to the library after this module was
written (the WAL's -100.., the snapshots' -130..) -- raises the base class
itself, still with its code and the library's name for it: the list below
is never the list of codes that exist.

Divisions: 1. base class  2. named refusals  2a. the order feed's
3. code -> class
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple, Type, Union

from ._native import ffi, lib
from ._types import OrderResult

__all__ = [
    "FlashError", "SoldOut", "LimitReached", "NotStarted", "Ended", "NotFound",
    "BadToken", "Duplicate", "Full", "InvalidArgument", "DurabilityFailed",
    "Exists", "NoSegment", "AttachError", "ReadOnly", "Fork", "Cancelled",
    "Locked", "NotOwner", "Busy", "NoProc", "PermissionDenied", "NoMemory",
    "SystemFailure", "WrongThread", "FateUnknown", "RequestExpired", "Corrupt", "Closed",
    "OwnerMismatch", "BadMode", "BadSize", "BadMagic", "BadVersion", "BadChecksum",
    "BadLayout", "NotRegular", "Timeout", "Lost", "Ahead", "FeedIdentMismatch",
    "RefillUnavailable", "FeedInUse", "Expired", "NotDue", "Confirmed", "Stale", "error_for",
]


# ---------------------------------------------------------------- 1. base class

class FlashError(Exception):
    """A flashstock call failed.  `.code` is the negative FLASH_E* code and
    `.name` its name ("FLASH_ESOLD_OUT"), both straight from the library.
    A named subclass may be made without a code (`SoldOut()`: its own code,
    e.g. for a test double); FlashError itself needs one."""

    code: int
    name: str

    def __init__(self, code: Optional[int] = None, detail: Optional[str] = None) -> None:
        if code is None:
            macro = getattr(type(self), "CODE", "")
            if not macro or not hasattr(lib, macro):
                raise TypeError("%s() needs a code" % type(self).__name__)
            code = int(getattr(lib, macro))
        self.code = code
        try:
            self.name, msg = _TEXT[code]
        except KeyError:
            self.name, msg = _text(code)
        self.detail = detail
        if detail:
            msg += " (%s)" % detail
        super().__init__(msg)

    def __reduce__(self):  # pickles (multiprocessing results) as (class, code, detail)
        return (_rebuild, (type(self), self.code, self.detail, dict(self.__dict__)))


# code -> (flash_rcname, "NAME: flash_strerror"): a refusal such as SoldOut
# is the common outcome of a flash sale, so its exception is made without
# a call into the library after the first
_TEXT: Dict[int, Tuple[str, str]] = {}


def _text(code: int) -> Tuple[str, str]:
    name = ffi.string(lib.flash_rcname(code)).decode()
    text = (name, "%s: %s" % (name, ffi.string(lib.flash_strerror(code)).decode()))
    if len(_TEXT) < 4096:   # a bounded cache, whatever codes a caller makes up
        _TEXT[code] = text
    return text


def _rebuild(cls, code, detail, state):
    e = cls.__new__(cls)
    FlashError.__init__(e, code, detail)
    e.__dict__.update(state)
    return e


# ---------------------------------------------------------------- 2. named refusals
# Each names the macro it stands for in CODE; the code itself is the
# module's constant of that name (checked against the C compiler's).

class SoldOut(FlashError):
    """Not enough stock for this quantity (FLASH_ESOLD_OUT)."""
    CODE = "FLASH_ESOLD_OUT"


class LimitReached(FlashError):
    """The user holds the activity's per-user limit already (FLASH_ELIMIT)."""
    CODE = "FLASH_ELIMIT"


class NotStarted(FlashError):
    """The activity's window has not opened (FLASH_ENOT_STARTED)."""
    CODE = "FLASH_ENOT_STARTED"


class Ended(FlashError):
    """The activity's window has closed (FLASH_EENDED)."""
    CODE = "FLASH_EENDED"


class NotFound(FlashError, LookupError):
    """Unknown activity, sku, order or lock (FLASH_ENOT_FOUND)."""
    CODE = "FLASH_ENOT_FOUND"


class BadToken(FlashError):
    """Token missing, unknown, expired, reused or for other goods (FLASH_EBAD_TOKEN)."""
    CODE = "FLASH_EBAD_TOKEN"


class Duplicate(FlashError):
    """The request id was seen before (FLASH_EDUPLICATE): the first outcome
    of that request.  `.first` is its class: OrderResult when it was a placed
    order -- then `.order_no` and `.limit_slot` are that order's and
    `.first_ok` is True -- else the exception class that outcome raised
    (SoldOut, LimitReached, ...; FlashError for a code without a class of
    its own), as error_for() would give it.  `.first_code` and
    `.first_name` are its code (0: placed) and name."""
    CODE = "FLASH_EDUPLICATE"
    first_code: int = 0
    order_no: int = 0
    limit_slot: int = 0

    @property
    def first(self) -> Union[Type[OrderResult], Type[FlashError]]:
        if self.first_code == 0:
            return OrderResult
        return _BY_CODE.get(self.first_code, FlashError)

    @property
    def first_ok(self) -> bool:
        return self.first_code == 0

    @property
    def first_name(self) -> str:
        return ffi.string(lib.flash_rcname(self.first_code)).decode()


class Full(FlashError):
    """A fixed-capacity table of the segment is full (FLASH_EFULL)."""
    CODE = "FLASH_EFULL"


class InvalidArgument(FlashError, ValueError):
    """Bad argument (FLASH_EINVAL)."""
    CODE = "FLASH_EINVAL"


class DurabilityFailed(FlashError):
    """The WAL failed; nothing more is acknowledged (FLASH_EDURABILITY)."""
    CODE = "FLASH_EDURABILITY"


class Exists(FlashError):
    """Segment, activity or sku already exists (FLASH_EEXIST)."""
    CODE = "FLASH_EEXIST"


class NoSegment(FlashError):
    """No segment of that name (FLASH_ENOSEG)."""
    CODE = "FLASH_ENOSEG"


class AttachError(FlashError):
    """The object under the name is not a segment this process may attach:
    the base of one class per check of flash_open()."""
    CODE = ""


class OwnerMismatch(AttachError):
    CODE = "FLASH_EOWNER"


class BadMode(AttachError):
    CODE = "FLASH_EMODE"


class BadSize(AttachError):
    CODE = "FLASH_ESIZE"


class BadMagic(AttachError):
    CODE = "FLASH_EMAGIC"


class BadVersion(AttachError):
    CODE = "FLASH_EVERSION"


class BadChecksum(AttachError):
    CODE = "FLASH_ECHECKSUM"


class BadLayout(AttachError):
    CODE = "FLASH_ELAYOUT"


class NotRegular(AttachError):
    CODE = "FLASH_ENOTREG"


class Corrupt(FlashError):
    """An index read from the segment is out of bounds (FLASH_ECORRUPT)."""
    CODE = "FLASH_ECORRUPT"


class ReadOnly(FlashError):
    """A write call on a read-only handle (FLASH_EREADONLY)."""
    CODE = "FLASH_EREADONLY"


class Fork(FlashError):
    """A handle used in a process other than its opener (FLASH_EFORK).  The
    binding drops its handles in a forked child, so it never raises this."""
    CODE = "FLASH_EFORK"


class Cancelled(FlashError):
    """The order is cancelled already: no units returned (FLASH_ECANCELLED)."""
    CODE = "FLASH_ECANCELLED"


class Locked(FlashError):
    """The lock is held by another live owner (FLASH_ELOCKED)."""
    CODE = "FLASH_ELOCKED"


class NotOwner(FlashError):
    """Lock renew/release by a caller that does not hold it (FLASH_ENOT_OWNER)."""
    CODE = "FLASH_ENOT_OWNER"


class Busy(FlashError):
    """Record ring full, request in flight, or the consumer claim held
    elsewhere (FLASH_EBUSY); nothing was done: retry."""
    CODE = "FLASH_EBUSY"


class NoProc(FlashError):
    """The segment's process table is full: too many open handles
    (FLASH_ENOPROC).  Each thread that uses a FlashStock holds one."""
    CODE = "FLASH_ENOPROC"


class PermissionDenied(FlashError):
    """The operating system refused access (FLASH_EPERM)."""
    CODE = "FLASH_EPERM"


class NoMemory(FlashError):
    """Out of memory, e.g. the segment is larger than free /dev/shm (FLASH_ENOMEM)."""
    CODE = "FLASH_ENOMEM"


class SystemFailure(FlashError):
    """Another system call failed (FLASH_ESYS)."""
    CODE = "FLASH_ESYS"


class WrongThread(FlashError):
    """A handle used from a thread other than its opener (FLASH_EWRONG_THREAD).
    The binding keeps one handle per thread, so it never raises this."""
    CODE = "FLASH_EWRONG_THREAD"


class FateUnknown(FlashError):
    """Sync durability: the operation is done in memory but its record was
    not durable within the wait bound (FLASH_EFATE_UNKNOWN).  For an order,
    `.order_no`, `.limit_slot` and `.lsn` are set as for success: wait again
    with FlashStock.durable_wait(e.lsn, ...) from the same thread, or look
    the order up by number.  For a cancel or an expire, `.units_returned` is set."""
    CODE = "FLASH_EFATE_UNKNOWN"
    order_no: int = 0
    limit_slot: int = 0
    lsn: int = 0
    units_returned: int = 0


class RequestExpired(FlashError):
    """A windowed segment: the request id is older than the window, so its
    first outcome is no longer remembered (FLASH_EREQ_EXPIRED); nothing was
    changed.  Look the order up (flashstock order --request-id, MariaDB)."""
    CODE = "FLASH_EREQ_EXPIRED"
class Archived(FlashError):
    """The order's activity was archived (flash_archive): its slot was
    reclaimed; the order is in MariaDB and the WAL (FLASH_EARCHIVED)."""
    CODE = "FLASH_EARCHIVED"


class NotEnded(FlashError):
    """Archive of an activity whose window has not closed (FLASH_ENOT_ENDED):
    nothing changed."""
    CODE = "FLASH_ENOT_ENDED"


class Destroyed(FlashError):
    """The segment was destroyed (`flashstock destroy --force`) while this
    handle was attached (FLASH_EDESTROYED): nothing is acknowledged into it
    any more and nothing changed.  Close the object; open the name again if
    a new segment was made under it."""
    CODE = "FLASH_EDESTROYED"


class Expired(FlashError):
    """The reservation was not paid in time (FLASH_EEXPIRED): it is expired
    -- by this call, if nobody had -- and its units (and, per the activity,
    its limit slot) are back.  A confirm or cancel that came too late."""
    CODE = "FLASH_EEXPIRED"


class NotDue(FlashError):
    """expire() of a reservation whose pay-by time has not come
    (FLASH_ENOT_DUE): nothing changed."""
    CODE = "FLASH_ENOT_DUE"


class Confirmed(FlashError):
    """expire() of an ACTIVE order -- paid, or never a reservation
    (FLASH_ECONFIRMED): it does not expire; nothing changed."""
    CODE = "FLASH_ECONFIRMED"


class Stale(FlashError):
    """The terms changed since the version the buyer saw (FLASH_ESTALE): an
    order named an activity_version or sku_version that is no longer the
    current one.  Nothing was taken (no stock, no limit slot; the token and
    the request id are untouched): show the new terms, and order again
    naming their versions."""
    CODE = "FLASH_ESTALE"


class Closed(FlashError, ValueError):
    """The FlashStock object was closed (FLASH_EINVAL: no handle to use)."""
    CODE = ""

    def __init__(self, code: int = 0, detail: Optional[str] = None) -> None:
        super().__init__(lib.FLASH_EINVAL, detail or "the FlashStock object is closed")


# ---------------------------------------------------------------- 2a. the order feed's

class Timeout(FlashError):
    """Feed: no durable record arrived within wait_ms (FLASH_ETIMEOUT): the
    feed is idle; call again."""
    CODE = "FLASH_ETIMEOUT"


class Lost(FlashError):
    """Feed: WAL retention removed records the consumer had not committed and
    no refill source is set (FLASH_ELOST).  The position stays: open with
    mysql_url to refill the gap, or feed_drop() and register again."""
    CODE = "FLASH_ELOST"


class Ahead(FlashError):
    """Feed: the consumer's position is past the WAL's durable end while its
    writer runs -- the WAL was cut below it or replaced (FLASH_EAHEAD)."""
    CODE = "FLASH_EAHEAD"


class FeedIdentMismatch(FlashError):
    """Feed: the WAL belongs to another segment (incarnation) than the one the
    consumer registered on, or was replaced under the feed (FLASH_EFEED_IDENT)."""
    CODE = "FLASH_EFEED_IDENT"


class RefillUnavailable(FlashError):
    """Feed: the refill source (MariaDB) has not applied the lost range
    (FLASH_EREFILL)."""
    CODE = "FLASH_EREFILL"


class FeedInUse(Busy):
    """A Feed was called from a thread while another thread was inside one of
    its calls.  The C library's rule is "a flash_feed_t is used by one thread
    at a time"; the binding refuses the second caller instead of letting two
    threads share the records.  Its code is FLASH_EBUSY; no library call was
    made."""
    CODE = ""

    def __init__(self, code: int = 0, detail: Optional[str] = None) -> None:
        super().__init__(lib.FLASH_EBUSY,
                         detail or "the Feed is in a call on another thread "
                                   "(a feed is used by one thread at a time)")


# ---------------------------------------------------------------- 3. code -> class

def _classes() -> Dict[int, Type[FlashError]]:
    table: Dict[int, Type[FlashError]] = {}
    todo = list(FlashError.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        name = getattr(cls, "CODE", "")
        if name and hasattr(lib, name):
            table[getattr(lib, name)] = cls
    return table


_BY_CODE: Dict[int, Type[FlashError]] = _classes()


def error_for(code: int, detail: Optional[str] = None) -> FlashError:
    """The exception for result code `code` (negative): its named class when
    it has one, else FlashError itself, carrying the code and its name."""
    return _BY_CODE.get(code, FlashError)(code, detail)
