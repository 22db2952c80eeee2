// api_test.go -- the whole public API through the binding: segments,
// catalog, orders with every request field, cancel, restock, tokens, locks,
// reading state, statistics, read-only handles, sync waits under a context.
package flashstock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSegmentCreateSizeOpenOptsDestroy(t *testing.T) {
	o := smallOpts()
	size, err := SegSize(&o)
	if err != nil || size == 0 {
		t.Fatalf("SegSize: %d, %v", size, err)
	}
	if _, err := SegSize(&SegOpts{}); !errors.Is(err, ErrInval) {
		t.Errorf("SegSize of zero capacities: %v, want ErrInval", err)
	}
	name := newSeg(t, o)
	if err := Create(name, &o); !errors.Is(err, ErrExist) {
		t.Errorf("second Create: %v, want ErrExist", err)
	}
	h, err := Open(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.SegOpts()
	if err != nil || got != o {
		t.Errorf("SegOpts = %+v, %v; want %+v", got, err, o)
	}
	st, err := h.Stats()
	if err != nil || st.SegmentBytes != size || st.OrdersCap != uint64(o.MaxOrders) {
		t.Errorf("Stats: bytes %d (SegSize %d), orders cap %d, %v", st.SegmentBytes, size, st.OrdersCap, err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := h.Stats(); err != ErrClosed {
		t.Errorf("Stats after Close: %v, want ErrClosed", err)
	}
	if err := h.Close(); err != ErrClosed {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if err := Destroy(name); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(name, Options{}); !errors.Is(err, ErrNoSeg) {
		t.Errorf("Open after Destroy: %v, want ErrNoSeg", err)
	}
	if err := Create("bad/name", nil); !errors.Is(err, ErrInval) {
		t.Errorf("Create(bad/name): %v, want ErrInval", err)
	}
}

func TestCatalogAddCheckAndIterate(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, 0, 100)
	bad := sale(1, 0)
	bad.ID = 0
	if err := ActivityCheck(&bad); !errors.Is(err, ErrInval) {
		t.Errorf("ActivityCheck(id 0): %v", err)
	}
	good := sale(2, ActCancelReturnsQuota)
	good.ID = 2
	if err := ActivityCheck(&good); err != nil {
		t.Errorf("ActivityCheck: %v", err)
	}
	if err := h.ActivityAdd(good); err != nil {
		t.Fatal(err)
	}
	if err := h.ActivityAdd(good); !errors.Is(err, ErrExist) {
		t.Errorf("ActivityAdd twice: %v", err)
	}
	if err := h.SkuAdd(2, 20, 5, 1); err != nil {
		t.Fatal(err)
	}
	if err := h.SkuAdd(9, 20, 5, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("SkuAdd to unknown activity: %v", err)
	}
	a0, err := h.ActivityAt(0)
	a1, err1 := h.ActivityAt(1)
	// the Version is the segment's, whatever ActivityAdd was given
	terms := a1
	terms.Version = 0
	if err != nil || err1 != nil || a0.ID != 1 || a0.LimitPerUser != 1 || terms != good ||
		a1.Version == 0 || a1.Version == a0.Version {
		t.Errorf("ActivityAt: %+v %v, %+v %v", a0, err, a1, err1)
	}
	if g, err := h.ActivityGet(2); err != nil || g != a1 {
		t.Errorf("ActivityGet(2) = %+v, %v; want ActivityAt(1)'s %+v", g, err, a1)
	}
	if _, err := h.ActivityAt(2); !errors.Is(err, ErrNotFound) {
		t.Errorf("ActivityAt past the end: %v", err)
	}
	s1, err := h.SkuAt(1)
	if err != nil || s1.ActivityID != 2 || s1.SkuID != 20 || s1.Total != 5 || s1.Available != 5 || s1.Shards != 1 {
		t.Errorf("SkuAt(1) = %+v, %v", s1, err)
	}
	s, err := h.SkuGet(1, 10)
	if err != nil || s.Total != 100 || s.Available != 100 || s.Shards != 2 {
		t.Errorf("SkuGet = %+v, %v", s, err)
	}
}

func TestOrderEveryOutcomeCancelRestockAndReadBack(t *testing.T) {
	ctx := context.Background()
	_, h := loaded(t, smallOpts(), 1, 0, 3)

	r, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 2, RequestID: 700})
	if err != nil || r.OrderNo == 0 || r.LimitSlot != 1 || r.LSN == 0 {
		t.Fatalf("Order: %+v, %v", r, err)
	}
	// the retry of the same request returns the first outcome
	d, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 2, RequestID: 700})
	if !errors.Is(err, ErrDuplicate) || d.FirstRC != 0 || d.OrderNo != r.OrderNo {
		t.Errorf("retry: %+v, %v; want ErrDuplicate with order %d", d, err, r.OrderNo)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 7, Qty: 1}); !errors.Is(err, ErrLimit) {
		t.Errorf("second order of user 7: %v, want ErrLimit", err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 8, Qty: 2}); !errors.Is(err, ErrSoldOut) {
		t.Errorf("2 of 1 left: %v, want ErrSoldOut", err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 11, UserID: 8, Qty: 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown sku: %v, want ErrNotFound", err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 0, Qty: 1}); !errors.Is(err, ErrInval) {
		t.Errorf("user 0: %v, want ErrInval", err)
	}
	var fe *Error
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 8, Qty: 9}); !errors.As(err, &fe) ||
		fe.Code != -9 || fe.Name != "FLASH_EINVAL" {
		t.Errorf("qty above max_qty: %#v", err)
	}

	oi, err := h.OrderGet(r.OrderNo)
	if err != nil || oi.OrderNo != r.OrderNo || oi.UserID != 7 || oi.Qty != 2 || oi.State != OrderActive ||
		oi.ActivityID != 1 || oi.SkuID != 10 || oi.LimitSlot != 1 || oi.CreatedNs == 0 {
		t.Errorf("OrderGet = %+v, %v", oi, err)
	}
	if max, err := h.OrdersMax(); err != nil || max < r.OrderNo {
		t.Errorf("OrdersMax = %d, %v", max, err)
	}

	units, err := h.Cancel(ctx, r.OrderNo)
	if err != nil || units != 2 {
		t.Errorf("Cancel: %d, %v", units, err)
	}
	if units, err := h.Cancel(ctx, r.OrderNo); !errors.Is(err, ErrCancelled) || units != 0 {
		t.Errorf("second Cancel: %d, %v", units, err)
	}
	if _, err := h.Cancel(ctx, 1<<40); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel of no order: %v", err)
	}
	if oi, _ := h.OrderGet(r.OrderNo); oi.State != OrderCancelled {
		t.Errorf("state after cancel: %d", oi.State)
	}
	if err := h.Restock(ctx, 1, 10, 5); err != nil {
		t.Errorf("Restock: %v", err)
	}
	if err := h.Restock(ctx, 1, 10, -100); !errors.Is(err, ErrSoldOut) {
		t.Errorf("Restock below zero: %v", err)
	}
	s, _ := h.SkuGet(1, 10)
	if s.Total != 8 || s.Available != 8 {
		t.Errorf("after cancel and restock: %+v, want total 8 available 8", s)
	}
	st, err := h.Stats()
	if err != nil || st.Orders != 1 || st.Cancels != 1 || st.SoldOut != 1 || st.LimitHits != 1 || st.Duplicates != 1 {
		t.Errorf("Stats = %+v, %v", st, err)
	}
}

func TestTokensRequiredRedeemOnce(t *testing.T) {
	ctx := context.Background()
	_, h := loaded(t, smallOpts(), 2, ActTokenRequired, 10)
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 5, Qty: 1}); !errors.Is(err, ErrBadToken) {
		t.Errorf("order without token: %v", err)
	}
	tok, err := h.TokenIssue(1, 10, 5, 60*time.Second)
	if err != nil || tok == 0 {
		t.Fatalf("TokenIssue: %d, %v", tok, err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 5, Qty: 1, Token: tok}); err != nil {
		t.Errorf("order with token: %v", err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 5, Qty: 1, Token: tok}); !errors.Is(err, ErrBadToken) {
		t.Errorf("token reused: %v", err)
	}
	tok2, _ := h.TokenIssue(1, 10, 5, 60*time.Second)
	if err := h.TokenRedeem(1, 10, 6, tok2); !errors.Is(err, ErrBadToken) {
		t.Errorf("another user's token: %v", err)
	}
	if err := h.TokenRedeem(1, 10, 5, tok2); err != nil {
		t.Errorf("TokenRedeem: %v", err)
	}
	if err := h.TokenRedeem(1, 10, 5, tok2); !errors.Is(err, ErrBadToken) {
		t.Errorf("TokenRedeem twice: %v", err)
	}
	if _, err := h.TokenIssue(1, 10, 0, time.Second); !errors.Is(err, ErrInval) {
		t.Errorf("TokenIssue user 0: %v", err)
	}
}

func TestLocksFenceGrowsOwnerOnly(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, 0, 1)
	f1, err := h.LockAcquire("job", 11, 60*time.Second)
	if err != nil || f1 == 0 {
		t.Fatalf("LockAcquire: %d, %v", f1, err)
	}
	if _, err := h.LockAcquire("job", 12, 60*time.Second); !errors.Is(err, ErrLocked) {
		t.Errorf("acquire by another owner: %v", err)
	}
	if err := h.LockRenew("job", 12, time.Second); !errors.Is(err, ErrNotOwner) {
		t.Errorf("renew by another owner: %v", err)
	}
	if err := h.LockRenew("job", 11, time.Second); err != nil {
		t.Errorf("renew: %v", err)
	}
	if err := h.LockRelease("job", 12); !errors.Is(err, ErrNotOwner) {
		t.Errorf("release by another owner: %v", err)
	}
	if err := h.LockRelease("job", 11); err != nil {
		t.Errorf("release: %v", err)
	}
	f2, err := h.LockAcquire("job", 12, 60*time.Second)
	if err != nil || f2 <= f1 {
		t.Errorf("second grant: fence %d after %d, %v", f2, f1, err)
	}
	if err := h.LockRelease("nolock", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("release of an unknown lock: %v", err)
	}
}

func TestIdentQuietRecoverSlots(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, 0, 10)
	id, err := h.Ident()
	if err != nil || id.Incarnation == 0 || id.ConsumerPid != 0 {
		t.Errorf("Ident = %+v, %v", id, err)
	}
	if _, err := h.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}); err != nil {
		t.Fatal(err)
	}
	q, err := h.Quiet()
	if err != nil || q.Ops == 0 || q.Pending == 0 || q.InFlight != 0 {
		t.Errorf("Quiet = %+v, %v (records are pending: nothing drains)", q, err)
	}
	if n, err := h.Recover(); err != nil || n != 0 {
		t.Errorf("Recover = %d, %v (no handle died)", n, err)
	}
	if s := h.Slots(); len(s) != 1 || s[0] < 0 {
		t.Errorf("Slots = %v", s)
	}
}

func TestReadOnlyHandleReadsAndRefusesWrites(t *testing.T) {
	name, h := loaded(t, smallOpts(), 1, 0, 10)
	ro, err := Open(name, Options{Flags: RdOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if s, err := ro.SkuGet(1, 10); err != nil || s.Available != 10 {
		t.Errorf("read-only SkuGet: %+v, %v", s, err)
	}
	if _, err := ro.Order(context.Background(), OrderReq{ActivityID: 1, SkuID: 10, UserID: 1, Qty: 1}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Order: %v", err)
	}
	if s := ro.Slots(); len(s) != 1 || s[0] != -1 {
		t.Errorf("read-only Slots = %v, want [-1]", s)
	}
	if s, _ := h.SkuGet(1, 10); s.Available != 10 {
		t.Errorf("the refused order changed stock: %+v", s)
	}
}

// A sync segment with no daemon: nothing becomes durable, so the context's
// deadline ends the wait with ErrFateUnknown, the order placed all the same.
func TestSyncOrderPastContextDeadlineIsFateUnknownAndPlaced(t *testing.T) {
	o := smallOpts()
	o.Durability = DurabilitySync
	_, h := loaded(t, o, 1, 0, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 3, Qty: 1})
	if !errors.Is(err, ErrFateUnknown) || !errors.Is(err, context.DeadlineExceeded) || r.OrderNo == 0 {
		t.Fatalf("sync Order without daemon: %+v, %v; want ErrFateUnknown after the deadline", r, err)
	}
	if oi, err := h.OrderGet(r.OrderNo); err != nil || oi.State != OrderActive {
		t.Errorf("the order is not placed: %+v, %v", oi, err)
	}
	// a cancellable context without deadline: the wait is sliced and ends
	// when the context is cancelled
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel2)
	err = h.DurableWait(ctx2, r)
	if !errors.Is(err, ErrFateUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("DurableWait cancelled: %v", err)
	}
	// a context ended before the call places nothing
	if _, err := h.Order(ctx2, OrderReq{ActivityID: 1, SkuID: 10, UserID: 4, Qty: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Order with a cancelled context: %v", err)
	}
	if s, _ := h.SkuGet(1, 10); s.Available != 9 {
		t.Errorf("available %d, want 9 (one order placed)", s.Available)
	}
	// the handle's own bound applies without a deadline
	if err := h.SetSyncWait(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := h.DurableWait(context.Background(), r); !errors.Is(err, ErrFateUnknown) {
		t.Errorf("DurableWait with the handle's bound: %v", err)
	}
}
