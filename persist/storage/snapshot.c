/*
 * snapshot.c -- segment snapshots inside the daemon (see snapshot.h).
 *
 * Divisions: 1. codes and names, 2. the file (write, open and check, list),
 * 3. the reconciler's seed (the rebuild itself is rebuild.c), 4. the shadow
 * and snap_step(),
 * 5. the thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "pio.h"
#include "plog.h"
#include "worker.h"

/* ------------------------------------------------------------------------
 * 1. Codes and names
 * ------------------------------------------------------------------------ */

void snap_path(char *buf, size_t n, const char *dir, uint64_t lsn)
{
	snprintf(buf, n, "%s/snap-%016" PRIx64 ".fss", dir, lsn);
}

static void snap_tmp_path(char *buf, size_t n, const char *dir, uint64_t lsn)
{
	snprintf(buf, n, "%s/snap-%016" PRIx64 ".tmp", dir, lsn);
}

/* "snap-<16 lowercase hex>.<ext>": 1 and *lsn on a match. */
static int snap_name_lsn(const char *name, const char *ext, uint64_t *lsn)
{
	return pio_hex16_name(name, "snap-", ext, lsn);
}

/* ------------------------------------------------------------------------
 * 2. The file
 * ------------------------------------------------------------------------ */

static uint64_t snap_round_page(uint64_t n)
{
	return (n + SNAP_PAGE - 1) & ~(uint64_t)(SNAP_PAGE - 1);
}

static int snap_page_zero(const unsigned char *p, size_t n)
{
	const uint64_t *w = (const uint64_t *)(const void *)p;
	for (size_t i = 0; i < n / 8; i++)
		if (w[i] != 0)
			return 0;
	for (size_t i = n & ~(size_t)7; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static uint32_t snap_crc(const struct snap_hdr *h, const void *fold, const void *img)
{
	uint32_t c = crc32c(0, h, offsetof(struct snap_hdr, sh_crc));
	c = crc32c(c, fold, h->sh_fold_count * h->sh_fold_elem);
	/* the image in 1 MiB steps: crc32c() takes a size_t, the image may be large */
	const unsigned char *p = img;
	for (uint64_t off = 0; off < h->sh_seg_bytes; off += 1u << 20) {
		uint64_t n = h->sh_seg_bytes - off < (1u << 20) ? h->sh_seg_bytes - off : (1u << 20);
		c = crc32c(c, p + off, (size_t)n);
	}
	return c;
}

int snap_write(const char *dir, uint64_t lsn, const struct flash_seg_opts *opts,
               const struct fold_sku *fold, size_t nfold,
               const void *img, uint64_t img_bytes, char *err, size_t errlen)
{
	if (dir == NULL || opts == NULL || img == NULL || (fold == NULL && nfold > 0) ||
	    strlen(dir) > 4000 || lsn == 0 || img_bytes == 0)
		return FLASH_EINVAL;
	struct snap_hdr *h = calloc(1, SNAP_PAGE);
	if (h == NULL)
		return FLASH_ENOMEM;
	h->sh_magic = SNAP_MAGIC;
	h->sh_version = SNAP_VERSION;
	h->sh_hdr_bytes = sizeof *h;
	h->sh_lsn = lsn;
	h->sh_seg_bytes = img_bytes;
	h->sh_fold_off = SNAP_PAGE;
	h->sh_fold_count = nfold;
	h->sh_fold_elem = sizeof(struct fold_sku);
	h->sh_opts_bytes = sizeof(struct flash_seg_opts);
	h->sh_img_off = SNAP_PAGE + snap_round_page(nfold * sizeof(struct fold_sku));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->sh_created_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	h->sh_opts = *opts;
	h->sh_crc = snap_crc(h, fold, img);

	char tmp[4200], fin[4200];
	snap_tmp_path(tmp, sizeof tmp, dir, lsn);
	snap_path(fin, sizeof fin, dir, lsn);
	const char *step = "open";
	int fd = pio_open_reg(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto io;
	/* the whole size first: pages never written read as zeros (holes) */
	step = "ftruncate";
	if (pio_ftruncate(fd, (off_t)(h->sh_img_off + img_bytes)) != 0)
		goto io_fd;
	step = "write";
	if (nfold > 0 && pio_pwrite_full(fd, fold, nfold * sizeof *fold, (off_t)h->sh_fold_off) != 0)
		goto io_fd;
	/* the image: one pwrite per run of pages that are not all zero */
	const unsigned char *p = img;
	uint64_t off = 0;
	while (off < img_bytes) {
		uint64_t n = img_bytes - off < SNAP_PAGE ? img_bytes - off : SNAP_PAGE;
		if (snap_page_zero(p + off, (size_t)n)) {
			off += n;
			continue;
		}
		uint64_t end = off + n;
		while (end < img_bytes && end - off < (8u << 20)) {
			uint64_t m = img_bytes - end < SNAP_PAGE ? img_bytes - end : SNAP_PAGE;
			if (snap_page_zero(p + end, (size_t)m))
				break;
			end += m;
		}
		if (pio_pwrite_full(fd, p + off, (size_t)(end - off), (off_t)(h->sh_img_off + off)) != 0)
			goto io_fd;
		off = end;
	}
	/* the header last: a file whose header is not written has no magic */
	if (pio_pwrite_full(fd, h, SNAP_PAGE, 0) != 0)
		goto io_fd;
	step = "fdatasync";
	if (pio_fdatasync(fd) != 0)
		goto io_fd;
	step = "close";
	if (pio_close(fd) != 0)
		goto io;       /* fd is gone either way: only io's cleanup follows */
	step = "rename";
	if (pio_rename(tmp, fin) != 0)
		goto io;
	step = "directory fsync";
	if (pio_fsync_dir(dir) != 0) {
		/* named but perhaps not durable: it must not be believed */
		int e = errno;
		(void)pio_unlink(fin);
		errno = e;
		goto io;
	}
	free(h);
	return FLASH_OK;
io_fd:
	{
		int e = errno;
		pio_close(fd);
		errno = e;
	}
io:
	{
		int e = errno;
		if (err != NULL)
			snprintf(err, errlen, "snapshot %s: %s failed: %s (tmp file removed)", fin, step,
			         pio_strerror(e));
		(void)pio_unlink(tmp);
		free(h);
		errno = e;
	}
	return FLASH_ESYS;
}

void snap_file_close(struct snap_file *f)
{
	if (f == NULL)
		return;
	if (f->sf_map != NULL)
		pio_munmap(f->sf_map, f->sf_map_len);
	f->sf_map = NULL;
	f->sf_hdr = NULL;
	f->sf_fold = NULL;
	f->sf_img = NULL;
}

int snap_file_open(const char *path, struct snap_file *f)
{
	if (path == NULL || f == NULL || strlen(path) >= sizeof f->sf_path)
		return FLASH_EINVAL;
	memset(f, 0, sizeof *f);
	strcpy(f->sf_path, path);
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return FLASH_ESYS;
	struct stat st;
	if (pio_fstat(fd, &st) != 0) {
		int e = errno;
		pio_close(fd);
		errno = e;
		return FLASH_ESYS;
	}
	if ((uint64_t)st.st_size < SNAP_PAGE) {
		pio_close(fd);
		return FLASH_ESNAP_CORRUPT;
	}
	void *m = pio_mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	pio_close(fd);
	if (m == MAP_FAILED) {
		errno = e;
		return FLASH_ESYS;
	}
	f->sf_map = m;
	f->sf_map_len = (size_t)st.st_size;
	/* one copy of the header, checked, then compared with the mapping */
	struct snap_hdr h;
	memcpy(&h, m, sizeof h);
	uint64_t size = (uint64_t)st.st_size;
	if (h.sh_magic != SNAP_MAGIC || h.sh_version != SNAP_VERSION ||
	    h.sh_hdr_bytes != sizeof h ||
	    (h.sh_fold_elem != sizeof(struct fold_sku) && h.sh_fold_elem != SNAP_FOLD_ELEM_V1) ||
	    h.sh_opts_bytes != sizeof(struct flash_seg_opts) || h.sh_fold_off != SNAP_PAGE ||
	    h.sh_fold_count > (size / h.sh_fold_elem) || h.sh_lsn == 0 ||
	    h.sh_img_off != SNAP_PAGE + snap_round_page(h.sh_fold_count * h.sh_fold_elem) ||
	    h.sh_img_off > size || h.sh_seg_bytes != size - h.sh_img_off || h.sh_seg_bytes == 0 ||
	    snap_crc(&h, (const char *)m + h.sh_fold_off, (const char *)m + h.sh_img_off) != h.sh_crc) {
		snap_file_close(f);
		return FLASH_ESNAP_CORRUPT;
	}
	f->sf_hdr = m;
	f->sf_fold = (const char *)m + h.sh_fold_off;
	f->sf_img = (const char *)m + h.sh_img_off;
	return FLASH_OK;
}

/* The fold section of @p sf seeded into @p f.  A snapshot written before
 * reservations holds shorter entries, without `reserved`: each is read
 * into a whole one, zero there -- no reservation existed then. */
static int snap_fold_seed_file(fold_t *f, const struct snap_file *sf)
{
	uint64_t n = sf->sf_hdr->sh_fold_count;
	uint32_t elem = sf->sf_hdr->sh_fold_elem;

	if (elem == sizeof(struct fold_sku)) {
		struct fold_sku *v = malloc(n ? n * sizeof *v : 1);
		if (v == NULL)
			return FLASH_ENOMEM;
		memcpy(v, sf->sf_fold, n * sizeof *v);   /* the mapping need not be aligned for it */
		int rc = fold_seed(f, v, n);
		free(v);
		return rc;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct fold_sku e;
		memset(&e, 0, sizeof e);
		memcpy(&e, (const char *)sf->sf_fold + i * elem, elem);
		int rc = fold_seed(f, &e, 1);
		if (rc != FLASH_OK)
			return rc;
	}
	return FLASH_OK;
}

static int snap_name_match(const char *name, const void *ext, uint64_t *lsn)
{
	return snap_name_lsn(name, ext, lsn);
}

/* List "snap-*.<ext>" LSNs of @p dir, ascending. */
static int snap_list_ext(const char *dir, const char *ext, uint64_t **lsns, size_t *n)
{
	if (pio_dir_numbers(dir, snap_name_match, ext, lsns, n) == 0)
		return FLASH_OK;
	return errno == ENOMEM ? FLASH_ENOMEM : FLASH_ESYS;
}

int snap_list(const char *dir, uint64_t **lsns, size_t *n)
{
	if (dir == NULL || lsns == NULL || n == NULL || strlen(dir) > 4000)
		return FLASH_EINVAL;
	return snap_list_ext(dir, "fss", lsns, n);
}

/* The newest valid snapshot with min_lsn <= LSN <= max_lsn. */
static int snap_open_newest_in(const char *dir, uint64_t min_lsn, uint64_t max_lsn,
                               struct snap_file *f, plog_fn log, void *log_arg)
{
	uint64_t *lsns;
	size_t n;
	int rc = snap_list(dir, &lsns, &n);
	if (rc != FLASH_OK)
		return rc;
	rc = FLASH_ESNAP_NOENT;
	for (size_t i = n; i-- > 0;) {
		if (lsns[i] < min_lsn)
			break;
		if (lsns[i] > max_lsn)
			continue;
		char path[4200];
		snap_path(path, sizeof path, dir, lsns[i]);
		int frc = snap_file_open(path, f);
		if (frc == FLASH_OK && f->sf_hdr->sh_lsn != lsns[i]) {
			snap_file_close(f);
			frc = FLASH_ESNAP_CORRUPT;
		}
		if (frc == FLASH_OK) {
			rc = FLASH_OK;
			break;
		}
		plogf(log, log_arg, PLOG_ERROR, "snapshot %s: %s%s%s; trying the previous one",
		          path, flash_strerror(frc), frc == FLASH_ESYS ? ": " : "",
		          frc == FLASH_ESYS ? pio_strerror(errno) : "");
	}
	free(lsns);
	return rc;
}

int snap_open_newest(const char *dir, uint64_t min_lsn, struct snap_file *f,
                     plog_fn log, void *log_arg)
{
	return snap_open_newest_in(dir, min_lsn, UINT64_MAX, f, log, log_arg);
}

struct snap_range {
	uint64_t first, last;
};

static int snap_range_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(void)type; (void)p; (void)len;
	struct snap_range *r = arg;
	if (r->first == 0)
		r->first = lsn;
	r->last = lsn;
	return 0;
}

int snap_wal_range(const char *dir, uint64_t *first, uint64_t *last)
{
	struct snap_range r = { 0, 0 };
	struct wal_replay_report rep;
	int rc = wal_replay(dir, 0, snap_range_cb, &r, 0, &rep);
	*first = r.first;
	*last = rep.last_lsn > r.last ? rep.last_lsn : r.last;
	/* a torn tail is the writer's business (serve cuts it); the range of
	 * the good frames is what is asked for */
	if (rc == FLASH_EWAL_ZERO_LEN || rc == FLASH_EWAL_SHORT || rc == FLASH_EWAL_PAST_END || rc == FLASH_EWAL_LONG ||
	    rc == FLASH_EWAL_CRC || rc == FLASH_EWAL_LSN || rc == FLASH_EWAL_PREV)
		rc = FLASH_OK;
	return rc;
}

/* ------------------------------------------------------------------------
 * 3. The reconciler's seed
 * ------------------------------------------------------------------------ */

int snap_fold_seed(const char *dir, fold_t *f, uint64_t max_lsn, uint64_t *from)
{
	*from = 0;
	uint64_t first, last;
	int wrc = snap_wal_range(dir, &first, &last);
	if (wrc == FLASH_ENOMEM)
		return FLASH_ENOMEM;
	if (wrc == FLASH_ESYS)
		return FLASH_ESYS;
	/* a WAL that starts at 1, or one the fold's own replay will report
	 * as corrupt: nothing to seed */
	if (first == 1 || (wrc != FLASH_OK && wrc != FLASH_EWAL_GAP))
		return FLASH_OK;
	struct snap_file sf;
	int rc = snap_open_newest_in(dir, 0, max_lsn ? max_lsn : UINT64_MAX, &sf, NULL, NULL);
	if (rc == FLASH_ESNAP_NOENT)
		return first == 0 ? FLASH_OK : FLASH_ESNAP_GAP;
	if (rc != FLASH_OK)
		return rc;
	/* the newest valid one must be continued by the WAL; an older one
	 * would be too (files go only behind the older of two snapshots),
	 * but the newest is the one recovery uses */
	if (first != 0 && (first > sf.sf_hdr->sh_lsn + 1 || last < sf.sf_hdr->sh_lsn)) {
		snap_file_close(&sf);
		return FLASH_ESNAP_GAP;
	}
	int frc = snap_fold_seed_file(f, &sf);
	*from = sf.sf_hdr->sh_lsn + 1;
	snap_file_close(&sf);
	return frc == FLASH_OK ? FLASH_OK : frc == FLASH_ENOMEM ? FLASH_ENOMEM : FLASH_EINVAL;
}

/* ------------------------------------------------------------------------
 * 4. The shadow and snap_step()
 * ------------------------------------------------------------------------ */

struct snap {
	struct snap_opts    s_o;
	char                s_shadow[256];  /* the shadow segment's name */
	flash_t            *s_sh;           /* handle on the shadow (this thread's) */
	int                 s_made;         /* the shadow exists (unlink at close) */
	fold_t       *s_fold;
	struct flash_seg_opts s_opts;       /* the live segment's options */
	uint64_t            s_lsn;          /* the shadow holds every record <= this */
	uint64_t            s_bytes;        /* WAL bytes replayed since the last snapshot */
	uint64_t            s_last_ms;      /* CLOCK_MONOTONIC of the last snapshot (or start) */
	uint64_t            s_snaps[2];     /* the two newest snapshots' LSNs ([1] newest; 0: none) */
	uint64_t            s_cover;        /* WAL removed up to here already */
	int                 s_init;         /* the first step ran */
	int                 s_cb_rc;        /* replay callback's failure */
	pthread_mutex_t     s_mu;           /* s_st */
	struct snap_stats   s_st;
};

static uint64_t snap_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int snap_open(const struct snap_opts *o, snap_t **out)
{
	if (o == NULL || out == NULL || o->segment == NULL || o->wal_dir == NULL || o->wal == NULL ||
	    strlen(o->wal_dir) > 4000)
		return FLASH_EINVAL;
	snap_t *s = calloc(1, sizeof *s);
	if (s == NULL)
		return FLASH_ENOMEM;
	s->s_o = *o;
	if (s->s_o.every_s == 0)
		s->s_o.every_s = 300;
	if (s->s_o.wal_bytes == 0)
		s->s_o.wal_bytes = WAL_SEGMENT_DEFAULT;
	const char *base = o->segment[0] == '/' ? o->segment + 1 : o->segment;
	snprintf(s->s_shadow, sizeof s->s_shadow, "/%.150s.shadow.%ld", base, (long)getpid());
	pthread_mutex_init(&s->s_mu, NULL);
	*out = s;
	return FLASH_OK;
}

/* Sticky failure: log once, count, snapshots off. */
__attribute__((format(printf, 3, 4)))
static int snap_fail(snap_t *s, int rc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	plogf(s->s_o.log, s->s_o.log_arg, PLOG_ERROR, "%s; snapshots are off until the "
	          "daemon restarts (no WAL file is removed; orders go on)", msg);
	pthread_mutex_lock(&s->s_mu);
	s->s_st.failed = FLASH_ESNAP_FAILED;
	s->s_st.failures++;
	s->s_st.last_rc = rc;
	snprintf(s->s_st.last_error, sizeof s->s_st.last_error, "%s", msg);
	pthread_mutex_unlock(&s->s_mu);
	return FLASH_ESNAP_FAILED;
}

static void snap_publish(snap_t *s)
{
	pthread_mutex_lock(&s->s_mu);
	s->s_st.lsn = s->s_lsn;
	s->s_st.snap_lsn = s->s_snaps[1];
	pthread_mutex_unlock(&s->s_mu);
}

int snap_shadows_remove(const char *segment, const char *keep, int dead_only, plog_fn log,
                        void *log_arg)
{
	const char *base = segment[0] == '/' ? segment + 1 : segment;
	const char *kept = keep == NULL ? NULL : keep[0] == '/' ? keep + 1 : keep;
	char pre[200];
	int removed = 0;

	if (snprintf(pre, sizeof pre, "%.150s.shadow.", base) >= (int)sizeof pre)
		return 0;
	size_t npre = strlen(pre);
	DIR *d = pio_opendir("/dev/shm");
	if (d == NULL)
		return 0;
	struct dirent *e;
	while ((e = pio_readdir(d)) != NULL) {
		if (strncmp(e->d_name, pre, npre) != 0 || (kept != NULL && strcmp(e->d_name, kept) == 0))
			continue;
		const char *p = e->d_name + npre;
		if (*p == 0 || strspn(p, "0123456789") != strlen(p))
			continue;
		long pid = strtol(p, NULL, 10);
		if (dead_only && (pid <= 0 || pid > INT_MAX || kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		char name[300], path[320];
		struct stat st;
		snprintf(name, sizeof name, "/%s", e->d_name);
		snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
		uint64_t mib = stat(path, &st) == 0 ? (uint64_t)st.st_size >> 20 : 0;
		if (flash_seg_destroy(name) == FLASH_OK) {
			removed++;
			plogf(log, log_arg, PLOG_WARN, "snapshot: removed the shadow segment %s "
			          "(%" PRIu64 " MiB) that a daemon (pid %ld) left mid-snapshot", name, mib, pid);
		}
	}
	pio_closedir(d);
	return removed;
}

int snap_reclaim_get(flash_t *h, struct flash_reclaim_opts *ro, int *windowed)
{
	struct flash_gen_info req, user;
	int rc;

	memset(ro, 0, sizeof *ro);
	*windowed = 0;
	if ((rc = flash_gen_get(h, FLASH_TABLE_REQUESTS, &req)) != FLASH_OK ||
	    (rc = flash_gen_get(h, FLASH_TABLE_USERS, &user)) != FLASH_OK)
		return rc;
	if (req.banks == 1)
		return FLASH_OK;
	ro->req_window_s = req.gen_s;
	ro->user_gen_s = user.gen_s;
	*windowed = 1;
	return FLASH_OK;
}

int snap_reclaim_apply(const char *name, const struct flash_reclaim_opts *ro)
{
	flash_t *h;
	int rc = flash_open(name, 0, &h);

	if (rc != FLASH_OK)
		return rc;
	rc = flash_seg_reclaim_set(h, ro);
	flash_close(h);
	return rc;
}

/*
 * Create the shadow: from the newest valid snapshot (then replay goes on at
 * its LSN + 1), or empty (replay from the WAL's first frame, which must be
 * LSN 1).  Leftover .tmp files of a writer that died are removed.
 */
static int snap_init(snap_t *s)
{
	const struct snap_opts *o = &s->s_o;
	flash_t *live;
	struct flash_ident live_id;
	struct flash_reclaim_opts ro;
	int windowed = 0;
	int frc = flash_open(o->segment, FLASH_RDONLY, &live);
	if (frc == FLASH_OK) {
		frc = flash_seg_opts_get(live, &s->s_opts);
		if (frc == FLASH_OK)
			frc = flash_ident_get(live, &live_id);
		if (frc == FLASH_OK)
			frc = snap_reclaim_get(live, &ro, &windowed);
		flash_close(live);
	}
	if (frc != FLASH_OK)
		return snap_fail(s, FLASH_ESNAP_SEGMENT, "snapshot: segment %s: %s", o->segment,
		                 flash_strerror(frc));
	uint64_t *tmps;
	size_t ntmp;
	if (snap_list_ext(o->wal_dir, "tmp", &tmps, &ntmp) == FLASH_OK) {
		for (size_t i = 0; i < ntmp; i++) {
			char path[4200];
			snap_tmp_path(path, sizeof path, o->wal_dir, tmps[i]);
			(void)pio_unlink(path);
		}
		free(tmps);
	}
	int rc = fold_new(&s->s_fold);
	if (rc != FLASH_OK)
		return snap_fail(s, FLASH_ENOMEM, "snapshot: out of memory");
	/* private and unique: mode 0600, no group */
	struct flash_seg_opts so = s->s_opts;
	so.mode = 0600;
	so.gid = -1;
	(void)flash_seg_destroy(s->s_shadow);   /* a previous daemon with our pid */
	/* one daemon serves a segment at a time: every other shadow is stale */
	(void)snap_shadows_remove(o->segment, s->s_shadow, 0, o->log, o->log_arg);
	struct snap_file f;
	rc = snap_open_newest(o->wal_dir, 0, &f, o->log, o->log_arg);
	if (rc == FLASH_OK) {
		frc = flash_seg_restore(s->s_shadow, &so, f.sf_img, f.sf_hdr->sh_seg_bytes);
		if (frc == FLASH_OK)
			frc = snap_fold_seed_file(s->s_fold, &f);
		s->s_lsn = f.sf_hdr->sh_lsn;
		snap_file_close(&f);
		if (frc != FLASH_OK) {
			(void)flash_seg_destroy(s->s_shadow);
			return snap_fail(s, FLASH_ESNAP_SEGMENT, "snapshot: shadow %s from the newest snapshot: %s",
			                 s->s_shadow, flash_strerror(frc));
		}
	} else if (rc == FLASH_ESNAP_NOENT) {
		frc = flash_seg_create(s->s_shadow, &so);
		if (frc == FLASH_OK && windowed)   /* the live segment's banks (engine/gen.c) */
			frc = snap_reclaim_apply(s->s_shadow, &ro);
		if (frc != FLASH_OK) {
			(void)flash_seg_destroy(s->s_shadow);
			return snap_fail(s, FLASH_ESNAP_SEGMENT, "snapshot: shadow %s: %s", s->s_shadow,
			                 flash_strerror(frc));
		}
	} else {
		return snap_fail(s, rc, "snapshot: listing %s: %s", o->wal_dir, flash_strerror(rc));
	}
	s->s_made = 1;
	/* Mapped by our handle only: drop the name at once, so the shadow
	 * never outlives the daemon, however it dies (kill -9 included). */
	frc = flash_open(s->s_shadow, 0, &s->s_sh);
	(void)flash_seg_destroy(s->s_shadow);
	s->s_made = 0;
	if (frc != FLASH_OK)
		return snap_fail(s, FLASH_ESNAP_SEGMENT, "snapshot: shadow %s: %s", s->s_shadow,
		                 flash_strerror(frc));
	/* Snapshots carry the live segment's identity, so that a segment
	 * restored from one still belongs to the WAL: a shadow created empty
	 * takes it; one restored from a snapshot has it already (a snapshot of
	 * another incarnation fails here, nothing is written) */
	frc = flash_ident_adopt(s->s_sh, live_id.incarnation);
	if (frc != FLASH_OK)
		return snap_fail(s, FLASH_ESNAP_SEGMENT, "snapshot: the newest snapshot is not of segment %s's "
		                 "incarnation %016" PRIx64 ": %s", o->segment, live_id.incarnation,
		                 flash_strerror(frc));
	/* a snapshot past the WAL's durable end describes another history */
	if (s->s_lsn > wal_durable_lsn(o->wal))
		return snap_fail(s, FLASH_ESNAP_GAP, "snapshot: the newest snapshot (LSN %" PRIu64 ") is past "
		                 "the WAL's durable LSN %" PRIu64, s->s_lsn, wal_durable_lsn(o->wal));
	/* the two newest snapshots on disk */
	uint64_t *lsns;
	size_t n;
	if (snap_list(o->wal_dir, &lsns, &n) == FLASH_OK) {
		if (n >= 1)
			s->s_snaps[1] = lsns[n - 1];
		if (n >= 2)
			s->s_snaps[0] = lsns[n - 2];
		free(lsns);
	}
	s->s_last_ms = snap_now_ms();
	plogf(o->log, o->log_arg, PLOG_INFO, "snapshot: shadow %s %s, replaying the WAL "
	          "from LSN %" PRIu64, s->s_shadow, s->s_lsn ? "restored from the newest snapshot" :
	          "created empty", s->s_lsn + 1);
	snap_publish(s);
	return FLASH_OK;
}

static int snap_frame(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	snap_t *s = arg;
	if (lsn != s->s_lsn + 1) {
		s->s_cb_rc = FLASH_ESNAP_GAP;
		return 1;
	}
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec)) {
		s->s_cb_rc = FLASH_ESNAP_CORRUPT;
		return 1;
	}
	struct wal_rec r;
	memcpy(&r, p, sizeof r);
	int rc = flash_replay(s->s_sh, &r.wr_rec);
	if (rc != FLASH_OK && rc != FLASH_EEXIST) {
		plogf(s->s_o.log, s->s_o.log_arg, PLOG_ERROR, "snapshot: shadow refused LSN %"
		          PRIu64 " (record type %u, order %" PRIu64 "): %s", lsn, r.wr_rec.type,
		          r.wr_rec.order_no, flash_strerror(rc));
		s->s_cb_rc = FLASH_ESNAP_SEGMENT;
		return 1;
	}
	if (fold_record(s->s_fold, &r.wr_rec, lsn) != FLASH_OK) {
		s->s_cb_rc = FLASH_ESNAP_CORRUPT;
		return 1;
	}
	s->s_lsn = lsn;
	s->s_bytes += wal_frame_bytes(len);
	pthread_mutex_lock(&s->s_mu);
	s->s_st.replayed++;
	pthread_mutex_unlock(&s->s_mu);
	return 0;
}

/* Replay every durable frame after s_lsn into the shadow and the fold. */
static int snap_catch_up(snap_t *s)
{
	struct wal_replay_report rep;
	s->s_cb_rc = FLASH_OK;
	int rc = wal_read_durable(s->s_o.wal, s->s_lsn + 1, snap_frame, s, &rep);
	if (s->s_cb_rc != FLASH_OK || rc != FLASH_OK) {
		int why = s->s_cb_rc != FLASH_OK ? s->s_cb_rc : rc == FLASH_EWAL_GAP ? FLASH_ESNAP_GAP : FLASH_ESYS;
		return snap_fail(s, why, "snapshot: the shadow cannot follow the WAL after LSN %" PRIu64
		                 ": %s (WAL: %s)", s->s_lsn, flash_strerror(why), flash_strerror(rc));
	}
	snap_publish(s);
	return FLASH_OK;
}

/* Remove snapshots older than the newest two; a failure here only leaves files. */
static void snap_prune(snap_t *s)
{
	uint64_t *lsns;
	size_t n;
	if (snap_list(s->s_o.wal_dir, &lsns, &n) != FLASH_OK)
		return;
	int gone = 0;
	for (size_t i = 0; i + 2 < n; i++) {
		char path[4200];
		snap_path(path, sizeof path, s->s_o.wal_dir, lsns[i]);
		if (pio_unlink(path) == 0)
			gone++;
	}
	free(lsns);
	if (gone)
		(void)pio_fsync_dir(s->s_o.wal_dir);
}

/* Remove WAL files every consumer has covered (see snapshot.h). */
static int snap_remove_wal(snap_t *s)
{
	uint64_t cover = s->s_snaps[0] ? s->s_snaps[0] : s->s_snaps[1];
	if (cover == 0 || s->s_o.keep_wal || s->s_o.wal_remove == NULL)
		return FLASH_OK;
	if (s->s_o.applied_lsn != NULL) {
		uint64_t a = 0;
		if (s->s_o.applied_lsn(s->s_o.applied_arg, &a) != 0)
			return FLASH_OK;
		if (a < cover)
			cover = a;
	}
	if (cover <= s->s_cover)
		return FLASH_OK;
	/* asked only when something would go: the remover may only lower the
	 * cover */
	uint32_t removed = 0;
	int rc = s->s_o.wal_remove(s->s_o.wal_remove_arg, cover, s->s_cover, &cover, &removed);
	if (rc == FLASH_OK && cover <= s->s_cover)
		return FLASH_OK;
	if (removed) {
		pthread_mutex_lock(&s->s_mu);
		s->s_st.wal_removed += removed;
		pthread_mutex_unlock(&s->s_mu);
		plogf(s->s_o.log, s->s_o.log_arg, PLOG_INFO, "snapshot: %u WAL file(s) with "
		          "every LSN <= %" PRIu64 " removed", removed, cover);
	}
	if (rc != FLASH_OK)
		return snap_fail(s, FLASH_ESYS, "snapshot: removing WAL files up to LSN %" PRIu64 ": %s (%s)",
		                 cover, flash_strerror(rc), strerror(errno));
	s->s_cover = cover;
	return FLASH_OK;
}

static int snap_take(snap_t *s)
{
	const void *img;
	uint64_t len;
	const struct fold_sku *fv;
	size_t fn;
	/* the image reflects the WAL up to s_lsn: a segment restored from it does */
	int frc = flash_ident_lsn_set(s->s_sh, s->s_lsn);
	if (frc == FLASH_OK)
		frc = flash_image(s->s_sh, &img, &len);
	if (frc == FLASH_OK)
		frc = fold_skus(s->s_fold, &fv, &fn);
	if (frc != FLASH_OK)
		return snap_fail(s, FLASH_ESNAP_SEGMENT, "snapshot: %s", flash_strerror(frc));
	char err[512] = "";
	/* Between two flash_replay() calls on the only handle: no operation is
	 * in flight, the journal is idle.  The image still names this handle's
	 * slot as alive; flash_seg_restore() frees every slot. */
	int rc = snap_write(s->s_o.wal_dir, s->s_lsn, &s->s_opts, fv, fn, img, len, err, sizeof err);
	if (rc != FLASH_OK)
		return snap_fail(s, rc, "%s", rc == FLASH_ESYS ? err : flash_strerror(rc));
	s->s_snaps[0] = s->s_snaps[1];
	s->s_snaps[1] = s->s_lsn;
	s->s_bytes = 0;
	s->s_last_ms = snap_now_ms();
	pthread_mutex_lock(&s->s_mu);
	s->s_st.snapshots++;
	pthread_mutex_unlock(&s->s_mu);
	snap_publish(s);
	plogf(s->s_o.log, s->s_o.log_arg, PLOG_INFO, "snapshot at LSN %" PRIu64 " written "
	          "(%" PRIu64 " bytes of segment, %zu skus folded)", s->s_lsn, len, fn);
	snap_prune(s);
	return FLASH_OK;
}

int snap_step(snap_t *s, int force)
{
	if (s->s_st.failed)
		return FLASH_ESNAP_FAILED;
	if (!s->s_init) {
		s->s_init = 1;
		if (snap_init(s) != FLASH_OK)
			return FLASH_ESNAP_FAILED;
	}
	if (snap_catch_up(s) != FLASH_OK)
		return FLASH_ESNAP_FAILED;
	int due = force || s->s_bytes >= s->s_o.wal_bytes ||
	          snap_now_ms() - s->s_last_ms >= (uint64_t)s->s_o.every_s * 1000u;
	/* Never between a cart's lines: the fold section keeps sums only and
	 * the shadow's replay holds a cart until its last line, so the lines
	 * read so far would be in neither.  The next step, after the last
	 * line (or after the fold finds the cart torn), takes it. */
	if (fold_cart_lines_open(s->s_fold) > 0)
		due = 0;
	if (due && s->s_lsn > s->s_snaps[1] && snap_take(s) != FLASH_OK)
		return FLASH_ESNAP_FAILED;
	if (due && s->s_lsn == s->s_snaps[1])
		s->s_last_ms = snap_now_ms();
	return snap_remove_wal(s) == FLASH_OK ? FLASH_OK : FLASH_ESNAP_FAILED;
}

void snap_stats_get(snap_t *s, struct snap_stats *out)
{
	pthread_mutex_lock(&s->s_mu);
	*out = s->s_st;
	pthread_mutex_unlock(&s->s_mu);
}

void snap_close(snap_t *s)
{
	if (s == NULL)
		return;
	if (s->s_sh != NULL)
		flash_close(s->s_sh);
	if (s->s_made)
		(void)flash_seg_destroy(s->s_shadow);
	fold_free(s->s_fold);
	pthread_mutex_destroy(&s->s_mu);
	free(s);
}

/* ------------------------------------------------------------------------
 * 5. The thread
 * ------------------------------------------------------------------------ */

struct snap_thread {
	snap_t          *t_s;
	struct worker    t_w;       /* a step every 50 ms, and a last one at the stop */
	int              t_niced;   /* the thread's priority is lowered */
	int              t_final;   /* the last step takes a final snapshot (set before the stop) */
	int              t_rc;      /* last step's code (read after the thread is gone) */
};

/* One step of the thread (worker.h).  The last one, at the stop, takes the
 * final snapshot when asked, and closes the shadow handle: it belongs to
 * this thread. */
static void snap_thread_pass(void *arg, int last)
{
	snap_thread_t *t = arg;
	if (!t->t_niced) {
		/* Background work: below the drain loop and the buyers (Linux nice
		 * is per thread).  Failing to lower it changes nothing else. */
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
		t->t_niced = 1;
	}
	t->t_rc = snap_step(t->t_s, last && t->t_final);
	if (last && t->t_s->s_sh != NULL) {
		flash_close(t->t_s->s_sh);
		t->t_s->s_sh = NULL;
	}
}

int snap_thread_start(const struct snap_opts *o, snap_thread_t **out)
{
	if (out == NULL)
		return FLASH_EINVAL;
	snap_thread_t *t = calloc(1, sizeof *t);
	if (t == NULL)
		return FLASH_ENOMEM;
	int rc = snap_open(o, &t->t_s);
	if (rc != FLASH_OK) {
		free(t);
		return rc;
	}
	if (worker_start(&t->t_w, 50, 0, snap_thread_pass, t) != 0) {
		snap_close(t->t_s);
		free(t);
		return FLASH_ESYS;
	}
	*out = t;
	return FLASH_OK;
}

void snap_thread_stats(snap_thread_t *t, struct snap_stats *out)
{
	snap_stats_get(t->t_s, out);
}

int snap_thread_stop(snap_thread_t *t, int final, struct snap_stats *out)
{
	if (t == NULL)
		return FLASH_OK;
	t->t_final = final;           /* the worker's stop hands it to the last step */
	worker_stop(&t->t_w, 1);
	int rc = t->t_rc;
	if (out != NULL)
		snap_stats_get(t->t_s, out);
	snap_close(t->t_s);
	free(t);
	return rc;
}
