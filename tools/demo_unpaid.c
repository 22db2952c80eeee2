/*
 * demo_unpaid.c -- the demo's unpaid round (issue 22): reservations that
 * are never paid, expired by the daemon, their units sold again.
 *
 * After the main sale, while the daemon still runs, one more activity
 * (DEMO_UNPAID_ACTIVITY, one sku of --unpaid-units) is sold out entirely
 * by reservations (--pay-ms to pay).  A reservation more is refused: every
 * unit is held.  Each buyer then pays, except --unpaid-pct of them, who
 * never do.  The daemon's expirer expires theirs at the pay-by time, which
 * gives the units back; later buyers (other users, plain orders) buy until
 * sold out again and must get exactly those units.
 *
 * The audit (demo_unpaid_audit) counts from the order table and from the
 * records read back from the WAL, not from the engine's counters: every
 * reservation ended ACTIVE (paid, one CONFIRM record) or EXPIRED (one
 * EXPIRE record), none is still RESERVED, the later buyers' plain orders
 * are as many as the expiries, and the sku is sold out with nothing lost.
 */
#include "demo.h"
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNPAID_USER0 (1ull << 40)       /* reserving buyers: users from here */
#define LATER_USER0  (2ull << 40)       /* later buyers */
#define UNPAID_BATCH 64u

int demo_unpaid_load(flash_t *h, const struct demo_cfg *cfg)
{
	struct flash_activity a;
	memset(&a, 0, sizeof a);
	a.id = DEMO_UNPAID_ACTIVITY;
	a.limit_per_user = 1;
	a.max_qty = 1;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.start_ns = tool_realtime_ns() - 1000000000LL;
	a.end_ns = a.start_ns + 3600LL * 1000000000LL;
	int rc = flash_activity_add(h, &a);
	if (rc == FLASH_OK)
		rc = flash_sku_add(h, DEMO_UNPAID_ACTIVITY, 1, cfg->unpaid_units, 2);
	return rc == FLASH_OK ? TOOL_OK : tool_fail("demo: the unpaid round's activity", rc);
}

/* Does reserving buyer @p i never pay?  Exactly unpaid_pct of every 100
 * consecutive buyers, spread among them (37 is prime to 100). */
static int never_pays(const struct demo_cfg *cfg, uint64_t i)
{
	return (i * 37) % 100 < cfg->unpaid_pct;
}

/* @p call again while it answers FLASH_EBUSY (a ring full: the daemon
 * drains it), for up to 30 s. */
#define RETRY_BUSY(rc, call) do {                                                   \
		int64_t until_ = tool_monotonic_ns() + 30LL * 1000000000LL;         \
		while (((rc) = (call)) == FLASH_EBUSY && tool_monotonic_ns() < until_) \
			usleep(200);                                                \
	} while (0)

/* An acknowledged placing or confirm: sync durability may answer
 * FLASH_EFATE_UNKNOWN (done in memory, not yet durable), which the round
 * waits out with flash_durable_wait_all before it judges anything. */
static int done(int rc)
{
	return rc == FLASH_OK || rc == FLASH_EFATE_UNKNOWN;
}

/* Step 1: reserve every unit, in batches; then one more must be refused. */
static int reserve_all(flash_t *h, const struct demo_cfg *cfg, struct demo_unpaid *u)
{
	struct flash_order_req req[UNPAID_BATCH];
	struct flash_order_res res[UNPAID_BATCH];
	int rcs[UNPAID_BATCH];
	for (uint64_t i = 0; i < cfg->unpaid_units; i += UNPAID_BATCH) {
		uint32_t n = (uint32_t)(cfg->unpaid_units - i < UNPAID_BATCH ? cfg->unpaid_units - i : UNPAID_BATCH);
		memset(req, 0, sizeof req);
		for (uint32_t k = 0; k < n; k++)
			req[k] = (struct flash_order_req){ .activity_id = DEMO_UNPAID_ACTIVITY, .sku_id = 1,
			                                   .user_id = UNPAID_USER0 + i + k, .qty = 1,
			                                   .reserve_ms = cfg->pay_ms };
		(void)flash_order_many(h, req, n, res, rcs);
		for (uint32_t k = 0; k < n; k++) {
			if (rcs[k] == FLASH_EBUSY)     /* its ring was full: this one again, alone */
				RETRY_BUSY(rcs[k], flash_order(h, &req[k], &res[k]));
			if (!done(rcs[k]))
				return tool_fail("demo: unpaid round: a reservation", rcs[k]);
			u->order_no[i + k] = res[k].order_no;
			u->reserved++;
		}
	}
	struct flash_order_req more = { .activity_id = DEMO_UNPAID_ACTIVITY, .sku_id = 1,
	                                .user_id = UNPAID_USER0 + cfg->unpaid_units, .qty = 1,
	                                .reserve_ms = cfg->pay_ms };
	struct flash_stats st;
	int rc = flash_stats_get(h, &st);
	if (rc == FLASH_OK && st.expiries > 0)
		return tool_failf("demo: unpaid round: %llu reservations expired before every unit was"
		                  " reserved: placing them took longer than --pay-ms %u (raise it on a slow"
		                  " machine)", (unsigned long long)st.expiries, cfg->pay_ms);
	RETRY_BUSY(rc, flash_order(h, &more, NULL));
	if (rc != FLASH_ESOLD_OUT)
		return tool_failf("demo: unpaid round: a reservation past the stock answered %s, not"
		                  " FLASH_ESOLD_OUT: the reservations do not hold their units", flash_rcname(rc));
	u->refused_while_held = 1;
	return TOOL_OK;
}

/* Step 2: every buyer pays but the unpaid share, before the pay-by time. */
static int pay(flash_t *h, const struct demo_cfg *cfg, struct demo_unpaid *u)
{
	for (uint64_t i = 0; i < cfg->unpaid_units; i++) {
		if (never_pays(cfg, i)) {
			u->unpaid++;
			continue;
		}
		int rc;
		RETRY_BUSY(rc, flash_confirm(h, u->order_no[i]));
		if (!done(rc))
			return tool_failf("demo: unpaid round: the payment of reservation %llu: %s (pay"
			                  " window %u ms: raise --pay-ms on a slow machine)",
			                  (unsigned long long)u->order_no[i], flash_strerror(rc), cfg->pay_ms);
		u->paid++;
	}
	return TOOL_OK;
}

/* Step 3: the daemon expires the unpaid ones after their pay-by time. */
static int wait_expired(flash_t *h, const struct demo_cfg *cfg, struct demo_unpaid *u)
{
	int64_t deadline = tool_monotonic_ns() + 60LL * 1000000000LL;
	for (;;) {
		uint64_t expired = 0;
		int64_t last_pay_by = 0;
		for (uint64_t i = 0; i < cfg->unpaid_units; i++) {
			struct flash_order_info oi;
			if (flash_order_get(h, u->order_no[i], &oi) == FLASH_OK && oi.state == FLASH_ORDER_EXPIRED) {
				expired++;
				if (oi.pay_by_ns > last_pay_by)
					last_pay_by = oi.pay_by_ns;
			}
		}
		if (expired >= u->unpaid) {
			int64_t now = tool_realtime_ns();
			u->expired = expired;
			u->wait_ms = now > last_pay_by ? (uint64_t)(now - last_pay_by) / 1000000u : 0;
			return TOOL_OK;
		}
		if (tool_monotonic_ns() > deadline)
			return tool_failf("demo: unpaid round: the daemon expired %llu of %llu unpaid"
			                  " reservations within 60 s", (unsigned long long)expired,
			                  (unsigned long long)u->unpaid);
		usleep(2000);
	}
}

/* Step 4: later buyers buy what came back, until sold out. */
static int resell(flash_t *h, const struct demo_cfg *cfg, struct demo_unpaid *u)
{
	for (uint64_t j = 0;; j++) {
		struct flash_order_req r = { .activity_id = DEMO_UNPAID_ACTIVITY, .sku_id = 1,
		                             .user_id = LATER_USER0 + j, .qty = 1 };
		int rc;
		RETRY_BUSY(rc, flash_order(h, &r, NULL));
		if (rc == FLASH_ESOLD_OUT)
			return TOOL_OK;
		if (!done(rc))
			return tool_fail("demo: unpaid round: a later buyer's order", rc);
		if (++u->resold > cfg->unpaid_units)
			return tool_failf("demo: unpaid round: later buyers bought more than the sku holds");
	}
}

int demo_unpaid_run(flash_t *h, const struct demo_cfg *cfg, struct demo_unpaid *u)
{
	memset(u, 0, sizeof *u);
	if (cfg->unpaid_units == 0)
		return TOOL_OK;
	fprintf(stderr, "demo: unpaid round: %llu units reserved, %u%% of the buyers never pay ...\n",
	        (unsigned long long)cfg->unpaid_units, cfg->unpaid_pct);
	u->order_no = calloc(cfg->unpaid_units, sizeof *u->order_no);
	if (!u->order_no)
		return tool_fail("demo: unpaid round", FLASH_ENOMEM);
	/* in sync durability, no call of the round waits for its fdatasync
	 * (FLASH_EFATE_UNKNOWN: done in memory); the round waits for all of
	 * them once, at its end -- the pay window is not spent on the disk */
	(void)flash_sync_wait_set(h, 1);
	int rc = reserve_all(h, cfg, u);
	if (rc == TOOL_OK)
		rc = pay(h, cfg, u);
	if (rc == TOOL_OK)
		rc = wait_expired(h, cfg, u);
	if (rc == TOOL_OK)
		rc = resell(h, cfg, u);
	if (rc == TOOL_OK) {
		int drc = flash_durable_wait_all(h, 60000);
		if (drc != FLASH_OK)
			rc = tool_fail("demo: unpaid round: its records durable", drc);
	}
	(void)flash_sync_wait_set(h, FLASH_SYNC_WAIT_MS_DEFAULT);
	free(u->order_no);
	u->order_no = NULL;
	u->ran = rc == TOOL_OK;
	return rc;
}

/*
 * The round's audit, after the daemon stopped: the order table and the
 * records read back from the WAL (@p rings) against what the round did.
 */
void demo_unpaid_audit(flash_t *h, const struct demo_cfg *cfg, const struct demo_rings *rings,
                       const struct demo_unpaid *u, char *problem, size_t n)
{
	uint64_t active = 0, expired = 0, other = 0;
	uint64_t omax = flash_orders_max(h);
	problem[0] = '\0';
	if (!u->ran)
		return;
	for (uint64_t o = 1; o <= omax; o++) {
		struct flash_order_info oi;
		if (flash_order_get(h, o, &oi) != FLASH_OK || oi.activity_id != DEMO_UNPAID_ACTIVITY ||
		    oi.state == FLASH_ORDER_NONE)
			continue;
		if (oi.state == FLASH_ORDER_ACTIVE)
			active++;
		else if (oi.state == FLASH_ORDER_EXPIRED)
			expired++;
		else
			other++;
	}
	struct flash_sku_info si;
	int rc = flash_sku_get(h, DEMO_UNPAID_ACTIVITY, 1, &si);
	if (rc != FLASH_OK)
		snprintf(problem, n, "unpaid round: its sku: %s", flash_strerror(rc));
	else if (other)
		snprintf(problem, n, "unpaid round: %llu orders neither active nor expired", (unsigned long long)other);
	else if (expired != u->unpaid || u->resold != u->unpaid)
		snprintf(problem, n, "unpaid round: %llu never paid, %llu expired, %llu sold again",
		         (unsigned long long)u->unpaid, (unsigned long long)expired, (unsigned long long)u->resold);
	else if (active != u->paid + u->resold || si.available != 0 || si.total != cfg->unpaid_units)
		snprintf(problem, n, "unpaid round: %llu active orders (%llu paid + %llu sold again), sku"
		         " total %llu available %llu", (unsigned long long)active, (unsigned long long)u->paid,
		         (unsigned long long)u->resold, (unsigned long long)si.total,
		         (unsigned long long)si.available);
	else if (rings->u_reserve != u->reserved || rings->u_confirm != u->paid ||
	         rings->u_expire != u->unpaid || rings->u_plain != u->resold || rings->u_cancel != 0)
		snprintf(problem, n, "unpaid round: the WAL holds %llu reservations, %llu CONFIRM, %llu"
		         " EXPIRE, %llu plain orders, %llu CANCEL; the round made %llu, %llu, %llu, %llu, 0",
		         (unsigned long long)rings->u_reserve, (unsigned long long)rings->u_confirm,
		         (unsigned long long)rings->u_expire, (unsigned long long)rings->u_plain,
		         (unsigned long long)rings->u_cancel, (unsigned long long)u->reserved,
		         (unsigned long long)u->paid, (unsigned long long)u->unpaid,
		         (unsigned long long)u->resold);
}
