// sync_test.go -- sync durability through the binding with a real daemon:
// without one, a context's deadline ends an order's wait with
// ErrFateUnknown (the order placed), and a batch's one wait (OrderMany)
// likewise for each of its placed orders; once `flashstock serve` runs,
// DurableWait learns that they are durable, a new order and new batches
// return only when their records are on disk, and every placed order is in
// the WAL.
package systest

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"flashstock/go/flashstock"
)

func TestSyncOrderFateUnknownWithoutDaemonThenDurableWithIt(t *testing.T) {
	seg := newSeg(t, "sync", "--durability", "sync")
	run(t, "load", "--name", seg, "--activity", "1", "--sku", "1", "--units", "10")
	h, err := flashstock.Open(seg, flashstock.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	r1, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: 1, Qty: 1, RequestID: 11})
	cancel()
	if !errors.Is(err, flashstock.ErrFateUnknown) || !errors.Is(err, context.DeadlineExceeded) || r1.OrderNo == 0 {
		t.Fatalf("sync order without a daemon: %+v, %v", r1, err)
	}
	// a batch without a daemon: its placed orders alike, its refusal as is
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	b1, err := h.OrderMany(ctx, []flashstock.OrderReq{
		{ActivityID: 1, SkuID: 1, UserID: 3, Qty: 1, RequestID: 31},
		{ActivityID: 1, SkuID: 1, UserID: 3, Qty: 1, RequestID: 32}, // the limit (1)
		{ActivityID: 1, SkuID: 1, UserID: 4, Qty: 1, RequestID: 41},
	}, nil)
	cancel()
	if err != nil || len(b1) != 3 || !errors.Is(b1[1].Err, flashstock.ErrLimit) {
		t.Fatalf("sync batch without a daemon: %+v, %v", b1, err)
	}
	for _, o := range []flashstock.Outcome{b1[0], b1[2]} {
		if !errors.Is(o.Err, flashstock.ErrFateUnknown) || !errors.Is(o.Err, context.DeadlineExceeded) || o.OrderNo == 0 {
			t.Fatalf("sync batch without a daemon: a placed order %+v", o)
		}
	}

	wal := filepath.Join(t.TempDir(), "wal")
	var serveErr bytes.Buffer
	serve := exec.Command(cli(t), "serve", "--name", seg, "--wal", wal, "--no-snapshot", "--reconcile-every", "0")
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	served := true
	defer func() {
		if served {
			_ = serve.Process.Kill()
			_ = serve.Wait()
		}
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range []flashstock.Receipt{r1, b1[0].Receipt, b1[2].Receipt} {
		if err := h.DurableWait(ctx, r); err != nil {
			t.Fatalf("DurableWait for order %d with the daemon running: %v\n%s", r.OrderNo, err, serveErr.String())
		}
	}
	r2, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: 2, Qty: 1, RequestID: 12})
	if err != nil {
		t.Fatalf("sync order with the daemon running: %v\n%s", err, serveErr.String())
	}
	// the retry of the first request: its first outcome, no second order
	d, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: 1, Qty: 1, RequestID: 11})
	if !errors.Is(err, flashstock.ErrDuplicate) || d.OrderNo != r1.OrderNo {
		t.Errorf("retry of request 11: %+v, %v", d, err)
	}
	// batches with the daemon running, under ctx's deadline and under a
	// cancellable context without one (its wait sliced): every placed
	// order acknowledged (durable), refusals as one by one
	placed := []uint64{r1.OrderNo, r2.OrderNo, b1[0].OrderNo, b1[2].OrderNo}
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	for i, bctx := range []context.Context{ctx, cctx} {
		u := uint64(10 + 10*i)
		out, err := h.OrderMany(bctx, []flashstock.OrderReq{
			{ActivityID: 1, SkuID: 1, UserID: u + 1, Qty: 1, RequestID: 100*u + 1},
			{ActivityID: 1, SkuID: 1, UserID: 1, Qty: 1, RequestID: 11}, // r1's request again
			{ActivityID: 1, SkuID: 1, UserID: u + 1, Qty: 1, RequestID: 100*u + 2},
			{ActivityID: 1, SkuID: 1, UserID: u + 2, Qty: 1, RequestID: 100*u + 3},
		}, nil)
		if err != nil || len(out) != 4 {
			t.Fatalf("sync batch %d with the daemon running: %d outcomes, %v", i, len(out), err)
		}
		if out[0].Err != nil || out[3].Err != nil || out[0].OrderNo == 0 || out[3].OrderNo == 0 {
			t.Errorf("sync batch %d: placed orders %+v, %+v; want acknowledged\n%s", i, out[0], out[3], serveErr.String())
		}
		if !errors.Is(out[1].Err, flashstock.ErrDuplicate) || out[1].OrderNo != r1.OrderNo || out[1].FirstRC != 0 {
			t.Errorf("sync batch %d: retry of request 11: %+v", i, out[1])
		}
		if !errors.Is(out[2].Err, flashstock.ErrLimit) {
			t.Errorf("sync batch %d: a user's second order: %+v, want ErrLimit", i, out[2])
		}
		placed = append(placed, out[0].OrderNo, out[3].OrderNo)
	}
	_ = serve.Process.Signal(syscall.SIGTERM)
	err = serve.Wait()
	served = false
	if err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, serveErr.String())
	}
	orders, _ := walDump(t, wal)
	for _, no := range placed {
		if _, ok := orders[no]; !ok {
			t.Errorf("order %d is not in the WAL", no)
		}
	}
	if len(orders) != len(placed) {
		t.Errorf("%d orders in the WAL, want %d", len(orders), len(placed))
	}
	if out, err := exec.Command(cli(t), "reconcile", "--name", seg, "--wal", wal).CombinedOutput(); err != nil {
		t.Errorf("reconcile: %v\n%s", err, out)
	}
}
