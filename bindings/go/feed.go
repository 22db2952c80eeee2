// feed.go -- the order feed (flash_feed_*): a durable, named consumer of a
// WAL directory's records, like a replication slot.  Feed wraps one
// flash_feed_t; FeedList and FeedDrop need no open feed.
package flashstock

/*
#include <stdlib.h>
#include <flashstock.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Record types (enum flash_rec_type) of Record.Type.
const (
	RecOrder    uint16 = C.FLASH_REC_ORDER
	RecCancel   uint16 = C.FLASH_REC_CANCEL
	RecRestock  uint16 = C.FLASH_REC_RESTOCK
	RecActivity uint16 = C.FLASH_REC_ACTIVITY
	RecSku      uint16 = C.FLASH_REC_SKU
	RecGen      uint16 = C.FLASH_REC_GEN     // a request-id or limit generation moved or was cleared
	RecArchive  uint16 = C.FLASH_REC_ARCHIVE // an ended activity was archived (flashstock archive)
	RecConfirm  uint16 = C.FLASH_REC_CONFIRM // a reservation was paid: ACTIVE now (ship it)
	RecExpire   uint16 = C.FLASH_REC_EXPIRE  // a reservation expired unpaid: its units went back
	RecPrice    uint16 = C.FLASH_REC_PRICE   // a sku's price was set (SkuPriceSet): its new version
)

// A cart's records (CartOrder): one per line of its ORDER, CANCEL, EXPIRE
// or CONFIRM, the line's SkuID and Qty, the cart's OrderNo; Flags carries
// RecFCart, the line (Record.Line) and RecFLast on the last line.
const (
	RecFCart uint16 = C.FLASH_REC_F_CART // a line of a cart
	RecFLast uint16 = C.FLASH_REC_F_LAST // the cart's last line

	recLineShift = 10 // FLASH_REC_LINE: bits 10..13
)

// lineType: a record type an order's line has (a cart's: one per line).
func lineType(t uint16) bool {
	return t == RecOrder || t == RecCancel || t == RecExpire || t == RecConfirm
}

// Cart reports whether r is a line of a cart (FLASH_REC_F_CART).
func (r *Record) Cart() bool { return lineType(r.Type) && r.Flags&RecFCart != 0 }

// Line is the cart's line r is (FLASH_REC_LINE), 0..15; 0 for any other record.
func (r *Record) Line() int {
	if !r.Cart() {
		return 0
	}
	return int(r.Flags>>recLineShift) & 0xf
}

// Last reports whether r is the last line of its cart (FLASH_REC_F_LAST):
// true for a plain order's one record, false for a record of no order.
func (r *Record) Last() bool {
	if r.Cart() {
		return r.Flags&RecFLast != 0
	}
	return lineType(r.Type)
}

// Where a FeedRec came from (enum flash_feed_source), its fields a refill
// could not give back (FeedRec.Missing), and a consumer's state.
const (
	FeedSourceWAL   uint32 = C.FLASH_FEED_WAL
	FeedSourceMySQL uint32 = C.FLASH_FEED_MYSQL

	FeedMissSlot  uint32 = C.FLASH_FEED_MISS_SLOT
	FeedMissTs    uint32 = C.FLASH_FEED_MISS_TS
	FeedMissValue uint32 = C.FLASH_FEED_MISS_VALUE

	FeedStateOK   uint32 = C.FLASH_FEED_OK
	FeedStateLost uint32 = C.FLASH_FEED_LOST

	FeedNameMax = C.FLASH_FEED_NAME_MAX
)

// Record mirrors struct flash_record: one record as the WAL holds it.  Its
// members are shared by every type, so what one holds depends on Type (the
// table of flashstock.h section 9; `flashstock feed --json` prints each
// under the name in brackets):
//
//	RecOrder    ActivityID SkuID Qty (units) OrderNo UserID TsNs BizDay
//	            LimitSlot RequestID Flags; Value [pay_by_ns] nonzero: a
//	            reservation, not paid yet (wait for its RecConfirm)
//	RecCancel   as RecOrder, Qty the units given back, Flags&1
//	            [quota_returned], Flags&2 [reservation] (it was not paid),
//	            no RequestID
//	RecConfirm  as RecOrder (Value [pay_by_ns]), TsNs when paid, no
//	            RequestID, no Flags
//	RecExpire   as RecCancel, Value [pay_by_ns]
//	RecRestock  ActivityID SkuID Value [delta] TsNs
//	RecActivity ActivityID Value [start_ns] TsNs [end_ns] BizDay (bits 0-7
//	            [limit_per_user], 8-15 [scope], 16-31 [flags]) LimitSlot
//	            [max_qty] RequestID [day_offset_s, as int64] OrderNo
//	            [version] Flags&1 [update]: new terms of an existing one
//	RecSku      ActivityID SkuID Value [units] Qty [shards] TsNs OrderNo
//	            [version]
//	RecPrice    ActivityID SkuID Value [price] OrderNo [version] TsNs
//	RecGen      ActivityID [table] SkuID [bank] Qty [op: 1 advance, 2 clear]
//	            OrderNo [generation] Value [start_ns or keys_cleared] TsNs
//	RecArchive  ActivityID OrderNo [orders] Qty [skus] Value [shards]
//	            UserID [tokens] TsNs
type Record struct {
	Type       uint16 `c:"type"`
	Slot       uint16 `c:"slot"`
	ActivityID uint32 `c:"activity_id"` // GEN: the table
	SkuID      uint32 `c:"sku_id"`      // GEN: the bank
	Qty        uint32 `c:"qty"`         // ORDER, CANCEL, CONFIRM, EXPIRE: units; SKU: shards; ARCHIVE: skus; GEN: op
	OrderNo    uint64 `c:"order_no"`    // ARCHIVE: orders; GEN: generation; ACTIVITY, SKU, PRICE: version
	UserID     uint64 `c:"user_id"`     // ARCHIVE: tokens
	Value      int64  `c:"value"`       // ORDER (0: plain), CONFIRM, EXPIRE: pay_by_ns; RESTOCK: delta; SKU: units; ACTIVITY: start_ns; ARCHIVE: shards; GEN: start_ns or keys_cleared; PRICE: price
	TsNs       int64  `c:"ts_ns"`       // ACTIVITY: end_ns
	BizDay     uint32 `c:"biz_day"`     // ACTIVITY: limit_per_user | scope<<8 | flags<<16
	LimitSlot  uint16 `c:"limit_slot"`  // ACTIVITY: max_qty
	Flags      uint16 `c:"flags"`       // CANCEL: quota_returned (bit 0); ACTIVITY: update (bit 0); a cart's line: RecFCart, Line(), RecFLast
	RequestID  uint64 `c:"request_id"`  // ACTIVITY: day_offset_s (as int64)
}

// FeedRec mirrors struct flash_feed_rec: one record of the feed and its LSN.
type FeedRec struct {
	LSN     uint64 `c:"fr_lsn"`
	Seq     uint64 `c:"fr_seq"`
	Rec     Record `c:"fr_rec"`
	Source  uint32 `c:"fr_source"`
	Missing uint32 `c:"fr_missing"`
	Gap     uint64 `c:"fr_gap"`
}

// FeedInfo mirrors struct flash_feed_info: one registered consumer.
type FeedInfo struct {
	RawName      [FeedNameMax + 1]byte `c:"fi_name"`
	State        uint32                `c:"fi_state"`
	Open         uint32                `c:"fi_open"`
	CommittedLSN uint64                `c:"fi_committed_lsn"`
	DurableLSN   uint64                `c:"fi_durable_lsn"`
	FirstLSN     uint64                `c:"fi_first_lsn"`
	LagRecords   uint64                `c:"fi_lag_records"`
	Lag          time.Duration         `c:"fi_lag_ns"` // a uint64 of ns in C
	CreatedNs    int64                 `c:"fi_created_ns"`
	CommitNs     int64                 `c:"fi_commit_ns"`
}

// Name is the consumer's name.
func (i *FeedInfo) Name() string {
	n := 0
	for n < len(i.RawName) && i.RawName[n] != 0 {
		n++
	}
	return string(i.RawName[:n])
}

// FeedOpts are the options of struct flash_feed_opts; the zero value is
// flash_feed_opts_default() (a new consumer starts at the durable end, is
// registered, no refill).
type FeedOpts struct {
	FromStart   bool   // a new consumer starts at the oldest record still in the WAL
	NoCreate    bool   // an unknown consumer is ErrNotFound, not registered
	MySQLURL    string // refill source: mysql://user:pass@host/db?socket=PATH ("": none)
	MySQLStream string // the applier's applied_lsn stream ("": "wal")
}

// Feed is one open consumer of a WAL directory (flash_feed_open).  Its
// methods may be called from any goroutine: a feed belongs to no thread,
// and a mutex gives it to one caller at a time, as flashstock.h asks (a
// Next waiting for a record holds it: Commit, Rewind, Info and Close called
// meanwhile block until that Next returns, at most its wait).  Every other
// call is one bounded C call (Commit: a write, fdatasync, rename and fsync).
// Nothing is committed implicitly: what was not committed is handed out
// again after the next open.  An unreachable Feed is closed by a finalizer
// (which the header allows: a feed belongs to no thread); Close it anyway,
// since until then the consumer's name stays taken.
type Feed struct {
	mu       sync.Mutex
	f        *C.flash_feed_t
	rec      *C.struct_flash_feed_rec // Next's buffer, in C memory
	walDir   string
	consumer string
}

// OpenFeed opens the feed of walDir for consumer (flash_feed_open); o nil
// means the defaults.  Errors: ErrNotFound (no such directory, or an
// unknown consumer with NoCreate), ErrBusy (the consumer is open
// elsewhere), ErrFeedIdent, ErrMySQLConfig, ErrInval (bad name), ...
func OpenFeed(walDir, consumer string, o *FeedOpts) (*Feed, error) {
	cd := C.CString(walDir)
	defer C.free(unsafe.Pointer(cd))
	cn := C.CString(consumer)
	defer C.free(unsafe.Pointer(cn))
	co := (*C.struct_flash_feed_opts)(C.malloc(C.sizeof_struct_flash_feed_opts))
	defer C.free(unsafe.Pointer(co))
	C.flash_feed_opts_default(co)
	if o != nil {
		if o.FromStart {
			co.from_start = 1
		}
		if o.NoCreate {
			co.no_create = 1
		}
		if o.MySQLURL != "" {
			co.mysql_url = C.CString(o.MySQLURL)
			defer C.free(unsafe.Pointer(co.mysql_url))
		}
		if o.MySQLStream != "" {
			co.mysql_stream = C.CString(o.MySQLStream)
			defer C.free(unsafe.Pointer(co.mysql_stream))
		}
	}
	out := (**C.flash_feed_t)(C.malloc(C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(out))
	if rc := C.flash_feed_open(cd, cn, co, out); rc != 0 {
		return nil, codeError(rc)
	}
	f := &Feed{
		f:        *out,
		rec:      (*C.struct_flash_feed_rec)(C.malloc(C.sizeof_struct_flash_feed_rec)),
		walDir:   walDir,
		consumer: consumer,
	}
	runtime.SetFinalizer(f, func(f *Feed) { _ = f.Close() })
	return f, nil
}

// WalDir and Consumer are the arguments the feed was opened with.
func (f *Feed) WalDir() string   { return f.walDir }
func (f *Feed) Consumer() string { return f.consumer }

// Next returns the record after the last one returned (after the committed
// position, for the first call since the open or a Rewind), waiting at
// most wait for one to become durable (0: do not wait; rounded up to whole
// milliseconds; ErrInval when negative or past 2^32-1 ms).  ErrTimeout
// when none came (idle: call again); ErrLost, ErrRefill, ErrMySQLRetry,
// ErrAhead, ErrFeedIdent, ErrCorrupt as flash_feed_next says.
func (f *Feed) Next(wait time.Duration) (FeedRec, error) {
	waitMs, err := msOf(wait)
	if err != nil {
		return FeedRec{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return FeedRec{}, ErrClosed
	}
	if rc := C.flash_feed_next(f.f, f.rec, C.uint32_t(waitMs)); rc != 0 {
		return FeedRec{}, codeError(rc)
	}
	return *(*FeedRec)(unsafe.Pointer(f.rec)), nil
}

// Commit records durably that every record with an LSN <= lsn is
// processed (flash_feed_commit): a later open resumes at lsn + 1.  ErrInval
// above the last LSN returned or below the committed one.
func (f *Feed) Commit(lsn uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return ErrClosed
	}
	return codeError(C.flash_feed_commit(f.f, C.uint64_t(lsn)))
}

// Rewind makes the next Next return again the record after the committed
// position (flash_feed_rewind).
func (f *Feed) Rewind() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return ErrClosed
	}
	return codeError(C.flash_feed_rewind(f.f))
}

// Info is the open feed's state as FeedList reports it (flash_feed_info_get);
// CommittedLSN is the committed position, not what Next has returned.
func (f *Feed) Info() (FeedInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return FeedInfo{}, ErrClosed
	}
	c := (*C.struct_flash_feed_info)(C.malloc(C.sizeof_struct_flash_feed_info))
	defer C.free(unsafe.Pointer(c))
	if rc := C.flash_feed_info_get(f.f, c); rc != 0 {
		return FeedInfo{}, codeError(rc)
	}
	return *(*FeedInfo)(unsafe.Pointer(c)), nil
}

// Close closes the feed (flash_feed_close), after a call running in
// another goroutine returns; no implicit commit.  ErrClosed the second time.
func (f *Feed) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return ErrClosed
	}
	C.flash_feed_close(f.f)
	C.free(unsafe.Pointer(f.rec))
	f.f, f.rec = nil, nil
	runtime.SetFinalizer(f, nil)
	return nil
}

// FeedList lists the consumers registered in walDir, sorted by name, with
// their positions, lag and state (flash_feed_list).  ErrNotFound when the
// directory does not exist.
func FeedList(walDir string) ([]FeedInfo, error) {
	cd := C.CString(walDir)
	defer C.free(unsafe.Pointer(cd))
	n := (*C.size_t)(C.malloc(C.size_t(unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(n))
	if rc := C.flash_feed_list(cd, nil, 0, n); rc != 0 {
		return nil, codeError(rc)
	}
	for {
		want := *n
		if want == 0 {
			return []FeedInfo{}, nil
		}
		buf := (*C.struct_flash_feed_info)(C.malloc(want * C.sizeof_struct_flash_feed_info))
		rc := C.flash_feed_list(cd, buf, want, n)
		if rc != 0 {
			C.free(unsafe.Pointer(buf))
			return nil, codeError(rc)
		}
		if *n <= want { // none registered meanwhile: every entry written
			out := make([]FeedInfo, *n)
			copy(out, unsafe.Slice((*FeedInfo)(unsafe.Pointer(buf)), *n))
			C.free(unsafe.Pointer(buf))
			return out, nil
		}
		C.free(unsafe.Pointer(buf))
	}
}

// FeedDrop unregisters consumer (flash_feed_drop): its position goes and
// retention keeps no WAL for it.  ErrNotFound, ErrBusy (open now).
func FeedDrop(walDir, consumer string) error {
	cd := C.CString(walDir)
	defer C.free(unsafe.Pointer(cd))
	cn := C.CString(consumer)
	defer C.free(unsafe.Pointer(cn))
	return codeError(C.flash_feed_drop(cd, cn))
}

var (
	_ = [1]byte{}[unsafe.Sizeof(Record{})-C.sizeof_struct_flash_record]
	_ = [1]byte{}[unsafe.Sizeof(FeedRec{})-C.sizeof_struct_flash_feed_rec]
	_ = [1]byte{}[unsafe.Sizeof(FeedInfo{})-C.sizeof_struct_flash_feed_info]
)
