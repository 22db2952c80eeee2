/*
 * mysql_pump.c -- the MySQL applier on its own thread (contract in
 * mysql_pump.h).
 *
 * The hand-off.  A push copies its records into one chunk and appends it to
 * a wait-free concurrent queue (liburcu's wfcqueue): cds_wfcq_enqueue() is
 * one exchange and one store, so the drain thread never waits for the pump,
 * for MySQL or for another pusher.  The bound is a counter of records queued
 * (mp_queued): a push reserves its records with a CAS before it enqueues,
 * the pump gives them back once MySQL holds them.  The pump alone dequeues:
 * it moves the whole shared queue into its private one with one
 * __cds_wfcq_splice_blocking() per loop and works from there -- it copies a
 * batch out, applies it, and only then frees it, so a failed attempt leaves
 * the queue as it was.
 *
 * Chunks are recycled: the pump puts a chunk it is done with on a free list
 * of its size class (powers of two up to PUMP_CLASS_MAX_RECS records; a CAS
 * push), and a push takes the whole list with one exchange when its own
 * cache of that class is empty, so the drain thread does not meet the pump
 * in malloc's arena lock on every round.  (Taking the whole list has no ABA
 * problem, which a pop of one would; liburcu's wfstack would do, but its
 * end-of-stack sentinel is an address UBSan reports on every push.)  What
 * is kept is bounded by what the queue once held (the queue bound).
 *
 * Sleeping.  A wait-free queue still needs a way to sleep: the pump sleeps
 * on a futex (liburcu's futex_noasync(), FUTEX_WAIT on mp_work_seq with a
 * timeout).  A push looks at mp_sleeping after its enqueue and makes the
 * FUTEX_WAKE system call only when the pump sleeps idle: a push to a busy
 * pump, or to one pausing after a failed attempt (records do not cut a
 * pause short), makes no system call.  No wake-up is lost: see pump_kick().
 *
 * The one mutex left, mp_mu, guards what the pump reports (applied LSN,
 * last result, the applier's counters) and pairs with cv_done, the
 * condition variable mdb_pump_wait() callers sleep on: those are
 * any number of threads with their own timeouts, woken once per applied
 * batch, and a condition variable is the plain tool for that.  The drain
 * thread never takes it: push touches only the queue and atomics.
 *
 * Progress:  push        lock-free (the reservation CAS) but for a malloc
 *                        when no recycled chunk of its size is free; it
 *                        never waits for the pump
 *            stats_get   blocking on mp_mu while the pump notes a result
 *            wait        blocking, by contract
 */
#define _LGPL_SOURCE   /* wfcqueue inline: an enqueue is a few instructions */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/futex.h>
#include <urcu/wfcqueue.h>

#include "mysql_pump.h"
#include "wal.h"

/* One push: its records, in LSN order. */
struct pump_chunk {
	union {
		struct cds_wfcq_node pc_node;   /* while queued */
		struct pump_chunk   *pc_next;   /* while on a free list */
	};
	uint32_t pc_n;                    /* records in pc_recs */
	uint32_t pc_off;                  /* first one MySQL may lack (pump only) */
	uint32_t pc_class;                /* capacity 1 << pc_class records, or
	                                     PUMP_CLASSES: sized to one push, not kept */
	struct lsn_record pc_recs[];
};

#define PUMP_CLASSES 13u                            /* 1 .. 4096 records */
#define PUMP_CLASS_MAX_RECS (1u << (PUMP_CLASSES - 1))

/* mp_sleeping: what the pump is doing in FUTEX_WAIT */
enum { PUMP_AWAKE = 0, PUMP_IDLE = 1, PUMP_PAUSED = 2 };

struct mdb_pump {
	/* the hand-off: pushers enqueue, the pump splices */
	struct __cds_wfcq_head mp_qhead;  /* shared queue (no lock: one dequeuer) */
	struct cds_wfcq_tail   mp_qtail;
	uint64_t  mp_queued;              /* records reserved by pushes, not yet
	                                     applied (atomic); <= mp_cap */
	uint64_t  mp_pushed_lsn;          /* atomic max */
	uint64_t  mp_dropped;             /* atomic */
	int       mp_drop_flag;           /* atomic: records were dropped since the
	                                     pump last looked */
	int32_t   mp_work_seq;            /* futex word: bumped to wake the pump */
	int32_t   mp_sleeping;            /* atomic PUMP_AWAKE / IDLE / PAUSED */
	struct pump_chunk *mp_free[PUMP_CLASSES];   /* atomic: chunks the pump is done with */
	struct pump_chunk *mp_cache[PUMP_CLASSES];  /* taken from mp_free, under mp_cache_busy */
	int       mp_cache_busy;          /* atomic: a push is using mp_cache (one at a time) */
	int       mp_stop;                /* atomic, release after mp_stop_deadline_ms */
	uint64_t  mp_stop_deadline_ms;
	size_t    mp_cap;
	uint64_t  mp_start_durable;       /* opts.start_durable_lsn */
	/* what the pump reports, under mp_mu */
	pthread_mutex_t mp_mu;
	pthread_cond_t  mp_cv_done;       /* waiters: applied LSN moved */
	uint64_t  mp_applied_lsn;
	uint64_t  mp_catch_ups;
	int       mp_last_rc;
	int       mp_connected;
	struct mdb_stats mp_mstats;  /* copy of the applier's */
	/* owned by the pump's thread */
	struct __cds_wfcq_head mp_phead;  /* private queue: spliced, not yet applied */
	struct cds_wfcq_tail   mp_ptail;
	int       mp_need_catchup;        /* records were dropped, or MySQL reported a hole */
	mdb_t *mp_m;
	const struct mdb_applier *mp_ap; /* the applier it drives */
	struct lsn_record *mp_batch;
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

/* ---- the pump's side of the hand-off (pump thread only) ---- */

/*
 * Wake the pump if it sleeps in @p state (PUMP_IDLE: new work; 0: any
 * sleep, for the stop).  The caller has published its change before (the
 * enqueue's exchange, the drop flag's store): that store, and the seq_cst
 * load of mp_sleeping here, pair with the pump's seq_cst store of
 * mp_sleeping and its look for work after it (pump_idle): either the pump
 * sees the change and does not sleep, or this sees it sleeping and wakes
 * it.  The increment makes a FUTEX_WAIT that has not started yet return at
 * once.
 */
static void pump_kick(mdb_pump_t *p, int32_t state)
{
	int32_t s = __atomic_load_n(&p->mp_sleeping, __ATOMIC_SEQ_CST);
	if (s == PUMP_AWAKE || (state != 0 && s != state))
		return;
	__atomic_fetch_add(&p->mp_work_seq, 1, __ATOMIC_SEQ_CST);
	futex_noasync(&p->mp_work_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* FUTEX_WAIT on the word as read in @p seq, for at most @p ms. */
static void pump_futex_wait(mdb_pump_t *p, int32_t seq, uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	futex_noasync(&p->mp_work_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
}

/* Anything for the pump: a chunk pushed, records dropped, the stop. */
static int pump_news(mdb_pump_t *p)
{
	return !cds_wfcq_empty(&p->mp_qhead, &p->mp_qtail) ||
	       __atomic_load_n(&p->mp_drop_flag, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&p->mp_stop, __ATOMIC_ACQUIRE);
}

/* Sleep until there is news (or a second has passed: the loop looks again). */
static void pump_idle(mdb_pump_t *p)
{
	int32_t seq = __atomic_load_n(&p->mp_work_seq, __ATOMIC_SEQ_CST);
	__atomic_store_n(&p->mp_sleeping, PUMP_IDLE, __ATOMIC_SEQ_CST);
	if (!pump_news(p))
		pump_futex_wait(p, seq, 1000);
	__atomic_store_n(&p->mp_sleeping, PUMP_AWAKE, __ATOMIC_RELAXED);
}

/* Move every chunk pushed so far into the private queue, in push order.
 * One dequeuer (this thread): the splice needs no lock.  Blocking: it waits
 * (spinning, then yielding) for a push half-way through its enqueue -- one
 * store away from done. */
static void pump_take(mdb_pump_t *p)
{
	if (!cds_wfcq_empty(&p->mp_qhead, &p->mp_qtail))
		(void)__cds_wfcq_splice_blocking(&p->mp_phead, &p->mp_ptail, &p->mp_qhead,
		                                 &p->mp_qtail);
}

/* Records spliced and not yet applied? */
static int pump_has_work(mdb_pump_t *p)
{
	return !cds_wfcq_empty(&p->mp_phead, &p->mp_ptail);
}

/* Done with @p c: onto its class's free list (lock-free: the pump is the
 * only one to add, a push only ever takes the whole list), or freed. */
static void pump_chunk_put(mdb_pump_t *p, struct pump_chunk *c)
{
	if (c->pc_class >= PUMP_CLASSES) {
		free(c);
		return;
	}
	struct pump_chunk **head = &p->mp_free[c->pc_class];
	c->pc_next = __atomic_load_n(head, __ATOMIC_RELAXED);
	/* release: a push that takes the list sees the chunk's link */
	while (!__atomic_compare_exchange_n(head, &c->pc_next, c, 1, __ATOMIC_RELEASE,
	                                    __ATOMIC_RELAXED))
		;
}

/*
 * A chunk for @p n records: a recycled one of its class, else a new one.
 * One push at a time uses the cache: one that finds another in it
 * allocates instead of waiting.
 */
static struct pump_chunk *pump_chunk_get(mdb_pump_t *p, size_t n)
{
	uint32_t k = 0;
	while (k < PUMP_CLASSES && ((size_t)1 << k) < n)
		k++;
	if (k < PUMP_CLASSES && !__atomic_exchange_n(&p->mp_cache_busy, 1, __ATOMIC_ACQUIRE)) {
		struct pump_chunk *c = p->mp_cache[k];
		if (c == NULL)   /* acquire: pairs with pump_chunk_put's release */
			c = __atomic_exchange_n(&p->mp_free[k], NULL, __ATOMIC_ACQUIRE);
		if (c != NULL)
			p->mp_cache[k] = c->pc_next;
		__atomic_store_n(&p->mp_cache_busy, 0, __ATOMIC_RELEASE);
		if (c != NULL)
			return c;
	}
	size_t cap = k < PUMP_CLASSES ? (size_t)1 << k : n;
	struct pump_chunk *c = malloc(sizeof *c + cap * sizeof c->pc_recs[0]);
	if (c != NULL)
		c->pc_class = k;
	return c;
}

/*
 * MySQL holds every record up to @p lsn: free the chunks (and skip the
 * records) at the private queue's front it covers, and give their room
 * back to pushers.
 */
static void pump_release_upto(mdb_pump_t *p, uint64_t lsn)
{
	size_t freed = 0;
	for (;;) {
		struct cds_wfcq_node *node = __cds_wfcq_first_blocking(&p->mp_phead, &p->mp_ptail);
		if (node == NULL)
			break;
		struct pump_chunk *c = caa_container_of(node, struct pump_chunk, pc_node);
		while (c->pc_off < c->pc_n && c->pc_recs[c->pc_off].lsn <= lsn) {
			c->pc_off++;
			freed++;
		}
		if (c->pc_off < c->pc_n)
			break;
		(void)__cds_wfcq_dequeue_blocking(&p->mp_phead, &p->mp_ptail);
		pump_chunk_put(p, c);
	}
	/* release: a push that reserves this room comes after our reads of
	 * the chunks freed (none are touched again) */
	__atomic_fetch_sub(&p->mp_queued, freed, __ATOMIC_RELEASE);
}

/* Copy up to mp_batch_max records from the private queue's front into
 * mp_batch, leaving the queue as it is.  @return records copied. */
static size_t pump_batch(mdb_pump_t *p)
{
	size_t k = 0;
	struct cds_wfcq_node *node;
	__cds_wfcq_for_each_blocking(&p->mp_phead, &p->mp_ptail, node) {
		struct pump_chunk *c = caa_container_of(node, struct pump_chunk, pc_node);
		for (uint32_t i = c->pc_off; i < c->pc_n && k < p->mp_batch_max; i++)
			p->mp_batch[k++] = c->pc_recs[i];
		if (k == p->mp_batch_max)
			break;
	}
	return k;
}

/* Take the applier's counters.  Holds mp_mu. */
static void __pump_note(mdb_pump_t *p, int rc, uint64_t applied_lsn)
{
	p->mp_ap->stats_get(p->mp_m, &p->mp_mstats);
	p->mp_last_rc = rc;
	p->mp_connected = rc != FLASH_EMYSQL_RETRY;
	if (applied_lsn > p->mp_applied_lsn) {
		p->mp_applied_lsn = applied_lsn;
		pthread_cond_broadcast(&p->mp_cv_done);
	}
}

/* Stopping and past the stop deadline?  Any thread; acquire pairs with the
 * release in mdb_pump_stop(), so the deadline read is the one set. */
static int pump_past_deadline(const mdb_pump_t *p)
{
	return __atomic_load_n(&p->mp_stop, __ATOMIC_ACQUIRE) &&
	       mono_ms() >= p->mp_stop_deadline_ms;
}

/* Asked by a WAL read-back before each batch: it stops at the deadline too,
 * however far behind MySQL still is. */
static int pump_go(void *arg)
{
	return !pump_past_deadline(arg);
}

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
 * down is not asked again sooner because orders keep coming.
 */
static void pump_pause(mdb_pump_t *p, uint64_t until_ms)
{
	for (;;) {
		int32_t seq = __atomic_load_n(&p->mp_work_seq, __ATOMIC_SEQ_CST);
		__atomic_store_n(&p->mp_sleeping, PUMP_PAUSED, __ATOMIC_SEQ_CST);
		uint64_t now = mono_ms();
		uint64_t end = until_ms;

		if (__atomic_load_n(&p->mp_stop, __ATOMIC_ACQUIRE) && p->mp_stop_deadline_ms < end)
			end = p->mp_stop_deadline_ms;
		if (now >= end)
			break;
		pump_futex_wait(p, seq, end - now);
	}
	__atomic_store_n(&p->mp_sleeping, PUMP_AWAKE, __ATOMIC_RELAXED);
}

/* Read what the queue lacks back from the WAL.  @return progress made. */
static int pump_catch_up(mdb_pump_t *p)
{
	p->mp_need_catchup = 0;
	pthread_mutex_lock(&p->mp_mu);
	uint64_t before = p->mp_applied_lsn;
	pthread_mutex_unlock(&p->mp_mu);
	/* Only what is known durable: pushed, or durable at start.  Acquire:
	 * pairs with a dropping push's release of mp_drop_flag, read before. */
	uint64_t pushed = __atomic_load_n(&p->mp_pushed_lsn, __ATOMIC_ACQUIRE);
	uint64_t upto = pushed > p->mp_start_durable ? pushed : p->mp_start_durable;
	struct apply_result tot = { 0 };
	int rc = p->mp_ap->catch_up_while(p->mp_m, p->mp_wal_dir, upto, p->mp_batch_max, 0,
	                                    pump_go, p, &tot);
	/* this thread alone writes mp_applied_lsn: no lock to read it */
	uint64_t applied = tot.applied_lsn > before ? tot.applied_lsn : before;
	/* the queue first, then the applied LSN: whoever sees the LSN move
	 * (under mp_mu) sees the records gone from the queue too */
	int stop = wal_rc_is_stop(rc);
	if (rc == FLASH_EBUSY || rc == FLASH_OK || stop)
		pump_release_upto(p, applied);
	pthread_mutex_lock(&p->mp_mu);
	__pump_note(p, rc, tot.applied_lsn);
	int progress = 0;
	/* A WAL stop cause: the reader met the frame being written (or real
	 * damage); what came before it is applied.  A later hole brings us
	 * back here.  FLASH_EBUSY: cut short by the stop deadline. */
	if (rc == FLASH_EBUSY) {
		p->mp_need_catchup = 1;
	} else if (rc == FLASH_OK || stop) {
		p->mp_catch_ups++;
		progress = rc == FLASH_OK || applied > before;
	} else {
		p->mp_need_catchup = 1;
	}
	pthread_mutex_unlock(&p->mp_mu);
	return progress;
}

/* Apply one batch from the private queue.  @return progress made. */
static int pump_apply(mdb_pump_t *p)
{
	size_t k = pump_batch(p);
	struct apply_result res = { 0 };
	int rc = p->mp_ap->apply(p->mp_m, p->mp_batch, k, &res);
	/* the k oldest are the batch: MySQL holds them now.  The queue
	 * first, then the applied LSN (see pump_catch_up). */
	if (rc == FLASH_OK)
		pump_release_upto(p, p->mp_batch[k - 1].lsn);
	pthread_mutex_lock(&p->mp_mu);
	__pump_note(p, rc, rc == FLASH_OK ? res.applied_lsn : 0);
	pthread_mutex_unlock(&p->mp_mu);
	if (rc == FLASH_OK)
		return 1;
	if (rc == FLASH_EMYSQL_GAP) {
		p->mp_need_catchup = 1;
		return p->mp_wal_dir != NULL;
	}
	return 0;
}

/*
 * The pump's loop.  Leaves when stopped and either the queue is empty (and
 * no read-back is pending) or the stop deadline has passed -- also in the
 * middle of a long read-back, between two batches.  Leaving behind, it says
 * how far behind; the WAL keeps the rest for the next start.
 */
static void *pump_main(void *arg)
{
	mdb_pump_t *p = arg;
	unsigned failures = 0;
	unsigned seed = (unsigned)mono_ms() ^ (unsigned)(uintptr_t)p;
	for (;;) {
		int stop = __atomic_load_n(&p->mp_stop, __ATOMIC_ACQUIRE);
		pump_take(p);
		/* acquire: pairs with the dropping push's release */
		if (__atomic_exchange_n(&p->mp_drop_flag, 0, __ATOMIC_ACQUIRE))
			p->mp_need_catchup = 1;
		int pending = pump_has_work(p) || (p->mp_need_catchup && p->mp_wal_dir);
		if (stop && (!pending || pump_past_deadline(p)))
			break;
		if (!pending) {
			pump_idle(p);   /* a push, a drop or the stop wakes it */
			continue;
		}
		int progress = 0;
		if (p->mp_need_catchup && p->mp_wal_dir)
			progress = pump_catch_up(p);
		else if (pump_has_work(p))
			progress = pump_apply(p);
		/* else: a hole and no WAL to read it from: wait for a restart
		 * (pending, checked above, rules it out) */
		if (progress) {
			failures = 0;
			continue;
		}
		if (pump_past_deadline(p))
			break;
		failures++;
		pump_pause(p, mono_ms() + pump_backoff_ms(failures, p->mp_backoff_max_ms, &seed));
	}
	uint64_t pushed = __atomic_load_n(&p->mp_pushed_lsn, __ATOMIC_ACQUIRE);
	uint64_t known = pushed > p->mp_start_durable ? pushed : p->mp_start_durable;
	pthread_mutex_lock(&p->mp_mu);
	uint64_t applied = p->mp_applied_lsn;
	pthread_mutex_unlock(&p->mp_mu);
	if (applied < known)
		p->mp_ap->logf(p->mp_m, PLOG_WARN,
		                 "applier stopped at its drain deadline %" PRIu64 " record(s) behind: "
		                 "MySQL holds LSN %" PRIu64 " of %" PRIu64 " known durable; nothing is "
		                 "lost, the next start catches up from the WAL",
		                 known - applied, applied, known);
	return NULL;
}

/* Free every chunk still queued (at stop, or a failed start). */
static void pump_free_queues(mdb_pump_t *p)
{
	struct cds_wfcq_node *node;
	__cds_wfcq_splice_blocking(&p->mp_phead, &p->mp_ptail, &p->mp_qhead, &p->mp_qtail);
	while ((node = __cds_wfcq_dequeue_blocking(&p->mp_phead, &p->mp_ptail)) != NULL)
		free(caa_container_of(node, struct pump_chunk, pc_node));
	for (uint32_t k = 0; k < PUMP_CLASSES; k++) {
		struct pump_chunk *lists[2] = { p->mp_free[k], p->mp_cache[k] };
		for (int i = 0; i < 2; i++)
			while (lists[i] != NULL) {
				struct pump_chunk *next = lists[i]->pc_next;
				free(lists[i]);
				lists[i] = next;
			}
	}
}

const struct mdb_applier mdb_applier_mariadb = {
	.open = mdb_open, .close = mdb_close, .apply = mdb_apply,
	.catch_up_while = mdb_catch_up_while, .stats_get = mdb_stats_get, .logf = mdb_logf,
};

int mdb_pump_start(const struct mdb_pump_opts *o, mdb_pump_t **out)
{
	if (!o || !out || o->mysql.lsn_gaps_ok)
		return FLASH_EINVAL;
	*out = NULL;
	mdb_pump_t *p = calloc(1, sizeof *p);
	if (!p)
		return FLASH_ENOMEM;
	__cds_wfcq_init(&p->mp_qhead, &p->mp_qtail);
	__cds_wfcq_init(&p->mp_phead, &p->mp_ptail);
	p->mp_cap = o->queue_records ? o->queue_records : 262144;
	p->mp_batch_max = o->batch ? o->batch : 5000;
	p->mp_backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : 2000;
	p->mp_start_durable = o->start_durable_lsn;
	p->mp_ap = o->applier ? o->applier : &mdb_applier_mariadb;
	p->mp_batch = malloc(p->mp_batch_max * sizeof *p->mp_batch);
	int rc = FLASH_ENOMEM;
	if (!p->mp_batch || (o->wal_dir && !(p->mp_wal_dir = strdup(o->wal_dir))))
		goto fail_mem;
	rc = p->mp_ap->open(&o->mysql, &p->mp_m);
	if (rc != FLASH_OK && rc != FLASH_EMYSQL_RETRY)
		goto fail_mem;
	p->mp_connected = rc == FLASH_OK;
	p->mp_last_rc = rc;
	p->mp_ap->stats_get(p->mp_m, &p->mp_mstats);
	p->mp_applied_lsn = p->mp_mstats.applied_lsn;
	/* A WAL given: read back whatever MySQL lacks before the first push. */
	p->mp_need_catchup = p->mp_wal_dir != NULL;

	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&p->mp_mu, NULL);
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
	pthread_mutex_destroy(&p->mp_mu);
	p->mp_ap->close(p->mp_m);
fail_mem:
	free(p->mp_wal_dir);
	free(p->mp_batch);
	free(p);
	return rc;
}

/*
 * Reserve @p n records of room.  The acquire on success pairs with the
 * pump's release when it frees room (pump_release_upto).  Lock-free: a
 * failed CAS means another push reserved, or the pump freed, meanwhile.
 */
static int pump_reserve(mdb_pump_t *p, size_t n)
{
	uint64_t q = __atomic_load_n(&p->mp_queued, __ATOMIC_RELAXED);
	do {
		if (p->mp_cap - q < n)
			return 0;
	} while (!__atomic_compare_exchange_n(&p->mp_queued, &q, q + n, 1, __ATOMIC_ACQUIRE,
	                                      __ATOMIC_RELAXED));
	return 1;
}

/* pushed_lsn = max(pushed_lsn, lsn); release: a pump that sees it sees what
 * the push published before (the drop flag is set after it). */
static void pump_note_pushed(mdb_pump_t *p, uint64_t lsn)
{
	uint64_t cur = __atomic_load_n(&p->mp_pushed_lsn, __ATOMIC_RELAXED);
	while (lsn > cur && !__atomic_compare_exchange_n(&p->mp_pushed_lsn, &cur, lsn, 1,
	                                                 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

int mdb_pump_push(mdb_pump_t *p, const struct lsn_record *recs, size_t n)
{
	if (!p || (n && !recs))
		return FLASH_EINVAL;
	if (!n)
		return FLASH_OK;
	pump_note_pushed(p, recs[n - 1].lsn);
	struct pump_chunk *c = NULL;
	if (n <= UINT32_MAX && pump_reserve(p, n)) {
		c = pump_chunk_get(p, n);
		if (c == NULL)   /* give the room back: dropped like a full queue */
			__atomic_fetch_sub(&p->mp_queued, n, __ATOMIC_RELAXED);
	}
	if (c == NULL) {
		/* Never block the WAL: drop, and have the pump read them back. */
		__atomic_fetch_add(&p->mp_dropped, n, __ATOMIC_RELAXED);
		__atomic_store_n(&p->mp_drop_flag, 1, __ATOMIC_SEQ_CST);
		pump_kick(p, PUMP_IDLE);
		return FLASH_EFULL;
	}
	cds_wfcq_node_init(&c->pc_node);
	c->pc_n = (uint32_t)n;
	c->pc_off = 0;
	memcpy(c->pc_recs, recs, n * sizeof *recs);
	/* wait-free; its exchange is a full barrier: the chunk's contents are
	 * visible to the pump before the chunk is */
	cds_wfcq_enqueue(&p->mp_qhead, &p->mp_qtail, &c->pc_node);
	pump_kick(p, PUMP_IDLE);
	return FLASH_OK;
}

int mdb_pump_wait(mdb_pump_t *p, uint64_t lsn, uint32_t timeout_ms)
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

int mdb_pump_stats_get(mdb_pump_t *p, struct mdb_pump_stats *out)
{
	if (!p || !out)
		return FLASH_EINVAL;
	/* the hand-off's counters are atomics, each read on its own: a
	 * snapshot of each, not of all at one instant (as before: a push may
	 * land between two reads) */
	out->pushed_lsn = __atomic_load_n(&p->mp_pushed_lsn, __ATOMIC_ACQUIRE);
	out->queued = __atomic_load_n(&p->mp_queued, __ATOMIC_RELAXED);
	out->queue_cap = p->mp_cap;
	out->dropped = __atomic_load_n(&p->mp_dropped, __ATOMIC_RELAXED);
	out->stopping = __atomic_load_n(&p->mp_stop, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&p->mp_mu);
	out->mysql = p->mp_mstats;
	out->applied_lsn = p->mp_applied_lsn;
	out->catch_ups = p->mp_catch_ups;
	out->last_rc = p->mp_last_rc;
	out->connected = p->mp_connected;
	pthread_mutex_unlock(&p->mp_mu);
	return FLASH_OK;
}

void mdb_pump_stop(mdb_pump_t *p, uint32_t drain_ms)
{
	if (!p)
		return;
	p->mp_stop_deadline_ms = mono_ms() + drain_ms;
	/* release: the pump reads the deadline after it sees mp_stop */
	__atomic_store_n(&p->mp_stop, 1, __ATOMIC_SEQ_CST);
	pump_kick(p, 0);
	pthread_join(p->mp_thread, NULL);
	pump_free_queues(p);
	pthread_cond_destroy(&p->mp_cv_done);
	pthread_mutex_destroy(&p->mp_mu);
	p->mp_ap->close(p->mp_m);
	free(p->mp_wal_dir);
	free(p->mp_batch);
	free(p);
}
