// obs_test.go -- Obs: a known set of calls on a fresh segment is counted
// per operation and result code, the histograms hold their calls, and the
// bucket bounds and operation names are the library's.
package flashstock

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestObsCountsAKnownSetOfCallsPerResultCodeOverEveryWorker(t *testing.T) {
	o := smallOpts()
	name := newSeg(t, o)
	// two workers: Obs must add each one's newest call
	h, err := Open(name, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.ActivityAdd(sale(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := h.SkuAdd(1, 10, 3, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[int]map[int]uint64{OpOrder: {}, OpCancel: {}, OpRestock: {},
		OpLockAcquire: {}, OpLockRelease: {}}
	order := func(user uint64, qty uint32, wantErr error) uint64 {
		t.Helper()
		r, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: qty})
		if !errors.Is(err, wantErr) && !(wantErr == nil && err == nil) {
			t.Fatalf("order user %d qty %d: %v, want %v", user, qty, err, wantErr)
		}
		rc := 0
		if err != nil {
			rc = err.(*Error).Code
		}
		want[OpOrder][rc]++
		return r.OrderNo
	}
	first := order(1, 1, nil)
	order(2, 1, nil)
	order(3, 1, nil)
	order(1, 1, ErrLimit)
	order(4, 1, ErrSoldOut)
	order(5, 1, ErrSoldOut)
	if _, err := h.Cancel(ctx, first); err != nil {
		t.Fatal(err)
	}
	want[OpCancel][0]++
	if _, err := h.Cancel(ctx, first); !errors.Is(err, ErrCancelled) {
		t.Fatalf("second cancel: %v", err)
	}
	want[OpCancel][ErrCancelled.Code]++
	if err := h.Restock(ctx, 1, 10, 5); err != nil {
		t.Fatal(err)
	}
	want[OpRestock][0]++
	if _, err := h.LockAcquire("obs", 1, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := h.LockAcquire("obs", 2, 60*time.Second); !errors.Is(err, ErrLocked) {
		t.Fatalf("acquire by another owner: %v", err)
	}
	if err := h.LockRelease("obs", 1); err != nil {
		t.Fatal(err)
	}
	if err := h.LockRelease("obs", 1); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("release twice: %v", err)
	}
	want[OpLockAcquire][0]++
	want[OpLockAcquire][ErrLocked.Code]++
	want[OpLockRelease][0]++
	want[OpLockRelease][ErrNotOwner.Code]++

	ob, err := h.Obs()
	if err != nil {
		t.Fatal(err)
	}
	for op := 0; op < OpCount; op++ {
		var total uint64
		for rc, n := range want[op] {
			if got := ob.Result(op, rc); got != n {
				t.Errorf("%s %s: %d calls counted, want %d", OpName(op), RCName(rc), got, n)
			}
			total += n
		}
		if got := ob.Calls(op); got != total {
			t.Errorf("%s: %d calls counted in all, want %d", OpName(op), got, total)
		}
	}
	// every call but orders is timed; orders one in 16 per handle, its first included
	for _, op := range []int{OpCancel, OpRestock, OpLockAcquire, OpLockRelease} {
		if hs := ob.Time[op]; hs.Count != ob.Calls(op) || hs.Sum == 0 {
			t.Errorf("%s histogram: count %d sum %v, want count %d", OpName(op), hs.Count, hs.Sum, ob.Calls(op))
		}
	}
	if c := ob.Time[OpOrder].Count; c < 1 || c > ob.Calls(OpOrder) {
		t.Errorf("order histogram: %d timed of %d", c, ob.Calls(OpOrder))
	}
	for i := 0; i < Times; i++ {
		var sum uint64
		for _, b := range ob.Time[i].Bucket {
			sum += b
		}
		if sum != ob.Time[i].Count {
			t.Errorf("%s: buckets sum to %d, count %d", OpName(i), sum, ob.Time[i].Count)
		}
	}
	// owner 1 held the lock from its grant to its release
	if ob.Time[TimeLockHold].Count != 1 {
		t.Errorf("lock_hold: %d, want 1", ob.Time[TimeLockHold].Count)
	}

	// a second look adds nothing: Obs is not counted among the calls
	ob2, err := h.Obs()
	if err != nil || ob2.Results != ob.Results {
		t.Errorf("second Obs differs: %v", err)
	}
}

func TestObsBucketBoundsAndOperationNamesAreTheLibrarys(t *testing.T) {
	if ObsBucketLe(0) != 64*time.Nanosecond {
		t.Errorf("bucket 0 bound %v, want 2^6 ns", ObsBucketLe(0))
	}
	for b := 1; b < ObsBuckets-1; b++ {
		if ObsBucketLe(b) != ObsBucketLe(b-1)*2 {
			t.Errorf("bucket %d bound %v after %v", b, ObsBucketLe(b), ObsBucketLe(b-1))
		}
	}
	if ObsBucketLe(ObsBuckets-1) != math.MaxInt64 { // the C bound is UINT64_MAX: everything above
		t.Errorf("last bucket bound %v", ObsBucketLe(ObsBuckets-1))
	}
	names := map[int]string{OpOrder: "order", OpCancel: "cancel", OpLockRelease: "lock_release",
		TimeLockWait: "lock_wait", TimeLockHold: "lock_hold", Times: "?"}
	for op, n := range names {
		if OpName(op) != n {
			t.Errorf("OpName(%d) = %q, want %q", op, OpName(op), n)
		}
	}
}

func TestObsOnAClosedHandleIsErrClosed(t *testing.T) {
	name := newSeg(t, smallOpts())
	h, err := Open(name, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	if _, err := h.Obs(); err != ErrClosed {
		t.Errorf("Obs after Close: %v", err)
	}
}

func TestPinnedObsCountsItsOwnNewestCall(t *testing.T) {
	name, h := loaded(t, smallOpts(), 1, 0, 1)
	_ = h.Close()
	p, err := OpenPinned(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}); err != nil {
		t.Fatal(err)
	}
	// its newest call: counted by this very Obs, before any further call
	if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 2, Qty: 1}); !errors.Is(err, ErrSoldOut) {
		t.Fatalf("second order of one unit: %v", err)
	}
	ob, err := p.Obs()
	if err != nil {
		t.Fatal(err)
	}
	if ob.Result(OpOrder, 0) != 1 || ob.Result(OpOrder, ErrSoldOut.Code) != 1 || ob.Calls(OpOrder) != 2 {
		t.Errorf("orders: %d placed, %d sold out, %d in all; want 1, 1, 2",
			ob.Result(OpOrder, 0), ob.Result(OpOrder, ErrSoldOut.Code), ob.Calls(OpOrder))
	}
	if ob.Time[OpOrder].Count != 1 {
		t.Errorf("orders timed: %d, want the first only", ob.Time[OpOrder].Count)
	}
	_ = p.Close()
	if _, err := p.Obs(); err != ErrClosed {
		t.Errorf("Obs after Close: %v", err)
	}
}
