/*
 * rebuild.h -- `serve --recover` and `wal verify`: what a WAL directory can
 * rebuild, and the rebuild itself, atomic.
 *
 * The check (rebuild_check()).  Recovery needs the newest valid snapshot
 * (if any) and every WAL frame after it, contiguous and readable.  The
 * check names the first thing that stands in the way:
 *   - a missing LSN range: the WAL starts after LSN 1 and no snapshot
 *     covers what is before it (the first file deleted), a file missing
 *     between two others, or the WAL starting after the snapshot's LSN + 1;
 *   - corruption: a bad frame (or file header) that a later commit vouches
 *     for, or that sits before the last file (wal.h: rep.torn is 0) -- its
 *     LSN, and how many valid records follow it;
 *   - a snapshot past the WAL's end (the WAL lost frames the snapshot has:
 *     its end was cut, or it was restored from an older copy);
 *   - a WAL that ends below its durable mark (DIR/DURABLE, wal.h): the
 *     frames through the mark were made durable and acknowledged, and are
 *     gone (zeroed, cut, an older copy) -- a bad frame at or below the mark
 *     is corruption the same way, never a torn tail;
 *   - otherwise the WAL is usable, perhaps with a torn tail (cut at rebuild).
 * Each of the first four refuses a rebuild; the operator may accept the
 * loss explicitly, by LSN (rebuild_opts.accept_after, `--accept-loss-after`),
 * which must be exactly the last LSN that can be kept (c.keep_lsn): the WAL
 * is cut after it (wal_cut_after(), every dropped record logged with its
 * order number), snapshots past it are set aside as snap-<LSN>.dropped,
 * and DIR/DURABLE is lowered to it (wal_mark_lower()), so the next start
 * finds a whole WAL, not the damage just accepted.
 * A missing start of the history cannot be accepted that way.
 *
 * The rebuild (rebuild_run()) is atomic.  The segment is built under a
 * temporary name, "<name>.recover-<pid>", from the snapshot (or, without
 * one, empty with the options of the freshly created, empty segment <name>)
 * plus the WAL after it, its memory reserved first (fallocate on the shm
 * object: a full /dev/shm is an error, never a SIGBUS later), and takes the
 * real name only when complete: POSIX shm has no rename, but on Linux, the
 * only target (glibc's shm_open(name) is open("/dev/shm/<name>")), rename(2)
 * inside /dev/shm is atomic -- an observer sees the old name (absent, or the
 * empty placeholder) or the complete segment, never a half-built one; with
 * no placeholder, renameat2(RENAME_NOREPLACE) never replaces one created
 * meanwhile.  A failed rebuild destroys the temporary segment; one killed
 * (kill -9) leaves it, and the next rebuild of <name> removes every
 * "<name>.recover-<pid>" whose process is gone before it starts.  A power
 * loss takes /dev/shm with it.  So a rebuild, killed anywhere and run again,
 * gives the same segment.  The WAL directory's writer lock is held from the
 * check to the rename: no serve and no other rebuild meet it.
 *
 * Little changes on disk: a torn tail (or, when accepted, a corrupt
 * tail) is cut in place (zeros over preallocated blocks, no free space
 * needed), before the build, and an accepted loss lowers DIR/DURABLE; the
 * rest of the WAL is only read.
 *
 * A process attached to the empty placeholder keeps that object (it is
 * unlinked by the rename): attach after the rebuild.
 */
#ifndef FLASH_REBUILD_H
#define FLASH_REBUILD_H

#include <stdint.h>

#include "snapshot.h"
#include "wal.h"

enum rebuild_verdict {
	REBUILD_OK = 0,     /* usable as it is */
	REBUILD_TORN,       /* usable; a torn tail after keep_lsn is cut at rebuild */
	REBUILD_CORRUPT,    /* a bad frame or file header that is not a torn tail */
	REBUILD_MISSING,    /* LSNs miss_first..miss_last are in no file */
	REBUILD_AHEAD,      /* the newest valid snapshot is past the WAL's end */
	REBUILD_NOSNAP,     /* snapshots exist, none is valid */
	REBUILD_EIO,        /* the WAL or a snapshot could not be read (err_no) */
	REBUILD_SHORT       /* the WAL ends cleanly below its durable mark: LSNs
	                       miss_first..miss_last were durable and are in no file */
};

struct rebuild_check {
	int      verdict;          /* enum rebuild_verdict */
	uint64_t snap_lsn;         /* newest valid snapshot (0: none) */
	char     snap_file[4200];  /* its path */
	uint64_t from_lsn;         /* the first LSN recovery needs (snap_lsn + 1, or 1) */
	uint64_t wal_last;         /* the last readable LSN (0: none) */
	uint64_t keep_lsn;         /* CORRUPT, MISSING, AHEAD, SHORT, TORN: the last LSN that can be kept
	                              (what --accept-loss-after must name) */
	int      can_accept;       /* the loss may be accepted (not a missing start) */
	uint64_t miss_first;       /* MISSING, SHORT: the range */
	uint64_t miss_last;
	int      err_no;           /* EIO */
	struct wal_replay_report rep;  /* the WAL read from from_lsn */
	char     msg[4096];          /* one line: what is wrong and where ("" when OK) */
};

/*
 * Check the WAL directory @p dir (snapshots included) for a rebuild; see
 * the file comment.  Reads only.  Corrupt snapshots are logged through @p
 * log (may be NULL).
 * @return c->verdict.
 */
int rebuild_check(const char *dir, struct rebuild_check *c, plog_fn log, void *log_arg);

struct rebuild_opts {
	const char *segment;       /* the name to rebuild */
	const char *wal_dir;
	int         accept_loss;   /* accept the loss of every LSN after accept_after */
	uint64_t    accept_after;
	plog_fn log;           /* lines at enum plog_level levels (may be NULL) */
	void       *log_arg;
};

struct rebuild_result {
	uint64_t snap_lsn;         /* the snapshot restored from (0: none) */
	uint64_t applied;          /* records applied after it */
	uint64_t present;          /* records the segment had already (FLASH_EEXIST) */
	uint64_t last_lsn;         /* the last LSN the segment reflects */
	uint64_t dropped;          /* records dropped by a cut (torn or accepted) */
	int      rc;               /* why it failed: one FLASH_E* code, a FLASH_EWAL_* one when
	                              the WAL is the cause */
};

/*
 * Rebuild segment @p o->segment from the WAL (and snapshot) in
 * @p o->wal_dir, atomically (see the file comment).  The segment must be
 * absent (then a snapshot gives its options) or present and empty.
 * @return 0: the segment exists, complete; -1: nothing changed but a cut
 *         the log names (r->rc: FLASH_EEXIST not empty, FLASH_ENOSEG absent
 *         without a snapshot, FLASH_EWAL_BUSY the WAL is in use, FLASH_ESYS
 *         it cannot be read, FLASH_EWAL_NOTTAIL / FLASH_EWAL_GAP corrupt or
 *         missing, another FLASH_EWAL_* code when it changed meanwhile,
 *         FLASH_ECORRUPT a snapshot or the WAL refused otherwise, FLASH_ENOMEM
 *         no room in /dev/shm, FLASH_EINVAL a wrong accept_after, another code
 *         from the engine).
 */
int rebuild_run(const struct rebuild_opts *o, struct rebuild_result *r);

#endif /* FLASH_REBUILD_H */
