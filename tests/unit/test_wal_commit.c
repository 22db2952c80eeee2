/*
 * test_wal_commit.c -- group commit and sticky failure, through faults
 * injected in the persist/ system-call table.
 *
 *  - the durable LSN never covers a frame before the fdatasync that made it
 *    durable returned (delayed fdatasync, several threads, many rounds);
 *  - one leader writes for every follower that arrived meanwhile;
 *  - ENOSPC/EIO from pwrite or fdatasync fail the WAL for good, with the
 *    exact step and errno, and fdatasync is never called again;
 *  - a short write is finished once; a second short write fails the WAL.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>

#include "pio.h"
#include "wal_testutil.h"

#define PLEN ((uint32_t)sizeof(struct wal_rec))

typedef ssize_t (*pwrite_t)(int, const void *, size_t, off_t);
typedef int (*fsync_t)(int);

static ssize_t real_pwrite(int fd, const void *b, size_t n, off_t off)
{
	return ((pwrite_t)pio_default("pwrite"))(fd, b, n, off);
}

static int real_fdatasync(int fd)
{
	return ((fsync_t)pio_default("fdatasync"))(fd);
}

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

static wal_t *open_new(char **dir, uint64_t seg)
{
	*dir = wt_mkdtemp();
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = seg;
	wal_t *w;
	assert_int_equal(wal_open(*dir, &o, &w), FLASH_OK);
	return w;
}

/* Replay @p dir to a clean end; frames seen.  With @p check, every payload
 * must be wt_payload(lsn). */
static uint64_t replay_count(const char *dir, int check)
{
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	int rc = wal_replay(dir, 0, wt_collect, &s, 0, &rep);
	assert_int_equal(rc, FLASH_OK);
	if (check)
		assert_int_equal(s.bad_payload, 0);
	if (s.n > 0)
		assert_true(s.ordered);
	return s.n;
}

/* ---- the durable LSN never runs ahead of fdatasync ---- */

static uint64_t g_written;   /* highest LSN handed to pwrite */
static uint64_t g_synced;    /* highest LSN whose fdatasync has returned */
static uint64_t g_sync_calls;

/* Record the highest frame LSN in a buffer of whole frames (the file
 * header write, 64 bytes starting with the magic, has none). */
static ssize_t spy_pwrite(int fd, const void *b, size_t n, off_t off)
{
	ssize_t r = real_pwrite(fd, b, n, off);
	if (r != (ssize_t)n || (n == WAL_FILE_HDR_BYTES && memcmp(b, "FSWALSEG", 8) == 0))
		return r;
	const unsigned char *p = b;
	uint64_t max = 0;
	for (size_t pos = 0; pos + WAL_FRAME_HDR_BYTES <= n;) {
		uint32_t len;
		uint64_t lsn;
		memcpy(&len, p + pos, 4);
		memcpy(&lsn, p + pos + 8, 8);
		if (lsn > max)
			max = lsn;
		pos += wal_frame_bytes(len);
	}
	uint64_t cur = __atomic_load_n(&g_written, __ATOMIC_SEQ_CST);
	while (max > cur && !__atomic_compare_exchange_n(&g_written, &cur, max, 0,
	                                                 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	return r;
}

/* A slow disk: what was written before the call becomes "synced" only
 * after a delay, just before the call returns. */
static int slow_fdatasync(int fd)
{
	uint64_t w = __atomic_load_n(&g_written, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&g_sync_calls, 1, __ATOMIC_SEQ_CST);
	pause_us(50 + (long)(w % 7) * 40);
	int rc = real_fdatasync(fd);
	uint64_t cur = __atomic_load_n(&g_synced, __ATOMIC_SEQ_CST);
	while (w > cur && !__atomic_compare_exchange_n(&g_synced, &cur, w, 0,
	                                               __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	return rc;
}

#define NTHREADS 4
#define PER_THREAD 1500

struct prod {
	wal_t   *w;
	uint64_t early;    /* acknowledgements before their fdatasync returned */
	uint64_t acked;
};

static int g_stop;
static uint64_t g_watch_early, g_watch_reads;

static void *producer(void *arg)
{
	struct prod *pr = arg;
	unsigned char p[PLEN];
	for (int i = 0; i < PER_THREAD; i++) {
		uint64_t lsn;
		/* Payload is only known after the LSN; submit in two steps. */
		memset(p, 0xA5, sizeof p);
		if (wal_append(pr->w, WAL_T_RECORD, p, PLEN, &lsn) != FLASH_OK)
			continue;
		if (wal_sync(pr->w, lsn) != FLASH_OK)
			continue;
		if (lsn > __atomic_load_n(&g_synced, __ATOMIC_SEQ_CST))
			pr->early++;
		if (wal_durable_lsn(pr->w) < lsn)
			pr->early++;
		pr->acked++;
	}
	return NULL;
}

static void *watcher(void *arg)
{
	wal_t *w = arg;
	while (!__atomic_load_n(&g_stop, __ATOMIC_SEQ_CST)) {
		uint64_t d = wal_durable_lsn(w);
		if (d > __atomic_load_n(&g_synced, __ATOMIC_SEQ_CST))
			g_watch_early++;
		g_watch_reads++;
	}
	return NULL;
}

static int count_frames(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(*(uint64_t *)arg)++;
	return 0;
}

static void test_durable_lsn_never_precedes_fdatasync(void **st)
{
	(void)st;
	char *dir;
	/* Small files so that rollovers happen inside batches, too. */
	wal_t *w = open_new(&dir, 64 * 1024);
	g_written = g_synced = g_sync_calls = 0;
	g_stop = 0;
	g_watch_early = g_watch_reads = 0;
	pio_override("pwrite", (pio_fn)spy_pwrite, NULL);
	pio_override("fdatasync", (pio_fn)slow_fdatasync, NULL);

	pthread_t th[NTHREADS], wt;
	struct prod pr[NTHREADS];
	assert_int_equal(pthread_create(&wt, NULL, watcher, w), 0);
	for (int i = 0; i < NTHREADS; i++) {
		pr[i] = (struct prod){ .w = w };
		assert_int_equal(pthread_create(&th[i], NULL, producer, &pr[i]), 0);
	}
	uint64_t early = 0, acked = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		early += pr[i].early;
		acked += pr[i].acked;
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(wt, NULL);
	pio_reset();

	assert_int_equal(acked, NTHREADS * PER_THREAD);
	assert_int_equal(early, 0);
	assert_int_equal(g_watch_early, 0);
	assert_true(g_watch_reads > 0);
	struct wal_stats s;
	wal_stats_get(w, &s);
	assert_int_equal(s.durable_lsn, NTHREADS * PER_THREAD);
	assert_int_equal(s.frames, NTHREADS * PER_THREAD);
	assert_true(s.files_created > 1);
	/* Every frame's commit is one group commit; with 4 producers some
	 * groups hold more than one frame, so there are fewer commits. */
	assert_true(s.commits <= s.frames);
	print_message("    %" PRIu64 " frames in %" PRIu64 " group commits (largest %" PRIu64
	              "), %" PRIu64 " watcher reads\n",
	              s.frames, s.commits, s.max_group, g_watch_reads);
	assert_int_equal(wal_close(w), FLASH_OK);
	uint64_t n = 0;
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, count_frames, &n, 0, &rep), FLASH_OK);
	assert_int_equal(n, NTHREADS * PER_THREAD);
	wt_rmdir(dir);
}

/* ---- one leader writes for all followers that arrived meanwhile ---- */

static wal_t *g_w;
static uint64_t g_want_next;

/* The first fdatasync waits until every other thread has appended its
 * frame, so they are all pending behind the first leader. */
static int gate_fdatasync(int fd)
{
	if (__atomic_fetch_add(&g_sync_calls, 1, __ATOMIC_SEQ_CST) == 0)
		while (wal_next_lsn(g_w) < g_want_next)
			pause_us(100);
	return real_fdatasync(fd);
}

static void *one_submit(void *arg)
{
	unsigned char p[PLEN];
	memset(p, 7, sizeof p);
	uint64_t lsn;
	*(int *)arg = wal_submit(g_w, WAL_T_RECORD, p, PLEN, &lsn);
	return NULL;
}

static void test_followers_ride_on_one_group_commit(void **st)
{
	(void)st;
	enum { N = 8 };
	char *dir;
	g_w = open_new(&dir, 1 << 20);
	g_sync_calls = 0;
	g_want_next = 1 + N;
	pio_override("fdatasync", (pio_fn)gate_fdatasync, NULL);
	pthread_t th[N];
	int rc[N];
	assert_int_equal(pthread_create(&th[0], NULL, one_submit, &rc[0]), 0);
	while (__atomic_load_n(&g_sync_calls, __ATOMIC_SEQ_CST) == 0)
		pause_us(100);
	for (int i = 1; i < N; i++)
		assert_int_equal(pthread_create(&th[i], NULL, one_submit, &rc[i]), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(rc[i], FLASH_OK);
	}
	pio_reset();
	struct wal_stats s;
	wal_stats_get(g_w, &s);
	/* The first leader's batch held its own frame; the N-1 others were
	 * all pending when it finished, and the next leader took them at once. */
	assert_int_equal(s.commits, 2);
	assert_int_equal(s.max_group, N - 1);
	assert_int_equal(g_sync_calls, 2);
	assert_int_equal(s.durable_lsn, N);
	assert_int_equal(wal_close(g_w), FLASH_OK);
	uint64_t n = 0;
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, count_frames, &n, 0, &rep), FLASH_OK);
	assert_int_equal(n, N);
	wt_rmdir(dir);
}

/* ---- sticky failure ---- */

static int g_fail_errno;
static int g_fail_after;     /* calls that succeed before failing */

static ssize_t failing_pwrite(int fd, const void *b, size_t n, off_t off)
{
	if (g_fail_after-- > 0)
		return real_pwrite(fd, b, n, off);
	errno = g_fail_errno;
	return -1;
}

static int failing_fdatasync(int fd)
{
	__atomic_fetch_add(&g_sync_calls, 1, __ATOMIC_SEQ_CST);
	if (g_fail_after-- > 0)
		return real_fdatasync(fd);
	errno = g_fail_errno;
	return -1;
}

static void sticky_case(const char *call, int err, enum wal_op want_op)
{
	char *dir;
	wal_t *w = open_new(&dir, 1 << 20);
	unsigned char p[PLEN];
	memset(p, 3, sizeof p);
	uint64_t lsn;
	for (int i = 0; i < 5; i++)
		assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, &lsn), FLASH_OK);
	assert_int_equal(wal_durable_lsn(w), 5);

	g_fail_errno = err;
	g_fail_after = 0;
	g_sync_calls = 0;
	pio_override(call, strcmp(call, "pwrite") == 0 ? (pio_fn)failing_pwrite
	                                                : (pio_fn)failing_fdatasync, NULL);
	assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, &lsn), FLASH_EWAL_FAILED);
	assert_int_equal(lsn, 6);
	assert_int_equal(g_sync_calls, strcmp(call, "pwrite") == 0 ? 0 : 1);
	pio_reset();    /* the disk is fine again: the WAL stays failed */

	enum wal_op op;
	int e;
	assert_int_equal(wal_failure(w, &op, &e), FLASH_EWAL_FAILED);
	assert_int_equal(op, want_op);
	assert_int_equal(e, err);
	assert_int_equal(wal_durable_lsn(w), 5);
	assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_EWAL_FAILED);
	assert_int_equal(wal_sync(w, 6), FLASH_EWAL_FAILED);
	assert_int_equal(wal_commit(w), FLASH_EWAL_FAILED);
	g_sync_calls = 0;
	pio_override("fdatasync", (pio_fn)failing_fdatasync, NULL);
	g_fail_after = 1000;
	assert_int_equal(wal_commit(w), FLASH_EWAL_FAILED);
	assert_int_equal(g_sync_calls, 0);     /* fdatasync is never retried */
	pio_reset();
	assert_int_equal(wal_durable_lsn(w), 5);
	struct wal_stats s;
	wal_stats_get(w, &s);
	assert_int_equal(s.failed, FLASH_EWAL_FAILED);
	assert_int_equal(s.fail_errno, err);
	assert_int_equal(wal_close(w), FLASH_EWAL_FAILED);
	wt_rmdir(dir);
}

static void test_enospc_on_write_is_sticky(void **st)      { (void)st; sticky_case("pwrite", ENOSPC, WAL_OP_WRITE); }
static void test_eio_on_write_is_sticky(void **st)         { (void)st; sticky_case("pwrite", EIO, WAL_OP_WRITE); }
static void test_eio_on_fdatasync_is_sticky(void **st)     { (void)st; sticky_case("fdatasync", EIO, WAL_OP_SYNC); }
static void test_enospc_on_fdatasync_is_sticky(void **st)  { (void)st; sticky_case("fdatasync", ENOSPC, WAL_OP_SYNC); }

/* Followers waiting behind a leader whose fdatasync fails all get
 * FLASH_EWAL_FAILED; none is told its frame is durable. */
static int slow_failing_fdatasync(int fd)
{
	while (wal_next_lsn(g_w) < g_want_next)
		pause_us(100);
	errno = EIO;
	return -1;
}

static void test_waiting_followers_all_fail_with_the_leader(void **st)
{
	(void)st;
	enum { N = 6 };
	char *dir;
	g_w = open_new(&dir, 1 << 20);
	g_want_next = 1 + N;
	pio_override("fdatasync", (pio_fn)slow_failing_fdatasync, NULL);
	pthread_t th[N];
	int rc[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(pthread_create(&th[i], NULL, one_submit, &rc[i]), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(rc[i], FLASH_EWAL_FAILED);
	}
	pio_reset();
	assert_int_equal(wal_durable_lsn(g_w), 0);
	assert_int_equal(wal_close(g_w), FLASH_EWAL_FAILED);
	wt_rmdir(dir);
}

/* ---- short writes ---- */

static int g_shorts;   /* how many calls in a row write only half */

static ssize_t short_pwrite(int fd, const void *b, size_t n, off_t off)
{
	if (g_shorts > 0 && n > 1) {
		g_shorts--;
		return real_pwrite(fd, b, n / 2, off);
	}
	return real_pwrite(fd, b, n, off);
}

static void test_one_short_write_is_completed(void **st)
{
	(void)st;
	char *dir;
	wal_t *w = open_new(&dir, 1 << 20);
	unsigned char p[PLEN];
	for (uint64_t l = 1; l <= 10; l++) {
		wt_payload(l, p, PLEN);
		assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_OK);
	}
	g_shorts = 1;
	pio_override("pwrite", (pio_fn)short_pwrite, NULL);
	assert_int_equal(wal_commit(w), FLASH_OK);
	pio_reset();
	assert_int_equal(g_shorts, 0);
	assert_int_equal(wal_durable_lsn(w), 10);
	assert_int_equal(wal_close(w), FLASH_OK);
	assert_int_equal(replay_count(dir, 1), 10);
	wt_rmdir(dir);
}

static void test_second_short_write_fails_with_eio(void **st)
{
	(void)st;
	char *dir;
	wal_t *w = open_new(&dir, 1 << 20);
	unsigned char p[PLEN];
	wt_payload(1, p, PLEN);
	assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_OK);
	g_shorts = 2;
	pio_override("pwrite", (pio_fn)short_pwrite, NULL);
	assert_int_equal(wal_commit(w), FLASH_EWAL_FAILED);
	pio_reset();
	enum wal_op op;
	int e;
	assert_int_equal(wal_failure(w, &op, &e), FLASH_EWAL_FAILED);
	assert_int_equal(op, WAL_OP_WRITE);
	assert_int_equal(e, EIO);
	assert_int_equal(wal_durable_lsn(w), 0);
	assert_int_equal(wal_close(w), FLASH_EWAL_FAILED);
	wt_rmdir(dir);
}

/* ---- the next file cannot be created ---- */

typedef int (*open_t)(const char *, int, mode_t);

static int failing_open(const char *path, int fl, mode_t m)
{
	if (strstr(path, ".tmp") != NULL) {
		errno = ENOSPC;
		return -1;
	}
	return ((open_t)pio_default("open"))(path, fl, m);
}

static void test_failed_rollover_is_sticky(void **st)
{
	(void)st;
	char *dir;
	wal_t *w = open_new(&dir, 8192);
	unsigned char p[PLEN];
	memset(p, 9, sizeof p);
	const uint64_t per = (8192 - WAL_FILE_HDR_BYTES) / wal_frame_bytes(PLEN);
	for (uint64_t i = 0; i < per; i++)
		assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_OK);
	pio_override("open", (pio_fn)failing_open, NULL);
	assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_EWAL_FAILED);
	pio_reset();
	enum wal_op op;
	int e;
	assert_int_equal(wal_failure(w, &op, &e), FLASH_EWAL_FAILED);
	assert_int_equal(op, WAL_OP_CREATE);
	assert_int_equal(e, ENOSPC);
	assert_int_equal(wal_durable_lsn(w), per);
	assert_int_equal(wal_close(w), FLASH_EWAL_FAILED);
	/* What was durable is all there, and the WAL reopens cleanly. */
	assert_int_equal(replay_count(dir, 0), per);
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	assert_int_equal(wal_next_lsn(w), per + 1);
	assert_int_equal(wal_close(w), FLASH_OK);
	wt_rmdir(dir);
}

/* ---- reading behind the writer ---- */

struct tail {
	wal_t   *w;
	uint64_t n;          /* frames the writer appends */
	uint64_t next;       /* next LSN the reader expects */
	uint64_t bad;        /* out of order, beyond durable, or wrong payload */
	uint64_t reads;
	int      done;       /* the writer returned */
};

static int tail_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct tail *t = arg;
	unsigned char exp[256];
	if (lsn != t->next || lsn > wal_durable_lsn(t->w) || len != wt_len(lsn))
		t->bad++;
	else {
		wt_payload(lsn, exp, len);
		if (memcmp(exp, p, len) != 0)
			t->bad++;
	}
	t->next = lsn + 1;
	return 0;
}

static void *tail_writer(void *arg)
{
	struct tail *t = arg;
	unsigned char p[256];
	for (uint64_t l = 1; l <= t->n; l++) {
		wt_payload(l, p, wt_len(l));
		if (wal_append(t->w, WAL_T_RECORD, p, wt_len(l), NULL) != FLASH_OK)
			return NULL;
		if (l % 37 == 0 || l == t->n)
			if (wal_commit(t->w) != FLASH_OK)
				break;
	}
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A reader follows a writer through several file rollovers: it sees every
 * durable frame once, in order, never one that is not durable, and never
 * disturbs the writer. */
static void test_reader_follows_writer_up_to_durable_lsn(void **st)
{
	(void)st;
	char *dir;
	struct tail t = { .n = 20000, .next = 1 };
	t.w = open_new(&dir, 64 * 1024);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, tail_writer, &t), 0);
	while (t.next <= t.n) {
		struct wal_replay_report rep;
		int done = __atomic_load_n(&t.done, __ATOMIC_ACQUIRE);
		uint64_t before = t.next;
		int rc = wal_read_durable(t.w, t.next, tail_cb, &t, &rep);
		assert_int_equal(rc, FLASH_OK);
		assert_true(rep.last_lsn + 1 >= t.next);
		t.reads++;
		if (done && t.next == before)
			break;      /* the writer stopped short: the asserts below say so */
	}
	pthread_join(th, NULL);
	assert_int_equal(t.bad, 0);
	assert_int_equal(t.next, t.n + 1);
	assert_int_equal(wal_durable_lsn(t.w), t.n);
	struct wal_stats s;
	wal_stats_get(t.w, &s);
	assert_true(s.files_created > 10);
	assert_int_equal(wal_close(t.w), FLASH_OK);
	assert_int_equal(replay_count(dir, 1), t.n);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durable_lsn_never_precedes_fdatasync),
		cmocka_unit_test(test_followers_ride_on_one_group_commit),
		cmocka_unit_test(test_enospc_on_write_is_sticky),
		cmocka_unit_test(test_eio_on_write_is_sticky),
		cmocka_unit_test(test_eio_on_fdatasync_is_sticky),
		cmocka_unit_test(test_enospc_on_fdatasync_is_sticky),
		cmocka_unit_test(test_waiting_followers_all_fail_with_the_leader),
		cmocka_unit_test(test_one_short_write_is_completed),
		cmocka_unit_test(test_second_short_write_fails_with_eio),
		cmocka_unit_test(test_failed_rollover_is_sticky),
		cmocka_unit_test(test_reader_follows_writer_up_to_durable_lsn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
