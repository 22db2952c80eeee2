/*
 * reconcile.h -- prove that the segment, the WAL and MySQL agree.
 *
 * Three witnesses of the same history:
 *   - the segment (flash_sku_get/flash_sku_at, flash_order_get),
 *   - the WAL, folded record by record into per-(activity, sku) totals
 *     (fold_*: whoever replays the WAL feeds every record to a fold),
 *   - MySQL (reconcile_sql.h: item_stock and sums over orders).
 * reconcile_compare() compares, per (activity, sku): presence, total,
 * available, sold; inside each witness: available + sold = total and sold =
 * units of active orders; in MySQL: no user above the per-user limit; and,
 * on request, every order of the segment, or of the WAL, against its MySQL
 * row.  Every difference is listed; none is hidden or repaired here.
 * reconcile_repair() (reconcile_repair.c) repairs MySQL from the WAL
 * and prints each change; the daemon's periodic pass is serve_reconcile.h.
 *
 * Any witness may be left out (NULL); at least one must be given.  The
 * comparison is meaningful at quiescence (no order in flight, the applier
 * caught up); the caller arranges that.
 */
#ifndef RECONCILE_H
#define RECONCILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flashstock.h"
#include "mysql_apply.h"
#include "reconcile_sql.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the WAL fold ---------------------------------------------------------- */

typedef struct fold fold_t;

/** Per-(activity, sku) state after the records folded so far (signed: a
 *  negative value is itself a finding). */
struct fold_sku {
	uint32_t activity_id;
	uint32_t sku_id;
	int64_t  total;
	int64_t  available;
	int64_t  sold;              /* units of orders minus units cancelled */
	int64_t  active_orders;     /* orders minus cancels */
	uint64_t last_lsn;          /* LSN of the last record that touched it (0 if unknown) */
};

/** @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM. */
int fold_new(fold_t **out);
void fold_free(fold_t *f);

/**
 * Fold one record (SKU creates, ORDER/CANCEL/RESTOCK move; ACTIVITY and
 * GEN are ignored; ARCHIVE notes its activity archived: its skus keep their
 * WAL state, which the comparison holds against MySQL, and their absence
 * from the segment is no difference).  Records of a sku never created are
 * folded anyway (from zero), so the comparison shows them.
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
 * Fold every record of a WAL directory (persist/wal.h) that no wal_t has
 * open.  A WAL that still starts at LSN 1 is folded from its first frame,
 * record by record, so the fold stays a witness of its own.  One whose old
 * files were removed (persist/snapshot.h) starts from the fold section of
 * the newest valid snapshot in the directory that the WAL continues without
 * a gap, then folds the frames after that snapshot's LSN; with no such
 * snapshot the history is incomplete: FLASH_ECORRUPT, *wal_rc = FLASH_EWAL_GAP.
 * @param[out] wal_rc  the replay's stop cause (FLASH_OK: clean end), may be NULL
 * @return FLASH_OK; FLASH_ECORRUPT (stopped at a bad frame; what came
 *         before it is folded); FLASH_ESYS; FLASH_EINVAL; FLASH_ENOMEM.
 */
int fold_wal(fold_t *f, const char *wal_dir, int *wal_rc);

/**
 * The folded state, ordered by (activity_id, sku_id).  The array belongs to
 * the fold and stays valid until the next fold_record() or free.
 */
int fold_skus(fold_t *f, const struct fold_sku **v, size_t *n);

/** The fold's sku (@p a, @p s), or NULL (none, or out of memory). */
const struct fold_sku *fold_sku_find(fold_t *f, uint32_t a, uint32_t s);

/**
 * One order as the WAL has it.  The fold keeps one per order number in a
 * dense array indexed by number (64 bytes each, like the segment's own order
 * table), so the WAL can be compared with MySQL order by order and MySQL
 * repaired from it.
 */
struct fold_order {
	uint64_t user_id;
	uint64_t request_id;
	int64_t  created_ns;        /* the ORDER record's ts_ns */
	uint64_t lsn;               /* LSN of the ORDER record */
	uint64_t cancel_lsn;        /* LSN of the CANCEL record, 0 while active */
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t qty;
	uint32_t biz_day;
	uint16_t limit_slot;
	uint8_t  state;             /* enum flash_order_state (NONE: no ORDER record) */
	uint8_t  quota_returned;    /* the cancel gave the limit slot back */
	uint32_t _pad;
};

/**
 * The order numbered @p order_no.
 * @return FLASH_OK; FLASH_ENOT_FOUND (no ORDER record for it); FLASH_EINVAL.
 */
int fold_order_get(const fold_t *f, uint64_t order_no, struct fold_order *out);

/** The activities an ARCHIVE record folded so far named, ascending (the
 *  array belongs to the fold, valid until the next fold or free). */
int fold_archived(fold_t *f, const uint32_t **v, size_t *n);

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
 * @return FLASH_OK; FLASH_ECORRUPT (no snapshot bridges the gap; *wal_rc =
 *         FLASH_EWAL_GAP); FLASH_ESYS; FLASH_ENOMEM; FLASH_EINVAL.
 */
int fold_start(fold_t *f, const char *wal_dir, uint64_t upto_lsn, int *wal_rc);

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
int fold_wal_upto(fold_t *f, const char *wal_dir, uint64_t upto_lsn, int *wal_rc);

struct wal;
/**
 * Fold the durable frames of an open WAL (wal_read_durable(): safe while its
 * writer appends) from fold_lsn(f) + 1 through @p upto_lsn (0: its
 * durable LSN).  For the daemon's periodic reconciler.
 * @return as fold_wal().
 */
int fold_wal_live(fold_t *f, struct wal *w, uint64_t upto_lsn, int *wal_rc);

/* ---- the comparison ---------------------------------------------------------- */

enum witness {
	FLASH_W_SEGMENT = 0x1,
	FLASH_W_WAL     = 0x2,
	FLASH_W_MYSQL   = 0x4
};

enum diff_kind {
	DIFF_MISSING    = 1,  /* (activity, sku) or order absent from the witnesses in `witnesses` */
	DIFF_TOTAL      = 2,  /* witnesses disagree on total */
	DIFF_AVAILABLE  = 3,  /* ... on available */
	DIFF_SOLD       = 4,  /* ... on sold */
	DIFF_BALANCE    = 5,  /* available + sold != total inside one witness */
	DIFF_ORDER_SUM  = 6,  /* sold != units of active orders inside one witness */
	DIFF_USER_LIMIT = 7,  /* a user holds more than K slots, or a slot above K (MySQL) */
	DIFF_ORDER      = 8   /* an order differs between the segment and MySQL */
};

const char *diff_name(int kind);

#define DIFF_NA INT64_MIN     /* value not given by that witness */

struct diff {
	uint16_t kind;              /* enum diff_kind */
	uint16_t witnesses;         /* FLASH_W_* involved (MISSING: those lacking it) */
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t _pad;
	uint64_t order_no;          /* ORDER, MISSING of an order */
	uint64_t user_id;           /* USER_LIMIT, ORDER */
	int64_t  seg, wal, sql;     /* the compared values, DIFF_NA where not given */
	char     what[96];          /* which field, in words */
};

#define RECONCILE_ORDERS     0x1u  /* also compare every order of the segment with MySQL */
#define RECONCILE_WAL_ORDERS 0x2u  /* also compare every order of the WAL fold with MySQL */

struct reconcile_report {
	struct diff *diffs;   /* malloc'ed; reconcile_report_free() */
	size_t   n;                 /* differences stored in diffs */
	size_t   cap;
	uint64_t found;             /* differences found: n, plus any not stored
	                               (past 2^20 or out of memory); 0 = agreement */
	uint32_t witnesses;         /* FLASH_W_* compared */
	uint64_t skus;              /* distinct (activity, sku) seen */
	uint64_t orders_checked;    /* order numbers compared with MySQL (segment and WAL each count) */
	uint64_t units;             /* sum of the largest total seen per sku */
	uint64_t diff_units;        /* sum per sku of the largest |difference| in available/sold/total */
};

/**
 * Compare the witnesses given (see the file comment).
 * @param[in]  h      segment handle, or NULL
 * @param[in]  m      MySQL applier handle, or NULL
 * @param[in]  wal    fold of the WAL, or NULL
 * @param[in]  flags  0, RECONCILE_ORDERS (needs h and m),
 *                    RECONCILE_WAL_ORDERS (needs wal and m)
 * @param[out] rep    the differences (rep->found == 0: all agree)
 * @return FLASH_OK (whatever the number of differences); FLASH_EINVAL (no
 *         witness, NULL rep); FLASH_ENOMEM; a segment error (FLASH_ECORRUPT);
 *         FLASH_EMYSQL_RETRY / FLASH_EMYSQL.
 */
int reconcile_compare(flash_t *h, mdb_t *m, fold_t *wal, unsigned flags,
                    struct reconcile_report *rep);

void reconcile_report_free(struct reconcile_report *rep);

/**
 * One difference as the text line reconcile_print() writes, without
 * the newline ("DIFF kind activity=A sku=S [witnesses] ... (what)").
 */
void diff_format(const struct diff *d, char *buf, size_t len);

/**
 * Print every difference, one per line ("DIFF kind activity/sku ..."), or
 * as one JSON object {"diffs":[...],"skus":N,...} when @p json.
 */
void reconcile_print(const struct reconcile_report *rep, FILE *out, int json);

/* ---- one run, for commands ------------------------------------------------------ */

struct reconcile_run_opts {
	const char *segment;                 /* segment name (opened read-only), or NULL */
	const char *wal_dir;                 /* WAL directory to fold (no writer may have it open), or NULL */
	const struct mdb_opts *mysql;/* MySQL connection, or NULL */
	unsigned    flags;                   /* RECONCILE_ORDERS */
	int         json;                    /* print one JSON object instead of lines */
	double      alert_ratio;             /* alert when diff_units / units exceeds it; 0 = 0.001 */
	int         repair;                  /* make MySQL agree with the WAL (needs wal_dir and
	                                        mysql): see reconcile_run() */
};

/**
 * Open the witnesses named in @p o, reconcile, print the report to @p out
 * and an ALERT line to @p err when differing units exceed o->alert_ratio
 * of all units.  Nothing is repaired unless o->repair.
 *
 * With o->repair the WAL is the authority for MySQL.  In one transaction
 * that first locks the applied_lsn row (so the applier waits; the row itself
 * is never written, so it never moves), the WAL is folded up to MySQL's
 * applied LSN A and compared with MySQL (stock rows, and every order); each
 * difference MySQL can be brought back from is changed, and one line is
 * printed per change before the commit:
 *   "REPAIR item_stock A/S available 10 -> 9"   (total, available, sold)
 *   "REPAIR item_stock insert A/S total T available V sold S"
 *   "REPAIR orders insert N activity A sku S user U qty Q ACTIVE|CANCELLED"
 *   "REPAIR orders N status ACTIVE -> CANCELLED" (one line per column)
 * Each change runs under its own savepoint: one MySQL refuses (a unique key,
 * an unknown activity) is rolled back alone and printed "NOT REPAIRED".
 * What cannot be repaired from the WAL is printed "NOT REPAIRED ... (reason)"
 * and left as it is: segment-side differences (the segment, when named, is
 * compared with the whole WAL), MySQL rows the WAL does not have, per-user
 * limit breaches, a WAL inconsistent in itself.  Then everything is checked
 * again (MySQL at its applied LSN then, and the segment).
 * @return 0 when the witnesses agree (after repair: the re-check found no
 *         difference), 1 when a difference was found (remains), 2 when the
 *         comparison could not be made (the reason is on @p err).
 */
int reconcile_run(const struct reconcile_run_opts *o, FILE *out, FILE *err);

/**
 * The repair of reconcile_run() (o->repair) on open witnesses: @p m,
 * the WAL in o->wal_dir, and the segment @p h (may be NULL; it is only
 * compared, never changed).  (reconcile_repair.c)
 * @return as reconcile_run().
 */
int reconcile_repair(flash_t *h, mdb_t *m, const struct reconcile_run_opts *o,
                           FILE *out, FILE *err);

#ifdef __cplusplus
}
#endif
#endif /* RECONCILE_H */
