/*
 * sink_src_wal.c -- the source of `flashstock feed --to` read straight from
 * the WAL directory (sink_source.h): a position file of its own and
 * wal_replay() from it, bounded by the LSN the segment says is durable.
 *
 * Position: DIR/sink-<consumer>.pos, one decimal LSN and a newline,
 * replaced by write + fsync + rename + directory fsync, so a kill at any
 * point leaves the old position or the new one.
 *
 * Durability bound: with a segment name the source reads only up to the
 * segment's WAL LSN (flash_ident_get: the daemon sets it after each
 * commit), so it never hands out a frame the daemon has written but not
 * yet fdatasync'd.  Without one, the WAL's readable end is taken.
 * Waiting: a sleep of at most the caller's wait between looks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sink_source.h"
#include "wal.h"

#define SRC_BATCH 4096u

struct src_wal {
	struct sink_source sw_base;     /* first: the interface */
	char     sw_dir[PATH_MAX];
	char     sw_pos[PATH_MAX];      /* the position file */
	flash_t *sw_h;                  /* read-only handle for the durable bound, or NULL */
	uint64_t sw_read;               /* LSN of the last record handed out */
	struct sink_item *sw_buf;       /* records read ahead */
	uint32_t sw_n, sw_i;
	uint64_t sw_end;                /* highest LSN seen readable */
};

struct src_collect {
	struct src_wal *c;
	uint64_t bound;                 /* last LSN that may be read */
};

static int src_collect_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct src_collect *k = arg;
	struct src_wal *w = k->c;

	if (lsn > k->bound)
		return 1;
	if (w->sw_end < lsn)
		w->sw_end = lsn;
	if (type == WAL_T_RECORD && len >= sizeof(struct wal_rec)) {
		struct wal_rec r;
		memcpy(&r, p, sizeof r);
		w->sw_buf[w->sw_n].si_lsn = lsn;
		w->sw_buf[w->sw_n].si_rec = r.wr_rec;
		w->sw_n++;
	}
	return w->sw_n == SRC_BATCH;
}

static uint64_t src_bound(struct src_wal *w)
{
	struct flash_ident id;

	if (w->sw_h == NULL)
		return UINT64_MAX;
	if (flash_ident_get(w->sw_h, &id) != FLASH_OK)
		return 0;
	return id.wal_lsn;
}

/* Read the next batch after sw_read.  @return records read, or < 0. */
static int src_fill(struct src_wal *w)
{
	struct wal_replay_report rep;
	struct src_collect k = { .c = w, .bound = src_bound(w) };
	int rc;

	w->sw_n = w->sw_i = 0;
	if (k.bound <= w->sw_read)
		return 0;
	rc = wal_replay(w->sw_dir, w->sw_read + 1, src_collect_cb, &k, 0, &rep);
	if (rc == WAL_EGAP && rep.last_lsn == 0) {
		snprintf(w->sw_base.what, sizeof w->sw_base.what,
		         "WAL files from LSN %" PRIu64 " are gone", w->sw_read + 1);
		return FLASH_ENOT_FOUND;
	}
	if (rc == WAL_EIO) {
		snprintf(w->sw_base.what, sizeof w->sw_base.what, "reading %s: %s", w->sw_dir,
		         strerror(rep.err_no));
		return FLASH_ESYS;
	}
	/* any other stop is the live tail (a frame being written): read again later */
	return (int)w->sw_n;
}

static int src_next(struct sink_source *s, struct sink_item *out, uint32_t wait_ms)
{
	struct src_wal *w = (struct src_wal *)s;
	int rc;

	if (w->sw_i == w->sw_n) {
		rc = src_fill(w);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			struct timespec ts = { .tv_sec = wait_ms / 1000,
			                       .tv_nsec = (long)(wait_ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
			rc = src_fill(w);
			if (rc <= 0)
				return rc;
		}
	}
	*out = w->sw_buf[w->sw_i++];
	w->sw_read = out->si_lsn;
	return 1;
}

static int src_write_pos(struct src_wal *w, uint64_t lsn)
{
	char tmp[PATH_MAX + 8], line[32];
	int fd, n = snprintf(line, sizeof line, "%" PRIu64 "\n", lsn);

	snprintf(tmp, sizeof tmp, "%s.tmp", w->sw_pos);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	if (write(fd, line, (size_t)n) != n || fsync(fd) != 0) {
		close(fd);
		goto fail;
	}
	close(fd);
	if (rename(tmp, w->sw_pos) != 0)
		goto fail;
	fd = open(w->sw_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	close(fd);
	return FLASH_OK;
fail:
	snprintf(w->sw_base.what, sizeof w->sw_base.what, "position file %s: %s", w->sw_pos,
	         strerror(errno));
	return FLASH_ESYS;
}

static int src_commit(struct sink_source *s, uint64_t lsn)
{
	struct src_wal *w = (struct src_wal *)s;
	int rc;

	if (lsn <= s->committed)
		return FLASH_OK;
	rc = src_write_pos(w, lsn);
	if (rc == FLASH_OK)
		s->committed = lsn;
	return rc;
}

static int src_seek(struct sink_source *s, uint64_t lsn)
{
	struct src_wal *w = (struct src_wal *)s;

	w->sw_read = lsn;
	w->sw_n = w->sw_i = 0;
	return FLASH_OK;
}

static uint64_t src_end_lsn(struct sink_source *s)
{
	struct src_wal *w = (struct src_wal *)s;
	uint64_t b = src_bound(w);

	return b == UINT64_MAX ? w->sw_end : b;
}

static void src_close(struct sink_source *s)
{
	struct src_wal *w = (struct src_wal *)s;

	if (w->sw_h != NULL)
		flash_close(w->sw_h);
	free(w->sw_buf);
	free(w);
}

static const struct sink_source_ops src_wal_ops = {
	.next = src_next,
	.commit = src_commit,
	.seek = src_seek,
	.end_lsn = src_end_lsn,
	.close = src_close,
};

static int src_last_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(void)type; (void)p; (void)len;
	*(uint64_t *)arg = lsn;
	return 0;
}

int sink_source_open(const struct sink_source_opts *o, struct sink_source **out, char *why,
                     size_t cap)
{
	struct src_wal *w;
	FILE *f;
	int rc;

	if (o == NULL || o->wal_dir == NULL || o->consumer == NULL || o->consumer[0] == '\0' ||
	    strchr(o->consumer, '/') != NULL)
		return FLASH_EINVAL;
	w = calloc(1, sizeof *w);
	if (w == NULL || (w->sw_buf = calloc(SRC_BATCH, sizeof *w->sw_buf)) == NULL) {
		free(w);
		return FLASH_ENOMEM;
	}
	w->sw_base.ops = &src_wal_ops;
	snprintf(w->sw_dir, sizeof w->sw_dir, "%s", o->wal_dir);
	snprintf(w->sw_pos, sizeof w->sw_pos, "%s/sink-%s.pos", o->wal_dir, o->consumer);
	if (o->segment != NULL) {
		rc = flash_open(o->segment, FLASH_RDONLY, &w->sw_h);
		if (rc != FLASH_OK) {
			snprintf(why, cap, "segment %s: %s", o->segment, flash_strerror(rc));
			free(w->sw_buf);
			free(w);
			return rc;
		}
	}
	f = fopen(w->sw_pos, "r");
	if (f != NULL) {
		unsigned long long v;
		if (fscanf(f, "%llu", &v) != 1) {
			fclose(f);
			snprintf(why, cap, "position file %s is not a number", w->sw_pos);
			src_close(&w->sw_base);
			return FLASH_EINVAL;
		}
		fclose(f);
		w->sw_base.committed = v;
	} else if (errno != ENOENT) {
		snprintf(why, cap, "position file %s: %s", w->sw_pos, strerror(errno));
		src_close(&w->sw_base);
		return FLASH_ESYS;
	} else {
		/* a new consumer: from the start, or from the readable end now */
		uint64_t start = 0;
		if (!o->from_start) {
			struct wal_replay_report rep;
			(void)wal_replay(o->wal_dir, 0, src_last_cb, &start, 0, &rep);
			uint64_t b = src_bound(w);
			if (start > b)
				start = b;
		}
		if (src_write_pos(w, start) != FLASH_OK) {
			snprintf(why, cap, "%s", w->sw_base.what);
			src_close(&w->sw_base);
			return FLASH_ESYS;
		}
		w->sw_base.committed = start;
	}
	w->sw_read = w->sw_base.committed;
	*out = &w->sw_base;
	return FLASH_OK;
}
