/*
 * test_api_records.c -- the consumer side of the rings: drain limits and
 * early stop, per-slot seqs, ring space freed only by flash_durable_advance,
 * redelivery of unadvanced records to a new consumer, and the causal order
 * of a drain across rings.
 */
#include "helpers.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

static flash_t *setup(char *name, size_t len, uint32_t ring)
{
	struct flash_seg_opts o;
	flash_t *h;

	t_opts_small(&o);
	o.ring_records = ring;
	h = t_seg_new(&o, name, len);
	assert_int_equal(t_activity(h, 1, FLASH_LIMIT_MAX, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1000, 1), FLASH_OK);
	return h;
}

struct stop_after {
	int calls, stop_at;
	uint64_t seqs[64];
};

static int stop_fn(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct stop_after *s = arg;

	s->seqs[s->calls++] = seq;
	return s->calls == s->stop_at;
}

static void test_drain_honours_max_and_an_early_stop_and_consumes_the_stopping_record(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 64);
	struct stop_after s;
	uint32_t n = 0;

	for (uint64_t u = 1; u <= 5; u++)
		assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	/* 7 records: activity, sku, 5 orders */
	memset(&s, 0, sizeof s);
	s.stop_at = 100;
	assert_int_equal(flash_ring_drain(h, stop_fn, &s, 2, &n), FLASH_OK);
	assert_int_equal(n, 2);
	assert_int_equal(s.calls, 2);
	assert_int_equal(s.seqs[0], 1);
	assert_int_equal(s.seqs[1], 2);
	memset(&s, 0, sizeof s);
	s.stop_at = 1;
	assert_int_equal(flash_ring_drain(h, stop_fn, &s, 100, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_int_equal(s.seqs[0], 3);
	memset(&s, 0, sizeof s);
	s.stop_at = 100;
	assert_int_equal(flash_ring_drain(h, stop_fn, &s, 100, &n), FLASH_OK);
	assert_int_equal(n, 4);
	assert_int_equal(s.seqs[0], 4);
	assert_int_equal(s.seqs[3], 7);
	assert_int_equal(flash_ring_drain(h, stop_fn, &s, 100, &n), FLASH_OK);
	assert_int_equal(n, 0);
}

static void test_drain_rejects_bad_arguments(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 64);
	struct stop_after s;
	uint32_t n = 0;

	memset(&s, 0, sizeof s);
	assert_int_equal(flash_ring_drain(NULL, stop_fn, &s, 10, &n), FLASH_EINVAL);
	assert_int_equal(flash_ring_drain(h, NULL, &s, 10, &n), FLASH_EINVAL);
	assert_int_equal(s.calls, 0);
	/* nothing was consumed by the refusals */
	s.stop_at = 100;
	assert_int_equal(flash_ring_drain(h, stop_fn, &s, 10, NULL), FLASH_OK);
	assert_int_equal(s.calls, 2);
}

static void test_ring_space_returns_only_when_records_are_advanced(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 16);
	struct t_recs recs = { 0 };
	struct t_snap before;
	uint64_t u = 1, last_seq = 0;
	int slot = flash_slot(h);

	while (t_order(h, 1, 10, u, 1, 0, 0, NULL) == FLASH_OK)
		assert_true(++u < 40);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_EBUSY);
	/* drained but not advanced: still full */
	assert_int_equal(t_recs_drain_keep(h, &recs), FLASH_OK);
	assert_true(recs.n >= 3);
	assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_EBUSY);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* advancing the first record frees exactly one place */
	assert_int_equal(flash_durable_advance(h, (uint32_t)slot, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, u++, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_EBUSY);
	for (size_t i = 0; i < recs.n; i++)
		last_seq = recs.v[i].seq;
	assert_int_equal(flash_durable_advance(h, (uint32_t)slot, last_seq), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	t_recs_free(&recs);
}

static void test_new_consumer_is_handed_every_record_not_yet_advanced(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 64);
	flash_t *c2 = NULL, *c3 = NULL;
	struct t_recs first = { 0 }, second = { 0 }, third = { 0 };
	int slot = flash_slot(h);

	for (uint64_t u = 1; u <= 3; u++)
		assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain_keep(h, &first), FLASH_OK);
	assert_int_equal(first.n, 5);
	/* the first consumer marks two records durable, then goes away */
	assert_int_equal(flash_durable_advance(h, (uint32_t)slot, 2), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &c2), FLASH_OK);
	t_track_handle(c2);
	assert_int_equal(t_recs_drain_keep(c2, &second), FLASH_OK);
	assert_int_equal(second.n, 3);
	for (size_t i = 0; i < second.n; i++) {
		assert_int_equal(second.v[i].seq, first.v[i + 2].seq);
		assert_memory_equal(&second.v[i].r, &first.v[i + 2].r, sizeof(struct flash_record));
	}
	assert_int_equal(flash_durable_advance(c2, (uint32_t)slot, 5), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &c3), FLASH_OK);
	t_track_handle(c3);
	assert_int_equal(t_recs_drain_keep(c3, &third), FLASH_OK);
	assert_int_equal(third.n, 0);
	t_recs_free(&first);
	t_recs_free(&second);
	t_recs_free(&third);
}

/*
 * Room comes back at the write (flash_ring_release), durability later: a
 * slow disk lets the released records run more than a ring ahead of the
 * durable mark.  A new consumer must still start after the released ones
 * -- their slots hold newer records by then -- and never be handed a
 * released record again.
 */
static void test_new_consumer_starts_after_records_released_a_ring_ahead_of_durable(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 16);
	struct t_recs recs = { 0 };
	flash_t *c2 = NULL;
	uint64_t taken = 0, durable = 0, start = 0;
	int slot = flash_slot(h);

	(void)state;
	for (uint64_t u = 1; u <= 40; u++) {
		int rc;
		while ((rc = t_order(h, 1, 10, u, 1, 0, 0, NULL)) == FLASH_EBUSY) {
			/* the consumer writes what it drained and frees it, no sync */
			assert_int_equal(t_recs_drain_keep(h, &recs), FLASH_OK);
			assert_true(recs.n > 0);
			taken = recs.v[recs.n - 1].seq;
			assert_int_equal(flash_ring_release(h, (uint32_t)slot, taken), FLASH_OK);
		}
		assert_int_equal(rc, FLASH_OK);
	}
	assert_int_equal(flash_ring_taken(h, (uint32_t)slot, &durable, &start), FLASH_OK);
	assert_true(taken - durable > 16);   /* more than a ring ahead of the durable mark */
	assert_int_equal(start, taken);      /* where a new consumer starts */
	assert_int_equal(flash_open(name, 0, &c2), FLASH_OK);
	t_track_handle(c2);
	struct t_recs second = { 0 };
	assert_int_equal(t_recs_drain_keep(c2, &second), FLASH_OK);
	for (size_t i = 0; i < second.n; i++)
		assert_true(second.v[i].seq > taken);
	t_recs_free(&recs);
	t_recs_free(&second);
}

/* ---- causality across rings ---------------------------------------------- */

struct canceller {
	const char *seg;
	uint64_t order_no;           /* 0 until the order is placed */
	int ready, done, rc;
	int slot;
};

static void *cancel_thread(void *arg)
{
	struct canceller *c = arg;
	flash_t *h;

	if (flash_open(c->seg, 0, &h) != FLASH_OK) {
		__atomic_store_n(&c->rc, -1000, __ATOMIC_RELEASE);
		__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	c->slot = flash_slot(h);
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&c->order_no, __ATOMIC_ACQUIRE) == 0)
		sched_yield();
	c->rc = flash_cancel(h, c->order_no, NULL);
	flash_close(h);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A cancel made through another handle than the order's must not reach the
 * consumer before the order does, although the canceller's ring comes first
 * here.  Async durability, a consumer that drains slowly while the
 * canceller runs on its own thread.
 */
static void test_cancel_through_another_ring_never_precedes_its_order(void **state)
{
	(void)state;
	for (int round = 0; round < 5; round++) {
		char name[64];
		flash_t *c = setup(name, sizeof name, 64);   /* slot 0: the consumer */
		struct canceller cc = { .seg = name };
		struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 7, .qty = 1 };
		struct flash_order_res res;
		struct t_recs seen = { 0 };
		struct timespec pause = { 0, 20 * 1000 * 1000 };
		pthread_t th;
		flash_t *a;
		size_t i_order = SIZE_MAX, i_cancel = SIZE_MAX;

		assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);    /* the catalog */
		t_recs_free(&seen);
		assert_int_equal(pthread_create(&th, NULL, cancel_thread, &cc), 0);
		while (!__atomic_load_n(&cc.ready, __ATOMIC_ACQUIRE))
			sched_yield();
		assert_int_equal(flash_open(name, 0, &a), FLASH_OK);   /* a later slot */
		t_track_handle(a);
		assert_true(cc.slot >= 0 && cc.slot < flash_slot(a));
		assert_int_equal(flash_order(a, &r, &res), FLASH_OK);
		__atomic_store_n(&cc.order_no, res.order_no, __ATOMIC_RELEASE);
		/* give the canceller every chance to publish before the first drain */
		for (int k = 0; k < 5 && !__atomic_load_n(&cc.done, __ATOMIC_ACQUIRE); k++)
			nanosleep(&pause, NULL);
		for (;;) {
			int done = __atomic_load_n(&cc.done, __ATOMIC_ACQUIRE);

			assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);
			if (done)
				break;
			nanosleep(&pause, NULL);
		}
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(cc.rc, FLASH_OK);
		assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);
		for (size_t i = 0; i < seen.n; i++) {
			if (seen.v[i].r.type == FLASH_REC_ORDER && seen.v[i].r.order_no == res.order_no)
				i_order = i;
			if (seen.v[i].r.type == FLASH_REC_CANCEL && seen.v[i].r.order_no == res.order_no)
				i_cancel = i;
		}
		assert_true(i_order != SIZE_MAX);
		assert_true(i_cancel != SIZE_MAX);
		assert_true(i_order < i_cancel);
		t_recs_free(&seen);
		t_teardown(NULL);
	}
}

/* One unit for @p user; its order number in *ono (when not NULL). */
static int order1(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint64_t *ono)
{
	struct flash_order_res res;
	int rc = t_order(h, act, sku, user, 1, 0, 0, &res);

	if (ono)
		*ono = rc == FLASH_OK ? res.order_no : 0;
	return rc;
}

/* Drain what @p c's segment holds so far, then open two more handles:
 * *first gets the lower slot (its ring is drained first slot by slot). */
static void two_handles(flash_t *c, const char *name, flash_t **first, flash_t **second)
{
	struct t_recs seen = { 0 };

	assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);
	t_recs_free(&seen);
	assert_int_equal(flash_open(name, 0, first), FLASH_OK);
	t_track_handle(*first);
	assert_int_equal(flash_open(name, 0, second), FLASH_OK);
	t_track_handle(*second);
	assert_true(flash_slot(*first) < flash_slot(*second));
}

/* Where in @p r is the first record of @p type (for @p order_no, unless 0)? */
static size_t rec_index(const struct t_recs *r, uint16_t type, uint64_t order_no)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].r.type == type && (order_no == 0 || r->v[i].r.order_no == order_no))
			return i;
	return SIZE_MAX;
}

/*
 * With no consumer running, records pile up in the rings and the next drain
 * must still hand them out in the order their effects were seen.  Here the
 * order sits in the later ring and its cancel in the earlier one.
 */
static void test_drain_puts_a_cancel_after_its_order_in_a_later_ring(void **state)
{
	char name[64];
	flash_t *c = setup(name, sizeof name, 64), *canceller, *buyer;
	struct t_recs seen = { 0 };
	uint64_t ono;

	(void)state;
	two_handles(c, name, &canceller, &buyer);
	assert_int_equal(order1(buyer, 1, 10, 7, &ono), FLASH_OK);
	assert_int_equal(flash_cancel(canceller, ono, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);
	assert_int_equal(seen.n, 2);
	assert_int_equal(rec_index(&seen, FLASH_REC_ORDER, ono), 0);
	assert_int_equal(rec_index(&seen, FLASH_REC_CANCEL, ono), 1);
	t_recs_free(&seen);
}

/*
 * A cancel that gives back the unit and the limit slot, then a new order by
 * the same user taking both: the new order sits in the earlier ring behind
 * the first one, the cancel in a later ring.  ORDER, CANCEL, ORDER -- any
 * other order makes MySQL refuse the second order (unique limit slot) and
 * would sell a unit that was not there.
 */
static void test_drain_puts_an_order_after_the_cancel_that_freed_its_slot_and_unit(void **state)
{
	char name[64];
	flash_t *c = setup(name, sizeof name, 64), *buyer, *canceller;
	struct t_recs seen = { 0 };
	uint64_t o1, o2;

	(void)state;
	assert_int_equal(t_activity(c, 2, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	assert_int_equal(flash_sku_add(c, 2, 20, 1, 1), FLASH_OK);   /* one unit */
	two_handles(c, name, &buyer, &canceller);
	assert_int_equal(order1(buyer, 2, 20, 9, &o1), FLASH_OK);
	assert_int_equal(order1(buyer, 2, 20, 9, NULL), FLASH_ELIMIT);
	assert_int_equal(flash_cancel(canceller, o1, NULL), FLASH_OK);
	assert_int_equal(order1(buyer, 2, 20, 9, &o2), FLASH_OK);
	assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);
	assert_int_equal(seen.n, 3);
	assert_int_equal(rec_index(&seen, FLASH_REC_ORDER, o1), 0);
	assert_int_equal(rec_index(&seen, FLASH_REC_CANCEL, o1), 1);
	assert_int_equal(rec_index(&seen, FLASH_REC_ORDER, o2), 2);
	t_recs_free(&seen);
}

/* A buyer in an earlier ring orders a sku a later handle just added: the
 * activity and the sku come first. */
static void test_drain_puts_the_catalog_before_orders_for_it(void **state)
{
	char name[64];
	flash_t *c = setup(name, sizeof name, 64), *buyer, *loader;
	struct t_recs seen = { 0 };
	uint64_t ono;

	(void)state;
	two_handles(c, name, &buyer, &loader);
	assert_int_equal(t_activity(loader, 3, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(loader, 3, 30, 5, 1), FLASH_OK);
	assert_int_equal(order1(buyer, 3, 30, 4, &ono), FLASH_OK);
	assert_int_equal(flash_restock(loader, 3, 30, 2), FLASH_OK);
	assert_int_equal(order1(buyer, 3, 30, 5, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(c, &seen), FLASH_OK);
	assert_int_equal(seen.n, 5);
	assert_int_equal(rec_index(&seen, FLASH_REC_ACTIVITY, 0), 0);
	assert_int_equal(rec_index(&seen, FLASH_REC_SKU, 0), 1);
	assert_int_equal(rec_index(&seen, FLASH_REC_ORDER, ono), 2);
	assert_int_equal(rec_index(&seen, FLASH_REC_RESTOCK, 0), 3);
	assert_int_equal(seen.v[4].r.type, FLASH_REC_ORDER);
	t_recs_free(&seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_drain_honours_max_and_an_early_stop_and_consumes_the_stopping_record),
		T(test_drain_rejects_bad_arguments),
		T(test_ring_space_returns_only_when_records_are_advanced),
		T(test_new_consumer_is_handed_every_record_not_yet_advanced),
		T(test_new_consumer_starts_after_records_released_a_ring_ahead_of_durable),
		T(test_cancel_through_another_ring_never_precedes_its_order),
		T(test_drain_puts_a_cancel_after_its_order_in_a_later_ring),
		T(test_drain_puts_an_order_after_the_cancel_that_freed_its_slot_and_unit),
		T(test_drain_puts_the_catalog_before_orders_for_it),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
