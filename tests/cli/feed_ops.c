/*
 * feed_ops.c -- cancels and restocks for the feed's refill test
 * (tests/cli/cli_feed_refill.sh), which needs every record type in the WAL.
 *
 * usage: feed_ops --name SEG cancel ORDER_NO...
 *        feed_ops --name SEG restock ACTIVITY SKU DELTA
 * A full ring (FLASH_EBUSY: the daemon is behind) is retried for up to 10 s.
 * exit: 0 every operation returned FLASH_OK; 1 one did not; 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flashstock.h"

static int retry(int rc, int *tries)
{
	if (rc != FLASH_EBUSY || ++*tries > 10000)
		return 0;
	struct timespec ts = { 0, 1000000 };
	nanosleep(&ts, NULL);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[1], "--name") != 0) {
		fprintf(stderr, "usage: feed_ops --name SEG cancel N... | restock A S DELTA\n");
		return 2;
	}
	flash_t *h;
	int rc = flash_open(argv[2], 0, &h);
	if (rc != FLASH_OK) {
		fprintf(stderr, "feed_ops: open %s: %s\n", argv[2], flash_strerror(rc));
		return 1;
	}
	int bad = 0;
	if (strcmp(argv[3], "cancel") == 0) {
		for (int i = 4; i < argc; i++) {
			int tries = 0;
			do
				rc = flash_cancel(h, strtoull(argv[i], NULL, 10), NULL);
			while (retry(rc, &tries));
			if (rc != FLASH_OK) {
				fprintf(stderr, "feed_ops: cancel %s: %s\n", argv[i], flash_strerror(rc));
				bad = 1;
			}
		}
	} else if (strcmp(argv[3], "restock") == 0 && argc == 7) {
		int tries = 0;
		do
			rc = flash_restock(h, (uint32_t)atoi(argv[4]), (uint32_t)atoi(argv[5]), atoll(argv[6]));
		while (retry(rc, &tries));
		if (rc != FLASH_OK) {
			fprintf(stderr, "feed_ops: restock: %s\n", flash_strerror(rc));
			bad = 1;
		}
	} else {
		fprintf(stderr, "usage: feed_ops --name SEG cancel N... | restock A S DELTA\n");
		flash_close(h);
		return 2;
	}
	flash_close(h);
	return bad;
}
