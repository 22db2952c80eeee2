/*
 * mysql_pump.c -- the MySQL applier on its own thread (contract in
 * mysql_pump.h).
 *
 * One mutex guards the queue (a ring of struct flash_lsn_record) and the
 * counters; two condition variables: cv_work wakes the pump (records
 * pushed, stop), cv_done wakes flash_mysql_pump_wait() callers (the applied
 * LSN moved).  The pump copies a batch out of the ring, applies it without
 * the lock, and only then removes it from the ring: a failed attempt leaves
 * the queue as it was.  Pushers only ever hold the lock for a memcpy.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mysql_pump.h"

struct flash_mysql_pump {
	pthread_mutex_t mp_mu;
	pthread_cond_t  mp_cv_work;       /* pump: records pushed, catch-up needed, stop */
	pthread_cond_t  mp_cv_done;       /* waiters: applied LSN moved */
	struct flash_lsn_record *mp_q;    /* ring */
	size_t    mp_cap;
	size_t    mp_head;                /* oldest record */
	size_t    mp_n;                   /* records queued */
	uint64_t  mp_pushed_lsn;
	uint64_t  mp_start_durable;       /* opts.start_durable_lsn */
	uint64_t  mp_applied_lsn;
	uint64_t  mp_dropped;
	uint64_t  mp_catch_ups;
	int       mp_need_catchup;        /* records were dropped, or MySQL reported a hole */
	int       mp_stop;
	uint64_t  mp_stop_deadline_ms;
	int       mp_last_rc;
	int       mp_connected;
	struct flash_mysql_stats mp_mstats;  /* copy of the applier's, taken under mp_mu */
	/* owned by the pump's thread */
	flash_mysql_t *mp_m;
	struct flash_lsn_record *mp_batch;
	uint32_t  mp_batch_max;
	uint32_t  mp_backoff_max_ms;
	char     *mp_wal_dir;
	pthread_t mp_thread;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Timed wait on a condition variable created with CLOCK_MONOTONIC. */
static void cv_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

/* Drop queued records MySQL already holds (after a catch-up).  Holds mp_mu. */
static void __pump_trim(flash_mysql_pump_t *p)
{
	while (p->mp_n && p->mp_q[p->mp_head].lsn <= p->mp_applied_lsn) {
		p->mp_head = (p->mp_head + 1) % p->mp_cap;
		p->mp_n--;
	}
}

/* Take the applier's counters.  Holds mp_mu. */
static void __pump_note(flash_mysql_pump_t *p, int rc, uint64_t applied_lsn)
{
	flash_mysql_stats_get(p->mp_m, &p->mp_mstats);
	p->mp_last_rc = rc;
	p->mp_connected = rc != FLASH_EMYSQL_RETRY;
	if (applied_lsn > p->mp_applied_lsn) {
		p->mp_applied_lsn = applied_lsn;
		pthread_cond_broadcast(&p->mp_cv_done);
	}
}

/* Stopping and past the stop deadline?  Holds mp_mu. */
static int __pump_past_deadline(const flash_mysql_pump_t *p)
{
	return p->mp_stop && mono_ms() >= p->mp_stop_deadline_ms;
}

/* Asked by a WAL read-back before each batch: it stops at the deadline too,
 * however far behind MySQL still is.  Called without mp_mu. */
static int pump_go(void *arg)
{
	flash_mysql_pump_t *p = arg;
	pthread_mutex_lock(&p->mp_mu);
	int go = !__pump_past_deadline(p);
	pthread_mutex_unlock(&p->mp_mu);
	return go;
}

/*
 * The pump's loop.  Leaves when stopped and either the queue is empty (and
 * no read-back is pending) or the stop deadline has passed -- also in the
 * middle of a long read-back, between two batches.  Leaving behind, it says
 * how far behind; the WAL keeps the rest for the next start.
 */
/*
 * The pause after the @p n-th failed attempt in a row (n >= 1): exponential
 * from PUMP_BACKOFF_MIN_MS, capped at @p cap_ms, with "equal jitter" -- a
 * random point in the upper half -- so daemons that lost one MySQL together
 * do not come back in step.
 */
#define PUMP_BACKOFF_MIN_MS 10u

static uint64_t pump_backoff_ms(unsigned n, uint32_t cap_ms, unsigned *seed)
{
	uint64_t b = PUMP_BACKOFF_MIN_MS;

	if (cap_ms < PUMP_BACKOFF_MIN_MS)
		cap_ms = PUMP_BACKOFF_MIN_MS;
	while (--n > 0 && b < cap_ms)
		b *= 2;
	if (b > cap_ms)
		b = cap_ms;
	return b / 2 + (uint64_t)rand_r(seed) % (b / 2 + 1);
}

/*
 * Sleep until @p until_ms (CLOCK_MONOTONIC) or the stop deadline, whichever
 * comes first.  Records pushed meanwhile do not shorten it: a MySQL that is
 * down is not asked again sooner because orders keep coming.  Holds mp_mu.
 */
static void __pump_pause(flash_mysql_pump_t *p, uint64_t until_ms)
{
	for (;;) {
		uint64_t now = mono_ms();
		uint64_t end = until_ms;

		if (p->mp_stop && p->mp_stop_deadline_ms < end)
			end = p->mp_stop_deadline_ms;
		if (now >= end)
			return;
		cv_wait_ms(&p->mp_cv_work, &p->mp_mu, end - now);
	}
}

static void *pump_main(void *arg)
{
	flash_mysql_pump_t *p = arg;
	unsigned failures = 0;
	unsigned seed = (unsigned)mono_ms() ^ (unsigned)(uintptr_t)p;
	pthread_mutex_lock(&p->mp_mu);
	for (;;) {
		int pending = p->mp_n || (p->mp_need_catchup && p->mp_wal_dir);
		if (p->mp_stop && (!pending || __pump_past_deadline(p)))
			break;
		if (!pending) {
			pthread_cond_wait(&p->mp_cv_work, &p->mp_mu);
			continue;
		}
		int rc;
		int progress = 0;
		if (p->mp_need_catchup && p->mp_wal_dir) {
			/* Read what the queue lacks back from the WAL. */
			p->mp_need_catchup = 0;
			uint64_t before = p->mp_applied_lsn;
			/* Only what is known durable: pushed, or durable at start. */
			uint64_t upto = p->mp_pushed_lsn > p->mp_start_durable ? p->mp_pushed_lsn
			                                                         : p->mp_start_durable;
			pthread_mutex_unlock(&p->mp_mu);
			struct flash_apply_result tot = { 0 };
			rc = flash_mysql_catch_up_while(p->mp_m, p->mp_wal_dir, upto, p->mp_batch_max, 0,
			                                pump_go, p, &tot, NULL);
			pthread_mutex_lock(&p->mp_mu);
			__pump_note(p, rc, tot.applied_lsn);
			/* FLASH_ECORRUPT: the reader met the frame being written (or real
			 * damage); what came before it is applied.  A later hole brings us
			 * back here.  FLASH_EBUSY: cut short by the stop deadline. */
			if (rc == FLASH_EBUSY) {
				p->mp_need_catchup = 1;
				__pump_trim(p);
			} else if (rc == FLASH_OK || rc == FLASH_ECORRUPT) {
				p->mp_catch_ups++;
				__pump_trim(p);
				progress = rc == FLASH_OK || p->mp_applied_lsn > before;
			} else {
				p->mp_need_catchup = 1;
			}
		} else if (p->mp_n) {
			size_t k = p->mp_n < p->mp_batch_max ? p->mp_n : p->mp_batch_max;
			for (size_t i = 0; i < k; i++)
				p->mp_batch[i] = p->mp_q[(p->mp_head + i) % p->mp_cap];
			pthread_mutex_unlock(&p->mp_mu);
			struct flash_apply_result res = { 0 };
			rc = flash_mysql_apply(p->mp_m, p->mp_batch, k, &res);
			pthread_mutex_lock(&p->mp_mu);
			__pump_note(p, rc, rc == FLASH_OK ? res.applied_lsn : 0);
			if (rc == FLASH_OK) {
				/* Only this thread removes: the k oldest are still the batch. */
				p->mp_head = (p->mp_head + k) % p->mp_cap;
				p->mp_n -= k;
				progress = 1;
			} else if (rc == FLASH_EMYSQL_GAP) {
				p->mp_need_catchup = 1;
				progress = p->mp_wal_dir != NULL;
			}
		} else {
			/* A hole and no WAL to read it from: wait for a restart.
			 * (pending, checked above under the same lock, rules it out.) */
		}
		if (progress) {
			failures = 0;
			continue;
		}
		if (__pump_past_deadline(p))
			break;
		failures++;
		__pump_pause(p, mono_ms() + pump_backoff_ms(failures, p->mp_backoff_max_ms, &seed));
	}
	uint64_t known = p->mp_pushed_lsn > p->mp_start_durable ? p->mp_pushed_lsn : p->mp_start_durable;
	uint64_t applied = p->mp_applied_lsn;
	pthread_mutex_unlock(&p->mp_mu);
	if (applied < known)
		flash_mysql_logf(p->mp_m, FLASH_MYSQL_LOG_WARN,
		                 "applier stopped at its drain deadline %" PRIu64 " record(s) behind: "
		                 "MySQL holds LSN %" PRIu64 " of %" PRIu64 " known durable; nothing is "
		                 "lost, the next start catches up from the WAL",
		                 known - applied, applied, known);
	return NULL;
}

int flash_mysql_pump_start(const struct flash_mysql_pump_opts *o, flash_mysql_pump_t **out)
{
	if (!o || !out || o->mysql.lsn_gaps_ok)
		return FLASH_EINVAL;
	*out = NULL;
	flash_mysql_pump_t *p = calloc(1, sizeof *p);
	if (!p)
		return FLASH_ENOMEM;
	p->mp_cap = o->queue_records ? o->queue_records : 262144;
	p->mp_batch_max = o->batch ? o->batch : 5000;
	p->mp_backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : 2000;
	p->mp_start_durable = o->start_durable_lsn;
	p->mp_q = malloc(p->mp_cap * sizeof *p->mp_q);
	p->mp_batch = malloc(p->mp_batch_max * sizeof *p->mp_batch);
	int rc = FLASH_ENOMEM;
	if (!p->mp_q || !p->mp_batch || (o->wal_dir && !(p->mp_wal_dir = strdup(o->wal_dir))))
		goto fail_mem;
	rc = flash_mysql_open(&o->mysql, &p->mp_m);
	if (rc != FLASH_OK && rc != FLASH_EMYSQL_RETRY)
		goto fail_mem;
	p->mp_connected = rc == FLASH_OK;
	p->mp_last_rc = rc;
	flash_mysql_stats_get(p->mp_m, &p->mp_mstats);
	p->mp_applied_lsn = p->mp_mstats.applied_lsn;
	/* A WAL given: read back whatever MySQL lacks before the first push. */
	p->mp_need_catchup = p->mp_wal_dir != NULL;

	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&p->mp_mu, NULL);
	pthread_cond_init(&p->mp_cv_work, &ca);
	pthread_cond_init(&p->mp_cv_done, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->mp_thread, NULL, pump_main, p)) {
		rc = FLASH_ESYS;
		goto fail_sync;
	}
	*out = p;
	return FLASH_OK;
fail_sync:
	pthread_cond_destroy(&p->mp_cv_done);
	pthread_cond_destroy(&p->mp_cv_work);
	pthread_mutex_destroy(&p->mp_mu);
	flash_mysql_close(p->mp_m);
fail_mem:
	free(p->mp_wal_dir);
	free(p->mp_batch);
	free(p->mp_q);
	free(p);
	return rc;
}

int flash_mysql_pump_push(flash_mysql_pump_t *p, const struct flash_lsn_record *recs, size_t n)
{
	if (!p || (n && !recs))
		return FLASH_EINVAL;
	if (!n)
		return FLASH_OK;
	pthread_mutex_lock(&p->mp_mu);
	if (recs[n - 1].lsn > p->mp_pushed_lsn)
		p->mp_pushed_lsn = recs[n - 1].lsn;
	if (p->mp_cap - p->mp_n < n) {
		/* Never block the WAL: drop, and have the pump read them back. */
		p->mp_dropped += n;
		p->mp_need_catchup = 1;
		pthread_cond_signal(&p->mp_cv_work);
		pthread_mutex_unlock(&p->mp_mu);
		return FLASH_EFULL;
	}
	for (size_t i = 0; i < n; i++)
		p->mp_q[(p->mp_head + p->mp_n + i) % p->mp_cap] = recs[i];
	p->mp_n += n;
	pthread_cond_signal(&p->mp_cv_work);
	pthread_mutex_unlock(&p->mp_mu);
	return FLASH_OK;
}

int flash_mysql_pump_wait(flash_mysql_pump_t *p, uint64_t lsn, uint32_t timeout_ms)
{
	if (!p)
		return FLASH_EINVAL;
	uint64_t deadline = mono_ms() + timeout_ms;
	pthread_mutex_lock(&p->mp_mu);
	while (p->mp_applied_lsn < lsn) {
		uint64_t now = mono_ms();
		if (now >= deadline)
			break;
		cv_wait_ms(&p->mp_cv_done, &p->mp_mu, deadline - now);
	}
	int rc = p->mp_applied_lsn >= lsn ? FLASH_OK : FLASH_EBUSY;
	pthread_mutex_unlock(&p->mp_mu);
	return rc;
}

int flash_mysql_pump_stats_get(flash_mysql_pump_t *p, struct flash_mysql_pump_stats *out)
{
	if (!p || !out)
		return FLASH_EINVAL;
	pthread_mutex_lock(&p->mp_mu);
	out->mysql = p->mp_mstats;
	out->pushed_lsn = p->mp_pushed_lsn;
	out->applied_lsn = p->mp_applied_lsn;
	out->queued = p->mp_n;
	out->queue_cap = p->mp_cap;
	out->dropped = p->mp_dropped;
	out->catch_ups = p->mp_catch_ups;
	out->last_rc = p->mp_last_rc;
	out->connected = p->mp_connected;
	out->stopping = p->mp_stop;
	pthread_mutex_unlock(&p->mp_mu);
	return FLASH_OK;
}

void flash_mysql_pump_stop(flash_mysql_pump_t *p, uint32_t drain_ms)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mp_mu);
	p->mp_stop = 1;
	p->mp_stop_deadline_ms = mono_ms() + drain_ms;
	pthread_cond_signal(&p->mp_cv_work);
	pthread_mutex_unlock(&p->mp_mu);
	pthread_join(p->mp_thread, NULL);
	pthread_cond_destroy(&p->mp_cv_done);
	pthread_cond_destroy(&p->mp_cv_work);
	pthread_mutex_destroy(&p->mp_mu);
	flash_mysql_close(p->mp_m);
	free(p->mp_wal_dir);
	free(p->mp_batch);
	free(p->mp_q);
	free(p);
}
