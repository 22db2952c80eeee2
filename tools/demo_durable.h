/*
 * demo_durable.h -- the durable half of `flashstock demo`: a private
 * directory, a private MariaDB (tests/fixtures/mariadb.sh), the WAL daemon
 * (serve_run() in a forked child), reading the WAL back, catching MySQL up,
 * counting its orders, and the reconciler.  (tools/demo_durable.c)
 *
 * Life of a run (cmd_demo.c drives it):
 *   demo_dur_setup()        private temp dir; MariaDB unless --no-mysql
 *   demo_dur_daemon_start() fork the daemon: it drains every ring into the
 *                           WAL and feeds the MySQL applier
 *   ... load the catalog, the buyers race ...
 *   demo_dur_daemon_stop()  SIGTERM: drain, commit, mark durable, exit
 *   demo_dur_wal_read()     every WAL record into the audit's tallies
 *   demo_dur_mysql()        catch MySQL up from the WAL, count its orders
 *   demo_dur_reconcile()    segment vs WAL vs MySQL
 *   demo_dur_teardown()     daemon, MariaDB and the directory gone (safe
 *                           at any stage, also after a failure or a signal)
 *
 * The parent never runs a thread: the daemon is a child process, so forking
 * the buyers stays safe.
 */
#ifndef FLASH_TOOLS_DEMO_DURABLE_H
#define FLASH_TOOLS_DEMO_DURABLE_H

#include <stdint.h>
#include <sys/types.h>

#include "flashstock.h"
#include "demo.h"

struct serve_stats;
struct mdb;

struct demo_dur {
	/* configuration (options) */
	int         use_mysql;        /* 0: --no-mysql (WAL only) */
	uint32_t    durability;       /* enum flash_durability */
	const char *fixture;          /* --mysql-fixture PATH, or NULL: look for it */
	int         keep;             /* --keep: leave segment, WAL and MariaDB at the end */
	uint32_t    wal_file_mb;      /* --wal-file-mb: each WAL file's size, MiB */
	/* the private directory */
	char        dir[128];         /* mkdtemp; removed at the end */
	char        wal_dir[160];
	char        db_dir[160];
	char        defaults_file[200];  /* the fixture's client.cnf (credentials inside, never printed) */
	char        fixture_path[4096];
	int         db_started;       /* the fixture was asked to start: ask it to stop */
	/* the daemon */
	pid_t       daemon_pid;       /* > 0 while it runs */
	int         daemon_status;    /* waitpid status once it exited */
	int         daemon_exited;
	struct serve_stats *st;       /* its stats, in a MAP_SHARED page */
	struct mdb *m;        /* the applier's handle, for counting and reconciling */
	/* results */
	uint64_t    wal_records;      /* frames read back */
	uint64_t    orders_in_wal;    /* ORDER records among them */
	uint64_t    cancels_in_wal;
	int         wal_stop;         /* the read-back's stop cause (FLASH_OK: clean end) */
	uint64_t    orders_in_mysql;
	uint64_t    mysql_conflicts;  /* rows in apply_conflicts */
	uint64_t    mysql_applied_lsn;
	uint64_t    mysql_late;       /* records the daemon's applier had not applied at its stop */
	uint64_t    reconcile_diffs;
	uint64_t    reconcile_skus, reconcile_orders;
	uint32_t    reconcile_witnesses;
	char       *reconcile_text;   /* the reconciler's report, as printed (malloc'ed) */
};

/**
 * Find the MariaDB fixture script tests/fixtures/mariadb.sh: @p given
 * (--mysql-fixture), else relative to the executable (build-dir/tools/
 * flashstock -> ../../tests/fixtures, or an installed share/flashstock),
 * else relative to the current directory, else in the source tree the
 * executable was built from.  Its real path goes to @p path.
 * @return 0; -1 after printing why ("flashstock: <cmd>: ...").
 */
int demo_dur_find_fixture(const char *cmd, const char *given, char *path, size_t cap);

/** Make the private directory and, unless --no-mysql, start MariaDB in it.
 *  @return TOOL_OK or TOOL_FAIL (reason printed). */
int demo_dur_setup(struct demo_dur *d);

/** Fork the daemon serving segment @p name.  @return TOOL_OK or TOOL_FAIL. */
int demo_dur_daemon_start(struct demo_dur *d, const char *name);

/** A child reaped by the demo's waitpid(-1): @return 1 if it was the daemon. */
int demo_dur_reaped(struct demo_dur *d, pid_t pid, int status);

/** Has the daemon exited before being asked to?  (Checks without blocking.) */
int demo_dur_daemon_died(struct demo_dur *d);

/** Stop the daemon (drain, commit, mark durable) and wait for it.
 *  @return TOOL_OK if it stopped cleanly, TOOL_FAIL otherwise. */
int demo_dur_daemon_stop(struct demo_dur *d);

/** Read the WAL back, feeding every record to @p rings (the audit's view).
 *  @return TOOL_OK or TOOL_FAIL. */
int demo_dur_wal_read(struct demo_dur *d, struct demo_rings *rings);

/** Catch MySQL up with the WAL and count its orders.  @return TOOL_OK or TOOL_FAIL. */
int demo_dur_mysql(struct demo_dur *d);

/** Reconcile segment @p h, the WAL and (with MySQL) MySQL; print the
 *  differences to stdout.  @return TOOL_OK or TOOL_FAIL (could not compare). */
int demo_dur_reconcile(struct demo_dur *d, flash_t *h);

/** Stop whatever still runs, remove the directory.  Safe at any stage. */
void demo_dur_teardown(struct demo_dur *d);

/** The daemon's stats (records written, commits, ...), or NULL. */
const struct serve_stats *demo_dur_stats(const struct demo_dur *d);

#endif /* FLASH_TOOLS_DEMO_DURABLE_H */
