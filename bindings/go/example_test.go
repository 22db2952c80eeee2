// example_test.go -- the package's examples for go doc; go test runs them
// and compares their output.
package flashstock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"flashstock/go/flashstock"
)

// A segment with one activity (one order per user) and one sku of one
// unit: the first buyer gets it, the retry of the same request answers the
// first outcome, the next buyer finds it sold out.
func Example() {
	name := fmt.Sprintf("/fs-go-example-%d", os.Getpid())
	o := flashstock.DefaultSegOpts()
	o.MaxUsers, o.MaxOrders, o.MaxTokens, o.MaxRequests, o.RingRecords = 64, 256, 64, 64, 64
	if err := flashstock.Create(name, &o); err != nil {
		fmt.Println(err)
		return
	}
	defer flashstock.Destroy(name)

	h, err := flashstock.Open(name, flashstock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	now := time.Now()
	_ = h.ActivityAdd(flashstock.Activity{ID: 1, LimitPerUser: 1, MaxQty: 1,
		StartNs: now.Add(-time.Minute).UnixNano(), EndNs: now.Add(time.Hour).UnixNano()})
	_ = h.SkuAdd(1, 10, 1, 1)

	ctx := context.Background()
	first, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: 42, Qty: 1, RequestID: 4201})
	fmt.Println("first:", err == nil, first.OrderNo > 0)
	_, err = h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: 42, Qty: 1, RequestID: 4201})
	var dup *flashstock.DuplicateError // a retry: the first outcome, nothing taken twice
	if errors.As(err, &dup) {
		fmt.Println("retry:", errors.Is(err, flashstock.ErrDuplicate), dup.First() == nil, dup.OrderNo == first.OrderNo)
	}
	_, err = h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: 43, Qty: 1})
	var fe *flashstock.Error
	if errors.As(err, &fe) {
		fmt.Println("late:", fe.Name, fe.Code, errors.Is(err, flashstock.ErrSoldOut))
	}
	// Output:
	// first: true true
	// retry: true true true
	// late: FLASH_ESOLD_OUT -1 true
}

// One batch on a sku of two units, one order per user: each request has
// its own outcome, and a refusal stops none of the orders after it.
func ExampleHandle_OrderMany() {
	name := fmt.Sprintf("/fs-go-example-many-%d", os.Getpid())
	o := flashstock.DefaultSegOpts()
	o.MaxUsers, o.MaxOrders, o.MaxTokens, o.MaxRequests, o.RingRecords = 64, 256, 64, 64, 64
	if err := flashstock.Create(name, &o); err != nil {
		fmt.Println(err)
		return
	}
	defer flashstock.Destroy(name)

	h, err := flashstock.Open(name, flashstock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	now := time.Now()
	_ = h.ActivityAdd(flashstock.Activity{ID: 1, LimitPerUser: 1, MaxQty: 1,
		StartNs: now.Add(-time.Minute).UnixNano(), EndNs: now.Add(time.Hour).UnixNano()})
	_ = h.SkuAdd(1, 10, 2, 1)

	reqs := []flashstock.OrderReq{
		{ActivityID: 1, SkuID: 10, UserID: 42, Qty: 1, RequestID: 4201},
		{ActivityID: 1, SkuID: 10, UserID: 42, Qty: 1, RequestID: 4202}, // one order per user
		{ActivityID: 1, SkuID: 10, UserID: 43, Qty: 1, RequestID: 4301},
		{ActivityID: 1, SkuID: 10, UserID: 44, Qty: 1, RequestID: 4401}, // two units only
		{ActivityID: 1, SkuID: 10, UserID: 42, Qty: 1, RequestID: 4201}, // a retry
	}
	if _, err := placeBatch(context.Background(), h, reqs, nil); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 42 placed true
	// 42 FLASH_ELIMIT
	// 43 placed true
	// 44 FLASH_ESOLD_OUT
	// 42 retry, first outcome FLASH_OK
}

// placeBatch places a batch and prints each order's outcome; the README's
// batch snippet is its body (readme_test.go).
func placeBatch(ctx context.Context, h *flashstock.Handle, reqs []flashstock.OrderReq,
	out []flashstock.Outcome) ([]flashstock.Outcome, error) {
	// README batch begin
	out, err := h.OrderMany(ctx, reqs, out[:0]) // out kept from batch to batch: no allocation
	if err != nil {
		return out, err // the handle's (ErrClosed, ErrReadOnly, ctx's): nothing placed
	}
	for i, o := range out {
		var dup *flashstock.DuplicateError
		var fe *flashstock.Error
		switch {
		case o.Err == nil:
			fmt.Println(reqs[i].UserID, "placed", o.OrderNo > 0)
		case errors.As(o.Err, &dup): // a retry: dup.FirstRC, dup.OrderNo give the first outcome
			fmt.Println(reqs[i].UserID, "retry, first outcome", flashstock.RCName(int(dup.FirstRC)))
		case errors.As(o.Err, &fe): // sold out, limit, ...: the orders after it ran all the same
			fmt.Println(reqs[i].UserID, fe.Name)
		}
	}
	return out, nil
	// README batch end
}

// Three reservations of one unit each, on a sku of three: the one paid in
// time is ACTIVE; the one paid too late is expired by the payment itself,
// its unit back; the one never paid is expired by ExpireDue (no daemon
// here: `flashstock serve` would expire it at its deadline).
func ExampleHandle_Confirm() {
	name := fmt.Sprintf("/fs-go-example-confirm-%d", os.Getpid())
	o := flashstock.DefaultSegOpts()
	o.MaxUsers, o.MaxOrders, o.MaxTokens, o.MaxRequests, o.RingRecords = 64, 256, 64, 64, 64
	if err := flashstock.Create(name, &o); err != nil {
		fmt.Println(err)
		return
	}
	defer flashstock.Destroy(name)

	h, err := flashstock.Open(name, flashstock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	now := time.Now()
	_ = h.ActivityAdd(flashstock.Activity{ID: 1, LimitPerUser: 1, MaxQty: 1,
		StartNs: now.Add(-time.Minute).UnixNano(), EndNs: now.Add(time.Hour).UnixNano()})
	_ = h.SkuAdd(1, 10, 3, 1)

	ctx := context.Background()
	reserve := func(user uint64, ms uint32) uint64 {
		r, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: user, Qty: 1, ReserveMs: ms})
		if err != nil {
			fmt.Println(err)
		}
		return r.OrderNo
	}
	paid := reserve(51, 15*60*1000) // 15 minutes to pay
	late := reserve(52, 30)
	reserve(53, 30)
	time.Sleep(50 * time.Millisecond)
	pay(ctx, h, paid)
	pay(ctx, h, late)
	n, err := h.ExpireDue(ctx, 0)
	s, _ := h.SkuGet(1, 10)
	fmt.Println("expired by ExpireDue:", n, err, "available:", s.Available)
	// Output:
	// paid: ACTIVE
	// not paid in time: expired, its units back
	// expired by ExpireDue: 1 <nil> available: 2
}

// pay confirms a reservation and prints the outcome; the README's
// reservation snippet is its body (readme_test.go).
func pay(ctx context.Context, h *flashstock.Handle, orderNo uint64) {
	// README reserve begin
	err := h.Confirm(ctx, orderNo) // nil again for a retried payment callback
	switch {
	case err == nil:
		fmt.Println("paid: ACTIVE")
	case errors.Is(err, flashstock.ErrExpired): // too late: expired by this call if nobody had
		fmt.Println("not paid in time: expired, its units back")
	default: // ErrCancelled, ErrNotFound, ErrFateUnknown (sync: paid, not yet durable), ...
		fmt.Println("confirm:", err)
	}
	// README reserve end
}

// Versioned terms: a page shows the price and the versions of the terms
// (ActivityGet, SkuGet), and the order names them.  A buyer on a page made
// before the shop repriced is refused ErrStale, nothing taken, and orders
// again from the new page.
func ExampleHandle_SkuPriceSet() {
	name := fmt.Sprintf("/fs-go-example-terms-%d", os.Getpid())
	o := flashstock.DefaultSegOpts()
	o.MaxUsers, o.MaxOrders, o.MaxTokens, o.MaxRequests, o.RingRecords = 64, 256, 64, 64, 64
	if err := flashstock.Create(name, &o); err != nil {
		fmt.Println(err)
		return
	}
	defer flashstock.Destroy(name)

	h, err := flashstock.Open(name, flashstock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	now := time.Now()
	_ = h.ActivityAdd(flashstock.Activity{ID: 1, LimitPerUser: 1, MaxQty: 1,
		StartNs: now.Add(-time.Minute).UnixNano(), EndNs: now.Add(time.Hour).UnixNano()})
	_ = h.SkuAdd(1, 10, 3, 1)
	_, _ = h.SkuPriceSet(1, 10, 1000)

	ctx := context.Background()
	act, _ := h.ActivityGet(1) // the page: the terms and their versions
	sku, _ := h.SkuGet(1, 10)
	buy(ctx, h, 61, act, sku)
	_, _ = h.SkuPriceSet(1, 10, 1500) // repriced while buyer 62 looks at the old page
	buy(ctx, h, 62, act, sku)
	sku, _ = h.SkuGet(1, 10) // the new page
	buy(ctx, h, 62, act, sku)
	s, _ := h.SkuGet(1, 10)
	fmt.Println("available:", s.Available)
	// Output:
	// ordered at price 1000
	// terms changed, new price: 1500
	// ordered at price 1500
	// available: 1
}

// buy orders one unit at the terms a page showed (act and sku as
// ActivityGet and SkuGet read them for it) and prints the outcome; the
// README's versioned terms snippet is its body (readme_test.go).
func buy(ctx context.Context, h *flashstock.Handle, user uint64, act flashstock.Activity, sku flashstock.SkuInfo) {
	// README terms begin
	_, err := h.Order(ctx, flashstock.OrderReq{ActivityID: act.ID, SkuID: sku.SkuID, UserID: user, Qty: 1,
		ActivityVersion: act.Version, SkuVersion: sku.Version}) // the versions the page showed
	switch {
	case err == nil:
		fmt.Println("ordered at price", sku.Price)
	case errors.Is(err, flashstock.ErrStale): // the terms changed: nothing taken
		now, _ := h.SkuGet(act.ID, sku.SkuID)
		fmt.Println("terms changed, new price:", now.Price) // show them; the buyer orders again
	default: // ErrSoldOut, ErrLimit, ...
		fmt.Println("order:", err)
	}
	// README terms end
}

// Carts: two skus of one activity in one order, all or nothing.  A cart
// that fits takes every line's units under one number and one limit slot;
// one whose line is short takes nothing and names the short lines.
func ExampleHandle_CartOrder() {
	name := fmt.Sprintf("/fs-go-example-cart-%d", os.Getpid())
	o := flashstock.DefaultSegOpts()
	o.MaxUsers, o.MaxOrders, o.MaxTokens, o.MaxRequests, o.RingRecords = 64, 256, 64, 64, 64
	if err := flashstock.Create(name, &o); err != nil {
		fmt.Println(err)
		return
	}
	defer flashstock.Destroy(name)

	h, err := flashstock.Open(name, flashstock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	now := time.Now()
	_ = h.ActivityAdd(flashstock.Activity{ID: 1, LimitPerUser: 1, MaxQty: 3,
		StartNs: now.Add(-time.Minute).UnixNano(), EndNs: now.Add(time.Hour).UnixNano()})
	_ = h.SkuAdd(1, 10, 5, 1)
	_ = h.SkuAdd(1, 11, 2, 1)

	ctx := context.Background()
	lines := []flashstock.CartLine{{SkuID: 10, Qty: 1}, {SkuID: 11, Qty: 2}}
	checkout(ctx, h, 71, lines)
	checkout(ctx, h, 72, lines)
	// Output:
	// placed, limit slot 1: sku 10 x1, sku 11 x2
	// nothing taken: short lines [1]
}

// checkout places one cart and prints the outcome; the README's carts
// snippet is its body (readme_test.go).
func checkout(ctx context.Context, h *flashstock.Handle, user uint64, lines []flashstock.CartLine) {
	// README cart begin
	r, err := h.CartOrder(ctx, flashstock.CartReq{ActivityID: 1, UserID: user, Lines: lines})
	var ce *flashstock.CartError
	switch {
	case err == nil:
		ls, _ := h.OrderLines(r.OrderNo) // the cart whole: one OrderInfo per line
		fmt.Printf("placed, limit slot %d: sku %d x%d, sku %d x%d\n", r.LimitSlot, ls[0].SkuID, ls[0].Qty, ls[1].SkuID, ls[1].Qty)
	case errors.As(err, &ce) && errors.Is(err, flashstock.ErrSoldOut): // one line short: nothing taken
		fmt.Println("nothing taken: short lines", ce.SoldOut)
	default: // ErrLimit, ErrInval (a ScopeSku activity), a *CartError of another line, ...
		fmt.Println("cart:", err)
	}
	// README cart end
}
