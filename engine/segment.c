/*
 * segment.c -- create, attach, validate and destroy the shared-memory
 * segment; the process table (slot claim and release, liveness that survives
 * PID reuse); the robust admin mutex; the identity the segment shares with
 * its WAL and the claim of its one consumer (the daemon).
 *
 * Divisions: layout, create, attach (validation in the order the header
 * documents; one mapping per handle, or in the ThreadSanitizer build one per
 * process), process table, admin mutex, identity and consumer claim.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "journal.h"

/* ---------------------------------------------------------------- layout */

#define RECLAIM_S_MAX 31536000u   /* longest generation: a year */

static uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

_Static_assert(FLASH_PROCS_MAX == FS_MAX_PROCS, "one bound for the process table");

void flash_seg_opts_default(struct flash_seg_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_activities = 64;
	o->max_skus = 4096;
	o->max_shards = 16384;
	o->max_users = 1u << 19;
	o->max_tokens = 1u << 19;
	o->max_orders = 1u << 19;
	o->max_requests = 1u << 19;
	o->max_locks = 1024;
	o->max_procs = 64;
	o->ring_records = 8192;
	o->mode = 0600;
	o->gid = -1;
	o->durability = FLASH_DURABILITY_ASYNC;
}

static int opts_check(const struct flash_seg_opts *o)
{
	const uint32_t caps[] = { o->max_activities, o->max_skus, o->max_shards, o->max_users,
	                          o->max_tokens, o->max_orders, o->max_requests, o->max_locks };
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		if (caps[i] == 0 || caps[i] > FLASH_CAP_MAX)
			return FLASH_EINVAL;
	if (o->max_procs == 0 || o->max_procs > FLASH_PROCS_MAX)
		return FLASH_EINVAL;
	if (o->ring_records < FLASH_RING_MIN || o->ring_records > FLASH_RING_MAX ||
	    (o->ring_records & (o->ring_records - 1)))
		return FLASH_EINVAL;
	if (o->mode != 0600 && o->mode != 0660)
		return FLASH_EINVAL;
	if (o->durability > FLASH_DURABILITY_SYNC)
		return FLASH_EINVAL;
	if (o->gid < -1 || o->gid > (int64_t)UINT32_MAX)
		return FLASH_EINVAL;
	return FLASH_OK;
}

/*
 * Lay the regions out one after another, each on a page boundary.  A
 * windowed segment (@p banks FS_GEN_BANKS, gen.c) has its request and user
 * tables, all banks, in the last two regions, so flash_seg_reclaim_set()
 * only appends to a segment already made; FS_R_USER and FS_R_REQ are then
 * unused (their pages are given back).  A one-bank segment's last two
 * regions are empty.
 */
static uint64_t layout(const struct flash_seg_opts *o, uint32_t banks, struct fs_region *r)
{
	uint64_t xb = banks > 1 ? banks : 0;
	uint64_t off = (sizeof(struct fs_hdr) + 4095) & ~4095ull;
	struct { uint64_t count, elem; } want[FS_R_COUNT] = {
		[FS_R_ACT]     = { o->max_activities, sizeof(struct fs_act) },
		[FS_R_ACT_IDX] = { pow2_at_least(2ull * o->max_activities), sizeof(uint32_t) },
		[FS_R_SKU]     = { o->max_skus, sizeof(struct fs_sku) },
		[FS_R_SKU_IDX] = { pow2_at_least(2ull * o->max_skus), sizeof(uint32_t) },
		[FS_R_SHARD]   = { o->max_shards, sizeof(struct fs_shard) },
		[FS_R_USER]    = { pow2_at_least(2ull * o->max_users), sizeof(struct fs_kent) },
		[FS_R_TOKEN]   = { pow2_at_least(2ull * o->max_tokens), sizeof(struct fs_token) },
		[FS_R_REQ]     = { pow2_at_least(2ull * o->max_requests), sizeof(struct fs_kent) },
		[FS_R_ORDER]   = { o->max_orders, sizeof(struct fs_order) },
		[FS_R_LOCK]    = { pow2_at_least(2ull * o->max_locks), sizeof(struct fs_lock) },
		[FS_R_PROC]    = { o->max_procs, sizeof(struct fs_proc) },
		[FS_R_JOURNAL] = { o->max_procs, sizeof(struct fs_journal) },
		[FS_R_RING]    = { o->max_procs, (sizeof(struct ck_ring) + FS_LINE - 1) & ~(uint64_t)(FS_LINE - 1) },
		[FS_R_RINGBUF] = { (uint64_t)o->max_procs * o->ring_records, sizeof(struct fs_ringrec) },
		[FS_R_OBS]     = { o->max_procs, sizeof(struct fs_obs) },
		[FS_R_ARCHIVED] = { pow2_at_least(2ull * fs_arch_cap(o)), sizeof(uint32_t) },
		[FS_R_USER_BANKS] = { xb * pow2_at_least(2ull * o->max_users), sizeof(struct fs_kent) },
		[FS_R_REQ_BANKS]  = { xb * pow2_at_least(2ull * o->max_requests), sizeof(struct fs_kent) },
	};
	for (int i = 0; i < FS_R_COUNT; i++) {
		r[i].off = off;
		r[i].count = (uint32_t)want[i].count;
		r[i].elem_size = (uint32_t)want[i].elem;
		r[i].size = want[i].count * want[i].elem;
		off += (r[i].size + 4095) & ~4095ull;
	}
	return off;
}

int flash_seg_size(const struct flash_seg_opts *opts, uint64_t *bytes)
{
	struct flash_seg_opts o;
	struct fs_region reg[FS_R_COUNT];

	if (bytes == NULL)
		return FLASH_EINVAL;
	if (opts == NULL)
		flash_seg_opts_default(&o);
	else
		o = *opts;
	if (opts_check(&o) != FLASH_OK)
		return FLASH_EINVAL;
	*bytes = layout(&o, 1, reg);
	return FLASH_OK;
}

/* ---------------------------------------------------------------- names */

static int name_check(const char *name, char *buf, size_t cap)
{
	size_t n;

	if (name == NULL)
		return FLASH_EINVAL;
	if (name[0] == '/')
		name++;
	n = strlen(name);
	if (n == 0 || n > 200 || strchr(name, '/') != NULL || n + 2 > cap)
		return FLASH_EINVAL;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return FLASH_EINVAL;
	buf[0] = '/';
	memcpy(buf + 1, name, n + 1);
	return FLASH_OK;
}

static int errno_rc(int e)
{
	switch (e) {
	case EEXIST: return FLASH_EEXIST;
	case ENOENT: return FLASH_ENOSEG;
	case EACCES: case EPERM: return FLASH_EPERM;
	case ENOMEM: case ENOSPC: case EFBIG: return FLASH_ENOMEM;
	case EINVAL: case ENAMETOOLONG: return FLASH_EINVAL;
	case EISDIR: case ELOOP: case ENXIO: return FLASH_ENOTREG;   /* a directory, symlink or device */
	default: return FLASH_ESYS;
	}
}

/* ---------------------------------------------------------------- create */

static int init_admin_mutex(pthread_mutex_t *m)
{
	pthread_mutexattr_t at;
	int rc;

	if (pthread_mutexattr_init(&at))
		return FLASH_ESYS;
	rc = pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED) ||
	     pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST) ||
	     pthread_mutex_init(m, &at);
	pthread_mutexattr_destroy(&at);
	return rc ? FLASH_ESYS : FLASH_OK;
}

/*
 * Reserve every page of the object now.  tmpfs allocates on first touch, so
 * an object larger than free /dev/shm would be created happily and then kill
 * whoever touches a page past the free space with SIGBUS (status, load,
 * serve, flash_open()'s pre-fault).  A size above what the file system
 * has free is refused before a page is taken (tmpfs would otherwise fill up
 * first and undo it after); posix_fallocate() then takes them for real, and
 * fails cleanly when another object took the space meanwhile.  A file system
 * that reports no size (tmpfs without a limit) is left to posix_fallocate().
 */
static int seg_reserve(int fd, uint64_t size)
{
	struct statvfs sv;
	int e;

	if (fstatvfs(fd, &sv) == 0 && sv.f_blocks != 0 &&
	    size > (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize)
		return FLASH_ENOMEM;
	if (size > (uint64_t)INT64_MAX)
		return FLASH_ENOMEM;
	e = posix_fallocate(fd, 0, (off_t)size);
	if (e == 0)
		return FLASH_OK;
	return e == EINTR ? FLASH_ESYS : errno_rc(e);
}

/*
 * Make the named object of @p size bytes: shm_open(O_CREAT | O_EXCL, 0600),
 * the group when asked, exactly o->mode whatever the umask, ftruncate, every
 * page reserved (seg_reserve), and a writable mapping.  On failure nothing
 * is left behind (the name is unlinked).  The caller fills the mapping and
 * ends with seg_make_done().
 */
static int seg_make(const char *path, const struct flash_seg_opts *o, uint64_t size,
                    int *fdp, void **pp)
{
	void *p;
	int fd, rc;

	*pp = NULL;
	*fdp = -1;
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return errno_rc(errno);
	if (o->gid >= 0 && fchown(fd, (uid_t)-1, (gid_t)o->gid) != 0) {
		rc = errno_rc(errno);
		goto fail;
	}
	if (fchmod(fd, o->mode) != 0) {
		rc = errno_rc(errno);
		goto fail;
	}
	if (ftruncate(fd, (off_t)size) != 0) {
		rc = errno_rc(errno);
		goto fail;
	}
	if ((rc = seg_reserve(fd, size)) != FLASH_OK)
		goto fail;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = errno_rc(errno);
		goto fail;
	}
	*fdp = fd;
	*pp = p;
	return FLASH_OK;
fail:
	shm_unlink(path);
	close(fd);
	return rc;
}

/* Publish a filled mapping: magic last, then the checksum, so a half-made
 * segment never validates; then flush the header and let go. */
static void seg_make_done(struct fs_hdr *hdr, uint64_t size, int fd)
{
	ck_pr_fence_store();
	hdr->fx.magic = FS_MAGIC;
	hdr->fx.checksum = fs_fnv(&hdr->fx, offsetof(struct fs_hdr_fixed, checksum));
	msync(hdr, sizeof(*hdr), MS_SYNC);
	munmap(hdr, size);
	close(fd);
}

/* Give up on a mapping seg_make() returned: unmap, unlink, close. */
static void seg_make_fail(const char *path, void *p, uint64_t size, int fd)
{
	munmap(p, size);
	shm_unlink(path);
	close(fd);
}

/* Fresh per-slot state: rings empty (records start at seq 1), journals idle. */
static void seg_reset_slots(void *p, const struct fs_region *reg, uint32_t procs, uint32_t ring_records)
{
	for (uint32_t i = 0; i < procs; i++) {
		struct ck_ring *ring = (struct ck_ring *)((char *)p + reg[FS_R_RING].off +
		                                          (uint64_t)i * reg[FS_R_RING].elem_size);
		struct fs_journal *j = (struct fs_journal *)((char *)p + reg[FS_R_JOURNAL].off +
		                                              (uint64_t)i * reg[FS_R_JOURNAL].elem_size);

		ck_ring_init(ring, ring_records);
		memset(j, 0, sizeof(*j));
		j->phase = FS_PH_IDLE;
	}
}

int flash_seg_create(const char *name, const struct flash_seg_opts *opts)
{
	struct flash_seg_opts o;
	struct fs_region reg[FS_R_COUNT];
	char path[256];
	struct fs_hdr *hdr;
	uint64_t size;
	void *p;
	int fd, rc;

	if ((rc = name_check(name, path, sizeof(path))) != FLASH_OK)
		return rc;
	if (opts == NULL)
		flash_seg_opts_default(&o);
	else
		o = *opts;
	if ((rc = opts_check(&o)) != FLASH_OK)
		return rc;
	size = layout(&o, 1, reg);
	if ((rc = seg_make(path, &o, size, &fd, &p)) != FLASH_OK)
		return rc;
	if (p == NULL)   /* never with FLASH_OK; says so to the static analyzer */
		return FLASH_ESYS;
	hdr = p;
	hdr->fx.version = FS_LAYOUT_VERSION;
	hdr->fx.hdr_size = sizeof(struct fs_hdr);
	hdr->fx.seg_size = size;
	hdr->fx.uid = (uint32_t)geteuid();
	hdr->fx.mode = o.mode;
	hdr->fx.opts = o;
	hdr->fx.gen_banks = 1;
	for (int t = 0; t < 2; t++)
		hdr->gen[t].bank[0] = FS_BANK(FS_BANK_USED, 0, 0);
	if ((rc = fs_token_keygen(hdr->fx.token_key)) != FLASH_OK) {
		seg_make_fail(path, p, size, fd);
		return rc;
	}
	hdr->fx.created_ns = fs_now_ns();
	hdr->fx.tsc_mult = fs_tsc_calibrate();
	memcpy(hdr->fx.region, reg, sizeof(reg));
	hdr->order_next = 1;
	/* the incarnation: random and nonzero; it names this segment in its WAL */
	if (getrandom(&hdr->incarnation, sizeof(hdr->incarnation), 0) != (ssize_t)sizeof(hdr->incarnation))
		hdr->incarnation = fs_hash((uint64_t)getpid(), (uint64_t)fs_now_ns(), hdr->fx.token_key[0]);
	if (hdr->incarnation == 0)
		hdr->incarnation = 1;
	if ((rc = init_admin_mutex(&hdr->admin)) != FLASH_OK) {
		seg_make_fail(path, p, size, fd);
		return rc;
	}
	seg_reset_slots(p, reg, o.max_procs, o.ring_records);
	seg_make_done(hdr, size, fd);
	return FLASH_OK;
}

static int region_check(const struct fs_hdr_fixed *fx);

/*
 * The checks flash_open() makes on an object, made on a copy of a fixed
 * header that claims to describe @p len bytes (attach's order and codes).
 */
static int image_check(const struct fs_hdr_fixed *fx, uint64_t len)
{
	if (fx->magic != FS_MAGIC)
		return FLASH_EMAGIC;
	if (fx->version != FS_LAYOUT_VERSION)
		return FLASH_EVERSION;
	if (fx->checksum != fs_fnv(fx, offsetof(struct fs_hdr_fixed, checksum)))
		return FLASH_ECHECKSUM;
	if (fx->hdr_size != sizeof(struct fs_hdr))
		return FLASH_ELAYOUT;
	if (len != fx->seg_size)
		return FLASH_ESIZE;
	if (fx->mode != 0600 && fx->mode != 0660)
		return FLASH_EMODE;
	return region_check(fx);
}

int flash_seg_restore(const char *name, const struct flash_seg_opts *o, const void *img, size_t len)
{
	struct fs_hdr_fixed fx;
	struct flash_seg_opts want;
	char path[256];
	struct fs_hdr *hdr;
	void *p;
	int fd, rc;

	if ((rc = name_check(name, path, sizeof(path))) != FLASH_OK)
		return rc;
	if (img == NULL)
		return FLASH_EINVAL;
	if (len < sizeof(struct fs_hdr))
		return FLASH_ESIZE;
	/* validate a local copy of the header, then use only the copy */
	memcpy(&fx, img, sizeof(fx));
	if ((rc = image_check(&fx, len)) != FLASH_OK)
		return rc;
	want = fx.opts;
	if (o != NULL) {
		want.mode = o->mode;
		want.gid = o->gid;
		if (opts_check(&want) != FLASH_OK)
			return FLASH_EINVAL;
	}
	if ((rc = seg_make(path, &want, fx.seg_size, &fd, &p)) != FLASH_OK)
		return rc;
	if (p == NULL)   /* never with FLASH_OK; says so to the static analyzer */
		return FLASH_ESYS;
	hdr = p;
	/* everything after the fixed header first; the header (magic last) at the end */
	memcpy((char *)p + sizeof(fx), (const char *)img + sizeof(fx), fx.seg_size - sizeof(fx));

	/* Nothing of the image's processes survives: no slot is held, no
	 * journal names an operation, no record waits in a ring, no consumer
	 * is registered, the admin mutex is free.  Kept: each slot's sequence
	 * (tags are never issued twice), helping marks, counters, and its
	 * unused order numbers (the high-water mark of flash_orders_max). */
	for (uint32_t i = 0; i < fx.opts.max_procs; i++) {
		struct fs_proc *pr = (struct fs_proc *)((char *)p + fx.region[FS_R_PROC].off +
		                                        (uint64_t)i * fx.region[FS_R_PROC].elem_size);

		pr->state = FS_PSTATE(FS_P_FREE, FS_PGEN(pr->state), 0);
		pr->start_time = 0;
		pr->cons_seq = 0;
		pr->taken_seq = 0;
		pr->durable_futex = 0;
		pr->waiters = 0;
	}
	seg_reset_slots(p, fx.region, fx.opts.max_procs, fx.opts.ring_records);
	hdr->cat_holder = 0;
	hdr->durability_failed = 0;
	hdr->dur_fail_ns = 0;  /* and why: the image's WAL failure is not this segment's */
	hdr->dur_fail_step = 0;
	hdr->dur_fail_err = 0;
	hdr->destroyed = 0;    /* an image of a segment destroyed after it was taken */
	hdr->consumer = 0;     /* incarnation and wal_lsn: the image's */
	memset(&hdr->admin, 0, sizeof(hdr->admin));
	if ((rc = init_admin_mutex(&hdr->admin)) != FLASH_OK) {
		seg_make_fail(path, p, fx.seg_size, fd);
		return rc;
	}
	fx.magic = 0;
	fx.uid = (uint32_t)geteuid();
	fx.mode = want.mode;
	fx.opts = want;
	fx.tsc_mult = fs_tsc_calibrate();   /* the image may come from another machine */
	hdr->fx = fx;
	seg_make_done(hdr, fx.seg_size, fd);
	return FLASH_OK;
}

int flash_seg_opts_get(const flash_t *h, struct flash_seg_opts *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	*out = h->hdr->fx.opts;
	return FLASH_OK;
}

int flash_image(const flash_t *h, const void **base, uint64_t *len)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (base == NULL || len == NULL)
		return FLASH_EINVAL;
	*base = h->base;
	*len = h->size;
	return FLASH_OK;
}

int flash_seg_destroy(const char *name)
{
	char path[256];
	int rc;

	if ((rc = name_check(name, path, sizeof(path))) != FLASH_OK)
		return rc;
	if (shm_unlink(path) != 0)
		return errno_rc(errno);
	return FLASH_OK;
}

/* ---------------------------------------------------------------- destroy */

/*
 * flash_seg_destroy_checked (flashstock.h, section 2).  The segment is read
 * through a read-only handle -- no slot taken, no recovery run, nothing
 * changed by looking -- and marked through a writable mapping of its header
 * alone, checked to be the same object (its incarnation and creation time).
 *
 * What is lost with a segment: records published into a ring and not yet
 * durable (ring tail minus the consumer's durable mark: in no WAL, and no
 * daemon drains a segment that has no name), and whatever a process still
 * attached acknowledges afterwards.  The mark ends the second: every write
 * call but the consumer's answers FLASH_EDESTROYED (enter.c).
 */
#define DESTROY_WAIT_MS   2000u   /* FORCE: longest wait for open operations */
#define DESTROY_QUIET_MS  50u     /* ... which must stay quiet this long */

/* Slot @p i's ring: its element of FS_R_RING (the stride of the checked table). */
static const struct ck_ring *destroy_ring(const flash_t *h, uint32_t i)
{
	return (const struct ck_ring *)((const char *)h->ring +
	                                (uint64_t)i * h->hdr->fx.region[FS_R_RING].elem_size);
}

/* Records of slot @p i that no WAL holds yet: published (the ring's tail)
 * and not marked durable by a consumer.  A scribbled word cannot make it
 * more than the ring holds. */
static uint64_t destroy_undrained(const flash_t *h, uint32_t i)
{
	uint64_t cons = ck_pr_load_64(&h->proc[i].cons_seq);
	unsigned int n = ck_pr_load_uint(&destroy_ring(h, i)->p_tail) - (unsigned int)cons;

	return n > h->ring_size ? h->ring_size : n;
}

/*
 * Fill @p r from the segment: the live consumer, every slot that a running
 * process holds or whose ring holds undrained records, the totals.  Returns
 * a fingerprint of the live slots' activity (their sequence numbers and
 * ring tails), which moves whenever one of them begins an operation or
 * publishes a record.
 */
static uint64_t destroy_survey(flash_t *h, struct flash_destroy_report *r)
{
	uint64_t activity = 0;
	int32_t pid;

	memset(r, 0, sizeof(*r));
	if (fs_consumer_live(h, ck_pr_load_64(&h->hdr->consumer), &pid))
		r->consumer_pid = pid;
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		uint64_t st = ck_pr_load_64(&h->proc[i].state);
		struct flash_destroy_slot s = { .slot = i };

		if (FS_PKIND(st) != FS_P_FREE) {
			s.pid = FS_PPID(st);
			s.alive = fs_proc_alive(h, i, st) != 0;
		}
		s.records = destroy_undrained(h, i);
		if (s.alive) {
			s.open = ck_pr_load_32(&h->jr[i].phase) != FS_PH_IDLE;
			activity += ck_pr_load_64(&h->proc[i].seq) + ck_pr_load_uint(&destroy_ring(h, i)->p_tail);
			r->attached++;
			r->in_flight += s.open;
		}
		if (!s.alive && s.records == 0)
			continue;
		r->undrained += s.records;
		if (r->n_slots < FLASH_DESTROY_LIST_MAX)
			r->slots[r->n_slots++] = s;
		else
			r->more_slots++;
	}
	return activity;
}

/*
 * FORCE with processes attached: they were marked out, but a call that
 * passed its entry check just before the mark may still be running, and
 * would publish its record after the count.  Wait until the live slots have
 * no operation open and their activity has not moved for DESTROY_QUIET_MS,
 * DESTROY_WAIT_MS at most (a stopped process can hold an operation open for
 * ever: the report then counts it in in_flight).  Buyers never wait for
 * this; only the destroyer does.
 */
static void destroy_settle(flash_t *h, struct flash_destroy_report *r)
{
	uint64_t t0 = fs_mono_ms(), quiet = t0;
	uint64_t seen = destroy_survey(h, r);

	for (;;) {
		struct timespec ts = { 0, 1000000 };   /* 1 ms */
		uint64_t now, act;

		nanosleep(&ts, NULL);
		act = destroy_survey(h, r);
		now = fs_mono_ms();
		if (act != seen || r->in_flight != 0) {
			seen = act;
			quiet = now;
		} else if (now - quiet >= DESTROY_QUIET_MS) {
			return;
		}
		if (now - t0 >= DESTROY_WAIT_MS)
			return;
	}
}

/*
 * The segment at @p path, twice: a read-only handle to read it, and a
 * writable mapping of its header alone to mark it.  Both must be the same
 * object; the name may have been replaced between the two opens.
 */
static int destroy_open(const char *path, flash_t **hp, struct fs_hdr **wp, size_t *wlen)
{
	const size_t len = (sizeof(struct fs_hdr) + 4095) & ~(size_t)4095;
	struct stat st;
	flash_t *h;
	void *w;
	int fd, rc;

	if ((rc = flash_open(path, FLASH_RDONLY, &h)) != FLASH_OK)
		return rc;
	fd = shm_open(path, O_RDWR | O_NONBLOCK, 0);
	if (fd < 0) {
		rc = errno_rc(errno);
		goto fail;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len) {
		close(fd);
		rc = FLASH_ESYS;
		goto fail;
	}
	w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (w == MAP_FAILED) {
		rc = errno_rc(errno);
		goto fail;
	}
	if (((struct fs_hdr *)w)->incarnation != ck_pr_load_64(&h->hdr->incarnation) ||
	    ((struct fs_hdr *)w)->fx.created_ns != h->hdr->fx.created_ns) {
		munmap(w, len);
		rc = FLASH_ESYS;   /* another object took the name meanwhile */
		goto fail;
	}
	*hp = h;
	*wp = w;
	*wlen = len;
	return FLASH_OK;
fail:
	flash_close(h);
	return rc;
}

int flash_seg_destroy_checked(const char *name, unsigned flags, struct flash_destroy_report *rep)
{
	const int force = (flags & FLASH_DESTROY_FORCE) != 0;
	struct flash_destroy_report r;
	struct fs_hdr *w = NULL;
	flash_t *h = NULL;
	char path[256];
	size_t wlen = 0;
	int rc, set = 0;

	if ((flags & ~(FLASH_DESTROY_FORCE | FLASH_DESTROY_KEEP_NAME)) != 0 ||
	    flags == FLASH_DESTROY_KEEP_NAME)
		return FLASH_EINVAL;
	if ((rc = name_check(name, path, sizeof(path))) != FLASH_OK)
		return rc;
	memset(&r, 0, sizeof(r));
	rc = destroy_open(path, &h, &w, &wlen);
	if (rc != FLASH_OK) {
		/* nothing to read: no such name, no right to it, or not a
		 * segment one can check (a FIFO, a half-made or corrupt one) */
		if (rc == FLASH_ENOSEG || rc == FLASH_EPERM || rc == FLASH_EOWNER || rc == FLASH_ENOMEM ||
		    rc == FLASH_ESYS)
			goto out;
		r.unreadable = rc;
		if (!force || (flags & FLASH_DESTROY_KEEP_NAME))
			goto out;
		if (shm_unlink(path) != 0) {
			rc = errno_rc(errno);
			goto out;
		}
		r.unlinked = 1;
		rc = FLASH_OK;
		goto out;
	}
	/* Look first: a refusal that changes nothing needs no mark. */
	(void)destroy_survey(h, &r);
	if (r.consumer_pid != 0 || (!force && (r.attached != 0 || r.undrained != 0))) {
		rc = FLASH_EBUSY;
		goto out;
	}
	/* The mark, then a full barrier, then the slots again: a process that
	 * claimed a slot before the barrier is seen below; one that claims
	 * after it reads the mark in its first call (enter.c). */
	set = ck_pr_cas_32(&w->destroyed, 0, 1);
	ck_pr_fence_memory();
	(void)destroy_survey(h, &r);
	if (force && r.attached != 0)
		destroy_settle(h, &r);
	if (r.consumer_pid != 0 || (!force && (r.attached != 0 || r.undrained != 0))) {
		/* attached or served meanwhile: refused, and unmarked if the mark
		 * was ours (a process refused in between changed nothing) */
		if (set)
			ck_pr_store_32(&w->destroyed, 0);
		rc = FLASH_EBUSY;
		goto out;
	}
	r.marked = 1;
	if (!(flags & FLASH_DESTROY_KEEP_NAME)) {
		if (shm_unlink(path) != 0) {
			rc = errno_rc(errno);
			goto out;
		}
		r.unlinked = 1;
	}
	rc = FLASH_OK;
out:
	if (w != NULL)
		munmap(w, wlen);
	if (h != NULL)
		flash_close(h);
	if (rep != NULL)
		*rep = r;
	return rc;
}

/* The mark flash_seg_destroy_checked() sets (flashstock.h). */
int flash_destroyed_get(flash_t *h, uint32_t *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	*out = ck_pr_load_32(&h->hdr->destroyed) != 0;
	return FLASH_OK;
}

/* ---------------------------------------------------------------- attach */

static int region_check(const struct fs_hdr_fixed *fx)
{
	const struct flash_seg_opts *o = &fx->opts;
	struct fs_region want[FS_R_COUNT];
	uint64_t lo = sizeof(struct fs_hdr);

	if (opts_check(o) != FLASH_OK)
		return FLASH_ELAYOUT;
	/* the table must be exactly the one these options produce: every count
	 * and element size is then known to match the code reading it */
	if (fx->gen_banks != 1 && fx->gen_banks != FS_GEN_BANKS)
		return FLASH_ELAYOUT;
	if (fx->gen_banks != 1 && (fx->req_window_s == 0 || fx->user_gen_s == 0 ||
	                           fx->req_window_s > RECLAIM_S_MAX || fx->user_gen_s > RECLAIM_S_MAX))
		return FLASH_ELAYOUT;
	if (layout(o, fx->gen_banks, want) != fx->seg_size)
		return FLASH_ELAYOUT;
	for (int i = 0; i < FS_R_COUNT; i++) {
		const struct fs_region *r = &fx->region[i];

		if (r->off < lo || r->off % FS_LINE != 0 || r->size > fx->seg_size ||
		    r->off > fx->seg_size - r->size)
			return FLASH_ELAYOUT;
		if (r->count != want[i].count || r->elem_size != want[i].elem_size ||
		    r->size != (uint64_t)r->count * r->elem_size || r->off != want[i].off)
			return FLASH_ELAYOUT;
		lo = r->off + r->size;
	}
	return FLASH_OK;
}

static void bind_regions(flash_t *h)
{
	const struct fs_region *r = h->hdr->fx.region;
	char *b = h->base;

	h->act = (struct fs_act *)(b + r[FS_R_ACT].off);
	h->act_cap = r[FS_R_ACT].count;
	h->act_idx = (uint32_t *)(b + r[FS_R_ACT_IDX].off);
	h->act_idx_mask = r[FS_R_ACT_IDX].count - 1;
	h->sku = (struct fs_sku *)(b + r[FS_R_SKU].off);
	h->sku_cap = r[FS_R_SKU].count;
	h->sku_idx = (uint32_t *)(b + r[FS_R_SKU_IDX].off);
	h->sku_idx_mask = r[FS_R_SKU_IDX].count - 1;
	h->arch = (uint32_t *)(b + r[FS_R_ARCHIVED].off);
	h->arch_mask = r[FS_R_ARCHIVED].count - 1;
	h->arch_cap = fs_arch_cap(&h->hdr->fx.opts);
	h->shard = (struct fs_shard *)(b + r[FS_R_SHARD].off);
	h->shard_cap = r[FS_R_SHARD].count;
	h->user = (struct fs_kent *)(b + r[FS_R_USER].off);
	h->user_mask = r[FS_R_USER].count - 1;
	h->tok = (struct fs_token *)(b + r[FS_R_TOKEN].off);
	h->tok_mask = r[FS_R_TOKEN].count - 1;
	h->req = (struct fs_kent *)(b + r[FS_R_REQ].off);
	h->req_mask = r[FS_R_REQ].count - 1;
	h->ord = (struct fs_order *)(b + r[FS_R_ORDER].off);
	h->ord_cap = r[FS_R_ORDER].count;
	h->lock = (struct fs_lock *)(b + r[FS_R_LOCK].off);
	h->lock_mask = r[FS_R_LOCK].count - 1;
	h->proc = (struct fs_proc *)(b + r[FS_R_PROC].off);
	h->proc_cap = r[FS_R_PROC].count;
	h->jr = (struct fs_journal *)(b + r[FS_R_JOURNAL].off);
	h->ring = (struct ck_ring *)(b + r[FS_R_RING].off);
	h->ringbuf = (struct fs_ringrec *)(b + r[FS_R_RINGBUF].off);
	h->ring_size = h->hdr->fx.opts.ring_records;
	h->obs = (struct fs_obs *)(b + r[FS_R_OBS].off);
	h->obs_cap = r[FS_R_OBS].count;
	h->tsc_mult = h->hdr->fx.tsc_mult;
	h->gen_banks = h->hdr->fx.gen_banks;
	h->user_n = h->user_mask + 1;
	h->req_n = h->req_mask + 1;
	if (h->gen_banks > 1) {
		/* every bank in the appended regions; masks stay one bank's */
		h->user = (struct fs_kent *)(b + r[FS_R_USER_BANKS].off);
		h->user_n = r[FS_R_USER_BANKS].count;
		h->req = (struct fs_kent *)(b + r[FS_R_REQ_BANKS].off);
		h->req_n = r[FS_R_REQ_BANKS].count;
	}
}

/*
 * Handle mappings.  All handles of a process that attach one segment object
 * (device + inode) the same way (writable or read-only) share one mapping,
 * counted.  A writable mapping is pre-faulted (map_writable: no page fault
 * on the order path), once per process: with a mapping per handle, a
 * process of 64 buyer threads faulted in and kept 64 page tables of the
 * whole segment -- 64 x 600 MiB for a sale of a million orders, minutes of
 * system time before the first order, gigabytes of page tables.  The
 * segment holds no pointer, so where it is mapped matters to nobody; and
 * ThreadSanitizer, which keys its shadow memory by address, sees two
 * threads' handles touch the same word and checks the segment protocol
 * between them (test_threads_shared_map).
 * The table is process-local and guarded by a mutex; open and close take
 * it, the order path never does.  The mutex is held across fork
 * (pthread_atfork), so a child never inherits it locked; the child
 * inherits the table with the mappings it describes, so the counts stay
 * right there too: a child's handle uses the inherited mapping
 * (test_threads_shared_map).  A table full
 * (FS_SHMAP_MAX segments attached at once) maps on its own.
 */
#define FS_SHMAP_MAX 64

static struct fs_shmap {
	dev_t dev;
	ino_t ino;
	int rd;
	uint64_t size;
	void *base;
	unsigned refs;              /* 0: the entry is free */
} fs_shmap[FS_SHMAP_MAX];
static pthread_mutex_t fs_shmap_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fs_shmap_once = PTHREAD_ONCE_INIT;

static void shmap_lock(void)
{
	pthread_mutex_lock(&fs_shmap_mu);
}

static void shmap_unlock(void)
{
	pthread_mutex_unlock(&fs_shmap_mu);
}

static void shmap_atfork(void)
{
	(void)pthread_atfork(shmap_lock, shmap_unlock, shmap_unlock);
}

/*
 * Huge pages where the system allows.  An order touches five to six cache
 * lines at random places of tables sized for the sale; with 4 KiB pages each
 * is also a TLB miss, and under a hypervisor a two-level page walk.  tmpfs
 * can hold an object's pages as 2 MiB folios, and a mapping that starts at
 * a 2 MiB boundary then maps them 2 MiB at a time.  MADV_COLLAPSE (Linux
 * 6.1) makes the folios of a range in place whatever /dev/shm's huge= mount
 * option and shmem_enabled say, but `deny`.  The first process that maps
 * the object writable pays for it, once (0.2 to 3.6 s per GiB measured: it
 * is mostly the kernel's compaction finding free 2 MiB blocks); the folios
 * belong to the object, so every later mapping, in any process, maps them
 * 2 MiB at a time from its first touch.  Whatever refuses (an older kernel,
 * no free huge page, `deny`) leaves 4 KiB pages: the same bytes, slower.
 * A windowed segment's punched one-bank tables (punch_unused) are collapsed
 * around, range by range: MADV_COLLAPSE stops at the first 2 MiB range that
 * holds no page, so one call over the whole object would leave everything
 * after the first hole on 4 KiB pages whenever the holes were punched
 * before a collapse (a segment made before this, or a collapse that found
 * no free 2 MiB block and is tried again by the next attach).
 * bench/RESULTS.md has the measurement (hot, 2 processes, interleaved:
 * 935 k -> 1.25 M orders/s).
 */
#define FS_HUGE_SZ (2ull << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* mmap() at a multiple of FS_HUGE_SZ: reserve a span larger by FS_HUGE_SZ,
 * map over its aligned part, give back the rest.  Plain mmap() if the
 * reservation fails. */
static void *map_aligned(uint64_t size, int prot, int flags, int fd)
{
	char *r, *a;

	r = mmap(NULL, size + FS_HUGE_SZ, PROT_NONE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return mmap(NULL, size, prot, flags, fd, 0);
	a = (char *)(((uintptr_t)r + FS_HUGE_SZ - 1) & ~(uintptr_t)(FS_HUGE_SZ - 1));
	if (mmap(a, size, prot, flags | MAP_FIXED, fd, 0) == MAP_FAILED) {
		int e = errno;

		munmap(r, size + FS_HUGE_SZ);
		errno = e;
		return MAP_FAILED;
	}
	if (a > r)
		munmap(r, (size_t)(a - r));
	munmap(a + size, (size_t)(r + FS_HUGE_SZ - a));
	return a;
}

/* MADV_COLLAPSE [lo, hi) rounded inward to whole huge pages, silently.  A
 * range the kernel finds busy for a moment fails the call with EAGAIN (a
 * page locked, or not yet on its LRU list: once seen as half a segment on
 * 4 KiB pages under a loaded CI); the call is made again, and ranges
 * already huge cost it nothing. */
static void collapse_range(char *base, uint64_t lo, uint64_t hi)
{
	lo = (lo + FS_HUGE_SZ - 1) & ~(FS_HUGE_SZ - 1);
	hi &= ~(FS_HUGE_SZ - 1);
	for (int t = 0; hi > lo && t < 4; t++)
		if (madvise(base + lo, hi - lo, MADV_COLLAPSE) == 0 || errno != EAGAIN)
			break;
}

/* The whole object but a windowed segment's punched tables, in offset order
 * (test_windowed_segment_on_4_kib_pages_is_collapsed_around_its_holes). */
static void seg_collapse(char *base, uint64_t size, const struct fs_hdr_fixed *fx)
{
	uint64_t lo = 0;

	if (fx->gen_banks > 1) {
		const struct fs_region *u = &fx->region[FS_R_USER], *q = &fx->region[FS_R_REQ];
		const struct fs_region *holes[2] = { u->off <= q->off ? u : q, u->off <= q->off ? q : u };

		for (int k = 0; k < 2; k++) {
			collapse_range(base, lo, holes[k]->off);
			lo = holes[k]->off + ((holes[k]->size + 4095) & ~4095ull);
		}
	}
	collapse_range(base, lo, size);
}

/* A writable mapping, huge where the system allows, every page faulted in
 * (no page fault on the order path).  The collapse comes first, so the
 * pre-fault maps 2 MiB at a time rather than building 4 KiB page tables
 * for the collapse to tear down.  MADV_POPULATE_WRITE is Linux 5.14;
 * before it, MAP_POPULATE over the same range. */
static void *map_writable(int fd, uint64_t size, const struct fs_hdr_fixed *fx)
{
	char *p = map_aligned(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd);

	if (p == MAP_FAILED)
		return p;
	seg_collapse(p, size, fx);
	if (madvise(p, size, MADV_POPULATE_WRITE) != 0 &&
	    mmap(p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) ==
	            MAP_FAILED) {
		int e = errno;

		munmap(p, size);
		errno = e;
		return MAP_FAILED;
	}
	return p;
}

static void *seg_map(int fd, const struct stat *st, uint64_t size, int rd,
                     const struct fs_hdr_fixed *fx)
{
	void *p = MAP_FAILED;
	int i, free_i = -1;

	(void)pthread_once(&fs_shmap_once, shmap_atfork);
	shmap_lock();
	for (i = 0; i < FS_SHMAP_MAX; i++) {
		struct fs_shmap *m = &fs_shmap[i];

		if (m->refs == 0) {
			if (free_i < 0)
				free_i = i;
		} else if (m->dev == st->st_dev && m->ino == st->st_ino && m->rd == rd &&
		           m->size == size) {
			m->refs++;
			p = m->base;
			goto out;
		}
	}
	p = rd ? map_aligned(size, PROT_READ, MAP_SHARED, fd) : map_writable(fd, size, fx);
	if (p != MAP_FAILED && free_i >= 0)
		fs_shmap[free_i] = (struct fs_shmap){ st->st_dev, st->st_ino, rd, size, p, 1 };
out:
	shmap_unlock();
	return p;
}

static void seg_unmap(void *base, uint64_t size)
{
	int i;

	shmap_lock();
	for (i = 0; i < FS_SHMAP_MAX; i++)
		if (fs_shmap[i].refs != 0 && fs_shmap[i].base == base) {
			if (--fs_shmap[i].refs == 0)
				munmap(base, size);
			shmap_unlock();
			return;
		}
	shmap_unlock();
	munmap(base, size);          /* the table was full when it was mapped */
}

static int slot_claim(flash_t *h);

/* A windowed segment never reads its one-bank tables (FS_R_USER, FS_R_REQ):
 * give their pages back to tmpfs (a hole reads as zeros). */
static void punch_unused(int fd, const struct fs_hdr_fixed *fx)
{
	const int which[2] = { FS_R_USER, FS_R_REQ };

	for (int i = 0; i < 2; i++)
		(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		                (off_t)fx->region[which[i]].off,
		                (off_t)((fx->region[which[i]].size + 4095) & ~4095ull));
}

/*
 * May this process use an object owned by @p st?  Its owner may; for a 0660
 * object (the mode that shares with a group), so may a member of its group:
 * the effective gid or one of the supplementary groups.  The group check is
 * what the kernel already allowed the open for; it is repeated so that a
 * 0600 object of another user is refused by name (FLASH_EOWNER) however it
 * was opened (root opens anything).
 */
static int owner_ok(const struct stat *st)
{
	gid_t groups[256];
	int n;

	if (st->st_uid == geteuid())
		return 1;
	if ((st->st_mode & 07777) != 0660)
		return 0;
	if (st->st_gid == getegid())
		return 1;
	n = getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == st->st_gid)
			return 1;
	return 0;
}

int flash_open(const char *name, unsigned flags, flash_t **out)
{
	char path[256];
	struct stat st;
	struct fs_hdr_fixed fx;
	flash_t *h;
	int fd, rc, rd;

	if (out == NULL || (flags & ~FLASH_RDONLY) != 0)
		return FLASH_EINVAL;
	if ((rc = name_check(name, path, sizeof(path))) != FLASH_OK)
		return rc;
	rd = (flags & FLASH_RDONLY) != 0;
	/* O_NONBLOCK: opening a FIFO someone planted under the name returns at
	 * once instead of waiting for a writer; a regular file ignores it */
	fd = shm_open(path, (rd ? O_RDONLY : O_RDWR) | O_NONBLOCK, 0);
	/* glibc's shm_open() turns EISDIR into EINVAL; the name and flags are
	 * checked already, so EINVAL here means a directory has the name */
	if (fd < 0)
		return errno == EINVAL ? FLASH_ENOTREG : errno_rc(errno);
	if (fstat(fd, &st) != 0) {
		rc = errno_rc(errno);
		goto fail_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = FLASH_ENOTREG;
		goto fail_close;
	}
	if (!owner_ok(&st)) {
		rc = FLASH_EOWNER;
		goto fail_close;
	}
	if ((st.st_mode & 07777) != 0600 && (st.st_mode & 07777) != 0660) {
		rc = FLASH_EMODE;
		goto fail_close;
	}
	if (st.st_size < (off_t)sizeof(struct fs_hdr)) {
		rc = FLASH_ESIZE;
		goto fail_close;
	}
	/* read the fixed header once, into a local: validate the copy */
	if (pread(fd, &fx, sizeof(fx), 0) != (ssize_t)sizeof(fx)) {
		rc = FLASH_ESYS;
		goto fail_close;
	}
	if (fx.magic != FS_MAGIC) {
		rc = FLASH_EMAGIC;
		goto fail_close;
	}
	if (fx.version != FS_LAYOUT_VERSION) {
		rc = FLASH_EVERSION;
		goto fail_close;
	}
	if (fx.checksum != fs_fnv(&fx, offsetof(struct fs_hdr_fixed, checksum))) {
		rc = FLASH_ECHECKSUM;
		goto fail_close;
	}
	if (fx.hdr_size != sizeof(struct fs_hdr)) {
		rc = FLASH_ELAYOUT;
		goto fail_close;
	}
	if ((uint64_t)st.st_size != fx.seg_size) {
		rc = FLASH_ESIZE;
		goto fail_close;
	}
	if (fx.mode != (st.st_mode & 07777)) {
		rc = FLASH_EMODE;
		goto fail_close;
	}
	if ((rc = region_check(&fx)) != FLASH_OK)
		goto fail_close;

	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		rc = FLASH_ENOMEM;
		goto fail_close;
	}
	h->base = seg_map(fd, &st, fx.seg_size, rd, &fx);
	if (h->base == MAP_FAILED) {
		rc = errno_rc(errno);
		free(h);
		goto fail_close;
	}
	if (!rd && fx.gen_banks > 1)
		punch_unused(fd, &fx);   /* the pre-fault faulted them in again */
	close(fd);
	h->size = fx.seg_size;
	memcpy(h->path, path, sizeof(h->path));
	h->hdr = (struct fs_hdr *)(void *)h->base;
	/* the mapping could differ from the copy we checked (a writer racing a
	 * corrupting attach): use the checked copy's geometry, never the live one */
	if (memcmp(&h->hdr->fx, &fx, sizeof(fx)) != 0) {
		seg_unmap(h->base, h->size);
		free(h);
		return FLASH_ECHECKSUM;
	}
	bind_regions(h);
	h->pid = getpid();
	h->fork_gen = fs_fork_gen();
	h->owner_thread = fs_thread_id();
	h->rdonly = rd;
	h->slot = -1;
	h->sync_wait_ms = FLASH_SYNC_WAIT_MS_DEFAULT;
	if (!rd) {
		if ((rc = slot_claim(h)) != FLASH_OK) {
			seg_unmap(h->base, h->size);
			free(h);
			return rc;
		}
		flash_recover(h, NULL);
	}
	*out = h;
	return FLASH_OK;

fail_close:
	close(fd);
	return rc;
}

/*
 * Close is the one call on a handle that any thread of the opening process
 * may make (a finalizer thread, or a thread cleaning up after an owner that
 * ended without closing): it is the handle's last use, so no thread rule is
 * left to keep.  The caller guarantees the owner has returned from its last
 * call (thread join, a mutex, the finalizer's own ordering): the slot's
 * journal is then idle and its writes visible here.
 */
int flash_close(flash_t *h)
{
	if (h == NULL)
		return FLASH_EINVAL;
	if (h->fork_gen != fs_fork_gen()) {
		seg_unmap(h->base, h->size);
		free(h->cursor);
	free(h->dtail);
	free(h->dlive);
		free(h);
		return FLASH_EFORK;
	}
	if (h->slot >= 0) {
		uint64_t mine = FS_CONSUMER(h->gen, (uint32_t)h->slot);

		fs_obs_flush(h);   /* the handle's last call into its slot's figures */
		/* the claim goes before the slot, so it never names a free slot we left */
		(void)ck_pr_cas_64(&h->hdr->consumer, mine, 0);
		uint64_t s = ck_pr_load_64(&h->me->state);
		/* release: FREE keeps the generation, the next claim bumps it */
		ck_pr_store_64(&h->me->state, FS_PSTATE(FS_P_FREE, FS_PGEN(s), 0));
	}
	seg_unmap(h->base, h->size);
	free(h->cursor);
	free(h->dtail);
	free(h->dlive);
	free(h);
	return FLASH_OK;
}

int flash_slot(const flash_t *h)
{
	if (h == NULL)
		return FLASH_EINVAL;
	/* no fork check (a child may log its parent's slot), but the thread's */
	if (h->owner_thread != fs_thread_id())
		return FLASH_EWRONG_THREAD;
	return h->slot;
}

/* ---------------------------------------------------------------- process table */

/*
 * Liveness.  A slot names its holder by an identity that survives pid
 * reuse: the pid in the state word and, beside it, the start time of that
 * pid (field 22 of /proc/PID/stat, clock ticks since boot).  Both are
 * written by one 16-byte CAS -- the claim (CLAIM) and a recoverer's
 * takeover (RECOVERING) -- and only the state word changes afterwards
 * (CLAIM -> ALIVE, -> FREE), so every state that names a process names it
 * with its start time.  A pid reused by another process has another start
 * time: the slot's holder is dead.  (Start times are in ticks: a pid would
 * have to be reused within one tick, 10 ms, to pass; pid_max wraps far more
 * slowly than that.)
 *
 * A process is alive while any of its threads runs.  When the main thread
 * has called pthread_exit(), /proc/PID/stat shows the leader as a zombie
 * while the other threads go on: the thread group (/proc/PID/task) decides.
 * When the answer cannot be read (no descriptor left, /proc unreadable) the
 * process counts as alive if the pid exists: a slot is never recovered on a
 * guess, it is only recovered later.
 */

/*
 * Read field 3 (state) and field 22 (starttime) of @p path (a
 * /proc/.../stat file).  Returns 0, or -1 if it cannot be read or parsed.
 */
static int stat_read(const char *path, uint64_t *start, char *state)
{
	char buf[1024];
	ssize_t n;
	int fd;
	char *p;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	/* p is at field 3; skip to field 22 */
	for (int f = 3; f < 22; f++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -1;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

static int proc_stat(pid_t pid, uint64_t *start, char *state)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return stat_read(path, start, state);
}

/*
 * The leader of @p pid is a zombie: does another thread of the group still
 * run?  1 yes (or cannot tell), 0 no thread left.
 */
static int group_runs(pid_t pid)
{
	char path[96];
	struct dirent *d;
	DIR *dir;
	int runs = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL)
		return errno == ENOENT ? 0 : 1;   /* reaped meanwhile, or cannot tell */
	while (!runs && (d = readdir(dir)) != NULL) {
		uint64_t st_ignored;
		char state = 0;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/stat", (int)pid, d->d_name);
		if (stat_read(path, &st_ignored, &state) == 0 && state != 'Z' && state != 'X')
			runs = 1;                     /* a thread that ended is simply gone */
	}
	closedir(dir);
	return runs;
}

/* Does the process (@p pid, started at @p start) still run code? */
static int pid_alive(pid_t pid, uint64_t start)
{
	uint64_t st = 0;
	char state = 0;

	if (pid <= 0)
		return 0;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return 0;
	if (proc_stat(pid, &st, &state) != 0)
		return kill(pid, 0) == 0 || errno != ESRCH;
	if (st != start)
		return 0;   /* the pid was reused */
	if (state == 'Z' || state == 'X')
		return group_runs(pid);
	return 1;
}

/* The (state, start_time) pair of a slot, for the 16-byte CAS. */
_Static_assert(offsetof(struct fs_proc, state) == 0 && offsetof(struct fs_proc, start_time) == 8 &&
               _Alignof(struct fs_proc) >= 16, "state and start_time form one 16-byte word");
static inline uint64_t *proc_pair(struct fs_proc *p)
{
	return (uint64_t *)(void *)p;
}

/*
 * Load a slot's (state, start_time) as one pair: the state word read again
 * after the start time is unchanged, so the start time belongs to it.
 */
static void proc_ident_load(const struct fs_proc *p, uint64_t *state, uint64_t *start)
{
	uint64_t s;

	do {
		s = ck_pr_load_64(&p->state);
		ck_pr_fence_load();   /* start time after the state word ... */
		*start = ck_pr_load_64(&p->start_time);
		ck_pr_fence_load();   /* ... and the state word again after it */
	} while (ck_pr_load_64(&p->state) != s);
	*state = s;
}

/* Does a process hold slot @p slot in the state @p state (CLAIM, ALIVE or
 * RECOVERING) and still run?  A state word that has moved on names a holder
 * that left: 0. */
int fs_proc_alive(flash_t *h, uint32_t slot, uint64_t state)
{
	uint64_t s, start;

	proc_ident_load(&h->proc[slot], &s, &start);
	if (s != state)
		return 0;
	switch (FS_PKIND(state)) {
	case FS_P_CLAIM:
	case FS_P_ALIVE:
	case FS_P_RECOVERING:
		return pid_alive(FS_PPID(state), start);
	default:
		return 0;
	}
}

/*
 * The RECOVERING transition: if slot @p slot is held (CLAIM, ALIVE,
 * RECOVERING, or a kind no code writes) by a process that no longer runs,
 * take it for recovery -- one 16-byte CAS from exactly the (state, start
 * time) pair that was judged dead to RECOVERING(this process, its start
 * time).  A CAS that fails means the slot moved (its holder was not dead
 * after all, another recoverer won, the slot was freed): not taken.
 * Returns 1 if this caller now recovers the slot.
 */
int fs_proc_take_dead(flash_t *h, uint32_t slot)
{
	struct fs_proc *p = &h->proc[slot];
	uint64_t cmp[2], set[2];

	proc_ident_load(p, &cmp[0], &cmp[1]);
	switch (FS_PKIND(cmp[0])) {
	case FS_P_FREE:
		return 0;
	case FS_P_CLAIM:
	case FS_P_ALIVE:
	case FS_P_RECOVERING:
		if (pid_alive(FS_PPID(cmp[0]), cmp[1]))
			return 0;
		break;
	default:
		break;
	}
	set[0] = FS_PSTATE(FS_P_RECOVERING, FS_PGEN(cmp[0]), h->pid);
	set[1] = h->start_time;
	/* a full barrier: the recoverer reads the dead slot's journal after it */
	return ck_pr_cas_64_2(proc_pair(p), cmp, set);
}

/*
 * Is the operation named by @p tag still able to make progress?  Only if its
 * slot's process runs and the slot's journal is working on that very tag: a
 * tag left behind by an operation that is over (or a tag scribbled into the
 * segment) belongs to nobody.
 */
int fs_tag_alive(flash_t *h, uint64_t tag)
{
	uint32_t slot = FS_TAG_SLOT(tag);
	const struct fs_journal *j;

	if (fs_check_slot(h, slot) != FLASH_OK)
		return 0;
	j = &h->jr[slot];
	if (!fs_op_names(j, tag))
		return 0;
	if ((int)slot == h->slot)
		return 1;
	return fs_proc_alive(h, slot, ck_pr_load_64(&h->proc[slot].state));
}

/*
 * Wait while *word still reads @p seen (an entry held by another in-flight
 * operation).  If its owner is found dead, run recovery, which moves the
 * word.  A word that still names an operation nobody runs after recovery
 * can never move: FLASH_ECORRUPT instead of waiting forever.
 */
int fs_wait_tag(flash_t *h, const uint64_t *word, uint64_t seen)
{
	for (unsigned spin = 0; ck_pr_load_64(word) == seen; spin++) {
		if (spin < 64) {
			ck_pr_stall();
			continue;
		}
		if ((spin & 63) == 0 && !fs_tag_alive(h, FS_VAL(seen))) {
			uint64_t tag = FS_VAL(seen);
			uint32_t slot = FS_TAG_SLOT(tag);

			flash_recover(h, NULL);
			/* still there, and no journal names it: nobody ever moves it
			 * (a dead owner that another process is recovering still names it) */
			if (ck_pr_load_64(word) == seen &&
			    (fs_check_slot(h, slot) != FLASH_OK ||
			     !fs_op_names(&h->jr[slot], tag)))
				return FLASH_ECORRUPT;
			sched_yield();
			continue;
		}
		sched_yield();
	}
	return FLASH_OK;
}

/*
 * The unused order numbers a slot keeps for its next handle (order.c:
 * order_next_number) came from the header's counter: they end at or below
 * it, in its box.  A range that does not (the counter or the slot scribbled)
 * would number orders that ono_find calls another box's or never issued: it
 * is emptied (order_end = order_next, one store into our claimed slot), so
 * the next order takes a chunk from the counter.  Its numbers are skipped;
 * order_next stays, and with it flash_orders_max.
 */
static void range_check(flash_t *h, struct fs_proc *p)
{
	uint64_t top = ck_pr_load_64(&h->hdr->order_next);
	uint64_t next = ck_pr_load_64(&p->order_next), end = ck_pr_load_64(&p->order_end);

	if (next == 0 || next >= end ||
	    (end <= top && FS_ONO_BOX(next) == FS_ONO_BOX(top) && FS_ONO_BOX(end - 1) == FS_ONO_BOX(top)))
		return;
	ck_pr_store_64(&p->order_end, next);
}

/*
 * Claim a free slot of the process table for @p h.  The process's identity
 * (pid, start time) is read first: without it no later checker could tell
 * this process from one that reused its pid, and a wrong start time would
 * get a running operation rolled back.  So a process that cannot read
 * /proc/PID/stat (no free descriptor, /proc not mounted) is refused:
 * FLASH_ESYS, nothing changed.  The slot then moves FREE -> CLAIM(gen, pid)
 * with the start time in the same 16-byte CAS, -> ALIVE; the order numbers
 * it inherits are checked then (range_check).
 * Crash points: "attach" 1 (in CLAIM).
 */
static int slot_claim(flash_t *h)
{
	uint64_t start = 0;
	char state;

	if (proc_stat(h->pid, &start, &state) != 0)
		return FLASH_ESYS;
	h->start_time = start;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < h->proc_cap; i++) {
			struct fs_proc *p = &h->proc[i];
			uint64_t cmp[2], set[2];
			uint32_t gen;

			proc_ident_load(p, &cmp[0], &cmp[1]);
			if (FS_PKIND(cmp[0]) != FS_P_FREE)
				continue;
			gen = FS_PGEN(cmp[0]) + 1;
			set[0] = FS_PSTATE(FS_P_CLAIM, gen, h->pid);
			set[1] = start;
			if (!ck_pr_cas_64_2(proc_pair(p), cmp, set))
				continue;
			FS_CRASH("attach", 1);
			/* the CAS was a full barrier; the start time is already there */
			ck_pr_store_64(&p->state, FS_PSTATE(FS_P_ALIVE, gen, h->pid));
			range_check(h, p);
			h->slot = (int)i;
			h->gen = gen;
			h->me = p;
			h->j = &h->jr[i];
			h->my_obs = &h->obs[i];
			return FLASH_OK;
		}
		/* full: free the slots of dead processes, then look once more */
		h->slot = -1;
		h->me = NULL;
		if (pass == 0) {
			flash_t tmp = *h;
			tmp.rdonly = 0;
			flash_recover(&tmp, NULL);
		}
	}
	return FLASH_ENOPROC;
}

/* ---------------------------------------------------------------- reclamation */

/*
 * Window a fresh segment (flashstock.h, section 11): the object grows by the
 * two banked regions at its end (layout()), nothing in it moves.  Order:
 * grow and reserve the object; map it anew; the fixed header with magic 0
 * first, so a kill from here on leaves a segment every attach refuses
 * (FLASH_EMAGIC / FLASH_ESIZE / FLASH_ECHECKSUM); the generations; magic and
 * checksum last.  The one-bank tables' pages are punched out (tmpfs gives
 * them back; nobody reads them again).  The admin mutex is not taken: it
 * lives in the mapping being replaced, and no other handle may be attached
 * anyway (checked: every other process slot free).
 */
int flash_seg_reclaim_set(flash_t *h, const struct flash_reclaim_opts *o)
{
	struct flash_reclaim_opts d = { .req_window_s = 86400, .user_gen_s = 86400 };
	struct fs_hdr_fixed fx;
	struct stat st;
	uint64_t size;
	void *nb;
	int fd, rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (o == NULL)
		o = &d;
	for (int i = 0; i < 6; i++)
		if (o->pad[i] != 0)
			return FLASH_EINVAL;
	if (o->req_window_s == 0 || o->req_window_s > RECLAIM_S_MAX || o->user_gen_s == 0 ||
	    o->user_gen_s > RECLAIM_S_MAX)
		return FLASH_EINVAL;
	if (h->gen_banks != 1 || ck_pr_load_32(&h->hdr->req_used) != 0 ||
	    ck_pr_load_32(&h->hdr->users_used) != 0)
		return FLASH_EINVAL;
	for (uint32_t i = 0; i < h->proc_cap; i++)
		if ((int)i != h->slot && FS_PKIND(ck_pr_load_64(&h->proc[i].state)) != FS_P_FREE)
			return FLASH_EBUSY;
	fx = h->hdr->fx;
	fx.gen_banks = FS_GEN_BANKS;
	fx.req_window_s = o->req_window_s;
	fx.user_gen_s = o->user_gen_s;
	size = layout(&fx.opts, FS_GEN_BANKS, fx.region);
	fx.seg_size = size;
	fd = shm_open(h->path, O_RDWR, 0);
	if (fd < 0)
		return errno_rc(errno);
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != h->size) {
		close(fd);
		return FLASH_ESYS;
	}
	if (ftruncate(fd, (off_t)size) != 0) {
		rc = errno_rc(errno);
		close(fd);
		return rc;
	}
	if ((rc = seg_reserve(fd, size)) != FLASH_OK || fstat(fd, &st) != 0 ||
	    (nb = seg_map(fd, &st, size, 0, &fx)) == MAP_FAILED) {
		if (ftruncate(fd, (off_t)h->size) != 0)
			rc = FLASH_ESYS;
		close(fd);
		return rc != FLASH_OK ? rc : FLASH_ENOMEM;
	}
	fs_obs_flush(h);   /* the kept call points into the old mapping */
	seg_unmap(h->base, h->size);
	h->base = nb;
	h->size = size;
	h->hdr = (struct fs_hdr *)nb;
	h->lw_lock = NULL;
	h->hdr->fx.magic = 0;
	ck_pr_fence_store();
	fx.magic = 0;
	h->hdr->fx = fx;
	for (int t = 0; t < 2; t++) {
		struct fs_gentab *g = &h->hdr->gen[t];

		memset(g, 0, sizeof(*g));
		g->cur_start_ns = fs_now_ns();
		g->bank[0] = FS_BANK(FS_BANK_USED, 0, 0);
	}
	punch_unused(fd, &fx);   /* the one-bank tables are never read again */
	close(fd);
	ck_pr_fence_store();
	h->hdr->fx.magic = FS_MAGIC;
	h->hdr->fx.checksum = fs_fnv(&h->hdr->fx, offsetof(struct fs_hdr_fixed, checksum));
	bind_regions(h);
	h->me = &h->proc[h->slot];
	h->j = &h->jr[h->slot];
	h->my_obs = &h->obs[h->slot];
	return FLASH_OK;
}

/* ---------------------------------------------------------------- admin mutex */

/*
 * The admin mutex serialises the rare catalog and lock-name inserts.  It is
 * robust: if its holder died, the next locker gets EOWNERDEAD, finishes or
 * undoes the dead holder's catalog operation, recounts the lock names (an
 * insert killed between publishing a name and counting it), and marks the
 * mutex consistent.
 */
int fs_admin_lock(flash_t *h)
{
	/* bounded: holders keep it for microseconds, a dead one is reported at
	 * once (robust); only a corrupt lock word can make us wait this long */
	struct timespec until;
	int rc;

	/* pthread_mutex_timedlock (CLOCK_REALTIME) rather than clocklock: the
	 * sanitizers intercept it, and a clock step only stretches the bound */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	rc = pthread_mutex_timedlock(&h->hdr->admin, &until);
	if (rc == ETIMEDOUT)
		return FLASH_EBUSY;

	if (rc == EOWNERDEAD) {
		uint32_t holder = ck_pr_load_32(&h->hdr->cat_holder);

		if (holder != 0 && fs_check_slot(h, holder - 1) == FLASH_OK)
			fs_catalog_repair(h, holder - 1);
		fs_lock_repair(h);   /* a lock-name insert it may have left uncounted */
		ck_pr_store_32(&h->hdr->cat_holder, 0);
		pthread_mutex_consistent(&h->hdr->admin);
		rc = 0;
	}
	if (rc != 0)
		return FLASH_ESYS;
	ck_pr_store_32(&h->hdr->cat_holder, (uint32_t)h->slot + 1);
	return FLASH_OK;
}

void fs_admin_unlock(flash_t *h)
{
	ck_pr_store_32(&h->hdr->cat_holder, 0);
	pthread_mutex_unlock(&h->hdr->admin);
}

/* ---------------------------------------------------------------- identity and consumer claim */

/*
 * Is the claim word @p c held by a live handle?  It is iff its slot's state
 * is ALIVE with the claim's generation and that process runs (pid and start
 * time: a reused pid is not the holder).  A claim whose slot was released,
 * recovered or taken again carries an older generation: free.
 */
int fs_consumer_live(flash_t *h, uint64_t c, int32_t *pid)
{
	uint32_t slot = FS_CONSUMER_SLOT(c);
	uint64_t st;

	*pid = 0;
	if (c == 0 || slot >= h->proc_cap)
		return 0;
	st = ck_pr_load_64(&h->proc[slot].state);
	if (FS_PKIND(st) != FS_P_ALIVE || FS_PGEN(st) != FS_CONSUMER_GEN(c))
		return 0;
	if (!fs_proc_alive(h, slot, st))
		return 0;
	*pid = FS_PPID(st);
	return 1;
}

int flash_ident_get(flash_t *h, struct flash_ident *out)
{
	int rc;
	int32_t pid;
	uint64_t c;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	memset(out, 0, sizeof(*out));
	/* plain loads: each word is written whole by the consumer; a reader
	 * racing a change sees the old or the new value, either is true */
	out->incarnation = ck_pr_load_64(&h->hdr->incarnation);
	out->wal_lsn = ck_pr_load_64(&h->hdr->wal_lsn);
	c = ck_pr_load_64(&h->hdr->consumer);
	if (fs_consumer_live(h, c, &pid)) {
		out->consumer_pid = pid;
		out->consumer_slot = FS_CONSUMER_SLOT(c);
	}
	return FLASH_OK;
}

int flash_ident_adopt(flash_t *h, uint64_t incarnation)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (incarnation == 0)
		return FLASH_EINVAL;
	if (ck_pr_load_64(&h->hdr->incarnation) == incarnation)
		return FLASH_OK;
	if (ck_pr_load_64(&h->hdr->wal_lsn) != 0)
		return FLASH_EEXIST;
	/* a store is enough: only the consumer (recovery, before it serves)
	 * writes the word, and a daemon reads it only after it holds the claim */
	ck_pr_store_64(&h->hdr->incarnation, incarnation);
	return FLASH_OK;
}

int flash_ident_lsn_set(flash_t *h, uint64_t lsn)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	/* one writer (the consumer); readers want the value, not an order
	 * with other stores: the WAL it describes is durable before the call */
	ck_pr_store_64(&h->hdr->wal_lsn, lsn);
	return FLASH_OK;
}

/*
 * Take the claim: free (0) or held by a dead handle -> CAS to ours.  The CAS
 * is the only write, so of two claimants that saw the same word exactly one
 * wins; the loser reads the winner's claim, finds it live, and gets
 * FLASH_EBUSY.  Bounded: each failed CAS means the word moved to a claim we
 * then examine, and a live one ends the loop.
 */
int flash_consumer_claim(flash_t *h, int32_t *holder_pid)
{
	int rc;
	int32_t pid;

	/* a destroyed segment may still be drained: the claim is how a daemon
	 * becomes the one handle whose writes it still takes (enter.c) */
	if ((rc = fs_enter(h, 1)) != FLASH_OK && rc != FLASH_EDESTROYED)
		return rc;
	if (holder_pid != NULL)
		*holder_pid = 0;
	uint64_t mine = FS_CONSUMER(h->gen, (uint32_t)h->slot);
	for (unsigned i = 0; i < 64; i++) {
		uint64_t c = ck_pr_load_64(&h->hdr->consumer);

		if (c == mine)
			return FLASH_OK;
		if (fs_consumer_live(h, c, &pid)) {
			if (holder_pid != NULL)
				*holder_pid = pid;
			return FLASH_EBUSY;
		}
		if (ck_pr_cas_64(&h->hdr->consumer, c, mine))
			return FLASH_OK;
	}
	return FLASH_EBUSY;
}

int flash_consumer_release(flash_t *h)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	(void)ck_pr_cas_64(&h->hdr->consumer, FS_CONSUMER(h->gen, (uint32_t)h->slot), 0);
	return FLASH_OK;
}
