// errors.go -- flashstock's one error space in Go: every negative FLASH_E*
// code is an *Error carrying the code and its flash_rcname(); the common
// refusals are sentinel values to compare with errors.Is; the two outcomes
// that carry a result (a duplicate request's first outcome, a sync order's
// receipt whose fate is unknown) are *DuplicateError and *FateUnknownError,
// for errors.As, which match their sentinels under errors.Is.
package flashstock

/*
#include <flashstock.h>
*/
import "C"

import (
	"errors"
	"strconv"
)

// Error is a flashstock result code.  Code is the negative FLASH_E* value,
// Name its symbolic name (flash_rcname: "FLASH_ESOLD_OUT", or "FLASH_E?"
// for a code this library does not know), Msg its flash_strerror().
//
// Two *Error values match under errors.Is when their codes are equal, so
// errors.Is(err, flashstock.ErrSoldOut) holds for every sold-out refusal,
// and errors.As(err, &e) gives the code of any.  The two outcomes that
// come with a result are errors of their own types, which match the same
// way: *DuplicateError (the first outcome) and *FateUnknownError (the
// receipt, and the context's error it unwraps to).
type Error struct {
	Code int
	Name string
	Msg  string
}

func (e *Error) Error() string { return "flashstock: " + e.Name + ": " + e.Msg }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// codeSpan bounds the codes looked up once at start: every code from -1 to
// -codeSpan that flash_rcname knows gets one shared *Error, so that a
// refusal on the order path allocates nothing.  The list is the library's,
// read at run time, never a copy of it: codes added in new ranges are
// picked up as long as they lie within the span, and any other code still
// maps to an *Error with its code and name (CodeError).
const codeSpan = 512

var codeTable = buildCodeTable()

func buildCodeTable() []*Error {
	t := make([]*Error, codeSpan+1)
	for i := 1; i <= codeSpan; i++ {
		if name := RCName(-i); name != "FLASH_E?" {
			t[i] = &Error{Code: -i, Name: name, Msg: Strerror(-i)}
		}
	}
	return t
}

// CodeError returns the error for result code rc: nil for FLASH_OK, the
// shared *Error of a known code, or a new *Error carrying any other code
// (Name "FLASH_E?" when the library does not know it).
func CodeError(rc int) error {
	if rc == 0 {
		return nil
	}
	return codeErr(rc)
}

func codeErr(rc int) *Error {
	if rc < 0 && -rc <= codeSpan {
		if e := codeTable[-rc]; e != nil {
			return e
		}
	}
	return &Error{Code: rc, Name: RCName(rc), Msg: Strerror(rc)}
}

// codeError is CodeError for a C result.
func codeError(rc C.int) error {
	if rc == 0 {
		return nil
	}
	return codeErr(int(rc))
}

// ErrClosed is returned by a call on a Handle or Pinned after Close.  It is
// the binding's own, not a flashstock result code.
var ErrClosed = errors.New("flashstock: handle closed")

// ErrRunReentry is returned by a method of a Handle called from inside a
// function that Handle's Run is running, on Run's goroutine: the worker
// running the function is the one such a call would wait for (Close,
// DurableWait of its orders, Obs, SetSyncWait) or, with one worker, the
// only one there is, so the call would never return.  Nothing is done.
// Use the *Pinned that Run lends instead.  The binding's own error.
var ErrRunReentry = errors.New("flashstock: Handle method called inside its own Run: use the Pinned Run lends")

// DuplicateError is the error of an order whose request id was seen
// before (FLASH_EDUPLICATE): nothing was taken, and the fields give the
// first outcome of that request id.  errors.Is(err, ErrDuplicate) holds,
// and errors.As(err, &fe) with fe a *Error gives ErrDuplicate's code, as
// for every refusal; errors.As(err, &de) with de a *DuplicateError gives
// the first outcome.  It is a new value per refusal (retries are rare:
// the refusals of the order path stay shared values).
type DuplicateError struct {
	FirstRC   int32  // the first outcome's result code: 0 placed, else a FLASH_E* code
	OrderNo   uint64 // the first outcome's order number when it was placed (FirstRC 0)
	LimitSlot uint32 // its limit slot, as OrderRes.LimitSlot
	Slot      int    // process-table slot of the native handle that answered
}

func (e *DuplicateError) Error() string {
	s := "flashstock: FLASH_EDUPLICATE: " + ErrDuplicate.Msg + ": first outcome "
	if e.FirstRC == 0 {
		return s + "placed, order " + strconv.FormatUint(e.OrderNo, 10)
	}
	return s + RCName(int(e.FirstRC))
}

// First is the first outcome as an error: nil when it was placed, else
// the *Error of FirstRC (errors.Is(e.First(), ErrSoldOut), ...).
func (e *DuplicateError) First() error { return CodeError(int(e.FirstRC)) }

// Is reports whether target is ErrDuplicate (an *Error of its code) or a
// *DuplicateError with the same first outcome.
func (e *DuplicateError) Is(target error) bool {
	if t, ok := target.(*DuplicateError); ok {
		return *t == *e
	}
	return ErrDuplicate.Is(target)
}

// Unwrap returns ErrDuplicate, so that errors.As(err, &fe) finds its *Error.
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// FateUnknownError is the error of a sync call whose wait for the record
// to be durable ended first (FLASH_EFATE_UNKNOWN): the operation was done
// in memory and is not yet known durable.  Receipt is the order's --
// filled as for success by Order and OrderMany (and DurableWait, the one
// it was given), so that DurableWait(ctx, e.Receipt) learns the fate later
// -- and zero for Cancel, Confirm, Expire, ExpireDue and Restock.  errors.Is(err, ErrFateUnknown)
// holds, errors.As(err, &fe) with fe a *Error gives ErrFateUnknown, and
// the error unwraps to its cause: context.DeadlineExceeded or
// context.Canceled when a context ended the wait (nil when the handle's
// own bound did).
type FateUnknownError struct {
	Receipt Receipt
	cause   error
}

func (e *FateUnknownError) Error() string {
	s := "flashstock: FLASH_EFATE_UNKNOWN: " + ErrFateUnknown.Msg
	if e.Receipt.OrderNo != 0 {
		s += ": order " + strconv.FormatUint(e.Receipt.OrderNo, 10)
	}
	if e.cause != nil {
		s += " (" + e.cause.Error() + ")"
	}
	return s
}

// Is reports whether target is ErrFateUnknown (an *Error of its code) or a
// *FateUnknownError with the same receipt.
func (e *FateUnknownError) Is(target error) bool {
	if t, ok := target.(*FateUnknownError); ok {
		return t.Receipt == e.Receipt
	}
	return ErrFateUnknown.Is(target)
}

// As sets *target to ErrFateUnknown when target is a **Error, so that
// errors.As(err, &fe) gives the code as for every flashstock error.
func (e *FateUnknownError) As(target any) bool {
	if t, ok := target.(**Error); ok {
		*t = ErrFateUnknown
		return true
	}
	return false
}

// Unwrap returns the cause (a context's error), or nil.
func (e *FateUnknownError) Unwrap() error { return e.cause }

// CartError is a cart's refusal for one of its lines (CartOrder):
// ErrSoldOut, ErrStale or ErrNotFound of the line's sku, ErrInval of the
// line (its qty, a sku twice) or of the cart.  Line is the line's index
// (0 when the refusal is the cart's); SoldOut, for ErrSoldOut, every line
// short of its qty, in order (Line among them).  Nothing was taken.
// errors.Is(err, ErrSoldOut) and errors.As(err, &fe) with fe a *Error
// work as for an order's refusal: it unwraps to Err.
type CartError struct {
	Err     *Error
	Line    int
	SoldOut []int
}

func (e *CartError) Error() string {
	s := e.Err.Error() + ": line " + strconv.Itoa(e.Line)
	if len(e.SoldOut) > 0 {
		s += " (short:"
		for _, i := range e.SoldOut {
			s += " " + strconv.Itoa(i)
		}
		s += ")"
	}
	return s
}

// Unwrap returns the refusal's *Error (ErrSoldOut, ...).
func (e *CartError) Unwrap() error { return e.Err }

// Sentinels for errors.Is, one per result code of api/flashstock.h.
var (
	ErrSoldOut     = codeErr(C.FLASH_ESOLD_OUT)     // not enough stock
	ErrLimit       = codeErr(C.FLASH_ELIMIT)        // the user holds the activity's limit already
	ErrNotStarted  = codeErr(C.FLASH_ENOT_STARTED)  // window not open yet
	ErrEnded       = codeErr(C.FLASH_EENDED)        // window closed
	ErrNotFound    = codeErr(C.FLASH_ENOT_FOUND)    // unknown activity, sku, order or lock
	ErrBadToken    = codeErr(C.FLASH_EBAD_TOKEN)    // token missing, unknown, expired, reused
	ErrDuplicate   = codeErr(C.FLASH_EDUPLICATE)    // request id seen before (*DuplicateError: the first outcome)
	ErrFull        = codeErr(C.FLASH_EFULL)         // a fixed-capacity table is full
	ErrInval       = codeErr(C.FLASH_EINVAL)        // bad argument
	ErrDurability  = codeErr(C.FLASH_EDURABILITY)   // the WAL failed
	ErrExist       = codeErr(C.FLASH_EEXIST)        // segment, activity or sku exists
	ErrNoSeg       = codeErr(C.FLASH_ENOSEG)        // no segment of that name
	ErrOwner       = codeErr(C.FLASH_EOWNER)        // attach: owned by another user
	ErrMode        = codeErr(C.FLASH_EMODE)         // attach: mode not 0600/0660
	ErrSize        = codeErr(C.FLASH_ESIZE)         // attach: size differs from header
	ErrMagic       = codeErr(C.FLASH_EMAGIC)        // attach: not a flashstock segment
	ErrVersion     = codeErr(C.FLASH_EVERSION)      // attach: layout version
	ErrChecksum    = codeErr(C.FLASH_ECHECKSUM)     // attach: header checksum
	ErrLayout      = codeErr(C.FLASH_ELAYOUT)       // attach: region table
	ErrCorrupt     = codeErr(C.FLASH_ECORRUPT)      // an index out of bounds
	ErrReadOnly    = codeErr(C.FLASH_EREADONLY)     // write call on a read-only handle
	ErrFork        = codeErr(C.FLASH_EFORK)         // handle used after fork
	ErrCancelled   = codeErr(C.FLASH_ECANCELLED)    // order already cancelled
	ErrLocked      = codeErr(C.FLASH_ELOCKED)       // lock held by another live owner
	ErrNotOwner    = codeErr(C.FLASH_ENOT_OWNER)    // lock renew/release by a non-holder
	ErrBusy        = codeErr(C.FLASH_EBUSY)         // ring full, request in flight, claim held
	ErrNoProc      = codeErr(C.FLASH_ENOPROC)       // process table full
	ErrPerm        = codeErr(C.FLASH_EPERM)         // the OS refused access
	ErrNoMem       = codeErr(C.FLASH_ENOMEM)        // out of (shared) memory
	ErrSys         = codeErr(C.FLASH_ESYS)          // another system call failure
	ErrWrongThread = codeErr(C.FLASH_EWRONG_THREAD) // handle used from another thread
	ErrNotReg      = codeErr(C.FLASH_ENOTREG)       // attach: not a regular file
	ErrFateUnknown = codeErr(C.FLASH_EFATE_UNKNOWN) // sync: placed, not yet durable (*FateUnknownError: the receipt)
	ErrReqExpired  = codeErr(C.FLASH_EREQ_EXPIRED)  // request id older than the window: look the order up
	ErrArchived    = codeErr(C.FLASH_EARCHIVED)     // the order's activity was archived
	ErrNotEnded    = codeErr(C.FLASH_ENOT_ENDED)    // archive: the activity has not ended
	ErrDestroyed   = codeErr(C.FLASH_EDESTROYED)    // the segment was destroyed: close the handle
	ErrExpired     = codeErr(C.FLASH_EEXPIRED)      // the reservation was not paid in time: expired, units back
	ErrNotDue      = codeErr(C.FLASH_ENOT_DUE)      // expire: the reservation's pay-by time has not come
	ErrConfirmed   = codeErr(C.FLASH_ECONFIRMED)    // expire: the order is ACTIVE (paid): it does not expire
	ErrStale       = codeErr(C.FLASH_ESTALE)        // the terms changed since the version the order named: nothing taken
	ErrMySQLRetry  = codeErr(C.FLASH_EMYSQL_RETRY)  // MySQL down or busy
	ErrMySQL       = codeErr(C.FLASH_EMYSQL)        // MySQL refused a statement
	ErrMySQLConfig = codeErr(C.FLASH_EMYSQL_CONFIG) // bad MySQL URL or access denied
	ErrMySQLGap    = codeErr(C.FLASH_EMYSQL_GAP)    // records missing before a batch
	ErrTimeout     = codeErr(C.FLASH_ETIMEOUT)      // feed: nothing durable within the wait
	ErrLost        = codeErr(C.FLASH_ELOST)         // feed: retention removed unread records
	ErrAhead       = codeErr(C.FLASH_EAHEAD)        // feed: position past the durable end
	ErrFeedIdent   = codeErr(C.FLASH_EFEED_IDENT)   // feed: the WAL of another segment
	ErrRefill      = codeErr(C.FLASH_EREFILL)       // feed: MariaDB cannot cover the lost range
)
