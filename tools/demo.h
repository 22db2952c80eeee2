/*
 * demo.h -- the parts of `flashstock demo` and what they share.
 *
 *   cmd_demo.c     options, the private segment's life, forking buyers,
 *                  the steps after the sale, the report
 *   demo_durable.c private directory and MariaDB, the WAL daemon (a child
 *                  process draining the rings), the WAL read back, MySQL
 *                  caught up and counted, the reconciler (demo_durable.h)
 *   demo_buyer.c   one buyer process: token -> order -> retries, repeats,
 *                  cancels, each outcome checked against the API contract
 *   demo_check.c   the independent audit: order records, stock, ring
 *                  records and the buyers' own tallies must all agree
 *   demo_unpaid.c  the unpaid round: reservations never paid, expired by the
 *                  daemon, their units sold again to later buyers
 *   demo_boxes.c   `demo --boxes N`: N boxes leasing one sku from a private
 *                  Galera cluster, their daemons and buyers, the invariants
 *
 * Buyers share nothing with each other.  Each writes only its own
 * struct demo_proc in a MAP_SHARED block made before fork(); the parent
 * reads the progress fields while buyers run (relaxed loads: a progress
 * line may be a moment stale) and everything else after waitpid(), which
 * orders the child's stores before the parent's loads.
 */
#ifndef FLASH_TOOLS_DEMO_H
#define FLASH_TOOLS_DEMO_H

#include <stdint.h>
#include <sys/types.h>

#include "flashstock.h"
#include "flashstock_consumer.h"
#include "hist.h"

#define DEMO_SKUS_MAX   32u
#define DEMO_PROCS_MAX  256u
#define DEMO_ACTIVITY   1u      /* the demo's activity id */
#define DEMO_UNPAID_ACTIVITY 2u /* the unpaid round's (demo_unpaid.c) */
#define DEMO_TOKEN_TTL_MS 60000u

/* What the demo sells and how buyers behave (from the command line). */
struct demo_cfg {
	const char *name;            /* segment name */
	uint64_t    buyers;          /* would-be buyers, user ids 1..buyers */
	uint32_t    nskus;           /* skus 1..nskus */
	uint64_t    units;           /* units over all skus */
	uint32_t    procs;           /* buyer processes */
	uint32_t    limit;           /* orders per user (scope: activity) */
	uint32_t    cancel_pct;      /* % of successful orders cancelled */
	uint32_t    retry_pct;       /* % of buyers retrying with the same request id */
	uint32_t    repeat_pm;       /* per mille of buyers ordering again as the same user */
	uint32_t    ring;            /* records per handle ring; 0: the default */
	uint64_t    seed;            /* buyer behaviour (fixed: runs are comparable) */
	uint32_t    sync_wait_ms;    /* buyers' sync wait bound (flash_sync_wait_set); 0: default */
	uint64_t    unpaid_units;    /* the unpaid round's units (0: no round) */
	uint32_t    unpaid_pct;      /* % of its buyers who never pay */
	uint32_t    pay_ms;          /* its reservations' pay window */
	uint64_t    sku_units[DEMO_SKUS_MAX];   /* units per sku (index = sku id - 1) */
	uint32_t    sku_shards[DEMO_SKUS_MAX];  /* stock shards per sku */
};

/* One buyer process's tallies.  Written by that process only. */
struct demo_proc {
	/* progress: read by the parent while the buyer runs */
	uint64_t dp_calls __attribute__((aligned(64)));  /* flash_order calls */
	uint64_t dp_acked;           /* FLASH_OK (or FLASH_EFATE_UNKNOWN: placed) on a new request */
	uint64_t dp_buyers_done;
	/* final tallies: read after waitpid() */
	uint64_t dp_sold_out;        /* FLASH_ESOLD_OUT on a new request */
	uint64_t dp_retries;         /* same request id sent again */
	uint64_t dp_retry_ok;        /* ... answered EDUPLICATE with the first outcome */
	uint64_t dp_repeats;         /* same user ordered again after holding the limit */
	uint64_t dp_repeat_ok;       /* ... answered ELIMIT */
	uint64_t dp_cancels;         /* flash_cancel OK, all units returned */
	uint64_t dp_cancel_twice_ok; /* second cancel answered ECANCELLED */
	uint64_t dp_busy;            /* EBUSY (ring full) answers, retried */
	uint64_t dp_fate_unknown;    /* FLASH_EFATE_UNKNOWN (sync: placed, not durable within
	                                the wait bound): counted as acknowledged */
	uint64_t dp_fate_learned;    /* ... then found durable by flash_durable_wait() */
	uint64_t dp_unexpected;      /* answers the API contract forbids */
	uint64_t dp_acked_sku[DEMO_SKUS_MAX];      /* units acknowledged, per sku */
	uint64_t dp_cancelled_sku[DEMO_SKUS_MAX];  /* units cancelled, per sku */
	int32_t  dp_first_bad_rc;    /* first unexpected answer, for the report */
	char     dp_first_bad[120];  /* ... and what was expected */
	int32_t  dp_ready;           /* handle open, waiting for the start */
	int32_t  dp_open_rc;         /* flash_open result in the child */
	struct bench_hist dp_lat;    /* flash_order latency, ns */
};

/* The MAP_SHARED block: a start flag and one demo_proc per buyer process. */
struct demo_shared {
	int32_t          ds_go __attribute__((aligned(64)));  /* 1: start buying; -1: abort */
	struct demo_proc ds_proc[];
};

/** demo_buyer.c: body of buyer process @p idx (after fork).  Opens its own
 *  handle, waits for ds_go, buys its share of users, closes.
 *  @return the child's exit status (0: ran to the end; 1: could not run). */
int demo_buyer_run(const struct demo_cfg *cfg, struct demo_shared *sh, uint32_t idx);

/** The sku a buyer wants: weighted by each sku's share of the units. */
uint32_t demo_pick_sku(const struct demo_cfg *cfg, uint64_t h);

/** splitmix64: a buyer's behaviour from (seed, user). */
uint64_t demo_mix(uint64_t x);

/* ---- demo_unpaid.c ----------------------------------------------------- */

struct demo_rings;

/* What the unpaid round did. */
struct demo_unpaid {
	int       ran;
	uint64_t  reserved, paid, unpaid, expired, resold;
	int       refused_while_held;   /* a reservation past the stock was refused */
	uint64_t  wait_ms;              /* from the last unpaid one's pay-by time to when all were
	                                   seen expired (an upper bound of the daemon's lag) */
	uint64_t *order_no;             /* during the round: each reservation's number */
};

/** Add the round's activity and sku (before the sale).  @return a TOOL_* code. */
int demo_unpaid_load(flash_t *h, const struct demo_cfg *cfg);
/** Run the round (after the sale, the daemon running).  @return a TOOL_* code. */
int demo_unpaid_run(flash_t *h, const struct demo_cfg *cfg, struct demo_unpaid *u);
/** Its audit, once the WAL was read back into @p rings: "" or the first problem. */
void demo_unpaid_audit(flash_t *h, const struct demo_cfg *cfg, const struct demo_rings *rings,
                       const struct demo_unpaid *u, char *problem, size_t n);

/* ---- demo_boxes.c ------------------------------------------------------ */

/** Does the command line ask for more than one box (--boxes N, N > 1)? */
int demo_boxes_wanted(int argc, char **argv);

/** `flashstock demo --boxes N`: N boxes leasing one sku from a private
 *  Galera cluster (tools/demo_boxes.c).  @return the exit code. */
int demo_boxes_main(int argc, char **argv);

/* ---- demo_check.c ------------------------------------------------------ */

/* Records of the sale as the WAL holds them (read back after the daemon
 * stopped), kept for the audit. */
struct demo_rings {
	uint64_t  order_qty[DEMO_SKUS_MAX];   /* ORDER records, units */
	uint64_t  cancel_qty[DEMO_SKUS_MAX];  /* CANCEL records, units */
	uint64_t  records;                    /* all records drained */
	uint64_t  orders, cancels;            /* ORDER / CANCEL records */
	uint64_t  anomalies;                  /* records that cannot be right */
	uint8_t  *seen;                       /* per order number: DEMO_SEEN_* */
	uint64_t  seen_cap;                   /* entries in seen[] */
	uint64_t *last_seq;                   /* per slot: last seq drained */
	uint64_t *acked_seq;                  /* per slot: last seq released to the producer */
	uint32_t  nslots;
	char      first_anomaly[160];
	/* the unpaid round's records (DEMO_UNPAID_ACTIVITY): reservations,
	 * plain orders, CONFIRM, EXPIRE and CANCEL records */
	uint64_t  u_reserve, u_plain, u_confirm, u_expire, u_cancel;
};

#define DEMO_SEEN_ORDER  0x1u
#define DEMO_SEEN_CANCEL 0x2u

/** Set up @p r for a segment with @p orders_cap orders and @p slots slots. */
int demo_rings_init(struct demo_rings *r, uint64_t orders_cap, uint32_t slots);
void demo_rings_free(struct demo_rings *r);

/** flash_record_fn for flash_ring_drain(): account one record into a struct demo_rings. */
int demo_rings_record(void *arg, const struct flash_record *rec, uint64_t seq);

/* The audit's findings.  Every *_mismatch / oversold / leaked / over-limit
 * figure must be zero for the demo to pass. */
struct demo_audit {
	uint64_t total[DEMO_SKUS_MAX], available[DEMO_SKUS_MAX];
	uint64_t active_qty[DEMO_SKUS_MAX];   /* from the order table */
	uint64_t active_orders, cancelled_orders, none_orders;
	uint64_t units_total, units_available, sold;
	uint64_t oversold;            /* sum max(0, active - total) */
	uint64_t leaked_units;        /* sum |total - available - active| */
	uint64_t users_over_limit;    /* limit keys holding more than K active orders */
	uint64_t ring_mismatches;     /* skus or orders where records and table disagree */
	uint64_t client_mismatches;   /* skus where buyers' tallies and table disagree */
	uint64_t orders_scanned;
	char     first_problem[200];
};

/**
 * The independent audit, at quiescence (every buyer has exited and the rings
 * are drained): read every order 1..flash_orders_max(), every sku's stock,
 * and compare with the drained records and the buyers' tallies.
 * @return FLASH_OK (findings in @p out), or the failing call's code.
 */
int demo_audit_run(flash_t *h, const struct demo_cfg *cfg, const struct demo_rings *rings,
                   const struct demo_shared *sh, struct demo_audit *out);

#endif /* FLASH_TOOLS_DEMO_H */
