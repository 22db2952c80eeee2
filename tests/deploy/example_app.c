/*
 * example_app.c -- the "Using the library" example (README.md and
 * docs/library.md) as a complete
 * program: one buyer's order on activity 1, sku 10, which require a token.
 *
 *   example_app SEGMENT USER REQUEST_ID
 *
 * prints one line, "<outcome> order <number>" (number 0 when there is
 * none), and exits 0 for a new order, 1 for any other outcome, 2 when the
 * segment cannot be opened.  tests/deploy/install_prefix.sh builds it against an
 * installed prefix with pkg-config exactly as the README says, runs it on a
 * fresh segment, and checks that README.md and docs/library.md show the
 * lines between the two README markers below unchanged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* README begin */
#include <flashstock.h>

int main(int argc, char **argv)   /* example_app SEGMENT USER REQUEST_ID */
{
	flash_t *h;
	if (argc != 4 || flash_open(argv[1], 0, &h) != FLASH_OK)   /* one handle per thread */
		return 2;
	uint64_t user = strtoull(argv[2], NULL, 10), tok = 0;
	flash_token_issue(h, 1, 10, user, 60000, &tok);   /* in a shop: with the page */
	struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = user, .qty = 1,
	                             .token = tok, .request_id = strtoull(argv[3], NULL, 10) };
	struct flash_order_res res = { 0 };
	int rc = flash_order(h, &r, &res);   /* FLASH_OK, FLASH_ESOLD_OUT, FLASH_ELIMIT, ... */
	printf("%s order %" PRIu64 "\n", flash_rcname(rc), res.order_no);
	flash_close(h);
	return rc == FLASH_OK ? 0 : 1;
}
/* README end */
