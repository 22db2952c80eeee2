/*
 * park_buyer.c -- a buyer that stops itself inside an order, for
 * tests/cli/cli_stopped_buyer.sh: what a SIGSTOP, a debugger or a frozen cgroup
 * leaves -- an operation open in the segment whose owner is alive.
 *
 *   park_buyer NAME ACT SKU USER
 *
 * Places one order of one unit; at FS_PARK("order_begun") (its operation
 * open, nothing claimed yet) it raises SIGSTOP, and goes on after SIGCONT.
 * Prints the order's result name.  Exit 0 when the order was placed, 1 when
 * it was refused, 2 on a usage or attach error.  Links the crash-point
 * engine (flashstock_crash), whose park hook this needs; nothing is armed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

static void park_here(const char *where)
{
	if (strcmp(where, "order_begun") != 0)
		return;
	fs_park_fn = NULL;   /* once */
	raise(SIGSTOP);
}

int main(int argc, char **argv)
{
	struct flash_order_req r;
	flash_t *h;
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: park_buyer NAME ACT SKU USER\n");
		return 2;
	}
	if ((rc = flash_open(argv[1], 0, &h)) != FLASH_OK) {
		fprintf(stderr, "park_buyer: %s: %s\n", argv[1], flash_strerror(rc));
		return 2;
	}
	memset(&r, 0, sizeof r);
	r.activity_id = (uint32_t)strtoul(argv[2], NULL, 10);
	r.sku_id = (uint32_t)strtoul(argv[3], NULL, 10);
	r.user_id = strtoull(argv[4], NULL, 10);
	r.qty = 1;
	fs_park_fn = park_here;
	rc = flash_order(h, &r, NULL);
	printf("%s\n", flash_rcname(rc));
	flash_close(h);
	return rc == FLASH_OK ? 0 : 1;
}
