// batch_test.go -- OrderMany (flash_order_many) through the Handle, a Pinned
// and a Pinned lent by Run: a batch gives what the same orders placed one by
// one give on a twin segment (outcomes, receipts, order records, stock,
// counters), a refusal in the middle stops nothing after it, outcomes are
// appended to the caller's slice, the batch arrays grow and are reused
// without allocating, an empty batch places nothing, handle-level refusals
// place nothing, and a sync batch's one wait ends as a single order's does.
package flashstock

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// batcher is what a Handle and a Pinned both offer.
type batcher interface {
	Order(ctx context.Context, req OrderReq) (Receipt, error)
	OrderMany(ctx context.Context, reqs []OrderReq, out []Outcome) ([]Outcome, error)
	SkuGet(activity, sku uint32) (SkuInfo, error)
	OrderGet(orderNo uint64) (OrderInfo, error)
	Stats() (Stats, error)
	Obs() (Obs, error)
}

// code is an outcome's result code: 0 for nil.
func code(err error) int {
	var fe *Error
	if err == nil {
		return 0
	}
	if errors.As(err, &fe) {
		return fe.Code
	}
	return 1 // not a flashstock code: never expected
}

// twinSale loads what loaded does (limit 2 per user, 6 units of sku 10)
// plus activity 2, not open for another hour, with sku 20.
func twinSale(t *testing.T, h *Handle) {
	t.Helper()
	later := sale(2, 0)
	later.ID = 2
	later.StartNs, later.EndNs = time.Now().Add(time.Hour).UnixNano(), time.Now().Add(2*time.Hour).UnixNano()
	if err := h.ActivityAdd(later); err != nil {
		t.Fatal(err)
	}
	if err := h.SkuAdd(2, 20, 5, 1); err != nil {
		t.Fatal(err)
	}
}

// mixedBatch has every kind of refusal between placed orders, each judged
// on the orders before it in the batch: the result code each must get.
func mixedBatch() ([]OrderReq, []int) {
	q := func(user uint64, qty uint32, req uint64) OrderReq {
		return OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: qty, RequestID: req}
	}
	reqs := []OrderReq{
		q(1, 2, 101), // placed: 4 units left
		q(1, 1, 102), // placed: user 1's second order (the limit), 3 left
		q(1, 1, 103), // the limit: user 1 holds 2 orders
		q(1, 2, 101), // request 101 again: its first outcome, no order
		q(2, 0, 104), // bad qty
		q(2, 9, 105), // above max_qty
		q(0, 1, 106), // user 0
		{ActivityID: 1, SkuID: 11, UserID: 2, Qty: 1, RequestID: 107}, // no such sku
		{ActivityID: 2, SkuID: 20, UserID: 2, Qty: 1, RequestID: 108}, // not started
		q(3, 2, 109), // placed after all that: 1 left
		q(4, 2, 110), // sold out: 2 of 1
		q(4, 1, 111), // placed: the last unit
		q(5, 1, 0),   // sold out
		q(1, 1, 103), // request 103 again: its first outcome was the limit
	}
	want := []int{0, 0, ErrLimit.Code, ErrDuplicate.Code, ErrInval.Code, ErrInval.Code, ErrInval.Code,
		ErrNotFound.Code, ErrNotStarted.Code, 0, ErrSoldOut.Code, 0, ErrSoldOut.Code, ErrDuplicate.Code}
	return reqs, want
}

// viaPinned runs fn with a Pinned opened (and closed) on a goroutine locked
// to its thread, as its owner must.
func viaPinned(t *testing.T, name string, fn func(p *Pinned)) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err := OpenPinned(name, Options{})
		if err != nil {
			t.Errorf("OpenPinned: %v", err)
			return
		}
		defer p.Close()
		fn(p)
	}()
	<-done
}

// The same requests on two twin segments, in one batch on the first and one
// by one on the second, through the same kind of handle.
func TestOrderManyGivesWhatOneByOneOrdersGiveAndARefusalStopsNothingAfterIt(t *testing.T) {
	reqs, want := mixedBatch()
	ctx := context.Background()
	for _, via := range []string{"Handle", "Pinned", "Run"} {
		t.Run(via, func(t *testing.T) {
			nameB, hB := loaded(t, smallOpts(), 2, 0, 6)
			nameS, hS := loaded(t, smallOpts(), 2, 0, 6)
			twinSale(t, hB)
			twinSale(t, hS)
			with := func(name string, h *Handle, fn func(b batcher)) {
				switch via {
				case "Handle":
					fn(h)
				case "Pinned":
					viaPinned(t, name, func(p *Pinned) { fn(p) })
				case "Run":
					if err := h.Run(ctx, func(p *Pinned) error { fn(p); return nil }); err != nil {
						t.Fatal(err)
					}
				}
			}
			var batch []Outcome
			var bStock SkuInfo
			var bStats Stats
			var bObs Obs
			var bInfo []OrderInfo
			with(nameB, hB, func(b batcher) {
				out, err := b.OrderMany(ctx, reqs, nil)
				if err != nil || len(out) != len(reqs) {
					t.Errorf("OrderMany: %d outcomes, %v", len(out), err) // not Fatal: maybe not the test's goroutine
					return
				}
				batch = out
				bStock, _ = b.SkuGet(1, 10)
				bStats, _ = b.Stats()
				bObs, _ = b.Obs()
				for _, o := range out {
					if o.Err == nil {
						oi, err := b.OrderGet(o.OrderNo)
						if err != nil {
							t.Errorf("OrderGet(%d): %v", o.OrderNo, err)
						}
						bInfo = append(bInfo, oi)
					}
				}
			})
			var single []Outcome
			var sStock SkuInfo
			var sStats Stats
			var sObs Obs
			var sInfo []OrderInfo
			with(nameS, hS, func(b batcher) {
				for _, r := range reqs {
					rc, err := b.Order(ctx, r)
					single = append(single, Outcome{Receipt: rc, Err: err})
				}
				sStock, _ = b.SkuGet(1, 10)
				sStats, _ = b.Stats()
				sObs, _ = b.Obs()
				for _, o := range single {
					if o.Err == nil {
						oi, _ := b.OrderGet(o.OrderNo)
						sInfo = append(sInfo, oi)
					}
				}
			})
			if len(batch) != len(reqs) || len(single) != len(reqs) {
				t.FailNow()
			}
			for i := range reqs {
				b, s := batch[i], single[i]
				if code(b.Err) != want[i] || code(s.Err) != want[i] {
					t.Errorf("order %d (%+v): batch %v, one by one %v; want %s", i, reqs[i], b.Err, s.Err, RCName(want[i]))
				}
				if b.Err != nil && !errors.Is(b.Err, s.Err) {
					t.Errorf("order %d: batch error %v is not errors.Is the single one %v", i, b.Err, s.Err)
				}
				if b.OrderRes != s.OrderRes || b.Slot != s.Slot {
					t.Errorf("order %d: batch receipt %+v, one by one %+v", i, b.Receipt, s.Receipt)
				}
				if b.Err == nil && (b.OrderNo == 0 || b.LSN == 0 || b.LimitSlot == 0) {
					t.Errorf("order %d placed with an empty receipt: %+v", i, b.Receipt)
				}
			}
			// the duplicates report their first outcomes
			if d := batch[3]; d.FirstRC != 0 || d.OrderNo != batch[0].OrderNo {
				t.Errorf("request 101 again: first rc %d, order %d; want 0, %d", d.FirstRC, d.OrderNo, batch[0].OrderNo)
			}
			if d := batch[13]; int(d.FirstRC) != ErrLimit.Code || d.OrderNo != 0 {
				t.Errorf("request 103 again: first rc %d, order %d; want the limit, no order", d.FirstRC, d.OrderNo)
			}
			// a refused order's receipt is empty (but for the slot)
			if r := batch[6]; r.OrderRes != (OrderRes{}) {
				t.Errorf("user 0's receipt: %+v, want zeros", r.Receipt)
			}
			// the two segments' versions differ (each the clock of its add)
			bStock.Version, sStock.Version = 0, 0
			if bStock.Available != 0 || bStock != sStock {
				t.Errorf("stock after the batch %+v, one by one %+v; want none available", bStock, sStock)
			}
			if bStats.Orders != 4 || bStats.SoldOut != 2 || bStats.LimitHits != 1 || bStats.Duplicates != 2 ||
				bStats.Orders != sStats.Orders || bStats.SoldOut != sStats.SoldOut ||
				bStats.LimitHits != sStats.LimitHits || bStats.Duplicates != sStats.Duplicates {
				t.Errorf("counters after the batch %+v, one by one %+v", bStats, sStats)
			}
			if bObs.Results != sObs.Results || bObs.Calls(OpOrder) != uint64(len(reqs)) {
				t.Errorf("result counts: batch %d orders, %d ok, %d sold out; one by one %d, %d, %d",
					bObs.Calls(OpOrder), bObs.Result(OpOrder, 0), bObs.Result(OpOrder, ErrSoldOut.Code),
					sObs.Calls(OpOrder), sObs.Result(OpOrder, 0), sObs.Result(OpOrder, ErrSoldOut.Code))
			}
			if len(bInfo) != 4 || len(bInfo) != len(sInfo) {
				t.Fatalf("%d orders placed by the batch, %d one by one; want 4", len(bInfo), len(sInfo))
			}
			for i := range bInfo {
				b, s := bInfo[i], sInfo[i]
				b.CreatedNs, s.CreatedNs = 0, 0
				if b != s || b.State != OrderActive {
					t.Errorf("order record %d: batch %+v, one by one %+v", i, b, s)
				}
			}
		})
	}
}

// Outcomes are appended after what out holds; the batch arrays grow past
// their first size and are reused for a shorter batch after a longer one.
func TestOrderManyAppendsToOutAndGrowsItsArraysAcrossBatches(t *testing.T) {
	ctx := context.Background()
	_, h := loaded(t, smallOpts(), 1, 0, 1000)
	out := []Outcome{{Err: ErrBusy}}
	user := uint64(0)
	placed := map[uint64]uint64{} // order number -> user
	total := 0
	for _, n := range []int{3, 40, 300, 5, 17} {
		reqs := make([]OrderReq, n)
		for i := range reqs {
			user++
			reqs[i] = OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1}
		}
		before := len(out)
		var err error
		if out, err = h.OrderMany(ctx, reqs, out); err != nil || len(out) != before+n {
			t.Fatalf("batch of %d: %d outcomes after %d, %v", n, len(out), before, err)
		}
		lastLSN := uint64(0)
		for i, o := range out[before:] {
			if o.Err != nil || o.OrderNo == 0 || o.LSN <= lastLSN {
				t.Fatalf("batch of %d, order %d: %+v (LSN after %d)", n, i, o, lastLSN)
			}
			lastLSN = o.LSN
			if _, dup := placed[o.OrderNo]; dup {
				t.Fatalf("order number %d given twice", o.OrderNo)
			}
			placed[o.OrderNo] = reqs[i].UserID
		}
		total += n
	}
	if out[0].Err != ErrBusy {
		t.Errorf("the outcome out held before was overwritten: %+v", out[0])
	}
	for no, u := range placed {
		if oi, err := h.OrderGet(no); err != nil || oi.UserID != u || oi.State != OrderActive {
			t.Errorf("order %d: %+v, %v; want user %d", no, oi, err, u)
		}
	}
	if s, _ := h.SkuGet(1, 10); s.Available != uint64(1000-total) {
		t.Errorf("available %d, want %d", s.Available, 1000-total)
	}
}

// An empty batch (nil or zero length) places nothing, makes no C call (no
// order is counted) and returns out as it was; after Close it is ErrClosed.
func TestOrderManyEmptyBatchPlacesNothingAndReturnsOut(t *testing.T) {
	ctx := context.Background()
	name, h := loaded(t, smallOpts(), 1, 0, 10)
	out := make([]Outcome, 1, 4)
	for _, reqs := range [][]OrderReq{nil, {}} {
		got, err := h.OrderMany(ctx, reqs, out)
		if err != nil || len(got) != 1 || &got[0] != &out[0] {
			t.Errorf("Handle: empty batch: %d outcomes, %v; want out as it was, nil", len(got), err)
		}
	}
	viaPinned(t, name, func(p *Pinned) {
		if got, err := p.OrderMany(ctx, nil, out); err != nil || len(got) != 1 || &got[0] != &out[0] {
			t.Errorf("Pinned: empty batch: %d outcomes, %v; want out as it was, nil", len(got), err)
		}
	})
	if ob, err := h.Obs(); err != nil || ob.Calls(OpOrder) != 0 {
		t.Errorf("orders counted after empty batches: %d, %v", ob.Calls(OpOrder), err)
	}
	if s, _ := h.SkuGet(1, 10); s.Available != 10 {
		t.Errorf("available %d, want 10", s.Available)
	}
	h.Close()
	if got, err := h.OrderMany(ctx, nil, out); err != ErrClosed || len(got) != 1 {
		t.Errorf("empty batch after Close: %d outcomes, %v; want ErrClosed", len(got), err)
	}
}

// A refusal of the handle (closed, read-only, another goroutine's Pinned, a
// sync batch whose context ended before the call) is the call's error:
// nothing placed, out as it was.
func TestOrderManyHandleRefusalsPlaceNothingAndLeaveOut(t *testing.T) {
	ctx := context.Background()
	reqs := []OrderReq{{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}, {ActivityID: 1, SkuID: 10, UserID: 2, Qty: 1}}
	out := make([]Outcome, 1, 8)
	check := func(what string, got []Outcome, err, want error) {
		t.Helper()
		if !errors.Is(err, want) || len(got) != 1 {
			t.Errorf("%s: %d outcomes, %v; want out as it was, %v", what, len(got), err, want)
		}
	}

	name, h := loaded(t, smallOpts(), 1, 0, 10)
	ro, err := Open(name, Options{Flags: RdOnly})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ro.OrderMany(ctx, reqs, out)
	check("read-only Handle", got, err, ErrReadOnly)
	ro.Close()
	got, err = ro.OrderMany(ctx, reqs, out)
	check("closed Handle", got, err, ErrClosed)

	owned := make(chan *Pinned)
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		p, err := OpenPinned(name, Options{})
		if err != nil {
			done <- err
			return
		}
		owned <- p
		<-release
		done <- p.Close()
	}()
	var p *Pinned
	select {
	case p = <-owned:
	case err := <-done:
		t.Fatalf("owner: %v", err)
	}
	runtime.LockOSThread() // surely another thread than the owner's
	got, err = p.OrderMany(ctx, reqs, out)
	runtime.UnlockOSThread()
	check("another goroutine's Pinned", got, err, ErrWrongThread)
	close(release)
	if err := <-done; err != nil {
		t.Errorf("owner's Close: %v", err)
	}
	got, err = p.OrderMany(ctx, reqs, out)
	check("closed Pinned", got, err, ErrClosed)
	if s, _ := h.SkuGet(1, 10); s.Available != 10 {
		t.Errorf("available %d, want 10: nothing placed", s.Available)
	}

	o := smallOpts()
	o.Durability = DurabilitySync
	_, hs := loaded(t, o, 1, 0, 10)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	got, err = hs.OrderMany(ended, reqs, out)
	check("sync batch under an ended context", got, err, context.Canceled)
	if s, _ := hs.SkuGet(1, 10); s.Available != 10 {
		t.Errorf("sync: available %d, want 10: nothing placed", s.Available)
	}
}

// With out[:0] of a kept slice, a batch -- placed orders and refusals --
// allocates nothing, through the pool as on a Pinned.
func TestOrderManyAllocatesNothingWithAKeptOutSlice(t *testing.T) {
	ctx := context.Background()
	name, h := loaded(t, smallOpts(), 1, 0, 2000)
	user := uint64(100)
	reqs := make([]OrderReq, 8)
	fill := func() {
		for i := range reqs {
			user++
			reqs[i] = OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1}
		}
		reqs[3].UserID = 1 // the limit, after its first batch
		reqs[5].Qty = 0    // bad qty
	}
	out := make([]Outcome, 0, len(reqs))
	measure := func(b batcher) float64 {
		return testing.AllocsPerRun(50, func() {
			fill()
			var err error
			if out, err = b.OrderMany(ctx, reqs, out[:0]); err != nil || len(out) != len(reqs) ||
				out[0].Err != nil || !errors.Is(out[5].Err, ErrInval) {
				t.Errorf("OrderMany: %d outcomes, %v", len(out), err)
			}
		})
	}
	if n := measure(h); n != 0 {
		t.Errorf("allocations per batch through the pool: %v, want 0", n)
	}
	viaPinned(t, name, func(p *Pinned) {
		if n := measure(p); n != 0 {
			t.Errorf("allocations per batch on a Pinned: %v, want 0", n)
		}
	})
}

// A sync segment with no daemon: the batch's one wait ends with its
// context's deadline, every placed order ErrFateUnknown (placed, receipt
// filled), every refused one its refusal; a cancellable context without a
// deadline is waited in slices until it is cancelled; without either, the
// handle's own bound ends it.
func TestOrderManySyncWithoutDaemonIsFateUnknownForEveryPlacedOrder(t *testing.T) {
	o := smallOpts()
	o.Durability = DurabilitySync
	_, h := loaded(t, o, 1, 0, 10)
	reqs := []OrderReq{
		{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1},
		{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}, // the limit
		{ActivityID: 1, SkuID: 10, UserID: 2, Qty: 1},
	}
	check := func(what string, out []Outcome, err error, cause error) {
		t.Helper()
		if err != nil || len(out) != 3 {
			t.Fatalf("%s: %d outcomes, %v", what, len(out), err)
		}
		for _, i := range []int{0, 2} {
			e := out[i].Err
			if !errors.Is(e, ErrFateUnknown) || (cause != nil && !errors.Is(e, cause)) || out[i].OrderNo == 0 || out[i].LSN == 0 {
				t.Errorf("%s: order %d: %+v; want ErrFateUnknown (%v) with its receipt", what, i, out[i], cause)
			}
			if oi, err := h.OrderGet(out[i].OrderNo); err != nil || oi.State != OrderActive {
				t.Errorf("%s: order %d is not placed: %+v, %v", what, i, oi, err)
			}
		}
		if !errors.Is(out[1].Err, ErrLimit) {
			t.Errorf("%s: the second order of user 1: %v, want ErrLimit", what, out[1].Err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	out, err := h.OrderMany(ctx, reqs, nil)
	cancel()
	check("deadline", out, err, context.DeadlineExceeded)

	for i := range reqs {
		reqs[i].UserID += 10
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel2)
	out, err = h.OrderMany(ctx2, reqs, out[:0])
	check("cancelled", out, err, context.Canceled)

	for i := range reqs {
		reqs[i].UserID += 10
	}
	if err := h.SetSyncWait(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	out, err = h.OrderMany(context.Background(), reqs, out[:0])
	check("the handle's bound", out, err, nil)
	if s, _ := h.SkuGet(1, 10); s.Available != 4 {
		t.Errorf("available %d, want 4 (six orders placed)", s.Available)
	}
}
