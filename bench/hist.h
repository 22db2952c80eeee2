/*
 * hist.h -- log-linear latency histogram for the bench.
 *
 * Values (nanoseconds) fall into fixed buckets: every power-of-two range
 * [2^e, 2^(e+1)) is split into BENCH_HIST_SUB linear sub-buckets, and values
 * below 2*BENCH_HIST_SUB get a bucket each.  The relative error of any
 * reported value is therefore below 1/BENCH_HIST_SUB (1.6%), over the whole
 * range 0 .. 2^BENCH_HIST_MAX_EXP ns (about 36 minutes), in a fixed 18 KiB.
 *
 * Concurrency contract: one writer per histogram.  bench_hist_record() uses
 * no lock and no atomic instruction; each thread records into its own
 * histogram, which may live in a MAP_SHARED mapping made before fork() so
 * that the parent merges every process's histograms after waitpid() (the
 * wait orders the child's stores before the parent's loads).
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>

#define BENCH_HIST_SUB_BITS 6u
#define BENCH_HIST_SUB      (1u << BENCH_HIST_SUB_BITS)      /* 64 sub-buckets */
#define BENCH_HIST_MAX_EXP  41u                              /* values < 2^41 ns */
#define BENCH_HIST_BUCKETS  ((BENCH_HIST_MAX_EXP - BENCH_HIST_SUB_BITS + 1u) * BENCH_HIST_SUB)

struct bench_hist {
	uint64_t bh_count;                       /* values recorded */
	uint64_t bh_sum;                         /* sum of values, for the mean */
	uint64_t bh_min;                         /* smallest value (UINT64_MAX if none) */
	uint64_t bh_max;                         /* largest value (exact, unclamped) */
	uint64_t bh_bucket[BENCH_HIST_BUCKETS];  /* counts per bucket */
};

/** Empty @p h. */
void bench_hist_init(struct bench_hist *h);

/** Bucket index of value @p v (values past the range land in the last bucket). */
uint32_t bench_hist_index(uint64_t v);

/** Smallest and largest value of bucket @p idx. */
uint64_t bench_hist_bucket_low(uint32_t idx);
uint64_t bench_hist_bucket_high(uint32_t idx);

/**
 * Record one value.  Single writer; no lock, no atomic.
 */
static inline void bench_hist_record(struct bench_hist *h, uint64_t v)
{
	h->bh_bucket[bench_hist_index(v)]++;
	h->bh_count++;
	h->bh_sum += v;
	if (v < h->bh_min)
		h->bh_min = v;
	if (v > h->bh_max)
		h->bh_max = v;
}

/** Add every count of @p src into @p dst. */
void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src);

/**
 * The value at percentile @p pct (0 < pct <= 100): the highest value of the
 * bucket holding the rank ceil(pct/100 * count), capped at the exact max.
 * Reports never understate a latency by more than one bucket width.
 * @return 0 for an empty histogram.
 */
uint64_t bench_hist_percentile(const struct bench_hist *h, double pct);

/** Mean of recorded values (0 if empty). */
double bench_hist_mean(const struct bench_hist *h);

#endif /* BENCH_HIST_H */
