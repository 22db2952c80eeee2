// flashstock.go -- the Go binding of flashstock (cgo over libflashstock.so):
// the package's C preamble, the structs that mirror api/flashstock.h, and the
// calls that need no handle (segments, activity checks, result codes).
//
// Divisions of the package:
//
//	flashstock.go  mirrored structs, segments, result-code names
//	errors.go      one error space: *Error, sentinels for errors.Is
//	native.go      one native handle (flash_t) and the calls made on it,
//	               always from the OS thread that opened it
//	handle.go      Handle: a pool of OS-thread-pinned workers behind one
//	               object safe for any number of goroutines
//	pinned.go      Pinned: one native handle on the caller's own locked
//	               OS thread, the fastest path
//
// The thread rule of flashstock.h (a flash_t belongs to the thread that
// opened it) is kept by construction: a native handle is opened by a
// goroutine that has called runtime.LockOSThread, and only that goroutine
// ever calls into it (except flash_close, which the C API allows from any
// thread once the owner has made its last call).
//
// A Go program cannot fork without exec, so flashstock's fork rule
// (FLASH_EFORK) never meets Go code: a process started with os/exec opens
// its own handles.
package flashstock

/*
#cgo LDFLAGS: -lflashstock
#include <stdlib.h>
#include "fsgo.h"
*/
import "C"

import (
	"math"
	"time"
	"unsafe"
)

// Version of the C API this binding was written against.
const (
	VersionMajor = C.FLASH_VERSION_MAJOR
	VersionMinor = C.FLASH_VERSION_MINOR
)

// Open flags.
const (
	RdOnly uint = C.FLASH_RDONLY // map read-only, for monitors; no slot is taken
)

// Durability of acknowledgements (enum flash_durability).
const (
	DurabilityAsync uint32 = C.FLASH_DURABILITY_ASYNC
	DurabilitySync  uint32 = C.FLASH_DURABILITY_SYNC
)

// Limit scopes (enum flash_scope) and activity flags.
const (
	ScopeActivity uint32 = C.FLASH_SCOPE_ACTIVITY
	ScopeSku      uint32 = C.FLASH_SCOPE_SKU
	ScopeDay      uint32 = C.FLASH_SCOPE_DAY

	ActCancelReturnsQuota uint32 = C.FLASH_ACT_CANCEL_RETURNS_QUOTA
	ActTokenRequired      uint32 = C.FLASH_ACT_TOKEN_REQUIRED
)

// Order states (enum flash_order_state).
const (
	OrderNone      uint32 = C.FLASH_ORDER_NONE
	OrderActive    uint32 = C.FLASH_ORDER_ACTIVE
	OrderCancelled uint32 = C.FLASH_ORDER_CANCELLED
	OrderReserved  uint32 = C.FLASH_ORDER_RESERVED // a reservation not paid yet (Confirm)
	OrderExpired   uint32 = C.FLASH_ORDER_EXPIRED  // a reservation not paid in time (Expire)
)

// Ranges of flashstock.h.
const (
	CapMax        = C.FLASH_CAP_MAX
	ProcsMax      = C.FLASH_PROCS_MAX
	RingMin       = C.FLASH_RING_MIN
	RingMax       = C.FLASH_RING_MAX
	LimitMax      = C.FLASH_LIMIT_MAX
	QtyMax        = C.FLASH_QTY_MAX
	DayOffsetMaxS = C.FLASH_DAY_OFFSET_MAX_S
	ShardsMax     = C.FLASH_SHARDS_MAX
	UnitsMax      = C.FLASH_UNITS_MAX
	LockNameMax   = C.FLASH_LOCK_NAME_MAX
	ReserveMsMax  = C.FLASH_RESERVE_MS_MAX // the longest reservation (OrderReq.ReserveMs), a week
	PriceMax      = C.FLASH_PRICE_MAX      // the highest price SkuPriceSet takes (INT64_MAX)
	CartLinesMax  = C.FLASH_CART_LINES_MAX // the most lines of a cart (CartOrder)
)

// SyncWaitDefault bounds a sync wait whose context has no deadline until
// Options.SyncWait or SetSyncWait sets another bound
// (FLASH_SYNC_WAIT_MS_DEFAULT).
const SyncWaitDefault = time.Duration(C.FLASH_SYNC_WAIT_MS_DEFAULT) * time.Millisecond

// msOf is d in whole milliseconds for the C API, rounded up so that a
// positive d never becomes 0 ("no wait"): ErrInval when d is negative or
// past what the C call takes (2^32-1 ms, about 49 days).
func msOf(d time.Duration) (uint32, error) {
	if d < 0 {
		return 0, ErrInval
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxUint32 {
		return 0, ErrInval
	}
	return uint32(ms), nil
}

// The structs below mirror api/flashstock.h field for field: same types,
// same order, so a value is copied to and from C memory as raw bytes.  The
// `c` tag names the C field; TestLayout checks every size and offset
// against the C compiler's as the bindings' manifest records them
// (flashstock.manifest, generated from the header at build time:
// bindings/manifest/manifest.py), and the array lengths at the end of this
// file fail the build if a size differs.  A field tagged `c:"-"` stands for
// padding the C compiler adds implicitly.

// SegOpts mirrors struct flash_seg_opts: capacities and permissions of a new
// segment.  Start from DefaultSegOpts().
type SegOpts struct {
	MaxActivities uint32 `c:"max_activities"`
	MaxSkus       uint32 `c:"max_skus"`
	MaxShards     uint32 `c:"max_shards"`
	MaxUsers      uint32 `c:"max_users"`
	MaxTokens     uint32 `c:"max_tokens"`
	MaxOrders     uint32 `c:"max_orders"`
	MaxRequests   uint32 `c:"max_requests"`
	MaxLocks      uint32 `c:"max_locks"`
	MaxProcs      uint32 `c:"max_procs"`
	RingRecords   uint32 `c:"ring_records"`
	Mode          uint32 `c:"mode"`
	Gid           int64  `c:"gid"`
	Durability    uint32 `c:"durability"`
	_             uint32 `c:"-"` // the C struct's tail padding, named for go vet's sizes
}

// Activity mirrors struct flash_activity.  Version is the version of its
// terms as the segment read them (ActivityGet, ActivityAt), for
// OrderReq.ActivityVersion; ActivityAdd, ActivityUpdate and ActivityCheck
// ignore it.
type Activity struct {
	ID           uint32 `c:"id"`
	LimitPerUser uint32 `c:"limit_per_user"`
	MaxQty       uint32 `c:"max_qty"`
	Scope        uint32 `c:"scope"`
	Flags        uint32 `c:"flags"`
	DayOffsetS   int32  `c:"day_offset_s"`
	StartNs      int64  `c:"start_ns"`
	EndNs        int64  `c:"end_ns"`
	Version      uint64 `c:"version"`
}

// OrderReq mirrors struct flash_order_req.  ReserveMs 0 places a plain
// order, ACTIVE at once; else a reservation, RESERVED until Confirm within
// that many ms (1..ReserveMsMax), expired unpaid after.  ActivityVersion
// and SkuVersion 0 check nothing; else they are the versions of the terms
// the buyer saw (Activity.Version, SkuInfo.Version): once either changed
// the order is ErrStale and takes nothing.
type OrderReq struct {
	ActivityID      uint32 `c:"activity_id"`
	SkuID           uint32 `c:"sku_id"`
	UserID          uint64 `c:"user_id"`
	Qty             uint32 `c:"qty"`
	ReserveMs       uint32 `c:"reserve_ms"`
	Token           uint64 `c:"token"`
	RequestID       uint64 `c:"request_id"`
	ActivityVersion uint64 `c:"activity_version"`
	SkuVersion      uint64 `c:"sku_version"`
}

// OrderRes mirrors struct flash_order_res.
type OrderRes struct {
	OrderNo   uint64 `c:"order_no"`
	FirstRC   int32  `c:"first_rc"`
	LimitSlot uint32 `c:"limit_slot"`
	LSN       uint64 `c:"lsn"`
}

// CartLine mirrors struct flash_cart_line: one line of a cart (CartOrder),
// a sku of the cart's activity (distinct within the cart), its Qty
// (1..max_qty) and, 0 for none, the version of the sku's terms the buyer
// saw (as OrderReq.SkuVersion).
type CartLine struct {
	SkuID      uint32 `c:"sku_id"`
	Qty        uint32 `c:"qty"`
	SkuVersion uint64 `c:"sku_version"`
}

// CartReq is a cart (flash_cart_req): 1..CartLinesMax Lines of one
// activity, placed as one order, all or nothing (CartOrder).  ReserveMs,
// Token (for line 0's sku), RequestID and ActivityVersion are the cart's,
// as OrderReq's.
type CartReq struct {
	ActivityID      uint32
	UserID          uint64
	Lines           []CartLine
	ReserveMs       uint32
	Token           uint64
	RequestID       uint64
	ActivityVersion uint64
}

// cartReq mirrors struct flash_cart_req, which CartReq is copied into.
type cartReq struct {
	ActivityID      uint32                 `c:"activity_id"`
	Lines           uint32                 `c:"lines"`
	UserID          uint64                 `c:"user_id"`
	ReserveMs       uint32                 `c:"reserve_ms"`
	_               uint32                 `c:"_reserved"`
	Token           uint64                 `c:"token"`
	RequestID       uint64                 `c:"request_id"`
	ActivityVersion uint64                 `c:"activity_version"`
	Line            [CartLinesMax]CartLine `c:"line"`
}

// CartRes mirrors struct flash_cart_res.  CartOrder returns its OrderNo,
// FirstRC, LimitSlot and LSN as a Receipt, Line and SoldOut in a
// *CartError.
type CartRes struct {
	OrderNo   uint64 `c:"order_no"`
	FirstRC   int32  `c:"first_rc"`
	LimitSlot uint32 `c:"limit_slot"`
	LSN       uint64 `c:"lsn"`
	Line      uint32 `c:"line"`
	SoldOut   uint32 `c:"sold_out"`
}

// SkuInfo mirrors struct flash_sku_info.  Price is the one SkuPriceSet
// set (0 until then), Version the version of the sku's terms (its price),
// for OrderReq.SkuVersion.
type SkuInfo struct {
	ActivityID uint32 `c:"activity_id"`
	SkuID      uint32 `c:"sku_id"`
	Shards     uint32 `c:"shards"`
	_          uint32 `c:"_pad"`
	Total      uint64 `c:"total"`
	Available  uint64 `c:"available"`
	Price      uint64 `c:"price"`
	Version    uint64 `c:"version"`
}

// OrderInfo mirrors struct flash_order_info.  A cart (CartOrder) of n lines
// reads as its line 0 with Lines n under its number, and the n-1 numbers
// after it as OrderNone with Line 1..n-1 and Lines n; OrderLines reads it
// whole.  A plain order has Line 0, Lines 1; a number never used Lines 0.
type OrderInfo struct {
	OrderNo    uint64 `c:"order_no"`
	UserID     uint64 `c:"user_id"`
	ActivityID uint32 `c:"activity_id"`
	SkuID      uint32 `c:"sku_id"`
	Qty        uint32 `c:"qty"`
	State      uint32 `c:"state"`
	LimitSlot  uint32 `c:"limit_slot"`
	BizDay     uint32 `c:"biz_day"`
	CreatedNs  int64  `c:"created_ns"`
	PayByNs    int64  `c:"pay_by_ns"`
	Line       uint32 `c:"line"`  // a cart's line, 0..Lines-1; 0 for a plain order
	Lines      uint32 `c:"lines"` // 1 plain, 2..16 a cart, 0 a number that never held an order
}

// Stats mirrors struct flash_stats.
type Stats struct {
	Orders        uint64 `c:"orders"`
	Cancels       uint64 `c:"cancels"`
	SoldOut       uint64 `c:"sold_out"`
	LimitHits     uint64 `c:"limit_hits"`
	TokenRejects  uint64 `c:"token_rejects"`
	Duplicates    uint64 `c:"duplicates"`
	CasRetries    uint64 `c:"cas_retries"`
	Recoveries    uint64 `c:"recoveries"`
	RolledBack    uint64 `c:"rolled_back"`
	RolledForward uint64 `c:"rolled_forward"`
	Activities    uint32 `c:"activities"`
	ActivitiesCap uint32 `c:"activities_cap"`
	Skus          uint32 `c:"skus"`
	SkusCap       uint32 `c:"skus_cap"`
	Shards        uint32 `c:"shards"`
	ShardsCap     uint32 `c:"shards_cap"`
	Users         uint32 `c:"users"`
	UsersCap      uint32 `c:"users_cap"`
	Tokens        uint32 `c:"tokens"`
	TokensCap     uint32 `c:"tokens_cap"`
	Requests      uint32 `c:"requests"`
	RequestsCap   uint32 `c:"requests_cap"`
	Locks         uint32 `c:"locks"`
	LocksCap      uint32 `c:"locks_cap"`
	Procs         uint32 `c:"procs"`
	ProcsCap      uint32 `c:"procs_cap"`
	OrdersUsed    uint64 `c:"orders_used"`
	OrdersCap     uint64 `c:"orders_cap"`
	SegmentBytes  uint64 `c:"segment_bytes"`
	Durability    uint32 `c:"durability"`
	_             uint32 `c:"_pad"`
	Confirms      uint64 `c:"confirms"`
	Expiries      uint64 `c:"expiries"`
}

// Ident mirrors struct flash_ident: the identity a segment shares with its WAL.
type Ident struct {
	Incarnation  uint64 `c:"incarnation"`
	WalLSN       uint64 `c:"wal_lsn"`
	ConsumerPid  int32  `c:"consumer_pid"`
	ConsumerSlot uint32 `c:"consumer_slot"`
}

// Quiet mirrors struct flash_quiet: the segment's activity (QuietGet).
type Quiet struct {
	Ops      uint64 `c:"ops"`
	Consumed uint64 `c:"consumed"`
	Pending  uint64 `c:"pending"`
	InFlight uint32 `c:"in_flight"`
	_        uint32 `c:"_pad"`
}

// DefaultSegOpts returns flash_seg_opts_default(): sizes that fit the demo
// (about 200 MiB of shared memory).
func DefaultSegOpts() SegOpts {
	var c C.struct_flash_seg_opts
	C.flash_seg_opts_default(&c)
	return *(*SegOpts)(unsafe.Pointer(&c))
}

// cSegOpts copies o into C memory (nil stays nil: the defaults).  The
// caller frees the result with C.free.
func cSegOpts(o *SegOpts) *C.struct_flash_seg_opts {
	if o == nil {
		return nil
	}
	c := (*C.struct_flash_seg_opts)(C.malloc(C.sizeof_struct_flash_seg_opts))
	*c = *(*C.struct_flash_seg_opts)(unsafe.Pointer(o))
	return c
}

// SegSize returns the bytes of shared memory a segment with options o
// needs (flash_seg_size); nil means the defaults.
func SegSize(o *SegOpts) (uint64, error) {
	c := cSegOpts(o)
	defer C.free(unsafe.Pointer(c))
	out := (*C.uint64_t)(C.malloc(8))
	defer C.free(unsafe.Pointer(out))
	if rc := C.flash_seg_size(c, out); rc != 0 {
		return 0, codeError(rc)
	}
	return uint64(*out), nil
}

// Create creates segment name (flash_seg_create: O_EXCL, exact mode, every
// byte reserved); o nil means the defaults.
func Create(name string, o *SegOpts) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	c := cSegOpts(o)
	defer C.free(unsafe.Pointer(c))
	return codeError(C.flash_seg_create(cn, c))
}

// Destroy removes the segment's name (flash_seg_destroy); attached handles
// keep working on the old mapping until they close.
func Destroy(name string) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return codeError(C.flash_seg_destroy(cn))
}

// ActivityCheck makes flash_activity_add's checks on a without a segment.
func ActivityCheck(a *Activity) error {
	c := (*C.struct_flash_activity)(C.malloc(C.sizeof_struct_flash_activity))
	defer C.free(unsafe.Pointer(c))
	*c = *(*C.struct_flash_activity)(unsafe.Pointer(a))
	return codeError(C.flash_activity_check(c))
}

// Strerror describes a result code (flash_strerror).
func Strerror(code int) string { return C.GoString(C.flash_strerror(C.int(code))) }

// RCName is the symbolic name of a result code, "FLASH_E?" if unknown
// (flash_rcname).
func RCName(code int) string { return C.GoString(C.flash_rcname(C.int(code))) }

// Compile-time size checks: an index out of range of [1]byte (anything
// but 0) fails the build when a mirror's size differs from its C struct.
var (
	_ = [1]byte{}[unsafe.Sizeof(SegOpts{})-C.sizeof_struct_flash_seg_opts]
	_ = [1]byte{}[unsafe.Sizeof(Activity{})-C.sizeof_struct_flash_activity]
	_ = [1]byte{}[unsafe.Sizeof(OrderReq{})-C.sizeof_struct_flash_order_req]
	_ = [1]byte{}[unsafe.Sizeof(OrderRes{})-C.sizeof_struct_flash_order_res]
	_ = [1]byte{}[unsafe.Sizeof(CartLine{})-C.sizeof_struct_flash_cart_line]
	_ = [1]byte{}[unsafe.Sizeof(cartReq{})-C.sizeof_struct_flash_cart_req]
	_ = [1]byte{}[unsafe.Sizeof(CartRes{})-C.sizeof_struct_flash_cart_res]
	_ = [1]byte{}[unsafe.Sizeof(SkuInfo{})-C.sizeof_struct_flash_sku_info]
	_ = [1]byte{}[unsafe.Sizeof(OrderInfo{})-C.sizeof_struct_flash_order_info]
	_ = [1]byte{}[unsafe.Sizeof(Stats{})-C.sizeof_struct_flash_stats]
	_ = [1]byte{}[unsafe.Sizeof(Ident{})-C.sizeof_struct_flash_ident]
	_ = [1]byte{}[unsafe.Sizeof(Quiet{})-C.sizeof_struct_flash_quiet]
)
