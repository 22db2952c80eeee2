/*
 * test_galera_applier.c -- the MariaDB applier against a Galera node that
 * is not ready (tests/fixtures/galera.sh, two nodes).
 *
 * A Galera node outside a primary component (its peer died: one of two is
 * no quorum) or still joining answers ER_UNKNOWN_COM_ERROR (1047, "WSREP
 * has not yet prepared node for application use") to every statement.
 * That is the server being unavailable for a while, like a server that is
 * down: the applier must say FLASH_EMYSQL_RETRY (serve starts, the applier
 * retries) and not FLASH_EMYSQL (serve refuses to start, the box cannot
 * come back while a node rejoins).  The number the node sends is the one
 * persist/mysql/mysql_err.h calls NODE, the class every part of the daemon
 * retries.  Once the node is back in a primary component, the same handle
 * works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "helpers.h"
#include "mysql_apply.h"
#include "mysql_err.h"

static char g_dir[256];
static char g_url1[1024];
static char g_sock1[512];   /* node 1's socket */

static const char *galera_sh(void)
{
	const char *s = getenv("FLASH_GALERA_SH");
	if (!s) {
		fprintf(stderr, "FLASH_GALERA_SH is not set: run through ctest\n");
		exit(1);
	}
	return s;
}

static void galera(const char *verb, const char *arg)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' %s >/dev/null", galera_sh(), verb, g_dir, arg);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
}

static int cluster_up(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/fs-galapp-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	assert_int_equal(chmod(tmpl, 0711), 0);   /* the cluster's user passes through it */
	snprintf(g_dir, sizeof g_dir, "%s/c", tmpl);
	char owner[32];
	snprintf(owner, sizeof owner, "%d", (int)getpid());
	setenv("FLASH_GALERA_OWNER", owner, 1);
	galera("start", "2");
	char path[300];
	snprintf(path, sizeof path, "%s/urls", g_dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[1024];
	assert_non_null(fgets(line, sizeof line, f));
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	/* node 1's URL, database flash_box1 (created by the applier) */
	char *cen = strstr(line, "/flash_central");
	assert_non_null(cen);
	snprintf(g_url1, sizeof g_url1, "%.*s/flash_box1%s&create_db=1", (int)(cen - line), line,
	         cen + strlen("/flash_central"));
	const char *sock = strstr(line, "socket=");
	assert_non_null(sock);
	snprintf(g_sock1, sizeof g_sock1, "%.*s", (int)strcspn(sock + 7, "&"), sock + 7);
	return 0;
}

static int cluster_down(void **state)
{
	(void)state;
	galera("stop", "");
	char parent[256];
	snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(g_dir, '/') - g_dir), g_dir);
	if (rmdir(parent) != 0)
		fprintf(stderr, "could not remove %s\n", parent);
	return 0;
}

static void test_node_without_quorum_is_a_retry_and_the_handle_works_once_it_is_back(void **state)
{
	(void)state;
	/* node 2 dies: node 1 alone is one of two, no primary component */
	galera("kill", "2");
	struct mdb_opts o = { .url = g_url1, .connect_timeout_s = 2, .rw_timeout_s = 5,
	                              .log_level = PLOG_WARN };
	mdb_t *m = NULL;
	int rc = FLASH_OK;
	/* the node notices the loss within its suspect timeout: until then it
	 * still answers (then rc is FLASH_OK and the loop goes on) */
	for (int i = 0; i < 300; i++) {
		mdb_close(m);
		m = NULL;
		rc = mdb_open(&o, &m);
		if (rc != FLASH_OK)
			break;
		t_sleep_ms(100);
	}
	assert_int_equal(rc, FLASH_EMYSQL_RETRY);
	assert_non_null(m);
	uint64_t lsn = 1;
	assert_int_equal(mdb_applied_lsn(m, &lsn), FLASH_EMYSQL_RETRY);
	/* what the node itself answers: 1047, of class NODE */
	MYSQL *raw = mysql_init(NULL);
	assert_non_null(mysql_real_connect(raw, NULL, "root", NULL, NULL, 0, g_sock1, 0));
	assert_int_not_equal(mysql_query(raw, "SELECT COUNT(*) FROM mysql.db"), 0);
	assert_int_equal(mysql_errno(raw), ER_UNKNOWN_COM_ERROR);
	assert_int_equal(mdb_err_class(mysql_errno(raw)), MDB_ERR_NODE);
	mysql_close(raw);
	/* node 2 back: a primary component of two again; the same handle works */
	galera("restart", "2");
	int ok = FLASH_EMYSQL_RETRY;
	for (int i = 0; i < 300 && ok != FLASH_OK; i++) {
		ok = mdb_applied_lsn(m, &lsn);
		if (ok != FLASH_OK)
			t_sleep_ms(100);
	}
	assert_int_equal(ok, FLASH_OK);
	assert_int_equal(lsn, 0);
	mdb_close(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_without_quorum_is_a_retry_and_the_handle_works_once_it_is_back),
	};
	return cmocka_run_group_tests(tests, cluster_up, cluster_down);
}
