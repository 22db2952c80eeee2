/*
 * test_api_archive.c -- order numbers that never repeat, order-table slots
 * reused only once free, catalog recycling and flash_archive (issue 13):
 * numbers over many laps of a small order table, a held slot skipped, the
 * answers for archived orders, the box id, an archived id refused when
 * added again,
 * a catalog of N entries serving many more activities, an archive while
 * other activities' buyers order (processes), and a segment rebuilt from the
 * records, or from a snapshot and the records after it, equal to the live
 * one, archived entries included.
 */
#include "helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"

/* An activity whose window closes @p end_ms from now (opened an hour ago). */
static int activity_ending(flash_t *h, uint32_t id, uint32_t k, int64_t end_ms)
{
	int64_t now = t_now_ns();
	struct flash_activity a = {
		.id = id, .limit_per_user = k, .max_qty = 5, .scope = FLASH_SCOPE_ACTIVITY,
		.start_ns = now - 3600LL * 1000000000LL, .end_ns = now + end_ms * 1000000LL,
	};

	return flash_activity_add(h, &a);
}

/* Wait until activity @p id has ended, then archive it. */
static void archive_when_ended(flash_t *h, uint32_t id, struct flash_archive_info *info)
{
	int rc;

	while ((rc = flash_archive(h, id, 0, info)) == FLASH_ENOT_ENDED)
		t_sleep_ms(5);
	assert_int_equal(rc, FLASH_OK);
}

static void opts_orders(struct flash_seg_opts *o, uint32_t orders)
{
	t_opts_small(o);
	o->max_orders = orders;
}

static int seen(const uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* ------------------------------------------------------------ 1. order numbers */

static void test_order_numbers_never_repeat_across_laps_of_a_small_order_table(void **state)
{
	enum { CAP = 16, LAPS = 12 };
	struct flash_seg_opts o;
	char name[64];
	flash_t *h;
	uint64_t nums[CAP * LAPS];
	size_t n = 0;
	struct t_recs recs = { 0 };

	(void)state;
	opts_orders(&o, CAP);
	h = t_seg_new(&o, name, sizeof name);
	for (uint32_t lap = 0; lap < LAPS; lap++) {
		uint32_t act = lap + 1;
		struct flash_archive_info info;
		struct flash_order_res res, dup;
		uint64_t first = 0;

		assert_int_equal(activity_ending(h, act, 1, 40), FLASH_OK);
		assert_int_equal(flash_sku_add(h, act, 10, CAP, 2), FLASH_OK);
		for (uint64_t u = 1; u <= CAP; u++) {
			assert_int_equal(t_order(h, act, 10, u, 1, 0, u == 1 ? 7000 + lap : 0, &res),
			                 FLASH_OK);
			assert_false(seen(nums, n, res.order_no));   /* never issued before */
			nums[n++] = res.order_no;
			if (u == 1)
				first = res.order_no;
			if (u % 4 == 0)
				assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
		}
		/* the table is full of this lap's orders: no more */
		assert_int_equal(t_order(h, act, 10, 99, 1, 0, 0, NULL), FLASH_EFULL);
		/* a retry answers with the whole number (widened from 44 bits) */
		assert_int_equal(t_order(h, act, 10, 1, 1, 0, 7000 + lap, &dup), FLASH_EDUPLICATE);
		assert_int_equal(dup.order_no, first);
		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		archive_when_ended(h, act, &info);
		assert_int_equal(info.orders, CAP);
		assert_int_equal(info.skus, 1);
		assert_int_equal(info.shards, 2);
		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	}
	/* numbers past the table's size, every one distinct (checked above) */
	assert_true(nums[n - 1] > (uint64_t)CAP * (LAPS - 1));
	t_recs_free(&recs);
}

static void test_slot_held_by_a_live_activitys_order_is_skipped_not_overwritten(void **state)
{
	struct flash_seg_opts o;
	struct flash_order_info oi;
	struct flash_order_res res;
	struct flash_archive_info info;
	struct t_recs recs = { 0 };
	char name[64];
	flash_t *h;
	uint64_t a_no[3], b_no[5], c_no[5];
	int rc;

	(void)state;
	opts_orders(&o, 8);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);   /* live */
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(activity_ending(h, 2, 1, 30), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 20, 100, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 3; u++) {
		assert_int_equal(t_order(h, 1, 10, u, 2, 0, 0, &res), FLASH_OK);
		a_no[u - 1] = res.order_no;
	}
	for (uint64_t u = 1; u <= 5; u++) {
		assert_int_equal(t_order(h, 2, 20, u, 1, 0, 0, &res), FLASH_OK);
		b_no[u - 1] = res.order_no;
	}
	assert_int_equal(t_order(h, 1, 10, 50, 1, 0, 0, NULL), FLASH_EFULL);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	archive_when_ended(h, 2, &info);
	assert_int_equal(info.orders, 5);

	/* activity 3 takes the five freed slots; the three held ones are skipped */
	assert_int_equal(t_activity(h, 3, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 3, 30, 100, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 5; u++) {
		assert_int_equal(t_order(h, 3, 30, u, 1, 0, 0, &res), FLASH_OK);
		c_no[u - 1] = res.order_no;
		assert_true(res.order_no > b_no[4]);
		for (int k = 0; k < 3; k++)   /* never in a slot activity 1's orders hold */
			assert_int_not_equal((res.order_no - 1) % 8, (a_no[k] - 1) % 8);
	}
	assert_int_equal(t_order(h, 3, 30, 9, 1, 0, 0, NULL), FLASH_EFULL);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(flash_order_get(h, a_no[k], &oi), FLASH_OK);
		assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
		assert_int_equal(oi.activity_id, 1);
		assert_int_equal(oi.user_id, (uint64_t)k + 1);
		assert_int_equal(oi.qty, 2);
	}
	for (int k = 0; k < 5; k++) {
		assert_int_equal(flash_order_get(h, c_no[k], &oi), FLASH_OK);
		assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
		assert_int_equal(oi.activity_id, 3);
	}
	assert_int_equal(t_available(h, 1, 10), 94);
	/* activity 1's orders still cancel, with their units */
	assert_int_equal(flash_cancel(h, a_no[0], NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 96);
	rc = flash_order_get(h, b_no[0], &oi);
	assert_int_equal(rc, FLASH_EARCHIVED);
	t_recs_free(&recs);
}

static void test_cancel_and_get_of_an_archived_order_say_earchived(void **state)
{
	struct flash_order_info oi;
	struct flash_order_res r1, r2;
	struct flash_archive_info info;
	struct t_recs recs = { 0 };
	uint32_t units = 9;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	(void)state;
	assert_int_equal(activity_ending(h, 1, 2, 30), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, &r1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, &r2), FLASH_OK);
	assert_int_equal(flash_cancel(h, r2.order_no, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	archive_when_ended(h, 1, &info);
	assert_int_equal(info.orders, 2);
	assert_int_equal(flash_order_get(h, r1.order_no, &oi), FLASH_EARCHIVED);
	assert_int_equal(flash_order_get(h, r2.order_no, &oi), FLASH_EARCHIVED);
	assert_int_equal(flash_cancel(h, r1.order_no, &units), FLASH_EARCHIVED);
	assert_int_equal(units, 0);
	assert_int_equal(flash_cancel(h, r2.order_no, NULL), FLASH_EARCHIVED);
	/* a number never issued is still not found */
	assert_int_equal(flash_order_get(h, flash_orders_max(h) + 1000, &oi), FLASH_ENOT_FOUND);
	assert_int_equal(flash_cancel(h, flash_orders_max(h) + 1000, NULL), FLASH_ENOT_FOUND);
	/* the activity and its sku are gone */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ENOT_FOUND);
	assert_int_equal(flash_restock(h, 1, 10, 5), FLASH_ENOT_FOUND);
	assert_int_equal(flash_archive(h, 1, 0, NULL), FLASH_ENOT_FOUND);
	t_recs_free(&recs);
}

static void test_box_id_shows_in_the_top_byte_of_every_order_number(void **state)
{
	struct flash_order_info oi;
	struct flash_order_res res, dup;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	(void)state;
	assert_int_equal(flash_box_id_set(h, 0), FLASH_EINVAL);
	assert_int_equal(flash_box_id_set(h, 256), FLASH_EINVAL);
	assert_int_equal(flash_box_id_set(h, 7), FLASH_OK);
	assert_int_equal(flash_box_id_set(h, 8), FLASH_EINVAL);   /* once */
	assert_int_equal(t_activity(h, 1, 2, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 4242, &res), FLASH_OK);
	assert_int_equal(res.order_no >> 56, 7);
	assert_int_equal(res.order_no & ((1ull << 56) - 1), 1);
	assert_int_equal(flash_orders_max(h), res.order_no);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(oi.user_id, 5);
	/* the box's own number, without its byte: another box's */
	assert_int_equal(flash_order_get(h, 1, &oi), FLASH_ENOT_FOUND);
	/* a retry's answer carries the box byte too */
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 4242, &dup), FLASH_EDUPLICATE);
	assert_int_equal(dup.order_no, res.order_no);
	assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
	assert_int_equal(flash_box_id_set(h, 9), FLASH_EINVAL);   /* after an order */
}

/*
 * A process slot keeps its unused order numbers for its next handle
 * (order.c).  Those came from the header's counter: they end at or below it,
 * in its box.  A segment whose counter was scribbled into another box after
 * the slot took its chunk (fuzz_attach found it) gave the next handle a
 * number of the old box, which ono_find then called another box's: the
 * order it had just placed was FLASH_ENOT_FOUND to its own cancel.  The
 * claim drops such a range: its numbers are skipped, never issued.
 */
static void test_a_slot_range_outside_the_counter_is_dropped_at_attach(void **state)
{
	struct flash_order_res res;
	struct flash_order_info oi;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name), *b;
	const uint64_t scribbled = (0x59ull << 56) | 0x41;

	(void)state;
	assert_int_equal(t_activity(h, 1, 5, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(res.order_no, 1);             /* the slot keeps 2..64 */
	h->hdr->order_next = scribbled;
	t_untrack_handle(h);
	assert_int_equal(flash_close(h), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &b), FLASH_OK);
	t_track_handle(b);
	assert_int_equal(t_order(b, 1, 10, 6, 1, 0, 0, &res), FLASH_OK);
	assert_int_equal(res.order_no, scribbled);     /* from the counter, in its box */
	assert_int_equal(flash_order_get(b, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(flash_cancel(b, res.order_no, NULL), FLASH_OK);
}

/* ------------------------------------------------------------ 2. catalog recycling */

static void test_archive_of_an_activity_not_ended_is_enot_ended_and_changes_nothing(void **state)
{
	struct flash_order_info oi;
	struct flash_order_res res;
	struct t_snap before;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	(void)state;
	assert_int_equal(t_activity(h, 1, 2, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, &res), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_archive(h, 1, 0, NULL), FLASH_ENOT_ENDED);
	assert_int_equal(flash_archive(h, 2, 0, NULL), FLASH_ENOT_FOUND);
	assert_int_equal(flash_archive(h, 0, 0, NULL), FLASH_EINVAL);
	assert_int_equal(flash_archive(h, 1, 1, NULL), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(t_order(h, 1, 10, 6, 1, 0, 0, NULL), FLASH_OK);   /* still selling */
}

/*
 * An archived id is not added again (issue 19, item 4): its limit entries,
 * MariaDB's rows and the backstop's cache are keyed by the id, so a second
 * incarnation would inherit the first one's buyers, stock rows and limits.
 * The segment remembers every archived id (rebuilt from the WAL's ARCHIVE
 * records too) and refuses the id with FLASH_EARCHIVED, changing nothing; a
 * new id takes the freed entries.
 */
static void test_archived_activity_id_added_again_is_refused_and_a_new_id_takes_its_entries(void **state)
{
	struct flash_order_info oi;
	struct flash_order_res old, res;
	struct flash_archive_info info;
	struct flash_sku_info si;
	struct t_recs recs = { 0 };
	struct t_snap before;
	char name[64], name2[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name), *r;

	(void)state;
	assert_int_equal(activity_ending(h, 1, 1, 30), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 2), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 3, 0, 0, &old), FLASH_OK);
	assert_int_equal(flash_activity_id_check(h, 1), FLASH_EEXIST);
	assert_int_equal(flash_activity_id_check(h, 2), FLASH_OK);
	assert_int_equal(flash_activity_id_check(h, 0), FLASH_EINVAL);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	archive_when_ended(h, 1, &info);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_ENOT_FOUND);

	t_snap_take(h, &before);
	assert_int_equal(flash_activity_id_check(h, 1), FLASH_EARCHIVED);
	assert_int_equal(t_activity(h, 1, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_EARCHIVED);
	assert_int_equal(flash_sku_add(h, 1, 10, 4, 2), FLASH_ENOT_FOUND);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_order_get(h, old.order_no, &oi), FLASH_EARCHIVED);

	/* a new id sells in the freed entries */
	assert_int_equal(t_activity(h, 2, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 10, 4, 2), FLASH_OK);
	assert_int_equal(t_order(h, 2, 10, 5, 3, 0, 0, &res), FLASH_OK);
	assert_int_equal(t_available(h, 2, 10), 1);
	assert_true(res.order_no > old.order_no);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);

	/* a segment rebuilt from the records remembers the id too, and the
	 * old ACTIVITY record applied again is already applied */
	r = t_seg_new(NULL, name2, sizeof name2);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(r, &recs.v[i].r), FLASH_OK);
	assert_int_equal(flash_activity_id_check(r, 1), FLASH_EARCHIVED);
	assert_int_equal(t_activity(r, 1, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_EARCHIVED);
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.activity_id == 1 && recs.v[i].r.type == FLASH_REC_ACTIVITY)
			assert_int_equal(flash_replay(r, &recs.v[i].r), FLASH_EEXIST);
	t_recs_free(&recs);
}

/*
 * The set of archived ids has a capacity (256 per catalog entry, at least
 * 16384): once it is full, an archive is refused FLASH_EFULL before its
 * mark, changing nothing, and the activity stays live and whole.
 */
static void test_archive_is_refused_efull_once_the_archived_ids_fill_their_set(void **state)
{
	struct flash_seg_opts o;
	struct t_recs recs = { 0 };
	struct t_snap before;
	char name[64];
	flash_t *h;
	uint32_t id;

	(void)state;
	t_opts_small(&o);   /* 8 activities: the set's floor, 16384 ids */
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(h->arch_cap, 16384);
	for (id = 1; id <= h->arch_cap; id++) {
		assert_int_equal(activity_ending(h, id, 1, -1), FLASH_OK);
		assert_int_equal(flash_archive(h, id, 0, NULL), FLASH_OK);
		if (id % 256 == 0) {   /* the ring's room */
			assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
			t_recs_free(&recs);
			memset(&recs, 0, sizeof recs);
		}
	}
	assert_int_equal(activity_ending(h, id, 1, -1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, id, 1, 5, 1), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(flash_archive(h, id, 0, NULL), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(flash_activity_id_check(h, id), FLASH_EEXIST);
	assert_int_equal(t_order(h, id, 1, 7, 1, 0, 0, NULL), FLASH_EENDED);   /* ended, not marked */
	assert_int_equal(flash_activity_id_check(h, 1), FLASH_EARCHIVED);
	assert_int_equal(flash_activity_id_check(h, id - 1), FLASH_EARCHIVED);
	t_recs_free(&recs);
}

static void test_catalog_of_n_entries_serves_many_more_activities_over_time(void **state)
{
	struct flash_seg_opts o;
	struct t_recs recs = { 0 };
	char name[64];
	flash_t *h;

	(void)state;
	t_opts_small(&o);   /* 8 activities, 16 skus, 64 shards */
	o.max_users = 1024;
	h = t_seg_new(&o, name, sizeof name);
	for (uint32_t act = 1; act <= 40; act++) {
		struct flash_archive_info info;

		assert_int_equal(activity_ending(h, act, 1, 15), FLASH_OK);
		assert_int_equal(flash_sku_add(h, act, 10, 8, 16), FLASH_OK);
		assert_int_equal(flash_sku_add(h, act, 11, 8, 16), FLASH_OK);
		for (uint64_t u = 1; u <= 3; u++)
			assert_int_equal(t_order(h, act, 10 + (uint32_t)(u & 1), u, 1, 0, 0, NULL), FLASH_OK);
		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		archive_when_ended(h, act, &info);
		assert_int_equal(info.skus, 2);
		assert_int_equal(info.shards, 32);
		assert_int_equal(info.orders, 3);
	}
	/* the dense entries never went past what one activity at a time needs */
	assert_true(h->hdr->n_act <= 2);
	assert_true(h->hdr->n_sku <= 3);
	assert_true(h->hdr->n_shard <= 48);
	t_recs_free(&recs);
}

/* Buyers of activity 1 in child processes, while the parent archives 2. */
struct mp_arg {
	const char *name;
	uint64_t *nos;     /* shared: each child's order numbers */
	uint32_t per_child;
};

static int mp_buyer(int i, void *arg)
{
	struct mp_arg *a = arg;
	flash_t *h = NULL;
	int bad = 0;

	if (flash_open(a->name, 0, &h) != FLASH_OK)
		return 2;
	for (uint32_t n = 0; n < a->per_child; n++) {
		struct flash_order_res res;
		uint64_t user = 1000000u * (uint64_t)(i + 1) + n;

		if (t_order(h, 1, 10, user, 1, 0, 0, &res) != FLASH_OK) {
			bad = 1;
			break;
		}
		a->nos[(size_t)i * a->per_child + n] = res.order_no;
	}
	flash_close(h);
	return bad;
}

static void test_archive_while_other_activities_buyers_order_leaves_their_orders_and_stock(void **state)
{
	enum { KIDS = 2, PER = 400 };
	struct flash_seg_opts o;
	struct flash_archive_info info;
	struct flash_order_res res;
	struct t_recs recs = { 0 };
	struct mp_arg a;
	pid_t pids[KIDS];
	uint64_t tok;
	char name[64];
	flash_t *h;
	int go;

	(void)state;
	t_opts_small(&o);
	o.max_users = 4096;
	o.max_orders = 4096;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, KIDS * PER, 4), FLASH_OK);
	assert_int_equal(activity_ending(h, 2, 3, 20), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 20, 50, 2), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 21, 50, 1), FLASH_OK);
	for (uint64_t u = 1; u <= 20; u++) {
		assert_int_equal(t_order(h, 2, 20 + (uint32_t)(u & 1), u, 1, 0, 0, &res), FLASH_OK);
		if (u % 5 == 0)
			assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
	}
	assert_int_equal(flash_token_issue(h, 2, 20, 77, 600000, &tok), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	t_sleep_ms(25);   /* activity 2 has ended */

	a.name = name;
	a.per_child = PER;
	a.nos = t_shared_alloc(sizeof(uint64_t) * KIDS * PER);
	assert_int_equal(t_fork_start(KIDS, mp_buyer, &a, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(flash_archive(h, 2, 0, &info), FLASH_OK);
	assert_int_equal(t_wait_all(KIDS, pids), 0);
	assert_int_equal(info.orders, 20);
	assert_int_equal(info.skus, 2);
	assert_int_equal(info.shards, 3);
	assert_int_equal(info.tokens, 1);

	/* every child's order stands, activity 1's stock is exactly what they took */
	for (size_t k = 0; k < (size_t)KIDS * PER; k++) {
		struct flash_order_info oi;

		assert_int_equal(flash_order_get(h, a.nos[k], &oi), FLASH_OK);
		assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
		assert_int_equal(oi.activity_id, 1);
		assert_int_equal(oi.user_id, 1000000u * (k / PER + 1) + k % PER);
		for (size_t m = 0; m < k; m++)
			assert_int_not_equal(a.nos[m], a.nos[k]);
	}
	assert_int_equal(t_available(h, 1, 10), 0);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_ESOLD_OUT);
	assert_int_equal(flash_token_redeem(h, 2, 20, 77, tok), FLASH_EBAD_TOKEN);
	t_shared_free(a.nos, sizeof(uint64_t) * KIDS * PER);
	t_recs_free(&recs);
}

/* ------------------------------------------------------------ 3. replay */

/* Order slots, catalog entries and shards, field by field. */
static void assert_same_segment(flash_t *a, flash_t *b)
{
	assert_int_equal(a->hdr->n_act, b->hdr->n_act);
	assert_int_equal(a->hdr->n_sku, b->hdr->n_sku);
	assert_int_equal(a->hdr->n_shard, b->hdr->n_shard);
	for (uint32_t i = 0; i < a->hdr->n_act; i++) {
		assert_int_equal(a->act[i].state, b->act[i].state);
		if (FS_CAT_KIND(a->act[i].state) != FS_CAT_FREE)
			assert_memory_equal(a->act[i].t, b->act[i].t, sizeof(a->act[i].t));
	}
	for (uint32_t i = 0; i < a->hdr->n_sku; i++) {
		assert_int_equal(a->sku[i].state, b->sku[i].state);
		if (FS_CAT_KIND(a->sku[i].state) == FS_CAT_FREE)
			continue;
		assert_int_equal(a->sku[i].activity_id, b->sku[i].activity_id);
		assert_int_equal(a->sku[i].sku_id, b->sku[i].sku_id);
		assert_int_equal(a->sku[i].shard0, b->sku[i].shard0);
		assert_int_equal(a->sku[i].nshards, b->sku[i].nshards);
		assert_int_equal(a->sku[i].total.value, b->sku[i].total.value);
	}
	for (uint32_t i = 0; i < a->hdr->n_shard; i++) {
		assert_int_equal(a->shard[i].owner, b->shard[i].owner);
		if (a->shard[i].owner != 0)
			assert_int_equal(a->shard[i].c.value, b->shard[i].c.value);
	}
	for (uint32_t i = 0; i <= a->act_idx_mask; i++)
		assert_int_equal(a->act_idx[i], b->act_idx[i]);
	for (uint32_t i = 0; i <= a->sku_idx_mask; i++)
		assert_int_equal(a->sku_idx[i], b->sku_idx[i]);
	for (uint32_t i = 0; i < a->ord_cap; i++) {
		const struct fs_order *x = &a->ord[i], *y = &b->ord[i];

		assert_int_equal(x->state, y->state);
		if (FS_KIND(x->state) == FS_K_EMPTY)
			continue;
		assert_int_equal(x->order_no, y->order_no);
		assert_int_equal(x->user_id, y->user_id);
		assert_int_equal(x->activity_id, y->activity_id);
		assert_int_equal(x->sku_id, y->sku_id);
		assert_int_equal(x->qty, y->qty);
		assert_int_equal(x->sku_idx, y->sku_idx);
	}
}

static void test_segment_rebuilt_from_records_or_snapshot_plus_records_equals_the_live_one(void **state)
{
	struct flash_seg_opts o;
	struct flash_order_res res;
	struct t_recs recs = { 0 };
	char name[64], name2[64], name3[64];
	flash_t *h, *r, *sn;
	void *img = NULL;
	uint64_t img_len = 0;
	size_t img_recs = 0;

	(void)state;
	opts_orders(&o, 8);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 2, 5, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 2), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 1, 2, 0, 0, NULL), FLASH_OK);
	for (uint32_t lap = 0; lap < 3; lap++) {
		uint32_t act = 2 + lap;

		assert_int_equal(activity_ending(h, act, 2, 25), FLASH_OK);
		assert_int_equal(flash_sku_add(h, act, 20, 30, 3), FLASH_OK);
		assert_int_equal(flash_sku_add(h, act, 21, 30, 1), FLASH_OK);
		for (uint64_t u = 1; u <= 5; u++) {
			assert_int_equal(t_order(h, act, 20 + (uint32_t)(u & 1), u, 1, 0, 0, &res), FLASH_OK);
			if (u == 2)
				assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
		}
		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		archive_when_ended(h, act, NULL);
		if (lap == 0) {
			/* a snapshot: the segment's image, quiescent, after the first
			 * archive (its record drained: the image reflects it) */
			const void *base;

			assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
			assert_int_equal(flash_image(h, &base, &img_len), FLASH_OK);
			img = malloc(img_len);
			assert_non_null(img);
			memcpy(img, base, img_len);
			img_recs = recs.n;
		}
	}
	assert_int_equal(activity_ending(h, 9, 2, 100000), FLASH_OK);   /* reuses entries */
	assert_int_equal(flash_sku_add(h, 9, 90, 10, 2), FLASH_OK);
	assert_int_equal(t_order(h, 9, 90, 3, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 3, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);

	r = t_seg_new(&o, name2, sizeof name2);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(r, &recs.v[i].r), FLASH_OK);
	assert_same_segment(h, r);
	/* a second application of what followed the last archive changes
	 * nothing (an archived activity's own records are applied once, by
	 * the WAL's LSN, as restocks are: replay.c) */
	size_t from = 0;

	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ARCHIVE)
			from = i + 1;
	assert_true(from > 0 && from < recs.n);
	for (size_t i = from; i < recs.n; i++) {
		int rc = flash_replay(r, &recs.v[i].r);

		if (rc != FLASH_EEXIST)
			fprintf(stderr, "record %zu type %u act %u: %s\n", i, recs.v[i].r.type,
			        recs.v[i].r.activity_id, flash_rcname(rc));
		assert_true(rc == FLASH_EEXIST || (rc == FLASH_OK && recs.v[i].r.type == FLASH_REC_RESTOCK));
	}
	/* and from the snapshot plus the records after it */
	assert_int_equal(flash_seg_restore(t_segname(name3, sizeof name3), NULL, img, img_len), FLASH_OK);
	assert_int_equal(flash_open(name3, 0, &sn), FLASH_OK);
	t_track_handle(sn);
	for (size_t i = img_recs; i < recs.n; i++)
		assert_int_equal(flash_replay(sn, &recs.v[i].r), FLASH_OK);
	assert_same_segment(h, sn);
	free(img);
	t_recs_free(&recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_order_numbers_never_repeat_across_laps_of_a_small_order_table, t_teardown),
		cmocka_unit_test_teardown(test_slot_held_by_a_live_activitys_order_is_skipped_not_overwritten, t_teardown),
		cmocka_unit_test_teardown(test_cancel_and_get_of_an_archived_order_say_earchived, t_teardown),
		cmocka_unit_test_teardown(test_box_id_shows_in_the_top_byte_of_every_order_number, t_teardown),
		cmocka_unit_test_teardown(test_a_slot_range_outside_the_counter_is_dropped_at_attach, t_teardown),
		cmocka_unit_test_teardown(test_archive_of_an_activity_not_ended_is_enot_ended_and_changes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_archived_activity_id_added_again_is_refused_and_a_new_id_takes_its_entries, t_teardown),
		cmocka_unit_test_teardown(test_archive_is_refused_efull_once_the_archived_ids_fill_their_set, t_teardown),
		cmocka_unit_test_teardown(test_catalog_of_n_entries_serves_many_more_activities_over_time, t_teardown),
		cmocka_unit_test_teardown(test_archive_while_other_activities_buyers_order_leaves_their_orders_and_stock, t_teardown),
		cmocka_unit_test_teardown(test_segment_rebuilt_from_records_or_snapshot_plus_records_equals_the_live_one, t_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
