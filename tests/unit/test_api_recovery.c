/*
 * test_api_recovery.c -- dead handles and corrupt indexes.
 *
 * A child that dies without closing (normal _exit, or kill -9 in the middle
 * of a tight order loop) leaves its slot and maybe an operation in flight;
 * flash_recover() (and every flash_open) must finish it so that the order
 * table, the records and the stock agree, and every user whose order was
 * rolled back can buy again.  An index inside the segment that points out of
 * bounds must give FLASH_ECORRUPT and change nothing.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"   /* region table and struct layouts, for corruption */

/* ---- recovery ----------------------------------------------------------- */

static void test_recover_without_dead_handles_recovers_nothing(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *h2 = NULL;
	uint32_t n = 99;
	struct t_snap before;

	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	t_snap_take(h, &before);
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 0);
	assert_int_equal(flash_recover(h, NULL), FLASH_OK);
	assert_int_equal(flash_recover(NULL, &n), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(before.st.recoveries, 0);
}

static int child_orders_then_exits(const char *name, uint64_t first_user, int n)
{
	flash_t *h = NULL;

	if (flash_open(name, 0, &h) != FLASH_OK)
		return 1;
	for (int i = 0; i < n; i++)
		if (t_order(h, 1, 10, first_user + (uint64_t)i, 1, 0, 0, NULL) != FLASH_OK)
			return 2;
	return 0;   /* no close */
}

static void test_child_exiting_without_close_is_recovered_once_and_keeps_its_orders(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_stats st;
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	uint32_t n = 0;
	pid_t pid;
	int status = 0;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_orders_then_exits(name, 1000, 3));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 2);   /* the dead handle still holds its slot */
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.recoveries, 1);
	assert_int_equal(st.orders, 3);
	/* its committed orders stay, with their records */
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, &lg), 0);
	assert_int_equal(lg.active_orders, 3);
	assert_int_equal(t_available(h, 1, 10), 97);
	for (uint64_t u = 1000; u < 1003; u++)
		assert_int_equal(t_order(h, 1, 10, u, 1, 0, 0, NULL), FLASH_ELIMIT);
	t_recs_free(&recs);
}

/* A child that orders users first_user.. in a tight loop and tells the parent
 * (one byte on @p fd) when it is well under way.  With @p mix it also
 * cancels every other order and restocks +1 / -1 now and then, so that a
 * kill can land inside a cancel or a restock too. */
static void child_order_loop(const char *name, uint32_t act, uint64_t first_user, int n, int fd,
                             int mix)
{
	flash_t *h = NULL;
	char c = 'R';

	if (flash_open(name, 0, &h) != FLASH_OK)
		_exit(1);
	for (int i = 0; i < n; i++) {
		struct flash_order_res res;
		int rc = t_order(h, act, 10, first_user + (uint64_t)i, 1, 0, 0, &res);

		if (rc != FLASH_OK)
			_exit(2);
		if (i == 100 && write(fd, &c, 1) != 1)
			_exit(3);
		if (!mix)
			continue;
		if (i % 2 == 1 && flash_cancel(h, res.order_no, NULL) != FLASH_OK)
			_exit(4);
		if (i % 10 == 0 && flash_restock(h, act, 10, 1) != FLASH_OK)
			_exit(5);
		if (i % 10 == 5 && flash_restock(h, act, 10, -1) != FLASH_OK)
			_exit(6);
	}
	for (;;)
		pause();
}

#define LOOP_USERS 5000

/*
 * Rounds of: a child runs the loop above, is killed -9 after a varying
 * delay, the parent recovers it and checks the ledger (stock, records, limit
 * slots), then offers every user the child reached one more order: a user
 * holding an active order gets ELIMIT, every other gets OK (quota that a
 * rolled-back order or a cancel freed is free exactly once).
 */
static void kill_rounds(int mix)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_recs recs = { 0 };
	const unsigned delays_us[] = { 0, 50, 100, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 6000 };
	const int rounds = (int)(sizeof delays_us / sizeof delays_us[0]);
	uint8_t *had = calloc(LOOP_USERS + 8, 1);

	assert_non_null(had);
	alarm(120);   /* an operation left waiting on a dead one fails, not hangs */
	t_opts_small(&o);
	o.max_activities = 16;
	o.max_skus = 16;
	o.max_orders = 1u << 17;
	o.max_users = 1u << 17;
	o.ring_records = 16384;
	h = t_seg_new(&o, name, sizeof name);

	for (int round = 0; round < rounds; round++) {
		uint32_t act = (uint32_t)round + 1, n = 0;
		uint64_t base = 1000000ull * (uint64_t)(round + 1), reach = 0;
		struct flash_stats st0, st;
		struct t_ledger lg;
		int p[2], status = 0;
		char c;
		pid_t pid;

		assert_int_equal(t_activity(h, act, 1, 1, FLASH_SCOPE_ACTIVITY,
		                            mix ? FLASH_ACT_CANCEL_RETURNS_QUOTA : 0), FLASH_OK);
		assert_int_equal(flash_sku_add(h, act, 10, 1000000, 4), FLASH_OK);
		assert_int_equal(flash_stats_get(h, &st0), FLASH_OK);
		assert_int_equal(pipe(p), 0);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(p[0]);
			child_order_loop(name, act, base, LOOP_USERS, p[1], mix);
		}
		close(p[1]);
		assert_int_equal(read(p[0], &c, 1), 1);
		close(p[0]);
		if (delays_us[round])
			usleep(delays_us[round]);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));

		assert_int_equal(flash_recover(h, &n), FLASH_OK);
		assert_int_equal(n, 1);
		assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
		assert_int_equal(st.recoveries, st0.recoveries + 1);
		assert_int_equal(st.procs, 1);

		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		assert_int_equal(t_ledger_check(h, &recs, act, 10, 1, &lg), 0);
		assert_true(lg.active_orders + lg.cancelled_orders >= 101);
		print_message("      round %d: %llu orders kept, %llu cancelled, %llu rolled back, "
		              "%llu forward\n", round, (unsigned long long)lg.active_orders,
		              (unsigned long long)lg.cancelled_orders,
		              (unsigned long long)(st.rolled_back - st0.rolled_back),
		              (unsigned long long)(st.rolled_forward - st0.rolled_forward));

		memset(had, 0, LOOP_USERS + 8);
		for (uint64_t no = 1; no <= flash_orders_max(h); no++) {
			struct flash_order_info oi;

			assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
			if (oi.state == FLASH_ORDER_NONE || oi.activity_id != act)
				continue;
			assert_true(oi.user_id >= base && oi.user_id < base + LOOP_USERS);
			if (oi.user_id - base + 1 > reach)
				reach = oi.user_id - base + 1;
			if (oi.state == FLASH_ORDER_ACTIVE)
				had[oi.user_id - base] = 1;
		}
		for (uint64_t i = 0; i < reach + 2 && i < LOOP_USERS; i++) {
			int rc = t_order(h, act, 10, base + i, 1, 0, 0, NULL);

			assert_int_equal(rc, had[i] ? FLASH_ELIMIT : FLASH_OK);
		}
		assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
		assert_int_equal(t_ledger_check(h, &recs, act, 10, 1, NULL), 0);
	}
	alarm(0);
	free(had);
	t_recs_free(&recs);
}

static void test_kill9_in_order_loop_then_recover_keeps_every_invariant(void **state)
{
	kill_rounds(0);
}

static void test_kill9_among_orders_cancels_and_restocks_then_recover_keeps_every_invariant(void **state)
{
	kill_rounds(1);
}

static void test_open_recovers_a_killed_handle(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *h2 = NULL;
	struct flash_stats st;
	struct t_recs recs = { 0 };
	int p[2], status = 0;
	char c;
	pid_t pid;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100000, 1), FLASH_OK);
	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child_order_loop(name, 1, 1, 1000, p[1], 0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.recoveries, 1);
	assert_int_equal(st.procs, 2);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, NULL), 0);
	t_recs_free(&recs);
}

static void test_slot_of_a_dead_handle_is_reused_and_its_record_seq_continues(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h, *h2 = NULL;
	struct t_recs recs = { 0 };
	pid_t pid;
	int status = 0, dead_slot = -1;
	uint32_t n = 0;

	t_opts_small(&o);
	o.max_procs = 2;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_orders_then_exits(name, 1, 5));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	for (uint64_t u = 10; u < 13; u++)
		assert_int_equal(t_order(h2, 1, 10, u, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER && recs.v[i].r.user_id == 1)
			dead_slot = recs.v[i].r.slot;
	assert_int_equal(dead_slot, flash_slot(h2));
	/* 5 records from the dead handle, then 3 from the new one: seqs 1..8 */
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, NULL), 0);
	for (size_t i = 0; i < recs.n; i++)
		if (recs.v[i].r.type == FLASH_REC_ORDER && recs.v[i].r.user_id == 12)
			assert_int_equal(recs.v[i].seq, 8);
	t_recs_free(&recs);
}

/* ---- corrupt indexes ---------------------------------------------------- */

static int shm_rw(const char *name)
{
	char path[128];
	int fd;

	t_shm_path(name, path, sizeof path);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	return fd;
}

static void read_fixed(int fd, struct fs_hdr_fixed *fx)
{
	assert_int_equal(pread(fd, fx, sizeof *fx, 0), (ssize_t)sizeof *fx);
}

static void test_order_with_out_of_bounds_sku_index_gives_ecorrupt_on_cancel(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_order_res res;
	struct flash_order_info oi;
	struct fs_hdr_fixed fx;
	struct t_snap before;
	uint32_t bad = 0xfffffff0u, units = 0;
	off_t off;
	int fd;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, &res), FLASH_OK);
	fd = shm_rw(name);
	read_fixed(fd, &fx);
	assert_int_equal(fx.region[FS_R_ORDER].elem_size, sizeof(struct fs_order));
	off = (off_t)(fx.region[FS_R_ORDER].off + (res.order_no - 1) * sizeof(struct fs_order) +
	              offsetof(struct fs_order, sku_idx));
	assert_int_equal(pwrite(fd, &bad, sizeof bad, off), (ssize_t)sizeof bad);
	t_snap_take(h, &before);
	assert_int_equal(flash_cancel(h, res.order_no, &units), FLASH_ECORRUPT);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(units, 0);
	assert_int_equal(flash_order_get(h, res.order_no, &oi), FLASH_OK);
	assert_int_equal(oi.state, FLASH_ORDER_ACTIVE);
	close(fd);
}

static void test_sku_with_out_of_bounds_shard_index_gives_ecorrupt(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct fs_hdr_fixed fx;
	struct flash_sku_info si;
	struct fs_sku sk;
	struct t_snap before;
	uint32_t bad = 0x7ffffff0u;
	off_t base = -1;
	int fd;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 2), FLASH_OK);
	t_snap_take(h, &before);
	fd = shm_rw(name);
	read_fixed(fd, &fx);
	assert_int_equal(fx.region[FS_R_SKU].elem_size, sizeof(struct fs_sku));
	for (uint32_t i = 0; i < fx.region[FS_R_SKU].count; i++) {
		off_t off = (off_t)(fx.region[FS_R_SKU].off + i * sizeof(struct fs_sku));

		assert_int_equal(pread(fd, &sk, sizeof sk, off), (ssize_t)sizeof sk);
		if (sk.activity_id == 1 && sk.sku_id == 10) {
			base = off;
			break;
		}
	}
	assert_true(base >= 0);
	assert_int_equal(pwrite(fd, &bad, sizeof bad, base + (off_t)offsetof(struct fs_sku, shard0)),
	                 (ssize_t)sizeof bad);
	close(fd);
	assert_int_equal(flash_restock(h, 1, 10, 5), FLASH_ECORRUPT);
	assert_int_equal(flash_restock(h, 1, 10, -5), FLASH_ECORRUPT);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_ECORRUPT);
	assert_int_equal(t_order(h, 1, 10, 5, 1, 0, 0, NULL), FLASH_ECORRUPT);
	assert_int_equal(flash_orders_max(h), before.orders_max);
	/* the user's quota was not kept by the failed order */
	{
		struct flash_stats st;

		assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
		assert_int_equal(st.orders, 0);
		assert_int_equal(st.users, before.st.users);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_recover_without_dead_handles_recovers_nothing),
		T(test_child_exiting_without_close_is_recovered_once_and_keeps_its_orders),
		T(test_kill9_in_order_loop_then_recover_keeps_every_invariant),
		T(test_kill9_among_orders_cancels_and_restocks_then_recover_keeps_every_invariant),
		T(test_open_recovers_a_killed_handle),
		T(test_slot_of_a_dead_handle_is_reused_and_its_record_seq_continues),
		T(test_order_with_out_of_bounds_sku_index_gives_ecorrupt_on_cancel),
		T(test_sku_with_out_of_bounds_shard_index_gives_ecorrupt),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
