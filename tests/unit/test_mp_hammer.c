/*
 * test_mp_hammer.c -- many processes, one hot sku.
 *
 * Eight forked buyers (each opens its own handle after fork, then waits on a
 * pipe barrier so all start together) hammer one sku with more buyers than
 * units and every user tried by every process.  The outcome is checked from
 * the order table (flash_order_get over 1..flash_orders_max) and the records
 * drained from every ring, not from counters:
 *
 *   - units sold == min(units, users * K) exactly: an attempt fails only on
 *     ELIMIT (user at K) or SOLD_OUT (stock below qty, and stock never grows
 *     here), so while both stock and an unsaturated user remain, that user's
 *     attempts cannot all fail;
 *   - no user above K; limit slots distinct; stock never negative;
 *     available == total - sum of active quantities; every order has exactly
 *     one record; per-slot record seqs are gapless.
 *
 * With cancels racing (several processes cancelling the same orders), the
 * units returned over all processes equal the quantities of the cancelled
 * orders: each cancel returned its units exactly once.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPROC 8

struct hammer {
	const char *name;
	uint32_t act, sku;
	uint32_t users;        /* user ids 1..users */
	uint32_t passes;       /* times each process tries each user */
	int cancel;            /* cancel own orders and race on others' */
	/* shared with the children (MAP_SHARED) */
	uint64_t *ok;          /* [NPROC] successful orders per child */
	uint64_t *returned;    /* [NPROC] units returned by its cancels */
	uint64_t *cancels_ok;  /* [NPROC] cancels that returned FLASH_OK */
	int sliced;            /* buyer i tries only users of slice i */
	int signal_fd;         /* > 0: each buyer writes its index here ... */
	uint32_t signal_after; /* ... after this many attempts, then the even
	                          buyers pause briefly every 20 attempts so that
	                          a kill finds them with work left */
};

/* A buyer process.  Returns 0, or a small code naming the first surprise. */
static int buyer(int i, void *arg)
{
	struct hammer *hm = arg;
	flash_t *h = NULL;
	uint64_t ok = 0, returned = 0, cok = 0;
	uint32_t attempts = 0;
	int rc;

	if (flash_open(hm->name, 0, &h) != FLASH_OK)
		return 10;
	for (uint32_t pass = 0; pass < hm->passes; pass++)
		for (uint32_t j = 0; j < hm->users; j++) {
			/* each process walks the users in its own order */
			uint64_t u = 1 + (j + (uint64_t)i * 37 + pass * 101) % hm->users;
			struct flash_order_res res;

			if (hm->sliced && (u - 1) * NPROC / hm->users != (uint64_t)i)
				continue;

			rc = t_order(h, hm->act, hm->sku, u, 1, 0, 0, &res);
			if (hm->signal_fd > 0 && ++attempts == hm->signal_after) {
				unsigned char c = (unsigned char)i;

				if (write(hm->signal_fd, &c, 1) != 1)
					return 16;
			}
			if (hm->signal_fd > 0 && i % 2 == 0 && attempts > hm->signal_after &&
			    attempts % 20 == 0)
				usleep(50);
			if (rc == FLASH_OK) {
				ok++;
				if (hm->cancel && (u + pass) % 3 == 0) {
					uint32_t units = 0;

					rc = flash_cancel(h, res.order_no, &units);
					if (rc == FLASH_OK) {
						cok++;
						returned += units;
						if (units != 1)
							return 11;
					} else if (rc != FLASH_ECANCELLED) {
						return 12;   /* only a racing cancel may beat us */
					}
				}
			} else if (rc != FLASH_ELIMIT && rc != FLASH_ESOLD_OUT) {
				fprintf(stderr, "buyer %d: order: %s\n", i, flash_rcname(rc));
				return 13;
			}
			if (hm->cancel && (j % 16) == (uint32_t)i) {
				/* race: every process cancels orders whose number is 0 mod 4 */
				uint64_t max = flash_orders_max(h);

				for (uint64_t no = 4; no <= max; no += 4) {
					uint32_t units = 0;

					rc = flash_cancel(h, no, &units);
					if (rc == FLASH_OK) {
						cok++;
						returned += units;
					} else if (rc != FLASH_ECANCELLED && rc != FLASH_ENOT_FOUND) {
						fprintf(stderr, "buyer %d: cancel %llu: %s\n", i,
						        (unsigned long long)no, flash_rcname(rc));
						return 14;
					}
				}
			}
		}
	hm->ok[i] = ok;
	hm->returned[i] = returned;
	hm->cancels_ok[i] = cok;
	if (flash_close(h) != FLASH_OK)
		return 15;
	return 0;
}

static void hammer_opts(struct flash_seg_opts *o)
{
	t_opts_small(o);
	o->max_users = 65536;
	o->max_orders = 65536;
	o->max_procs = 16;
	o->ring_records = 32768;
}

/*
 * A monitor process: reads the sku through a read-only handle until *done.
 * Without cancels stock only falls, and a shard-by-shard sum read while it
 * falls lies between the true values at the start and the end of the read,
 * so successive reads never rise; none may exceed the total (a shard gone
 * negative would wrap to a huge unsigned value).  Returns 0 or a code.
 */
static int monitor(const struct hammer *hm, const volatile uint32_t *done, uint64_t total,
                   int ready_fd)
{
	flash_t *h = NULL;
	struct flash_sku_info si;
	uint64_t last = total, samples = 0;
	char c = 'M';

	if (flash_open(hm->name, FLASH_RDONLY, &h) != FLASH_OK)
		return 30;
	do {
		if (flash_sku_get(h, hm->act, hm->sku, &si) != FLASH_OK)
			return 31;
		if (si.total != total)
			return 32;
		if (si.available > total)
			return 33;
		if (si.available > last)
			return 34;
		last = si.available;
		if (samples++ == 0 && write(ready_fd, &c, 1) != 1)
			return 35;
		usleep(100);   /* leave the cores to the buyers */
	} while (!__atomic_load_n(done, __ATOMIC_ACQUIRE));
	flash_close(h);
	return 0;
}

/* Run NPROC buyers on one sku; drain every ring; return the ledger. */
static void run(struct hammer *hm, flash_t *h, uint32_t k, struct t_ledger *lg,
                struct t_recs *recs)
{
	pid_t pids[NPROC];
	int go;
	size_t shared = 3 * NPROC * sizeof(uint64_t);
	uint64_t *mem = t_shared_alloc(shared);

	volatile uint32_t *done = t_shared_alloc(sizeof(uint32_t));
	pid_t mon = -1;
	int mst = 0;

	hm->ok = mem;
	hm->returned = mem + NPROC;
	hm->cancels_ok = mem + 2 * NPROC;
	if (!hm->cancel) {
		struct flash_sku_info si;
		int rp[2];
		char c;

		assert_int_equal(flash_sku_get(h, hm->act, hm->sku, &si), FLASH_OK);
		assert_int_equal(pipe(rp), 0);
		fflush(NULL);
		mon = fork();
		assert_true(mon >= 0);
		if (mon == 0) {
			close(rp[0]);
			_exit(monitor(hm, done, si.total, rp[1]));
		}
		close(rp[1]);
		/* the monitor is reading before any buyer starts */
		assert_int_equal(read(rp[0], &c, 1), 1);
		close(rp[0]);
	}
	assert_int_equal(t_fork_start(NPROC, buyer, hm, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(t_wait_all(NPROC, pids), 0);
	if (mon > 0) {
		__atomic_store_n(done, 1, __ATOMIC_RELEASE);
		assert_int_equal(waitpid(mon, &mst, 0), mon);
		assert_true(WIFEXITED(mst));
		assert_int_equal(WEXITSTATUS(mst), 0);
	}
	t_shared_free((void *)done, sizeof(uint32_t));

	assert_int_equal(t_recs_drain(h, recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, recs, hm->act, hm->sku, k, lg), 0);
	{
		uint64_t ok = 0, returned = 0, cok = 0;

		for (int i = 0; i < NPROC; i++) {
			ok += hm->ok[i];
			returned += hm->returned[i];
			cok += hm->cancels_ok[i];
		}
		/* what the buyers were told agrees with the order table */
		assert_int_equal(ok, lg->active_orders + lg->cancelled_orders);
		assert_int_equal(cok, lg->cancelled_orders);
		assert_int_equal(returned, lg->cancelled_qty);
	}
	t_shared_free(mem, shared);
}

static void hammer_case(uint32_t shards, uint32_t k, uint64_t units, uint32_t users)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct hammer hm;
	struct t_ledger lg;
	struct t_recs recs = { 0 };
	struct flash_stats st;
	uint64_t want = units < (uint64_t)users * k ? units : (uint64_t)users * k;

	hammer_opts(&o);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, k, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, units, shards), FLASH_OK);
	memset(&hm, 0, sizeof hm);
	hm.name = name;
	hm.act = 1;
	hm.sku = 10;
	hm.users = users;
	hm.passes = k;   /* NPROC * k attempts per user: more than K */
	run(&hm, h, k, &lg, &recs);

	assert_int_equal(lg.active_qty, want);
	assert_int_equal(lg.active_orders, want);
	assert_int_equal(lg.cancelled_orders, 0);
	assert_true(lg.max_per_user <= k);
	assert_int_equal(t_available(h, 1, 10), units - want);
	if (want == (uint64_t)users * k)
		assert_int_equal(lg.users_at_limit, users);
	/* every handle was closed */
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.orders, want);
	/* for the log only: shows the processes did contend */
	print_message("      sold %llu, limit hits %llu, sold out %llu, cas retries %llu\n",
	              (unsigned long long)want, (unsigned long long)st.limit_hits,
	              (unsigned long long)st.sold_out, (unsigned long long)st.cas_retries);
	t_recs_free(&recs);
}

static void test_one_hot_sku_k1_sells_exactly_the_units_to_distinct_users(void **state)
{
	hammer_case(1, 1, 6000, 10000);
}

static void test_one_hot_sku_k2_sells_exactly_the_units(void **state)
{
	hammer_case(1, 2, 15000, 10000);
}

static void test_one_hot_sku_k2_with_spare_stock_fills_every_user_to_k(void **state)
{
	hammer_case(1, 2, 30000, 10000);
}

static void test_sharded_sku_k1_sells_exactly_the_units(void **state)
{
	hammer_case(8, 1, 6000, 10000);
}

static void test_sharded_sku_k2_sells_exactly_the_units(void **state)
{
	hammer_case(8, 2, 15000, 10000);
}

static void test_sharded_sku_k2_with_spare_stock_fills_every_user_to_k(void **state)
{
	hammer_case(8, 2, 30000, 10000);
}

static void cancel_case(uint32_t shards)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct hammer hm;
	struct t_ledger lg;
	struct t_recs recs = { 0 };
	const uint64_t units = 3000;

	hammer_opts(&o);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 2, 1, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, units, shards), FLASH_OK);
	memset(&hm, 0, sizeof hm);
	hm.name = name;
	hm.act = 1;
	hm.sku = 10;
	hm.users = 2000;
	hm.passes = 2;
	hm.cancel = 1;
	run(&hm, h, 2, &lg, &recs);

	/* cancelled units came back exactly once: final available = total - active */
	assert_int_equal(t_available(h, 1, 10), units - lg.active_qty);
	assert_true(lg.cancelled_orders > 0);
	assert_true(lg.active_orders > 0);
	assert_true(lg.max_per_user <= 2);
	t_recs_free(&recs);
}

static void test_concurrent_cancels_return_each_unit_once_one_shard(void **state)
{
	cancel_case(1);
}

static void test_concurrent_cancels_return_each_unit_once_sharded(void **state)
{
	cancel_case(8);
}

/*
 * Kill -9 half of the buyers while they hammer, recover, then let one
 * process try every user K more times: whatever the dead left in flight came
 * back, so the final sale is again exactly min(units, users * K).
 */
static void test_kill9_of_buyers_mid_hammer_then_recover_sells_exactly_the_units(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct hammer hm;
	struct t_ledger lg;
	struct t_recs recs = { 0 };
	struct flash_stats st;
	pid_t pids[NPROC];
	int go, p[2], killed = 0;
	uint32_t recovered = 0;
	const uint32_t k = 2, users = 16000;
	const uint64_t units = 24000;
	size_t shared = 3 * NPROC * sizeof(uint64_t);
	uint64_t *mem = t_shared_alloc(shared);

	hammer_opts(&o);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, k, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, units, 4), FLASH_OK);
	memset(&hm, 0, sizeof hm);
	hm.name = name;
	hm.act = 1;
	hm.sku = 10;
	hm.users = users;
	hm.passes = k;
	hm.sliced = 1;   /* nobody else finishes a killed buyer's users */
	hm.ok = mem;
	hm.returned = mem + NPROC;
	hm.cancels_ok = mem + 2 * NPROC;
	assert_int_equal(pipe(p), 0);
	hm.signal_fd = p[1];
	hm.signal_after = 100;
	assert_int_equal(t_fork_start(NPROC, buyer, &hm, pids, &go), 0);
	close(p[1]);
	t_fork_go(go);
	/* kill the even-numbered buyers as soon as each is under way */
	while (killed < NPROC / 2) {
		unsigned char c;

		assert_int_equal(read(p[0], &c, 1), 1);
		assert_true(c < NPROC);
		if (c % 2 == 0) {
			assert_int_equal(kill(pids[c], SIGKILL), 0);
			killed++;
		}
	}
	close(p[0]);
	for (int i = 0; i < NPROC; i++) {
		int st_ = 0;

		assert_int_equal(waitpid(pids[i], &st_, 0), pids[i]);
		if (i % 2 == 0)   /* killed, unless it had finished first */
			assert_true((WIFSIGNALED(st_) && WTERMSIG(st_) == SIGKILL) ||
			            (WIFEXITED(st_) && WEXITSTATUS(st_) == 0));
		else
			assert_true(WIFEXITED(st_) && WEXITSTATUS(st_) == 0);
	}
	assert_int_equal(flash_recover(h, &recovered), FLASH_OK);
	assert_true(recovered <= NPROC / 2);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 1);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, k, &lg), 0);
	print_message("      %u handles recovered, %llu orders kept, %llu rolled back\n", recovered,
	              (unsigned long long)lg.active_orders, (unsigned long long)st.rolled_back);

	/* one more full pass: every user K more tries */
	for (uint64_t u = 1; u <= users; u++)
		for (uint32_t t = 0; t < k; t++) {
			int rc = t_order(h, 1, 10, u, 1, 0, 0, NULL);

			assert_true(rc == FLASH_OK || rc == FLASH_ELIMIT || rc == FLASH_ESOLD_OUT);
		}
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, k, &lg), 0);
	assert_int_equal(lg.active_qty, units < (uint64_t)users * k ? units : (uint64_t)users * k);
	assert_int_equal(t_available(h, 1, 10), 0);
	t_shared_free(mem, shared);
	t_recs_free(&recs);
}

/*
 * Two processes (one per core) each restock one unit and at once try to buy
 * one, over and over: the stock word sits at 0..2 and both cores' deducts
 * collide on the last unit all the time.  Every unit restocked is sold at
 * most once: the order table shows active == total - available, exactly.
 */
struct pair {
	const char *name;
	uint32_t rounds;
	uint64_t ok[2];
};

static int pair_worker(int i, void *arg)
{
	struct pair *pp = arg;
	flash_t *h = NULL;
	uint64_t ok = 0;

	if (flash_open(pp->name, 0, &h) != FLASH_OK)
		return 10;
	for (uint32_t n = 0; n < pp->rounds; n++) {
		uint64_t u = 1 + (uint64_t)i * 10000000 + n / 25;   /* K = 64 never binds */
		int rc;

		while ((rc = flash_restock(h, 1, 10, 1)) == FLASH_EBUSY)
			;
		if (rc != FLASH_OK)
			return 11;
		/* two tries per unit fed: demand outruns supply at every step */
		for (int t = 0; t < 2; t++) {
			struct flash_sku_info si;

			rc = t_order(h, 1, 10, u, 1, 0, 0, NULL);
			if (rc == FLASH_OK)
				ok++;
			else if (rc != FLASH_ESOLD_OUT) {
				fprintf(stderr, "pair worker %d: order: %s\n", i, flash_rcname(rc));
				return 12;
			}
			if (flash_sku_get(h, 1, 10, &si) != FLASH_OK)
				return 13;
			if (si.available > si.total) {
				fprintf(stderr, "pair worker %d: available %llu above total %llu\n", i,
				        (unsigned long long)si.available, (unsigned long long)si.total);
				return 14;
			}
		}
	}
	pp->ok[i] = ok;
	flash_close(h);
	return 0;
}

static void test_two_processes_restocking_and_buying_the_last_unit_never_oversell(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct pair *pp;
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	struct flash_sku_info si;
	pid_t pids[2];
	int go;

	hammer_opts(&o);
	o.max_procs = 3;
	o.max_users = 1u << 18;   /* one entry per held limit slot */
	o.max_orders = 1u << 18;
	o.ring_records = 1u << 18;   /* a restock and up to two orders a round */
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, FLASH_LIMIT_MAX, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 0, 1), FLASH_OK);
	pp = t_shared_alloc(sizeof *pp);
	memset(pp, 0, sizeof *pp);
	pp->name = name;
	pp->rounds = 80000;
	assert_int_equal(t_fork_start(2, pair_worker, pp, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(t_wait_all(2, pids), 0);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, FLASH_LIMIT_MAX, &lg), 0);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 2ull * pp->rounds);
	assert_int_equal(lg.active_qty, pp->ok[0] + pp->ok[1]);
	assert_true(lg.active_qty <= si.total);
	assert_int_equal(si.available, si.total - lg.active_qty);
	{
		struct flash_stats st;

		assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
		print_message("      %llu of %llu units sold, %llu cas retries\n",
		              (unsigned long long)lg.active_qty, (unsigned long long)si.total,
		              (unsigned long long)st.cas_retries);
	}
	t_recs_free(&recs);
	t_shared_free(pp, sizeof *pp);
}

/*
 * Activity scope across two skus: K counts a user's orders in both.  Each
 * process tries every user on both skus; stock never grows, so at the end a
 * user below K has met only sold-out skus: sold == min(users * K, units).
 */
struct two {
	const char *name;
	uint32_t users;
};

static int two_buyer(int i, void *arg)
{
	const struct two *t = arg;
	flash_t *h = NULL;

	if (flash_open(t->name, 0, &h) != FLASH_OK)
		return 10;
	for (uint32_t j = 0; j < 2 * t->users; j++) {
		uint64_t u = 1 + (j / 2 + (uint64_t)i * 53) % t->users;
		uint32_t sku = ((j + (uint32_t)i) & 1) ? 11 : 10;
		int rc = t_order(h, 1, sku, u, 1, 0, 0, NULL);

		if (rc != FLASH_OK && rc != FLASH_ELIMIT && rc != FLASH_ESOLD_OUT)
			return 11;
	}
	flash_close(h);
	return 0;
}

static void test_activity_scope_limit_holds_across_two_skus(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct two t;
	struct t_recs recs = { 0 };
	struct t_ledger l10, l11;
	pid_t pids[NPROC];
	int go;
	const uint32_t users = 4000;
	uint8_t *held = calloc(users + 1, 1);

	assert_non_null(held);
	hammer_opts(&o);
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 1500, 1), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 11, 1500, 4), FLASH_OK);
	t.name = name;
	t.users = users;
	assert_int_equal(t_fork_start(NPROC, two_buyer, &t, pids, &go), 0);
	t_fork_go(go);
	assert_int_equal(t_wait_all(NPROC, pids), 0);
	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, 1, &l10), 0);
	assert_int_equal(t_ledger_check(h, &recs, 1, 11, 1, &l11), 0);
	assert_int_equal(l10.active_qty + l11.active_qty, 3000);
	/* one order per user over both skus */
	for (uint64_t no = 1; no <= flash_orders_max(h); no++) {
		struct flash_order_info oi;

		assert_int_equal(flash_order_get(h, no, &oi), FLASH_OK);
		if (oi.state != FLASH_ORDER_ACTIVE)
			continue;
		assert_true(oi.user_id >= 1 && oi.user_id <= users);
		assert_int_equal(held[oi.user_id], 0);
		held[oi.user_id] = 1;
	}
	free(held);
	t_recs_free(&recs);
}

/*
 * Keep the sku at its sell-out edge while every process fights for it: a
 * feeder restocks one unit at a time, NPROC buyers order one unit at a
 * time, so nearly every deduct races for the last unit.  The order table
 * must show exactly the units fed, sold once each, and stock never below 0.
 */
struct edge {
	const char *name;
	uint32_t feed;           /* units the feeder adds, one by one */
	uint32_t fed_done;       /* set by the feeder when finished */
	uint64_t ok[NPROC];
};

static int edge_buyer(int i, void *arg)
{
	struct edge *e = arg;
	flash_t *h = NULL;
	struct flash_sku_info si;
	uint64_t ok = 0;

	if (flash_open(e->name, 0, &h) != FLASH_OK)
		return 10;
	alarm(100);   /* a feeder that never finishes kills the buyer: test fails */
	for (uint64_t n = 0;; n++) {
		/* a user per 50 attempts: K = 64 never binds */
		uint64_t u = 1 + (uint64_t)i * 10000000 + n / 50;
		int rc = t_order(h, 1, 10, u, 1, 0, 0, NULL);

		if (rc == FLASH_OK)
			ok++;
		else if (rc != FLASH_ESOLD_OUT)
			return 11;
		if (rc == FLASH_ESOLD_OUT && __atomic_load_n(&e->fed_done, __ATOMIC_ACQUIRE)) {
			if (flash_sku_get(h, 1, 10, &si) != FLASH_OK)
				return 12;
			if (si.available == 0)
				break;
			if (si.available > si.total)
				return 13;   /* wrapped below zero */
		}
	}
	e->ok[i] = ok;
	flash_close(h);
	return 0;
}

static int edge_feeder(const struct edge *e)
{
	flash_t *h = NULL;

	if (flash_open(e->name, 0, &h) != FLASH_OK)
		return 20;
	for (uint32_t n = 0; n < e->feed; n++) {
		int rc;

		while ((rc = flash_restock(h, 1, 10, 1)) == FLASH_EBUSY)
			usleep(100);
		if (rc != FLASH_OK)
			return 21;
		if (n % 4 == 3)
			sched_yield();
	}
	flash_close(h);
	return 0;
}

static void test_buyers_racing_a_restock_feeder_at_the_sell_out_edge_never_oversell(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h;
	struct edge *e;
	struct t_recs recs = { 0 };
	struct t_ledger lg;
	struct flash_sku_info si;
	pid_t pids[NPROC], feeder;
	int go, st_ = 0;
	uint64_t ok = 0;

	hammer_opts(&o);
	o.max_users = 1u << 18;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(t_activity(h, 1, FLASH_LIMIT_MAX, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 0, 1), FLASH_OK);
	e = t_shared_alloc(sizeof *e);
	memset(e, 0, sizeof *e);
	e->name = name;
	e->feed = 10000;
	assert_int_equal(t_fork_start(NPROC, edge_buyer, e, pids, &go), 0);
	fflush(NULL);
	feeder = fork();
	assert_true(feeder >= 0);
	if (feeder == 0) {
		int rc = edge_feeder(e);

		__atomic_store_n(&e->fed_done, 1, __ATOMIC_RELEASE);
		_exit(rc);
	}
	t_fork_go(go);
	assert_int_equal(waitpid(feeder, &st_, 0), feeder);
	assert_true(WIFEXITED(st_));
	assert_int_equal(WEXITSTATUS(st_), 0);
	assert_int_equal(t_wait_all(NPROC, pids), 0);

	assert_int_equal(t_recs_drain(h, &recs), FLASH_OK);
	assert_int_equal(t_ledger_check(h, &recs, 1, 10, FLASH_LIMIT_MAX, &lg), 0);
	for (int i = 0; i < NPROC; i++)
		ok += e->ok[i];
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, e->feed);
	assert_int_equal(si.available, 0);
	assert_int_equal(lg.active_qty, e->feed);
	assert_int_equal(ok, e->feed);
	t_recs_free(&recs);
	t_shared_free(e, sizeof *e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_one_hot_sku_k1_sells_exactly_the_units_to_distinct_users),
		T(test_one_hot_sku_k2_sells_exactly_the_units),
		T(test_one_hot_sku_k2_with_spare_stock_fills_every_user_to_k),
		T(test_sharded_sku_k1_sells_exactly_the_units),
		T(test_sharded_sku_k2_sells_exactly_the_units),
		T(test_sharded_sku_k2_with_spare_stock_fills_every_user_to_k),
		T(test_concurrent_cancels_return_each_unit_once_one_shard),
		T(test_concurrent_cancels_return_each_unit_once_sharded),
		T(test_kill9_of_buyers_mid_hammer_then_recover_sells_exactly_the_units),
		T(test_buyers_racing_a_restock_feeder_at_the_sell_out_edge_never_oversell),
		T(test_activity_scope_limit_holds_across_two_skus),
		T(test_two_processes_restocking_and_buying_the_last_unit_never_oversell),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
