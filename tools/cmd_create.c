/*
 * cmd_create.c -- `flashstock create`: make a new segment with the given
 * capacities, mode and durability (flash_seg_create()), and optionally
 * windowed request-id and user tables (flash_seg_reclaim_set()).
 */
#include "tool.h"

#include <ctype.h>
#include <getopt.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

static void create_help(FILE *out, const struct flash_seg_opts *d)
{
	fprintf(out,
	        "usage: flashstock create --name NAME [options]\n"
	        "\n"
	        "Create a shared-memory segment (fails if NAME exists).  Capacities are fixed\n"
	        "for the segment's life; a full table is an error, never an overwrite.  Each\n"
	        "table capacity is 1..%u.  All of the segment's memory is reserved in\n"
	        "/dev/shm at once: create fails, saying how much it needs, if less is free.\n"
	        "\n"
	        "  --name NAME            POSIX shm name, e.g. /sale1 (required)\n"
	        "  --activities N         catalog activities          (default %u)\n"
	        "  --skus N               (activity, sku) pairs        (default %u)\n"
	        "  --shards N             stock slots over all skus    (default %u)\n"
	        "  --users N              per-user limit entries       (default %u)\n"
	        "  --orders N             order records                (default %u)\n"
	        "  --tokens N             token entries                (default %u)\n"
	        "  --requests N           request ids remembered       (default %u)\n"
	        "  --locks N              leased lock names            (default %u)\n"
	        "  --procs N              handles attached at once, 1..%u (default %u)\n"
	        "  --ring N               records per handle ring, a power of two in\n"
	        "                         %u..%u (default %u)\n"
	        "  --mode 0600|0660       permissions (default 0%o); 0660 shares with a group\n"
	        "  --group G              group name or gid for mode 0660\n"
	        "  --durability async|sync  acknowledge at once, or after fdatasync (default %s)\n"
	        "  --request-window-s N   window the tables (flashstock.h section 11): request\n"
	        "                         ids remembered at least N s (and at most ~2N), ids\n"
	        "                         must carry their time (flash_request_id_new); the\n"
	        "                         request and user tables take %u banks each\n"
	        "  --limit-day-s N        business day / user-table generation of a windowed\n"
	        "                         segment (default 86400 once windowed)\n"
	        "  --no-reclaim           one bank per table, ids remembered for the segment's\n"
	        "                         life (the default when neither option above is given)\n"
	        "\n"
	        "exit: 0 created; 1 failed (e.g. name exists, not enough memory); 2 usage error\n",
	        FLASH_CAP_MAX, d->max_activities, d->max_skus, d->max_shards, d->max_users,
	        d->max_orders, d->max_tokens, d->max_requests, d->max_locks,
	        FLASH_PROCS_MAX, d->max_procs, FLASH_RING_MIN, FLASH_RING_MAX, d->ring_records, d->mode,
	        d->durability == FLASH_DURABILITY_SYNC ? "sync" : "async", FLASH_GEN_BANKS);
}

/* --group NAME|GID: the segment's group, which needs --mode 0660.
 * @return 0 or TOOL_USAGE. */
static int create_group(const char *cmd, const char *group, struct flash_seg_opts *o)
{
	struct group *g = getgrnam(group);
	if (g) {
		o->gid = (int64_t)g->gr_gid;
	} else if (isdigit((unsigned char)group[0])) {
		uint64_t gid;
		if (tool_opt_u64(cmd, "--group", group, 0, UINT32_MAX - 1, &gid))
			return TOOL_USAGE;
		o->gid = (int64_t)gid;
	} else {
		return tool_usage_err(cmd, "--group: no group named '%s' (give a group name or "
		                      "a numeric gid)", group);
	}
	if (o->mode != 0660)
		return tool_usage_err(cmd, "--group needs --mode 0660");
	return 0;
}

/* Create segment @p name, windowed with @p ro when asked (before anyone
 * attaches).  @return TOOL_OK, or the failure said on stderr with nothing
 * left behind. */
static int create_segment(const char *name, const struct flash_seg_opts *o, int windowed,
                          const struct flash_reclaim_opts *ro)
{
	char what[300];
	int rc = flash_seg_create(name, o);
	if (rc == FLASH_ENOMEM) {
		uint64_t need = 0;
		struct statvfs sv;
		if (flash_seg_size(o, &need) == FLASH_OK && statvfs("/dev/shm", &sv) == 0)
			return tool_failf("create %s: %s: the segment needs %llu bytes, /dev/shm has "
			                  "%llu bytes free (lower the capacities, or grow /dev/shm)",
			                  name, flash_strerror(rc), (unsigned long long)need,
			                  (unsigned long long)sv.f_bavail * (unsigned long long)sv.f_frsize);
	}
	if (rc != FLASH_OK) {
		snprintf(what, sizeof what, "create %s", name);
		return tool_fail(what, rc);
	}
	if (windowed) {
		/* right after the create, before anyone attaches (flash_seg_reclaim_set) */
		flash_t *h = NULL;

		if ((rc = flash_open(name, 0, &h)) == FLASH_OK) {
			rc = flash_seg_reclaim_set(h, ro);
			flash_close(h);
		}
		if (rc != FLASH_OK) {
			flash_seg_destroy(name);
			snprintf(what, sizeof what, "create %s: windowing the tables", name);
			return tool_fail(what, rc);
		}
	}
	return TOOL_OK;
}

int cmd_create(int argc, char **argv)
{
	enum { O_NAME = 256, O_ACT, O_SKUS, O_SHARDS, O_USERS, O_ORDERS, O_TOKENS,
	       O_REQUESTS, O_LOCKS, O_PROCS, O_RING, O_MODE, O_GROUP, O_DUR, O_REQWIN, O_DAY,
	       O_NORECLAIM };
	static const struct option longopts[] = {
		{ "help",       no_argument,       NULL, 'h' },
		{ "name",       required_argument, NULL, O_NAME },
		{ "activities", required_argument, NULL, O_ACT },
		{ "skus",       required_argument, NULL, O_SKUS },
		{ "shards",     required_argument, NULL, O_SHARDS },
		{ "users",      required_argument, NULL, O_USERS },
		{ "orders",     required_argument, NULL, O_ORDERS },
		{ "tokens",     required_argument, NULL, O_TOKENS },
		{ "requests",   required_argument, NULL, O_REQUESTS },
		{ "locks",      required_argument, NULL, O_LOCKS },
		{ "procs",      required_argument, NULL, O_PROCS },
		{ "ring",       required_argument, NULL, O_RING },
		{ "mode",       required_argument, NULL, O_MODE },
		{ "group",      required_argument, NULL, O_GROUP },
		{ "durability", required_argument, NULL, O_DUR },
		{ "request-window-s", required_argument, NULL, O_REQWIN },
		{ "limit-day-s", required_argument, NULL, O_DAY },
		{ "no-reclaim", no_argument,       NULL, O_NORECLAIM },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	struct flash_seg_opts o;
	const char *name = NULL, *group = NULL;
	uint32_t *target;
	int c, rc, windowed = 0, no_reclaim = 0;
	struct flash_reclaim_opts ro = { .req_window_s = 86400, .user_gen_s = 86400 };

	flash_seg_opts_default(&o);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		target = NULL;
		switch (c) {
		case 'h':
			create_help(stdout, &o);
			return TOOL_OK;
		case O_NAME:     name = optarg; break;
		case O_ACT:      target = &o.max_activities; break;
		case O_SKUS:     target = &o.max_skus; break;
		case O_SHARDS:   target = &o.max_shards; break;
		case O_USERS:    target = &o.max_users; break;
		case O_ORDERS:   target = &o.max_orders; break;
		case O_TOKENS:   target = &o.max_tokens; break;
		case O_REQUESTS: target = &o.max_requests; break;
		case O_LOCKS:    target = &o.max_locks; break;
		case O_PROCS:    target = &o.max_procs; break;
		case O_RING:
			if (tool_opt_u32(cmd, "--ring", optarg, FLASH_RING_MIN, FLASH_RING_MAX, &o.ring_records))
				return TOOL_USAGE;
			if (o.ring_records & (o.ring_records - 1))
				return tool_usage_err(cmd, "--ring: %s is not a power of two", optarg);
			break;
		case O_MODE:
			if (strcmp(optarg, "0600") == 0 || strcmp(optarg, "600") == 0)
				o.mode = 0600;
			else if (strcmp(optarg, "0660") == 0 || strcmp(optarg, "660") == 0)
				o.mode = 0660;
			else
				return tool_usage_err(cmd, "--mode: expected 0600 or 0660, got '%s'", optarg);
			break;
		case O_GROUP:    group = optarg; break;
		case O_DUR:
			if (strcmp(optarg, "async") == 0)
				o.durability = FLASH_DURABILITY_ASYNC;
			else if (strcmp(optarg, "sync") == 0)
				o.durability = FLASH_DURABILITY_SYNC;
			else
				return tool_usage_err(cmd, "--durability: expected async or sync, got '%s'", optarg);
			break;
		case O_REQWIN:
			if (tool_opt_u32(cmd, "--request-window-s", optarg, 1, 31536000, &ro.req_window_s))
				return TOOL_USAGE;
			windowed = 1;
			break;
		case O_DAY:
			if (tool_opt_u32(cmd, "--limit-day-s", optarg, 1, 31536000, &ro.user_gen_s))
				return TOOL_USAGE;
			windowed = 1;
			break;
		case O_NORECLAIM: no_reclaim = 1; break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
		if (target) {
			char opt[32];
			uint32_t max = c == O_PROCS ? FLASH_PROCS_MAX : FLASH_CAP_MAX;
			snprintf(opt, sizeof opt, "--%s", longopts[c - O_NAME + 1].name);
			if (tool_opt_u32(cmd, opt, optarg, 1, max, target))
				return TOOL_USAGE;
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (windowed && no_reclaim)
		return tool_usage_err(cmd, "--no-reclaim contradicts --request-window-s / --limit-day-s");
	if (!name)
		return tool_usage_err(cmd, "--name is required");
	if (group && (rc = create_group(cmd, group, &o)) != 0)
		return rc;
	if ((rc = create_segment(name, &o, windowed, &ro)) != TOOL_OK)
		return rc;
	printf("created %s: %u skus, %u shards, %u users, %u orders, %u tokens, "
	       "%u requests, %u procs, ring %u, mode 0%o, %s\n",
	       name, o.max_skus, o.max_shards, o.max_users, o.max_orders,
	       o.max_tokens, o.max_requests, o.max_procs, o.ring_records, o.mode,
	       o.durability == FLASH_DURABILITY_SYNC ? "sync" : "async");
	if (windowed)
		printf("windowed: request ids %u s, business day %u s, %u banks per table\n",
		       ro.req_window_s, ro.user_gen_s, FLASH_GEN_BANKS);
	return TOOL_OK;
}
