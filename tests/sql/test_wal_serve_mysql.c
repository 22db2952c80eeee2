/*
 * test_wal_serve_mysql.c -- `serve` with the MySQL applier against the
 * private MariaDB of the ctest fixture (tests/fixtures/mariadb.sh): orders
 * placed in sync and in async durability reach MySQL exactly once, after
 * they are durable; a restart of the daemon on the same WAL changes nothing
 * in MySQL.  A windowed segment's bank is cleared only once MySQL applied
 * the orders of its generation (serve's reclaimer).  Carts go through the
 * daemon whole, and the three witnesses agree on them.
 */
#include <mysql.h>
#include <pthread.h>

#include "helpers.h"
#include "mysql_apply.h"
#include "reconcile.h"
#include "serve.h"
#include "wal_testutil.h"
#include "mysql_testutil.h"

/* A fresh database; its URL in @p url. */
static void fresh_db(char *url, size_t len, int mode)
{
	char db[64];
	snprintf(db, sizeof db, "fws_%d_%d", (int)getpid(), mode);
	mysql_fresh_db(url, len, db);
}

static uint64_t query_u64(mdb_t *m, const char *sql)
{
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	assert_int_equal(mysql_query(c, sql), 0);
	MYSQL_RES *r = mysql_store_result(c);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	assert_non_null(row);
	uint64_t v = row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

static void orders_reach_mysql_exactly_once(uint32_t durability)
{
	char name[64], url[512];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = durability;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	fresh_db(url, sizeof url, (int)durability);

	struct serve_thread t;
	memset(&t, 0, sizeof t);
	serve_opts_default(&t.o);
	t.o.segment = name;
	t.o.wal_dir = dir;
	t.o.log_level = PLOG_ERROR;
	t.o.idle_us_max = 200;
	t.o.mysql.url = url;
	t.o.mysql.drain_ms = 60000;
	t.o.stop = &t.stop;
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);

	assert_int_equal(t_activity(h, 1, 2, 3, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 1000, 2), FLASH_OK);
	enum { N = 150 };
	uint64_t nos[N], units = 0;
	for (int i = 0; i < N; i++) {
		struct flash_order_res res;
		uint32_t q = 1 + (uint32_t)(i % 3);
		assert_int_equal(t_order(h, 1, 1, 1 + (uint64_t)(i % 100), q, 0, 0, &res), FLASH_OK);
		nos[i] = res.order_no;
		units += q;
	}
	uint64_t cancelled_units = 0, cancels = 0;
	for (int i = 0; i < N; i += 10) {
		uint32_t back;
		assert_int_equal(flash_cancel(h, nos[i], &back), FLASH_OK);
		cancelled_units += back;
		cancels++;
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);   /* drain, sync, let the applier finish */
	pthread_join(t.th, NULL);
	assert_int_equal(t.rc, 0);
	uint64_t frames = 2 + N + cancels;
	assert_int_equal(t.st.records, frames);
	assert_int_equal(t.st.mysql_pushed, frames);

	struct mdb_opts mo = { .url = url };
	mdb_t *m;
	assert_int_equal(mdb_open(&mo, &m), FLASH_OK);
	uint64_t lsn;
	assert_int_equal(mdb_applied_lsn(m, &lsn), FLASH_OK);
	assert_int_equal(lsn, frames);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders"), N);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders WHERE status = 'CANCELLED'"), cancels);
	assert_int_equal(query_u64(m, "SELECT COUNT(DISTINCT order_no) FROM orders"), N);
	assert_int_equal(query_u64(m, "SELECT sold FROM item_stock WHERE activity_id = 1 AND sku_id = 1"),
	                 units - cancelled_units);
	assert_int_equal(query_u64(m, "SELECT available FROM item_stock WHERE activity_id = 1 AND sku_id = 1"),
	                 t_available(h, 1, 1));
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);

	/* A daemon whose MySQL was away: the WAL is ahead of MySQL.  The next
	 * daemon catches MySQL up from the WAL before any new record. */
	{
		struct mdb_opts mo2 = { .url = url };
		mdb_t *m2;
		assert_int_equal(mdb_open(&mo2, &m2), FLASH_OK);
		MYSQL *c = mdb_conn(m2);
		assert_non_null(c);
		assert_int_equal(mysql_query(c, "DELETE FROM orders"), 0);
		assert_int_equal(mysql_query(c, "DELETE FROM item_stock"), 0);
		assert_int_equal(mysql_query(c, "DELETE FROM activities"), 0);
		assert_int_equal(mysql_query(c, "DELETE FROM applied_lsn"), 0);
		mdb_close(m2);
	}
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders"), 0);

	/* Restart on the same WAL: MySQL is caught up, nothing applied twice. */
	struct serve_stats ss;
	t.o.stop = NULL;
	t.o.once = 1;
	assert_int_equal(serve_run(&t.o, &ss), 0);
	assert_int_equal(ss.records, 0);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders"), N);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders WHERE status = 'CANCELLED'"), cancels);
	/* And once more: nothing changes. */
	assert_int_equal(serve_run(&t.o, &ss), 0);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders"), N);
	assert_int_equal(mdb_applied_lsn(m, &lsn), FLASH_OK);
	assert_int_equal(lsn, frames);
	mdb_close(m);
	wt_rmdir(dir);
}


/*
 * The reclaimer's MySQL gate: a user-table bank holding 20 per-day limit
 * entries is due for clearing, but while the applier cannot reach MySQL
 * the daemon puts the clear off, step after step; with MySQL back the bank
 * is cleared -- and by then MySQL holds the 20 orders.
 */
static void test_windowed_bank_is_cleared_only_after_mysql_applied_its_orders(void **st)
{
	(void)st;
	char name[64], url[512], bad[600];
	struct flash_seg_opts so;
	struct flash_reclaim_opts ro = { .req_window_s = 1, .user_gen_s = 1 };
	struct flash_gen_info gi;
	t_opts_small(&so);
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	fresh_db(url, sizeof url, 7);
	snprintf(bad, sizeof bad, "%s", url);
	char *q = strstr(bad, "?socket=");
	assert_non_null(q);
	snprintf(q, sizeof bad - (size_t)(q - bad), "?socket=%s/no-such.sock", dir);

	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_OK);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_DAY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 1000, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 20; u++)
		assert_int_equal(t_order(h, 1, 1, u, 1, 0, 0, NULL), FLASH_OK);

	for (int phase = 0; phase < 2; phase++) {
		struct serve_thread t;
		memset(&t, 0, sizeof t);
		serve_opts_default(&t.o);
		t.o.segment = name;
		t.o.wal_dir = dir;
		t.o.log_level = PLOG_ERROR;
		t.o.idle_us_max = 200;
		t.o.reclaim.every_ms = 20;
		t.o.reconcile.every_ms = 0;
		t.o.mysql.url = phase == 0 ? bad : url;
		t.o.mysql.drain_ms = phase == 0 ? 100 : 60000;
		t.o.stop = &t.stop;
		assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);
		for (int i = 0;; i++) {
			assert_true(i < 3000);   /* 60 s: a daemon that never gets there */
			assert_int_equal(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
			if (phase == 0)
				assert_int_equal(gi.reclaimed, 0);   /* never while MySQL is away */
			if (phase == 0 ? __atomic_load_n(&t.st.gen_clear_waits, __ATOMIC_RELAXED) >= 10
			               : gi.reclaimed != 0)
				break;
			t_sleep_ms(20);
		}
		if (phase == 0) {
			/* due (two generations on), put off again and again: kept */
			assert_int_equal(gi.gen, 2);
			assert_int_equal(gi.bank[0].state, FLASH_BANK_OLD);
			assert_int_equal(gi.bank[0].keys, 20);
			assert_int_equal(gi.reclaimed, 0);
		} else {
			struct mdb_opts mo = { .url = url };
			mdb_t *m;
			assert_int_equal(gi.reclaimed, 20);
			assert_int_equal(mdb_open(&mo, &m), FLASH_OK);
			assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders"), 20);
			mdb_close(m);
		}
		__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
		pthread_join(t.th, NULL);
		assert_int_equal(t.rc, 0);
	}
	wt_rmdir(dir);
}

/*
 * Carts through the daemon (drain, WAL, group commit, the applier's pump,
 * the expirer): carts of 2 and 3 lines by many users in sync durability,
 * some cancelled, some reserved and left to expire, a plain order now and
 * then.  MariaDB has one orders row per cart and a row per line, nothing
 * waiting in cart_pending, each sku's units as the segment's, no conflict;
 * and reconcile_run finds the segment, the WAL and MariaDB agreeing.  A
 * daemon started on the same WAL with MariaDB emptied catches it up to the
 * same rows.
 */
static void test_carts_reach_mysql_through_serve_and_every_witness_agrees(void **st)
{
	(void)st;
	char name[64], url[512];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	fresh_db(url, sizeof url, 7);

	struct serve_thread t;
	memset(&t, 0, sizeof t);
	serve_opts_default(&t.o);
	t.o.segment = name;
	t.o.wal_dir = dir;
	t.o.log_level = PLOG_ERROR;
	t.o.idle_us_max = 200;
	t.o.mysql.url = url;
	t.o.mysql.drain_ms = 60000;
	t.o.stop = &t.stop;
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	for (uint32_t s = 1; s <= 3; s++)
		assert_int_equal(flash_sku_add(h, 1, s, 1000, 2), FLASH_OK);
	enum { N = 40 };
	uint64_t lines = 0, expiring = 0;
	for (int i = 0; i < N; i++) {
		struct flash_cart_req c = { .activity_id = 1, .lines = 2 + (uint32_t)(i % 2),
		                            .user_id = 100 + (uint64_t)i };
		for (uint32_t l = 0; l < c.lines; l++) {
			c.line[l].sku_id = 1 + (l + (uint32_t)i) % 3;
			c.line[l].qty = 1 + (l + (uint32_t)i) % 3;
		}
		if (i % 5 == 4) {
			c.reserve_ms = 30;             /* never paid: the expirer's, */
			expiring += i % 7 != 0;        /* unless cancelled first */
		}
		struct flash_cart_res res;
		assert_int_equal(flash_cart_order(h, &c, &res), FLASH_OK);
		lines += c.lines;
		if (i % 7 == 0)
			assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
		if (i % 4 == 0)
			assert_int_equal(t_order(h, 1, 1, 500 + (uint64_t)i, 1, 0, 0, NULL), FLASH_OK);
	}
	for (int w = 0; w < 500; w++) {                    /* the expirer's turn */
		struct flash_order_info oi;
		uint64_t reserved = 0;
		for (uint32_t i = 0; i < so.max_orders; i++)
			reserved += flash_order_at(h, i, &oi) == FLASH_OK && oi.state == FLASH_ORDER_RESERVED;
		if (!reserved)
			break;
		t_sleep_ms(10);
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t.th, NULL);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.st.expired, expiring);

	struct mdb_opts mo = { .url = url };
	mdb_t *m;
	assert_int_equal(mdb_open(&mo, &m), FLASH_OK);
	uint64_t plain = (N + 3) / 4;
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders"), N + plain);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders WHERE n_lines > 1"), N);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM order_lines"), lines);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM order_lines l JOIN orders o"
	                              " ON o.order_no = l.order_no WHERE l.status <> o.status"), 0);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders WHERE status = 'EXPIRED'"), expiring);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);
	char sql[160];
	for (uint32_t s = 1; s <= 3; s++) {
		snprintf(sql, sizeof sql, "SELECT available FROM item_stock WHERE activity_id = 1 AND"
		         " sku_id = %u", s);
		assert_int_equal(query_u64(m, sql), t_available(h, 1, s));
	}
	struct reconcile_run_opts ro = { .segment = name, .wal_dir = dir, .mysql = &mo,
	                                 .flags = RECONCILE_ORDERS };
	FILE *out = tmpfile();
	assert_non_null(out);
	int rrc = reconcile_run(&ro, out, stderr);
	if (rrc != 0) {
		char line[512];
		rewind(out);
		while (fgets(line, sizeof line, out))
			fputs(line, stderr);
	}
	assert_int_equal(rrc, 0);
	fclose(out);

	/* MariaDB emptied: a daemon on the same WAL catches it up, carts whole */
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	assert_int_equal(mysql_query(c, "DELETE FROM order_lines"), 0);
	assert_int_equal(mysql_query(c, "DELETE FROM orders"), 0);
	assert_int_equal(mysql_query(c, "DELETE FROM item_stock"), 0);
	assert_int_equal(mysql_query(c, "DELETE FROM activities"), 0);
	assert_int_equal(mysql_query(c, "DELETE FROM applied_lsn"), 0);
	struct serve_stats ss;
	t.o.stop = NULL;
	t.o.once = 1;
	assert_int_equal(serve_run(&t.o, &ss), 0);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM order_lines"), lines);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM orders WHERE status = 'EXPIRED'"), expiring);
	assert_int_equal(query_u64(m, "SELECT COUNT(*) FROM apply_conflicts"), 0);
	mdb_close(m);
	wt_rmdir(dir);
}

static void test_sync_orders_reach_mysql_exactly_once(void **st)
{
	(void)st;
	orders_reach_mysql_exactly_once(FLASH_DURABILITY_SYNC);
}

static void test_async_orders_reach_mysql_exactly_once(void **st)
{
	(void)st;
	orders_reach_mysql_exactly_once(FLASH_DURABILITY_ASYNC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sync_orders_reach_mysql_exactly_once, t_teardown),
		cmocka_unit_test_teardown(test_async_orders_reach_mysql_exactly_once, t_teardown),
		cmocka_unit_test_teardown(test_windowed_bank_is_cleared_only_after_mysql_applied_its_orders, t_teardown),
		cmocka_unit_test_teardown(test_carts_reach_mysql_through_serve_and_every_witness_agrees, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
