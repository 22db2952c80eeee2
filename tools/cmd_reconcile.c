/*
 * cmd_reconcile.c -- `flashstock reconcile`: compare the segment, the WAL
 * and MySQL per (activity, sku) and per order, print every difference, and
 * exit 1 if there is any.  The comparison itself is persist/reconcile/reconcile.c
 * (reconcile_run); this file is options and exit codes.
 *
 * --repair makes MySQL agree with the WAL (persist/reconcile/reconcile_repair.c):
 * it needs --wal and MySQL, changes MySQL in one transaction, prints one
 * line per change before committing, and exits by the re-check that
 * follows.
 */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"

static void reconcile_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock reconcile [--name NAME] [--wal DIR]\n"
	        "                            [--mysql URL | --mysql-defaults FILE]\n"
	        "                            [--json] [--threshold PCT] [--no-orders]\n"
	        "       flashstock reconcile --repair --wal DIR (--mysql URL | --mysql-defaults FILE)\n"
	        "                            [--name NAME] [--threshold PCT]\n"
	        "\n"
	        "Prove that the witnesses of one sale agree: the segment NAME (opened\n"
	        "read-only), the WAL in DIR (folded record by record) and MySQL (item_stock\n"
	        "and sums over orders).  Per (activity, sku) it compares presence, total,\n"
	        "available and sold; inside each witness available + sold = total and sold =\n"
	        "units of active orders; in MySQL no user above the per-user limit; and, with\n"
	        "a segment and MySQL, every order of the segment against its MySQL row, and\n"
	        "with the WAL and MySQL, every order of the WAL against its MySQL row.\n"
	        "Every difference is printed, one line each ('DIFF kind activity/sku ...').\n"
	        "Run it at quiescence: no order in flight, no daemon holding the WAL, the\n"
	        "applier caught up.  Any witness may be left out; at least one is needed.\n"
	        "\n"
	        "options:\n"
	        "  --name NAME            segment name\n"
	        "  --wal DIR              WAL directory (no `serve` may have it open)\n"
	        "  --mysql URL            mysql://user:pass@localhost/db?socket=PATH (the\n"
	        "                         password is never printed)\n"
	        "  --mysql-defaults FILE  take the MySQL connection from option file FILE\n"
	        "                         ([client] group) instead\n"
	        "  --json                 print one JSON object instead of lines\n"
	        "  --threshold PCT        print an ALERT line to stderr when the differing\n"
	        "                         units exceed PCT %% of all units (default 0.1)\n"
	        "  --no-orders            skip the order-by-order comparisons\n"
	        "  --repair               make MySQL agree with the WAL, its authority: in one\n"
	        "                         transaction holding the applier off (applied_lsn\n"
	        "                         locked, never moved), fold the WAL to MySQL's applied\n"
	        "                         LSN, set each item_stock row and order that differs\n"
	        "                         (insert those missing), printing one 'REPAIR ...' line\n"
	        "                         per change before committing; what the WAL cannot\n"
	        "                         decide (MySQL rows absent from the WAL, per-user limit\n"
	        "                         breaches, the segment's differences) is printed 'NOT\n"
	        "                         REPAIRED ... (reason)' and left alone.  Then checks\n"
	        "                         again.  Needs --wal and --mysql/--mysql-defaults;\n"
	        "                         --name adds the segment (compared, never changed).\n"
	        "                         May run while `serve` runs.\n"
	        "\n"
	        "exit: 0 the witnesses agree (--repair: the re-check found no difference);\n"
	        "      1 any difference (--repair: some remain), or the comparison could not\n"
	        "      be made (the reason is on stderr); 2 usage error, a malformed --mysql\n"
	        "      URL included (nothing read, nothing changed)\n");
}

int cmd_reconcile(int argc, char **argv)
{
	enum { O_NAME = 256, O_WAL, O_MYSQL, O_DEFAULTS, O_JSON, O_THRESHOLD, O_REPAIR, O_NO_ORDERS };
	static const struct option longopts[] = {
		{ "help",           no_argument,       NULL, 'h' },
		{ "name",           required_argument, NULL, O_NAME },
		{ "wal",            required_argument, NULL, O_WAL },
		{ "mysql",          required_argument, NULL, O_MYSQL },
		{ "mysql-defaults", required_argument, NULL, O_DEFAULTS },
		{ "json",           no_argument,       NULL, O_JSON },
		{ "threshold",      required_argument, NULL, O_THRESHOLD },
		{ "repair",         no_argument,       NULL, O_REPAIR },
		{ "no-orders",      no_argument,       NULL, O_NO_ORDERS },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	struct reconcile_run_opts o;
	struct mdb_opts mo;
	int c, repair = 0, no_orders = 0, rc;
	char *end;

	memset(&o, 0, sizeof o);
	memset(&mo, 0, sizeof mo);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			reconcile_help(stdout);
			return TOOL_OK;
		case O_NAME:
			o.segment = optarg;
			break;
		case O_WAL:
			o.wal_dir = optarg;
			break;
		case O_MYSQL:
			mo.url = optarg;
			break;
		case O_DEFAULTS:
			mo.defaults_file = optarg;
			break;
		case O_JSON:
			o.json = 1;
			break;
		case O_THRESHOLD: {
			double pct = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || !(pct > 0.0 && pct <= 100.0))
				return tool_usage_err(cmd, "--threshold: '%s' is not a percentage in (0, 100]",
				                      optarg);
			o.alert_ratio = pct / 100.0;
			break;
		}
		case O_REPAIR:
			repair = 1;
			break;
		case O_NO_ORDERS:
			no_orders = 1;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (mo.url && mo.defaults_file)
		return tool_usage_err(cmd, "give --mysql or --mysql-defaults, not both");
	/* malformed: a bad command line (exit 2), as for serve, before any
	 * witness is read */
	if (tool_opt_mysql_url(cmd, mo.url) != 0)
		return TOOL_USAGE;
	if (repair && !o.wal_dir)
		return tool_usage_err(cmd, "--repair needs --wal DIR: the WAL is what MySQL is repaired from");
	if (repair && !mo.url && !mo.defaults_file)
		return tool_usage_err(cmd, "--repair needs --mysql URL or --mysql-defaults FILE: MySQL is "
		                      "what it repairs");
	if (repair && o.json)
		return tool_usage_err(cmd, "--repair prints lines; --json is for reports only");
	o.repair = repair;
	/* a mistyped database would be created empty and then differ from
	 * everything: refused (mdb_opts.require_db) */
	mo.require_db = 1;
	if (mo.url || mo.defaults_file)
		o.mysql = &mo;
	if (!o.segment && !o.wal_dir && !o.mysql)
		return tool_usage_err(cmd, "name at least one witness: --name, --wal, --mysql");
	if (o.segment && o.mysql && !no_orders && !repair)
		o.flags |= RECONCILE_ORDERS;
	if (o.wal_dir && o.mysql && !no_orders && !repair)
		o.flags |= RECONCILE_WAL_ORDERS;

	rc = reconcile_run(&o, stdout, stderr);
	fflush(stdout);
	/* 2 from the run means "could not compare": a failure, not a usage error. */
	return rc == 0 ? TOOL_OK : TOOL_FAIL;
}
