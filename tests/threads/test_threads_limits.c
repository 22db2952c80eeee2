/*
 * test_threads_limits.c -- threads of one process racing for the same
 * per-user limit entries, for stock being restocked under them, and for a
 * user's quota that cancels give back.
 *
 * test_threads_hot.c gives every order its own user; here several threads
 * order for the SAME users, so they meet on the same limit-table entries
 * (the insert of one key by two threads, the wait on a BUSY entry, a slot
 * freed by a cancel and taken again).  In the ThreadSanitizer build
 * (tests/threads/tsan_tests.cmake) the handles share one mapping, so those meetings
 * are checked for data races too.  Threads never call cmocka: each fills its
 * own block and the main thread asserts after joining.  Each thread keeps
 * its handle open until the main thread has drained the rings.
 */
#include "helpers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define NT    4             /* ordering threads */
#define USERS 128           /* users every thread orders for */

struct run {
	const char *name;
	pthread_barrier_t go;   /* NT (+1 restocker) threads start together */
	pthread_barrier_t done; /* they and the main thread: rings drained */
	atomic_int restock_over;
	uint32_t restocks;      /* +1 restocks the restocker makes */
};

struct worker {
	struct run *run;
	int id;
	flash_t *h;
	int err;
	char what[96];
	uint64_t ok, limit, sold_out, cancelled, busy;
};

static void werr(struct worker *w, const char *what, int rc)
{
	if (w->err == 0) {
		w->err = rc ? rc : -1000;
		snprintf(w->what, sizeof w->what, "thread %d: %s: %s", w->id, what, flash_rcname(rc));
	}
}

/* Order until the ring takes it; returns the order's rc. */
static int order_once(struct worker *w, uint32_t sku, uint64_t user, struct flash_order_res *res)
{
	int rc;

	while ((rc = t_order(w->h, 1, sku, user, 1, 0, 0, res)) == FLASH_EBUSY) {
		w->busy++;
		sched_yield();
	}
	return rc;
}

static void run_threads(struct run *r, int n, void *(*fn)(void *), struct worker *w,
                        struct t_recs *recs, flash_t *main_h)
{
	pthread_t tid[NT + 1];

	assert_int_equal(pthread_barrier_init(&r->go, NULL, (unsigned)n), 0);
	assert_int_equal(pthread_barrier_init(&r->done, NULL, (unsigned)n + 1), 0);
	for (int i = 0; i < n; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].run = r;
		w[i].id = i;
		assert_int_equal(pthread_create(&tid[i], NULL, fn, &w[i]), 0);
	}
	/* every thread has finished ordering and holds its handle: drain */
	pthread_barrier_wait(&r->done);
	assert_int_equal(t_recs_drain(main_h, recs), FLASH_OK);
	pthread_barrier_wait(&r->done);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_join(tid[i], NULL), 0);
	pthread_barrier_destroy(&r->go);
	pthread_barrier_destroy(&r->done);
	for (int i = 0; i < n; i++)
		if (w[i].err)
			fail_msg("%s", w[i].what);
}

/* open, wait for the start, run @p body, then hold the handle for the drain */
static void *thread_main(struct worker *w, void (*body)(struct worker *))
{
	int rc = flash_open(w->run->name, 0, &w->h);

	if (rc != FLASH_OK)
		werr(w, "flash_open", rc);
	pthread_barrier_wait(&w->run->go);
	if (w->h != NULL)
		body(w);
	pthread_barrier_wait(&w->run->done);
	pthread_barrier_wait(&w->run->done);
	if (w->h != NULL)
		flash_close(w->h);
	return NULL;
}

static struct flash_seg_opts *opts(void)
{
	static struct flash_seg_opts o;

	t_opts_small(&o);
	o.max_users = 4096;
	o.max_orders = 4096;
	o.max_requests = 64;
	o.max_tokens = 64;
	o.ring_records = 2048;    /* every record of a thread fits: drained at the end */
	return &o;
}

/* ---- 1. the same users from every thread: each holds exactly K ---------- */

static void same_users_body(struct worker *w)
{
	/* three passes over every user, each thread starting elsewhere */
	for (int pass = 0; pass < 3; pass++)
		for (int i = 0; i < USERS; i++) {
			uint64_t user = 1 + (uint64_t)((i + w->id * 37) % USERS);
			struct flash_order_res res;
			int rc = order_once(w, 10, user, &res);

			if (rc == FLASH_OK)
				w->ok++;
			else if (rc == FLASH_ELIMIT)
				w->limit++;
			else
				werr(w, "order", rc);
		}
}

static void *same_users(void *arg)
{
	return thread_main(arg, same_users_body);
}

static void test_threads_same_users_racing_each_hold_exactly_k_orders(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct run r = { .name = name };
	struct worker w[NT];
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	uint64_t ok = 0, limit = 0;

	assert_int_equal(t_activity(h, 1, 2, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100000, 1), FLASH_OK);
	run_threads(&r, NT, same_users, w, &recs, h);
	for (int i = 0; i < NT; i++) {
		ok += w[i].ok;
		limit += w[i].limit;
	}
	/* K = 2: every user got exactly two orders, every other try ELIMIT */
	assert_int_equal(ok, 2 * USERS);
	assert_int_equal(ok + limit, (uint64_t)NT * 3 * USERS);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 2, &lg), 0);
	assert_int_equal(lg.active_orders, 2 * USERS);
	assert_int_equal(lg.users_at_limit, USERS);
	assert_int_equal(lg.max_per_user, 2);
	t_recs_free(&recs);
}

/* ---- 2. restocks racing orders: every unit sold once, none lost --------- */

static void restock_buyer_body(struct worker *w)
{
	for (uint64_t n = 0;; n++) {
		/* read before the try: SOLD_OUT after the last restock is final */
		int over = atomic_load(&w->run->restock_over);
		uint64_t user = (uint64_t)(w->id + 1) << 32 | n;
		struct flash_order_res res;
		int rc = order_once(w, 20, user, &res);

		if (rc == FLASH_OK) {
			w->ok++;
		} else if (rc == FLASH_ESOLD_OUT) {
			w->sold_out++;
			if (over)
				return;
			sched_yield();
		} else {
			werr(w, "order", rc);
			return;
		}
	}
}

static void restocker_body(struct worker *w)
{
	for (uint32_t i = 0; i < w->run->restocks; i++) {
		int rc;

		while ((rc = flash_restock(w->h, 1, 20, 1)) == FLASH_EBUSY) {
			w->busy++;
			sched_yield();
		}
		if (rc != FLASH_OK) {
			werr(w, "restock", rc);
			break;
		}
		w->ok++;
	}
	atomic_store(&w->run->restock_over, 1);
}

static void *restock_thread(void *arg)
{
	struct worker *w = arg;

	/* the last thread restocks, the others buy */
	return thread_main(w, w->id == NT ? restocker_body : restock_buyer_body);
}

static void test_threads_restocks_racing_orders_sell_every_unit_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct run r = { .name = name, .restocks = 300 };
	struct worker w[NT + 1];
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	uint64_t sold = 0;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 20, 100, 2), FLASH_OK);
	run_threads(&r, NT + 1, restock_thread, w, &recs, h);
	assert_int_equal(w[NT].ok, r.restocks);
	for (int i = 0; i < NT; i++)
		sold += w[i].ok;
	/* 100 loaded + 300 restocked: all sold, and not one more */
	assert_int_equal(sold, 100 + r.restocks);
	assert_int_equal(t_available(h, 1, 20), 0);
	assert_int_equal(t_ledger_check(h, &recs, 1, 20, 1, &lg), 0);
	assert_int_equal(lg.active_orders, sold);
	t_recs_free(&recs);
}

/* ---- 3. cancels that return the quota, racing re-orders of the same users */

#define QUSERS 32

static void quota_body(struct worker *w)
{
	/* each thread: order for a user, cancel what it got, again; K = 1 and
	 * the quota comes back, so a user's slot passes from thread to thread */
	for (int round = 0; round < 20; round++)
		for (int i = 0; i < QUSERS; i++) {
			uint64_t user = 1 + (uint64_t)((i + w->id * 11) % QUSERS);
			struct flash_order_res res;
			uint32_t back = 0;
			int rc = order_once(w, 30, user, &res);

			if (rc == FLASH_ELIMIT) {
				w->limit++;
				continue;
			}
			if (rc != FLASH_OK) {
				werr(w, "order", rc);
				return;
			}
			w->ok++;
			while ((rc = flash_cancel(w->h, res.order_no, &back)) == FLASH_EBUSY) {
				w->busy++;
				sched_yield();
			}
			if (rc != FLASH_OK || back != 1) {
				werr(w, "cancel", rc);
				return;
			}
			w->cancelled++;
		}
}

static void *quota_thread(void *arg)
{
	return thread_main(arg, quota_body);
}

static void test_threads_quota_returned_by_cancels_passes_between_threads(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct run r = { .name = name };
	struct worker w[NT];
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	uint64_t ok = 0, cancelled = 0;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 30, 1000, 1), FLASH_OK);
	run_threads(&r, NT, quota_thread, w, &recs, h);
	for (int i = 0; i < NT; i++) {
		ok += w[i].ok;
		cancelled += w[i].cancelled;
	}
	assert_true(ok > 0);
	assert_int_equal(ok, cancelled);
	/* every order was cancelled and gave its unit back exactly once */
	assert_int_equal(t_available(h, 1, 30), 1000);
	assert_int_equal(t_ledger_check(h, &recs, 1, 30, 1, &lg), 0);
	assert_int_equal(lg.active_orders, 0);
	assert_int_equal(lg.cancelled_orders, ok);
	t_recs_free(&recs);
}

#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_threads_same_users_racing_each_hold_exactly_k_orders),
		T(test_threads_restocks_racing_orders_sell_every_unit_once),
		T(test_threads_quota_returned_by_cancels_passes_between_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
