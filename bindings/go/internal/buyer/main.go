// internal/buyer -- the Go kill test's buyer process (systest/kill_test.go):
// goroutines ordering on one hot sku, each acknowledged order number
// appended to the log file right after the call returns it placed (a line
// "NO", or "NO b" for an order placed by a batch: one write for all of a
// batch's).  It runs until it is killed (the test sends SIGKILL at random
// moments); any error other than a refusal on the order's merits ends it
// with exit 1.
//
// Two shapes:
//
//	default  --goroutines goroutines on one flashstock.Handle (the worker
//	         pool), each pausing up to --pause-us per order after a call,
//	         with a request id on every order and now and then a cancel of
//	         one of its own orders
//	--hot    one goroutine on a flashstock.Pinned, no pause, no request
//	         ids, no cancels: nearly always inside a call, so that a kill
//	         lands in the middle of an operation (which recovery must roll
//	         back or forward); it consumes no table entry when refused
//
// With --batch K (2 or more), each call is, at random, one order (Order)
// or a batch of 2..K orders (OrderMany), half of each: a kill then lands
// inside batches too, between one order's commit point and the next.
//
// With --reserve, --goroutines goroutines on one Handle place reservations
// (one unit, 20 to 300 ms to pay) instead, and pay (Confirm) some, cancel
// some and leave the rest to expire, at once or up to 400 ms later, so some
// payments come too late; now and then ExpireDue expires what is due, as a
// process without a daemon must.  Each outcome is logged right after its
// call returns: "r NO" reserved, "c NO" paid, "k NO" cancelled, "x NO"
// refused as expired (ErrExpired).  A third of those turns reserve one unit
// of sku 1, a third a cart of 2..3 lines over skus 1, 2, 3 (1..2 units
// each, CartOrder with ReserveMs), settled by its number alike, and a
// third place a plain cart, ACTIVE at once ("t NO"), a third of those
// cancelled at once ("k NO").  A cart's first line comes with "L NO
// SKUxQTY,...", its lines as asked, in the same write.
//
// usage: fsgo-buyer --name SEG --log FILE [--user-from U] [--users N] [--goroutines G] [--pause-us P]
//
//	[--hot] [--batch K] [--reserve] [--seed S]
package main

import (
	"container/heap"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"flashstock/go/flashstock"
)

// orderer is what a Handle and a Pinned both offer.
type orderer interface {
	Order(ctx context.Context, req flashstock.OrderReq) (flashstock.Receipt, error)
	OrderMany(ctx context.Context, reqs []flashstock.OrderReq, out []flashstock.Outcome) ([]flashstock.Outcome, error)
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

// acked appends acknowledged order numbers to the log, at once, in one
// write: "NO" lines, "NO b" when a batch placed them.
func acked(nos []uint64, batch bool) {
	var b strings.Builder
	for _, no := range nos {
		b.WriteString(strconv.FormatUint(no, 10))
		if batch {
			b.WriteString(" b")
		}
		b.WriteByte('\n')
	}
	logMu.Lock()
	_, err := logF.WriteString(b.String())
	logMu.Unlock()
	if err != nil {
		fail("log", err)
	}
}

// refusal says whether err is a refusal on the order's merits.
func refusal(err error) bool {
	return errors.Is(err, flashstock.ErrSoldOut) || errors.Is(err, flashstock.ErrLimit)
}

// buy orders until the process is killed: one order at a time, or with
// batch 2 or more, a batch of 2..batch orders every other call on average.
func buy(h orderer, rng *rand.Rand, from, users uint64, pauseUs, batch int, reqBase uint64, reqSeq *uint64, hot bool) {
	var mine, placed []uint64
	var reqs []flashstock.OrderReq
	var outs []flashstock.Outcome
	ctx := context.Background()
	for {
		n := 1
		if batch > 1 && rng.Intn(2) == 0 {
			n = 2 + rng.Intn(batch-1)
		}
		reqs = reqs[:0]
		for i := 0; i < n; i++ {
			req := flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: from + uint64(rng.Int63n(int64(users))), Qty: 1}
			if !hot {
				req.RequestID = reqBase | atomic.AddUint64(reqSeq, 1)
			}
			reqs = append(reqs, req)
		}
		placed = placed[:0]
		if n == 1 {
			r, err := h.Order(ctx, reqs[0])
			if err == nil {
				placed = append(placed, r.OrderNo)
			} else if !refusal(err) {
				fail("order", err)
			}
		} else {
			var err error
			if outs, err = h.OrderMany(ctx, reqs, outs[:0]); err != nil {
				fail("batch", err)
			}
			for _, o := range outs {
				if o.Err == nil {
					placed = append(placed, o.OrderNo)
				} else if !refusal(o.Err) {
					fail("order in a batch", o.Err)
				}
			}
		}
		if len(placed) > 0 {
			acked(placed, n > 1)
			mine = append(mine, placed...)
		}
		if hot {
			continue
		}
		time.Sleep(time.Duration(rng.Intn(n*pauseUs+1)) * time.Microsecond)
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

// logLine appends one line to the log (and more, each starting with "\n"),
// in one write.
func logLine(kind string, no uint64, more ...string) {
	logMu.Lock()
	_, err := logF.WriteString(kind + " " + strconv.FormatUint(no, 10) + strings.Join(more, "") + "\n")
	logMu.Unlock()
	if err != nil {
		fail("log", err)
	}
}

// due is a reservation to settle at a time: a heap by that time.
type due struct {
	at time.Time
	no uint64
}
type dueHeap []due

func (d dueHeap) Len() int           { return len(d) }
func (d dueHeap) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d dueHeap) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *dueHeap) Push(x any)        { *d = append(*d, x.(due)) }
func (d *dueHeap) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// reserve places reservations until the process is killed, settling each
// at once or later (--reserve).
func reserve(h *flashstock.Handle, rng *rand.Rand, from, users uint64, pauseUs int) {
	ctx := context.Background()
	var later dueHeap
	for n := 1; ; n++ {
		time.Sleep(time.Duration(rng.Intn(pauseUs+1)) * time.Microsecond)
		if n%50 == 0 {
			if _, err := h.ExpireDue(ctx, 0); err != nil {
				fail("expire due", err)
			}
		}
		if later.Len() > 0 && !later[0].at.After(time.Now()) {
			settle(ctx, h, rng, heap.Pop(&later).(due).no)
			continue
		}
		user := from + uint64(rng.Int63n(int64(users)))
		ms := uint32(20 + rng.Intn(281))
		kind := rng.Intn(3)
		var r flashstock.Receipt
		var err error
		var cartLines []flashstock.CartLine
		if kind == 0 {
			r, err = h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, Qty: 1, UserID: user, ReserveMs: ms})
		} else {
			req := flashstock.CartReq{ActivityID: 1, UserID: user}
			if kind == 1 {
				req.ReserveMs = ms
			}
			for _, i := range rng.Perm(3)[:2+rng.Intn(2)] {
				req.Lines = append(req.Lines, flashstock.CartLine{SkuID: uint32(1 + i), Qty: uint32(1 + rng.Intn(2))})
			}
			r, err = h.CartOrder(ctx, req)
			cartLines = req.Lines
		}
		if errors.Is(err, flashstock.ErrBusy) { // a cart's records found the ring full: nothing taken
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			if !refusal(err) {
				fail("reserve", err)
			}
			continue
		}
		asked := ""
		if kind != 0 { // the cart's lines as asked, in the write of its first note
			var b strings.Builder
			for i, l := range cartLines {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%dx%d", l.SkuID, l.Qty)
			}
			asked = "\nL " + strconv.FormatUint(r.OrderNo, 10) + " " + b.String()
		}
		if kind == 2 { // a plain cart: ACTIVE at once; some given back
			logLine("t", r.OrderNo, asked)
			if rng.Intn(3) == 0 {
				if _, err := h.Cancel(ctx, r.OrderNo); err != nil {
					fail("cancel a cart", err)
				}
				logLine("k", r.OrderNo)
			}
			continue
		}
		logLine("r", r.OrderNo, asked)
		if rng.Intn(2) == 0 {
			settle(ctx, h, rng, r.OrderNo)
		} else {
			heap.Push(&later, due{time.Now().Add(time.Duration(rng.Intn(400)) * time.Millisecond), r.OrderNo})
		}
	}
}

// settle pays (confirms) reservation no, cancels it, or leaves it to expire.
func settle(ctx context.Context, h *flashstock.Handle, rng *rand.Rand, no uint64) {
	x := rng.Intn(10)
	if x < 2 {
		return // never paid: it expires
	}
	var err error
	kind := "c"
	if x < 7 {
		err = h.Confirm(ctx, no)
	} else {
		kind = "k"
		_, err = h.Cancel(ctx, no)
	}
	switch {
	case err == nil:
		logLine(kind, no)
	case errors.Is(err, flashstock.ErrExpired):
		logLine("x", no)
	default:
		fail("settle", err)
	}
}

func main() {
	name := flag.String("name", "", "segment name")
	logPath := flag.String("log", "", "file the acknowledged order numbers are appended to")
	from := flag.Uint64("user-from", 1, "first user")
	users := flag.Uint64("users", 200, "users FROM..FROM+N-1 (buyers may share them)")
	gor := flag.Int("goroutines", 2, "ordering goroutines (not with --hot)")
	pauseUs := flag.Int("pause-us", 4000, "each goroutine pauses up to this long per order after each call (keeps the tables from filling)")
	batch := flag.Int("batch", 1, "1: single orders; K >= 2: half of the calls a batch of 2..K orders (OrderMany)")
	hot := flag.Bool("hot", false, "one goroutine on a Pinned handle, no pause, no request ids, no cancels")
	resv := flag.Bool("reserve", false, "reservations, paid, cancelled or left to expire (not with --hot)")
	seed := flag.Int64("seed", time.Now().UnixNano(), "random seed")
	flag.Parse()
	if *name == "" || *logPath == "" || *users == 0 || *from == 0 || *batch < 1 {
		fmt.Fprintln(os.Stderr, "usage: fsgo-buyer --name SEG --log FILE [--user-from U] [--users N] [--goroutines G] [--pause-us P] [--hot] [--batch K] [--reserve] [--seed S]")
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
		p, err := flashstock.OpenPinned(*name, flashstock.Options{})
		if err != nil {
			fail("open", err)
		}
		buy(p, rand.New(rand.NewSource(*seed)), *from, *users, 0, *batch, 0, nil, true)
	}
	h, err := flashstock.Open(*name, flashstock.Options{Workers: 2})
	if err != nil {
		fail("open", err)
	}
	if *resv {
		for g := 1; g < *gor; g++ {
			go reserve(h, rand.New(rand.NewSource(*seed+int64(g))), *from, *users, *pauseUs)
		}
		reserve(h, rand.New(rand.NewSource(*seed)), *from, *users, *pauseUs)
	}
	for g := 1; g < *gor; g++ {
		go buy(h, rand.New(rand.NewSource(*seed+int64(g))), *from, *users, *pauseUs, *batch, reqBase, &reqSeq, false)
	}
	buy(h, rand.New(rand.NewSource(*seed)), *from, *users, *pauseUs, *batch, reqBase, &reqSeq, false)
}
