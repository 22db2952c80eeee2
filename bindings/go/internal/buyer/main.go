// internal/buyer -- the Go kill test's buyer process (systest/kill_test.go):
// goroutines ordering on one hot sku, each acknowledged order number
// appended to the log file right after the call returns OK.  It runs until
// it is killed (the test sends SIGKILL at random moments); any error other
// than a refusal on the order's merits ends it with exit 1.
//
// Two shapes:
//
//	default  --goroutines goroutines on one flashstock.Handle (the worker
//	         pool), each pausing up to --pause-us after a call, with a
//	         request id on every order and now and then a cancel of one of
//	         its own orders
//	--hot    one goroutine on a flashstock.Pinned, no pause, no request
//	         ids, no cancels: nearly always inside a call, so that a kill
//	         lands in the middle of an operation (which recovery must roll
//	         back or forward); it consumes no table entry when refused
//
// usage: fsgo-buyer --name SEG --log FILE [--user-from U] [--users N] [--goroutines G] [--pause-us P]
//
//	[--hot] [--seed S]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"flashstock/go/flashstock"
)

// orderer is what a Handle and a Pinned both offer.
type orderer interface {
	Order(ctx context.Context, req flashstock.OrderReq) (flashstock.Receipt, error)
	Cancel(ctx context.Context, orderNo uint64) (uint32, error)
}

var (
	logMu sync.Mutex
	logF  *os.File
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "fsgo-buyer %d: %s: %v\n", os.Getpid(), what, err)
	os.Exit(1)
}

// acked appends an acknowledged order number to the log, at once.
func acked(no uint64) {
	logMu.Lock()
	_, err := logF.WriteString(strconv.FormatUint(no, 10) + "\n")
	logMu.Unlock()
	if err != nil {
		fail("log", err)
	}
}

// buy orders until the process is killed.
func buy(h orderer, rng *rand.Rand, from, users uint64, pauseUs int, reqBase uint64, reqSeq *uint64, hot bool) {
	var mine []uint64
	ctx := context.Background()
	for {
		req := flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: from + uint64(rng.Int63n(int64(users))), Qty: 1}
		if !hot {
			req.RequestID = reqBase | atomic.AddUint64(reqSeq, 1)
		}
		r, err := h.Order(ctx, req)
		switch {
		case err == nil:
			acked(r.OrderNo)
			mine = append(mine, r.OrderNo)
		case errors.Is(err, flashstock.ErrSoldOut), errors.Is(err, flashstock.ErrLimit):
		default:
			fail("order", err)
		}
		if hot {
			continue
		}
		time.Sleep(time.Duration(rng.Intn(pauseUs+1)) * time.Microsecond)
		if len(mine) > 0 && rng.Intn(8) == 0 { // give one back
			i := rng.Intn(len(mine))
			no := mine[i]
			mine = append(mine[:i], mine[i+1:]...)
			if _, err := h.Cancel(ctx, no); err != nil && !errors.Is(err, flashstock.ErrCancelled) {
				fail("cancel", err)
			}
		}
	}
}

func main() {
	name := flag.String("name", "", "segment name")
	logPath := flag.String("log", "", "file the acknowledged order numbers are appended to")
	from := flag.Uint64("user-from", 1, "first user")
	users := flag.Uint64("users", 200, "users FROM..FROM+N-1 (buyers may share them)")
	gor := flag.Int("goroutines", 2, "ordering goroutines (not with --hot)")
	pauseUs := flag.Int("pause-us", 4000, "each goroutine pauses up to this long after each call (keeps the tables from filling)")
	hot := flag.Bool("hot", false, "one goroutine on a Pinned handle, no pause, no request ids, no cancels")
	seed := flag.Int64("seed", time.Now().UnixNano(), "random seed")
	flag.Parse()
	if *name == "" || *logPath == "" || *users == 0 || *from == 0 {
		fmt.Fprintln(os.Stderr, "usage: fsgo-buyer --name SEG --log FILE [--user-from U] [--users N] [--goroutines G] [--pause-us P] [--hot] [--seed S]")
		os.Exit(2)
	}
	var err error
	if logF, err = os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
		fail("log", err)
	}
	var reqSeq uint64
	reqBase := uint64(os.Getpid()) << 32
	if *hot {
		runtime.LockOSThread()
		p, err := flashstock.OpenPinned(*name, 0)
		if err != nil {
			fail("open", err)
		}
		buy(p, rand.New(rand.NewSource(*seed)), *from, *users, 0, 0, nil, true)
	}
	h, err := flashstock.Open(*name, flashstock.Options{Workers: 2})
	if err != nil {
		fail("open", err)
	}
	for g := 1; g < *gor; g++ {
		go buy(h, rand.New(rand.NewSource(*seed+int64(g))), *from, *users, *pauseUs, reqBase, &reqSeq, false)
	}
	buy(h, rand.New(rand.NewSource(*seed)), *from, *users, *pauseUs, reqBase, &reqSeq, false)
}
