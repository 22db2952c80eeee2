/*
 * demo_durable.c -- the durable half of `flashstock demo` (see
 * demo_durable.h): private directory, private MariaDB, the daemon in a
 * child process, the WAL read back, MySQL caught up and counted, and the
 * reconciler.
 *
 * The MariaDB comes from the project's fixture script
 * (tests/fixtures/mariadb.sh), found next to the executable's source tree
 * or given with --mysql-fixture.  The script runs in its own process group:
 * a Ctrl-C meant for the demo never kills it half-way through a start, and
 * the demo stops the server itself afterwards.
 */
#include "tool.h"
#include "demo_durable.h"

#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture_run.h"
#include "mysql_apply.h"
#include "reconcile.h"
#include "reconcile_sql.h"
#include "serve.h"
#include "wal.h"

/* ---- the fixture script ------------------------------------------------ */

/* Find tests/fixtures/mariadb.sh (contract in demo_durable.h). */
int demo_dur_find_fixture(const char *cmd, const char *given, char *path, size_t cap)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], real[PATH_MAX];
	ssize_t n;

	if (given) {
		if (access(given, R_OK) != 0 || realpath(given, real) == NULL) {
			tool_failf("%s: --mysql-fixture %s: %s", cmd, given, strerror(errno));
			return -1;
		}
		goto found;
	}
	/* installed: <bindir>/../<datadir>/flashstock; the build tree keeps a
	 * copy at the same place relative to tools/ (tools/CMakeLists.txt) */
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(cand, sizeof cand, "%s/%s/mariadb.sh", dirname(exe), FLASH_DATA_REL);
		if (access(cand, R_OK) == 0 && realpath(cand, real) != NULL)
			goto found;
	}
	if (access("tests/fixtures/mariadb.sh", R_OK) == 0 &&
	    realpath("tests/fixtures/mariadb.sh", real) != NULL)
		goto found;
	tool_failf("%s: cannot find mariadb.sh in %s next to the executable, nor "
	           "tests/fixtures/mariadb.sh in the current directory: give --mysql-fixture PATH%s",
	           cmd, FLASH_DATA_REL, strcmp(cmd, "demo") == 0 ? ", or run with --no-mysql" : "");
	return -1;
found:
	if (strlen(real) >= cap) {
		tool_failf("%s: fixture path too long: %s", cmd, real);
		return -1;
	}
	memcpy(path, real, strlen(real) + 1);
	return 0;
}

/* Run `sh FIXTURE CMD DIR` for the demo's server (fixture_run.h). */
static int dur_script(struct demo_dur *d, const char *cmd, char *out, size_t cap)
{
	return fixture_run(d->fixture_path, cmd, d->db_dir, out, cap);
}

/* ---- set-up and tear-down ---------------------------------------------- */

int demo_dur_setup(struct demo_dur *d)
{
	const char *tmp = getenv("TMPDIR");
	char env[4096];
	int rc;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (snprintf(d->dir, sizeof d->dir, "%s/flashstock-demo.XXXXXX", tmp) >= (int)sizeof d->dir)
		return tool_failf("demo: TMPDIR is too long: %s", tmp);
	if (mkdtemp(d->dir) == NULL) {
		d->dir[0] = '\0';
		return tool_failf("demo: make a private directory in %s: %s", tmp, strerror(errno));
	}
	snprintf(d->wal_dir, sizeof d->wal_dir, "%s/wal", d->dir);
	snprintf(d->db_dir, sizeof d->db_dir, "%s/mariadb", d->dir);

	d->st = mmap(NULL, sizeof *d->st, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (d->st == MAP_FAILED) {
		d->st = NULL;
		return tool_failf("demo: mmap: %s", strerror(errno));
	}
	memset(d->st, 0, sizeof *d->st);
	if (!d->use_mysql)
		return TOOL_OK;

	if (demo_dur_find_fixture("demo", d->fixture, d->fixture_path, sizeof d->fixture_path) != 0)
		return TOOL_FAIL;
	fprintf(stderr, "demo: starting a private MariaDB in %s (no TCP port) ...\n", d->db_dir);
	d->db_started = 1;
	rc = dur_script(d, "start", env, sizeof env);
	if (rc != 0)
		return tool_failf("demo: %s start failed (exit %d); try --no-mysql", d->fixture_path, rc);
	if (fixture_export(env, "FLASH_MYSQL_DEFAULTS_FILE", d->defaults_file, sizeof d->defaults_file) != 0)
		return tool_failf("demo: %s start printed no FLASH_MYSQL_DEFAULTS_FILE", d->fixture_path);
	return TOOL_OK;
}

static int dur_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		fprintf(stderr, "flashstock: demo: remove %s: %s\n", path, strerror(errno));
	return 0;
}

/* Did the fixture make its directory (its marker file exists)? */
static int dur_has_marker(const struct demo_dur *d)
{
	char path[sizeof d->db_dir + 32];

	snprintf(path, sizeof path, "%s/.flash-mariadb", d->db_dir);
	return access(path, F_OK) == 0;
}

void demo_dur_teardown(struct demo_dur *d)
{
	if (d->daemon_pid > 0 && !d->daemon_exited)
		demo_dur_daemon_stop(d);
	mdb_close(d->m);
	d->m = NULL;
	if (d->db_started && !dur_has_marker(d)) {
		/* the fixture never got as far as making its directory: nothing runs */
		d->db_started = 0;
	}
	if (d->db_started) {
		fprintf(stderr, "demo: stopping MariaDB ...\n");
		if (dur_script(d, "stop", NULL, 0) != 0)
			tool_failf("demo: %s stop %s failed", d->fixture_path, d->db_dir);
		d->db_started = 0;
	}
	if (d->dir[0]) {
		nftw(d->dir, dur_rm, 16, FTW_DEPTH | FTW_PHYS);
		d->dir[0] = '\0';
	}
	free(d->reconcile_text);
	d->reconcile_text = NULL;
	if (d->st)
		munmap(d->st, sizeof *d->st);
	d->st = NULL;
}

/* ---- the daemon -------------------------------------------------------- */

static volatile sig_atomic_t dur_stop;

static void dur_on_term(int sig)
{
	(void)sig;
	dur_stop = 1;
}

/* Body of the daemon child: serve_run() until SIGTERM.  Ctrl-C is the
 * parent's business: it stops the daemon itself after the buyers. */
static void dur_daemon_main(struct demo_dur *d, const char *name, pid_t parent)
{
	struct serve_opts o;
	struct serve_stats st;
	struct sigaction sa;
	int rc;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = dur_on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);

	serve_opts_default(&o);
	o.segment = name;
	o.wal_dir = d->wal_dir;
	o.wal_segment_bytes = (uint64_t)d->wal_file_mb << 20;
	o.log_level = PLOG_WARN;
	o.stop = &dur_stop;
	if (d->use_mysql) {
		o.mysql.defaults = d->defaults_file;
		o.mysql.drain_ms = 10000;
	}
	memset(&st, 0, sizeof st);
	rc = serve_run(&o, &st);
	memcpy(d->st, &st, sizeof st);
	_exit(rc == 0 ? 0 : 1);
}

int demo_dur_daemon_start(struct demo_dur *d, const char *name)
{
	pid_t parent = getpid(), pid;

	fprintf(stderr, "demo: starting the daemon: WAL in %s, %s durability%s ...\n", d->wal_dir,
	        d->durability == FLASH_DURABILITY_SYNC ? "sync" : "async",
	        d->use_mysql ? ", MySQL applier" : ", no MySQL");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return tool_failf("demo: fork the daemon: %s", strerror(errno));
	if (pid == 0)
		dur_daemon_main(d, name, parent);
	d->daemon_pid = pid;
	d->daemon_exited = 0;
	return TOOL_OK;
}

int demo_dur_reaped(struct demo_dur *d, pid_t pid, int status)
{
	if (d->daemon_pid <= 0 || pid != d->daemon_pid || d->daemon_exited)
		return 0;
	d->daemon_status = status;
	d->daemon_exited = 1;
	return 1;
}

int demo_dur_daemon_died(struct demo_dur *d)
{
	int status;
	pid_t p;

	if (d->daemon_pid <= 0)
		return 0;
	if (d->daemon_exited)
		return 1;
	p = waitpid(d->daemon_pid, &status, WNOHANG);
	if (p == d->daemon_pid)
		demo_dur_reaped(d, p, status);
	return d->daemon_exited;
}

static void dur_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int demo_dur_daemon_stop(struct demo_dur *d)
{
	int64_t deadline;
	int status;

	if (d->daemon_pid <= 0)
		return TOOL_FAIL;
	if (!d->daemon_exited) {
		fprintf(stderr, "demo: stopping the daemon (drain, sync, hand MySQL the rest) ...\n");
		kill(d->daemon_pid, SIGTERM);
		deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
		while (!d->daemon_exited) {
			pid_t p = waitpid(d->daemon_pid, &status, WNOHANG);
			if (p == d->daemon_pid) {
				demo_dur_reaped(d, p, status);
				break;
			}
			if (p < 0 && errno != EINTR)
				break;
			if (tool_monotonic_ns() > deadline) {
				tool_failf("demo: the daemon did not stop within 60 s; killing it");
				kill(d->daemon_pid, SIGKILL);
				deadline = INT64_MAX;
			}
			dur_sleep_ms(10);
		}
	}
	if (!d->daemon_exited)
		return tool_failf("demo: lost the daemon (pid %d)", (int)d->daemon_pid);
	if (!WIFEXITED(d->daemon_status) || WEXITSTATUS(d->daemon_status) != 0) {
		if (WIFSIGNALED(d->daemon_status))
			return tool_failf("demo: the daemon was killed by signal %d",
			                  WTERMSIG(d->daemon_status));
		return tool_failf("demo: the daemon failed (exit %d; %s)",
		                  WEXITSTATUS(d->daemon_status), flash_rcname(d->st->rc));
	}
	return TOOL_OK;
}

const struct serve_stats *demo_dur_stats(const struct demo_dur *d)
{
	return d->st;
}

/* ---- reading back ------------------------------------------------------ */

struct dur_read {
	struct demo_dur   *d;
	struct demo_rings *rings;
	uint64_t           bad;
};

static int dur_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct dur_read *c = arg;
	const struct wal_rec *wr = payload;

	(void)lsn;
	if (type != WAL_T_RECORD || len < sizeof *wr) {
		c->bad++;
		return 0;
	}
	c->d->wal_records++;
	if (wr->wr_rec.type == FLASH_REC_ORDER)
		c->d->orders_in_wal++;
	else if (wr->wr_rec.type == FLASH_REC_CANCEL)
		c->d->cancels_in_wal++;
	demo_rings_record(c->rings, &wr->wr_rec, wr->wr_seq);
	return 0;
}

int demo_dur_wal_read(struct demo_dur *d, struct demo_rings *rings)
{
	struct wal_replay_report rep;
	struct dur_read c = { d, rings, 0 };
	int rc;

	d->wal_records = d->orders_in_wal = d->cancels_in_wal = 0;
	rc = wal_replay(d->wal_dir, 0, dur_frame, &c, 0, &rep);
	d->wal_stop = rc;
	if (rc != FLASH_OK)
		return tool_failf("demo: read the WAL back: %s at %s offset %llu", flash_strerror(rc),
		                  rep.file, (unsigned long long)rep.offset);
	if (c.bad)
		return tool_failf("demo: the WAL holds %llu frames that are not records",
		                  (unsigned long long)c.bad);
	return TOOL_OK;
}

int demo_dur_mysql(struct demo_dur *d)
{
	struct mdb_opts mo;
	struct apply_result tot;
	struct rsql_totals t;
	int rc;

	memset(&mo, 0, sizeof mo);
	mo.defaults_file = d->defaults_file;
	mo.log_level = PLOG_WARN;
	fprintf(stderr, "demo: catching MySQL up with the WAL ...\n");
	rc = mdb_open(&mo, &d->m);
	if (rc != FLASH_OK)
		return tool_failf("demo: connect to the private MariaDB: %s", flash_strerror(rc));
	memset(&tot, 0, sizeof tot);
	rc = mdb_catch_up(d->m, d->wal_dir, 0, 30000, &tot);
	if (rc != FLASH_OK)
		return tool_failf("demo: catch MySQL up: %s", flash_strerror(rc));
	rc = rsql_totals_get(d->m, &t);
	if (rc != FLASH_OK)
		return tool_failf("demo: count MySQL's orders: %s", flash_strerror(rc));
	d->orders_in_mysql = t.orders;
	d->mysql_conflicts = t.conflicts;
	d->mysql_applied_lsn = t.applied_lsn;
	d->mysql_late = tot.applied;
	return TOOL_OK;
}

int demo_dur_reconcile(struct demo_dur *d, flash_t *h)
{
	struct reconcile_report rep;
	fold_t *f = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	fprintf(stderr, "demo: reconciling segment, WAL%s ...\n", d->m ? " and MySQL" : "");
	if ((rc = fold_new(&f)) != FLASH_OK)
		return tool_fail("demo: reconcile", rc);
	if ((rc = fold_wal(f, d->wal_dir)) != FLASH_OK) {
		fold_free(f);
		return tool_failf("demo: reconcile: fold the WAL: %s", flash_strerror(rc));
	}
	memset(&rep, 0, sizeof rep);
	rc = reconcile_compare(h, d->m, f, d->m ? RECONCILE_ORDERS : 0, &rep);
	fold_free(f);
	if (rc != FLASH_OK)
		return tool_failf("demo: reconcile: %s", flash_strerror(rc));
	d->reconcile_diffs = rep.found;
	d->reconcile_skus = rep.skus;
	d->reconcile_orders = rep.orders_checked;
	d->reconcile_witnesses = rep.witnesses;
	mem = open_memstream(&d->reconcile_text, &len);
	if (mem) {
		reconcile_print(&rep, mem, 0);
		fclose(mem);
	}
	reconcile_report_free(&rep);
	return TOOL_OK;
}
