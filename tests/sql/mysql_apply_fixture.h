/*
 * mysql_apply_fixture.h -- the applier tests' own fixture (test_mysql_apply.c,
 * test_mysql_carts.c): a fresh database per test on the private server of
 * mysql_testutil.h with an applier handle whose log lines are kept, queries
 * for the checks, a fingerprint of every table the applier writes, and the
 * records of the catalog and of a plain order as the engine writes them
 * (api/flashstock.h section 9).  Included once, by the test file itself.
 */
#ifndef MYSQL_APPLY_FIXTURE_H
#define MYSQL_APPLY_FIXTURE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "flashstock.h"
#include "mysql_apply.h"
#include "mysql_testutil.h"

static int g_dbseq;
static char g_db[64];

/* Log lines of the applier, kept for the checks on what it printed. */
static char g_log[16384];
static size_t g_log_len;

static void cap_log(void *arg, int level, const char *msg)
{
	(void)arg;
	int n = snprintf(g_log + g_log_len, sizeof g_log - g_log_len, "%d %s\n", level, msg);
	if (n > 0 && g_log_len + (size_t)n < sizeof g_log)
		g_log_len += (size_t)n;
}

static void url_for(char *buf, size_t len, const char *db)
{
	snprintf(buf, len, "mysql://root@localhost/%s?socket=%s/mysqld.sock", db, mariadb_dir());
}

/* A fresh database and an applier handle on it. */
static mdb_t *open_fresh(void)
{
	snprintf(g_db, sizeof g_db, "ft_%d_%d", (int)getpid(), ++g_dbseq);
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log };
	mdb_t *m = NULL;
	g_log_len = 0;
	g_log[0] = 0;
	int rc = mdb_open(&o, &m);
	assert_int_equal(rc, FLASH_OK);
	assert_non_null(m);
	return m;
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

/* One number from a query; fails the test if there is no row. */
static uint64_t q_u64(mdb_t *m, const char *fmt, ...)
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
	uint64_t v = row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

/* Run a statement directly; returns the MySQL error number (0 = ok). */
static unsigned q_exec(mdb_t *m, const char *sql)
{
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	if (mysql_query(c, sql))
		return mysql_errno(c);
	return 0;
}

/* A fingerprint of everything the applier writes, for "nothing changed". */
static void fingerprint(mdb_t *m, uint64_t fp[6])
{
	fp[0] = q_u64(m, "SELECT COUNT(*) FROM orders");
	fp[1] = q_u64(m, "SELECT COALESCE(SUM(order_no * 7 + qty * 3 + (status = 'ACTIVE')), 0) FROM orders");
	fp[2] = q_u64(m, "SELECT COALESCE(SUM(available * 3 + sold * 5 + total * 7), 0) FROM item_stock");
	fp[3] = q_u64(m, "SELECT COUNT(*) FROM activities");
	fp[4] = q_u64(m, "SELECT COUNT(*) FROM apply_conflicts");
	fp[5] = q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream = 'wal'");
}

/* ---- record builders ------------------------------------------------------ */

static struct lsn_record r_activity(uint64_t lsn, uint32_t id, uint32_t limit, uint32_t scope,
                                          uint32_t flags)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ACTIVITY;
	x.rec.activity_id = id;
	x.rec.biz_day = limit | scope << 8 | flags << 16;
	x.rec.limit_slot = 10;             /* max_qty */
	x.rec.value = 1000;                /* start_ns */
	x.rec.ts_ns = 2000000000000000000; /* end_ns */
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

static struct lsn_record r_order(uint64_t lsn, uint32_t a, uint32_t s, uint64_t order_no,
                                       uint64_t user, uint32_t qty, uint16_t slot, uint32_t day)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ORDER;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.order_no = order_no;
	x.rec.user_id = user;
	x.rec.qty = qty;
	x.rec.limit_slot = slot;
	x.rec.biz_day = day;
	x.rec.ts_ns = 1700000000000000000 + (int64_t)lsn;
	return x;
}

static struct lsn_record r_restock(uint64_t lsn, uint32_t a, uint32_t s, int64_t delta)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_RESTOCK;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.value = delta;
	return x;
}

#endif /* MYSQL_APPLY_FIXTURE_H */
