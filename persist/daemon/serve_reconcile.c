/*
 * serve_reconcile.c -- the daemon's periodic reconciler (contract in
 * serve_reconcile.h).
 *
 * Divisions: logging, the WAL vs MySQL part, the segment vs WAL part, one
 * pass (both parts, log, figures, hook), the thread, start and stop.
 *
 * Two folds of the WAL are kept from pass to pass, each advanced only
 * forward: r_fsql to MySQL's applied LSN, r_fseg to the durable LSN of the
 * last quiet window.  MySQL trails the WAL, so one fold could not serve
 * both cuts; each frame is read once per fold.  A fold that would have to
 * go backwards (MySQL's applied LSN lower than before: the database was
 * reset) is rebuilt from the WAL's start.
 */
#include "serve_reconcile.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

#include "plog.h"
#include "rcu_box.h"
#include "worker.h"

struct serve_recon {
	struct serve_recon_opts r_o;
	struct mdb_opts r_mo;
	int              r_use_mysql;
	mdb_t   *r_m;          /* owned by the thread */
	flash_t         *r_h;          /* read-only, opened by the thread */
	fold_t    *r_fsql;       /* WAL folded to MySQL's applied LSN */
	fold_t    *r_fseg;       /* WAL folded to the last quiet window's durable LSN */
	struct worker    r_w;          /* the thread: a pass every every_ms, a final one at a
	                                  clean stop (worker.h) */
	pthread_mutex_t  r_mu;         /* guards r_skus.. */
	struct serve_recon_stats r_st; /* the thread's own (read by others after the join) */
	rbox_t          *r_pub;        /* r_st as of the last pass, RCU-published: the
	                                  metrics thread reads it without waiting for a pass */
	/* MySQL's per-sku figures of the last pass whose WAL vs MySQL part ran:
	 * a variable-length copy the metrics thread takes whole, under r_mu
	 * (a scrape a second; the pass holds it only to swap the array in) */
	struct rsql_sku *r_skus;  /* malloc'ed */
	size_t           r_nskus;
	int64_t          r_skus_ns;    /* ... when (CLOCK_REALTIME); 0: never */
	uint64_t         r_skus_lsn;   /* ... at this applied LSN */
};

/* ------------------------------------------------------------------------
 * Logging (the daemon's format: "<time> serve [level] reconcile: ...")
 * ------------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4)))
static void rlog(const struct serve_recon *r, int level, const char *fmt, ...)
{
	if (level > r->r_o.log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	plog_vline(level, "reconcile: ", fmt, ap);
	va_end(ap);
}

/* Advance @p *f to exactly @p lsn (a fresh fold when it is past it). */
static int fold_to(struct serve_recon *r, fold_t **f, uint64_t lsn)
{
	int rc;
	if (fold_lsn(*f) > lsn) {
		fold_t *nf;
		if ((rc = fold_new(&nf)))
			return rc;
		fold_free(*f);
		*f = nf;
	}
	if (lsn == 0 || fold_lsn(*f) == lsn)
		return FLASH_OK;
	if (r->r_o.wal_dir && (rc = fold_start(*f, r->r_o.wal_dir, lsn)) != FLASH_OK) {
		rlog(r, PLOG_ERROR, "WAL fold start: %s", flash_strerror(rc));
		return rc;
	}
	if (fold_lsn(*f) == lsn)
		return FLASH_OK;
	rc = fold_wal_live(*f, r->r_o.wal, lsn);
	if (rc) {
		rlog(r, PLOG_ERROR, "WAL read: %s", flash_strerror(rc));
		return rc;
	}
	if (fold_lsn(*f) != lsn) {
		rlog(r, PLOG_ERROR, "the durable WAL ends at LSN %" PRIu64 ", before LSN %" PRIu64,
		     fold_lsn(*f), lsn);
		return FLASH_ECORRUPT;
	}
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * WAL vs MySQL, at one consistent snapshot
 * ------------------------------------------------------------------------ */

static int sql_exec(MYSQL *c, const char *sql)
{
	if (mysql_query(c, sql))
		return -1;
	MYSQL_RES *res = mysql_store_result(c);
	if (res)
		mysql_free_result(res);
	return 0;
}

/* Keep @p skus (taken over) as the last pass's MySQL figures, read at @p lsn
 * in the pass's one snapshot: the dashboard's per-sku memory vs MySQL. */
static void skus_keep(struct serve_recon *r, struct rsql_sku *skus, size_t n, uint64_t lsn)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&r->r_mu);
	free(r->r_skus);
	r->r_skus = skus;
	r->r_nskus = n;
	r->r_skus_lsn = lsn;
	r->r_skus_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	pthread_mutex_unlock(&r->r_mu);
}

static int part_mysql(struct serve_recon *r, struct reconcile_report *rep, uint64_t *lsn)
{
	int rc;
	if (!r->r_m) {
		rc = mdb_open(&r->r_mo, &r->r_m);
		if (rc != FLASH_OK && rc != FLASH_EMYSQL_RETRY)
			return rc;
	}
	MYSQL *c = mdb_conn(r->r_m);
	if (!c)
		return FLASH_EMYSQL_RETRY;
	if (sql_exec(c, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ") ||
	    sql_exec(c, "START TRANSACTION WITH CONSISTENT SNAPSHOT")) {
		rlog(r, PLOG_WARN, "MySQL: %s", mysql_error(c));
		mdb_conn_lost(r->r_m);
		return FLASH_EMYSQL_RETRY;
	}
	unsigned long tid = mysql_thread_id(c);
	rc = mdb_applied_lsn(r->r_m, lsn);
	if (rc == FLASH_OK)
		rc = fold_to(r, &r->r_fsql, *lsn);
	if (rc == FLASH_OK)
		rc = reconcile_compare(NULL, r->r_m, r->r_fsql, RECONCILE_WAL_ORDERS, rep);
	struct rsql_sku *skus = NULL;
	size_t nskus = 0;
	if (rc == FLASH_OK)
		rc = rsql_skus(r->r_m, &skus, &nskus);
	if (rc != FLASH_OK && rep->diffs)
		reconcile_report_free(rep);
	/* Every read above must have come from the one snapshot: a lost
	 * connection reconnects without it. */
	c = mdb_conn(r->r_m);
	if (rc == FLASH_OK && (!c || mysql_thread_id(c) != tid)) {
		reconcile_report_free(rep);
		rc = FLASH_EMYSQL_RETRY;
	}
	if (c && sql_exec(c, "COMMIT") && rc == FLASH_OK) {
		reconcile_report_free(rep);
		rc = FLASH_EMYSQL_RETRY;
	}
	if (rc == FLASH_OK)
		skus_keep(r, skus, nskus, *lsn);
	else
		free(skus);
	return rc;
}

/* ------------------------------------------------------------------------
 * Segment vs WAL, in a quiet window
 * ------------------------------------------------------------------------ */

static int quiet(const struct flash_quiet *q) { return q->pending == 0 && q->in_flight == 0; }

/* FLASH_OK with *checked 0 when no quiet window was seen. */
static int part_segment(struct serve_recon *r, struct reconcile_report *rep, uint64_t *lsn,
                        int *checked)
{
	int rc;
	*checked = 0;
	if (!r->r_h && (rc = flash_open(r->r_o.segment, FLASH_RDONLY, &r->r_h)))
		return rc;
	/* Fold what is durable now first, so the window below stays short. */
	if ((rc = fold_to(r, &r->r_fseg, wal_durable_lsn(r->r_o.wal))))
		return rc;
	struct flash_quiet q1, q2;
	if ((rc = flash_quiet_get(r->r_h, &q1)))
		return rc;
	if (!quiet(&q1))
		return FLASH_OK;
	/* Quiet: every record made so far is durable, so the durable LSN now
	 * covers exactly the segment's state (until an operation begins). */
	*lsn = wal_durable_lsn(r->r_o.wal);
	if ((rc = fold_to(r, &r->r_fseg, *lsn)))
		return rc;
	if ((rc = reconcile_compare(r->r_h, NULL, r->r_fseg, 0, rep)))
		return rc;
	if ((rc = flash_quiet_get(r->r_h, &q2))) {
		reconcile_report_free(rep);
		return rc;
	}
	if (!quiet(&q2) || q2.ops != q1.ops || q2.consumed != q1.consumed) {
		reconcile_report_free(rep);
		return FLASH_OK;
	}
	*checked = 1;
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * One pass
 * ------------------------------------------------------------------------ */

static int over(const struct reconcile_report *rep, double limit)
{
	return rep && rep->units && (double)rep->diff_units / (double)rep->units > limit;
}

static void log_diffs(struct serve_recon *r, const char *part, const struct reconcile_report *rep,
                      double limit)
{
	char line[384];
	for (size_t i = 0; i < rep->n; i++) {
		diff_format(&rep->diffs[i], line, sizeof line);
		rlog(r, PLOG_WARN, "%s: %s", part, line);
	}
	if (rep->found > rep->n)
		rlog(r, PLOG_WARN, "%s: %" PRIu64 " more difference(s) not listed", part, rep->found - rep->n);
	if (over(rep, limit))
		rlog(r, PLOG_ERROR, "ALERT %s: %" PRIu64 " of %" PRIu64 " units differ (%.4f%%, threshold "
		     "%.4f%%)", part, rep->diff_units, rep->units,
		     100.0 * (double)rep->diff_units / (double)rep->units, 100.0 * limit);
}

static void pass_run(struct serve_recon *r, int final)
{
	struct reconcile_report rsql, rseg;
	memset(&rsql, 0, sizeof rsql);
	memset(&rseg, 0, sizeof rseg);
	struct serve_recon_pass p;
	memset(&p, 0, sizeof p);
	p.final = final;
	double limit = r->r_o.threshold > 0 ? r->r_o.threshold : 0.001;
	int rc;

	if (r->r_use_mysql) {
		rc = part_mysql(r, &rsql, &p.mysql_lsn);
		if (rc == FLASH_OK) {
			p.mysql_checked = 1;
			p.wal_sql = &rsql;
		} else {
			p.rc = rc;
			rlog(r, PLOG_WARN, "WAL vs MySQL not compared this pass: %s", flash_strerror(rc));
		}
	}
	rc = part_segment(r, &rseg, &p.seg_lsn, &p.seg_checked);
	if (rc != FLASH_OK) {
		p.rc = p.rc ? p.rc : rc;
		rlog(r, PLOG_WARN, "segment vs WAL not compared this pass: %s", flash_strerror(rc));
	} else if (p.seg_checked) {
		p.seg_wal = &rseg;
	} else {
		p.seg_busy = 1;
	}

	if (p.wal_sql) {
		p.differences += rsql.found;
		log_diffs(r, "WAL vs MySQL", &rsql, limit);
	}
	if (p.seg_wal) {
		p.differences += rseg.found;
		log_diffs(r, "segment vs WAL", &rseg, limit);
	}
	p.alert = over(p.wal_sql, limit) || over(p.seg_wal, limit);

	p.pass = ++r->r_st.passes;
	r->r_st.diffs_last = p.differences;
	r->r_st.diffs_total += p.differences;
	r->r_st.alert = (uint64_t)p.alert;
	r->r_st.skipped_busy += (uint64_t)p.seg_busy;
	r->r_st.errors += p.rc != FLASH_OK;
	if (p.mysql_checked)
		r->r_st.last_lsn = p.mysql_lsn;
	else if (!r->r_use_mysql && p.seg_checked)
		r->r_st.last_lsn = p.seg_lsn;
	/* out of memory: readers keep the previous pass's figures */
	(void)rbox_publish(r->r_pub, &r->r_st);

	char sqlpart[96] = "no MySQL", segpart[96];
	if (r->r_use_mysql && p.mysql_checked)
		snprintf(sqlpart, sizeof sqlpart, "WAL vs MySQL at LSN %" PRIu64 ": %" PRIu64, p.mysql_lsn, rsql.found);
	else if (r->r_use_mysql)
		snprintf(sqlpart, sizeof sqlpart, "WAL vs MySQL not compared");
	if (p.seg_checked)
		snprintf(segpart, sizeof segpart, "segment vs WAL at LSN %" PRIu64 ": %" PRIu64, p.seg_lsn, rseg.found);
	else
		snprintf(segpart, sizeof segpart, "segment vs WAL skipped (%s)",
		         p.seg_busy ? "busy: no quiet window" : "error");
	rlog(r, p.differences ? PLOG_WARN : PLOG_INFO, "%spass %" PRIu64 ": %" PRIu64
	     " difference(s); %s; %s", final ? "final " : "", p.pass, p.differences, sqlpart, segpart);

	if (r->r_o.hook)
		r->r_o.hook(r->r_o.hook_arg, &p);
	reconcile_report_free(&rsql);
	reconcile_report_free(&rseg);
}

/* ------------------------------------------------------------------------
 * The thread
 * ------------------------------------------------------------------------ */

/* The worker's pass (worker.h); final: the pass of a clean stop. */
static void recon_pass(void *arg, int final)
{
	pass_run(arg, final);
}

int serve_recon_start(const struct serve_recon_opts *o, serve_recon_t **out)
{
	if (!o || !out || !o->segment || !o->wal || o->every_ms == 0)
		return FLASH_EINVAL;
	struct serve_recon *r = calloc(1, sizeof *r);
	if (!r)
		return FLASH_ENOMEM;
	r->r_o = *o;
	r->r_use_mysql = o->mysql_url != NULL || o->mysql_defaults != NULL;
	r->r_mo.url = o->mysql_url;
	r->r_mo.defaults_file = o->mysql_defaults;
	r->r_mo.require_db = o->mysql_require_db;
	r->r_mo.log = plog_mysql_line;
	r->r_mo.log_arg = &r->r_o.log_level;
	int rc = FLASH_OK;
	if ((rc = fold_new(&r->r_fsql)) || (rc = fold_new(&r->r_fseg)))
		goto fail;
	if (rbox_new(sizeof r->r_st, &r->r_pub) != 0) {
		rc = FLASH_ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&r->r_mu, NULL);
	if (worker_start(&r->r_w, o->every_ms, 0, recon_pass, r) != 0) {
		pthread_mutex_destroy(&r->r_mu);
		rc = FLASH_ESYS;
		goto fail;
	}
	rlog(r, PLOG_INFO, "every %u ms, alert past %.4f%% of units; %s", o->every_ms,
	     100.0 * (o->threshold > 0 ? o->threshold : 0.001),
	     r->r_use_mysql ? "segment, WAL and MySQL" : "segment and WAL (no MySQL)");
	*out = r;
	return FLASH_OK;
fail:
	rbox_free(r->r_pub);
	fold_free(r->r_fsql);
	fold_free(r->r_fseg);
	free(r);
	return rc;
}

int serve_recon_skus_get(serve_recon_t *r, struct rsql_sku **out, size_t *n,
                         int64_t *when_ns, uint64_t *lsn)
{
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&r->r_mu);
	*when_ns = r->r_skus_ns;
	*lsn = r->r_skus_lsn;
	if (r->r_nskus) {
		*out = malloc(r->r_nskus * sizeof **out);
		if (*out == NULL) {
			pthread_mutex_unlock(&r->r_mu);
			return FLASH_ENOMEM;
		}
		memcpy(*out, r->r_skus, r->r_nskus * sizeof **out);
		*n = r->r_nskus;
	}
	pthread_mutex_unlock(&r->r_mu);
	return FLASH_OK;
}

void serve_recon_stats_get(serve_recon_t *r, struct serve_recon_stats *out)
{
	rbox_read(r->r_pub, out);   /* one pass's figures, whole */
}

void serve_recon_stop(serve_recon_t *r, int final_pass, struct serve_recon_stats *st)
{
	if (!r)
		return;
	worker_stop(&r->r_w, final_pass);
	/* the thread's connection and handle, closed once it is gone */
	mdb_close(r->r_m);
	if (r->r_h)
		flash_close(r->r_h);
	if (st)
		*st = r->r_st;
	pthread_mutex_destroy(&r->r_mu);
	rbox_free(r->r_pub);
	fold_free(r->r_fsql);
	fold_free(r->r_fseg);
	free(r->r_skus);
	free(r);
}
