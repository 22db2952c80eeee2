/*
 * test_wal_fold.c -- the WAL fold (persist/storage/fold.h) with
 * reservations, record by record, and its snapshot section:
 *
 *  - a reservation's units move from available into reserved, then to
 *    sold (CONFIRM) or back to available (EXPIRE, or a cancel of it
 *    unpaid); per order, RESERVED becomes ACTIVE, EXPIRED or CANCELLED;
 *  - a record moves an order only from the state it names, as MariaDB's
 *    rows do; its units move anyway, so the comparison shows the damage;
 *  - a snapshot's fold section keeps reserved units, and one written
 *    before reservations (shorter entries) still seeds a fold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "fold.h"
#include "snapshot.h"
#include "wal_testutil.h"

static struct flash_record rec(uint16_t type, uint64_t order_no, uint64_t user, uint32_t qty,
                               int64_t value, uint16_t flags)
{
	struct flash_record r;
	memset(&r, 0, sizeof r);
	r.type = type;
	r.activity_id = 3;
	r.sku_id = 31;
	r.order_no = order_no;
	r.user_id = user;
	r.qty = qty;
	r.value = value;
	r.limit_slot = 1;
	r.flags = flags;
	r.ts_ns = 1700000000000000000 + (int64_t)order_no;
	return r;
}

#define PAY_BY 1700000900000000000LL

/* Fold @p v[0..n) from LSN 1 on. */
static fold_t *fold_all(const struct flash_record *v, size_t n)
{
	fold_t *f;
	assert_int_equal(fold_new(&f), FLASH_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fold_record(f, &v[i], i + 1), FLASH_OK);
	return f;
}

static void assert_units(fold_t *f, int64_t avail, int64_t resv, int64_t sold, int64_t total,
                         int64_t active_orders)
{
	const struct fold_sku *e = fold_sku_find(f, 3, 31);
	assert_non_null(e);
	assert_int_equal(e->available, avail);
	assert_int_equal(e->reserved, resv);
	assert_int_equal(e->sold, sold);
	assert_int_equal(e->total, total);
	assert_int_equal(e->active_orders, active_orders);
}

static uint8_t state_of(fold_t *f, uint64_t no)
{
	struct fold_order o;
	assert_int_equal(fold_order_get(f, no, &o), FLASH_OK);
	return o.state;
}

static void test_reservation_units_go_reserved_then_sold_or_back_to_available(void **state)
{
	(void)state;
	struct flash_record v[] = {
		rec(FLASH_REC_SKU, 0, 0, 1, 20, 0),
		rec(FLASH_REC_ORDER, 1, 11, 2, PAY_BY, 0),     /* paid in time */
		rec(FLASH_REC_ORDER, 2, 12, 3, PAY_BY, 0),     /* expires, quota back */
		rec(FLASH_REC_ORDER, 3, 13, 1, 0, 0),          /* a plain order */
		rec(FLASH_REC_ORDER, 4, 14, 4, PAY_BY, 0),     /* cancelled unpaid */
		rec(FLASH_REC_ORDER, 5, 15, 5, PAY_BY, 0),     /* still waiting */
		rec(FLASH_REC_CONFIRM, 1, 11, 2, PAY_BY, 0),
		rec(FLASH_REC_EXPIRE, 2, 12, 3, PAY_BY, 1),
		rec(FLASH_REC_CANCEL, 4, 14, 4, 0, 2 | 1),
		rec(FLASH_REC_CANCEL, 3, 13, 1, 0, 0),         /* the plain one, cancelled */
	};
	fold_t *f = fold_all(v, 6);
	assert_units(f, 5, 14, 1, 20, 1);
	assert_int_equal(state_of(f, 1), FLASH_ORDER_RESERVED);
	assert_int_equal(state_of(f, 3), FLASH_ORDER_ACTIVE);
	for (size_t i = 6; i < sizeof v / sizeof v[0]; i++)
		assert_int_equal(fold_record(f, &v[i], i + 1), FLASH_OK);
	assert_units(f, 13, 5, 2, 20, 1);
	assert_int_equal(state_of(f, 1), FLASH_ORDER_ACTIVE);
	assert_int_equal(state_of(f, 2), FLASH_ORDER_EXPIRED);
	assert_int_equal(state_of(f, 3), FLASH_ORDER_CANCELLED);
	assert_int_equal(state_of(f, 4), FLASH_ORDER_CANCELLED);
	assert_int_equal(state_of(f, 5), FLASH_ORDER_RESERVED);
	struct fold_order o;
	assert_int_equal(fold_order_get(f, 2, &o), FLASH_OK);
	assert_int_equal(o.cancel_lsn, 8);
	assert_int_equal(o.quota_returned, 1);
	assert_int_equal(fold_order_get(f, 1, &o), FLASH_OK);
	assert_int_equal(o.cancel_lsn, 0);
	assert_int_equal(o.lsn, 2);
	fold_free(f);
}

/* A confirm of a plain order, an expiry of a paid one and a cancel that
 * says unpaid of a paid one leave the orders as they were; their units
 * move as the records say, so the sums no longer match the orders and the
 * reconciler reports it.  A type past EXPIRE is still refused. */
static void test_order_moves_only_from_the_state_its_record_names(void **state)
{
	(void)state;
	struct flash_record v[] = {
		rec(FLASH_REC_SKU, 0, 0, 1, 10, 0),
		rec(FLASH_REC_ORDER, 1, 11, 1, 0, 0),
		rec(FLASH_REC_ORDER, 2, 12, 2, PAY_BY, 0),
		rec(FLASH_REC_CONFIRM, 2, 12, 2, PAY_BY, 0),
		rec(FLASH_REC_CONFIRM, 1, 11, 1, PAY_BY, 0),   /* a plain order */
		rec(FLASH_REC_EXPIRE, 2, 12, 2, PAY_BY, 0),    /* paid already */
		rec(FLASH_REC_CANCEL, 2, 12, 2, 0, 2),         /* says unpaid: it was paid */
	};
	fold_t *f = fold_all(v, 4);
	assert_units(f, 7, 0, 3, 10, 2);
	for (size_t i = 4; i < sizeof v / sizeof v[0]; i++)
		assert_int_equal(fold_record(f, &v[i], i + 1), FLASH_OK);
	assert_int_equal(state_of(f, 1), FLASH_ORDER_ACTIVE);
	assert_int_equal(state_of(f, 2), FLASH_ORDER_ACTIVE);
	assert_units(f, 11, -5, 4, 10, 3);   /* reserved below zero: itself a finding */
	struct flash_record bad = rec(11, 9, 1, 1, 0, 0);
	assert_int_equal(fold_record(f, &bad, 99), FLASH_EINVAL);
	fold_free(f);
}

/* A sku's price (PRICE, its version in order_no) and an activity's new
 * terms (ACTIVITY, flags 1) move no unit and make no order: the sku's
 * figures, its last LSN and the order count stay. */
static void test_price_and_new_terms_move_no_unit_and_make_no_order(void **state)
{
	(void)state;
	struct flash_record v[] = {
		rec(FLASH_REC_SKU, 0, 0, 1, 10, 0),
		rec(FLASH_REC_ORDER, 1, 11, 2, 0, 0),
		rec(FLASH_REC_PRICE, 9, 0, 0, 1999, 0),
		rec(FLASH_REC_ACTIVITY, 10, 0, 0, 5, 1),
	};
	fold_t *f = fold_all(v, 2);
	assert_units(f, 8, 0, 2, 10, 1);
	assert_int_equal(fold_record(f, &v[2], 3), FLASH_OK);
	assert_int_equal(fold_record(f, &v[3], 4), FLASH_OK);
	assert_units(f, 8, 0, 2, 10, 1);
	assert_int_equal(fold_sku_find(f, 3, 31)->last_lsn, 2);
	struct fold_order o;
	assert_int_equal(fold_order_get(f, 9, &o), FLASH_ENOT_FOUND);
	assert_int_equal(fold_order_get(f, 10, &o), FLASH_ENOT_FOUND);
	assert_int_equal(fold_orders_max(f), 1);
	fold_free(f);
}

/* Snapshot @p v at LSN 5 into @p dir, optionally as a snapshot of before
 * reservations: entries without their last member, the CRC made again. */
static void write_snapshot(const char *dir, const struct fold_sku *v, size_t n, int before)
{
	struct flash_seg_opts so;
	static unsigned char img[4096];
	char err[256], path[4200];
	memset(&so, 0, sizeof so);
	img[0] = 1;
	assert_int_equal(snap_write(dir, 5, &so, v, n, img, sizeof img, err, sizeof err), FLASH_OK);
	if (!before)
		return;
	snap_path(path, sizeof path, dir, 5);
	FILE *fp = fopen(path, "r+b");
	assert_non_null(fp);
	unsigned char *page = calloc(2, SNAP_PAGE);
	assert_non_null(page);
	assert_int_equal(fread(page, 1, 2 * SNAP_PAGE, fp), 2 * SNAP_PAGE);
	struct snap_hdr *h = (struct snap_hdr *)(void *)page;
	unsigned char *fold = page + SNAP_PAGE;
	for (size_t i = 0; i < n; i++)
		memmove(fold + i * SNAP_FOLD_ELEM_V1, fold + i * sizeof *v, SNAP_FOLD_ELEM_V1);
	memset(fold + n * SNAP_FOLD_ELEM_V1, 0, SNAP_PAGE - n * SNAP_FOLD_ELEM_V1);
	h->sh_fold_elem = SNAP_FOLD_ELEM_V1;   /* one page of fold either way: same image offset */
	uint32_t c = crc32c(0, h, offsetof(struct snap_hdr, sh_crc));
	c = crc32c(c, fold, n * SNAP_FOLD_ELEM_V1);
	h->sh_crc = crc32c(c, img, sizeof img);
	assert_int_equal(fseek(fp, 0, SEEK_SET), 0);
	assert_int_equal(fwrite(page, 1, 2 * SNAP_PAGE, fp), 2 * SNAP_PAGE);
	assert_int_equal(fclose(fp), 0);
	free(page);
}

static void test_snapshot_keeps_reserved_units_and_one_from_before_still_seeds(void **state)
{
	(void)state;
	struct fold_sku v[2] = {
		{ .activity_id = 3, .sku_id = 31, .total = 20, .available = 11, .sold = 4,
		  .active_orders = 3, .last_lsn = 5, .reserved = 5 },
		{ .activity_id = 3, .sku_id = 32, .total = 7, .available = 7, .last_lsn = 2 },
	};
	for (int before = 0; before < 2; before++) {
		char *dir = wt_mkdtemp();
		write_snapshot(dir, v, 2, before);
		fold_t *f;
		uint64_t from = 0;
		assert_int_equal(fold_new(&f), FLASH_OK);
		assert_int_equal(snap_fold_seed(dir, f, 0, &from), FLASH_OK);
		assert_int_equal(from, 6);
		const struct fold_sku *e = fold_sku_find(f, 3, 31);
		assert_non_null(e);
		assert_int_equal(e->total, 20);
		assert_int_equal(e->available, 11);
		assert_int_equal(e->sold, 4);
		assert_int_equal(e->active_orders, 3);
		assert_int_equal(e->last_lsn, 5);
		/* before reservations there were none: the short entry reads 0 */
		assert_int_equal(e->reserved, before ? 0 : 5);
		assert_non_null(fold_sku_find(f, 3, 32));
		fold_free(f);
		wt_rmdir(dir);
	}
}

/* Line @p i of a cart's operation (@p type) of @p n lines on skus 31, 32,
 * 33 (qty i + 1), written by handle slot @p slot. */
static struct flash_record cart(uint16_t type, unsigned i, unsigned n, uint64_t no, uint16_t slot,
                                uint16_t more)
{
	struct flash_record r = rec(type, no, 9, i + 1, 0, 0);
	r.sku_id = 31 + i;
	r.slot = slot;
	r.flags = (uint16_t)(FLASH_REC_F_CART | FLASH_REC_F_LINE(i) | more |
	                     (i + 1 == n ? FLASH_REC_F_LAST : 0));
	return r;
}

static int64_t sold_of(fold_t *f, uint32_t sku)
{
	const struct fold_sku *e = fold_sku_find(f, 3, sku);
	return e ? e->sold : -1;
}

/* A cart is folded once its last line is read: every line in its own sku,
 * one order (its line 0's, lines = 3); its cancel gives every line back.
 * Until the last line comes nothing of it counts; a cart whose slot goes on
 * without its last line (a torn WAL tail cut it) never counts; nor does a
 * line out of order. */
static void test_cart_counts_every_line_once_whole_and_never_when_torn(void **state)
{
	(void)state;
	struct flash_record v[16];
	size_t n = 0;
	for (uint32_t s = 31; s <= 33; s++) {
		v[n] = rec(FLASH_REC_SKU, 0, 0, 1, 10, 0);
		v[n++].sku_id = s;
	}
	v[n++] = cart(FLASH_REC_ORDER, 0, 3, 100, 1, 0);
	v[n++] = rec(FLASH_REC_ORDER, 50, 8, 1, 0, 0);         /* another handle's, between */
	v[n++] = cart(FLASH_REC_ORDER, 1, 3, 100, 1, 0);
	fold_t *f = fold_all(v, n);
	assert_int_equal(fold_cart_lines_open(f), 2);
	assert_int_equal(sold_of(f, 31), 1);                   /* the plain order alone */
	assert_int_equal(sold_of(f, 32), 0);
	struct fold_order o;
	assert_int_equal(fold_order_get(f, 100, &o), FLASH_ENOT_FOUND);
	struct flash_record last = cart(FLASH_REC_ORDER, 2, 3, 100, 1, 0);
	assert_int_equal(fold_record(f, &last, n + 1), FLASH_OK);
	assert_int_equal(fold_cart_lines_open(f), 0);
	assert_int_equal(sold_of(f, 31), 2);
	assert_int_equal(sold_of(f, 32), 2);
	assert_int_equal(sold_of(f, 33), 3);
	assert_int_equal(fold_order_get(f, 100, &o), FLASH_OK);
	assert_int_equal(o.lines, 3);
	assert_int_equal(o.sku_id, 31);
	assert_int_equal(o.qty, 1);
	assert_int_equal(o.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(fold_order_get(f, 101, &o), FLASH_ENOT_FOUND);
	for (unsigned i = 0; i < 3; i++) {
		struct flash_record c = cart(FLASH_REC_CANCEL, i, 3, 100, 2, 1);
		assert_int_equal(fold_record(f, &c, n + 2 + i), FLASH_OK);
	}
	assert_int_equal(state_of(f, 100), FLASH_ORDER_CANCELLED);
	assert_int_equal(sold_of(f, 31), 1);
	assert_int_equal(sold_of(f, 32), 0);
	assert_int_equal(sold_of(f, 33), 0);
	fold_free(f);

	/* torn: line 2 never comes, slot 1 goes on with another order */
	v[n++] = rec(FLASH_REC_ORDER, 60, 7, 1, 0, 0);
	v[n - 1].slot = 1;
	v[n++] = cart(FLASH_REC_ORDER, 2, 3, 100, 1, 0);       /* too late: out of order now */
	v[n++] = cart(FLASH_REC_ORDER, 1, 2, 200, 4, 0);       /* no line 0 */
	f = fold_all(v, n);
	assert_int_equal(fold_cart_lines_open(f), 0);
	assert_int_equal(fold_cart_lines_torn(f), 4);
	assert_int_equal(sold_of(f, 31), 2);                   /* orders 50 and 60 */
	assert_int_equal(sold_of(f, 32), 0);
	assert_int_equal(sold_of(f, 33), 0);
	assert_int_equal(fold_order_get(f, 100, &o), FLASH_ENOT_FOUND);
	fold_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reservation_units_go_reserved_then_sold_or_back_to_available),
		cmocka_unit_test(test_order_moves_only_from_the_state_its_record_names),
		cmocka_unit_test(test_price_and_new_terms_move_no_unit_and_make_no_order),
		cmocka_unit_test(test_snapshot_keeps_reserved_units_and_one_from_before_still_seeds),
		cmocka_unit_test(test_cart_counts_every_line_once_whole_and_never_when_torn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
