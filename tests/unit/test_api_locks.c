/*
 * test_api_locks.c -- leased locks: owner-only renew and release, fencing
 * tokens strictly increasing per name, lease expiry, a dead holder freed at
 * once, bad arguments and a full table.
 */
#include "helpers.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_lock_second_owner_gets_elocked_until_release(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f1 = 0, f2 = 0;
	struct flash_stats st;

	assert_int_equal(flash_lock_acquire(h, "stock:10", 111, 60000, &f1), FLASH_OK);
	assert_true(f1 > 0);
	f2 = 0xdead;
	assert_int_equal(flash_lock_acquire(h, "stock:10", 222, 60000, &f2), FLASH_ELOCKED);
	assert_int_equal(f2, 0xdead);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.locks, 1);
	assert_int_equal(flash_lock_release(h, "stock:10", 111), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "stock:10", 222, 60000, &f2), FLASH_OK);
	assert_true(f2 > f1);
}

static void test_lock_renew_and_release_only_by_the_holder(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *h2 = NULL;
	uint64_t f = 0, f2 = 0;

	assert_int_equal(flash_lock_acquire(h, "job", 111, 60000, &f), FLASH_OK);
	assert_int_equal(flash_lock_renew(h, "job", 222, 60000), FLASH_ENOT_OWNER);
	assert_int_equal(flash_lock_release(h, "job", 222), FLASH_ENOT_OWNER);
	/* the owner value decides, not the handle: another handle with the
	 * holder's value may renew, one without it may not release */
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	assert_int_equal(flash_lock_release(h2, "job", 333), FLASH_ENOT_OWNER);
	assert_int_equal(flash_lock_acquire(h2, "job", 333, 60000, &f2), FLASH_ELOCKED);
	assert_int_equal(flash_lock_renew(h, "job", 111, 60000), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "job", 111), FLASH_OK);
	/* released: nobody holds it any more */
	assert_int_equal(flash_lock_renew(h, "job", 111, 60000), FLASH_ENOT_OWNER);
	assert_int_equal(flash_lock_release(h, "job", 111), FLASH_ENOT_OWNER);
	assert_int_equal(flash_lock_acquire(h2, "job", 333, 60000, &f2), FLASH_OK);
	assert_true(f2 > f);
}

static void test_lock_unknown_name_gives_enot_found(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	assert_int_equal(flash_lock_renew(h, "never", 1, 1000), FLASH_ENOT_FOUND);
	assert_int_equal(flash_lock_release(h, "never", 1), FLASH_ENOT_FOUND);
}

static void test_lock_fence_strictly_increases_per_name(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t last = 0, f = 0, other = 0;

	for (int i = 0; i < 20; i++) {
		uint64_t owner = 1000 + (uint64_t)i;

		assert_int_equal(flash_lock_acquire(h, "fenced", owner, 60000, &f), FLASH_OK);
		assert_true(f > last);
		last = f;
		/* grants of another name do not disturb this one's order */
		assert_int_equal(flash_lock_acquire(h, "other", owner, 60000, &other), FLASH_OK);
		assert_int_equal(flash_lock_release(h, "other", owner), FLASH_OK);
		assert_int_equal(flash_lock_release(h, "fenced", owner), FLASH_OK);
	}
}

static void test_lock_lease_expiry_lets_another_owner_in(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f1 = 0, f2 = 0;

	assert_int_equal(flash_lock_acquire(h, "lease", 111, 30, &f1), FLASH_OK);
	t_sleep_ms(80);
	assert_int_equal(flash_lock_acquire(h, "lease", 222, 60000, &f2), FLASH_OK);
	assert_true(f2 > f1);
	/* the stale holder can neither renew nor release */
	assert_int_equal(flash_lock_renew(h, "lease", 111, 60000), FLASH_ENOT_OWNER);
	assert_int_equal(flash_lock_release(h, "lease", 111), FLASH_ENOT_OWNER);
	assert_int_equal(flash_lock_renew(h, "lease", 222, 60000), FLASH_OK);
}

static void test_lock_renew_after_own_lease_expired_gives_enot_owner(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f = 0;

	assert_int_equal(flash_lock_acquire(h, "late", 111, 30, &f), FLASH_OK);
	t_sleep_ms(80);
	assert_int_equal(flash_lock_renew(h, "late", 111, 60000), FLASH_ENOT_OWNER);
}

static void test_lock_renew_extends_the_lease(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f = 0, f2 = 0;

	assert_int_equal(flash_lock_acquire(h, "renewed", 111, 500, &f), FLASH_OK);
	assert_int_equal(flash_lock_renew(h, "renewed", 111, 60000), FLASH_OK);
	t_sleep_ms(600);   /* past the first lease, well inside the renewed one */
	assert_int_equal(flash_lock_acquire(h, "renewed", 222, 60000, &f2), FLASH_ELOCKED);
	assert_int_equal(flash_lock_release(h, "renewed", 111), FLASH_OK);
}

static int child_takes_lock_and_dies(const char *name)
{
	flash_t *h = NULL;
	uint64_t f = 0;

	if (flash_open(name, 0, &h) != FLASH_OK)
		return 1;
	if (flash_lock_acquire(h, "crash", 999, 600000, &f) != FLASH_OK)
		return 2;
	return 0;   /* _exit without close: the holder is dead */
}

static void test_lock_held_by_a_dead_process_is_free_at_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f = 0, f0 = 0;
	pid_t pid;
	int st = 0;

	assert_int_equal(flash_lock_acquire(h, "crash", 5, 60000, &f0), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "crash", 5), FLASH_OK);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_takes_lock_and_dies(name));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* the lease has ten minutes left, yet the lock is free now */
	assert_int_equal(flash_lock_acquire(h, "crash", 111, 60000, &f), FLASH_OK);
	assert_true(f > f0 + 1);   /* after the parent's grant and the child's */
}

static void test_lock_held_by_a_killed_process_is_free_at_once(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t f = 0;
	int p[2];
	char c = 0;
	pid_t pid;
	int st = 0;

	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		flash_t *ch = NULL;
		uint64_t cf = 0;

		close(p[0]);
		if (flash_open(name, 0, &ch) == FLASH_OK &&
		    flash_lock_acquire(ch, "killed", 999, 600000, &cf) == FLASH_OK)
			c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(3);
		pause();
		_exit(4);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(c, 1);
	assert_int_equal(flash_lock_acquire(h, "killed", 111, 60000, &f), FLASH_ELOCKED);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(flash_lock_acquire(h, "killed", 111, 60000, &f), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "killed", 111), FLASH_OK);
}

static void test_lock_rejects_bad_arguments(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char n47[48], n48[49];
	uint64_t f = 0;
	struct t_snap before;

	memset(n47, 'x', 47);
	n47[47] = 0;
	memset(n48, 'x', 48);
	n48[48] = 0;
	t_snap_take(h, &before);
	assert_int_equal(flash_lock_acquire(NULL, "a", 1, 1000, &f), FLASH_EINVAL);
	assert_int_equal(flash_lock_acquire(h, NULL, 1, 1000, &f), FLASH_EINVAL);
	assert_int_equal(flash_lock_acquire(h, "", 1, 1000, &f), FLASH_EINVAL);
	assert_int_equal(flash_lock_acquire(h, n48, 1, 1000, &f), FLASH_EINVAL);
	assert_int_equal(flash_lock_acquire(h, "a", 0, 1000, &f), FLASH_EINVAL);
	assert_int_equal(flash_lock_acquire(h, "a", 1, 0, &f), FLASH_EINVAL);
	assert_int_equal(flash_lock_renew(NULL, "a", 1, 1000), FLASH_EINVAL);
	assert_int_equal(flash_lock_renew(h, NULL, 1, 1000), FLASH_EINVAL);
	assert_int_equal(flash_lock_renew(h, "", 1, 1000), FLASH_EINVAL);
	assert_int_equal(flash_lock_renew(h, n48, 1, 1000), FLASH_EINVAL);
	assert_int_equal(flash_lock_renew(h, "a", 0, 1000), FLASH_EINVAL);
	assert_int_equal(flash_lock_renew(h, "a", 1, 0), FLASH_EINVAL);
	assert_int_equal(flash_lock_release(NULL, "a", 1), FLASH_EINVAL);
	assert_int_equal(flash_lock_release(h, NULL, 1), FLASH_EINVAL);
	assert_int_equal(flash_lock_release(h, "", 1), FLASH_EINVAL);
	assert_int_equal(flash_lock_release(h, n48, 1), FLASH_EINVAL);
	assert_int_equal(flash_lock_release(h, "a", 0), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(f, 0);
	/* 47 characters is the longest name */
	assert_int_equal(flash_lock_acquire(h, n47, 1, 1000, &f), FLASH_OK);
	assert_int_equal(flash_lock_release(h, n47, 1), FLASH_OK);
	/* names differing only past 47 characters are refused, not confused */
	n48[47] = 'y';
	assert_int_equal(flash_lock_acquire(h, n48, 2, 1000, &f), FLASH_EINVAL);
}

static void test_lock_table_full_gives_efull(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct t_snap before;
	uint64_t f = 0;

	t_opts_small(&o);
	o.max_locks = 2;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(flash_lock_acquire(h, "a", 1, 60000, &f), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "b", 1, 60000, &f), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.locks, 2);
	assert_int_equal(before.st.locks_cap, 2);
	assert_int_equal(flash_lock_acquire(h, "c", 1, 60000, &f), FLASH_EFULL);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* known names are still served */
	assert_int_equal(flash_lock_acquire(h, "a", 2, 60000, &f), FLASH_ELOCKED);
	assert_int_equal(flash_lock_release(h, "a", 1), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "a", 2, 60000, &f), FLASH_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_lock_second_owner_gets_elocked_until_release),
		T(test_lock_renew_and_release_only_by_the_holder),
		T(test_lock_unknown_name_gives_enot_found),
		T(test_lock_fence_strictly_increases_per_name),
		T(test_lock_lease_expiry_lets_another_owner_in),
		T(test_lock_renew_after_own_lease_expired_gives_enot_owner),
		T(test_lock_renew_extends_the_lease),
		T(test_lock_held_by_a_dead_process_is_free_at_once),
		T(test_lock_held_by_a_killed_process_is_free_at_once),
		T(test_lock_rejects_bad_arguments),
		T(test_lock_table_full_gives_efull),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
