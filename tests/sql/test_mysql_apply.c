/*
 * test_mysql_apply.c -- the MySQL applier against a real, private MariaDB.
 *
 * The server is started by the ctest fixture (tests/fixtures/mariadb.sh) in
 * $FLASH_MARIADB_DIR; every test works in a database of its own, created by
 * the applier and dropped at the end.  Each test states the behaviour it
 * proves in its name and checks exact row values.
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
#include <mysqld_error.h>

#include "feed.h"
#include "flashstock.h"
#include "mysql_apply.h"
#include "mysql_apply_fixture.h"

/* ---- record builders beside the fixture's ----------------------------------- */

static struct lsn_record r_cancel(uint64_t lsn, const struct lsn_record *order, int quota)
{
	struct lsn_record x = *order;
	x.lsn = lsn;
	x.rec.type = FLASH_REC_CANCEL;
	x.rec.flags = quota ? 1 : 0;
	return x;
}

/* A reservation: an order with a pay-by time in its value. */
static struct lsn_record r_reserve(uint64_t lsn, uint32_t a, uint32_t s, uint64_t order_no,
                                   uint64_t user, uint32_t qty, uint16_t slot)
{
	struct lsn_record x = r_order(lsn, a, s, order_no, user, qty, slot, 0);
	x.rec.value = 1700000900000000000 + (int64_t)order_no;
	return x;
}

/* CONFIRM or EXPIRE (@p type) of reservation @p order; @p quota: EXPIRE's
 * flag 1 (the limit slot went back too). */
static struct lsn_record r_settle(uint64_t lsn, uint16_t type, const struct lsn_record *order, int quota)
{
	struct lsn_record x = *order;
	x.lsn = lsn;
	x.rec.type = type;
	x.rec.request_id = 0;
	x.rec.flags = quota ? 1 : 0;
	x.rec.ts_ns = order->rec.ts_ns + 1000;
	return x;
}

/* A cancel of a reservation not paid (flag 2). */
static struct lsn_record r_cancel_unpaid(uint64_t lsn, const struct lsn_record *order, int quota)
{
	struct lsn_record x = r_cancel(lsn, order, quota);
	x.rec.flags |= 2;
	return x;
}

/* ---- tests ----------------------------------------------------------------- */

/* 100 units, 60 single-unit orders by 60 users, 5 cancels, a restock of 10. */
static size_t build_basic(struct lsn_record *v)
{
	size_t n = 0;
	uint64_t lsn = 1;
	v[n++] = r_activity(lsn++, 1, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[n++] = r_sku(lsn++, 1, 11, 100);
	for (uint64_t i = 1; i <= 60; i++)
		v[n++] = r_order(lsn++, 1, 11, 1000 + i, 500 + i, 1, 1, 0);
	for (size_t i = 0; i < 5; i++)
		v[n++] = r_cancel(lsn++, &v[2 + i * 3], 0);
	v[n++] = r_restock(lsn++, 1, 11, 10);
	return n;
}

static void test_orders_applied_exactly_once_and_stock_matches(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[80];
	size_t n = build_basic(v);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.applied, n);
	assert_int_equal(res.skipped, 0);
	assert_int_equal(res.refused, 0);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(res.applied_lsn, v[n - 1].lsn);

	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 60);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE status='CANCELLED'"), 5);
	assert_int_equal(q_u64(m, "SELECT total FROM item_stock WHERE activity_id=1 AND sku_id=11"), 110);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=1 AND sku_id=11"), 55);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE activity_id=1 AND sku_id=11"), 55);
	assert_int_equal(q_u64(m, "SELECT SUM(qty) FROM orders WHERE status='ACTIVE'"), 55);
	assert_int_equal(q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), v[n - 1].lsn);

	uint64_t lsn = 0;
	assert_int_equal(mdb_applied_lsn(m, &lsn), FLASH_OK);
	assert_int_equal(lsn, v[n - 1].lsn);
	struct mdb_stats st;
	assert_int_equal(mdb_stats_get(m, &st), FLASH_OK);
	assert_int_equal(st.orders, 60);
	assert_int_equal(st.applied, n);
	assert_int_equal(st.given_lsn, st.applied_lsn);
	close_drop(m);
}

static void test_replaying_the_same_batch_twice_changes_nothing(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[80];
	size_t n = build_basic(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	uint64_t before[6], after[6];
	fingerprint(m, before);

	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.applied, 0);
	assert_int_equal(res.skipped, n);
	fingerprint(m, after);
	assert_memory_equal(before, after, sizeof before);

	/* A fresh handle (an applier restarted after a crash) skips them too. */
	mdb_t *m2;
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log };
	assert_int_equal(mdb_open(&o, &m2), FLASH_OK);
	assert_int_equal(mdb_apply(m2, v, n, &res), FLASH_OK);
	assert_int_equal(res.skipped, n);
	mdb_close(m2);
	fingerprint(m, after);
	assert_memory_equal(before, after, sizeof before);
	close_drop(m);
}

static void test_overlapping_batch_applies_only_the_new_records(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[80];
	size_t n = build_basic(v);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, 30, &res), FLASH_OK);
	assert_int_equal(res.applied, 30);
	assert_int_equal(mdb_apply(m, v + 20, n - 20, &res), FLASH_OK);
	assert_int_equal(res.skipped, 10);
	assert_int_equal(res.applied, n - 30);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 60);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=1 AND sku_id=11"), 55);
	close_drop(m);
}

static void test_record_by_record_path_gives_the_same_rows_as_the_batch_path(void **state)
{
	(void)state;
	struct lsn_record v[82];
	size_t n = build_basic(v);
	/* One malformed record at the end forces the record-by-record path. */
	struct lsn_record bad = r_order(v[n - 1].lsn + 1, 1, 11, 9999, 77, 0, 1, 0);
	uint64_t fast[6], slow[6];

	mdb_t *m = open_fresh();
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	fingerprint(m, fast);
	close_drop(m);

	m = open_fresh();
	v[n] = bad;
	struct conflict c[4];
	res.conflicts = c;
	res.conflict_cap = 4;
	assert_int_equal(mdb_apply(m, v, n + 1, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.applied, n);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_INVALID);
	assert_int_equal(c[0].order_no, 9999);
	fingerprint(m, slow);
	/* Same rows; the conflict row and the applied LSN differ by design. */
	assert_memory_equal(fast, slow, 3 * sizeof fast[0]);
	assert_int_equal(slow[4], 1);
	assert_int_equal(slow[5], bad.lsn);
	close_drop(m);
}

static void test_oversell_is_refused_by_mysql_and_reported_with_its_order_number(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	size_t n = 0;
	v[n++] = r_activity(1, 2, 5, FLASH_SCOPE_ACTIVITY, 0);
	v[n++] = r_sku(2, 2, 21, 5);
	v[n++] = r_order(3, 2, 21, 71, 1, 3, 1, 0);
	v[n++] = r_order(4, 2, 21, 72, 2, 2, 1, 0);
	v[n++] = r_order(5, 2, 21, 73, 3, 1, 1, 0);   /* the sixth unit: oversell */
	v[n++] = r_order(6, 2, 21, 74, 4, 1, 1, 0);   /* still nothing left */
	struct conflict c[4];
	struct apply_result res = { .conflicts = c, .conflict_cap = 4 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.refused, 2);
	assert_int_equal(res.applied, 4);
	assert_int_equal(res.conflict_n, 2);
	assert_int_equal(c[0].kind, CONFLICT_OVERSELL);
	assert_int_equal(c[0].order_no, 73);
	assert_int_equal(c[0].lsn, 5);
	assert_int_equal(c[1].order_no, 74);
	assert_non_null(strstr(c[0].detail, "available 0"));
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=21"), 0);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=21"), 5);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 2);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE order_no IN (73, 74)"), 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts WHERE kind='oversell' AND order_no=73 AND lsn=5"), 1);
	assert_int_equal(q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), 6);
	assert_non_null(strstr(g_log, "order 73"));
	assert_non_null(strstr(g_log, "order 74"));
	struct mdb_stats st;
	mdb_stats_get(m, &st);
	assert_int_equal(st.stock_conflicts, 2);
	assert_int_equal(st.conflicts, 2);
	assert_int_equal(st.orders, 2);

	/* A direct UPDATE that would oversell matches no row. */
	assert_int_equal(q_exec(m, "UPDATE item_stock SET available=available-1, sold=sold+1"
	                           " WHERE sku_id=21 AND available>=1"), 0);
	assert_int_equal(mysql_affected_rows(mdb_conn(m)), 0);
	/* And the CHECK refuses stock out of balance. */
	assert_int_equal(q_exec(m, "UPDATE item_stock SET sold=sold+1 WHERE sku_id=21"), ER_CONSTRAINT_FAILED);
	close_drop(m);
}

static void test_duplicate_order_number_is_refused_and_the_rest_still_applies(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	v[0] = r_activity(1, 3, 2, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 3, 31, 10);
	v[2] = r_order(3, 3, 31, 500, 1, 1, 1, 0);
	assert_int_equal(mdb_apply(m, v, 3, NULL), FLASH_OK);

	v[3] = r_order(4, 3, 31, 501, 2, 1, 1, 0);
	v[4] = r_order(5, 3, 31, 500, 3, 2, 1, 0);   /* number 500 again */
	v[5] = r_order(6, 3, 31, 502, 4, 1, 1, 0);
	struct conflict c[2];
	struct apply_result res = { .conflicts = c, .conflict_cap = 2 };
	assert_int_equal(mdb_apply(m, v + 3, 3, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(res.applied, 2);
	assert_int_equal(c[0].kind, CONFLICT_DUP_ORDER);
	assert_int_equal(c[0].order_no, 500);
	assert_int_equal(c[0].lsn, 5);
	assert_non_null(strstr(c[0].detail, "Duplicate"));
	assert_int_equal(q_u64(m, "SELECT user_id FROM orders WHERE order_no=500"), 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 3);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=31"), 3);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=31"), 7);
	assert_non_null(strstr(g_log, "conflict duplicate_order: order 500"));
	struct mdb_stats st;
	mdb_stats_get(m, &st);
	assert_int_equal(st.dup_conflicts, 1);
	close_drop(m);
}

static void test_user_limit_holds_in_mysql_through_cancels(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[8];
	/* Activity 4: limit 1, cancels keep the quota (a flash sale).
	 * Activity 5: limit 1, cancels give the quota back. */
	v[0] = r_activity(1, 4, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_activity(2, 5, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA);
	v[2] = r_sku(3, 4, 41, 10);
	v[3] = r_sku(4, 5, 51, 10);
	v[4] = r_order(5, 4, 41, 600, 42, 1, 1, 0);
	v[5] = r_order(6, 5, 51, 601, 42, 1, 1, 0);
	assert_int_equal(mdb_apply(m, v, 6, NULL), FLASH_OK);

	const char *second =
		"INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot, biz_day,"
		" scope_sku, scope_day, created_ns, lsn) VALUES (%d, %d, %d, 42, 1, 1, 0, 0, 0, 0, 0)";
	char sql[512];
	snprintf(sql, sizeof sql, second, 700, 4, 41);
	assert_int_equal(q_exec(m, sql), ER_DUP_ENTRY);
	snprintf(sql, sizeof sql, second, 701, 5, 51);
	assert_int_equal(q_exec(m, sql), ER_DUP_ENTRY);

	/* The applier refuses a second order in the held slot as well. */
	struct lsn_record dup = r_order(7, 4, 41, 602, 42, 1, 1, 0);
	struct conflict c[1];
	struct apply_result res = { .conflicts = c, .conflict_cap = 1 };
	assert_int_equal(mdb_apply(m, &dup, 1, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_LIMIT);
	assert_int_equal(c[0].order_no, 602);
	assert_non_null(strstr(c[0].detail, "user_limit"));

	/* Cancel both; only activity 5 gives the slot back. */
	v[6] = r_cancel(8, &v[4], 0);
	v[7] = r_cancel(9, &v[5], 1);
	assert_int_equal(mdb_apply(m, v + 6, 2, NULL), FLASH_OK);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE status='CANCELLED'"), 2);
	snprintf(sql, sizeof sql, second, 700, 4, 41);
	assert_int_equal(q_exec(m, sql), ER_DUP_ENTRY);
	snprintf(sql, sizeof sql, second, 701, 5, 51);
	assert_int_equal(q_exec(m, sql), 0);
	/* ... and only once: a third holder of the freed slot is refused. */
	snprintf(sql, sizeof sql, second, 702, 5, 51);
	assert_int_equal(q_exec(m, sql), ER_DUP_ENTRY);
	close_drop(m);
}

/*
 * A limit slot given back and taken again within one batch -- ORDER, CANCEL
 * (quota back), ORDER by the same user, also when the first order came in an
 * earlier batch -- stays on the batch path (it is cut into runs) and ends
 * with one active order holding the slot.
 */
static void test_limit_slot_reused_within_a_batch_stays_on_the_batch_path(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[12];
	struct apply_result res = { 0 };
	v[0] = r_activity(1, 5, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA);
	v[1] = r_sku(2, 5, 51, 10);
	v[2] = r_order(3, 5, 51, 800, 42, 1, 1, 0);
	assert_int_equal(mdb_apply(m, v, 3, &res), FLASH_OK);
	v[3] = r_cancel(4, &v[2], 1);                 /* the earlier batch's order */
	v[4] = r_order(5, 5, 51, 801, 42, 2, 1, 0);
	v[5] = r_cancel(6, &v[4], 1);
	v[6] = r_order(7, 5, 51, 802, 42, 1, 1, 0);
	v[7] = r_order(8, 5, 51, 803, 43, 1, 1, 0);   /* another user: no cut */
	v[8] = r_cancel(9, &v[6], 1);
	v[9] = r_order(10, 5, 51, 804, 42, 3, 1, 0);
	assert_int_equal(mdb_apply(m, v + 3, 7, &res), FLASH_OK);
	assert_int_equal(res.applied, 7);
	assert_int_equal(res.refused, 0);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE status='ACTIVE'"), 2);
	assert_int_equal(q_u64(m, "SELECT order_no FROM orders WHERE status='ACTIVE' AND user_id=42"), 804);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=5 AND sku_id=51"), 4);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE activity_id=5 AND sku_id=51"), 6);
	close_drop(m);
}

static void test_day_and_sku_scopes_key_the_limit_in_mysql(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[12];
	size_t n = 0;
	v[n++] = r_activity(1, 6, 1, FLASH_SCOPE_DAY, 0);
	v[n++] = r_activity(2, 7, 1, FLASH_SCOPE_SKU, 0);
	v[n++] = r_sku(3, 6, 61, 10);
	v[n++] = r_sku(4, 7, 71, 10);
	v[n++] = r_sku(5, 7, 72, 10);
	v[n++] = r_order(6, 6, 61, 800, 9, 1, 1, 20000);   /* day 20000 */
	v[n++] = r_order(7, 6, 61, 801, 9, 1, 1, 20001);   /* next day: allowed */
	v[n++] = r_order(8, 7, 71, 802, 9, 1, 1, 20000);   /* sku 71 */
	v[n++] = r_order(9, 7, 72, 803, 9, 1, 1, 20000);   /* sku 72: allowed */
	v[n++] = r_order(10, 6, 61, 804, 9, 1, 1, 20001);  /* day 20001 again: refused */
	v[n++] = r_order(11, 7, 72, 805, 9, 1, 1, 20005);  /* sku 72 again: refused */
	struct conflict c[4];
	struct apply_result res = { .conflicts = c, .conflict_cap = 4 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.applied, n - 2);
	assert_int_equal(res.refused, 2);
	assert_int_equal(c[0].order_no, 804);
	assert_int_equal(c[0].kind, CONFLICT_LIMIT);
	assert_int_equal(c[1].order_no, 805);
	assert_int_equal(c[1].kind, CONFLICT_LIMIT);
	assert_int_equal(q_u64(m, "SELECT scope_day FROM orders WHERE order_no=801"), 20001);
	assert_int_equal(q_u64(m, "SELECT scope_sku FROM orders WHERE order_no=801"), 0);
	assert_int_equal(q_u64(m, "SELECT scope_sku FROM orders WHERE order_no=803"), 72);
	assert_int_equal(q_u64(m, "SELECT scope_day FROM orders WHERE order_no=803"), 0);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=6"), 2);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=72"), 1);
	close_drop(m);
}

static void test_second_cancel_returns_nothing_and_is_reported(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[6];
	v[0] = r_activity(1, 8, 3, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 8, 81, 10);
	v[2] = r_order(3, 8, 81, 900, 5, 4, 1, 0);
	v[3] = r_cancel(4, &v[2], 0);
	v[4] = r_cancel(5, &v[2], 0);
	struct conflict c[2];
	struct apply_result res = { .conflicts = c, .conflict_cap = 2 };
	assert_int_equal(mdb_apply(m, v, 5, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_CANCEL);
	assert_int_equal(c[0].order_no, 900);
	assert_int_equal(c[0].lsn, 5);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=81"), 10);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=81"), 0);
	close_drop(m);
}

static void test_restock_below_zero_is_refused(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[5];
	v[0] = r_activity(1, 9, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 9, 91, 3);
	v[2] = r_order(3, 9, 91, 950, 1, 2, 1, 0);
	v[3] = r_restock(4, 9, 91, -2);    /* only 1 available */
	v[4] = r_restock(5, 9, 91, -1);
	struct conflict c[2];
	struct apply_result res = { .conflicts = c, .conflict_cap = 2 };
	assert_int_equal(mdb_apply(m, v, 5, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_RESTOCK);
	assert_int_equal(c[0].lsn, 4);
	assert_int_equal(q_u64(m, "SELECT total FROM item_stock WHERE sku_id=91"), 2);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=91"), 0);
	close_drop(m);
}

/* The aggregated stock update must refuse what record-by-record refuses even
 * when the batch's net change fits: sell 2 of 2, restock 5 ... with an order
 * of 3 before the restock. */
static void test_batch_path_checks_the_running_deficit_not_the_net_change(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[5];
	v[0] = r_activity(1, 10, 5, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 10, 101, 2);
	assert_int_equal(mdb_apply(m, v, 2, NULL), FLASH_OK);
	v[2] = r_order(3, 10, 101, 960, 1, 3, 1, 0);   /* 3 of 2: oversell */
	v[3] = r_restock(4, 10, 101, 5);
	struct conflict c[1];
	struct apply_result res = { .conflicts = c, .conflict_cap = 1 };
	assert_int_equal(mdb_apply(m, v + 2, 2, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].order_no, 960);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=101"), 7);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=101"), 0);
	close_drop(m);
}

/* More than a few skus in a batch go through one joined UPDATE: the same
 * values, and the same refusal when one sku would oversell. */
static void test_many_skus_in_one_batch_update_each_row_exactly(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[128];
	size_t n = 0;
	uint64_t lsn = 1;
	v[n++] = r_activity(lsn++, 12, 1, FLASH_SCOPE_ACTIVITY, 0);
	for (uint32_t s = 1; s <= 10; s++)
		v[n++] = r_sku(lsn++, 12, s, 10);       /* 10 units each */
	for (uint32_t i = 0; i < 100; i++)          /* sku s gets s orders... */
		if (i % 10 + 1 <= 10 && (i / 10) < i % 10 + 1)
			v[n++] = r_order(lsn++, 12, i % 10 + 1, 2000 + i, 3000 + i, 1, 1, 0);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(res.refused, 0);
	for (uint32_t s = 1; s <= 10; s++) {
		assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=12 AND sku_id=%u", s), s);
		assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE activity_id=12 AND sku_id=%u", s),
		                 10 - s);
	}
	/* Next batch: one more unit of every sku, two more of sku 10 (sold out). */
	size_t k = 0;
	struct lsn_record w[16];
	for (uint32_t s = 1; s <= 10; s++)
		w[k++] = r_order(lsn++, 12, s, 4000 + s, 5000 + s, 1, 1, 0);
	w[k++] = r_order(lsn++, 12, 10, 4100, 5100, 1, 1, 0);
	struct conflict c[4];
	struct apply_result res2 = { .conflicts = c, .conflict_cap = 4 };
	assert_int_equal(mdb_apply(m, w, k, &res2), FLASH_OK);
	assert_int_equal(res2.slow_path, 1);
	assert_int_equal(res2.refused, 2);
	assert_int_equal(c[0].order_no, 4010);
	assert_int_equal(c[0].kind, CONFLICT_OVERSELL);
	assert_int_equal(c[1].order_no, 4100);
	for (uint32_t s = 1; s <= 9; s++)
		assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=12 AND sku_id=%u", s), s + 1);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=12 AND sku_id=10"), 10);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE activity_id=12 AND sku_id=10"), 0);
	close_drop(m);
}

/* A refused ACTIVITY record must not lend its scope to the batch's orders:
 * the scope comes from the row MySQL holds. */
static void test_refused_activity_does_not_change_the_scope_of_orders(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[4];
	v[0] = r_activity(1, 20, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 20, 201, 5);
	assert_int_equal(mdb_apply(m, v, 2, NULL), FLASH_OK);
	v[2] = r_activity(3, 20, 1, FLASH_SCOPE_DAY, 0);      /* id taken: refused */
	v[3] = r_order(4, 20, 201, 1, 9, 1, 1, 19999);
	struct conflict c[2];
	struct apply_result res = { .conflicts = c, .conflict_cap = 2 };
	assert_int_equal(mdb_apply(m, v + 2, 2, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_CATALOG);
	assert_int_equal(c[0].lsn, 3);
	assert_int_equal(q_u64(m, "SELECT scope FROM activities WHERE activity_id=20"), FLASH_SCOPE_ACTIVITY);
	assert_int_equal(q_u64(m, "SELECT scope_day FROM orders WHERE order_no=1"), 0);
	close_drop(m);
}

/* Orders of many activities not in the applier's cache (a restarted
 * applier): every scope is loaded from MySQL, none refused. */
static void test_orders_of_many_uncached_activities_all_apply(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	const uint32_t acts = 1200;
	struct lsn_record *v = calloc(3 * acts, sizeof *v);
	assert_non_null(v);
	uint64_t lsn = 1;
	size_t n = 0;
	for (uint32_t a = 1; a <= acts; a++) {
		v[n++] = r_activity(lsn++, a, 1, a % 2 ? FLASH_SCOPE_SKU : FLASH_SCOPE_DAY, 0);
		v[n++] = r_sku(lsn++, a, 1, 3);
	}
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	mdb_close(m);            /* a new handle has an empty cache */
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log };
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	size_t first = n;
	for (uint32_t a = acts; a >= 1; a--)
		v[n++] = r_order(lsn++, a, 1, a, 77, 1, 1, 30000);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v + first, n - first, &res), FLASH_OK);
	assert_int_equal(res.refused, 0);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), acts);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE scope_sku=1 AND scope_day=0"), acts / 2);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE scope_sku=0 AND scope_day=30000"), acts / 2);
	free(v);
	close_drop(m);
}

static void test_order_or_restock_of_an_unknown_sku_is_a_catalog_conflict(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[4];
	v[0] = r_activity(1, 21, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_order(2, 21, 999, 31, 1, 1, 1, 0);
	v[2] = r_restock(3, 21, 999, 5);
	v[3] = r_order(4, 22, 1, 32, 2, 1, 1, 0);     /* unknown activity */
	struct conflict c[4];
	struct apply_result res = { .conflicts = c, .conflict_cap = 4 };
	assert_int_equal(mdb_apply(m, v, 4, &res), FLASH_OK);
	assert_int_equal(res.applied, 1);
	assert_int_equal(res.refused, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(c[i].kind, CONFLICT_CATALOG);
	assert_int_equal(c[0].order_no, 31);
	assert_non_null(strstr(c[0].detail, "unknown sku 999"));
	assert_int_equal(c[2].order_no, 32);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts WHERE kind='catalog'"), 3);
	close_drop(m);
}

/* The WAL numbers records 1, 2, 3...: a batch that would leave a hole is
 * refused before it changes anything, unless holes are declared fine. */
static void test_batch_leaving_an_lsn_hole_is_refused(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[6];
	v[0] = r_activity(1, 30, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 30, 301, 10);
	v[2] = r_order(3, 30, 301, 1, 1, 1, 1, 0);
	v[3] = r_order(4, 30, 301, 2, 2, 1, 1, 0);
	v[4] = r_order(5, 30, 301, 3, 3, 1, 1, 0);
	v[5] = r_order(7, 30, 301, 4, 4, 1, 1, 0);
	assert_int_equal(mdb_apply(m, v, 2, NULL), FLASH_OK);
	struct apply_result res = { 0 };
	/* 4.. after 2: record 3 missing. */
	assert_int_equal(mdb_apply(m, v + 3, 2, &res), FLASH_EMYSQL_GAP);
	assert_int_equal(res.applied_lsn, 2);
	assert_int_equal(res.applied, 0);
	/* 3, 4, 5, 7 inside one batch: 6 missing; nothing of the batch applies. */
	assert_int_equal(mdb_apply(m, v + 2, 4, &res), FLASH_EMYSQL_GAP);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 0);
	assert_int_equal(q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), 2);
	assert_non_null(strstr(g_log, "records 6..6 missing"));
	/* Without the hole it applies. */
	assert_int_equal(mdb_apply(m, v + 2, 3, &res), FLASH_OK);
	assert_int_equal(res.applied, 3);
	mdb_close(m);

	/* A handle that accepts holes (a stream with frames that are not records). */
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log, .lsn_gaps_ok = 1 };
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	assert_int_equal(mdb_apply(m, v + 5, 1, &res), FLASH_OK);
	assert_int_equal(res.applied, 1);
	assert_int_equal(q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), 7);
	close_drop(m);
}

static void test_lsns_must_increase(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[2];
	v[0] = r_activity(5, 11, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(5, 11, 111, 1);
	assert_int_equal(mdb_apply(m, v, 2, NULL), FLASH_EINVAL);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM activities"), 0);
	close_drop(m);
}

static void run_fixture(const char *cmd)
{
	char line[1024];
	const char *sh = getenv("FLASH_TEST_MARIADB_SH");
	assert_non_null(sh);
	snprintf(line, sizeof line, "'%s' %s '%s' >/dev/null", sh, cmd, mariadb_dir());
	assert_int_equal(system(line), 0);
}

static void test_mysql_down_then_back_applier_catches_up_without_loss(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[80];
	size_t n = build_basic(v);
	assert_int_equal(mdb_apply(m, v, 30, NULL), FLASH_OK);

	run_fixture("halt");
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v + 30, 20, &res), FLASH_EMYSQL_RETRY);
	assert_int_equal(res.applied, 0);
	struct mdb_stats st;
	mdb_stats_get(m, &st);
	assert_int_equal(st.given_lsn, v[49].lsn);
	assert_int_equal(st.applied_lsn, v[29].lsn);      /* lag = 20 records */
	assert_true(st.retryable_errors >= 1);

	/* The server comes back while the applier retries with backoff. */
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		usleep(700 * 1000);
		char line[1024];
		snprintf(line, sizeof line, "'%s' resume '%s' >/dev/null",
		         getenv("FLASH_TEST_MARIADB_SH"), mariadb_dir());
		_exit(system(line) == 0 ? 0 : 1);
	}
	int rc = mdb_apply_retry(m, v + 30, n - 30, &res, 60000);
	int status;
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, FLASH_OK);
	assert_int_equal(res.applied, n - 30);
	mdb_stats_get(m, &st);
	assert_int_equal(st.applied_lsn, v[n - 1].lsn);
	assert_int_equal(st.given_lsn, st.applied_lsn);
	assert_true(st.reconnects >= 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 60);
	assert_int_equal(q_u64(m, "SELECT COUNT(DISTINCT order_no) FROM orders"), 60);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=11"), 55);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=11"), 55);
	close_drop(m);
}

/* kill -9 of the server while a large batch is in flight (or just after it
 * committed: either way), then InnoDB recovery: replaying everything from
 * the first LSN leaves each order exactly once. */
static void test_server_killed_mid_batch_recovers_exactly_once(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	const size_t n = 60002;
	struct lsn_record *v = calloc(n, sizeof *v);
	assert_non_null(v);
	v[0] = r_activity(1, 1, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[1] = r_sku(2, 1, 11, 100000);
	for (size_t i = 2; i < n; i++)
		v[i] = r_order(i + 1, 1, 11, i, 1000000 + i, 1, 1, 0);
	assert_int_equal(mdb_apply(m, v, 10002, NULL), FLASH_OK);

	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		usleep(200 * 1000);
		char line[1024];
		snprintf(line, sizeof line, "'%s' crash '%s' >/dev/null 2>&1",
		         getenv("FLASH_TEST_MARIADB_SH"), mariadb_dir());
		_exit(system(line) == 0 ? 0 : 1);
	}
	int rc = mdb_apply(m, v + 10002, n - 10002, NULL);
	int status;
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fprintf(stderr, "    batch in flight at the kill: %s\n",
	        rc == FLASH_OK ? "committed before it" : flash_strerror(rc));
	assert_true(rc == FLASH_OK || rc == FLASH_EMYSQL_RETRY);
	run_fixture("resume");

	/* Everything again, from LSN 1, as an applier restarted from the WAL. */
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply_retry(m, v, n, &res, 60000), FLASH_OK);
	assert_int_equal(res.applied + res.skipped, n);
	assert_int_equal(res.refused, 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), n - 2);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=11"), n - 2);
	assert_int_equal(q_u64(m, "SELECT available FROM item_stock WHERE sku_id=11"), 100000 - (n - 2));
	assert_int_equal(q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), n);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);
	free(v);
	close_drop(m);
}

/* A server that stops answering (SIGSTOP) is "slow": the applier gives up
 * after its read timeout with a retryable error, and catches up once the
 * server answers again. */
static void test_hung_server_times_out_retryable_then_catches_up(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	mdb_close(m);
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log, .rw_timeout_s = 1, .connect_timeout_s = 1 };
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	struct lsn_record v[80];
	size_t n = build_basic(v);
	assert_int_equal(mdb_apply(m, v, 20, NULL), FLASH_OK);

	run_fixture("freeze");
	struct apply_result res = { 0 };
	int rc = mdb_apply(m, v + 20, 20, &res);
	run_fixture("thaw");
	assert_int_equal(rc, FLASH_EMYSQL_RETRY);
	assert_int_equal(res.applied, 0);
	assert_int_equal(mdb_apply_retry(m, v + 20, n - 20, &res, 60000), FLASH_OK);
	assert_int_equal(res.applied, n - 20);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 60);
	assert_int_equal(q_u64(m, "SELECT sold FROM item_stock WHERE sku_id=11"), 55);
	assert_int_equal(q_u64(m, "SELECT lsn FROM applied_lsn WHERE stream='wal'"), v[n - 1].lsn);
	close_drop(m);
}

/* ---- reservations ------------------------------------------------------------ */

/* Units of (activity, sku) as "available/reserved/sold/total". */
static void stock_units(mdb_t *m, uint32_t a, uint32_t s, char *buf, size_t len)
{
	snprintf(buf, len, "%llu/%llu/%llu/%llu",
	         (unsigned long long)q_u64(m, "SELECT available FROM item_stock WHERE activity_id=%u AND sku_id=%u", a, s),
	         (unsigned long long)q_u64(m, "SELECT reserved FROM item_stock WHERE activity_id=%u AND sku_id=%u", a, s),
	         (unsigned long long)q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=%u AND sku_id=%u", a, s),
	         (unsigned long long)q_u64(m, "SELECT total FROM item_stock WHERE activity_id=%u AND sku_id=%u", a, s));
}

/* A checksum of every order row's state, for "the same rows". */
static uint64_t orders_sum(mdb_t *m)
{
	return q_u64(m, "SELECT COALESCE(SUM(CRC32(CONCAT_WS(',', order_no, status, quota_returned,"
	                " IFNULL(pay_by_ns, 'n'), IFNULL(cancel_lsn, 'n'), IFNULL(confirm_lsn, 'n'),"
	                " IFNULL(active_key, 'n'))) + order_no), 0) FROM orders");
}

/* Activity 6 (limit 1, cancels return the quota), sku 61 of 20 units:
 * 1..4 reservations and a plain order, then their fates. */
static size_t build_reservations(struct lsn_record *v)
{
	size_t n = 0;
	v[n++] = r_activity(1, 6, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA);
	v[n++] = r_sku(2, 6, 61, 20);
	v[n++] = r_reserve(3, 6, 61, 901, 71, 2, 1);       /* paid in time */
	v[n++] = r_reserve(4, 6, 61, 902, 72, 3, 1);       /* expires, quota back */
	v[n++] = r_order(5, 6, 61, 903, 73, 1, 1, 0);      /* a plain order */
	v[n++] = r_reserve(6, 6, 61, 904, 74, 4, 1);       /* cancelled unpaid */
	v[n++] = r_reserve(7, 6, 61, 905, 75, 5, 1);       /* still waiting */
	v[n++] = r_settle(8, FLASH_REC_CONFIRM, &v[2], 0);
	v[n++] = r_settle(9, FLASH_REC_EXPIRE, &v[3], 1);
	v[n++] = r_cancel_unpaid(10, &v[5], 1);
	v[n++] = r_order(11, 6, 61, 906, 72, 1, 1, 0);     /* 72's slot came back with the expiry */
	return n;
}

/* The rows build_reservations() leaves, whichever path applied them. */
static void check_reservation_rows(mdb_t *m)
{
	char u[96];
	stock_units(m, 6, 61, u, sizeof u);
	assert_string_equal(u, "11/5/4/20");  /* 905 reserved; 901 + 903 + 906 sold */
	assert_int_equal(q_u64(m, "SELECT status+0 FROM orders WHERE order_no=901"), 1);   /* ACTIVE */
	assert_int_equal(q_u64(m, "SELECT confirm_lsn FROM orders WHERE order_no=901"), 8);
	assert_int_equal(q_u64(m, "SELECT pay_by_ns FROM orders WHERE order_no=901"), 1700000900000000901ull);
	assert_int_equal(q_u64(m, "SELECT cancel_lsn IS NULL FROM orders WHERE order_no=901"), 1);
	assert_int_equal(q_u64(m, "SELECT status='EXPIRED' AND quota_returned=1 AND cancel_lsn=9"
	                          " AND active_key IS NULL AND confirm_lsn IS NULL FROM orders WHERE order_no=902"), 1);
	assert_int_equal(q_u64(m, "SELECT status='ACTIVE' AND pay_by_ns IS NULL FROM orders WHERE order_no=903"), 1);
	assert_int_equal(q_u64(m, "SELECT status='CANCELLED' AND cancel_lsn=10 AND active_key IS NULL"
	                          " FROM orders WHERE order_no=904"), 1);
	assert_int_equal(q_u64(m, "SELECT status='RESERVED' AND active_key=1 FROM orders WHERE order_no=905"), 1);
	assert_int_equal(q_u64(m, "SELECT status='ACTIVE' FROM orders WHERE order_no=906"), 1);
}

/*
 * A reservation takes its units out of available into reserved and holds
 * its row RESERVED; its CONFIRM makes it ACTIVE (confirm_lsn) and moves the
 * units on to sold; its EXPIRE (EXPIRED, cancel_lsn, the quota as the
 * record says) and a cancel of it unpaid move them back to available -- on
 * the batch path, in one batch or over several, and a replay changes
 * nothing.
 */
static void test_reservation_units_move_reserved_to_sold_or_back_to_available(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build_reservations(v);
	struct apply_result res = { 0 };
	char u[96];

	assert_int_equal(mdb_apply(m, v, 7, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	stock_units(m, 6, 61, u, sizeof u);
	assert_string_equal(u, "5/14/1/20");  /* four reservations held, one order sold */
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE status='RESERVED' AND active_key=1"), 4);
	assert_int_equal(mdb_apply(m, v + 7, n - 7, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(res.refused, 0);
	check_reservation_rows(m);
	uint64_t sum = orders_sum(m);

	/* a replay of the whole history: every record skipped, nothing moves */
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.skipped, n);
	check_reservation_rows(m);
	assert_int_equal(orders_sum(m), sum);
	close_drop(m);

	/* all in one batch: the same rows */
	m = open_fresh();
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(res.refused, 0);
	check_reservation_rows(m);
	assert_int_equal(orders_sum(m), sum);
	close_drop(m);
}

/* Many skus in one batch (the joined stock UPDATE): each sku's reserved
 * units move as its own records say. */
static void test_reserved_units_of_many_skus_move_in_one_joined_update(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[40];
	size_t n = 0;
	uint64_t lsn = 1;
	struct apply_result res = { 0 };
	v[n++] = r_activity(lsn++, 6, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA);
	for (uint32_t k = 1; k <= 6; k++)
		v[n++] = r_sku(lsn++, 6, k, 10);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	size_t first = n;
	for (uint32_t k = 1; k <= 6; k++) {
		v[n] = r_reserve(lsn++, 6, k, 700 + k, 40 + k, k, 1);
		n++;
	}
	for (uint32_t k = 1; k <= 6; k++) {         /* odd skus paid, even ones expired */
		v[n] = r_settle(lsn++, k % 2 ? FLASH_REC_CONFIRM : FLASH_REC_EXPIRE, &v[first + k - 1], 1);
		n++;
	}
	v[n] = r_reserve(lsn++, 6, 6, 799, 49, 2, 1);   /* one left waiting on sku 6 */
	n++;
	assert_int_equal(mdb_apply(m, v + first, n - first, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 0);
	assert_int_equal(res.refused, 0);
	for (uint32_t k = 1; k <= 6; k++) {
		char u[96], want[96];
		stock_units(m, 6, k, u, sizeof u);
		if (k % 2)
			snprintf(want, sizeof want, "%u/0/%u/10", 10 - k, k);
		else
			snprintf(want, sizeof want, "%u/%u/0/10", k == 6 ? 8 : 10, k == 6 ? 2 : 0);
		assert_string_equal(u, want);
	}
	close_drop(m);
}

/* Record by record (a malformed record sends the batch there), the same
 * history gives the same rows and units as the batch path. */
static void test_record_by_record_path_settles_reservations_as_the_batch_path(void **state)
{
	(void)state;
	struct lsn_record v[16];
	size_t n = build_reservations(v);
	v[n] = r_order(n + 1, 6, 61, 999, 79, 0, 1, 0);   /* qty 0 */
	struct conflict c[2];
	struct apply_result res = { .conflicts = c, .conflict_cap = 2 };

	mdb_t *m = open_fresh();
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	uint64_t sum = orders_sum(m);
	close_drop(m);

	m = open_fresh();
	assert_int_equal(mdb_apply(m, v, n + 1, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_INVALID);
	check_reservation_rows(m);
	assert_int_equal(orders_sum(m), sum);
	close_drop(m);
}

/*
 * A RESERVED row holds its user's limit slot like an ACTIVE one; an
 * expiry that keeps the quota keeps it held.  A CONFIRM or EXPIRE whose
 * order is missing, a plain order, or settled already, and a cancel that
 * says unpaid of a paid order, are conflicts (with their order number and
 * kind) that move no unit; the rest of the batch applies.
 */
static void test_settling_what_is_not_reserved_is_a_conflict_and_moves_nothing(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16], w[8];
	struct conflict c[8];
	struct apply_result res = { .conflicts = c, .conflict_cap = 8 };
	char u[96];

	v[0] = r_activity(1, 7, 1, FLASH_SCOPE_ACTIVITY, 0);   /* cancels keep the quota */
	v[1] = r_sku(2, 7, 71, 10);
	v[2] = r_reserve(3, 7, 71, 950, 81, 2, 1);
	v[3] = r_order(4, 7, 71, 951, 82, 1, 1, 0);
	v[4] = r_reserve(5, 7, 71, 952, 83, 1, 1);
	v[5] = r_settle(6, FLASH_REC_EXPIRE, &v[4], 0);         /* expired, quota kept */
	assert_int_equal(mdb_apply(m, v, 6, &res), FLASH_OK);
	assert_int_equal(res.refused, 0);

	w[0] = r_reserve(7, 7, 71, 953, 81, 1, 1);               /* 81's slot is held by 950 */
	w[1] = r_order(8, 7, 71, 954, 83, 1, 1, 0);              /* 83's too, by the expired 952 */
	w[2] = r_settle(9, FLASH_REC_CONFIRM, &v[3], 0);         /* a plain order */
	w[3] = r_settle(10, FLASH_REC_EXPIRE, &v[4], 0);         /* expired already */
	w[4] = r_settle(11, FLASH_REC_CONFIRM, &v[2], 0);        /* applies */
	w[5] = r_settle(12, FLASH_REC_CONFIRM, &v[2], 0);        /* confirmed already */
	w[6] = r_cancel_unpaid(13, &v[2], 0);                    /* it was paid */
	w[7] = r_settle(14, FLASH_REC_EXPIRE, &v[2], 0);
	w[7].rec.order_no = 4444;                                /* no such order */
	assert_int_equal(mdb_apply(m, w, 8, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.applied, 1);
	assert_int_equal(res.refused, 7);
	static const int kind[] = { CONFLICT_LIMIT, CONFLICT_LIMIT, CONFLICT_CONFIRM, CONFLICT_EXPIRE,
	                            CONFLICT_CONFIRM, CONFLICT_CANCEL, CONFLICT_EXPIRE };
	static const uint64_t ono[] = { 953, 954, 951, 952, 950, 950, 4444 };
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(c[i].kind, kind[i]);
		assert_int_equal(c[i].order_no, ono[i]);
	}
	assert_int_equal(c[2].type, FLASH_REC_CONFIRM);
	assert_non_null(strstr(c[2].detail, "no reserved order 951"));
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts WHERE kind='confirm'"), 2);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts WHERE kind='expire'"), 2);
	stock_units(m, 7, 71, u, sizeof u);
	assert_string_equal(u, "7/0/3/10");   /* 950 paid (2) and 951 (1); 952's unit back */
	assert_int_equal(q_u64(m, "SELECT status='ACTIVE' AND confirm_lsn=11 FROM orders WHERE order_no=950"), 1);
	assert_int_equal(q_u64(m, "SELECT status='EXPIRED' AND quota_returned=0 AND active_key=1 AND cancel_lsn=6"
	                          " FROM orders WHERE order_no=952"), 1);
	close_drop(m);
}

/*
 * A feed refilled from MariaDB gives a reservation's records back at their
 * LSNs: the ORDER with its pay-by time (a plain order with none), its
 * CONFIRM (confirm_lsn), its EXPIRE (an EXPIRED row's cancel_lsn, quota
 * flag and pay-by time) and a cancel of it unpaid (flags 2), the times of
 * the last three not kept.
 */
static void test_feed_refill_gives_reservations_their_confirms_and_expiries_back(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	size_t n = build_reservations(v);
	assert_int_equal(mdb_apply(m, v, n, NULL), FLASH_OK);
	char url[512];
	url_for(url, sizeof url, g_db);
	feed_refill_t *r;
	assert_int_equal(feed_refill_open(url, "wal", &r), FLASH_OK);
	struct flash_feed_rec *got = NULL;
	size_t k = 0;
	uint64_t applied = 0;
	assert_int_equal(feed_refill_fetch(r, 1, n, &got, &k, &applied), FLASH_OK);
	assert_int_equal(k, n);                     /* every LSN a record */
	for (size_t i = 0; i < k; i++) {
		const struct flash_record *x = &got[i].fr_rec, *w = &v[i].rec;
		assert_int_equal(got[i].fr_lsn, v[i].lsn);
		assert_int_equal(x->type, w->type);
		if (w->type == FLASH_REC_ACTIVITY || w->type == FLASH_REC_SKU)
			continue;
		assert_int_equal(x->order_no, w->order_no);
		assert_int_equal(x->user_id, w->user_id);
		assert_int_equal(x->qty, w->qty);
		assert_int_equal(x->limit_slot, w->limit_slot);
		assert_int_equal(x->flags, w->type == FLASH_REC_CONFIRM ? 0 : w->flags);
		/* a cancel's value is not a pay-by time: 0 */
		assert_int_equal(x->value, w->type == FLASH_REC_CANCEL ? 0 : w->value);
		assert_int_equal(!!(got[i].fr_missing & FLASH_FEED_MISS_TS), w->type != FLASH_REC_ORDER);
		if (w->type == FLASH_REC_ORDER)
			assert_int_equal(x->ts_ns, w->ts_ns);
	}
	assert_int_equal(got[7].fr_rec.type, FLASH_REC_CONFIRM);
	assert_int_equal(got[8].fr_rec.type, FLASH_REC_EXPIRE);
	assert_int_equal(got[8].fr_rec.flags, 1);
	assert_int_equal(got[9].fr_rec.flags, 3);  /* quota back, and it was not paid */
	assert_int_equal(got[4].fr_rec.value, 0);  /* 903: a plain order */
	free(got);
	feed_refill_close(r);
	close_drop(m);
}

/*
 * A database made before reservations (status ACTIVE|CANCELLED, no
 * reserved units, the old balance check) is migrated when the applier
 * opens it: its rows stay, the new columns and states exist, the balance
 * counts reserved units; opening it again changes nothing; reservations
 * then apply.
 */
static void test_database_from_before_reservations_is_migrated_once(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	assert_int_equal(q_exec(m, "DROP TABLE orders, item_stock"), 0);
	assert_int_equal(q_exec(m,
		"CREATE TABLE item_stock (activity_id INT UNSIGNED NOT NULL, sku_id INT UNSIGNED NOT NULL,"
		" total BIGINT UNSIGNED NOT NULL, available BIGINT UNSIGNED NOT NULL,"
		" sold BIGINT UNSIGNED NOT NULL DEFAULT 0, shards INT UNSIGNED NOT NULL DEFAULT 1,"
		" created_lsn BIGINT UNSIGNED NOT NULL, last_lsn BIGINT UNSIGNED NOT NULL,"
		" PRIMARY KEY (activity_id, sku_id), CONSTRAINT stock_balance CHECK (available + sold = total)"
		") ENGINE=InnoDB"), 0);
	assert_int_equal(q_exec(m,
		"CREATE TABLE orders (order_no BIGINT UNSIGNED NOT NULL PRIMARY KEY,"
		" activity_id INT UNSIGNED NOT NULL, sku_id INT UNSIGNED NOT NULL, user_id BIGINT UNSIGNED NOT NULL,"
		" qty INT UNSIGNED NOT NULL, limit_slot SMALLINT UNSIGNED NOT NULL, biz_day INT UNSIGNED NOT NULL,"
		" scope_sku INT UNSIGNED NOT NULL, scope_day INT UNSIGNED NOT NULL,"
		" status ENUM('ACTIVE','CANCELLED') NOT NULL DEFAULT 'ACTIVE',"
		" quota_returned TINYINT UNSIGNED NOT NULL DEFAULT 0,"
		" active_key TINYINT UNSIGNED AS (IF(status = 'ACTIVE' OR quota_returned = 0, 1, NULL)) PERSISTENT,"
		" request_id BIGINT UNSIGNED NOT NULL DEFAULT 0, created_ns BIGINT NOT NULL,"
		" lsn BIGINT UNSIGNED NOT NULL, cancel_lsn BIGINT UNSIGNED NULL,"
		" UNIQUE KEY user_limit (activity_id, user_id, scope_sku, scope_day, limit_slot, active_key)"
		") ENGINE=InnoDB"), 0);
	struct lsn_record v[8];
	/* rows as the applier of before wrote them: LSNs 1..5 an activity, a
	 * sku, an order cancelled (2 units back) and an order of 1 unit */
	v[0] = r_activity(1, 6, 1, FLASH_SCOPE_ACTIVITY, 0);
	assert_int_equal(mdb_apply(m, v, 1, NULL), FLASH_OK);
	assert_int_equal(q_exec(m, "INSERT INTO item_stock VALUES (6, 61, 10, 9, 1, 1, 2, 5)"), 0);
	assert_int_equal(q_exec(m, "INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot,"
	                           " biz_day, scope_sku, scope_day, status, created_ns, lsn, cancel_lsn) VALUES"
	                           " (960, 6, 61, 91, 2, 1, 0, 0, 0, 'CANCELLED', 1, 3, 4),"
	                           " (961, 6, 61, 92, 1, 1, 0, 0, 0, 'ACTIVE', 1, 5, NULL)"), 0);
	assert_int_equal(q_exec(m, "UPDATE applied_lsn SET lsn = 5"), 0);
	mdb_close(m);

	for (int round = 0; round < 2; round++) {
		char url[512];
		url_for(url, sizeof url, g_db);
		struct mdb_opts o = { .url = url, .log = cap_log };
		assert_int_equal(mdb_open(&o, &m), FLASH_OK);
		assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=DATABASE()"
		                          " AND ((TABLE_NAME='orders' AND COLUMN_NAME IN ('pay_by_ns','confirm_lsn'))"
		                          " OR (TABLE_NAME='item_stock' AND COLUMN_NAME='reserved'))"), 3);
		assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=DATABASE()"
		                          " AND TABLE_NAME='orders' AND COLUMN_NAME='status'"
		                          " AND COLUMN_TYPE=\"enum('ACTIVE','CANCELLED','RESERVED','EXPIRED')\""), 1);
		assert_int_equal(q_u64(m, "SELECT GROUP_CONCAT(CONSTRAINT_NAME) = 'stock_units' FROM"
		                          " information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=DATABASE()"
		                          " AND TABLE_NAME='item_stock'"), 1);
		assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE status='CANCELLED' AND order_no=960"), 1);
		assert_int_equal(q_u64(m, "SELECT active_key FROM orders WHERE order_no=961"), 1);
		if (round == 0)
			mdb_close(m);
	}
	/* the balance counts reserved units: a row that leaves them out is refused */
	assert_int_equal(q_exec(m, "UPDATE item_stock SET reserved = 1 WHERE sku_id = 61"), ER_CONSTRAINT_FAILED);
	v[5] = r_reserve(6, 6, 61, 962, 93, 3, 1);
	v[6] = r_settle(7, FLASH_REC_CONFIRM, &v[5], 0);
	v[7] = r_reserve(8, 6, 61, 963, 94, 2, 1);
	struct apply_result res = { 0 };
	assert_int_equal(mdb_apply(m, v + 5, 3, &res), FLASH_OK);
	assert_int_equal(res.refused, 0);
	char u[96];
	stock_units(m, 6, 61, u, sizeof u);
	assert_string_equal(u, "4/2/4/10");
	close_drop(m);
}

static void test_url_password_is_masked_everywhere(void **state)
{
	(void)state;
	char buf[256];
	/* the whole user info is masked, user included */
	mdb_url_mask("mysql://flash:s3cr3t@localhost/db?socket=/x/s.sock", buf, sizeof buf);
	assert_string_equal(buf, "mysql://***@localhost/db?socket=/x/s.sock");
	mdb_url_mask("mysql://flash@localhost/db", buf, sizeof buf);
	assert_string_equal(buf, "mysql://***@localhost/db");
	mdb_url_mask("mysql://u:p%40ss@w@localhost/db", buf, sizeof buf);
	assert_string_equal(buf, "mysql://***@localhost/db");
	/* a '/' or '?' in a password that was not percent-encoded */
	mdb_url_mask("mysql://flash:s3/cr3t@localhost/db", buf, sizeof buf);
	assert_string_equal(buf, "mysql://***@localhost/db");
	mdb_url_mask("mysql://flash:a?b/c@localhost/db?socket=/x", buf, sizeof buf);
	assert_string_equal(buf, "mysql://***@localhost/db?socket=/x");
	mdb_url_mask("mysql://localhost/db", buf, sizeof buf);
	assert_string_equal(buf, "mysql://localhost/db");
	/* ... and the check of such a URL says why without quoting it */
	char why[256];
	assert_int_equal(mdb_url_check("mysql://flash:s3/cr3t@localhost/db", why, sizeof why),
	                 FLASH_EMYSQL_CONFIG);
	assert_null(strstr(why, "cr3t"));
	assert_non_null(strstr(why, "percent-encoded"));
	assert_int_equal(mdb_url_check("mysql://flash:s3%2Fcr3t@localhost/db?socket=/x", why,
	                                       sizeof why), FLASH_OK);

	/* A wrong password: refused as a configuration error, never printed. */
	char url[512];
	snprintf(url, sizeof url, "mysql://flash:Wr0ngPassw0rd@localhost/flashstock?socket=%s/mysqld.sock",
	         mariadb_dir());
	struct mdb_opts o = { .url = url, .log = cap_log };
	mdb_t *m = NULL;
	g_log_len = 0;
	g_log[0] = 0;
	assert_int_equal(mdb_open(&o, &m), FLASH_EMYSQL_CONFIG);
	assert_null(m);
	assert_true(g_log_len > 0);
	assert_null(strstr(g_log, "Wr0ngPassw0rd"));
	assert_non_null(strstr(g_log, "mysql://***@localhost"));
	assert_null(strstr(g_log, "flash:"));
}

static void test_option_file_and_bad_urls(void **state)
{
	(void)state;
	char file[512];
	snprintf(file, sizeof file, "%s/client.cnf", mariadb_dir());
	struct mdb_opts o = { .defaults_file = file, .stream = "optfile_test", .log = cap_log };
	mdb_t *m = NULL;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	uint64_t lsn = 99;
	assert_int_equal(mdb_applied_lsn(m, &lsn), FLASH_OK);
	assert_int_equal(lsn, 0);
	assert_non_null(strstr(mdb_where(m), "option file"));
	assert_int_equal(q_u64(m, "SELECT CURRENT_USER() LIKE 'flash@%%'"), 1);
	mdb_close(m);

	struct mdb_opts bad = { .url = "http://localhost/x", .log = cap_log };
	assert_int_equal(mdb_open(&bad, &m), FLASH_EMYSQL_CONFIG);
	bad.url = "mysql://localhost/db?port=3306";
	assert_int_equal(mdb_open(&bad, &m), FLASH_EMYSQL_CONFIG);
	bad.url = "mysql://localhost/db";
	bad.stream = "bad'stream";
	assert_int_equal(mdb_open(&bad, &m), FLASH_EINVAL);

	/* A server that is not there: retryable, and the handle is kept. */
	struct mdb_opts gone = { .url = "mysql://root@localhost/x?socket=/nonexistent/s.sock",
	                                 .log = cap_log };
	assert_int_equal(mdb_open(&gone, &m), FLASH_EMYSQL_RETRY);
	assert_non_null(m);
	struct lsn_record r = r_activity(1, 1, 1, 0, 0);
	assert_int_equal(mdb_apply(m, &r, 1, NULL), FLASH_EMYSQL_RETRY);
	mdb_close(m);
}

int main(void)
{
	mariadb_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orders_applied_exactly_once_and_stock_matches),
		cmocka_unit_test(test_replaying_the_same_batch_twice_changes_nothing),
		cmocka_unit_test(test_overlapping_batch_applies_only_the_new_records),
		cmocka_unit_test(test_record_by_record_path_gives_the_same_rows_as_the_batch_path),
		cmocka_unit_test(test_oversell_is_refused_by_mysql_and_reported_with_its_order_number),
		cmocka_unit_test(test_duplicate_order_number_is_refused_and_the_rest_still_applies),
		cmocka_unit_test(test_user_limit_holds_in_mysql_through_cancels),
		cmocka_unit_test(test_limit_slot_reused_within_a_batch_stays_on_the_batch_path),
		cmocka_unit_test(test_day_and_sku_scopes_key_the_limit_in_mysql),
		cmocka_unit_test(test_second_cancel_returns_nothing_and_is_reported),
		cmocka_unit_test(test_restock_below_zero_is_refused),
		cmocka_unit_test(test_batch_path_checks_the_running_deficit_not_the_net_change),
		cmocka_unit_test(test_many_skus_in_one_batch_update_each_row_exactly),
		cmocka_unit_test(test_refused_activity_does_not_change_the_scope_of_orders),
		cmocka_unit_test(test_orders_of_many_uncached_activities_all_apply),
		cmocka_unit_test(test_order_or_restock_of_an_unknown_sku_is_a_catalog_conflict),
		cmocka_unit_test(test_batch_leaving_an_lsn_hole_is_refused),
		cmocka_unit_test(test_lsns_must_increase),
		cmocka_unit_test(test_reservation_units_move_reserved_to_sold_or_back_to_available),
		cmocka_unit_test(test_reserved_units_of_many_skus_move_in_one_joined_update),
		cmocka_unit_test(test_record_by_record_path_settles_reservations_as_the_batch_path),
		cmocka_unit_test(test_settling_what_is_not_reserved_is_a_conflict_and_moves_nothing),
		cmocka_unit_test(test_database_from_before_reservations_is_migrated_once),
		cmocka_unit_test(test_feed_refill_gives_reservations_their_confirms_and_expiries_back),
		cmocka_unit_test(test_url_password_is_masked_everywhere),
		cmocka_unit_test(test_option_file_and_bad_urls),
		cmocka_unit_test(test_mysql_down_then_back_applier_catches_up_without_loss),
		cmocka_unit_test(test_server_killed_mid_batch_recovers_exactly_once),
		cmocka_unit_test(test_hung_server_times_out_retryable_then_catches_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
