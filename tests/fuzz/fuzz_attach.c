/*
 * fuzz_attach.c -- fuzz target for the segment attach validator
 * (engine/segment.c: flash_open) and for what a handle does on a segment
 * whose contents are corrupt: the readers (stats, catalog, orders) and, on
 * a writable handle, recovery, the ring drain and the write calls.
 *
 * Each input edits a reference image -- a small segment made by the real
 * creator and used by the real API (two activities, three skus, orders, a
 * cancel, a restock, tokens, a lock, records left in the ring) -- writes the
 * result into a shm object of its own (/dev/shm/fuzz-attach-<pid>) with the
 * mode and owner the input asks for, and calls flash_open() on it.
 *
 *   byte 0  bits 0-1  the edit: 0 OVERWRITE the image from offset 0 with the
 *                     body; 1 XOR the body onto it (bit flips); 2 SCRIBBLE:
 *                     16-byte items {u8 region, u8 width, u16 element,
 *                     u32 byte, u64 value} store a value inside one element
 *                     of one region (region FS_R_COUNT: the header); 3 RAW:
 *                     the body is the whole object
 *           bit 2     RESEAL: recompute the header checksum after the edit
 *           bit 3     RDONLY attach (else read-write: slot claim + recovery)
 *           bits 4-5  object size: 0 the image's; 1 the edited header's
 *                     seg_size (up to 64 MiB); 2 a page less; 3 one byte
 *                     less than a header
 *           bits 6-7  object mode: 0600, 0660, 0640, 0666
 *   byte 1  bit 0     owned by another user (when run as root)
 *           bit 1     OPS: on a writable handle, also recover, drain, order,
 *                     cancel, restock, issue and redeem a token, take a lock
 *
 * Promises checked:
 *   - the result is exactly the one the documented check order gives
 *     (owner, mode, size, magic, version, checksum, header size, size equals
 *     the header's, mode equals the header's), computed here independently;
 *   - past those, FLASH_ELAYOUT exactly when the region table is not the one
 *     flash_seg_create() lays out for the header's options (asked of the
 *     real creator, on a second object);
 *   - an attached handle never reads or writes outside its mapping: the
 *     object is mapped between two PROT_NONE guard pages (mmap is wrapped
 *     here for that one object), so a stray access faults at once; every
 *     call returns a documented code; stats report the header's capacities;
 *     iteration ends with FLASH_ENOT_FOUND exactly where the fill levels say.
 * A segment in FLASH_DURABILITY_SYNC waits for a consumer no one runs: the
 * OPS skip flash_order(), flash_cancel() and flash_restock() there.  The robust admin mutex (struct fs_hdr.admin)
 * is restored after each edit: with a corrupt lock word (an owner that never
 * was on a robust list), pthread_mutex_lock() blocks forever, so every
 * catalog add, lock-name insert and recovery of a dead slot (hence a
 * writable attach) would hang; that is a known limitation, not fuzzed here.
 *
 * Built two ways (tests/fuzz/fuzz_tests.cmake): with -DFLASH_LIBFUZZER a libFuzzer
 * target; otherwise the replay driver of tests/fuzz/fuzz_main.h.  The replay
 * build also writes the seed corpus:
 *   fuzz_attach --make-corpus tests/fuzz/corpus/attach
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_EDIT_OVERWRITE 0u
#define FZ_EDIT_XOR       1u
#define FZ_EDIT_SCRIBBLE  2u
#define FZ_EDIT_RAW       3u
#define FZ_RESEAL         0x04u
#define FZ_RDONLY         0x08u
#define FZ_SIZE_SHIFT     4
#define FZ_MODE_SHIFT     6
#define FZ_FOREIGN        0x01u
#define FZ_OPS            0x02u

#define FZ_SIZE_MAX (64ull << 20)
#define FZ_ITER_MAX 1024u
#define FZ_PAGE 4096ul
#define FZ_REGION 1        /* "the region table decides" */

static void fz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_attach: broken promise: %s\n", what);
		abort();
	}
}

static void fz_check_rc(int ok, const char *what, int rc)
{
	if (!ok) {
		fprintf(stderr, "fuzz_attach: broken promise: %s (got %s)\n", what, flash_rcname(rc));
		abort();
	}
}

/* FNV-1a, as the layout comment in fs.h defines the header checksum. */
static uint64_t fz_fnv(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ------------------------------------------------------------------------
 * Guard pages around the object's mapping.
 *
 * flash_open() maps the whole object.  Calls to mmap() for the object under
 * test (matched by device and inode) get a PROT_NONE page on each side;
 * every other call goes straight to the system call.
 * ------------------------------------------------------------------------ */

static dev_t fz_dev;
static ino_t fz_ino;
static int fz_have_obj;
#define FZ_GUARDS 8
static struct { char *p; size_t len; } fz_guard[FZ_GUARDS];

static void *fz_sys_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct stat st;
	size_t span;
	char *r, *m;
	int i;

	if (!fz_have_obj || addr != NULL || fd < 0 || off != 0 || fstat(fd, &st) != 0 ||
	    st.st_dev != fz_dev || st.st_ino != fz_ino)
		return fz_sys_mmap(addr, len, prot, flags, fd, off);
	for (i = 0; i < FZ_GUARDS && fz_guard[i].p != NULL; i++)
		;
	if (i == FZ_GUARDS)
		return fz_sys_mmap(addr, len, prot, flags, fd, off);
	span = (len + FZ_PAGE - 1) & ~(FZ_PAGE - 1);
	r = fz_sys_mmap(NULL, span + 2 * FZ_PAGE, PROT_NONE,
	                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return MAP_FAILED;
	m = fz_sys_mmap(r + FZ_PAGE, len, prot, flags | MAP_FIXED, fd, off);
	if (m == MAP_FAILED) {
		int e = errno;

		syscall(SYS_munmap, r, span + 2 * FZ_PAGE);
		errno = e;
		return MAP_FAILED;
	}
	fz_guard[i].p = m;
	fz_guard[i].len = span;
	return m;
}

int munmap(void *addr, size_t len)
{
	for (int i = 0; i < FZ_GUARDS; i++) {
		if (fz_guard[i].p != NULL && fz_guard[i].p == addr) {
			char *r = fz_guard[i].p - FZ_PAGE;
			size_t span = fz_guard[i].len;

			fz_guard[i].p = NULL;
			return (int)syscall(SYS_munmap, r, span + 2 * FZ_PAGE);
		}
	}
	return (int)syscall(SYS_munmap, addr, len);
}

/* ------------------------------------------------------------------------
 * The reference image.
 * ------------------------------------------------------------------------ */

static uint8_t *fz_ref;
static size_t fz_ref_size;
static char fz_name[64], fz_oracle[64];

static void fz_ref_opts(struct flash_seg_opts *o)
{
	flash_seg_opts_default(o);
	o->max_activities = 4;
	o->max_skus = 8;
	o->max_shards = 16;
	o->max_users = 16;
	o->max_tokens = 8;
	o->max_orders = 32;
	o->max_requests = 16;
	o->max_locks = 4;
	o->max_procs = 3;
	o->ring_records = 16;
}

static int64_t fz_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint8_t *fz_read_object(const char *name, size_t *size)
{
	struct stat st;
	uint8_t *p;
	int fd = shm_open(name, O_RDONLY, 0);

	fz_check(fd >= 0 && fstat(fd, &st) == 0, "read back an object");
	p = malloc((size_t)st.st_size);
	fz_check(p != NULL && pread(fd, p, (size_t)st.st_size, 0) == st.st_size, "read an object");
	close(fd);
	*size = (size_t)st.st_size;
	return p;
}

/* flash_open() results seen, by -rc; printed at exit when FUZZ_STATS is set. */
static unsigned long fz_outcomes[64], fz_ops_runs;

static void fz_unlink_all(void)
{
	shm_unlink(fz_name);
	shm_unlink(fz_oracle);
}

static void fz_cleanup(void)
{
	fz_unlink_all();
	if (getenv("FUZZ_STATS") != NULL) {
		for (int i = 0; i < 64; i++)
			if (fz_outcomes[i])
				fprintf(stderr, "fuzz_attach: flash_open %s: %lu\n", flash_rcname(-i), fz_outcomes[i]);
		fprintf(stderr, "fuzz_attach: write calls run on %lu attached segments\n", fz_ops_runs);
	}
}

static void fz_build_ref(void)
{
	struct flash_seg_opts o;
	struct flash_activity a1, a2;
	struct flash_order_res res;
	struct fs_hdr_fixed fx;
	char ref[64];
	flash_t *h;
	uint64_t tok, fence;
	int64_t now = fz_now_ns();

	snprintf(fz_name, sizeof(fz_name), "/fuzz-attach-%d", (int)getpid());
	snprintf(fz_oracle, sizeof(fz_oracle), "/fuzz-attach-%d-layout", (int)getpid());
	snprintf(ref, sizeof(ref), "/fuzz-attach-%d-ref", (int)getpid());
	fz_unlink_all();
	shm_unlink(ref);
	atexit(fz_cleanup);
	fz_ref_opts(&o);
	fz_check(flash_seg_create(ref, &o) == FLASH_OK, "create the reference");
	fz_check(flash_open(ref, 0, &h) == FLASH_OK, "open the reference");
	memset(&a1, 0, sizeof(a1));
	a1.id = 1;
	a1.limit_per_user = 2;
	a1.max_qty = 3;
	a1.scope = FLASH_SCOPE_ACTIVITY;
	a1.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA;
	a1.start_ns = now - 3600ll * 1000000000;
	a1.end_ns = now + 3650ll * 86400 * 1000000000;
	a2 = a1;
	a2.id = 2;
	a2.limit_per_user = 1;
	a2.max_qty = 1;
	a2.scope = FLASH_SCOPE_SKU;
	a2.flags = FLASH_ACT_TOKEN_REQUIRED;
	fz_check(flash_activity_add(h, &a1) == FLASH_OK, "reference activity 1");
	fz_check(flash_activity_add(h, &a2) == FLASH_OK, "reference activity 2");
	fz_check(flash_sku_add(h, 1, 1, 100, 1) == FLASH_OK, "reference sku 1/1");
	fz_check(flash_sku_add(h, 1, 2, 50, 4) == FLASH_OK, "reference sku 1/2");
	fz_check(flash_sku_add(h, 2, 1, 10, 2) == FLASH_OK, "reference sku 2/1");
	{
		struct flash_order_req r1 = { .activity_id = 1, .sku_id = 1, .user_id = 1, .qty = 2 };
		struct flash_order_req r2 = { .activity_id = 1, .sku_id = 2, .user_id = 2, .qty = 1,
		                              .request_id = 55 };
		struct flash_order_req r3 = { .activity_id = 1, .sku_id = 2, .user_id = 3, .qty = 3 };
		struct flash_order_req r4 = { .activity_id = 2, .sku_id = 1, .user_id = 4, .qty = 1 };

		fz_check(flash_order(h, &r1, &res) == FLASH_OK, "reference order 1");
		fz_check(flash_order(h, &r2, &res) == FLASH_OK, "reference order 2");
		fz_check(flash_order(h, &r3, &res) == FLASH_OK, "reference order 3");
		fz_check(flash_token_issue(h, 2, 1, 4, 600000, &tok) == FLASH_OK, "reference token");
		r4.token = tok;
		fz_check(flash_order(h, &r4, &res) == FLASH_OK, "reference order 4");
	}
	fz_check(flash_cancel(h, 1, NULL) == FLASH_OK, "reference cancel");
	fz_check(flash_restock(h, 1, 1, 5) == FLASH_OK, "reference restock");
	fz_check(flash_token_issue(h, 2, 1, 5, 600000, &tok) == FLASH_OK, "reference live token");
	fz_check(flash_lock_acquire(h, "fz", 9, 600000, &fence) == FLASH_OK, "reference lock");
	fz_check(flash_close(h) == FLASH_OK, "close the reference");
	fz_ref = fz_read_object(ref, &fz_ref_size);
	shm_unlink(ref);

	/* the checksum read here independently is the engine's */
	memcpy(&fx, fz_ref, sizeof(fx));
	fz_check(fx.checksum == fz_fnv(&fx, offsetof(struct fs_hdr_fixed, checksum)),
	         "header checksum is FNV-1a of the fixed header");
	/* fixed values where the creator put time and randomness: runs repeat */
	fx.token_key[0] = 0x0123456789abcdefull;
	fx.token_key[1] = 0xfedcba9876543210ull;
	fx.created_ns = 1700000000000000000ll;
	fx.checksum = fz_fnv(&fx, offsetof(struct fs_hdr_fixed, checksum));
	memcpy(fz_ref, &fx, sizeof(fx));
}

/* ------------------------------------------------------------------------
 * The oracle.
 * ------------------------------------------------------------------------ */

/* The result flash_open() must give before it looks at the region table. */
static int fz_expect(const uint8_t *head, uint64_t objsize, unsigned mode, int foreign)
{
	struct fs_hdr_fixed fx;

	if (foreign)
		return FLASH_EOWNER;
	if (mode != 0600 && mode != 0660)
		return FLASH_EMODE;
	if (objsize < sizeof(struct fs_hdr))
		return FLASH_ESIZE;
	memcpy(&fx, head, sizeof(fx));
	if (fx.magic != FS_MAGIC)
		return FLASH_EMAGIC;
	if (fx.version != FS_LAYOUT_VERSION)
		return FLASH_EVERSION;
	if (fx.checksum != fz_fnv(&fx, offsetof(struct fs_hdr_fixed, checksum)))
		return FLASH_ECHECKSUM;
	if (fx.hdr_size != sizeof(struct fs_hdr))
		return FLASH_ELAYOUT;
	if (fx.seg_size != objsize)
		return FLASH_ESIZE;
	if (fx.mode != mode)
		return FLASH_EMODE;
	return FZ_REGION;
}

static uint64_t fz_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t fz_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/*
 * Is @p fx's region table the one the creator lays out for its options?
 * The creator is asked on a second object.  A table whose regions alone
 * need more than seg_size cannot match: that is answered without making a
 * huge object.
 */
static int fz_layout_ok(const struct fs_hdr_fixed *fx)
{
	struct flash_seg_opts o = fx->opts;
	struct fs_hdr_fixed made;
	uint64_t lb = 0;
	uint8_t *img;
	size_t n;
	int rc;

	lb = fz_add(lb, fz_mul(fz_mul(o.max_procs, o.ring_records), sizeof(struct fs_ringrec)));
	lb = fz_add(lb, fz_mul(o.max_procs, sizeof(struct fs_journal) + sizeof(struct fs_proc)));
	lb = fz_add(lb, fz_mul(o.max_orders, sizeof(struct fs_order)));
	lb = fz_add(lb, fz_mul(o.max_shards, sizeof(struct fs_shard)));
	lb = fz_add(lb, fz_mul(o.max_skus, sizeof(struct fs_sku)));
	lb = fz_add(lb, fz_mul(o.max_activities, sizeof(struct fs_act)));
	lb = fz_add(lb, fz_mul(2ull * o.max_users, sizeof(struct fs_kent)));
	lb = fz_add(lb, fz_mul(2ull * o.max_requests, sizeof(struct fs_kent)));
	lb = fz_add(lb, fz_mul(2ull * o.max_tokens, sizeof(struct fs_token)));
	lb = fz_add(lb, fz_mul(2ull * o.max_locks, sizeof(struct fs_lock)));
	if (lb > fx->seg_size)
		return 0;
	if (o.gid >= 0 && o.gid <= (int64_t)UINT32_MAX)
		o.gid = -1;            /* the group does not move a region */
	/* a windowed table (flash_seg_reclaim_set) is laid out with its banks */
	if (fx->gen_banks != 1 && (fx->gen_banks != FS_GEN_BANKS || fx->req_window_s == 0 ||
	                           fx->user_gen_s == 0))
		return 0;
	shm_unlink(fz_oracle);
	rc = flash_seg_create(fz_oracle, &o);
	if (rc == FLASH_EINVAL)
		return 0;
	fz_check_rc(rc == FLASH_OK, "the creator makes a segment of valid options", rc);
	if (fx->gen_banks != 1) {
		struct flash_reclaim_opts ro = { .req_window_s = fx->req_window_s, .user_gen_s = fx->user_gen_s };
		flash_t *w;

		if (flash_open(fz_oracle, 0, &w) != FLASH_OK)
			return 0;
		rc = flash_seg_reclaim_set(w, &ro);
		flash_close(w);
		if (rc != FLASH_OK) {
			shm_unlink(fz_oracle);
			return 0;
		}
	}
	img = fz_read_object(fz_oracle, &n);
	shm_unlink(fz_oracle);
	memcpy(&made, img, sizeof(made));
	free(img);
	return made.seg_size == fx->seg_size &&
	       memcmp(made.region, fx->region, sizeof(made.region)) == 0;
}

/* ------------------------------------------------------------------------
 * What a handle does on the attached segment.
 * ------------------------------------------------------------------------ */

static void fz_reads(flash_t *h, const struct fs_hdr_fixed *fx)
{
	const struct flash_seg_opts *o = &fx->opts;
	struct flash_stats st;
	struct flash_activity a;
	struct flash_sku_info s;
	struct flash_order_info oi;
	uint32_t lim, i;
	uint64_t omax, no;
	int rc;

	rc = flash_stats_get(h, &st);
	fz_check_rc(rc == FLASH_OK, "stats of an attached segment", rc);
	fz_check(st.activities_cap == o->max_activities && st.skus_cap == o->max_skus &&
	         st.shards_cap == o->max_shards && st.procs_cap == o->max_procs &&
	         st.orders_cap == o->max_orders && st.segment_bytes == fx->seg_size &&
	         st.durability == o->durability, "stats report the header's capacities");
	fz_check(st.orders_used <= st.orders_cap, "orders used within capacity");

	lim = st.activities < o->max_activities ? st.activities : o->max_activities;
	for (i = 0; i < lim && i < FZ_ITER_MAX; i++) {
		rc = flash_activity_at(h, i, &a);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_EARCHIVED, "activity inside the fill level", rc);
	}
	if (lim < FZ_ITER_MAX)
		fz_check(flash_activity_at(h, lim, &a) == FLASH_ENOT_FOUND, "activities end at the fill level");

	lim = st.skus < o->max_skus ? st.skus : o->max_skus;
	for (i = 0; i < lim && i < FZ_ITER_MAX; i++) {
		rc = flash_sku_at(h, i, &s);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_ECORRUPT || rc == FLASH_EARCHIVED,
		            "sku inside the fill level", rc);
		if (rc != FLASH_OK)
			continue;
		fz_check(s.shards >= 1 && s.shards <= FLASH_SHARDS_MAX, "a readable sku has 1..16 shards");
		rc = flash_sku_get(h, s.activity_id, s.sku_id, &s);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_ENOT_FOUND || rc == FLASH_ECORRUPT ||
		            rc == FLASH_EINVAL, "sku lookup", rc);
	}
	if (lim < FZ_ITER_MAX)
		fz_check(flash_sku_at(h, lim, &s) == FLASH_ENOT_FOUND, "skus end at the fill level");
	for (uint32_t act = 0; act <= 3; act++) {
		rc = flash_sku_get(h, act, 1, &s);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_ENOT_FOUND || rc == FLASH_ECORRUPT ||
		            rc == FLASH_EINVAL, "sku lookup by id", rc);
	}

	/* numbers grow past the table once slots are reused (order.c): a
	 * scribbled allocator or slot may name any; each answer is one of the
	 * documented ones -- an order, archived, or never issued (another box) */
	omax = flash_orders_max(h);
	for (no = 1; no <= omax && no <= FZ_ITER_MAX; no++) {
		rc = flash_order_get(h, no, &oi);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_EARCHIVED || rc == FLASH_ENOT_FOUND,
		            "order inside the range", rc);
		if (rc == FLASH_OK)
			fz_check(oi.state <= FLASH_ORDER_EXPIRED && oi.order_no == no, "order state known");
	}
	/* past the last one nothing; a scribbled counter at the top of the
	 * number space (UINT64_MAX) leaves no number past it to ask about */
	if (omax < UINT64_MAX)
		fz_check(flash_order_get(h, omax + 1, &oi) == FLASH_ENOT_FOUND, "orders end at orders_max");
	fz_check(flash_order_get(h, 0, &oi) == FLASH_EINVAL, "order 0 is invalid");
}

static int fz_drained(void *arg, const struct flash_record *rec, uint64_t seq)
{
	flash_t *h = arg;
	int rc = flash_durable_advance(h, rec->slot, seq);

	fz_check_rc(rc == FLASH_OK || rc == FLASH_EINVAL, "durable_advance", rc);
	return 0;
}

static void fz_ops(flash_t *h, const struct fs_hdr_fixed *fx)
{
	struct flash_order_req r = { .activity_id = 1, .sku_id = 2, .user_id = 1000, .qty = 1 };
	struct flash_order_res res;
	struct flash_activity a;
	uint32_t n, units;
	uint64_t tok, fence;
	int rc;

	rc = flash_recover(h, &n);
	if (rc == FLASH_EDESTROYED) {
		/* the header's "destroyed" word scribbled nonzero: the segment
		 * reads as destroyed, and every call that writes must say so */
		memset(&a, 0, sizeof(a));
		a.id = 3;
		a.limit_per_user = 1;
		a.max_qty = 1;
		a.end_ns = INT64_MAX;
		rc = flash_order(h, &r, &res);
		fz_check_rc(rc == FLASH_EDESTROYED, "order of a destroyed segment", rc);
		rc = flash_restock(h, 1, 2, 3);
		fz_check_rc(rc == FLASH_EDESTROYED, "restock of a destroyed segment", rc);
		rc = flash_activity_add(h, &a);
		fz_check_rc(rc == FLASH_EDESTROYED, "activity add of a destroyed segment", rc);
		return;
	}
	fz_check_rc(rc == FLASH_OK || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "recover", rc);
	rc = flash_ring_drain(h, fz_drained, h, 64, &n);
	fz_check_rc(rc == FLASH_OK || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "drain", rc);
	if (fx->opts.durability == FLASH_DURABILITY_ASYNC) {
		rc = flash_order(h, &r, &res);
		switch (rc) {
		case FLASH_OK: case FLASH_EINVAL: case FLASH_ENOT_FOUND: case FLASH_EBAD_TOKEN:
		case FLASH_ENOT_STARTED: case FLASH_EENDED: case FLASH_ELIMIT: case FLASH_ESOLD_OUT:
		case FLASH_EDUPLICATE: case FLASH_EFULL: case FLASH_EBUSY: case FLASH_EDURABILITY:
		case FLASH_ECORRUPT: case FLASH_EDESTROYED:
			break;
		default:
			fz_check_rc(0, "order returns a documented code", rc);
		}
		if (rc == FLASH_OK) {
			rc = flash_cancel(h, res.order_no, &units);
			fz_check_rc(rc == FLASH_OK || rc == FLASH_EBUSY || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED,
			            "cancel of the order just placed", rc);
		}
		/* order 2's state word may read as any state, a reservation past
		 * its pay-by time among them: expired first, then FLASH_EEXPIRED */
		rc = flash_cancel(h, 2, &units);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_ECANCELLED || rc == FLASH_EEXPIRED || rc == FLASH_ENOT_FOUND ||
		            rc == FLASH_EARCHIVED || rc == FLASH_EBUSY || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "cancel", rc);
		rc = flash_restock(h, 1, 2, 3);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_ENOT_FOUND || rc == FLASH_EBUSY ||
		            rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "restock", rc);
	}
	rc = flash_token_issue(h, 2, 1, 1001, 60000, &tok);
	fz_check_rc(rc == FLASH_OK || rc == FLASH_ENOT_FOUND || rc == FLASH_EFULL ||
	            rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "token issue", rc);
	if (rc == FLASH_OK) {
		rc = flash_token_redeem(h, 2, 1, 1001, tok);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_EBAD_TOKEN || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED,
		            "token redeem", rc);
	}
	rc = flash_lock_acquire(h, "fz", 10, 60000, &fence);
	fz_check_rc(rc == FLASH_OK || rc == FLASH_ELOCKED || rc == FLASH_EFULL || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED,
	            "lock acquire", rc);
	if (rc == FLASH_OK) {
		rc = flash_lock_release(h, "fz", 10);
		fz_check_rc(rc == FLASH_OK || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "lock release by its holder", rc);
	}
	memset(&a, 0, sizeof(a));
	a.id = 3;
	a.limit_per_user = 1;
	a.max_qty = 1;
	a.start_ns = 0;
	a.end_ns = INT64_MAX;
	rc = flash_activity_add(h, &a);
	fz_check_rc(rc == FLASH_OK || rc == FLASH_EEXIST || rc == FLASH_EFULL || rc == FLASH_EBUSY ||
	            rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "activity add", rc);
	rc = flash_sku_add(h, 3, 1, 5, 2);
	fz_check_rc(rc == FLASH_OK || rc == FLASH_EEXIST || rc == FLASH_EFULL || rc == FLASH_EBUSY ||
	            rc == FLASH_ENOT_FOUND || rc == FLASH_EENDED || rc == FLASH_ECORRUPT || rc == FLASH_EDESTROYED, "sku add", rc);
}

/* ------------------------------------------------------------------------
 * The target.
 * ------------------------------------------------------------------------ */

static void fz_scribble(uint8_t *img, const uint8_t *p, size_t n)
{
	const struct fs_hdr_fixed *fx = (const struct fs_hdr_fixed *)(void *)fz_ref;

	for (; n >= 16; p += 16, n -= 16) {
		unsigned region = p[0] % (FS_R_COUNT + 1);
		size_t width = (size_t)1 << (p[1] % 4);
		uint16_t elem;
		uint32_t byte;
		uint64_t value, off, esize;

		memcpy(&elem, p + 2, 2);
		memcpy(&byte, p + 4, 4);
		memcpy(&value, p + 8, 8);
		if (region == FS_R_COUNT) {
			off = byte % sizeof(struct fs_hdr);
		} else {
			const struct fs_region *r = &fx->region[region];

			esize = r->elem_size ? r->elem_size : 1;
			off = r->off + (uint64_t)(elem % (r->count ? r->count : 1)) * esize + byte % esize;
		}
		off &= ~(uint64_t)(width - 1);
		if (off + width <= fz_ref_size)
			memcpy(img + off, &value, width);   /* little endian: the low bytes */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned modes[4] = { 0600, 0660, 0640, 0666 };
	uint8_t c0 = 0, c1 = 0;
	const uint8_t *body = data;
	size_t n = size, imglen, i;
	uint64_t objsize;
	uint8_t *img, head[sizeof(struct fs_hdr_fixed)];
	unsigned mode;
	int foreign, rd, want, rc, fd;
	struct stat st;
	flash_t *h = NULL;

	if (fz_ref == NULL)
		fz_build_ref();
	if (size >= 2) {
		c0 = data[0];
		c1 = data[1];
		body = data + 2;
		n = size - 2;
	}

	/* the edit */
	if ((c0 & 3) == FZ_EDIT_RAW) {
		imglen = n;
		img = malloc(n ? n : 1);
		fz_check(img != NULL, "malloc");
		memcpy(img, body, n);
	} else {
		imglen = fz_ref_size;
		img = malloc(imglen);
		fz_check(img != NULL, "malloc");
		memcpy(img, fz_ref, imglen);
		if ((c0 & 3) == FZ_EDIT_OVERWRITE)
			memcpy(img, body, n < imglen ? n : imglen);
		else if ((c0 & 3) == FZ_EDIT_XOR)
			for (i = 0; i < n && i < imglen; i++)
				img[i] ^= body[i];
		else
			fz_scribble(img, body, n);
	}
	/* keep the admin mutex as the creator made it: a corrupt robust mutex
	 * word blocks pthread_mutex_lock() forever (see the note at the top) */
	if (imglen >= offsetof(struct fs_hdr, admin) + sizeof(pthread_mutex_t))
		memcpy(img + offsetof(struct fs_hdr, admin), fz_ref + offsetof(struct fs_hdr, admin),
		       sizeof(pthread_mutex_t));
	if ((c0 & FZ_RESEAL) && imglen >= sizeof(struct fs_hdr_fixed)) {
		uint64_t sum = fz_fnv(img, offsetof(struct fs_hdr_fixed, checksum));

		memcpy(img + offsetof(struct fs_hdr_fixed, checksum), &sum, sizeof(sum));
	}

	/* the object */
	switch ((c0 >> FZ_SIZE_SHIFT) & 3) {
	case 0:
		objsize = imglen;
		break;
	case 1: {
		uint64_t s = 0;

		if (imglen >= sizeof(struct fs_hdr_fixed))
			memcpy(&s, img + offsetof(struct fs_hdr_fixed, seg_size), sizeof(s));
		objsize = s > 0 && s <= FZ_SIZE_MAX ? s : imglen;
		break;
	}
	case 2:
		objsize = imglen >= FZ_PAGE ? imglen - FZ_PAGE : imglen / 2;
		break;
	default:
		objsize = sizeof(struct fs_hdr) - 1;
		break;
	}
	mode = modes[(c0 >> FZ_MODE_SHIFT) & 3];
	foreign = (c1 & FZ_FOREIGN) && geteuid() == 0;
	rd = (c0 & FZ_RDONLY) != 0;

	shm_unlink(fz_name);
	fd = shm_open(fz_name, O_RDWR | O_CREAT | O_EXCL, 0600);
	fz_check(fd >= 0, "create the object");
	fz_check(ftruncate(fd, (off_t)objsize) == 0, "size the object");
	fz_check(pwrite(fd, img, imglen < objsize ? imglen : objsize, 0) ==
	         (ssize_t)(imglen < objsize ? imglen : objsize), "write the object");
	fz_check(fchmod(fd, mode) == 0, "chmod the object");
	if (foreign)
		/* owner and group foreign: a 0660 object is shared with its group */
		fz_check(fchown(fd, 4242, 4242) == 0, "chown the object");
	fz_check(fstat(fd, &st) == 0, "stat the object");
	fz_dev = st.st_dev;
	fz_ino = st.st_ino;
	fz_have_obj = 1;
	close(fd);

	/* the object's first bytes: the image, cut at the object's size, zeros after */
	memset(head, 0, sizeof(head));
	i = imglen < objsize ? imglen : (size_t)objsize;
	memcpy(head, img, i < sizeof(head) ? i : sizeof(head));
	want = fz_expect(head, objsize, mode, foreign);
	if (want == FZ_REGION)
		want = fz_layout_ok((const struct fs_hdr_fixed *)(void *)head) ? FLASH_OK : FLASH_ELAYOUT;

	rc = flash_open(fz_name, rd ? FLASH_RDONLY : 0, &h);
	shm_unlink(fz_name);       /* the handle keeps its mapping; nothing left behind a crash */
	if (rc <= 0 && rc > -64)
		fz_outcomes[-rc]++;
	if (rc != want && !(want == FLASH_OK && !rd && rc == FLASH_ENOPROC)) {
		fprintf(stderr, "fuzz_attach: flash_open = %s, the check order says %s\n",
		        flash_rcname(rc), flash_rcname(want));
		fz_check(0, "attach result as the check order says");
	}
	if (rc == FLASH_OK) {
		const struct fs_hdr_fixed *fx = (const struct fs_hdr_fixed *)(void *)head;

		fz_reads(h, fx);
		if (!rd && (c1 & FZ_OPS)) {
			fz_ops_runs++;
			fz_ops(h, fx);
			fz_reads(h, fx);
		}
		fz_check(flash_close(h) == FLASH_OK, "close");
	}
	fz_have_obj = 0;
	shm_unlink(fz_name);
	free(img);
	return 0;
}

#ifndef FLASH_LIBFUZZER
/*
 * --make-corpus DIR: seeds.  The valid image through each path, single
 * edits of each header field (with and without a resealed checksum), the
 * object's size, mode and owner, raw bytes, and scribbles of the index and
 * offset fields the engine reads from the segment.
 */
static const char *fz_out;

static void fz_seed(const char *name, uint8_t c0, uint8_t c1, const void *body, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fz_out, name);
	f = fopen(path, "wb");
	fz_check(f != NULL, "write a seed");
	fputc(c0, f);
	fputc(c1, f);
	if (n)
		fwrite(body, 1, n, f);
	fclose(f);
}

/* XOR seed: flip @p mask in the byte at @p off of the header. */
static void fz_seed_flip(const char *name, uint8_t c0, size_t off, uint8_t mask)
{
	uint8_t b[sizeof(struct fs_hdr)];

	memset(b, 0, sizeof(b));
	b[off] = mask;
	fz_seed(name, (uint8_t)(FZ_EDIT_XOR | c0), FZ_OPS, b, off + 1);
}

/* SCRIBBLE seed: one item. */
static void fz_seed_scribble(const char *name, uint8_t c0, unsigned region, unsigned width_log,
                             uint16_t elem, uint32_t byte, uint64_t value)
{
	uint8_t it[16];

	it[0] = (uint8_t)region;
	it[1] = (uint8_t)width_log;
	memcpy(it + 2, &elem, 2);
	memcpy(it + 4, &byte, 4);
	memcpy(it + 8, &value, 8);
	fz_seed(name, (uint8_t)(FZ_EDIT_SCRIBBLE | c0), FZ_OPS, it, sizeof(it));
}

static int fz_make_corpus(const char *out)
{
	uint8_t rnd[512];
	uint64_t x = 0x2545f4914f6cdd1dull;
	char nm[128];

	fz_out = out;
	fz_build_ref();
	fz_seed("valid-rw", FZ_EDIT_OVERWRITE, 0, NULL, 0);
	fz_seed("valid-rw-ops", FZ_EDIT_OVERWRITE, FZ_OPS, NULL, 0);
	fz_seed("valid-ro", FZ_EDIT_OVERWRITE | FZ_RDONLY, 0, NULL, 0);
	fz_seed("valid-0660", FZ_EDIT_OVERWRITE | (1u << FZ_MODE_SHIFT), FZ_OPS, NULL, 0);
	fz_seed("mode-0640", FZ_EDIT_OVERWRITE | (2u << FZ_MODE_SHIFT), 0, NULL, 0);
	fz_seed("mode-0666", FZ_EDIT_OVERWRITE | (3u << FZ_MODE_SHIFT), 0, NULL, 0);
	fz_seed("foreign-owner", FZ_EDIT_OVERWRITE, FZ_FOREIGN, NULL, 0);
	fz_seed("size-page-less", FZ_EDIT_OVERWRITE | (2u << FZ_SIZE_SHIFT), 0, NULL, 0);
	fz_seed("size-below-header", FZ_EDIT_OVERWRITE | (3u << FZ_SIZE_SHIFT), 0, NULL, 0);
	fz_seed("size-from-header", FZ_EDIT_OVERWRITE | (1u << FZ_SIZE_SHIFT), 0, NULL, 0);
	fz_seed("raw-header", FZ_EDIT_RAW, 0, fz_ref, sizeof(struct fs_hdr));
	for (size_t i = 0; i < sizeof(rnd); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		rnd[i] = (uint8_t)x;
	}
	fz_seed("raw-random", FZ_EDIT_RAW, 0, rnd, sizeof(rnd));
	fz_seed("overwrite-random-resealed", FZ_EDIT_OVERWRITE | FZ_RESEAL, FZ_OPS, rnd, 200);

	/* one field of the fixed header at a time, raw and resealed */
	{
		static const struct { const char *name; size_t off; } f[] = {
			{ "magic", offsetof(struct fs_hdr_fixed, magic) },
			{ "version", offsetof(struct fs_hdr_fixed, version) },
			{ "hdr-size", offsetof(struct fs_hdr_fixed, hdr_size) },
			{ "seg-size", offsetof(struct fs_hdr_fixed, seg_size) },
			{ "seg-size-hi", offsetof(struct fs_hdr_fixed, seg_size) + 5 },
			{ "uid", offsetof(struct fs_hdr_fixed, uid) },
			{ "mode", offsetof(struct fs_hdr_fixed, mode) },
			{ "max-activities", offsetof(struct fs_hdr_fixed, opts.max_activities) },
			{ "max-skus", offsetof(struct fs_hdr_fixed, opts.max_skus) },
			{ "max-shards", offsetof(struct fs_hdr_fixed, opts.max_shards) },
			{ "max-users", offsetof(struct fs_hdr_fixed, opts.max_users) },
			{ "max-orders", offsetof(struct fs_hdr_fixed, opts.max_orders) },
			{ "max-procs", offsetof(struct fs_hdr_fixed, opts.max_procs) },
			{ "ring-records", offsetof(struct fs_hdr_fixed, opts.ring_records) },
			{ "opts-mode", offsetof(struct fs_hdr_fixed, opts.mode) },
			{ "gid", offsetof(struct fs_hdr_fixed, opts.gid) },
			{ "durability", offsetof(struct fs_hdr_fixed, opts.durability) },
			{ "checksum", offsetof(struct fs_hdr_fixed, checksum) },
		};
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			snprintf(nm, sizeof(nm), "flip-%s", f[i].name);
			fz_seed_flip(nm, 0, f[i].off, 0x01);
			snprintf(nm, sizeof(nm), "flip-%s-resealed", f[i].name);
			fz_seed_flip(nm, FZ_RESEAL, f[i].off, 0x01);
		}
		fz_seed_flip("flip-durability-resealed-ops", FZ_RESEAL, offsetof(struct fs_hdr_fixed, opts.durability), 1);
		fz_seed_flip("flip-max-procs-x2-resealed-size", FZ_RESEAL | (1u << FZ_SIZE_SHIFT),
		             offsetof(struct fs_hdr_fixed, opts.max_procs), 0x07);
	}
	/* each region's table entry: offset, size, count, element size */
	for (unsigned r = 0; r < FS_R_COUNT; r++) {
		size_t base = offsetof(struct fs_hdr_fixed, region) + r * sizeof(struct fs_region);

		snprintf(nm, sizeof(nm), "region%02u-off-resealed", r);
		fz_seed_flip(nm, FZ_RESEAL, base + offsetof(struct fs_region, off) + 1, 0x10);
		snprintf(nm, sizeof(nm), "region%02u-size-resealed", r);
		fz_seed_flip(nm, FZ_RESEAL, base + offsetof(struct fs_region, size) + 1, 0x01);
		snprintf(nm, sizeof(nm), "region%02u-count-resealed", r);
		fz_seed_flip(nm, FZ_RESEAL, base + offsetof(struct fs_region, count), 0x01);
		snprintf(nm, sizeof(nm), "region%02u-elem-resealed", r);
		fz_seed_flip(nm, FZ_RESEAL, base + offsetof(struct fs_region, elem_size), 0x08);
	}
	/* scribbles: fill levels, catalog indexes, order and table states, the
	 * process table, journals and rings; read-only and read-write */
	{
		static const struct { const char *name; unsigned region, wlog; uint32_t byte; uint64_t v; } s[] = {
			{ "n-act", FS_R_COUNT, 2, offsetof(struct fs_hdr, n_act), 0xffffffffu },
			{ "n-sku", FS_R_COUNT, 2, offsetof(struct fs_hdr, n_sku), 0x7fffffffu },
			{ "n-shard", FS_R_COUNT, 2, offsetof(struct fs_hdr, n_shard), 0xffffffffu },
			{ "order-next", FS_R_COUNT, 3, offsetof(struct fs_hdr, order_next), ~0ull },
			{ "order-replay-hi", FS_R_COUNT, 3, offsetof(struct fs_hdr, order_replay_hi), ~0ull },
			{ "tick", FS_R_COUNT, 3, offsetof(struct fs_hdr, tick), ~0ull - 1 },
			{ "cat-holder", FS_R_COUNT, 2, offsetof(struct fs_hdr, cat_holder), 4000 },
			{ "act-idx", FS_R_ACT_IDX, 2, 0, 0xfffffff0u },
			{ "sku-idx", FS_R_SKU_IDX, 2, 0, 0x7ffffff0u },
			{ "sku-act-idx", FS_R_SKU, 2, offsetof(struct fs_sku, act_idx), 0xffffffffu },
			{ "sku-shard0", FS_R_SKU, 2, offsetof(struct fs_sku, shard0), 0xfffffff0u },
			{ "sku-nshards", FS_R_SKU, 2, offsetof(struct fs_sku, nshards), 0xffffffffu },
			{ "sku-total-tag", FS_R_SKU, 3, offsetof(struct fs_sku, total.tag), ~0ull },
			{ "shard-tag", FS_R_SHARD, 3, offsetof(struct fs_shard, c.tag), 0x0fff123456789abcull },
			{ "user-state", FS_R_USER, 3, offsetof(struct fs_kent, state), 0x3fff000000000001ull },
			{ "token-state", FS_R_TOKEN, 3, offsetof(struct fs_token, state), 0x3fff000000000001ull },
			{ "req-state", FS_R_REQ, 3, offsetof(struct fs_kent, state), 0x4fffffffffffffffull },
			{ "order-state-pend", FS_R_ORDER, 3, offsetof(struct fs_order, state), 0x3fff000000000002ull },
			{ "order-state-kind", FS_R_ORDER, 3, offsetof(struct fs_order, state), 0xf000000000000000ull },
			{ "order-user-idx", FS_R_ORDER, 2, offsetof(struct fs_order, user_idx), 0xfffffff0u },
			{ "order-sku-idx", FS_R_ORDER, 2, offsetof(struct fs_order, sku_idx), 0xfffffff0u },
			{ "order-shard", FS_R_ORDER, 2, offsetof(struct fs_order, shard), 0xfffffff0u },
			{ "order-qty", FS_R_ORDER, 2, offsetof(struct fs_order, qty), 0xffffffffu },
			{ "lock-holder", FS_R_LOCK, 3, offsetof(struct fs_lock, holder), ~0ull },
			{ "lock-name", FS_R_LOCK, 3, offsetof(struct fs_lock, name) + 40, 0x4141414141414141ull },
			{ "proc-state-dead", FS_R_PROC, 3, offsetof(struct fs_proc, state), FS_PSTATE(FS_P_ALIVE, 7, 0x7ffffff0) },
			{ "proc-state-pid1", FS_R_PROC, 3, offsetof(struct fs_proc, state), FS_PSTATE(FS_P_RECOVERING, 7, 1) },
			{ "proc-order-next", FS_R_PROC, 3, offsetof(struct fs_proc, order_next), 1ull << 40 },
			{ "proc-cons-seq", FS_R_PROC, 3, offsetof(struct fs_proc, cons_seq), ~0ull },
			{ "proc-taken-seq", FS_R_PROC, 3, offsetof(struct fs_proc, taken_seq), ~0ull },
			{ "journal-phase", FS_R_JOURNAL, 2, offsetof(struct fs_journal, phase), FS_PH_RUN },
			{ "journal-op", FS_R_JOURNAL, 2, offsetof(struct fs_journal, op), FS_OP_ORDER },
			{ "journal-n-int", FS_R_JOURNAL, 2, offsetof(struct fs_journal, n_int), 0xffffffffu },
			{ "journal-order-idx", FS_R_JOURNAL, 2, offsetof(struct fs_journal, order_idx), 0xfffffff0u },
			{ "journal-intent-shard", FS_R_JOURNAL, 2, offsetof(struct fs_journal, in[0].shard), 0x7ffffff0u },
			{ "ring-c-head", FS_R_RING, 2, 0, 0xfffffff0u },
			{ "ring-p-tail", FS_R_RING, 2, 64, 0xfffffff0u },
			{ "ring-size", FS_R_RING, 2, 128, 0x7fffffffu },
			{ "ring-mask", FS_R_RING, 2, 132, 0xffffffffu },
			{ "ringbuf-slot", FS_R_RINGBUF, 1, offsetof(struct flash_record, slot), 0xffff },
			{ "ringbuf-tick", FS_R_RINGBUF, 3, offsetof(struct fs_ringrec, tick), ~0ull },
		};
		for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
			snprintf(nm, sizeof(nm), "scribble-%s-ro", s[i].name);
			fz_seed_scribble(nm, FZ_RDONLY, s[i].region, s[i].wlog, 0, s[i].byte, s[i].v);
			snprintf(nm, sizeof(nm), "scribble-%s-rw", s[i].name);
			fz_seed_scribble(nm, 0, s[i].region, s[i].wlog, 0, s[i].byte, s[i].v);
		}
	}
	return 0;
}

static int fz_main_hook(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--make-corpus") == 0)
		return fz_make_corpus(argv[2]);
	return -1;
}
#define FUZZ_MAIN_HOOK fz_main_hook
#include "fuzz_main.h"
#endif
