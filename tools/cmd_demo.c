/*
 * cmd_demo.c -- `flashstock demo`: a complete flash sale on a private
 * segment, checked end to end.
 *
 * Divisions:
 *   1. Options and the sale's shape
 *   2. The private segment: create, load, destroy (also on SIGINT/SIGTERM)
 *   3. The sale: fork buyers while the daemon drains their rings, reap them
 *   4. After the sale: stop the daemon, read the WAL back, catch MySQL up,
 *      reconcile
 *   5. The report: text, then one JSON object on the last line
 *
 * The daemon (`flashstock serve`'s loop, in a child process: see
 * demo_durable.c) is the segment's only consumer of records: it writes
 * them to a WAL in a private directory and hands them to the MySQL applier
 * of a private MariaDB.  After the sale the parent reads the WAL back and
 * keeps its records for the audit (demo_check.c), so the audit checks what
 * was made durable, not what passed through memory.
 */
#include "tool.h"
#include "demo.h"
#include "demo_durable.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

/* ------------------------------------------------------------------------
 * 1. Options and the sale's shape
 * ------------------------------------------------------------------------ */

static void demo_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock demo [--json] [--buyers N] [--skus N] [--units U] [--procs P]\n"
	        "                       [--limit K] [--cancel-pct C] [--retry-pct R] [--ring N]\n"
	        "                       [--name NAME] [--durability sync|async] [--no-mysql]\n"
	        "                       [--mysql-fixture PATH] [--keep] [--sync-wait-ms MS]\n"
	        "                       [--wal-file-mb N] [--unpaid-units N] [--unpaid-pct P]\n"
	        "                       [--pay-ms MS]\n"
	        "       flashstock demo --boxes N [...]   (N > 1: see flashstock demo --boxes 3 --help)\n"
	        "\n"
	        "Run a flash sale on a private segment and prove it kept its promises.  One\n"
	        "activity (K orders per user, a one-time token per order) sells U units over N\n"
	        "skus (sku 1 is the hot one: half the units, 4 shards).  P processes share the\n"
	        "would-be buyers; each buyer gets a token and orders one unit with a request\n"
	        "id.  Some retry the same request id (must answer FLASH_EDUPLICATE with the\n"
	        "first outcome); 0.5%% order again as the same user until they hold K\n"
	        "orders, then once more (must hit FLASH_ELIMIT); C%% of successful orders are\n"
	        "cancelled (a second cancel must answer FLASH_ECANCELLED).\n"
	        "\n"
	        "Then the unpaid round, while the daemon runs: a second activity's sku of\n"
	        "--unpaid-units is sold out by reservations with --pay-ms to pay (one more\n"
	        "must be refused: the reservations hold every unit); the buyers pay, except\n"
	        "--unpaid-pct of them who never do.  The daemon expires theirs at their\n"
	        "pay-by time, and later buyers must buy exactly the units that came back.\n"
	        "\n"
	        "Durability is real: a private MariaDB is started first (tests/fixtures/\n"
	        "mariadb.sh: datadir and unix socket in a private temporary directory, no TCP\n"
	        "port), then the daemon (`flashstock serve`'s loop) drains the record rings\n"
	        "into a write-ahead log (group commit, fdatasync) and its MySQL applier\n"
	        "copies every durable record into MariaDB, exactly once.  After the buyers\n"
	        "the daemon is stopped (drain, sync), MySQL is caught up with the WAL, and\n"
	        "the reconciler compares segment, WAL and MySQL.  Then the audit, independent\n"
	        "of the engine's counters: the order table (active orders per sku and per\n"
	        "user), the stock, the records read back from the WAL and the buyers' own\n"
	        "tallies must all agree, and every acknowledged order must be in the WAL and\n"
	        "in MySQL exactly once.  Progress goes to stderr.\n"
	        "Everything private (segment, daemon, MariaDB, directory) is removed at the\n"
	        "end, also after a failure or Ctrl-C.\n"
	        "\n"
	        "  --buyers N      would-be buyers (default 200000)\n"
	        "  --skus N        skus, 1..%u (default 3)\n"
	        "  --units U       units over all skus (default 10000)\n"
	        "  --procs P       buyer processes, 1..%u (default 8)\n"
	        "  --limit K       orders per user, 1..%u (default 1)\n"
	        "  --cancel-pct C  %% of successful orders cancelled (default 1)\n"
	        "  --retry-pct R   %% of buyers retrying their request (default 5)\n"
	        "  --unpaid-units N  units of the unpaid round (default 1000; 0: no round)\n"
	        "  --unpaid-pct P  %% of its buyers who never pay (default 30)\n"
	        "  --pay-ms MS     its reservations' pay window (default 1000)\n"
	        "  --ring N        records per process ring, a power of two >= 16 (default:\n"
	        "                  the segment default); small rings make buyers meet a full\n"
	        "                  ring (FLASH_EBUSY, retried) while the parent drains\n"
	        "  --name NAME     segment name (default: a unique /flashstock-demo-PID-XXXX);\n"
	        "                  it must not exist, and it is removed at the end\n"
	        "  --durability M  sync: every order and cancel returns only after the\n"
	        "                  fdatasync that covers its record; async (default): at once,\n"
	        "                  the WAL trails\n"
	        "  --sync-wait-ms MS  bound each buyer's sync wait (flash_sync_wait_set;\n"
	        "                  default %u): an order not durable by then answers\n"
	        "                  FLASH_EFATE_UNKNOWN -- placed, its fate learned later with\n"
	        "                  flash_durable_wait() -- and counts as acknowledged\n"
	        "  --wal-file-mb N size of each WAL file, MiB, 1..1024 (default 16): a small\n"
	        "                  size shows the WAL's rollover in a small sale\n"
	        "  --no-mysql      no MariaDB: WAL only (where MariaDB is not installed); the\n"
	        "                  reconciler compares segment and WAL, and orders_in_mysql and\n"
	        "                  mysql_conflicts are null in the JSON\n"
	        "  --mysql-fixture PATH  the MariaDB fixture script (default: mariadb.sh of the\n"
	        "                  installed share/flashstock, found from the executable's\n"
	        "                  directory, or ./tests/fixtures/mariadb.sh)\n"
	        "  --keep          after a run that got as far as its report, keep the\n"
	        "                  segment, the WAL and the MariaDB running for inspection\n"
	        "                  (`flashstock reconcile`); stderr says how to remove them,\n"
	        "                  and the JSON gains kept_dir, kept_wal, kept_mysql_defaults\n"
	        "  --json          end the output with one JSON object on the last line\n"
	        "\n"
	        "JSON keys: ok, segment, buyers, procs, skus, units_total, sold, available,\n"
	        "  oversold, users_over_limit, leaked_units, ring_mismatches,\n"
	        "  client_mismatches, unexpected, process_failures (each must be 0),\n"
	        "  orders_acked (FLASH_OK answers, and FLASH_EFATE_UNKNOWN ones: placed),\n"
	        "  fate_unknown (FLASH_EFATE_UNKNOWN answers to orders and cancels: sync,\n"
	        "  not durable within the wait bound), fate_learned (of those orders, found\n"
	        "  durable by a second wait, flash_durable_wait), orders_cancelled,\n"
	        "  order_calls (every flash_order call), sold_out, retries, retries_ok,\n"
	        "  repeats, repeats_ok, cancels_twice_ok, busy, records_drained (records read back from the WAL),\n"
	        "  seconds (buying phase), orders_per_sec (order_calls / seconds),\n"
	        "  acked_per_sec, p50_ns, p90_ns, p99_ns, p999_ns, max_ns (flash_order\n"
	        "  latency), durability (\"sync\" or \"async\"), wal_commits (group commits),\n"
	        "  orders_in_wal (ORDER records in the WAL), orders_in_mysql (rows of\n"
	        "  `orders`; null with --no-mysql), mysql_conflicts (records MySQL refused;\n"
	        "  null with --no-mysql), reconcile_diffs (differences the reconciler found).\n"
	        "  orders_in_wal and orders_in_mysql must equal orders_acked, and\n"
	        "  mysql_conflicts and reconcile_diffs must be 0\n"
	        "\n"
	        "exit: 0 every check passed; 1 an invariant broke or the run failed;\n"
	        "      2 usage error\n",
	        DEMO_SKUS_MAX, DEMO_PROCS_MAX, FLASH_LIMIT_MAX, FLASH_SYNC_WAIT_MS_DEFAULT);
}

/* Parse options into @p cfg.  @return -1 to go on, or an exit code. */
/* The demo's run without options: 200,000 buyers in 8 processes, 3 skus of
 * 10,000 units, one per user, async durability with a private MariaDB. */
static void demo_defaults(struct demo_cfg *cfg, struct demo_dur *dd)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->buyers = 200000;
	cfg->nskus = 3;
	cfg->units = 10000;
	cfg->procs = 8;
	cfg->limit = 1;
	cfg->cancel_pct = 1;
	cfg->retry_pct = 5;
	cfg->repeat_pm = 5;
	cfg->seed = 0x5eed5a1e2026ULL;
	cfg->unpaid_units = 1000;
	cfg->unpaid_pct = 30;
	cfg->pay_ms = 1000;
	dd->use_mysql = 1;
	dd->durability = FLASH_DURABILITY_ASYNC;
	dd->wal_file_mb = 16;
}

/* demo_parse's options */
enum { O_BUYERS = 256, O_SKUS, O_UNITS, O_PROCS, O_LIMIT, O_CANCEL, O_RETRY, O_RING, O_NAME, O_JSON,
       O_DURABILITY, O_NO_MYSQL, O_FIXTURE, O_KEEP, O_SYNC_WAIT, O_BOXES, O_WAL_MB, O_UNPAID_UNITS,
       O_UNPAID_PCT, O_PAY_MS };
static const struct option demo_longopts[] = {
	{ "help",       no_argument,       NULL, 'h' },
	{ "buyers",     required_argument, NULL, O_BUYERS },
	{ "skus",       required_argument, NULL, O_SKUS },
	{ "units",      required_argument, NULL, O_UNITS },
	{ "procs",      required_argument, NULL, O_PROCS },
	{ "limit",      required_argument, NULL, O_LIMIT },
	{ "cancel-pct", required_argument, NULL, O_CANCEL },
	{ "retry-pct",  required_argument, NULL, O_RETRY },
	{ "ring",       required_argument, NULL, O_RING },
	{ "name",       required_argument, NULL, O_NAME },
	{ "json",       no_argument,       NULL, O_JSON },
	{ "durability", required_argument, NULL, O_DURABILITY },
	{ "no-mysql",   no_argument,       NULL, O_NO_MYSQL },
	{ "mysql-fixture", required_argument, NULL, O_FIXTURE },
	{ "keep",       no_argument,       NULL, O_KEEP },
	{ "sync-wait-ms", required_argument, NULL, O_SYNC_WAIT },
	{ "boxes",      required_argument, NULL, O_BOXES },   /* 1 here; more: demo_boxes.c */
	{ "wal-file-mb", required_argument, NULL, O_WAL_MB },
	{ "unpaid-units", required_argument, NULL, O_UNPAID_UNITS },
	{ "unpaid-pct", required_argument, NULL, O_UNPAID_PCT },
	{ "pay-ms",     required_argument, NULL, O_PAY_MS },
	{ NULL, 0, NULL, 0 }
};

static int demo_parse(int argc, char **argv, struct demo_cfg *cfg, int *json,
                      struct demo_dur *dd)
{
	const char *cmd = argv[0];
	int c, bad = 0;

	demo_defaults(cfg, dd);
	*json = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", demo_longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			demo_help(stdout);
			return TOOL_OK;
		case O_BUYERS:
			bad = tool_opt_u64(cmd, "--buyers", optarg, 1, 100000000, &cfg->buyers);
			break;
		case O_SKUS:
			bad = tool_opt_u32(cmd, "--skus", optarg, 1, DEMO_SKUS_MAX, &cfg->nskus);
			break;
		case O_UNITS:
			bad = tool_opt_u64(cmd, "--units", optarg, 1, 100000000, &cfg->units);
			break;
		case O_PROCS:
			bad = tool_opt_u32(cmd, "--procs", optarg, 1, DEMO_PROCS_MAX, &cfg->procs);
			break;
		case O_LIMIT:
			bad = tool_opt_u32(cmd, "--limit", optarg, 1, FLASH_LIMIT_MAX, &cfg->limit);
			break;
		case O_CANCEL:
			bad = tool_opt_u32(cmd, "--cancel-pct", optarg, 0, 100, &cfg->cancel_pct);
			break;
		case O_RETRY:
			bad = tool_opt_u32(cmd, "--retry-pct", optarg, 0, 100, &cfg->retry_pct);
			break;
		case O_RING:
			bad = tool_opt_u32(cmd, "--ring", optarg, 16, 1u << 24, &cfg->ring);
			if (!bad && (cfg->ring & (cfg->ring - 1)))
				return tool_usage_err(cmd, "--ring: %s is not a power of two", optarg);
			break;
		case O_NAME:
			cfg->name = strcmp(optarg, "auto") == 0 ? NULL : optarg;
			break;
		case O_JSON:
			*json = 1;
			break;
		case O_DURABILITY:
			if (strcmp(optarg, "sync") == 0)
				dd->durability = FLASH_DURABILITY_SYNC;
			else if (strcmp(optarg, "async") == 0)
				dd->durability = FLASH_DURABILITY_ASYNC;
			else
				return tool_usage_err(cmd, "--durability: '%s' is not sync or async", optarg);
			break;
		case O_NO_MYSQL:
			dd->use_mysql = 0;
			break;
		case O_FIXTURE:
			dd->fixture = optarg;
			break;
		case O_KEEP:
			dd->keep = 1;
			break;
		case O_SYNC_WAIT:
			bad = tool_opt_u32(cmd, "--sync-wait-ms", optarg, 1, 3600000, &cfg->sync_wait_ms);
			break;
		case O_UNPAID_UNITS:
			bad = tool_opt_u64(cmd, "--unpaid-units", optarg, 0, 10000000, &cfg->unpaid_units);
			break;
		case O_UNPAID_PCT:
			bad = tool_opt_u32(cmd, "--unpaid-pct", optarg, 0, 100, &cfg->unpaid_pct);
			break;
		case O_PAY_MS:
			bad = tool_opt_u32(cmd, "--pay-ms", optarg, 1, 600000, &cfg->pay_ms);
			break;
		case O_WAL_MB:
			bad = tool_opt_u32(cmd, "--wal-file-mb", optarg, 1, WAL_SEGMENT_MAX >> 20, &dd->wal_file_mb);
			break;
		case O_BOXES: {
			uint32_t one;
			bad = tool_opt_u32(cmd, "--boxes", optarg, 1, 1, &one);
			break;
		}
		default:
			return tool_bad_option(cmd, c, argv);
		}
		if (bad)
			return TOOL_USAGE;
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (cfg->procs > cfg->buyers)
		cfg->procs = (uint32_t)cfg->buyers;
	if (dd->fixture && !dd->use_mysql)
		return tool_usage_err(cmd, "--mysql-fixture and --no-mysql exclude each other");
	return -1;
}

/* Split the units: sku 1 takes half (all if alone) over 4 shards; the
 * others share the rest evenly, the last one taking the remainder. */
static void demo_shape(struct demo_cfg *cfg)
{
	uint64_t rest;
	uint32_t i;

	if (cfg->nskus == 1) {
		cfg->sku_units[0] = cfg->units;
		cfg->sku_shards[0] = 4;
		return;
	}
	cfg->sku_units[0] = cfg->units / 2;
	cfg->sku_shards[0] = 4;
	rest = cfg->units - cfg->sku_units[0];
	for (i = 1; i < cfg->nskus; i++) {
		cfg->sku_units[i] = rest / (cfg->nskus - 1);
		cfg->sku_shards[i] = 1;
	}
	cfg->sku_units[cfg->nskus - 1] += rest % (cfg->nskus - 1);
}

/* ------------------------------------------------------------------------
 * 2. The private segment
 * ------------------------------------------------------------------------ */

static volatile sig_atomic_t demo_signal;

static void demo_on_signal(int sig)
{
	demo_signal = sig;
}

/* Ctrl-C, SIGTERM, SIGHUP: note it; the run stops at its next check and
 * tears everything down.  A reader that goes away (`demo | head`) must not
 * kill the parent before it removes the segment: writes fail instead. */
static void demo_signals(void)
{
	tool_stop_signals(demo_on_signal, 1);
}

struct demo_run {
	struct demo_cfg      cfg;
	struct flash_seg_opts opts;
	char                 name[80];
	int                  json;
	int                  created;      /* the segment exists: destroy it */
	flash_t             *h;            /* the parent's handle: loader and auditor */
	struct demo_dur      dd;           /* private dir, MariaDB, daemon, WAL, reconcile */
	struct demo_shared  *sh;
	size_t               sh_bytes;
	pid_t                pids[DEMO_PROCS_MAX];
	uint32_t             nforked;
	uint32_t             nalive;
	uint32_t             proc_failures;  /* children that exited non-zero or by signal */
	char                 proc_problem[160];
	struct demo_rings    rings;
	struct demo_unpaid   unpaid;       /* the unpaid round (demo_unpaid.c) */
	char                 unpaid_problem[200];
	int64_t              t_go, t_done;  /* CLOCK_MONOTONIC ns */
	uint32_t             recovered;
};

static uint64_t demo_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * Create the segment, sized for this run on top of the defaults: every
 * buyer's request id is remembered; orders and limit entries cover every
 * unit sold twice over (cancels resell); a process slot per buyer process
 * plus the parent.
 */
static int demo_segment_create(struct demo_run *r)
{
	struct flash_seg_opts *o = &r->opts;
	const struct demo_cfg *cfg = &r->cfg;
	char what[160];
	uint64_t v;
	int rc;

	if (cfg->name) {
		snprintf(r->name, sizeof r->name, "%s", cfg->name);
	} else {
		unsigned rnd = (unsigned)(demo_mix((uint64_t)tool_monotonic_ns() ^
		                                   ((uint64_t)getpid() << 32)) & 0xffffu);
		snprintf(r->name, sizeof r->name, "/flashstock-demo-%d-%04x", (int)getpid(), rnd);
	}
	r->cfg.name = r->name;

	flash_seg_opts_default(o);
	v = demo_max(o->max_requests, cfg->buyers + cfg->buyers / 4 + 1024);
	o->max_requests = (uint32_t)(v > UINT32_MAX ? UINT32_MAX : v);
	v = demo_max(o->max_orders, cfg->units * 2 + cfg->unpaid_units * 2 + 1024);
	o->max_orders = (uint32_t)(v > UINT32_MAX ? UINT32_MAX : v);
	v = demo_max(o->max_users, cfg->units * 2 * cfg->limit + cfg->unpaid_units * 2 + 1024);
	o->max_users = (uint32_t)(v > UINT32_MAX ? UINT32_MAX : v);
	o->max_procs = (uint32_t)demo_max(o->max_procs, cfg->procs + 3);   /* + parent, daemon, spare */
	o->durability = r->dd.durability;
	if (cfg->ring)
		o->ring_records = cfg->ring;

	rc = flash_seg_create(r->name, o);
	if (rc != FLASH_OK) {
		snprintf(what, sizeof what, "demo: create segment %s", r->name);
		return tool_fail(what, rc);
	}
	r->created = 1;
	rc = flash_open(r->name, 0, &r->h);
	if (rc != FLASH_OK) {
		snprintf(what, sizeof what, "demo: open %s", r->name);
		return tool_fail(what, rc);
	}
	return TOOL_OK;
}

/* One activity: open since a second ago for an hour, K per user counted
 * over the activity, a token per order, cancels keep the quota used. */
static int demo_load(struct demo_run *r)
{
	const struct demo_cfg *cfg = &r->cfg;
	struct flash_activity a;
	char what[80];
	uint32_t i;
	int rc;

	memset(&a, 0, sizeof a);
	a.id = DEMO_ACTIVITY;
	a.limit_per_user = cfg->limit;
	a.max_qty = 1;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.flags = FLASH_ACT_TOKEN_REQUIRED;
	a.start_ns = tool_realtime_ns() - 1000000000LL;
	a.end_ns = a.start_ns + 3600LL * 1000000000LL;
	rc = flash_activity_add(r->h, &a);
	if (rc != FLASH_OK)
		return tool_fail("demo: add activity", rc);
	for (i = 0; i < cfg->nskus; i++) {
		rc = flash_sku_add(r->h, DEMO_ACTIVITY, i + 1, cfg->sku_units[i], cfg->sku_shards[i]);
		if (rc != FLASH_OK) {
			snprintf(what, sizeof what, "demo: add sku %u", i + 1);
			return tool_fail(what, rc);
		}
	}
	return TOOL_OK;
}

/* Undo whatever was set up, in reverse order.  Safe at any stage. */
static void demo_teardown(struct demo_run *r)
{
	int rc;

	if (r->dd.daemon_pid > 0 && !r->dd.daemon_exited)
		demo_dur_daemon_stop(&r->dd);

	if (r->sh)
		munmap(r->sh, r->sh_bytes);
	r->sh = NULL;
	if (r->h)
		flash_close(r->h);
	r->h = NULL;
	if (r->created) {
		rc = flash_seg_destroy(r->name);
		if (rc != FLASH_OK) {
			char what[160];
			snprintf(what, sizeof what, "demo: destroy segment %s", r->name);
			tool_fail(what, rc);
		}
		r->created = 0;
	}
	demo_rings_free(&r->rings);
	demo_dur_teardown(&r->dd);
}

/* ------------------------------------------------------------------------
 * 3. The sale
 * ------------------------------------------------------------------------ */

static void demo_sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Collect children that have exited; @p block waits for one. */
static void demo_reap(struct demo_run *r, int block)
{
	int status;
	pid_t pid;
	uint32_t i;

	while (r->nalive > 0) {
		pid = waitpid(-1, &status, block ? 0 : WNOHANG);
		if (pid == 0 || (pid < 0 && errno == EINTR))
			break;
		if (pid < 0) {   /* ECHILD: nobody left to wait for */
			r->nalive = 0;
			break;
		}
		if (demo_dur_reaped(&r->dd, pid, status)) {
			block = 0;   /* the caller notices: demo_dur_daemon_died() */
			continue;
		}
		for (i = 0; i < r->nforked; i++) {
			if (r->pids[i] != pid)
				continue;
			r->pids[i] = 0;
			r->nalive--;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				if (r->proc_failures++ == 0)
					snprintf(r->proc_problem, sizeof r->proc_problem,
					         "buyer process %u %s %d", i,
					         WIFSIGNALED(status) ? "killed by signal" : "exited with",
					         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			}
			break;
		}
		block = 0;
	}
}

static void demo_kill_all(struct demo_run *r)
{
	uint32_t i;

	if (r->sh)
		__atomic_store_n(&r->sh->ds_go, -1, __ATOMIC_RELEASE);
	for (i = 0; i < r->nforked; i++)
		if (r->pids[i] > 0)
			kill(r->pids[i], SIGKILL);
	while (r->nalive > 0)
		demo_reap(r, 1);
}

static void demo_progress(struct demo_run *r, int64_t now)
{
	uint64_t calls = 0, acked = 0, sold = 0;
	struct flash_sku_info si;
	double secs = (double)(now - r->t_go) / 1e9;
	uint32_t i;

	for (i = 0; i < r->cfg.procs; i++) {
		calls += __atomic_load_n(&r->sh->ds_proc[i].dp_calls, __ATOMIC_RELAXED);
		acked += __atomic_load_n(&r->sh->ds_proc[i].dp_acked, __ATOMIC_RELAXED);
	}
	for (i = 0; i < r->cfg.nskus; i++)
		if (flash_sku_get(r->h, DEMO_ACTIVITY, i + 1, &si) == FLASH_OK && si.total >= si.available)
			sold += si.total - si.available;
	fprintf(stderr, "demo: %5.1f s  orders %9llu (%7.1f k/s)  acked %7llu  sold %7llu/%llu\n",
	        secs, (unsigned long long)calls, secs > 0 ? (double)calls / secs / 1e3 : 0.0,
	        (unsigned long long)acked, (unsigned long long)sold,
	        (unsigned long long)r->cfg.units);
}

/*
 * Fork the buyers, wait until each has its handle, start them together,
 * then report progress until every one has exited; the daemon drains their
 * rings meanwhile.  A signal, or the daemon dying, kills the buyers and
 * returns TOOL_FAIL; the caller tears down.
 */
static int demo_sale(struct demo_run *r)
{
	const struct demo_cfg *cfg = &r->cfg;
	int64_t next_progress, deadline;
	pid_t parent = getpid();
	uint32_t i, ready;

	r->sh_bytes = sizeof(struct demo_shared) + cfg->procs * sizeof(struct demo_proc);
	r->sh = mmap(NULL, r->sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->sh == MAP_FAILED) {
		r->sh = NULL;
		return tool_failf("demo: mmap %zu bytes: %s", r->sh_bytes, strerror(errno));
	}

	fprintf(stderr, "demo: %llu buyers in %u processes ...\n", (unsigned long long)cfg->buyers,
	        cfg->procs);
	fflush(NULL);
	for (i = 0; i < cfg->procs; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			tool_failf("demo: fork: %s", strerror(errno));
			demo_kill_all(r);
			return TOOL_FAIL;
		}
		if (pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			signal(SIGPIPE, SIG_DFL);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			_exit(demo_buyer_run(cfg, r->sh, i));
		}
		r->pids[i] = pid;
		r->nforked++;
		r->nalive++;
	}

	/* Everyone attached (or failed to), then go. */
	deadline = tool_monotonic_ns() + 30LL * 1000000000LL;
	for (;;) {
		for (i = 0, ready = 0; i < cfg->procs; i++)
			ready += __atomic_load_n(&r->sh->ds_proc[i].dp_ready, __ATOMIC_ACQUIRE) != 0;
		if (ready == cfg->procs || demo_signal || tool_monotonic_ns() > deadline)
			break;
		demo_reap(r, 0);
		if (r->proc_failures)
			break;
		demo_sleep_us(1000);
	}
	for (i = 0; i < cfg->procs; i++) {
		int orc = r->sh->ds_proc[i].dp_open_rc;
		if (r->sh->ds_proc[i].dp_ready && orc != FLASH_OK) {
			demo_kill_all(r);
			return tool_fail("demo: a buyer process could not open the segment", orc);
		}
	}
	if (ready != cfg->procs || r->proc_failures || demo_signal) {
		demo_kill_all(r);
		if (demo_signal)
			return tool_failf("demo: interrupted by signal %d", (int)demo_signal);
		return tool_failf("demo: buyer processes did not start%s%s",
		                  r->proc_problem[0] ? ": " : "", r->proc_problem);
	}

	r->t_go = tool_monotonic_ns();
	__atomic_store_n(&r->sh->ds_go, 1, __ATOMIC_RELEASE);
	next_progress = r->t_go + 500000000LL;
	while (r->nalive > 0) {
		int64_t now;
		demo_reap(r, 0);
		if (demo_signal) {
			demo_kill_all(r);
			return tool_failf("demo: interrupted by signal %d", (int)demo_signal);
		}
		if (demo_dur_daemon_died(&r->dd)) {
			demo_kill_all(r);
			return tool_failf("demo: the daemon exited during the sale");
		}
		now = tool_monotonic_ns();
		if (now >= next_progress) {
			demo_progress(r, now);
			next_progress = now + 500000000LL;
		}
		demo_sleep_us(1000);
	}
	r->t_done = tool_monotonic_ns();

	/* A buyer that died left work in flight: finish it before the audit
	 * (the daemon then drains what the recovery wrote). */
	if (r->proc_failures) {
		int rc = flash_recover(r->h, &r->recovered);
		if (rc != FLASH_OK)
			tool_fail("demo: recover after a buyer died", rc);
	}
	return TOOL_OK;
}

/* ------------------------------------------------------------------------
 * 4. After the sale
 * ------------------------------------------------------------------------ */

/*
 * Quiescent now: stop the daemon (it drains, commits and marks every record
 * durable, and its applier hands MySQL what it can), read the WAL back into
 * the audit's tallies, catch MySQL up with the rest of the WAL and count
 * its orders, then reconcile the three witnesses.
 */
static int demo_after_sale(struct demo_run *r)
{
	int rc;

	if ((rc = demo_dur_daemon_stop(&r->dd)) != TOOL_OK)
		return rc;
	if (demo_signal)
		return tool_failf("demo: interrupted by signal %d", (int)demo_signal);
	if ((rc = demo_dur_wal_read(&r->dd, &r->rings)) != TOOL_OK)
		return rc;
	if (r->dd.use_mysql && (rc = demo_dur_mysql(&r->dd)) != TOOL_OK)
		return rc;
	if (demo_signal)
		return tool_failf("demo: interrupted by signal %d", (int)demo_signal);
	return demo_dur_reconcile(&r->dd, r->h);
}

/* ------------------------------------------------------------------------
 * 5. The report
 * ------------------------------------------------------------------------ */

struct demo_totals {
	uint64_t calls, acked, sold_out, retries, retry_ok, repeats, repeat_ok;
	uint64_t cancels, cancel_twice_ok, busy, unexpected, cancelled_units;
	uint64_t fate_unknown, fate_learned;
	uint64_t cancelled_sku[DEMO_SKUS_MAX];
	struct bench_hist lat;
	const struct demo_proc *first_bad;
};

static void demo_sum(const struct demo_run *r, struct demo_totals *t)
{
	uint32_t i, s;

	memset(t, 0, sizeof *t);
	bench_hist_init(&t->lat);
	for (i = 0; i < r->cfg.procs; i++) {
		const struct demo_proc *p = &r->sh->ds_proc[i];
		t->calls += p->dp_calls;
		t->acked += p->dp_acked;
		t->sold_out += p->dp_sold_out;
		t->retries += p->dp_retries;
		t->retry_ok += p->dp_retry_ok;
		t->repeats += p->dp_repeats;
		t->repeat_ok += p->dp_repeat_ok;
		t->cancels += p->dp_cancels;
		t->cancel_twice_ok += p->dp_cancel_twice_ok;
		t->busy += p->dp_busy;
		t->unexpected += p->dp_unexpected;
		t->fate_unknown += p->dp_fate_unknown;
		t->fate_learned += p->dp_fate_learned;
		for (s = 0; s < r->cfg.nskus; s++) {
			t->cancelled_sku[s] += p->dp_cancelled_sku[s];
			t->cancelled_units += p->dp_cancelled_sku[s];
		}
		if (p->dp_unexpected && !t->first_bad)
			t->first_bad = p;
		bench_hist_merge(&t->lat, &p->dp_lat);
	}
}

/* `demo --json`: the run's figures and verdict as one JSON object, after
 * the report (pct: p50, p90, p99, p99.9 of flash_order, in ns). */
static void demo_report_json(const struct demo_run *r, const struct demo_audit *a,
                             const struct demo_totals *t, int ok, double secs,
                             const uint64_t pct[4])
{
	const struct demo_cfg *cfg = &r->cfg;
	const struct demo_dur *d = &r->dd;
	const struct serve_stats *st = demo_dur_stats(d);
	printf("{\"ok\":%s,\"segment\":", ok ? "true" : "false");
	tool_json_str(stdout, r->name);
	printf(",\"buyers\":%llu,\"procs\":%u,\"skus\":%u,\"units_total\":%llu,\"sold\":%llu,"
	       "\"available\":%llu,\"oversold\":%llu,\"users_over_limit\":%llu,"
	       "\"leaked_units\":%llu,\"ring_mismatches\":%llu,\"client_mismatches\":%llu,"
	       "\"unexpected\":%llu,\"process_failures\":%u,\"orders_acked\":%llu,"
	       "\"orders_cancelled\":%llu,\"order_calls\":%llu,\"sold_out\":%llu,"
	       "\"retries\":%llu,\"retries_ok\":%llu,\"repeats\":%llu,\"repeats_ok\":%llu,"
	       "\"cancels_twice_ok\":%llu,\"busy\":%llu,\"fate_unknown\":%llu,\"fate_learned\":%llu,"
	       "\"records_drained\":%llu,"
	       "\"seconds\":%.6f,\"orders_per_sec\":%.1f,\"acked_per_sec\":%.1f,"
	       "\"p50_ns\":%llu,\"p90_ns\":%llu,\"p99_ns\":%llu,\"p999_ns\":%llu,"
	       "\"max_ns\":%llu,",
	       (unsigned long long)cfg->buyers, cfg->procs, cfg->nskus,
	       (unsigned long long)a->units_total, (unsigned long long)a->sold,
	       (unsigned long long)a->units_available, (unsigned long long)a->oversold,
	       (unsigned long long)a->users_over_limit, (unsigned long long)a->leaked_units,
	       (unsigned long long)a->ring_mismatches, (unsigned long long)a->client_mismatches,
	       (unsigned long long)t->unexpected, r->proc_failures,
	       (unsigned long long)t->acked, (unsigned long long)t->cancels,
	       (unsigned long long)t->calls, (unsigned long long)t->sold_out,
	       (unsigned long long)t->retries, (unsigned long long)t->retry_ok,
	       (unsigned long long)t->repeats, (unsigned long long)t->repeat_ok,
	       (unsigned long long)t->cancel_twice_ok, (unsigned long long)t->busy,
	       (unsigned long long)t->fate_unknown, (unsigned long long)t->fate_learned,
	       (unsigned long long)r->rings.records, secs,
	       (double)t->calls / secs, (double)t->acked / secs,
	       (unsigned long long)pct[0], (unsigned long long)pct[1], (unsigned long long)pct[2],
	       (unsigned long long)pct[3], (unsigned long long)t->lat.bh_max);
	printf("\"durability\":\"%s\",\"wal_commits\":%llu,\"orders_in_wal\":%llu,",
	       d->durability == FLASH_DURABILITY_SYNC ? "sync" : "async",
	       (unsigned long long)st->commits, (unsigned long long)d->orders_in_wal);
	if (d->use_mysql)
		printf("\"orders_in_mysql\":%llu,\"mysql_conflicts\":%llu,",
		       (unsigned long long)d->orders_in_mysql, (unsigned long long)d->mysql_conflicts);
	else
		printf("\"orders_in_mysql\":null,\"mysql_conflicts\":null,");
	printf("\"unpaid_reserved\":%llu,\"unpaid_paid\":%llu,\"unpaid_never_paid\":%llu,"
	       "\"unpaid_expired\":%llu,\"unpaid_sold_again\":%llu,",
	       (unsigned long long)r->unpaid.reserved, (unsigned long long)r->unpaid.paid,
	       (unsigned long long)r->unpaid.unpaid, (unsigned long long)r->unpaid.expired,
	       (unsigned long long)r->unpaid.resold);
	printf("\"reconcile_diffs\":%llu", (unsigned long long)d->reconcile_diffs);
	if (d->keep) {
		printf(",\"kept_dir\":");
		tool_json_str(stdout, d->dir);
		printf(",\"kept_wal\":");
		tool_json_str(stdout, d->wal_dir);
		printf(",\"kept_mysql_defaults\":");
		if (d->use_mysql)
			tool_json_str(stdout, d->defaults_file);
		else
			printf("null");
	}
	printf("}\n");
}

/* The unpaid round's lines of the report. */
static void demo_report_unpaid(const struct demo_run *r)
{
	const struct demo_unpaid *u = &r->unpaid;
	if (!u->ran) {
		printf("unpaid   no unpaid round (--unpaid-units 0)\n");
		return;
	}
	printf("unpaid   %llu units reserved (a reservation more: FLASH_ESOLD_OUT, every unit held);"
	       " %llu paid, %llu never paid\n"
	       "         and were expired by the daemon at their pay-by time (all seen expired %llu ms"
	       " after the last one's);\n"
	       "         later buyers bought the %llu units that came back, then sold out: %s\n",
	       (unsigned long long)u->reserved, (unsigned long long)u->paid, (unsigned long long)u->unpaid,
	       (unsigned long long)u->wait_ms, (unsigned long long)u->resold,
	       r->unpaid_problem[0] ? r->unpaid_problem : "every unit sold once");
}

static int demo_report(struct demo_run *r, const struct demo_audit *a)
{
	const struct demo_cfg *cfg = &r->cfg;
	struct demo_totals t;
	double secs = (double)(r->t_done - r->t_go) / 1e9;
	uint64_t p50, p90, p99, p999;
	const struct demo_dur *d = &r->dd;
	const struct serve_stats *st = demo_dur_stats(d);
	uint32_t s;
	int ok, dur_ok;

	demo_sum(r, &t);
	p50 = bench_hist_percentile(&t.lat, 50.0);
	p90 = bench_hist_percentile(&t.lat, 90.0);
	p99 = bench_hist_percentile(&t.lat, 99.0);
	p999 = bench_hist_percentile(&t.lat, 99.9);
	if (secs <= 0)
		secs = 1e-9;
	ok = a->oversold == 0 && a->users_over_limit == 0 && a->leaked_units == 0 &&
	     a->ring_mismatches == 0 && a->client_mismatches == 0 && t.unexpected == 0 &&
	     r->proc_failures == 0 && r->unpaid_problem[0] == '\0';
	/* Durable exactly once: every acknowledged order -- the unpaid round's
	 * reservations and later orders too -- is in the WAL and in MySQL,
	 * once, and the three witnesses agree. */
	uint64_t orders = t.acked + r->unpaid.reserved + r->unpaid.resold;
	dur_ok = d->orders_in_wal == orders && d->reconcile_diffs == 0 &&
	         (!d->use_mysql || (d->orders_in_mysql == orders && d->mysql_conflicts == 0));
	ok = ok && dur_ok;

	printf("flashstock demo: %llu buyers in %u processes, %u skus, %llu units, "
	       "limit %u per user, token required\n",
	       (unsigned long long)cfg->buyers, cfg->procs, cfg->nskus,
	       (unsigned long long)cfg->units, cfg->limit);
	printf("segment %s (%s), %s at exit\n\n", r->name,
	       r->opts.durability == FLASH_DURABILITY_SYNC ? "sync" : "async",
	       d->keep ? "kept" : "removed");
	printf("  %4s  %6s  %10s  %10s  %10s  %10s\n",
	       "sku", "shards", "total", "sold", "available", "cancelled");
	for (s = 0; s < cfg->nskus; s++)
		printf("  %4u  %6u  %10llu  %10llu  %10llu  %10llu\n", s + 1, cfg->sku_shards[s],
		       (unsigned long long)a->total[s],
		       (unsigned long long)(a->total[s] >= a->available[s] ? a->total[s] - a->available[s] : 0),
		       (unsigned long long)a->available[s], (unsigned long long)t.cancelled_sku[s]);
	printf("  %4s  %6s  %10llu  %10llu  %10llu  %10llu\n\n", "all", "",
	       (unsigned long long)a->units_total, (unsigned long long)a->sold,
	       (unsigned long long)a->units_available, (unsigned long long)t.cancelled_units);

	printf("orders   %llu flash_order calls in %.3f s = %.1f k/s; acked %llu (%.1f k/s), "
	       "sold out %llu\n",
	       (unsigned long long)t.calls, secs, (double)t.calls / secs / 1e3,
	       (unsigned long long)t.acked, (double)t.acked / secs / 1e3,
	       (unsigned long long)t.sold_out);
	printf("answers  retries %llu/%llu FLASH_EDUPLICATE with the first outcome; "
	       "repeats %llu/%llu FLASH_ELIMIT;\n"
	       "         cancels %llu returned their units, %llu/%llu second cancels "
	       "FLASH_ECANCELLED; ring-full waits %llu\n"
	       "         sync waits past the bound (FLASH_EFATE_UNKNOWN, counted as placed) %llu, "
	       "%llu of them found durable by flash_durable_wait\n",
	       (unsigned long long)t.retry_ok, (unsigned long long)t.retries,
	       (unsigned long long)t.repeat_ok, (unsigned long long)t.repeats,
	       (unsigned long long)t.cancels, (unsigned long long)t.cancel_twice_ok,
	       (unsigned long long)t.cancels, (unsigned long long)t.busy,
	       (unsigned long long)t.fate_unknown, (unsigned long long)t.fate_learned);
	printf("latency  flash_order p50 %llu ns, p90 %llu ns, p99 %llu ns, p99.9 %llu ns, "
	       "max %llu ns\n",
	       (unsigned long long)p50, (unsigned long long)p90, (unsigned long long)p99,
	       (unsigned long long)p999, (unsigned long long)t.lat.bh_max);
	printf("records  %llu drained (%llu orders, %llu cancels); %llu orders in the table "
	       "(%llu active, %llu cancelled, %llu never completed)\n",
	       (unsigned long long)r->rings.records, (unsigned long long)r->rings.orders,
	       (unsigned long long)r->rings.cancels, (unsigned long long)a->orders_scanned,
	       (unsigned long long)a->active_orders, (unsigned long long)a->cancelled_orders,
	       (unsigned long long)a->none_orders);
	printf("audit    oversold %llu, users over limit %llu, leaked units %llu, ring mismatches %llu,\n"
	       "         buyer tally mismatches %llu, unexpected answers %llu, failed processes %u\n",
	       (unsigned long long)a->oversold, (unsigned long long)a->users_over_limit,
	       (unsigned long long)a->leaked_units, (unsigned long long)a->ring_mismatches,
	       (unsigned long long)a->client_mismatches, (unsigned long long)t.unexpected,
	       r->proc_failures);
	if (a->first_problem[0])
		printf("         first finding: %s\n", a->first_problem);
	if (t.first_bad)
		printf("         first unexpected answer: %s: got %s\n", t.first_bad->dp_first_bad,
		       flash_rcname(t.first_bad->dp_first_bad_rc));
	if (r->proc_failures)
		printf("         %s (recovered %u handles)\n", r->proc_problem, r->recovered);
	demo_report_unpaid(r);
	printf("wal      %llu records written by the daemon in %llu group commits; read back: "
	       "%llu records, %llu orders, %llu cancels\n",
	       (unsigned long long)st->records, (unsigned long long)st->commits,
	       (unsigned long long)d->wal_records, (unsigned long long)d->orders_in_wal,
	       (unsigned long long)d->cancels_in_wal);
	if (d->use_mysql)
		printf("mysql    %llu orders in MySQL, %llu refused records, applied LSN %llu "
		       "(%llu applied after the daemon stopped)\n",
		       (unsigned long long)d->orders_in_mysql, (unsigned long long)d->mysql_conflicts,
		       (unsigned long long)d->mysql_applied_lsn, (unsigned long long)d->mysql_late);
	else
		printf("mysql    not used (--no-mysql)\n");
	printf("durable  orders acked %llu, in the WAL %llu", (unsigned long long)orders,
	       (unsigned long long)d->orders_in_wal);
	if (d->use_mysql)
		printf(", in MySQL %llu", (unsigned long long)d->orders_in_mysql);
	printf("; reconcile differences %llu: %s\n", (unsigned long long)d->reconcile_diffs,
	       dur_ok ? "every acknowledged order is durable, once" : "MISMATCH");
	printf("%s", d->reconcile_text ? d->reconcile_text : "reconcile: no report\n");
	printf("result   %s\n", ok ? "OK: every check passed" : "FAILED");

	if (r->json) {
		uint64_t pct[4] = { p50, p90, p99, p999 };
		demo_report_json(r, a, &t, ok, secs, pct);
	}
	fflush(stdout);
	return ok ? TOOL_OK : TOOL_FAIL;
}

/* --keep: leave segment, WAL and MariaDB for inspection; say how to remove them. */
static void demo_keep(struct demo_run *r)
{
	struct demo_dur *d = &r->dd;

	fprintf(stderr, "demo: kept segment %s and %s (WAL in %s)\n", r->name, d->dir, d->wal_dir);
	if (d->use_mysql)
		fprintf(stderr, "demo: kept MariaDB in %s; connect with --mysql-defaults %s\n",
		        d->db_dir, d->defaults_file);
	fprintf(stderr, "demo: inspect: flashstock reconcile --name %s --wal %s%s%s\n", r->name,
	        d->wal_dir, d->use_mysql ? " --mysql-defaults " : "", d->use_mysql ? d->defaults_file : "");
	fprintf(stderr, "demo: remove:  ");
	if (d->use_mysql)
		fprintf(stderr, "sh %s stop %s; ", d->fixture_path, d->db_dir);
	fprintf(stderr, "flashstock destroy --name %s; rm -rf %s\n", r->name, d->dir);
	r->created = 0;
	d->db_started = 0;
	d->dir[0] = '\0';
}

int cmd_demo(int argc, char **argv)
{
	struct demo_run r;
	struct demo_audit audit;
	int rc;

	if (demo_boxes_wanted(argc, argv))
		return demo_boxes_main(argc, argv);
	memset(&r, 0, sizeof r);
	rc = demo_parse(argc, argv, &r.cfg, &r.json, &r.dd);
	if (rc >= 0)
		return rc;
	demo_shape(&r.cfg);
	demo_signals();

	rc = demo_segment_create(&r);
	if (rc == TOOL_OK)
		rc = demo_dur_setup(&r.dd);
	if (rc == TOOL_OK && demo_signal)
		rc = tool_failf("demo: interrupted by signal %d", (int)demo_signal);
	if (rc == TOOL_OK)
		rc = demo_dur_daemon_start(&r.dd, r.name);
	if (rc == TOOL_OK)
		rc = demo_load(&r);
	if (rc == TOOL_OK && r.cfg.unpaid_units)
		rc = demo_unpaid_load(r.h, &r.cfg);
	if (rc == TOOL_OK) {
		int frc = demo_rings_init(&r.rings, r.opts.max_orders, r.opts.max_procs);
		if (frc != FLASH_OK)
			rc = tool_fail("demo: record tables", frc);
	}
	if (rc == TOOL_OK)
		rc = demo_sale(&r);
	if (rc == TOOL_OK)
		rc = demo_unpaid_run(r.h, &r.cfg, &r.unpaid);
	if (rc == TOOL_OK)
		rc = demo_after_sale(&r);
	if (rc == TOOL_OK) {
		int arc = demo_audit_run(r.h, &r.cfg, &r.rings, r.sh, &audit);
		demo_unpaid_audit(r.h, &r.cfg, &r.rings, &r.unpaid, r.unpaid_problem, sizeof r.unpaid_problem);
		rc = arc == FLASH_OK ? demo_report(&r, &audit) : tool_fail("demo: audit", arc);
		if (r.dd.keep)
			demo_keep(&r);
	}
	demo_teardown(&r);
	return rc;
}
