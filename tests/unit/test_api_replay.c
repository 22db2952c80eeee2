/*
 * test_api_replay.c -- flash_replay: records drained from one segment rebuild
 * the same state in a fresh one (orders keep their numbers and limit slots),
 * a second application changes nothing, and malformed records are refused.
 */
#include "helpers.h"

#include <string.h>

/* Source segment: one activity, a sharded sku, orders, a cancel. */
static flash_t *make_source(char *name, size_t len, struct t_recs *recs)
{
	flash_t *h = t_seg_new(NULL, name, len);
	struct flash_order_res res;
	uint32_t units = 0;
	uint64_t cancel_no = 0;

	assert_int_equal(t_activity(h, 1, 2, 3, FLASH_SCOPE_SKU, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 50, 4), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 7, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 6; u++) {
		assert_int_equal(t_order(h, 1, 10, u, (uint32_t)(u % 3) + 1, 0, 100 + u, &res), FLASH_OK);
		if (u == 3)
			cancel_no = res.order_no;
	}
	assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_OK);   /* user 1, slot 2 */
	assert_int_equal(t_order(h, 1, 11, 1, 3, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_cancel(h, cancel_no, &units), FLASH_OK);
	assert_int_equal(t_recs_drain(h, recs), FLASH_OK);
	return h;
}

static void assert_same_orders(flash_t *a, flash_t *b)
{
	uint64_t max = flash_orders_max(a);

	for (uint64_t no = 1; no <= max; no++) {
		struct flash_order_info x, y;

		assert_int_equal(flash_order_get(a, no, &x), FLASH_OK);
		if (x.state == FLASH_ORDER_NONE)
			continue;
		assert_int_equal(flash_order_get(b, no, &y), FLASH_OK);
		assert_int_equal(y.state, x.state);
		assert_int_equal(y.user_id, x.user_id);
		assert_int_equal(y.activity_id, x.activity_id);
		assert_int_equal(y.sku_id, x.sku_id);
		assert_int_equal(y.qty, x.qty);
		assert_int_equal(y.limit_slot, x.limit_slot);
		assert_int_equal(y.biz_day, x.biz_day);
	}
}

static void assert_same_sku(flash_t *a, flash_t *b, uint32_t act, uint32_t sku)
{
	struct flash_sku_info x, y;

	assert_int_equal(flash_sku_get(a, act, sku, &x), FLASH_OK);
	assert_int_equal(flash_sku_get(b, act, sku, &y), FLASH_OK);
	assert_int_equal(y.shards, x.shards);
	assert_int_equal(y.total, x.total);
	assert_int_equal(y.available, x.available);
}

static void test_replayed_records_rebuild_the_same_state(void **state)
{
	char n1[64], n2[64];
	struct t_recs recs = { 0 }, again = { 0 };
	flash_t *src = make_source(n1, sizeof n1, &recs);
	flash_t *dst = t_seg_new(NULL, n2, sizeof n2);
	struct flash_activity a, b;
	struct flash_order_res res;

	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(dst, &recs.v[i].r), FLASH_OK);
	assert_int_equal(flash_activity_at(src, 0, &a), FLASH_OK);
	assert_int_equal(flash_activity_at(dst, 0, &b), FLASH_OK);
	assert_memory_equal(&a, &b, sizeof a);
	assert_same_sku(src, dst, 1, 10);
	assert_same_sku(src, dst, 1, 11);
	assert_same_orders(src, dst);
	/* no new record was emitted by the replay */
	assert_int_equal(t_recs_drain(dst, &again), FLASH_OK);
	assert_int_equal(again.n, 0);
	/* the quota is rebuilt: user 1 holds 2 of sku 10, user 3 got its slot back */
	assert_int_equal(t_order(dst, 1, 10, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(dst, 1, 10, 3, 1, 0, 0, &res), FLASH_OK);
	/* so are the request ids */
	assert_int_equal(t_order(dst, 1, 10, 2, 1, 0, 102, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_OK);
	/* a new order takes a number no replayed order holds */
	assert_int_equal(t_order(dst, 1, 10, 9, 1, 0, 0, &res), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER)
			assert_int_not_equal(recs.v[i].r.order_no, res.order_no);
	t_recs_free(&recs);
	t_recs_free(&again);
}

static void test_replaying_twice_gives_eexist_and_changes_nothing(void **state)
{
	char n1[64], n2[64];
	struct t_recs recs = { 0 };
	flash_t *src = make_source(n1, sizeof n1, &recs);
	flash_t *dst = t_seg_new(NULL, n2, sizeof n2);
	struct t_snap before;

	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(dst, &recs.v[i].r), FLASH_OK);
	t_snap_take(dst, &before);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(dst, &recs.v[i].r), FLASH_EEXIST);
	T_ASSERT_UNCHANGED(dst, &before, 0);
	/* and into the segment that made them */
	t_snap_take(src, &before);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(src, &recs.v[i].r), FLASH_EEXIST);
	T_ASSERT_UNCHANGED(src, &before, 0);
	t_recs_free(&recs);
}

/* A restock has no identity of its own (the WAL's LSN makes its replay
 * exactly-once): each application adds its delta again, to total and
 * available alike, and emits nothing. */
static void test_replaying_a_restock_applies_its_delta_each_time(void **state)
{
	char n1[64], n2[64];
	flash_t *src = t_seg_new(NULL, n1, sizeof n1);
	flash_t *dst = t_seg_new(NULL, n2, sizeof n2);
	struct t_recs recs = { 0 }, again = { 0 };
	struct flash_sku_info si;

	assert_int_equal(t_activity(src, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(src, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(flash_restock(src, 1, 10, 5), FLASH_OK);
	assert_int_equal(flash_restock(src, 1, 10, -3), FLASH_OK);
	assert_int_equal(t_recs_drain(src, &recs), FLASH_OK);
	assert_int_equal(recs.n, 4);
	assert_int_equal(recs.v[2].r.type, FLASH_REC_RESTOCK);
	assert_int_equal(recs.v[2].r.value, 5);
	assert_int_equal(recs.v[3].r.value, -3);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(dst, &recs.v[i].r), FLASH_OK);
	assert_same_sku(src, dst, 1, 10);
	assert_int_equal(flash_replay(dst, &recs.v[2].r), FLASH_OK);
	assert_int_equal(flash_sku_get(dst, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 17);
	assert_int_equal(si.available, 17);
	/* a negative one still never takes available below zero */
	recs.v[3].r.value = -18;
	assert_int_equal(flash_replay(dst, &recs.v[3].r), FLASH_ESOLD_OUT);
	assert_int_equal(t_available(dst, 1, 10), 17);
	assert_int_equal(t_recs_drain(dst, &again), FLASH_OK);
	assert_int_equal(again.n, 0);
	t_recs_free(&recs);
	t_recs_free(&again);
}

static void test_replay_refuses_malformed_records(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_record r;
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_replay(h, NULL), FLASH_EINVAL);
	memset(&r, 0, sizeof r);
	assert_int_equal(flash_replay(NULL, &r), FLASH_EINVAL);
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);   /* type 0 */
	r.type = 99;
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);
	/* an order without a number or limit slot */
	memset(&r, 0, sizeof r);
	r.type = FLASH_REC_ORDER;
	r.activity_id = 1;
	r.sku_id = 10;
	r.user_id = 5;
	r.qty = 1;
	r.limit_slot = 1;
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);
	r.order_no = 3;
	r.limit_slot = 0;
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);
	/* an order for goods that do not exist */
	r.limit_slot = 1;
	r.activity_id = 2;
	assert_int_equal(flash_replay(h, &r), FLASH_ENOT_FOUND);
	r.activity_id = 1;
	r.sku_id = 11;
	assert_int_equal(flash_replay(h, &r), FLASH_ENOT_FOUND);
	/* a cancel of an order that does not exist */
	memset(&r, 0, sizeof r);
	r.type = FLASH_REC_CANCEL;
	r.activity_id = 1;
	r.sku_id = 10;
	r.order_no = 5;
	r.qty = 1;
	r.user_id = 5;
	r.limit_slot = 1;
	assert_int_equal(flash_replay(h, &r), FLASH_ENOT_FOUND);
	/* a restock of an unknown sku */
	memset(&r, 0, sizeof r);
	r.type = FLASH_REC_RESTOCK;
	r.activity_id = 1;
	r.sku_id = 12;
	r.value = 3;
	assert_int_equal(flash_replay(h, &r), FLASH_ENOT_FOUND);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

/* An order record of another box (its number's top byte, flash_box_id_set)
 * cannot be this segment's: it is refused and changes nothing.  Replayed as
 * a fact it moved the segment's allocator into that box, and every order of
 * the segment's own box became "not found" (fuzz_wal found it: sku total
 * 39, available 36, one unit in active orders).  A fresh segment takes the
 * box of the first number it replays (a rebuilt box keeps its numbers). */
static struct flash_record order_rec(uint64_t no, uint64_t user)
{
	struct flash_record r;

	memset(&r, 0, sizeof r);
	r.type = FLASH_REC_ORDER;
	r.activity_id = 1;
	r.sku_id = 10;
	r.user_id = user;
	r.qty = 1;
	r.limit_slot = 1;
	r.order_no = no;
	return r;
}

static void test_replay_refuses_an_order_of_another_box(void **state)
{
	char name[64], name2[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name), *b;
	struct flash_record r;
	struct flash_order_info oi;
	struct flash_order_res res;
	struct t_snap before;
	const uint64_t box1 = 1ull << 56, box7 = 7ull << 56;

	(void)state;
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	r = order_rec(1, 101);
	assert_int_equal(flash_replay(h, &r), FLASH_OK);
	t_snap_take(h, &before);
	r = order_rec(box1 | 3, 103);
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_orders_max(h), 1);
	assert_int_equal(flash_order_get(h, 1, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(flash_order_get(h, box1 | 3, &oi), FLASH_ENOT_FOUND);
	/* nor can a number the allocator never issues, the last of a box's
	 * counter: placed, the counter after it is the next box's (fuzz_wal
	 * seed 5) */
	r = order_rec(box1 - 1, 103);
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_order_get(h, 1, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	/* the segment's own numbers go on in its own box */
	assert_int_equal(t_order(h, 1, 10, 104, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(res.order_no >> 56, 0);

	/* a box-7 segment refuses box 0's numbers, before any order too */
	b = t_seg_new(NULL, name2, sizeof name2);
	assert_int_equal(flash_box_id_set(b, 7), FLASH_OK);
	assert_int_equal(t_activity(b, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(b, 1, 10, 10, 1), FLASH_OK);
	t_snap_take(b, &before);
	r = order_rec(2, 101);
	assert_int_equal(flash_replay(b, &r), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(b, &before, 0);
	r = order_rec(box7 | 2, 101);
	assert_int_equal(flash_replay(b, &r), FLASH_OK);
	assert_int_equal(flash_order_get(b, box7 | 2, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
}

static void test_a_fresh_segment_takes_the_box_of_its_first_replayed_order(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_record r;
	struct flash_order_info oi;
	struct flash_order_res res;
	const uint64_t box7 = 7ull << 56;

	(void)state;
	assert_int_equal(t_activity(h, 1, 2, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	r = order_rec(box7 | 1, 101);
	assert_int_equal(flash_replay(h, &r), FLASH_OK);
	r = order_rec(box7 | 2, 102);
	assert_int_equal(flash_replay(h, &r), FLASH_OK);
	r = order_rec(3, 103);                          /* box 0 now: another box's */
	assert_int_equal(flash_replay(h, &r), FLASH_EINVAL);
	assert_int_equal(flash_order_get(h, box7 | 1, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(flash_order_get(h, box7 | 2, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(t_order(h, 1, 10, 104, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(res.order_no >> 56, 7);
	assert_true((res.order_no & ((1ull << 56) - 1)) > 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_replayed_records_rebuild_the_same_state),
		T(test_replaying_twice_gives_eexist_and_changes_nothing),
		T(test_replaying_a_restock_applies_its_delta_each_time),
		T(test_replay_refuses_malformed_records),
		T(test_replay_refuses_an_order_of_another_box),
		T(test_a_fresh_segment_takes_the_box_of_its_first_replayed_order),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
