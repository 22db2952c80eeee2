/*
 * test_mp_races.c -- processes racing for the same one-time thing.
 *
 *   - one token, many redeemers: exactly one order per token;
 *   - one request id, many senders: exactly one order per id, every
 *     duplicate names that order;
 *   - one lock, many acquirers: never two holders, fences strictly increase
 *     in grant order.
 *
 * Children start together on a pipe barrier, each with its own handle, and
 * report by exit status and through a MAP_SHARED block; the parent checks
 * the outcome from the order table.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NPROC 8
#define NITEMS 300

struct race {
	const char *name;
	uint64_t tokens[NITEMS];             /* token race: token of user i+1 */
	uint64_t seen[NPROC][NITEMS];        /* order number each child was told */
	uint64_t lock_log[NPROC * 4096];     /* lock race: fences in grant order */
	uint64_t lock_n;                     /* entries in lock_log */
	uint64_t holder;                     /* lock race: current holder + 1 */
	uint32_t rounds;
};

static struct race *race_new(const char *name)
{
	struct race *r = t_shared_alloc(sizeof *r);

	memset(r, 0, sizeof *r);
	r->name = name;
	return r;
}

static flash_t *race_segment(char *name, size_t len, uint32_t k, uint32_t flags)
{
	struct flash_seg_opts o;
	flash_t *h;

	t_opts_small(&o);
	o.max_users = 8192;
	o.max_orders = 8192;
	o.max_tokens = 1024;
	o.max_requests = 1024;
	o.max_procs = 16;
	o.ring_records = 4096;
	h = t_seg_new(&o, name, len);
	assert_int_equal(t_activity(h, 1, k, 1, FLASH_SCOPE_ACTIVITY, flags), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100000, 4), FLASH_OK);
	return h;
}

static void run_children(t_child_fn fn, struct race *r)
{
	pid_t pids[NPROC];
	int go;

	assert_int_equal(t_fork_start(NPROC, fn, r, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(t_wait_all(NPROC, pids), 0);
}

/* ---- tokens ------------------------------------------------------------- */

static int token_racer(int c, void *arg)
{
	struct race *r = arg;
	flash_t *h = NULL;

	if (flash_open(r->name, 0, &h) != FLASH_OK)
		return 10;
	for (int i = 0; i < NITEMS; i++) {
		int j = (i + c * 41) % NITEMS;
		struct flash_order_res res;
		int rc = t_order(h, 1, 10, (uint64_t)j + 1, 1, r->tokens[j], 0, &res);

		if (rc == FLASH_OK)
			r->seen[c][j] = res.order_no;
		else if (rc != FLASH_EBAD_TOKEN) {
			fprintf(stderr, "token racer %d: %s\n", c, flash_rcname(rc));
			return 11;
		}
	}
	flash_close(h);
	return 0;
}

static void test_one_token_raced_by_many_processes_makes_exactly_one_order(void **state)
{
	char name[64];
	flash_t *h = race_segment(name, sizeof name, FLASH_LIMIT_MAX, FLASH_ACT_TOKEN_REQUIRED);
	struct race *r = race_new(name);
	struct t_recs recs = { 0 };
	struct t_ledger lg;

	for (int i = 0; i < NITEMS; i++)
		assert_int_equal(flash_token_issue(h, 1, 10, (uint64_t)i + 1, 600000, &r->tokens[i]), FLASH_OK);
	run_children(token_racer, r);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, FLASH_LIMIT_MAX, &lg), 0);
	assert_int_equal(lg.active_orders, NITEMS);
	assert_int_equal(lg.max_per_user, 1);   /* K is 64: only the token stops a second */
	for (int i = 0; i < NITEMS; i++) {
		int winners = 0;

		for (int c = 0; c < NPROC; c++)
			winners += r->seen[c][i] != 0;
		assert_int_equal(winners, 1);
	}
	t_recs_free(&recs);
	t_shared_free(r, sizeof *r);
}

/* ---- request ids -------------------------------------------------------- */

static int request_racer(int c, void *arg)
{
	struct race *r = arg;
	flash_t *h = NULL;

	if (flash_open(r->name, 0, &h) != FLASH_OK)
		return 10;
	for (int i = 0; i < NITEMS; i++) {
		int j = (i + c * 41) % NITEMS;
		struct flash_order_res res;
		int rc;

		/* a request still in flight elsewhere answers EBUSY: retry, as a
		 * client would, until the first outcome is known */
		do
			rc = t_order(h, 1, 10, (uint64_t)j + 1, 1, 0, 5000 + (uint64_t)j, &res);
		while (rc == FLASH_EBUSY);
		if (rc == FLASH_OK)
			r->seen[c][j] = res.order_no;
		else if (rc == FLASH_EDUPLICATE && res.first_rc == FLASH_OK)
			r->seen[c][j] = res.order_no;
		else {
			fprintf(stderr, "request racer %d: %s (first %s)\n", c, flash_rcname(rc),
			        flash_rcname(res.first_rc));
			return 11;
		}
	}
	flash_close(h);
	return 0;
}

static void test_one_request_id_raced_by_many_processes_makes_exactly_one_order(void **state)
{
	char name[64];
	flash_t *h = race_segment(name, sizeof name, FLASH_LIMIT_MAX, 0);
	struct race *r = race_new(name);
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	uint64_t order_of[NITEMS];

	run_children(request_racer, r);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, FLASH_LIMIT_MAX, &lg), 0);
	assert_int_equal(lg.active_orders, NITEMS);
	assert_int_equal(lg.max_per_user, 1);
	memset(order_of, 0, sizeof order_of);
	for (uint64_t no = 1; no <= flash_orders_max(h); no++) {
		struct flash_order_info oi;

		assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
		if (oi.state == FLASH_ORDER_ACTIVE)
			order_of[oi.user_id - 1] = no;
	}
	/* every process, winner or duplicate, was told the one order's number */
	for (int i = 0; i < NITEMS; i++)
		for (int c = 0; c < NPROC; c++)
			assert_int_equal(r->seen[c][i], order_of[i]);
	t_recs_free(&recs);
	t_shared_free(r, sizeof *r);
}

/* ---- locks -------------------------------------------------------------- */

static int lock_racer(int c, void *arg)
{
	struct race *r = arg;
	flash_t *h = NULL;
	uint64_t owner = 1000 + (uint64_t)c;
	uint32_t got = 0;

	if (flash_open(r->name, 0, &h) != FLASH_OK)
		return 10;
	for (uint32_t i = 0; got < r->rounds && i < 10000000; i++) {
		uint64_t fence = 0, idx;
		int rc = flash_lock_acquire(h, "hot", owner, 60000, &fence);

		if (rc == FLASH_ELOCKED)
			continue;
		if (rc != FLASH_OK)
			return 11;
		/* inside: nobody else may be */
		if (__atomic_exchange_n(&r->holder, owner, __ATOMIC_SEQ_CST) != 0)
			return 12;
		idx = __atomic_fetch_add(&r->lock_n, 1, __ATOMIC_SEQ_CST);
		if (idx >= sizeof r->lock_log / sizeof r->lock_log[0])
			return 13;
		r->lock_log[idx] = fence;
		for (volatile int spin = 0; spin < 200; spin++)
			;
		if (__atomic_exchange_n(&r->holder, 0, __ATOMIC_SEQ_CST) != owner)
			return 14;
		if (flash_lock_release(h, "hot", owner) != FLASH_OK)
			return 15;
		got++;
	}
	flash_close(h);
	return got == r->rounds ? 0 : 16;
}

static void test_one_lock_raced_by_many_processes_has_one_holder_and_rising_fences(void **state)
{
	char name[64];
	flash_t *h = race_segment(name, sizeof name, 1, 0);
	struct race *r = race_new(name);

	(void)h;
	r->rounds = 200;
	run_children(lock_racer, r);
	assert_int_equal(r->lock_n, (uint64_t)NPROC * 200);
	for (uint64_t i = 1; i < r->lock_n; i++)
		assert_true(r->lock_log[i] > r->lock_log[i - 1]);
	t_shared_free(r, sizeof *r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_one_token_raced_by_many_processes_makes_exactly_one_order),
		T(test_one_request_id_raced_by_many_processes_makes_exactly_one_order),
		T(test_one_lock_raced_by_many_processes_has_one_holder_and_rising_fences),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
