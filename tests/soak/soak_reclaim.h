/*
 * soak_reclaim.h -- the soak's adapter to reclamation (issue 13): request-id
 * windows, limit-entry generations and archiving.  Every use of that API by
 * the soak goes through the functions below (tests/soak/soak_reclaim.c),
 * so when it lands only their bodies change; each says what it becomes.
 * Today they do what today's API allows: a segment sized for every day of the
 * run with reclamation off, request ids from a counter, fill from
 * flash_stats_get().
 */
#ifndef FLASH_TESTS_SOAK_RECLAIM_H
#define FLASH_TESTS_SOAK_RECLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"
#include "soak.h"

/* Table fill: used / capacity, as the soak prints and bounds it. */
struct soak_fill {
	uint64_t users, users_cap;          /* per-user limit entries */
	uint64_t requests, requests_cap;    /* request ids remembered */
	uint64_t orders, orders_cap;        /* order-table slots held */
	uint64_t activities, activities_cap;
	uint64_t skus, skus_cap;
	uint64_t shards, shards_cap;
	uint64_t tokens, tokens_cap;
	uint64_t segment_bytes;
	/* what went through the tables over the run (the reclamation check) */
	uint64_t requests_reclaimed, users_reclaimed;  /* keys cleared with their banks */
	uint64_t orders_issued;                        /* order numbers taken */
	uint64_t activities_hw;                        /* activity entries ever in use at once */
};

/* The request-id window: 23 h.  The engine keeps a request generation at
 * least the window plus 60 s (the future an id may carry), and the soak's
 * clock moves to the same time of day every morning: with a 24 h window the
 * generation would fall due only a minute (real) after each morning.  So a
 * request id is remembered through its day and the night, and a retry the
 * next day is past the window (FLASH_EREQ_EXPIRED). */
#define SOAK_REQ_WINDOW_S    (23 * 3600)
/* serve --archive-after-s: an ended activity is archived an hour after its end */
#define SOAK_ARCHIVE_AFTER_S 3600

/* How many days of traffic the segment holds at once.  Today: all of them
 * (nothing is reclaimed).  At merge: 3 -- today, yesterday (whose request ids
 * and per-day limit entries are still inside their window), and the bank
 * being cleared; the per-day-limit activity that runs SOAK_DAY_ACT_DAYS days
 * keeps its order slots until it is archived, which the slack covers. */
uint32_t soak_days_held(uint32_t days);

/* Size the segment for @p c (capacities in @p o, from the defaults) and say
 * the fill no table may exceed at the end (@p bound: the traffic of
 * soak_days_held() days, the slack left out).  At merge: max_requests and
 * max_users become per-bank capacities (memory = banks x capacity), so they
 * are sized for one generation each. */
void soak_size(const struct soak_cfg *c, struct flash_seg_opts *o, struct soak_fill *bound);

/* Right after create, before any order.  Today: nothing (reclamation does
 * not exist).  At merge: flash_seg_reclaim_set(h, {req_window_s = 86400,
 * user_gen_s = 86400}) -- windows of one simulated day. */
int soak_reclaim_setup(flash_t *h);

/* Extra arguments for `flashstock serve` (NULL-terminated).  Today: none.
 * At merge: "--reclaim" (advance and clear on the daemon's timer) and
 * "--archive-after-s", "3600" (ended activities archived an hour after
 * their end, once MariaDB has applied them). */
const char *const *soak_serve_args(void);

/* Request ids of one process of one day. */
struct soak_idgen {
	uint32_t day;
	uint32_t proc;     /* 1..SOAK_PROCS_MAX for buyers, 0 for the parent */
	uint64_t seq;
};

/* A fresh request id.  Today: a counter, unique over the run (day, process,
 * sequence).  At merge: flash_request_id_new() -- the time in its top 48
 * bits is what the window is measured on. */
uint64_t soak_mint_request_id(struct soak_idgen *g);

/* What a retry of request @p request_id, made about @p age_s (shifted)
 * seconds ago, must answer. */
enum soak_retry_expect {
	SOAK_RETRY_FIRST   = 0,   /* FLASH_EDUPLICATE with the first outcome */
	SOAK_RETRY_EXPIRED = 1,   /* FLASH_EREQ_EXPIRED */
	SOAK_RETRY_EITHER  = 2    /* near the window's edge: either */
};

/* Today: always the first outcome (ids are remembered for the segment's
 * life).  At merge: the age from the id's own time (bits 63..16, ms) against
 * the clock now: FIRST below req_window_s - 60 s, EXPIRED above
 * req_window_s + 60 s, EITHER between. */
enum soak_retry_expect soak_retry_expect(uint64_t request_id, int64_t age_s);

/* Does @p rc answer a retry as @p e allows (first outcome @p first_rc,
 * @p first_order)?  res is the retry's result. */
int soak_retry_ok(enum soak_retry_expect e, int rc, const struct flash_order_res *res,
                  int first_rc, uint64_t first_order);

/* The time the clock moves to for the morning @p morning_ns: that, or, if
 * later, just past the moment both keyed tables' generations are due.  A
 * generation lasts its length from when the daemon moved it on (one
 * reclaimer tick after it fell due), so its turn drifts a tick later every
 * day; the soak's mornings follow it instead of waiting for it in real time
 * (a wait that would grow by a tick a day). */
int64_t soak_morning_ns(flash_t *h, int64_t morning_ns);

/* Does @p rc answer an order for an activity that ended yesterday?
 * FLASH_EENDED, or FLASH_ENOT_FOUND once the daemon archived it
 * (flashstock.h: an order for an archived activity). */
int soak_ended_ok(int rc);

/* After the clock moved to day @p day's start: wait for the daemon's
 * end-of-day work, at most @p wait_ms.  Today: the work is draining what the
 * last day left (every record durable, no operation in flight): nothing is
 * reclaimed.  At merge: also until flash_gen_get() shows, for
 * FLASH_TABLE_REQUESTS and FLASH_TABLE_USERS, the current generation of
 * the new day and the bank two generations back clear, and the activities
 * that ended before yesterday archived (flash_activity_at finds none).
 * @p note (may be NULL) says what was waited for.
 * @return FLASH_OK; FLASH_EBUSY (not within @p wait_ms); another code of a
 *         failed read. */
int soak_day_end(flash_t *h, uint32_t day, uint32_t wait_ms, char *note, size_t cap);

/* The fill now.  Today: flash_stats_get().  At merge: requests and users
 * are the keys held over every bank of flash_gen_get() (capacity: banks x
 * per-bank capacity), orders the slots held by live activities. */
int soak_fill(flash_t *h, struct soak_fill *out);

#endif /* FLASH_TESTS_SOAK_RECLAIM_H */
