// service_test.go -- the example HTTP service (example/main.go) on a fresh
// segment, driven by concurrent clients asking for far more than the stock.
package systest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestServiceSellsExactlyTheStockToConcurrentClients(t *testing.T) {
	const units, users, clients = 60, 150, 12 // each user asks twice: 300 requests
	seg := newSeg(t, "svc")
	run(t, "load", "--name", seg, "--activity", "1", "--limit", "1", "--sku", "1", "--units", fmt.Sprint(units),
		"--shards", "2")

	svc := exec.Command(goBin(t, "fsgo-example"), "--name", seg, "--listen", "127.0.0.1:0")
	stdout, err := svc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	svc.Stderr = &stderr
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = svc.Process.Kill()
			_ = svc.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		t.Fatalf("the service printed %q (%v); stderr: %s", line, err, stderr.String())
	}
	base := "http://" + strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	t.Logf("service at %s", base)

	type outcome struct {
		user   int
		status int
		body   map[string]any
	}
	jobs := make(chan int)
	results := make(chan outcome, 2*users)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				user := j%users + 1
				body := fmt.Sprintf(`{"user":%d,"qty":1,"request_id":%d}`, user, j+1)
				resp, err := client.Post(base+"/order", "application/json", strings.NewReader(body))
				if err != nil {
					t.Errorf("POST /order: %v", err)
					continue
				}
				var m map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				results <- outcome{user, resp.StatusCode, m}
			}
		}()
	}
	for j := 0; j < 2*users; j++ {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	close(results)

	ok, refused := 0, map[string]int{}
	perUser := map[int]int{}
	orderNos := map[float64]bool{}
	for r := range results {
		switch r.status {
		case http.StatusOK:
			no, _ := r.body["order_no"].(float64)
			if no == 0 || orderNos[no] {
				t.Errorf("200 with order_no %v (zero or seen before)", r.body["order_no"])
			}
			orderNos[no] = true
			ok++
			perUser[r.user]++
		case http.StatusConflict:
			name, _ := r.body["error"].(string)
			refused[name]++
		default:
			t.Errorf("user %d: status %d %v", r.user, r.status, r.body)
		}
	}
	over := 0
	for _, n := range perUser {
		if n > 1 {
			over++
		}
	}
	t.Logf("%d requests: %d orders, refusals %v, %d users over the limit", 2*users, ok, refused, over)
	if ok != units {
		t.Errorf("%d orders succeeded, the stock is %d", ok, units)
	}
	if over != 0 {
		t.Errorf("%d users hold more than the limit of 1", over)
	}
	if refused["FLASH_ESOLD_OUT"]+refused["FLASH_ELIMIT"] != 2*users-units {
		t.Errorf("refusals %v, want %d sold out or limit", refused, 2*users-units)
	}

	resp, err := http.Get(base + "/stock?activity=1&sku=1")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]uint64
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != 200 || st["total"] != units || st["available"] != 0 || st["sold"] != units {
		t.Errorf("GET /stock: %d %v, want total %d available 0 sold %d", resp.StatusCode, st, units, units)
	}
	if resp, err := http.Get(base + "/stock?activity=1&sku=99"); err != nil || resp.StatusCode != 404 {
		t.Errorf("GET /stock of an unknown sku: %v %v", resp, err)
	}

	_ = svc.Process.Signal(syscall.SIGTERM)
	err = svc.Wait()
	stopped = true
	if err != nil {
		t.Errorf("service exit after SIGTERM: %v; stderr: %s", err, stderr.String())
	}
	out, err := exec.Command(cli(t), "reconcile", "--name", seg).CombinedOutput()
	if err != nil {
		t.Errorf("flashstock reconcile --name %s: %v\n%s", seg, err, out)
	}
}
