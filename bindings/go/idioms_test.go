// idioms_test.go -- the binding as a Go programmer uses it: the outcomes
// that come with a result are error types for errors.As (and still match
// their sentinels under errors.Is), durations are time.Duration, Open and
// OpenPinned take the same Options, and a Handle method called from inside
// its own Run is refused instead of waiting for itself.
package flashstock

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// A retried request id answers a *DuplicateError holding the first
// outcome -- placed (its order number) or refused (its code) -- through a
// Handle, a Pinned and a batch, and the callers of errors.Is(err,
// ErrDuplicate) and errors.As(err, &*Error) see what they saw before.
func TestDuplicateErrorCarriesTheFirstOutcomeForErrorsAs(t *testing.T) {
	ctx := context.Background()
	name, h := loaded(t, smallOpts(), 1, 0, 10)
	first, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1, RequestID: 70})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, firstRC int, orderNo uint64) {
		t.Helper()
		var de *DuplicateError
		var fe *Error
		switch {
		case !errors.As(err, &de):
			t.Errorf("%s: %v (%T), want a *DuplicateError", what, err, err)
		case !errors.Is(err, ErrDuplicate) || !errors.As(err, &fe) || fe.Code != ErrDuplicate.Code:
			t.Errorf("%s: %v does not match ErrDuplicate as an *Error", what, err)
		case int(de.FirstRC) != firstRC || de.OrderNo != orderNo:
			t.Errorf("%s: first outcome %s, order %d; want %s, order %d", what, RCName(int(de.FirstRC)),
				de.OrderNo, RCName(firstRC), orderNo)
		case (firstRC == 0) != (de.First() == nil) || (firstRC != 0 && !errors.Is(de.First(), CodeError(firstRC))):
			t.Errorf("%s: First() = %v, want the error of %s", what, de.First(), RCName(firstRC))
		case firstRC != 0 && errors.Is(err, CodeError(firstRC)):
			t.Errorf("%s: the duplicate itself matches its first outcome %s", what, RCName(firstRC))
		}
	}
	_, err = h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1, RequestID: 70})
	check("placed, retried on the Handle", err, 0, first.OrderNo)

	// user 7 is at the limit: request 71 is refused, and its retry says so
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1, RequestID: 71}); !errors.Is(err, ErrLimit) {
		t.Fatalf("second order of user 7: %v, want ErrLimit", err)
	}
	_, err = h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1, RequestID: 71})
	check("refused, retried on the Handle", err, ErrLimit.Code, 0)

	viaPinned(t, name, func(p *Pinned) {
		_, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1, RequestID: 70})
		check("placed, retried on a Pinned", err, 0, first.OrderNo)
	})
	out, err := h.OrderMany(ctx, []OrderReq{
		{ActivityID: 1, SkuID: 10, UserID: 8, Qty: 1, RequestID: 80},
		{ActivityID: 1, SkuID: 10, UserID: 8, Qty: 1, RequestID: 80},
		{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1, RequestID: 71},
	}, nil)
	if err != nil || len(out) != 3 || out[0].Err != nil {
		t.Fatalf("OrderMany: %+v, %v", out, err)
	}
	check("placed, retried in the same batch", out[1].Err, 0, out[0].OrderNo)
	check("refused, retried in a batch", out[2].Err, ErrLimit.Code, 0)
}

// A sync order whose wait ends first answers a *FateUnknownError holding
// the order's receipt, which DurableWait takes to learn the fate; it
// matches ErrFateUnknown (errors.Is, errors.As to *Error) and unwraps to
// the context's error.  A batch gives each placed order its own.
func TestFateUnknownErrorCarriesTheReceiptForErrorsAs(t *testing.T) {
	o := smallOpts()
	o.Durability = DurabilitySync // no daemon: nothing becomes durable
	_, h := loaded(t, o, 1, 0, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 3, Qty: 1})
	var fu *FateUnknownError
	var fe *Error
	if !errors.As(err, &fu) || fu.Receipt != r || r.OrderNo == 0 || r.LSN == 0 {
		t.Fatalf("sync Order past its deadline: %+v, %v (%T); want a *FateUnknownError with the receipt", r, err, err)
	}
	if !errors.Is(err, ErrFateUnknown) || !errors.As(err, &fe) || fe != ErrFateUnknown ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match ErrFateUnknown and context.DeadlineExceeded", err)
	}
	// the receipt from the error is all DurableWait needs
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	err = h.DurableWait(ctx2, fu.Receipt)
	var fu2 *FateUnknownError
	if !errors.As(err, &fu2) || fu2.Receipt != r {
		t.Errorf("DurableWait: %v, want a *FateUnknownError with the receipt", err)
	}
	// each order of a batch has its own receipt in its error
	ctx3, cancel3 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel3()
	out, err := h.OrderMany(ctx3, []OrderReq{
		{ActivityID: 1, SkuID: 10, UserID: 4, Qty: 1},
		{ActivityID: 1, SkuID: 10, UserID: 5, Qty: 1},
	}, nil)
	if err != nil || len(out) != 2 {
		t.Fatalf("OrderMany: %+v, %v", out, err)
	}
	for i, oc := range out {
		var f *FateUnknownError
		if !errors.As(oc.Err, &f) || f.Receipt != oc.Receipt || oc.OrderNo == 0 ||
			!errors.Is(oc.Err, context.DeadlineExceeded) {
			t.Errorf("batch order %d: %+v; want a *FateUnknownError with its receipt", i, oc)
		}
	}
	// a cancel: the units are the result, the receipt is zero
	ctx4, cancel4 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel4()
	units, err := h.Cancel(ctx4, r.OrderNo)
	var fc *FateUnknownError
	if !errors.As(err, &fc) || fc.Receipt != (Receipt{}) || units != 1 {
		t.Errorf("sync Cancel past its deadline: %d units, %v; want 1 and a *FateUnknownError", units, err)
	}
}

// Durations are rounded up to the C API's milliseconds (a positive one
// never becomes "no wait"); a negative one or one past 2^32-1 ms is
// ErrInval and changes nothing.
func TestDurationsRoundUpToMillisecondsAndRefuseWhatCIsNotGiven(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		ms   uint32
		fail bool
	}{
		{0, 0, false}, {time.Nanosecond, 1, false}, {time.Millisecond, 1, false},
		{1500 * time.Microsecond, 2, false}, {time.Minute, 60000, false},
		{math.MaxUint32 * time.Millisecond, math.MaxUint32, false},
		{(math.MaxUint32 + 1) * time.Millisecond, 0, true}, {-time.Nanosecond, 0, true},
	} {
		ms, err := msOf(c.d)
		if (err != nil) != c.fail || ms != c.ms {
			t.Errorf("msOf(%v) = %d, %v; want %d (fails: %v)", c.d, ms, err, c.ms, c.fail)
		}
	}
	name, h := loaded(t, smallOpts(), 1, 0, 10)
	if _, err := h.TokenIssue(1, 10, 5, -time.Second); !errors.Is(err, ErrInval) {
		t.Errorf("TokenIssue with a negative ttl: %v, want ErrInval", err)
	}
	if _, err := h.LockAcquire("d", 1, -time.Second); !errors.Is(err, ErrInval) {
		t.Errorf("LockAcquire with a negative lease: %v, want ErrInval", err)
	}
	if _, err := h.LockAcquire("d", 1, 0); !errors.Is(err, ErrInval) {
		t.Errorf("LockAcquire with no lease: %v, want ErrInval (the C API's)", err)
	}
	if s, _ := h.Stats(); s.Locks != 0 {
		t.Errorf("a refused lock was taken: %d locks", s.Locks)
	}
	if err := h.SetSyncWait(0); !errors.Is(err, ErrInval) {
		t.Errorf("SetSyncWait(0): %v, want ErrInval", err)
	}
	if _, err := Open(name, Options{SyncWait: -time.Second}); !errors.Is(err, ErrInval) {
		t.Errorf("Open with a negative SyncWait: %v, want ErrInval", err)
	}
	// OpenPinned takes Open's Options: Flags as Open, Workers not at all
	if _, err := OpenPinned(name, Options{Workers: 2}); !errors.Is(err, ErrInval) {
		t.Errorf("OpenPinned with Workers: %v, want ErrInval", err)
	}
	viaPinnedOpts(t, name, Options{Flags: RdOnly, SyncWait: time.Second}, func(p *Pinned) {
		if s, err := p.Slot(); err != nil || s != -1 {
			t.Errorf("OpenPinned RdOnly: slot %d, %v; want -1", s, err)
		}
		if _, err := p.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 9, Qty: 1}); !errors.Is(err, ErrReadOnly) {
			t.Errorf("order on a read-only Pinned: %v, want ErrReadOnly", err)
		}
	})
}

// viaPinnedOpts runs fn with a Pinned opened with o on a goroutine of its own.
func viaPinnedOpts(t *testing.T, name string, o Options, fn func(p *Pinned)) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err := OpenPinned(name, o)
		if err != nil {
			t.Errorf("OpenPinned: %v", err)
			return
		}
		defer p.Close()
		fn(p)
	}()
	<-done
}

// Inside Run, every method of the Handle itself would wait for the worker
// Run holds (or for Close's lock): each returns ErrRunReentry at once and
// does nothing, the lent Pinned works, and after Run the handle works.  A
// goroutine outside Run is not refused.  With one worker, so that any call
// would have waited forever.
func TestHandleMethodInsideItsOwnRunIsRefusedNotDeadlocked(t *testing.T) {
	ctx := context.Background()
	name, _ := loaded(t, smallOpts(), 1, 0, 10)
	h, err := Open(name, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	done := make(chan error, 1)
	go func() {
		done <- h.Run(ctx, func(p *Pinned) error {
			r, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1})
			if err != nil {
				return err
			}
			calls := map[string]error{}
			_, calls["Order"] = h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 2, Qty: 1})
			_, calls["OrderMany"] = h.OrderMany(ctx, []OrderReq{{ActivityID: 1, SkuID: 10, UserID: 3, Qty: 1}}, nil)
			calls["DurableWait"] = h.DurableWait(ctx, r)
			_, calls["CartOrder"] = h.CartOrder(ctx, CartReq{ActivityID: 1, UserID: 4, Lines: []CartLine{{SkuID: 10, Qty: 1}}})
			_, calls["OrderLines"] = h.OrderLines(r.OrderNo)
			_, calls["Cancel"] = h.Cancel(ctx, r.OrderNo)
			_, calls["SkuGet"] = h.SkuGet(1, 10)
			_, calls["Obs"] = h.Obs()
			calls["SetSyncWait"] = h.SetSyncWait(time.Second)
			calls["Run"] = h.Run(ctx, func(*Pinned) error { return nil })
			calls["Close"] = h.Close()
			for m, err := range calls {
				if err != ErrRunReentry {
					t.Errorf("h.%s inside Run: %v, want ErrRunReentry", m, err)
				}
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second): // a guard against a hang, not a timing
		t.Fatal("a Handle method called inside Run did not return")
	}
	s, err := h.SkuGet(1, 10)
	if err != nil || s.Available != 9 {
		t.Errorf("after Run: %+v, %v; want 9 available (only the Pinned's order)", s, err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 2, Qty: 1}); err != nil {
		t.Errorf("Order after Run: %v", err)
	}

	// another goroutine may call the Handle while Run runs (two workers)
	h2, err := Open(name, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	err = h2.Run(ctx, func(p *Pinned) error {
		res := make(chan error, 1)
		go func() {
			_, err := h2.SkuGet(1, 10)
			res <- err
		}()
		return <-res
	})
	if err != nil {
		t.Errorf("h2.SkuGet from a goroutine Run started: %v, want nil", err)
	}
}
