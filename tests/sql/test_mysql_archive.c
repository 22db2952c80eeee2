/*
 * test_mysql_archive.c -- archiving as MariaDB sees it: the applier marks an
 * archived activity and keeps its rows, passes generation records, migrates
 * an older database; the reconciler does not count an archived activity's
 * absence from the segment as a difference and still compares MySQL with
 * the WAL for it; the feed's refill gives an ARCHIVE record back.
 *
 * Records are built by hand (the applier and reconciler read only records),
 * except in the test named "..._through_flash_archive", which takes the
 * ARCHIVE record the engine emits.  A segment "that reclaimed the activity"
 * is a fresh segment without it: what the reconciler reads of a segment
 * after flash_archive is exactly that (no sku, no order of the activity).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "feed.h"
#include "flashstock.h"
#include "helpers.h"
#include "mysql_apply.h"
#include "reconcile.h"
#include "reconcile_sql.h"
#include "wal.h"
#include "mysql_testutil.h"

static int g_seq;
static char g_db[64];
static char g_url[512];

static void quiet(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == PLOG_ERROR)
		fprintf(stderr, "applier: %s\n", msg);
}

static mdb_t *open_url(const char *url)
{
	struct mdb_opts o = { .url = url, .log = quiet };
	mdb_t *m = NULL;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	return m;
}

static mdb_t *open_fresh(void)
{
	snprintf(g_db, sizeof g_db, "fa_%d_%d", (int)getpid(), ++g_seq);
	mysql_fresh_db(g_url, sizeof g_url, g_db);
	return open_url(g_url);
}

static void close_drop(mdb_t *m)
{
	MYSQL *c = mdb_conn(m);
	if (c) {
		char sql[128];
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", g_db);
		mysql_query(c, sql);
	}
	mdb_close(m);
}

static void q_exec(mdb_t *m, const char *sql)
{
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	if (mysql_query(c, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(c));
		fail();
	}
}

/* One value of a query as a signed number; -1 for SQL NULL. */
static int64_t q_i64(mdb_t *m, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	if (mysql_query(c, sql)) {
		fprintf(stderr, "query failed: %s: %s\n", sql, mysql_error(c));
		fail();
	}
	MYSQL_RES *r = mysql_store_result(c);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	if (!row) {
		fprintf(stderr, "no row: %s\n", sql);
		fail();
	}
	int64_t v = row[0] ? strtoll(row[0], NULL, 10) : -1;
	mysql_free_result(r);
	return v;
}

/* ---- record builders ------------------------------------------------------ */

static struct lsn_record r_activity(uint64_t lsn, uint32_t id)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ACTIVITY;
	x.rec.activity_id = id;
	x.rec.biz_day = 1 | FLASH_SCOPE_ACTIVITY << 8;
	x.rec.limit_slot = 10;
	x.rec.value = 1000;
	x.rec.ts_ns = 2000;
	return x;
}

static struct lsn_record r_sku(uint64_t lsn, uint32_t a, uint32_t s, int64_t units)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_SKU;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.qty = 1;
	x.rec.value = units;
	return x;
}

static struct lsn_record r_order(uint64_t lsn, uint32_t a, uint32_t s, uint64_t no, uint64_t user)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ORDER;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.order_no = no;
	x.rec.user_id = user;
	x.rec.qty = 1;
	x.rec.limit_slot = 1;
	x.rec.request_id = 7000 + no;
	x.rec.ts_ns = 1700000000000000000 + (int64_t)lsn;
	return x;
}

static struct lsn_record r_cancel(uint64_t lsn, const struct lsn_record *order)
{
	struct lsn_record x = *order;
	x.lsn = lsn;
	x.rec.type = FLASH_REC_CANCEL;
	return x;
}

static struct lsn_record r_archive(uint64_t lsn, uint32_t a, int64_t ts)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ARCHIVE;
	x.rec.activity_id = a;
	x.rec.ts_ns = ts;
	x.rec.value = 3;                   /* orders reclaimed */
	x.rec.qty = 1;                     /* skus */
	return x;
}

static struct lsn_record r_gen(uint64_t lsn)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_GEN;
	x.rec.qty = 1;
	return x;
}

#define ARCHIVED_NS 1800000000123456789ll

/* Activity 1 (sku 11, 20 units, orders 1..3, order 2 cancelled), activity
 * 2 (sku 21, 10 units, order 4), then a GEN and the ARCHIVE of activity 1:
 * 11 records, LSNs 1..11.  The ARCHIVE is LSN 11. */
static size_t build(struct lsn_record *v)
{
	size_t n = 0;
	v[n++] = r_activity(1, 1);
	v[n++] = r_sku(2, 1, 11, 20);
	v[n++] = r_activity(3, 2);
	v[n++] = r_sku(4, 2, 21, 10);
	v[n++] = r_order(5, 1, 11, 1, 101);
	v[n++] = r_order(6, 1, 11, 2, 102);
	v[n++] = r_order(7, 1, 11, 3, 103);
	v[n++] = r_cancel(8, &v[5]);
	v[n++] = r_order(9, 2, 21, 4, 101);
	v[n++] = r_gen(10);
	v[n++] = r_archive(11, 1, ARCHIVED_NS);
	return n;
}

/* ---- the applier ------------------------------------------------------------- */

static void check_archived_rows(mdb_t *m)
{
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=1"), 11);
	assert_int_equal(q_i64(m, "SELECT archived_ns FROM activities WHERE activity_id=1"), ARCHIVED_NS);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=2"), -1);
	/* the orders and the stock row stay, as they were */
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM orders WHERE activity_id=1"), 3);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM orders WHERE activity_id=1 AND status='CANCELLED'"), 1);
	assert_int_equal(q_i64(m, "SELECT sold FROM item_stock WHERE activity_id=1 AND sku_id=11"), 2);
	assert_int_equal(q_i64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), 11);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);
}

static void test_archive_record_marks_the_activity_archived_and_keeps_its_rows(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.applied, n);
	assert_int_equal(res.refused, 0);
	assert_int_equal(res.slow_path, 0);
	check_archived_rows(m);

	/* applied again (an applier restarted before its commit was known) */
	struct mdb_opts o = { .url = g_url, .log = quiet };
	mdb_t *m2;
	assert_int_equal(mdb_open(&o, &m2), FLASH_OK);
	q_exec(m2, "UPDATE applied_lsn SET lsn=0 WHERE stream='wal'");
	q_exec(m2, "DELETE FROM orders");
	q_exec(m2, "DELETE FROM item_stock");
	q_exec(m2, "DELETE FROM activities");
	assert_int_equal(mdb_apply(m2, v, n, &res), FLASH_OK);
	assert_int_equal(mdb_apply(m2, v + n - 1, 1, &res), FLASH_OK);
	assert_int_equal(res.skipped, 1);
	check_archived_rows(m2);
	mdb_close(m2);
	close_drop(m);
}

static void test_archive_record_on_the_record_by_record_path_gives_the_same_rows(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	/* an order for a sku nobody created sends the batch record by record */
	v[n] = r_order(12, 1, 99, 5, 109);
	struct conflict c[4];
	struct apply_result res = { .conflicts = c, .conflict_cap = 4 };
	assert_int_equal(mdb_apply(m, v, n + 1, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.applied, n);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].order_no, 5);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=1"), 11);
	assert_int_equal(q_i64(m, "SELECT archived_ns FROM activities WHERE activity_id=1"), ARCHIVED_NS);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM orders WHERE activity_id=1"), 3);
	close_drop(m);
}

static void test_gen_records_apply_nothing_and_move_the_applied_lsn(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	int64_t before = q_i64(m, "SELECT COUNT(*) + SUM(order_no) FROM orders") +
	                 q_i64(m, "SELECT SUM(available * 3 + sold * 5 + total * 7) FROM item_stock");
	struct lsn_record g[3] = { r_gen(12), r_gen(13), r_gen(14) };
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, g, 3, &res), FLASH_OK);
	assert_int_equal(res.applied, 3);
	assert_int_equal(res.refused, 0);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(q_i64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), 14);
	int64_t after = q_i64(m, "SELECT COUNT(*) + SUM(order_no) FROM orders") +
	                q_i64(m, "SELECT SUM(available * 3 + sold * 5 + total * 7) FROM item_stock");
	assert_int_equal(before, after);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);
	close_drop(m);
}

static void test_archive_of_an_activity_mysql_lacks_is_a_catalog_conflict(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[2] = { r_activity(1, 1), r_archive(2, 9, ARCHIVED_NS) };
	struct conflict c[2];
	struct apply_result res = { .conflicts = c, .conflict_cap = 2 };
	assert_int_equal(mdb_apply(m, v, 2, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_CATALOG);
	assert_int_equal(c[0].activity_id, 9);
	assert_int_equal(c[0].type, FLASH_REC_ARCHIVE);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM activities WHERE archived_lsn IS NOT NULL"), 0);
	assert_int_equal(q_i64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), 2);
	close_drop(m);
}

/* The activities table as an applier before archiving made it. */
static const char old_activities[] =
	"CREATE TABLE activities ("
	" activity_id    INT UNSIGNED NOT NULL PRIMARY KEY,"
	" limit_per_user SMALLINT UNSIGNED NOT NULL,"
	" max_qty        INT UNSIGNED NOT NULL,"
	" scope          TINYINT UNSIGNED NOT NULL,"
	" flags          INT UNSIGNED NOT NULL,"
	" day_offset_s   INT NOT NULL,"
	" start_ns       BIGINT NOT NULL,"
	" end_ns         BIGINT NOT NULL,"
	" lsn            BIGINT UNSIGNED NOT NULL"
	") ENGINE=InnoDB";

static void test_database_made_before_archiving_gets_the_columns_and_keeps_its_rows(void **state)
{
	(void)state;
	snprintf(g_db, sizeof g_db, "fa_%d_%d", (int)getpid(), ++g_seq);
	mysql_fresh_db(g_url, sizeof g_url, g_db);
	/* the old schema, with a row, made by hand on a raw connection */
	MYSQL *raw = mysql_init(NULL);
	char sock[512];
	snprintf(sock, sizeof sock, "%s/mysqld.sock", mariadb_dir());
	assert_non_null(mysql_real_connect(raw, "localhost", "root", NULL, g_db, 0, sock, 0));
	assert_int_equal(mysql_query(raw, old_activities), 0);
	assert_int_equal(mysql_query(raw, "INSERT INTO activities VALUES (1, 1, 10, 0, 0, 0, 1000, 2000, 1)"), 0);
	mysql_close(raw);

	mdb_t *m = open_url(g_url);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema=DATABASE()"
	                          " AND table_name='activities' AND column_name IN ('archived_lsn','archived_ns')"), 2);
	assert_int_equal(q_i64(m, "SELECT end_ns FROM activities WHERE activity_id=1"), 2000);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=1"), -1);
	q_exec(m, "INSERT INTO applied_lsn (stream, lsn) VALUES ('wal', 1) ON DUPLICATE KEY UPDATE lsn=1");
	struct lsn_record a = r_archive(2, 1, ARCHIVED_NS);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, &a, 1, &res), FLASH_OK);
	assert_int_equal(res.applied, 1);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=1"), 2);
	mdb_close(m);
	/* a second open (the migration runs on every connect) changes nothing */
	m = open_url(g_url);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=1"), 2);
	close_drop(m);
}

static void test_archived_order_is_found_by_number_and_by_request_id_with_its_archive(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	struct rsql_order_row o;
	assert_int_equal(rsql_order_get(m, 2, &o), FLASH_OK);
	assert_int_equal(o.o.order_no, 2);
	assert_int_equal(o.o.user_id, 102);
	assert_int_equal(o.o.state, FLASH_ORDER_CANCELLED);
	assert_int_equal(o.cancel_lsn, 8);
	assert_int_equal(o.lsn, 6);
	assert_int_equal(o.archived, 1);
	assert_int_equal(o.archived_lsn, 11);
	assert_int_equal(o.archived_ns, ARCHIVED_NS);
	assert_int_equal(rsql_order_get(m, 4, &o), FLASH_OK);
	assert_int_equal(o.archived, 0);
	assert_int_equal(o.o.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(rsql_order_get(m, 99, &o), FLASH_ENOT_FOUND);

	assert_int_equal(rsql_order_by_request(m, 7003, 1, 103, 0, &o), FLASH_OK);
	assert_int_equal(o.o.order_no, 3);
	assert_int_equal(o.archived, 1);
	assert_int_equal(rsql_order_by_request(m, 7003, 1, 103, 11, &o), FLASH_OK);
	assert_int_equal(rsql_order_by_request(m, 7003, 1, 103, 12, &o), FLASH_ENOT_FOUND);
	assert_int_equal(rsql_order_by_request(m, 7003, 1, 104, 0, &o), FLASH_ENOT_FOUND);
	assert_int_equal(rsql_order_by_request(m, 7003, 2, 103, 0, &o), FLASH_ENOT_FOUND);

	uint32_t *ids = NULL;
	size_t k = 0;
	assert_int_equal(rsql_archived(m, &ids, &k), FLASH_OK);
	assert_int_equal(k, 1);
	assert_int_equal(ids[0], 1);
	free(ids);
	close_drop(m);
}

/* `flashstock order` reads a row's state from orders.status: the statuses
 * the applier writes for reservations read as those states, and one this
 * build does not know reads RSQL_STATE_UNKNOWN with its text kept -- never
 * as ACTIVE or CANCELLED.  (The schema is widened by hand here: the
 * applier's own RESERVED/EXPIRED columns are another change's.) */
static void test_order_row_reads_reservation_states_and_keeps_an_unknown_status(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	q_exec(m, "ALTER TABLE orders MODIFY status ENUM('ACTIVE','CANCELLED','RESERVED','EXPIRED',"
	          "'REFUNDED') NOT NULL DEFAULT 'ACTIVE'");
	q_exec(m, "UPDATE orders SET status='RESERVED' WHERE order_no=1");
	q_exec(m, "UPDATE orders SET status='EXPIRED' WHERE order_no=3");
	q_exec(m, "UPDATE orders SET status='REFUNDED' WHERE order_no=4");
	struct rsql_order_row o;
	assert_int_equal(rsql_order_get(m, 1, &o), FLASH_OK);
	assert_int_equal(o.o.state, FLASH_ORDER_RESERVED);
	assert_string_equal(o.status, "RESERVED");
	assert_int_equal(rsql_order_get(m, 2, &o), FLASH_OK);
	assert_int_equal(o.o.state, FLASH_ORDER_CANCELLED);
	assert_int_equal(rsql_order_by_request(m, 7003, 1, 103, 0, &o), FLASH_OK);
	assert_int_equal(o.o.state, FLASH_ORDER_EXPIRED);
	assert_int_equal(rsql_order_get(m, 4, &o), FLASH_OK);
	assert_int_equal(o.o.state, RSQL_STATE_UNKNOWN);
	assert_string_equal(o.status, "REFUNDED");
	close_drop(m);
}

static void test_feed_refill_gives_the_archive_record_back_and_leaves_gens_as_gaps(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	feed_refill_t *r;
	assert_int_equal(feed_refill_open(g_url, "wal", &r), FLASH_OK);
	struct flash_feed_rec *got = NULL;
	size_t k = 0;
	uint64_t applied = 0;
	assert_int_equal(feed_refill_fetch(r, 1, 11, &got, &k, &applied), FLASH_OK);
	assert_int_equal(applied, 11);
	assert_int_equal(k, 10);                    /* every LSN but the GEN's (10) */
	for (size_t i = 0; i < k; i++)
		assert_int_not_equal(got[i].fr_lsn, 10);
	const struct flash_feed_rec *x = &got[k - 1];
	assert_int_equal(x->fr_lsn, 11);
	assert_int_equal(x->fr_rec.type, FLASH_REC_ARCHIVE);
	assert_int_equal(x->fr_rec.activity_id, 1);
	assert_int_equal(x->fr_rec.ts_ns, ARCHIVED_NS);
	assert_int_equal(x->fr_source, FLASH_FEED_MYSQL);
	assert_true(x->fr_missing & FLASH_FEED_MISS_VALUE);
	free(got);
	feed_refill_close(r);
	close_drop(m);
}

static void test_feed_hands_out_gen_and_archive_records_from_the_wal_and_names_them(void **state)
{
	(void)state;
	char dir[128];
	snprintf(dir, sizeof dir, "/tmp/fs-archive-feed-%d-%d", (int)getpid(), ++g_seq);
	struct wal_opts wo;
	wal_opts_default(&wo);
	wo.incarnation = 0x5eedull;
	wal_t *w;
	assert_int_equal(wal_open(dir, &wo, &w), FLASH_OK);
	struct lsn_record v[16];
	size_t n = build(v);
	for (size_t i = 0; i < n; i++) {
		uint64_t lsn;
		assert_int_equal(wal_append_record(w, &v[i].rec, i + 1, &lsn), FLASH_OK);
		assert_int_equal(lsn, v[i].lsn);
	}
	assert_int_equal(wal_commit(w), FLASH_OK);
	struct flash_feed_opts fo;
	flash_feed_opts_default(&fo);
	fo.from_start = 1;
	flash_feed_t *f;
	assert_int_equal(flash_feed_open(dir, "arch", &fo, &f), FLASH_OK);
	for (size_t i = 0; i < n; i++) {
		struct flash_feed_rec r;
		assert_int_equal(flash_feed_next(f, &r, 1000), FLASH_OK);
		assert_int_equal(r.fr_lsn, v[i].lsn);
		assert_int_equal(r.fr_rec.type, v[i].rec.type);
		assert_int_equal(r.fr_rec.activity_id, v[i].rec.activity_id);
		assert_int_equal(r.fr_rec.ts_ns, v[i].rec.ts_ns);
	}
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ETIMEOUT);
	flash_feed_close(f);
	assert_int_equal(wal_close(w), FLASH_OK);
	assert_string_equal(wal_rec_type_name(FLASH_REC_GEN, "?"), "gen");
	assert_string_equal(wal_rec_type_name(FLASH_REC_ARCHIVE, "?"), "archive");
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* ---- the reconciler ----------------------------------------------------------- */

/* A segment holding exactly what the records leave once activity 1 is
 * reclaimed: activity 2 with sku 21 (10 units) and its order, numbered 4.
 * Order numbers 1..3 are never issued in this segment (numbering starts at
 * 1), so its order 1 stands for order 4: the test compares orders only
 * between the WAL and MySQL (RECONCILE_WAL_ORDERS) and sums per sku
 * with the segment. */
static flash_t *reclaimed_segment(char *name, size_t len)
{
	flash_t *h = t_seg_new(NULL, name, len);
	assert_int_equal(t_activity(h, 2, 1, 10, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 21, 10, 1), FLASH_OK);
	struct flash_order_res res;
	assert_int_equal(t_order(h, 2, 21, 101, 1, 0, 0, &res), FLASH_OK);
	return h;
}

static fold_t *fold_of(const struct lsn_record *v, size_t n)
{
	fold_t *f;
	assert_int_equal(fold_new(&f), FLASH_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fold_record(f, &v[i].rec, v[i].lsn), FLASH_OK);
	return f;
}

static size_t count_kind(const struct reconcile_report *rep, int kind, uint32_t act)
{
	size_t k = 0;
	for (size_t i = 0; i < rep->n; i++)
		k += rep->diffs[i].kind == kind && rep->diffs[i].activity_id == act;
	return k;
}

static void test_reconciler_does_not_report_an_archived_activitys_skus_missing_from_the_segment(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	char seg[64];
	flash_t *h = reclaimed_segment(seg, sizeof seg);
	fold_t *f = fold_of(v, n);

	struct reconcile_report rep;
	assert_int_equal(reconcile_compare(h, m, f, RECONCILE_WAL_ORDERS, &rep), FLASH_OK);
	for (size_t i = 0; i < rep.n; i++)
		fprintf(stderr, "unexpected: %s\n", rep.diffs[i].what);
	assert_int_equal(rep.found, 0);
	assert_int_equal(rep.skus, 2);              /* activity 1's sku compared too */
	assert_int_equal(rep.orders_checked, 4);    /* WAL vs MySQL: every order, archived ones included */
	reconcile_report_free(&rep);

	/* Without MySQL, the WAL's ARCHIVE record alone says so. */
	assert_int_equal(reconcile_compare(h, NULL, f, 0, &rep), FLASH_OK);
	assert_int_equal(rep.found, 0);
	reconcile_report_free(&rep);
	fold_free(f);

	/* Control: the same history without the ARCHIVE record -- the sku is
	 * missing from the segment, and that is reported. */
	f = fold_of(v, n - 1);
	mdb_t *m2 = m;
	q_exec(m2, "UPDATE activities SET archived_lsn=NULL, archived_ns=NULL");
	assert_int_equal(reconcile_compare(h, m, f, 0, &rep), FLASH_OK);
	assert_true(count_kind(&rep, DIFF_MISSING, 1) >= 1);
	reconcile_report_free(&rep);
	fold_free(f);
	close_drop(m);
}

static void test_reconciler_still_compares_an_archived_activity_in_mysql_with_the_wal(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	char seg[64];
	flash_t *h = reclaimed_segment(seg, sizeof seg);
	fold_t *f = fold_of(v, n);
	/* MariaDB disagrees with the WAL about the archived activity */
	q_exec(m, "UPDATE item_stock SET available=available-1, sold=sold+1 WHERE activity_id=1");
	q_exec(m, "UPDATE orders SET qty=2 WHERE order_no=3");

	struct reconcile_report rep;
	assert_int_equal(reconcile_compare(h, m, f, RECONCILE_WAL_ORDERS, &rep), FLASH_OK);
	assert_int_equal(count_kind(&rep, DIFF_SOLD, 1), 1);
	assert_int_equal(count_kind(&rep, DIFF_ORDER, 1), 1);
	assert_int_equal(count_kind(&rep, DIFF_MISSING, 1), 0);
	for (size_t i = 0; i < rep.n; i++)
		if (rep.diffs[i].kind == DIFF_SOLD) {
			assert_int_equal(rep.diffs[i].witnesses, FLASH_W_WAL | FLASH_W_MYSQL);
			assert_int_equal(rep.diffs[i].wal, 2);
			assert_int_equal(rep.diffs[i].sql, 3);
		}
	reconcile_report_free(&rep);
	fold_free(f);
	close_drop(m);
}

/* ---- the engine's record, end to end (depends on flash_archive) ------------- */

static void test_ended_activity_archived_through_flash_archive_is_marked_in_mysql(void **state)
{
	(void)state;
	char seg[64];
	flash_t *h = t_seg_new(NULL, seg, sizeof seg);
	int64_t now = t_now_ns();
	struct flash_activity a = { .id = 1, .limit_per_user = 1, .max_qty = 1, .scope = FLASH_SCOPE_ACTIVITY,
	                            .start_ns = now - 3600000000000ll, .end_ns = now + 300000000ll };
	assert_int_equal(flash_activity_add(h, &a), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 5, 1), FLASH_OK);
	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	struct flash_order_res res;
	assert_int_equal(t_order(h, 1, 11, 501, 1, 0, 0, &res), FLASH_OK);
	uint64_t order_no = res.order_no;

	struct flash_archive_info info;
	assert_int_equal(flash_archive(h, 2, 0, &info), FLASH_ENOT_ENDED);
	assert_int_equal(flash_archive(h, 77, 0, &info), FLASH_ENOT_FOUND);
	while (t_now_ns() <= a.end_ns)
		t_sleep_ms(50);
	assert_int_equal(flash_archive(h, 1, 0, &info), FLASH_OK);
	assert_int_equal(info.activity_id, 1);

	struct t_recs recs = { 0 };
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	size_t archives = 0;
	struct lsn_record v[16];
	assert_true(recs.n <= 16);
	for (size_t i = 0; i < recs.n; i++) {
		v[i].lsn = i + 1;
		v[i].rec = recs.v[i].r;
		archives += recs.v[i].r.type == FLASH_REC_ARCHIVE;
	}
	assert_int_equal(archives, 1);
	assert_int_equal(v[recs.n - 1].rec.type, FLASH_REC_ARCHIVE);
	mdb_t *m = open_fresh();
	struct apply_result ar = { 0 };
	assert_int_equal(mdb_apply(m, v, recs.n, &ar), FLASH_OK);
	assert_int_equal(ar.refused, 0);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=1"), (int64_t)recs.n);
	assert_true(q_i64(m, "SELECT archived_ns FROM activities WHERE activity_id=1") >= a.end_ns);
	assert_int_equal(q_i64(m, "SELECT archived_lsn FROM activities WHERE activity_id=2"), -1);
	assert_int_equal(q_i64(m, "SELECT COUNT(*) FROM orders WHERE order_no=%llu", (unsigned long long)order_no), 1);
	t_recs_free(&recs);
	close_drop(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_archive_record_marks_the_activity_archived_and_keeps_its_rows),
		cmocka_unit_test(test_archive_record_on_the_record_by_record_path_gives_the_same_rows),
		cmocka_unit_test(test_gen_records_apply_nothing_and_move_the_applied_lsn),
		cmocka_unit_test(test_archive_of_an_activity_mysql_lacks_is_a_catalog_conflict),
		cmocka_unit_test(test_database_made_before_archiving_gets_the_columns_and_keeps_its_rows),
		cmocka_unit_test(test_archived_order_is_found_by_number_and_by_request_id_with_its_archive),
		cmocka_unit_test(test_order_row_reads_reservation_states_and_keeps_an_unknown_status),
		cmocka_unit_test(test_feed_refill_gives_the_archive_record_back_and_leaves_gens_as_gaps),
		cmocka_unit_test(test_feed_hands_out_gen_and_archive_records_from_the_wal_and_names_them),
		cmocka_unit_test_teardown(test_reconciler_does_not_report_an_archived_activitys_skus_missing_from_the_segment,
		                          t_teardown),
		cmocka_unit_test_teardown(test_reconciler_still_compares_an_archived_activity_in_mysql_with_the_wal,
		                          t_teardown),
		cmocka_unit_test_teardown(test_ended_activity_archived_through_flash_archive_is_marked_in_mysql,
		                          t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
