/*
 * archive_park.c -- an order that read its activity's catalog entry before
 * the archive's mark is refused once it resumes (issue 13).
 *
 * A buyer in a child process is parked (FS_PARK "order_read", the engine's
 * test hook in flashstock_crash: SIGSTOP) after it found the activity and
 * the sku and before its operation began: the archive's grace period does
 * not wait for it.  The parent archives the activity and adds another one
 * with the same sku id -- the same catalog entries, reused, a new version --
 * then resumes
 * the buyer: its re-check after fs_op_begin sees the state word moved and
 * it answers FLASH_EENDED with nothing held, and the new activity's stock
 * and orders are untouched.  Without the re-check the buyer would sell the
 * new activity's units under the old one's entry.
 *
 * And the other side: a buyer parked after its operation began holds the
 * archive's grace period; the archive gives up after its bound with
 * FLASH_EBUSY, the activity stays marked (its orders' cancels answer
 * FLASH_EARCHIVED), and once the buyer ends -- its order placed: it read
 * its time inside the window, before the mark -- the next flash_archive
 * finishes from the mark, that order included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"

static const char *park_at;   /* the child's: where to stop */

static void park_here(const char *where)
{
	if (park_at != NULL && strcmp(where, park_at) == 0)
		raise(SIGSTOP);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int add(flash_t *h, uint32_t id, int64_t end_ns, uint64_t units)
{
	struct flash_activity a = {
		.id = id, .limit_per_user = 1, .max_qty = 5, .scope = FLASH_SCOPE_ACTIVITY,
		.start_ns = now_ns() - 3600LL * 1000000000LL, .end_ns = end_ns,
	};
	int rc = flash_activity_add(h, &a);

	return rc != FLASH_OK ? rc : flash_sku_add(h, id, 10, units, 1);
}

static void test_order_that_read_the_entry_before_the_mark_is_refused_eended(void **state)
{
	struct flash_seg_opts o;
	struct flash_archive_info info;
	struct flash_sku_info si;
	struct flash_stats st;
	char name[64];
	flash_t *h;
	pid_t pid;
	int status, rc;

	(void)state;
	snprintf(name, sizeof name, "/fs-park-%ld", (long)getpid());
	flash_seg_opts_default(&o);
	o.max_orders = 64;
	o.max_users = 64;
	o.max_procs = 8;
	assert_int_equal(flash_seg_create(name, &o), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
	assert_int_equal(add(h, 1, now_ns() + 300LL * 1000000, 10), FLASH_OK);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 5, .qty = 2 };
		flash_t *c = NULL;

		if (flash_open(name, 0, &c) != FLASH_OK)
			_exit(100);
		park_at = "order_read";
		fs_park_fn = park_here;
		rc = flash_order(c, &r, NULL);
		flash_close(c);
		_exit(rc == FLASH_EENDED ? 0 : 10 - rc);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));   /* parked between its read and its operation */

	while ((rc = flash_archive(h, 1, 0, &info)) == FLASH_ENOT_ENDED)
		usleep(5000);
	assert_int_equal(rc, FLASH_OK);
	/* a new activity with the same sku id (an archived id is not added
	 * again): the entries the buyer read, reused */
	assert_int_equal(add(h, 2, now_ns() + 3600LL * 1000000000LL, 7), FLASH_OK);
	assert_int_equal(h->act[0].t[0].id, 2);
	assert_int_equal(FS_CAT_VER(h->act[0].state), 1);
	assert_int_equal(h->sku[0].activity_id, 2);

	assert_int_equal(kill(pid, SIGCONT), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);   /* FLASH_EENDED */
	assert_int_equal(flash_sku_get(h, 2, 10, &si), FLASH_OK);
	assert_int_equal(si.available, 7);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.orders, 0);
	flash_close(h);
	flash_seg_destroy(name);
}

static void test_open_operation_holds_the_archive_which_stays_marked_and_is_finished_later(void **state)
{
	struct flash_seg_opts o;
	struct flash_archive_info info;
	struct flash_order_res res;
	struct flash_order_req r0 = { .activity_id = 1, .sku_id = 10, .user_id = 4, .qty = 1 };
	char name[64];
	flash_t *h;
	pid_t pid;
	int status, rc;

	(void)state;
	snprintf(name, sizeof name, "/fs-park2-%ld", (long)getpid());
	flash_seg_opts_default(&o);
	o.max_orders = 1024;   /* a chunk of 64 numbers for each of the two handles */
	o.max_users = 64;
	o.max_procs = 8;
	assert_int_equal(flash_seg_create(name, &o), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
	assert_int_equal(add(h, 1, now_ns() + 300LL * 1000000, 10), FLASH_OK);
	assert_int_equal(flash_order(h, &r0, &res), FLASH_OK);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 5, .qty = 2 };
		flash_t *c = NULL;

		if (flash_open(name, 0, &c) != FLASH_OK)
			_exit(100);
		park_at = "order_begun";
		fs_park_fn = park_here;
		rc = flash_order(c, &r, NULL);
		flash_close(c);
		_exit(rc == FLASH_OK ? 0 : 10 - rc);
	}
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));   /* its operation open, its re-check passed */

	while ((rc = flash_archive(h, 1, 0, &info)) == FLASH_ENOT_ENDED)
		usleep(5000);
	assert_int_equal(rc, FLASH_EBUSY);   /* the grace period's bound */
	assert_int_equal(FS_CAT_KIND(h->act[0].state), FS_CAT_ARCHIVING);
	assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_EARCHIVED);
	/* its sku is marked too: a restock, which reads the sku alone, refuses */
	assert_int_equal(FS_CAT_KIND(h->sku[0].state), FS_CAT_ARCHIVING);
	assert_int_equal(flash_restock(h, 1, 10, 5), FLASH_ENOT_FOUND);
	/* and its activity takes no new sku (fuzz_attach's crash-e8f696de:
	 * the answer was undocumented) */
	assert_int_equal(flash_sku_add(h, 1, 11, 5, 1), FLASH_EENDED);

	assert_int_equal(kill(pid, SIGCONT), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);   /* placed: it began before the mark */
	assert_int_equal(flash_archive(h, 1, 0, &info), FLASH_OK);
	assert_int_equal(info.orders, 2);           /* archived with the rest */
	assert_int_equal(info.skus, 1);
	assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_EARCHIVED);
	flash_close(h);
	flash_seg_destroy(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_that_read_the_entry_before_the_mark_is_refused_eended),
		cmocka_unit_test(test_open_operation_holds_the_archive_which_stays_marked_and_is_finished_later),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
