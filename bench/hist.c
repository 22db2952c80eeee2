/*
 * hist.c -- log-linear latency histogram (see hist.h for the layout).
 *
 * Bucket index of a value v:
 *   v < 2*SUB:          index = v                       (exact)
 *   v in [2^e, 2^(e+1)): index = (e - SUB_BITS) * SUB + (v >> (e - SUB_BITS))
 * where the second term lies in [SUB, 2*SUB).  Both formulas agree at
 * v = SUB .. 2*SUB-1, so the index space is contiguous.
 */
#include "hist.h"

#include <string.h>

void bench_hist_init(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->bh_min = UINT64_MAX;
}

uint32_t bench_hist_index(uint64_t v)
{
	uint32_t e, idx;

	if (v < 2u * BENCH_HIST_SUB)
		return (uint32_t)v;
	e = 63u - (uint32_t)__builtin_clzll(v);
	if (e >= BENCH_HIST_MAX_EXP)
		return BENCH_HIST_BUCKETS - 1u;
	idx = (e - BENCH_HIST_SUB_BITS) * BENCH_HIST_SUB + (uint32_t)(v >> (e - BENCH_HIST_SUB_BITS));
	return idx;
}

uint64_t bench_hist_bucket_low(uint32_t idx)
{
	uint32_t e, sub;

	if (idx < 2u * BENCH_HIST_SUB)
		return idx;
	e = idx / BENCH_HIST_SUB + BENCH_HIST_SUB_BITS - 1u;
	sub = idx % BENCH_HIST_SUB + BENCH_HIST_SUB;
	return (uint64_t)sub << (e - BENCH_HIST_SUB_BITS);
}

uint64_t bench_hist_bucket_high(uint32_t idx)
{
	uint32_t e;

	if (idx < 2u * BENCH_HIST_SUB)
		return idx;
	e = idx / BENCH_HIST_SUB + BENCH_HIST_SUB_BITS - 1u;
	return bench_hist_bucket_low(idx) + ((uint64_t)1 << (e - BENCH_HIST_SUB_BITS)) - 1u;
}

void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src)
{
	uint32_t i;

	if (src->bh_count == 0)
		return;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		dst->bh_bucket[i] += src->bh_bucket[i];
	dst->bh_count += src->bh_count;
	dst->bh_sum += src->bh_sum;
	if (src->bh_min < dst->bh_min)
		dst->bh_min = src->bh_min;
	if (src->bh_max > dst->bh_max)
		dst->bh_max = src->bh_max;
}

uint64_t bench_hist_percentile(const struct bench_hist *h, double pct)
{
	uint64_t rank, seen = 0, v;
	double r;
	uint32_t i;

	if (h->bh_count == 0)
		return 0;
	if (pct >= 100.0)
		return h->bh_max;
	r = pct / 100.0 * (double)h->bh_count;
	rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank == 0)
		rank = 1;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		seen += h->bh_bucket[i];
		if (seen >= rank) {
			v = bench_hist_bucket_high(i);
			return v > h->bh_max ? h->bh_max : v;
		}
	}
	return h->bh_max;
}

double bench_hist_mean(const struct bench_hist *h)
{
	return h->bh_count ? (double)h->bh_sum / (double)h->bh_count : 0.0;
}
