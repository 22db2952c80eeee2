/*
 * test_mysql_err.c -- one classification of MariaDB errors (persist/
 * mysql_err.h), against the private MariaDB of the ctest fixture.
 *
 *   1. Each class produced for real and classified: a connection killed
 *      between statements and inside one, a node stopped (a socket and a
 *      port nobody listens on, and the fixture's server halted under an
 *      open connection) -- CONN; too many connections -- NODE; a deadlock
 *      and a lock wait timeout -- TXN; a duplicate key -- DUP; a CHECK
 *      constraint and a NULL in a NOT NULL column -- ROW; a syntax error,
 *      a missing table, a trigger named by FOLLOWS that does not exist
 *      (4031) and a result left unread (CR_COMMANDS_OUT_OF_SYNC) -- FATAL.
 *      A Galera node that is not ready needs a cluster of two
 *      (test_galera_applier.c kills one); here the server raises the same
 *      number through SIGNAL, and the client gets 1047 as a Galera node
 *      sends it.
 *   2. The numbers that cannot be made on demand (CR_OUT_OF_MEMORY, ...),
 *      by number.
 *   3. Each site decides by the class: the reconciler's queries and the
 *      feed's refill retry a node that is not ready (they called it fatal),
 *      as the applier does; the lease code retries an interrupted statement
 *      on the node that ran it (it moved to the next node); the backstop
 *      moves to its next URL only when the connection is gone or the node
 *      does not serve (every client error 2000-2999 moved it).
 *
 * A condition produced on the server by SIGNAL goes through the site's own
 * code path: the statement the site runs fails with that number.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "flashstock.h"
#include "backstop.h"
#include "feed.h"
#include "central.h"
#include "mysql_apply.h"
#include "mysql_err.h"
#include "reconcile_sql.h"
#include "mysql_testutil.h"

static char g_url[600];
static char g_db[64];
static int  g_n;

static const char *class_name(enum mdb_err k)
{
	static const char *const n[] = { "NONE", "CONN", "NODE", "TXN", "DUP", "ROW", "FATAL" };
	return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}

/* Error number @p e is of class @p want (the number and both names on failure). */
#define assert_class(e, want)                                                                   \
	do {                                                                                    \
		unsigned e_ = (e);                                                              \
		enum mdb_err got_ = mdb_err_class(e_);                          \
		if (got_ != (want))                                                             \
			fail_msg("error %u is %s, expected %s", e_, class_name(got_),           \
			         class_name(want));                                             \
	} while (0)

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static const char *sock_path(void)
{
	static char p[512];
	snprintf(p, sizeof p, "%s/mysqld.sock", mariadb_dir());
	return p;
}

/* A fresh database for the test; g_url names it. */
static void fresh(const char *name)
{
	snprintf(g_db, sizeof g_db, "fse_%s_%d_%d", name, (int)getpid(), ++g_n);
	mysql_fresh_db(g_url, sizeof g_url, g_db);
}

/* A connection of its own as root on @p db (NULL: none). */
static MYSQL *conn(const char *db)
{
	MYSQL *c = mysql_init(NULL);
	assert_non_null(c);
	unsigned t = 20;
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &t);
	mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &t);
	mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &t);
	if (!mysql_real_connect(c, NULL, "root", NULL, db, 0, sock_path(), 0))
		fail_msg("connect: %s (%u)", mysql_error(c), mysql_errno(c));
	return c;
}

/* Run @p sql, reading every result: 0, or the error number. */
static unsigned q(MYSQL *c, const char *sql)
{
	if (mysql_query(c, sql))
		return mysql_errno(c);
	MYSQL_RES *r = mysql_store_result(c);
	if (r)
		mysql_free_result(r);
	return mysql_errno(c);
}

__attribute__((format(printf, 2, 3)))
static void ok(MYSQL *c, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	if (q(c, sql))
		fail_msg("%s: %s (%u)", sql, mysql_error(c), mysql_errno(c));
}

static long long q1(MYSQL *c, const char *sql)
{
	if (mysql_query(c, sql))
		fail_msg("%s: %s (%u)", sql, mysql_error(c), mysql_errno(c));
	MYSQL_RES *r = mysql_store_result(c);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	long long v = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

/* Wait (bounded) until connection @p tid waits for a row lock.  InnoDB
 * refreshes what INNODB_TRX shows only when it was not read for 0.1 s:
 * a faster poll would read the first answer forever. */
static void wait_lock_wait(MYSQL *c, unsigned long tid)
{
	char sql[200];
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE"
	         " trx_mysql_thread_id = %lu AND trx_state = 'LOCK WAIT'", tid);
	for (int i = 0; i < 100; i++) {
		if (q1(c, sql) == 1)
			return;
		sleep_ms(200);
	}
	fail_msg("connection %lu never waited for the lock", tid);
}

/* The fixture's script: halt / resume the shared server. */
static void mariadb(const char *verb)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' >/dev/null 2>&1", getenv("FLASH_TEST_MARIADB_SH"), verb,
	         mariadb_dir());
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
}

/* A stored function that fails as a Galera node that is not ready does. */
static void make_not_ready(MYSQL *c)
{
	ok(c, "CREATE FUNCTION fse_not_ready() RETURNS BIGINT NOT DETERMINISTIC BEGIN"
	      " SIGNAL SQLSTATE '08S01' SET MYSQL_ERRNO = %u,"
	      " MESSAGE_TEXT = 'WSREP has not yet prepared node for application use'; RETURN 0; END",
	   ER_UNKNOWN_COM_ERROR);
}

/* A real CR_COMMANDS_OUT_OF_SYNC: a statement sent while a result is unread. */
static unsigned out_of_sync_errno(void)
{
	MYSQL *c = conn(NULL);
	assert_int_equal(mysql_query(c, "SELECT 1"), 0);
	unsigned e = q(c, "SELECT 2");
	mysql_close(c);
	return e;
}

/* ------------------------------------------------------------------------
 * 1. Each class, for real
 * ------------------------------------------------------------------------ */

static void test_a_connection_killed_between_statements_is_conn(void **state)
{
	(void)state;
	MYSQL *victim = conn(NULL), *killer = conn(NULL);
	ok(killer, "KILL %lu", mysql_thread_id(victim));
	unsigned e = q(victim, "SELECT 1");
	assert_true(e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST);
	assert_class(e, MDB_ERR_CONN);
	mysql_close(victim);
	mysql_close(killer);
}

static void test_a_connection_killed_inside_a_statement_is_conn(void **state)
{
	(void)state;
	MYSQL *victim = conn(NULL), *killer = conn(NULL);
	const char *sql = "SELECT SLEEP(15)";
	assert_int_equal(mysql_send_query(victim, sql, strlen(sql)), 0);
	char probe[160];
	snprintf(probe, sizeof probe, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %lu"
	         " AND INFO LIKE 'SELECT SLEEP%%'", mysql_thread_id(victim));
	for (int i = 0; i < 1000 && q1(killer, probe) == 0; i++)
		sleep_ms(10);
	ok(killer, "KILL %lu", mysql_thread_id(victim));
	assert_int_not_equal(mysql_read_query_result(victim), 0);
	unsigned e = mysql_errno(victim);
	assert_true(e == ER_CONNECTION_KILLED || e == CR_SERVER_LOST);
	assert_class(e, MDB_ERR_CONN);
	mysql_close(victim);
	mysql_close(killer);
}

static void test_a_node_nobody_listens_on_is_conn(void **state)
{
	(void)state;
	/* a socket path with no server behind it */
	char dir[] = "/tmp/fse-nobody-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/mysqld.sock", dir);
	MYSQL *c = mysql_init(NULL);
	assert_null(mysql_real_connect(c, NULL, "root", NULL, NULL, 0, path, 0));
	assert_int_equal(mysql_errno(c), CR_CONNECTION_ERROR);
	assert_class(mysql_errno(c), MDB_ERR_CONN);
	mysql_close(c);
	rmdir(dir);

	/* a TCP port nobody listens on: bound once, then released */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	close(s);
	c = mysql_init(NULL);
	unsigned proto = MYSQL_PROTOCOL_TCP;
	mysql_options(c, MYSQL_OPT_PROTOCOL, &proto);
	assert_null(mysql_real_connect(c, "127.0.0.1", "root", NULL, NULL, ntohs(a.sin_port), NULL, 0));
	assert_class(mysql_errno(c), MDB_ERR_CONN);
	mysql_close(c);
}

static int g_halted;

static int resume_if_halted(void **state)
{
	(void)state;
	if (g_halted) {
		mariadb("resume");
		g_halted = 0;
	}
	return 0;
}

static void test_a_server_stopped_under_an_open_connection_is_conn(void **state)
{
	(void)state;
	MYSQL *c = conn(NULL);
	assert_int_equal(q(c, "SELECT 1"), 0);
	g_halted = 1;
	mariadb("halt");
	unsigned e = q(c, "SELECT 1");
	assert_class(e, MDB_ERR_CONN);
	mysql_close(c);
	/* and a connect to the stopped server */
	c = mysql_init(NULL);
	assert_null(mysql_real_connect(c, NULL, "root", NULL, NULL, 0, sock_path(), 0));
	assert_class(mysql_errno(c), MDB_ERR_CONN);
	mysql_close(c);
	mariadb("resume");
	g_halted = 0;
}

static void test_galera_not_ready_as_the_server_sends_it_is_node(void **state)
{
	(void)state;
	fresh("nr");
	MYSQL *c = conn(g_db);
	make_not_ready(c);
	unsigned e = q(c, "SELECT fse_not_ready()");
	assert_int_equal(e, ER_UNKNOWN_COM_ERROR);
	assert_class(e, MDB_ERR_NODE);
	mysql_close(c);
}

static long long g_max_conn;
static MYSQL *g_held[16];

/* On the connection the test holds: a new one may find no room. */
static int restore_max_connections(void **state)
{
	(void)state;
	if (g_max_conn) {
		ok(g_held[0], "SET GLOBAL max_connections = %lld", g_max_conn);
		ok(g_held[0], "DROP USER IF EXISTS 'fse_busy'@'localhost'");
		g_max_conn = 0;
	}
	for (size_t i = 0; i < sizeof g_held / sizeof g_held[0]; i++) {
		if (g_held[i])
			mysql_close(g_held[i]);
		g_held[i] = NULL;
	}
	return 0;
}

static void test_too_many_connections_is_node(void **state)
{
	(void)state;
	MYSQL *root = conn(NULL);
	g_held[0] = root;
	ok(root, "CREATE USER IF NOT EXISTS 'fse_busy'@'localhost'");
	g_max_conn = q1(root, "SELECT @@max_connections");
	/* 10 is the smallest max_connections: hold that many, then allow no
	 * more.  A connection an earlier test closed may still be counted:
	 * when it goes, room appears, and the count is taken again. */
	size_t n = 1;
	unsigned e = 0;
	for (int tries = 0; tries < 50 && e == 0; tries++) {
		long long busy;
		while ((busy = q1(root, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
		                        " WHERE VARIABLE_NAME = 'THREADS_CONNECTED'")) < 10 &&
		       n < sizeof g_held / sizeof g_held[0])
			g_held[n++] = conn(NULL);
		ok(root, "SET GLOBAL max_connections = %lld", busy);
		MYSQL *c = mysql_init(NULL);
		if (!mysql_real_connect(c, NULL, "fse_busy", NULL, NULL, 0, sock_path(), 0))
			e = mysql_errno(c);
		mysql_close(c);
		if (e == 0)
			sleep_ms(100);
	}
	assert_int_equal(e, ER_CON_COUNT_ERROR);
	assert_class(e, MDB_ERR_NODE);
}

static void two_rows(MYSQL *c)
{
	ok(c, "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB");
	ok(c, "INSERT INTO t VALUES (1, 0), (2, 0)");
}

static void test_a_deadlock_is_txn(void **state)
{
	(void)state;
	fresh("dl");
	MYSQL *a = conn(g_db), *b = conn(g_db);
	two_rows(a);
	ok(a, "START TRANSACTION");
	ok(b, "START TRANSACTION");
	ok(a, "UPDATE t SET v = v + 1 WHERE id = 1");
	ok(b, "UPDATE t SET v = v + 1 WHERE id = 2");
	/* a waits for b's row; b then asks for a's: a cycle */
	const char *cross = "UPDATE t SET v = v + 1 WHERE id = 2";
	assert_int_equal(mysql_send_query(a, cross, strlen(cross)), 0);
	wait_lock_wait(b, mysql_thread_id(a));
	unsigned eb = q(b, "UPDATE t SET v = v + 1 WHERE id = 1");
	unsigned ea = mysql_read_query_result(a) ? mysql_errno(a) : 0;
	/* InnoDB rolls one of the two back */
	assert_true((ea == ER_LOCK_DEADLOCK) != (eb == ER_LOCK_DEADLOCK));
	assert_class(ea ? ea : eb, MDB_ERR_TXN);
	ok(a, "ROLLBACK");
	ok(b, "ROLLBACK");
	mysql_close(a);
	mysql_close(b);
}

static void test_a_lock_wait_timeout_is_txn(void **state)
{
	(void)state;
	fresh("lw");
	MYSQL *a = conn(g_db), *b = conn(g_db);
	two_rows(a);
	ok(a, "START TRANSACTION");
	ok(a, "UPDATE t SET v = v + 1 WHERE id = 1");
	ok(b, "SET SESSION innodb_lock_wait_timeout = 1");
	unsigned e = q(b, "UPDATE t SET v = v + 1 WHERE id = 1");
	assert_int_equal(e, ER_LOCK_WAIT_TIMEOUT);
	assert_class(e, MDB_ERR_TXN);
	ok(a, "ROLLBACK");
	mysql_close(a);
	mysql_close(b);
}

static void test_a_duplicate_key_is_dup(void **state)
{
	(void)state;
	fresh("dup");
	MYSQL *c = conn(g_db);
	two_rows(c);
	unsigned e = q(c, "INSERT INTO t VALUES (1, 5)");
	assert_int_equal(e, ER_DUP_ENTRY);
	assert_class(e, MDB_ERR_DUP);
	mysql_close(c);
}

static void test_a_row_the_schema_refuses_is_row(void **state)
{
	(void)state;
	fresh("row");
	MYSQL *c = conn(g_db);
	ok(c, "CREATE TABLE s (id INT PRIMARY KEY, v INT NOT NULL, CONSTRAINT v_pos CHECK (v >= 0))");
	unsigned e = q(c, "INSERT INTO s VALUES (1, -1)");
	assert_int_equal(e, ER_CONSTRAINT_FAILED);
	assert_class(e, MDB_ERR_ROW);
	e = q(c, "INSERT INTO s VALUES (2, NULL)");
	assert_int_equal(e, ER_BAD_NULL_ERROR);
	assert_class(e, MDB_ERR_ROW);
	mysql_close(c);
}

static void test_a_wrong_statement_or_a_result_left_unread_is_fatal(void **state)
{
	(void)state;
	fresh("fatal");
	MYSQL *c = conn(g_db);
	two_rows(c);
	unsigned e = q(c, "SELEC 1");
	assert_int_equal(e, ER_PARSE_ERROR);
	assert_class(e, MDB_ERR_FATAL);
	e = q(c, "SELECT * FROM no_such_table");
	assert_int_equal(e, ER_NO_SUCH_TABLE);
	assert_class(e, MDB_ERR_FATAL);
	/* 4031 here is not MySQL 8's "interaction timeout" but a trigger
	 * named by FOLLOWS that does not exist: nothing to retry */
	e = q(c, "CREATE TRIGGER t_b BEFORE INSERT ON t FOR EACH ROW FOLLOWS no_such_trigger SET NEW.v = 0");
	assert_int_equal(e, ER_REFERENCED_TRG_DOES_NOT_EXIST);   /* 4031 */
	assert_class(e, MDB_ERR_FATAL);
	mysql_close(c);
	/* a client error that is no lost connection: the server is fine */
	e = out_of_sync_errno();
	assert_int_equal(e, CR_COMMANDS_OUT_OF_SYNC);
	assert_class(e, MDB_ERR_FATAL);
}

/* ------------------------------------------------------------------------
 * 2. By number: what cannot be made on demand
 * ------------------------------------------------------------------------ */

static void test_numbers_that_cannot_be_made_on_demand(void **state)
{
	(void)state;
	static const struct { unsigned e; enum mdb_err k; } v[] = {
		{ 0, MDB_ERR_NONE },
		{ CR_UNKNOWN_ERROR, MDB_ERR_CONN },
		{ CR_CONN_HOST_ERROR, MDB_ERR_CONN },
		{ CR_UNKNOWN_HOST, MDB_ERR_CONN },
		{ CR_SERVER_LOST_EXTENDED, MDB_ERR_CONN },
		{ CR_ERR_NET_READ, MDB_ERR_CONN },
		{ CR_ERR_NET_WRITE, MDB_ERR_CONN },
		{ ER_SERVER_SHUTDOWN, MDB_ERR_CONN },
		{ ER_NET_READ_ERROR, MDB_ERR_CONN },
		{ ER_NET_ERROR_ON_WRITE, MDB_ERR_CONN },
		{ CR_OUT_OF_MEMORY, MDB_ERR_FATAL },       /* 2008: a failed malloc */
		{ CR_MALFORMED_PACKET, MDB_ERR_FATAL },
		{ CR_NO_PREPARE_STMT, MDB_ERR_FATAL },
		{ CR_VERSION_ERROR, MDB_ERR_FATAL },
		{ ER_TOO_MANY_USER_CONNECTIONS, MDB_ERR_NODE },
		{ ER_QUERY_INTERRUPTED, MDB_ERR_TXN },
		{ ER_STATEMENT_TIMEOUT, MDB_ERR_TXN },
		{ ER_CHECKREAD, MDB_ERR_TXN },
		{ ER_DUP_ENTRY_WITH_KEY_NAME, MDB_ERR_DUP },
		{ ER_NO_REFERENCED_ROW_2, MDB_ERR_ROW },
		{ ER_DATA_OUT_OF_RANGE, MDB_ERR_ROW },
		{ ER_ACCESS_DENIED_ERROR, MDB_ERR_FATAL },
		{ ER_BAD_DB_ERROR, MDB_ERR_FATAL },
		{ ER_OPTION_PREVENTS_STATEMENT, MDB_ERR_FATAL },
		{ ER_READ_ONLY_MODE, MDB_ERR_FATAL },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		assert_class(v[i].e, v[i].k);
	assert_true(mdb_err_retryable(CR_SERVER_LOST));
	assert_true(mdb_err_retryable(ER_UNKNOWN_COM_ERROR));
	assert_true(mdb_err_retryable(ER_LOCK_DEADLOCK));
	assert_false(mdb_err_retryable(ER_DUP_ENTRY));
	assert_false(mdb_err_retryable(CR_COMMANDS_OUT_OF_SYNC));
	assert_false(mdb_err_retryable(0));
}

/* ------------------------------------------------------------------------
 * 3. Each site decides by the class
 * ------------------------------------------------------------------------ */

/* The reference: the applier retries a node that is not ready. */
static void test_applier_retries_a_node_that_is_not_ready(void **state)
{
	(void)state;
	fresh("app");
	struct mdb_opts o = { .url = g_url };
	mdb_t *m;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	MYSQL *c = conn(g_db);
	make_not_ready(c);
	ok(c, "RENAME TABLE applied_lsn TO applied_lsn_t");
	ok(c, "CREATE VIEW applied_lsn AS SELECT stream, fse_not_ready() AS lsn FROM applied_lsn_t");
	uint64_t lsn;
	assert_int_equal(mdb_applied_lsn(m, &lsn), FLASH_EMYSQL_RETRY);
	mdb_close(m);
	mysql_close(c);
}

static void test_reconciler_retries_a_node_that_is_not_ready(void **state)
{
	(void)state;
	fresh("rec");
	struct mdb_opts o = { .url = g_url, .no_schema = 1 };
	mdb_t *m;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	MYSQL *c = conn(g_db);
	make_not_ready(c);
	ok(c, "CREATE VIEW activities AS SELECT 1 AS activity_id, fse_not_ready() AS archived_lsn");
	uint32_t *ids = NULL;
	size_t n = 0;
	assert_int_equal(rsql_archived(m, &ids, &n), FLASH_EMYSQL_RETRY);
	free(ids);
	mdb_close(m);
	mysql_close(c);
}

static void test_feed_refill_retries_a_node_that_is_not_ready(void **state)
{
	(void)state;
	fresh("refill");
	feed_refill_t *r;
	assert_int_equal(feed_refill_open(g_url, "wal", &r), FLASH_OK);
	struct flash_feed_rec *recs = NULL;
	size_t n = 0;
	uint64_t applied = 0;
	/* the first fetch connects and makes the applier's tables; nothing applied yet */
	assert_int_equal(feed_refill_fetch(r, 1, 5, &recs, &n, &applied), FLASH_EREFILL);
	free(recs);
	MYSQL *c = conn(g_db);
	ok(c, "UPDATE applied_lsn SET lsn = 10 WHERE stream = 'wal'");
	make_not_ready(c);
	ok(c, "RENAME TABLE item_stock TO item_stock_t");
	ok(c, "CREATE VIEW item_stock AS SELECT fse_not_ready() AS created_lsn, 0 AS activity_id,"
	      " 0 AS sku_id, 0 AS shards, 0 AS version, 0 AS price, NULL AS price_lsn, NULL AS price_ns");
	recs = NULL;
	assert_int_equal(feed_refill_fetch(r, 1, 5, &recs, &n, &applied), FLASH_EMYSQL_RETRY);
	free(recs);
	feed_refill_close(r);
	mysql_close(c);
}

static void test_lease_retries_an_interrupted_statement_on_the_node_that_ran_it(void **state)
{
	(void)state;
	fresh("lease");
	char urls[1300];
	snprintf(urls, sizeof urls, "%s,%s", g_url, g_url);   /* two nodes */
	struct central_opts o = { .urls = urls, .retry_ms = 300 };
	central_t *lc;
	assert_int_equal(central_open(&o, &lc), FLASH_OK);
	assert_int_equal(central_init(lc), FLASH_OK);
	assert_int_equal(central_pool_set(lc, 1, 1, 100), FLASH_OK);
	assert_int_equal(central_failovers(lc), 0);
	MYSQL *c = conn(g_db);
	ok(c, "CREATE TRIGGER fs_pool_interrupted BEFORE UPDATE ON fs_pool FOR EACH ROW"
	      " SIGNAL SQLSTATE '70100' SET MYSQL_ERRNO = %u, MESSAGE_TEXT = 'Query execution was"
	      " interrupted'", ER_QUERY_INTERRUPTED);
	/* the node answered: retried there until retry_ms, never a failover */
	assert_int_equal(central_pool_set(lc, 1, 1, 200), FLASH_EMYSQL_RETRY);
	assert_int_equal(central_failovers(lc), 0);
	central_close(lc);
	mysql_close(c);
}

static void test_backstop_moves_only_when_the_connection_is_gone_or_the_node_does_not_serve(void **state)
{
	(void)state;
	/* client errors that are no lost connection: refused, run again after a pause */
	assert_int_equal(backstop_err_action(out_of_sync_errno()), BACKSTOP_ERR_FAIL);
	assert_int_equal(backstop_err_action(CR_OUT_OF_MEMORY), BACKSTOP_ERR_FAIL);
	assert_int_equal(backstop_err_action(ER_REFERENCED_TRG_DOES_NOT_EXIST), BACKSTOP_ERR_FAIL);
	/* gone, or not serving: the next URL */
	assert_int_equal(backstop_err_action(CR_SERVER_LOST), BACKSTOP_ERR_MOVE);
	assert_int_equal(backstop_err_action(CR_SERVER_GONE_ERROR), BACKSTOP_ERR_MOVE);
	assert_int_equal(backstop_err_action(ER_CONNECTION_KILLED), BACKSTOP_ERR_MOVE);
	assert_int_equal(backstop_err_action(ER_UNKNOWN_COM_ERROR), BACKSTOP_ERR_MOVE);
	assert_int_equal(backstop_err_action(ER_TOO_MANY_USER_CONNECTIONS), BACKSTOP_ERR_MOVE);
	/* rolled back on a live connection: again, there */
	assert_int_equal(backstop_err_action(ER_LOCK_DEADLOCK), BACKSTOP_ERR_RETRY);
	assert_int_equal(backstop_err_action(ER_LOCK_WAIT_TIMEOUT), BACKSTOP_ERR_RETRY);
	assert_int_equal(backstop_err_action(ER_DUP_ENTRY), BACKSTOP_ERR_FAIL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_connection_killed_between_statements_is_conn),
		cmocka_unit_test(test_a_connection_killed_inside_a_statement_is_conn),
		cmocka_unit_test(test_a_node_nobody_listens_on_is_conn),
		cmocka_unit_test_teardown(test_a_server_stopped_under_an_open_connection_is_conn, resume_if_halted),
		cmocka_unit_test(test_galera_not_ready_as_the_server_sends_it_is_node),
		cmocka_unit_test_teardown(test_too_many_connections_is_node, restore_max_connections),
		cmocka_unit_test(test_a_deadlock_is_txn),
		cmocka_unit_test(test_a_lock_wait_timeout_is_txn),
		cmocka_unit_test(test_a_duplicate_key_is_dup),
		cmocka_unit_test(test_a_row_the_schema_refuses_is_row),
		cmocka_unit_test(test_a_wrong_statement_or_a_result_left_unread_is_fatal),
		cmocka_unit_test(test_numbers_that_cannot_be_made_on_demand),
		cmocka_unit_test(test_applier_retries_a_node_that_is_not_ready),
		cmocka_unit_test(test_reconciler_retries_a_node_that_is_not_ready),
		cmocka_unit_test(test_feed_refill_retries_a_node_that_is_not_ready),
		cmocka_unit_test(test_lease_retries_an_interrupted_statement_on_the_node_that_ran_it),
		cmocka_unit_test(test_backstop_moves_only_when_the_connection_is_gone_or_the_node_does_not_serve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
