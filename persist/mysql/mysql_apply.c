/*
 * mysql_apply.c -- the MySQL (MariaDB) applier.
 *
 * The contract is in mysql_apply.h.  Divisions of this file:
 *
 *   1. Small tools          string builder, integer formatting, logging
 *   2. Connection           URL parsing and masking, connect, error classes
 *   3. Schema               CREATE TABLE IF NOT EXISTS for every table, and the
 *                           migrations an older database gets (ADD COLUMN IF NOT EXISTS)
 *   4. Activity cache       activity id -> limit scope, for orders' scope keys
 *   5. Statement pipeline   multi-statement round trips with expected row counts
 *   6. Fast path            a batch as multi-row and aggregated statements, in runs
 *   7. Slow path            record by record under savepoints, refusing conflicts
 *                           (a cart's lines under one more, all or nothing)
 *   8. Carts                a cart's lines gathered, applied all or nothing, kept
 *                           across batches in cart_pending, dropped when torn
 *   9. Batches              transaction, applied LSN, conflicts, retry with backoff
 *
 * Why two paths: conflicts should never happen (the segment enforces the same
 * rules first), so a batch is almost always applied by a handful of large
 * statements.  When MySQL refuses one of them we do not know which record was
 * at fault, so the batch is rolled back to a savepoint and replayed one record
 * at a time; the result is the same as if every record had been applied alone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "crash.h"
#include "mysql_apply.h"
#include "mysql_err.h"
#include "wal.h"

/* ------------------------------------------------------------------------
 * 1. Small tools
 * ------------------------------------------------------------------------ */

struct sbuf {
	char  *sb_p;
	size_t sb_len;
	size_t sb_cap;
	int    sb_oom;              /* sticky: an allocation failed */
};

static void sb_reset(struct sbuf *b) { b->sb_len = 0; if (b->sb_p) b->sb_p[0] = 0; }

static int sb_reserve(struct sbuf *b, size_t more)
{
	if (b->sb_len + more + 1 <= b->sb_cap)
		return 0;
	size_t cap = b->sb_cap ? b->sb_cap : 4096;
	while (cap < b->sb_len + more + 1)
		cap *= 2;
	char *p = realloc(b->sb_p, cap);
	if (!p) {
		b->sb_oom = 1;
		return -1;
	}
	b->sb_p = p;
	b->sb_cap = cap;
	return 0;
}

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (sb_reserve(b, n))
		return;
	memcpy(b->sb_p + b->sb_len, s, n);
	b->sb_len += n;
	b->sb_p[b->sb_len] = 0;
}

static void sb_str(struct sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_u64(struct sbuf *b, uint64_t v)
{
	char tmp[24];
	int i = (int)sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	sb_add(b, tmp + i, sizeof tmp - (size_t)i);
}

static void sb_i64(struct sbuf *b, int64_t v)
{
	if (v < 0) {
		sb_add(b, "-", 1);
		sb_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		sb_u64(b, (uint64_t)v);
	}
}

__attribute__((format(printf, 2, 3)))
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || sb_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->sb_p + b->sb_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->sb_len += (size_t)n;
}

static void sb_free(struct sbuf *b) { free(b->sb_p); memset(b, 0, sizeof *b); }

/* Per-(activity, sku) aggregate of one batch, for the fast path. */
struct skuagg {
	uint32_t sa_activity;
	uint32_t sa_sku;
	int      sa_used;
	int64_t  sa_avail;          /* running change of `available` */
	int64_t  sa_resv;           /* running change of `reserved` */
	int64_t  sa_sold;           /* running change of `sold` */
	int64_t  sa_total;          /* running change of `total` */
	int64_t  sa_need_avail;     /* largest running deficit of `available` */
	int64_t  sa_need_resv;      /* largest running deficit of `reserved` */
	int64_t  sa_need_sold;      /* largest running deficit of `sold` */
	uint64_t sa_lsn;            /* last LSN touching the row */
};

struct mdb {
	MYSQL   *mm_conn;           /* NULL while disconnected */
	int      mm_ever;           /* connected at least once */
	/* where to connect */
	char    *mm_host;
	char    *mm_user;
	char    *mm_pass;           /* wiped at close; never printed */
	char    *mm_db;
	char    *mm_socket;
	unsigned mm_port;
	char    *mm_defaults_file;
	char    *mm_where;          /* masked, printable */
	char    *mm_stream;
	char    *mm_stream_sql;     /* stream name as a quoted SQL literal */
	uint32_t mm_connect_timeout_s;
	uint32_t mm_rw_timeout_s;
	size_t   mm_max_packet;     /* flush the pipeline below this */
	plog_fn mm_log;
	void    *mm_log_arg;
	int      mm_log_level;
	int      mm_gaps_ok;        /* accept LSN holes (opts.lsn_gaps_ok) */
	int      mm_require_db;     /* refuse an unknown database (opts.require_db) */
	int      mm_create_db;      /* the URL says create_db=1 */
	int      mm_db_implicit;    /* the URL named no database: "flashstock" */
	int      mm_no_schema;      /* opts.no_schema: create no applier table */
	/* activity cache: open addressing, key 0 = empty */
	uint32_t *mm_act_id;
	uint8_t  *mm_act_scope;
	size_t    mm_act_cap;
	size_t    mm_act_n;
	/* per-batch scratch */
	struct skuagg *mm_agg;
	size_t    mm_agg_cap;
	uint64_t *mm_freed;         /* fast_run_end(): limit keys freed in the run */
	size_t    mm_freed_cap;
	struct sbuf mm_sql;         /* the pipeline's pending statements */
	long     *mm_expect;        /* expected affected rows per pending statement, -1 = any */
	size_t    mm_expect_n;
	size_t    mm_expect_cap;
	struct sbuf mm_tmp;
	struct lsn_record *mm_work; /* carts: the batch as it is applied (cart_prepare) */
	size_t    mm_work_cap;
	struct lsn_record *mm_all;  /* carts: cart_pending's rows, then the batch */
	int32_t  *mm_gid;           /* carts: per mm_all record, its group or CART_NONE */
	size_t    mm_all_cap;
	struct cart_group *mm_grp;  /* carts: the groups of mm_all */
	size_t    mm_grp_cap;
	long      mm_pend_rows;     /* rows cart_pending holds for the stream; -1 unknown */
	long      mm_pend_next;     /* ... once the batch being applied commits */
	struct conflict *mm_confl;  /* conflicts of the batch being applied */
	size_t    mm_confl_n;
	size_t    mm_confl_cap;
	/* last error */
	unsigned  mm_errno;
	char      mm_error[256];
	struct mdb_stats mm_stats;
};

static void mlog(mdb_t *m, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void mlog(mdb_t *m, int level, const char *fmt, ...)
{
	if (level > m->mm_log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (m->mm_log) {
		plog_v(m->mm_log, m->mm_log_arg, level, fmt, ap);
		va_end(ap);
		return;
	}
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	static const char *names[] = { "ERROR", "WARN", "INFO" };
	fprintf(stderr, "flashstock mysql: %s %s\n", names[level < 0 ? 0 : level > 2 ? 2 : level], msg);
}

void mdb_logf(mdb_t *m, int level, const char *fmt, ...)
{
	if (!m)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	mlog(m, level, "%s", msg);
}

const char *conflict_name(int kind)
{
	switch (kind) {
	case CONFLICT_DUP_ORDER: return "duplicate_order";
	case CONFLICT_LIMIT:     return "user_limit";
	case CONFLICT_OVERSELL:  return "oversell";
	case CONFLICT_CANCEL:    return "cancel";
	case CONFLICT_RESTOCK:   return "restock";
	case CONFLICT_CATALOG:   return "catalog";
	case CONFLICT_INVALID:   return "invalid";
	case CONFLICT_CONFIRM:   return "confirm";
	case CONFLICT_EXPIRE:    return "expire";
	default:                       return "unknown";
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------------
 * 2. Connection
 * ------------------------------------------------------------------------ */

static int hexval(int c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..n) into a new string; NULL on bad escapes or OOM. */
static char *pct_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			out[j++] = s[i];
			continue;
		}
		int hi = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
		int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		out[j++] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[j] = 0;
	return out;
}

/*
 * The whole user info goes: in "mysql://user:pass@host/db" the part
 * "user:pass" is printed as "***".  The user info ends at the LAST '@' of the URL,
 * not of the authority: a password with a '/', '?' or '#' that was not
 * percent-encoded would otherwise end the authority early and be printed
 * as a host.  A '@' further on (in a socket path) only hides more.
 */
void mdb_url_mask(const char *url, char *buf, size_t len)
{
	if (!buf || len == 0)
		return;
	if (!url) {
		snprintf(buf, len, "(none)");
		return;
	}
	const char *auth = strstr(url, "://");
	auth = auth ? auth + 3 : url;
	const char *at = strrchr(auth, '@');
	if (!at) {
		snprintf(buf, len, "%s", url);
		return;
	}
	snprintf(buf, len, "%.*s***%s", (int)(auth - url), url, at);
}

/* Say why a URL was refused (never quoting its user info); @return rc. */
__attribute__((format(printf, 4, 5)))
static int url_bad(char *why, size_t cap, int rc, const char *fmt, ...)
{
	if (why && cap) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#define URL_ESCAPE_HINT "a '/', '?', '#', '@' or '%%' in the user or password must be " \
                        "percent-encoded (%%2F %%3F %%23 %%40 %%25)"

/*
 * Parse mysql://[user[:pass]@][host[:port]]/[db][?socket=PATH] into m.
 * On FLASH_EMYSQL_CONFIG, @p why (may be NULL) says what is wrong, without
 * the user info.
 */
static int parse_url(mdb_t *m, const char *url, char *why, size_t cap)
{
	const char *p;
	if (!strncmp(url, "mysql://", 8))
		p = url + 8;
	else if (!strncmp(url, "mariadb://", 10))
		p = url + 10;
	else
		return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "it does not start with mysql:// or mariadb://");
	size_t alen = strcspn(p, "/?#");
	const char *at = NULL;
	for (size_t i = 0; i < alen; i++)
		if (p[i] == '@')
			at = p + i;
	if (!at && strchr(p + alen, '@'))
		return url_bad(why, cap, FLASH_EMYSQL_CONFIG, URL_ESCAPE_HINT);
	const char *hp = p;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);
		m->mm_user = pct_decode(p, ulen);
		if (!m->mm_user)
			return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "bad %%-escape in the user; "
			               URL_ESCAPE_HINT);
		if (colon) {
			m->mm_pass = pct_decode(colon + 1, (size_t)(at - colon - 1));
			if (!m->mm_pass)
				return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "bad %%-escape in the password; "
				               URL_ESCAPE_HINT);
		}
		hp = at + 1;
	}
	size_t hlen = (size_t)(p + alen - hp);
	const char *pc = memchr(hp, ':', hlen);
	if (pc) {
		char *end;
		errno = 0;
		unsigned long port = strtoul(pc + 1, &end, 10);
		if (errno || end != p + alen || port == 0 || port > 65535)
			return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "the port '%.*s' is not 1..65535",
			               (int)(p + alen - pc - 1 > 16 ? 16 : p + alen - pc - 1), pc + 1);
		m->mm_port = (unsigned)port;
		hlen = (size_t)(pc - hp);
	}
	m->mm_host = hlen ? pct_decode(hp, hlen) : strdup("localhost");
	if (!m->mm_host)
		return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "bad %%-escape in the host");
	const char *q = p + alen;
	if (*q == '/') {
		q++;
		size_t dlen = strcspn(q, "?#");
		if (dlen) {
			m->mm_db = pct_decode(q, dlen);
			if (!m->mm_db)
				return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "bad %%-escape in the database name");
		}
		q += dlen;
	}
	if (*q == '?') {
		q++;
		while (*q && *q != '#') {
			size_t kvlen = strcspn(q, "&#");
			const char *eq = memchr(q, '=', kvlen);
			if (!eq)
				return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "the query part '%.*s' is not key=value",
				               (int)(kvlen > 32 ? 32 : kvlen), q);
			size_t klen = (size_t)(eq - q);
			char *val = pct_decode(eq + 1, kvlen - klen - 1);
			if (!val)
				return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "bad %%-escape in the value of '%.*s'",
				               (int)(klen > 32 ? 32 : klen), q);
			if (klen == 6 && !strncmp(q, "socket", 6)) {
				free(m->mm_socket);
				m->mm_socket = val;
			} else if (klen == 9 && !strncmp(q, "create_db", 9)) {
				int yes = !strcmp(val, "1") || !strcmp(val, "yes") || !strcmp(val, "true");
				int no = !strcmp(val, "0") || !strcmp(val, "no") || !strcmp(val, "false");
				free(val);
				if (!yes && !no)
					return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "create_db takes 1 or 0");
				m->mm_create_db = yes;
			} else {
				free(val);
				return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "unknown query key '%.*s' (the "
				               "keys are socket=PATH and create_db=1)",
				               (int)(klen > 32 ? 32 : klen), q);
			}
			q += kvlen;
			if (*q == '&')
				q++;
		}
	} else if (*q && *q != '#') {
		return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "unexpected text after the host; "
		               URL_ESCAPE_HINT);
	}
	if (!m->mm_db) {
		m->mm_db_implicit = 1;
		if (!(m->mm_db = strdup("flashstock")))
			return FLASH_ENOMEM;
	}
	char masked[1024];
	mdb_url_mask(url, masked, sizeof masked);
	m->mm_where = strdup(masked);
	return m->mm_where ? FLASH_OK : FLASH_ENOMEM;
}

int mdb_url_check(const char *url, char *why, size_t cap)
{
	if (why && cap)
		why[0] = 0;
	if (!url)
		return url_bad(why, cap, FLASH_EINVAL, "no URL");
	mdb_t *m = calloc(1, sizeof *m);
	if (!m)
		return FLASH_ENOMEM;
	int rc = parse_url(m, url, why, cap);
	mdb_close(m);
	return rc;
}

/* Remember the connection's last error (message and number). */
static void take_error(mdb_t *m)
{
	if (m->mm_conn) {
		m->mm_errno = mysql_errno(m->mm_conn);
		snprintf(m->mm_error, sizeof m->mm_error, "%s", mysql_error(m->mm_conn));
	}
}

/* Error classes (mysql_err.h): is the connection gone, and does retrying
 * help?  A Galera node that is not ready (1047) is a retry, like a server
 * that is down: serve starts and the applier waits for it. */
static int err_is_conn_lost(unsigned e)
{
	return mdb_err_class(e) == MDB_ERR_CONN;
}

/* A record-level refusal: the slow path can find and skip the record. */
static int err_is_conflict(unsigned e)
{
	enum mdb_err k = mdb_err_class(e);
	return k == MDB_ERR_DUP || k == MDB_ERR_ROW;
}

static void disconnect(mdb_t *m)
{
	if (m->mm_conn) {
		mysql_close(m->mm_conn);
		m->mm_conn = NULL;
	}
}

/* Map the last error to a result code, dropping a dead connection. */
static int fail_rc(mdb_t *m)
{
	unsigned e = m->mm_errno;
	if (err_is_conn_lost(e))
		disconnect(m);
	if (mdb_err_retryable(e))
		return FLASH_EMYSQL_RETRY;
	return FLASH_EMYSQL;
}

/* Run one statement that returns no rows. */
static int exec(mdb_t *m, const char *sql)
{
	if (mysql_real_query(m->mm_conn, sql, strlen(sql))) {
		take_error(m);
		return -1;
	}
	MYSQL_RES *r = mysql_store_result(m->mm_conn);
	if (r)
		mysql_free_result(r);
	return 0;
}

static int schema_create(mdb_t *m);

/*
 * Connect if not connected.  Sets the session up (strict SQL mode, short lock
 * waits) and creates the database and schema if missing.
 * Returns FLASH_OK, FLASH_EMYSQL_RETRY (unreachable), FLASH_EMYSQL_CONFIG.
 */
/* A handle with the applier's timeouts and option file, not connected. */
static MYSQL *conn_init(const mdb_t *m)
{
	MYSQL *c = mysql_init(NULL);
	if (!c)
		return NULL;
	unsigned ct = m->mm_connect_timeout_s, rw = m->mm_rw_timeout_s;
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
	mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &rw);
	mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &rw);
	if (m->mm_defaults_file) {
		mysql_options(c, MYSQL_READ_DEFAULT_FILE, m->mm_defaults_file);
		mysql_options(c, MYSQL_READ_DEFAULT_GROUP, "client");
	}
	return c;
}

/* The database: from the URL, the option file, or "flashstock"; created
 * when missing.  @return FLASH_OK, or a code with the connection closed. */
static int use_db(mdb_t *m)
{
	char dbname[130] = "";
	if (mysql_query(m->mm_conn, "SELECT DATABASE()") == 0) {
		MYSQL_RES *r = mysql_store_result(m->mm_conn);
		MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
		if (row && row[0])
			snprintf(dbname, sizeof dbname, "%s", row[0]);
		if (r)
			mysql_free_result(r);
	}
	if (!dbname[0]) {
		const char *want = m->mm_db ? m->mm_db : "flashstock";
		char esc[260], sql[400];
		if (strlen(want) > 64) {
			disconnect(m);
			return FLASH_EMYSQL_CONFIG;
		}
		/* Identifiers: double any backquote. */
		size_t j = 0;
		for (const char *s = want; *s && j < sizeof esc - 3; s++) {
			if (*s == '`')
				esc[j++] = '`';
			esc[j++] = *s;
		}
		esc[j] = 0;
		snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", esc);
		if (exec(m, sql) || (snprintf(sql, sizeof sql, "USE `%s`", esc), exec(m, sql))) {
			mlog(m, PLOG_ERROR, "database %s on %s: %s (%u)", want, m->mm_where,
			     m->mm_error, m->mm_errno);
			int rc = mdb_err_retryable(m->mm_errno) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL_CONFIG;
			disconnect(m);
			return rc;
		}
	}
	return FLASH_OK;
}

static int connect_db(mdb_t *m)
{
	if (m->mm_conn)
		return FLASH_OK;
	MYSQL *c = conn_init(m);
	if (!c)
		return FLASH_ENOMEM;
	unsigned long flags = CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS;
	const char *db = m->mm_db;
	MYSQL *ok = mysql_real_connect(c, m->mm_host, m->mm_user, m->mm_pass, db, m->mm_port,
	                               m->mm_socket, flags);
	if (!ok && mysql_errno(c) == ER_BAD_DB_ERROR && m->mm_require_db && !m->mm_create_db &&
	    !m->mm_db_implicit) {
		/* A mistyped name would get an empty new database: refuse. */
		m->mm_errno = ER_BAD_DB_ERROR;
		snprintf(m->mm_error, sizeof m->mm_error, "%s", mysql_error(c));
		mysql_close(c);
		if (m->mm_db)
			mlog(m, PLOG_ERROR, "database %s does not exist on %s: refused (a "
			     "mistyped name would be created empty); create it, or add create_db=1 to "
			     "the URL", m->mm_db, m->mm_where);
		else
			mlog(m, PLOG_ERROR, "the database named by %s does not exist: refused "
			     "(a mistyped name would be created empty); create it first", m->mm_where);
		return FLASH_EMYSQL_CONFIG;
	}
	if (!ok && mysql_errno(c) == ER_BAD_DB_ERROR) {
		/* Unknown database: connect without one; it is created below. */
		mysql_close(c);
		if (!(c = conn_init(m)))
			return FLASH_ENOMEM;
		ok = mysql_real_connect(c, m->mm_host, m->mm_user, m->mm_pass, NULL, m->mm_port,
		                        m->mm_socket, flags);
	}
	if (!ok) {
		m->mm_errno = mysql_errno(c);
		snprintf(m->mm_error, sizeof m->mm_error, "%s", mysql_error(c));
		mysql_close(c);
		int retry = mdb_err_retryable(m->mm_errno);
		mlog(m, retry ? PLOG_WARN : PLOG_ERROR,
		     "connect to %s failed: %s (%u)", m->mm_where, m->mm_error, m->mm_errno);
		return retry ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL_CONFIG;
	}
	m->mm_conn = c;

	int rc = use_db(m);
	if (rc)
		return rc;
	if (exec(m, "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ENGINE_SUBSTITUTION,"
	            "ERROR_FOR_DIVISION_BY_ZERO', SESSION innodb_lock_wait_timeout = 10,"
	            " SESSION autocommit = 1")) {
		rc = fail_rc(m);
		disconnect(m);
		return rc;
	}
	/* Size the pipeline from the server's packet limit. */
	m->mm_max_packet = 1u << 20;
	if (mysql_query(c, "SELECT @@max_allowed_packet") == 0) {
		MYSQL_RES *r = mysql_store_result(c);
		MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
		if (row && row[0]) {
			unsigned long long mp = strtoull(row[0], NULL, 10);
			if (mp >= 2u << 20)
				m->mm_max_packet = (size_t)(mp / 2 > (8u << 20) ? (8u << 20) : mp / 2);
		}
		if (r)
			mysql_free_result(r);
	}
	rc = m->mm_no_schema ? FLASH_OK : schema_create(m);
	if (rc) {
		disconnect(m);
		return rc;
	}
	if (m->mm_ever) {
		m->mm_stats.reconnects++;
		mlog(m, PLOG_INFO, "reconnected to %s", m->mm_where);
	}
	m->mm_ever = 1;
	return FLASH_OK;
}

struct st_mysql *mdb_conn(mdb_t *m)
{
	if (!m || connect_db(m) != FLASH_OK)
		return NULL;
	return m->mm_conn;
}

void mdb_conn_lost(mdb_t *m)
{
	if (m)
		disconnect(m);
}

const char *mdb_stream(const mdb_t *m)
{
	return m && m->mm_stream ? m->mm_stream : "wal";
}

const char *mdb_where(const mdb_t *m)
{
	return m && m->mm_where ? m->mm_where : "(none)";
}

/* ------------------------------------------------------------------------
 * 3. Schema
 *
 * orders carries exactly two indexes, the primary key and the per-user
 * limit: each more index costs every insert (a (activity, sku) index cost
 * 15-20% of the server's time per order); the reconciler's per-sku sums
 * scan the table instead, once per run.
 * Every statement is idempotent, so two appliers starting at once, or one
 * restarting, agree.  Unsigned columns plus STRICT_ALL_TABLES make a
 * negative stock an error even if a condition were missed; the CHECK keeps
 * available + reserved + sold = total on every row.
 * ------------------------------------------------------------------------ */

/* An order's status.  active_key needs no change for reservations: a
 * RESERVED row has quota_returned 0, so it holds its slot; an EXPIRED one
 * frees it iff the quota was returned, as a CANCELLED one does. */
#define ORDER_STATUS_TYPE "ENUM('ACTIVE','CANCELLED','RESERVED','EXPIRED') NOT NULL DEFAULT 'ACTIVE'"

/* Versioned terms (flash_activity_update, flash_sku_price_set): each column
 * once, for the CREATE and for the migration of an older table.  The
 * *_lsn columns say which record set today's terms, so a feed refill
 * (feed_refill_mysql.c) gives back that record and never an older one
 * with today's values. */
#define ACT_VERSION_TYPE "BIGINT UNSIGNED NOT NULL DEFAULT 0" \
	" COMMENT 'version of its terms (ACTIVITY records); 0: a WAL from before versions'"
#define ACT_TERMS_LSN_TYPE "BIGINT UNSIGNED NULL" \
	" COMMENT 'LSN of the ACTIVITY record (flags 1) that set the terms; NULL: its add did'"
#define SKU_PRICE_TYPE "BIGINT UNSIGNED NOT NULL DEFAULT 0" \
	" COMMENT 'price (PRICE records), in the shop''s smallest unit; 0 until set'"
#define SKU_VERSION_TYPE "BIGINT UNSIGNED NOT NULL DEFAULT 0" \
	" COMMENT 'version of its terms (SKU and PRICE records); 0: a WAL from before versions'"
#define SKU_PRICE_LSN_TYPE "BIGINT UNSIGNED NULL" \
	" COMMENT 'LSN of the PRICE record that set price and version; NULL: none yet'"
#define SKU_PRICE_NS_TYPE "BIGINT NULL COMMENT 'that PRICE record''s time (CLOCK_REALTIME ns)'"

/* Carts (flash_cart_order): an order of n lines is ONE orders row -- line
 * 0's sku and qty, its one limit slot, its request id -- with n_lines = n
 * (LINES is a reserved word), and n order_lines rows, one per line.  A
 * plain order keeps its one row and no order_lines row: its line is the
 * orders row itself, so the hot path inserts what it did before carts and
 * an older database needs no backfill.  Every order's line 0 is in
 * orders; its lines 1..n-1 only in order_lines (a per-sku sum adds
 * order_lines WHERE line > 0 to orders). */
#define ORDER_LINES_TYPE "TINYINT UNSIGNED NOT NULL DEFAULT 1" \
	" COMMENT 'lines of the order: 1 plain, 2..16 a cart (its rows in order_lines)'"

static const char *const schema_sql[] = {
	"CREATE TABLE IF NOT EXISTS activities ("
	" activity_id    INT UNSIGNED NOT NULL PRIMARY KEY,"
	" limit_per_user SMALLINT UNSIGNED NOT NULL,"
	" max_qty        INT UNSIGNED NOT NULL,"
	" scope          TINYINT UNSIGNED NOT NULL COMMENT '0 activity, 1 sku, 2 day',"
	" flags          INT UNSIGNED NOT NULL,"
	" day_offset_s   INT NOT NULL,"
	" start_ns       BIGINT NOT NULL,"
	" end_ns         BIGINT NOT NULL,"
	" lsn            BIGINT UNSIGNED NOT NULL,"
	" archived_lsn   BIGINT UNSIGNED NULL COMMENT 'LSN of its ARCHIVE record; NULL: live',"
	" archived_ns    BIGINT NULL COMMENT 'when the segment archived it (CLOCK_REALTIME ns)',"
	" version        " ACT_VERSION_TYPE ","
	" terms_lsn      " ACT_TERMS_LSN_TYPE
	") ENGINE=InnoDB",

	/* Migrations: a database made before a column existed gets it here
	 * (each statement is idempotent; the CREATE above has them already). */
	"ALTER TABLE activities"
	" ADD COLUMN IF NOT EXISTS archived_lsn BIGINT UNSIGNED NULL"
	"   COMMENT 'LSN of its ARCHIVE record; NULL: live',"
	" ADD COLUMN IF NOT EXISTS archived_ns BIGINT NULL"
	"   COMMENT 'when the segment archived it (CLOCK_REALTIME ns)'",

	/* Versioned terms: appended, as the CREATE above has them (an
	 * appended column is added in place, without copying the table).
	 * Rows from before versions keep version 0, as their WAL records do. */
	"ALTER TABLE activities"
	" ADD COLUMN IF NOT EXISTS version " ACT_VERSION_TYPE ","
	" ADD COLUMN IF NOT EXISTS terms_lsn " ACT_TERMS_LSN_TYPE,

	"CREATE TABLE IF NOT EXISTS item_stock ("
	" activity_id INT UNSIGNED NOT NULL,"
	" sku_id      INT UNSIGNED NOT NULL,"
	" total       BIGINT UNSIGNED NOT NULL,"
	" available   BIGINT UNSIGNED NOT NULL,"
	" reserved    BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'units of RESERVED orders',"
	" sold        BIGINT UNSIGNED NOT NULL DEFAULT 0,"
	" shards      INT UNSIGNED NOT NULL DEFAULT 1,"
	" created_lsn BIGINT UNSIGNED NOT NULL,"
	" last_lsn    BIGINT UNSIGNED NOT NULL,"
	" price       " SKU_PRICE_TYPE ","
	" version     " SKU_VERSION_TYPE ","
	" price_lsn   " SKU_PRICE_LSN_TYPE ","
	" price_ns    " SKU_PRICE_NS_TYPE ","
	" PRIMARY KEY (activity_id, sku_id),"
	" CONSTRAINT stock_units CHECK (available + reserved + sold = total)"
	") ENGINE=InnoDB",

	/* Reservations: a stock row made before them gets the column, and
	 * its balance counts it.  The check changes name, so a second run
	 * finds nothing to do: the old one is gone, the new one exists (each
	 * run of a DROP and ADD of one name would check every row again). */
	"ALTER TABLE item_stock"
	" ADD COLUMN IF NOT EXISTS reserved BIGINT UNSIGNED NOT NULL DEFAULT 0"
	"   COMMENT 'units of RESERVED orders' AFTER available,"
	" DROP CONSTRAINT IF EXISTS stock_balance,"
	" ADD CONSTRAINT IF NOT EXISTS stock_units CHECK (available + reserved + sold = total)",

	/* Versioned terms of a sku: its price, appended as for activities. */
	"ALTER TABLE item_stock"
	" ADD COLUMN IF NOT EXISTS price " SKU_PRICE_TYPE ","
	" ADD COLUMN IF NOT EXISTS version " SKU_VERSION_TYPE ","
	" ADD COLUMN IF NOT EXISTS price_lsn " SKU_PRICE_LSN_TYPE ","
	" ADD COLUMN IF NOT EXISTS price_ns " SKU_PRICE_NS_TYPE,

	"CREATE TABLE IF NOT EXISTS orders ("
	" order_no       BIGINT UNSIGNED NOT NULL PRIMARY KEY,"
	" activity_id    INT UNSIGNED NOT NULL,"
	" sku_id         INT UNSIGNED NOT NULL,"
	" user_id        BIGINT UNSIGNED NOT NULL,"
	" qty            INT UNSIGNED NOT NULL,"
	" limit_slot     SMALLINT UNSIGNED NOT NULL,"
	" biz_day        INT UNSIGNED NOT NULL,"
	" scope_sku      INT UNSIGNED NOT NULL COMMENT 'sku_id for per-sku limits, else 0',"
	" scope_day      INT UNSIGNED NOT NULL COMMENT 'biz_day for per-day limits, else 0',"
	" status         " ORDER_STATUS_TYPE ","
	" quota_returned TINYINT UNSIGNED NOT NULL DEFAULT 0,"
	" active_key     TINYINT UNSIGNED AS"
	"   (IF(status = 'ACTIVE' OR quota_returned = 0, 1, NULL)) PERSISTENT"
	"   COMMENT '1 while the order holds its limit slot, NULL once freed',"
	" request_id     BIGINT UNSIGNED NOT NULL DEFAULT 0,"
	" created_ns     BIGINT NOT NULL,"
	" lsn            BIGINT UNSIGNED NOT NULL,"
	" cancel_lsn     BIGINT UNSIGNED NULL COMMENT 'LSN of its CANCEL or EXPIRE record',"
	" pay_by_ns      BIGINT NULL COMMENT 'a reservation: pay by then (CLOCK_REALTIME ns)',"
	" confirm_lsn    BIGINT UNSIGNED NULL COMMENT 'a reservation: LSN of its CONFIRM record',"
	" n_lines        " ORDER_LINES_TYPE ","
	" UNIQUE KEY user_limit (activity_id, user_id, scope_sku, scope_day, limit_slot, active_key)"
	") ENGINE=InnoDB",

	"ALTER TABLE orders"
	" ADD COLUMN IF NOT EXISTS pay_by_ns BIGINT NULL"
	"   COMMENT 'a reservation: pay by then (CLOCK_REALTIME ns)',"
	" ADD COLUMN IF NOT EXISTS confirm_lsn BIGINT UNSIGNED NULL"
	"   COMMENT 'a reservation: LSN of its CONFIRM record'",

	/* Carts: appended, as for versions (rows of before carts are plain). */
	"ALTER TABLE orders ADD COLUMN IF NOT EXISTS n_lines " ORDER_LINES_TYPE,

	/* Every line of a cart, line 0 included; a line's status follows its
	 * own records (each line of a cart's CANCEL, EXPIRE or CONFIRM), so it
	 * is the cart's once the whole group is applied -- the applier applies
	 * a group all or nothing.  No limit key: the cart holds one slot, in
	 * its orders row. */
	"CREATE TABLE IF NOT EXISTS order_lines ("
	" order_no    BIGINT UNSIGNED NOT NULL,"
	" line        TINYINT UNSIGNED NOT NULL COMMENT '0 .. n_lines - 1',"
	" activity_id INT UNSIGNED NOT NULL,"
	" sku_id      INT UNSIGNED NOT NULL,"
	" qty         INT UNSIGNED NOT NULL,"
	" status      " ORDER_STATUS_TYPE ","
	" lsn         BIGINT UNSIGNED NOT NULL COMMENT 'LSN of the line''s ORDER record',"
	" cancel_lsn  BIGINT UNSIGNED NULL COMMENT 'LSN of the line''s CANCEL or EXPIRE record',"
	" confirm_lsn BIGINT UNSIGNED NULL COMMENT 'a reservation: LSN of the line''s CONFIRM record',"
	" PRIMARY KEY (order_no, line)"
	") ENGINE=InnoDB",

	/* Lines of a cart's operation whose last line the stream has not
	 * applied yet (a batch ended between them): kept with the batch that
	 * read them, applied with the one that completes them (section 8). */
	"CREATE TABLE IF NOT EXISTS cart_pending ("
	" stream VARCHAR(64) NOT NULL,"
	" lsn    BIGINT UNSIGNED NOT NULL,"
	" rec    BINARY(64) NOT NULL COMMENT 'the struct flash_record, as in the WAL',"
	" PRIMARY KEY (stream, lsn)"
	") ENGINE=InnoDB",

	"CREATE TABLE IF NOT EXISTS applied_lsn ("
	" stream VARCHAR(64) NOT NULL PRIMARY KEY,"
	" lsn    BIGINT UNSIGNED NOT NULL"
	") ENGINE=InnoDB",

	"CREATE TABLE IF NOT EXISTS apply_conflicts ("
	" id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" stream      VARCHAR(64) NOT NULL,"
	" lsn         BIGINT UNSIGNED NOT NULL,"
	" rec_type    TINYINT UNSIGNED NOT NULL,"
	" kind        VARCHAR(24) NOT NULL,"
	" order_no    BIGINT UNSIGNED NOT NULL,"
	" activity_id INT UNSIGNED NOT NULL,"
	" sku_id      INT UNSIGNED NOT NULL,"
	" detail      VARCHAR(200) NOT NULL,"
	" at          TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,"
	" KEY by_lsn (stream, lsn)"
	") ENGINE=InnoDB",
};

/*
 * orders made before reservations: their status learns RESERVED and
 * EXPIRED.  Asked first, not run every time: a MODIFY of a column a
 * persistent generated column reads may rebuild the table, and it does not
 * say IF NOT EXISTS.  Appending ENUM values keeps every stored value.
 * @return 0, or 1 with m's error set.
 */
static int schema_order_status(mdb_t *m)
{
	if (mysql_query(m->mm_conn, "SHOW COLUMNS FROM orders LIKE 'status'")) {
		take_error(m);
		return 1;
	}
	MYSQL_RES *r = mysql_store_result(m->mm_conn);
	if (!r) {
		take_error(m);
		return 1;
	}
	MYSQL_ROW row = mysql_fetch_row(r);
	int old = row && row[1] && !strstr(row[1], "'EXPIRED'");
	mysql_free_result(r);
	return old ? exec(m, "ALTER TABLE orders MODIFY COLUMN status " ORDER_STATUS_TYPE) : 0;
}

static int schema_fail(mdb_t *m)
{
	mlog(m, PLOG_ERROR, "schema on %s: %s (%u)", m->mm_where, m->mm_error, m->mm_errno);
	return mdb_err_retryable(m->mm_errno) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL;
}

static int schema_create(mdb_t *m)
{
	for (size_t i = 0; i < sizeof schema_sql / sizeof schema_sql[0]; i++)
		if (exec(m, schema_sql[i]))
			return schema_fail(m);
	if (schema_order_status(m))
		return schema_fail(m);
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT IGNORE INTO applied_lsn (stream, lsn) VALUES (%s, 0)",
	         m->mm_stream_sql);
	if (exec(m, sql)) {
		mlog(m, PLOG_ERROR, "applied_lsn on %s: %s (%u)", m->mm_where, m->mm_error,
		     m->mm_errno);
		return mdb_err_retryable(m->mm_errno) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL;
	}
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 4. Activity cache
 *
 * An activity's scope never changes (flash_activity_update keeps it, and
 * the UPDATE of new terms matches only a row of the same scope), so the
 * scope learnt from an ACTIVITY record or from the activities table stays
 * right forever.
 * A cached activity that a rolled-back batch introduced is harmless: the
 * retry introduces the same activity with the same scope.
 * ------------------------------------------------------------------------ */

static size_t act_hash(uint32_t id, size_t cap) { return (size_t)((id * 2654435761u) & (cap - 1)); }

static int act_get(const mdb_t *m, uint32_t id)
{
	if (!m->mm_act_cap)
		return -1;
	for (size_t i = act_hash(id, m->mm_act_cap);; i = (i + 1) & (m->mm_act_cap - 1)) {
		if (m->mm_act_id[i] == id)
			return m->mm_act_scope[i];
		if (m->mm_act_id[i] == 0)
			return -1;
	}
}

static int act_put(mdb_t *m, uint32_t id, int scope)
{
	if ((m->mm_act_n + 1) * 2 > m->mm_act_cap) {
		size_t cap = m->mm_act_cap ? m->mm_act_cap * 2 : 64;
		uint32_t *ids = calloc(cap, sizeof *ids);
		uint8_t *sc = calloc(cap, 1);
		if (!ids || !sc) {
			free(ids);
			free(sc);
			return FLASH_ENOMEM;
		}
		for (size_t i = 0; i < m->mm_act_cap; i++) {
			if (!m->mm_act_id[i])
				continue;
			size_t j = act_hash(m->mm_act_id[i], cap);
			while (ids[j])
				j = (j + 1) & (cap - 1);
			ids[j] = m->mm_act_id[i];
			sc[j] = m->mm_act_scope[i];
		}
		free(m->mm_act_id);
		free(m->mm_act_scope);
		m->mm_act_id = ids;
		m->mm_act_scope = sc;
		m->mm_act_cap = cap;
	}
	size_t i = act_hash(id, m->mm_act_cap);
	while (m->mm_act_id[i] && m->mm_act_id[i] != id)
		i = (i + 1) & (m->mm_act_cap - 1);
	if (!m->mm_act_id[i])
		m->mm_act_n++;
	m->mm_act_id[i] = id;
	m->mm_act_scope[i] = (uint8_t)scope;
	return FLASH_OK;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

/* Forget every cached scope (after a rolled-back fast path whose ACTIVITY
 * records may have been refused). */
static void act_reset(mdb_t *m)
{
	if (m->mm_act_cap)
		memset(m->mm_act_id, 0, m->mm_act_cap * sizeof *m->mm_act_id);
	m->mm_act_n = 0;
}

#define ACT_IDS_PER_QUERY 500

/*
 * Load from `activities` the scopes of every activity that an ORDER record
 * of the batch names and the cache lacks (distinct ids, ACT_IDS_PER_QUERY
 * per SELECT).  An id still unknown afterwards is one nobody defined (or
 * one this batch defines later: the fast path sends such a batch to the
 * slow path).
 */
static int act_load_missing(mdb_t *m, const struct lsn_record *recs, size_t n)
{
	uint32_t *ids = NULL;
	size_t k = 0, cap = 0;
	int rc = FLASH_OK;
	for (size_t i = 0; i < n; i++) {
		const struct flash_record *r = &recs[i].rec;
		if (r->type != FLASH_REC_ORDER || act_get(m, r->activity_id) >= 0)
			continue;
		if (k && ids[k - 1] == r->activity_id)
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 64;
			uint32_t *nv = realloc(ids, cap * sizeof *nv);
			if (!nv) {
				free(ids);
				return FLASH_ENOMEM;
			}
			ids = nv;
		}
		ids[k++] = r->activity_id;
	}
	if (!k)
		return FLASH_OK;
	qsort(ids, k, sizeof *ids, cmp_u32);
	struct sbuf *b = &m->mm_tmp;
	for (size_t at = 0; at < k && rc == FLASH_OK;) {
		sb_reset(b);
		sb_str(b, "SELECT activity_id, scope FROM activities WHERE activity_id IN (");
		size_t in = 0;
		for (; at < k && in < ACT_IDS_PER_QUERY; at++) {
			if (at && ids[at] == ids[at - 1])
				continue;
			if (in++)
				sb_add(b, ",", 1);
			sb_u64(b, ids[at]);
		}
		sb_add(b, ")", 1);
		if (b->sb_oom) {
			rc = FLASH_ENOMEM;
			break;
		}
		if (mysql_real_query(m->mm_conn, b->sb_p, b->sb_len)) {
			take_error(m);
			rc = fail_rc(m);
			break;
		}
		MYSQL_RES *r = mysql_store_result(m->mm_conn);
		if (!r) {
			take_error(m);
			rc = fail_rc(m);
			break;
		}
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(r)) && rc == FLASH_OK)
			rc = act_put(m, (uint32_t)strtoul(row[0], NULL, 10), atoi(row[1]));
		mysql_free_result(r);
	}
	free(ids);
	return rc;
}

/* ------------------------------------------------------------------------
 * 5. Statement pipeline
 *
 * Statements are queued with the number of rows each must affect (matched
 * rows: the connection uses CLIENT_FOUND_ROWS) and sent as one
 * multi-statement round trip when the queue nears the packet limit or at the
 * end.  Every result is read even after a mismatch, so the connection stays
 * in sync.  pipe_flush() returns 0 if every statement did what it should,
 * 1 on a conflict (a record-level refusal or a row-count mismatch), or a
 * negative result code.
 * ------------------------------------------------------------------------ */

static int pipe_flush(mdb_t *m)
{
	struct sbuf *b = &m->mm_sql;
	if (b->sb_oom)
		return FLASH_ENOMEM;
	if (!m->mm_expect_n)
		return 0;
	int mismatch = 0;
	size_t i = 0;
	int status = mysql_real_query(m->mm_conn, b->sb_p, b->sb_len);
	for (;;) {
		if (status > 0) {
			take_error(m);
			break;
		}
		MYSQL_RES *r = mysql_store_result(m->mm_conn);
		if (r) {
			mysql_free_result(r);
		} else if (mysql_errno(m->mm_conn) != 0) {
			/* the result was lost (server gone mid-batch): an error, not
			 * a row count -- mysql_affected_rows() would read (ulonglong)-1 */
			take_error(m);
			status = 1;
			break;
		} else if (mysql_field_count(m->mm_conn) == 0 && i < m->mm_expect_n) {
			long want = m->mm_expect[i];
			my_ulonglong got = mysql_affected_rows(m->mm_conn);
			if (want >= 0 && got != (my_ulonglong)want) {
				if (!mismatch)
					snprintf(m->mm_error, sizeof m->mm_error,
					         "statement %zu matched %llu rows, expected %ld", i + 1,
					         (unsigned long long)got, want);
				mismatch = 1;
			}
		}
		PERSIST_CRASH("apply_batch", 2);
		i++;
		status = mysql_next_result(m->mm_conn);
		if (status < 0)
			break;          /* no more results */
	}
	size_t sent = m->mm_expect_n;
	sb_reset(b);
	m->mm_expect_n = 0;
	if (status > 0) {
		(void)sent;
		if (err_is_conflict(m->mm_errno))
			return 1;
		return fail_rc(m);
	}
	return mismatch;
}

/* Queue the statement now in m->mm_sql (ended by the caller with ';'). */
static int pipe_push(mdb_t *m, long expect)
{
	if (m->mm_expect_n == m->mm_expect_cap) {
		size_t cap = m->mm_expect_cap ? m->mm_expect_cap * 2 : 256;
		long *e = realloc(m->mm_expect, cap * sizeof *e);
		if (!e)
			return FLASH_ENOMEM;
		m->mm_expect = e;
		m->mm_expect_cap = cap;
	}
	m->mm_expect[m->mm_expect_n++] = expect;
	if (m->mm_sql.sb_len >= m->mm_max_packet)
		return pipe_flush(m);
	return 0;
}

/* ------------------------------------------------------------------------
 * 6. Fast path
 * ------------------------------------------------------------------------ */

static struct skuagg *agg_find(mdb_t *m, uint32_t a, uint32_t s, size_t cap)
{
	size_t i = (size_t)(((uint64_t)a * 0x9E3779B97F4A7C15ull ^ s * 0xC2B2AE3D27D4EB4Full) >> 20) &
	           (cap - 1);
	for (;; i = (i + 1) & (cap - 1)) {
		struct skuagg *g = &m->mm_agg[i];
		if (!g->sa_used) {
			memset(g, 0, sizeof *g);
			g->sa_used = 1;
			g->sa_activity = a;
			g->sa_sku = s;
			return g;
		}
		if (g->sa_activity == a && g->sa_sku == s)
			return g;
	}
}

/* Apply one change to an aggregate, tracking the largest running deficit. */
static void agg_step(struct skuagg *g, const int64_t d[3], int64_t d_total, uint64_t lsn)
{
	g->sa_avail += d[0];
	g->sa_resv += d[1];
	g->sa_sold += d[2];
	g->sa_total += d_total;
	if (-g->sa_avail > g->sa_need_avail)
		g->sa_need_avail = -g->sa_avail;
	if (-g->sa_resv > g->sa_need_resv)
		g->sa_need_resv = -g->sa_resv;
	if (-g->sa_sold > g->sa_need_sold)
		g->sa_need_sold = -g->sa_sold;
	g->sa_lsn = lsn;
}

static int rec_valid(const struct flash_record *r)
{
	switch (r->type) {
	case FLASH_REC_ORDER:
		return r->order_no && r->user_id && r->qty && r->limit_slot && r->activity_id && r->sku_id;
	case FLASH_REC_CANCEL:
	case FLASH_REC_CONFIRM:
	case FLASH_REC_EXPIRE:
		return r->order_no && r->qty && r->activity_id && r->sku_id;
	case FLASH_REC_RESTOCK:
		return r->value != 0 && r->activity_id && r->sku_id;
	case FLASH_REC_ACTIVITY:
		return r->activity_id != 0 && ((r->biz_day >> 8) & 0xff) <= FLASH_SCOPE_DAY;
	case FLASH_REC_SKU:
	case FLASH_REC_PRICE:
		return r->activity_id && r->sku_id && r->value >= 0;
	case FLASH_REC_GEN:   /* a table generation (engine/gen.c): nothing to apply */
		return r->activity_id <= 1 && (r->qty == 1 || r->qty == 2);
	case FLASH_REC_ARCHIVE:
		return r->activity_id != 0;
	default:
		return 0;
	}
}

/* A line of a cart's operation (FLASH_REC_F_CART on an order's record). */
static int rec_is_cart(const struct flash_record *r)
{
	return (r->flags & FLASH_REC_F_CART) &&
	       (r->type == FLASH_REC_ORDER || r->type == FLASH_REC_CANCEL ||
	        r->type == FLASH_REC_CONFIRM || r->type == FLASH_REC_EXPIRE);
}

/* The record's line: a cart's, else 0 (a plain order is its own line 0). */
static unsigned rec_line(const struct flash_record *r)
{
	return rec_is_cart(r) ? FLASH_REC_LINE(r->flags) : 0;
}

/* Lines of the order whose line 0 is recs[i]: 1 for a plain order, else
 * its last line + 1 (the group is contiguous and complete here:
 * cart_prepare). */
static unsigned cart_lines_at(const struct lsn_record *recs, size_t n, size_t i)
{
	const struct flash_record *r = &recs[i].rec;
	if (!rec_is_cart(r))
		return 1;
	for (size_t j = i; j < n && rec_is_cart(&recs[j].rec); j++) {
		const struct flash_record *q = &recs[j].rec;
		if (q->order_no != r->order_no || q->type != r->type)
			break;
		if (q->flags & FLASH_REC_F_LAST)
			return FLASH_REC_LINE(q->flags) + 1;
	}
	return 1;
}

static void order_scope(int scope, const struct flash_record *r, uint32_t *ssku, uint32_t *sday)
{
	*ssku = scope == FLASH_SCOPE_SKU ? r->sku_id : 0;
	*sday = scope == FLASH_SCOPE_DAY ? r->biz_day : 0;
}

static void sql_order_values(struct sbuf *b, const struct lsn_record *x, int scope, unsigned lines)
{
	const struct flash_record *r = &x->rec;
	uint32_t ssku, sday;
	order_scope(scope, r, &ssku, &sday);
	sb_add(b, "(", 1);
	sb_u64(b, r->order_no);    sb_add(b, ",", 1);
	sb_u64(b, r->activity_id); sb_add(b, ",", 1);
	sb_u64(b, r->sku_id);      sb_add(b, ",", 1);
	sb_u64(b, r->user_id);     sb_add(b, ",", 1);
	sb_u64(b, r->qty);         sb_add(b, ",", 1);
	sb_u64(b, r->limit_slot);  sb_add(b, ",", 1);
	sb_u64(b, r->biz_day);     sb_add(b, ",", 1);
	sb_u64(b, ssku);           sb_add(b, ",", 1);
	sb_u64(b, sday);           sb_add(b, ",", 1);
	sb_u64(b, r->request_id);  sb_add(b, ",", 1);
	sb_i64(b, r->ts_ns);       sb_add(b, ",", 1);
	sb_u64(b, x->lsn);         sb_add(b, ",", 1);
	if (r->value != 0) {       /* a reservation: unpaid until its CONFIRM */
		sb_str(b, "'RESERVED',");
		sb_i64(b, r->value);
	} else {
		sb_str(b, "'ACTIVE',NULL");
	}
	sb_add(b, ",", 1);
	sb_u64(b, lines);
	sb_add(b, ")", 1);
}

#define ORDER_COLS "INSERT INTO orders (order_no, activity_id, sku_id, user_id, qty, limit_slot," \
                   " biz_day, scope_sku, scope_day, request_id, created_ns, lsn, status, pay_by_ns," \
                   " n_lines) VALUES "

/* One order_lines row: a cart's line, from its ORDER record. */
static void sql_line_values(struct sbuf *b, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	sb_add(b, "(", 1);
	sb_u64(b, r->order_no);    sb_add(b, ",", 1);
	sb_u64(b, rec_line(r));    sb_add(b, ",", 1);
	sb_u64(b, r->activity_id); sb_add(b, ",", 1);
	sb_u64(b, r->sku_id);      sb_add(b, ",", 1);
	sb_u64(b, r->qty);         sb_add(b, ",", 1);
	sb_str(b, r->value != 0 ? "'RESERVED'," : "'ACTIVE',");
	sb_u64(b, x->lsn);
	sb_add(b, ")", 1);
}

#define LINE_COLS "INSERT INTO order_lines (order_no, line, activity_id, sku_id, qty, status, lsn)" \
                  " VALUES "

/* An ACTIVITY record: new terms of an existing activity (flags 1,
 * flash_activity_update), else an add. */
static int act_is_update(const struct flash_record *r)
{
	return r->type == FLASH_REC_ACTIVITY && (r->flags & 1u);
}

static void sql_activity(struct sbuf *b, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	sb_str(b, "INSERT INTO activities (activity_id, limit_per_user, max_qty, scope, flags,"
	          " day_offset_s, start_ns, end_ns, lsn, version) VALUES (");
	sb_u64(b, r->activity_id);                sb_add(b, ",", 1);
	sb_u64(b, r->biz_day & 0xff);             sb_add(b, ",", 1);
	sb_u64(b, r->limit_slot);                 sb_add(b, ",", 1);
	sb_u64(b, (r->biz_day >> 8) & 0xff);      sb_add(b, ",", 1);
	sb_u64(b, r->biz_day >> 16);              sb_add(b, ",", 1);
	sb_i64(b, (int32_t)r->request_id);        sb_add(b, ",", 1);
	sb_i64(b, r->value);                      sb_add(b, ",", 1);
	sb_i64(b, r->ts_ns);                      sb_add(b, ",", 1);
	sb_u64(b, x->lsn);                        sb_add(b, ",", 1);
	sb_u64(b, r->order_no);                   sb_add(b, ");", 2);
}

/*
 * New terms of a live activity (an ACTIVITY record with flags 1): the row
 * of its add gets the window, limit, max_qty, flags and version, and
 * terms_lsn.  Only a row of the same scope and day offset matches -- the
 * engine never changes them, the orders' limit keys depend on them -- and
 * only a live one: anything else (an unknown or archived activity, or one
 * whose scope MariaDB holds otherwise) matches no row, a catalog conflict.
 * Every value is set, none added: applied twice it writes the same row.
 */
static void sql_activity_update(struct sbuf *b, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	sb_str(b, "UPDATE activities SET limit_per_user=");
	sb_u64(b, r->biz_day & 0xff);
	sb_str(b, ", max_qty=");
	sb_u64(b, r->limit_slot);
	sb_str(b, ", flags=");
	sb_u64(b, r->biz_day >> 16);
	sb_str(b, ", start_ns=");
	sb_i64(b, r->value);
	sb_str(b, ", end_ns=");
	sb_i64(b, r->ts_ns);
	sb_str(b, ", version=");
	sb_u64(b, r->order_no);
	sb_str(b, ", terms_lsn=");
	sb_u64(b, x->lsn);
	sb_str(b, " WHERE activity_id=");
	sb_u64(b, r->activity_id);
	sb_str(b, " AND scope=");
	sb_u64(b, (r->biz_day >> 8) & 0xff);
	sb_str(b, " AND day_offset_s=");
	sb_i64(b, (int32_t)r->request_id);
	sb_str(b, " AND archived_lsn IS NULL;");
}

static void sql_sku(struct sbuf *b, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	sb_str(b, "INSERT INTO item_stock (activity_id, sku_id, total, available, sold, shards,"
	          " created_lsn, last_lsn, version) VALUES (");
	sb_u64(b, r->activity_id);  sb_add(b, ",", 1);
	sb_u64(b, r->sku_id);       sb_add(b, ",", 1);
	sb_i64(b, r->value);        sb_add(b, ",", 1);
	sb_i64(b, r->value);        sb_add(b, ",0,", 3);
	sb_u64(b, r->qty ? r->qty : 1); sb_add(b, ",", 1);
	sb_u64(b, x->lsn);          sb_add(b, ",", 1);
	sb_u64(b, x->lsn);          sb_add(b, ",", 1);
	sb_u64(b, r->order_no);     sb_add(b, ");", 2);
}

/*
 * A PRICE record: the sku's price and version, and which record set them
 * (price_lsn, price_ns).  No unit moves, so last_lsn (the last change of
 * stock) stays.  Values are set, not added: idempotent as sql_archive().
 * A sku MariaDB does not know matches no row: a catalog conflict.
 */
static void sql_price(struct sbuf *b, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	sb_str(b, "UPDATE item_stock SET price=");
	sb_i64(b, r->value);
	sb_str(b, ", version=");
	sb_u64(b, r->order_no);
	sb_str(b, ", price_lsn=");
	sb_u64(b, x->lsn);
	sb_str(b, ", price_ns=");
	sb_i64(b, r->ts_ns);
	sb_str(b, " WHERE activity_id=");
	sb_u64(b, r->activity_id);
	sb_str(b, " AND sku_id=");
	sb_u64(b, r->sku_id);
	sb_add(b, ";", 1);
}

/*
 * An ARCHIVE record marks its activity's row; orders and stock rows stay (the
 * activity's orders are looked up here once the segment has reclaimed them).
 * Idempotent: a second apply writes the same values (and still matches the
 * row: CLIENT_FOUND_ROWS).  An activity MariaDB does not know matches no row:
 * the slow path reports it as a catalog conflict.
 */
static void sql_archive(struct sbuf *b, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	sb_str(b, "UPDATE activities SET archived_lsn=");
	sb_u64(b, x->lsn);
	sb_str(b, ", archived_ns=");
	sb_i64(b, r->ts_ns);
	sb_str(b, " WHERE activity_id=");
	sb_u64(b, r->activity_id);
	sb_add(b, ";", 1);
}

/*
 * The end of an order's state: a CANCEL, or a reservation's CONFIRM or
 * EXPIRE.  Each matches its row only in the state the record moves it
 * from -- ACTIVE for a cancel, RESERVED for a cancel of an unpaid
 * reservation (flags 2), a confirm or an expiry -- so a second one, or one
 * the row's state contradicts, matches nothing: a conflict, and the units
 * it would move stay where they are.  @p line_row: a cart's order_lines
 * row (its line's, with the line's sku and qty) instead of the orders row
 * (a plain order, or a cart's line 0, which also keeps quota_returned).
 */
static void sql_end(struct sbuf *b, const struct lsn_record *x, int line_row)
{
	const struct flash_record *r = &x->rec;
	int from_reserved = r->type != FLASH_REC_CANCEL || (r->flags & 2u);
	sb_str(b, line_row ? "UPDATE order_lines SET status='" : "UPDATE orders SET status='");
	sb_str(b, r->type == FLASH_REC_CONFIRM ? "ACTIVE'" : r->type == FLASH_REC_EXPIRE ? "EXPIRED'" : "CANCELLED'");
	if (r->type != FLASH_REC_CONFIRM && !line_row) {
		sb_str(b, ", quota_returned=");
		sb_u64(b, (r->flags & 1u) ? 1 : 0);
	}
	sb_str(b, r->type == FLASH_REC_CONFIRM ? ", confirm_lsn=" : ", cancel_lsn=");
	sb_u64(b, x->lsn);
	sb_str(b, " WHERE order_no=");
	sb_u64(b, r->order_no);
	if (line_row) {
		sb_str(b, " AND line=");
		sb_u64(b, rec_line(r));
	}
	sb_str(b, from_reserved ? " AND status='RESERVED'" : " AND status='ACTIVE'");
	sb_str(b, " AND activity_id=");
	sb_u64(b, r->activity_id);
	sb_str(b, " AND sku_id=");
	sb_u64(b, r->sku_id);
	sb_str(b, " AND qty=");
	sb_u64(b, r->qty);
	sb_add(b, ";", 1);
}

/* ", col=col+d" (or -|d|) */
static void sql_delta(struct sbuf *b, const char *col, int64_t d)
{
	sb_str(b, col);
	sb_add(b, "=", 1);
	sb_str(b, col);
	sb_add(b, d < 0 ? "-" : "+", 1);
	sb_u64(b, d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d);
}

/* " AND col>=need" when something is needed */
static void sql_need(struct sbuf *b, const char *col, int64_t need)
{
	if (need <= 0)
		return;
	sb_str(b, " AND ");
	sb_str(b, col);
	sb_str(b, ">=");
	sb_u64(b, (uint64_t)need);
}

/* UPDATE item_stock of one sku by the changes and needed minima of @p g. */
static void sql_stock(struct sbuf *b, const struct skuagg *g)
{
	sb_str(b, "UPDATE item_stock SET ");
	sql_delta(b, "available", g->sa_avail);
	sb_str(b, ", ");
	sql_delta(b, "reserved", g->sa_resv);
	sb_str(b, ", ");
	sql_delta(b, "sold", g->sa_sold);
	sb_str(b, ", ");
	sql_delta(b, "total", g->sa_total);
	sb_str(b, ", last_lsn=GREATEST(last_lsn,");
	sb_u64(b, g->sa_lsn);
	sb_str(b, ") WHERE activity_id=");
	sb_u64(b, g->sa_activity);
	sb_str(b, " AND sku_id=");
	sb_u64(b, g->sa_sku);
	sql_need(b, "available", g->sa_need_avail);
	sql_need(b, "reserved", g->sa_need_resv);
	sql_need(b, "sold", g->sa_need_sold);
	sb_add(b, ";", 1);
}

/* sql_stock() of one record alone (the slow path). */
static void sql_stock_one(struct sbuf *b, const struct lsn_record *x, const int64_t d[3], int64_t d_total)
{
	struct skuagg g = { .sa_activity = x->rec.activity_id, .sa_sku = x->rec.sku_id, .sa_used = 1 };
	agg_step(&g, d, d_total, x->lsn);
	sql_stock(b, &g);
}

#define ORDERS_PER_INSERT 2000

/*
 * Many skus in one batch: one multi-table UPDATE per STOCK_JOIN_ROWS skus,
 * joining item_stock with a derived table of (activity, sku, deltas, needed
 * minima).  Each row matches at most once, and the statement must match as
 * many rows as it names; a row whose minima fail matches nothing, so the
 * count tells that some sku would have gone negative (the slow path then
 * finds which record).
 */
#define STOCK_JOIN_MIN  4
#define STOCK_JOIN_ROWS 1000
#define STOCK_JOIN_TAIL ") d ON s.activity_id = d.a AND s.sku_id = d.k" \
	" SET s.available = s.available + d.da, s.reserved = s.reserved + d.dr," \
	" s.sold = s.sold + d.ds, s.total = s.total + d.dt, s.last_lsn = GREATEST(s.last_lsn, d.l)" \
	" WHERE s.available >= d.na AND s.reserved >= d.nr AND s.sold >= d.ns;"

static void sql_stock_join_row(struct sbuf *b, const struct skuagg *g, int first)
{
	if (first)
		sb_str(b, "UPDATE item_stock s JOIN (SELECT ");
	else
		sb_str(b, " UNION ALL SELECT ");
	sb_u64(b, g->sa_activity);    sb_str(b, first ? " a," : ",");
	sb_u64(b, g->sa_sku);         sb_str(b, first ? " k," : ",");
	sb_i64(b, g->sa_avail);       sb_str(b, first ? " da," : ",");
	sb_i64(b, g->sa_resv);        sb_str(b, first ? " dr," : ",");
	sb_i64(b, g->sa_sold);        sb_str(b, first ? " ds," : ",");
	sb_i64(b, g->sa_total);       sb_str(b, first ? " dt," : ",");
	sb_i64(b, g->sa_need_avail);  sb_str(b, first ? " na," : ",");
	sb_i64(b, g->sa_need_resv);   sb_str(b, first ? " nr," : ",");
	sb_i64(b, g->sa_need_sold);   sb_str(b, first ? " ns," : ",");
	sb_u64(b, g->sa_lsn);         sb_str(b, first ? " l" : "");
}

/*
 * Apply recs[0..n) as a few large statements.  Returns 0 when all of them
 * did exactly what the records say, 1 when the slow path must decide (a
 * refusal, a row-count mismatch, or a batch shape the aggregate cannot
 * express: an invalid record, a record before the definition of its sku or
 * activity in the same batch, an order for an activity nobody knows), or a
 * negative result code.  On 1 the caller rolls back to its savepoint.
 */
/* Pass 1: catalog rows, and shape checks.  @return 0, 1 (the batch goes
 * the slow way) or a FLASH_E* code. */
static int fast_catalog(mdb_t *m, const struct lsn_record *recs, size_t n, size_t cap)
{
	struct sbuf *b = &m->mm_sql;
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct flash_record *r = &recs[i].rec;
		if (!rec_valid(r))
			return 1;
		if (act_is_update(r)) {
			/* after its add (record order); the scope stays, so the
			 * cache and the batch's orders do not depend on it */
			sql_activity_update(b, &recs[i]);
			if ((rc = pipe_push(m, 1)))
				return rc;
		} else if (r->type == FLASH_REC_ACTIVITY) {
			sql_activity(b, &recs[i]);
			if ((rc = pipe_push(m, 1)))
				return rc;
			if ((rc = act_put(m, r->activity_id, (r->biz_day >> 8) & 0xff)))
				return rc;
		} else if (r->type == FLASH_REC_PRICE) {
			/* after its SKU row (record order); moves no unit */
			sql_price(b, &recs[i]);
			if ((rc = pipe_push(m, 1)))
				return rc;
		} else if (r->type == FLASH_REC_SKU) {
			struct skuagg *g = agg_find(m, r->activity_id, r->sku_id, cap);
			if (g->sa_lsn)          /* stock moved before the sku existed */
				return 1;
			sql_sku(b, &recs[i]);
			if ((rc = pipe_push(m, 1)))
				return rc;
		} else if (r->type == FLASH_REC_ARCHIVE) {
			/* after its ACTIVITY row (record order), and nothing of the
			 * batch's orders depends on it: it only marks the row */
			sql_archive(b, &recs[i]);
			if ((rc = pipe_push(m, 1)))
				return rc;
		} else if (r->type == FLASH_REC_GEN) {
			continue;               /* reclamation inside the segment: nothing to apply */
		} else {
			struct skuagg *g = agg_find(m, r->activity_id, r->sku_id, cap);
			g->sa_lsn = recs[i].lsn;
			if (r->type == FLASH_REC_ORDER && act_get(m, r->activity_id) < 0)
				return 1;       /* unknown activity, or defined later */
		}
	}
	return 0;
}

/* Pass 2: orders as multi-row INSERTs, in LSN order: the orders rows (a
 * plain order, a cart's line 0), then the order_lines rows of carts
 * (@p lines 1), each a statement of its own. */
static int fast_insert(mdb_t *m, const struct lsn_record *recs, size_t n, int lines)
{
	struct sbuf *b = &m->mm_sql;
	int rc;
	size_t rows = 0;
	for (size_t i = 0; i < n; i++) {
		const struct flash_record *r = &recs[i].rec;
		if (r->type != FLASH_REC_ORDER || (lines ? !rec_is_cart(r) : rec_line(r) != 0))
			continue;
		int scope = act_get(m, r->activity_id);
		if (scope < 0)
			return 1;
		if (rows == 0)
			sb_str(b, lines ? LINE_COLS : ORDER_COLS);
		else
			sb_add(b, ",", 1);
		if (lines)
			sql_line_values(b, &recs[i]);
		else
			sql_order_values(b, &recs[i], scope, cart_lines_at(recs, n, i));
		if (++rows == ORDERS_PER_INSERT || b->sb_len >= m->mm_max_packet) {
			sb_add(b, ";", 1);
			if ((rc = pipe_push(m, (long)rows)))
				return rc;
			rows = 0;
		}
	}
	if (rows) {
		sb_add(b, ";", 1);
		if ((rc = pipe_push(m, (long)rows)))
			return rc;
	}
	return 0;
}

static int fast_orders(mdb_t *m, const struct lsn_record *recs, size_t n)
{
	int rc = fast_insert(m, recs, n, 0);
	return rc ? rc : fast_insert(m, recs, n, 1);
}

/* Pass 3: cancels, confirms and expiries one by one (each checks its
 * order), and the stock aggregates in record order. */
static int fast_cancels(mdb_t *m, const struct lsn_record *recs, size_t n, size_t cap)
{
	struct sbuf *b = &m->mm_sql;
	int64_t d[3];
	int rc;
	for (size_t i = 0; i < cap; i++)
		m->mm_agg[i].sa_lsn = 0;
	for (size_t i = 0; i < n; i++) {
		const struct flash_record *r = &recs[i].rec;
		struct skuagg *g;
		switch (r->type) {
		case FLASH_REC_CANCEL:
		case FLASH_REC_CONFIRM:
		case FLASH_REC_EXPIRE:
			if (rec_line(r) == 0) {      /* the orders row: a plain order, a cart */
				sql_end(b, &recs[i], 0);
				if ((rc = pipe_push(m, 1)))
					return rc;
			}
			if (rec_is_cart(r)) {        /* a cart's line row */
				sql_end(b, &recs[i], 1);
				if ((rc = pipe_push(m, 1)))
					return rc;
			}
			/* its units move, as an order's do */
			/* fall through */
		case FLASH_REC_ORDER:
			wal_rec_moves(r, d);
			g = agg_find(m, r->activity_id, r->sku_id, cap);
			agg_step(g, d, 0, recs[i].lsn);
			break;
		case FLASH_REC_RESTOCK:
			d[0] = r->value;
			d[1] = d[2] = 0;
			g = agg_find(m, r->activity_id, r->sku_id, cap);
			agg_step(g, d, r->value, recs[i].lsn);
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Pass 4: the aggregates touched, one UPDATE each or joined in groups. */
static int fast_stock(mdb_t *m, size_t cap)
{
	struct sbuf *b = &m->mm_sql;
	int rc;
	size_t touched = 0;
	for (size_t i = 0; i < cap; i++)
		touched += m->mm_agg[i].sa_used && m->mm_agg[i].sa_lsn;
	size_t rows_in_stmt = 0;
	for (size_t i = 0; i < cap; i++) {
		struct skuagg *g = &m->mm_agg[i];
		if (!g->sa_used || !g->sa_lsn)
			continue;
		if (touched <= STOCK_JOIN_MIN) {
			sql_stock(b, g);
			if ((rc = pipe_push(m, 1)))
				return rc;
			continue;
		}
		sql_stock_join_row(b, g, rows_in_stmt == 0);
		if (++rows_in_stmt == STOCK_JOIN_ROWS) {
			sb_str(b, STOCK_JOIN_TAIL);
			if ((rc = pipe_push(m, (long)rows_in_stmt)))
				return rc;
			rows_in_stmt = 0;
		}
	}
	if (rows_in_stmt) {
		sb_str(b, STOCK_JOIN_TAIL);
		if ((rc = pipe_push(m, (long)rows_in_stmt)))
			return rc;
	}
	return 0;
}

static int fast_apply(mdb_t *m, const struct lsn_record *recs, size_t n)
{
	int rc = act_load_missing(m, recs, n);
	if (rc)
		return rc;

	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	if (cap > m->mm_agg_cap) {
		struct skuagg *g = realloc(m->mm_agg, cap * sizeof *g);
		if (!g)
			return FLASH_ENOMEM;
		m->mm_agg = g;
		m->mm_agg_cap = cap;
	}
	memset(m->mm_agg, 0, cap * sizeof *m->mm_agg);

	struct sbuf *b = &m->mm_sql;
	sb_reset(b);
	m->mm_expect_n = 0;
	if ((rc = fast_catalog(m, recs, n, cap)) || (rc = fast_orders(m, recs, n)) ||
	    (rc = fast_cancels(m, recs, n, cap)) || (rc = fast_stock(m, cap)))
		return rc;
	return pipe_flush(m);
}

/*
 * Where the fast path's run starting at @p a must end.  It inserts a run's
 * orders before it cancels anything, so an order taking a limit slot that a
 * cancel earlier in the same run gave back would collide with the row still
 * holding it: such an order starts the next run.  Keys are 64-bit hashes of
 * (activity, user, slot): a collision only cuts a run early.  Returns a
 * value in (a, n], or 0 when out of memory.
 */
static size_t fast_run_end(mdb_t *m, const struct lsn_record *recs, size_t a, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * (n - a))
		cap *= 2;
	if (cap > m->mm_freed_cap) {
		uint64_t *t = realloc(m->mm_freed, cap * sizeof *t);
		if (!t)
			return 0;
		m->mm_freed = t;
		m->mm_freed_cap = cap;
	}
	memset(m->mm_freed, 0, cap * sizeof *m->mm_freed);
	for (size_t i = a; i < n; i++) {
		const struct flash_record *r = &recs[i].rec;
		/* a cancel or an expiry that returned the quota frees the slot */
		int cancel = (r->type == FLASH_REC_CANCEL || r->type == FLASH_REC_EXPIRE) && (r->flags & 1u);
		if ((!cancel && r->type != FLASH_REC_ORDER) || rec_line(r) != 0)
			continue;               /* a cart holds its one slot by its line 0 */
		uint64_t k = ((uint64_t)r->activity_id << 16 | r->limit_slot) * 0x9E3779B97F4A7C15ull;
		k = (k ^ r->user_id) * 0xC2B2AE3D27D4EB4Full;
		k |= 1;                                   /* 0 marks a free cell */
		size_t j = (size_t)(k >> 17) & (cap - 1);
		while (m->mm_freed[j] && m->mm_freed[j] != k)
			j = (j + 1) & (cap - 1);
		if (cancel)
			m->mm_freed[j] = k;
		else if (m->mm_freed[j] == k && i > a)
			return i;
	}
	return n;
}

/* ------------------------------------------------------------------------
 * 7. Slow path
 * ------------------------------------------------------------------------ */

static int confl_add(mdb_t *m, const struct lsn_record *x, int kind, const char *detail)
{
	if (m->mm_confl_n == m->mm_confl_cap) {
		size_t cap = m->mm_confl_cap ? m->mm_confl_cap * 2 : 16;
		struct conflict *c = realloc(m->mm_confl, cap * sizeof *c);
		if (!c)
			return FLASH_ENOMEM;
		m->mm_confl = c;
		m->mm_confl_cap = cap;
	}
	struct conflict *c = &m->mm_confl[m->mm_confl_n++];
	memset(c, 0, sizeof *c);
	c->lsn = x->lsn;
	c->order_no = (x->rec.type == FLASH_REC_ORDER || x->rec.type == FLASH_REC_CANCEL ||
	               x->rec.type == FLASH_REC_CONFIRM || x->rec.type == FLASH_REC_EXPIRE) ? x->rec.order_no : 0;
	c->activity_id = x->rec.activity_id;
	c->sku_id = x->rec.sku_id;
	c->type = x->rec.type;
	c->kind = (uint16_t)kind;
	c->line = (uint16_t)rec_line(&x->rec);
	snprintf(c->detail, sizeof c->detail, "%s", detail);
	return FLASH_OK;
}

/* Run one statement; 0 ok (rows matched in *rows), 1 record-level refusal, <0 error. */
static int slow_exec(mdb_t *m, const char *sql, size_t len, my_ulonglong *rows)
{
	if (mysql_real_query(m->mm_conn, sql, len)) {
		take_error(m);
		return err_is_conflict(m->mm_errno) ? 1 : fail_rc(m);
	}
	if (rows)
		*rows = mysql_affected_rows(m->mm_conn);
	return 0;
}

/* Describe a stock row for a conflict's detail line.  Returns 0 when the
 * row does not exist (the conflict is then a catalog one), 1 otherwise. */
static int stock_detail(mdb_t *m, const struct flash_record *r, const char *what,
                        char *buf, size_t len)
{
	char sql[160];
	int found = 1;
	snprintf(sql, sizeof sql, "SELECT available, reserved, sold FROM item_stock WHERE activity_id=%u AND sku_id=%u",
	         r->activity_id, r->sku_id);
	if (mysql_query(m->mm_conn, sql) == 0) {
		MYSQL_RES *res = mysql_store_result(m->mm_conn);
		MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
		if (row) {
			snprintf(buf, len, "%s: available %s, reserved %s, sold %s", what, row[0], row[1], row[2]);
		} else {
			snprintf(buf, len, "unknown sku %u of activity %u", r->sku_id, r->activity_id);
			found = 0;
		}
		if (res)
			mysql_free_result(res);
		return found;
	}
	take_error(m);
	snprintf(buf, len, "%s", what);
	return found;
}

/*
 * Apply one record inside the open transaction under SAVEPOINT r.
 * Returns 0 (applied), 1 (refused: rolled back to the savepoint and added
 * to the conflicts), or a negative result code.
 */
/* An order's rows: its orders row (a plain order, a cart's line 0, of
 * @p lines lines), its order_lines row (a cart's line).  @return as
 * slow_order(). */
static int slow_order_rows(mdb_t *m, const struct lsn_record *x, unsigned lines, int *kind)
{
	const struct flash_record *r = &x->rec;
	struct sbuf *b = &m->mm_tmp;
	my_ulonglong rows = 0;
	int rc = 0;
	if (rec_line(r) == 0) {
		sb_reset(b);
		sb_str(b, ORDER_COLS);
		sql_order_values(b, x, act_get(m, r->activity_id), lines);
		rc = slow_exec(m, b->sb_p, b->sb_len, &rows);
		if (rc == 1) {
			/* Which key: the order number, or the user's limit slot? */
			*kind = strstr(m->mm_error, "'PRIMARY'") ? CONFLICT_DUP_ORDER : CONFLICT_LIMIT;
			return rc;
		}
	}
	if (rc == 0 && rec_is_cart(r)) {
		sb_reset(b);
		sb_str(b, LINE_COLS);
		sql_line_values(b, x);
		rc = slow_exec(m, b->sb_p, b->sb_len, &rows);
		if (rc == 1)
			*kind = CONFLICT_DUP_ORDER;   /* the line is there already */
	}
	return rc;
}

/* An order, then its stock.  @return 0, 1 (a conflict: *kind says which)
 * or a FLASH_E* code. */
static int slow_order(mdb_t *m, const struct lsn_record *x, unsigned lines, int *kind)
{
	const struct flash_record *r = &x->rec;
	struct sbuf *b = &m->mm_tmp;
	my_ulonglong rows = 0;
	int rc = slow_order_rows(m, x, lines, kind);
	if (rc)
		return rc;
	int64_t d[3];
	wal_rec_moves(r, d);
	sb_reset(b);
	sql_stock_one(b, x, d, 0);
	rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
	if (rc == 0 && rows != 1) {
		rc = 1;
		char what[64];
		snprintf(what, sizeof what, "qty %u not available", r->qty);
		*kind = stock_detail(m, r, what, m->mm_error, sizeof m->mm_error) ?
		       CONFLICT_OVERSELL : CONFLICT_CATALOG;
	} else if (rc == 1) {
		*kind = CONFLICT_OVERSELL;
	}
	return rc;
}

/* A cancel, confirm or expiry (sql_end()), then its units moved.
 * @return as slow_order(). */
static int slow_end(mdb_t *m, const struct lsn_record *x, int *kind)
{
	const struct flash_record *r = &x->rec;
	struct sbuf *b = &m->mm_tmp;
	my_ulonglong rows = 0;
	int64_t d[3];
	int rc;
	const char *from = r->type != FLASH_REC_CANCEL || (r->flags & 2u) ? "reserved" : "active";
	*kind = r->type == FLASH_REC_CONFIRM ? CONFLICT_CONFIRM :
	        r->type == FLASH_REC_EXPIRE ? CONFLICT_EXPIRE : CONFLICT_CANCEL;
	for (int row = rec_line(r) == 0 ? 0 : 1; row < 1 + rec_is_cart(r); row++) {
		sb_reset(b);
		sql_end(b, x, row);     /* the orders row (a plain order, a cart's line 0), or a line row */
		rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
		if (rc == 0 && rows != 1) {
			rc = 1;
			snprintf(m->mm_error, sizeof m->mm_error,
			         "no %s order %llu%s with activity %u, sku %u, qty %u", from,
			         (unsigned long long)r->order_no, row ? " line" : "", r->activity_id,
			         r->sku_id, r->qty);
		}
		if (rc)
			return rc;
	}
	wal_rec_moves(r, d);
	sb_reset(b);
	sql_stock_one(b, x, d, 0);
	rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
	if (rc == 0 && rows != 1) {
		rc = 1;
		stock_detail(m, r, r->type == FLASH_REC_CONFIRM ? "confirm would make reserved negative" :
		             "cancel would make sold or reserved negative", m->mm_error, sizeof m->mm_error);
	}
	return rc;
}

static int slow_one(mdb_t *m, const struct lsn_record *x, unsigned lines)
{
	const struct flash_record *r = &x->rec;
	struct sbuf *b = &m->mm_tmp;
	char detail[200];
	int kind = 0, rc;
	my_ulonglong rows = 0;

	if (!rec_valid(r)) {
		snprintf(detail, sizeof detail, "malformed record (type %u, qty %u, order %llu)",
		         r->type, r->qty, (unsigned long long)r->order_no);
		rc = confl_add(m, x, CONFLICT_INVALID, detail);
		return rc ? rc : 1;
	}
	if (r->type == FLASH_REC_ORDER && act_get(m, r->activity_id) < 0) {
		snprintf(detail, sizeof detail, "order for unknown activity %u", r->activity_id);
		rc = confl_add(m, x, CONFLICT_CATALOG, detail);
		return rc ? rc : 1;
	}
	if (r->type == FLASH_REC_GEN)
		return 0;   /* applied: it changes no row */
	if ((rc = slow_exec(m, "SAVEPOINT r", 11, NULL)))
		return rc < 0 ? rc : FLASH_EMYSQL;

	sb_reset(b);
	switch (r->type) {
	case FLASH_REC_ACTIVITY:
		if (act_is_update(r)) {
			sql_activity_update(b, x);
			rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
			if (rc == 0 && rows != 1) {
				rc = 1;
				snprintf(m->mm_error, sizeof m->mm_error,
				         "new terms of unknown activity %u (or not live, or not of scope %u,"
				         " day offset %d)", r->activity_id, (r->biz_day >> 8) & 0xff,
				         (int)(int32_t)r->request_id);
			}
			if (rc == 1)
				kind = CONFLICT_CATALOG;
			break;
		}
		sql_activity(b, x);
		rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
		if (rc == 1)
			kind = CONFLICT_CATALOG;
		if (rc == 0)
			rc = act_put(m, r->activity_id, (r->biz_day >> 8) & 0xff);
		break;
	case FLASH_REC_PRICE:
		sql_price(b, x);
		rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
		if (rc == 0 && rows != 1) {
			rc = 1;
			snprintf(m->mm_error, sizeof m->mm_error, "price of unknown sku %u of activity %u",
			         r->sku_id, r->activity_id);
		}
		if (rc == 1)
			kind = CONFLICT_CATALOG;
		break;
	case FLASH_REC_SKU:
		sql_sku(b, x);
		rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
		if (rc == 1)
			kind = CONFLICT_CATALOG;
		break;
	case FLASH_REC_ORDER:
		rc = slow_order(m, x, lines, &kind);
		break;
	case FLASH_REC_CANCEL:
	case FLASH_REC_CONFIRM:
	case FLASH_REC_EXPIRE:
		rc = slow_end(m, x, &kind);
		break;
	case FLASH_REC_GEN:
		rc = 0;                 /* nothing to apply: see fast_apply */
		break;
	case FLASH_REC_ARCHIVE:
		sql_archive(b, x);
		rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
		if (rc == 0 && rows != 1) {
			rc = 1;
			snprintf(m->mm_error, sizeof m->mm_error, "archive of unknown activity %u",
			         r->activity_id);
		}
		if (rc == 1)
			kind = CONFLICT_CATALOG;
		break;
	case FLASH_REC_RESTOCK: {
		int64_t d[3] = { r->value, 0, 0 };
		sb_reset(b);
		sql_stock_one(b, x, d, r->value);
		rc = slow_exec(m, b->sb_p, b->sb_len - 1, &rows);
		kind = CONFLICT_RESTOCK;
		if (rc == 0 && rows != 1) {
			rc = 1;
			char what[64];
			snprintf(what, sizeof what, "restock %lld would go negative", (long long)r->value);
			if (!stock_detail(m, r, what, m->mm_error, sizeof m->mm_error))
				kind = CONFLICT_CATALOG;
		}
		break;
	}
	}
	if (rc < 0)
		return rc;
	if (rc == 1) {
		snprintf(detail, sizeof detail, "%.190s", m->mm_error);
		int rc2 = slow_exec(m, "ROLLBACK TO SAVEPOINT r", 23, NULL);
		if (rc2)
			return rc2 < 0 ? rc2 : FLASH_EMYSQL;
		rc2 = confl_add(m, x, kind, detail);
		return rc2 ? rc2 : 1;
	}
	return 0;
}

/*
 * A cart's group -- the lines of one operation, contiguous and complete
 * here (cart_prepare) -- under SAVEPOINT g: one line refused refuses them
 * all, each reported (the refused line with its own reason).  @return the
 * lines applied (all of them, or 0), or a negative code; *used: the
 * records the group took.
 */
static int slow_cart(mdb_t *m, const struct lsn_record *recs, size_t n, size_t *used)
{
	unsigned lines = cart_lines_at(recs, n, 0);
	size_t k = lines < n ? lines : n, refused = k;
	int rc;
	*used = k;
	if ((rc = slow_exec(m, "SAVEPOINT g", 11, NULL)))
		return rc < 0 ? rc : FLASH_EMYSQL;
	size_t confl0 = m->mm_confl_n;
	for (size_t i = 0; i < k && refused == k; i++) {
		if ((rc = slow_one(m, &recs[i], lines)) < 0)
			return rc;
		if (rc == 1)
			refused = i;
	}
	if (refused == k)
		return (int)k;
	if ((rc = slow_exec(m, "ROLLBACK TO SAVEPOINT g", 23, NULL)))
		return rc < 0 ? rc : FLASH_EMYSQL;
	int kind = m->mm_confl[confl0].kind;
	for (size_t i = 0; i < k; i++) {
		char detail[96];
		if (i == refused)
			continue;
		snprintf(detail, sizeof detail, "line %zu of a cart whose line %zu was refused: the"
		         " cart is all or nothing", i, refused);
		if ((rc = confl_add(m, &recs[i], kind, detail)))
			return rc;
	}
	return 0;
}

static int slow_apply(mdb_t *m, const struct lsn_record *recs, size_t n, uint64_t *applied)
{
	*applied = 0;
	for (size_t i = 0; i < n;) {
		const struct flash_record *r = &recs[i].rec;
		int rc;
		size_t used = 1;
		if (rec_is_cart(r) && rec_line(r) == 0) {
			if ((rc = slow_cart(m, recs + i, n - i, &used)) < 0)
				return rc;
			*applied += (uint64_t)rc;
		} else {
			if ((rc = slow_one(m, &recs[i], 1)) < 0)
				return rc;
			if (rc == 0)
				(*applied)++;
		}
		i += used;
		PERSIST_CRASH("apply_batch", 4);
	}
	return FLASH_OK;
}

/* Record the batch's conflicts in apply_conflicts, inside the transaction. */
static int confl_store(mdb_t *m)
{
	if (!m->mm_confl_n)
		return FLASH_OK;
	struct sbuf *b = &m->mm_tmp;
	sb_reset(b);
	sb_str(b, "INSERT INTO apply_conflicts (stream, lsn, rec_type, kind, order_no, activity_id,"
	          " sku_id, detail) VALUES ");
	for (size_t i = 0; i < m->mm_confl_n; i++) {
		const struct conflict *c = &m->mm_confl[i];
		char esc[2 * sizeof c->detail + 1];
		mysql_real_escape_string(m->mm_conn, esc, c->detail, (unsigned long)strlen(c->detail));
		sb_printf(b, "%s(%s,%llu,%u,'%s',%llu,%u,%u,'%s')", i ? "," : "", m->mm_stream_sql,
		          (unsigned long long)c->lsn, c->type, conflict_name(c->kind),
		          (unsigned long long)c->order_no, c->activity_id, c->sku_id, esc);
	}
	if (b->sb_oom)
		return FLASH_ENOMEM;
	int rc = slow_exec(m, b->sb_p, b->sb_len, NULL);
	return rc == 0 ? FLASH_OK : rc < 0 ? rc : FLASH_EMYSQL;
}

/* ------------------------------------------------------------------------
 * 8. Carts
 *
 * Every operation on a cart -- its ORDER, then its CANCEL, EXPIRE or
 * CONFIRM -- is one record per line (a group), its lines in line order and
 * its last one flagged FLASH_REC_F_LAST (api/flashstock.h section 9).  The
 * drain keeps a group's lines together in the WAL; nothing here relies on
 * it (records of other handles between them are applied as usual), but a
 * batch may still end inside a group.  A group is applied all or nothing,
 * and only once its last line is read:
 *   - complete in what the batch holds: its lines are applied together,
 *     an ORDER's where its last line is (units taken no earlier than the
 *     WAL took them: MariaDB's stock only has more meanwhile), the other
 *     types' where their line 0 is (units given back no later); the slow
 *     path applies them under one savepoint (slow_cart);
 *   - still open at the batch's end: kept in cart_pending, in the same
 *     transaction as applied_lsn, and applied by the batch that reads its
 *     last line;
 *   - never to be completed: dropped.  A handle's records reach the WAL in
 *     the order of its ring, where a cart's lines follow each other: a
 *     later record of the same slot that is not the group's next line, or
 *     a line out of order, means the rest never reached the WAL -- a cart
 *     cut by a torn WAL tail, never acknowledged and rebuilt as not placed
 *     (flash_replay), so nothing of it is applied.  So does a group open
 *     over CART_SPAN LSNs (its lines reach the ring at once and the WAL
 *     within a drain round or two): a torn cart whose slot is never used
 *     again does not wait in cart_pending forever.  The fold (fold.c)
 *     tells torn carts by the same rules.
 * A plain order's records have no cart bit and pass as they did; a batch
 * without carts, while cart_pending holds nothing of the stream, pays one
 * scan of its flags.
 * Crash points: everything here runs inside the batch's transaction.
 * ------------------------------------------------------------------------ */

#define CART_NONE  (-1)         /* mm_gid: not a cart's line */
#define CART_SPAN  (UINT64_C(1) << 20)  /* LSNs a group may stay open (fold.c's rule) */
#define CART_DROP  (-2)         /* mm_gid: a line out of order, in no group */

enum { CG_OPEN, CG_DONE, CG_DROP };

struct cart_group {
	uint64_t cg_order_no;
	uint16_t cg_type;
	uint16_t cg_slot;           /* the handle slot that wrote it */
	uint8_t  cg_state;          /* CG_* */
	uint8_t  cg_next;           /* the line expected next (lines read so far) */
	uint32_t cg_idx[FLASH_CART_LINES_MAX];  /* mm_all indexes of its lines */
};

/* Room for @p total records in mm_all, mm_gid, mm_work and as many groups. */
static int cart_reserve(mdb_t *m, size_t total)
{
	if (total <= m->mm_all_cap)
		return FLASH_OK;
	size_t cap = m->mm_all_cap ? m->mm_all_cap : 256;
	while (cap < total)
		cap *= 2;
	struct lsn_record *a = realloc(m->mm_all, cap * sizeof *a);
	if (a)
		m->mm_all = a;
	struct lsn_record *w = realloc(m->mm_work, cap * sizeof *w);
	if (w)
		m->mm_work = w;
	int32_t *gid = realloc(m->mm_gid, cap * sizeof *gid);
	if (gid)
		m->mm_gid = gid;
	struct cart_group *g = realloc(m->mm_grp, cap * sizeof *g);
	if (g)
		m->mm_grp = g;
	if (!a || !w || !gid || !g)
		return FLASH_ENOMEM;
	m->mm_all_cap = m->mm_work_cap = m->mm_grp_cap = cap;
	return FLASH_OK;
}

/* The stream's cart_pending rows into mm_all[0..*np), locked until the
 * batch ends (FOR UPDATE), in LSN order. */
static int cart_load_pending(mdb_t *m, size_t *np)
{
	char sql[256];
	*np = 0;
	snprintf(sql, sizeof sql, "SELECT lsn, rec FROM cart_pending WHERE stream=%s ORDER BY lsn"
	         " FOR UPDATE", m->mm_stream_sql);
	if (mysql_query(m->mm_conn, sql)) {
		take_error(m);
		return fail_rc(m);
	}
	MYSQL_RES *res = mysql_store_result(m->mm_conn);
	if (!res) {
		take_error(m);
		return fail_rc(m);
	}
	int rc = cart_reserve(m, (size_t)mysql_num_rows(res) + 1);
	MYSQL_ROW row;
	while (rc == FLASH_OK && (row = mysql_fetch_row(res))) {
		unsigned long *len = mysql_fetch_lengths(res);
		if (!row[0] || !row[1] || len[1] != sizeof(struct flash_record))
			continue;       /* not a record this version wrote: never applied */
		struct lsn_record *x = &m->mm_all[(*np)++];
		x->lsn = strtoull(row[0], NULL, 10);
		memcpy(&x->rec, row[1], sizeof x->rec);
	}
	mysql_free_result(res);
	return rc;
}

static void open_del(uint32_t *open, size_t *nopen, uint32_t g)
{
	for (size_t k = 0; k < *nopen; k++)
		if (open[k] == g) {
			open[k] = open[--*nopen];
			return;
		}
}

/* Drop every open group that record @p r proves torn: one of its slot, or
 * of its order and type, that is not its next line.  @return the open
 * group @p r continues, or UINT32_MAX. */
static uint32_t cart_torn_scan(mdb_t *m, uint32_t *open, size_t *nopen, const struct lsn_record *x)
{
	const struct flash_record *r = &x->rec;
	uint32_t hit = UINT32_MAX;
	int cart = rec_is_cart(r);
	for (size_t k = 0; k < *nopen;) {
		struct cart_group *o = &m->mm_grp[open[k]];
		int mine = cart && o->cg_order_no == r->order_no && o->cg_type == r->type;
		if (x->lsn - m->mm_all[o->cg_idx[0]].lsn > CART_SPAN) {
			o->cg_state = CG_DROP;  /* open too long: torn (section comment) */
			open[k] = open[--*nopen];
			continue;
		}
		if (mine && o->cg_slot == r->slot && FLASH_REC_LINE(r->flags) == o->cg_next) {
			hit = open[k++];
			continue;
		}
		if (mine || o->cg_slot == r->slot) {
			o->cg_state = CG_DROP;
			open[k] = open[--*nopen];
			continue;
		}
		k++;
	}
	return hit;
}

/* Sort mm_all[0..total) into groups (mm_grp, mm_gid).  @return groups. */
static size_t cart_group_all(mdb_t *m, size_t total, uint32_t *open)
{
	size_t ng = 0, nopen = 0;
	for (size_t i = 0; i < total; i++) {
		const struct flash_record *r = &m->mm_all[i].rec;
		uint32_t hit = cart_torn_scan(m, open, &nopen, &m->mm_all[i]);
		m->mm_gid[i] = CART_NONE;
		if (!rec_is_cart(r))
			continue;
		if (hit == UINT32_MAX) {
			if (FLASH_REC_LINE(r->flags) != 0) {
				m->mm_gid[i] = CART_DROP;
				continue;
			}
			hit = (uint32_t)ng++;
			struct cart_group *n = &m->mm_grp[hit];
			memset(n, 0, sizeof *n);
			n->cg_order_no = r->order_no;
			n->cg_type = r->type;
			n->cg_slot = r->slot;
			n->cg_state = CG_OPEN;
			open[nopen++] = hit;
		}
		struct cart_group *g = &m->mm_grp[hit];
		g->cg_idx[g->cg_next++] = (uint32_t)i;
		m->mm_gid[i] = (int32_t)hit;
		if ((r->flags & FLASH_REC_F_LAST) || g->cg_next == FLASH_CART_LINES_MAX) {
			g->cg_state = (r->flags & FLASH_REC_F_LAST) ? CG_DONE : CG_DROP;
			open_del(open, &nopen, hit);
		}
	}
	return ng;
}

/* mm_work: mm_all's plain records, and each complete group's lines
 * together at its place; *held and *dropped count the lines left out. */
static size_t cart_emit(mdb_t *m, size_t total, uint64_t *held, uint64_t *dropped)
{
	size_t k = 0;
	for (size_t i = 0; i < total; i++) {
		int32_t gi = m->mm_gid[i];
		if (gi == CART_NONE) {
			m->mm_work[k++] = m->mm_all[i];
			continue;
		}
		const struct cart_group *g = gi >= 0 ? &m->mm_grp[gi] : NULL;
		if (!g || g->cg_state == CG_DROP) {
			const struct flash_record *r = &m->mm_all[i].rec;
			/* (no wal_rec_type_name: the refill plug-in links none of the WAL) */
			mlog(m, PLOG_WARN, "cart %llu: line %u (lsn %llu, record type %u) belongs to no"
			     " complete group (a torn WAL cut it): not applied",
			     (unsigned long long)r->order_no, FLASH_REC_LINE(r->flags),
			     (unsigned long long)m->mm_all[i].lsn, r->type);
			(*dropped)++;
			continue;
		}
		if (g->cg_state == CG_OPEN) {
			(*held)++;
			continue;
		}
		uint32_t at = g->cg_type == FLASH_REC_ORDER ? g->cg_idx[g->cg_next - 1] : g->cg_idx[0];
		if (i != at)
			continue;
		for (unsigned l = 0; l < g->cg_next; l++)
			m->mm_work[k++] = m->mm_all[g->cg_idx[l]];
	}
	return k;
}

/* cart_pending after this batch: the lines of its open groups (what it
 * loaded, @p loaded rows, is replaced).  Queued on the pipeline. */
static int cart_store_pending(mdb_t *m, size_t loaded, size_t ng)
{
	static const char hex[] = "0123456789ABCDEF";
	struct sbuf *b = &m->mm_sql;
	long rows = 0;
	int rc;
	if (loaded) {
		sb_printf(b, "DELETE FROM cart_pending WHERE stream=%s;", m->mm_stream_sql);
		if ((rc = pipe_push(m, -1)))
			return rc;
	}
	for (size_t gi = 0; gi < ng; gi++) {
		const struct cart_group *g = &m->mm_grp[gi];
		for (unsigned l = 0; g->cg_state == CG_OPEN && l < g->cg_next; l++) {
			const struct lsn_record *x = &m->mm_all[g->cg_idx[l]];
			const unsigned char *p = (const unsigned char *)&x->rec;
			sb_str(b, rows++ ? ",(" : "INSERT INTO cart_pending (stream, lsn, rec) VALUES (");
			sb_str(b, m->mm_stream_sql);
			sb_add(b, ",", 1);
			sb_u64(b, x->lsn);
			sb_str(b, ",X'");
			for (size_t j = 0; j < sizeof x->rec; j++) {
				char h[2] = { hex[p[j] >> 4], hex[p[j] & 15] };
				sb_add(b, h, 2);
			}
			sb_str(b, "')");
		}
	}
	m->mm_pend_next = rows;
	if (!rows)
		return 0;
	sb_add(b, ";", 1);
	return pipe_push(m, rows);
}

/*
 * The batch in[0..n) as it is applied: *out, *nout (in itself when it has
 * no cart and cart_pending nothing of the stream).  Queues cart_pending's
 * update; res->held and res->dropped count the lines left out.
 * @return FLASH_OK or a FLASH_E* code (pipe_flush's 1 included).
 */
static int cart_prepare(mdb_t *m, const struct lsn_record *in, size_t n,
                        const struct lsn_record **out, size_t *nout, struct apply_result *res)
{
	size_t carts = 0, loaded = 0;
	int rc;
	*out = in;
	*nout = n;
	m->mm_pend_next = m->mm_pend_rows;
	for (size_t i = 0; i < n; i++)
		carts += rec_is_cart(&in[i].rec);
	if (!carts && m->mm_pend_rows == 0)
		return FLASH_OK;
	if (m->mm_pend_rows != 0 && (rc = cart_load_pending(m, &loaded)))
		return rc;
	if ((rc = cart_reserve(m, loaded + n)))
		return rc;
	memcpy(m->mm_all + loaded, in, n * sizeof *in);
	/* open groups: one per slot at most, so mm_work serves as their list */
	size_t ng = cart_group_all(m, loaded + n, (uint32_t *)m->mm_work);
	*nout = cart_emit(m, loaded + n, &res->held, &res->dropped);
	*out = m->mm_work;
	sb_reset(&m->mm_sql);
	m->mm_expect_n = 0;
	if ((rc = cart_store_pending(m, loaded, ng)) || (rc = pipe_flush(m)))
		return rc == 1 ? FLASH_EMYSQL : rc;
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 9. Batches
 * ------------------------------------------------------------------------ */

static int read_applied_lsn(mdb_t *m, int for_update, uint64_t *lsn)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT lsn FROM applied_lsn WHERE stream=%s%s", m->mm_stream_sql,
	         for_update ? " FOR UPDATE" : "");
	if (mysql_query(m->mm_conn, sql)) {
		take_error(m);
		return fail_rc(m);
	}
	MYSQL_RES *r = mysql_store_result(m->mm_conn);
	if (!r) {
		take_error(m);
		return fail_rc(m);
	}
	MYSQL_ROW row = mysql_fetch_row(r);
	*lsn = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
	int missing = !row;
	mysql_free_result(r);
	if (missing) {
		snprintf(m->mm_error, sizeof m->mm_error, "applied_lsn has no row for the stream");
		return FLASH_EMYSQL;
	}
	return FLASH_OK;
}

int mdb_applied_lsn(mdb_t *m, uint64_t *lsn)
{
	if (!m || !lsn)
		return FLASH_EINVAL;
	int rc = connect_db(m);
	if (rc)
		return rc;
	return read_applied_lsn(m, 0, lsn);
}

/* A ROLLBACK that fails leaves the session in a state we do not know (a
 * result left unread: CR_COMMANDS_OUT_OF_SYNC): closing the connection is
 * the rollback that cannot fail, and the next call connects afresh. */
static void rollback_quiet(mdb_t *m)
{
	if (m->mm_conn && mysql_query(m->mm_conn, "ROLLBACK"))
		disconnect(m);
}

/*
 * One attempt at a batch: the transaction of the file comment.  Conflicts are
 * gathered in m->mm_confl and reported by the caller only after COMMIT, so a
 * batch that is retried never reports (or counts) a conflict twice.
 */
static int apply_once(mdb_t *m, const struct lsn_record *recs, size_t n,
                      struct apply_result *res)
{
	int rc = connect_db(m);
	if (rc)
		return rc;
	m->mm_confl_n = 0;
	if (mysql_query(m->mm_conn, "START TRANSACTION")) {
		take_error(m);
		return fail_rc(m);
	}
	PERSIST_CRASH("apply_batch", 1);
	uint64_t done;
	if ((rc = read_applied_lsn(m, 1, &done)))
		goto fail;
	size_t start = 0;
	while (start < n && recs[start].lsn <= done)
		start++;
	res->skipped = start;
	res->applied = 0;
	res->slow_path = 0;
	res->applied_lsn = done;
	if (start == n) {
		rollback_quiet(m);
		return FLASH_OK;
	}
	if (!m->mm_gaps_ok) {
		/* The WAL numbers frames 1, 2, 3, ...: a hole means records were
		 * lost on the way here, and applying past it would skip them forever. */
		size_t hole = done && recs[start].lsn != done + 1 ? start : n;
		for (size_t i = start + 1; hole == n && i < n; i++)
			if (recs[i].lsn != recs[i - 1].lsn + 1)
				hole = i;
		if (hole < n) {
			uint64_t before = hole == start ? done : recs[hole - 1].lsn;
			snprintf(m->mm_error, sizeof m->mm_error,
			         "LSN %llu follows %llu: records %llu..%llu missing",
			         (unsigned long long)recs[hole].lsn, (unsigned long long)before,
			         (unsigned long long)before + 1, (unsigned long long)recs[hole].lsn - 1);
			m->mm_errno = 0;
			rollback_quiet(m);
			return FLASH_EMYSQL_GAP;
		}
	}
	/* carts: what of the batch is applied now (before the savepoint: the
	 * slow path keeps cart_pending as this leaves it) */
	const struct lsn_record *w;
	size_t nw;
	if ((rc = cart_prepare(m, recs + start, n - start, &w, &nw, res)))
		goto fail;
	if ((rc = slow_exec(m, "SAVEPOINT batch", 15, NULL)))
		goto fail;
	rc = 0;
	for (size_t a = 0; a < nw && rc == 0;) {
		size_t b = fast_run_end(m, w, a, nw);
		if (b == 0) {
			rc = FLASH_ENOMEM;
			break;
		}
		rc = fast_apply(m, w + a, b - a);
		a = b;
	}
	if (rc < 0)
		goto fail;
	if (rc == 1) {
		mlog(m, PLOG_WARN, "batch lsn %llu..%llu refused as a whole (%s);"
		     " applying record by record", (unsigned long long)recs[start].lsn,
		     (unsigned long long)recs[n - 1].lsn, m->mm_error);
		if ((rc = slow_exec(m, "ROLLBACK TO SAVEPOINT batch", 27, NULL))) {
			rc = rc < 0 ? rc : FLASH_EMYSQL;
			goto fail;
		}
		res->slow_path = 1;
		/* The fast path cached the scopes of the batch's ACTIVITY records
		 * before MySQL accepted them: start again from what MySQL holds. */
		act_reset(m);
		if ((rc = act_load_missing(m, w, nw)))
			goto fail;
		if ((rc = slow_apply(m, w, nw, &res->applied)))
			goto fail;
		if ((rc = confl_store(m)))
			goto fail;
	} else {
		res->applied = nw;
		PERSIST_CRASH("apply_batch", 3);
	}
	char sql[256];
	snprintf(sql, sizeof sql, "UPDATE applied_lsn SET lsn=%llu WHERE stream=%s",
	         (unsigned long long)recs[n - 1].lsn, m->mm_stream_sql);
	if ((rc = slow_exec(m, sql, strlen(sql), NULL))) {
		rc = rc < 0 ? rc : FLASH_EMYSQL;
		goto fail;
	}
	PERSIST_CRASH("apply_batch", 5);
	if (mysql_commit(m->mm_conn)) {
		/* Unknown outcome: the next attempt reads applied_lsn and knows. */
		take_error(m);
		rc = fail_rc(m);
		if (rc == FLASH_EMYSQL)
			rc = FLASH_EMYSQL_RETRY;
		disconnect(m);
		m->mm_pend_rows = -1;
		return rc;
	}
	PERSIST_CRASH("apply_batch", 6);
	res->applied_lsn = recs[n - 1].lsn;
	m->mm_pend_rows = m->mm_pend_next;
	return FLASH_OK;
fail:
	m->mm_pend_rows = -1;
	rollback_quiet(m);
	return rc > 0 ? FLASH_EMYSQL : rc;   /* a refusal where none can be: not retryable */
}

int mdb_apply(mdb_t *m, const struct lsn_record *recs, size_t n,
                      struct apply_result *res)
{
	struct apply_result local;
	if (!m || (n && !recs))
		return FLASH_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (recs[i].lsn == 0 || (i && recs[i].lsn <= recs[i - 1].lsn))
			return FLASH_EINVAL;
	if (!res) {
		memset(&local, 0, sizeof local);
		res = &local;
	}
	res->applied = res->skipped = res->refused = 0;
	res->held = res->dropped = 0;
	res->conflict_n = 0;
	res->slow_path = 0;
	if (n && recs[n - 1].lsn > m->mm_stats.given_lsn)
		m->mm_stats.given_lsn = recs[n - 1].lsn;

	res->applied_lsn = m->mm_stats.applied_lsn;
	int rc = apply_once(m, recs, n, res);
	if (rc) {
		res->applied = res->skipped = 0;
		if (rc == FLASH_EMYSQL_RETRY) {
			m->mm_stats.retryable_errors++;
			mlog(m, PLOG_WARN, "batch of %zu records not applied, will retry: %s (%u) on %s",
			     n, m->mm_error, m->mm_errno, m->mm_where);
		} else {
			mlog(m, PLOG_ERROR, "batch of %zu records not applied: %s (%u) on %s",
			     n, m->mm_error, m->mm_errno, m->mm_where);
		}
		return rc;
	}
	/* Committed: now count and report. */
	struct mdb_stats *st = &m->mm_stats;
	if (res->applied || res->slow_path)
		st->batches++;
	st->applied += res->applied;
	st->skipped += res->skipped;
	if (res->applied_lsn > st->applied_lsn)
		st->applied_lsn = res->applied_lsn;
	if (st->given_lsn < st->applied_lsn)
		st->given_lsn = st->applied_lsn;
	if (res->slow_path)
		st->slow_batches++;
	for (size_t i = 0; i < n; i++)   /* a cart is one order: its line 0 */
		if (recs[i].rec.type == FLASH_REC_ORDER && i >= res->skipped && rec_line(&recs[i].rec) == 0)
			st->orders++;
	res->refused = m->mm_confl_n;
	for (size_t i = 0; i < m->mm_confl_n; i++) {
		const struct conflict *c = &m->mm_confl[i];
		st->conflicts++;
		if (c->kind == CONFLICT_DUP_ORDER || c->kind == CONFLICT_LIMIT)
			st->dup_conflicts++;
		if (c->kind == CONFLICT_OVERSELL || c->kind == CONFLICT_RESTOCK)
			st->stock_conflicts++;
		if (c->type == FLASH_REC_ORDER && c->line == 0)
			st->orders--;
		mlog(m, PLOG_ERROR, "conflict %s: order %llu (lsn %llu, type %u, activity %u,"
		     " sku %u) refused: %s", conflict_name(c->kind), (unsigned long long)c->order_no,
		     (unsigned long long)c->lsn, c->type, c->activity_id, c->sku_id, c->detail);
		if (res->conflicts && res->conflict_n < res->conflict_cap)
			res->conflicts[res->conflict_n++] = *c;
	}
	m->mm_confl_n = 0;
	return FLASH_OK;
}

int mdb_apply_retry(mdb_t *m, const struct lsn_record *recs, size_t n,
                            struct apply_result *res, uint32_t max_wait_ms)
{
	uint64_t deadline = now_ms() + max_wait_ms;
	uint32_t backoff_ms = 10;
	for (;;) {
		int rc = mdb_apply(m, recs, n, res);
		if (rc != FLASH_EMYSQL_RETRY)
			return rc;
		uint64_t now = now_ms();
		if (now >= deadline)
			return rc;
		uint64_t wait = backoff_ms;
		if (now + wait > deadline)
			wait = deadline - now;
		struct timespec ts = { (time_t)(wait / 1000), (long)(wait % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		backoff_ms = backoff_ms >= 1000 ? 2000 : backoff_ms * 2;
	}
}

int mdb_stats_get(const mdb_t *m, struct mdb_stats *out)
{
	if (!m || !out)
		return FLASH_EINVAL;
	*out = m->mm_stats;
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * Open and close
 * ------------------------------------------------------------------------ */

void mdb_close(mdb_t *m)
{
	if (!m)
		return;
	disconnect(m);
	if (m->mm_pass) {
		explicit_bzero(m->mm_pass, strlen(m->mm_pass));
		free(m->mm_pass);
	}
	free(m->mm_host);
	free(m->mm_user);
	free(m->mm_db);
	free(m->mm_socket);
	free(m->mm_defaults_file);
	free(m->mm_where);
	free(m->mm_stream);
	free(m->mm_stream_sql);
	free(m->mm_act_id);
	free(m->mm_act_scope);
	free(m->mm_agg);
	free(m->mm_freed);
	free(m->mm_expect);
	free(m->mm_confl);
	free(m->mm_work);
	free(m->mm_all);
	free(m->mm_gid);
	free(m->mm_grp);
	sb_free(&m->mm_sql);
	sb_free(&m->mm_tmp);
	free(m);
}

int mdb_open(const struct mdb_opts *o, mdb_t **out)
{
	if (!out)
		return FLASH_EINVAL;
	*out = NULL;
	struct mdb_opts dflt;
	if (!o) {
		memset(&dflt, 0, sizeof dflt);
		o = &dflt;
	}
	mdb_t *m = calloc(1, sizeof *m);
	if (!m)
		return FLASH_ENOMEM;
	m->mm_pend_rows = -1;          /* cart_pending: read at the first batch */
	m->mm_log = o->log;
	m->mm_log_arg = o->log_arg;
	m->mm_log_level = o->log_level ? o->log_level : PLOG_INFO;
	m->mm_gaps_ok = o->lsn_gaps_ok;
	m->mm_require_db = o->require_db;
	m->mm_no_schema = o->no_schema;
	m->mm_connect_timeout_s = o->connect_timeout_s ? o->connect_timeout_s : 5;
	m->mm_rw_timeout_s = o->rw_timeout_s ? o->rw_timeout_s : 30;
	m->mm_max_packet = 1u << 20;

	const char *stream = o->stream ? o->stream : "wal";
	size_t sl = strlen(stream);
	int rc = FLASH_EINVAL;
	if (sl == 0 || sl > 64)
		goto fail;
	for (size_t i = 0; i < sl; i++) {
		char ch = stream[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || ch == '-' || ch == '.'))
			goto fail;
	}
	rc = FLASH_ENOMEM;
	if (!(m->mm_stream = strdup(stream)) || !(m->mm_stream_sql = malloc(sl + 3)))
		goto fail;
	snprintf(m->mm_stream_sql, sl + 3, "'%s'", stream);

	const char *url = o->url, *file = o->defaults_file;
	if (!url && !file) {
		url = getenv("FLASH_MYSQL_URL");
		if (!url || !*url) {
			url = NULL;
			file = getenv("FLASH_MYSQL_DEFAULTS_FILE");
			if (file && !*file)
				file = NULL;
		}
	}
	if (url) {
		char why[256] = "";
		rc = parse_url(m, url, why, sizeof why);
		if (rc) {
			char masked[1024];
			mdb_url_mask(url, masked, sizeof masked);
			mlog(m, PLOG_ERROR, "bad MySQL URL %s: %s (want mysql://user:pass@localhost/db"
			     "?socket=PATH)", masked, why[0] ? why : flash_strerror(rc));
			goto fail;
		}
	} else if (file) {
		rc = FLASH_ENOMEM;
		if (!(m->mm_defaults_file = strdup(file)))
			goto fail;
		size_t wl = strlen(file) + 32;
		if (!(m->mm_where = malloc(wl)))
			goto fail;
		snprintf(m->mm_where, wl, "option file %s", file);
	} else {
		mlog(m, PLOG_ERROR, "no MySQL connection given (URL, option file,"
		     " FLASH_MYSQL_URL or FLASH_MYSQL_DEFAULTS_FILE)");
		rc = FLASH_EMYSQL_CONFIG;
		goto fail;
	}
	rc = connect_db(m);
	if (rc == FLASH_OK || rc == FLASH_EMYSQL_RETRY) {
		if (rc == FLASH_OK)
			read_applied_lsn(m, 0, &m->mm_stats.applied_lsn);
		*out = m;
		return rc;
	}
fail:
	mdb_close(m);
	return rc;
}

/*
 * A plain connection for a component with its own schema (the lease agent's
 * central database): the applier's URL rules, none of its tables.  The
 * database is created first when missing and @p create_db is set.
 */
int mdb_connect_url(const char *url, uint32_t timeout_s, int create_db,
                            struct st_mysql **out, char *why, size_t cap)
{
	if (why && cap)
		why[0] = 0;
	if (!url || !out)
		return url_bad(why, cap, FLASH_EINVAL, "no URL");
	mdb_t *m = calloc(1, sizeof *m);
	if (!m)
		return FLASH_ENOMEM;
	int rc = parse_url(m, url, why, cap);
	if (rc != FLASH_OK) {
		mdb_close(m);
		return rc;
	}
	unsigned t = timeout_s ? timeout_s : 5;
	unsigned long flags = CLIENT_FOUND_ROWS;
	MYSQL *c = NULL;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!(c = mysql_init(NULL))) {
			mdb_close(m);
			return FLASH_ENOMEM;
		}
		mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &t);
		mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &t);
		mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &t);
		const char *db = attempt == 0 ? m->mm_db : NULL;
		if (mysql_real_connect(c, m->mm_host, m->mm_user, m->mm_pass, db, m->mm_port,
		                       m->mm_socket, flags))
			break;
		unsigned e = mysql_errno(c);
		if (why && cap)
			snprintf(why, cap, "connect to %s: %s (%u)", m->mm_where, mysql_error(c), e);
		mysql_close(c);
		c = NULL;
		if (e == ER_BAD_DB_ERROR && create_db && attempt == 0)
			continue;
		rc = mdb_err_retryable(e) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL_CONFIG;
		mdb_close(m);
		return rc;
	}
	if (!mysql_get_server_info(c) || mysql_select_db(c, m->mm_db) != 0) {
		char sql[300];
		if (m->mm_db == NULL || strlen(m->mm_db) > 64 || strchr(m->mm_db, '`')) {
			mysql_close(c);
			mdb_close(m);
			return url_bad(why, cap, FLASH_EMYSQL_CONFIG, "bad database name");
		}
		snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`", m->mm_db);
		if (mysql_query(c, sql) || mysql_select_db(c, m->mm_db)) {
			if (why && cap)
				snprintf(why, cap, "database %s on %s: %s", m->mm_db, m->mm_where, mysql_error(c));
			rc = mdb_err_retryable(mysql_errno(c)) ? FLASH_EMYSQL_RETRY : FLASH_EMYSQL_CONFIG;
			mysql_close(c);
			mdb_close(m);
			return rc;
		}
	}
	if (mysql_query(c, "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION',"
	                   " SESSION innodb_lock_wait_timeout = 10, SESSION autocommit = 1")) {
		if (why && cap)
			snprintf(why, cap, "session setup on %s: %s", m->mm_where, mysql_error(c));
		mysql_close(c);
		mdb_close(m);
		return FLASH_EMYSQL_RETRY;
	}
	mdb_close(m);
	*out = c;
	return FLASH_OK;
}
