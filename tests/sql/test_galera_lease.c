/*
 * test_galera_lease.c -- leases on the private three-node Galera cluster
 * (tests/fixtures/galera.sh): the node a box's central handle is taking
 * leases through is SIGKILLed, twice, while a second box takes from the same
 * pool through its own handle (so their writes meet on different nodes and
 * Galera's certification refuses some: 1213).  Every take returns FLASH_OK
 * after failing over; afterwards the cluster holds exactly the leases the
 * boxes were told they have -- none twice, none extra -- and the pool plus
 * the leases add up to the total.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "flashstock.h"
#include "helpers.h"
#include "central.h"

#define TOTAL  1000000
#define TAKES  240

static char g_dir[256];
static char g_urls[4096];

static const char *galera_sh(void)
{
	const char *s = getenv("FLASH_GALERA_SH");
	if (!s) {
		fprintf(stderr, "FLASH_GALERA_SH is not set: run through ctest\n");
		exit(1);
	}
	return s;
}

static void galera(const char *verb, int node)
{
	char cmd[1024];
	if (node)
		snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' %d >/dev/null", galera_sh(), verb, g_dir, node);
	else
		snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' 3 >/dev/null", galera_sh(), verb, g_dir);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
}

static int cluster_up(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/fs-galease-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	assert_int_equal(chmod(tmpl, 0711), 0);   /* the cluster's user passes through it */
	snprintf(g_dir, sizeof g_dir, "%s/c", tmpl);
	char owner[32];
	snprintf(owner, sizeof owner, "%d", (int)getpid());
	setenv("FLASH_GALERA_OWNER", owner, 1);
	galera("start", 0);
	char path[300];
	snprintf(path, sizeof path, "%s/urls", g_dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!*line)
			continue;
		if (g_urls[0])
			strcat(g_urls, ",");
		strcat(g_urls, line);
	}
	fclose(f);
	return 0;
}

static int cluster_down(void **state)
{
	(void)state;
	galera("stop", 0);
	char parent[256];
	snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(g_dir, '/') - g_dir), g_dir);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/wal' '%s/serve.log'", parent, parent);
	if (system(cmd) != 0 || rmdir(parent) != 0)
		fprintf(stderr, "could not remove %s\n", parent);
	return 0;
}

/* Lines the handles log: retries after certification failures and moves
 * to another node, for the record (printed, not asserted: how often Galera
 * refuses a commit depends on timing). */
static void count_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	if (strstr(msg, "(1213)"))
		fprintf(stderr, "retried: %s\n", msg);
	else if (strstr(msg, "moving to"))
		fprintf(stderr, "failover: %s\n", msg);
}

/* A handle over the node list starting at node @p first (0-based): box 2
 * starts elsewhere than box 1, so both write the one pool row through
 * different nodes and certification refuses some commits. */
static central_t *central_from(int first, const char *only)
{
	static char rot[4096];
	const char *p = g_urls;
	for (int i = 0; i < first && strchr(p, ','); i++)
		p = strchr(p, ',') + 1;
	int n;
	if (only)
		n = snprintf(rot, sizeof rot, "%s", only);
	else if (p == g_urls)
		n = snprintf(rot, sizeof rot, "%s", g_urls);
	else
		n = snprintf(rot, sizeof rot, "%s,%.*s", p, (int)(p - g_urls - 1), g_urls);
	assert_true(n > 0 && (size_t)n < sizeof rot);   /* the rotated list fits */
	struct central_opts o = { .urls = rot, .retry_ms = 120000, .timeout_s = 3, .log = count_log };
	central_t *c = NULL;
	assert_int_equal(central_open(&o, &c), FLASH_OK);
	return c;
}

/* Take TAKES leases of 1..3 units; kill the node in use at the given take
 * numbers (0: never), restart it later.  Returns the units taken. */
static central_t *central(void)
{
	return central_from(0, NULL);
}

static int64_t taker(uint32_t box, int kill1, int kill2, uint64_t *failovers)
{
	central_t *c = central_from(box == 1 ? 0 : 1, NULL);
	struct box_reg reg;
	assert_int_equal(central_register(c, box, 1, &reg), FLASH_OK);
	int64_t sum = 0;
	int killed = 0;
	for (uint32_t i = 1; i <= TAKES; i++) {
		if (i == (uint32_t)kill1 || i == (uint32_t)kill2) {
			/* the handle's node index is into its own list, which
			 * for box 1 is the cluster's order */
			killed = (int)central_node(c) + 1;
			galera("kill", killed);
		}
		if (killed && (i == (uint32_t)kill1 + 40 || i == (uint32_t)kill2 + 40)) {
			galera("restart", killed);
			killed = 0;
		}
		int64_t k = 1 + i % 3;
		int rc = central_take(c, box, reg.epoch, 1, 1, central_lease_id(box, reg.epoch, i), k);
		if (rc != FLASH_OK)
			fail_msg("box %u take %u: %s (%s)", box, i, flash_strerror(rc), central_error(c));
		sum += k;
	}
	if (killed)
		galera("restart", killed);
	if (failovers)
		*failovers = central_failovers(c);
	central_close(c);
	return sum;
}

static int64_t q1(central_t *c, const char *sql)
{
	MYSQL *m = central_conn(c);
	assert_non_null(m);
	assert_int_equal(mysql_query(m, sql), 0);
	MYSQL_RES *r = mysql_store_result(m);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

static void the_node_in_use_killed_under_takes_no_lease_twice_and_the_pool_adds_up(void **state)
{
	(void)state;
	central_t *c = central();
	assert_int_equal(central_init(c), FLASH_OK);
	assert_int_equal(central_pool_set(c, 1, 1, TOTAL), FLASH_OK);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		int64_t s = taker(2, 0, 0, NULL);
		_exit(write(fds[1], &s, sizeof s) == (ssize_t)sizeof s ? 0 : 1);
	}
	close(fds[1]);
	uint64_t failovers = 0;
	int64_t sum1 = taker(1, 40, 150, &failovers);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int64_t sum2 = -1;
	assert_int_equal(read(fds[0], &sum2, sizeof sum2), (ssize_t)sizeof sum2);
	close(fds[0]);
	assert_true(failovers >= 2);
	/* exactly the leases each box was told it has */
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_lease WHERE box_id = 1"), TAKES);
	assert_int_equal(q1(c, "SELECT COUNT(*) FROM fs_lease WHERE box_id = 2"), TAKES);
	assert_int_equal(q1(c, "SELECT COALESCE(SUM(units), 0) FROM fs_lease WHERE box_id = 1"), sum1);
	assert_int_equal(q1(c, "SELECT COALESCE(SUM(units), 0) FROM fs_lease WHERE box_id = 2"), sum2);
	/* ids are the ones asked for, 1..TAKES of each box's epoch */
	assert_int_equal(q1(c, "SELECT COUNT(DISTINCT lease_id & 16777215) FROM fs_lease"), TAKES);
	assert_int_equal(q1(c, "SELECT unleased FROM fs_pool") + sum1 + sum2, TOTAL);
	/* and every node agrees once the killed ones rejoined */
	int64_t first = -1;
	for (const char *u = g_urls; u && *u;) {
		char one[1024];
		size_t len = strcspn(u, ",");
		snprintf(one, sizeof one, "%.*s", (int)len, u);
		central_t *n = central_from(0, one);
		struct pool_row p;
		assert_int_equal(central_pool_get(n, 1, 1, &p), FLASH_OK);
		assert_int_equal(p.unleased + p.leased, TOTAL);
		if (first < 0)
			first = p.unleased;
		assert_int_equal(p.unleased, first);
		central_close(n);
		u += len;
		if (*u == ',')
			u++;
	}
	central_close(c);
}

/* Box @p box's leases as the cluster has them, one line each. */
static void dump_leases(central_t *c, uint32_t box)
{
	MYSQL *m = central_conn(c);
	char sql[200];
	snprintf(sql, sizeof sql, "SELECT lease_id, epoch, units, returned, state, sold_at_close FROM fs_lease"
	         " WHERE box_id = %u ORDER BY lease_id", box);
	if (!m || mysql_query(m, sql)) {
		fprintf(stderr, "fs_lease of box %u: %s\n", box, m ? mysql_error(m) : "no connection");
		return;
	}
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row;
	fprintf(stderr, "fs_lease of box %u: lease_id epoch units returned state sold_at_close\n", box);
	while (r && (row = mysql_fetch_row(r)) != NULL)
		fprintf(stderr, "  %s %s %s %s %s %s\n", row[0], row[1], row[2], row[3], row[4],
		        row[5] ? row[5] : "NULL");
	if (r)
		mysql_free_result(r);
}

/* What the segment and the daemon say, for a sold count that is not the
 * buyer's: the engine's counters and the daemon's log. */
static void dump_on_mismatch(flash_t *h, const struct flash_sku_info *si, const char *log)
{
	struct flash_stats st;
	if (flash_stats_get(h, &st) == FLASH_OK)
		fprintf(stderr, "segment: total %llu available %llu; orders %llu cancels %llu sold_out %llu"
		        " recoveries %llu rolled_back %llu rolled_forward %llu\n", (unsigned long long)si->total,
		        (unsigned long long)si->available, (unsigned long long)st.orders,
		        (unsigned long long)st.cancels, (unsigned long long)st.sold_out,
		        (unsigned long long)st.recoveries, (unsigned long long)st.rolled_back,
		        (unsigned long long)st.rolled_forward);
	FILE *f = fopen(log, "r");
	char line[1024];
	fprintf(stderr, "---- %s\n", log);
	while (f && fgets(line, sizeof line, f))
		fputs(line, stderr);
	if (f)
		fclose(f);
	fprintf(stderr, "----\n");
}

/*
 * The agent itself: `serve --lease` over the three nodes sells 400 units in
 * small leases while the node its sku's statements go to is SIGKILLed, then
 * (restarted) the next one.  Every unit the buyer asked for is sold; the
 * segment holds exactly what the box's leases say (a lease taken twice, or
 * committed and never loaded, would show); pool + leases = total.
 */
static void the_agent_sells_on_while_the_node_it_uses_is_killed_and_no_lease_is_taken_twice(void **state)
{
	(void)state;
	const char *bin = getenv("FLASH_BIN");
	assert_non_null(bin);
	central_t *c = central();
	assert_int_equal(central_pool_set(c, 2, 1, 2000), FLASH_OK);
	char seg[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.max_users = so.max_orders = so.max_requests = 8192;
	flash_t *h = t_seg_new(&so, seg, sizeof seg);
	assert_int_equal(t_activity(h, 2, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 1, 0, 1), FLASH_OK);
	char wal[300], log[300];
	snprintf(wal, sizeof wal, "%.*s/wal", (int)(strrchr(g_dir, '/') - g_dir), g_dir);
	snprintf(log, sizeof log, "%.*s/serve.log", (int)(strrchr(g_dir, '/') - g_dir), g_dir);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl(bin, "flashstock", "serve", "--name", seg, "--wal", wal, "--no-snapshot", "--reconcile-every",
		      "0", "--lease", g_urls, "--box-id", "9", "--lease-min", "5", "--lease-max", "20",
		      "--heartbeat-s", "2", (char *)NULL);
		_exit(127);
	}
	unsigned first = central_sku_node(2, 1, 3);
	int killed = 0;
	uint64_t user = 1;
	int sold = 0;
	int64_t end = t_now_ns() + 240LL * 1000000000LL;
	while (sold < 400) {
		if (sold == 100 && !killed) {
			killed = (int)first + 1;
			galera("kill", killed);
		}
		if (sold == 250 && killed == (int)first + 1) {
			galera("restart", killed);
			killed = (int)(first + 1) % 3 + 1;
			galera("kill", killed);
		}
		int rc = t_order(h, 2, 1, user++, 1, 0, 0, NULL);
		if (rc == FLASH_OK)
			sold++;
		else if (rc == FLASH_ESOLD_OUT)
			t_sleep_ms(2);
		else
			fail_msg("order: %s", flash_strerror(rc));
		if (t_now_ns() > end)
			fail_msg("the box sold %d of 400 in 240 s; see %s", sold, log);
	}
	galera("restart", killed);
	kill(pid, SIGTERM);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	central_close(c);
	c = central();
	struct flash_sku_info si;
	assert_int_equal(flash_sku_get(h, 2, 1, &si), FLASH_OK);
	if (si.total - si.available != 400)
		dump_on_mismatch(h, &si, log);
	assert_int_equal(si.total - si.available, 400);
	assert_int_equal(si.available, 0);           /* the stop returned the rest */
	int64_t leased = q1(c, "SELECT COALESCE(SUM(units - returned), 0) FROM fs_lease WHERE box_id = 9");
	if (leased != (int64_t)si.total) {
		dump_on_mismatch(h, &si, log);
		dump_leases(c, 9);
	}
	assert_int_equal(leased, (int64_t)si.total);
	assert_int_equal(q1(c, "SELECT unleased FROM fs_pool WHERE activity_id = 2"), 2000 - 400);
	struct pool_row p;
	assert_int_equal(central_pool_get(c, 2, 1, &p), FLASH_OK);
	assert_int_equal(p.unleased + p.leased + p.sold_closed, 2000);
	fprintf(stderr, "box 9: %lld leases taken while two nodes were killed in turn\n",
	        (long long)q1(c, "SELECT COUNT(*) FROM fs_lease WHERE box_id = 9"));
	central_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_node_in_use_killed_under_takes_no_lease_twice_and_the_pool_adds_up),
		cmocka_unit_test_teardown(
			the_agent_sells_on_while_the_node_it_uses_is_killed_and_no_lease_is_taken_twice, t_teardown),
	};
	return cmocka_run_group_tests(tests, cluster_up, cluster_down);
}
