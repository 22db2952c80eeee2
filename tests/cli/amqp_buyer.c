/*
 * amqp_buyer.c -- a buyer for the RabbitMQ sink's test (tests/cli/cli_feed_amqp.sh):
 * places orders on a segment served by a real `flashstock serve` and
 * writes down what flash_order / flash_cancel acknowledged.
 *
 *   amqp_buyer NAME ACT SKU USER0 COUNT CANCEL_EVERY STOP_FILE OUT
 *
 * Up to COUNT orders (qty 1) for users USER0, USER0+1, ..., one every
 * millisecond, until STOP_FILE exists.  Every CANCEL_EVERY-th acknowledged
 * order (0: none) is cancelled at once.  One line per outcome in OUT,
 * flushed at once:
 *     order <n>     flash_order returned FLASH_OK (durable, in sync mode)
 *     cancel <n>    flash_cancel returned FLASH_OK
 *     unknown <n>   FLASH_EFATE_UNKNOWN: placed, durability not known
 * Exit 0 when every call was made, 1 if the segment could not be opened.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "flashstock.h"

int main(int argc, char **argv)
{
	flash_t *h;
	int rc;

	if (argc != 9) {
		fprintf(stderr, "usage: amqp_buyer NAME ACT SKU USER0 COUNT CANCEL_EVERY STOP_FILE OUT\n");
		return 2;
	}
	uint32_t act = (uint32_t)strtoul(argv[2], NULL, 10), sku = (uint32_t)strtoul(argv[3], NULL, 10);
	uint64_t user0 = strtoull(argv[4], NULL, 10), count = strtoull(argv[5], NULL, 10);
	uint64_t every = strtoull(argv[6], NULL, 10), acked = 0;
	FILE *out = fopen(argv[8], "w");
	if (out == NULL) {
		perror(argv[8]);
		return 1;
	}
	rc = flash_open(argv[1], 0, &h);
	if (rc != FLASH_OK) {
		fprintf(stderr, "amqp_buyer: open %s: %s\n", argv[1], flash_strerror(rc));
		return 1;
	}
	for (uint64_t i = 0; i < count && access(argv[7], F_OK) != 0; i++) {
		struct flash_order_req r = { .activity_id = act, .sku_id = sku, .user_id = user0 + i,
		                             .qty = 1 };
		struct flash_order_res res = { 0 };
		rc = flash_order(h, &r, &res);
		if (rc == FLASH_OK) {
			fprintf(out, "order %" PRIu64 "\n", res.order_no);
			if (every && ++acked % every == 0) {
				rc = flash_cancel(h, res.order_no, NULL);
				if (rc == FLASH_OK)
					fprintf(out, "cancel %" PRIu64 "\n", res.order_no);
				else if (rc == FLASH_EFATE_UNKNOWN)
					fprintf(out, "unknown-cancel %" PRIu64 "\n", res.order_no);
			}
		} else if (rc == FLASH_EFATE_UNKNOWN) {
			fprintf(out, "unknown %" PRIu64 "\n", res.order_no);
		}
		fflush(out);
		usleep(1000);
	}
	flash_close(h);
	fclose(out);
	return 0;
}
