/*
 * test_api_requests.c -- request ids: a retry returns the first outcome
 * (FLASH_EDUPLICATE with first_rc and order_no) and takes nothing twice,
 * whatever that first outcome was; a full request table.
 */
#include "helpers.h"

#include <string.h>

#define SEC 1000000000LL

static flash_t *setup(char *name, size_t len, const struct flash_seg_opts *o, uint32_t k,
                      uint64_t units)
{
	flash_t *h = t_seg_new(o, name, len);

	assert_int_equal(t_activity(h, 1, k, 3, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, units, 1), FLASH_OK);
	return h;
}

static void test_retry_of_a_success_returns_eduplicate_with_the_same_order(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, NULL, 5, 10);
	struct flash_order_res first, again;
	struct t_snap before;
	struct flash_stats st;
	struct t_recs recs = { 0 };
	size_t norders = 0;

	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, 0xabc, &first), FLASH_OK);
	t_snap_take(h, &before);
	for (int i = 0; i < 3; i++) {
		memset(&again, 0, sizeof again);
		assert_int_equal(t_order(h, 1, 10, 7, 2, 0, 0xabc, &again), FLASH_EDUPLICATE);
		assert_int_equal(again.first_rc, FLASH_OK);
		assert_int_equal(again.order_no, first.order_no);
		assert_int_equal(again.limit_slot, first.limit_slot);
	}
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 8);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.duplicates, before.st.duplicates + 3);
	assert_int_equal(st.requests, 1);
	/* exactly one ORDER record, carrying the request id */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER) {
			norders++;
			assert_int_equal(recs.v[i].r.request_id, 0xabc);
			assert_int_equal(recs.v[i].r.order_no, first.order_no);
		}
	assert_int_equal(norders, 1);
	t_recs_free(&recs);
}

static void test_retry_after_sold_out_returns_the_sold_out_even_after_restock(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, NULL, 5, 1);
	struct flash_order_res res;
	struct t_snap before;

	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, 0x51, &res), FLASH_ESOLD_OUT);
	assert_int_equal(flash_restock(h, 1, 10, 10), FLASH_OK);
	t_snap_take(h, &before);
	memset(&res, 0xee, sizeof res);
	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, 0x51, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_ESOLD_OUT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 11);
	/* a new request id is a new attempt */
	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, 0x52, &res), FLASH_OK);
}

static void test_retry_after_limit_returns_the_limit_even_after_cancel(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, NULL, 1, 10);
	struct flash_order_res held, res;
	struct t_snap before;
	uint32_t units = 0;

	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &held), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0x61, &res), FLASH_ELIMIT);
	/* the quota comes back (policy), yet the retry answers as the first time */
	assert_int_equal(flash_cancel(h, held.order_no, &units), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0x61, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_ELIMIT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0x62, &res), FLASH_OK);
}

static void test_retry_after_window_or_token_rejection_returns_it(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a;
	struct flash_order_res res;
	int64_t now = t_now_ns();

	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 1;
	a.max_qty = 1;
	a.start_ns = now + 3600 * SEC;
	a.end_ns = now + 7200 * SEC;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 10, 5, 1), FLASH_OK);

	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0x71, &res), FLASH_ENOT_STARTED);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0x71, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_ENOT_STARTED);
	assert_int_equal(t_order(h, 2, 10, 7, 1, 0, 0x72, &res), FLASH_EBAD_TOKEN);
	assert_int_equal(t_order(h, 2, 10, 7, 1, 0, 0x72, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_EBAD_TOKEN);
}

static void test_distinct_request_ids_make_distinct_orders(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, NULL, 5, 10);
	struct flash_order_res r1, r2;

	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 100, &r1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 101, &r2), FLASH_OK);
	assert_int_not_equal(r1.order_no, r2.order_no);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 100, &r2), FLASH_EDUPLICATE);
	assert_int_equal(r2.order_no, r1.order_no);
	assert_int_equal(t_available(h, 1, 10), 8);
}

static void test_invalid_request_is_not_remembered(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, NULL, 5, 10);
	struct flash_order_res res;
	struct t_snap before;

	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 7, 0, 0, 0x81, &res), FLASH_EINVAL);
	assert_int_equal(t_order(h, 1, 10, 0, 1, 0, 0x81, &res), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0x81, &res), FLASH_OK);
}

static void test_request_table_full_gives_efull_and_takes_nothing(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct flash_order_res res;
	struct t_snap before;

	t_opts_small(&o);
	o.max_requests = 3;
	h = setup(name, sizeof name, &o, 10, 100);
	for (uint64_t r = 1; r <= 3; r++)
		assert_int_equal(t_order(h, 1, 10, 7, 1, 0, r, NULL), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.requests, 3);
	assert_int_equal(before.st.requests_cap, 3);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 4, &res), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* known ids still answer; orders without an id still go through */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 2, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 96);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_retry_of_a_success_returns_eduplicate_with_the_same_order),
		T(test_retry_after_sold_out_returns_the_sold_out_even_after_restock),
		T(test_retry_after_limit_returns_the_limit_even_after_cancel),
		T(test_retry_after_window_or_token_rejection_returns_it),
		T(test_distinct_request_ids_make_distinct_orders),
		T(test_invalid_request_is_not_remembered),
		T(test_request_table_full_gives_efull_and_takes_nothing),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
