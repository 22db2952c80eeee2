/*
 * test_mysql_carts.c -- carts (flash_cart_order) in MariaDB: a cart of n
 * lines is one orders row (line 0, n_lines = n, one limit slot) and n
 * order_lines rows; each line moves its own sku's units; its cancel,
 * expiry or confirm ends every line; a cart is applied all or nothing --
 * whole in one batch, kept in cart_pending across batches, dropped when a
 * torn WAL cut it.  Records are synthesized as the engine writes them
 * (api/flashstock.h section 9), against the private server of the ctest
 * fixture (tests/fixtures/mariadb.sh).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "feed.h"
#include "flashstock.h"
#include "fold.h"
#include "helpers.h"
#include "reconcile.h"
#include "flashstock_consumer.h"
#include "wal.h"
#include "wal_testutil.h"
#include "mysql_apply.h"
#include "mysql_apply_fixture.h"
#include "reconcile_sql.h"

/* ---- carts ------------------------------------------------------------------ */

#define A      1u          /* the activity: limit 1 per user */
#define USER   7u
#define CART   100u        /* the cart's number; 101, 102 hold its later lines */

static const uint32_t cart_sku[3] = { 11, 12, 13 };
static const uint32_t cart_qty[3] = { 2, 1, 3 };

/* Line @p i of an operation (@p type) on a cart of @p n lines: the line's
 * sku and qty, the cart's other members, request id on line 0 only. */
static struct lsn_record r_line(uint64_t lsn, uint16_t type, unsigned i, unsigned n,
                                uint64_t order_no, uint16_t slot, int64_t pay_by, uint16_t more)
{
	struct lsn_record x = r_order(lsn, A, cart_sku[i], order_no, USER, cart_qty[i], 1, 0);
	x.rec.type = type;
	x.rec.slot = slot;
	x.rec.value = pay_by;
	x.rec.request_id = i == 0 ? 4242 : 0;
	x.rec.ts_ns = 1700000000000000000;
	x.rec.flags = (uint16_t)(FLASH_REC_F_CART | FLASH_REC_F_LINE(i) | more |
	                         (i + 1 == n ? FLASH_REC_F_LAST : 0));
	return x;
}

/* The catalog: activity A (limit 1, per user), skus 11, 12, 13 of 10 units,
 * sku 14 of 100; LSNs 1..5. */
static size_t build_catalog(struct lsn_record *v)
{
	size_t n = 0;
	v[n++] = r_activity(1, A, 1, FLASH_SCOPE_ACTIVITY, 0);
	v[n++] = r_sku(2, A, 11, 10);
	v[n++] = r_sku(3, A, 12, 10);
	v[n++] = r_sku(4, A, 13, 10);
	v[n++] = r_sku(5, A, 14, 100);
	return n;
}

/* The cart's three ORDER lines from LSN 6, with a plain order of another
 * user (slot 2, sku 14) between line 0 and line 1: LSNs 6..9. */
static size_t build_cart(struct lsn_record *v, size_t n, int64_t pay_by)
{
	v[n++] = r_line(6, FLASH_REC_ORDER, 0, 3, CART, 1, pay_by, 0);
	struct lsn_record p = r_order(7, A, 14, 50, 8, 1, 1, 0);
	p.rec.slot = 2;
	v[n++] = p;
	v[n++] = r_line(8, FLASH_REC_ORDER, 1, 3, CART, 1, pay_by, 0);
	v[n++] = r_line(9, FLASH_REC_ORDER, 2, 3, CART, 1, pay_by, 0);
	return n;
}

static void apply_ok(mdb_t *m, const struct lsn_record *v, size_t n, struct apply_result *res)
{
	memset(res, 0, sizeof *res);
	assert_int_equal(mdb_apply(m, v, n, res), FLASH_OK);
	assert_int_equal(res->refused, 0);
}

/* "available,reserved,sold" of sku @p s. */
static void stock_of(mdb_t *m, uint32_t s, uint64_t out[3])
{
	out[0] = q_u64(m, "SELECT available FROM item_stock WHERE activity_id=%u AND sku_id=%u", A, s);
	out[1] = q_u64(m, "SELECT reserved FROM item_stock WHERE activity_id=%u AND sku_id=%u", A, s);
	out[2] = q_u64(m, "SELECT sold FROM item_stock WHERE activity_id=%u AND sku_id=%u", A, s);
}

static void assert_stock(mdb_t *m, uint32_t s, uint64_t avail, uint64_t resv, uint64_t sold)
{
	uint64_t u[3];
	stock_of(m, s, u);
	if (u[0] != avail || u[1] != resv || u[2] != sold) {
		fprintf(stderr, "sku %u: available %llu reserved %llu sold %llu, want %llu %llu %llu\n", s,
		        (unsigned long long)u[0], (unsigned long long)u[1], (unsigned long long)u[2],
		        (unsigned long long)avail, (unsigned long long)resv, (unsigned long long)sold);
		fail();
	}
}

/* Every line row of the cart in @p status, and its orders row too. */
static void assert_cart_status(mdb_t *m, const char *status)
{
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE order_no=%u AND status='%s'",
	                       CART, status), 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=%u AND status='%s'",
	                       CART, status), 3);
}

/* Nothing of the cart in MariaDB: no orders row, no line, its skus whole. */
static void assert_no_cart(mdb_t *m)
{
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE order_no BETWEEN %u AND %u",
	                       CART, CART + 2), 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines"), 0);
	for (unsigned i = 0; i < 3; i++)
		assert_stock(m, cart_sku[i], 10, 0, 0);
}

/* A cart of three lines is one orders row (line 0's sku and qty, n_lines 3,
 * the request id, one limit slot) and three order_lines rows; each line
 * takes its own sku's units; the plain order between its lines is one row
 * as before and has no line row; the user's slot is taken once, so a second
 * order of the user is refused by the limit key. */
static void test_cart_is_one_order_with_a_row_per_line_and_stock_per_sku(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_cart(v, build_catalog(v), 0);
	apply_ok(m, v, n, &res);
	assert_int_equal(res.applied, n);
	assert_int_equal(res.held + res.dropped, 0);

	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE user_id=%u", USER), 1);
	assert_int_equal(q_u64(m, "SELECT n_lines FROM orders WHERE order_no=%u", CART), 3);
	assert_int_equal(q_u64(m, "SELECT sku_id FROM orders WHERE order_no=%u", CART), 11);
	assert_int_equal(q_u64(m, "SELECT qty FROM orders WHERE order_no=%u", CART), 2);
	assert_int_equal(q_u64(m, "SELECT request_id FROM orders WHERE order_no=%u", CART), 4242);
	assert_int_equal(q_u64(m, "SELECT limit_slot FROM orders WHERE order_no=%u", CART), 1);
	assert_cart_status(m, "ACTIVE");
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(q_u64(m, "SELECT sku_id FROM order_lines WHERE order_no=%u AND line=%u",
		                       CART, i), cart_sku[i]);
		assert_int_equal(q_u64(m, "SELECT qty FROM order_lines WHERE order_no=%u AND line=%u",
		                       CART, i), cart_qty[i]);
		assert_stock(m, cart_sku[i], 10 - cart_qty[i], 0, cart_qty[i]);
	}
	assert_int_equal(q_u64(m, "SELECT n_lines FROM orders WHERE order_no=50"), 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=50"), 0);
	assert_stock(m, 14, 99, 0, 1);

	/* the slot is the cart's: another order of the user in it is refused */
	struct lsn_record again = r_order(10, A, 14, 60, USER, 1, 1, 0);
	struct conflict c[4];
	memset(&res, 0, sizeof res);
	res.conflicts = c;
	res.conflict_cap = 4;
	assert_int_equal(mdb_apply(m, &again, 1, &res), FLASH_OK);
	assert_int_equal(res.refused, 1);
	assert_int_equal(c[0].kind, CONFLICT_LIMIT);
	close_drop(m);
}

/* The cart's CANCEL (one record per line, its quota back) ends every line
 * and the order, and gives each sku its units back; its slot is free
 * again.  Applying the same batches again changes nothing. */
static void test_cart_cancel_ends_every_line_and_replays_change_nothing(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_cart(v, build_catalog(v), 0);
	for (unsigned i = 0; i < 3; i++)
		v[n++] = r_line(10 + i, FLASH_REC_CANCEL, i, 3, CART, 1, 0, 1);
	v[n++] = r_order(13, A, 14, 60, USER, 1, 1, 0);   /* the slot came back */
	apply_ok(m, v, n, &res);
	assert_cart_status(m, "CANCELLED");
	assert_int_equal(q_u64(m, "SELECT quota_returned FROM orders WHERE order_no=%u", CART), 1);
	for (unsigned i = 0; i < 3; i++)
		assert_stock(m, cart_sku[i], 10, 0, 0);
	assert_stock(m, 14, 98, 0, 2);

	uint64_t fp[6], fp2[6];
	fingerprint(m, fp);
	uint64_t lines = q_u64(m, "SELECT SUM(line * 7 + qty * 3 + (status = 'CANCELLED')) FROM order_lines");
	apply_ok(m, v, n, &res);
	assert_int_equal(res.skipped, n);
	fingerprint(m, fp2);
	assert_memory_equal(fp, fp2, sizeof fp);
	assert_int_equal(q_u64(m, "SELECT SUM(line * 7 + qty * 3 + (status = 'CANCELLED')) FROM order_lines"),
	                 lines);
	close_drop(m);
}

/* A reserved cart holds each line's units as reserved; its CONFIRM moves
 * every line's to sold, and a second reserved cart's EXPIRE gives every
 * line's back -- on the batch path and on the record-by-record path. */
static void test_reserved_cart_confirmed_or_expired_line_by_line(void **state)
{
	(void)state;
	for (int slow = 0; slow < 2; slow++) {
		mdb_t *m = open_fresh();
		struct lsn_record v[32];
		struct apply_result res;
		int64_t pay_by = 1700000900000000000;
		size_t n = build_cart(v, build_catalog(v), pay_by);
		apply_ok(m, v, n, &res);
		assert_cart_status(m, "RESERVED");
		for (unsigned i = 0; i < 3; i++)
			assert_stock(m, cart_sku[i], 10 - cart_qty[i], cart_qty[i], 0);
		n = 0;
		for (unsigned i = 0; i < 3; i++)
			v[n++] = r_line(10 + i, FLASH_REC_CONFIRM, i, 3, CART, 1, pay_by, 0);
		if (slow)       /* a refusal in the batch: it goes record by record */
			v[n++] = r_restock(13, A, 14, -1000);
		memset(&res, 0, sizeof res);
		assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
		assert_int_equal(res.slow_path, slow);
		assert_int_equal(res.refused, slow);
		assert_cart_status(m, "ACTIVE");
		for (unsigned i = 0; i < 3; i++)
			assert_stock(m, cart_sku[i], 10 - cart_qty[i], 0, cart_qty[i]);

		/* a second cart, of another user, reserved and expired */
		uint64_t lsn = 13 + (uint64_t)slow;
		n = 0;
		for (unsigned i = 0; i < 3; i++) {
			v[n] = r_line(lsn++, FLASH_REC_ORDER, i, 3, 200, 3, pay_by, 0);
			v[n++].rec.user_id = 9;
		}
		for (unsigned i = 0; i < 3; i++) {
			v[n] = r_line(lsn++, FLASH_REC_EXPIRE, i, 3, 200, 3, pay_by, 1);
			v[n++].rec.user_id = 9;
		}
		if (slow)
			v[n++] = r_restock(lsn++, A, 14, -1000);
		memset(&res, 0, sizeof res);
		assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
		assert_int_equal(res.refused, slow);
		assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=200 AND"
		                       " status='EXPIRED' AND cancel_lsn IS NOT NULL"), 3);
		assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE order_no=200 AND"
		                       " status='EXPIRED'"), 1);
		for (unsigned i = 0; i < 3; i++)
			assert_stock(m, cart_sku[i], 10 - cart_qty[i], 0, cart_qty[i]);
		close_drop(m);
	}
}

/* A batch that ends between a cart's lines applies nothing of the cart:
 * its lines wait in cart_pending (the applied LSN moves on), and the batch
 * that brings the last line applies the whole cart and empties it. */
static void test_cart_split_over_two_batches_is_applied_whole_by_the_second(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_cart(v, build_catalog(v), 0);
	apply_ok(m, v, n - 1, &res);                       /* up to line 1 */
	assert_int_equal(res.held, 2);
	assert_int_equal(res.applied_lsn, 8);
	assert_no_cart(m);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 2);
	assert_stock(m, 14, 99, 0, 1);                     /* the plain order is applied */

	mdb_close(m);                                      /* a restart between them */
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log };
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	apply_ok(m, v + n - 1, 1, &res);                    /* line 2 */
	assert_int_equal(res.applied, 3);
	assert_int_equal(res.held, 0);
	assert_cart_status(m, "ACTIVE");
	for (unsigned i = 0; i < 3; i++)
		assert_stock(m, cart_sku[i], 10 - cart_qty[i], 0, cart_qty[i]);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	apply_ok(m, v, n, &res);                           /* a replay: nothing */
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines"), 3);
	close_drop(m);
}

/* A WAL cut after line 1 of 3 (a torn tail; the cart was never
 * acknowledged): the records that follow the cut -- from the same handle
 * slot, which would have written line 2 next -- prove line 2 never comes,
 * and nothing of the cart is applied, now or later. */
static void test_wal_cut_after_line_1_of_3_applies_nothing_of_the_cart(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_cart(v, build_catalog(v), 0) - 1;  /* line 2 lost */
	struct lsn_record after = r_order(9, A, 14, 70, 9, 1, 1, 0);
	after.rec.slot = 1;                                  /* the slot goes on */
	apply_ok(m, v, n, &res);
	assert_no_cart(m);
	apply_ok(m, &after, 1, &res);
	assert_int_equal(res.dropped, 2);
	assert_int_equal(res.applied, 1);
	assert_no_cart(m);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	assert_stock(m, 14, 98, 0, 2);
	assert_non_null(strstr(g_log, "torn WAL"));

	/* in one batch, and a line out of order: the same */
	mdb_t *m2 = m;
	close_drop(m2);
	m = open_fresh();
	v[n++] = after;
	struct lsn_record odd = r_line(10, FLASH_REC_ORDER, 2, 3, 300, 4, 0, 0);
	v[n++] = odd;                                        /* line 2 without 0 and 1 */
	apply_ok(m, v, n, &res);
	assert_int_equal(res.dropped, 3);
	assert_no_cart(m);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	close_drop(m);
}

/* A torn cart whose handle slot never writes again is not kept waiting
 * forever: a group still open 2^20 LSNs after its first line is dropped
 * (a cart's lines reach the WAL together).  LSN holes allowed here, to
 * skip the records between. */
static void test_cart_open_over_2_20_lsns_is_dropped_as_torn(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	mdb_close(m);
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log, .lsn_gaps_ok = 1 };
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_catalog(v);
	v[n++] = r_line(6, FLASH_REC_ORDER, 0, 3, CART, 1, 0, 0);
	v[n++] = r_line(7, FLASH_REC_ORDER, 1, 3, CART, 1, 0, 0);
	apply_ok(m, v, n, &res);
	assert_int_equal(res.held, 2);
	struct lsn_record near = r_order(6 + (1u << 20), A, 14, 50, 8, 1, 1, 0);
	near.rec.slot = 2;                                   /* another handle */
	apply_ok(m, &near, 1, &res);
	assert_int_equal(res.held, 2);                       /* within the span: still waiting */
	struct lsn_record far = r_order(7 + (1u << 20), A, 14, 51, 9, 1, 1, 0);
	far.rec.slot = 2;
	apply_ok(m, &far, 1, &res);
	assert_int_equal(res.dropped, 2);
	assert_int_equal(res.held, 0);
	assert_no_cart(m);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	assert_stock(m, 14, 98, 0, 2);
	close_drop(m);
}

/* MariaDB refuses one line (its sku has fewer units there than the WAL
 * says): the record-by-record path refuses the whole cart, every line
 * reported, and applies the rest of the batch. */
static void test_one_line_refused_refuses_the_whole_cart(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_catalog(v);
	apply_ok(m, v, n, &res);
	assert_int_equal(q_exec(m, "UPDATE item_stock SET available = 1, total = 1 WHERE sku_id = 13"), 0);
	n = build_cart(v, 0, 0);
	struct conflict c[8];
	memset(&res, 0, sizeof res);
	res.conflicts = c;
	res.conflict_cap = 8;
	assert_int_equal(mdb_apply(m, v, n, &res), FLASH_OK);
	assert_int_equal(res.slow_path, 1);
	assert_int_equal(res.refused, 3);
	assert_int_equal(res.applied, 1);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(c[i].order_no, CART);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE order_no=%u", CART), 0);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines"), 0);
	assert_stock(m, 11, 10, 0, 0);
	assert_stock(m, 12, 10, 0, 0);
	assert_stock(m, 13, 1, 0, 0);
	assert_stock(m, 14, 99, 0, 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM apply_conflicts WHERE order_no=%u", CART), 3);
	close_drop(m);
}

/* A database from before carts: orders gets n_lines (1 for every old
 * row), order_lines and cart_pending appear, at the next open. */
static void test_database_from_before_carts_is_migrated(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_catalog(v);
	v[n++] = r_order(6, A, 14, 50, 8, 1, 1, 0);
	apply_ok(m, v, n, &res);
	assert_int_equal(q_exec(m, "ALTER TABLE orders DROP COLUMN n_lines"), 0);
	assert_int_equal(q_exec(m, "DROP TABLE order_lines, cart_pending"), 0);
	mdb_close(m);
	char url[512];
	url_for(url, sizeof url, g_db);
	struct mdb_opts o = { .url = url, .log = cap_log };
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	assert_int_equal(q_u64(m, "SELECT n_lines FROM orders WHERE order_no=50"), 1);
	for (unsigned i = 0; i < 3; i++)
		v[i] = r_line(7 + i, FLASH_REC_ORDER, i, 3, CART, 1, 0, 0);
	apply_ok(m, v, 3, &res);
	assert_cart_status(m, "ACTIVE");
	assert_int_equal(q_u64(m, "SELECT n_lines FROM orders WHERE order_no=%u", CART), 3);
	close_drop(m);
}

/* A feed refill from MariaDB gives back every line's record of a cart, at
 * the line's LSN, with its sku, qty and cart flags (line, last), the
 * request id on line 0 only -- for the ORDER lines of a reserved cart, its
 * CONFIRM lines and, for a second cart, its CANCEL lines of an unpaid
 * reservation; a plain order's records stay as they were. */
static void test_feed_refill_gives_back_every_line_of_a_cart_with_its_flags(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[32];
	int64_t pay_by = 1700000900000000000;
	size_t n = build_cart(v, build_catalog(v), pay_by);
	uint64_t lsn = 10;
	for (unsigned i = 0; i < 3; i++)
		v[n++] = r_line(lsn++, FLASH_REC_CONFIRM, i, 3, CART, 1, pay_by, 0);
	for (unsigned i = 0; i < 2; i++) {
		v[n] = r_line(lsn++, FLASH_REC_ORDER, i, 2, 200, 3, pay_by, 0);
		v[n++].rec.user_id = 9;
	}
	for (unsigned i = 0; i < 2; i++) {
		v[n] = r_line(lsn++, FLASH_REC_CANCEL, i, 2, 200, 3, 0, 1 | 2);
		v[n++].rec.user_id = 9;
	}
	struct apply_result res;
	apply_ok(m, v, n, &res);
	char url[512];
	url_for(url, sizeof url, g_db);
	feed_refill_t *r;
	assert_int_equal(feed_refill_open(url, "wal", &r), FLASH_OK);
	struct flash_feed_rec *got = NULL;
	size_t k = 0;
	uint64_t applied = 0;
	assert_int_equal(feed_refill_fetch(r, 6, v[n - 1].lsn, &got, &k, &applied), FLASH_OK);
	assert_int_equal(k, n - 5);                       /* every LSN from 6 a record */
	for (size_t i = 0; i < k; i++) {
		const struct flash_record *x = &got[i].fr_rec, *w = &v[i + 5].rec;
		assert_int_equal(got[i].fr_lsn, v[i + 5].lsn);
		assert_int_equal(x->type, w->type);
		assert_int_equal(x->order_no, w->order_no);
		assert_int_equal(x->sku_id, w->sku_id);
		assert_int_equal(x->qty, w->qty);
		assert_int_equal(x->user_id, w->user_id);
		assert_int_equal(x->flags, w->flags);
		if (w->type == FLASH_REC_ORDER)
			assert_int_equal(x->request_id, w->request_id);
	}
	free(got);
	feed_refill_close(r);
	close_drop(m);
}

/* MariaDB's per-sku figures for the reconciler count every line of a
 * cart in its own sku (units and orders), its whole-database active units
 * too, and its cart as one order. */
static void test_reconcile_sums_count_every_line_in_its_sku(void **state)
{
	(void)state;
	mdb_t *m = open_fresh();
	struct lsn_record v[16];
	struct apply_result res;
	size_t n = build_cart(v, build_catalog(v), 0);
	apply_ok(m, v, n, &res);
	struct rsql_sku sk;
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(rsql_sku_get(m, A, cart_sku[i], &sk), FLASH_OK);
		assert_int_equal(sk.active_qty, cart_qty[i]);
		assert_int_equal(sk.active_orders, 1);
		assert_int_equal(sk.sold, cart_qty[i]);
	}
	struct rsql_sku *all;
	size_t na;
	assert_int_equal(rsql_skus(m, &all, &na), FLASH_OK);
	assert_int_equal(na, 4);
	for (size_t i = 0; i < na; i++)
		assert_int_equal(all[i].active_qty, all[i].sold);
	free(all);
	struct rsql_totals t;
	assert_int_equal(rsql_totals_get(m, &t), FLASH_OK);
	assert_int_equal(t.orders, 2);
	assert_int_equal(t.active_orders, 2);
	assert_int_equal(t.active_qty, 2 + 1 + 3 + 1);
	close_drop(m);
}

/* ---- with the engine ------------------------------------------------------ */

/* The records drained so far, each given the next LSN, folded and applied
 * (in two batches cut at @p cut of them: 0, one). */
static void e2e_apply(flash_t *h, struct t_recs *recs, size_t *done, uint64_t *lsn, fold_t *f,
                      mdb_t *m, size_t cut)
{
	assert_int_equal(t_recs_drain(h, recs), FLASH_OK);
	size_t n = recs->n - *done;
	struct lsn_record *v = calloc(n ? n : 1, sizeof *v);
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		v[i].lsn = ++*lsn;
		v[i].rec = recs->v[*done + i].r;
		assert_int_equal(fold_record(f, &v[i].rec, v[i].lsn), FLASH_OK);
	}
	struct apply_result res;
	size_t a = cut && cut < n ? cut : n;
	apply_ok(m, v, a, &res);
	if (a < n)
		apply_ok(m, v + a, n - a, &res);
	*done = recs->n;
	free(v);
}

static void e2e_agree(flash_t *h, mdb_t *m, fold_t *f)
{
	struct reconcile_report rep;
	memset(&rep, 0, sizeof rep);
	assert_int_equal(reconcile_compare(h, m, f, RECONCILE_ORDERS | RECONCILE_WAL_ORDERS, &rep),
	                 FLASH_OK);
	if (rep.found)
		reconcile_print(&rep, stderr, 0);
	assert_int_equal(rep.found, 0);
	assert_int_equal(rep.witnesses, FLASH_W_SEGMENT | FLASH_W_WAL | FLASH_W_MYSQL);
	reconcile_report_free(&rep);
}

/* Carts placed by the engine (flash_cart_order), one reserved, with a plain
 * order between them, drained, folded and applied in batches that end in
 * the middle of a cart; then the first cancelled and the reserved one
 * confirmed: MariaDB has one orders row per cart and a row per line, and
 * the segment, the WAL's fold and MariaDB agree sku by sku and order by
 * order (reconcile_compare, every witness). */
static void test_engine_carts_reach_mariadb_and_every_witness_agrees(void **state)
{
	(void)state;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	assert_int_equal(t_activity(h, A, 1, 5, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	mdb_t *m = open_fresh();
	fold_t *f;
	assert_int_equal(fold_new(&f), FLASH_OK);
	struct t_recs recs = { 0 };
	size_t done = 0;
	uint64_t lsn = 0;
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(flash_sku_add(h, A, cart_sku[i], 10, 2), FLASH_OK);
	e2e_apply(h, &recs, &done, &lsn, f, m, 0);

	struct flash_cart_req c = { .activity_id = A, .lines = 3, .user_id = USER, .request_id = 4242 };
	for (unsigned i = 0; i < 3; i++) {
		c.line[i].sku_id = cart_sku[i];
		c.line[i].qty = cart_qty[i];
	}
	struct flash_cart_res r1, r2;
	assert_int_equal(flash_cart_order(h, &c, &r1), FLASH_OK);
	assert_int_equal(t_order(h, A, 11, 8, 1, 0, 0, NULL), FLASH_OK);
	c.user_id = 9;
	c.lines = 2;
	c.request_id = 0;
	c.reserve_ms = 60000;
	assert_int_equal(flash_cart_order(h, &c, &r2), FLASH_OK);
	e2e_apply(h, &recs, &done, &lsn, f, m, 2);          /* the first cart cut after line 1 */
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 3);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines"), 5);
	assert_int_equal(q_u64(m, "SELECT n_lines FROM orders WHERE order_no=%llu",
	                       (unsigned long long)r1.order_no), 3);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=%llu AND"
	                       " status='RESERVED'", (unsigned long long)r2.order_no), 2);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	e2e_agree(h, m, f);

	assert_int_equal(flash_cancel(h, r1.order_no, NULL), FLASH_OK);
	assert_int_equal(flash_confirm(h, r2.order_no), FLASH_OK);
	e2e_apply(h, &recs, &done, &lsn, f, m, 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=%llu AND"
	                       " status='CANCELLED' AND cancel_lsn IS NOT NULL",
	                       (unsigned long long)r1.order_no), 3);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=%llu AND"
	                       " status='ACTIVE' AND confirm_lsn IS NOT NULL",
	                       (unsigned long long)r2.order_no), 2);
	e2e_agree(h, m, f);
	/* every line's units in its own sku, in MariaDB as in the segment */
	for (unsigned i = 0; i < 3; i++) {
		uint64_t u[3];
		stock_of(m, cart_sku[i], u);
		assert_int_equal(u[0], t_available(h, A, cart_sku[i]));
	}
	/* a cart row that lost lines is found, order by order, against both */
	char sql[128];
	snprintf(sql, sizeof sql, "UPDATE orders SET n_lines = 2 WHERE order_no = %llu",
	         (unsigned long long)r1.order_no);
	assert_int_equal(q_exec(m, sql), 0);
	struct reconcile_report rep;
	memset(&rep, 0, sizeof rep);
	assert_int_equal(reconcile_compare(h, m, f, RECONCILE_ORDERS | RECONCILE_WAL_ORDERS, &rep),
	                 FLASH_OK);
	assert_int_equal(rep.found, 2);
	for (size_t i = 0; i < rep.n; i++) {
		assert_int_equal(rep.diffs[i].kind, DIFF_ORDER);
		assert_int_equal(rep.diffs[i].order_no, r1.order_no);
		assert_int_equal(rep.diffs[i].sql, 2);
	}
	reconcile_report_free(&rep);
	t_recs_free(&recs);
	fold_free(f);
	close_drop(m);
}

static void wal_put(wal_t *w, const struct flash_record *r, uint64_t *seq)
{
	uint64_t lsn;
	assert_int_equal(wal_append_record(w, r, ++*seq, &lsn), FLASH_OK);
}

/* A WAL torn after line 1 of a 3-line cart of the engine's, then a segment
 * rebuilt from it (flash_replay: the cart not placed) that takes a plain
 * order and a second cart -- whose number may be the torn one's again --
 * into the same WAL.  MariaDB, caught up from the WAL files, has nothing of
 * the torn cart and all of the second; the rebuilt segment, the WAL's fold
 * and MariaDB agree; the feed gives every line with its flags. */
static void test_wal_torn_inside_an_engine_cart_applies_nothing_of_it_end_to_end(void **state)
{
	(void)state;
	char n1[64], n2[64];
	flash_t *h1 = t_seg_new(NULL, n1, sizeof n1), *h2 = t_seg_new(NULL, n2, sizeof n2);
	struct t_recs r1 = { 0 }, r2 = { 0 };
	assert_int_equal(t_activity(h1, A, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(flash_sku_add(h1, A, cart_sku[i], 10, 1), FLASH_OK);
	struct flash_cart_req c = { .activity_id = A, .lines = 3, .user_id = USER };
	for (unsigned i = 0; i < 3; i++) {
		c.line[i].sku_id = cart_sku[i];
		c.line[i].qty = cart_qty[i];
	}
	struct flash_cart_res torn, whole;
	assert_int_equal(flash_cart_order(h1, &c, &torn), FLASH_OK);
	assert_int_equal(t_recs_drain(h1, &r1), FLASH_OK);
	assert_true(r1.n >= 3 && (r1.v[r1.n - 1].r.flags & FLASH_REC_F_LAST));

	char *dir = wt_mkdtemp();
	struct wal_opts wo;
	wal_opts_default(&wo);
	wo.incarnation = 0xca27ull;
	wal_t *w;
	assert_int_equal(wal_open(dir, &wo, &w), FLASH_OK);
	uint64_t seq = 0;
	for (size_t i = 0; i + 1 < r1.n; i++) {         /* the cut: line 2 lost */
		wal_put(w, &r1.v[i].r, &seq);
		assert_int_equal(flash_replay(h2, &r1.v[i].r), FLASH_OK);
	}
	assert_int_equal(t_order(h2, A, 12, 8, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_cart_order(h2, &c, &whole), FLASH_OK);
	assert_int_equal(t_recs_drain(h2, &r2), FLASH_OK);
	for (size_t i = 0; i < r2.n; i++)
		wal_put(w, &r2.v[i].r, &seq);
	assert_int_equal(wal_commit(w), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);

	mdb_t *m = open_fresh();
	struct apply_result tot;
	memset(&tot, 0, sizeof tot);
	assert_int_equal(mdb_catch_up(m, dir, 2, 1000, &tot), FLASH_OK);   /* batches of 2 */
	assert_int_equal(tot.applied_lsn, seq);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders WHERE user_id=%u", USER), 1);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM orders"), 2);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines WHERE order_no=%llu",
	                       (unsigned long long)whole.order_no), 3);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM order_lines"), 3);
	assert_int_equal(q_u64(m, "SELECT COUNT(*) FROM cart_pending"), 0);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t u[3];
		stock_of(m, cart_sku[i], u);
		assert_int_equal(u[0], t_available(h2, A, cart_sku[i]));
		assert_int_equal(u[2], cart_qty[i] + (cart_sku[i] == 12));
	}
	fold_t *f;
	assert_int_equal(fold_new(&f), FLASH_OK);
	assert_int_equal(fold_wal(f, dir), FLASH_OK);
	assert_int_equal(fold_cart_lines_torn(f), 2);
	e2e_agree(h2, m, f);
	fold_free(f);

	struct flash_feed_opts fo;
	flash_feed_opts_default(&fo);
	fo.from_start = 1;
	flash_feed_t *fd;
	assert_int_equal(flash_feed_open(dir, "carts", &fo, &fd), FLASH_OK);
	unsigned lines = 0;
	for (uint64_t i = 1; i <= seq; i++) {
		struct flash_feed_rec fr;
		char buf[512];
		assert_int_equal(flash_feed_next(fd, &fr, 1000), FLASH_OK);
		if (fr.fr_rec.type != FLASH_REC_ORDER || fr.fr_rec.order_no != whole.order_no ||
		    !(fr.fr_rec.flags & FLASH_REC_F_CART) || fr.fr_lsn <= r1.n - 1)
			continue;
		assert_true(wal_rec_fields(buf, sizeof buf, &fr.fr_rec, 1) > 0);
		char want[32];
		snprintf(want, sizeof want, "\"line\":%u,\"last\":%u", lines, lines == 2);
		assert_non_null(strstr(buf, want));
		lines++;
	}
	assert_int_equal(lines, 3);
	flash_feed_close(fd);
	t_recs_free(&r1);
	t_recs_free(&r2);
	close_drop(m);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cart_is_one_order_with_a_row_per_line_and_stock_per_sku),
		cmocka_unit_test(test_cart_cancel_ends_every_line_and_replays_change_nothing),
		cmocka_unit_test(test_reserved_cart_confirmed_or_expired_line_by_line),
		cmocka_unit_test(test_cart_split_over_two_batches_is_applied_whole_by_the_second),
		cmocka_unit_test(test_wal_cut_after_line_1_of_3_applies_nothing_of_the_cart),
		cmocka_unit_test(test_cart_open_over_2_20_lsns_is_dropped_as_torn),
		cmocka_unit_test(test_one_line_refused_refuses_the_whole_cart),
		cmocka_unit_test(test_database_from_before_carts_is_migrated),
		cmocka_unit_test(test_feed_refill_gives_back_every_line_of_a_cart_with_its_flags),
		cmocka_unit_test(test_reconcile_sums_count_every_line_in_its_sku),
		cmocka_unit_test_teardown(test_engine_carts_reach_mariadb_and_every_witness_agrees, t_teardown),
		cmocka_unit_test_teardown(test_wal_torn_inside_an_engine_cart_applies_nothing_of_it_end_to_end,
		                          t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
