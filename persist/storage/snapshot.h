/*
 * snapshot.h -- snapshots of a segment, taken inside `flashstock serve`,
 * so that a rebuild (`serve --recover`) replays only the WAL after the last
 * one, and old WAL files can go.
 *
 * How a snapshot is made (shadow replay).  The daemon's snapshot thread
 * keeps a PRIVATE shadow segment ("/<segment>.shadow.<pid>", the live
 * segment's capacities and durability, mode 0600; its name is unlinked as
 * soon as the thread has it mapped, so it never outlives the daemon, and a
 * stale one an earlier daemon left is removed at start)
 * and re-applies to it, with flash_replay(), every DURABLE WAL frame behind
 * the writer (wal_read_durable()), feeding the same records to a WAL fold
 * (reconcile.h).  Only that thread ever touches the shadow, so between two
 * frames its state is exactly "every record up to LSN L" -- consistent by
 * construction, no fuzzy checkpoint, nothing on the buyers' path.  Started
 * with a snapshot in the directory, the shadow is restored from the newest
 * valid one and replay continues at its LSN + 1.
 *
 * File <wal dir>/snap-<LSN, 16 hex digits>.fss (little endian):
 *   page 0      struct snap_hdr (rest of the page zero)
 *   page 1...   the fold section: sh_fold_count struct fold_sku, the
 *               per-(activity, sku) totals at LSN L (the reconciler starts there)
 *   sh_img_off  the shadow segment's bytes (sh_seg_bytes), page aligned; 4 KiB
 *               pages that are all zero are holes (never written)
 *   sh_crc      CRC-32C of the header up to sh_crc, the fold section and the image
 * Written as snap-....tmp: ftruncate to its size, pwrite, fdatasync, rename,
 * fsync of the directory -- every call through pio.h.  A crash leaves either
 * no snapshot or a complete one (a leftover .tmp is ignored and removed by
 * the next writer).  The newest two snapshots are kept.
 *
 * When (snap_step()): every every_s seconds or once the WAL has grown by
 * wal_bytes since the last snapshot, whichever first, and when asked (the
 * daemon asks once at a clean stop) -- only if the shadow moved since, and
 * never while the WAL read so far ends between a cart's lines (the fold
 * holds them until its last line: fold_cart_lines_open()); the next step
 * after it takes the snapshot.
 *
 * WAL files removed.  A WAL file goes when every frame in it has an LSN <=
 * cover, cover = min(the OLDER of the two newest snapshots -- the only one
 * while there is one --, MySQL's applied LSN if an applier runs, the
 * committed position of every feed consumer within the retention bound:
 * feed.h), and it is not the file being written; oldest first, then the directory is fsync'd
 * (wal_remove_before()).  The older snapshot rather than the newest: a
 * snapshot found corrupt at recovery falls back to the previous one, and
 * the WAL after that one must still be there.  An applier that has not
 * reported an applied LSN yet covers nothing.  Other readers of old frames:
 * serve's start-up skip logic reads the WAL before this thread starts and
 * only needs the newest frames; the MySQL pump reads from its applied LSN
 * + 1 (>= cover + 1); `wal verify|dump` and wal_replay() accept a WAL whose
 * first file starts after LSN 1; the reconciler's fold starts from a
 * snapshot then (snap_fold_seed()).
 *
 * Failure is sticky, like the WAL's: a failed write, fdatasync or rename
 * (or a shadow that cannot follow the WAL) logs one line, removes the .tmp,
 * counts a failure, removes no WAL file, and turns snapshots off for the rest
 * of the daemon's life.  Orders keep flowing: the WAL is untouched.
 *
 * Synchronization: one snap_t is driven by one thread (snap_step() and
 * snap_close() from the thread that made the first snap_step(); the shadow
 * handle belongs to it).  snap_stats_get() may run from any thread.
 */
#ifndef FLASH_SNAPSHOT_H
#define FLASH_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"
#include "flashstock_consumer.h"
#include "fold.h"
#include "plog.h"
#include "wal.h"

/*
 * Results: FLASH_OK or a FLASH_ESNAP_* code (flashstock.h section 1); a
 * refusal of the segment or its shadow is FLASH_ESNAP_SEGMENT, with the
 * flash_* code logged.
 */


#define SNAP_MAGIC      0x3130504e53534653ull   /* "FSSNSP01" */
#define SNAP_VERSION    1u
#define SNAP_PAGE       4096u
/* sh_fold_elem of a snapshot written before reservations: struct fold_sku
 * up to, without, its last member `reserved` */
#define SNAP_FOLD_ELEM_V1 offsetof(struct fold_sku, reserved)

struct snap_hdr {
	uint64_t sh_magic;        /* SNAP_MAGIC */
	uint32_t sh_version;      /* SNAP_VERSION */
	uint32_t sh_hdr_bytes;    /* sizeof(struct snap_hdr) */
	uint64_t sh_lsn;          /* every WAL record <= this is in the image, none after */
	uint64_t sh_seg_bytes;    /* image bytes (the segment's size) */
	uint64_t sh_fold_off;     /* SNAP_PAGE */
	uint64_t sh_fold_count;   /* struct fold_sku entries */
	uint32_t sh_fold_elem;    /* sizeof(struct fold_sku) */
	uint32_t sh_opts_bytes;   /* sizeof(struct flash_seg_opts) */
	uint64_t sh_img_off;      /* page aligned, after the fold section */
	int64_t  sh_created_ns;   /* CLOCK_REALTIME */
	struct flash_seg_opts sh_opts; /* the live segment's options (mode, gid included) */
	uint32_t sh_crc;          /* CRC-32C: header up to here, fold section, image */
	uint32_t sh_zero;
};

/* ---- files ---- */

/* A snapshot file opened and checked (mapped read-only). */
struct snap_file {
	const struct snap_hdr        *sf_hdr;
	const void                   *sf_fold;   /* sh_fold_count entries of sh_fold_elem
	                                            bytes: struct fold_sku, or its first
	                                            SNAP_FOLD_ELEM_V1 bytes */
	const void                   *sf_img;
	void                         *sf_map;
	size_t                        sf_map_len;
	char                          sf_path[4200];
};

/*
 * Map and check one snapshot file: header fields, offsets against the file
 * size, and the CRC of the whole.
 * @return FLASH_OK; FLASH_ESNAP_CORRUPT; FLASH_ESYS (errno set); FLASH_EINVAL.
 */
int snap_file_open(const char *path, struct snap_file *f);
void snap_file_close(struct snap_file *f);

/* The LSNs of the snap-*.fss files in @p dir, ascending (malloc'd; a missing
 * directory is an empty list).  @return FLASH_OK; FLASH_ESYS; FLASH_ENOMEM. */
int snap_list(const char *dir, uint64_t **lsns, size_t *n);

/* "<dir>/snap-<lsn 16 hex>.fss" */
void snap_path(char *buf, size_t n, const char *dir, uint64_t lsn);

/*
 * Write a snapshot of LSN @p lsn (see the file comment for the steps).
 * @return FLASH_OK; FLASH_ESYS with a line in @p err (the .tmp is removed);
 *         FLASH_EINVAL.
 */
int snap_write(const char *dir, uint64_t lsn, const struct flash_seg_opts *opts,
               const struct fold_sku *fold, size_t nfold,
               const void *img, uint64_t img_bytes, char *err, size_t errlen);

/*
 * Remove the shadow segments of @p segment: "<segment>.shadow.<pid>", the
 * copy a daemon folds a snapshot in, which it unlinks when done -- one
 * killed mid-snapshot leaves its shadow in /dev/shm, as large as the
 * segment.  @p keep (a shadow's name, with or without its leading '/';
 * NULL: none) is left alone; with @p dead_only so is the shadow of a pid
 * that exists.  Each removal is logged at PLOG_WARN.  Returns how
 * many were removed.
 */
int snap_shadows_remove(const char *segment, const char *keep, int dead_only, plog_fn log,
                        void *log_arg);

/*
 * Open the newest snapshot of @p dir that checks out and whose LSN is at
 * least @p min_lsn; each one found corrupt is logged and the previous one
 * tried.  @return FLASH_OK (*f open); FLASH_ESNAP_NOENT; FLASH_ESYS; FLASH_ENOMEM.
 */
int snap_open_newest(const char *dir, uint64_t min_lsn, struct snap_file *f,
                     plog_fn log, void *log_arg);

/*
 * The first and last LSN of the WAL in @p dir (0, 0: empty), read without
 * any lock (no truncation).  @return a WAL_* code.
 */
int snap_wal_range(const char *dir, uint64_t *first, uint64_t *last);

/*
 * A windowed segment (engine/gen.c) is made empty again with its window:
 * snap_reclaim_get reads @p h's (1, or 0 for a one-bank segment, which
 * needs nothing), snap_reclaim_apply windows the segment @p name that was
 * just created (no other handle attached yet).  Returns a FLASH_* code.
 */
int snap_reclaim_get(flash_t *h, struct flash_reclaim_opts *ro, int *windowed);
int snap_reclaim_apply(const char *name, const struct flash_reclaim_opts *ro);

/* ---- recovery: `serve --recover` restores the newest valid snapshot
 * through rebuild.h (rebuild_run()), which checks that the WAL continues it ---- */

/*
 * For fold_start(): when the WAL in @p dir no longer starts at LSN 1,
 * seed @p f from the newest valid snapshot at or below @p max_lsn (0: any)
 * that the WAL continues and set *from to its LSN + 1.  A WAL that starts at 1 (or is empty with no
 * snapshot) seeds nothing: *from = 0.
 * @return FLASH_OK; FLASH_ESNAP_GAP (no snapshot bridges the gap); FLASH_ESYS; FLASH_ENOMEM.
 */
int snap_fold_seed(const char *dir, fold_t *f, uint64_t max_lsn, uint64_t *from);

/* ---- the snapshot thread's state ---- */

struct snap_opts {
	const char *segment;      /* the live segment (its options are read from it) */
	const char *wal_dir;
	wal_t      *wal;          /* the writer: frames are read behind it */
	uint32_t    every_s;      /* 0: 300 */
	uint64_t    wal_bytes;    /* 0: WAL_SEGMENT_DEFAULT */
	int         keep_wal;     /* remove no WAL file */
	/* MySQL's applied LSN (NULL: no applier).  Return 0 and set *lsn, or
	 * nonzero when unknown (nothing is removed then). */
	int       (*applied_lsn)(void *arg, uint64_t *lsn);
	void       *applied_arg;
	plog_fn log;          /* NULL: nothing logged */
	void       *log_arg;
	/* Removes the WAL files whose every LSN is <= @p cover (those <= @p floor
	 * are gone already) and sets *cover_out to how far it went, which may be
	 * lower: the daemon passes feed_retain_remove, where the feed's consumers
	 * hold files back.  Returns FLASH_OK or a FLASH_E* code (errno set).
	 * NULL: no WAL file is removed, as with keep_wal. */
	int       (*wal_remove)(void *arg, uint64_t cover, uint64_t floor, uint64_t *cover_out,
	                        uint32_t *removed);
	void       *wal_remove_arg;
};

struct snap_stats {
	uint64_t lsn;             /* the shadow's LSN (frames replayed up to) */
	uint64_t replayed;        /* frames replayed into the shadow */
	uint64_t snap_lsn;        /* LSN of the last snapshot written (or found at start) */
	uint64_t snapshots;       /* snapshots written */
	uint64_t wal_removed;     /* WAL files removed */
	uint64_t failures;        /* snapshot failures (0 or 1: sticky) */
	int      failed;          /* FLASH_ESNAP_FAILED once failed */
	int      last_rc;         /* SNAP_* of the last failure */
	char     last_error[512]; /* its log line */
};

typedef struct snap snap_t;

/* @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM.  Nothing is opened yet. */
int snap_open(const struct snap_opts *o, snap_t **out);

/*
 * One step: (first time: create the shadow, seeded from the newest valid
 * snapshot), replay every durable frame not replayed yet, write a snapshot
 * if one is due or @p force, then remove what may go (old snapshots, WAL
 * files).
 * @return FLASH_OK; FLASH_ESNAP_FAILED (sticky: snapshots are off; the failure was
 *         logged and counted when it happened).
 */
int snap_step(snap_t *s, int force);

void snap_stats_get(snap_t *s, struct snap_stats *out);

/* Drop the shadow (unlinked) and free @p s.  NULL is fine. */
void snap_close(snap_t *s);

/* ---- the daemon's snapshot thread ---- */

/*
 * Run snap_step() on a thread of its own: every 50 ms, and at once when
 * asked to stop.  The thread owns the shadow and runs at nice 10, below
 * the drain loop and the buyers.
 */
typedef struct snap_thread snap_thread_t;

/* @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM; FLASH_ESYS (thread creation). */
int snap_thread_start(const struct snap_opts *o, snap_thread_t **out);

/* Thread-safe; the stats as of the thread's last step. */
void snap_thread_stats(snap_thread_t *t, struct snap_stats *out);

/*
 * Stop and join.  With @p final the thread first replays up to the WAL's
 * durable LSN and writes a last snapshot (the clean stop's).  Call before
 * wal_close().  NULL is fine.  @return the last step's SNAP_* code.
 */
int snap_thread_stop(snap_thread_t *t, int final, struct snap_stats *out);

#endif /* FLASH_SNAPSHOT_H */
