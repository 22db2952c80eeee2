/*
 * faults.c -- `flashstock bench --faults`: the bench's fault round.  One
 * short sale per fault, each in three phases of the same schedule:
 *
 *   clean   [0, W)        nothing wrong: the baseline of this very sale
 *   fault   [W, 2W)       the fault is on (a restart happens at 1.5 W)
 *   after   [2W, 2.5W)    everything is back; the stock sells out here
 *
 * then the sale is stopped and its invariants are checked from the engine's
 * own records.  The buyers run open loop at a fixed total rate (--rate):
 * each thread sends its requests at their intended times, latency runs from
 * the intended start, so a stall is charged to every request it delayed.
 *
 * The fault table (fault_table[]) is the one list of faults: a name, the
 * engine it hits, what it does at the window's start, half-way and end, and
 * -- for a fault this build cannot inject -- why it is not run.
 *
 * flashstock side: a private segment, the real `flashstock serve` binary as
 * its daemon (WAL on disk, the MariaDB applier on a private MariaDB from
 * tests/fixtures/mariadb.sh, a database per sale), sync or async durability;
 * for the broker fault also a private RabbitMQ (tests/fixtures/rabbitmq.sh)
 * and the real `flashstock feed --to amqp://` sink, whose confirmed LSN must
 * reach the WAL's end once the broker is back.
 * Afterwards: the daemon is stopped cleanly, MariaDB is caught up, the
 * reconciler compares segment, WAL and MariaDB order by order, and the order
 * table is counted (oversold, users over the limit, every acknowledged order
 * present).  Redis + Lua side: redis-server with appendonly yes +
 * appendfsync always, the seckill.lua chain; afterwards its order list is
 * counted the same way, and acknowledged orders missing after a restart are
 * the loss.
 *
 * Divisions:
 *   1. Options, fault table, shared block
 *   2. Buyers (worker processes and threads, open loop)
 *   3. flashstock: segment, daemon, faults, checks
 *   4. Redis + Lua: server, faults, checks
 *   5. One sale, the table, the plot data, cmd_bench_faults()
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flashstock.h"
#include "fixture_run.h"
#include "mysql_apply.h"
#include "reconcile.h"
#include "reconcile_sql.h"
#include "wal.h"
#ifdef BENCH_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#include "lua_scripts.h"
#endif

#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "."
#endif

/* ------------------------------------------------------------------------
 * 1. Options, fault table, shared block
 * ------------------------------------------------------------------------ */

#define FAULT_NPHASE      3                   /* clean, fault, after */
#define FAULT_BUCKET_NS   100000000ull        /* timeline: 100 ms buckets */
#define FAULT_MAX_BUCKETS 1500u               /* 150 s after go */
#define FAULT_SKU         1u
#define FAULT_TOKEN_TTL_MS 600000u

enum { FAULT_ENG_FLASH = 0, FAULT_ENG_REDIS = 1 };
static const char *const fault_eng_names[] = { "flashstock", "redis-lua" };

struct fault_opts {
	double      fo_window_s;       /* W: the clean and the fault phase each */
	double      fo_rate;           /* arrivals per second over all buyers */
	uint32_t    fo_procs;          /* buyer processes */
	uint32_t    fo_threads[3];     /* flashstock threads per process, by enum bench_dur */
	uint32_t    fo_redis_conns;    /* redis: connections (a thread each) over all processes */
	uint32_t    fo_wal_delay_us;   /* wal-slow: sleep before each WAL pwrite and fdatasync */
	int         fo_durs[2];        /* flashstock durabilities to run */
	int         fo_ndur;
	int         fo_engines[2];     /* 1: run this engine's faults */
	char       *fo_only;           /* --fault LIST, or NULL: all */
	char        fo_flashstock[PATH_MAX];   /* the binary whose `serve` is the daemon */
	char        fo_slowio[PATH_MAX];       /* libflash_slowio.so, "" if not found */
	const char *fo_redis_server;
	const char *fo_mariadb_script;
	const char *fo_rabbitmq_script;  /* tests/fixtures/rabbitmq.sh (broker-stop) */
	const char *fo_out;            /* --out DIR: table, JSON, timeline */
	int         fo_json;
	int         fo_progress;
};

struct fault_sale;

/* One fault.  begin runs at the start of the fault window, mid half-way
 * through (restarts), end at its end; each returns 0 or -1 with s->err set.
 * end is called whenever begin was, also when the sale fails. */
struct fault_def {
	const char *fd_name;
	int         fd_engine;                      /* FAULT_ENG_* */
	const char *fd_what;                        /* one line for the table */
	int (*fd_begin)(struct fault_sale *s);
	int (*fd_mid)(struct fault_sale *s);        /* NULL: nothing half-way */
	int (*fd_end)(struct fault_sale *s);
	const char *fd_missing;                     /* non-NULL: not injectable here: why */
};

/* One buyer thread's report, in the shared block.  Written by that thread
 * only (plain stores), read by the parent after waitpid(). */
struct fault_wstat {
	struct bench_hist fw_hist[FAULT_NPHASE];    /* latency from intended start, by its phase */
	uint64_t fw_count[BENCH_RC_COUNT];          /* answers by outcome */
	uint64_t fw_acked;                          /* orders acknowledged placed */
	uint64_t fw_fate_unknown;                   /* of which FLASH_EFATE_UNKNOWN (sync past its bound) */
	uint64_t fw_unanswered;                     /* sent, connection lost before the answer */
	uint64_t fw_retries;                        /* ring full, LOADING, NOSCRIPT, reconnects */
	uint64_t fw_done;                           /* requests finished */
	uint32_t fw_bucket[FAULT_MAX_BUCKETS];      /* answers completed per 100 ms after go */
	int32_t  fw_failed;
	char     fw_err[160];
} __attribute__((aligned(64)));

/* Memory orders: fsh_ready is a seq_cst add (the parent reads it, then each
 * thread's fw_failed); fsh_go is stored with release after fsh_go_ns and
 * loaded with acquire; fsh_abort is a bare request to stop, ordered with
 * nothing (relaxed loads; the parent's release stores are more than needed).
 * Every figure is read by the parent only after waitpid(), which orders the
 * buyers' plain stores before its loads. */
struct fault_shared {
	uint32_t fsh_ready;                         /* threads prepared (atomic add) */
	uint32_t fsh_go;                            /* set by the parent */
	uint32_t fsh_abort;                         /* set by the parent: stop now */
	uint32_t fsh_nworkers;
	uint64_t fsh_go_ns;                         /* CLOCK_MONOTONIC of request 0 */
	struct fault_wstat fsh_w[];
} __attribute__((aligned(64)));

/* One sale: its configuration, the engine's state, the figures. */
struct fault_sale {
	const struct fault_def *s_f;
	const struct fault_opts *s_o;
	int       s_eng;                 /* FAULT_ENG_* */
	int       s_dur;                 /* enum bench_dur */
	uint32_t  s_procs, s_threads, s_nw;
	uint64_t  s_reqs;                /* requests per thread */
	uint64_t  s_interval_ns;         /* between two requests of one thread */
	uint64_t  s_window_ns;
	uint64_t  s_units;               /* stock loaded */
	struct fault_shared *s_sh;
	size_t    s_sh_bytes;
	uint8_t  *s_acked_bits;          /* per thread s_reqs bits: request acknowledged (shared) */
	size_t    s_bits_bytes;          /* per thread */
	char      s_dir[128];            /* mkdtemp: WAL, logs, AOF */
	char      s_err[400];
	/* flashstock */
	char      s_seg[64];
	char      s_wal[192];
	char      s_url[600];
	char      s_ctl[192];            /* slowio control file */
	uint32_t *s_delay_us;            /* its mapping: [0] delay, [1] calls slowed */
	uint32_t  s_slowed;              /* WAL calls the shim slowed (wal-slow) */
	int       s_created;
	flash_t  *s_h;
	pid_t     s_daemon;
	uint32_t  s_restarts;
	/* broker-stop: a private RabbitMQ and `flashstock feed --to amqp://` */
	char      s_rabbit[200];         /* the broker's directory (rabbitmq.sh) */
	char      s_amqp_url[300];
	char      s_sink_status[200];    /* the sink's --status file */
	pid_t     s_sink;
	pid_t     s_broker_job;          /* `rabbitmq.sh resume` running in the background */
	uint64_t  s_wal_last_lsn;        /* of the last record frame in the WAL */
	uint64_t  s_sink_confirmed;      /* the sink's confirmed LSN at the end */
	uint64_t  s_sink_reconnects;
	int64_t   s_sink_behind;         /* WAL records the broker never confirmed; -1: no sink */
	/* redis */
	char      s_sock[192];
	pid_t     s_redis;
	char      s_sha[48];
	/* figures */
	int       s_failed;
	double    s_ops[FAULT_NPHASE];   /* answers completed per second in the phase */
	uint64_t  s_p50[FAULT_NPHASE], s_p99[FAULT_NPHASE], s_max[FAULT_NPHASE];
	uint64_t  s_acked, s_fate_unknown, s_unanswered, s_retries, s_answered;
	uint64_t  s_unacked_orders;      /* orders afterwards whose request was never acknowledged */
	uint64_t  s_count[BENCH_RC_COUNT];
	struct bench_check s_chk;
	uint64_t  s_orders_wal, s_orders_mysql;
	int64_t   s_reconcile;           /* differences found; -1: not compared */
	uint32_t *s_timeline;            /* answers per 100 ms bucket, all threads */
	uint32_t  s_nbuckets;
	uint32_t  s_gap_buckets;         /* longest run of 100 ms buckets without an answer */
};

/* The private MariaDB of the round (flashstock sales only). */
static struct {
	int  started;
	char dir[256];
	char sock[256];
} fault_db;

static int fault_err(struct fault_sale *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fault_err(struct fault_sale *s, const char *fmt, ...)
{
	va_list ap;

	if (s->s_err[0])
		return -1;   /* the first reason is the one that matters */
	va_start(ap, fmt);
	vsnprintf(s->s_err, sizeof s->s_err, fmt, ap);
	va_end(ap);
	return -1;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

static void wait_until_ns(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ------------------------------------------------------------------------
 * 2. Buyers
 * ------------------------------------------------------------------------ */

struct fault_worker {
	struct fault_sale  *fk_s;
	struct fault_wstat *fk_st;
	uint32_t            fk_gtid;     /* global thread index */
	uint64_t           *fk_token;    /* per request */
	void               *fk_eng;      /* flash_t * or redisContext * */
};

/* The buyer of request @p i of thread @p gtid: every request a new user. */
static uint64_t fault_user(uint32_t gtid, uint64_t i)
{
	return ((uint64_t)(gtid + 1) << 32) | (i + 1);
}

static void worker_fail(struct fault_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void worker_fail(struct fault_worker *w, const char *fmt, ...)
{
	va_list ap;

	if (w->fk_st->fw_failed)
		return;
	va_start(ap, fmt);
	vsnprintf(w->fk_st->fw_err, sizeof w->fk_st->fw_err, fmt, ap);
	va_end(ap);
	w->fk_st->fw_failed = 1;
}

static int worker_aborted(const struct fault_worker *w)
{
	/* relaxed: the flag is a request to stop, ordered with nothing else */
	return __atomic_load_n(&w->fk_s->s_sh->fsh_abort, __ATOMIC_RELAXED) != 0;
}

/* Count this thread ready, wait for go.  @return 0, -1 when aborted. */
static int worker_barrier(struct fault_worker *w)
{
	struct fault_shared *sh = w->fk_s->s_sh;

	/* seq_cst add: the parent reads the count and then every thread's
	 * fw_failed; the add publishes this thread's preparation */
	__atomic_add_fetch(&sh->fsh_ready, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		/* acquire: pairs with the parent's release store of go after fsh_go_ns */
		if (__atomic_load_n(&sh->fsh_go, __ATOMIC_ACQUIRE))
			return 0;
		if (__atomic_load_n(&sh->fsh_abort, __ATOMIC_ACQUIRE))
			return -1;
		sleep_ns(200000);
	}
}

/* One request: an enum bench_outcome; BENCH_RC_ERROR fails the thread,
 * FAULT_RC_UNANSWERED means the connection went away before the answer. */
#define FAULT_RC_UNANSWERED BENCH_RC_COUNT
typedef int (*fault_op_fn)(struct fault_worker *w, uint64_t i, int *fate_unknown);

/*
 * The open loop: request i is due at go + i * interval; latency runs from
 * that intended start, into the histogram of the phase it was due in; the
 * answer counts in the 100 ms bucket in which it came back.
 */
static void worker_loop(struct fault_worker *w, fault_op_fn op)
{
	struct fault_sale *s = w->fk_s;
	struct fault_wstat *st = w->fk_st;
	uint64_t go = s->s_sh->fsh_go_ns, i;
	/* threads start evenly spread over one interval, not all at once */
	uint64_t offset = s->s_interval_ns * w->fk_gtid / s->s_nw;

	for (i = 0; i < s->s_reqs; i++) {
		uint64_t due = go + offset + i * s->s_interval_ns, t1, b;
		uint64_t rel = due - go;
		int phase = rel < s->s_window_ns ? 0 : rel < 2 * s->s_window_ns ? 1 : 2;
		int fu = 0, rc;

		wait_until_ns(due);
		rc = op(w, i, &fu);
		if (rc == BENCH_RC_ERROR)
			return;
		t1 = bench_now_ns();
		st->fw_done++;
		if (rc == FAULT_RC_UNANSWERED) {
			st->fw_unanswered++;
		} else {
			bench_hist_record(&st->fw_hist[phase], t1 - due);
			st->fw_count[rc]++;
			b = (t1 - go) / FAULT_BUCKET_NS;
			st->fw_bucket[b < FAULT_MAX_BUCKETS ? b : FAULT_MAX_BUCKETS - 1]++;
			if (rc == BENCH_RC_OK) {
				st->fw_acked++;
				st->fw_fate_unknown += (uint64_t)fu;
				s->s_acked_bits[(size_t)w->fk_gtid * s->s_bits_bytes + i / 8] |= (uint8_t)(1u << (i % 8));
			}
		}
		if ((i & 63) == 0 && worker_aborted(w))
			return;
	}
}

static int flash_buyer_thread(struct fault_worker *w);
#ifdef BENCH_HAVE_HIREDIS
static int redis_buyer_thread(struct fault_worker *w);
#endif

static void *worker_main(void *arg)
{
	struct fault_worker *w = arg;
	int rc = -1;

	w->fk_token = calloc(w->fk_s->s_reqs, sizeof(uint64_t));
	if (w->fk_token == NULL) {
		worker_fail(w, "out of memory");
		__atomic_add_fetch(&w->fk_s->s_sh->fsh_ready, 1, __ATOMIC_SEQ_CST);
	} else if (w->fk_s->s_eng == FAULT_ENG_FLASH)
		rc = flash_buyer_thread(w);
#ifdef BENCH_HAVE_HIREDIS
	else
		rc = redis_buyer_thread(w);
#endif
	if (rc < 0 && !w->fk_st->fw_failed)
		worker_fail(w, "buyer thread failed");
	free(w->fk_token);
	return NULL;
}

/* A buyer process: T threads, the first on the process's own stack. */
static void worker_process(struct fault_sale *s, uint32_t proc, pid_t parent)
{
	struct fault_worker *ws = calloc(s->s_threads, sizeof(*ws));
	pthread_t *tid = calloc(s->s_threads, sizeof(*tid));
	uint32_t t;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);   /* a write to a killed server is an error, not a death */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_TIMERSLACK, 1UL);   /* open loop: wake up on time */
	if (getppid() != parent || !ws || !tid)
		_exit(3);
	for (t = 0; t < s->s_threads; t++) {
		ws[t].fk_s = s;
		ws[t].fk_gtid = proc * s->s_threads + t;
		ws[t].fk_st = &s->s_sh->fsh_w[ws[t].fk_gtid];
	}
	for (t = 1; t < s->s_threads; t++)
		if (pthread_create(&tid[t], NULL, worker_main, &ws[t]) != 0) {
			worker_fail(&ws[t], "pthread_create failed");
			__atomic_add_fetch(&s->s_sh->fsh_ready, 1, __ATOMIC_SEQ_CST);
			tid[t] = 0;
		}
	worker_main(&ws[0]);
	for (t = 1; t < s->s_threads; t++)
		if (tid[t])
			pthread_join(tid[t], NULL);
	_exit(0);
}

/* ------------------------------------------------------------------------
 * 3. flashstock
 * ------------------------------------------------------------------------ */

static int flash_op(struct fault_worker *w, uint64_t i, int *fate_unknown)
{
	flash_t *h = w->fk_eng;
	struct flash_order_req q;
	struct flash_order_res res;
	int rc;

	memset(&q, 0, sizeof q);
	q.activity_id = BENCH_ACTIVITY;
	q.sku_id = FAULT_SKU;
	q.user_id = fault_user(w->fk_gtid, i);
	q.qty = 1;
	q.token = w->fk_token[i];
	q.request_id = q.user_id;
	/* EBUSY (ring full: the daemon is down or slow) is returned before any
	 * step of the order is taken: the buyer retries */
	while ((rc = flash_order(h, &q, &res)) == FLASH_EBUSY) {
		w->fk_st->fw_retries++;
		if (worker_aborted(w)) {
			worker_fail(w, "ring full until the sale was aborted");
			return BENCH_RC_ERROR;
		}
		sleep_ns(20000);
	}
	switch (rc) {
	case FLASH_OK:             return BENCH_RC_OK;
	case FLASH_EFATE_UNKNOWN:  *fate_unknown = 1; return BENCH_RC_OK;   /* placed (demo.h) */
	case FLASH_ESOLD_OUT:      return BENCH_RC_SOLD_OUT;
	case FLASH_ELIMIT:         return BENCH_RC_LIMIT;
	case FLASH_EBAD_TOKEN:     return BENCH_RC_BAD_TOKEN;
	}
	worker_fail(w, "flash_order: %s", flash_strerror(rc));
	return BENCH_RC_ERROR;
}

static int flash_buyer_thread(struct fault_worker *w)
{
	struct fault_sale *s = w->fk_s;
	flash_t *h;
	uint64_t i;
	int rc;

	if ((rc = flash_open(s->s_seg, 0, &h)) != FLASH_OK) {
		worker_fail(w, "flash_open: %s", flash_strerror(rc));
		__atomic_add_fetch(&s->s_sh->fsh_ready, 1, __ATOMIC_SEQ_CST);
		return -1;
	}
	for (i = 0; i < s->s_reqs; i++)
		if ((rc = flash_token_issue(h, BENCH_ACTIVITY, FAULT_SKU, fault_user(w->fk_gtid, i),
		                            FAULT_TOKEN_TTL_MS, &w->fk_token[i])) != FLASH_OK) {
			worker_fail(w, "flash_token_issue: %s", flash_strerror(rc));
			break;
		}
	w->fk_eng = h;
	if (worker_barrier(w) == 0 && !w->fk_st->fw_failed)
		worker_loop(w, flash_op);
	flash_close(h);
	return w->fk_st->fw_failed ? -1 : 0;
}

/* Start `flashstock serve` on the sale's segment and WAL (again after a
 * kill): the real binary, its log appended to DIR/serve.log; with the
 * wal-slow fault, with the slow-disk shim preloaded. */
static int daemon_start(struct fault_sale *s)
{
	char log[200];
	pid_t pid;
	int fd;

	snprintf(log, sizeof log, "%s/serve.log", s->s_dir);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fault_err(s, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { (char *)s->s_o->fo_flashstock, "serve", "--name", s->s_seg, "--wal", s->s_wal,
		                 "--mysql", s->s_url, "--no-snapshot", "--reconcile-every", "0",
		                 "--log-level", "warn", NULL };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_IGN);   /* Ctrl-C is the bench's: it stops the daemon itself */
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		if (s->s_ctl[0]) {
			const char *asan = getenv("ASAN_OPTIONS");
			char opt[512];
			setenv("LD_PRELOAD", s->s_o->fo_slowio, 1);
			setenv("FLASH_SLOWIO_CTL", s->s_ctl, 1);
			setenv("FLASH_SLOWIO_MATCH", s->s_wal, 1);
			/* an ASan build's daemon: the shim comes before its runtime */
			snprintf(opt, sizeof opt, "%s%sverify_asan_link_order=0", asan ? asan : "", asan ? ":" : "");
			setenv("ASAN_OPTIONS", opt, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	s->s_daemon = pid;
	return 0;
}

/* The daemon exited when nobody asked it to?  Reaps it. */
static int daemon_died(struct fault_sale *s)
{
	int status;

	if (s->s_daemon <= 0)
		return 0;
	if (waitpid(s->s_daemon, &status, WNOHANG) != s->s_daemon)
		return 0;
	s->s_daemon = 0;
	fault_err(s, "flashstock serve exited by itself (%s %d; see its log)",
	          WIFEXITED(status) ? "status" : "signal",
	          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 1;
}

/* SIGTERM: the daemon drains, commits, hands MariaDB what it can, exits 0. */
static int daemon_stop(struct fault_sale *s)
{
	uint64_t end = bench_now_ns() + 60000000000ull;
	int status;

	if (s->s_daemon <= 0)
		return 0;
	kill(s->s_daemon, SIGTERM);
	for (;;) {
		pid_t p = waitpid(s->s_daemon, &status, WNOHANG);
		if (p == s->s_daemon)
			break;
		if (bench_now_ns() > end) {
			kill(s->s_daemon, SIGKILL);
			waitpid(s->s_daemon, &status, 0);
			s->s_daemon = 0;
			return fault_err(s, "flashstock serve did not stop within 60 s");
		}
		sleep_ns(10000000);
	}
	s->s_daemon = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fault_err(s, "flashstock serve stopped with %s %d (see its log)",
		                 WIFEXITED(status) ? "status" : "signal",
		                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}

static pid_t mariadb_pid(void)
{
	char path[300];
	FILE *f;
	long pid = 0;

	snprintf(path, sizeof path, "%s/mysqld.pid", fault_db.dir);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

static int f_mariadb_stop(struct fault_sale *s)
{
	pid_t p = mariadb_pid();

	if (p <= 0 || kill(p, SIGSTOP) != 0)
		return fault_err(s, "SIGSTOP MariaDB (pid %d): %s", (int)p, strerror(errno));
	return 0;
}

static int f_mariadb_cont(struct fault_sale *s)
{
	pid_t p = mariadb_pid();

	if (p <= 0 || kill(p, SIGCONT) != 0)
		return fault_err(s, "SIGCONT MariaDB (pid %d): %s", (int)p, strerror(errno));
	return 0;
}

static int f_daemon_kill(struct fault_sale *s)
{
	int status;

	if (s->s_daemon <= 0)
		return fault_err(s, "no daemon to kill");
	kill(s->s_daemon, SIGKILL);
	waitpid(s->s_daemon, &status, 0);
	s->s_daemon = 0;
	return 0;
}

static int f_daemon_restart(struct fault_sale *s)
{
	if (s->s_daemon > 0)
		return 0;
	s->s_restarts++;
	return daemon_start(s);
}

static int f_wal_slow(struct fault_sale *s)
{
	/* relaxed: the shim reads one self-contained word (slowio_preload.c) */
	__atomic_store_n(s->s_delay_us, s->s_o->fo_wal_delay_us, __ATOMIC_RELAXED);
	return 0;
}

static int f_wal_fast(struct fault_sale *s)
{
	__atomic_store_n(s->s_delay_us, 0u, __ATOMIC_RELAXED);
	return 0;
}

/* ---- broker-stop: a RabbitMQ broker under `flashstock feed --to amqp://` */

/* A number of the sink's --status JSON object.  @return 0, -1 if absent. */
static int sink_status_u64(const struct fault_sale *s, const char *key, uint64_t *out)
{
	char buf[2048], pat[64];
	const char *p;
	FILE *f = fopen(s->s_sink_status, "r");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	snprintf(pat, sizeof pat, "\"%s\":", key);
	if ((p = strstr(buf, pat)) == NULL)
		return -1;
	*out = strtoull(p + strlen(pat), NULL, 10);
	return 0;
}

/* The sink: the real `flashstock feed --to amqp://` process, publishing
 * every order with publisher confirms into a durable queue bound to its
 * exchange (RabbitMQ confirms and drops what no queue takes). */
static int sink_start(struct fault_sale *s)
{
	char log[200];
	pid_t pid;
	int fd;

	snprintf(log, sizeof log, "%s/sink.log", s->s_dir);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fault_err(s, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { (char *)s->s_o->fo_flashstock, "feed", "--to", s->s_amqp_url, "--wal", s->s_wal,
		                 "--consumer", "bench", "--from-start", "--exchange", "flash.bench",
		                 "--queue", "q.bench", "--confirm-timeout-ms", "1500", "--backoff-max-ms", "500",
		                 "--status", s->s_sink_status, "--progress-s", "0", NULL };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_IGN);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	s->s_sink = pid;
	return 0;
}

/* Start the sale's broker and the sink, and wait until the sink is connected. */
static int broker_setup(struct fault_sale *s)
{
	uint64_t give_up = bench_now_ns() + 60000000000ull, v = 0;
	char env[4096];
	int rc;

	snprintf(s->s_rabbit, sizeof s->s_rabbit, "%s/rabbit", s->s_dir);
	snprintf(s->s_sink_status, sizeof s->s_sink_status, "%s/sink.status", s->s_dir);
	rc = fixture_run(s->s_o->fo_rabbitmq_script, "start", s->s_rabbit, env, sizeof env);
	if (rc != 0 || fixture_export(env, "FLASH_AMQP_URL", s->s_amqp_url, sizeof s->s_amqp_url) != 0)
		return fault_err(s, "%s start failed (exit %d)", s->s_o->fo_rabbitmq_script, rc);
	if (sink_start(s) != 0)
		return -1;
	while (sink_status_u64(s, "connected", &v) != 0 || v != 1) {
		int status;
		if (waitpid(s->s_sink, &status, WNOHANG) == s->s_sink) {
			s->s_sink = 0;
			return fault_err(s, "flashstock feed --to exited at start (see sink.log)");
		}
		if (bench_now_ns() > give_up)
			return fault_err(s, "flashstock feed --to did not connect to the broker within 60 s");
		sleep_ns(50000000);
	}
	return 0;
}

static int f_broker_kill(struct fault_sale *s)
{
	int rc = fixture_run(s->s_o->fo_rabbitmq_script, "crash", s->s_rabbit, NULL, 0);

	return rc == 0 ? 0 : fault_err(s, "rabbitmq.sh crash failed (exit %d)", rc);
}

/* Start the broker again on its data, in the background: the schedule goes
 * on while the Erlang VM boots. */
static int f_broker_restart(struct fault_sale *s)
{
	pid_t pid;

	s->s_restarts++;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fault_err(s, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fixture_run(s->s_o->fo_rabbitmq_script, "resume", s->s_rabbit, NULL, 0) == 0 ? 0 : 1);
	}
	s->s_broker_job = pid;
	return 0;
}

/*
 * After the sale, before the daemon stops: the broker is back (its restart
 * finished), the sink has confirmed everything the WAL holds (its confirmed
 * LSN reached the WAL's end and stays there), then it is stopped with SIGTERM
 * (it commits its position).  A sink that never catches up is not an error
 * here: flash_check() counts what it left unconfirmed.
 */
static int broker_drain(struct fault_sale *s)
{
	uint64_t give_up = bench_now_ns() + 120000000000ull, conf = 0, end = 0, last = UINT64_MAX;
	int status, ret = 0;

	if (s->s_broker_job > 0) {
		while (waitpid(s->s_broker_job, &status, WNOHANG) != s->s_broker_job) {
			if (bench_now_ns() > give_up) {
				kill(s->s_broker_job, SIGKILL);
				waitpid(s->s_broker_job, &status, 0);
				status = 1;
				break;
			}
			sleep_ns(50000000);
		}
		s->s_broker_job = 0;
		if (status != 0)
			ret = fault_err(s, "rabbitmq.sh resume failed");
	}
	while (bench_now_ns() < give_up) {
		if (sink_status_u64(s, "confirmed_lsn", &conf) == 0 && sink_status_u64(s, "end_lsn", &end) == 0 &&
		    end > 0 && conf >= end) {
			if (last == end)
				break;   /* caught up twice in a row, 300 ms apart: the end stands */
			last = end;
		} else {
			last = UINT64_MAX;
		}
		sleep_ns(300000000);
	}
	sink_status_u64(s, "reconnects", &s->s_sink_reconnects);
	if (s->s_sink > 0) {
		kill(s->s_sink, SIGTERM);
		waitpid(s->s_sink, &status, 0);
		s->s_sink = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			ret = fault_err(s, "flashstock feed --to stopped with %s %d (see sink.log)",
			                WIFEXITED(status) ? "status" : "signal",
			                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	sink_status_u64(s, "confirmed_lsn", &s->s_sink_confirmed);
	return ret;
}

static void broker_teardown(struct fault_sale *s)
{
	int status;

	if (s->s_sink > 0) {
		kill(s->s_sink, SIGKILL);
		waitpid(s->s_sink, &status, 0);
		s->s_sink = 0;
	}
	if (s->s_broker_job > 0) {
		waitpid(s->s_broker_job, &status, 0);
		s->s_broker_job = 0;
	}
	if (s->s_amqp_url[0] && fixture_run(s->s_o->fo_rabbitmq_script, "stop", s->s_rabbit, NULL, 0) != 0)
		fprintf(stderr, "[faults] warning: rabbitmq.sh stop %s failed\n", s->s_rabbit);
	s->s_amqp_url[0] = '\0';
}

static void mysql_log_quiet(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	(void)msg;
}

/*
 * The clean phase must measure a daemon at work, not one starting: wait
 * until the applier has made its schema and applied the catalog (MariaDB
 * holds the sku), so WAL, applier and buyers are all in their steady state
 * when the first request is due.
 */
static int daemon_settled(struct fault_sale *s)
{
	uint64_t give_up = bench_now_ns() + 60000000000ull;
	struct mdb_opts mo;
	struct rsql_totals t;
	mdb_t *m = NULL;
	int rc = FLASH_EINVAL;

	memset(&mo, 0, sizeof mo);
	mo.url = s->s_url;
	mo.log = mysql_log_quiet;   /* failures until the schema exists are expected */
	while (bench_now_ns() < give_up) {
		if (daemon_died(s))
			return -1;
		if (m == NULL && mdb_open(&mo, &m) != FLASH_OK)
			m = NULL;
		if (m && (rc = rsql_totals_get(m, &t)) == FLASH_OK && t.skus >= 1)
			break;
		rc = FLASH_EBUSY;
		sleep_ns(50000000);
	}
	mdb_close(m);
	if (rc != FLASH_OK)
		return fault_err(s, "MariaDB did not get the catalog from the daemon within 60 s");
	return 0;
}

static int flash_setup(struct fault_sale *s, int sale_no)
{
	struct flash_seg_opts o;
	struct flash_activity a;
	struct timespec now;
	uint64_t cap = (uint64_t)s->s_nw * s->s_reqs, give_up;
	int rc;

	snprintf(s->s_seg, sizeof s->s_seg, "/flashfault-%d-%d", (int)getpid(), sale_no);
	snprintf(s->s_wal, sizeof s->s_wal, "%s/wal", s->s_dir);
	snprintf(s->s_url, sizeof s->s_url, "mysql://root@localhost/flash_fault_%d?socket=%s&create_db=1",
	         sale_no, fault_db.sock);
	if (s->s_f->fd_begin == f_wal_slow) {
		int fd;
		if (!s->s_o->fo_slowio[0])
			return fault_err(s, "libflash_slowio.so not found (give --slowio-preload PATH)");
		snprintf(s->s_ctl, sizeof s->s_ctl, "%s/slowio.ctl", s->s_dir);
		fd = open(s->s_ctl, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, 4096) != 0) {
			if (fd >= 0)
				close(fd);
			return fault_err(s, "%s: %s", s->s_ctl, strerror(errno));
		}
		s->s_delay_us = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (s->s_delay_us == MAP_FAILED) {
			s->s_delay_us = NULL;
			return fault_err(s, "mmap %s: %s", s->s_ctl, strerror(errno));
		}
	}
	flash_seg_opts_default(&o);
	o.max_activities = 4;
	o.max_skus = 8;
	o.max_shards = 16;
	cap += (uint64_t)(s->s_nw + 4) * 128 + 1024;   /* order numbers go to handles in chunks */
	o.max_users = (uint32_t)cap;
	o.max_tokens = (uint32_t)cap;
	o.max_orders = (uint32_t)cap;
	o.max_requests = (uint32_t)cap;
	o.max_locks = 16;
	o.max_procs = s->s_nw + 8;
	/* a ring must hold what its buyer makes while the daemon is down */
	o.ring_records = s->s_nw <= 8 ? 1u << 16 : 1u << 13;
	o.durability = s->s_dur == BENCH_DUR_SYNC ? FLASH_DURABILITY_SYNC : FLASH_DURABILITY_ASYNC;
	if ((rc = flash_seg_create(s->s_seg, &o)) != FLASH_OK)
		return fault_err(s, "flash_seg_create: %s", flash_strerror(rc));
	s->s_created = 1;
	if ((rc = flash_open(s->s_seg, 0, &s->s_h)) != FLASH_OK)
		return fault_err(s, "flash_open: %s", flash_strerror(rc));
	if (daemon_start(s) != 0)
		return -1;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(&a, 0, sizeof a);
	a.id = BENCH_ACTIVITY;
	a.limit_per_user = 1;
	a.max_qty = 1;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.flags = FLASH_ACT_TOKEN_REQUIRED;
	a.start_ns = (int64_t)now.tv_sec * 1000000000 - 3600ll * 1000000000;
	a.end_ns = (int64_t)now.tv_sec * 1000000000 + 86400ll * 1000000000;
	/* in sync durability the catalog waits for the daemon's first commit */
	give_up = bench_now_ns() + 30000000000ull;
	while ((rc = flash_activity_add(s->s_h, &a)) == FLASH_EBUSY && bench_now_ns() < give_up)
		sleep_ns(10000000);
	if (rc != FLASH_OK && rc != FLASH_EFATE_UNKNOWN)
		return fault_err(s, "flash_activity_add: %s", flash_strerror(rc));
	while ((rc = flash_sku_add(s->s_h, BENCH_ACTIVITY, FAULT_SKU, s->s_units, 1)) == FLASH_EBUSY &&
	       bench_now_ns() < give_up)
		sleep_ns(10000000);
	if (rc != FLASH_OK && rc != FLASH_EFATE_UNKNOWN)
		return fault_err(s, "flash_sku_add: %s", flash_strerror(rc));
	if (daemon_settled(s) != 0)
		return -1;
	return s->s_f->fd_begin == f_broker_kill ? broker_setup(s) : 0;
}

static int wal_count_fn(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct fault_sale *s = arg;
	const struct wal_rec *r = payload;

	if (type == WAL_T_RECORD && lsn > s->s_wal_last_lsn)
		s->s_wal_last_lsn = lsn;
	if (type == WAL_T_RECORD && len >= sizeof(*r) && r->wr_rec.type == FLASH_REC_ORDER)
		s->s_orders_wal++;
	return 0;
}

/* Was request (gtid, i) acknowledged?  From the buyers' shared bitmaps. */
static int acked_bit(const struct fault_sale *s, uint64_t user, uint8_t *seen)
{
	uint64_t gtid = (user >> 32) - 1, i = (user & 0xffffffffu) - 1;
	size_t at;

	if ((user >> 32) == 0 || gtid >= s->s_nw || (user & 0xffffffffu) == 0 || i >= s->s_reqs)
		return 0;
	at = (size_t)gtid * s->s_bits_bytes + i / 8;
	if (seen)
		seen[at] |= (uint8_t)(1u << (i % 8));
	return (s->s_acked_bits[at] >> (i % 8)) & 1;
}

/* Acknowledged requests of no order in @p seen: the lost ones.  And in
 * @p unacked, orders of requests never acknowledged (their answer was lost
 * with a killed server: at most the unanswered ones). */
static int64_t lost_acks(const struct fault_sale *s, const uint8_t *seen, uint64_t *unacked)
{
	size_t n = (size_t)s->s_nw * s->s_bits_bytes, k;
	int64_t lost = 0;

	*unacked = 0;
	for (k = 0; k < n; k++) {
		lost += __builtin_popcount((unsigned)(s->s_acked_bits[k] & (uint8_t)~seen[k]));
		*unacked += (uint64_t)__builtin_popcount((unsigned)(seen[k] & (uint8_t)~s->s_acked_bits[k]));
	}
	return lost;
}

/*
 * After the sale: stop the daemon cleanly, catch MariaDB up, reconcile
 * segment, WAL and MariaDB order by order, and count the order table:
 * oversold, users over their limit, counters, acknowledged orders missing.
 */
static int flash_check(struct fault_sale *s)
{
	struct bench_check *c = &s->s_chk;
	struct wal_replay_report rep;
	struct mdb_opts mo;
	struct apply_result tot;
	struct rsql_totals t;
	struct reconcile_report rr;
	struct flash_sku_info si;
	mdb_t *m = NULL;
	fold_t *f = NULL;
	uint8_t *seen = NULL;
	uint64_t n, no;
	int rc, ret = -1;

	s->s_reconcile = -1;
	if (s->s_sink > 0 && broker_drain(s) != 0)
		return -1;
	if (daemon_stop(s) != 0)
		return -1;
	memset(&rep, 0, sizeof rep);
	if ((rc = wal_replay(s->s_wal, 0, wal_count_fn, s, 0, &rep)) != FLASH_OK)
		return fault_err(s, "read the WAL back: %s", flash_strerror(rc));
	memset(&mo, 0, sizeof mo);
	mo.url = s->s_url;
	mo.log_level = PLOG_ERROR;
	if ((rc = mdb_open(&mo, &m)) != FLASH_OK)
		return fault_err(s, "connect to MariaDB: %s", flash_strerror(rc));
	memset(&tot, 0, sizeof tot);
	if ((rc = mdb_catch_up(m, s->s_wal, 0, 30000, &tot)) != FLASH_OK) {
		fault_err(s, "catch MariaDB up: %s", flash_strerror(rc));
		goto out;
	}
	if ((rc = rsql_totals_get(m, &t)) != FLASH_OK) {
		fault_err(s, "count MariaDB's orders: %s", flash_strerror(rc));
		goto out;
	}
	s->s_orders_mysql = t.orders;
	if ((rc = fold_new(&f)) != FLASH_OK || (rc = fold_wal(f, s->s_wal)) != FLASH_OK) {
		fault_err(s, "fold the WAL: %s", flash_strerror(rc));
		goto out;
	}
	memset(&rr, 0, sizeof rr);
	if ((rc = reconcile_compare(s->s_h, m, f, RECONCILE_ORDERS, &rr)) != FLASH_OK) {
		fault_err(s, "reconcile: %s", flash_strerror(rc));
		goto out;
	}
	s->s_reconcile = (int64_t)rr.found;
	reconcile_report_free(&rr);

	/* the order table, as the main bench counts it, plus every ack present */
	seen = calloc((size_t)s->s_nw * s->s_bits_bytes + 1, 1);
	if (seen == NULL) {
		fault_err(s, "out of memory");
		goto out;
	}
	memset(c, 0, sizeof *c);
	n = flash_orders_max(s->s_h);
	for (no = 1; no <= n; no++) {
		struct flash_order_info oi;
		if ((rc = flash_order_get(s->s_h, no, &oi)) != FLASH_OK) {
			fault_err(s, "flash_order_get %llu: %s", (unsigned long long)no, flash_strerror(rc));
			goto out;
		}
		if (oi.state == FLASH_ORDER_NONE)
			continue;
		c->orders++;
		if (oi.state == FLASH_ORDER_ACTIVE)
			c->sold += oi.qty;
		/* a user seen twice holds more orders than the limit of one */
		{
			uint64_t gtid = (oi.user_id >> 32) - 1, i = (oi.user_id & 0xffffffffu) - 1;
			if ((oi.user_id >> 32) && gtid < s->s_nw && i < s->s_reqs &&
			    (seen[(size_t)gtid * s->s_bits_bytes + i / 8] >> (i % 8)) & 1)
				c->duplicates++;
		}
		acked_bit(s, oi.user_id, seen);
	}
	if ((rc = flash_sku_get(s->s_h, BENCH_ACTIVITY, FAULT_SKU, &si)) != FLASH_OK) {
		fault_err(s, "flash_sku_get: %s", flash_strerror(rc));
		goto out;
	}
	c->loaded = s->s_units;
	if (c->sold > c->loaded)
		c->oversold = (int64_t)(c->sold - c->loaded);
	if (t.active_qty > c->loaded)   /* MariaDB's own sum, the last line of defence */
		c->oversold += (int64_t)(t.active_qty - c->loaded);
	c->mismatch = llabs((long long)c->loaded - (long long)c->sold - (long long)si.available);
	if (s->s_orders_wal != c->orders || s->s_orders_mysql != c->orders)
		c->mismatch += 1;
	c->lost = lost_acks(s, seen, &s->s_unacked_orders);
	if (s->s_amqp_url[0]) {
		/* every record of the WAL (so every acknowledged order) confirmed by the broker */
		s->s_sink_behind = s->s_wal_last_lsn > s->s_sink_confirmed ?
		                   (int64_t)(s->s_wal_last_lsn - s->s_sink_confirmed) : 0;
		snprintf(c->note, sizeof c->note, "broker restarts %u; orders: segment %llu, WAL %llu, MariaDB "
		         "%llu; the sink reconnected %llu times and the broker confirmed up to LSN %llu of %llu",
		         s->s_restarts, (unsigned long long)c->orders, (unsigned long long)s->s_orders_wal,
		         (unsigned long long)s->s_orders_mysql, (unsigned long long)s->s_sink_reconnects,
		         (unsigned long long)s->s_sink_confirmed, (unsigned long long)s->s_wal_last_lsn);
	} else {
		snprintf(c->note, sizeof c->note, "daemon restarts %u; orders: segment %llu, WAL %llu, MariaDB %llu",
		         s->s_restarts, (unsigned long long)c->orders, (unsigned long long)s->s_orders_wal,
		         (unsigned long long)s->s_orders_mysql);
	}
	ret = 0;
out:
	free(seen);
	fold_free(f);
	mdb_close(m);
	return ret;
}

static void flash_teardown(struct fault_sale *s)
{
	int status;

	broker_teardown(s);
	if (s->s_daemon > 0) {
		kill(s->s_daemon, SIGKILL);
		waitpid(s->s_daemon, &status, 0);
		s->s_daemon = 0;
	}
	if (s->s_h)
		flash_close(s->s_h);
	s->s_h = NULL;
	if (s->s_created)
		flash_seg_destroy(s->s_seg);
	s->s_created = 0;
	if (s->s_delay_us)
		munmap(s->s_delay_us, 4096);
	s->s_delay_us = NULL;
}

/* ------------------------------------------------------------------------
 * 4. Redis + Lua
 * ------------------------------------------------------------------------ */

#ifdef BENCH_HAVE_HIREDIS
/* redis-server with AOF always on the sale's directory; started again on
 * the same directory after a kill, it loads the AOF back. */
static int redis_start(struct fault_sale *s)
{
	char logf[200];
	pid_t pid;

	snprintf(s->s_sock, sizeof s->s_sock, "%s/redis.sock", s->s_dir);
	snprintf(logf, sizeof logf, "%s/redis.log", s->s_dir);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fault_err(s, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { (char *)s->s_o->fo_redis_server, "--port", "0", "--unixsocket", s->s_sock,
		                 "--unixsocketperm", "700", "--dir", s->s_dir, "--logfile", logf,
		                 "--daemonize", "no", "--save", "", "--maxclients", "1100",
		                 "--appendonly", "yes", "--appendfsync", "always", NULL };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_IGN);
		execvp(argv[0], argv);
		_exit(127);
	}
	s->s_redis = pid;
	return 0;
}

static redisContext *redis_connect(const char *sock, uint64_t timeout_ns)
{
	uint64_t end = bench_now_ns() + timeout_ns;
	redisContext *c;

	for (;;) {
		c = redisConnectUnix(sock);
		if (c && !c->err)
			return c;
		if (c)
			redisFree(c);
		if (bench_now_ns() > end)
			return NULL;
		sleep_ns(10000000);
	}
}

static int f_redis_kill(struct fault_sale *s)
{
	int status;

	if (s->s_redis <= 0)
		return fault_err(s, "no redis-server to kill");
	kill(s->s_redis, SIGKILL);
	waitpid(s->s_redis, &status, 0);
	s->s_redis = 0;
	return 0;
}

static int f_redis_restart(struct fault_sale *s)
{
	if (s->s_redis > 0)
		return 0;
	s->s_restarts++;
	return redis_start(s);
}

static int f_redis_stop(struct fault_sale *s)
{
	if (s->s_redis <= 0 || kill(s->s_redis, SIGSTOP) != 0)
		return fault_err(s, "SIGSTOP redis-server: %s", strerror(errno));
	return 0;
}

static int f_redis_cont(struct fault_sale *s)
{
	if (s->s_redis <= 0 || kill(s->s_redis, SIGCONT) != 0)
		return fault_err(s, "SIGCONT redis-server: %s", strerror(errno));
	return 0;
}

static int redis_setup(struct fault_sale *s)
{
	redisContext *c;
	redisReply *r;
	int rc = -1;

	(void)bench_lua_seckill_cancel;   /* the fault round places orders only */
	if (redis_start(s) != 0)
		return -1;
	c = redis_connect(s->s_sock, 10000000000ull);
	if (c == NULL)
		return fault_err(s, "redis-server (%s) did not answer on %s", s->s_o->fo_redis_server, s->s_sock);
	r = redisCommand(c, "SCRIPT LOAD %s", bench_lua_seckill);
	if (r == NULL || r->type != REDIS_REPLY_STRING) {
		fault_err(s, "SCRIPT LOAD: %s", r && r->str ? r->str : c->errstr);
		goto out;
	}
	snprintf(s->s_sha, sizeof s->s_sha, "%s", r->str);
	freeReplyObject(r);
	r = redisCommand(c, "SET stock:%u %llu", FAULT_SKU, (unsigned long long)s->s_units);
	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		fault_err(s, "SET stock: %s", r && r->str ? r->str : c->errstr);
		goto out;
	}
	rc = 0;
out:
	if (r)
		freeReplyObject(r);
	redisFree(c);
	return rc;
}

/* Reconnect after the server went away; counts the attempts as retries. */
static redisContext *redis_reconnect(struct fault_worker *w, redisContext *c)
{
	if (c)
		redisFree(c);
	for (;;) {
		c = redisConnectUnix(w->fk_s->s_sock);
		if (c && !c->err)
			return c;
		if (c)
			redisFree(c);
		w->fk_st->fw_retries++;
		if (worker_aborted(w))
			return NULL;
		sleep_ns(5000000);
	}
}

static int redis_op(struct fault_worker *w, uint64_t i, int *fate_unknown)
{
	struct fault_sale *s = w->fk_s;
	uint64_t user = fault_user(w->fk_gtid, i);
	redisContext *c = w->fk_eng;
	redisReply *r;

	(void)fate_unknown;
	for (;;) {
		if (c == NULL) {
			worker_fail(w, "no connection to redis-server");
			return BENCH_RC_ERROR;
		}
		r = redisCommand(c, "EVALSHA %s 4 tok:%llu buyers:%u stock:%u orders:%u %llu:%u %llu 1 %u",
		                 s->s_sha, (unsigned long long)w->fk_token[i], BENCH_ACTIVITY, FAULT_SKU,
		                 BENCH_ACTIVITY, (unsigned long long)user, FAULT_SKU,
		                 (unsigned long long)user, FAULT_SKU);
		if (r == NULL) {
			/* the server died with the request in flight: its fate is
			 * unknown (the AOF may or may not hold it); the next request
			 * goes to the restarted server */
			c = w->fk_eng = redis_reconnect(w, c);
			if (c == NULL) {
				worker_fail(w, "redis-server gone until the sale was aborted");
				return BENCH_RC_ERROR;
			}
			return FAULT_RC_UNANSWERED;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			int noscript = strncmp(r->str, "NOSCRIPT", 8) == 0;
			int loading = strncmp(r->str, "LOADING", 7) == 0;
			if (!noscript && !loading) {
				worker_fail(w, "redis: %s", r->str);
				freeReplyObject(r);
				return BENCH_RC_ERROR;
			}
			freeReplyObject(r);
			w->fk_st->fw_retries++;
			if (noscript) {   /* a restarted server has no script cache */
				r = redisCommand(c, "SCRIPT LOAD %s", bench_lua_seckill);
				if (r)
					freeReplyObject(r);
			} else {
				sleep_ns(5000000);   /* still loading its AOF: nothing ran */
			}
			continue;
		}
		break;
	}
	if (r->type != REDIS_REPLY_INTEGER) {
		worker_fail(w, "redis: unexpected reply type %d", r->type);
		freeReplyObject(r);
		return BENCH_RC_ERROR;
	}
	{
		long long v = r->integer;
		freeReplyObject(r);
		if (v > 0)
			return BENCH_RC_OK;
		switch (v) {
		case -1: return BENCH_RC_SOLD_OUT;
		case -2: return BENCH_RC_LIMIT;
		case -6: return BENCH_RC_BAD_TOKEN;
		}
		worker_fail(w, "redis: unexpected result %lld", v);
		return BENCH_RC_ERROR;
	}
}

static int redis_buyer_thread(struct fault_worker *w)
{
	struct fault_sale *s = w->fk_s;
	redisContext *c = redis_connect(s->s_sock, 10000000000ull);
	uint64_t i, got = 0;
	redisReply *r;

	if (c == NULL) {
		worker_fail(w, "connect %s failed", s->s_sock);
		__atomic_add_fetch(&s->s_sh->fsh_ready, 1, __ATOMIC_SEQ_CST);
		return -1;
	}
	/* the tokens, pipelined, before the timed part (as flashstock's) */
	for (i = 0; i < s->s_reqs; i++) {
		w->fk_token[i] = ((uint64_t)(w->fk_gtid + 1) << 40) | (i + 1);
		redisAppendCommand(c, "SET tok:%llu %llu:%u", (unsigned long long)w->fk_token[i],
		                   (unsigned long long)fault_user(w->fk_gtid, i), FAULT_SKU);
		if (i + 1 - got >= 1000 || i + 1 == s->s_reqs)
			for (; got <= i; got++) {
				if (redisGetReply(c, (void **)&r) != REDIS_OK) {
					worker_fail(w, "token SET: %s", c->errstr);
					i = s->s_reqs;
					break;
				}
				freeReplyObject(r);
			}
	}
	w->fk_eng = c;
	if (worker_barrier(w) == 0 && !w->fk_st->fw_failed)
		worker_loop(w, redis_op);
	if (w->fk_eng)
		redisFree(w->fk_eng);
	return w->fk_st->fw_failed ? -1 : 0;
}

/* The order list after the sale: oversold, users over the limit, the
 * stock counter, acknowledged orders missing (lost in a restart). */
static int redis_check(struct fault_sale *s)
{
	struct bench_check *c = &s->s_chk;
	redisContext *cx = redis_connect(s->s_sock, 30000000000ull);
	redisReply *r = NULL;
	uint8_t *seen = NULL;
	uint64_t len, i, j;
	int ret = -1;

	s->s_reconcile = -1;
	memset(c, 0, sizeof *c);
	if (cx == NULL)
		return fault_err(s, "check: cannot connect to redis-server");
	/* the server may still be loading its AOF after a restart */
	for (i = 0; i < 3000; i++) {
		r = redisCommand(cx, "LLEN orders:%u", BENCH_ACTIVITY);
		if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "LOADING", 7) != 0)
			break;
		freeReplyObject(r);
		r = NULL;
		sleep_ns(10000000);
	}
	if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
		fault_err(s, "LLEN: %s", r && r->str ? r->str : cx->errstr);
		goto out;
	}
	len = (uint64_t)r->integer;
	freeReplyObject(r);
	r = NULL;
	seen = calloc((size_t)s->s_nw * s->s_bits_bytes + 1, 1);
	if (seen == NULL) {
		fault_err(s, "out of memory");
		goto out;
	}
	for (i = 0; i < len; i += 10000) {
		r = redisCommand(cx, "LRANGE orders:%u %llu %llu", BENCH_ACTIVITY, (unsigned long long)i,
		                 (unsigned long long)(i + 9999));
		if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
			fault_err(s, "LRANGE: %s", r && r->str ? r->str : cx->errstr);
			goto out;
		}
		for (j = 0; j < r->elements; j++) {
			unsigned long long user, qty;
			unsigned sku;
			uint64_t gtid, k;
			if (sscanf(r->element[j]->str, "%llu:%u:%llu", &user, &sku, &qty) != 3) {
				fault_err(s, "bad order record '%s'", r->element[j]->str);
				goto out;
			}
			c->orders++;
			c->sold += qty;
			gtid = (user >> 32) - 1;
			k = (user & 0xffffffffu) - 1;
			if ((user >> 32) && gtid < s->s_nw && k < s->s_reqs &&
			    (seen[(size_t)gtid * s->s_bits_bytes + k / 8] >> (k % 8)) & 1)
				c->duplicates++;
			acked_bit(s, user, seen);
		}
		freeReplyObject(r);
		r = NULL;
	}
	r = redisCommand(cx, "GET stock:%u", FAULT_SKU);
	if (r == NULL || r->type != REDIS_REPLY_STRING) {
		fault_err(s, "GET stock: %s", r && r->str ? r->str : cx->errstr);
		goto out;
	}
	c->loaded = s->s_units;
	if (c->sold > c->loaded)
		c->oversold = (int64_t)(c->sold - c->loaded);
	c->mismatch = llabs((long long)c->loaded - (long long)c->sold - strtoll(r->str, NULL, 10));
	c->lost = lost_acks(s, seen, &s->s_unacked_orders);
	snprintf(c->note, sizeof c->note, "redis-server restarts %u; orders in the list %llu, of which %llu "
	         "of unanswered requests", s->s_restarts, (unsigned long long)c->orders,
	         (unsigned long long)s->s_unacked_orders);
	ret = 0;
out:
	if (r)
		freeReplyObject(r);
	redisFree(cx);
	free(seen);
	return ret;
}

static void redis_teardown(struct fault_sale *s)
{
	int status;

	if (s->s_redis > 0) {
		kill(s->s_redis, SIGCONT);
		kill(s->s_redis, SIGKILL);
		waitpid(s->s_redis, &status, 0);
		s->s_redis = 0;
	}
}
#endif /* BENCH_HAVE_HIREDIS */

/* The fault table: the one list.  A fault this build cannot inject keeps
 * its row, with the reason, so the table says what is missing. */
static const struct fault_def fault_table[] = {
	{ "mariadb-sigstop", FAULT_ENG_FLASH, "MariaDB halted (SIGSTOP) for the window, then SIGCONT",
	  f_mariadb_stop, NULL, f_mariadb_cont, NULL },
	{ "serve-sigkill", FAULT_ENG_FLASH, "flashstock serve killed (SIGKILL), restarted half-way",
	  f_daemon_kill, f_daemon_restart, NULL, NULL },
	{ "wal-slow", FAULT_ENG_FLASH, "WAL pwrite and fdatasync each delayed (LD_PRELOAD shim)",
	  f_wal_slow, NULL, f_wal_fast, NULL },
	{ "broker-stop", FAULT_ENG_FLASH, "RabbitMQ broker under `flashstock feed --to amqp://` killed "
	  "(kill -9), restarted half-way", f_broker_kill, f_broker_restart, NULL, NULL },
#ifdef BENCH_HAVE_HIREDIS
	{ "redis-sigkill", FAULT_ENG_REDIS, "redis-server killed (SIGKILL), restarted half-way on its AOF",
	  f_redis_kill, f_redis_restart, NULL, NULL },
	{ "redis-sigstop", FAULT_ENG_REDIS, "redis-server halted (SIGSTOP) for the window, then SIGCONT",
	  f_redis_stop, NULL, f_redis_cont, NULL },
#else
	{ "redis-sigkill", FAULT_ENG_REDIS, "redis-server killed (SIGKILL), restarted on its AOF",
	  NULL, NULL, NULL, "built without hiredis" },
	{ "redis-sigstop", FAULT_ENG_REDIS, "redis-server halted (SIGSTOP), then SIGCONT",
	  NULL, NULL, NULL, "built without hiredis" },
#endif
};
#define FAULT_NDEF (sizeof fault_table / sizeof fault_table[0])

/* ------------------------------------------------------------------------
 * 5. One sale, the table, the plot data
 * ------------------------------------------------------------------------ */

static void sale_collect(struct fault_sale *s)
{
	struct bench_hist *h = malloc(sizeof *h);
	uint64_t w = s->s_window_ns / FAULT_BUCKET_NS, b;
	uint64_t lo[FAULT_NPHASE] = { 0, w, 2 * w }, hi[FAULT_NPHASE] = { w, 2 * w, 2 * w + w / 2 };
	uint32_t i, k, p;

	s->s_nbuckets = FAULT_MAX_BUCKETS;
	s->s_timeline = calloc(FAULT_MAX_BUCKETS, sizeof(uint32_t));
	for (i = 0; i < s->s_nw; i++) {
		struct fault_wstat *st = &s->s_sh->fsh_w[i];
		for (k = 0; k < BENCH_RC_COUNT; k++)
			s->s_count[k] += st->fw_count[k];
		s->s_acked += st->fw_acked;
		s->s_fate_unknown += st->fw_fate_unknown;
		s->s_unanswered += st->fw_unanswered;
		s->s_retries += st->fw_retries;
		if (s->s_timeline)
			for (b = 0; b < FAULT_MAX_BUCKETS; b++)
				s->s_timeline[b] += st->fw_bucket[b];
	}
	for (k = 0; k < BENCH_RC_COUNT; k++)
		s->s_answered += s->s_count[k];
	/* the last bucket that holds an answer ends the timeline */
	while (s->s_timeline && s->s_nbuckets > 0 && s->s_timeline[s->s_nbuckets - 1] == 0)
		s->s_nbuckets--;
	/* the longest time buyers got no answer at all, from the first answer on */
	for (b = 0, k = 0; s->s_timeline && b < s->s_nbuckets; b++) {
		k = s->s_timeline[b] ? 0 : k + 1;
		if (k > s->s_gap_buckets)
			s->s_gap_buckets = k;
	}
	for (p = 0; p < FAULT_NPHASE; p++) {
		uint64_t sum = 0;
		for (b = lo[p]; b < hi[p] && s->s_timeline; b++)
			sum += s->s_timeline[b];
		s->s_ops[p] = (double)sum / ((double)(hi[p] - lo[p]) * (double)FAULT_BUCKET_NS / 1e9);
		if (h == NULL)
			continue;
		bench_hist_init(h);
		for (i = 0; i < s->s_nw; i++)
			bench_hist_merge(h, &s->s_sh->fsh_w[i].fw_hist[p]);
		s->s_p50[p] = bench_hist_percentile(h, 50.0);
		s->s_p99[p] = bench_hist_percentile(h, 99.0);
		s->s_max[p] = h->bh_max;
	}
	free(h);
}

/* Parent: wait for every buyer, running the fault on its schedule.
 * @return 0, -1 (s_err set) when a buyer failed or the schedule did. */
static int sale_supervise(struct fault_sale *s, pid_t *pids)
{
	struct fault_shared *sh = s->s_sh;
	const struct fault_def *f = s->s_f;
	uint64_t t_begin = bench_now_ns(), go = 0, deadline;
	uint32_t alive = s->s_procs, i;
	int stage = 0, bad = 0;   /* stage: 0 before, 1 fault on, 2 mid done, 3 fault ended */

	/* the run's last request is due at 2.5 W; give stragglers 60 s more */
	deadline = UINT64_MAX;
	while (alive > 0) {
		uint64_t now = bench_now_ns();
		if (go == 0 && __atomic_load_n(&sh->fsh_ready, __ATOMIC_SEQ_CST) >= sh->fsh_nworkers) {
			for (i = 0; i < sh->fsh_nworkers; i++)
				if (sh->fsh_w[i].fw_failed) {
					fault_err(s, "buyer %u: %s", i, sh->fsh_w[i].fw_err);
					bad = 1;
				}
			if (bad) {
				__atomic_store_n(&sh->fsh_abort, 1, __ATOMIC_RELEASE);
				go = UINT64_MAX;
			} else {
				go = now + 20000000;   /* 20 ms: every thread sees go before request 0 is due */
				sh->fsh_go_ns = go;
				/* release: fsh_go_ns before go, for the buyers' acquire load */
				__atomic_store_n(&sh->fsh_go, 1, __ATOMIC_RELEASE);
				deadline = go + s->s_window_ns * 5 / 2 + 60000000000ull;
			}
		}
		if (go == 0 && now - t_begin > 300000000000ull) {
			fault_err(s, "buyers not ready after 300 s");
			__atomic_store_n(&sh->fsh_abort, 1, __ATOMIC_RELEASE);
			go = UINT64_MAX;
			bad = 1;
		}
		if (go && go != UINT64_MAX && !bad) {
			uint64_t rel = now > go ? now - go : 0;
			if (stage == 0 && rel >= s->s_window_ns) {
				stage = 1;
				if (f->fd_begin(s) != 0)
					bad = 1;
			}
			if (stage == 1 && rel >= s->s_window_ns * 3 / 2) {
				stage = 2;
				if (f->fd_mid && f->fd_mid(s) != 0)
					bad = 1;
			}
			if (stage == 2 && rel >= 2 * s->s_window_ns) {
				stage = 3;
				if (f->fd_end && f->fd_end(s) != 0)
					bad = 1;
			}
			if (s->s_eng == FAULT_ENG_FLASH && daemon_died(s))
				bad = 1;
			if (bad)
				__atomic_store_n(&sh->fsh_abort, 1, __ATOMIC_RELEASE);
		}
		if (bench_interrupted && !__atomic_load_n(&sh->fsh_abort, __ATOMIC_RELAXED)) {
			fault_err(s, "interrupted");
			__atomic_store_n(&sh->fsh_abort, 1, __ATOMIC_RELEASE);
			bad = 1;
		}
		if (now > deadline && !__atomic_load_n(&sh->fsh_abort, __ATOMIC_RELAXED)) {
			fault_err(s, "buyers still running 60 s after the last request was due");
			__atomic_store_n(&sh->fsh_abort, 1, __ATOMIC_RELEASE);
			bad = 1;
		}
		for (i = 0; i < s->s_procs; i++) {
			int status;
			if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fault_err(s, "buyer process %u %s %d", i, WIFEXITED(status) ? "exited with" : "killed by signal",
				          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
				__atomic_store_n(&sh->fsh_abort, 1, __ATOMIC_RELEASE);
				bad = 1;
			}
			pids[i] = 0;
			alive--;
		}
		sleep_ns(2000000);
	}
	/* a fault that began always ends, also on the failure path */
	if (stage == 1 && f->fd_mid)
		f->fd_mid(s);
	if (stage >= 1 && stage < 3 && f->fd_end)
		f->fd_end(s);
	for (i = 0; i < sh->fsh_nworkers; i++)
		if (sh->fsh_w[i].fw_failed) {
			fault_err(s, "buyer %u: %s", i, sh->fsh_w[i].fw_err);
			bad = 1;
		}
	return bad ? -1 : 0;
}

/* One sale with fault @p f: set up, buyers, schedule, checks, teardown. */
static void sale_run(struct fault_sale *s, int sale_no)
{
	const struct fault_opts *o = s->s_o;
	pid_t pids[BENCH_MAX_WORKERS] = { 0 }, parent = getpid();
	uint64_t total;
	uint32_t p;
	int setup_rc;

	s->s_procs = o->fo_procs;
	s->s_sink_behind = -1;
	if (s->s_eng == FAULT_ENG_FLASH)
		s->s_threads = o->fo_threads[s->s_dur];
	else
		s->s_threads = (o->fo_redis_conns + o->fo_procs - 1) / o->fo_procs;
	s->s_nw = s->s_procs * s->s_threads;
	s->s_window_ns = (uint64_t)(o->fo_window_s * 10.0 + 0.5) * FAULT_BUCKET_NS;
	total = (uint64_t)(o->fo_rate * (double)s->s_window_ns * 2.5 / 1e9);
	s->s_reqs = (total + s->s_nw - 1) / s->s_nw;
	if (s->s_reqs < 2)
		s->s_reqs = 2;
	s->s_interval_ns = s->s_window_ns * 5 / 2 / s->s_reqs;
	/* nine units for ten requests: the sale sells out in the after phase,
	 * so the oversell check meets the boundary in every sale */
	s->s_units = (uint64_t)s->s_nw * s->s_reqs * 9 / 10;
	s->s_bits_bytes = (size_t)(s->s_reqs + 7) / 8;
	if (o->fo_progress)
		fprintf(stderr, "[faults] %s %s %s: %u buyers at %.0f requests/s, window %.1f s: %s\n",
		        fault_eng_names[s->s_eng], bench_dur_name(s->s_dur), s->s_f->fd_name, s->s_nw,
		        o->fo_rate, (double)s->s_window_ns / 1e9, s->s_f->fd_what);
	if (bench_mkdtemp(s->s_dir, sizeof s->s_dir) != 0) {
		fault_err(s, "mkdtemp: %s", strerror(errno));
		s->s_dir[0] = '\0';
		s->s_failed = 1;
		return;
	}
	s->s_sh_bytes = sizeof(struct fault_shared) + (size_t)s->s_nw * sizeof(struct fault_wstat);
	s->s_sh = mmap(NULL, s->s_sh_bytes + (size_t)s->s_nw * s->s_bits_bytes, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->s_sh == MAP_FAILED) {
		s->s_sh = NULL;
		fault_err(s, "mmap: %s", strerror(errno));
		s->s_failed = 1;
		goto teardown;
	}
	s->s_acked_bits = (uint8_t *)s->s_sh + s->s_sh_bytes;
	s->s_sh->fsh_nworkers = s->s_nw;
	for (p = 0; p < s->s_nw; p++) {
		int k;
		for (k = 0; k < FAULT_NPHASE; k++)
			bench_hist_init(&s->s_sh->fsh_w[p].fw_hist[k]);
	}
	if (s->s_eng == FAULT_ENG_FLASH)
		setup_rc = flash_setup(s, sale_no);
	else
#ifdef BENCH_HAVE_HIREDIS
		setup_rc = redis_setup(s);
#else
		setup_rc = fault_err(s, "built without hiredis");
#endif
	if (setup_rc != 0) {
		s->s_failed = 1;
		goto teardown;
	}
	fflush(NULL);
	for (p = 0; p < s->s_procs; p++) {
		pids[p] = fork();
		if (pids[p] == 0)
			worker_process(s, p, parent);
		if (pids[p] < 0) {
			fault_err(s, "fork: %s", strerror(errno));
			__atomic_store_n(&s->s_sh->fsh_abort, 1, __ATOMIC_RELEASE);
			__atomic_add_fetch(&s->s_sh->fsh_ready, (s->s_procs - p) * s->s_threads, __ATOMIC_SEQ_CST);
			for (; p < s->s_procs; p++)
				pids[p] = 0;
			break;
		}
	}
	if (sale_supervise(s, pids) != 0)
		s->s_failed = 1;
	sale_collect(s);
	if (s->s_delay_us) {
		/* relaxed: the fault is over (delay 0): the count no longer moves
		 * for a slowed call.  None slowed: the fault did not happen, and a
		 * row that says it did would be a fake */
		s->s_slowed = __atomic_load_n(&s->s_delay_us[1], __ATOMIC_RELAXED);
		if (s->s_slowed == 0 && !s->s_failed) {
			fault_err(s, "the slow-disk shim slowed no WAL call (not preloaded? %s)", s->s_o->fo_slowio);
			s->s_failed = 1;
		}
	}
	/* the checks run after a failure too: a broken sale still must not oversell */
	if (s->s_eng == FAULT_ENG_FLASH) {
		if (flash_check(s) != 0)
			s->s_failed = 1;
	}
#ifdef BENCH_HAVE_HIREDIS
	else if (redis_check(s) != 0) {
		s->s_failed = 1;
	}
#endif
teardown:
	if (s->s_eng == FAULT_ENG_FLASH)
		flash_teardown(s);
#ifdef BENCH_HAVE_HIREDIS
	else
		redis_teardown(s);
#endif
	if (s->s_sh)
		munmap(s->s_sh, s->s_sh_bytes + (size_t)s->s_nw * s->s_bits_bytes);
	s->s_sh = NULL;
	s->s_acked_bits = NULL;
	if (s->s_dir[0])
		bench_rmtree(s->s_dir);
}

/* Did sale @p s keep every invariant?  Redis may lose acknowledged orders in
 * a restart (that is what its rows measure); flashstock may not. */
static int sale_clean(const struct fault_sale *s)
{
	if (s->s_failed || s->s_chk.oversold || s->s_chk.duplicates || s->s_chk.mismatch)
		return 0;
	/* nothing placed that nobody was told about, beyond answers lost in a kill */
	if (s->s_unacked_orders > s->s_unanswered)
		return 0;
	if (s->s_eng == FAULT_ENG_FLASH && (s->s_chk.lost || s->s_reconcile != 0 || s->s_sink_behind > 0))
		return 0;
	return 1;
}

static void report_table(FILE *f, const struct fault_opts *o, struct fault_sale *s, size_t n)
{
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32];
	size_t i;
	int failed = 0;

	fprintf(f, "Open loop at %.0f requests/s in all; phases: clean %.1f s, fault %.1f s, after %.1f s; "
	           "latency from each request's intended start.\n\n", o->fo_rate, o->fo_window_s,
	        o->fo_window_s, o->fo_window_s / 2);
	fprintf(f, "| engine | durability | fault | ops/s clean | ops/s fault | ops/s after | p99 clean "
	           "| p99 fault | max fault | p99 after | no answer for | acked | unanswered | lost acks | oversold "
	           "| over limit | WAL / MariaDB agree | invariants |\n");
	fprintf(f, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
	for (i = 0; i < n; i++) {
		const struct fault_sale *r = &s[i];
		char agree[64];
		if (r->s_f->fd_missing)
			continue;
		if (r->s_failed) {
			failed++;
			continue;
		}
		if (r->s_eng == FAULT_ENG_FLASH)
			snprintf(agree, sizeof agree, "%s (%lld diffs)",
			         r->s_reconcile == 0 && r->s_orders_wal == r->s_chk.orders &&
			         r->s_orders_mysql == r->s_chk.orders ? "yes" : "NO", (long long)r->s_reconcile);
		else
			snprintf(agree, sizeof agree, "n/a (AOF)");
		fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f s | %llu | %llu | %lld | %lld "
		           "| %lld | %s | %s |\n",
		        fault_eng_names[r->s_eng], r->s_eng == FAULT_ENG_REDIS ? "sync (AOF always)" :
		        bench_dur_name(r->s_dur), r->s_f->fd_name, bench_fmt_rate(r->s_ops[0], a, sizeof a),
		        bench_fmt_rate(r->s_ops[1], b, sizeof b), bench_fmt_rate(r->s_ops[2], c, sizeof c),
		        bench_fmt_latency(r->s_p99[0], d, sizeof d), bench_fmt_latency(r->s_p99[1], e, sizeof e),
		        bench_fmt_latency(r->s_max[1], g, sizeof g), bench_fmt_latency(r->s_p99[2], h, sizeof h),
		        (double)r->s_gap_buckets * FAULT_BUCKET_NS / 1e9, (unsigned long long)r->s_acked,
		        (unsigned long long)r->s_unanswered, (long long)r->s_chk.lost,
		        (long long)r->s_chk.oversold, (long long)r->s_chk.duplicates, agree,
		        sale_clean(r) ? "held" : "BROKEN");
	}
	fprintf(f, "\nops/s: answers completed per second in the phase (a backlog answered late "
	           "counts where it is answered); p99: of the requests due in the phase; no answer for: the "
	           "longest stretch of the sale in which no buyer got an answer (100 ms buckets); "
	           "unanswered: requests whose connection died before the answer (fate unknown, "
	           "not counted as acknowledged); lost acks: acknowledged orders whose buyer holds no "
	           "order afterwards. Invariants: nothing oversold, no user over the limit, stock "
	           "counter = loaded - sold, no order of a request that was neither acknowledged nor "
	           "unanswered, and for flashstock no lost ack and segment = WAL = MariaDB.\n");
	fprintf(f, "\nFaults:\n");
	for (i = 0; i < FAULT_NDEF; i++)
		fprintf(f, "- `%s` (%s): %s%s%s\n", fault_table[i].fd_name, fault_eng_names[fault_table[i].fd_engine],
		        fault_table[i].fd_what, fault_table[i].fd_missing ? " -- NOT RUN: " : "",
		        fault_table[i].fd_missing ? fault_table[i].fd_missing : "");
	fprintf(f, "\nNotes:\n");
	for (i = 0; i < n; i++) {
		const struct fault_sale *r = &s[i];
		char slowed[64] = "";
		if (r->s_f->fd_missing || r->s_failed)
			continue;
		if (r->s_ctl[0])
			snprintf(slowed, sizeof slowed, "; WAL calls slowed %u", r->s_slowed);
		fprintf(f, "- %s/%s/%s: %s%s; answers: ok %llu (fate unknown %llu), sold out %llu, limit %llu; "
		           "retries %llu; p50 clean %s, p50 fault %s.\n",
		        fault_eng_names[r->s_eng], bench_dur_name(r->s_dur), r->s_f->fd_name, r->s_chk.note,
		        slowed, (unsigned long long)r->s_count[BENCH_RC_OK], (unsigned long long)r->s_fate_unknown,
		        (unsigned long long)r->s_count[BENCH_RC_SOLD_OUT],
		        (unsigned long long)r->s_count[BENCH_RC_LIMIT], (unsigned long long)r->s_retries,
		        bench_fmt_latency(r->s_p50[0], a, sizeof a), bench_fmt_latency(r->s_p50[1], b, sizeof b));
	}
	if (failed) {
		fprintf(f, "\nFailed (no figures shown):\n");
		for (i = 0; i < n; i++)
			if (s[i].s_failed && !s[i].s_f->fd_missing)
				fprintf(f, "- %s/%s/%s: %s\n", fault_eng_names[s[i].s_eng], bench_dur_name(s[i].s_dur),
				        s[i].s_f->fd_name, s[i].s_err);
	}
}

static void report_json(FILE *f, struct fault_sale *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct fault_sale *r = &s[i];
		if (r->s_f->fd_missing) {
			fprintf(f, "{\"engine\":\"%s\",\"fault\":\"%s\",\"ran\":false,\"why\":\"%s\"}\n",
			        fault_eng_names[r->s_eng], r->s_f->fd_name, r->s_f->fd_missing);
			continue;
		}
		fprintf(f, "{\"engine\":\"%s\",\"durability\":\"%s\",\"fault\":\"%s\",\"ran\":true,"
		           "\"failed\":%s,\"ops_clean\":%.1f,\"ops_fault\":%.1f,\"ops_after\":%.1f,"
		           "\"p99_clean_ns\":%llu,\"p99_fault_ns\":%llu,\"p99_after_ns\":%llu,\"no_answer_s\":%.1f,"
		           "\"acked\":%llu,\"unanswered\":%llu,"
		           "\"lost\":%lld,\"oversold\":%lld,\"duplicates\":%lld,\"mismatch\":%lld,"
		           "\"reconcile_diffs\":%lld,\"orders\":%llu,\"restarts\":%u,\"slowed_calls\":%u,"
		           "\"sink_behind\":%lld,\"sink_reconnects\":%llu,\"unacked_orders\":%llu,"
		           "\"invariants_held\":%s}\n",
		        fault_eng_names[r->s_eng], r->s_eng == FAULT_ENG_REDIS ? "sync" : bench_dur_name(r->s_dur),
		        r->s_f->fd_name, r->s_failed ? "true" : "false", r->s_ops[0], r->s_ops[1], r->s_ops[2],
		        (unsigned long long)r->s_p99[0], (unsigned long long)r->s_p99[1],
		        (unsigned long long)r->s_p99[2], (double)r->s_gap_buckets * FAULT_BUCKET_NS / 1e9,
		        (unsigned long long)r->s_acked, (unsigned long long)r->s_unanswered,
		        (long long)r->s_chk.lost, (long long)r->s_chk.oversold, (long long)r->s_chk.duplicates,
		        (long long)r->s_chk.mismatch, (long long)r->s_reconcile,
		        (unsigned long long)r->s_chk.orders, r->s_restarts, r->s_slowed,
		        (long long)r->s_sink_behind, (unsigned long long)r->s_sink_reconnects,
		        (unsigned long long)r->s_unacked_orders,
		        sale_clean(r) ? "true" : "false");
	}
}

/* DIR/faults-timeline.dat: one gnuplot data block per sale ("t_s ops_per_s"
 * per 100 ms), DIR/faults-vars.gp: the window and the blocks' titles, for
 * bench/plot_faults.gp. */
static int report_timeline(const char *dir, const struct fault_opts *o, struct fault_sale *s, size_t n)
{
	char path[600];
	FILE *f, *v;
	size_t i;
	uint32_t b;
	int blocks = 0;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof path, "%s/faults-timeline.dat", dir);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/faults-vars.gp", dir);
	if ((v = fopen(path, "w")) == NULL) {
		fclose(f);
		return -1;
	}
	fprintf(v, "fault_window = %.3f\nfault_rate = %.1f\nfault_titles = \"", o->fo_window_s, o->fo_rate);
	for (i = 0; i < n; i++) {
		const struct fault_sale *r = &s[i];
		if (r->s_f->fd_missing || r->s_failed || !r->s_timeline)
			continue;
		fprintf(f, "# %s %s %s\n", fault_eng_names[r->s_eng], bench_dur_name(r->s_dur), r->s_f->fd_name);
		for (b = 0; b < r->s_nbuckets; b++)
			fprintf(f, "%.2f %.1f\n", (double)b * FAULT_BUCKET_NS / 1e9 + 0.05,
			        (double)r->s_timeline[b] * 1e9 / FAULT_BUCKET_NS);
		fprintf(f, "\n\n");
		fprintf(v, "%s%s/%s/%s", blocks ? " " : "", fault_eng_names[r->s_eng],
		        r->s_eng == FAULT_ENG_REDIS ? "aof-always" : bench_dur_name(r->s_dur), r->s_f->fd_name);
		blocks++;
	}
	fprintf(v, "\"\nfault_restarts = \"");
	for (i = 0, blocks = 0; i < n; i++) {
		const struct fault_sale *r = &s[i];
		if (r->s_f->fd_missing || r->s_failed || !r->s_timeline)
			continue;
		fprintf(v, "%s%d", blocks ? " " : "", r->s_f->fd_mid != NULL);
		blocks++;
	}
	fprintf(v, "\"\nfault_blocks = %d\n", blocks);
	fclose(f);
	fclose(v);
	return 0;
}

/* ---- options ------------------------------------------------------------ */

static void faults_usage(FILE *f)
{
	fprintf(f,
"usage: flashstock bench --faults [options]\n"
"One short sale per fault: a clean phase (W s), the fault (W s; a killed\n"
"process is restarted half-way), an after phase (W/2 s); open loop at a fixed\n"
"rate.  Prints throughput and p99 of each phase and the invariants checked\n"
"after recovery (oversold, users over the limit, acknowledged orders lost;\n"
"flashstock: segment, WAL and MariaDB reconciled order by order; with the\n"
"broker fault, every WAL record confirmed by RabbitMQ through the sink).\n"
"Faults: mariadb-sigstop, serve-sigkill, wal-slow, broker-stop (flashstock);\n"
"redis-sigkill, redis-sigstop (redis-lua, appendfsync always).\n"
"\n"
"  -e, --engines LIST     flashstock,redis-lua (default both)\n"
"  -d, --durability LIST  flashstock: async,sync (default sync); redis-lua\n"
"                         always runs appendonly yes + appendfsync always\n"
"      --fault LIST       only these faults (names: see the table)\n"
"      --window S         W, seconds (default 5; --short: 1.5)\n"
"  -r, --rate R           requests per second over all buyers (default 5000;\n"
"                         --short: 4000)\n"
"      --short            the ctest smoke: W = 1.5 s, 4000 requests/s\n"
"  -p, --procs N          buyer processes (default 2)\n"
"      --sync-threads N   flashstock sync: threads per process (default 64)\n"
"      --async-threads N  flashstock async: threads per process (default 2)\n"
"      --redis-conns N    redis: connections over all processes, a thread\n"
"                         each (default 50)\n"
"      --wal-delay-ms N   wal-slow: delay before each WAL write and fdatasync\n"
"                         (default 5)\n"
"      --flashstock P     the flashstock binary whose `serve` is the daemon\n"
"                         (default: this program when run as flashstock bench)\n"
"      --slowio-preload P libflash_slowio.so (default: next to the bench)\n"
"      --redis-server P   redis-server binary (default: redis-server)\n"
"      --mariadb-script P tests/fixtures/mariadb.sh (default: in the source tree)\n"
"      --rabbitmq-script P tests/fixtures/rabbitmq.sh (broker-stop; default: in\n"
"                         the source tree; FLASH_AMQP_PROBE as the script says)\n"
"      --json             JSON lines on stdout instead of the table\n"
"      --out DIR          also write DIR/faults.md, DIR/faults.json and the\n"
"                         timeline (faults-timeline.dat, faults-vars.gp) that\n"
"                         bench/plot_faults.gp draws\n"
"  -q, --quiet            no progress lines\n"
"Exit: 0 every sale ran and its invariants held (Redis may lose acknowledged\n"
"orders in a restart: counted, not a failure); 1 otherwise; 2 bad usage.\n");
}

/* Find a file next to this program, or @p rel from its directory. */
static int find_near_exe(const char *rel, char *out, size_t cap)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(cand, sizeof cand, "%s/%s", dirname(exe), rel);
	if (access(cand, R_OK) != 0 || realpath(cand, out) == NULL)
		return -1;
	(void)cap;
	return 0;
}

static int fault_selected(const struct fault_opts *o, const char *name)
{
	char buf[256], *save = NULL, *tok;

	if (o->fo_only == NULL)
		return 1;
	snprintf(buf, sizeof buf, "%s", o->fo_only);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, name) == 0)
			return 1;
	return 0;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || *out < lo || *out > hi) ? -1 : 0;
}

static int mariadb_up(const struct fault_opts *o)
{
	char env[4096];
	int rc;

	if (fault_db.started)
		return 0;
	if (o->fo_progress)
		fprintf(stderr, "[faults] starting a private MariaDB (%s start)\n", o->fo_mariadb_script);
	fault_db.started = 1;
	rc = fixture_run(o->fo_mariadb_script, "start", "", env, sizeof env);
	if (fixture_export(env, "FLASH_MARIADB_DIR", fault_db.dir, sizeof fault_db.dir) != 0) {
		fault_db.started = 0;
		fprintf(stderr, "[faults] %s start failed (exit %d)\n", o->fo_mariadb_script, rc);
		return -1;
	}
	if (rc != 0 || fixture_export(env, "FLASH_MYSQL_SOCKET", fault_db.sock, sizeof fault_db.sock) != 0) {
		fprintf(stderr, "[faults] %s start failed (exit %d)\n", o->fo_mariadb_script, rc);
		return -1;
	}
	return 0;
}

static void mariadb_down(const struct fault_opts *o)
{
	pid_t p;

	if (!fault_db.started)
		return;
	if ((p = mariadb_pid()) > 0)
		kill(p, SIGCONT);   /* never leave it halted */
	if (fixture_run(o->fo_mariadb_script, "stop", fault_db.dir, NULL, 0) != 0)
		fprintf(stderr, "[faults] warning: %s stop %s failed\n", o->fo_mariadb_script, fault_db.dir);
	fault_db.started = 0;
}

static void on_signal(int sig)
{
	(void)sig;
	bench_interrupted = 1;
}

int cmd_bench_faults(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "faults", 0, NULL, 1 }, { "engines", 1, NULL, 'e' }, { "durability", 1, NULL, 'd' },
		{ "fault", 1, NULL, 2 }, { "window", 1, NULL, 3 }, { "rate", 1, NULL, 'r' },
		{ "short", 0, NULL, 4 }, { "procs", 1, NULL, 'p' }, { "sync-threads", 1, NULL, 5 },
		{ "async-threads", 1, NULL, 6 }, { "redis-conns", 1, NULL, 7 }, { "wal-delay-ms", 1, NULL, 8 },
		{ "flashstock", 1, NULL, 9 }, { "slowio-preload", 1, NULL, 10 }, { "redis-server", 1, NULL, 11 },
		{ "mariadb-script", 1, NULL, 12 }, { "json", 0, NULL, 13 }, { "out", 1, NULL, 14 },
		{ "rabbitmq-script", 1, NULL, 15 },
		{ "quiet", 0, NULL, 'q' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	struct fault_opts o;
	char mscript[PATH_MAX], rscript[PATH_MAX], *elist = NULL, *dlist = NULL;
	double v, window = 0, rate = 0;
	int opt, shortm = 0, rc = 0, any_flash = 0;
	struct fault_sale *sales;
	size_t nsales = 0, i, k;
	struct sigaction sa, old_int, old_term;

	memset(&o, 0, sizeof o);
	o.fo_procs = 2;
	o.fo_threads[BENCH_DUR_ASYNC] = 2;
	o.fo_threads[BENCH_DUR_SYNC] = 64;
	o.fo_redis_conns = 50;
	o.fo_wal_delay_us = 5000;
	o.fo_progress = 1;
	o.fo_redis_server = "redis-server";
	snprintf(mscript, sizeof mscript, "%s/tests/fixtures/mariadb.sh", BENCH_SOURCE_DIR);
	o.fo_mariadb_script = mscript;
	snprintf(rscript, sizeof rscript, "%s/tests/fixtures/rabbitmq.sh", BENCH_SOURCE_DIR);
	o.fo_rabbitmq_script = rscript;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "e:d:r:p:qh", lo, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case 1:   break;
		case 'e': elist = optarg; break;
		case 'd': dlist = optarg; break;
		case 2:   o.fo_only = optarg; break;
		case 3:   bad = parse_num(optarg, 0.5, 600, &window); break;
		case 'r': bad = parse_num(optarg, 10, 1e7, &rate); break;
		case 4:   shortm = 1; break;
		case 'p': bad = parse_num(optarg, 1, 16, &v); o.fo_procs = (uint32_t)v; break;
		case 5:   bad = parse_num(optarg, 1, 128, &v); o.fo_threads[BENCH_DUR_SYNC] = (uint32_t)v; break;
		case 6:   bad = parse_num(optarg, 1, 128, &v); o.fo_threads[BENCH_DUR_ASYNC] = (uint32_t)v; break;
		case 7:   bad = parse_num(optarg, 1, 1000, &v); o.fo_redis_conns = (uint32_t)v; break;
		case 8:   bad = parse_num(optarg, 0, 10000, &v); o.fo_wal_delay_us = (uint32_t)(v * 1000); break;
		case 9:   bad = realpath(optarg, o.fo_flashstock) == NULL; break;
		case 10:  bad = realpath(optarg, o.fo_slowio) == NULL; break;
		case 11:  o.fo_redis_server = optarg; break;
		case 12:  o.fo_mariadb_script = optarg; break;
		case 13:  o.fo_json = 1; break;
		case 14:  o.fo_out = optarg; break;
		case 15:  o.fo_rabbitmq_script = optarg; break;
		case 'q': o.fo_progress = 0; break;
		case 'h': faults_usage(stdout); return 0;
		default:  faults_usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "flashstock bench --faults: bad value for option: %s\n", optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flashstock bench --faults: unexpected argument: %s\n", argv[optind]);
		return 2;
	}
	o.fo_window_s = window > 0 ? window : shortm ? 1.5 : 5.0;
	o.fo_rate = rate > 0 ? rate : shortm ? 4000 : 5000;
	if ((uint64_t)o.fo_procs * o.fo_threads[BENCH_DUR_SYNC] > BENCH_MAX_WORKERS ||
	    (uint64_t)o.fo_procs * o.fo_threads[BENCH_DUR_ASYNC] > BENCH_MAX_WORKERS ||
	    o.fo_redis_conns > BENCH_MAX_WORKERS) {
		fprintf(stderr, "flashstock bench --faults: at most %u buyer threads\n", BENCH_MAX_WORKERS);
		return 2;
	}
	/* engines and durabilities */
	o.fo_engines[FAULT_ENG_FLASH] = o.fo_engines[FAULT_ENG_REDIS] = elist == NULL;
	if (elist) {
		char *save = NULL, *tok;
		for (tok = strtok_r(elist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (strcmp(tok, "flashstock") == 0)
				o.fo_engines[FAULT_ENG_FLASH] = 1;
			else if (strcmp(tok, "redis-lua") == 0)
				o.fo_engines[FAULT_ENG_REDIS] = 1;
			else {
				fprintf(stderr, "flashstock bench --faults: engine is flashstock or redis-lua, not '%s'\n", tok);
				return 2;
			}
		}
	}
	if (dlist) {
		char *save = NULL, *tok;
		for (tok = strtok_r(dlist, ",", &save); tok && o.fo_ndur < 2; tok = strtok_r(NULL, ",", &save)) {
			if (strcmp(tok, "async") == 0)
				o.fo_durs[o.fo_ndur++] = BENCH_DUR_ASYNC;
			else if (strcmp(tok, "sync") == 0)
				o.fo_durs[o.fo_ndur++] = BENCH_DUR_SYNC;
			else {
				fprintf(stderr, "flashstock bench --faults: durability is async or sync, not '%s'\n", tok);
				return 2;
			}
		}
	} else {
		o.fo_durs[o.fo_ndur++] = BENCH_DUR_SYNC;
	}
	if (o.fo_only) {
		char buf[256], *save = NULL, *tok;
		snprintf(buf, sizeof buf, "%s", o.fo_only);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			for (k = 0; k < FAULT_NDEF; k++)
				if (strcmp(fault_table[k].fd_name, tok) == 0)
					break;
			if (k == FAULT_NDEF) {
				fprintf(stderr, "flashstock bench --faults: unknown fault '%s'\n", tok);
				return 2;
			}
		}
	}
	/* the daemon's binary and the slow-disk shim */
	if (!o.fo_flashstock[0]) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n > 0) {
			exe[n] = '\0';
			if (strcmp(basename(exe), "flashstock") == 0)
				snprintf(o.fo_flashstock, sizeof o.fo_flashstock, "%s", exe);
		}
		if (!o.fo_flashstock[0])
			find_near_exe("../tools/flashstock", o.fo_flashstock, sizeof o.fo_flashstock);
	}
	if (!o.fo_slowio[0] && find_near_exe("libflash_slowio.so", o.fo_slowio, sizeof o.fo_slowio) != 0)
		find_near_exe("../bench/libflash_slowio.so", o.fo_slowio, sizeof o.fo_slowio);

	/* the sales: every selected fault of every selected engine (and
	 * flashstock durability); a fault that cannot run keeps its row */
	sales = calloc(FAULT_NDEF * 2 + 1, sizeof *sales);
	if (sales == NULL)
		return 1;
	for (k = 0; k < FAULT_NDEF; k++) {
		const struct fault_def *f = &fault_table[k];
		int d;
		if (!o.fo_engines[f->fd_engine] || !fault_selected(&o, f->fd_name))
			continue;
		for (d = 0; d < (f->fd_engine == FAULT_ENG_FLASH && !f->fd_missing ? o.fo_ndur : 1); d++) {
			struct fault_sale *s = &sales[nsales++];
			s->s_f = f;
			s->s_o = &o;
			s->s_eng = f->fd_engine;
			s->s_dur = f->fd_engine == FAULT_ENG_FLASH ? o.fo_durs[d] : BENCH_DUR_SYNC;
			if (s->s_eng == FAULT_ENG_FLASH && !f->fd_missing)
				any_flash = 1;
		}
	}
	if (any_flash && !o.fo_flashstock[0]) {
		fprintf(stderr, "flashstock bench --faults: cannot find the flashstock binary: give --flashstock PATH\n");
		free(sales);
		return 2;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	signal(SIGPIPE, SIG_IGN);
	if (any_flash && mariadb_up(&o) != 0) {
		for (i = 0; i < nsales; i++)
			if (sales[i].s_eng == FAULT_ENG_FLASH && !sales[i].s_f->fd_missing) {
				sales[i].s_failed = 1;
				snprintf(sales[i].s_err, sizeof sales[i].s_err, "no MariaDB");
			}
		rc = 1;
	}
	for (i = 0; i < nsales && !bench_interrupted; i++) {
		if (sales[i].s_f->fd_missing || sales[i].s_failed)
			continue;
		sale_run(&sales[i], (int)i);
		if (!sale_clean(&sales[i])) {
			rc = 1;
			if (sales[i].s_failed)
				fprintf(stderr, "[faults] %s %s %s: FAILED: %s\n", fault_eng_names[sales[i].s_eng],
				        bench_dur_name(sales[i].s_dur), sales[i].s_f->fd_name, sales[i].s_err);
			else
				fprintf(stderr, "[faults] %s %s %s: INVARIANT BROKEN: lost %lld, oversold %lld, over "
				        "limit %lld, mismatch %lld, reconcile %lld\n", fault_eng_names[sales[i].s_eng],
				        bench_dur_name(sales[i].s_dur), sales[i].s_f->fd_name,
				        (long long)sales[i].s_chk.lost, (long long)sales[i].s_chk.oversold,
				        (long long)sales[i].s_chk.duplicates, (long long)sales[i].s_chk.mismatch,
				        (long long)sales[i].s_reconcile);
		}
	}
	mariadb_down(&o);
	if (o.fo_json)
		report_json(stdout, sales, nsales);
	else
		report_table(stdout, &o, sales, nsales);
	fflush(stdout);
	if (o.fo_out) {
		char path[600];
		FILE *f;
		if (report_timeline(o.fo_out, &o, sales, nsales) != 0) {
			fprintf(stderr, "[faults] cannot write under %s: %s\n", o.fo_out, strerror(errno));
			rc = 1;
		}
		snprintf(path, sizeof path, "%s/faults.md", o.fo_out);
		if ((f = fopen(path, "w"))) {
			report_table(f, &o, sales, nsales);
			fclose(f);
		}
		snprintf(path, sizeof path, "%s/faults.json", o.fo_out);
		if ((f = fopen(path, "w"))) {
			report_json(f, sales, nsales);
			fclose(f);
		}
	}
	for (i = 0; i < nsales; i++)
		free(sales[i].s_timeline);
	free(sales);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (bench_interrupted) {
		fprintf(stderr, "[faults] interrupted: the sales after the one running were not run\n");
		rc = 1;
	}
	return rc;
}
