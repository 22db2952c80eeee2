/*
 * test_api_cart.c -- carts (flash_cart_order): several skus of one activity
 * in one order, all or nothing.  Every line's units and one limit slot are
 * taken, or none (a short line is named, every short line listed); the
 * cart takes consecutive numbers, its later ones reading as its lines; one
 * record per line, together; a cancel, an expiry and a confirm act on every
 * line; the records replay into an empty segment once, and a cart whose
 * last line never reached the WAL is not replayed; an archive frees the
 * lines' slots; and two buyer processes racing carts and plain orders over
 * the same skus never take a unit twice or leave half a cart.
 */
#include "helpers.h"
#include "flashstock_consumer.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ACT 1
#define SKUS 4
#define SKU(i) (10u + (i))

/* An activity ACT (limit @p k, max_qty 5, @p scope) with SKUS skus of
 * @p units each, on @p shards shards. */
static flash_t *setup(char *name, size_t len, uint32_t k, uint32_t scope, uint64_t units, uint32_t shards)
{
	struct flash_seg_opts o;
	flash_t *h;

	t_opts_small(&o);
	h = t_seg_new(&o, name, len);
	assert_int_equal(t_activity(h, ACT, k, 5, scope, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	for (uint32_t i = 0; i < SKUS; i++)
		assert_int_equal(flash_sku_add(h, ACT, SKU(i), units, shards), FLASH_OK);
	return h;
}

/* A cart of @p n lines: sku i + @p first, qty qty[i]. */
static struct flash_cart_req cart(uint64_t user, uint32_t n, uint32_t first, const uint32_t *qty)
{
	struct flash_cart_req r;

	memset(&r, 0, sizeof(r));
	r.activity_id = ACT;
	r.user_id = user;
	r.lines = n;
	for (uint32_t i = 0; i < n; i++) {
		r.line[i].sku_id = SKU(first + i);
		r.line[i].qty = qty[i];
	}
	return r;
}

static void avail(flash_t *h, const uint64_t *want)
{
	for (uint32_t i = 0; i < SKUS; i++)
		assert_int_equal(t_available(h, ACT, SKU(i)), want[i]);
}

static void test_a_cart_takes_every_line_and_one_limit_slot(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 2, FLASH_SCOPE_ACTIVITY, 10, 2);
	const uint32_t q[3] = { 1, 2, 3 };
	struct flash_cart_req r = cart(7, 3, 0, q);
	struct flash_cart_res res;
	struct flash_order_info oi, lines[FLASH_CART_LINES_MAX];
	uint32_t n;
	const uint64_t after[SKUS] = { 9, 8, 7, 10 };

	(void)state;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	assert_true(res.order_no != 0);
	assert_int_equal(res.limit_slot, 1);
	assert_int_equal(res.line, 0);
	avail(h, after);
	/* the cart's number reads as its line 0 */
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(oi.lines, 3);
	assert_int_equal(oi.line, 0);
	assert_int_equal(oi.sku_id, SKU(0));
	assert_int_equal(oi.qty, 1);
	assert_int_equal(oi.limit_slot, 1);
	/* the next two numbers hold its lines, and are no orders */
	for (uint32_t i = 1; i < 3; i++) {
		assert_int_equal(flash_order_get(h, res.order_no + i, &oi), FLASH_OK);
		assert_int_equal(oi.state, FLASH_ORDER_NONE);
		assert_int_equal(oi.line, i);
		assert_int_equal(oi.lines, 3);
		assert_int_equal(flash_order_lines(h, res.order_no + i, lines, 16, &n), FLASH_ENOT_FOUND);
	}
	assert_int_equal(flash_order_lines(h, res.order_no, lines, 16, &n), FLASH_OK);
	assert_int_equal(n, 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(lines[i].order_no, res.order_no);
		assert_int_equal(lines[i].line, i);
		assert_int_equal(lines[i].lines, 3);
		assert_int_equal(lines[i].sku_id, SKU(i));
		assert_int_equal(lines[i].qty, q[i]);
		assert_int_equal(lines[i].state, FLASH_ORDER_ACTIVE);
		assert_int_equal(lines[i].user_id, 7);
	}
	assert_int_equal(flash_order_lines(h, res.order_no, lines, 2, &n), FLASH_EFULL);
	assert_int_equal(n, 3);
	/* one limit slot: the user's second order gets slot 2, the third none */
	{
		struct flash_order_res o;

		assert_int_equal(t_order(h, ACT, SKU(3), 7, 1, 0, 0, &o), FLASH_OK);
		assert_int_equal(o.limit_slot, 2);
		assert_int_equal(t_order(h, ACT, SKU(3), 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	}
	/* a scan of the table reads every line once: units per sku */
	{
		uint64_t units[SKUS] = { 0 };
		uint32_t carts = 0;

		for (uint32_t i = 0; flash_order_at(h, i, &oi) != FLASH_ENOT_FOUND; i++) {
			if (oi.state != FLASH_ORDER_ACTIVE)
				continue;
			units[oi.sku_id - SKU(0)] += oi.qty;
			if (oi.order_no == res.order_no) {
				assert_int_equal(oi.lines, 3);
				carts += oi.line == 0;
			}
		}
		assert_int_equal(carts, 1);
		assert_int_equal(units[0], 1);
		assert_int_equal(units[1], 2);
		assert_int_equal(units[2], 3);
		assert_int_equal(units[3], 1);
	}
}

/* One record per line, together, the line bits set; the request id on line 0 */
static void test_a_cart_publishes_one_record_per_line_together(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 2, FLASH_SCOPE_ACTIVITY, 10, 1);
	const uint32_t q[4] = { 1, 2, 3, 4 };
	struct flash_cart_req r = cart(7, 4, 0, q);
	struct flash_cart_res res;
	struct t_recs recs = { 0 };
	uint32_t seen = 0;

	(void)state;
	r.request_id = 99;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++) {
		const struct flash_record *x = &recs.v[i].r;

		if (x->type != FLASH_REC_ORDER && x->type != FLASH_REC_CANCEL)
			continue;
		/* lines 0..3 in order, with nothing between them */
		for (uint32_t l = 0; l < 4; l++) {
			const struct flash_record *y = &recs.v[i + l].r;

			assert_true(i + l < recs.n);
			assert_int_equal(y->type, x->type);
			assert_int_equal(y->order_no, res.order_no);
			assert_int_equal(y->sku_id, SKU(l));
			assert_int_equal(y->qty, q[l]);
			assert_int_equal(y->user_id, 7);
			assert_int_equal(y->limit_slot, 1);
			assert_true(y->flags & FLASH_REC_F_CART);
			assert_int_equal(FLASH_REC_LINE(y->flags), l);
			assert_int_equal((y->flags & FLASH_REC_F_LAST) != 0, l == 3);
			if (x->type == FLASH_REC_ORDER)
				assert_int_equal(y->request_id, l == 0 ? 99 : 0);
			else
				assert_int_equal(y->flags & 1u, 1);   /* the slot came back */
		}
		seen |= x->type == FLASH_REC_ORDER ? 1u : 2u;
		i += 3;
	}
	assert_int_equal(seen, 3);
	t_recs_free(&recs);
}

/* One short line: nothing is taken, the line is named, every short line
 * listed; the token is burnt as for any judgement, the limit slot free. */
static void test_a_cart_with_a_short_line_takes_nothing(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 1, FLASH_SCOPE_ACTIVITY, 3, 2);
	const uint32_t q[4] = { 1, 4, 2, 5 };
	struct flash_cart_req r = cart(7, 4, 0, q);
	struct flash_cart_res res;
	const uint64_t full[SKUS] = { 3, 3, 3, 3 };
	uint64_t tok;

	(void)state;
	assert_int_equal(flash_token_issue(h, ACT, SKU(0), 7, 60000, &tok), FLASH_OK);
	r.token = tok;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_ESOLD_OUT);
	assert_int_equal(res.line, 1);
	assert_int_equal(res.sold_out, (1u << 1) | (1u << 3));
	assert_int_equal(res.order_no, 0);
	avail(h, full);
	assert_int_equal(flash_token_redeem(h, ACT, SKU(0), 7, tok), FLASH_EBAD_TOKEN);
	/* the limit slot (K = 1) is still free */
	{
		const uint32_t q2[2] = { 3, 3 };
		struct flash_cart_req r2 = cart(7, 2, 2, q2);
		const uint64_t after[SKUS] = { 3, 3, 0, 0 };

		assert_int_equal(flash_cart_order(h, &r2, &res), FLASH_OK);
		avail(h, after);
		assert_int_equal(flash_cart_order(h, &r2, &res), FLASH_ELIMIT);
	}
}

/* Bad carts: each refused, naming the line where it is one, nothing changed. */
static void test_bad_carts_are_refused_naming_the_line(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 2, FLASH_SCOPE_ACTIVITY, 10, 1);
	const uint32_t q[4] = { 1, 1, 1, 1 };
	const uint64_t full[SKUS] = { 10, 10, 10, 10 };
	struct flash_cart_req r;
	struct flash_cart_res res;
	struct flash_sku_info si;

	(void)state;
	r = cart(7, 0, 0, q);
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	r = cart(7, 3, 0, q);
	r.lines = FLASH_CART_LINES_MAX + 1;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	r = cart(7, 3, 0, q);
	r.line[2].sku_id = SKU(0);                    /* a sku twice */
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	assert_int_equal(res.line, 2);
	r = cart(7, 3, 0, q);
	r.line[1].qty = 0;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	assert_int_equal(res.line, 1);
	r = cart(7, 3, 0, q);
	r.line[2].qty = 6;                            /* above max_qty 5 */
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	assert_int_equal(res.line, 2);
	r = cart(7, 3, 0, q);
	r.line[1].sku_id = 99;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_ENOT_FOUND);
	assert_int_equal(res.line, 1);
	r = cart(7, 3, 0, q);
	assert_int_equal(flash_sku_get(h, ACT, SKU(2), &si), FLASH_OK);
	r.line[2].sku_version = si.version + 1;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_ESTALE);
	assert_int_equal(res.line, 2);
	r.line[2].sku_version = si.version;
	r._reserved = 1;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	r = cart(0, 3, 0, q);
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	assert_int_equal(flash_cart_order(h, NULL, &res), FLASH_EINVAL);
	avail(h, full);
	/* a limit per sku has no one slot for a cart */
	assert_int_equal(t_activity(h, 2, 1, 5, FLASH_SCOPE_SKU, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, SKU(0), 5, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, SKU(1), 5, 1), FLASH_OK);
	r = cart(7, 2, 0, q);
	r.activity_id = 2;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_EINVAL);
	assert_int_equal(t_available(h, 2, SKU(0)), 5);
	/* the valid cart still goes through, once, by its request id */
	r = cart(7, 3, 0, q);
	r.line[2].sku_version = si.version;
	r.request_id = 5;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	{
		struct flash_cart_res again;

		assert_int_equal(flash_cart_order(h, &r, &again), FLASH_EDUPLICATE);
		assert_int_equal(again.first_rc, FLASH_OK);
		assert_int_equal(again.order_no, res.order_no);
	}
	assert_int_equal(t_available(h, ACT, SKU(0)), 9);
}

/* A cancel returns every line, once; a cart reservation is confirmed or
 * expires as a whole. */
static void test_cancel_expire_and_confirm_act_on_every_line(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 3, FLASH_SCOPE_ACTIVITY, 10, 2);
	const uint32_t q[3] = { 2, 3, 4 };
	const uint64_t full[SKUS] = { 10, 10, 10, 10 }, taken[SKUS] = { 8, 7, 6, 10 };
	struct flash_cart_req r = cart(7, 3, 0, q);
	struct flash_cart_res res;
	struct flash_order_info lines[4];
	uint32_t units, n;

	(void)state;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	avail(h, taken);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_OK);
	assert_int_equal(units, 9);
	avail(h, full);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_ECANCELLED);
	avail(h, full);
	assert_int_equal(flash_order_lines(h, res.order_no, lines, 4, &n), FLASH_OK);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(lines[i].state, FLASH_ORDER_CANCELLED);
	/* a cancel of a later line's number is no cancel */
	assert_int_equal(flash_cancel(h, res.order_no + 1, &units), FLASH_ENOT_FOUND);

	/* a reservation, paid */
	r.reserve_ms = 60000;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	avail(h, taken);
	assert_int_equal(flash_order_lines(h, res.order_no, lines, 4, &n), FLASH_OK);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(lines[i].state, FLASH_ORDER_RESERVED);
	assert_int_equal(flash_confirm(h, res.order_no), FLASH_OK);
	assert_int_equal(flash_order_lines(h, res.order_no, lines, 4, &n), FLASH_OK);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(lines[i].state, FLASH_ORDER_ACTIVE);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_OK);
	avail(h, full);

	/* a reservation, unpaid: it expires whole */
	r.reserve_ms = 20;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	avail(h, taken);
	t_sleep_ms(40);
	assert_int_equal(flash_expire(h, res.order_no, &units), FLASH_OK);
	assert_int_equal(units, 9);
	avail(h, full);
	assert_int_equal(flash_confirm(h, res.order_no), FLASH_EEXPIRED);
	assert_int_equal(flash_order_lines(h, res.order_no, lines, 4, &n), FLASH_OK);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(lines[i].state, FLASH_ORDER_EXPIRED);
	/* and an expiry by scan finds a cart once */
	r.reserve_ms = 20;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	t_sleep_ms(40);
	assert_int_equal(flash_expire_due(h, 0, &n), FLASH_OK);
	assert_int_equal(n, 1);
	avail(h, full);
}

/* Replayed into an empty segment, the carts come out the same, once; a
 * cart whose last line is missing (a WAL cut inside it) is not placed. */
static void test_carts_replay_once_and_a_cut_cart_not_at_all(void **state)
{
	char name[64], name2[64], name3[64];
	flash_t *h = setup(name, sizeof name, 3, FLASH_SCOPE_ACTIVITY, 10, 2);
	flash_t *r2 = setup(name2, sizeof name2, 3, FLASH_SCOPE_ACTIVITY, 10, 2);
	flash_t *r3 = setup(name3, sizeof name3, 3, FLASH_SCOPE_ACTIVITY, 10, 2);
	const uint32_t q[3] = { 2, 3, 4 };
	struct flash_cart_req r = cart(7, 3, 0, q);
	struct flash_cart_res a, b;
	struct t_recs recs = { 0 };
	size_t last = 0;
	const uint64_t want[SKUS] = { 8, 7, 6, 10 };

	(void)state;
	assert_int_equal(flash_cart_order(h, &r, &a), FLASH_OK);
	r.user_id = 8;
	assert_int_equal(flash_cart_order(h, &r, &b), FLASH_OK);
	assert_int_equal(flash_cancel(h, b.order_no, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < recs.n; i++) {
			const struct flash_record *x = &recs.v[i].r;

			if (x->type != FLASH_REC_ORDER && x->type != FLASH_REC_CANCEL)
				continue;
			int rc = flash_replay(r2, x);
			int last_line = (x->flags & FLASH_REC_F_LAST) != 0;

			assert_int_equal(rc, pass == 0 || !last_line ? FLASH_OK : FLASH_EEXIST);
		}
	avail(r2, want);
	{
		struct flash_order_info x[3], y[3];
		uint32_t n;

		assert_int_equal(flash_order_lines(r2, a.order_no, x, 3, &n), FLASH_OK);
		assert_int_equal(flash_order_lines(h, a.order_no, y, 3, &n), FLASH_OK);
		assert_memory_equal(x, y, sizeof x);
		assert_int_equal(flash_order_lines(r2, b.order_no, x, 3, &n), FLASH_OK);
		assert_int_equal(x[2].state, FLASH_ORDER_CANCELLED);
	}
	/* the WAL cut after line 1 of the first cart */
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER) {
			last = i;
			break;
		}
	assert_int_equal(flash_replay(r3, &recs.v[last].r), FLASH_OK);
	assert_int_equal(flash_replay(r3, &recs.v[last + 1].r), FLASH_OK);
	{
		const uint64_t full[SKUS] = { 10, 10, 10, 10 };
		struct flash_order_info oi;

		avail(r3, full);
		assert_int_equal(flash_order_get(r3, a.order_no, &oi), FLASH_ENOT_FOUND);
	}
	/* its line 2 after another cart's first line: no cart of its own */
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER && recs.v[i].r.order_no == b.order_no) {
			assert_int_equal(flash_replay(r3, &recs.v[i].r), FLASH_OK);
			break;
		}
	assert_int_equal(flash_replay(r3, &recs.v[last + 2].r), FLASH_EINVAL);
	{
		const uint64_t full[SKUS] = { 10, 10, 10, 10 };

		avail(r3, full);
	}
	t_recs_free(&recs);
}

/* In a windowed segment (section 11): a cart's request id is dated and
 * kept in its bank, its records carry the banks as an order's do, and
 * they replay into another windowed segment. */
static void test_a_cart_in_a_windowed_segment(void **state)
{
	char name[64], name2[64];
	struct flash_seg_opts o;
	struct flash_reclaim_opts ro = { .req_window_s = 3600, .user_gen_s = 3600 };
	flash_t *h, *r;
	const uint32_t q[3] = { 1, 2, 1 };
	struct flash_cart_req c = cart(7, 3, 1, q);
	struct flash_cart_res res, again;
	struct t_recs recs = { 0 };
	int lines = 0;

	(void)state;
	t_opts_small(&o);
	h = t_seg_new(&o, name, sizeof name);
	r = t_seg_new(&o, name2, sizeof name2);
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_OK);
	assert_int_equal(flash_seg_reclaim_set(r, &ro), FLASH_OK);
	assert_int_equal(t_activity(h, ACT, 1, 5, FLASH_SCOPE_DAY, 0), FLASH_OK);
	for (uint32_t i = 0; i < SKUS; i++)
		assert_int_equal(flash_sku_add(h, ACT, SKU(i), 10, 2), FLASH_OK);
	c.request_id = flash_request_id_new();
	assert_int_equal(flash_cart_order(h, &c, &res), FLASH_OK);
	assert_int_equal(flash_cart_order(h, &c, &again), FLASH_EDUPLICATE);
	assert_int_equal(again.order_no, res.order_no);
	c.request_id = flash_request_id_new();
	assert_int_equal(flash_cart_order(h, &c, &again), FLASH_ELIMIT);   /* K 1 per day */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++) {
		const struct flash_record *x = &recs.v[i].r;

		if (x->type == FLASH_REC_ORDER) {
			assert_true(x->flags & 0x8000u);
			assert_true(x->flags & FLASH_REC_F_CART);
			lines++;
		}
		assert_true(flash_replay(r, x) == FLASH_OK);
	}
	assert_int_equal(lines, 3);
	{
		const uint64_t want[SKUS] = { 10, 9, 8, 9 };

		avail(h, want);
		avail(r, want);
	}
	/* the replayed request id answers the retry as the first did */
	c.request_id = recs.v[0].r.request_id;
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER && recs.v[i].r.request_id != 0)
			c.request_id = recs.v[i].r.request_id;
	assert_int_equal(flash_cart_order(r, &c, &again), FLASH_EDUPLICATE);
	assert_int_equal(again.order_no, res.order_no);
	t_recs_free(&recs);
}

/* An archive frees a cart's line slots with it. */
static void test_an_archive_frees_the_lines(void **state)
{
	char name[64];
	flash_t *h = setup(name, sizeof name, 3, FLASH_SCOPE_ACTIVITY, 10, 1);
	const uint32_t q[3] = { 1, 1, 1 };
	struct flash_cart_req r = cart(7, 3, 0, q);
	struct flash_cart_res res;
	struct flash_activity a;
	struct flash_archive_info ai;
	struct flash_order_info oi;
	struct t_recs recs = { 0 };

	(void)state;
	assert_int_equal(flash_cart_order(h, &r, &res), FLASH_OK);
	assert_int_equal(flash_activity_get(h, ACT, &a), FLASH_OK);
	a.end_ns = t_now_ns() - 1;
	assert_int_equal(flash_activity_update(h, &a, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(flash_archive(h, ACT, 0, &ai), FLASH_OK);
	assert_int_equal(ai.orders, 3);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(flash_order_get(h, res.order_no + i, &oi), FLASH_EARCHIVED);
	for (uint32_t i = 0; flash_order_at(h, i, &oi) != FLASH_ENOT_FOUND; i++)
		assert_int_equal(oi.state, FLASH_ORDER_NONE);
	t_recs_free(&recs);
}

/* Carts near the end of a handle's number chunk skip to the next chunk;
 * the table still fills: carts of 3 until it is full leave few slots. */
static void test_carts_fill_the_order_table(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	const uint32_t q[3] = { 1, 1, 1 };
	struct flash_cart_res res;
	uint64_t prev = 0;
	uint32_t placed = 0;
	int rc = FLASH_OK;

	(void)state;
	t_opts_small(&o);
	o.max_users = 4096;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, ACT, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	for (uint32_t i = 0; i < SKUS; i++)
		assert_int_equal(flash_sku_add(h, ACT, SKU(i), 100000, 1), FLASH_OK);
	for (uint64_t u = 1; u < 100000 && rc == FLASH_OK; u++) {
		struct flash_cart_req r = cart(u, 3, 0, q);

		rc = flash_cart_order(h, &r, &res);
		if (rc == FLASH_OK) {
			assert_true(res.order_no > prev);
			prev = res.order_no;
			placed++;
		}
	}
	print_message("placed %u carts, last number %llu\n", placed, (unsigned long long)prev);
	assert_int_equal(rc, FLASH_EFULL);
	/* 1024 slots: a chunk of 64 holds 21 carts of 3 and leaves one number */
	assert_true(placed >= 330);
	assert_int_equal(t_available(h, ACT, SKU(0)), 100000 - placed);
}

/* Two buyer processes place carts (reservations too) and plain orders over
 * the same skus, and cancel some.  Afterwards each sku's units are in
 * stock or in exactly one live line, and every cart is whole. */
static int racer(int i, void *arg)
{
	const char *segname = arg;
	flash_t *h;
	int rc = flash_open(segname, 0, &h);

	if (rc != FLASH_OK)
		return 10;
	for (uint32_t k = 0; k < 3000; k++) {
		uint64_t user = (uint64_t)(i + 1) << 32 | k;
		uint32_t q[3] = { 1 + k % 2, 1, 2 };

		if (k % 3 == 0) {
			struct flash_order_res o;

			rc = t_order(h, ACT, SKU(k % SKUS), user, 1, 0, 0, &o);
		} else {
			struct flash_cart_req r = cart(user, 3, k % 2, q);
			struct flash_cart_res res;

			r.reserve_ms = k % 4 == 1 ? 60000 : 0;
			rc = flash_cart_order(h, &r, &res);
			if (rc == FLASH_OK && k % 5 == 0 && flash_cancel(h, res.order_no, NULL) != FLASH_OK)
				return 11;
			if (rc == FLASH_OK && r.reserve_ms && k % 5 == 2 && flash_confirm(h, res.order_no) != FLASH_OK)
				return 12;
		}
		if (rc != FLASH_OK && rc != FLASH_ESOLD_OUT) {
			fprintf(stderr, "racer %d: op %u: %s\n", i, k, flash_strerror(rc));
			return 13;
		}
	}
	flash_close(h);
	return 0;
}

static void test_two_buyers_racing_carts_leave_no_half_cart(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	pid_t pids[2];
	int go;
	struct t_recs recs = { 0 };

	(void)state;
	t_opts_small(&o);
	o.max_orders = 65536;
	o.max_users = 16384;
	o.ring_records = 65536;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, ACT, 1, 5, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	for (uint32_t i = 0; i < SKUS; i++)
		assert_int_equal(flash_sku_add(h, ACT, SKU(i), 4000, 4), FLASH_OK);
	assert_int_equal(t_fork_start(2, racer, name, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(t_wait_all(2, pids), 0);
	{
		uint64_t held[SKUS] = { 0 };
		struct flash_order_info oi;
		uint32_t n, carts = 0;

		for (uint32_t i = 0; flash_order_at(h, i, &oi) != FLASH_ENOT_FOUND; i++) {
			if (oi.state == FLASH_ORDER_ACTIVE || oi.state == FLASH_ORDER_RESERVED)
				held[oi.sku_id - SKU(0)] += oi.qty;
			if (oi.lines > 1 && oi.line == 0) {
				struct flash_order_info l[3];

				carts++;
				assert_int_equal(flash_order_lines(h, oi.order_no, l, 3, &n), FLASH_OK);
				assert_int_equal(n, 3);
				for (uint32_t x = 0; x < 3; x++)
					assert_int_equal(l[x].state, oi.state);
			}
		}
		assert_true(carts > 100);
		for (uint32_t s = 0; s < SKUS; s++)
			assert_int_equal(held[s] + t_available(h, ACT, SKU(s)), 4000);
	}
	/* the records say the same: replayed, they give these balances */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	{
		char name2[64];
		flash_t *r = t_seg_new(&o, name2, sizeof name2);
		struct t_recs again = { 0 };

		for (size_t i = 0; i < recs.n; i++) {
			int rc = flash_replay(r, &recs.v[i].r);

			assert_true(rc == FLASH_OK || rc == FLASH_EEXIST);
		}
		for (uint32_t s = 0; s < SKUS; s++)
			assert_int_equal(t_available(r, ACT, SKU(s)), t_available(h, ACT, SKU(s)));
		t_recs_free(&again);
	}
	t_recs_free(&recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_a_cart_takes_every_line_and_one_limit_slot, t_teardown),
		cmocka_unit_test_teardown(test_a_cart_publishes_one_record_per_line_together, t_teardown),
		cmocka_unit_test_teardown(test_a_cart_with_a_short_line_takes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_bad_carts_are_refused_naming_the_line, t_teardown),
		cmocka_unit_test_teardown(test_cancel_expire_and_confirm_act_on_every_line, t_teardown),
		cmocka_unit_test_teardown(test_carts_replay_once_and_a_cut_cart_not_at_all, t_teardown),
		cmocka_unit_test_teardown(test_a_cart_in_a_windowed_segment, t_teardown),
		cmocka_unit_test_teardown(test_an_archive_frees_the_lines, t_teardown),
		cmocka_unit_test_teardown(test_carts_fill_the_order_table, t_teardown),
		cmocka_unit_test_teardown(test_two_buyers_racing_carts_leave_no_half_cart, t_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
