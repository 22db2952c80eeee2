/*
 * test_wal_serve.c -- the daemon loop (persist/daemon/serve.c) against a real
 * segment: sync orders are acknowledged after the WAL holds them; a daemon
 * that died after its fdatasync but before marking records durable is
 * followed by one that does not write them twice; a recreated segment whose
 * seqs start over is not mistaken for the old one; a failing fdatasync marks
 * the segment failed and sync buyers get FLASH_EDURABILITY.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"
#include "pio.h"
#include "serve.h"
#include "wal_testutil.h"

struct seen {
	uint64_t frames;
	uint64_t orders;
	uint64_t max_seq[16];    /* per slot */
	uint64_t dup_or_gap;     /* a slot's seq not previous + 1 */
	uint64_t order_no[4096];
};

static int seen_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct seen *s = arg;
	const struct wal_rec *r = p;
	s->frames++;
	if (type != WAL_T_RECORD || len != sizeof *r || r->wr_rec.slot >= 16) {
		s->dup_or_gap++;
		return 0;
	}
	uint16_t slot = r->wr_rec.slot;
	if (r->wr_seq != s->max_seq[slot] + 1)
		s->dup_or_gap++;
	s->max_seq[slot] = r->wr_seq;
	if (r->wr_rec.type == FLASH_REC_ORDER && s->orders < 4096)
		s->order_no[s->orders++] = r->wr_rec.order_no;
	return 0;
}

static void replay_seen(const char *dir, struct seen *s)
{
	memset(s, 0, sizeof *s);
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, seen_cb, s, 0, &rep), FLASH_OK);
}

static void base_opts(struct serve_opts *o, const char *seg, const char *dir)
{
	serve_opts_default(o);
	o->segment = seg;
	o->wal_dir = dir;
	o->wal_segment_bytes = 1 << 20;
	o->log_level = PLOG_ERROR;
	o->idle_us_max = 200;
}

static void serve_start(struct serve_thread *t, const char *seg, const char *dir)
{
	memset(t, 0, sizeof *t);
	base_opts(&t->o, seg, dir);
	t->o.stop = &t->stop;
	assert_int_equal(pthread_create(&t->th, NULL, serve_thread_main, t), 0);
}

static void serve_stop(struct serve_thread *t)
{
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t->th, NULL);
}

static void catalog(flash_t *h)
{
	assert_int_equal(t_activity(h, 1, 64, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 100000, 1), FLASH_OK);
}

static void test_sync_orders_acknowledged_are_in_the_wal_once(void **st)
{
	(void)st;
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	serve_start(&t, name, dir);
	catalog(h);
	enum { N = 200 };
	uint64_t nos[N];
	for (int i = 0; i < N; i++) {
		struct flash_order_res res;
		assert_int_equal(t_order(h, 1, 1, 1000 + (uint64_t)i % 50, 1, 0, 0, &res), FLASH_OK);
		nos[i] = res.order_no;
	}
	serve_stop(&t);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.st.records, N + 2);     /* activity, sku, orders */
	assert_int_equal(t.st.skipped, 0);
	/* One lag sample per round that committed records. */
	uint64_t lag_n = 0;
	for (int b = 0; b < WAL_HIST_BUCKETS; b++)
		lag_n += t.st.lag_hist[b];
	assert_int_equal(lag_n, t.st.commits);
	assert_true(t.st.lag_ns_max > 0);
	struct seen s;
	replay_seen(dir, &s);
	assert_int_equal(s.frames, N + 2);
	assert_int_equal(s.dup_or_gap, 0);
	assert_int_equal(s.orders, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(s.order_no[i], nos[i]);
	wt_rmdir(dir);
}

/* The previous daemon wrote and fdatasync'd the records, then died before
 * flash_durable_advance(): emulate it with a consumer handle that drains into
 * the WAL and closes without marking anything. */
static int dead_daemon_cb(void *arg, const struct flash_record *rec, uint64_t seq)
{
	return wal_append_record(arg, rec, seq, NULL) != FLASH_OK;
}

/* The WAL as the dead daemon opened it: with its segment's identity. */
static int dead_daemon_wal_open(flash_t *c, const char *dir, wal_t **w)
{
	struct flash_ident id;
	struct wal_opts wo;
	assert_int_equal(flash_ident_get(c, &id), FLASH_OK);
	wal_opts_default(&wo);
	wo.incarnation = id.incarnation;
	return wal_open(dir, &wo, w);
}

static void test_restart_does_not_write_records_twice(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char *dir = wt_mkdtemp();
	catalog(h);
	enum { M = 40, K = 25 };
	for (int i = 0; i < M; i++)
		assert_int_equal(t_order(h, 1, 1, 1 + (uint64_t)i, 1, 0, 0, NULL), FLASH_OK);

	flash_t *c;
	assert_int_equal(flash_open(name, 0, &c), FLASH_OK);
	wal_t *w;
	assert_int_equal(dead_daemon_wal_open(c, dir, &w), FLASH_OK);
	uint32_t drained;
	assert_int_equal(flash_ring_drain(c, dead_daemon_cb, w, UINT32_MAX, &drained), FLASH_OK);
	assert_int_equal(drained, M + 2);
	assert_int_equal(wal_close(w), FLASH_OK);
	assert_int_equal(flash_close(c), FLASH_OK);

	/* Orders placed while no daemon runs are after the dead daemon's. */
	for (int i = 0; i < K; i++)
		assert_int_equal(t_order(h, 1, 1, 100 + (uint64_t)i, 1, 0, 0, NULL), FLASH_OK);

	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	o.once = 1;
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.replayed, M + 2);
	assert_int_equal(ss.skipped, M + 2);
	assert_int_equal(ss.records, K);

	/* Marked durable this time: a further restart skips and writes nothing. */
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.skipped, 0);
	assert_int_equal(ss.records, 0);

	struct seen s;
	replay_seen(dir, &s);
	assert_int_equal(s.frames, M + 2 + K);
	assert_int_equal(s.orders, M + K);
	assert_int_equal(s.dup_or_gap, 0);
	wt_rmdir(dir);
}

/* Same WAL, new segment (a reboot, the catalog loaded again): the WAL
 * belongs to the old segment's incarnation, so serve refuses it and writes
 * nothing -- a second history would follow the first in one WAL, its order
 * numbers repeated -- and says how to rebuild (serve --recover). */
static void test_recreated_segment_is_refused_the_old_wal(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	struct serve_opts o;
	struct serve_stats ss;
	for (int gen = 0; gen < 2; gen++) {
		flash_t *h = t_seg_new(NULL, name, sizeof name);
		catalog(h);
		for (int i = 0; i < 10; i++)
			assert_int_equal(t_order(h, 1, 1, 1 + (uint64_t)i, 1, 0, 0, NULL), FLASH_OK);
		if (gen == 0) {
			/* generation 0 dies unmarked, as above */
			flash_t *c;
			assert_int_equal(flash_open(name, 0, &c), FLASH_OK);
			wal_t *w;
			assert_int_equal(dead_daemon_wal_open(c, dir, &w), FLASH_OK);
			assert_int_equal(flash_ring_drain(c, dead_daemon_cb, w, UINT32_MAX, NULL), FLASH_OK);
			assert_int_equal(wal_close(w), FLASH_OK);
			assert_int_equal(flash_close(c), FLASH_OK);
		} else {
			base_opts(&o, name, dir);
			o.once = 1;
			o.log_level = -1;
			assert_int_equal(serve_run(&o, &ss), -1);
			assert_int_equal(ss.refused, 1);
			assert_int_equal(ss.rc, FLASH_EWAL_IDENT);   /* the reason, with the refusal */
			assert_int_equal(ss.replayed, 0);
			assert_int_equal(ss.records, 0);
		}
		t_teardown(NULL);
	}
	struct seen s;
	memset(&s, 0, sizeof s);
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, seen_cb, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.frames, 12);
	assert_int_equal(s.orders, 10);
	wt_rmdir(dir);
}

/* A --recover that stops half way (here: a record the new segment has no
 * room for) leaves a segment that is not the WAL's: it takes the WAL's
 * incarnation only once every record is applied, so a plain serve on the
 * half-built segment is refused and writes nothing. */
static void test_a_failed_recover_leaves_a_segment_its_wal_refuses(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	catalog(h);
	for (int i = 0; i < 40; i++)
		assert_int_equal(t_order(h, 1, 1, 1 + (uint64_t)i, 1, 0, 0, NULL), FLASH_OK);
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	o.once = 1;
	assert_int_equal(serve_run(&o, &ss), 0);
	t_teardown(NULL);

	struct flash_seg_opts so;
	t_opts_small(&so);
	so.max_orders = 16;               /* the WAL holds 40 orders */
	h = t_seg_new(&so, name, sizeof name);
	base_opts(&o, name, dir);
	o.once = 1;
	o.recovery.on = 1;
	o.log_level = -1;
	assert_int_equal(serve_run(&o, &ss), -1);
	assert_int_equal(ss.refused, 0);
	assert_true(ss.applied > 0);
	struct flash_ident id;
	struct wal_ident wi;
	assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_true(id.incarnation != wi.wi_incarnation);

	o.recovery.on = 0;
	assert_int_equal(serve_run(&o, &ss), -1);
	assert_int_equal(ss.refused, 1);
	assert_int_equal(ss.records, 0);
	struct seen s;
	replay_seen(dir, &s);
	assert_int_equal(s.frames, 42);
	wt_rmdir(dir);
}

/* ---- failure ---- */

static int g_syncs;

/* The first fdatasync (wal_open's, of the existing file) works; every later
 * one fails. */
static int eio_fdatasync(int fd)
{
	if (__atomic_fetch_add(&g_syncs, 1, __ATOMIC_SEQ_CST) == 0)
		return ((int (*)(int))pio_default("fdatasync"))(fd);
	errno = EIO;
	return -1;
}

struct buyer {
	const char *name;
	int         rc;
};

static void *sync_buyer(void *arg)
{
	struct buyer *b = arg;
	flash_t *h;
	b->rc = flash_open(b->name, 0, &h);
	if (b->rc != FLASH_OK)
		return NULL;
	b->rc = t_order(h, 1, 1, 77, 1, 0, 0, NULL);
	flash_close(h);
	return NULL;
}

static void test_wal_failure_fails_sync_orders(void **st)
{
	(void)st;
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	/* The catalog goes to the WAL while the disk works. */
	struct serve_thread t;
	serve_start(&t, name, dir);
	catalog(h);
	serve_stop(&t);
	assert_int_equal(t.rc, 0);

	/* The WAL file exists; from now on every fdatasync fails. */
	struct buyer b = { .name = name, .rc = 1 };
	pthread_t bt;
	assert_int_equal(pthread_create(&bt, NULL, sync_buyer, &b), 0);
	g_syncs = 0;
	pio_override("fdatasync", (pio_fn)eio_fdatasync, NULL);
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	volatile sig_atomic_t never = 0;
	o.stop = &never;
	o.log_level = -1;   /* the failure is expected: keep stderr quiet */
	int rc = serve_run(&o, &ss);
	pthread_join(bt, NULL);
	pio_reset();
	assert_int_equal(rc, -1);
	assert_int_equal(ss.rc, FLASH_EWAL_FAILED);
	assert_int_equal(ss.records, 1);
	assert_int_equal(b.rc, FLASH_EDURABILITY);
	/* The record was written but never made durable: the catalog is all
	 * the WAL is sure to hold, and a new daemon cannot serve until the
	 * failure is dealt with (sync orders keep failing). */
	struct flash_stats fs;
	assert_int_equal(flash_stats_get(h, &fs), FLASH_OK);
	assert_int_equal(t_order(h, 1, 1, 78, 1, 0, 0, NULL), FLASH_EDURABILITY);
	/* and why, for `status` once this daemon is gone */
	struct flash_durability_info d;
	assert_int_equal(flash_durability_get(h, &d), FLASH_OK);
	assert_int_equal(d.failed, 1);
	assert_int_equal(d.step, FLASH_WAL_STEP_SYNC);
	assert_int_equal(d.err, EIO);
	assert_true(d.when_ns > 0);
	wt_rmdir(dir);
}

/* ---- kill -9 of the daemon mid-stream ---- */

/* Not in the ThreadSanitizer build (see main): it does not support fork()
 * from a process with threads followed by more threads in the child; the
 * plain and ASan builds run it. */
#if !defined(__SANITIZE_THREAD__)
enum { KB_PROCS = 3, KB_ORDERS = 400 };

struct kill_shared {
	uint64_t acked[KB_PROCS];   /* orders each buyer saw acknowledged */
	uint64_t other[KB_PROCS];   /* any other outcome */
};

static pid_t spawn_serve(const char *seg, const char *dir)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct serve_opts o;
		struct serve_stats ss;
		base_opts(&o, seg, dir);
		o.recover_ms = 20;
		volatile sig_atomic_t never = 0;
		o.stop = &never;
		_exit(serve_run(&o, &ss) == 0 ? 0 : 1);
	}
	return pid;
}

/*
 * Buyers place sync orders while the daemon is killed with SIGKILL and
 * restarted again and again.  Afterwards the WAL holds every record exactly
 * once per (slot, seq) -- no gap, no duplicate -- and every order a buyer
 * saw acknowledged.
 */
static void test_daemon_killed_mid_stream_loses_nothing_and_writes_nothing_twice(void **st)
{
	(void)st;
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	so.max_users = 2048;
	so.max_orders = 2048;
	so.ring_records = 64;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	catalog(h);
	char *dir = wt_mkdtemp();
	struct kill_shared *ks = mmap(NULL, sizeof *ks, PROT_READ | PROT_WRITE,
	                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(ks != MAP_FAILED);
	memset(ks, 0, sizeof *ks);

	pid_t serve = spawn_serve(name, dir);
	pid_t buyers[KB_PROCS];
	for (int p = 0; p < KB_PROCS; p++) {
		buyers[p] = fork();
		if (buyers[p] == 0) {
			flash_t *bh;
			if (flash_open(name, 0, &bh) != FLASH_OK)
				_exit(1);
			for (int i = 0; i < KB_ORDERS; i++) {
				uint64_t user = 1 + (uint64_t)p * KB_ORDERS + (uint64_t)i;
				int rc = t_order(bh, 1, 1, user, 1, 0, 0, NULL);
				if (rc == FLASH_OK)
					__atomic_fetch_add(&ks->acked[p], 1, __ATOMIC_SEQ_CST);
				else
					__atomic_fetch_add(&ks->other[p], 1, __ATOMIC_SEQ_CST);
			}
			flash_close(bh);
			_exit(0);
		}
	}
	/* Kill and restart the daemon until every buyer is done. */
	int kills = 0, running = KB_PROCS;
	unsigned seed = (unsigned)getpid();
	while (running > 0) {
		t_sleep_ms(5 + rand_r(&seed) % 40);
		kill(serve, SIGKILL);
		waitpid(serve, NULL, 0);
		kills++;
		serve = spawn_serve(name, dir);
		for (int p = 0; p < KB_PROCS; p++) {
			int status;
			if (buyers[p] > 0 && waitpid(buyers[p], &status, WNOHANG) == buyers[p]) {
				assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
				buyers[p] = 0;
				running--;
			}
		}
	}
	kill(serve, SIGTERM);
	int status;
	waitpid(serve, &status, 0);
	/* SIGTERM is not handled in this child (no handler): it just dies,
	 * like the SIGKILLs.  A last clean run writes what is left. */
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	o.once = 1;
	assert_int_equal(serve_run(&o, &ss), 0);

	uint64_t acked = 0, other = 0;
	for (int p = 0; p < KB_PROCS; p++) {
		acked += ks->acked[p];
		other += ks->other[p];
	}
	assert_int_equal(acked, KB_PROCS * KB_ORDERS);
	assert_int_equal(other, 0);
	struct seen s;
	replay_seen(dir, &s);
	assert_int_equal(s.dup_or_gap, 0);
	assert_int_equal(s.orders, acked);
	assert_int_equal(s.frames, acked + 2);
	print_message("    %d daemon kills, %" PRIu64 " orders acknowledged, %" PRIu64
	              " WAL frames, %" PRIu64 " skipped by the last start\n",
	              kills, acked, s.frames, ss.skipped);
	munmap(ks, sizeof *ks);
	wt_rmdir(dir);
}
#endif

/* ---- rebuild after a reboot ---- */

struct state {
	uint32_t nsku;
	struct flash_sku_info sku[8];
	uint64_t orders_max;
	struct flash_order_info order[256];
};

static void state_take(flash_t *h, struct state *s)
{
	memset(s, 0, sizeof *s);
	while (s->nsku < 8 && flash_sku_at(h, s->nsku, &s->sku[s->nsku]) == FLASH_OK)
		s->nsku++;
	s->orders_max = flash_orders_max(h);
	assert_true(s->orders_max <= 256);
	for (uint64_t no = 1; no <= s->orders_max; no++) {
		assert_int_equal(flash_order_get(h, no, &s->order[no - 1]), FLASH_OK);
		s->order[no - 1].created_ns = 0;   /* replay need not keep the creation time */
	}
}

/* The segment is gone (a reboot); `serve --recover` on a fresh segment of
 * the same shape rebuilds stock, orders, cancels and restocks from the WAL;
 * a second --recover on the rebuilt segment is refused and changes nothing. */
static void test_recover_rebuilds_the_segment_from_the_wal(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	catalog(h);
	assert_int_equal(flash_sku_add(h, 1, 2, 50, 2), FLASH_OK);
	uint64_t nos[40];
	for (int i = 0; i < 40; i++) {
		struct flash_order_res res;
		assert_int_equal(t_order(h, 1, 1 + (uint32_t)(i % 2), 1 + (uint64_t)i, 1 + (uint32_t)(i % 3),
		                         0, 0, &res), FLASH_OK);
		nos[i] = res.order_no;
	}
	for (int i = 0; i < 40; i += 7)
		assert_int_equal(flash_cancel(h, nos[i], NULL), FLASH_OK);
	assert_int_equal(flash_restock(h, 1, 2, 10), FLASH_OK);
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	o.once = 1;
	assert_int_equal(serve_run(&o, &ss), 0);
	uint64_t in_wal = ss.records;
	struct state *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	state_take(h, before);
	assert_int_equal(before->nsku, 2);
	t_teardown(NULL);     /* close and unlink: the segment is gone */

	h = t_seg_new(NULL, name, sizeof name);
	base_opts(&o, name, dir);
	o.once = 1;
	o.recovery.on = 1;
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.applied, in_wal);
	assert_int_equal(ss.present, 0);
	assert_int_equal(ss.records, 0);
	/* The rebuild took the name only when complete: a handle opened on
	 * the empty placeholder before still sees that placeholder. */
	state_take(h, after);
	assert_int_equal(after->nsku, 0);
	t_untrack_handle(h);
	assert_int_equal(flash_close(h), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
	t_track_handle(h);
	state_take(h, after);
	assert_memory_equal(before, after, sizeof *before);

	/* Again on the rebuilt segment: it carries the WAL's identity, so the
	 * rebuild is found done -- nothing is applied twice (a restock would
	 * count twice), nothing changes. */
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.applied, 0);
	state_take(h, after);
	assert_memory_equal(before, after, sizeof *before);

	/* New orders after the rebuild get new numbers and reach the WAL. */
	struct flash_order_res res;
	assert_int_equal(t_order(h, 1, 1, 999, 1, 0, 0, &res), FLASH_OK);
	assert_true(res.order_no > before->orders_max);
	o.recovery.on = 0;
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.records, 1);
	assert_int_equal(ss.skipped, 0);
	free(before);
	free(after);
	wt_rmdir(dir);
}

#ifdef FLASH_HAVE_MHD
/* ---- metrics endpoint ---- */

static void test_metrics_endpoint_counts_the_orders_placed(void **st)
{
	(void)st;
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	memset(&t, 0, sizeof t);
	base_opts(&t.o, name, dir);
	t.o.stop = &t.stop;
	t.o.metrics = "127.0.0.1:0";
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);
	catalog(h);
	enum { N = 77 };
	for (int i = 0; i < N; i++)
		assert_int_equal(t_order(h, 1, 1, 500 + (uint64_t)i, 1, 0, 0, NULL), FLASH_OK);
	/* Sync orders returned, so the serve thread is listening by now. */
	uint16_t port = (uint16_t)__atomic_load_n(&t.st.metrics_port, __ATOMIC_ACQUIRE);
	assert_true(port != 0);
	char *body = t_metrics_get(port);
	assert_non_null(body);
	assert_non_null(strstr(body, "200 OK"));
	assert_int_equal(t_metrics_sample(body, "flashstock_segment_up"), 1);
	assert_int_equal(t_metrics_sample(body, "flashstock_orders_total"), N);
	assert_int_equal(t_metrics_sample(body, "flashstock_wal_durable_lsn"), N + 2);
	assert_int_equal(t_metrics_sample(body, "flashstock_wal_failed"), 0);
	assert_true(t_metrics_sample(body, "flashstock_wal_commits_total") >= 1);
	assert_true(t_metrics_sample(body, "flashstock_wal_fdatasync_seconds_count") >= 1);
	assert_non_null(strstr(body, "flashstock_durable_lag_seconds_bucket{le=\"+Inf\"}"));
	free(body);
	/* The daemon's own counter is published after each round: wait for
	 * the round that acknowledged the last order to publish it. */
	uint64_t recs = 0;
	for (int i = 0; i < 500 && recs != N + 2; i++) {
		body = t_metrics_get(port);
		assert_non_null(body);
		recs = t_metrics_sample(body, "flashstock_serve_records_total");
		free(body);
		if (recs != N + 2)
			t_sleep_ms(10);
	}
	assert_int_equal(recs, N + 2);
	serve_stop(&t);
	assert_int_equal(t.rc, 0);
	wt_rmdir(dir);
}
#endif

/* A second daemon is refused before it reads or cuts anything: on the same
 * segment (another WAL) by the segment's consumer claim, naming nothing
 * new; on another segment with the same WAL by the directory's lock. */
static void test_second_daemon_on_the_segment_or_the_wal_is_refused(void **st)
{
	(void)st;
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	serve_start(&t, name, dir);
	catalog(h);
	/* Wait until the first daemon has written the catalog: it holds the
	 * lock from before its first round. */
	struct seen s;
	do {
		t_sleep_ms(5);
		memset(&s, 0, sizeof s);
		struct wal_replay_report rep;
		wal_replay(dir, 0, seen_cb, &s, 0, &rep);
	} while (s.frames < 2);
	struct serve_opts o;
	struct serve_stats ss;
	char other_dir[600];
	snprintf(other_dir, sizeof other_dir, "%s/other", dir);
	base_opts(&o, name, other_dir);
	o.once = 1;
	o.log_level = -1;
	assert_int_equal(serve_run(&o, &ss), -1);
	assert_int_equal(ss.refused, 1);
	assert_int_equal(ss.rc, FLASH_EBUSY);
	assert_int_equal(ss.records, 0);
	struct stat sb;
	assert_int_equal(stat(other_dir, &sb), -1);   /* nothing made */
	struct flash_ident id;
	assert_int_equal(flash_ident_get(h, &id), FLASH_OK);
	assert_int_equal(id.consumer_pid, getpid());   /* the first daemon's (a thread here) */

	char other[64];
	flash_t *h2 = t_seg_new(NULL, other, sizeof other);
	(void)h2;
	base_opts(&o, other, dir);
	o.once = 1;
	o.log_level = -1;
	assert_int_equal(serve_run(&o, &ss), -1);
	assert_int_equal(ss.refused, 1);
	assert_int_equal(ss.rc, FLASH_EWAL_BUSY);
	assert_int_equal(ss.records, 0);
	serve_stop(&t);
	assert_int_equal(t.rc, 0);
	assert_int_equal(t.st.records, 2);
	wt_rmdir(dir);
}

/* The disk took the write and lost it, then failed the fdatasync. */
static ssize_t lost_pwrite(int fd, const void *b, size_t n, off_t off)
{
	(void)fd;
	(void)b;
	(void)off;
	return (ssize_t)n;
}

static int eio_always_fdatasync(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

/*
 * A daemon frees a record's ring room once it has written it to the WAL;
 * if the disk then loses that write (fdatasync fails, the page is gone),
 * the segment holds the record's effects and no log has it.  The next
 * daemon must see that the WAL ends before what its predecessor released
 * and refuse the segment, changing nothing.
 */
static void test_released_records_the_wal_lost_refuse_the_segment(void **st)
{
	(void)st;
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	uint32_t slot = (uint32_t)flash_slot(h);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	serve_start(&t, name, dir);
	catalog(h);
	uint64_t durable, taken;
	do {   /* durable and marked: the daemon is past its first round */
		t_sleep_ms(5);
		assert_int_equal(flash_ring_taken(h, slot, &durable, &taken), FLASH_OK);
	} while (durable < 2);
	pio_override("pwrite", (pio_fn)lost_pwrite, NULL);
	pio_override("fdatasync", (pio_fn)eio_always_fdatasync, NULL);
	assert_int_equal(t_order(h, 1, 1, 77, 1, 0, 0, NULL), FLASH_EDURABILITY);
	pthread_join(t.th, NULL);
	pio_reset();
	assert_int_equal(t.rc, -1);
	assert_int_equal(t.st.rc, FLASH_EWAL_FAILED);
	assert_int_equal(flash_ring_taken(h, slot, &durable, &taken), FLASH_OK);
	assert_int_equal(durable, 2);
	assert_int_equal(taken, 3);   /* written (so it seemed), released, lost */

	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	o.once = 1;
	o.log_level = -1;
	assert_int_equal(serve_run(&o, &ss), -1);
	assert_int_equal(ss.refused, 1);
	assert_int_equal(ss.rc, FLASH_EWAL_GAP);     /* records the WAL should hold are gone */
	assert_int_equal(ss.records, 0);
	assert_int_equal(flash_ring_taken(h, slot, &durable, &taken), FLASH_OK);
	assert_int_equal(durable, 2);
	assert_int_equal(taken, 3);
	struct seen s;
	replay_seen(dir, &s);
	assert_int_equal(s.frames, 2);
	wt_rmdir(dir);
}

/* ---- an async buyer is not held by the disk ---- */

static int slow_fdatasync(int fd)
{
	usleep(1000 * 1000);
	return ((int (*)(int))pio_default("fdatasync"))(fd);
}

static int count_orders_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(void)lsn;
	const struct wal_rec *r = p;
	if (type == WAL_T_RECORD && len == sizeof *r && r->wr_rec.type == FLASH_REC_ORDER)
		(*(uint64_t *)arg)++;
	return 0;
}

/*
 * Async durability acknowledges an order once it is in the ring; the ring's
 * room must then come back at the pace the daemon writes, not at the pace
 * the disk syncs: a buyer told FLASH_EBUSY by a healthy daemon is a buyer
 * refused for nothing.  Every fdatasync here takes a second (a slow or
 * busy disk); the buyer places four rings' worth of orders at 50,000 a
 * second -- a pace any drain keeps up with on a loaded machine, and a
 * ring's worth in a third of one stalled sync -- and must never hear
 * FLASH_EBUSY; the WAL must hold every order once the daemon stops.
 */
static void test_async_buyer_does_not_wait_for_fdatasync(void **st)
{
	(void)st;
	enum { RING = 1 << 14, N = 4 * RING, PACE_NS = 20000 };
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.ring_records = RING;
	so.max_procs = 4;
	so.max_users = 2 * N;
	so.max_orders = 2 * N;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	char *dir = wt_mkdtemp();
	struct serve_thread t;
	memset(&t, 0, sizeof t);
	base_opts(&t.o, name, dir);
	t.o.wal_segment_bytes = 64u << 20;   /* no new file in this test */
	t.o.stop = &t.stop;
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);
	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, N, 1), FLASH_OK);
	/* the daemon is up and has made the catalog durable */
	struct seen s;
	do {
		t_sleep_ms(5);
		memset(&s, 0, sizeof s);
		struct wal_replay_report rep;
		wal_replay(dir, 0, seen_cb, &s, 0, &rep);
	} while (s.frames < 2);
	pio_override("fdatasync", (pio_fn)slow_fdatasync, NULL);
	uint64_t ebusy = 0;
	struct timespec pace;
	clock_gettime(CLOCK_MONOTONIC, &pace);
	for (uint64_t u = 1; u <= N; u++) {
		int rc;
		if (u % 64 == 0) {   /* 64 orders per 1.28 ms */
			pace.tv_nsec += 64 * PACE_NS;
			if (pace.tv_nsec >= 1000000000L) {
				pace.tv_sec++;
				pace.tv_nsec -= 1000000000L;
			}
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &pace, NULL);
		}
		while ((rc = t_order(h, 1, 1, u, 1, 0, 0, NULL)) == FLASH_EBUSY) {
			ebusy++;
			sched_yield();
		}
		assert_int_equal(rc, FLASH_OK);
	}
	serve_stop(&t);
	pio_reset();
	assert_int_equal(t.rc, 0);
	print_message("%d async orders at 50,000/s, fdatasync 1 s: %" PRIu64 " FLASH_EBUSY answers\n", N, ebusy);
	assert_int_equal(ebusy, 0);
	uint64_t orders = 0;
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, count_orders_cb, &orders, 0, &rep), FLASH_OK);
	assert_int_equal(orders, N);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sync_orders_acknowledged_are_in_the_wal_once, t_teardown),
		cmocka_unit_test_teardown(test_restart_does_not_write_records_twice, t_teardown),
		cmocka_unit_test_teardown(test_recreated_segment_is_refused_the_old_wal, t_teardown),
		cmocka_unit_test_teardown(test_wal_failure_fails_sync_orders, t_teardown),
		cmocka_unit_test_teardown(test_async_buyer_does_not_wait_for_fdatasync, t_teardown),
		cmocka_unit_test_teardown(test_released_records_the_wal_lost_refuse_the_segment, t_teardown),
		cmocka_unit_test_teardown(test_second_daemon_on_the_segment_or_the_wal_is_refused, t_teardown),
		cmocka_unit_test_teardown(test_recover_rebuilds_the_segment_from_the_wal, t_teardown),
		cmocka_unit_test_teardown(test_a_failed_recover_leaves_a_segment_its_wal_refuses, t_teardown),
#ifdef FLASH_HAVE_MHD
		cmocka_unit_test_teardown(test_metrics_endpoint_counts_the_orders_placed, t_teardown),
#endif
#if !defined(__SANITIZE_THREAD__)
		cmocka_unit_test_teardown(test_daemon_killed_mid_stream_loses_nothing_and_writes_nothing_twice, t_teardown),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
