/*
 * feed.c -- the order feed, consumer side (flashstock.h section 10; the files
 * it uses are listed in feed.h).  Part of libflashstock.
 *
 * Divisions:
 *   1. Names, paths, position files   feed_name_ok, feed_pos_read/_write
 *   2. The durable mark               mapping DIR/DURABLE, waiting on it
 *   3. Reading WAL frames             file listing, mapping, one frame's check
 *   4. The feed                       open, next, commit, rewind, close
 *   5. Listing and dropping           flash_feed_list, flash_feed_drop
 *
 * Why a futex on DIR/DURABLE and not inotify: inotify on the WAL files fires
 * on the writer's pwrite(), before fdatasync, so it says nothing about
 * durability; the mark's wm_seq changes exactly when a durable LSN is
 * published, and a futex on a shared file mapping is keyed by inode and
 * offset, so it works across processes.  The writer pays one atomic add and
 * one load per group commit (a FUTEX_WAKE only while a reader sleeps).
 *
 * The reader never trusts what the files hold past the mark: frames a killed
 * writer left in the page cache before its fdatasync are not returned until
 * a writer makes them durable (wal_open() does) and publishes it.
 */
#include "feed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "pio.h"
#include "wal.h"

#define FEED_FRAME_HDR 32u
#define FEED_REFILL_CHUNK 65536u   /* LSNs fetched from MariaDB per query */
#define FEED_REC_FRAME (WAL_FRAME_HDR_BYTES + sizeof(struct wal_rec))  /* 104 bytes */

static int64_t feed_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int feed_errno_rc(int e)
{
	switch (e) {
	case ENOENT: return FLASH_ENOT_FOUND;
	case EACCES: case EPERM: case EROFS: return FLASH_EPERM;
	case ENOMEM: return FLASH_ENOMEM;
	case PIO_ENOTREG: return FLASH_ENOTREG;   /* pio_strerror() names the file */
	default: return FLASH_ESYS;
	}
}

/* ------------------------------------------------------------------------
 * 1. Names, paths, position files
 * ------------------------------------------------------------------------ */

int feed_name_ok(const char *name)
{
	if (name == NULL || name[0] == '\0' || name[0] == '.' || strlen(name) > FLASH_FEED_NAME_MAX)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			return 0;
	return 1;
}

static int feed_path(char *buf, size_t n, const char *dir, const char *name, const char *ext)
{
	int k = name ? snprintf(buf, n, "%s/" FEED_DIR "/%s%s", dir, name, ext)
	             : snprintf(buf, n, "%s/" FEED_DIR, dir);
	return k > 0 && (size_t)k < n ? 0 : -1;
}

static int feed_pos_parse(const char *txt, size_t len, struct feed_pos *out)
{
	const char *c = NULL;
	for (size_t i = 0; i + 4 <= len; i++)
		if ((i == 0 || txt[i - 1] == '\n') && memcmp(txt + i, "crc ", 4) == 0) {
			c = txt + i;
			break;
		}
	if (c == NULL)
		return FLASH_ECORRUPT;
	unsigned crc;
	if (sscanf(c, "crc %x", &crc) != 1 || crc != crc32c(0, txt, (size_t)(c - txt)))
		return FLASH_ECORRUPT;
	unsigned long long lsn, inc;
	long long cr, cm;
	if (sscanf(txt, "flashstock-feed 1\nlsn %llu\nincarnation %llx\ncreated_ns %lld\ncommit_ns %lld\n",
	           &lsn, &inc, &cr, &cm) != 4)
		return FLASH_ECORRUPT;
	out->fp_lsn = lsn;
	out->fp_incarnation = inc;
	out->fp_created_ns = cr;
	out->fp_commit_ns = cm;
	return FLASH_OK;
}

int feed_pos_read(const char *wal_dir, const char *name, struct feed_pos *out)
{
	char path[4200], buf[512];
	if (feed_path(path, sizeof path, wal_dir, name, ".pos") != 0)
		return FLASH_EINVAL;
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return errno == ENOENT ? FLASH_ENOT_FOUND : feed_errno_rc(errno);
	ssize_t k = pio_pread_full(fd, buf, sizeof buf - 1, 0);
	int e = errno;
	close(fd);
	if (k < 0)
		return feed_errno_rc(e);
	buf[k] = '\0';
	return feed_pos_parse(buf, (size_t)k, out);
}

/*
 * Write DIR/feed/NAME.pos durably: NAME.pos.tmp, write, fdatasync, rename,
 * fsync of the directory (@p dirfd), every call through pio.h (tests inject
 * faults there).  A crash leaves the old file or the new one, whole (a
 * leftover .tmp is overwritten by the next commit); a failure before the
 * rename leaves the old one.
 */
static int feed_pos_write(const char *wal_dir, int dirfd, const char *name, const struct feed_pos *p)
{
	char buf[512], tmp[4200], path[4200];
	int k = snprintf(buf, sizeof buf,
	                 "flashstock-feed 1\nlsn %" PRIu64 "\nincarnation %" PRIx64 "\ncreated_ns %" PRId64
	                 "\ncommit_ns %" PRId64 "\n",
	                 p->fp_lsn, p->fp_incarnation, p->fp_created_ns, p->fp_commit_ns);
	k += snprintf(buf + k, sizeof buf - (size_t)k, "crc %08x\n", crc32c(0, buf, (size_t)k));
	if (feed_path(tmp, sizeof tmp, wal_dir, name, ".pos.tmp") != 0 ||
	    feed_path(path, sizeof path, wal_dir, name, ".pos") != 0)
		return FLASH_EINVAL;
	int fd = pio_open_reg(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return feed_errno_rc(errno);
	if (pio_pwrite_full(fd, buf, (size_t)k, 0) != 0 || pio_fdatasync(fd) != 0) {
		int e = errno;
		pio_close(fd);
		pio_unlink(tmp);
		return feed_errno_rc(e);
	}
	pio_close(fd);
	if (pio_rename(tmp, path) != 0 || pio_fsync(dirfd) != 0)
		return feed_errno_rc(errno);
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 2. The durable mark
 * ------------------------------------------------------------------------ */

/* Map DIR/DURABLE (read-write if we may: a waiter counts itself in
 * wm_waiters).  NULL when there is none yet (or it is not a mark). */
static struct wal_mark *feed_mark_map(const char *dir, int *writable)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, dir);
	*writable = 1;
	int fd = pio_open_reg(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0 && (errno == EACCES || errno == EROFS)) {
		*writable = 0;
		fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	}
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= WAL_MARK_BYTES)
		m = mmap(NULL, WAL_MARK_BYTES, PROT_READ | (*writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	struct wal_mark *k = m;
	if (__atomic_load_n(&k->wm_magic, __ATOMIC_ACQUIRE) != WAL_MARK_MAGIC) {
		munmap(m, WAL_MARK_BYTES);
		return NULL;
	}
	return k;
}

int feed_mark_read(const char *wal_dir, uint64_t *durable, uint64_t *incarnation)
{
	int w;
	struct wal_mark *k = feed_mark_map(wal_dir, &w);
	*durable = 0;
	if (incarnation)
		*incarnation = 0;
	if (k == NULL)
		return FLASH_OK;
	*durable = __atomic_load_n(&k->wm_durable, __ATOMIC_ACQUIRE);
	if (incarnation)
		*incarnation = k->wm_incarnation;
	munmap(k, WAL_MARK_BYTES);
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 3. Reading WAL frames
 * ------------------------------------------------------------------------ */

static int feed_wal_match(const char *name, const void *arg, uint64_t *v)
{
	(void)arg;
	return pio_hex16_name(name, "wal-", "log", v);
}

int feed_wal_files(const char *wal_dir, uint64_t **lsns, size_t *n)
{
	if (pio_dir_numbers(wal_dir, feed_wal_match, NULL, lsns, n) != 0)
		return feed_errno_rc(errno);
	return FLASH_OK;
}

/* One mapped WAL file. */
struct feed_file {
	uint64_t       ff_start;     /* its start LSN (0: none mapped) */
	const unsigned char *ff_map;
	size_t         ff_len;
	uint64_t       ff_off;       /* offset of the frame of ff_lsn */
	uint64_t       ff_lsn;       /* the LSN at ff_off */
	uint64_t       ff_incarnation;
};

static void feed_file_drop(struct feed_file *f)
{
	if (f->ff_map != NULL)
		munmap((void *)f->ff_map, f->ff_len);
	memset(f, 0, sizeof *f);
}

/* Map the file starting at @p start.  @return FLASH_OK; FLASH_ENOT_FOUND
 * (removed meanwhile); FLASH_ECORRUPT (bad header); FLASH_ESYS. */
static int feed_file_map(const char *dir, uint64_t start, struct feed_file *f)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/wal-%016" PRIx64 ".log", dir, start);
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return feed_errno_rc(errno);
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < WAL_FILE_HDR_BYTES) {
		close(fd);
		return FLASH_ECORRUPT;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED)
		return feed_errno_rc(e);
	const unsigned char *p = m;
	uint64_t hs, inc;
	uint32_t hcrc;
	memcpy(&hs, p + 16, 8);
	memcpy(&inc, p + 40, 8);
	memcpy(&hcrc, p + 60, 4);
	if (memcmp(p, "FSWALSEG", 8) != 0 || hs != start || hcrc != crc32c(0, p, 60)) {
		munmap(m, (size_t)st.st_size);
		return FLASH_ECORRUPT;
	}
	feed_file_drop(f);
	f->ff_start = start;
	f->ff_map = p;
	f->ff_len = (size_t)st.st_size;
	f->ff_off = WAL_FILE_HDR_BYTES;
	f->ff_lsn = start;
	f->ff_incarnation = inc;
	return FLASH_OK;
}

/*
 * Check the frame at @p off of @p f as the one of @p lsn and decode it.
 * @return 1 a valid record frame (its bytes in *bytes); 0 nothing there (an
 * all-zero header or the end of the file: the next frame is in the next
 * file); -1 a bad frame.
 */
static int feed_frame_at(const struct feed_file *f, uint64_t off, uint64_t lsn,
                         struct flash_feed_rec *out, uint64_t *bytes)
{
	static const unsigned char zero[FEED_FRAME_HDR];
	if (f->ff_map == NULL || off + FEED_FRAME_HDR > f->ff_len)
		return 0;
	const unsigned char *h = f->ff_map + off;
	if (memcmp(h, zero, sizeof zero) == 0)
		return 0;
	uint32_t len, crc;
	uint16_t type;
	uint64_t l, prev;
	memcpy(&len, h, 4);
	memcpy(&type, h + 4, 2);
	memcpy(&l, h + 8, 8);
	memcpy(&prev, h + 16, 8);
	memcpy(&crc, h + 24, 4);
	if (len == 0 || len > WAL_PAYLOAD_MAX || off + wal_frame_bytes(len) > f->ff_len)
		return -1;
	if (l != lsn || prev != lsn - 1 || crc != crc32c(crc32c(0, h, 24), h + FEED_FRAME_HDR, len))
		return -1;
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec))
		return -1;
	if (out != NULL) {
		struct wal_rec wr;
		memcpy(&wr, h + FEED_FRAME_HDR, sizeof wr);
		memset(out, 0, sizeof *out);
		out->fr_lsn = lsn;
		out->fr_seq = wr.wr_seq;
		out->fr_rec = wr.wr_rec;
		out->fr_source = FLASH_FEED_WAL;
	}
	*bytes = wal_frame_bytes(len);
	return 1;
}

/*
 * Position @p f at @p lsn inside its file (which must hold it): every frame
 * is a record of one size today, so try the computed offset first, then
 * walk the frames.  @return 1 found; 0 not in this file; -1 bad frame.
 */
static int feed_file_seek(struct feed_file *f, uint64_t lsn)
{
	uint64_t b;
	uint64_t guess = WAL_FILE_HDR_BYTES + (lsn - f->ff_start) * FEED_REC_FRAME;
	if (lsn >= f->ff_start && feed_frame_at(f, guess, lsn, NULL, &b) == 1) {
		f->ff_off = guess;
		f->ff_lsn = lsn;
		return 1;
	}
	uint64_t off = WAL_FILE_HDR_BYTES, l = f->ff_start;
	while (l < lsn) {
		int r = feed_frame_at(f, off, l, NULL, &b);
		if (r <= 0)
			return r;
		off += b;
		l++;
	}
	f->ff_off = off;
	f->ff_lsn = l;
	return 1;
}

/*
 * Map the file that holds @p lsn (the newest whose start is <= lsn) into
 * @p f and seek to it.  @return FLASH_OK; FLASH_ELOST (every file starts
 * after @p lsn: removed); FLASH_ENOT_FOUND (no file yet); FLASH_ECORRUPT;
 * FLASH_ESYS; FLASH_ENOMEM.
 */
static int feed_locate(const char *dir, uint64_t lsn, struct feed_file *f)
{
	for (int tries = 0; tries < 3; tries++) {
		uint64_t *l;
		size_t n;
		int rc = feed_wal_files(dir, &l, &n);
		if (rc != FLASH_OK)
			return rc;
		if (n == 0) {
			free(l);
			return FLASH_ENOT_FOUND;
		}
		size_t i = n;
		while (i > 0 && l[i - 1] > lsn)
			i--;
		if (i == 0) {
			free(l);
			return FLASH_ELOST;
		}
		uint64_t start = l[i - 1];
		free(l);
		if (f->ff_start != start) {
			rc = feed_file_map(dir, start, f);
			if (rc == FLASH_ENOT_FOUND)
				continue;          /* removed between the listing and the open */
			if (rc != FLASH_OK)
				return rc;
		}
		int r = feed_file_seek(f, lsn);
		return r == 1 ? FLASH_OK : FLASH_ECORRUPT;
	}
	return FLASH_ELOST;
}

int feed_wal_read_one(const char *wal_dir, uint64_t lsn, struct flash_feed_rec *out)
{
	struct feed_file f;
	memset(&f, 0, sizeof f);
	int rc = feed_locate(wal_dir, lsn, &f);
	if (rc == FLASH_ELOST)
		rc = FLASH_ENOT_FOUND;
	if (rc == FLASH_OK) {
		uint64_t b;
		if (feed_frame_at(&f, f.ff_off, lsn, out, &b) != 1)
			rc = FLASH_ENOT_FOUND;
	}
	feed_file_drop(&f);
	return rc;
}

/* ------------------------------------------------------------------------
 * 4. The feed
 * ------------------------------------------------------------------------ */

struct flash_feed {
	char              *fd_dir;
	char               fd_name[FLASH_FEED_NAME_MAX + 1];
	int                fd_lockfd;       /* holds NAME.lock's OFD lock */
	int                fd_dirfd;        /* DIR/feed, for the fsync after a rename */
	struct wal_mark   *fd_mark;         /* NULL until a writer published */
	int                fd_mark_rw;      /* we may count ourselves in wm_waiters */
	ino_t              fd_mark_ino;     /* the inode mapped (feed_mark_replaced) */
	struct feed_pos    fd_pos;          /* as on disk */
	uint64_t           fd_next;         /* next LSN to return */
	struct feed_file   fd_file;
	pid_t              fd_pid;          /* opener (no use after fork) */
	/* refill */
	char              *fd_url;
	char              *fd_stream;
	feed_refill_t     *fd_refill;
	struct flash_feed_rec *fd_rbuf;     /* refilled records not returned yet */
	size_t             fd_rn, fd_ri;
	uint64_t           fd_rend;         /* refill covers LSNs < fd_rend (0: no refill running) */
};

void flash_feed_opts_default(struct flash_feed_opts *o)
{
	if (o)
		memset(o, 0, sizeof *o);
}

static uint64_t feed_durable(flash_feed_t *f)
{
	if (f->fd_mark == NULL) {
		f->fd_mark = feed_mark_map(f->fd_dir, &f->fd_mark_rw);
		struct stat st;
		char path[4200];
		snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, f->fd_dir);
		f->fd_mark_ino = f->fd_mark != NULL && stat(path, &st) == 0 ? st.st_ino : 0;
	}
	return f->fd_mark ? __atomic_load_n(&f->fd_mark->wm_durable, __ATOMIC_ACQUIRE) : 0;
}

/*
 * Before a wait: is DIR/DURABLE still the file we mapped?  Writers never
 * replace it, but an operator may (a WAL directory removed and made again):
 * then the old mapping never moves and its futex is never woken.  One
 * stat() per wait.  @return 1 if it was remapped (look again).
 */
static int feed_mark_replaced(flash_feed_t *f)
{
	if (f->fd_mark == NULL)
		return 0;
	struct stat st;
	char path[4200];
	snprintf(path, sizeof path, "%s/" WAL_MARK_FILE, f->fd_dir);
	if (stat(path, &st) != 0 || st.st_ino == f->fd_mark_ino)
		return 0;
	munmap(f->fd_mark, WAL_MARK_BYTES);
	f->fd_mark = NULL;
	return 1;
}

/*
 * Sleep until the mark moves past @p lsn - 1 or @p deadline_ns (CLOCK_MONOTONIC)
 * passes.  The waiter protocol is wal.h's: count ourselves in wm_waiters
 * (seq_cst), read wm_seq, re-check the LSN, FUTEX_WAIT on that seq.  With
 * no mark yet, or one we may not write, sleep 20 ms at a time instead.
 */
static void feed_wait(flash_feed_t *f, uint64_t lsn, int64_t deadline_ns)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t left = deadline_ns - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
	if (left <= 0)
		return;
	if (f->fd_mark == NULL || !f->fd_mark_rw) {
		int64_t nap = left < 20000000 ? left : 20000000;
		struct timespec ts = { nap / 1000000000, nap % 1000000000 };
		nanosleep(&ts, NULL);
		return;
	}
	struct wal_mark *k = f->fd_mark;
	__atomic_add_fetch(&k->wm_waiters, 1, __ATOMIC_SEQ_CST);
	uint32_t seq = __atomic_load_n(&k->wm_seq, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&k->wm_durable, __ATOMIC_ACQUIRE) < lsn) {
		struct timespec ts = { left / 1000000000, left % 1000000000 };
		syscall(SYS_futex, &k->wm_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	}
	__atomic_sub_fetch(&k->wm_waiters, 1, __ATOMIC_SEQ_CST);
}

/* Does the process that published @p k last still run? */
static int feed_writer_alive(const struct wal_mark *k)
{
	if (k == NULL)
		return 0;
	pid_t pid = (pid_t)__atomic_load_n(&k->wm_pid, __ATOMIC_ACQUIRE);
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/*
 * Take NAME.lock for the caller: an open-file-description lock (F_OFD_SETLK,
 * write, whole file), dropped by the kernel when the descriptor closes or
 * the process dies.  OFD rather than flock so that flash_feed_list() can
 * TEST it (F_OFD_GETLK) without taking it: a lister never makes an open fail.
 */
static int feed_lock(const char *dir, const char *name, int *out)
{
	char path[4200];
	feed_path(path, sizeof path, dir, name, ".lock");
	for (int tries = 0; tries < 3; tries++) {
		int fd = pio_open_reg(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return feed_errno_rc(errno);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
		if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
			int e = errno;
			close(fd);
			return e == EAGAIN || e == EACCES ? FLASH_EBUSY : feed_errno_rc(e);
		}
		/* A drop may have unlinked the file we locked: lock the live one. */
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			*out = fd;
			return FLASH_OK;
		}
		close(fd);
	}
	return FLASH_EBUSY;
}

int feed_registry_lock(const char *wal_dir, int exclusive)
{
	int fd = open(wal_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
	}
	return fd;
}

void feed_registry_unlock(int fd)
{
	if (fd >= 0)
		close(fd);       /* drops the flock */
}

/* Where a new consumer starts: its committed position is "just before". */
static int feed_start_lsn(const char *dir, int from_start, uint64_t *pos)
{
	uint64_t durable, inc;
	feed_mark_read(dir, &durable, &inc);
	if (!from_start) {
		*pos = durable;
		return FLASH_OK;
	}
	uint64_t *l;
	size_t n;
	int rc = feed_wal_files(dir, &l, &n);
	if (rc != FLASH_OK)
		return rc;
	*pos = n > 0 ? l[0] - 1 : durable;
	free(l);
	return FLASH_OK;
}

int flash_feed_open(const char *wal_dir, const char *consumer, const struct flash_feed_opts *o,
                    flash_feed_t **out)
{
	struct flash_feed_opts def;
	if (o == NULL) {
		flash_feed_opts_default(&def);
		o = &def;
	}
	if (wal_dir == NULL || out == NULL || !feed_name_ok(consumer) || strlen(wal_dir) > 4000)
		return FLASH_EINVAL;
	if (o->mysql_url != NULL && feed_refill_check(o->mysql_url) != FLASH_OK)
		return FLASH_EMYSQL_CONFIG;
	struct stat st;
	if (stat(wal_dir, &st) != 0)
		return feed_errno_rc(errno);
	if (!S_ISDIR(st.st_mode))
		return FLASH_ENOT_FOUND;

	flash_feed_t *f = calloc(1, sizeof *f);
	if (f == NULL || (f->fd_dir = strdup(wal_dir)) == NULL) {
		free(f);
		return FLASH_ENOMEM;
	}
	f->fd_lockfd = f->fd_dirfd = -1;
	f->fd_pid = getpid();
	snprintf(f->fd_name, sizeof f->fd_name, "%s", consumer);
	int rc;
	char path[4200];
	feed_path(path, sizeof path, wal_dir, NULL, "");
	if (mkdir(path, 0700) == 0) {
		/* the new directory's entry must survive a reboot with the positions in it */
		if (pio_fsync_dir(wal_dir) != 0) {
			rc = feed_errno_rc(errno);
			goto fail;
		}
	} else if (errno != EEXIST) {
		rc = feed_errno_rc(errno);
		goto fail;
	}
	if ((f->fd_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = feed_errno_rc(errno);
		goto fail;
	}
	if ((rc = feed_lock(wal_dir, consumer, &f->fd_lockfd)) != FLASH_OK)
		goto fail;
	uint64_t durable, inc;
	feed_mark_read(wal_dir, &durable, &inc);
	rc = feed_pos_read(wal_dir, consumer, &f->fd_pos);
	if (rc == FLASH_ENOT_FOUND) {
		if (o->no_create)
			goto fail;
		/* shared registry lock: no removal between picking the start and
		 * the position being on disk for retention to see */
		int reg = feed_registry_lock(wal_dir, 0);
		memset(&f->fd_pos, 0, sizeof f->fd_pos);
		rc = feed_start_lsn(wal_dir, o->from_start != 0, &f->fd_pos.fp_lsn);
		f->fd_pos.fp_incarnation = inc;
		f->fd_pos.fp_created_ns = feed_now_ns();
		if (rc == FLASH_OK)
			rc = feed_pos_write(wal_dir, f->fd_dirfd, consumer, &f->fd_pos);
		feed_registry_unlock(reg);
		if (rc != FLASH_OK)
			goto fail;
	} else if (rc != FLASH_OK) {
		goto fail;
	} else if (f->fd_pos.fp_incarnation != 0 && inc != 0 && f->fd_pos.fp_incarnation != inc) {
		rc = FLASH_EFEED_IDENT;
		goto fail;
	} else if (f->fd_pos.fp_incarnation == 0 && inc != 0) {
		f->fd_pos.fp_incarnation = inc;     /* registered before any writer published */
	}
	f->fd_next = f->fd_pos.fp_lsn + 1;
	if (o->mysql_url != NULL &&
	    ((f->fd_url = strdup(o->mysql_url)) == NULL ||
	     (o->mysql_stream != NULL && (f->fd_stream = strdup(o->mysql_stream)) == NULL))) {
		rc = FLASH_ENOMEM;
		goto fail;
	}
	*out = f;
	return FLASH_OK;
fail:
	flash_feed_close(f);
	return rc;
}

/* Serve the next refilled record, or end the refill.  @return 1 served. */
static int feed_refill_next(flash_feed_t *f, struct flash_feed_rec *out)
{
	if (f->fd_ri < f->fd_rn) {
		*out = f->fd_rbuf[f->fd_ri++];
		out->fr_gap = out->fr_lsn - f->fd_next;
		f->fd_next = out->fr_lsn + 1;
		return 1;
	}
	return 0;
}

/*
 * The WAL no longer holds f->fd_next: fetch [fd_next, first WAL LSN - 1]
 * from MariaDB.  The records come back with the LSNs MariaDB keeps; the
 * LSNs it does not (restocks) are reported as fr_gap on the next record
 * served, or on a "gap" call that ends the range (see flash_feed_next).
 */
static int feed_refill_start(flash_feed_t *f)
{
	uint64_t *l;
	size_t n;
	int rc = feed_wal_files(f->fd_dir, &l, &n);
	if (rc != FLASH_OK)
		return rc;
	uint64_t first = n > 0 ? l[0] : 0;
	free(l);
	if (first <= f->fd_next)
		return FLASH_OK;      /* the WAL holds it after all (a file appeared) */
	if (f->fd_refill == NULL && (rc = feed_refill_open(f->fd_url, f->fd_stream, &f->fd_refill)) != FLASH_OK)
		return rc;
	free(f->fd_rbuf);
	f->fd_rbuf = NULL;
	f->fd_rn = f->fd_ri = 0;
	/* in chunks of FEED_REFILL_CHUNK LSNs: memory stays bounded over a long gap */
	uint64_t end = first - 1;
	if (end - f->fd_next >= FEED_REFILL_CHUNK)
		end = f->fd_next + FEED_REFILL_CHUNK - 1;
	uint64_t applied = 0;
	rc = feed_refill_fetch(f->fd_refill, f->fd_next, end, &f->fd_rbuf, &f->fd_rn, &applied);
	if (rc != FLASH_OK)
		return rc;
	f->fd_rend = end + 1;
	return FLASH_OK;
}

/*
 * A refill in progress hands out its records, then, if the range ends with
 * LSNs MariaDB does not keep, one record of type 0 that stands for the
 * range's last LSN (its fr_gap for those below it: flashstock.h), then
 * gives way to the WAL.  @return 1 a record is in *out; 0 none (no refill,
 * or it is over).
 */
static int feed_next_refilled(flash_feed_t *f, struct flash_feed_rec *out)
{
	if (f->fd_rend == 0)
		return 0;
	if (feed_refill_next(f, out))
		return 1;
	if (f->fd_next < f->fd_rend) {
		memset(out, 0, sizeof *out);
		out->fr_lsn = f->fd_rend - 1;
		out->fr_source = FLASH_FEED_MYSQL;
		out->fr_gap = f->fd_rend - 1 - f->fd_next;
		out->fr_missing = FLASH_FEED_MISS_SLOT | FLASH_FEED_MISS_TS | FLASH_FEED_MISS_VALUE;
		f->fd_next = f->fd_rend;
		f->fd_rend = 0;
		return 1;
	}
	f->fd_rend = 0;
	return 0;
}

#define FEED_AGAIN 1   /* feed_next_from_wal: the file or the refill changed, look again */

/*
 * The record at f->fd_next, which is durable, from the WAL: from the mapped
 * file while it holds it, else from the file that does (roll-over, or the
 * first read).  A removed file starts a refill when a source is set.
 * @return FLASH_OK (*out); FEED_AGAIN; FLASH_ELOST; FLASH_ECORRUPT;
 *         FLASH_EFEED_IDENT; FLASH_EAHEAD; a refill's code; FLASH_ESYS.
 */
static int feed_next_from_wal(flash_feed_t *f, struct flash_feed_rec *out)
{
	struct feed_file *ff = &f->fd_file;
	uint64_t b;
	if (ff->ff_map != NULL && ff->ff_lsn == f->fd_next) {
		int r = feed_frame_at(ff, ff->ff_off, f->fd_next, out, &b);
		if (r == 1) {
			ff->ff_off += b;
			ff->ff_lsn++;
			f->fd_next++;
			return FLASH_OK;
		}
		if (r < 0)
			return FLASH_ECORRUPT;
		/* the end of this file: the next one starts at fd_next */
	}
	int rc = feed_locate(f->fd_dir, f->fd_next, ff);
	if (rc == FLASH_OK) {
		if (ff->ff_lsn != f->fd_next || feed_frame_at(ff, ff->ff_off, f->fd_next, NULL, &b) != 1)
			return FLASH_ECORRUPT;       /* durable, yet not there */
		if (f->fd_pos.fp_incarnation != 0 && ff->ff_incarnation != 0 &&
		    ff->ff_incarnation != f->fd_pos.fp_incarnation)
			return FLASH_EFEED_IDENT;
		return FEED_AGAIN;
	}
	if (rc == FLASH_ELOST) {
		if (f->fd_url == NULL)
			return FLASH_ELOST;
		rc = feed_refill_start(f);
		return rc == FLASH_OK ? FEED_AGAIN : rc;
	}
	return rc == FLASH_ENOT_FOUND ? FLASH_EAHEAD : rc;   /* durable, yet no file at all */
}

int flash_feed_next(flash_feed_t *f, struct flash_feed_rec *out, uint32_t wait_ms)
{
	if (f == NULL || out == NULL || f->fd_pid != getpid())
		return FLASH_EINVAL;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t deadline = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + (int64_t)wait_ms * 1000000;
	for (;;) {
		if (feed_next_refilled(f, out))
			return FLASH_OK;
		uint64_t durable = feed_durable(f);
		if (f->fd_next <= durable) {
			int rc = feed_next_from_wal(f, out);
			if (rc == FEED_AGAIN)
				continue;
			return rc;
		}
		/* Past the durable end by more than the next record: legitimate
		 * while no writer runs (after a reboot the mark may say less than
		 * the WAL holds, until serve opens it and publishes); with a live
		 * writer the mark is what its wal_open() found, so the WAL is
		 * shorter than our position: cut or replaced. */
		if (feed_mark_replaced(f))
			continue;
		if (f->fd_next > durable + 1 && feed_writer_alive(f->fd_mark))
			return FLASH_EAHEAD;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec >= deadline)
			return FLASH_ETIMEOUT;
		feed_wait(f, f->fd_next, deadline);
	}
}

int flash_feed_commit(flash_feed_t *f, uint64_t lsn)
{
	if (f == NULL || f->fd_pid != getpid() || lsn >= f->fd_next || lsn < f->fd_pos.fp_lsn)
		return FLASH_EINVAL;
	if (lsn == f->fd_pos.fp_lsn)
		return FLASH_OK;
	struct feed_pos p = f->fd_pos;
	p.fp_lsn = lsn;
	p.fp_commit_ns = feed_now_ns();
	int rc = feed_pos_write(f->fd_dir, f->fd_dirfd, f->fd_name, &p);
	if (rc == FLASH_OK)
		f->fd_pos = p;
	return rc;
}

int flash_feed_rewind(flash_feed_t *f)
{
	if (f == NULL)
		return FLASH_EINVAL;
	f->fd_next = f->fd_pos.fp_lsn + 1;
	f->fd_rend = 0;
	f->fd_rn = f->fd_ri = 0;
	return FLASH_OK;
}

int flash_feed_close(flash_feed_t *f)
{
	if (f == NULL)
		return FLASH_OK;
	feed_file_drop(&f->fd_file);
	if (f->fd_mark != NULL)
		munmap(f->fd_mark, WAL_MARK_BYTES);
	if (f->fd_lockfd >= 0)
		close(f->fd_lockfd);
	if (f->fd_dirfd >= 0)
		close(f->fd_dirfd);
	feed_refill_close(f->fd_refill);
	free(f->fd_rbuf);
	free(f->fd_url);
	free(f->fd_stream);
	free(f->fd_dir);
	free(f);
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 5. Listing and dropping
 * ------------------------------------------------------------------------ */

/* Is NAME open in a live feed now?  Tests the OFD lock without taking it. */
static int feed_is_open(const char *dir, const char *name)
{
	char path[4200];
	feed_path(path, sizeof path, dir, name, ".lock");
	int fd = pio_open_reg(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	return held;
}

static void feed_info_fill(const char *dir, const char *name, const struct feed_pos *p,
                           uint64_t durable, uint64_t first, struct flash_feed_info *fi)
{
	memset(fi, 0, sizeof *fi);
	snprintf(fi->fi_name, sizeof fi->fi_name, "%s", name);
	fi->fi_committed_lsn = p->fp_lsn;
	fi->fi_durable_lsn = durable;
	fi->fi_first_lsn = first;
	fi->fi_created_ns = p->fp_created_ns;
	fi->fi_commit_ns = p->fp_commit_ns;
	fi->fi_lag_records = durable > p->fp_lsn ? durable - p->fp_lsn : 0;
	fi->fi_state = first != 0 && p->fp_lsn + 1 < first ? FLASH_FEED_LOST : FLASH_FEED_OK;
	fi->fi_open = (uint32_t)feed_is_open(dir, name);
	if (fi->fi_lag_records > 0 && fi->fi_state == FLASH_FEED_OK) {
		struct flash_feed_rec r;
		if (feed_wal_read_one(dir, p->fp_lsn + 1, &r) == FLASH_OK) {
			int64_t age = feed_now_ns() - r.fr_rec.ts_ns;
			/* an ACTIVITY record's ts_ns is its end: no age */
			if (r.fr_rec.type != FLASH_REC_ACTIVITY && age > 0)
				fi->fi_lag_ns = (uint64_t)age;
		}
	}
}

static int feed_pos_match(const char *name, const void *arg, uint64_t *v)
{
	(void)arg;
	(void)v;
	size_t n = strlen(name);
	return n > 4 && strcmp(name + n - 4, ".pos") == 0;
}

static int feed_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct flash_feed_info *)a)->fi_name, ((const struct flash_feed_info *)b)->fi_name);
}

int flash_feed_list(const char *wal_dir, struct flash_feed_info *out, size_t cap, size_t *n)
{
	if (wal_dir == NULL || n == NULL || (out == NULL && cap != 0) || strlen(wal_dir) > 4000)
		return FLASH_EINVAL;
	*n = 0;
	struct stat st;
	if (stat(wal_dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return FLASH_ENOT_FOUND;
	char path[4200];
	feed_path(path, sizeof path, wal_dir, NULL, "");
	DIR *d = opendir(path);
	if (d == NULL)
		return errno == ENOENT ? FLASH_OK : feed_errno_rc(errno);
	uint64_t durable, inc, *l;
	size_t nl;
	feed_mark_read(wal_dir, &durable, &inc);
	int rc = feed_wal_files(wal_dir, &l, &nl);
	if (rc != FLASH_OK) {
		closedir(d);
		return rc;
	}
	uint64_t first = nl > 0 ? l[0] : 0;
	free(l);
	size_t all = 0, got = 0;
	struct flash_feed_info *tmp = NULL;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		uint64_t v;
		if (!feed_pos_match(e->d_name, NULL, &v))
			continue;
		char name[FLASH_FEED_NAME_MAX + 8];
		size_t k = strlen(e->d_name) - 4;
		if (k > FLASH_FEED_NAME_MAX)
			continue;
		memcpy(name, e->d_name, k);
		name[k] = '\0';
		struct feed_pos p;
		if (!feed_name_ok(name) || feed_pos_read(wal_dir, name, &p) != FLASH_OK)
			continue;
		struct flash_feed_info *t = realloc(tmp, (got + 1) * sizeof *tmp);
		if (t == NULL) {
			rc = FLASH_ENOMEM;
			break;
		}
		tmp = t;
		feed_info_fill(wal_dir, name, &p, durable, first, &tmp[got++]);
		all++;
	}
	closedir(d);
	if (rc == FLASH_OK) {
		if (got > 1)
			qsort(tmp, got, sizeof *tmp, feed_name_cmp);
		for (size_t i = 0; i < got && i < cap; i++)
			out[i] = tmp[i];
		*n = all;
	}
	free(tmp);
	return rc;
}

int flash_feed_info_get(flash_feed_t *f, struct flash_feed_info *out)
{
	if (f == NULL || out == NULL)
		return FLASH_EINVAL;
	uint64_t *l, durable = feed_durable(f);
	size_t nl;
	uint64_t first = 0;
	if (feed_wal_files(f->fd_dir, &l, &nl) == FLASH_OK) {
		first = nl > 0 ? l[0] : 0;
		free(l);
	}
	feed_info_fill(f->fd_dir, f->fd_name, &f->fd_pos, durable, first, out);
	out->fi_open = 1;
	return FLASH_OK;
}

int flash_feed_drop(const char *wal_dir, const char *consumer)
{
	if (wal_dir == NULL || !feed_name_ok(consumer) || strlen(wal_dir) > 4000)
		return FLASH_EINVAL;
	struct feed_pos p;
	int rc = feed_pos_read(wal_dir, consumer, &p);
	if (rc != FLASH_OK && rc != FLASH_ECORRUPT)
		return rc;
	int fd;
	if ((rc = feed_lock(wal_dir, consumer, &fd)) != FLASH_OK)
		return rc;
	char path[4200];
	feed_path(path, sizeof path, wal_dir, consumer, ".pos");
	rc = unlink(path) == 0 ? FLASH_OK : feed_errno_rc(errno);
	feed_path(path, sizeof path, wal_dir, consumer, ".lock");
	unlink(path);
	close(fd);
	feed_path(path, sizeof path, wal_dir, NULL, "");
	(void)pio_fsync_dir(path);
	return rc;
}
