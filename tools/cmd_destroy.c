/*
 * cmd_destroy.c -- `flashstock destroy`: remove a segment's name
 * (flash_seg_destroy()).  Attached processes keep their mapping until they
 * close; the memory is freed when the last one does.
 */
#include "tool.h"

#include <getopt.h>

static void destroy_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock destroy --name NAME\n"
	        "\n"
	        "Remove the segment NAME.  Processes still attached keep working on it until\n"
	        "they close; nothing can attach to it afterwards.\n"
	        "\n"
	        "exit: 0 removed; 1 failed (e.g. no such segment); 2 usage error\n");
}

int cmd_destroy(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument,       NULL, 'h' },
		{ "name", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0], *name = NULL;
	char what[300];
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			destroy_help(stdout);
			return TOOL_OK;
		case 'n':
			name = optarg;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (!name)
		return tool_usage_err(cmd, "--name is required");
	rc = flash_seg_destroy(name);
	if (rc != FLASH_OK) {
		snprintf(what, sizeof what, "destroy %s", name);
		return tool_fail(what, rc);
	}
	return TOOL_OK;
}
