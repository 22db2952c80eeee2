/*
 * test_top.c -- `flashstock top` through the real binary: a few refreshes
 * in line mode (stdout a pipe) show the figures of a known sale -- orders,
 * refusals by code, stock per sku, the WAL's position and lag, the daemon
 * -- read from the segment and from the daemon's --metrics endpoint; on a
 * terminal (a pty) it redraws in place; --help and a missing --name.
 */
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>

#include "helpers.h"
#include "serve.h"
#include "wal_testutil.h"

static const char *bin(void)
{
	const char *b = getenv("FLASH_BIN");
	if (!b || !*b)
		fail_msg("FLASH_BIN is not set: run through ctest");
	return b;
}

/* Run `flashstock top ARGS` with stdout a pipe; its output (malloc'ed) and status. */
static char *run_top(const char *args, int *status)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s' top %s 2>&1", bin(), args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap);
	assert_non_null(b);
	while ((r = fread(b + n, 1, cap - n - 1, p)) > 0) {
		n += r;
		if (n + 1 == cap) {
			b = realloc(b, cap *= 2);
			assert_non_null(b);
		}
	}
	b[n] = 0;
	*status = pclose(p);
	return b;
}

static int field(const char *line, const char *kv)
{
	size_t n = strlen(kv);
	for (const char *p = strstr(line, kv); p; p = strstr(p + 1, kv))
		if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
			return 1;
	return 0;
}

static void test_top_lines_show_the_figures_of_a_known_sale(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	memset(&t, 0, sizeof t);
	serve_opts_default(&t.o);
	t.o.segment = name;
	t.o.wal_dir = dir;
	t.o.log_level = PLOG_ERROR;
	t.o.idle_us_max = 200;
	t.o.stop = &t.stop;
	t.o.metrics = "127.0.0.1:0";
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);

	/* the sale: 10 units of sku 1 for 12 buyers, one of them tries sku 2 too */
	assert_int_equal(t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 10, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 2, 5, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 12; u++)
		assert_int_equal(t_order(h, 1, 1, u, 1, 0, 0, NULL), u <= 10 ? FLASH_OK : FLASH_ESOLD_OUT);
	assert_int_equal(t_order(h, 1, 2, 1, 1, 0, 0, NULL), FLASH_ELIMIT);
	struct flash_obs o;
	assert_int_equal(flash_obs_get(h, &o), FLASH_OK);   /* the last call joins the figures */
	/* every record durable and reflected: 3 catalog records + 10 orders */
	struct flash_ident id;
	for (int i = 0; i < 6000; i++) {
		assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
		if (id.wal_lsn == 13)
			break;
		t_sleep_ms(10);
	}
	assert_int_equal(id.wal_lsn, 13);
	uint16_t port;
	while ((port = (uint16_t)__atomic_load_n(&t.st.metrics_port, __ATOMIC_ACQUIRE)) == 0)
		t_sleep_ms(5);

	char args[256];
	int status;
	snprintf(args, sizeof args, "--name %s --interval 50 --count 3 --metrics 127.0.0.1:%u", name,
	         port);
	char *out = run_top(args, &status);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	int lines = 0;
	char *last = NULL;
	for (char *p = out; *p; p = strchr(p, '\n') + 1) {
		if (!strchr(p, '\n'))
			fail_msg("unterminated line: %s", p);
		last = p;
		lines++;
		*strchr(p, '\n') = 0;
		if (strncmp(p, "time=", 5) != 0)
			fail_msg("not a top line: %s", p);
		*(p + strlen(p)) = '\n';
	}
	assert_int_equal(lines, 3);
	*strchr(last, '\n') = 0;
	char daemon[32];
	snprintf(daemon, sizeof daemon, "daemon=%d", (int)getpid());
	const char *want[] = {
		"orders=10", "orders_per_s=0.0", "calls=13", "ok_pct=76.9", "sold_out=2", "limit=1",
		"stock:1/1=0/10", "stock:1/2=5/5", "wal_lsn=13", "wal_pending=0", daemon,
		"wal_pending_frames=0", "mysql_lag=-", "mysql_connected=-",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (!field(last, want[i]))
			fail_msg("'%s' not in: %s", want[i], last);
	assert_true(strstr(last, "order_p50_us=") != NULL);
	free(out);

	/* without --metrics the daemon's own figures read '-' */
	snprintf(args, sizeof args, "--name %s --interval 10 --count 1", name);
	out = run_top(args, &status);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(field(out, "wal_pending_frames=-") && field(out, "orders=10"));
	free(out);

	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t.th, NULL);
	assert_int_equal(t.rc, 0);
	wt_rmdir(dir);
}

/* On a terminal each refresh goes home and clears, then draws the panel. */
static void test_top_on_a_terminal_redraws_in_place(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 7, 3, 1), FLASH_OK);
	int fd;
	pid_t pid = forkpty(&fd, NULL, NULL, NULL);
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(bin(), bin(), "top", "--name", name, "--interval", "20", "--count", "2", (char *)NULL);
		_exit(127);
	}
	char buf[16384];
	size_t n = 0;
	ssize_t r;
	while (n + 1 < sizeof buf && (r = read(fd, buf + n, sizeof buf - n - 1)) > 0)
		n += (size_t)r;   /* EIO once the child is gone */
	buf[n] = 0;
	close(fd);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	int clears = 0;
	for (char *p = strstr(buf, "\033[H\033[2J"); p; p = strstr(p + 1, "\033[H\033[2J"))
		clears++;
	assert_int_equal(clears, 2);
	assert_non_null(strstr(buf, "flashstock top"));
	assert_non_null(strstr(buf, "activity/sku"));
	assert_non_null(strstr(buf, "1/7"));
	assert_null(strstr(buf, "time="));
}

static void test_top_help_and_usage(void **st)
{
	(void)st;
	int status;
	char *out = run_top("--help", &status);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_non_null(strstr(out, "usage: flashstock top --name NAME"));
	free(out);
	out = run_top("--interval 100", &status);
	assert_int_equal(WEXITSTATUS(status), 2);
	assert_non_null(strstr(out, "--name is required"));
	free(out);
	out = run_top("--name /fs-top-none-x --count 1", &status);
	assert_int_equal(WEXITSTATUS(status), 1);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_top_lines_show_the_figures_of_a_known_sale, t_teardown),
		cmocka_unit_test_teardown(test_top_on_a_terminal_redraws_in_place, t_teardown),
		cmocka_unit_test_teardown(test_top_help_and_usage, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
