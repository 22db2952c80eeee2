/*
 * test_threads_metrics_publish.c -- the daemon's counters as the metrics
 * thread serves them (persist/daemon/metrics.c over persist/daemon/rcu_box.c).
 *
 * A writer publishes struct serve_stats rounds as the daemon does, each
 * with records, rounds, commits and skipped all equal to the round number;
 * scrapers render the exposition meanwhile.  A scrape that mixed two rounds
 * would print two different numbers in one exposition.  In the
 * ThreadSanitizer build (label tsan) the hand-off is checked for data races
 * too.  Threads never call cmocka: each fills its own block and the main
 * thread asserts after joining.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "metrics.h"
#include "serve.h"
#include "wal.h"

#define SCRAPERS 2
#define ROUNDS   20000u

struct scraper {
	metrics_t *m;
	int      *live;       /* atomic: scrapers that saw the figures move twice */
	int      *done;       /* atomic */
	uint64_t  scrapes, mixed, backwards, missing, changes, last;
};

/* The value of metric @p name in @p text, or UINT64_MAX. */
static uint64_t metric(const char *text, const char *name)
{
	char key[96];
	snprintf(key, sizeof key, "\n%s ", name);
	const char *p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

static void *scraper_main(void *arg)
{
	struct scraper *s = arg;
	for (;;) {
		int done = __atomic_load_n(s->done, __ATOMIC_ACQUIRE);
		char *t = metrics_render(s->m);
		if (t == NULL) {
			s->missing++;
			break;
		}
		uint64_t rec = metric(t, "flashstock_serve_records_total");
		uint64_t rounds = metric(t, "flashstock_serve_rounds_total");
		uint64_t skipped = metric(t, "flashstock_serve_skipped_total");
		free(t);
		s->scrapes++;
		if (rec == UINT64_MAX || rounds == UINT64_MAX || skipped == UINT64_MAX)
			s->missing++;
		else if (rec != rounds || rec != skipped)
			s->mixed++;
		else if (rec < s->last)
			s->backwards++;
		else if (rec > s->last && ++s->changes == 2)
			__atomic_fetch_add(s->live, 1, __ATOMIC_RELEASE);
		if (rec != UINT64_MAX)
			s->last = rec;
		if (done)
			break;
	}
	return NULL;
}

static void test_scrapes_serve_one_whole_round_while_the_daemon_publishes(void **state)
{
	(void)state;
	char dir[] = "/tmp/fs-metrics-pub-XXXXXX", seg[64];
	assert_non_null(mkdtemp(dir));
	snprintf(seg, sizeof seg, "/fs-metrics-pub-none-%d", (int)getpid());   /* no segment: segment_up 0 */
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	metrics_t *m;
	char err[256];
	assert_int_equal(metrics_start("127.0.0.1:0", seg, w, NULL, &m, NULL, err, sizeof err), 0);

	int live = 0, done = 0;
	struct scraper sc[SCRAPERS];
	pthread_t th[SCRAPERS];
	for (int i = 0; i < SCRAPERS; i++) {
		sc[i] = (struct scraper){ .m = m, .live = &live, .done = &done };
		assert_int_equal(pthread_create(&th[i], NULL, scraper_main, &sc[i]), 0);
	}
	struct serve_stats st;
	memset(&st, 0, sizeof st);
	uint64_t r = 0;
	/* at least ROUNDS, and on until every scraper has seen the figures
	 * move while they are published (however the threads are run) */
	while (r < ROUNDS || __atomic_load_n(&live, __ATOMIC_ACQUIRE) < SCRAPERS) {
		r++;
		st.records = st.rounds = st.commits = st.skipped = r;
		metrics_publish(m, &st);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < SCRAPERS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(sc[i].missing, 0);
		assert_int_equal(sc[i].mixed, 0);
		assert_int_equal(sc[i].backwards, 0);
		assert_int_equal(sc[i].last, r);   /* scraped after the last publish */
	}
	metrics_stop(m);
	assert_int_equal(wal_close(w), FLASH_OK);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrapes_serve_one_whole_round_while_the_daemon_publishes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
