/*
 * rcu_box.h -- a value many threads read and one thread updates, published
 * with RCU (liburcu's bulletproof flavour), for the daemon's threads: the
 * counters the metrics thread serves (metrics.c), the reconciler's last
 * figures (serve_reconcile.c).  Never in the segment: it holds pointers.
 *
 * A box holds one immutable snapshot of a fixed-size value.  A publish
 * copies the value into a new snapshot, swaps it in with one exchange, and
 * hands the old one to call_rcu(), which frees it once every reader that
 * could still see it has left its read-side critical section.  A read
 * copies the current snapshot out inside one critical section: a reader
 * always gets one whole snapshot, never half of two.
 *
 * Why the bulletproof flavour: the readers are threads flashstock does not
 * create (libmicrohttpd's, a test's, a tool's); urcu-bp registers a thread
 * at its first read and forgets it at its exit, without a call in every
 * thread.  Its slower read side does not matter at scrape rate.
 *
 * Synchronization table (one box):
 *   rbox_read      any threads at once, concurrently with rbox_publish
 *   rbox_publish   one thread at a time (the box's writer)
 *   rbox_free      once, when no call on the box can still be running
 * Progress: rbox_read is wait-free (after a thread's first read, which
 * registers it under liburcu's registry mutex); rbox_publish is a malloc,
 * a memcpy, an exchange and a call_rcu() enqueue (wait-free; it may wake
 * liburcu's call_rcu thread) -- it never waits for a reader; rbox_free
 * never waits: the snapshots still owed to call_rcu(), and the box's last
 * bytes, are freed by liburcu's call_rcu thread when their grace periods
 * end.
 *
 * fork(): the first box registers liburcu's call_rcu fork handlers with
 * pthread_atfork(), so a child process may use boxes too.
 */
#ifndef FLASH_RCU_BOX_H
#define FLASH_RCU_BOX_H

#include <stddef.h>

typedef struct rbox rbox_t;

/* A box for values of @p size bytes; its first snapshot is all zero.
 * @return FLASH_OK; FLASH_ENOMEM. */
int rbox_new(size_t size, rbox_t **out);

/* Publish a copy of @p src (size bytes).  @return FLASH_OK; FLASH_ENOMEM
 * (the box keeps its previous snapshot). */
int rbox_publish(rbox_t *b, const void *src);

/* Copy the current snapshot into @p dst (size bytes). */
void rbox_read(rbox_t *b, void *dst);

/* Free the box (what call_rcu() still owes is freed when it runs).  NULL
 * is fine. */
void rbox_free(rbox_t *b);

#endif /* FLASH_RCU_BOX_H */
