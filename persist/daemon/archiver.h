/*
 * archiver.h -- when an ended activity may be archived, and the daemon's
 * archiver thread.  `flashstock archive` (tools/cmd_archive.c) and `serve
 * --archive-after-s` (serve.c) make the same decision here:
 *
 *   due      the activity's window closed at least after_s ago
 *            (end_ns + after_s <= now), and
 *   applied  MariaDB's applied LSN (applied_lsn table, the applier's
 *            stream) is at least the segment's WAL LSN now
 *            (flash_ident.wal_lsn): every record the segment reflects,
 *            the activity's among them, is in MariaDB, where `flashstock
 *            order` finds its orders once the segment forgets them, and
 *   written  with `serve --backstop`, the backstop's position (every LSN
 *            at or below it is in the central fs_user_limit) is at least
 *            that WAL LSN too: the backstop reads an order's limit and
 *            scope from its activity in the segment, so an order it has
 *            not written when the activity goes would never be checked
 *            across boxes.
 *
 * A record of the activity made after that read (a cancel racing the
 * archive) is still in the WAL and applied afterwards: MariaDB is never
 * short of a record, only late by one pass.  Without MariaDB (`archive
 * --no-mysql-check`) the applied test is skipped: the orders are then in
 * the WAL only.  `flashstock archive` makes no written test (it knows
 * neither the backstop's database nor the box): on a box that runs
 * `serve --backstop`, leave archiving to the daemon.
 *
 * Synchronization: the functions take the caller's handle (its thread's;
 * read-only is enough for them); the thread (archiver_start) opens handles
 * of its own: a read-only one to look, a writable one only while it
 * archives.
 */
#ifndef FLASH_ARCHIVER_H
#define FLASH_ARCHIVER_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"
#include "plog.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The activities of the segment whose window closed at or before
 * @p now_ns - @p after_ns, ascending by id (catalog entries freed by an
 * archive are skipped: the walk covers the whole capacity).
 * @param[out] out  malloc'ed array of *n activities (NULL when none)
 * @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM; a flash_activity_at() code.
 */
int archiver_ended(flash_t *h, int64_t now_ns, int64_t after_ns, struct flash_activity **out,
                   size_t *n);

/**
 * The applied test: FLASH_OK when @p applied_lsn >= the segment's WAL LSN
 * (written to @p wal_lsn either way), FLASH_EBUSY when MariaDB is behind.
 * @return FLASH_OK; FLASH_EBUSY; a flash_ident_get() code.
 */
int archiver_applied(flash_t *h, uint64_t applied_lsn, uint64_t *wal_lsn);

/* ---- the daemon's archiver ------------------------------------------------ */

typedef struct archiver archiver_t;

/* Reads a position: every WAL record at or below *lsn is written (the
 * applier's applied LSN, the backstop's central position); nonzero:
 * unknown now. */
typedef int (*archiver_applied_fn)(void *arg, uint64_t *lsn);

struct archiver_opts {
	const char         *segment;      /* segment name (the thread opens its own handle) */
	uint32_t            after_s;      /* archive this long after an activity's end (> 0) */
	uint32_t            every_ms;     /* look this often (0: 1000) */
	archiver_applied_fn applied_lsn;  /* required: no archive without MariaDB's word */
	void               *applied_arg;
	archiver_applied_fn backstop_lsn; /* the backstop's position (serve --backstop); NULL: none */
	void               *backstop_arg;
	plog_fn            log;        /* NULL: quiet */
	void               *log_arg;
};

struct archiver_stats {
	uint64_t archived;         /* activities this archiver archived */
	uint64_t orders;           /* order-table slots their archives freed */
	uint64_t waits;            /* passes that found a due activity MariaDB or the backstop had
	                              not caught up with */
	uint64_t failures;         /* flash_archive() calls that failed (logged) */
	uint32_t due;              /* due activities at the last pass, before archiving */
	uint32_t _pad;
};

/** Start the thread.  @return FLASH_OK; FLASH_EINVAL; FLASH_ENOMEM; FLASH_ESYS. */
int archiver_start(const struct archiver_opts *o, archiver_t **out);

/** Figures so far (any thread). */
void archiver_stats_get(archiver_t *a, struct archiver_stats *out);

/** Stop and join the thread (NULL is fine); @p out may be NULL. */
void archiver_stop(archiver_t *a, struct archiver_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* FLASH_ARCHIVER_H */
