/*
 * test_mysql_terms.c -- versioned terms in MariaDB (persist/mysql/mysql_apply.c):
 * new terms of an activity (an ACTIVITY record with flags 1) and a sku's
 * price (a PRICE record), against the private MariaDB of the ctest fixture.
 *
 *   - both paths (the batch's few statements, and record by record) write
 *     the same rows: the activity's new window, limit, max_qty, flags,
 *     version and terms_lsn; the sku's price, version, price_lsn, price_ns;
 *     no unit moves;
 *   - applied again (a replay, or the same records after the applied LSN
 *     was put back) nothing changes: values are set, never added;
 *   - new terms of an unknown, archived or differently scoped activity, and
 *     a price of an unknown sku, are catalog conflicts that change nothing;
 *   - a database from before versions gets the columns once, its rows
 *     version 0, and then takes the new records;
 *   - a feed refill gives back the record that set today's terms, and an
 *     older record of them as a gap, never with today's values;
 *   - end to end, the records the engine writes for flash_activity_update
 *     and flash_sku_price_set reach MariaDB through `serve` with the
 *     versions the segment shows.
 *
 * Every test works in a database of its own and checks exact row values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>
#include <pthread.h>

#include "feed.h"
#include "flashstock.h"
#include "helpers.h"
#include "mysql_apply.h"
#include "mysql_testutil.h"
#include "serve.h"
#include "wal_testutil.h"

/* ---- fixtures ------------------------------------------------------------ */

static int g_dbseq;
static char g_db[64];
static char g_url[512];

static mdb_t *open_url(void)
{
	struct mdb_opts o = { .url = g_url };
	mdb_t *m = NULL;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	assert_non_null(m);
	return m;
}

/* A fresh database and an applier handle on it (its tables made). */
static mdb_t *open_fresh(void)
{
	snprintf(g_db, sizeof g_db, "fterms_%d_%d", (int)getpid(), ++g_dbseq);
	mysql_fresh_db(g_url, sizeof g_url, g_db);
	return open_url();
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

/* The first column of the first row of a query, as text ("NULL" for NULL);
 * fails the test without a row. */
__attribute__((format(printf, 4, 5)))
static const char *q_str(mdb_t *m, char *buf, size_t len, const char *fmt, ...)
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
	snprintf(buf, len, "%s", row[0] ? row[0] : "NULL");
	mysql_free_result(r);
	return buf;
}

__attribute__((format(printf, 2, 3)))
static uint64_t q_u64(mdb_t *m, const char *fmt, ...)
{
	char sql[1024], buf[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	return strtoull(q_str(m, buf, sizeof buf, "%s", sql), NULL, 10);
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

/* The terms of activity @p a and the terms and units of sku (a, s), one
 * line each, as the tests compare them. */
#define ACT_ROW "CONCAT_WS('/', limit_per_user, max_qty, scope, flags, day_offset_s, start_ns, end_ns," \
                " lsn, version, IFNULL(terms_lsn, 'NULL'))"
#define SKU_ROW "CONCAT_WS('/', total, available, reserved, sold, last_lsn, price, version," \
                " IFNULL(price_lsn, 'NULL'), IFNULL(price_ns, 'NULL'))"

static const char *act_row(mdb_t *m, char *buf, size_t len, uint32_t a)
{
	return q_str(m, buf, len, "SELECT " ACT_ROW " FROM activities WHERE activity_id = %u", a);
}

static const char *sku_row(mdb_t *m, char *buf, size_t len, uint32_t a, uint32_t s)
{
	return q_str(m, buf, len, "SELECT " SKU_ROW " FROM item_stock WHERE activity_id = %u AND sku_id = %u",
	             a, s);
}

/* Everything the applier writes, as one string, for "nothing changed". */
static const char *everything(mdb_t *m, char *buf, size_t len)
{
	return q_str(m, buf, len,
	             "SELECT CONCAT_WS('|',"
	             " (SELECT GROUP_CONCAT(activity_id, ':', " ACT_ROW " ORDER BY activity_id) FROM activities),"
	             " (SELECT GROUP_CONCAT(activity_id, '.', sku_id, ':', " SKU_ROW
	             "   ORDER BY activity_id, sku_id) FROM item_stock),"
	             " (SELECT GROUP_CONCAT(order_no, ':', status, ':', limit_slot ORDER BY order_no) FROM orders),"
	             " (SELECT COUNT(*) FROM apply_conflicts),"
	             " (SELECT lsn FROM applied_lsn WHERE stream = 'wal'))");
}

/* ---- record builders ------------------------------------------------------ */

/* An ACTIVITY record: its add (@p update 0) or new terms (1), version @p v. */
static struct lsn_record r_activity(uint64_t lsn, uint32_t id, uint32_t limit, uint32_t scope,
                                    int64_t start_ns, int64_t end_ns, uint64_t v, int update)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ACTIVITY;
	x.rec.activity_id = id;
	x.rec.biz_day = limit | scope << 8 | (uint32_t)FLASH_ACT_CANCEL_RETURNS_QUOTA << 16;
	x.rec.limit_slot = 5;              /* max_qty */
	x.rec.request_id = (uint64_t)(int64_t)-3600;   /* day_offset_s */
	x.rec.value = start_ns;
	x.rec.ts_ns = end_ns;
	x.rec.order_no = v;
	x.rec.flags = update ? 1 : 0;
	return x;
}

static struct lsn_record r_sku(uint64_t lsn, uint32_t a, uint32_t s, int64_t units, uint64_t v)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_SKU;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.qty = 1;
	x.rec.value = units;
	x.rec.order_no = v;
	x.rec.ts_ns = 1700000000000000000 + (int64_t)lsn;
	return x;
}

static struct lsn_record r_price(uint64_t lsn, uint32_t a, uint32_t s, int64_t price, uint64_t v)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_PRICE;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.value = price;
	x.rec.order_no = v;
	x.rec.ts_ns = 1700000000000000000 + (int64_t)lsn;
	return x;
}

static struct lsn_record r_order(uint64_t lsn, uint32_t a, uint32_t s, uint64_t order_no,
                                 uint64_t user, uint16_t slot)
{
	struct lsn_record x = { .lsn = lsn };
	x.rec.type = FLASH_REC_ORDER;
	x.rec.activity_id = a;
	x.rec.sku_id = s;
	x.rec.order_no = order_no;
	x.rec.user_id = user;
	x.rec.qty = 1;
	x.rec.limit_slot = slot;
	x.rec.ts_ns = 1700000000000000000 + (int64_t)lsn;
	return x;
}

/*
 * A sale whose terms change: activity 1 (limit 1, versions 1 then 4) with
 * sku 11 (100 units, version 2, priced at version 5), an order of user 7,
 * then a second one in the slot the new limit (2) gives him.
 *   LSN 1 ACTIVITY add   2 SKU   3 ORDER 901 slot 1
 *       4 ACTIVITY terms: limit 2, a later window, version 4
 *       5 PRICE 1999, version 5   6 ORDER 902 slot 2
 */
static size_t build_terms(struct lsn_record *v)
{
	size_t n = 0;
	v[n++] = r_activity(1, 1, 1, FLASH_SCOPE_ACTIVITY, 1000, 2000000000000000000, 1, 0);
	v[n++] = r_sku(2, 1, 11, 100, 2);
	v[n++] = r_order(3, 1, 11, 901, 7, 1);
	v[n++] = r_activity(4, 1, 2, FLASH_SCOPE_ACTIVITY, 5000, 3000000000000000000, 4, 1);
	v[n++] = r_price(5, 1, 11, 1999, 5);
	v[n++] = r_order(6, 1, 11, 902, 7, 2);
	return n;
}

/* The rows build_terms() leaves, on either path. */
#define TERMS_ACT "2/5/0/1/-3600/5000/3000000000000000000/1/4/4"
#define TERMS_SKU "100/98/0/2/6/1999/5/5/1700000000000000005"

/* ---- tests ----------------------------------------------------------------- */

static void test_new_terms_and_a_price_apply_on_the_batch_path_and_move_no_unit(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	size_t n = build_terms(v);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(res.refused, 0);
	assert_int_equal(res.applied, n);
	char buf[512];
	assert_string_equal(act_row(m, buf, sizeof buf, 1), TERMS_ACT);
	assert_string_equal(sku_row(m, buf, sizeof buf, 1, 11), TERMS_SKU);
	/* the new limit's slot 2 is the user's second order, as the segment said */
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE user_id = 7 AND status = 'ACTIVE'"), 2);
	close_drop(m);
}

/* A duplicate order number among them sends the batch record by record:
 * the terms and the price come out as on the batch path. */
static void test_record_by_record_path_writes_the_same_terms_and_price(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	size_t n = build_terms(v);
	v[n] = r_order(7, 1, 11, 901, 8, 1);        /* order number 901 again */
	struct conflict c[4];
	struct apply_result res = { .conflicts = c, .conflict_cap = 4 };
	assert_int_equal(mdb_apply(m, v, n + 1, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_DUP_ORDER);
	assert_int_equal(c[0].lsn, 7);
	char buf[512];
	assert_string_equal(act_row(m, buf, sizeof buf, 1), TERMS_ACT);
	assert_string_equal(sku_row(m, buf, sizeof buf, 1, 11), TERMS_SKU);
	close_drop(m);
}

/* A replay skips everything (the applied LSN); and the new terms and price
 * applied once more on either path -- the applied LSN put back behind them,
 * as a restore of applied_lsn would -- write the same rows: values are set,
 * never added. */
static void test_terms_and_price_applied_again_change_nothing(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	size_t n = build_terms(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	char before[2048], after[2048];
	everything(m, before, sizeof before);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.skipped, n);
	assert_string_equal(everything(m, after, sizeof after), before);

	for (int slow = 0; slow < 2; slow++) {
		assert_int_equal(q_exec(m, "UPDATE applied_lsn SET lsn = 3 WHERE stream = 'wal'"), 0);
		/* LSNs 4 and 5 again; on the second round with a refused order
		 * (a sku nobody defined) that sends them record by record */
		struct lsn_record w[3] = { v[3], v[4], r_order(6, 1, 99, 903, 9, 1) };
		memset(&res, 0, sizeof res);
		assert_int_equal(mdb_apply(m, w, slow ? 3 : 2, &res), FLASH_OK);
		assert_int_equal(res.slow_path, slow);
		assert_int_equal(res.refused, (uint64_t)slow);
		assert_int_equal(q_exec(m, "DELETE FROM apply_conflicts"), 0);
		assert_int_equal(q_exec(m, "UPDATE applied_lsn SET lsn = 6 WHERE stream = 'wal'"), 0);
		assert_string_equal(everything(m, after, sizeof after), before);
	}
	close_drop(m);
}

/* New terms of an activity MariaDB does not have, of an archived one, or
 * with another scope or day offset than its row (which the engine never
 * changes), and a price of an unknown sku: each a catalog conflict that
 * changes nothing; the records around them still apply. */
static void test_terms_of_unknown_archived_or_rescoped_activity_and_price_of_unknown_sku_conflict(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = 0;
	v[n++] = r_activity(1, 1, 1, FLASH_SCOPE_ACTIVITY, 1000, 2000, 1, 0);
	v[n++] = r_sku(2, 1, 11, 10, 2);
	v[n++] = r_activity(3, 2, 1, FLASH_SCOPE_SKU, 1000, 2000, 3, 0);
	struct lsn_record arch = { .lsn = 4 };
	arch.rec.type = FLASH_REC_ARCHIVE;
	arch.rec.activity_id = 2;
	arch.rec.ts_ns = 3000;
	v[n++] = arch;
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	char before[2048], after[2048];
	everything(m, before, sizeof before);

	n = 0;
	v[n++] = r_activity(5, 3, 2, FLASH_SCOPE_ACTIVITY, 1000, 2000, 5, 1);   /* unknown */
	v[n++] = r_activity(6, 2, 2, FLASH_SCOPE_SKU, 1000, 2000, 6, 1);        /* archived */
	v[n++] = r_activity(7, 1, 2, FLASH_SCOPE_SKU, 1000, 2000, 7, 1);        /* scope 1, not 0 */
	v[n] = r_activity(8, 1, 2, FLASH_SCOPE_ACTIVITY, 1000, 2000, 8, 1);
	v[n++].rec.request_id = 0;                                              /* day offset 0 */
	v[n++] = r_price(9, 1, 12, 500, 9);                                     /* unknown sku */
	v[n++] = r_price(10, 3, 11, 500, 10);                                   /* ... and activity */
	for (size_t one = 0; one < n; one++) {
		struct conflict c[2];
		struct apply_result res = { .conflicts = c, .conflict_cap = 2 };
		assert_int_equal(mdb_apply(m, &v[one], 1, &res), FLASH_OK);
		assert_int_equal(res.slow_path, 1);
		assert_int_equal(res.refused, 1);
		assert_int_equal(c[0].kind, CONFLICT_CATALOG);
		assert_int_equal(c[0].lsn, v[one].lsn);
		assert_int_equal(c[0].type, v[one].rec.type);
	}
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts WHERE kind = 'catalog'"), n);
	assert_int_equal(q_exec(m, "DELETE FROM apply_conflicts"), 0);
	assert_int_equal(q_exec(m, "UPDATE applied_lsn SET lsn = 4 WHERE stream = 'wal'"), 0);
	assert_string_equal(everything(m, after, sizeof after), before);
	close_drop(m);
}

/*
 * A database made before versions (activities without version and
 * terms_lsn, item_stock without price, version, price_lsn, price_ns) is
 * migrated when the applier opens it: its rows stay, with version 0 and
 * price 0 (what a WAL of before versions says); opening it again changes
 * nothing; new terms and a price then apply to the old rows.
 */
static void test_database_from_before_versions_is_migrated_once_and_takes_new_terms(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	assert_int_equal(q_exec(m, "DROP TABLE activities, item_stock"), 0);
	assert_int_equal(q_exec(m,
		"CREATE TABLE activities (activity_id INT UNSIGNED NOT NULL PRIMARY KEY,"
		" limit_per_user SMALLINT UNSIGNED NOT NULL, max_qty INT UNSIGNED NOT NULL,"
		" scope TINYINT UNSIGNED NOT NULL, flags INT UNSIGNED NOT NULL, day_offset_s INT NOT NULL,"
		" start_ns BIGINT NOT NULL, end_ns BIGINT NOT NULL, lsn BIGINT UNSIGNED NOT NULL,"
		" archived_lsn BIGINT UNSIGNED NULL, archived_ns BIGINT NULL) ENGINE=InnoDB"), 0);
	assert_int_equal(q_exec(m,
		"CREATE TABLE item_stock (activity_id INT UNSIGNED NOT NULL, sku_id INT UNSIGNED NOT NULL,"
		" total BIGINT UNSIGNED NOT NULL, available BIGINT UNSIGNED NOT NULL,"
		" reserved BIGINT UNSIGNED NOT NULL DEFAULT 0, sold BIGINT UNSIGNED NOT NULL DEFAULT 0,"
		" shards INT UNSIGNED NOT NULL DEFAULT 1, created_lsn BIGINT UNSIGNED NOT NULL,"
		" last_lsn BIGINT UNSIGNED NOT NULL, PRIMARY KEY (activity_id, sku_id),"
		" CONSTRAINT stock_units CHECK (available + reserved + sold = total)) ENGINE=InnoDB"), 0);
	/* rows as the applier of before wrote them: LSN 1 the activity, 2 the sku */
	assert_int_equal(q_exec(m, "INSERT INTO activities VALUES (6, 1, 5, 0, 1, -3600, 1000,"
	                           " 2000000000000000000, 1, NULL, NULL)"), 0);
	assert_int_equal(q_exec(m, "INSERT INTO item_stock VALUES (6, 61, 10, 10, 0, 0, 1, 2, 2)"), 0);
	assert_int_equal(q_exec(m, "UPDATE applied_lsn SET lsn = 2"), 0);
	mdb_close(m);

	char buf[512];
	for (int round = 0; round < 2; round++) {
		m = open_url();
		assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=DATABASE()"
		                          " AND ((TABLE_NAME='activities' AND COLUMN_NAME IN ('version','terms_lsn'))"
		                          " OR (TABLE_NAME='item_stock' AND COLUMN_NAME IN"
		                          "     ('price','version','price_lsn','price_ns')))"), 6);
		assert_string_equal(act_row(m, buf, sizeof buf, 6), "1/5/0/1/-3600/1000/2000000000000000000/1/0/NULL");
		assert_string_equal(sku_row(m, buf, sizeof buf, 6, 61), "10/10/0/0/2/0/0/NULL/NULL");
		if (round == 0)
			mdb_close(m);
	}
	/* the migrated columns sit where a new table has them: one column
	 * order for every database */
	assert_string_equal(q_str(m, buf, sizeof buf, "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION)"
	                          " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=DATABASE()"
	                          " AND TABLE_NAME='item_stock' AND ORDINAL_POSITION > 9"),
	                    "price,version,price_lsn,price_ns");
	struct lsn_record v[3] = {
		r_activity(3, 6, 3, FLASH_SCOPE_ACTIVITY, 1000, 2500000000000000000, 7, 1),
		r_price(4, 6, 61, 250, 8),
		r_order(5, 6, 61, 960, 91, 3),
	};
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, 3, &res), FLASH_OK);
	assert_int_equal(res.refused, 0);
	assert_string_equal(act_row(m, buf, sizeof buf, 6), "3/5/0/1/-3600/1000/2500000000000000000/1/7/3");
	assert_string_equal(sku_row(m, buf, sizeof buf, 6, 61), "10/9/0/1/5/250/8/4/1700000000000000004");
	close_drop(m);
}

/*
 * A feed refill from MariaDB gives back the record that set today's terms
 * -- the ACTIVITY with flags 1 at terms_lsn, the last PRICE at price_lsn,
 * each with every field but the slot -- and the records those replaced as
 * gaps: the rows no longer know what they said.  An activity whose terms
 * never changed comes back at its add with its version; a sku priced since
 * its add comes back without a version (0).
 */
static void test_feed_refill_gives_back_the_record_of_todays_terms_and_older_ones_as_gaps(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	size_t n = build_terms(v);
	v[n++] = r_price(7, 1, 11, 2499, 7);               /* replaces the price of LSN 5 */
	v[n++] = r_activity(8, 2, 1, FLASH_SCOPE_ACTIVITY, 1000, 2000, 8, 0);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	feed_refill_t *r;
	assert_int_equal(feed_refill_open(g_url, "wal", &r), FLASH_OK);
	struct flash_feed_rec *got = NULL;
	size_t k = 0;
	uint64_t applied = 0;
	assert_int_equal(feed_refill_fetch(r, 1, 8, &got, &k, &applied), FLASH_OK);
	/* LSN 1 (the add of activity 1) and 5 (the first price) are not given */
	static const uint64_t want_lsn[] = { 2, 3, 4, 6, 7, 8 };
	assert_int_equal(k, 6);
	for (size_t i = 0; i < k; i++)
		assert_int_equal(got[i].fr_lsn, want_lsn[i]);
	const struct flash_record *sku = &got[0].fr_rec, *terms = &got[2].fr_rec, *price = &got[4].fr_rec,
	                          *add = &got[5].fr_rec;
	assert_int_equal(sku->type, FLASH_REC_SKU);
	assert_int_equal(sku->order_no, 0);               /* its version was replaced by a price */
	assert_int_equal(terms->type, FLASH_REC_ACTIVITY);
	assert_int_equal(terms->flags, 1);
	assert_int_equal(terms->order_no, 4);
	assert_int_equal(terms->activity_id, 1);
	assert_int_equal(terms->biz_day, v[3].rec.biz_day);
	assert_int_equal(terms->limit_slot, v[3].rec.limit_slot);
	assert_int_equal(terms->request_id, v[3].rec.request_id);
	assert_int_equal(terms->value, v[3].rec.value);
	assert_int_equal(terms->ts_ns, v[3].rec.ts_ns);
	assert_int_equal(got[2].fr_missing, FLASH_FEED_MISS_SLOT);
	assert_int_equal(price->type, FLASH_REC_PRICE);
	assert_int_equal(price->activity_id, 1);
	assert_int_equal(price->sku_id, 11);
	assert_int_equal(price->value, 2499);
	assert_int_equal(price->order_no, 7);
	assert_int_equal(price->ts_ns, v[6].rec.ts_ns);
	assert_int_equal(got[4].fr_missing, FLASH_FEED_MISS_SLOT);
	assert_int_equal(add->type, FLASH_REC_ACTIVITY);
	assert_int_equal(add->flags, 0);
	assert_int_equal(add->order_no, 8);
	assert_int_equal(add->activity_id, 2);
	free(got);
	feed_refill_close(r);
	close_drop(m);
}

/*
 * Through the engine and `serve`: an activity's new terms (a later end and
 * limit 2) and a sku's price, between two orders of one user, reach
 * MariaDB with the versions flash_activity_get and flash_sku_get show --
 * the engine's records and the applier read them the same way.
 */
static void test_engine_terms_and_price_reach_mariadb_through_serve_with_their_versions(void **state)
{
	(void)state;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char *dir = wt_mkdtemp();
	snprintf(g_db, sizeof g_db, "fterms_%d_%d", (int)getpid(), ++g_dbseq);
	mysql_fresh_db(g_url, sizeof g_url, g_db);

	struct serve_thread t;
	memset(&t, 0, sizeof t);
	serve_opts_default(&t.o);
	t.o.segment = name;
	t.o.wal_dir = dir;
	t.o.log_level = PLOG_ERROR;
	t.o.idle_us_max = 200;
	t.o.mysql.url = g_url;
	t.o.mysql.drain_ms = 60000;
	t.o.reconcile.every_ms = 0;
	t.o.stop = &t.stop;
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 100, 1), FLASH_OK);
	struct flash_order_res r1, r2;
	assert_int_equal(t_order(h, 1, 1, 7, 1, 0, 0, &r1), FLASH_OK);
	struct flash_activity a;
	assert_int_equal(flash_activity_get(h, 1, &a), FLASH_OK);
	uint64_t added = a.version, av = 0, pv = 0;
	a.limit_per_user = 2;
	a.end_ns += 1000000000;
	assert_int_equal(flash_activity_update(h, &a, &av), FLASH_OK);
	assert_int_equal(flash_sku_price_set(h, 1, 1, 1999, &pv), FLASH_OK);
	assert_int_equal(t_order(h, 1, 1, 7, 1, 0, 0, &r2), FLASH_OK);
	assert_int_equal(r2.limit_slot, 2);
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);   /* drain, sync, let the applier finish */
	pthread_join(t.th, NULL);
	assert_int_equal(t.rc, 0);

	struct flash_activity now;
	struct flash_sku_info si;
	assert_int_equal(flash_activity_get(h, 1, &now), FLASH_OK);
	assert_int_equal(flash_sku_get(h, 1, 1, &si), FLASH_OK);
	assert_true(av > added && pv > av);
	assert_int_equal(now.version, av);
	assert_int_equal(si.version, pv);
	assert_int_equal(si.price, 1999);

	mdb_t *m = open_url();
	char want[512], buf[512];
	/* LSNs: 1 the add, 2 the sku, 3 the order, 4 the new terms, 5 the price */
	snprintf(want, sizeof want, "2/3/0/%u/0/%lld/%lld/1/%llu/4", FLASH_ACT_CANCEL_RETURNS_QUOTA,
	         (long long)now.start_ns, (long long)now.end_ns, (unsigned long long)av);
	assert_string_equal(act_row(m, buf, sizeof buf, 1), want);
	assert_int_equal(q_u64(m, "SELECT price FROM item_stock WHERE activity_id = 1 AND sku_id = 1"), 1999);
	assert_int_equal(q_u64(m, "SELECT version FROM item_stock WHERE activity_id = 1 AND sku_id = 1"), pv);
	assert_int_equal(q_u64(m, "SELECT price_lsn FROM item_stock WHERE activity_id = 1 AND sku_id = 1"), 5);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE activity_id = 1 AND sku_id = 1"), 98);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE user_id = 7 AND status = 'ACTIVE'"), 2);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);
	close_drop(m);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_terms_and_a_price_apply_on_the_batch_path_and_move_no_unit),
		cmocka_unit_test(test_record_by_record_path_writes_the_same_terms_and_price),
		cmocka_unit_test(test_terms_and_price_applied_again_change_nothing),
		cmocka_unit_test(test_terms_of_unknown_archived_or_rescoped_activity_and_price_of_unknown_sku_conflict),
		cmocka_unit_test(test_database_from_before_versions_is_migrated_once_and_takes_new_terms),
		cmocka_unit_test(test_feed_refill_gives_back_the_record_of_todays_terms_and_older_ones_as_gaps),
		cmocka_unit_test_teardown(test_engine_terms_and_price_reach_mariadb_through_serve_with_their_versions,
		                          t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
