/*
 * mysql_apply_bench.c -- sustained throughput of the MySQL applier, next to
 * the baseline it replaces (one autocommitted conditional UPDATE per order).
 *
 *   eval "$(tests/fixtures/mariadb.sh start)"
 *   build/mysql_apply_bench [--orders N] [--batch B] [--skus S] [--baseline N]
 *                           [--url URL]
 *   tests/fixtures/mariadb.sh stop "$FLASH_MARIADB_DIR"
 *
 * The applier gets an ACTIVITY, S SKU records and N ORDER records (one unit
 * each, distinct users, round-robin over the skus) in batches of B, as the
 * daemon hands them over from the WAL; every batch is one transaction with
 * innodb_flush_log_at_trx_commit as the server has it.  The baseline runs
 * `UPDATE item_stock ... WHERE available >= 1` once per order, autocommit.
 * Works in database flash_bench_<pid>, dropped at the end.  Prints one
 * human line per measure and a JSON line; numbers only, no verdict.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "flashstock.h"
#include "mysql_apply.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: mysql_apply_bench [--orders N] [--batch B] [--skus S] [--baseline N]"
	                " [--url mysql://user@localhost/db?socket=PATH]\n"
	                "default URL: from $FLASH_MYSQL_SOCKET (tests/fixtures/mariadb.sh)\n");
}

int main(int argc, char **argv)
{
	long orders = 500000, batch = 5000, skus = 1, baseline = 5000;
	const char *url = NULL;
	for (int i = 1; i < argc; i += 2) {    /* options come in pairs */
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage();
			return 0;
		}
		if (!v) {
			usage();
			return 2;
		}
		if (!strcmp(a, "--orders")) orders = atol(v);
		else if (!strcmp(a, "--batch")) batch = atol(v);
		else if (!strcmp(a, "--skus")) skus = atol(v);
		else if (!strcmp(a, "--baseline")) baseline = atol(v);
		else if (!strcmp(a, "--url")) url = v;
		else {
			usage();
			return 2;
		}
	}
	if (orders <= 0 || batch <= 0 || skus <= 0 || skus > 100000 || baseline < 0) {
		usage();
		return 2;
	}
	char dbname[64], urlbuf[600];
	snprintf(dbname, sizeof dbname, "flash_bench_%d", (int)getpid());
	if (!url) {
		const char *sock = getenv("FLASH_MYSQL_SOCKET");
		if (!sock) {
			fprintf(stderr, "mysql_apply_bench: set FLASH_MYSQL_SOCKET (eval \"$(tests/fixtures/mariadb.sh start)\") or pass --url\n");
			return 2;
		}
		snprintf(urlbuf, sizeof urlbuf, "mysql://root@localhost/%s?socket=%s", dbname, sock);
		url = urlbuf;
	}
	struct mdb_opts o = { .url = url, .log_level = PLOG_WARN };
	mdb_t *m;
	int rc = mdb_open(&o, &m);
	if (rc) {
		fprintf(stderr, "mysql_apply_bench: open: %s\n", flash_strerror(rc));
		return 1;
	}

	size_t total = (size_t)orders + (size_t)skus + 1;
	struct lsn_record *v = calloc(total, sizeof *v);
	if (!v) {
		mdb_close(m);
		return 1;
	}
	uint64_t lsn = 1;
	size_t n = 0;
	v[n].lsn = lsn++;
	v[n].rec.type = FLASH_REC_ACTIVITY;
	v[n].rec.activity_id = 1;
	v[n].rec.biz_day = 1 | FLASH_SCOPE_ACTIVITY << 8;
	v[n].rec.limit_slot = 1;
	v[n].rec.ts_ns = INT64_MAX;
	n++;
	for (long s = 1; s <= skus; s++, n++) {
		v[n].lsn = lsn++;
		v[n].rec.type = FLASH_REC_SKU;
		v[n].rec.activity_id = 1;
		v[n].rec.sku_id = (uint32_t)s;
		v[n].rec.qty = 1;
		v[n].rec.value = orders / skus + 1 + baseline;
	}
	for (long i = 0; i < orders; i++, n++) {
		struct flash_record *r = &v[n].rec;
		v[n].lsn = lsn++;
		r->type = FLASH_REC_ORDER;
		r->activity_id = 1;
		r->sku_id = (uint32_t)(i % skus + 1);
		r->order_no = (uint64_t)i + 1;
		r->user_id = (uint64_t)i + 1000;
		r->qty = 1;
		r->limit_slot = 1;
		r->ts_ns = 1700000000000000000 + i;
	}

	/* Catalog first (not timed), then the orders in batches. */
	rc = mdb_apply(m, v, (size_t)skus + 1, NULL);
	double t0 = now_s();
	uint64_t refused = 0;
	for (size_t at = (size_t)skus + 1; rc == FLASH_OK && at < n; at += (size_t)batch) {
		size_t len = n - at < (size_t)batch ? n - at : (size_t)batch;
		struct apply_result res = { 0 };
		rc = mdb_apply_retry(m, v + at, len, &res, 30000);
		refused += res.refused;
	}
	double t_apply = now_s() - t0;
	if (rc) {
		fprintf(stderr, "mysql_apply_bench: apply: %s\n", flash_strerror(rc));
		mdb_close(m);
		free(v);
		return 1;
	}
	struct mdb_stats st;
	mdb_stats_get(m, &st);
	double rate = (double)orders / t_apply;
	printf("applier: %ld orders in batches of %ld over %ld sku(s): %.3f s, %.0f orders/s"
	       " (%llu batches, %llu slow, %llu refused)\n", orders, batch, skus, t_apply, rate,
	       (unsigned long long)st.batches, (unsigned long long)st.slow_batches,
	       (unsigned long long)refused);

	/* Baseline: one autocommitted conditional UPDATE per order, hot row. */
	MYSQL *c = mdb_conn(m);
	double base_rate = 0;
	if (c && baseline > 0) {
		double t1 = now_s();
		long ok = 0;
		for (long i = 0; i < baseline; i++) {
			if (mysql_query(c, "UPDATE item_stock SET available=available-1, sold=sold+1"
			                   " WHERE activity_id=1 AND sku_id=1 AND available>=1")) {
				fprintf(stderr, "baseline: %s\n", mysql_error(c));
				break;
			}
			ok += (long)mysql_affected_rows(c);
		}
		double t_base = now_s() - t1;
		base_rate = (double)ok / t_base;
		printf("baseline: %ld conditional UPDATEs, autocommit, one hot row: %.3f s, %.0f updates/s\n",
		       ok, t_base, base_rate);
	}
	printf("{\"bench\":\"mysql_apply\",\"orders\":%ld,\"batch\":%ld,\"skus\":%ld,\"seconds\":%.3f,"
	       "\"orders_per_s\":%.0f,\"baseline_updates_per_s\":%.0f,\"ratio\":%.1f}\n",
	       orders, batch, skus, t_apply, rate, base_rate, base_rate > 0 ? rate / base_rate : 0.0);

	if (c && url == urlbuf) {
		char sql[128];
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", dbname);
		mysql_query(c, sql);
	}
	mdb_close(m);
	free(v);
	return 0;
}
