/*
 * test_wal_crash.c -- power loss at any fdatasync, in the manner of SQLite's
 * test6.c.  A child process appends and commits frames through a system-call
 * table whose pwrite only buffers: a write reaches the file when an
 * fdatasync of that file returns (through any descriptor of it: the WAL
 * syncs through a copy of the writer's).  At the Nth fdatasync the "power
 * fails": every unsynced write is, 512 bytes at a time, kept, dropped or
 * garbled, and the child ends on the spot.  Then, for every N:
 *  - replay passes frames 1..k in order, each with its exact payload, and
 *    k covers every frame the child saw acknowledged (wal_sync returned);
 *  - nothing garbled is ever passed;
 *  - after truncating the torn tail the WAL opens and appends go on.
 * (Directory operations -- create, rename, unlink -- count as durable at
 * once; their order is forced by the WAL with fsyncs anyway.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "pio.h"
#include "wal_testutil.h"

typedef ssize_t (*pwrite_t)(int, const void *, size_t, off_t);

struct pend {
	int            fd;
	dev_t          dev;      /* the file written */
	ino_t          ino;
	off_t          off;
	size_t         n;
	unsigned char *data;
};

static struct pend g_pend[8192];
static size_t      g_npend;
static unsigned    g_syncs, g_crash_at, g_seed;

static ssize_t real_pwrite(int fd, const void *b, size_t n, off_t off)
{
	return ((pwrite_t)pio_default("pwrite"))(fd, b, n, off);
}

static ssize_t buffered_pwrite(int fd, const void *b, size_t n, off_t off)
{
	if (g_npend == sizeof g_pend / sizeof g_pend[0])
		_exit(90);
	unsigned char *d = malloc(n);
	if (d == NULL)
		_exit(91);
	memcpy(d, b, n);
	struct stat st;
	if (fstat(fd, &st) != 0)
		_exit(96);
	g_pend[g_npend++] = (struct pend){ fd, st.st_dev, st.st_ino, off, n, d };
	return (ssize_t)n;
}

/* Each unsynced write, per 512-byte sector of the file: kept, dropped, or
 * garbled -- in any combination, as a disk might leave them. */
static void power_loss(void)
{
	for (size_t i = 0; i < g_npend; i++) {
		struct pend *p = &g_pend[i];
		off_t a = p->off;
		while (a < p->off + (off_t)p->n) {
			off_t b = (a / 512 + 1) * 512;
			if (b > p->off + (off_t)p->n)
				b = p->off + (off_t)p->n;
			unsigned char *src = p->data + (a - p->off);
			unsigned char junk[512];
			switch (rand_r(&g_seed) % 3) {
			case 0:
				real_pwrite(p->fd, src, (size_t)(b - a), a);
				break;
			case 1:
				break;
			case 2:
				for (off_t k = 0; k < b - a; k++)
					junk[k] = (unsigned char)rand_r(&g_seed);
				real_pwrite(p->fd, junk, (size_t)(b - a), a);
				break;
			}
			a = b;
		}
	}
	_exit(0);
}

static int crashing_fdatasync(int fd)
{
	if (++g_syncs == g_crash_at)
		power_loss();
	/* The writes of this file reach it, in order. */
	struct stat st;
	if (fstat(fd, &st) != 0)
		_exit(96);
	size_t keep = 0;
	for (size_t i = 0; i < g_npend; i++) {
		if (g_pend[i].dev == st.st_dev && g_pend[i].ino == st.st_ino) {
			if (real_pwrite(fd, g_pend[i].data, g_pend[i].n, g_pend[i].off) != (ssize_t)g_pend[i].n)
				_exit(92);
			free(g_pend[i].data);
		} else {
			g_pend[keep++] = g_pend[i];
		}
	}
	g_npend = keep;
	return 0;
}

#define CRASH_FRAMES 600
#define CRASH_SEG    8192u     /* about 70 frames a file: many rollovers */

/* The child: frames 1..CRASH_FRAMES in commits of 1..12 frames; after each
 * commit, the highest acknowledged LSN goes to shared memory. */
static void child(const char *dir, unsigned crash_at, unsigned seed, uint64_t *acked)
{
	g_crash_at = crash_at;
	g_seed = seed;
	pio_override("pwrite", (pio_fn)buffered_pwrite, NULL);
	pio_override("fdatasync", (pio_fn)crashing_fdatasync, NULL);
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = CRASH_SEG;
	wal_t *w;
	if (wal_open(dir, &o, &w) != FLASH_OK)
		_exit(93);
	unsigned char p[256];
	uint64_t l = 1;
	while (l <= CRASH_FRAMES) {
		unsigned k = 1 + rand_r(&g_seed) % 12;
		uint64_t last = 0;
		for (unsigned i = 0; i < k && l <= CRASH_FRAMES; i++, l++) {
			wt_payload(l, p, wt_len(l));
			if (wal_append(w, WAL_T_RECORD, p, wt_len(l), &last) != FLASH_OK)
				_exit(94);
		}
		if (wal_sync(w, last) != FLASH_OK)
			_exit(95);
		__atomic_store_n(acked, last, __ATOMIC_SEQ_CST);
	}
	wal_close(w);
	_exit(0);
}

static void test_power_loss_at_every_fdatasync_keeps_every_acknowledged_frame(void **st)
{
	(void)st;
	uint64_t *acked = mmap(NULL, sizeof *acked, PROT_READ | PROT_WRITE,
	                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(acked != MAP_FAILED);
	unsigned crash_at = 1, torn = 0, clean = 0;
	uint64_t total_acked = 0;
	for (;; crash_at++) {
		char *dir = wt_mkdtemp();
		*acked = 0;
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child(dir, crash_at, 0x5eed + crash_at, acked);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		uint64_t a = *acked;

		struct wt_seen s = { 0 };
		struct wal_replay_report rep;
		int rc = wal_replay(dir, 0, wt_collect, &s, 0, &rep);
		assert_true(rc == FLASH_OK || (rc <= FLASH_EWAL_ZERO_LEN && rc >= FLASH_EWAL_PREV));
		assert_int_equal(s.bad_payload, 0);
		if (s.n > 0) {
			assert_int_equal(s.first, 1);
			assert_true(s.ordered);
		}
		assert_true(s.n >= a);                 /* nothing acknowledged is lost */
		if (rc == FLASH_OK)
			clean++;
		else
			torn++;

		/* Cut the tail; the WAL opens and goes on from s.n + 1. */
		memset(&s, 0, sizeof s);
		rc = wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep);
		assert_true(rc == FLASH_OK || (rc <= FLASH_EWAL_ZERO_LEN && rc >= FLASH_EWAL_PREV));
		uint64_t kept = s.n;
		wal_t *w;
		struct wal_opts o;
		wal_opts_default(&o);
		o.segment_bytes = CRASH_SEG;
		assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
		assert_int_equal(wal_next_lsn(w), kept + 1);
		unsigned char p[256];
		wt_payload(kept + 1, p, wt_len(kept + 1));
		assert_int_equal(wal_submit(w, WAL_T_RECORD, p, wt_len(kept + 1), NULL), FLASH_OK);
		assert_int_equal(wal_close(w), FLASH_OK);
		memset(&s, 0, sizeof s);
		assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
		assert_int_equal(s.n, kept + 1);
		assert_int_equal(s.bad_payload, 0);
		wt_rmdir(dir);
		total_acked += a;
		if (a == CRASH_FRAMES)   /* the child finished before the Nth fdatasync */
			break;
	}
	print_message("    %u crash points: %u torn tails, %u clean ends, %" PRIu64
	              " acknowledged frames checked\n", crash_at, torn, clean, total_acked);
	assert_true(torn > 0);
	munmap(acked, sizeof *acked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_loss_at_every_fdatasync_keeps_every_acknowledged_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
