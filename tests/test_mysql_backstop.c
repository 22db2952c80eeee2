/*
 * test_mysql_backstop.c -- the cross-box per-user limit (persist/backstop.c,
 * `serve --backstop`) against the private MariaDB of the ctest fixture.
 * Two boxes on this machine: two segments, two daemons (serve_run on
 * threads of the test), one central database.
 *
 *   - limit 1: one user orders on both boxes; one order stays, the other is
 *     cancelled in its box (flash_order_get says CANCELLED, its unit is
 *     back in stock, its feed carries the CANCEL), fs_backstop records it,
 *     the metric's counter says 1;
 *   - limit 2: two orders on two boxes stay (two central slots), a third is
 *     cancelled;
 *   - a cancel that returned the quota frees the central slot: the user's
 *     next order on the other box stays;
 *   - restart with the feed position gone (the feed hands every record out
 *     again): nothing is written or cancelled twice;
 *   - a cancel decided but not made (a daemon killed between the central
 *     commit and flash_cancel) is made when the backstop starts.
 *
 * The tests wait for outcomes (a bounded poll), never for a time.
 */
#include <mysql.h>
#include <pthread.h>
#include <unistd.h>

#include "helpers.h"
#include "backstop.h"
#include "mysql_apply.h"
#include "serve.h"
#include "wal_testutil.h"
#include "mysql_testutil.h"

static int g_db;

struct box {
	char                name[64];
	char               *dir;
	flash_t            *h;
	struct serve_thread t;
	int                 running;
};

static char g_url[512];

static MYSQL *central(flash_mysql_t **m)
{
	struct flash_mysql_opts o = { .url = g_url, .no_schema = 1 };
	assert_int_equal(flash_mysql_open(&o, m), FLASH_OK);
	MYSQL *c = flash_mysql_conn(*m);
	assert_non_null(c);
	return c;
}

__attribute__((format(printf, 2, 3)))
static uint64_t q1(MYSQL *c, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (mysql_query(c, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(c));
		fail();
	}
	MYSQL_RES *r = mysql_store_result(c);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	uint64_t v = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

__attribute__((format(printf, 2, 3)))
static void qx(MYSQL *c, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (mysql_query(c, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(c));
		fail();
	}
}

static void fresh_central(void)
{
	char db[64];
	snprintf(db, sizeof db, "fsb_%d_%d", (int)getpid(), ++g_db);
	mysql_fresh_db(g_url, sizeof g_url, db);
}

static void box_serve(struct box *b, uint32_t box_id, const char *urls)
{
	struct serve_thread *t = &b->t;
	memset(t, 0, sizeof *t);
	serve_opts_default(&t->o);
	t->o.segment = b->name;
	t->o.wal_dir = b->dir;
	t->o.log_level = SERVE_LOG_WARN;
	t->o.idle_us_max = 200;
	t->o.stop = &t->stop;
	t->o.reconcile_every_ms = 0;
	t->o.box_id = box_id;
	t->o.backstop_urls = urls;
#ifdef FLASH_HAVE_MHD
	t->o.metrics = "127.0.0.1:0";
#endif
	assert_int_equal(pthread_create(&t->th, NULL, serve_thread_main, t), 0);
	b->running = 1;
}

static void box_stop(struct box *b)
{
	if (!b->running)
		return;
	__atomic_store_n(&b->t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(b->t.th, NULL);
	b->running = 0;
	assert_int_equal(b->t.rc, 0);
}

/* A box: a segment with activity 1 (limit @p k, flags) and sku 1 of 10 units. */
static void box_new(struct box *b, uint32_t k, uint32_t flags)
{
	memset(b, 0, sizeof *b);
	b->h = t_seg_new(NULL, b->name, sizeof b->name);
	assert_int_equal(t_activity(b->h, 1, k, 4, FLASH_SCOPE_ACTIVITY, flags), FLASH_OK);
	assert_int_equal(flash_sku_add(b->h, 1, 1, 10, 1), FLASH_OK);
	b->dir = wt_mkdtemp();
}

static void box_free(struct box *b)
{
	box_stop(b);
	wt_rmdir(b->dir);
}

static uint32_t order_state(struct box *b, uint64_t order_no)
{
	struct flash_order_info oi;
	assert_int_equal(flash_order_get(b->h, order_no, &oi), FLASH_OK);
	return oi.state;
}

/* Wait until the central position of box @p id covers every record its WAL
 * holds now (a bounded poll: 60 s is a failure, not a figure). */
static void wait_written(MYSQL *c, struct box *b, uint32_t id)
{
	struct flash_ident ident;
	for (int i = 0; i < 6000; i++) {
		/* nothing pending first, then the LSN: the drain stores the LSN
		 * before it marks the records durable, so an LSN read after
		 * "pending 0" covers every record published before that read
		 * (read the other way round, a stale LSN let the wait end before
		 * the last order reached the WAL) */
		struct flash_quiet q;
		assert_int_equal(flash_quiet_get(b->h, &q), FLASH_OK);
		assert_int_equal(flash_ident_get(b->h, &ident), FLASH_OK);
		uint64_t pos = 0;
		char sql[128];
		snprintf(sql, sizeof sql, "SELECT lsn FROM fs_backstop_pos WHERE box_id = %u", id);
		if (mysql_query(c, sql) == 0) {   /* the table may not be there yet */
			MYSQL_RES *res = mysql_store_result(c);
			MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
			pos = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
			if (res)
				mysql_free_result(res);
		}
		if (q.pending == 0 && ident.wal_lsn != 0 && pos >= ident.wal_lsn)
			return;
		t_sleep_ms(10);
	}
	fail_msg("box %u: the backstop did not catch up with its WAL", id);
}

/* The feed of @p b holds a CANCEL of @p order_no. */
static int feed_has_cancel(struct box *b, uint64_t order_no)
{
	struct flash_feed_opts fo;
	flash_feed_opts_default(&fo);
	fo.from_start = 1;
	flash_feed_t *f;
	char name[32];
	snprintf(name, sizeof name, "check%d", ++g_db);
	assert_int_equal(flash_feed_open(b->dir, name, &fo, &f), FLASH_OK);
	struct flash_feed_rec r;
	int found = 0;
	while (flash_feed_next(f, &r, 0) == FLASH_OK)
		found |= r.fr_rec.type == FLASH_REC_CANCEL && r.fr_rec.order_no == order_no;
	flash_feed_close(f);
	return found;
}

/* ---- 1. limit 1: the second box's order is cancelled ---- */

static void test_limit1_order_on_a_second_box_is_cancelled_units_back_feed_carries_it(void **state)
{
	(void)state;
	fresh_central();
	struct box a, b;
	box_new(&a, 1, 0);
	box_new(&b, 1, 0);
	box_serve(&a, 1, g_url);
	box_serve(&b, 2, g_url);

	struct flash_order_res ra, rb;
	assert_int_equal(t_order(a.h, 1, 1, 42, 1, 0, 0, &ra), FLASH_OK);
	assert_int_equal(t_order(b.h, 1, 1, 42, 1, 0, 0, &rb), FLASH_OK);
	/* both boxes checked the limit on their own: each sold one unit */
	assert_int_equal(t_available(a.h, 1, 1), 9);
	assert_int_equal(t_available(b.h, 1, 1), 9);

	flash_mysql_t *m;
	MYSQL *c = central(&m);
	/* wait until one of them is cancelled and both boxes are written */
	for (int i = 0; i < 6000 && order_state(&a, ra.order_no) == FLASH_ORDER_ACTIVE &&
	                order_state(&b, rb.order_no) == FLASH_ORDER_ACTIVE; i++)
		t_sleep_ms(10);
	wait_written(c, &a, 1);
	wait_written(c, &b, 2);

	uint32_t sa = order_state(&a, ra.order_no), sb = order_state(&b, rb.order_no);
	assert_true((sa == FLASH_ORDER_ACTIVE && sb == FLASH_ORDER_CANCELLED) ||
	            (sa == FLASH_ORDER_CANCELLED && sb == FLASH_ORDER_ACTIVE));
	struct box *lost = sa == FLASH_ORDER_CANCELLED ? &a : &b, *kept = lost == &a ? &b : &a;
	uint64_t lost_no = lost == &a ? ra.order_no : rb.order_no;
	uint64_t kept_no = kept == &a ? ra.order_no : rb.order_no;
	uint32_t lost_id = lost == &a ? 1 : 2, kept_id = lost_id == 1 ? 2 : 1;
	/* the unit of the cancelled order is back in its box */
	assert_int_equal(t_available(lost->h, 1, 1), 10);
	assert_int_equal(t_available(kept->h, 1, 1), 9);
	/* the feed carries the cancel */
	assert_true(feed_has_cancel(lost, lost_no));
	/* centrally: one slot held, by the kept order; one refusal, made */
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE user_id = 42 AND active_key = 1"), 1);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE user_id = 42 AND box_id = %u AND"
	                    " order_no = %llu", kept_id, (unsigned long long)kept_no), 1);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop"), 1);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop WHERE box_id = %u AND order_no = %llu AND"
	                    " cancelled = 1 AND units_returned = 1 AND holder_box = %u AND holder_order = %llu"
	                    " AND reason = 'user_limit'", lost_id, (unsigned long long)lost_no, kept_id,
	                    (unsigned long long)kept_no), 1);
#ifdef FLASH_HAVE_MHD
	/* the metric, on each box's endpoint */
	for (struct box *x = &a; x; x = x == &a ? &b : NULL) {
		uint16_t port = 0;
		for (int i = 0; i < 6000 && !(port = (uint16_t)__atomic_load_n(&x->t.st.metrics_port,
		                                                                 __ATOMIC_ACQUIRE)); i++)
			t_sleep_ms(10);
		char *body = t_metrics_get(port);
		assert_non_null(body);
		assert_non_null(strstr(body, "flashstock_backstop_conflicts_total"));
		assert_int_equal(t_metrics_sample(body, "flashstock_backstop_conflicts_total"), x == lost ? 1 : 0);
		assert_int_equal(t_metrics_sample(body, "flashstock_backstop_compensated_total"), x == lost ? 1 : 0);
		free(body);
	}
#endif
	box_stop(&a);
	box_stop(&b);
	/* counted once, by the box that cancelled */
	assert_int_equal(lost->t.st.backstop_conflicts, 1);
	assert_int_equal(kept->t.st.backstop_conflicts, 0);
	flash_mysql_close(m);
	box_free(&a);
	box_free(&b);
}

/* ---- 2. limit 2: two orders on two boxes stay, a third goes ---- */

static void test_limit2_two_orders_across_boxes_stay_the_third_is_cancelled(void **state)
{
	(void)state;
	fresh_central();
	struct box a, b;
	box_new(&a, 2, 0);
	box_new(&b, 2, 0);
	box_serve(&a, 1, g_url);
	box_serve(&b, 2, g_url);
	flash_mysql_t *m;
	MYSQL *c = central(&m);

	struct flash_order_res r1, r2, r3;
	assert_int_equal(t_order(a.h, 1, 1, 7, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(t_order(b.h, 1, 1, 7, 1, 0, 0, &r2), FLASH_OK);
	wait_written(c, &a, 1);
	wait_written(c, &b, 2);
	/* both boxes gave the user their slot 1; centrally they hold 1 and 2 */
	assert_int_equal(r1.limit_slot, 1);
	assert_int_equal(r2.limit_slot, 1);
	assert_int_equal(order_state(&a, r1.order_no), FLASH_ORDER_ACTIVE);
	assert_int_equal(order_state(&b, r2.order_no), FLASH_ORDER_ACTIVE);
	assert_int_equal(q1(c, "SELECT COUNT(DISTINCT limit_slot) FROM fs_user_limit WHERE user_id = 7"), 2);
	/* a third order on box a: its local slot 2 is free, no central one is */
	assert_int_equal(t_order(a.h, 1, 1, 7, 1, 0, 0, &r3), FLASH_OK);
	for (int i = 0; i < 6000 && order_state(&a, r3.order_no) == FLASH_ORDER_ACTIVE; i++)
		t_sleep_ms(10);
	assert_int_equal(order_state(&a, r3.order_no), FLASH_ORDER_CANCELLED);
	assert_int_equal(order_state(&a, r1.order_no), FLASH_ORDER_ACTIVE);
	assert_int_equal(order_state(&b, r2.order_no), FLASH_ORDER_ACTIVE);
	assert_int_equal(t_available(a.h, 1, 1), 9);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop WHERE box_id = 1 AND order_no = %llu",
	                    (unsigned long long)r3.order_no), 1);
	flash_mysql_close(m);
	box_free(&a);
	box_free(&b);
}

/* ---- 3. a cancel that returned the quota frees the central slot ---- */

static void test_cancel_returning_quota_frees_the_slot_for_another_box(void **state)
{
	(void)state;
	fresh_central();
	struct box a, b;
	box_new(&a, 1, FLASH_ACT_CANCEL_RETURNS_QUOTA);
	box_new(&b, 1, FLASH_ACT_CANCEL_RETURNS_QUOTA);
	box_serve(&a, 1, g_url);
	box_serve(&b, 2, g_url);
	flash_mysql_t *m;
	MYSQL *c = central(&m);

	struct flash_order_res r1, r2;
	assert_int_equal(t_order(a.h, 1, 1, 9, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(flash_cancel(a.h, r1.order_no, NULL), FLASH_OK);
	wait_written(c, &a, 1);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE user_id = 9 AND status = 'CANCELLED'"
	                    " AND active_key IS NULL"), 1);
	assert_int_equal(t_order(b.h, 1, 1, 9, 1, 0, 0, &r2), FLASH_OK);
	wait_written(c, &b, 2);
	assert_int_equal(order_state(&b, r2.order_no), FLASH_ORDER_ACTIVE);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop"), 0);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE user_id = 9 AND active_key = 1"), 1);
	flash_mysql_close(m);
	box_free(&a);
	box_free(&b);
}

/* ---- 4. replay after a restart writes nothing twice ---- */

static void test_restart_with_the_feed_from_the_start_writes_and_cancels_nothing_twice(void **state)
{
	(void)state;
	fresh_central();
	struct box a, b;
	box_new(&a, 1, 0);
	box_new(&b, 1, 0);
	assert_int_equal(flash_restock(a.h, 1, 1, 90), FLASH_OK);
	assert_int_equal(flash_restock(b.h, 1, 1, 90), FLASH_OK);
	box_serve(&a, 1, g_url);
	box_serve(&b, 2, g_url);
	flash_mysql_t *m;
	MYSQL *c = central(&m);
	struct flash_order_res r;
	/* users 100..119 order on box a, then users 110..129 on box b */
	for (uint64_t u = 100; u < 120; u++)
		assert_int_equal(t_order(a.h, 1, 1, u, 1, 0, 0, &r), FLASH_OK);
	wait_written(c, &a, 1);
	for (uint64_t u = 110; u < 130; u++)
		assert_int_equal(t_order(b.h, 1, 1, u, 1, 0, 0, &r), FLASH_OK);
	wait_written(c, &b, 2);
	/* box a wrote first: b's orders of users 110..119 are the doubles */
	for (int i = 0; i < 6000 && q1(c, "SELECT COUNT(*) FROM fs_backstop WHERE cancelled = 1") < 10; i++)
		t_sleep_ms(10);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop WHERE cancelled = 1 AND box_id = 2"), 10);
	wait_written(c, &b, 2);
	box_stop(&a);
	box_stop(&b);
	assert_int_equal(b.t.st.backstop_conflicts, 10);
	uint64_t avail_a = t_available(a.h, 1, 1), avail_b = t_available(b.h, 1, 1);
	assert_int_equal(avail_a, 80);
	assert_int_equal(avail_b, 90);      /* 20 sold, 10 given back */

	/* the feed positions go: the feed hands every record out again */
	char p[4096];
	snprintf(p, sizeof p, "%s/feed/backstop.pos", a.dir);
	assert_int_equal(unlink(p), 0);
	snprintf(p, sizeof p, "%s/feed/backstop.pos", b.dir);
	assert_int_equal(unlink(p), 0);
	uint64_t rows = q1(c, "SELECT COUNT(*) FROM fs_user_limit");
	box_serve(&a, 1, g_url);
	box_serve(&b, 2, g_url);
	wait_written(c, &a, 1);
	wait_written(c, &b, 2);
	box_stop(&a);
	box_stop(&b);
	assert_int_equal(rows, 30);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit"), 30);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop"), 10);
	assert_int_equal(a.t.st.backstop_conflicts, 0);
	assert_int_equal(b.t.st.backstop_conflicts, 0);
	assert_int_equal(t_available(a.h, 1, 1), avail_a);
	assert_int_equal(t_available(b.h, 1, 1), avail_b);
	flash_mysql_close(m);
	box_free(&a);
	box_free(&b);
}

/* ---- 5. a decided cancel not yet made is made at start ---- */

static void test_cancel_decided_before_a_kill_is_made_when_the_backstop_starts(void **state)
{
	(void)state;
	fresh_central();
	struct box a;
	box_new(&a, 1, 0);
	box_serve(&a, 1, g_url);
	flash_mysql_t *m;
	MYSQL *c = central(&m);
	struct flash_order_res r;
	assert_int_equal(t_order(a.h, 1, 1, 55, 1, 0, 0, &r), FLASH_OK);
	wait_written(c, &a, 1);
	box_stop(&a);
	/* what a daemon killed after the central commit of a refusal and
	 * before its flash_cancel leaves behind */
	qx(c, "INSERT INTO fs_backstop (box_id, order_no, reason, activity_id, sku_id, user_id, qty, lsn,"
	      " created) VALUES (1, %llu, 'user_limit', 1, 1, 55, 1, 1, NOW(6))",
	   (unsigned long long)r.order_no);
	assert_int_equal(order_state(&a, r.order_no), FLASH_ORDER_ACTIVE);
	box_serve(&a, 1, g_url);
	for (int i = 0; i < 6000 && order_state(&a, r.order_no) == FLASH_ORDER_ACTIVE; i++)
		t_sleep_ms(10);
	assert_int_equal(order_state(&a, r.order_no), FLASH_ORDER_CANCELLED);
	for (int i = 0; i < 6000 && q1(c, "SELECT cancelled FROM fs_backstop") != 1; i++)
		t_sleep_ms(10);
	assert_int_equal(q1(c, "SELECT units_returned FROM fs_backstop"), 1);
	assert_int_equal(t_available(a.h, 1, 1), 10);
	box_stop(&a);
	/* and once: a second start changes nothing */
	box_serve(&a, 1, g_url);
	wait_written(c, &a, 1);
	box_stop(&a);
	assert_int_equal(t_available(a.h, 1, 1), 10);
	assert_true(feed_has_cancel(&a, r.order_no));
	flash_mysql_close(m);
	box_free(&a);
}

/* ---- 6. the command line ---- */

static void test_urls_check_refuses_a_bad_list(void **state)
{
	(void)state;
	char why[256];
	assert_int_equal(backstop_urls_check("", why, sizeof why), FLASH_EINVAL);
	assert_int_equal(backstop_urls_check("mysql://root@localhost/x?socket=/a,mysql://h:99999/x", why,
	                                     sizeof why), FLASH_EMYSQL_CONFIG);
	assert_non_null(strstr(why, "URL 2"));
	assert_int_equal(backstop_urls_check("mysql://root@localhost/x?socket=/a,,mysql://h:3306/x", why,
	                                     sizeof why), FLASH_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_limit1_order_on_a_second_box_is_cancelled_units_back_feed_carries_it,
		                          t_teardown),
		cmocka_unit_test_teardown(test_limit2_two_orders_across_boxes_stay_the_third_is_cancelled, t_teardown),
		cmocka_unit_test_teardown(test_cancel_returning_quota_frees_the_slot_for_another_box, t_teardown),
		cmocka_unit_test_teardown(test_restart_with_the_feed_from_the_start_writes_and_cancels_nothing_twice,
		                          t_teardown),
		cmocka_unit_test_teardown(test_cancel_decided_before_a_kill_is_made_when_the_backstop_starts,
		                          t_teardown),
		cmocka_unit_test(test_urls_check_refuses_a_bad_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
