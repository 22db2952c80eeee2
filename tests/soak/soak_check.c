/*
 * soak_check.c -- the checks at the end of the soak (see soak.h),
 * from the records, independent of the engine's counters:
 *
 *   1. The WAL read back (wal_replay), in LSN order -- causal order, so
 *      every prefix is a state the sale went through: per (activity, sku)
 *      units loaded and sold; sold above loaded at any prefix is oversold.
 *      Per limit key (activity, user, [sku], [business day]) the orders
 *      holding a slot (an ORDER takes one, a CANCEL that returned the quota
 *      gives it back); above the activity's K at any prefix is over the
 *      limit.  An order number with two ORDER records is a duplicate.
 *   2. The segment: every sku it still holds has available + sold = total,
 *      sold and total as the WAL says.
 *   3. MariaDB (caught up with the WAL first): per sku available + sold =
 *      total and both equal to the WAL's; no user over the limit
 *      (rsql_users_over_limit); no refused record; every order row once
 *      and in the WAL.
 *   4. Every acknowledged order (the buyers' outcome files): its number once
 *      in the WAL with the same user, activity, sku, quantity and request
 *      id, and once in MariaDB; an acknowledged cancel is a CANCEL record and
 *      a cancelled row.
 *   5. The project's reconciler (segment, WAL fold, MariaDB): no difference.
 */
#include "tool.h"
#include "soak.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "mysql_apply.h"
#include "reconcile.h"
#include "reconcile_sql.h"
#include "wal.h"

/* ---- a small open-addressing map: 3 words of key -> an index ----------- */

struct soak_map {
	uint64_t *k;      /* 3 words per entry; k[0] == 0: empty (keys are nonzero) */
	uint32_t *v;
	size_t    cap, n; /* cap a power of two */
};

static uint64_t soak_map_hash(const uint64_t *key)
{
	return soak_mix(key[0] ^ soak_mix(key[1] ^ soak_mix(key[2])));
}

static int soak_map_grow(struct soak_map *m)
{
	struct soak_map g = { NULL, NULL, m->cap ? m->cap * 2 : 1024, 0 };
	size_t i;

	g.k = calloc(g.cap, 3 * sizeof *g.k);
	g.v = calloc(g.cap, sizeof *g.v);
	if (!g.k || !g.v) {
		free(g.k);
		free(g.v);
		return -1;
	}
	for (i = 0; i < m->cap; i++) {
		if (m->k[3 * i] == 0)
			continue;
		size_t j = soak_map_hash(&m->k[3 * i]) & (g.cap - 1);
		while (g.k[3 * j] != 0)
			j = (j + 1) & (g.cap - 1);
		memcpy(&g.k[3 * j], &m->k[3 * i], 3 * sizeof *g.k);
		g.v[j] = m->v[i];
		g.n++;
	}
	free(m->k);
	free(m->v);
	*m = g;
	return 0;
}

/* The value of @p key; inserted with @p fresh when missing.  NULL: no memory. */
static uint32_t *soak_map_get(struct soak_map *m, uint64_t a, uint64_t b, uint64_t c,
                              uint32_t fresh, int insert)
{
	uint64_t key[3] = { a | (1ull << 63), b, c };   /* the top bit keeps key[0] nonzero */
	size_t j;

	if (insert && (m->n + 1) * 2 > m->cap && soak_map_grow(m) != 0)
		return NULL;
	if (m->cap == 0)
		return NULL;
	j = soak_map_hash(key) & (m->cap - 1);
	while (m->k[3 * j] != 0) {
		if (memcmp(&m->k[3 * j], key, sizeof key) == 0)
			return &m->v[j];
		j = (j + 1) & (m->cap - 1);
	}
	if (!insert)
		return NULL;
	memcpy(&m->k[3 * j], key, sizeof key);
	m->v[j] = fresh;
	m->n++;
	return &m->v[j];
}

static void soak_map_free(struct soak_map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* ---- the WAL's view ----------------------------------------------------- */

struct soak_wsku {
	uint32_t act, sku;
	int64_t  total;          /* loaded + restocked */
	int64_t  sold;           /* ordered - cancelled */
	int      oversold;
};

struct soak_word {           /* per order number, as the WAL has it */
	uint64_t user, request_id;
	uint32_t act, sku, qty, biz_day;
	uint8_t  orders, cancels, mysql, mysql_cancelled;
};

struct soak_wal {
	struct soak_verdict *v;
	struct soak_map      acts;    /* act -> limit | scope << 8 | flags << 16 */
	struct soak_map      skus;    /* (act, sku) -> index in sku[] */
	struct soak_wsku    *sku;
	size_t               nsku, capsku;
	struct soak_map      limits;  /* (act, user, sku|day) -> slots held */
	struct soak_word    *ord;     /* [order_no] */
	uint64_t             capord;
	int                  nomem;
};

static void soak_first(struct soak_verdict *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void soak_first(struct soak_verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->first[0])
		return;
	va_start(ap, fmt);
	vsnprintf(v->first, sizeof v->first, fmt, ap);
	va_end(ap);
}

static struct soak_wsku *soak_wal_sku(struct soak_wal *w, uint32_t act, uint32_t sku, int insert)
{
	uint32_t *ix = soak_map_get(&w->skus, act, sku, 0, UINT32_MAX, insert);

	if (!ix)
		return NULL;
	if (*ix == UINT32_MAX) {
		if (w->nsku == w->capsku) {
			size_t cap = w->capsku ? w->capsku * 2 : 256;
			struct soak_wsku *n = realloc(w->sku, cap * sizeof *n);
			if (!n)
				return NULL;
			w->sku = n;
			w->capsku = cap;
		}
		memset(&w->sku[w->nsku], 0, sizeof w->sku[0]);
		w->sku[w->nsku].act = act;
		w->sku[w->nsku].sku = sku;
		*ix = (uint32_t)w->nsku++;
	}
	return &w->sku[*ix];
}

static struct soak_word *soak_wal_order(struct soak_wal *w, uint64_t no)
{
	if (no >= w->capord) {
		uint64_t cap = w->capord ? w->capord : 1u << 16;
		while (cap <= no)
			cap *= 2;
		struct soak_word *n = realloc(w->ord, cap * sizeof *n);
		if (!n)
			return NULL;
		memset(n + w->capord, 0, (cap - w->capord) * sizeof *n);
		w->ord = n;
		w->capord = cap;
	}
	return &w->ord[no];
}

/* The limit key of an order or cancel record; NULL: activity unknown. */
static uint32_t *soak_wal_limit(struct soak_wal *w, const struct flash_record *r, uint32_t *k)
{
	uint32_t *a = soak_map_get(&w->acts, r->activity_id, 0, 0, 0, 0);
	uint32_t scope, day;

	if (!a)
		return NULL;
	*k = *a & 0xffu;
	scope = (*a >> 8) & 0xffu;
	day = scope == FLASH_SCOPE_DAY ? r->biz_day : 0;
	return soak_map_get(&w->limits, r->activity_id, r->user_id,
	                    (uint64_t)(scope == FLASH_SCOPE_SKU ? r->sku_id : 0) << 32 | day, 0, 1);
}

static int soak_wal_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct soak_wal *w = arg;
	struct soak_verdict *v = w->v;
	const struct wal_rec *wr = payload;
	const struct flash_record *r;
	struct soak_wsku *s;
	struct soak_word *o;
	uint32_t *held, k;

	if (type != WAL_T_RECORD || len < sizeof *wr) {
		v->wal_other++;
		return 0;
	}
	r = &wr->wr_rec;
	v->wal_records++;
	switch (r->type) {
	case FLASH_REC_ACTIVITY:
		if (!soak_map_get(&w->acts, r->activity_id, 0, 0, r->biz_day, 1))
			goto nomem;
		break;
	case FLASH_REC_SKU:
		if (!(s = soak_wal_sku(w, r->activity_id, r->sku_id, 1)))
			goto nomem;
		s->total += r->value;
		break;
	case FLASH_REC_RESTOCK:
		if (!(s = soak_wal_sku(w, r->activity_id, r->sku_id, 1)))
			goto nomem;
		s->total += r->value;
		break;
	case FLASH_REC_ORDER:
		v->wal_orders++;
		if (!(s = soak_wal_sku(w, r->activity_id, r->sku_id, 1)) ||
		    !(o = soak_wal_order(w, r->order_no)))
			goto nomem;
		s->sold += r->qty;
		if (s->sold > s->total && !s->oversold) {
			s->oversold = 1;
			v->oversold++;
			soak_first(v, "oversold: activity %u sku %u sold %lld of %lld at LSN %llu",
			           r->activity_id, r->sku_id, (long long)s->sold, (long long)s->total,
			           (unsigned long long)lsn);
		}
		if (o->orders++ == 1) {
			v->wal_dup_orders++;
			soak_first(v, "order %llu has two ORDER records (LSN %llu)",
			           (unsigned long long)r->order_no, (unsigned long long)lsn);
		}
		o->user = r->user_id;
		o->request_id = r->request_id;
		o->act = r->activity_id;
		o->sku = r->sku_id;
		o->qty = r->qty;
		o->biz_day = r->biz_day;
		if ((held = soak_wal_limit(w, r, &k)) == NULL) {
			v->over_limit_wal++;
			soak_first(v, "order %llu of unknown activity %u", (unsigned long long)r->order_no,
			           r->activity_id);
		} else if (++*held == k + 1) {
			v->over_limit_wal++;
			soak_first(v, "user %llu holds %u orders of activity %u (limit %u) at LSN %llu",
			           (unsigned long long)r->user_id, *held, r->activity_id, k,
			           (unsigned long long)lsn);
		}
		break;
	case FLASH_REC_CANCEL:
		v->wal_cancels++;
		if (!(s = soak_wal_sku(w, r->activity_id, r->sku_id, 1)) ||
		    !(o = soak_wal_order(w, r->order_no)))
			goto nomem;
		s->sold -= r->qty;
		o->cancels++;
		if ((r->flags & 1u) && (held = soak_wal_limit(w, r, &k)) != NULL && *held > 0)
			--*held;
		break;
	default:
		/* later record types (generations, archiving): no stock, no limit */
		break;
	}
	return 0;
nomem:
	w->nomem = 1;
	return 1;
}

/* ---- MariaDB ------------------------------------------------------------- */

static int soak_sql_order(void *arg, const struct rsql_order *so)
{
	struct soak_wal *w = arg;
	struct soak_verdict *v = w->v;
	struct soak_word *o = so->order_no < w->capord ? &w->ord[so->order_no] : NULL;

	v->mysql_orders++;
	if (!o || o->orders == 0 || o->user != so->user_id || o->act != so->activity_id ||
	    o->sku != so->sku_id || o->qty != so->qty) {
		v->mysql_not_in_wal++;
		soak_first(v, "MariaDB order %llu is not the WAL's", (unsigned long long)so->order_no);
		return 0;
	}
	o->mysql++;
	if (so->state == FLASH_ORDER_CANCELLED)
		o->mysql_cancelled = 1;
	return 0;
}

static int soak_check_mysql(struct soak_wal *w, mdb_t *m, const char *wal_dir,
                            uint32_t inject)
{
	struct soak_verdict *v = w->v;
	struct apply_result tot;
	struct rsql_totals t;
	struct rsql_sku *ss = NULL;
	struct rsql_user_excess *ue = NULL;
	size_t n = 0, i;
	int rc;

	memset(&tot, 0, sizeof tot);
	rc = mdb_catch_up(m, wal_dir, 0, 60000, &tot);
	if (rc != FLASH_OK)
		return tool_failf("catch MariaDB up with the WAL: %s", flash_strerror(rc));
	if ((inject & SOAK_INJECT_MYSQL_STOCK) &&
	    mysql_query(mdb_conn(m),
	                "UPDATE item_stock SET available = available + 1, total = total + 1 "
	                "ORDER BY activity_id, sku_id "
	                "LIMIT 1") != 0)
		return tool_failf("--inject mysql-stock: %s", mysql_error(mdb_conn(m)));
	if ((rc = rsql_totals_get(m, &t)) != FLASH_OK)
		return tool_failf("MariaDB totals: %s", flash_strerror(rc));
	v->mysql_conflicts = t.conflicts;
	if (t.conflicts)
		soak_first(v, "MariaDB refused %llu records (apply_conflicts)",
		           (unsigned long long)t.conflicts);

	if ((rc = rsql_skus(m, &ss, &n)) != FLASH_OK)
		return tool_failf("MariaDB skus: %s", flash_strerror(rc));
	for (i = 0; i < n; i++) {
		struct soak_wsku *s = soak_wal_sku(w, ss[i].activity_id, ss[i].sku_id, 0);
		if (!ss[i].has_stock_row || !s || ss[i].available + ss[i].sold != ss[i].total ||
		    (int64_t)ss[i].total != s->total || (int64_t)ss[i].sold != s->sold ||
		    ss[i].active_qty != ss[i].sold) {
			v->leaked_mysql++;
			soak_first(v, "MariaDB activity %u sku %u: total %llu available %llu sold %llu "
			           "active %llu; WAL total %lld sold %lld", ss[i].activity_id, ss[i].sku_id,
			           (unsigned long long)ss[i].total, (unsigned long long)ss[i].available,
			           (unsigned long long)ss[i].sold, (unsigned long long)ss[i].active_qty,
			           s ? (long long)s->total : -1LL, s ? (long long)s->sold : -1LL);
		}
	}
	if (n != w->nsku) {
		v->leaked_mysql++;
		soak_first(v, "MariaDB has %zu skus, the WAL %zu", n, w->nsku);
	}
	free(ss);

	if ((rc = rsql_users_over_limit(m, &ue, &n)) != FLASH_OK)
		return tool_failf("MariaDB limits: %s", flash_strerror(rc));
	v->over_limit_mysql = n;
	if (n)
		soak_first(v, "MariaDB: user %llu holds %u of activity %u (limit %u)",
		           (unsigned long long)ue[0].user_id, ue[0].holding, ue[0].activity_id,
		           ue[0].limit);
	free(ue);

	if ((rc = rsql_orders_scan(m, 1, UINT64_MAX >> 1, soak_sql_order, w)) != FLASH_OK)
		return tool_failf("MariaDB orders: %s", flash_strerror(rc));
	return TOOL_OK;
}

/* ---- the segment and the reconciler -------------------------------------- */

static int soak_check_segment(struct soak_wal *w, flash_t *h)
{
	struct soak_verdict *v = w->v;
	struct flash_sku_info si;
	uint32_t i;
	int rc;

	/* the skus still in the segment (entries an archive freed are skipped:
	 * their stock is checked in the WAL and MariaDB) */
	for (i = 0; (rc = flash_sku_at(h, i, &si)) != FLASH_ENOT_FOUND; i++) {
		struct soak_wsku *s;
		if (rc == FLASH_EARCHIVED)
			continue;
		if (rc != FLASH_OK)
			break;
		s = soak_wal_sku(w, si.activity_id, si.sku_id, 0);
		if (!s || (int64_t)si.total != s->total ||
		    (int64_t)si.available + s->sold != (int64_t)si.total) {
			v->leaked_mem++;
			soak_first(v, "segment activity %u sku %u: total %llu available %llu; WAL total "
			           "%lld sold %lld", si.activity_id, si.sku_id,
			           (unsigned long long)si.total, (unsigned long long)si.available,
			           s ? (long long)s->total : -1LL, s ? (long long)s->sold : -1LL);
		}
	}
	if (rc != FLASH_ENOT_FOUND)
		return tool_fail("read the segment's skus", rc);
	return TOOL_OK;
}

static int soak_check_reconcile(struct soak_verdict *v, flash_t *h, mdb_t *m,
                                const char *wal_dir)
{
	struct reconcile_report rep;
	fold_t *f = NULL;
	int rc;

	if ((rc = fold_new(&f)) != FLASH_OK)
		return tool_fail("reconcile", rc);
	if ((rc = fold_wal(f, wal_dir)) != FLASH_OK) {
		fold_free(f);
		return tool_failf("reconcile: fold the WAL: %s", flash_strerror(rc));
	}
	memset(&rep, 0, sizeof rep);
	rc = reconcile_compare(h, m, f, RECONCILE_ORDERS, &rep);
	fold_free(f);
	if (rc != FLASH_OK)
		return tool_failf("reconcile: %s", flash_strerror(rc));
	v->reconcile_diffs = rep.found;
	if (rep.found) {
		soak_first(v, "the reconciler found %llu differences", (unsigned long long)rep.found);
		reconcile_print(&rep, stdout, 0);
	}
	reconcile_report_free(&rep);
	return TOOL_OK;
}

/* ---- every acknowledged order ------------------------------------------- */

static void soak_check_acked(struct soak_wal *w, const struct soak_log *log, int64_t base_day)
{
	struct soak_verdict *v = w->v;
	size_t i;

	for (i = 0; i < log->n; i++) {
		const struct soak_out *so = &log->so[i];
		const struct soak_word *o;

		if (so->so_rc != FLASH_OK)
			continue;
		o = so->so_order_no < w->capord ? &w->ord[so->so_order_no] : NULL;
		if (so->so_kind == SOAK_OUT_ORDER) {
			v->acked++;
			if (!o || o->orders != 1) {
				v->acked_not_once_wal++;
				soak_first(v, "acknowledged order %llu is %u times in the WAL",
				           (unsigned long long)so->so_order_no, o ? o->orders : 0);
				continue;
			}
			if (o->user != so->so_user || o->act != so->so_activity || o->sku != so->so_sku ||
			    o->qty != so->so_qty || o->request_id != so->so_request_id) {
				v->acked_mismatch++;
				soak_first(v, "acknowledged order %llu differs from its WAL record",
				           (unsigned long long)so->so_order_no);
			}
			/* every activity has day_offset_s 0: the business day is the UTC
			 * day of the buyer's (shifted) clock when it ordered */
			if ((int64_t)o->biz_day != base_day + so->so_day) {
				v->acked_wrong_day++;
				soak_first(v, "acknowledged order %llu of simulated day %u has business day "
				           "%u, not %lld", (unsigned long long)so->so_order_no, so->so_day,
				           o->biz_day, (long long)(base_day + so->so_day));
			}
			if (o->mysql != 1) {
				v->acked_not_once_mysql++;
				soak_first(v, "acknowledged order %llu is %u times in MariaDB",
				           (unsigned long long)so->so_order_no, o->mysql);
			}
		} else if (so->so_kind == SOAK_OUT_CANCEL) {
			if (!o || o->cancels != 1 || !o->mysql_cancelled) {
				v->acked_mismatch++;
				soak_first(v, "acknowledged cancel of order %llu: %u CANCEL records, %s in "
				           "MariaDB", (unsigned long long)so->so_order_no, o ? o->cancels : 0,
				           o && o->mysql_cancelled ? "cancelled" : "not cancelled");
			}
		}
	}
}

int soak_check_run(flash_t *h, const char *wal_dir, const char *mysql_url,
                   const struct soak_log *log, uint32_t inject, int64_t base_day,
                   struct soak_verdict *v)
{
	struct soak_wal w;
	struct wal_replay_report rep;
	struct mdb_opts mo;
	mdb_t *m = NULL;
	size_t i;
	int rc, ret = TOOL_FAIL;

	memset(v, 0, sizeof *v);
	memset(&w, 0, sizeof w);
	w.v = v;
	rc = wal_replay(wal_dir, 0, soak_wal_frame, &w, 0, &rep);
	if (w.nomem) {
		tool_fail("read the WAL back", FLASH_ENOMEM);
		goto out;
	}
	if (rc != FLASH_OK) {
		tool_failf("read the WAL back: %s at %s offset %llu", flash_strerror(rc), rep.file,
		           (unsigned long long)rep.offset);
		goto out;
	}
	for (i = 0; i < w.nsku; i++) {
		v->skus++;
		v->units_total += (uint64_t)w.sku[i].total;
		v->units_sold += (uint64_t)w.sku[i].sold;
		if (w.sku[i].sold < 0 || w.sku[i].sold > w.sku[i].total) {
			v->leaked_wal++;
			soak_first(v, "WAL activity %u sku %u: sold %lld of %lld", w.sku[i].act,
			           w.sku[i].sku, (long long)w.sku[i].sold, (long long)w.sku[i].total);
		}
	}
	if (soak_check_segment(&w, h) != TOOL_OK)
		goto out;

	memset(&mo, 0, sizeof mo);
	mo.url = mysql_url;
	mo.log_level = PLOG_WARN;
	rc = mdb_open(&mo, &m);
	if (rc != FLASH_OK) {
		tool_failf("connect to the private MariaDB: %s", flash_strerror(rc));
		goto out;
	}
	if (soak_check_mysql(&w, m, wal_dir, inject) != TOOL_OK)
		goto out;
	soak_check_acked(&w, log, base_day);
	if (soak_check_reconcile(v, h, m, wal_dir) != TOOL_OK)
		goto out;
	ret = TOOL_OK;
out:
	mdb_close(m);
	soak_map_free(&w.acts);
	soak_map_free(&w.skus);
	soak_map_free(&w.limits);
	free(w.sku);
	free(w.ord);
	return ret;
}

/* ---- the outcome log ----------------------------------------------------- */

int soak_log_add(struct soak_log *l, const struct soak_out *o)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		struct soak_out *n = realloc(l->so, cap * sizeof *n);
		if (!n)
			return -1;
		l->so = n;
		l->cap = cap;
	}
	l->so[l->n++] = *o;
	return 0;
}

void soak_log_free(struct soak_log *l)
{
	free(l->so);
	memset(l, 0, sizeof *l);
}
