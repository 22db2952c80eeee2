/*
 * drain_stub_mysql.c -- a MySQL applier that applies nothing, for
 * bench/drain_bench.c: it takes every batch at once, so the bench measures
 * the daemon's hand-off to the applier's thread and not MariaDB.
 *
 * It defines every mdb_* function persist/mysql_pump.c calls; the
 * bench links it before libflashstock_persist.a, and these definitions win
 * over the archive's (persist/CMakeLists.txt says how).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_apply.h"

struct mdb {
	struct mdb_stats st;
};

int mdb_open(const struct mdb_opts *o, mdb_t **out)
{
	(void)o;
	*out = calloc(1, sizeof **out);
	return *out ? FLASH_OK : FLASH_ENOMEM;
}

void mdb_close(mdb_t *m)
{
	free(m);
}

int mdb_apply(mdb_t *m, const struct lsn_record *recs, size_t n,
                      struct apply_result *res)
{
	memset(res, 0, sizeof *res);
	if (n == 0)
		return FLASH_OK;
	if (recs[0].lsn != m->st.applied_lsn + 1 && m->st.applied_lsn != 0)
		return FLASH_EMYSQL_GAP;   /* the applier's rule: no holes */
	m->st.batches++;
	m->st.applied += n;
	m->st.applied_lsn = recs[n - 1].lsn;
	res->applied = n;
	res->applied_lsn = recs[n - 1].lsn;
	return FLASH_OK;
}

int mdb_catch_up_while(mdb_t *m, const char *wal_dir, uint64_t upto_lsn,
                               uint32_t batch, uint32_t max_wait_ms, mdb_go_fn go,
                               void *go_arg, struct apply_result *total, int *wal_rc)
{
	(void)m; (void)wal_dir; (void)upto_lsn; (void)batch; (void)max_wait_ms;
	(void)go; (void)go_arg; (void)wal_rc;
	memset(total, 0, sizeof *total);
	return FLASH_OK;
}

void mdb_logf(mdb_t *m, int level, const char *fmt, ...)
{
	(void)m; (void)level; (void)fmt;
}

int mdb_stats_get(const mdb_t *m, struct mdb_stats *out)
{
	*out = m->st;
	return FLASH_OK;
}
