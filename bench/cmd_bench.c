/*
 * cmd_bench.c -- `flashstock bench` / `flashstock-bench`: parse the command
 * line, run every (engine, workload, durability) row in turn, print the
 * markdown table (or JSON lines) and write the plot data.
 *
 * Exit status: 0 when every row ran and every check came out clean
 * (oversold = duplicates = lost = 0, counters agree); 1 when a row failed
 * or a check found a problem (the report says which); 2 on a bad command line.
 */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "."
#endif

struct eng_entry {
	const struct bench_engine *e;   /* NULL: not built in */
	const char *name;
	uint64_t    ops;                /* default measured ops per row */
	const char *why;                /* when not built in */
};

static struct eng_entry engines[] = {
	{ &bench_eng_cas,   "cas-limit",          20000000, NULL },
#ifdef BENCH_HAVE_FLASH
	{ &bench_eng_flash, "flashstock",          1000000, NULL },
	{ &bench_eng_flash_batch, "flashstock-batch", 1000000, NULL },
#else
	{ NULL,             "flashstock",                0, "libflashstock not built" },
	{ NULL,             "flashstock-batch",          0, "libflashstock not built" },
#endif
#ifdef BENCH_HAVE_HIREDIS
	{ &bench_eng_redis,      "redis-lua",           100000, NULL },
	{ &bench_eng_redis_pipe, "redis-lua-pipelined", 200000, NULL },
#else
	{ NULL, "redis-lua",           0, "built without hiredis" },
	{ NULL, "redis-lua-pipelined", 0, "built without hiredis" },
#endif
#ifdef BENCH_HAVE_MARIADB
	{ &bench_eng_mysql_cas, "mysql-cas",        20000, NULL },
	{ &bench_eng_mysql_fu,  "mysql-for-update", 10000, NULL },
#else
	{ NULL, "mysql-cas",        0, "built without MariaDB Connector/C" },
	{ NULL, "mysql-for-update", 0, "built without MariaDB Connector/C" },
#endif
};
#define NENG (sizeof(engines) / sizeof(engines[0]))

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
"usage: %s [options]\n"
"Runs flashstock and its baselines side by side on the same workload and\n"
"machine, checks each for overselling and duplicate buyers from its own\n"
"records, and prints a markdown table (or JSON lines).\n"
"\n"
"  -e, --engines LIST     cas-limit,flashstock,flashstock-batch,redis-lua,\n"
"                         redis-lua-pipelined,mysql-cas,mysql-for-update\n"
"                         (default: all built in)\n"
"  -w, --workloads LIST   hot,zipf,dedup,mixed (default: hot)\n"
"  -d, --durability LIST  async,sync (default: async,sync).  redis: async = AOF\n"
"                         off (shown as none), sync = appendfsync always;\n"
"                         flashstock sync needs the WAL daemon; mysql runs\n"
"                         once with the server's own setting\n"
"  -p, --procs N          worker processes (default 2)\n"
"  -t, --threads N        threads per process (default 1)\n"
"  -n, --ops N            measured ops per row over all threads (default: per\n"
"                         engine, see --list)\n"
"      --scale F          multiply the default op counts by F\n"
"      --warmup N         unmeasured ops before them (default ops/10; ops/100\n"
"                         with --duration)\n"
"  -D, --duration S       stop measuring after S seconds (ops becomes a cap)\n"
"  -r, --rate R           open loop: R arrivals/s in total; latency is measured\n"
"                         from each request's intended start (no coordinated\n"
"                         omission)\n"
"      --timeout S        abort a row still running after S seconds (default\n"
"                         300; 0: never)\n"
"      --stock N          units loaded (default: 9/10 of the order requests)\n"
"      --redis-conns N    unpipelined redis connections in total (default 50)\n"
"      --redis-depth N    pipelined redis: requests in flight per connection (32)\n"
"      --mysql-conns N    mysql connections in total, a thread each (default 16)\n"
"      --shards N         flashstock stock shards per sku (default 1)\n"
"      --sync-threads N   flashstock sync rows: threads per process (default 64;\n"
"                         a group commit batches only the orders in flight)\n"
"      --batch K          flashstock-batch: orders per flash_order_many call\n"
"                         (default 16); each order is charged its call's time\n"
"      --zipf S           Zipf exponent of the zipf workload (default 1.0)\n"
"      --seed N           request generator seed\n"
"      --no-tokens        profiling: flashstock orders carry no token (the\n"
"                         activity requires none); the baselines are unchanged\n"
"      --no-request-ids   profiling: flashstock orders carry no request id\n"
"      --no-wal           profiling: no WAL daemon; the bench drains the rings\n"
"                         itself (flashstock rows then show durability none)\n"
"      --break-baseline   TEST ONLY: baselines drop their stock check, so the\n"
"                         report must show oversold > 0\n"
"      --json             JSON lines on stdout instead of the table\n"
"      --out DIR          also write DIR/table.md, DIR/results.json and the\n"
"                         plot data (throughput.dat, curve-*.dat)\n"
"  -q, --quiet            no progress line\n"
"      --list             list engines and their default op counts\n"
"      --faults           the fault round instead (see --faults --help): one\n"
"                         sale per fault -- MariaDB halted, the daemon killed,\n"
"                         the WAL slowed, the RabbitMQ broker killed;\n"
"                         redis-server killed and halted\n"
"      --redis-server P   redis-server binary (default: redis-server)\n"
"      --mariadb-script P tests/fixtures/mariadb.sh (default: in the source tree);\n"
"                         with FLASH_MYSQL_SOCKET set, that server is used\n"
"  -h, --help\n", argv0);
}

static void on_signal(int sig)
{
	(void)sig;
	bench_interrupted = 1;
}

static int split_list(char *s, char **out, int max)
{
	int n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(s, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
		out[n++] = tok;
	return n;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_dbl(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || *out < 0) ? -1 : 0;
}

/* Does row (engine, dur) make sense, and under which durability label? */
static int row_dur(const struct bench_engine *e, int want, int *label)
{
	if (strncmp(e->name, "redis", 5) == 0) {
		*label = want == BENCH_DUR_SYNC ? BENCH_DUR_SYNC : BENCH_DUR_NONE;
		return 1;
	}
	*label = want;
	return (e->durs & (1u << want)) != 0;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "engines", 1, NULL, 'e' }, { "workloads", 1, NULL, 'w' },
		{ "durability", 1, NULL, 'd' }, { "procs", 1, NULL, 'p' },
		{ "threads", 1, NULL, 't' }, { "ops", 1, NULL, 'n' },
		{ "scale", 1, NULL, 1 }, { "warmup", 1, NULL, 2 },
		{ "duration", 1, NULL, 'D' }, { "rate", 1, NULL, 'r' },
		{ "stock", 1, NULL, 3 }, { "redis-conns", 1, NULL, 4 },
		{ "redis-depth", 1, NULL, 5 }, { "mysql-conns", 1, NULL, 6 },
		{ "shards", 1, NULL, 7 }, { "zipf", 1, NULL, 8 }, { "seed", 1, NULL, 9 },
		{ "break-baseline", 0, NULL, 10 }, { "json", 0, NULL, 11 },
		{ "out", 1, NULL, 12 }, { "quiet", 0, NULL, 'q' }, { "list", 0, NULL, 13 },
		{ "redis-server", 1, NULL, 14 }, { "mariadb-script", 1, NULL, 15 },
		{ "sync-threads", 1, NULL, 16 }, { "timeout", 1, NULL, 19 }, { "no-tokens", 0, NULL, 17 },
		{ "no-request-ids", 0, NULL, 18 }, { "no-wal", 0, NULL, 20 }, { "batch", 1, NULL, 21 },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	struct bench_cfg cfg;
	char *elist = NULL, *wlist = NULL, *dlist = NULL, *out_dir = NULL;
	char *etok[16], *wtok[8], *dtok[4];
	int ne = 0, nwl = 0, nd = 0, json = 0, opt, i, j, k, rc = 0;
	uint64_t ops = 0, warm = UINT64_MAX, v = 0;   /* v: set before each use; 0 keeps a failed parse defined */
	double scale = 1.0;
	struct bench_result *rows;
	size_t nrows = 0, cap;
	const struct eng_entry *sel[NENG];
	int wls[BENCH_WL_COUNT], durs[2];
	char mscript[512];
	struct sigaction old_int, old_term;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--faults") == 0) {
#ifdef BENCH_HAVE_FAULTS
			return cmd_bench_faults(argc, argv);
#else
			fprintf(stderr, "%s: --faults: this build has no WAL daemon (persist/) to inject faults into\n",
			        argv[0]);
			return 2;
#endif
		}
	memset(&cfg, 0, sizeof(cfg));
	cfg.procs = 2;
	cfg.threads = 1;
	cfg.redis_conns = 50;
	cfg.redis_depth = 32;
	cfg.mysql_conns = 16;
	cfg.shards = 1;
	cfg.sync_threads = 64;
	cfg.batch = 16;
	cfg.timeout_s = 300;
	cfg.zipf_s = 1.0;
	cfg.seed = 20260101;
	cfg.progress = 1;
	cfg.redis_server = "redis-server";
	snprintf(mscript, sizeof(mscript), "%s/tests/fixtures/mariadb.sh", BENCH_SOURCE_DIR);
	cfg.mariadb_script = mscript;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "e:w:d:p:t:n:D:r:qh", lo, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case 'e': elist = optarg; break;
		case 'w': wlist = optarg; break;
		case 'd': dlist = optarg; break;
		case 'p': bad = parse_u64(optarg, &v) || v < 1 || v > 64; cfg.procs = (uint32_t)v; break;
		case 't': bad = parse_u64(optarg, &v) || v < 1 || v > 64; cfg.threads = (uint32_t)v; break;
		case 'n': bad = parse_u64(optarg, &ops) || ops < 1; break;
		case 1:   bad = parse_dbl(optarg, &scale) || scale <= 0; break;
		case 2:   bad = parse_u64(optarg, &warm); break;
		case 'D': bad = parse_dbl(optarg, &cfg.duration_s); break;
		case 'r': bad = parse_dbl(optarg, &cfg.rate); break;
		case 3:   bad = parse_u64(optarg, &cfg.stock) || cfg.stock < 1; break;
		case 4:   bad = parse_u64(optarg, &v) || v < 1 || v > 1024; cfg.redis_conns = (uint32_t)v; break;
		case 5:   bad = parse_u64(optarg, &v) || v < 1 || v > 4096; cfg.redis_depth = (uint32_t)v; break;
		case 6:   bad = parse_u64(optarg, &v) || v < 1 || v > 60; cfg.mysql_conns = (uint32_t)v; break;
		case 7:   bad = parse_u64(optarg, &v) || v < 1 || v > 16; cfg.shards = (uint32_t)v; break;
		case 8:   bad = parse_dbl(optarg, &cfg.zipf_s); break;
		case 9:   bad = parse_u64(optarg, &cfg.seed); break;
		case 10:  cfg.break_baseline = 1; break;
		case 11:  json = 1; break;
		case 12:  out_dir = optarg; break;
		case 'q': cfg.progress = 0; break;
		case 13:
			for (i = 0; i < (int)NENG; i++)
				printf("%-20s %s\n", engines[i].name, engines[i].e ? "" : engines[i].why);
			for (i = 0; i < (int)NENG; i++)
				if (engines[i].e)
					printf("  %-20s default --ops %llu\n", engines[i].name,
					       (unsigned long long)engines[i].ops);
			return 0;
		case 14:  cfg.redis_server = optarg; break;
		case 15:  cfg.mariadb_script = optarg; break;
		case 17:  cfg.flash_no_tokens = 1; break;
		case 19:  bad = parse_dbl(optarg, &cfg.timeout_s); break;
		case 18:  cfg.flash_no_reqids = 1; break;
		case 20:  cfg.flash_no_wal = 1; break;
		case 16:  bad = parse_u64(optarg, &v) || v < 1 || v > 128; cfg.sync_threads = (uint32_t)v; break;
		case 21:  bad = parse_u64(optarg, &v) || v < 1 || v > 4096; cfg.batch = (uint32_t)v; break;
		case 'h': usage(stdout, strcmp(argv[0], "bench") == 0 ? "flashstock bench" : argv[0]); return 0;
		default:  usage(stderr, strcmp(argv[0], "bench") == 0 ? "flashstock bench" : argv[0]); return 2;
		}
		if (bad) {
			fprintf(stderr, "%s: bad value for option: %s\n", argv[0], optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument: %s\n", argv[0], argv[optind]);
		return 2;
	}
	if ((uint64_t)cfg.procs * cfg.threads > BENCH_MAX_WORKERS ||
	    (uint64_t)cfg.procs * cfg.sync_threads > BENCH_MAX_WORKERS) {
		fprintf(stderr, "%s: at most %u threads in all\n", argv[0], BENCH_MAX_WORKERS);
		return 2;
	}

	/* engines */
	if (elist) {
		ne = split_list(elist, etok, 16);
		for (i = 0; i < ne; i++) {
			for (j = 0; j < (int)NENG; j++)
				if (strcmp(etok[i], engines[j].name) == 0)
					break;
			if (j == (int)NENG) {
				fprintf(stderr, "%s: unknown engine '%s' (see --list)\n", argv[0], etok[i]);
				return 2;
			}
			sel[i] = &engines[j];
			if (cfg.rate > 0 && strcmp(engines[j].name, "flashstock-batch") == 0) {
				fprintf(stderr, "%s: flashstock-batch runs closed loop only: a batch "
				        "waits for its last arrival, which is not the engine's latency "
				        "(drop --rate or the engine)\n", argv[0]);
				return 2;
			}
		}
	} else {
		/* open loop: every engine but the batch one (closed loop only) */
		for (j = 0; j < (int)NENG; j++)
			if (!(cfg.rate > 0 && strcmp(engines[j].name, "flashstock-batch") == 0))
				sel[ne++] = &engines[j];
	}
	/* workloads */
	if (wlist) {
		nwl = split_list(wlist, wtok, 8);
		for (i = 0; i < nwl; i++)
			if ((wls[i] = bench_workload_parse(wtok[i])) < 0) {
				fprintf(stderr, "%s: unknown workload '%s'\n", argv[0], wtok[i]);
				return 2;
			}
	} else {
		wls[nwl++] = BENCH_WL_HOT;
	}
	/* durabilities */
	if (dlist) {
		nd = split_list(dlist, dtok, 4);
		for (i = 0; i < nd; i++) {
			if (strcmp(dtok[i], "async") == 0)
				durs[i] = BENCH_DUR_ASYNC;
			else if (strcmp(dtok[i], "sync") == 0)
				durs[i] = BENCH_DUR_SYNC;
			else {
				fprintf(stderr, "%s: durability is async or sync, not '%s'\n", argv[0], dtok[i]);
				return 2;
			}
			if (i >= 1) {
				nd = 2;
				break;
			}
		}
	} else {
		durs[nd++] = BENCH_DUR_ASYNC;
		durs[nd++] = BENCH_DUR_SYNC;
	}

	if (cfg.rate > 0)
		fprintf(stderr, "[bench] open loop at %.0f requests/s: latency is measured from each "
		                "request's intended start time (coordinated omission avoided)\n", cfg.rate);
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
	}
	cap = (size_t)ne * (size_t)nwl * 2 + 1;
	rows = calloc(cap, sizeof(*rows));
	if (!rows)
		return 1;
	for (k = 0; k < nwl && !bench_interrupted; k++) {
		for (i = 0; i < ne && !bench_interrupted; i++) {
			const struct eng_entry *ee = sel[i];
			int ran_once = 0;
			if (!ee->e) {
				if (k == 0)
					fprintf(stderr, "[bench] %s: skipped (%s)\n", ee->name, ee->why);
				continue;
			}
			if (ee->e == &bench_eng_cas && wls[k] != BENCH_WL_HOT)
				continue;   /* one counter: only the hot workload means anything */
			for (j = 0; j < nd && !bench_interrupted; j++) {
				int label;
				struct bench_cfg c = cfg;
				int is_mysql = strncmp(ee->name, "mysql", 5) == 0;
				if (is_mysql || ee->e == &bench_eng_cas) {
					/* one row: the server's own setting / no durability */
					if (ran_once)
						continue;
					label = ee->e == &bench_eng_cas ? BENCH_DUR_NONE : BENCH_DUR_SYNC;
				} else if (ee->e == &bench_eng_flash && cfg.flash_no_wal && durs[j] == BENCH_DUR_SYNC) {
					continue;   /* --no-wal: no sync row */
				} else if (!row_dur(ee->e, durs[j], &label)) {
					fprintf(stderr, "[bench] %s %s: no %s row: %s\n", ee->name,
					        bench_workload_name(wls[k]), bench_dur_name(durs[j]),
					        durs[j] == BENCH_DUR_SYNC
					            ? "sync durability needs the WAL daemon, not available in this build"
					            : "not supported");
					continue;
				}
				ran_once = 1;
				c.ops = ops ? ops : (uint64_t)((double)ee->ops * scale);
				if (c.ops < 1)
					c.ops = 1;
				/* with --duration the ops count is only a cap: warm up less */
				c.warmup = warm != UINT64_MAX ? warm : c.ops / (cfg.duration_s > 0 ? 100 : 10);
				bench_run_one(ee->e, &c, wls[k], label, &rows[nrows]);
				if (rows[nrows].failed) {
					fprintf(stderr, "[bench] %s %s %s: FAILED: %s\n", ee->name,
					        bench_workload_name(wls[k]), bench_dur_name(label), rows[nrows].err);
					rc = 1;
				} else if (rows[nrows].chk.oversold || rows[nrows].chk.duplicates > 0 ||
				           rows[nrows].chk.lost || rows[nrows].chk.mismatch) {
					fprintf(stderr, "[bench] %s %s %s: CHECK FAILED: oversold %lld, duplicates %lld, "
					        "lost %lld, counter mismatch %lld\n", ee->name,
					        bench_workload_name(wls[k]), bench_dur_name(label),
					        (long long)rows[nrows].chk.oversold, (long long)rows[nrows].chk.duplicates,
					        (long long)rows[nrows].chk.lost, (long long)rows[nrows].chk.mismatch);
					rc = 1;
				}
				nrows++;
			}
		}
	}
#ifdef BENCH_HAVE_MARIADB
	bench_mysql_shutdown();
#endif
	if (json) {
		bench_report_json(stdout, rows, nrows);
	} else {
		if (cfg.rate > 0)
			printf("Open loop at %.0f requests/s: latency is measured from each request's intended "
			       "start time (coordinated omission avoided).\n\n", cfg.rate);
		bench_report_table(stdout, rows, nrows);
	}
	fflush(stdout);
	if (out_dir) {
		char path[600];
		FILE *f;
		if (bench_report_curves(out_dir, rows, nrows) != 0) {
			fprintf(stderr, "[bench] cannot write plot data under %s: %s\n", out_dir, strerror(errno));
			rc = 1;
		}
		snprintf(path, sizeof(path), "%s/table.md", out_dir);
		if ((f = fopen(path, "w"))) {
			bench_report_table(f, rows, nrows);
			fclose(f);
		}
		snprintf(path, sizeof(path), "%s/results.json", out_dir);
		if ((f = fopen(path, "w"))) {
			bench_report_json(f, rows, nrows);
			fclose(f);
		}
	}
	for (i = 0; i < (int)nrows; i++)
		free(rows[i].hist);
	free(rows);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (bench_interrupted) {
		fprintf(stderr, "[bench] interrupted: the rows after the one running were not run\n");
		rc = 1;
	}
	return rc;
}
