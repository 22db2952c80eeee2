/*
 * cmd_serve.c -- `flashstock serve`: the daemon of one segment.  It drains
 * every handle's record ring into the WAL (group commit: one write and one
 * fdatasync per round), marks the records durable so `sync` buyers return,
 * and runs dead-handle recovery and the reconciler periodically.  The loop
 * itself is persist/daemon/serve.c (the reconciler persist/daemon/serve_reconcile.c);
 * this file is options, signals and exit codes.
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backstop.h"
#include "mysql_apply.h"
#include "pio.h"
#include "serve.h"
#include "central.h"

static volatile sig_atomic_t serve_stop_flag;

static void serve_on_signal(int sig)
{
	(void)sig;
	serve_stop_flag = 1;
}

/* `serve --help`: text, not code (tools/man.sh makes the manual page from it) */
static const char serve_usage[] =
	"usage: flashstock serve --name NAME --wal DIR [options]\n"
	"\n"
	"Serve segment NAME: write every record its handles emit to the write-ahead\n"
	"log in DIR (created if missing), make it durable (fdatasync) by group commit,\n"
	"then acknowledge it to buyers waiting in sync durability.  At start the WAL\n"
	"is read through and a torn tail (from a crash) is cut; records the WAL holds\n"
	"already are not written twice.  SIGTERM or SIGINT: drain, sync, exit 0.\n"
	"\n"
	"One daemon per segment and per WAL: a second one is refused, naming the pid\n"
	"of the first (a daemon killed with kill -9 is replaced at once).  A WAL\n"
	"belongs to one segment incarnation (made by create, recorded in every WAL\n"
	"file; not the directory's path, so a moved WAL directory still serves):\n"
	"serve refuses a WAL of another incarnation -- e.g. the old WAL after a\n"
	"reboot, for a segment created again -- and says what to run instead, and\n"
	"an empty WAL for a segment that an earlier WAL served.  A segment rebuilt\n"
	"with the other durability is served, with a line at warn (sync -> async).\n"
	"\n"
	"Under systemd (NOTIFY_SOCKET set; Type=notify): READY=1 once recovery is\n"
	"done and the first round has made what the rings held durable; WATCHDOG=1\n"
	"from the drain loop when WatchdogSec= is set, withheld while it is stuck or\n"
	"an fdatasync has been at work for half of it; STOPPING=1 at SIGTERM.\n"
	"\n"
	"options:\n"
	"  --name NAME          segment name (required)\n"
	"  --wal DIR            WAL directory (required)\n"
	"  --recover            first rebuild the segment from the WAL (after a reboot:\n"
	"                       create the segment with its old options, then serve\n"
	"                       --recover); refused unless the segment is empty.\n"
	"                       The segment takes the WAL's identity.\n"
	"                       With a snapshot in DIR the segment is restored from\n"
	"                       the newest valid one (a corrupt one is reported and\n"
	"                       the previous one tried) and only the WAL after it is\n"
	"                       replayed; the segment may then be absent (or empty:\n"
	"                       it is replaced).  The segment is built under a\n"
	"                       temporary name and takes NAME only when complete:\n"
	"                       a failed or killed rebuild changes nothing, run it\n"
	"                       again.  A corrupt WAL (a bad record that a later\n"
	"                       commit made durable: not a torn tail), a missing\n"
	"                       WAL file or a snapshot past the WAL's end is\n"
	"                       refused, naming the first bad LSN\n"
	"  --recover-if-absent  --recover when segment NAME does not exist (a reboot\n"
	"                       emptied /dev/shm), a plain start when it does (after\n"
	"                       a crash): right on every start, what the systemd unit\n"
	"                       runs (docs/systemd.md)\n"
	"  --accept-loss-after LSN  with --recover: give up every record after LSN\n"
	"                       (it must be the last LSN the refusal says can be\n"
	"                       kept); each dropped record is logged by order number\n"
	"  --snapshot-every S   write a snapshot every S seconds (default 300), and\n"
	"                       once at a clean stop.  A thread replays the durable\n"
	"                       WAL into a private copy of the segment (as much\n"
	"                       shared memory again) and writes it with the WAL fold\n"
	"  --snapshot-wal-bytes B  ... or once the WAL grew by B bytes since the last\n"
	"                       one, whichever comes first (default 67108864: one file)\n"
	"  --no-snapshot        no snapshots (then no WAL file is ever removed).  WAL\n"
	"                       files go once both a snapshot and MySQL (when --mysql\n"
	"                       is given) cover them; snapshots are DIR/snap-*.fss\n"
	"  --no-reclaim         a windowed segment (create --request-window-s): never\n"
	"                       move its generations on nor clear a bank.  By default\n"
	"                       the daemon does, every --reclaim-every-ms (1000), and\n"
	"                       with --mysql clears a bank only once MySQL applied\n"
	"                       what the WAL held when the clear fell due\n"
	"  --reclaim-every-ms N how often the reclaimer looks (default 1000)\n"
	"  --expire-every-ms N  how often the reservation expirer looks (default 10): a\n"
	"                       reservation unpaid at its pay-by time is expired then,\n"
	"                       its units and (per the activity) quota back in stock\n"
	"  --no-expire          no expirer: reservations expire only when a confirm,\n"
	"                       cancel or `flashstock expire` meets them\n"
	"  --keep-wal           take snapshots but never remove a WAL file (keep the\n"
	"                       whole history, e.g. to audit it or to feed a new MySQL)\n"
	"  --feed-keep-bytes B  WAL kept for one feed consumer at most, bytes (default\n"
	"                       1073741824; 0: no bound).  A registered consumer\n"
	"                       (`flashstock feed`) holds back the removal of the WAL\n"
	"                       files it has not committed, like a replication slot;\n"
	"                       past this bound (or --feed-keep-age) the files go, a\n"
	"                       warn line names the consumer, it is \"lost\"\n"
	"                       (flashstock_feed_lost) and can be refilled from MySQL\n"
	"  --feed-keep-age S    ... nor WAL older than S seconds (default 86400; 0: no bound)\n"
	"  --wal-file-mb N      size of each new WAL file, MiB, 1..1024 (default 64)\n"
	"  --drain-max N        records per round at most (default 65536)\n"
	"  --recover-ms N       look for dead handles every N ms (default 1000)\n"
	"  --idle-us N          longest sleep when no record waits, us (default 250)\n"
	"  --stats-s N          log a progress line every N s (default 0: never)\n"
	"  --once               stop as soon as the rings are empty\n"
	"  --metrics [ADDR:]PORT  Prometheus text on http://ADDR:PORT/metrics (ADDR is\n"
	"                       an IPv4 address, 127.0.0.1 if omitted): segment\n"
	"                       counters, WAL lag, group commits, fdatasync latency\n"
	"  --mysql URL          apply durable records to MySQL (MariaDB), exactly once:\n"
	"                       mysql://user:pass@localhost/db?socket=PATH (the password\n"
	"                       is never printed); MySQL down or slow never stops the WAL.\n"
	"                       A database that does not exist is refused (a mistyped\n"
	"                       name would be created empty): create it first, or add\n"
	"                       create_db=1 to the URL's query\n"
	"  --mysql-defaults F   take the MySQL connection from option file F instead\n"
	"  --reconcile-every S  reconcile every S seconds (default 300; 0: never) and once\n"
	"                       at a clean stop: WAL vs MySQL at MySQL's applied LSN, read\n"
	"                       in one consistent snapshot (exact); segment vs WAL only in\n"
	"                       a quiet window (no ring holding an undurable record, no\n"
	"                       operation in flight, before and after), else skipped and\n"
	"                       counted as busy.  Each difference is logged at warn\n"
	"  --reconcile-threshold PCT  log an ALERT (error level) when the differing units\n"
	"                       exceed PCT % of all units (default 0.1)\n"
	"  --archive-after-s N  archive each activity N seconds after its window closed\n"
	"                       (default 3600; 0: never), once MariaDB's applied LSN has\n"
	"                       reached the segment's WAL LSN (so MariaDB holds every\n"
	"                       order of it) and, with --backstop, the backstop has\n"
	"                       written every order to fs_user_limit: a thread looks\n"
	"                       every second and reclaims the activity's order slots,\n"
	"                       skus, shards, tokens and limit entries (flashstock\n"
	"                       archive does the same by hand).\n"
	"                       Needs --mysql or --mysql-defaults; without them nothing\n"
	"                       is archived.  Counted in flashstock_archived_total\n"
	"  --lease URL[,URL...] run the lease agent: the segment's skus (loaded with 0\n"
	"                       units) are stocked from the central pool in database\n"
	"                       flash_central on these MariaDB (Galera) nodes\n"
	"                       (`flashstock lease init`, `lease pool`); buyers never\n"
	"                       wait on it.  A fenced box's stock goes to 0 (logged);\n"
	"                       a clean stop returns what the box holds.  At start the\n"
	"                       agent takes the stock out of the segment until the box\n"
	"                       has registered (put back when it was not fenced); still\n"
	"                       admit buyers only after that: the log's \"box N\n"
	"                       registered\" line, flashstock_lease_epoch > 0 and\n"
	"                       flashstock_lease_fenced 0 in the metrics\n"
	"  --box-id N           this box's id, 1..32767 (required with --lease)\n"
	"  --lease-min U        smallest lease and the least a box keeps (default 10)\n"
	"  --lease-max U        largest lease (default 1000)\n"
	"  --lease-lead-ms MS   how long a lease takes to arrive: the low-water mark is\n"
	"                       the sell rate times this (default 1000)\n"
	"  --heartbeat-s S      heartbeat period (default 2); cut off from MariaDB, the\n"
	"                       box sells nothing later than its last accepted\n"
	"                       heartbeat + 3 periods + 2 s (+ the drain), until it\n"
	"                       answers again\n"
	"  --backstop URL[,URL...]  the per-user limit across boxes: a thread follows\n"
	"                       this box's order feed (consumer \"backstop\") into the\n"
	"                       central database's fs_user_limit (one URL per Galera\n"
	"                       node; the first that answers takes every write, the\n"
	"                       next on failure).  A user's order that finds the\n"
	"                       limit held on another box is refused by its unique\n"
	"                       index, logged, counted (flashstock_backstop_conflicts_total),\n"
	"                       recorded in fs_backstop and cancelled here: its units\n"
	"                       go back to stock and the feed carries the CANCEL.\n"
	"                       Needs --box-id (with or without --lease)\n"
	"  --archive-every-ms N how often the archiver looks (default 1000)\n"
	"  --log-level LEVEL    error, warn, info (default) or debug\n"
	"\n"
	"Log lines go to stderr: '<UTC time> serve [<level>] <message>'.\n"
	"exit: 0 stopped cleanly; 1 failed (segment or WAL unusable, WAL write or\n"
	"fdatasync failed: the segment is marked failed first); 2 usage error, or\n"
	"refused at start with nothing changed (another daemon serves the segment or\n"
	"the WAL, the WAL is not the segment's)\n";

static void serve_help(FILE *out)
{
	fputs(serve_usage, out);
}

/* One option of the daemon itself (segment, WAL, recovery, drain loop,
 * logging, MySQL, metrics).  @return 0, TOOL_USAGE, or -1: not one of them. */
static int serve_opt_daemon(const char *cmd, int c, struct serve_opts *o)
{
	uint32_t v;
	switch (c) {
	case 'n':
		o->segment = optarg;
		return 0;
	case 'w':
		o->wal_dir = optarg;
		return 0;
	case 'R':
		o->recovery.on = 1;
		return 0;
	case 0x130:
		o->recovery.if_absent = 1;
		return 0;
	case 'A':
		if (tool_opt_u64(cmd, "--accept-loss-after", optarg, 0, UINT64_MAX - 1,
		                 &o->recovery.accept_loss_after) != 0)
			return TOOL_USAGE;
		o->recovery.accept_loss = 1;
		return 0;
	case 'f':
		if (tool_opt_u32(cmd, "--wal-file-mb", optarg, 1, WAL_SEGMENT_MAX >> 20, &v) != 0)
			return TOOL_USAGE;
		o->wal_segment_bytes = (uint64_t)v << 20;
		return 0;
	case 'd':
		if (tool_opt_u32(cmd, "--drain-max", optarg, 1, UINT32_MAX, &o->drain_max) != 0)
			return TOOL_USAGE;
		return 0;
	case 'r':
		if (tool_opt_u32(cmd, "--recover-ms", optarg, 1, 3600000, &o->recover_ms) != 0)
			return TOOL_USAGE;
		return 0;
	case 'i':
		if (tool_opt_u32(cmd, "--idle-us", optarg, 1, 1000000, &o->idle_us_max) != 0)
			return TOOL_USAGE;
		return 0;
	case 's':
		if (tool_opt_u32(cmd, "--stats-s", optarg, 0, 86400, &v) != 0)
			return TOOL_USAGE;
		o->stats_ms = v * 1000u;
		return 0;
	case 'o':
		o->once = 1;
		return 0;
	case 'm':
		o->metrics = optarg;
		return 0;
	case 'M':
		o->mysql.url = optarg;
		return 0;
	case 'D':
		o->mysql.defaults = optarg;
		return 0;
	case 'l':
		if (strcmp(optarg, "error") == 0)
			o->log_level = PLOG_ERROR;
		else if (strcmp(optarg, "warn") == 0)
			o->log_level = PLOG_WARN;
		else if (strcmp(optarg, "info") == 0)
			o->log_level = PLOG_INFO;
		else if (strcmp(optarg, "debug") == 0)
			o->log_level = PLOG_DEBUG;
		else
			return tool_usage_err(cmd, "--log-level: '%s' is not error, warn, info or debug",
			                      optarg);
		return 0;
	}
	return -1;
}

/* One option of a service (snapshots, feed retention, reclamation, the
 * reconciler, leases, the backstop, the archiver).  @return as
 * serve_opt_daemon(). */
static int serve_opt_service(const char *cmd, int c, struct serve_opts *o)
{
	uint32_t v;
	switch (c) {
	case 'S':
		if (tool_opt_u32(cmd, "--snapshot-every", optarg, 1, 86400 * 7,
		                 &o->snapshots.every_s) != 0)
			return TOOL_USAGE;
		return 0;
	case 'B':
		if (tool_opt_u64(cmd, "--snapshot-wal-bytes", optarg, 4096, UINT64_MAX / 2,
		                 &o->snapshots.wal_bytes) != 0)
			return TOOL_USAGE;
		return 0;
	case 'N':
		o->snapshots.on = 0;
		return 0;
	case 'K':
		o->snapshots.keep_wal = 1;
		return 0;
	case 0x103:
		o->reclaim.off = 1;
		return 0;
	case 0x104:
		if (tool_opt_u32(cmd, "--reclaim-every-ms", optarg, 1, 3600000, &o->reclaim.every_ms) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x140:
		if (tool_opt_u32(cmd, "--expire-every-ms", optarg, 1, 60000, &o->expire.every_ms) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x141:
		o->expire.off = 1;
		return 0;
	case 0x101:
		if (tool_opt_u64(cmd, "--feed-keep-bytes", optarg, 0, UINT64_MAX / 2,
		                 &o->feed.keep_bytes) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x102:
		if (tool_opt_u64(cmd, "--feed-keep-age", optarg, 0, UINT64_MAX / 2,
		                 &o->feed.keep_age_s) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x105:
		if (tool_opt_u32(cmd, "--archive-after-s", optarg, 0, 100u * 365 * 86400,
		                 &o->archive.after_s) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x110:
		o->lease.urls = optarg;
		return 0;
	case 0x111:
		if (tool_opt_u32(cmd, "--box-id", optarg, 1, FLASH_BOX_ID_MAX, &o->box_id) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x112:
		if (tool_opt_u32(cmd, "--lease-min", optarg, 1, 1u << 30, &o->lease.min) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x113:
		if (tool_opt_u32(cmd, "--lease-max", optarg, 1, 1u << 30, &o->lease.max) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x114:
		if (tool_opt_u32(cmd, "--lease-lead-ms", optarg, 1, 600000, &o->lease.lead_ms) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x115:
		if (tool_opt_u32(cmd, "--heartbeat-s", optarg, 1, 3600, &o->lease.heartbeat_s) != 0)
			return TOOL_USAGE;
		return 0;
	case 0x120:
		o->backstop.urls = optarg;
		return 0;
	case 0x106:
		if (tool_opt_u32(cmd, "--archive-every-ms", optarg, 1, 3600000,
		                 &o->archive.every_ms) != 0)
			return TOOL_USAGE;
		return 0;
	case 'E':
		if (tool_opt_u32(cmd, "--reconcile-every", optarg, 0, 86400, &v) != 0)
			return TOOL_USAGE;
		o->reconcile.every_ms = v * 1000u;
		return 0;
	case 'T': {
		char *end;
		double pct = strtod(optarg, &end);
		if (end == optarg || *end != '\0' || !(pct > 0.0 && pct <= 100.0))
			return tool_usage_err(cmd, "--reconcile-threshold: '%s' is not a percentage in "
			                      "(0, 100]", optarg);
		o->reconcile.threshold = pct / 100.0;
		return 0;
	}
	}
	return -1;
}

/* The options together: what is required, what goes with what, and the
 * URLs; MySQL asked once when one is named.  @return 0 or TOOL_USAGE. */
static int serve_opts_check(const char *cmd, int argc, char **argv, struct serve_opts *o)
{
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (o->segment == NULL)
		return tool_usage_err(cmd, "--name is required");
	if (o->wal_dir == NULL)
		return tool_usage_err(cmd, "--wal is required");
	if (o->recovery.accept_loss && !o->recovery.on)
		return tool_usage_err(cmd, "--accept-loss-after goes with --recover");
	if (o->lease.urls != NULL && o->box_id == 0)
		return tool_usage_err(cmd, "--lease needs --box-id N");
	if (o->lease.urls == NULL && ((o->box_id && !o->backstop.urls) || o->lease.min || o->lease.max ||
	                             o->lease.lead_ms || o->lease.heartbeat_s))
		return tool_usage_err(cmd, "--lease-min, --lease-max, --lease-lead-ms and --heartbeat-s go with "
		                      "--lease, --box-id with --lease or --backstop");
	if (o->lease.min && o->lease.max && o->lease.min > o->lease.max)
		return tool_usage_err(cmd, "--lease-min %u is above --lease-max %u", o->lease.min, o->lease.max);
	if (o->lease.urls != NULL && tool_opt_url_list(cmd, "--lease", o->lease.urls) != 0)
		return TOOL_USAGE;
	if (o->backstop.urls != NULL) {
		char why[256];
		if (o->box_id == 0)
			return tool_usage_err(cmd, "--backstop needs --box-id");
		if (backstop_urls_check(o->backstop.urls, why, sizeof why) != FLASH_OK)
			return tool_usage_err(cmd, "--backstop: %s", why);
	}
	/* a malformed URL is a bad command line: refused before the WAL
	 * directory or anything else is made */
	if (tool_opt_mysql_url(cmd, o->mysql.url) != 0)
		return TOOL_USAGE;
	o->mysql.require_db = 1;
	if (o->mysql.url != NULL || o->mysql.defaults != NULL) {
		/* One connection first: a MySQL that refuses us for good (unknown
		 * database, access denied) is a bad command line, said before the
		 * WAL directory or anything else is touched.  MySQL down is not:
		 * the daemon starts and its applier catches up later. */
		struct mdb_opts mo;
		mdb_t *m = NULL;
		memset(&mo, 0, sizeof mo);
		mo.url = o->mysql.url;
		mo.defaults_file = o->mysql.defaults;
		mo.require_db = 1;
		mo.log = plog_mysql_line;
		mo.log_arg = &o->log_level;
		int mrc = mdb_open(&mo, &m);
		mdb_close(m);
		if (mrc == FLASH_EMYSQL_CONFIG) {
			fprintf(stderr, "flashstock %s: --mysql: MySQL refused the connection for good (see "
			        "above); nothing was started\n", cmd);
			return TOOL_USAGE;
		}
	}

	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",        no_argument,       NULL, 'h' },
		{ "name",        required_argument, NULL, 'n' },
		{ "wal",         required_argument, NULL, 'w' },
		{ "recover",     no_argument,       NULL, 'R' },
		{ "recover-if-absent", no_argument, NULL, 0x130 },
		{ "accept-loss-after", required_argument, NULL, 'A' },
		{ "wal-file-mb", required_argument, NULL, 'f' },
		{ "drain-max",   required_argument, NULL, 'd' },
		{ "recover-ms",  required_argument, NULL, 'r' },
		{ "idle-us",     required_argument, NULL, 'i' },
		{ "stats-s",     required_argument, NULL, 's' },
		{ "once",        no_argument,       NULL, 'o' },
		{ "log-level",   required_argument, NULL, 'l' },
		{ "metrics",     required_argument, NULL, 'm' },
		{ "mysql",       required_argument, NULL, 'M' },
		{ "mysql-defaults", required_argument, NULL, 'D' },
		{ "snapshot-every", required_argument, NULL, 'S' },
		{ "snapshot-wal-bytes", required_argument, NULL, 'B' },
		{ "no-snapshot", no_argument,      NULL, 'N' },
		{ "feed-keep-bytes", required_argument, NULL, 0x101 },
		{ "feed-keep-age", required_argument, NULL, 0x102 },
		{ "keep-wal",    no_argument,      NULL, 'K' },
		{ "no-reclaim",  no_argument,      NULL, 0x103 },
		{ "reclaim-every-ms", required_argument, NULL, 0x104 },
		{ "expire-every-ms", required_argument, NULL, 0x140 },
		{ "no-expire",   no_argument,      NULL, 0x141 },
		{ "reconcile-every", required_argument, NULL, 'E' },
		{ "lease",       required_argument, NULL, 0x110 },
		{ "box-id",      required_argument, NULL, 0x111 },
		{ "lease-min",   required_argument, NULL, 0x112 },
		{ "lease-max",   required_argument, NULL, 0x113 },
		{ "lease-lead-ms", required_argument, NULL, 0x114 },
		{ "heartbeat-s", required_argument, NULL, 0x115 },
		{ "reconcile-threshold", required_argument, NULL, 'T' },
		{ "archive-after-s", required_argument, NULL, 0x105 },
		{ "backstop",    required_argument, NULL, 0x120 },
		{ "archive-every-ms", required_argument, NULL, 0x106 },
		{ NULL, 0, NULL, 0 }
	};
	/* A stop asked for while serve is still starting (the URL check
	 * below waits up to its connect timeout) is kept for serve_run, which
	 * starts, drains what the rings hold and exits 0: the handler is in
	 * place before anything can take time. */
	tool_stop_signals(serve_on_signal, 0);
	const char *cmd = argv[0];
	struct serve_opts o;
	int c, rc;

	serve_opts_default(&o);
	o.snapshots.on = 1;
	o.archive.after_s = 3600;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			serve_help(stdout);
			return TOOL_OK;
		default:
			rc = serve_opt_daemon(cmd, c, &o);
			if (rc < 0)
				rc = serve_opt_service(cmd, c, &o);
			if (rc < 0)
				return tool_bad_option(cmd, c, argv);
			if (rc != 0)
				return rc;
		}
	}
	if ((rc = serve_opts_check(cmd, argc, argv, &o)) != 0)
		return rc;

	o.stop = &serve_stop_flag;
	/* tests only: FLASH_TEST_SYNC_LOG (power cuts, pio.h) */
	if (pio_test_sync_log() != 0) {
		fprintf(stderr, "flashstock %s: FLASH_TEST_SYNC_LOG: %s\n", cmd, strerror(errno));
		return TOOL_FAIL;
	}

	struct serve_stats st;
	if (serve_run(&o, &st) == 0)
		return TOOL_OK;
	return st.refused ? TOOL_USAGE : TOOL_FAIL;
}
