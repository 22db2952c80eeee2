/*
 * eng_flash.c -- flashstock itself through its public API: the full order
 * chain (token redeem -> activity window -> per-user limit -> CAS deduct ->
 * order record in the ring) with a request id, one handle per worker thread
 * opened after fork, tokens issued before the timed part.
 *
 * The parent creates a private segment sized for the run, adds one activity
 * (limit 1 per user, token required) and the workload's skus, and drains
 * every ring while the workers run (flash_ring_drain, then
 * flash_durable_advance to free the space), as the daemon would, so rings
 * do not fill; it writes no WAL.  A worker that still finds its ring full (EBUSY is
 * returned before any step of the order is taken) yields and retries; the
 * retries are counted.
 *
 * Durability: with the daemon built in (persist/daemon/serve.h), its loop runs in a
 * child process as the one consumer, writing a real WAL on disk: "async"
 * acknowledges at once while the WAL trails, "sync" waits for the group
 * commit's fdatasync.  Without it, the parent drains the rings itself (no
 * WAL) and only async rows exist (a sync row is refused, never faked).
 *
 * Records: the segment's order table (flash_order_get over 1..max) is what
 * verify() counts, cross-checked against the records the parent drained.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flashstock.h"
#include "flashstock_consumer.h"
#ifdef BENCH_HAVE_SERVE
#include "serve.h"
#include "wal.h"
#endif

#define FLASH_TOKEN_TTL_MS 600000u

#ifdef BENCH_HAVE_SERVE
#define HAVE_SERVE 1
#else
#define HAVE_SERVE 0
#endif

#ifdef BENCH_HAVE_SERVE
/* Shared with the daemon process (MAP_SHARED, made before its fork). */
struct flash_daemon_ctl {
	volatile sig_atomic_t stop;     /* set by the parent: drain, commit, return */
	int                   rc;       /* serve_run()'s return */
	struct serve_stats    stats;
};
#endif

struct flash_state {
	char      name[64];      /* segment name */
	char      wal_dir[128];  /* mkdtemp: the daemon's WAL (on disk, not tmpfs) */
	pid_t     daemon;        /* `flashstock serve` loop in a child, or 0 */
#ifdef BENCH_HAVE_SERVE
	struct flash_daemon_ctl *ctl;
	uint64_t  wal_orders;    /* ORDER records found in the WAL afterwards */
	uint64_t  wal_frames;
	int       wal_stop;
#endif
	int       created;
	flash_t  *h;             /* parent's handle: catalog, drain, verify */
	uint64_t  drained[8];    /* records drained, by type */
	uint64_t  drained_units; /* units of drained ORDER records minus CANCEL */
	uint64_t  cap;           /* order/token/user/request capacity */
	uint32_t  nslots;        /* process-table slots (max_procs) */
	uint64_t *slot_seq;      /* per slot: last record seq drained, not yet released */
	uint64_t *slot_done;     /* per slot: seq released with flash_durable_advance */
};

struct flash_worker {
	flash_t *h;
	uint64_t busy;
	uint64_t fate_waits;   /* sync: FLASH_EFATE_UNKNOWN, then flash_durable_wait */
	/* flashstock-batch: one call's requests, results and outcomes */
	struct flash_order_req *mq;
	struct flash_order_res *mres;
	int *mrc;
};

#ifdef BENCH_HAVE_SERVE
/*
 * The consumer is the real daemon loop (persist/daemon/serve.c, what `flashstock
 * serve` runs) in a child process: it drains the rings into a WAL in a temp
 * directory on disk, group-commits (one write + one fdatasync per round)
 * and marks records durable, which frees ring space and wakes sync buyers.
 * Its CPU use competes with the buyers', as in production.
 */
static int start_daemon(struct bench_run *run, struct flash_state *st)
{
	if (bench_mkdtemp(st->wal_dir, sizeof(st->wal_dir)) != 0) {
		snprintf(run->err, sizeof(run->err), "mkdtemp: %s", strerror(errno));
		st->wal_dir[0] = '\0';
		return -1;
	}
	st->ctl = mmap(NULL, sizeof(*st->ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st->ctl == MAP_FAILED) {
		st->ctl = NULL;
		snprintf(run->err, sizeof(run->err), "mmap: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	st->daemon = fork();
	if (st->daemon < 0) {
		st->daemon = 0;
		snprintf(run->err, sizeof(run->err), "fork: %s", strerror(errno));
		return -1;
	}
	if (st->daemon == 0) {
		struct serve_opts o;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		serve_opts_default(&o);
		o.segment = st->name;
		o.wal_dir = st->wal_dir;
		o.log_level = PLOG_WARN;
		o.stop = &st->ctl->stop;
		st->ctl->rc = serve_run(&o, &st->ctl->stats);
		_exit(st->ctl->rc == 0 ? 0 : 1);
	}
	return 0;
}

/* Stop the daemon: it drains, commits and marks everything, then returns. */
static int stop_daemon(struct bench_run *run, struct flash_state *st)
{
	int status = 0, i;

	if (st->daemon <= 0)
		return 0;
	st->ctl->stop = 1;
	for (i = 0; i < 3000; i++) {
		if (waitpid(st->daemon, &status, WNOHANG) == st->daemon)
			break;
		usleep(10000);
	}
	if (i == 3000) {
		kill(st->daemon, SIGKILL);
		waitpid(st->daemon, &status, 0);
		snprintf(run->err, sizeof(run->err), "the WAL daemon did not stop within 30 s");
		st->daemon = 0;
		return -1;
	}
	st->daemon = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(run->err, sizeof(run->err), "the WAL daemon failed (serve_run %d, %s)",
		         st->ctl->rc, flash_rcname(st->ctl->stats.rc));
		return -1;
	}
	return 0;
}

static int wal_count_fn(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct flash_state *st = arg;
	const struct wal_rec *r = payload;

	(void)lsn;
	st->wal_frames++;
	if (type == WAL_T_RECORD && len >= sizeof(*r) && r->wr_rec.type == FLASH_REC_ORDER)
		st->wal_orders++;
	return 0;
}
#endif

static void flash_poll(struct bench_run *run);

/* sync: a closed-loop buyer has one order in flight, and a group commit
 * can only batch what is in flight, so sync rows run more buyers. */
static void flash_shape(struct bench_run *run)
{
	if (run->dur == BENCH_DUR_SYNC && run->cfg.sync_threads)
		run->cfg.threads = run->cfg.sync_threads;
	if (run->eng->variant)
		snprintf(run->conc, sizeof(run->conc), "%ux%u, batch %u", run->cfg.procs,
		         run->cfg.threads, run->cfg.batch);
}

static int flash_setup(struct bench_run *run)
{
	static unsigned seq;
	struct flash_state *st = calloc(1, sizeof(*st));
	struct flash_seg_opts o;
	struct flash_activity a;
	struct timespec now;
	uint32_t nsku = bench_skus(run->wl), s, nw = run->cfg.procs * run->cfg.threads;
	struct stat sb;
	char path[96];
	int rc, fd;

	if (!st)
		return -1;
	run->eng_state = st;
	if (run->cfg.flash_no_wal || !HAVE_SERVE) {
		if (run->dur == BENCH_DUR_SYNC) {
			snprintf(run->err, sizeof(run->err), "no sync durability without the WAL daemon");
			return -1;
		}
		run->dur = BENCH_DUR_NONE;   /* the bench's own drain writes nothing */
	}
	snprintf(st->name, sizeof(st->name), "/flashbench-%d-%u", (int)getpid(), seq++);
	/* order numbers go to handles in chunks (64 in this engine): each
	 * handle may leave up to a chunk unused, so leave room for that */
	st->cap = run->order_reqs + (uint64_t)(nw + 4) * 128 + 1024;
	flash_seg_opts_default(&o);
	o.max_activities = 4;
	o.max_skus = nsku + 4;
	o.max_shards = nsku * run->cfg.shards + 16;
	o.max_users = (uint32_t)st->cap;
	o.max_tokens = (uint32_t)st->cap;
	o.max_orders = (uint32_t)st->cap;
	o.max_requests = (uint32_t)st->cap;
	o.max_locks = 16;
	o.max_procs = nw + 4;
	/* a ring absorbs what its buyer makes between two drains: few buyers
	 * make many each; sync buyers have one order in flight */
	o.ring_records = nw <= 8 ? 1u << 17 : 1u << 13;
	o.durability = run->dur == BENCH_DUR_SYNC ? FLASH_DURABILITY_SYNC : FLASH_DURABILITY_ASYNC;
	st->nslots = o.max_procs;
	st->slot_seq = calloc(o.max_procs, sizeof(uint64_t));
	st->slot_done = calloc(o.max_procs, sizeof(uint64_t));
	if (!st->slot_seq || !st->slot_done) {
		snprintf(run->err, sizeof(run->err), "out of memory");
		return -1;
	}
	if ((rc = flash_seg_create(st->name, &o)) != FLASH_OK) {
		snprintf(run->err, sizeof(run->err), "flash_seg_create: %s", flash_strerror(rc));
		return -1;
	}
	st->created = 1;
	if ((rc = flash_open(st->name, 0, &st->h)) != FLASH_OK) {
		snprintf(run->err, sizeof(run->err), "flash_open: %s", flash_strerror(rc));
		return -1;
	}
#ifdef BENCH_HAVE_SERVE
	/* the consumer first: the catalog's records go through the rings too */
	if (!run->cfg.flash_no_wal && start_daemon(run, st) != 0)
		return -1;
#endif
	clock_gettime(CLOCK_REALTIME, &now);
	memset(&a, 0, sizeof(a));
	a.id = BENCH_ACTIVITY;
	a.limit_per_user = 1;
	a.max_qty = 1;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.flags = run->cfg.flash_no_tokens ? 0 : FLASH_ACT_TOKEN_REQUIRED;
	a.start_ns = (int64_t)now.tv_sec * 1000000000 - 3600ll * 1000000000;
	a.end_ns = (int64_t)now.tv_sec * 1000000000 + 86400ll * 1000000000;
	if ((rc = flash_activity_add(st->h, &a)) != FLASH_OK) {
		snprintf(run->err, sizeof(run->err), "flash_activity_add: %s", flash_strerror(rc));
		return -1;
	}
	for (s = 1; s <= nsku; s++) {
		uint64_t give_up = bench_now_ns() + 10000000000ull;
		/* ring full: let the consumer catch up (the daemon, or our own drain) */
		while ((rc = flash_sku_add(st->h, BENCH_ACTIVITY, s,
		                           bench_sku_units(&run->cfg, run->wl, run->total_units, s),
		                           run->cfg.shards)) == FLASH_EBUSY && bench_now_ns() < give_up)
			flash_poll(run);
		if (rc != FLASH_OK) {
			snprintf(run->err, sizeof(run->err), "flash_sku_add %u: %s", s, flash_strerror(rc));
			return -1;
		}
	}
	/* memory: segment bytes per order slot (all tables are sized from it) */
	snprintf(path, sizeof(path), "/dev/shm%s", st->name);
	fd = open(path, O_RDONLY);
	if (run->cfg.flash_no_tokens || run->cfg.flash_no_reqids || run->cfg.flash_no_wal)
		snprintf(run->note, sizeof(run->note), "PROFILING:%s%s%s", run->cfg.flash_no_tokens ?
		         " no tokens" : "", run->cfg.flash_no_reqids ? " no request ids" : "",
		         run->cfg.flash_no_wal ? " no WAL daemon" : "");
	else if (fd >= 0 && fstat(fd, &sb) == 0) {
		double rings = (double)o.ring_records * o.max_procs * sizeof(struct flash_record);
		snprintf(run->note, sizeof(run->note),
		         "segment %.1f MiB sized for %llu orders (and as many users, tokens, request ids): "
		         "%.0f bytes per order without the rings (%u records x %u handles, %.0f MiB)",
		         (double)sb.st_size / 1048576.0, (unsigned long long)st->cap,
		         ((double)sb.st_size - rings) / (double)st->cap, o.ring_records, o.max_procs,
		         rings / 1048576.0);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int drain_fn(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct flash_state *st = arg;

	if (rec->slot < st->nslots && seq > st->slot_seq[rec->slot])
		st->slot_seq[rec->slot] = seq;
	if (rec->type < 8)
		st->drained[rec->type]++;
	if (rec->type == FLASH_REC_ORDER)
		st->drained_units += rec->qty;
	else if (rec->type == FLASH_REC_CANCEL)
		st->drained_units -= rec->qty;
	return 0;
}

/*
 * The parent's consumer: drain everything, then hand the ring space back
 * (flash_durable_advance: a ring slot is reusable only once its consumer
 * says so).  No WAL is written here: in async mode nothing waits on it.
 * Sleeps briefly when idle.
 */
static void flash_poll(struct bench_run *run)
{
	struct flash_state *st = run->eng_state;
	uint32_t got = 0, s;

	if (st->daemon > 0) {   /* the daemon is the one consumer */
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
		return;
	}
	if (flash_ring_drain(st->h, drain_fn, st, 1u << 20, &got) != FLASH_OK)
		got = 0;
	for (s = 0; s < st->nslots; s++)
		if (st->slot_seq[s] > st->slot_done[s] &&
		    flash_durable_advance(st->h, s, st->slot_seq[s]) == FLASH_OK)
			st->slot_done[s] = st->slot_seq[s];
	if (got == 0) {
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
}

static int map_rc(struct bench_worker *w, int rc, const char *what)
{
	switch (rc) {
	case FLASH_OK:           return BENCH_RC_OK;
	case FLASH_ESOLD_OUT:    return BENCH_RC_SOLD_OUT;
	case FLASH_ELIMIT:       return BENCH_RC_LIMIT;
	case FLASH_EBAD_TOKEN:   return BENCH_RC_BAD_TOKEN;
	case FLASH_ENOT_FOUND:   return BENCH_RC_NOT_FOUND;
	case FLASH_ECANCELLED:   return BENCH_RC_CANCELLED;
	}
	bench_fail(w, "%s: %s", what, flash_strerror(rc));
	return BENCH_RC_ERROR;
}

static void order_req(const struct bench_worker *w, const struct bench_req *r,
                      struct flash_order_req *q)
{
	memset(q, 0, sizeof(*q));
	q->activity_id = BENCH_ACTIVITY;
	q->sku_id = r->sku;
	q->user_id = r->user;
	q->qty = 1;
	q->token = r->token;
	if (!w->run->cfg.flash_no_reqids)
		q->request_id = ((uint64_t)(w->gtid + 1) << 40) | (uint64_t)(r - w->req + 1);
}

/*
 * One order's outcome for the table: EBUSY (ring full) is returned before
 * any step is taken, so the order is placed again alone until it gets
 * another answer; in sync durability an order placed but not durable
 * within the wait bound (a slow fdatasync) is waited for again, as
 * flashstock.h tells a caller to -- the latency includes the wait.
 */
static int order_settle(struct bench_worker *w, const struct flash_order_req *q,
                        struct flash_order_res *res, int rc, uint32_t sku)
{
	struct flash_worker *fw = w->eng;

	while (rc == FLASH_EBUSY) {
		fw->busy++;
		if (__atomic_load_n(&w->run->sh->sh_abort, __ATOMIC_RELAXED)) {
			bench_fail(w, "ring full and the run aborted (%llu retries)",
			           (unsigned long long)fw->busy);
			return BENCH_RC_ERROR;
		}
		sched_yield();
		rc = flash_order(fw->h, q, res);
	}
	for (int t = 0; rc == FLASH_EFATE_UNKNOWN && t < 12; t++) {
		fw->fate_waits++;
		rc = flash_durable_wait(fw->h, res->lsn, 5000);
	}
	if (rc == FLASH_OK)
		bench_own_push(w, res->order_no, sku);
	return map_rc(w, rc, "flash_order");
}

/* flashstock-batch: @p n orders in one flash_order_many call. */
static int flash_many(struct bench_worker *w, struct bench_req *r, uint32_t n, int *out)
{
	struct flash_worker *fw = w->eng;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		order_req(w, &r[i], &fw->mq[i]);
	if ((rc = flash_order_many(fw->h, fw->mq, n, fw->mres, fw->mrc)) != FLASH_OK) {
		bench_fail(w, "flash_order_many: %s", flash_strerror(rc));
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		if ((out[i] = order_settle(w, &fw->mq[i], &fw->mres[i], fw->mrc[i], r[i].sku)) ==
		    BENCH_RC_ERROR)
			return -1;
	return 0;
}

static int flash_op(struct bench_worker *w, struct bench_req *r)
{
	struct flash_worker *fw = w->eng;
	int rc;

	if (r->kind == BENCH_OP_ORDER) {
		struct flash_order_req q;
		struct flash_order_res res;

		order_req(w, r, &q);
		return order_settle(w, &q, &res, flash_order(fw->h, &q, &res), r->sku);
	}
	if (r->kind == BENCH_OP_QUERY) {
		struct flash_sku_info info;
		rc = flash_sku_get(fw->h, BENCH_ACTIVITY, r->sku, &info);
		return map_rc(w, rc, "flash_sku_get");
	} else {
		uint64_t no;
		uint32_t sku, units = 0;
		if (!bench_own_pop(w, &no, &sku))
			no = 1u << 31;   /* nothing of ours to cancel: an unknown number */
		while ((rc = flash_cancel(fw->h, no, &units)) == FLASH_EBUSY) {
			fw->busy++;
			if (__atomic_load_n(&w->run->sh->sh_abort, __ATOMIC_RELAXED)) {
				bench_fail(w, "ring full and the run aborted");
				return BENCH_RC_ERROR;
			}
			sched_yield();
		}
		if (rc == FLASH_EINVAL || rc == FLASH_ENOT_FOUND)
			return BENCH_RC_NOT_FOUND;
		return map_rc(w, rc, "flash_cancel");
	}
}

static int flash_thread(struct bench_worker *w)
{
	struct flash_state *st = w->run->eng_state;
	struct flash_worker fw = { 0 };
	uint64_t i;
	int rc;

	if ((rc = flash_open(st->name, 0, &fw.h)) != FLASH_OK) {
		bench_fail(w, "flash_open: %s", flash_strerror(rc));
		return -1;
	}
	w->eng = &fw;
	for (i = 0; i < w->nreq; i++) {
		struct bench_req *r = &w->req[i];
		if (r->kind != BENCH_OP_ORDER || w->run->cfg.flash_no_tokens)
			continue;
		rc = flash_token_issue(fw.h, BENCH_ACTIVITY, r->sku, r->user, FLASH_TOKEN_TTL_MS, &r->token);
		if (rc != FLASH_OK) {
			bench_fail(w, "flash_token_issue: %s", flash_strerror(rc));
			flash_close(fw.h);
			return -1;
		}
	}
	if (w->run->eng->variant) {
		uint32_t k = w->run->cfg.batch ? w->run->cfg.batch : 1;

		fw.mq = calloc(k, sizeof(*fw.mq));
		fw.mres = calloc(k, sizeof(*fw.mres));
		fw.mrc = calloc(k, sizeof(*fw.mrc));
		if (fw.mq == NULL || fw.mres == NULL || fw.mrc == NULL) {
			bench_fail(w, "out of memory");
			rc = -1;
		} else {
			rc = bench_loop_many(w, flash_op, flash_many, k);
		}
		free(fw.mq);
		free(fw.mres);
		free(fw.mrc);
	} else {
		rc = bench_loop(w, flash_op, 1);
	}
	w->st->ws_busy = fw.busy;
	w->st->ws_fate_waits = fw.fate_waits;
	flash_close(fw.h);
	w->eng = NULL;
	return rc;
}

static int flash_verify(struct bench_run *run, struct bench_check *out)
{
	struct flash_state *st = run->eng_state;
	uint32_t nsku = bench_skus(run->wl), s;
	uint64_t *units, n, no, busy = 0, fate_waits = 0;
	struct bench_u64map users = { 0 };
	int rc;
	uint32_t i;

	memset(out, 0, sizeof(*out));
#ifdef BENCH_HAVE_SERVE
	if (st->daemon > 0) {
		struct wal_replay_report rep;
		if (stop_daemon(run, st) != 0)
			return -1;
		memset(&rep, 0, sizeof(rep));
		st->wal_stop = wal_replay(st->wal_dir, 0, wal_count_fn, st, 0, &rep);
	} else
#endif
		flash_poll(run);
	n = flash_orders_max(st->h);
	units = calloc(nsku + 1, sizeof(*units));
	if (!units || bench_map_init(&users, n + 1)) {
		free(units);
		snprintf(run->err, sizeof(run->err), "out of memory");
		return -1;
	}
	for (no = 1; no <= n; no++) {
		struct flash_order_info oi;
		if ((rc = flash_order_get(st->h, no, &oi)) != FLASH_OK) {
			snprintf(run->err, sizeof(run->err), "flash_order_get %llu: %s",
			         (unsigned long long)no, flash_strerror(rc));
			goto fail;
		}
		if (oi.state == FLASH_ORDER_NONE)
			continue;
		if (oi.sku_id < 1 || oi.sku_id > nsku) {
			snprintf(run->err, sizeof(run->err), "order %llu: sku %u out of range",
			         (unsigned long long)no, oi.sku_id);
			goto fail;
		}
		out->orders++;
		if (oi.state == FLASH_ORDER_ACTIVE)
			units[oi.sku_id] += oi.qty;
		(*bench_map_slot(&users, oi.user_id))++;
	}
	for (s = 1; s <= nsku; s++) {
		struct flash_sku_info si;
		uint64_t loaded = bench_sku_units(&run->cfg, run->wl, run->total_units, s);
		int64_t d;
		if ((rc = flash_sku_get(st->h, BENCH_ACTIVITY, s, &si)) != FLASH_OK) {
			snprintf(run->err, sizeof(run->err), "flash_sku_get %u: %s", s, flash_strerror(rc));
			goto fail;
		}
		out->loaded += loaded;
		out->sold += units[s];
		if (units[s] > loaded)
			out->oversold += (int64_t)(units[s] - loaded);
		d = (int64_t)loaded - (int64_t)units[s] - (int64_t)si.available;
		out->mismatch += d < 0 ? -d : d;
	}
	for (i = 0; i < users.cap; i++)
		if (users.key[i] && users.val[i] > 1)
			out->duplicates++;
	for (i = 0; i < run->sh->sh_nworkers; i++) {
		busy += run->sh->sh_w[i].ws_busy;
		fate_waits += run->sh->sh_w[i].ws_fate_waits;
	}
#ifdef BENCH_HAVE_SERVE
	if (st->ctl) {
		snprintf(out->note, sizeof(out->note),
		         "consumer: the serve loop, WAL on disk: %llu order records in the WAL (order table: %llu), "
		         "%llu group commits for %llu records (%.1f per commit); ring-full retries %llu; "
		         "sync waits past the 5 s bound %llu",
		         (unsigned long long)st->wal_orders, (unsigned long long)out->orders,
		         (unsigned long long)st->ctl->stats.commits,
		         (unsigned long long)st->ctl->stats.records,
		         st->ctl->stats.commits ? (double)st->ctl->stats.records / (double)st->ctl->stats.commits : 0.0,
		         (unsigned long long)busy, (unsigned long long)fate_waits);
		if (st->wal_stop != 0 || st->wal_orders != out->orders)
			out->mismatch += 1;   /* the WAL and the order table disagree */
	} else
#endif
	{
		snprintf(out->note, sizeof(out->note),
		         "consumer: the bench's own drain (no WAL): %llu orders, %llu cancels drained "
		         "(%llu units net, table says %llu); ring-full retries %llu",
		         (unsigned long long)st->drained[FLASH_REC_ORDER],
		         (unsigned long long)st->drained[FLASH_REC_CANCEL],
		         (unsigned long long)st->drained_units, (unsigned long long)out->sold,
		         (unsigned long long)busy);
		if (st->drained[FLASH_REC_ORDER] != out->orders || st->drained_units != out->sold)
			out->mismatch += 1;   /* the records and the order table disagree */
	}
	free(units);
	bench_map_free(&users);
	return 0;
fail:
	free(units);
	bench_map_free(&users);
	return -1;
}

static void flash_teardown(struct bench_run *run)
{
	struct flash_state *st = run->eng_state;

	if (!st)
		return;
#ifdef BENCH_HAVE_SERVE
	if (st->daemon > 0)
		stop_daemon(run, st);
	if (st->ctl)
		munmap(st->ctl, sizeof(*st->ctl));
#endif
	if (st->wal_dir[0])
		bench_rmtree(st->wal_dir);
	if (st->h)
		flash_close(st->h);
	if (st->created)
		flash_seg_destroy(st->name);
	free(st->slot_seq);
	free(st->slot_done);
	free(st);
	run->eng_state = NULL;
}

#ifdef BENCH_HAVE_SERVE
#define FLASH_DURS ((1u << BENCH_DUR_ASYNC) | (1u << BENCH_DUR_SYNC))
#else
#define FLASH_DURS (1u << BENCH_DUR_ASYNC)
#endif

/* Order by order (variant 0), or through flash_order_many --batch at a
 * time (variant 1): the same engine otherwise. */
#define FLASH_ENGINE(nm, var) {                                              \
	.name = (nm), .variant = (var), .shape = flash_shape, .setup = flash_setup, \
	.thread = flash_thread, .poll = flash_poll, .verify = flash_verify,         \
	.teardown = flash_teardown, .durs = FLASH_DURS,                             \
}

const struct bench_engine bench_eng_flash = FLASH_ENGINE("flashstock", 0);
const struct bench_engine bench_eng_flash_batch = FLASH_ENGINE("flashstock-batch", 1);
