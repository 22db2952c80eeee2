/*
 * ops_buyer.c -- the buyer of the operator-mistakes tests (tests/ops/ops_*.sh).
 *
 * Attaches to a segment and places one order of one unit for each user in
 * FROM..TO (activity A, sku S).  After each ACKNOWLEDGED order (flash_order
 * returned FLASH_OK) it appends the order number and a newline to the log
 * file with one write(2) on an O_APPEND descriptor: a line in the log is an
 * order the buyer was told it has, whatever happens to the buyer or the
 * daemon afterwards (kill -9 included; a line is never half written before
 * the acknowledgement, and a line lost after it only makes the check weaker,
 * never wrong).  The tests then require every logged number in the WAL.
 *
 * usage: ops_buyer --name SEG --activity A --sku S --from U1 --to U2 --log FILE [--sync]
 *                  [--at U --wait FILE]
 *   --sync  the segment must be in sync durability (exit 2 otherwise): each
 *           line is then an order acknowledged after its fdatasync.
 *   --at U --wait FILE  before the order of user U, say "waiting" on stderr
 *           and wait (attached, 30 s at most) until FILE exists: a buyer
 *           that stays attached while an operator acts (tests/ops/ops_destroy.sh).
 * A full ring (FLASH_EBUSY: no daemon drains it) is retried for up to 10 s.
 * Sold out and limit refusals are counted, not logged.
 * Prints "acked N refused M" on stdout.  exit: 0 done; 1 an order or the
 * log failed; 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"

static int ob_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int ob_usage(const char *why)
{
	fprintf(stderr, "ops_buyer: %s\nusage: ops_buyer --name SEG --activity A --sku S --from U1 "
	        "--to U2 --log FILE [--sync] [--at U --wait FILE]\n", why);
	return 2;
}

/* Append "<order_no>\n" with one write(2): the acknowledgement is logged. */
static int ob_log(int fd, uint64_t order_no)
{
	char line[32];
	int n = snprintf(line, sizeof line, "%" PRIu64 "\n", order_no);
	return write(fd, line, (size_t)n) == n ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *name = NULL, *log = NULL, *wait = NULL;
	uint64_t act = 0, sku = 0, from = 0, to = 0, at = 0;
	int sync = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--sync") == 0) {
			sync = 1;
			continue;
		}
		if (i + 1 >= argc)
			return ob_usage("an option lacks its value");
		const char *v = argv[++i];
		int bad = 0;
		if (strcmp(a, "--name") == 0)
			name = v;
		else if (strcmp(a, "--log") == 0)
			log = v;
		else if (strcmp(a, "--wait") == 0)
			wait = v;
		else if (strcmp(a, "--at") == 0)
			bad = ob_u64(v, &at) != 0 || at == 0;
		else if (strcmp(a, "--activity") == 0)
			bad = ob_u64(v, &act) != 0 || act == 0 || act > UINT32_MAX;
		else if (strcmp(a, "--sku") == 0)
			bad = ob_u64(v, &sku) != 0 || sku == 0 || sku > UINT32_MAX;
		else if (strcmp(a, "--from") == 0)
			bad = ob_u64(v, &from) != 0 || from == 0;
		else if (strcmp(a, "--to") == 0)
			bad = ob_u64(v, &to) != 0 || to == 0;
		else
			return ob_usage("unknown option");
		if (bad)
			return ob_usage("bad number");
	}
	if (name == NULL || log == NULL || act == 0 || sku == 0 || from == 0 || to < from)
		return ob_usage("--name, --activity, --sku, --from, --to (>= --from) and --log are required");
	if ((at == 0) != (wait == NULL))
		return ob_usage("--at and --wait go together");

	flash_t *h;
	int rc = flash_open(name, 0, &h);
	if (rc != FLASH_OK) {
		fprintf(stderr, "ops_buyer: %s: %s\n", name, flash_strerror(rc));
		return 1;
	}
	struct flash_seg_opts so;
	if (sync && (flash_seg_opts_get(h, &so) != FLASH_OK || so.durability != FLASH_DURABILITY_SYNC)) {
		fprintf(stderr, "ops_buyer: --sync: segment %s is not in sync durability\n", name);
		flash_close(h);
		return 2;
	}
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "ops_buyer: %s: %s\n", log, strerror(errno));
		flash_close(h);
		return 1;
	}
	uint64_t acked = 0, refused = 0;
	int ret = 0;
	for (uint64_t u = from; u <= to && ret == 0; u++) {
		struct flash_order_req r = { .activity_id = (uint32_t)act, .sku_id = (uint32_t)sku,
		                             .user_id = u, .qty = 1 };
		struct flash_order_res res;
		if (u == at) {
			fprintf(stderr, "ops_buyer: waiting for %s before user %" PRIu64 "\n", wait, u);
			for (int i = 0; i < 3000 && access(wait, F_OK) != 0; i++) {
				struct timespec ts = { 0, 10000000 };   /* 10 ms */
				nanosleep(&ts, NULL);
			}
		}
		for (int tries = 0;; tries++) {
			rc = flash_order(h, &r, &res);
			if (rc != FLASH_EBUSY || tries >= 10000)
				break;
			struct timespec ts = { 0, 1000000 };   /* 1 ms: wait for a daemon */
			nanosleep(&ts, NULL);
		}
		if (rc == FLASH_OK) {
			if (ob_log(fd, res.order_no) != 0) {
				fprintf(stderr, "ops_buyer: %s: %s\n", log, strerror(errno));
				ret = 1;
			}
			acked++;
		} else if (rc == FLASH_ESOLD_OUT || rc == FLASH_ELIMIT) {
			refused++;
		} else {
			fprintf(stderr, "ops_buyer: user %" PRIu64 ": %s\n", u, flash_strerror(rc));
			ret = 1;
		}
	}
	close(fd);
	flash_close(h);
	printf("acked %" PRIu64 " refused %" PRIu64 "\n", acked, refused);
	return ret;
}
