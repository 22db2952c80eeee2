/*
 * mysql_probe.h -- is MySQL alive?  A thread of the daemon pings the server
 * on its own connection every `every_ms`, each ping bounded by a read/write
 * timeout, so a hung server (SIGSTOPped, wedged on a lock, its host gone)
 * reads as down within that timeout, not only once a statement of the
 * applier fails -- and an idle applier does not read as connected forever.
 * This is `flashstock_mysql_connected` of `serve --metrics`.
 *
 * Synchronization: start and stop from the daemon's thread; stats_get from
 * any thread (a mutex around the figures; the ping itself runs outside it).
 */
#ifndef MDB_PROBE_H
#define MDB_PROBE_H

#include <stdint.h>

#include "mysql_apply.h"

typedef struct mdb_probe mdb_probe_t;

struct mdb_probe_stats {
	int      connected;      /* the last ping was answered within the timeout */
	int      _pad;
	uint64_t pings;          /* pings tried */
	uint64_t failures;       /* ... not answered (or no connection) */
	int64_t  last_ok_ns;     /* CLOCK_REALTIME of the last answered ping; 0: never */
	uint64_t last_rtt_ns;    /* round trip of the last answered ping */
};

/**
 * Start pinging.  The first ping runs at once.
 * @param[in] mo         where MySQL is (url / defaults_file); the timeouts are ours
 * @param[in] every_ms   time between pings, > 0
 * @param[in] timeout_s  connect, read and write timeout of each attempt, > 0
 * @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM; FLASH_ESYS (thread).
 */
int mdb_probe_start(const struct mdb_opts *mo, uint32_t every_ms,
                            uint32_t timeout_s, mdb_probe_t **out);

/** Copy the figures (any thread). */
void mdb_probe_stats_get(mdb_probe_t *p, struct mdb_probe_stats *out);

/** Stop (waits for a ping in progress, at most its timeout) and free; NULL is fine. */
void mdb_probe_stop(mdb_probe_t *p);

#endif /* MDB_PROBE_H */
