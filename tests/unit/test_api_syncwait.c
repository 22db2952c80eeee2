/*
 * test_api_syncwait.c -- the bound on sync waits: an operation whose record
 * is not durable within the handle's bound returns FLASH_EFATE_UNKNOWN, is
 * placed all the same, and its fate is learnt with flash_durable_wait();
 * flash_durable_wait_all() waits for everything a handle published.
 * No daemon runs: the test is the consumer, so "the daemon is stopped" is
 * exact (nothing drains until the test says so).
 */
#include "helpers.h"

#include <string.h>
#include <unistd.h>

/* A sync segment with activity 1, sku 10 (10 units); its catalog records
 * are consumed, so the rings hold only what the test adds. */
static flash_t *sync_segment(char *name, size_t len, uint32_t durability)
{
	struct flash_seg_opts o;
	struct t_consumer *cons;
	flash_t *h;

	t_opts_small(&o);
	o.durability = durability;
	h = t_seg_new(&o, name, len);
	cons = t_consumer_start(name);
	assert_non_null(cons);
	assert_int_equal(t_activity(h, 1, 2, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_consumer_stop(cons);
	return h;
}

/* The ORDER record with order number @p ono among the records drained (kept). */
static const struct t_rec *find_order(flash_t *h, struct t_recs *recs, uint64_t ono)
{
	assert_int_equal(t_recs_drain_keep(h, recs), FLASH_OK);
	for (size_t i = 0; i < recs->n; i++)
		if (recs->v[i].r.type == FLASH_REC_ORDER && recs->v[i].r.order_no == ono)
			return &recs->v[i];
	return NULL;
}

static void test_sync_order_past_its_bound_is_placed_with_fate_unknown(void **state)
{
	char name[64];
	flash_t *h = sync_segment(name, sizeof name, FLASH_DURABILITY_SYNC);
	struct flash_order_res res, res2;
	struct flash_order_info oi;
	struct t_recs recs = { 0 };
	const struct t_rec *rec;

	(void)state;
	alarm(60);   /* an unbounded wait fails the test instead of hanging it */
	assert_int_equal(flash_sync_wait_set(h, 100), FLASH_OK);
	memset(&res, 0, sizeof res);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 77, &res), FLASH_EFATE_UNKNOWN);
	/* the result says which order it is, and the order stands */
	assert_true(res.order_no != 0);
	assert_true(res.lsn != 0);
	assert_int_equal(res.first_rc, FLASH_OK);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(oi.user_id, 5);
	assert_int_equal(t_available(h, 1, 10), 9);
	/* still nobody drains: asking again says the same */
	assert_int_equal(flash_durable_wait(h, res.lsn, 20), FLASH_EFATE_UNKNOWN);
	/* a retry with the request id is the same order, not a second one */
	memset(&res2, 0, sizeof res2);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 77, &res2), FLASH_EDUPLICATE);
	assert_int_equal(res2.first_rc, FLASH_OK);
	assert_int_equal(res2.order_no, res.order_no);
	assert_int_equal(t_available(h, 1, 10), 9);
	/* the daemon comes back: it drains the record and marks it durable */
	rec = find_order(h, &recs, res.order_no);
	assert_non_null(rec);
	assert_int_equal(rec->r.user_id, 5);
	assert_int_equal(flash_durable_advance(h, rec->r.slot, rec->seq), FLASH_OK);
	assert_int_equal(flash_durable_wait(h, res.lsn, 60000), FLASH_OK);
	alarm(0);
	t_recs_free(&recs);
}

static void test_sync_cancel_past_its_bound_is_done_with_fate_unknown(void **state)
{
	char name[64];
	flash_t *h = sync_segment(name, sizeof name, FLASH_DURABILITY_SYNC);
	struct flash_order_res res;
	struct flash_order_info oi;
	struct t_recs recs = { 0 };
	uint32_t units = 0;

	(void)state;
	alarm(60);
	assert_int_equal(flash_sync_wait_set(h, 50), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, &res), FLASH_EFATE_UNKNOWN);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_EFATE_UNKNOWN);
	assert_int_equal(units, 1);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_CANCELLED);
	assert_int_equal(t_available(h, 1, 10), 10);
	/* a second cancel finds it cancelled: the first one stands */
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_ECANCELLED);
	/* both records wait in the ring, in order, once each (catalog records
	 * the consumer had not taken yet may come first) */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	int orders = 0, cancels = 0;
	for (size_t i = 0; i < recs.n; i++) {
		if (recs.v[i].r.order_no != res.order_no)
			continue;
		if (recs.v[i].r.type == FLASH_REC_ORDER) {
			assert_int_equal(cancels, 0);
			orders++;
		} else if (recs.v[i].r.type == FLASH_REC_CANCEL) {
			cancels++;
		}
	}
	assert_int_equal(orders, 1);
	assert_int_equal(cancels, 1);
	alarm(0);
	t_recs_free(&recs);
}

static void test_durable_wait_learns_the_fate_in_async_too(void **state)
{
	char name[64];
	flash_t *h = sync_segment(name, sizeof name, FLASH_DURABILITY_ASYNC);
	struct flash_order_res res;
	struct t_recs recs = { 0 };
	const struct t_rec *rec;

	(void)state;
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(flash_durable_wait(h, res.lsn, 20), FLASH_EFATE_UNKNOWN);
	rec = find_order(h, &recs, res.order_no);
	assert_non_null(rec);
	assert_int_equal(flash_durable_advance(h, rec->r.slot, rec->seq), FLASH_OK);
	assert_int_equal(flash_durable_wait(h, res.lsn, 20), FLASH_OK);
	t_recs_free(&recs);
}

/* flash_durable_wait_all(): the last record the handle published decides,
 * not the first; a WAL failure ends the wait. */
static void test_durable_wait_all_waits_for_every_record_the_handle_published(void **state)
{
	char name[64];
	flash_t *h = sync_segment(name, sizeof name, FLASH_DURABILITY_ASYNC);
	struct flash_order_res res;
	struct t_recs recs = { 0 };
	const struct t_rec *restock = NULL, *order = NULL;

	(void)state;
	/* its catalog records consumed (async: the consumer may have stopped
	 * first), nothing is waiting */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	t_recs_free(&recs);
	assert_int_equal(flash_durable_wait_all(h, 20), FLASH_OK);
	assert_int_equal(flash_restock(h, 1, 10, 5), FLASH_OK);
	assert_int_equal(flash_durable_wait_all(h, 20), FLASH_EFATE_UNKNOWN);
	assert_int_equal(t_order(h, 1, 10, 8, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(t_recs_drain_keep(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++) {
		if (recs.v[i].r.type == FLASH_REC_RESTOCK)
			restock = &recs.v[i];
		else if (recs.v[i].r.type == FLASH_REC_ORDER)
			order = &recs.v[i];
	}
	assert_non_null(restock);
	assert_non_null(order);
	assert_true(order->seq > restock->seq);
	/* the restock is durable, the order after it is not yet */
	assert_int_equal(flash_durable_advance(h, restock->r.slot, restock->seq), FLASH_OK);
	assert_int_equal(flash_durable_wait_all(h, 20), FLASH_EFATE_UNKNOWN);
	assert_int_equal(flash_durable_wait(h, res.lsn, 20), FLASH_EFATE_UNKNOWN);
	assert_int_equal(flash_durable_advance(h, order->r.slot, order->seq), FLASH_OK);
	assert_int_equal(flash_durable_wait_all(h, 20), FLASH_OK);
	/* the WAL fails with a record waiting: the wait ends at once */
	assert_int_equal(flash_restock(h, 1, 10, -1), FLASH_OK);
	assert_int_equal(flash_durability_fail(h), FLASH_OK);
	assert_int_equal(flash_durable_wait_all(h, 60000), FLASH_EDURABILITY);
	t_recs_free(&recs);
}

static void test_sync_wait_arguments_are_checked(void **state)
{
	char name[64];
	flash_t *h = sync_segment(name, sizeof name, FLASH_DURABILITY_SYNC);
	flash_t *ro = NULL;

	(void)state;
	assert_int_equal(flash_sync_wait_set(NULL, 10), FLASH_EINVAL);
	assert_int_equal(flash_sync_wait_set(h, 0), FLASH_EINVAL);
	assert_int_equal(flash_durable_wait(NULL, 1, 10), FLASH_EINVAL);
	assert_int_equal(flash_durable_wait(h, 0, 10), FLASH_EINVAL);
	assert_int_equal(flash_durable_wait(h, 1, 0), FLASH_EINVAL);
	assert_int_equal(flash_durable_wait_all(NULL, 10), FLASH_EINVAL);
	assert_int_equal(flash_durable_wait_all(h, 0), FLASH_EINVAL);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	t_track_handle(ro);
	assert_int_equal(flash_sync_wait_set(ro, 10), FLASH_EREADONLY);
	assert_int_equal(flash_durable_wait(ro, 1, 10), FLASH_EREADONLY);
	assert_int_equal(flash_durable_wait_all(ro, 10), FLASH_EREADONLY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_sync_order_past_its_bound_is_placed_with_fate_unknown),
		T(test_sync_cancel_past_its_bound_is_done_with_fate_unknown),
		T(test_durable_wait_learns_the_fate_in_async_too),
		T(test_durable_wait_all_waits_for_every_record_the_handle_published),
		T(test_sync_wait_arguments_are_checked),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
