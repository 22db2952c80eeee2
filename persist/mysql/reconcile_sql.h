/*
 * reconcile_sql.h -- what MySQL says, for the reconciler.
 *
 * Read-only queries over the applier's tables (see mysql_apply.h), each one
 * statement, so each answer is one consistent snapshot (InnoDB consistent
 * read).  `orders` has no (activity, sku) index (it would slow every insert
 * of the applier), so the per-sku sums scan the table: meant for the
 * periodic reconcile, not for a hot path.  The reconciler compares these figures with the segment and with
 * the state folded from the WAL; nothing here decides what is a difference.
 *
 * Arrays returned through @p out are malloc'ed; free them with free().
 */
#ifndef RECONCILE_SQL_H
#define RECONCILE_SQL_H

#include <stddef.h>
#include <stdint.h>

#include "mysql_apply.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One (activity, sku) as MySQL has it. */
struct rsql_sku {
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t has_stock_row;     /* 1 if item_stock has the row */
	uint32_t _pad;
	uint64_t total;             /* item_stock (0 without a row) */
	uint64_t available;
	uint64_t sold;
	uint64_t active_qty;        /* SUM(qty) over ACTIVE orders' lines of the sku */
	uint64_t active_orders;     /* COUNT of ACTIVE orders' lines of the sku (a plain
	                               order is one line; a cart counts in each sku of
	                               its lines, once per line) */
	uint64_t cancelled_orders;  /* COUNT of CANCELLED orders' lines of the sku */
	uint64_t reserved;          /* item_stock.reserved (0 without a row) */
	uint64_t reserved_qty;      /* SUM(qty) over RESERVED orders (reservations not paid) */
};

/**
 * Every (activity, sku) found in item_stock or in orders, ordered by
 * (activity_id, sku_id).  A sku with orders but no item_stock row comes back
 * with has_stock_row = 0.
 * @param[out] out  array of *n entries (NULL when *n is 0)
 * @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL; FLASH_ENOMEM.
 */
int rsql_skus(mdb_t *m, struct rsql_sku **out, size_t *n);

/**
 * One (activity, sku).
 * @return FLASH_OK; FLASH_ENOT_FOUND (neither a stock row nor an order);
 *         FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL.
 */
int rsql_sku_get(mdb_t *m, uint32_t activity_id, uint32_t sku_id,
                      struct rsql_sku *out);

/** A user holding more limit slots than the activity allows, or a slot out of 1..K. */
struct rsql_user_excess {
	uint32_t activity_id;
	uint32_t scope_sku;         /* sku for per-sku limits, else 0 */
	uint64_t user_id;
	uint32_t scope_day;         /* business day for per-day limits, else 0 */
	uint32_t holding;           /* orders holding a slot (reserved, active, or ended keeping the quota) */
	uint32_t max_slot;          /* highest limit_slot among them */
	uint32_t limit;             /* the activity's K; 0 if the activity is unknown */
};

/**
 * Every (activity, user, scope) whose slot holders exceed K or use a slot
 * above K, and orders of activities missing from `activities` (limit 0).
 * The unique index should make this list empty; the reconciler proves it.
 * @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL; FLASH_ENOMEM.
 */
int rsql_users_over_limit(mdb_t *m, struct rsql_user_excess **out, size_t *n);

/** Whole-database counts. */
struct rsql_totals {
	uint64_t orders;            /* rows in orders */
	uint64_t active_orders;     /* a cart is one order */
	uint64_t cancelled_orders;
	uint64_t active_qty;        /* units of every line of ACTIVE orders */
	uint64_t activities;
	uint64_t skus;              /* rows in item_stock */
	uint64_t conflicts;         /* rows in apply_conflicts */
	uint64_t applied_lsn;       /* of the handle's stream */
};

/** @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL. */
int rsql_totals_get(mdb_t *m, struct rsql_totals *out);

/** One order as MySQL has it. */
struct rsql_order {
	uint64_t order_no;
	uint64_t user_id;
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t qty;
	uint32_t state;             /* enum flash_order_state: ACTIVE, CANCELLED, RESERVED or
	                               EXPIRED (the ENUM's values are in the same order) */
	uint32_t limit_slot;
	uint32_t biz_day;
	uint32_t lines;             /* orders.n_lines: 1 plain, 2..16 a cart (sku_id and qty
	                               are its line 0's); rsql_orders_scan only, else 0 */
};

/**
 * Called for each order with order_no in [from, to], ascending; return
 * nonzero to stop.  Rows are streamed (no array of every order in memory).
 */
typedef int (*rsql_order_fn)(void *arg, const struct rsql_order *o);

/**
 * Stream the orders with from <= order_no <= to in order_no order.
 * @return FLASH_OK (also when @p fn stopped early); FLASH_EMYSQL_RETRY;
 *         FLASH_EMYSQL; FLASH_EINVAL.
 */
int rsql_orders_scan(mdb_t *m, uint64_t from, uint64_t to,
                          rsql_order_fn fn, void *arg);

/**
 * The activities the applier marked archived (activities.archived_lsn set
 * by an ARCHIVE record), ascending.  Their rows stay; the segment no longer
 * has them.
 * @param[out] out  array of *n ids (NULL when *n is 0)
 * @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL; FLASH_ENOMEM.
 */
int rsql_archived(mdb_t *m, uint32_t **out, size_t *n);

/* rsql_order_row.o.state for an orders.status this build does not know */
#define RSQL_STATE_UNKNOWN 0xffu

/** One order row with its activity's archive state (flashstock order). */
struct rsql_order_row {
	struct rsql_order o;        /* o.state: ACTIVE, CANCELLED, RESERVED, EXPIRED
	                               or RSQL_STATE_UNKNOWN */
	char     status[16];        /* orders.status as MariaDB has it (truncated) */
	uint64_t request_id;        /* 0: none */
	int64_t  created_ns;
	uint64_t lsn;               /* of its ORDER record */
	uint64_t cancel_lsn;        /* of its CANCEL or EXPIRE record; 0: none */
	uint32_t quota_returned;    /* 1: the cancel or expiry gave the limit slot back */
	uint32_t archived;          /* 1: its activity is archived */
	uint64_t archived_lsn;      /* the ARCHIVE record's LSN (archived only) */
	int64_t  archived_ns;       /* when the segment archived it (archived only) */
	int64_t  pay_by_ns;         /* a reservation's pay-by time; 0: a plain order */
	uint64_t confirm_lsn;       /* of a reservation's CONFIRM record; 0: none */
};

/**
 * The order numbered @p order_no.
 * @return FLASH_OK; FLASH_ENOT_FOUND; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL.
 */
int rsql_order_get(mdb_t *m, uint64_t order_no, struct rsql_order_row *out);

/** One line of a cart as MariaDB has it (order_lines). */
struct rsql_order_line {
	uint32_t line;              /* 0 .. the cart's lines - 1 */
	uint32_t sku_id;
	uint32_t qty;
};

/**
 * The lines of order @p order_no in order_lines, ascending, at most @p cap
 * of them in @p out: a cart's, line 0 included.  A plain order has no row
 * there, nor has any order of a database the applier made before carts
 * (no order_lines table): *n 0 for both.
 * @param[out] n  the lines MariaDB holds (also when more than @p cap)
 * @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL.
 */
int rsql_order_lines(mdb_t *m, uint64_t order_no, struct rsql_order_line *out, uint32_t cap,
                     uint32_t *n);

/**
 * Whether @p order_no is the number of a cart's later line (a cart of n
 * lines takes its own number and the n - 1 after it; MariaDB keeps the cart
 * under its own): the cart's number and the line.
 * @return FLASH_OK; FLASH_ENOT_FOUND (no cart has a line of that number, or
 *         no order_lines table); FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL.
 */
int rsql_order_line_of(mdb_t *m, uint64_t order_no, uint64_t *cart_no, uint32_t *line);

/**
 * The order placed with request id @p request_id by @p user_id in
 * @p activity_id (and @p sku_id unless 0): the user_limit index's prefix
 * (activity, user) finds the user's rows, the request id picks one.
 * @return FLASH_OK; FLASH_ENOT_FOUND; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL.
 */
int rsql_order_by_request(mdb_t *m, uint64_t request_id, uint32_t activity_id,
                               uint64_t user_id, uint32_t sku_id, struct rsql_order_row *out);

#ifdef __cplusplus
}
#endif
#endif /* RECONCILE_SQL_H */
