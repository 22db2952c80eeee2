/*
 * test_api_gens.c -- request-id windows and limit-entry generations
 * (flashstock.h section 11, engine/gen.c): a retry inside the window gets
 * its first outcome across generation changes, an expired id a distinct
 * code and no change, a small table serves many generations, per-day and
 * per-activity limits hold across generations, two processes racing one
 * request id across a generation change make one order, and a segment
 * rebuilt from a snapshot and the records equals the live one bank by bank.
 *
 * Generations are moved with flash_gen_advance's clock argument (a clock
 * ahead of the real one); request ids and business days follow the real
 * clock, as in production.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"

#define SEC 1000000000LL
#define HOUR_S 3600u

static flash_t *windowed(char *name, size_t len, struct flash_seg_opts *o, uint32_t req_s, uint32_t user_s)
{
	struct flash_reclaim_opts ro = { .req_window_s = req_s, .user_gen_s = user_s };
	flash_t *h = t_seg_new(o, name, len);

	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_OK);
	return h;
}

/* Move table @p t one generation on (clock @p *clk, stepped past the
 * generation's least length) and clear the bank two back; asserts it moved. */
static void next_gen(flash_t *h, uint32_t t, int64_t *clk)
{
	struct flash_gen_info gi;
	uint64_t cleared = 0;

	*clk += 3 * (int64_t)HOUR_S * SEC;
	assert_int_equal(flash_gen_advance(h, t, *clk, &gi), FLASH_OK);
	assert_int_equal(gi.advanced, 1);
	assert_int_equal(flash_gen_clear(h, t, &cleared), FLASH_OK);
}

static void test_one_bank_segment_has_no_generations_to_move(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_gen_info gi;
	uint64_t n;

	assert_int_equal(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	assert_int_equal(gi.banks, 1);
	assert_int_equal(gi.bank[0].state, FLASH_BANK_CURRENT);
	assert_int_equal(flash_gen_advance(h, FLASH_TABLE_REQUESTS, t_now_ns() + 1000 * SEC, &gi), FLASH_EINVAL);
	assert_int_equal(flash_gen_clear(h, FLASH_TABLE_USERS, &n), FLASH_EINVAL);
	assert_int_equal(flash_gen_get(h, 2, &gi), FLASH_EINVAL);
	/* any nonzero id, remembered for the segment's life */
	assert_int_equal(t_activity(h, 1, 5, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 1, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 1, NULL), FLASH_EDUPLICATE);
}

static void test_reclaim_set_only_on_a_fresh_segment_with_no_other_handle(void **state)
{
	char name[64], name2[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name), *h2, *o;
	struct flash_reclaim_opts ro = { .req_window_s = 10, .user_gen_s = 10 };

	assert_int_equal(flash_open(name, 0, &o), FLASH_OK);
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_EBUSY);
	assert_int_equal(flash_close(o), FLASH_OK);
	ro.pad[2] = 1;
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_EINVAL);
	ro.pad[2] = 0;
	ro.user_gen_s = 0;
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_EINVAL);
	ro.user_gen_s = 10;
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_OK);
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_EINVAL);   /* windowed already */
	/* a second handle attaches the grown segment */
	assert_int_equal(flash_open(name, 0, &o), FLASH_OK);
	{
		struct flash_gen_info gi;

		assert_int_equal(flash_gen_get(o, FLASH_TABLE_USERS, &gi), FLASH_OK);
		assert_int_equal(gi.banks, FLASH_GEN_BANKS);
		assert_int_equal(gi.gen_s, 10);
		assert_int_equal(gi.bank[0].state, FLASH_BANK_CURRENT);
		assert_int_equal(gi.bank[1].state, FLASH_BANK_CLEAR);
	}
	assert_int_equal(flash_close(o), FLASH_OK);
	/* once a key is in, the layout stays */
	h2 = t_seg_new(NULL, name2, sizeof name2);
	assert_int_equal(t_activity(h2, 1, 5, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h2, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_order(h2, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_seg_reclaim_set(h2, &ro), FLASH_EINVAL);
}

static void test_request_id_new_carries_the_time_and_differs(void **state)
{
	uint64_t a = flash_request_id_new(), b = flash_request_id_new();
	uint64_t now_ms = (uint64_t)t_now_ns() / 1000000u;

	assert_true(a != 0 && a != b);
	assert_true((a >> 16) <= now_ms && (a >> 16) + 5000 > now_ms);
}

/* One thread's ids never repeat, also many in one millisecond (16 random
 * bits alone repeat after about 300 ids of one millisecond): a new order
 * must never meet an earlier request's entry and answer FLASH_EDUPLICATE. */
static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void test_request_ids_of_one_thread_never_repeat_even_within_one_millisecond(void **state)
{
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof *v);
	uint64_t now_ms = (uint64_t)t_now_ns() / 1000000u;

	(void)state;
	assert_non_null(v);
	for (int i = 0; i < N; i++)
		v[i] = flash_request_id_new();
	qsort(v, N, sizeof *v, cmp_u64);
	for (int i = 1; i < N; i++)
		assert_true(v[i] != v[i - 1]);
	/* the time stays the clock's (at most a few ms ahead when a
	 * millisecond's 65536 ids are used up) */
	assert_true((v[N - 1] >> 16) <= (uint64_t)t_now_ns() / 1000000u + 60000u);
	assert_true((v[0] >> 16) + 5000 > now_ms);
	free(v);
}

/* A forked child does not mint its parent's ids: the random bits the
 * parent had buffered are not the child's (buyers forked from one process
 * would otherwise mint the same ids in the same millisecond). */
static void test_request_ids_after_fork_differ_from_the_parents(void **state)
{
	enum { K = 32 };
	uint64_t *sh = mmap(NULL, K * sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	                    -1, 0);
	uint64_t mine[K];
	int same = 0, st;
	pid_t pid;

	(void)state;
	assert_true(sh != MAP_FAILED);
	(void)flash_request_id_new();   /* the buffer filled before the fork */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < K; i++)
			sh[i] = flash_request_id_new();
		_exit(0);
	}
	for (int i = 0; i < K; i++)
		mine[i] = flash_request_id_new();
	assert_int_equal(waitpid(pid, &st, 0), pid);
	for (int i = 0; i < K; i++)
		same += (mine[i] & 0xffff) == (sh[i] & 0xffff);
	assert_true(same < K / 2);
	munmap(sh, K * sizeof *sh);
}

static void test_retry_inside_the_window_gets_its_first_outcome_across_generation_changes(void **state)
{
	char name[64];
	flash_t *h = windowed(name, sizeof name, NULL, HOUR_S, HOUR_S);
	int64_t clk = t_now_ns();
	uint64_t ok_id = flash_request_id_new(), sold_id = flash_request_id_new();
	struct flash_order_res first, again;
	struct flash_gen_info gi;

	assert_int_equal(t_activity(h, 1, 5, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 3, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, ok_id, &first), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 8, 3, 0, sold_id, NULL), FLASH_ESOLD_OUT);
	/* the generation not due yet: nothing moves */
	assert_int_equal(flash_gen_advance(h, FLASH_TABLE_REQUESTS, clk, &gi), FLASH_OK);
	assert_int_equal(gi.advanced, 0);
	assert_int_equal(gi.wait, FLASH_GEN_WAIT_NOT_DUE);
	next_gen(h, FLASH_TABLE_REQUESTS, &clk);
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	assert_int_equal(gi.gen, 1);
	assert_int_equal(gi.bank[0].state, FLASH_BANK_PREVIOUS);
	assert_int_equal(gi.bank[0].keys, 2);
	assert_int_equal(gi.bank[1].state, FLASH_BANK_CURRENT);
	/* the retries find the first outcomes in the previous generation */
	assert_int_equal(flash_restock(h, 1, 10, 10), FLASH_OK);
	memset(&again, 0, sizeof again);
	assert_int_equal(t_order(h, 1, 10, 7, 2, 0, ok_id, &again), FLASH_EDUPLICATE);
	assert_int_equal(again.first_rc, FLASH_OK);
	assert_int_equal(again.order_no, first.order_no);
	assert_int_equal(again.limit_slot, first.limit_slot);
	memset(&again, 0, sizeof again);
	assert_int_equal(t_order(h, 1, 10, 8, 3, 0, sold_id, &again), FLASH_EDUPLICATE);
	assert_int_equal(again.first_rc, FLASH_ESOLD_OUT);
	assert_int_equal(t_available(h, 1, 10), 11);
	/* the retry claimed in the current bank and gave the entry back */
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	assert_int_equal(gi.reclaimed, 0);
	/* two generations on, the first bank is cleared */
	next_gen(h, FLASH_TABLE_REQUESTS, &clk);
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	assert_int_equal(gi.gen, 2);
	assert_int_equal(gi.bank[0].state, FLASH_BANK_CLEAR);
	assert_int_equal(gi.bank[0].keys, 0);
	assert_int_equal(gi.reclaimed, 2);
}

static void test_expired_request_id_gets_ereq_expired_and_changes_nothing(void **state)
{
	char name[64];
	flash_t *h = windowed(name, sizeof name, NULL, 60, HOUR_S);
	uint64_t now_ms = (uint64_t)t_now_ns() / 1000000u;
	uint64_t old = ((now_ms - 61000) << 16) | 0x1234, ahead = ((now_ms + 120000) << 16) | 1;
	uint64_t fresh = ((now_ms - 50000) << 16) | 0x55;
	struct t_snap before;

	assert_int_equal(t_activity(h, 1, 5, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 10, 1), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, old, NULL), FLASH_EREQ_EXPIRED);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, ahead, NULL), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(before.st.requests, 0);
	/* inside the window: accepted */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, fresh, NULL), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, fresh, NULL), FLASH_EDUPLICATE);
	assert_string_equal(flash_rcname(FLASH_EREQ_EXPIRED), "FLASH_EREQ_EXPIRED");
}

static void test_max_requests_8_takes_orders_for_many_generations_with_each_bank_at_most_8(void **state)
{
	char name[64], name1[64];
	struct flash_seg_opts o;
	flash_t *h, *one;
	int64_t clk = t_now_ns();
	uint64_t user = 1;
	struct flash_gen_info gi;

	t_opts_small(&o);
	o.max_requests = 8;
	/* one bank (as before): 8 orders, then the table is full */
	one = t_seg_new(&o, name1, sizeof name1);
	assert_int_equal(t_activity(one, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(one, 1, 10, 1000, 1), FLASH_OK);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t_order(one, 1, 10, user++, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
	assert_int_equal(t_order(one, 1, 10, user++, 1, 0, flash_request_id_new(), NULL), FLASH_EFULL);

	h = windowed(name, sizeof name, &o, HOUR_S, HOUR_S);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1000, 1), FLASH_OK);
	for (int g = 0; g < 12; g++) {
		for (int i = 0; i < 8; i++)
			assert_int_equal(t_order(h, 1, 10, user++, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
		assert_int_equal(t_order(h, 1, 10, user++, 1, 0, flash_request_id_new(), NULL), FLASH_EFULL);
		assert_int_equal(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
		assert_int_equal(gi.gen, (uint64_t)g);
		for (uint32_t b = 0; b < gi.banks; b++)
			assert_true(gi.bank[b].keys <= 8);
		assert_int_equal(gi.bank[g % 3].keys, 8);
		next_gen(h, FLASH_TABLE_REQUESTS, &clk);
	}
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	assert_int_equal(gi.gen, 12);
	assert_int_equal(gi.reclaimed, 8 * 11);   /* generations 0..10 cleared */
}

/* Sleep until a business day of @p len_s seconds has just begun (its first
 * quarter), so the next steps run inside one day; returns that day. */
static uint32_t day_start(uint32_t len_s)
{
	for (;;) {
		int64_t now = t_now_ns();
		int64_t into = now % ((int64_t)len_s * SEC);

		if (into < (int64_t)len_s * SEC / 4)
			return (uint32_t)(now / SEC / len_s);
		t_sleep_ms((unsigned)(((int64_t)len_s * SEC - into) / 1000000) + 1);
	}
}

static void test_per_day_limit_holds_on_its_day_across_a_generation_change_and_frees_the_next_day(void **state)
{
	char name[64];
	flash_t *h = windowed(name, sizeof name, NULL, HOUR_S, 2);
	int64_t clk = t_now_ns();
	struct flash_order_info oi;
	struct flash_order_res res;
	uint32_t d;

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_DAY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	/* each attempt a fresh user; one whose steps did not all fall on day d
	 * (a loaded machine) is not judged, and the next attempt runs */
	for (uint64_t user = 7;; user++) {
		int rc1, rc2;

		assert_true(user < 12);
		d = day_start(2);
		assert_int_equal(t_order(h, 1, 10, user, 1, 0, 0, &res), FLASH_OK);
		assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
		rc1 = t_order(h, 1, 10, user, 1, 0, 0, NULL);
		/* the user table moves on (within day d): the entry is in g - 1 now */
		next_gen(h, FLASH_TABLE_USERS, &clk);
		rc2 = t_order(h, 1, 10, user, 1, 0, 0, NULL);
		if (t_now_ns() / SEC / 2 != d || oi.biz_day != d)
			continue;
		assert_int_equal(rc1, FLASH_ELIMIT);
		assert_int_equal(rc2, FLASH_ELIMIT);
		/* day d + 1: a new key */
		while (t_now_ns() / SEC / 2 == d)
			t_sleep_ms(50);
		assert_int_equal(t_order(h, 1, 10, user, 1, 0, 0, &res), FLASH_OK);
		assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
		assert_true(oi.biz_day > d);
		assert_int_equal(t_order(h, 1, 10, user, 1, 0, 0, NULL), FLASH_ELIMIT);
		break;
	}
}

static void test_per_activity_limit_holds_while_its_bank_stays_pinned_and_the_generation_waits(void **state)
{
	char name[64];
	flash_t *h = windowed(name, sizeof name, NULL, HOUR_S, HOUR_S);
	int64_t clk = t_now_ns();
	struct flash_gen_info gi;
	uint64_t cleared = 9;
	uint32_t ai;

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	next_gen(h, FLASH_TABLE_USERS, &clk);
	next_gen(h, FLASH_TABLE_USERS, &clk);       /* gen 2: bank 0 is two back */
	assert_int_equal(flash_gen_clear(h, FLASH_TABLE_USERS, &cleared), FLASH_OK);
	assert_int_equal(cleared, 0);              /* pinned: kept */
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
	assert_int_equal(gi.bank[0].state, FLASH_BANK_PINNED);
	assert_int_equal(gi.bank[0].pinned_by, 1);
	assert_int_equal(gi.bank[0].keys, 1);
	/* the limit holds two generations on; a new user's entry joins bank 0 */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	assert_int_equal(t_order(h, 1, 10, 8, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
	assert_int_equal(gi.bank[0].keys, 2);
	/* the generation waits for the pinned bank, and says why */
	clk += 3 * (int64_t)HOUR_S * SEC;
	assert_int_equal(flash_gen_advance(h, FLASH_TABLE_USERS, clk, &gi), FLASH_OK);
	assert_int_equal(gi.advanced, 0);
	assert_int_equal(gi.wait, FLASH_GEN_WAIT_PINNED);
	assert_int_equal(gi.wait_activity, 1);
	assert_int_equal(gi.gen, 2);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_ELIMIT);
	/* the archive unpins it: cleared, and the generation moves on */
	assert_non_null(fs_act_find(h, 1, &ai));
	fs_gen_unpin(h, ai);
	assert_int_equal(flash_gen_clear(h, FLASH_TABLE_USERS, &cleared), FLASH_OK);
	assert_int_equal(cleared, 2);
	assert_int_equal(flash_gen_advance(h, FLASH_TABLE_USERS, clk, &gi), FLASH_OK);
	assert_int_equal(gi.advanced, 1);
	assert_int_equal(gi.gen, 3);
}

/*
 * What an activity add killed before its commit point leaves in the entry
 * an archive freed, once the repair has forgotten it (tests/crash/crash_points.c
 * "activity_add_into_freed_entry" kills it there): the new activity's
 * fields and its bank pin, the entry still FREE.  Issue 19: the pin held
 * bank 0 for an activity that does not exist, and the user table never
 * moved again.
 */
static void test_add_forgotten_in_a_freed_entry_pins_no_bank_and_the_generation_moves_on(void **state)
{
	char name[64];
	flash_t *h = windowed(name, sizeof name, NULL, HOUR_S, HOUR_S);
	int64_t clk = t_now_ns();
	struct flash_gen_info gi;
	uint32_t ai;

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_non_null(fs_act_find(h, 1, &ai));
	h->act[ai].t[0].end_ns = h->act[ai].t[1].end_ns = h->act[ai].t[0].start_ns + 1;   /* ended */
	assert_int_equal(flash_archive(h, 1, 0, NULL), FLASH_OK);
	assert_int_equal(FS_CAT_KIND(h->act[ai].state), FS_CAT_FREE);
	/* the dead add of activity 2, as fs_activity_add_locked wrote it */
	h->act[ai].t[0].id = h->act[ai].t[1].id = 2;
	fs_gen_pin(h, &h->act[ai]);
	assert_int_equal(FS_CAT_KIND(h->act[ai].state), FS_CAT_FREE);
	assert_null(fs_act_find(h, 2, NULL));

	assert_int_equal(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
	for (uint32_t b = 0; b < gi.banks; b++)
		assert_int_equal(gi.bank[b].pinned_by, 0);
	next_gen(h, FLASH_TABLE_USERS, &clk);
	next_gen(h, FLASH_TABLE_USERS, &clk);       /* gen 2: bank 0 cleared */
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
	assert_int_equal(gi.bank[0].state, FLASH_BANK_CLEAR);
	clk += 3 * (int64_t)HOUR_S * SEC;
	assert_int_equal(flash_gen_advance(h, FLASH_TABLE_USERS, clk, &gi), FLASH_OK);
	assert_int_equal(gi.advanced, 1);
	assert_int_equal(gi.gen, 3);
	/* the add done again takes the entry and pins the bank it is in now */
	assert_int_equal(t_activity(h, 2, 1, 3, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
	assert_int_equal(gi.bank[0].pinned_by, 2);
}

/* ---- two processes, one request id, a generation change ------------------ */

#define RACE_KIDS 3
#define RACE_ROUNDS 24

struct race {
	char name[64];
	uint64_t id[RACE_ROUNDS];
	volatile uint32_t round;               /* the round the children may play */
	volatile uint32_t done[RACE_ROUNDS];   /* children finished with it */
	int32_t rc[RACE_KIDS][RACE_ROUNDS];
	uint64_t ono[RACE_KIDS][RACE_ROUNDS];
};

static int race_child(int i, void *arg)
{
	struct race *r = arg;
	flash_t *h;

	if (flash_open(r->name, 0, &h) != FLASH_OK)
		return 2;
	for (uint32_t k = 0; k < RACE_ROUNDS; k++) {
		struct flash_order_res res;

		while (__atomic_load_n(&r->round, __ATOMIC_ACQUIRE) < k + 1)
			sched_yield();
		memset(&res, 0, sizeof res);
		r->rc[i][k] = t_order(h, 1, 10, 77, 1, 0, r->id[k], &res);
		r->ono[i][k] = res.order_no;
		__atomic_add_fetch(&r->done[k], 1, __ATOMIC_RELEASE);
	}
	flash_close(h);
	return 0;
}

static void test_processes_racing_one_request_id_across_a_generation_change_make_one_order(void **state)
{
	struct flash_seg_opts o;
	struct race *r = t_shared_alloc(sizeof *r);
	flash_t *h;
	pid_t pids[RACE_KIDS];
	struct t_recs recs = { 0 };
	int64_t clk = t_now_ns();
	int go;

	t_opts_small(&o);
	h = windowed(r->name, sizeof r->name, &o, HOUR_S, HOUR_S);
	assert_int_equal(t_activity(h, 1, 64, 1, FLASH_SCOPE_DAY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1000, 1), FLASH_OK);
	for (int k = 0; k < RACE_ROUNDS; k++)
		r->id[k] = flash_request_id_new();
	assert_int_equal(t_fork_start(RACE_KIDS, race_child, r, pids, &go), 0);
	t_fork_go(go);
	for (uint32_t k = 0; k < RACE_ROUNDS; k++) {
		struct flash_gen_info gi;
		uint64_t cleared;

		/* the children order while the tables move on under them */
		__atomic_store_n(&r->round, k + 1, __ATOMIC_RELEASE);
		clk += 3 * (int64_t)HOUR_S * SEC;
		assert_int_equal(flash_gen_advance(h, FLASH_TABLE_REQUESTS, clk, &gi), FLASH_OK);
		assert_int_equal(flash_gen_advance(h, FLASH_TABLE_USERS, clk, &gi), FLASH_OK);
		while (__atomic_load_n(&r->done[k], __ATOMIC_ACQUIRE) < RACE_KIDS)
			sched_yield();
		assert_int_equal(flash_gen_clear(h, FLASH_TABLE_REQUESTS, &cleared), FLASH_OK);
		assert_int_equal(flash_gen_clear(h, FLASH_TABLE_USERS, &cleared), FLASH_OK);
	}
	assert_int_equal(t_wait_all(RACE_KIDS, pids), 0);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (uint32_t k = 0; k < RACE_ROUNDS; k++) {
		size_t orders = 0, oks = 0;
		uint64_t no = 0;

		for (size_t n = 0; n < recs.n; n++)
			if (recs.v[n].r.type == FLASH_REC_ORDER && recs.v[n].r.request_id == r->id[k]) {
				orders++;
				no = recs.v[n].r.order_no;
			}
		assert_int_equal(orders, 1);
		for (int i = 0; i < RACE_KIDS; i++) {
			if (r->rc[i][k] == FLASH_OK)
				oks++;
			else
				assert_int_equal(r->rc[i][k], FLASH_EDUPLICATE);
			assert_int_equal(r->ono[i][k], no);
		}
		assert_int_equal(oks, 1);
	}
	t_recs_free(&recs);
	t_shared_free(r, sizeof *r);
}

/* ---- replay: snapshot + records equal the live segment, bank by bank ----- */

static int rec_drop(void *arg, const struct flash_record *rec, uint64_t seq)
{
	(void)arg;
	return flash_durable_advance((flash_t *)arg, rec->slot, seq) != FLASH_OK;
}

/* The keys of every bank of table @p t, each entry (state kind, key) that is
 * not EMPTY, in table order: the two segments must agree entry by entry. */
static void assert_banks_equal(flash_t *a, flash_t *b, uint32_t t)
{
	struct flash_gen_info ga, gb;
	const struct fs_kent *ea = t == FS_KT_REQ ? a->req : a->user, *eb = t == FS_KT_REQ ? b->req : b->user;
	uint32_t n = t == FS_KT_REQ ? a->req_n : a->user_n;

	assert_int_equal(flash_gen_get(a, t, &ga), FLASH_OK);
	assert_int_equal(flash_gen_get(b, t, &gb), FLASH_OK);
	assert_int_equal(ga.gen, gb.gen);
	assert_int_equal(ga.gen_start_ns, gb.gen_start_ns);
	assert_int_equal(ga.reclaimed, gb.reclaimed);
	for (uint32_t k = 0; k < FLASH_GEN_BANKS; k++) {
		assert_int_equal(ga.bank[k].gen, gb.bank[k].gen);
		assert_int_equal(ga.bank[k].keys, gb.bank[k].keys);
		assert_int_equal(ga.bank[k].state, gb.bank[k].state);
	}
	assert_int_equal(n, t == FS_KT_REQ ? b->req_n : b->user_n);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(FS_KIND(ea[i].state), FS_KIND(eb[i].state));
		assert_memory_equal(ea[i].k, eb[i].k, sizeof ea[i].k);
	}
}

static void test_snapshot_and_records_rebuild_every_bank_as_live(void **state)
{
	char name[64], rname[64];
	flash_t *h = windowed(name, sizeof name, NULL, HOUR_S, HOUR_S), *r;
	int64_t clk = t_now_ns();
	struct t_recs recs = { 0 };
	const void *img;
	uint64_t len, user = 1;
	uint32_t dr;
	void *copy;

	assert_int_equal(t_activity(h, 1, 1, 3, FLASH_SCOPE_DAY, 0), FLASH_OK);
	assert_int_equal(t_activity(h, 2, 2, 3, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1000, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 2, 20, 1000, 2), FLASH_OK);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(t_order(h, 1, 10, user, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
		assert_int_equal(t_order(h, 2, 20, user++, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
	}
	next_gen(h, FLASH_TABLE_REQUESTS, &clk);
	/* the snapshot: the records so far consumed, the image copied */
	assert_int_equal(flash_ring_drain(h, rec_drop, h, UINT32_MAX, &dr), FLASH_OK);
	assert_int_equal(flash_image(h, &img, &len), FLASH_OK);
	copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, img, len);
	t_segname(rname, sizeof rname);
	assert_int_equal(flash_seg_restore(rname, NULL, copy, len), FLASH_OK);
	free(copy);
	/* more generations, clears (entries of every kind), orders in each */
	for (int g = 0; g < 4; g++) {
		for (int i = 0; i < 4; i++) {
			struct flash_order_res res;

			assert_int_equal(t_order(h, 1, 10, user, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
			assert_int_equal(t_order(h, 2, 20, user++, 1, 0, flash_request_id_new(), &res), FLASH_OK);
			if (i == 0)
				assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
		}
		next_gen(h, FLASH_TABLE_REQUESTS, &clk);
		if (g < 2)   /* then activity 2 pins bank 0: the user table stays */
			next_gen(h, FLASH_TABLE_USERS, &clk);
	}
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(flash_open(rname, 0, &r), FLASH_OK);
	t_track_handle(r);
	for (size_t i = 0; i < recs.n; i++)
		assert_int_equal(flash_replay(r, &recs.v[i].r), FLASH_OK);
	assert_banks_equal(h, r, FS_KT_REQ);
	assert_banks_equal(h, r, FS_KT_USER);
	{
		struct flash_gen_info gi;

		assert_int_equal(flash_gen_get(r, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
		assert_true(gi.reclaimed > 0);
	}
	t_recs_free(&recs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_one_bank_segment_has_no_generations_to_move, t_teardown),
		cmocka_unit_test_teardown(test_reclaim_set_only_on_a_fresh_segment_with_no_other_handle, t_teardown),
		cmocka_unit_test_teardown(test_request_id_new_carries_the_time_and_differs, t_teardown),
		cmocka_unit_test_teardown(test_request_ids_of_one_thread_never_repeat_even_within_one_millisecond, t_teardown),
		cmocka_unit_test_teardown(test_request_ids_after_fork_differ_from_the_parents, t_teardown),
		cmocka_unit_test_teardown(test_retry_inside_the_window_gets_its_first_outcome_across_generation_changes, t_teardown),
		cmocka_unit_test_teardown(test_expired_request_id_gets_ereq_expired_and_changes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_max_requests_8_takes_orders_for_many_generations_with_each_bank_at_most_8, t_teardown),
		cmocka_unit_test_teardown(test_per_day_limit_holds_on_its_day_across_a_generation_change_and_frees_the_next_day, t_teardown),
		cmocka_unit_test_teardown(test_per_activity_limit_holds_while_its_bank_stays_pinned_and_the_generation_waits, t_teardown),
		cmocka_unit_test_teardown(test_add_forgotten_in_a_freed_entry_pins_no_bank_and_the_generation_moves_on, t_teardown),
		cmocka_unit_test_teardown(test_processes_racing_one_request_id_across_a_generation_change_make_one_order, t_teardown),
		cmocka_unit_test_teardown(test_snapshot_and_records_rebuild_every_bank_as_live, t_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
