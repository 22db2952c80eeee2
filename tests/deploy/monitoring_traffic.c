/*
 * monitoring_traffic.c -- the load of tests/deploy/monitoring_live.sh: one handle
 * that gives every panel of dashboards/grafana-flashstock.json something to
 * show.
 *
 * Orders of one unit for users 1..USERS (activity A, sku S): acknowledged
 * until the sku is sold out, then FLASH_ESOLD_OUT; then users 1..10 again,
 * each refused FLASH_ELIMIT (one order per user, the default limit).  Then
 * WAITS lock waits on lock "monitoring": owner 1 holds it, owner 2 is
 * refused (FLASH_ELOCKED), owner 1 releases, owner 2 is granted -- a wait
 * measured on this handle (flashstock_lock_wait_seconds) -- and releases.
 * With --reservations R, R reservations of one unit each of sku 1 of
 * --reserve-activity, to be paid within 300 ms, never paid: the daemon's
 * expirer expires them (the dashboard's Reservations row).
 * A full ring (FLASH_EBUSY: the daemon has not drained yet) is retried for
 * up to 10 s.  The handle is closed at the end, so its last call joins the
 * figures.
 *
 * usage: monitoring_traffic --name SEG --activity A --sku S --users N --lock-waits K
 *                           [--reservations R --reserve-activity A2]
 * Prints "ok N sold_out N limit N lock_waits N reserved R" on stdout.
 * exit: 0 done, every outcome as expected; 1 an outcome was not; 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flashstock.h"

static int mt_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int mt_usage(const char *why)
{
	fprintf(stderr, "monitoring_traffic: %s\nusage: monitoring_traffic --name SEG --activity A "
	        "--sku S --users N --lock-waits K [--reservations R --reserve-activity A2]\n", why);
	return 2;
}

/* One order of one unit for @p user, retried while the ring is full. */
static int mt_order(flash_t *h, uint32_t act, uint32_t sku, uint64_t user)
{
	struct flash_order_req r = { .activity_id = act, .sku_id = sku, .user_id = user, .qty = 1 };
	struct flash_order_res res;
	int rc;
	for (int tries = 0;; tries++) {
		rc = flash_order(h, &r, &res);
		if (rc != FLASH_EBUSY || tries >= 10000)
			return rc;
		struct timespec ts = { 0, 1000000 };   /* 1 ms: wait for the daemon */
		nanosleep(&ts, NULL);
	}
}

/* One lock wait: refused for owner 2 while owner 1 holds, granted after. */
static int mt_lock_wait(flash_t *h)
{
	static const char name[] = "monitoring";
	uint64_t fence;
	int rc = flash_lock_acquire(h, name, 1, 60000, &fence);
	if (rc != FLASH_OK)
		return rc;
	rc = flash_lock_acquire(h, name, 2, 60000, &fence);
	if (rc != FLASH_ELOCKED)
		return rc == FLASH_OK ? FLASH_EINVAL : rc;   /* granted to a second owner: wrong */
	struct timespec ts = { 0, 200000 };   /* 0.2 ms held: a wait worth a bucket */
	nanosleep(&ts, NULL);
	if ((rc = flash_lock_release(h, name, 1)) != FLASH_OK)
		return rc;
	if ((rc = flash_lock_acquire(h, name, 2, 60000, &fence)) != FLASH_OK)
		return rc;
	return flash_lock_release(h, name, 2);
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	uint64_t act = 0, sku = 0, users = 0, waits = 0, resv = 0, ract = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			return mt_usage("an option lacks its value");
		const char *v = argv[++i];
		int bad = 0;
		if (strcmp(a, "--name") == 0)
			name = v;
		else if (strcmp(a, "--activity") == 0)
			bad = mt_u64(v, &act) != 0 || act == 0 || act > UINT32_MAX;
		else if (strcmp(a, "--sku") == 0)
			bad = mt_u64(v, &sku) != 0 || sku == 0 || sku > UINT32_MAX;
		else if (strcmp(a, "--users") == 0)
			bad = mt_u64(v, &users) != 0 || users < 10;
		else if (strcmp(a, "--lock-waits") == 0)
			bad = mt_u64(v, &waits) != 0;
		else if (strcmp(a, "--reservations") == 0)
			bad = mt_u64(v, &resv) != 0;
		else if (strcmp(a, "--reserve-activity") == 0)
			bad = mt_u64(v, &ract) != 0 || ract == 0 || ract > UINT32_MAX;
		else
			return mt_usage("unknown option");
		if (bad)
			return mt_usage("bad number (--users at least 10)");
	}
	if (name == NULL || act == 0 || sku == 0 || users == 0)
		return mt_usage("--name, --activity, --sku and --users are required");
	if ((resv != 0) != (ract != 0))
		return mt_usage("--reservations and --reserve-activity go together");

	flash_t *h;
	int rc = flash_open(name, 0, &h);
	if (rc != FLASH_OK) {
		fprintf(stderr, "monitoring_traffic: %s: %s\n", name, flash_strerror(rc));
		return 1;
	}
	uint64_t ok = 0, sold_out = 0, limit = 0, lock_waits = 0;
	int ret = 0;
	for (uint64_t u = 1; u <= users && ret == 0; u++) {
		rc = mt_order(h, (uint32_t)act, (uint32_t)sku, u);
		if (rc == FLASH_OK && sold_out == 0)
			ok++;
		else if (rc == FLASH_ESOLD_OUT)
			sold_out++;
		else if (rc == FLASH_OK) {
			fprintf(stderr, "monitoring_traffic: user %" PRIu64 ": acknowledged after sold out\n", u);
			ret = 1;
		} else {
			fprintf(stderr, "monitoring_traffic: user %" PRIu64 ": %s\n", u, flash_strerror(rc));
			ret = 1;
		}
	}
	for (uint64_t u = 1; u <= 10 && ret == 0; u++) {
		rc = mt_order(h, (uint32_t)act, (uint32_t)sku, u);
		if (rc == FLASH_ELIMIT)
			limit++;
		else {
			fprintf(stderr, "monitoring_traffic: user %" PRIu64 " again: %s, not FLASH_ELIMIT\n", u,
			        flash_strerror(rc));
			ret = 1;
		}
	}
	for (uint64_t i = 0; i < waits && ret == 0; i++) {
		rc = mt_lock_wait(h);
		if (rc == FLASH_OK)
			lock_waits++;
		else {
			fprintf(stderr, "monitoring_traffic: lock wait %" PRIu64 ": %s\n", i, flash_strerror(rc));
			ret = 1;
		}
	}
	uint64_t reserved = 0;
	for (uint64_t i = 0; i < resv && ret == 0; i++) {
		struct flash_order_req r = { .activity_id = (uint32_t)ract, .sku_id = 1, .user_id = 1000000 + i,
		                             .qty = 1, .reserve_ms = 300 };
		rc = flash_order(h, &r, NULL);
		if (rc == FLASH_OK)
			reserved++;
		else {
			fprintf(stderr, "monitoring_traffic: reservation %" PRIu64 ": %s\n", i, flash_strerror(rc));
			ret = 1;
		}
	}
	flash_close(h);
	printf("ok %" PRIu64 " sold_out %" PRIu64 " limit %" PRIu64 " lock_waits %" PRIu64 " reserved %" PRIu64 "\n",
	       ok, sold_out, limit, lock_waits, reserved);
	return ret;
}
