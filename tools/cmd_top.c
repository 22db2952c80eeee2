/*
 * cmd_top.c -- `flashstock top`: a live view of a sale in a terminal, like
 * `redis-cli --stat`: orders per second, refusals by result code, the
 * latency of orders, stock per sku, the WAL's and MySQL's lag, and any
 * feed lag the daemon exports.
 *
 * Sources: the segment, attached read-only (FLASH_RDONLY: no process slot,
 * nothing changed): the engine's own figures (flash_obs_get), stock
 * (flash_sku_at), records not yet durable (flash_quiet_get), the WAL LSN
 * and the daemon's pid (flash_ident_get).  With --metrics, the daemon's
 * `serve --metrics` endpoint too, for what only the daemon knows: WAL
 * frames not yet durable, MySQL's lag and liveness, feed and sink lag
 * (every flashstock_feed_* / flashstock_sink_* sample whose name says lag).
 *
 * On a terminal each refresh redraws the screen in place (ANSI home and
 * clear); otherwise it prints one line of key=value fields per refresh, for
 * logs and scripts.  Rates and percentiles are over the last interval.
 */
#include "tool.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/*
 * The next sku entry at or after *i (below @p cap, the segment's max_skus):
 * entries an archive freed read FLASH_EARCHIVED between live ones, so the
 * walk skips them instead of stopping.  Returns 1 with *si, 0 at the end.
 */
static int sku_next(flash_t *h, uint32_t *i, uint32_t cap, struct flash_sku_info *si)
{
	for (; *i < cap; ++*i) {
		int rc = flash_sku_at(h, *i, si);
		if (rc == FLASH_OK)
			return 1;
		if (rc != FLASH_ENOT_FOUND && rc != FLASH_EARCHIVED)
			return 0;
	}
	return 0;
}

static uint32_t sku_cap(flash_t *h)
{
	struct flash_seg_opts so;
	return flash_seg_opts_get(h, &so) == FLASH_OK ? so.max_skus : 0;
}

static void top_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock top --name NAME [--interval MS] [--count N]\n"
	        "                      [--metrics [http://][A.B.C.D:]PORT[/metrics]]\n"
	        "\n"
	        "A live view of segment NAME, refreshed every --interval ms (default 1000):\n"
	        "orders per second and in all, the share of order calls that succeeded, refusals\n"
	        "by result code, order latency (p50/p99 bucket bounds over the last interval,\n"
	        "measured inside the engine), stock per sku, records not yet durable in the WAL,\n"
	        "and the daemon's pid.  --metrics reads the daemon's `serve --metrics` endpoint\n"
	        "(127.0.0.1 unless an address is given) for WAL frames not yet durable, MySQL's\n"
	        "lag and liveness, and feed/sink lag where the daemon exports them.\n"
	        "\n"
	        "The segment is attached read-only: top changes nothing.  On a terminal the\n"
	        "screen is redrawn in place; otherwise one line per refresh, key=value fields:\n"
	        "  time orders orders_per_s calls ok_pct <code>=N (each refusal code seen, in all)\n"
	        "  order_p50_us order_p99_us stock:A/S=AVAILABLE/TOTAL wal_lsn wal_pending\n"
	        "  daemon wal_pending_frames mysql_lag mysql_connected <feed/sink lag samples>\n"
	        "('-' where a figure is not known).  --count N stops after N refreshes (0: until\n"
	        "interrupted).\n"
	        "\n"
	        "exit: 0 interrupted or --count done; 1 failed (no segment, bad segment);\n"
	        "      2 usage error\n");
}

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* ---- the daemon's endpoint ------------------------------------------------ */

struct top_ep {
	struct sockaddr_in sa;
	char path[128];
};

/* "[http://][A.B.C.D:]PORT[/path]" (IPv4, as `serve --metrics` binds). */
static int top_ep_parse(const char *s, struct top_ep *ep)
{
	char host[64] = "127.0.0.1", *end;
	const char *p = s, *colon, *slash;

	memset(ep, 0, sizeof *ep);
	if (strncmp(p, "http://", 7) == 0)
		p += 7;
	slash = strchr(p, '/');
	snprintf(ep->path, sizeof ep->path, "%s", slash ? slash : "/metrics");
	colon = strchr(p, ':');
	if (colon && (!slash || colon < slash)) {
		size_t n = (size_t)(colon - p);
		if (n >= sizeof host)
			return -1;
		if (n > 0) {
			memcpy(host, p, n);
			host[n] = 0;
		}
		p = colon + 1;
	}
	unsigned long port = strtoul(p, &end, 10);
	if (end == p || (*end && *end != '/') || port == 0 || port > 65535)
		return -1;
	ep->sa.sin_family = AF_INET;
	ep->sa.sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &ep->sa.sin_addr) == 1 ? 0 : -1;
}

/* GET the endpoint (1 s timeouts); the body, malloc'ed, or NULL. */
static char *top_ep_get(const struct top_ep *ep)
{
	struct timeval tv = { 1, 0 };
	char req[256];
	size_t cap = 1 << 16, n = 0;
	ssize_t r;
	char *b, *body;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	int k = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", ep->path);
	if (connect(fd, (const struct sockaddr *)&ep->sa, sizeof ep->sa) != 0 ||
	    write(fd, req, (size_t)k) != k || (b = malloc(cap)) == NULL) {
		close(fd);
		return NULL;
	}
	while ((r = read(fd, b + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
	}
	close(fd);
	b[n] = 0;
	body = strstr(b, "\r\n\r\n");
	if (strncmp(b, "HTTP/1.", 7) != 0 || strstr(b, " 200 ") == NULL || body == NULL) {
		free(b);
		return NULL;
	}
	memmove(b, body + 4, strlen(body + 4) + 1);
	return b;
}

/* The value of sample @p name (exact, labels included) in @p body, as text; 0 if absent. */
static int top_sample(const char *body, const char *name, char *val, size_t len)
{
	size_t n = strlen(name);

	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			size_t k = strcspn(p + n + 1, "\n");
			snprintf(val, len, "%.*s", (int)(k < len ? k : len - 1), p + n + 1);
			return 1;
		}
	snprintf(val, len, "-");
	return 0;
}

/* ---- one refresh ------------------------------------------------------------ */

struct top_frame {
	struct flash_obs obs;
	struct flash_quiet q;
	struct flash_ident id;
	double t;                      /* CLOCK_MONOTONIC seconds */
};

static double top_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "sold_out" for FLASH_ESOLD_OUT (the label serve --metrics uses too). */
static void top_code(int rc, char *buf, size_t len)
{
	const char *n = flash_rcname(rc);
	size_t i = 0;

	if (strcmp(n, "FLASH_OK") == 0)
		n = "ok";
	else if (strncmp(n, "FLASH_E", 7) == 0 && strcmp(n, "FLASH_E?") != 0)
		n += 7;
	else
		n = "other";
	for (; n[i] && i + 1 < len; i++)
		buf[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
	buf[i] = 0;
}

/* Upper bound (us) of the bucket holding quantile @p q of the order calls
 * between @p a and @p b; -1 when there were none. */
static double top_quantile_us(const struct flash_hist *a, const struct flash_hist *b, double q)
{
	uint64_t n = b->count - (a ? a->count : 0), seen = 0;

	if (n == 0)
		return -1;
	for (unsigned k = 0; k < FLASH_OBS_BUCKETS; k++) {
		seen += b->bucket[k] - (a ? a->bucket[k] : 0);
		if ((double)seen >= q * (double)n) {
			uint64_t le = flash_obs_bucket_le_ns(k);
			return le == UINT64_MAX ? 1e12 : (double)le / 1000.0;
		}
	}
	return -1;
}

static int top_read(flash_t *h, struct top_frame *f)
{
	int rc;

	if ((rc = flash_obs_get(h, &f->obs)) != FLASH_OK || (rc = flash_quiet_get(h, &f->q)) != FLASH_OK ||
	    (rc = flash_ident_get(h, &f->id)) != FLASH_OK)
		return rc;
	f->t = top_now();
	return FLASH_OK;
}

/* The daemon's figures (from --metrics), '-' when unknown. */
struct top_daemon {
	char pending[32], mysql_lag[32], mysql_up[32];
	char lag[1024];               /* feed/sink lag samples: "name=value ..." */
};

static void top_daemon_read(const struct top_ep *ep, struct top_daemon *d)
{
	char *body = ep ? top_ep_get(ep) : NULL;
	size_t used = 0;

	d->lag[0] = 0;
	top_sample(body ? body : "", "flashstock_wal_pending_frames", d->pending, sizeof d->pending);
	top_sample(body ? body : "", "flashstock_mysql_lag_records", d->mysql_lag, sizeof d->mysql_lag);
	top_sample(body ? body : "", "flashstock_mysql_connected", d->mysql_up, sizeof d->mysql_up);
	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t k = strcspn(p, "\n"), sp = strcspn(p, " \n");
		if ((strncmp(p, "flashstock_feed_", 16) != 0 && strncmp(p, "flashstock_sink_", 16) != 0) ||
		    memmem(p, sp, "lag", 3) == NULL || sp >= k)
			continue;
		int w = snprintf(d->lag + used, sizeof d->lag - used, "%s%.*s=%.*s", used ? " " : "",
		                 (int)sp, p, (int)(k - sp - 1), p + sp + 1);
		if (w < 0 || (size_t)w >= sizeof d->lag - used)
			break;
		used += (size_t)w;
	}
	free(body);
}

static uint64_t top_calls(const struct flash_obs *o, unsigned op)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < FLASH_OBS_CODES; c++)
		n += o->results[op][c];
	return n;
}

static void top_print(flash_t *h, const char *name, const struct top_frame *prev,
                      const struct top_frame *cur, const struct top_daemon *d, int tty,
                      uint32_t interval_ms)
{
	const struct flash_obs *o = &cur->obs;
	uint64_t ok = o->results[FLASH_OP_ORDER][0], calls = top_calls(o, FLASH_OP_ORDER);
	double dt = prev ? cur->t - prev->t : 0;
	double rate = prev && dt > 0 ? (double)(ok - prev->obs.results[FLASH_OP_ORDER][0]) / dt : 0;
	const struct flash_hist *ph = prev ? &prev->obs.time[FLASH_OP_ORDER] : NULL;
	double p50 = top_quantile_us(ph, &o->time[FLASH_OP_ORDER], 0.50);
	double p99 = top_quantile_us(ph, &o->time[FLASH_OP_ORDER], 0.99);
	char when[16], code[32], p50s[32] = "-", p99s[32] = "-", daemon[24] = "-";
	time_t wall = time(NULL);
	struct tm tm;
	struct flash_sku_info si;

	gmtime_r(&wall, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	if (p50 >= 0)
		snprintf(p50s, sizeof p50s, "%.3g", p50);
	if (p99 >= 0)
		snprintf(p99s, sizeof p99s, "%.3g", p99);
	if (cur->id.consumer_pid)
		snprintf(daemon, sizeof daemon, "%d", (int)cur->id.consumer_pid);

	if (!tty) {
		printf("time=%s orders=%llu orders_per_s=%.1f calls=%llu ok_pct=%.1f", when,
		       (unsigned long long)ok, rate, (unsigned long long)calls,
		       calls ? 100.0 * (double)ok / (double)calls : 0.0);
		for (unsigned c = 1; c < FLASH_OBS_CODES; c++)
			if (o->results[FLASH_OP_ORDER][c]) {
				top_code(-(int)c, code, sizeof code);
				printf(" %s=%llu", code, (unsigned long long)o->results[FLASH_OP_ORDER][c]);
			}
		printf(" order_p50_us=%s order_p99_us=%s", p50s, p99s);
		for (uint32_t i = 0, cap = sku_cap(h); sku_next(h, &i, cap, &si); i++)
			printf(" stock:%u/%u=%llu/%llu", si.activity_id, si.sku_id,
			       (unsigned long long)si.available, (unsigned long long)si.total);
		printf(" wal_lsn=%llu wal_pending=%llu daemon=%s wal_pending_frames=%s mysql_lag=%s "
		       "mysql_connected=%s%s%s\n", (unsigned long long)cur->id.wal_lsn,
		       (unsigned long long)cur->q.pending, daemon, d->pending, d->mysql_lag,
		       d->mysql_up, d->lag[0] ? " " : "", d->lag);
		fflush(stdout);
		return;
	}
	printf("\033[H\033[2J");
	printf("flashstock top  %s  %s UTC  every %u ms  (Ctrl-C quits)\n\n", name, when, interval_ms);
	printf("orders     %llu placed   %.1f/s   %.1f%% of %llu calls ok   p50 <= %s us   p99 <= %s us\n",
	       (unsigned long long)ok, rate, calls ? 100.0 * (double)ok / (double)calls : 0.0,
	       (unsigned long long)calls, p50s, p99s);
	printf("refusals  ");
	int any = 0;
	for (unsigned c = 1; c < FLASH_OBS_CODES; c++) {
		uint64_t v = o->results[FLASH_OP_ORDER][c];
		if (!v)
			continue;
		top_code(-(int)c, code, sizeof code);
		printf("  %s %llu (+%llu)", code, (unsigned long long)v,
		       (unsigned long long)(v - (prev ? prev->obs.results[FLASH_OP_ORDER][c] : 0)));
		any = 1;
	}
	printf("%s\n", any ? "" : "  none");
	printf("other ops ");
	for (unsigned op = 1; op < FLASH_OP_COUNT; op++)
		printf("  %s %llu", flash_op_name(op), (unsigned long long)top_calls(o, op));
	printf("\n\nWAL        lsn %llu   records not yet durable %llu   daemon pid %s   "
	       "frames not yet durable %s\n", (unsigned long long)cur->id.wal_lsn,
	       (unsigned long long)cur->q.pending, daemon, d->pending);
	printf("MySQL      lag %s records   connected %s\n", d->mysql_lag, d->mysql_up);
	if (d->lag[0])
		printf("feed       %s\n", d->lag);
	printf("\n%-12s %14s %14s %14s\n", "activity/sku", "available", "sold", "total");
	for (uint32_t i = 0, cap = sku_cap(h); sku_next(h, &i, cap, &si); i++) {
		char k[32];
		snprintf(k, sizeof k, "%u/%u", si.activity_id, si.sku_id);
		printf("%-12s %14llu %14llu %14llu\n", k, (unsigned long long)si.available,
		       (unsigned long long)(si.total - si.available), (unsigned long long)si.total);
	}
	fflush(stdout);
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",     no_argument,       NULL, 'h' },
		{ "name",     required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count",    required_argument, NULL, 'c' },
		{ "metrics",  required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0], *name = NULL, *murl = NULL;
	uint32_t interval_ms = 1000, count = 0;
	struct top_ep ep;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			top_help(stdout);
			return TOOL_OK;
		case 'n':
			name = optarg;
			break;
		case 'i':
			if (tool_opt_u32(cmd, "--interval", optarg, 10, 3600000, &interval_ms))
				return TOOL_USAGE;
			break;
		case 'c':
			if (tool_opt_u32(cmd, "--count", optarg, 0, UINT32_MAX, &count))
				return TOOL_USAGE;
			break;
		case 'm':
			murl = optarg;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (!name)
		return tool_usage_err(cmd, "--name is required");
	if (murl && top_ep_parse(murl, &ep) != 0)
		return tool_usage_err(cmd, "--metrics: '%s' is not [http://][A.B.C.D:]PORT[/path]", murl);

	flash_t *h;
	if ((rc = flash_open(name, FLASH_RDONLY, &h)) != FLASH_OK) {
		char what[300];
		snprintf(what, sizeof what, "top: open %s", name);
		return tool_fail(what, rc);
	}
	struct top_frame *f = calloc(2, sizeof *f);
	if (!f) {
		flash_close(h);
		return tool_fail("top", FLASH_ENOMEM);
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = top_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int tty = isatty(STDOUT_FILENO);
	int ret = TOOL_OK;
	for (uint32_t n = 0; !top_stop && (count == 0 || n < count); n++) {
		struct top_frame *cur = &f[n & 1], *prev = n ? &f[(n + 1) & 1] : NULL;
		struct top_daemon d;
		if (n) {
			struct timespec ts = { interval_ms / 1000u, (long)(interval_ms % 1000u) * 1000000L };
			while (!top_stop && nanosleep(&ts, &ts) != 0)
				;
			if (top_stop)
				break;
		}
		if ((rc = top_read(h, cur)) != FLASH_OK) {
			ret = tool_fail("top: read segment", rc);
			break;
		}
		top_daemon_read(murl ? &ep : NULL, &d);
		top_print(h, name, prev, cur, &d, tty, interval_ms);
	}
	free(f);
	flash_close(h);
	return ret;
}
