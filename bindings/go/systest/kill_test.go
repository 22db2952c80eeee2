// kill_test.go -- Go buyer processes (internal/buyer) on one hot sku, killed
// with SIGKILL at random moments and restarted; then a private `flashstock
// serve` drains everything into a WAL, and the invariants are checked from
// the records: reconcile agrees, every order a buyer logged as
// acknowledged is an order of the WAL, no user holds more than the limit,
// nothing is oversold.
//
// Buyer 0 runs --hot: one goroutine on a Pinned handle that never pauses
// (users 1..30, no request ids, no cancels), so that its kills land inside
// operations, which recovery rolls back or forward.  The others order
// through a Handle with request ids, pauses and cancels (users 31..150).
// Every buyer runs --batch 16: half of its calls are batches of 2..16
// orders (OrderMany), so that kills land inside batches too, and an order
// of a batch counts as acknowledged only once the batch returned it placed.
//
// Two more buyers run --reserve, killed and restarted with the others:
// reservations paid, cancelled or left to expire, cart reservations and
// plain carts over skus 1, 2, 3, on a segment of their own with a WAL of
// its own (checkReservations), since `flashstock
// reconcile` stops at the first CONFIRM or EXPIRE record ("frame of an
// unknown type") and the orders' segment keeps its reconcile check.
package systest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"flashstock/go/flashstock"
)

func TestKilledGoBuyersNeverOversellLoseAnAckOrPassTheLimit(t *testing.T) {
	const (
		units   = 120
		limit   = 2
		users   = 150 // demand: every user wants 2 at a time, 300 for 120 units
		hotters = 30  // users 1..30 are buyer 0's (at most 60 units), 31..150 the others'

		buyers    = 4
		reservers = 2 // buyers buyers..buyers+reservers-1 run --reserve on rseg
		rUnits    = 400
		runFor    = 20 * time.Second
		maxKill   = 40
	)
	seg := newSeg(t, "kill")
	run(t, "load", "--name", seg, "--activity", "1", "--limit", fmt.Sprint(limit),
		"--cancel-returns-quota", "--sku", "1", "--units", fmt.Sprint(units), "--shards", "4")
	rseg := newSeg(t, "killr")
	run(t, "load", "--name", rseg, "--activity", "1", "--limit", fmt.Sprint(limit), "--max-qty", "2",
		"--cancel-returns-quota", "--sku", "1", "--units", fmt.Sprint(rUnits), "--shards", "4",
		"--sku", "2", "--units", fmt.Sprint(rUnits), "--shards", "4",
		"--sku", "3", "--units", fmt.Sprint(rUnits), "--shards", "4")
	dir := t.TempDir()
	buyer := goBin(t, "fsgo-buyer")
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))

	type proc struct {
		cmd  *exec.Cmd
		errb *bytes.Buffer
		exit chan error
	}
	start := func(i, gen int) *proc {
		var errb bytes.Buffer
		args := []string{"--name", seg, "--log", filepath.Join(dir, fmt.Sprintf("acked-%d.log", i)),
			"--seed", fmt.Sprint(rng.Int63()), "--batch", "16"}
		if i == 0 { // always inside a call: its kills land mid-operation
			args = append(args, "--hot", "--users", fmt.Sprint(hotters))
		} else if i >= buyers {
			args[1] = rseg
			args = append(args, "--reserve", "--users", "1000")
		} else {
			args = append(args, "--user-from", fmt.Sprint(hotters+1), "--users", fmt.Sprint(users-hotters))
		}
		cmd := exec.Command(buyer, args...)
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatalf("start buyer %d: %v", i, err)
		}
		p := &proc{cmd: cmd, errb: &errb, exit: make(chan error, 1)}
		go func() { p.exit <- cmd.Wait() }()
		return p
	}
	// killed reports whether a buyer ended by our SIGKILL; any other end
	// (an error the buyer could not take) fails the test
	killed := func(i int, p *proc) {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		err := <-p.exit
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("buyer %d ended by itself (%v): %s", i, err, p.errb.String())
		}
	}
	procs := make([]*proc, buyers+reservers)
	for i := range procs {
		procs[i] = start(i, 0)
	}
	kills, rkills := 0, 0
	deadline := time.Now().Add(runFor)
	for time.Now().Before(deadline) && kills+rkills < maxKill {
		time.Sleep(time.Duration(200+rng.Intn(600)) * time.Millisecond)
		i := rng.Intn(buyers + reservers)
		select {
		case err := <-procs[i].exit:
			t.Fatalf("buyer %d ended by itself (%v): %s", i, err, procs[i].errb.String())
		default:
		}
		killed(i, procs[i])
		if i < buyers {
			kills++
		} else {
			rkills++
		}
		procs[i] = start(i, kills+rkills)
	}
	for i, p := range procs {
		killed(i, p)
		if i >= buyers {
			rkills++
		}
	}

	// recover what the last kills left in flight (flash_open runs recovery),
	// then let a private daemon drain every ring into a WAL
	h, err := flashstock.Open(seg, flashstock.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Recover(); err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(dir, "wal")
	var serveErr bytes.Buffer
	serve := exec.Command(cli(t), "serve", "--name", seg, "--wal", wal, "--no-snapshot",
		"--reconcile-every", "0")
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- serve.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		q, err := h.Quiet()
		if err != nil {
			t.Fatal(err)
		}
		if q.Pending == 0 && q.InFlight == 0 && q.Consumed > 0 {
			break
		}
		select {
		case err := <-serveDone:
			t.Fatalf("serve ended early: %v\n%s", err, serveErr.String())
		case <-ctx.Done():
			t.Fatalf("the daemon did not drain the rings: %+v\n%s", q, serveErr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = serve.Process.Signal(syscall.SIGTERM)
	if err := <-serveDone; err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, serveErr.String())
	}

	// 1. reconcile: available + sold = total, sold = units of active
	//    orders, in the segment and in the WAL, and they agree
	if out, err := exec.Command(cli(t), "reconcile", "--name", seg, "--wal", wal).CombinedOutput(); err != nil {
		t.Errorf("flashstock reconcile --name %s --wal %s: %v\n%s", seg, wal, err, out)
	}
	// 2. every acknowledged order is an order of the WAL
	orders, cancels := walDump(t, wal)
	acked, ackedBatch := 0, 0
	for i := 0; i < buyers; i++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("acked-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// "NO", or "NO b" for an order a batch placed
			num, rest, _ := strings.Cut(sc.Text(), " ")
			no, err := strconv.ParseUint(num, 10, 64)
			if err != nil || (rest != "" && rest != "b") {
				continue // a line cut by the kill: the order was not yet acknowledged to anyone
			}
			acked++
			if rest == "b" {
				ackedBatch++
			}
			if _, ok := orders[no]; !ok {
				t.Errorf("acknowledged order %d (buyer %d) is not in the WAL", no, i)
			}
		}
		f.Close()
	}
	// 3. no user over the limit; 4. nothing oversold
	active := map[uint64]int{}
	sold := uint64(0)
	for no, o := range orders {
		if !cancels[no] {
			active[o.user]++
			sold += o.qty
		}
	}
	over := 0
	for u, n := range active {
		if n > limit {
			over++
			t.Errorf("user %d holds %d active orders, limit %d", u, n, limit)
		}
	}
	info, err := h.SkuGet(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kills; %d acknowledged orders logged (%d by batches), %d orders and %d cancels in the WAL; "+
		"sold %d of %d (segment: %d available); %d users over the limit; "+
		"refusals: %d sold out, %d limit; %d dead handles recovered (%d rolled back, %d forward); "+
		"request ids %d of %d",
		kills, acked, ackedBatch, len(orders), len(cancels), sold, info.Total, info.Available, over,
		st.SoldOut, st.LimitHits, st.Recoveries, st.RolledBack, st.RolledForward, st.Requests, st.RequestsCap)
	if acked == 0 || ackedBatch == 0 || acked == ackedBatch || len(cancels) == 0 || st.SoldOut == 0 ||
		st.LimitHits == 0 || st.Recoveries == 0 {
		t.Errorf("the run did not exercise single and batch orders, cancels, sold out, the limit and recovery")
	}
	if sold > units || info.Total != units || sold != info.Total-info.Available {
		t.Errorf("sold %d (WAL), total %d, available %d: oversold or leaked", sold, info.Total, info.Available)
	}
	checkReservations(t, rseg, filepath.Join(dir, "rwal"), dir, buyers, reservers, rkills, limit)
}

// checkReservations: the reservers' segment, once a daemon has drained it
// into a WAL and expired every reservation left due.  No reservation is
// left RESERVED; each is ACTIVE, CANCELLED or EXPIRED; for every sku,
// available + the units of its live lines = total; every cart is whole or
// absent (cartLines) and holds the lines its buyer logged asking for; no user holds more than limit; each outcome
// a reserver logged is the order's state (paid: ACTIVE, cancelled:
// CANCELLED, refused as expired: EXPIRED), and an ACTIVE one it did not
// log paid had its Confirm cut short by one of the rkills kills; the WAL
// has one ORDER per reservation, one CONFIRM per ACTIVE one, one EXPIRE
// per EXPIRED one, one CANCEL per CANCELLED one, nothing else (a cart, one
// per line; a plain cart ACTIVE, its ORDERs only).
func checkReservations(t *testing.T, seg, wal, dir string, from, n, rkills, limit int) {
	t.Helper()
	h, err := flashstock.Open(seg, flashstock.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Recover(); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(cli(t), "serve", "--name", seg, "--wal", wal, "--no-snapshot",
		"--reconcile-every", "0")
	var serveErr bytes.Buffer
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- serve.Wait() }()
	// every deadline (300 ms at most) passes and the daemon's expirer settles it
	var orders []flashstock.OrderInfo
	end := time.Now().Add(30 * time.Second)
	for {
		orders = orders[:0]
		max, err := h.OrdersMax()
		if err != nil {
			t.Fatal(err)
		}
		reserved := 0
		for no := uint64(1); no <= max; no++ {
			o, err := h.OrderGet(no)
			if err != nil {
				t.Fatalf("OrderGet(%d): %v", no, err)
			}
			if o.State == flashstock.OrderReserved {
				reserved++
			}
			orders = append(orders, o)
		}
		q, err := h.Quiet()
		if err != nil {
			t.Fatal(err)
		}
		if reserved == 0 && q.Pending == 0 && q.InFlight == 0 {
			break
		}
		select {
		case err := <-serveDone:
			t.Fatalf("serve ended early: %v\n%s", err, serveErr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(end) {
			t.Fatalf("%d reservations left RESERVED, %+v\n%s", reserved, q, serveErr.String())
		}
	}
	_ = serve.Process.Signal(syscall.SIGTERM)
	if err := <-serveDone; err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, serveErr.String())
	}
	skus := map[uint32]flashstock.SkuInfo{}
	for sku := uint32(1); sku <= 3; sku++ {
		if skus[sku], err = h.SkuGet(1, sku); err != nil {
			t.Fatal(err)
		}
	}
	lines := cartLines(t, h, orders)

	placed := map[uint64]flashstock.OrderInfo{}
	count := map[uint32]int{}
	perUser := map[uint64]int{}
	held := uint64(0)
	for _, o := range orders {
		if o.State == flashstock.OrderNone {
			continue
		}
		placed[o.OrderNo] = o
		count[o.State]++
		switch o.State {
		case flashstock.OrderActive:
			perUser[o.UserID]++
			if o.PayByNs != 0 {
				t.Errorf("order %d: ACTIVE with a pay-by time %d", o.OrderNo, o.PayByNs)
			}
		case flashstock.OrderCancelled:
		case flashstock.OrderExpired:
			if o.PayByNs == 0 {
				t.Errorf("order %d: EXPIRED without its pay-by time", o.OrderNo)
			}
		default:
			t.Errorf("order %d: state %d", o.OrderNo, o.State)
		}
	}
	// every sku: available + the units of its live lines (ACTIVE, RESERVED)
	// = total: no unit lost, none both held and given back, none sold twice
	live := map[uint32]uint64{}
	carts := 0
	for _, ls := range lines {
		if len(ls) > 1 {
			carts++
		}
		for _, l := range ls {
			if l.State == flashstock.OrderActive || l.State == flashstock.OrderReserved {
				live[l.SkuID] += uint64(l.Qty)
				held += uint64(l.Qty)
			}
		}
	}
	total := uint64(0)
	for id, sku := range skus {
		total += sku.Total
		if sku.Available+live[id] != sku.Total {
			t.Errorf("sku %d: available %d + %d units of live lines != total %d", id, sku.Available, live[id], sku.Total)
		}
	}
	for u, k := range perUser {
		if k > limit {
			t.Errorf("user %d holds %d, limit %d", u, k, limit)
		}
	}

	// what the reservers logged, each line right after its call returned
	want := map[string]uint32{"c": flashstock.OrderActive, "k": flashstock.OrderCancelled, "x": flashstock.OrderExpired}
	logged := map[string]map[uint64]bool{"r": {}, "c": {}, "k": {}, "x": {}, "t": {}}
	asked := map[uint64]string{} // cart number -> "SKUxQTY,..." as its buyer asked
	for i := from; i < from+n; i++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("acked-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "L" { // a cart's lines as asked
				no, err := strconv.ParseUint(f[1], 10, 64)
				if err == nil {
					asked[no] = f[2]
				}
				continue
			}
			kind, num, _ := strings.Cut(l, " ")
			no, err := strconv.ParseUint(num, 10, 64)
			if logged[kind] == nil || err != nil {
				continue // a line cut by the kill
			}
			logged[kind][no] = true
			o, ok := placed[no]
			if !ok {
				t.Errorf("logged %s %d: no such order", kind, no)
			} else if st, ok := want[kind]; ok && o.State != st {
				t.Errorf("logged %s %d: state %d, want %d", kind, no, o.State, st)
			}
		}
	}
	// every cart a buyer logged holds the lines it asked for, in its order
	for no, want := range asked {
		var got []string
		for _, l := range lines[no] {
			got = append(got, fmt.Sprintf("%dx%d", l.SkuID, l.Qty))
		}
		if strings.Join(got, ",") != want {
			t.Errorf("cart %d: lines %v, its buyer asked for %s", no, got, want)
		}
	}
	if len(asked) < 10 {
		t.Errorf("only %d carts logged with their lines", len(asked))
	}
	unlogged := 0
	for no, o := range placed {
		if o.State == flashstock.OrderActive && !logged["c"][no] && !logged["t"][no] {
			unlogged++
		}
	}
	if unlogged > rkills {
		t.Errorf("%d ACTIVE reservations not logged paid, after %d kills", unlogged, rkills)
	}

	// the WAL: the record kinds of each reservation, in order
	recs := map[uint64][]string{}
	sc := bufio.NewScanner(strings.NewReader(run(t, "wal", "dump", "--wal", wal)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "order" && f[1] != "cancel" && f[1] != "confirm" && f[1] != "expire") {
			continue
		}
		for _, p := range f[2:] {
			if k, v, ok := strings.Cut(p, "="); ok && (k == "order" || k == "order_no") {
				no, _ := strconv.ParseUint(v, 10, 64)
				recs[no] = append(recs[no], f[1])
			}
		}
	}
	// a cart's: one of each per line, its lines' in a row; a plain cart
	// ACTIVE has its ORDERs only
	ends := map[uint32][]string{flashstock.OrderActive: {"order", "confirm"}, flashstock.OrderExpired: {"order", "expire"},
		flashstock.OrderCancelled: {"order", "cancel"}}
	for no, o := range placed {
		var want []string
		for _, k := range ends[o.State] {
			for i := uint32(0); i < o.Lines; i++ {
				want = append(want, k)
			}
		}
		got := strings.Join(recs[no], " ")
		if got != strings.Join(want, " ") && !(o.Lines > 1 && o.State == flashstock.OrderActive &&
			got == strings.Join(want[:o.Lines], " ")) {
			t.Errorf("order %d (state %d, %d lines): records %q, want %q", no, o.State, o.Lines, got, want)
		}
	}
	if len(recs) != len(placed) {
		t.Errorf("%d orders in the WAL, %d in the segment", len(recs), len(placed))
	}
	t.Logf("reservations: %d placed, %d paid, %d cancelled, %d expired (logged: %d reserved, %d paid, "+
		"%d cancelled, %d refused as expired) after %d kills of reservers; %d carts of 2..3 lines, each whole "+
		"(%d logged plain); held %d of %d units",
		len(placed), count[flashstock.OrderActive], count[flashstock.OrderCancelled], count[flashstock.OrderExpired],
		len(logged["r"]), len(logged["c"]), len(logged["k"]), len(logged["x"]), rkills, carts, len(logged["t"]),
		held, total)
	if len(logged["c"]) < 10 || len(logged["k"]) < 10 || len(logged["x"]) == 0 || count[flashstock.OrderExpired] <= len(logged["x"]) {
		t.Errorf("the run did not exercise payments, cancels, late payments and expiries")
	}
	expiredCart := false
	for no, ls := range lines {
		expiredCart = expiredCart || (len(ls) > 1 && placed[no].State == flashstock.OrderExpired)
	}
	if carts < 10 || len(logged["t"]) < 10 || !expiredCart {
		t.Errorf("the run did not exercise carts: %d placed, %d logged plain, one expired: %v", carts, len(logged["t"]), expiredCart)
	}
}

// cartLines reads every order of orders (OrderGet of 1..OrdersMax) whole,
// each cart by OrderLines, and checks that every cart is whole or absent:
// its number reads as its line 0 with its lines, OrderLines gives each
// line (the cart's number, state, user and limit slot; lines 0..n-1 over
// distinct skus), each later line's number reads OrderNone with that line
// and lines, and no other number reads as a line of a cart.
func cartLines(t *testing.T, h *flashstock.Handle, orders []flashstock.OrderInfo) map[uint64][]flashstock.OrderInfo {
	t.Helper()
	out := map[uint64][]flashstock.OrderInfo{}
	type later struct{ line, lines uint32 }
	owner := map[uint64]later{}
	for _, o := range orders {
		if o.State == flashstock.OrderNone {
			continue
		}
		if o.Line != 0 || o.Lines == 0 {
			t.Errorf("order %d reads as line %d of %d", o.OrderNo, o.Line, o.Lines)
			continue
		}
		ls := []flashstock.OrderInfo{o}
		if o.Lines > 1 {
			var err error
			if ls, err = h.OrderLines(o.OrderNo); err != nil {
				t.Errorf("OrderLines(%d): %v", o.OrderNo, err)
				continue
			}
		}
		skus := map[uint32]bool{}
		for i, l := range ls {
			if l.Line != uint32(i) || l.OrderNo != o.OrderNo || l.State != o.State || l.UserID != o.UserID ||
				l.Lines != o.Lines || l.LimitSlot != o.LimitSlot || skus[l.SkuID] {
				t.Errorf("cart %d, line %d: %+v (line 0: %+v)", o.OrderNo, i, l, o)
			}
			skus[l.SkuID] = true
		}
		if len(ls) != int(o.Lines) {
			t.Errorf("cart %d: %d lines read, %d announced", o.OrderNo, len(ls), o.Lines)
		}
		out[o.OrderNo] = ls
		for i := uint32(1); i < o.Lines; i++ {
			owner[o.OrderNo+uint64(i)] = later{i, o.Lines}
		}
	}
	for _, o := range orders {
		if o.State != flashstock.OrderNone {
			continue
		}
		if want, ok := owner[o.OrderNo]; ok {
			if o.Line != want.line || o.Lines != want.lines {
				t.Errorf("number %d: line %d of %d, want line %d of %d", o.OrderNo, o.Line, o.Lines, want.line, want.lines)
			}
		} else if o.Line != 0 || o.Lines != 0 {
			t.Errorf("number %d: line %d of %d, of no cart", o.OrderNo, o.Line, o.Lines)
		}
	}
	return out
}
