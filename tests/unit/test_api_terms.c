/*
 * test_api_terms.c -- versioned terms (flash_activity_update,
 * flash_sku_price_set, flash_order_req.activity_version / sku_version):
 * versions follow the clock, grow with every change and are never issued
 * twice; a change may be conditional on the version it is based on; an order
 * naming a version that is no longer current is refused FLASH_ESTALE with
 * nothing taken (stock, limit slot, token, request id); new terms are in
 * force at once; a bad change changes nothing; the records replay into an
 * empty segment with the same terms and versions, once; and buyers racing
 * a process that keeps changing the terms are judged by exactly the terms
 * of the version they named, never a mix.
 */
#include "helpers.h"
#include "flashstock_consumer.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ACT 1
#define SKU 10

static flash_t *setup_opts(const struct flash_seg_opts *o, char *name, size_t len, uint32_t k,
                          uint32_t max_qty, uint64_t units)
{
	flash_t *h = t_seg_new(o, name, len);

	assert_int_equal(t_activity(h, ACT, k, max_qty, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, ACT, SKU, units, 1), FLASH_OK);
	return h;
}

static flash_t *setup(char *name, size_t len, uint32_t k, uint32_t max_qty, uint64_t units)
{
	return setup_opts(NULL, name, len, k, max_qty, units);
}

static struct flash_activity act_get(flash_t *h, uint32_t id)
{
	struct flash_activity a;

	assert_int_equal(flash_activity_get(h, id, &a), FLASH_OK);
	return a;
}

static struct flash_sku_info sku_get(flash_t *h)
{
	struct flash_sku_info s;

	assert_int_equal(flash_sku_get(h, ACT, SKU, &s), FLASH_OK);
	return s;
}

static int order_v(flash_t *h, uint64_t user, uint32_t qty, uint64_t av, uint64_t sv, uint64_t token,
                   uint64_t request_id)
{
	struct flash_order_req r = { .activity_id = ACT, .sku_id = SKU, .user_id = user, .qty = qty,
	                             .token = token, .request_id = request_id,
	                             .activity_version = av, .sku_version = sv };
	struct flash_order_res res;

	return flash_order(h, &r, &res);
}

static void test_versions_follow_the_clock_and_grow_with_every_add(void **state)
{
	char name[64];
	int64_t t0 = t_now_ns();
	flash_t *h = setup(name, sizeof name, 1, 5, 10);
	int64_t t1 = t_now_ns();
	struct flash_activity a1, a2;
	struct flash_sku_info s1, s2;

	(void)state;
	assert_int_equal(t_activity(h, 2, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, SKU, 10, 1), FLASH_OK);
	a1 = act_get(h, ACT);
	a2 = act_get(h, 2);
	s1 = sku_get(h);
	assert_int_equal(flash_sku_get(h, 2, SKU, &s2), FLASH_OK);
	/* the microsecond of the add (or one more than the last), in the
	 * order of the adds, none twice */
	assert_true(a1.version >= (uint64_t)t0 / 1000 && a1.version <= (uint64_t)t1 / 1000 + 1);
	assert_true(s1.version > a1.version);
	assert_true(a2.version > s1.version);
	assert_true(s2.version > a2.version);
	assert_int_equal(s1.price, 0);
	assert_int_equal(a1.limit_per_user, 1);
	assert_int_equal(a1.max_qty, 5);
	/* flash_activity_at reads the same terms */
	{
		struct flash_activity at;

		assert_int_equal(flash_activity_at(h, 0, &at), FLASH_OK);
		assert_memory_equal(&at, &a1, sizeof at);
	}
	assert_int_equal(flash_activity_get(h, 99, &a1), FLASH_ENOT_FOUND);
	assert_int_equal(flash_activity_get(h, 0, &a1), FLASH_EINVAL);
	assert_int_equal(flash_activity_get(h, ACT, NULL), FLASH_EINVAL);
}

static void test_an_order_naming_current_versions_is_placed(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 5, 10);
	struct flash_activity a = act_get(h, ACT);
	struct flash_sku_info s = sku_get(h);

	(void)state;
	assert_int_equal(order_v(h, 7, 2, a.version, s.version, 0, 0), FLASH_OK);
	assert_int_equal(order_v(h, 8, 1, a.version, 0, 0, 0), FLASH_OK);
	assert_int_equal(order_v(h, 9, 1, 0, s.version, 0, 0), FLASH_OK);
	assert_int_equal(t_available(h, ACT, SKU), 6);
}

/* A stale version takes nothing: no stock, no limit slot, the token stays
 * live and the request id unrecorded, so the retry with the new version
 * and the same token and request id is placed. */
static void test_a_stale_version_takes_nothing(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 5, 10);
	struct flash_activity a = act_get(h, ACT);
	struct flash_sku_info s = sku_get(h);
	uint64_t token, v_act, v_sku;
	struct t_snap before;

	(void)state;
	a.max_qty = 3;
	assert_int_equal(flash_activity_update(h, &a, &v_act), FLASH_OK);
	assert_true(v_act > s.version);
	assert_int_equal(flash_sku_price_set(h, ACT, SKU, 1999, &v_sku), FLASH_OK);
	assert_true(v_sku > v_act);
	assert_int_equal(flash_token_issue(h, ACT, SKU, 7, 60000, &token), FLASH_OK);
	t_snap_take(h, &before);
	/* the activity's old version, then the sku's old version */
	assert_int_equal(order_v(h, 7, 1, a.version, 0, token, 555), FLASH_ESTALE);
	assert_int_equal(order_v(h, 7, 1, v_act, s.version, token, 555), FLASH_ESTALE);
	/* a version never issued is as stale */
	assert_int_equal(order_v(h, 7, 1, v_sku + 100, 0, token, 555), FLASH_ESTALE);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(order_v(h, 7, 1, v_act, v_sku, token, 555), FLASH_OK);
	assert_int_equal(t_available(h, ACT, SKU), 9);
	/* the same request again: the first outcome, not a second order */
	assert_int_equal(order_v(h, 7, 1, v_act, v_sku, 0, 555), FLASH_EDUPLICATE);
}

static void test_new_terms_are_in_force_at_once(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 5, 100);
	struct flash_activity a = act_get(h, ACT), b;
	uint64_t v;

	(void)state;
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(h, ACT, SKU, 8, 5, 0, 0, NULL), FLASH_OK);
	/* a higher limit, a lower max_qty (unconditional changes: version 0) */
	a.version = 0;
	a.limit_per_user = 3;
	a.max_qty = 2;
	assert_int_equal(flash_activity_update(h, &a, &v), FLASH_OK);
	b = act_get(h, ACT);
	assert_int_equal(b.version, v);
	assert_int_equal(b.limit_per_user, 3);
	assert_int_equal(b.max_qty, 2);
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 7, 2, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(h, ACT, SKU, 9, 3, 0, 0, NULL), FLASH_EINVAL);
	/* the window closed now: the sale ended */
	a.end_ns = t_now_ns() - 1;
	a.start_ns = a.end_ns - 1000;
	assert_int_equal(flash_activity_update(h, &a, NULL), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 10, 1, 0, 0, NULL), FLASH_EENDED);
	/* and opened again */
	a.end_ns = t_now_ns() + 3600LL * 1000000000LL;
	assert_int_equal(flash_activity_update(h, &a, NULL), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 10, 1, 0, 0, NULL), FLASH_OK);
	assert_true(act_get(h, ACT).version > v + 1);
}

static void test_a_bad_change_changes_nothing(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 2, 5, 10);
	struct flash_activity a = act_get(h, ACT), bad;
	struct t_snap before;
	uint64_t v = 0;

	(void)state;
	assert_int_equal(t_activity(h, 3, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	t_snap_take(h, &before);
	bad = a;
	bad.limit_per_user = 1;                     /* lowered */
	assert_int_equal(flash_activity_update(h, &bad, &v), FLASH_EINVAL);
	bad = a;
	bad.scope = FLASH_SCOPE_SKU;
	assert_int_equal(flash_activity_update(h, &bad, &v), FLASH_EINVAL);
	bad = a;
	bad.day_offset_s = 60;
	assert_int_equal(flash_activity_update(h, &bad, &v), FLASH_EINVAL);
	bad = a;
	bad.end_ns = bad.start_ns;                  /* flash_activity_check */
	assert_int_equal(flash_activity_update(h, &bad, &v), FLASH_EINVAL);
	bad = a;
	bad.max_qty = 0;
	assert_int_equal(flash_activity_update(h, &bad, &v), FLASH_EINVAL);
	bad = a;
	bad.id = 99;
	assert_int_equal(flash_activity_update(h, &bad, &v), FLASH_ENOT_FOUND);
	assert_int_equal(flash_activity_update(h, NULL, &v), FLASH_EINVAL);
	assert_int_equal(flash_activity_update(NULL, &a, &v), FLASH_EINVAL);
	assert_int_equal(flash_sku_price_set(h, ACT, SKU, FLASH_PRICE_MAX + 1, &v), FLASH_EINVAL);
	assert_int_equal(flash_sku_price_set(h, ACT, 0, 1, &v), FLASH_EINVAL);
	assert_int_equal(flash_sku_price_set(h, ACT, 11, 1, &v), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_price_set(h, 3, SKU, 1, &v), FLASH_ENOT_FOUND);
	assert_int_equal(v, 0);
	T_ASSERT_UNCHANGED(h, &before, 0);
	bad = act_get(h, ACT);
	assert_memory_equal(&a, &bad, sizeof a);
	/* a read-only handle changes nothing */
	{
		flash_t *ro;

		assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
		assert_int_equal(flash_activity_update(ro, &a, &v), FLASH_EREADONLY);
		assert_int_equal(flash_sku_price_set(ro, ACT, SKU, 1, &v), FLASH_EREADONLY);
		flash_close(ro);
	}
	/* the largest price is kept whole */
	assert_int_equal(flash_sku_price_set(h, ACT, SKU, FLASH_PRICE_MAX, &v), FLASH_OK);
	assert_true(sku_get(h).price == FLASH_PRICE_MAX);
}

/* A change based on a version (a->version) is made only at that version:
 * two operators who read the same terms and change different fields never
 * undo each other's change; the second one is told FLASH_ESTALE. */
static void test_a_change_based_on_an_old_version_is_refused(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, 5, 10);
	struct flash_activity read1 = act_get(h, ACT), read2 = read1, now;
	struct t_snap before;
	uint64_t v = 0;

	(void)state;
	read1.limit_per_user = 2;           /* operator 1: the limit */
	assert_int_equal(flash_activity_update(h, &read1, &v), FLASH_OK);
	t_snap_take(h, &before);
	read2.max_qty = 3;                  /* operator 2, from the same read: max_qty */
	assert_int_equal(flash_activity_update(h, &read2, NULL), FLASH_ESTALE);
	T_ASSERT_UNCHANGED(h, &before, 0);
	now = act_get(h, ACT);
	assert_int_equal(now.version, v);
	assert_int_equal(now.limit_per_user, 2);
	assert_int_equal(now.max_qty, 5);
	/* read again, changed again: both changes stand */
	now.max_qty = 3;
	assert_int_equal(flash_activity_update(h, &now, NULL), FLASH_OK);
	now = act_get(h, ACT);
	assert_int_equal(now.limit_per_user, 2);
	assert_int_equal(now.max_qty, 3);
	/* version 0: unconditional (its limit 2, as now) */
	read2.version = 0;
	read2.limit_per_user = 2;
	read2.max_qty = 4;
	assert_int_equal(flash_activity_update(h, &read2, NULL), FLASH_OK);
	assert_int_equal(act_get(h, ACT).max_qty, 4);
}

/* Each change is one record, carrying the version; replayed into an empty
 * segment the terms and versions come out the same, and a second replay
 * changes nothing.  An order placed under a larger max_qty before the
 * change replays after it. */
static void test_changes_are_records_that_replay_once(void **state)
{
	char name[64], name2[64];
	flash_t *h = setup(name, sizeof name, 1, 5, 50);
	flash_t *r = t_seg_new(NULL, name2, sizeof name2);
	struct flash_activity a = act_get(h, ACT);
	struct t_recs recs = { 0 };
	uint64_t va, vp;
	int updates = 0, prices = 0;

	(void)state;
	assert_int_equal(t_order(h, ACT, SKU, 7, 5, 0, 0, NULL), FLASH_OK);
	a.max_qty = 2;
	a.limit_per_user = 2;
	assert_int_equal(flash_activity_update(h, &a, &va), FLASH_OK);
	assert_int_equal(flash_sku_price_set(h, ACT, SKU, 4200, &vp), FLASH_OK);
	assert_int_equal(t_order(h, ACT, SKU, 7, 2, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++) {
		const struct flash_record *x = &recs.v[i].r;

		if (x->type == FLASH_REC_ACTIVITY && (x->flags & 1u)) {
			updates++;
			assert_int_equal(x->order_no, va);
			assert_int_equal(x->limit_slot, 2);
			assert_int_equal(x->biz_day & 0xff, 2);
		} else if (x->type == FLASH_REC_PRICE) {
			prices++;
			assert_int_equal(x->order_no, vp);
			assert_int_equal(x->value, 4200);
			assert_int_equal(x->activity_id, ACT);
			assert_int_equal(x->sku_id, SKU);
		} else if (x->type == FLASH_REC_ACTIVITY || x->type == FLASH_REC_SKU) {
			assert_true(x->order_no != 0);
			assert_int_equal(x->flags, 0);
		}
	}
	assert_int_equal(updates, 1);
	assert_int_equal(prices, 1);
	/* records merge in causal order: the order under the old terms (qty 5)
	 * comes before the change, the later one after it */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < recs.n; i++) {
			int rc = flash_replay(r, &recs.v[i].r);

			assert_int_equal(rc, pass == 0 || recs.v[i].r.type == FLASH_REC_RESTOCK ? FLASH_OK
			                                                                         : FLASH_EEXIST);
		}
	{
		struct flash_activity x = act_get(r, ACT), y = act_get(h, ACT);

		assert_memory_equal(&x, &y, sizeof x);
	}
	assert_int_equal(sku_get(r).price, 4200);
	assert_int_equal(sku_get(r).version, vp);
	assert_int_equal(t_available(r, ACT, SKU), 43);
	/* the replayed segment issues versions after the ones it replayed */
	assert_int_equal(flash_sku_price_set(r, ACT, SKU, 1, &va), FLASH_OK);
	assert_true(va > vp);
	t_recs_free(&recs);
}

/* A replayed change of an order placed under the old terms, in the order the
 * records can merge when the order committed after the change: the order
 * (qty above the new max_qty) still replays. */
static void test_an_order_judged_before_a_change_replays_after_it(void **state)
{
	char name[64], name2[64];
	flash_t *h = setup(name, sizeof name, 1, 5, 50);
	flash_t *r = t_seg_new(NULL, name2, sizeof name2);
	struct flash_activity a = act_get(h, ACT);
	struct t_recs recs = { 0 };
	const struct flash_record *ord = NULL, *upd = NULL;

	(void)state;
	assert_int_equal(t_order(h, ACT, SKU, 7, 5, 0, 0, NULL), FLASH_OK);
	a.max_qty = 2;
	assert_int_equal(flash_activity_update(h, &a, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++) {
		const struct flash_record *x = &recs.v[i].r;

		if (x->type == FLASH_REC_ORDER)
			ord = x;
		else if (x->type == FLASH_REC_ACTIVITY && (x->flags & 1u))
			upd = x;
		else
			assert_int_equal(flash_replay(r, x), FLASH_OK);
	}
	assert_non_null(ord);
	assert_non_null(upd);
	assert_int_equal(flash_replay(r, upd), FLASH_OK);
	assert_int_equal(flash_replay(r, ord), FLASH_OK);
	assert_int_equal(t_available(r, ACT, SKU), 45);
	t_recs_free(&recs);
}

/*
 * Two buyer processes order while the parent switches the activity between
 * two sets of terms, A (max_qty 3, end_ns odd) and B (max_qty 6, end_ns
 * even), and the sku's price between two values, as fast as it can.  Each buyer reads the terms and
 * orders 4 units naming the version it read: under A that is too many
 * (FLASH_EINVAL), under B it is placed -- or FLASH_ESTALE if the terms moved
 * on meanwhile.  A buyer judged by other terms than those of its version
 * (a torn or mixed read) would see the other answer.
 *
 * A buyer orders once per version of the activity it reads, so both sets of
 * terms are met whatever the scheduler does: free-running, two buyers once
 * placed their 20,000 orders each under B before the parent's first change
 * (a loaded machine, or one CPU: `taskset -c 0` beside two busy loops failed
 * 4 runs of 20).  The parent changes until both buyers are done.
 */
#define RACE_MS 400
#define RACE_MAX_MS 20000             /* a buyer's bound, whatever it has met */
#define RACE_PLACED_MAX 20000         /* per buyer: within the tables' room below */


static void race_buyer(const char *name, uint64_t user0, uint64_t v0, int *done, int out_fd)
{
	flash_t *h;
	uint64_t counts[4] = { 0 };   /* ok, einval, estale, bad */
	uint64_t last = v0;           /* the version last ordered under */
	int64_t t0 = t_now_ns(), until = 0;

	if (flash_open(name, 0, &h) != FLASH_OK)
		_exit(2);
	for (uint64_t i = 0; counts[0] < RACE_PLACED_MAX; i++) {
		struct flash_activity a;
		struct flash_sku_info s;
		int64_t now = t_now_ns();
		int rc;

		/* RACE_MS from the first change on, and both answers met */
		if (now - t0 > RACE_MAX_MS * 1000000LL ||
		    (until != 0 && now >= until && counts[0] > 0 && counts[1] > 0))
			break;
		if (flash_activity_get(h, ACT, &a) != FLASH_OK || flash_sku_get(h, ACT, SKU, &s) != FLASH_OK)
			_exit(3);
		if (a.version == last)
			continue;             /* these terms had their order: wait for the next */
		last = a.version;
		if (until == 0)
			until = now + RACE_MS * 1000000LL;
		if ((a.max_qty == 3) != (a.end_ns % 2 != 0)) {
			counts[3]++;          /* a torn read of the terms */
			continue;
		}
		rc = order_v(h, user0 + i, 4, a.version, s.version, 0, 0);
		if (rc == FLASH_OK && a.max_qty == 6)
			counts[0]++;
		else if (rc == FLASH_EINVAL && a.max_qty == 3)
			counts[1]++;
		else if (rc == FLASH_ESTALE)
			counts[2]++;
		else if (rc == FLASH_EBUSY)
			t_sleep_ms(1);        /* the ring is full: the consumer is behind */
		else
			counts[3]++;
	}
	if (write(out_fd, counts, sizeof counts) != (ssize_t)sizeof counts)
		_exit(4);
	flash_close(h);
	__atomic_add_fetch(done, 1, __ATOMIC_SEQ_CST);
	_exit(0);
}

static void test_buyers_racing_changes_are_judged_by_the_terms_they_named(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct flash_activity a;
	uint64_t total[4] = { 0 }, changes = 0, v0;
	int64_t until;
	int fds[2], *done;
	pid_t kids[2];
	struct t_consumer *c;
	int rc;

	(void)state;
	done = mmap(NULL, sizeof *done, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(done != MAP_FAILED);
	*done = 0;
	t_opts_small(&o);
	o.ring_records = 1u << 14;
	o.max_users = 1u << 17;
	o.max_orders = 1u << 17;
	h = setup_opts(&o, name, sizeof name, FLASH_LIMIT_MAX, 6, 1ull << 30);
	a = act_get(h, ACT);
	a.version = 0;                   /* each change unconditional */
	/* set B (max_qty 6, end_ns even) */
	a.end_ns -= a.end_ns % 2;
	assert_int_equal(flash_activity_update(h, &a, NULL), FLASH_OK);
	v0 = act_get(h, ACT).version;    /* what the buyers wait to see change */
	assert_int_equal(pipe(fds), 0);
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			close(fds[0]);
			race_buyer(name, (uint64_t)(k + 1) << 40, v0, done, fds[1]);
		}
	}
	close(fds[1]);
	c = t_consumer_start(name);      /* after the forks: a thread is not forked */
	until = t_now_ns() + (RACE_MAX_MS + 5000) * 1000000LL;
	while (__atomic_load_n(done, __ATOMIC_SEQ_CST) < 2 && t_now_ns() < until) {
		a.max_qty = a.max_qty == 6 ? 3 : 6;
		a.end_ns += 1;                  /* odd with A, even with B */
		while ((rc = flash_activity_update(h, &a, NULL)) == FLASH_EBUSY)
			t_sleep_ms(1);        /* the ring is full: the consumer is behind */
		assert_int_equal(rc, FLASH_OK);
		while ((rc = flash_sku_price_set(h, ACT, SKU, 100 + changes % 2, NULL)) == FLASH_EBUSY)
			t_sleep_ms(1);
		assert_int_equal(rc, FLASH_OK);
		changes++;
	}
	for (int k = 0; k < 2; k++) {
		uint64_t counts[4];
		int st;

		assert_int_equal(read(fds[0], counts, sizeof counts), (ssize_t)sizeof counts);
		for (int x = 0; x < 4; x++)
			total[x] += counts[x];
		assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	close(fds[0]);
	munmap(done, sizeof *done);
	t_consumer_stop(c);
	print_message("changes %llu: placed %llu, too many %llu, stale %llu, wrong %llu\n",
	              (unsigned long long)changes, (unsigned long long)total[0], (unsigned long long)total[1],
	              (unsigned long long)total[2], (unsigned long long)total[3]);
	assert_int_equal(total[3], 0);
	assert_true(changes > 10);
	assert_true(total[0] > 0 && total[1] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_versions_follow_the_clock_and_grow_with_every_add, t_teardown),
		cmocka_unit_test_teardown(test_an_order_naming_current_versions_is_placed, t_teardown),
		cmocka_unit_test_teardown(test_a_stale_version_takes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_new_terms_are_in_force_at_once, t_teardown),
		cmocka_unit_test_teardown(test_a_bad_change_changes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_a_change_based_on_an_old_version_is_refused, t_teardown),
		cmocka_unit_test_teardown(test_changes_are_records_that_replay_once, t_teardown),
		cmocka_unit_test_teardown(test_an_order_judged_before_a_change_replays_after_it, t_teardown),
		cmocka_unit_test_teardown(test_buyers_racing_changes_are_judged_by_the_terms_they_named,
		                          t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
