// cart_test.go -- carts (CartOrder) through the binding: every line's units
// taken under one number and one limit slot, the later lines' numbers
// reading as lines, OrderLines reading the cart whole; one line short takes
// nothing and the *CartError names the line and every short one; a cancel
// gives every line back; a cart reservation is confirmed or expired whole;
// an activity of ScopeSku refuses carts; the same on a Pinned; a record's
// Cart, Line and Last come from its flags.
package flashstock

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// cartSale opens a Handle on a new segment holding sale(lim, ...) with
// skus 10, 11, 12 of units[0], units[1], units[2].
func cartSale(t *testing.T, lim uint32, units [3]uint64) *Handle {
	t.Helper()
	_, h := loaded(t, smallOpts(), lim, ActCancelReturnsQuota, units[0])
	for i, sku := range []uint32{11, 12} {
		if err := h.SkuAdd(1, sku, units[i+1], 1); err != nil {
			t.Fatalf("SkuAdd(%d): %v", sku, err)
		}
	}
	return h
}

func availables(t *testing.T, h *Handle) [3]uint64 {
	t.Helper()
	var out [3]uint64
	for i, sku := range []uint32{10, 11, 12} {
		s, err := h.SkuGet(1, sku)
		if err != nil {
			t.Fatalf("SkuGet(%d): %v", sku, err)
		}
		out[i] = s.Available
	}
	return out
}

func lines(t *testing.T, h *Handle, no uint64) []OrderInfo {
	t.Helper()
	ls, err := h.OrderLines(no)
	if err != nil {
		t.Fatalf("OrderLines(%d): %v", no, err)
	}
	return ls
}

func cart(user uint64, ls ...CartLine) CartReq {
	return CartReq{ActivityID: 1, UserID: user, Lines: ls}
}

func TestCartTakesEveryLineUnderOneNumberAndOneLimitSlot(t *testing.T) {
	h := cartSale(t, 2, [3]uint64{5, 5, 5})
	ctx := context.Background()
	req := cart(700, CartLine{SkuID: 10, Qty: 2}, CartLine{SkuID: 11, Qty: 1}, CartLine{SkuID: 12, Qty: 3})
	req.RequestID = 7001
	r, err := h.CartOrder(ctx, req)
	if err != nil {
		t.Fatalf("CartOrder: %v", err)
	}
	if r.OrderNo == 0 || r.LimitSlot != 1 || r.LSN == 0 {
		t.Errorf("receipt %+v: want a number, limit slot 1, an LSN", r)
	}
	if a := availables(t, h); a != [3]uint64{3, 4, 2} {
		t.Errorf("available %v, want [3 4 2]: every line's units taken", a)
	}
	head := stateOf(t, h, r.OrderNo)
	if head.SkuID != 10 || head.Qty != 2 || head.State != OrderActive || head.Line != 0 || head.Lines != 3 {
		t.Errorf("the cart's number reads %+v: want line 0 of 3, sku 10, qty 2, ACTIVE", head)
	}
	for i := uint64(1); i < 3; i++ {
		o := stateOf(t, h, r.OrderNo+i)
		if o.State != OrderNone || o.Line != uint32(i) || o.Lines != 3 {
			t.Errorf("number %d reads %+v: want NONE, line %d of 3", r.OrderNo+i, o, i)
		}
		if _, err := h.OrderLines(r.OrderNo + i); !errors.Is(err, ErrNotFound) {
			t.Errorf("OrderLines of a later line's number: %v, want ErrNotFound", err)
		}
	}
	ls := lines(t, h, r.OrderNo)
	want := []struct{ sku, qty uint32 }{{10, 2}, {11, 1}, {12, 3}}
	if len(ls) != 3 {
		t.Fatalf("OrderLines: %d lines, want 3: %+v", len(ls), ls)
	}
	for i, o := range ls {
		if o.OrderNo != r.OrderNo || o.SkuID != want[i].sku || o.Qty != want[i].qty || o.Line != uint32(i) ||
			o.Lines != 3 || o.State != OrderActive || o.UserID != 700 || o.LimitSlot != 1 {
			t.Errorf("line %d: %+v", i, o)
		}
	}
	var de *DuplicateError
	if _, err := h.CartOrder(ctx, req); !errors.As(err, &de) || de.FirstRC != 0 || de.OrderNo != r.OrderNo {
		t.Errorf("the cart's request id again: %v, want ErrDuplicate of order %d", err, r.OrderNo)
	}
	p, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: 700, Qty: 1})
	if err != nil || p.LimitSlot != 2 {
		t.Fatalf("the user's next order: %+v %v, want limit slot 2 (the cart holds one)", p, err)
	}
	if pl := lines(t, h, p.OrderNo); len(pl) != 1 || pl[0].Lines != 1 || pl[0].Line != 0 || pl[0].SkuID != 10 {
		t.Errorf("OrderLines of a plain order: %+v", pl)
	}
	if _, err := h.CartOrder(ctx, cart(700, CartLine{SkuID: 11, Qty: 1})); !errors.Is(err, ErrLimit) {
		t.Errorf("a third order of the user: %v, want ErrLimit", err)
	}
	if a := availables(t, h); a != [3]uint64{2, 4, 2} {
		t.Errorf("available %v, want [2 4 2]", a)
	}
}

func TestCartOneLineShortTakesNothingAndNamesTheLineAndEveryShortOne(t *testing.T) {
	h := cartSale(t, 1, [3]uint64{5, 1, 2})
	ctx := context.Background()
	before := availables(t, h)
	var ce *CartError
	_, err := h.CartOrder(ctx, cart(710, CartLine{SkuID: 10, Qty: 1}, CartLine{SkuID: 11, Qty: 2}, CartLine{SkuID: 12, Qty: 1}))
	if !errors.Is(err, ErrSoldOut) || !errors.As(err, &ce) || ce.Line != 1 || !reflect.DeepEqual(ce.SoldOut, []int{1}) {
		t.Errorf("line 1 short: %v (%+v), want ErrSoldOut of line 1, short [1]", err, ce)
	}
	ce = nil
	_, err = h.CartOrder(ctx, cart(710, CartLine{SkuID: 10, Qty: 3}, CartLine{SkuID: 11, Qty: 2}, CartLine{SkuID: 12, Qty: 3}))
	if !errors.As(err, &ce) || !errors.Is(err, ErrSoldOut) || !reflect.DeepEqual(ce.SoldOut, []int{1, 2}) ||
		(ce.Line != 1 && ce.Line != 2) {
		t.Errorf("lines 1 and 2 short: %v (%+v), want ErrSoldOut, short [1 2]", err, ce)
	}
	if a := availables(t, h); a != before {
		t.Errorf("available %v after refusals, want %v: nothing taken", a, before)
	}
	for _, c := range []struct {
		ls   []CartLine
		want *Error
		line int
	}{
		{[]CartLine{{SkuID: 10, Qty: 1}, {SkuID: 11, Qty: 1}, {SkuID: 13, Qty: 1}}, ErrNotFound, 2},
		{[]CartLine{{SkuID: 10, Qty: 1}, {SkuID: 11, Qty: 0}}, ErrInval, 1},
		{[]CartLine{{SkuID: 10, Qty: 1}, {SkuID: 12, Qty: 5}}, ErrInval, 1},
		{[]CartLine{{SkuID: 10, Qty: 1}, {SkuID: 11, Qty: 1}, {SkuID: 10, Qty: 1}}, ErrInval, 2},
	} {
		ce = nil
		_, err := h.CartOrder(ctx, cart(710, c.ls...))
		if !errors.Is(err, c.want) || !errors.As(err, &ce) || ce.Line != c.line {
			t.Errorf("cart %+v: %v, want %v of line %d", c.ls, err, c.want, c.line)
		}
	}
	if _, err := h.CartOrder(ctx, cart(710)); !errors.Is(err, ErrInval) {
		t.Errorf("an empty cart: %v, want ErrInval", err)
	}
	if _, err := h.CartOrder(ctx, cart(710, make([]CartLine, CartLinesMax+1)...)); !errors.Is(err, ErrInval) {
		t.Errorf("a cart of %d lines: %v, want ErrInval", CartLinesMax+1, err)
	}
	if a := availables(t, h); a != before {
		t.Errorf("available %v after refusals, want %v: nothing taken", a, before)
	}
	r, err := h.CartOrder(ctx, cart(710, CartLine{SkuID: 10, Qty: 1}, CartLine{SkuID: 11, Qty: 1}, CartLine{SkuID: 12, Qty: 2}))
	if err != nil || r.LimitSlot != 1 {
		t.Fatalf("the cart that fits: %+v %v, want limit slot 1 (the refusals took none)", r, err)
	}
	if a := availables(t, h); a != [3]uint64{4, 0, 0} {
		t.Errorf("available %v, want [4 0 0]", a)
	}
}

func TestCancellingACartReturnsEveryLineAndTheLimitSlot(t *testing.T) {
	h := cartSale(t, 1, [3]uint64{5, 5, 5})
	ctx := context.Background()
	r, err := h.CartOrder(ctx, cart(720, CartLine{SkuID: 10, Qty: 1}, CartLine{SkuID: 11, Qty: 2}, CartLine{SkuID: 12, Qty: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if u, err := h.Cancel(ctx, r.OrderNo); err != nil || u != 6 {
		t.Fatalf("Cancel: %d units, %v; want 6", u, err)
	}
	if a := availables(t, h); a != [3]uint64{5, 5, 5} {
		t.Errorf("available %v after the cancel, want [5 5 5]", a)
	}
	for i, o := range lines(t, h, r.OrderNo) {
		if o.State != OrderCancelled || o.Line != uint32(i) {
			t.Errorf("line %d after the cancel: %+v", i, o)
		}
	}
	if _, err := h.Cancel(ctx, r.OrderNo); !errors.Is(err, ErrCancelled) {
		t.Errorf("a second cancel: %v, want ErrCancelled", err)
	}
	if _, err := h.Cancel(ctx, r.OrderNo+1); !errors.Is(err, ErrNotFound) {
		t.Errorf("a cancel of a later line's number: %v, want ErrNotFound", err)
	}
	if a := availables(t, h); a != [3]uint64{5, 5, 5} {
		t.Errorf("available %v, want [5 5 5]", a)
	}
	if r, err := h.CartOrder(ctx, cart(720, CartLine{SkuID: 11, Qty: 1}, CartLine{SkuID: 12, Qty: 1})); err != nil || r.LimitSlot != 1 {
		t.Errorf("the user's next cart: %+v %v, want limit slot 1 back", r, err)
	}
}

func TestCartReservationIsConfirmedOrExpiredWhole(t *testing.T) {
	h := cartSale(t, 2, [3]uint64{5, 5, 5})
	ctx := context.Background()
	reserve := func(user uint64, ms uint32, ls ...CartLine) Receipt {
		t.Helper()
		req := cart(user, ls...)
		req.ReserveMs = ms
		r, err := h.CartOrder(ctx, req)
		if err != nil {
			t.Fatalf("CartOrder (reserve %d ms): %v", ms, err)
		}
		return r
	}
	paid := reserve(730, 60000, CartLine{SkuID: 10, Qty: 1}, CartLine{SkuID: 11, Qty: 2})
	late := reserve(731, 30, CartLine{SkuID: 11, Qty: 1}, CartLine{SkuID: 12, Qty: 3})
	if a := availables(t, h); a != [3]uint64{4, 2, 2} {
		t.Errorf("available %v, want [4 2 2]: the reservations hold their units", a)
	}
	for _, no := range []uint64{paid.OrderNo, late.OrderNo} {
		ls := lines(t, h, no)
		if len(ls) != 2 || ls[0].State != OrderReserved || ls[1].State != OrderReserved || ls[1].PayByNs == 0 {
			t.Errorf("cart %d: %+v, want 2 lines RESERVED with a pay-by time", no, ls)
		}
	}
	if _, err := h.Expire(ctx, paid.OrderNo); !errors.Is(err, ErrNotDue) {
		t.Errorf("Expire before the deadline: %v, want ErrNotDue", err)
	}
	if err := h.Confirm(ctx, paid.OrderNo); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	for _, o := range lines(t, h, paid.OrderNo) {
		if o.State != OrderActive || o.PayByNs != 0 {
			t.Errorf("confirmed cart's line %d: %+v, want ACTIVE, pay by 0", o.Line, o)
		}
	}
	time.Sleep(60 * time.Millisecond)
	if u, err := h.Expire(ctx, late.OrderNo); err != nil || u != 4 {
		t.Errorf("Expire: %d units, %v; want 4", u, err)
	}
	for _, o := range lines(t, h, late.OrderNo) {
		if o.State != OrderExpired {
			t.Errorf("expired cart's line %d: %+v", o.Line, o)
		}
	}
	if err := h.Confirm(ctx, late.OrderNo); !errors.Is(err, ErrExpired) {
		t.Errorf("Confirm after the expiry: %v, want ErrExpired", err)
	}
	again := reserve(731, 30, CartLine{SkuID: 12, Qty: 1}, CartLine{SkuID: 10, Qty: 1})
	time.Sleep(60 * time.Millisecond)
	if n, err := h.ExpireDue(ctx, 0); err != nil || n != 1 {
		t.Errorf("ExpireDue: %d, %v; want 1 (the cart, once)", n, err)
	}
	for _, o := range lines(t, h, again.OrderNo) {
		if o.State != OrderExpired {
			t.Errorf("cart expired by ExpireDue, line %d: %+v", o.Line, o)
		}
	}
	if a := availables(t, h); a != [3]uint64{4, 3, 5} {
		t.Errorf("available %v, want [4 3 5]: only the paid cart holds units", a)
	}
}

func TestSkuScopeActivityRefusesCarts(t *testing.T) {
	h := cartSale(t, 1, [3]uint64{5, 5, 5})
	a := sale(1, 0)
	a.ID, a.Scope = 2, ScopeSku
	if err := h.ActivityAdd(a); err != nil {
		t.Fatal(err)
	}
	for _, sku := range []uint32{20, 21} {
		if err := h.SkuAdd(2, sku, 5, 1); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	req := CartReq{ActivityID: 2, UserID: 740, Lines: []CartLine{{SkuID: 20, Qty: 1}, {SkuID: 21, Qty: 1}}}
	if _, err := h.CartOrder(ctx, req); !errors.Is(err, ErrInval) {
		t.Errorf("a cart in a SKU-scope activity: %v, want ErrInval", err)
	}
	for _, sku := range []uint32{20, 21} {
		if s, _ := h.SkuGet(2, sku); s.Available != 5 {
			t.Errorf("sku %d: available %d, want 5", sku, s.Available)
		}
	}
	if _, err := h.Order(ctx, OrderReq{ActivityID: 2, SkuID: 20, UserID: 740, Qty: 1}); err != nil {
		t.Errorf("a plain order there: %v", err)
	}
}

func TestCartOnPinned(t *testing.T) {
	h := cartSale(t, 1, [3]uint64{5, 5, 5})
	var r Receipt
	err := h.Run(context.Background(), func(p *Pinned) error {
		var err error
		r, err = p.CartOrder(context.Background(), cart(750, CartLine{SkuID: 12, Qty: 2}, CartLine{SkuID: 10, Qty: 1}))
		if err != nil {
			return err
		}
		ls, err := p.OrderLines(r.OrderNo)
		if err != nil {
			return err
		}
		if len(ls) != 2 || ls[0].SkuID != 12 || ls[1].SkuID != 10 || ls[1].Qty != 1 {
			t.Errorf("Pinned.OrderLines: %+v", ls)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := availables(t, h); a != [3]uint64{4, 5, 3} {
		t.Errorf("available %v, want [4 5 3]", a)
	}
}

func TestRecordCartLineAndLastAreItsFlags(t *testing.T) {
	for _, c := range []struct {
		typ, flags uint16
		cart       bool
		line       int
		last       bool
	}{
		{RecOrder, RecFCart, true, 0, false},
		{RecCancel, RecFCart | RecFLast | 15<<10 | 1, true, 15, true},
		{RecExpire, RecFCart | 3<<10, true, 3, false},
		{RecConfirm, RecFCart | RecFLast | 1<<10, true, 1, true},
		{RecOrder, 0x8035, false, 0, true},
		{RecRestock, 0, false, 0, false},
		{RecActivity, 1, false, 0, false},
	} {
		r := Record{Type: c.typ, Flags: c.flags}
		if r.Cart() != c.cart || r.Line() != c.line || r.Last() != c.last {
			t.Errorf("type %d flags %#x: cart %v line %d last %v; want %v %d %v", c.typ, c.flags,
				r.Cart(), r.Line(), r.Last(), c.cart, c.line, c.last)
		}
	}
}
