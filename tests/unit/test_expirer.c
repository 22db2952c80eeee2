/*
 * test_expirer.c -- the daemon's reservation expirer (persist/daemon/
 * expirer.h) in process: the reservations it finds in the order table at
 * its start and those the drain hands it (expirer_note) are expired after
 * their pay-by time, once each; one confirmed or cancelled meanwhile is
 * left as it is; its figures count each.  No timing is judged here (the
 * lag is bench/'s): a wait is bounded only so a failure cannot hang.
 */
#include "helpers.h"
#include "expirer.h"

#include <string.h>

#define ACT 1
#define SKU 10
#define WAIT_MS 10000

static uint64_t reserve(flash_t *h, uint64_t user, uint32_t ms)
{
	struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .user_id = user, .qty = 1,
	                             .reserve_ms = ms };
	struct flash_order_res res;

	assert_int_equal(flash_order(h, &r, &res), FLASH_OK);
	return res.order_no;
}

static uint32_t state_of(flash_t *h, uint64_t no)
{
	struct flash_order_info oi;

	assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
	return oi.state;
}

/* Wait until the expirer has expired @p n in all. */
static void wait_expired(expirer_t *x, uint64_t n)
{
	struct expirer_stats st;
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;

	for (expirer_stats_get(x, &st); st.expired < n; expirer_stats_get(x, &st)) {
		if (t_now_ns() > end)
			fail_msg("the expirer expired %llu of %llu within %d ms (pending %llu, failures %llu)",
			         (unsigned long long)st.expired, (unsigned long long)n, WAIT_MS,
			         (unsigned long long)st.pending, (unsigned long long)st.failures);
		t_sleep_ms(5);
	}
}

static void test_the_expirer_expires_what_it_finds_and_what_it_is_handed(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_recs recs = { 0 };
	struct expirer_stats st;
	uint64_t found[10], handed[5], paid, cancelled;
	expirer_t *x = NULL;

	(void)state;
	assert_int_equal(t_activity(h, ACT, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	assert_int_equal(flash_sku_add(h, ACT, SKU, 100, 2), FLASH_OK);
	for (int i = 0; i < 10; i++)
		found[i] = reserve(h, 100 + (uint64_t)i, 50);
	paid = reserve(h, 200, 50);
	cancelled = reserve(h, 201, 50);
	assert_int_equal(flash_confirm(h, paid), FLASH_OK);
	assert_int_equal(flash_cancel(h, cancelled, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);     /* the rings stay free */
	struct expirer_opts o = { .segment = name, .every_ms = 5 };
	assert_int_equal(expirer_start(&o, &x), FLASH_OK);
	wait_expired(x, 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(state_of(h, found[i]), FLASH_ORDER_EXPIRED);
	assert_int_equal(state_of(h, paid), FLASH_ORDER_ACTIVE);
	assert_int_equal(state_of(h, cancelled), FLASH_ORDER_CANCELLED);
	assert_int_equal(t_available(h, ACT, SKU), 99);
	/* made after its start: the drain hands them over */
	size_t from = recs.n;
	for (int i = 0; i < 5; i++)
		handed[i] = reserve(h, 300 + (uint64_t)i, 30);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = from; i < recs.n; i++)
		expirer_note(x, &recs.v[i].r);
	wait_expired(x, 15);
	for (int i = 0; i < 5; i++)
		assert_int_equal(state_of(h, handed[i]), FLASH_ORDER_EXPIRED);
	expirer_stats_get(x, &st);
	assert_int_equal(st.expired, 15);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.failures, 0);
	assert_int_equal(st.lag_count, 15);
	uint64_t in_hist = 0;
	for (int b = 0; b < EXPIRER_LAG_BUCKETS; b++)
		in_hist += st.lag_hist[b];
	assert_int_equal(in_hist, 15);
	assert_true(st.lag_ns_sum >= st.lag_ns_max);
	expirer_stop(x);
	/* every expiry once, in the records too */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	struct t_ledger lg;
	assert_int_equal(t_ledger_check(h, &recs, ACT, SKU, 1, &lg), 0);
	assert_int_equal(lg.expired_orders, 15);
	assert_int_equal(lg.reserved_orders, 0);
	t_recs_free(&recs);
}

/* A reservation handed over twice (the drain and the start's read may both
 * see one) is expired once; the second is counted as settled. */
static void test_a_reservation_noted_twice_is_expired_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_recs recs = { 0 };
	struct expirer_stats st;
	expirer_t *x = NULL;

	(void)state;
	assert_int_equal(t_activity(h, ACT, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, ACT, SKU, 10, 1), FLASH_OK);
	struct expirer_opts o = { .segment = name, .every_ms = 5 };
	uint64_t no = reserve(h, 7, 40);
	assert_int_equal(expirer_start(&o, &x), FLASH_OK);       /* finds it */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		expirer_note(x, &recs.v[i].r);                  /* and is handed it */
	wait_expired(x, 1);
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;
	for (expirer_stats_get(x, &st); st.pending > 0 && t_now_ns() < end; expirer_stats_get(x, &st))
		t_sleep_ms(5);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.settled, 1);
	assert_int_equal(st.pending, 0);
	assert_int_equal(state_of(h, no), FLASH_ORDER_EXPIRED);
	expirer_stop(x);
	t_recs_free(&recs);
}

/* A cart (flash_cart_order) is one reservation: the drain hands the
 * expirer one ORDER record per line, and only line 0 is noted -- its later
 * lines would be the same order again.  (Records as the engine writes a
 * cart's; its pay-by time an hour away, so the heap keeps what it notes.) */
static void test_a_cart_is_noted_once_by_its_line_0(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct expirer_stats st;
	expirer_t *x = NULL;

	(void)state;
	(void)h;
	struct expirer_opts o = { .segment = name, .every_ms = 5 };
	assert_int_equal(expirer_start(&o, &x), FLASH_OK);       /* an empty table */
	struct flash_record r = { .type = FLASH_REC_ORDER, .activity_id = ACT, .sku_id = SKU, .qty = 1,
	                          .order_no = 77, .user_id = 7, .limit_slot = 1,
	                          .value = t_now_ns() + 3600 * 1000000000ll };
	for (unsigned i = 1; i < 3; i++) {
		r.flags = (uint16_t)(FLASH_REC_F_CART | FLASH_REC_F_LINE(i) | (i == 2 ? FLASH_REC_F_LAST : 0));
		expirer_note(x, &r);
	}
	expirer_stats_get(x, &st);
	assert_int_equal(st.pending, 0);
	r.flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(0);
	expirer_note(x, &r);
	expirer_stats_get(x, &st);
	assert_int_equal(st.pending, 1);
	r.order_no = 78;                                        /* a plain one: as before */
	r.flags = 0;
	expirer_note(x, &r);
	expirer_stats_get(x, &st);
	assert_int_equal(st.pending, 2);
	expirer_stop(x);
}

/* A reserved cart found in the order table at the expirer's start is one
 * reservation: its later lines' slots read as lines of it (line != 0) and
 * are not taken for reservations of their own; it is expired once, every
 * line's units back. */
static void test_a_reserved_cart_in_the_table_is_expired_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_recs recs = { 0 };
	struct expirer_stats st;
	expirer_t *x = NULL;

	(void)state;
	assert_int_equal(t_activity(h, ACT, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	for (uint32_t s = 0; s < 3; s++)
		assert_int_equal(flash_sku_add(h, ACT, SKU + s, 10, 1), FLASH_OK);
	struct flash_cart_req c = { .activity_id = ACT, .lines = 3, .user_id = 7, .reserve_ms = 40 };
	for (uint32_t s = 0; s < 3; s++) {
		c.line[s].sku_id = SKU + s;
		c.line[s].qty = 1;
	}
	struct flash_cart_res res;
	assert_int_equal(flash_cart_order(h, &c, &res), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	struct expirer_opts o = { .segment = name, .every_ms = 5 };
	assert_int_equal(expirer_start(&o, &x), FLASH_OK);       /* finds it */
	wait_expired(x, 1);
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;
	for (expirer_stats_get(x, &st); st.pending > 0 && t_now_ns() < end; expirer_stats_get(x, &st))
		t_sleep_ms(5);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.settled, 0);
	assert_int_equal(st.failures, 0);
	assert_int_equal(state_of(h, res.order_no), FLASH_ORDER_EXPIRED);
	for (uint32_t s = 0; s < 3; s++)
		assert_int_equal(t_available(h, ACT, SKU + s), 10);
	expirer_stop(x);
	t_recs_free(&recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_the_expirer_expires_what_it_finds_and_what_it_is_handed, t_teardown),
		cmocka_unit_test_teardown(test_a_reservation_noted_twice_is_expired_once, t_teardown),
		cmocka_unit_test_teardown(test_a_cart_is_noted_once_by_its_line_0, t_teardown),
		cmocka_unit_test_teardown(test_a_reserved_cart_in_the_table_is_expired_once, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
