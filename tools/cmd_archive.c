/*
 * cmd_archive.c -- `flashstock archive`: reclaim ended activities whose
 * records MariaDB has applied (flash_archive).  The decision -- ended long
 * enough ago, MariaDB's applied LSN at the segment's WAL LSN -- is
 * persist/daemon/archiver.c's, shared with `serve --archive-after-s`; this file is
 * options, messages and exit codes.  A refusal changes nothing: every check
 * is made before the first archive.
 */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "archiver.h"
#include "mysql_apply.h"
#include "reconcile_sql.h"

static void archive_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock archive --name NAME (--activity ID | --ended)\n"
	        "                          (--mysql URL | --mysql-defaults FILE | --no-mysql-check)\n"
	        "                          [--grace-s N] [--dry-run]\n"
	        "\n"
	        "Archive ended activities of segment NAME: reclaim their order-table slots,\n"
	        "skus, stock shards, live tokens and limit entries, so a segment that runs a\n"
	        "sale every day keeps fixed memory.  The orders stay in the WAL and in\n"
	        "MariaDB; in the segment an archived order then answers FLASH_EARCHIVED, and\n"
	        "`flashstock order` reads it from MariaDB.  An ARCHIVE record goes to the\n"
	        "WAL (serve writes it; MariaDB marks activities.archived_lsn).\n"
	        "\n"
	        "An activity is archived only when\n"
	        "  -  its window closed at least --grace-s seconds ago, and\n"
	        "  -  MariaDB has applied every record the segment reflects: the applier's\n"
	        "     applied LSN (table applied_lsn) is at least the segment's WAL LSN\n"
	        "     (status: 'reflects WAL LSN'), so MariaDB holds all its orders.\n"
	        "Otherwise it is refused with the reason and nothing is changed.\n"
	        "On a box that runs `serve --backstop`, leave archiving to its\n"
	        "--archive-after-s: it also waits until the backstop has written the\n"
	        "activity's orders to fs_user_limit, which this command cannot ask (an order\n"
	        "of an archived activity is never checked across boxes).\n"
	        "\n"
	        "options:\n"
	        "  --name NAME            segment name (required)\n"
	        "  --activity ID          archive this activity\n"
	        "  --ended                archive every activity ended --grace-s ago or more\n"
	        "  --mysql URL            MariaDB the daemon's applier writes (serve --mysql):\n"
	        "                         mysql://user:pass@localhost/db?socket=PATH\n"
	        "  --mysql-defaults FILE  ... or its [client] option file\n"
	        "  --no-mysql-check       archive without asking MariaDB: the activity's orders\n"
	        "                         are then only as safe as the WAL (no MariaDB to look\n"
	        "                         them up in, or one that has not applied them yet)\n"
	        "  --grace-s N            the activity must have ended N seconds ago (default 0)\n"
	        "  --dry-run              check and list what would be archived; change nothing\n"
	        "\n"
	        "Prints one line per activity: 'archived activity ID: orders N, skus N,\n"
	        "shards N, tokens N' (or 'would archive' with --dry-run).\n"
	        "\n"
	        "exit: 0 archived (--ended: also when none was due); 1 refused (not ended, not\n"
	        "      applied by MariaDB, unknown or already archived: nothing changed) or an\n"
	        "      archive failed (the line says which); 2 usage error\n");
}

struct archive_args {
	const char *name;
	uint32_t    activity;          /* 0: --ended */
	int         ended;
	int         no_check;
	int         dry_run;
	uint32_t    grace_s;
	struct mdb_opts mo;
};

static int archive_parse(int argc, char **argv, struct archive_args *a)
{
	enum { O_NAME = 256, O_ACT, O_ENDED, O_MYSQL, O_DEFAULTS, O_NOCHECK, O_GRACE, O_DRY };
	static const struct option longopts[] = {
		{ "help",           no_argument,       NULL, 'h' },
		{ "name",           required_argument, NULL, O_NAME },
		{ "activity",       required_argument, NULL, O_ACT },
		{ "ended",          no_argument,       NULL, O_ENDED },
		{ "mysql",          required_argument, NULL, O_MYSQL },
		{ "mysql-defaults", required_argument, NULL, O_DEFAULTS },
		{ "no-mysql-check", no_argument,       NULL, O_NOCHECK },
		{ "grace-s",        required_argument, NULL, O_GRACE },
		{ "dry-run",        no_argument,       NULL, O_DRY },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			archive_help(stdout);
			return -1;
		case O_NAME:
			a->name = optarg;
			break;
		case O_ACT:
			if (tool_opt_u32(cmd, "--activity", optarg, 1, UINT32_MAX, &a->activity) != 0)
				return TOOL_USAGE;
			break;
		case O_ENDED:
			a->ended = 1;
			break;
		case O_MYSQL:
			a->mo.url = optarg;
			break;
		case O_DEFAULTS:
			a->mo.defaults_file = optarg;
			break;
		case O_NOCHECK:
			a->no_check = 1;
			break;
		case O_GRACE:
			if (tool_opt_u32(cmd, "--grace-s", optarg, 0, 100u * 365 * 86400, &a->grace_s) != 0)
				return TOOL_USAGE;
			break;
		case O_DRY:
			a->dry_run = 1;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (!a->name)
		return tool_usage_err(cmd, "--name NAME is required");
	if (!!a->activity + a->ended != 1)
		return tool_usage_err(cmd, "give exactly one of --activity ID and --ended");
	if (!!a->mo.url + !!a->mo.defaults_file + a->no_check != 1)
		return tool_usage_err(cmd, "give exactly one of --mysql URL, --mysql-defaults FILE and "
		                      "--no-mysql-check: an activity is archived only once MariaDB holds "
		                      "its orders, or when you say it need not");
	if (tool_opt_mysql_url(cmd, a->mo.url) != 0)
		return TOOL_USAGE;
	a->mo.require_db = 1;
	return 0;
}

static int u32_in(const uint32_t *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* The activity @p id of the segment; FLASH_ENOT_FOUND if it has none. */
static int activity_find(flash_t *h, uint32_t id, struct flash_activity *out)
{
	struct flash_activity *v = NULL;
	size_t n = 0;
	int rc = archiver_ended(h, INT64_MAX, 0, &v, &n);   /* every activity: all end before INT64_MAX */
	if (rc)
		return rc;
	rc = FLASH_ENOT_FOUND;
	for (size_t i = 0; i < n; i++)
		if (v[i].id == id) {
			*out = v[i];
			rc = FLASH_OK;
		}
	free(v);
	return rc;
}

/* --activity ID: the one candidate, refused unless it has ended --grace-s
 * ago and is not archived already.  @return 0, or -1 (said on stderr). */
static int archive_one(flash_t *h, const struct archive_args *a, const uint32_t *gone,
                       size_t ngone, int64_t now, int64_t grace_ns,
                       struct flash_activity **cand, size_t *ncand)
{
	char b1[40];
	struct flash_activity one;
	int rc = activity_find(h, a->activity, &one);
	if (rc == FLASH_ENOT_FOUND) {
		tool_failf("archive: activity %u is not in segment %s (never added, or archived "
		           "already: `flashstock order` finds its orders in MariaDB); nothing changed",
		           a->activity, a->name);
		return -1;
	}
	if (rc) {
		tool_fail("archive: reading the catalog", rc);
		return -1;
	}
	if (u32_in(gone, ngone, one.id)) {
		tool_failf("archive: activity %u is archived already (MariaDB: activities.archived_lsn "
		           "is set); nothing changed", one.id);
		return -1;
	}
	if (one.end_ns > now) {
		tool_failf("archive: activity %u has not ended: its window closes at %s (%s); nothing "
		           "changed", one.id, tool_fmt_time(one.end_ns, b1, sizeof b1),
		           flash_rcname(FLASH_ENOT_ENDED));
		return -1;
	}
	if (one.end_ns > now - grace_ns) {
		tool_failf("archive: activity %u ended at %s, less than --grace-s %u ago; nothing "
		           "changed", one.id, tool_fmt_time(one.end_ns, b1, sizeof b1), a->grace_s);
		return -1;
	}
	if (!(*cand = malloc(sizeof **cand))) {
		tool_fail("archive", FLASH_ENOMEM);
		return -1;
	}
	(*cand)[0] = one;
	*ncand = 1;
	return 0;
}

/* Archive each candidate (or say what would be, --dry-run). */
static int archive_run(flash_t *h, const struct archive_args *a, const struct flash_activity *cand,
                       size_t ncand, uint64_t applied, uint64_t wal_lsn)
{
	int ret = TOOL_OK;
	char b1[40], b2[40];
	for (size_t i = 0; i < ncand; i++) {
		const struct flash_activity *x = &cand[i];
		tool_fmt_time(x->end_ns, b1, sizeof b1);
		if (a->no_check)
			snprintf(b2, sizeof b2, "MariaDB not asked");
		else
			snprintf(b2, sizeof b2, "MariaDB applied %llu >= %llu", (unsigned long long)applied,
			         (unsigned long long)wal_lsn);
		if (a->dry_run) {
			printf("would archive activity %u (ended %s; %s)\n", x->id, b1, b2);
			continue;
		}
		struct flash_archive_info info;
		memset(&info, 0, sizeof info);
		int rc = flash_archive(h, x->id, 0, &info);
		if (rc != FLASH_OK) {
			fprintf(stderr, "flashstock: archive: activity %u: %s (%s)\n", x->id, flash_strerror(rc),
			        flash_rcname(rc));
			ret = TOOL_FAIL;
			continue;
		}
		printf("archived activity %u: orders %llu, skus %u, shards %u, tokens %llu (ended %s; %s)\n",
		       x->id, (unsigned long long)info.orders, info.skus, info.shards,
		       (unsigned long long)info.tokens, b1, b2);
	}
	fflush(stdout);
	return ret;
}

int cmd_archive(int argc, char **argv)
{
	struct archive_args a;
	memset(&a, 0, sizeof a);
	int prc = archive_parse(argc, argv, &a);
	if (prc == -1)
		return TOOL_OK;
	if (prc)
		return prc;

	flash_t *h = NULL;
	mdb_t *m = NULL;
	struct flash_activity *cand = NULL;
	uint32_t *gone = NULL;          /* MariaDB: archived already */
	size_t ncand = 0, ngone = 0;
	uint64_t applied = 0, wal_lsn = 0;
	int64_t now = tool_realtime_ns(), grace_ns = (int64_t)a.grace_s * 1000000000ll;
	int ret = TOOL_FAIL, rc;

	if ((rc = flash_open(a.name, a.dry_run ? FLASH_RDONLY : 0, &h)) != FLASH_OK) {
		char what[300];
		snprintf(what, sizeof what, "archive: open %s", a.name);
		return tool_fail(what, rc);
	}
	if (!a.no_check) {
		rc = mdb_open(&a.mo, &m);
		if (rc == FLASH_OK)
			rc = mdb_applied_lsn(m, &applied);
		if (rc == FLASH_OK)
			rc = rsql_archived(m, &gone, &ngone);
		if (rc != FLASH_OK) {
			tool_failf("archive: MariaDB %s: %s; nothing changed", mdb_where(m),
			           flash_strerror(rc));
			goto out;
		}
	}

	/* Which activities. */
	if (a.activity) {
		if (archive_one(h, &a, gone, ngone, now, grace_ns, &cand, &ncand) != 0)
			goto out;
	} else {
		if ((rc = archiver_ended(h, now, grace_ns, &cand, &ncand)) != FLASH_OK) {
			tool_fail("archive: reading the catalog", rc);
			goto out;
		}
		size_t k = 0;
		for (size_t i = 0; i < ncand; i++)
			if (!u32_in(gone, ngone, cand[i].id))
				cand[k++] = cand[i];
		ncand = k;
		if (!ncand) {
			printf("no activity of %s ended %us ago or more that is not archived: nothing to do\n",
			       a.name, a.grace_s);
			ret = TOOL_OK;
			goto out;
		}
	}

	/* Has MariaDB applied what the segment reflects? */
	if (!a.no_check) {
		rc = archiver_applied(h, applied, &wal_lsn);
		if (rc == FLASH_OK && wal_lsn == 0) {
			tool_failf("archive: segment %s was never served (it reflects no WAL LSN): its records "
			           "are in no WAL and not in MariaDB; run `flashstock serve --mysql` first; "
			           "nothing changed", a.name);
			goto out;
		}
		if (rc == FLASH_EBUSY) {
			tool_failf("archive: MariaDB (%s) has applied up to LSN %llu, the segment reflects WAL "
			           "LSN %llu: not every record of activity %u%s is in MariaDB yet (is `flashstock "
			           "serve --mysql` running?); nothing changed", mdb_where(m),
			           (unsigned long long)applied, (unsigned long long)wal_lsn, cand[0].id,
			           ncand > 1 ? " and the others" : "");
			goto out;
		}
		if (rc) {
			tool_fail("archive: reading the segment's identity", rc);
			goto out;
		}
	}

	ret = archive_run(h, &a, cand, ncand, applied, wal_lsn);
out:
	free(cand);
	free(gone);
	mdb_close(m);
	flash_close(h);
	return ret;
}
