/*
 * soak_reclaim.c -- the soak's adapter to reclamation (contracts:
 * soak_reclaim.h): a windowed segment sized for about two days, minted
 * request ids, the daemon's generations and archiving waited for at each
 * day's end, and the fill read from the generation banks and the live
 * catalog and order table.
 */
#include "soak_reclaim.h"

#include "tool.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* a generation's least length (gen.c) */
#define SOAK_LEN_S(tab) ((tab) == FLASH_TABLE_REQUESTS ? SOAK_REQ_WINDOW_S + 60 : SOAK_DAY_S)

uint32_t soak_days_held(uint32_t days)
{
	/* today, yesterday (its request ids and per-day entries still inside
	 * their window) and the bank being cleared */
	return days < 3 ? days : 3;
}

/* capacity with slack: a quarter more and @p extra entries */
static uint32_t soak_cap(uint64_t need, uint64_t extra)
{
	uint64_t v = need + need / 4 + extra;

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

	/* one generation (a day) per bank; the FLASH_GEN_BANKS banks make the
	 * total (memory = banks x capacity) */
	o->max_requests = soak_cap(bound->requests / held, 1024);
	o->max_users = soak_cap(bound->users / held, 1024);
	o->max_orders = soak_cap(bound->orders, 1024);
	/* the catalog tight (16 spare entries), so a run adds several times
	 * what they hold and only recycling of archived entries makes room */
	o->max_activities = soak_cap(bound->activities, 16);
	o->max_skus = soak_cap(bound->skus, 16);
	o->max_shards = soak_cap(bound->shards, 16);
	o->max_tokens = soak_cap(bound->tokens, 1024);
	o->max_locks = 64;
	o->max_procs = 2u * c->procs + 8u;     /* buyers, parent, daemon, spares */
	o->ring_records = 1u << 15;            /* a day of one buyer while the daemon restarts */
	o->durability = c->durability;
}

int soak_reclaim_setup(flash_t *h)
{
	struct flash_reclaim_opts ro;

	memset(&ro, 0, sizeof ro);
	ro.req_window_s = SOAK_REQ_WINDOW_S;
	ro.user_gen_s = (uint32_t)SOAK_DAY_S;
	return flash_seg_reclaim_set(h, &ro);
}

const char *const *soak_serve_args(void)
{
	/* reclamation is on by default for a windowed segment; ended
	 * activities archived an hour after their end, once MariaDB applied
	 * them; both looked for every 100 ms (not every second), so a simulated
	 * night costs a fraction of a second */
	static const char *const args[] = { "--archive-after-s", "3600", "--reclaim-every-ms", "100",
	                                    "--archive-every-ms", "100", NULL };

	return args;
}

uint64_t soak_mint_request_id(struct soak_idgen *g)
{
	/* the window is measured on the time in the id's top 48 bits */
	g->seq++;
	return flash_request_id_new();
}

enum soak_retry_expect soak_retry_expect(uint64_t request_id, int64_t age_s)
{
	int64_t made_ms = (int64_t)(request_id >> 16);
	int64_t age_ms = tool_realtime_ns() / 1000000 - made_ms;

	(void)age_s;
	if (age_ms < (SOAK_REQ_WINDOW_S - 60) * 1000LL)
		return SOAK_RETRY_FIRST;
	if (age_ms > (SOAK_REQ_WINDOW_S + 60) * 1000LL)
		return SOAK_RETRY_EXPIRED;
	return SOAK_RETRY_EITHER;
}

int soak_retry_ok(enum soak_retry_expect e, int rc, const struct flash_order_res *res,
                  int first_rc, uint64_t first_order)
{
	/* an order for an archived activity is refused before any request id
	 * is taken (FLASH_ENOT_FOUND): nothing is remembered, and a retry gets
	 * the same answer */
	int first = (rc == FLASH_EDUPLICATE && res->first_rc == first_rc &&
	             (first_rc != FLASH_OK || res->order_no == first_order)) ||
	            (first_rc == FLASH_ENOT_FOUND && rc == FLASH_ENOT_FOUND);
	int expired = rc == FLASH_EREQ_EXPIRED;

	switch (e) {
	case SOAK_RETRY_FIRST:
		return first;
	case SOAK_RETRY_EXPIRED:
		return expired;
	default:
		return first || expired;
	}
}

int64_t soak_morning_ns(flash_t *h, int64_t morning_ns)
{
	int64_t t = morning_ns;

	for (uint32_t tab = FLASH_TABLE_REQUESTS; tab <= FLASH_TABLE_USERS; tab++) {
		struct flash_gen_info gi;
		/* gen.c: the request table's generation lasts its length plus the
		 * 60 s an id may be dated ahead; the clock file holds whole seconds:
		 * 1.5 s past the due time */
		int64_t len_s = (int64_t)SOAK_LEN_S(tab), due;

		if (flash_gen_get(h, tab, &gi) != FLASH_OK || gi.banks < 2)
			continue;
		due = gi.gen_start_ns + len_s * 1000000000LL + 1500000000LL;
		if (due > t)
			t = due;
	}
	return t;
}

int soak_ended_ok(int rc)
{
	return rc == FLASH_EENDED || rc == FLASH_ENOT_FOUND;
}

static void soak_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Is activity-table entry @p a due for archiving and not archived?  Due:
 * its window closed SOAK_ARCHIVE_AFTER_S ago (the daemon's
 * --archive-after-s) at @p now_ns. */
static int soak_act_due(const struct flash_activity *a, int64_t now_ns)
{
	return a->end_ns + SOAK_ARCHIVE_AFTER_S * 1000000000LL <= now_ns;
}

/*
 * What is left of the daemon's end-of-day work at @p morning_ns (0: none),
 * said in @p note.  Each keyed table: its current generation began at or
 * after this morning (it moved on) and the bank two generations back is
 * clear; no activity due for archiving is left in the catalog.
 */
static int soak_day_left(flash_t *h, int64_t morning_ns, int *left, char *note, size_t cap)
{
	struct flash_gen_info gi;
	struct flash_activity a;
	int rc;

	*left = 0;
	for (uint32_t t = FLASH_TABLE_REQUESTS; t <= FLASH_TABLE_USERS; t++) {
		const char *name = t == FLASH_TABLE_REQUESTS ? "requests" : "users";
		uint32_t old;

		if ((rc = flash_gen_get(h, t, &gi)) != FLASH_OK)
			return rc;
		old = (uint32_t)((gi.gen + 1) % gi.banks);
		if (gi.gen_start_ns < morning_ns) {
			*left = 1;
			snprintf(note, cap, "%s: generation %llu did not move on (wait %u, activity %u)",
			         name, (unsigned long long)gi.gen, gi.wait, gi.wait_activity);
			return FLASH_OK;
		}
		if (gi.gen >= 2 && gi.bank[old].state != FLASH_BANK_CLEAR) {
			*left = 1;
			snprintf(note, cap, "%s: bank %u (generation %llu) not cleared: state %u, %u keys, "
			         "pinned by %u", name, old, (unsigned long long)gi.bank[old].gen,
			         gi.bank[old].state, gi.bank[old].keys, gi.bank[old].pinned_by);
			return FLASH_OK;
		}
	}
	for (uint32_t i = 0;; i++) {
		rc = flash_activity_at(h, i, &a);
		if (rc == FLASH_EARCHIVED)
			continue;
		if (rc == FLASH_ENOT_FOUND)
			break;
		if (rc != FLASH_OK)
			return rc;
		if (soak_act_due(&a, morning_ns)) {
			*left = 1;
			snprintf(note, cap, "activity %u (ended %lld s before the morning) not archived",
			         a.id, (long long)((morning_ns - a.end_ns) / 1000000000LL));
			return FLASH_OK;
		}
	}
	return FLASH_OK;
}

int soak_day_end(flash_t *h, uint32_t day, uint32_t wait_ms, char *note, size_t cap)
{
	/* the clock was just set to this morning */
	int64_t morning_ns = tool_realtime_ns() - 2000000000LL;
	char why[200] = "";
	struct flash_quiet q;
	uint32_t waited = 0;
	int rc, left;

	(void)day;
	for (;;) {
		if ((rc = flash_quiet_get(h, &q)) != FLASH_OK)
			return rc;
		if (q.pending != 0 || q.in_flight != 0)
			snprintf(why, sizeof why, "%llu records not durable, %u operations in flight",
			         (unsigned long long)q.pending, q.in_flight);
		else if ((rc = soak_day_left(h, morning_ns, &left, why, sizeof why)) != FLASH_OK)
			return rc;
		else if (!left)
			break;
		if (waited >= wait_ms) {
			if (note)
				snprintf(note, cap, "%s", why);
			return FLASH_EBUSY;
		}
		soak_sleep_ms(5);
		waited += 5;
	}
	if (note)
		snprintf(note, cap, "generations moved on, banks cleared, ended activities archived");
	return FLASH_OK;
}

/*
 * The fill now: requests and users over every generation bank
 * (flash_gen_get; capacity banks x per-bank capacity), orders the
 * order-table slots held (flash_order_at), activities, skus and their
 * shards the live catalog entries (archived ones skipped), tokens live.
 */
int soak_fill(flash_t *h, struct soak_fill *out)
{
	struct flash_stats st;
	struct flash_gen_info gi;
	struct flash_order_info oi;
	struct flash_activity a;
	struct flash_sku_info si;
	int rc;

	if ((rc = flash_stats_get(h, &st)) != FLASH_OK)
		return rc;
	memset(out, 0, sizeof *out);
	for (uint32_t t = FLASH_TABLE_REQUESTS; t <= FLASH_TABLE_USERS; t++) {
		uint64_t keys = 0, cap = 0;

		if ((rc = flash_gen_get(h, t, &gi)) != FLASH_OK)
			return rc;
		for (uint32_t b = 0; b < gi.banks && b < FLASH_GEN_BANKS; b++) {
			keys += gi.bank[b].keys;
			cap += gi.bank[b].capacity;
		}
		if (t == FLASH_TABLE_REQUESTS) {
			out->requests = keys;
			out->requests_cap = cap;
			out->requests_reclaimed = gi.reclaimed;
		} else {
			out->users = keys;
			out->users_cap = cap;
			out->users_reclaimed = gi.reclaimed;
		}
	}
	for (uint32_t i = 0; i < st.orders_cap; i++) {
		if ((rc = flash_order_at(h, i, &oi)) != FLASH_OK)
			return rc;
		out->orders += oi.order_no != 0;
	}
	out->orders_cap = st.orders_cap;
	out->orders_issued = flash_orders_max(h);
	for (uint32_t i = 0;; i++) {
		rc = flash_activity_at(h, i, &a);
		if (rc == FLASH_EARCHIVED)
			continue;
		if (rc == FLASH_ENOT_FOUND)
			break;
		if (rc != FLASH_OK)
			return rc;
		out->activities++;
	}
	for (uint32_t i = 0;; i++) {
		rc = flash_sku_at(h, i, &si);
		if (rc == FLASH_EARCHIVED)
			continue;
		if (rc == FLASH_ENOT_FOUND)
			break;
		if (rc != FLASH_OK)
			return rc;
		out->skus++;
		out->shards += si.shards;
	}
	out->activities_cap = st.activities_cap;
	out->activities_hw = st.activities;
	out->skus_cap = st.skus_cap;
	out->shards_cap = st.shards_cap;
	out->tokens = st.tokens;
	out->tokens_cap = st.tokens_cap;
	out->segment_bytes = st.segment_bytes;
	return FLASH_OK;
}
