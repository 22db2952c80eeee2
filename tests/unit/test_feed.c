/*
 * test_feed.c -- the order feed's API (flashstock.h section 10) against a
 * WAL written in this process by a wal_t, the writer `serve` uses:
 *
 *  - records come in LSN order with every field, and only durable ones: a
 *    frame already pwritten but whose fdatasync has not returned is not
 *    handed out (fdatasync held back through the pio table);
 *  - a committed position survives close and reopen; what was not
 *    committed comes again (at least once), what was committed never;
 *  - a follower asleep on DIR/DURABLE is woken by a commit;
 *  - roll-over to new files and removal of files behind the position
 *    change nothing for the consumer; removal past it is FLASH_ELOST and
 *    the consumer lists as lost, never a silent skip;
 *  - retention keeps what a consumer needs, within the bounds, and marks
 *    it lost past them; it weighs every consumer, also one registered
 *    between its count and its copy, and removes nothing without the
 *    registry lock;
 *  - names, a second open, commit bounds, rewind, another incarnation.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "feed.h"
#include "pio.h"
#include "serve.h"
#include "wal_testutil.h"

/* A record with every field set from @p i, so that a mix-up shows. */
static struct flash_record rec_of(uint64_t i)
{
	struct flash_record r;
	memset(&r, 0, sizeof r);
	r.type = (uint16_t)(i % 3 == 0 ? FLASH_REC_CANCEL : FLASH_REC_ORDER);
	r.slot = (uint16_t)(i % 7);
	r.activity_id = 1 + (uint32_t)(i % 5);
	r.sku_id = 10 + (uint32_t)(i % 11);
	r.qty = 1 + (uint32_t)(i % 4);
	r.order_no = 1000 + i;
	r.user_id = 50000 + i * 3;
	r.value = -(int64_t)i;
	r.ts_ns = 1700000000000000000ll + (int64_t)i;
	r.biz_day = 20000 + (uint32_t)i;
	r.limit_slot = (uint16_t)(1 + i % 3);
	r.flags = (uint16_t)(i & 1);
	r.request_id = 77 * i;
	return r;
}

static wal_t *wal_new(const char *dir, uint64_t seg_bytes)
{
	struct wal_opts o;
	wal_opts_default(&o);
	if (seg_bytes)
		o.segment_bytes = seg_bytes;
	o.incarnation = 0x1234abcdull;
	wal_t *w;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	return w;
}

/* Append records first..last (rec_of(i) with seq i) and commit. */
static void put(wal_t *w, uint64_t first, uint64_t last)
{
	for (uint64_t i = first; i <= last; i++) {
		struct flash_record r = rec_of(i);
		uint64_t lsn;
		assert_int_equal(wal_append_record(w, &r, i, &lsn), FLASH_OK);
		assert_int_equal(lsn, i);
	}
	assert_int_equal(wal_commit(w), FLASH_OK);
}

static flash_feed_t *open_feed(const char *dir, const char *name, int from_start)
{
	struct flash_feed_opts o;
	flash_feed_opts_default(&o);
	o.from_start = (uint32_t)from_start;
	flash_feed_t *f;
	assert_int_equal(flash_feed_open(dir, name, &o, &f), FLASH_OK);
	return f;
}

static void expect_rec(flash_feed_t *f, uint64_t lsn)
{
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_OK);
	assert_int_equal(r.fr_lsn, lsn);
	assert_int_equal(r.fr_seq, lsn);
	struct flash_record want = rec_of(lsn);
	assert_memory_equal(&r.fr_rec, &want, sizeof want);
	assert_int_equal(r.fr_source, FLASH_FEED_WAL);
	assert_int_equal(r.fr_missing, 0);
	assert_int_equal(r.fr_gap, 0);
}

static void test_feed_reads_every_field_in_lsn_order_then_times_out(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 50);
	flash_feed_t *f = open_feed(dir, "app", 1);
	for (uint64_t i = 1; i <= 50; i++)
		expect_rec(f, i);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ETIMEOUT);
	assert_int_equal(flash_feed_next(f, &r, 20), FLASH_ETIMEOUT);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_new_consumer_starts_at_durable_end_unless_from_start(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 10);
	flash_feed_t *f = open_feed(dir, "late", 0);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ETIMEOUT);
	put(w, 11, 12);
	expect_rec(f, 11);
	expect_rec(f, 12);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

/* ---- only durable records ---- */

typedef int (*fsync_t)(int);
static volatile int hold_sync;       /* 1: the next fdatasync waits until 0 */
static volatile int in_sync;         /* a held fdatasync is waiting */

static int held_fdatasync(int fd)
{
	if (__atomic_load_n(&hold_sync, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&in_sync, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&hold_sync, __ATOMIC_SEQ_CST)) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	return ((fsync_t)pio_default("fdatasync"))(fd);
}

static void *commit_thread(void *arg)
{
	wal_commit(arg);
	return NULL;
}

static void test_feed_never_returns_a_frame_before_its_fdatasync(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 3);
	flash_feed_t *f = open_feed(dir, "d", 1);
	for (uint64_t i = 1; i <= 3; i++)
		expect_rec(f, i);
	struct flash_record r4 = rec_of(4);
	assert_int_equal(wal_append_record(w, &r4, 4, NULL), FLASH_OK);
	hold_sync = 1;
	in_sync = 0;
	pio_override("fdatasync", (pio_fn)held_fdatasync, NULL);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, commit_thread, w), 0);
	while (!__atomic_load_n(&in_sync, __ATOMIC_SEQ_CST)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	/* LSN 4 is pwritten (in the file) but not durable: not handed out */
	struct flash_feed_rec r;
	assert_int_equal(feed_wal_read_one(dir, 4, &r), FLASH_OK);
	assert_int_equal(r.fr_lsn, 4);
	assert_int_equal(flash_feed_next(f, &r, 30), FLASH_ETIMEOUT);
	__atomic_store_n(&hold_sync, 0, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_join(th, NULL), 0);
	pio_reset();
	expect_rec(f, 4);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

/* ---- positions ---- */

static void test_feed_resumes_after_commit_and_repeats_only_uncommitted(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 20);
	flash_feed_t *f = open_feed(dir, "pos", 1);
	for (uint64_t i = 1; i <= 8; i++)
		expect_rec(f, i);
	assert_int_equal(flash_feed_commit(f, 5), FLASH_OK);
	struct flash_feed_info fi;
	assert_int_equal(flash_feed_info_get(f, &fi), FLASH_OK);
	assert_int_equal(fi.fi_committed_lsn, 5);
	assert_int_equal(fi.fi_lag_records, 15);
	flash_feed_close(f);           /* 6..8 were read, not committed */
	f = open_feed(dir, "pos", 0);  /* from_start ignored for a known name */
	expect_rec(f, 6);
	expect_rec(f, 7);
	/* rewind goes back to the committed position */
	assert_int_equal(flash_feed_rewind(f), FLASH_OK);
	expect_rec(f, 6);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_commit_bounds_and_second_open_refused(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 5);
	flash_feed_t *f = open_feed(dir, "one", 1);
	expect_rec(f, 1);
	expect_rec(f, 2);
	assert_int_equal(flash_feed_commit(f, 3), FLASH_EINVAL);   /* not returned yet */
	assert_int_equal(flash_feed_commit(f, 2), FLASH_OK);
	assert_int_equal(flash_feed_commit(f, 2), FLASH_OK);       /* no-op */
	assert_int_equal(flash_feed_commit(f, 1), FLASH_EINVAL);   /* backwards */
	flash_feed_t *g;
	assert_int_equal(flash_feed_open(dir, "one", NULL, &g), FLASH_EBUSY);
	assert_int_equal(flash_feed_drop(dir, "one"), FLASH_EBUSY);
	flash_feed_close(f);
	struct flash_feed_opts o;
	flash_feed_opts_default(&o);
	o.no_create = 1;
	assert_int_equal(flash_feed_open(dir, "nobody", &o, &g), FLASH_ENOT_FOUND);
	assert_int_equal(flash_feed_open(dir, "bad/name", NULL, &g), FLASH_EINVAL);
	assert_int_equal(flash_feed_open(dir, ".hidden", NULL, &g), FLASH_EINVAL);
	assert_int_equal(flash_feed_open(dir, "", NULL, &g), FLASH_EINVAL);
	o.no_create = 0;
	o.mysql_url = "postgres://nope";
	assert_int_equal(flash_feed_open(dir, "x", &o, &g), FLASH_EMYSQL_CONFIG);
	size_t n;
	assert_int_equal(flash_feed_list(dir, NULL, 0, &n), FLASH_OK);
	assert_int_equal(n, 1);        /* "one" only: nothing registered by the refusals */
	assert_int_equal(flash_feed_drop(dir, "one"), FLASH_OK);
	assert_int_equal(flash_feed_list(dir, NULL, 0, &n), FLASH_OK);
	assert_int_equal(n, 0);
	assert_int_equal(flash_feed_drop(dir, "one"), FLASH_ENOT_FOUND);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_position_of_another_incarnation_refused(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 2);
	flash_feed_close(open_feed(dir, "inc", 1));
	wal_close(w);
	/* The directory now holds another WAL (another segment's). */
	char *p = wt_file(dir, 1);
	unlink(p);
	free(p);
	struct wal_opts o;
	wal_opts_default(&o);
	o.incarnation = 0x999ull;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	flash_feed_t *f;
	assert_int_equal(flash_feed_open(dir, "inc", NULL, &f), FLASH_EFEED_IDENT);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_position_past_a_cut_wal_is_ahead_not_waited_for(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 10);
	flash_feed_t *f = open_feed(dir, "ahead", 1);
	for (uint64_t i = 1; i <= 10; i++)
		expect_rec(f, i);
	assert_int_equal(flash_feed_commit(f, 10), FLASH_OK);
	flash_feed_close(f);
	wal_close(w);
	/* an operator's cut: the WAL starts over below the position */
	char *p = wt_file(dir, 1);
	unlink(p);
	free(p);
	w = wal_new(dir, 0);
	put(w, 1, 3);
	f = open_feed(dir, "ahead", 0);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_EAHEAD);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_stale_mark_after_reboot_waits_for_the_writer(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 10);
	flash_feed_t *f = open_feed(dir, "boot", 1);
	for (uint64_t i = 1; i <= 10; i++)
		expect_rec(f, i);
	assert_int_equal(flash_feed_commit(f, 10), FLASH_OK);
	flash_feed_close(f);
	wal_close(w);
	/* A reboot: the mark's page reached the disk before its last publish
	 * (it says 6), and its writer is gone. */
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	char path[4200];
	snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, dir);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct wal_mark *k = mmap(NULL, WAL_MARK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(k != MAP_FAILED);
	close(fd);
	k->wm_durable = 6;
	k->wm_pid = child;
	f = open_feed(dir, "boot", 0);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 10), FLASH_ETIMEOUT);   /* not FLASH_EAHEAD */
	/* serve starts again: it publishes the WAL's end, then new records */
	w = wal_new(dir, 0);
	assert_int_equal(k->wm_durable, 10);
	put(w, 11, 11);
	expect_rec(f, 11);
	munmap(k, WAL_MARK_BYTES);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static int failing_fdatasync(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

static void test_feed_failed_commit_keeps_the_previous_position(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 6);
	flash_feed_t *f = open_feed(dir, "ioerr", 1);
	for (uint64_t i = 1; i <= 6; i++)
		expect_rec(f, i);
	assert_int_equal(flash_feed_commit(f, 2), FLASH_OK);
	pio_override("fdatasync", (pio_fn)failing_fdatasync, NULL);
	assert_int_equal(flash_feed_commit(f, 5), FLASH_ESYS);
	pio_reset();
	struct feed_pos p;
	assert_int_equal(feed_pos_read(dir, "ioerr", &p), FLASH_OK);
	assert_int_equal(p.fp_lsn, 2);
	struct flash_feed_info fi;
	assert_int_equal(flash_feed_info_get(f, &fi), FLASH_OK);
	assert_int_equal(fi.fi_committed_lsn, 2);
	flash_feed_close(f);
	f = open_feed(dir, "ioerr", 0);
	expect_rec(f, 3);                /* handed out again: at least once */
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_damaged_durable_frame_is_corrupt_not_skipped(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 5);
	/* one byte of record 3's payload flipped on disk */
	char *p = wt_file(dir, 1);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	off_t off = WAL_FILE_HDR_BYTES + 2 * wal_frame_bytes(sizeof(struct wal_rec)) + WAL_FRAME_HDR_BYTES + 20;
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
	free(p);
	flash_feed_t *f = open_feed(dir, "bad", 1);
	expect_rec(f, 1);
	expect_rec(f, 2);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ECORRUPT);
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ECORRUPT);   /* never past it */
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_follows_a_durable_mark_made_again(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 2);
	flash_feed_t *f = open_feed(dir, "remark", 1);
	expect_rec(f, 1);
	expect_rec(f, 2);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ETIMEOUT);   /* the mark is mapped */
	wal_close(w);
	char path[4200];
	snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, dir);
	assert_int_equal(unlink(path), 0);
	w = wal_new(dir, 0);            /* a new DURABLE, another inode */
	put(w, 3, 3);
	expect_rec(f, 3);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

/* ---- follow ---- */

struct follower {
	flash_feed_t *f;
	int rc;
	uint64_t lsn;
};

static void *follow_main(void *arg)
{
	struct follower *fo = arg;
	struct flash_feed_rec r;
	fo->rc = flash_feed_next(fo->f, &r, 10000);
	fo->lsn = r.fr_lsn;
	return NULL;
}

static void test_feed_follower_is_woken_by_a_commit(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 1);
	struct follower fo = { .f = open_feed(dir, "follow", 0) };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, follow_main, &fo), 0);
	struct timespec ts = { 0, 50000000 };
	nanosleep(&ts, NULL);
	put(w, 2, 2);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(fo.rc, FLASH_OK);
	assert_int_equal(fo.lsn, 2);
	flash_feed_close(fo.f);
	wal_close(w);
	wt_rmdir(dir);
}

/* ---- roll-over, removal, retention ---- */

static void test_feed_crosses_file_rollover_and_removal_behind_it(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);     /* 78 records per file */
	put(w, 1, 100);
	flash_feed_t *f = open_feed(dir, "roll", 1);
	for (uint64_t i = 1; i <= 60; i++)
		expect_rec(f, i);
	put(w, 101, 400);
	/* files wholly below the reader's position go: nothing changes for it */
	uint32_t removed = 0;
	assert_int_equal(wal_remove_before(dir, 61, &removed), FLASH_OK);
	for (uint64_t i = 61; i <= 400; i++)
		expect_rec(f, i);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ETIMEOUT);
	/* a reopen positions in the middle of a later file */
	assert_int_equal(flash_feed_commit(f, 333), FLASH_OK);
	flash_feed_close(f);
	f = open_feed(dir, "roll", 0);
	for (uint64_t i = 334; i <= 400; i++)
		expect_rec(f, i);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_removed_past_position_is_lost_never_skipped(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);
	put(w, 1, 300);
	flash_feed_t *f = open_feed(dir, "slow", 1);
	expect_rec(f, 1);
	assert_int_equal(flash_feed_commit(f, 1), FLASH_OK);
	flash_feed_close(f);
	assert_int_equal(wal_remove_before(dir, 200, NULL), FLASH_OK);
	struct flash_feed_info fi;
	size_t n;
	assert_int_equal(flash_feed_list(dir, &fi, 1, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_string_equal(fi.fi_name, "slow");
	assert_int_equal(fi.fi_state, FLASH_FEED_LOST);
	assert_int_equal(fi.fi_committed_lsn, 1);
	assert_int_equal(fi.fi_durable_lsn, 300);
	assert_true(fi.fi_first_lsn > 2);
	f = open_feed(dir, "slow", 0);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ELOST);
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_ELOST);   /* stays lost */
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_retention_keeps_needed_files_within_bound_only(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);
	put(w, 1, 300);                 /* four files */
	flash_feed_t *f = open_feed(dir, "keep", 1);
	for (uint64_t i = 1; i <= 100; i++)
		expect_rec(f, i);
	assert_int_equal(flash_feed_commit(f, 100), FLASH_OK);
	flash_feed_close(f);
	struct feed_retain_opts o = { .keep_bytes = 1ull << 30, .keep_age_s = 3600 };
	struct feed_retain_stats before, after;
	feed_retain_stats_get(&before);
	/* snapshots and MySQL would let everything up to 290 go: the consumer
	 * needs 101, so the cover stops at 100 */
	assert_int_equal(feed_retain_cover(dir, 290, &o, NULL, NULL), 100);
	assert_int_equal(feed_retain_cover(dir, 50, &o, NULL, NULL), 50);
	feed_retain_stats_get(&after);
	assert_int_equal(after.lost_total, before.lost_total);
	/* past the byte bound the consumer holds nothing back and is counted lost once */
	o.keep_bytes = 8192;
	assert_int_equal(feed_retain_cover(dir, 290, &o, NULL, NULL), 290);
	assert_int_equal(feed_retain_cover(dir, 290, &o, NULL, NULL), 290);
	feed_retain_stats_get(&after);
	assert_int_equal(after.lost_total, before.lost_total + 1);
	assert_int_equal(wal_remove_before(dir, 291, NULL), FLASH_OK);
	size_t n;
	struct flash_feed_info fi;
	assert_int_equal(flash_feed_list(dir, &fi, 1, &n), FLASH_OK);
	assert_int_equal(fi.fi_state, FLASH_FEED_LOST);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_retention_age_bound_marks_lost(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);
	put(w, 1, 300);
	flash_feed_close(open_feed(dir, "old", 1));   /* needs LSN 1 */
	struct feed_retain_opts o = { .keep_bytes = 0, .keep_age_s = 1 };
	assert_int_equal(feed_retain_cover(dir, 290, &o, NULL, NULL), 0);   /* young enough: held */
	struct feed_retain_stats before, after;
	feed_retain_stats_get(&before);
	struct timespec ts = { 2, 100000000 };          /* the first file is now > 1 s old */
	nanosleep(&ts, NULL);
	assert_int_equal(feed_retain_cover(dir, 290, &o, NULL, NULL), 290);
	feed_retain_stats_get(&after);
	assert_int_equal(after.lost_total, before.lost_total + 1);
	wal_close(w);
	wt_rmdir(dir);
}

/* Retention paused inside its first unlink while a consumer registers
 * "from the start" beside it. */
typedef int (*unlink_t)(const char *);
static volatile int unlink_paused, registered;

static int pausing_unlink(const char *p)
{
	if (!__atomic_exchange_n(&unlink_paused, 1, __ATOMIC_SEQ_CST)) {
		/* give the registration every chance to slip in (it must wait) */
		for (int i = 0; i < 200 && !__atomic_load_n(&registered, __ATOMIC_SEQ_CST); i++) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	return ((unlink_t)pio_default("unlink"))(p);
}

struct remover {
	const char *dir;
	uint32_t removed;
};

static void *remover_main(void *arg)
{
	struct remover *r = arg;
	struct feed_retain_opts o = { 0, 0 };
	uint64_t c;
	feed_retain_remove(r->dir, 290, 0, &o, NULL, NULL, &c, &r->removed);
	return NULL;
}

static void test_feed_registration_from_start_never_lands_in_a_removed_file(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);
	put(w, 1, 300);                          /* four files of 78 frames */
	unlink_paused = registered = 0;
	pio_override("unlink", (pio_fn)pausing_unlink, NULL);
	struct remover rm = { .dir = dir };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, remover_main, &rm), 0);
	while (!__atomic_load_n(&unlink_paused, __ATOMIC_SEQ_CST)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	/* the remover is between its decision and its unlinks */
	flash_feed_t *f = open_feed(dir, "early", 1);
	__atomic_store_n(&registered, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_join(th, NULL), 0);
	pio_reset();
	assert_int_equal(rm.removed, 3);
	struct flash_feed_rec r;
	assert_int_equal(flash_feed_next(f, &r, 0), FLASH_OK);   /* not FLASH_ELOST */
	uint64_t *l;
	size_t n;
	assert_int_equal(feed_wal_files(dir, &l, &n), FLASH_OK);
	assert_int_equal(n, 1);
	assert_int_equal(r.fr_lsn, l[0]);        /* the oldest record still kept */
	free(l);
	flash_feed_close(f);
	wal_close(w);
	wt_rmdir(dir);
}

/*
 * Retention's own calls into the feed, wrapped (feed_tests.cmake links
 * test_feed with --wrap for both): a hook run once right after the next
 * flash_feed_list returns, and a registry lock that can be made to fail.
 * Unarmed, both pass through.
 */
int __real_flash_feed_list(const char *wal_dir, struct flash_feed_info *out, size_t cap, size_t *n);
int __wrap_flash_feed_list(const char *wal_dir, struct flash_feed_info *out, size_t cap, size_t *n);
int __real_feed_registry_lock(const char *wal_dir, int exclusive);
int __wrap_feed_registry_lock(const char *wal_dir, int exclusive);

static void (*after_list)(const char *wal_dir);
static int registry_lock_errno;          /* nonzero: the lock fails with it */

int __wrap_flash_feed_list(const char *wal_dir, struct flash_feed_info *out, size_t cap, size_t *n)
{
	int rc = __real_flash_feed_list(wal_dir, out, cap, n);
	void (*h)(const char *) = after_list;
	after_list = NULL;
	if (h != NULL)
		h(wal_dir);
	return rc;
}

int __wrap_feed_registry_lock(const char *wal_dir, int exclusive)
{
	if (registry_lock_errno != 0) {
		errno = registry_lock_errno;
		return -1;
	}
	return __real_feed_registry_lock(wal_dir, exclusive);
}

/* Register @p name from the start and commit it at @p lsn. */
static void register_at(const char *dir, const char *name, uint64_t lsn)
{
	flash_feed_t *f = open_feed(dir, name, 1);
	for (uint64_t i = 1; i <= lsn; i++)
		expect_rec(f, i);
	assert_int_equal(flash_feed_commit(f, lsn), FLASH_OK);
	flash_feed_close(f);
}

/* Three consumers that need LSN 41 register between retention's count and its copy. */
static void register_three_late(const char *dir)
{
	register_at(dir, "late1", 40);
	register_at(dir, "late2", 40);
	register_at(dir, "late3", 40);
}

static void test_feed_retention_sees_consumers_registered_between_its_lists(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);
	put(w, 1, 300);                          /* four files */
	register_at(dir, "early", 100);
	struct feed_retain_opts o = { .keep_bytes = 1ull << 30, .keep_age_s = 3600 };
	/* room for one consumer is counted, four are there when the copy is
	 * made: every one of them is weighed, and none past the room */
	after_list = register_three_late;
	assert_int_equal(feed_retain_cover(dir, 290, &o, NULL, NULL), 40);
	assert_null(after_list);
	size_t n;
	assert_int_equal(flash_feed_list(dir, NULL, 0, &n), FLASH_OK);
	assert_int_equal(n, 4);
	wal_close(w);
	wt_rmdir(dir);
}

struct log_lines {
	int warn;
	char last[1024];
};

static void keep_log(void *arg, int level, const char *msg)
{
	struct log_lines *l = arg;
	if (level == PLOG_WARN)
		l->warn++;
	snprintf(l->last, sizeof l->last, "%s", msg);
}

static void test_feed_retention_removes_nothing_without_the_registry_lock(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 8192);
	put(w, 1, 300);                          /* four files, no consumer */
	struct feed_retain_opts o = { 0, 0 };
	struct log_lines ll = { 0 };
	uint64_t cover = 1;
	uint32_t removed = 1;
	/* without the lock a registration "from the start" could pick a file
	 * that is being removed: nothing goes, and the log says why */
	registry_lock_errno = ENOLCK;
	int rc = feed_retain_remove(dir, 290, 0, &o, keep_log, &ll, &cover, &removed);
	registry_lock_errno = 0;
	assert_int_equal(rc, FLASH_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(cover, 0);
	assert_int_equal(ll.warn, 1);
	assert_non_null(strstr(ll.last, "registry lock"));
	uint64_t *l;
	size_t n;
	assert_int_equal(feed_wal_files(dir, &l, &n), FLASH_OK);
	free(l);
	assert_int_equal(n, 4);
	/* with the lock, the next round removes what was due */
	assert_int_equal(feed_retain_remove(dir, 290, 0, &o, keep_log, &ll, &cover, &removed), FLASH_OK);
	assert_int_equal(cover, 290);
	assert_int_equal(removed, 3);
	wal_close(w);
	wt_rmdir(dir);
}

static void test_feed_list_reports_lag_in_records_and_seconds(void **state)
{
	(void)state;
	char *dir = wt_mkdtemp();
	wal_t *w = wal_new(dir, 0);
	put(w, 1, 10);
	flash_feed_t *f = open_feed(dir, "lag", 1);
	expect_rec(f, 1);
	assert_int_equal(flash_feed_commit(f, 1), FLASH_OK);
	struct flash_feed_info fi;
	size_t n;
	assert_int_equal(flash_feed_list(dir, &fi, 1, &n), FLASH_OK);
	assert_int_equal(fi.fi_open, 1);
	assert_int_equal(fi.fi_lag_records, 9);
	/* the oldest uncommitted record (LSN 2) was made at rec_of(2).ts_ns */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	assert_true(fi.fi_lag_ns > 0);
	assert_true((int64_t)fi.fi_lag_ns <= now - rec_of(2).ts_ns);
	flash_feed_close(f);
	assert_int_equal(flash_feed_list(dir, &fi, 1, &n), FLASH_OK);
	assert_int_equal(fi.fi_open, 0);
	wal_close(w);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feed_reads_every_field_in_lsn_order_then_times_out),
		cmocka_unit_test(test_feed_new_consumer_starts_at_durable_end_unless_from_start),
		cmocka_unit_test(test_feed_never_returns_a_frame_before_its_fdatasync),
		cmocka_unit_test(test_feed_resumes_after_commit_and_repeats_only_uncommitted),
		cmocka_unit_test(test_feed_commit_bounds_and_second_open_refused),
		cmocka_unit_test(test_feed_position_of_another_incarnation_refused),
		cmocka_unit_test(test_feed_position_past_a_cut_wal_is_ahead_not_waited_for),
		cmocka_unit_test(test_feed_stale_mark_after_reboot_waits_for_the_writer),
		cmocka_unit_test(test_feed_failed_commit_keeps_the_previous_position),
		cmocka_unit_test(test_feed_damaged_durable_frame_is_corrupt_not_skipped),
		cmocka_unit_test(test_feed_follows_a_durable_mark_made_again),
		cmocka_unit_test(test_feed_follower_is_woken_by_a_commit),
		cmocka_unit_test(test_feed_crosses_file_rollover_and_removal_behind_it),
		cmocka_unit_test(test_feed_removed_past_position_is_lost_never_skipped),
		cmocka_unit_test(test_feed_retention_keeps_needed_files_within_bound_only),
		cmocka_unit_test(test_feed_retention_age_bound_marks_lost),
		cmocka_unit_test(test_feed_registration_from_start_never_lands_in_a_removed_file),
		cmocka_unit_test(test_feed_retention_sees_consumers_registered_between_its_lists),
		cmocka_unit_test(test_feed_retention_removes_nothing_without_the_registry_lock),
		cmocka_unit_test(test_feed_list_reports_lag_in_records_and_seconds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
