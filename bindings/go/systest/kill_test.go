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

		buyers  = 4
		runFor  = 20 * time.Second
		maxKill = 40
	)
	seg := newSeg(t, "kill")
	run(t, "load", "--name", seg, "--activity", "1", "--limit", fmt.Sprint(limit),
		"--cancel-returns-quota", "--sku", "1", "--units", fmt.Sprint(units), "--shards", "4")
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
	procs := make([]*proc, buyers)
	for i := range procs {
		procs[i] = start(i, 0)
	}
	kills := 0
	deadline := time.Now().Add(runFor)
	for time.Now().Before(deadline) && kills < maxKill {
		time.Sleep(time.Duration(200+rng.Intn(600)) * time.Millisecond)
		i := rng.Intn(buyers)
		select {
		case err := <-procs[i].exit:
			t.Fatalf("buyer %d ended by itself (%v): %s", i, err, procs[i].errb.String())
		default:
		}
		killed(i, procs[i])
		kills++
		procs[i] = start(i, kills)
	}
	for i, p := range procs {
		killed(i, p)
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
}
