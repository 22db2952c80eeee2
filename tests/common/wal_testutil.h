/*
 * wal_testutil.h -- helpers shared by the test_wal_*.c programs (tests/unit/,
 * tests/sql/) and the other tests that write a WAL:
 * a private temporary directory per test, whole-file read/write with the
 * real system calls (the tests forge files behind the WAL's back), and a
 * replay callback that records what it was given.
 */
#ifndef FLASH_WAL_TESTUTIL_H
#define FLASH_WAL_TESTUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "wal.h"

static inline int wt_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

/* A fresh directory under $TMPDIR (or /tmp); the caller frees the string. */
static inline char *wt_mkdtemp(void)
{
	const char *t = getenv("TMPDIR");
	char *p;
	if (asprintf(&p, "%s/flash-wal-XXXXXX", t ? t : "/tmp") < 0)
		abort();
	if (mkdtemp(p) == NULL)
		abort();
	return p;
}

static inline void wt_rmdir(char *dir)
{
	nftw(dir, wt_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static inline char *wt_file(const char *dir, uint64_t start_lsn)
{
	char *p;
	if (asprintf(&p, "%s/wal-%016" PRIx64 ".log", dir, start_lsn) < 0)
		abort();
	return p;
}

/* Read a whole file; *n its size.  Aborts on error. */
static inline unsigned char *wt_read(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		abort();
	struct stat st;
	if (fstat(fd, &st) != 0)
		abort();
	unsigned char *b = malloc((size_t)st.st_size + 1);
	if (b == NULL || pread(fd, b, (size_t)st.st_size, 0) != st.st_size)
		abort();
	close(fd);
	*n = (size_t)st.st_size;
	return b;
}

/* Replace a file's content by exactly @p n bytes. */
static inline void wt_write(const char *path, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0 || (n > 0 && pwrite(fd, b, n, 0) != (ssize_t)n))
		abort();
	close(fd);
}

static inline int wt_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* What a replay delivered. */
struct wt_seen {
	uint64_t n;          /* frames */
	uint64_t first;      /* first LSN */
	uint64_t last;       /* last LSN */
	int      ordered;    /* 1 while every LSN was the previous + 1 */
	uint64_t bad_payload;/* frames whose payload differs from wt_payload() */
};

/* Deterministic payload for frame @p lsn: @p len bytes, none zero. */
static inline void wt_payload(uint64_t lsn, unsigned char *p, uint32_t len)
{
	uint64_t x = lsn * 0x9E3779B97F4A7C15ull + 1;
	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		p[i] = (unsigned char)(x | 1);
	}
}

/* Payload length used by the round-trip tests for frame @p lsn. */
static inline uint32_t wt_len(uint64_t lsn)
{
	return (uint32_t)(sizeof(struct wal_rec) + (lsn * 7919u) % 57u);
}

static inline int wt_collect(void *arg, uint64_t lsn, uint16_t type,
                             const void *payload, uint32_t len)
{
	struct wt_seen *s = arg;
	unsigned char buf[4096];
	if (s->n == 0) {
		s->first = lsn;
		s->ordered = 1;
	} else if (lsn != s->last + 1) {
		s->ordered = 0;
	}
	s->last = lsn;
	s->n++;
	if (len <= sizeof buf) {
		wt_payload(lsn, buf, len);
		if (type != WAL_T_RECORD || memcmp(buf, payload, len) != 0)
			s->bad_payload++;
	} else {
		s->bad_payload++;
	}
	return 0;
}

#ifdef FLASH_SERVE_H
#include <pthread.h>
#include <signal.h>

/* serve_run() on a thread of the test: fill o, pthread_create(&th, NULL,
 * serve_thread_main, t), set stop (atomic store), join; rc and st are its
 * return value and statistics. */
struct serve_thread {
	struct serve_opts     o;
	struct serve_stats    st;
	volatile sig_atomic_t stop;
	int                   rc;
	pthread_t             th;
};

static inline void *serve_thread_main(void *arg)
{
	struct serve_thread *t = arg;
	t->rc = serve_run(&t->o, &t->st);
	return NULL;
}
#endif /* FLASH_SERVE_H */

#endif /* FLASH_WAL_TESTUTIL_H */
