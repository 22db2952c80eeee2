/*
 * cmd_feed_to.c -- `flashstock feed --to amqp://...`: the RabbitMQ sink, a
 * feed consumer in a process of its own.
 *
 * The loop: records from the consumer's position (sink_source.h) go to the
 * broker (persist/feed/amqp_sink.h) with publisher confirms; the position is
 * committed only up to the LSN the broker has confirmed.  A lost
 * connection or a nack: reconnect with backoff, seek back to the confirmed
 * LSN and send again from there (at least once).  The daemon never waits
 * for any of it: a broker that is down or slow only makes this process lag.
 *
 * Divisions: 1. options and help  2. progress and status  3. the loop
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amqp_sink.h"
#include "sink_source.h"

/* ------------------------------------------------------- 1. options and help */

static void feed_to_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock feed --to amqp://USER:PASS@HOST:PORT/VHOST --wal DIR --consumer NAME\n"
	        "                       [--from-start] [--mysql URL] [--exchange X]\n"
	        "                       [--exchange-type topic|direct|fanout] [--queue Q]\n"
	        "                       [--window N] [--confirm-timeout-ms MS] [--backoff-max-ms MS]\n"
	        "                       [--status FILE] [--progress-s S]\n"
	        "\n"
	        "Publishes every order, cancel, confirm, expiry and change of terms of the WAL\n"
	        "in DIR, in LSN order, to the durable exchange X (default flashstock.orders,\n"
	        "type topic) of RabbitMQ, as persistent messages with publisher confirms:\n"
	        "routing key and AMQP type 'order' (a plain order: ship it), 'cancel', and for\n"
	        "a reservation 'order.reserved' (not paid: do not ship), 'order.confirmed'\n"
	        "(paid: ship it), 'order.expired' (never paid) or 'order.cancelled' (given up\n"
	        "unpaid), and for new terms 'activity.updated' or 'sku.price' (a page showing\n"
	        "the old ones is stale); message-id the order number (an order and its cancel\n"
	        "share it: drop duplicates by type and message-id), or the new terms' version;\n"
	        "header 'lsn', a JSON body with the record's fields named as they are by\n"
	        "`flashstock feed --json` (see `flashstock feed --help`).  Other records\n"
	        "(restock, catalog adds) are passed over.  --to @FILE reads the URL from FILE's\n"
	        "first line (keep its password out of ps and shell history).\n"
	        "\n"
	        "Position: the consumer NAME's position advances only past messages the broker has\n"
	        "confirmed (basic.ack); at most N (--window, default 1024) are in flight.  A nack,\n"
	        "a lost connection, or no confirm within --confirm-timeout-ms (default 15000):\n"
	        "the sink reconnects with backoff (100 ms doubling to --backoff-max-ms, default\n"
	        "2000) and sends again from the last confirmed LSN.  Delivery is at least once:\n"
	        "what was in flight when the connection went, or published after the last\n"
	        "committed position when the sink was killed, may arrive twice.\n"
	        "NAME is a consumer of the order feed like any other (`flashstock feed --list`\n"
	        "shows its lag; serve keeps the WAL it has not committed): a new one starts at\n"
	        "the WAL's durable end, or at its oldest record with --from-start; only durable\n"
	        "records are read.  --mysql URL refills a range WAL retention removed from\n"
	        "MariaDB (see `flashstock feed --help`).\n"
	        "DIR not there yet (the sink started before serve made it, as units started\n"
	        "together at boot may): the sink says so on stderr and waits for it with the\n"
	        "broker's backoff, until SIGTERM/SIGINT (exit 0, nothing registered).\n"
	        "--queue Q declares a durable queue Q bound to the exchange with key '#':\n"
	        "RabbitMQ confirms and drops what no queue takes, so bind one before publishing.\n"
	        "\n"
	        "Progress: every S seconds (--progress-s, default 5; 0 never) one line on stderr:\n"
	        "  feed --to: confirmed_lsn=L end_lsn=E lag=R in_flight=F published=P acked=A\n"
	        "  nacked=K reconnects=C connected=0|1\n"
	        "and, with --status FILE, the same figures as one JSON object in FILE (replaced\n"
	        "atomically, every 200 ms): {\"confirmed_lsn\", \"committed_lsn\", \"end_lsn\",\n"
	        "\"lag_records\", \"in_flight\", \"published\", \"acked\", \"nacked\", \"connects\",\n"
	        "\"reconnects\" (connects after the first), \"connections_lost\" (the broker gone\n"
	        "or hung, a nack, a confirm timeout), \"connected\", \"waiting_for_wal\" (1 while\n"
	        "DIR does not exist), \"last_error\"}.  (A consumer lost to retention is\n"
	        "another thing: exit 3, and `feed --list` says state \"lost\".)\n"
	        "SIGTERM or SIGINT: waits up to the confirm timeout for what is in flight,\n"
	        "commits the confirmed LSN, exits 0.\n"
	        "\n"
	        "exit: 0 stopped by a signal; 1 the broker refused the login or a declare, or the\n"
	        "feed cannot be read; 2 usage error; 3 the consumer is lost (WAL removed past\n"
	        "the retention bound) and no --mysql was given, or MariaDB cannot cover it\n");
}

struct feed_to_opts {
	char                     url_buf[4096];  /* the URL of --to @FILE */
	struct amqp_sink_opts    sink;
	struct sink_source_opts  src;
	uint32_t backoff_max_ms;
	uint32_t progress_s;
	const char *status;
};

/* --to @FILE: the URL is FILE's first line, so that its password shows in
 * neither `ps` nor a shell's history.  @return 0, or -1 (errno set, or 0
 * for an empty or too long line). */
static int feed_to_url_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	errno = 0;
	if (f == NULL)
		return -1;
	if (fgets(buf, (int)cap, f) == NULL) {
		fclose(f);
		errno = 0;
		return -1;
	}
	fclose(f);
	n = strcspn(buf, "\r\n");
	if (n == 0 || (buf[n] == '\0' && n == cap - 1)) {
		errno = 0;
		return -1;
	}
	buf[n] = '\0';
	return 0;
}

static int feed_to_parse(int argc, char **argv, struct feed_to_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "to", required_argument, NULL, 't' },
		{ "wal", required_argument, NULL, 'w' },
		{ "consumer", required_argument, NULL, 'c' },
		{ "mysql", required_argument, NULL, 'M' },
		{ "from-start", no_argument, NULL, 'F' },
		{ "exchange", required_argument, NULL, 'x' },
		{ "exchange-type", required_argument, NULL, 'X' },
		{ "queue", required_argument, NULL, 'q' },
		{ "window", required_argument, NULL, 'W' },
		{ "confirm-timeout-ms", required_argument, NULL, 'T' },
		{ "backoff-max-ms", required_argument, NULL, 'B' },
		{ "status", required_argument, NULL, 's' },
		{ "progress-s", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = "feed";
	int c;

	amqp_sink_opts_default(&o->sink);
	memset(&o->src, 0, sizeof o->src);
	o->backoff_max_ms = 2000;
	o->progress_s = 5;
	o->status = NULL;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			feed_to_help(stdout);
			return 1;
		case 't':
			if (optarg[0] == '@') {
				if (feed_to_url_file(optarg + 1, o->url_buf, sizeof o->url_buf) != 0)
					return tool_usage_err(cmd, "--to %s: cannot read an AMQP URL from it: %s",
					                      optarg, errno ? strerror(errno) : "empty or too long");
				o->sink.url = o->url_buf;
			} else {
				o->sink.url = optarg;
			}
			break;
		case 'w': o->src.wal_dir = optarg; break;
		case 'c': o->src.consumer = optarg; break;
		case 'M':
			if (tool_opt_mysql_url(cmd, optarg) != 0)
				return TOOL_USAGE;
			o->src.mysql_url = optarg;
			break;
		case 'F': o->src.from_start = 1; break;
		case 'x': o->sink.exchange = optarg; break;
		case 'X':
			if (strcmp(optarg, "topic") != 0 && strcmp(optarg, "direct") != 0 &&
			    strcmp(optarg, "fanout") != 0)
				return tool_usage_err(cmd, "--exchange-type: '%s' is not topic, direct or fanout",
				                      optarg);
			o->sink.exchange_type = optarg;
			break;
		case 'q': o->sink.queue = optarg; break;
		case 'W':
			if (tool_opt_u32(cmd, "--window", optarg, 1, AMQP_SINK_WINDOW_MAX, &o->sink.window))
				return TOOL_USAGE;
			break;
		case 'T':
			if (tool_opt_u32(cmd, "--confirm-timeout-ms", optarg, 1, 3600000,
			                 &o->sink.confirm_timeout_ms))
				return TOOL_USAGE;
			break;
		case 'B':
			if (tool_opt_u32(cmd, "--backoff-max-ms", optarg, 100, 600000, &o->backoff_max_ms))
				return TOOL_USAGE;
			break;
		case 's': o->status = optarg; break;
		case 'p':
			if (tool_opt_u32(cmd, "--progress-s", optarg, 0, 86400, &o->progress_s))
				return TOOL_USAGE;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (o->sink.url == NULL || strncmp(o->sink.url, "amqp://", 7) != 0)
		return tool_usage_err(cmd, "--to takes an amqp:// URL");
	if (o->src.wal_dir == NULL)
		return tool_usage_err(cmd, "--wal is required");
	if (o->src.consumer == NULL || o->src.consumer[0] == '\0' || strchr(o->src.consumer, '/'))
		return tool_usage_err(cmd, "--consumer NAME is required (no '/')");
	return 0;
}

/* ---------------------------------------------------- 2. progress and status */

static volatile sig_atomic_t feed_to_stop;

static void feed_to_on_signal(int sig)
{
	(void)sig;
	feed_to_stop = 1;
}

static void feed_to_figures(FILE *out, int json, const struct amqp_sink_stats *st,
                            uint64_t end_lsn, uint64_t committed, unsigned waiting)
{
	uint64_t lag = end_lsn > st->confirmed_lsn ? end_lsn - st->confirmed_lsn : 0;

	if (json) {
		fprintf(out,
		        "{\"confirmed_lsn\":%" PRIu64 ",\"committed_lsn\":%" PRIu64 ",\"end_lsn\":%" PRIu64
		        ",\"lag_records\":%" PRIu64 ",\"in_flight\":%u,\"published\":%" PRIu64
		        ",\"acked\":%" PRIu64 ",\"nacked\":%" PRIu64 ",\"connects\":%" PRIu64
		        ",\"reconnects\":%" PRIu64 ",\"connections_lost\":%" PRIu64 ",\"connected\":%u"
		        ",\"waiting_for_wal\":%u,\"last_error\":",
		        st->confirmed_lsn, committed, end_lsn, lag, st->in_flight, st->published, st->acked,
		        st->nacked, st->connects, st->reconnects, st->conns_lost, st->connected, waiting);
		tool_json_str(out, st->last_error);
		fprintf(out, "}\n");
	} else {
		fprintf(out,
		        "feed --to: confirmed_lsn=%" PRIu64 " end_lsn=%" PRIu64 " lag=%" PRIu64
		        " in_flight=%u published=%" PRIu64 " acked=%" PRIu64 " nacked=%" PRIu64
		        " reconnects=%" PRIu64 " connected=%u%s%s\n",
		        st->confirmed_lsn, end_lsn, lag, st->in_flight, st->published, st->acked,
		        st->nacked, st->reconnects, st->connected, st->last_error[0] ? " last_error=" : "",
		        st->last_error);
	}
}

/* The status file: the figures as JSON, replaced by rename (readers never
 * see half a file).  Not fsync'd: it is a view, the position file is the
 * durable state. */
static void feed_to_status(const char *path, const struct amqp_sink_stats *st, uint64_t end_lsn,
                           uint64_t committed, unsigned waiting)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return;
	feed_to_figures(f, 1, st, end_lsn, committed, waiting);
	if (fclose(f) == 0)
		(void)rename(tmp, path);
}

/* ---------------------------------------------------------------- 3. the loop */

static void feed_to_sleep_ms(uint64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* The pause before connect attempt n+1: 100 ms doubling up to @p cap_ms,
 * a random point in its upper half (so sinks restarted together spread). */
static uint64_t feed_to_backoff_ms(unsigned n, uint32_t cap_ms, unsigned *seed)
{
	uint64_t b = 100;
	while (n-- > 0 && b < cap_ms)
		b *= 2;
	if (b > cap_ms)
		b = cap_ms;
	return b / 2 + (uint64_t)rand_r(seed) % (b / 2 + 1);
}

/*
 * Run until a signal: connect (backing off), seek the source back to the
 * confirmed LSN, then move records to the broker while reading confirms,
 * committing the confirmed LSN every 200 ms.  A configuration error (login
 * refused, a declare refused) ends the run with 1: retrying cannot help.
 */
static int feed_to_run(const struct feed_to_opts *o, struct sink_source *src, amqp_sink_t *sk)
{
	struct amqp_sink_stats st;
	int64_t next_commit = 0, next_progress = 0;
	unsigned attempts = 0, seed = (unsigned)getpid();
	int rc, ret = TOOL_OK;

	amqp_sink_start_at(sk, src->committed);
	while (!feed_to_stop) {
		int64_t now = tool_monotonic_ns();
		amqp_sink_stats_get(sk, &st);
		if (now >= next_commit) {
			if (st.confirmed_lsn > src->committed &&
			    src->ops->commit(src, st.confirmed_lsn) != FLASH_OK) {
				tool_failf("feed --to: commit: %s", src->what);
				ret = TOOL_FAIL;
				break;
			}
			if (o->status)
				feed_to_status(o->status, &st, src->ops->end_lsn(src), src->committed, 0);
			next_commit = now + 200000000;
		}
		if (o->progress_s && now >= next_progress) {
			if (next_progress != 0)
				feed_to_figures(stderr, 0, &st, src->ops->end_lsn(src), src->committed, 0);
			next_progress = now + (int64_t)o->progress_s * 1000000000;
		}
		if (!st.connected) {
			if (attempts > 0)
				feed_to_sleep_ms(feed_to_backoff_ms(attempts - 1, o->backoff_max_ms, &seed));
			if (feed_to_stop)
				break;
			rc = amqp_sink_connect(sk);
			amqp_sink_stats_get(sk, &st);
			if (rc == FLASH_EAMQP_CONFIG || rc == FLASH_EAMQP) {
				tool_failf("feed --to: %s (%s)", st.last_error, flash_strerror(rc));
				ret = TOOL_FAIL;
				break;
			}
			if (rc != FLASH_OK) {
				if (attempts++ == 0)
					fprintf(stderr, "flashstock: feed --to: broker unavailable, retrying: %s\n",
					        st.last_error);
				continue;
			}
			if (attempts > 0 || st.connects > 1)
				fprintf(stderr, "flashstock: feed --to: connected again; re-sending from LSN %" PRIu64
				        "\n", st.confirmed_lsn + 1);
			attempts = 0;
			rc = src->ops->seek(src, st.confirmed_lsn);
			if (rc != FLASH_OK) {
				tool_failf("feed --to: seek: %s", src->what);
				ret = TOOL_FAIL;
				break;
			}
			continue;
		}
		struct sink_item it;
		rc = src->ops->next(src, &it, st.in_flight ? 0 : 100);
		if (rc < 0) {
			tool_failf("feed --to: %s", src->what);
			/* lost: as `flashstock feed` says it (exit 3) */
			ret = rc == FLASH_ELOST || rc == FLASH_EREFILL ? 3 : TOOL_FAIL;
			if (rc == FLASH_EMYSQL_RETRY) {
				/* MariaDB away during a refill: wait and read again */
				feed_to_sleep_ms(500);
				ret = TOOL_OK;
				continue;
			}
			break;
		}
		if (rc == 1)
			rc = amqp_sink_put(sk, it.si_lsn, &it.si_rec);
		else
			rc = amqp_sink_poll(sk, st.in_flight ? 50 : 0);
		if (rc == FLASH_EAMQP_RETRY) {
			amqp_sink_stats_get(sk, &st);
			fprintf(stderr, "flashstock: feed --to: connection lost (%s); confirmed LSN %" PRIu64 "\n",
			        st.last_error, st.confirmed_lsn);
			attempts = 1;
		} else if (rc != FLASH_OK) {
			tool_failf("feed --to: LSN %" PRIu64 ": %s", it.si_lsn, flash_strerror(rc));
			ret = TOOL_FAIL;
			break;
		}
	}
	/* a clean stop: let what is in flight be confirmed, then commit it */
	if (ret == TOOL_OK) {
		int64_t end = tool_monotonic_ns() + (int64_t)o->sink.confirm_timeout_ms * 1000000;
		for (;;) {
			amqp_sink_stats_get(sk, &st);
			if (!st.connected || st.in_flight == 0 || tool_monotonic_ns() > end)
				break;
			(void)amqp_sink_poll(sk, 100);
		}
		amqp_sink_stats_get(sk, &st);
		if (st.confirmed_lsn > src->committed && src->ops->commit(src, st.confirmed_lsn) != FLASH_OK)
			ret = tool_failf("feed --to: commit: %s", src->what);
		if (o->status)
			feed_to_status(o->status, &st, src->ops->end_lsn(src), src->committed, 0);
		feed_to_figures(stderr, 0, &st, src->ops->end_lsn(src), src->committed, 0);
	}
	return ret;
}

/*
 * Open the source, waiting while the WAL directory does not exist: it is
 * serve's to make, and units started together at boot may start the sink
 * first.  The wait is the broker's (the same backoff, one line on stderr
 * when it starts and one when the directory appears, the status file
 * saying waiting_for_wal) and ends at SIGTERM/SIGINT (FLASH_ECANCELLED:
 * stopped, nothing registered).  Any other failure to open is returned.
 */
static int feed_to_open_source(const struct feed_to_opts *o, amqp_sink_t *sk,
                               struct sink_source **src, char *why, size_t cap)
{
	unsigned attempts = 0, seed = (unsigned)getpid();
	struct amqp_sink_stats st;
	struct stat sb;

	for (;;) {
		int rc = sink_source_open(&o->src, src, why, cap);
		if (rc != FLASH_ENOT_FOUND || stat(o->src.wal_dir, &sb) == 0 || errno != ENOENT) {
			if (rc == FLASH_OK && attempts > 0)
				fprintf(stderr, "flashstock: feed --to: WAL directory %s is there; reading as "
				        "consumer %s\n", o->src.wal_dir, o->src.consumer);
			return rc;
		}
		if (attempts++ == 0)
			fprintf(stderr, "flashstock: feed --to: WAL directory %s does not exist yet; waiting for "
			        "serve to make it\n", o->src.wal_dir);
		if (o->status) {
			amqp_sink_stats_get(sk, &st);
			snprintf(st.last_error, sizeof st.last_error, "waiting for the WAL directory");
			feed_to_status(o->status, &st, 0, 0, 1);
		}
		feed_to_sleep_ms(feed_to_backoff_ms(attempts - 1, o->backoff_max_ms, &seed));
		if (feed_to_stop)
			return FLASH_ECANCELLED;
	}
}

int cmd_feed_to(int argc, char **argv)
{
	struct feed_to_opts o;
	struct sink_source *src;
	amqp_sink_t *sk;
	char why[512] = "";
	int rc;

	rc = feed_to_parse(argc, argv, &o);
	if (rc != 0)
		return rc == 1 ? TOOL_OK : rc;
	rc = amqp_sink_new(&o.sink, &sk);
	if (rc == FLASH_EAMQP_CONFIG)
		return tool_usage_err("feed", "--to: not an AMQP URL this sink can use");
	if (rc != FLASH_OK)
		return tool_fail("feed --to", rc);
	tool_stop_signals(feed_to_on_signal, 0);
	rc = feed_to_open_source(&o, sk, &src, why, sizeof why);
	if (rc == FLASH_ECANCELLED) {
		fprintf(stderr, "flashstock: feed --to: stopped while waiting for the WAL directory\n");
		amqp_sink_free(sk);
		return TOOL_OK;
	}
	if (rc != FLASH_OK) {
		amqp_sink_free(sk);
		return tool_failf("feed --to: %s: %s", o.src.wal_dir, why[0] ? why : flash_strerror(rc));
	}
	rc = feed_to_run(&o, src, sk);
	amqp_sink_free(sk);
	src->ops->close(src);
	return rc;
}
