/*
 * soak.h -- the parts of the soak (`flashstock_soak`) and what they share.
 *
 *   soak.c         options; the two processes of a run (the outer one owns the
 *                  private directory and MariaDB, the inner one runs on the
 *                  shifted clock); the segment, the daemon, the days, the
 *                  report, the plot
 *   soak_buyer.c   one buyer process of one day: tokens, orders with request
 *                  ids, retries, cancels, leased locks; every answer checked
 *                  against the API contract and every outcome written to its
 *                  outcome file
 *   soak_check.c   the checks at the end, from the records: the WAL read back,
 *                  MariaDB, the segment and the buyers' outcome files
 *   soak_reclaim.c the adapter: every use of the reclamation API (request-id
 *                  windows, limit-entry generations, archiving) is there, so
 *                  the rest of the soak does not change when it lands
 *
 * The simulated day d runs on a shifted CLOCK_REALTIME: every process of the
 * run (the soak, its buyers, the daemon) loads libfaketime, which adds the
 * offset written in one file; the soak rewrites the file to move the clock
 * (soak_clock_set).  Day d starts at SOAK_DAY_START_S after midnight UTC of
 * base day + d.  CLOCK_MONOTONIC is not shifted (token TTLs, lock leases,
 * sync waits, the daemon's timers keep their real meaning).
 *
 * Buyers share nothing with each other: each writes its own struct
 * soak_proc in a MAP_SHARED block made before fork() and its own outcome
 * file; the parent reads both after waitpid() (which orders the child's
 * stores before the parent's loads), or after a SIGKILL it sent: a file
 * holds only whole records, each written with one write(2).
 */
#ifndef FLASH_TESTS_SOAK_H
#define FLASH_TESTS_SOAK_H

#include <stdint.h>
#include <sys/types.h>

#include "flashstock.h"

#define SOAK_PROCS_MAX      64u
#define SOAK_DAY_S          86400LL
#define SOAK_DAY_START_S    (8 * 3600)     /* a simulated day's traffic starts at 08:00 UTC */
#define SOAK_ACTS_PER_DAY   3u             /* new activities a day (soak_act_id kinds) */
#define SOAK_SKUS_PER_ACT   3u
#define SOAK_HOT_SHARDS     4u             /* sku 1 of every activity is split */
#define SOAK_SHARDS_PER_ACT (SOAK_HOT_SHARDS + SOAK_SKUS_PER_ACT - 1)
#define SOAK_DAY_ACT_DAYS   3              /* the per-day-limit activity runs this many days */
#define SOAK_LOCKS          8u             /* lock names "soak-lock-0".."-7" */
#define SOAK_TOKEN_TTL_MS   60000u

/* The kinds of a day's activities. */
enum soak_kind {
	SOAK_KIND_DAY   = 0,   /* FLASH_SCOPE_DAY, limit 2, runs SOAK_DAY_ACT_DAYS days */
	SOAK_KIND_ONCE  = 1,   /* FLASH_SCOPE_ACTIVITY, limit 1, a cancel returns the quota,
	                          ends the same day */
	SOAK_KIND_TOKEN = 2    /* FLASH_SCOPE_SKU, limit 1, token required, ends the same day */
};

/* The activity id of kind @p kind added on day @p day. */
static inline uint32_t soak_act_id(uint32_t day, uint32_t kind)
{
	return 1000u + day * 10u + kind;
}

/* What the run does (the command line, and what follows from it). */
struct soak_cfg {
	uint32_t days;            /* --days */
	uint64_t seed;            /* --seed */
	uint32_t procs;           /* --buyers: buyer processes a day */
	uint32_t orders_per_day;  /* --orders-per-day: order attempts a day, over all buyers */
	uint32_t users;           /* user ids 1..users (a pool reused every day) */
	uint32_t restart_every;   /* the daemon is killed (SIGKILL) and restarted every N days */
	uint32_t kill_pct;        /* % of buyer processes killed (SIGKILL) during a day */
	int64_t  base_s;          /* simulated day 0, midnight UTC (CLOCK_REALTIME s) */
	uint32_t durability;      /* --durability: enum flash_durability */
	uint32_t inject;          /* --inject: SOAK_INJECT_* (the soak's own test) */
	const char *dir;          /* the private directory */
	const char *name;         /* the segment */
};

/* Faults --inject plants, each to prove one check can fail (tests/soak/soak_tests.cmake). */
#define SOAK_INJECT_LOST_ACK    0x1u  /* an acknowledged order the WAL never saw */
#define SOAK_INJECT_MYSQL_STOCK 0x2u  /* one unit more available in MariaDB than sold allows */
#define SOAK_INJECT_RETRY       0x4u  /* a retry whose first outcome was another order */
#define SOAK_INJECT_FULL        0x10u /* a table answered FLASH_EFULL once (reclamation behind) */
#define SOAK_INJECT_WAL_ORDER   0x8u  /* a forged ORDER record: more units than the sku has,
                                         for a user who holds the limit already */

/* Start of day @p day's traffic, CLOCK_REALTIME ns (shifted). */
static inline int64_t soak_day_ns(const struct soak_cfg *c, uint32_t day)
{
	return (c->base_s + (int64_t)day * SOAK_DAY_S + SOAK_DAY_START_S) * 1000000000LL;
}

/* One outcome, as a buyer (or the parent's end-of-day retries) saw it:
 * one record of an outcome file, written with one write(2). */
enum soak_out_kind {
	SOAK_OUT_ORDER  = 1,   /* a new request: its first outcome (rc, order_no) */
	SOAK_OUT_CANCEL = 2,   /* a cancel that returned FLASH_OK (qty units back) */
};

struct soak_out {
	uint32_t so_kind;         /* enum soak_out_kind */
	int32_t  so_rc;           /* the answer (OK, SOLD_OUT, LIMIT, ...) */
	uint64_t so_request_id;
	uint64_t so_order_no;     /* with FLASH_OK */
	uint64_t so_user;
	uint64_t so_token;        /* the token the order carried (0: none) */
	uint32_t so_activity;
	uint32_t so_sku;
	uint32_t so_qty;
	uint32_t so_day;          /* simulated day it was made */
	uint32_t so_slot;         /* limit slot (FLASH_OK) */
	uint32_t _pad;
};

/* One buyer process's tallies.  Written by that process only. */
struct soak_proc {
	uint64_t sp_calls __attribute__((aligned(64)));  /* flash_order calls */
	uint64_t sp_acked;          /* FLASH_OK on a new request */
	uint64_t sp_sold_out, sp_limit, sp_ended_ok;
	uint64_t sp_retries;        /* same request id sent again at once, answered */
	uint64_t sp_retry_ok;       /* ... with the first outcome */
	uint64_t sp_retry_bad;      /* ... with anything else (a kill between the counts
	                               leaves retries and retry_ok apart: this one decides) */
	uint64_t sp_cancels;        /* flash_cancel OK, every unit returned */
	uint64_t sp_cancel_twice_ok;
	uint64_t sp_token_reuse, sp_token_reuse_ok;  /* a used token refused (FLASH_EBAD_TOKEN) */
	uint64_t sp_locks;          /* lock granted, fence increasing, released */
	uint64_t sp_locked;         /* FLASH_ELOCKED (held by another live buyer) */
	uint64_t sp_lock_lapsed;    /* released after its lease ran out (a sync cancel
	                               held it past 2 s): FLASH_ENOT_OWNER, as documented */
	uint64_t sp_busy;           /* FLASH_EBUSY (ring full while the daemon restarts), retried */
	uint64_t sp_fate_unknown;   /* FLASH_EFATE_UNKNOWN (sync: placed, not durable within the
	                               wait bound): counted as placed, as the API says */
	uint64_t sp_unexpected;
	uint64_t sp_full;           /* of those, FLASH_EFULL: a table full (reclamation behind) */
	int32_t  sp_first_bad_rc;
	char     sp_first_bad[120];
	int32_t  sp_ready;          /* handle open, waiting for the start */
	int32_t  sp_open_rc;
	int32_t  sp_done;           /* ran to the end */
};

struct soak_shared {
	int32_t          ss_go __attribute__((aligned(64)));   /* 1: start; -1: abort */
	struct soak_proc ss_proc[SOAK_PROCS_MAX];
};

/* soak_buyer.c: body of buyer process @p idx of day @p day (after fork).
 * Writes its outcomes to @p out_path.  @return the child's exit status. */
int soak_buyer_run(const struct soak_cfg *cfg, struct soak_shared *sh, uint32_t day,
                   uint32_t idx, const char *out_path);

/* splitmix64 */
uint64_t soak_mix(uint64_t x);

/* ---- soak_check.c: the checks at the end ------------------------------- */

/* Every outcome the run saw (the buyers' files and the parent's retries). */
struct soak_log {
	struct soak_out *so;
	size_t           n, cap;
	uint64_t         late_retries, late_retry_ok;    /* parent: same day, other process */
	uint64_t         old_retries, old_retry_ok;      /* parent: requests of earlier days */
	uint64_t         late_retry_bad;
	uint64_t         expired_ok;                     /* parent: past the window, FLASH_EREQ_EXPIRED */
	char             first_bad[200];
};

int soak_log_add(struct soak_log *l, const struct soak_out *o);
void soak_log_free(struct soak_log *l);

/* The figures one check prints; ok when every problem count is 0. */
struct soak_verdict {
	uint64_t wal_records, wal_orders, wal_cancels, wal_other;
	uint64_t skus, units_total, units_sold;
	uint64_t oversold;          /* skus whose sold ever exceeded their total (WAL prefix) */
	uint64_t leaked_mem, leaked_wal, leaked_mysql;  /* skus where available + sold != total */
	uint64_t over_limit_wal;    /* limit keys held more than K times, at any point */
	uint64_t over_limit_mysql;  /* rows of rsql_users_over_limit */
	uint64_t acked, acked_not_once_wal, acked_not_once_mysql, acked_mismatch;
	uint64_t acked_wrong_day;   /* acknowledged orders whose business day (the engine's, from
	                               the buyer's clock) is not their simulated day's */
	uint64_t wal_dup_orders;    /* order numbers with two ORDER records */
	uint64_t mysql_orders, mysql_not_in_wal, mysql_conflicts;
	uint64_t reconcile_diffs;
	char     first[240];
};

/* Run every check (@p base_day: simulated day 0 as days since the epoch).
 * @return TOOL_OK when it could compare (figures in
 * @p v), TOOL_FAIL when a witness could not be read. */
int soak_check_run(flash_t *h, const char *wal_dir, const char *mysql_url,
                   const struct soak_log *log, uint32_t inject, int64_t base_day,
                   struct soak_verdict *v);

#endif /* FLASH_TESTS_SOAK_H */
