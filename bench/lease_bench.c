/*
 * lease_bench.c -- what leasing costs a box: orders per second of one box
 * whose stock comes from leases of the central database (`serve --lease`)
 * against the same box owning its stock outright, on the same machine, in
 * interleaved rounds, medians reported.
 *
 *   lease_bench --bin FLASHSTOCK --galera GALERA_SH [--rounds R] [--seconds S]
 *               [--threads T] [--sync] [--lease-max U] [--nodes N]
 *
 * Each round runs both modes, in alternating order (owned first in odd
 * rounds, leased first in even ones), so a drift of the machine touches
 * both alike.  One mode of one round:
 *   - a fresh segment (activity: limit 1 per user; one sku), `flashstock
 *     serve` on it (a WAL in a scratch directory; no MySQL applier, no
 *     reconciler: the box's own work only);
 *   - owned: the sku holds every unit from the start;
 *     leased: the sku starts at 0 units, the pool holds them, and serve runs
 *     the lease agent (--lease URLS --box-id 1) with --lease-max U;
 *   - T buyer threads (one handle each) order one unit each for new users
 *     without pause for S seconds; orders/s = acknowledged orders / S.
 *     In the leased mode the orders refused SOLD_OUT while the agent was
 *     fetching the next lease are counted (the box ran dry).
 * The cluster is tests/fixtures/galera.sh (N nodes, default 3).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"

#define ACT 1u
#define SKU 1u
#define MAX_ROUNDS 32
#define MAX_THREADS 16

static const char *g_bin, *g_galera;
static char g_base[256], g_gdir[300], g_urls[4096];
static int g_rounds = 5, g_seconds = 3, g_threads = 2, g_sync, g_nodes = 3;
static uint32_t g_lease_max = 1000000;
static int g_stop;

struct thr {
	pthread_t th;
	const char *seg;
	int idx;
	uint64_t ok, soldout, busy, other;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...)
{
	char cmd[6000], full[6500];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(full, sizeof full, "{ %s; } >>%s/commands.log 2>&1", cmd, g_base);
	int st = system(full);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void *buyer(void *arg)
{
	struct thr *t = arg;
	flash_t *h;
	if (flash_open(t->seg, 0, &h) != FLASH_OK)
		return NULL;
	uint64_t u = ((uint64_t)(t->idx + 1) << 40);
	while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
		struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .user_id = ++u, .qty = 1 };
		int rc = flash_order(h, &r, NULL);
		if (rc == FLASH_OK)
			t->ok++;
		else if (rc == FLASH_ESOLD_OUT)
			t->soldout++;
		else if (rc == FLASH_EBUSY)
			t->busy++;          /* the ring is full: the daemon is behind (async) */
		else if (rc == FLASH_EFULL)
			break;              /* the segment's tables: sized for the run, a hint to shorten it */
		else
			t->other++;
	}
	flash_close(h);
	return NULL;
}

/* One mode of one round.  @return orders/s, and the refusals in *dry. */
static double run_one(int round, int leased, uint64_t *dry, uint64_t *busy, uint64_t *other)
{
	char seg[64], wal[400], log[400];
	snprintf(seg, sizeof seg, "/fs-lbench-%d-%d-%d", (int)getpid(), round, leased);
	snprintf(wal, sizeof wal, "%s/wal-%d-%d", g_base, round, leased);
	snprintf(log, sizeof log, "%s/serve-%d-%d.log", g_base, round, leased);
	uint32_t act = ACT;
	uint64_t cap = 1u << 22;
	struct flash_seg_opts so;
	flash_seg_opts_default(&so);
	so.max_orders = (uint32_t)cap;
	so.max_users = (uint32_t)cap;
	so.max_procs = 64;
	so.ring_records = 1u << 14;
	so.durability = g_sync ? FLASH_DURABILITY_SYNC : FLASH_DURABILITY_ASYNC;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	struct flash_activity a = { .id = act, .limit_per_user = 1, .max_qty = 1, .scope = FLASH_SCOPE_ACTIVITY,
	                            .start_ns = now - 1000000000LL, .end_ns = now + 3600LL * 1000000000LL };
	flash_t *h;
	if (flash_seg_create(seg, &so) != FLASH_OK || flash_open(seg, 0, &h) != FLASH_OK ||
	    flash_activity_add(h, &a) != FLASH_OK ||
	    flash_sku_add(h, act, SKU, leased ? 0 : cap, 1) != FLASH_OK) {
		fprintf(stderr, "lease_bench: segment %s could not be made\n", seg);
		exit(1);
	}
	flash_close(h);
	pid_t p = fork();
	if (p == 0) {
		char lmax[16], lmin[16], box[16];
		/* a box id per round: a new segment must not adopt the leases
		 * of the previous round's box */
		snprintf(box, sizeof box, "%d", round + 1);
		snprintf(lmax, sizeof lmax, "%u", g_lease_max);
		snprintf(lmin, sizeof lmin, "%u", g_lease_max / 100 ? g_lease_max / 100 : 1);
		FILE *f = freopen(log, "a", stderr);
		(void)f;
		if (leased)
			execl(g_bin, g_bin, "serve", "--name", seg, "--wal", wal, "--no-snapshot", "--reconcile-every", "0",
			      "--lease", g_urls, "--box-id", box, "--lease-max", lmax, "--lease-min", lmin,
			      "--log-level", "warn", (char *)NULL);
		else
			execl(g_bin, g_bin, "serve", "--name", seg, "--wal", wal, "--no-snapshot", "--reconcile-every", "0",
			      "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	/* the leased box starts empty: the first lease arrives before the clock starts */
	flash_t *ro;
	if (flash_open(seg, FLASH_RDONLY, &ro) == FLASH_OK) {
		for (int i = 0; i < 3000; i++) {
			struct flash_sku_info si;
			if (!leased || (flash_sku_get(ro, act, SKU, &si) == FLASH_OK && si.available > 0))
				break;
			usleep(10000);
		}
		flash_close(ro);
	}
	struct thr t[MAX_THREADS];
	memset(t, 0, sizeof t);
	__atomic_store_n(&g_stop, 0, __ATOMIC_RELEASE);
	double t0 = now_s();
	for (int i = 0; i < g_threads; i++) {
		t[i].seg = seg;
		t[i].idx = i;
		pthread_create(&t[i].th, NULL, buyer, &t[i]);
	}
	while (now_s() - t0 < g_seconds)
		usleep(10000);
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	uint64_t ok = 0;
	*dry = 0;
	*busy = 0;
	*other = 0;
	for (int i = 0; i < g_threads; i++) {
		pthread_join(t[i].th, NULL);
		ok += t[i].ok;
		*dry += t[i].soldout;
		*busy += t[i].busy;
		*other += t[i].other;
	}
	double el = now_s() - t0;
	kill(p, SIGTERM);
	waitpid(p, NULL, 0);
	flash_seg_destroy(seg);
	sh("rm -rf '%s'", wal);
	return (double)ok / el;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bin") && i + 1 < argc)
			g_bin = argv[++i];
		else if (!strcmp(argv[i], "--galera") && i + 1 < argc)
			g_galera = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			g_rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			g_seconds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			g_threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
			g_nodes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--lease-max") && i + 1 < argc)
			g_lease_max = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--sync"))
			g_sync = 1;
		else {
			fprintf(stderr, "usage: lease_bench --bin FLASHSTOCK --galera GALERA_SH [--rounds R]"
			        " [--seconds S] [--threads T] [--sync] [--lease-max U] [--nodes N]\n");
			return 2;
		}
	}
	if (!g_bin || !g_galera || g_rounds < 1 || g_rounds > MAX_ROUNDS || g_seconds < 1 || g_threads < 1 ||
	    g_threads > MAX_THREADS || g_nodes < 1 || g_nodes > 3) {
		fprintf(stderr, "lease_bench: --bin and --galera are required; 1..%d rounds, 1..%d threads,"
		        " 1..3 nodes\n", MAX_ROUNDS, MAX_THREADS);
		return 2;
	}
	snprintf(g_base, sizeof g_base, "/tmp/lease_bench.XXXXXX");
	if (!mkdtemp(g_base))
		return 1;
	chmod(g_base, 0711);   /* the cluster's own user must reach its directory */
	snprintf(g_gdir, sizeof g_gdir, "%s/galera", g_base);
	char own[32];
	snprintf(own, sizeof own, "%d", (int)getpid());
	setenv("FLASH_GALERA_OWNER", own, 1);
	fprintf(stderr, "lease_bench: starting a %d-node Galera cluster in %s\n", g_nodes, g_gdir);
	if (sh("sh %s start %s %d", g_galera, g_gdir, g_nodes) != 0) {
		fprintf(stderr, "lease_bench: the cluster did not start (%s/commands.log)\n", g_base);
		return 1;
	}
	char p[400];
	snprintf(p, sizeof p, "%s/urls", g_gdir);
	FILE *f = fopen(p, "r");
	char line[1024];
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0])
			continue;
		size_t k = strlen(g_urls);
		snprintf(g_urls + k, sizeof g_urls - k, "%s%s", k ? "," : "", line);
	}
	if (f)
		fclose(f);
	if (sh("%s lease init --mysql '%s'", g_bin, g_urls) != 0 ||
	    sh("%s lease pool --mysql '%s' --activity %u --sku %u --total %llu", g_bin, g_urls, ACT, SKU,
	       100000000000ull) != 0) {
		fprintf(stderr, "lease_bench: lease init / pool failed (%s/commands.log)\n", g_base);
		sh("sh %s stop %s", g_galera, g_gdir);
		return 1;
	}

	double owned[MAX_ROUNDS], leased[MAX_ROUNDS];
	uint64_t dry_sum = 0, busy_o = 0, busy_l = 0, other_sum = 0;
	printf("| round | owned: orders/s | leased: orders/s | leased: sold-out answers (box dry) |\n"
	       "|---|---|---|---|\n");
	for (int r = 0; r < g_rounds; r++) {
		uint64_t dry, busy, other, d2, b2, o2;
		if (r % 2 == 0) {
			owned[r] = run_one(r, 0, &d2, &b2, &o2);
			leased[r] = run_one(r, 1, &dry, &busy, &other);
		} else {
			leased[r] = run_one(r, 1, &dry, &busy, &other);
			owned[r] = run_one(r, 0, &d2, &b2, &o2);
		}
		dry_sum += dry;
		busy_l += busy;
		busy_o += b2;
		other_sum += other + o2 + d2;
		printf("| %d | %.0f | %.0f | %" PRIu64 " |\n", r + 1, owned[r], leased[r], dry);
		fflush(stdout);
	}
	double mo = median(owned, g_rounds), ml = median(leased, g_rounds);
	printf("| **median** | **%.0f** | **%.0f** | leased/owned = %.3f |\n", mo, ml, ml / mo);
	printf("\n%d rounds of %d s, %d buyer threads, %s durability, lease-max %u, %d Galera node(s);"
	       " sold-out answers of the leased box over all rounds: %" PRIu64 "; ring-full answers (the"
	       " daemon behind): owned %" PRIu64 ", leased %" PRIu64 "; other errors: %" PRIu64 "\n",
	       g_rounds, g_seconds, g_threads, g_sync ? "sync" : "async", g_lease_max, g_nodes, dry_sum, busy_o,
	       busy_l, other_sum);
	sh("sh %s stop %s", g_galera, g_gdir);
	sh("rm -rf '%s'", g_base);
	return 0;
}
