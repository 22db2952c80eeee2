/*
 * slowio_preload.c -- a slow disk under the WAL, for the bench's fault round
 * (bench/faults.c): LD_PRELOAD=libflash_slowio.so into `flashstock serve`,
 * with
 *   FLASH_SLOWIO_CTL=FILE     a file whose first 4 bytes (native uint32) are
 *                             the delay in microseconds, read through a
 *                             shared mapping at every call: the bench turns
 *                             the fault on and off by writing that word; the
 *                             next 4 count the calls that were slowed, so the
 *                             bench can show the fault took effect;
 *   FLASH_SLOWIO_MATCH=SUBSTR only files whose path contains SUBSTR are slow
 *                             (the WAL directory).
 * pwrite(2) and fdatasync(2) of a matching file sleep for the delay before
 * the real call; everything else is the real call at once.  persist/storage/pio.c
 * takes the addresses of pwrite and fdatasync for its system-call table,
 * and those resolve to this library when it is preloaded, so the daemon is
 * slowed without a line of code in it: production pays nothing.
 *
 * With the delay at 0 a call costs one load of the mapped word more: the
 * path is looked up (readlink of /proc/self/fd) only while the fault is on.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t slowio_once = PTHREAD_ONCE_INIT;
static uint32_t *slowio_ctl;   /* [0] delay, us; [1] calls slowed; NULL: never slow */
static const char *slowio_match;

static void slowio_init(void)
{
	const char *ctl = getenv("FLASH_SLOWIO_CTL");
	int fd;
	void *p;

	slowio_match = getenv("FLASH_SLOWIO_MATCH");
	if (ctl == NULL || *ctl == '\0' || slowio_match == NULL || *slowio_match == '\0')
		return;
	fd = open(ctl, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		slowio_ctl = p;
}

/* Sleep the current delay if @p fd names a matching file. */
static void slowio_wait(int fd)
{
	char link[64], path[4096];
	uint32_t us;
	ssize_t n;

	pthread_once(&slowio_once, slowio_init);
	if (slowio_ctl == NULL)
		return;
	/* relaxed is enough: the word is a self-contained setting, and a call
	 * that sees the old value for a moment is still a slow or fast call */
	us = __atomic_load_n(&slowio_ctl[0], __ATOMIC_RELAXED);
	if (us == 0)
		return;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	if (n <= 0)
		return;
	path[n] = '\0';
	if (strstr(path, slowio_match) == NULL)
		return;
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L };
	nanosleep(&ts, NULL);
	/* relaxed: a statistic the bench reads after the daemon stopped */
	__atomic_add_fetch(&slowio_ctl[1], 1u, __ATOMIC_RELAXED);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);
	/* relaxed: every thread that looks the symbol up stores the same address */
	ssize_t (*fn)(int, const void *, size_t, off_t) = __atomic_load_n(&real, __ATOMIC_RELAXED);

	if (fn == NULL) {
		fn = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
		__atomic_store_n(&real, fn, __ATOMIC_RELAXED);
	}
	slowio_wait(fd);
	return fn(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

int fdatasync(int fd)
{
	static int (*real)(int);
	int (*fn)(int) = __atomic_load_n(&real, __ATOMIC_RELAXED);   /* as in pwrite() */

	if (fn == NULL) {
		fn = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
		__atomic_store_n(&real, fn, __ATOMIC_RELAXED);
	}
	slowio_wait(fd);
	return fn(fd);
}
