/*
 * test_api_ident.c -- the segment's identity and its one consumer claim
 * (flash_ident_get, flash_ident_adopt, flash_ident_lsn_set,
 * flash_consumer_claim, flash_consumer_release):
 *  - each created segment gets its own nonzero incarnation; a restored one
 *    keeps the image's incarnation and WAL LSN, and no claim;
 *  - adopt works only on a segment no WAL has served (wal_lsn 0);
 *  - one claim at a time, refused naming the holder's pid; released by
 *    flash_close; a dead holder's claim is taken at once (kill -9); a claim
 *    whose slot was recovered and taken by another handle is free;
 *  - flash_ring_drain by a handle that does not hold the claim, while a live
 *    handle does, is FLASH_EBUSY and changes nothing (no record handed out,
 *    none lost for the holder, the tick counter not bumped); with no claim,
 *    after the holder closed, or after it was killed, anyone drains.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

static int count_fn(void *arg, const struct flash_record *rec, uint64_t seq)
{
	(void)rec;
	(void)seq;
	++*(uint32_t *)arg;
	return 0;
}

static void test_each_segment_has_its_own_incarnation(void **st)
{
	(void)st;
	char a[64], b[64];
	flash_t *ha = t_seg_new(NULL, a, sizeof a);
	flash_t *hb = t_seg_new(NULL, b, sizeof b);
	struct flash_ident ia, ib;
	assert_int_equal(flash_ident_get(ha, &ia), FLASH_OK);
	assert_int_equal(flash_ident_get(hb, &ib), FLASH_OK);
	assert_true(ia.incarnation != 0);
	assert_true(ib.incarnation != 0);
	assert_true(ia.incarnation != ib.incarnation);
	assert_int_equal(ia.wal_lsn, 0);
	assert_int_equal(ia.consumer_pid, 0);
	/* a read-only handle reads the same */
	flash_t *ro;
	assert_int_equal(flash_open(a, FLASH_RDONLY, &ro), FLASH_OK);
	t_track_handle(ro);
	struct flash_ident ir;
	assert_int_equal(flash_ident_get(ro, &ir), FLASH_OK);
	assert_int_equal(ir.incarnation, ia.incarnation);
	assert_int_equal(flash_ident_adopt(ro, 5), FLASH_EREADONLY);
}

static void test_adopt_only_while_no_wal_served_it(void **st)
{
	(void)st;
	char a[64];
	flash_t *h = t_seg_new(NULL, a, sizeof a);
	assert_int_equal(flash_ident_adopt(h, 0), FLASH_EINVAL);
	assert_int_equal(flash_ident_adopt(h, 0xfeedull), FLASH_OK);
	struct flash_ident id;
	assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
	assert_int_equal(id.incarnation, 0xfeedull);
	assert_int_equal(flash_ident_lsn_set(h, 42), FLASH_OK);
	assert_int_equal(flash_ident_adopt(h, 0xbeefull), FLASH_EEXIST);
	assert_int_equal(flash_ident_adopt(h, 0xfeedull), FLASH_OK);   /* its own: no change */
	assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
	assert_int_equal(id.incarnation, 0xfeedull);
	assert_int_equal(id.wal_lsn, 42);
}

static void test_restore_keeps_the_identity_and_drops_the_claim(void **st)
{
	(void)st;
	char a[64], b[64];
	flash_t *h = t_seg_new(NULL, a, sizeof a);
	assert_int_equal(flash_consumer_claim(h, NULL), FLASH_OK);
	assert_int_equal(flash_ident_lsn_set(h, 77), FLASH_OK);
	struct flash_ident ia;
	assert_int_equal(flash_ident_get(h, &ia), FLASH_OK);
	assert_int_equal(ia.consumer_pid, getpid());
	const void *img;
	uint64_t len;
	assert_int_equal(flash_image(h, &img, &len), FLASH_OK);
	t_segname(b, sizeof b);
	assert_int_equal(flash_seg_restore(b, NULL, img, len), FLASH_OK);
	flash_t *hb;
	assert_int_equal(flash_open(b, 0, &hb), FLASH_OK);
	t_track_handle(hb);
	struct flash_ident ib;
	assert_int_equal(flash_ident_get(hb, &ib), FLASH_OK);
	assert_int_equal(ib.incarnation, ia.incarnation);
	assert_int_equal(ib.wal_lsn, 77);
	assert_int_equal(ib.consumer_pid, 0);
	assert_int_equal(flash_consumer_claim(hb, NULL), FLASH_OK);
}

static void test_one_claim_at_a_time_released_by_close(void **st)
{
	(void)st;
	char a[64];
	flash_t *h1 = t_seg_new(NULL, a, sizeof a);
	flash_t *h2;
	assert_int_equal(flash_open(a, 0, &h2), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h1, NULL), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h1, NULL), FLASH_OK);   /* again: ours */
	int32_t pid = -1;
	assert_int_equal(flash_consumer_claim(h2, &pid), FLASH_EBUSY);
	assert_int_equal(pid, getpid());
	struct flash_ident id;
	assert_int_equal(flash_ident_get(h2, &id), FLASH_OK);
	assert_int_equal(id.consumer_slot, (uint32_t)flash_slot(h1));
	/* release by the holder only */
	assert_int_equal(flash_consumer_release(h2), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h2, NULL), FLASH_EBUSY);
	assert_int_equal(flash_consumer_release(h1), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h2, NULL), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h1, NULL), FLASH_EBUSY);
	assert_int_equal(flash_close(h2), FLASH_OK);
	assert_int_equal(flash_ident_get(h1, &id), FLASH_OK);
	assert_int_equal(id.consumer_pid, 0);
	assert_int_equal(flash_consumer_claim(h1, NULL), FLASH_OK);
}

/* A child claims, tells us, and waits to be killed. */
static void test_a_killed_holders_claim_is_taken_at_once(void **st)
{
	(void)st;
	char a[64];
	flash_t *h = t_seg_new(NULL, a, sizeof a);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		flash_t *ch;
		char ok = 'n';
		if (flash_open(a, 0, &ch) == FLASH_OK && flash_consumer_claim(ch, NULL) == FLASH_OK)
			ok = 'y';
		if (write(p[1], &ok, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	char ok = 0;
	assert_int_equal(read(p[0], &ok, 1), 1);
	close(p[0]);
	assert_int_equal(ok, 'y');
	int32_t pid = 0;
	assert_int_equal(flash_consumer_claim(h, &pid), FLASH_EBUSY);
	assert_int_equal(pid, c);
	kill(c, SIGKILL);
	int status;
	assert_int_equal(waitpid(c, &status, 0), c);
	/* no recovery pass, no delay: the holder is dead, the claim is free */
	assert_int_equal(flash_consumer_claim(h, &pid), FLASH_OK);
	struct flash_ident id;
	assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
	assert_int_equal(id.consumer_pid, getpid());
}

/* The holder died without closing, recovery freed its slot, and another
 * handle of a live process took the slot (a new generation): the old claim
 * names nobody, though the slot's pid now runs. */
static void test_a_claim_does_not_pass_to_the_slots_next_owner(void **st)
{
	(void)st;
	char a[64];
	flash_t *h = t_seg_new(NULL, a, sizeof a);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		flash_t *ch;
		int slot = -1;
		if (flash_open(a, 0, &ch) == FLASH_OK && flash_consumer_claim(ch, NULL) == FLASH_OK)
			slot = flash_slot(ch);
		_exit(write(p[1], &slot, sizeof slot) == (ssize_t)sizeof slot ? 0 : 1);
	}
	close(p[1]);
	int slot = -1;
	assert_int_equal(read(p[0], &slot, sizeof slot), (ssize_t)sizeof slot);
	close(p[0]);
	assert_true(slot >= 0);
	int status;
	assert_int_equal(waitpid(c, &status, 0), c);
	uint32_t n = 0;
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 1);
	flash_t *h3;
	assert_int_equal(flash_open(a, 0, &h3), FLASH_OK);
	t_track_handle(h3);
	assert_int_equal(flash_slot(h3), slot);          /* the same slot, a new generation */
	struct flash_ident id;
	assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
	assert_int_equal(id.consumer_pid, 0);
	assert_int_equal(flash_consumer_claim(h, NULL), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h3, NULL), FLASH_EBUSY);
}

/* Two handles of this process: h1 holds the claim, h2 drains.  Refused, and
 * nothing moved: the holder still drains the record; the segment's
 * quiet figures (ops, consumed, pending) are what they were. */
static void test_drain_by_a_non_holder_is_refused_while_the_holder_lives(void **st)
{
	(void)st;
	char a[64];
	flash_t *h1 = t_seg_new(NULL, a, sizeof a);
	flash_t *h2;
	assert_int_equal(flash_open(a, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	assert_int_equal(t_activity(h1, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h1, 1, 1, 10, 1), FLASH_OK);
	assert_int_equal(t_order(h2, 1, 1, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h1, NULL), FLASH_OK);
	struct flash_quiet q0, q1;
	assert_int_equal(flash_quiet_get(h1, &q0), FLASH_OK);
	assert_true(q0.pending >= 3);
	uint32_t calls = 0, n = 99;
	assert_int_equal(flash_ring_drain(h2, count_fn, &calls, 100, &n), FLASH_EBUSY);
	assert_int_equal(calls, 0);
	assert_int_equal(n, 0);
	assert_int_equal(flash_quiet_get(h1, &q1), FLASH_OK);
	assert_int_equal(q1.ops, q0.ops);
	assert_int_equal(q1.consumed, q0.consumed);
	assert_int_equal(q1.pending, q0.pending);
	/* the holder drains everything: activity, sku, order */
	assert_int_equal(flash_ring_drain(h1, count_fn, &calls, 100, &n), FLASH_OK);
	assert_int_equal(n, q0.pending);
	assert_int_equal(calls, q0.pending);
}

/* Without a claim anyone drains (tools and tests without a daemon); after
 * the holder closed, and after the holder was killed, too. */
static void test_drain_is_allowed_when_no_live_handle_holds_the_claim(void **st)
{
	(void)st;
	char a[64];
	flash_t *h = t_seg_new(NULL, a, sizeof a);
	uint32_t calls = 0, n = 0;
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_ring_drain(h, count_fn, &calls, 100, &n), FLASH_OK);
	assert_int_equal(n, 1);
	/* the holder closes: its claim goes with it */
	flash_t *h2;
	assert_int_equal(flash_open(a, 0, &h2), FLASH_OK);
	assert_int_equal(flash_consumer_claim(h2, NULL), FLASH_OK);
	assert_int_equal(flash_ring_drain(h, count_fn, &calls, 100, &n), FLASH_EBUSY);
	assert_int_equal(flash_close(h2), FLASH_OK);
	assert_int_equal(flash_ring_drain(h, count_fn, &calls, 100, &n), FLASH_OK);
	/* the holder is killed: its claim is free at once */
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		flash_t *ch;
		char ok = 'n';
		if (flash_open(a, 0, &ch) == FLASH_OK && flash_consumer_claim(ch, NULL) == FLASH_OK)
			ok = 'y';
		if (write(p[1], &ok, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	char ok = 0;
	assert_int_equal(read(p[0], &ok, 1), 1);
	close(p[0]);
	assert_int_equal(ok, 'y');
	assert_int_equal(flash_sku_add(h, 1, 1, 10, 1), FLASH_OK);
	calls = 0;
	assert_int_equal(flash_ring_drain(h, count_fn, &calls, 100, &n), FLASH_EBUSY);
	assert_int_equal(calls, 0);
	kill(c, SIGKILL);
	int status;
	assert_int_equal(waitpid(c, &status, 0), c);
	assert_int_equal(flash_ring_drain(h, count_fn, &calls, 100, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_int_equal(calls, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_each_segment_has_its_own_incarnation, t_teardown),
		cmocka_unit_test_teardown(test_adopt_only_while_no_wal_served_it, t_teardown),
		cmocka_unit_test_teardown(test_restore_keeps_the_identity_and_drops_the_claim, t_teardown),
		cmocka_unit_test_teardown(test_one_claim_at_a_time_released_by_close, t_teardown),
		cmocka_unit_test_teardown(test_a_killed_holders_claim_is_taken_at_once, t_teardown),
		cmocka_unit_test_teardown(test_a_claim_does_not_pass_to_the_slots_next_owner, t_teardown),
		cmocka_unit_test_teardown(test_drain_by_a_non_holder_is_refused_while_the_holder_lives,
		                          t_teardown),
		cmocka_unit_test_teardown(test_drain_is_allowed_when_no_live_handle_holds_the_claim,
		                          t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
