/*
 * lease.h -- the box's lease agent: a thread of `flashstock serve --lease
 * URL[,URL...] --box-id N` that keeps the segment's skus stocked from the
 * central pool (central.h) without a buyer ever waiting on the network.
 *
 * The segment holds the activities and their skus with 0 units; every unit
 * it sells was loaded by this agent with flash_restock(+k) after a lease of
 * k units committed centrally, and every unit it gives back was first taken
 * out with flash_restock(-k).  So for each sku, in the segment,
 *   total = units loaded - units unloaded,   sold = total - available.
 *
 * Loop (every tick_ms):
 *   - heartbeat every heartbeat_s, conditional on the epoch.  Refused (0
 *     rows): the box is fenced -- every sku's available stock is taken out
 *     (restock -available) and kept at 0, no more leases; the agent reports
 *     FLASH_EFENCED (serve logs it) and only drains from then on.  MariaDB
 *     unreachable for longer than 3 x heartbeat_s: the box suspends itself
 *     (drains its stock, remembered in its intent file, and drains again
 *     every tick while suspended) so that it has stopped selling before an
 *     operator may fence it (`lease fence` needs a heartbeat older than its
 *     --stale-s, default 30 s).  Decided by the clock, not by the skus'
 *     statements, which all end at that deadline: the last sale comes at
 *     most 3 x heartbeat_s + 2 s (the MariaDB timeout) + the drain after
 *     the last heartbeat MariaDB accepted was sent.  Back in touch and not
 *     fenced, it loads the units again.
 *   - per sku: the sell rate (EWMA of sold per second), low-water = rate x
 *     lead_ms (at least lease_min), refill step = rate x 3 s clamped to
 *     [lease_min, lease_max] and to what the pool has.  At or below the
 *     low-water the agent takes a lease; an empty pool records `wanted`.
 *     When the pool is empty and another box wants units, a box holding
 *     more than its low-water returns the surplus (restock -k, then the
 *     conditional return by lease id).
 *   - when an activity's window has closed, every sku of it returns what it
 *     holds and closes its leases (sold_at_close).  A clean stop of serve
 *     returns what the box holds too (the leases stay open, adopted at the
 *     next start).
 *
 * Start: before it registers, the agent takes every sku's available stock
 * out of the segment (restock -available, each noted as an intent), so a
 * restarted daemon leaves nothing sellable while it cannot yet tell whether
 * the box was fenced and its leases reclaimed (returned for it: selling them
 * would oversell).  Registered and not fenced, it puts the same units back;
 * fenced, they stay out.  Buyers are still best admitted once the box has
 * registered (flashstock_lease_epoch > 0 and not fenced in the metrics):
 * the drain closes the window, the admission keeps orders from being
 * refused meanwhile.
 *
 * Crash safety: one operation at a time, each preceded by a durable intent
 * (WAL_DIR/lease.intent: written to a temporary file, fdatasync'd,
 * renamed) naming the lease id, the units and the sku's segment total
 * before it.  At start the agent registers (a new epoch; open leases
 * adopted), then finishes what the intent names by comparing the segment's
 * total -- what the WAL's restocks add up to -- with the intent and the
 * lease's central row: a committed take not yet loaded is loaded; a return
 * whose units left the segment but whose central return did not commit is
 * returned, conditional on the returned count, so exactly once.  Each of the
 * agent's restocks is durable in the WAL before the step after it (the
 * central return; the end of a take's intent), in async durability too
 * (flash_durable_wait_all): a power cut, after which `serve --recover`
 * rebuilds the segment from the WAL, leaves every unit in one place too.
 * A step that fails with units out of place (a restock not known durable,
 * a refused return whose units cannot be put back) keeps its intent and
 * stops the agent's takes and returns (state FAILED) until a restart.
 * A box found fenced at start drains its stock, reclaims its fenced leases
 * with sold = total - available from its own segment, then registers anew.
 *
 * Synchronization: start and stop from one thread (serve's); stats_get from
 * any thread (a mutex around the figures).  The agent opens its own handle
 * on the segment (handles are per thread).
 */
#ifndef LEASE_H
#define LEASE_H

#include <stdint.h>

typedef struct lease lease_t;

struct lease_opts {
	const char *segment;        /* the segment serve serves */
	const char *urls;           /* "URL[,URL...]": the central database's nodes */
	const char *state_dir;      /* where lease.intent lives (serve: the WAL directory) */
	uint32_t    box_id;         /* 1..FLASH_BOX_ID_MAX */
	uint32_t    lease_min;      /* smallest lease, and the least a box keeps (0: 10) */
	uint32_t    lease_max;      /* largest lease (0: 1000) */
	uint32_t    lead_ms;        /* time a lease takes to arrive: low-water = rate x this (0: 1000) */
	uint32_t    heartbeat_s;    /* (0: 2) */
	uint32_t    tick_ms;        /* loop period (0: 50) */
	int         log_level;      /* serve's levels (serve.h) */
	/* the box's applied LSN in its own database, for the heartbeat (may be NULL) */
	int       (*applied_lsn)(void *arg, uint64_t *lsn);
	void       *applied_arg;
};

enum lease_state {
	LEASE_STARTING = 0,
	LEASE_RUNNING  = 1,
	LEASE_FENCED   = 2,   /* MariaDB refused the epoch: stock drained, no leases */
	LEASE_SUSPENDED = 3,  /* MariaDB unreachable: stock drained until it answers */
	LEASE_FAILED   = 4,   /* could not start (segment, URL, registration), or an
	                               operation stopped with its intent kept (see above) */
	LEASE_STOPPED  = 5
};

struct lease_stats {
	int      state;             /* enum lease_state */
	int      rc;                /* FLASH_EFENCED when fenced; the failure when FAILED */
	uint32_t box_id, epoch;
	uint64_t takes, take_units;         /* leases taken by this agent */
	uint64_t returns, return_units;     /* returns committed (surplus, end of sale, stop) */
	uint64_t failures;                  /* statements that failed or were refused */
	uint64_t finished;                  /* interrupted operations finished at start */
	int64_t  units_leased;      /* sum of units - returned over the box's open leases */
	int64_t  units_held;        /* available in the segment, over the leased skus */
	int64_t  units_sold;        /* total - available, over the leased skus */
	uint64_t node_failovers;
	int64_t  heartbeat_ms;      /* CLOCK_REALTIME ms at which the last heartbeat (or the
	                               registration) MariaDB accepted was sent; 0 none yet.
	                               Cut off, the box sells until at most 3 x heartbeat_s
	                               + 2 s (+ the drain) after it */
};

/**
 * Start the agent thread.  Returns at once: registration and everything
 * else happen on the thread (a MariaDB that is down delays the first lease,
 * never serve).
 * @return FLASH_OK; FLASH_EINVAL (missing segment, URLs, state_dir, box id out
 *         of range, lease_min > lease_max); FLASH_EMYSQL_CONFIG (a bad URL);
 *         FLASH_ENOMEM; FLASH_ESYS (thread).
 */
int lease_start(const struct lease_opts *o, lease_t **out);

/** Copy the figures (any thread). */
void lease_stats_get(lease_t *a, struct lease_stats *out);

/**
 * Ask the agent to stop without waiting: it returns what the box holds and
 * ends.  The caller keeps draining the segment and writing the WAL
 * meanwhile (the agent's restocks wait until they are durable) and polls
 * lease_done().  NULL is fine.
 */
void lease_stop_begin(lease_t *a);

/** 1 once the agent thread has finished (or @p a is NULL). */
int lease_done(lease_t *a);

/**
 * Stop: a running agent first returns what the box holds (bounded by the
 * central handle's retry time), then the thread ends.  NULL is fine.
 * @return the agent's final rc (FLASH_OK, FLASH_EFENCED, ...).
 */
int lease_stop(lease_t *a);

/** "running", "fenced", ... */
const char *lease_state_name(int state);

#endif /* LEASE_H */
