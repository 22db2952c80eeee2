/*
 * test_mysql_reconcile.c -- segment, WAL and MySQL agree, and every
 * difference planted in one of them is reported with its exact values.
 *
 * Each test builds the same history on a real segment: two skus, orders,
 * cancels, a restock; drains the records into a real WAL directory; catches
 * a private MariaDB up from that WAL (mdb_catch_up); folds the WAL;
 * and reconciles the three.  Then it plants one difference and checks the
 * report names it -- kind, witness, sku or order, and values.  Reservations
 * are records built here (the engine makes none yet), held by the WAL and
 * MySQL only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "flashstock.h"
#include "helpers.h"
#include "mysql_apply.h"
#include "reconcile.h"
#include "reconcile_sql.h"
#include "wal.h"
#include "mysql_testutil.h"

struct ctx {
	flash_t *h;
	mdb_t *m;
	fold_t *fold;
	char seg[64];
	char db[64];
	char waldir[128];
	uint64_t first_active;       /* an ACTIVE order number */
	uint64_t orders_placed;
	uint64_t records;
};

static int g_seq;

static void quiet(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == PLOG_ERROR)
		fprintf(stderr, "applier: %s\n", msg);
}

static void q(struct ctx *c, const char *sql)
{
	MYSQL *conn = mdb_conn(c->m);
	assert_non_null(conn);
	if (mysql_query(conn, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(conn));
		fail();
	}
}

/* The history: activity 1 (K=1), sku 1 (100 units), sku 2 (50 units, 2
 * shards); users 1..40 order 1-3 units alternately on the skus; every 8th
 * order is cancelled; sku 1 is restocked by 10. */
static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof *c);
	assert_non_null(c);
	c->h = t_seg_new(NULL, c->seg, sizeof c->seg);
	assert_int_equal(t_activity(c->h, 1, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(c->h, 1, 1, 100, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(c->h, 1, 2, 50, 2), FLASH_OK);
	uint64_t nos[40];
	for (uint64_t u = 1; u <= 40; u++) {
		struct flash_order_res res;
		assert_int_equal(t_order(c->h, 1, (uint32_t)(u % 2 + 1), u, (uint32_t)(u % 3 + 1), 0, 0, &res),
		                 FLASH_OK);
		nos[u - 1] = res.order_no;
		c->orders_placed++;
	}
	for (int i = 0; i < 40; i += 8)
		assert_int_equal(flash_cancel(c->h, nos[i], NULL), FLASH_OK);
	c->first_active = nos[1];
	assert_int_equal(flash_restock(c->h, 1, 1, 10), FLASH_OK);

	/* Records -> WAL. */
	struct t_recs recs = { 0 };
	assert_int_equal(t_recs_drain(c->h, &recs), FLASH_OK);
	snprintf(c->waldir, sizeof c->waldir, "/tmp/fs-recon-wal-%d-%d", (int)getpid(), ++g_seq);
	wal_t *w;
	assert_int_equal(wal_open(c->waldir, NULL, &w), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(wal_append_record(w, &recs.v[i].r, recs.v[i].seq, NULL), FLASH_OK);
	assert_int_equal(wal_commit(w), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	c->records = recs.n;
	t_recs_free(&recs);
	/* 1 activity + 2 skus + 40 orders + 5 cancels + 1 restock */
	assert_int_equal(c->records, 49);

	/* WAL -> MySQL, in small batches so several transactions are involved. */
	snprintf(c->db, sizeof c->db, "fr_%d_%d", (int)getpid(), g_seq);
	char url[512];
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", c->db, mariadb_dir());
	struct mdb_opts o = { .url = url, .log = quiet };
	assert_int_equal(mdb_open(&o, &c->m), FLASH_OK);
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up(c->m, c->waldir, 7, 10000, &tot), FLASH_OK);
	assert_int_equal(tot.applied, 49);
	assert_int_equal(tot.refused, 0);
	assert_int_equal(tot.applied_lsn, 49);

	assert_int_equal(fold_new(&c->fold), FLASH_OK);
	assert_int_equal(fold_wal(c->fold, c->waldir), FLASH_OK);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	char sql[128];
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", c->db);
	MYSQL *conn = mdb_conn(c->m);
	if (conn)
		mysql_query(conn, sql);
	mdb_close(c->m);
	fold_free(c->fold);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->waldir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", c->waldir);
	free(c);
	return t_teardown(state);
}

static void reconcile(struct ctx *c, struct reconcile_report *rep)
{
	assert_int_equal(reconcile_compare(c->h, c->m, c->fold, RECONCILE_ORDERS, rep), FLASH_OK);
	if (rep->found)
		reconcile_print(rep, stderr, 0);
}

static const struct diff *find(const struct reconcile_report *rep, int kind, unsigned w)
{
	for (size_t i = 0; i < rep->n; i++)
		if (rep->diffs[i].kind == kind && rep->diffs[i].witnesses == w)
			return &rep->diffs[i];
	return NULL;
}

static void test_segment_wal_and_mysql_agree_after_catch_up(void **state)
{
	struct ctx *c = *state;
	struct reconcile_report rep;
	reconcile(c, &rep);
	assert_int_equal(rep.found, 0);
	assert_int_equal(rep.witnesses, FLASH_W_SEGMENT | FLASH_W_WAL | FLASH_W_MYSQL);
	assert_int_equal(rep.skus, 2);
	assert_int_equal(rep.orders_checked, flash_orders_max(c->h));
	assert_int_equal(rep.units, 160);
	assert_int_equal(rep.diff_units, 0);
	reconcile_report_free(&rep);

	struct rsql_totals t;
	assert_int_equal(rsql_totals_get(c->m, &t), FLASH_OK);
	assert_int_equal(t.orders, 40);
	assert_int_equal(t.cancelled_orders, 5);
	assert_int_equal(t.active_orders, 35);
	assert_int_equal(t.applied_lsn, 49);
	struct rsql_sku s1;
	assert_int_equal(rsql_sku_get(c->m, 1, 1, &s1), FLASH_OK);
	struct flash_sku_info si;
	assert_int_equal(flash_sku_get(c->h, 1, 1, &si), FLASH_OK);
	assert_int_equal(s1.total, si.total);
	assert_int_equal(s1.available, si.available);
	assert_int_equal(s1.sold, s1.active_qty);
	assert_int_equal(rsql_sku_get(c->m, 1, 99, &s1), FLASH_ENOT_FOUND);

	/* Catching up again applies nothing and changes nothing. */
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up(c->m, c->waldir, 7, 10000, &tot), FLASH_OK);
	assert_int_equal(tot.applied, 0);
	reconcile(c, &rep);
	assert_int_equal(rep.found, 0);
	reconcile_report_free(&rep);
}

static void test_stock_changed_in_mysql_is_reported_with_all_three_values(void **state)
{
	struct ctx *c = *state;
	struct flash_sku_info si;
	assert_int_equal(flash_sku_get(c->h, 1, 1, &si), FLASH_OK);
	q(c, "UPDATE item_stock SET available = available - 1, sold = sold + 1"
	     " WHERE activity_id = 1 AND sku_id = 1");
	struct reconcile_report rep;
	reconcile(c, &rep);
	assert_int_equal(rep.found, 3);
	unsigned all = FLASH_W_SEGMENT | FLASH_W_WAL | FLASH_W_MYSQL;
	const struct diff *d = find(&rep, DIFF_AVAILABLE, all);
	assert_non_null(d);
	assert_int_equal(d->sku_id, 1);
	assert_int_equal(d->seg, (int64_t)si.available);
	assert_int_equal(d->wal, (int64_t)si.available);
	assert_int_equal(d->sql, (int64_t)si.available - 1);
	d = find(&rep, DIFF_SOLD, all);
	assert_non_null(d);
	assert_int_equal(d->sql, d->seg + 1);
	d = find(&rep, DIFF_ORDER_SUM, FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(rep.diff_units, 1);
	reconcile_report_free(&rep);
}

static void test_order_changed_or_lost_in_mysql_is_reported_by_number(void **state)
{
	struct ctx *c = *state;
	char sql[160];
	snprintf(sql, sizeof sql, "UPDATE orders SET qty = qty + 1 WHERE order_no = %llu",
	         (unsigned long long)c->first_active);
	q(c, sql);
	struct reconcile_report rep;
	reconcile(c, &rep);
	assert_int_equal(rep.found, 2);
	const struct diff *d = find(&rep, DIFF_ORDER, FLASH_W_SEGMENT | FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->order_no, c->first_active);
	assert_int_equal(d->sql, d->seg + 1);
	assert_non_null(strstr(d->what, "qty"));
	assert_non_null(find(&rep, DIFF_ORDER_SUM, FLASH_W_MYSQL));
	reconcile_report_free(&rep);

	snprintf(sql, sizeof sql, "DELETE FROM orders WHERE order_no = %llu",
	         (unsigned long long)c->first_active);
	q(c, sql);
	reconcile(c, &rep);
	assert_int_equal(rep.found, 2);
	d = find(&rep, DIFF_MISSING, FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->order_no, c->first_active);
	assert_int_equal(d->seg, FLASH_ORDER_ACTIVE);
	reconcile_report_free(&rep);
}

static void test_extra_slot_holder_in_mysql_is_a_user_limit_difference(void **state)
{
	struct ctx *c = *state;
	/* Slot 2 of user 3 in a K=1 activity: the unique index admits it (other
	 * slot), the reconciler does not. */
	q(c, "INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot, biz_day,"
	     " scope_sku, scope_day, created_ns, lsn) VALUES (900000, 1, 2, 3, 1, 2, 0, 0, 0, 0, 0)");
	struct reconcile_report rep;
	reconcile(c, &rep);
	assert_int_equal(rep.found, 3);
	const struct diff *d = find(&rep, DIFF_USER_LIMIT, FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->user_id, 3);
	assert_int_equal(d->sql, 2);
	d = find(&rep, DIFF_MISSING, FLASH_W_SEGMENT);
	assert_non_null(d);
	assert_int_equal(d->order_no, 900000);
	d = find(&rep, DIFF_ORDER_SUM, FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->sku_id, 2);
	reconcile_report_free(&rep);

	struct rsql_user_excess *ue;
	size_t n;
	assert_int_equal(rsql_users_over_limit(c->m, &ue, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_int_equal(ue[0].holding, 2);
	assert_int_equal(ue[0].max_slot, 2);
	assert_int_equal(ue[0].limit, 1);
	free(ue);
}

static void test_wal_missing_a_restock_disagrees_on_total_and_available(void **state)
{
	struct ctx *c = *state;
	/* A fold that lacks the last record (the restock of sku 1 by 10). */
	fold_t *partial;
	assert_int_equal(fold_new(&partial), FLASH_OK);
	const struct fold_sku *v;
	size_t n;
	assert_int_equal(fold_skus(c->fold, &v, &n), FLASH_OK);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		struct flash_record r = { .type = FLASH_REC_SKU, .activity_id = v[i].activity_id,
		                          .sku_id = v[i].sku_id, .value = v[i].total - (v[i].sku_id == 1 ? 10 : 0) };
		assert_int_equal(fold_record(partial, &r, 1), FLASH_OK);
		struct flash_record o = { .type = FLASH_REC_ORDER, .activity_id = v[i].activity_id,
		                          .sku_id = v[i].sku_id, .qty = (uint32_t)v[i].sold };
		assert_int_equal(fold_record(partial, &o, 2), FLASH_OK);
	}
	struct reconcile_report rep;
	assert_int_equal(reconcile_compare(c->h, c->m, partial, 0, &rep), FLASH_OK);
	assert_int_equal(rep.found, 2);
	unsigned all = FLASH_W_SEGMENT | FLASH_W_WAL | FLASH_W_MYSQL;
	const struct diff *d = find(&rep, DIFF_TOTAL, all);
	assert_non_null(d);
	assert_int_equal(d->seg, 110);
	assert_int_equal(d->wal, 100);
	assert_int_equal(d->sql, 110);
	assert_non_null(find(&rep, DIFF_AVAILABLE, all));
	assert_int_equal(rep.diff_units, 10);
	reconcile_report_free(&rep);
	fold_free(partial);
}

static void test_sku_absent_from_mysql_is_missing_there(void **state)
{
	struct ctx *c = *state;
	q(c, "DELETE FROM item_stock WHERE activity_id = 1 AND sku_id = 2");
	struct reconcile_report rep;
	reconcile(c, &rep);
	/* The stock row is missing; MySQL's orders of sku 2 still count units. */
	assert_int_equal(rep.found, 2);
	const struct diff *d = find(&rep, DIFF_MISSING, FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->sku_id, 2);
	assert_int_equal(d->seg, 50);
	assert_int_equal(d->wal, 50);
	assert_int_equal(d->sql, DIFF_NA);
	assert_non_null(find(&rep, DIFF_ORDER_SUM, FLASH_W_MYSQL));
	reconcile_report_free(&rep);

	/* MySQL alone (no other witness) sees what it can check itself: orders
	 * of a sku without a stock row. */
	assert_int_equal(reconcile_compare(NULL, c->m, NULL, 0, &rep), FLASH_OK);
	assert_int_equal(rep.found, 2);
	assert_int_equal(rep.witnesses, FLASH_W_MYSQL);
	assert_non_null(find(&rep, DIFF_MISSING, FLASH_W_MYSQL));
	assert_non_null(find(&rep, DIFF_ORDER_SUM, FLASH_W_MYSQL));
	reconcile_report_free(&rep);
	assert_int_equal(reconcile_compare(NULL, NULL, NULL, 0, &rep), FLASH_EINVAL);
}

/* The engine's own records for quota-returning cancels, per-sku and per-day
 * limits: MySQL's unique index accepts exactly what the segment accepted. */
static void test_engine_records_with_cancels_and_scopes_apply_without_conflict(void **state)
{
	(void)state;
	struct ctx *c = calloc(1, sizeof *c);
	assert_non_null(c);
	*state = c;
	c->h = t_seg_new(NULL, c->seg, sizeof c->seg);
	assert_int_equal(t_activity(c->h, 2, 1, 5, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(t_activity(c->h, 3, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(t_activity(c->h, 4, 2, 5, FLASH_SCOPE_SKU, 0), FLASH_OK);
	assert_int_equal(t_activity(c->h, 5, 1, 5, FLASH_SCOPE_DAY, 0), FLASH_OK);
	for (uint32_t a = 2; a <= 5; a++) {
		assert_int_equal(flash_sku_add(c->h, a, 1, 20, 1), FLASH_OK);
		assert_int_equal(flash_sku_add(c->h, a, 2, 20, 1), FLASH_OK);
	}
	struct flash_order_res r1, r2;
	/* Activity 2: order, cancel (quota back), order again in the same slot. */
	assert_int_equal(t_order(c->h, 2, 1, 7, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(flash_cancel(c->h, r1.order_no, NULL), FLASH_OK);
	assert_int_equal(t_order(c->h, 2, 1, 7, 1, 0, 0, &r2), FLASH_OK);
	assert_int_equal(r2.limit_slot, r1.limit_slot);
	/* Activity 3: the cancel keeps the quota; a second order is refused. */
	assert_int_equal(t_order(c->h, 3, 1, 8, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(flash_cancel(c->h, r1.order_no, NULL), FLASH_OK);
	assert_int_equal(t_order(c->h, 3, 1, 8, 1, 0, 0, NULL), FLASH_ELIMIT);
	/* Activity 4: two per sku. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(t_order(c->h, 4, 1, 9, 1, 0, 0, NULL), FLASH_OK);
		assert_int_equal(t_order(c->h, 4, 2, 9, 1, 0, 0, NULL), FLASH_OK);
	}
	assert_int_equal(t_order(c->h, 4, 1, 9, 1, 0, 0, NULL), FLASH_ELIMIT);
	/* Activity 5: one per day. */
	assert_int_equal(t_order(c->h, 5, 2, 10, 2, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(c->h, 5, 1, 10, 1, 0, 0, NULL), FLASH_ELIMIT);

	struct t_recs recs = { 0 };
	assert_int_equal(t_recs_drain(c->h, &recs), FLASH_OK);
	snprintf(c->waldir, sizeof c->waldir, "/tmp/fs-recon-wal-%d-%d", (int)getpid(), ++g_seq);
	wal_t *w;
	assert_int_equal(wal_open(c->waldir, NULL, &w), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(wal_append_record(w, &recs.v[i].r, recs.v[i].seq, NULL), FLASH_OK);
	assert_int_equal(wal_commit(w), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	snprintf(c->db, sizeof c->db, "fr_%d_%d", (int)getpid(), g_seq);
	char url[512];
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", c->db, mariadb_dir());
	struct mdb_opts o = { .url = url, .log = quiet };
	assert_int_equal(mdb_open(&o, &c->m), FLASH_OK);
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up(c->m, c->waldir, 1000, 10000, &tot), FLASH_OK);
	assert_int_equal(tot.applied, recs.n);
	assert_int_equal(tot.refused, 0);
	t_recs_free(&recs);
	assert_int_equal(fold_new(&c->fold), FLASH_OK);
	assert_int_equal(fold_wal(c->fold, c->waldir), FLASH_OK);

	struct reconcile_report rep;
	reconcile(c, &rep);
	assert_int_equal(rep.found, 0);
	assert_int_equal(rep.skus, 8);
	reconcile_report_free(&rep);
	struct rsql_totals t;
	assert_int_equal(rsql_totals_get(c->m, &t), FLASH_OK);
	assert_int_equal(t.orders, 8);
	assert_int_equal(t.cancelled_orders, 2);
}

/* Records of reservations, as the engine writes them, after the setup's
 * history (LSN 50 on): activity 2 (K=1), sku 21 of 30 units; five
 * reservations paid, expired, cancelled unpaid, or waiting, and a plain
 * order.  Into MySQL (the applier) and the WAL fold, as a daemon would. */
static void add_reservations(struct ctx *c)
{
	struct lsn_record v[12];
	size_t n = 0;
	uint64_t lsn = c->records + 1;
	memset(v, 0, sizeof v);
	v[n].lsn = lsn++;
	v[n].rec.type = FLASH_REC_ACTIVITY;
	v[n].rec.activity_id = 2;
	v[n].rec.biz_day = 1 | FLASH_SCOPE_ACTIVITY << 8 | FLASH_ACT_CANCEL_RETURNS_QUOTA << 16;
	v[n].rec.limit_slot = 10;
	v[n].rec.ts_ns = INT64_MAX;
	n++;
	v[n].lsn = lsn++;
	v[n].rec.type = FLASH_REC_SKU;
	v[n].rec.activity_id = 2;
	v[n].rec.sku_id = 21;
	v[n].rec.qty = 1;
	v[n].rec.value = 30;
	n++;
	static const struct { uint16_t type; uint64_t no; uint32_t qty; int resv; uint16_t flags; } h[] = {
		{ FLASH_REC_ORDER, 2001, 2, 1, 0 }, { FLASH_REC_ORDER, 2002, 3, 1, 0 },
		{ FLASH_REC_ORDER, 2003, 1, 0, 0 }, { FLASH_REC_ORDER, 2004, 4, 1, 0 },
		{ FLASH_REC_ORDER, 2005, 5, 1, 0 }, { FLASH_REC_CONFIRM, 2001, 2, 1, 0 },
		{ FLASH_REC_EXPIRE, 2002, 3, 1, 1 }, { FLASH_REC_CANCEL, 2004, 4, 1, 3 },
	};
	for (size_t i = 0; i < sizeof h / sizeof h[0]; i++, n++) {
		v[n].lsn = lsn++;
		v[n].rec.type = h[i].type;
		v[n].rec.activity_id = 2;
		v[n].rec.sku_id = 21;
		v[n].rec.order_no = h[i].no;
		v[n].rec.user_id = h[i].no;       /* one user per order */
		v[n].rec.qty = h[i].qty;
		v[n].rec.limit_slot = 1;
		v[n].rec.flags = h[i].flags;
		v[n].rec.value = h[i].resv ? 1700000900000000000 : 0;
		v[n].rec.ts_ns = 1700000000000000000 + (int64_t)v[n].lsn;
	}
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(c->m, v, n, &res), FLASH_OK);
	assert_int_equal(res.refused, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fold_record(c->fold, &v[i].rec, v[i].lsn), FLASH_OK);
}

/*
 * Reservations: the WAL and MySQL agree on reserved units (available +
 * reserved + sold = total in each, reserved = units of RESERVED orders);
 * reserved units counted as sold in MySQL, or a reservation made ACTIVE
 * there without its CONFIRM, are reported with both witnesses' values.
 */
static void test_reserved_units_agree_and_a_change_in_mysql_is_reported(void **state)
{
	struct ctx *c = *state;
	struct reconcile_report rep;
	add_reservations(c);
	const struct fold_sku *w = fold_sku_find(c->fold, 2, 21);
	assert_non_null(w);
	assert_int_equal(w->available, 22);   /* 30 less 2001 (2, paid), 2003 (1), 2005 (5, waiting) */
	assert_int_equal(w->reserved, 5);
	assert_int_equal(w->sold, 3);
	struct rsql_sku q1;
	assert_int_equal(rsql_sku_get(c->m, 2, 21, &q1), FLASH_OK);
	assert_int_equal(q1.reserved, 5);
	assert_int_equal(q1.reserved_qty, 5);
	assert_int_equal(q1.active_qty, 3);
	assert_int_equal(reconcile_compare(NULL, c->m, c->fold, RECONCILE_WAL_ORDERS, &rep), FLASH_OK);
	if (rep.found)
		reconcile_print(&rep, stderr, 0);
	assert_int_equal(rep.found, 0);
	reconcile_report_free(&rep);
	/* a row read back whole (flashstock order): its state, deadline, payment */
	struct rsql_order_row row;
	assert_int_equal(rsql_order_get(c->m, 2001, &row), FLASH_OK);
	assert_int_equal(row.o.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(row.pay_by_ns, 1700000900000000000);
	assert_int_equal(row.confirm_lsn, c->records + 8);
	assert_int_equal(rsql_order_get(c->m, 2002, &row), FLASH_OK);
	assert_int_equal(row.o.state, FLASH_ORDER_EXPIRED);
	assert_int_equal(row.cancel_lsn, c->records + 9);
	assert_int_equal(row.quota_returned, 1);
	assert_int_equal(rsql_order_get(c->m, 2005, &row), FLASH_OK);
	assert_int_equal(row.o.state, FLASH_ORDER_RESERVED);
	assert_int_equal(row.confirm_lsn, 0);
	assert_int_equal(rsql_order_get(c->m, 2003, &row), FLASH_OK);
	assert_int_equal(row.pay_by_ns, 0);

	q(c, "UPDATE item_stock SET reserved = reserved - 1, sold = sold + 1 WHERE activity_id = 2 AND sku_id = 21");
	assert_int_equal(reconcile_compare(NULL, c->m, c->fold, RECONCILE_WAL_ORDERS, &rep), FLASH_OK);
	assert_int_equal(rep.found, 4);
	const struct diff *d = find(&rep, DIFF_RESERVED, FLASH_W_WAL | FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->wal, 5);
	assert_int_equal(d->sql, 4);
	assert_string_equal(diff_name(d->kind), "reserved");
	d = find(&rep, DIFF_SOLD, FLASH_W_WAL | FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->sql, 4);
	size_t sums = 0;
	for (size_t i = 0; i < rep.n; i++)
		sums += rep.diffs[i].kind == DIFF_ORDER_SUM && rep.diffs[i].witnesses == FLASH_W_MYSQL;
	assert_int_equal(sums, 2);           /* reserved vs RESERVED units, sold vs ACTIVE units */
	reconcile_report_free(&rep);
	q(c, "UPDATE item_stock SET reserved = reserved + 1, sold = sold - 1 WHERE activity_id = 2 AND sku_id = 21");

	q(c, "UPDATE orders SET status = 'ACTIVE' WHERE order_no = 2005");
	assert_int_equal(reconcile_compare(NULL, c->m, c->fold, RECONCILE_WAL_ORDERS, &rep), FLASH_OK);
	assert_int_equal(rep.found, 3);
	d = find(&rep, DIFF_ORDER, FLASH_W_WAL | FLASH_W_MYSQL);
	assert_non_null(d);
	assert_int_equal(d->order_no, 2005);
	assert_int_equal(d->wal, FLASH_ORDER_RESERVED);
	assert_int_equal(d->sql, FLASH_ORDER_ACTIVE);
	reconcile_report_free(&rep);
}

static void test_reconcile_run_prints_and_exits_by_the_outcome(void **state)
{
	struct ctx *c = *state;
	char url[512];
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", c->db, mariadb_dir());
	struct mdb_opts mo = { .url = url, .log = quiet };
	struct reconcile_run_opts o = { .segment = c->seg, .wal_dir = c->waldir, .mysql = &mo,
	                                      .flags = RECONCILE_ORDERS, .json = 1 };
	char *obuf = NULL, *ebuf = NULL;
	size_t olen = 0, elen = 0;
	FILE *out = open_memstream(&obuf, &olen), *err = open_memstream(&ebuf, &elen);
	assert_int_equal(reconcile_run(&o, out, err), 0);
	fflush(out);
	assert_non_null(strstr(obuf, "\"differences\":0,"));
	assert_non_null(strstr(obuf, "\"witnesses\":\"segment,wal,mysql\""));

	/* 20 of 160 units off in MySQL: a difference, and past 0.1% an alert. */
	q(c, "UPDATE item_stock SET available = available - 20, sold = sold + 20 WHERE sku_id = 2");
	rewind(out);
	assert_int_equal(reconcile_run(&o, out, err), 1);
	fflush(out);
	fflush(err);
	assert_non_null(strstr(obuf, "\"kind\":\"available\""));
	assert_non_null(strstr(ebuf, "ALERT 20 of 160 units differ"));

	/* A witness that cannot be read: 2, and why. */
	o.segment = "/fs-no-such-segment";
	assert_int_equal(reconcile_run(&o, out, err), 2);
	fflush(err);
	assert_non_null(strstr(ebuf, "fs-no-such-segment"));
	fclose(out);
	fclose(err);
	free(obuf);
	free(ebuf);
}

static int count_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	(void)lsn; (void)type; (void)payload; (void)len;
	(*(uint64_t *)arg)++;
	return 0;
}

/* Flip one byte in the payload of LSN @p lsn's frame: every frame of this
 * WAL is one record (a 32-byte header and a 72-byte payload) in one file. */
static void wal_flip(const char *dir, uint64_t lsn)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	char path[512] = "";
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "wal-", 4) == 0 && strstr(e->d_name, ".log"))
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
	closedir(d);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	off_t at = (off_t)(WAL_FILE_HDR_BYTES + (lsn - 1) * wal_frame_bytes(sizeof(struct wal_rec)) +
	                   WAL_FRAME_HDR_BYTES + 40);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x10;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
	/* the damage is where it was meant to be: LSN 20 is the first bad frame */
	struct wal_replay_report rep;
	uint64_t n = 0;
	assert_int_equal(wal_replay(dir, 1, count_frame, &n, 0, &rep), FLASH_EWAL_CRC);
	assert_int_equal(n, lsn - 1);
	assert_int_equal(rep.bad_lsn, lsn);
}

/* A damaged frame in the middle of the WAL: the fold, the catch-up and the
 * reconciler answer the WAL's own cause, one code (a CRC mismatch, not a
 * general "corrupt" beside it), and what came before the frame is folded
 * and applied. */
static void test_a_damaged_wal_frame_is_answered_with_its_own_cause(void **state)
{
	struct ctx *c = *state;
	wal_flip(c->waldir, 20);

	fold_t *f;
	assert_int_equal(fold_new(&f), FLASH_OK);
	assert_int_equal(fold_wal(f, c->waldir), FLASH_EWAL_CRC);
	assert_int_equal(fold_lsn(f), 19);
	fold_free(f);

	char db[80], url[512], sql[128];
	snprintf(db, sizeof db, "%s_dmg", c->db);
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", db, mariadb_dir());
	struct mdb_opts o = { .url = url, .log = quiet };
	mdb_t *m;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	struct apply_result tot = { 0 };
	int rc = mdb_catch_up(m, c->waldir, 7, 10000, &tot);
	snprintf(sql, sizeof sql, "DROP DATABASE `%s`", db);
	assert_int_equal(mysql_query(mdb_conn(m), sql), 0);
	mdb_close(m);
	assert_int_equal(rc, FLASH_EWAL_CRC);
	assert_int_equal(tot.applied_lsn, 19);

	struct reconcile_run_opts ro = { .segment = c->seg, .wal_dir = c->waldir };
	char *obuf = NULL, *ebuf = NULL;
	size_t olen = 0, elen = 0;
	FILE *out = open_memstream(&obuf, &olen), *err = open_memstream(&ebuf, &elen);
	assert_int_equal(reconcile_run(&ro, out, err), 2);
	fclose(out);
	fclose(err);
	assert_non_null(strstr(ebuf, flash_strerror(FLASH_EWAL_CRC)));
	if (strstr(ebuf, flash_strerror(FLASH_ECORRUPT)))
		fail_msg("the reconciler's reason names a second cause: %s", ebuf);
	free(obuf);
	free(ebuf);
}

int main(void)
{
	mariadb_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_segment_wal_and_mysql_agree_after_catch_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stock_changed_in_mysql_is_reported_with_all_three_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_order_changed_or_lost_in_mysql_is_reported_by_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extra_slot_holder_in_mysql_is_a_user_limit_difference, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wal_missing_a_restock_disagrees_on_total_and_available, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sku_absent_from_mysql_is_missing_there, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserved_units_agree_and_a_change_in_mysql_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconcile_run_prints_and_exits_by_the_outcome, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_damaged_wal_frame_is_answered_with_its_own_cause, setup, teardown),
		cmocka_unit_test_teardown(test_engine_records_with_cancels_and_scopes_apply_without_conflict, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
