/*
 * eng_mysql.c -- the database baselines, the seeds' two routes, on a private
 * MariaDB (tests/fixtures/mariadb.sh; or the server FLASH_MYSQL_SOCKET names):
 *
 *   mysql-cas         autocommit statements: INSERT the order (the UNIQUE
 *                     key (activity_id, user_id) is the one-per-user limit),
 *                     then UPDATE ... SET available = available - 1 WHERE ...
 *                     AND available >= 1; no row changed -> DELETE the order
 *                     (rollback) and SOLD_OUT.
 *   mysql-for-update  one transaction: SELECT available ... FOR UPDATE, check,
 *                     INSERT the order, UPDATE the stock, COMMIT.
 *
 * No tokens on this side: the routes are the database's alone.  One
 * connection per worker thread (--mysql-conns over all processes).
 * Durability is the server's: innodb_flush_log_at_trx_commit = 1 is "sync".
 * --break-baseline (tests only) drops the stock check of both routes.
 *
 * Records: table bench_orders; verify() sums active order units per sku,
 * counts users with more than one order, and compares with bench_item_stock.
 *
 * The server is started on first use and stopped by bench_mysql_shutdown()
 * at the end of the bench.
 */
#include "bench.h"

#include <errno.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MYSQL_BENCH_DB "flash_bench"

/* Process-wide: the server this bench started (or found). */
static struct {
	int  started;            /* we ran mariadb.sh start: stop it at the end */
	int  ready;
	char dir[256];           /* FLASH_MARIADB_DIR */
	char sock[256];          /* FLASH_MYSQL_SOCKET */
	char defaults[256];      /* FLASH_MYSQL_DEFAULTS_FILE (may be empty) */
	char script[512];
} srv;

struct mysql_worker {
	MYSQL *db;
	int    fu;               /* for-update route */
	int    brk;              /* stock check dropped */
	uint64_t retries;        /* deadlock / lock-wait retries */
};

/* ------------------------------------------------------------------------
 * Server and connections
 * ------------------------------------------------------------------------ */

static void take_export(const char *line, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);
	const char *p;

	if (strncmp(line, "export ", 7) != 0 || strncmp(line + 7, name, n) != 0 || line[7 + n] != '=')
		return;
	p = line + 7 + n + 1;
	if (*p == '\'')
		p++;
	snprintf(out, cap, "%s", p);
	out[strcspn(out, "'\n")] = '\0';
}

static int server_up(struct bench_run *run)
{
	const char *s = getenv("FLASH_MYSQL_SOCKET");
	char cmd[700], line[512];
	FILE *f;
	int st;

	if (srv.ready)
		return 0;
	if (s && *s) {
		snprintf(srv.sock, sizeof(srv.sock), "%s", s);
		s = getenv("FLASH_MYSQL_DEFAULTS_FILE");
		snprintf(srv.defaults, sizeof(srv.defaults), "%s", s ? s : "");
		srv.ready = 1;
		return 0;
	}
	if (access(run->cfg.mariadb_script, R_OK) != 0) {
		snprintf(run->err, sizeof(run->err), "no MariaDB: %s not found and FLASH_MYSQL_SOCKET unset",
		         run->cfg.mariadb_script);
		return -1;
	}
	snprintf(srv.script, sizeof(srv.script), "%s", run->cfg.mariadb_script);
	if (run->cfg.progress)
		fprintf(stderr, "[bench] starting a private MariaDB (%s start)\n", srv.script);
	snprintf(cmd, sizeof(cmd), "sh '%s' start", srv.script);
	fflush(NULL);
	f = popen(cmd, "r");
	if (!f) {
		snprintf(run->err, sizeof(run->err), "popen: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		take_export(line, "FLASH_MARIADB_DIR", srv.dir, sizeof(srv.dir));
		take_export(line, "FLASH_MYSQL_SOCKET", srv.sock, sizeof(srv.sock));
		take_export(line, "FLASH_MYSQL_DEFAULTS_FILE", srv.defaults, sizeof(srv.defaults));
	}
	st = pclose(f);
	if (srv.dir[0])
		srv.started = 1;
	if (st != 0 || !srv.sock[0]) {
		snprintf(run->err, sizeof(run->err), "%.200s start failed (status %d)", srv.script, st);
		return -1;
	}
	srv.ready = 1;
	return 0;
}

void bench_mysql_shutdown(void)
{
	char cmd[800];

	if (!srv.started)
		return;
	snprintf(cmd, sizeof(cmd), "sh '%s' stop '%s' >/dev/null", srv.script, srv.dir);
	fflush(NULL);
	if (system(cmd) != 0)
		fprintf(stderr, "[bench] warning: %s did not stop cleanly\n", cmd);
	srv.started = 0;
	srv.ready = 0;
}

static MYSQL *db_connect(const char *db, char *err, size_t cap)
{
	MYSQL *m = mysql_init(NULL);

	if (!m) {
		snprintf(err, cap, "mysql_init failed");
		return NULL;
	}
	if (srv.defaults[0]) {
		mysql_options(m, MYSQL_READ_DEFAULT_FILE, srv.defaults);
		mysql_options(m, MYSQL_READ_DEFAULT_GROUP, "client");
	}
	if (!mysql_real_connect(m, NULL, srv.defaults[0] ? NULL : "root", NULL, db, 0, srv.sock, 0)) {
		snprintf(err, cap, "connect %.100s: %.120s", srv.sock, mysql_error(m));
		mysql_close(m);
		return NULL;
	}
	return m;
}

static int q(MYSQL *m, char *err, size_t cap, const char *sql)
{
	if (mysql_real_query(m, sql, strlen(sql)) != 0) {
		snprintf(err, cap, "%.80s: %s", sql, mysql_error(m));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------ */

static void mysql_shape(struct bench_run *run)
{
	uint32_t per = (run->cfg.mysql_conns + run->cfg.procs - 1) / run->cfg.procs;

	run->cfg.threads = per ? per : 1;
	snprintf(run->conc, sizeof(run->conc), "%ux%u, %u conns", run->cfg.procs, run->cfg.threads,
	         run->cfg.procs * run->cfg.threads);
}

static int mysql_setup(struct bench_run *run)
{
	MYSQL *m;
	MYSQL_RES *r;
	MYSQL_ROW row;
	uint32_t nsku = bench_skus(run->wl), s;
	char *sql;
	size_t len;
	int rc = -1;

	if (server_up(run))
		return -1;
	m = db_connect(NULL, run->err, sizeof(run->err));
	if (!m)
		return -1;
	if (q(m, run->err, sizeof(run->err), "CREATE DATABASE IF NOT EXISTS " MYSQL_BENCH_DB) ||
	    q(m, run->err, sizeof(run->err), "USE " MYSQL_BENCH_DB) ||
	    q(m, run->err, sizeof(run->err), "DROP TABLE IF EXISTS bench_orders, bench_item_stock") ||
	    q(m, run->err, sizeof(run->err),
	      "CREATE TABLE bench_item_stock (activity_id INT UNSIGNED NOT NULL, "
	      "sku_id INT UNSIGNED NOT NULL, total BIGINT NOT NULL, available BIGINT NOT NULL, "
	      "PRIMARY KEY (activity_id, sku_id)) ENGINE=InnoDB") ||
	    q(m, run->err, sizeof(run->err),
	      "CREATE TABLE bench_orders (order_no BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
	      "activity_id INT UNSIGNED NOT NULL, sku_id INT UNSIGNED NOT NULL, "
	      "user_id BIGINT UNSIGNED NOT NULL, qty INT NOT NULL, status TINYINT NOT NULL DEFAULT 1, "
	      "UNIQUE KEY uk_user (activity_id, user_id)) ENGINE=InnoDB"))
		goto out;
	/* stock, 1000 rows per statement */
	len = 64 + 1000 * 64;
	sql = malloc(len);
	if (!sql)
		goto out;
	for (s = 1; s <= nsku; ) {
		size_t off = (size_t)snprintf(sql, len, "INSERT INTO bench_item_stock VALUES ");
		uint32_t k;
		for (k = 0; k < 1000 && s <= nsku; k++, s++) {
			uint64_t u = bench_sku_units(&run->cfg, run->wl, run->total_units, s);
			off += (size_t)snprintf(sql + off, len - off, "%s(%u,%u,%llu,%llu)", k ? "," : "",
			                        BENCH_ACTIVITY, s, (unsigned long long)u, (unsigned long long)u);
		}
		if (q(m, run->err, sizeof(run->err), sql)) {
			free(sql);
			goto out;
		}
	}
	free(sql);
	/* durability label from the server's own setting */
	if (q(m, run->err, sizeof(run->err), "SELECT @@innodb_flush_log_at_trx_commit") ||
	    !(r = mysql_store_result(m)))
		goto out;
	row = mysql_fetch_row(r);
	run->dur = row && row[0] && strcmp(row[0], "1") == 0 ? BENCH_DUR_SYNC : BENCH_DUR_ASYNC;
	mysql_free_result(r);
	snprintf(run->note, sizeof(run->note), "%s; no tokens on this side (the database route alone)%s",
	         run->eng->variant ? "SELECT ... FOR UPDATE + INSERT + UPDATE in one transaction"
	                           : "autocommit INSERT order + conditional UPDATE (DELETE on sold out)",
	         run->cfg.break_baseline ? "; BROKEN BASELINE (test): stock check removed" : "");
	rc = 0;
out:
	mysql_close(m);
	return rc;
}

static void mysql_teardown(struct bench_run *run)
{
	(void)run;   /* the server lives until bench_mysql_shutdown() */
}

/* ------------------------------------------------------------------------
 * Worker
 * ------------------------------------------------------------------------ */

static int db_fail(struct bench_worker *w, MYSQL *m, const char *what)
{
	bench_fail(w, "%s: %s", what, mysql_error(m));
	return BENCH_RC_ERROR;
}

static int retryable(MYSQL *m)
{
	unsigned e = mysql_errno(m);

	return e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT;
}

static int order_cas(struct bench_worker *w, struct mysql_worker *mw, struct bench_req *r)
{
	char sql[256];
	uint64_t no;

	snprintf(sql, sizeof(sql),
	         "INSERT INTO bench_orders (activity_id, sku_id, user_id, qty) VALUES (%u,%u,%llu,1)",
	         BENCH_ACTIVITY, r->sku, (unsigned long long)r->user);
	if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
		return mysql_errno(mw->db) == ER_DUP_ENTRY ? BENCH_RC_LIMIT : db_fail(w, mw->db, "INSERT");
	no = mysql_insert_id(mw->db);
	snprintf(sql, sizeof(sql),
	         "UPDATE bench_item_stock SET available = available - 1 WHERE activity_id = %u AND sku_id = %u%s",
	         BENCH_ACTIVITY, r->sku, mw->brk ? "" : " AND available >= 1");
	if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
		return db_fail(w, mw->db, "UPDATE");
	if (mysql_affected_rows(mw->db) == 1) {
		bench_own_push(w, no, r->sku);
		return BENCH_RC_OK;
	}
	snprintf(sql, sizeof(sql), "DELETE FROM bench_orders WHERE order_no = %llu", (unsigned long long)no);
	if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
		return db_fail(w, mw->db, "DELETE");
	return BENCH_RC_SOLD_OUT;
}

/* One FOR UPDATE transaction; BENCH_RC_COUNT means "deadlock: retry". */
static int order_fu_once(struct bench_worker *w, struct mysql_worker *mw, struct bench_req *r)
{
	char sql[256];
	MYSQL_RES *res;
	MYSQL_ROW row;
	long long avail;
	uint64_t no;

	if (mysql_real_query(mw->db, "BEGIN", 5) != 0)
		return db_fail(w, mw->db, "BEGIN");
	snprintf(sql, sizeof(sql),
	         "SELECT available FROM bench_item_stock WHERE activity_id = %u AND sku_id = %u FOR UPDATE",
	         BENCH_ACTIVITY, r->sku);
	if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
		goto err;
	if (!(res = mysql_store_result(mw->db)))
		goto err;
	row = mysql_fetch_row(res);
	avail = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	if (!mw->brk && avail < 1) {
		mysql_real_query(mw->db, "ROLLBACK", 8);
		return BENCH_RC_SOLD_OUT;
	}
	snprintf(sql, sizeof(sql),
	         "INSERT INTO bench_orders (activity_id, sku_id, user_id, qty) VALUES (%u,%u,%llu,1)",
	         BENCH_ACTIVITY, r->sku, (unsigned long long)r->user);
	if (mysql_real_query(mw->db, sql, strlen(sql)) != 0) {
		if (mysql_errno(mw->db) == ER_DUP_ENTRY) {
			mysql_real_query(mw->db, "ROLLBACK", 8);
			return BENCH_RC_LIMIT;
		}
		goto err;
	}
	no = mysql_insert_id(mw->db);
	snprintf(sql, sizeof(sql),
	         "UPDATE bench_item_stock SET available = available - 1 WHERE activity_id = %u AND sku_id = %u",
	         BENCH_ACTIVITY, r->sku);
	if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
		goto err;
	if (mysql_real_query(mw->db, "COMMIT", 6) != 0)
		goto err;
	bench_own_push(w, no, r->sku);
	return BENCH_RC_OK;
err:
	if (retryable(mw->db)) {
		mysql_real_query(mw->db, "ROLLBACK", 8);
		return BENCH_RC_COUNT;
	}
	return db_fail(w, mw->db, "order transaction");
}

static int cancel_op(struct bench_worker *w, struct mysql_worker *mw)
{
	char sql[256];
	uint64_t no;
	uint32_t sku;

	if (!bench_own_pop(w, &no, &sku))
		return BENCH_RC_NOT_FOUND;   /* nothing of ours to cancel */
	for (;;) {
		if (mw->fu && mysql_real_query(mw->db, "BEGIN", 5) != 0)
			return db_fail(w, mw->db, "BEGIN");
		snprintf(sql, sizeof(sql), "UPDATE bench_orders SET status = 2 WHERE order_no = %llu AND status = 1",
		         (unsigned long long)no);
		if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
			goto err;
		if (mysql_affected_rows(mw->db) != 1) {
			if (mw->fu)
				mysql_real_query(mw->db, "ROLLBACK", 8);
			return BENCH_RC_CANCELLED;
		}
		snprintf(sql, sizeof(sql),
		         "UPDATE bench_item_stock SET available = available + 1 WHERE activity_id = %u AND sku_id = %u",
		         BENCH_ACTIVITY, sku);
		if (mysql_real_query(mw->db, sql, strlen(sql)) != 0)
			goto err;
		if (mw->fu && mysql_real_query(mw->db, "COMMIT", 6) != 0)
			goto err;
		return BENCH_RC_OK;
err:
		if (mw->fu && retryable(mw->db)) {
			mysql_real_query(mw->db, "ROLLBACK", 8);
			mw->retries++;
			continue;
		}
		return db_fail(w, mw->db, "cancel");
	}
}

static int mysql_op(struct bench_worker *w, struct bench_req *r)
{
	struct mysql_worker *mw = w->eng;
	char sql[160];
	MYSQL_RES *res;
	int rc;

	switch (r->kind) {
	case BENCH_OP_ORDER:
		if (!mw->fu)
			return order_cas(w, mw, r);
		while ((rc = order_fu_once(w, mw, r)) == BENCH_RC_COUNT)
			mw->retries++;
		return rc;
	case BENCH_OP_QUERY:
		snprintf(sql, sizeof(sql),
		         "SELECT available FROM bench_item_stock WHERE activity_id = %u AND sku_id = %u",
		         BENCH_ACTIVITY, r->sku);
		if (mysql_real_query(mw->db, sql, strlen(sql)) != 0 || !(res = mysql_store_result(mw->db)))
			return db_fail(w, mw->db, "SELECT");
		mysql_free_result(res);
		return BENCH_RC_OK;
	default:
		return cancel_op(w, mw);
	}
}

static int mysql_thread(struct bench_worker *w)
{
	struct mysql_worker mw = { 0 };
	char err[200];
	int rc;

	mw.fu = w->run->eng->variant;
	mw.brk = w->run->cfg.break_baseline;
	mw.db = db_connect(MYSQL_BENCH_DB, err, sizeof(err));
	if (!mw.db) {
		bench_fail(w, "%s", err);
		return -1;
	}
	w->eng = &mw;
	rc = bench_loop(w, mysql_op, 1);
	w->st->ws_busy = mw.retries;
	mysql_close(mw.db);
	w->eng = NULL;
	mysql_thread_end();
	return rc;
}

/* ------------------------------------------------------------------------
 * Verify
 * ------------------------------------------------------------------------ */

static int mysql_verify(struct bench_run *run, struct bench_check *out)
{
	uint32_t nsku = bench_skus(run->wl);
	uint64_t *units = calloc(nsku + 1, sizeof(*units)), retries = 0;
	int64_t *avail = calloc(nsku + 1, sizeof(*avail));
	MYSQL *m = NULL;
	MYSQL_RES *r;
	MYSQL_ROW row;
	uint32_t s, i;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!units || !avail)
		goto out;
	m = db_connect(MYSQL_BENCH_DB, run->err, sizeof(run->err));
	if (!m)
		goto out;
	if (q(m, run->err, sizeof(run->err),
	      "SELECT sku_id, SUM(qty) FROM bench_orders WHERE status = 1 GROUP BY sku_id") ||
	    !(r = mysql_store_result(m)))
		goto out;
	while ((row = mysql_fetch_row(r)))
		if ((s = (uint32_t)strtoul(row[0], NULL, 10)) >= 1 && s <= nsku)
			units[s] = strtoull(row[1], NULL, 10);
	mysql_free_result(r);
	if (q(m, run->err, sizeof(run->err), "SELECT sku_id, available FROM bench_item_stock") ||
	    !(r = mysql_store_result(m)))
		goto out;
	while ((row = mysql_fetch_row(r)))
		if ((s = (uint32_t)strtoul(row[0], NULL, 10)) >= 1 && s <= nsku)
			avail[s] = strtoll(row[1], NULL, 10);
	mysql_free_result(r);
	if (q(m, run->err, sizeof(run->err),
	      "SELECT (SELECT COUNT(*) FROM bench_orders), (SELECT COUNT(*) FROM (SELECT user_id FROM "
	      "bench_orders GROUP BY activity_id, user_id HAVING COUNT(*) > 1) d)") ||
	    !(r = mysql_store_result(m)))
		goto out;
	row = mysql_fetch_row(r);
	out->orders = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
	out->duplicates = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
	mysql_free_result(r);
	for (s = 1; s <= nsku; s++) {
		uint64_t loaded = bench_sku_units(&run->cfg, run->wl, run->total_units, s);
		int64_t d = (int64_t)loaded - (int64_t)units[s] - avail[s];
		out->loaded += loaded;
		out->sold += units[s];
		if (units[s] > loaded)
			out->oversold += (int64_t)(units[s] - loaded);
		out->mismatch += d < 0 ? -d : d;
	}
	for (i = 0; i < run->sh->sh_nworkers; i++)
		retries += run->sh->sh_w[i].ws_busy;
	if (retries)
		snprintf(out->note, sizeof(out->note), "deadlock/lock-wait retries %llu",
		         (unsigned long long)retries);
	rc = 0;
out:
	if (m)
		mysql_close(m);
	free(units);
	free(avail);
	return rc;
}

const struct bench_engine bench_eng_mysql_cas = {
	.name = "mysql-cas",
	.variant = 0,
	.shape = mysql_shape,
	.setup = mysql_setup,
	.thread = mysql_thread,
	.verify = mysql_verify,
	.teardown = mysql_teardown,
	.durs = (1u << BENCH_DUR_ASYNC) | (1u << BENCH_DUR_SYNC),
};

const struct bench_engine bench_eng_mysql_fu = {
	.name = "mysql-for-update",
	.variant = 1,
	.shape = mysql_shape,
	.setup = mysql_setup,
	.thread = mysql_thread,
	.verify = mysql_verify,
	.teardown = mysql_teardown,
	.durs = (1u << BENCH_DUR_ASYNC) | (1u << BENCH_DUR_SYNC),
};
