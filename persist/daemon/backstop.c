/*
 * backstop.c -- the cross-box per-user limit: a thread of `serve` that
 * follows the box's order feed into the central database's fs_user_limit
 * and turns a refusal of its unique index into a compensating cancel.
 * The contract is backstop.h.
 *
 * Divisions:
 *   1. urls, logging, clock
 *   2. the central connection (one URL at a time, the next on failure) and
 *      the schema
 *   3. one batch: a transaction gated by fs_backstop_pos
 *   4. compensating cancels (after the commit; the sweep on connect, and
 *      in the next round after a cancel or a mark failed)
 *   5. the thread
 */
#include "backstop.h"

#include <errno.h>
#include <inttypes.h>
#include <mysql.h>
#include <errmsg.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flashstock.h"
#include "mysql_apply.h"
#include "mysql_err.h"
#include "plog.h"

#define BS_CONSUMER   "backstop"
#define BS_URLS_MAX   16
#define BS_WAIT_MS    200           /* longest wait of one flash_feed_next */

struct bs_act {
	uint32_t id;
	uint32_t limit;                 /* K */
	uint32_t scope;                 /* enum flash_scope */
};

/* A refused order whose cancel is due once its batch committed. */
struct bs_refused {
	uint64_t order_no;
	uint64_t lsn;
};

/* A cancel made whose fs_backstop row is not marked yet (the UPDATE failed). */
struct bs_unmarked {
	uint64_t order_no;
	uint32_t units;
};

struct backstop {
	struct backstop_opts bs_o;
	char           *bs_urls_buf;    /* owned copy of o.urls, split in place */
	char           *bs_url[BS_URLS_MAX];
	uint32_t        bs_nurl;
	mdb_t  *bs_m[BS_URLS_MAX];  /* one handle per URL, connected lazily */
	uint32_t        bs_cur;         /* URL in use */
	int             bs_connected;   /* bs_m[bs_cur] has a session set up (schema, sweep) */
	pthread_t       bs_th;
	int             bs_stop;        /* atomic: 1 = drain and end */
	uint32_t        bs_drain_ms;    /* set before bs_stop */
	/* owned by the thread */
	flash_t        *bs_h;
	flash_feed_t   *bs_f;
	uint64_t        bs_incarnation;
	struct flash_feed_rec *bs_batch;
	size_t          bs_nbatch;
	struct bs_refused *bs_ref;
	size_t          bs_nref;
	struct bs_unmarked *bs_unm;     /* marks to make again, with their units */
	size_t          bs_nunm;
	int             bs_sweep_due;   /* a cancel or a mark failed: sweep next round */
	struct bs_act  *bs_act;
	size_t          bs_nact;
	uint64_t        bs_fed_lsn;     /* committed centrally, not yet in the feed position */
	uint64_t        bs_feed_lsn;    /* the feed's committed position */
	/* figures: guarded by bs_mu */
	pthread_mutex_t bs_mu;
	struct backstop_stats bs_st;
};

/* ---- 1. urls, logging, clock ---- */

__attribute__((format(printf, 3, 4)))
static void bs_log(const struct backstop *b, int level, const char *fmt, ...)
{
	if (level > b->bs_o.log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	plog_vline(level, "backstop: ", fmt, ap);
	va_end(ap);
}

static void bs_mysql_log(void *arg, int level, const char *msg)
{
	bs_log(arg, level > PLOG_INFO ? PLOG_INFO : level, "%s", msg);
}

static uint64_t bs_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void bs_sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Split a copy of @p urls at commas into @p v (at most BS_URLS_MAX). */
static int bs_split(char *buf, char **v, uint32_t *n)
{
	*n = 0;
	for (char *p = buf; p && *p;) {
		char *c = strchr(p, ',');
		if (c)
			*c++ = '\0';
		if (*p) {
			if (*n == BS_URLS_MAX)
				return FLASH_EINVAL;
			v[(*n)++] = p;
		}
		p = c;
	}
	return *n ? FLASH_OK : FLASH_EINVAL;
}

int backstop_urls_check(const char *urls, char *why, size_t cap)
{
	if (why && cap)
		why[0] = '\0';
	if (!urls || !*urls) {
		if (why && cap)
			snprintf(why, cap, "no URL");
		return FLASH_EINVAL;
	}
	char *buf = strdup(urls), *v[BS_URLS_MAX];
	uint32_t n;
	if (!buf)
		return FLASH_ENOMEM;
	int rc = bs_split(buf, v, &n);
	if (rc != FLASH_OK && why && cap)
		snprintf(why, cap, "give 1 to %d comma-separated URLs", BS_URLS_MAX);
	for (uint32_t i = 0; rc == FLASH_OK && i < n; i++) {
		char w[200];
		rc = mdb_url_check(v[i], w, sizeof w);
		if (rc != FLASH_OK && why && cap)
			snprintf(why, cap, "URL %u: %s", i + 1, w);
	}
	free(buf);
	return rc;
}

static void bs_stat_add(struct backstop *b, uint64_t *field, uint64_t k)
{
	pthread_mutex_lock(&b->bs_mu);
	*field += k;
	pthread_mutex_unlock(&b->bs_mu);
}

/* ---- 2. the central connection and the schema ---- */

static const char *const bs_schema[] = {
	"CREATE TABLE IF NOT EXISTS fs_user_limit ("
	" activity_id    INT UNSIGNED NOT NULL,"
	" user_id        BIGINT UNSIGNED NOT NULL,"
	" scope_sku      INT UNSIGNED NOT NULL COMMENT 'sku_id for per-sku limits, else 0',"
	" biz_day        INT UNSIGNED NOT NULL COMMENT 'business day for per-day limits, else 0',"
	" limit_slot     SMALLINT UNSIGNED NOT NULL COMMENT 'the central slot 1..K',"
	" box_id         INT UNSIGNED NOT NULL,"
	" order_no       BIGINT UNSIGNED NOT NULL,"
	" sku_id         INT UNSIGNED NOT NULL,"
	" qty            INT UNSIGNED NOT NULL,"
	" status         ENUM('ACTIVE','CANCELLED') NOT NULL DEFAULT 'ACTIVE',"
	" quota_returned TINYINT UNSIGNED NOT NULL DEFAULT 0,"
	" active_key     TINYINT UNSIGNED AS"
	"   (IF(status = 'ACTIVE' OR quota_returned = 0, 1, NULL)) PERSISTENT"
	"   COMMENT '1 while the order holds its slot, NULL once freed',"
	" lsn            BIGINT UNSIGNED NOT NULL COMMENT 'the ORDER record in the box WAL',"
	" PRIMARY KEY (box_id, order_no),"
	" UNIQUE KEY user_limit (activity_id, user_id, scope_sku, biz_day, limit_slot, active_key)"
	") ENGINE=InnoDB",

	"CREATE TABLE IF NOT EXISTS fs_backstop ("
	" box_id         INT UNSIGNED NOT NULL,"
	" order_no       BIGINT UNSIGNED NOT NULL,"
	" reason         VARCHAR(32) NOT NULL,"
	" activity_id    INT UNSIGNED NOT NULL,"
	" sku_id         INT UNSIGNED NOT NULL,"
	" user_id        BIGINT UNSIGNED NOT NULL,"
	" qty            INT UNSIGNED NOT NULL,"
	" lsn            BIGINT UNSIGNED NOT NULL,"
	" holder_box     INT UNSIGNED NULL COMMENT 'a box holding the slot when refused',"
	" holder_order   BIGINT UNSIGNED NULL,"
	" cancelled      TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '1 once cancelled in the segment',"
	" units_returned INT UNSIGNED NULL,"
	" created        DATETIME(6) NOT NULL,"
	" PRIMARY KEY (box_id, order_no)"
	") ENGINE=InnoDB",

	"CREATE TABLE IF NOT EXISTS fs_backstop_pos ("
	" box_id         INT UNSIGNED NOT NULL PRIMARY KEY,"
	" incarnation    BIGINT UNSIGNED NOT NULL,"
	" lsn            BIGINT UNSIGNED NOT NULL COMMENT 'every record of the box WAL <= this is written',"
	" updated        DATETIME(6) NOT NULL"
	") ENGINE=InnoDB",
};

int backstop_err_action(unsigned e)
{
	switch (mdb_err_class(e)) {
	case MDB_ERR_TXN:
		return BACKSTOP_ERR_RETRY;
	case MDB_ERR_CONN:
	case MDB_ERR_NODE:      /* a Galera node not ready: another may be */
		return BACKSTOP_ERR_MOVE;
	default:
		return BACKSTOP_ERR_FAIL;
	}
}

static MYSQL *bs_conn(struct backstop *b)
{
	return mdb_conn(b->bs_m[b->bs_cur]);
}

/* Give the current URL up: the next call connects to the next one. */
static void bs_move(struct backstop *b)
{
	mdb_conn_lost(b->bs_m[b->bs_cur]);
	b->bs_connected = 0;
	if (b->bs_nurl > 1) {
		b->bs_cur = (b->bs_cur + 1) % b->bs_nurl;
		bs_log(b, PLOG_WARN, "moving to central URL %u of %u (%s)", b->bs_cur + 1, b->bs_nurl,
		       mdb_where(b->bs_m[b->bs_cur]));
	}
}

/* Run one statement that returns no rows; 0, or the MySQL error number. */
static unsigned bs_exec(MYSQL *c, const char *sql)
{
	if (mysql_real_query(c, sql, strlen(sql)))
		return mysql_errno(c) ? mysql_errno(c) : CR_UNKNOWN_ERROR;
	MYSQL_RES *r = mysql_store_result(c);
	if (r)
		mysql_free_result(r);
	return 0;
}

static int bs_sweep(struct backstop *b, MYSQL *c);

static int bs_unmarked(const struct backstop *b, uint64_t order_no)
{
	for (size_t i = 0; i < b->bs_nunm; i++)
		if (b->bs_unm[i].order_no == order_no)
			return 1;
	return 0;
}

/*
 * A session on the current URL with the schema present and the cancels
 * that a previous run decided made (bs_sweep).  @return FLASH_OK;
 * FLASH_EMYSQL_RETRY (unreachable: the next call tries the next URL).
 */
static int bs_connect(struct backstop *b)
{
	if (b->bs_connected && bs_conn(b) != NULL)
		return FLASH_OK;
	MYSQL *c = bs_conn(b);
	if (!c) {
		bs_move(b);
		return FLASH_EMYSQL_RETRY;
	}
	for (size_t i = 0; i < sizeof bs_schema / sizeof bs_schema[0]; i++) {
		unsigned e = bs_exec(c, bs_schema[i]);
		if (e) {
			bs_log(b, PLOG_ERROR, "schema on %s: %s (%u)",
			       mdb_where(b->bs_m[b->bs_cur]), mysql_error(c), e);
			bs_move(b);
			return FLASH_EMYSQL_RETRY;
		}
	}
	/* the box's position row, made once outside any batch (two boxes
	 * creating theirs inside a batch would lock each other's gap) */
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT IGNORE INTO fs_backstop_pos (box_id, incarnation, lsn, updated)"
	         " VALUES (%u, %" PRIu64 ", 0, NOW(6))", b->bs_o.box_id, b->bs_incarnation);
	unsigned e = bs_exec(c, sql);
	if (e) {
		bs_log(b, PLOG_ERROR, "position row on %s: %s (%u)",
		       mdb_where(b->bs_m[b->bs_cur]), mysql_error(c), e);
		bs_move(b);
		return FLASH_EMYSQL_RETRY;
	}
	b->bs_connected = 1;    /* a mark failing in the sweep may move on (bs_mark) */
	if (bs_sweep(b, c) != FLASH_OK) {
		if (b->bs_connected)
			bs_move(b);
		return FLASH_EMYSQL_RETRY;
	}
	pthread_mutex_lock(&b->bs_mu);
	b->bs_st.reconnects++;
	b->bs_st.node = b->bs_cur;
	pthread_mutex_unlock(&b->bs_mu);
	bs_log(b, PLOG_INFO, "central database %s (URL %u of %u), box %u",
	       mdb_where(b->bs_m[b->bs_cur]), b->bs_cur + 1, b->bs_nurl, b->bs_o.box_id);
	return FLASH_OK;
}

/* ---- 3. one batch ---- */

/* The activity's limit and scope from the segment (a small cache, refilled
 * on a miss; the scope never changes, the limit only grows: bs_act_terms()
 * follows it).  The daemon archives an
 * activity only once this thread has written its orders (archiver.h): a
 * miss is an activity the segment never had, or one archived by hand
 * (`flashstock archive`) while this thread lagged. */
static const struct bs_act *bs_act_get(struct backstop *b, uint32_t id)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < b->bs_nact; i++)
			if (b->bs_act[i].id == id)
				return &b->bs_act[i];
		if (pass)
			break;
		b->bs_nact = 0;
		for (uint32_t i = 0;; i++) {
			struct flash_activity a;
			int rc = flash_activity_at(b->bs_h, i, &a);
			if (rc == FLASH_EARCHIVED)
				continue;       /* an entry an archive freed: live ones follow */
			if (rc != FLASH_OK)
				break;
			struct bs_act *na = realloc(b->bs_act, (b->bs_nact + 1) * sizeof *na);
			if (!na)
				break;
			b->bs_act = na;
			b->bs_act[b->bs_nact++] = (struct bs_act){ a.id, a.limit_per_user, a.scope };
		}
	}
	return NULL;
}

/*
 * New terms of an activity (an ACTIVITY record with flags 1): a cached
 * limit learns the larger one.  The feed brings the record before any order
 * placed under it, so an order's slot above the old limit finds its central
 * slot; without this it would look for one among the old limit's only and
 * be cancelled as a second order across boxes.  The larger of the two is
 * kept: a limit never shrinks, and the cache may have been filled from the
 * segment after this record (a replayed batch).
 */
static void bs_act_terms(struct backstop *b, const struct flash_record *r)
{
	uint32_t k = r->biz_day & 0xffu;
	for (size_t i = 0; i < b->bs_nact; i++)
		if (b->bs_act[i].id == r->activity_id && b->bs_act[i].limit < k)
			b->bs_act[i].limit = k;
}

/* A batch statement failed: roll back and say what to do. */
static int bs_batch_fail(struct backstop *b, MYSQL *c, unsigned e, const char *what)
{
	int k = backstop_err_action(e);
	bs_log(b, k == BACKSTOP_ERR_FAIL ? PLOG_ERROR : PLOG_WARN,
	       "%s on %s: %s (%u): batch rolled back%s", what, mdb_where(b->bs_m[b->bs_cur]),
	       mysql_error(c), e, k == BACKSTOP_ERR_FAIL ? "" : ", run again");
	if (k == BACKSTOP_ERR_MOVE) {
		bs_move(b);
	} else if (bs_exec(c, "ROLLBACK")) {
		/* the session is in a state we do not know (a result left
		 * unread): the server rolls back what a closed connection had
		 * open; the next round connects to this URL again */
		mdb_conn_lost(b->bs_m[b->bs_cur]);
		b->bs_connected = 0;
	}
	b->bs_nref = 0;
	return k;
}

/*
 * Write one ORDER: the first free central slot from the box's own on.
 * @return 0 (written, or a conflict noted in bs_ref and fs_backstop), or
 *         the MySQL error number of a statement that failed.
 */
static unsigned bs_order(struct backstop *b, MYSQL *c, const struct flash_feed_rec *fr,
                         uint64_t *conflicts, uint64_t *orders)
{
	const struct flash_record *r = &fr->fr_rec;
	const struct bs_act *a = bs_act_get(b, r->activity_id);
	if (!a) {
		bs_log(b, PLOG_WARN, "order %" PRIu64 " (LSN %" PRIu64 "): activity %u is not in the "
		       "segment: not checked", r->order_no, fr->fr_lsn, r->activity_id);
		return 0;
	}
	uint32_t k = a->limit ? a->limit : 1;
	uint32_t scope_sku = a->scope == FLASH_SCOPE_SKU ? r->sku_id : 0;
	uint32_t biz_day = a->scope == FLASH_SCOPE_DAY ? r->biz_day : 0;
	uint32_t first = r->limit_slot >= 1 && r->limit_slot <= k ? r->limit_slot : 1;
	char sql[768];
	for (uint32_t i = 0; i < k; i++) {
		uint32_t slot = (first - 1 + i) % k + 1;
		snprintf(sql, sizeof sql,
		         "INSERT INTO fs_user_limit (activity_id, user_id, scope_sku, biz_day, limit_slot,"
		         " box_id, order_no, sku_id, qty, lsn) VALUES (%u, %" PRIu64 ", %u, %u, %u, %u, %"
		         PRIu64 ", %u, %u, %" PRIu64 ")",
		         r->activity_id, r->user_id, scope_sku, biz_day, slot, b->bs_o.box_id, r->order_no,
		         r->sku_id, r->qty, fr->fr_lsn);
		unsigned e = bs_exec(c, sql);
		if (e == 0) {
			(*orders)++;
			return 0;
		}
		if (mdb_err_class(e) != MDB_ERR_DUP)
			return e;
		if (strstr(mysql_error(c), "'PRIMARY'")) {
			/* (box, order) is there already: a WAL that numbers
			 * orders again, which the incarnation check excludes */
			bs_log(b, PLOG_WARN, "order %" PRIu64 " of box %u is in fs_user_limit already",
			       r->order_no, b->bs_o.box_id);
			return 0;
		}
	}
	/* Every slot is held on some box: a second order across boxes. */
	uint32_t hbox = 0;
	uint64_t horder = 0;
	snprintf(sql, sizeof sql,
	         "SELECT box_id, order_no FROM fs_user_limit WHERE activity_id = %u AND user_id = %"
	         PRIu64 " AND scope_sku = %u AND biz_day = %u AND active_key = 1 ORDER BY limit_slot"
	         " LIMIT 1", r->activity_id, r->user_id, scope_sku, biz_day);
	if (mysql_real_query(c, sql, strlen(sql)))
		return mysql_errno(c) ? mysql_errno(c) : CR_UNKNOWN_ERROR;
	MYSQL_RES *res = mysql_store_result(c);
	if (!res)
		return mysql_errno(c) ? mysql_errno(c) : CR_UNKNOWN_ERROR;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row && row[0] && row[1]) {
		hbox = (uint32_t)strtoul(row[0], NULL, 10);
		horder = strtoull(row[1], NULL, 10);
	}
	mysql_free_result(res);
	snprintf(sql, sizeof sql,
	         "INSERT INTO fs_backstop (box_id, order_no, reason, activity_id, sku_id, user_id, qty,"
	         " lsn, holder_box, holder_order, created) VALUES (%u, %" PRIu64 ", 'user_limit', %u, %u,"
	         " %" PRIu64 ", %u, %" PRIu64 ", %u, %" PRIu64 ", NOW(6))"
	         " ON DUPLICATE KEY UPDATE lsn = VALUES(lsn)",
	         b->bs_o.box_id, r->order_no, r->activity_id, r->sku_id, r->user_id, r->qty, fr->fr_lsn,
	         hbox, horder);
	unsigned e = bs_exec(c, sql);
	if (e)
		return e;
	struct bs_refused *nr = realloc(b->bs_ref, (b->bs_nref + 1) * sizeof *nr);
	if (!nr)
		return CR_OUT_OF_MEMORY;
	b->bs_ref = nr;
	b->bs_ref[b->bs_nref++] = (struct bs_refused){ r->order_no, fr->fr_lsn };
	(*conflicts)++;
	bs_log(b, PLOG_WARN, "order %" PRIu64 " (LSN %" PRIu64 ") of user %" PRIu64 ", activity %u:"
	       " the user holds the limit (%u) across boxes (box %u order %" PRIu64 "): refused, it is"
	       " cancelled", r->order_no, fr->fr_lsn, r->user_id, r->activity_id, k, hbox, horder);
	return 0;
}

static void bs_compensate(struct backstop *b, MYSQL *c, uint64_t order_no);

/*
 * Write the batch in one transaction gated by the box's fs_backstop_pos
 * row, then make the cancels it decided.
 * @return 0 (committed: the batch is done); BACKSTOP_ERR_*.
 */
static int bs_apply(struct backstop *b)
{
	MYSQL *c = bs_conn(b);
	if (!c) {
		bs_move(b);
		return BACKSTOP_ERR_MOVE;
	}
	char sql[256];
	unsigned e;
	b->bs_nref = 0;
	if ((e = bs_exec(c, "START TRANSACTION")))
		return bs_batch_fail(b, c, e, "begin");
	snprintf(sql, sizeof sql, "SELECT incarnation, lsn FROM fs_backstop_pos WHERE box_id = %u FOR UPDATE",
	         b->bs_o.box_id);
	if (mysql_real_query(c, sql, strlen(sql)))
		return bs_batch_fail(b, c, mysql_errno(c), "position");
	MYSQL_RES *res = mysql_store_result(c);
	if (!res)
		return bs_batch_fail(b, c, mysql_errno(c), "position");
	MYSQL_ROW row = mysql_fetch_row(res);
	int have = row != NULL && row[0] && row[1];
	uint64_t inc = have ? strtoull(row[0], NULL, 10) : 0, pos = have ? strtoull(row[1], NULL, 10) : 0;
	mysql_free_result(res);
	if (!have) {
		snprintf(sql, sizeof sql, "INSERT INTO fs_backstop_pos (box_id, incarnation, lsn, updated)"
		         " VALUES (%u, %" PRIu64 ", 0, NOW(6))", b->bs_o.box_id, b->bs_incarnation);
		if ((e = bs_exec(c, sql)))
			return bs_batch_fail(b, c, e, "position");
	} else if (inc != b->bs_incarnation) {
		(void)bs_exec(c, "ROLLBACK");
		bs_log(b, PLOG_ERROR, "box %u: the central position belongs to WAL incarnation %016"
		       PRIx64 ", this segment is %016" PRIx64 " (created afresh: its order numbers start "
		       "again); the backstop stops. Delete the box's rows of fs_backstop_pos, "
		       "fs_user_limit and fs_backstop once its old orders are settled, then restart",
		       b->bs_o.box_id, inc, b->bs_incarnation);
		return -1;
	}
	uint64_t orders = 0, cancels = 0, conflicts = 0, written = 0;
	uint64_t last = b->bs_batch[b->bs_nbatch - 1].fr_lsn;
	for (size_t i = 0; i < b->bs_nbatch; i++) {
		const struct flash_feed_rec *fr = &b->bs_batch[i];
		const struct flash_record *r = &fr->fr_rec;
		if (r->type == FLASH_REC_ACTIVITY && (r->flags & 1u))
			bs_act_terms(b, r);     /* the cache, also on a replay */
		if (fr->fr_lsn <= pos)
			continue;               /* a replay: written before */
		written++;
		if (backstop_takes_slot(r)) {
			if ((e = bs_order(b, c, fr, &conflicts, &orders)))
				return bs_batch_fail(b, c, e, "order");
		} else if (backstop_end_sql(b->bs_o.box_id, r, sql, sizeof sql)) {
			if ((e = bs_exec(c, sql)))
				return bs_batch_fail(b, c, e, "cancel");
			cancels += mysql_affected_rows(c) == 1;
		}
	}
	if (last > pos) {
		snprintf(sql, sizeof sql, "UPDATE fs_backstop_pos SET lsn = %" PRIu64 ", updated = NOW(6)"
		         " WHERE box_id = %u", last, b->bs_o.box_id);
		if ((e = bs_exec(c, sql)))
			return bs_batch_fail(b, c, e, "position");
	}
	if ((e = bs_exec(c, "COMMIT")))
		return bs_batch_fail(b, c, e, "commit");
	pthread_mutex_lock(&b->bs_mu);
	b->bs_st.records += written;
	b->bs_st.orders += orders;
	b->bs_st.cancels += cancels;
	b->bs_st.conflicts += conflicts;
	b->bs_st.batches++;
	if (last > b->bs_st.pos_lsn)
		b->bs_st.pos_lsn = last;
	pthread_mutex_unlock(&b->bs_mu);
	b->bs_fed_lsn = last;
	/* the decided cancels; one lost here is made by the next sweep */
	for (size_t i = 0; i < b->bs_nref; i++)
		bs_compensate(b, c, b->bs_ref[i].order_no);
	b->bs_nref = 0;
	return 0;
}

/* ---- 4. compensating cancels ---- */

int backstop_takes_slot(const struct flash_record *r)
{
	if (r->type != FLASH_REC_ORDER)
		return 0;
	return !(r->flags & FLASH_REC_F_CART) || (r->flags & FLASH_REC_F_LAST);
}

int backstop_end_sql(uint32_t box_id, const struct flash_record *r, char *sql, size_t cap)
{
	/* an expiry gives the slot back exactly as a cancel does; a confirm
	 * keeps the slot the reservation held from its ORDER on */
	if (r->type != FLASH_REC_CANCEL && r->type != FLASH_REC_EXPIRE)
		return 0;
	/* a cart's cancel or expiry: once, by its last line (backstop_takes_slot) */
	if ((r->flags & FLASH_REC_F_CART) && !(r->flags & FLASH_REC_F_LAST))
		return 0;
	snprintf(sql, cap, "UPDATE fs_user_limit SET status = 'CANCELLED', quota_returned"
	         " = %u WHERE box_id = %u AND order_no = %" PRIu64 " AND status = 'ACTIVE'",
	         (r->flags & 1u) ? 1u : 0u, box_id, r->order_no);
	return 1;
}

/*
 * Mark the fs_backstop row of @p order_no cancelled, with the @p units its
 * cancel returned.  A failure keeps the mark in bs_unm, and the next round
 * makes it (bs_sweep), on this session or the next: a certification
 * failure (1213) leaves the session up, so no reconnect would come.
 */
static void bs_mark(struct backstop *b, MYSQL *c, uint64_t order_no, uint32_t units)
{
	char sql[256];
	unsigned e = 0;
	snprintf(sql, sizeof sql, "UPDATE fs_backstop SET cancelled = 1, units_returned = %u WHERE box_id"
	         " = %u AND order_no = %" PRIu64 " AND cancelled = 0", units, b->bs_o.box_id, order_no);
	if (b->bs_connected) {  /* else an earlier mark moved on: @p c is closed */
		if (!(e = bs_exec(c, sql)))
			return;
		bs_log(b, PLOG_WARN, "marking order %" PRIu64 " cancelled: %s (%u); made again next round",
		       order_no, mysql_error(c), e);
	}
	b->bs_sweep_due = 1;
	struct bs_unmarked *nu = realloc(b->bs_unm, (b->bs_nunm + 1) * sizeof *nu);
	if (nu) {       /* else the sweep marks it, with the units unknown (0) */
		b->bs_unm = nu;
		b->bs_unm[b->bs_nunm++] = (struct bs_unmarked){ order_no, units };
	}
	if (e && backstop_err_action(e) == BACKSTOP_ERR_MOVE)
		bs_move(b);
}

/*
 * Cancel a refused order in the segment, then mark its fs_backstop row.
 * flash_cancel is idempotent (FLASH_ECANCELLED: cancelled before, nothing
 * returned twice), so a cancel made before a crash and made again here
 * gives its units back once.  A failed cancel is tried again by the next
 * round's sweep, a failed mark made again by it (bs_mark).
 */
static void bs_compensate(struct backstop *b, MYSQL *c, uint64_t order_no)
{
	uint32_t units = 0;
	int rc = flash_cancel(b->bs_h, order_no, &units);
	if (rc == FLASH_EBUSY) {
		/* the ring is full for a moment: the daemon drains it */
		for (int i = 0; i < 200 && rc == FLASH_EBUSY; i++) {
			bs_sleep_ms(5);
			rc = flash_cancel(b->bs_h, order_no, &units);
		}
	}
	if (rc != FLASH_OK && rc != FLASH_ECANCELLED && rc != FLASH_EFATE_UNKNOWN) {
		bs_log(b, PLOG_ERROR, "cancel of order %" PRIu64 ": %s; tried again next round",
		       order_no, flash_strerror(rc));
		b->bs_sweep_due = 1;
		return;
	}
	if (rc != FLASH_ECANCELLED)
		bs_stat_add(b, &b->bs_st.compensated, 1);
	bs_log(b, PLOG_INFO, "order %" PRIu64 " cancelled (%u units back in stock)", order_no,
	       rc == FLASH_ECANCELLED ? 0u : units);
	bs_mark(b, c, order_no, rc == FLASH_ECANCELLED ? 0u : units);
}

/* The marks kept by bs_mark, then every cancel decided for this box and
 * not yet marked made (a refusal whose cancel a kill or a failure cut). */
static int bs_sweep(struct backstop *b, MYSQL *c)
{
	struct bs_unmarked *unm = b->bs_unm;
	size_t nunm = b->bs_nunm;
	b->bs_unm = NULL;
	b->bs_nunm = 0;
	b->bs_sweep_due = 0;
	for (size_t i = 0; i < nunm; i++)      /* bs_mark keeps what fails again */
		bs_mark(b, c, unm[i].order_no, unm[i].units);
	free(unm);
	if (!b->bs_connected)
		return FLASH_EMYSQL_RETRY;
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT order_no FROM fs_backstop WHERE box_id = %u AND cancelled = 0"
	         " ORDER BY order_no", b->bs_o.box_id);
	if (mysql_real_query(c, sql, strlen(sql)))
		return FLASH_EMYSQL_RETRY;
	MYSQL_RES *res = mysql_store_result(c);
	if (!res)
		return FLASH_EMYSQL_RETRY;
	size_t n = (size_t)mysql_num_rows(res), k = 0;
	uint64_t *v = n ? malloc(n * sizeof *v) : NULL;
	MYSQL_ROW row;
	while (v && (row = mysql_fetch_row(res)) != NULL)
		if (row[0])
			v[k++] = strtoull(row[0], NULL, 10);
	mysql_free_result(res);
	if (n && !v)
		return FLASH_ENOMEM;
	if (k)
		bs_log(b, PLOG_INFO, "%zu refused orders of box %u not yet marked cancelled: cancelling",
		       k, b->bs_o.box_id);
	for (size_t i = 0; i < k; i++)
		if (!bs_unmarked(b, v[i]))      /* kept to be marked with its units */
			bs_compensate(b, c, v[i]);
	free(v);
	return FLASH_OK;
}

/* ---- 5. the thread ---- */

static int bs_stopping(const struct backstop *b)
{
	return __atomic_load_n(&b->bs_stop, __ATOMIC_ACQUIRE) != 0;
}

/* Commit the feed position up to what the central database holds. */
static void bs_feed_commit(struct backstop *b)
{
	if (b->bs_fed_lsn <= b->bs_feed_lsn)
		return;
	int rc = flash_feed_commit(b->bs_f, b->bs_fed_lsn);
	if (rc == FLASH_OK)
		b->bs_feed_lsn = b->bs_fed_lsn;
	else
		bs_log(b, PLOG_WARN, "feed commit at LSN %" PRIu64 ": %s (reading resumes earlier; "
		       "the central position skips what is written)", b->bs_fed_lsn, flash_strerror(rc));
}

/* Fill the batch from the feed: wait for the first record at most
 * @p wait_ms, then take what is there.  @return FLASH_OK (maybe empty),
 * or the feed's error. */
static int bs_fill(struct backstop *b, uint32_t wait_ms)
{
	uint32_t max = b->bs_o.batch_max;
	while (b->bs_nbatch < max) {
		int rc = flash_feed_next(b->bs_f, &b->bs_batch[b->bs_nbatch], b->bs_nbatch ? 0 : wait_ms);
		if (rc == FLASH_ETIMEOUT)
			return FLASH_OK;
		if (rc != FLASH_OK)
			return rc;
		b->bs_nbatch++;
	}
	return FLASH_OK;
}

static void bs_fail(struct backstop *b, const char *what, int rc)
{
	bs_log(b, PLOG_ERROR, "%s: %s; the cross-box limit is not checked until serve restarts",
	       what, flash_strerror(rc));
	pthread_mutex_lock(&b->bs_mu);
	b->bs_st.failed = rc ? rc : -1;
	pthread_mutex_unlock(&b->bs_mu);
}

/* One round: connect, fill, write.  @return 0 go on, -1 stop for good. */
static int bs_round(struct backstop *b, uint32_t wait_ms, uint32_t *backoff_ms)
{
	if (bs_connect(b) != FLASH_OK) {
		bs_stat_add(b, &b->bs_st.retries, b->bs_nbatch ? 1 : 0);
		bs_sleep_ms(*backoff_ms);
		*backoff_ms = *backoff_ms * 2 > 2000 ? 2000 : *backoff_ms * 2;
		return 0;
	}
	if (b->bs_sweep_due && bs_sweep(b, bs_conn(b)) != FLASH_OK)
		b->bs_sweep_due = 1;    /* the query failed: the next round */
	if (!b->bs_connected)
		return 0;               /* a mark moved on: the next round connects */
	if (b->bs_nbatch == 0) {
		int rc = bs_fill(b, wait_ms);
		if (rc != FLASH_OK) {
			bs_fail(b, "feed", rc);
			return -1;
		}
		if (b->bs_nbatch == 0)
			return 0;
	}
	int k = bs_apply(b);
	if (k == 0) {
		b->bs_nbatch = 0;
		*backoff_ms = 10;
		return 0;
	}
	if (k < 0) {
		bs_fail(b, "incarnation", FLASH_EFEED_IDENT);
		return -1;
	}
	bs_stat_add(b, &b->bs_st.retries, 1);
	if (k != BACKSTOP_ERR_RETRY) {
		bs_sleep_ms(*backoff_ms);
		*backoff_ms = *backoff_ms * 2 > 2000 ? 2000 : *backoff_ms * 2;
	}
	return 0;
}

static void *bs_main(void *arg)
{
	struct backstop *b = arg;
	int rc = flash_open(b->bs_o.segment, 0, &b->bs_h);
	if (rc != FLASH_OK) {
		bs_fail(b, "segment", rc);
		return NULL;
	}
	struct flash_ident id;
	if ((rc = flash_ident_get(b->bs_h, &id)) != FLASH_OK) {
		bs_fail(b, "segment identity", rc);
		goto out;
	}
	b->bs_incarnation = id.incarnation;
	/* A compensating cancel is made in memory when flash_cancel returns;
	 * its durability is the daemon's business.  A short bound keeps a
	 * cancel made while the daemon stops from holding the thread. */
	(void)flash_sync_wait_set(b->bs_h, 1000);
	struct flash_feed_opts fo;
	flash_feed_opts_default(&fo);
	fo.from_start = 1;
	/* a daemon killed a moment ago may still hold the consumer's lock
	 * until the kernel drops it: wait for it, not forever */
	for (int i = 0;; i++) {
		rc = flash_feed_open(b->bs_o.wal_dir, BS_CONSUMER, &fo, &b->bs_f);
		if (rc != FLASH_EBUSY || i == 100 || bs_stopping(b))
			break;
		bs_sleep_ms(50);
	}
	if (rc != FLASH_OK) {
		bs_fail(b, "feed " BS_CONSUMER, rc);
		goto out;
	}
	/* The feed's position is committed after the central commit, so it is
	 * a position the central one has reached: the archiver may rely on it
	 * before the first batch (an idle box writes none). */
	struct flash_feed_info fi;
	if (flash_feed_info_get(b->bs_f, &fi) == FLASH_OK) {
		pthread_mutex_lock(&b->bs_mu);
		if (fi.fi_committed_lsn > b->bs_st.pos_lsn)
			b->bs_st.pos_lsn = fi.fi_committed_lsn;
		pthread_mutex_unlock(&b->bs_mu);
	}
	uint32_t backoff_ms = 10;
	uint64_t next_commit = bs_now_ms() + b->bs_o.commit_ms;
	while (!bs_stopping(b)) {
		if (bs_round(b, BS_WAIT_MS, &backoff_ms) != 0)
			goto out;
		if (bs_now_ms() >= next_commit) {
			bs_feed_commit(b);
			next_commit = bs_now_ms() + b->bs_o.commit_ms;
		}
	}
	/* Stop: write what is durable now, within the drain bound. */
	uint64_t deadline = bs_now_ms() + __atomic_load_n(&b->bs_drain_ms, __ATOMIC_ACQUIRE);
	while (bs_now_ms() < deadline) {
		if (b->bs_nbatch == 0 && (rc = bs_fill(b, 0)) != FLASH_OK) {
			bs_fail(b, "feed", rc);
			break;
		}
		if (b->bs_nbatch == 0)
			break;
		if (bs_round(b, 0, &backoff_ms) != 0)
			break;
	}
	if (b->bs_nbatch)
		bs_log(b, PLOG_WARN, "stopping with %zu feed records not yet written centrally (the "
		       "next start writes them)", b->bs_nbatch);
	bs_feed_commit(b);
out:
	if (b->bs_f)
		flash_feed_close(b->bs_f);
	b->bs_f = NULL;
	flash_close(b->bs_h);
	b->bs_h = NULL;
	return NULL;
}

int backstop_start(const struct backstop_opts *o, backstop_t **out)
{
	if (!o || !out || !o->segment || !o->wal_dir || !o->urls || o->box_id == 0 ||
	    o->box_id > INT32_MAX)
		return FLASH_EINVAL;
	*out = NULL;
	int rc = backstop_urls_check(o->urls, NULL, 0);
	if (rc != FLASH_OK)
		return rc == FLASH_EINVAL ? FLASH_EINVAL : FLASH_EMYSQL_CONFIG;
	struct backstop *b = calloc(1, sizeof *b);
	if (!b)
		return FLASH_ENOMEM;
	b->bs_o = *o;
	if (!b->bs_o.batch_max)
		b->bs_o.batch_max = 256;
	if (!b->bs_o.commit_ms)
		b->bs_o.commit_ms = 500;
	pthread_mutex_init(&b->bs_mu, NULL);
	rc = FLASH_ENOMEM;
	if (!(b->bs_urls_buf = strdup(o->urls)) ||
	    !(b->bs_batch = calloc(b->bs_o.batch_max, sizeof *b->bs_batch)))
		goto fail;
	if ((rc = bs_split(b->bs_urls_buf, b->bs_url, &b->bs_nurl)) != FLASH_OK)
		goto fail;
	for (uint32_t i = 0; i < b->bs_nurl; i++) {
		struct mdb_opts mo;
		memset(&mo, 0, sizeof mo);
		mo.url = b->bs_url[i];
		mo.require_db = 1;
		mo.no_schema = 1;
		mo.connect_timeout_s = 2;
		mo.rw_timeout_s = 10;
		mo.log = bs_mysql_log;
		mo.log_arg = b;
		rc = mdb_open(&mo, &b->bs_m[i]);
		if (rc != FLASH_OK && rc != FLASH_EMYSQL_RETRY)
			goto fail;
	}
	if (pthread_create(&b->bs_th, NULL, bs_main, b) != 0) {
		rc = FLASH_ESYS;
		goto fail;
	}
	*out = b;
	return FLASH_OK;
fail:
	for (uint32_t i = 0; i < BS_URLS_MAX; i++)
		mdb_close(b->bs_m[i]);
	free(b->bs_batch);
	free(b->bs_urls_buf);
	pthread_mutex_destroy(&b->bs_mu);
	free(b);
	return rc;
}

void backstop_stats_get(backstop_t *b, struct backstop_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!b)
		return;
	pthread_mutex_lock(&b->bs_mu);
	*out = b->bs_st;
	pthread_mutex_unlock(&b->bs_mu);
}

void backstop_stop(backstop_t *b, uint32_t drain_ms, struct backstop_stats *st)
{
	if (!b) {
		if (st)
			memset(st, 0, sizeof *st);
		return;
	}
	/* the drain bound is published before the stop flag (release), and
	 * read after the thread saw the flag (acquire) */
	__atomic_store_n(&b->bs_drain_ms, drain_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&b->bs_stop, 1, __ATOMIC_RELEASE);
	pthread_join(b->bs_th, NULL);
	if (st)
		backstop_stats_get(b, st);
	for (uint32_t i = 0; i < BS_URLS_MAX; i++)
		mdb_close(b->bs_m[i]);
	free(b->bs_batch);
	free(b->bs_ref);
	free(b->bs_unm);
	free(b->bs_act);
	free(b->bs_urls_buf);
	pthread_mutex_destroy(&b->bs_mu);
	free(b);
}
