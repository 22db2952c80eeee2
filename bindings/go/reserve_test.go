// reserve_test.go -- reservations (OrderReq.ReserveMs) through the binding:
// RESERVED with its pay-by time until Confirm makes it ACTIVE (and a second
// Confirm is nil); a Confirm after the deadline is ErrExpired, the order
// EXPIRED and its units back; Expire before the deadline ErrNotDue, of an
// ACTIVE order ErrConfirmed; ExpireDue counts what it expired; the same
// calls on a Pinned handle and in a batch.
package flashstock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func available(t *testing.T, h *Handle) uint64 {
	t.Helper()
	s, err := h.SkuGet(1, 10)
	if err != nil {
		t.Fatalf("SkuGet: %v", err)
	}
	return s.Available
}

func stateOf(t *testing.T, h *Handle, no uint64) OrderInfo {
	t.Helper()
	o, err := h.OrderGet(no)
	if err != nil {
		t.Fatalf("OrderGet(%d): %v", no, err)
	}
	return o
}

func TestReservationIsReservedWithItsPayByUntilConfirmedAndConfirmAgainIsNil(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, ActCancelReturnsQuota, 10)
	ctx := context.Background()
	before := time.Now().UnixNano()
	r, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 500, Qty: 3, ReserveMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	o := stateOf(t, h, r.OrderNo)
	if o.State != OrderReserved || o.PayByNs < before+59e9 || o.PayByNs > time.Now().UnixNano()+60e9 {
		t.Errorf("reserved: state %d, pay by %d (placed at %d)", o.State, o.PayByNs, before)
	}
	if a := available(t, h); a != 7 {
		t.Errorf("available %d, want 7: the reservation holds its units", a)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 500, Qty: 1}); !errors.Is(err, ErrLimit) {
		t.Errorf("a second order of the user: %v, want ErrLimit (the reservation holds the slot)", err)
	}
	if _, err := h.Expire(ctx, r.OrderNo); !errors.Is(err, ErrNotDue) {
		t.Errorf("Expire before the deadline: %v, want ErrNotDue", err)
	}
	if err := h.Confirm(ctx, r.OrderNo); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	if o := stateOf(t, h, r.OrderNo); o.State != OrderActive || o.PayByNs != 0 {
		t.Errorf("confirmed: state %d, pay by %d; want ACTIVE, 0", o.State, o.PayByNs)
	}
	if err := h.Confirm(ctx, r.OrderNo); err != nil {
		t.Errorf("Confirm again (a retried payment callback): %v, want nil", err)
	}
	if _, err := h.Expire(ctx, r.OrderNo); !errors.Is(err, ErrConfirmed) {
		t.Errorf("Expire of an ACTIVE order: %v, want ErrConfirmed", err)
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 501, Qty: 1,
		ReserveMs: ReserveMsMax + 1}); !errors.Is(err, ErrInval) {
		t.Errorf("ReserveMs past ReserveMsMax: %v, want ErrInval", err)
	}
	if st, err := h.Stats(); err != nil || st.Confirms != 1 || st.Expiries != 0 {
		t.Errorf("Stats: confirms %d, expiries %d, %v; want 1, 0", st.Confirms, st.Expiries, err)
	}
}

func TestReservationConfirmedAfterItsDeadlineIsExpiredWithItsUnitsBack(t *testing.T) {
	_, h := loaded(t, smallOpts(), 1, ActCancelReturnsQuota, 10)
	ctx := context.Background()
	late, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 510, Qty: 2, ReserveMs: 30})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 511, Qty: 1, ReserveMs: 30})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if err := h.Confirm(ctx, late.OrderNo); !errors.Is(err, ErrExpired) {
		t.Fatalf("Confirm after the deadline: %v, want ErrExpired", err)
	}
	if o := stateOf(t, h, late.OrderNo); o.State != OrderExpired || o.PayByNs == 0 {
		t.Errorf("expired: state %d, pay by %d", o.State, o.PayByNs)
	}
	if a := available(t, h); a != 9 {
		t.Errorf("available %d, want 9: the expired reservation's 2 units back", a)
	}
	if _, err := h.Cancel(ctx, gone.OrderNo); !errors.Is(err, ErrExpired) {
		t.Errorf("Cancel after the deadline: %v, want ErrExpired", err)
	}
	if units, err := h.Expire(ctx, gone.OrderNo); !errors.Is(err, ErrExpired) || units != 0 {
		t.Errorf("Expire of an expired one: %d units, %v; want 0, ErrExpired", units, err)
	}
	if a := available(t, h); a != 10 {
		t.Errorf("available %d, want 10", a)
	}
	// the activity returns the quota: the user may buy again
	if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 510, Qty: 1}); err != nil {
		t.Errorf("the expired reservation's user again: %v", err)
	}
	if st, err := h.Stats(); err != nil || st.Confirms != 0 || st.Expiries != 2 || st.Cancels != 0 {
		t.Errorf("Stats: confirms %d, expiries %d, cancels %d, %v; want 0, 2, 0",
			st.Confirms, st.Expiries, st.Cancels, err)
	}
}

func TestExpireAndExpireDueTakeBackOnlyWhatIsDue(t *testing.T) {
	name, h := loaded(t, smallOpts(), 1, ActCancelReturnsQuota, 20)
	ctx := context.Background()
	var reqs []OrderReq
	for u := uint64(520); u < 523; u++ {
		reqs = append(reqs, OrderReq{ActivityID: 1, SkuID: 10, UserID: u, Qty: 2, ReserveMs: 30})
	}
	outs, err := h.OrderMany(ctx, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var due []uint64
	for _, o := range outs {
		if o.Err != nil {
			t.Fatalf("batched reservation: %v", o.Err)
		}
		due = append(due, o.OrderNo)
	}
	keep, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 523, Qty: 1, ReserveMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	for _, no := range due {
		if o := stateOf(t, h, no); o.State != OrderReserved {
			t.Errorf("batched reservation %d: state %d", no, o.State)
		}
	}
	if a := available(t, h); a != 13 {
		t.Errorf("available %d, want 13", a)
	}
	time.Sleep(60 * time.Millisecond)
	if units, err := h.Expire(ctx, due[0]); err != nil || units != 2 {
		t.Errorf("Expire: %d units, %v; want 2", units, err)
	}
	// a Pinned handle: the same calls on its own native handle
	p, err := OpenPinned(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.ExpireDue(ctx, 1); err != nil || n != 1 {
		t.Errorf("Pinned.ExpireDue(1): %d, %v; want 1 (at most one)", n, err)
	}
	if n, err := h.ExpireDue(ctx, 0); err != nil || n != 1 {
		t.Errorf("ExpireDue(0): %d, %v; want the last one due", n, err)
	}
	if n, err := h.ExpireDue(ctx, 0); err != nil || n != 0 {
		t.Errorf("ExpireDue with nothing due: %d, %v", n, err)
	}
	for _, no := range due {
		if o := stateOf(t, h, no); o.State != OrderExpired {
			t.Errorf("due reservation %d: state %d, want EXPIRED", no, o.State)
		}
	}
	if _, err := p.Expire(ctx, keep.OrderNo); !errors.Is(err, ErrNotDue) {
		t.Errorf("Pinned.Expire before the deadline: %v, want ErrNotDue", err)
	}
	if err := p.Confirm(ctx, keep.OrderNo); err != nil {
		t.Errorf("Pinned.Confirm: %v", err)
	}
	if o := stateOf(t, h, keep.OrderNo); o.State != OrderActive {
		t.Errorf("confirmed by the Pinned handle: state %d", o.State)
	}
	if a := available(t, h); a != 19 {
		t.Errorf("available %d, want 19", a)
	}
	if st, err := h.Stats(); err != nil || st.Confirms != 1 || st.Expiries != 3 {
		t.Errorf("Stats: confirms %d, expiries %d, %v; want 1, 3", st.Confirms, st.Expiries, err)
	}
}
