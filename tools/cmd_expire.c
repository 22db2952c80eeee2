/*
 * cmd_expire.c -- `flashstock expire`: expire reservations whose pay-by
 * time has come (issue 22), for a segment no daemon serves (`flashstock
 * serve` runs an expirer of its own) or an operator who will not wait for
 * it: one reservation (flash_expire), or every one due (flash_expire_due, a
 * scan of the order table).  Racing a daemon or a confirm is safe: each
 * reservation is settled once, by whoever gets there first.
 */
#include "tool.h"

#include <getopt.h>
#include <string.h>

static void expire_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock expire --name NAME ORDER_NO\n"
	        "       flashstock expire --name NAME --all [--max N]\n"
	        "\n"
	        "Expire reservations of segment NAME whose pay-by time has come: each one\n"
	        "still unpaid becomes expired, and its units (and, if the activity returns\n"
	        "quota on cancel, the user's limit slot) go back, exactly once.  `flashstock\n"
	        "serve` does this by itself at each pay-by time (unless --no-expire): this\n"
	        "command is for a segment no daemon serves, or to settle them now.\n"
	        "\n"
	        "ORDER_NO expires that one reservation, and says why not when it does not:\n"
	        "not due yet (with its pay-by time), paid (active), cancelled, or expired\n"
	        "already.  --all scans the order table and expires every one due, printing\n"
	        "how many ('expired N reservations'); another process settling some of them\n"
	        "meanwhile is not an error.\n"
	        "\n"
	        "options:\n"
	        "  --name NAME   segment name (required)\n"
	        "  --all         every reservation due, instead of one ORDER_NO\n"
	        "  --max N       with --all: at most N of them, 1..4294967295 (default: all)\n"
	        "\n"
	        "exit: 0 expired (ORDER_NO), or the scan finished (--all, also when none was\n"
	        "      due); 1 ORDER_NO not expired -- not due (FLASH_ENOT_DUE), paid\n"
	        "      (FLASH_ECONFIRMED), cancelled, expired already (FLASH_EEXPIRED), no\n"
	        "      such order -- or a failure, the reason on stderr (--all: after how\n"
	        "      many); 2 usage error (nothing changed)\n");
}

struct expire_args {
	const char *name;
	uint64_t    order_no;     /* 0: --all */
	int         all;
	uint32_t    max;          /* --max; 0: no bound */
};

/* @return 0, -1 (--help), or TOOL_USAGE. */
static int expire_parse(int argc, char **argv, struct expire_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument,       NULL, 'h' },
		{ "name", required_argument, NULL, 'n' },
		{ "all",  no_argument,       NULL, 'a' },
		{ "max",  required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			expire_help(stdout);
			return -1;
		case 'n':
			a->name = optarg;
			break;
		case 'a':
			a->all = 1;
			break;
		case 'm':
			if (tool_opt_u32(cmd, "--max", optarg, 1, UINT32_MAX, &a->max) != 0)
				return TOOL_USAGE;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (!a->name)
		return tool_usage_err(cmd, "--name NAME is required");
	if (a->all)
		return optind < argc ? tool_usage_err(cmd, "give ORDER_NO or --all, not both") : 0;
	if (a->max)
		return tool_usage_err(cmd, "--max goes with --all");
	if (optind + 1 != argc)
		return tool_usage_err(cmd, optind >= argc ? "give ORDER_NO or --all" : "unexpected argument '%s'",
		                      argv[optind + (optind < argc)]);
	return tool_opt_u64(cmd, "ORDER_NO", argv[optind], 1, UINT64_MAX, &a->order_no) ? TOOL_USAGE : 0;
}

/* One reservation: expired, or why not (a not-due one with its pay-by time). */
static int expire_one(flash_t *h, uint64_t no)
{
	struct flash_order_info oi;
	uint32_t units = 0;
	char t[48];
	int rc = flash_expire(h, no, &units);

	if (rc == FLASH_OK) {
		printf("order %llu: expired, %u units back in stock\n", (unsigned long long)no, units);
		return TOOL_OK;
	}
	if (rc == FLASH_ENOT_DUE && flash_order_get(h, no, &oi) == FLASH_OK && oi.pay_by_ns)
		return tool_failf("expire: order %llu: %s (pay by %s)", (unsigned long long)no, flash_strerror(rc),
		                  tool_fmt_time_ms(oi.pay_by_ns, t, sizeof t));
	return tool_failf("expire: order %llu: %s", (unsigned long long)no, flash_strerror(rc));
}

int cmd_expire(int argc, char **argv)
{
	struct expire_args a;
	flash_t *h = NULL;
	uint32_t n = 0;
	int rc;

	memset(&a, 0, sizeof a);
	if ((rc = expire_parse(argc, argv, &a)) != 0)
		return rc == -1 ? TOOL_OK : rc;
	if ((rc = flash_open(a.name, 0, &h)) != FLASH_OK) {
		char what[300];
		snprintf(what, sizeof what, "expire: open %s", a.name);
		return tool_fail(what, rc);
	}
	if (!a.all) {
		rc = expire_one(h, a.order_no);
	} else if ((rc = flash_expire_due(h, a.max, &n)) == FLASH_OK) {
		printf("expired %u reservation%s\n", n, n == 1 ? "" : "s");
		rc = TOOL_OK;
	} else {
		rc = tool_failf("expire: after %u expired: %s", n, flash_strerror(rc));
	}
	fflush(stdout);
	flash_close(h);
	return rc;
}
