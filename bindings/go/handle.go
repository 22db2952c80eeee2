// handle.go -- Handle: one object, safe for any number of goroutines, over a
// small pool of workers, each a goroutine locked to its own OS thread
// (runtime.LockOSThread) that owns one native handle.  A call is handed to a
// worker and runs there, so a native handle is only ever used by the thread
// that opened it -- the way lmdb-go keeps LMDB's thread rules.
//
// Synchronization:
//
//	caller  -> pool   a free worker is taken from idle (a buffered channel)
//	                  or started, up to Options.Workers, lazily
//	caller  -> worker the call (a func) goes over the worker's channel; the
//	                  worker runs it and answers on the message's done
//	                  channel; the caller's receive is the happens-before
//	                  edge that makes the call's results visible to it
//	Close             takes the pool's write lock: every call holds the read
//	                  lock from before it picks a worker until its answer,
//	                  so Close waits for calls in flight and no call starts
//	                  after it
//	Run               holds a worker (and the read lock) while its function
//	                  runs on that worker's goroutine; a Handle method called
//	                  from that function would wait for itself (Close for
//	                  the read lock, DurableWait/Obs/SetSyncWait for the busy
//	                  worker, any call for a worker when there is one), so
//	                  every method first asks reentered(): the function's
//	                  goroutine is locked to the worker's OS thread, and the
//	                  pool keeps the thread ids of the workers lent by Run --
//	                  a match is ErrRunReentry.  Outside any Run the check is
//	                  one atomic load
//
// Cost: each call is a hand-off between OS threads (a futex wake and a wait
// when the worker sleeps); Pinned is the direct path (bench/, README).
package flashstock

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options of Open and OpenPinned.  The zero value is ready to use.
type Options struct {
	Flags    uint          // 0 or RdOnly
	Workers  int           // Open: native handles (OS threads) at most; 0: runtime.GOMAXPROCS(0); OpenPinned: 0
	SyncWait time.Duration // bound of a sync wait whose context has no deadline; 0: SyncWaitDefault
}

// syncWaitMs is o.SyncWait for the C API (0: the default): rounded up to
// whole milliseconds, ErrInval when negative or past 2^32-1 ms.
func (o *Options) syncWaitMs() (uint32, error) {
	if o.SyncWait == 0 {
		return uint32(SyncWaitDefault / time.Millisecond), nil
	}
	return msOf(o.SyncWait)
}

// Handle is an open segment, for any number of goroutines.  Each method runs
// on one of the handle's workers; the methods that can wait for the WAL in
// sync durability (Order, Cancel, Restock, DurableWait) take a context that
// bounds the wait, and the wait for a free worker.
type Handle struct {
	p *pool
}

// Receipt is the outcome of an order: the C result (OrderNo, FirstRC,
// LimitSlot, LSN) and the process-table slot of the native handle that
// placed it, whose ring LSN is a position in (DurableWait needs it).
type Receipt struct {
	OrderRes
	Slot int
}

// Outcome is one order's outcome in a batch (OrderMany): its receipt, and
// the error Order would have returned for it alone -- nil when it is
// placed; a refusal (ErrSoldOut, ErrLimit, ErrDuplicate with FirstRC and
// OrderNo, ErrInval, ...) is a shared *Error, which allocates nothing.  The
// receipt is filled as Order fills it (placed, ErrDuplicate, ErrFateUnknown)
// and zero but Slot otherwise.
type Outcome struct {
	Receipt
	Err error
}

type msg struct {
	fn   func(*native)
	done chan struct{}
}

type worker struct {
	n    native
	call chan msg
	done chan struct{} // answers to the caller holding the worker
	exit chan struct{}

	// Handle.Order's call, in place: written by the caller holding the
	// worker before its send on call, read back after its receive on done
	// (the channel operations order them), so that an order through the
	// pool allocates nothing
	oreq    OrderReq
	ores    OrderRes
	octx    context.Context
	oerr    error
	orderFn func(*native)

	// Handle.OrderMany's call, in place in the same way (with octx and
	// oerr): the caller's requests and outcome slice, handed back after
	// done and cleared, so that the worker keeps no caller's memory
	mreqs  []OrderReq
	mout   []Outcome
	manyFn func(*native)
}

func (w *worker) order(n *native) { w.oerr = n.order(w.octx, &w.oreq, &w.ores) }

func (w *worker) orderMany(n *native) { w.mout, w.oerr = n.orderMany(w.octx, w.mreqs, w.mout) }

type pool struct {
	name  string
	flags uint
	max   int

	rw     sync.RWMutex // read: a call in flight; write: Close
	closed bool

	mu       sync.Mutex // started, workers, waitMs, lent
	started  int
	workers  []*worker
	bySlot   map[int]*worker
	waitMs   uint32
	idle     chan *worker
	startErr error

	lending atomic.Int32     // functions Run is running now
	lent    map[int]struct{} // their workers' OS thread ids
}

// reentered says whether the caller is a function this pool's Run is
// running (its goroutine is locked to the lent worker's thread, and no
// other goroutine runs on that thread meanwhile).  A goroutine inside Run
// made its own lending.Add before calling the function, so it sees it.
func (p *pool) reentered() bool {
	if p.lending.Load() == 0 {
		return false
	}
	tid := gettid()
	p.mu.Lock()
	_, in := p.lent[tid]
	p.mu.Unlock()
	return in
}

// lend marks the worker on thread tid as running a Run function (on) or
// no longer (off).
func (p *pool) lend(tid int, on bool) {
	p.mu.Lock()
	if on {
		if p.lent == nil {
			p.lent = map[int]struct{}{}
		}
		p.lent[tid] = struct{}{}
		p.lending.Add(1)
	} else {
		delete(p.lent, tid)
		p.lending.Add(-1)
	}
	p.mu.Unlock()
}

// Open attaches to segment name.  The first worker opens its native handle
// at once, so an attach error (ErrNoSeg, ErrMode, ...) is returned here;
// more workers start when calls overlap.  Close the handle when done (a
// Handle that becomes unreachable is closed by a finalizer).
func Open(name string, o Options) (*Handle, error) {
	max := o.Workers
	if max <= 0 {
		max = runtime.GOMAXPROCS(0)
	}
	wait, err := o.syncWaitMs()
	if err != nil {
		return nil, err
	}
	p := &pool{name: name, flags: o.Flags, max: max, waitMs: wait,
		idle: make(chan *worker, max), bySlot: map[int]*worker{}}
	p.mu.Lock()
	w, err := p.start()
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p.idle <- w
	h := &Handle{p: p}
	runtime.SetFinalizer(h, func(h *Handle) { h.p.close() })
	return h, nil
}

// start opens one more worker (p.mu held).
func (p *pool) start() (*worker, error) {
	w := &worker{call: make(chan msg), done: make(chan struct{}, 1), exit: make(chan struct{})}
	w.orderFn = w.order
	w.manyFn = w.orderMany
	ready := make(chan error, 1)
	go w.run(p.name, p.flags, p.waitMs, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	p.started++
	p.workers = append(p.workers, w)
	p.bySlot[w.n.slot] = w
	return w, nil
}

// run is the worker: it locks its goroutine to this OS thread for its whole
// life, opens the native handle here, runs calls, and closes the handle
// here when its channel closes.
func (w *worker) run(name string, flags uint, waitMs uint32, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := w.n.open(name, flags); err != nil {
		ready <- err
		return
	}
	if w.n.sync && waitMs != w.n.defWaitMs {
		if err := w.n.setSyncWait(waitMs); err != nil {
			w.n.close()
			ready <- err
			return
		}
	}
	ready <- nil
	for m := range w.call {
		m.fn(&w.n)
		m.done <- struct{}{}
	}
	w.n.close()
	close(w.exit)
}

// get takes a free worker, starting one if all are busy and fewer than max
// run; else it waits for one (or ctx).
func (p *pool) get(ctx context.Context) (*worker, error) {
	select {
	case w := <-p.idle:
		return w, nil
	default:
	}
	p.mu.Lock()
	if p.started < p.max && p.startErr == nil {
		w, err := p.start()
		if err != nil {
			// e.g. the process table is full: make do with the workers
			// there are; with none, the attach error is the answer
			if p.started == 0 {
				p.mu.Unlock()
				return nil, err
			}
			p.startErr = err
		}
		p.mu.Unlock()
		if err == nil {
			return w, nil
		}
	} else {
		p.mu.Unlock()
	}
	select {
	case w := <-p.idle:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// do runs fn on a free worker.
func (p *pool) do(ctx context.Context, fn func(*native)) error {
	if p.reentered() {
		return ErrRunReentry
	}
	p.rw.RLock()
	defer p.rw.RUnlock()
	if p.closed {
		return ErrClosed
	}
	w, err := p.get(ctx)
	if err != nil {
		return err
	}
	w.call <- msg{fn: fn, done: w.done}
	<-w.done
	p.idle <- w
	return nil
}

// doOn runs fn on the worker of a slot (a durable wait for an order that
// worker placed), whether or not another call holds it: the worker runs
// calls one at a time.
func (p *pool) doOn(ctx context.Context, slot int, fn func(*native)) error {
	if p.reentered() {
		return ErrRunReentry
	}
	p.rw.RLock()
	defer p.rw.RUnlock()
	if p.closed {
		return ErrClosed
	}
	p.mu.Lock()
	w := p.bySlot[slot]
	p.mu.Unlock()
	if w == nil {
		return ErrInval
	}
	done := make(chan struct{}, 1)
	select {
	case w.call <- msg{fn: fn, done: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}

// each runs fn on every started worker, one after the other.
func (p *pool) each(fn func(*native) error) error {
	if p.reentered() {
		return ErrRunReentry
	}
	p.rw.RLock()
	defer p.rw.RUnlock()
	if p.closed {
		return ErrClosed
	}
	p.mu.Lock()
	ws := append([]*worker(nil), p.workers...)
	p.mu.Unlock()
	var first error
	for _, w := range ws {
		done := make(chan struct{}, 1)
		var err error
		w.call <- msg{fn: func(n *native) { err = fn(n) }, done: done}
		<-done
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (p *pool) close() error {
	p.rw.Lock()
	defer p.rw.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.closed = true
	p.mu.Lock()
	ws := p.workers
	p.mu.Unlock()
	for _, w := range ws {
		close(w.call)
		<-w.exit
	}
	return nil
}

// Close closes every worker's native handle, each on its own thread, after
// the calls in flight; later calls return ErrClosed.  From inside a
// function Run is running it is ErrRunReentry, and the handle stays open.
func (h *Handle) Close() error {
	if h.p.reentered() {
		return ErrRunReentry
	}
	runtime.SetFinalizer(h, nil)
	return h.p.close()
}

// Order places an order (flash_order).  ctx bounds the wait for a free
// worker and, in sync durability, for the order's record to be durable:
// when it ends first, the order is placed and the error is ErrFateUnknown
// (unwrapping to ctx.Err()), with the receipt filled as for success --
// DurableWait learns the fate later.  With ErrDuplicate, FirstRC and
// OrderNo give the first outcome.  ErrStale: a version req names
// (ActivityVersion, SkuVersion) is no longer the current one; nothing was
// taken, the token and the request id are untouched.
func (h *Handle) Order(ctx context.Context, req OrderReq) (Receipt, error) {
	p := h.p
	if p.reentered() {
		return Receipt{}, ErrRunReentry
	}
	p.rw.RLock()
	defer p.rw.RUnlock()
	if p.closed {
		return Receipt{}, ErrClosed
	}
	w, err := p.get(ctx)
	if err != nil {
		return Receipt{}, err
	}
	w.oreq, w.octx = req, ctx
	w.call <- msg{fn: w.orderFn, done: w.done}
	<-w.done
	r, err := Receipt{OrderRes: w.ores, Slot: w.n.slot}, w.oerr
	w.octx, w.oerr = nil, nil
	p.idle <- w
	return r, err
}

// CartOrder places a cart (flash_cart_order): 1..CartLinesMax lines of
// distinct skus of one activity as one order, all or nothing -- every
// line's units and one limit slot taken, or none.  The receipt is the
// cart's: its number (its later lines hold the numbers after it; OrderLines
// reads it whole), its limit slot and the LSN of its last record;
// Cancel, Confirm and Expire of the number act on every line.  ctx as for
// Order; the errors are Order's, a refusal for one line a *CartError
// (errors.Is(err, ErrSoldOut) holds) naming the line and, sold out, every
// short line.  An activity of ScopeSku refuses carts: ErrInval.
func (h *Handle) CartOrder(ctx context.Context, req CartReq) (Receipt, error) {
	var r Receipt
	var err error
	if e := h.p.do(ctx, func(n *native) {
		var res CartRes
		err = n.cartOrder(ctx, &req, &res)
		r = Receipt{OrderRes: OrderRes{OrderNo: res.OrderNo, FirstRC: res.FirstRC,
			LimitSlot: res.LimitSlot, LSN: res.LSN}, Slot: n.slot}
	}); e != nil {
		return Receipt{}, e
	}
	return r, err
}

// OrderMany places a batch of orders in one call on one worker
// (flash_order_many): each is judged and committed as Order would judge
// and commit it, in the order given, later ones seeing earlier ones (a
// user's second order meets the limit, a repeated request id is
// ErrDuplicate), and a refusal does not stop the orders after it.  One
// Outcome per request is appended to out, in the order of reqs, and the
// extended slice returned: pass out[:0] of a slice kept between batches
// and a batch allocates nothing once the slice is long enough.  The
// error is the handle's, with nothing placed and out returned as it was:
// ErrClosed, ErrReadOnly, ctx's error while waiting for a free worker (or,
// in sync durability, ctx ended before the call).  An empty batch places
// nothing and returns out, nil.
//
// In sync durability the batch waits once, for its last record, under ctx
// as Order does: every placed order's Err is then nil, or ErrFateUnknown
// (unwrapping to ctx.Err(), the receipt filled: DurableWait learns the
// fate) or ErrDurability, the same for all of them.
func (h *Handle) OrderMany(ctx context.Context, reqs []OrderReq, out []Outcome) ([]Outcome, error) {
	p := h.p
	if p.reentered() {
		return out, ErrRunReentry
	}
	p.rw.RLock()
	defer p.rw.RUnlock()
	if p.closed {
		return out, ErrClosed
	}
	if len(reqs) == 0 {
		return out, nil
	}
	w, err := p.get(ctx)
	if err != nil {
		return out, err
	}
	w.mreqs, w.mout, w.octx = reqs, out, ctx
	w.call <- msg{fn: w.manyFn, done: w.done}
	<-w.done
	out, err = w.mout, w.oerr
	w.mreqs, w.mout, w.octx, w.oerr = nil, nil, nil, nil
	p.idle <- w
	return out, err
}

// DurableWait waits until the record of an order this handle placed is
// durable (flash_durable_wait, on the worker that placed it), until ctx
// ends (ErrFateUnknown unwrapping to ctx.Err()); with a context that never
// ends, at most the handle's sync wait bound.
func (h *Handle) DurableWait(ctx context.Context, r Receipt) error {
	var err error
	if e := h.p.doOn(ctx, r.Slot, func(n *native) { err = n.waitDurable(ctx, r) }); e != nil {
		return e
	}
	return err
}

// Cancel cancels an order by number (flash_cancel) and returns the units
// given back; in sync durability ctx's deadline bounds the wait
// (ErrFateUnknown: cancelled in memory, not yet durable; units are set).
func (h *Handle) Cancel(ctx context.Context, orderNo uint64) (uint32, error) {
	var units uint32
	var err error
	if e := h.p.do(ctx, func(n *native) { units, err = n.cancel(ctx, orderNo) }); e != nil {
		return 0, e
	}
	return units, err
}

// Confirm pays reservation orderNo (flash_confirm): RESERVED -> ACTIVE.  An
// order ACTIVE already gives nil (a retried payment callback is answered
// the same).  ErrExpired when its pay-by time passed: it is expired now,
// its units back.  ctx as for Cancel.
func (h *Handle) Confirm(ctx context.Context, orderNo uint64) error {
	var err error
	if e := h.p.do(ctx, func(n *native) { err = n.confirm(ctx, orderNo) }); e != nil {
		return e
	}
	return err
}

// Expire expires reservation orderNo once its pay-by time has come
// (flash_expire) and returns the units given back: ErrNotDue before it,
// ErrConfirmed for an ACTIVE order, ErrExpired when expired already
// (nothing given back).  ctx as for Cancel.
func (h *Handle) Expire(ctx context.Context, orderNo uint64) (uint32, error) {
	var units uint32
	var err error
	if e := h.p.do(ctx, func(n *native) { units, err = n.expire(ctx, orderNo) }); e != nil {
		return 0, e
	}
	return units, err
}

// ExpireDue expires every reservation of the segment whose pay-by time has
// come, at most max (0: no bound), as a process without a daemon must
// (flash_expire_due; `flashstock serve` expires them itself), and returns
// how many it expired -- also with an error, the first failure other than
// the races another handle won: those expired before it.  ctx as for Cancel.
func (h *Handle) ExpireDue(ctx context.Context, max uint32) (uint32, error) {
	var count uint32
	var err error
	if e := h.p.do(ctx, func(n *native) { count, err = n.expireDue(ctx, max) }); e != nil {
		return 0, e
	}
	return count, err
}

// Restock adjusts a sku's stock by delta units (flash_restock); ctx as for Cancel.
func (h *Handle) Restock(ctx context.Context, activity, sku uint32, delta int64) error {
	var err error
	if e := h.p.do(ctx, func(n *native) { err = n.restock(ctx, activity, sku, delta) }); e != nil {
		return e
	}
	return err
}

// SetSyncWait sets the bound of sync waits whose context has no deadline,
// on every worker, now and later (flash_sync_wait_set; rounded up to whole
// milliseconds; ErrInval when not positive or past 2^32-1 ms).
func (h *Handle) SetSyncWait(d time.Duration) error {
	ms, err := msOf(d)
	if err != nil || ms == 0 {
		return ErrInval
	}
	h.p.mu.Lock()
	h.p.waitMs = ms
	h.p.mu.Unlock()
	return h.p.each(func(n *native) error {
		if !n.sync {
			return nil
		}
		return n.setSyncWait(ms)
	})
}

// Run calls fn on one worker's OS thread with that worker's native handle
// lent as a *Pinned, so that several calls cost one hand-off (as lmdb-go's
// Env.Update runs a transaction on a locked thread): e.g. a token issue and
// the order that redeems it.  ctx bounds the wait for a free worker.  The
// rules: p is valid only until fn returns (later calls on it return
// ErrClosed), only fn's goroutine may use it (from another goroutine the
// engine answers ErrWrongThread), p.Close is refused (ErrInval), and fn
// calls p's methods, not h's: a method of h called from fn's goroutine
// (Order, Close, Run itself, ...) would wait for the worker fn holds, so it
// returns ErrRunReentry at once and does nothing.  (A goroutine fn starts
// may call h, but fn must not wait for it when h has one worker: that wait
// is the caller's to avoid.)
func (h *Handle) Run(ctx context.Context, fn func(p *Pinned) error) error {
	var err error
	if e := h.p.do(ctx, func(n *native) {
		h.p.lend(n.tid, true)
		defer h.p.lend(n.tid, false)
		p := &Pinned{n: n, lent: true}
		err = fn(p)
		p.n = nil
	}); e != nil {
		return e
	}
	return err
}

// run is the shape of every other method: fn on a free worker, with no
// wait to bound but the one for a worker.
func (h *Handle) run(fn func(*native)) error { return h.p.do(context.Background(), fn) }

// Recover finishes the operations of dead handles (flash_recover) and
// returns how many were recovered.
func (h *Handle) Recover() (n uint32, err error) {
	if e := h.run(func(x *native) { n, err = x.recover() }); e != nil {
		return 0, e
	}
	return
}

// Slots returns the process-table slot of every worker's native handle
// (-1 each for a read-only handle).
func (h *Handle) Slots() []int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	s := make([]int, 0, len(h.p.workers))
	for _, w := range h.p.workers {
		s = append(s, w.n.slot)
	}
	return s
}

// SegOpts returns the options the segment was created with (flash_seg_opts_get).
func (h *Handle) SegOpts() (o SegOpts, err error) {
	if e := h.run(func(x *native) { o, err = x.segOpts() }); e != nil {
		return o, e
	}
	return
}

// ActivityAdd adds an activity to the catalog (flash_activity_add).
func (h *Handle) ActivityAdd(a Activity) (err error) {
	if e := h.run(func(x *native) { err = x.activityAdd(&a) }); e != nil {
		return e
	}
	return
}

// SkuAdd adds a sku with units of stock over shards stock slots (flash_sku_add).
func (h *Handle) SkuAdd(activity, sku uint32, units uint64, shards uint32) (err error) {
	if e := h.run(func(x *native) { err = x.skuAdd(activity, sku, units, shards) }); e != nil {
		return e
	}
	return
}

// ActivityGet reads activity id: its terms and their version
// (flash_activity_get; ErrNotFound when there is none, or it was archived).
// A page shows Version with the terms, and an order names it
// (OrderReq.ActivityVersion).
func (h *Handle) ActivityGet(id uint32) (a Activity, err error) {
	if e := h.run(func(x *native) { a, err = x.activityGet(id) }); e != nil {
		return a, e
	}
	return
}

// ActivityUpdate gives live activity a.ID the terms of a -- its window,
// LimitPerUser, MaxQty and Flags -- and returns their new version
// (flash_activity_update).  a.Version 0 changes them whatever their version;
// the version ActivityGet read, only if they are still at it, else ErrStale
// (another change came in between; nothing changed).  ErrInval when Scope or DayOffsetS
// differ from the current ones or LimitPerUser is lower (a limit may grow,
// never shrink), ErrNotFound, ErrEnded (being archived), ErrBusy (nothing
// changed: retry).  It blocks its worker briefly: the orders open in other
// handles end first (at most 2 s); buyers never wait for it.
func (h *Handle) ActivityUpdate(a Activity) (version uint64, err error) {
	if e := h.run(func(x *native) { version, err = x.activityUpdate(&a) }); e != nil {
		return 0, e
	}
	return
}

// SkuPriceSet sets a sku's price (the shop's smallest unit, 0..PriceMax; a
// sku starts at 0) and returns the new version of its terms, moved on also
// for the same price (flash_sku_price_set).  Errors and blocking as
// ActivityUpdate.
func (h *Handle) SkuPriceSet(activity, sku uint32, price uint64) (version uint64, err error) {
	if e := h.run(func(x *native) { version, err = x.skuPriceSet(activity, sku, price) }); e != nil {
		return 0, e
	}
	return
}

// TokenIssue issues a one-time token for (activity, sku, user) valid for
// ttl (flash_token_issue; rounded up to whole milliseconds).
func (h *Handle) TokenIssue(activity, sku uint32, user uint64, ttl time.Duration) (tok uint64, err error) {
	if e := h.run(func(x *native) { tok, err = x.tokenIssue(activity, sku, user, ttl) }); e != nil {
		return 0, e
	}
	return
}

// TokenRedeem redeems a token outside the order path, once (flash_token_redeem).
func (h *Handle) TokenRedeem(activity, sku uint32, user, token uint64) (err error) {
	if e := h.run(func(x *native) { err = x.tokenRedeem(activity, sku, user, token) }); e != nil {
		return e
	}
	return
}

// LockAcquire acquires lock name for owner for lease and returns its
// fencing token (flash_lock_acquire; lease rounded up to whole milliseconds).
func (h *Handle) LockAcquire(name string, owner uint64, lease time.Duration) (fence uint64, err error) {
	if e := h.run(func(x *native) { fence, err = x.lockAcquire(name, owner, lease) }); e != nil {
		return 0, e
	}
	return
}

// LockRenew extends the holder's lease to now + lease (flash_lock_renew).
func (h *Handle) LockRenew(name string, owner uint64, lease time.Duration) (err error) {
	if e := h.run(func(x *native) { err = x.lockRenew(name, owner, lease) }); e != nil {
		return e
	}
	return
}

// LockRelease releases the lock, only for its holder (flash_lock_release).
func (h *Handle) LockRelease(name string, owner uint64) (err error) {
	if e := h.run(func(x *native) { err = x.lockRelease(name, owner) }); e != nil {
		return e
	}
	return
}

// SkuGet reads a sku's stock (flash_sku_get).
func (h *Handle) SkuGet(activity, sku uint32) (s SkuInfo, err error) {
	if e := h.run(func(x *native) { s, err = x.skuGet(activity, sku) }); e != nil {
		return s, e
	}
	return
}

// ActivityAt reads the catalog's activity at index (ErrNotFound past the end).
func (h *Handle) ActivityAt(index uint32) (a Activity, err error) {
	if e := h.run(func(x *native) { a, err = x.activityAt(index) }); e != nil {
		return a, e
	}
	return
}

// SkuAt reads the catalog's sku at index (ErrNotFound past the end).
func (h *Handle) SkuAt(index uint32) (s SkuInfo, err error) {
	if e := h.run(func(x *native) { s, err = x.skuAt(index) }); e != nil {
		return s, e
	}
	return
}

// OrderGet reads one order (flash_order_get).
func (h *Handle) OrderGet(orderNo uint64) (o OrderInfo, err error) {
	if e := h.run(func(x *native) { o, err = x.orderGet(orderNo) }); e != nil {
		return o, e
	}
	return
}

// OrderLines reads every line of an order (flash_order_lines), in line
// order: one for a plain order, 2..CartLinesMax for a cart (each line's
// SkuID, Qty and Line, the cart's number, state and other fields).
// ErrNotFound for a number that holds no order, also the number of a
// cart's later line (the cart is orderNo - Line).
func (h *Handle) OrderLines(orderNo uint64) (lines []OrderInfo, err error) {
	if e := h.run(func(x *native) { lines, err = x.orderLines(orderNo) }); e != nil {
		return nil, e
	}
	return
}

// OrdersMax is the highest order number any handle has taken (flash_orders_max).
func (h *Handle) OrdersMax() (max uint64, err error) {
	err = h.run(func(x *native) { max = x.ordersMax() })
	return
}

// Stats sums the counters and reads fill levels (flash_stats_get).
func (h *Handle) Stats() (s Stats, err error) {
	if e := h.run(func(x *native) { s, err = x.stats() }); e != nil {
		return s, e
	}
	return
}

// Ident reads the segment's identity and its consumer (flash_ident_get).
func (h *Handle) Ident() (id Ident, err error) {
	if e := h.run(func(x *native) { id, err = x.ident() }); e != nil {
		return id, e
	}
	return
}

// Quiet reads the segment's activity figures (flash_quiet_get).
func (h *Handle) Quiet() (q Quiet, err error) {
	if e := h.run(func(x *native) { q, err = x.quiet() }); e != nil {
		return q, e
	}
	return
}

// checkThreads asks every worker's native handle for its slot from the
// worker's thread and reports whether each call ran on the thread that
// opened the handle (tests: the engine answers FLASH_EWRONG_THREAD otherwise).
func (h *Handle) checkThreads() error {
	return h.p.each(func(n *native) error {
		if gettid() != n.tid {
			return ErrWrongThread
		}
		_, err := n.slotNow()
		return err
	})
}
