/*
 * soak_reclaim.c -- the soak's adapter to reclamation (contracts and what
 * each function becomes at merge: soak_reclaim.h).  Only this file changes
 * when request-id windows, limit-entry generations and archiving land.
 */
#include "soak_reclaim.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

uint32_t soak_days_held(uint32_t days)
{
	/* at merge: return 3; */
	return days;
}

/* capacity with slack: a quarter more and 1024 entries */
static uint32_t soak_cap(uint64_t need)
{
	uint64_t v = need + need / 4 + 1024;

	return v > FLASH_CAP_MAX ? FLASH_CAP_MAX : (uint32_t)v;
}

void soak_size(const struct soak_cfg *c, struct flash_seg_opts *o, struct soak_fill *bound)
{
	uint64_t held = soak_days_held(c->days);
	uint64_t a = c->orders_per_day;
	/* order numbers a day: every attempt may succeed (cancels resell), plus
	 * the numbers each handle takes 64 at a time and may leave unused: the
	 * buyers, their replacements, the parent */
	uint64_t orders_day = a + 64u * (2u * c->procs + 2u);

	flash_seg_opts_default(o);
	memset(bound, 0, sizeof *bound);
	/* one new request id per attempt, and one per used token offered again
	 * (one in 20 of the token activity's attempts: soak_buyer.c) */
	bound->requests = (a + a / 20 + 1) * held;
	bound->users = a * held;               /* at most one held slot per attempt */
	bound->orders = orders_day * held;
	bound->activities = (uint64_t)SOAK_ACTS_PER_DAY * held;
	bound->skus = bound->activities * SOAK_SKUS_PER_ACT;
	bound->shards = bound->activities * SOAK_SHARDS_PER_ACT;
	bound->tokens = a;                     /* used entries are reused: not per day */

	/* at merge, one generation (a day) per bank; the banks make the total:
	 *   o->max_requests = soak_cap(bound->requests / held);
	 *   o->max_users = soak_cap(bound->users / held);
	 */
	o->max_requests = soak_cap(bound->requests);
	o->max_users = soak_cap(bound->users);
	o->max_orders = soak_cap(bound->orders);
	o->max_activities = soak_cap(bound->activities);
	o->max_skus = soak_cap(bound->skus);
	o->max_shards = soak_cap(bound->shards);
	o->max_tokens = soak_cap(bound->tokens);
	o->max_locks = 64;
	o->max_procs = 2u * c->procs + 8u;     /* buyers, parent, daemon, spares */
	o->ring_records = 1u << 15;            /* a day of one buyer while the daemon restarts */
	o->durability = c->durability;
}

int soak_reclaim_setup(flash_t *h)
{
	/* at merge:
	 *   struct flash_reclaim_opts ro = { .req_window_s = 86400, .user_gen_s = 86400 };
	 *   return flash_seg_reclaim_set(h, &ro);
	 */
	(void)h;
	return FLASH_OK;
}

const char *const *soak_serve_args(void)
{
	/* at merge: { "--reclaim", "--archive-after-s", "3600", NULL } */
	static const char *const none[] = { NULL };

	return none;
}

uint64_t soak_mint_request_id(struct soak_idgen *g)
{
	/* at merge: return flash_request_id_new(); */
	g->seq++;
	return ((uint64_t)(g->day + 1u) << 36) | ((uint64_t)g->proc << 28) | (g->seq & 0xfffffffu);
}

enum soak_retry_expect soak_retry_expect(uint64_t request_id, int64_t age_s)
{
	/* at merge:
	 *   int64_t made_ms = (int64_t)(request_id >> 16);
	 *   int64_t age_ms = tool_realtime_ns() / 1000000 - made_ms;
	 *   if (age_ms < (86400 - 60) * 1000LL) return SOAK_RETRY_FIRST;
	 *   if (age_ms > (86400 + 60) * 1000LL) return SOAK_RETRY_EXPIRED;
	 *   return SOAK_RETRY_EITHER;
	 */
	(void)request_id;
	(void)age_s;
	return SOAK_RETRY_FIRST;
}

int soak_retry_ok(enum soak_retry_expect e, int rc, const struct flash_order_res *res,
                  int first_rc, uint64_t first_order)
{
	int first = rc == FLASH_EDUPLICATE && res->first_rc == first_rc &&
	            (first_rc != FLASH_OK || res->order_no == first_order);
	/* at merge: int expired = rc == FLASH_EREQ_EXPIRED; */
	int expired = 0;

	switch (e) {
	case SOAK_RETRY_FIRST:
		return first;
	case SOAK_RETRY_EXPIRED:
		return expired;
	default:
		return first || expired;
	}
}

static void soak_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int soak_day_end(flash_t *h, uint32_t day, uint32_t wait_ms, char *note, size_t cap)
{
	struct flash_quiet q;
	uint32_t waited = 0;
	int rc;

	(void)day;
	/* Today the daemon's end-of-day work is draining: every record durable,
	 * nothing in flight.  At merge, after this: poll flash_gen_get(h,
	 * FLASH_TABLE_REQUESTS / FLASH_TABLE_USERS) until the current
	 * generation is the new day's and the bank two back is clear, and
	 * flash_activity_at() until the activities that ended before yesterday
	 * are archived. */
	for (;;) {
		if ((rc = flash_quiet_get(h, &q)) != FLASH_OK)
			return rc;
		if (q.pending == 0 && q.in_flight == 0)
			break;
		if (waited >= wait_ms) {
			if (note)
				snprintf(note, cap, "%llu records not durable, %u operations in flight",
				         (unsigned long long)q.pending, q.in_flight);
			return FLASH_EBUSY;
		}
		soak_sleep_ms(5);
		waited += 5;
	}
	if (note)
		snprintf(note, cap, "drained (no reclamation on this branch)");
	return FLASH_OK;
}

int soak_fill(flash_t *h, struct soak_fill *out)
{
	struct flash_stats st;
	int rc;

	/* at merge: requests and users from flash_gen_get() over every bank,
	 * orders from the order-table fill of live activities (status) */
	if ((rc = flash_stats_get(h, &st)) != FLASH_OK)
		return rc;
	out->users = st.users;
	out->users_cap = st.users_cap;
	out->requests = st.requests;
	out->requests_cap = st.requests_cap;
	out->orders = st.orders_used;
	out->orders_cap = st.orders_cap;
	out->activities = st.activities;
	out->activities_cap = st.activities_cap;
	out->skus = st.skus;
	out->skus_cap = st.skus_cap;
	out->shards = st.shards;
	out->shards_cap = st.shards_cap;
	out->tokens = st.tokens;
	out->tokens_cap = st.tokens_cap;
	out->segment_bytes = st.segment_bytes;
	return FLASH_OK;
}
