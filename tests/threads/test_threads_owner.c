/*
 * test_threads_owner.c -- the thread rule: a handle belongs to the thread that
 * opened it.  Every call made on it from another thread returns
 * FLASH_EWRONG_THREAD, writes no output parameter and changes nothing in the
 * segment; flash_close() is the one call any thread of the process may make.
 *
 * The calls from the other thread are real requests that would change the
 * segment if they ran (a live token, the held lock, the active order, a
 * pending record, a restock to replay), so "nothing changed" is a test of the
 * check, not of harmless arguments.  Threads never call cmocka: the other
 * thread counts its failures and prints each; the main thread asserts.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"   /* struct fs_hdr: the sticky WAL failure flag */

#define SENTINEL 0xa5

struct wrong {
	flash_t *h;          /* writable handle of the main thread */
	flash_t *ro;         /* read-only handle of the main thread */
	uint64_t order_no;   /* an active order of h */
	uint64_t token;      /* a live token for (1, 10, user 5) */
	uint32_t slot;       /* h's slot ... */
	uint64_t seq;        /* ... and the seq of a record pending in its ring */
	int fails;
	int drained_calls;   /* records handed to the drain callback */
};

static int drain_count(void *arg, const struct flash_record *rec, uint64_t seq)
{
	(void)rec;
	(void)seq;
	((struct wrong *)arg)->drained_calls++;
	return 0;
}

/* 1 when every byte of @p p is SENTINEL: the call wrote no output */
static int untouched(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != SENTINEL)
			return 0;
	return 1;
}

#define EXPECT_WT(call) do { \
		int rc_ = (call); \
		if (rc_ != FLASH_EWRONG_THREAD) { \
			fprintf(stderr, "other thread: %s gave %s, not FLASH_EWRONG_THREAD\n", \
			        #call, flash_rcname(rc_)); \
			w->fails++; \
		} \
	} while (0)

#define EXPECT_UNTOUCHED(var) do { \
		if (!untouched(&(var), sizeof(var))) { \
			fprintf(stderr, "other thread: %s was written\n", #var); \
			w->fails++; \
		} \
	} while (0)

/* Every public call that takes a handle, on the main thread's handles. */
static void *wrong_thread_main(void *arg)
{
	struct wrong *w = arg;
	flash_t *h = w->h;
	struct flash_activity a = { .id = 2, .limit_per_user = 1, .max_qty = 1,
	                            .start_ns = 1, .end_ns = INT64_MAX };
	struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 9, .qty = 1 };
	struct flash_order_res res;
	struct flash_seg_opts so;
	struct flash_sku_info si;
	struct flash_activity ai;
	struct flash_order_info oi;
	struct flash_stats st;
	struct flash_quiet q;
	struct flash_durability_info du;
	struct flash_record rec;
	const void *img;
	uint64_t len, tok, fence;
	uint32_t n, units, marked;

	memset(&res, SENTINEL, sizeof res);
	memset(&marked, SENTINEL, sizeof marked);
	memset(&so, SENTINEL, sizeof so);
	memset(&si, SENTINEL, sizeof si);
	memset(&ai, SENTINEL, sizeof ai);
	memset(&oi, SENTINEL, sizeof oi);
	memset(&st, SENTINEL, sizeof st);
	memset(&q, SENTINEL, sizeof q);
	memset(&du, SENTINEL, sizeof du);
	memset(&img, SENTINEL, sizeof img);
	memset(&len, SENTINEL, sizeof len);
	memset(&tok, SENTINEL, sizeof tok);
	memset(&fence, SENTINEL, sizeof fence);
	memset(&n, SENTINEL, sizeof n);
	memset(&units, SENTINEL, sizeof units);
	memset(&rec, 0, sizeof rec);
	rec.type = FLASH_REC_RESTOCK;
	rec.activity_id = 1;
	rec.sku_id = 10;
	rec.value = 5;

	/* 3. Handles */
	EXPECT_WT(flash_recover(h, &n));
	EXPECT_WT(flash_slot(h));
	EXPECT_WT(flash_seg_opts_get(h, &so));
	EXPECT_WT(flash_image(h, &img, &len));
	/* 4. Catalog */
	EXPECT_WT(flash_activity_add(h, &a));
	EXPECT_WT(flash_sku_add(h, 1, 12, 5, 1));
	/* 5. Orders */
	EXPECT_WT(flash_order(h, &r, &res));
	EXPECT_WT(flash_cancel(h, w->order_no, &units));
	EXPECT_WT(flash_restock(h, 1, 10, 5));
	/* 6. Tokens */
	EXPECT_WT(flash_token_issue(h, 1, 10, 5, 60000, &tok));
	EXPECT_WT(flash_token_redeem(h, 1, 10, 5, w->token));
	/* 7. Leased locks: "l" is held by owner 1 */
	EXPECT_WT(flash_lock_acquire(h, "m", 3, 60000, &fence));
	EXPECT_WT(flash_lock_renew(h, "l", 1, 60000));
	EXPECT_WT(flash_lock_release(h, "l", 1));
	/* 8. Reading state */
	EXPECT_WT(flash_sku_get(h, 1, 10, &si));
	EXPECT_WT(flash_activity_at(h, 0, &ai));
	EXPECT_WT(flash_sku_at(h, 0, &si));
	EXPECT_WT(flash_order_get(h, w->order_no, &oi));
	if (flash_orders_max(h) != 0) {
		fprintf(stderr, "other thread: flash_orders_max(h) was not 0\n");
		w->fails++;
	}
	EXPECT_WT(flash_stats_get(h, &st));
	/* 9. Records: h's ring holds records not yet drained */
	EXPECT_WT(flash_ring_drain(h, drain_count, w, 100, &n));
	EXPECT_WT(flash_durable_advance(h, w->slot, w->seq));
	EXPECT_WT(flash_durability_fail(h));
	EXPECT_WT(flash_durability_fail_why(h, FLASH_WAL_STEP_SYNC, 5));
	EXPECT_WT(flash_durability_get(h, &du));
	EXPECT_WT(flash_durability_clear(h));
	EXPECT_WT(flash_quiet_get(h, &q));
	EXPECT_WT(flash_replay(h, &rec));

	/* a read-only handle keeps the rule too, and the thread check comes
	 * before the read-only one */
	EXPECT_WT(flash_sku_get(w->ro, 1, 10, &si));
	EXPECT_WT(flash_stats_get(w->ro, &st));
	EXPECT_WT(flash_quiet_get(w->ro, &q));
	EXPECT_WT(flash_durability_get(w->ro, &du));
	EXPECT_WT(flash_destroyed_get(w->ro, &marked));
	EXPECT_WT(flash_order_get(w->ro, w->order_no, &oi));
	EXPECT_WT(flash_slot(w->ro));
	EXPECT_WT(flash_order(w->ro, &r, &res));
	EXPECT_WT(flash_ring_drain(w->ro, drain_count, w, 100, &n));

	EXPECT_UNTOUCHED(res);
	EXPECT_UNTOUCHED(so);
	EXPECT_UNTOUCHED(si);
	EXPECT_UNTOUCHED(ai);
	EXPECT_UNTOUCHED(oi);
	EXPECT_UNTOUCHED(st);
	EXPECT_UNTOUCHED(q);
	EXPECT_UNTOUCHED(du);
	EXPECT_UNTOUCHED(img);
	EXPECT_UNTOUCHED(len);
	EXPECT_UNTOUCHED(tok);
	EXPECT_UNTOUCHED(fence);
	EXPECT_UNTOUCHED(units);
	EXPECT_UNTOUCHED(marked);
	/* the two counts are set to 0 before any check (flashstock.h: "may be
	 * NULL"), so they say "nothing done" rather than stay untouched */
	if (n != 0) {
		fprintf(stderr, "other thread: a recovered/drained count is %u, not 0\n", n);
		w->fails++;
	}
	return NULL;
}

static void test_every_call_from_another_thread_gives_ewrong_thread_and_changes_nothing(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	struct flash_order_res res;
	struct flash_order_info oi0, oi1;
	struct flash_quiet q0, q1;
	struct t_snap before;
	struct wrong w;
	pthread_t th;
	flash_t *h, *ro;
	const void *base;
	uint64_t len, tok = 0, fence = 0, fence2 = 0;
	uint32_t units = 0;

	(void)state;
	t_opts_small(&o);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 4, 2, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 50, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(flash_token_issue(h, 1, 10, 5, 60000, &tok), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "l", 1, 60000, &fence), FLASH_OK);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	t_track_handle(ro);
	assert_int_equal(flash_image(h, &base, &len), FLASH_OK);

	t_snap_take(h, &before);
	assert_int_equal(flash_quiet_get(h, &q0), FLASH_OK);
	assert_int_equal(q0.pending, 4);   /* activity, 2 skus, order: none drained */
	assert_int_equal(flash_order_get(h, res.order_no, &oi0), FLASH_OK);

	memset(&w, 0, sizeof w);
	w.h = h;
	w.ro = ro;
	w.order_no = res.order_no;
	w.token = tok;
	w.slot = (uint32_t)flash_slot(h);
	w.seq = q0.consumed + 1;   /* only h's slot has made records */
	assert_int_equal(pthread_create(&th, NULL, wrong_thread_main, &w), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.fails, 0);
	assert_int_equal(w.drained_calls, 0);

	/* nothing changed: stock, orders, fill levels, counters, rings */
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_quiet_get(h, &q1), FLASH_OK);
	assert_memory_equal(&q0, &q1, sizeof q0);
	assert_int_equal(flash_order_get(h, res.order_no, &oi1), FLASH_OK);
	assert_memory_equal(&oi0, &oi1, sizeof oi0);
	assert_int_equal(oi1.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(((const struct fs_hdr *)base)->durability_failed, 0);

	/* and the owner goes on: the token is still live, the lock still held
	 * by owner 1 under the same grant, the order still cancellable */
	assert_int_equal(flash_lock_acquire(h, "l", 2, 60000, &fence2), FLASH_ELOCKED);
	assert_int_equal(flash_lock_renew(h, "l", 1, 60000), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "l", 1), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "l", 2, 60000, &fence2), FLASH_OK);
	assert_true(fence2 > fence);
	assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_OK);
	assert_int_equal(units, 1);
	assert_int_equal(t_available(h, 1, 10), 99);
	assert_int_equal(t_available(h, 1, 11), 50);
}

/* ---- a handle whose owner thread ended ---------------------------------- */

struct ender {
	const char *name;
	flash_t *h;
	int rc;
};

static void *open_order_and_end(void *arg)
{
	struct ender *e = arg;

	e->rc = flash_open(e->name, 0, &e->h);
	if (e->rc == FLASH_OK)
		e->rc = t_order(e->h, 1, 10, 7, 1, 0, 0, NULL);
	return NULL;   /* ends without closing its handle */
}

static void *order_on(void *arg)
{
	struct ender *e = arg;

	e->rc = t_order(e->h, 1, 10, 8, 1, 0, 0, NULL);
	return NULL;
}

/*
 * A thread that ended leaves its handle to nobody: a thread created after it
 * (glibc may give it the same pthread_t and stack) is refused like any other,
 * and another thread of the process may still close it to free its slot.
 */
static void test_handle_of_an_ended_thread_is_refused_elsewhere_and_closable_by_any_thread(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct ender e = { .name = name };
	struct flash_stats st;
	pthread_t th;

	(void)state;
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(pthread_create(&th, NULL, open_order_and_end, &e), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(e.rc, FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 9);

	assert_int_equal(pthread_create(&th, NULL, order_on, &e), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(e.rc, FLASH_EWRONG_THREAD);
	assert_int_equal(t_order(e.h, 1, 10, 8, 1, 0, 0, NULL), FLASH_EWRONG_THREAD);
	assert_int_equal(t_available(h, 1, 10), 9);

	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 2);
	assert_int_equal(flash_close(e.h), FLASH_OK);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 1);
	assert_int_equal(t_order(h, 1, 10, 8, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_every_call_from_another_thread_gives_ewrong_thread_and_changes_nothing),
		T(test_handle_of_an_ended_thread_is_refused_elsewhere_and_closable_by_any_thread),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
