/*
 * test_wal_corrupt.c -- a bad frame that a later commit made durable is
 * corruption, never cut as a torn tail; what no later commit vouches for is
 * a torn tail and is cut in place, needing no free block; the operator's
 * explicit cut (wal_cut_after) drops exactly what follows the last good LSN
 * and names every frame it drops.  Files are damaged behind the WAL's back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pio.h"
#include "wal_testutil.h"

#define SEG    (64u * 1024u)
#define PLEN   ((uint32_t)sizeof(struct wal_rec))
#define FBYTES ((size_t)wal_frame_bytes(PLEN))

/* Frames 1..n in commits of @p per frames each (one group commit each). */
static void build_commits(const char *dir, uint64_t n, uint64_t per, uint64_t seg)
{
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = seg;
	wal_t *w;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	unsigned char p[PLEN];
	for (uint64_t l = 1; l <= n; l++) {
		wt_payload(l, p, PLEN);
		assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_OK);
		if (l % per == 0 || l == n)
			assert_int_equal(wal_commit(w), FLASH_OK);
	}
	assert_int_equal(wal_close(w), FLASH_OK);
}

static size_t frame_off(uint64_t lsn)
{
	return WAL_FILE_HDR_BYTES + (size_t)(lsn - 1) * FBYTES;
}

/* Invert one payload byte of frame @p lsn of the one-file WAL in @p dir. */
static void flip_frame(const char *dir, uint64_t lsn)
{
	char *path = wt_file(dir, 1);
	size_t len;
	unsigned char *b = wt_read(path, &len);
	b[frame_off(lsn) + WAL_FRAME_HDR_BYTES + 20] ^= 0xff;
	wt_write(path, b, len);
	free(b);
	free(path);
}

static unsigned char *file_copy(const char *dir, uint64_t start, size_t *len)
{
	char *path = wt_file(dir, start);
	unsigned char *b = wt_read(path, len);
	free(path);
	return b;
}

static void test_flipped_byte_before_a_later_commit_is_corruption_and_not_cut(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build_commits(dir, 50, 10, SEG);     /* commits open at LSN 1, 11, 21, 31, 41 */
	flip_frame(dir, 17);
	size_t n0, n1;
	unsigned char *before = file_copy(dir, 1, &n0);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_NOTTAIL);
	assert_int_equal(rep.stop, FLASH_EWAL_CRC);
	assert_int_equal(s.n, 16);
	assert_int_equal(rep.bad_lsn, 17);
	assert_int_equal(rep.after_frames, 33);
	assert_int_equal(rep.after_first_lsn, 18);
	assert_int_equal(rep.after_last_lsn, 50);
	assert_int_equal(rep.proof_lsn, 41);  /* the newest commit that vouches for LSN 17 */
	assert_int_equal(rep.torn, 0);
	assert_int_equal(rep.truncated_bytes, 0);
	unsigned char *after = file_copy(dir, 1, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);   /* nothing cut */
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_EWAL_TORN);   /* and no writer goes on */
	free(before);
	free(after);
	wt_rmdir(dir);
}

static void test_bad_frame_in_the_last_commit_is_a_torn_tail_and_cut_in_place(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build_commits(dir, 50, 10, SEG);
	flip_frame(dir, 45);                  /* inside the last commit (41..50) */
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_EWAL_CRC);
	assert_int_equal(rep.torn, 1);
	assert_int_equal(rep.proof_lsn, 0);
	assert_int_equal(rep.after_frames, 5);    /* 46..50: never vouched for as durable */
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_CRC);
	assert_int_equal(rep.truncated_bytes, SEG - frame_off(45));
	size_t len;
	unsigned char *b = file_copy(dir, 1, &len);
	assert_int_equal(len, SEG);               /* the file keeps its preallocated size */
	for (size_t i = frame_off(45); i < len; i++)
		assert_int_equal(b[i], 0);
	free(b);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, 44);
	wt_rmdir(dir);
}

/* A frame below from_lsn is vouched for by the caller (a snapshot holds it):
 * never a torn tail, never cut (its LSN would be handed out again). */
static void test_bad_frame_below_from_lsn_is_never_cut(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build_commits(dir, 50, 10, SEG);
	flip_frame(dir, 45);
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 48, NULL, NULL, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_NOTTAIL);
	assert_int_equal(rep.torn, 0);
	assert_int_equal(rep.truncated_bytes, 0);
	wt_rmdir(dir);
}

static int enospc(int fd, off_t off, off_t len)
{
	(void)fd; (void)off; (void)len;
	errno = ENOSPC;
	return -1;
}

static void test_torn_tail_is_cut_on_a_full_disk(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build_commits(dir, 30, 10, SEG);
	flip_frame(dir, 28);
	struct wal_replay_report rep;
	/* a full disk: no new block for anyone */
	assert_int_equal(pio_override("fallocate", (pio_fn)enospc, NULL), 0);
	int rc = wal_replay(dir, 0, NULL, NULL, WAL_REPLAY_TRUNCATE, &rep);
	pio_reset();
	assert_int_equal(rc, FLASH_EWAL_CRC);           /* cut: the cause is reported, no FLASH_ESYS */
	assert_int_equal(rep.truncated_bytes, SEG - frame_off(28));
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, 0, &rep), FLASH_OK);
	assert_int_equal(rep.last_lsn, 27);
	wt_rmdir(dir);
}

struct dropped {
	uint64_t n, first, last;
	int      ordered, payload_ok;
};

static int drop_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct dropped *d = arg;
	unsigned char want[PLEN];
	(void)type;
	if (d->n == 0) {
		d->first = lsn;
		d->ordered = d->payload_ok = 1;
	} else if (lsn != d->last + 1) {
		d->ordered = 0;
	}
	wt_payload(lsn, want, PLEN);
	if (len != PLEN || memcmp(p, want, PLEN) != 0)
		d->payload_ok = 0;
	d->last = lsn;
	d->n++;
	return 0;
}

static void test_cut_after_drops_exactly_what_follows_the_last_good_lsn(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build_commits(dir, 50, 10, SEG);
	flip_frame(dir, 17);
	size_t n0, n1;
	unsigned char *before = file_copy(dir, 1, &n0);
	struct dropped d = { 0 };
	struct wal_replay_report rep;
	/* only the last good LSN is accepted: nothing changes otherwise */
	assert_int_equal(wal_cut_after(dir, 15, drop_cb, &d, 0, &rep), FLASH_EINVAL);
	assert_int_equal(wal_cut_after(dir, 17, drop_cb, &d, 0, &rep), FLASH_EINVAL);
	assert_int_equal(d.n, 0);
	unsigned char *after = file_copy(dir, 1, &n1);
	assert_memory_equal(before, after, n0);
	free(after);
	assert_int_equal(wal_cut_after(dir, 16, drop_cb, &d, 0, &rep), FLASH_OK);
	assert_int_equal(d.n, 33);
	assert_int_equal(d.first, 18);
	assert_int_equal(d.last, 50);
	assert_true(d.ordered);
	assert_true(d.payload_ok);
	struct wt_seen s = { 0 };
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, 16);
	assert_int_equal(s.bad_payload, 0);
	/* again: a clean WAL ending at that LSN is left alone */
	assert_int_equal(wal_cut_after(dir, 16, NULL, NULL, 0, &rep), FLASH_OK);
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	assert_int_equal(wal_next_lsn(w), 17);
	assert_int_equal(wal_close(w), FLASH_OK);
	free(before);
	wt_rmdir(dir);
}

/* A middle file deleted: replay names the missing range; the cut after
 * the last LSN before it removes the later files, naming their frames. */
static void test_missing_middle_file_is_named_and_cut_only_on_request(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build_commits(dir, 150, 7, 4096);          /* 38 frames a file */
	uint64_t per = (4096 - WAL_FILE_HDR_BYTES) / FBYTES;
	char *mid = wt_file(dir, per + 1);
	assert_int_equal(unlink(mid), 0);
	free(mid);
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, 0, &rep), FLASH_EWAL_GAP);
	assert_int_equal(rep.gap_first, per + 1);
	assert_int_equal(rep.gap_last, 2 * per);
	assert_int_equal(rep.bad_lsn, per + 1);
	assert_int_equal(rep.after_frames, 150 - 2 * per);
	assert_int_equal(rep.torn, 0);
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_NOTTAIL);
	struct dropped d = { 0 };
	assert_int_equal(wal_cut_after(dir, per, drop_cb, &d, 0, &rep), FLASH_OK);
	assert_int_equal(d.n, 150 - 2 * per);
	assert_int_equal(d.first, 2 * per + 1);
	assert_int_equal(d.last, 150);
	assert_true(d.payload_ok);
	assert_true(rep.files_removed >= 1);
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, 0, &rep), FLASH_OK);
	assert_int_equal(rep.last_lsn, per);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flipped_byte_before_a_later_commit_is_corruption_and_not_cut),
		cmocka_unit_test(test_bad_frame_in_the_last_commit_is_a_torn_tail_and_cut_in_place),
		cmocka_unit_test(test_bad_frame_below_from_lsn_is_never_cut),
		cmocka_unit_test(test_torn_tail_is_cut_on_a_full_disk),
		cmocka_unit_test(test_cut_after_drops_exactly_what_follows_the_last_good_lsn),
		cmocka_unit_test(test_missing_middle_file_is_named_and_cut_only_on_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
