/*
 * report.c -- the bench's outputs: the markdown table, JSON lines (one
 * object per row, exactly the keys of the report format), and the data
 * files bench/plot.gp draws (throughput per row, latency percentile curves).
 *
 * Failed rows are never printed as figures: the table lists them under
 * "Failed" with the reason, and JSON leaves them out.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

/* Latencies for people: "0.855 µs", "59.39 µs", "8.10 ms", "1.49 s" --
 * never a raw count of nanoseconds. */
const char *bench_fmt_latency(uint64_t ns, char *buf, size_t cap)
{
	if (ns < 1000)
		snprintf(buf, cap, "%.3f µs", (double)ns / 1e3);
	else if (ns < 1000000)
		snprintf(buf, cap, "%.2f µs", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, cap, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.2f s", (double)ns / 1e9);
	return buf;
}

/* "1.41 M", "62.5 k", "812" */
const char *bench_fmt_rate(double r, char *buf, size_t cap)
{
	if (r >= 1e6)
		snprintf(buf, cap, "%.2f M", r / 1e6);
	else if (r >= 1e3)
		snprintf(buf, cap, "%.1f k", r / 1e3);
	else
		snprintf(buf, cap, "%.0f", r);
	return buf;
}

/* The Redis + Lua unpipelined row of the same workload and durability
 * class: sync rows against appendfsync always, every other row against
 * Redis without AOF. */
static const struct bench_result *redis_ref(const struct bench_result *rows, size_t n,
                                            const struct bench_result *r)
{
	const char *dur = strcmp(r->durability, "sync") == 0 ? "sync" : "none";
	size_t i;

	for (i = 0; i < n; i++)
		if (!rows[i].failed && strcmp(rows[i].engine, "redis-lua") == 0 &&
		    strcmp(rows[i].workload, r->workload) == 0 && strcmp(rows[i].durability, dur) == 0)
			return &rows[i];
	return NULL;
}

void bench_report_table(FILE *f, struct bench_result *rows, size_t n)
{
	size_t i;
	int failed = 0, notes = 0;
	char a[32], b[32], c[32], d[32];

	fprintf(f, "| engine | workload | durability | procs x threads | ops/s | p50 | p99 | p99.9 "
	           "| vs redis-lua* | oversold | duplicates | sold/loaded | lost acks |\n");
	fprintf(f, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &rows[i];
		const struct bench_result *ref;
		char ratio[32], dup[32];
		if (r->failed) {
			failed++;
			continue;
		}
		ref = redis_ref(rows, n, r);
		if (ref && ref->ops_per_sec > 0)
			snprintf(ratio, sizeof(ratio), "%.1fx", r->ops_per_sec / ref->ops_per_sec);
		else
			snprintf(ratio, sizeof(ratio), "-");
		if (r->chk.duplicates < 0)
			snprintf(dup, sizeof(dup), "n/a");
		else
			snprintf(dup, sizeof(dup), "%lld", (long long)r->chk.duplicates);
		fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %lld | %s | %llu/%llu | %lld |\n",
		        r->engine, r->workload, r->durability, r->conc,
		        bench_fmt_rate(r->ops_per_sec, a, sizeof(a)), bench_fmt_latency(r->p50, b, sizeof(b)),
		        bench_fmt_latency(r->p99, c, sizeof(c)), bench_fmt_latency(r->p999, d, sizeof(d)), ratio,
		        (long long)r->chk.oversold, dup, (unsigned long long)r->chk.sold,
		        (unsigned long long)r->chk.loaded, (long long)r->chk.lost);
	}
	fprintf(f, "\n\\* ops/s over Redis + Lua unpipelined on the same workload: sync rows against "
	           "appendfsync always, other rows against Redis without AOF.\n");
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &rows[i];
		if (r->failed || (!r->note[0] && !r->chk.note[0] && !r->chk.mismatch))
			continue;
		if (!notes++)
			fprintf(f, "\nNotes:\n");
		fprintf(f, "- %s/%s/%s:", r->engine, r->workload, r->durability);
		if (r->note[0])
			fprintf(f, " %s.", r->note);
		if (r->chk.note[0])
			fprintf(f, " %s.", r->chk.note);
		if (r->chk.mismatch)
			fprintf(f, " COUNTER MISMATCH: |loaded - sold - available| = %lld.",
			        (long long)r->chk.mismatch);
		fprintf(f, " outcomes: ok %llu, sold_out %llu, limit %llu, bad_token %llu, "
		           "not_found %llu, cancelled %llu; p90 %s, max %s.\n",
		        (unsigned long long)r->count[BENCH_RC_OK],
		        (unsigned long long)r->count[BENCH_RC_SOLD_OUT],
		        (unsigned long long)r->count[BENCH_RC_LIMIT],
		        (unsigned long long)r->count[BENCH_RC_BAD_TOKEN],
		        (unsigned long long)r->count[BENCH_RC_NOT_FOUND],
		        (unsigned long long)r->count[BENCH_RC_CANCELLED],
		        bench_fmt_latency(r->p90, a, sizeof(a)), bench_fmt_latency(r->max, b, sizeof(b)));
	}
	if (failed) {
		fprintf(f, "\nFailed (no figures shown):\n");
		for (i = 0; i < n; i++)
			if (rows[i].failed)
				fprintf(f, "- %s/%s/%s: %s\n", rows[i].engine, rows[i].workload,
				        rows[i].durability, rows[i].err);
	}
}

void bench_report_json(FILE *f, const struct bench_result *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct bench_result *r = &rows[i];
		char dup[32];
		if (r->failed)
			continue;
		if (r->chk.duplicates < 0)
			snprintf(dup, sizeof(dup), "null");
		else
			snprintf(dup, sizeof(dup), "%lld", (long long)r->chk.duplicates);
		fprintf(f, "{\"engine\":\"%s\",\"workload\":\"%s\",\"durability\":\"%s\","
		           "\"procs\":%u,\"threads\":%u,\"orders_per_sec\":%.1f,\"p50_ns\":%llu,"
		           "\"p99_ns\":%llu,\"p999_ns\":%llu,\"oversold\":%lld,\"duplicates\":%s}\n",
		        r->engine, r->workload, r->durability, r->procs, r->threads, r->ops_per_sec,
		        (unsigned long long)r->p50, (unsigned long long)r->p99,
		        (unsigned long long)r->p999, (long long)r->chk.oversold, dup);
	}
}

/* The bars of the throughput chart, in this order within each workload;
 * one colour each (bench/plot.gp). */
static const char *const bar_series[][2] = {
	{ "cas-limit", "none" }, { "flashstock", "async" }, { "flashstock", "sync" },
	{ "flashstock", "none" }, { "redis-lua", "none" }, { "redis-lua", "sync" },
	{ "redis-lua-pipelined", "none" }, { "redis-lua-pipelined", "sync" },
	{ "mysql-cas", "sync" }, { "mysql-for-update", "sync" },
};
#define NBAR_SERIES (sizeof bar_series / sizeof bar_series[0])

static const struct bench_result *find_row(const struct bench_result *rows, size_t n, const char *eng,
                                           const char *wl, const char *dur)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!rows[i].failed && strcmp(rows[i].engine, eng) == 0 && strcmp(rows[i].workload, wl) == 0 &&
		    strcmp(rows[i].durability, dur) == 0)
			return &rows[i];
	return NULL;
}

/*
 * DIR/throughput-bars.dat ("x ops_per_sec colour label": one bar per row,
 * grouped by workload, colour = 1 + the series' place in bar_series (one
 * colour per engine and durability, the same in every run), label = the ratio
 * to redis-lua on flashstock bars, "-" elsewhere) and DIR/throughput-vars.gp
 * (the series present, their titles, the workloads and where their groups
 * sit) for the grouped chart of bench/plot.gp.
 */
static int report_bars(const char *dir, const struct bench_result *rows, size_t n)
{
	static const char *const wls[] = { "hot", "zipf", "dedup", "mixed" };
	int present[NBAR_SERIES] = { 0 }, col[NBAR_SERIES], ns = 0, nw = 0, wpresent[4] = { 0 };
	char path[512];
	FILE *f, *v;
	size_t i, k;

	for (k = 0; k < NBAR_SERIES; k++)
		for (i = 0; i < 4; i++)
			if (find_row(rows, n, bar_series[k][0], wls[i], bar_series[k][1]))
				present[k] = wpresent[i] = 1;
	for (k = 0; k < NBAR_SERIES; k++)
		col[k] = present[k] ? ns++ : -1;
	snprintf(path, sizeof(path), "%s/throughput-bars.dat", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	snprintf(path, sizeof(path), "%s/throughput-vars.gp", dir);
	if (!(v = fopen(path, "w"))) {
		fclose(f);
		return -1;
	}
	fprintf(f, "# x ops_per_sec series label (ratio to redis-lua on flashstock bars)\n");
	fprintf(v, "nseries = %d\nseries_titles = \"", ns);
	for (k = 0; k < NBAR_SERIES; k++)
		if (present[k])
			fprintf(v, "%s%s/%s", col[k] ? " " : "", bar_series[k][0], bar_series[k][1]);
	fprintf(v, "\"\nseries_colours = \"");
	for (k = 0; k < NBAR_SERIES; k++)
		if (present[k])
			fprintf(v, "%s%zu", col[k] ? " " : "", k + 1);
	fprintf(v, "\"\nworkload_tics = \"");
	for (i = 0; i < 4; i++) {
		if (!wpresent[i])
			continue;
		for (k = 0; k < NBAR_SERIES; k++) {
			const struct bench_result *r;
			char label[32] = "-";
			if (!present[k] || !(r = find_row(rows, n, bar_series[k][0], wls[i], bar_series[k][1])))
				continue;
			if (strcmp(r->engine, "flashstock") == 0) {
				const struct bench_result *ref = redis_ref(rows, n, r);
				if (ref && ref->ops_per_sec > 0)
					snprintf(label, sizeof(label), "%.1fx", r->ops_per_sec / ref->ops_per_sec);
			}
			fprintf(f, "%d %.1f %zu %s\n", nw * (ns + 1) + col[k], r->ops_per_sec, k + 1, label);
		}
		fprintf(v, "%s'%s' %.1f", nw ? ", " : "", wls[i], nw * (ns + 1) + (ns - 1) / 2.0);
		nw++;
	}
	fprintf(v, "\"\nnworkloads = %d\n", nw);
	fclose(f);
	fclose(v);
	return 0;
}

/*
 * Data for bench/plot.gp in @p dir: throughput.dat ("label ops_per_sec"
 * per row, hot workload first) and curve-<engine>-<workload>-<dur>.dat
 * ("percentile latency_ns", percentiles spaced evenly in log10(1/(1-p))
 * up to the last one the sample size supports).
 */
int bench_report_curves(const char *dir, const struct bench_result *rows, size_t n)
{
	char path[512];
	FILE *f;
	size_t i;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/throughput.dat", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "# label ops_per_sec p50_ns p99_ns p999_ns\n");
	for (i = 0; i < n; i++)
		if (!rows[i].failed)
			fprintf(f, "\"%s %s %s\" %.1f %llu %llu %llu\n", rows[i].engine, rows[i].workload,
			        rows[i].durability, rows[i].ops_per_sec, (unsigned long long)rows[i].p50,
			        (unsigned long long)rows[i].p99, (unsigned long long)rows[i].p999);
	fclose(f);
	if (report_bars(dir, rows, n) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		const struct bench_result *r = &rows[i];
		double x, xmax;
		if (r->failed || !r->hist || r->hist->bh_count == 0)
			continue;
		snprintf(path, sizeof(path), "%s/curve-%s-%s-%s.dat", dir, r->engine, r->workload,
		         r->durability);
		f = fopen(path, "w");
		if (!f)
			return -1;
		fprintf(f, "# %s %s %s: percentile latency_ns (1/(1-p) on the x axis)\n",
		        r->engine, r->workload, r->durability);
		xmax = log10((double)r->hist->bh_count);
		for (x = 0.0; x <= xmax + 1e-9; x += 0.05) {
			double p = 100.0 * (1.0 - pow(10.0, -x));
			fprintf(f, "%.6f %llu\n", p, (unsigned long long)bench_hist_percentile(r->hist, p));
		}
		fclose(f);
	}
	return 0;
}
