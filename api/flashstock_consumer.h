/*
 * flashstock_consumer.h -- the consumer protocol: what the one process that
 * drains a segment (the daemon, `flashstock serve`; or a tool when no daemon
 * runs) calls, and nothing an application needs.
 *
 * These functions are not exported by libflashstock.so: the daemon, the
 * tools, the benchmarks and the tests link the static library
 * (libflashstock.a), where they are.  An application places orders and reads
 * state through flashstock.h alone, and reads the durable records through
 * the order feed (flashstock.h section 10), never from the rings.
 *
 *   1. Records      flash_ring_drain(), flash_ring_release(), flash_durable_advance(),
 *                   flash_ring_taken(), flash_durable_wait_every()
 *   2. The claim    flash_consumer_claim(), flash_consumer_release()
 *   3. Durability   flash_durability_fail(), flash_durability_fail_why(),
 *                   flash_durability_clear()
 *   4. Identity     flash_ident_adopt(), flash_ident_lsn_set()
 *   5. Recovery     flash_replay(), flash_image(), flash_seg_restore()
 *   6. Generations  flash_gen_advance(), flash_gen_clear()
 *
 * Every call follows flashstock.h's caveats (one thread per handle, no use
 * after fork, one code space of results).
 */
#ifndef FLASHSTOCK_CONSUMER_H
#define FLASHSTOCK_CONSUMER_H

#include "flashstock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * 1. Records: drain the rings, release what was written, mark it durable
 * (struct flash_record and its types: flashstock.h section 9)
 * ------------------------------------------------------------------------ */

/**
 * Called for each drained record.  @p seq is the record's position in its
 * handle's ring: it starts at 1 and grows by one per record of that slot, for
 * the life of the segment (a slot reused by a new handle continues it).
 * Return nonzero to stop draining; the record passed is consumed either way.
 */
typedef int (*flash_record_fn)(void *arg, const struct flash_record *rec, uint64_t seq);

/**
 * Drain records from every handle's ring.  Calls @p fn for each record, at
 * most @p max records in all; stops early if @p fn returns nonzero.  Each
 * handle's records come in ring order, and across handles in causal order: a
 * record comes after every record whose effect its operation saw -- the order
 * a cancel cancels, the cancel or restock that gave back the units or the
 * limit slot an order took, the activity and sku an order is for -- also for
 * records made while no consumer ran.  A record published while the drain
 * runs may be left for the next drain.
 * @param[out] drained  records consumed (may be NULL)
 * @return FLASH_OK; FLASH_EBUSY (another live handle holds the consumer
 *         claim, flash_consumer_claim(): a daemon serves the segment; nothing
 *         was drained or changed); FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD; FLASH_ECORRUPT.
 * Draining does NOT free ring space: a record stays in its ring until the
 * consumer calls flash_ring_release(h, rec->slot, seq) once it has written
 * the record where its successor finds it, or flash_durable_advance() (a
 * consumer without a WAL calls it at once, e.g. from @p fn; that is
 * allowed).  A producer whose ring is full gets FLASH_EBUSY.  A new consumer
 * (after the previous one died) is handed again every record not yet
 * released.
 * @note Exactly one consumer may drain a segment at a time (the daemon, or a
 *       tool when no daemon runs).  While a live handle holds the consumer
 *       claim, only that handle drains (others get FLASH_EBUSY); with no
 *       live claim anyone may.  Two drains without a claim, or one that
 *       started just before a claim was taken, corrupt nothing in the
 *       segment but may hand a record to both.
 */
int flash_ring_drain(flash_t *h, flash_record_fn fn, void *arg, uint32_t max,
                     uint32_t *drained);

/**
 * Consumer: every record of @p slot with seq <= @p seq is written where the
 * next consumer will find it (a daemon: in its WAL file, not yet synced):
 * their ring room is free for the producer, and a consumer started after
 * this one dies is not handed them again.  Not durable yet: sync waiters
 * wait for flash_durable_advance().  A @p seq at or below the released
 * position changes nothing.
 * @return FLASH_OK; FLASH_EINVAL (slot out of range, @p seq before the
 *         durable mark or past the records published); FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_ring_release(flash_t *h, uint32_t slot, uint64_t seq);

/**
 * Consumer: every record of @p slot with seq <= @p seq is durable (and
 * released, if it was not).  Wakes the handles of that slot waiting in
 * FLASH_DURABILITY_SYNC mode.
 * @return FLASH_OK; FLASH_EINVAL (slot out of range, @p seq before the
 *         durable mark or past the records published); FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_durable_advance(flash_t *h, uint32_t slot, uint64_t seq);

/**
 * Consumer: @p slot's durable mark and the position up to which its records
 * were released (flash_ring_release) -- where a new consumer starts.  The
 * records between the two were written by a consumer that died before their
 * sync: a daemon whose WAL holds them (wal_open makes them durable) marks
 * them durable; one whose WAL lacks them must not serve the segment, which
 * has their effects.
 * @param[out] durable  records made durable (flash_durable_advance)
 * @param[out] taken    records released (>= *durable)
 * @return FLASH_OK; FLASH_EINVAL (slot out of range, an output NULL);
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_ring_taken(flash_t *h, uint32_t slot, uint64_t *durable, uint64_t *taken);

/**
 * Wait until every record published in any slot before the call -- by
 * this handle or any other, live or dead -- is durable: the segment's
 * state as read before the call is then what a rebuild from the WAL gives
 * back.  For a helper of the consumer (the lease agent at its start) that
 * judges from totals other handles' records moved, and whose next step
 * elsewhere must never be on disk before them.
 * @return FLASH_OK; FLASH_EFATE_UNKNOWN (@p wait_ms passed first);
 *         FLASH_EDURABILITY (the WAL failed); FLASH_EINVAL (wait_ms 0);
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_durable_wait_every(flash_t *h, uint32_t wait_ms);

/* ------------------------------------------------------------------------
 * 2. The claim: one consumer per segment
 * ------------------------------------------------------------------------ */

/**
 * Claim the segment's one consumer (the daemon).  The claim names this
 * handle's slot and that slot's generation, so it ends with the handle
 * (flash_close, flash_consumer_release) or with its process: a claim whose
 * holder died is taken over at once, also after its pid was reused.
 * @param[out] holder_pid  with FLASH_EBUSY, the pid of the live holder (may be NULL)
 * @return FLASH_OK (also when this handle holds it already); FLASH_EBUSY
 *         (another live handle holds it: nothing changed); FLASH_EINVAL;
 *         FLASH_EREADONLY; FLASH_EFORK.
 * @note Two claims racing: exactly one wins (one CAS on the claim word).
 *       While it is held, flash_ring_drain() by any other handle is
 *       FLASH_EBUSY.  A destroyed segment (flash_seg_destroy_checked) may
 *       still be claimed, and its consumer's calls still work: what its
 *       rings hold can reach the WAL; every other handle's writes answer
 *       FLASH_EDESTROYED.
 */
int flash_consumer_claim(flash_t *h, int32_t *holder_pid);

/**
 * Give the consumer claim up, if this handle holds it (flash_close does).
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK.
 */
int flash_consumer_release(flash_t *h);

/* ------------------------------------------------------------------------
 * 3. Durability: the WAL failed, and the failure is over
 * (flash_durability_get() reads it: flashstock.h section 9)
 * ------------------------------------------------------------------------ */

/**
 * Consumer: the WAL failed (write or fdatasync).  Sticky: from now on orders
 * in sync mode return FLASH_EDURABILITY, and flash_durability_get() reports
 * it, with no reason (flash_durability_fail_why() gives one) -- until the
 * consumer clears it (flash_durability_clear()).
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK;
 *         FLASH_EWRONG_THREAD.
 */
int flash_durability_fail(flash_t *h);

/**
 * Consumer: flash_durability_fail(), saying why.  The step and its errno
 * are kept in the segment with the time of the call (CLOCK_REALTIME) for
 * flash_durability_get(): what `flashstock status` shows, after the daemon
 * that failed has exited.  The first failure is the cause: while the
 * segment is failed, a later call changes nothing but the wake-up.
 * @param[in] step  enum flash_wal_step
 * @param[in] err   the errno of the failed step (0: not known)
 * @return FLASH_OK; FLASH_EINVAL (step out of range); FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 * @note One writer: the consumer.  The reason is stored before the flag,
 *       so a reader that sees the flag sees its reason.
 */
int flash_durability_fail_why(flash_t *h, uint32_t step, int err);

/**
 * Consumer holding the claim (flash_consumer_claim): the failure is over --
 * sync orders are acknowledged again.  Only for a daemon that has proven
 * its WAL whole up to the durable mark and holds it open for append: a
 * failed segment's records beyond that point must reach the new WAL before
 * anyone is told they are durable, which the daemon's first drain does.
 * Crash-safe as a single store: a daemon killed before it leaves the
 * segment failed and the next one checks again; killed after it, the WAL
 * it left is whole.  Not failed: nothing to do.
 * @return FLASH_OK; FLASH_EBUSY (this handle does not hold the consumer
 *         claim: nothing changed); FLASH_EINVAL; FLASH_EREADONLY;
 *         FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_durability_clear(flash_t *h);

/* ------------------------------------------------------------------------
 * 4. Identity: the segment and its WAL (flash_ident_get(): flashstock.h)
 * ------------------------------------------------------------------------ */

/**
 * Recovery: make a segment that was never served carry the identity of the
 * WAL it is rebuilt from.
 * @param[in] incarnation  the WAL's incarnation (nonzero)
 * @return FLASH_OK (also when it carries it already); FLASH_EEXIST (the
 *         segment reflects a WAL already: wal_lsn != 0; nothing changed);
 *         FLASH_EINVAL (0); FLASH_EREADONLY; FLASH_EFORK.
 */
int flash_ident_adopt(flash_t *h, uint64_t incarnation);

/**
 * Consumer: the segment reflects the WAL up to @p lsn (every record of the
 * segment with a smaller or equal LSN is durable in its WAL, and nothing
 * after it is).  Called by the daemon after each commit and after recovery.
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EREADONLY; FLASH_EFORK.
 */
int flash_ident_lsn_set(flash_t *h, uint64_t lsn);

/* ------------------------------------------------------------------------
 * 5. Recovery: re-apply the WAL, image a segment, restore an image
 * ------------------------------------------------------------------------ */

/**
 * Re-apply one record to this segment, as recovery from the WAL does after a
 * reboot: the record's effect (catalog entry, order with its exact number and
 * limit slot, request id, cancel, restock) is made unless it is already
 * there: applying an ACTIVITY, SKU, ORDER or CANCEL record twice changes
 * nothing, nor does an ACTIVITY or SKU record of an activity archived since.
 * A RESTOCK has no identity of its own: the WAL's LSN makes its
 * replay exactly-once.  No new record is emitted; tokens are not restored.
 * A cart's records (FLASH_REC_F_CART, one per line) are kept by the handle
 * until its last line (FLASH_REC_F_LAST), then applied as the one operation
 * they are: each earlier line answers FLASH_OK and changes nothing yet; a
 * cart whose last line never comes is never applied.  Its later lines
 * without their first (the records before them were in a snapshot) are
 * FLASH_EEXIST if the cart is there, FLASH_EINVAL if not.
 * @return FLASH_OK; FLASH_EEXIST (already applied: nothing changed);
 *         FLASH_EINVAL (malformed record, or an ORDER whose number is
 *         another box's or one no allocator issues, the last of a box's
 *         counter: a segment that has numbered no order yet takes the box
 *         of the first one it replays); FLASH_ENOT_FOUND (refers
 *         to an unknown activity/sku/order); FLASH_ESOLD_OUT (an order or negative
 *         restock the segment's stock cannot cover: the WAL disagrees with
 *         the segment); FLASH_ELIMIT (the order's limit slot is held);
 *         FLASH_EFULL; FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_replay(flash_t *h, const struct flash_record *rec);

/**
 * The bytes of the segment as @p h maps them, for a snapshot.  The image is
 * consistent only while no operation runs on the segment (e.g. the caller's
 * handle is its only user and is between calls).
 * @param[out] base  start of the mapping (read it, never write through it)
 * @param[out] len   its size in bytes
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_image(const flash_t *h, const void **base, uint64_t *len);

/**
 * Create a segment from an image of another one (a snapshot: persist/storage/snapshot.h).
 * The image is checked first exactly as flash_open() checks an object, with
 * the same code for each check: size at least a header (FLASH_ESIZE), magic
 * (FLASH_EMAGIC), layout version (FLASH_EVERSION), header checksum
 * (FLASH_ECHECKSUM), @p len equal to the header's size (FLASH_ESIZE), region
 * table (FLASH_ELAYOUT).  Then the object is made as flash_seg_create() makes
 * one (O_EXCL, exact mode), the image copied in, and everything that belonged
 * to the image's processes cleared: every process-table slot is free (its
 * sequence, counters and order numbers kept, so tags are never reissued),
 * journals idle, rings empty, no consumer registered or claimed, no WAL
 * failure, a fresh admin mutex.  The identity (flash_ident: incarnation and
 * WAL LSN) is the image's: a restored segment still belongs to its WAL.  The header is written last (magic, then checksum): a
 * half-made object never validates.
 * @param[in] name  POSIX shm name of the new segment
 * @param[in] o     mode and gid of the new object (other fields ignored: the
 *                  capacities are the image's); NULL keeps the image's
 * @param[in] img   the image (flash_image() of a quiescent segment)
 * @param[in] len   its bytes
 * @return FLASH_OK; an attach code above for a bad image (nothing created);
 *         FLASH_EINVAL (bad name, NULL image, bad mode); FLASH_EEXIST (name
 *         taken); FLASH_EPERM; FLASH_ENOMEM; FLASH_ESYS.
 * @note Creates nothing on failure.
 */
int flash_seg_restore(const char *name, const struct flash_seg_opts *o, const void *img, size_t len);

/* ------------------------------------------------------------------------
 * 6. Generations of a windowed segment (flash_gen_get(): flashstock.h
 * section 11)
 * ------------------------------------------------------------------------ */

/**
 * Move table @p table's generation on if it is due at @p now_ns (the current
 * one has lasted its length; the request table's also 60 s more, the future
 * a request id may carry) and the bank it needs is clear.  A journaled
 * operation with a FLASH_REC_GEN record (replay does the same).  Otherwise
 * nothing changes and @p out says why (the entries are kept longer: always
 * safe).
 * @param[out] out  the table after the call (may be NULL)
 * @return FLASH_OK (moved or not: out->advanced); FLASH_EINVAL (bad table,
 *         or a segment without reclamation); FLASH_EBUSY (ring full);
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_gen_advance(flash_t *h, uint32_t table, int64_t now_ns, struct flash_gen_info *out);

/**
 * Clear the bank two generations back of table @p table, if it holds keys
 * and no activity pins it: waits until every operation open now has ended
 * (at most 1 s), then empties every entry and its fill count and marks it
 * clear (a journaled operation with a FLASH_REC_GEN record).  Every store is
 * idempotent: a clearer killed at any point is finished by recovery or by
 * the next call.
 * @param[out] cleared  keys removed (0: nothing to clear) (may be NULL)
 * @return FLASH_OK; FLASH_EBUSY (an operation did not end within 1 s, ring
 *         full, or another live handle is clearing it); FLASH_EINVAL;
 *         FLASH_EREADONLY; FLASH_EFORK; FLASH_EWRONG_THREAD.
 */
int flash_gen_clear(flash_t *h, uint32_t table, uint64_t *cleared);

#ifdef __cplusplus
}
#endif
#endif /* FLASHSTOCK_CONSUMER_H */
