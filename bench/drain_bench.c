/*
 * drain_bench.c -- the daemon's drain loop and its hand-off to the MySQL
 * applier's thread, measured without MariaDB.
 *
 *   drain_bench [--orders N] [--round R] [--wal DIR] [--no-metrics] [--push-only N]
 *
 * drain (default): a producer thread places N orders into a fresh segment
 *   whose ring holds them all; then, timed, this thread drains them in
 *   rounds of at most R records (default 1024), each round what serve.c's
 *   does: flash_ring_drain -> wal_append_record -> wal_commit ->
 *   flash_durable_advance -> mdb_pump_push, and metrics_publish as
 *   `serve --metrics` does (an idle endpoint on a free loopback port;
 *   --no-metrics leaves it out).  The pump's applier is drain_stub_mysql.c:
 *   it takes every batch at once, so the pump's thread consumes as fast as
 *   the hand-off lets it, concurrently with the drain.  The WAL goes to DIR
 *   (default: a mkdtemp under /dev/shm, so fdatasync costs little and the
 *   loop's own work shows).  Prints the drain thread's CPU time and wall
 *   time per record, the wall time per record inside push (+ publish), and
 *   records/s.  Filling the rings first makes every run drain the same
 *   rounds, whatever the scheduler does with the producer.
 * --push-only N: only the hand-off: this thread pushes N records in pushes
 *   of 64 to the same stub pump (the default queue of 262144, warmed up by
 *   one lap first), as fast as it can, waiting out a full queue; the
 *   pusher's CPU time per record inside the pushes that went in (what the
 *   drain loop pays), wall time, and records/s until the pump took them all.
 *
 * The same source builds against any tree that has persist/mysql/mysql_pump.h:
 * bench/RESULTS.md says how it was run on main and on the urcu branch.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"
#include "flashstock_consumer.h"
#include "metrics.h"
#include "drain_stub_mysql.h"
#include "mysql_pump.h"
#include "serve.h"
#include "wal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread: what the drain loop itself spends,
 * without the time it is preempted (2 cores, three busy threads). */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int rm_one(const char *p, const struct stat *st, int fl, struct FTW *f)
{
	(void)st; (void)fl; (void)f;
	return remove(p);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "drain_bench: %s: %d\n", what, rc);
	exit(1);
}

static mdb_pump_t *stub_pump(uint32_t queue)
{
	struct mdb_pump_opts po;
	memset(&po, 0, sizeof po);
	po.mysql.url = "mysql://stub/none";
	po.applier = &drain_stub_applier;
	po.queue_records = queue;
	po.batch = 5000;
	mdb_pump_t *p;
	int rc = mdb_pump_start(&po, &p);
	if (rc != FLASH_OK)
		die("pump start", rc);
	return p;
}

/* ---- --push-only ---- */

/* Push records lsn+1 .. lsn+n in pushes of PUSH_B, waiting out a full
 * queue; *cpu gets the pusher's CPU time inside the pushes that went in. */
enum { PUSH_B = 64 };

static uint64_t push_range(mdb_pump_t *p, uint64_t lsn, uint64_t n, uint64_t *cpu,
                           uint64_t *waits)
{
	struct lsn_record v[PUSH_B];
	memset(v, 0, sizeof v);
	uint64_t end = lsn + n;
	while (lsn < end) {
		for (int i = 0; i < PUSH_B; i++) {
			v[i].lsn = lsn + 1 + (uint64_t)i;
			v[i].rec.type = FLASH_REC_ORDER;
			v[i].rec.order_no = v[i].lsn;
		}
		for (;;) {
			uint64_t c0 = cpu_ns();
			int rc = mdb_pump_push(p, v, PUSH_B);
			uint64_t c1 = cpu_ns();
			if (rc == FLASH_OK) {
				*cpu += c1 - c0;
				break;
			}
			if (rc != FLASH_EFULL)
				die("push", rc);
			/* a drop makes the pump look for a WAL it lacks: wait for
			 * room instead, so every record goes through the queue */
			(*waits)++;
			sched_yield();
		}
		lsn += PUSH_B;
	}
	return lsn;
}

static int push_only(uint64_t n)
{
	/* the daemon's default queue; a first lap of it warms it up (pages
	 * touched, chunks to recycle), then the timed run */
	mdb_pump_t *p = stub_pump(262144);
	uint64_t cpu = 0, waits = 0;
	uint64_t lsn = push_range(p, 0, 262144, &cpu, &waits);
	if (mdb_pump_wait(p, lsn, 60000) != FLASH_OK)
		die("pump wait", FLASH_EBUSY);
	cpu = waits = 0;
	uint64_t t0 = now_ns();
	uint64_t last = push_range(p, lsn, n, &cpu, &waits);
	uint64_t t1 = now_ns();
	if (mdb_pump_wait(p, last, 60000) != FLASH_OK)
		die("pump wait", FLASH_EBUSY);
	uint64_t t2 = now_ns();
	mdb_pump_stop(p, 1000);
	uint64_t k = last - lsn;
	printf("push-only: %" PRIu64 " records in pushes of %d: %.1f ns/record pusher CPU in "
	       "pushes, %.1f ns/record wall pushing (full queue waited out %" PRIu64 " times), "
	       "%.0f records/s through the pump\n", k, PUSH_B, (double)cpu / (double)k,
	       (double)(t1 - t0) / (double)k, waits, (double)k * 1e9 / (double)(t2 - t0));
	return 0;
}

/* ---- drain ---- */

struct drain {
	flash_t *h;
	wal_t *w;
	mdb_pump_t *pump;
	struct lsn_record *push;
	size_t npush, cappush;
	uint64_t *adv;      /* per slot: highest seq drained this round */
	uint32_t *touched;
	uint32_t ntouched, cap;
	int err;
};

static int drain_cb(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct drain *d = arg;
	uint64_t lsn;
	if (rec->slot >= d->cap) {
		d->err = 1;
		return 1;
	}
	if (d->adv[rec->slot] == 0)
		d->touched[d->ntouched++] = rec->slot;
	if (seq > d->adv[rec->slot])
		d->adv[rec->slot] = seq;
	if (wal_append_record(d->w, rec, seq, &lsn) != FLASH_OK) {
		d->err = 1;
		return 1;
	}
	if (d->npush == d->cappush) {
		d->cappush = d->cappush ? d->cappush * 2 : 4096;
		d->push = realloc(d->push, d->cappush * sizeof *d->push);
		if (d->push == NULL)
			die("realloc", FLASH_ENOMEM);
	}
	d->push[d->npush].lsn = lsn;
	d->push[d->npush].rec = *rec;
	d->npush++;
	return 0;
}

struct producer {
	const char *seg;
	uint64_t first_user, n;
	int rc;
};

static void *producer_main(void *arg)
{
	struct producer *pr = arg;
	flash_t *h;
	if ((pr->rc = flash_open(pr->seg, 0, &h)) != FLASH_OK)
		return NULL;
	for (uint64_t i = 0; i < pr->n; i++) {
		struct flash_order_req r = { .activity_id = 1, .sku_id = 1, .qty = 1,
		                             .user_id = pr->first_user + i };
		struct flash_order_res res;
		int rc;
		while ((rc = flash_order(h, &r, &res)) == FLASH_EBUSY)
			sched_yield();   /* ring full: the drain frees it */
		if (rc != FLASH_OK) {
			pr->rc = rc;
			break;
		}
	}
	flash_close(h);
	return NULL;
}

static int drain_run(uint64_t orders, uint32_t round, const char *wal_arg, int with_metrics)
{
	const unsigned producers = 1;
	char seg[64], tmpl[] = "/dev/shm/fs-drain-bench-XXXXXX";
	const char *wal_dir = wal_arg;
	snprintf(seg, sizeof seg, "/fs-drain-bench-%d", (int)getpid());
	if (wal_dir == NULL && (wal_dir = mkdtemp(tmpl)) == NULL)
		die("mkdtemp", errno);
	struct flash_seg_opts so;
	flash_seg_opts_default(&so);
	so.max_users = (uint32_t)orders + 1024;
	so.max_orders = (uint32_t)orders + 64u * (producers + 2) + 1024;
	so.max_procs = producers + 2;
	so.ring_records = FLASH_RING_MIN;
	while (so.ring_records < orders + 64)   /* every order fits */
		so.ring_records *= 2;
	so.durability = FLASH_DURABILITY_ASYNC;
	int rc = flash_seg_create(seg, &so);
	if (rc != FLASH_OK)
		die("segment create", rc);
	struct drain d;
	memset(&d, 0, sizeof d);
	if ((rc = flash_open(seg, 0, &d.h)) != FLASH_OK)
		die("open", rc);
	struct flash_activity a = { .id = 1, .limit_per_user = 1, .max_qty = 1,
	                            .scope = FLASH_SCOPE_ACTIVITY };
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	a.start_ns = (int64_t)ts.tv_sec * 1000000000 - 1000000000;
	a.end_ns = a.start_ns + 3600ll * 1000000000;
	if ((rc = flash_activity_add(d.h, &a)) != FLASH_OK ||
	    (rc = flash_sku_add(d.h, 1, 1, orders, 4)) != FLASH_OK)
		die("catalog", rc);
	struct wal_opts wo;
	wal_opts_default(&wo);
	wo.durability = WAL_DUR_ASYNC;
	if ((rc = wal_open(wal_dir, &wo, &d.w)) != FLASH_OK)
		die("wal open", rc);
	d.cap = so.max_procs;
	d.adv = calloc(d.cap, sizeof *d.adv);
	d.touched = calloc(d.cap, sizeof *d.touched);
	d.pump = stub_pump(262144);
	metrics_t *mt = NULL;
	struct serve_stats sst;
	memset(&sst, 0, sizeof sst);
	if (with_metrics) {
		char err[256];
		if (metrics_start("127.0.0.1:0", seg, d.w, d.pump, &mt, NULL, err, sizeof err) != 0) {
			fprintf(stderr, "drain_bench: metrics: %s\n", err);
			exit(1);
		}
	}

	struct producer *pr = calloc(producers, sizeof *pr);
	pthread_t *th = calloc(producers, sizeof *th);
	for (unsigned i = 0; i < producers; i++) {
		pr[i] = (struct producer){ .seg = seg, .first_user = 1 + i * (orders / producers),
		                           .n = orders / producers };
		pthread_create(&th[i], NULL, producer_main, &pr[i]);
	}
	for (unsigned i = 0; i < producers; i++) {
		pthread_join(th[i], NULL);
		if (pr[i].rc != FLASH_OK)
			die("order", pr[i].rc);
	}
	uint64_t want = 2 + (orders / producers) * producers;   /* + activity, sku */
	uint64_t records = 0, busy_ns = 0, push_ns = 0, rounds = 0, dropped = 0, cpu_busy = 0;
	uint64_t t0 = now_ns();
	while (records < want) {
		uint64_t r0 = now_ns(), rc0 = cpu_ns();
		uint32_t n = 0;
		if ((rc = flash_ring_drain(d.h, drain_cb, &d, round, &n)) != FLASH_OK || d.err)
			die("drain", rc ? rc : d.err);
		if (n == 0) {
			struct timespec z = { 0, 20000 };
			nanosleep(&z, NULL);
			continue;
		}
		if ((rc = wal_commit(d.w)) != FLASH_OK)
			die("wal commit", rc);
		for (uint32_t i = 0; i < d.ntouched; i++) {
			flash_durable_advance(d.h, d.touched[i], d.adv[d.touched[i]]);
			d.adv[d.touched[i]] = 0;
		}
		d.ntouched = 0;
		uint64_t p0 = now_ns();
		if (mdb_pump_push(d.pump, d.push, d.npush) == FLASH_EFULL)
			dropped += d.npush;
		if (mt != NULL) {
			sst.rounds = rounds + 1;
			sst.records = records + n;
			sst.commits = rounds + 1;
			metrics_publish(mt, &sst);
		}
		uint64_t p1 = now_ns();
		cpu_busy += cpu_ns() - rc0;
		records += n;
		d.npush = 0;
		rounds++;
		push_ns += p1 - p0;
		busy_ns += p1 - r0;
	}
	uint64_t t1 = now_ns();
	metrics_stop(mt);
	int wrc = mdb_pump_wait(d.pump, wal_durable_lsn(d.w), 60000);
	mdb_pump_stop(d.pump, 1000);
	printf("drain: %" PRIu64 " records, %" PRIu64 " rounds (%.0f records each): "
	       "%.1f ns/record drain CPU, %.1f ns/record drain wall (%.1f of it in pump_push%s), "
	       "%.0f records/s; dropped %" PRIu64 ", applier %s\n",
	       records, rounds, (double)records / (double)rounds,
	       (double)cpu_busy / (double)records, (double)busy_ns / (double)records,
	       (double)push_ns / (double)records, mt ? " + metrics_publish" : "",
	       (double)records * 1e9 / (double)(t1 - t0), dropped,
	       wrc == FLASH_OK ? "caught up" : "BEHIND");
	wal_close(d.w);
	flash_close(d.h);
	flash_seg_destroy(seg);
	if (wal_arg == NULL)
		nftw(wal_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(pr);
	free(th);
	free(d.push);
	free(d.adv);
	free(d.touched);
	return wrc == FLASH_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint64_t orders = 1000000, push_n = 0;
	uint32_t round = 1024;
	int with_metrics = 1;
	const char *wal = NULL;
	static const struct option lo[] = {
		{ "orders", required_argument, NULL, 'n' },
		{ "round", required_argument, NULL, 'r' },
		{ "wal", required_argument, NULL, 'w' },
		{ "push-only", required_argument, NULL, 'o' },
		{ "no-metrics", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n': orders = strtoull(optarg, NULL, 10); break;
		case 'r': round = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'w': wal = optarg; break;
		case 'o': push_n = strtoull(optarg, NULL, 10); break;
		case 'M': with_metrics = 0; break;
		default:
			fprintf(stderr, "usage: drain_bench [--orders N] [--round R] [--wal DIR] "
			        "[--push-only N] [--no-metrics]\n");
			return 2;
		}
	}
	if (push_n)
		return push_only(push_n);
	if (orders == 0 || round == 0)
		return 2;
	return drain_run(orders, round, wal, with_metrics);
}
