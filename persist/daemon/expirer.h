/*
 * expirer.h -- the daemon's reservation expirer: every reservation
 * (flash_order_req.reserve_ms) that is still RESERVED at its pay-by time
 * is expired then, by the daemon, without anyone asking (issue 22).
 *
 * How it knows them without scanning the order table: the drain loop hands
 * it every reservation it takes from the rings (expirer_note: an ORDER
 * record with a pay-by time), and at its start it reads the table once for
 * the reservations an earlier daemon drained.  A cart (flash_cart_order) is
 * one reservation: its line 0 (record or order-table slot) is noted, its
 * later lines are not, and its one flash_expire ends every line.  It keeps them in a heap by
 * pay-by time, in its own memory; a pass every every_ms (10 ms by default)
 * expires each one due through its own handle (flash_expire).  One that was
 * confirmed, cancelled or expired by someone else meanwhile is answered so
 * by the engine and dropped: the heap never needs to be told.
 *
 * Its lag -- the time from a pay-by time to its expiry -- is measured for
 * each one and kept as a histogram (the metrics' flashstock_expiry_lag
 * seconds).
 *
 * Synchronization: expirer_note is called by the drain thread, the pass
 * runs on the expirer's thread (worker.h), expirer_stats_get by anyone:
 * one mutex guards the heap and the figures, never held across a call into
 * the engine.
 */
#ifndef FLASH_EXPIRER_H
#define FLASH_EXPIRER_H

#include <stdint.h>

#include "flashstock.h"
#include "plog.h"

typedef struct expirer expirer_t;

struct expirer_opts {
	const char *segment;       /* the thread opens its own writable handle */
	uint32_t    every_ms;      /* a pass this often (0: 10) */
	plog_fn     log;           /* NULL: quiet */
	void       *log_arg;
};

#define EXPIRER_LAG_BUCKETS 12  /* <= 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 5 s, +Inf */

struct expirer_stats {
	uint64_t expired;          /* reservations this daemon expired */
	uint64_t settled;          /* due ones found ended by someone else (dropped) */
	uint64_t pending;          /* reservations waiting in the heap */
	uint64_t failures;         /* flash_expire answers other than those (tried again) */
	uint64_t lag_count, lag_ns_sum, lag_ns_max;
	uint64_t lag_hist[EXPIRER_LAG_BUCKETS];   /* per bucket, not cumulative */
};

/* The bucket bounds of lag_hist, in ns (the last is +Inf: UINT64_MAX). */
extern const uint64_t expirer_lag_le_ns[EXPIRER_LAG_BUCKETS];

/* Start the thread.  @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM; FLASH_ESYS. */
int expirer_start(const struct expirer_opts *o, expirer_t **out);

/* The drain loop took @p rec: a reservation (ORDER with a pay-by time) is
 * noted; any other record is ignored.  Never blocks on the engine. */
void expirer_note(expirer_t *e, const struct flash_record *rec);

void expirer_stats_get(expirer_t *e, struct expirer_stats *out);

/* Stop the thread (a pass under way ends first) and free everything. */
void expirer_stop(expirer_t *e);

#endif
