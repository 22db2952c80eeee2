/*
 * ops_sync_buyer.c -- a buyer for the operator-mistakes suite (tests/ops/ops_misc.sh):
 * attaches to a segment and places orders, printing what each buyer was
 * told, so a shell test can drive the real daemon and check the outcome.
 *
 *   ops_sync_buyer NAME ACT SKU USER COUNT WAIT_MS SECONDS FOLLOW
 *
 * Places up to COUNT orders (qty 1) for users USER, USER+1, ...  With
 * SECONDS > 0 it stops once that many seconds have passed, sleeping 1 ms
 * between orders.  WAIT_MS > 0 bounds each sync wait (flash_sync_wait_set).
 * Each outcome is one line, flushed at once:
 *     <rc name> order=<n> lsn=<l>
 * With FOLLOW = 1, an order whose fate is not known yet
 * (FLASH_EFATE_UNKNOWN) is followed by flash_durable_wait() of up to 60 s,
 * printed as "after-wait <rc name> order=<n>".
 * Exit 0 when every call was made (whatever they returned), 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	flash_t *h;
	int rc;

	if (argc != 9) {
		fprintf(stderr, "usage: ops_sync_buyer NAME ACT SKU USER COUNT WAIT_MS SECONDS FOLLOW\n");
		return 2;
	}
	uint32_t act = (uint32_t)strtoul(argv[2], NULL, 10);
	uint32_t sku = (uint32_t)strtoul(argv[3], NULL, 10);
	uint64_t user = strtoull(argv[4], NULL, 10);
	unsigned long count = strtoul(argv[5], NULL, 10);
	uint32_t wait_ms = (uint32_t)strtoul(argv[6], NULL, 10);
	double secs = strtod(argv[7], NULL);
	int follow = atoi(argv[8]);

	if ((rc = flash_open(argv[1], 0, &h)) != FLASH_OK) {
		fprintf(stderr, "ops_sync_buyer: open %s: %s\n", argv[1], flash_strerror(rc));
		return 1;
	}
	if (wait_ms > 0 && (rc = flash_sync_wait_set(h, wait_ms)) != FLASH_OK) {
		fprintf(stderr, "ops_sync_buyer: sync wait: %s\n", flash_strerror(rc));
		flash_close(h);
		return 1;
	}
	double until = mono_s() + secs;
	for (unsigned long i = 0; i < count; i++) {
		struct flash_order_req r = { .activity_id = act, .sku_id = sku, .user_id = user + i, .qty = 1 };
		struct flash_order_res res = { 0 };

		if (secs > 0 && mono_s() >= until)
			break;
		rc = flash_order(h, &r, &res);
		printf("%s order=%llu lsn=%llu\n", flash_rcname(rc), (unsigned long long)res.order_no,
		       (unsigned long long)res.lsn);
		fflush(stdout);
		if (rc == FLASH_EFATE_UNKNOWN && follow) {
			rc = flash_durable_wait(h, res.lsn, 60000);
			printf("after-wait %s order=%llu\n", flash_rcname(rc), (unsigned long long)res.order_no);
			fflush(stdout);
		}
		if (secs > 0)
			usleep(1000);
	}
	flash_close(h);
	return 0;
}
