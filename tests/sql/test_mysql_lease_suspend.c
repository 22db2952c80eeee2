/*
 * test_mysql_lease_suspend.c -- self-suspension of the lease agent (issue
 * 19, item 2), through the real `flashstock serve --lease` against the
 * single-node fixture, whose server is halted to cut the box off (its node
 * unreachable: every connect refused at once) or frozen (SIGSTOP: every
 * connect and read waits out the agent's timeout).
 *
 * The promise under test (docs/boxes.md): a box that loses
 * MariaDB sells nothing later than
 *
 *     3 x --heartbeat-s + 2 s (the agent's MariaDB timeout) + the drain
 *
 * after the start of its last heartbeat MariaDB accepted, whatever the
 * number of leased skus -- below `lease fence`'s default --stale-s 30, so a
 * box that may be fenced has stopped selling first -- and while it stays
 * suspended no sku stays sellable: a unit sold between the drain's read and
 * its restock does not stop the drain, and a unit a cancel gives back is
 * taken out again within two ticks plus one heartbeat attempt.
 *
 * MariaDB is shared with every other mysql test (ctest RESOURCE_LOCK
 * mariadb): the teardown resumes it on every path, and ends the buyer and
 * serve this program started.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "flashstock.h"
#include "helpers.h"
#include "central.h"
#include "mysql_apply.h"
#include "mysql_testutil.h"
#include "lease_testutil.h"

#define WAIT_MS    30000
#define NSKU       10
#define HB_S       1                        /* serve --heartbeat-s */
#define TIMEOUT_MS 2000                     /* the agent's MariaDB connect/read/write timeout */
#define TICK_MS    50                       /* the agent's loop period */
/* the stated bound: last heartbeat (its start) to the last possible sale */
#define BOUND_MS   (3 * HB_S * 1000 + TIMEOUT_MS)
/* the drain itself (one fdatasync'd intent per sku with stock) on a loaded
 * 2-core machine */
#define DRAIN_MS   1000
/* a unit a cancel gives back during the suspension is out again within */
#define REDRAIN_MS (2 * TICK_MS + TIMEOUT_MS + DRAIN_MS)
#define SALES_MAX  65536

struct box {
	uint32_t id;
	char     seg[64];
	char     dir[256];
	char     wal[300];
	char     log[300];
	pid_t    serve;
	flash_t *h;
	uint64_t next_user;
};

/* What the buyer process saw, in a shared mapping: every sale, in order. */
struct sales {
	int      stop;                  /* atomic: the test asks the buyer to end */
	uint64_t n;                     /* atomic (release): entries published */
	struct {
		int64_t  asked_ns;      /* CLOCK_REALTIME just before the order was placed */
		int64_t  ns;            /* and just after it returned */
		uint32_t sku;
	} v[SALES_MAX];
};

static char g_url[600];
static central_t *g_c;
static struct box *g_box;               /* for the teardown */
static pid_t g_buyer;
static struct sales *g_sales;


static void fresh_central(const char *name)
{
	lt_central_fresh(g_url, sizeof g_url, "ls", name, &g_c);
}

static int64_t q1(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int64_t v = lt_q1v(g_c, fmt, ap);
	va_end(ap);
	return v;
}

/* A box: a segment with activity 1 (one order per user) and skus 1..NSKU at
 * 0 units, tables big enough for the buyer, and a WAL directory. */
static void box_new(struct box *b, uint32_t id)
{
	memset(b, 0, sizeof *b);
	b->id = id;
	struct flash_seg_opts o;
	t_opts_small(&o);
	o.max_users = 1u << 15;
	o.max_orders = 1u << 15;
	o.max_procs = 16;
	o.ring_records = 4096;
	b->h = t_seg_new(&o, b->seg, sizeof b->seg);
	assert_int_equal(t_activity(b->h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	for (uint32_t s = 1; s <= NSKU; s++)
		assert_int_equal(flash_sku_add(b->h, 1, s, 0, 1), FLASH_OK);
	char tmpl[] = "/tmp/fs-susp-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	snprintf(b->dir, sizeof b->dir, "%s", tmpl);
	snprintf(b->wal, sizeof b->wal, "%s/wal", b->dir);
	snprintf(b->log, sizeof b->log, "%s/serve.log", b->dir);
	b->next_user = (uint64_t)id << 32;
	g_box = b;
}

static void box_serve(struct box *b, const char *lmin, const char *lmax)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(b->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		unsetenv("FLASH_LEASE_KILL_AT");
		char boxid[16], hb[16];
		snprintf(boxid, sizeof boxid, "%u", b->id);
		snprintf(hb, sizeof hb, "%d", HB_S);
		execl(lt_bin(), "flashstock", "serve", "--name", b->seg, "--wal", b->wal, "--no-snapshot",
		      "--metrics", "127.0.0.1:0",
		      "--reconcile-every", "0", "--lease", g_url, "--box-id", boxid, "--lease-min", lmin,
		      "--lease-max", lmax, "--lease-lead-ms", "1000", "--heartbeat-s", hb, "--log-level", "info",
		      (char *)NULL);
		_exit(127);
	}
	b->serve = pid;
}

/* One sample of the box's `serve --metrics` (the port its log names);
 * UINT64_MAX when serve does not export @p name. */
static uint64_t box_metric(struct box *b, const char *name)
{
	return lt_metric(b->log, name);
}

static void box_stop(struct box *b)
{
	if (!b->serve)
		return;
	kill(b->serve, SIGTERM);
	int st = 0;
	assert_int_equal(waitpid(b->serve, &st, 0), b->serve);
	b->serve = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("serve of box %u ended with status %#x; see %s", b->id, st, b->log);
}

static void box_free(struct box *b)
{
	box_stop(b);
	g_box = NULL;
	if (getenv("FLASH_TEST_KEEP")) {        /* look at the serve log */
		fprintf(stderr, "box %u kept in %s\n", b->id, b->dir);
		return;
	}
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", b->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", b->dir);
}

static struct flash_sku_info sku_info(struct box *b, uint32_t sku)
{
	struct flash_sku_info si;
	assert_int_equal(flash_sku_get(b->h, 1, sku, &si), FLASH_OK);
	return si;
}

/* The box's leases of @p sku minus their returns, centrally. */
static int64_t box_leased(struct box *b, uint32_t sku)
{
	return q1("SELECT COALESCE(SUM(units - returned), 0) FROM fs_lease WHERE box_id = %u AND sku_id = %u",
	          b->id, sku);
}

/* Every sku settled: segment total (loaded - unloaded) = leases - returns;
 * so whatever a suspension took out was loaded back, once. */
static void box_settled(struct box *b)
{
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;
	for (uint32_t s = 1; s <= NSKU; s++)
		while ((int64_t)sku_info(b, s).total != box_leased(b, s)) {
			if (t_now_ns() > end)
				fail_msg("box %u sku %u: segment total %llu, leases %lld", b->id, s,
				         (unsigned long long)sku_info(b, s).total, (long long)box_leased(b, s));
			t_sleep_ms(20);
		}
}

/* Per sku: units in the pool + units in leases (not returned) = total. */
static void pools_add_up(int64_t total)
{
	for (uint32_t s = 1; s <= NSKU; s++) {
		assert_true(q1("SELECT unleased FROM fs_pool WHERE activity_id = 1 AND sku_id = %u", s) >= 0);
		/* one statement, one read view (a take committed between two
		 * SELECTs would count its units twice) */
		assert_int_equal(q1("SELECT unleased + (SELECT COALESCE(SUM(units - returned), 0) FROM fs_lease"
		                    " WHERE sku_id = %u) FROM fs_pool WHERE activity_id = 1 AND sku_id = %u", s, s),
		                 total);
	}
}

static void wait_every_sku_stocked(struct box *b)
{
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;
	for (uint32_t s = 1; s <= NSKU; s++)
		while (sku_info(b, s).available == 0) {
			if (t_now_ns() > end)
				fail_msg("box %u: sku %u got no lease; see %s", b->id, s, b->log);
			t_sleep_ms(20);
		}
}

/*
 * The buyer: a process of its own (a handle is per process and thread) that
 * tries every sku once per @p period_ms, with a new user each order, and
 * publishes every sale.  Sold out is expected; any other refusal ends it
 * with status 2.
 */
static void buyer_start(struct box *b, unsigned period_ms)
{
	g_sales = mmap(NULL, sizeof *g_sales, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(g_sales != MAP_FAILED);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		flash_t *h;
		if (flash_open(b->seg, 0, &h) != FLASH_OK)
			_exit(3);
		uint64_t user = ((uint64_t)b->id << 32) | (1ull << 31);
		while (!__atomic_load_n(&g_sales->stop, __ATOMIC_ACQUIRE)) {
			for (uint32_t s = 1; s <= NSKU; s++) {
				int64_t asked = t_now_ns();
				int rc = t_order(h, 1, s, ++user, 1, 0, 0, NULL);
				if (rc == FLASH_ESOLD_OUT)
					continue;
				if (rc != FLASH_OK)
					_exit(2);
				uint64_t i = g_sales->n;
				if (i < SALES_MAX) {
					g_sales->v[i].asked_ns = asked;
					g_sales->v[i].ns = t_now_ns();
					g_sales->v[i].sku = s;
					/* release: the entry is written before it is counted */
					__atomic_store_n(&g_sales->n, i + 1, __ATOMIC_RELEASE);
				}
			}
			t_sleep_ms(period_ms);
		}
		flash_close(h);
		_exit(0);
	}
	g_buyer = pid;
}

/* Stop the buyer; the number of sales it published. */
static uint64_t buyer_stop(void)
{
	__atomic_store_n(&g_sales->stop, 1, __ATOMIC_RELEASE);
	int st = 0;
	assert_int_equal(waitpid(g_buyer, &st, 0), g_buyer);
	g_buyer = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("buyer ended with status %#x", st);
	uint64_t n = __atomic_load_n(&g_sales->n, __ATOMIC_ACQUIRE);
	assert_true(n < SALES_MAX);
	return n;
}

static int64_t ms_of(int64_t ns) { return ns / 1000000; }

/*
 * Ten leased skus, a buyer on each, then MariaDB cut by @p cut ("halt":
 * down, every connect refused at once; "freeze": SIGSTOP, every connect and
 * read waits for its timeout) and restored by @p restore.
 */
static void cut_off_box_stops_selling_within_the_bound(const char *cut, const char *restore)
{
	fresh_central(cut);
	for (uint32_t s = 1; s <= NSKU; s++)
		assert_int_equal(central_pool_set(g_c, 1, s, 2000), FLASH_OK);
	static struct box b;
	box_new(&b, 11);
	/* at least 200 units per sku: at 10 sales per second each, the box
	 * holds stock for far longer than the bound -- it stops because it
	 * suspends itself, not because it runs dry */
	box_serve(&b, "200", "400");
	wait_every_sku_stocked(&b);
	buyer_start(&b, 100);
	/* past the agent's first 5 s every sku asks MariaDB about its pool
	 * every 250 ms: cut off, each of those statements would retry */
	t_sleep_ms(6000);
	int64_t cut0 = t_now_ns();
	lt_mariadb(cut);
	int64_t cut1 = t_now_ns();    /* no heartbeat can be accepted after this */
	/* buyers keep trying every sku well past the bound */
	while (t_now_ns() < cut1 + (int64_t)(BOUND_MS + DRAIN_MS + 3000) * 1000000)
		t_sleep_ms(50);
	uint64_t hb_ms = box_metric(&b, "flashstock_lease_last_heartbeat_ms");
	uint64_t suspended = box_metric(&b, "flashstock_lease_suspended");
	uint64_t failures = box_metric(&b, "flashstock_lease_failures_total");
	uint64_t n = buyer_stop();
	int64_t last = 0;
	uint64_t after_cut = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (g_sales->v[i].ns > last)
			last = g_sales->v[i].ns;
		after_cut += g_sales->v[i].ns > cut0;
	}
	fprintf(stderr, "# %s: %llu sales, %llu after the cut began (it took %lld ms); last sale %lld ms"
	        " after the cut, %lld ms after the last heartbeat; %llu statements failed\n", cut,
	        (unsigned long long)n, (unsigned long long)after_cut, (long long)ms_of(cut1 - cut0),
	        (long long)ms_of(last - cut1),
	        hb_ms == UINT64_MAX ? -1LL : (long long)(ms_of(last) - (int64_t)hb_ms),
	        (unsigned long long)failures);
	/* whatever the heartbeat's time, it was before the cut: a sale
	 * later than that + the bound is past it */
	if (last > cut1 + (int64_t)(BOUND_MS + DRAIN_MS) * 1000000)
		fail_msg("a box cut off from MariaDB sold %lld ms after MariaDB was down, past the bound of"
		         " %d ms (+ %d ms for the drain) after its last heartbeat", (long long)ms_of(last - cut1),
		         BOUND_MS, DRAIN_MS);
	if (hb_ms == UINT64_MAX)
		fail_msg("serve --metrics has no flashstock_lease_last_heartbeat_ms");
	assert_true((int64_t)hb_ms <= ms_of(cut1));
	/* the bound itself, from the heartbeat the agent reports */
	if (ms_of(last) > (int64_t)hb_ms + BOUND_MS + DRAIN_MS)
		fail_msg("last sale %lld ms after the last heartbeat: bound %d ms (+ %d ms for the drain)",
		         (long long)(ms_of(last) - (int64_t)hb_ms), BOUND_MS, DRAIN_MS);
	assert_true(after_cut > 0);   /* it did sell while MariaDB was only briefly away */
	assert_int_equal(suspended, 1);
	for (uint32_t s = 1; s <= NSKU; s++)
		assert_int_equal(sku_info(&b, s).available, 0);
	/* fence's default --stale-s is 30: the bound keeps a margin below it */
	assert_true(BOUND_MS + DRAIN_MS < 30000 / 2);
	lt_mariadb(restore);
	/* back in touch and not fenced: the drained units are loaded again */
	box_settled(&b);
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;
	while (t_order(b.h, 1, 1, ++b.next_user, 1, 0, 0, NULL) != FLASH_OK) {
		assert_true(t_now_ns() < end);
		t_sleep_ms(20);
	}
	box_stop(&b);
	box_settled(&b);
	pools_add_up(2000);
	box_free(&b);
	munmap(g_sales, sizeof *g_sales);
	g_sales = NULL;
	central_close(g_c);
	g_c = NULL;
}

static void a_partitioned_box_with_ten_leased_skus_sells_nothing_after_3_heartbeats_and_the_timeout(void **state)
{
	(void)state;
	cut_off_box_stops_selling_within_the_bound("halt", "resume");
}

static void a_box_whose_mariadb_hangs_sells_nothing_after_3_heartbeats_and_the_timeout(void **state)
{
	(void)state;
	cut_off_box_stops_selling_within_the_bound("freeze", "thaw");
}

static void after_suspension_racing_sales_and_cancels_leave_no_sku_sellable_during_the_outage(void **state)
{
	(void)state;
	fresh_central("cancel");
	for (uint32_t s = 1; s <= NSKU; s++)
		assert_int_equal(central_pool_set(g_c, 1, s, 2000), FLASH_OK);
	static struct box b;
	box_new(&b, 12);
	box_serve(&b, "200", "400");
	wait_every_sku_stocked(&b);
	/* orders placed before the outage, cancelled during it */
	enum { PER_SKU = 4 };
	uint64_t orders[NSKU * PER_SKU];
	size_t norders = 0;
	for (int i = 0; i < PER_SKU; i++)
		for (uint32_t s = 1; s <= NSKU; s++) {
			struct flash_order_res res;
			assert_int_equal(t_order(b.h, 1, s, ++b.next_user, 1, 0, 0, &res), FLASH_OK);
			orders[norders++] = res.order_no;
		}
	/* a buyer on every sku, 25 tries a second each, through the drain: a
	 * sale between its read and its restock refuses the restock */
	buyer_start(&b, 40);
	t_sleep_ms(1000);
	lt_mariadb("halt");
	int64_t halt1 = t_now_ns();
	/* the suspension: every sku at 0 at once */
	int64_t zero = 0;
	while (!zero) {
		int all = 1;
		for (uint32_t s = 1; s <= NSKU && all; s++)
			all = sku_info(&b, s).available == 0;
		if (all)
			zero = t_now_ns();
		else if (t_now_ns() > halt1 + (int64_t)WAIT_MS * 1000000)
			fail_msg("%d s after MariaDB went down some sku still has stock", WAIT_MS / 1000);
		else
			t_sleep_ms(1);
	}
	fprintf(stderr, "# every sku at 0 %lld ms after the halt\n", (long long)ms_of(zero - halt1));
	/* the buyer goes on for a second: no order placed after every sku read
	 * 0 gets a unit (a restock refused because a unit sold between the
	 * drain's read and its restock left nothing behind) */
	t_sleep_ms(1000);
	uint64_t n = buyer_stop();
	for (uint64_t i = 0; i < n; i++)
		if (g_sales->v[i].asked_ns > zero)
			fail_msg("sku %u sold %lld ms after every sku read 0 (MariaDB down, no cancel yet)",
			         g_sales->v[i].sku, (long long)ms_of(g_sales->v[i].asked_ns - zero));
	/* cancels, one every 100 ms, round robin over the skus, while every
	 * sku is polled (no buyer: a unit given back stays visible until the
	 * agent takes it out): it must be out within a tick plus one heartbeat
	 * attempt */
	int64_t cancel_ns[NSKU + 1] = { 0 };      /* the last cancel per sku */
	int64_t since[NSKU + 1] = { 0 };          /* available > 0 since, per sku */
	int64_t longest = 0;
	uint32_t longest_sku = 0;
	uint64_t seen = 0;
	size_t next = 0;
	int64_t next_cancel = t_now_ns();
	int64_t stop = next_cancel + (int64_t)norders * 100 * 1000000 + (int64_t)(REDRAIN_MS + 1000) * 1000000;
	while (t_now_ns() < stop) {
		int64_t now = t_now_ns();
		if (next < norders && now >= next_cancel) {
			uint32_t back = 0;
			uint32_t sku = (uint32_t)(next % NSKU) + 1;     /* orders[] runs sku 1..NSKU, PER_SKU times */
			assert_int_equal(flash_cancel(b.h, orders[next], &back), FLASH_OK);
			assert_int_equal(back, 1);
			cancel_ns[sku] = t_now_ns();
			next++;
			next_cancel = now + 100 * 1000000;
		}
		for (uint32_t s = 1; s <= NSKU; s++) {
			uint64_t av = sku_info(&b, s).available;
			now = t_now_ns();
			if (av == 0) {
				since[s] = 0;
				continue;
			}
			seen++;
			if (!since[s])
				since[s] = now;
			if (now - since[s] > longest) {
				longest = now - since[s];
				longest_sku = s;
			}
			if (cancel_ns[s] == 0)
				fail_msg("sku %u has %llu units after the suspension, with no cancel", s,
				         (unsigned long long)av);
		}
		t_sleep_ms(1);
	}
	assert_int_equal(next, norders);
	fprintf(stderr, "# %zu cancels; stock seen in %llu polls, the longest for %lld ms (sku %u)\n", norders,
	        (unsigned long long)seen, (long long)ms_of(longest), longest_sku);
	if (longest > (int64_t)REDRAIN_MS * 1000000)
		fail_msg("sku %u stayed sellable for %lld ms during the suspension (bound: %d ms after a cancel)",
		         longest_sku, (long long)ms_of(longest), REDRAIN_MS);
	for (uint32_t s = 1; s <= NSKU; s++)
		assert_int_equal(sku_info(&b, s).available, 0);
	lt_mariadb("resume");
	box_settled(&b);
	int64_t end = t_now_ns() + (int64_t)WAIT_MS * 1000000;
	while (t_order(b.h, 1, 1, ++b.next_user, 1, 0, 0, NULL) != FLASH_OK) {
		assert_true(t_now_ns() < end);
		t_sleep_ms(20);
	}
	box_stop(&b);
	box_settled(&b);
	pools_add_up(2000);
	box_free(&b);
	munmap(g_sales, sizeof *g_sales);
	g_sales = NULL;
	central_close(g_c);
	g_c = NULL;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* What the agent's bound rests on: a central call ends at the handle's
 * deadline, however long its retry time, and one made after it sends
 * nothing. */
static void a_central_call_ends_at_its_deadline_and_one_past_it_sends_nothing(void **state)
{
	(void)state;
	fresh_central("deadline");
	central_close(g_c);
	struct central_opts o = { .urls = g_url, .retry_ms = 15000, .timeout_s = 2 };
	assert_int_equal(central_open(&o, &g_c), FLASH_OK);
	assert_int_equal(central_pool_set(g_c, 1, 1, 10), FLASH_OK);
	struct pool_row p;
	/* past it: refused before any statement, the server up */
	central_set_deadline(g_c, mono_ms() - 1);
	assert_int_equal(central_pool_get(g_c, 1, 1, &p), FLASH_EMYSQL_RETRY);
	assert_non_null(strstr(central_error(g_c), "deadline"));
	/* before it, MariaDB down: retried until the deadline, not 15 s */
	lt_mariadb("halt");
	uint64_t t0 = mono_ms();
	central_set_deadline(g_c, t0 + 700);
	assert_int_equal(central_pool_get(g_c, 1, 1, &p), FLASH_EMYSQL_RETRY);
	uint64_t took = mono_ms() - t0;
	fprintf(stderr, "# ended %llu ms after it began (deadline 700 ms)\n", (unsigned long long)took);
	assert_true(took >= 690 && took < 700 + TIMEOUT_MS);
	lt_mariadb("resume");
	/* none: the handle's own retry time only */
	central_set_deadline(g_c, 0);
	assert_int_equal(central_pool_get(g_c, 1, 1, &p), FLASH_OK);
	assert_int_equal(p.total, 10);
	central_close(g_c);
	g_c = NULL;
}

/* Every path, failed ones too: the buyer and serve ended, MariaDB up. */
static int suspend_teardown(void **state)
{
	if (g_buyer) {
		kill(g_buyer, SIGKILL);
		(void)waitpid(g_buyer, NULL, 0);
		g_buyer = 0;
	}
	if (g_box && g_box->serve) {
		kill(g_box->serve, SIGKILL);
		(void)waitpid(g_box->serve, NULL, 0);
		g_box->serve = 0;
	}
	g_box = NULL;
	(void)lt_mariadb_try("thaw");     /* refused when halted: resume then starts it */
	if (lt_mariadb_try("resume") != 0)
		fprintf(stderr, "mariadb.sh resume failed: the fixture's server may be down\n");
	if (g_sales) {
		munmap(g_sales, sizeof *g_sales);
		g_sales = NULL;
	}
	if (g_c) {
		central_close(g_c);
		g_c = NULL;
	}
	return t_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(a_central_call_ends_at_its_deadline_and_one_past_it_sends_nothing,
		                          suspend_teardown),
		cmocka_unit_test_teardown(a_partitioned_box_with_ten_leased_skus_sells_nothing_after_3_heartbeats_and_the_timeout,
		                          suspend_teardown),
		cmocka_unit_test_teardown(a_box_whose_mariadb_hangs_sells_nothing_after_3_heartbeats_and_the_timeout,
		                          suspend_teardown),
		cmocka_unit_test_teardown(after_suspension_racing_sales_and_cancels_leave_no_sku_sellable_during_the_outage,
		                          suspend_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
