// bench_test.go -- `go test -bench .` in bindings/go: one order per
// iteration through a Pinned handle (one cgo call) and through a Handle
// (a hand-off to a worker's OS thread and back); the difference is the
// hand-off.  ctest runs no benchmark (bench/ is the measured program).
package flashstock

import (
	"context"
	"runtime"
	"testing"
)

func benchSeg(b *testing.B) string {
	o := smallOpts()
	o.MaxUsers, o.MaxOrders = uint32(b.N)+64, uint32(b.N)+1024
	o.RingRecords = RingMin
	for o.RingRecords < uint32(b.N)+64 {
		o.RingRecords <<= 1
	}
	o.MaxProcs = 4
	name := segName()
	if err := Create(name, &o); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = Destroy(name) })
	p, err := OpenPinned(name, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.ActivityAdd(sale(1, 0)); err != nil {
		b.Fatal(err)
	}
	if err := p.SkuAdd(1, 10, uint64(b.N)+1, 1); err != nil {
		b.Fatal(err)
	}
	return name
}

func BenchmarkOrderPinned(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := OpenPinned(benchSeg(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: uint64(i + 1), Qty: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOrderHandle(b *testing.B) {
	h, err := Open(benchSeg(b), Options{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.Order(ctx, OrderReq{ActivityID: 1, SkuID: 10, UserID: uint64(i + 1), Qty: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
