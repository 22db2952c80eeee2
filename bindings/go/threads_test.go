// threads_test.go -- the thread rule, hidden: one Handle used by many
// goroutines works and never hands a native handle to another thread; a
// Pinned used from another goroutine is refused by the engine
// (ErrWrongThread), which proves the check the first test relies on is live.
package flashstock

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHandleFromManyGoroutinesSellsExactlyTheStockOnOwnThreads(t *testing.T) {
	const units, buyers, perBuyer = 500, 64, 20 // 1280 orders for 500 units
	o := smallOpts()
	_, h := loaded(t, o, 1, 0, units)
	h2, err := Open(h.p.name, Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	var ok, sold, wrong, other int64
	var wg sync.WaitGroup
	for b := 0; b < buyers; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			for i := 0; i < perBuyer; i++ {
				user := uint64(b*perBuyer + i + 1)
				_, err := h2.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1})
				switch {
				case err == nil:
					atomic.AddInt64(&ok, 1)
				case errors.Is(err, ErrSoldOut):
					atomic.AddInt64(&sold, 1)
				case errors.Is(err, ErrWrongThread):
					atomic.AddInt64(&wrong, 1)
				default:
					atomic.AddInt64(&other, 1)
					t.Errorf("order: %v", err)
				}
				runtime.Gosched()
			}
		}(b)
	}
	wg.Wait()
	t.Logf("%d orders: %d placed, %d sold out, workers' slots %v", buyers*perBuyer, ok, sold, h2.Slots())
	if wrong != 0 || other != 0 {
		t.Fatalf("%d calls refused as from the wrong thread, %d other errors", wrong, other)
	}
	if ok != units || sold != buyers*perBuyer-units {
		t.Errorf("placed %d, sold out %d; want %d and %d", ok, sold, units, buyers*perBuyer-units)
	}
	if n := len(h2.Slots()); n < 1 || n > 4 {
		t.Errorf("%d native handles for Workers 4", n)
	}
	if err := h2.checkThreads(); err != nil {
		t.Errorf("a worker's native handle answered from another thread: %v", err)
	}
	if s, _ := h2.SkuGet(1, 10); s.Available != 0 {
		t.Errorf("available %d after the sale", s.Available)
	}
}

func TestPinnedUsedFromAnotherGoroutineIsWrongThreadAndChangesNothing(t *testing.T) {
	name, h := loaded(t, smallOpts(), 1, 0, 10)
	owned := make(chan *Pinned)
	release := make(chan struct{})
	done := make(chan error)
	go func() { // the owner: opens, lets another goroutine try, closes
		p, err := OpenPinned(name, Options{})
		if err != nil {
			done <- err
			return
		}
		if _, err := p.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}); err != nil {
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
	_, err := p.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 2, Qty: 1})
	_, serr := p.Slot()
	runtime.UnlockOSThread()
	close(release)
	if cerr := <-done; cerr != nil {
		t.Errorf("owner's Close: %v", cerr)
	}
	if !errors.Is(err, ErrWrongThread) || !errors.Is(serr, ErrWrongThread) {
		t.Errorf("Order, Slot from another goroutine: %v, %v; want ErrWrongThread", err, serr)
	}
	if s, _ := h.SkuGet(1, 10); s.Available != 9 {
		t.Errorf("available %d, want 9: only the owner's order", s.Available)
	}
}

func TestPinnedOnItsOwnGoroutineCoversTheCalls(t *testing.T) {
	name, _ := loaded(t, smallOpts(), 1, 0, 10)
	p, err := OpenPinned(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 9, Qty: 1, RequestID: 90})
	if err != nil || r.OrderNo == 0 {
		t.Fatalf("Order: %+v %v", r, err)
	}
	if slot, err := p.Slot(); err != nil || slot != r.Slot {
		t.Errorf("Slot = %d, %v; receipt says %d", slot, err, r.Slot)
	}
	if err := p.DurableWait(ctx, Receipt{OrderRes: r.OrderRes, Slot: r.Slot + 1}); !errors.Is(err, ErrInval) {
		t.Errorf("DurableWait for another handle's order: %v", err)
	}
	if u, err := p.Cancel(ctx, r.OrderNo); err != nil || u != 1 {
		t.Errorf("Cancel: %d %v", u, err)
	}
	if s, err := p.SkuGet(1, 10); err != nil || s.Available != 10 {
		t.Errorf("SkuGet: %+v %v", s, err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 9, Qty: 1}); err != ErrClosed {
		t.Errorf("Order after Close: %v", err)
	}
}

// errRead marks a read that succeeded in the Close test below.
var errRead = errors.New("read")

func TestHandleCloseWhileGoroutinesOrderEndsEveryCallCleanly(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, 0, 100000)
	h2, err := Open(h.p.name, Options{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok, closed int64
	stop := make(chan struct{})
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				// at most 256 orders each (16 x 256 stays below the
				// segment's 8192 users and ring records, however late
				// Close comes on a loaded machine); then reads, so calls
				// are still in flight when Close comes
				var err error
				if i < 256 {
					_, err = h2.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10,
						UserID: uint64(g*100000 + i + 1), Qty: 1})
				} else if _, err = h2.SkuGet(1, 10); err == nil {
					err = errRead
				}
				switch {
				case err == errRead:
				case err == nil:
					atomic.AddInt64(&ok, 1)
				case err == ErrClosed:
					atomic.AddInt64(&closed, 1)
					return
				default:
					t.Errorf("order: %v", err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}(g)
	}
	for atomic.LoadInt64(&ok) < 200 {
		runtime.Gosched()
	}
	if err := h2.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	close(stop)
	wg.Wait()
	s, _ := h.SkuGet(1, 10)
	t.Logf("%d orders placed before Close, %d calls answered ErrClosed", ok, closed)
	if got := int64(100000 - s.Available); got != ok {
		t.Errorf("%d units sold, %d orders acknowledged", got, ok)
	}
}

func TestHandleOrderAllocatesNothingPlacedOrRefused(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, 0, 200)
	ctx := context.Background()
	user := uint64(0)
	placed := testing.AllocsPerRun(100, func() {
		user++
		if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1}); err != nil {
			t.Fatal(err)
		}
	})
	refused := testing.AllocsPerRun(100, func() {
		if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}); !errors.Is(err, ErrLimit) {
			t.Fatal(err)
		}
	})
	if placed != 0 || refused != 0 {
		t.Errorf("allocations per order through the pool: %v placed, %v refused; want 0", placed, refused)
	}
}

func TestPinnedOrderAllocatesNothingPlacedOrRefused(t *testing.T) {
	name, _ := loaded(t, smallOpts(), 1, 0, 200)
	p, err := OpenPinned(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	user := uint64(0)
	placed := testing.AllocsPerRun(100, func() {
		user++
		if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1}); err != nil {
			t.Fatal(err)
		}
	})
	refused := testing.AllocsPerRun(100, func() {
		if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}); !errors.Is(err, ErrLimit) {
			t.Fatal(err)
		}
	})
	if placed != 0 || refused != 0 {
		t.Errorf("allocations per order: %v placed, %v refused; want 0", placed, refused)
	}
}

// A pool asked for more workers than the process table has slots makes do
// with the slots there are: the calls wait for a free worker, as long as
// their context lets them.  The orders are sync ones with no daemon, each
// holding its worker for its context's 300 ms, so that the callers
// outnumber the workers: a caller is placed (ErrFateUnknown), or its
// context ends while it waits for a worker (nothing placed).
func TestHandleWithMoreWorkersThanSlotsUsesTheSlotsThereAre(t *testing.T) {
	o := smallOpts()
	o.MaxProcs = 3
	o.Durability = DurabilitySync
	name, h := loaded(t, o, 1, 0, 1000) // h holds one slot
	h2, err := Open(name, Options{Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	var wg sync.WaitGroup
	var placed, waited int64
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := h2.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: uint64(g + 1), Qty: 1})
			switch {
			case errors.Is(err, ErrFateUnknown): // placed, not durable: no daemon
				atomic.AddInt64(&placed, 1)
			case err == context.DeadlineExceeded: // no worker free in time
				atomic.AddInt64(&waited, 1)
			default:
				t.Errorf("order: %v", err)
			}
		}(g)
	}
	wg.Wait()
	h2.p.mu.Lock()
	startErr := h2.p.startErr
	h2.p.mu.Unlock()
	t.Logf("%d orders placed by %d workers, %d ran out of time waiting for one; a third worker "+
		"could not start: %v", placed, len(h2.Slots()), waited, startErr)
	if n := len(h2.Slots()); placed < 1 || placed+waited != 6 || n != 2 || !errors.Is(startErr, ErrNoProc) {
		t.Errorf("%d placed, %d waited, %d workers for the 2 free slots, start error %v", placed, waited, n, startErr)
	}
	if s, _ := h.SkuGet(1, 10); s.Available != 1000-uint64(placed) {
		t.Errorf("available %d, want %d", s.Available, 1000-placed)
	}
}

func TestHandleRunLendsOneWorkerHandleForSeveralCalls(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, ActTokenRequired, 10)
	var kept *Pinned
	var r Receipt
	err := h.Run(context.Background(), func(p *Pinned) error {
		kept = p
		tok, err := p.TokenIssue(1, 10, 77, 60*time.Second)
		if err != nil {
			return err
		}
		if r, err = p.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 77, Qty: 1, Token: tok}); err != nil {
			return err
		}
		if slot, err := p.Slot(); err != nil || slot != r.Slot {
			t.Errorf("Slot inside Run: %d, %v; receipt %d", slot, err, r.Slot)
		}
		if err := p.Close(); err != ErrInval {
			t.Errorf("Close of a lent Pinned: %v, want ErrInval", err)
		}
		return ErrSoldOut // fn's error is Run's
	})
	if err != ErrSoldOut {
		t.Errorf("Run returned %v, want fn's error", err)
	}
	if oi, err := h.OrderGet(r.OrderNo); err != nil || oi.State != OrderActive || oi.UserID != 77 {
		t.Errorf("the order placed inside Run: %+v, %v", oi, err)
	}
	if _, err := kept.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 78, Qty: 1}); err != ErrClosed {
		t.Errorf("a lent Pinned used after Run: %v, want ErrClosed", err)
	}
	if s, _ := h.SkuGet(1, 10); s.Available != 9 {
		t.Errorf("available %d, want 9", s.Available)
	}
}
