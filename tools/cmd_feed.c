/*
 * cmd_feed.c -- `flashstock feed`: read a WAL directory's records as a named
 * consumer of the order feed (flashstock.h section 10), list the consumers
 * and their lag, or drop one.  One record per line on stdout.
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "feed.h"
#include "pio.h"
#include "wal.h"

static void feed_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock feed --wal DIR --consumer NAME [--from-start] [--follow]\n"
	        "                       [--json] [--commit auto|none] [--limit N] [--mysql URL]\n"
	        "       flashstock feed --list --wal DIR [--json]\n"
	        "       flashstock feed --drop NAME --wal DIR\n"
	        "       flashstock feed --to amqp://... --wal DIR --consumer NAME [...]\n"
	        "                       publish orders, cancels, confirms and expiries to\n"
	        "                       RabbitMQ with confirms\n"
	        "                       (`flashstock feed --to x --help` says more)\n"
	        "\n"
	        "Reads the records `flashstock serve --wal DIR` made durable -- orders,\n"
	        "cancels, restocks, activities, skus -- in LSN order, as consumer NAME (letters,\n"
	        "digits, '.', '_', '-'; at most 64).  A new NAME is registered at the WAL's\n"
	        "durable end (it sees what comes next), or with --from-start at the oldest\n"
	        "record still in DIR; a known NAME resumes after its committed position.\n"
	        "Only durable records are printed (fdatasync'd by serve).  Positions live in\n"
	        "DIR/feed/NAME.pos and survive kills and reboots.  While NAME is registered,\n"
	        "serve keeps the WAL files it has not committed, up to --feed-keep-bytes and\n"
	        "--feed-keep-age; past them the consumer is lost (exit 3) unless --mysql\n"
	        "refills the removed range from MariaDB.\n"
	        "\n"
	        "  --from-start     a new consumer starts at the oldest record in DIR\n"
	        "  --follow         wait for new durable records (a futex on DIR/DURABLE, no\n"
	        "                   polling) until SIGINT/SIGTERM; without it, stop at the\n"
	        "                   durable end\n"
	        "  --json           one JSON object per line: {\"lsn\", \"type\" (order, cancel,\n"
	        "                   confirm, expire, restock, activity, sku, gen, archive;\n"
	        "                   \"gap\" for a\n"
	        "                   refill's missing end), \"slot\", \"seq\", the record's\n"
	        "                   fields named for what they hold in its type (below),\n"
	        "                   \"source\" (wal or mysql), \"missing\" (the names of the\n"
	        "                   fields a refill could not give back, left 0: slot, seq,\n"
	        "                   ts_ns, a sku's units, an archive's counts), \"gap\" (LSNs\n"
	        "                   just below this one that the refill could not serve:\n"
	        "                   restocks, gens)}.  Without --json the same fields as\n"
	        "                   name=value (activity, sku, order, user for activity_id,\n"
	        "                   sku_id, order_no, user_id; missing=a,b or -).  The fields\n"
	        "                   per type:\n"
	        TOOL_REC_FIELDS_HELP
	        "  --commit auto    (default) the position advances only past records already\n"
	        "                   printed: after a batch of lines is written and stdout\n"
	        "                   flushed, the last printed LSN is committed (fsync'd),\n"
	        "                   before the next wait, at --limit and at SIGINT/SIGTERM.\n"
	        "                   Killed in between, the next run prints those lines again:\n"
	        "                   at least once, never a line skipped.  Drop duplicates\n"
	        "                   downstream by order_no (orders, cancels) or lsn\n"
	        "  --commit none    never move the position (peek)\n"
	        "  --limit N        stop after N records\n"
	        "  --mysql URL      refill source: mysql://user:pass@host/db?socket=PATH, the\n"
	        "                   database serve's applier writes; a lost range is served\n"
	        "                   from its orders/activities/item_stock rows, then the WAL\n"
	        "  --list           consumers: name, state (ok, lost), committed LSN, durable\n"
	        "                   LSN, lag in records and seconds, open now; with --json\n"
	        "                   {\"consumers\":[{\"name\", \"state\", \"committed_lsn\",\n"
	        "                   \"durable_lsn\", \"first_lsn\", \"lag_records\", \"lag_seconds\",\n"
	        "                   \"open\", \"created_ns\", \"commit_ns\"}]}\n"
	        "  --drop NAME      unregister NAME: serve no longer keeps WAL for it\n"
	        "\n"
	        "exit: 0 done (durable end, --limit, or a signal with --follow); 1 failure;\n"
	        "2 usage error; 3 the consumer is lost (WAL removed past the retention bound)\n"
	        "and no --mysql was given, or MariaDB has not applied the lost range\n");
}

static volatile sig_atomic_t feed_stop;

static void feed_on_signal(int sig)
{
	(void)sig;
	feed_stop = 1;
}

/*
 * The names of the fields a refill left out (fr_missing), as the record's
 * own names: FLASH_FEED_MISS_SLOT is slot and seq, _TS ts_ns, _VALUE the
 * fields the type keeps there (a sku's units, an archive's counts).
 * Returns how many names went into @p v.
 */
static unsigned feed_missing_names(const struct flash_feed_rec *r, const char **v)
{
	unsigned n = 0;
	if (r->fr_missing & FLASH_FEED_MISS_SLOT) {
		v[n++] = "slot";
		v[n++] = "seq";
	}
	if (r->fr_missing & FLASH_FEED_MISS_TS)
		v[n++] = "ts_ns";
	if (r->fr_missing & FLASH_FEED_MISS_VALUE) {
		if (r->fr_rec.type == FLASH_REC_SKU) {
			v[n++] = "units";
		} else if (r->fr_rec.type == FLASH_REC_ARCHIVE) {
			v[n++] = "orders";
			v[n++] = "skus";
			v[n++] = "shards";
			v[n++] = "tokens";
		}
	}
	return n;
}

static void feed_print(const struct flash_feed_rec *r, int json)
{
	const struct flash_record *x = &r->fr_rec;
	const char *type = x->type == 0 ? "gap" : wal_rec_type_name(x->type, "unknown");
	const char *miss[8];
	unsigned nmiss = feed_missing_names(r, miss);
	char f[512];
	(void)wal_rec_fields(f, sizeof f, x, json);
	const char *src = r->fr_source == FLASH_FEED_MYSQL ? "mysql" : "wal";
	if (json) {
		printf("{\"lsn\":%" PRIu64 ",\"type\":\"%s\",\"slot\":%u,\"seq\":%" PRIu64 "%s%s"
		       ",\"source\":\"%s\",\"missing\":[",
		       r->fr_lsn, type, x->slot, r->fr_seq, f[0] ? "," : "", f, src);
		for (unsigned i = 0; i < nmiss; i++)
			printf("%s\"%s\"", i ? "," : "", miss[i]);
		printf("],\"gap\":%" PRIu64 "}\n", r->fr_gap);
	} else {
		printf("lsn=%" PRIu64 " type=%s slot=%u seq=%" PRIu64 "%s%s source=%s missing=",
		       r->fr_lsn, type, x->slot, r->fr_seq, f[0] ? " " : "", f, src);
		for (unsigned i = 0; i < nmiss; i++)
			printf("%s%s", i ? "," : "", miss[i]);
		printf("%s gap=%" PRIu64 "\n", nmiss ? "" : "-", r->fr_gap);
	}
}

static int feed_list(const char *dir, int json)
{
	size_t n = 0;
	struct flash_feed_info *v = NULL;
	int rc = feed_list_all(dir, &v, &n);
	if (rc != FLASH_OK)
		return tool_fail(dir, rc);
	if (json)
		printf("{\"consumers\":[");
	else
		printf("%-24s %-5s %14s %14s %12s %10s %s\n", "consumer", "state", "committed_lsn",
		       "durable_lsn", "lag_records", "lag_s", "open");
	for (size_t i = 0; i < n; i++) {
		const struct flash_feed_info *f = &v[i];
		const char *st = f->fi_state == FLASH_FEED_LOST ? "lost" : "ok";
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			tool_json_str(stdout, f->fi_name);
			printf(",\"state\":\"%s\",\"committed_lsn\":%" PRIu64 ",\"durable_lsn\":%" PRIu64
			       ",\"first_lsn\":%" PRIu64 ",\"lag_records\":%" PRIu64 ",\"lag_seconds\":%.6f"
			       ",\"open\":%s,\"created_ns\":%" PRId64 ",\"commit_ns\":%" PRId64 "}",
			       st, f->fi_committed_lsn, f->fi_durable_lsn, f->fi_first_lsn, f->fi_lag_records,
			       (double)f->fi_lag_ns / 1e9, f->fi_open ? "true" : "false", f->fi_created_ns,
			       f->fi_commit_ns);
		} else {
			printf("%-24s %-5s %14" PRIu64 " %14" PRIu64 " %12" PRIu64 " %10.3f %s\n", f->fi_name, st,
			       f->fi_committed_lsn, f->fi_durable_lsn, f->fi_lag_records,
			       (double)f->fi_lag_ns / 1e9, f->fi_open ? "yes" : "no");
		}
	}
	if (json)
		printf("]}\n");
	free(v);
	return TOOL_OK;
}

/* Flush what was printed, then commit it (--commit auto). */
static int feed_commit_printed(flash_feed_t *f, int autocommit, uint64_t printed, uint64_t *committed)
{
	if (!autocommit || printed == 0 || printed == *committed)
		return FLASH_OK;
	if (fflush(stdout) != 0 || ferror(stdout))
		return FLASH_ESYS;       /* not printed for sure: do not commit it */
	int rc = flash_feed_commit(f, printed);
	if (rc == FLASH_OK)
		*committed = printed;
	return rc;
}

/* Print the consumer's records until the end (or, --follow, a signal) or
 * --limit, committing what was printed as --commit says.  @return the
 * command's result: 3 when the consumer lost records it cannot get back. */
static int feed_stream(flash_feed_t *f, const char *name, int follow, int json, int autocommit,
                       uint64_t limit)
{
	struct flash_feed_info fi;
	flash_feed_info_get(f, &fi);
	uint64_t committed = fi.fi_committed_lsn, printed = 0, count = 0;
	int exit_rc = TOOL_OK;
	while (!feed_stop && (limit == 0 || count < limit)) {
		struct flash_feed_rec r;
		int rc = flash_feed_next(f, &r, follow ? 200 : 0);
		if (rc == FLASH_ETIMEOUT) {
			if ((rc = feed_commit_printed(f, autocommit, printed, &committed)) != FLASH_OK) {
				exit_rc = tool_fail("feed commit", rc);
				break;
			}
			if (!follow)
				break;
			continue;
		}
		if (rc != FLASH_OK) {
			feed_commit_printed(f, autocommit, printed, &committed);
			fprintf(stderr, "flashstock: feed %s at LSN %" PRIu64 ": %s (%s)\n", name, committed + 1,
			        flash_strerror(rc), flash_rcname(rc));
			exit_rc = rc == FLASH_ELOST || rc == FLASH_EREFILL ? 3 : TOOL_FAIL;
			break;
		}
		feed_print(&r, json);
		printed = r.fr_lsn;
		count++;
		if (count % 1024 == 0 &&
		    (rc = feed_commit_printed(f, autocommit, printed, &committed)) != FLASH_OK) {
			exit_rc = tool_fail("feed commit", rc);
			break;
		}
	}
	int rc;
	if (exit_rc == TOOL_OK && (rc = feed_commit_printed(f, autocommit, printed, &committed)) != FLASH_OK)
		exit_rc = tool_fail("feed commit", rc);
	return exit_rc;
}

int cmd_feed(int argc, char **argv)
{
	const char *cmd = "feed";
	const char *dir = NULL, *name = NULL, *url = NULL, *drop = NULL;
	int from_start = 0, follow = 0, json = 0, list = 0, autocommit = 1;
	uint64_t limit = 0;
	static const struct option longopts[] = {
		{ "wal", required_argument, NULL, 'w' },
		{ "consumer", required_argument, NULL, 'c' },
		{ "from-start", no_argument, NULL, 's' },
		{ "follow", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "commit", required_argument, NULL, 'C' },
		{ "limit", required_argument, NULL, 'n' },
		{ "mysql", required_argument, NULL, 'M' },
		{ "list", no_argument, NULL, 'L' },
		{ "drop", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	/* `feed --to amqp://...`: the RabbitMQ sink, a consumer of its own (cmd_feed_to.c) */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--to") == 0 || strncmp(argv[i], "--to=", 5) == 0)
			return cmd_feed_to(argc, argv);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w': dir = optarg; break;
		case 'c': name = optarg; break;
		case 's': from_start = 1; break;
		case 'f': follow = 1; break;
		case 'j': json = 1; break;
		case 'L': list = 1; break;
		case 'd': drop = optarg; break;
		case 'M': url = optarg; break;
		case 'C':
			if (strcmp(optarg, "auto") == 0)
				autocommit = 1;
			else if (strcmp(optarg, "none") == 0)
				autocommit = 0;
			else
				return tool_usage_err(cmd, "--commit: '%s' is not auto or none", optarg);
			break;
		case 'n':
			if (tool_opt_u64(cmd, "--limit", optarg, 1, UINT64_MAX, &limit) != 0)
				return TOOL_USAGE;
			break;
		case 'h':
			feed_help(stdout);
			return TOOL_OK;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (dir == NULL)
		return tool_usage_err(cmd, "--wal DIR is required");
	if (list)
		return feed_list(dir, json);
	if (drop != NULL) {
		int rc = flash_feed_drop(dir, drop);
		return rc == FLASH_OK ? TOOL_OK : tool_fail(drop, rc);
	}
	if (name == NULL)
		return tool_usage_err(cmd, "--consumer NAME is required (or --list, --drop)");
	if (url != NULL && tool_opt_mysql_url(cmd, url) != 0)
		return TOOL_USAGE;

	struct flash_feed_opts o;
	flash_feed_opts_default(&o);
	o.from_start = (uint32_t)from_start;
	o.mysql_url = url;
	flash_feed_t *f;
	int rc = flash_feed_open(dir, name, &o, &f);
	if (rc == FLASH_EINVAL)
		return tool_usage_err(cmd, "'%s' is not a consumer name (1..64 of A-Z a-z 0-9 . _ -)", name);
	if (rc == FLASH_ENOT_FOUND)
		return tool_failf("feed: WAL directory %s: %s", dir, flash_strerror(rc));
	if (rc == FLASH_ENOTREG)      /* which file, and what it is */
		return tool_failf("feed %s on %s: %s", name, dir, pio_strerror(PIO_ENOTREG));
	if (rc != FLASH_OK)
		return tool_failf("feed %s on %s: %s (%s)", name, dir, flash_strerror(rc), flash_rcname(rc));

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = feed_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int exit_rc = feed_stream(f, name, follow, json, autocommit, limit);
	flash_feed_close(f);
	return exit_rc;
}
