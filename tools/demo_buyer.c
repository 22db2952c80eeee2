/*
 * demo_buyer.c -- one buyer process of `flashstock demo`.
 *
 * A buyer process serves a contiguous range of user ids.  For each user:
 * issue a one-time token, place one order with a fresh request id, and by a
 * fixed per-user coin (so runs are comparable):
 *   - retry the same request id: must answer FLASH_EDUPLICATE with the first
 *     outcome (and the same order number);
 *   - cancel a successful order: must return its units; a second cancel must
 *     answer FLASH_ECANCELLED;
 *   - order again as the same user until holding the limit, then once more:
 *     that one must answer FLASH_ELIMIT.
 * In sync durability an order or cancel whose record is not durable within
 * the handle's wait bound answers FLASH_EFATE_UNKNOWN: it is done in memory
 * (the order placed, the units returned), only its durability is not known
 * yet.  The buyer counts it as the success it is, then asks once more with
 * flash_durable_wait() (counted when that finds it durable); the report's
 * WAL check proves every such order durable in the end.
 * Any other answer is counted as unexpected and the first one is described
 * for the report.  Only flash_order is timed, and only the histogram and
 * this process's own counters are written: no lock, nothing shared.
 */
#include "demo.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* EBUSY retries (200 us apart: 30 s at least) before giving up.  EBUSY takes
 * nothing, and a daemon whose disk stalls for seconds under load is behind,
 * not broken: CI saw a 5 s stall fail the run when the bound was 1 s. */
#define DEMO_BUSY_TRIES 150000u

struct demo_buyer {
	flash_t                *h;
	const struct demo_cfg  *cfg;
	struct demo_proc       *p;
	int                     windowed;  /* request ids must carry their time (flashstock.h 11) */
};

uint64_t demo_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint32_t demo_pick_sku(const struct demo_cfg *cfg, uint64_t h)
{
	uint64_t r = cfg->units ? h % cfg->units : 0, cum = 0;
	uint32_t i;

	for (i = 0; i < cfg->nskus; i++) {
		cum += cfg->sku_units[i];
		if (r < cum)
			return i + 1;
	}
	return cfg->nskus;
}

static void demo_bad(struct demo_proc *p, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void demo_bad(struct demo_proc *p, int rc, const char *fmt, ...)
{
	va_list ap;

	if (p->dp_unexpected++ == 0) {
		p->dp_first_bad_rc = rc;
		va_start(ap, fmt);
		vsnprintf(p->dp_first_bad, sizeof p->dp_first_bad, fmt, ap);
		va_end(ap);
	}
}

static void demo_pause(void)
{
	struct timespec ts = { 0, 200000 };

	nanosleep(&ts, NULL);
}

/* flash_order, timed.  The clock reads bracket the call and nothing else. */
static int demo_order_timed(struct demo_buyer *b, const struct flash_order_req *r,
                            struct flash_order_res *res)
{
	struct timespec t0, t1;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = flash_order(b->h, r, res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	bench_hist_record(&b->p->dp_lat,
	                  (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL +
	                             (t1.tv_nsec - t0.tv_nsec)));
	__atomic_store_n(&b->p->dp_calls, b->p->dp_calls + 1, __ATOMIC_RELAXED);
	return rc;
}

/*
 * A new request for (user, sku): a fresh token and a fresh request id
 * ((user << 12) | k, k counting this user's requests), so no two requests of
 * the run share an id.  FLASH_EBUSY means the parent is behind draining the
 * rings and nothing was taken: pause and try again with a new token (the
 * old one may be burnt) and a new request id.
 */
static int demo_order_new(struct demo_buyer *b, uint64_t user, uint32_t sku,
                          uint32_t *k, struct flash_order_req *req,
                          struct flash_order_res *res)
{
	uint32_t tries;
	uint64_t tok;
	int rc;

	/* defined on every return, also when no token could be issued: the
	 * caller tallies and retries from *req */
	memset(req, 0, sizeof *req);
	memset(res, 0, sizeof *res);
	for (tries = 0;; tries++) {
		rc = flash_token_issue(b->h, DEMO_ACTIVITY, sku, user, DEMO_TOKEN_TTL_MS, &tok);
		if (rc != FLASH_OK) {
			demo_bad(b->p, rc, "flash_token_issue(user %llu, sku %u): expected FLASH_OK",
			         (unsigned long long)user, sku);
			return rc;
		}
		memset(req, 0, sizeof *req);
		memset(res, 0, sizeof *res);
		req->activity_id = DEMO_ACTIVITY;
		req->sku_id = sku;
		req->user_id = user;
		req->qty = 1;
		req->token = tok;
		++*k;
		req->request_id = b->windowed ? flash_request_id_new() : (user << 12) | (*k & 0xfffu);
		rc = demo_order_timed(b, req, res);
		if (rc != FLASH_EBUSY)
			return rc;
		b->p->dp_busy++;
		if (tries >= DEMO_BUSY_TRIES) {
			demo_bad(b->p, rc, "flash_order(user %llu): ring stayed full",
			         (unsigned long long)user);
			return rc;
		}
		demo_pause();
	}
}

/* Did the call do its work?  FLASH_OK, or FLASH_EFATE_UNKNOWN: done in
 * memory, durability not known within the wait bound (flashstock.h). */
static int demo_done(int rc)
{
	return rc == FLASH_OK || rc == FLASH_EFATE_UNKNOWN;
}

/* After FLASH_EFATE_UNKNOWN: count it, and for an order (@p lsn, its
 * res->lsn) learn its fate as documented, waiting once more for at most
 * the same bound.  A cancel reports no lsn (0): counted only. */
static void demo_fate_unknown(struct demo_buyer *b, uint64_t lsn)
{
	uint32_t wait_ms = b->cfg->sync_wait_ms ? b->cfg->sync_wait_ms : FLASH_SYNC_WAIT_MS_DEFAULT;
	int rc;

	b->p->dp_fate_unknown++;
	if (lsn == 0)
		return;
	rc = flash_durable_wait(b->h, lsn, wait_ms);
	if (rc == FLASH_OK)
		b->p->dp_fate_learned++;
	else if (rc != FLASH_EFATE_UNKNOWN)
		demo_bad(b->p, rc, "flash_durable_wait(lsn %llu) after FLASH_EFATE_UNKNOWN: expected "
		         "FLASH_OK or FLASH_EFATE_UNKNOWN", (unsigned long long)lsn);
}

/* Tally a fresh order's outcome; @p limit_expected: whether ELIMIT is right. */
static void demo_tally(struct demo_buyer *b, int rc, uint64_t user, uint32_t sku,
                       const struct flash_order_req *req, const struct flash_order_res *res,
                       int limit_expected)
{
	struct demo_proc *p = b->p;

	switch (rc) {
	case FLASH_EFATE_UNKNOWN:   /* placed: tallied as FLASH_OK, its fate asked again */
		demo_fate_unknown(b, res->lsn);
		/* fall through */
	case FLASH_OK:
		__atomic_store_n(&p->dp_acked, p->dp_acked + 1, __ATOMIC_RELAXED);
		p->dp_acked_sku[sku - 1] += req->qty;
		if (limit_expected)
			demo_bad(p, rc, "user %llu ordered past the limit: expected FLASH_ELIMIT",
			         (unsigned long long)user);
		break;
	case FLASH_ESOLD_OUT:
		p->dp_sold_out++;
		break;
	case FLASH_ELIMIT:
		if (!limit_expected)
			demo_bad(p, rc, "first order of user %llu: limit hit before any order",
			         (unsigned long long)user);
		break;
	default:
		demo_bad(p, rc, "order of user %llu sku %u: expected FLASH_OK or FLASH_ESOLD_OUT",
		         (unsigned long long)user, sku);
		break;
	}
}

/* Cancel, pausing through FLASH_EBUSY (nothing changed) like orders. */
static int demo_cancel(struct demo_buyer *b, uint64_t order_no, uint32_t *units)
{
	uint32_t tries;
	int rc;

	for (tries = 0;; tries++) {
		*units = 0;
		rc = flash_cancel(b->h, order_no, units);
		if (rc != FLASH_EBUSY || tries >= DEMO_BUSY_TRIES)
			return rc;
		b->p->dp_busy++;
		demo_pause();
	}
}

static void demo_buyer_one(struct demo_buyer *b, uint64_t user)
{
	const struct demo_cfg *cfg = b->cfg;
	struct demo_proc *p = b->p;
	uint64_t hsh = demo_mix(cfg->seed ^ user);
	uint32_t sku = demo_pick_sku(cfg, hsh);
	int retry = (hsh >> 32) % 100 < cfg->retry_pct;
	int cancel = (hsh >> 40) % 100 < cfg->cancel_pct;
	int repeat = (hsh >> 48) % 1000 < cfg->repeat_pm;
	struct flash_order_req req;
	struct flash_order_res res, res2;
	uint32_t k = 0, units, held;
	int rc, rc2;

	rc = demo_order_new(b, user, sku, &k, &req, &res);
	demo_tally(b, rc, user, sku, &req, &res, 0);

	if (retry && rc != FLASH_EBUSY) {
		uint32_t tries = 0;
		p->dp_retries++;
		/* FLASH_EBUSY comes before the request id is looked up: the
		 * answer is "try later", so the retry is sent again as is. */
		do {
			if (tries) {
				p->dp_busy++;
				demo_pause();
			}
			memset(&res2, 0, sizeof res2);
			rc2 = demo_order_timed(b, &req, &res2);
		} while (rc2 == FLASH_EBUSY && ++tries < DEMO_BUSY_TRIES);
		/* a placed order's first outcome is FLASH_OK, also when its
		 * answer was FLASH_EFATE_UNKNOWN */
		int first = rc == FLASH_EFATE_UNKNOWN ? FLASH_OK : rc;
		if (rc2 == FLASH_EDUPLICATE && res2.first_rc == first &&
		    (first != FLASH_OK || res2.order_no == res.order_no))
			p->dp_retry_ok++;
		else
			demo_bad(p, rc2, "retry of request %llu (first %s, order %llu): expected "
			         "FLASH_EDUPLICATE with the first outcome, got first_rc %s order %llu",
			         (unsigned long long)req.request_id, flash_rcname(rc),
			         (unsigned long long)res.order_no, flash_rcname(res2.first_rc),
			         (unsigned long long)res2.order_no);
	}

	if (demo_done(rc) && cancel) {
		rc2 = demo_cancel(b, res.order_no, &units);
		if (rc2 == FLASH_EFATE_UNKNOWN)   /* cancelled in memory: units are back */
			demo_fate_unknown(b, 0);
		if (demo_done(rc2)) {
			p->dp_cancelled_sku[sku - 1] += req.qty;
			if (units == req.qty)
				p->dp_cancels++;
			else
				demo_bad(p, rc2, "cancel of order %llu returned %u units, expected %u",
				         (unsigned long long)res.order_no, units, req.qty);
			rc2 = demo_cancel(b, res.order_no, &units);
			if (rc2 == FLASH_ECANCELLED)
				p->dp_cancel_twice_ok++;
			else
				demo_bad(p, rc2, "second cancel of order %llu: expected FLASH_ECANCELLED",
				         (unsigned long long)res.order_no);
		} else {
			demo_bad(p, rc2, "cancel of order %llu: expected FLASH_OK",
			         (unsigned long long)res.order_no);
		}
	}

	/* The same user again: fill the limit (a cancel does not give quota
	 * back in this activity), then one more, which the limit must stop. */
	if (repeat && (demo_done(rc) || rc == FLASH_ESOLD_OUT)) {
		held = demo_done(rc);
		while (held < cfg->limit && demo_done(rc)) {
			rc = demo_order_new(b, user, sku, &k, &req, &res);
			demo_tally(b, rc, user, sku, &req, &res, 0);
			held += demo_done(rc);
		}
		if (held == cfg->limit) {
			p->dp_repeats++;
			rc = demo_order_new(b, user, sku, &k, &req, &res);
			demo_tally(b, rc, user, sku, &req, &res, 1);
			if (rc == FLASH_ELIMIT)
				p->dp_repeat_ok++;
			else if (!demo_done(rc))
				demo_bad(p, rc, "user %llu at the limit: expected FLASH_ELIMIT",
				         (unsigned long long)user);
		}
	}
}

int demo_buyer_run(const struct demo_cfg *cfg, struct demo_shared *sh, uint32_t idx)
{
	struct demo_proc *p = &sh->ds_proc[idx];
	struct demo_buyer b;
	uint64_t lo = idx * cfg->buyers / cfg->procs;
	uint64_t hi = (idx + 1) * cfg->buyers / cfg->procs, u;
	int go, rc;

	bench_hist_init(&p->dp_lat);
	rc = flash_open(cfg->name, 0, &b.h);
	if (rc == FLASH_OK && cfg->sync_wait_ms &&
	    (rc = flash_sync_wait_set(b.h, cfg->sync_wait_ms)) != FLASH_OK)
		flash_close(b.h);
	p->dp_open_rc = rc;
	__atomic_store_n(&p->dp_ready, 1, __ATOMIC_RELEASE);
	if (rc != FLASH_OK)
		return 1;
	b.cfg = cfg;
	b.p = p;
	{
		struct flash_gen_info gi;

		b.windowed = flash_gen_get(b.h, FLASH_TABLE_REQUESTS, &gi) == FLASH_OK && gi.banks > 1;
	}
	while ((go = __atomic_load_n(&sh->ds_go, __ATOMIC_ACQUIRE)) == 0)
		demo_pause();
	if (go < 0) {
		flash_close(b.h);
		return 1;
	}
	for (u = lo; u < hi; u++) {
		demo_buyer_one(&b, u + 1);
		__atomic_store_n(&p->dp_buyers_done, u + 1 - lo, __ATOMIC_RELAXED);
	}
	flash_close(b.h);
	return 0;
}
