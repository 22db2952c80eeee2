/*
 * feed.h -- the order feed's internals shared by the library (feed.c, the
 * consumer; feed_refill_mysql.c, the MariaDB refill) and the daemon (feed_retain.c,
 * WAL retention for registered consumers; metrics.c; `flashstock feed`).
 * The public contract is flashstock.h, section 10.
 *
 * Files of a WAL directory DIR that belong to the feed:
 *   DIR/DURABLE          the writer's durable mark (wal.h, struct wal_mark)
 *   DIR/feed/            created by the first flash_feed_open()
 *   DIR/feed/NAME.pos    a consumer's position, text, written as NAME.pos.tmp,
 *                        fdatasync, rename, fsync of DIR/feed:
 *                          flashstock-feed 1
 *                          lsn <committed LSN>
 *                          incarnation <WAL incarnation at registration, hex>
 *                          created_ns <CLOCK_REALTIME>
 *                          commit_ns <CLOCK_REALTIME of the last commit, 0: never>
 *                          crc <CRC-32C of every byte before this line, hex>
 *   DIR/feed/NAME.lock   locked (F_OFD_SETLK, write) by the feed that has NAME open
 */
#ifndef FLASH_FEED_H
#define FLASH_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"
#include "plog.h"

#define FEED_DIR "feed"

/* A consumer's position file, parsed. */
struct feed_pos {
	uint64_t fp_lsn;          /* committed: every LSN <= this is processed */
	uint64_t fp_incarnation;  /* WAL incarnation at registration (0: none known) */
	int64_t  fp_created_ns;
	int64_t  fp_commit_ns;
};

/* 1 if @p name is a valid consumer name (flashstock.h FLASH_FEED_NAME_MAX). */
int feed_name_ok(const char *name);

/* Read DIR/feed/NAME.pos.  @return FLASH_OK; FLASH_ENOT_FOUND (none);
 * FLASH_ECORRUPT (bad format or CRC); FLASH_ESYS. */
int feed_pos_read(const char *wal_dir, const char *name, struct feed_pos *out);

/* The WAL's durable mark as published in DIR/DURABLE (0 when there is
 * none yet), and the incarnation it names.  Lock-free, read only. */
int feed_mark_read(const char *wal_dir, uint64_t *durable, uint64_t *incarnation);

/* The start LSNs of DIR's WAL files, ascending (malloc'd). @return FLASH_OK,
 * FLASH_ENOMEM, FLASH_ESYS. */
int feed_wal_files(const char *wal_dir, uint64_t **lsns, size_t *n);

/*
 * Read the record at @p lsn from the WAL in @p wal_dir, if a file still
 * holds it (no durability check: the caller knows @p lsn is durable).
 * @return FLASH_OK; FLASH_ENOT_FOUND (no file holds it); FLASH_ECORRUPT;
 *         FLASH_ESYS.
 */
int feed_wal_read_one(const char *wal_dir, uint64_t lsn, struct flash_feed_rec *out);

/*
 * The registry lock: flock on the WAL directory itself.  Registering a new
 * consumer holds it shared while it picks its start and writes its position;
 * retention holds it exclusive while it reads the positions and removes
 * files (feed_retain_remove).  So a consumer registered "from the start"
 * never starts in a file that is being removed.  Blocking; held for one
 * position write or one removal.  @return the fd (>= 0), or -1 (errno set:
 * a registration goes on without it, a removal does not happen).
 */
int feed_registry_lock(const char *wal_dir, int exclusive);
void feed_registry_unlock(int fd);

/* ---- the refill source (feed_refill_mysql.c) ----
 *
 * The static library links feed_refill_mysql.c (and the MariaDB connection of
 * mysql_apply.c) directly.  The shared library does not link MariaDB: its
 * feed_refill_* (feed_refill_dl.c) load the refill plug-in
 * FEED_REFILL_PLUGIN from libflashstock.so's own directory on the first
 * feed opened with a MariaDB URL, and call it through the table below,
 * which the plug-in (feed_refill_plugin.c: feed_refill_mysql.c behind it) exports
 * as FEED_REFILL_SYMBOL.  An application that never refills never loads
 * libmariadb. */

typedef struct feed_refill feed_refill_t;

/* Check @p url (no connection).  @return FLASH_OK; FLASH_EMYSQL_CONFIG. */
int feed_refill_check(const char *url);

/* Remember the URL; connects on first use.  @return FLASH_OK; FLASH_ENOMEM. */
int feed_refill_open(const char *url, const char *stream, feed_refill_t **out);
void feed_refill_close(feed_refill_t *r);

/*
 * The records MariaDB keeps for LSNs @p from .. @p to (inclusive), in LSN
 * order, into *recs (malloc'd, *n of them; fr_gap not set).  ORDER rows
 * (orders.lsn), CANCELs (orders.cancel_lsn), ACTIVITY (activities.lsn, or
 * terms_lsn once its terms changed), SKU (item_stock.created_lsn) and PRICE
 * (item_stock.price_lsn); RESTOCKs, and terms replaced since, are not kept
 * per LSN (feed_refill_mysql.c says field by field).
 * @return FLASH_OK; FLASH_EREFILL (MariaDB's applied LSN is below @p to:
 *         *applied says where it is); FLASH_EMYSQL_RETRY; FLASH_EMYSQL;
 *         FLASH_EMYSQL_CONFIG; FLASH_ENOMEM.
 */
int feed_refill_fetch(feed_refill_t *r, uint64_t from, uint64_t to, struct flash_feed_rec **recs,
                      size_t *n, uint64_t *applied);

/* The plug-in's table: both sides check size and rec_size, so a plug-in of
 * another build is refused instead of misread. */
struct feed_refill_ops {
	uint32_t size;          /* sizeof(struct feed_refill_ops) */
	uint32_t rec_size;      /* sizeof(struct flash_feed_rec) */
	int  (*check)(const char *url);
	int  (*open)(const char *url, const char *stream, feed_refill_t **out);
	void (*close)(feed_refill_t *r);
	int  (*fetch)(feed_refill_t *r, uint64_t from, uint64_t to, struct flash_feed_rec **recs,
	              size_t *n, uint64_t *applied);
};

#define FEED_REFILL_SYMBOL "flashstock_refill_ops"

/* ---- retention in the daemon (feed_retain.c) ---- */

struct feed_retain_opts {
	uint64_t keep_bytes;     /* WAL kept for one consumer at most (0: no bound) */
	uint64_t keep_age_s;     /* ... and its oldest needed file no older than this (0: no bound) */
};

#define FEED_KEEP_BYTES_DEFAULT  (1ull << 30)     /* 1 GiB: 16 default WAL files */
#define FEED_KEEP_AGE_S_DEFAULT  (24ull * 3600)   /* one day */

/* Counters of the retention decisions (the daemon's metrics). */
struct feed_retain_stats {
	uint64_t lost_total;     /* consumers marked lost (each loss counted once) */
	uint64_t held_lsn;       /* the lowest LSN a consumer held back the last time (0: none) */
};


/*
 * Lower @p cover (the LSN through which snapshots and MySQL let files go)
 * to what registered consumers still need: a consumer at committed position
 * C needs LSN C + 1, so cover becomes at most C.  A consumer whose need
 * would keep more than o->keep_bytes of WAL files, or a file created more
 * than o->keep_age_s ago, holds nothing back: it is logged (WARN, once per
 * loss) and counted as lost.  Thread-safe (a mutex around the counters).
 */
/*
 * Every consumer registered in @p wal_dir's feed into *out (malloc'd, the
 * caller frees it; *n entries, *out NULL when none), whatever registers
 * meanwhile: flash_feed_list's count and copy are two reads.
 * @return FLASH_OK; flash_feed_list's errors; FLASH_ENOMEM.
 */
int feed_list_all(const char *wal_dir, struct flash_feed_info **out, size_t *n);

uint64_t feed_retain_cover(const char *wal_dir, uint64_t cover, const struct feed_retain_opts *o,
                           plog_fn log, void *log_arg);

/*
 * What the snapshot thread calls: under the registry lock (exclusive),
 * feed_retain_cover() of @p cover, then -- when the result is above
 * @p floor (what is removed already) -- wal_remove_before(result + 1).
 * When the lock cannot be taken nothing is removed (a WARN line says so;
 * *cover_out is 0) and FLASH_OK is returned: the next call tries again.
 * @param[out] cover_out  the cover after the consumers (<= @p cover)
 * @param[out] removed    files removed
 * @return a WAL_* code of the removal (FLASH_OK when nothing was to go).
 */
int feed_retain_remove(const char *wal_dir, uint64_t cover, uint64_t floor,
                       const struct feed_retain_opts *o, plog_fn log, void *log_arg,
                       uint64_t *cover_out, uint32_t *removed);

void feed_retain_stats_get(struct feed_retain_stats *out);

#endif /* FLASH_FEED_H */
