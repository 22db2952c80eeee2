/*
 * serve_reconcile.h -- the periodic reconciler inside `flashstock serve`.
 *
 * A thread of the daemon runs a pass every `every_ms` and once more at a
 * clean stop (after the applier drained).  The system is live while it
 * runs, so each comparison is made at a consistent cut, or not at all:
 *
 *   WAL vs MySQL, exact.  One consistent MySQL snapshot (START TRANSACTION
 *   WITH CONSISTENT SNAPSHOT, REPEATABLE READ) reads the applied LSN A,
 *   item_stock, the sums over orders and every order row.  A fold of the
 *   durable WAL (wal_read_durable, behind the writer) is advanced to
 *   exactly A -- it is incremental: each pass reads only the frames after
 *   the previous pass's A.  MySQL holds exactly the records up to A, so any
 *   difference between the two is real.
 *
 *   Segment vs WAL, only in a quiet window.  flash_quiet_get() before and
 *   after reading the segment: both quiet (every ring drained and durable,
 *   no operation in flight) and equal (no operation began in between) means
 *   the segment read is the state the durable WAL describes; a second fold
 *   is advanced to the durable LSN read inside the window.  Otherwise that
 *   part of the pass is skipped and counted (skipped_busy); a busy sale
 *   simply postpones it.
 *
 * Without MySQL only the segment part runs.  Every difference is logged
 * at WARN, one line each; an ALERT at ERROR when the differing units
 * exceed the threshold share of all units (either comparison).
 *
 * Synchronization: serve_recon_start / serve_recon_stop from the daemon's
 * thread; serve_recon_stats_get from any thread (the HTTP metrics thread).
 * The reconciler's thread owns its segment handle (read-only) and MySQL
 * connection; it reads the daemon's WAL only through wal_read_durable()
 * and wal_durable_lsn(), which are safe beside the writer.
 */
#ifndef FLASH_SERVE_RECONCILE_H
#define FLASH_SERVE_RECONCILE_H

#include <stdint.h>

#include "reconcile.h"
#include "wal.h"

/* What one pass found, for the hook (tests, embedders). */
struct serve_recon_pass {
	uint64_t pass;              /* 1, 2, ... */
	int      final;             /* the pass run at the clean stop */
	int      rc;                /* FLASH_OK, or why a part could not run (it is not a finding) */
	int      mysql_checked;     /* the WAL vs MySQL part ran */
	uint64_t mysql_lsn;         /* ... at MySQL's applied LSN */
	int      seg_checked;       /* the segment vs WAL part ran (a quiet window was seen) */
	int      seg_busy;          /* ... was skipped: no quiet window */
	uint64_t seg_lsn;           /* ... at this durable LSN */
	uint64_t differences;       /* both parts */
	int      alert;             /* differing units past the threshold */
	const struct reconcile_report *wal_sql;  /* NULL unless mysql_checked */
	const struct reconcile_report *seg_wal;  /* NULL unless seg_checked */
};

typedef void (*serve_recon_hook_fn)(void *arg, const struct serve_recon_pass *p);

struct serve_recon_opts {
	const char *segment;            /* segment name (opened read-only) */
	wal_t      *wal;                /* the daemon's WAL (read behind the writer) */
	const char *wal_dir;            /* its directory: a fold starts from a snapshot
	                                   when old WAL files are gone */
	const char *mysql_url;          /* or NULL */
	const char *mysql_defaults;     /* or NULL; both NULL: segment vs WAL only */
	int mysql_require_db;           /* mdb_opts.require_db */
	uint32_t    every_ms;           /* time between passes, > 0 */
	double      threshold;          /* alert ratio; 0 = 0.001 (0.1 %) */
	int         log_level;          /* enum plog_level */
	serve_recon_hook_fn hook;       /* called after each pass on the reconciler's thread, or NULL */
	void       *hook_arg;
};

struct serve_recon_stats {
	uint64_t passes;            /* passes completed */
	uint64_t diffs_last;        /* differences found by the last pass */
	uint64_t diffs_total;       /* over every pass */
	uint64_t alert;             /* 1 if the last pass raised an alert */
	uint64_t skipped_busy;      /* passes whose segment part found no quiet window */
	uint64_t errors;            /* passes with a part that could not run (MySQL down, ...) */
	uint64_t last_lsn;          /* LSN the last pass compared at (MySQL's applied LSN; without
	                               MySQL the durable LSN of the segment part) */
};

typedef struct serve_recon serve_recon_t;

/**
 * Start the reconciler's thread.  MySQL unreachable at start is not an
 * error: each pass tries again (and counts an error while it cannot).
 * @return FLASH_OK; FLASH_EINVAL (NULL, every_ms 0); FLASH_EMYSQL_CONFIG
 *         (bad URL); FLASH_ENOMEM; FLASH_ESYS (thread).
 */
int serve_recon_start(const struct serve_recon_opts *o, serve_recon_t **out);

/**
 * Stop the thread: with @p final_pass, run one last pass first (the daemon
 * asks for it at a clean stop, after its applier drained).  Then join and
 * free.  @p st (may be NULL) gets the final figures.  NULL @p r is fine.
 */
void serve_recon_stop(serve_recon_t *r, int final_pass, struct serve_recon_stats *st);

/**
 * MySQL's per-sku figures (item_stock and the sums over orders) as the last
 * pass whose WAL vs MySQL part ran read them, inside that part's consistent
 * snapshot (any thread: the HTTP metrics thread).
 * @param[out] out      malloc'ed copy of *n entries (NULL when none); free() it
 * @param[out] when_ns  CLOCK_REALTIME of that pass (0: no such pass yet)
 * @param[out] lsn      MySQL's applied LSN it read them at
 * @return FLASH_OK; FLASH_ENOMEM.
 */
int serve_recon_skus_get(serve_recon_t *r, struct rsql_sku **out, size_t *n,
                         int64_t *when_ns, uint64_t *lsn);

/** Copy the figures (any thread). */
void serve_recon_stats_get(serve_recon_t *r, struct serve_recon_stats *out);

#endif /* FLASH_SERVE_RECONCILE_H */
