/*
 * sink_source.h -- where `flashstock feed --to` takes its records from: a
 * small interface between the RabbitMQ sink's loop (tools/cmd_feed_to.c)
 * and a durable, named position over the WAL (the order feed, in
 * tools/sink_src_feed.c; the loop is tested apart from it through this).
 *
 * A source hands out records in LSN order from its position, and moves its
 * durable position only when told (sink_src_commit): the sink commits the
 * LSN its broker has confirmed, never more.  After a lost connection the
 * sink seeks back to the confirmed position and reads again (at least once).
 *
 * Synchronization: one thread per source.
 */
#ifndef FLASH_TOOLS_SINK_SOURCE_H
#define FLASH_TOOLS_SINK_SOURCE_H

#include <stdint.h>

#include "flashstock.h"

struct sink_item {
	uint64_t            si_lsn;   /* the record's WAL LSN */
	struct flash_record si_rec;   /* every field of the record */
};

struct sink_source;

struct sink_source_ops {
	/* The next record after the read position, waiting up to @p wait_ms for
	 * one to become durable.  @return 1 (one in *out), 0 (none within the
	 * wait), or a negative FLASH_E* code. */
	int  (*next)(struct sink_source *s, struct sink_item *out, uint32_t wait_ms);
	/* Make @p lsn the durable position: a restart reads from lsn + 1.
	 * @return FLASH_OK or a negative code. */
	int  (*commit)(struct sink_source *s, uint64_t lsn);
	/* Read from @p lsn + 1 next (lsn >= the committed position).
	 * @return FLASH_OK or a negative code. */
	int  (*seek)(struct sink_source *s, uint64_t lsn);
	/* The highest LSN that could be read now (for the lag), 0 if unknown. */
	uint64_t (*end_lsn)(struct sink_source *s);
	void (*close)(struct sink_source *s);
};

struct sink_source {
	const struct sink_source_ops *ops;
	uint64_t committed;               /* the durable position at open, then as committed */
	char     what[4400];              /* why the last call failed, for messages */
};

/* The options a source is opened with (`feed --to` passes its own). */
struct sink_source_opts {
	const char *wal_dir;      /* the WAL directory `serve` writes */
	const char *consumer;     /* the consumer's name */
	const char *mysql_url;    /* refill source for a lost range (NULL: none) */
	int         from_start;   /* a new consumer starts at the oldest record, else at
	                             the durable end */
};

/**
 * Open the source `feed --to` uses: the order feed's consumer o->consumer
 * (tools/sink_src_feed.c).  @p why (@p cap bytes) says what failed.
 * @return FLASH_OK; a code of flash_feed_open().
 */
int sink_source_open(const struct sink_source_opts *o, struct sink_source **out, char *why,
                     size_t cap);

#endif /* FLASH_TOOLS_SINK_SOURCE_H */
