// internal/buyer -- the Go kill test's buyer process (systest/kill_test.go):
// goroutines ordering on one hot sku through one flashstock.Handle, each
// acknowledged order number appended to the log file right after the call
// returns OK, and now and then a cancel of one of its own orders.  It runs
// until it is killed (the test sends SIGKILL at random moments); any error other than a refusal on the
// order's merits ends it with exit 1.
//
// usage: fsgo-buyer --name SEG --log FILE [--users N] [--goroutines G] [--pause-us P] [--seed S]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"flashstock/go/flashstock"
)

func main() {
	name := flag.String("name", "", "segment name")
	logPath := flag.String("log", "", "file the acknowledged order numbers are appended to")
	users := flag.Uint64("users", 200, "users 1..N, shared by every buyer")
	gor := flag.Int("goroutines", 2, "ordering goroutines")
	pauseUs := flag.Int("pause-us", 4000, "each goroutine pauses up to this long after each call (keeps the tables from filling)")
	seed := flag.Int64("seed", time.Now().UnixNano(), "random seed")
	flag.Parse()
	if *name == "" || *logPath == "" {
		fmt.Fprintln(os.Stderr, "usage: fsgo-buyer --name SEG --log FILE [--users N] [--goroutines G] [--seed S]")
		os.Exit(2)
	}
	log, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsgo-buyer:", err)
		os.Exit(1)
	}
	h, err := flashstock.Open(*name, flashstock.Options{Workers: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsgo-buyer: open:", err)
		os.Exit(1)
	}
	var reqSeq uint64
	base := uint64(os.Getpid()) << 32
	var logMu sync.Mutex
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "fsgo-buyer %d: %s: %v\n", os.Getpid(), what, err)
		os.Exit(1)
	}
	var wg sync.WaitGroup
	for g := 0; g < *gor; g++ {
		wg.Add(1)
		go func(rng *rand.Rand) {
			defer wg.Done()
			var mine []uint64
			ctx := context.Background()
			for {
				user := 1 + uint64(rng.Int63n(int64(*users)))
				req := flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: user, Qty: 1,
					RequestID: base | atomic.AddUint64(&reqSeq, 1)}
				r, err := h.Order(ctx, req)
				switch {
				case err == nil:
					logMu.Lock()
					_, werr := log.WriteString(strconv.FormatUint(r.OrderNo, 10) + "\n")
					logMu.Unlock()
					if werr != nil {
						fail("log", werr)
					}
					mine = append(mine, r.OrderNo)
				case errors.Is(err, flashstock.ErrSoldOut), errors.Is(err, flashstock.ErrLimit):
				default:
					fail("order", err)
				}
				time.Sleep(time.Duration(rng.Intn(*pauseUs+1)) * time.Microsecond)
				if len(mine) > 0 && rng.Intn(8) == 0 { // give one back
					i := rng.Intn(len(mine))
					no := mine[i]
					mine = append(mine[:i], mine[i+1:]...)
					if _, err := h.Cancel(ctx, no); err != nil && !errors.Is(err, flashstock.ErrCancelled) {
						fail("cancel", err)
					}
				}
			}
		}(rand.New(rand.NewSource(*seed + int64(g))))
	}
	wg.Wait()
}
