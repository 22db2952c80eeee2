/*
 * test_mysql_pump_handoff.c -- the drain-to-applier hand-off itself
 * (persist/mysql/mysql_pump.c: a wfcqueue, a bound counter, a futex).  One
 * pusher thread (the daemon's drain) pushes many records in pushes of
 * many sizes while MySQL is halted and after it comes back; a watcher
 * thread samples the queue meanwhile.  The pump has no WAL directory, so
 * nothing can be read back: a record lost or put out of order in the queue
 * would leave a hole that stops MySQL short of the last LSN for good.
 * A refused push (queue full) is pushed again later, as a producer that
 * keeps its records would.
 */
#include <pthread.h>
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
#include "mysql_testutil.h"

enum {
	N_RECORDS = 12000,   /* activity, sku, then orders */
	QUEUE     = 3000,    /* the bound under test */
	MAX_PUSH  = 37,      /* pushes of 1..MAX_PUSH records */
};

static char g_db[64];

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

static const char *url(void)
{
	static char u[512];
	snprintf(u, sizeof u, "mysql://root@localhost/%s?socket=%s/mysqld.sock", g_db, mariadb_dir());
	return u;
}

/* Record i of the stream (LSN i + 1): 0 activity, 1 sku, then orders. */
static struct lsn_record rec_at(size_t i)
{
	struct lsn_record v;
	memset(&v, 0, sizeof v);
	v.lsn = i + 1;
	v.rec.activity_id = 1;
	if (i == 0) {
		v.rec.type = FLASH_REC_ACTIVITY;
		v.rec.biz_day = 1 | FLASH_SCOPE_ACTIVITY << 8;
		v.rec.limit_slot = 1;
		v.rec.ts_ns = INT64_MAX;
	} else if (i == 1) {
		v.rec.type = FLASH_REC_SKU;
		v.rec.sku_id = 1;
		v.rec.qty = 1;
		v.rec.value = 100000;
	} else {
		v.rec.type = FLASH_REC_ORDER;
		v.rec.sku_id = 1;
		v.rec.order_no = i;
		v.rec.user_id = 5000 + i;
		v.rec.qty = 1;
		v.rec.limit_slot = 1;
	}
	return v;
}

static uint64_t q_u64(const char *sql)
{
	struct mdb_opts o = { .url = url(), .log = quiet };
	mdb_t *m;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	MYSQL *c = mdb_conn(m);
	assert_int_equal(mysql_query(c, sql), 0);
	MYSQL_RES *r = mysql_store_result(c);
	MYSQL_ROW row = mysql_fetch_row(r);
	assert_non_null(row);
	uint64_t v = strtoull(row[0], NULL, 10);
	mysql_free_result(r);
	mdb_close(m);
	return v;
}

struct run {
	mdb_pump_t *pump;
	int      watch_stop;     /* atomic */
	uint64_t max_queued;     /* watcher: most records seen queued */
	uint64_t over_cap;       /* watcher: samples above the bound */
	uint64_t samples;
	uint64_t refused;        /* pusher: pushes refused (queue full) */
	int      push_rc;        /* pusher: first unexpected result, or FLASH_OK */
};

/* The drain: every record once, in LSN order, a refused push again. */
static void *pusher_main(void *arg)
{
	struct run *r = arg;
	unsigned seed = 12345;
	struct lsn_record v[MAX_PUSH];
	r->push_rc = FLASH_OK;
	for (size_t i = 1; i < N_RECORDS;) {
		size_t n = 1 + (size_t)rand_r(&seed) % MAX_PUSH;
		if (n > N_RECORDS - i)
			n = N_RECORDS - i;
		for (size_t k = 0; k < n; k++)
			v[k] = rec_at(i + k);
		int rc;
		unsigned in_a_row = 0;
		while ((rc = mdb_pump_push(r->pump, v, n)) == FLASH_EFULL) {
			r->refused++;
			/* a pump that never frees room (stuck at a hole) must fail
			 * the test, not hang it: a bound that only turns a hang
			 * into a failure (60 s of refusals in a row) */
			if (++in_a_row == 30000)
				break;
			usleep(2000);
		}
		if (rc != FLASH_OK) {
			r->push_rc = rc;
			break;
		}
		i += n;
	}
	return NULL;
}

static void *watcher_main(void *arg)
{
	struct run *r = arg;
	while (!__atomic_load_n(&r->watch_stop, __ATOMIC_ACQUIRE)) {
		struct mdb_pump_stats st;
		if (mdb_pump_stats_get(r->pump, &st) != FLASH_OK)
			break;
		if (st.queued > r->max_queued)
			r->max_queued = st.queued;
		r->over_cap += st.queued > st.queue_cap;
		r->samples++;
		usleep(200);
	}
	return NULL;
}

static void test_handoff_keeps_push_order_loses_nothing_and_holds_its_bound_while_mysql_is_halted(void **state)
{
	(void)state;
	snprintf(g_db, sizeof g_db, "fph_%d", (int)getpid());
	struct mdb_pump_opts o;
	memset(&o, 0, sizeof o);
	o.mysql.url = url();
	o.mysql.log = quiet;
	o.mysql.connect_timeout_s = 2;
	o.wal_dir = NULL;            /* nothing to read back from */
	o.queue_records = QUEUE;
	o.batch = 200;
	o.backoff_max_ms = 100;
	struct run r;
	memset(&r, 0, sizeof r);
	assert_int_equal(mdb_pump_start(&o, &r.pump), FLASH_OK);
	/* the schema exists and MySQL answers before it goes away */
	struct lsn_record first = rec_at(0);
	assert_int_equal(mdb_pump_push(r.pump, &first, 1), FLASH_OK);
	assert_int_equal(mdb_pump_wait(r.pump, 1, 60000), FLASH_OK);

	fixture("halt");
	pthread_t pt, wt;
	assert_int_equal(pthread_create(&wt, NULL, watcher_main, &r), 0);
	/* the pusher starts at record 1: record 0 is in already */
	assert_int_equal(pthread_create(&pt, NULL, pusher_main, &r), 0);

	/* MySQL is down: the queue fills to its bound and pushes are refused */
	struct mdb_pump_stats st;
	for (int i = 0;; i++) {
		assert_int_equal(mdb_pump_stats_get(r.pump, &st), FLASH_OK);
		if (st.dropped >= 1)
			break;
		assert_true(i < 6000);   /* bounds only turn a hang into a failure */
		usleep(10000);
	}
	assert_true(st.queued <= QUEUE);
	assert_true(st.queued > QUEUE - MAX_PUSH);   /* full: the refused push did not fit */
	assert_true(st.applied_lsn < N_RECORDS);

	fixture("resume");
	assert_int_equal(pthread_join(pt, NULL), 0);
	/* the pushing is over: nothing can add to the queue any more */
	__atomic_store_n(&r.watch_stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(wt, NULL), 0);
	assert_int_equal(r.push_rc, FLASH_OK);
	assert_int_equal(mdb_pump_wait(r.pump, N_RECORDS, 120000), FLASH_OK);

	assert_int_equal(mdb_pump_stats_get(r.pump, &st), FLASH_OK);
	assert_int_equal(st.applied_lsn, N_RECORDS);
	assert_int_equal(st.pushed_lsn, N_RECORDS);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.mysql.conflicts, 0);
	assert_int_equal(st.last_rc, FLASH_OK);
	assert_true(r.refused >= 1);
	assert_true(st.dropped >= r.refused);   /* each refused push dropped its records */
	assert_true(r.samples > 0);
	assert_int_equal(r.over_cap, 0);
	assert_true(r.max_queued <= QUEUE);
	mdb_pump_stop(r.pump, 5000);

	/* every order exactly once, each with its own LSN */
	assert_int_equal(q_u64("SELECT COUNT(*) FROM orders"), N_RECORDS - 2);
	assert_int_equal(q_u64("SELECT COUNT(DISTINCT order_no) FROM orders"), N_RECORDS - 2);
	assert_int_equal(q_u64("SELECT COUNT(*) FROM orders WHERE lsn <> order_no + 1"), 0);
	assert_int_equal(q_u64("SELECT sold FROM item_stock"), N_RECORDS - 2);
	assert_int_equal(q_u64("SELECT lsn FROM applied_lsn WHERE stream = 'wal'"), N_RECORDS);
	char sql[128];
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", g_db);
	struct mdb_opts mo = { .url = url(), .log = quiet };
	mdb_t *m;
	assert_int_equal(mdb_open(&mo, &m), FLASH_OK);
	mysql_query(mdb_conn(m), sql);
	mdb_close(m);
}

int main(void)
{
	mariadb_dir();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handoff_keeps_push_order_loses_nothing_and_holds_its_bound_while_mysql_is_halted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
