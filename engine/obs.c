/*
 * obs.c -- observation: the clock that times the public calls (the TSC
 * calibrated once per segment), and the reader that sums every slot's
 * histograms and result counts (flash_obs_get).  The writers are the
 * inline fs_obs_end() and fs_hist_add() of fs.h, section 5.
 */
#include <time.h>

#include "fs.h"

uint64_t fs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One (ns, ticks) pair: the ticks read between two clock reads, paired
 * with their midpoint, so the pair's error is half the gap between them. */
static void clock_pair(uint64_t *ns, uint64_t *ticks)
{
	uint64_t a = fs_mono_ns();

	*ticks = fs_ticks();
	*ns = a + (fs_mono_ns() - a) / 2;
}

/*
 * ns per fs_ticks() tick, times 2^32.  Two (CLOCK_MONOTONIC, TSC) pairs 2 ms
 * apart (asleep in between: no CPU burnt): each pair is exact to a few tens
 * of ns, so the ratio is good to about 1e-5 -- far below a histogram
 * bucket's width (a factor of 2).  The TSC runs at a constant rate on every
 * CPU of a machine with constant_tsc/nonstop_tsc (any x86-64 of the last
 * decade), so one figure serves every process that attaches.  Runs at
 * flash_seg_create() and flash_seg_restore() only, and measures once per
 * process: a process that makes many segments (the crash enumeration makes
 * one per kill, some 25,000) slept 2 ms for each.  Without a TSC (not
 * x86-64) ticks are ns already: 2^32.
 */
uint64_t fs_tsc_calibrate(void)
{
#if defined(__x86_64__)
	static uint64_t mult;          /* this process's figure, 0: not yet */
	struct timespec d = { 0, 2000000 };
	uint64_t n0, t0, n1, t1, m;

	if ((m = ck_pr_load_64(&mult)) != 0)
		return m;
	clock_pair(&n0, &t0);
	while (nanosleep(&d, &d) != 0)
		;
	clock_pair(&n1, &t1);
	if (t1 <= t0 || n1 <= n0)
		return 1ull << 32;     /* a clock went backwards: say 1 GHz, never 0; not kept */
	m = (uint64_t)((((unsigned __int128)(n1 - n0)) << 32) / (t1 - t0));
	ck_pr_store_64(&mult, m);      /* two first callers at once: either figure */
	return m;
#else
	return 1ull << 32;
#endif
}

int flash_obs_get(flash_t *h, struct flash_obs *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	if (!h->rdonly)
		fs_obs_flush(h);   /* this handle's own last call counts too */
	memset(out, 0, sizeof(*out));
	/* relaxed loads, each on its own: each word has one writer (its
	 * slot's handle), and a view a few increments old is all a reader
	 * of statistics needs */
	for (uint32_t i = 0; i < h->obs_cap; i++) {
		struct fs_obs *o = &h->obs[i];

		for (unsigned t = 0; t < FLASH_TIMES; t++) {
			for (unsigned b = 0; b < FLASH_OBS_BUCKETS; b++) {
				uint64_t v = ck_pr_load_64(&o->time[t].bucket[b]);

				out->time[t].bucket[b] += v;
				out->time[t].count += v;
			}
			out->time[t].sum_ns += ck_pr_load_64(&o->time[t].sum_ns);
		}
		for (unsigned op = 0; op < FLASH_OP_COUNT; op++)
			for (unsigned c = 0; c < FLASH_OBS_CODES; c++)
				out->results[op][c] += ck_pr_load_64(&o->result[op][c]);
	}
	return FLASH_OK;
}
