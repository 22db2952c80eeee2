/*
 * example_feed_consumer.c -- the C consumer of docs/feed.md ("Consuming
 * orders"; its "From C" section shows the marked region
 * unchanged: tests/cli/cli_feed_example.sh checks it, builds this file against
 * the public library only, and runs it on a real sale).
 *
 * usage: example_feed_consumer [WAL_DIR [--idle-exit]]
 *   --idle-exit  stop at the first second without a new record (for tests)
 */
/* README begin */
#include <stdio.h>
#include <string.h>

#include <flashstock.h>

/* Act on one record.  Idempotent by order number: a record may come twice
 * (at least once), e.g. after a crash between printing and committing. */
static int process(const struct flash_feed_rec *r)
{
	const struct flash_record *x = &r->fr_rec;
	/* a reservation (an ORDER whose value is its pay-by time) is not paid
	 * yet: it ships on its CONFIRM, and its EXPIRE ends it like a cancel */
	if ((x->type == FLASH_REC_ORDER && x->value == 0) || x->type == FLASH_REC_CONFIRM)
		printf("ship order %llu: user %llu, sku %u/%u x%u (lsn %llu)\n",
		       (unsigned long long)x->order_no, (unsigned long long)x->user_id,
		       x->activity_id, x->sku_id, x->qty, (unsigned long long)r->fr_lsn);
	else if (x->type == FLASH_REC_CANCEL || x->type == FLASH_REC_EXPIRE)
		printf("cancel order %llu (lsn %llu)\n", (unsigned long long)x->order_no,
		       (unsigned long long)r->fr_lsn);
	return fflush(stdout) == 0 ? 0 : -1;   /* processed = written out */
}

int main(int argc, char **argv)
{
	const char *wal = argc > 1 ? argv[1] : "/var/lib/flashstock/wal";
	int idle_exit = argc > 2 && strcmp(argv[2], "--idle-exit") == 0;
	struct flash_feed_opts o;
	flash_feed_opts_default(&o);
	o.from_start = 1;          /* first run: from the oldest record still kept */
	flash_feed_t *f;
	int rc = flash_feed_open(wal, "fulfilment", &o, &f);
	if (rc != FLASH_OK) {
		fprintf(stderr, "feed: %s\n", flash_strerror(rc));
		return 1;
	}
	uint64_t done = 0;         /* last LSN processed */
	unsigned pending = 0;      /* processed, not yet committed */
	for (;;) {
		struct flash_feed_rec r;
		rc = flash_feed_next(f, &r, 1000);   /* sleeps until durable records come */
		if (rc == FLASH_OK) {
			if (process(&r) != 0) {
				rc = FLASH_ESYS;   /* not committed: it comes again after a restart */
				break;
			}
			done = r.fr_lsn;
			if (++pending < 100)
				continue;
		} else if (rc != FLASH_ETIMEOUT) {
			/* FLASH_ELOST: retention removed what we had not committed;
			 * set o.mysql_url to refill the gap from MariaDB */
			fprintf(stderr, "feed: %s\n", flash_strerror(rc));
			break;
		}
		if (pending > 0) {
			int crc = flash_feed_commit(f, done);     /* durable when it returns */
			if (crc != FLASH_OK) {
				fprintf(stderr, "feed: commit: %s\n", flash_strerror(crc));
				rc = crc;
				break;
			}
		}
		pending = 0;
		if (rc == FLASH_ETIMEOUT && idle_exit)
			break;
	}
	flash_feed_close(f);
	return rc == FLASH_OK || rc == FLASH_ETIMEOUT ? 0 : 1;
}
/* README end */
