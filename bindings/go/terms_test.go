// terms_test.go -- versioned terms through the binding: an order naming
// the versions of terms that changed since (OrderReq.ActivityVersion,
// SkuVersion) is ErrStale and takes nothing -- no stock, no limit slot, no
// request id -- while one naming the new versions is placed; a price set
// reads back with its version; updates that would lower the limit or move
// the limit keys are refused with the terms unchanged; the same calls on a
// Pinned handle and in a batch.
package flashstock

import (
	"context"
	"errors"
	"testing"
)

func activityOf(t *testing.T, h *Handle, id uint32) Activity {
	t.Helper()
	a, err := h.ActivityGet(id)
	if err != nil {
		t.Fatalf("ActivityGet(%d): %v", id, err)
	}
	return a
}

func skuOf(t *testing.T, h *Handle) SkuInfo {
	t.Helper()
	s, err := h.SkuGet(1, 10)
	if err != nil {
		t.Fatalf("SkuGet: %v", err)
	}
	return s
}

func TestAnOrderNamingOldTermsIsStaleTakesNothingAndTheNewVersionOrders(t *testing.T) {
	_, h := loaded(t, smallOpts(), 2, ActCancelReturnsQuota, 10)
	ctx := context.Background()
	seenA, seenS := activityOf(t, h, 1), skuOf(t, h) // what the page showed
	if seenA.Version == 0 || seenS.Version == 0 || seenA.Version == seenS.Version {
		t.Fatalf("versions: activity %d, sku %d; want two nonzero, different", seenA.Version, seenS.Version)
	}
	req := func(user, reqID, av, sv uint64) OrderReq {
		return OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1, RequestID: reqID,
			ActivityVersion: av, SkuVersion: sv}
	}
	if _, err := h.Order(ctx, req(700, 0, seenA.Version, seenS.Version)); err != nil {
		t.Fatalf("an order naming the current versions: %v", err)
	}
	grown := seenA
	grown.LimitPerUser = 3
	newV, err := h.ActivityUpdate(grown)
	if err != nil || newV <= seenA.Version {
		t.Fatalf("ActivityUpdate(limit 3): version %d, %v; want above %d", newV, err, seenA.Version)
	}
	if a := activityOf(t, h, 1); a.LimitPerUser != 3 || a.Version != newV {
		t.Errorf("after the update: limit %d, version %d; want 3, %d", a.LimitPerUser, a.Version, newV)
	}

	before, max0 := skuOf(t, h), ordersMax(t, h)
	_, err = h.Order(ctx, req(700, 9001, seenA.Version, 0))
	var fe *Error
	if !errors.Is(err, ErrStale) || !errors.As(err, &fe) || fe.Code != -53 || fe.Name != "FLASH_ESTALE" {
		t.Fatalf("an order naming the replaced version: %v, want ErrStale (-53, FLASH_ESTALE)", err)
	}
	if s, max := skuOf(t, h), ordersMax(t, h); s != before || max != max0 {
		t.Errorf("the stale order took something: sku %+v -> %+v, orders max %d -> %d", before, s, max0, max)
	}
	// the request id was not taken (not ErrDuplicate), nor the user's slot:
	// slot 2 of the grown limit, then 3, then the limit
	r, err := h.Order(ctx, req(700, 9001, newV, seenS.Version))
	if err != nil || r.LimitSlot != 2 {
		t.Fatalf("the new version with the stale order's request id: slot %d, %v; want 2, nil", r.LimitSlot, err)
	}
	if r, err := h.Order(ctx, req(700, 0, newV, 0)); err != nil || r.LimitSlot != 3 {
		t.Errorf("the user's third order: slot %d, %v; want 3, nil", r.LimitSlot, err)
	}
	if _, err := h.Order(ctx, req(700, 0, newV, 0)); !errors.Is(err, ErrLimit) {
		t.Errorf("the user's fourth order: %v, want ErrLimit", err)
	}

	// the sku's terms: a price set moves its version on; 0 checks nothing
	skuV, err := h.SkuPriceSet(1, 10, 1500)
	if err != nil {
		t.Fatalf("SkuPriceSet: %v", err)
	}
	if _, err := h.Order(ctx, req(701, 0, newV, seenS.Version)); !errors.Is(err, ErrStale) {
		t.Errorf("an order naming the sku's old version: %v, want ErrStale", err)
	}
	if _, err := h.Order(ctx, req(701, 0, newV, skuV)); err != nil {
		t.Errorf("an order naming the sku's new version: %v", err)
	}
	if _, err := h.Order(ctx, req(702, 0, 0, 0)); err != nil {
		t.Errorf("an order naming no version: %v", err)
	}

	// a batch: the stale requests refused, the one between them placed
	out, err := h.OrderMany(ctx, []OrderReq{req(703, 0, seenA.Version, 0), req(704, 0, newV, skuV),
		req(705, 0, newV, seenS.Version)}, nil)
	if err != nil || len(out) != 3 || !errors.Is(out[0].Err, ErrStale) || out[1].Err != nil ||
		!errors.Is(out[2].Err, ErrStale) {
		t.Fatalf("batch: %+v, %v; want ErrStale, placed, ErrStale", out, err)
	}
	if a := skuOf(t, h).Available; a != 10-6 {
		t.Errorf("available %d, want 4: six orders placed, the stale ones took nothing", a)
	}
}

// ordersMax is h.OrdersMax() for a test (its error fails it).
func ordersMax(t *testing.T, h *Handle) uint64 {
	t.Helper()
	max, err := h.OrdersMax()
	if err != nil {
		t.Fatalf("OrdersMax: %v", err)
	}
	return max
}

func TestAPriceIsSetAndReadBackWithItsVersion(t *testing.T) {
	name, h := loaded(t, smallOpts(), 1, 0, 5)
	s0 := skuOf(t, h)
	if s0.Price != 0 || s0.Version == 0 {
		t.Fatalf("a new sku: price %d, version %d; want 0 and a version", s0.Price, s0.Version)
	}
	v1, err := h.SkuPriceSet(1, 10, 1999)
	if err != nil || v1 <= s0.Version {
		t.Fatalf("SkuPriceSet(1999): %d, %v; want a version above %d", v1, err, s0.Version)
	}
	s1 := skuOf(t, h)
	if s1.Price != 1999 || s1.Version != v1 || s1.Total != s0.Total || s1.Available != s0.Available {
		t.Errorf("read back: %+v; want price 1999, version %d, the stock unchanged (%+v)", s1, v1, s0)
	}
	v2, err := h.SkuPriceSet(1, 10, 1999) // the same price: a republished page
	if err != nil || v2 <= v1 {
		t.Errorf("the same price again: %d, %v; want a version above %d", v2, err, v1)
	}
	if at, err := h.SkuAt(0); err != nil || at != skuOf(t, h) {
		t.Errorf("SkuAt(0) = %+v, %v; want SkuGet's %+v", at, err, skuOf(t, h))
	}
	if _, err := h.SkuPriceSet(1, 10, PriceMax); err != nil {
		t.Errorf("SkuPriceSet(PriceMax): %v", err)
	}
	top := skuOf(t, h)
	for _, c := range []struct {
		act, sku uint32
		price    uint64
		want     error
	}{{1, 10, PriceMax + 1, ErrInval}, {1, 11, 5, ErrNotFound}, {2, 10, 5, ErrNotFound}} {
		if _, err := h.SkuPriceSet(c.act, c.sku, c.price); !errors.Is(err, c.want) {
			t.Errorf("SkuPriceSet(%d, %d, %d): %v, want %v", c.act, c.sku, c.price, err, c.want)
		}
	}
	if s := skuOf(t, h); s != top || s.Price != PriceMax {
		t.Errorf("after the refusals: %+v; want %+v (price PriceMax)", s, top)
	}
	if a := activityOf(t, h, 1); a.Version == s0.Version || a.Version == v1 || a.Version == v2 {
		t.Errorf("activity version %d is also a sku's (%d, %d, %d): one counter issues each once",
			a.Version, s0.Version, v1, v2)
	}
	ro, err := Open(name, Options{Flags: RdOnly})
	if err != nil {
		t.Fatalf("Open(RdOnly): %v", err)
	}
	defer ro.Close()
	if s, err := ro.SkuGet(1, 10); err != nil || s.Price != PriceMax {
		t.Errorf("read-only SkuGet: %+v, %v", s, err)
	}
	if _, err := ro.SkuPriceSet(1, 10, 1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only SkuPriceSet: %v, want ErrReadOnly", err)
	}
}

func TestBadUpdatesAreRefusedAndLeaveTheTermsAndTheirVersion(t *testing.T) {
	_, h := loaded(t, smallOpts(), 2, 0, 5)
	a := activityOf(t, h, 1)
	bad := map[string]func(*Activity){
		"limit lowered":      func(x *Activity) { x.LimitPerUser = 1 },
		"scope changed":      func(x *Activity) { x.Scope = ScopeSku },
		"day offset changed": func(x *Activity) { x.DayOffsetS = 3600 },
		"empty window":       func(x *Activity) { x.EndNs = x.StartNs },
		"max qty 0":          func(x *Activity) { x.MaxQty = 0 },
	}
	for what, change := range bad {
		x := a
		change(&x)
		if v, err := h.ActivityUpdate(x); !errors.Is(err, ErrInval) || v != 0 {
			t.Errorf("%s: %d, %v; want 0, ErrInval", what, v, err)
		}
		if now := activityOf(t, h, 1); now != a {
			t.Errorf("%s: the terms changed to %+v", what, now)
		}
	}
	missing := a
	missing.ID = 9
	if _, err := h.ActivityUpdate(missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("ActivityUpdate of no activity: %v, want ErrNotFound", err)
	}
	if _, err := h.ActivityGet(9); !errors.Is(err, ErrNotFound) {
		t.Errorf("ActivityGet(9): %v, want ErrNotFound", err)
	}
	// the same limit and a shorter window: taken, under a version of its own
	later := a
	later.EndNs--
	v, err := h.ActivityUpdate(later)
	later.Version = v
	if now := activityOf(t, h, 1); err != nil || v <= a.Version || now != later {
		t.Errorf("a new window: version %d, %v, reads %+v; want %+v", v, err, now, later)
	}
}

func TestTermsOnAPinnedHandle(t *testing.T) {
	name, h := loaded(t, smallOpts(), 1, 0, 5)
	ctx := context.Background()
	viaPinned(t, name, func(p *Pinned) {
		a, err := p.ActivityGet(1)
		if err != nil {
			t.Errorf("Pinned.ActivityGet: %v", err)
			return
		}
		grown := a
		grown.LimitPerUser = 2
		v, err := p.ActivityUpdate(grown)
		if err != nil || v <= a.Version {
			t.Errorf("Pinned.ActivityUpdate: %d, %v", v, err)
		}
		sv, err := p.SkuPriceSet(1, 10, 700)
		if s, _ := p.SkuGet(1, 10); err != nil || s.Price != 700 || s.Version != sv {
			t.Errorf("Pinned.SkuPriceSet: %d, %v; reads %+v", sv, err, s)
		}
		if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 5, Qty: 1,
			ActivityVersion: a.Version}); !errors.Is(err, ErrStale) {
			t.Errorf("Pinned.Order naming the old version: %v, want ErrStale", err)
		}
		if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 5, Qty: 1,
			ActivityVersion: v, SkuVersion: sv}); err != nil {
			t.Errorf("Pinned.Order naming the new versions: %v", err)
		}
	})
	if a := activityOf(t, h, 1); a.LimitPerUser != 2 {
		t.Errorf("the Handle reads limit %d after the Pinned update, want 2", a.LimitPerUser)
	}
}
