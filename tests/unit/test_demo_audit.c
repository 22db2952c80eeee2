/*
 * test_demo_audit.c -- the audit behind `flashstock demo`'s verdict
 * (tools/demo_check.c) finds what it claims to find: a clean sale gives
 * exact figures and zero findings; a missing ring record, a buyer tally that
 * disagrees, a user over the limit, a ring sequence gap, a repeated record
 * each raise exactly the finding they should.  A buyer (tools/demo_buyer.c)
 * whose sync orders outlive their wait bound (no daemon) counts each
 * FLASH_EFATE_UNKNOWN as the placed order it is, and the audit holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "demo.h"

struct fx {
	char                  name[64];
	struct flash_seg_opts o;
	flash_t              *h;
	struct demo_cfg       cfg;
	struct demo_shared   *sh;
	struct demo_rings     rings;
	uint64_t              order_no[16];   /* by user id */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A segment with the demo's activity (limit @p k, scope @p scope, no token)
 * and two skus of 5 and 3 units. */
static struct fx *fx_new(uint32_t k, uint32_t scope)
{
	static unsigned n;
	struct flash_activity a;
	struct fx *f = calloc(1, sizeof *f);

	assert_non_null(f);
	snprintf(f->name, sizeof f->name, "/fs-audit-%d-%u", (int)getpid(), n++);
	flash_seg_opts_default(&f->o);
	f->o.max_activities = 4;
	f->o.max_skus = 16;
	f->o.max_shards = 64;
	f->o.max_users = f->o.max_tokens = f->o.max_orders = f->o.max_requests = 1024;
	f->o.max_locks = 16;
	f->o.max_procs = 8;
	f->o.ring_records = 64;
	assert_int_equal(flash_seg_create(f->name, &f->o), FLASH_OK);
	assert_int_equal(flash_open(f->name, 0, &f->h), FLASH_OK);
	memset(&a, 0, sizeof a);
	a.id = DEMO_ACTIVITY;
	a.limit_per_user = k;
	a.max_qty = 1;
	a.scope = scope;
	a.start_ns = now_ns() - 1000000000LL;
	a.end_ns = a.start_ns + 3600LL * 1000000000LL;
	assert_int_equal(flash_activity_add(f->h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(f->h, DEMO_ACTIVITY, 1, 5, 2), FLASH_OK);
	assert_int_equal(flash_sku_add(f->h, DEMO_ACTIVITY, 2, 3, 1), FLASH_OK);

	f->cfg.name = f->name;
	f->cfg.buyers = 8;
	f->cfg.nskus = 2;
	f->cfg.units = 8;
	f->cfg.procs = 1;
	f->cfg.limit = k;
	f->cfg.sku_units[0] = 5;
	f->cfg.sku_units[1] = 3;
	f->sh = calloc(1, sizeof *f->sh + sizeof(struct demo_proc));
	assert_non_null(f->sh);
	assert_int_equal(demo_rings_init(&f->rings, f->o.max_orders, f->o.max_procs), FLASH_OK);
	return f;
}

static void fx_free(struct fx *f)
{
	flash_close(f->h);
	flash_seg_destroy(f->name);
	demo_rings_free(&f->rings);
	free(f->sh);
	free(f);
}

/* One order by @p user for @p sku, tallied as a buyer would. */
static void fx_order(struct fx *f, uint64_t user, uint32_t sku)
{
	struct flash_order_req r;
	struct flash_order_res res;

	memset(&r, 0, sizeof r);
	r.activity_id = DEMO_ACTIVITY;
	r.sku_id = sku;
	r.user_id = user;
	r.qty = 1;
	assert_int_equal(flash_order(f->h, &r, &res), FLASH_OK);
	f->order_no[user] = res.order_no;
	f->sh->ds_proc[0].dp_acked_sku[sku - 1]++;
}

static void fx_cancel(struct fx *f, uint64_t user, uint32_t sku)
{
	uint32_t units = 0;

	assert_int_equal(flash_cancel(f->h, f->order_no[user], &units), FLASH_OK);
	assert_int_equal(units, 1);
	f->sh->ds_proc[0].dp_cancelled_sku[sku - 1]++;
}

static void fx_drain(struct fx *f)
{
	uint32_t n = 0;

	assert_int_equal(flash_ring_drain(f->h, demo_rings_record, &f->rings, 10000, &n), FLASH_OK);
	assert_true(n > 0);
}

/* Users 1..4 buy sku 1, user 5 buys sku 2, user 2 cancels. */
static void fx_sale(struct fx *f)
{
	uint64_t u;

	for (u = 1; u <= 4; u++)
		fx_order(f, u, 1);
	fx_order(f, 5, 2);
	fx_cancel(f, 2, 1);
	fx_drain(f);
}

static void test_audit_clean_sale_gives_exact_figures_and_no_findings(void **state)
{
	struct fx *f = fx_new(1, FLASH_SCOPE_ACTIVITY);
	struct demo_audit a;

	(void)state;
	fx_sale(f);
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &a), FLASH_OK);
	assert_int_equal(a.active_orders, 4);
	assert_int_equal(a.cancelled_orders, 1);
	assert_int_equal(a.active_qty[0], 3);
	assert_int_equal(a.active_qty[1], 1);
	assert_int_equal(a.units_total, 8);
	assert_int_equal(a.units_available, 4);
	assert_int_equal(a.sold, 4);
	assert_int_equal(a.orders_scanned, flash_orders_max(f->h));
	assert_int_equal(a.oversold, 0);
	assert_int_equal(a.leaked_units, 0);
	assert_int_equal(a.users_over_limit, 0);
	assert_int_equal(a.ring_mismatches, 0);
	assert_int_equal(a.client_mismatches, 0);
	assert_string_equal(a.first_problem, "");
	assert_int_equal(f->rings.orders, 5);
	assert_int_equal(f->rings.cancels, 1);
	assert_int_equal(f->rings.anomalies, 0);
	fx_free(f);
}

static void test_audit_finds_an_order_whose_record_was_lost(void **state)
{
	struct fx *f = fx_new(1, FLASH_SCOPE_ACTIVITY);
	struct demo_audit a;
	uint64_t lost;

	(void)state;
	fx_sale(f);
	lost = f->order_no[3];
	f->rings.seen[lost] = 0;
	f->rings.order_qty[0]--;
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &a), FLASH_OK);
	/* the order itself and its sku's record sum */
	assert_int_equal(a.ring_mismatches, 2);
	assert_non_null(strstr(a.first_problem, "no ORDER record drained"));
	assert_int_equal(a.client_mismatches, 0);
	assert_int_equal(a.leaked_units, 0);
	fx_free(f);
}

static void test_audit_finds_buyer_tallies_that_disagree(void **state)
{
	struct fx *f = fx_new(1, FLASH_SCOPE_ACTIVITY);
	struct demo_audit a;

	(void)state;
	fx_sale(f);
	f->sh->ds_proc[0].dp_acked_sku[1]++;   /* a buyer believes sku 2 sold twice */
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &a), FLASH_OK);
	assert_int_equal(a.client_mismatches, 1);
	assert_non_null(strstr(a.first_problem, "sku 2: buyers were acknowledged 2"));
	assert_int_equal(a.ring_mismatches, 0);
	fx_free(f);
}

static void test_audit_finds_a_user_over_the_demo_limit(void **state)
{
	struct fx *f = fx_new(2, FLASH_SCOPE_ACTIVITY);   /* the segment allows 2 */
	struct demo_audit a;

	(void)state;
	fx_order(f, 1, 1);
	fx_order(f, 1, 2);
	fx_order(f, 2, 1);
	fx_drain(f);
	f->cfg.limit = 1;                                 /* the demo meant 1 */
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &a), FLASH_OK);
	assert_int_equal(a.users_over_limit, 1);
	assert_non_null(strstr(a.first_problem, "the segment holds limit 2, the demo set 1"));
	f->cfg.limit = 2;
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &a), FLASH_OK);
	assert_int_equal(a.users_over_limit, 0);
	assert_string_equal(a.first_problem, "");
	fx_free(f);
}

static void test_audit_groups_users_by_the_activity_scope(void **state)
{
	struct fx *f = fx_new(1, FLASH_SCOPE_SKU);        /* 1 per (user, sku) */
	struct demo_audit a;

	(void)state;
	fx_order(f, 1, 1);
	fx_order(f, 1, 2);
	fx_drain(f);
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &a), FLASH_OK);
	assert_int_equal(a.active_orders, 2);
	assert_int_equal(a.users_over_limit, 0);
	fx_free(f);
}

static void test_rings_flag_gaps_repeats_and_unknown_records(void **state)
{
	struct demo_rings r;
	struct flash_record rec;

	(void)state;
	assert_int_equal(demo_rings_init(&r, 100, 4), FLASH_OK);
	memset(&rec, 0, sizeof rec);
	rec.type = FLASH_REC_ORDER;
	rec.slot = 1;
	rec.activity_id = DEMO_ACTIVITY;
	rec.sku_id = 1;
	rec.qty = 1;
	rec.order_no = 7;
	demo_rings_record(&r, &rec, 1);
	assert_int_equal(r.anomalies, 0);
	assert_int_equal(r.order_qty[0], 1);
	rec.order_no = 8;
	demo_rings_record(&r, &rec, 3);                   /* seq 2 missing */
	assert_int_equal(r.anomalies, 1);
	assert_non_null(strstr(r.first_anomaly, "sequence gap"));
	demo_rings_record(&r, &rec, 4);                   /* order 8 twice */
	assert_int_equal(r.anomalies, 2);
	rec.type = 99;
	demo_rings_record(&r, &rec, 5);
	assert_int_equal(r.anomalies, 3);
	rec.type = FLASH_REC_CANCEL;
	rec.order_no = 1000;                              /* beyond the order table */
	demo_rings_record(&r, &rec, 6);
	assert_int_equal(r.anomalies, 4);
	rec.slot = 9;                                     /* no such slot */
	rec.order_no = 7;
	demo_rings_record(&r, &rec, 1);
	assert_int_equal(r.anomalies, 5);
	assert_int_equal(r.cancel_qty[0], 1);
	assert_int_equal(r.records, 6);
	demo_rings_free(&r);
}

/* Count one drained record and free its ring space, as a daemon would
 * once the record is durable. */
static int drain_advance(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct fx *f = arg;

	demo_rings_record(&f->rings, rec, seq);
	return flash_durable_advance(f->h, rec->slot, seq) != FLASH_OK;
}

/*
 * Sync durability and nothing draining: every order and cancel of the
 * buyer outlives its 1 ms wait bound and answers FLASH_EFATE_UNKNOWN.
 * The order is placed (documented: it reads ACTIVE, its fate is learned
 * with flash_durable_wait() or by order number), so the buyer counts it as
 * acknowledged: no unexpected answer, retries answer FLASH_EDUPLICATE with
 * the first outcome (FLASH_OK), cancels return their units, and the audit
 * of the drained records against the table and the tallies finds nothing.
 */
static void test_buyer_counts_fate_unknown_as_placed_and_the_audit_holds(void **state)
{
	static unsigned n;
	struct fx *f = calloc(1, sizeof *f);
	struct flash_activity a;
	struct demo_audit au;
	struct demo_proc *p;
	uint32_t drained = 0;
	uint64_t placed = 0;

	(void)state;
	assert_non_null(f);
	snprintf(f->name, sizeof f->name, "/fs-audit-sync-%d-%u", (int)getpid(), n++);
	flash_seg_opts_default(&f->o);
	f->o.max_activities = 4;
	f->o.max_skus = 16;
	f->o.max_shards = 64;
	f->o.max_users = f->o.max_tokens = f->o.max_orders = f->o.max_requests = 1024;
	f->o.max_locks = 16;
	f->o.max_procs = 8;
	f->o.ring_records = 256;
	f->o.durability = FLASH_DURABILITY_SYNC;
	assert_int_equal(flash_seg_create(f->name, &f->o), FLASH_OK);
	assert_int_equal(flash_open(f->name, 0, &f->h), FLASH_OK);
	memset(&a, 0, sizeof a);
	a.id = DEMO_ACTIVITY;
	a.limit_per_user = 2;
	a.max_qty = 1;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.flags = FLASH_ACT_TOKEN_REQUIRED;
	a.start_ns = now_ns() - 1000000000LL;
	a.end_ns = a.start_ns + 3600LL * 1000000000LL;
	assert_int_equal(flash_activity_add(f->h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(f->h, DEMO_ACTIVITY, 1, 5, 2), FLASH_OK);
	assert_int_equal(flash_sku_add(f->h, DEMO_ACTIVITY, 2, 3, 1), FLASH_OK);

	f->cfg.name = f->name;
	f->cfg.buyers = 12;
	f->cfg.nskus = 2;
	f->cfg.units = 8;
	f->cfg.procs = 1;
	f->cfg.limit = 2;
	f->cfg.sku_units[0] = 5;
	f->cfg.sku_units[1] = 3;
	f->cfg.sku_shards[0] = 2;
	f->cfg.sku_shards[1] = 1;
	f->cfg.cancel_pct = 30;
	f->cfg.retry_pct = 50;
	f->cfg.repeat_pm = 300;
	f->cfg.seed = 0x5eed5a1e2026ULL;
	f->cfg.sync_wait_ms = 1;
	f->sh = calloc(1, sizeof *f->sh + sizeof(struct demo_proc));
	assert_non_null(f->sh);
	assert_int_equal(demo_rings_init(&f->rings, f->o.max_orders, f->o.max_procs), FLASH_OK);

	f->sh->ds_go = 1;
	assert_int_equal(demo_buyer_run(&f->cfg, f->sh, 0), 0);
	p = &f->sh->ds_proc[0];
	if (p->dp_unexpected)
		print_message("first unexpected answer: %s: got %s\n", p->dp_first_bad,
		              flash_rcname(p->dp_first_bad_rc));
	assert_int_equal(p->dp_unexpected, 0);
	assert_true(p->dp_fate_unknown > 0);
	assert_true(p->dp_acked > 0);
	assert_true(p->dp_cancels > 0);
	assert_int_equal(p->dp_cancel_twice_ok, p->dp_cancels);
	assert_true(p->dp_retries > 0);
	assert_int_equal(p->dp_retry_ok, p->dp_retries);

	/* the daemon comes: every record drained; the audit finds nothing */
	assert_int_equal(flash_ring_drain(f->h, drain_advance, f, 10000, &drained), FLASH_OK);
	assert_true(drained > 0);
	assert_int_equal(demo_audit_run(f->h, &f->cfg, &f->rings, f->sh, &au), FLASH_OK);
	if (au.first_problem[0])
		print_message("audit: %s\n", au.first_problem);
	assert_int_equal(au.oversold, 0);
	assert_int_equal(au.leaked_units, 0);
	assert_int_equal(au.users_over_limit, 0);
	assert_int_equal(au.ring_mismatches, 0);
	assert_int_equal(au.client_mismatches, 0);
	assert_int_equal(f->rings.anomalies, 0);
	for (uint32_t s = 0; s < f->cfg.nskus; s++)
		placed += p->dp_acked_sku[s];
	assert_int_equal(placed, p->dp_acked);
	assert_int_equal(f->rings.orders, p->dp_acked);
	assert_int_equal(au.active_orders + au.cancelled_orders, p->dp_acked);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_audit_clean_sale_gives_exact_figures_and_no_findings),
		cmocka_unit_test(test_audit_finds_an_order_whose_record_was_lost),
		cmocka_unit_test(test_audit_finds_buyer_tallies_that_disagree),
		cmocka_unit_test(test_audit_finds_a_user_over_the_demo_limit),
		cmocka_unit_test(test_audit_groups_users_by_the_activity_scope),
		cmocka_unit_test(test_rings_flag_gaps_repeats_and_unknown_records),
		cmocka_unit_test(test_buyer_counts_fate_unknown_as_placed_and_the_audit_holds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
