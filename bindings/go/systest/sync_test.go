// sync_test.go -- sync durability through the binding with a real daemon:
// without one, a context's deadline ends an order's wait with
// ErrFateUnknown (the order placed); once `flashstock serve` runs,
// DurableWait learns that it is durable, a new order returns only when its
// record is on disk, and both are in the WAL.
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
	if err := h.DurableWait(ctx, r1); err != nil {
		t.Fatalf("DurableWait with the daemon running: %v\n%s", err, serveErr.String())
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
	_ = serve.Process.Signal(syscall.SIGTERM)
	err = serve.Wait()
	served = false
	if err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, serveErr.String())
	}
	orders, _ := walDump(t, wal)
	for _, no := range []uint64{r1.OrderNo, r2.OrderNo} {
		if _, ok := orders[no]; !ok {
			t.Errorf("order %d is not in the WAL", no)
		}
	}
	if len(orders) != 2 {
		t.Errorf("%d orders in the WAL, want 2", len(orders))
	}
	if out, err := exec.Command(cli(t), "reconcile", "--name", seg, "--wal", wal).CombinedOutput(); err != nil {
		t.Errorf("reconcile: %v\n%s", err, out)
	}
}
