/*
 * lease_testutil.h -- what the lease agent's programs share
 * (test_mysql_lease_agent.c, test_mysql_lease_suspend.c, lease_proof.c).
 *
 * Divisions:
 *   1. The power cut     lt_synclog_fresh(), lt_drop_unsynced()
 *   2. The fixture       lt_bin(), lt_central_fresh(), lt_q1v(), lt_mariadb(),
 *                        lt_metric()
 *
 * Division 1 needs neither cmocka nor the test helpers: lease_proof.c, a
 * program of its own, defines LT_NO_CMOCKA before the include and gets it
 * alone; its functions report an error as -1 with a line on stderr, which
 * each caller turns into its own failure.  Division 2 is for the cmocka
 * programs: the binary under test, a fresh central database on the MariaDB
 * fixture, one-value queries, the fixture server's verbs (halt, resume,
 * freeze, thaw) and one sample of the metrics of a `serve` whose log names
 * its port; an error there fails the test.  Each program keeps its own box:
 * what a box holds differs between them.
 */
#ifndef LEASE_TESTUTIL_H
#define LEASE_TESTUTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- 1. The power cut ---------------------------------------------------
 *
 * A `serve` run with FLASH_TEST_SYNC_LOG=FILE (persist/storage/pio.h) logs each
 * pwrite ("write DEV INO OFF END") and each fdatasync ("sync DEV INO END")
 * that succeeded.  After SIGKILL the test drops what the power would have
 * taken from its WAL with lt_drop_unsynced(); the segment in /dev/shm is
 * the caller's to destroy.
 *
 * One log per serve: lt_synclog_fresh() empties it before each start, and
 * a cut reads only the log of the serve it kills.  What an earlier serve
 * left unsynced is durable by then: a serve's start fdatasyncs its WAL's
 * last file (wal_open) before it tells anyone a record is durable -- a sync
 * the hook logs with that serve's own END (0), so the logs of earlier
 * serves, read together, would drop durable bytes.
 */

/* Empty (or create) the sync log @p synclog for the next serve.
 * @return 0; -1 with a line on stderr. */
static inline int lt_synclog_fresh(const char *synclog)
{
	int fd = open(synclog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "sync log %s: %s\n", synclog, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

struct lt_synced {
	uintmax_t ls_dev, ls_ino;
	intmax_t  ls_off, ls_end;       /* a write: ls_off..ls_end-1; a sync: ls_end */
	int       ls_sync;
};

/* @p x is an entry of the file @p st. */
static inline int lt_synced_of(const struct lt_synced *x, const struct stat *st)
{
	return x->ls_dev == (uintmax_t)st->st_dev && x->ls_ino == (uintmax_t)st->st_ino;
}

struct lt_span {
	intmax_t sp_from, sp_to;
};

static inline int lt_span_cmp(const void *a, const void *b)
{
	const struct lt_span *x = a, *y = b;
	return x->sp_from < y->sp_from ? -1 : x->sp_from > y->sp_from;
}

/* The entries of sync log @p synclog in *v (malloc'd), in the order they
 * were logged.  @return the count; -1 with a line on stderr. */
static inline long lt_synclog_read(const char *synclog, struct lt_synced **v)
{
	*v = NULL;
	FILE *f = fopen(synclog, "r");
	if (!f) {
		fprintf(stderr, "sync log %s: %s\n", synclog, strerror(errno));
		return -1;
	}
	size_t n = 0, cap = 0;
	char line[256];
	long lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		struct lt_synced x = { 0 };
		if (sscanf(line, "write %ju %ju %jd %jd", &x.ls_dev, &x.ls_ino, &x.ls_off, &x.ls_end) != 4) {
			if (sscanf(line, "sync %ju %ju %jd", &x.ls_dev, &x.ls_ino, &x.ls_end) != 3) {
				fprintf(stderr, "sync log %s, line %ld: not a write nor a sync: %s", synclog, lineno,
				        line);
				goto fail;
			}
			x.ls_sync = 1;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct lt_synced *p = realloc(*v, cap * sizeof *p);
			if (!p) {
				fprintf(stderr, "sync log %s: out of memory\n", synclog);
				goto fail;
			}
			*v = p;
		}
		(*v)[n++] = x;
	}
	if (ferror(f)) {
		fprintf(stderr, "sync log %s: read error\n", synclog);
		goto fail;
	}
	fclose(f);
	return (long)n;
fail:
	fclose(f);
	free(*v);
	*v = NULL;
	return -1;
}

/*
 * The power fails under the serve that SIGKILL ended and that logged to
 * @p synclog: of each WAL file in @p waldir (wal-*.log), the bytes that
 * serve wrote above the end of its last fdatasync of the file are dropped
 * -- zeroed, as the preallocated file read before the write.  Bytes below
 * that end, and bytes no write of the log touched, stay.
 *
 * A file's entries are by device and inode, and an inode is reused once
 * its file is gone (a WAL file removed, a lease.intent replaced): a file's
 * life in the log starts at its last write at offset 0 -- a WAL file's
 * header, written before anything else of it (wal_roll; or re-stamped by
 * wal_open, at the log's start) -- and what came before on that inode was
 * another file's.
 * @return the WAL bytes dropped (0: everything written was synced); -1
 * with a line on stderr (the log or a WAL file unreadable, a write failed).
 */
static inline long lt_drop_unsynced(const char *synclog, const char *waldir)
{
	struct lt_synced *v;
	long n = lt_synclog_read(synclog, &v);
	if (n < 0)
		return -1;
	struct lt_span *sp = malloc(((size_t)n + 1) * sizeof *sp);
	DIR *d = opendir(waldir);
	if (!sp || !d) {
		fprintf(stderr, "power cut of %s: %s\n", waldir, sp ? strerror(errno) : "out of memory");
		if (d)
			closedir(d);
		free(sp);
		free(v);
		return -1;
	}
	static const char zeros[4096];
	long dropped = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "wal-", 4) != 0 || !strstr(e->d_name, ".log"))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", waldir, e->d_name);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) {
			fprintf(stderr, "power cut: %s: %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		long from = n;          /* this file's life in the log: from its last write at 0 */
		while (from > 0 &&
		       !(lt_synced_of(&v[from - 1], &st) && !v[from - 1].ls_sync && v[from - 1].ls_off == 0))
			from--;
		if (from > 0)
			from--;
		intmax_t synced = 0;
		for (long i = from; i < n; i++)
			if (v[i].ls_sync && lt_synced_of(&v[i], &st) && v[i].ls_end > synced)
				synced = v[i].ls_end;
		/* the unsynced writes, clipped at the synced end; counted as
		 * their union (a range written twice is dropped once) */
		size_t ns = 0;
		for (long i = from; i < n; i++)
			if (!v[i].ls_sync && lt_synced_of(&v[i], &st) && v[i].ls_end > synced)
				sp[ns++] = (struct lt_span){ v[i].ls_off > synced ? v[i].ls_off : synced, v[i].ls_end };
		qsort(sp, ns, sizeof *sp, lt_span_cmp);
		intmax_t covered = 0;           /* dropped up to here in this file */
		for (size_t i = 0; i < ns; i++) {
			intmax_t at = sp[i].sp_from > covered ? sp[i].sp_from : covered;
			while (at < sp[i].sp_to) {
				size_t len = sp[i].sp_to - at < (intmax_t)sizeof zeros ? (size_t)(sp[i].sp_to - at)
				                                                         : sizeof zeros;
				if (pwrite(fd, zeros, len, (off_t)at) != (ssize_t)len) {
					fprintf(stderr, "power cut: %s: zeroing at %jd: %s\n", path, at,
					        strerror(errno));
					close(fd);
					goto fail;
				}
				at += (intmax_t)len;
				dropped += (long)len;
			}
			if (sp[i].sp_to > covered)
				covered = sp[i].sp_to;
		}
		close(fd);
	}
	closedir(d);
	free(sp);
	free(v);
	return dropped;
fail:
	closedir(d);
	free(sp);
	free(v);
	return -1;
}

#ifndef LT_NO_CMOCKA

/* ---- 2. The fixture (cmocka programs) ---------------------------------- */

#include <mysql.h>

#include "flashstock.h"
#include "helpers.h"
#include "central.h"
#include "mysql_testutil.h"

/* The flashstock binary (ctest sets FLASH_BIN). */
static inline const char *lt_bin(void)
{
	const char *b = getenv("FLASH_BIN");
	if (!b) {
		fprintf(stderr, "FLASH_BIN is not set: run through ctest\n");
		exit(1);
	}
	return b;
}

/* A new, empty database "<prefix>_<name>_<pid>" with the central tables;
 * its URL in @p url, the open handle in *c. */
static inline void lt_central_fresh(char *url, size_t len, const char *prefix, const char *name,
                                    central_t **c)
{
	char db[64];
	snprintf(db, sizeof db, "%s_%s_%d", prefix, name, (int)getpid());
	mysql_fresh_db(url, len, db);
	struct central_opts o = { .urls = url };
	assert_int_equal(central_open(&o, c), FLASH_OK);
	assert_int_equal(central_init(*c), FLASH_OK);
}

/* The first column of the first row of a query on the central connection
 * (0 when there is none); any SQL error fails the test. */
static inline int64_t lt_q1v(central_t *c, const char *fmt, va_list ap)
{
	char sql[512];
	vsnprintf(sql, sizeof sql, fmt, ap);
	MYSQL *m = central_conn(c);
	assert_non_null(m);
	if (mysql_query(m, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(m));
		fail();
	}
	MYSQL_RES *r = mysql_store_result(m);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

/* The fixture's server: "halt", "resume", "freeze", "thaw" (fixtures'
 * mariadb.sh).  Quiet: 0 or -1. */
static inline int lt_mariadb_try(const char *verb)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' >/dev/null 2>&1", getenv("FLASH_TEST_MARIADB_SH"), verb,
	         mariadb_dir());
	return system(cmd) == 0 ? 0 : -1;
}

static inline void lt_mariadb(const char *verb)
{
	if (lt_mariadb_try(verb) != 0)
		fail_msg("mariadb.sh %s failed", verb);
}

/* One sample of metric @p name from the `serve --metrics 127.0.0.1:0`
 * whose log @p log names its port ("metrics on port N"; waited for up to
 * 10 s); UINT64_MAX when serve does not export it. */
static inline uint64_t lt_metric(const char *log, const char *name)
{
	unsigned port = 0;
	for (int i = 0; i < 500 && !port; i++) {
		FILE *f = fopen(log, "r");
		char line[1024];
		while (f && fgets(line, sizeof line, f)) {
			const char *p = strstr(line, "metrics on port ");
			if (p)
				port = (unsigned)strtoul(p + strlen("metrics on port "), NULL, 10);
		}
		if (f)
			fclose(f);
		if (!port)
			t_sleep_ms(20);
	}
	assert_true(port != 0);
	char *body = t_metrics_get((uint16_t)port);
	assert_non_null(body);
	uint64_t v = t_metrics_sample(body, name);
	free(body);
	return v;
}

#endif /* LT_NO_CMOCKA */

#endif /* LEASE_TESTUTIL_H */
