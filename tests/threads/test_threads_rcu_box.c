/*
 * test_threads_rcu_box.c -- persist/daemon/rcu_box.c: a value published with RCU
 * while readers copy it out.
 *
 * The writer publishes versions 1..VERSIONS of a 49-word value whose every
 * word is the version; readers copy it out meanwhile.  A reader that got
 * half of one snapshot and half of another would see two versions in one
 * copy; one that read a snapshot already freed would see garbage (and the
 * ASan build reports the use after free).  In the ThreadSanitizer build
 * (label tsan) the publication and the grace period are checked for data
 * races too.  Threads never call cmocka: each fills its own block and the
 * main thread asserts after joining.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rcu_box.h"

#define READERS  3
#define VERSIONS 100000u
#define WORDS    49         /* 392 bytes: about a struct serve_stats */

struct value {
	uint64_t w[WORDS];
};

struct reader {
	rbox_t  *box;
	int     *done;          /* atomic: the writer published the last version */
	int     *live;          /* atomic: readers that saw the value change twice */
	uint64_t reads;
	uint64_t torn;          /* copies with two versions in them */
	uint64_t backwards;     /* copies older than the one read before */
	uint64_t changes;       /* copies newer than the one before */
	uint64_t last;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct value v;
	for (;;) {
		int done = __atomic_load_n(r->done, __ATOMIC_ACQUIRE);
		rbox_read(r->box, &v);
		r->reads++;
		for (int i = 1; i < WORDS; i++)
			if (v.w[i] != v.w[0]) {
				r->torn++;
				break;
			}
		if (v.w[0] < r->last)
			r->backwards++;
		else if (v.w[0] > r->last && ++r->changes == 2)
			__atomic_fetch_add(r->live, 1, __ATOMIC_RELEASE);
		r->last = v.w[0];
		if (done)
			break;
	}
	return NULL;
}

static void test_readers_see_whole_snapshots_in_order_while_the_writer_publishes(void **state)
{
	(void)state;
	rbox_t *b;
	assert_int_equal(rbox_new(sizeof(struct value), &b), 0);
	struct value v;
	rbox_read(b, &v);
	for (int i = 0; i < WORDS; i++)
		assert_int_equal(v.w[i], 0);   /* a new box holds zeros */

	int done = 0, live = 0;
	struct reader rd[READERS];
	pthread_t th[READERS];
	for (int i = 0; i < READERS; i++) {
		rd[i] = (struct reader){ .box = b, .done = &done, .live = &live };
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &rd[i]), 0);
	}
	/* at least VERSIONS, and on until every reader has seen the value
	 * change while it is being published (however the threads are run) */
	uint64_t ver = 0;
	while (ver < VERSIONS || __atomic_load_n(&live, __ATOMIC_ACQUIRE) < READERS) {
		ver++;
		for (int i = 0; i < WORDS; i++)
			v.w[i] = ver;
		assert_int_equal(rbox_publish(b, &v), 0);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(rd[i].torn, 0);
		assert_int_equal(rd[i].backwards, 0);
		/* read after the last publish: the last version */
		assert_int_equal(rd[i].last, ver);
		assert_true(rd[i].changes >= 2);
	}
	rbox_read(b, &v);
	assert_int_equal(v.w[WORDS - 1], ver);
	rbox_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers_see_whole_snapshots_in_order_while_the_writer_publishes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
