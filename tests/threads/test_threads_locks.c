/*
 * test_threads_locks.c -- leased locks under real concurrency: every grant's
 * fence is strictly greater than every earlier grant of that name, and two
 * grants of one name never overlap.
 *
 * T threads, each with its own handle, take turns on two lock names as fast
 * as they can (acquire, hold, release; a refused acquire retries at once).
 * Each grant is logged as (fence, in, out): `in` is a ticket from one
 * process-wide counter taken after the acquire returned, `out` one taken
 * before the release is called.  After the threads are joined, the grants of
 * each name are sorted by fence; then, if fences are unique and increase in
 * grant order and holders are exclusive, each grant's `out` comes before the
 * next grant's `in`.  A grant that got an older fence after a newer grant was
 * released (or two holders at once) shows as a grant whose `in` precedes the
 * `out` of a grant with a smaller fence.  No timing is asserted: the tickets
 * order the events.
 *
 * Threads never call cmocka; the main thread asserts after joining.  In the
 * ThreadSanitizer build (tests/threads/tsan_tests.cmake) the program carries the
 * label "tsan" too.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT      4          /* threads */
#define ROUNDS  1500       /* grants per thread */
#define NNAMES  2

static const char *const lock_names[NNAMES] = { "hot-a", "hot-b" };

struct grant {
	uint64_t fence;
	uint64_t in, out;      /* tickets */
	int thread;
};

struct shared {
	const char *seg;
	pthread_barrier_t go;
	atomic_ullong ticket;
};

struct worker {
	struct shared *sh;
	int id;
	int err;               /* first unexpected rc, 0 if none */
	char what[64];
	int n[NNAMES];
	struct grant g[NNAMES][ROUNDS];
};

static void *locker(void *arg)
{
	struct worker *w = arg;
	uint64_t owner = 100 + (uint64_t)w->id;
	flash_t *h = NULL;
	int rc = flash_open(w->sh->seg, 0, &h);

	pthread_barrier_wait(&w->sh->go);
	if (rc != FLASH_OK) {
		w->err = rc;
		snprintf(w->what, sizeof w->what, "flash_open");
		return NULL;
	}
	for (int r = 0; r < ROUNDS * NNAMES && w->err == 0;) {
		int k = (r + w->id) % NNAMES;
		uint64_t fence = 0;
		struct grant *g;

		if (w->n[k] == ROUNDS) {
			r++;
			continue;
		}
		rc = flash_lock_acquire(h, lock_names[k], owner, 600000, &fence);
		if (rc == FLASH_ELOCKED)
			continue;
		if (rc != FLASH_OK) {
			w->err = rc;
			snprintf(w->what, sizeof w->what, "acquire %s", lock_names[k]);
			break;
		}
		g = &w->g[k][w->n[k]++];
		g->fence = fence;
		g->thread = w->id;
		g->in = atomic_fetch_add(&w->sh->ticket, 1);
		g->out = atomic_fetch_add(&w->sh->ticket, 1);
		if ((rc = flash_lock_release(h, lock_names[k], owner)) != FLASH_OK) {
			w->err = rc;
			snprintf(w->what, sizeof w->what, "release %s", lock_names[k]);
			break;
		}
		r++;
	}
	flash_close(h);
	return NULL;
}

static int by_fence(const void *a, const void *b)
{
	const struct grant *x = a, *y = b;

	return x->fence < y->fence ? -1 : x->fence > y->fence;
}

static void test_threads_lock_grants_ordered_by_fence_never_overlap(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct shared sh;
	struct worker *w = calloc(NT, sizeof *w);
	pthread_t th[NT];
	struct grant *all = calloc((size_t)NT * ROUNDS, sizeof *all);
	int bad = 0;

	assert_non_null(w);
	assert_non_null(all);
	memset(&sh, 0, sizeof sh);
	sh.seg = name;
	atomic_init(&sh.ticket, 1);
	assert_int_equal(pthread_barrier_init(&sh.go, NULL, NT), 0);
	for (int i = 0; i < NT; i++) {
		w[i].sh = &sh;
		w[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, locker, &w[i]), 0);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&sh.go);
	for (int i = 0; i < NT; i++) {
		if (w[i].err != 0)
			printf("  thread %d: %s: %s\n", i, w[i].what, flash_rcname(w[i].err));
		assert_int_equal(w[i].err, 0);
	}
	for (int k = 0; k < NNAMES; k++) {
		size_t n = 0;

		for (int i = 0; i < NT; i++) {
			assert_int_equal(w[i].n[k], ROUNDS);
			memcpy(all + n, w[i].g[k], ROUNDS * sizeof *all);
			n += ROUNDS;
		}
		qsort(all, n, sizeof *all, by_fence);
		assert_true(all[0].fence > 0);
		for (size_t i = 1; i < n; i++) {
			const struct grant *p = &all[i - 1], *q = &all[i];

			if (p->fence == q->fence || p->out >= q->in) {
				if (bad++ < 5)
					printf("  %s: grant fence %llu (thread %d, tickets %llu..%llu) and "
					       "fence %llu (thread %d, tickets %llu..%llu) overlap or are out "
					       "of order\n", lock_names[k], (unsigned long long)p->fence,
					       p->thread, (unsigned long long)p->in, (unsigned long long)p->out,
					       (unsigned long long)q->fence, q->thread,
					       (unsigned long long)q->in, (unsigned long long)q->out);
			}
		}
	}
	printf("  %d grants over %d names, %d out of fence order\n", NT * ROUNDS * NNAMES, NNAMES, bad);
	assert_int_equal(bad, 0);
	free(all);
	free(w);
	(void)h;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_threads_lock_grants_ordered_by_fence_never_overlap,
		                          t_teardown),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
