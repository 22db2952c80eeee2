/*
 * fold.h -- the WAL fold: records folded into per-(activity, sku) totals and
 * one entry per order, the WAL's own account of the sale.  Storage layer:
 * the snapshot keeps a fold section (snapshot.h) and a fold resumes from
 * it; the reconciler (reconcile.h) holds a fold against the segment and
 * MariaDB; the rebuild and the repair read orders from it.  It calls the
 * WAL (wal.h) and the snapshot reader, nothing of MariaDB or the daemon.
 */
#ifndef FOLD_H
#define FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fold fold_t;

/** Per-(activity, sku) state after the records folded so far (signed: a
 *  negative value is itself a finding). */
struct fold_sku {
	uint32_t activity_id;
	uint32_t sku_id;
	int64_t  total;
	int64_t  available;
	int64_t  sold;              /* units of ACTIVE orders: orders and confirms minus
	                               units cancelled */
	int64_t  active_orders;     /* ACTIVE orders: orders and confirms minus cancels */
	uint64_t last_lsn;          /* LSN of the last record that touched it (0 if unknown) */
	int64_t  reserved;          /* units of RESERVED orders (reservations not paid yet).
	                               Last: a snapshot written before reservations holds
	                               the members above it only (snapshot.c reads both) */
};

/** @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM. */
int fold_new(fold_t **out);
void fold_free(fold_t *f);

/**
 * Fold one record (SKU creates, ORDER/CANCEL/RESTOCK/CONFIRM/EXPIRE move
 * units as wal_rec_moves() says; ACTIVITY (an add or new terms), PRICE and
 * GEN move none and are ignored; ARCHIVE notes its activity archived: its skus keep their
 * WAL state, which the comparison holds against MySQL, and their absence
 * from the segment is no difference).  Records of a sku never created are
 * folded anyway (from zero), so the comparison shows them.  A cart's
 * lines (FLASH_REC_F_CART) are folded when its last line comes, each in
 * its own sku; the cart is one order (its line 0's entry, lines = n); the
 * lines of a cart a torn WAL cut are never folded (fold.c says how a torn
 * one is told).
 * @return FLASH_OK; FLASH_EINVAL (NULL or unknown type); FLASH_ENOMEM.
 */
int fold_record(fold_t *f, const struct flash_record *rec, uint64_t lsn);

/**
 * Add per-(activity, sku) state folded elsewhere (a snapshot's fold
 * section) as if its records had been folded here; last_lsn keeps the larger.
 * @return FLASH_OK; FLASH_EINVAL (NULL with n > 0); FLASH_ENOMEM.
 */
int fold_seed(fold_t *f, const struct fold_sku *v, size_t n);

/**
 * Fold every record of a WAL directory (persist/storage/wal.h) that no wal_t has
 * open.  A WAL that still starts at LSN 1 is folded from its first frame,
 * record by record, so the fold stays a witness of its own.  One whose old
 * files were removed (persist/storage/snapshot.h) starts from the fold section of
 * the newest valid snapshot in the directory that the WAL continues without
 * a gap, then folds the frames after that snapshot's LSN; with no such
 * snapshot the history is incomplete: FLASH_EWAL_GAP.
 * @return FLASH_OK; the WAL's stop cause as wal_replay() names it (a bad
 *         frame or file: FLASH_EWAL_CRC, FLASH_EWAL_PAST_END, ...; see
 *         wal_rc_is_stop()), what came before it folded (fold_lsn() says up
 *         to where); FLASH_EWAL_GAP; FLASH_EWAL_TYPE (a frame or record of a
 *         type the fold does not know); FLASH_ESYS; FLASH_EINVAL; FLASH_ENOMEM.
 */
int fold_wal(fold_t *f, const char *wal_dir);

/**
 * The folded state, ordered by (activity_id, sku_id).  The array belongs to
 * the fold and stays valid until the next fold_record() or free.
 */
int fold_skus(fold_t *f, const struct fold_sku **v, size_t *n);

/** The fold's sku (@p a, @p s), or NULL (none, or out of memory). */
const struct fold_sku *fold_sku_find(fold_t *f, uint32_t a, uint32_t s);

/**
 * One order as the WAL has it.  The fold keeps one per order number in a
 * hash table by number (80 bytes each: the segment's 64 and a reservation's
 * pay-by time and confirm LSN, which a repaired MySQL row must carry), so
 * the WAL can be compared with MySQL order by order and MySQL repaired
 * from it.
 */
struct fold_order {
	uint64_t user_id;
	uint64_t request_id;
	int64_t  created_ns;        /* the ORDER record's ts_ns */
	uint64_t lsn;               /* LSN of the ORDER record */
	uint64_t cancel_lsn;        /* LSN of the CANCEL or EXPIRE record, 0 while
	                               active or reserved */
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t qty;
	uint32_t biz_day;
	uint16_t limit_slot;
	uint8_t  state;             /* enum flash_order_state (NONE: no ORDER record;
	                               RESERVED, then ACTIVE or EXPIRED or CANCELLED,
	                               for a reservation) */
	uint8_t  quota_returned;    /* the cancel or expiry gave the limit slot back */
	uint16_t lines;             /* 1: a plain order; 2..16: a cart (flash_cart_order),
	                               whose entry is its line 0's (sku_id, qty) */
	uint16_t _pad;
	int64_t  pay_by_ns;         /* a reservation's pay-by time (its ORDER's value); 0: a
	                               plain order */
	uint64_t confirm_lsn;       /* LSN of a reservation's CONFIRM record, 0: none */
};

/**
 * The order numbered @p order_no.
 * @return FLASH_OK; FLASH_ENOT_FOUND (no ORDER record for it); FLASH_EINVAL.
 */
int fold_order_get(const fold_t *f, uint64_t order_no, struct fold_order *out);

/** The activities an ARCHIVE record folded so far named, ascending (the
 *  array belongs to the fold, valid until the next fold or free). */
int fold_archived(fold_t *f, const uint32_t **v, size_t *n);

/**
 * The numbers of every order folded (an ORDER record seen), ascending, in
 * *out (malloc'd: the caller frees it), *n of them.
 * @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM.
 */
int fold_order_numbers(const fold_t *f, uint64_t **out, size_t *n);

/** Lines of carts read but not folded: their last line is still to come. */
uint64_t fold_cart_lines_open(const fold_t *f);

/** Lines of carts dropped as torn (their last line never came). */
uint64_t fold_cart_lines_torn(const fold_t *f);

/** Highest order number folded (0: none). */
uint64_t fold_orders_max(const fold_t *f);

/** LSN of the last frame folded (0: none); the next fold starts after it. */
uint64_t fold_lsn(const fold_t *f);

/**
 * Prepare a fresh fold for the WAL in @p wal_dir: when the WAL no longer
 * starts at LSN 1 (files removed behind snapshots), seed it from the newest
 * valid snapshot at or below @p upto_lsn (0: any) that the WAL continues;
 * the fold then resumes after that snapshot's LSN.  Orders placed before it
 * are known only through their sums, so the order-by-order comparison skips
 * MySQL rows the fold lacks.  Nothing to do for a fold under way or a WAL
 * that starts at 1.  fold_wal_upto() calls it itself.
 * @return FLASH_OK; FLASH_EWAL_GAP (no snapshot bridges the removed files);
 *         FLASH_ESYS; FLASH_ENOMEM; FLASH_EINVAL.
 */
int fold_start(fold_t *f, const char *wal_dir, uint64_t upto_lsn);

/** The LSN a seeded fold started after (0: it folded from the first record). */
uint64_t fold_base_lsn(const fold_t *f);

/**
 * Fold the frames of a WAL directory that no wal_t has open (or whose
 * writer has made them durable) from fold_lsn(f) + 1 through
 * @p upto_lsn (0: to the end).  A fold is incremental: call it again with a
 * larger @p upto_lsn to go on.  After FLASH_OK, fold_lsn(f) <
 * @p upto_lsn means the WAL ends before it.
 * @return as fold_wal().
 */
int fold_wal_upto(fold_t *f, const char *wal_dir, uint64_t upto_lsn);

struct wal;
/**
 * Fold the durable frames of an open WAL (wal_read_durable(): safe while its
 * writer appends) from fold_lsn(f) + 1 through @p upto_lsn (0: its
 * durable LSN).  For the daemon's periodic reconciler.
 * @return as fold_wal().
 */
int fold_wal_live(fold_t *f, struct wal *w, uint64_t upto_lsn);

#ifdef __cplusplus
}
#endif
#endif /* FOLD_H */
