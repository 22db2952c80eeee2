/*
 * test_mysql_backstop.c -- the cross-box per-user limit (persist/daemon/backstop.c,
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
 *     next order on the other box stays; new terms that raise the limit let
 *     the user hold one more central slot from either box; a reservation's expiry ends its
 *     row as a cancel does, its confirm changes nothing;
 *   - restart with the feed position gone (the feed hands every record out
 *     again): nothing is written or cancelled twice;
 *   - a cancel decided but not made (a daemon killed between the central
 *     commit and flash_cancel) is made when the backstop starts;
 *   - archiving waits for a backstop that lags (its database out of reach)
 *     as it waits for the applier: an archived activity's orders could not
 *     be checked any more; a restarted idle box, whose backstop writes no
 *     batch, still archives; orders of an activity listed after an archived
 *     one are checked.
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

static MYSQL *central_at(const char *url, mdb_t **m)
{
	struct mdb_opts o = { .url = url, .no_schema = 1 };
	assert_int_equal(mdb_open(&o, m), FLASH_OK);
	MYSQL *c = mdb_conn(*m);
	assert_non_null(c);
	return c;
}

static MYSQL *central(mdb_t **m)
{
	return central_at(g_url, m);
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

/* The daemon's options for box @p box_id with the backstop on @p urls;
 * box_run() starts it, so a test can add options in between. */
static void box_opts(struct box *b, uint32_t box_id, const char *urls)
{
	struct serve_thread *t = &b->t;
	memset(t, 0, sizeof *t);
	serve_opts_default(&t->o);
	t->o.segment = b->name;
	t->o.wal_dir = b->dir;
	t->o.log_level = PLOG_WARN;
	t->o.idle_us_max = 200;
	t->o.stop = &t->stop;
	t->o.reconcile.every_ms = 0;
	t->o.box_id = box_id;
	t->o.backstop.urls = urls;
#ifdef FLASH_HAVE_MHD
	t->o.metrics = "127.0.0.1:0";
#endif
}

static void box_run(struct box *b)
{
	assert_int_equal(pthread_create(&b->t.th, NULL, serve_thread_main, &b->t), 0);
	b->running = 1;
}

static void box_serve(struct box *b, uint32_t box_id, const char *urls)
{
	box_opts(b, box_id, urls);
	box_run(b);
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

/* A box with an empty catalog (the test adds its activities). */
static void box_bare(struct box *b)
{
	memset(b, 0, sizeof *b);
	b->h = t_seg_new(NULL, b->name, sizeof b->name);
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

	mdb_t *m;
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
	mdb_close(m);
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
	mdb_t *m;
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
	mdb_close(m);
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
	mdb_t *m;
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
	mdb_close(m);
	box_free(&a);
	box_free(&b);
}

/*
 * New terms raise the limit from 1 to 2 on both boxes: a user holding his
 * central slot 1 through box a may now order on box b too.  Box b's
 * backstop had cached limit 1 from an earlier order; the ACTIVITY record
 * of the change reaches it before the order, so the order finds central
 * slot 2 and stays (with limit 1 kept, it was cancelled as a second order
 * across boxes).
 */
static void test_limit_raised_by_new_terms_lets_the_same_user_order_on_a_second_box(void **state)
{
	(void)state;
	fresh_central();
	struct box a, b;
	box_new(&a, 1, 0);
	box_new(&b, 1, 0);
	box_serve(&a, 1, g_url);
	box_serve(&b, 2, g_url);
	mdb_t *m;
	MYSQL *c = central(&m);

	struct flash_order_res r0, r1, r2;
	assert_int_equal(t_order(b.h, 1, 1, 8, 1, 0, 0, &r0), FLASH_OK);   /* b caches limit 1 */
	assert_int_equal(t_order(a.h, 1, 1, 7, 1, 0, 0, &r1), FLASH_OK);
	wait_written(c, &b, 2);
	wait_written(c, &a, 1);
	struct box *both[2] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		struct flash_activity act;
		uint64_t version = 0;
		assert_int_equal(flash_activity_get(both[i]->h, 1, &act), FLASH_OK);
		act.limit_per_user = 2;
		assert_int_equal(flash_activity_update(both[i]->h, &act, &version), FLASH_OK);
		assert_true(version > act.version);
	}
	assert_int_equal(t_order(b.h, 1, 1, 7, 1, 0, 0, &r2), FLASH_OK);
	wait_written(c, &b, 2);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop"), 0);
	assert_int_equal(order_state(&b, r2.order_no), FLASH_ORDER_ACTIVE);
	assert_int_equal(q1(c, "SELECT limit_slot FROM fs_user_limit WHERE box_id = 2 AND order_no = %llu",
	                    (unsigned long long)r2.order_no), 2);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE user_id = 7 AND active_key = 1"), 2);
	mdb_close(m);
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
	mdb_t *m;
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
	mdb_close(m);
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
	mdb_t *m;
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
	mdb_close(m);
	box_free(&a);
}

/*
 * A mark refused once -- the UPDATE of fs_backstop failing as a Galera
 * certification failure does (1213), on a session that stays up -- is
 * made again by the backstop itself, with the units the cancel returned,
 * not left for a reconnect that may never come (lease_proof once ended
 * with "1 not yet cancelled" this way).  A trigger fails the first UPDATE;
 * its count is a MyISAM table, which the statement's rollback keeps.
 */
static void test_mark_refused_once_is_made_again_on_the_same_session(void **state)
{
	(void)state;
	fresh_central();
	struct box a, b;
	box_new(&a, 1, 0);
	box_new(&b, 1, 0);
	box_serve(&a, 1, g_url);
	mdb_t *m;
	MYSQL *c = central(&m);
	struct flash_order_res ra, rb;
	assert_int_equal(t_order(a.h, 1, 1, 42, 1, 0, 0, &ra), FLASH_OK);
	wait_written(c, &a, 1);       /* the schema is there; box 1 holds user 42's slot */
	qx(c, "CREATE TABLE fail_marks (n INT NOT NULL) ENGINE=MyISAM");
	qx(c, "INSERT INTO fail_marks VALUES (1)");
	qx(c, "CREATE TRIGGER fail_mark BEFORE UPDATE ON fs_backstop FOR EACH ROW BEGIN"
	      " IF (SELECT n FROM fail_marks) > 0 THEN UPDATE fail_marks SET n = n - 1;"
	      " SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT ="
	      " 'Deadlock found when trying to get lock (fail_mark)'; END IF; END");
	box_serve(&b, 2, g_url);
	assert_int_equal(t_order(b.h, 1, 1, 42, 1, 0, 0, &rb), FLASH_OK);
	for (int i = 0; i < 6000 && order_state(&b, rb.order_no) == FLASH_ORDER_ACTIVE; i++)
		t_sleep_ms(10);
	assert_int_equal(order_state(&b, rb.order_no), FLASH_ORDER_CANCELLED);
	for (int i = 0; i < 1000 && q1(c, "SELECT COUNT(*) FROM fs_backstop WHERE cancelled = 1") == 0; i++)
		t_sleep_ms(10);
	assert_int_equal(q1(c, "SELECT n FROM fail_marks"), 0);          /* it did fail once */
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop WHERE box_id = 2 AND order_no = %llu AND"
	                    " cancelled = 1 AND units_returned = 1", (unsigned long long)rb.order_no), 1);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_backstop"), 1);
	assert_int_equal(t_available(b.h, 1, 1), 10);
	assert_int_equal(order_state(&a, ra.order_no), FLASH_ORDER_ACTIVE);
	box_stop(&b);
	box_stop(&a);
	assert_int_equal(b.t.st.backstop_conflicts, 1);
	mdb_close(m);
	box_free(&a);
	box_free(&b);
}

/* ---- 6. archiving waits for the backstop ---- */

/* Activity @p id (limit 1) whose window closes @p end_in_ms from now
 * (negative: that long ago), with sku 1 of 10 units; its end. */
static int64_t act_ending(flash_t *h, uint32_t id, int64_t end_in_ms)
{
	int64_t now = t_now_ns();
	struct flash_activity a = {
		.id = id, .limit_per_user = 1, .max_qty = 4, .scope = FLASH_SCOPE_ACTIVITY,
		.start_ns = now - 7200ll * 1000000000ll, .end_ns = now + end_in_ms * 1000000ll,
	};
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, id, 1, 10, 1), FLASH_OK);
	return a.end_ns;
}

static int archived(struct box *b, uint64_t order_no)
{
	struct flash_order_info oi;
	return flash_order_get(b->h, order_no, &oi) == FLASH_EARCHIVED;
}

/* Wait until the applier's MariaDB (@p c) applied every record the WAL of
 * @p b holds now (a bounded poll, as wait_written). */
static void wait_applied(MYSQL *c, struct box *b)
{
	for (int i = 0; i < 6000; i++) {
		struct flash_quiet q;
		struct flash_ident ident;
		assert_int_equal(flash_quiet_get(b->h, &q), FLASH_OK);
		assert_int_equal(flash_ident_get(b->h, &ident), FLASH_OK);
		uint64_t lsn = 0;
		if (mysql_query(c, "SELECT lsn FROM applied_lsn WHERE stream = 'wal'") == 0) {
			MYSQL_RES *res = mysql_store_result(c);
			MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
			lsn = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
			if (res)
				mysql_free_result(res);
		}
		if (q.pending == 0 && ident.wal_lsn != 0 && lsn >= ident.wal_lsn)
			return;
		t_sleep_ms(10);
	}
	fail_msg("the applier did not catch up with the WAL");
}

#ifdef FLASH_HAVE_MHD
/* flashstock_archive_waits_total of @p b's daemon: passes of its archiver
 * that found an activity due and did not archive it. */
static uint64_t archive_waits(struct box *b)
{
	uint16_t port = 0;
	for (int i = 0; i < 6000 && !(port = (uint16_t)__atomic_load_n(&b->t.st.metrics_port,
	                                                                 __ATOMIC_ACQUIRE)); i++)
		t_sleep_ms(10);
	char *body = t_metrics_get(port);
	assert_non_null(body);
	uint64_t v = t_metrics_sample(body, "flashstock_archive_waits_total");
	free(body);
	assert_true(v != UINT64_MAX);
	return v;
}
#endif

/* Box 1 with the backstop on @p backstop_url, the applier on
 * @p applier_url and the archiver on (activities go @p after_s after their
 * end). */
static void box_serve_archiving(struct box *b, const char *backstop_url, const char *applier_url,
                                uint32_t after_s)
{
	box_opts(b, 1, backstop_url);
	b->t.o.mysql.url = applier_url;
	b->t.o.archive.after_s = after_s;
	b->t.o.archive.every_ms = 50;
	b->t.o.backstop.drain_ms = 100;
	b->t.o.log_level = PLOG_INFO;      /* the archiver says why it waits */
	box_run(b);
}

/*
 * The backstop learns an order's limit from the activity in the segment;
 * once the activity is archived it cannot, and the order never reaches
 * fs_user_limit.  So while the backstop lags (its central database out of
 * reach) the archiver must not archive an activity whose orders it has not
 * written, even with MariaDB's applier caught up; once it has, it does.
 */
static void test_archive_waits_for_a_lagging_backstop_and_every_order_reaches_fs_user_limit(void **state)
{
	(void)state;
	char app_url[512], db[64];
	snprintf(db, sizeof db, "fsa_%d_%d", (int)getpid(), ++g_db);
	mysql_fresh_db(app_url, sizeof app_url, db);
	fresh_central();
	struct box a;
	box_bare(&a);
	int64_t end_ns = act_ending(a.h, 1, 1000);
	(void)act_ending(a.h, 2, 3600 * 1000);
	struct flash_order_res r1, r2;
	assert_int_equal(t_order(a.h, 1, 1, 42, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(t_order(a.h, 2, 1, 43, 1, 0, 0, &r2), FLASH_OK);

	/* 1. the backstop's database is out of reach; the applier's is not */
	char bad[600];
	snprintf(bad, sizeof bad, "mysql://root@localhost/x?socket=%s/no-such.sock", a.dir);
	box_serve_archiving(&a, bad, app_url, 1);
	mdb_t *ma;
	MYSQL *ca = central_at(app_url, &ma);
	wait_applied(ca, &a);
	while (t_now_ns() < end_ns + 1000000000ll)      /* archive.after_s */
		t_sleep_ms(10);
	/* its verdict: it archives, or it waits pass after pass */
	int early = 0;
#ifdef FLASH_HAVE_MHD
	uint64_t w0 = archive_waits(&a);
	for (int i = 0; i < 6000 && !(early = archived(&a, r1.order_no)); i++) {
		if (archive_waits(&a) >= w0 + 5)
			break;
		t_sleep_ms(10);
	}
#else
	t_sleep_ms(1000);               /* 20 passes */
	early = archived(&a, r1.order_no);
#endif
	box_stop(&a);

	/* 2. the backstop reaches its database: it writes, then the archive */
	box_serve_archiving(&a, g_url, app_url, 1);
	mdb_t *m;
	MYSQL *c = central(&m);
	for (int i = 0; i < 6000 && !archived(&a, r1.order_no); i++)
		t_sleep_ms(10);
	assert_true(archived(&a, r1.order_no));
	wait_written(c, &a, 1);
	uint64_t rows = q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE box_id = 1 AND active_key = 1 AND"
	                   " ((activity_id = 1 AND user_id = 42 AND order_no = %llu) OR (activity_id = 2"
	                   " AND user_id = 43 AND order_no = %llu))", (unsigned long long)r1.order_no,
	                   (unsigned long long)r2.order_no);
	if (early || rows != 2)
		fail_msg("activity 1 archived while the backstop lagged: %s; orders in fs_user_limit: %llu"
		         " of 2", early ? "yes" : "no", (unsigned long long)rows);
	assert_false(archived(&a, r2.order_no));
	box_stop(&a);
	assert_int_equal(a.t.st.archived, 1);
	mdb_close(m);
	mdb_close(ma);
	box_free(&a);
}

/* A restarted box with nothing new to write: the backstop writes no
 * batch, and its position is the one its feed committed -- the archiver
 * must not wait for a batch that never comes. */
static void test_archiver_of_a_restarted_idle_box_goes_by_the_backstops_committed_position(void **state)
{
	(void)state;
	char app_url[512], db[64];
	snprintf(db, sizeof db, "fsa_%d_%d", (int)getpid(), ++g_db);
	mysql_fresh_db(app_url, sizeof app_url, db);
	fresh_central();
	struct box a;
	box_bare(&a);
	(void)act_ending(a.h, 1, 1000);
	struct flash_order_res r;
	assert_int_equal(t_order(a.h, 1, 1, 42, 1, 0, 0, &r), FLASH_OK);
	/* written and committed, not archived yet (an hour's wait) */
	box_serve_archiving(&a, g_url, app_url, 3600);
	mdb_t *m;
	MYSQL *c = central(&m);
	wait_written(c, &a, 1);
	box_stop(&a);
	assert_false(archived(&a, r.order_no));
	/* due now; the box is idle */
	box_serve_archiving(&a, g_url, app_url, 1);
	for (int i = 0; i < 6000 && !archived(&a, r.order_no); i++)
		t_sleep_ms(10);
	assert_true(archived(&a, r.order_no));
	box_stop(&a);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE box_id = 1 AND order_no = %llu",
	                    (unsigned long long)r.order_no), 1);
	mdb_close(m);
	box_free(&a);
}

/* An archive frees its catalog entry: the backstop's look-up of the
 * activities after it must go past it, not stop there and take a live
 * activity's orders for a foreign one's. */
static void test_backstop_writes_orders_of_an_activity_listed_after_an_archived_one(void **state)
{
	(void)state;
	fresh_central();
	struct box a;
	box_bare(&a);
	(void)act_ending(a.h, 1, -3600 * 1000);
	(void)act_ending(a.h, 2, 3600 * 1000);
	assert_int_equal(flash_archive(a.h, 1, 0, NULL), FLASH_OK);
	struct flash_activity x;
	assert_int_equal(flash_activity_at(a.h, 0, &x), FLASH_EARCHIVED);
	assert_int_equal(flash_activity_at(a.h, 1, &x), FLASH_OK);
	assert_int_equal(x.id, 2);
	box_serve(&a, 1, g_url);
	struct flash_order_res r;
	assert_int_equal(t_order(a.h, 2, 1, 44, 1, 0, 0, &r), FLASH_OK);
	mdb_t *m;
	MYSQL *c = central(&m);
	wait_written(c, &a, 1);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_user_limit WHERE box_id = 1 AND order_no = %llu AND"
	                    " activity_id = 2 AND user_id = 44 AND active_key = 1",
	                    (unsigned long long)r.order_no), 1);
	box_stop(&a);
	mdb_close(m);
	box_free(&a);
}

/* A reservation's EXPIRE ends its central row as a cancel does -- the slot
 * freed iff the quota came back -- and its CONFIRM changes no central row:
 * the slot was held from the ORDER on.  Other records end nothing.  (The
 * engine makes no reservation yet: the statement each record becomes.) */
static void test_expiry_ends_the_central_row_as_a_cancel_and_a_confirm_changes_nothing(void **state)
{
	(void)state;
	struct flash_record r = { .type = FLASH_REC_EXPIRE, .activity_id = 1, .sku_id = 1, .qty = 1,
	                          .order_no = 77, .user_id = 9, .limit_slot = 1, .flags = 1,
	                          .value = 1700000900000000000 };
	char sql[512], cancel[512];
	assert_int_equal(backstop_end_sql(3, &r, sql, sizeof sql), 1);
	assert_string_equal(sql, "UPDATE fs_user_limit SET status = 'CANCELLED', quota_returned = 1"
	                         " WHERE box_id = 3 AND order_no = 77 AND status = 'ACTIVE'");
	r.type = FLASH_REC_CANCEL;
	r.flags = 3;                      /* an unpaid reservation, quota back */
	assert_int_equal(backstop_end_sql(3, &r, cancel, sizeof cancel), 1);
	assert_string_equal(cancel, sql);
	r.type = FLASH_REC_EXPIRE;
	r.flags = 0;                      /* the quota kept: the slot stays held */
	assert_int_equal(backstop_end_sql(3, &r, sql, sizeof sql), 1);
	assert_non_null(strstr(sql, "quota_returned = 0 "));
	for (uint16_t t = FLASH_REC_ORDER; t <= FLASH_REC_EXPIRE; t++) {
		r.type = t;
		if (t != FLASH_REC_CANCEL && t != FLASH_REC_EXPIRE)
			assert_int_equal(backstop_end_sql(3, &r, sql, sizeof sql), 0);
	}
}

/* A cart is one order of its user: its central slot is taken once, by the
 * ORDER record of its last line (so a cart a torn WAL cut, whose last line
 * never comes, takes none), and its cancel or expiry ends the row once, by
 * its last line; a plain order's records act as before. */
static void test_cart_takes_one_central_slot_by_its_last_line_and_ends_it_once(void **state)
{
	(void)state;
	struct flash_record r = { .type = FLASH_REC_ORDER, .activity_id = 1, .sku_id = 2, .qty = 1,
	                          .order_no = 90, .user_id = 9, .limit_slot = 1 };
	char sql[512];
	assert_int_equal(backstop_takes_slot(&r), 1);             /* a plain order */
	for (unsigned i = 0; i < 3; i++) {
		r.flags = (uint16_t)(FLASH_REC_F_CART | FLASH_REC_F_LINE(i) | (i == 2 ? FLASH_REC_F_LAST : 0));
		assert_int_equal(backstop_takes_slot(&r), i == 2);
	}
	for (uint16_t t = FLASH_REC_CANCEL; t <= FLASH_REC_EXPIRE; t++) {
		r.type = t;
		assert_int_equal(backstop_takes_slot(&r), 0);
	}
	for (uint16_t t = FLASH_REC_CANCEL; t <= FLASH_REC_EXPIRE; t += FLASH_REC_EXPIRE - FLASH_REC_CANCEL) {
		r.type = t;
		for (unsigned i = 0; i < 3; i++) {
			r.flags = (uint16_t)(FLASH_REC_F_CART | FLASH_REC_F_LINE(i) | 1u |
			                     (i == 2 ? FLASH_REC_F_LAST : 0));
			assert_int_equal(backstop_end_sql(3, &r, sql, sizeof sql), i == 2);
		}
		assert_string_equal(sql, "UPDATE fs_user_limit SET status = 'CANCELLED', quota_returned = 1"
		                         " WHERE box_id = 3 AND order_no = 90 AND status = 'ACTIVE'");
	}
}

/* ---- 7. the command line ---- */

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
		cmocka_unit_test_teardown(test_limit_raised_by_new_terms_lets_the_same_user_order_on_a_second_box,
		                          t_teardown),
		cmocka_unit_test_teardown(test_restart_with_the_feed_from_the_start_writes_and_cancels_nothing_twice,
		                          t_teardown),
		cmocka_unit_test_teardown(test_cancel_decided_before_a_kill_is_made_when_the_backstop_starts,
		                          t_teardown),
		cmocka_unit_test_teardown(test_mark_refused_once_is_made_again_on_the_same_session, t_teardown),
		cmocka_unit_test_teardown(test_archive_waits_for_a_lagging_backstop_and_every_order_reaches_fs_user_limit,
		                          t_teardown),
		cmocka_unit_test_teardown(test_archiver_of_a_restarted_idle_box_goes_by_the_backstops_committed_position,
		                          t_teardown),
		cmocka_unit_test_teardown(test_backstop_writes_orders_of_an_activity_listed_after_an_archived_one,
		                          t_teardown),
		cmocka_unit_test(test_expiry_ends_the_central_row_as_a_cancel_and_a_confirm_changes_nothing),
		cmocka_unit_test(test_cart_takes_one_central_slot_by_its_last_line_and_ends_it_once),
		cmocka_unit_test(test_urls_check_refuses_a_bad_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
