/*
 * backstop.h -- the cross-box per-user limit (`serve --backstop URL[,URL...]`).
 *
 * Each box checks a user's limit exactly in its own segment; the load
 * balancer routes a user to one box (nginx `hash $arg_user consistent;`),
 * so a second order of one user on another box is rare -- a changed
 * upstream list, a retry that landed elsewhere.  The backstop catches it
 * after the fact: a thread of the daemon follows the box's own order feed
 * (consumer "backstop", flash_feed_open) and writes every ORDER into the
 * central database's
 *
 *   fs_user_limit (activity_id, user_id, scope_sku, biz_day, limit_slot,
 *                  box_id, order_no, sku_id, qty, status, quota_returned,
 *                  active_key generated, lsn)
 *                 PRIMARY KEY (box_id, order_no)
 *                 UNIQUE (activity_id, user_id, scope_sku, biz_day,
 *                         limit_slot, active_key)
 *
 * limit_slot there is the user's central slot 1..K: the first free one,
 * tried from the box's own slot on (two boxes that each gave a user their
 * slot 1 of K = 2 hold two different central slots; only K + 1 orders over
 * all boxes find every slot taken).  active_key is 1 while the order holds
 * its slot and NULL once a CANCEL or a reservation's EXPIRE that returned
 * the quota frees it (the applier's rule for `orders`, mysql_apply.h):
 * MariaDB's unique index then admits at most K holders over every box.  A
 * reservation holds its slot from its ORDER on, paid or not, as in the
 * segment, so its CONFIRM changes nothing here.
 *
 * An ORDER that finds all K slots held is a second order of that user
 * across boxes: it is counted (flashstock_backstop_conflicts_total),
 * logged, recorded in fs_backstop (box_id, order_no, reason, ..., the
 * holder) and cancelled in this box's segment (flash_cancel: its units go
 * back to the box's stock, a CANCEL record the feed carries, and
 * flash_order_get says CANCELLED).  Never silently kept.
 *
 * Exactly once: one transaction per batch of feed records reads the box's
 * row of fs_backstop_pos (box_id, incarnation, lsn) FOR UPDATE, skips every
 * record at or below it, writes the rest and stores the batch's last LSN
 * in the same transaction (the applier's applied_lsn rule).  A lost
 * connection, a certification failure (Galera: 1213) or a node that is not
 * ready (1047) rolls the batch back; it is run again, on the next URL when
 * the connection is gone, and its LSN check makes the second run skip what
 * the first one committed.  The compensating cancels come after the
 * commit; a row of fs_backstop with cancelled = 0 is a cancel decided but
 * maybe not made, and every (re)connect makes those first (flash_cancel of
 * an order already cancelled returns FLASH_ECANCELLED and nothing), as does
 * the next round after a cancel or its mark failed on a session that stays
 * up (a Galera certification failure, 1213); a mark is made again with the
 * units its cancel returned.  The
 * feed position is only where reading resumes; it is committed after the
 * central commit.
 *
 * Galera: every box sends its writes to the first URL that answers and
 * stays there until it fails, so in normal operation one node takes every
 * write of these tables and two boxes inserting one key wait on a row
 * lock instead of failing certification.
 *
 * Limits: (box_id, order_no) is the order's identity, so a box's segment
 * made afresh (a new WAL incarnation) restarts its order numbers: the
 * backstop refuses to run for an incarnation other than the one its
 * fs_backstop_pos row names and logs what to do (delete the box's rows).
 *
 * Threads: backstop_start() makes one thread that owns its own segment
 * handle, feed and connections; backstop_stats_get() may be called from
 * any thread.
 */
#ifndef FLASH_BACKSTOP_H
#define FLASH_BACKSTOP_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"

struct backstop_opts {
	const char *segment;      /* the box's segment */
	const char *wal_dir;      /* its WAL directory (the feed reads it) */
	const char *urls;         /* "URL[,URL...]": the central database on each node */
	uint32_t    box_id;       /* 1..2^31-1 */
	uint32_t    batch_max;    /* feed records per transaction at most (0: 256) */
	uint32_t    commit_ms;    /* commit the feed position at most this often (0: 500) */
	int         log_level;    /* enum plog_level: the most verbose level printed */
};

struct backstop_stats {
	uint64_t records;         /* feed records written centrally (replays not counted) */
	uint64_t orders;          /* ORDER records that took a central slot */
	uint64_t cancels;         /* CANCEL and EXPIRE records that changed a central row */
	uint64_t conflicts;       /* ORDERs refused by the unique index: second orders */
	uint64_t compensated;     /* of those, cancelled in the segment */
	uint64_t batches;         /* committed transactions */
	uint64_t retries;         /* batches rolled back and run again */
	uint64_t reconnects;      /* moves to a URL (the first connect included) */
	uint64_t pos_lsn;         /* the central position: every LSN <= this is written (at
	                             start the feed's committed position, which trails it);
	                             the archiver waits for it (archiver.h) */
	uint32_t node;            /* index of the URL in use */
	int      failed;          /* nonzero: the thread stopped on an error it cannot retry */
};

typedef struct backstop backstop_t;

/*
 * Check @p urls (each a mysql:// URL, comma-separated; no connection).
 * @return FLASH_OK; FLASH_EMYSQL_CONFIG (one is malformed: @p why says
 *         which); FLASH_EINVAL (empty).
 */
int backstop_urls_check(const char *urls, char *why, size_t cap);

/*
 * Start the thread.  It opens its own handle on o->segment and the feed
 * consumer "backstop" of o->wal_dir (registered from the oldest record on
 * first use), then follows the feed until backstop_stop().
 * @return FLASH_OK; FLASH_EINVAL; FLASH_EMYSQL_CONFIG; FLASH_ENOMEM;
 *         FLASH_ESYS.
 */
int backstop_start(const struct backstop_opts *o, backstop_t **out);

/*
 * Stop: the thread first writes what is durable in the feed now, for at
 * most @p drain_ms, then commits its feed position and ends.  @p st (may be
 * NULL) gets the last figures.  NULL @p b is fine.
 */
void backstop_stop(backstop_t *b, uint32_t drain_ms, struct backstop_stats *st);

/* The figures so far (any thread). */
void backstop_stats_get(backstop_t *b, struct backstop_stats *out);

/* What the thread does after a statement of a batch failed, by the
 * error's class (mysql_err.h): TXN runs the batch again on the connection,
 * CONN and NODE move to the next URL, any other class fails the batch. */
enum backstop_err {
	BACKSTOP_ERR_RETRY = 1,   /* run the batch again on this connection (deadlock, certification) */
	BACKSTOP_ERR_MOVE  = 2,   /* the connection is gone or the node not ready: the next URL */
	BACKSTOP_ERR_FAIL  = 3    /* refused for another reason: logged, run again after a pause */
};

/* The action for MariaDB error number @p e. */
int backstop_err_action(unsigned e);

/*
 * 1 when ORDER record @p r takes the order's central slot (bs_order): a
 * plain order's, or a cart's last line -- a cart (flash_cart_order) is one
 * order holding one slot, written once, when its last line shows the cart
 * whole: the lines of a cart a torn WAL cut (never acknowledged, rebuilt as
 * not placed) never hold a slot.  Its fs_user_limit row has the cart's
 * number, user, slot and day, and its last line's sku_id and qty.  0 for
 * every other record.
 */
int backstop_takes_slot(const struct flash_record *r);

/*
 * The statement that ends a box's order in fs_user_limit for record @p r
 * -- a CANCEL, or a reservation's EXPIRE: the row CANCELLED, its slot freed
 * iff the record returned the quota -- into @p sql (@p cap bytes).
 * @return 1 when @p r is such a record, 0 when it changes no central row
 *         (every other type; a CONFIRM: the slot was held since the ORDER;
 *         a cart's line but its last: the cart's row ends once, with the
 *         whole cancel or expiry).
 */
int backstop_end_sql(uint32_t box_id, const struct flash_record *r, char *sql, size_t cap);

#endif /* FLASH_BACKSTOP_H */
