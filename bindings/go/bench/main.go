// bench/main.go -- the Go binding's bench: one goroutine, one hot sku, N
// orders in a loop, each with a one-time token issued before the timed part
// and a new user (so the per-user limit never refuses), through
//
//	c                the same orders in a C loop (one cgo call for all of
//	                 them): the engine's own cost, for the overheads below
//	flashstock       a Pinned handle: one cgo call per order
//	flashstock-pool  a Handle: each order handed to a worker's OS thread
//	redis-lua        redigo running bench/seckill.lua by EVALSHA against the
//	                 redis-server at --redis-socket (the caller starts it;
//	                 without the flag this engine is not run)
//
// printing one line per engine:
//
//	bench binding=go engine=E orders=N ns_per_order=X
//
// With --batch K (2 or more) the three flashstock engines place their
// orders in batches of K (the last one shorter) through flash_order_many:
// c-batch (the C loop), flashstock-batch (Pinned.OrderMany: one cgo call per
// batch) and flashstock-pool-batch (Handle.OrderMany: one hand-off per
// batch), each line with batch=K after the engine; redis-lua is unchanged.
// --batch 1 (the default) is the single-order path above.
//
// The program creates its own segment (--name, default /fs-go-bench-PID),
// sized for the run, and destroys it; an untimed C run first touches its
// pages, so that no engine pays for that.  Every order must succeed: any other
// outcome ends the program with exit 1, so a smoke run proves the chain.
package main

/*
#cgo LDFLAGS: -lflashstock
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <flashstock.h>

// n orders for users first..first+n-1, token toks[i] each, on a handle this
// thread opens; the elapsed CLOCK_MONOTONIC ns, or a negative result code
static int64_t c_orders(const char *name, uint64_t first, uint32_t n, uint32_t ttl_ms)
{
	flash_t *h;
	int rc = flash_open(name, 0, &h);
	if (rc != FLASH_OK)
		return rc;
	uint64_t *toks = malloc(sizeof(uint64_t) * n);
	if (!toks) {
		flash_close(h);
		return FLASH_ENOMEM;
	}
	for (uint32_t i = 0; i < n && rc == FLASH_OK; i++)
		rc = flash_token_issue(h, 1, 1, first + i, ttl_ms, &toks[i]);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t i = 0; i < n && rc == FLASH_OK; i++) {
		struct flash_order_req r = { .activity_id = 1, .sku_id = 1, .user_id = first + i,
		                             .qty = 1, .token = toks[i] };
		struct flash_order_res res;
		rc = flash_order(h, &r, &res);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(toks);
	flash_close(h);
	if (rc != FLASH_OK)
		return rc;
	return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}

// c_orders in batches of k (flash_order_many), the requests of a batch
// filled in the timed loop as the single loop fills its one
static int64_t c_orders_many(const char *name, uint64_t first, uint32_t n, uint32_t ttl_ms, uint32_t k)
{
	struct timespec t0, t1;
	flash_t *h;
	int rc = flash_open(name, 0, &h);
	if (rc != FLASH_OK)
		return rc;
	uint64_t *toks = malloc(sizeof(uint64_t) * n);
	struct flash_order_req *r = calloc(k, sizeof(*r));
	struct flash_order_res *res = malloc(sizeof(*res) * k);
	int *rcs = malloc(sizeof(int) * k);
	if (!toks || !r || !res || !rcs) {
		rc = FLASH_ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n && rc == FLASH_OK; i++)
		rc = flash_token_issue(h, 1, 1, first + i, ttl_ms, &toks[i]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t i = 0; i < n && rc == FLASH_OK; i += k) {
		uint32_t m = n - i < k ? n - i : k;
		for (uint32_t j = 0; j < m; j++)
			r[j] = (struct flash_order_req){ .activity_id = 1, .sku_id = 1, .user_id = first + i + j,
			                                 .qty = 1, .token = toks[i + j] };
		rc = flash_order_many(h, r, m, res, rcs);
		for (uint32_t j = 0; j < m && rc == FLASH_OK; j++)
			rc = rcs[j];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
out:
	free(rcs);
	free(res);
	free(r);
	free(toks);
	flash_close(h);
	if (rc != FLASH_OK)
		return rc;
	return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}
*/
import "C"

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"flashstock/go/flashstock"
	"github.com/gomodule/redigo/redis"
)

var segName string // destroyed on the way out, also by die

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "fsgo-bench: "+format+"\n", a...)
	if segName != "" {
		_ = flashstock.Destroy(segName)
	}
	os.Exit(1)
}

func pow2(n uint32) uint32 {
	p := uint32(flashstock.RingMin)
	for p < n {
		p <<= 1
	}
	return p
}

// setup creates and loads the segment: activity 1 (token required, limit
// 1), sku 1 with 4N units, for a warm-up run and the three flashstock runs.
func setup(name string, n uint32) {
	o := flashstock.DefaultSegOpts()
	o.MaxActivities, o.MaxSkus, o.MaxShards = 2, 2, 2
	o.MaxUsers, o.MaxTokens, o.MaxOrders = 4*n+64, 4*n+64, 4*n+1024
	o.MaxRequests, o.MaxLocks, o.MaxProcs = 64, 2, 2
	// nothing drains the rings, and a handle that reuses a closed one's
	// slot continues its ring: one ring holds both runs
	o.RingRecords = pow2(4*n + 256)
	if err := flashstock.Create(name, &o); err != nil {
		die("create %s: %v", name, err)
	}
	p, err := flashstock.OpenPinned(name, flashstock.Options{})
	if err != nil {
		die("open: %v", err)
	}
	defer p.Close()
	now := time.Now().UnixNano()
	if err := p.ActivityAdd(flashstock.Activity{ID: 1, LimitPerUser: 1, MaxQty: 1, Flags: flashstock.ActTokenRequired,
		StartNs: now - int64(time.Minute), EndNs: now + int64(24*time.Hour)}); err != nil {
		die("activity: %v", err)
	}
	if err := p.SkuAdd(1, 1, uint64(4*n), 1); err != nil {
		die("sku: %v", err)
	}
}

// orderer is what both flashstock handles offer.
type orderer interface {
	TokenIssue(activity, sku uint32, user uint64, ttl time.Duration) (uint64, error)
	Order(ctx context.Context, req flashstock.OrderReq) (flashstock.Receipt, error)
	OrderMany(ctx context.Context, reqs []flashstock.OrderReq, out []flashstock.Outcome) ([]flashstock.Outcome, error)
}

func issue(h orderer, firstUser uint64, n uint32) []uint64 {
	toks := make([]uint64, n)
	for i := range toks {
		t, err := h.TokenIssue(1, 1, firstUser+uint64(i), 10*time.Minute)
		if err != nil {
			die("token: %v", err)
		}
		toks[i] = t
	}
	return toks
}

func runFlash(h orderer, firstUser uint64, n uint32) time.Duration {
	toks := issue(h, firstUser, n)
	ctx := context.Background()
	t0 := time.Now()
	for i := uint32(0); i < n; i++ {
		if _, err := h.Order(ctx, flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: firstUser + uint64(i),
			Qty: 1, Token: toks[i]}); err != nil {
			die("order %d: %v", i, err)
		}
	}
	return time.Since(t0)
}

// runFlashMany places the orders of runFlash in batches of k, the requests
// of a batch filled in the timed loop (into a kept slice, as the outcomes).
func runFlashMany(h orderer, firstUser uint64, n, k uint32) time.Duration {
	toks := issue(h, firstUser, n)
	ctx := context.Background()
	reqs := make([]flashstock.OrderReq, k)
	out := make([]flashstock.Outcome, 0, k)
	t0 := time.Now()
	for i := uint32(0); i < n; i += k {
		m := k
		if n-i < k {
			m = n - i
		}
		for j := uint32(0); j < m; j++ {
			reqs[j] = flashstock.OrderReq{ActivityID: 1, SkuID: 1, UserID: firstUser + uint64(i+j), Qty: 1,
				Token: toks[i+j]}
		}
		var err error
		if out, err = h.OrderMany(ctx, reqs[:m], out[:0]); err != nil {
			die("batch at order %d: %v", i, err)
		}
		for j := range out {
			if out[j].Err != nil {
				die("order %d: %v", int(i)+j, out[j].Err)
			}
		}
	}
	return time.Since(t0)
}

func runRedis(sock, luaPath string, n uint32) time.Duration {
	src, err := os.ReadFile(luaPath)
	if err != nil {
		die("%v", err)
	}
	c, err := redis.Dial("unix", sock)
	if err != nil {
		die("redis %s: %v", sock, err)
	}
	defer c.Close()
	sha, err := redis.String(c.Do("SCRIPT", "LOAD", string(src)))
	if err != nil {
		die("SCRIPT LOAD: %v", err)
	}
	if _, err := c.Do("DEL", "buyers:1", "orders:1", "stock:1"); err != nil {
		die("DEL: %v", err)
	}
	if _, err := c.Do("SET", "stock:1", n); err != nil {
		die("SET stock: %v", err)
	}
	// tokens before the timed part, as eng_redis.c and the flashstock side do
	for i := uint32(0); i < n; i++ {
		if err := c.Send("SET", fmt.Sprintf("tok:%d", i+1), fmt.Sprintf("%d:1", i+1)); err != nil {
			die("SET tok: %v", err)
		}
	}
	if err := c.Flush(); err != nil {
		die("flush: %v", err)
	}
	for i := uint32(0); i < n; i++ {
		if _, err := c.Receive(); err != nil {
			die("SET tok: %v", err)
		}
	}
	t0 := time.Now()
	for i := uint32(0); i < n; i++ {
		user := i + 1
		// KEYS tok:<token> buyers:<activity> stock:<sku> orders:<activity>;
		// ARGV "<user>:<sku>" user qty sku
		r, err := redis.Int64(c.Do("EVALSHA", sha, 4, fmt.Sprintf("tok:%d", user), "buyers:1", "stock:1",
			"orders:1", fmt.Sprintf("%d:1", user), user, 1, 1))
		if err != nil || r <= 0 {
			die("EVALSHA order %d: %d %v", i, r, err)
		}
	}
	return time.Since(t0)
}

func runC(name string, firstUser uint64, n, k uint32) time.Duration {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var ns C.int64_t
	if k > 1 {
		ns = C.c_orders_many(cn, C.uint64_t(firstUser), C.uint32_t(n), 600000, C.uint32_t(k))
	} else {
		ns = C.c_orders(cn, C.uint64_t(firstUser), C.uint32_t(n), 600000)
	}
	if ns < 0 {
		die("C loop: %v", flashstock.CodeError(int(ns)))
	}
	return time.Duration(ns)
}

// line prints one engine's result; a batch run names its engines E-batch
// and says its batch size.
func line(engine string, n, k uint32, d time.Duration) {
	if k > 1 {
		engine = fmt.Sprintf("%s-batch batch=%d", engine, k)
	}
	fmt.Printf("bench binding=go engine=%s orders=%d ns_per_order=%.1f\n", engine, n,
		float64(d.Nanoseconds())/float64(n))
}

// run is runFlash, or runFlashMany for batches.
func run(h orderer, firstUser uint64, n, k uint32) time.Duration {
	if k > 1 {
		return runFlashMany(h, firstUser, n, k)
	}
	return runFlash(h, firstUser, n)
}

func main() {
	n := flag.Uint("orders", 100000, "orders per engine")
	name := flag.String("name", fmt.Sprintf("/fs-go-bench-%d", os.Getpid()), "segment the program creates (and destroys)")
	sock := flag.String("redis-socket", "", "unix socket of a running redis-server (empty: no redis-lua run)")
	lua := flag.String("lua", "bench/seckill.lua", "the order script")
	rn := flag.Uint("redis-orders", 0, "redis-lua orders (0: as many as --orders)")
	bk := flag.Uint("batch", 1, "orders per flash_order_many call of the flashstock engines (1: one order per call)")
	flag.Parse()
	if *n == 0 || *n > 1<<24 {
		die("--orders 1..16777216")
	}
	if *bk == 0 || *bk > 1<<16 {
		die("--batch 1..65536")
	}
	orders, k := uint32(*n), uint32(*bk)
	setup(*name, orders)
	segName = *name
	defer flashstock.Destroy(*name)

	runtime.LockOSThread()
	// warm-up: the first run over a fresh segment pays for its first touch
	// of the shared memory's pages (users, tokens, orders, ring); untimed
	runC(*name, 3*uint64(orders)+1, orders, k)
	line("c", orders, k, runC(*name, 2*uint64(orders)+1, orders, k))
	p, err := flashstock.OpenPinned(*name, flashstock.Options{})
	if err != nil {
		die("open: %v", err)
	}
	line("flashstock", orders, k, run(p, 1, orders, k))
	p.Close()
	runtime.UnlockOSThread()

	h, err := flashstock.Open(*name, flashstock.Options{Workers: 1})
	if err != nil {
		die("open: %v", err)
	}
	line("flashstock-pool", orders, k, run(h, uint64(orders)+1, orders, k))
	h.Close()

	if *sock != "" {
		ro := orders
		if *rn != 0 && *rn <= 1<<24 {
			ro = uint32(*rn)
		}
		line("redis-lua", ro, 1, runRedis(*sock, *lua, ro))
	}
}
