/*
 * flashstock.c -- the `flashstock` command: the table of subcommands and
 * main(), which picks one and runs it.  Each subcommand lives in its own
 * tools/cmd_<name>.c; shared helpers are in tools/tool.c.
 */
#include "tool.h"

#include <string.h>


/* One line per command; adding a command is adding a line (see tool.h). */
static const struct tool_cmd tool_cmds[] = {
	{ "create",  cmd_create,  "create a shared-memory segment" },
	{ "destroy", cmd_destroy, "destroy a segment (refused while in use or undrained)" },
	{ "load",    cmd_load,    "add an activity and its skus (flags or CSV)" },
	{ "status",  cmd_status,  "show catalog, stock, fill levels and counters" },
	{ "demo",    cmd_demo,    "run a complete flash sale on a private segment and check it" },
	{ "serve",   cmd_serve,   "the daemon: write records to the WAL, acknowledge sync orders" },
	{ "wal",     cmd_wal,     "verify or dump a write-ahead log directory, list its snapshots" },
	{ "reconcile", cmd_reconcile, "compare segment, WAL and MySQL; exit 1 on any difference" },
	{ "top",     cmd_top,     "live view of a sale: orders/s, refusals, latency, stock, lag" },
	{ "order",   cmd_order,   "show one order (segment, or MariaDB once archived), or place one or a cart" },
	{ "confirm", cmd_confirm, "pay a reservation: reserved -> active before its pay-by time" },
	{ "expire",  cmd_expire,  "expire reservations past their pay-by time (one, or --all due)" },
	{ "terms",   cmd_terms,   "show an activity's terms and prices with their versions, or change them" },
	{ "archive", cmd_archive, "reclaim ended activities MariaDB has applied (fixed memory)" },
	{ "feed",    cmd_feed,    "read durable records as a named consumer, list consumers; --to amqp://: RabbitMQ" },
	{ "lease",   cmd_lease,   "central leases of stock over boxes: init, pool, status, fence, reclaim" },
	{ "bench",   cmd_bench,   "flashstock vs Redis + Lua vs MariaDB vs a bare CAS loop, checked" },
};

#define TOOL_NCMDS (sizeof tool_cmds / sizeof tool_cmds[0])

static void tool_help(FILE *out)
{
	size_t i;

	fprintf(out,
	        "usage: flashstock <command> [options]\n"
	        "       flashstock <command> --help\n"
	        "       flashstock --version\n"
	        "\n"
	        "flashstock keeps flash-sale stock, per-user limits, tokens and orders in one\n"
	        "POSIX shared-memory segment; processes attach and order lock-free.\n"
	        "\n"
	        "commands:\n");
	for (i = 0; i < TOOL_NCMDS; i++)
		fprintf(out, "  %-10s %s\n", tool_cmds[i].name, tool_cmds[i].help);
	fprintf(out,
	        "\n"
	        "exit status (every command):\n"
	        "  0  success (for checks: everything agrees)\n"
	        "  1  failure, or a check found a difference (demo: an invariant broke)\n"
	        "  2  usage error or bad input; nothing was changed\n"
	        "\n"
	        "Errors are printed to stderr as 'flashstock: <what>: <reason>'.\n"
	        "Try first: flashstock demo\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		tool_help(stderr);
		return TOOL_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		tool_help(stdout);
		return tool_close_stdout(NULL, TOOL_OK);
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("flashstock %d.%d\n", FLASH_VERSION_MAJOR, FLASH_VERSION_MINOR);
		return tool_close_stdout(NULL, TOOL_OK);
	}
	/* Every command's output is checked here, once, after it returns: no
	 * command ends the process itself (exit() is not called; children of
	 * demo and serve leave by _exit(), which flushes nothing). */
	for (i = 0; i < TOOL_NCMDS; i++)
		if (strcmp(argv[1], tool_cmds[i].name) == 0)
			return tool_close_stdout(argv[1], tool_cmds[i].fn(argc - 1, argv + 1));
	fprintf(stderr, "flashstock: unknown command '%s'\nTry 'flashstock --help'.\n", argv[1]);
	return TOOL_USAGE;
}
