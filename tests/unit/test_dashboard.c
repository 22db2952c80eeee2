/*
 * test_dashboard.c -- the dashboard figures (issue 12, section 3): the
 * engine's own per-operation latency histograms and result counts
 * (flash_obs_get), lock wait and hold times, and their export with the
 * stock per sku by `serve --metrics`, checked against a known sale.
 */
#include <pthread.h>
#include <signal.h>

#include "helpers.h"
#include "serve.h"
#include "wal_testutil.h"

/*
 * The known sale, on a fresh segment: activity 1 (one order per user) has
 * sku 1 with 10 units and sku 2 with 5; activity 2 opens in an hour.
 *   users 1..12 order sku 1:   10 ok, 2 sold out
 *   user 1 orders sku 2:       limit
 *   user 20 orders activity 2: not started
 *   order 0 qty:               invalid
 *   user 40 orders sku 2 with a request id, then retries it: ok, duplicate
 *   one cancel, then again:    ok, cancelled
 *   restock sku 2 by 3:        ok
 *   token issued, redeemed twice: ok, bad token
 */
struct sale {
	uint64_t first_order;
};

static void sale_run(flash_t *h, struct sale *s)
{
	assert_int_equal(t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 10, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 2, 5, 1), FLASH_OK);
	struct flash_activity later = {
		.id = 2, .limit_per_user = 1, .max_qty = 1, .scope = FLASH_SCOPE_ACTIVITY,
		.start_ns = t_now_ns() + 3600 * 1000000000ll, .end_ns = t_now_ns() + 7200 * 1000000000ll,
	};
	assert_int_equal(flash_activity_add(h, &later), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 1, 5, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 12; u++) {
		struct flash_order_res res;
		int rc = t_order(h, 1, 1, u, 1, 0, 0, &res);
		assert_int_equal(rc, u <= 10 ? FLASH_OK : FLASH_ESOLD_OUT);
		if (u == 1)
			s->first_order = res.order_no;
	}
	assert_int_equal(t_order(h, 1, 2, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(h, 2, 1, 20, 1, 0, 0, NULL), FLASH_ENOT_STARTED);
	assert_int_equal(t_order(h, 1, 2, 21, 0, 0, 0, NULL), FLASH_EINVAL);
	struct flash_order_res dup;
	assert_int_equal(t_order(h, 1, 2, 40, 1, 0, 777, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 2, 40, 1, 0, 777, &dup), FLASH_EDUPLICATE);
	assert_int_equal(dup.first_rc, FLASH_OK);
	assert_int_equal(flash_cancel(h, s->first_order, NULL), FLASH_OK);
	assert_int_equal(flash_cancel(h, s->first_order, NULL), FLASH_ECANCELLED);
	assert_int_equal(flash_restock(h, 1, 2, 3), FLASH_OK);
	uint64_t tok;
	assert_int_equal(flash_token_issue(h, 1, 2, 30, 60000, &tok), FLASH_OK);
	assert_int_equal(flash_token_redeem(h, 1, 2, 30, tok), FLASH_OK);
	assert_int_equal(flash_token_redeem(h, 1, 2, 30, tok), FLASH_EBAD_TOKEN);
}

static uint64_t calls(const struct flash_obs *o, unsigned op)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < FLASH_OBS_CODES; c++)
		n += o->results[op][c];
	return n;
}

/* Every call is counted once under its operation and its result code, and
 * timed once into that operation's histogram. */
static void test_engine_counts_each_call_by_operation_and_result(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_consumer *c = t_consumer_start(name);   /* frees the ring */
	assert_non_null(c);
	struct sale s;
	sale_run(h, &s);
	struct flash_obs *o = calloc(1, sizeof *o);
	assert_non_null(o);
	assert_int_equal(flash_obs_get(h, o), FLASH_OK);
	assert_int_equal(o->results[FLASH_OP_ORDER][0], 11);
	assert_int_equal(o->results[FLASH_OP_ORDER][-FLASH_EDUPLICATE], 1);
	assert_int_equal(o->results[FLASH_OP_ORDER][-FLASH_ESOLD_OUT], 2);
	assert_int_equal(o->results[FLASH_OP_ORDER][-FLASH_ELIMIT], 1);
	assert_int_equal(o->results[FLASH_OP_ORDER][-FLASH_ENOT_STARTED], 1);
	assert_int_equal(o->results[FLASH_OP_ORDER][-FLASH_EINVAL], 1);
	assert_int_equal(calls(o, FLASH_OP_ORDER), 17);
	assert_int_equal(o->results[FLASH_OP_CANCEL][0], 1);
	assert_int_equal(o->results[FLASH_OP_CANCEL][-FLASH_ECANCELLED], 1);
	assert_int_equal(calls(o, FLASH_OP_RESTOCK), 1);
	assert_int_equal(o->results[FLASH_OP_TOKEN_ISSUE][0], 1);
	assert_int_equal(o->results[FLASH_OP_TOKEN_REDEEM][0], 1);
	assert_int_equal(o->results[FLASH_OP_TOKEN_REDEEM][-FLASH_EBAD_TOKEN], 1);
	for (unsigned op = 0; op < FLASH_OP_COUNT; op++) {
		/* the histogram holds each call once -- orders one in 16 per
		 * handle, its first included: of these 17 the 1st and the 17th */
		assert_int_equal(o->time[op].count,
		                 op == FLASH_OP_ORDER ? (calls(o, op) + 15) / 16 : calls(o, op));
		uint64_t sum = 0;
		for (unsigned b = 0; b < FLASH_OBS_BUCKETS; b++)
			sum += o->time[op].bucket[b];
		assert_int_equal(sum, o->time[op].count);
		if (o->time[op].count)
			assert_true(o->time[op].sum_ns > 0);
	}
	/* a call refused by the handle checks is not the engine's: not counted */
	flash_t *ro;
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	assert_int_equal(t_order(ro, 1, 1, 99, 1, 0, 0, NULL), FLASH_EREADONLY);
	struct flash_obs *o2 = calloc(1, sizeof *o2);
	assert_non_null(o2);
	assert_int_equal(flash_obs_get(ro, o2), FLASH_OK);
	assert_int_equal(calls(o2, FLASH_OP_ORDER), 17);
	assert_int_equal(o2->time[FLASH_OP_ORDER].count, 2);
	flash_close(ro);
	t_consumer_stop(c);
	free(o);
	free(o2);
}

/* Lock wait: first refused acquire to the grant, on the waiting handle;
 * hold: grant to release, and grant to the lease's end when a later
 * acquire finds the lease over.  Lower bounds only (the sleeps between). */
static void test_lock_wait_and_hold_are_measured_from_refusal_and_grant(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f;
	assert_int_equal(flash_lock_acquire(h, "L", 1, 60000, &f), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "L", 2, 60000, &f), FLASH_ELOCKED);
	t_sleep_ms(20);
	assert_int_equal(flash_lock_acquire(h, "L", 2, 60000, &f), FLASH_ELOCKED);
	assert_int_equal(flash_lock_release(h, "L", 1), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "L", 2, 60000, &f), FLASH_OK);
	assert_int_equal(flash_lock_renew(h, "L", 2, 60000), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "L", 3), FLASH_ENOT_OWNER);
	t_sleep_ms(10);
	assert_int_equal(flash_lock_release(h, "L", 2), FLASH_OK);
	/* a lease that ends by itself: its hold ends at the lease's end */
	assert_int_equal(flash_lock_acquire(h, "M", 5, 30, &f), FLASH_OK);
	t_sleep_ms(60);
	assert_int_equal(flash_lock_acquire(h, "M", 6, 1000, &f), FLASH_OK);

	struct flash_obs *o = calloc(1, sizeof *o);
	assert_non_null(o);
	assert_int_equal(flash_obs_get(h, o), FLASH_OK);
	const struct flash_hist *w = &o->time[FLASH_TIME_LOCK_WAIT], *hd = &o->time[FLASH_TIME_LOCK_HOLD];
	assert_int_equal(w->count, 1);               /* one contended grant; the rest at once */
	assert_true(w->sum_ns >= 20 * 1000000ull);   /* from the first refusal, not the second */
	assert_int_equal(hd->count, 3);              /* L by 1, L by 2, M by 5 (expired) */
	/* the lease's end is kept in whole ms: 30 ms after the grant's ms, so
	 * at least 29 ms after the grant itself */
	assert_true(hd->sum_ns >= (20 + 10 + 29) * 1000000ull);
	assert_true(hd->sum_ns < (20 + 10 + 60) * 1000000ull + 60 * 1000000000ull);
	assert_int_equal(o->results[FLASH_OP_LOCK_ACQUIRE][0], 4);
	assert_int_equal(o->results[FLASH_OP_LOCK_ACQUIRE][-FLASH_ELOCKED], 2);
	assert_int_equal(o->results[FLASH_OP_LOCK_RENEW][0], 1);
	assert_int_equal(o->results[FLASH_OP_LOCK_RELEASE][0], 2);
	assert_int_equal(o->results[FLASH_OP_LOCK_RELEASE][-FLASH_ENOT_OWNER], 1);
	free(o);
}

#ifdef FLASH_HAVE_MHD
static int has_line(const char *body, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == 0))
			return 1;
	return 0;
}

/* Each new metric has its HELP and TYPE lines. */
static void assert_described(const char *body, const char *name, const char *type)
{
	char l[160];
	snprintf(l, sizeof l, "# TYPE %s %s", name, type);
	if (!has_line(body, l))
		fail_msg("no '%s' line", l);
	snprintf(l, sizeof l, "# HELP %s ", name);
	if (!strstr(body, l))
		fail_msg("no HELP line for %s", name);
}

static void test_metrics_export_the_dashboard_of_a_known_sale(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	memset(&t, 0, sizeof t);
	serve_opts_default(&t.o);
	t.o.segment = name;
	t.o.wal_dir = dir;
	t.o.log_level = PLOG_ERROR;
	t.o.idle_us_max = 200;
	t.o.stop = &t.stop;
	t.o.metrics = "127.0.0.1:0";
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);
	struct sale s;
	sale_run(h, &s);
	uint64_t f;
	assert_int_equal(flash_lock_acquire(h, "L", 1, 60000, &f), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "L", 1), FLASH_OK);
	struct flash_obs o;
	assert_int_equal(flash_obs_get(h, &o), FLASH_OK);   /* this handle's last call in */
	uint16_t port;
	while ((port = (uint16_t)__atomic_load_n(&t.st.metrics_port, __ATOMIC_ACQUIRE)) == 0)
		t_sleep_ms(5);
	char *body = t_metrics_get(port);
	assert_non_null(body);
	assert_non_null(strstr(body, "200 OK"));

	assert_described(body, "flashstock_op_duration_seconds", "histogram");
	assert_described(body, "flashstock_results_total", "counter");
	assert_described(body, "flashstock_lock_wait_seconds", "histogram");
	assert_described(body, "flashstock_lock_hold_seconds", "histogram");
	assert_described(body, "flashstock_sku_available", "gauge");
	assert_described(body, "flashstock_sku_sold", "gauge");
	assert_described(body, "flashstock_sku_total", "gauge");

	/* results: a success rate is one division */
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"ok\"}"), 11);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"duplicate\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"sold_out\"}"), 2);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"limit\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"not_started\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"inval\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"cancel\",code=\"cancelled\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"token_redeem\",code=\"bad_token\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"lock_release\",code=\"ok\"}"), 1);
	/* a code never seen is not listed; "ok" always is */
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"order\",code=\"busy\"}"), UINT64_MAX);
	assert_int_equal(t_metrics_sample(body, "flashstock_results_total{op=\"lock_renew\",code=\"ok\"}"), 0);

	/* the order histogram: one order in 16 per handle (here the 1st and
	 * the 17th of 17), cumulative buckets ending at +Inf; other operations
	 * every call */
	assert_int_equal(t_metrics_sample(body, "flashstock_op_duration_seconds_count{op=\"order\"}"), 2);
	assert_int_equal(t_metrics_sample(body, "flashstock_op_duration_seconds_bucket{op=\"order\",le=\"+Inf\"}"), 2);
	assert_int_equal(t_metrics_sample(body, "flashstock_op_duration_seconds_count{op=\"cancel\"}"), 2);
	assert_non_null(strstr(body, "flashstock_op_duration_seconds_bucket{op=\"order\",le=\"6.4e-08\"} "));
	assert_non_null(strstr(body, "flashstock_op_duration_seconds_sum{op=\"order\"} "));
	assert_int_equal(t_metrics_sample(body, "flashstock_op_duration_seconds_count{op=\"restock\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_lock_hold_seconds_count"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_lock_wait_seconds_count"), 0);
	uint64_t prev = 0;
	for (const char *p = strstr(body, "flashstock_op_duration_seconds_bucket{op=\"order\"");
	     p && strncmp(p, "flashstock_op_duration_seconds_bucket{op=\"order\"", 48) == 0;
	     p = strchr(p, '\n') + 1) {
		uint64_t v = strtoull(strchr(p, ' ') + 1, NULL, 10);
		assert_true(v >= prev);
		prev = v;
	}
	assert_int_equal(prev, 2);

	/* stock per sku in memory: sku 1 sold 10, one cancelled; sku 2 restocked */
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_available{activity=\"1\",sku=\"1\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_sold{activity=\"1\",sku=\"1\"}"), 9);
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_total{activity=\"1\",sku=\"1\"}"), 10);
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_available{activity=\"1\",sku=\"2\"}"), 7);
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_sold{activity=\"1\",sku=\"2\"}"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_total{activity=\"1\",sku=\"2\"}"), 8);
	assert_int_equal(t_metrics_sample(body, "flashstock_sku_sold{activity=\"2\",sku=\"1\"}"), 0);
	/* no MySQL: no MySQL figures, no ping */
	assert_int_equal(t_metrics_sample(body, "flashstock_mysql_connected"), UINT64_MAX);
	free(body);
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t.th, NULL);
	assert_int_equal(t.rc, 0);
	wt_rmdir(dir);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_engine_counts_each_call_by_operation_and_result, t_teardown),
		cmocka_unit_test_teardown(test_lock_wait_and_hold_are_measured_from_refusal_and_grant, t_teardown),
#ifdef FLASH_HAVE_MHD
		cmocka_unit_test_teardown(test_metrics_export_the_dashboard_of_a_known_sale, t_teardown),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
