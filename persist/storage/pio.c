/*
 * pio.c -- the system-call table of persist/ (see pio.h).
 *
 * Divisions: default entries that need a wrapper (fallocate), the table and
 * its override functions, helpers built only on table entries (full
 * pwrite/pread, directory fsync, pio_open_reg: the one open of a WAL
 * directory's files), and the daemon's power-cut test hook.
 */
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* open() is variadic; the table entry takes the mode always. */
static int pio_dflt_open(const char *path, int flags, mode_t mode)
{
	return open(path, flags, mode);
}

/* Reserve [off, off+len) of @p fd.  fallocate(2) where the file system has
 * it; posix_fallocate(3) (which may write zeros) where it has not.  Returns
 * -1 with errno like the other entries, not an error number. */
static int pio_dflt_fallocate(int fd, off_t off, off_t len)
{
	if (fallocate(fd, 0, off, len) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	int rc = posix_fallocate(fd, off, len);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

struct pio_entry {
	const char *pe_name;     /* the name tests use */
	pio_fn      pe_default;  /* the real call */
	pio_fn      pe_cur;      /* what callers get now */
};

#define PIO_ENTRY(name, fn) { name, (pio_fn)(fn), (pio_fn)(fn) }

static struct pio_entry pio_tab[PIO_COUNT] = {
	[PIO_OPEN]      = PIO_ENTRY("open", pio_dflt_open),
	[PIO_CLOSE]     = PIO_ENTRY("close", close),
	[PIO_PREAD]     = PIO_ENTRY("pread", pread),
	[PIO_PWRITE]    = PIO_ENTRY("pwrite", pwrite),
	[PIO_FDATASYNC] = PIO_ENTRY("fdatasync", fdatasync),
	[PIO_FSYNC]     = PIO_ENTRY("fsync", fsync),
	[PIO_FTRUNCATE] = PIO_ENTRY("ftruncate", ftruncate),
	[PIO_FALLOCATE] = PIO_ENTRY("fallocate", pio_dflt_fallocate),
	[PIO_FSTAT]     = PIO_ENTRY("fstat", fstat),
	[PIO_RENAME]    = PIO_ENTRY("rename", rename),
	[PIO_UNLINK]    = PIO_ENTRY("unlink", unlink),
	[PIO_MKDIR]     = PIO_ENTRY("mkdir", mkdir),
	[PIO_MMAP]      = PIO_ENTRY("mmap", mmap),
	[PIO_MUNMAP]    = PIO_ENTRY("munmap", munmap),
	[PIO_OPENDIR]   = PIO_ENTRY("opendir", opendir),
	[PIO_READDIR]   = PIO_ENTRY("readdir", readdir),
	[PIO_CLOSEDIR]  = PIO_ENTRY("closedir", closedir),
	[PIO_FLOCK]     = PIO_ENTRY("flock", flock),
};

pio_fn pio_get(enum pio_id id)
{
	/* Relaxed is enough: an entry is a self-contained function pointer and
	 * an override need not be ordered with anything else the caller does. */
	return __atomic_load_n(&pio_tab[id].pe_cur, __ATOMIC_RELAXED);
}

static struct pio_entry *pio_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (int i = 0; i < PIO_COUNT; i++)
		if (strcmp(pio_tab[i].pe_name, name) == 0)
			return &pio_tab[i];
	return NULL;
}

int pio_override(const char *name, pio_fn fn, pio_fn *old)
{
	struct pio_entry *e = pio_find(name);
	if (e == NULL)
		return -1;
	pio_fn prev = __atomic_exchange_n(&e->pe_cur, fn ? fn : e->pe_default,
	                                  __ATOMIC_SEQ_CST);
	if (old)
		*old = prev;
	return 0;
}

pio_fn pio_default(const char *name)
{
	struct pio_entry *e = pio_find(name);
	return e ? e->pe_default : NULL;
}

void pio_reset(void)
{
	for (int i = 0; i < PIO_COUNT; i++)
		__atomic_store_n(&pio_tab[i].pe_cur, pio_tab[i].pe_default, __ATOMIC_SEQ_CST);
}

/*
 * Policy for short writes: a regular file gives a short write when the disk
 * fills up in the middle of the request.  The remainder is tried exactly
 * once more, which either completes it or returns the real error (ENOSPC);
 * a second short write is reported as EIO.  A write is never retried after
 * it returned an error.
 */
int pio_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	const char *p = buf;
	int shorts = 0;
	while (n > 0) {
		ssize_t w = pio_pwrite(fd, p, n, off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if ((size_t)w < n) {
			if (++shorts > 1) {
				errno = EIO;
				return -1;
			}
		}
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

ssize_t pio_pread_full(int fd, void *buf, size_t n, off_t off)
{
	char *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = pio_pread(fd, p + got, n - got, off + (off_t)got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int pio_fsync_dir(const char *dir)
{
	int fd = pio_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int rc = pio_fsync(fd);
	int saved = errno;
	pio_close(fd);
	errno = saved;
	return rc;
}

/*
 * This thread's last refusal by pio_open_reg(), for pio_strerror(): a
 * buffer under a thread-specific key, not a __thread array.  The library
 * this file is part of has initial-exec TLS (engine/enter.c), so all of its
 * TLS must fit in glibc's static TLS surplus when Python or Java dlopen it;
 * a 4400-byte array here made that dlopen fail ("cannot allocate memory in
 * static TLS block").
 */
#define PIO_REFUSED_CAP 4400
static pthread_key_t pio_refused_key;
static pthread_once_t pio_refused_once = PTHREAD_ONCE_INIT;
static int pio_refused_ok;

static void pio_refused_init(void)
{
	pio_refused_ok = pthread_key_create(&pio_refused_key, free) == 0;
}

/* The calling thread's buffer; made when @p make; NULL when there is none. */
static char *pio_refused(int make)
{
	(void)pthread_once(&pio_refused_once, pio_refused_init);
	if (!pio_refused_ok)
		return NULL;
	char *b = pthread_getspecific(pio_refused_key);
	if (b == NULL && make && (b = malloc(PIO_REFUSED_CAP)) != NULL &&
	    pthread_setspecific(pio_refused_key, b) != 0) {
		free(b);
		b = NULL;
	}
	return b;
}

static const char *pio_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "a file of unknown type";
}

static int pio_refuse(const char *path, mode_t m)
{
	char *b = pio_refused(1);
	if (b != NULL)
		snprintf(b, PIO_REFUSED_CAP, "%s is %s, not a regular file", path, pio_kind(m));
	errno = PIO_ENOTREG;
	return -1;
}

int pio_open_reg(const char *path, int flags, mode_t mode)
{
	struct stat st;
	int fd = pio_open(path, flags | O_NONBLOCK, mode);
	if (fd < 0) {
		/* The name itself made the open fail: a directory opened for
		 * writing (EISDIR), a FIFO without a reader opened write-only
		 * or a socket (ENXIO).  stat() follows the name as open() did
		 * and cannot block; it only chooses the message, so it is not
		 * a table entry. */
		int e = errno;
		if ((e == EISDIR || e == ENXIO) && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return pio_refuse(path, st.st_mode);
		errno = e;
		return -1;
	}
	if (pio_fstat(fd, &st) != 0) {
		int e = errno;
		pio_close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		pio_close(fd);
		return pio_refuse(path, st.st_mode);
	}
	/* A regular file never waits, but the descriptor is handed on: it
	 * keeps the flags its caller asked for.  fcntl() cannot fail on a
	 * descriptor just opened, so no test needs to inject its failure. */
	if (!(flags & O_NONBLOCK)) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
			int e = errno;
			pio_close(fd);
			errno = e;
			return -1;
		}
	}
	return fd;
}

const char *pio_strerror(int err_no)
{
	if (err_no == PIO_ENOTREG) {
		const char *b = pio_refused(0);
		return b != NULL && b[0] != '\0' ? b : "not a regular file";
	}
	return strerror(err_no);
}

int pio_hex16_name(const char *name, const char *prefix, const char *ext, uint64_t *v)
{
	size_t pl = strlen(prefix), el = strlen(ext);
	if (strlen(name) != pl + 16 + 1 + el || strncmp(name, prefix, pl) != 0 ||
	    name[pl + 16] != '.' || strcmp(name + pl + 17, ext) != 0)
		return 0;
	uint64_t x = 0;
	for (size_t i = pl; i < pl + 16; i++) {
		char c = name[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return 0;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 1;
}

static int pio_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int pio_dir_numbers(const char *dir, int (*match)(const char *name, const void *arg, uint64_t *v),
                    const void *arg, uint64_t **vals, size_t *n)
{
	*vals = NULL;
	*n = 0;
	DIR *d = pio_opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	size_t cap = 0;
	int err = 0;
	struct dirent *e;
	errno = 0;
	while ((e = pio_readdir(d)) != NULL) {
		uint64_t v;
		if (!match(e->d_name, arg, &v))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			uint64_t *nv = realloc(*vals, cap * sizeof *nv);
			if (nv == NULL) {
				err = ENOMEM;
				break;
			}
			*vals = nv;
		}
		(*vals)[(*n)++] = v;
		errno = 0;
	}
	if (err == 0 && errno != 0)
		err = errno;
	pio_closedir(d);
	if (err != 0) {
		free(*vals);
		*vals = NULL;
		*n = 0;
		errno = err;
		return -1;
	}
	if (*n > 1)
		qsort(*vals, *n, sizeof **vals, pio_cmp_u64);
	return 0;
}

/* ------------------------------------------------------------------------
 * Test hook: the sync log (pio.h, pio_test_sync_log)
 * ------------------------------------------------------------------------ */

struct pio_wend {
	dev_t we_dev;
	ino_t we_ino;
	off_t we_end;           /* end of the furthest pwrite that returned */
};

static pthread_mutex_t pio_wend_mu = PTHREAD_MUTEX_INITIALIZER;  /* guards the three below */
static struct pio_wend pio_wend[256];
static size_t          pio_nwend;
static int             pio_log_fd = -1;
static unsigned        pio_sync_delay_ms;
static char           *pio_sync_hold;      /* FLASH_TEST_SYNC_HOLD: a path, or NULL */

/* @p fd's file in the table (added), or NULL; under pio_wend_mu.  By device
 * and inode: the WAL syncs through another descriptor than it writes. */
static struct pio_wend *pio_wend_of(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	for (size_t i = 0; i < pio_nwend; i++)
		if (pio_wend[i].we_dev == st.st_dev && pio_wend[i].we_ino == st.st_ino)
			return &pio_wend[i];
	if (pio_nwend == sizeof pio_wend / sizeof pio_wend[0])
		return NULL;
	pio_wend[pio_nwend] = (struct pio_wend){ st.st_dev, st.st_ino, 0 };
	return &pio_wend[pio_nwend++];
}

/* One line, one write(2) to an O_APPEND file: lines never interleave, and
 * each is in the page cache (it survives SIGKILL) once this returns. */
static void pio_log_line(const char *line, int n)
{
	ssize_t w = write(pio_log_fd, line, (size_t)n);
	(void)w;
}

static ssize_t pio_logged_pwrite(int fd, const void *b, size_t n, off_t off)
{
	ssize_t w = pwrite(fd, b, n, off);
	if (w <= 0)
		return w;
	pthread_mutex_lock(&pio_wend_mu);
	struct pio_wend *e = pio_wend_of(fd);
	if (e) {
		char line[128];
		if (off + w > e->we_end)
			e->we_end = off + w;
		pio_log_line(line, snprintf(line, sizeof line, "write %ju %ju %jd %jd\n", (uintmax_t)e->we_dev,
		                            (uintmax_t)e->we_ino, (intmax_t)off, (intmax_t)(off + w)));
	}
	pthread_mutex_unlock(&pio_wend_mu);
	return w;
}

/* What was written before the call began is what it makes durable: the
 * end is read first, the line written only once fdatasync returned. */
static int pio_logged_fdatasync(int fd)
{
	pthread_mutex_lock(&pio_wend_mu);
	struct pio_wend *e = pio_wend_of(fd);
	off_t end = e ? e->we_end : 0;
	pthread_mutex_unlock(&pio_wend_mu);
	if (pio_sync_delay_ms) {
		struct timespec ts = { pio_sync_delay_ms / 1000u, (long)(pio_sync_delay_ms % 1000u) * 1000000L };
		nanosleep(&ts, NULL);
	}
	/* a disk that does not return, for as long as the test says */
	while (pio_sync_hold != NULL && access(pio_sync_hold, F_OK) == 0) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	int rc = fdatasync(fd);
	if (rc == 0 && e) {
		char line[128];
		pthread_mutex_lock(&pio_wend_mu);
		pio_log_line(line, snprintf(line, sizeof line, "sync %ju %ju %jd\n", (uintmax_t)e->we_dev,
		                            (uintmax_t)e->we_ino, (intmax_t)end));
		pthread_mutex_unlock(&pio_wend_mu);
	}
	return rc;
}

int pio_test_sync_log(void)
{
	const char *path = getenv("FLASH_TEST_SYNC_LOG");
	const char *delay = getenv("FLASH_TEST_SYNC_DELAY_MS");
	if (path == NULL || *path == '\0')
		return 0;
	pio_log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (pio_log_fd < 0)
		return -1;
	pio_sync_delay_ms = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
	const char *hold = getenv("FLASH_TEST_SYNC_HOLD");
	if (hold != NULL && *hold != '\0' && (pio_sync_hold = strdup(hold)) == NULL)
		return -1;
	pio_override("pwrite", (pio_fn)pio_logged_pwrite, NULL);
	pio_override("fdatasync", (pio_fn)pio_logged_fdatasync, NULL);
	return 0;
}
