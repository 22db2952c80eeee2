// pinned.go -- Pinned: one native handle used directly by the goroutine
// that opened it, the fastest path (one cgo call per operation, no hand-off).
//
// The rule: OpenPinned locks the calling goroutine to its OS thread
// (runtime.LockOSThread; it nests with the caller's own locks) until Close,
// which that goroutine calls.  Only that goroutine may use the Pinned: a
// call from another goroutine runs on another thread, and the engine
// refuses it with ErrWrongThread, changing nothing.  Close from another
// goroutine is allowed once the owner has made its last call (the C API's
// flash_close rule); the owner then stays locked to its thread until it
// ends.
package flashstock

import (
	"context"
	"runtime"
	"time"
)

// Pinned is a native handle for the one goroutine that opened it (or, lent
// by Handle.Run, for the function Run calls).
type Pinned struct {
	n    *native
	lent bool // Handle.Run's: the worker's handle, for the length of one call
}

// ok says whether p may be used: open, and (when lent) within its Run.
func (p *Pinned) ok() bool { return p.n != nil && p.n.h != nil }

// OpenPinned attaches to segment name on the calling goroutine's OS thread,
// locking the goroutine to it until Close.  It takes Open's Options:
// Flags (0 or RdOnly) and SyncWait as Open takes them; Workers does not
// apply (a Pinned is one native handle) and must be 0 (ErrInval).
func OpenPinned(name string, o Options) (*Pinned, error) {
	if o.Workers != 0 {
		return nil, ErrInval
	}
	waitMs, err := o.syncWaitMs()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	p := &Pinned{n: &native{}}
	if err := p.n.open(name, o.Flags); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if p.n.sync && waitMs != p.n.defWaitMs {
		if err := p.n.setSyncWait(waitMs); err != nil {
			p.n.close()
			runtime.UnlockOSThread()
			return nil, err
		}
	}
	return p, nil
}

// Close detaches, and unlocks the goroutine from its thread when called by
// the owner.  A Pinned lent by Handle.Run is not closed (ErrInval): it is
// the worker's.
func (p *Pinned) Close() error {
	if p.lent {
		return ErrInval
	}
	if p.n == nil {
		return ErrClosed
	}
	owner := p.n.h != nil && gettid() == p.n.tid
	err := p.n.close()
	if owner {
		runtime.UnlockOSThread()
	}
	return err
}

// Order places an order (flash_order); ctx bounds the sync wait as for
// Handle.Order.  An async order makes exactly one C call.
func (p *Pinned) Order(ctx context.Context, req OrderReq) (Receipt, error) {
	if !p.ok() {
		return Receipt{}, ErrClosed
	}
	r := Receipt{Slot: p.n.slot}
	err := p.n.order(ctx, &req, &r.OrderRes)
	return r, err
}

// CartOrder places a cart (flash_cart_order), as Handle.CartOrder.
func (p *Pinned) CartOrder(ctx context.Context, req CartReq) (Receipt, error) {
	if !p.ok() {
		return Receipt{}, ErrClosed
	}
	var res CartRes
	err := p.n.cartOrder(ctx, &req, &res)
	return Receipt{OrderRes: OrderRes{OrderNo: res.OrderNo, FirstRC: res.FirstRC,
		LimitSlot: res.LimitSlot, LSN: res.LSN}, Slot: p.n.slot}, err
}

// OrderMany places a batch of orders with one C call (flash_order_many),
// as Handle.OrderMany: one Outcome per request appended to out, a refusal
// in its Outcome and the error the handle's (ErrClosed, ErrWrongThread
// from another goroutine, ...).  With out[:0] of a slice kept between
// batches it allocates nothing.
func (p *Pinned) OrderMany(ctx context.Context, reqs []OrderReq, out []Outcome) ([]Outcome, error) {
	if !p.ok() {
		return out, ErrClosed
	}
	return p.n.orderMany(ctx, reqs, out)
}

// DurableWait waits until the record of an order placed by p is durable,
// as Handle.DurableWait.
func (p *Pinned) DurableWait(ctx context.Context, r Receipt) error {
	if !p.ok() {
		return ErrClosed
	}
	if r.Slot != p.n.slot {
		return ErrInval
	}
	return p.n.waitDurable(ctx, r)
}

// Cancel cancels an order by number (flash_cancel), as Handle.Cancel.
func (p *Pinned) Cancel(ctx context.Context, orderNo uint64) (uint32, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.cancel(ctx, orderNo)
}

// Confirm pays reservation orderNo (flash_confirm), as Handle.Confirm.
func (p *Pinned) Confirm(ctx context.Context, orderNo uint64) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.confirm(ctx, orderNo)
}

// Expire expires a due reservation (flash_expire), as Handle.Expire.
func (p *Pinned) Expire(ctx context.Context, orderNo uint64) (uint32, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.expire(ctx, orderNo)
}

// ExpireDue expires the segment's due reservations (flash_expire_due), as
// Handle.ExpireDue.
func (p *Pinned) ExpireDue(ctx context.Context, max uint32) (uint32, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.expireDue(ctx, max)
}

// Restock adjusts a sku's stock by delta units (flash_restock).
func (p *Pinned) Restock(ctx context.Context, activity, sku uint32, delta int64) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.restock(ctx, activity, sku, delta)
}

// SetSyncWait sets the bound of sync waits whose context has no deadline
// (flash_sync_wait_set; rounded up to whole milliseconds; ErrInval when
// not positive or past 2^32-1 ms).
func (p *Pinned) SetSyncWait(d time.Duration) error {
	if !p.ok() {
		return ErrClosed
	}
	ms, err := msOf(d)
	if err != nil || ms == 0 {
		return ErrInval
	}
	return p.n.setSyncWait(ms)
}

// Slot is this handle's process-table slot, asked of the engine from the
// calling thread (-1 read-only; ErrWrongThread from another goroutine).
func (p *Pinned) Slot() (int, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.slotNow()
}

// The remaining calls are the Handle's, made directly.

func (p *Pinned) Recover() (uint32, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.recover()
}

func (p *Pinned) SegOpts() (SegOpts, error) {
	if !p.ok() {
		return SegOpts{}, ErrClosed
	}
	return p.n.segOpts()
}

func (p *Pinned) ActivityAdd(a Activity) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.activityAdd(&a)
}

func (p *Pinned) SkuAdd(activity, sku uint32, units uint64, shards uint32) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.skuAdd(activity, sku, units, shards)
}

func (p *Pinned) ActivityGet(id uint32) (Activity, error) {
	if !p.ok() {
		return Activity{}, ErrClosed
	}
	return p.n.activityGet(id)
}

func (p *Pinned) ActivityUpdate(a Activity) (uint64, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.activityUpdate(&a)
}

func (p *Pinned) SkuPriceSet(activity, sku uint32, price uint64) (uint64, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.skuPriceSet(activity, sku, price)
}

func (p *Pinned) TokenIssue(activity, sku uint32, user uint64, ttl time.Duration) (uint64, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.tokenIssue(activity, sku, user, ttl)
}

func (p *Pinned) TokenRedeem(activity, sku uint32, user, token uint64) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.tokenRedeem(activity, sku, user, token)
}

func (p *Pinned) LockAcquire(name string, owner uint64, lease time.Duration) (uint64, error) {
	if !p.ok() {
		return 0, ErrClosed
	}
	return p.n.lockAcquire(name, owner, lease)
}

func (p *Pinned) LockRenew(name string, owner uint64, lease time.Duration) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.lockRenew(name, owner, lease)
}

func (p *Pinned) LockRelease(name string, owner uint64) error {
	if !p.ok() {
		return ErrClosed
	}
	return p.n.lockRelease(name, owner)
}

func (p *Pinned) SkuGet(activity, sku uint32) (SkuInfo, error) {
	if !p.ok() {
		return SkuInfo{}, ErrClosed
	}
	return p.n.skuGet(activity, sku)
}

func (p *Pinned) ActivityAt(index uint32) (Activity, error) {
	if !p.ok() {
		return Activity{}, ErrClosed
	}
	return p.n.activityAt(index)
}

func (p *Pinned) SkuAt(index uint32) (SkuInfo, error) {
	if !p.ok() {
		return SkuInfo{}, ErrClosed
	}
	return p.n.skuAt(index)
}

func (p *Pinned) OrderGet(orderNo uint64) (OrderInfo, error) {
	if !p.ok() {
		return OrderInfo{}, ErrClosed
	}
	return p.n.orderGet(orderNo)
}

// OrderLines reads every line of an order (flash_order_lines), as Handle.OrderLines.
func (p *Pinned) OrderLines(orderNo uint64) ([]OrderInfo, error) {
	if !p.ok() {
		return nil, ErrClosed
	}
	return p.n.orderLines(orderNo)
}

// OrdersMax is 0 on a closed handle and, as flash_orders_max, from another thread.
func (p *Pinned) OrdersMax() uint64 {
	if !p.ok() {
		return 0
	}
	return p.n.ordersMax()
}

func (p *Pinned) Stats() (Stats, error) {
	if !p.ok() {
		return Stats{}, ErrClosed
	}
	return p.n.stats()
}

func (p *Pinned) Ident() (Ident, error) {
	if !p.ok() {
		return Ident{}, ErrClosed
	}
	return p.n.ident()
}

func (p *Pinned) Quiet() (Quiet, error) {
	if !p.ok() {
		return Quiet{}, ErrClosed
	}
	return p.n.quiet()
}
