/*
 * crash_tokens.c -- a token operation killed before it returns leaves the
 * token live, at every one of its crash points.
 *
 * "No caller learned that the token was used": a redeem, or an order that
 * took the token and was then refused, whose process dies before the call
 * returns has told nobody anything, so recovery gives the token back and the
 * buyer's retry redeems it.  Only a call that returned uses a token up.
 *
 * Method (as tests/crash/crash_points.c): for n = 1, 2, ... a forked child opens
 * its own handle, arms the n-th crash point and runs the operation; the
 * parent recovers the dead child and checks the token table.  The loop ends
 * at the first n the operation survives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"

static char segname[64];

static void seg_new(void)
{
	struct flash_seg_opts o;
	struct flash_activity a;
	struct timespec ts;
	flash_t *h = NULL;
	int64_t now;
	static unsigned n;

	snprintf(segname, sizeof segname, "/fs-crash-tokens-%ld-%u", (long)getpid(), n++);
	shm_unlink(segname);
	flash_seg_opts_default(&o);
	o.max_tokens = 16;
	o.max_users = 64;
	o.max_orders = 256;
	o.max_requests = 16;
	o.max_procs = 4;
	o.ring_records = 1024;
	o.max_activities = 2;
	o.max_skus = 2;
	o.max_shards = 4;
	o.max_locks = 2;
	assert_int_equal(flash_seg_create(segname, &o), FLASH_OK);
	assert_int_equal(flash_open(segname, 0, &h), FLASH_OK);
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 4;
	a.max_qty = 2;
	a.flags = FLASH_ACT_TOKEN_REQUIRED;
	a.start_ns = now - 3600 * 1000000000ll;
	a.end_ns = now + 3600 * 1000000000ll;
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1, 1), FLASH_OK);   /* one unit: qty 2 sells out */
	assert_int_equal(flash_close(h), FLASH_OK);
}

static int op_redeem(flash_t *h, uint64_t tok)
{
	return flash_token_redeem(h, 1, 10, 5, tok);
}

static int op_refused_order(flash_t *h, uint64_t tok)
{
	struct flash_order_req r;

	memset(&r, 0, sizeof r);
	r.activity_id = 1;
	r.sku_id = 10;
	r.user_id = 5;
	r.qty = 2;
	r.token = tok;
	return flash_order(h, &r, NULL);
}

/*
 * Kill @p op at each crash point in turn.  Each time the child dies, the
 * token it was using must be live after recovery (redeemable, counted);
 * when @p op returns (@p rc_done), the token is used up.
 */
static void enumerate(const char *what, int (*op)(flash_t *, uint64_t), int rc_done)
{
	flash_t *h = NULL;
	int killed = 0, wrong = 0;

	seg_new();
	assert_int_equal(flash_open(segname, 0, &h), FLASH_OK);
	for (int n = 1; n < 200; n++) {
		struct flash_stats st;
		uint64_t tok = 0;
		uint32_t rec = 0;
		int wst = 0;
		pid_t c;

		assert_int_equal(flash_token_issue(h, 1, 10, 5, 600000, &tok), FLASH_OK);
		c = fork();
		assert_true(c >= 0);
		if (c == 0) {
			flash_t *hc = NULL;

			if (flash_open(segname, 0, &hc) != FLASH_OK)
				_exit(2);
			crash_arm(n);
			_exit(op(hc, tok) == rc_done ? 0 : 3);
		}
		assert_int_equal(waitpid(c, &wst, 0), c);
		assert_true(WIFEXITED(wst));
		if (WEXITSTATUS(wst) == 0) {
			/* the call returned: the token is used up */
			assert_int_equal(flash_recover(h, &rec), FLASH_OK);
			assert_int_equal(flash_token_redeem(h, 1, 10, 5, tok), FLASH_EBAD_TOKEN);
			assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
			assert_int_equal(st.tokens, 0);
			print_message("%s: %d crash points, killed at each: %d left the token used\n",
			              what, killed, wrong);
			assert_int_equal(wrong, 0);
			assert_int_equal(flash_close(h), FLASH_OK);
			shm_unlink(segname);
			return;
		}
		assert_int_equal(WEXITSTATUS(wst), FLASH_CRASH_EXIT);
		killed++;
		assert_int_equal(flash_recover(h, &rec), FLASH_OK);
		assert_int_equal(rec, 1);
		assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
		if (st.tokens != 1 || flash_token_redeem(h, 1, 10, 5, tok) != FLASH_OK) {
			print_message("%s killed at crash point %d: %u live tokens, token not redeemable\n",
			              what, n, st.tokens);
			wrong++;
			/* go on with an empty table */
			flash_token_redeem(h, 1, 10, 5, tok);
		}
		assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
		assert_int_equal(st.tokens, 0);
	}
	fail_msg("%s never completed", what);
}

static void test_redeem_killed_before_it_returns_leaves_the_token_live(void **state)
{
	enumerate("redeem", op_redeem, FLASH_OK);
}

static void test_refused_order_killed_before_it_returns_leaves_the_token_live(void **state)
{
	enumerate("order refused (sold out)", op_refused_order, FLASH_ESOLD_OUT);
}

/* A failed test leaves no segment behind. */
static int teardown(void **state)
{
	if (segname[0] != '\0')
		shm_unlink(segname);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_redeem_killed_before_it_returns_leaves_the_token_live, teardown),
		cmocka_unit_test_teardown(test_refused_order_killed_before_it_returns_leaves_the_token_live,
		                          teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
