/*
 * feed_refill_shared.c -- a lost consumer refilled through the shared
 * library (tests/cli/cli_feed_refill.sh): built against libflashstock.so and
 * flashstock.h only.  The library links no MariaDB; the first feed opened
 * with a MariaDB URL loads the refill plug-in beside it.  So:
 *  - before the open, no MariaDB client is mapped into this process;
 *  - the feed serves the lost range from MariaDB and goes on from the WAL,
 *    one line per record: "LSN SOURCE TYPE ORDER_NO GAP" (SOURCE 0 WAL,
 *    1 MariaDB; TYPE 0 for the record that closes a range of missing LSNs);
 *  - after it, the plug-in and libmariadb are mapped.
 * Reads until a second passes without a record, commits, exits 0; any
 * failure exits 1 with a line saying which.
 *
 * usage: feed_refill_shared WAL_DIR CONSUMER MYSQL_URL
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <flashstock.h>

/* Is a file whose name holds @p what mapped into this process? */
static int mapped(const char *what)
{
	char line[4096];
	int hit = 0;
	FILE *m = fopen("/proc/self/maps", "r");

	if (m == NULL)
		return -1;
	while (!hit && fgets(line, sizeof line, m) != NULL)
		hit = strstr(line, what) != NULL;
	fclose(m);
	return hit;
}

int main(int argc, char **argv)
{
	struct flash_feed_opts o;
	struct flash_feed_rec r;
	flash_feed_t *f;
	uint64_t last = 0, n = 0, from_mysql = 0;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: feed_refill_shared WAL_DIR CONSUMER MYSQL_URL\n");
		return 2;
	}
	if (mapped("libmariadb") != 0 || mapped("libflashstock-mysql") != 0) {
		fprintf(stderr, "feed_refill_shared: a MariaDB client is mapped before any refill\n");
		return 1;
	}
	flash_feed_opts_default(&o);
	o.no_create = 1;
	o.mysql_url = argv[3];
	if ((rc = flash_feed_open(argv[1], argv[2], &o, &f)) != FLASH_OK) {
		fprintf(stderr, "feed_refill_shared: open: %s\n", flash_rcname(rc));
		return 1;
	}
	while ((rc = flash_feed_next(f, &r, 1000)) == FLASH_OK) {
		printf("%" PRIu64 " %u %u %" PRIu64 " %" PRIu64 "\n", r.fr_lsn, r.fr_source,
		       (unsigned)r.fr_rec.type, r.fr_rec.order_no, r.fr_gap);
		last = r.fr_lsn;
		n++;
		from_mysql += r.fr_source == FLASH_FEED_MYSQL;
	}
	if (rc != FLASH_ETIMEOUT) {
		fprintf(stderr, "feed_refill_shared: next: %s\n", flash_rcname(rc));
		return 1;
	}
	if (last != 0 && (rc = flash_feed_commit(f, last)) != FLASH_OK) {
		fprintf(stderr, "feed_refill_shared: commit: %s\n", flash_rcname(rc));
		return 1;
	}
	flash_feed_close(f);
	if (fflush(stdout) != 0)
		return 1;
	if (mapped("libflashstock-mysql") != 1 || mapped("libmariadb") != 1) {
		fprintf(stderr, "feed_refill_shared: the refill ran without the plug-in and libmariadb mapped\n");
		return 1;
	}
	fprintf(stderr, "feed_refill_shared: %" PRIu64 " records, %" PRIu64 " from MariaDB\n", n, from_mysql);
	return 0;
}
