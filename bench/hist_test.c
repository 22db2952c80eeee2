/*
 * hist_test.c -- unit tests of the bench's log-linear histogram: every value
 * lands in a bucket whose bounds contain it, bucket bounds tile the range
 * without gaps, percentiles are within one bucket of the exact answer, and
 * merging equals recording everything in one histogram.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hist.h"

static void test_bucket_contains_value(void **state)
{
	uint64_t v;

	(void)state;
	for (v = 0; v < 100000; v++) {
		uint32_t i = bench_hist_index(v);
		assert_true(bench_hist_bucket_low(i) <= v);
		assert_true(v <= bench_hist_bucket_high(i));
	}
	for (v = 100000; v < (1ull << 40); v = v * 3 / 2 + 7) {
		uint32_t i = bench_hist_index(v);
		assert_true(bench_hist_bucket_low(i) <= v);
		assert_true(v <= bench_hist_bucket_high(i));
		/* relative width below 1/64 */
		assert_true((bench_hist_bucket_high(i) - bench_hist_bucket_low(i)) * 64 <= v);
	}
}

static void test_buckets_tile_the_range(void **state)
{
	uint32_t i;

	(void)state;
	for (i = 1; i < BENCH_HIST_BUCKETS; i++)
		assert_int_equal(bench_hist_bucket_low(i), bench_hist_bucket_high(i - 1) + 1);
	assert_int_equal(bench_hist_index(UINT64_MAX), BENCH_HIST_BUCKETS - 1);
}

static void test_percentiles_of_uniform_values(void **state)
{
	struct bench_hist *h = malloc(sizeof(*h));
	uint64_t v, p50, p99;

	(void)state;
	assert_non_null(h);
	bench_hist_init(h);
	assert_int_equal(bench_hist_percentile(h, 50.0), 0);
	for (v = 1; v <= 100000; v++)
		bench_hist_record(h, v * 10);      /* 10 .. 1,000,000 ns */
	p50 = bench_hist_percentile(h, 50.0);
	p99 = bench_hist_percentile(h, 99.0);
	assert_true(p50 >= 500000 && p50 <= 500000 + 500000 / 64);
	assert_true(p99 >= 990000 && p99 <= 990000 + 990000 / 64);
	assert_int_equal(bench_hist_percentile(h, 100.0), 1000000);
	assert_int_equal(h->bh_min, 10);
	assert_int_equal(h->bh_count, 100000);
	free(h);
}

static void test_merge_equals_single(void **state)
{
	struct bench_hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *all = malloc(sizeof(*all));
	uint64_t v;
	double p;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(all);
	bench_hist_init(a);
	bench_hist_init(b);
	bench_hist_init(all);
	for (v = 0; v < 50000; v++) {
		uint64_t x = (v * 2654435761u) % 5000000;
		bench_hist_record(v & 1 ? a : b, x);
		bench_hist_record(all, x);
	}
	bench_hist_merge(a, b);
	assert_int_equal(a->bh_count, all->bh_count);
	assert_int_equal(a->bh_sum, all->bh_sum);
	assert_int_equal(a->bh_max, all->bh_max);
	assert_int_equal(a->bh_min, all->bh_min);
	for (p = 1.0; p < 100.0; p += 0.7)
		assert_int_equal(bench_hist_percentile(a, p), bench_hist_percentile(all, p));
	free(a);
	free(b);
	free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_contains_value),
		cmocka_unit_test(test_buckets_tile_the_range),
		cmocka_unit_test(test_percentiles_of_uniform_values),
		cmocka_unit_test(test_merge_equals_single),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
