/*
 * test_wal_snapshot.c -- snapshots (persist/storage/snapshot.c) and the restore API
 * (flash_seg_restore):
 *   - a bad image is refused with the attach codes and creates nothing;
 *   - `serve --recover` rebuilds the same state from the WAL alone, from a
 *     snapshot plus the WAL after it, and after old WAL files were removed,
 *     replaying only the frames after the snapshot;
 *   - WAL files go only once a snapshot and MySQL's applied LSN cover them;
 *   - a corrupt snapshot falls back to the previous one, or is a clear error
 *     with no segment made;
 *   - a failing snapshot write, fdatasync or rename removes its tmp file,
 *     removes no WAL file, turns snapshots off for good, and a restart
 *     recovers from the previous snapshot;
 *   - the reconciler's WAL fold, started from a snapshot after removal,
 *     agrees with the segment.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "helpers.h"
#include "fs.h"
#include "pio.h"
#include "reconcile.h"
#include "feed.h"
#include "serve.h"
#include "snapshot.h"
#include "wal_testutil.h"

/* ---- helpers ---- */

static void base_opts(struct serve_opts *o, const char *seg, const char *dir)
{
	serve_opts_default(o);
	o->segment = seg;
	o->wal_dir = dir;
	o->wal_segment_bytes = 1 << 20;
	o->log_level = PLOG_ERROR;
	o->idle_us_max = 200;
	o->once = 1;
}

/* serve --once, with or without snapshots (a clean stop writes one). */
static struct serve_stats serve_once(const char *seg, const char *dir, int snapshots,
                                     uint64_t wal_bytes)
{
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, seg, dir);
	o.snapshots.on = snapshots;
	if (wal_bytes)
		o.wal_segment_bytes = wal_bytes;
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.snap_failures, 0);
	return ss;
}

static struct serve_stats serve_recover(const char *seg, const char *dir, int expect_rc)
{
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, seg, dir);
	o.recovery.on = 1;
	if (expect_rc != 0)
		o.log_level = -1;
	assert_int_equal(serve_run(&o, &ss), expect_rc);
	return ss;
}

#define ST_ORDERS 512

struct state {
	uint32_t nsku;
	struct flash_sku_info sku[16];
	uint64_t orders_max;
	struct flash_order_info order[ST_ORDERS];
};

static void state_take(flash_t *h, struct state *s)
{
	memset(s, 0, sizeof *s);
	while (s->nsku < 16 && flash_sku_at(h, s->nsku, &s->sku[s->nsku]) == FLASH_OK)
		s->nsku++;
	s->orders_max = flash_orders_max(h);
	assert_true(s->orders_max <= ST_ORDERS);
	for (uint64_t no = 1; no <= s->orders_max; no++) {
		assert_int_equal(flash_order_get(h, no, &s->order[no - 1]), FLASH_OK);
		s->order[no - 1].created_ns = 0;   /* replay need not keep the creation time */
	}
}

static void state_of(const char *seg, struct state *s)
{
	flash_t *h;
	assert_int_equal(flash_open(seg, FLASH_RDONLY, &h), FLASH_OK);
	state_take(h, s);
	flash_close(h);
}

/*
 * One batch of history: (first batch) an activity and two skus, then
 * orders of users [user0, user0 + n), a cancel of every 5th, and a restock.
 * Returns the records it made.
 */
static uint64_t batch(flash_t *h, int first, uint64_t user0, int n)
{
	uint64_t recs = 0;
	if (first) {
		assert_int_equal(t_activity(h, 1, 64, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
		assert_int_equal(flash_sku_add(h, 1, 1, 100000, 1), FLASH_OK);
		assert_int_equal(flash_sku_add(h, 1, 2, 5000, 2), FLASH_OK);
		recs += 3;
	}
	for (int i = 0; i < n; i++) {
		struct flash_order_res res;
		assert_int_equal(t_order(h, 1, 1 + (uint32_t)(i % 2), user0 + (uint64_t)i,
		                         1 + (uint32_t)(i % 3), 0, 0, &res), FLASH_OK);
		recs++;
		if (i % 5 == 0) {
			assert_int_equal(flash_cancel(h, res.order_no, NULL), FLASH_OK);
			recs++;
		}
	}
	assert_int_equal(flash_restock(h, 1, 2, 7), FLASH_OK);
	return recs + 1;
}

static size_t count_files(const char *dir, const char *prefix, const char *suffix)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	size_t n = 0, pl = strlen(prefix), sl = strlen(suffix);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l >= pl + sl && strncmp(e->d_name, prefix, pl) == 0 &&
		    strcmp(e->d_name + l - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static uint64_t newest_snap(const char *dir, size_t *n_out)
{
	uint64_t *l;
	size_t n;
	assert_int_equal(snap_list(dir, &l, &n), FLASH_OK);
	uint64_t v = n ? l[n - 1] : 0;
	if (n_out)
		*n_out = n;
	free(l);
	return v;
}

static void wal_first_last(const char *dir, uint64_t *first, uint64_t *last)
{
	assert_int_equal(snap_wal_range(dir, first, last), FLASH_OK);
}

/* Flip one byte in the image part of a snapshot file. */
static void snap_corrupt(const char *dir, uint64_t lsn)
{
	char path[4200];
	snap_path(path, sizeof path, dir, lsn);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct snap_hdr h;
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	unsigned char b;
	off_t at = (off_t)(h.sh_img_off + 4096 * 3 + 17);
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

static int segment_exists(const char *seg)
{
	flash_t *h;
	int rc = flash_open(seg, FLASH_RDONLY, &h);
	if (rc == FLASH_OK)
		flash_close(h);
	return rc != FLASH_ENOSEG;
}

/* ---- restore API ---- */

static void *image_copy(flash_t *h, uint64_t *len)
{
	const void *base;
	assert_int_equal(flash_image(h, &base, len), FLASH_OK);
	void *c = malloc(*len);
	assert_non_null(c);
	memcpy(c, base, *len);
	return c;
}

static void reseal(void *img)
{
	struct fs_hdr_fixed *fx = img;
	fx->checksum = fs_fnv(fx, offsetof(struct fs_hdr_fixed, checksum));
}

/* A bad image is refused with the code attach gives the same defect, and
 * nothing is created; a good one makes a segment with every slot free. */
static void test_restore_refuses_bad_images_with_the_attach_codes(void **st)
{
	(void)st;
	char name[64], dst[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	batch(h, 1, 100, 6);
	uint64_t len;
	unsigned char *good = image_copy(h, &len);
	unsigned char *img = malloc(len);
	assert_non_null(img);
	t_segname(dst, sizeof dst);
	struct { const char *what; int rc; } cases[] = {
		{ "magic", FLASH_EMAGIC }, { "version", FLASH_EVERSION },
		{ "checksum", FLASH_ECHECKSUM }, { "short", FLASH_ESIZE }, { "long", FLASH_ESIZE },
		{ "header only", FLASH_ESIZE }, { "seg_size", FLASH_ESIZE },
		{ "region", FLASH_ELAYOUT }, { "region count", FLASH_ELAYOUT },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(img, good, len);
		struct fs_hdr_fixed *fx = (struct fs_hdr_fixed *)(void *)img;
		size_t n = len;
		switch (i) {
		case 0: fx->magic ^= 1; break;
		case 1: fx->version = FS_LAYOUT_VERSION + 1; reseal(img); break;
		case 2: fx->created_ns ^= 0x100; break;
		case 3: n = len - 4096; break;
		case 4: n = len + 0; fx->seg_size = len + 4096; reseal(img); break;
		case 5: n = sizeof(struct fs_hdr) - 1; break;
		case 6: fx->seg_size = len - 4096; reseal(img); break;
		case 7: fx->region[FS_R_ORDER].off += 4096; reseal(img); break;
		case 8: fx->region[FS_R_SKU].count += 1; reseal(img); break;
		}
		int rc = flash_seg_restore(dst, NULL, img, n);
		if (rc != cases[i].rc)
			fail_msg("%s: %s, want %s", cases[i].what, flash_rcname(rc), flash_rcname(cases[i].rc));
		assert_false(segment_exists(dst));
	}
	/* the good image: same state, process table free, name taken after */
	struct state *a = malloc(sizeof *a), *b = malloc(sizeof *b);
	state_take(h, a);
	struct flash_seg_opts mo = { .mode = 0600, .gid = -1 };
	assert_int_equal(flash_seg_restore(dst, &mo, good, len), FLASH_OK);
	assert_int_equal(flash_seg_restore(dst, &mo, good, len), FLASH_EEXIST);
	flash_t *r;
	assert_int_equal(flash_open(dst, FLASH_RDONLY, &r), FLASH_OK);
	struct flash_stats fs;
	assert_int_equal(flash_stats_get(r, &fs), FLASH_OK);
	assert_int_equal(fs.procs, 0);
	state_take(r, b);
	assert_memory_equal(a, b, sizeof *a);
	flash_close(r);
	/* and it takes orders */
	assert_int_equal(flash_open(dst, 0, &r), FLASH_OK);
	struct flash_order_res res;
	assert_int_equal(t_order(r, 1, 1, 99999, 1, 0, 0, &res), FLASH_OK);
	assert_true(res.order_no > a->orders_max);
	flash_close(r);
	free(a);
	free(b);
	free(img);
	free(good);
}

/* ---- recover equivalence ---- */

/* (a) No snapshot: the whole WAL is replayed into a fresh empty segment. */
static void test_recover_without_snapshot_replays_the_whole_wal(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t recs = batch(h, 1, 1, 40);
	struct serve_stats ss = serve_once(name, dir, 0, 0);
	assert_int_equal(ss.records, recs);
	struct state *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	state_take(h, before);
	t_teardown(NULL);
	assert_int_equal(newest_snap(dir, NULL), 0);

	h = t_seg_new(NULL, name, sizeof name);
	ss = serve_recover(name, dir, 0);
	assert_int_equal(ss.recover_snap_lsn, 0);
	assert_int_equal(ss.applied, recs);
	/* the rebuild took the name when complete: the handle on the empty
	 * placeholder still sees the placeholder; attach again */
	state_take(h, after);
	assert_int_equal(after->nsku, 0);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);
	free(before);
	free(after);
	wt_rmdir(dir);
}

/* (b) A snapshot mid-stream plus the WAL after it: the segment need not
 * exist; only the frames after the snapshot are replayed. */
static void test_recover_from_snapshot_replays_only_the_wal_after_it(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t r1 = batch(h, 1, 1, 30);
	struct serve_stats ss = serve_once(name, dir, 1, 0);
	assert_int_equal(ss.snapshots, 1);
	assert_int_equal(ss.snap_lsn, r1);
	assert_int_equal(newest_snap(dir, NULL), r1);
	uint64_t r2 = batch(h, 0, 1000, 25);
	ss = serve_once(name, dir, 0, 0);
	assert_int_equal(ss.records, r2);
	struct state *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	state_take(h, before);
	t_teardown(NULL);      /* the segment is gone */
	assert_false(segment_exists(name));

	ss = serve_recover(name, dir, 0);
	assert_int_equal(ss.recover_snap_lsn, r1);
	assert_int_equal(ss.replayed, r2);        /* frames read: only those after the snapshot */
	assert_int_equal(ss.applied, r2);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);

	/* a second --recover on the rebuilt segment (it carries the WAL's
	 * identity) finds the work done: nothing applied twice, nothing changes */
	ss = serve_recover(name, dir, 0);
	assert_int_equal(ss.applied, 0);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);

	/* an existing but empty segment is replaced */
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);
	struct flash_seg_opts so;
	t_opts_small(&so);
	assert_int_equal(flash_seg_create(name, &so), FLASH_OK);
	ss = serve_recover(name, dir, 0);
	assert_int_equal(ss.recover_snap_lsn, r1);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);
	free(before);
	free(after);
	wt_rmdir(dir);
}

/*
 * (c) Several small WAL files; three daemons each stop with a snapshot;
 * WAL files behind the older of the two newest snapshots are removed; the
 * WAL no longer starts at LSN 1; recovery replays only what follows the
 * newest snapshot; the reconciler's fold (from the snapshot) agrees.
 */
static void test_recover_after_wal_files_were_removed(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t total = 0, removed = 0;
	for (int round = 0; round < 3; round++) {
		total += batch(h, round == 0, 1 + 1000 * (uint64_t)round, 60);
		struct serve_stats ss = serve_once(name, dir, 1, 4096);
		assert_int_equal(ss.snap_lsn, total);
		removed += ss.wal_removed;
	}
	size_t nsnap;
	uint64_t l3 = newest_snap(dir, &nsnap);
	assert_int_equal(l3, total);
	assert_int_equal(nsnap, 2);               /* the newest two are kept */
	assert_true(removed > 0);
	uint64_t first, last;
	wal_first_last(dir, &first, &last);
	assert_true(first > 1);
	assert_int_equal(last, total);
	/* nothing after the older kept snapshot is gone */
	uint64_t *l;
	size_t n;
	assert_int_equal(snap_list(dir, &l, &n), FLASH_OK);
	assert_true(first <= l[0] + 1);
	free(l);

	uint64_t r4 = batch(h, 0, 9000, 20);
	serve_once(name, dir, 0, 4096);
	struct state *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	state_take(h, before);

	/* the reconciler: fold from the snapshot + the WAL after it == segment */
	fold_t *f;
	assert_int_equal(fold_new(&f), FLASH_OK);
	assert_int_equal(fold_wal(f, dir), FLASH_OK);
	struct reconcile_report rep;
	memset(&rep, 0, sizeof rep);
	assert_int_equal(reconcile_compare(h, NULL, f, 0, &rep), FLASH_OK);
	if (rep.found)
		reconcile_print(&rep, stderr, 0);
	assert_int_equal(rep.found, 0);
	assert_int_equal(rep.skus, 2);
	reconcile_report_free(&rep);
	fold_free(f);

	t_teardown(NULL);
	struct serve_stats ss = serve_recover(name, dir, 0);
	assert_int_equal(ss.recover_snap_lsn, l3);
	assert_int_equal(ss.replayed, r4);
	assert_int_equal(ss.applied, r4);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);
	free(before);
	free(after);
	wt_rmdir(dir);
}

/* ---- corrupt snapshots ---- */

static void test_corrupt_snapshot_falls_back_to_the_previous_one(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t r1 = batch(h, 1, 1, 20);
	serve_once(name, dir, 1, 0);
	uint64_t r2 = batch(h, 0, 500, 20);
	serve_once(name, dir, 1, 0);
	uint64_t r3 = batch(h, 0, 900, 10);
	serve_once(name, dir, 0, 0);
	assert_int_equal(newest_snap(dir, NULL), r1 + r2);
	struct state *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	state_take(h, before);
	t_teardown(NULL);

	snap_corrupt(dir, r1 + r2);
	char path[4200];
	struct snap_file sf;
	snap_path(path, sizeof path, dir, r1 + r2);
	assert_int_equal(snap_file_open(path, &sf), FLASH_ESNAP_CORRUPT);

	struct serve_stats ss = serve_recover(name, dir, 0);
	assert_int_equal(ss.recover_snap_lsn, r1);
	assert_int_equal(ss.applied, r2 + r3);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);

	/* both corrupt: a clear error, and no segment is made */
	snap_corrupt(dir, r1);
	ss = serve_recover(name, dir, -1);
	assert_int_equal(ss.rc, FLASH_ECORRUPT);
	assert_false(segment_exists(name));
	free(before);
	free(after);
	wt_rmdir(dir);
}

/* A WAL that does not continue the snapshot (records missing between
 * them) is refused before anything is made. */
static void test_recover_refuses_a_gap_between_snapshot_and_wal(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	batch(h, 1, 1, 60);
	serve_once(name, dir, 1, 4096);
	uint64_t l1 = newest_snap(dir, NULL);
	batch(h, 0, 500, 60);
	serve_once(name, dir, 0, 4096);
	t_teardown(NULL);
	/* remove WAL files past the snapshot by hand: a gap */
	assert_int_equal(wal_remove_before(dir, l1 + 40, NULL), FLASH_OK);
	uint64_t first, last;
	wal_first_last(dir, &first, &last);
	assert_true(first > l1 + 1);
	struct serve_stats ss = serve_recover(name, dir, -1);
	assert_int_equal(ss.rc, FLASH_EWAL_GAP);   /* one code: the WAL's own */
	assert_false(segment_exists(name));
	wt_rmdir(dir);
}

/* The WAL after the snapshot is corrupt (not a torn tail): the segment
 * restored from the snapshot is removed again, so nothing half-made stays
 * and --recover can run once the WAL is repaired. */
static void test_recover_that_fails_after_the_restore_leaves_no_segment(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	batch(h, 1, 1, 40);
	serve_once(name, dir, 1, 4096);
	uint64_t l1 = newest_snap(dir, NULL);
	batch(h, 0, 500, 90);
	serve_once(name, dir, 0, 4096);
	t_teardown(NULL);
	uint64_t first, last;
	wal_first_last(dir, &first, &last);
	assert_true(first <= l1 + 1);
	assert_true(last > first + 2 * 38);
	/* flip a payload byte of the last frame of the first file (38 frames
	 * of 104 bytes after its 64-byte header), whose LSN is > l1 */
	char *f = wt_file(dir, first);
	int fd = open(f, O_RDWR);
	assert_true(fd >= 0);
	off_t at = 64 + 37 * 104 + 40;
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 1;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
	free(f);
	assert_true(first + 37 > l1);
	struct serve_stats ss = serve_recover(name, dir, -1);
	assert_int_equal(ss.recover_snap_lsn, l1);
	assert_int_equal(ss.rc, FLASH_EWAL_NOTTAIL);
	assert_false(segment_exists(name));
	wt_rmdir(dir);
}

/* ---- the snapshot state machine directly: removal rule and faults ---- */

static uint64_t g_applied;
static int g_applied_known;

static int fake_applied(void *arg, uint64_t *lsn)
{
	(void)arg;
	*lsn = g_applied;
	return g_applied_known ? 0 : -1;
}

static char g_log[4096];

static void log_keep(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == PLOG_ERROR)
		snprintf(g_log, sizeof g_log, "%s", msg);
}

struct snapctx {
	wal_t  *w;
	snap_t *s;
};

/* the daemon's remover, with no bound on what consumers hold back */
static int remove_wal(void *arg, uint64_t cover, uint64_t floor, uint64_t *cover_out, uint32_t *removed)
{
	struct feed_retain_opts fo = { 0, 0 };
	return feed_retain_remove(arg, cover, floor, &fo, NULL, NULL, cover_out, removed);
}

static void snapctx_open(struct snapctx *c, const char *seg, const char *dir, int applier)
{
	struct wal_opts wo;
	wal_opts_default(&wo);
	wo.segment_bytes = 4096;
	assert_int_equal(wal_open(dir, &wo, &c->w), FLASH_OK);
	struct snap_opts so = {
		.segment = seg, .wal_dir = dir, .wal = c->w, .every_s = 3600, .wal_bytes = 1ull << 40,
		.applied_lsn = applier ? fake_applied : NULL, .log = log_keep,
		.wal_remove = remove_wal, .wal_remove_arg = (void *)dir,
	};
	assert_int_equal(snap_open(&so, &c->s), FLASH_OK);
}

static void snapctx_close(struct snapctx *c)
{
	snap_close(c->s);
	assert_int_equal(wal_close(c->w), FLASH_OK);
}

/* WAL files behind the snapshots stay while MySQL's applied LSN is unknown
 * or behind them, and go once it catches up. */
static void test_wal_files_wait_for_the_applier(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t total = batch(h, 1, 1, 80);
	serve_once(name, dir, 0, 4096);
	total += batch(h, 0, 5000, 80);
	serve_once(name, dir, 0, 4096);
	size_t files0 = count_files(dir, "wal-", ".log");
	assert_true(files0 >= 4);

	struct snapctx c;
	snapctx_open(&c, name, dir, 1);
	g_applied_known = 0;
	assert_int_equal(snap_step(c.s, 1), FLASH_OK);
	struct snap_stats ss;
	snap_stats_get(c.s, &ss);
	assert_int_equal(ss.snapshots, 1);
	assert_int_equal(ss.snap_lsn, total);
	assert_int_equal(count_files(dir, "wal-", ".log"), files0);   /* applier unknown */
	g_applied_known = 1;
	g_applied = 20;           /* inside the first file */
	assert_int_equal(snap_step(c.s, 0), FLASH_OK);
	assert_int_equal(count_files(dir, "wal-", ".log"), files0);
	uint64_t first, last;
	g_applied = total / 2;    /* MySQL halfway: files up to there go, not beyond */
	assert_int_equal(snap_step(c.s, 0), FLASH_OK);
	size_t files1 = count_files(dir, "wal-", ".log");
	assert_true(files1 < files0);
	assert_true(files1 > 1);
	wal_first_last(dir, &first, &last);
	assert_true(first > 1 && first <= total / 2 + 1);
	g_applied = total;        /* caught up: all but the file being written */
	assert_int_equal(snap_step(c.s, 0), FLASH_OK);
	assert_int_equal(count_files(dir, "wal-", ".log"), 1);
	snap_stats_get(c.s, &ss);
	assert_int_equal(ss.wal_removed, files0 - 1);
	assert_int_equal(ss.failures, 0);
	snapctx_close(&c);
	wal_first_last(dir, &first, &last);
	assert_int_equal(last, total);
	wt_rmdir(dir);
}

static ssize_t fault_pwrite(int fd, const void *b, size_t n, off_t off)
{
	(void)fd; (void)b; (void)n; (void)off;
	errno = ENOSPC;
	return -1;
}

static int fault_fdatasync(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

/* Only snapshot files: the WAL creates its files with a rename too. */
static int fault_rename(const char *a, const char *b)
{
	if (strstr(a, "/snap-") == NULL)
		return ((int (*)(const char *, const char *))pio_default("rename"))(a, b);
	errno = EIO;
	return -1;
}

static void snapshot_fault(int which, const char *step, const char *why)
{
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t r1 = batch(h, 1, 1, 40);
	serve_once(name, dir, 1, 4096);              /* snapshot A at r1 */
	uint64_t r2 = batch(h, 0, 700, 40);
	serve_once(name, dir, 0, 4096);
	size_t files0 = count_files(dir, "wal-", ".log");
	struct state *before = malloc(sizeof *before), *after = malloc(sizeof *after);
	state_take(h, before);

	struct snapctx c;
	snapctx_open(&c, name, dir, 0);
	g_log[0] = 0;
	if (which == 1)
		pio_override("pwrite", (pio_fn)fault_pwrite, NULL);
	else if (which == 2)
		pio_override("fdatasync", (pio_fn)fault_fdatasync, NULL);
	else
		pio_override("rename", (pio_fn)fault_rename, NULL);
	int rc = snap_step(c.s, 1);
	pio_reset();
	assert_int_equal(rc, FLASH_ESNAP_FAILED);
	struct snap_stats ss;
	snap_stats_get(c.s, &ss);
	assert_int_equal(ss.failures, 1);
	assert_int_equal(ss.last_rc, FLASH_ESYS);
	assert_int_equal(ss.snapshots, 0);
	char want[8192];
	char path[4200];
	snap_path(path, sizeof path, dir, r1 + r2);
	snprintf(want, sizeof want, "snapshot %s: %s failed: %s (tmp file removed)", path, step, why);
	assert_string_equal(ss.last_error, want);
	if (strstr(g_log, want) != g_log)
		fail_msg("log line: '%s', want it to start with '%s'", g_log, want);
	assert_non_null(strstr(g_log, "snapshots are off until the daemon restarts"));
	assert_int_equal(count_files(dir, "snap-", ".tmp"), 0);
	assert_int_equal(newest_snap(dir, NULL), r1);
	assert_int_equal(count_files(dir, "wal-", ".log"), files0);
	/* sticky: no retry, even with the disk healthy again */
	assert_int_equal(snap_step(c.s, 1), FLASH_ESNAP_FAILED);
	assert_int_equal(newest_snap(dir, NULL), r1);
	snap_stats_get(c.s, &ss);
	assert_int_equal(ss.failures, 1);
	snapctx_close(&c);
	assert_int_equal(count_files(dir, "wal-", ".log"), files0);

	/* a restart recovers from the previous snapshot and the WAL */
	t_teardown(NULL);
	struct serve_stats sv = serve_recover(name, dir, 0);
	assert_int_equal(sv.recover_snap_lsn, r1);
	assert_int_equal(sv.applied, r2);
	state_of(name, after);
	assert_memory_equal(before, after, sizeof *before);
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);
	free(before);
	free(after);
	wt_rmdir(dir);
}

static void test_snapshot_write_enospc_is_sticky_and_removes_nothing(void **st)
{
	(void)st;
	snapshot_fault(1, "write", strerror(ENOSPC));
}

static void test_snapshot_fdatasync_eio_is_sticky_and_removes_nothing(void **st)
{
	(void)st;
	snapshot_fault(2, "fdatasync", strerror(EIO));
}

static void test_snapshot_rename_eio_is_sticky_and_removes_nothing(void **st)
{
	(void)st;
	snapshot_fault(3, "rename", strerror(EIO));
}

/* The daemon's own counters: a failing snapshot does not stop serve. */
static void test_serve_keeps_going_when_the_snapshot_fails(void **st)
{
	(void)st;
	char name[64];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t r1 = batch(h, 1, 1, 10);
	struct serve_opts o;
	struct serve_stats ss;
	base_opts(&o, name, dir);
	o.snapshots.on = 1;
	o.log_level = -1;
	pio_override("rename", (pio_fn)fault_rename, NULL);
	int rc = serve_run(&o, &ss);
	pio_reset();
	assert_int_equal(rc, 0);
	assert_int_equal(ss.records, r1);
	assert_int_equal(ss.snap_failures, 1);
	assert_int_equal(ss.snapshots, 0);
	assert_int_equal(count_files(dir, "snap-", ".fss"), 0);
	assert_int_equal(count_files(dir, "snap-", ".tmp"), 0);
	/* the shadow segment is gone with the daemon */
	char shadow[256];
	snprintf(shadow, sizeof shadow, "%s.shadow.%ld", name, (long)getpid());
	assert_false(segment_exists(shadow));
	wt_rmdir(dir);
}

/* A shadow an earlier daemon left behind (killed before it dropped the
 * name) is removed by the next one; its own never has a name for long. */
static void test_stale_shadow_of_a_killed_daemon_is_removed(void **st)
{
	(void)st;
	char name[64], stale[128];
	char *dir = wt_mkdtemp();
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	batch(h, 1, 1, 5);
	snprintf(stale, sizeof stale, "%s.shadow.%d", name, 999999);
	struct flash_seg_opts so;
	t_opts_small(&so);
	assert_int_equal(flash_seg_create(stale, &so), FLASH_OK);
	struct serve_stats ss = serve_once(name, dir, 1, 0);
	assert_int_equal(ss.snapshots, 1);
	if (segment_exists(stale)) {
		flash_seg_destroy(stale);
		fail_msg("stale shadow %s not removed", stale);
	}
	wt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_restore_refuses_bad_images_with_the_attach_codes, t_teardown),
		cmocka_unit_test_teardown(test_recover_without_snapshot_replays_the_whole_wal, t_teardown),
		cmocka_unit_test_teardown(test_recover_from_snapshot_replays_only_the_wal_after_it, t_teardown),
		cmocka_unit_test_teardown(test_recover_after_wal_files_were_removed, t_teardown),
		cmocka_unit_test_teardown(test_corrupt_snapshot_falls_back_to_the_previous_one, t_teardown),
		cmocka_unit_test_teardown(test_recover_refuses_a_gap_between_snapshot_and_wal, t_teardown),
		cmocka_unit_test_teardown(test_recover_that_fails_after_the_restore_leaves_no_segment, t_teardown),
		cmocka_unit_test_teardown(test_wal_files_wait_for_the_applier, t_teardown),
		cmocka_unit_test_teardown(test_snapshot_write_enospc_is_sticky_and_removes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_snapshot_fdatasync_eio_is_sticky_and_removes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_snapshot_rename_eio_is_sticky_and_removes_nothing, t_teardown),
		cmocka_unit_test_teardown(test_serve_keeps_going_when_the_snapshot_fails, t_teardown),
		cmocka_unit_test_teardown(test_stale_shadow_of_a_killed_daemon_is_removed, t_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
