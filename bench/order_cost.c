/*
 * order_cost.c -- the instruction count of one order, for callgrind: one
 * process places N orders (token, request id, limit 1, one sku with one
 * shard), draining its ring as it goes.  Clock time on a shared VM moves
 * from run to run; instructions do not:
 *
 *   valgrind --tool=callgrind --toggle-collect=flash_order \
 *       build/bench/flashstock-order-cost 20000
 *
 * then "PROGRAM TOTALS" / N is flash_order's instructions per order
 * (bench/RESULTS.md).  A second argument "windowed" makes the segment
 * windowed (flash_seg_reclaim_set, default lengths) and mints the request
 * ids with flash_request_id_new() before the loop (outside flash_order).
 * Exits 0 when every order was placed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"
#include "flashstock_consumer.h"

static int sink(void *arg, const struct flash_record *r, uint64_t seq)
{
	(void)arg;
	(void)r;
	(void)seq;
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 20000, got = 0;
	int windowed = argc > 2 && strcmp(argv[2], "windowed") == 0;
	uint64_t *ids = NULL;
	struct flash_seg_opts o;
	struct timespec ts;
	char name[64];
	flash_t *h;
	int rc = 0;

	if (n == 0 || n > 60000) {
		fprintf(stderr, "usage: flashstock-order-cost [ORDERS (1..60000)]\n");
		return 2;
	}
	snprintf(name, sizeof name, "/flash-order-cost-%d", (int)getpid());
	flash_seg_opts_default(&o);
	o.max_orders = o.max_users = o.max_requests = o.max_tokens = 65536;
	o.ring_records = 65536;
	if (flash_seg_create(name, &o) != FLASH_OK || flash_open(name, 0, &h) != FLASH_OK)
		return 1;
	if (windowed) {
		ids = malloc((size_t)n * sizeof *ids);
		if (!ids || flash_seg_reclaim_set(h, NULL) != FLASH_OK) {
			free(ids);
			return 1;
		}
		for (uint32_t u = 0; u < n; u++)
			ids[u] = flash_request_id_new();
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	struct flash_activity a = { .id = 1, .limit_per_user = 1, .max_qty = 1,
	                            .scope = FLASH_SCOPE_ACTIVITY, .flags = FLASH_ACT_TOKEN_REQUIRED,
	                            .start_ns = now - 1000000000LL, .end_ns = now + 3600000000000LL };
	if (flash_activity_add(h, &a) != FLASH_OK || flash_sku_add(h, 1, 10, n, 1) != FLASH_OK)
		rc = 1;
	for (uint32_t u = 1; rc == 0 && u <= n; u++) {
		struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = u, .qty = 1,
		                             .request_id = ids ? ids[u - 1] : 1000000 + (uint64_t)u };
		struct flash_order_res res;

		if (flash_token_issue(h, 1, 10, u, 600000, &r.token) != FLASH_OK ||
		    flash_order(h, &r, &res) != FLASH_OK)
			rc = 1;
		if (u % 1024 == 0)
			(void)flash_ring_drain(h, sink, NULL, 1u << 20, &got);
	}
	flash_close(h);
	flash_seg_destroy(name);
	free(ids);
	if (rc != 0)
		fprintf(stderr, "flashstock-order-cost: an order was refused\n");
	return rc;
}
