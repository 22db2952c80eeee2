/*
 * mysql_catchup.c -- catch MariaDB up from a WAL directory.
 *
 * mdb_catch_up() (contract in mysql_apply.h) replays the WAL from
 * the stream's applied LSN + 1 and hands the records to mdb_apply()
 * in batches.  Exactly-once comes from the applier (records at or below the
 * applied LSN are skipped inside the batch transaction), so starting a
 * little early, or twice, is harmless.
 */
#include <stdlib.h>
#include <string.h>

#include "mysql_apply.h"
#include "wal.h"

struct feed {
	mdb_t *fd_m;
	struct lsn_record *fd_v;
	size_t fd_n;
	size_t fd_cap;
	uint32_t fd_wait_ms;
	int fd_rc;                         /* first applier error */
	int fd_bad_type;                   /* a frame that is not a record */
	uint64_t fd_upto;                  /* last LSN to apply */
	int fd_reached;                    /* stopped at fd_upto */
	mdb_go_fn fd_go;           /* asked before each batch (may be NULL) */
	void *fd_go_arg;
	int fd_halted;                     /* fd_go said stop */
	struct apply_result *fd_total;
};

static int feed_flush(struct feed *f)
{
	if (!f->fd_n)
		return 0;
	if (f->fd_go && !f->fd_go(f->fd_go_arg)) {
		f->fd_n = 0;                   /* still in the WAL: the next catch-up */
		f->fd_halted = 1;
		return 1;
	}
	struct apply_result res = { 0 };
	int rc = mdb_apply_retry(f->fd_m, f->fd_v, f->fd_n, &res, f->fd_wait_ms);
	f->fd_n = 0;
	if (rc) {
		f->fd_rc = rc;
		return 1;
	}
	if (f->fd_total) {
		f->fd_total->applied += res.applied;
		f->fd_total->skipped += res.skipped;
		f->fd_total->refused += res.refused;
		f->fd_total->applied_lsn = res.applied_lsn;
		f->fd_total->slow_path |= res.slow_path;
	}
	return 0;
}

static int feed_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct feed *f = arg;
	if (lsn > f->fd_upto) {
		f->fd_reached = 1;
		return 1;
	}
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec)) {
		f->fd_bad_type = 1;
		return 1;
	}
	struct wal_rec wr;
	memcpy(&wr, payload, sizeof wr);
	f->fd_v[f->fd_n].lsn = lsn;
	f->fd_v[f->fd_n].rec = wr.wr_rec;
	if (++f->fd_n == f->fd_cap)
		return feed_flush(f);
	return 0;
}

int mdb_catch_up(mdb_t *m, const char *wal_dir, uint32_t batch,
                 uint32_t max_wait_ms, struct apply_result *total)
{
	return mdb_catch_up_to(m, wal_dir, UINT64_MAX, batch, max_wait_ms, total);
}

int mdb_catch_up_to(mdb_t *m, const char *wal_dir, uint64_t upto_lsn, uint32_t batch,
                    uint32_t max_wait_ms, struct apply_result *total)
{
	return mdb_catch_up_while(m, wal_dir, upto_lsn, batch, max_wait_ms, NULL, NULL, total);
}

int mdb_catch_up_while(mdb_t *m, const char *wal_dir, uint64_t upto_lsn,
                       uint32_t batch, uint32_t max_wait_ms, mdb_go_fn go,
                       void *go_arg, struct apply_result *total)
{
	if (!m || !wal_dir)
		return FLASH_EINVAL;
	if (total) {
		struct conflict *keep = total->conflicts;
		size_t keep_cap = total->conflict_cap;
		memset(total, 0, sizeof *total);
		total->conflicts = keep;
		total->conflict_cap = keep_cap;
	}
	uint64_t done = 0;
	int rc = mdb_applied_lsn(m, &done);
	if (rc)
		return rc;
	if (total)
		total->applied_lsn = done;
	if (done >= upto_lsn)
		return FLASH_OK;
	struct feed f = { .fd_m = m, .fd_cap = batch ? batch : 5000, .fd_wait_ms = max_wait_ms,
	                  .fd_total = total, .fd_upto = upto_lsn, .fd_go = go, .fd_go_arg = go_arg };
	f.fd_v = malloc(f.fd_cap * sizeof *f.fd_v);
	if (!f.fd_v)
		return FLASH_ENOMEM;
	struct wal_replay_report rep;
	int wrc = wal_replay(wal_dir, done + 1, feed_frame, &f, 0, &rep);
	if (wrc == FLASH_EWAL_STOPPED && f.fd_reached)
		wrc = FLASH_OK;                  /* stopped at upto_lsn: a clean end */
	if (wrc == FLASH_EWAL_STOPPED && f.fd_halted)
		wrc = FLASH_OK;                  /* cut short by fd_go: not a WAL matter */
	if (wrc == FLASH_OK || (wrc != FLASH_EWAL_STOPPED && wrc != FLASH_ESYS && wrc != FLASH_EINVAL &&
	                      wrc != FLASH_ENOMEM)) {
		/* Clean end, or a bad frame: what came before it still applies. */
		feed_flush(&f);
	}
	free(f.fd_v);
	if (total && !f.fd_rc)
		mdb_applied_lsn(m, &total->applied_lsn);
	if (f.fd_rc)
		return f.fd_rc;
	if (f.fd_halted)
		return FLASH_EBUSY;
	if (f.fd_bad_type)
		return FLASH_EWAL_TYPE;
	return wrc;                          /* FLASH_OK, or the WAL's own stop cause */
}
