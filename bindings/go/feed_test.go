// feed_test.go -- the Feed object without a daemon (the sale under a real
// serve is systest/feed_test.go): on a WAL directory no writer has
// published, nothing is durable and Next times out; goroutines share one
// Feed safely (go_race runs this too) and Close waits for a Next in
// progress, and an unreachable Feed is closed by its finalizer; a missing
// directory and bad names are refused.
package flashstock

import (
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestFeedOnAWalNothingDurableTimesOutAndGoroutinesShareIt(t *testing.T) {
	wal := t.TempDir()
	f, err := OpenFeed(wal, "idle", &FeedOpts{FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.WalDir() != wal || f.Consumer() != "idle" {
		t.Errorf("WalDir %q Consumer %q", f.WalDir(), f.Consumer())
	}
	if _, err := f.Next(20 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("Next with nothing durable: %v, want ErrTimeout", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				if _, err := f.Next(time.Millisecond); !errors.Is(err, ErrTimeout) && err != ErrClosed {
					errs <- err
				}
				if _, err := f.Info(); err != nil && err != ErrClosed {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a goroutine's call: %v", err)
	}
	// a Next waiting in another goroutine: Close waits for it, then it is closed
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := f.Next(200 * time.Millisecond)
		done <- err
	}()
	<-started
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrTimeout) && err != ErrClosed {
		t.Errorf("the waiting Next: %v", err)
	}
	if err := f.Commit(1); err != ErrClosed {
		t.Errorf("Commit after Close: %v", err)
	}
	list, err := FeedList(wal)
	if err != nil || len(list) != 1 || list[0].Name() != "idle" || list[0].Open != 0 || list[0].CommittedLSN != 0 {
		t.Errorf("FeedList: %+v, %v", list, err)
	}
}

func TestFeedOpenRefusesAMissingDirectoryAndBadNames(t *testing.T) {
	wal := t.TempDir()
	if _, err := OpenFeed(filepath.Join(wal, "none"), "x", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("no such directory: %v, want ErrNotFound", err)
	}
	for _, n := range []string{"", ".hidden", "a/b", string(make([]byte, FeedNameMax+1))} {
		if _, err := OpenFeed(wal, n, nil); !errors.Is(err, ErrInval) {
			t.Errorf("name %q: %v, want ErrInval", n, err)
		}
	}
	if _, err := OpenFeed(wal, "new", &FeedOpts{NoCreate: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("NoCreate of an unknown consumer: %v, want ErrNotFound", err)
	}
	if err := FeedDrop(wal, "new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("drop of an unknown consumer: %v, want ErrNotFound", err)
	}
}

func TestFeedUnreachableIsClosedByItsFinalizerAndFreesTheName(t *testing.T) {
	wal := t.TempDir()
	func() {
		if _, err := OpenFeed(wal, "leaked", nil); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; i < 50; i++ {
		runtime.GC()
		if f, err := OpenFeed(wal, "leaked", nil); err == nil {
			_ = f.Close()
			return
		} else if !errors.Is(err, ErrBusy) {
			t.Fatalf("reopen: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the leaked feed still holds its name after 50 collections")
}
