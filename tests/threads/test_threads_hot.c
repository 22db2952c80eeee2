/*
 * test_threads_hot.c -- threads of one process, each with its own handle,
 * on one hot sku, one set of orders, one set of tokens, one lock.
 *
 * The same program runs in the normal build (exact outcomes under real
 * concurrency) and in the ThreadSanitizer build (tests/threads/tsan_tests.cmake),
 * where it also proves that handles share no process-local state without
 * synchronisation.  Threads never call cmocka: each fills its own result
 * block and the main thread asserts after joining.
 *
 * Each test: T threads released together by a barrier; a consumer thread
 * drains the rings meanwhile (the SPSC rings run with a live consumer).
 */
#include "helpers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 4                /* worker threads */

struct shared {
	const char *name;
	pthread_barrier_t go;
	atomic_int stop_consumer;
	/* hot sku */
	uint32_t units;
	/* cancel race */
	uint64_t orders[128];
	int norders;
	/* token race */
	uint64_t tokens[256];
	int ntokens;
	/* lock */
	atomic_int inside;
	atomic_ullong last_fence;
	int lock_rounds;
};

struct worker {
	struct shared *sh;
	int id;
	int err;                /* first unexpected result, 0 if none */
	char what[96];
	/* counts */
	int ok, sold_out, dup, cancelled, already, redeemed, bad, grants, busy;
	uint64_t units_back;
	uint64_t dup_mismatch;
	uint64_t my_orders[1024];
	uint64_t my_reqs[1024];
};

static void werr(struct worker *w, const char *what, int rc)
{
	if (w->err == 0) {
		w->err = rc ? rc : -1000;
		snprintf(w->what, sizeof w->what, "thread %d: %s: %s", w->id, what, flash_rcname(rc));
	}
}

static flash_t *wopen(struct worker *w)
{
	flash_t *h = NULL;
	int rc = flash_open(w->sh->name, 0, &h);

	if (rc != FLASH_OK) {
		werr(w, "flash_open", rc);
		return NULL;
	}
	return h;
}

/* ---- the consumer: drains every ring while the workers run --------------- */

struct consumer {
	struct shared *sh;
	struct t_recs recs;
	int rc;
};

static void *consumer_main(void *arg)
{
	struct consumer *c = arg;
	flash_t *h = NULL;

	c->rc = flash_open(c->sh->name, 0, &h);
	if (c->rc != FLASH_OK)
		return NULL;
	while (!atomic_load(&c->sh->stop_consumer)) {
		if ((c->rc = t_recs_drain(h, &c->recs)) != FLASH_OK)
			break;
		sched_yield();
	}
	if (c->rc == FLASH_OK)
		c->rc = t_recs_drain(h, &c->recs);   /* the last records */
	flash_close(h);
	return NULL;
}

static void run_threads(struct shared *sh, void *(*fn)(void *), struct worker *w,
                        struct consumer *con)
{
	pthread_t tid[NT], ctid;

	assert_int_equal(pthread_barrier_init(&sh->go, NULL, NT), 0);
	atomic_store(&sh->stop_consumer, 0);
	memset(con, 0, sizeof *con);
	con->sh = sh;
	assert_int_equal(pthread_create(&ctid, NULL, consumer_main, con), 0);
	for (int i = 0; i < NT; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].sh = sh;
		w[i].id = i;
		assert_int_equal(pthread_create(&tid[i], NULL, fn, &w[i]), 0);
	}
	for (int i = 0; i < NT; i++)
		assert_int_equal(pthread_join(tid[i], NULL), 0);
	atomic_store(&sh->stop_consumer, 1);
	assert_int_equal(pthread_join(ctid, NULL), 0);
	pthread_barrier_destroy(&sh->go);
	for (int i = 0; i < NT; i++)
		if (w[i].err)
			fail_msg("%s", w[i].what);
	if (con->rc != FLASH_OK)
		fail_msg("consumer: %s", flash_rcname(con->rc));
}

static struct flash_seg_opts *opts(void)
{
	static struct flash_seg_opts o;

	t_opts_small(&o);
	o.max_users = 4096;
	o.max_orders = 4096;
	o.max_requests = 4096;
	o.max_tokens = 512;
	o.ring_records = 256;     /* small: the consumer must keep up */
	return &o;
}

/* ---- 1. one hot sku: every unit sold exactly once ------------------------ */

static void *buyer(void *arg)
{
	struct worker *w = arg;
	flash_t *h = wopen(w);
	int n = 0;

	pthread_barrier_wait(&w->sh->go);
	if (h == NULL) {
		pthread_barrier_wait(&w->sh->go);
		return NULL;
	}
	for (;;) {
		struct flash_order_res res;
		uint64_t user = (uint64_t)(w->id + 1) << 32 | (uint64_t)n;
		uint64_t req = (uint64_t)(w->id + 1) << 40 | (uint64_t)n;
		uint64_t tok = 0;
		int rc;

		rc = flash_token_issue(h, 1, 10, user, 60000, &tok);
		if (rc != FLASH_OK) {
			werr(w, "token_issue", rc);
			break;
		}
		/* ring full (the consumer is behind): refused before the token is
		 * touched, so the same token and request id are retried */
		while ((rc = t_order(h, 1, 10, user, 1, tok, req, &res)) == FLASH_EBUSY) {
			w->busy++;
			sched_yield();
		}
		if (rc == FLASH_ESOLD_OUT) {
			w->sold_out++;
			break;
		}
		if (rc != FLASH_OK) {
			werr(w, "order", rc);
			break;
		}
		if (n >= 1024) {
			werr(w, "more orders than expected", 0);
			break;
		}
		w->my_orders[n] = res.order_no;
		w->my_reqs[n] = req;
		w->ok++;
		n++;
	}
	/* nobody cancels before everyone has met SOLD_OUT: the sale is exact */
	pthread_barrier_wait(&w->sh->go);
	/* retries of every request id: the first outcome, nothing taken twice */
	for (int i = 0; i < n; i++) {
		struct flash_order_res res;
		uint64_t user = (uint64_t)(w->id + 1) << 32 | (uint64_t)i;
		int rc = t_order(h, 1, 10, user, 1, 0, w->my_reqs[i], &res);

		if (rc != FLASH_EDUPLICATE || res.first_rc != FLASH_OK)
			werr(w, "retry", rc);
		else if (res.order_no != w->my_orders[i])
			w->dup_mismatch++;
		else
			w->dup++;
	}
	/* every other order cancelled by its buyer */
	for (int i = 0; i < n; i += 2) {
		uint32_t back = 0;
		int rc;

		while ((rc = flash_cancel(h, w->my_orders[i], &back)) == FLASH_EBUSY)
			sched_yield();
		if (rc != FLASH_OK) {
			werr(w, "cancel", rc);
			break;
		}
		w->cancelled++;
		w->units_back += back;
	}
	flash_close(h);
	return NULL;
}

static void test_threads_hot_sku_sells_every_unit_exactly_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct shared sh;
	struct worker w[NT];
	struct consumer con;
	struct t_ledger lg;
	int ok = 0, dup = 0, cancelled = 0;
	uint64_t back = 0, mism = 0;

	memset(&sh, 0, sizeof sh);
	sh.name = name;
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 600, 4), FLASH_OK);
	run_threads(&sh, buyer, w, &con);
	for (int i = 0; i < NT; i++) {
		ok += w[i].ok;
		dup += w[i].dup;
		cancelled += w[i].cancelled;
		back += w[i].units_back;
		mism += w[i].dup_mismatch;
		assert_int_equal(w[i].sold_out, 1);
	}
	/* sold out only when every unit was sold, and never a unit more */
	assert_int_equal(ok, 600);
	assert_int_equal(dup, 600);
	assert_int_equal(mism, 0);
	assert_int_equal(back, (uint64_t)cancelled);
	assert_int_equal(t_available(h, 1, 10), (uint64_t)cancelled);
	assert_int_equal(t_ledger_check(h, &con.recs, 1, 10, 1, &lg), 0);
	assert_int_equal(lg.active_orders, 600 - (uint64_t)cancelled);
	assert_int_equal(lg.cancelled_orders, (uint64_t)cancelled);
	{
		struct flash_stats st;

		/* every token issued was used by its order: none left live */
		assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
		assert_int_equal(st.tokens, 0);
	}
	t_recs_free(&con.recs);
}

/* ---- 2. every thread cancels every order: each returns its units once ---- */

static void *canceller(void *arg)
{
	struct worker *w = arg;
	flash_t *h = wopen(w);

	pthread_barrier_wait(&w->sh->go);
	if (h == NULL)
		return NULL;
	for (int k = 0; k < w->sh->norders; k++) {
		/* each thread walks the orders from a different start */
		int i = (k + w->id * 31) % w->sh->norders;
		uint32_t back = 0;
		int rc;

		while ((rc = flash_cancel(h, w->sh->orders[i], &back)) == FLASH_EBUSY)
			sched_yield();
		if (rc == FLASH_OK) {
			w->cancelled++;
			w->units_back += back;
		} else if (rc == FLASH_ECANCELLED) {
			w->already++;
			if (back != 0)
				werr(w, "ECANCELLED returned units", rc);
		} else {
			werr(w, "cancel", rc);
		}
	}
	flash_close(h);
	return NULL;
}

static void test_threads_racing_cancels_return_each_order_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct shared sh;
	struct worker w[NT];
	struct consumer con;
	struct t_ledger lg;
	struct t_recs early = { 0 };
	int cancelled = 0, already = 0;
	uint64_t back = 0, want_back = 0;

	memset(&sh, 0, sizeof sh);
	sh.name = name;
	assert_int_equal(t_activity(h, 2, 1, 3, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 20, 1000, 2), FLASH_OK);
	sh.norders = 100;
	for (int i = 0; i < sh.norders; i++) {
		struct flash_order_res res;

		assert_int_equal(t_order(h, 2, 20, 100 + (uint64_t)i, 1 + (uint32_t)(i % 3), 0, 0, &res), FLASH_OK);
		sh.orders[i] = res.order_no;
		want_back += 1 + (uint64_t)(i % 3);
	}
	assert_int_equal(t_recs_drain(h, &early), FLASH_OK);
	run_threads(&sh, canceller, w, &con);
	for (int i = 0; i < NT; i++) {
		cancelled += w[i].cancelled;
		already += w[i].already;
		back += w[i].units_back;
	}
	assert_int_equal(cancelled, 100);
	assert_int_equal(already, 100 * (NT - 1));
	assert_int_equal(back, want_back);
	assert_int_equal(t_available(h, 2, 20), 1000);
	/* the ledger wants every record: the ones made before the threads too */
	for (size_t i = 0; i < con.recs.n; i++) {
		if (early.n == early.cap) {
			early.cap = early.cap ? 2 * early.cap : 256;
			early.v = realloc(early.v, early.cap * sizeof *early.v);
			assert_non_null(early.v);
		}
		early.v[early.n++] = con.recs.v[i];
	}
	assert_int_equal(t_ledger_check(h, &early, 2, 20, 1, &lg), 0);
	assert_int_equal(lg.cancelled_orders, 100);
	assert_int_equal(lg.active_orders, 0);
	t_recs_free(&early);
	t_recs_free(&con.recs);
}

/* ---- 3. every thread redeems every token: each succeeds once ------------- */

static void *redeemer(void *arg)
{
	struct worker *w = arg;
	flash_t *h = wopen(w);

	pthread_barrier_wait(&w->sh->go);
	if (h == NULL)
		return NULL;
	for (int k = 0; k < w->sh->ntokens; k++) {
		int i = (k + w->id * 17) % w->sh->ntokens;
		int rc = flash_token_redeem(h, 3, 30, 777, w->sh->tokens[i]);

		if (rc == FLASH_OK)
			w->redeemed++;
		else if (rc == FLASH_EBAD_TOKEN)
			w->bad++;
		else
			werr(w, "redeem", rc);
	}
	flash_close(h);
	return NULL;
}

static void test_threads_racing_redeems_take_each_token_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct shared sh;
	struct worker w[NT];
	struct consumer con;
	struct flash_stats st;
	int redeemed = 0, bad = 0;

	memset(&sh, 0, sizeof sh);
	sh.name = name;
	assert_int_equal(t_activity(h, 3, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 3, 30, 10, 1), FLASH_OK);
	sh.ntokens = 200;
	for (int i = 0; i < sh.ntokens; i++)
		assert_int_equal(flash_token_issue(h, 3, 30, 777, 60000, &sh.tokens[i]), FLASH_OK);
	run_threads(&sh, redeemer, w, &con);
	for (int i = 0; i < NT; i++) {
		redeemed += w[i].redeemed;
		bad += w[i].bad;
	}
	assert_int_equal(redeemed, 200);
	assert_int_equal(bad, 200 * (NT - 1));
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.tokens, 0);
	t_recs_free(&con.recs);
}

/* ---- 4. one lock: one holder at a time, fences strictly increasing ------- */

static void *locker(void *arg)
{
	struct worker *w = arg;
	flash_t *h = wopen(w);
	uint64_t owner = 1000 + (uint64_t)w->id;

	pthread_barrier_wait(&w->sh->go);
	if (h == NULL)
		return NULL;
	for (int r = 0; r < w->sh->lock_rounds;) {
		uint64_t fence = 0, last;
		int rc = flash_lock_acquire(h, "hot-lock", owner, 60000, &fence);

		if (rc == FLASH_ELOCKED) {
			w->busy++;
			sched_yield();
			continue;
		}
		if (rc != FLASH_OK) {
			werr(w, "acquire", rc);
			break;
		}
		if (atomic_fetch_add(&w->sh->inside, 1) != 0)
			werr(w, "two holders at once", 0);
		last = atomic_load(&w->sh->last_fence);
		if (fence <= last)
			werr(w, "fence did not increase", 0);
		atomic_store(&w->sh->last_fence, fence);
		if ((r & 7) == 0 && (rc = flash_lock_renew(h, "hot-lock", owner, 60000)) != FLASH_OK)
			werr(w, "renew", rc);
		atomic_fetch_sub(&w->sh->inside, 1);
		if ((rc = flash_lock_release(h, "hot-lock", owner)) != FLASH_OK) {
			werr(w, "release", rc);
			break;
		}
		w->grants++;
		r++;
	}
	flash_close(h);
	return NULL;
}

static void test_threads_one_lock_one_holder_and_rising_fences(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(opts(), name, sizeof name);
	struct shared sh;
	struct worker w[NT];
	struct consumer con;
	struct flash_stats st;
	uint64_t fence = 0;
	int grants = 0;

	memset(&sh, 0, sizeof sh);
	sh.name = name;
	sh.lock_rounds = 150;
	run_threads(&sh, locker, w, &con);
	for (int i = 0; i < NT; i++)
		grants += w[i].grants;
	assert_int_equal(grants, NT * 150);
	assert_int_equal(flash_lock_acquire(h, "hot-lock", 1, 1000, &fence), FLASH_OK);
	assert_true(fence > (uint64_t)atomic_load(&sh.last_fence));
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.locks, 1);
	t_recs_free(&con.recs);
}

#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_threads_hot_sku_sells_every_unit_exactly_once),
		T(test_threads_racing_cancels_return_each_order_once),
		T(test_threads_racing_redeems_take_each_token_once),
		T(test_threads_one_lock_one_holder_and_rising_fences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
