/*
 * test_api_quiet.c -- flash_quiet_get(): what the daemon's reconciler
 * relies on to compare the segment with the WAL only in a quiet window.
 *
 *   - a record published and not yet durable makes the segment busy
 *     (pending); marking it durable makes it quiet again (consumed grows);
 *   - every operation raises ops (by one or more: each tagged change takes
 *     a sequence number), a refused one too, so two equal readings bracket
 *     a span in which nothing began;
 *   - an operation between its begin and its end is in flight: one of a
 *     stopped handle, and of a dead one until recovery finishes it;
 *   - a read-only handle reads the same figures.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

static struct flash_quiet quiet_of(flash_t *h)
{
	struct flash_quiet q;
	assert_int_equal(flash_quiet_get(h, &q), FLASH_OK);
	return q;
}

static void drain(flash_t *h)
{
	struct t_recs r = { 0 };
	assert_int_equal(t_recs_drain(h, &r), FLASH_OK);
	t_recs_free(&r);
}

static void test_records_pending_until_durable(void **state)
{
	(void)state;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_quiet q0 = quiet_of(h);
	assert_int_equal(q0.pending, 0);
	assert_int_equal(q0.in_flight, 0);

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 1, 1), FLASH_OK);
	struct flash_quiet q1 = quiet_of(h);
	assert_int_equal(q1.pending, 2);
	assert_int_equal(q1.in_flight, 0);
	assert_true(q1.ops >= q0.ops + 2);
	drain(h);
	struct flash_quiet q2 = quiet_of(h);
	assert_int_equal(q2.pending, 0);
	assert_int_equal(q2.consumed, q1.consumed + 2);
	assert_int_equal(q2.ops, q1.ops);

	/* an order: one more op, one more pending record */
	assert_int_equal(t_order(h, 1, 1, 7, 1, 0, 0, NULL), FLASH_OK);
	struct flash_quiet q3 = quiet_of(h);
	assert_int_equal(q3.pending, 1);
	assert_true(q3.ops > q2.ops);
	drain(h);
	/* a refused order (sold out) emits nothing but still counts as begun */
	struct flash_quiet q4 = quiet_of(h);
	assert_int_equal(t_order(h, 1, 1, 8, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	struct flash_quiet q5 = quiet_of(h);
	assert_int_equal(q5.pending, 0);
	assert_int_equal(q5.in_flight, 0);
	assert_true(q5.ops > q4.ops);
	assert_int_equal(q5.consumed, q4.consumed);

	/* a monitor's read-only handle sees the same */
	flash_t *ro;
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	struct flash_quiet qr = quiet_of(ro);
	assert_int_equal(qr.ops, q5.ops);
	assert_int_equal(qr.consumed, q5.consumed);
	assert_int_equal(qr.pending, 0);
	assert_int_equal(flash_close(ro), FLASH_OK);
	assert_int_equal(flash_quiet_get(h, NULL), FLASH_EINVAL);
	assert_int_equal(flash_quiet_get(NULL, &qr), FLASH_EINVAL);
}

/* A child restocking up and down until it is killed. */
static void restock_forever(const char *name)
{
	flash_t *h;
	prctl(PR_SET_PDEATHSIG, SIGKILL);     /* a failed test leaves no child */
	if (getppid() == 1 || flash_open(name, 0, &h) != FLASH_OK)
		_exit(3);
	for (int64_t d = 1;; d = -d) {
		int rc = flash_restock(h, 1, 1, d);
		if (rc != FLASH_OK && rc != FLASH_EBUSY)
			_exit(4);
	}
}

/*
 * A handle stopped, then killed, in the middle of an operation: in flight
 * while stopped, still in flight once dead, and no longer once recovery has
 * finished the operation.  The child is stopped again and again until a stop
 * lands inside an operation (most of its time is spent in one).
 */
static void test_operation_of_a_stopped_or_dead_handle_is_in_flight(void **state)
{
	(void)state;
	char name[64];
	struct flash_seg_opts o;
	t_opts_small(&o);
	o.ring_records = 1u << 16;             /* drained at every stop: never full */
	flash_t *h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 100, 4), FLASH_OK);
	drain(h);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		restock_forever(name);
	struct flash_quiet q = { 0 };
	int status, tries;
	for (tries = 0; tries < 20000; tries++) {
		assert_int_equal(kill(pid, SIGSTOP), 0);
		assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
		assert_true(WIFSTOPPED(status));
		q = quiet_of(h);
		if (q.in_flight == 1)
			break;
		assert_int_equal(q.in_flight, 0);
		drain(h);
		assert_int_equal(kill(pid, SIGCONT), 0);
		usleep(50 + (unsigned)(tries % 8) * 40);   /* let it run a little */
	}
	assert_int_equal(q.in_flight, 1);
	for (int i = 0; i < 1000; i++)     /* nothing moves while it is stopped */
		assert_int_equal(quiet_of(h).ops, q.ops);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(quiet_of(h).in_flight, 1);
	uint32_t rec = 0;
	assert_int_equal(flash_recover(h, &rec), FLASH_OK);
	assert_int_equal(rec, 1);
	struct flash_quiet after = quiet_of(h);
	assert_int_equal(after.in_flight, 0);
	assert_true(after.ops >= q.ops);
	drain(h);
	assert_int_equal(quiet_of(h).pending, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_records_pending_until_durable, t_teardown),
		cmocka_unit_test_teardown(test_operation_of_a_stopped_or_dead_handle_is_in_flight, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
