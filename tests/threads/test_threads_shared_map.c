/*
 * test_threads_shared_map.c -- all handles of a process share one mapping
 * of a segment (per way of attaching: writable, read-only), counted, and
 * mapped again after the last one closed.
 *
 * Why it matters: a writable mapping is pre-faulted, and a mapping per
 * handle made a process of 64 buyer threads fault in and keep 64 page
 * tables of the whole segment.  And ThreadSanitizer relates two accesses by
 * address: it checks the segment protocol between threads only when their
 * handles see the segment at one address.  The base address is read with
 * flash_image().
 */
#include "helpers.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const void *base_of(flash_t *h)
{
	const void *b = NULL;
	uint64_t len = 0;

	assert_int_equal(flash_image(h, &b, &len), FLASH_OK);
	assert_non_null(b);
	return b;
}

/* A handle belongs to the thread that opened it (FLASH_EWRONG_THREAD from
 * any other): the opener reads its slot and mapping for the test. */
struct opener {
	const char *name;
	flash_t *h;
	int rc;
	int slot;
	const void *base;
};

static void *open_main(void *arg)
{
	struct opener *o = arg;
	uint64_t len = 0;

	o->rc = flash_open(o->name, 0, &o->h);
	if (o->rc == FLASH_OK) {
		o->slot = flash_slot(o->h);
		if (flash_image(o->h, &o->base, &len) != FLASH_OK)
			o->base = NULL;
	}
	return NULL;
}

static void test_threads_handles_of_one_process_share_a_mapping(void **state)
{
	char name[64];
	flash_t *a = t_seg_new(NULL, name, sizeof name);
	struct opener o = { name, NULL, -1, -1, NULL };
	pthread_t tid;
	flash_t *r1 = NULL, *r2 = NULL;

	/* a second writable handle, opened by another thread */
	assert_int_equal(pthread_create(&tid, NULL, open_main, &o), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(o.rc, FLASH_OK);
	t_track_handle(o.h);
	assert_non_null(o.base);
	assert_true(flash_slot(a) != o.slot);   /* still two handles */
	assert_ptr_equal(base_of(a), o.base);

	/* read-only handles share theirs (a PROT_READ mapping of their own) */
	assert_int_equal(flash_open(name, FLASH_RDONLY, &r1), FLASH_OK);
	t_track_handle(r1);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &r2), FLASH_OK);
	t_track_handle(r2);
	assert_ptr_equal(base_of(r1), base_of(r2));
	assert_ptr_not_equal(base_of(r1), base_of(a));
}

static void test_threads_a_shared_mapping_outlives_each_handle_but_the_last(void **state)
{
	char name[64];
	flash_t *a = t_seg_new(NULL, name, sizeof name);
	flash_t *b = NULL, *c = NULL;
	struct flash_sku_info si;

	assert_int_equal(t_activity(a, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(a, 1, 10, 50, 1), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &b), FLASH_OK);
	/* closing the first handle leaves the mapping to the second */
	t_untrack_handle(a);
	assert_int_equal(flash_close(a), FLASH_OK);
	assert_int_equal(t_order(b, 1, 10, 7, 2, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_sku_get(b, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.available, 48);
	assert_int_equal(flash_close(b), FLASH_OK);
	/* all closed: a new handle maps it again and sees the same state */
	assert_int_equal(flash_open(name, 0, &c), FLASH_OK);
	t_track_handle(c);
	assert_int_equal(flash_sku_get(c, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.available, 48);
}

static void test_threads_a_new_segment_of_the_same_name_is_not_the_old_mapping(void **state)
{
	char name[64];
	flash_t *a = t_seg_new(NULL, name, sizeof name);
	flash_t *b = NULL;
	struct flash_sku_info si;

	assert_int_equal(t_activity(a, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(a, 1, 10, 50, 1), FLASH_OK);
	/* the name is removed and made again while a still maps the old object */
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &b), FLASH_OK);
	t_track_handle(b);
	assert_ptr_not_equal(base_of(a), base_of(b));
	assert_int_equal(flash_sku_get(b, 1, 10, &si), FLASH_ENOT_FOUND);
	assert_int_equal(flash_sku_get(a, 1, 10, &si), FLASH_OK);
}

/* The child's side: a handle on the inherited mapping (the same address
 * as the parent's), whose order lands in the one segment.  Exit 0 when so,
 * else the step that failed. */
static int child_orders_on_the_inherited_mapping(const char *name, const void *parent_base)
{
	const void *b = NULL;
	uint64_t len = 0;
	flash_t *h = NULL;

	if (flash_open(name, 0, &h) != FLASH_OK)
		return 10;
	if (flash_image(h, &b, &len) != FLASH_OK || b != parent_base)
		return 11;                      /* not the inherited mapping */
	if (t_order(h, 1, 10, 77, 1, 0, 0, NULL) != FLASH_OK)
		return 12;
	return flash_close(h) == FLASH_OK ? 0 : 13;
}

static void test_threads_a_forked_child_shares_the_inherited_mapping(void **state)
{
	char name[64];
	flash_t *a = t_seg_new(NULL, name, sizeof name);
	struct flash_sku_info si;
	const void *base = base_of(a);   /* a is the parent's: EFORK in the child */
	int status = -1;
	pid_t pid;

	assert_int_equal(t_activity(a, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(a, 1, 10, 50, 1), FLASH_OK);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_orders_on_the_inherited_mapping(name, base));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(flash_sku_get(a, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.available, 49);   /* the child's order */
}

#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_threads_handles_of_one_process_share_a_mapping),
		T(test_threads_a_shared_mapping_outlives_each_handle_but_the_last),
		T(test_threads_a_new_segment_of_the_same_name_is_not_the_old_mapping),
		T(test_threads_a_forked_child_shares_the_inherited_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
