/*
 * reconcile_sql.c -- the reconciler's MySQL queries (contract in
 * reconcile_sql.h).
 *
 * Each function is one SELECT, so each answer is a consistent snapshot.
 * Errors are classified as everywhere (mysql_err.h): a lost connection, a
 * node that is not ready, a deadlock or a lock wait is FLASH_EMYSQL_RETRY
 * (the handle reconnects on its next use), anything else FLASH_EMYSQL.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "mysql_err.h"
#include "reconcile_sql.h"

static int sql_rc(MYSQL *c)
{
	return mdb_err_retryable(mysql_errno(c)) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL;
}

/* Run a query and store its result; NULL with *rc set on failure. */
static MYSQL_RES *query(mdb_t *m, const char *sql, int *rc)
{
	MYSQL *c = mdb_conn(m);
	if (!c) {
		*rc = FLASH_EMYSQL_RETRY;
		return NULL;
	}
	if (mysql_query(c, sql)) {
		*rc = sql_rc(c);
		if (*rc == FLASH_EMYSQL_RETRY)
			mdb_conn_lost(m);
		return NULL;
	}
	MYSQL_RES *r = mysql_store_result(c);
	if (!r)
		*rc = sql_rc(c);
	return r;
}

static uint64_t u64(const char *s) { return s ? strtoull(s, NULL, 10) : 0; }

/* An order's state from `status + 0`: the ENUM's values ACTIVE, CANCELLED,
 * RESERVED, EXPIRED are 1..4 in that order, as enum flash_order_state's. */
_Static_assert(FLASH_ORDER_ACTIVE == 1 && FLASH_ORDER_CANCELLED == 2 && FLASH_ORDER_RESERVED == 3 &&
               FLASH_ORDER_EXPIRED == 4, "orders.status ENUM order");

/* Per sku, every line counts: an order's line 0 is its orders row (a
 * plain order's only line), a cart's lines 1.. are order_lines rows with
 * line > 0 (mysql_apply.h), so the orders counted per sku are lines. */
static const char sku_sql[] =
	"SELECT activity_id, sku_id, MAX(has_row), SUM(total), SUM(available), SUM(sold),"
	" SUM(aq), SUM(ac), SUM(cc), SUM(reserved), SUM(rq) FROM ("
	"  SELECT activity_id, sku_id, 1 AS has_row, total, available, sold,"
	"         0 AS aq, 0 AS ac, 0 AS cc, reserved, 0 AS rq FROM item_stock %s"
	"  UNION ALL"
	"  SELECT activity_id, sku_id, 0, 0, 0, 0, SUM(IF(status = 'ACTIVE', qty, 0)),"
	"         SUM(status = 'ACTIVE'), SUM(status = 'CANCELLED'), 0,"
	"         SUM(IF(status = 'RESERVED', qty, 0))"
	"  FROM orders %s GROUP BY activity_id, sku_id"
	"  UNION ALL"
	"  SELECT activity_id, sku_id, 0, 0, 0, 0, SUM(IF(status = 'ACTIVE', qty, 0)),"
	"         SUM(status = 'ACTIVE'), SUM(status = 'CANCELLED'), 0,"
	"         SUM(IF(status = 'RESERVED', qty, 0))"
	"  FROM order_lines WHERE line > 0 %s GROUP BY activity_id, sku_id"
	") x GROUP BY activity_id, sku_id ORDER BY activity_id, sku_id";

static void sku_from_row(MYSQL_ROW row, struct rsql_sku *s)
{
	memset(s, 0, sizeof *s);
	s->activity_id = (uint32_t)u64(row[0]);
	s->sku_id = (uint32_t)u64(row[1]);
	s->has_stock_row = (uint32_t)u64(row[2]);
	s->total = u64(row[3]);
	s->available = u64(row[4]);
	s->sold = u64(row[5]);
	s->active_qty = u64(row[6]);
	s->active_orders = u64(row[7]);
	s->cancelled_orders = u64(row[8]);
	s->reserved = u64(row[9]);
	s->reserved_qty = u64(row[10]);
}

int rsql_skus(mdb_t *m, struct rsql_sku **out, size_t *n)
{
	if (!m || !out || !n)
		return FLASH_EINVAL;
	*out = NULL;
	*n = 0;
	char sql[1400];
	snprintf(sql, sizeof sql, sku_sql, "", "", "");
	int rc = FLASH_OK;
	MYSQL_RES *r = query(m, sql, &rc);
	if (!r)
		return rc;
	size_t rows = (size_t)mysql_num_rows(r);
	struct rsql_sku *v = rows ? calloc(rows, sizeof *v) : NULL;
	if (rows && !v) {
		mysql_free_result(r);
		return FLASH_ENOMEM;
	}
	MYSQL_ROW row;
	size_t i = 0;
	while ((row = mysql_fetch_row(r)) && i < rows)
		sku_from_row(row, &v[i++]);
	mysql_free_result(r);
	*out = v;
	*n = i;
	return FLASH_OK;
}

int rsql_sku_get(mdb_t *m, uint32_t activity_id, uint32_t sku_id,
                      struct rsql_sku *out)
{
	if (!m || !out)
		return FLASH_EINVAL;
	char where[96], and[96], sql[1700];
	snprintf(where, sizeof where, "WHERE activity_id = %u AND sku_id = %u", activity_id, sku_id);
	snprintf(and, sizeof and, "AND activity_id = %u AND sku_id = %u", activity_id, sku_id);
	snprintf(sql, sizeof sql, sku_sql, where, where, and);
	int rc = FLASH_OK;
	MYSQL_RES *r = query(m, sql, &rc);
	if (!r)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(r);
	if (row)
		sku_from_row(row, out);
	mysql_free_result(r);
	return row ? FLASH_OK : FLASH_ENOT_FOUND;
}

int rsql_users_over_limit(mdb_t *m, struct rsql_user_excess **out, size_t *n)
{
	if (!m || !out || !n)
		return FLASH_EINVAL;
	*out = NULL;
	*n = 0;
	static const char sql[] =
		"SELECT o.activity_id, o.scope_sku, o.user_id, o.scope_day, COUNT(*),"
		" MAX(o.limit_slot), COALESCE(MAX(a.limit_per_user), 0)"
		" FROM orders o LEFT JOIN activities a ON a.activity_id = o.activity_id"
		" WHERE o.active_key IS NOT NULL"
		" GROUP BY o.activity_id, o.user_id, o.scope_sku, o.scope_day"
		" HAVING COUNT(*) > COALESCE(MAX(a.limit_per_user), 0)"
		"     OR MAX(o.limit_slot) > COALESCE(MAX(a.limit_per_user), 0)"
		" ORDER BY o.activity_id, o.user_id, o.scope_sku, o.scope_day";
	int rc = FLASH_OK;
	MYSQL_RES *r = query(m, sql, &rc);
	if (!r)
		return rc;
	size_t rows = (size_t)mysql_num_rows(r);
	struct rsql_user_excess *v = rows ? calloc(rows, sizeof *v) : NULL;
	if (rows && !v) {
		mysql_free_result(r);
		return FLASH_ENOMEM;
	}
	MYSQL_ROW row;
	size_t i = 0;
	while ((row = mysql_fetch_row(r)) && i < rows) {
		struct rsql_user_excess *e = &v[i++];
		e->activity_id = (uint32_t)u64(row[0]);
		e->scope_sku = (uint32_t)u64(row[1]);
		e->user_id = u64(row[2]);
		e->scope_day = (uint32_t)u64(row[3]);
		e->holding = (uint32_t)u64(row[4]);
		e->max_slot = (uint32_t)u64(row[5]);
		e->limit = (uint32_t)u64(row[6]);
	}
	mysql_free_result(r);
	*out = v;
	*n = i;
	return FLASH_OK;
}

int rsql_totals_get(mdb_t *m, struct rsql_totals *out)
{
	if (!m || !out)
		return FLASH_EINVAL;
	char sql[1024];
	snprintf(sql, sizeof sql,
	         "SELECT (SELECT COUNT(*) FROM orders),"
	         " (SELECT COUNT(*) FROM orders WHERE status = 'ACTIVE'),"
	         " (SELECT COUNT(*) FROM orders WHERE status = 'CANCELLED'),"
	         " (SELECT COALESCE(SUM(qty), 0) FROM orders WHERE status = 'ACTIVE') +"
	         " (SELECT COALESCE(SUM(qty), 0) FROM order_lines WHERE line > 0 AND status = 'ACTIVE'),"
	         " (SELECT COUNT(*) FROM activities),"
	         " (SELECT COUNT(*) FROM item_stock),"
	         " (SELECT COUNT(*) FROM apply_conflicts),"
	         " (SELECT COALESCE(MAX(lsn), 0) FROM applied_lsn WHERE stream = '%s')",
	         mdb_stream(m));
	int rc = FLASH_OK;
	MYSQL_RES *r = query(m, sql, &rc);
	if (!r)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(r);
	if (!row) {
		mysql_free_result(r);
		return FLASH_EMYSQL;
	}
	out->orders = u64(row[0]);
	out->active_orders = u64(row[1]);
	out->cancelled_orders = u64(row[2]);
	out->active_qty = u64(row[3]);
	out->activities = u64(row[4]);
	out->skus = u64(row[5]);
	out->conflicts = u64(row[6]);
	out->applied_lsn = u64(row[7]);
	mysql_free_result(r);
	return FLASH_OK;
}

int rsql_orders_scan(mdb_t *m, uint64_t from, uint64_t to,
                          rsql_order_fn fn, void *arg)
{
	if (!m || !fn || from > to)
		return FLASH_EINVAL;
	MYSQL *c = mdb_conn(m);
	if (!c)
		return FLASH_EMYSQL_RETRY;
	char sql[320];
	snprintf(sql, sizeof sql,
	         "SELECT order_no, user_id, activity_id, sku_id, qty, status + 0, limit_slot,"
	         " biz_day, n_lines FROM orders WHERE order_no BETWEEN %llu AND %llu ORDER BY order_no",
	         (unsigned long long)from, (unsigned long long)to);
	if (mysql_query(c, sql)) {
		int rc = sql_rc(c);
		if (rc == FLASH_EMYSQL_RETRY)
			mdb_conn_lost(m);
		return rc;
	}
	/* Streamed: rows arrive as they are read; every row is fetched even
	 * after fn says stop, which keeps the connection usable. */
	MYSQL_RES *r = mysql_use_result(c);
	if (!r)
		return sql_rc(c);
	MYSQL_ROW row;
	int stop = 0;
	while ((row = mysql_fetch_row(r))) {
		if (stop)
			continue;
		struct rsql_order o;
		o.order_no = u64(row[0]);
		o.user_id = u64(row[1]);
		o.activity_id = (uint32_t)u64(row[2]);
		o.sku_id = (uint32_t)u64(row[3]);
		o.qty = (uint32_t)u64(row[4]);
		o.state = (uint32_t)u64(row[5]);
		o.limit_slot = (uint32_t)u64(row[6]);
		o.biz_day = (uint32_t)u64(row[7]);
		o.lines = (uint32_t)u64(row[8]);
		stop = fn(arg, &o);
	}
	int rc = mysql_errno(c) ? sql_rc(c) : FLASH_OK;
	mysql_free_result(r);
	if (rc == FLASH_EMYSQL_RETRY)
		mdb_conn_lost(m);
	return rc;
}

int rsql_archived(mdb_t *m, uint32_t **out, size_t *n)
{
	if (!m || !out || !n)
		return FLASH_EINVAL;
	*out = NULL;
	*n = 0;
	int rc = FLASH_OK;
	MYSQL_RES *r = query(m, "SELECT activity_id FROM activities WHERE archived_lsn IS NOT NULL"
	                        " ORDER BY activity_id", &rc);
	if (!r)
		return rc;
	size_t rows = (size_t)mysql_num_rows(r);
	uint32_t *v = rows ? calloc(rows, sizeof *v) : NULL;
	if (rows && !v) {
		mysql_free_result(r);
		return FLASH_ENOMEM;
	}
	MYSQL_ROW row;
	size_t i = 0;
	while ((row = mysql_fetch_row(r)) && i < rows)
		v[i++] = (uint32_t)u64(row[0]);
	mysql_free_result(r);
	*out = v;
	*n = i;
	return FLASH_OK;
}

#define ORDER_ROW_SQL \
	"SELECT o.order_no, o.user_id, o.activity_id, o.sku_id, o.qty, o.status," \
	" o.limit_slot, o.biz_day, o.request_id, o.created_ns, o.lsn, COALESCE(o.cancel_lsn, 0)," \
	" o.quota_returned, a.archived_lsn IS NOT NULL, COALESCE(a.archived_lsn, 0)," \
	" COALESCE(a.archived_ns, 0), COALESCE(o.pay_by_ns, 0), COALESCE(o.confirm_lsn, 0)" \
	" FROM orders o LEFT JOIN activities a ON a.activity_id = o.activity_id WHERE "

/* orders.status as enum flash_order_state.  The applier may write a status
 * this build does not know (a newer one's): it reads RSQL_STATE_UNKNOWN,
 * never as a state it is not, and the raw text stays in the row. */
static uint32_t order_status_state(const char *s)
{
	static const struct { const char *status; uint32_t state; } map[] = {
		{ "ACTIVE", FLASH_ORDER_ACTIVE },     { "CANCELLED", FLASH_ORDER_CANCELLED },
		{ "RESERVED", FLASH_ORDER_RESERVED }, { "EXPIRED", FLASH_ORDER_EXPIRED },
	};
	for (size_t i = 0; s && i < sizeof map / sizeof map[0]; i++)
		if (strcmp(s, map[i].status) == 0)
			return map[i].state;
	return RSQL_STATE_UNKNOWN;
}

static int order_row_query(mdb_t *m, const char *sql, struct rsql_order_row *out)
{
	int rc = FLASH_OK;
	MYSQL_RES *r = query(m, sql, &rc);
	if (!r)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(r);
	if (!row) {
		mysql_free_result(r);
		return FLASH_ENOT_FOUND;
	}
	memset(out, 0, sizeof *out);
	out->o.order_no = u64(row[0]);
	out->o.user_id = u64(row[1]);
	out->o.activity_id = (uint32_t)u64(row[2]);
	out->o.sku_id = (uint32_t)u64(row[3]);
	out->o.qty = (uint32_t)u64(row[4]);
	out->o.state = order_status_state(row[5]);
	snprintf(out->status, sizeof out->status, "%s", row[5] ? row[5] : "NULL");
	out->o.limit_slot = (uint32_t)u64(row[6]);
	out->o.biz_day = (uint32_t)u64(row[7]);
	out->request_id = u64(row[8]);
	out->created_ns = row[9] ? strtoll(row[9], NULL, 10) : 0;
	out->lsn = u64(row[10]);
	out->cancel_lsn = u64(row[11]);
	out->quota_returned = (uint32_t)u64(row[12]);
	out->archived = (uint32_t)u64(row[13]);
	out->archived_lsn = u64(row[14]);
	out->archived_ns = row[15] ? strtoll(row[15], NULL, 10) : 0;
	out->pay_by_ns = row[16] ? strtoll(row[16], NULL, 10) : 0;
	out->confirm_lsn = u64(row[17]);
	mysql_free_result(r);
	return FLASH_OK;
}

int rsql_order_get(mdb_t *m, uint64_t order_no, struct rsql_order_row *out)
{
	if (!m || !out || !order_no)
		return FLASH_EINVAL;
	char sql[768];
	snprintf(sql, sizeof sql, ORDER_ROW_SQL "o.order_no = %llu", (unsigned long long)order_no);
	return order_row_query(m, sql, out);
}

/* A query of order_lines: its result, or NULL with *rc FLASH_OK when the
 * database has no such table (made before carts: no order has lines). */
static MYSQL_RES *lines_query(mdb_t *m, const char *sql, int *rc)
{
	MYSQL_RES *r = query(m, sql, rc);
	MYSQL *c;

	if (!r && *rc == FLASH_EMYSQL && (c = mdb_conn(m)) && mysql_errno(c) == ER_NO_SUCH_TABLE)
		*rc = FLASH_OK;
	return r;
}

int rsql_order_lines(mdb_t *m, uint64_t order_no, struct rsql_order_line *out, uint32_t cap,
                     uint32_t *n)
{
	char sql[160];
	MYSQL_ROW row;
	int rc = FLASH_OK;

	if (!m || !n || !order_no || (cap && !out))
		return FLASH_EINVAL;
	*n = 0;
	snprintf(sql, sizeof sql, "SELECT line, sku_id, qty FROM order_lines WHERE order_no = %llu"
	         " ORDER BY line", (unsigned long long)order_no);
	MYSQL_RES *r = lines_query(m, sql, &rc);
	if (!r)
		return rc;
	while ((row = mysql_fetch_row(r))) {
		if (*n < cap) {
			out[*n].line = (uint32_t)u64(row[0]);
			out[*n].sku_id = (uint32_t)u64(row[1]);
			out[*n].qty = (uint32_t)u64(row[2]);
		}
		(*n)++;
	}
	mysql_free_result(r);
	return FLASH_OK;
}

int rsql_order_line_of(mdb_t *m, uint64_t order_no, uint64_t *cart_no, uint32_t *line)
{
	char sql[224];
	MYSQL_ROW row;
	int rc = FLASH_OK;

	if (!m || !cart_no || !line || order_no < 2)
		return FLASH_EINVAL;
	/* the cart is at most FLASH_CART_LINES_MAX - 1 numbers before: the
	 * primary key's range, then the line that lands on order_no */
	snprintf(sql, sizeof sql, "SELECT order_no, line FROM order_lines WHERE order_no BETWEEN %llu AND %llu"
	         " AND line > 0 AND order_no + line = %llu LIMIT 1",
	         (unsigned long long)(order_no > FLASH_CART_LINES_MAX ? order_no - (FLASH_CART_LINES_MAX - 1) : 1),
	         (unsigned long long)(order_no - 1), (unsigned long long)order_no);
	MYSQL_RES *r = lines_query(m, sql, &rc);
	if (!r)
		return rc == FLASH_OK ? FLASH_ENOT_FOUND : rc;
	rc = FLASH_ENOT_FOUND;
	if ((row = mysql_fetch_row(r))) {
		*cart_no = u64(row[0]);
		*line = (uint32_t)u64(row[1]);
		rc = FLASH_OK;
	}
	mysql_free_result(r);
	return rc;
}

int rsql_order_by_request(mdb_t *m, uint64_t request_id, uint32_t activity_id,
                               uint64_t user_id, uint32_t sku_id, struct rsql_order_row *out)
{
	if (!m || !out || !request_id || !activity_id || !user_id)
		return FLASH_EINVAL;
	char sql[896], sku[48] = "";
	if (sku_id)
		snprintf(sku, sizeof sku, " AND o.sku_id = %u", sku_id);
	snprintf(sql, sizeof sql, ORDER_ROW_SQL "o.activity_id = %u AND o.user_id = %llu%s"
	         " AND o.request_id = %llu ORDER BY o.order_no LIMIT 1", activity_id,
	         (unsigned long long)user_id, sku, (unsigned long long)request_id);
	return order_row_query(m, sql, out);
}
