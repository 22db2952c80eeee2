/*
 * expiry_bench.c -- how late the daemon expires an unpaid reservation when
 * the box is under full load (issue 22: within 100 ms of its pay-by time).
 *
 *   expiry_bench [--seconds S] [--buyers T] [--reservations N]
 *                [--pay-ms A:B] [--durability async|sync] [--every-ms E]
 *
 * A fresh segment and the daemon's loop (serve_run, in a child, with its
 * WAL in a scratch directory and its reservation expirer every E ms,
 * default 10) on it.  T buyer threads (default 2: as many as the cores)
 * place plain orders for new users without pause for S seconds (default
 * 4: the order table holds 8 Mi orders): the load.  Meanwhile one thread places N reservations (default 2000)
 * evenly over the first S - 1 seconds, each to be paid within a window
 * drawn from A..B ms (default 100:1000), and pays none.  Then it waits
 * until the daemon has expired all of them, stops it, and reports the lag
 * the daemon measured for each -- the time from a reservation's pay-by
 * time to its expiry -- as a distribution (the expirer's buckets), its
 * mean and maximum, beside the load's orders per second.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"
#include "serve.h"
#include "expirer.h"

#define LOAD_ACT 1u
#define RESV_ACT 2u

static char g_seg[64], g_wal[256];
static int g_seconds = 4, g_buyers = 2, g_sync;
static volatile int g_full;           /* a buyer met a full order table: the load ended early */
static uint32_t g_resv = 2000, g_pay_a = 100, g_pay_b = 1000, g_every = 10;
static volatile int g_stop;

struct ctl {
	volatile int       stop;
	int                rc;
	struct serve_stats stats;
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "expiry_bench: %s: %s\n", what, rc ? flash_strerror(rc) : strerror(errno));
	if (g_seg[0])
		flash_seg_destroy(g_seg);
	exit(1);
}

struct buyer {
	pthread_t th;
	int idx;
	uint64_t ok, busy, other;
};

static void *buyer_main(void *p)
{
	struct buyer *b = p;
	flash_t *h;
	int rc = flash_open(g_seg, 0, &h);
	if (rc != FLASH_OK)
		die("buyer open", rc);
	for (uint64_t u = (uint64_t)(b->idx + 1) << 40; !g_stop; u++) {
		struct flash_order_req r = { .activity_id = LOAD_ACT, .sku_id = 1, .user_id = u, .qty = 1 };
		rc = flash_order(h, &r, NULL);
		if (rc == FLASH_OK || rc == FLASH_EFATE_UNKNOWN)
			b->ok++;
		else if (rc == FLASH_EFULL) {
			g_full = 1;     /* the order table is full: the load ends early (reported) */
			break;
		}
		else if (rc == FLASH_EBUSY)
			b->busy++;      /* its ring full: the buyers outrun the daemon's drain */
		else
			b->other++;
	}
	flash_close(h);
	return NULL;
}

static void *reserver_main(void *p)
{
	uint64_t *placed = p;
	flash_t *h;
	int rc = flash_open(g_seg, 0, &h);
	if (rc != FLASH_OK)
		die("reserver open", rc);
	int64_t t0 = mono_ns(), span = (int64_t)(g_seconds - 1) * 1000000000ll;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < g_resv; i++) {
		int64_t at = t0 + span * i / g_resv;
		while (mono_ns() < at)
			usleep(200);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		struct flash_order_req r = { .activity_id = RESV_ACT, .sku_id = 1, .user_id = 1 + i, .qty = 1,
		                             .reserve_ms = g_pay_a + (uint32_t)(x % (g_pay_b - g_pay_a + 1)) };
		rc = flash_order(h, &r, NULL);
		if (rc != FLASH_OK && rc != FLASH_EFATE_UNKNOWN)
			die("a reservation", rc);
		(*placed)++;
	}
	flash_close(h);
	return NULL;
}

static void segment(void)
{
	struct flash_seg_opts o;
	flash_seg_opts_default(&o);
	o.max_orders = 8u << 20;
	o.max_users = 8u << 20;
	o.durability = g_sync ? FLASH_DURABILITY_SYNC : FLASH_DURABILITY_ASYNC;
	snprintf(g_seg, sizeof g_seg, "/fs-expiry-bench-%d", (int)getpid());
	int rc = flash_seg_create(g_seg, &o);
	if (rc != FLASH_OK) {
		g_seg[0] = '\0';
		die("create the segment", rc);
	}
	flash_t *h;
	if ((rc = flash_open(g_seg, 0, &h)) != FLASH_OK)
		die("open", rc);
	int64_t now = 0;
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		now = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
	}
	for (uint32_t id = LOAD_ACT; id <= RESV_ACT; id++) {
		struct flash_activity a = { .id = id, .limit_per_user = 1, .max_qty = 1, .scope = FLASH_SCOPE_ACTIVITY,
		                            .start_ns = now - 1000000000ll, .end_ns = now + 3600ll * 1000000000ll };
		if ((rc = flash_activity_add(h, &a)) != FLASH_OK ||
		    (rc = flash_sku_add(h, id, 1, id == LOAD_ACT ? 1ull << 32 : g_resv, 4)) != FLASH_OK)
			die("load the catalog", rc);
	}
	flash_close(h);
}

static pid_t daemon_start(struct ctl *c)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die("fork", 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		struct serve_opts o;
		serve_opts_default(&o);
		o.segment = g_seg;
		o.wal_dir = g_wal;
		o.log_level = PLOG_WARN;
		o.stop = &c->stop;
		o.expire.every_ms = g_every;
		o.reconcile.every_ms = 0;      /* the box's own work only */
		c->rc = serve_run(&o, &c->stats);
		_exit(c->rc == 0 ? 0 : 1);
	}
	return pid;
}

/* Wait until the daemon has expired every reservation (a minute at most). */
static uint64_t wait_expired(void)
{
	flash_t *h;
	int rc = flash_open(g_seg, FLASH_RDONLY, &h);
	if (rc != FLASH_OK)
		die("open", rc);
	struct flash_stats st;
	int64_t end = mono_ns() + 60ll * 1000000000ll;
	do {
		usleep(20000);
		if ((rc = flash_stats_get(h, &st)) != FLASH_OK)
			die("stats", rc);
	} while (st.expiries < g_resv && mono_ns() < end);
	flash_close(h);
	return st.expiries;
}

static void report(const struct serve_stats *st, uint64_t load_ok, uint64_t load_busy, uint64_t load_other,
                   double secs)
{
	static const char *const le[SERVE_EXPIRY_BUCKETS] = {
		"<= 1 ms", "<= 2 ms", "<= 5 ms", "<= 10 ms", "<= 20 ms", "<= 50 ms", "<= 100 ms", "<= 200 ms",
		"<= 500 ms", "<= 1 s", "<= 5 s", "> 5 s",
	};
	uint64_t n = 0, cum = 0;
	for (int b = 0; b < SERVE_EXPIRY_BUCKETS; b++)
		n += st->expiry_lag_hist[b];
	printf("expiry_bench: %d s, %d buyer threads, %s durability, expirer every %u ms\n", g_seconds, g_buyers,
	       g_sync ? "sync" : "async", g_every);
	printf("load: %" PRIu64 " orders acknowledged in %.2f s = %.0f orders/s; %" PRIu64 " refused FLASH_EBUSY"
	       " (a ring full: the buyers outran the daemon's drain), %" PRIu64 " other answers\n",
	       load_ok, secs, (double)load_ok / secs, load_busy, load_other);
	if (g_full)
		printf("load: ended early: the order table (8 Mi orders) filled up\n");
	printf("reservations: %u placed (pay windows %u..%u ms, none paid), %" PRIu64 " expired by the daemon\n",
	       g_resv, g_pay_a, g_pay_b, st->expired);
	printf("lag after the pay-by time: mean %.3f ms, max %.3f ms\n\n",
	       n ? (double)st->expiry_lag_ns_sum / (double)n / 1e6 : 0.0, (double)st->expiry_lag_ns_max / 1e6);
	printf("| lag | reservations | cumulative |\n|---|---:|---:|\n");
	for (int b = 0; b < SERVE_EXPIRY_BUCKETS; b++) {
		cum += st->expiry_lag_hist[b];
		if (st->expiry_lag_hist[b] || (cum && cum < n))
			printf("| %s | %" PRIu64 " | %.2f %% |\n", le[b], st->expiry_lag_hist[b],
			       n ? 100.0 * (double)cum / (double)n : 0.0);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: expiry_bench [--seconds S] [--buyers T] [--reservations N] [--pay-ms A:B]\n"
	                "                    [--durability async|sync] [--every-ms E]\n");
	exit(2);
}

static void args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("see the comment at the top of bench/expiry_bench.c\n");
			exit(0);
		}
		if (!v)
			usage();
		if (!strcmp(argv[i], "--seconds"))
			g_seconds = atoi(v);
		else if (!strcmp(argv[i], "--buyers"))
			g_buyers = atoi(v);
		else if (!strcmp(argv[i], "--reservations"))
			g_resv = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--pay-ms"))
			(void)sscanf(v, "%u:%u", &g_pay_a, &g_pay_b);
		else if (!strcmp(argv[i], "--durability"))
			g_sync = !strcmp(v, "sync");
		else if (!strcmp(argv[i], "--every-ms"))
			g_every = (uint32_t)strtoul(v, NULL, 10);
		else
			usage();
		i++;
	}
	if (g_seconds < 2 || g_buyers < 1 || g_buyers > 64 || g_resv < 1 || g_pay_a < 1 || g_pay_b < g_pay_a ||
	    g_pay_b > FLASH_RESERVE_MS_MAX || g_every < 1)
		usage();
}

int main(int argc, char **argv)
{
	args(argc, argv);
	snprintf(g_wal, sizeof g_wal, "/tmp/fs-expiry-bench-XXXXXX");
	if (!mkdtemp(g_wal))
		die("mkdtemp", 0);
	segment();
	struct ctl *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		die("mmap", 0);
	memset(c, 0, sizeof *c);
	pid_t d = daemon_start(c);
	struct buyer b[64];
	pthread_t rt;
	uint64_t placed = 0;
	int64_t t0 = mono_ns();
	for (int i = 0; i < g_buyers; i++) {
		b[i] = (struct buyer){ .idx = i };
		pthread_create(&b[i].th, NULL, buyer_main, &b[i]);
	}
	pthread_create(&rt, NULL, reserver_main, &placed);
	while (mono_ns() - t0 < (int64_t)g_seconds * 1000000000ll)
		usleep(10000);
	g_stop = 1;
	uint64_t ok = 0, busy = 0, other = 0;
	for (int i = 0; i < g_buyers; i++) {
		pthread_join(b[i].th, NULL);
		ok += b[i].ok;
		busy += b[i].busy;
		other += b[i].other;
	}
	double secs = (double)(mono_ns() - t0) / 1e9;
	pthread_join(rt, NULL);
	uint64_t expired = wait_expired();
	c->stop = 1;
	int status = 0;
	waitpid(d, &status, 0);
	int bad = !WIFEXITED(status) || WEXITSTATUS(status) != 0 || expired < g_resv || c->stats.expired < g_resv;
	report(&c->stats, ok, busy, other, secs);
	if (bad)
		fprintf(stderr, "expiry_bench: the daemon expired %" PRIu64 " of %u (status %#x, %s)\n",
		        c->stats.expired, g_resv, status, flash_rcname(c->stats.rc));
	flash_seg_destroy(g_seg);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_wal);
	if (system(cmd) != 0)
		fprintf(stderr, "expiry_bench: could not remove %s\n", g_wal);
	return bad;
}
