/*
 * wal_bench.c -- how fast the WAL makes records durable and reads them back.
 *
 *   wal_bench [--dir DIR] [--threads N] [--records N] [--segment-mb N]
 *
 * Three measurements on one private directory (a mkdtemp under $TMPDIR
 * unless --dir), each on a fresh WAL:
 *   submit     N threads each call wal_submit() per record (a buyer waiting
 *              for its own record): records/s, group sizes, submit latency
 *   drain      producers append without waiting while one committer thread
 *              loops wal_commit() (the daemon pattern): records/s and the
 *              append-to-durable latency
 *   replay     wal_replay() of everything written by `drain`: records/s
 * plus the fdatasync latency histogram of each run (log2 buckets in us) and
 * CRC-32C throughput.  Every figure printed is measured in this run.
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

#include "crc32c.h"
#include "wal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return v[i];
}

static int rm_one(const char *p, const struct stat *st, int fl, struct FTW *f)
{
	(void)st; (void)fl; (void)f;
	return remove(p);
}

static void print_sync_hist(const char *phase, const struct wal_stats *s)
{
	printf("%s fdatasync: %" PRIu64 " calls, mean %.1f us, max %.1f us; histogram (us: count):",
	       phase, s->commits, s->commits ? (double)s->sync_ns_total / (double)s->commits / 1e3 : 0.0,
	       (double)s->sync_ns_max / 1e3);
	for (int b = 0; b < WAL_HIST_BUCKETS; b++)
		if (s->sync_hist[b])
			printf(" [%llu,%llu):%" PRIu64, b ? 1ull << b : 0ull, 2ull << b, s->sync_hist[b]);
	printf("\n");
}

static wal_t *fresh(const char *dir, const char *sub, uint64_t seg, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", dir, sub);
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = seg;
	wal_t *w;
	int rc = wal_open(path, &o, &w);
	if (rc != FLASH_OK) {
		fprintf(stderr, "wal_bench: wal_open %s: %s (%s)\n", path, flash_strerror(rc), strerror(errno));
		exit(1);
	}
	return w;
}

static void fill(struct flash_record *r, uint64_t i)
{
	memset(r, 0, sizeof *r);
	r->type = FLASH_REC_ORDER;
	r->activity_id = 1;
	r->sku_id = 1 + (uint32_t)(i % 16);
	r->qty = 1;
	r->order_no = i + 1;
	r->user_id = 1000 + i;
	r->ts_ns = (int64_t)i;
}

/* ---- submit: every thread waits for its own record ---- */

struct sub_arg {
	wal_t    *w;
	uint64_t  n;
	uint64_t *lat;      /* per-record submit latency, ns */
	uint64_t  base;
	int       rc;
};

static void *submit_thread(void *p)
{
	struct sub_arg *a = p;
	struct flash_record r;
	for (uint64_t i = 0; i < a->n; i++) {
		fill(&r, a->base + i);
		uint64_t lsn, t0 = now_ns();
		int rc = wal_append_record(a->w, &r, i + 1, &lsn);
		if (rc == FLASH_OK)
			rc = wal_sync(a->w, lsn);
		a->lat[i] = now_ns() - t0;
		if (rc != FLASH_OK) {
			a->rc = rc;
			break;
		}
	}
	return NULL;
}

/* ---- drain: producers append, one committer commits in a loop ---- */

struct drain_ctl {
	wal_t    *w;
	uint64_t  per_thread;
	int       producers_done;
	uint64_t *append_ns;   /* by LSN: when appended */
	uint64_t *durable_ns;  /* by LSN: when the committer saw it durable */
	uint64_t  total;
	int       rc;
};

struct prod_arg {
	struct drain_ctl *c;
	uint64_t          base;
};

static void *drain_producer(void *p)
{
	struct prod_arg *a = p;
	struct flash_record r;
	for (uint64_t i = 0; i < a->c->per_thread; i++) {
		fill(&r, a->base + i);
		uint64_t lsn, t = now_ns();
		if (wal_append_record(a->c->w, &r, i + 1, &lsn) != FLASH_OK)
			break;
		if (lsn - 1 < a->c->total)
			a->c->append_ns[lsn - 1] = t;
	}
	return NULL;
}

static void *drain_committer(void *p)
{
	struct drain_ctl *c = p;
	uint64_t seen = 0;
	for (;;) {
		int done = __atomic_load_n(&c->producers_done, __ATOMIC_ACQUIRE);
		int rc = wal_commit(c->w);
		if (rc != FLASH_OK) {
			c->rc = rc;
			return NULL;
		}
		uint64_t d = wal_durable_lsn(c->w), t = now_ns();
		for (; seen < d && seen < c->total; seen++)
			c->durable_ns[seen] = t;
		if (done && d >= c->total)
			return NULL;
		if (d == seen && !done && wal_next_lsn(c->w) == d + 1)
			sched_yield();
	}
}

static int replay_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	const struct wal_rec *r = p;
	uint64_t *sum = arg;
	*sum += r->wr_rec.order_no + r->wr_seq + lsn;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir_opt = NULL;
	int threads = 4;
	uint64_t records = 200000;
	uint64_t seg_mb = 64;
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "records", required_argument, NULL, 'n' },
		{ "segment-mb", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "d:t:n:s:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'd': dir_opt = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 'n': records = strtoull(optarg, NULL, 10); break;
		case 's': seg_mb = strtoull(optarg, NULL, 10); break;
		default:
			printf("usage: wal_bench [--dir DIR] [--threads N] [--records N] [--segment-mb N]\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	if (threads < 1 || threads > 256 || records < (uint64_t)threads || seg_mb < 1) {
		fprintf(stderr, "wal_bench: bad option\n");
		return 2;
	}
	char tmpl[4096];
	const char *dir = dir_opt;
	if (dir == NULL) {
		const char *t = getenv("TMPDIR");
		snprintf(tmpl, sizeof tmpl, "%s/wal-bench-XXXXXX", t ? t : "/tmp");
		if (mkdtemp(tmpl) == NULL) {
			perror("mkdtemp");
			return 1;
		}
		dir = tmpl;
	}
	uint64_t seg = seg_mb << 20;
	char path[4200];
	struct wal_stats s;

	/* CRC-32C throughput, both implementations, 64 MiB each. */
	{
		static unsigned char buf[1 << 20];
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = (unsigned char)(i * 31 + 7);
		uint32_t c = 0;
		uint64_t t0 = now_ns();
		for (int i = 0; i < 64; i++)
			c += crc32c(0, buf, sizeof buf);
		uint64_t t1 = now_ns();
		for (int i = 0; i < 64; i++)
			c -= crc32c_sw(0, buf, sizeof buf);
		uint64_t t2 = now_ns();
		printf("crc32c: %s %.2f GB/s, table %.2f GB/s (hw - table: %08x, 0 when they agree)\n", crc32c_impl(),
		       64.0 * sizeof buf / (double)(t1 - t0), 64.0 * sizeof buf / (double)(t2 - t1), c);
	}

	/* submit */
	{
		wal_t *w = fresh(dir, "submit", seg, path, sizeof path);
		uint64_t per = records / (uint64_t)threads;
		pthread_t th[256];
		struct sub_arg a[256];
		uint64_t *lat = malloc(per * (uint64_t)threads * sizeof *lat);
		uint64_t t0 = now_ns();
		for (int i = 0; i < threads; i++) {
			a[i] = (struct sub_arg){ .w = w, .n = per, .lat = lat + per * (uint64_t)i,
			                         .base = per * (uint64_t)i };
			pthread_create(&th[i], NULL, submit_thread, &a[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		uint64_t el = now_ns() - t0;
		for (int i = 0; i < threads; i++)
			if (a[i].rc != FLASH_OK) {
				fprintf(stderr, "wal_bench: submit: %s\n", flash_strerror(a[i].rc));
				return 1;
			}
		wal_stats_get(w, &s);
		uint64_t n = per * (uint64_t)threads;
		qsort(lat, n, sizeof *lat, cmp_u64);
		printf("submit: %d threads, %" PRIu64 " records in %.3f s = %.0f records/s; "
		       "%" PRIu64 " group commits, mean group %.1f, largest %" PRIu64 "; "
		       "latency p50 %.1f us p99 %.1f us max %.1f us\n",
		       threads, n, (double)el / 1e9, (double)n * 1e9 / (double)el, s.commits,
		       (double)s.frames / (double)(s.commits ? s.commits : 1), s.max_group,
		       (double)pct(lat, n, 50) / 1e3, (double)pct(lat, n, 99) / 1e3,
		       (double)lat[n - 1] / 1e3);
		print_sync_hist("submit", &s);
		free(lat);
		wal_close(w);
	}

	/* drain */
	uint64_t drained;
	{
		wal_t *w = fresh(dir, "drain", seg, path, sizeof path);
		struct drain_ctl c = { .w = w, .per_thread = records / (uint64_t)threads };
		c.total = c.per_thread * (uint64_t)threads;
		c.append_ns = calloc(c.total, sizeof *c.append_ns);
		c.durable_ns = calloc(c.total, sizeof *c.durable_ns);
		pthread_t cm, th[256];
		struct prod_arg a[256];
		uint64_t t0 = now_ns();
		pthread_create(&cm, NULL, drain_committer, &c);
		for (int i = 0; i < threads; i++) {
			a[i] = (struct prod_arg){ .c = &c, .base = c.per_thread * (uint64_t)i };
			pthread_create(&th[i], NULL, drain_producer, &a[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		__atomic_store_n(&c.producers_done, 1, __ATOMIC_RELEASE);
		pthread_join(cm, NULL);
		uint64_t el = now_ns() - t0;
		if (c.rc != FLASH_OK) {
			fprintf(stderr, "wal_bench: drain: %s\n", flash_strerror(c.rc));
			return 1;
		}
		wal_stats_get(w, &s);
		for (uint64_t i = 0; i < c.total; i++)
			c.durable_ns[i] -= c.append_ns[i];
		qsort(c.durable_ns, c.total, sizeof *c.durable_ns, cmp_u64);
		printf("drain: %d producers + 1 committer, %" PRIu64 " records in %.3f s = %.0f records/s "
		       "durable; %" PRIu64 " group commits, mean group %.1f, largest %" PRIu64 "; "
		       "append-to-durable p50 %.1f us p99 %.1f us; %.1f MB written, %" PRIu64 " files\n",
		       threads, c.total, (double)el / 1e9, (double)c.total * 1e9 / (double)el,
		       s.commits, (double)s.frames / (double)(s.commits ? s.commits : 1), s.max_group,
		       (double)pct(c.durable_ns, c.total, 50) / 1e3,
		       (double)pct(c.durable_ns, c.total, 99) / 1e3, (double)s.bytes / 1e6,
		       s.files_created);
		print_sync_hist("drain", &s);
		drained = c.total;
		free(c.append_ns);
		free(c.durable_ns);
		wal_close(w);
	}

	/* replay (page cache warm: the files were just written) */
	{
		uint64_t sum = 0;
		struct wal_replay_report rep;
		uint64_t t0 = now_ns();
		int rc = wal_replay(path, 0, replay_cb, &sum, 0, &rep);
		uint64_t el = now_ns() - t0;
		if (rc != FLASH_OK || rep.frames != drained) {
			fprintf(stderr, "wal_bench: replay: %s, %" PRIu64 " frames of %" PRIu64 "\n",
			        flash_strerror(rc), rep.frames, drained);
			return 1;
		}
		printf("replay: %" PRIu64 " records from %" PRIu64 " files in %.3f s = %.0f records/s (checksum %" PRIu64 ")\n",
		       rep.frames, rep.files, (double)el / 1e9, (double)rep.frames * 1e9 / (double)el, sum);
	}
	if (dir_opt == NULL)
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
