/*
 * wal.h -- the write-ahead log of flashstock.
 *
 * The WAL is a directory of segment files named wal-<first LSN, 16 hex
 * digits>.log.  Each file is preallocated to a fixed size and starts with a
 * 64-byte file header; frames follow back to back, each 8-byte aligned:
 *
 *   file header (64 bytes, little endian; segment_bytes is a multiple of 4096
 *   in WAL_SEGMENT_MIN..WAL_SEGMENT_MAX, else the header is bad)
 *     0  u64 magic "FSWALSEG"      16  u64 start_lsn (LSN of its first frame)
 *     8  u32 version (1)           24  u64 segment_bytes (preallocated size)
 *    12  u32 header bytes (64)     32  i64 created (CLOCK_REALTIME ns)
 *    40  u64 incarnation of the segment the WAL belongs to (0: none recorded,
 *        a file written before identities)
 *    48  u32 durability of that segment when the file was written or last
 *        opened (WAL_DUR_*; 0: not recorded)
 *    60  u32 CRC-32C of bytes 0..59 (bytes 52..59 are zero)
 *
 * Identity.  A WAL belongs to one segment incarnation (flash_ident): the
 * files carry it, not the directory's path, so a moved directory is the same
 * WAL.  wal_open() refuses to append to files of another incarnation
 * (FLASH_EWAL_IDENT), and wal_ident() tells a daemon whose WAL it was given before
 * it reads a frame.
 *
 *   frame header (32 bytes), then the payload, then zeros up to 8-alignment
 *     0  u32 len (payload bytes)    8  u64 lsn
 *     4  u16 type                  16  u64 prev_lsn (= lsn - 1)
 *     6  u16 flags                 24  u32 CRC-32C of bytes 0..23 + payload
 *                                  28  u32 zero
 *   flags: WAL_F_COMMIT (0x1) on the first frame of a batch written when
 *   every lower LSN was durable (fdatasync had returned); a batch written
 *   while the one before was still being synced carries none.
 *   Other bits are zero; readers ignore them (writers before flags wrote 0).
 *
 * LSNs are consecutive integers (the first is 1 in a new WAL).  The unused end
 * of a file reads as zeros: the log ends where a frame header is all zero and
 * nothing but zeros follows in that file.
 *
 * Appending (group commit).  wal_append() assigns the next LSN and copies the
 * frame into a pending buffer (cheap, under a mutex).  wal_sync(lsn) returns
 * once lsn is durable: the first caller that finds no leader becomes leader,
 * takes everything pending, writes it with ONE pwrite and makes it durable
 * with ONE fdatasync (two of each only when the batch crosses into a new
 * file), publishes the durable LSN and wakes the followers; a follower whose
 * LSN the leader covered returns without any system call.  No timer, no added
 * delay: a batch is whatever arrived while the previous one was on its way to
 * disk.  A single drainer thread simply calls wal_append() for each record
 * and wal_commit() once per round.
 *
 * Writing and syncing apart.  wal_write() writes what is pending (one
 * pwrite) without waiting for a disk: its frames are in the file, where a
 * process that opens the WAL after this one died finds them (wal_open makes
 * them durable before anything else), but not yet durable.  A drainer that
 * frees its source once the frames are written calls wal_write() each round
 * and leaves wal_sync() to another thread: the drain then waits for the
 * page cache, never for fdatasync.  One writer at a time (the role passes
 * under w_mu); a sync leader writes what is pending itself when no writer
 * is at work, then syncs the newest file through its own descriptor while
 * the writer goes on.  A batch's first frame carries WAL_F_COMMIT only when
 * every lower LSN was durable as it was written.
 *
 * Failure is sticky.  A failed or short write, a failed fdatasync, or a
 * failure to create the next file puts the WAL in the failed state for the
 * rest of its life: every later append/sync/commit returns FLASH_EWAL_FAILED, the
 * durable LSN never moves again, fdatasync is never retried (a retried fsync
 * can "succeed" after the kernel dropped the dirty pages).  wal_failure()
 * tells which step failed and its errno.  Short writes: the remainder is
 * written once more (a disk that fills mid-request then reports ENOSPC); a
 * second short write fails the WAL with EIO.
 *
 * Synchronization table (one wal_t):
 *   wal_append, wal_write, wal_sync, wal_commit, wal_submit
 *                                                 any threads at once
 *   wal_durable_lsn, wal_stats, wal_failure       any thread, any time (lock-free read
 *                                                 of the durable LSN, acquire)
 *   wal_close                                     alone, after every other call returned
 * A WAL directory has one writer at a time: wal_open() takes an exclusive
 * lock (flock on <dir>/LOCK, dropped by the kernel when the process dies)
 * until wal_close(), and a truncating wal_replay() takes it for its duration;
 * either fails with FLASH_EWAL_BUSY while someone else holds it.  A replay without
 * truncation takes no lock; wal_read_durable() reads behind an open writer.
 *
 * Every system call goes through pio.h, so tests inject faults there.
 */
#ifndef FLASH_WAL_H
#define FLASH_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"

/*
 * Results: FLASH_OK or a FLASH_EWAL_* code (flashstock.h section 1: one
 * space, one name per outcome).  What the WAL's own functions mean by some:
 *   FLASH_EWAL_NOTTAIL  replay: a bad frame that is not a torn tail (valid
 *                       frames follow it, or it is before the last file), or
 *                       a gap after the first file: corruption, not truncated
 *   FLASH_EWAL_TORN     open: the last file does not end cleanly; replay
 *                       with WAL_REPLAY_TRUNCATE
 *   FLASH_EWAL_FAILED   the WAL failed earlier (sticky); see wal_failure()
 *   FLASH_ESYS          open/replay: a system call failed (errno in the report)
 *   FLASH_EWAL_STOPPED  replay: the callback returned nonzero
 *   FLASH_EWAL_BUSY     another wal_t (or a truncating replay) holds the directory
 *   FLASH_EWAL_TYPE     a well-framed frame (CRC, LSN, prev-LSN valid) of a
 *                       type this version does not know (0, or above WAL_T_MAX)
 *   FLASH_EWAL_LONG     frame length above WAL_PAYLOAD_MAX
 */


/* 1 when @p rc is a cause wal_replay() stops at in the WAL itself -- a bad
 * frame or file header, a gap, another incarnation's files, a frame of an
 * unknown type -- so what came before it was read; 0 for any other code
 * (FLASH_OK, a system call, memory, arguments, a writer holding the lock).
 * A reader of the WAL returns such a cause as it is: the code names the
 * damage, and no general code stands beside it. */
int wal_rc_is_stop(int rc);

/* The name of a flash_record type ("order", "cancel", "restock",
 * "activity", "sku", "gen", "archive", "confirm", "expire"), or @p unknown
 * for any other value. */
const char *wal_rec_type_name(uint16_t type, const char *unknown);

/*
 * How @p r moves a sku's units between available, reserved and sold
 * (d[0], d[1], d[2]; zero for every type but these).  One rule for every
 * reader that keeps units: an ORDER takes qty from available into sold, or
 * into reserved when it is a reservation (value: its pay-by time); CONFIRM
 * moves it from reserved to sold; EXPIRE, and a CANCEL that says the order
 * was an unpaid reservation (flags 2), from reserved back to available; any
 * other CANCEL from sold back to available.  Inline: the MariaDB refill
 * plug-in, which links none of the WAL, uses it too.
 */
static inline void wal_rec_moves(const struct flash_record *r, int64_t d[3])
{
	int64_t q = r->qty;
	int resv = (r->type == FLASH_REC_ORDER && r->value != 0) ||
	           (r->type == FLASH_REC_CANCEL && (r->flags & 2u)) || r->type == FLASH_REC_EXPIRE;

	d[0] = d[1] = d[2] = 0;
	switch (r->type) {
	case FLASH_REC_ORDER:
		d[0] = -q;
		d[resv ? 1 : 2] = q;
		break;
	case FLASH_REC_CANCEL:
	case FLASH_REC_EXPIRE:
		d[0] = q;
		d[resv ? 1 : 2] = -q;
		break;
	case FLASH_REC_CONFIRM:
		d[1] = -q;
		d[2] = q;
		break;
	}
}

/*
 * The fields of @p r named for what they hold in its type -- the one naming
 * `wal dump`, `feed` (text and --json) and the RabbitMQ sink's messages
 * share; api/flashstock.h section 9 (struct flash_record) lists them per
 * type.  @p json 1: JSON members `"name":value` joined by ','; 0: words
 * `name=value` joined by ' ' (activity, sku, order, user for activity_id,
 * sku_id, order_no, user_id; every other name as in JSON).  The common
 * fields (lsn, type, slot, seq) are the caller's.  A type this version does
 * not know prints every member under its struct name; type 0 (a feed's gap
 * line) prints none.
 * @return the length written (without the NUL), or 0 if it does not fit
 *         (then @p buf holds a truncated string, or nothing when @p cap is 0).
 */
size_t wal_rec_fields(char *buf, size_t cap, const struct flash_record *r, int json);

#define WAL_FILE_HDR_BYTES   64u
#define WAL_FRAME_HDR_BYTES  32u
#define WAL_F_COMMIT         0x1u  /* frame flag: first frame of a group commit (see above) */
#define WAL_PAYLOAD_MAX      (1u << 20)
#define WAL_SEGMENT_DEFAULT  (64ull << 20)
#define WAL_SEGMENT_MIN      (4096ull)
#define WAL_SEGMENT_MAX      (1ull << 30)  /* a file header asking for more is bad (FLASH_EWAL_FILE_HDR) */

/* Frame types.  0 is never valid; a frame of any other unknown type stops
 * replay with FLASH_EWAL_TYPE like any other bad frame. */
enum wal_type {
	WAL_T_RECORD = 1,       /* struct wal_rec: a flash_record and its ring seq */
	WAL_T_MAX = WAL_T_RECORD
};

/* Payload of WAL_T_RECORD: the record and its position in its slot's ring. */
struct wal_rec {
	struct flash_record wr_rec;  /* as drained from the ring */
	uint64_t            wr_seq;  /* ring seq of that slot (starts at 1) */
};

/* Bytes a frame of @p len payload bytes takes on disk. */
static inline uint64_t wal_frame_bytes(uint32_t len)
{
	return WAL_FRAME_HDR_BYTES + (((uint64_t)len + 7u) & ~(uint64_t)7u);
}

/* Durability recorded in a file header: the segment's enum flash_durability + 1. */
#define WAL_DUR_NONE   0u     /* not recorded */
#define WAL_DUR_ASYNC  1u
#define WAL_DUR_SYNC   2u

struct wal_opts {
	uint64_t segment_bytes;  /* size of each new file (default 64 MiB, WAL_SEGMENT_MIN..WAL_SEGMENT_MAX,
	                            multiple of 4096) */
	uint64_t start_lsn;      /* first LSN of a WAL created empty (default 1) */
	uint64_t incarnation;    /* the segment this WAL belongs to (default 0: keep the
	                            last file's) */
	uint32_t durability;     /* WAL_DUR_* of that segment (default WAL_DUR_NONE: keep the
	                            last file's) */
};

void wal_opts_default(struct wal_opts *o);

typedef struct wal wal_t;

/*
 * Open (creating if needed) the WAL in @p dir for appending.  An empty or
 * missing directory gets its first file at o->start_lsn.  Otherwise the last
 * file is scanned and must end cleanly (a valid frame chain followed only by
 * zeros); its frames are fdatasync'd once and count as durable.
 * Files this handle creates carry o->incarnation and o->durability (or, when
 * those are 0, the last file's).  A last file that records no incarnation, or
 * another durability, gets o's written into its header (one 64-byte pwrite
 * of the first sector, made durable with the fdatasync above).
 * @param[in]  dir  directory (created with mode 0700 if missing)
 * @param[in]  o    options; NULL means defaults
 * @param[out] out  the handle
 * @return FLASH_OK; FLASH_EWAL_BUSY (the directory is open for writing elsewhere);
 *         FLASH_EWAL_IDENT (o->incarnation is set and the last file carries
 *         another: nothing changed);
 *         FLASH_EWAL_TORN (run wal_replay with WAL_REPLAY_TRUNCATE first);
 *         FLASH_EWAL_MAGIC / FLASH_EWAL_FILE_HDR / FLASH_EWAL_GAP (last file's header);
 *         FLASH_EINVAL; FLASH_ENOMEM; FLASH_ESYS (errno is left set).
 */
int wal_open(const char *dir, const struct wal_opts *o, wal_t **out);

/*
 * The durable mark: <dir>/DURABLE, one page, mapped shared by the writer and
 * by feed readers in other processes (flashstock.h, section 10).  The WAL's
 * own durability does not depend on it; it tells readers what is durable.
 *   - wal_open() creates it if missing (never truncates or replaces it:
 *     readers keep the inode mapped across writer restarts) and publishes
 *     the durable LSN it found; every group commit publishes its last LSN.
 *   - Publish (per group commit: one store, one atomic add, one load; no
 *     system call while no reader sleeps): release store of wm_durable,
 *     then wm_seq += 1 (seq_cst),
 *     then FUTEX_WAKE on wm_seq only if wm_waiters is nonzero (seq_cst
 *     load).  A reader increments wm_waiters (seq_cst), reads wm_seq, then
 *     wm_durable (acquire), and FUTEX_WAITs on wm_seq's old value: either
 *     the writer's load sees the waiter (it wakes) or the reader's loads
 *     see the new seq and LSN (it does not sleep) -- no lost wake-up.
 *   - Every value stored in wm_durable was durable when stored, so the
 *     copy the kernel writes back (whenever) never claims too much: after
 *     a crash or reboot the file may say less than the WAL holds, never more.
 *     It can go DOWN only when a writer opens a WAL that an operator cut
 *     below it (wal_cut_after, `serve --recover --accept-loss-after`), or
 *     when that loss is recorded by wal_mark_lower().
 *   - So it is evidence: a WAL of the mark's incarnation whose readable
 *     end is below it lost frames it had made durable -- damage, never a
 *     torn tail (WAL_REPLAY_MARK).
 * Not through pio.h: no fault test of the WAL sees these calls (the
 * mark is advisory, and a failure to create it fails wal_open()).
 */
#define WAL_MARK_FILE     "DURABLE"
#define WAL_MARK_MAGIC    0x5255444c41575346ull   /* "FSWALDUR" */
#define WAL_MARK_VERSION  1u
#define WAL_MARK_BYTES    4096u

struct wal_mark {
	uint64_t wm_magic;        /* WAL_MARK_MAGIC (written once, at creation) */
	uint32_t wm_version;      /* WAL_MARK_VERSION */
	uint32_t wm_seq;          /* futex word: +1 after every publish */
	uint64_t wm_durable;      /* every LSN <= this is on disk */
	uint64_t wm_incarnation;  /* of the WAL of the writer that opened it last */
	uint32_t wm_waiters;      /* readers about to sleep or asleep on wm_seq */
	int32_t  wm_pid;          /* that writer's pid (readers: is it alive?) */
	int64_t  wm_open_ns;      /* CLOCK_REALTIME of its wal_open() */
	uint64_t wm_pad[2];
};

/*
 * Record an accepted loss in <dir>/DURABLE: if it says more than @p lsn,
 * it says @p lsn from now on (published to readers as a group commit is,
 * then made durable with msync), so the next reader of the directory does
 * not take the frames given up for frames lost.  A missing mark, or a file
 * that is not one, is left alone.  Call it with the writer lock held, after
 * the WAL was cut at @p lsn (or found ending there).
 * @param[out] was  what it said before (0: no mark; may be NULL)
 * @return FLASH_OK; FLASH_ESYS (errno set: the mark may still say more).
 */
int wal_mark_lower(const char *dir, uint64_t lsn, uint64_t *was);

/* Whose WAL is this?  (wal_ident) */
struct wal_ident {
	uint64_t wi_incarnation;  /* of the newest file (0: none recorded, or no file) */
	uint32_t wi_durability;   /* WAL_DUR_* of the newest file */
	uint32_t wi_files;        /* WAL files in the directory (0: an empty WAL) */
	uint64_t wi_first_lsn;    /* start LSN of the oldest file (0: no file) */
};

/*
 * Read the identity of the WAL in @p dir from its file headers, without
 * the writer lock and without reading a frame (safe while a writer appends).
 * A file whose header does not check out is passed over here (replay and
 * open report it).
 * @return FLASH_OK (a missing or empty directory is wi_files 0); FLASH_EWAL_IDENT
 *         (two files carry different nonzero incarnations: files of two
 *         WALs mixed; *out describes the newest); FLASH_ESYS; FLASH_ENOMEM;
 *         FLASH_EINVAL.
 */
int wal_ident(const char *dir, struct wal_ident *out);

/*
 * Is the writer lock of @p dir held by someone else right now (an open
 * wal_t, a truncating replay)?  Takes the lock and drops it at once; a
 * missing directory is not held.  For messages: the answer may be stale.
 * @return 1 held, 0 not held, -1 with errno if it cannot tell.
 */
int wal_lock_held(const char *dir);

/*
 * Commit whatever is pending (unless failed), close the file, free @p w.
 * @return FLASH_OK, or the commit's error (FLASH_EWAL_FAILED); @p w is freed either way.
 */
int wal_close(wal_t *w);

/*
 * Buffer one frame; it is not durable until a wal_sync()/wal_commit() covers
 * its LSN.  Never blocks on I/O.
 * @param[in]  type  a frame type of enum wal_type (1..WAL_T_MAX)
 * @param[in]  p     payload (@p len bytes, 1..WAL_PAYLOAD_MAX and at most what fits in a file)
 * @param[out] lsn   the frame's LSN (may be NULL)
 * @return FLASH_OK; FLASH_EWAL_FAILED (sticky); FLASH_EINVAL; FLASH_ENOMEM.
 */
int wal_append(wal_t *w, uint16_t type, const void *p, uint32_t len, uint64_t *lsn);

/* wal_append() of a WAL_T_RECORD frame. */
int wal_append_record(wal_t *w, const struct flash_record *rec, uint64_t seq, uint64_t *lsn);

/*
 * Return once every frame up to @p lsn is on disk (written and fdatasync'd),
 * leading a group commit if no other thread is.  Thread-safe.
 * @return FLASH_OK (wal_durable_lsn() >= lsn now); FLASH_EWAL_FAILED (sticky: the
 *         frame is not and will never be reported durable); FLASH_EINVAL
 *         (lsn was never handed out).
 */
int wal_sync(wal_t *w, uint64_t lsn);

/*
 * Write everything appended so far to the WAL's files, without fdatasync
 * (see "Writing and syncing apart").  Waits for a writer at work, not for a
 * sync.  @param[out] written  the highest LSN written (may be NULL)
 * @return FLASH_OK; FLASH_EWAL_FAILED (this write, or an earlier one, failed);
 *         FLASH_EINVAL.
 */
int wal_write(wal_t *w, uint64_t *written);

/* wal_sync() of everything appended so far.  Returns at once if nothing is pending. */
int wal_commit(wal_t *w);

/* wal_append() then wal_sync() of that frame. */
int wal_submit(wal_t *w, uint16_t type, const void *p, uint32_t len, uint64_t *lsn);

/* Highest LSN known durable (0 if none).  Lock-free; an acquire load. */
uint64_t wal_durable_lsn(const wal_t *w);

/* LSN the next wal_append() will get. */
uint64_t wal_next_lsn(wal_t *w);

enum wal_op {
	WAL_OP_NONE = 0,
	WAL_OP_WRITE,      /* pwrite failed or was short twice */
	WAL_OP_SYNC,       /* fdatasync failed */
	WAL_OP_CREATE      /* creating the next file failed (open, fallocate, header, rename) */
};

/*
 * The sticky failure, if any.
 * @param[out] op      which step failed (may be NULL)
 * @param[out] err_no  its errno (may be NULL)
 * @return 0 if the WAL has not failed, FLASH_EWAL_FAILED if it has.
 */
int wal_failure(wal_t *w, enum wal_op *op, int *err_no);

#define WAL_HIST_BUCKETS 32   /* bucket i counts fdatasync latencies in [2^i, 2^(i+1)) us; 0 also holds < 1 us */

struct wal_stats {
	uint64_t next_lsn;
	uint64_t durable_lsn;
	uint64_t commits;          /* group commits completed (one fdatasync each, or two across files) */
	uint64_t frames;           /* frames made durable */
	uint64_t bytes;            /* bytes written */
	uint64_t max_group;        /* most frames in one commit */
	uint64_t files_created;
	uint64_t sync_ns_total;    /* time inside fdatasync */
	uint64_t sync_ns_max;
	uint64_t sync_hist[WAL_HIST_BUCKETS];
	int      failed;           /* 0 or FLASH_EWAL_FAILED */
	int      fail_errno;
	enum wal_op fail_op;
};

void wal_stats_get(wal_t *w, struct wal_stats *out);

/* ---- replay ---- */

/*
 * Called for each valid frame with lsn >= from_lsn, in LSN order.  @p payload
 * points into a read-only mapping, 8-byte aligned, valid during the call.
 * Return nonzero to stop (wal_replay then returns FLASH_EWAL_STOPPED).
 */
typedef int (*wal_replay_fn)(void *arg, uint64_t lsn, uint16_t type,
                             const void *payload, uint32_t len);

#define WAL_REPLAY_TRUNCATE 0x1u  /* cut a torn tail so appends continue after the last good frame */
#define WAL_REPLAY_LOCKED   0x2u  /* with TRUNCATE: the caller holds the directory's writer lock
                                     (wal_dir_lock()); replay takes none of its own */
#define WAL_REPLAY_MARK     0x4u  /* <dir>/DURABLE vouches too (rep->mark_lsn): a bad frame at or
                                     below it is not a torn tail; read before the files, so a
                                     writer appending meanwhile never makes it claim too much */

struct wal_replay_report {
	int      stop;             /* FLASH_OK (clean end) or the cause of the stop */
	char     file[512];        /* file where it stopped ("" if the WAL is empty) */
	uint64_t offset;           /* byte offset in that file of the end / the bad frame */
	uint64_t first_lsn;        /* first LSN passed to the callback (0 if none) */
	uint64_t last_lsn;         /* last valid LSN seen (passed or skipped); 0 if none */
	uint64_t frames;           /* frames passed to the callback */
	uint64_t files;            /* files read */
	uint64_t truncated_bytes;  /* torn tail cut from the stop file */
	uint32_t files_removed;    /* later files removed by the truncation */
	int      err_no;           /* errno of a FLASH_ESYS */
	/* Where the readable chain ends, and what lies past it.  A torn write
	 * can only hit what follows the last completed fdatasync, and every
	 * commit's fdatasync returns before the next commit writes: so a bad
	 * frame below a later commit's first frame (WAL_F_COMMIT, found by
	 * 8-byte resynchronisation) or in a file before the last lies inside a
	 * range a commit already made durable -- corruption, not a torn tail.
	 * What no later commit vouches for (the last commit's frames) cannot be
	 * told from a torn write by the WAL alone: it counts as torn. */
	uint64_t bad_lsn;          /* the LSN the stop should have held (the first one not read;
	                              0: clean end, or a bad first file header with nothing known) */
	uint64_t after_frames;     /* valid frames found after the stop (0: nothing valid follows) */
	uint64_t after_first_lsn;  /* lowest and highest LSN among them */
	uint64_t after_last_lsn;
	uint64_t proof_lsn;        /* a WAL_F_COMMIT frame found after the stop with an LSN above
	                              bad_lsn: a later commit vouches that bad_lsn was durable
	                              (0: none found) */
	int      torn;             /* 1: the stop is a torn tail: a bad frame in the LAST file that
	                              no later commit vouches for (proof_lsn 0), above mark_lsn,
	                              at or after from_lsn (what precedes from_lsn the caller vouches for,
	                              e.g. a snapshot holds it); truncation may cut it.  Valid frames may still follow (after_frames): a
	                              batch not yet synced can reach the disk in any order of
	                              sectors; they were never acknowledged as durable */
	uint64_t gap_first;        /* FLASH_EWAL_GAP: the LSNs no file holds (gap_first..gap_last); */
	uint64_t gap_last;         /*   gap_last is 0 when from_lsn is older than the oldest file */
	uint64_t mark_lsn;         /* WAL_REPLAY_MARK: the durable LSN <dir>/DURABLE published for
	                              this WAL (0: none, or the mark is another incarnation's, or
	                              no WAL file).  last_lsn below it is damage: LSN last_lsn + 1
	                              ..mark_lsn were durable and are gone (the replay still
	                              returns FLASH_OK at a clean end: the caller refuses) */
};

/*
 * Read the WAL in @p dir from @p from_lsn (0 or 1: from its first frame) and
 * pass each valid frame to @p fn.  Verification stops at the FIRST bad frame,
 * whose cause is returned (and kept in rep->stop) with its file and byte
 * offset; nothing at or after it reaches @p fn.  Past a bad frame the rest
 * of the WAL is searched for valid frames (rep->after_*) to tell a torn tail
 * (rep->torn: a bad frame in the LAST file with nothing valid after it) from
 * corruption.  With WAL_REPLAY_TRUNCATE a torn tail is cut: the file is
 * zero-filled in place from the bad frame (no new blocks are needed, so a
 * full disk does not stop it) and made durable (fdatasync); corruption is
 * never truncated (FLASH_EWAL_NOTTAIL: valid frames follow, which a later commit
 * made durable, or the bad frame is before the last file) -- see
 * wal_cut_after() for the operator's explicit cut.  With WAL_REPLAY_MARK
 * the durable mark vouches as a later commit does (a bad frame at or
 * below rep->mark_lsn: FLASH_EWAL_NOTTAIL), and a clean end below it is left
 * for the caller to refuse (rep->last_lsn < rep->mark_lsn).
 * Files wholly before from_lsn are skipped unread.
 * @return FLASH_OK (clean end); the stop cause (FLASH_EWAL_ZERO_LEN, FLASH_EWAL_SHORT,
 *         FLASH_EWAL_PAST_END, FLASH_EWAL_LONG, FLASH_EWAL_MAGIC, FLASH_EWAL_FILE_HDR, FLASH_EWAL_CRC,
 *         FLASH_EWAL_LSN, FLASH_EWAL_PREV, FLASH_EWAL_TYPE, FLASH_EWAL_GAP) whether or not it was truncated;
 *         FLASH_EWAL_NOTTAIL (truncation refused; rep->stop has the cause);
 *         FLASH_EWAL_BUSY (truncation asked while a writer holds the directory:
 *         nothing was read);
 *         FLASH_EWAL_STOPPED; FLASH_ESYS (rep->err_no); FLASH_EINVAL; FLASH_ENOMEM.
 *         A missing or empty directory is a clean, empty WAL.
 */
int wal_replay(const char *dir, uint64_t from_lsn, wal_replay_fn fn, void *arg,
               unsigned flags, struct wal_replay_report *rep);

/*
 * Take / drop the writer lock of @p dir (the lock wal_open() holds), e.g.
 * for a rebuild that replays, cuts and must not meet a writer meanwhile.
 * @return the lock's fd (>= 0); FLASH_EWAL_BUSY (held elsewhere); FLASH_ESYS (errno).
 */
int wal_dir_lock(const char *dir);
void wal_dir_unlock(int fd);

/*
 * Called by wal_cut_after() for each valid frame it drops, in file order.
 */
typedef wal_replay_fn wal_drop_fn;

/*
 * The operator's explicit cut ("accept the loss of everything after @p
 * lsn"): the WAL in @p dir must stop (bad frame, bad file header or a gap)
 * with @p lsn as its last readable LSN (rep->bad_lsn == lsn + 1), or end
 * cleanly at @p lsn (then nothing is done).  Every valid frame past the
 * stop (found by resynchronisation, in the stop file and in later files) is
 * passed to @p drop first, then later files are removed (newest first,
 * directory fsync) and the stop file is zero-filled in place from the stop
 * (fdatasync), or removed when its header is the stop.  Crash at any point
 * and run it again with the same @p lsn: same result.
 * @param[in] flags  0, or WAL_REPLAY_LOCKED (the caller holds wal_dir_lock())
 * @return FLASH_OK; FLASH_EINVAL (@p lsn is not the last readable LSN: rep
 *         describes the WAL, nothing changed); FLASH_EWAL_BUSY; FLASH_ESYS; FLASH_ENOMEM.
 */
int wal_cut_after(const char *dir, uint64_t lsn, wal_drop_fn drop, void *arg, unsigned flags,
                  struct wal_replay_report *rep);

/*
 * Read the frames from @p from_lsn through the durable LSN of @p w (taken
 * when the call starts) while @p w keeps appending, e.g. for an applier in
 * the daemon that owns @p w.  Durable frames never change, so this is safe
 * at any time from any thread; it never truncates and never passes a frame
 * that is not durable yet.  Frames with lsn < from_lsn are skipped.
 * @return FLASH_OK (every frame through that durable LSN was passed, rep->last_lsn
 *         says up to where; nothing to read is FLASH_OK too); FLASH_EWAL_STOPPED; a
 *         stop cause if a durable frame is bad (corruption); FLASH_EWAL_GAP
 *         (from_lsn removed); FLASH_ESYS; FLASH_EINVAL.
 */
int wal_read_durable(wal_t *w, uint64_t from_lsn, wal_replay_fn fn, void *arg,
                     struct wal_replay_report *rep);

/*
 * Remove the files of @p dir whose frames all have LSN < @p lsn (a file goes
 * when the next file starts at or before @p lsn), oldest first, then fsync
 * the directory.  The last file is never removed.  Call it only for LSNs that
 * every consumer (snapshot, MySQL applier) has covered; replay from an LSN
 * before @p lsn then fails with FLASH_EWAL_GAP.  Safe while a wal_t appends (it
 * writes only the last file); not while wal_replay() reads @p dir.
 * @param[out] removed  files removed (may be NULL)
 * @return FLASH_OK; FLASH_ESYS (errno set; files removed so far stay removed);
 *         FLASH_EINVAL; FLASH_ENOMEM.
 */
int wal_remove_before(const char *dir, uint64_t lsn, uint32_t *removed);

/*
 * Encode one frame into @p dst (wal_frame_bytes(len) bytes, zero padding
 * included).  For tests that forge frames and for tools.
 */
void wal_frame_encode(void *dst, uint16_t type, uint64_t lsn, uint64_t prev_lsn,
                      const void *p, uint32_t len);

/* Recompute the CRC of an encoded frame in place (tests forge fields, then fix the CRC). */
void wal_frame_reseal(void *frame);

#endif /* FLASH_WAL_H */
