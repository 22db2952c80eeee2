/*
 * ktab_probe.c -- the open-addressing tables under kills, stops and
 * hostile lookups, each driven to its exact state rather than by luck.
 *
 * This program links the engine built with crash points (flashstock_crash)
 * and wraps fs_crashpoint (-Wl,--wrap=fs_crashpoint), so a case can
 *   - end a child at the n-th crash point of an operation, for every n
 *     (crash_arm), and check what recovery leaves;
 *   - stop a child (SIGSTOP) right after the CAS that makes its key-table
 *     entry BUSY ("ktab_insert" 1): an inserter that is alive and stalled;
 *   - count the table entries every lookup reads (fs_probe_reads, kept by
 *     the probe routine in test builds), so a bound is asserted as a count.
 *
 * Cases:
 *   1. fill counters equal the keys held after a kill at every crash point of
 *      an order that inserts a user key and a request id, and the user table
 *      then accepts exactly max_users keys;
 *   2. an inserter stopped with its entry BUSY does not block another user's
 *      order whose probe passes that entry (an alarm bounds the wait: the
 *      case fails instead of hanging);
 *   3. after the token table has cycled (no never-used entry left), a lookup
 *      of a token that does not exist reads a bounded number of entries.
 *
 * Children report by exit status only; every pid started here is waited for,
 * and a stopped child is killed by its pid if a case fails before it ends.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"
#include "probe.h"

/* ---- the hook ------------------------------------------------------------ */

static int g_stop_at_insert;   /* stop this process at the next ("ktab_insert", 1) */

void __real_fs_crashpoint(const char *op, int step);
void __wrap_fs_crashpoint(const char *op, int step);

void __wrap_fs_crashpoint(const char *op, int step)
{
	__real_fs_crashpoint(op, step);
	if (g_stop_at_insert && step == 1 && strcmp(op, "ktab_insert") == 0) {
		g_stop_at_insert = 0;
		raise(SIGSTOP);
	}
}

/* ---- a segment ----------------------------------------------------------- */

static char g_name[64];

static void seg_new(uint32_t users, uint32_t requests, uint32_t tokens, uint32_t flags)
{
	struct flash_seg_opts o;
	struct flash_activity a;
	struct timespec ts;
	flash_t *h;
	static int seq;

	snprintf(g_name, sizeof g_name, "/fs-ktab-%d-%d", (int)getpid(), ++seq);
	flash_seg_destroy(g_name);
	flash_seg_opts_default(&o);
	o.max_activities = 4;
	o.max_skus = 8;
	o.max_shards = 32;
	o.max_users = users;
	o.max_tokens = tokens;
	o.max_orders = 1024;
	o.max_requests = requests;
	o.max_locks = 4;
	o.max_procs = 8;
	o.ring_records = 1024;
	o.durability = FLASH_DURABILITY_ASYNC;   /* no consumer needed for an ack */
	assert_int_equal(flash_seg_create(g_name, &o), FLASH_OK);
	assert_int_equal(flash_open(g_name, 0, &h), FLASH_OK);
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 1;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.flags = flags;
	a.start_ns = ((int64_t)ts.tv_sec - 3600) * 1000000000LL;
	a.end_ns = ((int64_t)ts.tv_sec + 3600) * 1000000000LL;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 100000, 1), FLASH_OK);
	flash_close(h);
}

static int teardown(void **state)
{
	(void)state;
	flash_seg_destroy(g_name);
	return 0;
}

static int order(flash_t *h, uint64_t user, uint64_t request_id, uint64_t token)
{
	struct flash_order_req r = { .activity_id = 1, .sku_id = 1, .user_id = user, .qty = 1,
	                             .token = token, .request_id = request_id };

	return flash_order(h, &r, NULL);
}

/* Entries of a keyed table that hold a key (anything but never-used). */
static uint32_t keys_held(const struct fs_kent *tab, uint32_t mask)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= mask; i++)
		n += FS_KIND(ck_pr_load_64(&tab[i].state)) != FS_K_EMPTY;
	return n;
}

/* Home entry of user @p u's limit key for slot 1 of activity 1, scope
 * ACTIVITY (the key order.c's limit_key builds: {act << 32, user, 1}). */
static uint32_t user_home(const flash_t *h, uint64_t u)
{
	return (uint32_t)fs_hash(1ull << 32, u, 1) & h->user_mask;
}

/* ---- 1. fill counters after a kill at every point ------------------------ */

/*
 * For n = 1, 2, ...: a child places an order for a new user with a request
 * id and is ended at its n-th crash point; a fresh handle recovers it.  Then
 * users_used and req_used must equal the keys their tables hold, and new
 * users must be accepted until exactly max_users keys are held -- no more
 * (FLASH_EFULL), and no fewer (a leaked count would refuse them early).
 */
static void test_fill_counts_equal_keys_held_after_a_kill_at_every_point(void **state)
{
	const uint32_t cap = 8;
	int points = 0;

	(void)state;
	for (int n = 1;; n++) {
		flash_t *h;
		pid_t pid;
		int st, rc;
		uint32_t held, accepted = 0;

		seg_new(cap, cap, 16, 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			flash_t *c;

			if (flash_open(g_name, 0, &c) != FLASH_OK)
				_exit(2);
			crash_arm(n);
			rc = order(c, 1000, 77, 0);
			_exit(rc == FLASH_OK ? 0 : 3);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		if (WEXITSTATUS(st) != FLASH_CRASH_EXIT) {
			assert_int_equal(WEXITSTATUS(st), 0);   /* ran to its end: all points seen */
			flash_seg_destroy(g_name);
			break;
		}
		points++;
		assert_int_equal(flash_open(g_name, 0, &h), FLASH_OK);   /* recovers the child */
		held = keys_held(h->user, h->user_mask);
		if (ck_pr_load_32(&h->hdr->users_used) != held)
			fail_msg("killed at point %d: users_used %u, %u user keys held", n,
			         ck_pr_load_32(&h->hdr->users_used), held);
		if (ck_pr_load_32(&h->hdr->req_used) != keys_held(h->req, h->req_mask))
			fail_msg("killed at point %d: req_used %u, %u request keys held", n,
			         ck_pr_load_32(&h->hdr->req_used), keys_held(h->req, h->req_mask));
		for (uint64_t u = 2000; u < 2000 + 2 * cap; u++) {
			rc = order(h, u, 0, 0);
			if (rc == FLASH_EFULL)
				break;
			assert_int_equal(rc, FLASH_OK);
			accepted++;
		}
		if (keys_held(h->user, h->user_mask) != cap || accepted != cap - held)
			fail_msg("killed at point %d: %u keys held before, %u new users accepted, "
			         "%u keys held after (capacity %u)", n, held, accepted,
			         keys_held(h->user, h->user_mask), cap);
		assert_int_equal(ck_pr_load_32(&h->hdr->users_used), cap);
		flash_close(h);
		flash_seg_destroy(g_name);
	}
	assert_true(points > 0);
	print_message("an order inserting a user key and a request id: %d crash points, "
	              "fill counts exact after each\n", points);
}

/* ---- 2. a stopped inserter ------------------------------------------------ */

/*
 * Child S orders for user A and stops right after the CAS that makes A's
 * limit entry BUSY: alive, holding the entry, never finishing.  Child O then
 * orders for user B, whose limit key has the same home entry, so B's probe
 * must pass A's BUSY entry.  O must complete (an alarm ends it if it waits).
 */
static void test_stopped_inserter_does_not_block_another_users_order(void **state)
{
	uint64_t ua = 1000, ub;
	pid_t s, o;
	int st_s, st_o, stopped;
	flash_t *h;
	uint32_t home;

	(void)state;
	seg_new(8, 8, 16, 0);
	assert_int_equal(flash_open(g_name, 0, &h), FLASH_OK);
	home = user_home(h, ua);
	for (ub = ua + 1; user_home(h, ub) != home; ub++)
		;
	s = fork();
	assert_true(s >= 0);
	if (s == 0) {
		flash_t *c;

		if (flash_open(g_name, 0, &c) != FLASH_OK)
			_exit(2);
		g_stop_at_insert = 1;
		_exit(order(c, ua, 0, 0) == FLASH_OK ? 0 : 3);
	}
	assert_int_equal(waitpid(s, &st_s, WUNTRACED), s);
	stopped = WIFSTOPPED(st_s);
	if (!stopped || FS_KIND(ck_pr_load_64(&h->user[home].state)) != FS_K_BUSY) {
		if (stopped)
			kill(s, SIGKILL);
		waitpid(s, &st_s, 0);
		fail_msg("the inserter did not stop with its entry BUSY (status %#x)", st_s);
	}
	o = fork();
	assert_true(o >= 0);
	if (o == 0) {
		flash_t *c;

		alarm(10);   /* a wait on the stopped process ends here, as a failure */
		if (flash_open(g_name, 0, &c) != FLASH_OK)
			_exit(2);
		_exit(order(c, ub, 0, 0) == FLASH_OK ? 0 : 3);
	}
	assert_int_equal(waitpid(o, &st_o, 0), o);
	/* let the stopped inserter finish either way, so nothing is left running */
	kill(s, SIGCONT);
	assert_int_equal(waitpid(s, &st_s, 0), s);
	if (WIFSIGNALED(st_o))
		fail_msg("user %llu's order did not complete while the inserter of user %llu "
		         "was stopped: ended by signal %d", (unsigned long long)ub,
		         (unsigned long long)ua, WTERMSIG(st_o));
	assert_true(WIFEXITED(st_o));
	assert_int_equal(WEXITSTATUS(st_o), 0);
	assert_true(WIFEXITED(st_s));
	assert_int_equal(WEXITSTATUS(st_s), 0);   /* resumed, its order went through */
	/* both hold their one order; the table holds two keys */
	assert_int_equal(order(h, ua, 0, 0), FLASH_ELIMIT);
	assert_int_equal(order(h, ub, 0, 0), FLASH_ELIMIT);
	assert_int_equal(keys_held(h->user, h->user_mask), 2);
	assert_int_equal(ck_pr_load_32(&h->hdr->users_used), 2);
	flash_close(h);
}

/* ---- 3. lookups of unknown tokens ---------------------------------------- */

#define T_TOKENS 4096u
/* Entries one lookup may read.  The table has 2 * T_TOKENS entries and at
 * most half of them hold a live token, so a chain bounded at insert stays
 * far below this (a run of 128 occupied entries at load 1/2 has odds near
 * 1e-7); a lookup that reads until a never-used entry reads them all. */
#define T_READS_MAX 128u

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_unknown_token_lookup_reads_a_bounded_chain(void **state)
{
	static uint64_t tok[T_TOKENS];
	uint64_t rnd = 0x9e3779b97f4a7c15ull, worst = 0, total = 0;
	uint32_t empty = 1, rounds = 0;
	flash_t *h;

	(void)state;
	seg_new(8, 8, T_TOKENS, 0);
	assert_int_equal(flash_open(g_name, 0, &h), FLASH_OK);
	/* cycle: fill to capacity, redeem all, until no entry is never-used */
	while (empty != 0 && rounds < 200) {
		for (uint32_t i = 0; i < T_TOKENS; i++)
			assert_int_equal(flash_token_issue(h, 1, 1, i + 1, 60000, &tok[i]), FLASH_OK);
		for (uint32_t i = 0; i < T_TOKENS; i++)
			assert_int_equal(flash_token_redeem(h, 1, 1, i + 1, tok[i]), FLASH_OK);
		rounds++;
		empty = 0;
		for (uint32_t i = 0; i <= h->tok_mask; i++)
			empty += FS_KIND(ck_pr_load_64(&h->tok[i].state)) == FS_K_EMPTY;
	}
	assert_int_equal(empty, 0);
	/* half the table live again, then look up tokens nobody was issued */
	for (uint32_t i = 0; i < T_TOKENS; i++)
		assert_int_equal(flash_token_issue(h, 1, 1, i + 1, 60000, &tok[i]), FLASH_OK);
	for (int k = 0; k < 1000; k++) {
		uint64_t bogus = xorshift(&rnd), before = fs_probe_reads, reads;

		assert_int_equal(flash_token_redeem(h, 1, 1, 1, bogus), FLASH_EBAD_TOKEN);
		reads = fs_probe_reads - before;
		total += reads;
		if (reads > worst)
			worst = reads;
	}
	print_message("table of %u entries cycled %u times: 1000 unknown tokens read %llu "
	              "entries, at most %llu for one\n", h->tok_mask + 1, rounds,
	              (unsigned long long)total, (unsigned long long)worst);
	if (worst > T_READS_MAX)
		fail_msg("an unknown token read %llu entries of %u (bound %u)",
		         (unsigned long long)worst, h->tok_mask + 1, T_READS_MAX);
	flash_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fill_counts_equal_keys_held_after_a_kill_at_every_point,
		                          teardown),
		cmocka_unit_test_teardown(test_stopped_inserter_does_not_block_another_users_order,
		                          teardown),
		cmocka_unit_test_teardown(test_unknown_token_lookup_reads_a_bounded_chain, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
