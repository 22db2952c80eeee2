/*
 * test_api_quiet.c -- flash_quiet_get(): what the daemon's reconciler
 * relies on to compare the segment with the WAL only in a quiet window.
 *
 *   - a record published and not yet durable makes the segment busy
 *     (pending); marking it durable makes it quiet again (consumed grows);
 *   - every operation raises ops (by one or more: each tagged change takes
 *     a sequence number), a refused one too, so two equal readings bracket
 *     a span in which nothing began;
 *   - an operation between its begin and its end is in flight: a cancel
 *     waiting for its record's durability (a registered consumer) is seen
 *     as in flight and pending until the consumer marks it durable;
 *   - a read-only handle reads the same figures.
 */
#include <pthread.h>
#include <sched.h>

#include "helpers.h"

static struct flash_quiet quiet_of(flash_t *h)
{
	struct flash_quiet q;
	assert_int_equal(flash_quiet_get(h, &q), FLASH_OK);
	return q;
}

static void drain(flash_t *h)
{
	struct t_recs r = { 0 };
	assert_int_equal(t_recs_drain(h, &r), FLASH_OK);
	t_recs_free(&r);
}

static void test_records_pending_until_durable(void **state)
{
	(void)state;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_quiet q0 = quiet_of(h);
	assert_int_equal(q0.pending, 0);
	assert_int_equal(q0.in_flight, 0);

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 1, 1), FLASH_OK);
	struct flash_quiet q1 = quiet_of(h);
	assert_int_equal(q1.pending, 2);
	assert_int_equal(q1.in_flight, 0);
	assert_true(q1.ops >= q0.ops + 2);
	drain(h);
	struct flash_quiet q2 = quiet_of(h);
	assert_int_equal(q2.pending, 0);
	assert_int_equal(q2.consumed, q1.consumed + 2);
	assert_int_equal(q2.ops, q1.ops);

	/* an order: one more op, one more pending record */
	assert_int_equal(t_order(h, 1, 1, 7, 1, 0, 0, NULL), FLASH_OK);
	struct flash_quiet q3 = quiet_of(h);
	assert_int_equal(q3.pending, 1);
	assert_true(q3.ops > q2.ops);
	drain(h);
	/* a refused order (sold out) emits nothing but still counts as begun */
	struct flash_quiet q4 = quiet_of(h);
	assert_int_equal(t_order(h, 1, 1, 8, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	struct flash_quiet q5 = quiet_of(h);
	assert_int_equal(q5.pending, 0);
	assert_int_equal(q5.in_flight, 0);
	assert_true(q5.ops > q4.ops);
	assert_int_equal(q5.consumed, q4.consumed);

	/* a monitor's read-only handle sees the same */
	flash_t *ro;
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	struct flash_quiet qr = quiet_of(ro);
	assert_int_equal(qr.ops, q5.ops);
	assert_int_equal(qr.consumed, q5.consumed);
	assert_int_equal(qr.pending, 0);
	assert_int_equal(flash_close(ro), FLASH_OK);
	assert_int_equal(flash_quiet_get(h, NULL), FLASH_EINVAL);
	assert_int_equal(flash_quiet_get(NULL, &qr), FLASH_EINVAL);
}

struct canceller {
	const char *name;
	uint64_t    order_no;
	int         rc;
};

static void *cancel_main(void *arg)
{
	struct canceller *c = arg;
	flash_t *h;
	c->rc = flash_open(c->name, 0, &h);
	if (c->rc != FLASH_OK)
		return NULL;
	c->rc = flash_cancel(h, c->order_no, NULL);   /* waits for its record's durability */
	flash_close(h);
	return NULL;
}

static void test_cancel_waiting_for_durability_is_in_flight(void **state)
{
	(void)state;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 5, 1), FLASH_OK);
	struct flash_order_res res;
	assert_int_equal(t_order(h, 1, 1, 7, 1, 0, 0, &res), FLASH_OK);
	drain(h);
	/* h is the consumer now: units given back wait for durability */
	assert_int_equal(flash_consumer_register(h), FLASH_OK);
	struct flash_quiet before = quiet_of(h);
	assert_int_equal(before.pending + before.in_flight, 0);

	struct canceller c = { .name = name, .order_no = res.order_no };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, cancel_main, &c), 0);
	struct flash_quiet q;
	do {
		sched_yield();
		q = quiet_of(h);
	} while (q.pending == 0);
	/* the cancel is committed (its record is in the ring) and waits for
	 * the durability nobody gives it: in flight until then */
	for (int i = 0; i < 1000; i++) {
		q = quiet_of(h);
		assert_int_equal(q.in_flight, 1);
		assert_int_equal(q.pending, 1);
	}
	assert_true(q.ops > before.ops);
	assert_int_equal(t_available(h, 1, 1), 4);   /* the unit is not back yet */
	drain(h);                                     /* durable: the cancel finishes */
	pthread_join(th, NULL);
	assert_int_equal(c.rc, FLASH_OK);
	struct flash_quiet after = quiet_of(h);
	assert_int_equal(after.in_flight, 0);
	assert_int_equal(after.pending, 0);
	assert_true(after.ops >= q.ops);
	assert_int_equal(after.consumed, q.consumed + 1);
	assert_int_equal(t_available(h, 1, 1), 5);
	assert_int_equal(flash_consumer_unregister(h), FLASH_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_records_pending_until_durable, t_teardown),
		cmocka_unit_test_teardown(test_cancel_waiting_for_durability_is_in_flight, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
