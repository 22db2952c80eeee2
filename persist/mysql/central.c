/*
 * central.c -- the central lease database: schema, statements, retries.
 *
 * The contract is in central.h.  Divisions of this file:
 *
 *   1. Nodes        the URL list, a connection per node, the key -> node map
 *   2. Running      one attempt at a time; retry after checking by lease id
 *   3. Schema       CREATE TABLE IF NOT EXISTS
 *   4. Pools        load, read, wanted
 *   5. Boxes        register (epoch bump, adopt), heartbeat, fence, list
 *   6. Leases       take, return, close, reclaim, read, list
 *
 * Every statement is built from integers only (ids, counts, epochs) and the
 * fixed state literals: nothing a caller passes is spliced into SQL text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "central.h"
#include "mysql_apply.h"
#include "mysql_err.h"

/* ------------------------------------------------------------------------
 * 1. Nodes
 * ------------------------------------------------------------------------ */

struct cnode {
	char  *cn_url;             /* one URL of the list (its user info is never printed) */
	char   cn_where[256];      /* masked */
	MYSQL *cn_conn;            /* NULL while disconnected */
};

struct central {
	struct cnode c_node[CENTRAL_NODES_MAX];
	unsigned     c_n;
	unsigned     c_shift;      /* moved on by one per failure: every key follows */
	unsigned     c_cur;        /* node of the statement running now / last */
	uint64_t     c_failovers;
	struct central_opts c_o;
	unsigned     c_errno;      /* last MySQL error */
	char         c_err[320];
	uint64_t     c_rows;       /* affected rows of the last statement */
	uint64_t     c_deadline_ms; /* CLOCK_MONOTONIC ms: no attempt starts after it (0 none) */
};

#define RC_SQL 1000            /* an attempt failed with a MySQL error (c_errno); no FLASH_E*
                                  code is positive, and it is not a check's 0 or 1 */

static void central_log(central_t *c, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void central_log(central_t *c, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	plog_v(c->c_o.log, c->c_o.log_arg, level, fmt, ap);
	va_end(ap);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };
	nanosleep(&ts, NULL);
}

int central_open(const struct central_opts *o, central_t **out)
{
	if (!o || !o->urls || !*o->urls || !out)
		return FLASH_EINVAL;
	central_t *c = calloc(1, sizeof *c);
	if (!c)
		return FLASH_ENOMEM;
	c->c_o = *o;
	if (!c->c_o.timeout_s)
		c->c_o.timeout_s = 3;
	if (!c->c_o.retry_ms)
		c->c_o.retry_ms = 15000;
	const char *p = o->urls;
	int rc = FLASH_OK;
	while (*p) {
		size_t len = strcspn(p, ",");
		if (len) {
			if (c->c_n == CENTRAL_NODES_MAX) {
				rc = FLASH_EMYSQL_CONFIG;
				break;
			}
			struct cnode *n = &c->c_node[c->c_n];
			if (!(n->cn_url = strndup(p, len))) {
				rc = FLASH_ENOMEM;
				break;
			}
			char why[256];
			if ((rc = mdb_url_check(n->cn_url, why, sizeof why)) != FLASH_OK) {
				snprintf(c->c_err, sizeof c->c_err, "URL %u: %s", c->c_n + 1, why);
				c->c_n++;
				break;
			}
			mdb_url_mask(n->cn_url, n->cn_where, sizeof n->cn_where);
			c->c_n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (rc == FLASH_OK && c->c_n == 0)
		rc = FLASH_EMYSQL_CONFIG;
	if (rc != FLASH_OK) {
		if (c->c_err[0])
			central_log(c, PLOG_ERROR, "%s", c->c_err);
		central_close(c);
		return rc;
	}
	*out = c;
	return FLASH_OK;
}

void central_close(central_t *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->c_n; i++) {
		if (c->c_node[i].cn_conn)
			mysql_close(c->c_node[i].cn_conn);
		if (c->c_node[i].cn_url) {
			explicit_bzero(c->c_node[i].cn_url, strlen(c->c_node[i].cn_url));
			free(c->c_node[i].cn_url);
		}
	}
	free(c);
}

unsigned central_node(const central_t *c) { return c ? c->c_cur : 0; }
uint64_t central_failovers(const central_t *c) { return c ? c->c_failovers : 0; }
void central_set_deadline(central_t *c, uint64_t deadline_ms) { c->c_deadline_ms = deadline_ms; }
const char *central_error(const central_t *c) { return c ? c->c_err : ""; }

/* Keys: one sku's pool, one box's row.  A 64-bit mix so neighbouring ids
 * spread over the nodes. */
static uint64_t key_sku(uint32_t activity_id, uint32_t sku_id)
{
	uint64_t x = ((uint64_t)activity_id << 32 | sku_id) * 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static uint64_t key_box(uint32_t box_id)
{
	uint64_t x = ((uint64_t)box_id + 0x5bd1e995u) * 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 31);
}

unsigned central_sku_node(uint32_t activity_id, uint32_t sku_id, unsigned n_nodes)
{
	return n_nodes ? (unsigned)(key_sku(activity_id, sku_id) % n_nodes) : 0;
}

/* Drop node @p i's connection and move every key one node on. */
static void node_fail(central_t *c, unsigned i)
{
	if (c->c_node[i].cn_conn) {
		mysql_close(c->c_node[i].cn_conn);
		c->c_node[i].cn_conn = NULL;
	}
	if (c->c_n > 1) {
		c->c_shift++;
		c->c_failovers++;
		central_log(c, PLOG_WARN, "node %s failed (%s): moving to %s", c->c_node[i].cn_where,
		     c->c_err, c->c_node[(i + 1) % c->c_n].cn_where);
	}
}

/*
 * The connection for @p key: node (key + shift) mod n, connecting first;
 * an unreachable node moves the shift on and the next one is tried, each
 * node once.  NULL when none answers (c_err says why).
 */
static MYSQL *node_conn(central_t *c, uint64_t key)
{
	for (unsigned tries = 0; tries < c->c_n; tries++) {
		/* past the deadline the next node waits for the next call */
		if (tries && c->c_deadline_ms && now_ms() >= c->c_deadline_ms)
			break;
		unsigned i = (unsigned)((key + c->c_shift) % c->c_n);
		struct cnode *n = &c->c_node[i];
		c->c_cur = i;
		if (n->cn_conn)
			return n->cn_conn;
		char why[256];
		int rc = mdb_connect_url(n->cn_url, c->c_o.timeout_s, c->c_o.create_db,
		                                 &n->cn_conn, why, sizeof why);
		if (rc == FLASH_OK) {
			/* A read on this node sees every write set the cluster
			 * committed before it (Galera's causal reads): the check
			 * by lease id after a failover must see a commit made
			 * through the node that died.  A server without Galera
			 * has no such variable: ignore the refusal. */
			if (mysql_query(n->cn_conn, "SET SESSION wsrep_sync_wait = 1") != 0)
				(void)0;
			return n->cn_conn;
		}
		snprintf(c->c_err, sizeof c->c_err, "%s", why);
		c->c_errno = CR_CONNECTION_ERROR;
		if (rc == FLASH_EMYSQL_CONFIG) {
			central_log(c, PLOG_ERROR, "%s", why);
			return NULL;
		}
		node_fail(c, i);
	}
	return NULL;
}

static int sql_err(central_t *c, MYSQL *m)
{
	c->c_errno = mysql_errno(m);
	snprintf(c->c_err, sizeof c->c_err, "%s (%u)", mysql_error(m), c->c_errno);
	return RC_SQL;
}

/* Run one statement that returns no rows; its affected rows in c_rows. */
static int q_exec(central_t *c, MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int q_exec(central_t *c, MYSQL *m, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (mysql_query(m, sql) != 0)
		return sql_err(c, m);
	MYSQL_RES *r = mysql_store_result(m);
	if (r)
		mysql_free_result(r);
	c->c_rows = mysql_affected_rows(m);
	return 0;
}

#define QCOLS 12
struct qrow {
	int  null[QCOLS];
	char v[QCOLS][40];
};

static int64_t qi(const struct qrow *r, int i) { return r->null[i] ? 0 : strtoll(r->v[i], NULL, 10); }

/*
 * Run a SELECT; call @p fn for each row (at most QCOLS columns, each cut at
 * 39 characters: ids, counts and state names).  Returns the number of rows,
 * or -RC_SQL.
 */
static long q_rows(central_t *c, MYSQL *m, int (*fn)(void *arg, const struct qrow *r), void *arg,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static long q_rows(central_t *c, MYSQL *m, int (*fn)(void *arg, const struct qrow *r), void *arg,
                   const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (mysql_query(m, sql) != 0)
		return -(long)sql_err(c, m);
	MYSQL_RES *res = mysql_store_result(m);
	if (!res)
		return mysql_field_count(m) ? -(long)sql_err(c, m) : 0;
	unsigned nf = mysql_num_fields(res);
	long n = 0;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)) != NULL) {
		struct qrow r;
		memset(&r, 0, sizeof r);
		for (unsigned i = 0; i < nf && i < QCOLS; i++) {
			r.null[i] = row[i] == NULL;
			if (row[i])
				snprintf(r.v[i], sizeof r.v[i], "%s", row[i]);
		}
		n++;
		if (fn && fn(arg, &r))
			break;
	}
	mysql_free_result(res);
	return n;
}

/* The first row into *arg. */
static int take_first(void *arg, const struct qrow *r)
{
	*(struct qrow *)arg = *r;
	return 1;
}

static long q_one(central_t *c, MYSQL *m, struct qrow *out, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static long q_one(central_t *c, MYSQL *m, struct qrow *out, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	memset(out, 0, sizeof *out);
	return q_rows(c, m, take_first, out, "%s", sql);
}

/* Tests: drop the connection at fault point @p point if the hook says so
 * (a real close: the server rolls an open transaction back). */
static int fault_at(central_t *c, int point)
{
	if (!c->c_o.fault || !c->c_o.fault(c->c_o.fault_arg, point))
		return 0;
	struct cnode *n = &c->c_node[c->c_cur];
	if (n->cn_conn) {
		mysql_close(n->cn_conn);
		n->cn_conn = NULL;
	}
	c->c_errno = CR_SERVER_LOST;
	snprintf(c->c_err, sizeof c->c_err, "connection dropped at fault point %d (test)", point);
	return 1;
}

/* ------------------------------------------------------------------------
 * 2. Running
 * ------------------------------------------------------------------------ */

/* One attempt: FLASH_OK or a decided outcome, or RC_SQL (c_errno). */
typedef int (*attempt_fn)(central_t *c, MYSQL *m, void *arg);
/* After an attempt of unknown fate: 1 it committed, 0 it did not, RC_SQL. */
typedef int (*check_fn)(central_t *c, MYSQL *m, void *arg);

static int err_same_node(unsigned e)
{
	/* the node answered and rolled back (mysql_err.h's TXN: a deadlock /
	 * certification failure, a lock wait, an interrupted statement): the
	 * retry runs there; a lost connection or a node that does not serve
	 * moves to the next node */
	return mdb_err_class(e) == MDB_ERR_TXN;
}

/*
 * Run @p fn until it decides, retrying retryable failures (mdb_err_
 * retryable) with backoff for at most retry_ms.  After a failure whose fate
 * is unknown, @p check (may be NULL for statements that are safe to repeat)
 * runs first on the next connection: if the first attempt committed, that
 * is the outcome.
 */
static int run(central_t *c, uint64_t key, attempt_fn fn, check_fn check, void *arg)
{
	uint64_t start = now_ms(), deadline = start + c->c_o.retry_ms;
	if (c->c_deadline_ms && c->c_deadline_ms < deadline) {
		deadline = c->c_deadline_ms;
		if (start >= deadline) {
			snprintf(c->c_err, sizeof c->c_err, "not sent: past the caller's deadline");
			return FLASH_EMYSQL_RETRY;
		}
	}
	uint32_t backoff = 10;
	int uncertain = 0;
	for (;;) {
		MYSQL *m = node_conn(c, key);
		if (m) {
			int rc = 0;
			if (uncertain && check) {
				rc = check(c, m, arg);
				if (rc == 1)
					return FLASH_OK;
				if (rc < 0)
					return rc;      /* decided by what the check found */
				/* rc 0: not committed; the attempt below decides again */
			}
			if (rc == 0) {
				rc = fn(c, m, arg);
				if (rc != RC_SQL)
					return rc;
			}
			unsigned e = c->c_errno;
			if (!mdb_err_retryable(e)) {
				struct cnode *n = &c->c_node[c->c_cur];
				central_log(c, PLOG_ERROR, "%s: %s", n->cn_where, c->c_err);
				if (n->cn_conn && mysql_query(n->cn_conn, "ROLLBACK") != 0) {
					/* a session in a state we do not know (a result
					 * left unread): closing it is the rollback */
					mysql_close(n->cn_conn);
					n->cn_conn = NULL;
				}
				return FLASH_EMYSQL;
			}
			uncertain = 1;
			if (err_same_node(e) && c->c_node[c->c_cur].cn_conn) {
				(void)mysql_query(c->c_node[c->c_cur].cn_conn, "ROLLBACK");
				central_log(c, PLOG_INFO, "%s: %s: retrying", c->c_node[c->c_cur].cn_where,
				     c->c_err);
			} else {
				node_fail(c, c->c_cur);
			}
		}
		uint64_t now = now_ms();
		if (now < deadline) {
			/* a sleep never outlasts the deadline: no attempt starts after it */
			sleep_ms(backoff < deadline - now ? backoff : (uint32_t)(deadline - now));
			backoff = backoff >= 400 ? 800 : backoff * 2;
			now = now_ms();
		}
		if (now >= deadline) {
			central_log(c, PLOG_WARN, "no node answered within %u ms: %s",
			            (unsigned)(now - start), c->c_err);
			return FLASH_EMYSQL_RETRY;
		}
	}
}

/* ------------------------------------------------------------------------
 * 3. Schema
 * ------------------------------------------------------------------------ */

static const char *const schema[] = {
	"CREATE TABLE IF NOT EXISTS fs_box ("
	" box_id INT UNSIGNED NOT NULL PRIMARY KEY,"
	" epoch INT UNSIGNED NOT NULL,"
	" state ENUM('live','fenced') NOT NULL,"
	" heartbeat DATETIME(6) NOT NULL,"
	" applied_lsn BIGINT UNSIGNED NOT NULL DEFAULT 0"
	") ENGINE=InnoDB",
	"CREATE TABLE IF NOT EXISTS fs_pool ("
	" activity_id INT UNSIGNED NOT NULL,"
	" sku_id INT UNSIGNED NOT NULL,"
	" total BIGINT NOT NULL,"
	" unleased BIGINT NOT NULL,"
	" wanted BIGINT NOT NULL DEFAULT 0,"
	" PRIMARY KEY (activity_id, sku_id),"
	" CONSTRAINT fs_pool_bounds CHECK (unleased >= 0 AND unleased <= total AND wanted >= 0)"
	") ENGINE=InnoDB",
	"CREATE TABLE IF NOT EXISTS fs_lease ("
	" lease_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,"
	" box_id INT UNSIGNED NOT NULL,"
	" epoch INT UNSIGNED NOT NULL,"
	" activity_id INT UNSIGNED NOT NULL,"
	" sku_id INT UNSIGNED NOT NULL,"
	" units BIGINT NOT NULL,"
	" returned BIGINT NOT NULL DEFAULT 0,"
	" sold_at_close BIGINT NULL,"
	" state ENUM('open','closed','fenced') NOT NULL,"
	" created DATETIME(6) NOT NULL,"
	" closed DATETIME(6) NULL,"
	" KEY fs_lease_box (box_id, state),"
	" KEY fs_lease_sku (activity_id, sku_id, state),"
	" CONSTRAINT fs_lease_bounds CHECK (units > 0 AND returned >= 0 AND returned <= units)"
	") ENGINE=InnoDB",
};

static int init_once(central_t *c, MYSQL *m, void *arg)
{
	(void)arg;
	for (size_t i = 0; i < sizeof schema / sizeof schema[0]; i++)
		if (q_exec(c, m, "%s", schema[i]))
			return RC_SQL;
	return FLASH_OK;
}

int central_init(central_t *c)
{
	if (!c)
		return FLASH_EINVAL;
	return run(c, 0, init_once, NULL, NULL);
}

struct st_mysql *central_conn(central_t *c)
{
	if (!c)
		return NULL;
	/* a connection to a node that died since its last statement is
	 * found here (a ping), not by the caller's first query */
	for (unsigned tries = 0; tries <= c->c_n; tries++) {
		MYSQL *m = node_conn(c, 0);
		if (!m || mysql_ping(m) == 0)
			return m;
		sql_err(c, m);
		node_fail(c, c->c_cur);
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * 4. Pools
 * ------------------------------------------------------------------------ */

struct pool_arg {
	uint32_t a, s;
	int64_t total, units;
	struct pool_row *row;
};

static int pool_set_once(central_t *c, MYSQL *m, void *arg)
{
	struct pool_arg *p = arg;
	/* New: total = unleased = N.  Known: both move by N - total, only
	 * while unleased stays >= 0 (the condition is the statement's). */
	if (q_exec(c, m, "INSERT IGNORE INTO fs_pool (activity_id, sku_id, total, unleased, wanted)"
	           " VALUES (%u, %u, %" PRId64 ", %" PRId64 ", 0)", p->a, p->s, p->total, p->total))
		return RC_SQL;
	if (c->c_rows == 1)
		return FLASH_OK;
	if (q_exec(c, m, "UPDATE fs_pool SET unleased = unleased + (%" PRId64 " - total), total = %" PRId64
	           " WHERE activity_id = %u AND sku_id = %u AND unleased + (%" PRId64 " - total) >= 0",
	           p->total, p->total, p->a, p->s, p->total))
		return RC_SQL;
	return c->c_rows == 1 ? FLASH_OK : FLASH_ESOLD_OUT;
}

int central_pool_set(central_t *c, uint32_t activity_id, uint32_t sku_id, int64_t total)
{
	if (!c || !activity_id || !sku_id || total < 0 || total > (int64_t)FLASH_UNITS_MAX)
		return FLASH_EINVAL;
	struct pool_arg p = { .a = activity_id, .s = sku_id, .total = total };
	return run(c, key_sku(activity_id, sku_id), pool_set_once, NULL, &p);
}

static int pool_get_once(central_t *c, MYSQL *m, void *arg)
{
	struct pool_arg *p = arg;
	struct qrow r;
	long n = q_one(c, m, &r, "SELECT p.total, p.unleased, p.wanted,"
	               " (SELECT COALESCE(SUM(units - returned), 0) FROM fs_lease l WHERE l.activity_id ="
	               " p.activity_id AND l.sku_id = p.sku_id AND l.state IN ('open','fenced')),"
	               " (SELECT COALESCE(SUM(sold_at_close), 0) FROM fs_lease l WHERE l.activity_id ="
	               " p.activity_id AND l.sku_id = p.sku_id AND l.state = 'closed')"
	               " FROM fs_pool p WHERE p.activity_id = %u AND p.sku_id = %u", p->a, p->s);
	if (n < 0)
		return RC_SQL;
	if (n == 0)
		return FLASH_ENOT_FOUND;
	*p->row = (struct pool_row){ .activity_id = p->a, .sku_id = p->s, .total = qi(&r, 0),
	                                   .unleased = qi(&r, 1), .wanted = qi(&r, 2), .leased = qi(&r, 3),
	                                   .sold_closed = qi(&r, 4) };
	return FLASH_OK;
}

int central_pool_get(central_t *c, uint32_t activity_id, uint32_t sku_id,
                           struct pool_row *out)
{
	if (!c || !out)
		return FLASH_EINVAL;
	struct pool_arg p = { .a = activity_id, .s = sku_id, .row = out };
	return run(c, key_sku(activity_id, sku_id), pool_get_once, NULL, &p);
}

static int want_once(central_t *c, MYSQL *m, void *arg)
{
	struct pool_arg *p = arg;
	if (p->units > 0)
		return q_exec(c, m, "UPDATE fs_pool SET wanted = GREATEST(wanted, %" PRId64 ") WHERE activity_id = %u"
		              " AND sku_id = %u", p->units, p->a, p->s) ? RC_SQL : FLASH_OK;
	return q_exec(c, m, "UPDATE fs_pool SET wanted = 0 WHERE activity_id = %u AND sku_id = %u", p->a, p->s)
	       ? RC_SQL : FLASH_OK;
}

int central_want(central_t *c, uint32_t activity_id, uint32_t sku_id, int64_t units)
{
	if (!c || units < 0)
		return FLASH_EINVAL;
	struct pool_arg p = { .a = activity_id, .s = sku_id, .units = units };
	return run(c, key_sku(activity_id, sku_id), want_once, NULL, &p);
}

/* ------------------------------------------------------------------------
 * 5. Boxes
 * ------------------------------------------------------------------------ */

struct box_arg {
	uint32_t box, epoch, stale_s;
	int only_if_live, force;
	uint64_t lsn;
	struct box_reg *reg;
	uint32_t new_epoch, leases;
};

static int register_once(central_t *c, MYSQL *m, void *arg)
{
	struct box_arg *b = arg;
	struct qrow r;
	memset(b->reg, 0, sizeof *b->reg);
	if (q_exec(c, m, "START TRANSACTION"))
		return RC_SQL;
	long n = q_one(c, m, &r, "SELECT epoch, state FROM fs_box WHERE box_id = %u FOR UPDATE", b->box);
	if (n < 0)
		return RC_SQL;
	if (n == 0) {
		if (q_exec(c, m, "INSERT INTO fs_box (box_id, epoch, state, heartbeat, applied_lsn)"
		           " VALUES (%u, 1, 'live', NOW(6), 0)", b->box))
			return RC_SQL;
		b->reg->epoch = 1;
	} else {
		uint32_t old = (uint32_t)qi(&r, 0);
		int fenced = strcmp(r.v[1], "fenced") == 0;
		if (fenced && b->only_if_live) {
			if (q_exec(c, m, "ROLLBACK"))
				return RC_SQL;
			b->reg->old_epoch = old;
			b->reg->was_fenced = 1;
			return FLASH_EFENCED;
		}
		if (old >= FLASH_EPOCH_MAX) {
			(void)q_exec(c, m, "ROLLBACK");
			snprintf(c->c_err, sizeof c->c_err, "box %u: epoch %u is the largest", b->box, old);
			return FLASH_EINVAL;
		}
		/* conditional on the epoch read: a fence committed on another
		 * node meanwhile fails this at certification (1213) */
		if (q_exec(c, m, "UPDATE fs_box SET epoch = epoch + 1, state = 'live', heartbeat = NOW(6)"
		           " WHERE box_id = %u AND epoch = %u", b->box, old))
			return RC_SQL;
		if (c->c_rows != 1) {
			(void)q_exec(c, m, "ROLLBACK");
			c->c_errno = ER_LOCK_DEADLOCK;
			snprintf(c->c_err, sizeof c->c_err, "box %u: epoch moved under the registration", b->box);
			return RC_SQL;
		}
		b->reg->epoch = old + 1;
		b->reg->old_epoch = old;
		b->reg->was_fenced = fenced;
		if (!fenced) {
			if (q_exec(c, m, "UPDATE fs_lease SET epoch = %u WHERE box_id = %u AND state = 'open'",
			           old + 1, b->box))
				return RC_SQL;
			b->reg->adopted = (uint32_t)c->c_rows;
		}
	}
	n = q_one(c, m, &r, "SELECT COUNT(*) FROM fs_lease WHERE box_id = %u AND state = 'fenced'", b->box);
	if (n < 0)
		return RC_SQL;
	b->reg->fenced_leases = (uint32_t)qi(&r, 0);
	if (fault_at(c, CENTRAL_BEFORE_COMMIT))
		return RC_SQL;
	if (q_exec(c, m, "COMMIT"))
		return RC_SQL;
	return FLASH_OK;
}

int central_register(central_t *c, uint32_t box_id, int only_if_live,
                           struct box_reg *out)
{
	if (!c || !out || box_id == 0 || box_id > FLASH_BOX_ID_MAX)
		return FLASH_EINVAL;
	struct box_arg b = { .box = box_id, .only_if_live = only_if_live, .reg = out };
	return run(c, key_box(box_id), register_once, NULL, &b);
}

/* Why did a statement conditional on (box, epoch, live) match nothing? */
static int box_refusal(central_t *c, MYSQL *m, uint32_t box, uint32_t epoch)
{
	struct qrow r;
	long n = q_one(c, m, &r, "SELECT epoch, state FROM fs_box WHERE box_id = %u", box);
	if (n < 0)
		return RC_SQL;
	if (n == 0 || (uint32_t)qi(&r, 0) != epoch || strcmp(r.v[1], "live") != 0)
		return FLASH_EFENCED;
	return 0;
}

static int heartbeat_once(central_t *c, MYSQL *m, void *arg)
{
	struct box_arg *b = arg;
	if (q_exec(c, m, "UPDATE fs_box SET heartbeat = NOW(6), applied_lsn = GREATEST(applied_lsn, %" PRIu64 ")"
	           " WHERE box_id = %u AND epoch = %u AND state = 'live'", b->lsn, b->box, b->epoch))
		return RC_SQL;
	return c->c_rows == 1 ? FLASH_OK : FLASH_EFENCED;
}

int central_heartbeat(central_t *c, uint32_t box_id, uint32_t epoch, uint64_t applied_lsn)
{
	if (!c || !box_id)
		return FLASH_EINVAL;
	struct box_arg b = { .box = box_id, .epoch = epoch, .lsn = applied_lsn };
	return run(c, key_box(box_id), heartbeat_once, NULL, &b);
}

static int fence_once(central_t *c, MYSQL *m, void *arg)
{
	struct box_arg *b = arg;
	struct qrow r;
	if (q_exec(c, m, "START TRANSACTION"))
		return RC_SQL;
	long n = q_one(c, m, &r, "SELECT epoch, state FROM fs_box WHERE box_id = %u", b->box);
	if (n < 0)
		return RC_SQL;
	if (n == 0 || strcmp(r.v[1], "fenced") == 0) {
		if (q_exec(c, m, "ROLLBACK"))
			return RC_SQL;
		b->new_epoch = (uint32_t)qi(&r, 0);
		return n == 0 ? FLASH_ENOT_FOUND : FLASH_EEXIST;
	}
	uint32_t epoch = (uint32_t)qi(&r, 0);
	if (b->force)
		n = q_exec(c, m, "UPDATE fs_box SET epoch = epoch + 1, state = 'fenced' WHERE box_id = %u"
		           " AND epoch = %u", b->box, epoch);
	else
		n = q_exec(c, m, "UPDATE fs_box SET epoch = epoch + 1, state = 'fenced' WHERE box_id = %u"
		           " AND epoch = %u AND heartbeat < NOW(6) - INTERVAL %u SECOND", b->box, epoch, b->stale_s);
	if (n)
		return RC_SQL;
	if (c->c_rows != 1) {
		if (q_exec(c, m, "ROLLBACK"))
			return RC_SQL;
		return FLASH_EBUSY;
	}
	if (q_exec(c, m, "UPDATE fs_lease SET state = 'fenced' WHERE box_id = %u AND state = 'open'", b->box))
		return RC_SQL;
	b->leases = (uint32_t)c->c_rows;
	if (q_exec(c, m, "COMMIT"))
		return RC_SQL;
	b->new_epoch = epoch + 1;
	return FLASH_OK;
}

/* A fence of unknown fate committed if the box reads fenced. */
static int fence_check(central_t *c, MYSQL *m, void *arg)
{
	struct box_arg *b = arg;
	struct qrow r;
	long n = q_one(c, m, &r, "SELECT epoch, state FROM fs_box WHERE box_id = %u", b->box);
	if (n < 0)
		return RC_SQL;
	if (n == 1 && strcmp(r.v[1], "fenced") == 0) {
		b->new_epoch = (uint32_t)qi(&r, 0);
		return 1;
	}
	return 0;
}

int central_fence(central_t *c, uint32_t box_id, uint32_t stale_s, int force,
                        uint32_t *new_epoch, uint32_t *leases)
{
	if (!c || !box_id)
		return FLASH_EINVAL;
	struct box_arg b = { .box = box_id, .stale_s = stale_s, .force = force };
	int rc = run(c, key_box(box_id), fence_once, fence_check, &b);
	if (new_epoch)
		*new_epoch = b.new_epoch;
	if (leases)
		*leases = b.leases;
	return rc;
}

struct list_arg {
	struct box_row *boxes;
	struct lease_row *leases;
	size_t n, cap;
	int oom;
	uint32_t box;
	const char *state;
};

static int box_row_cb(void *arg, const struct qrow *r)
{
	struct list_arg *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->boxes, cap * sizeof *l->boxes);
		if (!p) {
			l->oom = 1;
			return 1;
		}
		l->boxes = p;
		l->cap = cap;
	}
	struct box_row *b = &l->boxes[l->n++];
	memset(b, 0, sizeof *b);
	b->box_id = (uint32_t)qi(r, 0);
	b->epoch = (uint32_t)qi(r, 1);
	snprintf(b->state, sizeof b->state, "%.7s", r->v[2]);
	b->heartbeat_age_ms = qi(r, 3) / 1000;
	b->applied_lsn = (uint64_t)qi(r, 4);
	return 0;
}

static int boxes_once(central_t *c, MYSQL *m, void *arg)
{
	struct list_arg *l = arg;
	l->n = 0;
	long n = q_rows(c, m, box_row_cb, l, "SELECT box_id, epoch, state,"
	                " TIMESTAMPDIFF(MICROSECOND, heartbeat, NOW(6)), applied_lsn FROM fs_box ORDER BY box_id");
	if (n < 0)
		return RC_SQL;
	return l->oom ? FLASH_ENOMEM : FLASH_OK;
}

int central_boxes(central_t *c, struct box_row **out, size_t *n)
{
	if (!c || !out || !n)
		return FLASH_EINVAL;
	struct list_arg l = { 0 };
	int rc = run(c, 0, boxes_once, NULL, &l);
	if (rc != FLASH_OK) {
		free(l.boxes);
		return rc;
	}
	*out = l.boxes;
	*n = l.n;
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 6. Leases
 * ------------------------------------------------------------------------ */

#define LEASE_COLS "lease_id, box_id, epoch, activity_id, sku_id, units, returned, " \
                   "COALESCE(sold_at_close, 0), state"

static void lease_from(struct lease_row *l, const struct qrow *r)
{
	memset(l, 0, sizeof *l);
	l->lease_id = strtoull(r->v[0], NULL, 10);
	l->box_id = (uint32_t)qi(r, 1);
	l->epoch = (uint32_t)qi(r, 2);
	l->activity_id = (uint32_t)qi(r, 3);
	l->sku_id = (uint32_t)qi(r, 4);
	l->units = qi(r, 5);
	l->returned = qi(r, 6);
	l->sold_at_close = qi(r, 7);
	snprintf(l->state, sizeof l->state, "%.7s", r->v[8]);
}

/* Read lease @p id: 1 found, 0 not, RC_SQL. */
static int lease_read(central_t *c, MYSQL *m, uint64_t id, struct lease_row *out)
{
	struct qrow r;
	long n = q_one(c, m, &r, "SELECT " LEASE_COLS " FROM fs_lease WHERE lease_id = %" PRIu64, id);
	if (n < 0)
		return RC_SQL;
	if (n == 1)
		lease_from(out, &r);
	return n == 1;
}

struct lease_arg {
	uint32_t box, epoch, a, s;
	uint64_t id;
	int64_t units, before, sold;
	int64_t returned_out;
};

/* The lease row exists with this take's content (1), another (FLASH_EEXIST), none (0). */
static int take_check(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	struct lease_row l;
	int rc = lease_read(c, m, t->id, &l);
	if (rc != 1)
		return rc;
	if (l.box_id != t->box || l.activity_id != t->a || l.sku_id != t->s || l.units != t->units)
		return FLASH_EEXIST;
	return 1;
}

static int take_once(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	if (q_exec(c, m, "START TRANSACTION"))
		return RC_SQL;
	/* The lease row first: its id makes the transaction commit once. */
	if (q_exec(c, m, "INSERT INTO fs_lease (lease_id, box_id, epoch, activity_id, sku_id, units, returned,"
	           " state, created) VALUES (%" PRIu64 ", %u, %u, %u, %u, %" PRId64 ", 0, 'open', NOW(6))",
	           t->id, t->box, t->epoch, t->a, t->s, t->units)) {
		if (mdb_err_class(c->c_errno) != MDB_ERR_DUP)
			return RC_SQL;
		if (q_exec(c, m, "ROLLBACK"))
			return RC_SQL;
		int rc = take_check(c, m, t);
		return rc == 1 ? FLASH_OK : rc == 0 ? FLASH_EEXIST : rc;
	}
	/* The one conditional statement: epoch, liveness and stock decided
	 * by MariaDB; the box row is written so Galera certifies it. */
	if (q_exec(c, m, "UPDATE fs_box b JOIN fs_pool p ON p.activity_id = %u AND p.sku_id = %u"
	           " SET p.unleased = p.unleased - %" PRId64 ", p.wanted = GREATEST(p.wanted - %" PRId64 ", 0),"
	           " b.heartbeat = NOW(6)"
	           " WHERE b.box_id = %u AND b.epoch = %u AND b.state = 'live' AND p.unleased >= %" PRId64,
	           t->a, t->s, t->units, t->units, t->box, t->epoch, t->units))
		return RC_SQL;
	if (c->c_rows != 2) {
		if (q_exec(c, m, "ROLLBACK"))
			return RC_SQL;
		int rc = box_refusal(c, m, t->box, t->epoch);
		return rc ? rc : FLASH_ESOLD_OUT;
	}
	if (fault_at(c, CENTRAL_BEFORE_COMMIT))
		return RC_SQL;
	if (q_exec(c, m, "COMMIT"))
		return RC_SQL;
	if (fault_at(c, CENTRAL_AFTER_COMMIT))
		return RC_SQL;
	return FLASH_OK;
}

int central_take(central_t *c, uint32_t box_id, uint32_t epoch, uint32_t activity_id,
                       uint32_t sku_id, uint64_t lease_id, int64_t units)
{
	if (!c || !box_id || !activity_id || !sku_id || !lease_id || units <= 0 ||
	    units > (int64_t)FLASH_UNITS_MAX)
		return FLASH_EINVAL;
	struct lease_arg t = { .box = box_id, .epoch = epoch, .a = activity_id, .s = sku_id,
	                       .id = lease_id, .units = units };
	return run(c, key_sku(activity_id, sku_id), take_once, take_check, &t);
}

/* A return of unknown fate committed if the lease reads before + k. */
static int return_check(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	struct lease_row l;
	int rc = lease_read(c, m, t->id, &l);
	if (rc != 1)
		return rc;
	return l.returned == t->before + t->units;
}

static int return_once(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	if (q_exec(c, m, "UPDATE fs_lease l JOIN fs_box b ON b.box_id = l.box_id"
	           " JOIN fs_pool p ON p.activity_id = l.activity_id AND p.sku_id = l.sku_id"
	           " SET l.returned = %" PRId64 ", p.unleased = p.unleased + %" PRId64 ", b.heartbeat = NOW(6)"
	           " WHERE l.lease_id = %" PRIu64 " AND l.box_id = %u AND l.activity_id = %u AND l.sku_id = %u"
	           " AND l.returned = %" PRId64 " AND l.units >= %" PRId64 " AND l.state = 'open'"
	           " AND l.epoch = b.epoch AND b.epoch = %u AND b.state = 'live'",
	           t->before + t->units, t->units, t->id, t->box, t->a, t->s, t->before, t->before + t->units,
	           t->epoch))
		return RC_SQL;
	if (c->c_rows == 3) {
		if (fault_at(c, CENTRAL_AFTER_COMMIT))
			return RC_SQL;
		return FLASH_OK;
	}
	/* Nothing matched: a replay of a return that committed, a stale
	 * epoch, or a return the lease cannot take. */
	int rc = return_check(c, m, t);
	if (rc == 1)
		return FLASH_OK;
	if (rc != 0)
		return rc;
	rc = box_refusal(c, m, t->box, t->epoch);
	return rc ? rc : FLASH_ELEASE;
}

int central_return(central_t *c, uint32_t box_id, uint32_t epoch, uint32_t activity_id,
                         uint32_t sku_id, uint64_t lease_id, int64_t returned_before, int64_t units)
{
	if (!c || !box_id || !lease_id || units <= 0 || returned_before < 0)
		return FLASH_EINVAL;
	struct lease_arg t = { .box = box_id, .epoch = epoch, .a = activity_id, .s = sku_id,
	                       .id = lease_id, .units = units, .before = returned_before };
	return run(c, key_sku(activity_id, sku_id), return_once, return_check, &t);
}

static int return_closed_check(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	struct lease_row l;
	int rc = lease_read(c, m, t->id, &l);
	if (rc != 1)
		return rc;
	return strcmp(l.state, "closed") == 0 && l.sold_at_close == t->before - t->units;
}

static int return_closed_once(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	if (q_exec(c, m, "UPDATE fs_lease l JOIN fs_box b ON b.box_id = l.box_id"
	           " JOIN fs_pool p ON p.activity_id = l.activity_id AND p.sku_id = l.sku_id"
	           " SET l.sold_at_close = %" PRId64 ", l.returned = l.returned + %" PRId64 ","
	           " p.unleased = p.unleased + %" PRId64 ", b.heartbeat = NOW(6)"
	           " WHERE l.lease_id = %" PRIu64 " AND l.box_id = %u AND l.activity_id = %u AND l.sku_id = %u"
	           " AND l.state = 'closed' AND l.sold_at_close = %" PRId64 " AND b.epoch = %u AND b.state = 'live'",
	           t->before - t->units, t->units, t->units, t->id, t->box, t->a, t->s, t->before, t->epoch))
		return RC_SQL;
	if (c->c_rows == 3)
		return FLASH_OK;
	int rc = return_closed_check(c, m, t);
	if (rc == 1)
		return FLASH_OK;
	if (rc != 0)
		return rc;
	rc = box_refusal(c, m, t->box, t->epoch);
	return rc ? rc : FLASH_ELEASE;
}

int central_return_closed(central_t *c, uint32_t box_id, uint32_t epoch, uint32_t activity_id,
                                uint32_t sku_id, uint64_t lease_id, int64_t sold_before, int64_t units)
{
	if (!c || !box_id || !lease_id || units <= 0 || sold_before < units)
		return FLASH_EINVAL;
	struct lease_arg t = { .box = box_id, .epoch = epoch, .a = activity_id, .s = sku_id,
	                       .id = lease_id, .units = units, .before = sold_before };
	return run(c, key_sku(activity_id, sku_id), return_closed_once, return_closed_check, &t);
}

static int close_once(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	if (q_exec(c, m, "UPDATE fs_lease l JOIN fs_box b ON b.box_id = l.box_id"
	           " SET l.state = 'closed', l.sold_at_close = l.units - l.returned, l.closed = NOW(6),"
	           " b.heartbeat = NOW(6)"
	           " WHERE l.lease_id = %" PRIu64 " AND l.box_id = %u AND l.state = 'open' AND l.epoch = b.epoch"
	           " AND b.epoch = %u AND b.state = 'live'", t->id, t->box, t->epoch))
		return RC_SQL;
	if (c->c_rows == 2)
		return FLASH_OK;
	struct lease_row l;
	int rc = lease_read(c, m, t->id, &l);
	if (rc == RC_SQL)
		return RC_SQL;
	if (rc == 1 && strcmp(l.state, "closed") == 0)
		return FLASH_OK;
	rc = box_refusal(c, m, t->box, t->epoch);
	return rc ? rc : FLASH_ELEASE;
}

int central_lease_close(central_t *c, uint32_t box_id, uint32_t epoch, uint64_t lease_id)
{
	if (!c || !box_id || !lease_id)
		return FLASH_EINVAL;
	struct lease_row l;
	int rc = central_lease_get(c, lease_id, &l);
	if (rc != FLASH_OK)
		return rc == FLASH_ENOT_FOUND ? FLASH_ELEASE : rc;
	struct lease_arg t = { .box = box_id, .epoch = epoch, .id = lease_id };
	return run(c, key_sku(l.activity_id, l.sku_id), close_once, NULL, &t);
}

struct get_arg {
	uint64_t id;
	struct lease_row *row;
};

static int get_once(central_t *c, MYSQL *m, void *arg)
{
	struct get_arg *g = arg;
	int rc = lease_read(c, m, g->id, g->row);
	return rc == 1 ? FLASH_OK : rc == 0 ? FLASH_ENOT_FOUND : rc;
}

int central_lease_get(central_t *c, uint64_t lease_id, struct lease_row *out)
{
	if (!c || !out)
		return FLASH_EINVAL;
	struct get_arg g = { .id = lease_id, .row = out };
	return run(c, key_box((uint32_t)(lease_id >> 48)), get_once, NULL, &g);
}

static int lease_row_cb(void *arg, const struct qrow *r)
{
	struct list_arg *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->leases, cap * sizeof *l->leases);
		if (!p) {
			l->oom = 1;
			return 1;
		}
		l->leases = p;
		l->cap = cap;
	}
	lease_from(&l->leases[l->n++], r);
	return 0;
}

static int leases_once(central_t *c, MYSQL *m, void *arg)
{
	struct list_arg *l = arg;
	char where[96] = "1";
	l->n = 0;
	if (l->box)
		snprintf(where, sizeof where, "box_id = %u", l->box);
	long n;
	if (l->state)
		n = q_rows(c, m, lease_row_cb, l, "SELECT " LEASE_COLS " FROM fs_lease WHERE %s AND state = '%s'"
		           " ORDER BY lease_id", where, l->state);
	else
		n = q_rows(c, m, lease_row_cb, l, "SELECT " LEASE_COLS " FROM fs_lease WHERE %s ORDER BY lease_id",
		           where);
	if (n < 0)
		return RC_SQL;
	return l->oom ? FLASH_ENOMEM : FLASH_OK;
}

int central_leases(central_t *c, uint32_t box_id, const char *state,
                         struct lease_row **out, size_t *n)
{
	if (!c || !out || !n)
		return FLASH_EINVAL;
	if (state && strcmp(state, "open") && strcmp(state, "closed") && strcmp(state, "fenced"))
		return FLASH_EINVAL;
	struct list_arg l = { .box = box_id, .state = state };
	int rc = run(c, key_box(box_id), leases_once, NULL, &l);
	if (rc != FLASH_OK) {
		free(l.leases);
		return rc;
	}
	*out = l.leases;
	*n = l.n;
	return FLASH_OK;
}

/*
 * Reclaim: one transaction.  The fenced and closed leases of (box, sku) are
 * read with FOR UPDATE; sold minus the closed leases' sold_at_close is
 * spread over the fenced ones, oldest first; each is closed by a statement
 * conditional on its state and returned count as read, and the pool gets
 * the sum of the rests.  Safe to repeat: a second run finds no fenced lease.
 */
static int reclaim_once(central_t *c, MYSQL *m, void *arg)
{
	struct lease_arg *t = arg;
	struct list_arg l = { 0 };
	t->returned_out = 0;
	if (q_exec(c, m, "START TRANSACTION"))
		return RC_SQL;
	long n = q_rows(c, m, lease_row_cb, &l, "SELECT " LEASE_COLS " FROM fs_lease WHERE box_id = %u AND"
	                " activity_id = %u AND sku_id = %u AND state IN ('fenced','closed') ORDER BY lease_id"
	                " FOR UPDATE", t->box, t->a, t->s);
	if (n < 0 || l.oom) {
		free(l.leases);
		return l.oom ? FLASH_ENOMEM : RC_SQL;
	}
	int64_t sold = t->sold, held = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (strcmp(l.leases[i].state, "closed") == 0)
			sold -= l.leases[i].sold_at_close;
		else
			held += l.leases[i].units - l.leases[i].returned;
	}
	int rc = FLASH_OK;
	if (sold < 0 || sold > held) {
		snprintf(c->c_err, sizeof c->c_err, "box %u sku %u/%u: %" PRId64 " sold under fenced leases that"
		         " hold %" PRId64, t->box, t->a, t->s, sold, held);
		rc = FLASH_ELEASE;
		goto rollback;
	}
	int64_t give = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct lease_row *x = &l.leases[i];
		if (strcmp(x->state, "fenced") != 0)
			continue;
		int64_t hold = x->units - x->returned;
		int64_t s = sold < hold ? sold : hold;
		sold -= s;
		int64_t rest = hold - s;
		if (q_exec(c, m, "UPDATE fs_lease SET state = 'closed', returned = %" PRId64 ", sold_at_close = %"
		           PRId64 ", closed = NOW(6) WHERE lease_id = %" PRIu64 " AND state = 'fenced' AND"
		           " returned = %" PRId64, x->returned + rest, s, x->lease_id, x->returned)) {
			free(l.leases);
			return RC_SQL;
		}
		if (c->c_rows != 1) {
			/* moved under us: retry the whole reclaim */
			uint64_t moved = x->lease_id;   /* x points into l.leases */

			(void)q_exec(c, m, "ROLLBACK");
			free(l.leases);
			c->c_errno = ER_LOCK_DEADLOCK;
			snprintf(c->c_err, sizeof c->c_err, "lease %" PRIu64 " moved under the reclaim", moved);
			return RC_SQL;
		}
		give += rest;
	}
	free(l.leases);
	l.leases = NULL;
	if (give > 0 && q_exec(c, m, "UPDATE fs_pool SET unleased = unleased + %" PRId64 " WHERE activity_id = %u"
	                       " AND sku_id = %u", give, t->a, t->s))
		return RC_SQL;
	if (q_exec(c, m, "COMMIT"))
		return RC_SQL;
	t->returned_out = give;
	return FLASH_OK;
rollback:
	free(l.leases);
	if (q_exec(c, m, "ROLLBACK"))
		return RC_SQL;
	return rc;
}

int central_reclaim(central_t *c, uint32_t box_id, uint32_t activity_id, uint32_t sku_id,
                          int64_t sold, int64_t *returned)
{
	if (!c || !box_id || sold < 0)
		return FLASH_EINVAL;
	struct lease_arg t = { .box = box_id, .a = activity_id, .s = sku_id, .sold = sold };
	int rc = run(c, key_sku(activity_id, sku_id), reclaim_once, NULL, &t);
	if (returned)
		*returned = rc == FLASH_OK ? t.returned_out : 0;
	return rc;
}
