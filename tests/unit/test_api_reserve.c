/*
 * test_api_reserve.c -- reservations (flash_order_req.reserve_ms): a
 * reserved order holds its units and limit slot until it is confirmed
 * (ACTIVE), cancelled or expired; each of those wins once, a confirm too
 * late answers FLASH_EEXPIRED and whoever meets a due reservation settles
 * it; the records each step writes, their replay into an empty segment,
 * and three processes racing confirm, cancel and expiry over the same
 * reservations with exactly one winner each.
 */
#include "helpers.h"
#include "flashstock_consumer.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ACT 1
#define SKU 10

static flash_t *setup(char *name, size_t len, uint32_t k, uint32_t flags, uint64_t units)
{
	flash_t *h = t_seg_new(NULL, name, len);

	assert_int_equal(t_activity(h, ACT, k, 5, FLASH_SCOPE_ACTIVITY, flags), FLASH_OK);
	assert_int_equal(flash_sku_add(h, ACT, SKU, units, 1), FLASH_OK);
	return h;
}

/* Reserve @p qty for @p user, to be paid within @p ms; the order number. */
static uint64_t reserve(flash_t *h, uint64_t user, uint32_t qty, uint32_t ms)
{
	struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .user_id = user, .qty = qty,
	                             .reserve_ms = ms };
	struct flash_order_res res;

	assert_int_equal(flash_order(h, &r, &res), FLASH_OK);
	return res.order_no;
}

static uint32_t state_of(flash_t *h, uint64_t no)
{
	struct flash_order_info oi;

	assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
	return oi.state;
}

static const struct flash_record *rec_of(const struct t_recs *r, uint16_t type, uint64_t no, int *n)
{
	const struct flash_record *found = NULL;

	*n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].r.type == type && r->v[i].r.order_no == no) {
			found = &r->v[i].r;
			(*n)++;
		}
	return found;
}

static void test_a_reservation_holds_units_and_slot_until_confirmed(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10);
	struct flash_order_info oi;
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	int64_t before = t_now_ns();
	uint64_t no = reserve(h, 7, 3, 60000);
	int n;

	(void)state;
	assert_int_equal(t_available(h, ACT, SKU), 7);
	assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_RESERVED);
	assert_true(oi.pay_by_ns >= before / 1000000 * 1000000 + 60000LL * 1000000 &&
	            oi.pay_by_ns <= t_now_ns() + 60000LL * 1000000);
	assert_int_equal(oi.pay_by_ns % 1000000, 0);
	/* the limit (1) is held by the reservation */
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	/* not due: an expiry changes nothing */
	assert_int_equal(flash_expire(h, no, NULL), FLASH_ENOT_DUE);
	assert_int_equal(state_of(h, no), FLASH_ORDER_RESERVED);
	assert_int_equal(flash_confirm(h, no), FLASH_OK);
	assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(oi.pay_by_ns, 0);
	assert_int_equal(t_available(h, ACT, SKU), 7);
	/* a retried payment callback: the same answer, nothing written */
	assert_int_equal(flash_confirm(h, no), FLASH_OK);
	assert_int_equal(flash_expire(h, no, NULL), FLASH_ECONFIRMED);
	/* a plain order is ACTIVE: confirming it is answered the same */
	uint64_t plain;
	{
		struct flash_order_res res;

		assert_int_equal(t_order(h, ACT, SKU, 8, 1, 0, 0, &res), FLASH_OK);
		plain = res.order_no;
	}
	assert_int_equal(flash_confirm(h, plain), FLASH_OK);

	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	const struct flash_record *o = rec_of(&recs, FLASH_REC_ORDER, no, &n);
	assert_int_equal(n, 1);
	assert_int_equal(o->value, oi.created_ns / 1000000 * 1000000 + 60000LL * 1000000);
	const struct flash_record *c = rec_of(&recs, FLASH_REC_CONFIRM, no, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c->value, o->value);
	assert_int_equal(c->qty, 3);
	assert_int_equal(c->user_id, 7);
	assert_int_equal(c->limit_slot, 1);
	assert_int_equal(c->activity_id, ACT);
	assert_int_equal(c->sku_id, SKU);
	(void)rec_of(&recs, FLASH_REC_CONFIRM, plain, &n);
	assert_int_equal(n, 0);
	assert_int_equal(rec_of(&recs, FLASH_REC_ORDER, plain, &n)->value, 0);
	assert_int_equal(t_ledger_check(h, &recs, ACT, SKU, 1, &lg), 0);
	assert_int_equal(lg.active_orders, 2);
	assert_int_equal(lg.reserved_orders, 0);
	struct flash_stats st;
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.confirms, 1);
	assert_int_equal(st.expiries, 0);
	t_recs_free(&recs);
}

/* A reservation not paid in time: whoever meets it expires it once; its
 * units come back, and its limit slot when the activity says so. */
static void check_expiry(uint32_t flags)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, flags, 10);
	struct flash_order_info oi;
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	uint32_t units = 99;
	uint64_t a = reserve(h, 7, 3, 30), b = reserve(h, 8, 2, 30), c = reserve(h, 9, 1, 30);
	int n;

	assert_int_equal(t_available(h, ACT, SKU), 4);
	t_sleep_ms(40);
	/* the payment came too late: the confirm expires it */
	assert_int_equal(flash_confirm(h, a), FLASH_EEXPIRED);
	assert_int_equal(flash_order_get(h, a, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_EXPIRED);
	assert_true(oi.pay_by_ns > 0);
	assert_int_equal(t_available(h, ACT, SKU), 7);
	assert_int_equal(flash_confirm(h, a), FLASH_EEXPIRED);
	assert_int_equal(flash_cancel(h, a, &units), FLASH_EEXPIRED);
	assert_int_equal(units, 0);
	assert_int_equal(flash_expire(h, a, &units), FLASH_EEXPIRED);
	assert_int_equal(units, 0);
	/* the buyer cancels too late: expired, not cancelled */
	assert_int_equal(flash_cancel(h, b, &units), FLASH_EEXPIRED);
	assert_int_equal(units, 0);
	assert_int_equal(state_of(h, b), FLASH_ORDER_EXPIRED);
	/* the daemon's way */
	assert_int_equal(flash_expire(h, c, &units), FLASH_OK);
	assert_int_equal(units, 1);
	assert_int_equal(t_available(h, ACT, SKU), 10);
	/* the limit slot: back only if the activity returns quota */
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 0, NULL),
	                 flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? FLASH_OK : FLASH_ELIMIT);

	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	uint64_t nos[3] = { a, b, c };
	for (int i = 0; i < 3; i++) {
		const struct flash_record *o = rec_of(&recs, FLASH_REC_ORDER, nos[i], &n);
		const struct flash_record *e = rec_of(&recs, FLASH_REC_EXPIRE, nos[i], &n);

		assert_int_equal(n, 1);
		assert_int_equal(e->value, o->value);
		assert_int_equal(e->qty, o->qty);
		assert_int_equal(e->flags, flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? 1 : 0);
		(void)rec_of(&recs, FLASH_REC_CANCEL, nos[i], &n);
		assert_int_equal(n, 0);
	}
	assert_int_equal(t_ledger_check(h, &recs, ACT, SKU, 1, &lg), 0);
	assert_int_equal(lg.expired_orders, 3);
	assert_int_equal(lg.expired_qty, 6);
	struct flash_stats st;
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.expiries, 3);
	assert_int_equal(st.cancels, 0);
	t_recs_free(&recs);
}

static void test_an_unpaid_reservation_expires_once_and_gives_back_its_units(void **state)
{
	(void)state;
	check_expiry(0);
}

static void test_an_expiry_gives_back_the_limit_slot_when_the_activity_returns_quota(void **state)
{
	(void)state;
	check_expiry(FLASH_ACT_CANCEL_RETURNS_QUOTA);
}

static void test_a_cancelled_reservation_cannot_be_confirmed_or_expired(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 2, FLASH_ACT_CANCEL_RETURNS_QUOTA, 10);
	struct t_recs recs = { 0 };
	uint32_t units = 0;
	uint64_t no = reserve(h, 7, 2, 60000);
	int n;

	(void)state;
	assert_int_equal(flash_cancel(h, no, &units), FLASH_OK);
	assert_int_equal(units, 2);
	assert_int_equal(state_of(h, no), FLASH_ORDER_CANCELLED);
	assert_int_equal(t_available(h, ACT, SKU), 10);
	assert_int_equal(flash_confirm(h, no), FLASH_ECANCELLED);
	assert_int_equal(flash_expire(h, no, NULL), FLASH_ECANCELLED);
	assert_int_equal(flash_cancel(h, no, NULL), FLASH_ECANCELLED);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	const struct flash_record *c = rec_of(&recs, FLASH_REC_CANCEL, no, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c->flags, 1 | 2);     /* quota back; it was an unpaid reservation */
	assert_int_equal(c->value, rec_of(&recs, FLASH_REC_ORDER, no, &n)->value);
	assert_int_equal(t_ledger_check(h, &recs, ACT, SKU, 2, NULL), 0);
	t_recs_free(&recs);
}

static void test_bad_arguments_change_nothing(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 10);
	struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .user_id = 7, .qty = 1,
	                             .reserve_ms = FLASH_RESERVE_MS_MAX + 1 };
	struct flash_order_res res;
	struct t_snap before;

	(void)state;
	t_snap_take(h, &before);
	assert_int_equal(flash_order(h, &r, &res), FLASH_EINVAL);
	assert_int_equal(flash_confirm(h, 0), FLASH_EINVAL);
	assert_int_equal(flash_expire(h, 0, NULL), FLASH_EINVAL);
	assert_int_equal(flash_confirm(h, 5), FLASH_ENOT_FOUND);
	assert_int_equal(flash_expire(h, 5, NULL), FLASH_ENOT_FOUND);
	assert_int_equal(flash_confirm(NULL, 1), FLASH_EINVAL);
	assert_int_equal(flash_expire_due(NULL, 0, NULL), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	r.reserve_ms = FLASH_RESERVE_MS_MAX;
	assert_int_equal(flash_order(h, &r, &res), FLASH_OK);
	assert_int_equal(state_of(h, res.order_no), FLASH_ORDER_RESERVED);
}

static void test_expire_due_expires_exactly_the_reservations_past_their_time(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 0, 100);
	uint64_t due[5], later[3], plain[2];
	uint32_t n = 99;

	(void)state;
	for (int i = 0; i < 5; i++)
		due[i] = reserve(h, 100 + (uint64_t)i, 1, 20);
	for (int i = 0; i < 3; i++)
		later[i] = reserve(h, 200 + (uint64_t)i, 2, 60000);
	for (int i = 0; i < 2; i++) {
		struct flash_order_res res;

		assert_int_equal(t_order(h, ACT, SKU, 300 + (uint64_t)i, 1, 0, 0, &res), FLASH_OK);
		plain[i] = res.order_no;
	}
	assert_int_equal(flash_confirm(h, due[4]), FLASH_OK);     /* paid in time */
	t_sleep_ms(30);
	assert_int_equal(flash_expire_due(h, 2, &n), FLASH_OK);   /* bounded */
	assert_int_equal(n, 2);
	assert_int_equal(flash_expire_due(h, 0, &n), FLASH_OK);
	assert_int_equal(n, 2);
	assert_int_equal(flash_expire_due(h, 0, &n), FLASH_OK);
	assert_int_equal(n, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(state_of(h, due[i]), FLASH_ORDER_EXPIRED);
	assert_int_equal(state_of(h, due[4]), FLASH_ORDER_ACTIVE);
	for (int i = 0; i < 3; i++)
		assert_int_equal(state_of(h, later[i]), FLASH_ORDER_RESERVED);
	for (int i = 0; i < 2; i++)
		assert_int_equal(state_of(h, plain[i]), FLASH_ORDER_ACTIVE);
	assert_int_equal(t_available(h, ACT, SKU), 100 - 1 - 6 - 2);
}

/* A buyer whose slot is held by a reservation past its pay-by time: the
 * order settles it first (expires it), then is judged on its merits --
 * also with a token and a request id, which the first pass must not burn. */
static void check_order_meets_due(uint32_t flags)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, flags, 10);
	struct flash_order_res res;
	struct flash_stats st;
	int quota = (flags & FLASH_ACT_CANCEL_RETURNS_QUOTA) != 0;
	uint64_t due = reserve(h, 7, 2, 20), live = reserve(h, 9, 1, 60000);

	t_sleep_ms(30);
	uint64_t tok = 0;
	assert_int_equal(flash_token_issue(h, ACT, SKU, 7, 60000, &tok), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, tok, 4242, &res), quota ? FLASH_OK : FLASH_ELIMIT);
	assert_int_equal(state_of(h, due), FLASH_ORDER_EXPIRED);
	assert_int_equal(t_available(h, ACT, SKU), quota ? 8 : 9);
	/* the request's outcome is the second pass's, once */
	memset(&res, 0, sizeof res);
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 4242, &res), FLASH_EDUPLICATE);
	assert_int_equal(res.first_rc, quota ? FLASH_OK : FLASH_ELIMIT);
	/* a reservation not due is not touched: the limit holds */
	assert_int_equal(t_order(h, ACT, SKU, 9, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(state_of(h, live), FLASH_ORDER_RESERVED);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.expiries, 1);
	assert_int_equal(st.limit_hits, quota ? 1 : 2);
	struct t_recs recs = { 0 };
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, ACT, SKU, 1, NULL), 0);
	t_recs_free(&recs);
}

static void test_an_order_settles_the_due_reservation_holding_its_slot(void **state)
{
	(void)state;
	check_order_meets_due(FLASH_ACT_CANCEL_RETURNS_QUOTA);
}

static void test_an_order_settles_a_due_reservation_even_when_its_quota_stays_used(void **state)
{
	(void)state;
	check_order_meets_due(0);
}

/* In sync durability with no daemon draining, each expiry is done in
 * memory and not durable within the wait: expire_due goes on over every
 * due reservation, counts each, and says the durability is not known. */
static void test_expire_due_in_sync_durability_expires_all_when_none_is_durable_yet(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	t_opts_small(&o);
	o.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&o, name, sizeof name);
	struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .qty = 1, .reserve_ms = 20 };
	struct flash_order_res res;
	uint64_t nos[3];
	uint32_t n = 99;

	(void)state;
	assert_int_equal(flash_sync_wait_set(h, 5), FLASH_OK);
	assert_int_equal(t_activity(h, ACT, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, ACT, SKU, 10, 1), FLASH_OK);
	for (int i = 0; i < 3; i++) {
		r.user_id = 10 + (uint64_t)i;
		assert_int_equal(flash_order(h, &r, &res), FLASH_EFATE_UNKNOWN);   /* placed, in memory */
		nos[i] = res.order_no;
	}
	t_sleep_ms(30);
	assert_int_equal(flash_expire_due(h, 0, &n), FLASH_EFATE_UNKNOWN);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(state_of(h, nos[i]), FLASH_ORDER_EXPIRED);
	assert_int_equal(t_available(h, ACT, SKU), 10);
}

/* The records of every step, replayed into an empty segment, give the same
 * orders; replayed twice, nothing changes the second time. */
static void test_replay_rebuilds_every_reservation_state(void **state)
{
	char name[64], name2[64];
	flash_t *h = setup(name, sizeof name, 1, FLASH_ACT_CANCEL_RETURNS_QUOTA, 50);
	flash_t *r = t_seg_new(NULL, name2, sizeof name2);
	struct t_recs recs = { 0 };
	uint64_t nos[5];

	(void)state;
	nos[0] = reserve(h, 1, 2, 20);          /* expires */
	nos[1] = reserve(h, 2, 3, 60000);       /* confirmed */
	nos[2] = reserve(h, 3, 1, 60000);       /* cancelled unpaid */
	nos[3] = reserve(h, 4, 4, 60000);       /* stays reserved */
	nos[4] = reserve(h, 5, 1, 60000);       /* confirmed, then cancelled */
	assert_int_equal(flash_confirm(h, nos[1]), FLASH_OK);
	assert_int_equal(flash_cancel(h, nos[2], NULL), FLASH_OK);
	assert_int_equal(flash_confirm(h, nos[4]), FLASH_OK);
	assert_int_equal(flash_cancel(h, nos[4], NULL), FLASH_OK);
	t_sleep_ms(30);
	assert_int_equal(flash_expire(h, nos[0], NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < recs.n; i++) {
			int rc = flash_replay(r, &recs.v[i].r);

			if (pass == 0)
				assert_int_equal(rc, FLASH_OK);
			else if (recs.v[i].r.type != FLASH_REC_RESTOCK)
				assert_int_equal(rc, FLASH_EEXIST);
		}
	for (int i = 0; i < 5; i++) {
		struct flash_order_info a, b;

		assert_int_equal(flash_order_get(h, nos[i], &a), FLASH_OK);
		assert_int_equal(flash_order_get(r, nos[i], &b), FLASH_OK);
		assert_memory_equal(&a, &b, sizeof a);
	}
	assert_int_equal(t_available(r, ACT, SKU), t_available(h, ACT, SKU));
	assert_int_equal(t_available(r, ACT, SKU), 50 - 3 - 4);
	t_recs_free(&recs);
}

/*
 * Three processes race over the same reservations, due 50..350 ms from
 * now: one confirms each, one cancels each (both from just before its
 * pay-by time), one expires each once due.  Each reservation ends exactly once -- ACTIVE with one CONFIRM,
 * CANCELLED with one CANCEL or EXPIRED with one EXPIRE -- and the units
 * add up (t_ledger_check).
 */
#define RACE_N 300

struct race {
	char name[64];
	uint64_t nos[RACE_N];
};

/* Racer @p who: 0 confirms, 1 cancels (each from 2 ms before a
 * reservation's pay-by time: a payment and a give-up arriving just in
 * time), 2 expires (from its pay-by time on), until each reservation has
 * ended.  0, or 1 for an answer that is none of the race's. */
static int racer(int who, void *arg)
{
	struct race *x = arg;
	static char done[RACE_N];
	flash_t *h;
	int bad = 0, left = RACE_N;
	int64_t end = t_now_ns() + 10LL * 1000000000;

	if (flash_open(x->name, 0, &h) != FLASH_OK)
		return 1;
	while (left > 0 && t_now_ns() < end) {
		for (int i = 0; i < RACE_N; i++) {
			struct flash_order_info oi;

			if (done[i] || flash_order_get(h, x->nos[i], &oi) != FLASH_OK)
				continue;
			if (oi.state != FLASH_ORDER_RESERVED) {
				done[i] = 1;
				left--;
				continue;
			}
			if (t_now_ns() < oi.pay_by_ns - (who == 2 ? 0 : 2000000))
				continue;
			int rc = who == 0 ? flash_confirm(h, x->nos[i]) :
			         who == 1 ? flash_cancel(h, x->nos[i], NULL) : flash_expire(h, x->nos[i], NULL);

			bad |= rc != FLASH_OK && rc != FLASH_EEXPIRED && rc != FLASH_ECANCELLED &&
			       rc != FLASH_ECONFIRMED && rc != FLASH_ENOT_DUE;
		}
	}
	flash_close(h);
	return bad || left > 0;
}

static void test_confirm_cancel_and_expiry_racing_have_one_winner_each(void **state)
{
	struct race *x = t_shared_alloc(sizeof *x);
	struct flash_seg_opts o;
	t_opts_small(&o);
	o.max_orders = 1024;
	o.max_users = 1024;
	flash_t *h = t_seg_new(&o, x->name, sizeof x->name);
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	pid_t pids[3];
	int go;

	(void)state;
	assert_int_equal(t_activity(h, ACT, 1, 5, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, ACT, SKU, 1000, 4), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (int i = 0; i < RACE_N; i++) {
		x->nos[i] = reserve(h, 1000 + (uint64_t)i, 1, 50 + (uint32_t)(i * 7) % 300);
		if (i % 64 == 63)
			assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	}
	assert_int_equal(t_fork_start(3, racer, x, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(t_wait_all(3, pids), 0);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, ACT, SKU, 1, &lg), 0);
	assert_int_equal(lg.reserved_orders, 0);
	uint64_t ended = 0;
	for (int i = 0; i < RACE_N; i++) {
		uint32_t s = state_of(h, x->nos[i]);

		assert_true(s == FLASH_ORDER_ACTIVE || s == FLASH_ORDER_CANCELLED || s == FLASH_ORDER_EXPIRED);
		ended += s != FLASH_ORDER_ACTIVE;
	}
	assert_int_equal(lg.cancelled_orders + lg.expired_orders, ended);
	assert_int_equal(t_available(h, ACT, SKU), 1000 - (RACE_N - ended));
	print_message("%llu confirmed, %llu cancelled, %llu expired\n",
	              (unsigned long long)(RACE_N - ended), (unsigned long long)lg.cancelled_orders,
	              (unsigned long long)lg.expired_orders);
	t_recs_free(&recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_a_reservation_holds_units_and_slot_until_confirmed, t_teardown),
		cmocka_unit_test_teardown(test_an_unpaid_reservation_expires_once_and_gives_back_its_units,
		                          t_teardown),
		cmocka_unit_test_teardown(test_an_expiry_gives_back_the_limit_slot_when_the_activity_returns_quota,
		                          t_teardown),
		cmocka_unit_test_teardown(test_a_cancelled_reservation_cannot_be_confirmed_or_expired, t_teardown),
		cmocka_unit_test_teardown(test_bad_arguments_change_nothing, t_teardown),
		cmocka_unit_test_teardown(test_expire_due_expires_exactly_the_reservations_past_their_time,
		                          t_teardown),
		cmocka_unit_test_teardown(test_an_order_settles_the_due_reservation_holding_its_slot, t_teardown),
		cmocka_unit_test_teardown(test_an_order_settles_a_due_reservation_even_when_its_quota_stays_used,
		                          t_teardown),
		cmocka_unit_test_teardown(test_expire_due_in_sync_durability_expires_all_when_none_is_durable_yet,
		                          t_teardown),
		cmocka_unit_test_teardown(test_replay_rebuilds_every_reservation_state, t_teardown),
		cmocka_unit_test_teardown(test_confirm_cancel_and_expiry_racing_have_one_winner_each, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
