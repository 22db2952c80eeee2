/*
 * lease_proof.c -- the proof of issue 14: N boxes sell one hot sku from
 * leases of a private three-node MariaDB Galera cluster while boxes and a
 * node are killed, and every invariant is checked at the end.
 *
 *   lease_proof --bin FLASHSTOCK --galera GALERA_SH [--long] [--seed S] [--keep DIR]
 *
 * What it does (each step is printed with its time):
 *   1. starts the cluster (tests/fixtures/galera.sh), `lease init`, `lease
 *      pool` of TOTAL units for (activity 1, sku 1), far below the demand;
 *   2. per box: a segment (sync durability) with the activity (limit 1 per
 *      user, the window closing at the sale's end) and the sku at 0 units,
 *      `serve --mysql flash_box<N> --lease URLS --box-id N --backstop URLS`,
 *      and buyer processes (this program with --buyer) for the users that
 *      the load balancer routes to the box by hash; every 40th user is
 *      routed to two boxes (the backstop must cancel one of its orders);
 *   3. the chaos: boxes killed (buyers and daemon, SIGKILL) and restarted on
 *      their segment and WAL; a Galera node killed and restarted; a box
 *      killed, fenced, its units reclaimed from its WAL (and its segment),
 *      then restarted with its stale epoch and its buyers at once (no health
 *      check holds them back: --eager-rejoin is the default); a power cut of
 *      box 1: daemon and buyers SIGKILLed as a WAL write awaits its
 *      fdatasync (2 ms each: FLASH_TEST_SYNC_DELAY_MS), what the daemon
 *      wrote to its WAL after its last fdatasync dropped (its
 *      FLASH_TEST_SYNC_LOG, persist/storage/pio.h; lease_testutil.h), its segment
 *      in /dev/shm lost and created again with the same options, rebuilt
 *      from the WAL (`serve --recover --once`), then the box restarted;
 *      with --long, more box kills and power cuts at random (--seed) and a
 *      second node kill;
 *   4. the window closes: buyers stop (FLASH_EENDED), the agents give back
 *      what they hold, the daemons stop cleanly;
 *   5. the checks, from the central database, each box's WAL (its segment
 *      reflects it) and each box's database:
 *        sold over all boxes <= total;
 *        every order a buyer saw acknowledged is in its box's MariaDB, once;
 *        no user holds more than the limit over all boxes (after the
 *        backstop's cancels), and each double-routed user's second order was
 *        cancelled, never kept;
 *        sold + units in live leases (the boxes' stock) + pool = total;
 *        stranded units after the reclaim = 0 (every leased unit is sold or
 *        returned);
 *        undersell: order attempts refused while units were in the pool or
 *        in another live box (sampled every 20 ms), and the largest count of
 *        units held by other boxes when a box refused buyers while the pool
 *        was empty, against its bound
 *        (boxes - 1) x 2 x lease-max: a box holds at most its low-water mark
 *        plus one refill step, both at most lease-max.
 *   Exit 0 only if every check holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mysql.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"
#include "central.h"
#include "mysql_apply.h"
#define LT_NO_CMOCKA            /* the power cut alone: this program has no cmocka */
#include "lease_testutil.h"

#define MAX_BOXES   8
#define MAX_NODES   3
#define ACT         1u
#define SKU         1u

struct cfg {
	int      boxes;
	int      buyers;          /* per box */
	uint64_t total;           /* units in the pool */
	uint64_t users;           /* demand: users 1..users, one unit each */
	uint32_t sale_s;          /* the window */
	uint32_t lease_min, lease_max, lease_lead_ms, heartbeat_s;
	uint32_t pace_us;         /* a buyer's pause between attempts */
	int      random_kills;    /* extra box kills at random */
	int      random_cuts;     /* extra power cuts at random */
	int      long_run;
	int      split;           /* --split: no leases, each box owns total / boxes (the
	                             hand split of one box per shop: the baseline whose
	                             early sold-out the leases remove) */
	uint64_t seed;
};

/* Counters the buyers share with the orchestrator (MAP_SHARED, so a
 * SIGKILLed buyer's counts stay). */
struct shared {
	uint64_t attempts[MAX_BOXES];
	uint64_t acked[MAX_BOXES];
	uint64_t soldout[MAX_BOXES];
	uint64_t fate_unknown[MAX_BOXES];
	uint64_t other_err[MAX_BOXES];
};

struct box {
	int      id;              /* 1.. */
	char     seg[64];
	char     dir[700];        /* box directory: wal/, acked.*, serve.log */
	char     wal[720];
	char     synclog[720];    /* the running daemon's FLASH_TEST_SYNC_LOG (b->dir + "/sync.log"),
	                             emptied at each start: a power cut reads only its log */
	char     db_url[1024];    /* flash_box<N> on one node */
	char     bs_urls[4096];   /* the central URLs from node (id mod nodes) on: boxes
	                             writing one user's key through different nodes meet
	                             in Galera's certification, which the backstop retries */
	pid_t    serve_pid;
	pid_t    buyer_pid[16];
	int      up;
	int      fenced;          /* fenced and reclaimed while down: its segment's stock is
	                             no longer its own (the agent drains it at restart) */
	int64_t  down_since_ms;
	flash_t *ro;              /* read-only handle for the sampler */
};

static const char *g_bin, *g_galera;
static char g_base[400], g_gdir[600];
static char g_urls[4096];                 /* comma-separated central URLs */
static char g_node_url[MAX_NODES][1024];
static int  g_nnodes;
static struct cfg g_cfg;
static struct box g_box[MAX_BOXES];
static struct shared *g_sh;
static int64_t g_t0_ms;
static int g_fail;
static int g_keep;        /* --keep DIR: the directory stays */

/* ---- small helpers ---- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("[%7.2fs] ", (double)(now_ms() - g_t0_ms) / 1000.0);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

__attribute__((format(printf, 3, 4)))
static void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("CHECK %-34s %s  ", name, ok ? "ok  " : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (!ok)
		g_fail = 1;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The load balancer: a user's box by hash (nginx `hash $arg_user
 * consistent;` does the same with a ring); every 40th user is also sent to
 * the next box, as a changed upstream list or a retry elsewhere would. */
static int home_box(uint64_t user, int boxes)
{
	uint64_t s = user;
	return (int)(splitmix(&s) % (uint64_t)boxes);
}

static int routed_to(uint64_t user, int box_index, int boxes)
{
	int h = home_box(user, boxes);
	return h == box_index || (user % 40 == 0 && (h + 1) % boxes == box_index);
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Run a shell command, its output appended to BASE/commands.log.
 * @return its exit status (-1: not run). */
__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...)
{
	char cmd[8192], full[9000];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	char logp[512];
	snprintf(logp, sizeof logp, "%s/commands.log", g_base);
	FILE *lf = fopen(logp, "a");
	if (lf) {
		fprintf(lf, "+ %s\n", cmd);
		fclose(lf);
	}
	snprintf(full, sizeof full, "{ %s; } >>%s 2>&1", cmd, logp);
	int st = system(full);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ---- SQL on the cluster: the first node that answers ---- */

static mdb_t *g_m[MAX_NODES];
static int g_mcur;

static MYSQL *central(void)
{
	for (int k = 0; k < g_nnodes; k++) {
		int i = (g_mcur + k) % g_nnodes;
		if (!g_m[i]) {
			struct mdb_opts o = { .url = g_node_url[i], .no_schema = 1,
			                              .connect_timeout_s = 1, .rw_timeout_s = 5,
			                              .log_level = PLOG_ERROR };
			if (mdb_open(&o, &g_m[i]) != FLASH_OK && !g_m[i])
				continue;
		}
		MYSQL *c = mdb_conn(g_m[i]);
		/* causal reads: a check after a failover sees every write set
		 * the cluster committed before it, through any node (set on
		 * each use: the connection may have been made anew) */
		if (c && mysql_query(c, "SET SESSION wsrep_sync_wait = 1") == 0) {
			g_mcur = i;
			return c;
		}
	}
	return NULL;
}

static void central_lost(void)
{
	if (g_m[g_mcur])
		mdb_conn_lost(g_m[g_mcur]);
	g_mcur = (g_mcur + 1) % g_nnodes;
}

/* One integer from a query on @p c (or on the central database when @p c
 * is NULL); -1 when it cannot be read. */
__attribute__((format(printf, 2, 3)))
static int64_t q1(MYSQL *c, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	for (int attempt = 0; attempt < 3; attempt++) {
		MYSQL *cc = c ? c : central();
		if (!cc)
			return -1;
		if (mysql_query(cc, sql) == 0) {
			MYSQL_RES *r = mysql_store_result(cc);
			MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
			int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : (r ? 0 : -1);
			if (r)
				mysql_free_result(r);
			return v;
		}
		if (c)
			return -1;
		central_lost();
	}
	return -1;
}

static int g_node_down[MAX_NODES];

/* A node that is up, @p pref if it is. */
static int node_up(int pref)
{
	if (!g_node_down[pref])
		return pref;
	for (int k = 0; k < g_nnodes; k++)
		if (!g_node_down[k])
			return k;
	return pref;
}


/* Box @p b's own database through node @p k (Galera replicates it to every node). */
static void box_db_url_on(const struct box *b, int k, char *out, size_t cap)
{
	const char *u = g_node_url[k];
	const char *cen = strstr(u, "/flash_central");
	if (!cen) {
		snprintf(out, cap, "%s", u);
		return;
	}
	snprintf(out, cap, "%.*s/flash_box%d%s%s", (int)(cen - u), u, b->id, cen + strlen("/flash_central"),
	         strchr(cen, '?') ? "&create_db=1" : "?create_db=1");
}

/* ---- the central operations: `flashstock lease ...` when the tool has
 * them, else the same statements through central.h ---- */

static int g_have_cli;
static central_t *g_central;

static central_t *central_api(void)
{
	if (!g_central) {
		struct central_opts o = { .urls = g_urls, .timeout_s = 2, .retry_ms = 20000, .create_db = 1 };
		if (central_open(&o, &g_central) != FLASH_OK)
			return NULL;
	}
	return g_central;
}

/* Units box @p b sold, from its WAL (a feed consumer of its own, from the
 * start, dropped afterwards): ORDER quantities minus CANCEL quantities. */
static int64_t wal_sold(const char *wal)
{
	struct flash_feed_opts fo;
	flash_feed_opts_default(&fo);
	fo.from_start = 1;
	flash_feed_t *f;
	char name[48];
	static int seq;
	snprintf(name, sizeof name, "proof-%d-%d", (int)getpid(), ++seq);
	if (flash_feed_open(wal, name, &fo, &f) != FLASH_OK)
		return -1;
	struct flash_feed_rec r;
	int64_t sold = 0;
	int rc;
	while ((rc = flash_feed_next(f, &r, 0)) == FLASH_OK) {
		if (r.fr_rec.activity_id != ACT || r.fr_rec.sku_id != SKU)
			continue;
		if (r.fr_rec.type == FLASH_REC_ORDER)
			sold += r.fr_rec.qty;
		else if (r.fr_rec.type == FLASH_REC_CANCEL)
			sold -= r.fr_rec.qty;
	}
	flash_feed_close(f);
	flash_feed_drop(wal, name);
	return rc == FLASH_ETIMEOUT ? sold : -1;
}

static int lease_init_pool(void)
{
	if (g_cfg.split)
		return 0;
	if (g_have_cli)
		return sh("%s lease init --mysql '%s'", g_bin, g_urls) ||
		       sh("%s lease pool --mysql '%s' --activity %u --sku %u --total %" PRIu64, g_bin, g_urls, ACT,
		          SKU, g_cfg.total);
	central_t *c = central_api();
	return !c || central_init(c) != FLASH_OK ||
	       central_pool_set(c, ACT, SKU, (int64_t)g_cfg.total) != FLASH_OK;
}

static int lease_fence(int box_id)
{
	if (g_have_cli)
		return sh("%s lease fence --box %d --mysql '%s' --force", g_bin, box_id, g_urls);
	central_t *c = central_api();
	uint32_t ep = 0, nl = 0;
	int rc = c ? central_fence(c, (uint32_t)box_id, 0, 1, &ep, &nl) : FLASH_EINVAL;
	return rc != FLASH_OK && rc != FLASH_EEXIST;
}

/* Give back what a fenced box leased and did not sell, sold read from its WAL. */
static int lease_reclaim(struct box *b, int64_t *returned)
{
	*returned = -1;
	if (g_have_cli) {
		/* its database through a node that is up */
		char url[1024];
		box_db_url_on(b, node_up(0), url, sizeof url);
		return sh("%s lease reclaim --box %d --wal %s --mysql '%s' --box-mysql '%s'", g_bin, b->id, b->wal,
		          g_urls, url);
	}
	int64_t sold = wal_sold(b->wal);
	central_t *c = central_api();
	if (sold < 0 || !c)
		return 1;
	return central_reclaim(c, (uint32_t)b->id, ACT, SKU, sold, returned) != FLASH_OK;
}

/* ---- the buyer (this program with --buyer) ---- */

static int buyer_main(int argc, char **argv)
{
	if (argc < 9)
		return 2;
	const char *seg = argv[2];
	int box_index = atoi(argv[3]), boxes = atoi(argv[4]), j = atoi(argv[5]), nbuyers = atoi(argv[6]);
	uint64_t users = strtoull(argv[7], NULL, 10);
	uint32_t pace_us = (uint32_t)strtoul(argv[8], NULL, 10);
	const char *acked_path = argv[9];
	const char *shm_path = argv[10];
	int sfd = open(shm_path, O_RDWR);
	if (sfd < 0)
		return 3;
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (sh == MAP_FAILED)
		return 3;
	int afd = open(acked_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (afd < 0)
		return 3;
	flash_t *h;
	if (flash_open(seg, 0, &h) != FLASH_OK)
		return 4;
	(void)flash_sync_wait_set(h, 3000);
	uint64_t *mine = malloc(users * sizeof *mine);
	size_t n = 0;
	if (mine == NULL)
		return 4;
	for (uint64_t u = 1; u <= users; u++)
		if (routed_to(u, box_index, boxes) && (u % (uint64_t)nbuyers) == (uint64_t)j)
			mine[n++] = u;
	/* the users in a random order, each tried once per pass (a restarted
	 * buyer starts a new order: its users already served get FLASH_ELIMIT) */
	uint64_t rs = (uint64_t)getpid() * 7919u;
	for (size_t i = n; i > 1; i--) {
		size_t k = (size_t)(splitmix(&rs) % i);
		uint64_t t = mine[i - 1];
		mine[i - 1] = mine[k];
		mine[k] = t;
	}
	int b = box_index;
	for (size_t next = 0;; next++) {
		if (n == 0)
			break;
		uint64_t u = mine[next % n];
		struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .user_id = u, .qty = 1 };
		struct flash_order_res res;
		int rc = flash_order(h, &r, &res);
		__atomic_add_fetch(&sh->attempts[b], 1, __ATOMIC_RELAXED);
		if (rc == FLASH_OK) {
			char line[64];
			int k = snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 "\n", res.order_no, u);
			if (write(afd, line, (size_t)k) != k) {
				free(mine);
				return 5;
			}
			__atomic_add_fetch(&sh->acked[b], 1, __ATOMIC_RELAXED);
		} else if (rc == FLASH_ESOLD_OUT) {
			__atomic_add_fetch(&sh->soldout[b], 1, __ATOMIC_RELAXED);
		} else if (rc == FLASH_EENDED) {
			break;
		} else if (rc == FLASH_EFATE_UNKNOWN) {
			__atomic_add_fetch(&sh->fate_unknown[b], 1, __ATOMIC_RELAXED);
		} else if (rc != FLASH_ELIMIT && rc != FLASH_EBUSY) {
			__atomic_add_fetch(&sh->other_err[b], 1, __ATOMIC_RELAXED);
		}
		if (pace_us)
			usleep(pace_us);
	}
	free(mine);
	flash_close(h);
	return 0;
}

/* ---- boxes ---- */

static char g_self[1024];
static char g_shm_path[700];

/* A box's disk: each fdatasync of its daemon takes this long
 * (FLASH_TEST_SYNC_DELAY_MS, persist/storage/pio.h), a real disk's order; a disk
 * behind a cache answers in tens of microseconds, and a power cut would
 * then almost never find a WAL write unsynced. */
#define SYNC_DELAY_MS "2"

/* Start @p argv with its output appended to @p log_path; with @p sync_log,
 * FLASH_TEST_SYNC_LOG=sync_log and FLASH_TEST_SYNC_DELAY_MS=SYNC_DELAY_MS in
 * its environment. */
static pid_t spawn(char *const argv[], const char *log_path, const char *sync_log)
{
	pid_t p = fork();
	if (p == 0) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		if (sync_log) {
			setenv("FLASH_TEST_SYNC_LOG", sync_log, 1);
			setenv("FLASH_TEST_SYNC_DELAY_MS", SYNC_DELAY_MS, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return p;
}

static void box_start_serve(struct box *b)
{
	/* The box's applier takes one URL; a node still joining answers 1047
	 * (retried by the applier: test_galera_applier) and the box's orders
	 * reach its database only once the node is back.  So a box (re)starts
	 * with its database through a node that is up; Galera has the database
	 * on every node and the applier's applied LSN travels with it. */
	box_db_url_on(b, node_up((b->id - 1) % g_nnodes), b->db_url, sizeof b->db_url);
	char log[800], boxid[16], lmin[16], lmax[16], lead[16], hb[16];
	snprintf(log, sizeof log, "%s/serve.log", b->dir);
	snprintf(boxid, sizeof boxid, "%d", b->id);
	snprintf(lmin, sizeof lmin, "%u", g_cfg.lease_min);
	snprintf(lmax, sizeof lmax, "%u", g_cfg.lease_max);
	snprintf(lead, sizeof lead, "%u", g_cfg.lease_lead_ms);
	snprintf(hb, sizeof hb, "%u", g_cfg.heartbeat_s);
	char *sargv[] = { (char *)g_bin, "serve", "--name", b->seg, "--wal", b->wal, "--mysql", b->db_url,
	                  "--lease", g_urls, "--box-id", boxid, "--lease-min", lmin, "--lease-max", lmax,
	                  "--lease-lead-ms", lead, "--heartbeat-s", hb, "--backstop", b->bs_urls,
	                  "--reconcile-every", "0", "--log-level", "warn", NULL };
	char *split_argv[] = { (char *)g_bin, "serve", "--name", b->seg, "--wal", b->wal, "--mysql", b->db_url,
	                       "--box-id", boxid, "--backstop", b->bs_urls, "--reconcile-every", "0",
	                       "--log-level", "warn", NULL };
	/* a sync log of this daemon's own: a power cut reads only the log of
	 * the daemon it kills (lease_testutil.h says why) */
	if (lt_synclog_fresh(b->synclog) != 0) {
		say("box %d: its sync log %s could not be emptied", b->id, b->synclog);
		g_fail = 1;
	}
	b->serve_pid = spawn(g_cfg.split ? split_argv : sargv, log, b->synclog);
	b->up = 1;
}

/* A daemon that has exited on its own is a failure of the proof. */
static void serve_watch(void)
{
	for (int i = 0; i < g_cfg.boxes; i++) {
		struct box *b = &g_box[i];
		int st;
		if (b->serve_pid > 0 && waitpid(b->serve_pid, &st, WNOHANG) == b->serve_pid) {
			say("box %d: its daemon exited by itself (status %d; see %s/serve.log)", b->id,
			    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), b->dir);
			b->serve_pid = 0;
			g_fail = 1;
		}
	}
}

static void box_start_buyers(struct box *b)
{
	for (int j = 0; j < g_cfg.buyers; j++) {
		char bi[16], nb[16], jj[16], us[32], pace[16], acked[800], blog[800];
		snprintf(bi, sizeof bi, "%d", b->id - 1);
		snprintf(nb, sizeof nb, "%d", g_cfg.boxes);
		snprintf(jj, sizeof jj, "%d", j);
		snprintf(us, sizeof us, "%" PRIu64, g_cfg.users);
		snprintf(pace, sizeof pace, "%u", g_cfg.pace_us);
		snprintf(acked, sizeof acked, "%s/acked.%d", b->dir, j);
		snprintf(blog, sizeof blog, "%s/buyer.log", b->dir);
		char bj[16];
		snprintf(bj, sizeof bj, "%d", g_cfg.buyers);
		char *bargv[] = { g_self, "--buyer", b->seg, bi, nb, jj, bj, us, pace, acked, g_shm_path, NULL };
		b->buyer_pid[j] = spawn(bargv, blog, NULL);
	}
}

static void box_start(struct box *b)
{
	box_start_serve(b);
	box_start_buyers(b);
}

static void reap(pid_t p)
{
	if (p > 0)
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
}

static void box_kill(struct box *b)
{
	for (int j = 0; j < g_cfg.buyers; j++)
		if (b->buyer_pid[j] > 0)
			kill(b->buyer_pid[j], SIGKILL);
	if (b->serve_pid > 0)
		kill(b->serve_pid, SIGKILL);
	for (int j = 0; j < g_cfg.buyers; j++) {
		reap(b->buyer_pid[j]);
		b->buyer_pid[j] = 0;
	}
	reap(b->serve_pid);
	b->serve_pid = 0;
	b->up = 0;
	b->down_since_ms = now_ms();
}

/* The options every box's segment is created with (and created again
 * with after a power cut). */
static void box_seg_opts(struct flash_seg_opts *so)
{
	flash_seg_opts_default(so);
	so->max_orders = (uint32_t)(g_cfg.users + 4096);
	so->max_users = (uint32_t)(g_cfg.users + 4096);
	so->max_procs = 64;
	so->durability = FLASH_DURABILITY_SYNC;
}

static uint64_t box_available(struct box *b);

/*
 * Wait, at most @p max_ms, until the last line of box @p b's sync log is a
 * write to one of its WAL files: its daemon has written to its WAL and its
 * fdatasync has not returned -- the moment a power cut takes something.
 * @return 1 seen, 0 not within @p max_ms (or the log unreadable).
 */
static int box_wal_unsynced_wait(struct box *b, int max_ms)
{
	struct { uintmax_t dev, ino; } wal[64];
	size_t nwal = 0;
	DIR *d = opendir(b->wal);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL && nwal < sizeof wal / sizeof wal[0]) {
		char p[1024];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", b->wal, e->d_name);
		if (!strncmp(e->d_name, "wal-", 4) && strstr(e->d_name, ".log") && stat(p, &st) == 0) {
			wal[nwal].dev = (uintmax_t)st.st_dev;
			wal[nwal].ino = (uintmax_t)st.st_ino;
			nwal++;
		}
	}
	if (d)
		closedir(d);
	int fd = open(b->synclog, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int seen = 0;
	for (int64_t t0 = now_ms(); !seen && now_ms() - t0 < max_ms;) {
		struct stat st;
		char buf[257];
		off_t at = fstat(fd, &st) == 0 && st.st_size > 256 ? st.st_size - 256 : 0;
		ssize_t n = pread(fd, buf, 256, at);
		if (n > 1 && buf[n - 1] == '\n') {
			buf[n - 1] = '\0';
			char *line = strrchr(buf, '\n');
			uintmax_t dev, ino;
			intmax_t off, end;
			if (sscanf(line ? line + 1 : buf, "write %ju %ju %jd %jd", &dev, &ino, &off, &end) == 4)
				for (size_t k = 0; k < nwal; k++)
					if (wal[k].dev == dev && wal[k].ino == ino)
						seen = 1;
		}
		if (!seen)
			usleep(200);
	}
	close(fd);
	return seen;
}

/*
 * The power fails under box @p b: its daemon and its buyers are SIGKILLed
 * (box_kill) -- when the daemon has a WAL write awaiting its fdatasync if
 * that comes within 3 s; of its WAL, what the daemon wrote after its last
 * fdatasync is dropped (its sync log); /dev/shm goes with the power, so its
 * segment is destroyed and created again with the options it was created
 * with, then `serve --recover --once` rebuilds it from the WAL (the
 * activity, the sku and every durable order, restock and cancel; nothing
 * of MariaDB: the next daemon applies).  The box is then restarted as a
 * killed box is.  Every order a buyer saw acknowledged was durable before
 * the acknowledgement (sync durability), so none is lost.
 * @return 0; -1 when a step failed (said).
 */
static int box_power_cut(struct box *b)
{
	int caught = box_wal_unsynced_wait(b, 3000);
	if (b->serve_pid > 0)
		kill(b->serve_pid, SIGKILL);    /* first: the moment counts */
	if (b->up)
		box_kill(b);
	uint64_t held = box_available(b);
	long dropped = lt_drop_unsynced(b->synclog, b->wal);
	if (b->ro) {
		flash_close(b->ro);
		b->ro = NULL;
	}
	struct flash_seg_opts so;
	box_seg_opts(&so);
	int rd = flash_seg_destroy(b->seg);
	int rc = flash_seg_create(b->seg, &so);
	int rr = dropped < 0 || rd != FLASH_OK || rc != FLASH_OK ? -1 :
	         sh("%s serve --recover --once --no-snapshot --reconcile-every 0 --name %s --wal %s"
	            " --log-level warn >>%s/serve.log 2>&1", g_bin, b->seg, b->wal, b->dir);
	uint64_t rebuilt = rr == 0 ? box_available(b) : 0;
	say("box %d: power cut (daemon and buyers SIGKILLed%s) holding %" PRIu64 " units; %ld WAL bytes"
	    " after its last fdatasync dropped, its segment lost (destroy %s, create %s) and rebuilt from its"
	    " WAL (%s): %" PRIu64 " units", b->id,
	    caught ? " as a WAL write awaited its fdatasync" : "; no WAL write awaited its fdatasync in 3 s",
	    held, dropped, rd == FLASH_OK ? "ok" : flash_strerror(rd), rc == FLASH_OK ? "ok" : flash_strerror(rc),
	    rr == 0 ? "ok" : "FAILED", rebuilt);
	if (dropped < 0 || rd != FLASH_OK || rc != FLASH_OK || rr != 0)
		return -1;
	box_start(b);
	say("box %d restarted on its rebuilt segment and WAL", b->id);
	return 0;
}

/* ---- the sampler: undersell and stranded units ---- */

struct fig {
	uint64_t undersell_refusals;      /* refused while units were elsewhere */
	uint64_t refusals;                /* all SOLD_OUT answers */
	uint64_t elsewhere_max_pool_empty;/* largest stock of other live boxes when a box refused
	                                     buyers while the pool was empty */
	uint64_t stranded_max;            /* largest stock held by dead boxes */
	int64_t  stranded_ms_max;         /* longest time a dead box held units */
	uint64_t samples;
	uint64_t last_soldout[MAX_BOXES];
};

static struct fig g_fig;

static uint64_t box_available(struct box *b)
{
	struct flash_sku_info si;
	if (!b->ro && flash_open(b->seg, FLASH_RDONLY, &b->ro) != FLASH_OK)
		return 0;
	if (flash_sku_get(b->ro, ACT, SKU, &si) != FLASH_OK)
		return 0;
	return si.available;
}

static void sample(void)
{
	int64_t pool = g_cfg.split ? 0 : q1(NULL, "SELECT unleased FROM fs_pool WHERE activity_id = %u AND"
	                                    " sku_id = %u", ACT, SKU);
	uint64_t avail[MAX_BOXES], live_sum = 0, dead_sum = 0;
	for (int i = 0; i < g_cfg.boxes; i++) {
		avail[i] = box_available(&g_box[i]);
		if (g_box[i].up)
			live_sum += avail[i];
		else if (!g_box[i].fenced) {
			dead_sum += avail[i];
			if (avail[i] > 0 && now_ms() - g_box[i].down_since_ms > g_fig.stranded_ms_max)
				g_fig.stranded_ms_max = now_ms() - g_box[i].down_since_ms;
		}
	}
	if (dead_sum > g_fig.stranded_max)
		g_fig.stranded_max = dead_sum;
	for (int i = 0; i < g_cfg.boxes; i++) {
		uint64_t so = __atomic_load_n(&g_sh->soldout[i], __ATOMIC_RELAXED);
		uint64_t d = so - g_fig.last_soldout[i];
		g_fig.last_soldout[i] = so;
		g_fig.refusals += d;
		uint64_t elsewhere = live_sum - (g_box[i].up ? avail[i] : 0);
		if (d && ((pool > 0) || elsewhere > 0))
			g_fig.undersell_refusals += d;
		if (d && pool == 0 && elsewhere > g_fig.elsewhere_max_pool_empty)
			g_fig.elsewhere_max_pool_empty = elsewhere;
	}
	g_fig.samples++;
}

/* ---- the checks ---- */

struct ack {
	uint64_t order_no, user;
};

static int ack_cmp(const void *a, const void *b)
{
	const struct ack *x = a, *y = b;
	return x->order_no < y->order_no ? -1 : x->order_no > y->order_no;
}

static struct ack *acks_read(struct box *b, size_t *n)
{
	size_t cap = 1024;
	struct ack *v = malloc(cap * sizeof *v);
	*n = 0;
	for (int j = 0; j < g_cfg.buyers; j++) {
		char p[800];
		snprintf(p, sizeof p, "%s/acked.%d", b->dir, j);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		unsigned long long o, u;
		while (fscanf(f, "%llu %llu", &o, &u) == 2) {
			if (*n == cap)
				v = realloc(v, (cap *= 2) * sizeof *v);
			v[(*n)++] = (struct ack){ o, u };
		}
		fclose(f);
	}
	qsort(v, *n, sizeof *v, ack_cmp);
	return v;
}

static MYSQL *box_db(struct box *b, mdb_t **m)
{
	struct mdb_opts o = { .url = b->db_url, .no_schema = 1, .connect_timeout_s = 2,
	                              .log_level = PLOG_ERROR };
	if (mdb_open(&o, m) != FLASH_OK)
		return NULL;
	return mdb_conn(*m);
}

static void checks(void)
{
	uint64_t sold_all = 0, acked_all = 0, missing = 0, twice = 0, avail_all = 0, active_all = 0;
	int64_t over_limit = 0;
	for (int i = 0; i < g_cfg.boxes; i++) {
		struct box *b = &g_box[i];
		mdb_t *m = NULL;
		MYSQL *c = box_db(b, &m);
		if (!c) {
			check(0, "box database reachable", "box %d", b->id);
			continue;
		}
		int64_t sold = q1(c, "SELECT COALESCE(SUM(qty), 0) FROM orders WHERE status = 'ACTIVE'");
		int64_t active = q1(c, "SELECT COUNT(*) FROM orders WHERE status = 'ACTIVE'");
		int64_t applied = q1(c, "SELECT lsn FROM applied_lsn WHERE stream = 'wal'");
		struct flash_ident id;
		uint64_t wal_lsn = 0;
		if (b->ro && flash_ident_get(b->ro, &id) == FLASH_OK)
			wal_lsn = id.wal_lsn;
		check(applied >= 0 && (uint64_t)applied >= wal_lsn, "box database applied its WAL",
		      "box %d: applied LSN %" PRId64 ", WAL %" PRIu64, b->id, applied, wal_lsn);
		size_t na;
		struct ack *a = acks_read(b, &na);
		for (size_t k = 0; k < na; k++) {
			int64_t cnt = q1(c, "SELECT COUNT(*) FROM orders WHERE order_no = %" PRIu64 " AND user_id = %"
			                 PRIu64, a[k].order_no, a[k].user);
			if (cnt == 0)
				missing++;
			if (k && a[k].order_no == a[k - 1].order_no)
				twice++;
		}
		acked_all += na;
		free(a);
		uint64_t avail = box_available(b);
		int64_t ws = wal_sold(b->wal);
		check(ws == sold, "box WAL and database agree", "box %d: sold %" PRId64 " in its WAL, %" PRId64
		      " in its database", b->id, ws, sold);
		say("box %d: sold %" PRId64 " (%" PRId64 " active orders), %" PRIu64 " acknowledged to buyers,"
		    " %" PRIu64 " units in its segment; attempts %" PRIu64 ", sold-out answers %" PRIu64
		    ", fate unknown %" PRIu64 ", other errors %" PRIu64,
		    b->id, sold, active, (uint64_t)na, avail, g_sh->attempts[i], g_sh->soldout[i],
		    g_sh->fate_unknown[i], g_sh->other_err[i]);
		if (!g_cfg.split) {
			int64_t lnet = q1(NULL, "SELECT COALESCE(SUM(units - returned), 0) FROM fs_lease WHERE box_id = %d",
			                  b->id);
			int64_t lsold = q1(NULL, "SELECT COALESCE(SUM(sold_at_close), 0) FROM fs_lease WHERE box_id = %d",
			                   b->id);
			int64_t nl = q1(NULL, "SELECT COUNT(*) FROM fs_lease WHERE box_id = %d", b->id);
			check(lnet == sold + (int64_t)avail, "box leases = sold + held",
			      "box %d: %" PRId64 " leases, net of returns %" PRId64 " units, sold at close %" PRId64
			      ", sold %" PRId64 ", held %" PRIu64, b->id, nl, lnet, lsold, sold, avail);
		}
		sold_all += sold > 0 ? (uint64_t)sold : 0;
		active_all += active > 0 ? (uint64_t)active : 0;
		avail_all += avail;
		mdb_close(m);
	}
	/* users over the limit, over every box's database (they share the cluster) */
	{
		char sql[4096];
		size_t k = 0;
		k += (size_t)snprintf(sql + k, sizeof sql - k, "SELECT COUNT(*) FROM (SELECT user_id FROM (");
		for (int i = 0; i < g_cfg.boxes; i++)
			k += (size_t)snprintf(sql + k, sizeof sql - k, "%sSELECT user_id FROM flash_box%d.orders WHERE"
			                      " status = 'ACTIVE' AND activity_id = %u", i ? " UNION ALL " : "",
			                      g_box[i].id, ACT);
		snprintf(sql + k, sizeof sql - k, ") o GROUP BY user_id HAVING COUNT(*) > 1) x");
		over_limit = q1(NULL, "%s", sql);
	}
	int64_t total, pool, leased_net, open_leases;
	if (g_cfg.split) {
		total = leased_net = (int64_t)g_cfg.total;
		pool = open_leases = 0;
	} else {
	total = q1(NULL, "SELECT total FROM fs_pool WHERE activity_id = %u AND sku_id = %u", ACT, SKU);
	pool = q1(NULL, "SELECT unleased FROM fs_pool WHERE activity_id = %u AND sku_id = %u", ACT, SKU);
	leased_net = q1(NULL, "SELECT COALESCE(SUM(units - returned), 0) FROM fs_lease WHERE"
	                        " activity_id = %u AND sku_id = %u", ACT, SKU);
	open_leases = q1(NULL, "SELECT COUNT(*) FROM fs_lease WHERE state = 'open'");
	}
	int64_t conflicts = q1(NULL, "SELECT COUNT(*) FROM fs_backstop");
	int64_t conflicts_open = q1(NULL, "SELECT COUNT(*) FROM fs_backstop WHERE cancelled = 0");
	int64_t central_over = q1(NULL, "SELECT COUNT(*) FROM (SELECT user_id FROM fs_user_limit WHERE"
	                          " active_key = 1 GROUP BY activity_id, user_id HAVING COUNT(*) > 1) x");
	say("central: total %" PRId64 ", pool %" PRId64 ", leased net of returns %" PRId64 ", open leases %"
	    PRId64 ", backstop refusals %" PRId64, total, pool, leased_net, open_leases, conflicts);

	check(total == (int64_t)g_cfg.total, "pool total as loaded", "%" PRId64 " = %" PRIu64, total, g_cfg.total);
	check(sold_all <= (uint64_t)total, "sold over all boxes <= total", "%" PRIu64 " <= %" PRId64, sold_all,
	      total);
	check(missing == 0 && twice == 0, "acknowledged orders in MariaDB once",
	      "%" PRIu64 " acknowledged, %" PRIu64 " missing, %" PRIu64 " twice", acked_all, missing, twice);
	check(over_limit == 0 && central_over == 0 && active_all == sold_all, "no user over the limit",
	      "%" PRId64 " users over it in the boxes' databases, %" PRId64 " in fs_user_limit (limit 1; %"
	      PRIu64 " active orders = units sold)", over_limit, central_over, active_all);
	check(conflicts >= 0 && conflicts_open == 0, "second orders cancelled, none kept",
	      "%" PRId64 " refused by the backstop, %" PRId64 " not yet cancelled", conflicts, conflicts_open);
	check(pool >= 0 && sold_all + avail_all + (uint64_t)pool == (uint64_t)total,
	      "sold + live leases + pool = total", "%" PRIu64 " + %" PRIu64 " + %" PRId64 " = %" PRIu64
	      " (total %" PRId64 ")", sold_all, avail_all, pool, sold_all + avail_all + (uint64_t)pool, total);
	int64_t stranded = leased_net - (int64_t)sold_all - (int64_t)avail_all;
	check(stranded == 0 && open_leases == 0, "stranded after reclaim = 0",
	      "leased net of returns %" PRId64 " - sold %" PRIu64 " - held %" PRIu64 " = %" PRId64
	      "; open leases %" PRId64, leased_net, sold_all, avail_all, stranded, open_leases);
	uint64_t bound = (uint64_t)(g_cfg.boxes - 1) * 2u * g_cfg.lease_max;
	check(g_cfg.split || g_fig.elsewhere_max_pool_empty <= bound,
	      g_cfg.split ? "undersell (hand split: no bound)" : "undersell within its bound",
	      "%" PRIu64 " of %" PRIu64 " sold-out answers came while units were in the pool or another live"
	      " box; when a box refused buyers while the pool was empty, at most %" PRIu64 " units sat in other"
	      " boxes (bound (boxes-1) x"
	      " 2 x lease-max = %" PRIu64 "); unsold at the end %" PRId64 " of %" PRId64, g_fig.undersell_refusals,
	      g_fig.refusals, g_fig.elsewhere_max_pool_empty, bound, total - (int64_t)sold_all, total);
	say("stranded in dead boxes: at most %" PRIu64 " units, for at most %.1f s (until the box came back "
	    "or its units were reclaimed); %" PRIu64 " samples", g_fig.stranded_max,
	    (double)g_fig.stranded_ms_max / 1000.0, g_fig.samples);
}

/* ---- the run ---- */

struct event {
	uint32_t at_ms;
	int      kind;            /* 1 kill box, 2 restart box, 3 kill node, 4 restart node,
	                             5 kill + fence + reclaim box, 6 restart (stale epoch),
	                             7 power cut of a box (it restarts at once) */
	int      arg;
};

static pid_t g_node_restart_pid;
static int g_node_restart_arg;

/* Wait for a node restart started by an event; its result into g_fail. */
static void node_restart_wait(void)
{
	if (g_node_restart_pid <= 0)
		return;
	int st = 0;
	while (waitpid(g_node_restart_pid, &st, 0) < 0 && errno == EINTR)
		;
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	g_node_down[g_node_restart_arg - 1] = 0;
	say("Galera node %d rejoined and Synced: %s", g_node_restart_arg, ok ? "ok" : "FAILED");
	if (!ok)
		g_fail = 1;
	g_node_restart_pid = 0;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

static void run_event(const struct event *e)
{
	struct box *b = e->kind == 3 || e->kind == 4 ? NULL : &g_box[e->arg];
	switch (e->kind) {
	case 1:
		if (!b->up)
			break;
		box_kill(b);
		say("box %d killed (buyers and daemon, SIGKILL), holding %" PRIu64 " units", b->id,
		    box_available(b));
		break;
	case 2:
		if (b->up)
			break;
		box_start(b);
		say("box %d restarted on its segment and WAL", b->id);
		break;
	case 3: {
		node_restart_wait();
		int rc = sh("sh %s kill %s %d", g_galera, g_gdir, e->arg);
		g_node_down[e->arg - 1] = 1;
		say("Galera node %d killed (SIGKILL): %s", e->arg, rc == 0 ? "ok" : "FAILED");
		break;
	}
	case 4: {
		/* in the background: the boxes keep selling (and the chaos goes on)
		 * while the node rejoins; its outcome is read at the end */
		g_node_restart_pid = fork();
		if (g_node_restart_pid == 0)
			_exit(sh("sh %s restart %s %d", g_galera, g_gdir, e->arg) == 0 ? 0 : 1);
		g_node_restart_arg = e->arg;
		say("Galera node %d restarting (IST/SST) in the background", e->arg);
		break;
	}
	case 5: {
		if (b->up)
			box_kill(b);
		if (g_cfg.split) {
			say("box %d killed holding %" PRIu64 " units (no leases: they wait for its restart)", b->id,
			    box_available(b));
			break;
		}
		uint64_t held = box_available(b);
		int rf = lease_fence(b->id);
		int64_t back = -1;
		int rr = lease_reclaim(b, &back);
		say("box %d killed holding %" PRIu64 " units, fenced (%s), its unsold units reclaimed from its WAL (%s)",
		    b->id, held, rf == 0 ? "ok" : "FAILED", rr == 0 ? "ok" : "FAILED");
		if (rf || rr)
			g_fail = 1;
		b->fenced = 1;
		break;
	}
	case 7: {
		/* the box named, or the next one that is up: a box that is down
		 * (killed, or fenced) waits for its own restart event */
		for (int k = 0; k < g_cfg.boxes && !b->up; k++)
			b = &g_box[(e->arg + k) % g_cfg.boxes];
		if (!b->up) {
			say("no box is up: no power cut");
			break;
		}
		if (box_power_cut(b) != 0)
			g_fail = 1;
		break;
	}
	case 6: {
		if (b->up)
			break;
		if (g_cfg.split) {
			box_start(b);
			b->fenced = 0;
			say("box %d restarted, buyers at once", b->id);
			break;
		}
		/* Buyers at once, with the daemon: no health check holds them
		 * back.  Nothing of the reclaimed leases can be sold -- the reclaim
		 * took their stock out of the segment, and the agent drains it
		 * before it registers -- so sold <= total must hold whatever the
		 * timing (issue 14).  The box must still register anew. */
		int64_t fenced_epoch = q1(NULL, "SELECT epoch FROM fs_box WHERE box_id = %d", b->id);
		uint64_t at_start = box_available(b);
		box_start(b);
		int64_t t0 = now_ms();
		int live = 0;
		while (now_ms() - t0 < 30000 && !live) {
			live = q1(NULL, "SELECT COUNT(*) FROM fs_box WHERE box_id = %d AND state = 'live' AND epoch > %"
			          PRId64, b->id, fenced_epoch) == 1;
			if (!live)
				sleep_ms(20);
		}
		b->fenced = 0;
		say("box %d restarted with its stale epoch and its buyers at once (%" PRIu64 " units in its segment"
		    " before); registered anew after %.2f s (%s)", b->id, at_start,
		    (double)(now_ms() - t0) / 1000.0, live ? "ok" : "NOT within 30 s");
		if (!live)
			g_fail = 1;
		break;
	}
	}
}

static int cfg_parse(int argc, char **argv)
{
	memset(&g_cfg, 0, sizeof g_cfg);
	g_cfg.boxes = 3;
	g_cfg.buyers = 2;
	g_cfg.total = 1500;
	g_cfg.sale_s = 32;
	g_cfg.lease_min = 10;
	g_cfg.lease_max = 60;
	g_cfg.lease_lead_ms = 500;
	g_cfg.heartbeat_s = 1;
	g_cfg.seed = 14;
	g_cfg.random_kills = 2;
	g_cfg.random_cuts = 0;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bin") && i + 1 < argc)
			g_bin = argv[++i];
		else if (!strcmp(argv[i], "--galera") && i + 1 < argc)
			g_galera = argv[++i];
		else if (!strcmp(argv[i], "--eager-rejoin"))
			;       /* the default now: a fenced box's buyers start with its daemon */
		else if (!strcmp(argv[i], "--split"))
			g_cfg.split = 1;
		else if (!strcmp(argv[i], "--long"))
			g_cfg.long_run = 1;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			g_cfg.seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else {
			fprintf(stderr, "usage: lease_proof --bin FLASHSTOCK --galera GALERA_SH [--long] [--seed S]"
			        " [--keep DIR] [--split] [--eager-rejoin]\n");
			return -1;
		}
	}
	if (!g_bin || !g_galera) {
		fprintf(stderr, "lease_proof: --bin and --galera are required\n");
		return -1;
	}
	if (g_cfg.long_run) {
		g_cfg.total = 20000;
		g_cfg.sale_s = 240;
		g_cfg.buyers = 3;
		g_cfg.lease_max = 200;
		g_cfg.random_kills = 12;
		g_cfg.random_cuts = 4;
	}
	g_cfg.users = g_cfg.total * 3;
	/* pace the buyers so that the stock lasts through the chaos: 1.4
	 * attempts per unit over the window (users: three per unit) */
	uint64_t attempts = 14 * g_cfg.total / 10;
	uint64_t per_buyer_s = attempts / ((uint64_t)g_cfg.sale_s * (uint64_t)(g_cfg.boxes * g_cfg.buyers)) + 1;
	g_cfg.pace_us = (uint32_t)(1000000u / per_buyer_s);
	if (keep) {
		snprintf(g_base, sizeof g_base, "%s", keep);
		g_keep = 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--buyer"))
		return buyer_main(argc, argv);
	if (cfg_parse(argc, argv) != 0)
		return 2;
	g_t0_ms = now_ms();
	signal(SIGPIPE, SIG_IGN);
	ssize_t sl = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
	if (sl <= 0)
		return 2;
	g_self[sl] = 0;
	if (!g_base[0]) {
		snprintf(g_base, sizeof g_base, "/tmp/lease_proof.XXXXXX");
		if (!mkdtemp(g_base))
			return 2;
	} else {
		mkdir(g_base, 0700);
	}
	/* the cluster's nodes run as a user of their own (galera.sh): it must
	 * reach its directory under ours; the box directories stay private */
	chmod(g_base, 0711);
	say("lease proof%s: %d boxes x %d buyers, %" PRIu64 " units for %" PRIu64 " users (demand %.1fx), sale"
	    " %u s, lease %u..%u units, lead %u ms, seed %" PRIu64 "; logs in %s (removed if every check holds)",
	    g_cfg.long_run ? " (long run)" : "",
	    g_cfg.boxes, g_cfg.buyers, g_cfg.total, g_cfg.users, (double)g_cfg.users / (double)g_cfg.total,
	    g_cfg.sale_s, g_cfg.lease_min, g_cfg.lease_max, g_cfg.lease_lead_ms, g_cfg.seed, g_base);

	/* shared counters in a file the buyers map */
	snprintf(g_shm_path, sizeof g_shm_path, "%s/counters", g_base);
	int sfd = open(g_shm_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (sfd < 0 || ftruncate(sfd, sizeof *g_sh) != 0)
		return 2;
	g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	close(sfd);
	if (g_sh == MAP_FAILED)
		return 2;

	/* 1. the cluster */
	snprintf(g_gdir, sizeof g_gdir, "%s/galera", g_base);
	char own[32];
	snprintf(own, sizeof own, "%d", (int)getpid());
	setenv("FLASH_GALERA_OWNER", own, 1);
	if (sh("sh %s start %s 3", g_galera, g_gdir) != 0) {
		say("the Galera cluster did not start (see %s/commands.log)", g_base);
		(void)sh("sh %s stop %s", g_galera, g_gdir);
		return 1;
	}
	{
		char p[700];
		snprintf(p, sizeof p, "%s/urls", g_gdir);
		FILE *f = fopen(p, "r");
		if (!f)
			return 1;
		char line[1024];
		while (g_nnodes < MAX_NODES && fgets(line, sizeof line, f)) {
			line[strcspn(line, "\r\n")] = 0;
			if (!line[0])
				continue;
			snprintf(g_node_url[g_nnodes++], sizeof g_node_url[0], "%s", line);
			size_t k = strlen(g_urls);
			snprintf(g_urls + k, sizeof g_urls - k, "%s%s", k ? "," : "", line);
		}
		fclose(f);
	}
	say("Galera cluster of %d nodes is Synced", g_nnodes);
	g_have_cli = sh("%s lease --help", g_bin) == 0;
	int rc_lp = lease_init_pool();
	say("lease init and a pool of %" PRIu64 " units (%s): %s", g_cfg.total,
	    g_have_cli ? "flashstock lease" : "central.h", rc_lp ? "FAILED" : "ok");
	if (rc_lp) {
		g_fail = 1;
		goto stop_cluster;
	}

	/* 2. the boxes */
	int64_t now_real;
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		now_real = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	}
	int64_t sale_end_ns = now_real + (int64_t)(g_cfg.sale_s + 3) * 1000000000LL;
	for (int i = 0; i < g_cfg.boxes; i++) {
		struct box *b = &g_box[i];
		b->id = i + 1;
		snprintf(b->seg, sizeof b->seg, "/fs-proof-%d-%d", (int)getpid(), b->id);
		snprintf(b->dir, sizeof b->dir, "%s/box%d", g_base, b->id);
		snprintf(b->wal, sizeof b->wal, "%s/box%d/wal", g_base, b->id);   /* b->dir + "/wal" */
		snprintf(b->synclog, sizeof b->synclog, "%s/box%d/sync.log", g_base, b->id);
		mkdir(b->dir, 0700);
		/* the box's own database, on node (box mod nodes) + 1 */
		box_db_url_on(b, i % g_nnodes, b->db_url, sizeof b->db_url);
		for (int k = 0; k < g_nnodes; k++) {
			size_t l = strlen(b->bs_urls);
			snprintf(b->bs_urls + l, sizeof b->bs_urls - l, "%s%s", k ? "," : "",
			         g_node_url[(i + k) % g_nnodes]);
		}
		struct flash_seg_opts so;
		box_seg_opts(&so);
		flash_t *h;
		struct flash_activity a = { .id = ACT, .limit_per_user = 1, .max_qty = 1,
		                            .scope = FLASH_SCOPE_ACTIVITY, .start_ns = now_real - 1000000000LL,
		                            .end_ns = sale_end_ns };
		uint64_t owned = g_cfg.split ? g_cfg.total / (uint64_t)g_cfg.boxes +
		                             (i == 0 ? g_cfg.total % (uint64_t)g_cfg.boxes : 0) : 0;
		if (flash_seg_create(b->seg, &so) != FLASH_OK || flash_open(b->seg, 0, &h) != FLASH_OK ||
		    flash_activity_add(h, &a) != FLASH_OK || flash_sku_add(h, ACT, SKU, owned, 1) != FLASH_OK) {
			say("box %d: segment %s could not be made", b->id, b->seg);
			g_fail = 1;
			goto stop_boxes;
		}
		flash_close(h);
	}
	for (int i = 0; i < g_cfg.boxes; i++)
		box_start(&g_box[i]);
	say("%d boxes serving, buyers buying (each %u us apart)", g_cfg.boxes, g_cfg.pace_us);

	/* 3. the chaos */
	struct event ev[64];
	int nev = 0;
	uint32_t S = g_cfg.sale_s * 1000u;
	ev[nev++] = (struct event){ S * 12 / 100, 1, 1 };       /* box 2 dies ... */
	ev[nev++] = (struct event){ S * 20 / 100, 2, 1 };       /* ... and comes back */
	ev[nev++] = (struct event){ S * 24 / 100, 7, 0 };       /* box 1: the power fails */
	ev[nev++] = (struct event){ S * 28 / 100, 3, 3 };       /* node 3 dies ... */
	ev[nev++] = (struct event){ S * 45 / 100, 4, 3 };       /* ... and rejoins */
	ev[nev++] = (struct event){ S * 50 / 100, 5, 2 };       /* box 3: killed, fenced, reclaimed ... */
	ev[nev++] = (struct event){ S * 62 / 100, 6, 2 };       /* ... rejoins with its stale epoch */
	uint64_t rs = g_cfg.seed;
	for (int k = 0; k < g_cfg.random_kills && nev < 60; k++) {
		uint32_t at = (uint32_t)(S * 65 / 100 + splitmix(&rs) % (S * 25 / 100));
		int bx = (int)(splitmix(&rs) % (uint64_t)g_cfg.boxes);
		ev[nev++] = (struct event){ at, 1, bx };
		ev[nev++] = (struct event){ at + 1500 + (uint32_t)(splitmix(&rs) % 2000), 2, bx };
	}
	if (g_cfg.long_run && nev < 62) {
		ev[nev++] = (struct event){ S * 70 / 100, 3, 1 };
		ev[nev++] = (struct event){ S * 80 / 100, 4, 1 };
	}
	/* drawn after the kills: a seed's kills stay where they were */
	for (int k = 0; k < g_cfg.random_cuts && nev < 64; k++) {
		uint32_t at = (uint32_t)(S * 15 / 100 + splitmix(&rs) % (S * 75 / 100));
		ev[nev++] = (struct event){ at, 7, (int)(splitmix(&rs) % (uint64_t)g_cfg.boxes) };
	}
	qsort(ev, (size_t)nev, sizeof ev[0], ev_cmp);
	int64_t start = now_ms();
	int next = 0;
	while (now_ms() - start < (int64_t)S + 3000) {
		while (next < nev && now_ms() - start >= ev[next].at_ms)
			run_event(&ev[next++]);
		sample();
		serve_watch();
		sleep_ms(20);
	}
	while (next < nev)
		run_event(&ev[next++]);
	node_restart_wait();
	for (int i = 0; i < g_cfg.boxes; i++)
		if (!g_box[i].up)
			box_start(&g_box[i]);

	/* 4. the end: buyers see the window closed; the agents return units */
	say("the sale window closed; waiting for buyers and for the boxes to return their units");
	for (int i = 0; i < g_cfg.boxes; i++)
		for (int j = 0; j < g_cfg.buyers; j++) {
			reap(g_box[i].buyer_pid[j]);
			g_box[i].buyer_pid[j] = 0;
		}
	for (int w = 0; w < 600; w++) {
		uint64_t held = 0;
		for (int i = 0; i < g_cfg.boxes; i++)
			held += box_available(&g_box[i]);
		int64_t open_l = q1(NULL, "SELECT COUNT(*) FROM fs_lease WHERE state = 'open'");
		if (g_cfg.split || (held == 0 && open_l == 0))
			break;
		sleep_ms(100);
	}
	for (int i = 0; i < g_cfg.boxes; i++)
		if (g_box[i].serve_pid > 0)
			kill(g_box[i].serve_pid, SIGTERM);
	for (int i = 0; i < g_cfg.boxes; i++) {
		int st = 0;
		if (g_box[i].serve_pid > 0)
			while (waitpid(g_box[i].serve_pid, &st, 0) < 0 && errno == EINTR)
				;
		say("box %d stopped cleanly: %s", g_box[i].id,
		    WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "NO");
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			g_fail = 1;
		g_box[i].serve_pid = 0;
		g_box[i].up = 0;
	}
	if (g_have_cli)
		(void)sh("%s lease status --mysql '%s'", g_bin, g_urls);

	/* 5. the checks */
	checks();

stop_boxes:
	for (int i = 0; i < g_cfg.boxes; i++) {
		if (g_box[i].up)
			box_kill(&g_box[i]);
		if (g_box[i].ro)
			flash_close(g_box[i].ro);
		if (g_box[i].seg[0])
			flash_seg_destroy(g_box[i].seg);
	}
stop_cluster:
	for (int i = 0; i < MAX_NODES; i++)
		mdb_close(g_m[i]);
	central_close(g_central);
	(void)sh("sh %s stop %s", g_galera, g_gdir);
	say("%s", g_fail ? "PROOF FAILED" : "every check holds");
	if (!g_fail && !g_keep) {
		/* the logs stay only when something failed (or with --keep) */
		char rm[600];
		snprintf(rm, sizeof rm, "rm -rf '%s'", g_base);
		(void)system(rm);
	}
	return g_fail ? 1 : 0;
}
