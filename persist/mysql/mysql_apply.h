/*
 * mysql_apply.h -- the MySQL (MariaDB) applier: WAL records into the system
 * of record, exactly once.
 *
 * The applier turns WAL records (struct flash_record, each with its LSN) into
 * rows of the tables it creates if missing:
 *
 *   activities   (activity_id PK, limit_per_user, max_qty, scope, flags, ...,
 *                 version, terms_lsn)
 *   item_stock   (activity_id, sku_id PK, total, available, reserved, sold, ...,
 *                 price, version, price_lsn, price_ns)
 *                CHECK (available + reserved + sold = total)
 *   orders       (order_no PK, activity_id, sku_id, user_id, qty, limit_slot,
 *                 biz_day, status ACTIVE|CANCELLED|RESERVED|EXPIRED, pay_by_ns,
 *                 cancel_lsn, confirm_lsn, n_lines, ...)
 *                UNIQUE (activity_id, user_id, scope_sku, scope_day,
 *                        limit_slot, active_key)
 *   order_lines  (order_no, line PK, activity_id, sku_id, qty, status, lsn,
 *                 cancel_lsn, confirm_lsn): every line of a cart, each with
 *                 the LSNs of its own records
 *   cart_pending (stream, lsn PK, rec): lines of a cart read before its last
 *   applied_lsn  (stream PK, lsn)
 *   apply_conflicts (lsn, order_no, kind, detail): every refused record
 *
 * Reservations (an ORDER record with a pay-by time in its value): the row is
 * RESERVED, its units move from available to reserved; CONFIRM makes it
 * ACTIVE (confirm_lsn) and moves them on to sold; EXPIRE makes it EXPIRED
 * (cancel_lsn, quota_returned) and a CANCEL of it CANCELLED, both moving
 * them back to available.  A CONFIRM, EXPIRE or CANCEL that finds its row
 * missing or in another state is a conflict, like a cancel of an unknown
 * order always was.
 *
 * Carts (flash_cart_order; records with FLASH_REC_F_CART): a cart of n
 * lines is ONE orders row -- line 0's sku and qty, the cart's user, limit
 * slot, request id, status, n_lines = n -- so the limit key sees one order
 * and the slot is taken once; and n order_lines rows, line 0 included, each
 * with its sku, qty and status.  A plain order has n_lines 1 and no
 * order_lines row (its orders row is its line: no second insert on the hot
 * path, no backfill of older databases); so every order's line 0 is in
 * orders, lines 1.. only in order_lines, and a per-sku sum is orders plus
 * order_lines WHERE line > 0.  Each line's record moves its own sku's
 * units; a cart's CANCEL, EXPIRE or CONFIRM (one record per line) ends the
 * orders row by line 0's record and each line row by its own.  A cart's
 * operation is applied all or nothing and only once its last line is read:
 * lines a batch ends in the middle of wait in cart_pending (same
 * transaction) for the batch that completes them (res->held); lines whose
 * last line will never come -- a torn WAL cut the cart, which was never
 * acknowledged -- are dropped (res->dropped, logged): mysql_apply.c
 * section 8 says how that is known.  On the slow path one refused line
 * refuses every line of its cart, each reported.
 *
 * Versioned terms (flash_activity_update, flash_sku_price_set): an ACTIVITY
 * record inserts its row with its version (order_no); one with flags 1 is
 * new terms of that activity: an UPDATE of the row's window, limit_per_user,
 * max_qty, flags and version, terms_lsn its LSN -- only of a live row of the
 * same scope and day offset, else a catalog conflict.  A SKU record sets
 * the stock row's version; a PRICE record its price and version (price_lsn,
 * price_ns), a catalog conflict for an unknown sku.  Neither moves a unit.
 * A WAL from before versions has version 0 everywhere; a database from
 * before them gets the columns (ADD COLUMN IF NOT EXISTS, at open).
 *
 * `active_key` is a generated column: 1 while the order holds its user's
 * limit slot (reserved, active, or ended without the quota given back),
 * NULL once the slot is free (cancelled or expired with the quota returned).  NULLs never collide
 * in a MariaDB unique index, so the index admits at most one holder per
 * (activity, user, scope, slot): the per-user limit holds in MySQL itself.
 * scope_sku is the sku for FLASH_SCOPE_SKU activities, else 0; scope_day is
 * the business day for FLASH_SCOPE_DAY activities, else 0.
 *
 * Exactly once: one transaction per batch; it reads applied_lsn FOR UPDATE,
 * skips every record with lsn <= applied_lsn, applies the rest and stores the
 * batch's highest LSN in the same transaction.  A crash before COMMIT applies
 * nothing; a crash after it applies everything; a replay skips everything.
 *
 * Conflicts (never swallowed): a batch is first tried on the fast path --
 * multi-row INSERTs and one conditional UPDATE per (activity, sku) carrying
 * the batch's net change, guarded by the largest running deficit so it is
 * exactly equivalent to applying the records one by one.  If any statement
 * fails (duplicate order number, per-user unique key, stock that would go
 * negative, unknown order or sku), the fast path is rolled back to a
 * savepoint and the batch is re-applied record by record, each under its own
 * savepoint: a refused record is rolled back alone, counted, logged with its
 * order number and LSN, written to apply_conflicts and returned to the
 * caller; the rest of the batch still applies.
 *
 * Availability: a lost connection, a server shutdown, a Galera node that is
 * not ready, a lock wait timeout or a deadlock (the retryable classes of
 * mysql_err.h) returns FLASH_EMYSQL_RETRY and nothing is applied; the next
 * call reconnects.  mdb_apply_retry() retries with exponential backoff.
 * The lag (last LSN given vs last LSN applied) is kept in mdb_stats.
 *
 * Credentials: the URL's user info is never printed; every log or error line
 * shows the URL with the user and password masked (mdb_url_mask()).
 *
 * Threads: a mdb_t is used by one thread at a time.
 */
#ifndef MDB_APPLY_H
#define MDB_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"
#include "plog.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Result codes of the applier, next to the FLASH_E* of flashstock.h. */
/* FLASH_EMYSQL_RETRY, FLASH_EMYSQL, FLASH_EMYSQL_CONFIG, FLASH_EMYSQL_GAP:
 * defined in flashstock.h (-40 .. -43), described by flash_strerror(). */

typedef struct mdb mdb_t;

struct mdb_opts {
	const char *url;            /* mysql://user:pass@localhost/db?socket=/path, or NULL */
	const char *defaults_file;  /* option file read for group [client], or NULL */
	const char *stream;         /* applied_lsn row; NULL = "wal" */
	uint32_t connect_timeout_s; /* 0 = 5 */
	uint32_t rw_timeout_s;      /* read/write timeout; 0 = 30 */
	plog_fn log;     /* NULL = stderr, "flashstock mysql: LEVEL msg" */
	void *log_arg;
	int log_level;              /* most verbose level printed (default ERROR..INFO) */
	int lsn_gaps_ok;            /* 0 (default): the first record not yet applied must
	                               carry applied LSN + 1, and LSNs inside a batch must be
	                               consecutive, as the WAL numbers its frames; a batch
	                               that would leave a hole is refused (FLASH_EMYSQL_GAP)
	                               before it changes anything */
	int require_db;             /* 1: a database that does not exist is refused
	                               (FLASH_EMYSQL_CONFIG) instead of created -- a
	                               mistyped name would otherwise get an empty new
	                               database.  A URL naming no database (the default
	                               "flashstock") may still create that one, and a URL
	                               with create_db=1 may create its own.  0 (default
	                               for library callers): create what is missing */
	int no_schema;              /* 1: create none of the applier's tables (a connection
	                               for other tables, e.g. the central database of
	                               leases and the cross-box backstop) */
};

/** One WAL record with its LSN, as the WAL reader hands it over. */
struct lsn_record {
	uint64_t lsn;               /* > 0, strictly increasing over a stream */
	struct flash_record rec;
};

/** Why a record was refused. */
enum conflict_kind {
	CONFLICT_DUP_ORDER = 1,  /* order number already in `orders` */
	CONFLICT_LIMIT     = 2,  /* per-user unique index: slot already held */
	CONFLICT_OVERSELL  = 3,  /* conditional UPDATE matched no row: not enough available */
	CONFLICT_CANCEL    = 4,  /* cancel of an unknown or already ended order (or, for a
	                            reservation's cancel, one not RESERVED) */
	CONFLICT_RESTOCK   = 5,  /* restock would make available negative */
	CONFLICT_CATALOG   = 6,  /* duplicate activity/sku, or unknown activity/sku (an
	                            order, restock, archive, price, or new terms of it) */
	CONFLICT_INVALID   = 7,  /* malformed record (unknown type, qty 0, ...) */
	CONFLICT_CONFIRM   = 8,  /* confirm of an order that is not a RESERVED one */
	CONFLICT_EXPIRE    = 9   /* expiry of an order that is not a RESERVED one */
};

const char *conflict_name(int kind);

struct conflict {
	uint64_t lsn;
	uint64_t order_no;          /* 0 for records without one */
	uint32_t activity_id;
	uint32_t sku_id;
	uint16_t type;              /* enum flash_rec_type */
	uint16_t kind;              /* enum conflict_kind */
	uint16_t line;              /* a cart's line (flags FLASH_REC_F_CART), else 0 */
	char     detail[164];       /* MySQL's message or the failed condition */
};

/** What one mdb_apply() call did. */
struct apply_result {
	uint64_t applied;           /* records applied */
	uint64_t skipped;           /* records with lsn <= applied_lsn (replays) */
	uint64_t refused;           /* conflicts (all of them, even past conflict_cap) */
	uint64_t applied_lsn;       /* the stream's applied LSN after the call */
	int      slow_path;         /* 1 if the batch went record by record */
	uint64_t held;              /* lines of a cart whose last line the batch did not
	                               hold: kept in cart_pending, applied with it */
	uint64_t dropped;           /* lines of a cart whose last line will never come
	                               (a torn WAL cut it): never applied */
	struct conflict *conflicts;  /* caller's array, or NULL */
	size_t   conflict_cap;      /* its capacity */
	size_t   conflict_n;        /* entries written (<= conflict_cap) */
};

/** Counters over the life of a handle. */
struct mdb_stats {
	uint64_t batches;           /* committed batches */
	uint64_t applied;           /* records applied */
	uint64_t skipped;           /* records skipped as already applied */
	uint64_t orders;            /* ORDER records applied */
	uint64_t conflicts;         /* records refused, all kinds */
	uint64_t dup_conflicts;     /* CONFLICT_DUP_ORDER + CONFLICT_LIMIT */
	uint64_t stock_conflicts;   /* CONFLICT_OVERSELL + CONFLICT_RESTOCK */
	uint64_t slow_batches;      /* batches that went record by record */
	uint64_t retryable_errors;  /* calls that returned FLASH_EMYSQL_RETRY */
	uint64_t reconnects;        /* successful connects after the first */
	uint64_t given_lsn;         /* highest LSN handed to apply */
	uint64_t applied_lsn;       /* highest LSN committed (lag = given - applied) */
};

/**
 * Connect and create the schema if missing.  The connection is taken from
 * o->url, else from o->defaults_file, else from $FLASH_MYSQL_URL, else
 * $FLASH_MYSQL_DEFAULTS_FILE.  A URL's query may carry socket=PATH and
 * create_db=1 (see require_db); the
 * database defaults to "flashstock".  A first connect failure is not fatal
 * when the server is merely down: the handle is returned with rc
 * FLASH_EMYSQL_RETRY and later calls reconnect.
 * @param[out] out  the handle (also set with FLASH_EMYSQL_RETRY)
 * @return FLASH_OK; FLASH_EMYSQL_RETRY (server unreachable: *out is usable);
 *         FLASH_EMYSQL_CONFIG (bad URL, access denied, unknown database);
 *         FLASH_EMYSQL (schema creation refused); FLASH_EINVAL; FLASH_ENOMEM.
 */
int mdb_open(const struct mdb_opts *o, mdb_t **out);

/** Disconnect and free.  NULL is fine. */
void mdb_close(mdb_t *m);

/**
 * Apply a batch in one transaction (see the file comment).  Records must be
 * in LSN order; records at or below the stream's applied LSN are skipped.
 * @param[in]     recs  the batch (n may be 0: then only applied_lsn is read)
 * @param[in,out] res   outcome (may be NULL); conflicts go to res->conflicts
 * @return FLASH_OK (conflicts, if any, are in res and in the stats: the batch
 *         committed without them); FLASH_EMYSQL_RETRY (nothing applied;
 *         call again with the same or a longer batch); FLASH_EMYSQL_GAP
 *         (nothing applied: the records from res->applied_lsn + 1 up to the
 *         batch are missing; feed them first, e.g. mdb_catch_up());
 *         FLASH_EMYSQL (a statement failed for a reason that retrying will
 *         not fix; nothing applied); FLASH_EINVAL (NULL, or LSNs not
 *         increasing).  A stream whose applied LSN is still 0 takes any
 *         first LSN.
 */
int mdb_apply(mdb_t *m, const struct lsn_record *recs, size_t n,
                      struct apply_result *res);

/**
 * mdb_apply(), retried on FLASH_EMYSQL_RETRY with exponential
 * backoff (10 ms doubling up to 2 s) for at most @p max_wait_ms in all.
 * @return as mdb_apply(); FLASH_EMYSQL_RETRY once the time is spent.
 */
int mdb_apply_retry(mdb_t *m, const struct lsn_record *recs, size_t n,
                            struct apply_result *res, uint32_t max_wait_ms);

/**
 * Read the stream's applied LSN from MySQL (0 if none yet).
 * @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_EINVAL.
 */
int mdb_applied_lsn(mdb_t *m, uint64_t *lsn);

/**
 * Catch MySQL up with a WAL directory (persist/storage/wal.h) that no wal_t has open
 * (at start-up, or from a tool): replay from the stream's applied LSN + 1 to
 * the WAL's end, applying @p batch records per transaction (0 = 5000), each
 * batch retried with backoff for at most @p max_wait_ms.  (mysql_catchup.c)
 * @param[out] total  sums over the batches (may be NULL; conflicts are not
 *                    copied, they are logged and counted in the stats)
 * @return FLASH_OK (everything the WAL holds is applied); FLASH_EMYSQL_RETRY;
 *         FLASH_EMYSQL; the WAL's stop cause as wal_replay() names it (a bad
 *         frame or file, a gap: wal_rc_is_stop() says 1), what came before it
 *         applied (total->applied_lsn says up to where); FLASH_EWAL_TYPE (a
 *         frame that is not a record); FLASH_ESYS (WAL I/O); FLASH_EINVAL;
 *         FLASH_ENOMEM.
 */
int mdb_catch_up(mdb_t *m, const char *wal_dir, uint32_t batch,
                 uint32_t max_wait_ms, struct apply_result *total);

/**
 * mdb_catch_up() that stops after LSN @p upto_lsn.  For a WAL that a
 * writer still has open: frames past its durable LSN may be written but not
 * yet fdatasync'd, and MySQL must never hold a record the WAL could lose.
 */
int mdb_catch_up_to(mdb_t *m, const char *wal_dir, uint64_t upto_lsn, uint32_t batch,
                    uint32_t max_wait_ms, struct apply_result *total);

/** Asked before each batch of a catch-up: nonzero goes on, 0 stops it. */
typedef int (*mdb_go_fn)(void *arg);

/**
 * mdb_catch_up_to() that asks @p go (may be NULL: always go on)
 * before applying each batch, so a long catch-up can be cut short (the
 * daemon's stop deadline).  Batches applied before stay applied; the rest
 * is still in the WAL for the next catch-up.
 * @return as mdb_catch_up_to(); FLASH_EBUSY when @p go said stop
 *         (total->applied_lsn says how far it got).
 */
int mdb_catch_up_while(mdb_t *m, const char *wal_dir, uint64_t upto_lsn,
                       uint32_t batch, uint32_t max_wait_ms, mdb_go_fn go,
                       void *go_arg, struct apply_result *total);

/**
 * Log one line through the handle's log callback and level filter
 * (mdb_opts.log), as the applier logs its own.  NULL @p m is fine.
 */
void mdb_logf(mdb_t *m, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Copy the handle's counters.  @return FLASH_OK; FLASH_EINVAL. */
int mdb_stats_get(const mdb_t *m, struct mdb_stats *out);

/** The connection as printed: the URL with its user info replaced by "***". */
const char *mdb_where(const mdb_t *m);

/**
 * Write @p url with its whole user info (user and password, up to the last
 * '@') replaced by "***" into @p buf (always NUL-terminated): in
 * "mysql://u:p@localhost/db", "u:p" becomes "***".  A URL without '@' is
 * copied unchanged.
 */
void mdb_url_mask(const char *url, char *buf, size_t len);

/**
 * Check a URL as mdb_open() would parse it, without connecting:
 * for a command line to refuse a bad one before it changes anything.
 * @param[out] why  (may be NULL) what is wrong, never quoting the user info
 * @return FLASH_OK; FLASH_EMYSQL_CONFIG (malformed: see @p why);
 *         FLASH_EINVAL (NULL); FLASH_ENOMEM.
 */
int mdb_url_check(const char *url, char *why, size_t cap);

/**
 * The underlying MYSQL connection (for the reconciler's queries and tests),
 * connecting first if needed; NULL if the server cannot be reached.
 */
struct st_mysql;
struct st_mysql *mdb_conn(mdb_t *m);

/**
 * Tell the handle that a query on mdb_conn() lost the connection:
 * it is closed here and the next call reconnects.
 */
void mdb_conn_lost(mdb_t *m);

/**
 * Connect to @p url (the applier's URL rules: mysql://user:pass@host:port/db?socket=PATH)
 * without the applier's schema, for a component with tables of its own.
 * The session gets strict SQL mode, autocommit and CLIENT_FOUND_ROWS (an
 * UPDATE's affected rows are the rows it matched).
 * @param[in]  timeout_s  connect, read and write timeout (0: 5)
 * @param[in]  create_db  create the URL's database when it is missing
 * @param[out] out        the connection (mysql_close() it)
 * @param[out] why        (may be NULL) what failed, the user info masked
 * @return FLASH_OK; FLASH_EMYSQL_RETRY (unreachable or not serving: a
 *         retryable class of mysql_err.h); FLASH_EMYSQL_CONFIG (bad URL,
 *         access denied, unknown database: any other refusal);
 *         FLASH_EINVAL; FLASH_ENOMEM.
 */
int mdb_connect_url(const char *url, uint32_t timeout_s, int create_db,
                            struct st_mysql **out, char *why, size_t cap);

/** The handle's applied_lsn stream name ("wal" by default). */
const char *mdb_stream(const mdb_t *m);

#ifdef __cplusplus
}
#endif
#endif /* MDB_APPLY_H */
