/*
 * metrics.h -- `flashstock serve --metrics ADDR:PORT`: the segment's
 * counters, the WAL's commit figures and the daemon's own counters in the
 * Prometheus text format, served over HTTP by libmicrohttpd on its own
 * thread.  GET /metrics (or /) only; anything else is 404/405.
 *
 * Synchronization: the HTTP thread reads the segment through its own
 * read-only handle (opened per scrape: handles are per thread), the WAL
 * through wal_stats_get() (thread-safe), and the daemon's counters through
 * metrics_publish(), which the daemon calls once per round: an RCU-published
 * copy (rcu_box.h), so a scrape gets one whole round's figures and the
 * drain loop never waits for a scrape.
 */
#ifndef FLASH_METRICS_H
#define FLASH_METRICS_H

#include <stdint.h>

#include "mysql_pump.h"
#include "serve.h"
#include "wal.h"

typedef struct metrics metrics_t;

/*
 * Start serving.  @p pump (may be NULL) adds the MySQL applier's figures.
 * @p addr_port is "PORT", ":PORT" or "A.B.C.D:PORT" (IPv4;
 * 127.0.0.1 when no address is given); port 0 picks a free port.
 * @param[out] port  the port bound (may be NULL)
 * @return FLASH_OK; FLASH_EINVAL (a bad address or port), FLASH_ESYS
 *         (cannot listen: the port in use, an address this host does not
 *         have), FLASH_ENOMEM -- each with a message in @p err.
 */
int metrics_start(const char *addr_port, const char *segment, wal_t *w,
                  mdb_pump_t *pump, metrics_t **out, uint16_t *port,
                  char *err, size_t errlen);

struct serve_recon;
/* Add the periodic reconciler's figures (NULL: none); call before the first
 * scrape can matter, and keep @p r alive until metrics_stop(). */
void metrics_set_reconcile(metrics_t *m, struct serve_recon *r);

struct archiver;
/* Add the archiver's figures (flashstock_archived_total, ...; NULL: none or
 * no more); keep @p a alive until it is set to NULL or metrics_stop(). */
void metrics_set_archiver(metrics_t *m, struct archiver *a);
struct expirer;
/* Add the reservation expirer's figures (flashstock_reservations_*,
 * flashstock_expiry_lag_seconds; NULL: it stopped, its last figures stay);
 * keep @p x alive until then. */
void metrics_set_expirer(metrics_t *m, struct expirer *x);
struct backstop;
/* Add the cross-box limit's figures (flashstock_backstop_*; NULL: none);
 * keep @p b alive until metrics_stop(). */
void metrics_set_backstop(metrics_t *m, struct backstop *b);

struct mdb_probe;
/* Add the MySQL liveness ping's figures (flashstock_mysql_connected; NULL:
 * none); keep @p p alive until metrics_stop(). */
void metrics_set_probe(metrics_t *m, struct mdb_probe *p);
/* Show the feed consumers registered in @p wal_dir (feed.h) and their lag;
 * call before the first scrape.  @return FLASH_OK; FLASH_ENOMEM. */
int metrics_set_feed(metrics_t *m, const char *wal_dir);

struct lease;
/* Add the lease agent's figures (flashstock_lease_*; NULL: none); keep @p a
 * alive until metrics_stop(). */
void metrics_set_lease(metrics_t *m, struct lease *a);

/* Copy the daemon's counters for the next scrape. */
void metrics_publish(metrics_t *m, const struct serve_stats *st);

/* Stop the HTTP thread and free @p m (NULL is fine). */
void metrics_stop(metrics_t *m);

/* Render the full exposition into a malloc'd string (tests, `status`). */
char *metrics_render(metrics_t *m);

#endif /* FLASH_METRICS_H */
