// obs.go -- the engine's figures of its own calls (flash_obs_get): per
// operation a latency histogram and the count of each result code, and the
// lock wait and hold histograms, summed over every slot of the segment.
package flashstock

/*
#include <stdlib.h>
#include <flashstock.h>
*/
import "C"

import (
	"math"
	"time"
	"unsafe"
)

// Operations of struct flash_obs (enum flash_op), and the two histograms
// that follow them in Obs.Time.
const (
	OpOrder       = C.FLASH_OP_ORDER
	OpCancel      = C.FLASH_OP_CANCEL
	OpRestock     = C.FLASH_OP_RESTOCK
	OpTokenIssue  = C.FLASH_OP_TOKEN_ISSUE
	OpTokenRedeem = C.FLASH_OP_TOKEN_REDEEM
	OpLockAcquire = C.FLASH_OP_LOCK_ACQUIRE
	OpLockRenew   = C.FLASH_OP_LOCK_RENEW
	OpLockRelease = C.FLASH_OP_LOCK_RELEASE
	OpCount       = C.FLASH_OP_COUNT
	TimeLockWait  = C.FLASH_TIME_LOCK_WAIT // first refused acquire to the grant
	TimeLockHold  = C.FLASH_TIME_LOCK_HOLD // grant to release (or the lease's end)
	Times         = C.FLASH_TIMES
	ObsBuckets    = C.FLASH_OBS_BUCKETS
	ObsCodes      = C.FLASH_OBS_CODES
)

// Hist mirrors struct flash_hist: one latency histogram.  Bucket b counts
// the times below ObsBucketLe(b) and at or above the previous bound (not
// cumulative); Count is the sum of the buckets, Sum their total time.
type Hist struct {
	Bucket [ObsBuckets]uint64 `c:"bucket"`
	Count  uint64             `c:"count"`
	Sum    time.Duration      `c:"sum_ns"` // a uint64 of ns in C: exact below 292 years
}

// Obs mirrors struct flash_obs.  Time is indexed by an Op* constant or
// TimeLockWait/TimeLockHold (orders: one in 16 per handle is timed);
// Results[op][-rc] counts the calls of op that returned rc (codes below
// -(ObsCodes-1) at ObsCodes-1): use Result.
type Obs struct {
	Time    [Times]Hist               `c:"time"`
	Results [OpCount][ObsCodes]uint64 `c:"results"`
}

// Result is the number of calls of op that returned rc (0: FLASH_OK, or a
// negative FLASH_E* code; codes below the table's last share its count).
func (o *Obs) Result(op int, rc int) uint64 {
	if op < 0 || op >= OpCount || rc > 0 {
		return 0
	}
	i := -rc
	if i >= ObsCodes {
		i = ObsCodes - 1
	}
	return o.Results[op][i]
}

// Calls is the number of calls of op counted, whatever their result.
func (o *Obs) Calls(op int) (n uint64) {
	if op < 0 || op >= OpCount {
		return 0
	}
	for _, c := range o.Results[op] {
		n += c
	}
	return n
}

// ObsBucketLe is the upper bound of histogram bucket b
// (flash_obs_bucket_le_ns; math.MaxUint64 for the last).
func ObsBucketLe(b int) time.Duration {
	ns := uint64(C.flash_obs_bucket_le_ns(C.unsigned(b)))
	if ns > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// OpName names an index of Obs.Time: "order", ..., "lock_wait",
// "lock_hold"; "?" out of range (flash_op_name).
func OpName(op int) string { return C.GoString(C.flash_op_name(C.unsigned(op))) }

// obs sums every slot's figures from this native handle's thread (its own
// newest call added first, as flash_obs_get does).  The struct is some
// 6 KiB: it lives in C memory for the call, never in the per-order scratch.
func (n *native) obs() (Obs, error) {
	c := (*C.struct_flash_obs)(C.malloc(C.sizeof_struct_flash_obs))
	defer C.free(unsafe.Pointer(c))
	if rc := C.flash_obs_get(n.h, c); rc != 0 {
		return Obs{}, codeError(rc)
	}
	return *(*Obs)(unsafe.Pointer(c)), nil
}

// Obs sums the engine's figures over every slot (flash_obs_get).  Each
// worker's newest call joins the figures only when that worker makes its
// next call, so Obs asks every worker in turn and returns the last answer:
// every call this Handle returned before Obs was called is in it.
func (h *Handle) Obs() (o Obs, err error) {
	e := h.p.each(func(x *native) error {
		var e error
		o, e = x.obs()
		return e
	})
	if e != nil {
		return Obs{}, e
	}
	return o, nil
}

// Obs sums the engine's figures over every slot (flash_obs_get), this
// handle's newest call included.
func (p *Pinned) Obs() (Obs, error) {
	if !p.ok() {
		return Obs{}, ErrClosed
	}
	return p.n.obs()
}

var (
	_ = [1]byte{}[unsafe.Sizeof(Hist{})-C.sizeof_struct_flash_hist]
	_ = [1]byte{}[unsafe.Sizeof(Obs{})-C.sizeof_struct_flash_obs]
)
