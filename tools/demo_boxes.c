/*
 * demo_boxes.c -- `flashstock demo --boxes N`: N boxes sell one hot sku
 * whose stock is leased from a private MariaDB Galera cluster, checked end
 * to end (issue 14; the design is in the lease design note).
 *
 * A box is what one application server runs: a segment, its daemon
 * (`flashstock serve --lease ... --backstop ...`, a real child process of
 * this binary) and its buyers.  All boxes run on this machine.  The
 * segments hold the activity and the sku with 0 units: every unit comes
 * from a lease the box's agent takes from the central pool
 * (flash_central.fs_pool / fs_lease on the cluster) and loads with
 * flash_restock.  Each box's applier writes to a database of its own on the
 * cluster (flash_box<N>).
 *
 * The run, one numbered step at a time; a failure names its step:
 *    1 directory      a private directory (the cluster's user may pass it)
 *    2 cluster        tests/fixtures/galera.sh start DIR/galera 3
 *    3 lease init     `flashstock lease init` on the cluster (the central tables)
 *    4 lease pool     `flashstock lease pool`: the sku's total
 *    5 segments       one per box, the activity and the sku with 0 units
 *    6 daemons        one `serve --lease --box-id --backstop --mysql` per box
 *    7 first leases   every box holds stock before the doors open
 *    8 sale           buyer processes, users routed to a box by a hash of the
 *                     user id (as nginx `hash $arg_user consistent;` does),
 *                     spread over --sale-s seconds
 *    9 catch-up       every box's MariaDB holds every order its buyers saw
 *                     acknowledged
 *   10 end of sale    the daemons stop (SIGTERM); the agents return what
 *                     their boxes hold
 *   11 figures        from the cluster, the boxes' databases and segments
 *
 * Figures, per box and in total: units leased (sum of its leases), sold
 * (active orders in its database), returned (to the pool), held (still in
 * its segment), stranded (leased - sold - returned: units neither sold nor
 * given back; held ones included), refused buyers, and the undersell: a
 * buyer refused while another box's segment had units (seen by the buyer
 * at the moment of the refusal), and overall the units left unsold although
 * buyers were refused.
 *
 * The invariants (exit 0 only if all hold):
 *   sold over all boxes <= total;
 *   sold + units held by the boxes + the pool's unleased units = total;
 *   the central ledger agrees: sum(units - returned) over all leases
 *     = sold + held;
 *   every order a buyer saw acknowledged is in its box's MariaDB, once
 *     (set equality by order number), and nothing else is;
 *   no user holds more than the limit over all boxes (active orders);
 *   no buyer saw an answer the API forbids; every daemon stopped cleanly.
 *
 * Buyers share nothing with each other: each writes only its own slot of a
 * MAP_SHARED block made before fork(); the parent reads it after waitpid()
 * (progress lines read it relaxed while they run).  The parent never runs
 * a thread.
 */
#include "tool.h"
#include "demo.h"
#include "fixture_run.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <mysql.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DBX_BOXES_MAX  8u
#define DBX_NODES      3u           /* Galera nodes */
#define DBX_SKU        1u           /* the hot sku */
#define DBX_PROCS_MAX  16u          /* buyer processes per box */
#define DBX_BUSY_TRIES 5000u

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------ */

struct dbx_cfg {
	uint32_t    boxes;
	uint64_t    buyers;          /* user ids 1..buyers */
	uint64_t    units;           /* the sku's total in the central pool */
	uint32_t    procs;           /* buyer processes per box */
	uint32_t    limit;           /* orders per user over the activity */
	uint32_t    sale_ms;         /* the buyers' arrivals spread over this */
	uint64_t    seed;
	int         json, keep;
	const char *fixture;         /* --galera-fixture */
};

/* One buyer process's tallies; written by that process only. */
struct dbx_proc {
	uint64_t bp_calls __attribute__((aligned(64)));
	uint64_t bp_acked;           /* FLASH_OK: the order numbers follow in bp_no[] */
	uint64_t bp_users;           /* users served */
	uint64_t bp_refused;         /* FLASH_ESOLD_OUT */
	uint64_t bp_refused_elsewhere;  /* ... while another box's segment had units */
	uint64_t bp_busy;
	uint64_t bp_unexpected;
	int32_t  bp_first_bad_rc;
	int32_t  bp_ready;
	int32_t  bp_open_rc;
	char     bp_first_bad[120];
	uint64_t bp_no[];            /* acknowledged order numbers, bp_acked of them */
};

struct dbx_box {
	char     seg[80];
	char     dir[160];
	char     wal[192];
	char     log[192];
	char     db[32];             /* flash_box<N> */
	int      created;
	flash_t *h;                  /* the parent's handle: load, then read */
	pid_t    serve_pid;
	int      serve_status, serve_reaped;
	/* figures */
	uint64_t acked, refused, refused_elsewhere, users;
	uint64_t leased, returned, open_left, sold, sold_orders, held, in_db, db_missing, db_extra;
	int64_t  stranded;
};

struct dbx_run {
	struct dbx_cfg cfg;
	char           dir[128];     /* mkdtemp: short enough for the cluster's sockets */
	char           gdir[144];
	char           fixture_path[PATH_MAX];
	char           exe[PATH_MAX];
	char           sock[DBX_NODES][176];
	char           urls[4096];   /* the cluster's URLs, comma-separated */
	int            cluster_started;
	struct dbx_box box[DBX_BOXES_MAX];
	void          *sh;           /* ds_go + the buyers' slots */
	size_t         sh_bytes, slot_bytes;
	uint32_t       nprocs;       /* boxes * procs */
	pid_t          pids[DBX_BOXES_MAX * DBX_PROCS_MAX];
	uint32_t       nalive, proc_failures;
	uint32_t       step;
	const char    *step_name;
	int64_t        t_go, t_done;
	/* totals and findings */
	uint64_t       pool_total, pool_unleased, ledger_out, backstop_conflicts;
	uint64_t       users_over_limit, unexpected;
	int            backstop_known;
	char           first_problem[240];
};

static volatile sig_atomic_t dbx_signal;

static void dbx_on_signal(int sig)
{
	dbx_signal = sig;
}

static void dbx_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock demo --boxes N [--buyers B] [--units U] [--procs P] [--limit K]\n"
	        "                       [--sale-s S] [--galera-fixture PATH] [--keep] [--json]\n"
	        "\n"
	        "N boxes (2..%u; on this machine: N segments, N `flashstock serve` daemons and\n"
	        "their buyers) sell one hot sku whose U units live in a central pool on a\n"
	        "private three-node MariaDB Galera cluster (tests/fixtures/galera.sh, on\n"
	        "127.0.0.1 ports, removed at the end).  The boxes start with 0 units: each\n"
	        "daemon's lease agent (`serve --lease URLS --box-id I`) leases units from the\n"
	        "pool and loads them into its segment; `serve --backstop URLS` keeps the\n"
	        "per-user limit across boxes.  B buyers (far more than U) arrive over S\n"
	        "seconds, each routed to one box by a hash of the user id.  At the end the\n"
	        "daemons stop and return what they hold.  Printed per box and in total: units\n"
	        "leased, sold, returned, held, stranded, buyers refused, the undersell, and\n"
	        "the invariants (sold <= total; sold + held + pool = total; the central\n"
	        "ledger agrees; every acknowledged order is in its box's MariaDB once; no\n"
	        "user over the limit across boxes).  Each step is numbered; a failure says\n"
	        "which step failed and why.\n"
	        "\n"
	        "  --boxes N       boxes, 2..%u (--boxes 1: the one-box demo)\n"
	        "  --buyers B      would-be buyers (default 30000)\n"
	        "  --units U       the sku's total (default 3000)\n"
	        "  --procs P       buyer processes per box, 1..%u (default 2)\n"
	        "  --limit K       orders per user over all boxes (default 1)\n"
	        "  --sale-s S      seconds over which buyers arrive (default 6)\n"
	        "  --galera-fixture PATH  the cluster script (default: found as the one-box\n"
	        "                  demo finds mariadb.sh)\n"
	        "  --keep          leave the cluster, segments and WALs for inspection\n"
	        "  --json          end with one JSON object on the last line\n"
	        "\n"
	        "exit: 0 every invariant held; 1 one broke or a step failed; 2 usage error\n",
	        DBX_BOXES_MAX, DBX_BOXES_MAX, DBX_PROCS_MAX);
}

static int dbx_parse(int argc, char **argv, struct dbx_cfg *c)
{
	enum { O_BOXES = 256, O_BUYERS, O_UNITS, O_PROCS, O_LIMIT, O_SALE, O_FIXTURE, O_KEEP, O_JSON };
	static const struct option longopts[] = {
		{ "help",    no_argument,       NULL, 'h' },
		{ "boxes",   required_argument, NULL, O_BOXES },
		{ "buyers",  required_argument, NULL, O_BUYERS },
		{ "units",   required_argument, NULL, O_UNITS },
		{ "procs",   required_argument, NULL, O_PROCS },
		{ "limit",   required_argument, NULL, O_LIMIT },
		{ "sale-s",  required_argument, NULL, O_SALE },
		{ "galera-fixture", required_argument, NULL, O_FIXTURE },
		{ "keep",    no_argument,       NULL, O_KEEP },
		{ "json",    no_argument,       NULL, O_JSON },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	uint32_t sale_s = 6;
	int o, bad = 0;

	memset(c, 0, sizeof *c);
	c->boxes = 3;
	c->buyers = 30000;
	c->units = 3000;
	c->procs = 2;
	c->limit = 1;
	c->seed = 0x5eed5a1e2026ULL;
	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (o) {
		case 'h':
			dbx_help(stdout);
			return TOOL_OK;
		case O_BOXES:
			bad = tool_opt_u32(cmd, "--boxes", optarg, 2, DBX_BOXES_MAX, &c->boxes);
			break;
		case O_BUYERS:
			bad = tool_opt_u64(cmd, "--buyers", optarg, 1, 10000000, &c->buyers);
			break;
		case O_UNITS:
			bad = tool_opt_u64(cmd, "--units", optarg, 1, 1000000, &c->units);
			break;
		case O_PROCS:
			bad = tool_opt_u32(cmd, "--procs", optarg, 1, DBX_PROCS_MAX, &c->procs);
			break;
		case O_LIMIT:
			bad = tool_opt_u32(cmd, "--limit", optarg, 1, FLASH_LIMIT_MAX, &c->limit);
			break;
		case O_SALE:
			bad = tool_opt_u32(cmd, "--sale-s", optarg, 1, 600, &sale_s);
			break;
		case O_FIXTURE:
			c->fixture = optarg;
			break;
		case O_KEEP:
			c->keep = 1;
			break;
		case O_JSON:
			c->json = 1;
			break;
		default:
			return tool_bad_option(cmd, o, argv);
		}
		if (bad)
			return TOOL_USAGE;
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	c->sale_ms = sale_s * 1000u;
	return -1;
}

/* ------------------------------------------------------------------------
 * Steps, helpers
 * ------------------------------------------------------------------------ */

static void dbx_step(struct dbx_run *r, uint32_t n, const char *name)
{
	r->step = n;
	r->step_name = name;
	fprintf(stderr, "demo: step %u/11 %s ...\n", n, name);
}

static int dbx_fail(struct dbx_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int dbx_fail(struct dbx_run *r, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return tool_failf("demo: step %u (%s) failed: %s", r->step, r->step_name, why);
}

static void dbx_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint32_t dbx_box_of(const struct dbx_cfg *c, uint64_t user)
{
	return (uint32_t)(demo_mix(user ^ c->seed) % c->boxes);
}

static struct dbx_proc *dbx_slot(const struct dbx_run *r, uint32_t i)
{
	return (struct dbx_proc *)((char *)r->sh + 64 + (size_t)i * r->slot_bytes);
}

static int32_t *dbx_go(const struct dbx_run *r)
{
	return (int32_t *)r->sh;
}

/* Run this binary with @p args (argv[0] is set here) and wait; stdout goes
 * to @p out_fd when >= 0 (else stays ours; 2: with the progress lines on
 * stderr, so stdout keeps the report alone), stderr stays ours.
 * @return its exit status, or -1 if it could not run or was killed. */
static int dbx_self(struct dbx_run *r, char *const args[], int out_fd)
{
	char *argv[32];
	int status, i;
	pid_t pid;

	argv[0] = "flashstock";
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		execv(r->exe, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Does `flashstock serve --help` mention @p flag?  (What this build has.) */
static int dbx_serve_has(struct dbx_run *r, const char *flag)
{
	char path[192], buf[65536];
	ssize_t n;
	int fd, rc;
	char *args[] = { "serve", "--help", NULL };

	snprintf(path, sizeof path, "%s/serve-help.txt", r->dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	rc = dbx_self(r, args, fd);
	n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	unlink(path);
	if (rc != 0 || n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, flag) != NULL;
}

/* Find galera.sh: --galera-fixture, else where the one-box demo finds
 * mariadb.sh (demo_dur_find_fixture). */
static int dbx_find_fixture(struct dbx_run *r)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64];

	if (r->cfg.fixture) {
		if (realpath(r->cfg.fixture, r->fixture_path) == NULL)
			return dbx_fail(r, "--galera-fixture %s: %s", r->cfg.fixture, strerror(errno));
		return TOOL_OK;
	}
	snprintf(exe, sizeof exe, "%s", r->exe);
	snprintf(cand, sizeof cand, "%s/%s/galera.sh", dirname(exe), FLASH_DATA_REL);
	if (access(cand, R_OK) == 0 && realpath(cand, r->fixture_path) != NULL)
		return TOOL_OK;
	if (realpath("tests/fixtures/galera.sh", r->fixture_path) != NULL)
		return TOOL_OK;
	return dbx_fail(r, "cannot find galera.sh in %s next to the executable, nor "
	                "tests/fixtures/galera.sh in the current directory: give --galera-fixture PATH",
	                FLASH_DATA_REL);
}

/* ---- MariaDB on the cluster (root over node 1's unix socket) ---------- */

static MYSQL *dbx_connect(struct dbx_run *r, uint32_t node)
{
	MYSQL *c = mysql_init(NULL);
	unsigned tmo = 10;

	if (!c)
		return NULL;
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &tmo);
	if (!mysql_real_connect(c, NULL, "root", NULL, NULL, 0, r->sock[node], 0)) {
		fprintf(stderr, "demo: connect to node %u: %s\n", node + 1, mysql_error(c));
		mysql_close(c);
		return NULL;
	}
	/* causal reads: see every write the cluster committed before the query */
	if (mysql_query(c, "SET SESSION wsrep_sync_wait = 1") != 0) {
		fprintf(stderr, "demo: wsrep_sync_wait on node %u: %s\n", node + 1, mysql_error(c));
		mysql_close(c);
		return NULL;
	}
	return c;
}

/* One unsigned number from @p sql (NULL reads as 0).  @return 0, or -1
 * with the error printed (a missing table: -2). */
static int dbx_u64(MYSQL *c, const char *sql, uint64_t *out)
{
	MYSQL_RES *res;
	MYSQL_ROW row;

	*out = 0;
	if (mysql_query(c, sql) != 0) {
		unsigned e = mysql_errno(c);
		if (e == 1146)   /* ER_NO_SUCH_TABLE */
			return -2;
		fprintf(stderr, "demo: %s: %s\n", sql, mysql_error(c));
		return -1;
	}
	res = mysql_store_result(c);
	if (!res)
		return -1;
	row = mysql_fetch_row(res);
	if (row && row[0])
		*out = strtoull(row[0], NULL, 10);
	mysql_free_result(res);
	return 0;
}

/* ---- removal of the private directory ---------------------------------- */

static int dbx_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* ------------------------------------------------------------------------
 * Steps 1-7: set up
 * ------------------------------------------------------------------------ */

static int dbx_setup_dir(struct dbx_run *r)
{
	const char *tmp = getenv("TMPDIR");
	ssize_t n;

	dbx_step(r, 1, "directory");
	n = readlink("/proc/self/exe", r->exe, sizeof r->exe - 1);
	if (n <= 0)
		return dbx_fail(r, "readlink /proc/self/exe: %s", strerror(errno));
	r->exe[n] = '\0';
	snprintf(r->dir, sizeof r->dir, "%s/flashstock-boxes.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->dir)) {
		r->dir[0] = '\0';
		return dbx_fail(r, "mkdtemp: %s", strerror(errno));
	}
	/* the cluster's unprivileged user passes through to DIR/galera */
	if (chmod(r->dir, 0711) != 0)
		return dbx_fail(r, "chmod %s: %s", r->dir, strerror(errno));
	snprintf(r->gdir, sizeof r->gdir, "%s/galera", r->dir);
	return TOOL_OK;
}

static int dbx_setup_cluster(struct dbx_run *r)
{
	char env[8192], urls[4096];
	uint32_t i;
	int rc;

	dbx_step(r, 2, "cluster");
	if ((rc = dbx_find_fixture(r)) != TOOL_OK)
		return rc;
	r->cluster_started = 1;
	rc = fixture_run(r->fixture_path, "start", r->gdir, env, sizeof env);
	if (rc != 0)
		return dbx_fail(r, "%s start %s exited %d (its messages are above)", r->fixture_path,
		                r->gdir, rc);
	if (fixture_export(env, "FLASH_GALERA_URLS", urls, sizeof urls) != 0)
		return dbx_fail(r, "%s start printed no FLASH_GALERA_URLS", r->fixture_path);
	snprintf(r->urls, sizeof r->urls, "%s", urls);
	for (i = 0; i < DBX_NODES; i++)
		snprintf(r->sock[i], sizeof r->sock[i], "%s/n%u/mysqld.sock", r->gdir, i + 1);
	fprintf(stderr, "demo: cluster of %u nodes in %s\n", DBX_NODES, r->gdir);
	return TOOL_OK;
}

/* URL of node @p node for database @p db (root over the unix socket). */
static void dbx_url(const struct dbx_run *r, uint32_t node, const char *db, const char *extra,
                    char *out, size_t cap)
{
	snprintf(out, cap, "mysql://root@localhost/%s?socket=%s%s", db, r->sock[node], extra);
}

static int dbx_setup_central(struct dbx_run *r)
{
	char url[PATH_MAX + 128], act[16], sku[16], total[32];
	char *help[] = { "lease", "--help", NULL };
	int rc;

	dbx_step(r, 3, "lease init");
	dbx_url(r, 0, "flash_central", "", url, sizeof url);
	{
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		rc = dbx_self(r, help, null);
		if (null >= 0)
			close(null);
		if (rc != 0)
			return dbx_fail(r, "this flashstock has no `lease` command: the lease agent "
			                "(persist/daemon/lease.c, tools/cmd_lease.c) is not in this build");
	}
	{
		char *args[] = { "lease", "init", "--mysql", url, NULL };
		if ((rc = dbx_self(r, args, 2)) != 0)
			return dbx_fail(r, "flashstock lease init --mysql %s exited %d", url, rc);
	}
	dbx_step(r, 4, "lease pool");
	snprintf(act, sizeof act, "%u", DEMO_ACTIVITY);
	snprintf(sku, sizeof sku, "%u", DBX_SKU);
	snprintf(total, sizeof total, "%llu", (unsigned long long)r->cfg.units);
	{
		char *args[] = { "lease", "pool", "--mysql", url, "--activity", act, "--sku", sku,
		                 "--total", total, NULL };
		if ((rc = dbx_self(r, args, 2)) != 0)
			return dbx_fail(r, "flashstock lease pool --activity %s --sku %s --total %s exited %d",
			                act, sku, total, rc);
	}
	return TOOL_OK;
}

/* Step 5: box b's segment, with the activity and the sku at 0 units. */
static int dbx_setup_segment(struct dbx_run *r, uint32_t b)
{
	struct dbx_box *x = &r->box[b];
	struct flash_seg_opts o;
	struct flash_activity a;
	int rc;

	char base[sizeof r->dir];

	memcpy(base, r->dir, sizeof base);
	snprintf(x->seg, sizeof x->seg, "/flashstock-demo-%d-box%u", (int)getpid(), b + 1);
	snprintf(x->dir, sizeof x->dir, "%s/box%u", base, b + 1);
	snprintf(x->wal, sizeof x->wal, "%s/box%u/wal", base, b + 1);
	snprintf(x->log, sizeof x->log, "%s/box%u/serve.log", base, b + 1);
	snprintf(x->db, sizeof x->db, "flash_box%u", b + 1);
	if (mkdir(x->dir, 0700) != 0)
		return dbx_fail(r, "mkdir %s: %s", x->dir, strerror(errno));
	flash_seg_opts_default(&o);
	if (o.max_orders < r->cfg.units * 2 + 1024)
		o.max_orders = (uint32_t)(r->cfg.units * 2 + 1024);
	if (o.max_users < r->cfg.units * 2 * r->cfg.limit + 1024)
		o.max_users = (uint32_t)(r->cfg.units * 2 * r->cfg.limit + 1024);
	if (o.max_requests < r->cfg.buyers + 1024)
		o.max_requests = (uint32_t)(r->cfg.buyers + 1024);
	if (o.max_procs < r->cfg.procs * 2 + 8)
		o.max_procs = r->cfg.procs * 2 + 8;
	rc = flash_seg_create(x->seg, &o);
	if (rc != FLASH_OK)
		return dbx_fail(r, "create segment %s: %s", x->seg, flash_strerror(rc));
	x->created = 1;
	if ((rc = flash_open(x->seg, 0, &x->h)) != FLASH_OK)
		return dbx_fail(r, "open %s: %s", x->seg, flash_strerror(rc));
	memset(&a, 0, sizeof a);
	a.id = DEMO_ACTIVITY;
	a.limit_per_user = r->cfg.limit;
	a.max_qty = 1;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.start_ns = tool_realtime_ns() - 1000000000LL;
	a.end_ns = a.start_ns + 3600LL * 1000000000LL;
	if ((rc = flash_activity_add(x->h, &a)) != FLASH_OK)
		return dbx_fail(r, "box %u: add activity: %s", b + 1, flash_strerror(rc));
	if ((rc = flash_sku_add(x->h, DEMO_ACTIVITY, DBX_SKU, 0, 4)) != FLASH_OK)
		return dbx_fail(r, "box %u: add sku %u with 0 units: %s", b + 1, DBX_SKU, flash_strerror(rc));
	return TOOL_OK;
}

/* Step 6: box b's daemon, stderr to its log. */
static int dbx_start_daemon(struct dbx_run *r, uint32_t b)
{
	struct dbx_box *x = &r->box[b];
	char mysql[PATH_MAX + 128], boxid[16];
	char *argv[] = { "flashstock", "serve", "--name", x->seg, "--wal", x->wal, "--mysql", mysql,
	                 "--lease", r->urls, "--box-id", boxid, "--backstop", r->urls,
	                 "--no-snapshot", "--reconcile-every", "0", "--log-level", "info", NULL };
	pid_t pid;
	int fd;

	/* the applier of box b on node b mod 3: the three nodes share the work */
	dbx_url(r, b % DBX_NODES, x->db, "&create_db=1", mysql, sizeof mysql);
	snprintf(boxid, sizeof boxid, "%u", b + 1);
	fd = open(x->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return dbx_fail(r, "open %s: %s", x->log, strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd);
		return dbx_fail(r, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		signal(SIGINT, SIG_IGN);    /* the parent stops it, in order */
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv(r->exe, argv);
		_exit(127);
	}
	close(fd);
	x->serve_pid = pid;
	return TOOL_OK;
}

/* Has box b's daemon exited?  Reaps it if so. */
static int dbx_daemon_gone(struct dbx_box *x)
{
	int status;

	if (x->serve_pid <= 0)
		return 1;
	if (x->serve_reaped)
		return 1;
	if (waitpid(x->serve_pid, &status, WNOHANG) == x->serve_pid) {
		x->serve_status = status;
		x->serve_reaped = 1;
		return 1;
	}
	return 0;
}

static void dbx_log_tail(const struct dbx_box *x)
{
	char cmd[PATH_MAX + 32];

	fprintf(stderr, "---- last lines of %s ----\n", x->log);
	fflush(stderr);
	snprintf(cmd, sizeof cmd, "tail -n 15 '%s' >&2", x->log);
	if (system(cmd) != 0)
		fprintf(stderr, "(cannot show it)\n");
}

static int dbx_setup_boxes(struct dbx_run *r)
{
	struct flash_sku_info si;
	int64_t deadline;
	uint32_t b, have;
	int rc;

	dbx_step(r, 5, "segments");
	for (b = 0; b < r->cfg.boxes; b++)
		if ((rc = dbx_setup_segment(r, b)) != TOOL_OK)
			return rc;
	dbx_step(r, 6, "daemons");
	if (!dbx_serve_has(r, "--lease"))
		return dbx_fail(r, "this flashstock's serve has no --lease: the lease agent is not in "
		                "this build");
	if (!dbx_serve_has(r, "--backstop"))
		return dbx_fail(r, "this flashstock's serve has no --backstop: the cross-box limit is "
		                "not in this build");
	for (b = 0; b < r->cfg.boxes; b++)
		if ((rc = dbx_start_daemon(r, b)) != TOOL_OK)
			return rc;
	dbx_step(r, 7, "first leases");
	deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
	for (;;) {
		for (b = 0, have = 0; b < r->cfg.boxes; b++) {
			if (dbx_daemon_gone(&r->box[b])) {
				dbx_log_tail(&r->box[b]);
				return dbx_fail(r, "box %u's daemon exited (status %d); its log: %s", b + 1,
				                r->box[b].serve_status, r->box[b].log);
			}
			if (flash_sku_get(r->box[b].h, DEMO_ACTIVITY, DBX_SKU, &si) == FLASH_OK &&
			    si.available > 0)
				have++;
		}
		if (have == r->cfg.boxes)
			break;
		if (dbx_signal)
			return dbx_fail(r, "interrupted by signal %d", (int)dbx_signal);
		if (tool_monotonic_ns() > deadline)
			return dbx_fail(r, "only %u of %u boxes hold leased stock after 60 s (logs: %s/box*/serve.log)",
			                have, r->cfg.boxes, r->dir);
		dbx_sleep_ms(100);
	}
	for (b = 0; b < r->cfg.boxes; b++)
		if (flash_sku_get(r->box[b].h, DEMO_ACTIVITY, DBX_SKU, &si) == FLASH_OK)
			fprintf(stderr, "demo: box %u holds %llu units\n", b + 1,
			        (unsigned long long)si.available);
	return TOOL_OK;
}

/* ------------------------------------------------------------------------
 * Step 8: the sale
 * ------------------------------------------------------------------------ */

static void dbx_bad(struct dbx_proc *p, int rc, const char *what, uint64_t user)
{
	if (p->bp_unexpected++ == 0) {
		p->bp_first_bad_rc = rc;
		snprintf(p->bp_first_bad, sizeof p->bp_first_bad, "%s (user %llu)", what,
		         (unsigned long long)user);
	}
}

/*
 * Buyer process @p k of box @p b: users routed to b, every procs-th of them,
 * arriving evenly over the sale.  Each orders one unit (no token: the
 * demo is about stock, not page views); FLASH_ESOLD_OUT is a refusal, and
 * the buyer looks at the other boxes' segments at that moment (read-only
 * handles) to count refusals while units were elsewhere.
 */
static int dbx_buyer(struct dbx_run *r, uint32_t b, uint32_t k, struct dbx_proc *p)
{
	const struct dbx_cfg *c = &r->cfg;
	flash_t *h = NULL, *other[DBX_BOXES_MAX] = { NULL };
	uint64_t u, mine = 0, n = 0, cap = c->units + 64;
	int64_t t0, step_ns;
	uint32_t ob;
	int rc;

	rc = flash_open(r->box[b].seg, 0, &h);
	for (ob = 0; rc == FLASH_OK && ob < c->boxes; ob++)
		if (ob != b)
			rc = flash_open(r->box[ob].seg, FLASH_RDONLY, &other[ob]);
	p->bp_open_rc = rc;
	/* release: the parent that sees bp_ready (acquire) sees bp_open_rc */
	__atomic_store_n(&p->bp_ready, 1, __ATOMIC_RELEASE);
	if (rc != FLASH_OK)
		return 1;
	for (u = 1; u <= c->buyers; u++)
		if (dbx_box_of(c, u) == b && (mine++ % c->procs) == k)
			n++;
	/* acquire pairs with the parent's release of the flag; the flag is
	 * all a buyer needs from it (the segments were set up before fork) */
	while (__atomic_load_n(dbx_go(r), __ATOMIC_ACQUIRE) == 0)
		dbx_sleep_ms(1);
	if (__atomic_load_n(dbx_go(r), __ATOMIC_ACQUIRE) < 0)
		return 1;
	t0 = tool_monotonic_ns();
	step_ns = n ? (int64_t)c->sale_ms * 1000000LL / (int64_t)n : 0;
	mine = 0;
	for (u = 1, n = 0; u <= c->buyers; u++) {
		struct flash_order_req req;
		struct flash_order_res res;
		uint32_t tries;
		int64_t due, now;

		if (dbx_box_of(c, u) != b || (mine++ % c->procs) != k)
			continue;
		due = t0 + (int64_t)n++ * step_ns;
		now = tool_monotonic_ns();
		if (due > now) {
			struct timespec ts = { (due - now) / 1000000000LL, (due - now) % 1000000000LL };
			nanosleep(&ts, NULL);
		}
		memset(&req, 0, sizeof req);
		req.activity_id = DEMO_ACTIVITY;
		req.sku_id = DBX_SKU;
		req.user_id = u;
		req.qty = 1;
		for (tries = 0;; tries++) {
			memset(&res, 0, sizeof res);
			req.request_id = (u << 12) | (tries & 0xfffu);
			rc = flash_order(h, &req, &res);
			/* relaxed: progress only; the parent reads the final
			 * tallies after waitpid(), which orders every store */
			__atomic_store_n(&p->bp_calls, p->bp_calls + 1, __ATOMIC_RELAXED);
			if (rc != FLASH_EBUSY || tries >= DBX_BUSY_TRIES)
				break;
			p->bp_busy++;
			dbx_sleep_ms(1);
		}
		__atomic_store_n(&p->bp_users, p->bp_users + 1, __ATOMIC_RELAXED);
		if (rc == FLASH_OK || rc == FLASH_EFATE_UNKNOWN) {
			if (p->bp_acked < cap)
				p->bp_no[p->bp_acked] = res.order_no;
			else
				dbx_bad(p, rc, "more orders acknowledged than the sku's total", u);
			__atomic_store_n(&p->bp_acked, p->bp_acked + 1, __ATOMIC_RELAXED);
		} else if (rc == FLASH_ESOLD_OUT) {
			struct flash_sku_info si;
			p->bp_refused++;
			for (ob = 0; ob < c->boxes; ob++)
				if (other[ob] && flash_sku_get(other[ob], DEMO_ACTIVITY, DBX_SKU, &si) == FLASH_OK &&
				    si.available > 0) {
					p->bp_refused_elsewhere++;
					break;
				}
		} else {
			dbx_bad(p, rc, "flash_order: expected FLASH_OK or FLASH_ESOLD_OUT", u);
		}
	}
	for (ob = 0; ob < c->boxes; ob++)
		if (other[ob])
			flash_close(other[ob]);
	flash_close(h);
	return 0;
}

static void dbx_kill_buyers(struct dbx_run *r)
{
	uint32_t i;
	int status;

	if (r->sh)
		__atomic_store_n(dbx_go(r), -1, __ATOMIC_RELEASE);
	for (i = 0; i < r->nprocs; i++)
		if (r->pids[i] > 0) {
			kill(r->pids[i], SIGKILL);
			waitpid(r->pids[i], &status, 0);
			r->pids[i] = 0;
		}
	r->nalive = 0;
}

/* Reap buyers that have exited (without blocking). */
static void dbx_reap(struct dbx_run *r)
{
	uint32_t i;
	int status;

	for (i = 0; i < r->nprocs; i++) {
		if (r->pids[i] <= 0 || waitpid(r->pids[i], &status, WNOHANG) != r->pids[i])
			continue;
		r->pids[i] = 0;
		r->nalive--;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			r->proc_failures++;
	}
}

static int dbx_sale(struct dbx_run *r)
{
	const struct dbx_cfg *c = &r->cfg;
	int64_t next, deadline;
	uint32_t i, b, ready;
	pid_t parent = getpid();

	dbx_step(r, 8, "sale");
	r->nprocs = c->boxes * c->procs;
	r->slot_bytes = (sizeof(struct dbx_proc) + (size_t)(c->units + 64) * sizeof(uint64_t) + 63) & ~(size_t)63;
	r->sh_bytes = 64 + (size_t)r->nprocs * r->slot_bytes;
	r->sh = mmap(NULL, r->sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->sh == MAP_FAILED) {
		r->sh = NULL;
		return dbx_fail(r, "mmap %zu bytes: %s", r->sh_bytes, strerror(errno));
	}
	fflush(NULL);
	for (i = 0; i < r->nprocs; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			dbx_kill_buyers(r);
			return dbx_fail(r, "fork: %s", strerror(errno));
		}
		if (pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			_exit(dbx_buyer(r, i / c->procs, i % c->procs, dbx_slot(r, i)));
		}
		r->pids[i] = pid;
		r->nalive++;
	}
	deadline = tool_monotonic_ns() + 30LL * 1000000000LL;
	do {
		for (i = 0, ready = 0; i < r->nprocs; i++)
			ready += __atomic_load_n(&dbx_slot(r, i)->bp_ready, __ATOMIC_ACQUIRE) != 0;
		if (ready == r->nprocs)
			break;
		dbx_sleep_ms(5);
	} while (tool_monotonic_ns() < deadline && !dbx_signal);
	for (i = 0; i < r->nprocs; i++)
		if (!dbx_slot(r, i)->bp_ready || dbx_slot(r, i)->bp_open_rc != FLASH_OK) {
			int orc = dbx_slot(r, i)->bp_open_rc;
			dbx_kill_buyers(r);
			return dbx_fail(r, "buyer process %u could not open its segments: %s", i,
			                orc ? flash_strerror(orc) : "did not start");
		}
	fprintf(stderr, "demo: %llu buyers over %u boxes (%u processes each) for %u s ...\n",
	        (unsigned long long)c->buyers, c->boxes, c->procs, c->sale_ms / 1000u);
	r->t_go = tool_monotonic_ns();
	__atomic_store_n(dbx_go(r), 1, __ATOMIC_RELEASE);
	next = r->t_go + 1000000000LL;
	while (r->nalive > 0) {
		dbx_reap(r);
		if (dbx_signal) {
			dbx_kill_buyers(r);
			return dbx_fail(r, "interrupted by signal %d", (int)dbx_signal);
		}
		for (b = 0; b < c->boxes; b++)
			if (dbx_daemon_gone(&r->box[b])) {
				dbx_kill_buyers(r);
				dbx_log_tail(&r->box[b]);
				return dbx_fail(r, "box %u's daemon exited during the sale (log %s)", b + 1,
				                r->box[b].log);
			}
		if (tool_monotonic_ns() >= next) {
			fprintf(stderr, "demo: %5.1f s ", (double)(tool_monotonic_ns() - r->t_go) / 1e9);
			for (b = 0; b < c->boxes; b++) {
				struct flash_sku_info si;
				uint64_t acked = 0, users = 0;
				for (i = b * c->procs; i < (b + 1) * c->procs; i++) {
					acked += __atomic_load_n(&dbx_slot(r, i)->bp_acked, __ATOMIC_RELAXED);
					users += __atomic_load_n(&dbx_slot(r, i)->bp_users, __ATOMIC_RELAXED);
				}
				if (flash_sku_get(r->box[b].h, DEMO_ACTIVITY, DBX_SKU, &si) != FLASH_OK)
					si.available = 0;
				fprintf(stderr, " box%u: %llu/%llu sold, %llu held", b + 1,
				        (unsigned long long)acked, (unsigned long long)users,
				        (unsigned long long)si.available);
			}
			fprintf(stderr, "\n");
			next += 1000000000LL;
		}
		dbx_sleep_ms(5);
	}
	r->t_done = tool_monotonic_ns();
	if (r->proc_failures)
		return dbx_fail(r, "%u buyer processes failed", r->proc_failures);
	for (b = 0; b < c->boxes; b++) {
		struct dbx_box *x = &r->box[b];
		for (i = b * c->procs; i < (b + 1) * c->procs; i++) {
			const struct dbx_proc *p = dbx_slot(r, i);
			x->acked += p->bp_acked;
			x->refused += p->bp_refused;
			x->refused_elsewhere += p->bp_refused_elsewhere;
			x->users += p->bp_users;
			r->unexpected += p->bp_unexpected;
			if (p->bp_unexpected && !r->first_problem[0])
				snprintf(r->first_problem, sizeof r->first_problem, "box %u: %s: got %s", b + 1,
				         p->bp_first_bad, flash_rcname(p->bp_first_bad_rc));
		}
	}
	return TOOL_OK;
}

/* ------------------------------------------------------------------------
 * Steps 9-11: after the sale
 * ------------------------------------------------------------------------ */

static int dbx_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Step 9: wait until each box's database holds as many orders as its
 * buyers saw acknowledged (the appliers run behind the WAL). */
static int dbx_catch_up(struct dbx_run *r, MYSQL *c)
{
	char sql[256];
	int64_t deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
	uint32_t b, done;

	dbx_step(r, 9, "catch-up");
	for (;;) {
		for (b = 0, done = 0; b < r->cfg.boxes; b++) {
			uint64_t n;
			snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s.orders", r->box[b].db);
			if (dbx_u64(c, sql, &n) == 0 && n >= r->box[b].acked)
				done++;
		}
		if (done == r->cfg.boxes)
			return TOOL_OK;
		if (dbx_signal)
			return dbx_fail(r, "interrupted by signal %d", (int)dbx_signal);
		if (tool_monotonic_ns() > deadline) {
			fprintf(stderr, "demo: step 9: %u of %u boxes' databases caught up after 60 s; "
			        "the figures below say which orders are missing\n", done, r->cfg.boxes);
			return TOOL_OK;
		}
		dbx_sleep_ms(200);
	}
}

/* Step 10: SIGTERM every daemon, wait for each (60 s, then SIGKILL). */
static int dbx_stop_daemons(struct dbx_run *r)
{
	int64_t deadline;
	uint32_t b, bad = 0;

	dbx_step(r, 10, "end of sale");
	for (b = 0; b < r->cfg.boxes; b++)
		if (r->box[b].serve_pid > 0 && !dbx_daemon_gone(&r->box[b]))
			kill(r->box[b].serve_pid, SIGTERM);
	deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
	for (b = 0; b < r->cfg.boxes; b++) {
		struct dbx_box *x = &r->box[b];
		while (x->serve_pid > 0 && !dbx_daemon_gone(x) && tool_monotonic_ns() < deadline)
			dbx_sleep_ms(50);
		if (x->serve_pid > 0 && !dbx_daemon_gone(x)) {
			kill(x->serve_pid, SIGKILL);
			waitpid(x->serve_pid, &x->serve_status, 0);
			x->serve_reaped = 1;
			fprintf(stderr, "demo: box %u's daemon did not stop within 60 s: killed\n", b + 1);
			bad++;
			continue;
		}
		if (!WIFEXITED(x->serve_status) || WEXITSTATUS(x->serve_status) != 0) {
			dbx_log_tail(x);
			fprintf(stderr, "demo: box %u's daemon ended with status %d\n", b + 1, x->serve_status);
			bad++;
		}
	}
	if (bad && !r->first_problem[0])
		snprintf(r->first_problem, sizeof r->first_problem,
		         "%u daemons did not stop cleanly (logs in %s/box*/serve.log)", bad, r->dir);
	return bad ? TOOL_FAIL : TOOL_OK;
}

/* Box b's orders in its database against what its buyers saw acknowledged. */
static int dbx_compare_orders(struct dbx_run *r, MYSQL *c, uint32_t b)
{
	struct dbx_box *x = &r->box[b];
	uint64_t *mine, n = 0, i = 0;
	char sql[256];
	MYSQL_RES *res;
	MYSQL_ROW row;
	uint32_t k;

	mine = malloc((size_t)(x->acked + 1) * sizeof *mine);
	if (!mine)
		return -1;
	for (k = b * r->cfg.procs; k < (b + 1) * r->cfg.procs; k++) {
		const struct dbx_proc *p = dbx_slot(r, k);
		uint64_t m = p->bp_acked < r->cfg.units + 64 ? p->bp_acked : r->cfg.units + 64;
		memcpy(mine + n, p->bp_no, (size_t)m * sizeof *mine);
		n += m;
	}
	qsort(mine, (size_t)n, sizeof *mine, dbx_cmp_u64);
	snprintf(sql, sizeof sql, "SELECT order_no FROM %s.orders ORDER BY order_no", x->db);
	if (mysql_query(c, sql) != 0 || !(res = mysql_store_result(c))) {
		fprintf(stderr, "demo: %s: %s\n", sql, mysql_error(c));
		free(mine);
		return -1;
	}
	x->in_db = mysql_num_rows(res);
	/* both sorted: walk them together */
	row = mysql_fetch_row(res);
	while (i < n || row) {
		uint64_t d = row && row[0] ? strtoull(row[0], NULL, 10) : UINT64_MAX;
		if (i < n && mine[i] == d) {
			i++;
			row = mysql_fetch_row(res);
		} else if (i < n && mine[i] < d) {
			x->db_missing++;
			i++;
		} else {
			x->db_extra++;
			row = mysql_fetch_row(res);
		}
	}
	mysql_free_result(res);
	free(mine);
	return 0;
}

/* Step 11: the figures and the invariants.  @return TOOL_OK if they hold. */
/* What dbx_figures() adds up over the boxes. */
struct dbx_sums {
	uint64_t sold, held, leased, returned, acked, refused, elsewhere, users;
	uint64_t missing, extra, in_db, undersell;
	int64_t  stranded;
};

/* The sums over the boxes (struct dbx_sums), from MariaDB, the central
 * tables and each box's segment.  @return 0, or dbx_fail()'s. */
static int dbx_read_figures(struct dbx_run *r, MYSQL *c, struct dbx_sums *t)
{
	const struct dbx_cfg *cfg = &r->cfg;
	char sql[1024], unions[DBX_BOXES_MAX * 96];
	size_t off = 0;
	uint32_t b;
	int rc;

	memset(t, 0, sizeof *t);
	dbx_step(r, 11, "figures");
	snprintf(sql, sizeof sql, "SELECT total FROM flash_central.fs_pool WHERE activity_id=%u AND sku_id=%u",
	         DEMO_ACTIVITY, DBX_SKU);
	if (dbx_u64(c, sql, &r->pool_total) != 0)
		return dbx_fail(r, "cannot read fs_pool");
	snprintf(sql, sizeof sql, "SELECT unleased FROM flash_central.fs_pool WHERE activity_id=%u AND sku_id=%u",
	         DEMO_ACTIVITY, DBX_SKU);
	if (dbx_u64(c, sql, &r->pool_unleased) != 0)
		return dbx_fail(r, "cannot read fs_pool");
	for (b = 0; b < cfg->boxes; b++) {
		struct dbx_box *x = &r->box[b];
		struct flash_sku_info si;
		snprintf(sql, sizeof sql, "SELECT COALESCE(SUM(units),0) FROM flash_central.fs_lease "
		         "WHERE box_id=%u AND activity_id=%u AND sku_id=%u", b + 1, DEMO_ACTIVITY, DBX_SKU);
		if (dbx_u64(c, sql, &x->leased) != 0)
			return dbx_fail(r, "cannot read fs_lease");
		snprintf(sql, sizeof sql, "SELECT COALESCE(SUM(returned),0) FROM flash_central.fs_lease "
		         "WHERE box_id=%u AND activity_id=%u AND sku_id=%u", b + 1, DEMO_ACTIVITY, DBX_SKU);
		if (dbx_u64(c, sql, &x->returned) != 0)
			return dbx_fail(r, "cannot read fs_lease");
		snprintf(sql, sizeof sql, "SELECT COALESCE(SUM(qty),0) FROM %s.orders WHERE status='ACTIVE' "
		         "AND activity_id=%u AND sku_id=%u", x->db, DEMO_ACTIVITY, DBX_SKU);
		if (dbx_u64(c, sql, &x->sold) != 0)
			return dbx_fail(r, "cannot read %s.orders", x->db);
		if ((rc = flash_sku_get(x->h, DEMO_ACTIVITY, DBX_SKU, &si)) != FLASH_OK)
			return dbx_fail(r, "box %u: read sku: %s", b + 1, flash_strerror(rc));
		x->held = si.available;
		x->stranded = (int64_t)x->leased - (int64_t)x->sold - (int64_t)x->returned;
		if (dbx_compare_orders(r, c, b) != 0)
			return dbx_fail(r, "cannot read %s.orders", x->db);
		t->sold += x->sold;
		t->held += x->held;
		t->leased += x->leased;
		t->returned += x->returned;
		t->stranded += x->stranded;
		t->acked += x->acked;
		t->refused += x->refused;
		t->elsewhere += x->refused_elsewhere;
		t->users += x->users;
		t->missing += x->db_missing;
		t->extra += x->db_extra;
		t->in_db += x->in_db;
		off += (size_t)snprintf(unions + off, sizeof unions - off,
		                        "%sSELECT user_id FROM %s.orders WHERE status='ACTIVE'",
		                        b ? " UNION ALL " : "", x->db);
	}
	snprintf(sql, sizeof sql, "SELECT COALESCE(SUM(units - returned),0) FROM flash_central.fs_lease "
	         "WHERE activity_id=%u AND sku_id=%u", DEMO_ACTIVITY, DBX_SKU);
	if (dbx_u64(c, sql, &r->ledger_out) != 0)
		return dbx_fail(r, "cannot read fs_lease");
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM (SELECT user_id FROM (%s) u GROUP BY user_id "
	         "HAVING COUNT(*) > %u) o", unions, cfg->limit);
	if (dbx_u64(c, sql, &r->users_over_limit) != 0)
		return dbx_fail(r, "cannot count users over the limit");
	rc = dbx_u64(c, "SELECT COUNT(*) FROM flash_central.fs_backstop", &r->backstop_conflicts);
	r->backstop_known = rc == 0;

	return 0;
}

/* `demo --boxes N --json`: the figures as one JSON object. */
static void dbx_json(const struct dbx_run *r, const struct dbx_sums *t, int ok)
{
	const struct dbx_cfg *cfg = &r->cfg;
	uint32_t b;

	printf("{\"ok\":%s,\"boxes\":%u,\"buyers\":%llu,\"total\":%llu,\"leased\":%llu,"
	       "\"sold\":%llu,\"returned\":%llu,\"held\":%llu,\"stranded\":%lld,\"unleased\":%llu,"
	       "\"refused\":%llu,\"refused_elsewhere\":%llu,\"undersell\":%llu,"
	       "\"orders_acked\":%llu,\"orders_missing\":%llu,\"orders_extra\":%llu,"
	       "\"users_over_limit\":%llu,\"unexpected\":%llu,\"per_box\":[",
	       ok ? "true" : "false", cfg->boxes, (unsigned long long)cfg->buyers,
	       (unsigned long long)r->pool_total, (unsigned long long)t->leased,
	       (unsigned long long)t->sold, (unsigned long long)t->returned, (unsigned long long)t->held,
	       (long long)t->stranded, (unsigned long long)r->pool_unleased,
	       (unsigned long long)t->refused, (unsigned long long)t->elsewhere,
	       (unsigned long long)t->undersell, (unsigned long long)t->acked,
	       (unsigned long long)t->missing, (unsigned long long)t->extra,
	       (unsigned long long)r->users_over_limit, (unsigned long long)r->unexpected);
	for (b = 0; b < cfg->boxes; b++) {
		const struct dbx_box *x = &r->box[b];
		printf("%s{\"box\":%u,\"leased\":%llu,\"sold\":%llu,\"returned\":%llu,\"held\":%llu,"
		       "\"stranded\":%lld,\"refused\":%llu,\"refused_elsewhere\":%llu}", b ? "," : "",
		       b + 1, (unsigned long long)x->leased, (unsigned long long)x->sold,
		       (unsigned long long)x->returned, (unsigned long long)x->held,
		       (long long)x->stranded, (unsigned long long)x->refused,
		       (unsigned long long)x->refused_elsewhere);
	}
	printf("]}\n");
}

static int dbx_figures(struct dbx_run *r, MYSQL *c)
{
	const struct dbx_cfg *cfg = &r->cfg;
	struct dbx_sums t;
	uint32_t b;
	int ok = 1, i_sold, i_conserve, i_ledger, i_acked, i_limit, i_clean;
	double secs = (double)(r->t_done - r->t_go) / 1e9;

	int rc = dbx_read_figures(r, c, &t);
	if (rc != 0)
		return rc;
	/* units left unsold although buyers were refused: with demand above
	 * the total, each of them is a sale lost to where the unit sat */
	t.undersell = r->pool_total > t.sold ? r->pool_total - t.sold : 0;
	if (t.undersell > t.refused)
		t.undersell = t.refused;

	i_sold = t.sold <= r->pool_total && r->pool_total == cfg->units;
	i_conserve = t.sold + t.held + r->pool_unleased == r->pool_total;
	i_ledger = r->ledger_out == t.sold + t.held;
	i_acked = t.missing == 0 && t.extra == 0;
	i_limit = r->users_over_limit == 0;
	i_clean = r->unexpected == 0 && r->proc_failures == 0 && !r->first_problem[0];
	ok = i_sold && i_conserve && i_ledger && i_acked && i_limit && i_clean;

	printf("flashstock demo --boxes %u: %llu buyers, one sku of %llu units leased from a "
	       "3-node Galera cluster, limit %u per user\n\n", cfg->boxes,
	       (unsigned long long)cfg->buyers, (unsigned long long)cfg->units, cfg->limit);
	printf("  %4s  %8s  %8s  %8s  %8s  %8s  %8s  %8s  %9s  %8s\n", "box", "buyers", "leased",
	       "sold", "returned", "held", "stranded", "refused", "elsewhere", "in MySQL");
	for (b = 0; b < cfg->boxes; b++) {
		const struct dbx_box *x = &r->box[b];
		printf("  %4u  %8llu  %8llu  %8llu  %8llu  %8llu  %8lld  %8llu  %9llu  %8llu\n", b + 1,
		       (unsigned long long)x->users, (unsigned long long)x->leased,
		       (unsigned long long)x->sold, (unsigned long long)x->returned,
		       (unsigned long long)x->held, (long long)x->stranded,
		       (unsigned long long)x->refused, (unsigned long long)x->refused_elsewhere,
		       (unsigned long long)x->in_db);
	}
	printf("  %4s  %8llu  %8llu  %8llu  %8llu  %8llu  %8lld  %8llu  %9llu  %8llu\n\n", "all",
	       (unsigned long long)t.users, (unsigned long long)t.leased, (unsigned long long)t.sold,
	       (unsigned long long)t.returned, (unsigned long long)t.held, (long long)t.stranded,
	       (unsigned long long)t.refused, (unsigned long long)t.elsewhere,
	       (unsigned long long)t.in_db);
	printf("pool     total %llu, unleased %llu at the end; sale %.1f s\n",
	       (unsigned long long)r->pool_total, (unsigned long long)r->pool_unleased, secs);
	printf("undersell %llu units unsold while %llu buyers were refused; %llu refusals came while "
	       "another box's segment held units\n", (unsigned long long)t.undersell,
	       (unsigned long long)t.refused, (unsigned long long)t.elsewhere);
	if (r->backstop_known)
		printf("backstop %llu second orders across boxes refused and cancelled\n",
		       (unsigned long long)r->backstop_conflicts);
	printf("invariants\n");
	printf("  %-4s sold over all boxes %llu <= total %llu\n", i_sold ? "ok" : "FAIL",
	       (unsigned long long)t.sold, (unsigned long long)r->pool_total);
	printf("  %-4s sold %llu + held by the boxes %llu + pool %llu = total %llu\n",
	       i_conserve ? "ok" : "FAIL", (unsigned long long)t.sold, (unsigned long long)t.held,
	       (unsigned long long)r->pool_unleased, (unsigned long long)r->pool_total);
	printf("  %-4s the central ledger, leased - returned = %llu, = sold + held = %llu\n",
	       i_ledger ? "ok" : "FAIL", (unsigned long long)r->ledger_out,
	       (unsigned long long)(t.sold + t.held));
	printf("  %-4s every acknowledged order (%llu) is in its box's MariaDB once: %llu missing, "
	       "%llu not acknowledged\n", i_acked ? "ok" : "FAIL", (unsigned long long)t.acked,
	       (unsigned long long)t.missing, (unsigned long long)t.extra);
	printf("  %-4s no user over the limit across boxes: %llu over\n", i_limit ? "ok" : "FAIL",
	       (unsigned long long)r->users_over_limit);
	printf("  %-4s every answer as the API promises, every process and daemon ended cleanly%s%s\n",
	       i_clean ? "ok" : "FAIL", r->first_problem[0] ? ": " : "", r->first_problem);
	printf("result   %s\n", ok ? "OK: every invariant held" : "FAILED");
	if (cfg->json)
		dbx_json(r, &t, ok);
	fflush(stdout);
	return ok ? TOOL_OK : TOOL_FAIL;
}

/* ------------------------------------------------------------------------
 * Teardown and the entry point
 * ------------------------------------------------------------------------ */

static void dbx_teardown(struct dbx_run *r)
{
	uint32_t b;
	int rc;

	dbx_kill_buyers(r);
	for (b = 0; b < r->cfg.boxes; b++) {
		struct dbx_box *x = &r->box[b];
		if (x->serve_pid > 0 && !dbx_daemon_gone(x)) {
			kill(x->serve_pid, SIGTERM);
			for (int t = 0; t < 600 && !dbx_daemon_gone(x); t++)
				dbx_sleep_ms(50);
			if (!dbx_daemon_gone(x)) {
				kill(x->serve_pid, SIGKILL);
				waitpid(x->serve_pid, &x->serve_status, 0);
				x->serve_reaped = 1;
			}
		}
		if (x->h)
			flash_close(x->h);
		x->h = NULL;
	}
	if (r->sh)
		munmap(r->sh, r->sh_bytes);
	r->sh = NULL;
	if (r->cfg.keep && r->dir[0]) {
		fprintf(stderr, "demo: kept the cluster (%s), the segments", r->gdir);
		for (b = 0; b < r->cfg.boxes; b++)
			if (r->box[b].created)
				fprintf(stderr, " %s", r->box[b].seg);
		fprintf(stderr, " and the WALs and logs in %s/box*\n", r->dir);
		fprintf(stderr, "demo: remove: sh %s stop %s; flashstock destroy --name ...; rm -rf %s\n",
		        r->fixture_path, r->gdir, r->dir);
		return;
	}
	for (b = 0; b < r->cfg.boxes; b++)
		if (r->box[b].created) {
			if ((rc = flash_seg_destroy(r->box[b].seg)) != FLASH_OK)
				tool_fail("demo: destroy segment", rc);
			r->box[b].created = 0;
		}
	if (r->cluster_started && fixture_run(r->fixture_path, "stop", r->gdir, NULL, 0) != 0)
		fprintf(stderr, "demo: %s stop %s failed\n", r->fixture_path, r->gdir);
	if (r->dir[0])
		nftw(r->dir, dbx_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Does argv ask for more than one box?  (cmd_demo.c routes it here.) */
int demo_boxes_wanted(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && argv[i] != NULL; i++) {
		const char *v = NULL;
		if (strcmp(argv[i], "--boxes") == 0 && i + 1 < argc)
			v = argv[i + 1];
		else if (strncmp(argv[i], "--boxes=", 8) == 0)
			v = argv[i] + 8;
		if (v)
			return strcmp(v, "1") != 0;
	}
	return 0;
}

int demo_boxes_main(int argc, char **argv)
{
	struct dbx_run r;
	MYSQL *c = NULL;
	int rc, rc2;

	memset(&r, 0, sizeof r);
	rc = dbx_parse(argc, argv, &r.cfg);
	if (rc >= 0)
		return rc;
	tool_stop_signals(dbx_on_signal, 1);

	rc = dbx_setup_dir(&r);
	if (rc == TOOL_OK)
		rc = dbx_setup_cluster(&r);
	if (rc == TOOL_OK && dbx_signal)
		rc = dbx_fail(&r, "interrupted by signal %d", (int)dbx_signal);
	if (rc == TOOL_OK)
		rc = dbx_setup_central(&r);
	if (rc == TOOL_OK && dbx_signal)
		rc = dbx_fail(&r, "interrupted by signal %d", (int)dbx_signal);
	if (rc == TOOL_OK)
		rc = dbx_setup_boxes(&r);
	if (rc == TOOL_OK)
		rc = dbx_sale(&r);
	if (rc == TOOL_OK && !(c = dbx_connect(&r, 0)))
		rc = dbx_fail(&r, "cannot connect to the cluster's node 1");
	if (rc == TOOL_OK)
		rc = dbx_catch_up(&r, c);
	if (rc == TOOL_OK) {
		rc2 = dbx_stop_daemons(&r);
		rc = dbx_figures(&r, c);
		if (rc == TOOL_OK)
			rc = rc2;
	}
	if (c)
		mysql_close(c);
	dbx_teardown(&r);
	return rc;
}
