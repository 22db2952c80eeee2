/*
 * test_api_cancel.c -- cancel and restock: units return exactly once, the
 * quota policy both ways, every bad argument, a full ring, and the records.
 */
#include "helpers.h"

#include <string.h>

static flash_t *setup(char *name, size_t len, uint32_t k, uint32_t flags, uint64_t units,
                      uint32_t shards)
{
	flash_t *h = t_seg_new(NULL, name, len);

	assert_int_equal(t_activity(h, 1, k, 5, FLASH_SCOPE_ACTIVITY, flags), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, units, shards), FLASH_OK);
	return h;
}

static const struct t_rec *find_rec(const struct t_recs *r, uint16_t type, uint64_t order_no,
                                    int *count)
{
	const struct t_rec *found = NULL;

	*count = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].r.type == type && r->v[i].r.order_no == order_no) {
			found = &r->v[i];
			(*count)++;
		}
	return found;
}

static void test_cancel_returns_units_once_and_second_cancel_gives_ecancelled(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10, 1);
	struct flash_order_res res;
	struct flash_order_info oi;
	struct flash_stats st;
	struct t_snap before;
	struct t_recs recs = { 0 };
	const struct t_rec *rc;
	uint32_t units = 0;
	int n;

	assert_int_equal(t_order(h, 1, 10, 7, 3, 0, 0, &res), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 7);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_OK);
	assert_int_equal(units, 3);
	assert_int_equal(t_available(h, 1, 10), 10);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_CANCELLED);
	assert_int_equal(oi.qty, 3);
	assert_int_equal(oi.user_id, 7);

	t_snap_take(h, &before);
	assert_int_equal(before.st.cancels, 1);
	units = 0;
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_ECANCELLED);
	assert_int_equal(units, 0);
	assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_ECANCELLED);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.cancels, 1);

	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	rc = find_rec(&recs, FLASH_REC_CANCEL, res.order_no, &n);
	assert_int_equal(n, 1);
	assert_int_equal(rc->r.qty, 3);
	assert_int_equal(rc->r.user_id, 7);
	assert_int_equal(rc->r.activity_id, 1);
	assert_int_equal(rc->r.sku_id, 10);
	assert_int_equal(rc->r.limit_slot, 1);
	assert_int_equal(rc->r.flags, 0);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, NULL), 0);
	t_recs_free(&recs);
}

static void test_cancel_keeps_quota_when_policy_says_so(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10, 1);
	struct flash_order_res res;
	struct t_snap before;
	uint32_t units = 0;

	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_OK);
	assert_int_equal(units, 1);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(t_available(h, 1, 10), 10);
}

static void test_cancel_returns_quota_when_policy_says_so(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 2, FLASH_ACT_CANCEL_RETURNS_QUOTA, 10, 1);
	struct flash_order_res r1, r2, r3;
	struct t_recs recs = { 0 };
	uint32_t units = 0;
	int n;

	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &r2), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(flash_cancel(h, r1.order_no, &units), FLASH_OK);
	assert_int_equal(units, 1);
	/* the freed slot is taken again; a second cancel frees nothing more */
	assert_int_equal(flash_cancel(h, r1.order_no, &units), FLASH_ECANCELLED);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &r3), FLASH_OK);
	assert_int_equal(r3.limit_slot, r1.limit_slot);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_available(h, 1, 10), 8);

	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(find_rec(&recs, FLASH_REC_CANCEL, r1.order_no, &n)->r.flags, 1);
	assert_int_equal(n, 1);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 2, NULL), 0);
	t_recs_free(&recs);
}

static void test_cancel_unknown_order_gives_enot_found(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10, 1);
	struct flash_order_res res;
	struct t_snap before;
	uint64_t max;
	uint32_t units = 0;

	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &res), FLASH_OK);
	max = flash_orders_max(h);
	t_snap_take(h, &before);
	assert_int_equal(flash_cancel(h, max + 1, &units), FLASH_ENOT_FOUND);
	assert_int_equal(flash_cancel(h, UINT64_MAX, &units), FLASH_ENOT_FOUND);
	assert_int_equal(flash_cancel(h, 0, &units), FLASH_EINVAL);   /* numbers start at 1 */
	/* a number handed out but never completed is no order either */
	for (uint64_t no = 1; no <= max; no++)
		if (no != res.order_no)
			assert_int_equal(flash_cancel(h, no, &units), FLASH_ENOT_FOUND);
	assert_int_equal(flash_cancel(NULL, res.order_no, &units), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(units, 0);
}

static void test_cancel_on_sharded_sku_returns_every_unit(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, FLASH_LIMIT_MAX, 0, 20, 4);
	struct flash_order_res res[4];
	struct t_recs recs = { 0 };
	uint32_t units;

	/* qty 5 from one user: 20 units over 4 shards, the user's shard lends */
	for (int i = 0; i < 4; i++)
		assert_int_equal(t_order(h, 1, 10, 3, 5, 0, 0, &res[i]), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 0);
	for (int i = 0; i < 4; i++) {
		units = 0;
		assert_int_equal(flash_cancel(h, res[i].order_no, &units), FLASH_OK);
		assert_int_equal(units, 5);
	}
	assert_int_equal(t_available(h, 1, 10), 20);
	/* and every unit sells again */
	for (int i = 0; i < 4; i++)
		assert_int_equal(t_order(h, 1, 10, 4, 5, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 4, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, FLASH_LIMIT_MAX, NULL), 0);
	t_recs_free(&recs);
}

static void test_restock_positive_adds_to_total_and_available(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10, 1);
	struct flash_sku_info si;
	struct t_recs recs = { 0 };
	int found = 0;

	assert_int_equal(t_order(h, 1, 10, 7, 4, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_restock(h, 1, 10, 15), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 25);
	assert_int_equal(si.available, 21);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_RESTOCK) {
			found++;
			assert_int_equal(recs.v[i].r.activity_id, 1);
			assert_int_equal(recs.v[i].r.sku_id, 10);
			assert_int_equal(recs.v[i].r.value, 15);
		}
	assert_int_equal(found, 1);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, NULL), 0);
	t_recs_free(&recs);
}

static void test_restock_negative_removes_unsold_units_never_below_zero(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10, 1);
	struct flash_sku_info si;
	struct t_snap before;
	struct t_recs recs = { 0 };

	assert_int_equal(t_order(h, 1, 10, 7, 4, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_restock(h, 1, 10, -2), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 8);
	assert_int_equal(si.available, 4);
	t_snap_take(h, &before);
	assert_int_equal(flash_restock(h, 1, 10, -5), FLASH_ESOLD_OUT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_restock(h, 1, 10, -4), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 4);
	assert_int_equal(si.available, 0);
	assert_int_equal(t_order(h, 1, 10, 8, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, NULL), 0);
	t_recs_free(&recs);
}

static void test_restock_rejects_bad_arguments(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10, 1);
	struct t_snap before;

	t_snap_take(h, &before);
	assert_int_equal(flash_restock(h, 1, 10, 0), FLASH_EINVAL);
	assert_int_equal(flash_restock(h, 1, 10, INT64_MIN), FLASH_EINVAL);
	assert_int_equal(flash_restock(h, 1, 10, INT64_MAX), FLASH_EINVAL);
	assert_int_equal(flash_restock(h, 1, 10, (int64_t)(1ull << 40) + 1), FLASH_EINVAL);
	assert_int_equal(flash_restock(NULL, 1, 10, 1), FLASH_EINVAL);
	assert_int_equal(flash_restock(h, 1, 11, 1), FLASH_ENOT_FOUND);
	assert_int_equal(flash_restock(h, 2, 10, 1), FLASH_ENOT_FOUND);
	assert_int_equal(flash_restock(h, 0, 0, 1), FLASH_ENOT_FOUND);
	T_ASSERT_UNCHANGED(h, &before, 0);
}

static void test_restock_of_sold_out_sharded_sku_sells_to_one_user_again(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, FLASH_LIMIT_MAX, 0, 8, 4);
	struct flash_sku_info si;

	for (int i = 0; i < 8; i++)
		assert_int_equal(t_order(h, 1, 10, 55, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 55, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(flash_restock(h, 1, 10, 9), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 17);
	assert_int_equal(si.available, 9);
	for (int i = 0; i < 9; i++)
		assert_int_equal(t_order(h, 1, 10, 55, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 55, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	/* removing units takes them from whichever shards hold them */
	assert_int_equal(flash_restock(h, 1, 10, 6), FLASH_OK);
	assert_int_equal(flash_restock(h, 1, 10, -6), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 0);
}

static void test_full_ring_gives_ebusy_for_cancel_and_restock(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct flash_order_res res, first;
	struct flash_order_info oi;
	struct t_snap before;
	uint32_t units = 0;
	uint64_t u = 1;
	int rc;

	t_opts_small(&o);
	o.ring_records = 16;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, u++, 1, 0, 0, &first), FLASH_OK);
	while ((rc = t_order(h, 1, 10, u++, 1, 0, 0, &res)) == FLASH_OK)
		assert_true(u < 20);
	assert_int_equal(rc, FLASH_EBUSY);
	t_snap_take(h, &before);
	assert_int_equal(flash_cancel(h, first.order_no, &units), FLASH_EBUSY);
	assert_int_equal(flash_restock(h, 1, 10, 5), FLASH_EBUSY);
	assert_int_equal(flash_restock(h, 1, 10, -5), FLASH_EBUSY);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(units, 0);
	assert_int_equal(flash_order_get(h, first.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	/* the user's quota is still held: the failed cancel gave nothing back */
	{
		struct t_recs recs = { 0 };

		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		assert_int_equal(t_order(h, 1, 10, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
		assert_int_equal(flash_cancel(h, first.order_no, &units), FLASH_OK);
		assert_int_equal(units, 1);
		t_recs_free(&recs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_cancel_returns_units_once_and_second_cancel_gives_ecancelled),
		T(test_cancel_keeps_quota_when_policy_says_so),
		T(test_cancel_returns_quota_when_policy_says_so),
		T(test_cancel_unknown_order_gives_enot_found),
		T(test_cancel_on_sharded_sku_returns_every_unit),
		T(test_restock_positive_adds_to_total_and_available),
		T(test_restock_negative_removes_unsold_units_never_below_zero),
		T(test_restock_rejects_bad_arguments),
		T(test_restock_of_sold_out_sharded_sku_sells_to_one_user_again),
		T(test_full_ring_gives_ebusy_for_cancel_and_restock),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
