/*
 * mysql_pump.h -- the MySQL applier on its own thread, for the daemon.
 *
 * The daemon must keep writing the WAL whatever MySQL does, so it never
 * calls the applier itself: after each group commit it pushes the durable
 * records (with their LSNs) into the pump's queue and goes on.  The pump's
 * thread takes batches from the queue and applies them (mysql_apply.h),
 * retrying with exponential backoff while MySQL is down or slow.
 *
 * The queue is bounded.  When it is full a push drops its records and says
 * so (FLASH_EFULL) -- it never blocks.  Nothing is lost: the applier refuses
 * to apply past a hole (FLASH_EMYSQL_GAP), and the pump then reads the
 * missing records back from the WAL directory (mdb_catch_up_to(),
 * read-only) before it goes on with the queue.  Without a WAL directory a
 * hole stops the pump until a restart catches up; stats say so.
 *
 * Durability: MySQL never gets a record the WAL could still lose.  Pushed
 * records are durable by contract (push after the group commit), and a
 * read-back stops at the highest LSN known durable: the highest pushed
 * (dropped pushes included) or o->start_durable_lsn, whichever is larger.
 * Frames the writer has written but not yet fdatasync'd are never read.
 *
 * Synchronization table (one pump):
 *   push, wait, stats_get   any threads at once
 *   stop                    once, after which no call is made
 * Progress: push never waits for the pump or MySQL: a CAS on the queue
 * bound (lock-free: it retries only when the pump freed room or another
 * push reserved meanwhile), a recycled chunk (malloc only when none of its
 * size is free), a memcpy, a wfcqueue enqueue (wait-free), and a
 * FUTEX_WAKE only when the pump sleeps idle.  wait blocks by contract;
 * stats_get may wait for the pump to note one result.  Records pushed by
 * one thread reach MySQL in push order.
 * The pump's thread owns its mdb_t: no other thread touches it.
 */
#ifndef MDB_PUMP_H
#define MDB_PUMP_H

#include <stddef.h>
#include <stdint.h>

#include "mysql_apply.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The applier a pump drives: MariaDB's (mdb_applier_mariadb, the functions
 * of mysql_apply.h), or a stand-in that applies nothing
 * (bench/drain_stub_mysql.c, which measures the hand-off alone). */
struct mdb_applier {
	int  (*open)(const struct mdb_opts *o, mdb_t **out);
	void (*close)(mdb_t *m);
	int  (*apply)(mdb_t *m, const struct lsn_record *recs, size_t n, struct apply_result *res);
	int  (*catch_up_while)(mdb_t *m, const char *wal_dir, uint64_t upto_lsn, uint32_t batch,
	                       uint32_t max_wait_ms, mdb_go_fn go, void *go_arg,
	                       struct apply_result *total);
	int  (*stats_get)(const mdb_t *m, struct mdb_stats *out);
	void (*logf)(mdb_t *m, int level, const char *fmt, ...);
};

extern const struct mdb_applier mdb_applier_mariadb;

struct mdb_pump_opts {
	struct mdb_opts mysql;  /* connection, stream, log (lsn_gaps_ok must stay 0) */
	const struct mdb_applier *applier; /* NULL: mdb_applier_mariadb */
	const char *wal_dir;            /* WAL to read dropped records back from, or NULL */
	uint32_t queue_records;         /* queue capacity; 0 = 262144 (18 MiB) */
	uint32_t batch;                 /* records per transaction at most; 0 = 5000 */
	uint32_t backoff_max_ms;        /* longest pause between attempts; 0 = 2000.  The
	                                   pause doubles from 10 ms per failed attempt up to
	                                   this, jittered (a random point in its upper
	                                   half); records pushed do not shorten it */
	uint64_t start_durable_lsn;     /* the WAL's durable LSN when the pump starts (0: unknown) */
};

typedef struct mdb_pump mdb_pump_t;

struct mdb_pump_stats {
	struct mdb_stats mysql; /* the applier's counters (lag = pushed_lsn - applied_lsn) */
	uint64_t pushed_lsn;            /* highest LSN pushed (queued or dropped) */
	uint64_t applied_lsn;           /* highest LSN MySQL holds */
	uint64_t queued;                /* records in the queue now */
	uint64_t queue_cap;
	uint64_t dropped;               /* records dropped by a full queue (read back from the WAL) */
	uint64_t catch_ups;             /* WAL read-backs completed */
	int      last_rc;               /* the last attempt's result (FLASH_OK, FLASH_EMYSQL_RETRY, ...) */
	int      connected;             /* the last attempt reached MySQL */
	int      stopping;              /* mdb_pump_stop() was called: draining until its deadline */
};

/**
 * Start the pump's thread.  It connects in the background: a MySQL that is
 * down at start is retried like any other outage.  With o->wal_dir the
 * thread first reads from the WAL whatever MySQL lacks.  Log lines go through
 * o->mysql.log (default: stderr); result codes read with flash_strerror().
 * @return FLASH_OK; FLASH_EINVAL (NULL, lsn_gaps_ok set); FLASH_EMYSQL_CONFIG
 *         (bad URL); FLASH_ENOMEM; FLASH_ESYS (thread creation).
 */
int mdb_pump_start(const struct mdb_pump_opts *o, mdb_pump_t **out);

/**
 * Queue records, in LSN order, that are durable in the WAL (push after the
 * commit that covers them).  Never waits for MySQL.
 * @return FLASH_OK; FLASH_EFULL (not enough room: all @p n records dropped,
 *         to be read back from the WAL); FLASH_EINVAL.
 */
int mdb_pump_push(mdb_pump_t *p, const struct lsn_record *recs, size_t n);

/**
 * Wait until MySQL holds every record up to @p lsn, for at most @p timeout_ms.
 * @return FLASH_OK; FLASH_EBUSY (timed out); FLASH_EINVAL.
 */
int mdb_pump_wait(mdb_pump_t *p, uint64_t lsn, uint32_t timeout_ms);

/** @return FLASH_OK; FLASH_EINVAL. */
int mdb_pump_stats_get(mdb_pump_t *p, struct mdb_pump_stats *out);

/**
 * Stop: let the thread apply what is queued, or read back from the WAL,
 * for at most @p drain_ms, then join it, disconnect and free.  The deadline
 * holds in the middle of a long read-back too: it is checked before every
 * batch.  An attempt already in flight finishes first, so a hung server can
 * hold this up to the connection's timeouts (mysql.connect_timeout_s,
 * mysql.rw_timeout_s).  Stopping behind, the pump logs (WARN) how many
 * records MySQL lacks; they are not lost: the WAL holds them and the next
 * start catches up.  NULL is fine.
 */
void mdb_pump_stop(mdb_pump_t *p, uint32_t drain_ms);

#ifdef __cplusplus
}
#endif
#endif /* MDB_PUMP_H */
