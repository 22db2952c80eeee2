/*
 * point_races.c -- kills and interleavings pinned to named crash points, at
 * the shared stores a random kill loop almost never lands between:
 *
 *   1. the order-number chunk refill (engine/order.c, order_alloc): a handle
 *      killed after each point of its refill; the next handle on its slot
 *      must never be given a number that a live process holds;
 *   2. the lock-name insert (engine/lock.c): a handle killed after each point
 *      of the insert; once the dead holder's admin mutex has been repaired,
 *      the fill count equals the names published in the table;
 *   3. the fencing token (engine/lock.c): an acquire paused between reading
 *      the lock word and its CAS, while a second handle is granted the lock
 *      (and releases it); the paused acquire must come out with a fence above
 *      the second handle's, or not be granted at all.  And a renew or
 *      release paused before its CAS while its lease runs out and the lock
 *      is granted to another owner must leave that grant alone.
 *   4. the next order number of a handle whose chunk ran out (engine/
 *      order.c, order_peek): parked just after it looked at the counter,
 *      while a second handle places two chunks of orders; the parked order
 *      must still get a number (the order table is nowhere near full).
 *   5. a request id's duplicate answered by the previous generation's bank
 *      (engine/order.c, req_claim_gen's re-check): a retry parked after its
 *      read-only look, while a second handle places the first order under
 *      that id and moves the request table on; the retry must answer the
 *      first order's whole number, box id included.
 *
 * This program links the engine built with crash points (flashstock_crash)
 * and wraps fs_crashpoint (-Wl,--wrap=fs_crashpoint).  At the point a case
 * names, the wrapper either ends the process with _exit(FLASH_CRASH_EXIT) --
 * what a kill -9 there leaves: no code of the engine runs after that store --
 * or runs the case's interleaved step once, on another handle.  A killed
 * operation runs in a forked child with its own handle; the parent's handle
 * is the live process.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"

/* ---- the point ----------------------------------------------------------- */

static const char *g_op;      /* armed: act at (g_op, g_step) */
static int g_step;
static int g_die;             /* 1: end the process there */
static void (*g_fn)(void);    /* else: run this there, once */
static int g_fired;           /* times the armed point was reached */

void __real_fs_crashpoint(const char *op, int step);
void __wrap_fs_crashpoint(const char *op, int step);

void __wrap_fs_crashpoint(const char *op, int step)
{
	__real_fs_crashpoint(op, step);
	if (g_op == NULL || step != g_step || strcmp(op, g_op) != 0)
		return;
	g_op = NULL;          /* once: the interleaved step passes the point freely */
	g_fired++;
	if (g_die)
		_exit(FLASH_CRASH_EXIT);
	g_fn();
}

static void at_point(const char *op, int step, int die, void (*fn)(void))
{
	g_step = step;
	g_die = die;
	g_fn = fn;
	g_fired = 0;
	g_op = op;
}

/* ---- a segment and the live handle --------------------------------------- */

static char g_name[64];
static flash_t *g_p;          /* the parent's handle: slot 0, the live process */
static flash_t *g_b;          /* a second handle of the parent, for interleavings */

/* The segment: windowed tables (@p ro, NULL: one bank) and box id @p box
 * (0: none), both set before any key or number is taken, as they must be. */
static int seg_up_with(const struct flash_reclaim_opts *ro, uint32_t box)
{
	struct flash_seg_opts o;
	struct flash_activity a;
	struct timespec ts;
	static int seq;

	snprintf(g_name, sizeof g_name, "/fs-points-%d-%d", (int)getpid(), ++seq);
	flash_seg_destroy(g_name);
	flash_seg_opts_default(&o);
	o.max_activities = 4;
	o.max_skus = 8;
	o.max_shards = 32;
	o.max_users = 1024;
	o.max_tokens = 16;
	o.max_orders = 1024;
	o.max_requests = 16;
	o.max_locks = 4;
	o.max_procs = 4;
	o.ring_records = 256;
	o.durability = FLASH_DURABILITY_ASYNC;   /* no consumer needed for an ack */
	g_op = NULL;
	if (flash_seg_create(g_name, &o) != FLASH_OK || flash_open(g_name, 0, &g_p) != FLASH_OK)
		return -1;
	if (ro != NULL && flash_seg_reclaim_set(g_p, ro) != FLASH_OK)
		return -1;
	if (box != 0 && flash_box_id_set(g_p, box) != FLASH_OK)
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 1;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.start_ns = ((int64_t)ts.tv_sec - 3600) * 1000000000LL;
	a.end_ns = ((int64_t)ts.tv_sec + 3600) * 1000000000LL;
	if (flash_activity_add(g_p, &a) != FLASH_OK || flash_sku_add(g_p, 1, 10, 1000, 1) != FLASH_OK)
		return -1;
	return 0;
}

static int seg_up(void)
{
	return seg_up_with(NULL, 0);
}

static int seg_down(void **state)
{
	(void)state;
	g_op = NULL;
	if (g_b)
		flash_close(g_b);
	if (g_p)
		flash_close(g_p);
	g_b = g_p = NULL;
	if (g_name[0])
		flash_seg_destroy(g_name);
	g_name[0] = '\0';
	return 0;
}

/* One unit of sku 10 for @p user under request id @p req_id (0: none). */
static int order_req(flash_t *h, uint64_t user, uint64_t req_id, struct flash_order_res *res)
{
	struct flash_order_req r;

	memset(&r, 0, sizeof r);
	memset(res, 0, sizeof *res);
	r.activity_id = 1;
	r.sku_id = 10;
	r.user_id = user;
	r.qty = 1;
	r.request_id = req_id;
	return flash_order(h, &r, res);
}

static int order(flash_t *h, uint64_t user, uint64_t *no)
{
	struct flash_order_res res;
	int rc = order_req(h, user, 0, &res);

	if (no)
		*no = res.order_no;
	return rc;
}

/* Wait for @p pid; its exit code, or -signal. */
static int reap(pid_t pid)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		return -1000;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* ---- 1. the order-number refill ------------------------------------------ */

/*
 * The child (slot 1): use up its first chunk, let the parent take the next
 * chunk, then place one more order -- the refill -- armed to die at the
 * step-th point of order_alloc.  0: the refill completed without reaching it.
 */
static int refill_child(int step, int to_parent, int from_parent)
{
	flash_t *h = NULL;
	uint64_t no = 0;
	char c = 'a';

	if (flash_open(g_name, 0, &h) != FLASH_OK)
		return 2;
	if (flash_slot(h) != 1)
		return 3;
	for (uint64_t u = 1; u <= FS_ORDER_CHUNK; u++)
		if (order(h, u, &no) != FLASH_OK || no != u)
			return 4;
	if (write(to_parent, &c, 1) != 1 || read(from_parent, &c, 1) != 1)
		return 5;
	at_point("order_alloc", step, 1, NULL);
	if (order(h, 500, &no) != FLASH_OK)
		return 6;
	return 0;
}

static void test_order_refill_killed_at_each_point_never_hands_out_a_held_number(void **state)
{
	int killed = 0;

	for (int step = 1; step <= 16; step++) {
		int up[2], down[2], code;
		uint64_t live = 0, no = 0;
		uint32_t n = 0;
		struct flash_order_info oi;
		flash_t *c = NULL;
		pid_t pid;
		char ch = 0;

		assert_int_equal(seg_up(), 0);
		assert_int_equal(pipe(up), 0);
		assert_int_equal(pipe(down), 0);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(up[0]);
			close(down[1]);
			_exit(refill_child(step, up[1], down[0]));
		}
		close(up[1]);
		close(down[0]);
		/* the child holds 1..64; the live parent now takes 65..128 */
		assert_int_equal(read(up[0], &ch, 1), 1);
		assert_int_equal(order(g_p, 1000, &live), FLASH_OK);
		assert_int_equal(live, FS_ORDER_CHUNK + 1);
		assert_int_equal(write(down[1], &ch, 1), 1);
		close(up[0]);
		close(down[1]);
		code = reap(pid);
		if (code == 0) {
			/* the refill completed before the step-th point: all enumerated */
			seg_down(NULL);
			break;
		}
		assert_int_equal(code, FLASH_CRASH_EXIT);
		killed++;
		/* the dead slot is freed, and the next handle takes it over */
		assert_int_equal(flash_recover(g_p, &n), FLASH_OK);
		assert_int_equal(n, 1);
		assert_int_equal(flash_open(g_name, 0, &c), FLASH_OK);
		assert_int_equal(flash_slot(c), 1);
		assert_int_equal(order(c, 2000, &no), FLASH_OK);
		printf("  killed at order_alloc point %d: the live process holds %llu..%u, "
		       "the slot's next handle was given %llu\n", step, (unsigned long long)live,
		       2 * FS_ORDER_CHUNK, (unsigned long long)no);
		/* 1..64 are the dead child's orders, 65..128 the live parent's chunk */
		assert_true(no > 2 * FS_ORDER_CHUNK);
		assert_int_equal(flash_order_get(g_p, live, &oi), FLASH_OK);
		assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
		assert_int_equal(oi.user_id, 1000);
		/* and the parent's next number is still its own */
		assert_int_equal(order(g_p, 1001, &no), FLASH_OK);
		assert_int_equal(no, FS_ORDER_CHUNK + 2);
		assert_int_equal(flash_order_get(c, no, &oi), FLASH_OK);
		assert_int_equal(oi.user_id, 1001);
		flash_close(c);
		seg_down(NULL);
	}
	printf("  order_alloc: killed at %d points of the refill\n", killed);
	assert_true(killed >= 2);
}

/* ---- 2. the lock-name insert --------------------------------------------- */

static int name_child(int step)
{
	flash_t *h = NULL;
	uint64_t f = 0;

	if (flash_open(g_name, 0, &h) != FLASH_OK)
		return 2;
	at_point("lock_name", step, 1, NULL);
	return flash_lock_acquire(h, "first-name", 7, 60000, &f) == FLASH_OK ? 0 : 6;
}

static uint32_t names_in_table(flash_t *h)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= h->lock_mask; i++)
		n += ck_pr_load_32(&h->lock[i].used) != 0;
	return n;
}

static void test_lock_name_insert_killed_at_each_point_counts_the_names_published(void **state)
{
	int killed = 0;

	for (int step = 1; step <= 16; step++) {
		struct flash_stats st;
		uint64_t f = 0;
		pid_t pid;
		int code;

		assert_int_equal(seg_up(), 0);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(name_child(step));
		code = reap(pid);
		if (code == 0) {
			seg_down(NULL);
			break;
		}
		assert_int_equal(code, FLASH_CRASH_EXIT);
		killed++;
		/* recovery takes the dead holder's admin mutex (EOWNERDEAD) */
		assert_int_equal(flash_recover(g_p, NULL), FLASH_OK);
		assert_int_equal(flash_stats_get(g_p, &st), FLASH_OK);
		printf("  killed at lock_name point %d: %u names published, fill count %u\n", step,
		       names_in_table(g_p), st.locks);
		assert_int_equal(st.locks, names_in_table(g_p));
		/* the name is usable, and inserting others keeps the count right */
		assert_int_equal(flash_lock_acquire(g_p, "first-name", 8, 60000, &f), FLASH_OK);
		assert_int_equal(flash_lock_acquire(g_p, "second-name", 8, 60000, &f), FLASH_OK);
		assert_int_equal(flash_stats_get(g_p, &st), FLASH_OK);
		assert_int_equal(st.locks, 2);
		assert_int_equal(names_in_table(g_p), 2);
		seg_down(NULL);
	}
	printf("  lock_name: killed at %d points of the insert\n", killed);
	assert_true(killed >= 2);
}

/* ---- 3. the fencing token ------------------------------------------------ */

#define FENCED "fenced"

static uint64_t g_b_fence;
static int g_b_rc, g_b_rel;

static void b_takes_and_releases(void)
{
	g_b_rc = flash_lock_acquire(g_b, FENCED, 2, 60000, &g_b_fence);
	g_b_rel = flash_lock_release(g_b, FENCED, 2);
}

static void b_takes_and_holds(void)
{
	g_b_rc = flash_lock_acquire(g_b, FENCED, 2, 60000, &g_b_fence);
}

static void test_lock_acquire_paused_before_its_cas_gets_a_fence_above_the_grant_in_between(void **state)
{
	uint64_t f0 = 0, fa = 0;
	int rc;

	assert_int_equal(seg_up(), 0);
	assert_int_equal(flash_open(g_name, 0, &g_b), FLASH_OK);
	assert_int_equal(flash_lock_acquire(g_p, FENCED, 1, 60000, &f0), FLASH_OK);
	assert_int_equal(flash_lock_release(g_p, FENCED, 1), FLASH_OK);
	/* A (g_p) reads the free lock and stops before its CAS; B is granted
	 * the lock and releases it; then A goes on */
	at_point("lock_acquire", 1, 0, b_takes_and_releases);
	g_b_rc = g_b_rel = -1;
	rc = flash_lock_acquire(g_p, FENCED, 1, 60000, &fa);
	assert_int_equal(g_fired, 1);
	assert_int_equal(g_b_rc, FLASH_OK);
	assert_int_equal(g_b_rel, FLASH_OK);
	assert_int_equal(rc, FLASH_OK);
	printf("  fences: first grant %llu, grant in between %llu, paused grant %llu\n",
	       (unsigned long long)f0, (unsigned long long)g_b_fence, (unsigned long long)fa);
	assert_true(g_b_fence > f0);
	assert_true(fa > g_b_fence);
	/* and the next grant is above both */
	assert_int_equal(flash_lock_release(g_p, FENCED, 1), FLASH_OK);
	assert_int_equal(flash_lock_acquire(g_b, FENCED, 3, 60000, &f0), FLASH_OK);
	assert_true(f0 > fa);
}

static void test_lock_acquire_paused_before_its_cas_while_another_takes_it_gets_elocked(void **state)
{
	uint64_t f0 = 0, fa = 0;
	int rc;

	assert_int_equal(seg_up(), 0);
	assert_int_equal(flash_open(g_name, 0, &g_b), FLASH_OK);
	assert_int_equal(flash_lock_acquire(g_p, FENCED, 1, 60000, &f0), FLASH_OK);
	assert_int_equal(flash_lock_release(g_p, FENCED, 1), FLASH_OK);
	at_point("lock_acquire", 1, 0, b_takes_and_holds);
	g_b_rc = -1;
	fa = 0xdead;
	rc = flash_lock_acquire(g_p, FENCED, 1, 60000, &fa);
	assert_int_equal(g_fired, 1);
	assert_int_equal(g_b_rc, FLASH_OK);
	assert_int_equal(rc, FLASH_ELOCKED);
	assert_int_equal(fa, 0xdead);
	assert_true(g_b_fence > f0);
	assert_int_equal(flash_lock_release(g_b, FENCED, 2), FLASH_OK);
	assert_int_equal(flash_lock_acquire(g_p, FENCED, 1, 60000, &fa), FLASH_OK);
	assert_true(fa > g_b_fence);
}

/*
 * Renew and release compare the owner with the grant they change: A's lease
 * runs out while A is stopped before its CAS and B is granted the lock; A's
 * CAS fails, and A's retry must see that the grant is no longer its own.
 * (The lease is long enough for A to reach the point before it expires.)
 */
#define A_LEASE_MS 500u

static uint64_t g_a_expiry_ms;

static void b_waits_out_a_lease_and_takes_it(void)
{
	while (fs_mono_ms() <= g_a_expiry_ms)
		usleep(2000);
	g_b_rc = flash_lock_acquire(g_b, FENCED, 2, 60000, &g_b_fence);
}

static void owner_change_after_regrant(int release)
{
	uint64_t f0 = 0, f = 0;
	int rc;

	assert_int_equal(seg_up(), 0);
	assert_int_equal(flash_open(g_name, 0, &g_b), FLASH_OK);
	assert_int_equal(flash_lock_acquire(g_p, FENCED, 1, A_LEASE_MS, &f0), FLASH_OK);
	g_a_expiry_ms = fs_mono_ms() + A_LEASE_MS;   /* at or after the real expiry */
	at_point(release ? "lock_release" : "lock_renew", 1, 0, b_waits_out_a_lease_and_takes_it);
	g_b_rc = -1;
	rc = release ? flash_lock_release(g_p, FENCED, 1)
	             : flash_lock_renew(g_p, FENCED, 1, 60000);
	assert_int_equal(g_fired, 1);
	assert_int_equal(g_b_rc, FLASH_OK);
	assert_true(g_b_fence > f0);
	assert_int_equal(rc, FLASH_ENOT_OWNER);
	/* B holds it, undisturbed */
	assert_int_equal(flash_lock_acquire(g_p, FENCED, 3, 60000, &f), FLASH_ELOCKED);
	assert_int_equal(flash_lock_renew(g_b, FENCED, 2, 60000), FLASH_OK);
	assert_int_equal(flash_lock_release(g_b, FENCED, 2), FLASH_OK);
	assert_int_equal(flash_lock_acquire(g_p, FENCED, 3, 60000, &f), FLASH_OK);
	assert_true(f > g_b_fence);
}

static void test_lock_release_paused_before_its_cas_while_regranted_gets_enot_owner(void **state)
{
	owner_change_after_regrant(1);
}

static void test_lock_renew_paused_before_its_cas_while_regranted_gets_enot_owner(void **state)
{
	owner_change_after_regrant(0);
}

/* ---- 4. the next number of a handle whose chunk ran out ------------------- */

static const char *g_park;     /* armed FS_PARK place */
static void (*g_park_fn)(void);

static void park_once(const char *where)
{
	if (g_park == NULL || strcmp(where, g_park) != 0)
		return;
	g_park = NULL;         /* once: the interleaved orders pass freely */
	g_fired++;
	g_park_fn();
}

static int g_b_placed;

/* B places two chunks of orders (users 1000...): every number the counter
 * hands out meanwhile is B's, and B's orders hold their slots */
static void b_places_two_chunks(void)
{
	for (uint64_t u = 0; u < 2 * FS_ORDER_CHUNK; u++)
		if (order(g_b, 1000 + u, NULL) == FLASH_OK)
			g_b_placed++;
}

/*
 * Order numbers go to handles in chunks; a handle whose chunk is used up
 * must find its next number among numbers no other handle can take.  Two
 * buyers at full speed met FLASH_EFULL after a few hundred orders in a
 * table sized for hundreds of thousands: the handle looked at the numbers
 * after the counter, which the other buyer took and placed meanwhile.
 */
static void test_order_number_after_a_used_up_chunk_is_not_taken_by_another_handle(void **state)
{
	uint64_t no = 0;
	struct flash_order_info oi;

	(void)state;
	assert_int_equal(seg_up(), 0);
	assert_int_equal(flash_open(g_name, 0, &g_b), FLASH_OK);
	for (uint64_t u = 1; u <= FS_ORDER_CHUNK; u++) {
		assert_int_equal(order(g_p, u, &no), FLASH_OK);
		assert_int_equal(no, u);
	}
	/* A's chunk is used up: its next order looks for a number, and B
	 * places two chunks of orders right after A looked at the counter */
	g_fired = 0;
	g_b_placed = 0;
	g_park_fn = b_places_two_chunks;
	g_park = "order_number";
	fs_park_fn = park_once;
	no = 0;
	assert_int_equal(order(g_p, 500, &no), FLASH_OK);
	fs_park_fn = NULL;
	assert_int_equal(g_fired, 1);
	assert_int_equal(g_b_placed, 2 * FS_ORDER_CHUNK);
	assert_true(no > FS_ORDER_CHUNK);
	assert_int_equal(flash_order_get(g_p, no, &oi), FLASH_OK);
	assert_int_equal(oi.user_id, 500);
	/* and the table goes on numbering: nothing refused below capacity */
	for (uint64_t u = 2000; u < 2000 + 3 * FS_ORDER_CHUNK; u++)
		assert_int_equal(order(u % 2 ? g_p : g_b, u, NULL), FLASH_OK);
}

/* ---- 5. a duplicate found in the previous generation's bank -------------- */

static uint64_t g_req_id;      /* the request id both handles order under */
static int64_t g_clk;          /* the clock B moves the request table with */
static int g_b_rc, g_b_moved;
static uint64_t g_b_no;

/* B places the order under the id, then moves the request table on: the
 * id's DONE entry is left in what is now the previous generation's bank */
static void b_orders_then_moves_the_requests_on(void)
{
	struct flash_order_res res;
	struct flash_gen_info gi;

	g_b_rc = order_req(g_b, 7, g_req_id, &res);
	g_b_no = res.order_no;
	g_b_moved = flash_gen_advance(g_b, FLASH_TABLE_REQUESTS, g_clk, &gi) == FLASH_OK && gi.advanced;
}

/*
 * A retry's read-only look (req_peek) finds nothing: the first order is not
 * placed yet.  Before it claims, the first order is placed on another handle
 * and the generation moves, so the claim goes into the new bank and only
 * the re-check of the previous one finds the first outcome.  That answer
 * must carry the box id like the other two: a retry of a box's order was
 * answered the bare counter, a number flash_order_get does not know.
 */
static void test_duplicate_found_in_the_previous_generation_answers_the_whole_order_number(void **state)
{
	struct flash_reclaim_opts ro = { .req_window_s = 3600, .user_gen_s = 86400 };
	struct flash_order_res res;
	struct flash_order_info oi;
	struct flash_gen_info gi;
	int rc;

	(void)state;
	assert_int_equal(seg_up_with(&ro, 7), 0);
	assert_int_equal(flash_open(g_name, 0, &g_b), FLASH_OK);
	g_req_id = flash_request_id_new();
	g_clk = (int64_t)time(NULL) * 1000000000LL + 3 * 3600 * 1000000000LL;
	g_b_rc = -1;
	g_b_no = 0;
	g_b_moved = 0;
	g_fired = 0;
	g_park_fn = b_orders_then_moves_the_requests_on;
	g_park = "order_read";
	fs_park_fn = park_once;
	rc = order_req(g_p, 7, g_req_id, &res);
	fs_park_fn = NULL;
	assert_int_equal(g_fired, 1);
	assert_int_equal(g_b_rc, FLASH_OK);
	assert_int_equal(g_b_moved, 1);
	assert_int_equal(FS_ONO_BOX(g_b_no), 7);
	assert_int_equal(flash_gen_get(g_p, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	assert_int_equal(gi.gen, 1);
	/* the retry: the first outcome, the first order's number */
	assert_int_equal(rc, FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, FLASH_OK);
	assert_int_equal(res.order_no, g_b_no);
	assert_int_equal(flash_order_get(g_p, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.user_id, 7);
	/* and a retry now, the look finding it, answers the same */
	assert_int_equal(order_req(g_p, 7, g_req_id, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.order_no, g_b_no);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, seg_down)
		T(test_order_refill_killed_at_each_point_never_hands_out_a_held_number),
		T(test_lock_name_insert_killed_at_each_point_counts_the_names_published),
		T(test_lock_acquire_paused_before_its_cas_gets_a_fence_above_the_grant_in_between),
		T(test_lock_acquire_paused_before_its_cas_while_another_takes_it_gets_elocked),
		T(test_lock_release_paused_before_its_cas_while_regranted_gets_enot_owner),
		T(test_lock_renew_paused_before_its_cas_while_regranted_gets_enot_owner),
		T(test_order_number_after_a_used_up_chunk_is_not_taken_by_another_handle),
		T(test_duplicate_found_in_the_previous_generation_answers_the_whole_order_number),
#undef T
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
