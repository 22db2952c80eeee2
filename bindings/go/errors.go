// errors.go -- flashstock's one error space in Go: every negative FLASH_E*
// code is an *Error carrying the code and its flash_rcname(); the common
// refusals are sentinel values to compare with errors.Is.
package flashstock

/*
#include <flashstock.h>
*/
import "C"

import "errors"

// Error is a flashstock result code.  Code is the negative FLASH_E* value,
// Name its symbolic name (flash_rcname: "FLASH_ESOLD_OUT", or "FLASH_E?"
// for a code this library does not know), Msg its flash_strerror().
//
// Two *Error values match under errors.Is when their codes are equal, so
// errors.Is(err, flashstock.ErrSoldOut) holds for every sold-out refusal,
// and errors.As(err, &e) gives the code of any.  An error that also has a
// cause (FLASH_EFATE_UNKNOWN when a context ended the wait) unwraps to it:
// errors.Is(err, context.DeadlineExceeded) holds as well.
type Error struct {
	Code  int
	Name  string
	Msg   string
	cause error
}

func (e *Error) Error() string {
	s := "flashstock: " + e.Name + ": " + e.Msg
	if e.cause != nil {
		s += " (" + e.cause.Error() + ")"
	}
	return s
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unwrap returns the cause (a context's error), or nil.
func (e *Error) Unwrap() error { return e.cause }

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

// withCause returns a copy of e that unwraps to cause.
func withCause(e *Error, cause error) error {
	if cause == nil {
		return e
	}
	c := *e
	c.cause = cause
	return &c
}

// ErrClosed is returned by a call on a Handle or Pinned after Close.  It is
// the binding's own, not a flashstock result code.
var ErrClosed = errors.New("flashstock: handle closed")

// Sentinels for errors.Is, one per result code of api/flashstock.h.
var (
	ErrSoldOut     = codeErr(C.FLASH_ESOLD_OUT)     // not enough stock
	ErrLimit       = codeErr(C.FLASH_ELIMIT)        // the user holds the activity's limit already
	ErrNotStarted  = codeErr(C.FLASH_ENOT_STARTED)  // window not open yet
	ErrEnded       = codeErr(C.FLASH_EENDED)        // window closed
	ErrNotFound    = codeErr(C.FLASH_ENOT_FOUND)    // unknown activity, sku, order or lock
	ErrBadToken    = codeErr(C.FLASH_EBAD_TOKEN)    // token missing, unknown, expired, reused
	ErrDuplicate   = codeErr(C.FLASH_EDUPLICATE)    // request id seen before (OrderRes.FirstRC)
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
	ErrFateUnknown = codeErr(C.FLASH_EFATE_UNKNOWN) // sync: placed, not yet durable
	ErrReqExpired  = codeErr(C.FLASH_EREQ_EXPIRED)  // request id older than the window: look the order up
	ErrArchived    = codeErr(C.FLASH_EARCHIVED)     // the order's activity was archived
	ErrNotEnded    = codeErr(C.FLASH_ENOT_ENDED)    // archive: the activity has not ended
	ErrDestroyed   = codeErr(C.FLASH_EDESTROYED)    // the segment was destroyed: close the handle
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
