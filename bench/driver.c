/*
 * driver.c -- the workload driver: request generation, worker processes and
 * threads, the start barrier, the closed and open measuring loops, and one
 * run from engine setup to verified result.
 *
 * Divisions:
 *   1. Names and workloads (request generation, Zipf, stock per sku)
 *   2. Worker side (barrier, loop, recording)
 *   3. Parent side (fork, progress, wait, merge, verify)
 *   4. Small helpers engines share (temp dirs, a u64 counter map)
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * 1. Names and workloads
 * ------------------------------------------------------------------------ */

static const char *const wl_names[BENCH_WL_COUNT] = { "hot", "zipf", "dedup", "mixed" };

const char *bench_workload_name(int wl)
{
	return wl >= 0 && wl < BENCH_WL_COUNT ? wl_names[wl] : "?";
}

int bench_workload_parse(const char *s)
{
	int i;

	for (i = 0; i < BENCH_WL_COUNT; i++)
		if (strcmp(s, wl_names[i]) == 0)
			return i;
	return -1;
}

const char *bench_dur_name(int d)
{
	switch (d) {
	case BENCH_DUR_NONE:  return "none";
	case BENCH_DUR_ASYNC: return "async";
	case BENCH_DUR_SYNC:  return "sync";
	}
	return "?";
}

const char *bench_outcome_name(int rc)
{
	static const char *const n[BENCH_RC_COUNT] = {
		"ok", "sold_out", "limit", "bad_token", "not_found", "cancelled", "error"
	};
	return rc >= 0 && rc < BENCH_RC_COUNT ? n[rc] : "?";
}

uint32_t bench_skus(int wl)
{
	return wl == BENCH_WL_ZIPF ? BENCH_ZIPF_SKUS : 1u;
}

/* Units of sku @p sku: the total split evenly, the remainder to the first
 * skus, so the per-sku figures always add up to the total. */
uint64_t bench_sku_units(const struct bench_cfg *c, int wl, uint64_t total_units, uint32_t sku)
{
	uint32_t n = bench_skus(wl);
	uint64_t base = total_units / n, rem = total_units % n;

	(void)c;
	return base + ((uint64_t)(sku - 1) < rem ? 1u : 0u);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Zipf CDF over the skus, computed in the parent before fork (read-only after). */
static double *zipf_cdf;
static double  zipf_cdf_s;

static int zipf_prepare(double s)
{
	double sum = 0.0;
	uint32_t i;

	if (zipf_cdf && zipf_cdf_s == s)
		return 0;
	free(zipf_cdf);
	zipf_cdf = malloc(sizeof(double) * BENCH_ZIPF_SKUS);
	if (!zipf_cdf)
		return -1;
	for (i = 0; i < BENCH_ZIPF_SKUS; i++) {
		sum += 1.0 / pow((double)(i + 1), s);
		zipf_cdf[i] = sum;
	}
	for (i = 0; i < BENCH_ZIPF_SKUS; i++)
		zipf_cdf[i] /= sum;
	zipf_cdf_s = s;
	return 0;
}

static uint32_t zipf_pick(uint64_t *rng)
{
	double u = (double)(splitmix64(rng) >> 11) * (1.0 / 9007199254740992.0);
	uint32_t lo = 0, hi = BENCH_ZIPF_SKUS - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (zipf_cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1;
}

/* Order requests one thread makes, warm-up included (mixed: 70%). */
static uint64_t orders_per_thread(const struct bench_cfg *c, int wl)
{
	uint64_t n = c->warmup + c->ops;

	return wl == BENCH_WL_MIXED ? n * 7 / 10 : n;
}

/* Size of the dedup workload's user pool: one user per ten order requests,
 * so nine requests in ten come from a user who has bought or tried. */
static uint64_t dedup_pool(const struct bench_run *run)
{
	uint64_t u = run->order_reqs / 10;

	return u ? u : 1;
}

/*
 * Fill the worker's request array.  Users are unique per request in hot,
 * zipf and mixed (user = thread << 32 | seq), shared by all workers in
 * dedup (so two processes race for the same user).  Deterministic for a
 * given seed and thread.
 */
static int gen_requests(struct bench_worker *w)
{
	const struct bench_run *run = w->run;
	uint64_t rng = run->cfg.seed ^ (0x5851f42d4c957f2dull * (w->gtid + 1));
	uint64_t i, n = run->cfg.warmup + run->cfg.ops;

	w->req = calloc(n ? n : 1, sizeof(*w->req));
	if (!w->req)
		return -1;
	w->nreq = n;
	for (i = 0; i < n; i++) {
		struct bench_req *r = &w->req[i];
		r->kind = BENCH_OP_ORDER;
		r->sku = 1;
		r->user = ((uint64_t)(w->gtid + 1) << 32) | (i + 1);
		switch (run->wl) {
		case BENCH_WL_ZIPF:
			r->sku = zipf_pick(&rng);
			break;
		case BENCH_WL_DEDUP:
			r->user = 1 + splitmix64(&rng) % dedup_pool(run);
			break;
		case BENCH_WL_MIXED: {
			uint64_t x = splitmix64(&rng) % 100;
			r->kind = x < 70 ? BENCH_OP_ORDER : x < 95 ? BENCH_OP_QUERY : BENCH_OP_CANCEL;
			break;
		}
		default:
			break;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * 2. Worker side
 * ------------------------------------------------------------------------ */

uint64_t bench_clock_ns(void)
{
	return bench_now_ns();
}

void bench_fail(struct bench_worker *w, const char *fmt, ...)
{
	va_list ap;

	if (w->st->ws_failed)
		return;
	w->st->ws_failed = 1;
	va_start(ap, fmt);
	vsnprintf(w->st->ws_err, sizeof(w->st->ws_err), fmt, ap);
	va_end(ap);
}

/*
 * Arrive at the start barrier and wait for the parent's go.  The add is a
 * full barrier, so everything the thread prepared is done before the
 * parent can see it ready; the acquire load of sh_go pairs with the
 * parent's release store.
 */
int bench_barrier(struct bench_worker *w)
{
	struct bench_shared *sh = w->run->sh;

	w->at_barrier = 1;
	__atomic_add_fetch(&sh->sh_ready, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		if (__atomic_load_n(&sh->sh_go, __ATOMIC_ACQUIRE))
			return 0;
		if (__atomic_load_n(&sh->sh_abort, __ATOMIC_RELAXED))
			return -1;
		usleep(100);
	}
}

void bench_own_push(struct bench_worker *w, uint64_t order_no, uint32_t sku)
{
	if (w->own_n == w->own_cap) {
		uint64_t cap = w->own_cap ? w->own_cap * 2 : 1024;
		uint64_t *no = realloc(w->own_no, cap * sizeof(*no));
		uint32_t *sk;
		if (!no)
			return;
		w->own_no = no;
		sk = realloc(w->own_sku, cap * sizeof(*sk));
		if (!sk)
			return;
		w->own_sku = sk;
		w->own_cap = cap;
	}
	w->own_no[w->own_n] = order_no;
	w->own_sku[w->own_n] = sku;
	w->own_n++;
}

int bench_own_pop(struct bench_worker *w, uint64_t *order_no, uint32_t *sku)
{
	if (w->own_n == 0)
		return 0;
	w->own_n--;
	*order_no = w->own_no[w->own_n];
	*sku = w->own_sku[w->own_n];
	return 1;
}

/* Count an op's effect on stock (all ops, warm-up included). */
static inline void count_effect(struct bench_worker *w, int kind, int rc)
{
	if (rc != BENCH_RC_OK)
		return;
	if (kind == BENCH_OP_ORDER)
		w->st->ws_acked++;
	else if (kind == BENCH_OP_CANCEL)
		w->st->ws_cancel_ok++;
}

void bench_record(struct bench_worker *w, int outcome, int kind, uint64_t lat_ns)
{
	struct bench_wstat *st = w->st;

	bench_hist_record(&st->ws_hist, lat_ns);
	st->ws_count[outcome]++;
	st->ws_kind[kind]++;
	st->ws_measured++;
}

/* Sleep until close to @p t, then spin: a sleep's wake-up lateness would
 * be charged to the request (open loop measures from the intended time). */
static void wait_until(uint64_t t)
{
	uint64_t now = bench_now_ns();

	if (t > now + 300000) {
		struct timespec ts = { 0, (long)(t - now - 200000) };
		if (t - now - 200000 >= 1000000000u) {
			ts.tv_sec = (time_t)((t - now - 200000) / 1000000000u);
			ts.tv_nsec = (long)((t - now - 200000) % 1000000000u);
		}
		nanosleep(&ts, NULL);
	}
	while (bench_now_ns() < t)
		__builtin_ia32_pause();
}

/*
 * The measuring loop of synchronous engines.  Closed loop: an op starts as
 * soon as the previous one ends and its latency is its service time.  Open
 * loop (--rate): request i is due at t0 + i * interval; latency runs from
 * that intended start, so a request delayed by a slow predecessor is
 * charged the wait (no coordinated omission).  With @p sample > 1 (a power
 * of two) only one op in @p sample is timed; throughput still counts all.
 */
int bench_loop(struct bench_worker *w, bench_op_fn op, uint32_t sample)
{
	const struct bench_cfg *c = &w->run->cfg;
	struct bench_shared *sh = w->run->sh;
	struct bench_wstat *st = w->st;
	uint64_t i, warm = c->warmup < w->nreq ? c->warmup : w->nreq;
	uint64_t t0 = 0, t1 = 0, start, deadline = UINT64_MAX, interval = 0;
	uint64_t mask = sample > 1 ? sample - 1 : 0;
	int rc;

	if (c->rate > 0)
		interval = (uint64_t)(1e9 * sh->sh_nworkers / c->rate);
	if (bench_barrier(w))
		return -1;
	for (i = 0; i < warm; i++) {
		rc = op(w, &w->req[i]);
		if (rc == BENCH_RC_ERROR)
			return -1;
		count_effect(w, (int)w->req[i].kind, rc);
		if ((i & 255) == 0)
			__atomic_store_n(&st->ws_progress, i, __ATOMIC_RELAXED);
	}
	start = bench_now_ns();
	if (c->duration_s > 0)
		deadline = start + (uint64_t)(c->duration_s * 1e9);
	st->ws_t_start = start;
	t1 = start;
	for (; i < w->nreq; i++) {
		struct bench_req *r = &w->req[i];
		int timed = interval || ((i - warm) & mask) == 0;
		if (interval) {
			t0 = start + (i - warm) * interval;
			wait_until(t0);
		} else if (timed) {
			t0 = bench_now_ns();
		}
		if (timed && t0 > deadline)
			break;
		rc = op(w, r);
		if (rc == BENCH_RC_ERROR)
			return -1;
		count_effect(w, (int)r->kind, rc);
		if (timed) {
			t1 = bench_now_ns();
			bench_record(w, rc, (int)r->kind, t1 - t0);
		} else {
			st->ws_count[rc]++;
			st->ws_kind[r->kind]++;
			st->ws_measured++;
		}
		if ((i & 255) == 0) {
			__atomic_store_n(&st->ws_progress, i, __ATOMIC_RELAXED);
			if (__atomic_load_n(&sh->sh_abort, __ATOMIC_RELAXED))
				break;
		}
	}
	st->ws_t_end = mask ? bench_now_ns() : t1;
	__atomic_store_n(&st->ws_progress, i, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The closed loop of an engine with a batch call: runs of up to @p k
 * consecutive order requests go to @p many in one call, anything else
 * (mixed: queries, cancels) to @p op alone.  Each order of a batch is
 * charged the batch's whole time: what its caller waited for its answer.
 * Open loop is refused by cmd_bench (a batch would wait for its last
 * arrival, which is no longer the engine's latency).
 */
int bench_loop_many(struct bench_worker *w, bench_op_fn op, bench_many_fn many, uint32_t k)
{
	const struct bench_cfg *c = &w->run->cfg;
	struct bench_shared *sh = w->run->sh;
	struct bench_wstat *st = w->st;
	uint64_t i = 0, warm = c->warmup < w->nreq ? c->warmup : w->nreq, next = 0;
	uint64_t start = 0, deadline = UINT64_MAX, t0, t1 = 0;
	int *out = calloc(k, sizeof(*out));
	int rc = 0;

	if (out == NULL) {
		bench_fail(w, "out of memory");
		return -1;
	}
	if (bench_barrier(w)) {
		free(out);
		return -1;
	}
	while (i < w->nreq) {
		uint64_t end = i + 1, lim = i < warm ? warm : w->nreq;
		int measured = i >= warm;

		if (measured && start == 0) {
			start = t1 = bench_now_ns();
			if (c->duration_s > 0)
				deadline = start + (uint64_t)(c->duration_s * 1e9);
			st->ws_t_start = start;
		}
		if (w->req[i].kind == BENCH_OP_ORDER)
			while (end < lim && end - i < k && w->req[end].kind == BENCH_OP_ORDER)
				end++;
		t0 = bench_now_ns();
		if (measured && t0 > deadline)
			break;
		if (w->req[i].kind == BENCH_OP_ORDER) {
			if (many(w, &w->req[i], (uint32_t)(end - i), out) != 0) {
				rc = -1;
				break;
			}
		} else if ((out[0] = op(w, &w->req[i])) == BENCH_RC_ERROR) {
			rc = -1;
			break;
		}
		t1 = bench_now_ns();
		for (uint64_t j = i; j < end; j++) {
			count_effect(w, (int)w->req[j].kind, out[j - i]);
			if (measured)
				bench_record(w, out[j - i], (int)w->req[j].kind, t1 - t0);
		}
		i = end;
		if (i >= next) {
			next = i + 256;
			__atomic_store_n(&st->ws_progress, i, __ATOMIC_RELAXED);
			if (measured && __atomic_load_n(&sh->sh_abort, __ATOMIC_RELAXED))
				break;
		}
	}
	st->ws_t_end = t1;
	__atomic_store_n(&st->ws_progress, i, __ATOMIC_RELAXED);
	free(out);
	return rc;
}

static void *worker_main(void *arg)
{
	struct bench_worker *w = arg;

	if (gen_requests(w) != 0)
		bench_fail(w, "out of memory for %llu requests",
		           (unsigned long long)(w->run->cfg.warmup + w->run->cfg.ops));
	else if (w->run->eng->thread(w) != 0 && !w->st->ws_failed)
		bench_fail(w, __atomic_load_n(&w->run->sh->sh_abort, __ATOMIC_RELAXED)
		                  ? "stopped: the run was aborted" : "engine thread failed");
	if (!w->at_barrier) {   /* failed while preparing: let the parent see it */
		w->st->ws_failed = w->st->ws_failed ? w->st->ws_failed : 1;
		__atomic_add_fetch(&w->run->sh->sh_ready, 1, __ATOMIC_SEQ_CST);
	}
	free(w->req);
	free(w->own_no);
	free(w->own_sku);
	return NULL;
}

static pid_t bench_parent;   /* the process that forks the workers */
volatile sig_atomic_t bench_interrupted;

/* A worker process: T threads (the first on the process's own stack). */
static void worker_process(struct bench_run *run, uint32_t proc)
{
	uint32_t T = run->cfg.threads, t;
	struct bench_worker *ws = calloc(T, sizeof(*ws));
	pthread_t *tid = calloc(T, sizeof(*tid));

	/* the parent's SIGINT/SIGTERM handler is not the worker's */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	/* a worker never outlives the bench (killed or timed out) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_TIMERSLACK, 1UL);   /* open loop: wake up on time */
	if (getppid() != bench_parent)
		_exit(4);
	if (!ws || !tid)
		_exit(3);
	for (t = 0; t < T; t++) {
		ws[t].run = run;
		ws[t].proc = proc;
		ws[t].thread = t;
		ws[t].gtid = proc * T + t;
		ws[t].st = &run->sh->sh_w[ws[t].gtid];
	}
	for (t = 1; t < T; t++)
		if (pthread_create(&tid[t], NULL, worker_main, &ws[t]) != 0) {
			bench_fail(&ws[t], "pthread_create failed");
			__atomic_add_fetch(&run->sh->sh_ready, 1, __ATOMIC_SEQ_CST);
			tid[t] = 0;
		}
	worker_main(&ws[0]);
	for (t = 1; t < T; t++)
		if (tid[t])
			pthread_join(tid[t], NULL);
	_exit(0);
}

/* ------------------------------------------------------------------------
 * 3. Parent side
 * ------------------------------------------------------------------------ */

static double now_s(void)
{
	return (double)bench_now_ns() / 1e9;
}

static uint64_t progress_sum(const struct bench_run *run)
{
	uint64_t s = 0;
	uint32_t i;

	for (i = 0; i < run->sh->sh_nworkers; i++)
		s += __atomic_load_n(&run->sh->sh_w[i].ws_progress, __ATOMIC_RELAXED);
	return s;
}

static void progress_line(const struct bench_run *run, double t0, uint64_t total, int final)
{
	static int tty = -1;
	uint64_t done = progress_sum(run);
	double el = now_s() - t0;

	if (!run->cfg.progress)
		return;
	if (tty < 0)
		tty = isatty(2);
	fprintf(stderr, "%s[bench] %-20s %-6s %-5s %6.1fs %12llu/%llu ops  %10.0f ops/s%s",
	        tty ? "\r" : "", run->eng->name, bench_workload_name(run->wl),
	        bench_dur_name(run->dur), el, (unsigned long long)done,
	        (unsigned long long)total, el > 0 ? (double)done / el : 0.0,
	        tty && !final ? "" : "\n");
	fflush(stderr);
}

/*
 * Wait for the worker processes, calling the engine's poll (ring drain) in
 * between.  Before go: waits until every thread is ready, or aborts when
 * one failed or a process died.  @return number of workers that failed or
 * died abnormally.
 */
static int supervise(struct bench_run *run, pid_t *pids, uint32_t np)
{
	struct bench_shared *sh = run->sh;
	uint32_t alive = np, i;
	int bad = 0, started = 0, killed = 0;
	double t_begin = now_s();
	double t0 = now_s(), last = t0;
	uint64_t total = (uint64_t)sh->sh_nworkers * (run->cfg.warmup + run->cfg.ops);

	while (alive > 0) {
		if (!started && __atomic_load_n(&sh->sh_ready, __ATOMIC_SEQ_CST) >= sh->sh_nworkers) {
			int failed = 0;
			for (i = 0; i < sh->sh_nworkers; i++)
				failed |= sh->sh_w[i].ws_failed;
			if (failed) {
				__atomic_store_n(&sh->sh_abort, 1, __ATOMIC_RELEASE);
			} else {
				sh->sh_go_ns = bench_now_ns();
				__atomic_store_n(&sh->sh_go, 1, __ATOMIC_RELEASE);
			}
			started = 1;
			t0 = last = now_s();
		}
		if (run->eng->poll)
			run->eng->poll(run);
		else
			usleep(2000);
		for (i = 0; i < np; i++) {
			int status;
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
					bad++;
					snprintf(run->err, sizeof(run->err), "worker process %u %s %d", i,
					         WIFEXITED(status) ? "exited with" : "killed by signal",
					         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
					__atomic_store_n(&sh->sh_abort, 1, __ATOMIC_RELEASE);
				}
				pids[i] = 0;
				alive--;
			}
		}
		if (bench_interrupted && !__atomic_load_n(&sh->sh_abort, __ATOMIC_RELAXED)) {
			snprintf(run->err, sizeof(run->err), "interrupted");
			__atomic_store_n(&sh->sh_abort, 1, __ATOMIC_RELEASE);
			bad++;
		}
		if (run->cfg.timeout_s > 0 && now_s() - t_begin > run->cfg.timeout_s) {
			if (!__atomic_load_n(&sh->sh_abort, __ATOMIC_RELAXED)) {
				snprintf(run->err, sizeof(run->err), "timed out after %.0f s", run->cfg.timeout_s);
				__atomic_store_n(&sh->sh_abort, 1, __ATOMIC_RELEASE);
				bad++;
			} else if (!killed && now_s() - t_begin > run->cfg.timeout_s + 10) {
				for (i = 0; i < np; i++)   /* they ignored the abort: stop them */
					if (pids[i] > 0)
						kill(pids[i], SIGKILL);
				killed = 1;
			}
		}
		if (started && now_s() - last >= (isatty(2) ? 0.25 : 2.0)) {
			progress_line(run, t0, total, 0);
			last = now_s();
		}
	}
	if (run->eng->poll)
		run->eng->poll(run);   /* the last records */
	if (started)
		progress_line(run, t0, total, 1);
	return bad;
}

static void fill_result(struct bench_run *run, struct bench_result *res)
{
	struct bench_shared *sh = run->sh;
	uint64_t tmin = UINT64_MAX, tmax = 0;
	uint32_t i, k;

	res->hist = malloc(sizeof(*res->hist));
	if (res->hist)
		bench_hist_init(res->hist);
	for (i = 0; i < sh->sh_nworkers; i++) {
		struct bench_wstat *w = &sh->sh_w[i];
		if (res->hist)
			bench_hist_merge(res->hist, &w->ws_hist);
		for (k = 0; k < BENCH_RC_COUNT; k++)
			res->count[k] += w->ws_count[k];
		res->measured += w->ws_measured;
		if (w->ws_measured) {
			if (w->ws_t_start < tmin)
				tmin = w->ws_t_start;
			if (w->ws_t_end > tmax)
				tmax = w->ws_t_end;
		}
		/* the first worker that failed on its own; one stopped by the abort
		 * is not the cause (bench_run_one then reports the supervisor's) */
		if (w->ws_failed && !res->failed && strncmp(w->ws_err, "stopped: ", 9) != 0) {
			res->failed = 1;
			snprintf(res->err, sizeof(res->err), "worker %u: %s", i, w->ws_err);
		}
	}
	if (tmax > tmin)
		res->ops_per_sec = (double)res->measured * 1e9 / (double)(tmax - tmin);
	if (res->hist) {
		res->p50 = bench_hist_percentile(res->hist, 50.0);
		res->p90 = bench_hist_percentile(res->hist, 90.0);
		res->p99 = bench_hist_percentile(res->hist, 99.0);
		res->p999 = bench_hist_percentile(res->hist, 99.9);
		res->max = res->hist->bh_max;
		res->mean = bench_hist_mean(res->hist);
	}
}

static uint64_t acked_sum(const struct bench_run *run, uint64_t *cancels)
{
	uint64_t s = 0, c = 0;
	uint32_t i;

	for (i = 0; i < run->sh->sh_nworkers; i++) {
		s += run->sh->sh_w[i].ws_acked;
		c += run->sh->sh_w[i].ws_cancel_ok;
	}
	*cancels = c;
	return s;
}

/*
 * One row: set the engine up, fork the workers, supervise, merge, verify
 * from the engine's own records, tear down.  Never fabricates a figure: a
 * row whose setup, workers or verification failed is marked failed with
 * the reason, and its numbers are not printed.
 */
int bench_run_one(const struct bench_engine *e, const struct bench_cfg *cfg,
                  int wl, int dur, struct bench_result *res)
{
	struct bench_run run;
	pid_t pids[BENCH_MAX_WORKERS];
	uint32_t p, nw;
	uint64_t cancels;
	int bad;

	memset(res, 0, sizeof(*res));
	memset(&run, 0, sizeof(run));
	run.eng = e;
	run.cfg = *cfg;
	run.wl = wl;
	run.dur = dur;
	snprintf(res->engine, sizeof(res->engine), "%s", e->name);
	snprintf(res->workload, sizeof(res->workload), "%s", bench_workload_name(wl));
	snprintf(res->durability, sizeof(res->durability), "%s", bench_dur_name(dur));
	if (wl == BENCH_WL_ZIPF && zipf_prepare(cfg->zipf_s) != 0) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "out of memory");
		return 0;
	}
	/* the engine may change procs/threads (mysql: a thread per connection) */
	if (e->shape)
		e->shape(&run);
	nw = run.cfg.procs * run.cfg.threads;
	if (nw) {
		run.cfg.ops = (cfg->ops + nw - 1) / nw;
		run.cfg.warmup = (cfg->warmup + nw - 1) / nw;
	}
	run.order_reqs = bench_order_reqs(&run.cfg, wl);
	run.total_units = bench_default_units(&run);
	if (e->setup(&run) != 0) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "setup: %s", run.err);
		e->teardown(&run);
		return 0;
	}
	/* the engine may name its durability (mysql: the server's setting) */
	snprintf(res->durability, sizeof(res->durability), "%s", bench_dur_name(run.dur));
	res->procs = run.cfg.procs;
	res->threads = run.cfg.threads;
	snprintf(res->conc, sizeof(res->conc), "%s", run.conc[0] ? run.conc : "");
	if (!res->conc[0])
		snprintf(res->conc, sizeof(res->conc), "%ux%u", run.cfg.procs, run.cfg.threads);
	if (run.cfg.procs == 0 || run.cfg.procs > BENCH_MAX_WORKERS || nw == 0 || nw > BENCH_MAX_WORKERS) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "bad procs x threads %ux%u", run.cfg.procs, run.cfg.threads);
		e->teardown(&run);
		return 0;
	}
	run.sh_bytes = sizeof(struct bench_shared) + (size_t)nw * sizeof(struct bench_wstat);
	run.sh = mmap(NULL, run.sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (run.sh == MAP_FAILED) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "mmap shared block: %s", strerror(errno));
		e->teardown(&run);
		return 0;
	}
	run.sh->sh_nworkers = nw;
	run.sh->sh_hot = (int64_t)run.total_units;   /* cas-limit's counter */
	for (p = 0; p < nw; p++)
		bench_hist_init(&run.sh->sh_w[p].ws_hist);
	fflush(NULL);
	bench_parent = getpid();
	for (p = 0; p < run.cfg.procs; p++) {
		pids[p] = fork();
		if (pids[p] == 0)
			worker_process(&run, p);
		if (pids[p] < 0) {
			snprintf(run.err, sizeof(run.err), "fork: %s", strerror(errno));
			__atomic_store_n(&run.sh->sh_abort, 1, __ATOMIC_RELEASE);
			/* the threads of unforked processes never arrive: count them ready */
			__atomic_add_fetch(&run.sh->sh_ready, (run.cfg.procs - p) * run.cfg.threads, __ATOMIC_SEQ_CST);
			for (; p < run.cfg.procs; p++)
				pids[p] = 0;
			break;
		}
	}
	bad = supervise(&run, pids, run.cfg.procs);
	fill_result(&run, res);
	if (bad && !res->failed) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "%s", run.err);
	}
	if (!res->failed && __atomic_load_n(&run.sh->sh_abort, __ATOMIC_RELAXED)) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "aborted: %s", run.err[0] ? run.err : "a worker failed");
	}
	/* verification runs even after a failure: a broken run still must not oversell */
	if (e->verify(&run, &res->chk) != 0) {
		if (!res->failed) {
			res->failed = 1;
			snprintf(res->err, sizeof(res->err), "verify: %s", run.err);
		}
	} else {
		uint64_t acked = acked_sum(&run, &cancels);
		if (res->chk.orders < acked)
			res->chk.lost = (int64_t)(acked - res->chk.orders);
	}
	snprintf(res->note, sizeof(res->note), "%s", run.note);
	e->teardown(&run);
	munmap(run.sh, run.sh_bytes);
	return 0;
}

/* Expected order requests over all workers; engines size tables from it. */
uint64_t bench_order_reqs(const struct bench_cfg *c, int wl)
{
	return orders_per_thread(c, wl) * c->procs * c->threads;
}

/* Default stock: nine units per ten order requests, so every run sells out
 * near its end and the oversold check meets the boundary. */
uint64_t bench_default_units(const struct bench_run *run)
{
	uint64_t u;

	if (run->cfg.stock)
		return run->cfg.stock;
	u = run->order_reqs / 10 * 9;
	return u ? u : 1;
}

/* ------------------------------------------------------------------------
 * 4. Helpers
 * ------------------------------------------------------------------------ */

int bench_mkdtemp(char *out, size_t cap)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp || strlen(tmp) > 60)
		tmp = "/tmp";
	if ((size_t)snprintf(out, cap, "%s/flashbench.XXXXXX", tmp) >= cap)
		return -1;
	return mkdtemp(out) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

void bench_rmtree(const char *dir)
{
	if (dir && dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int bench_map_init(struct bench_u64map *m, uint64_t expect)
{
	uint64_t cap = 1024;

	while (cap < expect * 2)
		cap *= 2;
	m->key = calloc(cap, sizeof(*m->key));
	m->val = calloc(cap, sizeof(*m->val));
	m->cap = cap;
	m->n = 0;
	if (!m->key || !m->val) {
		bench_map_free(m);
		return -1;
	}
	return 0;
}

static void map_grow(struct bench_u64map *m)
{
	struct bench_u64map n;
	uint64_t i;

	if (bench_map_init(&n, m->cap) != 0)
		return;
	for (i = 0; i < m->cap; i++)
		if (m->key[i])
			*bench_map_slot(&n, m->key[i]) = m->val[i];
	bench_map_free(m);
	*m = n;
}

uint32_t *bench_map_slot(struct bench_u64map *m, uint64_t key)
{
	uint64_t i;

	if ((m->n + 1) * 2 > m->cap)
		map_grow(m);
	i = (key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
	while (m->key[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->key[i]) {
		m->key[i] = key;
		m->n++;
	}
	return &m->val[i];
}

void bench_map_free(struct bench_u64map *m)
{
	free(m->key);
	free(m->val);
	m->key = NULL;
	m->val = NULL;
	m->cap = m->n = 0;
}
