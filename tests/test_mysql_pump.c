/*
 * test_mysql_pump.c -- the applier's thread, as the daemon uses it: records
 * go into a real WAL (group commit), then into the pump; MySQL goes away
 * and comes back; the queue overflows.  Every test ends with MySQL holding
 * each order exactly once.
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
#include "mysql_apply.h"
#include "mysql_pump.h"
#include "wal.h"

static int g_seq;
static char g_db[64];
static char g_wal[128];

static const char *mariadb_dir(void)
{
	const char *d = getenv("FLASH_MARIADB_DIR");
	if (!d || !*d) {
		fprintf(stderr, "FLASH_MARIADB_DIR is not set: run through ctest (mysql_server_start)\n");
		exit(1);
	}
	return d;
}

static void quiet(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	(void)msg;
}

static void fixture(const char *cmd)
{
	char line[1024];
	snprintf(line, sizeof line, "'%s' %s '%s' >/dev/null 2>&1", getenv("FLASH_TEST_MARIADB_SH"), cmd,
	         mariadb_dir());
	assert_int_equal(system(line), 0);
}

static void opts_for(struct flash_mysql_pump_opts *o, const char *wal_dir, uint32_t queue)
{
	static char url[512];
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", g_db, mariadb_dir());
	memset(o, 0, sizeof *o);
	o->mysql.url = url;
	o->mysql.log = quiet;
	o->mysql.connect_timeout_s = 2;
	o->wal_dir = wal_dir;
	o->queue_records = queue;
	o->batch = 200;
	o->backoff_max_ms = 100;
}

static void fresh_names(void)
{
	g_seq++;
	snprintf(g_db, sizeof g_db, "fp_%d_%d", (int)getpid(), g_seq);
	snprintf(g_wal, sizeof g_wal, "/tmp/fs-pump-wal-%d-%d", (int)getpid(), g_seq);
}

/* Record i of the stream: 0 activity, 1 sku of 100000 units, then orders. */
static struct flash_record rec_at(size_t i)
{
	struct flash_record r = { 0 };
	r.activity_id = 1;
	if (i == 0) {
		r.type = FLASH_REC_ACTIVITY;
		r.biz_day = 1 | FLASH_SCOPE_ACTIVITY << 8;
		r.limit_slot = 1;
		r.ts_ns = INT64_MAX;
	} else if (i == 1) {
		r.type = FLASH_REC_SKU;
		r.sku_id = 1;
		r.qty = 1;
		r.value = 100000;
	} else {
		r.type = FLASH_REC_ORDER;
		r.sku_id = 1;
		r.order_no = i;
		r.user_id = 5000 + i;
		r.qty = 1;
		r.limit_slot = 1;
	}
	return r;
}

/* Append records [from, to) to the WAL, commit (durable), then push them:
 * what the daemon does each round.  Returns the push result. */
static int round_trip(wal_t *w, flash_mysql_pump_t *p, size_t from, size_t to)
{
	struct flash_lsn_record v[256];
	assert_true(to - from <= 256);
	for (size_t i = from; i < to; i++) {
		v[i - from].rec = rec_at(i);
		assert_int_equal(wal_append_record(w, &v[i - from].rec, i + 1, &v[i - from].lsn), WAL_OK);
		assert_int_equal(v[i - from].lsn, i + 1);
	}
	assert_int_equal(wal_commit(w), WAL_OK);
	return flash_mysql_pump_push(p, v, to - from);
}

static uint64_t q_u64(const char *sql)
{
	char url[512];
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", g_db, mariadb_dir());
	struct flash_mysql_opts o = { .url = url, .log = quiet };
	flash_mysql_t *m;
	assert_int_equal(flash_mysql_open(&o, &m), FLASH_OK);
	MYSQL *c = flash_mysql_conn(m);
	assert_int_equal(mysql_query(c, sql), 0);
	MYSQL_RES *r = mysql_store_result(c);
	MYSQL_ROW row = mysql_fetch_row(r);
	assert_non_null(row);
	uint64_t v = strtoull(row[0], NULL, 10);
	mysql_free_result(r);
	flash_mysql_close(m);
	return v;
}

static void drop_all(void)
{
	char url[512];
	snprintf(url, sizeof url, "mysql://root@localhost/%s?socket=%s/mysqld.sock", g_db, mariadb_dir());
	struct flash_mysql_opts o = { .url = url, .log = quiet };
	flash_mysql_t *m;
	if (flash_mysql_open(&o, &m) == FLASH_OK) {
		char sql[128];
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", g_db);
		mysql_query(flash_mysql_conn(m), sql);
		flash_mysql_close(m);
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_wal);
	assert_int_equal(system(cmd), 0);
}

static void check_exactly(size_t records)
{
	assert_int_equal(q_u64("SELECT COUNT(*) FROM orders"), records - 2);
	assert_int_equal(q_u64("SELECT COUNT(DISTINCT order_no) FROM orders"), records - 2);
	assert_int_equal(q_u64("SELECT sold FROM item_stock"), records - 2);
	assert_int_equal(q_u64("SELECT available FROM item_stock"), 100000 - (records - 2));
	assert_int_equal(q_u64("SELECT lsn FROM applied_lsn WHERE stream = 'wal'"), records);
}

static void test_pump_applies_what_is_pushed_and_rides_out_an_outage(void **state)
{
	(void)state;
	fresh_names();
	wal_t *w;
	assert_int_equal(wal_open(g_wal, NULL, &w), WAL_OK);
	struct flash_mysql_pump_opts o;
	opts_for(&o, g_wal, 4096);
	flash_mysql_pump_t *p;
	assert_int_equal(flash_mysql_pump_start(&o, &p), FLASH_OK);

	size_t n = 0;
	for (; n < 1000; n += 100)
		assert_int_equal(round_trip(w, p, n, n + 100), FLASH_OK);
	assert_int_equal(flash_mysql_pump_wait(p, n, 60000), FLASH_OK);

	fixture("halt");
	for (; n < 2000; n += 100)
		assert_int_equal(round_trip(w, p, n, n + 100), FLASH_OK);
	/* Down: nothing past 1000 can be applied, and the lag shows it. */
	assert_int_equal(flash_mysql_pump_wait(p, n, 300), FLASH_EBUSY);
	struct flash_mysql_pump_stats st;
	assert_int_equal(flash_mysql_pump_stats_get(p, &st), FLASH_OK);
	assert_int_equal(st.pushed_lsn, 2000);
	assert_true(st.applied_lsn < 2000);
	assert_int_equal(st.dropped, 0);

	fixture("resume");
	assert_int_equal(flash_mysql_pump_wait(p, n, 60000), FLASH_OK);
	assert_int_equal(flash_mysql_pump_stats_get(p, &st), FLASH_OK);
	assert_int_equal(st.applied_lsn, 2000);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.mysql.conflicts, 0);
	assert_true(st.mysql.retryable_errors >= 1);
	flash_mysql_pump_stop(p, 5000);
	assert_int_equal(wal_close(w), WAL_OK);
	check_exactly(n);
	drop_all();
}

static void test_full_queue_drops_and_the_pump_reads_them_back_from_the_wal(void **state)
{
	(void)state;
	fresh_names();
	wal_t *w;
	assert_int_equal(wal_open(g_wal, NULL, &w), WAL_OK);
	struct flash_mysql_pump_opts o;
	opts_for(&o, g_wal, 300);
	flash_mysql_pump_t *p;
	assert_int_equal(flash_mysql_pump_start(&o, &p), FLASH_OK);
	assert_int_equal(round_trip(w, p, 0, 100), FLASH_OK);
	assert_int_equal(flash_mysql_pump_wait(p, 100, 60000), FLASH_OK);

	fixture("halt");
	size_t n = 100, full = 0;
	for (; n < 2100; n += 100)
		full += round_trip(w, p, n, n + 100) == FLASH_EFULL;
	/* 300 fit in the queue while MySQL is down; the other 1700 are dropped. */
	assert_int_equal(full, 17);
	struct flash_mysql_pump_stats st;
	assert_int_equal(flash_mysql_pump_stats_get(p, &st), FLASH_OK);
	assert_int_equal(st.dropped, 1700);

	fixture("resume");
	/* The WAL stays open for writing meanwhile, as under the daemon. */
	assert_int_equal(flash_mysql_pump_wait(p, n, 60000), FLASH_OK);
	for (; n < 2300; n += 100)
		assert_int_equal(round_trip(w, p, n, n + 100), FLASH_OK);
	assert_int_equal(flash_mysql_pump_wait(p, n, 60000), FLASH_OK);
	assert_int_equal(flash_mysql_pump_stats_get(p, &st), FLASH_OK);
	assert_true(st.catch_ups >= 1);
	assert_int_equal(st.mysql.conflicts, 0);
	flash_mysql_pump_stop(p, 5000);
	assert_int_equal(wal_close(w), WAL_OK);
	check_exactly(n);
	drop_all();
}

static void test_without_a_wal_a_hole_stops_the_pump_and_a_restart_reads_back_only_durable_records(void **state)
{
	(void)state;
	fresh_names();
	wal_t *w;
	assert_int_equal(wal_open(g_wal, NULL, &w), WAL_OK);
	struct flash_mysql_pump_opts o;
	opts_for(&o, NULL, 200);
	flash_mysql_pump_t *p;
	assert_int_equal(flash_mysql_pump_start(&o, &p), FLASH_OK);
	fixture("halt");
	assert_int_equal(round_trip(w, p, 0, 200), FLASH_OK);
	assert_int_equal(round_trip(w, p, 200, 300), FLASH_EFULL);
	fixture("resume");
	assert_int_equal(flash_mysql_pump_wait(p, 200, 60000), FLASH_OK);
	assert_int_equal(round_trip(w, p, 300, 400), FLASH_OK);
	/* 201..300 are gone from the queue: MySQL must not jump over them. */
	assert_int_equal(flash_mysql_pump_wait(p, 400, 500), FLASH_EBUSY);
	struct flash_mysql_pump_stats st;
	assert_int_equal(flash_mysql_pump_stats_get(p, &st), FLASH_OK);
	assert_int_equal(st.applied_lsn, 200);
	assert_int_equal(st.last_rc, FLASH_EMYSQL_GAP);
	flash_mysql_pump_stop(p, 0);
	assert_int_equal(wal_close(w), WAL_OK);
	assert_int_equal(q_u64("SELECT lsn FROM applied_lsn WHERE stream = 'wal'"), 200);

	/* A restart with the WAL reads back only what it knows is durable:
	 * nothing when told nothing ... */
	opts_for(&o, g_wal, 200);
	assert_int_equal(flash_mysql_pump_start(&o, &p), FLASH_OK);
	assert_int_equal(flash_mysql_pump_wait(p, 201, 300), FLASH_EBUSY);
	flash_mysql_pump_stop(p, 0);
	/* ... up to 300 when 300 is durable, not one record more ... */
	o.start_durable_lsn = 300;
	assert_int_equal(flash_mysql_pump_start(&o, &p), FLASH_OK);
	assert_int_equal(flash_mysql_pump_wait(p, 300, 60000), FLASH_OK);
	assert_int_equal(flash_mysql_pump_stats_get(p, &st), FLASH_OK);
	assert_int_equal(st.applied_lsn, 300);
	flash_mysql_pump_stop(p, 0);
	assert_int_equal(q_u64("SELECT lsn FROM applied_lsn WHERE stream = 'wal'"), 300);
	/* ... and everything once all of it is. */
	o.start_durable_lsn = 400;
	assert_int_equal(flash_mysql_pump_start(&o, &p), FLASH_OK);
	assert_int_equal(flash_mysql_pump_wait(p, 400, 60000), FLASH_OK);
	flash_mysql_pump_stop(p, 1000);
	check_exactly(400);
	drop_all();
}

int main(void)
{
	mariadb_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pump_applies_what_is_pushed_and_rides_out_an_outage),
		cmocka_unit_test(test_full_queue_drops_and_the_pump_reads_them_back_from_the_wal),
		cmocka_unit_test(test_without_a_wal_a_hole_stops_the_pump_and_a_restart_reads_back_only_durable_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
