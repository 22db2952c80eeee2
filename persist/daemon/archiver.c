/*
 * archiver.c -- when an ended activity may be archived, and the daemon's
 * archiver thread (contract in archiver.h).
 *
 * Divisions:
 *   1. Decisions     ended activities, the applied test
 *   2. The thread    a pass every every_ms: due, applied, written,
 *                    flash_archive
 */
#include "archiver.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plog.h"
#include "worker.h"

/* ------------------------------------------------------------------------
 * 1. Decisions
 * ------------------------------------------------------------------------ */

static int cmp_act(const void *x, const void *y)
{
	const struct flash_activity *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

int archiver_ended(flash_t *h, int64_t now_ns, int64_t after_ns, struct flash_activity **out,
                   size_t *n)
{
	if (!h || !out || !n || after_ns < 0)
		return FLASH_EINVAL;
	*out = NULL;
	*n = 0;
	struct flash_seg_opts so;
	int rc = flash_seg_opts_get(h, &so);
	if (rc)
		return rc;
	struct flash_activity *v = NULL;
	size_t k = 0, cap = 0;
	for (uint32_t i = 0; i < so.max_activities; i++) {
		struct flash_activity a;
		rc = flash_activity_at(h, i, &a);
		if (rc == FLASH_ENOT_FOUND || rc == FLASH_EARCHIVED)
			continue;       /* past the end, or an entry an archive freed */
		if (rc) {
			free(v);
			return rc;
		}
		if (a.end_ns > now_ns - after_ns)
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 16;
			struct flash_activity *nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				free(v);
				return FLASH_ENOMEM;
			}
			v = nv;
		}
		v[k++] = a;
	}
	if (k)
		qsort(v, k, sizeof *v, cmp_act);
	*out = v;
	*n = k;
	return FLASH_OK;
}

int archiver_applied(flash_t *h, uint64_t applied_lsn, uint64_t *wal_lsn)
{
	struct flash_ident id;
	int rc = flash_ident_get(h, &id);
	if (rc)
		return rc;
	if (wal_lsn)
		*wal_lsn = id.wal_lsn;
	return applied_lsn >= id.wal_lsn ? FLASH_OK : FLASH_EBUSY;
}

/* ------------------------------------------------------------------------
 * 2. The thread
 *
 * It looks through a read-only handle of its own (no process-table slot),
 * and opens a writable one only for a pass that archives, closing it after:
 * between archives it takes no slot from the buyers.  flash_archive emits
 * the ARCHIVE record into that handle's ring, which the daemon's loop
 * drains like any other (a closed handle's records stay for the consumer),
 * so the daemon's drain never waits for an archive's grace period.
 * Activities it archived are remembered and not tried again.
 * ------------------------------------------------------------------------ */

struct archiver {
	struct archiver_opts  ar_o;
	char                 *ar_segment;
	struct worker         ar_w;          /* the thread (worker.h) */
	flash_t              *ar_h;          /* its read-only handle, opened by it */
	pthread_mutex_t       ar_mu;         /* guards ar_st */
	struct archiver_stats ar_st;
	uint32_t             *ar_done;       /* activities archived here (unsorted, few) */
	size_t                ar_ndone, ar_capdone;
	int                   ar_wait_logged; /* enum ar_wait said last (said once per wait) */
};

/* What a pass waits for. */
enum ar_wait {
	AR_WAIT_NONE = 0,
	AR_WAIT_MARIADB,        /* the applier's applied LSN */
	AR_WAIT_BACKSTOP        /* the backstop's central position */
};

__attribute__((format(printf, 3, 4)))
static void alog(archiver_t *a, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	plog_v(a->ar_o.log, a->ar_o.log_arg, level, fmt, ap);
	va_end(ap);
}

static int done_has(const archiver_t *a, uint32_t id)
{
	for (size_t i = 0; i < a->ar_ndone; i++)
		if (a->ar_done[i] == id)
			return 1;
	return 0;
}

static void done_add(archiver_t *a, uint32_t id)
{
	if (a->ar_ndone == a->ar_capdone) {
		size_t cap = a->ar_capdone ? a->ar_capdone * 2 : 16;
		uint32_t *v = realloc(a->ar_done, cap * sizeof *v);
		if (!v)
			return;         /* tried again next pass: FLASH_ENOT_FOUND then */
		a->ar_done = v;
		a->ar_capdone = cap;
	}
	a->ar_done[a->ar_ndone++] = id;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* One pass: archive every due activity, if MariaDB -- and the backstop,
 * when there is one -- has caught up.  @p h is the read-only handle. */
static void archiver_pass(archiver_t *a, flash_t *h)
{
	struct flash_activity *v = NULL;
	size_t n = 0;
	int rc = archiver_ended(h, realtime_ns(), (int64_t)a->ar_o.after_s * 1000000000ll, &v, &n);
	if (rc) {
		alog(a, PLOG_WARN, "archiver: listing ended activities: %s", flash_strerror(rc));
		return;
	}
	size_t due = 0;
	for (size_t i = 0; i < n; i++)
		if (!done_has(a, v[i].id))
			v[due++] = v[i];
	pthread_mutex_lock(&a->ar_mu);
	a->ar_st.due = (uint32_t)due;
	pthread_mutex_unlock(&a->ar_mu);
	if (!due) {
		free(v);
		return;
	}
	/* The positions before the segment's LSN: a record made between the
	 * reads can only make the test stricter. */
	uint64_t applied = 0, backstop = UINT64_MAX, wal_lsn = 0;
	if (a->ar_o.applied_lsn(a->ar_o.applied_arg, &applied) != 0)
		applied = 0;
	if (a->ar_o.backstop_lsn && a->ar_o.backstop_lsn(a->ar_o.backstop_arg, &backstop) != 0)
		backstop = 0;
	/* The backstop takes an order's limit from its activity in the
	 * segment: an order it has not written when the activity goes is
	 * never checked across boxes.  So it gates the archive as the
	 * applier does. */
	rc = archiver_applied(h, applied < backstop ? applied : backstop, &wal_lsn);
	if (rc != FLASH_OK) {
		int why = applied < wal_lsn || rc != FLASH_EBUSY ? AR_WAIT_MARIADB : AR_WAIT_BACKSTOP;
		if (a->ar_wait_logged != why && why == AR_WAIT_MARIADB)
			alog(a, PLOG_INFO, "archiver: %zu activities due, waiting for MariaDB (applied "
			     "LSN %llu, segment at %llu)", due, (unsigned long long)applied,
			     (unsigned long long)wal_lsn);
		else if (a->ar_wait_logged != why)
			alog(a, PLOG_INFO, "archiver: %zu activities due, waiting for the backstop (its "
			     "orders are in fs_user_limit up to LSN %llu, segment at %llu): an archived "
			     "activity's orders could not be checked across boxes any more", due,
			     (unsigned long long)backstop, (unsigned long long)wal_lsn);
		a->ar_wait_logged = why;
		pthread_mutex_lock(&a->ar_mu);
		a->ar_st.waits++;
		pthread_mutex_unlock(&a->ar_mu);
		free(v);
		return;
	}
	a->ar_wait_logged = AR_WAIT_NONE;
	flash_t *w = NULL;
	if ((rc = flash_open(a->ar_segment, 0, &w)) != FLASH_OK) {
		alog(a, PLOG_WARN, "archiver: open %s: %s (tried again next pass)", a->ar_segment,
		     flash_strerror(rc));
		pthread_mutex_lock(&a->ar_mu);
		a->ar_st.failures++;
		pthread_mutex_unlock(&a->ar_mu);
		free(v);
		return;
	}
	for (size_t i = 0; i < due; i++) {
		struct flash_archive_info info;
		memset(&info, 0, sizeof info);
		rc = flash_archive(w, v[i].id, 0, &info);
		if (rc == FLASH_ENOT_FOUND) {
			done_add(a, v[i].id);   /* archived by someone else meanwhile */
			continue;
		}
		pthread_mutex_lock(&a->ar_mu);
		if (rc == FLASH_OK) {
			a->ar_st.archived++;
			a->ar_st.orders += info.orders;
		} else {
			a->ar_st.failures++;
		}
		pthread_mutex_unlock(&a->ar_mu);
		if (rc == FLASH_OK) {
			char bs[64] = "";
			if (a->ar_o.backstop_lsn)
				snprintf(bs, sizeof bs, ", backstop at %llu", (unsigned long long)backstop);
			done_add(a, v[i].id);
			alog(a, PLOG_INFO, "archiver: archived activity %u (ended %llds ago): %llu "
			     "orders, %u skus, %u shards, %llu tokens reclaimed; MariaDB applied LSN %llu%s >= "
			     "%llu", v[i].id, (long long)((realtime_ns() - v[i].end_ns) / 1000000000ll),
			     (unsigned long long)info.orders, info.skus, info.shards,
			     (unsigned long long)info.tokens, (unsigned long long)applied, bs,
			     (unsigned long long)wal_lsn);
		} else {
			alog(a, PLOG_WARN, "archiver: activity %u: %s (tried again next pass)", v[i].id,
			     flash_strerror(rc));
		}
	}
	flash_close(w);
	free(v);
}

/* One pass of the worker (worker.h): the segment opened on the first one. */
static void archiver_tick(void *arg, int final)
{
	archiver_t *a = arg;
	(void)final;
	if (!a->ar_h) {
		int rc = flash_open(a->ar_segment, FLASH_RDONLY, &a->ar_h);
		if (rc) {
			alog(a, PLOG_WARN, "archiver: open %s: %s", a->ar_segment, flash_strerror(rc));
			a->ar_h = NULL;
		}
	}
	if (a->ar_h)
		archiver_pass(a, a->ar_h);
}

int archiver_start(const struct archiver_opts *o, archiver_t **out)
{
	if (!o || !out || !o->segment || !o->after_s || !o->applied_lsn)
		return FLASH_EINVAL;
	archiver_t *a = calloc(1, sizeof *a);
	if (!a || !(a->ar_segment = strdup(o->segment))) {
		free(a);
		return FLASH_ENOMEM;
	}
	a->ar_o = *o;
	a->ar_o.segment = a->ar_segment;
	pthread_mutex_init(&a->ar_mu, NULL);
	if (worker_start(&a->ar_w, a->ar_o.every_ms ? a->ar_o.every_ms : 1000, 0, archiver_tick,
	                 a) != 0) {
		pthread_mutex_destroy(&a->ar_mu);
		free(a->ar_segment);
		free(a);
		return FLASH_ESYS;
	}
	*out = a;
	return FLASH_OK;
}

void archiver_stats_get(archiver_t *a, struct archiver_stats *out)
{
	if (!a || !out) {
		if (out)
			memset(out, 0, sizeof *out);
		return;
	}
	pthread_mutex_lock(&a->ar_mu);
	*out = a->ar_st;
	pthread_mutex_unlock(&a->ar_mu);
}

void archiver_stop(archiver_t *a, struct archiver_stats *out)
{
	if (!a) {
		if (out)
			memset(out, 0, sizeof *out);
		return;
	}
	worker_stop(&a->ar_w, 0);
	flash_close(a->ar_h);   /* from any thread */
	if (out)
		*out = a->ar_st;
	pthread_mutex_destroy(&a->ar_mu);
	free(a->ar_done);
	free(a->ar_segment);
	free(a);
}
