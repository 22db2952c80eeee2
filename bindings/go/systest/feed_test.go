// feed_test.go -- the order feed through the binding on a real sale: a
// private `flashstock serve` writes the WAL of a segment the test's buyers
// order on.  The feed hands out every acknowledged order once with every
// field and its LSN, in LSN order, then times out; a commit holds across a
// reopen and rewind re-reads from it; a consumer killed with SIGKILL (or
// closed without a commit) resumes after its last commit; one open per
// consumer name, across processes too (ErrBusy); list and drop; a consumer
// left behind past serve's retention bound is lost (ErrLost, never a skip);
// a price set is a RecPrice and new terms a RecActivity with Flags 1, each
// with its version.
package systest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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

// fulfil is the README's feed loop ("Consuming orders"; readme_test.go
// checks that the README shows its marked region): it ships each order
// record and commits it, until stopped() says so.
func fulfil(walDir string, ship func(orderNo, user uint64, sku, qty uint32), stopped func() bool) error {
	// README feed begin
	f, err := flashstock.OpenFeed(walDir, "fulfilment", nil) // nil: a new consumer starts at the durable end
	if err != nil {
		return err // ErrBusy: open elsewhere (one open per name over all processes)
	}
	defer f.Close() // no implicit commit
	for !stopped() {
		r, err := f.Next(100 * time.Millisecond) // wait at most 100 ms for a durable record
		if errors.Is(err, flashstock.ErrTimeout) {
			continue // idle
		}
		if err != nil {
			return err // ErrLost, ErrAhead, ErrFeedIdent, ErrRefill, ErrCorrupt, ...
		}
		// a reservation (Value: its pay-by time) is not paid yet: it ships on its RecConfirm
		if (r.Rec.Type == flashstock.RecOrder && r.Rec.Value == 0) || r.Rec.Type == flashstock.RecConfirm {
			ship(r.Rec.OrderNo, r.Rec.UserID, r.Rec.SkuID, r.Rec.Qty)
		}
		if err := f.Commit(r.LSN); err != nil { // durable when it returns; or after a batch
			return err
		}
	}
	return nil
	// README feed end
}

// feedSale is a segment with activity 1 / sku 1, a running serve writing
// wal, and a Handle; serve is stopped with SIGTERM (exit 0) at the end.
type feedSale struct {
	seg, wal string
	h        *flashstock.Handle
}

func newFeedSale(t *testing.T) *feedSale {
	t.Helper()
	return newFeedSaleWith(t, "1000", nil, "--no-snapshot")
}

// newFeedSaleWith is newFeedSale with units units, segment options segArgs
// and serve options serveArgs.
func newFeedSaleWith(t *testing.T, units string, segArgs []string, serveArgs ...string) *feedSale {
	t.Helper()
	seg := newSeg(t, "feed", segArgs...)
	run(t, "load", "--name", seg, "--activity", "1", "--sku", "1", "--units", units)
	wal := filepath.Join(t.TempDir(), "wal")
	var serveErr bytes.Buffer
	args := append([]string{"serve", "--name", seg, "--wal", wal, "--reconcile-every", "0"}, serveArgs...)
	serve := exec.Command(cli(t), args...)
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	h, err := flashstock.Open(seg, flashstock.Options{Workers: 2})
	if err != nil {
		_ = serve.Process.Kill()
		_ = serve.Wait()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Close()
		_ = serve.Process.Signal(syscall.SIGTERM)
		if err := serve.Wait(); err != nil {
			t.Errorf("serve after SIGTERM: %v\n%s", err, serveErr.String())
		}
	})
	return &feedSale{seg: seg, wal: wal, h: h}
}

// buy places one order per user (request id 1000 + user) and waits until
// each is durable.  Returns the receipts by user.
func (s *feedSale) buy(t *testing.T, users ...uint64) map[uint64]flashstock.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out := map[uint64]flashstock.Receipt{}
	for _, u := range users {
		r, err := s.h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: u,
			Qty: 1, RequestID: 1000 + u})
		if err != nil {
			t.Fatalf("order of user %d: %v", u, err)
		}
		out[u] = r
	}
	for u, r := range out {
		if err := s.h.DurableWait(ctx, r); err != nil {
			t.Fatalf("DurableWait of user %d's order: %v", u, err)
		}
	}
	return out
}

// drain reads until the feed times out (everything durable is handed out
// at once, so a short wait ends only at the durable end).
func drain(t *testing.T, f *flashstock.Feed) []flashstock.FeedRec {
	t.Helper()
	var recs []flashstock.FeedRec
	for {
		r, err := f.Next(300 * time.Millisecond)
		if errors.Is(err, flashstock.ErrTimeout) {
			return recs
		}
		if err != nil {
			t.Fatalf("Next after %d records: %v", len(recs), err)
		}
		recs = append(recs, r)
	}
}

func openFeed(t *testing.T, wal, name string, o *flashstock.FeedOpts) *flashstock.Feed {
	t.Helper()
	f, err := flashstock.OpenFeed(wal, name, o)
	if err != nil {
		t.Fatalf("OpenFeed(%s): %v", name, err)
	}
	return f
}

func TestFeedReadmeLoopShipsEachOrderAfterItsRegistrationOnce(t *testing.T) {
	s := newFeedSale(t)
	s.buy(t, 1) // before the consumer registers: not its business
	shipped := map[uint64]int{}
	ship := func(no, user uint64, sku, qty uint32) {
		if sku != 1 || qty != 1 || user < 2 || user > 4 {
			t.Errorf("shipped order %d: user %d sku %d qty %d", no, user, sku, qty)
		}
		shipped[no]++
	}
	now := func() bool { return true }
	if err := fulfil(s.wal, ship, now); err != nil { // registers at the durable end
		t.Fatal(err)
	}
	bought := s.buy(t, 2, 3, 4)
	deadline := time.Now().Add(10 * time.Second)
	enough := func() bool { return len(shipped) == len(bought) || time.Now().After(deadline) }
	if err := fulfil(s.wal, ship, enough); err != nil {
		t.Fatal(err)
	}
	for u, r := range bought {
		if shipped[r.OrderNo] != 1 {
			t.Errorf("order %d of user %d shipped %d times", r.OrderNo, u, shipped[r.OrderNo])
		}
	}
	// run again: its commits hold, nothing is shipped twice
	calls := 0
	thrice := func() bool { calls++; return calls > 3 }
	if err := fulfil(s.wal, ship, thrice); err != nil {
		t.Fatal(err)
	}
	if len(shipped) != len(bought) {
		t.Errorf("%d orders shipped, %d bought after the registration", len(shipped), len(bought))
	}
	for no, n := range shipped {
		if n != 1 {
			t.Errorf("order %d shipped %d times", no, n)
		}
	}
}

func TestFeedReadsEveryAcknowledgedOrderOnceWithAllFieldsThenTimesOut(t *testing.T) {
	s := newFeedSale(t)
	t0 := time.Now().UnixNano()
	users := []uint64{1, 2, 3, 4, 5, 6, 7}
	bought := s.buy(t, users...)
	t1 := time.Now().UnixNano()

	f := openFeed(t, s.wal, "all", &flashstock.FeedOpts{FromStart: true})
	defer f.Close()
	recs := drain(t, f)
	seen := map[uint64]bool{}
	var last uint64
	for i, r := range recs {
		if r.LSN != last+1 {
			t.Errorf("record %d: LSN %d after %d", i, r.LSN, last)
		}
		last = r.LSN
		if r.Source != flashstock.FeedSourceWAL || r.Missing != 0 || r.Gap != 0 || r.Seq == 0 {
			t.Errorf("LSN %d: source %d missing %#x gap %d seq %d", r.LSN, r.Source, r.Missing, r.Gap, r.Seq)
		}
		if r.Rec.Type != flashstock.RecOrder {
			continue
		}
		c := r.Rec
		if seen[c.OrderNo] {
			t.Errorf("order %d handed out twice", c.OrderNo)
		}
		seen[c.OrderNo] = true
		b, ok := bought[c.UserID]
		if !ok || b.OrderNo != c.OrderNo {
			t.Errorf("LSN %d: order %d of user %d was not acknowledged so", r.LSN, c.OrderNo, c.UserID)
			continue
		}
		if c.ActivityID != 1 || c.SkuID != 1 || c.Qty != 1 ||
			c.RequestID != 1000+c.UserID || c.LimitSlot != uint16(b.LimitSlot) ||
			c.TsNs < t0 || c.TsNs > t1 || c.BizDay == 0 {
			t.Errorf("LSN %d: fields %+v (receipt %+v)", r.LSN, c, b)
		}
	}
	if len(seen) != len(users) {
		t.Errorf("%d orders in the feed, %d acknowledged", len(seen), len(users))
	}
	// nothing more is durable: the wait ends with ErrTimeout, again and again
	for i := 0; i < 2; i++ {
		if _, err := f.Next(50 * time.Millisecond); !errors.Is(err, flashstock.ErrTimeout) {
			t.Errorf("Next past the durable end: %v, want ErrTimeout", err)
		}
	}
	// a new consumer at the durable end (the default) sees only what follows
	g := openFeed(t, s.wal, "tail", nil)
	defer g.Close()
	if _, err := g.Next(50 * time.Millisecond); !errors.Is(err, flashstock.ErrTimeout) {
		t.Errorf("new consumer at the durable end: %v, want ErrTimeout", err)
	}
	more := s.buy(t, 8)
	r, err := g.Next(10 * time.Second)
	if err != nil || r.Rec.Type != flashstock.RecOrder || r.Rec.OrderNo != more[8].OrderNo || r.LSN != last+1 {
		t.Errorf("the tail consumer's next: %+v, %v; want order %d at LSN %d", r, err, more[8].OrderNo, last+1)
	}
}

func TestFeedCommitHoldsAcrossReopenRewindAndListShowPositionsAndLag(t *testing.T) {
	s := newFeedSale(t)
	s.buy(t, 1, 2, 3, 4)
	f := openFeed(t, s.wal, "c", &flashstock.FeedOpts{FromStart: true})
	all := drain(t, f)
	if len(all) < 6 {
		t.Fatalf("%d records, want the activity, the sku and 4 orders", len(all))
	}
	k := all[2].LSN
	if err := f.Commit(k); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(k); err != nil {
		t.Errorf("commit of the committed LSN: %v, want a no-op", err)
	}
	if err := f.Commit(k - 1); !errors.Is(err, flashstock.ErrInval) {
		t.Errorf("commit below the committed LSN: %v, want ErrInval", err)
	}
	if err := f.Commit(all[len(all)-1].LSN + 1); !errors.Is(err, flashstock.ErrInval) {
		t.Errorf("commit above the last returned LSN: %v, want ErrInval", err)
	}
	info, err := f.Info()
	if err != nil || info.Name() != "c" || info.CommittedLSN != k || info.Open != 1 ||
		info.State != flashstock.FeedStateOK || info.DurableLSN < all[len(all)-1].LSN ||
		info.LagRecords != info.DurableLSN-k || info.CommitNs == 0 {
		t.Errorf("Info: %+v, %v", info, err)
	}
	// rewind: the record after the committed one again
	if err := f.Rewind(); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Next(time.Second); err != nil || r != all[3] {
		t.Errorf("after Rewind: %+v, %v; want %+v", r, err, all[3])
	}
	// closed without a commit past k: the reopen resumes at k + 1
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != flashstock.ErrClosed {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.Next(0); err != flashstock.ErrClosed {
		t.Errorf("Next after Close: %v", err)
	}
	f = openFeed(t, s.wal, "c", &flashstock.FeedOpts{FromStart: true, NoCreate: true})
	again := drain(t, f)
	if len(again) != len(all)-3 || again[0] != all[3] || again[len(again)-1] != all[len(all)-1] {
		t.Errorf("after the reopen: %d records from LSN %d; want %d from %d",
			len(again), again[0].LSN, len(all)-3, all[3].LSN)
	}
	_ = f.Close()

	list, err := flashstock.FeedList(s.wal)
	if err != nil || len(list) != 1 || list[0].Name() != "c" || list[0].Open != 0 ||
		list[0].CommittedLSN != k || list[0].LagRecords != list[0].DurableLSN-k {
		t.Errorf("FeedList: %+v, %v", list, err)
	}
	if _, err := flashstock.FeedList(filepath.Join(s.wal, "nope")); !errors.Is(err, flashstock.ErrNotFound) {
		t.Errorf("FeedList of no directory: %v, want ErrNotFound", err)
	}
}

func TestFeedSecondOpenOfANameIsBusyAndDropUnregisters(t *testing.T) {
	s := newFeedSale(t)
	s.buy(t, 1)
	f := openFeed(t, s.wal, "one", nil)
	if _, err := flashstock.OpenFeed(s.wal, "one", nil); !errors.Is(err, flashstock.ErrBusy) {
		t.Errorf("second open of a name: %v, want ErrBusy", err)
	}
	if err := flashstock.FeedDrop(s.wal, "one"); !errors.Is(err, flashstock.ErrBusy) {
		t.Errorf("drop of an open consumer: %v, want ErrBusy", err)
	}
	_ = f.Close()
	if err := flashstock.FeedDrop(s.wal, "one"); err != nil {
		t.Errorf("drop: %v", err)
	}
	if err := flashstock.FeedDrop(s.wal, "one"); !errors.Is(err, flashstock.ErrNotFound) {
		t.Errorf("second drop: %v, want ErrNotFound", err)
	}
	if _, err := flashstock.OpenFeed(s.wal, "one", &flashstock.FeedOpts{NoCreate: true}); !errors.Is(err, flashstock.ErrNotFound) {
		t.Errorf("NoCreate open of a dropped consumer: %v, want ErrNotFound", err)
	}
	if _, err := flashstock.OpenFeed(s.wal, ".bad", nil); !errors.Is(err, flashstock.ErrInval) {
		t.Errorf("open of a bad name: %v, want ErrInval", err)
	}
	if list, err := flashstock.FeedList(s.wal); err != nil || len(list) != 0 {
		t.Errorf("FeedList after drop: %+v, %v", list, err)
	}
}

func TestFeedConsumerPastTheRetentionBoundIsListedLostAndNextIsErrLost(t *testing.T) {
	s := newFeedSaleWith(t, "1000000", []string{"--users", "65536"}, "--wal-file-mb", "1",
		"--snapshot-wal-bytes", "65536", "--snapshot-every", "1", "--feed-keep-bytes", "1")
	s.buy(t, 1)
	slow := openFeed(t, s.wal, "slow", nil) // registered, never commits
	_ = slow.Close()
	first := filepath.Join(s.wal, "wal-0000000000000001.log")
	deadline := time.Now().Add(60 * time.Second)
	u := uint64(2)
	for {
		if _, err := os.Stat(first); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention never removed %s after %d orders", first, u-1)
		}
		users := make([]uint64, 2000)
		for i := range users {
			users[i] = u + uint64(i)
		}
		s.buy(t, users...)
		u += 2000
		time.Sleep(200 * time.Millisecond)
	}
	list, err := flashstock.FeedList(s.wal)
	if err != nil || len(list) != 1 || list[0].Name() != "slow" || list[0].State != flashstock.FeedStateLost {
		t.Errorf("FeedList past the bound: %+v, %v; want slow lost", list, err)
	}
	f := openFeed(t, s.wal, "slow", nil)
	for i := 0; i < 2; i++ { // the position stays: ErrLost again, never a silent skip
		var fe *flashstock.Error
		if _, err := f.Next(0); !errors.Is(err, flashstock.ErrLost) || !errors.As(err, &fe) || fe.Name != "FLASH_ELOST" {
			t.Errorf("Next of a lost consumer: %v, want ErrLost", err)
		}
	}
	_ = f.Close()
	if err := flashstock.FeedDrop(s.wal, "slow"); err != nil {
		t.Errorf("drop: %v", err)
	}
	t.Logf("lost after %d orders", u-1)
}

// TestMain runs the package's tests, or, with FSGO_FEED_CHILD=WAL:N in the
// environment, the consumer that TestFeedKilledConsumerResumesAfterItsLastCommit
// kills: it reads every record, commits after the N-th, prints
// "committed LSN" and then "read LSN" for each later record, "idle" at the
// durable end, and waits to be killed.
func TestMain(m *testing.M) {
	if arg := os.Getenv("FSGO_FEED_CHILD"); arg != "" {
		feedChild(arg)
	}
	os.Exit(m.Run())
}

func feedChild(arg string) {
	fail := func(err error) {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	wal, n, _ := strings.Cut(arg, ":")
	after, _ := strconv.Atoi(n)
	f, err := flashstock.OpenFeed(wal, "killed", &flashstock.FeedOpts{FromStart: true})
	if err != nil {
		fail(err)
	}
	for i := 1; ; i++ {
		r, err := f.Next(300 * time.Millisecond)
		if errors.Is(err, flashstock.ErrTimeout) {
			break
		}
		if err != nil {
			fail(err)
		}
		if i == after {
			if err := f.Commit(r.LSN); err != nil {
				fail(err)
			}
			fmt.Printf("committed %d\n", r.LSN)
		} else if i > after {
			fmt.Printf("read %d\n", r.LSN)
		}
	}
	fmt.Println("idle")
	time.Sleep(time.Minute) // the parent kills it long before
	os.Exit(2)
}

func TestFeedKilledConsumerResumesAfterItsLastCommit(t *testing.T) {
	s := newFeedSale(t)
	s.buy(t, 1, 2, 3, 4, 5)
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "FSGO_FEED_CHILD="+s.wal+":3")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	}()
	var committed uint64
	var read []uint64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "idle" {
			break
		}
		if len(f) != 2 {
			t.Fatalf("consumer said %q", sc.Text())
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "committed":
			committed = v
		case "read":
			read = append(read, v)
		default:
			t.Fatalf("consumer said %q", sc.Text())
		}
	}
	if committed == 0 || len(read) < 4 { // 7 records: the activity, the sku, 5 orders
		t.Fatalf("consumer committed %d and read %v past it", committed, read)
	}
	// the live consumer holds the name: another process is refused
	if _, err := flashstock.OpenFeed(s.wal, "killed", nil); !errors.Is(err, flashstock.ErrBusy) {
		t.Errorf("open while the consumer process lives: %v, want ErrBusy", err)
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	killed = true

	// the kernel dropped the dead holder's lock; the position is its last commit
	f := openFeed(t, s.wal, "killed", &flashstock.FeedOpts{NoCreate: true})
	defer f.Close()
	info, err := f.Info()
	if err != nil || info.CommittedLSN != committed {
		t.Errorf("after the kill: committed %d, %v; want %d", info.CommittedLSN, err, committed)
	}
	again := drain(t, f)
	var lsns []uint64
	for _, r := range again {
		lsns = append(lsns, r.LSN)
	}
	if fmt.Sprint(lsns) != fmt.Sprint(read) || lsns[0] != committed+1 {
		t.Errorf("after the kill the feed hands out %v; the killed consumer read %v after %d",
			lsns, read, committed)
	}
}

func TestFeedHandsAPriceSetAsRecPriceAndNewTermsAsAnActivityUpdate(t *testing.T) {
	s := newFeedSale(t)
	a, err := s.h.ActivityGet(1)
	if err != nil {
		t.Fatal(err)
	}
	sku, err := s.h.SkuGet(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	priceV, err := s.h.SkuPriceSet(1, 1, 2500)
	if err != nil {
		t.Fatal(err)
	}
	grown := a
	grown.LimitPerUser++
	actV, err := s.h.ActivityUpdate(grown)
	if err != nil {
		t.Fatal(err)
	}
	s.buy(t, 1) // serve has made the WAL once an order is durable
	f := openFeed(t, s.wal, "terms", &flashstock.FeedOpts{FromStart: true})
	defer f.Close()
	// the Handle's two workers write two rings: read until both changes came
	var added, skuRec, price, update *flashstock.Record
	for price == nil || update == nil {
		r, err := f.Next(10 * time.Second)
		if err != nil {
			t.Fatalf("Next: %v (price record %v, update %v)", err, price != nil, update != nil)
		}
		rec := r.Rec
		switch {
		case rec.Type == flashstock.RecActivity && rec.Flags&1 == 0:
			added = &rec
		case rec.Type == flashstock.RecActivity:
			update = &rec
		case rec.Type == flashstock.RecSku:
			skuRec = &rec
		case rec.Type == flashstock.RecPrice:
			price = &rec
		}
	}
	if added == nil || added.OrderNo != a.Version {
		t.Errorf("the add's RecActivity: %+v; want OrderNo %d (its version)", added, a.Version)
	}
	if skuRec == nil || skuRec.OrderNo != sku.Version {
		t.Errorf("the RecSku: %+v; want OrderNo %d (its version)", skuRec, sku.Version)
	}
	if price.ActivityID != 1 || price.SkuID != 1 || price.Value != 2500 || price.OrderNo != priceV || price.TsNs == 0 {
		t.Errorf("RecPrice: %+v; want activity 1, sku 1, Value 2500, OrderNo %d", *price, priceV)
	}
	if update.ActivityID != 1 || update.OrderNo != actV || update.BizDay&0xff != grown.LimitPerUser {
		t.Errorf("the update's RecActivity: %+v; want OrderNo %d, limit %d", *update, actV, grown.LimitPerUser)
	}
}

// A cart's ORDER and its CANCEL are one record per line, in line order: the
// line's SkuID and Qty, the cart's OrderNo and UserID; Cart, Line and Last
// from the flags; the request id on line 0 only.
func TestFeedHandsACartAsOneRecordPerLineWithItsLineLastAndTheCartsNumber(t *testing.T) {
	s := newFeedSale(t)
	for _, sku := range []uint32{2, 3} {
		if err := s.h.SkuAdd(1, sku, 100, 1); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	skus := []uint32{3, 1, 2}
	var r flashstock.Receipt
	err := s.h.Run(ctx, func(p *flashstock.Pinned) error { // one handle: its records in one ring, in order
		var err error
		req := flashstock.CartReq{ActivityID: 1, UserID: 900, RequestID: 9001}
		for _, sku := range skus {
			req.Lines = append(req.Lines, flashstock.CartLine{SkuID: sku, Qty: 1})
		}
		if r, err = p.CartOrder(ctx, req); err != nil {
			return err
		}
		if _, err = p.Cancel(ctx, r.OrderNo); err != nil {
			return err
		}
		last, err := p.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: 901, Qty: 1})
		if err != nil {
			return err
		}
		return p.DurableWait(ctx, last)
	})
	if err != nil {
		t.Fatal(err)
	}
	f := openFeed(t, s.wal, "carts", &flashstock.FeedOpts{FromStart: true})
	defer f.Close()
	var got []flashstock.Record
	for len(got) < 7 {
		fr, err := f.Next(10 * time.Second)
		if err != nil {
			t.Fatalf("Next: %v (after %d order records)", err, len(got))
		}
		if fr.Rec.Type == flashstock.RecOrder || fr.Rec.Type == flashstock.RecCancel {
			got = append(got, fr.Rec)
		}
	}
	for i, rec := range got[:6] {
		line, typ := i%3, flashstock.RecOrder
		if i >= 3 {
			typ = flashstock.RecCancel
		}
		if rec.Type != typ || rec.SkuID != skus[line] || rec.Qty != 1 || rec.OrderNo != r.OrderNo || rec.UserID != 900 ||
			!rec.Cart() || rec.Line() != line || rec.Last() != (line == 2) {
			t.Errorf("record %d: %+v (cart %v line %d last %v); want type %d, sku %d, order %d, line %d",
				i, rec, rec.Cart(), rec.Line(), rec.Last(), typ, skus[line], r.OrderNo, line)
		}
		if typ == flashstock.RecOrder && rec.RequestID != map[bool]uint64{true: 9001, false: 0}[line == 0] {
			t.Errorf("ORDER of line %d: request id %d", line, rec.RequestID)
		}
	}
	if p := got[6]; p.UserID != 901 || p.Cart() || p.Line() != 0 || !p.Last() {
		t.Errorf("the plain order's record: %+v (cart %v line %d last %v)", p, p.Cart(), p.Line(), p.Last())
	}
}
