/*
 * stock_floor.c -- available stock never goes below zero, with the losing
 * side of every race driven deterministically.
 *
 * The floor is the check `available >= qty` inside the stock CAS loop
 * (engine/stock.c, intent_run): the peeks before it (stock_peek,
 * fs_stock_take's shard loads) only read, so a single process never gets
 * past them with too little stock, and a multi-process hammer reaches the
 * check only when a race happens to land between a load and its CAS.  Here
 * the race is made to happen every time: this program links the engine
 * built with crash points (flashstock_crash), in which intent_run calls
 * fs_crashpoint("counter", 1) after its load and check and before its CAS,
 * and wraps that function (-Wl,--wrap=fs_crashpoint).  At the first such
 * point of an armed operation on handle A, a second handle B (its own slot,
 * same segment) takes units from the very shard A is about to CAS.  A's CAS
 * then fails, and the loop must re-check the value it got back.
 *
 * Each case asserts that the interleaving happened (exactly one injection),
 * the exact outcome of A and B, every shard within 0..total, and that the
 * units still sellable are exactly total - sold: an order that finds none
 * left is refused.  Remove or weaken the check (e.g. `<` -> `<=` the wrong
 * way, or compare against qty - 1) and a case fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"

/* ---- the injection ------------------------------------------------------ */

typedef int (*inject_fn)(void);

static inject_fn g_inject;   /* armed: run at the next ("counter", 1) */
static int g_inside;         /* the injected operation runs: no nesting */
static int g_injected;       /* injections done */
static int g_inject_rc;      /* what the injected operation returned */

void __real_fs_crashpoint(const char *op, int step);
void __wrap_fs_crashpoint(const char *op, int step);

void __wrap_fs_crashpoint(const char *op, int step)
{
	__real_fs_crashpoint(op, step);
	if (g_inject && !g_inside && step == 1 && strcmp(op, "counter") == 0) {
		inject_fn fn = g_inject;

		g_inject = NULL;
		g_inside = 1;
		g_inject_rc = fn();
		g_inside = 0;
		g_injected++;
	}
}

/* ---- a segment, two handles ---------------------------------------------- */

static char g_name[64];
static flash_t *g_a, *g_b;    /* A: the operation raced; B: the racer */
static uint64_t g_b_user;     /* B's next order: this user, g_b_qty units */
static uint32_t g_b_qty;
static uint32_t g_sku;

static int setup(void **state)
{
	struct flash_seg_opts o;
	struct flash_activity a;
	struct timespec ts;
	static int seq;

	(void)state;
	snprintf(g_name, sizeof g_name, "/fs-floor-%d-%d", (int)getpid(), ++seq);
	flash_seg_destroy(g_name);
	flash_seg_opts_default(&o);
	o.max_activities = 4;
	o.max_skus = 8;
	o.max_shards = 32;
	o.max_users = 256;
	o.max_tokens = 16;
	o.max_orders = 256;
	o.max_requests = 16;
	o.max_locks = 4;
	o.max_procs = 4;
	o.ring_records = 64;
	o.durability = FLASH_DURABILITY_ASYNC;   /* no consumer needed for an ack */
	if (flash_seg_create(g_name, &o) != FLASH_OK || flash_open(g_name, 0, &g_a) != FLASH_OK ||
	    flash_open(g_name, 0, &g_b) != FLASH_OK)
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 1;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.start_ns = ((int64_t)ts.tv_sec - 3600) * 1000000000LL;
	a.end_ns = ((int64_t)ts.tv_sec + 3600) * 1000000000LL;
	g_inject = NULL;
	g_injected = 0;
	g_inject_rc = 0;
	return flash_activity_add(g_a, &a) == FLASH_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	flash_close(g_b);
	flash_close(g_a);
	g_a = g_b = NULL;
	flash_seg_destroy(g_name);
	return 0;
}

static int order(flash_t *h, uint64_t user, uint32_t qty, uint64_t *no)
{
	struct flash_order_req r = { .activity_id = 1, .sku_id = g_sku, .user_id = user, .qty = qty };
	struct flash_order_res res;
	int rc = flash_order(h, &r, &res);

	if (no)
		*no = rc == FLASH_OK ? res.order_no : 0;
	return rc;
}

/* B places its order: the racer. */
static int racer_order(void)
{
	return order(g_b, g_b_user, g_b_qty, NULL);
}

/* Shard k of the sku, read straight from the segment. */
static uint64_t shard(uint32_t k)
{
	uint32_t idx, base, n;
	const struct fs_sku *s = fs_sku_find(g_a, 1, g_sku, &idx);

	assert_non_null(s);
	assert_true(fs_sku_range(g_a, s, &base, &n));
	assert_true(k < n);
	return ck_pr_load_64(&g_a->shard[base + k].c.value);
}

/* A user whose home shard (fs_stock_take's hint) is @p home of @p n, not in
 * @p avoid: the cases choose which shard each side goes to first. */
static uint64_t user_homed(uint32_t home, uint32_t n, uint64_t from)
{
	for (uint64_t u = from;; u++)
		if (fs_hash(u, 3, 4) % n == home)
			return u;
}

/*
 * The invariant after every case: each shard holds 0..total units, the
 * shards sum to exactly total - @p sold, and @p sold is what the segment's
 * own sku view says was taken.
 */
static void check_floor(uint64_t total, uint64_t sold)
{
	struct flash_sku_info si;

	assert_int_equal(flash_sku_get(g_a, 1, g_sku, &si), FLASH_OK);
	assert_int_equal(si.total, total);
	uint64_t sum = 0;
	for (uint32_t k = 0; k < si.shards; k++) {
		uint64_t v = shard(k);
		if (v > total)
			fail_msg("shard %u holds %llu units of %llu: it went below zero", k,
			         (unsigned long long)v, (unsigned long long)total);
		sum += v;
	}
	assert_int_equal(sum, total - sold);
	assert_int_equal(si.available, total - sold);
}

/* Nothing left: one more unit is refused, and the refusal changes nothing. */
static void check_sold_out(uint64_t total, uint64_t sold, uint64_t user)
{
	assert_int_equal(order(g_a, user, 1, NULL), FLASH_ESOLD_OUT);
	check_floor(total, sold);
}

/* ---- cases -------------------------------------------------------------- */

/* The last unit: A and B both want it; B wins between A's check and A's CAS. */
static void test_last_unit_taken_between_check_and_cas_is_sold_out(void **state)
{
	(void)state;
	g_sku = 1;
	assert_int_equal(flash_sku_add(g_a, 1, g_sku, 1, 1), FLASH_OK);
	g_b_user = 2;
	g_b_qty = 1;
	g_inject = racer_order;
	assert_int_equal(order(g_a, 1, 1, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(g_injected, 1);
	assert_int_equal(g_inject_rc, FLASH_OK);
	check_floor(1, 1);
	check_sold_out(1, 1, 3);
	/* A's refusal gave its user's limit slot back: nothing held in vain */
	assert_int_equal(flash_restock(g_a, 1, g_sku, 1), FLASH_OK);
	assert_int_equal(order(g_a, 1, 1, NULL), FLASH_OK);
	check_floor(2, 2);
}

/* A multi-unit order at the edge: 3 units, A wants 3, B takes 1 first. */
static void test_multi_unit_order_short_by_one_after_the_race_is_sold_out(void **state)
{
	(void)state;
	g_sku = 1;
	assert_int_equal(flash_sku_add(g_a, 1, g_sku, 3, 1), FLASH_OK);
	g_b_user = 2;
	g_b_qty = 1;
	g_inject = racer_order;
	assert_int_equal(order(g_a, 1, 3, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(g_injected, 1);
	assert_int_equal(g_inject_rc, FLASH_OK);
	check_floor(3, 1);
	/* exactly what is left still sells: 2 units, then nothing */
	assert_int_equal(order(g_a, 3, 2, NULL), FLASH_OK);
	check_sold_out(3, 3, 4);
}

/* The other side of the edge: 4 units, A wants 3, B takes 1 -- exactly 3
 * are left, so A's retried CAS must succeed (a check that is too strict
 * fails here) and nothing is left after it. */
static void test_multi_unit_order_exactly_covered_after_the_race_is_sold(void **state)
{
	(void)state;
	g_sku = 1;
	assert_int_equal(flash_sku_add(g_a, 1, g_sku, 4, 1), FLASH_OK);
	g_b_user = 2;
	g_b_qty = 1;
	g_inject = racer_order;
	assert_int_equal(order(g_a, 1, 3, NULL), FLASH_OK);
	assert_int_equal(g_injected, 1);
	assert_int_equal(g_inject_rc, FLASH_OK);
	check_sold_out(4, 4, 3);
}

/*
 * Borrowing across shards: 2 + 2 units, A wants 3 (no shard has 3, so A
 * borrows: 2 from its home shard, then 1 from the other).  B takes 1 from
 * A's home shard between A's check and A's CAS there, leaving 1 where A
 * wants 2.  A must not take 2 from it: it gathers its 3 elsewhere or not at
 * all, and the sku ends with exactly 4 - 4 = 0 everywhere.
 */
static void test_borrowing_order_racing_for_its_home_shard_never_overdraws_it(void **state)
{
	(void)state;
	g_sku = 2;
	assert_int_equal(flash_sku_add(g_a, 1, g_sku, 4, 2), FLASH_OK);
	assert_int_equal(shard(0), 2);
	assert_int_equal(shard(1), 2);
	uint64_t ua = user_homed(0, 2, 1);
	g_b_user = user_homed(0, 2, ua + 1);   /* B's single-shard take hits shard 0 too */
	g_b_qty = 1;
	g_inject = racer_order;
	assert_int_equal(order(g_a, ua, 3, NULL), FLASH_OK);
	assert_int_equal(g_injected, 1);
	assert_int_equal(g_inject_rc, FLASH_OK);
	check_floor(4, 4);
	check_sold_out(4, 4, user_homed(1, 2, g_b_user + 1));
	check_sold_out(4, 4, user_homed(0, 2, g_b_user + 1));
}

/* A restock with a negative delta larger than what is left once B has taken
 * its unit: refused, and nothing goes below zero. */
static void test_negative_restock_larger_than_what_the_race_left_is_refused(void **state)
{
	(void)state;
	g_sku = 1;
	assert_int_equal(flash_sku_add(g_a, 1, g_sku, 2, 1), FLASH_OK);
	g_b_user = 2;
	g_b_qty = 1;
	g_inject = racer_order;
	assert_int_equal(flash_restock(g_a, 1, g_sku, -2), FLASH_ESOLD_OUT);
	assert_int_equal(g_injected, 1);
	assert_int_equal(g_inject_rc, FLASH_OK);
	check_floor(2, 1);
	/* the one unit left can still be taken back, and then nothing */
	assert_int_equal(flash_restock(g_a, 1, g_sku, -1), FLASH_OK);
	check_sold_out(1, 1, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_last_unit_taken_between_check_and_cas_is_sold_out,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_unit_order_short_by_one_after_the_race_is_sold_out,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_unit_order_exactly_covered_after_the_race_is_sold,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_borrowing_order_racing_for_its_home_shard_never_overdraws_it,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_restock_larger_than_what_the_race_left_is_refused,
		                                setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
