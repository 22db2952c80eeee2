/*
 * central.h -- the central database of leases (issue 14): every statement
 * a box, the lease agent (lease.h) and `flashstock lease` send to it.
 *
 * One database, `flash_central`, on a MariaDB Galera cluster, holds per
 * (activity, sku) the units not yet leased and one row per lease:
 *
 *   fs_box   (box_id PK, epoch, state 'live'|'fenced', heartbeat, applied_lsn)
 *   fs_pool  (activity_id, sku_id PK, total, unleased, wanted)
 *            CHECK (unleased >= 0 AND unleased <= total)
 *   fs_lease (lease_id PK, box_id, epoch, activity_id, sku_id, units, returned,
 *             sold_at_close, state 'open'|'closed'|'fenced', created, closed)
 *            CHECK (returned >= 0 AND returned <= units)
 *
 * Every change is decided by MariaDB: one conditional statement whose
 * affected-row count says whether it happened, plus the lease row in the
 * same transaction.  A box's takes and returns join fs_box on (box_id, epoch,
 * state 'live') and *write* its row (heartbeat = NOW(6)): Galera certifies
 * written rows only, so a take racing a fence on another node conflicts at
 * commit instead of both committing.  Fencing is therefore enforced by the
 * resource: a stale epoch gets FLASH_EFENCED whatever the box believes.
 *
 * Exactly once: a lease id is chosen by the box before its transaction
 * (central_lease_id: box_id<<48 | epoch<<24 | seq) and the lease row is
 * inserted first, so a take whose first attempt committed cannot commit
 * twice (duplicate key); a return is conditional on the lease's returned
 * count as the box last saw it, so a replayed return matches no row and is
 * recognised by re-reading the lease.  A certification failure (1213), a
 * node not ready (1047) or a lost connection is retried only after asking,
 * by lease id, whether the first attempt committed.
 *
 * Nodes: the URL list names the cluster's nodes.  Statements about one sku's
 * pool go to one node, hash(activity, sku) over the list; boxes' rows to
 * hash(box_id); on a failure the handle moves every key one node on.
 *
 * Threads: a central_t is used by one thread at a time.
 */
#ifndef CENTRAL_H
#define CENTRAL_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"
#include "plog.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CENTRAL_NODES_MAX 16u
#define FLASH_BOX_ID_MAX        32767u      /* 15 bits: lease ids stay positive BIGINTs */
#define FLASH_EPOCH_MAX         0xffffffu   /* 24 bits */
#define LEASE_SEQ_MAX     0xffffffu   /* 24 bits */

/** The lease id a box uses for its @p seq-th lease of @p epoch. */
static inline uint64_t central_lease_id(uint32_t box_id, uint32_t epoch, uint32_t seq)
{
	return ((uint64_t)box_id << 48) | ((uint64_t)(epoch & FLASH_EPOCH_MAX) << 24) |
	       (uint64_t)(seq & LEASE_SEQ_MAX);
}

typedef struct central central_t;

/* Fault points for tests: the hook returns nonzero to drop the connection
 * there (a real mysql_close), as a network cut would. */
enum central_point {
	CENTRAL_BEFORE_COMMIT = 1,   /* the transaction's statements ran, COMMIT not sent */
	CENTRAL_AFTER_COMMIT  = 2    /* COMMIT succeeded; its reply is "lost" */
};

struct central_opts {
	const char *urls;        /* "URL[,URL...]" (mysql://user:pass@host:port/flash_central) */
	uint32_t    timeout_s;   /* connect/read/write timeout per attempt (0: 3) */
	uint32_t    retry_ms;    /* how long one call retries before FLASH_EMYSQL_RETRY (0: 15000) */
	int         create_db;   /* create the database when missing (lease init) */
	plog_fn    log;        /* NULL: quiet */
	void       *log_arg;
	int       (*fault)(void *arg, int point);                 /* tests; NULL: none */
	void       *fault_arg;
};

/**
 * Parse the URL list (nothing is connected yet: each node on first use).
 * @return FLASH_OK; FLASH_EMYSQL_CONFIG (a malformed URL, or more than
 *         CENTRAL_NODES_MAX); FLASH_EINVAL; FLASH_ENOMEM.
 */
int central_open(const struct central_opts *o, central_t **out);
void central_close(central_t *c);

/** The node (0-based, in the URL list) a fresh handle over @p n_nodes
 *  nodes sends (activity, sku)'s statements to; the next ones in order on
 *  failures (tests kill the node in use). */
unsigned central_sku_node(uint32_t activity_id, uint32_t sku_id, unsigned n_nodes);

/** The node (0-based) the last statement ran on, and how often the handle
 *  moved to another node. */
unsigned central_node(const central_t *c);
uint64_t central_failovers(const central_t *c);

/**
 * A time after which no attempt starts, on top of retry_ms: @p deadline_ms
 * on CLOCK_MONOTONIC in milliseconds, 0 for none (the default).  A call
 * made at or after it returns FLASH_EMYSQL_RETRY at once, without a
 * statement; a call made before it makes its first attempt, retries only
 * until it, and does not move to another node past it (each backoff sleep
 * ends at it).  So a call returns at most one attempt after the deadline,
 * and one attempt against an unreachable node is one connect, read or
 * write timeout (timeout_s).  The lease agent sets it to the moment it
 * must stop selling, so that no statement keeps it from stopping.
 */
void central_set_deadline(central_t *c, uint64_t deadline_ms);

/** Create the three tables if missing (idempotent).
 *  @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL. */
int central_init(central_t *c);

struct pool_row {
	uint32_t activity_id, sku_id;
	int64_t  total, unleased, wanted;
	int64_t  leased;         /* sum over open and fenced leases of units - returned */
	int64_t  sold_closed;    /* sum of sold_at_close over closed leases */
};

/**
 * Load or change a pool: a new (activity, sku) gets total = unleased = @p total;
 * an existing one moves total and unleased by the same difference, refused
 * when that would take unleased below 0 (total below what is leased or sold).
 * @return FLASH_OK; FLASH_ESOLD_OUT (refused: nothing changed); FLASH_EINVAL;
 *         FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_pool_set(central_t *c, uint32_t activity_id, uint32_t sku_id, int64_t total);

/** Read one pool.  @return FLASH_OK; FLASH_ENOT_FOUND; FLASH_EMYSQL_RETRY; FLASH_EMYSQL. */
int central_pool_get(central_t *c, uint32_t activity_id, uint32_t sku_id,
                           struct pool_row *out);

/** Say a box wants @p units of a pool that could not give them (0 clears):
 *  wanted = GREATEST(wanted, units), or 0.  Best effort, one statement. */
int central_want(central_t *c, uint32_t activity_id, uint32_t sku_id, int64_t units);

struct box_reg {
	uint32_t epoch;          /* the box's new epoch */
	uint32_t old_epoch;      /* 0: first registration */
	int      was_fenced;     /* the box was found fenced (its leases were not adopted) */
	uint32_t adopted;        /* open leases moved to the new epoch */
	uint32_t fenced_leases;  /* leases still waiting for a reclaim (state 'fenced') */
};

/**
 * Register a box: a new box gets epoch 1; a known one epoch + 1 and state
 * 'live'.  A live box adopts its open leases (their epoch becomes the new
 * one); a fenced box adopts nothing: its leases stay 'fenced' for a reclaim
 * (central_reclaim).  Not exactly once: a retry after a lost
 * connection may bump the epoch twice, which is harmless (the epoch only
 * grows, and what is returned is what MariaDB holds).
 * @param[in] only_if_live  refuse (FLASH_EFENCED, nothing changed) when the
 *                          box is fenced: the agent drains its stock first
 * @return FLASH_OK; FLASH_EFENCED; FLASH_EINVAL; FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_register(central_t *c, uint32_t box_id, int only_if_live,
                           struct box_reg *out);

/**
 * Take lease @p lease_id of @p units from a pool: one transaction, the
 * lease row first, then
 *   UPDATE fs_box b JOIN fs_pool p SET p.unleased = p.unleased - k, ...
 *   WHERE b.box_id=? AND b.epoch=? AND b.state='live' AND p.unleased >= k
 * Retried after 1213/1047/a lost connection only once the lease id was
 * looked up and found absent.
 * @return FLASH_OK (taken now or by an earlier attempt of this call);
 *         FLASH_EFENCED (stale or fenced epoch); FLASH_ESOLD_OUT (the pool
 *         has fewer than @p units unleased); FLASH_EEXIST (the lease id exists
 *         with other content: never reuse an id); FLASH_EINVAL;
 *         FLASH_EMYSQL_RETRY (fate known -- not taken -- but no node
 *         answered in time); FLASH_EMYSQL.
 */
int central_take(central_t *c, uint32_t box_id, uint32_t epoch, uint32_t activity_id,
                       uint32_t sku_id, uint64_t lease_id, int64_t units);

/**
 * Return @p units of lease @p lease_id, which the box last saw with
 * returned = @p returned_before:
 *   UPDATE fs_lease l JOIN fs_box b JOIN fs_pool p SET l.returned = before + k,
 *          p.unleased = p.unleased + k ... WHERE l.lease_id=? AND l.returned = before
 *          AND b.epoch=? AND b.state='live' AND l.state='open' AND before + k <= l.units
 * A replay (the first attempt committed) matches nothing and is recognised
 * by the lease reading returned = before + k: FLASH_OK, returned once.
 * @return FLASH_OK; FLASH_EFENCED; FLASH_ELEASE (unknown, not open, another
 *         returned count, or more than it holds); FLASH_EINVAL;
 *         FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_return(central_t *c, uint32_t box_id, uint32_t epoch, uint32_t activity_id,
                         uint32_t sku_id, uint64_t lease_id, int64_t returned_before, int64_t units);

/**
 * Close an open lease whose unreturned units are all sold (the end of a
 * sale): state 'closed', sold_at_close = units - returned, conditional on the
 * epoch.  @return FLASH_OK (also when closed already); FLASH_EFENCED;
 * FLASH_ELEASE; FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_lease_close(central_t *c, uint32_t box_id, uint32_t epoch, uint64_t lease_id);

/**
 * Give back @p units that came back to the box after lease @p lease_id
 * closed (a cancel after the end of the sale): the lease's sold_at_close
 * drops from @p sold_before by k, its returned count and the pool grow by k,
 * conditional on the epoch and on sold_at_close = before (a replay matches
 * nothing and is recognised).
 * @return FLASH_OK; FLASH_EFENCED; FLASH_ELEASE; FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_return_closed(central_t *c, uint32_t box_id, uint32_t epoch, uint32_t activity_id,
                                uint32_t sku_id, uint64_t lease_id, int64_t sold_before, int64_t units);

/** Heartbeat: UPDATE fs_box SET heartbeat = NOW(6) ... WHERE box_id=? AND
 *  epoch=? AND state='live'.  @return FLASH_OK; FLASH_EFENCED (0 rows);
 *  FLASH_EMYSQL_RETRY; FLASH_EMYSQL. */
int central_heartbeat(central_t *c, uint32_t box_id, uint32_t epoch, uint64_t applied_lsn);

/**
 * Fence a box:
 *   UPDATE fs_box SET epoch = epoch + 1, state = 'fenced' WHERE box_id=? AND
 *          epoch=? AND heartbeat < NOW(6) - INTERVAL ? SECOND
 * (@p force drops the heartbeat condition) and, in the same transaction, its
 * open leases become 'fenced'.
 * @param[out] new_epoch  the epoch after the fence (may be NULL)
 * @param[out] leases     leases fenced (may be NULL)
 * @return FLASH_OK; FLASH_EBUSY (the heartbeat is younger than @p stale_s:
 *         nothing changed); FLASH_EEXIST (fenced already: nothing changed);
 *         FLASH_ENOT_FOUND; FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_fence(central_t *c, uint32_t box_id, uint32_t stale_s, int force,
                        uint32_t *new_epoch, uint32_t *leases);

struct lease_row {
	uint64_t lease_id;
	uint32_t box_id, epoch, activity_id, sku_id;
	int64_t  units, returned, sold_at_close;
	char     state[8];       /* "open", "closed", "fenced" */
};

/** Read one lease.  @return FLASH_OK; FLASH_ENOT_FOUND; FLASH_EMYSQL_RETRY; FLASH_EMYSQL. */
int central_lease_get(central_t *c, uint64_t lease_id, struct lease_row *out);

/**
 * List a box's leases (box 0: every box) in a state ("open", "fenced",
 * "closed", NULL: any), by lease id.  @p *out is malloc'd (free it).
 * @return FLASH_OK; FLASH_EMYSQL_RETRY; FLASH_EMYSQL; FLASH_ENOMEM.
 */
int central_leases(central_t *c, uint32_t box_id, const char *state,
                         struct lease_row **out, size_t *n);

struct box_row {
	uint32_t box_id, epoch;
	char     state[8];
	int64_t  heartbeat_age_ms;
	uint64_t applied_lsn;
};

/** Every box.  @p *out is malloc'd.  @return as central_leases(). */
int central_boxes(central_t *c, struct box_row **out, size_t *n);

/**
 * Reclaim the fenced leases of @p box_id for one sku, given the units the box
 * sold over all its leases of that sku (its WAL, or its segment): sold is
 * attributed to the closed leases first (their sold_at_close), the rest to
 * the fenced leases oldest first; each fenced lease is closed and its
 * unsold rest goes back to the pool, in one transaction, each statement
 * conditional on the lease still being 'fenced' with the returned count
 * read: a second reclaim finds nothing to do.
 * @param[out] returned  units given back to the pool by this call (may be NULL)
 * @return FLASH_OK; FLASH_ELEASE (sold exceeds what the leases held: the
 *         figures disagree; nothing changed); FLASH_EMYSQL_RETRY; FLASH_EMYSQL.
 */
int central_reclaim(central_t *c, uint32_t box_id, uint32_t activity_id, uint32_t sku_id,
                          int64_t sold, int64_t *returned);

/** The connection to the node for key 0 (the tools' reads), or NULL. */
struct st_mysql;
struct st_mysql *central_conn(central_t *c);

/** The last MySQL error text of the handle ("" if none). */
const char *central_error(const central_t *c);

#ifdef __cplusplus
}
#endif
#endif /* CENTRAL_H */
