/*
 * reconcile_repair.c -- `flashstock reconcile --repair`: bring MySQL back to
 * what the WAL says (contract in reconcile.h, reconcile_repair()).
 *
 * Divisions:
 *   1. SQL helpers        one statement, a savepoint around each change
 *   2. Stock rows         item_stock set (or inserted) from the WAL fold
 *   3. Orders             orders inserted or set from the WAL fold
 *   4. Classification     which difference is repaired, and why not
 *   5. The run            lock, fold to the applied LSN, compare, repair,
 *                         commit, check again
 *
 * The WAL is the authority because MySQL is fed from it: a MySQL row that
 * differs from the WAL folded up to MySQL's own applied LSN was changed
 * behind the applier's back (or the applier refused a record).  The applied
 * LSN row is locked for the whole transaction (SELECT ... FOR UPDATE: the
 * applier takes the same lock before each batch, so it waits) and never
 * written: the repair does not move it, backwards or forwards.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "reconcile.h"
#include "wal.h"

/* ------------------------------------------------------------------------
 * 1. SQL helpers
 * ------------------------------------------------------------------------ */

struct repair {
	mdb_t *rp_m;
	MYSQL         *rp_c;
	fold_t  *rp_f;          /* the WAL folded to MySQL's applied LSN */
	FILE          *rp_out;
	FILE          *rp_err;
	struct keyset {
		uint64_t *v;
		size_t    n, cap;
	}              rp_touched,    /* skus a repair changed (stock or orders) */
	               rp_stock;      /* skus whose item_stock row was set */
	uint64_t       rp_repaired;   /* REPAIR lines */
	uint64_t       rp_refused;    /* NOT REPAIRED lines */
	int            rp_fatal;      /* a statement failed outside a savepoint */
	unsigned long  rp_tid;        /* connection id of the open transaction (0: none) */
};

static uint64_t rkey(uint32_t a, uint32_t s) { return (uint64_t)a << 32 | s; }

/* One statement; 0, or -1 with MySQL's message in @p msg. */
static int rexec(struct repair *r, const char *sql, char *msg, size_t len)
{
	/* the handle's connection, fetched each time: a query of
	 * reconcile_sql.c that lost it has closed it (and a reconnect has no
	 * transaction: the caller notices through rp_fatal) */
	r->rp_c = mdb_conn(r->rp_m);
	if (!r->rp_c) {
		if (msg)
			snprintf(msg, len, "MySQL unreachable");
		return -1;
	}
	if (r->rp_tid && mysql_thread_id(r->rp_c) != r->rp_tid) {
		/* reconnected: the transaction and its lock are gone */
		r->rp_fatal = 1;
		if (msg)
			snprintf(msg, len, "connection to MySQL lost inside the transaction");
		return -1;
	}
	if (mysql_query(r->rp_c, sql) == 0) {
		MYSQL_RES *res = mysql_store_result(r->rp_c);
		if (res)
			mysql_free_result(res);
		return 0;
	}
	if (msg)
		snprintf(msg, len, "%s (%u)", mysql_error(r->rp_c), mysql_errno(r->rp_c));
	return -1;
}

static void key_add(struct keyset *ks, uint32_t a, uint32_t s)
{
	uint64_t k = rkey(a, s);
	for (size_t i = 0; i < ks->n; i++)
		if (ks->v[i] == k)
			return;
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 64;
		uint64_t *v = realloc(ks->v, cap * sizeof *v);
		if (!v)
			return;            /* worst case: a second UPDATE, a longer report */
		ks->v = v;
		ks->cap = cap;
	}
	ks->v[ks->n++] = k;
}

static int key_has(const struct keyset *ks, uint32_t a, uint32_t s)
{
	uint64_t k = rkey(a, s);
	for (size_t i = 0; i < ks->n; i++)
		if (ks->v[i] == k)
			return 1;
	return 0;
}

static void touch(struct repair *r, uint32_t a, uint32_t s) { key_add(&r->rp_touched, a, s); }

static int touched(const struct repair *r, uint32_t a, uint32_t s) { return key_has(&r->rp_touched, a, s); }

static void not_repaired(struct repair *r, const struct diff *d, const char *reason)
{
	char line[384];
	diff_format(d, line, sizeof line);
	fprintf(r->rp_out, "NOT REPAIRED %s (%s)\n", line + 5 /* past "DIFF " */, reason);
	r->rp_refused++;
}

/*
 * Run @p sql under a savepoint.  Returns 1 when it changed exactly
 * @p want_rows rows (kept), 0 when MySQL refused it or it matched another
 * number of rows (rolled back to the savepoint; the reason in @p why).
 */
static int change(struct repair *r, const char *sql, my_ulonglong want_rows, char *why, size_t len)
{
	if (rexec(r, "SAVEPOINT flash_repair", why, len)) {
		r->rp_fatal = 1;
		return 0;
	}
	if (rexec(r, sql, why, len) == 0) {
		my_ulonglong rows = mysql_affected_rows(r->rp_c);
		if (rows == want_rows)
			return 1;
		snprintf(why, len, "MySQL changed %llu row(s), expected %llu", (unsigned long long)rows,
		         (unsigned long long)want_rows);
	}
	char ignore[256];
	if (rexec(r, "ROLLBACK TO SAVEPOINT flash_repair", ignore, sizeof ignore))
		r->rp_fatal = 1;
	return 0;
}

/* ------------------------------------------------------------------------
 * 2. Stock rows
 * ------------------------------------------------------------------------ */

static int fold_sku_sane(const struct fold_sku *w)
{
	return w->total >= 0 && w->available >= 0 && w->sold >= 0 && w->reserved >= 0 &&
	       w->available + w->reserved + w->sold == w->total;
}

/* item_stock of (a, s) set to the WAL's total, available, reserved and sold. */
static void repair_stock(struct repair *r, const struct diff *d)
{
	uint32_t a = d->activity_id, s = d->sku_id;
	if (key_has(&r->rp_stock, a, s))
		return;                          /* one UPDATE per sku did every field */
	key_add(&r->rp_stock, a, s);
	const struct fold_sku *w = fold_sku_find(r->rp_f, a, s);
	if (!w || !fold_sku_sane(w)) {
		not_repaired(r, d, "the WAL's own figures for this sku do not balance");
		return;
	}
	struct rsql_sku q;
	int rc = rsql_sku_get(r->rp_m, a, s, &q);
	if (rc == FLASH_EMYSQL_RETRY)
		r->rp_fatal = 1;
	if (rc || !q.has_stock_row) {
		not_repaired(r, d, rc ? flash_strerror(rc) : "no item_stock row");
		return;
	}
	char sql[360], why[300];
	snprintf(sql, sizeof sql, "UPDATE item_stock SET total = %" PRId64 ", available = %" PRId64
	         ", reserved = %" PRId64 ", sold = %" PRId64 " WHERE activity_id = %u AND sku_id = %u",
	         w->total, w->available, w->reserved, w->sold, a, s);
	if (!change(r, sql, 1, why, sizeof why)) {
		not_repaired(r, d, why);
		return;
	}
	const struct { const char *name; uint64_t from; int64_t to; } f[] = {
		{ "total", q.total, w->total }, { "available", q.available, w->available },
		{ "reserved", q.reserved, w->reserved }, { "sold", q.sold, w->sold },
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		if ((int64_t)f[i].from == f[i].to)
			continue;
		fprintf(r->rp_out, "REPAIR item_stock %u/%u %s %" PRIu64 " -> %" PRId64 "\n", a, s, f[i].name,
		        f[i].from, f[i].to);
		r->rp_repaired++;
	}
	touch(r, a, s);
}

/* An item_stock row MySQL lacks, from the WAL. */
static void insert_stock(struct repair *r, const struct diff *d)
{
	uint32_t a = d->activity_id, s = d->sku_id;
	const struct fold_sku *w = fold_sku_find(r->rp_f, a, s);
	if (!w || !fold_sku_sane(w)) {
		not_repaired(r, d, "the WAL's own figures for this sku do not balance");
		return;
	}
	char sql[440], why[300];
	snprintf(sql, sizeof sql, "INSERT INTO item_stock (activity_id, sku_id, total, available, reserved,"
	         " sold, created_lsn, last_lsn) VALUES (%u, %u, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	         ", %" PRIu64 ", %" PRIu64 ")", a, s, w->total, w->available, w->reserved, w->sold,
	         w->last_lsn, w->last_lsn);
	if (!change(r, sql, 1, why, sizeof why)) {
		not_repaired(r, d, why);
		return;
	}
	/* reserved units only when there are some: the line of before otherwise */
	fprintf(r->rp_out, "REPAIR item_stock insert %u/%u total %" PRId64 " available %" PRId64
	        " sold %" PRId64, a, s, w->total, w->available, w->sold);
	if (w->reserved)
		fprintf(r->rp_out, " reserved %" PRId64, w->reserved);
	fputc('\n', r->rp_out);
	r->rp_repaired++;
	touch(r, a, s);
}

/* ------------------------------------------------------------------------
 * 3. Orders
 * ------------------------------------------------------------------------ */

static const char *state_name(unsigned st)
{
	switch (st) {
	case FLASH_ORDER_ACTIVE:    return "ACTIVE";
	case FLASH_ORDER_CANCELLED: return "CANCELLED";
	case FLASH_ORDER_RESERVED:  return "RESERVED";
	case FLASH_ORDER_EXPIRED:   return "EXPIRED";
	default:                    return "NONE";
	}
}

/* The SQL values of an order's LSN-or-NULL columns, as the applier writes
 * them: cancel_lsn, pay_by_ns, confirm_lsn ("NULL" for none). */
struct order_sql {
	char cancel[24], pay_by[24], confirm[24];
};

/* The WAL's account of the order @p d names, with its nullable columns as
 * SQL values in @p v.  0 (reported NOT REPAIRED) when the WAL has none. */
static int wal_order(struct repair *r, const struct diff *d, struct fold_order *o,
                     struct order_sql *v)
{
	if (fold_order_get(r->rp_f, d->order_no, o) != FLASH_OK) {
		not_repaired(r, d, "the WAL has no ORDER record for it");
		return 0;
	}
	if (o->lines > 1) {
		/* the fold keeps a cart's line 0 only: its order_lines rows and
		 * their units cannot be written from it */
		char why[160];
		snprintf(why, sizeof why, "a cart of %u lines: apply its records again from the WAL"
		         " (its orders row and order_lines rows together)", o->lines);
		not_repaired(r, d, why);
		return 0;
	}
	snprintf(v->cancel, sizeof v->cancel, o->cancel_lsn ? "%" PRIu64 : "NULL", o->cancel_lsn);
	snprintf(v->pay_by, sizeof v->pay_by, o->pay_by_ns ? "%" PRId64 : "NULL", o->pay_by_ns);
	snprintf(v->confirm, sizeof v->confirm, o->confirm_lsn ? "%" PRIu64 : "NULL", o->confirm_lsn);
	return 1;
}

/* An order of the WAL that MySQL lacks. */
static void insert_order(struct repair *r, const struct diff *d)
{
	struct fold_order o;
	struct order_sql v;
	char sql[1000], why[300];
	if (!wal_order(r, d, &o, &v))
		return;
	/* scope_sku and scope_day follow the activity's scope, as the applier
	 * writes them; no activity row, no insert (0 rows). */
	snprintf(sql, sizeof sql,
	         "INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot, biz_day,"
	         " scope_sku, scope_day, status, quota_returned, request_id, created_ns, lsn, cancel_lsn,"
	         " pay_by_ns, confirm_lsn)"
	         " SELECT %" PRIu64 ", %u, %u, %" PRIu64 ", %u, %u, %u, IF(scope = 1, %u, 0),"
	         " IF(scope = 2, %u, 0), '%s', %u, %" PRIu64 ", %" PRId64 ", %" PRIu64 ", %s, %s, %s"
	         " FROM activities WHERE activity_id = %u",
	         d->order_no, o.activity_id, o.sku_id, o.user_id, o.qty, o.limit_slot, o.biz_day,
	         o.sku_id, o.biz_day, state_name(o.state), o.quota_returned, o.request_id, o.created_ns,
	         o.lsn, v.cancel, v.pay_by, v.confirm, o.activity_id);
	if (!change(r, sql, 1, why, sizeof why)) {
		if (strncmp(why, "MySQL changed 0", 15) == 0)
			snprintf(why, sizeof why, "activity %u is not in MySQL", o.activity_id);
		not_repaired(r, d, why);
		return;
	}
	fprintf(r->rp_out, "REPAIR orders insert %" PRIu64 " activity %u sku %u user %" PRIu64
	        " qty %u slot %u %s\n", d->order_no, o.activity_id, o.sku_id, o.user_id, o.qty,
	        o.limit_slot, state_name(o.state));
	r->rp_repaired++;
	touch(r, o.activity_id, o.sku_id);
}

static int one_row(void *arg, const struct rsql_order *o)
{
	*(struct rsql_order *)arg = *o;
	return 1;
}

/* An order whose MySQL row differs from the WAL: every column set from the WAL. */
static void update_order(struct repair *r, const struct diff *d)
{
	struct fold_order o;
	struct rsql_order q;
	struct order_sql v;
	char sql[1000], why[300];
	memset(&q, 0, sizeof q);
	if (!wal_order(r, d, &o, &v))
		return;
	int rc = rsql_orders_scan(r->rp_m, d->order_no, d->order_no, one_row, &q);
	if (rc == FLASH_EMYSQL_RETRY)
		r->rp_fatal = 1;
	if (rc || q.order_no != d->order_no) {
		not_repaired(r, d, rc ? flash_strerror(rc) : "the row is gone");
		return;
	}
	snprintf(sql, sizeof sql,
	         "UPDATE orders o JOIN activities a ON a.activity_id = %u SET o.activity_id = %u,"
	         " o.sku_id = %u, o.user_id = %" PRIu64 ", o.qty = %u, o.limit_slot = %u, o.biz_day = %u,"
	         " o.scope_sku = IF(a.scope = 1, %u, 0), o.scope_day = IF(a.scope = 2, %u, 0),"
	         " o.status = '%s', o.quota_returned = %u, o.cancel_lsn = %s, o.pay_by_ns = %s,"
	         " o.confirm_lsn = %s WHERE o.order_no = %" PRIu64,
	         o.activity_id, o.activity_id, o.sku_id, o.user_id, o.qty, o.limit_slot, o.biz_day,
	         o.sku_id, o.biz_day, state_name(o.state), o.quota_returned, v.cancel, v.pay_by, v.confirm,
	         d->order_no);
	if (!change(r, sql, 1, why, sizeof why)) {
		if (strncmp(why, "MySQL changed 0", 15) == 0)
			snprintf(why, sizeof why, "activity %u is not in MySQL", o.activity_id);
		not_repaired(r, d, why);
		return;
	}
	const struct { const char *name; uint64_t from, to; } f[] = {
		{ "activity_id", q.activity_id, o.activity_id }, { "sku_id", q.sku_id, o.sku_id },
		{ "user_id", q.user_id, o.user_id },             { "qty", q.qty, o.qty },
		{ "limit_slot", q.limit_slot, o.limit_slot },    { "biz_day", q.biz_day, o.biz_day },
	};
	if (q.state != o.state) {
		fprintf(r->rp_out, "REPAIR orders %" PRIu64 " status %s -> %s\n", d->order_no,
		        state_name(q.state), state_name(o.state));
		r->rp_repaired++;
	}
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		if (f[i].from == f[i].to)
			continue;
		fprintf(r->rp_out, "REPAIR orders %" PRIu64 " %s %" PRIu64 " -> %" PRIu64 "\n", d->order_no,
		        f[i].name, f[i].from, f[i].to);
		r->rp_repaired++;
	}
	touch(r, o.activity_id, o.sku_id);
	touch(r, q.activity_id, q.sku_id);
}

/* ------------------------------------------------------------------------
 * 4. Classification
 * ------------------------------------------------------------------------ */

enum { FIX_NONE, FIX_STOCK, FIX_STOCK_INSERT, FIX_ORDER_INSERT, FIX_ORDER_UPDATE, FIX_DERIVED };

/* What to do with one difference of the WAL-vs-MySQL comparison; a reason when nothing. */
static int classify(const struct diff *d, const char **why)
{
	const unsigned both = FLASH_W_WAL | FLASH_W_MYSQL;
	*why = NULL;
	switch (d->kind) {
	case DIFF_TOTAL:
	case DIFF_AVAILABLE:
	case DIFF_RESERVED:
	case DIFF_SOLD:
		if ((d->witnesses & both) == both && d->wal != DIFF_NA && d->sql != DIFF_NA)
			return FIX_STOCK;
		break;
	case DIFF_MISSING:
		if (d->order_no) {
			if (d->witnesses == FLASH_W_MYSQL)
				return FIX_ORDER_INSERT;
			*why = "MySQL row absent from the WAL";
			return FIX_NONE;
		}
		if (d->witnesses & FLASH_W_WAL) {
			*why = "MySQL row absent from the WAL";
			return FIX_NONE;
		}
		if (d->witnesses & FLASH_W_MYSQL)
			return FIX_STOCK_INSERT;
		break;
	case DIFF_ORDER:
		if ((d->witnesses & both) == both)
			return FIX_ORDER_UPDATE;
		break;
	case DIFF_BALANCE:
	case DIFF_ORDER_SUM:
		if (d->witnesses == FLASH_W_MYSQL)
			return FIX_DERIVED;
		*why = "the WAL disagrees with itself";
		return FIX_NONE;
	case DIFF_USER_LIMIT:
		*why = "user-limit breach: which order to drop is not the WAL's to decide";
		return FIX_NONE;
	}
	*why = "not a difference between the WAL and MySQL";
	return FIX_NONE;
}

static void repair_all(struct repair *r, const struct reconcile_report *rep)
{
	const char *why;
	/* First every change, then what is left: a MySQL sum that disagreed
	 * only because of a row repaired above is not reported as unrepaired. */
	for (size_t i = 0; i < rep->n && !r->rp_fatal; i++) {
		const struct diff *d = &rep->diffs[i];
		switch (classify(d, &why)) {
		case FIX_STOCK:        repair_stock(r, d); break;
		case FIX_STOCK_INSERT: insert_stock(r, d); break;
		case FIX_ORDER_INSERT: insert_order(r, d); break;
		case FIX_ORDER_UPDATE: update_order(r, d); break;
		default:               break;
		}
	}
	for (size_t i = 0; i < rep->n && !r->rp_fatal; i++) {
		const struct diff *d = &rep->diffs[i];
		int fix = classify(d, &why);
		if (fix == FIX_NONE)
			not_repaired(r, d, why);
		else if (fix == FIX_DERIVED && !touched(r, d->activity_id, d->sku_id))
			not_repaired(r, d, "MySQL's sums disagree with its own rows; no WAL difference to apply");
	}
	if (rep->found > rep->n)
		fprintf(r->rp_out, "NOT REPAIRED %" PRIu64 " difference(s) beyond the %zu listed\n",
		        rep->found - rep->n, rep->n);
}

/* ------------------------------------------------------------------------
 * 5. The run
 * ------------------------------------------------------------------------ */

/* MySQL's applied LSN, locked (FOR UPDATE) when @p lock. */
static int applied_lsn(struct repair *r, int lock, uint64_t *lsn, char *msg, size_t len)
{
	const char *stream = mdb_stream(r->rp_m);
	char esc[140], sql[256];
	size_t sl = strlen(stream);
	if (sl > 64) {
		snprintf(msg, len, "stream name too long");
		return -1;
	}
	if (!(r->rp_c = mdb_conn(r->rp_m))) {
		snprintf(msg, len, "MySQL unreachable");
		return -1;
	}
	mysql_real_escape_string(r->rp_c, esc, stream, (unsigned long)sl);
	snprintf(sql, sizeof sql, "SELECT lsn FROM applied_lsn WHERE stream = '%s'%s", esc,
	         lock ? " FOR UPDATE" : "");
	if (mysql_query(r->rp_c, sql)) {
		snprintf(msg, len, "%s (%u)", mysql_error(r->rp_c), mysql_errno(r->rp_c));
		return -1;
	}
	MYSQL_RES *res = mysql_store_result(r->rp_c);
	if (!res) {
		snprintf(msg, len, "%s (%u)", mysql_error(r->rp_c), mysql_errno(r->rp_c));
		return -1;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	*lsn = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

/* Fold @p f to exactly @p lsn; 0, or -1 with the reason on err. */
static int fold_to(fold_t *f, const char *dir, uint64_t lsn, FILE *err)
{
	int rc = FLASH_OK;
	if (lsn)
		rc = fold_wal_upto(f, dir, lsn);
	if (rc) {
		fprintf(err, "reconcile: WAL %s: %s\n", dir, flash_strerror(rc));
		return -1;
	}
	if (fold_lsn(f) < lsn) {
		fprintf(err, "reconcile: MySQL has applied up to LSN %" PRIu64 " but the WAL in %s ends at "
		        "LSN %" PRIu64 ": it is not the WAL MySQL was fed from; nothing repaired\n", lsn, dir,
		        fold_lsn(f));
		return -1;
	}
	return 0;
}

static void alert(const struct reconcile_report *rep, double ratio, FILE *err)
{
	double limit = ratio > 0 ? ratio : 0.001;
	if (rep->units && (double)rep->diff_units / (double)rep->units > limit)
		fprintf(err, "reconcile: ALERT %" PRIu64 " of %" PRIu64 " units differ (%.4f%%, threshold %.4f%%)\n",
		        rep->diff_units, rep->units, 100.0 * (double)rep->diff_units / (double)rep->units,
		        100.0 * limit);
}

/*
 * The segment against the whole WAL (nothing repaired there).  @p f is
 * folded on to the WAL's end.  Returns differences found, or -1.
 */
static int64_t segment_check(flash_t *h, fold_t *f, const char *dir, FILE *out, FILE *err,
                             int not_rep)
{
	int rc = fold_wal_upto(f, dir, 0);
	if (rc) {
		fprintf(err, "reconcile: WAL %s: %s\n", dir, flash_strerror(rc));
		return -1;
	}
	struct reconcile_report rep;
	if ((rc = reconcile_compare(h, NULL, f, 0, &rep))) {
		fprintf(err, "reconcile: segment: %s\n", flash_strerror(rc));
		return -1;
	}
	char line[384];
	for (size_t i = 0; i < rep.n; i++) {
		diff_format(&rep.diffs[i], line, sizeof line);
		if (not_rep)
			fprintf(out, "NOT REPAIRED %s (segment-side: the segment is not changed from the WAL)\n",
			        line + 5);
		else
			fprintf(out, "%s\n", line);
	}
	int64_t found = (int64_t)rep.found;
	reconcile_report_free(&rep);
	return found;
}

int reconcile_repair(flash_t *h, mdb_t *m, const struct reconcile_run_opts *o,
                           FILE *out, FILE *err)
{
	if (!m || !o || !o->wal_dir || !out || !err)
		return 2;
	struct repair r = { .rp_m = m, .rp_out = out, .rp_err = err };
	struct reconcile_report rep;
	memset(&rep, 0, sizeof rep);
	char msg[320];
	uint64_t lsn = 0, lsn2 = 0;
	int ret = 2, in_tx = 0;
	fold_t *f2 = NULL;

	if (!(r.rp_c = mdb_conn(m))) {
		fprintf(err, "reconcile: MySQL %s unreachable\n", mdb_where(m));
		return 2;
	}
	if (fold_new(&r.rp_f)) {
		fprintf(err, "reconcile: out of memory\n");
		return 2;
	}
	if (rexec(&r, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", msg, sizeof msg) ||
	    rexec(&r, "START TRANSACTION", msg, sizeof msg)) {
		fprintf(err, "reconcile: MySQL: %s\n", msg);
		goto out;
	}
	in_tx = 1;
	r.rp_tid = mysql_thread_id(r.rp_c);
	if (applied_lsn(&r, 1, &lsn, msg, sizeof msg)) {
		fprintf(err, "reconcile: MySQL applied_lsn: %s\n", msg);
		goto out;
	}
	if (fold_to(r.rp_f, o->wal_dir, lsn, err))
		goto out;
	int rc = reconcile_compare(NULL, m, r.rp_f, RECONCILE_WAL_ORDERS, &rep);
	if (rc) {
		fprintf(err, "reconcile: %s\n", flash_strerror(rc));
		goto out;
	}
	fprintf(out, "reconcile: MySQL at applied LSN %" PRIu64 " against the WAL folded to it\n", lsn);
	reconcile_print(&rep, out, 0);
	alert(&rep, o->alert_ratio, err);
	repair_all(&r, &rep);
	if (r.rp_fatal) {
		fprintf(err, "reconcile: MySQL failed during the repair; rolled back, nothing changed\n");
		goto out;
	}
	if (rexec(&r, r.rp_repaired ? "COMMIT" : "ROLLBACK", msg, sizeof msg)) {
		fprintf(err, "reconcile: MySQL %s: %s\n", r.rp_repaired ? "COMMIT" : "ROLLBACK", msg);
		goto out;
	}
	in_tx = 0;
	r.rp_tid = 0;
	fprintf(out, "reconcile: %" PRIu64 " change(s) committed, %" PRIu64 " difference(s) not repaired\n",
	        r.rp_repaired, r.rp_refused);
	/* The segment is never repaired: its differences are listed as such. */
	if (h && segment_check(h, r.rp_f, o->wal_dir, out, err, 1) < 0)
		goto out;

	/* Check again, at a consistent snapshot of MySQL. */
	reconcile_report_free(&rep);
	if (fold_new(&f2) ||
	    rexec(&r, "START TRANSACTION WITH CONSISTENT SNAPSHOT", msg, sizeof msg)) {
		fprintf(err, "reconcile: re-check: %s\n", f2 ? msg : "out of memory");
		goto out;
	}
	in_tx = 1;
	r.rp_tid = mysql_thread_id(r.rp_c);
	if (applied_lsn(&r, 0, &lsn2, msg, sizeof msg)) {
		fprintf(err, "reconcile: re-check: %s\n", msg);
		goto out;
	}
	if (fold_to(f2, o->wal_dir, lsn2, err))
		goto out;
	if ((rc = reconcile_compare(NULL, m, f2, RECONCILE_WAL_ORDERS, &rep))) {
		fprintf(err, "reconcile: re-check: %s\n", flash_strerror(rc));
		goto out;
	}
	if (rexec(&r, "COMMIT", msg, sizeof msg)) {
		fprintf(err, "reconcile: re-check: %s\n", msg);
		goto out;
	}
	in_tx = 0;
	r.rp_tid = 0;
	uint64_t found = rep.found;
	fprintf(out, "reconcile: re-check at applied LSN %" PRIu64 ": %" PRIu64 " difference(s) between the "
	        "WAL and MySQL\n", lsn2, found);
	char line[384];
	for (size_t i = 0; i < rep.n; i++) {
		diff_format(&rep.diffs[i], line, sizeof line);
		fprintf(out, "%s\n", line);
	}
	if (h) {
		int64_t sf = segment_check(h, f2, o->wal_dir, out, err, 0);
		if (sf < 0)
			goto out;
		found += (uint64_t)sf;
		fprintf(out, "reconcile: re-check: %" PRId64 " difference(s) between the segment and the WAL\n", sf);
	}
	ret = found ? 1 : 0;
out:
	if (in_tx) {
		r.rp_tid = 0;
		rexec(&r, "ROLLBACK", NULL, 0);
	}
	reconcile_report_free(&rep);
	fold_free(r.rp_f);
	fold_free(f2);
	free(r.rp_touched.v);
	free(r.rp_stock.v);
	return ret;
}
