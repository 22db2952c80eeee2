/*
 * feed_refill_mysql.c -- the order feed's refill source: the records of a lost
 * LSN range, read back from the rows the MySQL applier (mysql_apply.c)
 * wrote.  Part of libflashstock.
 *
 * What MariaDB keeps per LSN, and so what a refill gives back:
 *   ORDER     orders.lsn: every field but rec.slot and the ring seq
 *             (FLASH_FEED_MISS_SLOT); status changes since do not matter;
 *             a reservation's value is its pay-by time (orders.pay_by_ns)
 *   CANCEL    orders.cancel_lsn of a CANCELLED row: every field but slot,
 *             seq and ts_ns (the cancel's time is not kept:
 *             FLASH_FEED_MISS_TS); flags = 1 if the quota was returned
 *             (orders.quota_returned), | 2 if it was a reservation never
 *             confirmed (pay_by_ns set, confirm_lsn not)
 *   EXPIRE    orders.cancel_lsn of an EXPIRED row: as a CANCEL, value the
 *             pay-by time
 *   CONFIRM   orders.confirm_lsn: the order's fields, value the pay-by
 *             time; not the confirm's time (FLASH_FEED_MISS_TS)
 *   ACTIVITY  activities.lsn: every field but slot and seq (order_no its
 *             version) -- while no later record changed its terms
 *             (terms_lsn NULL); then activities.terms_lsn: the ACTIVITY
 *             record (flags 1) that set today's terms, every field but slot
 *             and seq.  The add and the earlier changes of such an activity
 *             are gaps: the row keeps only today's terms, and giving them
 *             at an older LSN would invent them
 *   SKU       item_stock.created_lsn: activity, sku, shards, and its version
 *             while no PRICE changed it (price_lsn NULL; else order_no 0);
 *             not the initial units (item_stock.total includes later
 *             restocks: FLASH_FEED_MISS_VALUE) nor the time
 *             (FLASH_FEED_MISS_TS)
 *   PRICE     item_stock.price_lsn: the last PRICE of the sku, every field
 *             but slot and seq; earlier ones are gaps, as for ACTIVITY
 *   ARCHIVE   activities.archived_lsn: activity and time; not the counts of
 *             what the segment reclaimed (FLASH_FEED_MISS_VALUE)
 *   carts     a cart (flash_cart_order: its rows in order_lines) gives back
 *             one record per line, each at the line's own LSN (order_lines
 *             lsn, cancel_lsn, confirm_lsn) with the line's sku and qty,
 *             the cart's other fields from its orders row as above
 *             (request_id on line 0 only), and flags FLASH_REC_F_CART |
 *             FLASH_REC_F_LINE(line), FLASH_REC_F_LAST on line n_lines - 1
 *             (besides a cancel's 1 and 2); its orders row gives nothing
 *             more.  A cart MariaDB holds in cart_pending only (its last
 *             line not applied) gives nothing: it is applied as a whole
 *   RESTOCK   nothing (item_stock.last_lsn is only the last change of any
 *             kind): these LSNs are reported as gaps (fr_gap), never invented
 *   GEN       nothing (the applier has nothing to apply for it): gaps too
 *   refused   records the applier refused (apply_conflicts) are not in the
 *             tables either: gaps too
 * The applied LSN (applied_lsn.lsn of the stream) must cover the range,
 * else FLASH_EREFILL: MariaDB cannot know what it has not applied.
 */
#include "feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "mysql_apply.h"
#include "mysql_err.h"

struct feed_refill {
	char           *fr_url;
	char           *fr_stream;
	mdb_t  *fr_m;
};

static void feed_refill_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= PLOG_WARN)
		fprintf(stderr, "flashstock feed: mysql: %s\n", msg);
}

int feed_refill_check(const char *url)
{
	return mdb_url_check(url, NULL, 0) == FLASH_OK ? FLASH_OK : FLASH_EMYSQL_CONFIG;
}

int feed_refill_open(const char *url, const char *stream, feed_refill_t **out)
{
	feed_refill_t *r = calloc(1, sizeof *r);
	if (r == NULL || (r->fr_url = strdup(url)) == NULL ||
	    (r->fr_stream = strdup(stream ? stream : "wal")) == NULL) {
		feed_refill_close(r);
		return FLASH_ENOMEM;
	}
	*out = r;
	return FLASH_OK;
}

void feed_refill_close(feed_refill_t *r)
{
	if (r == NULL)
		return;
	mdb_close(r->fr_m);
	free(r->fr_url);
	free(r->fr_stream);
	free(r);
}

/* A cart's records come from its lines (order_lines), not its orders row. */
#define NOT_A_CART " AND NOT EXISTS (SELECT 1 FROM order_lines c WHERE c.order_no = orders.order_no)"
#define CART_JOIN "order_lines l JOIN orders o ON o.order_no = l.order_no"
/* FLASH_REC_F_CART | FLASH_REC_F_LINE(line), FLASH_REC_F_LAST on the last */
#define CART_FLAGS "(256 | (l.line << 10) | IF(l.line + 1 = o.n_lines, 512, 0))"
_Static_assert(FLASH_REC_F_CART == 256 && FLASH_REC_F_LAST == 512 && FLASH_REC_F_LINE(1) == 1024,
               "CART_FLAGS spells the record's cart bits");

static uint64_t col_u64(const char *s)
{
	return s ? strtoull(s, NULL, 10) : 0;
}

static int64_t col_i64(const char *s)
{
	return s ? strtoll(s, NULL, 10) : 0;
}

int feed_refill_fetch(feed_refill_t *r, uint64_t from, uint64_t to, struct flash_feed_rec **recs,
                      size_t *n, uint64_t *applied)
{
	*recs = NULL;
	*n = 0;
	if (r->fr_m == NULL) {
		struct mdb_opts o;
		memset(&o, 0, sizeof o);
		o.url = r->fr_url;
		o.stream = r->fr_stream;
		o.require_db = 1;
		o.log = feed_refill_log;
		int rc = mdb_open(&o, &r->fr_m);
		if (rc != FLASH_OK && rc != FLASH_EMYSQL_RETRY) {
			r->fr_m = NULL;
			return rc;
		}
	}
	int rc = mdb_applied_lsn(r->fr_m, applied);
	if (rc != FLASH_OK)
		return rc;
	if (*applied < to)
		return FLASH_EREFILL;
	MYSQL *c = mdb_conn(r->fr_m);
	if (c == NULL)
		return FLASH_EMYSQL_RETRY;
	char sql[6144];
	unsigned long long a = from, b = to;
	snprintf(sql, sizeof sql,
	         "SELECT 1, lsn, order_no, activity_id, sku_id, user_id, qty, limit_slot, biz_day,"
	         " request_id, created_ns, 0, COALESCE(pay_by_ns, 0) FROM orders WHERE lsn BETWEEN %llu AND %llu"
	         NOT_A_CART
	         " UNION ALL SELECT IF(status = 'EXPIRED', 9, 2), cancel_lsn, order_no, activity_id, sku_id,"
	         " user_id, qty, limit_slot, biz_day, 0, 0,"
	         " quota_returned | IF(status = 'CANCELLED' AND pay_by_ns IS NOT NULL AND confirm_lsn IS NULL, 2, 0),"
	         " IF(status = 'EXPIRED', pay_by_ns, 0) FROM orders WHERE cancel_lsn BETWEEN %llu AND %llu"
	         NOT_A_CART
	         " UNION ALL SELECT 8, confirm_lsn, order_no, activity_id, sku_id, user_id, qty, limit_slot,"
	         " biz_day, 0, 0, 0, pay_by_ns FROM orders WHERE confirm_lsn BETWEEN %llu AND %llu"
	         NOT_A_CART
	         " UNION ALL SELECT 1, l.lsn, o.order_no, l.activity_id, l.sku_id, o.user_id, l.qty,"
	         " o.limit_slot, o.biz_day, IF(l.line = 0, o.request_id, 0), o.created_ns, " CART_FLAGS ","
	         " COALESCE(o.pay_by_ns, 0) FROM " CART_JOIN " WHERE l.lsn BETWEEN %llu AND %llu"
	         " UNION ALL SELECT IF(l.status = 'EXPIRED', 9, 2), l.cancel_lsn, o.order_no, l.activity_id,"
	         " l.sku_id, o.user_id, l.qty, o.limit_slot, o.biz_day, 0, 0, " CART_FLAGS " | o.quota_returned"
	         " | IF(o.status = 'CANCELLED' AND o.pay_by_ns IS NOT NULL AND o.confirm_lsn IS NULL, 2, 0),"
	         " IF(l.status = 'EXPIRED', o.pay_by_ns, 0) FROM " CART_JOIN
	         " WHERE l.cancel_lsn BETWEEN %llu AND %llu"
	         " UNION ALL SELECT 8, l.confirm_lsn, o.order_no, l.activity_id, l.sku_id, o.user_id, l.qty,"
	         " o.limit_slot, o.biz_day, 0, 0, " CART_FLAGS ", o.pay_by_ns FROM " CART_JOIN
	         " WHERE l.confirm_lsn BETWEEN %llu AND %llu"
	         " UNION ALL SELECT 4, lsn, version, activity_id, 0, 0, 0, max_qty,"
	         " limit_per_user | (scope << 8) | (flags << 16), day_offset_s, end_ns, 0, start_ns"
	         " FROM activities WHERE lsn BETWEEN %llu AND %llu AND terms_lsn IS NULL"
	         " UNION ALL SELECT 4, terms_lsn, version, activity_id, 0, 0, 0, max_qty,"
	         " limit_per_user | (scope << 8) | (flags << 16), day_offset_s, end_ns, 1, start_ns"
	         " FROM activities WHERE terms_lsn BETWEEN %llu AND %llu"
	         " UNION ALL SELECT 5, created_lsn, IF(price_lsn IS NULL, version, 0), activity_id, sku_id,"
	         " 0, shards, 0, 0, 0, 0, 0, 0 FROM item_stock WHERE created_lsn BETWEEN %llu AND %llu"
	         " UNION ALL SELECT 10, price_lsn, version, activity_id, sku_id, 0, 0, 0, 0, 0, price_ns, 0,"
	         " price FROM item_stock WHERE price_lsn BETWEEN %llu AND %llu"
	         " UNION ALL SELECT 7, archived_lsn, 0, activity_id, 0, 0, 0, 0, 0, 0, archived_ns, 0, 0"
	         " FROM activities WHERE archived_lsn BETWEEN %llu AND %llu ORDER BY 2",
	         a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b);
	if (mysql_query(c, sql) != 0) {
		unsigned e = mysql_errno(c);
		mdb_conn_lost(r->fr_m);
		return mdb_err_retryable(e) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL;
	}
	MYSQL_RES *res = mysql_store_result(c);
	if (res == NULL) {
		mdb_conn_lost(r->fr_m);
		return FLASH_EMYSQL_RETRY;
	}
	size_t rows = (size_t)mysql_num_rows(res);
	struct flash_feed_rec *v = calloc(rows ? rows : 1, sizeof *v);
	if (v == NULL) {
		mysql_free_result(res);
		return FLASH_ENOMEM;
	}
	MYSQL_ROW row;
	size_t k = 0;
	while ((row = mysql_fetch_row(res)) != NULL && k < rows) {
		struct flash_feed_rec *x = &v[k++];
		struct flash_record *rec = &x->fr_rec;
		unsigned type = (unsigned)col_u64(row[0]);
		x->fr_lsn = col_u64(row[1]);
		x->fr_source = FLASH_FEED_MYSQL;
		x->fr_missing = FLASH_FEED_MISS_SLOT;
		rec->type = (uint16_t)type;
		rec->order_no = col_u64(row[2]);
		rec->activity_id = (uint32_t)col_u64(row[3]);
		rec->sku_id = (uint32_t)col_u64(row[4]);
		rec->user_id = col_u64(row[5]);
		rec->qty = (uint32_t)col_u64(row[6]);
		rec->limit_slot = (uint16_t)col_u64(row[7]);
		rec->biz_day = (uint32_t)col_u64(row[8]);
		rec->request_id = (uint64_t)col_i64(row[9]);
		rec->ts_ns = col_i64(row[10]);
		rec->flags = (uint16_t)col_u64(row[11]);
		rec->value = col_i64(row[12]);
		if (type == FLASH_REC_CANCEL || type == FLASH_REC_EXPIRE || type == FLASH_REC_CONFIRM)
			x->fr_missing |= FLASH_FEED_MISS_TS;
		if (type == FLASH_REC_SKU)
			x->fr_missing |= FLASH_FEED_MISS_VALUE | FLASH_FEED_MISS_TS;
		if (type == FLASH_REC_ARCHIVE)
			x->fr_missing |= FLASH_FEED_MISS_VALUE;
	}
	mysql_free_result(res);
	*recs = v;
	*n = k;
	return FLASH_OK;
}
