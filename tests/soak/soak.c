/*
 * soak.c -- `flashstock_soak`: months of daily sales on a shifted clock, in
 * fixed memory, checked from the records at the end (issue 13's proof).
 *
 * A test tool, built with the tests (tests/soak/soak_tests.cmake) and never
 * installed: the laboratory lives with the tests, not in the `flashstock`
 * command.  It drives the product from outside: the daemon is the real
 * `flashstock serve` of the command it was built with (--flashstock PATH:
 * another one, e.g. an installed one).
 *
 * Divisions:
 *   1. Options
 *   2. The outer process: private directory, MariaDB, the inner process on
 *      the shifted clock, the plot, clean-up
 *   3. The shifted clock (libfaketime, one offset file for every process)
 *   4. The inner process: segment, daemon (`flashstock serve`), catalog
 *   5. One day: buyers, kills, a daemon restart, retries, the clock moves on
 *   6. The report
 *   7. main(): the outer process or the inner one
 *
 * Two processes, so that clean-up never depends on the shifted one: the
 * outer one (real clock) makes the private directory and starts MariaDB
 * (not shifted: the database keeps real time), then runs itself again with
 * libfaketime loaded (LD_PRELOAD) and waits for it.  The inner one runs
 * every simulated day; the daemon and the buyers inherit its clock.  After
 * it the outer one stops MariaDB, removes the segment name if the inner one
 * left it, draws the plot, and removes the directory.
 *
 * Why libfaketime and not a shim of our own: with FAKETIME_TIMESTAMP_FILE
 * and FAKETIME_NO_CACHE=1 it reads the offset on every clock call, so one
 * rename of the file moves the clock of every running process at once (the
 * daemon sees the new day within its next call); FAKETIME_DONT_FAKE_MONOTONIC
 * keeps CLOCK_MONOTONIC real (the daemon's periodic threads wait on it).
 * NO_FAKE_STAT=1 leaves file times alone: libfaketime 0.9.10 fakes them
 * under a semaphore every process of the run shares (FAKETIME_SHARED), so a
 * process killed with kill -9 inside a stat() kept it taken, and the next
 * process to start (the restarted daemon) waited for it forever in
 * libfaketime's start-up; nothing here reads a file's times.  The soak proves
 * that the clock took effect: its own clock after each move, and the
 * daemon's log lines' times on the first days and after each restart.
 */
#include "tool.h"
#include "soak.h"
#include "soak_reclaim.h"
#include "fixture_run.h"
#include "wal.h"
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef FLASH_MULTIARCH
#define FLASH_MULTIARCH "x86_64-linux-gnu"
#endif

/* Where libfaketime is looked for at run time (Debian's package faketime
 * first), unless FLASH_FAKETIME_LIB names it: the soak builds without it. */
static const char *const soak_faketime_paths[] = {
	"/usr/lib/" FLASH_MULTIARCH "/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/lib64/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
};

#define SOAK_ENV_INNER "FLASH_SOAK_INNER"   /* set in the inner process: the private dir */
#define SOAK_ENV_URL   "FLASH_SOAK_MYSQL_URL"
#define SOAK_ENV_SEG   "FLASH_SOAK_SEGMENT"

/* ------------------------------------------------------------------------
 * 1. Options
 * ------------------------------------------------------------------------ */

struct soak_opts {
	struct soak_cfg cfg;
	const char     *out_dir;     /* --out */
	const char     *plot;        /* --plot FILE */
	const char     *fixture;     /* --mysql-fixture */
	const char     *flashstock;  /* --flashstock: the command whose `serve` is the daemon */
};

static void soak_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock_soak --days N [--seed S] [--out DIR] [--plot FILE]\n"
	        "                       [--buyers B] [--orders-per-day K] [--users U]\n"
	        "                       [--restart-every D] [--kill-pct P] [--durability sync|async]\n"
	        "                       [--mysql-fixture PATH] [--flashstock PATH] [--inject F,...]\n"
	        "\n"
	        "Simulate N days of daily flash sales on one segment, on a clock moved forward\n"
	        "a day at a time, and prove from the records that nothing went wrong and that\n"
	        "memory stayed fixed.  Everything is private: a MariaDB (tests/fixtures/\n"
	        "mariadb.sh, unix socket only), a segment, `flashstock serve --mysql` writing\n"
	        "a WAL, all in a temporary directory removed at the end.\n"
	        "\n"
	        "The clock: every process of the run (the soak, its buyers, the daemon) loads\n"
	        "libfaketime (Debian package faketime); day d is 08:00 UTC of the day after\n"
	        "today plus d days.  MariaDB keeps real time.\n"
	        "\n"
	        "Each day: three new activities (a per-day limit of 2 running %d days, a\n"
	        "once-per-user one ending that evening whose cancels return the quota, a\n"
	        "token-required per-sku one ending that evening), %u skus each (sku 1 in %u\n"
	        "shards); B buyer processes make K order attempts for users 1..U with\n"
	        "tokens and request ids, retry some at once (the first outcome must come\n"
	        "back), cancel some (under leased locks: fences must grow), offer used\n"
	        "tokens again (refused), order yesterday's ended activity (FLASH_EENDED);\n"
	        "P%% of them are killed with SIGKILL mid-day, and every D days the daemon\n"
	        "is killed with SIGKILL and started again while they buy.  Then the soak\n"
	        "retries requests of other processes and of the days before, moves the\n"
	        "clock to the next day, waits for the daemon's end-of-day work, and prints\n"
	        "one line: day, orders acknowledged, and the fill (used/capacity) of the\n"
	        "users, requests, orders, activities, skus, shards and tokens tables.\n"
	        "\n"
	        "At the end, from the WAL read back, MariaDB and the buyers' files: nothing\n"
	        "oversold (WAL, every prefix); nothing leaked (available + sold = total per\n"
	        "sku in the segment, the WAL and MariaDB); no user over the limit within a\n"
	        "day or an activity (WAL and MariaDB); every acknowledged order once in the\n"
	        "WAL and once in MariaDB; every retry answered with the first outcome;\n"
	        "memory flat (segment size fixed, fill at the end within the bound);\n"
	        "the reconciler finds no difference.  Each check is printed with its figures.\n"
	        "\n"
	        "  --days N            simulated days, 1..3650 (required)\n"
	        "  --seed S            the buyers' choices (default 1)\n"
	        "  --out DIR           write DIR/soak-fill.dat, one line a day (default .)\n"
	        "  --plot FILE         draw the fill over the days into FILE (PNG, gnuplot)\n"
	        "  --buyers B          buyer processes a day, 1..%u (default 4)\n"
	        "  --orders-per-day K  order attempts a day, 10..1000000 (default 4000)\n"
	        "  --users U           user ids 1..U (default 5000)\n"
	        "  --restart-every D   kill -9 and restart the daemon every D days (default 3;\n"
	        "                      0: never)\n"
	        "  --kill-pct P        %% of buyer processes killed each day (default 25)\n"
	        "  --durability M      async (default): acknowledged at once, the WAL trails;\n"
	        "                      sync: every order and cancel returns after the fdatasync\n"
	        "                      that covers it (FLASH_EFATE_UNKNOWN past the wait bound,\n"
	        "                      while the daemon restarts: placed, checked like any other)\n"
	        "  --mysql-fixture PATH  the MariaDB fixture (default: %s)\n"
	        "  --flashstock PATH   the `flashstock` command whose `serve` is the daemon\n"
	        "                      (default: %s)\n"
	        "  --inject F[,F..]    plant faults to prove the checks catch them (the soak's\n"
	        "                      own test; the run then exits 1): lost-ack (an\n"
	        "                      acknowledged order the WAL never saw), mysql-stock (a\n"
	        "                      unit appears in MariaDB), retry (a retry expected to\n"
	        "                      answer another order than it did), wal-order (a forged\n"
	        "                      ORDER record in the WAL: more units than its sku has, for a\n"
	        "                      user holding the limit), full (a table answered\n"
	        "                      FLASH_EFULL once)\n"
	        "\n"
	        "Speed: about 3 s a simulated day with the defaults on 2 cores (30 days in\n"
	        "under 2 minutes; 365 days in under 20).\n"
	        "exit: 0 every check held; 1 a check failed or the run failed; 2 usage error\n",
	        SOAK_DAY_ACT_DAYS, SOAK_SKUS_PER_ACT, SOAK_HOT_SHARDS, SOAK_PROCS_MAX,
	        FLASH_SOAK_FIXTURE, FLASH_SOAK_FLASHSTOCK);
}

/* @return -1 to go on, or an exit code. */
static int soak_parse(int argc, char **argv, struct soak_opts *so)
{
	enum { O_DAYS = 256, O_SEED, O_OUT, O_PLOT, O_BUYERS, O_OPD, O_USERS, O_RESTART, O_KILL,
	       O_FIXTURE, O_INJECT, O_DURABILITY, O_FLASHSTOCK };
	static const struct option longopts[] = {
		{ "help",           no_argument,       NULL, 'h' },
		{ "days",           required_argument, NULL, O_DAYS },
		{ "seed",           required_argument, NULL, O_SEED },
		{ "out",            required_argument, NULL, O_OUT },
		{ "plot",           required_argument, NULL, O_PLOT },
		{ "buyers",         required_argument, NULL, O_BUYERS },
		{ "orders-per-day", required_argument, NULL, O_OPD },
		{ "users",          required_argument, NULL, O_USERS },
		{ "restart-every",  required_argument, NULL, O_RESTART },
		{ "kill-pct",       required_argument, NULL, O_KILL },
		{ "mysql-fixture",  required_argument, NULL, O_FIXTURE },
		{ "inject",         required_argument, NULL, O_INJECT },
		{ "durability",     required_argument, NULL, O_DURABILITY },
		{ "flashstock",     required_argument, NULL, O_FLASHSTOCK },
		{ NULL, 0, NULL, 0 }
	};
	struct soak_cfg *c = &so->cfg;
	const char *cmd = NULL;          /* a program of its own: no command name */
	int ch, bad = 0;

	memset(so, 0, sizeof *so);
	c->seed = 1;
	c->procs = 4;
	c->orders_per_day = 4000;
	c->users = 5000;
	c->restart_every = 3;
	c->kill_pct = 25;
	so->out_dir = ".";
	so->fixture = FLASH_SOAK_FIXTURE;
	so->flashstock = FLASH_SOAK_FLASHSTOCK;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			soak_help(stdout);
			return TOOL_OK;
		case O_DAYS:
			bad = tool_opt_u32(cmd, "--days", optarg, 1, 3650, &c->days);
			break;
		case O_SEED:
			bad = tool_opt_u64(cmd, "--seed", optarg, 0, UINT64_MAX, &c->seed);
			break;
		case O_OUT:
			so->out_dir = optarg;
			break;
		case O_PLOT:
			so->plot = optarg;
			break;
		case O_BUYERS:
			bad = tool_opt_u32(cmd, "--buyers", optarg, 1, SOAK_PROCS_MAX, &c->procs);
			break;
		case O_OPD:
			bad = tool_opt_u32(cmd, "--orders-per-day", optarg, 10, 1000000, &c->orders_per_day);
			break;
		case O_USERS:
			bad = tool_opt_u32(cmd, "--users", optarg, 1, 100000000, &c->users);
			break;
		case O_RESTART:
			bad = tool_opt_u32(cmd, "--restart-every", optarg, 0, 3650, &c->restart_every);
			break;
		case O_KILL:
			bad = tool_opt_u32(cmd, "--kill-pct", optarg, 0, 100, &c->kill_pct);
			break;
		case O_FIXTURE:
			so->fixture = optarg;
			break;
		case O_FLASHSTOCK:
			so->flashstock = optarg;
			break;
		case O_DURABILITY:
			if (strcmp(optarg, "sync") == 0)
				c->durability = FLASH_DURABILITY_SYNC;
			else if (strcmp(optarg, "async") == 0)
				c->durability = FLASH_DURABILITY_ASYNC;
			else
				return tool_usage_err(cmd, "--durability: '%s' is not sync or async", optarg);
			break;
		case O_INJECT: {
			char buf[256], *save = NULL, *t;
			snprintf(buf, sizeof buf, "%s", optarg);
			for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (strcmp(t, "lost-ack") == 0)
					c->inject |= SOAK_INJECT_LOST_ACK;
				else if (strcmp(t, "mysql-stock") == 0)
					c->inject |= SOAK_INJECT_MYSQL_STOCK;
				else if (strcmp(t, "retry") == 0)
					c->inject |= SOAK_INJECT_RETRY;
				else if (strcmp(t, "wal-order") == 0)
					c->inject |= SOAK_INJECT_WAL_ORDER;
				else if (strcmp(t, "full") == 0)
					c->inject |= SOAK_INJECT_FULL;
				else
					return tool_usage_err(cmd, "--inject: '%s' is not lost-ack, mysql-stock, "
					                      "retry, wal-order or full", t);
			}
			break;
		}
		default:
			return tool_bad_option(cmd, ch, argv);
		}
		if (bad)
			return TOOL_USAGE;
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (c->days == 0)
		return tool_usage_err(cmd, "--days is required");
	if (access(so->flashstock, X_OK) != 0)
		return tool_usage_err(cmd, "--flashstock %s: %s", so->flashstock, strerror(errno));
	return -1;
}

static volatile sig_atomic_t soak_signal;

static void soak_on_signal(int sig)
{
	soak_signal = sig;
}

static void soak_signals(void)
{
	tool_stop_signals(soak_on_signal, 1);
}

static void soak_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------
 * 2. The outer process
 * ------------------------------------------------------------------------ */

static int soak_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		fprintf(stderr, "flashstock_soak: remove %s: %s\n", path, strerror(errno));
	return 0;
}

/* The plot: fill in % of capacity per table over the days (bench/plot.gp's style). */
static int soak_plot(const char *data, const char *png, const struct soak_cfg *c)
{
	uint32_t held = soak_days_held(c->days);
	char script[8192];
	FILE *g;
	pid_t pid;
	int fd[2], status;

	snprintf(script, sizeof script,
	         "set terminal pngcairo size 1400,700 enhanced font \",11\"\n"
	         "set encoding utf8\n"
	         "array colours[7] = [\"#2ca02c\", \"#1f77b4\", \"#d9730d\", \"#7f7f7f\", \"#c0282d\", "
	         "\"#9467bd\", \"#8c564b\"]\n"
	         "do for [i=1:7] { set linetype i lc rgb colours[i] lw 2 }\n"
	         "set output '%s'\n"
	         "set title \"flashstock_soak: table fill over the simulated days (used / capacity)\\n"
	         "segment of fixed size, sized for %u of the %u days%s\"\n"
	         "set xlabel \"simulated day\"\n"
	         "set ylabel \"fill, %% of capacity\"\n"
	         "set yrange [0:105]\n"
	         "set grid ytics\n"
	         "set key outside right top vertical Left reverse title \"table\"\n"
	         "set rmargin 22\n"
	         "f = '%s'\n"
	         "plot f using 1:(100.0*$3/$4) with lines title 'users', \\\n"
	         "     f using 1:(100.0*$5/$6) with lines title 'requests', \\\n"
	         "     f using 1:(100.0*$7/$8) with lines title 'orders', \\\n"
	         "     f using 1:(100.0*$9/$10) with lines title 'activities', \\\n"
	         "     f using 1:(100.0*$11/$12) with lines title 'skus', \\\n"
	         "     f using 1:(100.0*$13/$14) with lines title 'shards', \\\n"
	         "     f using 1:(100.0*$15/$16) with lines title 'tokens'\n",
	         png, held, c->days,
	         held >= c->days ? " (no reclamation in this build: every day is kept)"
	                         : "; flat lines: memory that does not grow", data);
	if (pipe(fd) != 0)
		return tool_failf("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return tool_failf("fork gnuplot: %s", strerror(errno));
	if (pid == 0) {
		dup2(fd[0], STDIN_FILENO);
		close(fd[0]);
		close(fd[1]);
		execlp("gnuplot", "gnuplot", (char *)NULL);
		_exit(127);
	}
	close(fd[0]);
	g = fdopen(fd[1], "w");
	if (g) {
		fputs(script, g);
		fclose(g);
	} else {
		close(fd[1]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return tool_failf("gnuplot: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return tool_failf("gnuplot failed (status %d)", status);
	fprintf(stderr, "soak: plot written to %s\n", png);
	return TOOL_OK;
}

/* Run the inner process (this program again, on the shifted clock). */
static int soak_run_inner(char **argv, const char *lib, const char *dir, const char *url,
                          const char *seg)
{
	char clock[4096], preload[8192];
	const char *old = getenv("LD_PRELOAD");
	pid_t pid, outer;
	int status, fd;

	snprintf(clock, sizeof clock, "%s/clock", dir);
	fd = open(clock, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "+0\n", 3) != 3) {
		if (fd >= 0)
			close(fd);
		return tool_failf("write %s: %s", clock, strerror(errno));
	}
	close(fd);
	snprintf(preload, sizeof preload, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");

	fflush(NULL);
	outer = getpid();
	pid = fork();
	if (pid < 0)
		return tool_failf("fork: %s", strerror(errno));
	if (pid == 0) {
		/* the outer process gone (killed): stop, clean up what is ours */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != outer)
			_exit(TOOL_FAIL);
		setenv("LD_PRELOAD", preload, 1);
		setenv("FAKETIME_TIMESTAMP_FILE", clock, 1);
		setenv("FAKETIME_NO_CACHE", "1", 1);
		setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
		setenv("NO_FAKE_STAT", "1", 1);      /* no shared lock a kill -9 can keep (above) */
		setenv(SOAK_ENV_INNER, dir, 1);
		setenv(SOAK_ENV_URL, url, 1);
		setenv(SOAK_ENV_SEG, seg, 1);
		execv("/proc/self/exe", argv);
		fprintf(stderr, "flashstock_soak: exec /proc/self/exe: %s\n", strerror(errno));
		_exit(TOOL_FAIL);
	}
	for (;;) {
		pid_t p = waitpid(pid, &status, 0);
		if (p == pid)
			break;
		if (p < 0 && errno != EINTR)
			return tool_failf("lost the inner process: %s", strerror(errno));
		if (soak_signal)
			kill(pid, SIGTERM);   /* it stops at its next check and cleans up */
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return tool_failf("the inner process died of signal %d", WTERMSIG(status));
}

/* A removal snap_shadows_remove() reports, said on stderr. */
static void soak_shadow_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	fprintf(stderr, "soak: %s\n", msg);
}

static int soak_outer(char **argv, const struct soak_opts *so)
{
	const char *tmp = getenv("TMPDIR"), *lib = getenv("FLASH_FAKETIME_LIB");
	char dir[256], db_dir[320], fixture[4096], env[4096], url[1024], seg[96], data[4096];
	int rc, db_started = 0;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (snprintf(dir, sizeof dir, "%s/flashstock-soak.XXXXXX", tmp) >= (int)sizeof dir)
		return tool_failf("TMPDIR is too long: %s", tmp);
	if (mkdtemp(dir) == NULL)
		return tool_failf("make a private directory in %s: %s", tmp, strerror(errno));
	snprintf(db_dir, sizeof db_dir, "%s/mariadb", dir);
	snprintf(seg, sizeof seg, "/flashstock-soak-%d-%04x", (int)getpid(),
	         (unsigned)(soak_mix((uint64_t)tool_monotonic_ns()) & 0xffffu));
	soak_signals();

	rc = TOOL_FAIL;
	for (size_t i = 0; (!lib || !*lib) && i < sizeof soak_faketime_paths / sizeof soak_faketime_paths[0]; i++)
		if (access(soak_faketime_paths[i], R_OK) == 0)
			lib = soak_faketime_paths[i];
	if (!lib || !*lib) {
		tool_failf("libfaketime not found in %s or the usual places (apt-get install "
		           "faketime; or set FLASH_FAKETIME_LIB)", soak_faketime_paths[0]);
		goto out;
	}
	if (access(lib, R_OK) != 0) {
		tool_failf("FLASH_FAKETIME_LIB=%s: %s", lib, strerror(errno));
		goto out;
	}
	if (access(so->fixture, R_OK) != 0 || realpath(so->fixture, fixture) == NULL) {
		tool_failf("--mysql-fixture %s: %s", so->fixture, strerror(errno));
		goto out;
	}
	fprintf(stderr, "soak: starting a private MariaDB in %s (no TCP port) ...\n", db_dir);
	db_started = 1;
	if (fixture_run(fixture, "start", db_dir, env, sizeof env) != 0) {
		tool_failf("%s start failed", fixture);
		goto out;
	}
	if (fixture_export(env, "FLASH_MYSQL_URL", url, sizeof url) != 0) {
		tool_failf("%s start printed no FLASH_MYSQL_URL", fixture);
		goto out;
	}
	if (soak_signal)
		goto out;
	rc = soak_run_inner(argv, lib, dir, url, seg);
	if (so->plot) {
		snprintf(data, sizeof data, "%s/soak-fill.dat", so->out_dir);
		if (access(data, R_OK) == 0 && soak_plot(data, so->plot, &so->cfg) != TOOL_OK)
			rc = TOOL_FAIL;
	}
out:
	/* the inner process removes its segment; after a crash of it, we do,
	 * and the snapshot shadows of a daemon killed last ("<seg>.shadow.<pid>",
	 * which the next daemon would have removed) */
	if (flash_seg_destroy(seg) == FLASH_OK)
		fprintf(stderr, "soak: removed segment %s left behind\n", seg);
	(void)snap_shadows_remove(seg, NULL, 0, soak_shadow_log, NULL);
	if (db_started) {
		char marker[400];
		snprintf(marker, sizeof marker, "%s/.flash-mariadb", db_dir);
		if (access(marker, F_OK) == 0) {
			fprintf(stderr, "soak: stopping MariaDB ...\n");
			if (fixture_run(fixture, "stop", db_dir, NULL, 0) != 0)
				tool_failf("%s stop %s failed", fixture, db_dir);
		}
	}
	nftw(dir, soak_rm, 16, FTW_DEPTH | FTW_PHYS);
	if (soak_signal)
		return tool_failf("interrupted by signal %d", (int)soak_signal);
	return rc;
}

/* ------------------------------------------------------------------------
 * 3. The shifted clock
 * ------------------------------------------------------------------------ */

struct soak_run;

struct soak_clock {
	char    path[4096], tmp[4096];
	int64_t offset_s;          /* what the file says now */
};

/* Move the clock of every process of the run so that now is @p target_ns:
 * the new offset goes to a temporary file renamed over the clock file
 * (readers see the old or the new offset, never a torn one).  Then check it
 * took effect here.  @return 0 or -1 (said why). */
static int soak_clock_set(struct soak_clock *c, int64_t target_ns)
{
	int64_t real_ns = tool_realtime_ns() - c->offset_s * 1000000000LL;
	int64_t off = (target_ns - real_ns) / 1000000000LL, now;
	char buf[64];
	int fd, n;

	n = snprintf(buf, sizeof buf, "%+lld\n", (long long)off);
	fd = open(c->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) != 0 || rename(c->tmp, c->path) != 0) {
		tool_failf("write the clock file %s: %s", c->path, strerror(errno));
		return -1;
	}
	c->offset_s = off;
	now = tool_realtime_ns();
	if (now < target_ns - 2000000000LL || now > target_ns + 2000000000LL) {
		tool_failf("the clock did not move (libfaketime not loaded?): now %lld s, wanted "
		           "%lld s", (long long)(now / 1000000000LL), (long long)(target_ns / 1000000000LL));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * 4. The inner process: segment, daemon, catalog
 * ------------------------------------------------------------------------ */

struct soak_run {
	struct soak_opts     so;
	struct soak_cfg     *cfg;
	char                 wal_dir[4200], log_path[4200], data_path[4200];
	const char          *url;
	struct soak_clock    clock;
	struct flash_seg_opts opts;
	struct soak_fill     bound, fill;
	int                  created;
	flash_t             *h;
	pid_t                daemon;
	uint32_t             daemon_starts, daemon_kills;
	uint32_t             clock_checks, clock_bad;
	char                 clock_problem[200];
	struct soak_shared  *sh;
	struct soak_log      log;
	FILE                *data;
	uint64_t             seg_bytes0;
	uint32_t             seg_bytes_changed;
	uint32_t             days_over_bound;   /* days whose fill exceeded that day's bound */
	char                 over_bound[160];
	uint64_t             acked_total;
	/* summed over the days */
	uint64_t calls, acked, sold_out, limit, ended_ok, retries, retry_ok, retry_bad;
	uint64_t cancels, cancel_twice_ok;
	uint64_t token_reuse, token_reuse_ok, locks, locked, lock_lapsed, busy, fate_unknown, unexpected;
	uint64_t full;                          /* FLASH_EFULL answers (buyers and retries) */
	uint32_t buyers_forked, buyers_killed, proc_failures;
	char     first_bad[240];
	uint32_t recovered;
};

static void soak_log_tail(const struct soak_run *r);

static int soak_daemon_start(struct soak_run *r)
{
	const char *const *extra = soak_serve_args();
	const char *args[40];
	int64_t deadline;
	pid_t pid, parent;
	size_t n = 0;
	int fd;

	args[n++] = "flashstock";
	args[n++] = "serve";
	args[n++] = "--name";
	args[n++] = r->cfg->name;
	args[n++] = "--wal";
	args[n++] = r->wal_dir;
	args[n++] = "--mysql";
	args[n++] = r->url;
	args[n++] = "--keep-wal";        /* the checks read the whole history */
	args[n++] = "--stats-s";
	args[n++] = "1";                 /* a log line a second: its time is the daemon's clock */
	args[n++] = "--recover-ms";
	args[n++] = "200";
	args[n++] = "--wal-file-mb";
	args[n++] = "16";
	args[n++] = "--reconcile-every";
	args[n++] = "0";                 /* the soak reconciles at the end */
	while (*extra && n < sizeof args / sizeof args[0] - 1)
		args[n++] = *extra++;
	args[n] = NULL;

	fflush(NULL);
	parent = getpid();
	pid = fork();
	if (pid < 0)
		return tool_failf("fork the daemon: %s", strerror(errno));
	if (pid == 0) {
		fd = open(r->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);              /* the soak died before the line above */
		signal(SIGINT, SIG_IGN);     /* Ctrl-C is the soak's: it stops the daemon itself */
		execv(r->so.flashstock, (char *const *)args);
		_exit(127);
	}
	r->daemon = pid;
	r->daemon_starts++;
	/* up when it holds the consumer claim */
	deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
	for (;;) {
		struct flash_ident id;
		int status;
		if (flash_ident_get(r->h, &id) == FLASH_OK && id.consumer_pid == pid)
			return TOOL_OK;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			r->daemon = 0;
			return tool_failf("the daemon exited at start (status %d; log %s)", status,
			                  r->log_path);
		}
		if (tool_monotonic_ns() > deadline || soak_signal) {
			/* it runs but holds no claim: say who does, and what it
			 * logged (a planted run prints no log tail otherwise) */
			int32_t holder = flash_ident_get(r->h, &id) == FLASH_OK ? id.consumer_pid : -1;
			soak_log_tail(r);
			return tool_failf("the daemon (pid %d) did not claim the segment within 60 s"
			                  " (the claim is held by pid %d; log %s)", (int)pid, (int)holder,
			                  r->log_path);
		}
		soak_sleep_ms(5);
	}
}

/* SIGKILL the daemon (a crash) and reap it. */
static void soak_daemon_kill(struct soak_run *r)
{
	int status;

	if (r->daemon <= 0)
		return;
	kill(r->daemon, SIGKILL);
	while (waitpid(r->daemon, &status, 0) < 0 && errno == EINTR)
		;
	r->daemon = 0;
	r->daemon_kills++;
}

/* SIGTERM: drain, sync, hand MariaDB what it can, exit 0. */
static int soak_daemon_stop(struct soak_run *r)
{
	int64_t deadline = tool_monotonic_ns() + 120LL * 1000000000LL;
	int status;

	if (r->daemon <= 0)
		return TOOL_FAIL;
	kill(r->daemon, SIGTERM);
	for (;;) {
		pid_t p = waitpid(r->daemon, &status, WNOHANG);
		if (p == r->daemon)
			break;
		if (tool_monotonic_ns() > deadline) {
			soak_daemon_kill(r);
			return tool_failf("the daemon did not stop within 120 s");
		}
		soak_sleep_ms(10);
	}
	r->daemon = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return tool_failf("the daemon failed at its stop (status %d; log %s)", status,
		                  r->log_path);
	return TOOL_OK;
}

/* The time of the daemon's newest log line ("YYYY-MM-DDTHH:MM:SS.mmmZ ...");
 * 0 if none. */
static int64_t soak_daemon_log_time(const struct soak_run *r)
{
	char buf[8192], *p, *line;
	struct tm tm;
	ssize_t n;
	off_t size;
	int fd = open(r->log_path, O_RDONLY);
	int64_t t = 0;

	if (fd < 0)
		return 0;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)sizeof buf - 1)
		lseek(fd, size - (off_t)sizeof buf + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the newest line that starts with a time */
	for (line = buf; (p = strchr(line, '\n')) != NULL; line = p + 1) {
		memset(&tm, 0, sizeof tm);
		char *e = strptime(line, "%Y-%m-%dT%H:%M:%S", &tm);
		if (e && e <= p)
			t = (int64_t)timegm(&tm) * 1000000000LL;
	}
	return t;
}

/* The daemon's clock is the soak's: a log line of it within [@p from_ns, now],
 * waited for at most 20 s (it logs every second; a loaded machine may delay it). */
static void soak_check_daemon_clock(struct soak_run *r, uint32_t day, int64_t from_ns)
{
	int64_t deadline = tool_monotonic_ns() + 20000000000LL, t = 0;

	r->clock_checks++;
	while (tool_monotonic_ns() < deadline) {
		t = soak_daemon_log_time(r);
		if (t >= from_ns - 1000000000LL && t <= tool_realtime_ns() + 1000000000LL)
			return;
		soak_sleep_ms(50);
	}
	if (r->clock_bad++ == 0)
		snprintf(r->clock_problem, sizeof r->clock_problem,
		         "day %u: the daemon's newest log line is at %lld s, the soak's clock at %lld s "
		         "(from %lld s)", day, (long long)(t / 1000000000LL),
		         (long long)(tool_realtime_ns() / 1000000000LL), (long long)(from_ns / 1000000000LL));
}

/* Day @p day's activities and skus. */
static int soak_load_day(struct soak_run *r, uint32_t day)
{
	const struct soak_cfg *c = r->cfg;
	int64_t t0 = soak_day_ns(c, day), hour = 3600LL * 1000000000LL;
	/* stock: about half the attempts of a day find a unit (sold out after) */
	uint64_t units = c->orders_per_day / (2u * SOAK_ACTS_PER_DAY) + 1;
	uint32_t k, s;
	int rc;

	for (k = 0; k < SOAK_ACTS_PER_DAY; k++) {
		struct flash_activity a;
		memset(&a, 0, sizeof a);
		a.id = soak_act_id(day, k);
		a.max_qty = 2;
		a.start_ns = t0 - hour;
		switch (k) {
		case SOAK_KIND_DAY:
			a.limit_per_user = 2;
			a.scope = FLASH_SCOPE_DAY;
			a.end_ns = t0 + SOAK_DAY_ACT_DAYS * SOAK_DAY_S * 1000000000LL - hour;
			break;
		case SOAK_KIND_ONCE:
			a.limit_per_user = 1;
			a.scope = FLASH_SCOPE_ACTIVITY;
			a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA;
			a.end_ns = t0 + 12 * hour;
			break;
		default:
			a.limit_per_user = 1;
			a.scope = FLASH_SCOPE_SKU;
			a.flags = FLASH_ACT_TOKEN_REQUIRED;
			a.end_ns = t0 + 12 * hour;
			break;
		}
		if ((rc = flash_activity_add(r->h, &a)) != FLASH_OK)
			return tool_fail("add an activity", rc);
		for (s = 1; s <= SOAK_SKUS_PER_ACT; s++) {
			/* the multi-day one is stocked for its days */
			uint64_t u = (s == 1 ? units / 2 : units / 4 + 1) * (k == SOAK_KIND_DAY ? 2 : 1);
			rc = flash_sku_add(r->h, a.id, s, u, s == 1 ? SOAK_HOT_SHARDS : 1);
			if (rc != FLASH_OK)
				return tool_fail("add a sku", rc);
		}
	}
	return TOOL_OK;
}

static int soak_inner_setup(struct soak_run *r)
{
	struct soak_cfg *c = r->cfg;
	int rc;

	snprintf(r->wal_dir, sizeof r->wal_dir, "%s/wal", c->dir);
	snprintf(r->log_path, sizeof r->log_path, "%s/serve.log", c->dir);
	snprintf(r->data_path, sizeof r->data_path, "%s/soak-fill.dat", r->so.out_dir);
	snprintf(r->clock.path, sizeof r->clock.path, "%s/clock", c->dir);
	snprintf(r->clock.tmp, sizeof r->clock.tmp, "%s/clock.tmp", c->dir);
	r->clock.offset_s = 0;
	/* day 0: tomorrow (real), so the clock only ever moves forward */
	c->base_s = (tool_realtime_ns() / 1000000000LL / SOAK_DAY_S + 1) * SOAK_DAY_S;
	if (soak_clock_set(&r->clock, soak_day_ns(c, 0)) != 0)
		return TOOL_FAIL;

	if (mkdir(r->so.out_dir, 0755) != 0 && errno != EEXIST)
		return tool_failf("make --out %s: %s", r->so.out_dir, strerror(errno));
	r->data = fopen(r->data_path, "w");
	if (!r->data)
		return tool_failf("write %s: %s", r->data_path, strerror(errno));
	fprintf(r->data, "# flashstock_soak: fill per simulated day (used capacity per table)\n"
	        "# day acked users users_cap requests requests_cap orders orders_cap activities "
	        "activities_cap skus skus_cap shards shards_cap tokens tokens_cap segment_bytes\n");

	soak_size(c, &r->opts, &r->bound);
	if ((rc = flash_seg_create(c->name, &r->opts)) != FLASH_OK)
		return tool_fail("create the segment", rc);
	r->created = 1;
	if ((rc = flash_open(c->name, 0, &r->h)) != FLASH_OK)
		return tool_fail("open the segment", rc);
	if ((rc = soak_reclaim_setup(r->h)) != FLASH_OK)
		return tool_fail("switch reclamation on", rc);
	r->sh = mmap(NULL, sizeof *r->sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->sh == MAP_FAILED) {
		r->sh = NULL;
		return tool_failf("mmap: %s", strerror(errno));
	}
	if (soak_daemon_start(r) != TOOL_OK)
		return TOOL_FAIL;
	soak_check_daemon_clock(r, 0, soak_day_ns(c, 0));
	return TOOL_OK;
}

static void soak_inner_teardown(struct soak_run *r)
{
	if (r->daemon > 0)
		soak_daemon_kill(r);
	if (r->h)
		flash_close(r->h);
	r->h = NULL;
	if (r->created)
		flash_seg_destroy(r->cfg->name);
	r->created = 0;
	if (r->sh)
		munmap(r->sh, sizeof *r->sh);
	r->sh = NULL;
	if (r->data)
		fclose(r->data);
	r->data = NULL;
	soak_log_free(&r->log);
}

/* ------------------------------------------------------------------------
 * 5. One day
 * ------------------------------------------------------------------------ */

static void soak_note_bad(struct soak_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void soak_note_bad(struct soak_run *r, const char *fmt, ...)
{
	va_list ap;

	r->unexpected++;
	if (r->first_bad[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->first_bad, sizeof r->first_bad, fmt, ap);
	va_end(ap);
}

/* Order calls the day's buyers have made so far.  Relaxed loads: a progress
 * figure that decides when to kill a process; a moment stale is as good. */
static uint64_t soak_calls_now(const struct soak_run *r)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < r->cfg->procs; i++)
		n += __atomic_load_n(&r->sh->ss_proc[i].sp_calls, __ATOMIC_RELAXED);
	return n;
}

/* Fork the day's buyers, kill some, restart the daemon if it is its day,
 * reap them all.  @return TOOL_OK or TOOL_FAIL. */
static int soak_buy(struct soak_run *r, uint32_t day)
{
	const struct soak_cfg *c = r->cfg;
	pid_t pids[SOAK_PROCS_MAX];
	uint64_t kill_at[SOAK_PROCS_MAX];
	uint32_t i, alive = 0, share = c->orders_per_day / c->procs;
	int restart = c->restart_every && (day + 1) % c->restart_every == 0, restarted = 0;
	char path[4300];
	int64_t deadline;
	pid_t parent = getpid();

	memset(r->sh, 0, sizeof *r->sh);
	for (i = 0; i < c->procs; i++) {
		uint64_t rr = soak_mix(c->seed ^ ((uint64_t)day << 20) ^ (0xdead0000u + i));
		/* killed somewhere in the first 90 % of its attempts, or never */
		kill_at[i] = rr % 100 < c->kill_pct ? 1 + (rr >> 8) % (share * 9 / 10 + 1) : 0;
		snprintf(path, sizeof path, "%s/out-%u-%u", c->dir, day, i);
		fflush(NULL);
		pids[i] = fork();
		if (pids[i] < 0) {
			__atomic_store_n(&r->sh->ss_go, -1, __ATOMIC_RELEASE);
			return tool_failf("fork a buyer: %s", strerror(errno));
		}
		if (pids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			_exit(soak_buyer_run(c, r->sh, day, i, path));
		}
		alive++;
		r->buyers_forked++;
	}
	deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
	for (;;) {
		uint32_t ready = 0;
		for (i = 0; i < c->procs; i++)
			ready += __atomic_load_n(&r->sh->ss_proc[i].sp_ready, __ATOMIC_ACQUIRE) != 0;
		if (ready == c->procs)
			break;
		if (tool_monotonic_ns() > deadline || soak_signal) {
			__atomic_store_n(&r->sh->ss_go, -1, __ATOMIC_RELEASE);
			for (i = 0; i < c->procs; i++)
				kill(pids[i], SIGKILL);
			return tool_failf("buyers did not start");
		}
		soak_sleep_ms(1);
	}
	for (i = 0; i < c->procs; i++)
		if (r->sh->ss_proc[i].sp_open_rc != FLASH_OK)
			soak_note_bad(r, "day %u buyer %u: open: %s", day, i,
			              flash_rcname(r->sh->ss_proc[i].sp_open_rc));
	/* release: the buyers read their shared block after they see go */
	__atomic_store_n(&r->sh->ss_go, 1, __ATOMIC_RELEASE);

	while (alive > 0) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);
		if (p > 0) {
			for (i = 0; i < c->procs; i++) {
				if (pids[i] != p)
					continue;
				pids[i] = 0;
				alive--;
				if (kill_at[i] == UINT64_MAX)
					break;        /* we killed it */
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
					r->proc_failures++;
					soak_note_bad(r, "day %u buyer %u exited with status %d", day, i, status);
				}
			}
			if (p == r->daemon) {
				r->daemon = 0;
				return tool_failf("the daemon exited during day %u (status %d; log %s)",
				                  day, status, r->log_path);
			}
			continue;
		}
		if (soak_signal) {
			for (i = 0; i < c->procs; i++)
				if (pids[i] > 0)
					kill(pids[i], SIGKILL);
			return tool_failf("interrupted by signal %d", (int)soak_signal);
		}
		for (i = 0; i < c->procs; i++) {
			if (pids[i] > 0 && kill_at[i] && kill_at[i] != UINT64_MAX &&
			    __atomic_load_n(&r->sh->ss_proc[i].sp_calls, __ATOMIC_RELAXED) >= kill_at[i]) {
				kill(pids[i], SIGKILL);
				kill_at[i] = UINT64_MAX;
				r->buyers_killed++;
			}
		}
		if (restart && !restarted && soak_calls_now(r) >= c->orders_per_day / 2) {
			/* a crash of the daemon while they buy: their rings hold what it
			 * had not made durable; the next one drains it again */
			soak_daemon_kill(r);
			if (soak_daemon_start(r) != TOOL_OK) {
				for (i = 0; i < c->procs; i++)
					if (pids[i] > 0)
						kill(pids[i], SIGKILL);
				return TOOL_FAIL;
			}
			restarted = 1;
		}
		soak_sleep_ms(1);
	}
	if (restart && !restarted) {
		/* the buyers were quicker than the restart: crash it now */
		soak_daemon_kill(r);
		if (soak_daemon_start(r) != TOOL_OK)
			return TOOL_FAIL;
	}
	return TOOL_OK;
}

/* Read day @p day's outcome files into the log and sum the buyers' tallies. */
static int soak_collect(struct soak_run *r, uint32_t day, size_t *first_today)
{
	const struct soak_cfg *c = r->cfg;
	char path[4300];
	uint32_t i;

	*first_today = r->log.n;
	for (i = 0; i < c->procs; i++) {
		const struct soak_proc *p = &r->sh->ss_proc[i];
		struct soak_out o;
		FILE *f;

		snprintf(path, sizeof path, "%s/out-%u-%u", c->dir, day, i);
		f = fopen(path, "rb");
		if (f) {
			while (fread(&o, sizeof o, 1, f) == 1) {
				if (soak_log_add(&r->log, &o) != 0) {
					fclose(f);
					return tool_fail("the outcome log", FLASH_ENOMEM);
				}
				if (o.so_kind == SOAK_OUT_ORDER && o.so_rc == FLASH_OK)
					r->acked_total++;
			}
			fclose(f);
			unlink(path);
		}
		r->calls += p->sp_calls;
		r->acked += p->sp_acked;
		r->sold_out += p->sp_sold_out;
		r->limit += p->sp_limit;
		r->ended_ok += p->sp_ended_ok;
		r->retries += p->sp_retries;
		r->retry_ok += p->sp_retry_ok;
		r->retry_bad += p->sp_retry_bad;
		r->cancels += p->sp_cancels;
		r->cancel_twice_ok += p->sp_cancel_twice_ok;
		r->token_reuse += p->sp_token_reuse;
		r->token_reuse_ok += p->sp_token_reuse_ok;
		r->locks += p->sp_locks;
		r->locked += p->sp_locked;
		r->lock_lapsed += p->sp_lock_lapsed;
		r->busy += p->sp_busy;
		r->fate_unknown += p->sp_fate_unknown;
		r->full += p->sp_full;
		if (p->sp_unexpected) {
			uint64_t u = p->sp_unexpected;
			soak_note_bad(r, "day %u buyer %u: %s: got %s", day, i, p->sp_first_bad,
			              flash_rcname(p->sp_first_bad_rc));
			r->unexpected += u - 1;
		}
	}
	return TOOL_OK;
}

/* Send outcome @p o's request again from the parent's handle.  @p first:
 * judge the answer as a retry inside the window whatever the id's age
 * (--inject retry, planted after the clock moved past the window). */
static void soak_retry(struct soak_run *r, const struct soak_out *o, uint32_t today, int late,
                       int first)
{
	struct flash_order_req q;
	struct flash_order_res res;
	enum soak_retry_expect e;
	int64_t age_s = (int64_t)(today - o->so_day) * SOAK_DAY_S;
	int rc;

	memset(&q, 0, sizeof q);
	q.activity_id = o->so_activity;
	q.sku_id = o->so_sku;
	q.user_id = o->so_user;
	q.qty = o->so_qty;
	q.token = o->so_token;
	q.request_id = o->so_request_id;
	e = first ? SOAK_RETRY_FIRST : soak_retry_expect(o->so_request_id, age_s);
	rc = flash_order(r->h, &q, &res);
	if (rc == FLASH_EFULL)
		r->full++;
	if (late)
		r->log.late_retries++;
	else
		r->log.old_retries++;
	if (soak_retry_ok(e, rc, &res, o->so_rc, o->so_order_no)) {
		if (rc == FLASH_EREQ_EXPIRED)
			r->log.expired_ok++;
		if (late)
			r->log.late_retry_ok++;
		else
			r->log.old_retry_ok++;
		return;
	}
	r->log.late_retry_bad++;
	if (!r->log.first_bad[0])
		snprintf(r->log.first_bad, sizeof r->log.first_bad,
		         "day %u: retry of request %llx of day %u (first %s, order %llu): %s, first_rc "
		         "%s, order %llu", today, (unsigned long long)o->so_request_id, o->so_day,
		         flash_rcname(o->so_rc), (unsigned long long)o->so_order_no, flash_rcname(rc),
		         flash_rcname(res.first_rc), (unsigned long long)res.order_no);
}

/*
 * The parent's retries, after the buyers: one in 20 of today's requests
 * (another process than the one that made it, the killed buyers' included),
 * and some of the two days before -- of the per-day-limit activities, which
 * still run, so the request is judged by its id and not by an ended window.
 */
static void soak_retries(struct soak_run *r, uint32_t day, size_t first_today)
{
	size_t i, n = r->log.n;
	uint32_t old = 0;

	for (i = first_today; i < n; i++) {
		const struct soak_out *o = &r->log.so[i];
		if (o->so_kind == SOAK_OUT_ORDER && soak_mix(o->so_request_id ^ r->cfg->seed) % 20 == 0)
			soak_retry(r, o, day, 1, 0);
	}
	for (i = first_today; i-- > 0 && old < 50;) {
		const struct soak_out *o = &r->log.so[i];
		if (o->so_day + 2 < day)
			break;
		if (o->so_kind != SOAK_OUT_ORDER || o->so_day == day ||
		    (o->so_activity - 1000u) % 10u != SOAK_KIND_DAY ||
		    (o->so_activity - 1000u) / 10u + SOAK_DAY_ACT_DAYS <= day ||
		    soak_mix(o->so_request_id ^ ~r->cfg->seed) % 8 != 0)
			continue;
		soak_retry(r, o, day, 0, 0);
		old++;
	}
}

/*
 * The fill after day @p day against that day's bound: the traffic of the
 * days held so far, min(day + 1, soak_days_held()) days of it (r->bound is
 * all of them; tokens are not per day).  So memory is bounded every day,
 * not only at the end: today it grows by at most a day's traffic a day, and
 * once reclamation is on it stops growing after soak_days_held() days.
 */
static void soak_fill_check(struct soak_run *r, uint32_t day)
{
	uint64_t held = soak_days_held(r->cfg->days), d = day + 1 < held ? day + 1 : held;
	const struct soak_fill *f = &r->fill, *b = &r->bound;
	const char *t = NULL;
	uint64_t used = 0, bound = 0;

#define SOAK_OVER(field, per_day) do {                                          \
	uint64_t lim_ = (per_day) ? b->field / held * d : b->field;             \
	if (!t && f->field > lim_) { t = #field; used = f->field; bound = lim_; } \
} while (0)
	SOAK_OVER(users, 1);
	SOAK_OVER(requests, 1);
	SOAK_OVER(orders, 1);
	SOAK_OVER(activities, 1);
	SOAK_OVER(skus, 1);
	SOAK_OVER(shards, 1);
	SOAK_OVER(tokens, 0);
#undef SOAK_OVER
	if (t && r->days_over_bound++ == 0)
		snprintf(r->over_bound, sizeof r->over_bound, "day %u: %s %llu above its bound %llu",
		         day, t, (unsigned long long)used, (unsigned long long)bound);
}

/* Print and record the fill; check the segment's size stays. */
static int soak_fill_line(struct soak_run *r, uint32_t day, uint64_t acked_day, const char *note)
{
	struct soak_fill *f = &r->fill;
	int rc;

	if ((rc = soak_fill(r->h, f)) != FLASH_OK)
		return tool_fail("read the fill", rc);
	if (day == 0)
		r->seg_bytes0 = f->segment_bytes;
	else if (f->segment_bytes != r->seg_bytes0)
		r->seg_bytes_changed++;
	soak_fill_check(r, day);
	printf("day %4u  acked %6llu  users %llu/%llu  requests %llu/%llu  orders %llu/%llu  "
	       "activities %llu/%llu  skus %llu/%llu  shards %llu/%llu  tokens %llu/%llu%s%s\n",
	       day, (unsigned long long)acked_day, (unsigned long long)f->users,
	       (unsigned long long)f->users_cap, (unsigned long long)f->requests,
	       (unsigned long long)f->requests_cap, (unsigned long long)f->orders,
	       (unsigned long long)f->orders_cap, (unsigned long long)f->activities,
	       (unsigned long long)f->activities_cap, (unsigned long long)f->skus,
	       (unsigned long long)f->skus_cap, (unsigned long long)f->shards,
	       (unsigned long long)f->shards_cap, (unsigned long long)f->tokens,
	       (unsigned long long)f->tokens_cap, note ? "  " : "", note ? note : "");
	fflush(stdout);
	fprintf(r->data, "%u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
	        "%llu\n", day, (unsigned long long)acked_day, (unsigned long long)f->users,
	        (unsigned long long)f->users_cap, (unsigned long long)f->requests,
	        (unsigned long long)f->requests_cap, (unsigned long long)f->orders,
	        (unsigned long long)f->orders_cap, (unsigned long long)f->activities,
	        (unsigned long long)f->activities_cap, (unsigned long long)f->skus,
	        (unsigned long long)f->skus_cap, (unsigned long long)f->shards,
	        (unsigned long long)f->shards_cap, (unsigned long long)f->tokens,
	        (unsigned long long)f->tokens_cap, (unsigned long long)f->segment_bytes);
	fflush(r->data);
	return TOOL_OK;
}

static int soak_day(struct soak_run *r, uint32_t day)
{
	const struct soak_cfg *c = r->cfg;
	uint64_t acked_before = r->acked_total;
	size_t first_today;
	uint32_t rec = 0;
	char note[160];
	int rc;

	if ((rc = soak_load_day(r, day)) != TOOL_OK)
		return rc;
	if ((rc = soak_buy(r, day)) != TOOL_OK)
		return rc;
	/* what the killed buyers had in flight: rolled back (or forward) now */
	if ((rc = flash_recover(r->h, &rec)) != FLASH_OK)
		return tool_fail("recover after the buyers", rc);
	r->recovered += rec;
	if ((rc = soak_collect(r, day, &first_today)) != TOOL_OK)
		return rc;
	soak_retries(r, day, first_today);
	if (day <= 1 || (c->restart_every && (day + 1) % c->restart_every == 0) || day + 1 == c->days)
		soak_check_daemon_clock(r, day, soak_day_ns(c, day));

	/* the night: the clock moves to the next morning; the daemon's work */
	if (soak_clock_set(&r->clock, soak_morning_ns(r->h, soak_day_ns(c, day + 1))) != 0)
		return TOOL_FAIL;
	rc = soak_day_end(r->h, day + 1, 60000, note, sizeof note);
	if (rc != FLASH_OK)
		return tool_failf("day %u: the daemon's end-of-day work: %s (%s)", day,
		                  flash_rcname(rc), note);
	return soak_fill_line(r, day, r->acked_total - acked_before, NULL);
}

/* ------------------------------------------------------------------------
 * 6. The report
 * ------------------------------------------------------------------------ */

static int soak_line(const char *what, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int soak_line(const char *what, int ok, const char *fmt, ...)
{
	va_list ap;

	printf("check  %-24s %s  ", what, ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return ok;
}

#define SOAK_FILL_OK(f, b, t) ((f)->t <= (b)->t)

/* inserted / capacity as "N.Nx" */
static double soak_times(uint64_t inserted, uint64_t cap)
{
	return cap ? (double)inserted / (double)cap : 0.0;
}

/*
 * Memory stayed flat because of reclamation, not because the run was small:
 * over the run each reclaimed table took more keys (entries) than it can
 * hold at once -- request ids and limit entries held plus those cleared
 * with their banks, order numbers issued, activities, skus and shards added
 * -- while no table ever answered FLASH_EFULL (a full catalog would have
 * failed the day's adds: the run would not have got here).  Runs shorter
 * than SOAK_RECLAIM_MIN_DAYS cannot pass through the tables once and
 * print the figures without a verdict.
 */
#define SOAK_RECLAIM_MIN_DAYS 10u
static int soak_reclaim_line(const struct soak_run *r)
{
	const struct soak_cfg *c = r->cfg;
	const struct soak_fill *f = &r->fill;
	uint64_t req_in = f->requests + f->requests_reclaimed, user_in = f->users + f->users_reclaimed;
	uint64_t acts_in = (uint64_t)c->days * SOAK_ACTS_PER_DAY;
	uint64_t skus_in = acts_in * SOAK_SKUS_PER_ACT, shards_in = acts_in * SOAK_SHARDS_PER_ACT;
	uint64_t orders_in = f->orders_issued & ((1ULL << 56) - 1);
	double tr = soak_times(req_in, f->requests_cap), tu = soak_times(user_in, f->users_cap);
	double to = soak_times(orders_in, f->orders_cap), ta = soak_times(acts_in, f->activities_cap);
	double ts = soak_times(skus_in, f->skus_cap), th = soak_times(shards_in, f->shards_cap);
	int ok = r->full == 0 && tr > 1.0 && tu > 1.0 && to > 1.0 && ta > 1.0 && ts > 1.0 && th > 1.0;
	char fig[600];

	snprintf(fig, sizeof fig, "over the run, inserted / capacity: requests %llu/%llu (%.1fx, "
	         "%llu reclaimed), users %llu/%llu (%.1fx, %llu reclaimed), order numbers %llu/%llu "
	         "(%.1fx), activities %llu/%llu (%.1fx), skus %llu/%llu (%.1fx), shards %llu/%llu "
	         "(%.1fx); FLASH_EFULL answers %llu",
	         (unsigned long long)req_in, (unsigned long long)f->requests_cap, tr,
	         (unsigned long long)f->requests_reclaimed, (unsigned long long)user_in,
	         (unsigned long long)f->users_cap, tu, (unsigned long long)f->users_reclaimed,
	         (unsigned long long)orders_in, (unsigned long long)f->orders_cap, to,
	         (unsigned long long)acts_in, (unsigned long long)f->activities_cap, ta,
	         (unsigned long long)skus_in, (unsigned long long)f->skus_cap, ts,
	         (unsigned long long)shards_in, (unsigned long long)f->shards_cap, th,
	         (unsigned long long)r->full);
	if (c->days < SOAK_RECLAIM_MIN_DAYS) {
		printf("check  %-24s n/a   %s (a verdict needs %u days or more)\n", "memory reclaimed",
		       fig, SOAK_RECLAIM_MIN_DAYS);
		return 1;
	}
	return soak_line("memory reclaimed", ok, "%s", fig);
}

static int soak_report(struct soak_run *r, const struct soak_verdict *v, double secs)
{
	const struct soak_cfg *c = r->cfg;
	const struct soak_fill *f = &r->fill, *b = &r->bound;
	uint64_t retries = r->retries + r->log.late_retries + r->log.old_retries;
	uint64_t retry_ok = r->retry_ok + r->log.late_retry_ok + r->log.old_retry_ok;
	int ok = 1, fill_ok;

	printf("\nflashstock_soak: %u days in %.1f s, %u buyer processes a day, %u order attempts a "
	       "day, %s durability, seed %llu\n", c->days, secs, c->procs, c->orders_per_day,
	       c->durability == FLASH_DURABILITY_SYNC ? "sync" : "async", (unsigned long long)c->seed);
	printf("traffic  %llu order calls, %llu acknowledged, %llu sold out, %llu at the limit, "
	       "%llu ended (as expected)\n",
	       (unsigned long long)r->calls, (unsigned long long)r->acked_total,
	       (unsigned long long)r->sold_out, (unsigned long long)r->limit,
	       (unsigned long long)r->ended_ok);
	printf("         %llu cancels (%llu second cancels FLASH_ECANCELLED), %llu used tokens "
	       "offered again (%llu refused), %llu leased locks (%llu found held, %llu lapsed "
	       "before release), %llu ring-full waits, %llu sync waits past the bound (placed)\n",
	       (unsigned long long)r->cancels, (unsigned long long)r->cancel_twice_ok,
	       (unsigned long long)r->token_reuse, (unsigned long long)r->token_reuse_ok,
	       (unsigned long long)r->locks, (unsigned long long)r->locked,
	       (unsigned long long)r->lock_lapsed,
	       (unsigned long long)r->busy, (unsigned long long)r->fate_unknown);
	printf("crashes  %u buyer processes, %u killed with SIGKILL (%u handles recovered by the "
	       "soak; the daemon recovers too); daemon started %u times, killed with SIGKILL %u "
	       "times\n", r->buyers_forked, r->buyers_killed, r->recovered, r->daemon_starts,
	       r->daemon_kills);
	printf("records  WAL %llu records: %llu orders, %llu cancels; %llu skus, %llu units loaded, "
	       "%llu sold; MariaDB %llu orders\n\n",
	       (unsigned long long)v->wal_records, (unsigned long long)v->wal_orders,
	       (unsigned long long)v->wal_cancels, (unsigned long long)v->skus,
	       (unsigned long long)v->units_total, (unsigned long long)v->units_sold,
	       (unsigned long long)v->mysql_orders);

	ok &= soak_line("nothing oversold", v->oversold == 0,
	                "%llu skus sold above their stock at any point of the WAL (of %llu)",
	                (unsigned long long)v->oversold, (unsigned long long)v->skus);
	ok &= soak_line("nothing leaked", v->leaked_mem + v->leaked_wal + v->leaked_mysql == 0,
	                "skus where available + sold != total: segment %llu, WAL %llu, MariaDB %llu",
	                (unsigned long long)v->leaked_mem, (unsigned long long)v->leaked_wal,
	                (unsigned long long)v->leaked_mysql);
	ok &= soak_line("limits held", v->over_limit_wal + v->over_limit_mysql == 0,
	                "users over a per-day/per-activity/per-sku limit: WAL %llu (at any point), "
	                "MariaDB %llu", (unsigned long long)v->over_limit_wal,
	                (unsigned long long)v->over_limit_mysql);
	ok &= soak_line("acked orders durable",
	                v->acked == r->acked_total && v->acked_not_once_wal == 0 &&
	                v->acked_not_once_mysql == 0 && v->acked_mismatch == 0 &&
	                v->wal_dup_orders == 0 && v->mysql_not_in_wal == 0 &&
	                v->mysql_orders == v->wal_orders && v->mysql_conflicts == 0,
	                "%llu acknowledged: not once in the WAL %llu, not once in MariaDB %llu, "
	                "differing %llu; WAL orders %llu (duplicates %llu), MariaDB rows %llu (not the "
	                "WAL's %llu), refused records %llu",
	                (unsigned long long)v->acked, (unsigned long long)v->acked_not_once_wal,
	                (unsigned long long)v->acked_not_once_mysql,
	                (unsigned long long)v->acked_mismatch, (unsigned long long)v->wal_orders,
	                (unsigned long long)v->wal_dup_orders, (unsigned long long)v->mysql_orders,
	                (unsigned long long)v->mysql_not_in_wal, (unsigned long long)v->mysql_conflicts);
	ok &= soak_line("retries: first outcome", r->retry_bad == 0 && r->log.late_retry_bad == 0,
	                "%llu other answers; first outcome %llu/%llu (at once %llu/%llu, "
	                "same day from another process %llu/%llu, "
	                "earlier days %llu/%llu; %llu of them past the window: FLASH_EREQ_EXPIRED)",
	                (unsigned long long)(r->retry_bad + r->log.late_retry_bad),
	                (unsigned long long)retry_ok,
	                (unsigned long long)retries, (unsigned long long)r->retry_ok,
	                (unsigned long long)r->retries, (unsigned long long)r->log.late_retry_ok,
	                (unsigned long long)r->log.late_retries, (unsigned long long)r->log.old_retry_ok,
	                (unsigned long long)r->log.old_retries, (unsigned long long)r->log.expired_ok);
	fill_ok = r->seg_bytes_changed == 0 && r->days_over_bound == 0 &&
	          SOAK_FILL_OK(f, b, users) &&
	          SOAK_FILL_OK(f, b, requests) && SOAK_FILL_OK(f, b, orders) &&
	          SOAK_FILL_OK(f, b, activities) && SOAK_FILL_OK(f, b, skus) &&
	          SOAK_FILL_OK(f, b, shards) && SOAK_FILL_OK(f, b, tokens);
	ok &= soak_line("memory flat", fill_ok,
	                "segment %llu bytes every day (changed on %u days); days whose fill passed "
	                "that day's bound %u%s%s; fill at the end / bound "
	                "(%u days of traffic): users %llu/%llu requests %llu/%llu orders %llu/%llu "
	                "activities %llu/%llu skus %llu/%llu shards %llu/%llu tokens %llu/%llu",
	                (unsigned long long)r->seg_bytes0, r->seg_bytes_changed, r->days_over_bound,
	                r->over_bound[0] ? ", first " : "", r->over_bound[0] ? r->over_bound : "",
	                soak_days_held(c->days), (unsigned long long)f->users,
	                (unsigned long long)b->users, (unsigned long long)f->requests,
	                (unsigned long long)b->requests, (unsigned long long)f->orders,
	                (unsigned long long)b->orders, (unsigned long long)f->activities,
	                (unsigned long long)b->activities, (unsigned long long)f->skus,
	                (unsigned long long)b->skus, (unsigned long long)f->shards,
	                (unsigned long long)b->shards, (unsigned long long)f->tokens,
	                (unsigned long long)b->tokens);
	ok &= soak_reclaim_line(r);
	ok &= soak_line("reconciler", v->reconcile_diffs == 0,
	                "%llu differences between segment, WAL and MariaDB",
	                (unsigned long long)v->reconcile_diffs);
	ok &= soak_line("answers as documented", r->unexpected == 0 && r->proc_failures == 0,
	                "%llu unexpected answers, %u buyer processes failed%s%s",
	                (unsigned long long)r->unexpected, r->proc_failures,
	                r->first_bad[0] ? "; first: " : "", r->first_bad);
	ok &= soak_line("one clock", r->clock_bad == 0 && v->acked_wrong_day == 0,
	                "the daemon's log time matched the soak's shifted clock %u/%u times; "
	                "acknowledged orders of another business day than their simulated day's: "
	                "%llu%s%s", r->clock_checks - r->clock_bad, r->clock_checks,
	                (unsigned long long)v->acked_wrong_day,
	                r->clock_problem[0] ? "; " : "", r->clock_problem);
	if (v->first[0])
		printf("first finding: %s\n", v->first);
	if (r->log.first_bad[0])
		printf("first bad retry: %s\n", r->log.first_bad);
	printf("result   %s\n", ok ? "OK: every check held" : "FAILED");
	fflush(stdout);
	return ok ? TOOL_OK : TOOL_FAIL;
}

/* --inject lost-ack, retry: wrong claims about outcomes, which the checks
 * must catch (mysql-stock is planted by soak_check_run). */
static int soak_inject(struct soak_run *r)
{
	size_t i;

	if (r->cfg->inject & SOAK_INJECT_FULL)
		r->full++;   /* "an order was refused FLASH_EFULL" */

	for (i = r->log.n; i-- > 0;) {
		struct soak_out o = r->log.so[i];
		if (o.so_kind != SOAK_OUT_ORDER || o.so_rc != FLASH_OK)
			continue;
		if (r->cfg->inject & SOAK_INJECT_RETRY) {
			o.so_order_no++;        /* "its first outcome was the next order" */
			soak_retry(r, &o, o.so_day, 1, 1);
			o.so_order_no--;
		}
		if (r->cfg->inject & SOAK_INJECT_LOST_ACK) {
			o.so_order_no += 1ull << 40;   /* a number no order has */
			if (soak_log_add(&r->log, &o) != 0)
				return tool_fail("--inject", FLASH_ENOMEM);
			r->acked_total++;
		}
		return TOOL_OK;
	}
	return tool_failf("--inject: no acknowledged order to plant a fault on");
}

/* --inject wal-order, after the daemon stopped: one forged ORDER record
 * appended to the WAL, a second order of a token activity's (limit 1 per
 * sku and user, no quota back on cancel) user, for more units than any sku
 * holds.  The WAL checks must find it oversold and over the limit. */
static int soak_inject_wal(struct soak_run *r)
{
	struct flash_record rec;
	wal_t *w = NULL;
	size_t i;
	int rc;

	for (i = 0; i < r->log.n; i++) {
		const struct soak_out *o = &r->log.so[i];
		if (o->so_kind == SOAK_OUT_ORDER && o->so_rc == FLASH_OK &&
		    (o->so_activity - 1000u) % 10u == SOAK_KIND_TOKEN)
			break;
	}
	if (i == r->log.n)
		return tool_failf("--inject wal-order: no acknowledged token order");
	memset(&rec, 0, sizeof rec);
	rec.type = FLASH_REC_ORDER;
	rec.activity_id = r->log.so[i].so_activity;
	rec.sku_id = r->log.so[i].so_sku;
	rec.user_id = r->log.so[i].so_user;
	rec.qty = 1000000;
	rec.order_no = flash_orders_max(r->h) + 1;
	rec.limit_slot = 1;
	rec.biz_day = (uint32_t)(r->cfg->base_s / SOAK_DAY_S + r->log.so[i].so_day);
	rec.ts_ns = tool_realtime_ns();
	if ((rc = wal_open(r->wal_dir, NULL, &w)) != FLASH_OK)
		return tool_fail("--inject wal-order: open the WAL", rc);
	rc = wal_append_record(w, &rec, UINT64_MAX >> 1, NULL);
	if (rc == FLASH_OK)
		rc = wal_commit(w);
	int crc = wal_close(w);
	if (rc != FLASH_OK || crc != FLASH_OK)
		return tool_fail("--inject wal-order: append", rc != FLASH_OK ? rc : crc);
	return TOOL_OK;
}

/* The daemon's last lines, after a failure (the directory goes with the run). */
static void soak_log_tail(const struct soak_run *r)
{
	char buf[4096];
	ssize_t n;
	off_t size;
	int fd = open(r->log_path, O_RDONLY);

	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	lseek(fd, size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0, SEEK_SET);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	fprintf(stderr, "soak: the daemon's log ends with:\n%s\n", buf);
}

static int soak_inner(struct soak_opts *so, const char *dir)
{
	struct soak_run r;
	struct soak_verdict v;
	int64_t t0 = tool_monotonic_ns();
	uint32_t day;
	int rc;

	memset(&r, 0, sizeof r);
	r.so = *so;
	r.cfg = &r.so.cfg;
	r.cfg->dir = dir;
	r.cfg->name = getenv(SOAK_ENV_SEG);
	r.url = getenv(SOAK_ENV_URL);
	if (!r.cfg->name || !r.url)
		return tool_failf("the inner process lacks %s or %s", SOAK_ENV_SEG, SOAK_ENV_URL);
	soak_signals();

	rc = soak_inner_setup(&r);
	for (day = 0; rc == TOOL_OK && day < r.cfg->days; day++) {
		rc = soak_day(&r, day);
		if (rc == TOOL_OK && soak_signal)
			rc = tool_failf("interrupted by signal %d", (int)soak_signal);
	}
	if (rc == TOOL_OK && r.cfg->inject)
		rc = soak_inject(&r);
	if (rc == TOOL_OK)
		rc = soak_daemon_stop(&r);
	if (rc == TOOL_OK && (r.cfg->inject & SOAK_INJECT_WAL_ORDER))
		rc = soak_inject_wal(&r);
	if (rc == TOOL_OK) {
		fprintf(stderr, "soak: checking the records ...\n");
		rc = soak_check_run(r.h, r.wal_dir, r.url, &r.log, r.cfg->inject,
		                    r.cfg->base_s / SOAK_DAY_S, &v);
	}
	if (rc == TOOL_OK)
		rc = soak_report(&r, &v, (double)(tool_monotonic_ns() - t0) / 1e9);
	if (rc != TOOL_OK && rc != TOOL_USAGE && !r.cfg->inject)
		soak_log_tail(&r);
	soak_inner_teardown(&r);
	return rc;
}

/* ------------------------------------------------------------------------
 * 7. main()
 * ------------------------------------------------------------------------ */

/* The outer process, or, with SOAK_ENV_INNER set, the inner one: the same
 * program run again on the shifted clock with the same arguments.  Output is
 * checked once, here, after the run (as `flashstock` does for a command);
 * the soak's children leave by _exit(), which flushes nothing. */
int main(int argc, char **argv)
{
	struct soak_opts so;
	const char *inner = getenv(SOAK_ENV_INNER);
	int rc;

	tool_prog_set("flashstock_soak");
	rc = soak_parse(argc, argv, &so);
	if (rc < 0)
		rc = inner && *inner ? soak_inner(&so, inner) : soak_outer(argv, &so);
	return tool_close_stdout(NULL, rc);
}
