/*
 * test_api_catalog.c -- activities and skus: every bad argument, duplicates,
 * full tables, iteration, and the reads of the catalog.
 */
#include "helpers.h"

#include <string.h>

static struct flash_activity act_open(uint32_t id)
{
	int64_t now = t_now_ns();
	struct flash_activity a = {
		.id = id, .limit_per_user = 1, .max_qty = 1, .scope = FLASH_SCOPE_ACTIVITY,
		.flags = 0, .day_offset_s = 0,
		.start_ns = now - 3600LL * 1000000000LL, .end_ns = now + 3600LL * 1000000000LL,
	};
	return a;
}

static void test_activity_add_rejects_each_bad_field_with_einval(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	struct flash_activity a;

	t_snap_take(h, &before);
	assert_int_equal(flash_activity_add(h, NULL), FLASH_EINVAL);
	a = act_open(1);
	assert_int_equal(flash_activity_add(NULL, &a), FLASH_EINVAL);
	a.id = 0;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a = act_open(1);
	a.limit_per_user = 0;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a.limit_per_user = FLASH_LIMIT_MAX + 1;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a = act_open(1);
	a.max_qty = 0;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a = act_open(1);
	a.scope = 3;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a.scope = UINT32_MAX;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a = act_open(1);
	a.flags = 0x4;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a.flags = FLASH_ACT_TOKEN_REQUIRED | 0x80000000u;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a = act_open(1);
	a.end_ns = a.start_ns;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	a.end_ns = a.start_ns - 1;
	assert_int_equal(flash_activity_add(h, &a), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(before.st.activities, 0);
	assert_int_equal(flash_activity_at(h, 0, &a), FLASH_ENOT_FOUND);
}

/*
 * The engine accepts only what its ACTIVITY record carries: each activity at
 * the edges of every range is rebuilt from its own record (as recovery and
 * MySQL see it) field for field, and one past an edge is refused -- a
 * max_qty of 65536 would come back from the record's 16 bits as 0 or 65535.
 */
static void test_every_accepted_activity_is_rebuilt_exactly_from_its_record(void **state)
{
	char n1[64], n2[64];
	flash_t *src = t_seg_new(NULL, n1, sizeof n1);
	flash_t *dst = t_seg_new(NULL, n2, sizeof n2);
	struct t_recs recs = { 0 };
	struct flash_activity a = act_open(1), b, got;

	(void)state;
	a.limit_per_user = FLASH_LIMIT_MAX;
	a.max_qty = FLASH_QTY_MAX;
	a.day_offset_s = FLASH_DAY_OFFSET_MAX_S;
	assert_int_equal(flash_activity_add(src, &a), FLASH_OK);
	b = act_open(2);
	b.day_offset_s = -FLASH_DAY_OFFSET_MAX_S;
	assert_int_equal(flash_activity_add(src, &b), FLASH_OK);
	assert_int_equal(flash_activity_check(&a), FLASH_OK);
	assert_int_equal(flash_activity_check(&b), FLASH_OK);
	assert_int_equal(t_recs_drain(src, &recs), FLASH_OK);
	assert_int_equal(recs.n, 2);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(dst, &recs.v[i].r), FLASH_OK);
	/* the versions too: the records carry them (the first two issued) */
	assert_int_equal(flash_activity_at(dst, 0, &got), FLASH_OK);
	a.version = 1;
	assert_memory_equal(&got, &a, sizeof a);
	assert_int_equal(flash_activity_at(dst, 1, &got), FLASH_OK);
	b.version = 2;
	assert_memory_equal(&got, &b, sizeof b);
	t_recs_free(&recs);

	a = act_open(3);
	a.max_qty = 65536;
	assert_int_equal(flash_activity_check(&a), FLASH_EINVAL);
	assert_int_equal(flash_activity_add(src, &a), FLASH_EINVAL);
	a = act_open(3);
	a.day_offset_s = 86400;
	assert_int_equal(flash_activity_add(src, &a), FLASH_EINVAL);
	a.day_offset_s = -86400;
	assert_int_equal(flash_activity_add(src, &a), FLASH_EINVAL);
	assert_int_equal(flash_activity_at(src, 2, &got), FLASH_ENOT_FOUND);
}

static void test_activity_limits_at_the_edges_are_accepted(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a = act_open(1), got;

	a.limit_per_user = FLASH_LIMIT_MAX;
	a.max_qty = FLASH_QTY_MAX;
	a.scope = FLASH_SCOPE_DAY;
	a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA | FLASH_ACT_TOKEN_REQUIRED;
	a.day_offset_s = -8 * 3600;
	a.end_ns = a.start_ns + 1;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_activity_at(h, 0, &got), FLASH_OK);
	a.version = 1;           /* the segment's first */
	assert_memory_equal(&got, &a, sizeof a);
	a = act_open(UINT32_MAX);
	a.limit_per_user = 1;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
}

static void test_activity_id_taken_gives_eexist_and_keeps_the_first(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a = act_open(7), b, got;
	struct t_snap before;

	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	t_snap_take(h, &before);
	b = a;
	b.limit_per_user = 5;
	b.max_qty = 9;
	assert_int_equal(flash_activity_add(h, &b), FLASH_EEXIST);
	assert_int_equal(flash_activity_add(h, &a), FLASH_EEXIST);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_activity_at(h, 0, &got), FLASH_OK);
	a.version = 1;
	assert_memory_equal(&got, &a, sizeof a);
	assert_int_equal(flash_activity_at(h, 1, &got), FLASH_ENOT_FOUND);
}

static void test_activity_table_full_gives_efull(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct flash_activity a;
	struct t_snap before;

	t_opts_small(&o);
	o.max_activities = 3;
	h = t_seg_new(&o, name, sizeof name);
	for (uint32_t id = 1; id <= 3; id++) {
		a = act_open(id);
		assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	}
	t_snap_take(h, &before);
	assert_int_equal(before.st.activities, 3);
	assert_int_equal(before.st.activities_cap, 3);
	a = act_open(4);
	assert_int_equal(flash_activity_add(h, &a), FLASH_EFULL);
	assert_int_equal(flash_activity_add(h, &a), FLASH_EFULL);
	/* a duplicate is still a duplicate when full */
	a = act_open(2);
	assert_int_equal(flash_activity_add(h, &a), FLASH_EEXIST);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_activity_at(h, 3, &a), FLASH_ENOT_FOUND);
}

static void test_sku_add_rejects_each_bad_argument(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;
	struct flash_sku_info si;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_sku_add(NULL, 1, 10, 5, 1), FLASH_EINVAL);
	assert_int_equal(flash_sku_add(h, 1, 0, 5, 1), FLASH_EINVAL);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 0), FLASH_EINVAL);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, FLASH_SHARDS_MAX + 1), FLASH_EINVAL);
	assert_int_equal(flash_sku_add(h, 1, 10, (1ull << 40) + 1, 1), FLASH_EINVAL);
	assert_int_equal(flash_sku_add(h, 1, 10, UINT64_MAX, 1), FLASH_EINVAL);
	assert_int_equal(flash_sku_add(h, 2, 10, 5, 1), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_add(h, 0, 10, 5, 1), FLASH_EINVAL);   /* ids are nonzero */
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_at(h, 0, &si), FLASH_ENOT_FOUND);
}

static void test_sku_edges_are_accepted_and_read_back(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_sku_info si;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1ull << 40, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, UINT32_MAX, 0, FLASH_SHARDS_MAX), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.activity_id, 1);
	assert_int_equal(si.sku_id, 10);
	assert_int_equal(si.shards, 1);
	assert_int_equal(si.total, 1ull << 40);
	assert_int_equal(si.available, 1ull << 40);
	assert_int_equal(flash_sku_get(h, 1, UINT32_MAX, &si), FLASH_OK);
	assert_int_equal(si.shards, FLASH_SHARDS_MAX);
	assert_int_equal(si.total, 0);
	assert_int_equal(si.available, 0);
}

static void test_sku_taken_gives_eexist_and_keeps_the_first(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_sku_add(h, 1, 10, 50, 2), FLASH_EEXIST);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 5);
	/* the same sku id in another activity is another sku */
	assert_int_equal(flash_sku_add(h, 2, 10, 7, 1), FLASH_OK);
	assert_int_equal(t_available(h, 2, 10), 7);
	assert_int_equal(t_available(h, 1, 10), 5);
}

static void test_sku_table_full_gives_efull(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;

	t_opts_small(&o);
	o.max_skus = 2;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 5, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_sku_add(h, 1, 12, 5, 1), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(before.st.skus, 2);
	assert_int_equal(before.st.skus_cap, 2);
}

static void test_shard_table_full_gives_efull_and_takes_no_partial_shards(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;

	t_opts_small(&o);
	o.max_shards = 4;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 30, 3), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.shards, 3);
	assert_int_equal(before.st.shards_cap, 4);
	assert_int_equal(flash_sku_add(h, 1, 11, 30, 2), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* the one shard left is still there for a one-shard sku */
	assert_int_equal(flash_sku_add(h, 1, 12, 30, 1), FLASH_OK);
	assert_int_equal(t_available(h, 1, 12), 30);
}

static void test_catalog_iteration_lists_every_entry_once_then_enot_found(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a;
	struct flash_sku_info si;
	unsigned seen_act = 0, seen_sku = 0;

	for (uint32_t id = 1; id <= 4; id++) {
		assert_int_equal(t_activity(h, id * 100, id, id, FLASH_SCOPE_SKU, 0), FLASH_OK);
		assert_int_equal(flash_sku_add(h, id * 100, id, id * 1000, id), FLASH_OK);
	}
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(flash_activity_at(h, i, &a), FLASH_OK);
		assert_true(a.id % 100 == 0 && a.id >= 100 && a.id <= 400);
		assert_int_equal(a.limit_per_user, a.id / 100);
		seen_act |= 1u << (a.id / 100);
		assert_int_equal(flash_sku_at(h, i, &si), FLASH_OK);
		assert_int_equal(si.activity_id, si.sku_id * 100);
		assert_int_equal(si.shards, si.sku_id);
		assert_int_equal(si.total, si.sku_id * 1000);
		assert_int_equal(si.available, si.sku_id * 1000);
		seen_sku |= 1u << si.sku_id;
	}
	assert_int_equal(seen_act, 0x1e);
	assert_int_equal(seen_sku, 0x1e);
	assert_int_equal(flash_activity_at(h, 4, &a), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_at(h, 4, &si), FLASH_ENOT_FOUND);
	assert_int_equal(flash_activity_at(h, UINT32_MAX, &a), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_at(h, UINT32_MAX, &si), FLASH_ENOT_FOUND);
}

static void test_catalog_reads_reject_null_with_einval(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_sku_info si;
	struct flash_activity a;
	struct flash_stats st;
	struct flash_order_info oi;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 5, 1), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, NULL), FLASH_EINVAL);
	assert_int_equal(flash_sku_get(NULL, 1, 10, &si), FLASH_EINVAL);
	assert_int_equal(flash_sku_get(h, 1, 11, &si), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_get(h, 2, 10, &si), FLASH_ENOT_FOUND);
	assert_int_equal(flash_activity_at(h, 0, NULL), FLASH_EINVAL);
	assert_int_equal(flash_activity_at(NULL, 0, &a), FLASH_EINVAL);
	assert_int_equal(flash_sku_at(h, 0, NULL), FLASH_EINVAL);
	assert_int_equal(flash_stats_get(h, NULL), FLASH_EINVAL);
	assert_int_equal(flash_stats_get(NULL, &st), FLASH_EINVAL);
	assert_int_equal(flash_order_get(h, 1, NULL), FLASH_EINVAL);
	assert_int_equal(flash_order_get(NULL, 1, &oi), FLASH_EINVAL);
	assert_int_equal(flash_order_get(h, 0, &oi), FLASH_EINVAL);   /* numbers start at 1 */
	assert_int_equal(flash_order_get(h, 1, &oi), FLASH_ENOT_FOUND);
	assert_int_equal(flash_orders_max(h), 0);
}

static void test_catalog_changes_are_emitted_as_records(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_activity a = act_open(3);
	struct t_recs recs = { 0 };

	a.limit_per_user = 2;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_SKU;
	a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA;
	a.day_offset_s = 3600;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 3, 30, 77, 2), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(recs.n, 2);
	assert_int_equal(recs.v[0].seq, 1);
	assert_int_equal(recs.v[1].seq, 2);
	assert_int_equal(recs.v[0].r.type, FLASH_REC_ACTIVITY);
	assert_int_equal(recs.v[0].r.slot, flash_slot(h));
	assert_int_equal(recs.v[0].r.activity_id, 3);
	assert_int_equal(recs.v[0].r.value, a.start_ns);
	assert_int_equal(recs.v[0].r.ts_ns, a.end_ns);
	assert_int_equal(recs.v[0].r.biz_day, 2u | (1u << 8) | (FLASH_ACT_CANCEL_RETURNS_QUOTA << 16));
	assert_int_equal(recs.v[0].r.limit_slot, 4);
	assert_int_equal((int64_t)recs.v[0].r.request_id, 3600);
	assert_int_equal(recs.v[1].r.type, FLASH_REC_SKU);
	assert_int_equal(recs.v[1].r.activity_id, 3);
	assert_int_equal(recs.v[1].r.sku_id, 30);
	assert_int_equal(recs.v[1].r.qty, 2);
	assert_int_equal(recs.v[1].r.value, 77);
	/* failed adds emit nothing */
	assert_int_equal(flash_activity_add(h, &a), FLASH_EEXIST);
	assert_int_equal(flash_sku_add(h, 3, 30, 1, 1), FLASH_EEXIST);
	recs.n = 0;
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(recs.n, 0);
	t_recs_free(&recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_activity_add_rejects_each_bad_field_with_einval),
		T(test_every_accepted_activity_is_rebuilt_exactly_from_its_record),
		T(test_activity_limits_at_the_edges_are_accepted),
		T(test_activity_id_taken_gives_eexist_and_keeps_the_first),
		T(test_activity_table_full_gives_efull),
		T(test_sku_add_rejects_each_bad_argument),
		T(test_sku_edges_are_accepted_and_read_back),
		T(test_sku_taken_gives_eexist_and_keeps_the_first),
		T(test_sku_table_full_gives_efull),
		T(test_shard_table_full_gives_efull_and_takes_no_partial_shards),
		T(test_catalog_iteration_lists_every_entry_once_then_enot_found),
		T(test_catalog_reads_reject_null_with_einval),
		T(test_catalog_changes_are_emitted_as_records),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
