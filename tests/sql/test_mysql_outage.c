/*
 * test_mysql_outage.c -- MariaDB stopped for a while in the middle of a
 * sale, through the real binaries, in async and in sync durability:
 *
 *   `flashstock create` -> `flashstock serve --mysql --metrics` ->
 *   `flashstock load` -> buyer processes order and cancel, each writing what
 *   was acknowledged to its own file -> the applier is seen applying ->
 *   MariaDB halted (tests/fixtures/mariadb.sh halt: data kept) -> orders go
 *   on being acknowledged while the applier reports MySQL gone and falls
 *   behind -> MariaDB resumed -> the applier reconnects and catches up ->
 *   buyers stop -> every record the buyers made is applied -> SIGTERM, exit 0
 *   -> `flashstock reconcile` over segment, WAL and MySQL exits 0 with 0
 *   differences -> every acknowledged order number is in MySQL exactly once,
 *   every acknowledged cancel is CANCELLED there, and MySQL holds no order
 *   nobody was told about.
 *
 * The server is the one the ctest fixture started (FLASH_MARIADB_DIR, with
 * RESOURCE_LOCK mariadb: no other MySQL test runs while it is halted).  Each
 * phase uses its own database, segment, WAL and directory.  Waits are on
 * conditions (acknowledgements counted, metrics read from the daemon), each
 * with a generous bound that only turns a hang into a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mysql.h>

#include "fixture_run.h"
#include "helpers.h"
#include "mysql_apply.h"
#include "wal.h"

#define BUYERS      2
#define WAIT_S      300       /* bound on any one wait: a hang becomes a failure */
#define STEP_ACKS   300       /* acknowledgements to see in each part of the run */
#define UNITS       10000000u /* per sku: the sale never sells out */

/* What a buyer writes after each acknowledgement. */
enum { E_ORDER = 1, E_CANCEL = 2 };
struct entry {
	uint64_t e_order_no;
	uint32_t e_kind;
	uint32_t e_outage;        /* 1: MySQL was down before and after the call */
};

/* Shared between the test and its buyers (MAP_SHARED). */
struct shared {
	int      sh_outage;       /* set after `halt` returned, cleared before `resume` */
	int      sh_stop;
	uint64_t sh_orders;       /* acknowledged */
	uint64_t sh_cancels;
	uint64_t sh_outage_orders;
	uint64_t sh_busy;         /* FLASH_EBUSY answers (ring full), retried */
	uint64_t sh_unexpected;   /* any other refusal: fails the test */
	int      sh_last_rc;
};

struct phase {
	int            sync;
	char           seg[64];
	char           db[64];
	char           dir[256];
	char           wal[300];
	char           log[300];
	char           url[512];
	pid_t          serve;
	uint16_t       port;
	pid_t          buyer[BUYERS];
	int            nbuyers;
	struct shared *sh;
	int            halted;
};

static struct phase g_ph;

static const char *env_or_die(const char *k)
{
	const char *v = getenv(k);
	if (!v || !*v) {
		fprintf(stderr, "%s is not set: run through ctest (mysql_server_start)\n", k);
		exit(1);
	}
	return v;
}

static int fixture(const char *cmd)
{
	return fixture_run(env_or_die("FLASH_TEST_MARIADB_SH"), cmd, env_or_die("FLASH_MARIADB_DIR"),
	                   NULL, 0);
}

/* Run `flashstock ARGS...` to completion, its output appended to the phase
 * log (or to @p out_path when given).  @return its exit status, -1 if killed. */
static int run_tool(const char *out_path, const char *const *argv)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out_path ? out_path : g_ph.log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		execv(env_or_die("FLASH_BIN"), (char *const *)argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t now_s(void)
{
	return (uint64_t)(t_now_ns() / 1000000000LL);
}

/* One sample of the daemon's metrics, UINT64_MAX if unreachable or absent. */
static uint64_t metric(const char *name)
{
	char *body = t_metrics_get(g_ph.port);
	uint64_t v = body ? t_metrics_sample(body, name) : UINT64_MAX;
	free(body);
	return v;
}

/* The port `serve --metrics 127.0.0.1:0` logged ("metrics on port N"). */
static uint16_t serve_port(void)
{
	uint64_t end = now_s() + WAIT_S;
	while (now_s() < end) {
		int st;
		if (waitpid(g_ph.serve, &st, WNOHANG) == g_ph.serve) {
			g_ph.serve = 0;
			fail_msg("serve exited at start (status %#x); see %s", st, g_ph.log);
		}
		FILE *f = fopen(g_ph.log, "r");
		char line[1024];
		unsigned port = 0;
		while (f && fgets(line, sizeof line, f)) {
			const char *p = strstr(line, "metrics on port ");
			if (p)
				port = (unsigned)strtoul(p + strlen("metrics on port "), NULL, 10);
		}
		if (f)
			fclose(f);
		if (port)
			return (uint16_t)port;
		t_sleep_ms(20);
	}
	fail_msg("serve never logged its metrics port; see %s", g_ph.log);
	return 0;
}

static void serve_start(void)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(g_ph.log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		execl(env_or_die("FLASH_BIN"), "flashstock", "serve", "--name", g_ph.seg, "--wal", g_ph.wal,
		      "--mysql", g_ph.url, "--metrics", "127.0.0.1:0", "--log-level", "info",
		      (char *)NULL);
		_exit(127);
	}
	g_ph.serve = pid;
	g_ph.port = serve_port();
}

/* ---- the buyer (a forked child; reports by its exit status) ------------- */

static void note(int fd, uint64_t no, uint32_t kind, uint32_t outage)
{
	struct entry e = { .e_order_no = no, .e_kind = kind, .e_outage = outage };
	if (write(fd, &e, sizeof e) != (ssize_t)sizeof e)
		_exit(3);
}

static void unexpected(struct shared *sh, int rc)
{
	__atomic_fetch_add(&sh->sh_unexpected, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->sh_last_rc, rc, __ATOMIC_RELAXED);
}

static int buyer(int i, void *arg)
{
	struct shared *sh = arg;
	char path[512];
	uint64_t mine[256];
	unsigned nmine = 0;
	flash_t *h;

	snprintf(path, sizeof path, "%s/buyer-%d.bin", g_ph.dir, i);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (fd < 0 || flash_open(g_ph.seg, 0, &h) != FLASH_OK)
		return 4;
	/* In sync durability an order waits for the WAL's fdatasync, at most
	 * the handle's bound (5 s by default), then answers
	 * FLASH_EFATE_UNKNOWN.  What this test bounds is the outage's effect,
	 * on every wait alike (WAIT_S): under ASan beside the kill loop and
	 * the crash enumerations the first sync orders once took longer than
	 * 5 s, and the run failed on that answer. */
	if (flash_sync_wait_set(h, WAIT_S * 1000u) != FLASH_OK)
		return 5;
	for (uint64_t k = 0; !__atomic_load_n(&sh->sh_stop, __ATOMIC_ACQUIRE); k++) {
		int down = __atomic_load_n(&sh->sh_outage, __ATOMIC_ACQUIRE);
		int rc;
		if (k % 16 == 15 && nmine > 0) {
			/* cancel one of this buyer's earlier orders */
			unsigned j = (unsigned)(k / 16) % nmine;
			uint64_t no = mine[j];
			uint32_t units = 0;
			mine[j] = mine[--nmine];
			rc = flash_cancel(h, no, &units);
			down &= __atomic_load_n(&sh->sh_outage, __ATOMIC_ACQUIRE);
			if (rc == FLASH_OK) {
				note(fd, no, E_CANCEL, (uint32_t)down);
				__atomic_fetch_add(&sh->sh_cancels, 1, __ATOMIC_RELAXED);
			} else if (rc == FLASH_EBUSY) {
				mine[nmine++] = no;      /* nothing done: the ring is full */
				__atomic_fetch_add(&sh->sh_busy, 1, __ATOMIC_RELAXED);
				t_sleep_ms(1);
			} else {
				unexpected(sh, rc);
			}
			continue;
		}
		struct flash_order_req r = {
			.activity_id = 1, .sku_id = 1 + (uint32_t)(k % 2),
			.user_id = 1 + (uint64_t)i * 100000000u + k, .qty = 1 + (uint32_t)(k % 3 == 0),
		};
		struct flash_order_res res;
		rc = flash_order(h, &r, &res);
		down &= __atomic_load_n(&sh->sh_outage, __ATOMIC_ACQUIRE);
		if (rc == FLASH_OK) {
			note(fd, res.order_no, E_ORDER, (uint32_t)down);
			__atomic_fetch_add(&sh->sh_orders, 1, __ATOMIC_RELAXED);
			if (down)
				__atomic_fetch_add(&sh->sh_outage_orders, 1, __ATOMIC_RELAXED);
			if (nmine < sizeof mine / sizeof mine[0])
				mine[nmine++] = res.order_no;
		} else if (rc == FLASH_EBUSY) {
			__atomic_fetch_add(&sh->sh_busy, 1, __ATOMIC_RELAXED);
			t_sleep_ms(1);
		} else {
			unexpected(sh, rc);
		}
		/* a paced buyer: the run's WAL stays small whatever the box's speed */
		usleep(300);
	}
	flash_close(h);
	close(fd);
	return 0;
}

/* ---- waits -------------------------------------------------------------- */

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Wait until *@p counter >= @p want (buyers keep acknowledging). */
static void wait_count(const uint64_t *counter, uint64_t want, const char *what)
{
	uint64_t end = now_s() + WAIT_S;
	while (ld(counter) < want) {
		if (now_s() >= end || ld(&g_ph.sh->sh_unexpected))
			fail_msg("%s: %" PRIu64 " of %" PRIu64 " (unexpected answers %" PRIu64 ", last %s)",
			         what, ld(counter), want, ld(&g_ph.sh->sh_unexpected),
			         flash_rcname(g_ph.sh->sh_last_rc));
		t_sleep_ms(10);
	}
}

/* Wait until metric @p name satisfies value >= @p lo (and <= @p hi). */
static uint64_t wait_metric(const char *name, uint64_t lo, uint64_t hi)
{
	uint64_t end = now_s() + WAIT_S, v;
	while ((v = metric(name)) < lo || v > hi) {
		if (now_s() >= end)
			fail_msg("metric %s = %" PRIu64 ", want %" PRIu64 "..%" PRIu64 "; see %s", name, v, lo,
			         hi, g_ph.log);
		t_sleep_ms(20);
	}
	return v;
}

/* ---- MySQL -------------------------------------------------------------- */

static mdb_t *db_open(void)
{
	struct mdb_opts o = { .url = g_ph.url, .log_level = PLOG_WARN };
	mdb_t *m = NULL;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	return m;
}

static uint64_t db_u64(mdb_t *m, const char *sql)
{
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	assert_int_equal(mysql_query(c, sql), 0);
	MYSQL_RES *r = mysql_store_result(c);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	assert_non_null(row);
	uint64_t v = row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- set-up and tear-down ----------------------------------------------- */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

static int phase_teardown(void **state)
{
	(void)state;
	if (g_ph.sh)
		__atomic_store_n(&g_ph.sh->sh_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < g_ph.nbuyers; i++)
		if (g_ph.buyer[i] > 0) {
			kill(g_ph.buyer[i], SIGKILL);
			waitpid(g_ph.buyer[i], NULL, 0);
		}
	g_ph.nbuyers = 0;
	if (g_ph.serve > 0) {
		kill(g_ph.serve, SIGKILL);
		waitpid(g_ph.serve, NULL, 0);
		g_ph.serve = 0;
	}
	/* the next test needs the server: resume is a no-op on a running one */
	if (g_ph.halted && fixture("resume") == 0)
		g_ph.halted = 0;
	if (g_ph.url[0]) {
		struct mdb_opts o = { .url = g_ph.url, .log_level = PLOG_ERROR };
		mdb_t *m = NULL;
		if (mdb_open(&o, &m) == FLASH_OK) {
			char sql[128];
			snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", g_ph.db);
			mysql_query(mdb_conn(m), sql);
		}
		mdb_close(m);
	}
	if (g_ph.seg[0])
		flash_seg_destroy(g_ph.seg);
	if (g_ph.dir[0])
		nftw(g_ph.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (g_ph.sh)
		t_shared_free(g_ph.sh, sizeof *g_ph.sh);
	memset(&g_ph, 0, sizeof g_ph);
	return 0;
}

static void phase_setup(int sync)
{
	const char *tmp = getenv("TMPDIR");
	const char *mode = sync ? "sync" : "async";
	memset(&g_ph, 0, sizeof g_ph);
	g_ph.sync = sync;
	snprintf(g_ph.seg, sizeof g_ph.seg, "/fs-outage-%d-%s", (int)getpid(), mode);
	snprintf(g_ph.db, sizeof g_ph.db, "fo_%d_%s", (int)getpid(), mode);
	snprintf(g_ph.dir, sizeof g_ph.dir, "%s/fs-outage-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(g_ph.dir));
	snprintf(g_ph.wal, sizeof g_ph.wal, "%s/wal", g_ph.dir);
	snprintf(g_ph.log, sizeof g_ph.log, "%s/serve.log", g_ph.dir);
	/* a fresh database per run: `serve` creates it only when asked */
	snprintf(g_ph.url, sizeof g_ph.url, "mysql://root@localhost/%s?socket=%s/mysqld.sock&create_db=1",
	         g_ph.db,
	         env_or_die("FLASH_MARIADB_DIR"));
	g_ph.sh = t_shared_alloc(sizeof *g_ph.sh);
	assert_non_null(g_ph.sh);
	memset(g_ph.sh, 0, sizeof *g_ph.sh);
	flash_seg_destroy(g_ph.seg);
}

/* ---- the run ------------------------------------------------------------ */

/* Every buyer file: acknowledged orders (sorted) and cancels. */
struct acked {
	uint64_t *orders, *cancels;
	size_t    norders, ncancels, outage_orders;
};

static void acked_read(struct acked *a)
{
	size_t cap_o = 0, cap_c = 0;
	memset(a, 0, sizeof *a);
	for (int i = 0; i < BUYERS; i++) {
		char path[512];
		struct entry e;
		snprintf(path, sizeof path, "%s/buyer-%d.bin", g_ph.dir, i);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		while (fread(&e, sizeof e, 1, f) == 1) {
			uint64_t **v = e.e_kind == E_ORDER ? &a->orders : &a->cancels;
			size_t *n = e.e_kind == E_ORDER ? &a->norders : &a->ncancels;
			size_t *cap = e.e_kind == E_ORDER ? &cap_o : &cap_c;
			assert_true(e.e_kind == E_ORDER || e.e_kind == E_CANCEL);
			if (*n == *cap) {
				*cap = *cap ? 2 * *cap : 4096;
				*v = realloc(*v, *cap * sizeof **v);
				assert_non_null(*v);
			}
			(*v)[(*n)++] = e.e_order_no;
			a->outage_orders += e.e_kind == E_ORDER && e.e_outage;
		}
		fclose(f);
	}
	/* qsort(3)'s array must not be NULL, even for no element */
	if (a->norders)
		qsort(a->orders, a->norders, sizeof *a->orders, cmp_u64);
	if (a->ncancels)
		qsort(a->cancels, a->ncancels, sizeof *a->cancels, cmp_u64);
}

/* The last LSN of the WAL, read back from its files. */
static uint64_t wal_last(void)
{
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(g_ph.wal, 0, NULL, NULL, 0, &rep), FLASH_OK);
	return rep.last_lsn;
}

static void outage_run(int sync)
{
	phase_setup(sync);
	const char *create[] = { "flashstock", "create", "--name", g_ph.seg, "--durability",
	                         sync ? "sync" : "async", "--orders", "2097152", "--users", "2097152",
	                         "--tokens", "1024", "--requests", "1024", "--procs", "16", NULL };
	assert_int_equal(run_tool(NULL, create), 0);
	serve_start();
	/* sync durability: catalog adds wait for the daemon, which runs now */
	char units[32];
	snprintf(units, sizeof units, "%u", UNITS);
	const char *load[] = { "flashstock", "load", "--name", g_ph.seg, "--activity", "1",
	                       "--limit", "1", "--max-qty", "2", "--sku", "1", "--units", units,
	                       "--shards", "4", "--sku", "2", "--units", units, NULL };
	assert_int_equal(run_tool(NULL, load), 0);

	int go;
	assert_int_equal(t_fork_start(BUYERS, buyer, g_ph.sh, g_ph.buyer, &go), 0);
	g_ph.nbuyers = BUYERS;
	t_fork_go(go);

	/* 1. MySQL up: orders flow and the applier applies them */
	wait_count(&g_ph.sh->sh_orders, STEP_ACKS, "orders acknowledged before the outage");
	wait_metric("flashstock_mysql_applied_lsn", 1, UINT64_MAX - 1);

	/* 2. MySQL down: orders are still acknowledged; the applier says so
	 * and falls behind */
	g_ph.halted = 1;
	assert_int_equal(fixture("halt"), 0);
	__atomic_store_n(&g_ph.sh->sh_outage, 1, __ATOMIC_RELEASE);
	wait_count(&g_ph.sh->sh_outage_orders, STEP_ACKS, "orders acknowledged while MySQL was down");
	wait_metric("flashstock_mysql_connected", 0, 0);
	uint64_t applied_down = metric("flashstock_mysql_applied_lsn");
	uint64_t durable_down = metric("flashstock_wal_durable_lsn");
	assert_true(durable_down != UINT64_MAX && applied_down < durable_down);
	assert_true(metric("flashstock_mysql_lag_records") > 0);
	__atomic_store_n(&g_ph.sh->sh_outage, 0, __ATOMIC_RELEASE);

	/* 3. MySQL back: the applier reconnects and passes the outage */
	assert_int_equal(fixture("resume"), 0);
	g_ph.halted = 0;
	wait_metric("flashstock_mysql_connected", 1, 1);
	wait_metric("flashstock_mysql_applied_lsn", durable_down, UINT64_MAX - 1);
	wait_count(&g_ph.sh->sh_orders, ld(&g_ph.sh->sh_orders) + STEP_ACKS,
	           "orders acknowledged after the outage");

	/* 4. buyers stop; every record they made is durable and applied */
	__atomic_store_n(&g_ph.sh->sh_stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(t_wait_all(BUYERS, g_ph.buyer), 0);
	g_ph.nbuyers = 0;
	assert_int_equal(ld(&g_ph.sh->sh_unexpected), 0);
	flash_t *h;
	struct flash_stats fst;
	assert_int_equal(flash_open(g_ph.seg, 0, &h), FLASH_OK);
	assert_int_equal(flash_stats_get(h, &fst), FLASH_OK);
	flash_close(h);
	/* one record per catalog entry, acknowledged order and cancel */
	uint64_t records = fst.activities + fst.skus + ld(&g_ph.sh->sh_orders) + ld(&g_ph.sh->sh_cancels);
	wait_metric("flashstock_wal_durable_lsn", records, records);
	wait_metric("flashstock_mysql_applied_lsn", records, records);
	assert_int_equal(metric("flashstock_mysql_conflicts_total"), 0);
	assert_true(metric("flashstock_mysql_retryable_errors_total") >= 1);

	/* 5. a clean stop */
	assert_int_equal(kill(g_ph.serve, SIGTERM), 0);
	int st;
	assert_int_equal(waitpid(g_ph.serve, &st, 0), g_ph.serve);
	g_ph.serve = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(wal_last(), records);

	/* 6. the reconciler: segment, WAL and MySQL agree, order by order */
	char rpath[320];
	snprintf(rpath, sizeof rpath, "%s/reconcile.out", g_ph.dir);
	const char *rec[] = { "flashstock", "reconcile", "--name", g_ph.seg, "--wal", g_ph.wal,
	                      "--mysql", g_ph.url, NULL };
	int rrc = run_tool(rpath, rec);
	size_t rlen;
	FILE *rf = fopen(rpath, "r");
	char rout[8192] = "";
	assert_non_null(rf);
	rlen = fread(rout, 1, sizeof rout - 1, rf);
	rout[rlen] = '\0';
	fclose(rf);
	if (rrc != 0 || !strstr(rout, "reconcile: 0 difference(s)") ||
	    !strstr(rout, "witnesses segment,wal,mysql"))
		fail_msg("reconcile exited %d:\n%s", rrc, rout);

	/* 7. what the buyers were told against MySQL, order by order */
	struct acked a;
	acked_read(&a);
	assert_int_equal(a.norders, ld(&g_ph.sh->sh_orders));
	assert_int_equal(a.ncancels, ld(&g_ph.sh->sh_cancels));
	assert_true(a.outage_orders >= STEP_ACKS);
	for (size_t i = 1; i < a.norders; i++)
		assert_true(a.orders[i] != a.orders[i - 1]);      /* one number, one order */
	mdb_t *m = db_open();
	assert_int_equal(db_u64(m, "SELECT lsn FROM applied_lsn WHERE stream = 'wal'"), records);
	assert_int_equal(db_u64(m, "SELECT COUNT(*) FROM orders"), a.norders);
	assert_int_equal(db_u64(m, "SELECT COUNT(DISTINCT order_no) FROM orders"), a.norders);
	assert_int_equal(db_u64(m, "SELECT COUNT(*) FROM orders WHERE status = 'CANCELLED'"), a.ncancels);
	MYSQL *c = mdb_conn(m);
	assert_int_equal(mysql_query(c, "SELECT order_no, status FROM orders ORDER BY order_no"), 0);
	MYSQL_RES *res = mysql_use_result(c);
	assert_non_null(res);
	MYSQL_ROW row;
	size_t i = 0, missing = 0, extra = 0, bad_state = 0;
	while ((row = mysql_fetch_row(res)) != NULL) {
		uint64_t no = strtoull(row[0], NULL, 10);
		while (i < a.norders && a.orders[i] < no) {
			missing++;
			i++;
		}
		if (i < a.norders && a.orders[i] == no) {
			/* bsearch(3)'s array must not be NULL, even for no element */
			int cancelled = a.ncancels &&
			                bsearch(&no, a.cancels, a.ncancels, sizeof no, cmp_u64) != NULL;
			if (strcmp(row[1], cancelled ? "CANCELLED" : "ACTIVE") != 0)
				bad_state++;
			i++;
		} else {
			extra++;
		}
	}
	missing += a.norders - i;
	mysql_free_result(res);
	mdb_close(m);
	fprintf(stderr, "outage (%s): %zu orders acknowledged (%zu while MySQL was down), %zu cancels, "
	        "%" PRIu64 " records; MySQL applied LSN %" PRIu64 " of durable %" PRIu64 " while down; "
	        "missing %zu, unknown %zu, wrong state %zu\n", sync ? "sync" : "async", a.norders,
	        a.outage_orders, a.ncancels, records, applied_down, durable_down, missing, extra,
	        bad_state);
	assert_int_equal(missing, 0);
	assert_int_equal(extra, 0);
	assert_int_equal(bad_state, 0);
	free(a.orders);
	free(a.cancels);
}

static void test_async_mysql_outage_loses_no_order_and_reconciles(void **state)
{
	(void)state;
	outage_run(0);
}

static void test_sync_mysql_outage_loses_no_order_and_reconciles(void **state)
{
	(void)state;
	outage_run(1);
}

int main(void)
{
	env_or_die("FLASH_MARIADB_DIR");
	env_or_die("FLASH_TEST_MARIADB_SH");
	env_or_die("FLASH_BIN");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_async_mysql_outage_loses_no_order_and_reconciles,
		                          phase_teardown),
		cmocka_unit_test_teardown(test_sync_mysql_outage_loses_no_order_and_reconciles,
		                          phase_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
