/*
 * lease.c -- the box's lease agent (contract in lease.h).
 *
 * Divisions:
 *   1. Small tools     logging, clocks, restock with a full ring retried
 *   2. Intent file     the one durable note of the operation in flight
 *   3. Skus and leases the agent's view of the segment and of its open leases
 *   4. Operations      take, return, drain (each: intent, local, central, clear)
 *   5. Start           drain, register, put back + finish the intent, or reclaim when fenced
 *   6. Loop            heartbeat, suspend/resume, refill, surplus, end of sale
 *   7. Thread, stats
 *
 * Why the order inside each operation is safe (crash points in brackets):
 *   take:   intent [1] central take commits [2] restock +k, durable [3] intent cleared.
 *           Dead at [1]: the lease id is absent centrally -> nothing to do.
 *           Dead at [2]: present, segment total = total before -> load it.
 *           Dead at [3]: total = before + k -> done.
 *   return: intent [1] restock -k, durable [2] central return [3] intent cleared.
 *           Dead at [1]: total = before -> nothing left the segment; drop it.
 *           Dead at [2]: total = before - k -> return it, conditional on the
 *           returned count: if it had committed, the replay is recognised.
 *   A unit is therefore always in the segment, in the pool, or sold -- and
 *   the crash window only decides which of the first two, never both.
 *   "Durable" is what makes that hold through a power cut, which rebuilds
 *   the segment from the WAL (serve --recover): every restock is on disk
 *   before the step after it (restock_durable), in async durability too --
 *   else a -k lost behind a committed return leaves its units in the
 *   segment and the pool, a +k lost behind a cleared intent in neither.
 *   An intent stays until its operation is complete: when a step fails
 *   with its units out of place, the agent stops operating (stuck()) rather
 *   than let later operations move the totals the next start judges by.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"
#include "flashstock_consumer.h"
#include "lease.h"
#include "central.h"
#include "mysql_apply.h"
#include "pio.h"
#include "plog.h"

/* ------------------------------------------------------------------------
 * 1. Small tools
 * ------------------------------------------------------------------------ */

struct llease {
	uint64_t ll_id;
	int64_t  ll_units;
	int64_t  ll_returned;
	int      ll_closed;         /* closed at the end of the sale */
	int64_t  ll_sold;           /* its sold_at_close (closed leases) */
};

struct lsku {
	uint32_t ks_act, ks_sku;
	int      ks_pool;           /* 1 the pool exists centrally, 0 unknown, -1 none */
	uint64_t ks_pool_check_ms;  /* next look for a missing pool / surplus */
	int64_t  ks_last_sold;
	uint64_t ks_last_ms;
	double   ks_rate;           /* EWMA of units sold per second */
	int      ks_closed;         /* the sale ended: returned and closed */
	int      ks_wanted;         /* we recorded `wanted` on its pool */
	uint64_t ks_take_after_ms;  /* an empty pool is asked again after this */
	struct llease *ks_l;
	size_t   ks_nl, ks_capl;
};

struct intent {
	char     it_op;             /* 't' take, 'r' return, 'c' return to a closed lease (a
	                               cancel after the sale), 'd' drained while suspended */
	uint64_t it_id;             /* lease id ('t', 'r') */
	uint32_t it_act, it_sku;
	int64_t  it_k;              /* units */
	int64_t  it_before;         /* 'r': the lease's returned count before */
	int64_t  it_total;          /* the sku's segment total before the local step */
};

struct lease {
	struct lease_opts l_o;
	char            *l_segment, *l_urls, *l_dir;
	pthread_t        l_thr;
	int              l_started;
	volatile int     l_stop;          /* atomic: set by stop */
	volatile int     l_done;          /* atomic: the thread has finished its work */
	pthread_mutex_t  l_mu;            /* guards l_st and l_cv */
	pthread_cond_t   l_cv;
	struct lease_stats l_st;
	/* agent thread only */
	flash_t         *l_h;
	central_t *l_c;
	uint32_t         l_epoch;
	uint32_t         l_seq;
	struct lsku     *l_sku;
	size_t           l_nsku, l_capsku;
	struct intent   *l_it;
	size_t           l_nit, l_capit;
	const char      *l_kill_at;       /* tests: FLASH_LEASE_KILL_AT */
	uint64_t         l_hb_ok_ms;      /* CLOCK_MONOTONIC: the last heartbeat MariaDB accepted was sent */
	int              l_suspended;
	int              l_drain_err;     /* a drain failure was logged this suspension */
	int              l_stuck_rc;      /* a stuck agent's rc, reported again after a suspension */
	int              l_pending;       /* the last intent's central step has an unknown fate */
	int              l_stuck;         /* an operation stopped with its intent kept: no more
	                                     takes or returns until a restart finishes it */
};

__attribute__((format(printf, 3, 4)))
static void llog(const struct lease *a, int level, const char *fmt, ...)
{
	if (level > a->l_o.log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	plog_vline(level, "lease: ", fmt, ap);
	va_end(ap);
}

static void central_log(void *arg, int level, const char *msg)
{
	llog(arg, level, "%s", msg);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int stopping(struct lease *a)
{
	return __atomic_load_n(&a->l_stop, __ATOMIC_ACQUIRE) != 0;
}

/* Sleep @p ms or until stop is asked. */
static void nap(struct lease *a, uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000u;
	ts.tv_nsec += (long)(ms % 1000u) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&a->l_mu);
	if (!stopping(a))
		pthread_cond_timedwait(&a->l_cv, &a->l_mu, &ts);
	pthread_mutex_unlock(&a->l_mu);
}

/* Tests: end the process with SIGKILL at the named point (once). */
static void kill_point(struct lease *a, const char *name)
{
	if (a->l_kill_at && strcmp(a->l_kill_at, name) == 0) {
		llog(a, PLOG_WARN, "FLASH_LEASE_KILL_AT=%s: SIGKILL now", name);
		raise(SIGKILL);
	}
}

/*
 * flash_restock, waiting out a full ring (FLASH_EBUSY: serve drains it) for
 * at most 5 s.  FLASH_EFATE_UNKNOWN (sync durability, not yet durable) is
 * done in memory: the WAL will have it, so it counts as done -- unless a
 * power cut comes first: a step that depends on it being on disk uses
 * restock_durable().
 */
static int restock(struct lease *a, uint32_t act, uint32_t sku, int64_t delta)
{
	for (int i = 0; i < 5000; i++) {
		int rc = flash_restock(a->l_h, act, sku, delta);
		if (rc == FLASH_EFATE_UNKNOWN)
			return FLASH_OK;
		if (rc != FLASH_EBUSY)
			return rc;
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
	return FLASH_EBUSY;
}

/*
 * Wait until every record the agent's handle has published is durable, so
 * that the step after a restock is never on disk before it.  serve makes it
 * durable at its next commit, also while a stop is under way (it writes
 * until the agent is done).  The bound is a sync buyer's, 5 s: a WAL that
 * takes longer has failed in all but name, and a longer wait would hold up
 * the loop's heartbeat and its suspension.
 * FLASH_OK; FLASH_EDURABILITY (the WAL failed); FLASH_EFATE_UNKNOWN.
 */
static int durable(struct lease *a)
{
	return flash_durable_wait_all(a->l_h, FLASH_SYNC_WAIT_MS_DEFAULT);
}

/*
 * restock(), its record durable on return.  FLASH_OK; FLASH_EDURABILITY or
 * FLASH_EFATE_UNKNOWN (undurable()): applied in the segment, not known
 * durable -- the operation's intent must stay; any other code: nothing was
 * applied.
 */
static int restock_durable(struct lease *a, uint32_t act, uint32_t sku, int64_t delta)
{
	int rc = restock(a, act, sku, delta);
	if (rc == FLASH_OK && delta < 0)
		kill_point(a, "return_restocked");
	return rc == FLASH_OK ? durable(a) : rc;
}

static int undurable(int rc)
{
	return rc == FLASH_EDURABILITY || rc == FLASH_EFATE_UNKNOWN;
}

static void set_state(struct lease *a, int state, int rc);

/*
 * Stop operating with the last intent kept: @p t's units are out of place
 * (a restock not known durable, a refused return not undone), and only a
 * start can judge it, from the totals of the segment it finds -- which a
 * later take or return would move.  Heartbeats go on and the segment's
 * stock stays sellable; serve reports the agent failed.  Returns @p rc.
 */
static int stuck(struct lease *a, int rc, const struct intent *t, const char *why)
{
	llog(a, PLOG_ERROR, "%s of %" PRId64 " units of %u/%u (lease %" PRIu64 "): %s %s; its intent is"
	     " kept and no more takes or returns are made until serve restarts and finishes it",
	     t->it_op == 't' ? "take" : "return", t->it_k, t->it_act, t->it_sku, t->it_id, why,
	     flash_strerror(rc));
	a->l_stuck = 1;
	set_state(a, LEASE_FAILED, rc);
	return rc;
}

static void count_failure(struct lease *a)
{
	pthread_mutex_lock(&a->l_mu);
	a->l_st.failures++;
	pthread_mutex_unlock(&a->l_mu);
}

/* ------------------------------------------------------------------------
 * 2. Intent file
 * ------------------------------------------------------------------------ */

static int dir_sync(const char *dir)
{
	int fd = pio_open(dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return -1;
	int rc = pio_fsync(fd);
	pio_close(fd);
	return rc;
}

/*
 * Write the intents durably: DIR/lease.intent.tmp, fdatasync, rename over
 * DIR/lease.intent, fsync DIR; no intent left removes the file.  Returns 0,
 * or -1 (errno logged): the caller does not start the operation.
 */
static int intent_save(struct lease *a)
{
	char path[4096], tmp[4096];
	snprintf(path, sizeof path, "%s/lease.intent", a->l_dir);
	snprintf(tmp, sizeof tmp, "%s/lease.intent.tmp", a->l_dir);
	if (a->l_nit == 0) {
		if (pio_unlink(path) != 0 && errno != ENOENT)
			goto fail;
		return dir_sync(a->l_dir) == 0 ? 0 : -1;
	}
	char buf[256];
	int fd = pio_open_reg(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	off_t off = 0;
	for (size_t i = 0; i < a->l_nit; i++) {
		const struct intent *t = &a->l_it[i];
		int n = snprintf(buf, sizeof buf, "%c %" PRIu64 " %u %u %" PRId64 " %" PRId64 " %" PRId64 "\n",
		                 t->it_op, t->it_id, t->it_act, t->it_sku, t->it_k, t->it_before, t->it_total);
		if (pio_pwrite(fd, buf, (size_t)n, off) != n) {
			pio_close(fd);
			goto fail;
		}
		off += n;
	}
	if (pio_fdatasync(fd) != 0) {
		pio_close(fd);
		goto fail;
	}
	pio_close(fd);
	if (pio_rename(tmp, path) != 0 || dir_sync(a->l_dir) != 0)
		goto fail;
	return 0;
fail:
	llog(a, PLOG_ERROR, "intent file in %s: %s", a->l_dir, pio_strerror(errno));
	return -1;
}

static int intent_push(struct lease *a, const struct intent *t)
{
	if (a->l_nit == a->l_capit) {
		size_t cap = a->l_capit ? a->l_capit * 2 : 8;
		void *p = realloc(a->l_it, cap * sizeof *a->l_it);
		if (!p)
			return -1;
		a->l_it = p;
		a->l_capit = cap;
	}
	a->l_it[a->l_nit++] = *t;
	if (intent_save(a) != 0) {
		a->l_nit--;
		return -1;
	}
	return 0;
}

/* Drop the last intent (the operation is complete). */
static void intent_pop(struct lease *a)
{
	if (a->l_nit) {
		a->l_nit--;
		(void)intent_save(a);
	}
}

static int intent_load(struct lease *a)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/lease.intent", a->l_dir);
	a->l_nit = 0;
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		llog(a, PLOG_ERROR, "intent file: %s", pio_strerror(errno));
		return -1;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -1;
	}
	char line[256];
	while (fgets(line, sizeof line, f)) {
		struct intent t;
		memset(&t, 0, sizeof t);
		if (sscanf(line, "%c %" SCNu64 " %u %u %" SCNd64 " %" SCNd64 " %" SCNd64, &t.it_op, &t.it_id,
		           &t.it_act, &t.it_sku, &t.it_k, &t.it_before, &t.it_total) != 7 ||
		    (t.it_op != 't' && t.it_op != 'r' && t.it_op != 'c' && t.it_op != 'd')) {
			llog(a, PLOG_ERROR, "%s: unreadable line '%.60s'", path, line);
			fclose(f);
			return -1;
		}
		if (a->l_nit == a->l_capit) {
			size_t cap = a->l_capit ? a->l_capit * 2 : 8;
			void *p = realloc(a->l_it, cap * sizeof *a->l_it);
			if (!p) {
				fclose(f);
				return -1;
			}
			a->l_it = p;
			a->l_capit = cap;
		}
		a->l_it[a->l_nit++] = t;
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------------
 * 3. Skus and leases
 * ------------------------------------------------------------------------ */

static struct lsku *sku_find(struct lease *a, uint32_t act, uint32_t sku, int add)
{
	for (size_t i = 0; i < a->l_nsku; i++)
		if (a->l_sku[i].ks_act == act && a->l_sku[i].ks_sku == sku)
			return &a->l_sku[i];
	if (!add)
		return NULL;
	if (a->l_nsku == a->l_capsku) {
		size_t cap = a->l_capsku ? a->l_capsku * 2 : 16;
		void *p = realloc(a->l_sku, cap * sizeof *a->l_sku);
		if (!p)
			return NULL;
		a->l_sku = p;
		a->l_capsku = cap;
	}
	struct lsku *k = &a->l_sku[a->l_nsku++];
	memset(k, 0, sizeof *k);
	k->ks_act = act;
	k->ks_sku = sku;
	k->ks_last_sold = -1;
	return k;
}

static int lease_add(struct lsku *k, uint64_t id, int64_t units, int64_t returned)
{
	for (size_t i = 0; i < k->ks_nl; i++)
		if (k->ks_l[i].ll_id == id)
			return 0;
	if (k->ks_nl == k->ks_capl) {
		size_t cap = k->ks_capl ? k->ks_capl * 2 : 8;
		void *p = realloc(k->ks_l, cap * sizeof *k->ks_l);
		if (!p)
			return -1;
		k->ks_l = p;
		k->ks_capl = cap;
	}
	k->ks_l[k->ks_nl++] = (struct llease){ id, units, returned, 0, 0 };
	return 0;
}

/* Refresh the agent's sku list from the segment's catalog. */
static void skus_scan(struct lease *a)
{
	struct flash_sku_info si;
	for (uint32_t i = 0; flash_sku_at(a->l_h, i, &si) == FLASH_OK; i++)
		(void)sku_find(a, si.activity_id, si.sku_id, 1);
}

static int activity_ended(struct lease *a, uint32_t act)
{
	struct flash_activity ac;
	int rc;
	/* an entry an archive freed answers FLASH_EARCHIVED: live ones follow
	 * it (stopping there kept every activity after it selling past its end) */
	for (uint32_t i = 0; (rc = flash_activity_at(a->l_h, i, &ac)) != FLASH_ENOT_FOUND; i++)
		if (rc == FLASH_OK && ac.id == act)
			return ac.end_ns <= real_ns();
		else if (rc != FLASH_OK && rc != FLASH_EARCHIVED)
			break;
	return 0;
}

static void stats_refresh(struct lease *a)
{
	int64_t leased = 0, held = 0, sold = 0;
	for (size_t i = 0; i < a->l_nsku; i++) {
		struct lsku *k = &a->l_sku[i];
		int64_t l = 0;
		for (size_t j = 0; j < k->ks_nl; j++)
			if (!k->ks_l[j].ll_closed)
				l += k->ks_l[j].ll_units - k->ks_l[j].ll_returned;
		struct flash_sku_info si;
		if (k->ks_pool == 1 && flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si) == FLASH_OK) {
			held += (int64_t)si.available;
			sold += (int64_t)si.total - (int64_t)si.available;
		}
		if (!k->ks_closed)
			leased += l;
	}
	pthread_mutex_lock(&a->l_mu);
	a->l_st.epoch = a->l_epoch;
	a->l_st.units_leased = leased;
	a->l_st.units_held = held;
	a->l_st.units_sold = sold;
	a->l_st.node_failovers = a->l_c ? central_failovers(a->l_c) : 0;
	pthread_mutex_unlock(&a->l_mu);
}

static void set_state(struct lease *a, int state, int rc)
{
	pthread_mutex_lock(&a->l_mu);
	a->l_st.state = state;
	a->l_st.rc = rc;
	pthread_mutex_unlock(&a->l_mu);
}

/* ------------------------------------------------------------------------
 * 4. Operations
 * ------------------------------------------------------------------------ */

/*
 * The central take of intent @p t (the last intent), then the load.  A take
 * whose fate MariaDB did not tell within the handle's retry time stays
 * pending (l_pending): the loop asks again with the same lease id before
 * anything else (idempotent by id), so it never becomes a second lease.
 */
static int take_finish(struct lease *a, struct lsku *k, const struct intent *tp)
{
	struct intent t = *tp;
	int rc = central_take(a->l_c, a->l_o.box_id, a->l_epoch, t.it_act, t.it_sku, t.it_id, t.it_k);
	if (rc == FLASH_OK)
		kill_point(a, "take_committed");
	if (rc == FLASH_EMYSQL_RETRY) {
		a->l_pending = 1;
		return rc;      /* intent kept */
	}
	a->l_pending = 0;
	if (rc != FLASH_OK) {
		intent_pop(a);
		return rc;
	}
	if ((rc = restock_durable(a, t.it_act, t.it_sku, t.it_k)) != FLASH_OK) {
		/* loaded, perhaps not on disk: the next start finds the total
		 * before + k (done) or before (loads it) */
		if (undurable(rc))
			return stuck(a, rc, &t, "loaded, not known durable:");
		/* not loaded: retried (take_finish again, the central take is
		 * idempotent by id) before any other operation, which would move
		 * the total the intent's judgement at a start compares with */
		llog(a, PLOG_ERROR, "lease %" PRIu64 " taken but not loaded into %u/%u: %s (loaded again"
		     " before anything else)", t.it_id, t.it_act, t.it_sku, flash_strerror(rc));
		a->l_pending = 1;
		return rc;      /* intent kept */
	}
	(void)lease_add(k, t.it_id, t.it_k, 0);
	intent_pop(a);
	kill_point(a, "take_loaded");
	pthread_mutex_lock(&a->l_mu);
	a->l_st.takes++;
	a->l_st.take_units += (uint64_t)t.it_k;
	pthread_mutex_unlock(&a->l_mu);
	llog(a, PLOG_DEBUG, "lease %" PRIu64 ": %" PRId64 " units of %u/%u", t.it_id, t.it_k,
	     t.it_act, t.it_sku);
	return FLASH_OK;
}

/*
 * Take @p units for @p k: intent, central take, load (take_finish).
 * Returns FLASH_OK, FLASH_ESOLD_OUT, FLASH_EFENCED, FLASH_EMYSQL_RETRY
 * (pending), or another failure.
 */
static int op_take(struct lease *a, struct lsku *k, int64_t units)
{
	struct flash_sku_info si;
	int rc = flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si);
	if (rc != FLASH_OK)
		return rc;
	if (a->l_seq >= LEASE_SEQ_MAX)
		return FLASH_EFULL;
	struct intent t = { .it_op = 't', .it_id = central_lease_id(a->l_o.box_id, a->l_epoch, ++a->l_seq),
	                    .it_act = k->ks_act, .it_sku = k->ks_sku, .it_k = units,
	                    .it_total = (int64_t)si.total };
	if (intent_push(a, &t) != 0)
		return FLASH_ESYS;
	return take_finish(a, k, &a->l_it[a->l_nit - 1]);
}

static void note_returned(struct lease *a, struct llease *l, int64_t before, int64_t units)
{
	if (l)
		l->ll_returned = before + units;
	pthread_mutex_lock(&a->l_mu);
	a->l_st.returns++;
	a->l_st.return_units += (uint64_t)units;
	pthread_mutex_unlock(&a->l_mu);
}

/* The central half of a return whose units have left the segment. */
static int return_central(struct lease *a, struct lsku *k, struct llease *l, int64_t before, int64_t units)
{
	int rc = central_return(a->l_c, a->l_o.box_id, a->l_epoch, k->ks_act, k->ks_sku, l->ll_id,
	                              before, units);
	if (rc == FLASH_OK)
		note_returned(a, l, before, units);
	return rc;
}

/*
 * The central return of @p t, the last intent, was refused for another
 * reason than a fence or an unanswered statement (FLASH_ELEASE, FLASH_EMYSQL:
 * a trigger, a constraint, a node that refuses writes...).  Its units are out
 * of the segment, durably, and not in the pool -- unless the refusal came
 * after an attempt of unknown fate that had committed.  The lease's returned
 * count decides: before + k, it committed (FLASH_OK: done); before, it did
 * not: the units go back into the segment (restock +k, durable) and the
 * intent goes, @p refusal returned.  Never popped with the units in neither
 * place: the close would count them sold.  A count that cannot be read is
 * asked again (pending); another count, or units that cannot be put back,
 * leave the agent stuck().
 */
static int return_refused(struct lease *a, struct llease *l, const struct intent *t, int refusal)
{
	struct lease_row row;
	int rc = central_lease_get(a->l_c, t->it_id, &row);
	if (rc == FLASH_OK && row.returned == t->it_before + t->it_k) {
		note_returned(a, l, t->it_before, t->it_k);
		return FLASH_OK;
	}
	if (rc == FLASH_EMYSQL_RETRY || rc == FLASH_EMYSQL) {
		a->l_pending = 1;
		return refusal;
	}
	if (rc != FLASH_OK || row.returned != t->it_before)
		return stuck(a, refusal, t, "refused by the pool, the lease's returned count not the one noted:");
	if ((rc = restock_durable(a, t->it_act, t->it_sku, t->it_k)) != FLASH_OK)
		return stuck(a, rc, t, "refused by the pool; the units could not be put back:");
	intent_pop(a);
	llog(a, PLOG_WARN, "the pool refused the return of %" PRId64 " units of lease %" PRIu64 ": %s; they"
	     " are back in the segment of %u/%u", t->it_k, t->it_id, flash_strerror(refusal), t->it_act, t->it_sku);
	return refusal;
}

/*
 * Return up to @p units of @p k's stock, from its leases with the most
 * unreturned units first.  Returns the units returned (>= 0), or a
 * negative code (FLASH_EFENCED, ...).
 */
static int64_t op_return(struct lease *a, struct lsku *k, int64_t units)
{
	int64_t done = 0;
	while (units > 0) {
		struct llease *l = NULL;
		for (size_t i = 0; i < k->ks_nl; i++)
			if (!k->ks_l[i].ll_closed && k->ks_l[i].ll_units > k->ks_l[i].ll_returned &&
			    (!l || k->ks_l[i].ll_units - k->ks_l[i].ll_returned > l->ll_units - l->ll_returned))
				l = &k->ks_l[i];
		if (!l)
			break;
		int64_t n = l->ll_units - l->ll_returned < units ? l->ll_units - l->ll_returned : units;
		struct flash_sku_info si;
		int rc = flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si);
		if (rc != FLASH_OK)
			return rc;
		if ((int64_t)si.available < n)
			n = (int64_t)si.available;
		if (n <= 0)
			break;
		struct intent t = { .it_op = 'r', .it_id = l->ll_id, .it_act = k->ks_act, .it_sku = k->ks_sku,
		                    .it_k = n, .it_before = l->ll_returned, .it_total = (int64_t)si.total };
		if (intent_push(a, &t) != 0)
			return FLASH_ESYS;
		rc = restock_durable(a, k->ks_act, k->ks_sku, -n);
		if (rc == FLASH_ESOLD_OUT) {     /* sold meanwhile: look again */
			intent_pop(a);
			continue;
		}
		if (undurable(rc))
			return stuck(a, rc, &t, "taken out of the segment, not known durable:");
		if (rc != FLASH_OK) {
			intent_pop(a);
			return rc;
		}
		kill_point(a, "return_unloaded");
		rc = return_central(a, k, l, t.it_before, n);
		if (rc == FLASH_OK)
			kill_point(a, "return_committed");
		if (rc == FLASH_EMYSQL_RETRY) {
			a->l_pending = 1;   /* intent kept: asked again before anything else */
			return rc;
		}
		/* fenced: the units are out of the segment and the intent
		 * stays; the fenced path reclaims from sold = total - available */
		if (rc == FLASH_EFENCED)
			return rc;
		if (rc != FLASH_OK && (rc = return_refused(a, l, &t, rc)) != FLASH_OK)
			return rc;
		intent_pop(a);
		done += n;
		units -= n;
	}
	return done;
}

/* Take every available unit of @p k out of the segment (restock -available
 * until it reads 0).  Adds what left to *out. */
static int drain_sku(struct lease *a, uint32_t act, uint32_t sku, int64_t *out)
{
	for (int i = 0; i < 1000; i++) {
		struct flash_sku_info si;
		int rc = flash_sku_get(a->l_h, act, sku, &si);
		if (rc != FLASH_OK)
			return rc;
		if (si.available == 0)
			return FLASH_OK;
		rc = restock(a, act, sku, -(int64_t)si.available);
		if (rc == FLASH_OK && out)
			*out += (int64_t)si.available;
		else if (rc != FLASH_OK && rc != FLASH_ESOLD_OUT)
			return rc;
	}
	return FLASH_EBUSY;
}

/* Fenced: every sku's stock out, and kept out (called every tick). */
static void drain_all(struct lease *a)
{
	skus_scan(a);
	for (size_t i = 0; i < a->l_nsku; i++) {
		int64_t n = 0;
		int rc = drain_sku(a, a->l_sku[i].ks_act, a->l_sku[i].ks_sku, &n);
		if (rc != FLASH_OK)
			llog(a, PLOG_ERROR, "drain %u/%u: %s", a->l_sku[i].ks_act, a->l_sku[i].ks_sku,
			     flash_strerror(rc));
		else if (n)
			llog(a, PLOG_INFO, "took %" PRId64 " units of %u/%u out of the segment", n,
			     a->l_sku[i].ks_act, a->l_sku[i].ks_sku);
	}
}

static void become_fenced(struct lease *a)
{
	llog(a, PLOG_ERROR, "box %u epoch %u is fenced in MariaDB: its stock is taken out of the segment"
	     " and nothing more is sold from its leases; restart serve to rejoin (the box then reclaims its"
	     " fenced leases from its segment), or `flashstock lease reclaim --box %u`",
	     a->l_o.box_id, a->l_epoch, a->l_o.box_id);
	drain_all(a);
	set_state(a, LEASE_FENCED, FLASH_EFENCED);
}

/*
 * Suspension: a box out of touch with MariaDB stops selling on its own, in
 * a time it can promise, because after it an operator may fence it and
 * give its leases back to the pool (`lease fence`, default --stale-s 30).
 *
 * The clock is l_hb_ok_ms, the start of the last heartbeat (or the
 * registration) MariaDB accepted: that statement ran after it, so the
 * fs_box.heartbeat the fence reads is no older.  At touch_deadline(),
 * 3 x heartbeat_s later:
 *   - no central statement starts (central_set_deadline, set by the
 *     loop and heartbeat()): the one in flight ends within one attempt --
 *     one connect, read or write timeout when the nodes are unreachable --
 *     and every later one fails at once, so whatever sku the loop is at, it
 *     is back at its check within that time;
 *   - the check, made at every turn of the loop and before every sku's
 *     tick, suspends: every leased sku's stock goes out of the segment.
 * While suspended, every turn (tick_ms) drains again each sku until it
 * reads 0: a cancel gives units back, and a unit sold between a drain's
 * read and its restock refuses that restock.  The heartbeat then retries
 * for one tick only, so a turn lasts at most two ticks plus one attempt.
 * The bound (docs/boxes.md): the last sale comes at most
 * 3 x heartbeat_s + timeout + the drain after l_hb_ok_ms; a unit a cancel
 * gives back during the suspension is out again within 2 x tick_ms +
 * timeout (timeout: the handle's timeout_s, 2 s, lease_start).
 * Only a heartbeat MariaDB accepts -- so the box is not fenced -- ends it:
 * resume() loads the drained units back.
 */
static uint64_t touch_deadline(const struct lease *a)
{
	return a->l_hb_ok_ms + 3000u * (uint64_t)a->l_o.heartbeat_s;
}

static int out_of_touch(const struct lease *a)
{
	return now_ms() >= touch_deadline(a);
}

static int64_t real_ms(void)
{
	return real_ns() / 1000000;
}

/* MariaDB accepted a statement of this box's epoch (a heartbeat, the
 * registration) sent at @p mono_ms (CLOCK_MONOTONIC), @p wall_ms
 * (CLOCK_REALTIME, for the metrics). */
static void touched(struct lease *a, uint64_t mono_ms, int64_t wall_ms)
{
	a->l_hb_ok_ms = mono_ms;
	pthread_mutex_lock(&a->l_mu);
	a->l_st.heartbeat_ms = wall_ms;
	pthread_mutex_unlock(&a->l_mu);
}

/*
 * One heartbeat.  Running, it may retry until touch_deadline() (the
 * statement in flight then ends within one attempt); suspended, for one
 * tick only, so that the drain of the next turn is not held up.  Accepted,
 * the box is in touch from the moment it was sent.
 */
static int heartbeat(struct lease *a)
{
	uint64_t lsn = 0;
	if (a->l_o.applied_lsn)
		(void)a->l_o.applied_lsn(a->l_o.applied_arg, &lsn);
	uint64_t sent = now_ms();
	int64_t sent_wall = real_ms();
	central_set_deadline(a->l_c, a->l_suspended ? sent + a->l_o.tick_ms : touch_deadline(a));
	int rc = central_heartbeat(a->l_c, a->l_o.box_id, a->l_epoch, lsn);
	if (rc == FLASH_OK)
		touched(a, sent, sent_wall);
	central_set_deadline(a->l_c, touch_deadline(a));
	return rc;
}

/* Is @p k's stock leased (to be taken out while suspended)?  A sku whose
 * pool the agent has not looked up yet but holds adopted leases is. */
static int sku_leased(const struct lsku *k)
{
	return !k->ks_closed && (k->ks_pool == 1 || k->ks_nl > 0);
}

/*
 * The last intent, a 'd' whose restock happened, folded into the sku's
 * newest intent before it when that one is a 'd' that ends where this one
 * starts (its total before - k = this one's total before): one 'd' of k1 +
 * k2 from the first total is what restore_drained() undoes either way.  A
 * crash before the save leaves both, after it the one: both restore the
 * same units (both restocks are durable first: drain_noted()).  So a long
 * suspension with cancels keeps one line per sku.
 */
static void intent_fold(struct lease *a)
{
	struct intent *t = &a->l_it[a->l_nit - 1];
	for (size_t i = a->l_nit - 1; i-- > 0;) {
		struct intent *p = &a->l_it[i];
		if (p->it_act != t->it_act || p->it_sku != t->it_sku)
			continue;
		if (p->it_op == 'd' && p->it_total - p->it_k == t->it_total) {
			p->it_k += t->it_k;
			a->l_nit--;
			(void)intent_save(a);
		}
		return;
	}
}

/*
 * Take all of @p k's available stock out: a 'd' intent, durable, then
 * restock -available; until the sku reads 0.  A restock refused for want
 * of stock (a unit sold after the read) changed nothing: its intent goes
 * and the sku is read again.  Another failure keeps the intent (whether
 * the restock happened, restore_drained() tells from the total).
 */
static int drain_noted(struct lease *a, struct lsku *k)
{
	for (int round = 0; round < 1000; round++) {
		struct flash_sku_info si;
		int rc = flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si);
		if (rc != FLASH_OK || si.available == 0)
			return rc;
		struct intent t = { .it_op = 'd', .it_act = k->ks_act, .it_sku = k->ks_sku,
		                    .it_k = (int64_t)si.available, .it_total = (int64_t)si.total };
		if (intent_push(a, &t) != 0)
			return FLASH_ESYS;
		rc = restock(a, k->ks_act, k->ks_sku, -t.it_k);
		if (rc == FLASH_ESOLD_OUT) {
			intent_pop(a);
			continue;
		}
		if (rc != FLASH_OK)
			return rc;
		/* folded only once both restocks are on disk: a power cut
		 * keeping the first and losing the second matches neither
		 * total of the folded intent, but each of the two */
		if (durable(a) == FLASH_OK)
			intent_fold(a);
	}
	return FLASH_EBUSY;
}

/* Suspended: every leased sku to 0 (called at every turn).  A failure is
 * logged once a suspension; the next turn tries again. */
static void drain_suspended(struct lease *a)
{
	for (size_t i = 0; i < a->l_nsku; i++) {
		struct lsku *k = &a->l_sku[i];
		if (!sku_leased(k))
			continue;
		int rc = drain_noted(a, k);
		if (rc != FLASH_OK) {
			count_failure(a);
			if (!a->l_drain_err)
				llog(a, PLOG_ERROR, "suspended, but %u/%u cannot be taken out of the segment: %s"
				     " (tried again every tick)", k->ks_act, k->ks_sku, flash_strerror(rc));
			a->l_drain_err = 1;
		}
	}
}

/* Out of touch since touch_deadline(): stop selling until MariaDB answers. */
static void suspend(struct lease *a)
{
	llog(a, PLOG_WARN, "no heartbeat accepted by MariaDB for %u s: selling stops until it answers",
	     3 * a->l_o.heartbeat_s);
	a->l_suspended = 1;
	a->l_drain_err = 0;
	if (a->l_stuck) {                /* what resume() reports again */
		pthread_mutex_lock(&a->l_mu);
		a->l_stuck_rc = a->l_st.rc;
		pthread_mutex_unlock(&a->l_mu);
	}
	set_state(a, LEASE_SUSPENDED, FLASH_EMYSQL_RETRY);
	drain_suspended(a);
}

/*
 * Load back what a suspension or a start (or a crash during either) took
 * out: each 'd' intent whose restock happened (the sku's total reads before
 * - k) is restocked +k; one whose restock never happened (total = before) is
 * dropped.  Newest first: a later 'd' of the same sku was taken from the
 * total the earlier one left, so undoing them in reverse order finds each
 * one's "total after" exactly.  An intent whose restock fails stays.
 * FLASH_OK once what was loaded back is durable; else the code (the
 * intents stay, and nothing may be judged from the totals: they are not
 * known to be on disk).
 */
static int restore_drained(struct lease *a)
{
	size_t n = a->l_nit;
	int *keep = n ? calloc(n, sizeof *keep) : NULL;
	if (n && !keep)
		return FLASH_ENOMEM;     /* stays drained; the next start or resume tries again */
	for (size_t i = n; i-- > 0;) {
		struct intent *t = &a->l_it[i];
		if (t->it_op != 'd') {
			keep[i] = 1;
			continue;
		}
		struct flash_sku_info si;
		if (flash_sku_get(a->l_h, t->it_act, t->it_sku, &si) == FLASH_OK &&
		    (int64_t)si.total == t->it_total - t->it_k &&
		    restock(a, t->it_act, t->it_sku, t->it_k) != FLASH_OK)
			keep[i] = 1;
	}
	/* the +k on disk before the intents go: a power cut between would
	 * leave the units in neither the segment nor a note */
	int rc = durable(a);
	if (rc != FLASH_OK) {
		llog(a, PLOG_ERROR, "drained units loaded back, not known durable: %s (their intents stay)",
		     flash_strerror(rc));
		free(keep);
		return rc;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			a->l_it[k++] = a->l_it[i];
	free(keep);
	a->l_nit = k;
	(void)intent_save(a);
	return FLASH_OK;
}

static void resume(struct lease *a)
{
	int rc = restore_drained(a);
	if (rc != FLASH_OK && !a->l_stuck) {
		/* sellable again, but not known durable: no take or return may
		 * move on from these totals until a restart judges them */
		a->l_stuck = 1;
		a->l_stuck_rc = rc;
	}
	if (a->l_suspended)
		llog(a, PLOG_INFO, "MariaDB answers again: selling resumes");
	a->l_suspended = 0;
	/* a stuck agent stays reported failed (stuck()) */
	if (a->l_stuck)
		set_state(a, LEASE_FAILED, a->l_stuck_rc);
	else
		set_state(a, LEASE_RUNNING, FLASH_OK);
}

/* ------------------------------------------------------------------------
 * 5. Start
 * ------------------------------------------------------------------------ */

/*
 * An interrupted return ('r') whose units are in the segment (total =
 * before): the restock -k never happened, or a power cut lost it after the
 * central return had committed -- possible only for an agent that did not
 * wait for its restocks (restock_durable), whose intent file a start may
 * still find.  MariaDB tells: returned = before + k, the units are in the
 * pool too, so they leave the segment again (durably); else nothing moved.
 */
static int return_redo(struct lease *a, const struct intent *t)
{
	struct lease_row row;
	int rc = central_lease_get(a->l_c, t->it_id, &row);
	if (rc == FLASH_ENOT_FOUND || (rc == FLASH_OK && row.returned != t->it_before + t->it_k))
		return FLASH_OK;        /* the units never left the segment */
	if (rc != FLASH_OK)
		return rc;
	if ((rc = restock_durable(a, t->it_act, t->it_sku, -t->it_k)) != FLASH_OK) {
		llog(a, PLOG_ERROR, "lease %" PRIu64 ": %" PRId64 " units returned to the pool are still in"
		     " the segment of %u/%u, and cannot be taken out: %s", t->it_id, t->it_k, t->it_act, t->it_sku,
		     flash_strerror(rc));
		return rc;
	}
	llog(a, PLOG_WARN, "lease %" PRIu64 ": the return of %" PRId64 " units had committed but their"
	     " removal from the segment was lost (power cut): taken out of %u/%u again", t->it_id, t->it_k,
	     t->it_act, t->it_sku);
	pthread_mutex_lock(&a->l_mu);
	a->l_st.finished++;
	pthread_mutex_unlock(&a->l_mu);
	return FLASH_OK;
}

/* Finish the take or return an earlier agent left in its intent file. */
static int finish_intent(struct lease *a, const struct intent *t)
{
	struct flash_sku_info si;
	int rc = flash_sku_get(a->l_h, t->it_act, t->it_sku, &si);
	if (rc != FLASH_OK)
		return rc;
	struct lsku *k = sku_find(a, t->it_act, t->it_sku, 1);
	if (!k)
		return FLASH_ENOMEM;
	if (t->it_op == 't') {
		struct lease_row l;
		rc = central_lease_get(a->l_c, t->it_id, &l);
		if (rc == FLASH_ENOT_FOUND)
			return FLASH_OK;        /* never committed */
		if (rc != FLASH_OK)
			return rc;
		if ((int64_t)si.total == t->it_total) {
			/* durable: the intent goes once the start is done */
			if ((rc = restock_durable(a, t->it_act, t->it_sku, t->it_k)) != FLASH_OK)
				return rc;
			llog(a, PLOG_INFO, "lease %" PRIu64 " had committed but was not loaded: loaded %" PRId64
			     " units into %u/%u", t->it_id, t->it_k, t->it_act, t->it_sku);
			pthread_mutex_lock(&a->l_mu);
			a->l_st.finished++;
			pthread_mutex_unlock(&a->l_mu);
		}
		return FLASH_OK;
	}
	if (t->it_op == 'c') {
		if ((int64_t)si.total != t->it_total - t->it_k)
			return FLASH_OK;        /* the units never left the segment */
		while ((rc = central_return_closed(a->l_c, a->l_o.box_id, a->l_epoch, t->it_act, t->it_sku,
		                                         t->it_id, t->it_before, t->it_k)) == FLASH_EMYSQL_RETRY &&
		       !stopping(a))
			nap(a, 500);
		if (rc == FLASH_OK) {
			for (size_t i = 0; i < k->ks_nl; i++)
				if (k->ks_l[i].ll_id == t->it_id && k->ks_l[i].ll_sold == t->it_before) {
					k->ks_l[i].ll_sold -= t->it_k;
					k->ks_l[i].ll_returned += t->it_k;
				}
			pthread_mutex_lock(&a->l_mu);
			a->l_st.finished++;
			pthread_mutex_unlock(&a->l_mu);
		}
		return rc;
	}
	if (t->it_op == 'r') {
		if ((int64_t)si.total == t->it_total)
			return return_redo(a, t);
		if ((int64_t)si.total != t->it_total - t->it_k)
			return FLASH_OK;        /* not this operation's totals */
		struct llease *l = NULL;
		for (size_t i = 0; i < k->ks_nl; i++)
			if (k->ks_l[i].ll_id == t->it_id)
				l = &k->ks_l[i];
		if (!l)
			return FLASH_ELEASE;
		while ((rc = return_central(a, k, l, t->it_before, t->it_k)) == FLASH_EMYSQL_RETRY && !stopping(a))
			nap(a, 500);
		if (rc == FLASH_OK) {
			llog(a, PLOG_INFO, "an interrupted return of %" PRId64 " units of lease %" PRIu64
			     " is finished (returned count %" PRId64 ")", t->it_k, t->it_id, l->ll_returned);
			pthread_mutex_lock(&a->l_mu);
			a->l_st.finished++;
			pthread_mutex_unlock(&a->l_mu);
		}
		return rc;
	}
	return FLASH_OK;
}

/* Fenced at start: drain, reclaim the fenced leases from the segment's own
 * figures (sold = total - available), then register anew. */
static int start_fenced(struct lease *a, struct box_reg *reg)
{
	llog(a, PLOG_WARN, "box %u was fenced (epoch %u): taking its stock out of the segment and"
	     " reclaiming its fenced leases", a->l_o.box_id, reg->old_epoch);
	drain_all(a);
	/* the drain on disk before the pool gets the units back: a power cut
	 * must not rebuild them into the segment after the reclaim */
	int rc = durable(a);
	if (rc != FLASH_OK)
		return rc;
	struct lease_row *v = NULL;
	size_t n = 0;
	rc = central_leases(a->l_c, a->l_o.box_id, "fenced", &v, &n);
	if (rc != FLASH_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			seen |= v[j].activity_id == v[i].activity_id && v[j].sku_id == v[i].sku_id;
		if (seen)
			continue;
		struct flash_sku_info si;
		int64_t sold = 0, back = 0;
		if (flash_sku_get(a->l_h, v[i].activity_id, v[i].sku_id, &si) == FLASH_OK)
			sold = (int64_t)si.total - (int64_t)si.available;
		rc = central_reclaim(a->l_c, a->l_o.box_id, v[i].activity_id, v[i].sku_id, sold, &back);
		if (rc != FLASH_OK) {
			llog(a, PLOG_ERROR, "reclaim %u/%u (sold %" PRId64 "): %s %s", v[i].activity_id,
			     v[i].sku_id, sold, flash_strerror(rc), central_error(a->l_c));
			free(v);
			return rc;
		}
		llog(a, PLOG_INFO, "reclaimed %u/%u: %" PRId64 " sold, %" PRId64 " units back to the pool",
		     v[i].activity_id, v[i].sku_id, sold, back);
	}
	free(v);
	/* what the intents named is covered by the reclaim */
	a->l_nit = 0;
	(void)intent_save(a);
	return central_register(a->l_c, a->l_o.box_id, 0, reg);
}

/*
 * Before registering: take every sku's available stock out of the segment,
 * each step noted as a 'd' intent (durable before its restock), so a
 * restarted daemon leaves nothing sellable while it cannot tell whether its
 * box was fenced and its leases returned for it (issue 14).  Registration
 * then decides: not fenced, restore_drained() puts the same units back;
 * fenced, start_fenced() counts sold = total - available (the drain lowered
 * both) and drops the intents.  Rounds, because a buyer may sell between the
 * read and the restock (that restock is refused and the next round takes
 * what is left); each round costs one fdatasync of the intent file.
 */
static void start_drain(struct lease *a)
{
	int64_t taken = 0;
	size_t skus = 0;
	for (int round = 0; round < 20; round++) {
		size_t first = a->l_nit;
		for (size_t i = 0; i < a->l_nsku; i++) {
			struct lsku *k = &a->l_sku[i];
			struct flash_sku_info si;
			if (flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si) != FLASH_OK || si.available == 0)
				continue;
			struct intent t = { .it_op = 'd', .it_act = k->ks_act, .it_sku = k->ks_sku,
			                    .it_k = (int64_t)si.available, .it_total = (int64_t)si.total };
			if (a->l_nit == a->l_capit) {
				size_t cap = a->l_capit ? a->l_capit * 2 : 8;
				void *p = realloc(a->l_it, cap * sizeof *a->l_it);
				if (!p)
					break;
				a->l_it = p;
				a->l_capit = cap;
			}
			a->l_it[a->l_nit++] = t;
		}
		if (a->l_nit == first)
			break;
		if (intent_save(a) != 0) {
			a->l_nit = first;
			llog(a, PLOG_ERROR, "cannot note the start drain: the segment's stock stays sellable"
			     " until the box has registered");
			return;
		}
		size_t keep = first;
		for (size_t i = first; i < a->l_nit; i++) {
			struct intent *t = &a->l_it[i];
			if (restock(a, t->it_act, t->it_sku, -t->it_k) == FLASH_OK) {
				taken += t->it_k;
				skus++;
				a->l_it[keep++] = *t;
			}
		}
		if (keep != a->l_nit) {
			/* refused (sold meanwhile): nothing left the segment */
			a->l_nit = keep;
			(void)intent_save(a);
		}
	}
	if (taken)
		llog(a, PLOG_INFO, "took %" PRId64 " units (%zu drains) out of the segment until box %u has"
		     " registered", taken, skus, a->l_o.box_id);
}

/*
 * Before an interrupted operation is judged from the segment's totals:
 * every record in the segment durable, also those of other slots.  The
 * restock -k of a dead agent's return may still sit in its old slot's ring
 * (the drain loop has not written it, or its fdatasync has not returned),
 * and a new handle that does not inherit that slot waits for nothing in
 * durable(); a central return finished from such a total, then a power
 * cut, puts the units in the pool and, rebuilt from the WAL, in the
 * segment.  FLASH_OK; FLASH_EDURABILITY; FLASH_EFATE_UNKNOWN (asked to stop
 * first: the intents stay for the next start).
 */
static int totals_durable(struct lease *a)
{
	int rc, said = 0;
	while ((rc = flash_durable_wait_every(a->l_h, 1000)) == FLASH_EFATE_UNKNOWN) {
		if (stopping(a))
			return rc;
		if (!said++)
			llog(a, PLOG_INFO, "waiting for the segment's records to be durable before finishing"
			     " the interrupted operation");
	}
	return rc;
}

static int agent_start(struct lease *a)
{
	if (intent_load(a) != 0)
		return FLASH_ESYS;
	int rc;
	if (a->l_nit > 0 && (rc = totals_durable(a)) != FLASH_OK)
		return rc;
	skus_scan(a);
	start_drain(a);
	struct box_reg reg;
	uint64_t sent;
	int64_t sent_wall;
	for (;;) {
		sent = now_ms();
		sent_wall = real_ms();
		rc = central_register(a->l_c, a->l_o.box_id, 1, &reg);
		if (rc != FLASH_EMYSQL_RETRY || stopping(a))
			break;
		nap(a, 500);
	}
	/* the registration wrote the heartbeat: the suspension clock starts at
	 * its sending (a fenced start's second one is later still) */
	touched(a, sent, sent_wall);
	if (rc == FLASH_EFENCED)
		rc = start_fenced(a, &reg);
	if (rc != FLASH_OK)
		return rc;
	a->l_epoch = reg.epoch;
	a->l_seq = 0;
	llog(a, PLOG_INFO, "box %u registered: epoch %u (was %u), %u open leases adopted",
	     a->l_o.box_id, reg.epoch, reg.old_epoch, reg.adopted);
	struct lease_row *v = NULL;
	size_t n = 0;
	if ((rc = central_leases(a->l_c, a->l_o.box_id, "open", &v, &n)) != FLASH_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct lsku *k = sku_find(a, v[i].activity_id, v[i].sku_id, 1);
		if (!k || lease_add(k, v[i].lease_id, v[i].units, v[i].returned) != 0) {
			free(v);
			return FLASH_ENOMEM;
		}
	}
	free(v);
	v = NULL;
	n = 0;
	if ((rc = central_leases(a->l_c, a->l_o.box_id, "closed", &v, &n)) != FLASH_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct lsku *k = sku_find(a, v[i].activity_id, v[i].sku_id, 1);
		if (!k || lease_add(k, v[i].lease_id, v[i].units, v[i].returned) != 0) {
			free(v);
			return FLASH_ENOMEM;
		}
		k->ks_l[k->ks_nl - 1].ll_closed = 1;
		k->ks_l[k->ks_nl - 1].ll_sold = v[i].sold_at_close;
	}
	free(v);
	/* not fenced: what the start drain (and a suspension before the crash)
	 * took out goes back first, so the segment's totals read as they did
	 * when the interrupted take or return was noted -- durably: a take or
	 * a return finished from totals that a power cut can undo would put
	 * units in two places; then that operation */
	if ((rc = restore_drained(a)) != FLASH_OK)
		return rc;
	for (size_t i = 0; i < a->l_nit; i++)
		if (a->l_it[i].it_op != 'd' && (rc = finish_intent(a, &a->l_it[i])) != FLASH_OK) {
			llog(a, PLOG_ERROR, "finishing the interrupted operation on lease %" PRIu64 ": %s",
			     a->l_it[i].it_id, flash_strerror(rc));
			return rc;
		}
	size_t keep = 0;
	for (size_t i = 0; i < a->l_nit; i++)
		if (a->l_it[i].it_op == 'd')
			a->l_it[keep++] = a->l_it[i];
	a->l_nit = keep;
	resume(a);
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 6. Loop
 * ------------------------------------------------------------------------ */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The pool took back intent @p t's late units (its last intent): the
 * closed lease's figures follow, the intent goes. */
static void late_returned(struct lease *a, struct lsku *k, const struct intent *t)
{
	for (size_t i = 0; i < k->ks_nl; i++)
		if (k->ks_l[i].ll_id == t->it_id && k->ks_l[i].ll_sold == t->it_before) {
			k->ks_l[i].ll_sold -= t->it_k;
			k->ks_l[i].ll_returned += t->it_k;
		}
	pthread_mutex_lock(&a->l_mu);
	a->l_st.returns++;
	a->l_st.return_units += (uint64_t)t->it_k;
	pthread_mutex_unlock(&a->l_mu);
	llog(a, PLOG_INFO, "%" PRId64 " units of %u/%u came back after the sale (cancels): returned"
	     " to the pool", t->it_k, t->it_act, t->it_sku);
	intent_pop(a);
}

/*
 * Units back in the segment after the sku's leases closed (cancels after
 * the end of the sale) go to the pool: intent 'c', restock -k, then the
 * closed lease's sold_at_close goes down by k (conditional on its value).
 */
static int late_return(struct lease *a, struct lsku *k, int64_t avail)
{
	while (avail > 0) {
		struct llease *l = NULL;
		for (size_t i = 0; i < k->ks_nl; i++)
			if (k->ks_l[i].ll_closed && k->ks_l[i].ll_sold > 0)
				l = &k->ks_l[i];
		if (!l)
			return FLASH_OK;        /* nothing sold under a lease: not leased units */
		int64_t n = avail < l->ll_sold ? avail : l->ll_sold;
		struct flash_sku_info si;
		int rc = flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si);
		if (rc != FLASH_OK)
			return rc;
		struct intent t = { .it_op = 'c', .it_id = l->ll_id, .it_act = k->ks_act, .it_sku = k->ks_sku,
		                    .it_k = n, .it_before = l->ll_sold, .it_total = (int64_t)si.total };
		if (intent_push(a, &t) != 0)
			return FLASH_ESYS;
		if ((rc = restock_durable(a, k->ks_act, k->ks_sku, -n)) != FLASH_OK) {
			if (undurable(rc))
				return stuck(a, rc, &t, "taken out of the segment, not known durable:");
			intent_pop(a);
			return rc == FLASH_ESOLD_OUT ? FLASH_OK : rc;
		}
		/* out of touch, the loop must get back to suspend(): the intent
		 * waits as pending (pending_retry asks again) */
		while ((rc = central_return_closed(a->l_c, a->l_o.box_id, a->l_epoch, k->ks_act, k->ks_sku,
		                                         l->ll_id, l->ll_sold, n)) == FLASH_EMYSQL_RETRY &&
		       !stopping(a) && !out_of_touch(a))
			nap(a, 200);
		if (rc != FLASH_OK) {
			/* intent kept: asked again before anything else, or the
			 * next start finishes it (fenced: the loop ends; refused:
			 * nothing more moves until then) */
			if (rc == FLASH_EMYSQL_RETRY)
				a->l_pending = 1;
			else if (rc != FLASH_EFENCED)
				(void)stuck(a, rc, &t, "refused by the pool:");
			return rc;
		}
		late_returned(a, k, &a->l_it[a->l_nit - 1]);
		avail -= n;
	}
	return FLASH_OK;
}

/* The sale of @p k's activity is over: return what is held, close its leases. */
static int sku_close(struct lease *a, struct lsku *k)
{
	int64_t r = op_return(a, k, INT64_MAX / 4);
	if (r < 0)
		return (int)r;
	for (size_t i = 0; i < k->ks_nl; i++) {
		struct llease *l = &k->ks_l[i];
		if (l->ll_closed)
			continue;
		int rc = central_lease_close(a->l_c, a->l_o.box_id, a->l_epoch, l->ll_id);
		if (rc != FLASH_OK)
			return rc;
		l->ll_closed = 1;
		l->ll_sold = l->ll_units - l->ll_returned;
	}
	k->ks_closed = 1;
	llog(a, PLOG_INFO, "sale of %u/%u over: %" PRId64 " units returned, %zu leases closed",
	     k->ks_act, k->ks_sku, r, k->ks_nl);
	return FLASH_OK;
}

/* One sku, one tick: rate, refill, surplus, end of sale. */
static int sku_tick(struct lease *a, struct lsku *k, uint64_t now)
{
	if (a->l_stuck)
		return FLASH_OK;        /* an intent waits for the next start (stuck()) */
	if (k->ks_closed) {
		struct flash_sku_info si;
		if (flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si) == FLASH_OK && si.available > 0)
			return late_return(a, k, (int64_t)si.available);
		return FLASH_OK;
	}
	if (k->ks_pool != 1) {
		if (now < k->ks_pool_check_ms)
			return FLASH_OK;
		struct pool_row p;
		int rc = central_pool_get(a->l_c, k->ks_act, k->ks_sku, &p);
		k->ks_pool_check_ms = now + 5000;
		if (rc == FLASH_ENOT_FOUND && k->ks_nl == 0) {
			k->ks_pool = -1;        /* not a leased sku (yet) */
			return FLASH_OK;
		}
		if (rc != FLASH_OK && rc != FLASH_ENOT_FOUND)
			return rc;
		k->ks_pool = 1;
	}
	struct flash_sku_info si;
	int rc = flash_sku_get(a->l_h, k->ks_act, k->ks_sku, &si);
	if (rc != FLASH_OK)
		return rc;
	int64_t sold = (int64_t)si.total - (int64_t)si.available, avail = (int64_t)si.available;
	if (k->ks_last_sold < 0) {
		k->ks_last_sold = sold;
		k->ks_last_ms = now;
	} else if (now - k->ks_last_ms >= 200) {
		double inst = (double)(sold - k->ks_last_sold) * 1000.0 / (double)(now - k->ks_last_ms);
		k->ks_rate = k->ks_rate == 0 ? inst : 0.7 * k->ks_rate + 0.3 * inst;
		k->ks_last_sold = sold;
		k->ks_last_ms = now;
	}
	if (activity_ended(a, k->ks_act))
		return sku_close(a, k);
	int64_t lo = (int64_t)a->l_o.lease_min, hi = (int64_t)a->l_o.lease_max;
	int64_t low = clamp64((int64_t)(k->ks_rate * a->l_o.lead_ms / 1000.0 + 0.999), lo, INT64_MAX / 4);
	int64_t step = clamp64((int64_t)(k->ks_rate * 3.0), lo, hi);
	if (avail < low) {
		if (now < k->ks_take_after_ms)
			return FLASH_OK;
		struct pool_row p;
		if ((rc = central_pool_get(a->l_c, k->ks_act, k->ks_sku, &p)) != FLASH_OK)
			return rc;
		int64_t want = step;
		if (avail + want < low)
			want = clamp64(low - avail, lo, hi);
		int64_t take = want < p.unleased ? want : p.unleased;
		if (take <= 0) {
			if (!k->ks_wanted || p.wanted < want) {
				(void)central_want(a->l_c, k->ks_act, k->ks_sku, want);
				k->ks_wanted = 1;
			}
			k->ks_take_after_ms = now + 100;
			return FLASH_OK;
		}
		rc = op_take(a, k, take);
		if (rc == FLASH_ESOLD_OUT) {
			k->ks_take_after_ms = now + 20;
			return FLASH_OK;
		}
		if (rc == FLASH_OK)
			k->ks_wanted = 0;
		return rc;
	}
	/* surplus: the pool is empty and another box wants units */
	k->ks_wanted = 0;       /* at or above the low-water: this box wants nothing */
	if (avail > low && now >= k->ks_pool_check_ms) {
		k->ks_pool_check_ms = now + 250;
		struct pool_row p;
		if ((rc = central_pool_get(a->l_c, k->ks_act, k->ks_sku, &p)) != FLASH_OK)
			return rc;
		if (p.unleased == 0 && p.wanted > 0) {
			int64_t give = avail - low;
			if (give > p.wanted)
				give = p.wanted;
			int64_t r = op_return(a, k, give);
			if (r < 0)
				return (int)r;
			if (r > 0)
				llog(a, PLOG_INFO, "returned %" PRId64 " surplus units of %u/%u (another box"
				     " wants %" PRId64 ")", r, k->ks_act, k->ks_sku, p.wanted);
		}
	}
	return FLASH_OK;
}

/* A clean stop: give back what the box holds (its leases stay open). */
static void return_all(struct lease *a)
{
	int64_t sum = 0;
	if (a->l_stuck)
		return;                 /* the kept intent's totals must not move */
	for (size_t i = 0; i < a->l_nsku; i++) {
		struct lsku *k = &a->l_sku[i];
		if (k->ks_closed || k->ks_nl == 0)
			continue;
		int64_t r = op_return(a, k, INT64_MAX / 4);
		if (r < 0) {
			llog(a, PLOG_WARN, "return at stop of %u/%u: %s", k->ks_act, k->ks_sku,
			     flash_strerror((int)r));
			continue;
		}
		sum += r;
	}
	llog(a, PLOG_INFO, "stopping: %" PRId64 " units returned to the pool", sum);
}

/* Ask again for the pending take or return (the last 't'/'r' intent), with
 * the same lease id and returned count: exactly once whatever the first
 * attempt did.  FLASH_OK once settled. */
static int pending_retry(struct lease *a)
{
	struct intent *t = NULL;
	for (size_t i = a->l_nit; i-- > 0;)
		if (a->l_it[i].it_op != 'd') {
			t = &a->l_it[i];
			break;
		}
	if (!t || t != &a->l_it[a->l_nit - 1]) {
		a->l_pending = 0;
		return FLASH_OK;
	}
	struct lsku *k = sku_find(a, t->it_act, t->it_sku, 1);
	if (!k)
		return FLASH_ENOMEM;
	if (t->it_op == 'c') {
		/* a late return the pool did not answer while the box was out of
		 * touch (late_return); a replay of one that committed is
		 * recognised by the pool */
		int rc = central_return_closed(a->l_c, a->l_o.box_id, a->l_epoch, t->it_act, t->it_sku,
		                                     t->it_id, t->it_before, t->it_k);
		if (rc == FLASH_EMYSQL_RETRY)
			return rc;
		a->l_pending = 0;
		if (rc == FLASH_OK)
			late_returned(a, k, t);
		else if (rc != FLASH_EFENCED)
			(void)stuck(a, rc, t, "refused by the pool:");
		return rc;
	}
	if (t->it_op == 't')
		return take_finish(a, k, t);
	struct llease *l = NULL;
	for (size_t i = 0; i < k->ks_nl; i++)
		if (k->ks_l[i].ll_id == t->it_id)
			l = &k->ks_l[i];
	int rc = l ? return_central(a, k, l, t->it_before, t->it_k) : FLASH_ELEASE;
	if (rc == FLASH_EMYSQL_RETRY)
		return rc;
	a->l_pending = 0;
	if (rc == FLASH_EFENCED)
		return rc;
	if (rc != FLASH_OK && (rc = return_refused(a, l, t, rc)) != FLASH_OK)
		return rc;
	intent_pop(a);
	return FLASH_OK;
}

/*
 * The loop.  Whether the box may sell is decided by the clock alone
 * (touch_deadline(), checked at every turn and before every sku's tick),
 * never by how long the skus' statements took: see suspend().
 */
static int agent_loop(struct lease *a)
{
	uint64_t next_hb = 0, next_scan = 0;
	if (3u * a->l_o.heartbeat_s + 2u >= 30u)
		llog(a, PLOG_WARN, "--heartbeat-s %u: cut off from MariaDB, this box may sell for up to %u s"
		     " after its last heartbeat, not less than lease fence's default --stale-s 30: fence it with"
		     " a larger --stale-s", a->l_o.heartbeat_s, 3u * a->l_o.heartbeat_s + 2u);
	/* from here on no statement outlives the suspension's deadline */
	central_set_deadline(a->l_c, touch_deadline(a));
	while (!stopping(a)) {
		uint64_t now = now_ms();
		if (now >= next_hb) {
			int rc = heartbeat(a);
			next_hb = now + a->l_o.heartbeat_s * 1000u;
			if (rc == FLASH_OK) {
				if (a->l_suspended)
					resume(a);
			} else if (rc == FLASH_EFENCED) {
				become_fenced(a);
				return FLASH_EFENCED;
			} else {
				count_failure(a);
			}
		}
		if (!a->l_suspended && out_of_touch(a))
			suspend(a);
		if (a->l_suspended) {
			/* cancels give units back, a sale can refuse a drain's
			 * restock: every turn takes them out again */
			drain_suspended(a);
			stats_refresh(a);
			nap(a, a->l_o.tick_ms);
			continue;
		}
		if (a->l_pending) {
			int rc = pending_retry(a);
			if (rc == FLASH_EFENCED) {
				become_fenced(a);
				return FLASH_EFENCED;
			}
			if (rc != FLASH_OK)
				count_failure(a);
		}
		if (!a->l_pending) {
			if (now >= next_scan) {
				skus_scan(a);
				next_scan = now + 1000;
			}
			for (size_t i = 0; i < a->l_nsku && !stopping(a); i++) {
				/* a sku's statements end at the deadline, and the
				 * next sku waits for none of them */
				if (out_of_touch(a)) {
					suspend(a);
					break;
				}
				int rc = sku_tick(a, &a->l_sku[i], now_ms());
				if (rc == FLASH_EFENCED) {
					become_fenced(a);
					return FLASH_EFENCED;
				}
				if (rc != FLASH_OK) {
					count_failure(a);
					llog(a, PLOG_WARN, "%u/%u: %s", a->l_sku[i].ks_act, a->l_sku[i].ks_sku,
					     flash_strerror(rc));
				}
			}
			stats_refresh(a);
		}
		nap(a, a->l_o.tick_ms);
	}
	if (!a->l_suspended && !a->l_pending)
		return_all(a);
	stats_refresh(a);
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 7. Thread, stats
 * ------------------------------------------------------------------------ */

static void *agent_main(void *arg)
{
	struct lease *a = arg;
	int rc = flash_open(a->l_segment, 0, &a->l_h);
	if (rc != FLASH_OK) {
		llog(a, PLOG_ERROR, "segment %s: %s", a->l_segment, flash_strerror(rc));
		set_state(a, LEASE_FAILED, rc);
		return NULL;
	}
	/* MariaDB down or failing over at start: start again (the epoch just
	 * moves on; the intent file is read again) */
	while ((rc = agent_start(a)) == FLASH_EMYSQL_RETRY && !stopping(a)) {
		llog(a, PLOG_WARN, "box %u: MariaDB does not answer; registering again", a->l_o.box_id);
		nap(a, 1000);
	}
	if (rc != FLASH_OK) {
		if (!stopping(a))
			llog(a, PLOG_ERROR, "box %u could not start: %s %s%s", a->l_o.box_id, flash_strerror(rc),
			     central_error(a->l_c), strstr(central_error(a->l_c), "doesn't exist")
			     ? " (run `flashstock lease init --mysql URL` first)" : "");
		set_state(a, LEASE_FAILED, rc);
	} else {
		set_state(a, LEASE_RUNNING, FLASH_OK);
		stats_refresh(a);
		rc = agent_loop(a);
		if (rc == FLASH_EFENCED) {
			/* keep the stock at 0: a cancel gives units back */
			while (!stopping(a)) {
				nap(a, a->l_o.tick_ms * 4);
				drain_all(a);
				stats_refresh(a);
			}
		} else {
			set_state(a, LEASE_STOPPED, rc);
		}
	}
	flash_close(a->l_h);
	a->l_h = NULL;
	/* release: whoever reads done (acquire) sees the final figures */
	__atomic_store_n(&a->l_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int lease_start(const struct lease_opts *o, lease_t **out)
{
	if (!o || !out || !o->segment || !o->urls || !o->state_dir || o->box_id == 0 ||
	    o->box_id > FLASH_BOX_ID_MAX)
		return FLASH_EINVAL;
	struct lease *a = calloc(1, sizeof *a);
	if (!a)
		return FLASH_ENOMEM;
	a->l_o = *o;
	if (!a->l_o.lease_min)
		a->l_o.lease_min = 10;
	if (!a->l_o.lease_max)
		a->l_o.lease_max = 1000;
	if (!a->l_o.lead_ms)
		a->l_o.lead_ms = 1000;
	if (!a->l_o.heartbeat_s)
		a->l_o.heartbeat_s = 2;
	if (!a->l_o.tick_ms)
		a->l_o.tick_ms = 50;
	if (a->l_o.lease_min > a->l_o.lease_max) {
		free(a);
		return FLASH_EINVAL;
	}
	a->l_segment = strdup(o->segment);
	a->l_urls = strdup(o->urls);
	a->l_dir = strdup(o->state_dir);
	a->l_kill_at = getenv("FLASH_LEASE_KILL_AT");
	pthread_mutex_init(&a->l_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_cond_init(&a->l_cv, &ca);
	pthread_condattr_destroy(&ca);
	a->l_st.box_id = o->box_id;
	/* one statement retries at most a heartbeat period: the loop then
	 * looks at its heartbeat (suspend) and at a stop */
	struct central_opts co = { .urls = o->urls, .log = central_log, .log_arg = a,
	                                 .retry_ms = a->l_o.heartbeat_s * 1000u, .timeout_s = 2 };
	int rc = (!a->l_segment || !a->l_urls || !a->l_dir) ? FLASH_ENOMEM : central_open(&co, &a->l_c);
	if (rc == FLASH_OK && pthread_create(&a->l_thr, NULL, agent_main, a) != 0)
		rc = FLASH_ESYS;
	if (rc != FLASH_OK) {
		central_close(a->l_c);
		free(a->l_segment);
		free(a->l_urls);
		free(a->l_dir);
		pthread_mutex_destroy(&a->l_mu);
		pthread_cond_destroy(&a->l_cv);
		free(a);
		return rc;
	}
	a->l_started = 1;
	*out = a;
	return FLASH_OK;
}

void lease_stats_get(lease_t *a, struct lease_stats *out)
{
	pthread_mutex_lock(&a->l_mu);
	*out = a->l_st;
	pthread_mutex_unlock(&a->l_mu);
}

void lease_stop_begin(lease_t *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->l_mu);
	/* release: the agent's acquire load in stopping() sees it; under the
	 * mutex so a nap about to wait cannot miss the broadcast */
	__atomic_store_n(&a->l_stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&a->l_cv);
	pthread_mutex_unlock(&a->l_mu);
}

int lease_done(lease_t *a)
{
	return !a || __atomic_load_n(&a->l_done, __ATOMIC_ACQUIRE) != 0;
}

int lease_stop(lease_t *a)
{
	if (!a)
		return FLASH_OK;
	lease_stop_begin(a);
	if (a->l_started)
		pthread_join(a->l_thr, NULL);
	int rc = a->l_st.rc;
	central_close(a->l_c);
	for (size_t i = 0; i < a->l_nsku; i++)
		free(a->l_sku[i].ks_l);
	free(a->l_sku);
	free(a->l_it);
	free(a->l_segment);
	free(a->l_urls);
	free(a->l_dir);
	pthread_mutex_destroy(&a->l_mu);
	pthread_cond_destroy(&a->l_cv);
	free(a);
	return rc;
}

const char *lease_state_name(int state)
{
	static const char *const names[] = { "starting", "running", "fenced", "suspended", "failed", "stopped" };
	return state >= 0 && state <= LEASE_STOPPED ? names[state] : "?";
}
