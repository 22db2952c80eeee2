/*
 * flashstock.h -- the public interface of the flashstock inventory engine.
 *
 * flashstock keeps flash-sale stock, per-user limits, one-time tokens,
 * orders, request ids and leased locks in one POSIX shared-memory segment.
 * Application processes on the same machine attach to the segment and place
 * orders directly, lock-free, without a network round trip.
 *
 * Divisions of this header:
 *   1. Result codes            flash_strerror()
 *   2. Segments                flash_seg_create(), flash_seg_destroy_checked(),
 *                              flash_seg_destroy()
 *   3. Handles                 flash_open(), flash_close(), flash_recover()
 *   4. Catalog                 flash_activity_add(), flash_sku_add()
 *   5. Orders                  flash_order(), flash_order_many(), flash_cancel(),
 *                              flash_confirm(), flash_expire(), flash_expire_due(),
 *                              flash_restock()
 *   6. Tokens                  flash_token_issue(), flash_token_redeem()
 *   7. Leased locks            flash_lock_acquire(), _renew(), _release()
 *   8. Reading state           flash_sku_get(), flash_order_get(), flash_stats_get(), ...
 *   9. Records                 flash_record, flash_durability_get(), flash_ident_get()
 *  10. Order feed              flash_feed_open(), flash_feed_next(), flash_feed_commit()
 *  11. Reclamation             flash_seg_reclaim_set(), flash_gen_get()
 *
 * The consumer protocol -- draining the rings, marking records durable,
 * replaying the WAL, snapshot images -- is the daemon's, not an
 * application's: flashstock_consumer.h, in the static library only.
 *
 * Caveats (read these first)
 * --------------------------
 *  - A handle (flash_t) belongs to the thread that opened it.  Each thread
 *    that places orders opens its own handle: a handle owns one slot of the
 *    segment's process table, one journal and one record ring, and all three
 *    are single-writer.  Handles are cheap; the number of handles attached at
 *    once is bounded by the segment's `max_procs`.  The rule is enforced:
 *    every call made on a handle from another thread returns
 *    FLASH_EWRONG_THREAD and changes nothing (read-only handles included).
 *    The one exception is flash_close(), which any thread of the opening
 *    process may call once the owner has made its last call (a finalizer,
 *    or cleanup after a thread that ended without closing its handle).
 *  - A handle is not usable after fork().  Every call made on a handle from a
 *    process other than the one that opened it returns FLASH_EFORK and changes
 *    nothing; the child opens its own handle.
 *  - A process may die at any instruction.  The operations it had in flight
 *    are rolled back (or, past their commit point, forward) by flash_recover(),
 *    which every flash_open() also runs.  Units, quota and tokens held by a
 *    dead operation return exactly once.
 *  - A segment can be destroyed under attached handles
 *    (flash_seg_destroy_checked() with FLASH_DESTROY_FORCE, `flashstock
 *    destroy --force`).  From then on every call that writes answers
 *    FLASH_EDESTROYED and changes nothing, instead of acknowledging into
 *    memory that no daemon drains; calls that only read still answer.
 *    Close the handle.
 *  - Every call returns 0 (FLASH_OK) or a negative FLASH_E* code; there is no
 *    global errno.  The codes are one space for the whole project: -1..-39
 *    the engine, -40..-49 the MySQL applier, -50..-59 reservations, -100..-129
 *    the WAL, -130..-149
 *    snapshots; flash_strerror() and flash_rcname() name every one, so a
 *    value means one outcome wherever it was returned (test error_space).  Output parameters are written only on success unless the
 *    function says otherwise.  Ids are nonzero: an id of 0 (activity, sku,
 *    user, order number) is FLASH_EINVAL, an unknown nonzero one
 *    FLASH_ENOT_FOUND.
 *  - Times: activity windows are CLOCK_REALTIME nanoseconds since the epoch;
 *    token TTLs and lock leases are measured on CLOCK_MONOTONIC and carry their
 *    unit in the parameter name.
 */
#ifndef FLASHSTOCK_H
#define FLASHSTOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLASH_VERSION_MAJOR 0
#define FLASH_VERSION_MINOR 1

/* What libflashstock.so exports: exactly the functions of this header, each
 * marked FLASH_API; the library is built with every other symbol hidden
 * (test library_exports_exactly_the_header). */
#define FLASH_API __attribute__((visibility("default")))

/* ------------------------------------------------------------------------
 * 1. Result codes
 * ------------------------------------------------------------------------ */

#define FLASH_OK               0   /* success */
#define FLASH_ESOLD_OUT       -1   /* not enough stock for this quantity */
#define FLASH_ELIMIT          -2   /* the user holds the activity's limit already */
#define FLASH_ENOT_STARTED    -3   /* the activity's window has not opened */
#define FLASH_EENDED          -4   /* the activity's window has closed */
#define FLASH_ENOT_FOUND      -5   /* unknown activity, sku, order or lock */
#define FLASH_EBAD_TOKEN      -6   /* token missing, unknown, expired, reused or for other goods */
#define FLASH_EDUPLICATE      -7   /* request id seen before; the first outcome is returned */
#define FLASH_EFULL           -8   /* a fixed-capacity table of the segment is full */
#define FLASH_EINVAL          -9   /* bad argument (NULL, zero quantity, bad option, ...) */
#define FLASH_EDURABILITY    -10   /* the WAL failed; nothing more is acknowledged */
#define FLASH_EEXIST         -11   /* segment, activity or sku already exists */
#define FLASH_ENOSEG         -12   /* no segment of that name */
#define FLASH_EOWNER         -13   /* attach: segment owned by another user */
#define FLASH_EMODE          -14   /* attach: segment mode is not 0600/0660 */
#define FLASH_ESIZE          -15   /* attach: segment size differs from its header */
#define FLASH_EMAGIC         -16   /* attach: not a flashstock segment */
#define FLASH_EVERSION       -17   /* attach: layout version not supported */
#define FLASH_ECHECKSUM      -18   /* attach: header checksum mismatch */
#define FLASH_ELAYOUT        -19   /* attach: region table out of bounds or overlapping */
#define FLASH_ECORRUPT       -20   /* an index read from the segment is out of bounds */
#define FLASH_EREADONLY      -21   /* write call on a read-only handle */
#define FLASH_EFORK          -22   /* handle used in a process other than its opener */
#define FLASH_ECANCELLED     -23   /* order already cancelled: no units returned */
#define FLASH_ELOCKED        -24   /* lock held by another live owner */
#define FLASH_ENOT_OWNER     -25   /* lock renew/release by a caller that does not hold it */
#define FLASH_EBUSY          -26   /* record ring full (no consumer), request in flight,
                                      or the consumer claim held by another live handle */
#define FLASH_ENOPROC        -27   /* process table full: too many open handles */
#define FLASH_EPERM          -28   /* the operating system refused access */
#define FLASH_ENOMEM         -29   /* out of memory (segment too large for /dev/shm?) */
#define FLASH_ESYS           -30   /* another system call failure */
#define FLASH_EWRONG_THREAD  -31   /* handle used from a thread other than its opener */
#define FLASH_ENOTREG        -32   /* attach: the name is not a regular file (a FIFO,
                                      directory or device planted under it) */
#define FLASH_EFATE_UNKNOWN  -33   /* sync: the operation is done in memory but its
                                      record was not durable within the wait bound;
                                      its fate is not known yet: wait again with
                                      flash_durable_wait(), or look it up by order
                                      number (res->order_no) once the daemon runs */
#define FLASH_EREQ_EXPIRED   -34   /* request id older than the window: its first
                                      outcome is no longer remembered; look the order
                                      up (flashstock order --request-id, MariaDB).
                                      Nothing was changed (section 11) */
#define FLASH_EARCHIVED      -35   /* order archived: its activity was reclaimed
                                      (flash_archive); the order is in MariaDB and
                                      the WAL (`flashstock order --mysql`).  From
                                      flash_activity_add: that id's activity was
                                      archived, and ids are not reused */
#define FLASH_ENOT_ENDED     -36   /* flash_archive: the activity has not ended yet */
#define FLASH_EDESTROYED     -37   /* the segment was destroyed (flash_seg_destroy_checked,
                                      `flashstock destroy`): no daemon drains it any
                                      more, so nothing is acknowledged into it; nothing
                                      changed.  Close the handle (open the name again
                                      if a new segment was made under it) */
/* -40 .. -49: the MySQL applier (persist/mysql/mysql_apply.h); named here so one
 * flash_strerror() describes every code the project returns */
#define FLASH_EMYSQL_RETRY   -40   /* MySQL down, slow or busy: nothing applied; retry */
#define FLASH_EMYSQL         -41   /* MySQL refused a statement for another reason */
#define FLASH_EMYSQL_CONFIG  -42   /* bad MySQL URL or option file, or access denied */
#define FLASH_EMYSQL_GAP     -43   /* records missing between the applied LSN and a batch */
/* -50 .. -59: reservations (section 5: flash_confirm(), flash_expire()) */
#define FLASH_EEXPIRED       -50   /* the reservation was not paid in time: it expired,
                                      its units and (per the activity) its limit slot
                                      went back.  Nothing changed by this call, except
                                      that a reservation found past its deadline is
                                      expired first */
#define FLASH_ENOT_DUE       -51   /* flash_expire: the reservation's pay-by time has
                                      not come; nothing changed */
#define FLASH_ECONFIRMED     -52   /* flash_expire: the order is ACTIVE (paid, or never
                                      a reservation): it does not expire; nothing changed */
#define FLASH_ESTALE         -53   /* flash_order: the activity's or the sku's terms
                                      changed since the version the buyer saw
                                      (flash_order_req.activity_version,
                                      sku_version); nothing taken, token and
                                      request id untouched: show the new terms.
                                      flash_activity_update: the terms are no
                                      longer at the version the change named */
/* -60 .. -69: the order feed (section 10) */
#define FLASH_ETIMEOUT       -60   /* feed: no durable record arrived within wait_ms */
#define FLASH_ELOST          -61   /* feed: WAL retention removed records the consumer
                                      had not committed, and no refill source is set */
#define FLASH_EAHEAD         -62   /* feed: the consumer's position is past the durable
                                      end of a WAL whose writer runs (the WAL was cut
                                      or replaced) */
#define FLASH_EFEED_IDENT    -63   /* feed: the WAL belongs to another segment
                                      incarnation than the one the consumer registered on */
#define FLASH_EREFILL        -64   /* feed: the refill source cannot cover the lost range
                                      (MariaDB's applied LSN is below it) */
/* -70 .. -79: the RabbitMQ sink (persist/feed/amqp_sink.h, `flashstock feed --to`) */
#define FLASH_EAMQP_RETRY    -70   /* broker down, slow, or it nacked: re-send from the
                                      confirmed position after a reconnect */
#define FLASH_EAMQP          -71   /* the broker refused a declare (e.g. another type) */
#define FLASH_EAMQP_CONFIG   -72   /* bad AMQP URL or option, or login refused */

/* -80 .. -89: leases from the central database (persist/mysql/central.h, issue 14) */
#define FLASH_EFENCED        -80   /* lease: the box's epoch is stale or fenced: MariaDB
                                      refused the statement, nothing changed */
#define FLASH_ELEASE         -81   /* lease: unknown lease, not open, or a return it
                                      cannot cover (more than it holds) */

/* -100 .. -129: the write-ahead log.  `flashstock wal verify` and the daemon
 * report them. */
#define FLASH_EWAL_ZERO_LEN    -101   /* frame length 0 in a header that is not all zero, or data after it */
#define FLASH_EWAL_SHORT       -102   /* frame length shorter than its type's payload */
#define FLASH_EWAL_PAST_END    -103   /* frame (or its header) runs past the end of the file */
#define FLASH_EWAL_LONG        -104   /* frame length above the maximum */
#define FLASH_EWAL_MAGIC       -105   /* WAL file header: bad magic */
#define FLASH_EWAL_FILE_HDR    -106   /* WAL file header: bad version, size, CRC, or start LSN != its name */
#define FLASH_EWAL_CRC         -107   /* frame CRC-32C mismatch */
#define FLASH_EWAL_LSN         -108   /* frame LSN is not the previous one + 1 */
#define FLASH_EWAL_PREV        -109   /* frame prev_lsn is not lsn - 1 */
#define FLASH_EWAL_GAP         -110   /* WAL files not contiguous, or the requested LSN is gone */
#define FLASH_EWAL_NOTTAIL     -111   /* a bad frame that is not a torn tail: corruption */
#define FLASH_EWAL_TORN        -112   /* the last WAL file does not end cleanly */
#define FLASH_EWAL_FAILED      -113   /* the WAL failed earlier (sticky) */
#define FLASH_EWAL_STOPPED     -117   /* replay: the callback stopped it */
#define FLASH_EWAL_BUSY        -118   /* another writer holds the WAL directory */
#define FLASH_EWAL_TYPE        -119   /* a well-framed frame of an unknown type */
#define FLASH_EWAL_IDENT       -120   /* the WAL's files belong to another segment incarnation */
/* -130 .. -149: snapshots */
#define FLASH_ESNAP_CORRUPT    -132   /* snapshot file: bad magic, version, size, offsets or CRC */
#define FLASH_ESNAP_NOENT      -133   /* no (valid) snapshot */
#define FLASH_ESNAP_GAP        -134   /* the WAL does not continue the snapshot */
#define FLASH_ESNAP_FAILED     -137   /* snapshots failed earlier (sticky) */
#define FLASH_ESNAP_SEGMENT    -138   /* the segment or shadow refused */
#define FLASH_ESNAP_NOTEMPTY   -139   /* recover: the segment exists and is not empty */

/**
 * Describe a result code.
 * @param[in] rc  a value returned by any flash_* call
 * @return a static, NUL-terminated string; never NULL (unknown codes give
 *         "unknown result code").
 */
FLASH_API const char *flash_strerror(int rc);

/**
 * The symbolic name of a result code ("FLASH_ESOLD_OUT"), for logs and JSON.
 * @return a static string; "FLASH_E?" for an unknown code.
 */
FLASH_API const char *flash_rcname(int rc);

/* ------------------------------------------------------------------------
 * 2. Segments
 * ------------------------------------------------------------------------ */

/** Durability of acknowledgements (the WAL daemon gives them meaning). */
enum flash_durability {
	FLASH_DURABILITY_ASYNC = 0,  /* acknowledge at once; the WAL trails */
	FLASH_DURABILITY_SYNC  = 1   /* acknowledge after the record is fdatasync'd */
};

/** Capacities and permissions of a new segment.  Start from flash_seg_opts_default(). */
struct flash_seg_opts {
	uint32_t max_activities;  /* catalog: activities */
	uint32_t max_skus;        /* catalog: (activity, sku) pairs */
	uint32_t max_shards;      /* stock slots over all skus */
	uint32_t max_users;       /* per-user limit entries (one per held limit slot) */
	uint32_t max_tokens;      /* live + recently used tokens */
	uint32_t max_orders;      /* order records (numbers 1..max_orders); each handle takes
	                             numbers 64 at a time, so up to 63 per handle may go
	                             unused when the table fills: size it with room */
	uint32_t max_requests;    /* request ids remembered */
	uint32_t max_locks;       /* leased lock names */
	uint32_t max_procs;       /* handles attached at once */
	uint32_t ring_records;    /* records per handle ring (power of two) */
	uint32_t mode;            /* 0600 (default) or 0660 */
	int64_t  gid;             /* group for mode 0660; -1 keeps the creator's */
	uint32_t durability;      /* enum flash_durability */
};

/*
 * The ranges of the options, one definition for the engine and every tool:
 * each table capacity 1..FLASH_CAP_MAX, max_procs 1..FLASH_PROCS_MAX,
 * ring_records a power of two in FLASH_RING_MIN..FLASH_RING_MAX.
 */
#define FLASH_CAP_MAX   (1u << 26)
#define FLASH_PROCS_MAX 4095u
#define FLASH_RING_MIN  16u
#define FLASH_RING_MAX  (1u << 24)

/** Fill @p o with the defaults (sizes fit the demo; about 200 MiB of shm). */
FLASH_API void flash_seg_opts_default(struct flash_seg_opts *o);

/**
 * The bytes of shared memory a segment with options @p o needs: what
 * flash_seg_create() reserves in /dev/shm (for a message, or to plan).
 * @param[in]  o      options (NULL: the defaults)
 * @param[out] bytes  the segment's size
 * @return FLASH_OK; FLASH_EINVAL (NULL @p bytes, or options
 *         flash_seg_create() refuses).
 */
FLASH_API int flash_seg_size(const struct flash_seg_opts *o, uint64_t *bytes);

/**
 * Create a segment.  The object is created with O_EXCL (a name collision fails,
 * never reuses), then fchmod'ed to exactly o->mode whatever the umask.
 * @param[in] name  POSIX shm name, "/flash-x" or "flash-x" (1..200 chars, no '/' inside)
 * @param[in] o     options; NULL means the defaults
 * Every byte is reserved at create (posix_fallocate on the object), so a
 * segment larger than free /dev/shm fails here with FLASH_ENOMEM instead of
 * killing its users with SIGBUS later; flash_seg_size() says how much was
 * needed.
 * @return FLASH_OK; FLASH_EINVAL (bad name, capacity 0 or too large, ring not a
 *         power of two, mode not 0600/0660); FLASH_EEXIST (name taken);
 *         FLASH_EPERM; FLASH_ENOMEM (not that much free shared memory, or
 *         ftruncate/mmap failed); FLASH_ESYS.
 * @note Safe from any process; creates nothing on failure.
 */
FLASH_API int flash_seg_create(const char *name, const struct flash_seg_opts *o);

/**
 * Remove the segment's name (shm_unlink), and nothing else: no check, no
 * mark.  Attached handles keep working on the old mapping until they close,
 * and whatever they acknowledge there reaches no WAL once its daemon is
 * gone.  This is the primitive for a segment private to the caller (the
 * daemon's snapshot shadow drops its name at once; a half-made rebuild is
 * removed).  To end a segment that others may use, call
 * flash_seg_destroy_checked().
 * @return FLASH_OK; FLASH_EINVAL (bad name); FLASH_ENOSEG; FLASH_EPERM; FLASH_ESYS.
 */
FLASH_API int flash_seg_destroy(const char *name);

#define FLASH_DESTROY_FORCE     0x1u  /* go on despite attached handles and undrained records */
#define FLASH_DESTROY_KEEP_NAME 0x2u  /* mark the segment destroyed, wait, report; keep the
                                         name (the caller drains the rings, then calls again) */
#define FLASH_DESTROY_LIST_MAX  64u   /* slots a report lists one by one */

/** One process-table slot in a destroy report. */
struct flash_destroy_slot {
	uint32_t slot;        /* process-table slot */
	int32_t  pid;         /* the pid the slot names (0: free) */
	uint32_t alive;       /* 1: that process runs -- the segment is attached */
	uint32_t open;        /* 1: it has an operation open (alive ones only) */
	uint64_t records;     /* records in the slot's ring and in no WAL yet */
};

/** What flash_seg_destroy_checked() found (and, if it went on, gave up). */
struct flash_destroy_report {
	int32_t  consumer_pid;   /* the daemon serving the segment; 0: none */
	uint32_t attached;       /* slots held by running processes (the daemon's too) */
	uint64_t undrained;      /* records in the rings, in no WAL yet: lost if it goes */
	uint32_t in_flight;      /* operations still open in running processes when it
	                            was counted (FORCE waited for them up to 2 s) */
	uint32_t n_slots;        /* entries of slots[]: each slot attached or holding records */
	uint32_t more_slots;     /* such slots beyond FLASH_DESTROY_LIST_MAX, not listed */
	int32_t  unreadable;     /* nonzero: the segment could not be checked (the attach
	                            code, e.g. FLASH_EMAGIC); the figures above are 0 */
	uint32_t marked;         /* 1: the segment is marked destroyed */
	uint32_t unlinked;       /* 1: its name is gone */
	struct flash_destroy_slot slots[FLASH_DESTROY_LIST_MAX];
};

/**
 * Destroy a segment without losing what its handles were told: the call
 * refuses while anything still needs the segment, and an attached process
 * learns that it is gone.
 *
 * Without FLASH_DESTROY_FORCE it refuses (FLASH_EBUSY, nothing changed)
 * while a daemon serves the segment (its consumer claim is live), a running
 * process holds a slot of its process table, or a record ring holds records
 * the consumer has not made durable -- they are in no WAL, and a segment
 * without its name is never drained again.  @p rep says which pids and how
 * many records, per slot.
 *
 * With FLASH_DESTROY_FORCE it goes on despite attached processes and
 * undrained records -- never despite a live daemon (FLASH_EBUSY: stop it
 * first; it drains everything when it stops).  @p rep then lists exactly
 * what is given up: the records per slot.
 *
 * Either way, before the name goes, a word in the segment's header marks it
 * destroyed: from then on every write call on any handle of it answers
 * FLASH_EDESTROYED (a buyer's next order included), except the consumer's,
 * so a daemon that attaches to a segment kept by FLASH_DESTROY_KEEP_NAME can
 * still drain its rings into the WAL (flash_consumer_claim() is allowed on a
 * destroyed segment).  The check and the mark are ordered like an attach's
 * slot claim and its first call (a full barrier on each side), so a process
 * attaching meanwhile is either seen by the check or refused by the mark.
 * With FORCE, operations already past their entry check when the mark landed
 * are waited for (up to 2 s; rep->in_flight says how many were still open:
 * a stopped process's records, if it ever finishes, go nowhere).
 *
 * A name that does not hold a readable segment (a FIFO, a half-made or
 * corrupt segment) cannot be checked: refused with the attach code, which
 * @p rep->unreadable repeats; with FORCE the name is removed anyway.
 *
 * @param[in]  name   segment name
 * @param[in]  flags  0, or FLASH_DESTROY_FORCE, optionally with FLASH_DESTROY_KEEP_NAME
 * @param[out] rep    what was found (may be NULL); written on every return
 *                    but FLASH_EINVAL
 * @return FLASH_OK (destroyed; with KEEP_NAME: marked); FLASH_EBUSY (refused,
 *         see @p rep); FLASH_ENOSEG; an attach code (not checkable, see
 *         above); FLASH_EINVAL (bad name or flags); FLASH_EPERM (the caller
 *         may not write the segment); FLASH_ESYS.
 * @note Blocking only with FORCE (the wait above); O(max_procs) otherwise.
 */
FLASH_API int flash_seg_destroy_checked(const char *name, unsigned flags, struct flash_destroy_report *rep);

/* ------------------------------------------------------------------------
 * 3. Handles
 * ------------------------------------------------------------------------ */

typedef struct flash flash_t;

#define FLASH_RDONLY  0x1u  /* map read-only; for monitors.  No slot is taken. */

/**
 * Attach to a segment.  Validates, in this order, and fails with a distinct
 * code for each: the object exists (FLASH_ENOSEG), it is a regular file
 * (FLASH_ENOTREG: opened with O_NONBLOCK, so a FIFO planted under the name
 * never blocks the caller), its owner is this user -- or, for a 0660
 * segment, its group is one of the caller's groups (FLASH_EOWNER), its mode
 * is exactly 0600 or 0660 (FLASH_EMODE), its size is
 * at least a header (FLASH_ESIZE), magic (FLASH_EMAGIC), layout version
 * (FLASH_EVERSION), header checksum (FLASH_ECHECKSUM), size equals the
 * header's (FLASH_ESIZE), region table in bounds and disjoint (FLASH_ELAYOUT).
 * The mode must be the one the segment was created with: a 0600 segment
 * widened to 0660 afterwards is FLASH_EMODE too.
 * A writable handle then claims a process-table slot (FLASH_ENOPROC when
 * full) and runs flash_recover() once.  The slot records the process's
 * identity, its pid and its start time (/proc/PID/stat); a process that
 * cannot read its own (no free file descriptor, /proc not mounted) is
 * refused with FLASH_ESYS and nothing is changed, since a slot without an
 * identity would later be taken for dead while it runs.  Its sync waits are bounded by
 * FLASH_SYNC_WAIT_MS_DEFAULT (flash_sync_wait_set()).
 * A process maps a segment once, however many handles it opens.  A writable
 * mapping starts at a 2 MiB boundary and is faulted in whole, so no order
 * takes a page fault; where the kernel allows (Linux 6.1's MADV_COLLAPSE,
 * whatever /dev/shm's huge= option says, but shmem_enabled=deny), the first
 * writable open makes the segment's memory 2 MiB pages, once for the object
 * (0.2 to 3.6 s per GiB measured; no memory beyond the segment's own), and
 * every mapping of it uses them: an order's random table entries then miss
 * the TLB far less often.  Where it does not, 4 KiB pages, silently.
 * A segment marked destroyed but still named (flash_seg_destroy_checked()
 * with FLASH_DESTROY_KEEP_NAME) opens, so that a daemon can drain it; every
 * write call of such a handle but the consumer's answers FLASH_EDESTROYED.
 * @param[in]  name   segment name
 * @param[in]  flags  0 or FLASH_RDONLY
 * @param[out] out    the handle
 * @return FLASH_OK or one of the codes above; FLASH_EINVAL for NULL or bad
 *         flags; FLASH_EPERM; FLASH_ENOMEM; FLASH_ESYS.
 * @note The handle is for the calling thread only (any other thread gets
 *       FLASH_EWRONG_THREAD) and not for a forked child (FLASH_EFORK).
 */
FLASH_API int flash_open(const char *name, unsigned flags, flash_t **out);

/**
 * Detach: wait for nothing, release the process-table slot, unmap.
 * Records still in the handle's ring stay there for the consumer.
 * @return FLASH_OK; FLASH_EINVAL (NULL); FLASH_EFORK (from a forked child:
 *         the mapping is released but the parent's slot is left alone).
 * @note Unlike every other call, any thread of the opening process may close
 *       a handle (never FLASH_EWRONG_THREAD), provided the owner thread has
 *       returned from its last call on it and makes no other (join it, or
 *       hand over under a mutex): the handle's journal is then idle.
 */
FLASH_API int flash_close(flash_t *h);

/**
 * Find handles whose process has died and finish their in-flight operations:
 * roll back those that had not reached their commit point (stock, quota,
 * token and request id return exactly once) and roll forward those that had.
 * Safe to run from any number of processes at once; a recovery interrupted by
 * its own death is finished by the next one.
 * A handle is dead when its process is: the pid recorded at attach no longer
 * runs, or now belongs to another process (another start time), in every
 * state of the slot -- attaching, attached, or recovering another slot.  A
 * process runs while any of its threads does, also after its main thread has
 * called pthread_exit().  So a handle in use is never recovered; and a handle
 * left open by a thread that ended is recovered only when its whole process
 * ends (close handles before their thread ends).  When liveness cannot be
 * read (/proc unreadable, no free descriptor) the handle counts as alive:
 * recovery waits, it never guesses.
 * @param[out] recovered  number of dead handles recovered (may be NULL)
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD; FLASH_ECORRUPT.
 */
FLASH_API int flash_recover(flash_t *h, uint32_t *recovered);

/**
 * This handle's slot in the process table (for logs and tests); -1 for a
 * read-only handle.
 * @return the slot; FLASH_EINVAL (NULL); FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_slot(const flash_t *h);

/**
 * The options the segment was created with (capacities, mode, gid,
 * durability), as its checked header records them.
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_seg_opts_get(const flash_t *h, struct flash_seg_opts *out);

/* ------------------------------------------------------------------------
 * 4. Catalog
 * ------------------------------------------------------------------------ */

/** How a per-user limit is counted. */
enum flash_scope {
	FLASH_SCOPE_ACTIVITY = 0,  /* K orders per (activity, user) */
	FLASH_SCOPE_SKU      = 1,  /* K orders per (activity, sku, user) */
	FLASH_SCOPE_DAY      = 2   /* K orders per (activity, user, business day) */
};

#define FLASH_ACT_CANCEL_RETURNS_QUOTA 0x1u  /* a cancel frees the user's limit slot */
#define FLASH_ACT_TOKEN_REQUIRED       0x2u  /* an order must redeem a token */

#define FLASH_LIMIT_MAX 64u                  /* largest per-user limit K */
#define FLASH_QTY_MAX   65535u               /* largest max_qty (an ACTIVITY record
                                                carries it in 16 bits) */
#define FLASH_DAY_OFFSET_MAX_S 86399         /* day_offset_s in -this..this */

struct flash_activity {
	uint32_t id;              /* nonzero, caller-chosen */
	uint32_t limit_per_user;  /* K, 1..FLASH_LIMIT_MAX */
	uint32_t max_qty;         /* largest quantity of one order, 1..FLASH_QTY_MAX */
	uint32_t scope;           /* enum flash_scope */
	uint32_t flags;           /* FLASH_ACT_* */
	int32_t  day_offset_s;    /* business day = floor((now + offset) / 86400), or
	                             / user_gen_s in a windowed segment (section 11);
	                             -FLASH_DAY_OFFSET_MAX_S..FLASH_DAY_OFFSET_MAX_S */
	int64_t  start_ns;        /* window opens (CLOCK_REALTIME ns) */
	int64_t  end_ns;          /* window closes; > start_ns */
	uint64_t version;         /* the terms' version (filled by flash_activity_get
	                             and flash_activity_at); flash_activity_update:
	                             0, or the version the change is based on;
	                             ignored by flash_activity_add and _check */
};

/**
 * Add an activity to the catalog.
 * @return FLASH_OK; FLASH_EINVAL (any check of flash_activity_check());
 *         FLASH_EEXIST (id taken); FLASH_EARCHIVED (the id's activity was
 *         archived: ids are not reused, flash_archive);
 *         FLASH_EFULL; FLASH_EBUSY (record ring full, or the catalog's
 *         mutex not free within 5 s: a corrupt segment); FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Lock-free; may run while orders are placed.
 * @note Catalog changes return without waiting for the WAL, even in sync
 *       durability (a segment can be loaded before its daemon starts).  A
 *       drain hands a catalog record out before any order that uses it
 *       (flash_ring_drain), so an acknowledged sync order is never durable
 *       without its catalog.
 */
FLASH_API int flash_activity_add(flash_t *h, const struct flash_activity *a);

/**
 * The checks flash_activity_add() makes on its argument, without a segment:
 * id nonzero, limit_per_user 1..FLASH_LIMIT_MAX, max_qty 1..FLASH_QTY_MAX,
 * scope and flags known, end_ns > start_ns, day_offset_s within
 * +-FLASH_DAY_OFFSET_MAX_S.  A tool checks a whole input with it before it
 * adds anything, so an input is loaded entirely or not at all.
 * @return FLASH_OK; FLASH_EINVAL.
 */
FLASH_API int flash_activity_check(const struct flash_activity *a);

/**
 * May an activity with id @p id be added to this segment?  A tool checks
 * every id of an input with it before it adds anything.
 * @return FLASH_OK (it may); FLASH_EEXIST (an activity has it);
 *         FLASH_EARCHIVED (an archived activity had it: never again);
 *         FLASH_EINVAL (id 0); FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Lock-free; the answer may be stale by the time of an add.
 */
FLASH_API int flash_activity_id_check(flash_t *h, uint32_t id);

/*
 * Terms and their versions (the seeds' version check).  An activity's terms
 * are its window, limit, max_qty and flags; a sku's, its price.  Each
 * activity and sku carries the version of its terms: a number taken by
 * every add and every change of terms from one counter of the segment,
 * which follows the clock (the microsecond of the change, CLOCK_REALTIME,
 * or one more than the last version if that is higher).  So a version is
 * never issued twice in a segment, also across a rebuild after a power cut
 * that lost the last changes' records (unless the clock was set back past
 * them) -- it names one set of terms of one activity or sku, and so also
 * the incarnation of an id.  A page
 * shows the versions with the terms (flash_activity_get, flash_sku_get);
 * an order that names them (flash_order_req.activity_version, sku_version)
 * is refused FLASH_ESTALE, nothing taken, once either changed.  An order is
 * judged against one version of the terms, the one it checks; a change
 * returns once every order judged against the earlier terms has ended, so
 * from then on nothing is placed under them.  Changes are records
 * (ACTIVITY with flags 1, PRICE), replayed and applied like any other.
 */

/**
 * Change the terms of live activity @p a->id: its window, limit_per_user,
 * max_qty and flags, from @p a (scope and day_offset_s must be the current
 * ones: the limit keys depend on them).  The version moves on.
 * limit_per_user may grow, never shrink: a user's orders hold numbered limit
 * slots, and those above a lower limit would no longer count.
 * A nonzero @p a->version makes the change conditional: it is made only if
 * the terms are still at that version (read them with flash_activity_get,
 * change what is to change, pass them back), so two operators changing
 * different fields never undo each other's change.
 * @param[out] version  the new version (may be NULL)
 * @return FLASH_OK; FLASH_ESTALE (@p a->version is not the current one:
 *         nothing changed); FLASH_EINVAL (any check of flash_activity_check(); scope
 *         or day_offset_s changed; limit_per_user lowered); FLASH_ENOT_FOUND
 *         (no such activity, or archived); FLASH_EENDED (being archived);
 *         FLASH_EBUSY (the record ring is full, an operation open before the
 *         change did not end within 2 s -- nothing changed -- or the
 *         catalog's mutex not free within 5 s); FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 * @note Blocking, briefly: holds the admin mutex, and waits for the orders
 *       open in other handles (a grace period, at most 2 s each side of the
 *       change; buyers never wait for it).  An order stalled past that wait
 *       (its process stopped, not dead) may still finish under the old terms.
 */
FLASH_API int flash_activity_update(flash_t *h, const struct flash_activity *a, uint64_t *version);

/**
 * Read activity @p id: its terms and their version.
 * @return FLASH_OK; FLASH_ENOT_FOUND (no such activity, or archived);
 *         FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Lock-free.
 */
FLASH_API int flash_activity_get(flash_t *h, uint32_t id, struct flash_activity *out);

#define FLASH_SHARDS_MAX 16u
#define FLASH_UNITS_MAX  (1ull << 40)        /* largest stock of one sku */

/**
 * Add a sku with @p units of stock to an activity, split over @p shards stock
 * slots (1..FLASH_SHARDS_MAX; use several for one very hot sku).  An empty
 * shard borrows from the others, so sharding never sells out early.
 * @return FLASH_OK; FLASH_EINVAL (sku 0, shards out of range, units above
 *         FLASH_UNITS_MAX); FLASH_ENOT_FOUND (activity); FLASH_EENDED (the
 *         activity is being archived: flash_archive); FLASH_EEXIST;
 *         FLASH_EFULL (skus or shards); FLASH_EBUSY (as for
 *         flash_activity_add); FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_sku_add(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                  uint64_t units, uint32_t shards);

#define FLASH_PRICE_MAX ((uint64_t)INT64_MAX)

/**
 * Set a sku's price (in the shop's smallest unit; the engine only keeps
 * it, shows it and versions it: a sku starts at price 0).  The version
 * moves on, also when the price is the same (a republished page).
 * @param[out] version  the new version (may be NULL)
 * @return FLASH_OK; FLASH_EINVAL (ids 0, price above FLASH_PRICE_MAX);
 *         FLASH_ENOT_FOUND; FLASH_EENDED (being archived); FLASH_EBUSY (as for
 *         flash_activity_update); FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 * @note Blocking, briefly, as flash_activity_update().
 */
FLASH_API int flash_sku_price_set(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t price,
                        uint64_t *version);

/* What flash_archive reclaimed. */
struct flash_archive_info {
	uint32_t activity_id;
	uint32_t skus;        /* sku entries freed */
	uint32_t shards;      /* stock shards freed */
	uint32_t tokens;      /* live tokens retired */
	uint64_t orders;      /* order-table slots freed (active and cancelled orders) */
	uint64_t reserved[2];
};

/**
 * Archive an ended activity: reclaim its order-table slots (every order of
 * it, active or cancelled), its skus' stock shards, its sku and activity
 * entries and their index words, and its live tokens (retired), so later
 * activities reuse them; its orders stay in the WAL and MariaDB (the record
 * FLASH_REC_ARCHIVE says so).  Its orders read FLASH_EARCHIVED
 * (flash_order_get, flash_cancel); its order numbers are never issued again;
 * its id is never an activity again in this segment: flash_activity_add
 * answers FLASH_EARCHIVED for it (limit keys, MariaDB's rows and the
 * backstop are keyed by the id, so a second activity under it would inherit
 * the first one's).  The segment remembers 256 archived ids per activity of
 * max_activities, at least 16384 (a rebuild from the WAL or a snapshot
 * remembers them too); past that flash_archive answers FLASH_EFULL.
 * Steps: the activity is marked ARCHIVING (orders of it are refused
 * FLASH_EENDED, cancels FLASH_EARCHIVED), every operation open in another
 * handle at the mark is waited out (a grace period: buyers never wait for
 * the archive), then a journaled operation publishes the record and frees
 * everything; a crash after the record is finished by recovery, one before
 * it leaves the activity marked and whole, finished by the next call.
 * Nothing here checks MariaDB: `flashstock archive` does (its --mysql check).
 * @param[in]  flags  0
 * @param[out] out    what was reclaimed (may be NULL)
 * @return FLASH_OK; FLASH_ENOT_ENDED (the activity's window has not closed:
 *         nothing changed); FLASH_ENOT_FOUND (no such activity, or archived
 *         already); FLASH_EBUSY (the record ring is full, or an operation
 *         open at the mark did not end within 2 s: the activity stays marked,
 *         call again); FLASH_EFULL (the segment remembers as many archived
 *         ids as it can: nothing changed); FLASH_EINVAL (id 0, flags);
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Blocking: holds the admin mutex (catalog adds wait) while it scans
 *       the order, sku and token tables; waits for open operations, at most
 *       the bound above.
 */
FLASH_API int flash_archive(flash_t *h, uint32_t activity_id, uint32_t flags,
                  struct flash_archive_info *out);

/* ------------------------------------------------------------------------
 * 5. Orders
 * ------------------------------------------------------------------------ */

struct flash_order_req {
	uint32_t activity_id;
	uint32_t sku_id;
	uint64_t user_id;     /* nonzero */
	uint32_t qty;         /* 1..activity max_qty */
	uint32_t reserve_ms;  /* 0: a plain order, ACTIVE at once.  Else a reservation:
	                         stock and limit slot are taken as for an order, which is
	                         RESERVED until flash_confirm() (paid: ACTIVE) within this
	                         many ms, 1..FLASH_RESERVE_MS_MAX; unpaid, it expires
	                         (flash_expire) and gives both back, exactly once */
	uint64_t token;       /* 0 = none; required when the activity says so */
	uint64_t request_id;  /* 0 = none; else a retry returns the first outcome */
	uint64_t activity_version;  /* 0 = not checked; else the activity's terms'
	                               version the buyer saw: another is FLASH_ESTALE */
	uint64_t sku_version;       /* the same for the sku (its price) */
};

#define FLASH_RESERVE_MS_MAX 604800000u   /* a week */

struct flash_order_res {
	uint64_t order_no;    /* set when the (first) outcome is FLASH_OK */
	int32_t  first_rc;    /* with FLASH_EDUPLICATE: the first outcome */
	uint32_t limit_slot;  /* which of the user's K slots the order holds (1..K) */
	uint64_t lsn;         /* ring position of the order's record (for sync waits) */
};

/**
 * Place an order: redeem the token (if any) -> check the activity window ->
 * reserve one of the user's K limit slots -> deduct qty by CAS -> write the
 * order record and emit it to the handle's ring -> acknowledge.  A failure at
 * any step undoes the earlier steps before returning.
 * The token (the anti-replay ticket of one page view):
 *  - an order placed uses it up (also when its acknowledgement then reports
 *    FLASH_EDURABILITY: the order stands);
 *  - a rejection on the order's merits -- FLASH_ENOT_STARTED, FLASH_EENDED,
 *    FLASH_ELIMIT, FLASH_ESOLD_OUT -- burns it, as GETDEL would: one ticket
 *    buys one judgement, so a bot cannot probe the sale with one page view;
 *  - a refusal for the engine's capacity, which says nothing about the order
 *    and which the buyer may retry -- FLASH_EBUSY (ring full), FLASH_EFULL (a
 *    table full), FLASH_ECORRUPT -- leaves it live, as it leaves a request
 *    id unrecorded: the retry of the same request is judged afresh;
 *  - a refusal before the token step (FLASH_EINVAL, FLASH_ENOT_FOUND,
 *    FLASH_EDUPLICATE, FLASH_EBAD_TOKEN for another's token) does not touch it;
 *  - an order whose process dies before the call returns, and before its
 *    commit point, leaves it live (recovery gives it back: no caller learned
 *    anything), whatever step it died at -- unless it died after recording a
 *    refusal for its request id, which a retry can already read: then the
 *    refusal stands as if returned, token burnt.
 * @param[in]  h    writable handle
 * @param[in]  r    the request
 * @param[out] res  outcome details (may be NULL)
 * @return FLASH_OK; FLASH_EINVAL (NULL h/r, user 0, qty 0 or above max_qty,
 *         reserved field set); FLASH_ENOT_FOUND (activity or sku);
 *         FLASH_EBAD_TOKEN; FLASH_ENOT_STARTED; FLASH_EENDED; FLASH_ELIMIT;
 *         FLASH_ESOLD_OUT; FLASH_ESTALE (a version named in @p r is not the
 *         current one: nothing changed, token and request id untouched);
 *         FLASH_EDUPLICATE (request id known: res->first_rc,
 *         res->order_no); FLASH_EREQ_EXPIRED (a windowed segment, section 11:
 *         the request id is older than the window; nothing changed);
 *         FLASH_EFULL (user or request table; or the order table: the next
 *         64 numbers of this handle's own chunks -- numbers no other handle
 *         can use up -- all map to slots that hold an order not yet
 *         archived, or that are kept for an unused number of another
 *         handle's chunk.  In a segment never archived that happens only
 *         once the counter has passed max_orders: after at least max_orders
 *         - 63 x max_procs orders, less 64 for each chunk refill a kill cut
 *         short.  Other buyers' speed or number never brings it earlier);
 *         FLASH_EBUSY (ring full: nothing drains it); FLASH_EDURABILITY;
 *         FLASH_EFATE_UNKNOWN (sync durability: the order is placed -- it
 *         reads ACTIVE in flash_order_get() -- but its record was not durable
 *         within the handle's wait bound, e.g. the daemon is stopped; @p res
 *         is filled as for FLASH_OK: wait again with flash_durable_wait(h,
 *         res->lsn, ...), or find the order by res->order_no in the WAL or
 *         MySQL once the daemon runs; retrying with the same request id
 *         returns FLASH_EDUPLICATE, never a second order);
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD; FLASH_ECORRUPT.
 * @note Lock-free: a stalled process never blocks another's order, with one
 *       exception: an order that needs the very key a stalled order is
 *       inserting into the per-user or request-id table (the same user's
 *       limit slot, the same request id), or a retry of a request id that a
 *       stalled order holds, waits for that process -- and recovers it at
 *       once if it died.  Orders for other keys pass its entries.
 *       In sync durability the acknowledgement waits for the daemon, at
 *       most the handle's wait bound (flash_sync_wait_set()).
 */
FLASH_API int flash_order(flash_t *h, const struct flash_order_req *r,
                struct flash_order_res *res);

/**
 * Place @p n orders in one call: each is judged, committed and journaled on
 * its own, exactly as @p n calls of flash_order() one after another would
 * (the same outcomes, the same records, each order its own commit point; a
 * later order of the batch sees the earlier ones: a second order of one
 * user meets its limit, a repeated request id FLASH_EDUPLICATE).  What the
 * calls would repeat is paid once:
 *  - the handle's checks and one clock read: the batch's orders carry the
 *    time it began (its window is judged at that time);
 *  - the table entries of order i + 1 are fetched while order i runs;
 *  - in sync durability, one wait, for the batch's last record (a handle's
 *    records become durable in the order they were placed): every placed
 *    order then reads FLASH_OK, or all of them FLASH_EFATE_UNKNOWN or
 *    FLASH_EDURABILITY, with @p res filled as for FLASH_OK.
 * A process killed inside the call keeps the orders that passed their
 * commit point and loses the others' effects, each as flash_order() says.
 * Orders are counted in flash_obs_get()'s results (each outcome), not timed.
 * @param[in]  h    writable handle
 * @param[in]  r    @p n requests
 * @param[in]  n    1 or more
 * @param[out] res  @p n results (may be NULL): each filled as flash_order()
 *                  fills its own; zeros where it leaves them (a request
 *                  refused for a bad argument)
 * @param[out] rcs  @p n outcomes, each one flash_order() could return for
 *                  that request
 * @return FLASH_OK (every order ran: read rcs[]); FLASH_EINVAL (NULL @p r
 *         or @p rcs, @p n 0: no order ran); FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD (no order ran).
 * @note Lock-free as flash_order(); in sync durability it sleeps once, at
 *       most the handle's wait bound.
 */
FLASH_API int flash_order_many(flash_t *h, const struct flash_order_req *r, uint32_t n,
                     struct flash_order_res *res, int *rcs);

/*
 * Carts: several skus of one activity in one order, all or nothing.
 */
#define FLASH_CART_LINES_MAX 16u

struct flash_cart_line {
	uint32_t sku_id;       /* distinct within the cart */
	uint32_t qty;          /* 1..activity max_qty */
	uint64_t sku_version;  /* 0 = not checked; else as flash_order_req.sku_version */
};

struct flash_cart_req {
	uint32_t activity_id;
	uint32_t lines;            /* 1..FLASH_CART_LINES_MAX: line[0 .. lines - 1] */
	uint64_t user_id;          /* nonzero */
	uint32_t reserve_ms;       /* as flash_order_req: the whole cart waits for payment */
	uint32_t _reserved;        /* 0 */
	uint64_t token;            /* as flash_order_req; a token names a sku: line 0's */
	uint64_t request_id;       /* as flash_order_req */
	uint64_t activity_version; /* as flash_order_req */
	struct flash_cart_line line[FLASH_CART_LINES_MAX];
};

struct flash_cart_res {
	uint64_t order_no;       /* the cart's number (its lines hold the next lines - 1) */
	int32_t  first_rc;       /* with FLASH_EDUPLICATE: the first outcome */
	uint32_t limit_slot;     /* the one limit slot the cart holds (1..K) */
	uint64_t lsn;            /* ring position of its last record (for sync waits) */
	uint32_t line;           /* refused for one line (FLASH_ESOLD_OUT, FLASH_ESTALE of a
	                            sku, FLASH_ENOT_FOUND of a sku, FLASH_EINVAL of a line):
	                            its index; 0 otherwise */
	uint32_t sold_out;       /* FLASH_ESOLD_OUT: bit i set for every line i short of
	                            its qty when the cart was refused (line's bit included) */
};

/**
 * Place a cart: up to FLASH_CART_LINES_MAX lines (sku, qty) of one activity
 * in one order, all or nothing.  It is one order of the user: the token,
 * the request id, the window, the terms' versions and ONE limit slot are
 * the cart's, judged as flash_order judges them; each line's sku, its
 * version, its qty (max_qty is per line) and its stock are the line's.
 * Every line's units and the limit slot are taken, or none: the cart has
 * one commit point, where all its records (one ORDER record per line, in
 * line order, FLASH_REC_F_CART) reach the ring together.  A process killed
 * at any point before it leaves nothing taken; after it, the whole cart.
 * flash_cancel, flash_confirm and flash_expire act on the whole cart (its
 * number): a cancel or an expiry returns every line's units, one record per
 * line, again in one step.  A cart takes @p lines consecutive order
 * numbers (flash_order_get).
 * A cart needs an activity whose limit is per user (FLASH_SCOPE_ACTIVITY or
 * FLASH_SCOPE_DAY): one of FLASH_SCOPE_SKU is FLASH_EINVAL.
 * @param[in]  h    writable handle
 * @param[in]  r    the cart
 * @param[out] res  outcome details (may be NULL)
 * @return the answers of flash_order, with: FLASH_EINVAL (lines 0 or above
 *         FLASH_CART_LINES_MAX, a sku twice, a line's qty 0 or above max_qty:
 *         res->line; an activity of FLASH_SCOPE_SKU; _reserved set);
 *         FLASH_ENOT_FOUND, FLASH_ESTALE (a line's sku: res->line);
 *         FLASH_ESOLD_OUT (res->line: the line that ran out; res->sold_out:
 *         every line short when it was refused); FLASH_EFULL also when no
 *         @p lines consecutive numbers are free (a handle's chunk of numbers
 *         too short for the cart is skipped: the numbers stay usable for
 *         later laps); FLASH_EBUSY also when the ring has no room for the
 *         cart's records or the journal for its stock changes (lines spread
 *         over many shards: at most 40 counter changes per operation).
 *         A cart of one line is a plain order: flash_order's answers and
 *         records, no line bits.
 * @note Lock-free as flash_order(); a plain order pays nothing for carts.
 */
FLASH_API int flash_cart_order(flash_t *h, const struct flash_cart_req *r,
                     struct flash_cart_res *res);

#define FLASH_SYNC_WAIT_MS_DEFAULT 5000u     /* a new handle's sync wait bound */

/**
 * Bound the handle's sync waits (orders, cancels, restocks in sync
 * durability) to @p wait_ms; past it the call returns FLASH_EFATE_UNKNOWN.
 * A new handle starts at FLASH_SYNC_WAIT_MS_DEFAULT.
 * @return FLASH_OK; FLASH_EINVAL (NULL, wait_ms 0); FLASH_EREADONLY; FLASH_EFORK.
 */
FLASH_API int flash_sync_wait_set(flash_t *h, uint32_t wait_ms);

/**
 * Wait, at most @p wait_ms, until the record at @p lsn of this handle's ring
 * (res->lsn of an order this handle placed) is durable: how a caller told
 * FLASH_EFATE_UNKNOWN learns the fate.  Works in either durability.
 * @return FLASH_OK (durable); FLASH_EFATE_UNKNOWN (not yet); FLASH_EDURABILITY
 *         (the WAL failed: restart the daemon, which recovers from disk, and
 *         look the order up by number); FLASH_EINVAL (NULL, lsn 0, wait_ms 0);
 *         FLASH_EREADONLY; FLASH_EFORK.
 * @note Blocking: sleeps on a futex while the daemon has not marked the record.
 */
FLASH_API int flash_durable_wait(flash_t *h, uint64_t lsn, uint32_t wait_ms);

/**
 * Wait, at most @p wait_ms, until every record this handle has published so
 * far (orders, cancels, restocks: everything its calls returned from) is
 * durable.  For a caller whose next step elsewhere must never be on disk
 * before this handle's changes are -- flash_restock() returns no LSN to wait
 * for.  A handle that published nothing returns FLASH_OK at once.  Works in
 * either durability.
 * @return FLASH_OK (all durable); FLASH_EFATE_UNKNOWN (not yet: each of those
 *         records is done in memory and becomes durable when the daemon
 *         drains it); FLASH_EDURABILITY (the WAL failed: restart the daemon,
 *         which recovers from disk); FLASH_EINVAL (NULL, wait_ms 0);
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Blocking, as flash_durable_wait(); never publishes anything itself.
 */
FLASH_API int flash_durable_wait_all(flash_t *h, uint32_t wait_ms);

/**
 * Cancel an order by number; its units return to stock exactly once, and the
 * user's limit slot too if the activity says so.  A cart's number cancels
 * the cart: every line's units, one CANCEL record per line (the number of a
 * cart's later line is FLASH_ENOT_FOUND here, for flash_confirm and for
 * flash_expire too).
 * @param[out] units_returned  units given back (may be NULL)
 * In sync durability the call returns once the cancel's record is durable,
 * like an order; in async durability at once.  The units and the slot are
 * back in stock when it returns (a later order taking them is drained after
 * the cancel: flash_ring_drain).
 * @return FLASH_OK; FLASH_ECANCELLED (already cancelled: nothing returned);
 *         FLASH_EEXPIRED (a reservation that expired unpaid, by this call if
 *         its pay-by time had passed: its units went back with the expiry);
 *         FLASH_ENOT_FOUND (no such order); FLASH_EARCHIVED (its activity was
 *         archived, or is being archived: flash_archive); FLASH_EINVAL; FLASH_EBUSY;
 *         FLASH_EFATE_UNKNOWN (sync: cancelled in memory, not yet durable
 *         within the wait bound; @p units_returned is set); FLASH_EDURABILITY;
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD; FLASH_ECORRUPT.
 */
FLASH_API int flash_cancel(flash_t *h, uint64_t order_no, uint32_t *units_returned);

/*
 * Reservations (flash_order_req.reserve_ms): an order that waits for its
 * payment.  RESERVED holds its units and limit slot; then exactly one of
 *   flash_confirm()  paid in time      -> ACTIVE  (a CONFIRM record)
 *   flash_cancel()   the buyer gave up -> CANCELLED (its units back)
 *   flash_expire()   the deadline came -> EXPIRED (its units back; the limit
 *                    slot too if the activity returns it on cancel)
 * wins: each is one compare-and-swap on the order's state, also when the
 * process doing it is killed at any point (a recoverer finishes or undoes
 * it).  Whoever meets a reservation past its deadline expires it first: a
 * confirm or a cancel then answers FLASH_EEXPIRED.  Without anyone asking,
 * `flashstock serve` expires each one at its deadline; without a daemon,
 * flash_expire_due() (`flashstock expire`) does.
 */

/**
 * Confirm (pay) reservation @p order_no: RESERVED -> ACTIVE, before its
 * pay-by time.  In sync durability the call returns once the CONFIRM
 * record is durable.
 * @return FLASH_OK (confirmed now, or ACTIVE already: a retried payment
 *         callback is answered the same); FLASH_EEXPIRED (the deadline
 *         passed: expired, by this call if nobody had); FLASH_ECANCELLED;
 *         FLASH_ENOT_FOUND; FLASH_EARCHIVED; FLASH_EINVAL; FLASH_EBUSY;
 *         FLASH_EFATE_UNKNOWN; FLASH_EDURABILITY; FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD; FLASH_ECORRUPT.
 */
FLASH_API int flash_confirm(flash_t *h, uint64_t order_no);

/**
 * Expire reservation @p order_no if its pay-by time has come: RESERVED ->
 * EXPIRED, its units back in stock and, if the activity returns quota on
 * cancel, its limit slot -- exactly once, like a cancel.
 * @param[out] units_returned  units given back (may be NULL)
 * @return FLASH_OK (expired now); FLASH_EEXPIRED (expired already: nothing
 *         returned); FLASH_ENOT_DUE; FLASH_ECONFIRMED; FLASH_ECANCELLED;
 *         FLASH_ENOT_FOUND; FLASH_EARCHIVED; FLASH_EINVAL; FLASH_EBUSY;
 *         FLASH_EFATE_UNKNOWN; FLASH_EDURABILITY; FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD; FLASH_ECORRUPT.
 */
FLASH_API int flash_expire(flash_t *h, uint64_t order_no, uint32_t *units_returned);

/**
 * Expire every reservation of the segment whose pay-by time has come, at
 * most @p max of them (0: no bound), by a scan of the order table: for a
 * process without a daemon (`flashstock expire`), or a daemon's start.
 * @param[out] expired  reservations this call expired (may be NULL)
 * @return FLASH_OK; FLASH_EFATE_UNKNOWN or FLASH_EDURABILITY (sync: every due
 *         one was expired in memory, some not known durable: the scan goes
 *         on over them); or the first failure of flash_expire() other than
 *         those and the races it settles (FLASH_EEXPIRED, FLASH_ECONFIRMED,
 *         FLASH_ECANCELLED, FLASH_EARCHIVED: another handle got there first),
 *         with *expired counting those done before it.
 */
FLASH_API int flash_expire_due(flash_t *h, uint32_t max, uint32_t *expired);

/**
 * Adjust a sku's stock by @p delta units: positive restocks, negative removes
 * unsold units (never below zero available).  In sync durability it returns
 * once its record is durable.
 * @return FLASH_OK; FLASH_EINVAL (delta 0 or out of range); FLASH_ENOT_FOUND
 *         (no such sku, or it is being archived); FLASH_ESOLD_OUT (fewer than
 *         -delta available); FLASH_EBUSY;
 *         FLASH_EFATE_UNKNOWN (sync: applied, not yet durable within the wait
 *         bound); FLASH_EDURABILITY; FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_restock(flash_t *h, uint32_t activity_id, uint32_t sku_id, int64_t delta);

/* ------------------------------------------------------------------------
 * 6. Tokens
 * ------------------------------------------------------------------------ */

/**
 * Issue a one-time token for (activity, sku, user), valid for @p ttl_ms.
 * A user may hold several live tokens; at most max_tokens are live at once
 * (counted exactly, also across crashes).  Used entries are reused by later
 * issues; expired ones are retired only when the table is full; nothing
 * sweeps in the order path.
 * Token numbers are a keyed pseudorandom permutation of (handle slot, that
 * slot's sequence number): a 10-round Feistel network over SipHash-2-4 under
 * a 128-bit key drawn from getrandom(2) when the segment is created.  The
 * input never repeats in a segment, so neither does a number; without the
 * key, the numbers one has seen say nothing about the next one.  A process
 * that can read the segment (or a snapshot of it) can read the key.
 * @param[out] token  nonzero, unpredictable, never issued twice per segment
 * @return FLASH_OK; FLASH_EINVAL (NULL, user 0, ttl_ms 0); FLASH_ENOT_FOUND
 *         (activity or sku, or the activity is being archived); FLASH_EFULL; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_token_issue(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                      uint64_t user_id, uint32_t ttl_ms, uint64_t *token);

/**
 * Redeem a token outside the order path: succeeds once (GETDEL semantics).
 * A redeem whose process dies before it returns is undone by recovery,
 * whatever step it died at (also after it had marked the token used): the
 * token stays live, since no caller learned that it was used.  Only a call
 * that returned FLASH_OK has used the token up.
 * @return FLASH_OK; FLASH_EBAD_TOKEN (unknown, expired, used, or for another
 *         activity/sku/user); FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_token_redeem(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                       uint64_t user_id, uint64_t token);

/* ------------------------------------------------------------------------
 * 7. Leased locks
 * ------------------------------------------------------------------------ */

#define FLASH_LOCK_NAME_MAX 47u

/**
 * Acquire lock @p name for @p owner (a caller-chosen nonzero value, like the
 * random value of a Redis lock) for @p lease_ms.  Granted if the lock is
 * free, its lease has expired, or its holder's process is dead.
 * @param[out] fence  fencing token: strictly greater than every earlier grant
 *                    of this name
 * @return FLASH_OK; FLASH_ELOCKED (held by another live owner); FLASH_EINVAL
 *         (NULL, empty or too long name, owner 0, lease_ms 0); FLASH_EFULL;
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_lock_acquire(flash_t *h, const char *name, uint64_t owner,
                       uint32_t lease_ms, uint64_t *fence);

/**
 * Extend the lease to now + @p lease_ms, only for the holder.
 * @return FLASH_OK; FLASH_ENOT_OWNER (not held by this owner, or its lease
 *         expired); FLASH_ENOT_FOUND; FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_lock_renew(flash_t *h, const char *name, uint64_t owner, uint32_t lease_ms);

/**
 * Release, only for the holder (compare-owner-and-delete).
 * @return FLASH_OK; FLASH_ENOT_OWNER; FLASH_ENOT_FOUND; FLASH_EINVAL;
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_lock_release(flash_t *h, const char *name, uint64_t owner);

/* ------------------------------------------------------------------------
 * 8. Reading state (any handle, read-only ones included)
 * ------------------------------------------------------------------------ */

struct flash_sku_info {
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t shards;
	uint32_t _pad;
	uint64_t total;      /* units loaded plus restocks */
	uint64_t available;  /* sum over shards, read shard by shard */
	uint64_t price;      /* flash_sku_price_set; 0 until set */
	uint64_t version;    /* the version of its terms (see flash_activity_update);
	                        flash_sku_get and flash_sku_at fill both */
};

/** @return FLASH_OK; FLASH_ENOT_FOUND; FLASH_EINVAL; FLASH_EFORK;
 *          FLASH_EWRONG_THREAD; FLASH_ECORRUPT. */
FLASH_API int flash_sku_get(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                  struct flash_sku_info *out);

/** Catalog iteration: index 0.. ; FLASH_ENOT_FOUND past the end;
 *  FLASH_EARCHIVED for an entry freed by flash_archive and not reused yet
 *  (skip it: later indexes may hold entries); FLASH_EINVAL; FLASH_EFORK;
 *  FLASH_EWRONG_THREAD. */
FLASH_API int flash_activity_at(flash_t *h, uint32_t index, struct flash_activity *out);
FLASH_API int flash_sku_at(flash_t *h, uint32_t index, struct flash_sku_info *out);

enum flash_order_state {
	FLASH_ORDER_NONE      = 0,  /* number allocated, order never completed */
	FLASH_ORDER_ACTIVE    = 1,  /* placed (paid, for a reservation) */
	FLASH_ORDER_CANCELLED = 2,
	FLASH_ORDER_RESERVED  = 3,  /* a reservation not paid yet (flash_confirm) */
	FLASH_ORDER_EXPIRED   = 4   /* a reservation not paid in time (flash_expire) */
};

struct flash_order_info {
	uint64_t order_no;
	uint64_t user_id;
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t qty;
	uint32_t state;       /* enum flash_order_state */
	uint32_t limit_slot;
	uint32_t biz_day;
	int64_t  created_ns;  /* CLOCK_REALTIME */
	int64_t  pay_by_ns;   /* RESERVED, EXPIRED: the deadline (CLOCK_REALTIME, ms
	                         precision); 0 otherwise */
	uint32_t line;        /* a cart's line (flash_cart_order): 0 .. lines - 1;
	                         0 for a plain order */
	uint32_t lines;       /* lines of the order: 1 for a plain order, 2..16 for a
	                         cart; 0 for a number that never held an order */
};

/**
 * Read one order.  Numbers run from 1 to flash_orders_max() (with the box id
 * in bits 63..56: flash_box_id_set); a number whose order never completed
 * reads as FLASH_ORDER_NONE with no field but order_no set (also while it
 * is being placed).  A cart (flash_cart_order) of n lines has n numbers:
 * its own, which reads as its line 0 with lines = n, and the n - 1 after
 * it, which hold its later lines and read as FLASH_ORDER_NONE with line =
 * 1 .. n - 1 and lines = n (flash_order_lines reads them all).
 * Order numbers: 64 bits, never reused.  Bits 63..56 are the segment's box
 * id (0 unless flash_box_id_set), bits 55..0 a counter that grows forever.
 * Number n lives in order-table slot ((n & (2^56 - 1)) - 1) % max_orders; a
 * slot is reused for a later number only once its order was archived
 * (flash_archive), and a number whose slot is still held by a live order is
 * skipped -- numbers need not be dense.  In a segment never archived, with
 * box 0, numbers are what they always were (1 .. max_orders).
 * @return FLASH_OK; FLASH_EARCHIVED (the number was issued, and its slot
 *         holds a later order or its order was archived: the order, if it was
 *         placed, is in MariaDB and the WAL); FLASH_ENOT_FOUND (never issued,
 *         or another box's); FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_order_get(flash_t *h, uint64_t order_no, struct flash_order_info *out);

/**
 * Read every line of order @p order_no: a plain order has one (its own
 * fields, as flash_order_get reads them), a cart (flash_cart_order) 2..16,
 * each filled as flash_order_get fills line 0 but for sku_id, qty and line.
 * @param[out] out  @p cap entries
 * @param[out] n    the order's lines (also when more than @p cap)
 * @return FLASH_OK; FLASH_EFULL (@p cap below the order's lines: the first
 *         @p cap filled, *n says how many there are); FLASH_ENOT_FOUND (no
 *         order: a number flash_order_get reads as FLASH_ORDER_NONE with
 *         lines 0, one still being placed included; also the number of a
 *         cart's later line: the cart is order_no - line);
 *         the other answers of flash_order_get.
 */
FLASH_API int flash_order_lines(flash_t *h, uint64_t order_no, struct flash_order_info *out,
                      uint32_t cap, uint32_t *n);

/**
 * Highest order number any handle has taken so far (orders are 1..this, box
 * id included: see flash_order_get).  Handles take numbers in chunks, so
 * numbers below it may never have become orders: they read as
 * FLASH_ORDER_NONE (or FLASH_EARCHIVED once slots are reused).  0 on a NULL
 * or forked handle and on a handle of another thread.
 */
FLASH_API uint64_t flash_orders_max(flash_t *h);

/**
 * Read the order in order-table slot @p index (0 .. max_orders - 1): how to
 * list every order the segment holds, whatever their numbers (numbers are
 * not bounded by the table: see flash_order_get).  A free slot reads
 * FLASH_ORDER_NONE with order_no 0; out->order_no is the slot's number.  A
 * slot holding line i >= 1 of a cart reads as that line of the cart: the
 * cart's number, state and fields, the line's sku_id and qty, line = i (so
 * a scan that sums units per sku counts every line once; one that acts on
 * orders skips line != 0).
 * @return FLASH_OK; FLASH_ENOT_FOUND (index past the table); FLASH_EINVAL;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_order_at(flash_t *h, uint32_t index, struct flash_order_info *out);

/**
 * Set the segment's box id, bits 63..56 of every order number it issues, so
 * that several boxes selling one sku number their orders uniquely.  Only
 * before the first order number is taken.
 * @param[in] box_id  1..255
 * @return FLASH_OK; FLASH_EINVAL (box_id out of range, or a number was taken
 *         already); FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_box_id_set(flash_t *h, uint32_t box_id);

struct flash_stats {
	uint64_t orders;          /* acknowledged orders */
	uint64_t cancels;
	uint64_t sold_out;
	uint64_t limit_hits;
	uint64_t token_rejects;
	uint64_t duplicates;
	uint64_t cas_retries;
	uint64_t recoveries;      /* dead handles recovered */
	uint64_t rolled_back;     /* operations rolled back by recovery */
	uint64_t rolled_forward;  /* operations rolled forward by recovery */
	/* fill levels: used / capacity (users, requests: over every generation
	 * bank of a windowed segment, section 11) */
	uint32_t activities, activities_cap;
	uint32_t skus, skus_cap;
	uint32_t shards, shards_cap;
	uint32_t users, users_cap;
	uint32_t tokens, tokens_cap;
	uint32_t requests, requests_cap;
	uint32_t locks, locks_cap;
	uint32_t procs, procs_cap;
	uint64_t orders_used, orders_cap;
	uint64_t segment_bytes;
	uint32_t durability;
	uint32_t _pad;
	uint64_t confirms;        /* reservations confirmed (paid) */
	uint64_t expiries;        /* reservations expired unpaid */
};

/** Sum the per-handle counters and read fill levels.
 *  @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD. */
FLASH_API int flash_stats_get(flash_t *h, struct flash_stats *out);

/*
 * Observation: what the engine measures of its own calls.  Every call of the
 * operations below that passes the handle checks (a writable handle, on its
 * own thread, in its own process) has its result code counted, and is timed
 * from entry to return -- in sync durability the wait for the WAL included
 * -- except orders, of which each handle times one in 16 (its first, then
 * every 16th: the clock costs more than a tenth of an order on a VM).
 * Each handle keeps its figures in its own part of the segment, written by
 * that handle alone (no lock, no shared cache line); flash_obs_get() sums
 * them over every slot.  A call joins the figures when its handle makes its
 * next call (or closes): so a process killed before a call returns never
 * has a store into the segment after the call's own last one.  Figures
 * survive the handle (a slot's next handle adds to them) and are statistics
 * only: a process killed mid-update may leave one count or one sum short.
 */
enum flash_op {
	FLASH_OP_ORDER = 0,          /* flash_order */
	FLASH_OP_CANCEL,             /* flash_cancel */
	FLASH_OP_RESTOCK,            /* flash_restock */
	FLASH_OP_TOKEN_ISSUE,        /* flash_token_issue */
	FLASH_OP_TOKEN_REDEEM,       /* flash_token_redeem */
	FLASH_OP_LOCK_ACQUIRE,       /* flash_lock_acquire */
	FLASH_OP_LOCK_RENEW,         /* flash_lock_renew */
	FLASH_OP_LOCK_RELEASE,       /* flash_lock_release */
	FLASH_OP_COUNT
};

/* Histograms besides the FLASH_OP_COUNT latencies (index of flash_obs.time): */
#define FLASH_TIME_LOCK_WAIT FLASH_OP_COUNT        /* first refused acquire (FLASH_ELOCKED)
                                                      of a lock by an owner on a handle, to
                                                      the grant of that lock to that owner on
                                                      that handle */
#define FLASH_TIME_LOCK_HOLD (FLASH_OP_COUNT + 1)  /* grant to release, or to the end of the
                                                      lease (or the holder's death) when a
                                                      later acquire finds it over */
#define FLASH_TIMES          (FLASH_OP_COUNT + 2)

#define FLASH_OBS_BUCKETS 32   /* bucket b counts times below 2^(b+6) ns and at or above
                                  the previous bound; the last one everything above */
#define FLASH_OBS_CODES   48   /* results[op][-rc]; codes below -47 counted at 47 */

struct flash_hist {
	uint64_t bucket[FLASH_OBS_BUCKETS];  /* per bucket, not cumulative */
	uint64_t count;                      /* sum of the buckets */
	uint64_t sum_ns;
};

struct flash_obs {
	struct flash_hist time[FLASH_TIMES];           /* [enum flash_op or FLASH_TIME_*];
	                                                  orders: one in 16 per handle */
	uint64_t results[FLASH_OP_COUNT][FLASH_OBS_CODES];  /* [op][-rc]: calls per outcome */
};

/** Upper bound in ns of histogram bucket @p b (UINT64_MAX for the last). */
FLASH_API uint64_t flash_obs_bucket_le_ns(unsigned b);

/** "order", "cancel", ..., "lock_wait", "lock_hold" for a flash_obs.time index;
 *  "?" out of range. */
FLASH_API const char *flash_op_name(unsigned op);

/**
 * Sum every slot's observation figures (relaxed loads, slot by slot: a
 * reader's view, not one instant).
 * @param[in]  h    any handle, read-only ones included
 * @param[out] out  the sums
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note O(max_procs); lock-free; changes nothing (a writable handle first
 *       adds its own newest call, which the figures otherwise show only
 *       once the handle makes its next call or closes).
 */
FLASH_API int flash_obs_get(flash_t *h, struct flash_obs *out);

/* ------------------------------------------------------------------------
 * 9. Records
 *
 * Every state change (order, cancel, restock, activity, sku) is emitted as a
 * 64-byte record into the single-producer ring of the handle that made it.
 * One consumer per segment (the daemon, or a test) drains all rings, merged
 * in causal order.  The record is the operation's commit point: an
 * operation whose record reached its ring is rolled forward by recovery, any
 * other is rolled back.  Applications read the durable records through the
 * order feed (section 10); the drain itself is flashstock_consumer.h's.
 * ------------------------------------------------------------------------ */

enum flash_rec_type {
	FLASH_REC_ORDER    = 1,
	FLASH_REC_CANCEL   = 2,
	FLASH_REC_RESTOCK  = 3,
	FLASH_REC_ACTIVITY = 4,
	FLASH_REC_SKU      = 5,
	FLASH_REC_GEN      = 6,  /* a keyed table's generation moved on or a bank was
	                            cleared (section 11): activity_id = table, qty = 1
	                            advance / 2 clear, sku_id = bank, order_no = the
	                            generation, value = its start (advance) or the keys
	                            cleared; the MariaDB applier ignores it */
	FLASH_REC_ARCHIVE  = 7,    /* flash_archive: activity_id; order_no: orders
	                              freed (active + cancelled); qty: skus; value:
	                              shards; user_id: tokens retired; ts_ns: when */
	FLASH_REC_CONFIRM  = 8,    /* flash_confirm: a reservation paid, now ACTIVE;
	                              the fields of its ORDER record (value: its pay-by
	                              time), ts_ns: when */
	FLASH_REC_EXPIRE   = 9,    /* flash_expire: a reservation expired unpaid; the
	                              fields of a CANCEL record (its units and, flags 1,
	                              its limit slot went back), value: its pay-by time */
	FLASH_REC_PRICE    = 10    /* flash_sku_price_set: activity_id, sku_id, value:
	                              the price, order_no: the new version, ts_ns */
};

/*
 * A cart (flash_cart_order): every operation on it -- its ORDER, then one
 * CANCEL, EXPIRE or CONFIRM -- publishes one record per line, the lines in
 * order, all in one step.  Each of those records is the line's: sku_id and
 * qty are the line's, the other members the cart's (order_no is the cart's
 * number, request_id only on line 0).  The drain hands them out together:
 * no other record comes between the lines of one operation (a WAL cut can
 * end inside them: such an operation was not acknowledged, and
 * flash_replay does not apply it).  flags carries: */
#define FLASH_REC_F_CART  0x0100u                /* a line of a cart */
#define FLASH_REC_F_LAST  0x0200u                /* the cart's last line */
#define FLASH_REC_LINE(flags) (((unsigned)(flags) >> 10) & 0xfu)   /* the line, 0..15 */
#define FLASH_REC_F_LINE(i)   ((uint16_t)((unsigned)(i) << 10))

/*
 * One record.  Its members are shared by every type, so what a member holds
 * depends on the type; the layout is fixed (64 bytes, the ring's and the
 * WAL's).  Per type, each member and the name it goes by where records are
 * shown -- `flashstock wal dump`, `flashstock feed` (--json), the RabbitMQ
 * sink's messages -- which is also what the bindings call it:
 *
 *   type      member       name            holds
 *   ORDER     activity_id  activity_id
 *             sku_id       sku_id
 *             qty          qty             units ordered
 *             order_no     order_no
 *             user_id      user_id
 *             ts_ns        ts_ns           CLOCK_REALTIME of the order
 *             biz_day      biz_day         business day (FLASH_SCOPE_DAY)
 *             limit_slot   limit_slot      1..K
 *             request_id   request_id      the request id, or 0
 *             flags        flags           windowed segment: 0x8000 | request
 *                                          bank | user bank << 4; else 0
 *                          line, lines     a cart's line: FLASH_REC_F_CART |
 *                                          FLASH_REC_F_LINE(line), and
 *                                          FLASH_REC_F_LAST on its last line
 *                                          (shown as line and last)
 *   CANCEL    activity_id, sku_id, order_no, user_id, ts_ns, biz_day,
 *             limit_slot as ORDER; qty: units given back;
 *             flags        quota_returned  1 if the user's limit slot came back
 *                                          (and a cart's line bits, as ORDER;
 *                                          also on EXPIRE and CONFIRM)
 *   RESTOCK   activity_id, sku_id, ts_ns;
 *             value        delta           units added (+) or taken (-)
 *   ACTIVITY  activity_id  activity_id
 *             value        start_ns        the window's start
 *             ts_ns        end_ns          the window's end
 *             biz_day      limit_per_user  bits 0-7
 *                          scope           bits 8-15 (enum flash_scope)
 *                          flags           bits 16-31 (FLASH_ACT_*)
 *             limit_slot   max_qty         (capped at 65535)
 *             request_id   day_offset_s    (an int64_t stored as uint64_t)
 *             order_no     version         the terms' version (0 in a WAL
 *                                          written before versions)
 *             flags        update          1: new terms of an existing
 *                                          activity (flash_activity_update)
 *   SKU       activity_id, sku_id, ts_ns;
 *             value        units           units loaded
 *             qty          shards          stock shards
 *             order_no     version         the terms' version (as ACTIVITY)
 *   PRICE     activity_id, sku_id, ts_ns;
 *             value        price           the sku's new price
 *             order_no     version         the new version
 *   GEN       activity_id  table           the keyed table (section 11)
 *             sku_id       bank
 *             qty          op              1 advance, 2 clear
 *             order_no     generation
 *             value        start_ns        (advance) the generation's start
 *                          keys_cleared    (clear) the keys the bank held
 *             ts_ns        ts_ns
 *   ARCHIVE   activity_id, ts_ns (when);
 *             order_no     orders          orders freed (active + cancelled)
 *             qty          skus            skus freed
 *             value        shards          stock shards freed
 *             user_id      tokens          tokens retired
 *
 * Every type also carries slot (the producing handle's slot).  A member not
 * named for a type means nothing in it (those tools leave it out).
 */
struct flash_record {
	uint16_t type;          /* enum flash_rec_type */
	uint16_t slot;          /* producing handle's slot */
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t qty;           /* ORDER/CANCEL/CONFIRM/EXPIRE: units; SKU: shards */
	uint64_t order_no;      /* ORDER/CANCEL/CONFIRM/EXPIRE; ACTIVITY, SKU, PRICE:
	                           the terms' version */
	uint64_t user_id;       /* ORDER/CANCEL/CONFIRM/EXPIRE */
	int64_t  value;         /* RESTOCK: delta; SKU: units; ACTIVITY: start_ns;
	                           ORDER: a reservation's pay-by time (CLOCK_REALTIME
	                           ns), 0 for a plain order; CONFIRM, EXPIRE: the same */
	int64_t  ts_ns;         /* CLOCK_REALTIME when made; ACTIVITY: end_ns */
	uint32_t biz_day;       /* ORDER: business day; ACTIVITY: limit | scope<<8 | flags<<16 */
	uint16_t limit_slot;    /* ORDER/CANCEL/CONFIRM/EXPIRE: 1..K; ACTIVITY: max_qty */
	uint16_t flags;         /* CANCEL, EXPIRE: 1 if the quota was returned, CANCEL
	                           also 2 if the order was a reservation not paid; ORDER in a
	                           windowed segment: 0x8000 | request bank | user bank << 4 */
	uint64_t request_id;    /* ORDER: request id or 0; ACTIVITY: day_offset_s */
};
/*
 * An ARCHIVE record: activity_id, ts_ns (CLOCK_REALTIME of the archive), and
 * what was reclaimed: order_no = orders, qty = skus, value = shards,
 * user_id = tokens (the table above).  The feed passes it on; the MariaDB
 * applier marks the activity archived (activities.archived_lsn, archived_ns)
 * and keeps its rows.
 */

/** The WAL step that failed (struct flash_durability_info.step). */
enum flash_wal_step {
	FLASH_WAL_STEP_UNKNOWN = 0,  /* not said (flash_durability_fail) */
	FLASH_WAL_STEP_WRITE   = 1,  /* a write into the WAL file */
	FLASH_WAL_STEP_SYNC    = 2,  /* an fdatasync of the WAL */
	FLASH_WAL_STEP_FILE    = 3   /* making the next WAL file (create, reserve, rename) */
};

/** The segment's durability failure (flash_durability_get). */
struct flash_durability_info {
	uint32_t failed;     /* 1: the WAL failed; sync orders return FLASH_EDURABILITY */
	uint32_t step;       /* enum flash_wal_step (failed only) */
	int32_t  err;        /* errno of the failed step; 0: not said */
	uint32_t _pad;
	int64_t  when_ns;    /* CLOCK_REALTIME of the failure; 0: not said */
};

/**
 * Read the durability failure: whether the segment is failed and why.
 * @param[in]  h    any handle, read-only ones included
 * @param[out] out  all zero when the segment is not failed
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Lock-free.  A reading that races a clear may show the failure
 *       that was just cleared; never a reason without the flag.
 */
FLASH_API int flash_durability_get(flash_t *h, struct flash_durability_info *out);

/**
 * Read the destroyed mark (flash_seg_destroy_checked()): 1 when the segment
 * is marked destroyed -- every write call but the consumer's answers
 * FLASH_EDESTROYED -- which a handle can see only while the name is kept
 * (FLASH_DESTROY_KEEP_NAME: `flashstock destroy --force --wal DIR` whose
 * drain failed leaves it so, closed to new orders, its records in its
 * rings), or on a handle opened before the name went.  What `flashstock
 * status` shows as CLOSED.
 * @param[in]  h    any handle, read-only ones included
 * @param[out] out  1 marked, 0 not
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Non-blocking; one load.
 */
FLASH_API int flash_destroyed_get(flash_t *h, uint32_t *out);

/** A failed step in words, e.g. "an fdatasync of the WAL failed"; any
 *  value outside enum flash_wal_step reads as FLASH_WAL_STEP_UNKNOWN. */
FLASH_API const char *flash_wal_step_str(uint32_t step);

/**
 * The identity a segment shares with its WAL.  A WAL belongs to exactly one
 * segment incarnation: every WAL file header carries it, and the daemon
 * refuses a WAL whose incarnation is not the segment's (`flashstock serve`).
 */
struct flash_ident {
	uint64_t incarnation;    /* nonzero: random at flash_seg_create, kept by
	                            flash_seg_restore, set by flash_ident_adopt */
	uint64_t wal_lsn;        /* highest WAL LSN the segment reflects (0: never served) */
	int32_t  consumer_pid;   /* pid of the live consumer holding the claim; 0: none */
	uint32_t consumer_slot;  /* its process-table slot (when consumer_pid != 0) */
};

/**
 * Read the segment's identity and who holds the consumer claim.  A claim
 * whose holder died (or whose slot was since taken by another handle) reads
 * as no claim.
 * @param[in]  h    any handle, read-only ones included
 * @param[out] out  the identity
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK.
 * @note Lock-free; reads /proc when a claim is held (liveness of its pid).
 */
FLASH_API int flash_ident_get(flash_t *h, struct flash_ident *out);

/** The segment's activity, summed over every slot (flash_quiet_get). */
struct flash_quiet {
	uint64_t ops;        /* sequence numbers taken by operations so far: grows with
	                        every operation (by one or more), refused ones
	                        included; never shrinks */
	uint64_t consumed;   /* records the consumer has marked durable */
	uint64_t pending;    /* records published into a ring and not yet durable */
	uint32_t in_flight;  /* journals holding an operation between its begin and
	                        its end, of live or dead handles */
	uint32_t _pad;
};

/**
 * Read the segment's activity, for a reader that needs a quiet instant (the
 * daemon's reconciler compares the segment with the WAL only then).  The
 * segment is quiet when pending and in_flight are 0: every change made so
 * far is finished and its record durable.  Two calls that both find it quiet
 * and return the same ops and consumed bracket a span in which no operation
 * changed the segment: whatever the caller read between them is exactly the
 * state the durable WAL describes.
 * @param[in]  h    any handle, read-only ones included
 * @param[out] out  the figures
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note Reads every slot (O(max_procs)); lock-free, changes nothing.
 */
FLASH_API int flash_quiet_get(flash_t *h, struct flash_quiet *out);

/* ------------------------------------------------------------------------
 * 10. Order feed
 *
 * Downstream systems (fulfilment, payment, a message broker) read the
 * records of a WAL directory (the one `flashstock serve --wal DIR` writes)
 * under a durable consumer NAME, like a replication slot:
 *
 *   flash_feed_t *f;
 *   flash_feed_open(dir, "fulfilment", &opts, &f);
 *   while (flash_feed_next(f, &r, 1000) == FLASH_OK) {   // or FLASH_ETIMEOUT: idle
 *       act_on(&r);                          // idempotent by r.fr_rec.order_no / r.fr_lsn
 *       flash_feed_commit(f, r.fr_lsn);      // or after a batch
 *   }
 *
 *  - Order: records come in LSN order, each LSN once per open; the first
 *    record after an open is the one after the committed position.
 *  - At least once: a record is handed out again after a restart (of the
 *    consumer, of serve, of the machine) until a commit covers its LSN.
 *    Downstream drops duplicates by order number (ORDER, CANCEL) or LSN.
 *  - Only durable records: the feed never returns a record before its WAL
 *    frame is fdatasync'd.  The WAL writer publishes its durable LSN in
 *    DIR/DURABLE (a small mapped file; every LSN at or below it is on
 *    disk); readers in other processes wait on it (a futex on the shared
 *    mapping: no busy loop, no system call on the writer's side while no
 *    reader waits).  A WAL whose writer never published (no serve since
 *    this version) reads as empty until a writer opens it.
 *  - Positions are durable: DIR/feed/NAME.pos, written by
 *    flash_feed_commit() as a temporary file, fdatasync, rename, fsync of
 *    DIR/feed.  A commit that returned survives a kill and a reboot.
 *  - Retention: while a consumer is registered, `serve` removes no WAL file
 *    it still needs (the records after its committed position), up to the
 *    daemon's bound (`serve --feed-keep-bytes`, `--feed-keep-age`, like
 *    PostgreSQL's max_slot_wal_keep_size).  Past the bound the files go and
 *    the consumer is "lost": serve logs a line and counts it
 *    (flashstock_feed_lost), flash_feed_list() says FLASH_FEED_LOST, and
 *    flash_feed_next() returns FLASH_ELOST at the gap -- never a silent skip.
 *  - Refill: a feed opened with a MariaDB URL (opts.mysql_url: the
 *    database the daemon's applier writes) serves a lost range from
 *    MariaDB's `orders`, `activities` and `item_stock` rows (they carry
 *    their LSN), then
 *    continues from the WAL.  What MariaDB does not keep per LSN is said,
 *    never invented: see struct flash_feed_rec (fr_missing, fr_gap).
 *
 * Synchronization: a flash_feed_t is used by one thread at a time (no
 * internal lock) and not after fork().  One open feed per consumer name at a
 * time over all processes (an open-file-description lock on
 * DIR/feed/NAME.lock: a second open gets FLASH_EBUSY, a dead holder's lock
 * is dropped by the kernel; listing tests it without taking it).  Any number
 * of consumers and flash_feed_list() callers run beside one writer.
 * ------------------------------------------------------------------------ */

typedef struct flash_feed flash_feed_t;

#define FLASH_FEED_NAME_MAX 64u   /* consumer names: 1..64 of [A-Za-z0-9._-], not starting with '.' */

struct flash_feed_opts {
	uint32_t    from_start;     /* a NEW consumer starts at the oldest record still in the
	                               WAL (1 if none was removed); 0: at the durable end (it
	                               sees what comes after its registration).  Ignored for
	                               a registered consumer: it resumes at its position */
	uint32_t    no_create;      /* 1: an unknown consumer is FLASH_ENOT_FOUND, not registered */
	const char *mysql_url;      /* refill source for a lost range:
	                               mysql://user:pass@host/db?socket=PATH; NULL: none */
	const char *mysql_stream;   /* the applier's applied_lsn stream (NULL: "wal") */
};

/** Fill @p o with the defaults (durable end, register if new, no refill). */
FLASH_API void flash_feed_opts_default(struct flash_feed_opts *o);

/** Where a record came from. */
enum flash_feed_source {
	FLASH_FEED_WAL   = 0,      /* the WAL frame itself: every field */
	FLASH_FEED_MYSQL = 1       /* refilled from MariaDB rows: see fr_missing */
};

/* fr_missing bits: fields of fr_rec a refill could not give back (left zero) */
#define FLASH_FEED_MISS_SLOT  0x1u  /* rec.slot and fr_seq: MariaDB keeps no producer */
#define FLASH_FEED_MISS_TS    0x2u  /* rec.ts_ns: a CANCEL's or a SKU's time is not kept */
#define FLASH_FEED_MISS_VALUE 0x4u  /* rec.value: a SKU's initial units (item_stock keeps
                                       only today's total, restocks included); an
                                       ARCHIVE's counts (order_no, qty, value, user_id) */

/** One record of the feed. */
struct flash_feed_rec {
	uint64_t            fr_lsn;      /* its WAL LSN: increasing; an idempotency key */
	uint64_t            fr_seq;      /* ring seq of the producing handle's slot (WAL only) */
	struct flash_record fr_rec;      /* every field as the WAL holds it (type, order_no,
	                                    user, activity, sku, qty, ts_ns, ...) */
	uint32_t            fr_source;   /* enum flash_feed_source */
	uint32_t            fr_missing;  /* FLASH_FEED_MISS_* (0 for a WAL record) */
	uint64_t            fr_gap;      /* LSNs just below fr_lsn that the feed could NOT serve
	                                    (refill only: RESTOCK records, which MariaDB does not
	                                    keep per LSN, and records its applier refused): LSNs
	                                    fr_lsn - fr_gap .. fr_lsn - 1.  0 from the WAL.  When
	                                    the lost range ends with such LSNs, one record of
	                                    fr_rec.type 0 stands for the range's last LSN (itself
	                                    missing): commit it like any other */
};

/**
 * Open the feed of WAL directory @p wal_dir for consumer @p consumer.
 * A consumer seen for the first time is registered (DIR/feed/NAME.pos
 * written durably) at its start point (opts->from_start) unless
 * opts->no_create; a registered one resumes after its committed position.
 * @param[in]  wal_dir   the WAL directory (it must exist)
 * @param[in]  consumer  the name (FLASH_FEED_NAME_MAX)
 * @param[in]  o         options; NULL: flash_feed_opts_default()
 * @param[out] out       the feed
 * @return FLASH_OK; FLASH_EINVAL (NULL, bad name); FLASH_ENOT_FOUND (no such
 *         directory, or an unknown consumer with no_create); FLASH_EBUSY
 *         (the consumer is open elsewhere); FLASH_EFEED_IDENT (the consumer
 *         registered on a WAL of another incarnation); FLASH_EMYSQL_CONFIG
 *         (bad refill URL, or the refill's MariaDB client cannot be
 *         loaded -- the reason on stderr; nothing registered);
 *         FLASH_ECORRUPT (a bad position file); FLASH_EPERM; FLASH_ENOMEM;
 *         FLASH_ESYS.
 * @note No MariaDB connection is made before a refill is needed.  The
 *       shared library links no MariaDB: a feed opened with a URL loads the
 *       refill plug-in (libflashstock-mysql-VERSION.so, installed beside
 *       libflashstock.so, which links libmariadb) once per process.
 */
FLASH_API int flash_feed_open(const char *wal_dir, const char *consumer, const struct flash_feed_opts *o,
                    flash_feed_t **out);

/**
 * The next record after the last one returned (after the committed
 * position, for the first call), waiting at most @p wait_ms for it to
 * become durable (0: do not wait).
 * @param[out] out  the record (written only with FLASH_OK)
 * @return FLASH_OK; FLASH_ETIMEOUT (nothing durable within @p wait_ms: call
 *         again); FLASH_ELOST (the next record's WAL file was removed and no
 *         refill source is set: the position stays; open with a MariaDB URL,
 *         or flash_feed_drop() and re-register); FLASH_EREFILL (a refill
 *         source is set but MariaDB has not applied the lost range);
 *         FLASH_EMYSQL_RETRY (MariaDB unreachable during a refill: call
 *         again); FLASH_EAHEAD (the position is past the durable end while
 *         the WAL's writer runs: an operator cut the WAL below it, or another
 *         WAL took the directory; without a running writer the feed waits,
 *         since after a reboot DIR/DURABLE may say less than the WAL holds
 *         until serve opens it); FLASH_EFEED_IDENT (the WAL was replaced
 *         under the feed); FLASH_ECORRUPT (a durable frame fails its check:
 *         the WAL is damaged; `flashstock wal verify`); FLASH_EINVAL;
 *         FLASH_ENOMEM; FLASH_ESYS.
 * @note Blocking up to @p wait_ms (futex on DIR/DURABLE); returns at once
 *       while durable records are pending.
 */
FLASH_API int flash_feed_next(flash_feed_t *f, struct flash_feed_rec *out, uint32_t wait_ms);

/**
 * Commit: every record with an LSN <= @p lsn is processed.  Durable when it
 * returns (see the section comment); a later open resumes at @p lsn + 1,
 * and WAL retention may remove what lies at or below it.
 * @param[in] lsn  at most the last LSN returned by flash_feed_next() (a gap
 *                 LSN of fr_gap included); not below the committed position
 *                 (equal is a no-op)
 * @return FLASH_OK; FLASH_EINVAL (NULL, above the last returned LSN, or
 *         below the committed one); FLASH_ESYS (write, fdatasync or rename
 *         failed: the previous position stays on disk).
 */
FLASH_API int flash_feed_commit(flash_feed_t *f, uint64_t lsn);

/**
 * Rewind: the next flash_feed_next() returns again the record after the
 * committed position (e.g. a publisher whose broker refused or lost
 * messages re-sends from the last confirmed one).
 * @return FLASH_OK; FLASH_EINVAL.
 */
FLASH_API int flash_feed_rewind(flash_feed_t *f);

/**
 * Close the feed (no implicit commit: what was not committed is handed out
 * again after the next open).  NULL is fine.
 * @return FLASH_OK.
 */
FLASH_API int flash_feed_close(flash_feed_t *f);

/** A consumer's state. */
enum flash_feed_state {
	FLASH_FEED_OK   = 0,     /* every record after its position is in the WAL */
	FLASH_FEED_LOST = 1      /* WAL it needs was removed (past the retention bound) */
};

/** One registered consumer (flash_feed_list, flash_feed_info_get). */
struct flash_feed_info {
	char     fi_name[FLASH_FEED_NAME_MAX + 1];
	uint32_t fi_state;          /* enum flash_feed_state */
	uint32_t fi_open;           /* 1: a live feed has it open now */
	uint64_t fi_committed_lsn;  /* its position: every LSN <= this is processed */
	uint64_t fi_durable_lsn;    /* the WAL's durable end (DIR/DURABLE) */
	uint64_t fi_first_lsn;      /* the oldest LSN still in the WAL (0: empty) */
	uint64_t fi_lag_records;    /* durable - committed (0 when caught up) */
	uint64_t fi_lag_ns;         /* age of the oldest record not committed (now - its
	                               ts_ns; 0 when caught up or not in the WAL any more) */
	int64_t  fi_created_ns;     /* registration (CLOCK_REALTIME) */
	int64_t  fi_commit_ns;      /* last commit (CLOCK_REALTIME; 0: never) */
};

/**
 * List the consumers registered in @p wal_dir, sorted by name.
 * @param[out] out  array of @p cap entries (may be NULL with cap 0: count only)
 * @param[out] n    the number registered (may exceed @p cap: then the first
 *                  @p cap are written)
 * @return FLASH_OK (no consumer, or no feed directory: *n = 0); FLASH_EINVAL;
 *         FLASH_ENOT_FOUND (no such WAL directory); FLASH_ENOMEM; FLASH_ESYS.
 * @note Lock-free; reads only (position files, DIR/DURABLE, WAL headers).
 */
FLASH_API int flash_feed_list(const char *wal_dir, struct flash_feed_info *out, size_t cap, size_t *n);

/**
 * The state of an open feed (name, positions, lag), as flash_feed_list()
 * would report it.  fi_committed_lsn is the committed position, not what
 * has been returned since.
 * @return FLASH_OK; FLASH_EINVAL.
 */
FLASH_API int flash_feed_info_get(flash_feed_t *f, struct flash_feed_info *out);

/**
 * Unregister @p consumer (like pg_drop_replication_slot): its position file
 * goes and retention no longer keeps WAL for it.
 * @return FLASH_OK; FLASH_ENOT_FOUND; FLASH_EBUSY (open now); FLASH_EINVAL;
 *         FLASH_ESYS.
 */
FLASH_API int flash_feed_drop(const char *wal_dir, const char *consumer);


/* ------------------------------------------------------------------------
 * 11. Reclamation: request-id windows and limit-entry generations
 *
 * A segment runs for months in fixed memory when its request-id and
 * per-user limit tables are windowed: each table is cut into
 * FLASH_GEN_BANKS banks, each an open-addressing table of max_requests /
 * max_users keys (so the two tables take FLASH_GEN_BANKS times the memory
 * of a one-bank segment: flash_seg_size() is the one-bank size, plus
 * (FLASH_GEN_BANKS - 1) x the two tables).  Keys of generation n go into
 * bank n % FLASH_GEN_BANKS; lookups read the current generation and the
 * one before; a bank two generations back is cleared as a whole, after
 * every operation that could still read it has ended, and comes back with
 * every entry empty.  Nothing inside a bank is ever deleted, so probe
 * chains never break.
 *
 *  - Requests: an id is remembered at least req_window_s (and at most about
 *    twice that).  In a windowed segment a request id carries its time:
 *    bits 63..16 are CLOCK_REALTIME milliseconds since the epoch, bits 15..0
 *    random (flash_request_id_new() mints one; any language can: (ms << 16)
 *    | 16 random bits).  An order whose id is older than req_window_s gets
 *    FLASH_EREQ_EXPIRED and changes nothing; one dated more than 60 s ahead
 *    of the engine's clock is FLASH_EINVAL.  So a retry inside the window
 *    gets the first outcome, outside it a distinct code, never a second
 *    order.  A one-bank segment accepts any nonzero id and remembers it for
 *    its life.
 *  - Limits: in a windowed segment the business day is user_gen_s long
 *    (floor((now + day_offset_s) / user_gen_s)); per-day entries live in the
 *    user table's current generation (one generation lasts at least a
 *    business day, so a day's entries are kept while the day lasts).
 *    Per-activity and per-sku entries live in the bank of the generation the
 *    activity was added in: that bank is kept (pinned) until the activity is
 *    archived, and the generation does not move on into it meanwhile
 *    (flash_gen_get() says which activity holds it).
 * ------------------------------------------------------------------------ */

#define FLASH_GEN_BANKS 3u

struct flash_reclaim_opts {
	uint32_t req_window_s;  /* request ids remembered at least this long (86400) */
	uint32_t user_gen_s;    /* business day and user-table generation (86400) */
	uint32_t pad[6];        /* zero */
};

/**
 * Window the request-id and user tables of a segment just created: call it
 * right after flash_seg_create(), before any other process attaches and
 * before any key is inserted (an order with a request id or a limit).  The
 * object grows by the extra banks (reserved like flash_seg_create(); the
 * one-bank tables' memory is given back to the system); this handle is
 * re-mapped, so no other may be attached.  Not crash-safe: a process killed
 * inside leaves a segment that refuses to attach (recreate it).
 * @param[in] o  lengths in seconds, each 1..31536000 (NULL: 86400 each)
 * @return FLASH_OK; FLASH_EINVAL (bad lengths, already windowed, a key
 *         inserted already); FLASH_EBUSY (another handle is attached);
 *         FLASH_ENOMEM; FLASH_ESYS; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_seg_reclaim_set(flash_t *h, const struct flash_reclaim_opts *o);

/**
 * A request id for a windowed segment: CLOCK_REALTIME ms << 16 | 16 random
 * bits (getrandom, buffered per thread).  Never 0.  Thread-safe.
 */
FLASH_API uint64_t flash_request_id_new(void);

enum flash_table { FLASH_TABLE_REQUESTS = 0, FLASH_TABLE_USERS = 1 };

enum flash_bank_state {
	FLASH_BANK_CLEAR    = 0,  /* empty, ready to become current */
	FLASH_BANK_CURRENT  = 1,  /* new keys go here */
	FLASH_BANK_PREVIOUS = 2,  /* still looked up */
	FLASH_BANK_OLD      = 3,  /* two generations back: to be cleared */
	FLASH_BANK_CLEARING = 4,  /* being cleared */
	FLASH_BANK_PINNED   = 5   /* OLD but kept: an activity added in it is not archived */
};

/* Why a generation did not move on (flash_gen_info.wait). */
enum flash_gen_wait {
	FLASH_GEN_WAIT_NONE        = 0,  /* it moved, or nothing kept it */
	FLASH_GEN_WAIT_NOT_DUE     = 1,  /* the current generation is younger than its length */
	FLASH_GEN_WAIT_PINNED      = 2,  /* the bank it needs is pinned by wait_activity */
	FLASH_GEN_WAIT_NOT_CLEARED = 3   /* the bank it needs is not cleared yet */
};

struct flash_gen_bank {
	uint64_t gen;           /* generation it holds (CLEAR: the last one it held) */
	uint32_t keys;          /* keys held */
	uint32_t capacity;      /* keys it may hold (max_requests / max_users) */
	uint32_t state;         /* enum flash_bank_state */
	uint32_t pinned_by;     /* activity id keeping it, 0: none */
};

struct flash_gen_info {
	uint32_t table;         /* enum flash_table */
	uint32_t banks;         /* 1: no reclamation, else FLASH_GEN_BANKS */
	uint32_t gen_s;         /* generation length */
	uint32_t advanced;      /* flash_gen_advance: 1 if it moved on */
	uint64_t gen;           /* current generation */
	int64_t  gen_start_ns;  /* when it became current (0: at creation) */
	uint64_t reclaimed;     /* keys cleared so far */
	uint32_t wait;          /* enum flash_gen_wait */
	uint32_t wait_activity; /* FLASH_GEN_WAIT_PINNED: the activity */
	struct flash_gen_bank bank[FLASH_GEN_BANKS];
};

/**
 * The generations of table @p table: per bank its generation, keys held,
 * capacity, state and pinning activity, and the keys reclaimed so far.
 * Any handle, read-only ones included; changes nothing.
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
FLASH_API int flash_gen_get(flash_t *h, uint32_t table, struct flash_gen_info *out);

#ifdef __cplusplus
}
#endif
#endif /* FLASHSTOCK_H */
