// helpers_test.go -- what the binding's tests share: unique segment names,
// a small segment with one activity and sku, and paths given by ctest.
package flashstock

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

var segSeq int64

// segName is unique per process and call: parallel test runs never meet.
func segName() string {
	return fmt.Sprintf("/fs-go-%d-%d", os.Getpid(), atomic.AddInt64(&segSeq, 1))
}

// smallOpts fits every test: rings deep enough that no test fills one
// (nothing drains them), a few thousand orders.
func smallOpts() SegOpts {
	o := DefaultSegOpts()
	o.MaxActivities, o.MaxSkus, o.MaxShards = 8, 32, 64
	o.MaxUsers, o.MaxTokens, o.MaxOrders, o.MaxRequests = 8192, 1024, 16384, 4096
	o.MaxLocks, o.MaxProcs, o.RingRecords = 16, 64, 8192
	return o
}

// newSeg creates a segment with opts and removes it when the test ends.
func newSeg(t *testing.T, o SegOpts) string {
	t.Helper()
	name := segName()
	if err := Create(name, &o); err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = Destroy(name) })
	return name
}

// sale is activity 1 (limit per user lim, open for an hour) with sku 10 of
// units units.
func sale(lim uint32, flags uint32) Activity {
	now := time.Now().UnixNano()
	return Activity{ID: 1, LimitPerUser: lim, MaxQty: 4, Scope: ScopeActivity, Flags: flags,
		StartNs: now - int64(time.Minute), EndNs: now + int64(time.Hour)}
}

// loaded opens a Handle on a new segment holding sale(lim, flags) with sku
// 10 of units units.
func loaded(t *testing.T, o SegOpts, lim, flags uint32, units uint64) (string, *Handle) {
	t.Helper()
	name := newSeg(t, o)
	h, err := Open(name, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if err := h.ActivityAdd(sale(lim, flags)); err != nil {
		t.Fatalf("ActivityAdd: %v", err)
	}
	if err := h.SkuAdd(1, 10, units, 2); err != nil {
		t.Fatalf("SkuAdd: %v", err)
	}
	return name, h
}

// envPath is a path ctest gives the test; a missing one fails the test.
func envPath(t *testing.T, key, fallback string) string {
	t.Helper()
	if v := os.Getenv(key); v != "" {
		return v
	}
	if fallback != "" {
		if _, err := os.Stat(fallback); err == nil {
			return fallback
		}
	}
	t.Fatalf("%s is not set (ctest sets it; see bindings/go/CMakeLists.txt)", key)
	return ""
}
