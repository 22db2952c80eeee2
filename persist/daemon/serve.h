/*
 * serve.h -- the daemon's main loop (`flashstock serve`): drain every
 * handle's record ring into the WAL, commit by group, then tell the segment
 * which records are durable so that `sync` buyers wake up.
 *
 * One serve_run() per segment at a time (the segment allows one consumer).
 * It runs in the calling thread and returns when *o->stop becomes nonzero
 * (after a last drain, commit and durable mark), when o->once is set and a
 * round finds the rings empty, or on a fatal error.
 *
 * Order of effects for every record (crash points in brackets):
 *   drain (the ring keeps it) [1] -> wal_append -> wal_commit: one pwrite +
 *   one fdatasync for the round [2] -> flash_durable_advance(slot, seq)
 *   frees it in the ring and wakes its buyer [3] -> with an applier, the
 *   record and its LSN go to the MySQL pump's queue (never waiting for
 *   MySQL; exactly once there by the applied LSN).  With snapshots on, a
 *   thread of its own replays durable frames into a shadow segment and
 *   writes snapshots (snapshot.h); the loop above does not wait for it.
 * Dying at [1] or [2] loses nothing: the ring still holds the record and the
 * next daemon drains it again.  Dying at [2] after the fdatasync, or at [3],
 * leaves records that are in the WAL but not marked durable; the next daemon
 * would write them a second time.  At start it therefore reads the WAL,
 * keeps the last record of each slot, and skips a drained record of that
 * slot whose seq is at most that record's seq -- only if the ring still
 * holds a record identical to it (same slot, seq and all 64 bytes).  A
 * segment rebuilt or recreated since has restarted its seqs; its rings never
 * hold a byte-identical copy, so nothing is skipped by mistake.
 *
 * With archive.after_s and an applier, a thread archives every activity
 * whose window closed that long ago once MariaDB's applied LSN -- and,
 * with backstop.urls, the backstop's position -- covers the segment
 * (archiver.h); it stops before the last drain, so its ARCHIVE records are
 * written.
 *
 * With reconcile.every_ms set (the default: 5 minutes) a thread compares
 * the segment, the WAL and MySQL periodically and once more at a clean stop
 * after the applier drained (serve_reconcile.h).
 *
 * serve.c keeps those threads in one table (serve_services[]: reconciler,
 * MySQL applier, snapshots, lease agent, backstop, archiver, metrics),
 * started in that order and stopped in the reverse one; the order is their
 * dependencies, said once above the table.  serve_run() is: recover if
 * asked, set up (segment, claim, WAL), start the services, drain until
 * stopped, tear down.
 */
#ifndef FLASH_SERVE_H
#define FLASH_SERVE_H

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>

#include "plog.h"
#include "wal.h"

struct serve_recon_pass;

/* Recovery at start (rebuild.h). */
struct serve_recovery {
	int           on;               /* first rebuild the segment from the snapshot and WAL
	                                   (built under a temporary name, renamed when
	                                   complete); the segment must be absent or empty (a
	                                   restock has no identity: replaying it twice would add
	                                   twice) */
	int           if_absent;        /* recover when the segment does not exist (a reboot
	                                   emptied /dev/shm), else start plainly (after a
	                                   crash): what a unit file runs on every start */
	int           accept_loss;      /* accept the loss of every record after
	                                   accept_loss_after (rebuild.h: it must be the last LSN
	                                   that can be kept; what is dropped is logged) */
	uint64_t      accept_loss_after;
};

/* The MySQL applier (mysql_pump.h): url or defaults set, or none at all. */
struct serve_mysql {
	const char   *url;              /* mysql://user:pass@host/db?socket=PATH */
	const char   *defaults;         /* or an option file ([client] group) */
	int           require_db;       /* refuse a database that does not exist
	                                   (mdb_opts.require_db) */
	uint32_t      drain_ms;         /* at stop, let the applier catch up this long (0: 5000) */
};

/* Snapshots (snapshot.h). */
struct serve_snapshots {
	int           on;               /* take them: every every_s, after wal_bytes of WAL, and
	                                   at a clean stop; then remove WAL files they (and MySQL)
	                                   cover.  serve_opts_default: off; `flashstock serve`: on
	                                   unless --no-snapshot.  Recovery uses the snapshots in
	                                   wal_dir whatever this says */
	uint32_t      every_s;          /* 0: 300 */
	uint64_t      wal_bytes;        /* 0: 64 MiB (one default WAL file) */
	int           keep_wal;         /* remove no WAL file */
};

/* The order feed's retention (feed.h): WAL kept for a consumer behind. */
struct serve_feed {
	uint64_t      keep_bytes;       /* at most this much for one consumer (serve_opts_default:
	                                   FEED_KEEP_BYTES_DEFAULT; 0: no bound) */
	uint64_t      keep_age_s;       /* ... nor older than this (FEED_KEEP_AGE_S_DEFAULT; 0: no bound) */
};

/* The periodic reconciler (serve_reconcile.h): a pass every every_ms and
 * one at a clean stop; every_ms 0: none at all. */
struct serve_recon {
	uint32_t      every_ms;         /* serve_opts_default: 300000 (5 minutes) */
	double        threshold;        /* ALERT past this share of units differing (0: 0.001) */
	void        (*hook)(void *arg, const struct serve_recon_pass *p); /* after each pass */
	void         *hook_arg;
};

/* The reclaimer (engine/gen.c) of a windowed segment: every every_ms each
 * keyed table's generation moves on when due and the bank two generations
 * back is cleared -- with a MySQL applier only once it applied every record
 * the WAL held when the clear fell due. */
struct serve_reclaim {
	int           off;              /* 1: never (a one-bank segment never anyway) */
	uint32_t      every_ms;         /* 0: 1000 */
};

/* The reservation expirer (expirer.h): each reservation still unpaid at
 * its pay-by time is expired within every_ms of it, without anyone asking. */
struct serve_expire {
	int           off;              /* 1: never (reservations then expire when met,
	                                   or by `flashstock expire`) */
	uint32_t      every_ms;         /* 0: 10 */
};

/* Archiving (archiver.h): activities whose window closed after_s ago are
 * archived once MariaDB applied everything the segment reflects (and the
 * backstop, if any, wrote it).  Needs the applier: without it nothing is
 * archived (logged).  serve_opts_default: 0 (never); `flashstock serve`:
 * 3600 unless --archive-after-s says otherwise. */
struct serve_archive {
	uint32_t      after_s;
	uint32_t      every_ms;         /* look this often (0: 1000) */
};

/* The lease agent (lease.h): with urls set, a thread keeps the segment's
 * skus stocked from the central pool (serve_opts.box_id required). */
struct serve_lease {
	const char   *urls;             /* "URL[,URL...]" of flash_central; NULL: no agent */
	uint32_t      min;              /* 0: the agent's defaults (lease.h) */
	uint32_t      max;
	uint32_t      lead_ms;
	uint32_t      heartbeat_s;
};

/* The cross-box limit (backstop.h): with urls set (and serve_opts.box_id),
 * a thread writes the box's orders into the central fs_user_limit. */
struct serve_backstop {
	const char   *urls;             /* "URL[,URL...]"; NULL: off */
	uint32_t      drain_ms;         /* at stop, let it write what is durable this long (0: 5000) */
};

/* What serve_run() does: the drain loop's own settings, then one group per
 * service it may start. */
struct serve_opts {
	const char   *segment;          /* segment name */
	const char   *wal_dir;          /* WAL directory (created if missing) */
	uint64_t      wal_segment_bytes;/* size of new WAL files (0: default) */
	uint32_t      drain_max;        /* records per round at most (0: 65536) */
	uint32_t      recover_ms;       /* run flash_recover() this often (0: 1000) */
	uint32_t      idle_us_max;      /* longest sleep when the rings are empty (0: 250); the
	                                   engine has no doorbell, so this bounds the wait of
	                                   the first record after a quiet spell */
	uint32_t      stats_ms;         /* info line this often (0: never) */
	int           log_level;        /* enum plog_level */
	int           once;             /* stop after the first round that drains nothing */
	volatile sig_atomic_t *stop;    /* nonzero: drain, commit, mark, return (may be NULL);
	                                   set it from a signal handler, or from another
	                                   thread with __atomic_store_n */
	const char   *metrics;          /* "[A.B.C.D:]PORT": Prometheus text on GET /metrics
	                                   (loopback unless an address is given; NULL: off) */
	uint32_t      box_id;           /* 1..FLASH_BOX_ID_MAX: the box's id (required with
	                                   lease.urls or backstop.urls) */
	struct serve_recovery  recovery;
	struct serve_mysql     mysql;
	struct serve_snapshots snapshots;
	struct serve_feed      feed;
	struct serve_recon     reconcile;
	struct serve_reclaim   reclaim;
	struct serve_expire    expire;
	struct serve_archive   archive;
	struct serve_lease     lease;
	struct serve_backstop  backstop;
};

void serve_opts_default(struct serve_opts *o);

#define SERVE_EXPIRY_BUCKETS 12   /* EXPIRER_LAG_BUCKETS (serve.c checks) */

struct serve_stats {
	uint64_t rounds;          /* drain rounds */
	uint64_t records;         /* records written to the WAL */
	uint64_t skipped;         /* records found already in the WAL at start */
	uint64_t commits;         /* wal_commit() calls that wrote something */
	uint64_t recovered;       /* dead handles recovered by flash_recover() */
	uint64_t durable_lsn;     /* the WAL's durable LSN at return */
	uint64_t replayed;        /* WAL frames read at start */
	uint64_t applied;         /* recover: records applied to the segment */
	uint64_t present;         /* recover: records the segment had already (FLASH_EEXIST) */
	uint64_t mysql_pushed;    /* records handed to the MySQL applier after their commit */
	uint64_t mysql_dropped;   /* of those, dropped by its full queue (it reads them back from the WAL) */
	/* Age of the oldest record of each committed round when its commit
	 * returned (now - record ts_ns): in async durability, how long an
	 * acknowledged order was not yet on disk -- the loss window, measured.
	 * Bucket i counts rounds in [2^i, 2^(i+1)) us (0 also holds < 1 us). */
	uint64_t lag_hist[WAL_HIST_BUCKETS];
	uint64_t lag_ns_max;
	uint64_t lag_ns_sum;      /* over committed rounds */
	uint32_t metrics_port;    /* port the metrics endpoint listens on (0: none); set
	                             with an atomic store once listening */
	uint64_t recover_snap_lsn;/* recover: LSN of the snapshot the segment was restored from (0: none) */
	uint64_t snap_lsn;        /* LSN of the newest snapshot written or found */
	uint64_t snapshots;       /* snapshots written */
	uint64_t snap_failures;   /* snapshot failures (sticky: at most 1) */
	uint64_t wal_removed;     /* WAL files removed behind snapshots and MySQL */
	uint64_t reconcile_passes;  /* periodic reconciler: passes (the final one included) */
	uint64_t reconcile_diffs;   /* ... differences over every pass */
	uint64_t reconcile_busy;    /* ... passes whose segment part found no quiet window */
	uint64_t gen_advances;      /* reclaimer: generations moved on (both tables) */
	uint64_t gen_clears;        /* ... banks cleared */
	uint64_t gen_cleared_keys;  /* ... keys those clears removed */
	uint64_t gen_clear_waits;   /* ... clears due but put off: MySQL had not applied their
	                               generation yet (relaxed atomic: tests read it live) */
	uint64_t archived;          /* activities the archiver archived */
	uint64_t expired;           /* reservations the expirer expired */
	/* ... and how long after each one's pay-by time, at the stop
	 * (expirer.h: buckets <= 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 5 s, more) */
	uint64_t expiry_lag_hist[SERVE_EXPIRY_BUCKETS];
	uint64_t expiry_lag_ns_sum, expiry_lag_ns_max;
	int      rc;              /* why serve_run() failed: the first failure's FLASH_E* code
	                             (a FLASH_EWAL_* one when the WAL failed), or 0 */
	uint64_t backstop_conflicts;/* second orders across boxes, cancelled (backstop.h) */
	int      refused;         /* 1: refused at start-up, nothing changed (another daemon
	                             serves the segment, the WAL is not the segment's) */
};

/*
 * Run the daemon loop.  Logs to stderr ("<time> serve [level] message").
 * Start-up refuses, changing nothing (-1 with st->refused = 1 and st->rc
 * the reason), a segment another live daemon serves (FLASH_EBUSY), a WAL
 * directory another daemon holds (FLASH_EWAL_BUSY) and a WAL that is not
 * the segment's: one of another incarnation (FLASH_EWAL_IDENT), or an empty
 * or shorter WAL for a segment that reflects a longer one, or one that lost
 * records the previous daemon wrote (FLASH_EWAL_GAP); --recover on a segment not restored from a
 * snapshot gives it the WAL's identity instead, once every record of the
 * WAL is applied.  A segment marked failed by an earlier daemon is cleared
 * (flash_durability_clear, one line at warn) once every start-up check has
 * passed and the WAL is open for append, before the first drain; a start
 * that refuses leaves it failed and says so.
 * @return 0 on a clean stop; -1 on a fatal error (segment cannot be opened,
 *         WAL cannot be read or opened, WAL write/fdatasync failed: then the
 *         segment is marked failed, with the failed step and its errno,
 *         with flash_durability_fail_why() first).
 *         @p st (may be NULL) is filled either way.
 */
int serve_run(const struct serve_opts *o, struct serve_stats *st);

#endif /* FLASH_SERVE_H */
