// native.go -- one native handle (flash_t) and every call made on it.
//
// A native is opened, used and (normally) closed by one goroutine locked to
// its OS thread (runtime.LockOSThread): a Handle's worker, or the owner of a
// Pinned.  Nothing here locks; the owner's exclusivity is the contract.
// Each call copies its Go arguments into the handle's C scratch
// (struct fsgo_scratch), calls C once, and copies the result back: no Go
// pointer ever reaches C, so nothing escapes to the heap on the order path.
package flashstock

/*
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fsgo.h"

static int fsgo_gettid(void) { return (int)syscall(SYS_gettid); }

// The order call with integer arguments: cgo boxes a pointer argument for
// its pointer check and makes it escape, one allocation per call; an
// integer is passed as is.  h is the flash_t, s the handle's scratch.
static int fsgo_order(uintptr_t h, uintptr_t s)
{
	struct fsgo_scratch *x = (struct fsgo_scratch *)s;
	return flash_order((flash_t *)h, &x->req, &x->res);
}

static void fsgo_batch_free(uintptr_t s)
{
	struct fsgo_scratch *x = (struct fsgo_scratch *)s;

	free(x->breq);
	free(x->bres);
	free(x->brcs);
	x->breq = NULL;
	x->bres = NULL;
	x->brcs = NULL;
	x->bcap = 0;
}

// The scratch's batch arrays made room for n orders, their contents not
// kept: FLASH_OK, or FLASH_ENOMEM with the arrays as they were.
static int fsgo_batch_reserve(uintptr_t s, uint32_t n)
{
	struct fsgo_scratch *x = (struct fsgo_scratch *)s;
	struct flash_order_req *q = malloc(sizeof(*q) * n);
	struct flash_order_res *r = malloc(sizeof(*r) * n);
	int *c = malloc(sizeof(*c) * n);

	if (q == NULL || r == NULL || c == NULL) {
		free(q);
		free(r);
		free(c);
		return FLASH_ENOMEM;
	}
	fsgo_batch_free(s);
	x->breq = q;
	x->bres = r;
	x->brcs = c;
	x->bcap = n;
	return FLASH_OK;
}

// The batch call on the scratch's arrays, with integer arguments as
// fsgo_order.  The results are cleared first: flash_order_many writes an
// order's result only once its checks begin (a request refused for its
// user, qty or reserved field leaves it as it was), and a caller must read
// zeros there, not an earlier batch's.
static int fsgo_order_many(uintptr_t h, uintptr_t s, uint32_t n)
{
	struct fsgo_scratch *x = (struct fsgo_scratch *)s;

	memset(x->bres, 0, sizeof(*x->bres) * n);
	return flash_order_many((flash_t *)h, x->breq, n, x->bres, x->brcs);
}
*/
import "C"

import (
	"context"
	"errors"
	"math"
	"time"
	"unsafe"
)

// syncSliceMs bounds one sync wait when the context has no deadline but can
// be cancelled: the wait is cut into slices of this length and the context
// is checked between them.
const syncSliceMs = 50

type native struct {
	h         *C.flash_t
	s         *C.struct_fsgo_scratch // C memory, this handle's alone
	slot      int                    // process-table slot; -1 read-only
	tid       int                    // OS thread that opened it
	sync      bool                   // the segment acknowledges in sync durability
	waitMs    uint32                 // the bound flash_sync_wait_set last set
	defWaitMs uint32                 // the bound a call without a deadline uses
}

func gettid() int { return int(C.fsgo_gettid()) }

// ptr and scratch are the flash_t and the scratch as the integers the
// fsgo_ wrappers take.
func (n *native) ptr() C.uintptr_t     { return C.uintptr_t(uintptr(unsafe.Pointer(n.h))) }
func (n *native) scratch() C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(n.s))) }

// open attaches on the calling thread, which must be locked to its goroutine.
func (n *native) open(name string, flags uint) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	n.s = (*C.struct_fsgo_scratch)(C.calloc(1, C.sizeof_struct_fsgo_scratch))
	if n.s == nil {
		return ErrNoMem
	}
	var h *C.flash_t
	if rc := C.flash_open(cn, C.uint(flags), &h); rc != 0 {
		C.free(unsafe.Pointer(n.s))
		n.s = nil
		return codeError(rc)
	}
	n.h = h
	n.tid = gettid()
	n.slot = int(C.flash_slot(h))
	n.waitMs = C.FLASH_SYNC_WAIT_MS_DEFAULT
	n.defWaitMs = C.FLASH_SYNC_WAIT_MS_DEFAULT
	if rc := C.flash_seg_opts_get(h, &n.s.opts); rc == 0 {
		n.sync = flags&RdOnly == 0 && uint32(n.s.opts.durability) == DurabilitySync
	}
	return nil
}

// close detaches (flash_close may come from any thread of the process once
// the owner has made its last call).
func (n *native) close() error {
	if n.h == nil {
		return ErrClosed
	}
	rc := C.flash_close(n.h)
	n.h = nil
	C.fsgo_batch_free(n.scratch())
	C.free(unsafe.Pointer(n.s))
	n.s = nil
	return codeError(rc)
}

// setSyncWait sets the bound of sync waits without a context deadline.
func (n *native) setSyncWait(ms uint32) error {
	if rc := C.flash_sync_wait_set(n.h, C.uint32_t(ms)); rc != 0 {
		return codeError(rc)
	}
	n.waitMs, n.defWaitMs = ms, ms
	return nil
}

// ctxWaitMs is the wait bound for one sync call under ctx: the time left
// before its deadline when that is shorter than the handle's bound
// (cut: the deadline ends the wait), else a slice when ctx can be cancelled
// and allowSlice (sliced: wait again in slices until ctx ends), else the
// handle's bound.
func (n *native) ctxWaitMs(ctx context.Context, allowSlice bool) (ms uint32, cut, sliced bool) {
	ms = n.defWaitMs
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left < time.Duration(ms)*time.Millisecond {
			ms, cut = 1, true
			if left > 0 {
				ms = uint32((left + time.Millisecond - 1) / time.Millisecond)
			}
		}
		return ms, cut, allowSlice && !cut
	}
	if allowSlice && ctx.Done() != nil && ms > syncSliceMs {
		return syncSliceMs, false, true
	}
	return ms, false, false
}

// boundWait sets the handle's sync wait bound for a call under ctx, only
// when it differs from the one set last (one store in the engine).
func (n *native) boundWait(ctx context.Context, allowSlice bool) (cut, sliced bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, false, err
	}
	ms, cut, sliced := n.ctxWaitMs(ctx, allowSlice)
	if ms != n.waitMs {
		if rc := C.flash_sync_wait_set(n.h, C.uint32_t(ms)); rc != 0 {
			return false, false, codeError(rc)
		}
		n.waitMs = ms
	}
	return cut, sliced, nil
}

// fateUnknown is FLASH_EFATE_UNKNOWN, unwrapping to ctx's error when ctx
// ended, or to context.DeadlineExceeded when its deadline cut the wait
// (the engine's clock may end the wait a moment before ctx's timer fires).
func fateUnknown(ctx context.Context, cut bool, r Receipt) error {
	err := ctx.Err()
	if err == nil && cut {
		err = context.DeadlineExceeded
	}
	return &FateUnknownError{Receipt: r, cause: err}
}

// duplicate is FLASH_EDUPLICATE with the first outcome of res.
func duplicate(res *OrderRes, slot int) error {
	return &DuplicateError{FirstRC: res.FirstRC, OrderNo: res.OrderNo, LimitSlot: res.LimitSlot, Slot: slot}
}

// waitDurable waits for the record of receipt r (at r.LSN of this handle's
// ring) until it is durable or ctx ends (a ctx that can never end: one wait
// of the handle's bound); FLASH_EFATE_UNKNOWN is a *FateUnknownError with r.
func (n *native) waitDurable(ctx context.Context, r Receipt) error {
	lsn := r.LSN
	if ctx.Done() == nil {
		rc := C.flash_durable_wait(n.h, C.uint64_t(lsn), C.uint32_t(n.defWaitMs))
		if rc == C.FLASH_EFATE_UNKNOWN {
			return &FateUnknownError{Receipt: r}
		}
		return codeError(rc)
	}
	for {
		if ctx.Err() != nil {
			return fateUnknown(ctx, false, r)
		}
		ms, cut := uint32(syncSliceMs), false
		if d, ok := ctx.Deadline(); ok {
			left := time.Until(d)
			if left <= 0 {
				return fateUnknown(ctx, true, r)
			}
			if left <= syncSliceMs*time.Millisecond {
				ms, cut = uint32((left+time.Millisecond-1)/time.Millisecond), true
			}
		}
		rc := C.flash_durable_wait(n.h, C.uint64_t(lsn), C.uint32_t(ms))
		if rc != C.FLASH_EFATE_UNKNOWN {
			return codeError(rc)
		}
		if cut {
			return fateUnknown(ctx, true, r)
		}
	}
}

// order places one order.  In async durability it is one C call; in sync
// durability ctx bounds the wait for the record to be durable: past its
// deadline (or once it is cancelled) the error is ErrFateUnknown, with res
// filled as for success.
func (n *native) order(ctx context.Context, req *OrderReq, res *OrderRes) error {
	n.s.req = *(*C.struct_flash_order_req)(unsafe.Pointer(req))
	n.s.res = C.struct_flash_order_res{} // a request refused before flash_order clears it reads zeros
	cut, sliced := false, false
	if n.sync {
		var err error
		if cut, sliced, err = n.boundWait(ctx, true); err != nil {
			return err
		}
	}
	rc := C.fsgo_order(n.ptr(), n.scratch())
	*res = *(*OrderRes)(unsafe.Pointer(&n.s.res))
	if rc == 0 {
		return nil
	}
	if rc == C.FLASH_EFATE_UNKNOWN && n.sync {
		r := Receipt{OrderRes: *res, Slot: n.slot}
		if sliced {
			return n.waitDurable(ctx, r)
		}
		return fateUnknown(ctx, cut, r)
	}
	if rc == C.FLASH_EDUPLICATE {
		return duplicate(res, n.slot)
	}
	return codeError(rc)
}

// cartOrder places a cart (flash_cart_order), as order places an order:
// in sync durability ctx bounds the wait for its records.  A refusal for
// one line is a *CartError (the line, every short line); ErrDuplicate and
// ErrFateUnknown come as order's do, with the cart's receipt.
func (n *native) cartOrder(ctx context.Context, req *CartReq, res *CartRes) error {
	*res = CartRes{}
	if len(req.Lines) == 0 || len(req.Lines) > CartLinesMax {
		return ErrInval
	}
	c := (*cartReq)(unsafe.Pointer(&n.s.creq))
	*c = cartReq{ActivityID: req.ActivityID, Lines: uint32(len(req.Lines)), UserID: req.UserID,
		ReserveMs: req.ReserveMs, Token: req.Token, RequestID: req.RequestID,
		ActivityVersion: req.ActivityVersion}
	copy(c.Line[:], req.Lines)
	n.s.cres = C.struct_flash_cart_res{}
	cut, sliced := false, false
	if n.sync {
		var err error
		if cut, sliced, err = n.boundWait(ctx, true); err != nil {
			return err
		}
	}
	rc := C.flash_cart_order(n.h, &n.s.creq, &n.s.cres)
	*res = *(*CartRes)(unsafe.Pointer(&n.s.cres))
	if rc == 0 {
		return nil
	}
	or := OrderRes{OrderNo: res.OrderNo, FirstRC: res.FirstRC, LimitSlot: res.LimitSlot, LSN: res.LSN}
	switch rc {
	case C.FLASH_EFATE_UNKNOWN:
		if !n.sync {
			break
		}
		r := Receipt{OrderRes: or, Slot: n.slot}
		if sliced {
			return n.waitDurable(ctx, r)
		}
		return fateUnknown(ctx, cut, r)
	case C.FLASH_EDUPLICATE:
		return duplicate(&or, n.slot)
	case C.FLASH_ESOLD_OUT, C.FLASH_ESTALE, C.FLASH_ENOT_FOUND, C.FLASH_EINVAL:
		e := &CartError{Err: codeErr(int(rc)), Line: int(res.Line)}
		if rc == C.FLASH_ESOLD_OUT {
			for i := range req.Lines {
				if res.SoldOut>>uint(i)&1 != 0 {
					e.SoldOut = append(e.SoldOut, i)
				}
			}
		}
		return e
	}
	return codeError(rc)
}

// orderLines reads every line of an order (flash_order_lines): one for a
// plain order, 2..CartLinesMax for a cart.
func (n *native) orderLines(orderNo uint64) ([]OrderInfo, error) {
	n.s.u32 = 0
	rc := C.flash_order_lines(n.h, C.uint64_t(orderNo), &n.s.lines[0], CartLinesMax, &n.s.u32)
	if rc != 0 {
		return nil, codeError(rc)
	}
	cnt := int(n.s.u32)
	if cnt > CartLinesMax {
		cnt = CartLinesMax
	}
	out := make([]OrderInfo, cnt)
	for i := range out {
		out[i] = *(*OrderInfo)(unsafe.Pointer(&n.s.lines[i]))
	}
	return out, nil
}

// batchCapMin is the fewest orders the batch arrays are made for.
const batchCapMin = 16

// orderMany places a batch (flash_order_many): the requests are copied
// into the scratch's arrays (grown when the batch is longer than any
// before it), one C call places them all, and one Outcome per request is
// appended to out, in order.  Each outcome's error is what order would
// return for that request alone.  In sync durability ctx bounds the one
// wait for the batch's last record, as it bounds order's: when it ends
// first, every placed order's error is ErrFateUnknown (the same value
// for all, unwrapping to ctx's error) with its receipt filled.  A
// handle-level refusal (ErrReadOnly, ErrWrongThread, ...) or ctx ended
// before the call in sync durability is the error, with nothing placed and
// out as it was.  An empty batch places nothing and makes no C call.
func (n *native) orderMany(ctx context.Context, reqs []OrderReq, out []Outcome) ([]Outcome, error) {
	cnt := len(reqs)
	if cnt == 0 {
		return out, nil
	}
	if uint64(cnt) > math.MaxUint32 {
		return out, ErrInval
	}
	if uint32(cnt) > uint32(n.s.bcap) {
		c := uint32(n.s.bcap)
		if c < batchCapMin {
			c = batchCapMin
		}
		for c < uint32(cnt) && c <= math.MaxUint32/2 {
			c <<= 1
		}
		if c < uint32(cnt) {
			c = uint32(cnt)
		}
		if rc := C.fsgo_batch_reserve(n.scratch(), C.uint32_t(c)); rc != 0 {
			return out, codeError(rc)
		}
	}
	copy(unsafe.Slice((*OrderReq)(unsafe.Pointer(n.s.breq)), cnt), reqs)
	cut, sliced := false, false
	if n.sync {
		var err error
		if cut, sliced, err = n.boundWait(ctx, true); err != nil {
			return out, err
		}
	}
	if rc := C.fsgo_order_many(n.ptr(), n.scratch(), C.uint32_t(cnt)); rc != 0 {
		return out, codeError(rc)
	}
	res := unsafe.Slice((*OrderRes)(unsafe.Pointer(n.s.bres)), cnt)
	rcs := unsafe.Slice((*C.int)(unsafe.Pointer(n.s.brcs)), cnt)

	// the one wait's outcome, for every order it covers: the C call gives
	// them all FLASH_EFATE_UNKNOWN when its wait ended first; a sliced
	// wait goes on, for the last of them, until ctx ends.  Still unknown,
	// each such order gets a *FateUnknownError with its own receipt and
	// the one cause; durable, nil; else the wait's error, for all
	var unknown error
	fate := false
	if n.sync {
		last := -1
		for i := range rcs {
			if rcs[i] == C.FLASH_EFATE_UNKNOWN {
				last = i
			}
		}
		if last >= 0 {
			r := Receipt{OrderRes: res[last], Slot: n.slot}
			if sliced {
				unknown = n.waitDurable(ctx, r)
			} else {
				unknown = fateUnknown(ctx, cut, r)
			}
			var fe *FateUnknownError
			if errors.As(unknown, &fe) {
				fate, unknown = true, fe.cause
			}
		}
	}
	if free := cap(out) - len(out); free < cnt {
		grown := make([]Outcome, len(out), len(out)+cnt)
		copy(grown, out)
		out = grown
	}
	for i := range rcs {
		o := Outcome{Receipt: Receipt{OrderRes: res[i], Slot: n.slot}}
		switch rc := rcs[i]; {
		case rc == 0:
		case rc == C.FLASH_EFATE_UNKNOWN && n.sync:
			if fate {
				o.Err = &FateUnknownError{Receipt: o.Receipt, cause: unknown}
			} else {
				o.Err = unknown
			}
		case rc == C.FLASH_EDUPLICATE:
			o.Err = duplicate(&o.OrderRes, n.slot)
		default:
			o.Err = codeError(rc)
		}
		out = append(out, o)
	}
	return out, nil
}

func (n *native) cancel(ctx context.Context, orderNo uint64) (uint32, error) {
	cut := false
	if n.sync {
		var err error
		if cut, _, err = n.boundWait(ctx, false); err != nil {
			return 0, err
		}
	}
	n.s.u32 = 0
	rc := C.flash_cancel(n.h, C.uint64_t(orderNo), &n.s.u32)
	units := uint32(n.s.u32)
	if rc == C.FLASH_EFATE_UNKNOWN {
		return units, fateUnknown(ctx, cut, Receipt{})
	}
	return units, codeError(rc)
}

func (n *native) confirm(ctx context.Context, orderNo uint64) error {
	cut := false
	if n.sync {
		var err error
		if cut, _, err = n.boundWait(ctx, false); err != nil {
			return err
		}
	}
	rc := C.flash_confirm(n.h, C.uint64_t(orderNo))
	if rc == C.FLASH_EFATE_UNKNOWN {
		return fateUnknown(ctx, cut, Receipt{})
	}
	return codeError(rc)
}

func (n *native) expire(ctx context.Context, orderNo uint64) (uint32, error) {
	cut := false
	if n.sync {
		var err error
		if cut, _, err = n.boundWait(ctx, false); err != nil {
			return 0, err
		}
	}
	n.s.u32 = 0
	rc := C.flash_expire(n.h, C.uint64_t(orderNo), &n.s.u32)
	units := uint32(n.s.u32)
	if rc == C.FLASH_EFATE_UNKNOWN {
		return units, fateUnknown(ctx, cut, Receipt{})
	}
	return units, codeError(rc)
}

// expireDue: in sync durability each expiry of the scan waits for its
// record, each wait bounded by what is left of ctx's deadline when the scan
// starts (the handle's bound is set once, before it), not the scan as a whole.
func (n *native) expireDue(ctx context.Context, max uint32) (uint32, error) {
	cut := false
	if n.sync {
		var err error
		if cut, _, err = n.boundWait(ctx, false); err != nil {
			return 0, err
		}
	}
	n.s.u32 = 0
	rc := C.flash_expire_due(n.h, C.uint32_t(max), &n.s.u32)
	count := uint32(n.s.u32)
	if rc == C.FLASH_EFATE_UNKNOWN {
		return count, fateUnknown(ctx, cut, Receipt{})
	}
	return count, codeError(rc)
}

func (n *native) restock(ctx context.Context, activity, sku uint32, delta int64) error {
	cut := false
	if n.sync {
		var err error
		if cut, _, err = n.boundWait(ctx, false); err != nil {
			return err
		}
	}
	rc := C.flash_restock(n.h, C.uint32_t(activity), C.uint32_t(sku), C.int64_t(delta))
	if rc == C.FLASH_EFATE_UNKNOWN {
		return fateUnknown(ctx, cut, Receipt{})
	}
	return codeError(rc)
}

func (n *native) recover() (uint32, error) {
	rc := C.flash_recover(n.h, &n.s.u32)
	if rc != 0 {
		return 0, codeError(rc)
	}
	return uint32(n.s.u32), nil
}

func (n *native) segOpts() (SegOpts, error) {
	if rc := C.flash_seg_opts_get(n.h, &n.s.opts); rc != 0 {
		return SegOpts{}, codeError(rc)
	}
	return *(*SegOpts)(unsafe.Pointer(&n.s.opts)), nil
}

func (n *native) activityAdd(a *Activity) error {
	n.s.act = *(*C.struct_flash_activity)(unsafe.Pointer(a))
	return codeError(C.flash_activity_add(n.h, &n.s.act))
}

func (n *native) skuAdd(activity, sku uint32, units uint64, shards uint32) error {
	return codeError(C.flash_sku_add(n.h, C.uint32_t(activity), C.uint32_t(sku),
		C.uint64_t(units), C.uint32_t(shards)))
}

func (n *native) activityGet(id uint32) (Activity, error) {
	if rc := C.flash_activity_get(n.h, C.uint32_t(id), &n.s.act); rc != 0 {
		return Activity{}, codeError(rc)
	}
	return *(*Activity)(unsafe.Pointer(&n.s.act)), nil
}

func (n *native) activityUpdate(a *Activity) (uint64, error) {
	n.s.act = *(*C.struct_flash_activity)(unsafe.Pointer(a))
	n.s.u64 = 0
	if rc := C.flash_activity_update(n.h, &n.s.act, &n.s.u64); rc != 0 {
		return 0, codeError(rc)
	}
	return uint64(n.s.u64), nil
}

func (n *native) skuPriceSet(activity, sku uint32, price uint64) (uint64, error) {
	n.s.u64 = 0
	rc := C.flash_sku_price_set(n.h, C.uint32_t(activity), C.uint32_t(sku), C.uint64_t(price),
		&n.s.u64)
	if rc != 0 {
		return 0, codeError(rc)
	}
	return uint64(n.s.u64), nil
}

func (n *native) tokenIssue(activity, sku uint32, user uint64, ttl time.Duration) (uint64, error) {
	ttlMs, err := msOf(ttl)
	if err != nil {
		return 0, err
	}
	rc := C.flash_token_issue(n.h, C.uint32_t(activity), C.uint32_t(sku), C.uint64_t(user),
		C.uint32_t(ttlMs), &n.s.u64)
	if rc != 0 {
		return 0, codeError(rc)
	}
	return uint64(n.s.u64), nil
}

func (n *native) tokenRedeem(activity, sku uint32, user, token uint64) error {
	return codeError(C.flash_token_redeem(n.h, C.uint32_t(activity), C.uint32_t(sku),
		C.uint64_t(user), C.uint64_t(token)))
}

func (n *native) lockAcquire(name string, owner uint64, lease time.Duration) (uint64, error) {
	leaseMs, err := msOf(lease)
	if err != nil {
		return 0, err
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	rc := C.flash_lock_acquire(n.h, cn, C.uint64_t(owner), C.uint32_t(leaseMs), &n.s.u64)
	if rc != 0 {
		return 0, codeError(rc)
	}
	return uint64(n.s.u64), nil
}

func (n *native) lockRenew(name string, owner uint64, lease time.Duration) error {
	leaseMs, err := msOf(lease)
	if err != nil {
		return err
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return codeError(C.flash_lock_renew(n.h, cn, C.uint64_t(owner), C.uint32_t(leaseMs)))
}

func (n *native) lockRelease(name string, owner uint64) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return codeError(C.flash_lock_release(n.h, cn, C.uint64_t(owner)))
}

func (n *native) skuGet(activity, sku uint32) (SkuInfo, error) {
	if rc := C.flash_sku_get(n.h, C.uint32_t(activity), C.uint32_t(sku), &n.s.sku); rc != 0 {
		return SkuInfo{}, codeError(rc)
	}
	return *(*SkuInfo)(unsafe.Pointer(&n.s.sku)), nil
}

func (n *native) activityAt(index uint32) (Activity, error) {
	if rc := C.flash_activity_at(n.h, C.uint32_t(index), &n.s.act); rc != 0 {
		return Activity{}, codeError(rc)
	}
	return *(*Activity)(unsafe.Pointer(&n.s.act)), nil
}

func (n *native) skuAt(index uint32) (SkuInfo, error) {
	if rc := C.flash_sku_at(n.h, C.uint32_t(index), &n.s.sku); rc != 0 {
		return SkuInfo{}, codeError(rc)
	}
	return *(*SkuInfo)(unsafe.Pointer(&n.s.sku)), nil
}

func (n *native) orderGet(orderNo uint64) (OrderInfo, error) {
	if rc := C.flash_order_get(n.h, C.uint64_t(orderNo), &n.s.oi); rc != 0 {
		return OrderInfo{}, codeError(rc)
	}
	return *(*OrderInfo)(unsafe.Pointer(&n.s.oi)), nil
}

func (n *native) ordersMax() uint64 { return uint64(C.flash_orders_max(n.h)) }

func (n *native) stats() (Stats, error) {
	if rc := C.flash_stats_get(n.h, &n.s.st); rc != 0 {
		return Stats{}, codeError(rc)
	}
	return *(*Stats)(unsafe.Pointer(&n.s.st)), nil
}

func (n *native) ident() (Ident, error) {
	if rc := C.flash_ident_get(n.h, &n.s.id); rc != 0 {
		return Ident{}, codeError(rc)
	}
	return *(*Ident)(unsafe.Pointer(&n.s.id)), nil
}

func (n *native) quiet() (Quiet, error) {
	if rc := C.flash_quiet_get(n.h, &n.s.q); rc != 0 {
		return Quiet{}, codeError(rc)
	}
	return *(*Quiet)(unsafe.Pointer(&n.s.q)), nil
}

// slotNow asks the engine for this handle's slot from the calling thread:
// FLASH_EWRONG_THREAD when the caller is not the opener (a test's probe).
func (n *native) slotNow() (int, error) {
	rc := C.flash_slot(n.h)
	if rc < -1 {
		return 0, codeError(rc)
	}
	return int(rc), nil
}
