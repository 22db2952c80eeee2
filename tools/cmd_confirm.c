/*
 * cmd_confirm.c -- `flashstock confirm`: pay a reservation (issue 22):
 * flash_confirm() on one order, RESERVED -> ACTIVE before its pay-by time,
 * through a handle of this process, as a payment callback of an application
 * would.  A reservation past its pay-by time is expired by this very call
 * (whoever meets it first settles it): the answer is then "expired unpaid".
 */
#include "tool.h"

#include <getopt.h>
#include <string.h>

static void confirm_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock confirm --name NAME ORDER_NO\n"
	        "\n"
	        "Confirm (pay) reservation ORDER_NO of segment NAME: a reservation placed\n"
	        "with `flashstock order --reserve MS` (or flash_order_req.reserve_ms) becomes\n"
	        "an active order, for good, if its pay-by time has not come.  A reservation\n"
	        "whose pay-by time has passed is expired (its units and, per the activity,\n"
	        "the user's limit slot go back) and the confirm is refused: 'reservation\n"
	        "expired unpaid'.  An order active already is answered as confirmed, as a\n"
	        "retried payment callback must be.  In sync durability the command returns\n"
	        "once the confirm is in the WAL.\n"
	        "\n"
	        "options:\n"
	        "  --name NAME   segment name (required)\n"
	        "\n"
	        "exit: 0 confirmed (now, or active already); 1 refused or failed, the reason\n"
	        "      on stderr as 'flashstock: confirm: order N: <reason>' -- expired unpaid\n"
	        "      (FLASH_EEXPIRED), cancelled, no such order, archived, or confirmed but\n"
	        "      not durable yet (FLASH_EFATE_UNKNOWN); 2 usage error (nothing changed)\n");
}

/* The command line: --name and one ORDER_NO.  @return 0, -1 (--help), or TOOL_USAGE. */
static int confirm_parse(int argc, char **argv, const char **name, uint64_t *order_no)
{
	static const struct option longopts[] = {
		{ "help", no_argument,       NULL, 'h' },
		{ "name", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			confirm_help(stdout);
			return -1;
		case 'n':
			*name = optarg;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (!*name)
		return tool_usage_err(cmd, "--name NAME is required");
	if (optind + 1 != argc)
		return tool_usage_err(cmd, optind >= argc ? "give ORDER_NO" : "unexpected argument '%s'",
		                      argv[optind + (optind < argc)]);
	if (tool_opt_u64(cmd, "ORDER_NO", argv[optind], 1, UINT64_MAX, order_no) != 0)
		return TOOL_USAGE;
	return 0;
}

int cmd_confirm(int argc, char **argv)
{
	const char *name = NULL;
	uint64_t no = 0;
	struct flash_order_info oi;
	flash_t *h = NULL;
	int rc = confirm_parse(argc, argv, &name, &no);

	if (rc == -1)
		return TOOL_OK;
	if (rc)
		return rc;
	if ((rc = flash_open(name, 0, &h)) != FLASH_OK) {
		char what[300];
		snprintf(what, sizeof what, "confirm: open %s", name);
		return tool_fail(what, rc);
	}
	/* read first only to say which of the two FLASH_OK it was: a payment
	 * that raced another one is still one payment */
	int was_active = flash_order_get(h, no, &oi) == FLASH_OK && oi.state == FLASH_ORDER_ACTIVE;
	rc = flash_confirm(h, no);
	if (rc == FLASH_OK) {
		printf("order %llu: %s\n", (unsigned long long)no,
		       was_active ? "active already (nothing changed)" : "confirmed: active");
	} else {
		tool_failf("confirm: order %llu: %s%s", (unsigned long long)no, flash_strerror(rc),
		           rc == FLASH_EFATE_UNKNOWN ? " (confirmed in the segment)" : "");
	}
	fflush(stdout);
	flash_close(h);
	return rc == FLASH_OK ? TOOL_OK : TOOL_FAIL;
}
