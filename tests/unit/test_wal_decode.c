/*
 * test_wal_decode.c -- the WAL reader stops at the first bad frame, names
 * the cause, passes nothing after it, and can cut a torn tail so appends
 * go on.  Frames are forged behind the WAL's back with plain system calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "wal_testutil.h"

#define SEG    (64u * 1024u)   /* small files: each test rewrites them often */
#define PLEN   ((uint32_t)sizeof(struct wal_rec))
#define FBYTES ((size_t)wal_frame_bytes(PLEN))

/* Write frames 1..n (payload wt_payload(lsn), 72 bytes) into a new WAL. */
static void build(const char *dir, uint64_t n, uint64_t seg)
{
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = seg;
	wal_t *w;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	unsigned char p[PLEN];
	for (uint64_t l = 1; l <= n; l++) {
		uint64_t got;
		wt_payload(l, p, PLEN);
		assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, &got), FLASH_OK);
		assert_int_equal(got, l);
	}
	assert_int_equal(wal_commit(w), FLASH_OK);
	assert_int_equal(wal_durable_lsn(w), n);
	assert_int_equal(wal_close(w), FLASH_OK);
}

static size_t frame_off(uint64_t lsn)
{
	return WAL_FILE_HDR_BYTES + (size_t)(lsn - 1) * FBYTES;
}

/* After a torn-tail truncation the WAL opens where the tail was cut and the
 * next frame gets the next LSN; replay then shows exactly frames 1..n+1. */
static void check_appends_continue(const char *dir, uint64_t n)
{
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	assert_int_equal(wal_next_lsn(w), n + 1);
	unsigned char p[PLEN];
	wt_payload(n + 1, p, PLEN);
	uint64_t l;
	assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, &l), FLASH_OK);
	assert_int_equal(l, n + 1);
	assert_int_equal(wal_close(w), FLASH_OK);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, n + 1);
	assert_int_equal(s.last, n + 1);
	assert_true(s.ordered);
	assert_int_equal(s.bad_payload, 0);
}

static void test_crc32c_check_value_and_both_paths_agree(void **st)
{
	(void)st;
	assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(crc32c_sw(0, "123456789", 9), 0xE3069283u);
	if (crc32c_hw_available())
		assert_int_equal(crc32c_hw(0, "123456789", 9), 0xE3069283u);
	unsigned char b[1031];
	wt_payload(42, b, sizeof b);
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n + off <= sizeof b; n += 37) {
			uint32_t a = crc32c_sw(0, b + off, n);
			if (crc32c_hw_available())
				assert_int_equal(crc32c_hw(0, b + off, n), a);
			size_t half = n / 2;
			assert_int_equal(crc32c(crc32c(0, b + off, half), b + off + half, n - half), a);
		}
}

static void test_clean_wal_replays_every_frame(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build(dir, 50, SEG);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(rep.stop, FLASH_OK);
	assert_int_equal(s.n, 50);
	assert_int_equal(s.first, 1);
	assert_int_equal(rep.last_lsn, 50);
	assert_int_equal(rep.offset, frame_off(51));
	assert_int_equal(s.bad_payload, 0);
	wt_rmdir(dir);
}

/* The file is cut short at every byte of the last frame (a torn write of a
 * file that was not preallocated, or a copy cut short). */
static void test_file_cut_at_every_byte_of_last_frame(void **st)
{
	(void)st;
	const uint64_t n = 20;
	char *dir = wt_mkdtemp();
	build(dir, n, SEG);
	char *path = wt_file(dir, 1);
	size_t len;
	unsigned char *orig = wt_read(path, &len);
	size_t last = frame_off(n);
	for (size_t cut = 0; cut < FBYTES; cut++) {
		wt_write(path, orig, last + cut);
		struct wt_seen s = { 0 };
		struct wal_replay_report rep;
		int rc = wal_replay(dir, 0, wt_collect, &s, 0, &rep);
		assert_int_equal(rc, cut == 0 ? FLASH_OK : FLASH_EWAL_PAST_END);
		assert_int_equal(s.n, n - 1);
		assert_int_equal(s.last, n - 1);
		assert_int_equal(rep.offset, last);
		/* Without truncation the WAL refuses to append after a torn tail. */
		wal_t *w;
		if (cut != 0) {
			assert_int_equal(wal_open(dir, NULL, &w), FLASH_EWAL_TORN);
			memset(&s, 0, sizeof s);
			rc = wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep);
			assert_int_equal(rc, FLASH_EWAL_PAST_END);
			assert_int_equal(s.n, n - 1);
			assert_int_equal(rep.truncated_bytes, cut);
		}
		check_appends_continue(dir, n - 1);
	}
	free(orig);
	free(path);
	wt_rmdir(dir);
}

/* The bytes of the last frame from every offset on read as zeros (a torn
 * write into the preallocated file: the tail of the request never landed). */
static void test_zeroed_tail_at_every_byte_of_last_frame(void **st)
{
	(void)st;
	const uint64_t n = 20;
	char *dir = wt_mkdtemp();
	build(dir, n, SEG);
	char *path = wt_file(dir, 1);
	size_t len;
	unsigned char *orig = wt_read(path, &len);
	assert_int_equal(len, SEG);
	unsigned char *b = malloc(len);
	size_t last = frame_off(n);
	for (size_t cut = 0; cut < FBYTES; cut++) {
		memcpy(b, orig, len);
		memset(b + last + cut, 0, FBYTES - cut);
		wt_write(path, b, len);
		struct wt_seen s = { 0 };
		struct wal_replay_report rep;
		int rc = wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep);
		/* cut 0: the frame never started, a clean end.  Else its
		 * length survives (72 < 256) and the CRC catches the rest. */
		assert_int_equal(rc, cut == 0 ? FLASH_OK : FLASH_EWAL_CRC);
		assert_int_equal(s.n, n - 1);
		assert_int_equal(rep.offset, last);
		check_appends_continue(dir, n - 1);
	}
	free(b);
	free(orig);
	free(path);
	wt_rmdir(dir);
}

struct forge {
	const char *what;
	int         expect;
};

/* Forge one field of frame @p j of 30 and check the exact error, that
 * exactly frames 1..j-1 reach the callback, the offset, and that truncation
 * lets appends continue at LSN j. */
static void forge_one(int kind, int expect)
{
	const uint64_t n = 30, j = 17;
	char *dir = wt_mkdtemp();
	build(dir, n, SEG);
	char *path = wt_file(dir, 1);
	size_t len;
	unsigned char *b = wt_read(path, &len);
	unsigned char *f = b + frame_off(j);
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	switch (kind) {
	case 0: /* length 0, rest of the header intact */
		u32 = 0; memcpy(f, &u32, 4);
		break;
	case 1: /* length shorter than a record */
		u32 = 8; memcpy(f, &u32, 4);
		break;
	case 2: /* length past the end of the file */
		u32 = SEG; memcpy(f, &u32, 4);
		break;
	case 3: /* length above the maximum */
		u32 = WAL_PAYLOAD_MAX + 8; memcpy(f, &u32, 4);
		break;
	case 4: /* previous-LSN wrong, CRC recomputed */
		u64 = j - 2; memcpy(f + 16, &u64, 8);
		wal_frame_reseal(f);
		break;
	case 5: /* LSN skips one (prev consistent with it), CRC recomputed */
		u64 = j + 1; memcpy(f + 8, &u64, 8);
		u64 = j; memcpy(f + 16, &u64, 8);
		wal_frame_reseal(f);
		break;
	case 6: /* one CRC byte flipped */
		f[25] ^= 0x01;
		break;
	case 7: /* one payload bit flipped */
		f[WAL_FRAME_HDR_BYTES + 40] ^= 0x10;
		break;
	case 8: /* a valid frame of an older generation (stale LSN) */
		memcpy(f, b + frame_off(3), FBYTES);
		break;
	case 9: /* type 0 (never valid), CRC recomputed: well framed otherwise */
		u16 = 0; memcpy(f + 4, &u16, 2);
		wal_frame_reseal(f);
		break;
	case 10: /* the first type past the known ones, CRC recomputed */
		u16 = WAL_T_MAX + 1; memcpy(f + 4, &u16, 2);
		wal_frame_reseal(f);
		break;
	case 11: /* the largest type, CRC recomputed */
		u16 = UINT16_MAX; memcpy(f + 4, &u16, 2);
		wal_frame_reseal(f);
		break;
	}
	wt_write(path, b, len);

	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	int rc = wal_replay(dir, 0, wt_collect, &s, 0, &rep);
	assert_int_equal(rc, expect);
	assert_int_equal(rep.stop, expect);
	assert_int_equal(s.n, j - 1);
	assert_int_equal(s.last, j - 1);
	assert_int_equal(rep.last_lsn, j - 1);
	assert_int_equal(rep.offset, frame_off(j));
	assert_string_equal(rep.file, path);

	memset(&s, 0, sizeof s);
	rc = wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep);
	assert_int_equal(rc, expect);
	assert_int_equal(s.n, j - 1);
	assert_int_equal(rep.truncated_bytes, SEG - frame_off(j));
	check_appends_continue(dir, j - 1);
	free(b);
	free(path);
	wt_rmdir(dir);
}

static void test_forged_length_zero_is_ezero_len(void **st)    { (void)st; forge_one(0, FLASH_EWAL_ZERO_LEN); }
static void test_forged_length_short_is_eshort(void **st)      { (void)st; forge_one(1, FLASH_EWAL_SHORT); }
static void test_forged_length_past_end_is_epast_end(void **st){ (void)st; forge_one(2, FLASH_EWAL_PAST_END); }
static void test_forged_length_huge_is_elong(void **st)        { (void)st; forge_one(3, FLASH_EWAL_LONG); }
static void test_forged_prev_lsn_is_eprev(void **st)           { (void)st; forge_one(4, FLASH_EWAL_PREV); }
static void test_forged_lsn_is_elsn(void **st)                 { (void)st; forge_one(5, FLASH_EWAL_LSN); }
static void test_flipped_crc_byte_is_ecrc(void **st)           { (void)st; forge_one(6, FLASH_EWAL_CRC); }
static void test_flipped_payload_bit_is_ecrc(void **st)        { (void)st; forge_one(7, FLASH_EWAL_CRC); }
static void test_stale_frame_from_older_generation_is_elsn(void **st) { (void)st; forge_one(8, FLASH_EWAL_LSN); }
static void test_crc_valid_type_zero_is_etype(void **st)       { (void)st; forge_one(9, FLASH_EWAL_TYPE); }
static void test_crc_valid_type_past_known_is_etype(void **st) { (void)st; forge_one(10, FLASH_EWAL_TYPE); }
static void test_crc_valid_type_max_is_etype(void **st)        { (void)st; forge_one(11, FLASH_EWAL_TYPE); }

/* An unknown type has its own code and name, and the writer never makes one. */
static void test_etype_is_named_and_never_appended(void **st)
{
	(void)st;
	assert_string_equal(flash_rcname(FLASH_EWAL_TYPE), "FLASH_EWAL_TYPE");
	assert_string_not_equal(flash_strerror(FLASH_EWAL_TYPE), flash_strerror(12345));
	char *dir = wt_mkdtemp();
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	unsigned char p[PLEN] = { 1 };
	assert_int_equal(wal_append(w, WAL_T_MAX + 1, p, PLEN, NULL), FLASH_EINVAL);
	assert_int_equal(wal_append(w, UINT16_MAX, p, PLEN, NULL), FLASH_EINVAL);
	assert_int_equal(wal_next_lsn(w), 1);
	assert_int_equal(wal_close(w), FLASH_OK);
	wt_rmdir(dir);
}

/*
 * The file header's segment size is what wal_open preallocates (fallocate)
 * and what a truncation zero-fills back to: a forged size outside
 * WAL_SEGMENT_MIN..WAL_SEGMENT_MAX, or not a multiple of 4096, is a bad
 * header (FLASH_EWAL_FILE_HDR) -- for replay, truncating replay and open alike --
 * and the file is left exactly as it was.
 */
static void test_forged_segment_size_is_efile_hdr(void **st)
{
	(void)st;
	const uint64_t bad[] = { 0, WAL_SEGMENT_MIN - 8, WAL_SEGMENT_MAX + 4096, 1ull << 40,
	                         UINT64_MAX, SEG + 8, SEG - 1 };
	char *dir = wt_mkdtemp();
	build(dir, 10, SEG);
	char *path = wt_file(dir, 1);
	size_t len;
	unsigned char *orig = wt_read(path, &len);
	unsigned char *b = malloc(len);
	assert_non_null(b);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(b, orig, len);
		memcpy(b + 24, &bad[i], 8);
		uint32_t crc = crc32c(0, b, 60);    /* a consistent header otherwise */
		memcpy(b + 60, &crc, 4);
		wt_write(path, b, len);
		struct wt_seen s = { 0 };
		struct wal_replay_report rep;
		assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_EWAL_FILE_HDR);
		assert_int_equal(s.n, 0);
		assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep),
		                 FLASH_EWAL_FILE_HDR);
		assert_int_equal(s.n, 0);
		assert_int_equal(rep.truncated_bytes, 0);
		wal_t *w;
		assert_int_equal(wal_open(dir, NULL, &w), FLASH_EWAL_FILE_HDR);
		size_t now;
		unsigned char *after = wt_read(path, &now);
		assert_int_equal(now, len);
		assert_memory_equal(after, b, len);
		free(after);
	}
	/* The bounds themselves are good sizes, and so is the original. */
	const uint64_t good[] = { WAL_SEGMENT_MIN, SEG };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		memcpy(b, orig, len);
		memcpy(b + 24, &good[i], 8);
		uint32_t crc = crc32c(0, b, 60);
		memcpy(b + 60, &crc, 4);
		wt_write(path, b, len);
		struct wt_seen s = { 0 };
		struct wal_replay_report rep;
		int rc = wal_replay(dir, 0, wt_collect, &s, 0, &rep);
		/* a header saying 4096 over a 64 KiB file still reads its frames */
		assert_int_equal(rc, FLASH_OK);
		assert_int_equal(s.n, 10);
	}
	/* The writer refuses such sizes too. */
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = WAL_SEGMENT_MAX + 4096;
	wal_t *w;
	char *dir2 = wt_mkdtemp();
	assert_int_equal(wal_open(dir2, &o, &w), FLASH_EINVAL);
	wt_rmdir(dir2);
	free(b);
	free(orig);
	free(path);
	wt_rmdir(dir);
}

static void test_bad_magic_is_emagic_and_nothing_applied(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build(dir, 10, SEG);
	char *path = wt_file(dir, 1);
	size_t len;
	unsigned char *b = wt_read(path, &len);
	b[0] ^= 0x20;
	wt_write(path, b, len);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_MAGIC);
	assert_int_equal(s.n, 0);
	assert_int_equal(rep.offset, 0);
	/* A bad file header is never "truncated away". */
	assert_true(wt_exists(path));
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_EWAL_MAGIC);
	/* A file header with a valid magic but a damaged checksum. */
	b[0] ^= 0x20;
	b[33] ^= 0x01;
	wt_write(path, b, len);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_EWAL_FILE_HDR);
	assert_int_equal(s.n, 0);
	free(b);
	free(path);
	wt_rmdir(dir);
}

/* Files roll over; a bad frame in a file that is not the last one is
 * corruption, not a torn tail: reported, never truncated. */
static void test_bad_frame_before_last_file_is_not_truncated(void **st)
{
	(void)st;
	const uint64_t seg = 8192;
	const uint64_t per = (seg - WAL_FILE_HDR_BYTES) / FBYTES;  /* frames per file */
	const uint64_t n = per * 3 + 5;
	char *dir = wt_mkdtemp();
	build(dir, n, seg);
	char *f2 = wt_file(dir, per + 1), *f4 = wt_file(dir, 3 * per + 1);
	assert_true(wt_exists(f2));
	assert_true(wt_exists(f4));
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, n);
	assert_int_equal(rep.files, 4);
	assert_int_equal(s.bad_payload, 0);

	size_t len;
	unsigned char *b = wt_read(f2, &len);
	b[WAL_FILE_HDR_BYTES + 3 * FBYTES + 40] ^= 1;   /* frame per+4 */
	wt_write(f2, b, len);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_NOTTAIL);
	assert_int_equal(rep.stop, FLASH_EWAL_CRC);
	assert_int_equal(s.n, per + 3);
	assert_int_equal(rep.files_removed, 0);
	assert_true(wt_exists(f4));
	free(b);
	free(f2);
	free(f4);
	wt_rmdir(dir);
}

/* What <dir>/DURABLE published durable is no torn tail (WAL_REPLAY_MARK):
 * a WAL that ends cleanly below it reports the mark (mark_lsn > last_lsn);
 * a bad frame at or below it is corruption, never cut; a mark of another
 * incarnation, or no flag, leaves the WAL alone to decide; an accepted loss
 * recorded with wal_mark_lower() makes the same frame a torn tail again. */
static void test_durable_mark_vouches_for_what_it_published(void **st)
{
	(void)st;
	const uint64_t n = 20;
	char *dir = wt_mkdtemp();
	build(dir, n, SEG);                    /* DURABLE says 20 */
	char *path = wt_file(dir, 1), *mpath;
	assert_true(asprintf(&mpath, "%s/" WAL_MARK_FILE, dir) > 0);
	size_t len, mlen, l2;
	unsigned char *orig = wt_read(path, &len);
	unsigned char *b = malloc(len);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;

	/* frames 16..20 zeroed on their boundaries: a clean end at 15 */
	memcpy(b, orig, len);
	memset(b + frame_off(16), 0, 5 * FBYTES);
	wt_write(path, b, len);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_MARK, &rep), FLASH_OK);
	assert_int_equal(rep.last_lsn, 15);
	assert_int_equal(rep.mark_lsn, n);
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, 0, &rep), FLASH_OK);
	assert_int_equal(rep.mark_lsn, 0);

	/* the mark of another incarnation vouches for nothing */
	unsigned char *m = wt_read(mpath, &mlen);
	struct wal_mark mk;
	memcpy(&mk, m, sizeof mk);
	mk.wm_incarnation = 7;
	memcpy(m, &mk, sizeof mk);
	wt_write(mpath, m, mlen);
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, WAL_REPLAY_MARK, &rep), FLASH_OK);
	assert_int_equal(rep.mark_lsn, 0);
	mk.wm_incarnation = 0;
	memcpy(m, &mk, sizeof mk);
	wt_write(mpath, m, mlen);

	/* zeroed from inside frame 16: a bad CRC with nothing valid after it */
	memcpy(b, orig, len);
	memset(b + frame_off(16) + 40, 0, 5 * FBYTES - 40);
	wt_write(path, b, len);
	assert_int_equal(wal_replay(dir, 0, NULL, NULL, WAL_REPLAY_TRUNCATE | WAL_REPLAY_MARK, &rep),
	                 FLASH_EWAL_NOTTAIL);
	assert_int_equal(rep.stop, FLASH_EWAL_CRC);
	assert_int_equal(rep.bad_lsn, 16);
	assert_int_equal(rep.mark_lsn, n);
	assert_false(rep.torn);
	unsigned char *now = wt_read(path, &l2);
	assert_memory_equal(now, b, len);      /* nothing cut */
	free(now);

	/* the loss of 16..20 accepted: the mark says 15 from now on */
	uint64_t was;
	assert_int_equal(wal_mark_lower(dir, 15, &was), FLASH_OK);
	assert_int_equal(was, n);
	assert_int_equal(wal_mark_lower(dir, 15, &was), FLASH_OK);
	assert_int_equal(was, 15);             /* never raised, lowered once */
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE | WAL_REPLAY_MARK, &rep),
	                 FLASH_EWAL_CRC);
	assert_true(rep.torn);
	assert_int_equal(s.n, 15);
	check_appends_continue(dir, 15);
	free(m);
	free(b);
	free(orig);
	free(mpath);
	free(path);
	wt_rmdir(dir);
}

/* A later file that does not continue the LSN chain stops the replay. */
static void test_missing_middle_file_is_egap(void **st)
{
	(void)st;
	const uint64_t seg = 8192;
	const uint64_t per = (seg - WAL_FILE_HDR_BYTES) / FBYTES;
	const uint64_t n = per * 3 + 5;
	char *dir = wt_mkdtemp();
	build(dir, n, seg);
	char *f2 = wt_file(dir, per + 1);
	assert_int_equal(unlink(f2), 0);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_EWAL_GAP);
	assert_int_equal(s.n, per);
	/* Asking for LSNs older than the oldest file. */
	char *f1 = wt_file(dir, 1);
	assert_int_equal(unlink(f1), 0);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 5, wt_collect, &s, 0, &rep), FLASH_EWAL_GAP);
	assert_int_equal(s.n, 0);
	free(f1);
	free(f2);
	wt_rmdir(dir);
}

/* 100k frames of varying length over many files, written by group commits
 * of varying size, read back exactly, whole and from an LSN in the middle. */
static void test_round_trip_100k_frames(void **st)
{
	(void)st;
	const uint64_t n = 100000;
	char *dir = wt_mkdtemp();
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = 1u << 20;
	wal_t *w;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	unsigned char p[256];
	for (uint64_t l = 1; l <= n; l++) {
		uint32_t len = wt_len(l);
		wt_payload(l, p, len);
		assert_int_equal(wal_append(w, WAL_T_RECORD, p, len, NULL), FLASH_OK);
		if (l % 997 == 0 || l == n / 2)
			assert_int_equal(wal_commit(w), FLASH_OK);
	}
	assert_int_equal(wal_close(w), FLASH_OK);

	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, n);
	assert_int_equal(s.first, 1);
	assert_int_equal(s.last, n);
	assert_true(s.ordered);
	assert_int_equal(s.bad_payload, 0);
	assert_true(rep.files > 5);

	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 54321, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.first, 54321);
	assert_int_equal(s.n, n - 54321 + 1);
	assert_int_equal(s.bad_payload, 0);

	/* Reopen: appends continue at n + 1. */
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	assert_int_equal(wal_durable_lsn(w), n);
	uint64_t l;
	wt_payload(n + 1, p, wt_len(n + 1));
	assert_int_equal(wal_submit(w, WAL_T_RECORD, p, wt_len(n + 1), &l), FLASH_OK);
	assert_int_equal(l, n + 1);
	assert_int_equal(wal_close(w), FLASH_OK);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, n - 1, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.last, n + 1);
	wt_rmdir(dir);
}

static int stop_at_5(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	wt_collect(arg, lsn, type, p, len);
	return lsn == 5;
}

static void test_callback_stop_and_bad_arguments(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build(dir, 10, SEG);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, stop_at_5, &s, 0, &rep), FLASH_EWAL_STOPPED);
	assert_int_equal(s.n, 5);
	assert_int_equal(wal_replay(NULL, 0, wt_collect, &s, 0, &rep), FLASH_EINVAL);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0x80, &rep), FLASH_EINVAL);
	wal_t *w;
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = 1000;
	assert_int_equal(wal_open(dir, &o, &w), FLASH_EINVAL);
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	unsigned char p[PLEN] = { 1 };
	assert_int_equal(wal_append(w, 0, p, PLEN, NULL), FLASH_EINVAL);
	assert_int_equal(wal_append(w, WAL_T_RECORD, p, 8, NULL), FLASH_EINVAL);
	assert_int_equal(wal_sync(w, 11), FLASH_EINVAL);
	assert_int_equal(wal_sync(w, 10), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	/* An empty, missing directory is an empty WAL. */
	char *missing;
	assert_true(asprintf(&missing, "%s/none", dir) > 0);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(missing, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, 0);
	assert_int_equal(rep.last_lsn, 0);
	free(missing);
	assert_string_equal(flash_rcname(FLASH_EWAL_CRC), "FLASH_EWAL_CRC");
	assert_string_equal(flash_rcname(12345), "FLASH_E?");
	wt_rmdir(dir);
}

/* Old files go once covered; the last file stays; replay from a removed LSN
 * is a gap, from a kept one works. */
static void test_remove_before_keeps_what_is_not_covered(void **st)
{
	(void)st;
	const uint64_t seg = 8192;
	const uint64_t per = (seg - WAL_FILE_HDR_BYTES) / FBYTES;
	const uint64_t n = per * 3 + 5;
	char *dir = wt_mkdtemp();
	build(dir, n, seg);
	uint32_t removed;
	/* LSN per + 1 starts file 2: only file 1 is wholly below it. */
	assert_int_equal(wal_remove_before(dir, per, &removed), FLASH_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(wal_remove_before(dir, per + 1, &removed), FLASH_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(wal_remove_before(dir, UINT64_MAX, &removed), FLASH_OK);
	assert_int_equal(removed, 2);
	char *last = wt_file(dir, 3 * per + 1);
	assert_true(wt_exists(last));
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 3 * per + 1, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, 5);
	assert_int_equal(s.bad_payload, 0);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, per, wt_collect, &s, 0, &rep), FLASH_EWAL_GAP);
	assert_int_equal(s.n, 0);
	/* Appends go on in the last file. */
	wal_t *w;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	assert_int_equal(wal_next_lsn(w), n + 1);
	assert_int_equal(wal_close(w), FLASH_OK);
	free(last);
	wt_rmdir(dir);
}

/* One writer per directory: a second wal_open or a truncating replay is
 * FLASH_EWAL_BUSY while a wal_t holds it; reading needs no lock; closing frees it. */
static void test_directory_has_one_writer(void **st)
{
	(void)st;
	char *dir = wt_mkdtemp();
	build(dir, 5, SEG);
	wal_t *w, *w2;
	assert_int_equal(wal_open(dir, NULL, &w), FLASH_OK);
	assert_int_equal(wal_open(dir, NULL, &w2), FLASH_EWAL_BUSY);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep), FLASH_EWAL_BUSY);
	assert_int_equal(s.n, 0);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, 5);
	assert_int_equal(wal_close(w), FLASH_OK);
	assert_int_equal(wal_open(dir, NULL, &w2), FLASH_OK);
	assert_int_equal(wal_close(w2), FLASH_OK);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep), FLASH_OK);
	assert_int_equal(s.n, 5);
	wt_rmdir(dir);
}

/*
 * wal_rec_fields names each member for what it holds in the record's type
 * (the names of `wal dump`, `feed --json`, the RabbitMQ sink): a sku's qty
 * is shards and its value units, an activity's value start_ns and its ts_ns
 * end_ns, ...; text mode says activity, sku, order, user for the four ids;
 * a type this version does not know shows every member under its struct
 * name, a gap line (type 0) none; too small a buffer gives 0.  A
 * reservation's pay-by time (ORDER with value != 0, CONFIRM, EXPIRE) is
 * pay_by_ns; a plain order prints no such member, as before reservations.
 * Versioned terms: an ACTIVITY's and a SKU's order_no is their version, an
 * ACTIVITY's flags 1 is update (new terms of an existing activity, 0 for an
 * add), and a PRICE names activity, sku, price, version and ts_ns.
 */
static void test_record_fields_are_named_for_what_they_hold_per_type(void **state)
{
	(void)state;
	struct flash_record r = { .slot = 1, .activity_id = 7, .sku_id = 11, .qty = 2, .order_no = 42,
	                          .user_id = 99, .value = -5, .ts_ns = 1000, .biz_day = 3 | 2u << 8 | 5u << 16,
	                          .limit_slot = 4, .flags = 1, .request_id = 555 };
	static const struct {
		uint16_t    type;
		const char *json, *text;
	} want[] = {
		{ FLASH_REC_ORDER,             /* value != 0: a reservation, paid by then */
		  "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,\"ts_ns\":1000,"
		  "\"biz_day\":328195,\"limit_slot\":4,\"request_id\":555,\"flags\":1,\"pay_by_ns\":-5",
		  "activity=7 sku=11 qty=2 order=42 user=99 ts_ns=1000 biz_day=328195 limit_slot=4 request_id=555 flags=1 "
		  "pay_by_ns=-5" },
		{ FLASH_REC_CONFIRM,
		  "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,\"ts_ns\":1000,"
		  "\"biz_day\":328195,\"limit_slot\":4,\"pay_by_ns\":-5",
		  "activity=7 sku=11 qty=2 order=42 user=99 ts_ns=1000 biz_day=328195 limit_slot=4 pay_by_ns=-5" },
		{ FLASH_REC_EXPIRE,
		  "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,\"ts_ns\":1000,"
		  "\"biz_day\":328195,\"limit_slot\":4,\"quota_returned\":1,\"pay_by_ns\":-5",
		  "activity=7 sku=11 qty=2 order=42 user=99 ts_ns=1000 biz_day=328195 limit_slot=4 quota_returned=1 "
		  "pay_by_ns=-5" },
		{ FLASH_REC_CANCEL,
		  "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,\"ts_ns\":1000,"
		  "\"biz_day\":328195,\"limit_slot\":4,\"quota_returned\":1",
		  "activity=7 sku=11 qty=2 order=42 user=99 ts_ns=1000 biz_day=328195 limit_slot=4 quota_returned=1" },
		{ FLASH_REC_RESTOCK, "\"activity_id\":7,\"sku_id\":11,\"delta\":-5,\"ts_ns\":1000",
		  "activity=7 sku=11 delta=-5 ts_ns=1000" },
		{ FLASH_REC_ACTIVITY,
		  "\"activity_id\":7,\"start_ns\":-5,\"end_ns\":1000,\"limit_per_user\":3,\"scope\":2,"
		  "\"flags\":5,\"max_qty\":4,\"day_offset_s\":555,\"version\":42,\"update\":1",
		  "activity=7 start_ns=-5 end_ns=1000 limit_per_user=3 scope=2 flags=5 max_qty=4 day_offset_s=555"
		  " version=42 update=1" },
		{ FLASH_REC_SKU,
		  "\"activity_id\":7,\"sku_id\":11,\"units\":-5,\"shards\":2,\"ts_ns\":1000,\"version\":42",
		  "activity=7 sku=11 units=-5 shards=2 ts_ns=1000 version=42" },
		{ FLASH_REC_PRICE,
		  "\"activity_id\":7,\"sku_id\":11,\"price\":-5,\"version\":42,\"ts_ns\":1000",
		  "activity=7 sku=11 price=-5 version=42 ts_ns=1000" },
		{ FLASH_REC_ARCHIVE,
		  "\"activity_id\":7,\"orders\":42,\"skus\":2,\"shards\":-5,\"tokens\":99,\"ts_ns\":1000",
		  "activity=7 orders=42 skus=2 shards=-5 tokens=99 ts_ns=1000" },
		{ 99,
		  "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,\"value\":-5,"
		  "\"ts_ns\":1000,\"biz_day\":328195,\"limit_slot\":4,\"flags\":1,\"request_id\":555",
		  "activity_id=7 sku_id=11 qty=2 order_no=42 user_id=99 value=-5 ts_ns=1000 biz_day=328195 "
		  "limit_slot=4 flags=1 request_id=555" },
		{ 0, "", "" },
	};
	char buf[512];
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		r.type = want[i].type;
		assert_int_equal(wal_rec_fields(buf, sizeof buf, &r, 1), strlen(want[i].json));
		assert_string_equal(buf, want[i].json);
		assert_int_equal(wal_rec_fields(buf, sizeof buf, &r, 0), strlen(want[i].text));
		assert_string_equal(buf, want[i].text);
	}
	/* a cart's line: line and last after the type's fields, in both modes;
	 * its flags member keeps the raw bits, a cancel's quota_returned bit 1 */
	struct flash_record c = r;
	c.type = FLASH_REC_ORDER;
	c.value = 0;
	c.flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(15) | FLASH_REC_F_LAST;
	wal_rec_fields(buf, sizeof buf, &c, 0);
	assert_string_equal(buf, "activity=7 sku=11 qty=2 order=42 user=99 ts_ns=1000 biz_day=328195"
	                         " limit_slot=4 request_id=555 flags=16128 line=15 last=1");
	c.type = FLASH_REC_CANCEL;
	c.flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(1) | 1;
	wal_rec_fields(buf, sizeof buf, &c, 1);
	assert_string_equal(buf, "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,"
	                         "\"ts_ns\":1000,\"biz_day\":328195,\"limit_slot\":4,\"quota_returned\":1,"
	                         "\"line\":1,\"last\":0");
	c.type = FLASH_REC_CONFIRM;          /* the longest: every field of an order's */
	c.order_no = UINT64_MAX;
	c.user_id = UINT64_MAX;
	c.value = INT64_MIN;
	c.ts_ns = INT64_MIN;
	assert_true(wal_rec_fields(buf, sizeof buf, &c, 1) > 0);
	assert_non_null(strstr(buf, "\"line\":1,\"last\":0"));
	/* a GEN record: op advance carries the generation's start, clear the keys cleared */
	struct flash_record g = { .type = FLASH_REC_GEN, .activity_id = 1, .sku_id = 2, .qty = 1,
	                          .order_no = 8, .value = 123, .ts_ns = 1000 };
	wal_rec_fields(buf, sizeof buf, &g, 1);
	assert_string_equal(buf, "\"table\":1,\"bank\":2,\"op\":\"advance\",\"generation\":8,"
	                         "\"start_ns\":123,\"ts_ns\":1000");
	g.qty = 2;
	wal_rec_fields(buf, sizeof buf, &g, 0);
	assert_string_equal(buf, "table=1 bank=2 op=clear generation=8 keys_cleared=123 ts_ns=1000");
	/* a plain order (value 0) prints as before reservations; a cancel of
	 * a reservation not paid (flags 2) says so, the cancel of an order not */
	r.type = FLASH_REC_ORDER;
	r.value = 0;
	wal_rec_fields(buf, sizeof buf, &r, 1);
	assert_string_equal(buf, "\"activity_id\":7,\"sku_id\":11,\"qty\":2,\"order_no\":42,\"user_id\":99,"
	                         "\"ts_ns\":1000,\"biz_day\":328195,\"limit_slot\":4,\"request_id\":555,\"flags\":1");
	r.type = FLASH_REC_CANCEL;
	r.flags = 3;
	wal_rec_fields(buf, sizeof buf, &r, 0);
	assert_string_equal(buf, "activity=7 sku=11 qty=2 order=42 user=99 ts_ns=1000 biz_day=328195 limit_slot=4 "
	                         "quota_returned=1 reservation=1");
	assert_string_equal(wal_rec_type_name(FLASH_REC_CONFIRM, "?"), "confirm");
	assert_string_equal(wal_rec_type_name(FLASH_REC_EXPIRE, "?"), "expire");
	assert_string_equal(wal_rec_type_name(FLASH_REC_PRICE, "?"), "price");
	assert_string_equal(wal_rec_type_name(11, "?"), "?");
	/* an activity's add: update 0, its version all the same */
	r.type = FLASH_REC_ACTIVITY;
	r.flags = 0;
	r.order_no = 7;
	wal_rec_fields(buf, sizeof buf, &r, 0);
	assert_non_null(strstr(buf, " day_offset_s=555 version=7 update=0"));
	wal_rec_fields(buf, sizeof buf, &r, 1);
	assert_non_null(strstr(buf, ",\"version\":7,\"update\":0"));
	r.type = FLASH_REC_ORDER;
	assert_int_equal(wal_rec_fields(buf, 20, &r, 1), 0);
	assert_int_equal(wal_rec_fields(buf, 0, &r, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_check_value_and_both_paths_agree),
		cmocka_unit_test(test_clean_wal_replays_every_frame),
		cmocka_unit_test(test_file_cut_at_every_byte_of_last_frame),
		cmocka_unit_test(test_zeroed_tail_at_every_byte_of_last_frame),
		cmocka_unit_test(test_forged_length_zero_is_ezero_len),
		cmocka_unit_test(test_forged_length_short_is_eshort),
		cmocka_unit_test(test_forged_length_past_end_is_epast_end),
		cmocka_unit_test(test_forged_length_huge_is_elong),
		cmocka_unit_test(test_forged_prev_lsn_is_eprev),
		cmocka_unit_test(test_forged_lsn_is_elsn),
		cmocka_unit_test(test_flipped_crc_byte_is_ecrc),
		cmocka_unit_test(test_flipped_payload_bit_is_ecrc),
		cmocka_unit_test(test_stale_frame_from_older_generation_is_elsn),
		cmocka_unit_test(test_crc_valid_type_zero_is_etype),
		cmocka_unit_test(test_crc_valid_type_past_known_is_etype),
		cmocka_unit_test(test_crc_valid_type_max_is_etype),
		cmocka_unit_test(test_etype_is_named_and_never_appended),
		cmocka_unit_test(test_forged_segment_size_is_efile_hdr),
		cmocka_unit_test(test_bad_magic_is_emagic_and_nothing_applied),
		cmocka_unit_test(test_bad_frame_before_last_file_is_not_truncated),
		cmocka_unit_test(test_durable_mark_vouches_for_what_it_published),
		cmocka_unit_test(test_missing_middle_file_is_egap),
		cmocka_unit_test(test_round_trip_100k_frames),
		cmocka_unit_test(test_callback_stop_and_bad_arguments),
		cmocka_unit_test(test_remove_before_keeps_what_is_not_covered),
		cmocka_unit_test(test_directory_has_one_writer),
		cmocka_unit_test(test_record_fields_are_named_for_what_they_hold_per_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
