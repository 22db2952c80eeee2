/*
 * test_mysql_lease_sql.c -- the central lease statements on a real MariaDB
 * (the single-node fixture): MariaDB itself refuses a take below zero and a
 * take or return under a stale or fenced epoch; a take whose connection is
 * lost before or after its COMMIT is retried into exactly one lease; a
 * return replayed returns once; two processes racing for the last units
 * never take the pool below zero; a reclaim of fenced leases gives the
 * unsold rest back once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "flashstock.h"
#include "central.h"
#include "mysql_apply.h"
#include "mysql_testutil.h"

static char g_url[600];

static central_t *central(int (*fault)(void *, int), void *arg)
{
	struct central_opts o = { .urls = g_url, .retry_ms = 20000, .fault = fault, .fault_arg = arg };
	central_t *c = NULL;
	assert_int_equal(central_open(&o, &c), FLASH_OK);
	return c;
}

static central_t *fresh(const char *name)
{
	char db[64];
	snprintf(db, sizeof db, "lc_%s_%d", name, (int)getpid());
	mysql_fresh_db(g_url, sizeof g_url, db);
	central_t *c = central(NULL, NULL);
	assert_int_equal(central_init(c), FLASH_OK);
	return c;
}

static int64_t count(central_t *c, const char *sql)
{
	MYSQL *m = central_conn(c);
	assert_non_null(m);
	assert_int_equal(mysql_query(m, sql), 0);
	MYSQL_RES *r = mysql_store_result(m);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	assert_non_null(row);
	int64_t v = row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

static void init_is_idempotent_and_pool_refuses_total_below_leased(void **state)
{
	(void)state;
	central_t *c = fresh("init");
	assert_int_equal(central_init(c), FLASH_OK);
	assert_int_equal(central_pool_set(c, 1, 7, 100), FLASH_OK);
	struct box_reg reg;
	assert_int_equal(central_register(c, 1, 1, &reg), FLASH_OK);
	assert_int_equal(central_take(c, 1, reg.epoch, 1, 7, central_lease_id(1, reg.epoch, 1), 60), FLASH_OK);
	assert_int_equal(central_pool_set(c, 1, 7, 59), FLASH_ESOLD_OUT);
	struct pool_row p;
	assert_int_equal(central_pool_get(c, 1, 7, &p), FLASH_OK);
	assert_int_equal(p.total, 100);
	assert_int_equal(p.unleased, 40);
	assert_int_equal(p.leased, 60);
	assert_int_equal(central_pool_set(c, 1, 7, 60), FLASH_OK);
	assert_int_equal(central_pool_get(c, 1, 7, &p), FLASH_OK);
	assert_int_equal(p.total, 60);
	assert_int_equal(p.unleased, 0);
	central_close(c);
}

static void take_below_zero_is_refused_and_changes_nothing(void **state)
{
	(void)state;
	central_t *c = fresh("zero");
	assert_int_equal(central_pool_set(c, 1, 1, 10), FLASH_OK);
	struct box_reg reg;
	assert_int_equal(central_register(c, 3, 1, &reg), FLASH_OK);
	assert_int_equal(reg.epoch, 1);
	assert_int_equal(central_take(c, 3, 1, 1, 1, central_lease_id(3, 1, 1), 11), FLASH_ESOLD_OUT);
	assert_int_equal(count(c, "SELECT COUNT(*) FROM fs_lease"), 0);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 10);
	assert_int_equal(central_take(c, 3, 1, 1, 1, central_lease_id(3, 1, 2), 10), FLASH_OK);
	assert_int_equal(central_take(c, 3, 1, 1, 1, central_lease_id(3, 1, 3), 1), FLASH_ESOLD_OUT);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 0);
	/* an unknown pool is never created by a take */
	assert_int_equal(central_take(c, 3, 1, 1, 2, central_lease_id(3, 1, 4), 1), FLASH_ESOLD_OUT);
	central_close(c);
}

static void take_and_return_under_a_stale_or_fenced_epoch_are_refused(void **state)
{
	(void)state;
	central_t *c = fresh("stale");
	assert_int_equal(central_pool_set(c, 1, 1, 100), FLASH_OK);
	struct box_reg r1, r2;
	assert_int_equal(central_register(c, 2, 1, &r1), FLASH_OK);
	uint64_t l1 = central_lease_id(2, r1.epoch, 1);
	assert_int_equal(central_take(c, 2, r1.epoch, 1, 1, l1, 5), FLASH_OK);
	/* a restart registers again: the old epoch is dead, the lease adopted */
	assert_int_equal(central_register(c, 2, 1, &r2), FLASH_OK);
	assert_int_equal(r2.epoch, r1.epoch + 1);
	assert_int_equal(r2.adopted, 1);
	assert_int_equal(central_take(c, 2, r1.epoch, 1, 1, central_lease_id(2, r1.epoch, 2), 5), FLASH_EFENCED);
	assert_int_equal(central_return(c, 2, r1.epoch, 1, 1, l1, 0, 1), FLASH_EFENCED);
	assert_int_equal(central_heartbeat(c, 2, r1.epoch, 0), FLASH_EFENCED);
	assert_int_equal(central_heartbeat(c, 2, r2.epoch, 0), FLASH_OK);
	/* a fresh heartbeat refuses a fence without --force */
	assert_int_equal(central_fence(c, 2, 30, 0, NULL, NULL), FLASH_EBUSY);
	uint32_t ne = 0, nl = 0;
	assert_int_equal(central_fence(c, 2, 30, 1, &ne, &nl), FLASH_OK);
	assert_int_equal(ne, r2.epoch + 1);
	assert_int_equal(nl, 1);
	assert_int_equal(central_fence(c, 2, 30, 1, NULL, NULL), FLASH_EEXIST);
	assert_int_equal(central_take(c, 2, r2.epoch, 1, 1, central_lease_id(2, r2.epoch, 1), 5), FLASH_EFENCED);
	assert_int_equal(central_take(c, 2, ne, 1, 1, central_lease_id(2, ne, 1), 5), FLASH_EFENCED);
	assert_int_equal(central_return(c, 2, r2.epoch, 1, 1, l1, 0, 1), FLASH_EFENCED);
	assert_int_equal(central_heartbeat(c, 2, r2.epoch, 0), FLASH_EFENCED);
	/* a fenced box is refused registration until it asks for it knowingly */
	struct box_reg r3;
	assert_int_equal(central_register(c, 2, 1, &r3), FLASH_EFENCED);
	assert_int_equal(r3.was_fenced, 1);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 95);
	assert_int_equal(count(c, "SELECT COUNT(*) FROM fs_lease"), 1);
	central_close(c);
}

struct fault { int point, left; };

static int fault_fn(void *arg, int point)
{
	struct fault *f = arg;
	if (point == f->point && f->left > 0) {
		f->left--;
		return 1;
	}
	return 0;
}

static void take_retried_after_a_lost_connection_takes_one_lease(void **state)
{
	(void)state;
	central_t *c0 = fresh("lost");
	assert_int_equal(central_pool_set(c0, 1, 1, 100), FLASH_OK);
	struct box_reg reg;
	assert_int_equal(central_register(c0, 4, 1, &reg), FLASH_OK);
	/* the reply of a committed COMMIT is lost: the retry finds the lease */
	struct fault fa = { CENTRAL_AFTER_COMMIT, 1 };
	central_t *c = central(fault_fn, &fa);
	assert_int_equal(central_take(c, 4, reg.epoch, 1, 1, central_lease_id(4, reg.epoch, 1), 7), FLASH_OK);
	assert_int_equal(fa.left, 0);
	assert_int_equal(count(c0, "SELECT COUNT(*) FROM fs_lease"), 1);
	assert_int_equal(count(c0, "SELECT unleased FROM fs_pool"), 93);
	central_close(c);
	/* the connection dies before COMMIT: rolled back, the retry takes it */
	struct fault fb = { CENTRAL_BEFORE_COMMIT, 1 };
	c = central(fault_fn, &fb);
	assert_int_equal(central_take(c, 4, reg.epoch, 1, 1, central_lease_id(4, reg.epoch, 2), 8), FLASH_OK);
	assert_int_equal(fb.left, 0);
	assert_int_equal(count(c0, "SELECT COUNT(*) FROM fs_lease"), 2);
	assert_int_equal(count(c0, "SELECT unleased FROM fs_pool"), 85);
	/* the same id asked again (a box that did not know the outcome) is the same lease */
	assert_int_equal(central_take(c, 4, reg.epoch, 1, 1, central_lease_id(4, reg.epoch, 2), 8), FLASH_OK);
	assert_int_equal(central_take(c, 4, reg.epoch, 1, 1, central_lease_id(4, reg.epoch, 2), 9), FLASH_EEXIST);
	assert_int_equal(count(c0, "SELECT unleased FROM fs_pool"), 85);
	assert_int_equal(count(c0, "SELECT SUM(units) FROM fs_lease"), 15);
	central_close(c);
	central_close(c0);
}

static void return_replayed_twice_returns_once(void **state)
{
	(void)state;
	central_t *c = fresh("ret");
	assert_int_equal(central_pool_set(c, 1, 1, 50), FLASH_OK);
	struct box_reg reg;
	assert_int_equal(central_register(c, 5, 1, &reg), FLASH_OK);
	uint64_t id = central_lease_id(5, reg.epoch, 1);
	assert_int_equal(central_take(c, 5, reg.epoch, 1, 1, id, 20), FLASH_OK);
	assert_int_equal(central_return(c, 5, reg.epoch, 1, 1, id, 0, 6), FLASH_OK);
	assert_int_equal(central_return(c, 5, reg.epoch, 1, 1, id, 0, 6), FLASH_OK);   /* replay */
	struct lease_row l;
	assert_int_equal(central_lease_get(c, id, &l), FLASH_OK);
	assert_int_equal(l.returned, 6);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 36);
	/* a return whose reply is lost, retried by the handle: once */
	struct fault fa = { CENTRAL_AFTER_COMMIT, 1 };
	struct central_opts o = { .urls = g_url, .fault = fault_fn, .fault_arg = &fa };
	central_t *cf;
	assert_int_equal(central_open(&o, &cf), FLASH_OK);
	assert_int_equal(central_return(cf, 5, reg.epoch, 1, 1, id, 6, 4), FLASH_OK);
	assert_int_equal(fa.left, 0);
	central_close(cf);
	assert_int_equal(count(c, "SELECT returned FROM fs_lease"), 10);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 40);
	/* more than the lease holds, or a stale returned count: refused */
	assert_int_equal(central_return(c, 5, reg.epoch, 1, 1, id, 10, 11), FLASH_ELEASE);
	assert_int_equal(central_return(c, 5, reg.epoch, 1, 1, id, 3, 1), FLASH_ELEASE);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 40);
	/* close: the rest counts as sold */
	assert_int_equal(central_lease_close(c, 5, reg.epoch, id), FLASH_OK);
	assert_int_equal(central_lease_close(c, 5, reg.epoch, id), FLASH_OK);
	assert_int_equal(count(c, "SELECT sold_at_close FROM fs_lease"), 10);
	assert_int_equal(central_return(c, 5, reg.epoch, 1, 1, id, 10, 1), FLASH_ELEASE);
	/* a cancel after the close gives 2 units back: once, replayed or not */
	assert_int_equal(central_return_closed(c, 5, reg.epoch, 1, 1, id, 10, 2), FLASH_OK);
	assert_int_equal(central_return_closed(c, 5, reg.epoch, 1, 1, id, 10, 2), FLASH_OK);
	assert_int_equal(count(c, "SELECT sold_at_close FROM fs_lease"), 8);
	assert_int_equal(count(c, "SELECT returned FROM fs_lease"), 12);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 42);
	assert_int_equal(central_return_closed(c, 5, reg.epoch, 1, 1, id, 9, 2), FLASH_ELEASE);
	assert_int_equal(central_return_closed(c, 5, reg.epoch + 1, 1, 1, id, 8, 1), FLASH_EFENCED);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 42);
	central_close(c);
}

/* Each child registers its own box and takes 1..3 units until refused. */
static void racer(uint32_t box, int64_t *taken)
{
	central_t *c = central(NULL, NULL);
	struct box_reg reg;
	if (central_register(c, box, 1, &reg) != FLASH_OK)
		_exit(2);
	int64_t sum = 0;
	uint32_t seq = 0;
	for (int misses = 0; misses < 3;) {
		int64_t k = 1 + (seq % 3);
		int rc = central_take(c, box, reg.epoch, 1, 1, central_lease_id(box, reg.epoch, ++seq), k);
		if (rc == FLASH_OK)
			sum += k;
		else if (rc == FLASH_ESOLD_OUT)
			misses++;
		else
			_exit(3);
	}
	central_close(c);
	*taken = sum;
}

static void two_boxes_racing_for_the_last_units_never_take_the_pool_below_zero(void **state)
{
	(void)state;
	central_t *c = fresh("race");
	const int64_t total = 300;
	assert_int_equal(central_pool_set(c, 1, 1, total), FLASH_OK);
	int fds[2][2];
	pid_t pid[2];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pipe(fds[i]), 0);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			int64_t t = 0;
			racer((uint32_t)(10 + i), &t);
			if (write(fds[i][1], &t, sizeof t) != (ssize_t)sizeof t)
				_exit(4);
			_exit(0);
		}
		close(fds[i][1]);
	}
	int64_t sum = 0;
	for (int i = 0; i < 2; i++) {
		int st;
		assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		int64_t t = -1;
		assert_int_equal(read(fds[i][0], &t, sizeof t), (ssize_t)sizeof t);
		close(fds[i][0]);
		assert_true(t > 0);
		sum += t;
	}
	int64_t unleased = count(c, "SELECT unleased FROM fs_pool");
	assert_true(unleased >= 0);
	assert_true(unleased < 3);            /* a take of 1 was refused after every other */
	assert_int_equal(count(c, "SELECT SUM(units) FROM fs_lease"), total - unleased);
	assert_int_equal(sum, total - unleased);
	central_close(c);
}

static void reclaim_of_fenced_leases_returns_the_unsold_rest_once(void **state)
{
	(void)state;
	central_t *c = fresh("reclaim");
	assert_int_equal(central_pool_set(c, 1, 1, 100), FLASH_OK);
	struct box_reg reg;
	assert_int_equal(central_register(c, 6, 1, &reg), FLASH_OK);
	assert_int_equal(central_take(c, 6, reg.epoch, 1, 1, central_lease_id(6, reg.epoch, 1), 20), FLASH_OK);
	assert_int_equal(central_take(c, 6, reg.epoch, 1, 1, central_lease_id(6, reg.epoch, 2), 30), FLASH_OK);
	assert_int_equal(central_fence(c, 6, 0, 1, NULL, NULL), FLASH_OK);
	int64_t back = -1;
	/* sold more than the leases held: the figures disagree, refused */
	assert_int_equal(central_reclaim(c, 6, 1, 1, 51, &back), FLASH_ELEASE);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 50);
	assert_int_equal(central_reclaim(c, 6, 1, 1, 27, &back), FLASH_OK);
	assert_int_equal(back, 23);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 73);
	assert_int_equal(count(c, "SELECT SUM(sold_at_close) FROM fs_lease"), 27);
	assert_int_equal(count(c, "SELECT COUNT(*) FROM fs_lease WHERE state = 'closed'"), 2);
	assert_int_equal(central_reclaim(c, 6, 1, 1, 27, &back), FLASH_OK);
	assert_int_equal(back, 0);
	assert_int_equal(count(c, "SELECT unleased FROM fs_pool"), 73);
	struct pool_row p;
	assert_int_equal(central_pool_get(c, 1, 1, &p), FLASH_OK);
	assert_int_equal(p.unleased + p.leased + p.sold_closed, p.total);
	/* the fenced box may now register knowingly: a new epoch, nothing adopted */
	struct box_reg r2;
	assert_int_equal(central_register(c, 6, 0, &r2), FLASH_OK);
	assert_int_equal(r2.was_fenced, 1);
	assert_int_equal(r2.adopted, 0);
	assert_int_equal(r2.fenced_leases, 0);
	central_close(c);
}

static void a_bad_url_list_is_refused(void **state)
{
	(void)state;
	struct central_opts o = { .urls = "http://x/y" };
	central_t *c = NULL;
	assert_int_equal(central_open(&o, &c), FLASH_EMYSQL_CONFIG);
	o.urls = ",";
	assert_int_equal(central_open(&o, &c), FLASH_EMYSQL_CONFIG);
	assert_null(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_bad_url_list_is_refused),
		cmocka_unit_test(init_is_idempotent_and_pool_refuses_total_below_leased),
		cmocka_unit_test(take_below_zero_is_refused_and_changes_nothing),
		cmocka_unit_test(take_and_return_under_a_stale_or_fenced_epoch_are_refused),
		cmocka_unit_test(take_retried_after_a_lost_connection_takes_one_lease),
		cmocka_unit_test(return_replayed_twice_returns_once),
		cmocka_unit_test(two_boxes_racing_for_the_last_units_never_take_the_pool_below_zero),
		cmocka_unit_test(reclaim_of_fenced_leases_returns_the_unsold_rest_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
