/*
 * test_api_order.c -- the order path: argument checks, the step order
 * (token -> window -> limit -> stock), limits K and scopes, max_qty, sharded
 * skus borrowing, full tables, a full ring, the order record, and sync
 * durability, and the batch call.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define SEC 1000000000LL

static int add_window(flash_t *h, uint32_t id, uint32_t k, int64_t start_ns, int64_t end_ns)
{
	struct flash_activity a = {
		.id = id, .limit_per_user = k, .max_qty = 1, .scope = FLASH_SCOPE_ACTIVITY,
		.start_ns = start_ns, .end_ns = end_ns,
	};
	return flash_activity_add(h, &a);
}

static void test_order_rejects_bad_arguments_with_einval_and_changes_nothing(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 5, .qty = 1 };
	struct flash_order_res res;
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_order(NULL, &r, &res), FLASH_EINVAL);
	assert_int_equal(flash_order(h, NULL, &res), FLASH_EINVAL);
	r.user_id = 0;
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	r.user_id = 5;
	r.qty = 0;
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	r.qty = 4;   /* max_qty is 3 */
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	r.qty = UINT32_MAX;   /* a negative quantity seen as unsigned */
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	r.qty = (uint32_t)-1 - 1;
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	r.qty = 1;
	r.reserve_ms = FLASH_RESERVE_MS_MAX + 1;   /* a reservation of more than a week */
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_orders_max(h), 0);
	/* the same request, corrected, works: nothing was held by the failures */
	r.reserve_ms = 0;
	r.qty = 3;
	assert_int_equal(flash_order(h, &r, &res), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 97);
}

static void test_order_unknown_activity_or_sku_gives_enot_found(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 3, 10, 5, 1, 0, 0, NULL), FLASH_ENOT_FOUND);
	assert_int_equal(t_order(h, 0, 10, 5, 1, 0, 0, NULL), FLASH_ENOT_FOUND); /* no activity 0 */
	assert_int_equal(t_order(h, 1, 11, 5, 1, 0, 0, NULL), FLASH_ENOT_FOUND);
	assert_int_equal(t_order(h, 1, 0, 5, 1, 0, 0, NULL), FLASH_ENOT_FOUND);
	assert_int_equal(t_order(h, 2, 10, 5, 1, 0, 0, NULL), FLASH_ENOT_FOUND); /* sku of act 1 */
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* the user's quota was not taken by the failures */
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_OK);
}

static void test_order_success_writes_order_and_record(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_order_res res;
	struct flash_order_info oi;
	struct flash_stats st;
	struct t_recs recs = { 0 };
	int64_t t0, t1;

	assert_int_equal(t_activity(h, 1, 2, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	recs.n = 0;
	memset(&res, 0xee, sizeof res);
	t0 = t_now_ns();
	assert_int_equal(t_order(h, 1, 10, 42, 5, 0, 0, &res), FLASH_OK);
	t1 = t_now_ns();
	assert_true(res.order_no >= 1);
	assert_int_equal(res.limit_slot, 1);
	assert_int_equal(flash_orders_max(h) >= res.order_no, 1);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.order_no, res.order_no);
	assert_int_equal(oi.user_id, 42);
	assert_int_equal(oi.activity_id, 1);
	assert_int_equal(oi.sku_id, 10);
	assert_int_equal(oi.qty, 5);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(oi.limit_slot, 1);
	assert_true(oi.created_ns >= t0 && oi.created_ns <= t1);
	assert_int_equal(t_available(h, 1, 10), 95);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.orders, 1);
	assert_int_equal(st.users, 1);

	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(recs.n, 1);
	assert_int_equal(recs.v[0].r.type, FLASH_REC_ORDER);
	assert_int_equal(recs.v[0].r.slot, flash_slot(h));
	assert_int_equal(recs.v[0].r.activity_id, 1);
	assert_int_equal(recs.v[0].r.sku_id, 10);
	assert_int_equal(recs.v[0].r.qty, 5);
	assert_int_equal(recs.v[0].r.order_no, res.order_no);
	assert_int_equal(recs.v[0].r.user_id, 42);
	assert_int_equal(recs.v[0].r.limit_slot, 1);
	assert_int_equal(recs.v[0].r.biz_day, oi.biz_day);
	assert_int_equal(recs.v[0].r.request_id, 0);
	assert_int_equal(recs.v[0].seq, 3);   /* after the activity and sku records */

	/* the second order of the user takes the second slot and a new number */
	{
		struct flash_order_res res2;

		assert_int_equal(t_order(h, 1, 10, 42, 1, 0, 0, &res2), FLASH_OK);
		assert_int_equal(res2.limit_slot, 2);
		assert_true(res2.order_no > res.order_no);
	}
	t_recs_free(&recs);
}

static void test_sold_out_changes_nothing_and_counts(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	struct flash_stats st;

	assert_int_equal(t_activity(h, 1, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 3, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 2, 0, 0, NULL), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 2, 2, 0, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(t_order(h, 1, 10, 3, 5, 0, 0, NULL), FLASH_ESOLD_OUT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.sold_out, before.st.sold_out + 2);
	/* exactly the last unit still sells, then nothing */
	assert_int_equal(t_order(h, 1, 10, 2, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 0);
	assert_int_equal(t_order(h, 1, 10, 3, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
}

static void test_sold_out_gives_back_the_limit_slot_it_reserved(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_order_res res;

	assert_int_equal(t_activity(h, 1, 1, 2, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, 0, NULL), FLASH_ESOLD_OUT);
	/* K = 1: had the failed order kept its slot, this would be ELIMIT */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(res.limit_slot, 1);
}

static void test_limit_is_checked_before_stock(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	struct flash_stats st;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	t_snap_take(h, &before);
	/* sold out AND at the limit: the limit answers */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	/* another user meets the empty stock */
	assert_int_equal(t_order(h, 1, 10, 8, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.limit_hits, before.st.limit_hits + 1);
	assert_int_equal(st.sold_out, before.st.sold_out + 1);
}

static void test_limit_k_gives_k_distinct_slots_then_elimit(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_order_res res;
	struct t_snap before;
	uint64_t slots = 0;

	assert_int_equal(t_activity(h, 1, 3, 2, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(t_order(h, 1, 10, 9, 2, 0, 0, &res), FLASH_OK);
		assert_in_range(res.limit_slot, 1, 3);
		assert_false(slots & (1ull << res.limit_slot));
		slots |= 1ull << res.limit_slot;
	}
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 9, 1, 0, 0, NULL), FLASH_ELIMIT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 94);
	/* other users are not affected */
	assert_int_equal(t_order(h, 1, 10, 10, 1, 0, 0, NULL), FLASH_OK);
}

static void test_limit_64_is_the_largest_and_holds(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_order_res res;
	uint64_t slots = 0;

	assert_int_equal(t_activity(h, 1, FLASH_LIMIT_MAX, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1000, 1), FLASH_OK);
	for (uint32_t i = 0; i < FLASH_LIMIT_MAX; i++) {
		assert_int_equal(t_order(h, 1, 10, 3, 1, 0, 0, &res), FLASH_OK);
		assert_in_range(res.limit_slot, 1, FLASH_LIMIT_MAX);
		assert_false(slots & (1ull << (res.limit_slot - 1)));
		slots |= 1ull << (res.limit_slot - 1);
	}
	assert_int_equal(slots, UINT64_MAX);
	assert_int_equal(t_order(h, 1, 10, 3, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_available(h, 1, 10), 1000 - FLASH_LIMIT_MAX);
}

static void test_window_not_started_gives_enot_started(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	int64_t now = t_now_ns();

	assert_int_equal(add_window(h, 1, 1, now + 3600 * SEC, now + 7200 * SEC), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_ENOT_STARTED);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_window_ended_gives_eended(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	int64_t now = t_now_ns();

	assert_int_equal(add_window(h, 1, 1, now - 7200 * SEC, now - 3600 * SEC), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_EENDED);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_window_is_checked_before_limit(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	int64_t now = t_now_ns();
	int64_t end = now + 1000 * 1000000LL;   /* room for two orders on a busy box */

	assert_int_equal(add_window(h, 1, 1, now - SEC, end), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	while (t_now_ns() <= end + 1000000)
		t_sleep_ms(20);
	t_snap_take(h, &before);
	/* at the limit AND ended: the window answers */
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_EENDED);
	assert_int_equal(t_order(h, 1, 10, 2, 1, 0, 0, NULL), FLASH_EENDED);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_window_is_checked_before_stock(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	int64_t now = t_now_ns();

	assert_int_equal(add_window(h, 1, 1, now + 3600 * SEC, now + 7200 * SEC), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 0, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_ENOT_STARTED);
}

static void test_scope_activity_counts_all_skus_together(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 5, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 11, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_scope_sku_counts_each_sku_apart(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	struct flash_order_res r10, r11;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_SKU, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 5, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, &r10), FLASH_OK);
	assert_int_equal(t_order(h, 1, 11, 1, 1, 0, 0, &r11), FLASH_OK);
	assert_int_equal(r10.limit_slot, 1);
	assert_int_equal(r11.limit_slot, 1);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(h, 1, 11, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_scope_day_records_the_business_day_and_limits_within_it(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a;
	struct flash_order_res res;
	struct flash_order_info oi;
	int64_t now = t_now_ns(), d0, d1;
	const int32_t offsets[] = { 0, 8 * 3600, -5 * 3600 };

	for (uint32_t i = 0; i < 3; i++) {
		memset(&a, 0, sizeof a);
		a.id = 1 + i;
		a.limit_per_user = 1;
		a.max_qty = 1;
		a.scope = FLASH_SCOPE_DAY;
		a.day_offset_s = offsets[i];
		a.start_ns = now - 3600 * SEC;
		a.end_ns = now + 3600 * SEC;
		assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
		assert_int_equal(flash_sku_add(h, 1 + i, 10, 5, 1), FLASH_OK);
		d0 = (t_now_ns() / SEC + offsets[i]) / 86400;
		assert_int_equal(t_order(h, 1 + i, 10, 77, 1, 0, 0, &res), FLASH_OK);
		d1 = (t_now_ns() / SEC + offsets[i]) / 86400;
		assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
		if (d0 == d1)   /* not across midnight */
			assert_int_equal(oi.biz_day, (uint32_t)d0);
		assert_int_equal(t_order(h, 1 + i, 10, 77, 1, 0, 0, NULL), FLASH_ELIMIT);
	}
}

static void test_limits_are_per_activity(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 10, 5, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 2, 10, 1, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(h, 2, 10, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
}

static void test_max_qty_is_accepted_and_one_more_is_einval(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 2, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 4, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 6);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 1, 5, 0, 0, NULL), FLASH_EINVAL);
	assert_int_equal(t_order(h, 1, 10, 2, 5, 0, 0, NULL), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_sharded_sku_sells_every_unit_to_one_user(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_sku_info si;
	struct t_snap before;

	/* one user hashes to one shard: the other three must lend their units */
	assert_int_equal(t_activity(h, 1, FLASH_LIMIT_MAX, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 40, 4), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.shards, 4);
	assert_int_equal(si.available, 40);
	for (int i = 0; i < 40; i++)
		assert_int_equal(t_order(h, 1, 10, 12345, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 0);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 12345, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(t_order(h, 1, 10, 999, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_sharded_sku_sells_an_order_larger_than_a_shard(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 8, 40, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 40, 4), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 25, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 15);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 2, 16, 0, 0, NULL), FLASH_ESOLD_OUT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_order(h, 1, 10, 2, 15, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 0);
}

static void test_sharded_sku_many_users_sell_exactly_the_stock(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint32_t ok = 0, sold_out = 0;
	int rc;

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 101, 16), FLASH_OK);
	/* 60 users, qty 1..3: 101 units; ok orders sum to exactly 101 or leave
	 * fewer units than the smallest refused quantity */
	for (uint64_t u = 1; u <= 60; u++) {
		uint32_t q = (uint32_t)(u % 3) + 1;

		rc = t_order(h, 1, 10, u, q, 0, 0, NULL);
		if (rc == FLASH_OK)
			ok += q;
		else {
			assert_int_equal(rc, FLASH_ESOLD_OUT);
			assert_true(t_available(h, 1, 10) < q);
			sold_out++;
		}
	}
	assert_int_equal(t_available(h, 1, 10), 101 - ok);
	assert_true(sold_out > 0);
	/* a one-unit order takes any last unit */
	for (uint64_t u = 1000; t_available(h, 1, 10) > 0; u++)
		assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5000, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
}

static void test_user_table_full_gives_efull_but_known_users_get_their_answer(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;

	t_opts_small(&o);
	o.max_users = 4;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 4; u++)
		assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.users, 4);
	assert_int_equal(before.st.users_cap, 4);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EFULL);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, NULL), FLASH_EFULL);
	assert_int_equal(t_order(h, 1, 10, 2, 1, 0, 0, NULL), FLASH_ELIMIT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 96);
}

static void test_order_table_full_gives_efull_and_returns_stock_and_quota(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;
	struct flash_order_info oi;

	t_opts_small(&o);
	o.max_orders = 4;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 4; u++)
		assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.orders_cap, 4);
	assert_int_equal(before.st.orders_used, 4);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EFULL);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 96);
	assert_true(flash_orders_max(h) <= 4);
	assert_int_equal(flash_order_get(h, 5, &oi), FLASH_ENOT_FOUND);
}

static void test_full_ring_gives_ebusy_until_drained(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;
	struct t_recs recs = { 0 };
	uint64_t u = 1;
	int rc, n = 0;

	t_opts_small(&o);
	o.ring_records = 16;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	for (;;) {
		t_snap_take(h, &before);
		rc = t_order(h, 1, 10, u, 1, 0, 0, NULL);
		if (rc != FLASH_OK)
			break;
		u++;
		n++;
		assert_true(n <= 16);
	}
	assert_int_equal(rc, FLASH_EBUSY);
	assert_true(n >= 1);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* its quota was not kept: the same user goes through once drained */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(recs.n, (size_t)n + 2);
	assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 100 - (uint64_t)n - 1);
	t_recs_free(&recs);
}

/* ---- sync durability ---------------------------------------------------- */

struct sync_arg {
	const char *name;
	volatile int advanced;   /* set by the consumer before it advances */
	volatile int returned;
	int rc;
	int advanced_before_return;
};

static void *sync_buyer(void *p)
{
	struct sync_arg *sa = p;
	flash_t *h = NULL;

	sa->rc = flash_open(sa->name, 0, &h);
	if (sa->rc != FLASH_OK)
		return NULL;
	sa->rc = t_order(h, 1, 10, 5, 1, 0, 0, NULL);
	sa->advanced_before_return = __atomic_load_n(&sa->advanced, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sa->returned, 1, __ATOMIC_SEQ_CST);
	flash_close(h);
	return NULL;
}

static void test_sync_order_is_acknowledged_only_after_durable_advance(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct sync_arg sa;
	pthread_t th;
	struct t_recs recs = { 0 };
	const struct t_rec *order = NULL;
	struct t_consumer *cons;

	alarm(60);   /* a lost wake-up fails the test instead of hanging it */
	t_opts_small(&o);
	o.durability = FLASH_DURABILITY_SYNC;
	h = t_seg_new(&o, name, sizeof name);
	/* catalog adds are acknowledged once durable too: a consumer for them */
	cons = t_consumer_start(name);
	assert_non_null(cons);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_consumer_stop(cons);
	memset(&sa, 0, sizeof sa);
	sa.name = name;
	assert_int_equal(pthread_create(&th, NULL, sync_buyer, &sa), 0);
	/* wait until the buyer's record is in its ring */
	while (!order) {
		assert_int_equal(t_recs_drain_keep(h, &recs), FLASH_OK);
		for (size_t i = 0; i < recs.n; i++)
			if (recs.v[i].r.type == FLASH_REC_ORDER)
				order = &recs.v[i];
		if (!order)
			t_sleep_ms(1);
	}
	t_sleep_ms(50);
	assert_int_equal(__atomic_load_n(&sa.returned, __ATOMIC_SEQ_CST), 0);
	__atomic_store_n(&sa.advanced, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(flash_durable_advance(h, order->r.slot, order->seq), FLASH_OK);
	assert_int_equal(pthread_join(th, NULL), 0);
	alarm(0);
	assert_int_equal(sa.rc, FLASH_OK);
	assert_int_equal(sa.advanced_before_return, 1);
	assert_int_equal(t_available(h, 1, 10), 9);
	t_recs_free(&recs);
}

static void test_sync_order_after_wal_failure_gives_edurability(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct flash_stats st;
	struct t_consumer *cons;

	alarm(60);
	t_opts_small(&o);
	o.durability = FLASH_DURABILITY_SYNC;
	h = t_seg_new(&o, name, sizeof name);
	/* catalog adds are acknowledged once durable too: a consumer for them */
	cons = t_consumer_start(name);
	assert_non_null(cons);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_consumer_stop(cons);
	assert_int_equal(flash_durability_fail(NULL), FLASH_EINVAL);
	assert_int_equal(flash_durability_fail(h), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EDURABILITY);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, NULL), FLASH_EDURABILITY);
	alarm(0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.durability, FLASH_DURABILITY_SYNC);
}

/*
 * A daemon whose WAL fails says why (flash_durability_fail_why); the reason
 * stays in the segment for `status` after that daemon is gone, the first
 * one wins, and only the handle holding the consumer claim -- a daemon that
 * has proven its WAL whole -- ends the failure.
 */
static void test_durability_failure_keeps_its_first_reason_until_the_consumer_clears_it(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	struct flash_durability_info d;
	struct t_consumer *cons;
	flash_t *h, *h2, *ro;
	int64_t before, after;

	(void)state;
	alarm(60);
	t_opts_small(&o);
	o.durability = FLASH_DURABILITY_SYNC;
	h = t_seg_new(&o, name, sizeof name);
	cons = t_consumer_start(name);
	assert_non_null(cons);
	assert_int_equal(t_activity(h, 1, 1, 2, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_consumer_stop(cons);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	t_track_handle(ro);
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	assert_int_equal(flash_durability_get(ro, &d), FLASH_OK);
	assert_int_equal(d.failed, 0);

	/* the first failure is the cause: a second one keeps it */
	before = t_now_ns();
	assert_int_equal(flash_durability_fail_why(h, FLASH_WAL_STEP_FILE, ENOSPC), FLASH_OK);
	after = t_now_ns();
	assert_int_equal(flash_durability_fail_why(h, FLASH_WAL_STEP_SYNC, EIO), FLASH_OK);
	assert_int_equal(flash_durability_get(ro, &d), FLASH_OK);
	assert_int_equal(d.failed, 1);
	assert_int_equal(d.step, FLASH_WAL_STEP_FILE);
	assert_int_equal(d.err, ENOSPC);
	assert_true(d.when_ns >= before && d.when_ns <= after);
	assert_string_equal(flash_wal_step_str(d.step), "creating the next WAL file failed");
	assert_string_equal(flash_wal_step_str(99), flash_wal_step_str(FLASH_WAL_STEP_UNKNOWN));
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_EDURABILITY);

	/* bad calls change nothing */
	assert_int_equal(flash_durability_fail_why(h, FLASH_WAL_STEP_FILE + 1, 0), FLASH_EINVAL);
	assert_int_equal(flash_durability_fail_why(ro, FLASH_WAL_STEP_WRITE, EIO), FLASH_EREADONLY);
	assert_int_equal(flash_durability_get(NULL, &d), FLASH_EINVAL);
	assert_int_equal(flash_durability_get(ro, NULL), FLASH_EINVAL);
	assert_int_equal(flash_durability_clear(ro), FLASH_EREADONLY);
	/* no claim, or another handle's: not this handle's failure to end */
	assert_int_equal(flash_durability_clear(h), FLASH_EBUSY);
	assert_int_equal(flash_consumer_claim(h2, NULL), FLASH_OK);
	assert_int_equal(flash_durability_clear(h), FLASH_EBUSY);
	assert_int_equal(flash_durability_get(ro, &d), FLASH_OK);
	assert_int_equal(d.failed, 1);
	assert_int_equal(d.err, ENOSPC);

	/* the claim holder clears it: nothing failed, sync orders acknowledged */
	assert_int_equal(flash_durability_clear(h2), FLASH_OK);
	assert_int_equal(flash_durability_clear(h2), FLASH_OK);
	assert_int_equal(flash_durability_get(ro, &d), FLASH_OK);
	assert_int_equal(d.failed, 0);
	assert_int_equal(d.step, 0);
	assert_int_equal(d.err, 0);
	assert_int_equal(d.when_ns, 0);
	assert_int_equal(flash_consumer_release(h2), FLASH_OK);
	cons = t_consumer_start(name);
	assert_non_null(cons);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, NULL), FLASH_OK);
	t_consumer_stop(cons);

	/* a failure without a reason says so, with its time */
	assert_int_equal(flash_durability_fail(h), FLASH_OK);
	assert_int_equal(flash_durability_get(ro, &d), FLASH_OK);
	assert_int_equal(d.failed, 1);
	assert_int_equal(d.step, FLASH_WAL_STEP_UNKNOWN);
	assert_int_equal(d.err, 0);
	assert_true(d.when_ns >= after);
	alarm(0);
}

static void test_durable_advance_rejects_a_slot_out_of_range(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	assert_int_equal(flash_durable_advance(h, 8, 1), FLASH_EINVAL);
	assert_int_equal(flash_durable_advance(h, UINT32_MAX, 1), FLASH_EINVAL);
	assert_int_equal(flash_durable_advance(NULL, 0, 1), FLASH_EINVAL);
}

/* ---- the batch call (flash_order_many) ---------------------------------- */

/* A batch with every kind of outcome: placed, the user's limit, a repeated
 * request id, an unknown sku, a bad quantity, sold out. */
static const struct flash_order_req many_reqs[] = {
	{ .activity_id = 1, .sku_id = 10, .user_id = 1, .qty = 1 },
	{ .activity_id = 1, .sku_id = 10, .user_id = 2, .qty = 2, .request_id = 77 },
	{ .activity_id = 1, .sku_id = 10, .user_id = 1, .qty = 1 },
	{ .activity_id = 1, .sku_id = 10, .user_id = 1, .qty = 1 },            /* K = 2: ELIMIT */
	{ .activity_id = 1, .sku_id = 10, .user_id = 2, .qty = 2, .request_id = 77 }, /* EDUPLICATE */
	{ .activity_id = 1, .sku_id = 11, .user_id = 3, .qty = 1 },            /* ENOT_FOUND */
	{ .activity_id = 1, .sku_id = 10, .user_id = 3, .qty = 0 },            /* EINVAL */
	{ .activity_id = 1, .sku_id = 10, .user_id = 4, .qty = 1 },
	{ .activity_id = 1, .sku_id = 10, .user_id = 5, .qty = 1 },            /* ESOLD_OUT */
};
#define MANY_N (sizeof many_reqs / sizeof many_reqs[0])

static flash_t *many_seg(char *name, size_t len)
{
	flash_t *h = t_seg_new(NULL, name, len);

	assert_int_equal(t_activity(h, 1, 2, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	return h;
}

static void test_order_many_gives_what_the_orders_one_by_one_give(void **state)
{
	char na[64], nb[64];
	flash_t *a = many_seg(na, sizeof na), *b = many_seg(nb, sizeof nb);
	struct flash_order_res ra[MANY_N], rb[MANY_N];
	struct t_recs xa = { 0 }, xb = { 0 };
	struct flash_obs obs;
	int rca[MANY_N], rcb[MANY_N];
	uint64_t ok = 0;

	for (size_t i = 0; i < MANY_N; i++)
		rca[i] = flash_order(a, &many_reqs[i], &ra[i]);
	memset(rb, 0xee, sizeof rb);
	memset(rcb, 0x55, sizeof rcb);
	assert_int_equal(flash_order_many(b, many_reqs, MANY_N, rb, rcb), FLASH_OK);
	assert_int_equal(rca[0], FLASH_OK);
	assert_int_equal(rca[3], FLASH_ELIMIT);
	assert_int_equal(rca[4], FLASH_EDUPLICATE);
	assert_int_equal(rca[5], FLASH_ENOT_FOUND);
	assert_int_equal(rca[6], FLASH_EINVAL);
	assert_int_equal(rca[8], FLASH_ESOLD_OUT);
	for (size_t i = 0; i < MANY_N; i++) {
		assert_int_equal(rcb[i], rca[i]);
		if (rca[i] == FLASH_OK || rca[i] == FLASH_EDUPLICATE) {
			assert_int_equal(rb[i].order_no, ra[i].order_no);
			assert_int_equal(rb[i].first_rc, ra[i].first_rc);
			assert_int_equal(rb[i].limit_slot, ra[i].limit_slot);
		}
		if (rca[i] == FLASH_OK) {
			assert_int_equal(rb[i].lsn, ra[i].lsn);
			ok++;
		}
	}
	assert_int_equal(t_available(b, 1, 10), 0);
	/* the same records, one per order, in the order given */
	assert_int_equal(t_recs_drain(a, &xa), FLASH_OK);
	assert_int_equal(t_recs_drain(b, &xb), FLASH_OK);
	assert_int_equal(xb.n, xa.n);
	assert_int_equal(xb.n, 2 + ok);
	for (size_t i = 0; i < xa.n; i++) {
		assert_int_equal(xb.v[i].r.type, xa.v[i].r.type);
		assert_int_equal(xb.v[i].r.user_id, xa.v[i].r.user_id);
		/* an ORDER's number; a catalog record's version follows its
		 * segment's clock */
		if (xa.v[i].r.type == FLASH_REC_ORDER)
			assert_int_equal(xb.v[i].r.order_no, xa.v[i].r.order_no);
		assert_int_equal(xb.v[i].r.qty, xa.v[i].r.qty);
		assert_int_equal(xb.v[i].r.limit_slot, xa.v[i].r.limit_slot);
		assert_int_equal(xb.v[i].r.request_id, xa.v[i].r.request_id);
		assert_int_equal(xb.v[i].seq, xa.v[i].seq);
	}
	/* one clock read: the batch's orders carry one time */
	assert_int_equal(xb.v[3].r.ts_ns, xb.v[2].r.ts_ns);
	/* counted per order, each outcome */
	assert_int_equal(flash_obs_get(b, &obs), FLASH_OK);
	assert_int_equal(obs.results[FLASH_OP_ORDER][0], ok);
	assert_int_equal(obs.results[FLASH_OP_ORDER][-FLASH_ELIMIT], 1);
	assert_int_equal(obs.results[FLASH_OP_ORDER][-FLASH_EDUPLICATE], 1);
	assert_int_equal(obs.results[FLASH_OP_ORDER][-FLASH_ESOLD_OUT], 1);
	t_recs_free(&xa);
	t_recs_free(&xb);
}

static void test_order_many_rejects_bad_arguments_and_places_nothing(void **state)
{
	char name[64];
	flash_t *h = many_seg(name, sizeof name);
	struct flash_order_res res[MANY_N];
	int rcs[MANY_N];
	struct t_snap before;

	t_snap_take(h, &before);
	assert_int_equal(flash_order_many(NULL, many_reqs, MANY_N, res, rcs), FLASH_EINVAL);
	assert_int_equal(flash_order_many(h, NULL, MANY_N, res, rcs), FLASH_EINVAL);
	assert_int_equal(flash_order_many(h, many_reqs, MANY_N, res, NULL), FLASH_EINVAL);
	assert_int_equal(flash_order_many(h, many_reqs, 0, res, rcs), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* res may be NULL */
	assert_int_equal(flash_order_many(h, many_reqs, 1, NULL, rcs), FLASH_OK);
	assert_int_equal(rcs[0], FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 4);
	/* a request refused for its arguments reads zeros, not what was there */
	memset(res, 0xee, sizeof res);
	assert_int_equal(flash_order_many(h, &many_reqs[6], 1, res, rcs), FLASH_OK);
	assert_int_equal(rcs[0], FLASH_EINVAL);
	assert_int_equal(res[0].order_no, 0);
	assert_int_equal(res[0].lsn, 0);
}

struct many_arg {
	const char *name;
	uint32_t wait_ms;
	volatile int returned;
	int rc;
	int rcs[3];
	struct flash_order_res res[3];
};

static void *many_buyer(void *p)
{
	struct many_arg *ma = p;
	const struct flash_order_req r[3] = {
		{ .activity_id = 1, .sku_id = 10, .user_id = 7, .qty = 1 },
		{ .activity_id = 1, .sku_id = 10, .user_id = 8, .qty = 1 },
		{ .activity_id = 1, .sku_id = 10, .user_id = 9, .qty = 1 },
	};
	flash_t *h = NULL;

	ma->rc = flash_open(ma->name, 0, &h);
	if (ma->rc != FLASH_OK)
		return NULL;
	if (ma->wait_ms != 0)
		flash_sync_wait_set(h, ma->wait_ms);
	ma->rc = flash_order_many(h, r, 3, ma->res, ma->rcs);
	__atomic_store_n(&ma->returned, 1, __ATOMIC_SEQ_CST);
	flash_close(h);
	return NULL;
}

static flash_t *many_sync_seg(char *name, size_t len)
{
	struct flash_seg_opts o;
	struct t_consumer *cons;
	flash_t *h;

	t_opts_small(&o);
	o.durability = FLASH_DURABILITY_SYNC;
	h = t_seg_new(&o, name, len);
	cons = t_consumer_start(name);     /* catalog adds are acknowledged once durable */
	assert_non_null(cons);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_consumer_stop(cons);
	return h;
}

static void test_order_many_in_sync_waits_once_for_its_last_record(void **state)
{
	char name[64];
	flash_t *h;
	struct many_arg ma;
	pthread_t th;
	struct t_recs recs = { 0 };
	const struct t_rec *ord[3];
	size_t n = 0;

	alarm(60);
	h = many_sync_seg(name, sizeof name);
	memset(&ma, 0, sizeof ma);
	ma.name = name;
	assert_int_equal(pthread_create(&th, NULL, many_buyer, &ma), 0);
	/* all three records reach the ring before any is durable: the batch
	 * does not wait order by order */
	while (n < 3) {
		assert_int_equal(t_recs_drain_keep(h, &recs), FLASH_OK);
		n = 0;
		for (size_t i = 0; i < recs.n; i++)
			if (recs.v[i].r.type == FLASH_REC_ORDER)
				ord[n++] = &recs.v[i];
		if (n < 3)
			t_sleep_ms(1);
	}
	t_sleep_ms(50);
	assert_int_equal(__atomic_load_n(&ma.returned, __ATOMIC_SEQ_CST), 0);
	/* the first two durable: it still waits for the last */
	assert_int_equal(flash_durable_advance(h, ord[1]->r.slot, ord[1]->seq), FLASH_OK);
	t_sleep_ms(100);
	assert_int_equal(__atomic_load_n(&ma.returned, __ATOMIC_SEQ_CST), 0);
	assert_int_equal(flash_durable_advance(h, ord[2]->r.slot, ord[2]->seq), FLASH_OK);
	assert_int_equal(pthread_join(th, NULL), 0);
	alarm(0);
	assert_int_equal(ma.rc, FLASH_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ma.rcs[i], FLASH_OK);
		assert_int_equal(ma.res[i].lsn, ord[i]->seq);
	}
	assert_int_equal(t_available(h, 1, 10), 7);
	t_recs_free(&recs);
}

static void test_order_many_in_sync_past_the_bound_gives_every_placed_order_fate_unknown(void **state)
{
	char name[64];
	flash_t *h;
	struct many_arg ma;
	pthread_t th;
	struct flash_order_info oi;

	alarm(60);
	h = many_sync_seg(name, sizeof name);
	memset(&ma, 0, sizeof ma);
	ma.name = name;
	ma.wait_ms = 100;      /* nobody drains */
	assert_int_equal(pthread_create(&th, NULL, many_buyer, &ma), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	alarm(0);
	assert_int_equal(ma.rc, FLASH_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ma.rcs[i], FLASH_EFATE_UNKNOWN);
		/* placed, and res says which order to look for */
		assert_int_equal(flash_order_get(h, ma.res[i].order_no, &oi), FLASH_OK);
		assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
		assert_int_equal(oi.user_id, 7 + (uint64_t)i);
		assert_true(ma.res[i].lsn != 0);
	}
	assert_int_equal(t_available(h, 1, 10), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_order_rejects_bad_arguments_with_einval_and_changes_nothing),
		T(test_order_unknown_activity_or_sku_gives_enot_found),
		T(test_order_success_writes_order_and_record),
		T(test_sold_out_changes_nothing_and_counts),
		T(test_sold_out_gives_back_the_limit_slot_it_reserved),
		T(test_limit_is_checked_before_stock),
		T(test_limit_k_gives_k_distinct_slots_then_elimit),
		T(test_limit_64_is_the_largest_and_holds),
		T(test_window_not_started_gives_enot_started),
		T(test_window_ended_gives_eended),
		T(test_window_is_checked_before_limit),
		T(test_window_is_checked_before_stock),
		T(test_scope_activity_counts_all_skus_together),
		T(test_scope_sku_counts_each_sku_apart),
		T(test_scope_day_records_the_business_day_and_limits_within_it),
		T(test_limits_are_per_activity),
		T(test_max_qty_is_accepted_and_one_more_is_einval),
		T(test_sharded_sku_sells_every_unit_to_one_user),
		T(test_sharded_sku_sells_an_order_larger_than_a_shard),
		T(test_sharded_sku_many_users_sell_exactly_the_stock),
		T(test_user_table_full_gives_efull_but_known_users_get_their_answer),
		T(test_order_table_full_gives_efull_and_returns_stock_and_quota),
		T(test_full_ring_gives_ebusy_until_drained),
		T(test_sync_order_is_acknowledged_only_after_durable_advance),
		T(test_sync_order_after_wal_failure_gives_edurability),
		T(test_durability_failure_keeps_its_first_reason_until_the_consumer_clears_it),
		T(test_durable_advance_rejects_a_slot_out_of_range),
		T(test_order_many_gives_what_the_orders_one_by_one_give),
		T(test_order_many_rejects_bad_arguments_and_places_nothing),
		T(test_order_many_in_sync_waits_once_for_its_last_record),
		T(test_order_many_in_sync_past_the_bound_gives_every_placed_order_fate_unknown),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
