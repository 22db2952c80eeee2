/*
 * test_mysql_repair.c -- `reconcile --repair` (persist/reconcile/reconcile_repair.c):
 * MySQL brought back to the WAL, its authority, changing exactly what it
 * prints.
 *
 * Each test builds one history on a real segment (activity 1 with K=2,
 * skus 1 and 2, 40 orders, 5 cancels, a restock), writes its records to a
 * real WAL, catches a private MariaDB up from it, then changes MySQL behind
 * the applier's back and runs the repair through reconcile_run() --
 * the function `flashstock reconcile --repair` calls -- capturing what it
 * prints.
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
	char seg[64];
	char db[64];
	char url[512];
	char waldir[128];
	uint64_t active[40];         /* order numbers still active */
	size_t nactive;
	uint64_t cancelled;          /* a cancelled order number */
	uint64_t records;
};

static int g_seq;

static void quiet(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == PLOG_ERROR)
		fprintf(stderr, "applier: %s\n", msg);
}

static void q(struct ctx *c, const char *sql, uint64_t rows)
{
	MYSQL *conn = mdb_conn(c->m);
	assert_non_null(conn);
	if (mysql_query(conn, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(conn));
		fail();
	}
	assert_int_equal(mysql_affected_rows(conn), rows);
}

static uint64_t q64(struct ctx *c, const char *sql)
{
	MYSQL *conn = mdb_conn(c->m);
	assert_non_null(conn);
	assert_int_equal(mysql_query(conn, sql), 0);
	MYSQL_RES *r = mysql_store_result(conn);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	assert_non_null(row);
	uint64_t v = row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

/* The history, its WAL, and MySQL caught up to @p upto (0: everything). */
static struct ctx *build(uint64_t upto)
{
	struct ctx *c = calloc(1, sizeof *c);
	assert_non_null(c);
	c->h = t_seg_new(NULL, c->seg, sizeof c->seg);
	assert_int_equal(t_activity(c->h, 1, 2, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(c->h, 1, 1, 100, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(c->h, 1, 2, 50, 2), FLASH_OK);
	uint64_t nos[40];
	for (uint64_t u = 1; u <= 40; u++) {
		struct flash_order_res res;
		assert_int_equal(t_order(c->h, 1, (uint32_t)(u % 2 + 1), u, (uint32_t)(u % 3 + 1), 0, 0, &res),
		                 FLASH_OK);
		nos[u - 1] = res.order_no;
	}
	for (int i = 0; i < 40; i++) {
		if (i % 8 == 0)
			assert_int_equal(flash_cancel(c->h, nos[i], NULL), FLASH_OK);
		else
			c->active[c->nactive++] = nos[i];
	}
	c->cancelled = nos[8];
	assert_int_equal(flash_restock(c->h, 1, 1, 10), FLASH_OK);

	struct t_recs recs = { 0 };
	assert_int_equal(t_recs_drain(c->h, &recs), FLASH_OK);
	snprintf(c->waldir, sizeof c->waldir, "/tmp/fs-repair-wal-%d-%d", (int)getpid(), ++g_seq);
	wal_t *w;
	assert_int_equal(wal_open(c->waldir, NULL, &w), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(wal_append_record(w, &recs.v[i].r, recs.v[i].seq, NULL), FLASH_OK);
	assert_int_equal(wal_commit(w), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	c->records = recs.n;
	t_recs_free(&recs);
	assert_int_equal(c->records, 49);

	snprintf(c->db, sizeof c->db, "frp_%d_%d", (int)getpid(), g_seq);
	snprintf(c->url, sizeof c->url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", c->db,
	         mariadb_dir());
	struct mdb_opts o = { .url = c->url, .log = quiet };
	assert_int_equal(mdb_open(&o, &c->m), FLASH_OK);
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up_to(c->m, c->waldir, upto ? upto : c->records, 10, 10000,
	                                 &tot), FLASH_OK);
	assert_int_equal(tot.refused, 0);
	assert_int_equal(tot.applied_lsn, upto ? upto : c->records);
	return c;
}

static int setup(void **state)
{
	*state = build(0);
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
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->waldir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", c->waldir);
	free(c);
	return t_teardown(state);
}

/* reconcile_run() with the output captured; its exit code. */
struct run {
	int rc;
	char *out, *err;
	size_t outn, errn;
};

static void run(struct ctx *c, int repair, int with_segment, struct run *r)
{
	struct mdb_opts mo = { .url = c->url, .log = quiet };
	/* the flags `flashstock reconcile` passes */
	struct reconcile_run_opts o = { .wal_dir = c->waldir, .mysql = &mo, .repair = repair,
	                                      .segment = with_segment ? c->seg : NULL };
	if (!repair)
		o.flags = RECONCILE_WAL_ORDERS | (with_segment ? RECONCILE_ORDERS : 0);
	FILE *out = open_memstream(&r->out, &r->outn), *err = open_memstream(&r->err, &r->errn);
	assert_non_null(out);
	assert_non_null(err);
	r->rc = reconcile_run(&o, out, err);
	fclose(out);
	fclose(err);
	if (getenv("FLASH_TEST_VERBOSE"))
		fprintf(stderr, "---- rc %d\n%s%s", r->rc, r->out, r->err);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static int has(const struct run *r, const char *s) { return strstr(r->out, s) != NULL; }

/* Lines starting with @p prefix. */
static int count(const struct run *r, const char *prefix)
{
	int n = 0;
	size_t len = strlen(prefix);
	for (const char *p = r->out; p && *p;) {
		if (strncmp(p, prefix, len) == 0)
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

static uint64_t applied(struct ctx *c)
{
	uint64_t lsn;
	assert_int_equal(mdb_applied_lsn(c->m, &lsn), FLASH_OK);
	return lsn;
}

/* A stock row, a deleted order, an order's status and quantity: each
 * repaired, one REPAIR line per change, then agreement. */
static void test_repair_restores_mysql_and_prints_each_change(void **state)
{
	struct ctx *c = *state;
	struct run r;
	run(c, 0, 1, &r);
	assert_int_equal(r.rc, 0);
	run_free(&r);

	struct rsql_sku s1;
	assert_int_equal(rsql_sku_get(c->m, 1, 1, &s1), FLASH_OK);
	char sql[256], line[160];
	q(c, "UPDATE item_stock SET available = available - 3, sold = sold + 3"
	     " WHERE activity_id = 1 AND sku_id = 1", 1);
	uint64_t gone = c->active[3], flipped = c->active[4], resized = c->active[5];
	uint64_t gone_qty, resized_qty;
	snprintf(sql, sizeof sql, "SELECT qty FROM orders WHERE order_no = %llu", (unsigned long long)gone);
	gone_qty = q64(c, sql);
	snprintf(sql, sizeof sql, "SELECT qty FROM orders WHERE order_no = %llu", (unsigned long long)resized);
	resized_qty = q64(c, sql);
	snprintf(sql, sizeof sql, "DELETE FROM orders WHERE order_no = %llu", (unsigned long long)gone);
	q(c, sql, 1);
	snprintf(sql, sizeof sql, "UPDATE orders SET status = 'CANCELLED' WHERE order_no = %llu",
	         (unsigned long long)flipped);
	q(c, sql, 1);
	snprintf(sql, sizeof sql, "UPDATE orders SET qty = qty + 10 WHERE order_no = %llu",
	         (unsigned long long)resized);
	q(c, sql, 1);
	uint64_t lsn = applied(c);

	/* reconcile sees them: exit 1 */
	run(c, 0, 1, &r);
	assert_int_equal(r.rc, 1);
	assert_true(has(&r, "DIFF available activity=1 sku=1"));
	snprintf(line, sizeof line, "order=%llu", (unsigned long long)gone);
	assert_true(has(&r, line));
	run_free(&r);

	/* --repair: one line per change, exit 0 after the re-check */
	run(c, 1, 1, &r);
	assert_int_equal(r.rc, 0);
	snprintf(line, sizeof line, "REPAIR item_stock 1/1 available %llu -> %llu\n",
	         (unsigned long long)s1.available - 3, (unsigned long long)s1.available);
	assert_true(has(&r, line));
	snprintf(line, sizeof line, "REPAIR item_stock 1/1 sold %llu -> %llu\n",
	         (unsigned long long)s1.sold + 3, (unsigned long long)s1.sold);
	assert_true(has(&r, line));
	snprintf(line, sizeof line, "REPAIR orders insert %llu activity 1 ", (unsigned long long)gone);
	assert_true(has(&r, line));
	snprintf(line, sizeof line, "REPAIR orders %llu status CANCELLED -> ACTIVE\n",
	         (unsigned long long)flipped);
	assert_true(has(&r, line));
	snprintf(line, sizeof line, "REPAIR orders %llu qty %llu -> %llu\n", (unsigned long long)resized,
	         (unsigned long long)resized_qty + 10, (unsigned long long)resized_qty);
	assert_true(has(&r, line));
	/* exactly those five changes, nothing refused */
	assert_int_equal(count(&r, "REPAIR "), 5);
	assert_int_equal(count(&r, "NOT REPAIRED"), 0);
	assert_true(has(&r, "re-check at applied LSN 49: 0 difference(s)"));
	run_free(&r);

	/* MySQL holds the WAL's values again; the applied LSN did not move */
	assert_int_equal(applied(c), lsn);
	struct rsql_sku s1b;
	assert_int_equal(rsql_sku_get(c->m, 1, 1, &s1b), FLASH_OK);
	assert_int_equal(s1b.available, s1.available);
	assert_int_equal(s1b.sold, s1.sold);
	snprintf(sql, sizeof sql, "SELECT qty FROM orders WHERE order_no = %llu AND status = 'ACTIVE'",
	         (unsigned long long)gone);
	assert_int_equal(q64(c, sql), gone_qty);
	snprintf(sql, sizeof sql, "SELECT status = 'ACTIVE' FROM orders WHERE order_no = %llu",
	         (unsigned long long)flipped);
	assert_int_equal(q64(c, sql), 1);
	/* a second reconcile agrees; a second repair changes nothing */
	run(c, 0, 1, &r);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	run(c, 1, 0, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(count(&r, "REPAIR "), 0);
	run_free(&r);
	/* and the applier, fed the whole WAL again, finds it all applied */
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up(c->m, c->waldir, 7, 10000, &tot), FLASH_OK);
	assert_int_equal(tot.applied, 0);
	assert_int_equal(tot.refused, 0);
}

/* Reservations after the history (the engine makes none yet): activity 2
 * (K=1), sku 21 of 30 units; 2001 paid, 2002 expired, 2003 waiting.
 * Appended to the WAL; MySQL caught up. */
static void add_reservations(struct ctx *c)
{
	static const struct { uint16_t type; uint64_t no; uint32_t qty; } h[] = {
		{ FLASH_REC_ORDER, 2001, 2 }, { FLASH_REC_ORDER, 2002, 3 }, { FLASH_REC_ORDER, 2003, 5 },
		{ FLASH_REC_CONFIRM, 2001, 2 }, { FLASH_REC_EXPIRE, 2002, 3 },
	};
	struct flash_record r;
	wal_t *w;
	assert_int_equal(wal_open(c->waldir, NULL, &w), FLASH_OK);
	memset(&r, 0, sizeof r);
	r.type = FLASH_REC_ACTIVITY;
	r.activity_id = 2;
	r.biz_day = 1 | FLASH_SCOPE_ACTIVITY << 8;
	r.limit_slot = 10;
	r.ts_ns = INT64_MAX;
	assert_int_equal(wal_append_record(w, &r, 1000, NULL), FLASH_OK);
	memset(&r, 0, sizeof r);
	r.type = FLASH_REC_SKU;
	r.activity_id = 2;
	r.sku_id = 21;
	r.qty = 1;
	r.value = 30;
	assert_int_equal(wal_append_record(w, &r, 1001, NULL), FLASH_OK);
	for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
		memset(&r, 0, sizeof r);
		r.type = h[i].type;
		r.activity_id = 2;
		r.sku_id = 21;
		r.order_no = h[i].no;
		r.user_id = h[i].no;
		r.qty = h[i].qty;
		r.limit_slot = 1;
		r.value = 1700000900000000000 + (int64_t)h[i].no;   /* pay by */
		r.ts_ns = 1700000000000000000 + (int64_t)i;
		assert_int_equal(wal_append_record(w, &r, 1002 + i, NULL), FLASH_OK);
	}
	assert_int_equal(wal_commit(w), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	c->records += 2 + sizeof h / sizeof h[0];
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up(c->m, c->waldir, 7, 10000, &tot), FLASH_OK);
	assert_int_equal(tot.refused, 0);
	assert_int_equal(tot.applied_lsn, c->records);
}

/* A reservation's row deleted, a confirmed one's confirm lost, and its
 * reserved units moved back to available in MySQL: the repair brings back
 * the RESERVED row with its pay-by time, the confirm LSN, and the units,
 * then the witnesses agree. */
static void test_repair_restores_reservations_and_reserved_units(void **state)
{
	struct ctx *c = *state;
	struct run r;
	add_reservations(c);
	run(c, 0, 0, &r);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	uint64_t confirm_lsn = q64(c, "SELECT confirm_lsn FROM orders WHERE order_no = 2001");
	assert_int_equal(confirm_lsn, c->records - 1);

	q(c, "DELETE FROM orders WHERE order_no = 2003", 1);
	q(c, "UPDATE orders SET status = 'RESERVED', confirm_lsn = NULL WHERE order_no = 2001", 1);
	q(c, "UPDATE item_stock SET available = available + 5, reserved = reserved - 5"
	     " WHERE activity_id = 2 AND sku_id = 21", 1);
	run(c, 1, 0, &r);
	assert_int_equal(r.rc, 0);
	assert_true(has(&r, "REPAIR item_stock 2/21 available 28 -> 23\n"));
	assert_true(has(&r, "REPAIR item_stock 2/21 reserved 0 -> 5\n"));
	assert_true(has(&r, "REPAIR orders insert 2003 activity 2 sku 21 user 2003 qty 5 slot 1 RESERVED\n"));
	assert_true(has(&r, "REPAIR orders 2001 status RESERVED -> ACTIVE\n"));
	assert_int_equal(count(&r, "NOT REPAIRED"), 0);
	run_free(&r);
	assert_int_equal(q64(c, "SELECT status = 'RESERVED' AND pay_by_ns = 1700000900000002003 AND active_key = 1"
	                        " FROM orders WHERE order_no = 2003"), 1);
	assert_int_equal(q64(c, "SELECT confirm_lsn FROM orders WHERE order_no = 2001"), confirm_lsn);
	assert_int_equal(q64(c, "SELECT status = 'EXPIRED' AND cancel_lsn IS NOT NULL FROM orders"
	                        " WHERE order_no = 2002"), 1);
	run(c, 0, 0, &r);
	assert_int_equal(r.rc, 0);
	run_free(&r);
}

/* A row the WAL never had is NOT REPAIRED and left in place (exit 1); the
 * repairable difference beside it is repaired. */
static void test_row_absent_from_wal_not_repaired_and_kept(void **state)
{
	struct ctx *c = *state;
	q(c, "INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot, biz_day,"
	     " scope_sku, scope_day, created_ns, lsn) VALUES (900001, 1, 2, 777, 1, 1, 0, 0, 0, 0, 0)", 1);
	char sql[160], line[160];
	uint64_t gone = c->active[7];
	snprintf(sql, sizeof sql, "DELETE FROM orders WHERE order_no = %llu", (unsigned long long)gone);
	q(c, sql, 1);

	struct run r;
	run(c, 1, 0, &r);
	assert_int_equal(r.rc, 1);
	assert_true(has(&r, "NOT REPAIRED missing activity=1 sku=2 [wal] order=900001 user=777"));
	assert_true(has(&r, "(MySQL row absent from the WAL)"));
	snprintf(line, sizeof line, "REPAIR orders insert %llu ", (unsigned long long)gone);
	assert_true(has(&r, line));
	assert_int_equal(count(&r, "REPAIR "), 1);
	/* the re-check still finds the foreign row */
	assert_true(has(&r, "DIFF missing activity=1 sku=2 [wal] order=900001"));
	run_free(&r);
	assert_int_equal(q64(c, "SELECT COUNT(*) FROM orders WHERE order_no = 900001 AND user_id = 777"), 1);
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM orders WHERE order_no = %llu", (unsigned long long)gone);
	assert_int_equal(q64(c, sql), 1);
	/* reconcile keeps reporting it */
	run(c, 0, 0, &r);
	assert_int_equal(r.rc, 1);
	run_free(&r);
}

/* MySQL behind the WAL: the repair compares at MySQL's applied LSN, so it
 * repairs what MySQL changed and leaves the records past that LSN to the
 * applier (which then applies them without a conflict). */
static void test_repair_at_applied_lsn_when_mysql_lags(void **state)
{
	(void)state;
	struct ctx *c = build(30);
	*state = c;
	assert_int_equal(applied(c), 30);
	q(c, "UPDATE item_stock SET available = available + 2, sold = sold - 2"
	     " WHERE activity_id = 1 AND sku_id = 2", 1);
	uint64_t orders_before = q64(c, "SELECT COUNT(*) FROM orders");

	struct run r;
	run(c, 1, 0, &r);
	assert_int_equal(r.rc, 0);
	assert_true(has(&r, "reconcile: MySQL at applied LSN 30 against the WAL folded to it"));
	assert_true(has(&r, "REPAIR item_stock 1/2 available "));
	assert_true(has(&r, "REPAIR item_stock 1/2 sold "));
	assert_int_equal(count(&r, "REPAIR "), 2);
	run_free(&r);
	/* nothing past LSN 30 was written by the repair */
	assert_int_equal(applied(c), 30);
	assert_int_equal(q64(c, "SELECT COUNT(*) FROM orders"), orders_before);
	/* the applier catches up cleanly; then all agree, segment included */
	struct apply_result tot = { 0 };
	assert_int_equal(mdb_catch_up(c->m, c->waldir, 7, 10000, &tot), FLASH_OK);
	assert_int_equal(tot.applied, c->records - 30);
	assert_int_equal(tot.refused, 0);
	run(c, 0, 1, &r);
	assert_int_equal(r.rc, 0);
	run_free(&r);
}

/* The segment is compared with the whole WAL and never changed; without
 * the WAL or MySQL the repair refuses (2) and touches nothing. */
static void test_repair_needs_wal_and_mysql(void **state)
{
	struct ctx *c = *state;
	q(c, "UPDATE item_stock SET available = available - 1, sold = sold + 1"
	     " WHERE activity_id = 1 AND sku_id = 1", 1);
	struct mdb_opts mo = { .url = c->url, .log = quiet };
	struct reconcile_run_opts o = { .mysql = &mo, .repair = 1, .segment = c->seg };
	char *out = NULL, *err = NULL;
	size_t on, en;
	FILE *fo = open_memstream(&out, &on), *fe = open_memstream(&err, &en);
	assert_int_equal(reconcile_run(&o, fo, fe), 2);
	o.mysql = NULL;
	o.wal_dir = c->waldir;
	assert_int_equal(reconcile_run(&o, fo, fe), 2);
	fclose(fo);
	fclose(fe);
	assert_non_null(strstr(err, "--repair needs the WAL and MySQL"));
	free(out);
	free(err);
	struct run r;
	run(c, 0, 0, &r);
	assert_int_equal(r.rc, 1);        /* still there */
	run_free(&r);
	run(c, 1, 1, &r);                 /* with the segment: repaired, all three agree */
	assert_int_equal(r.rc, 0);
	assert_true(has(&r, "re-check: 0 difference(s) between the segment and the WAL"));
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_repair_restores_mysql_and_prints_each_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_row_absent_from_wal_not_repaired_and_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_restores_reservations_and_reserved_units, setup, teardown),
		cmocka_unit_test_teardown(test_repair_at_applied_lsn_when_mysql_lags, teardown),
		cmocka_unit_test_setup_teardown(test_repair_needs_wal_and_mysql, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
