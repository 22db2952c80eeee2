/*
 * enospc_preload.c -- a disk (or /dev/shm) that is full, for tests of the
 * real binaries: LD_PRELOAD=libflash_enospc.so FLASH_TEST_ENOSPC=SUBSTR.
 *
 * A full file system refuses every request for new blocks: fallocate(2)
 * and posix_fallocate(3) fail with ENOSPC.  Writes into blocks a file
 * already has (it was preallocated) still succeed, and shrinking always
 * does -- so only the reservation calls are refused, and only for a file
 * whose path (from /proc/self/fd) contains SUBSTR.  Everything else is the
 * real call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* 1 if @p fd names a file whose path contains $FLASH_TEST_ENOSPC. */
static int enospc_full(int fd)
{
	const char *want = getenv("FLASH_TEST_ENOSPC");
	if (want == NULL || *want == 0)
		return 0;
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, want) != NULL;
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (enospc_full(fd)) {
		errno = ENOSPC;
		return -1;
	}
	int (*real)(int, int, off_t, off_t) = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT, "fallocate");
	return real(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len)
{
	return fallocate(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len)
{
	if (enospc_full(fd))
		return ENOSPC;
	int (*real)(int, off_t, off_t) = (int (*)(int, off_t, off_t))dlsym(RTLD_NEXT, "posix_fallocate");
	return real(fd, off, len);
}

int posix_fallocate64(int fd, off_t off, off_t len)
{
	return posix_fallocate(fd, off, len);
}
