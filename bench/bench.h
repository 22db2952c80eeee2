/*
 * bench.h -- what the parts of the bench share: the configuration of a run,
 * the shared-memory block the worker processes report into, the engine
 * table, the workload generator and the result of a run.
 *
 * Divisions:
 *   1. Configuration and workloads
 *   2. Shared block (one MAP_SHARED anonymous mapping made before fork)
 *   3. Workers: the per-thread view, the closed/open loop helpers
 *   4. Engines: flashstock, redis-lua(-pipelined), mysql-cas/for-update, cas-limit
 *   5. Results and report
 *
 * Process model: the parent sets the engine up (starts its server, loads the
 * stock), maps the shared block, forks P worker processes of T threads each,
 * drains and prints progress while they run, waits for them, merges their
 * histograms, asks the engine to count what it sold from its own records
 * (oversold, duplicate buyers), tears the engine down and prints a row.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hist.h"

/* ------------------------------------------------------------------------
 * 1. Configuration and workloads
 * ------------------------------------------------------------------------ */

enum bench_workload {
	BENCH_WL_HOT = 0,    /* one sku, every request from a new user */
	BENCH_WL_ZIPF,       /* BENCH_ZIPF_SKUS skus, Zipf(s) demand, new users */
	BENCH_WL_DEDUP,      /* users drawn from a small pool: most already bought */
	BENCH_WL_MIXED,      /* orders / stock queries / cancels, 70 / 25 / 5 */
	BENCH_WL_COUNT
};

enum bench_dur {
	BENCH_DUR_NONE = 0,  /* nothing reaches a disk (Redis without AOF, cas-limit) */
	BENCH_DUR_ASYNC,     /* acknowledged before the disk write; bounded loss window */
	BENCH_DUR_SYNC       /* acknowledged after fsync/fdatasync */
};

#define BENCH_ZIPF_SKUS  10000u
#define BENCH_ACTIVITY   1u
#define BENCH_MAX_WORKERS 256u

enum bench_kind {
	BENCH_OP_ORDER = 0,
	BENCH_OP_QUERY = 1,
	BENCH_OP_CANCEL = 2
};

/* Outcome of one operation, engine-neutral (mirrors the FLASH_E* names). */
enum bench_outcome {
	BENCH_RC_OK = 0,
	BENCH_RC_SOLD_OUT,
	BENCH_RC_LIMIT,
	BENCH_RC_BAD_TOKEN,
	BENCH_RC_NOT_FOUND,     /* cancel of an unknown order */
	BENCH_RC_CANCELLED,     /* cancel of a cancelled order */
	BENCH_RC_ERROR,         /* anything else: the run is reported failed */
	BENCH_RC_COUNT
};

struct bench_cfg {
	uint32_t procs;            /* worker processes */
	uint32_t threads;          /* threads per process (engines may override) */
	uint64_t ops;              /* measured operations over all threads (a cap with
	                              --duration); per thread inside a run */
	uint64_t warmup;           /* unmeasured operations before them, likewise */
	double   duration_s;       /* stop measuring after this long (0: after ops) */
	double   timeout_s;        /* a row still running after this long is aborted */
	double   rate;             /* open loop: total arrivals per second (0: closed loop) */
	uint64_t stock;            /* units loaded over all skus (0: 9/10 of order requests) */
	uint32_t redis_conns;      /* unpipelined redis: connections over all processes */
	uint32_t redis_depth;      /* pipelined redis: requests in flight per connection */
	uint32_t mysql_conns;      /* mysql: connections (one thread each) over all processes */
	uint32_t shards;           /* flashstock: stock shards of each sku */
	uint32_t sync_threads;     /* flashstock sync rows: threads per process (group
	                              commit needs many buyers in flight) */
	uint32_t batch;            /* flashstock-batch: orders per flash_order_many call */
	double   zipf_s;           /* Zipf exponent of the zipf workload */
	uint64_t seed;             /* request generator seed */
	int      break_baseline;   /* test only: baselines drop the stock check */
	int      flash_no_tokens;  /* profiling: flashstock orders without tokens */
	int      flash_no_reqids;  /* profiling: flashstock orders without request ids */
	int      flash_no_wal;     /* profiling: no WAL daemon, the bench drains (durability none) */
	int      progress;         /* progress line on stderr */
	const char *redis_server;  /* redis-server binary */
	const char *mariadb_script;/* tests/fixtures/mariadb.sh */
};

/* One pre-generated request.  Tokens are issued before the timed part. */
struct bench_req {
	uint64_t user;    /* buyer (nonzero) */
	uint64_t token;   /* one-time token, filled by the engine's prepare step */
	uint32_t sku;     /* 1-based sku id */
	uint32_t kind;    /* enum bench_kind */
};

const char *bench_workload_name(int wl);
int bench_workload_parse(const char *s);
const char *bench_dur_name(int d);
const char *bench_outcome_name(int rc);

/* Skus of a workload, and units loaded into sku @p sku (1-based). */
uint32_t bench_skus(int wl);
uint64_t bench_sku_units(const struct bench_cfg *c, int wl, uint64_t total_units, uint32_t sku);

/* ------------------------------------------------------------------------
 * 2. Shared block
 * ------------------------------------------------------------------------ */

/* One worker thread's report.  Written only by that thread (plain stores,
 * progress excepted), read by the parent after waitpid(). */
struct bench_wstat {
	struct bench_hist ws_hist;            /* measured latencies, ns */
	uint64_t ws_count[BENCH_RC_COUNT];    /* measured ops by outcome */
	uint64_t ws_kind[3];                  /* measured ops by kind */
	uint64_t ws_acked;                    /* orders acknowledged OK (warm-up too) */
	uint64_t ws_cancel_ok;                /* cancels acknowledged OK (warm-up too) */
	uint64_t ws_t_start;                  /* CLOCK_MONOTONIC ns: first measured op begins */
	uint64_t ws_t_end;                    /* last measured op ends */
	uint64_t ws_measured;                 /* measured ops */
	uint64_t ws_busy;                     /* retries on a full ring / would-block */
	uint64_t ws_fate_waits;               /* sync: waits again after FLASH_EFATE_UNKNOWN */
	uint64_t ws_progress;                 /* ops done; relaxed atomic stores, read live */
	int32_t  ws_failed;                   /* nonzero: the thread failed (ws_err says why) */
	char     ws_err[160];
} __attribute__((aligned(64)));

struct bench_shared {
	uint32_t sh_ready;                    /* threads prepared (atomic add) */
	uint32_t sh_go;                       /* set by the parent: start */
	uint32_t sh_abort;                    /* set by the parent: stop now */
	uint32_t sh_nworkers;
	uint64_t sh_go_ns;                    /* CLOCK_MONOTONIC when go was set */
	/* cas-limit: the one hot cache line, alone on its line */
	int64_t  sh_hot __attribute__((aligned(64)));
	char     sh_pad[56];
	struct bench_wstat sh_w[];            /* one per worker thread */
} __attribute__((aligned(64)));

/* ------------------------------------------------------------------------
 * 3. Workers
 * ------------------------------------------------------------------------ */

struct bench_run;

struct bench_worker {
	struct bench_run  *run;
	struct bench_wstat *st;        /* this thread's report in the shared block */
	uint32_t proc;                 /* 0..procs-1 */
	uint32_t thread;               /* 0..threads-1 */
	uint32_t gtid;                 /* global thread index */
	struct bench_req *req;         /* warmup + ops requests */
	uint64_t nreq;
	/* own successful orders, most recent last: cancels take from here */
	uint64_t *own_no;
	uint32_t *own_sku;
	uint64_t own_n, own_cap;
	int at_barrier;                /* reached bench_barrier() */
	void *eng;                     /* engine's per-thread state */
};

/* CLOCK_MONOTONIC in ns (vDSO: no system call). */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_clock_ns(void);

/** Engines call this once prepared (tokens issued, connections open);
 *  it returns when every worker is ready and the parent says go.
 *  @return 0, or -1 if the parent aborted. */
int bench_barrier(struct bench_worker *w);

/** Remember a successful order for later cancels. */
void bench_own_push(struct bench_worker *w, uint64_t order_no, uint32_t sku);
/** Take the most recent own order; @return 0 if none. */
int bench_own_pop(struct bench_worker *w, uint64_t *order_no, uint32_t *sku);

/* A synchronous operation: returns an enum bench_outcome; an order that
 * returns BENCH_RC_OK sold one unit. */
typedef int (*bench_op_fn)(struct bench_worker *w, struct bench_req *r);

/**
 * The generic loop for engines with one request in flight per thread:
 * warm-up, then measured ops; closed loop, or open loop at the thread's
 * share of --rate with latency measured from each request's intended start
 * (so a stall is charged to every request it delayed: no coordinated
 * omission).  Records every op (or one in @p sample) in the histogram.
 */
int bench_loop(struct bench_worker *w, bench_op_fn op, uint32_t sample);

/* A batch of @p n order requests in one call: each outcome into out[i]
 * (an enum bench_outcome).  @return 0, or -1 when the thread failed. */
typedef int (*bench_many_fn)(struct bench_worker *w, struct bench_req *r, uint32_t n, int *out);

/** The closed loop with a batch call: runs of up to @p k consecutive orders
 *  go to @p many, other ops to @p op; each order of a batch is charged the
 *  batch's time. */
int bench_loop_many(struct bench_worker *w, bench_op_fn op, bench_many_fn many, uint32_t k);

/** Record a finished measured op (engines with their own loops). */
void bench_record(struct bench_worker *w, int outcome, int kind, uint64_t lat_ns);

/** Mark the thread failed with a message (first one kept). */
void bench_fail(struct bench_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------------
 * 4. Engines
 * ------------------------------------------------------------------------ */

/* What an engine counts from its own records after a run. */
struct bench_check {
	uint64_t loaded;        /* units loaded over all skus */
	uint64_t sold;          /* units held by active orders, from the engine's records */
	uint64_t orders;        /* order records found */
	int64_t  oversold;      /* sum over skus of max(0, sold - loaded) */
	int64_t  duplicates;    /* users holding more orders than the limit; -1: no users */
	int64_t  mismatch;      /* sum over skus of |loaded - sold - available| */
	int64_t  lost;          /* acknowledged orders missing from the records */
	char     note[320];
};

struct bench_engine {
	const char *name;
	int         variant;     /* engine-specific (pipelined, for-update) */
	/* parent, first: may change cfg.procs/threads and set run->conc (may be NULL) */
	void (*shape)(struct bench_run *run);
	/* parent, before fork: start the server, load stock. 0 or -1 (err filled) */
	int  (*setup)(struct bench_run *run);
	/* worker thread: connect, prepare (issue tokens), bench_barrier(), run. */
	int  (*thread)(struct bench_worker *w);
	/* parent, while workers run; called often (may be NULL) */
	void (*poll)(struct bench_run *run);
	/* parent, after workers: count from the engine's records */
	int  (*verify)(struct bench_run *run, struct bench_check *out);
	/* parent: stop servers, remove files; safe after a failed setup */
	void (*teardown)(struct bench_run *run);
	/* which durabilities the engine can run (bit 1 << enum bench_dur) */
	unsigned    durs;
};

extern const struct bench_engine bench_eng_cas;
extern const struct bench_engine bench_eng_flash;
extern const struct bench_engine bench_eng_flash_batch;
extern const struct bench_engine bench_eng_redis;
extern const struct bench_engine bench_eng_redis_pipe;
extern const struct bench_engine bench_eng_mysql_cas;
extern const struct bench_engine bench_eng_mysql_fu;

struct bench_run {
	const struct bench_engine *eng;
	struct bench_cfg cfg;          /* copy; engines may set procs/threads */
	int      wl;                   /* enum bench_workload */
	int      dur;                  /* enum bench_dur */
	uint64_t total_units;          /* stock over all skus */
	uint64_t order_reqs;           /* order requests over all workers, warm-up included */
	struct bench_shared *sh;
	size_t   sh_bytes;
	void    *eng_state;            /* engine's parent-side state */
	char     conc[48];             /* concurrency shown in the table, e.g. "2x25 conns" */
	char     err[256];             /* why setup/verify failed */
	char     note[256];            /* said under the table */
};

/* ------------------------------------------------------------------------
 * 5. Results
 * ------------------------------------------------------------------------ */

struct bench_result {
	char     engine[32];
	char     workload[16];
	char     durability[8];
	char     conc[48];
	uint32_t procs, threads;
	double   ops_per_sec;
	uint64_t measured;
	uint64_t count[BENCH_RC_COUNT];
	uint64_t p50, p90, p99, p999, max;
	double   mean;
	struct bench_check chk;
	int      failed;
	char     err[400];
	char     note[256];
	struct bench_hist *hist;       /* merged, owned */
};

/** Run one row.  @return 0 (res filled, maybe failed) */
uint64_t bench_order_reqs(const struct bench_cfg *c, int wl);
uint64_t bench_default_units(const struct bench_run *run);

int bench_run_one(const struct bench_engine *e, const struct bench_cfg *cfg,
                  int wl, int dur, struct bench_result *res);

/* Latency in µs, ms or s ("0.86 µs", "8.10 ms"); rate in k or M. */
const char *bench_fmt_latency(uint64_t ns, char *buf, size_t cap);
const char *bench_fmt_rate(double r, char *buf, size_t cap);
void bench_report_table(FILE *f, struct bench_result *rows, size_t n);
void bench_report_json(FILE *f, const struct bench_result *rows, size_t n);
int  bench_report_curves(const char *dir, const struct bench_result *rows, size_t n);

int cmd_bench(int argc, char **argv);
/* `flashstock bench --faults` (faults.c): the fault round; cmd_bench()
 * hands a command line holding --faults to it. */
int cmd_bench_faults(int argc, char **argv);

/* Set by SIGINT/SIGTERM in the bench's parent: the running row is aborted
 * and torn down (servers stopped, segment removed), no further row starts. */
extern volatile sig_atomic_t bench_interrupted;

/* Stop the MariaDB the mysql engines started (if any); cmd_bench calls it. */
void bench_mysql_shutdown(void);

/* small helpers for engines */
int bench_mkdtemp(char *out, size_t cap);
void bench_rmtree(const char *dir);
/** A process-local u64 -> u32 counter map (open addressing). */
struct bench_u64map {
	uint64_t *key;
	uint32_t *val;
	uint64_t  cap, n;
};
int  bench_map_init(struct bench_u64map *m, uint64_t expect);
uint32_t *bench_map_slot(struct bench_u64map *m, uint64_t key);  /* key != 0 */
void bench_map_free(struct bench_u64map *m);

#endif /* BENCH_H */
