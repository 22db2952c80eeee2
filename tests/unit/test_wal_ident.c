/*
 * test_wal_ident.c -- the identity a WAL's file headers carry (wal.h,
 * "Identity"):
 *  - every file, the first and each one a roll creates, carries the
 *    incarnation and durability wal_open was given; wal_ident reads them;
 *  - wal_open with another incarnation refuses (FLASH_EWAL_IDENT) and changes no
 *    byte of any file;
 *  - a writer without an incarnation continues the WAL's own;
 *  - a last file that records none (or another durability) gets the
 *    writer's, its frames unchanged;
 *  - files of two incarnations in one directory: FLASH_EWAL_IDENT from wal_ident.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "wal_testutil.h"

#define SEG 4096u   /* small files: a few frames each, so appends roll */

static void append_n(wal_t *w, int n)
{
	unsigned char p[sizeof(struct wal_rec)];
	for (int i = 0; i < n; i++) {
		memset(p, i + 1, sizeof p);
		assert_int_equal(wal_append(w, WAL_T_RECORD, p, sizeof p, NULL), FLASH_OK);
	}
	assert_int_equal(wal_commit(w), FLASH_OK);
}

static wal_t *open_as(const char *dir, uint64_t inc, uint32_t dur)
{
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = SEG;
	o.incarnation = inc;
	o.durability = dur;
	wal_t *w;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	return w;
}

/* u64 at byte @p off of the header of the file starting at @p lsn. */
static uint64_t hdr_u64(const char *dir, uint64_t lsn, size_t off)
{
	char *f = wt_file(dir, lsn);
	size_t n;
	unsigned char *b = wt_read(f, &n);
	uint64_t v;
	memcpy(&v, b + off, sizeof v);
	free(b);
	free(f);
	return v;
}

static void test_every_file_carries_the_incarnation_and_durability(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	wal_t *w = open_as(dir, 0x1234abcdull, WAL_DUR_SYNC);
	append_n(w, 200);          /* ~ 100 bytes a frame: several files */
	struct wal_stats ws;
	wal_stats_get(w, &ws);
	assert_true(ws.files_created >= 3);
	assert_int_equal(wal_close(w), FLASH_OK);
	struct wal_ident wi;
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_int_equal(wi.wi_incarnation, 0x1234abcdull);
	assert_int_equal(wi.wi_durability, WAL_DUR_SYNC);
	assert_int_equal(wi.wi_files, ws.files_created);
	assert_int_equal(wi.wi_first_lsn, 1);
	assert_int_equal(hdr_u64(dir, 1, 40), 0x1234abcdull);
	wt_rmdir(dir);
}

static void test_another_incarnation_is_refused_and_nothing_changes(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	wal_t *w = open_as(dir, 7, WAL_DUR_ASYNC);
	append_n(w, 5);
	assert_int_equal(wal_close(w), FLASH_OK);
	char *f = wt_file(dir, 1);
	size_t n0, n1;
	unsigned char *before = wt_read(f, &n0);

	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = SEG;
	o.incarnation = 8;
	o.durability = WAL_DUR_ASYNC;
	w = NULL;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_EWAL_IDENT);
	assert_null(w);
	unsigned char *after = wt_read(f, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	/* the refused open left the directory unlocked */
	assert_int_equal(wal_lock_held(dir), 0);
	free(before);
	free(after);
	free(f);
	wt_rmdir(dir);
}

static void test_a_writer_without_incarnation_continues_the_wals(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	wal_t *w = open_as(dir, 99, WAL_DUR_SYNC);
	append_n(w, 5);
	assert_int_equal(wal_close(w), FLASH_OK);
	w = open_as(dir, 0, WAL_DUR_NONE);
	append_n(w, 200);          /* rolls: the new files take 99 too */
	assert_int_equal(wal_close(w), FLASH_OK);
	struct wal_ident wi;
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_true(wi.wi_files >= 3);
	assert_int_equal(wi.wi_incarnation, 99);
	assert_int_equal(wi.wi_durability, WAL_DUR_SYNC);
	wt_rmdir(dir);
}

static int count_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(void)lsn; (void)type; (void)p; (void)len;
	(*(uint64_t *)arg)++;
	return 0;
}

static void test_a_file_without_identity_gets_the_writers(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	wal_t *w = open_as(dir, 0, WAL_DUR_NONE);   /* as written before identities */
	append_n(w, 3);
	assert_int_equal(wal_close(w), FLASH_OK);
	struct wal_ident wi;
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_int_equal(wi.wi_incarnation, 0);
	assert_int_equal(wi.wi_durability, WAL_DUR_NONE);
	w = open_as(dir, 55, WAL_DUR_ASYNC);
	assert_int_equal(wal_next_lsn(w), 4);
	assert_int_equal(wal_close(w), FLASH_OK);
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_int_equal(wi.wi_incarnation, 55);
	assert_int_equal(wi.wi_durability, WAL_DUR_ASYNC);
	/* a durability change is recorded the same way */
	w = open_as(dir, 55, WAL_DUR_SYNC);
	assert_int_equal(wal_close(w), FLASH_OK);
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_int_equal(wi.wi_durability, WAL_DUR_SYNC);
	/* the header stays valid and the frames are all there */
	uint64_t frames = 0;
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, count_cb, &frames, 0, &rep), FLASH_OK);
	assert_int_equal(frames, 3);
	wt_rmdir(dir);
}

static void test_files_of_two_incarnations_are_reported(void **st)
{
	(void)st;
	char *a = wt_mkdtemp(), *b = wt_mkdtemp();
	wal_t *w = open_as(a, 1, WAL_DUR_ASYNC);
	append_n(w, 200);
	assert_int_equal(wal_close(w), FLASH_OK);
	struct wal_ident wi;
	assert_int_equal(wal_ident(a, &wi), FLASH_OK);
	/* the newest file of WAL a replaced by a file of another WAL */
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = SEG;
	o.incarnation = 2;
	o.start_lsn = 1000;
	assert_int_equal(wal_open(b, &o, &w), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	char *src = wt_file(b, 1000), *dst = wt_file(a, 1000);
	size_t n;
	unsigned char *img = wt_read(src, &n);
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	wt_write(dst, img, n);
	free(img);
	free(src);
	free(dst);
	assert_int_equal(wal_ident(a, &wi), FLASH_EWAL_IDENT);
	assert_int_equal(wi.wi_incarnation, 2);
	wt_rmdir(a);
	wt_rmdir(b);
}

static void test_an_empty_directory_has_no_identity(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	struct wal_ident wi;
	assert_int_equal(wal_ident(dir, &wi), FLASH_OK);
	assert_int_equal(wi.wi_files, 0);
	assert_int_equal(wi.wi_incarnation, 0);
	char missing[600];
	snprintf(missing, sizeof missing, "%s/none", dir);
	assert_int_equal(wal_ident(missing, &wi), FLASH_OK);
	assert_int_equal(wi.wi_files, 0);
	assert_int_equal(wal_lock_held(missing), 0);
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_file_carries_the_incarnation_and_durability),
		cmocka_unit_test(test_another_incarnation_is_refused_and_nothing_changes),
		cmocka_unit_test(test_a_writer_without_incarnation_continues_the_wals),
		cmocka_unit_test(test_a_file_without_identity_gets_the_writers),
		cmocka_unit_test(test_files_of_two_incarnations_are_reported),
		cmocka_unit_test(test_an_empty_directory_has_no_identity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
