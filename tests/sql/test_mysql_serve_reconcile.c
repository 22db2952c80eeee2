/*
 * test_mysql_serve_reconcile.c -- the periodic reconciler inside `serve`
 * (persist/daemon/serve_reconcile.c) against the private MariaDB of the ctest
 * fixture.
 *
 *   - passes run while buyers order and cancel and the applier applies:
 *     every pass compares the WAL with MySQL at MySQL's applied LSN and
 *     finds nothing (no false positive while orders flow), at several
 *     distinct cuts; the segment is compared in quiet windows only, and the
 *     final pass at the clean stop compares all three with nothing found;
 *   - MySQL changed behind the applier's back while serve runs (a stock row,
 *     an order row deleted): the next pass reports exactly those
 *     differences, by kind, sku and order number, and raises the alert past
 *     the threshold; a one-unit change logs its differences without alert;
 *   - without MySQL the passes compare the segment with the WAL.
 *
 * Nothing here waits for a time: the tests wait for passes (the hook
 * signals each one) and for conditions.
 */
#include <arpa/inet.h>
#include <mysql.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>

#include "helpers.h"
#include "mysql_apply.h"
#include "serve.h"
#include "serve_reconcile.h"
#include "wal_testutil.h"
#include "mysql_testutil.h"

static int g_db;

/* A fresh database; its URL in @p url. */
static void fresh_db(char *url, size_t len)
{
	char db[64];
	snprintf(db, sizeof db, "fsr_%d_%d", (int)getpid(), ++g_db);
	mysql_fresh_db(url, len, db);
}

static void sql(mdb_t *m, const char *q, uint64_t want_rows)
{
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	if (mysql_query(c, q)) {
		fprintf(stderr, "%s: %s\n", q, mysql_error(c));
		fail();
	}
	assert_int_equal(mysql_affected_rows(c), want_rows);
}

/* ---- what the passes saw (filled by the hook on the reconciler's thread) ---- */

#define MAX_PASSES 4096
#define MAX_KEPT   16

struct seen_pass {
	struct serve_recon_pass p;   /* report pointers cleared */
	size_t ndiff;
	struct diff diff[MAX_KEPT];
	uint64_t units, diff_units;
};

struct seen {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	size_t          n;
	struct seen_pass v[MAX_PASSES];
};

static void keep(struct seen_pass *sp, const struct reconcile_report *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n && sp->ndiff < MAX_KEPT; i++)
		sp->diff[sp->ndiff++] = rep->diffs[i];
	sp->units += rep->units;
	sp->diff_units += rep->diff_units;
}

static void hook(void *arg, const struct serve_recon_pass *p)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->mu);
	if (s->n < MAX_PASSES) {
		struct seen_pass *sp = &s->v[s->n];
		memset(sp, 0, sizeof *sp);
		sp->p = *p;
		keep(sp, p->wal_sql);
		keep(sp, p->seg_wal);
		sp->p.wal_sql = sp->p.seg_wal = NULL;
		s->n++;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static size_t seen_count(struct seen *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->n;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Wait until pass number @p n (1-based) has been seen; a copy of it in @p out. */
static void wait_pass(struct seen *s, size_t n, struct seen_pass *out)
{
	assert_true(n <= MAX_PASSES);
	pthread_mutex_lock(&s->mu);
	while (s->n < n)
		pthread_cond_wait(&s->cv, &s->mu);
	*out = s->v[n - 1];
	pthread_mutex_unlock(&s->mu);
}

/* ---- the daemon on a thread ---- */

static void serve_start(struct serve_thread *t, const char *seg, const char *dir, const char *url,
                        struct seen *s, double threshold, int metrics)
{
	memset(t, 0, sizeof *t);
	serve_opts_default(&t->o);
	t->o.segment = seg;
	t->o.wal_dir = dir;
	t->o.log_level = PLOG_ERROR;
	t->o.idle_us_max = 200;
	t->o.mysql.url = url;
	t->o.mysql.drain_ms = 60000;
	t->o.stop = &t->stop;
	t->o.reconcile.every_ms = 20;
	t->o.reconcile.threshold = threshold;
	t->o.reconcile.hook = hook;
	t->o.reconcile.hook_arg = s;
#ifdef FLASH_HAVE_MHD
	if (metrics)
		t->o.metrics = "127.0.0.1:0";
#else
	(void)metrics;
#endif
	assert_int_equal(pthread_create(&t->th, NULL, serve_thread_main, t), 0);
}

static void serve_finish(struct serve_thread *t)
{
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t->th, NULL);
	assert_int_equal(t->rc, 0);
}

static struct seen *seen_new(void)
{
	struct seen *s = calloc(1, sizeof *s);
	assert_non_null(s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	return s;
}

static void seen_free(struct seen *s)
{
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static void big_opts(struct flash_seg_opts *so)
{
	t_opts_small(so);
	so->max_orders = 1u << 17;
	so->max_users = 1u << 17;
	so->ring_records = 4096;
}

/* ---- 1. live: passes while orders flow find nothing ---- */

struct buyer {
	const char  *seg;
	struct seen *s;
	uint64_t     user0;
	int         *stop;
	int          done;        /* stopped on its own (cap or error) */
	uint64_t     orders, cancels;
	int          err;
};

#define BATCH 100
#define BATCHES_PER_PASS 5
#define BUYER_CAP 60000

/* Orders of 1-2 units on two skus, every 7th cancelled, users cycling
 * through 1024 ids (limit 64; a cancel keeps the quota, so a batch of the
 * applier never reuses a limit slot and stays on its fast path), without
 * pause;
 * a buyer BATCHES_PER_PASS batches ahead of the reconciler waits for its
 * next pass, so the order table lasts until the test has its passes (a
 * pacing by passes, not by time). */
static void *buyer_main(void *arg)
{
	struct buyer *b = arg;
	flash_t *h;
	if (flash_open(b->seg, 0, &h) != FLASH_OK) {
		b->err = 1;
		__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	uint64_t i = 0;
	for (int batch = 1; !__atomic_load_n(b->stop, __ATOMIC_ACQUIRE) && b->orders < BUYER_CAP && !b->err;
	     batch++) {
		for (int k = 0; k < BATCH; k++, i++) {
			struct flash_order_req r = { .activity_id = 1, .sku_id = 1 + (uint32_t)(i % 2),
			                             .user_id = b->user0 + i % 1024, .qty = 1 + (uint32_t)(i % 2) };
			struct flash_order_res res;
			int rc = flash_order(h, &r, &res);
			if (rc == FLASH_EBUSY)
				continue;           /* ring full for a moment */
			if (rc != FLASH_OK) {
				b->err = rc;
				break;
			}
			b->orders++;
			if (i % 7 == 0) {
				rc = flash_cancel(h, res.order_no, NULL);
				if (rc != FLASH_OK && rc != FLASH_EBUSY) {
					b->err = rc;
					break;
				}
				b->cancels += rc == FLASH_OK;
			}
		}
		if (batch % BATCHES_PER_PASS)
			continue;
		size_t n = seen_count(b->s);
		pthread_mutex_lock(&b->s->mu);
		while (b->s->n == n && !__atomic_load_n(b->stop, __ATOMIC_ACQUIRE))
			pthread_cond_wait(&b->s->cv, &b->s->mu);
		pthread_mutex_unlock(&b->s->mu);
	}
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	flash_close(h);
	return NULL;
}

static void test_live_passes_find_no_difference_while_orders_flow(void **state)
{
	(void)state;
	char name[64], url[512];
	struct flash_seg_opts so;
	big_opts(&so);
	flash_t *h = t_seg_new(&so, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 64, 2, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 1000000, 2), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 2, 1000000, 1), FLASH_OK);
	char *dir = wt_mkdtemp();
	fresh_db(url, sizeof url);
	struct seen *s = seen_new();
	struct serve_thread t;
	serve_start(&t, name, dir, url, s, 0, 0);

	/* static: a failed assertion leaves the buyers running, never on a dead stack */
	static int stop;
	static struct buyer b[2];
	static pthread_t bt[2];
	stop = 0;
	for (int i = 0; i < 2; i++) {
		b[i] = (struct buyer){ .seg = name, .s = s, .user0 = 1 + (uint64_t)i * 100000, .stop = &stop };
		assert_int_equal(pthread_create(&bt[i], NULL, buyer_main, &b[i]), 0);
	}
	/* Passes while the buyers run: wait for LIVE_CUTS WAL-vs-MySQL
	 * comparisons at distinct applied LSNs (live cuts), all taken before
	 * the buyers are told to stop. */
	enum { LIVE_CUTS = 6 };
	uint64_t lsns[LIVE_CUTS] = { 0 };
	size_t distinct = 0, next = seen_count(s) + 1, live_passes = 0;
	while (distinct < LIVE_CUTS) {
		struct seen_pass sp;
		wait_pass(s, next++, &sp);
		live_passes++;
		assert_int_equal(sp.p.rc, FLASH_OK);
		assert_true(sp.p.mysql_checked);
		if (sp.p.differences) {
			for (size_t i = 0; i < sp.ndiff; i++) {
				char line[384];
				diff_format(&sp.diff[i], line, sizeof line);
				fprintf(stderr, "false positive: %s\n", line);
			}
		}
		assert_int_equal(sp.p.differences, 0);
		assert_int_equal(sp.p.alert, 0);
		assert_true(sp.p.seg_checked || sp.p.seg_busy);
		if (sp.p.mysql_lsn > 0 && (distinct == 0 || sp.p.mysql_lsn != lsns[distinct - 1]))
			lsns[distinct++] = sp.p.mysql_lsn;
		/* the buyers must still be running for the cut to count as live */
		assert_false(__atomic_load_n(&b[0].done, __ATOMIC_ACQUIRE));
		assert_false(__atomic_load_n(&b[1].done, __ATOMIC_ACQUIRE));
	}
	for (size_t i = 1; i < LIVE_CUTS; i++)
		assert_true(lsns[i - 1] < lsns[i]);
	pthread_mutex_lock(&s->mu);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < 2; i++) {
		pthread_join(bt[i], NULL);
		assert_int_equal(b[i].err, 0);
		assert_true(b[i].orders > 0);
	}

	/* Quiet now: a pass compares the segment too, and agrees. */
	struct seen_pass sp;
	for (next = seen_count(s) + 1;; next++) {
		wait_pass(s, next, &sp);
		assert_int_equal(sp.p.differences, 0);
		if (sp.p.seg_checked)
			break;
	}
	assert_true(sp.p.seg_lsn > 0);

	/* The clean stop: a final pass after the applier drained, all three
	 * compared, at the WAL's last LSN. */
	serve_finish(&t);
	size_t n = seen_count(s);
	wait_pass(s, n, &sp);
	assert_true(sp.p.final);
	assert_int_equal(sp.p.rc, FLASH_OK);
	assert_true(sp.p.mysql_checked);
	assert_true(sp.p.seg_checked);
	assert_int_equal(sp.p.differences, 0);
	assert_int_equal(sp.p.mysql_lsn, t.st.records);
	assert_int_equal(sp.p.seg_lsn, t.st.records);
	assert_int_equal(t.st.reconcile_passes, n);
	assert_int_equal(t.st.reconcile_diffs, 0);
	fprintf(stderr, "live: %zu passes while buying (%zu in all, %llu with the segment busy), "
	        "%llu + %llu orders, %llu records\n", live_passes, n,
	        (unsigned long long)t.st.reconcile_busy, (unsigned long long)b[0].orders,
	        (unsigned long long)b[1].orders, (unsigned long long)t.st.records);
	seen_free(s);
	wt_rmdir(dir);
}

/* ---- metrics: GET /metrics and one sample ---- */

#ifdef FLASH_HAVE_MHD
static char *scrape(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return NULL;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return NULL;
	}
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
	if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
		close(fd);
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	ssize_t r;
	while (b && (r = read(fd, b + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 == cap) {
			cap *= 2;
			b = realloc(b, cap);
		}
	}
	close(fd);
	if (b)
		b[n] = 0;
	return b;
}

static uint64_t sample(const char *body, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, len) == 0 && p[len] == ' ')
			return strtoull(p + len + 1, NULL, 10);
	return UINT64_MAX;
}
#endif

/* ---- 2. MySQL changed behind the applier's back ---- */

struct tamper_ctx {
	char name[64], url[512];
	char *dir;
	flash_t *h;
	struct seen *s;
	struct serve_thread t;
	mdb_t *m;
	uint64_t victim;          /* an order of sku 2 */
	uint64_t records;
};

/* Activity 1 (K=4), skus 1 and 2 of 100000 units; 300 orders; serve
 * running until every record is in MySQL and a pass agreed. */
static void tamper_setup(struct tamper_ctx *c, double threshold)
{
	memset(c, 0, sizeof *c);
	struct flash_seg_opts so;
	big_opts(&so);
	c->h = t_seg_new(&so, c->name, sizeof c->name);
	c->dir = wt_mkdtemp();
	fresh_db(c->url, sizeof c->url);
	c->s = seen_new();
	serve_start(&c->t, c->name, c->dir, c->url, c->s, threshold, 1);
	assert_int_equal(t_activity(c->h, 1, 4, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(c->h, 1, 1, 100000, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(c->h, 1, 2, 100000, 2), FLASH_OK);
	for (uint64_t i = 0; i < 300; i++) {
		struct flash_order_res res;
		assert_int_equal(t_order(c->h, 1, 1 + (uint32_t)(i % 2), 1 + i, 1 + (uint32_t)(i % 3), 0, 0, &res),
		                 FLASH_OK);
		if (i == 101)
			c->victim = res.order_no;      /* sku 2, qty 3 */
	}
	c->records = 3 + 300;
	struct mdb_opts mo = { .url = c->url };
	assert_int_equal(mdb_open(&mo, &c->m), FLASH_OK);
	/* every record applied and compared, no difference */
	struct seen_pass sp;
	for (size_t next = 1;; next++) {
		wait_pass(c->s, next, &sp);
		assert_int_equal(sp.p.differences, 0);
		if (sp.p.mysql_checked && sp.p.mysql_lsn == c->records)
			break;
	}
}

static void tamper_teardown(struct tamper_ctx *c)
{
	serve_finish(&c->t);
	mdb_close(c->m);
	seen_free(c->s);
	wt_rmdir(c->dir);
}

/* The first pass that began after now. */
static void next_full_pass(struct tamper_ctx *c, struct seen_pass *sp)
{
	/* the pass in progress may have read before the change: skip it */
	size_t n = seen_count(c->s) + 2;
	wait_pass(c->s, n, sp);
	assert_int_equal(sp->p.rc, FLASH_OK);
	assert_true(sp->p.mysql_checked);
	assert_int_equal(sp->p.mysql_lsn, c->records);
}

static const struct diff *find(const struct seen_pass *sp, int kind, uint32_t sku, uint64_t order)
{
	for (size_t i = 0; i < sp->ndiff; i++)
		if (sp->diff[i].kind == kind && sp->diff[i].sku_id == sku && sp->diff[i].order_no == order)
			return &sp->diff[i];
	return NULL;
}

static void test_tamper_reported_exactly_with_alert(void **state)
{
	(void)state;
	struct tamper_ctx c;
	tamper_setup(&c, 0);               /* default threshold: 0.1 % */
	uint64_t avail1 = t_available(c.h, 1, 1);
	/* 500 units of sku 1 sold in MySQL only (0.25 % of 200000 units), and
	 * one order of sku 2 gone */
	sql(c.m, "UPDATE item_stock SET available = available - 500, sold = sold + 500"
	         " WHERE activity_id = 1 AND sku_id = 1", 1);
	char q[128];
	snprintf(q, sizeof q, "DELETE FROM orders WHERE order_no = %llu", (unsigned long long)c.victim);
	sql(c.m, q, 1);

	struct seen_pass sp;
	next_full_pass(&c, &sp);
	/* exactly: available and sold of sku 1 (WAL vs MySQL), MySQL's own sold
	 * vs its orders on both skus, and the missing order */
	assert_int_equal(sp.p.differences, 5);
	const struct diff *d = find(&sp, DIFF_AVAILABLE, 1, 0);
	assert_non_null(d);
	assert_int_equal(d->wal, (int64_t)avail1);
	assert_int_equal(d->sql, (int64_t)avail1 - 500);
	d = find(&sp, DIFF_SOLD, 1, 0);
	assert_non_null(d);
	assert_int_equal(d->sql - d->wal, 500);
	d = find(&sp, DIFF_ORDER_SUM, 1, 0);
	assert_non_null(d);
	assert_int_equal(d->witnesses, FLASH_W_MYSQL);
	d = find(&sp, DIFF_ORDER_SUM, 2, 0);
	assert_non_null(d);
	assert_int_equal(d->witnesses, FLASH_W_MYSQL);
	d = find(&sp, DIFF_MISSING, 2, c.victim);
	assert_non_null(d);
	assert_int_equal(d->witnesses, FLASH_W_MYSQL);
	assert_int_equal(d->wal, FLASH_ORDER_ACTIVE);
	assert_int_equal(sp.diff_units, 500);
	assert_int_equal(sp.p.alert, 1);
#ifdef FLASH_HAVE_MHD
	/* the metrics say the same (every later pass finds the same five) */
	uint16_t port;
	while ((port = (uint16_t)__atomic_load_n(&c.t.st.metrics_port, __ATOMIC_ACQUIRE)) == 0)
		sched_yield();
	char *body = scrape(port);
	assert_non_null(body);
	assert_int_equal(sample(body, "flashstock_reconcile_differences_last"), 5);
	assert_int_equal(sample(body, "flashstock_reconcile_alert"), 1);
	assert_true(sample(body, "flashstock_reconcile_passes_total") >= sp.p.pass);
	assert_true(sample(body, "flashstock_reconcile_differences_total") >= 5);
	assert_int_equal(sample(body, "flashstock_reconcile_last_lsn"), c.records);
	assert_int_equal(sample(body, "flashstock_reconcile_errors_total"), 0);
	assert_true(sample(body, "flashstock_reconcile_skipped_busy_total") != UINT64_MAX);
	free(body);
#endif
	tamper_teardown(&c);
	assert_int_equal(c.t.st.reconcile_diffs > 0, 1);
}

static void test_tiny_tamper_logged_without_alert(void **state)
{
	(void)state;
	struct tamper_ctx c;
	tamper_setup(&c, 0);
	/* one unit of 200000: 0.0005 %, below the default 0.1 % */
	sql(c.m, "UPDATE item_stock SET available = available + 1, sold = sold - 1"
	         " WHERE activity_id = 1 AND sku_id = 2", 1);
	struct seen_pass sp;
	next_full_pass(&c, &sp);
	assert_int_equal(sp.p.differences, 3);
	assert_non_null(find(&sp, DIFF_AVAILABLE, 2, 0));
	assert_non_null(find(&sp, DIFF_SOLD, 2, 0));
	assert_non_null(find(&sp, DIFF_ORDER_SUM, 2, 0));
	assert_int_equal(sp.diff_units, 1);
	assert_int_equal(sp.p.alert, 0);
	tamper_teardown(&c);
}

static void test_threshold_is_the_alert_line(void **state)
{
	(void)state;
	struct tamper_ctx c;
	tamper_setup(&c, 0.000001);        /* 0.0001 % */
	sql(c.m, "UPDATE item_stock SET available = available + 1, sold = sold - 1"
	         " WHERE activity_id = 1 AND sku_id = 2", 1);
	struct seen_pass sp;
	next_full_pass(&c, &sp);
	assert_int_equal(sp.p.differences, 3);
	assert_int_equal(sp.diff_units, 1);
	assert_int_equal(sp.p.alert, 1);
	tamper_teardown(&c);
}

/* ---- 3. without MySQL ---- */

static void test_without_mysql_segment_vs_wal(void **state)
{
	(void)state;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct seen *s = seen_new();
	struct serve_thread t;
	serve_start(&t, name, dir, NULL, s, 0, 0);
	assert_int_equal(t_activity(h, 1, 2, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 500, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 40; u++)
		assert_int_equal(t_order(h, 1, 1, u, 2, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_restock(h, 1, 1, 7), FLASH_OK);
	/* a pass that compared the segment at the WAL's end: 2 + 40 + 1 records */
	struct seen_pass sp;
	for (size_t next = 1;; next++) {
		wait_pass(s, next, &sp);
		assert_false(sp.p.mysql_checked);
		assert_int_equal(sp.p.differences, 0);
		if (sp.p.seg_checked && sp.p.seg_lsn == 43)
			break;
	}
	assert_int_equal(sp.p.rc, FLASH_OK);
	serve_finish(&t);
	assert_true(t.st.reconcile_passes >= sp.p.pass + 1);   /* the final pass too */
	assert_int_equal(t.st.reconcile_diffs, 0);
	seen_free(s);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_live_passes_find_no_difference_while_orders_flow, t_teardown),
		cmocka_unit_test_teardown(test_tamper_reported_exactly_with_alert, t_teardown),
		cmocka_unit_test_teardown(test_tiny_tamper_logged_without_alert, t_teardown),
		cmocka_unit_test_teardown(test_threshold_is_the_alert_line, t_teardown),
		cmocka_unit_test_teardown(test_without_mysql_segment_vs_wal, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
