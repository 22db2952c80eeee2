/*
 * sink_src_feed.c -- the source of `flashstock feed --to` (sink_source.h)
 * over the order feed (flashstock.h section 10): the sink is one named
 * consumer of the WAL directory like any other.  Its position is the
 * feed's (DIR/feed/NAME.pos, durable at each commit), so `flashstock feed
 * --list` shows its lag and `serve` keeps the WAL files it still needs.
 *
 * Only durable records come out (the feed waits on DIR/DURABLE); a lost
 * range is refilled from MariaDB when a URL is given, else reading stops
 * with FLASH_ELOST.  Seeking back to the confirmed LSN is a commit of it
 * (never above what was handed out, never below the committed position)
 * and flash_feed_rewind().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink_source.h"

struct src_feed {
	struct sink_source sf_base;   /* first: the interface */
	flash_feed_t      *sf_f;
};

static int src_next(struct sink_source *s, struct sink_item *out, uint32_t wait_ms)
{
	struct src_feed *f = (struct src_feed *)s;
	struct flash_feed_rec r;
	int rc = flash_feed_next(f->sf_f, &r, wait_ms);

	if (rc == FLASH_ETIMEOUT)
		return 0;
	if (rc != FLASH_OK) {
		snprintf(s->what, sizeof s->what, "reading the feed: %s", flash_strerror(rc));
		return rc;
	}
	out->si_lsn = r.fr_lsn;
	out->si_rec = r.fr_rec;   /* a refill's gap record (type 0) is passed over by the sink */
	return 1;
}

static int src_commit(struct sink_source *s, uint64_t lsn)
{
	struct src_feed *f = (struct src_feed *)s;
	int rc;

	if (lsn <= s->committed)
		return FLASH_OK;
	rc = flash_feed_commit(f->sf_f, lsn);
	if (rc != FLASH_OK) {
		snprintf(s->what, sizeof s->what, "commit of LSN %llu: %s", (unsigned long long)lsn,
		         flash_strerror(rc));
		return rc;
	}
	s->committed = lsn;
	return FLASH_OK;
}

static int src_seek(struct sink_source *s, uint64_t lsn)
{
	struct src_feed *f = (struct src_feed *)s;
	int rc = src_commit(s, lsn);

	if (rc != FLASH_OK)
		return rc;
	rc = flash_feed_rewind(f->sf_f);
	if (rc != FLASH_OK)
		snprintf(s->what, sizeof s->what, "rewind: %s", flash_strerror(rc));
	return rc;
}

static uint64_t src_end_lsn(struct sink_source *s)
{
	struct src_feed *f = (struct src_feed *)s;
	struct flash_feed_info fi;

	return flash_feed_info_get(f->sf_f, &fi) == FLASH_OK ? fi.fi_durable_lsn : 0;
}

static void src_close(struct sink_source *s)
{
	struct src_feed *f = (struct src_feed *)s;

	flash_feed_close(f->sf_f);
	free(f);
}

static const struct sink_source_ops src_feed_ops = {
	.next = src_next,
	.commit = src_commit,
	.seek = src_seek,
	.end_lsn = src_end_lsn,
	.close = src_close,
};

int sink_source_open(const struct sink_source_opts *o, struct sink_source **out, char *why,
                     size_t cap)
{
	struct flash_feed_opts fo;
	struct flash_feed_info fi;
	struct src_feed *f;
	int rc;

	if (o == NULL || o->wal_dir == NULL || o->consumer == NULL)
		return FLASH_EINVAL;
	f = calloc(1, sizeof *f);
	if (f == NULL)
		return FLASH_ENOMEM;
	flash_feed_opts_default(&fo);
	fo.from_start = o->from_start ? 1 : 0;
	fo.mysql_url = o->mysql_url;
	rc = flash_feed_open(o->wal_dir, o->consumer, &fo, &f->sf_f);
	if (rc == FLASH_OK)
		rc = flash_feed_info_get(f->sf_f, &fi);
	if (rc != FLASH_OK) {
		snprintf(why, cap, "consumer %s: %s", o->consumer, flash_strerror(rc));
		if (f->sf_f != NULL)
			flash_feed_close(f->sf_f);
		free(f);
		return rc;
	}
	f->sf_base.ops = &src_feed_ops;
	f->sf_base.committed = fi.fi_committed_lsn;
	*out = &f->sf_base;
	return FLASH_OK;
}
