/*
 * drain_stub_mysql.c -- a MySQL applier that applies nothing, for
 * bench/drain_bench.c: it takes every batch at once, so the bench measures
 * the daemon's hand-off to the applier's thread and not MariaDB.
 *
 * It is the pump's applier table (struct mdb_applier, mysql_pump.h) with
 * every function the pump calls; the bench passes it in the pump's options.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "drain_stub_mysql.h"

struct mdb {
	struct mdb_stats st;
};

static int stub_open(const struct mdb_opts *o, mdb_t **out)
{
	(void)o;
	*out = calloc(1, sizeof **out);
	return *out ? FLASH_OK : FLASH_ENOMEM;
}

static void stub_close(mdb_t *m)
{
	free(m);
}

static int stub_apply(mdb_t *m, const struct lsn_record *recs, size_t n,
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

static int stub_catch_up_while(mdb_t *m, const char *wal_dir, uint64_t upto_lsn,
                               uint32_t batch, uint32_t max_wait_ms, mdb_go_fn go,
                               void *go_arg, struct apply_result *total)
{
	(void)m; (void)wal_dir; (void)upto_lsn; (void)batch; (void)max_wait_ms;
	(void)go; (void)go_arg;
	memset(total, 0, sizeof *total);
	return FLASH_OK;
}

static void stub_logf(mdb_t *m, int level, const char *fmt, ...)
{
	(void)m; (void)level; (void)fmt;
}

static int stub_stats_get(const mdb_t *m, struct mdb_stats *out)
{
	*out = m->st;
	return FLASH_OK;
}

const struct mdb_applier drain_stub_applier = {
	.open = stub_open, .close = stub_close, .apply = stub_apply,
	.catch_up_while = stub_catch_up_while, .stats_get = stub_stats_get, .logf = stub_logf,
};
