/*
 * helpers.h -- shared fixtures for the engine's cmocka tests.
 *
 * Divisions:
 *   1. Segments and handles   t_segname(), t_seg_new(), t_teardown()
 *   2. Catalog shortcuts      t_activity(), t_order()
 *   3. Snapshots              t_snap_take(), T_ASSERT_UNCHANGED()
 *   4. Records and ledgers    t_recs_drain(), t_ledger_check()
 *   5. Processes              t_fork_start(), t_wait_all()
 *   6. Metrics                t_metrics_get(), t_metrics_sample()
 *
 * Every segment a test names through t_segname() is remembered and removed
 * by t_teardown() (and at exit), so a failing test leaves nothing in /dev/shm.
 * Helpers that run inside forked children never call cmocka: a child reports
 * by its exit status only.
 */
#ifndef FLASH_TEST_HELPERS_H
#define FLASH_TEST_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

#include "flashstock.h"
#include "flashstock_consumer.h"

/* ---- 1. Segments and handles ------------------------------------------- */

/* Options small enough for unit tests; every capacity > 0. */
void t_opts_small(struct flash_seg_opts *o);

/* A fresh name "/fs-test-<pid>-<n>" in @p buf, remembered for teardown. */
const char *t_segname(char *buf, size_t len);

/* Create a segment with @p o (NULL: t_opts_small) and open a writable handle;
 * both are remembered for t_teardown(). Fails the test on any error. */
flash_t *t_seg_new(const struct flash_seg_opts *o, char *name, size_t len);

/* Remember a handle so t_teardown() closes it. */
void t_track_handle(flash_t *h);
/* Forget a handle the test closed itself. */
void t_untrack_handle(flash_t *h);

/* cmocka per-test teardown: close tracked handles, unlink tracked segments. */
int t_teardown(void **state);

/* /dev/shm path of a segment name. */
void t_shm_path(const char *name, char *buf, size_t len);

/* ---- 2. Catalog shortcuts ---------------------------------------------- */

int64_t t_now_ns(void);
void t_sleep_ms(unsigned ms);

/* Add an activity whose window is open now (now - 1 h .. now + 1 h). */
int t_activity(flash_t *h, uint32_t id, uint32_t k, uint32_t max_qty,
               uint32_t scope, uint32_t flags);

/* Place one order; @p res may be NULL. */
int t_order(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint32_t qty,
            uint64_t token, uint64_t request_id, struct flash_order_res *res);

/* Available units of a sku (fails the test if the sku cannot be read). */
uint64_t t_available(flash_t *h, uint32_t act, uint32_t sku);

/* ---- 3. Snapshots ------------------------------------------------------- */

#define T_SNAP_SKUS 64

/* Everything a failed call must leave as it was: fill levels, acknowledged
 * orders and cancels, the highest order number, and every sku's stock. */
struct t_snap {
	struct flash_stats st;
	uint64_t orders_max;
	uint32_t nsku;
	struct flash_sku_info sku[T_SNAP_SKUS];
};

#define T_IGN_TOKENS   0x1u   /* a burned token may change the token table */
#define T_IGN_REQUESTS 0x2u   /* a remembered request id changes the request table */

void t_snap_take(flash_t *h, struct t_snap *s);
void t_snap_compare(const struct t_snap *a, const struct t_snap *b, unsigned ign,
                    const char *file, int line);

/* Assert that the segment's state equals @p before (taken earlier). */
#define T_ASSERT_UNCHANGED(h, before, ign) do { \
		struct t_snap t_after_; \
		t_snap_take((h), &t_after_); \
		t_snap_compare((before), &t_after_, (ign), __FILE__, __LINE__); \
	} while (0)

/* ---- 4. Records and ledgers --------------------------------------------- */

struct t_rec {
	struct flash_record r;
	uint64_t seq;
};

struct t_recs {
	struct t_rec *v;
	size_t n, cap;
};

/* Drain every ring of the segment into @p out (appends) and mark each record
 * durable at once (flash_durable_advance), as a consumer without a WAL does,
 * so ring space is freed.  Returns a flash rc. */
int t_recs_drain(flash_t *h, struct t_recs *out);
/* The same without flash_durable_advance: ring space stays taken. */
int t_recs_drain_keep(flash_t *h, struct t_recs *out);

/* A consumer thread that drains every ring and marks each record durable at
 * once (a daemon without a WAL): sync-durability segments need one for any
 * acknowledged change, catalog adds included.  Opens its own handle. */
struct t_consumer;
struct t_consumer *t_consumer_start(const char *segname);
void t_consumer_stop(struct t_consumer *c);
void t_recs_free(struct t_recs *r);

/* What t_ledger_check() found. */
struct t_ledger {
	uint64_t active_orders, active_qty;
	uint64_t cancelled_orders, cancelled_qty;
	uint64_t none_orders;
	uint64_t users_at_limit;  /* users holding exactly K active orders */
	uint64_t max_per_user;    /* most active orders any user holds */
	/* reservations: RESERVED ones are counted in active_* too (they hold
	 * their units and limit slot); EXPIRED ones only here */
	uint64_t reserved_orders, reserved_qty;
	uint64_t expired_orders, expired_qty;
};

/*
 * Check one (activity, sku) against the order table and the drained records:
 *   - every order but a NONE one has exactly one ORDER record with the
 *     same number, user, sku, qty and limit slot, and no NONE order has one;
 *   - every CANCELLED order has exactly one CANCEL record, every EXPIRED one
 *     one EXPIRE record, no other has either; a reservation (ORDER record
 *     with a pay-by time) ACTIVE now has one CONFIRM record, and only a
 *     reservation has any;
 *   - per user: at most K active or reserved orders, their limit slots
 *     distinct in 1..K;
 *   - available == total - units of active and reserved orders, available <= total;
 *   - per slot the record seqs run 1, 2, 3, ... without a gap.
 * Returns 0 when all hold, else prints the first difference to stderr and
 * returns -1 (usable from cmocka and from plain code).
 */
int t_ledger_check(flash_t *h, const struct t_recs *recs, uint32_t act, uint32_t sku,
                   uint32_t k, struct t_ledger *out);

/* ---- 5. Processes ------------------------------------------------------- */

/* Fork @p n children that block on a pipe until t_fork_go(); child i runs
 * fn(i, arg) and _exit()s with its return value. pids[] receives the pids. */
typedef int (*t_child_fn)(int i, void *arg);
int t_fork_start(int n, t_child_fn fn, void *arg, pid_t *pids, int *go_fd);
/* Release every child at once (closes the barrier pipe). */
void t_fork_go(int go_fd);
/* Wait for @p n children; returns how many did not exit with status 0, and
 * prints each failure. */
int t_wait_all(int n, const pid_t *pids);

/* A MAP_SHARED anonymous block, visible to forked children. */
void *t_shared_alloc(size_t bytes);
void t_shared_free(void *p, size_t bytes);

/* ---- 6. Metrics -------------------------------------------------------- */

/* GET /metrics from 127.0.0.1:@p port (`serve --metrics`): the whole
 * response, headers included, NUL-terminated and malloc'd; NULL if the
 * endpoint cannot be reached. */
char *t_metrics_get(uint16_t port);

/* The value of sample @p name (a line "name value") in @p body, or
 * UINT64_MAX if there is none. */
uint64_t t_metrics_sample(const char *body, const char *name);

#endif /* FLASH_TEST_HELPERS_H */
