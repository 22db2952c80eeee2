/*
 * eng_cas.c -- the physical limit: a bare compare-and-swap decrement loop on
 * one hot cache line in shared memory, with the same processes and threads
 * as the other engines.  No token, no user, no record: it bounds what any
 * design that deducts from one counter can reach on this machine.
 *
 * The counter is the shared block's sh_hot (alone on its cache line; the
 * driver loads it with the run's units before fork).
 * Records: each thread's count of successful decrements (ws_acked); the
 * check is sum(acked) <= units loaded and available = loaded - sum(acked).
 * --break-baseline replaces the conditional CAS by an unconditional
 * fetch-and-subtract, which oversells; the check must then report it.
 *
 * Timing: a clock read costs more than the CAS itself, so only one op in
 * CAS_SAMPLE is timed (throughput counts every op; stated in the note).
 */
#include "bench.h"

#include <string.h>

#define CAS_SAMPLE 16u

static int cas_setup(struct bench_run *run)
{
	if (run->wl != BENCH_WL_HOT) {
		snprintf(run->err, sizeof(run->err), "cas-limit runs the hot workload only");
		return -1;
	}
	snprintf(run->note, sizeof(run->note),
	         "cas-limit: 1 op in %u timed (a clock read costs more than the CAS); no users, no records",
	         CAS_SAMPLE);
	return 0;
}

/* Conditional deduct: succeed only while available >= 1.  The CAS is a
 * full barrier on x86; relaxed order is enough for a lone counter. */
static int cas_op(struct bench_worker *w, struct bench_req *r)
{
	int64_t *hot = &w->run->sh->sh_hot;
	int64_t v;

	(void)r;
	if (w->run->cfg.break_baseline) {
		__atomic_fetch_sub(hot, 1, __ATOMIC_RELAXED);
		return BENCH_RC_OK;
	}
	v = __atomic_load_n(hot, __ATOMIC_RELAXED);
	do {
		if (v < 1)
			return BENCH_RC_SOLD_OUT;
	} while (!__atomic_compare_exchange_n(hot, &v, v - 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return BENCH_RC_OK;
}

static int cas_thread(struct bench_worker *w)
{
	return bench_loop(w, cas_op, CAS_SAMPLE);
}

static int cas_verify(struct bench_run *run, struct bench_check *out)
{
	uint64_t acked = 0;
	int64_t avail = __atomic_load_n(&run->sh->sh_hot, __ATOMIC_SEQ_CST);
	uint32_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < run->sh->sh_nworkers; i++)
		acked += run->sh->sh_w[i].ws_acked;
	out->loaded = run->total_units;
	out->sold = acked;
	out->orders = acked;
	out->oversold = acked > out->loaded ? (int64_t)(acked - out->loaded) : 0;
	out->duplicates = -1;
	out->mismatch = (int64_t)out->loaded - (int64_t)acked - avail;
	if (out->mismatch < 0)
		out->mismatch = -out->mismatch;
	return 0;
}

static void cas_teardown(struct bench_run *run)
{
	(void)run;
}

const struct bench_engine bench_eng_cas = {
	.name = "cas-limit",
	.setup = cas_setup,
	.thread = cas_thread,
	.verify = cas_verify,
	.teardown = cas_teardown,
	.durs = 1u << BENCH_DUR_NONE,
};
