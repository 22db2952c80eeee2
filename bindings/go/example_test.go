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
	retry, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: 42, Qty: 1, RequestID: 4201})
	fmt.Println("retry:", errors.Is(err, flashstock.ErrDuplicate), retry.OrderNo == first.OrderNo)
	_, err = h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 10, UserID: 43, Qty: 1})
	var fe *flashstock.Error
	if errors.As(err, &fe) {
		fmt.Println("late:", fe.Name, fe.Code, errors.Is(err, flashstock.ErrSoldOut))
	}
	// Output:
	// first: true true
	// retry: true true
	// late: FLASH_ESOLD_OUT -1 true
}
