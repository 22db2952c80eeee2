/*
 * reconcile.h -- prove that the segment, the WAL and MySQL agree.
 *
 * Three witnesses of the same history:
 *   - the segment (flash_sku_get/flash_sku_at, flash_order_get),
 *   - the WAL, folded record by record into per-(activity, sku) totals
 *     (fold.h: whoever replays the WAL feeds every record to a fold),
 *   - MySQL (reconcile_sql.h: item_stock and sums over orders).
 * reconcile_compare() compares, per (activity, sku): presence, total,
 * available, reserved, sold; inside each witness: available + reserved +
 * sold = total, sold = units of active orders and reserved = units of
 * reserved orders (reservations not paid; the segment's reserved units are
 * summed over its RESERVED orders, and its sold is what remains); in MySQL: no user above the per-user limit; and,
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
#include "fold.h"
#include "mysql_apply.h"
#include "reconcile_sql.h"

#ifdef __cplusplus
extern "C" {
#endif

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
	DIFF_BALANCE    = 5,  /* available + reserved + sold != total inside one witness */
	DIFF_ORDER_SUM  = 6,  /* sold != units of active orders, or reserved != units of
	                         reserved orders, inside one witness */
	DIFF_USER_LIMIT = 7,  /* a user holds more than K slots, or a slot above K (MySQL) */
	DIFF_ORDER      = 8,  /* an order differs between the segment and MySQL */
	DIFF_RESERVED   = 9   /* witnesses disagree on reserved units (reservations not paid) */
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
 *   "REPAIR item_stock A/S available 10 -> 9"   (total, available, reserved, sold)
 *   "REPAIR item_stock insert A/S total T available V sold S[ reserved R]"
 *   "REPAIR orders insert N activity A sku S user U qty Q STATUS" (ACTIVE,
 *                                               CANCELLED, RESERVED, EXPIRED)
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
