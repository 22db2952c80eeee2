/*
 * lease_testutil.h -- what the lease agent's programs share
 * (test_mysql_lease_agent.c, test_mysql_lease_suspend.c): the binary under
 * test, a fresh central database on the MariaDB fixture, one-value queries,
 * the fixture server's verbs (halt, resume, freeze, thaw) and one sample of
 * the metrics of a `serve` whose log names its port.  Each program keeps
 * its own box: what a box holds differs between them.
 */
#ifndef FLASH_LEASE_TESTUTIL_H
#define FLASH_LEASE_TESTUTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "flashstock.h"
#include "helpers.h"
#include "lease_sql.h"
#include "mysql_testutil.h"

/* The flashstock binary (ctest sets FLASH_BIN). */
static inline const char *lt_bin(void)
{
	const char *b = getenv("FLASH_BIN");
	if (!b) {
		fprintf(stderr, "FLASH_BIN is not set: run through ctest\n");
		exit(1);
	}
	return b;
}

/* A new, empty database "<prefix>_<name>_<pid>" with the central tables;
 * its URL in @p url, the open handle in *c. */
static inline void lt_central_fresh(char *url, size_t len, const char *prefix, const char *name,
                                    flash_central_t **c)
{
	char db[64];
	snprintf(db, sizeof db, "%s_%s_%d", prefix, name, (int)getpid());
	mysql_fresh_db(url, len, db);
	struct flash_central_opts o = { .urls = url };
	assert_int_equal(flash_central_open(&o, c), FLASH_OK);
	assert_int_equal(flash_central_init(*c), FLASH_OK);
}

/* The first column of the first row of a query on the central connection
 * (0 when there is none); any SQL error fails the test. */
static inline int64_t lt_q1v(flash_central_t *c, const char *fmt, va_list ap)
{
	char sql[512];
	vsnprintf(sql, sizeof sql, fmt, ap);
	MYSQL *m = flash_central_conn(c);
	assert_non_null(m);
	if (mysql_query(m, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(m));
		fail();
	}
	MYSQL_RES *r = mysql_store_result(m);
	assert_non_null(r);
	MYSQL_ROW row = mysql_fetch_row(r);
	int64_t v = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(r);
	return v;
}

/* The fixture's server: "halt", "resume", "freeze", "thaw" (fixtures'
 * mariadb.sh).  Quiet: 0 or -1. */
static inline int lt_mariadb_try(const char *verb)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "sh '%s' %s '%s' >/dev/null 2>&1", getenv("FLASH_TEST_MARIADB_SH"), verb,
	         mariadb_dir());
	return system(cmd) == 0 ? 0 : -1;
}

static inline void lt_mariadb(const char *verb)
{
	if (lt_mariadb_try(verb) != 0)
		fail_msg("mariadb.sh %s failed", verb);
}

/* One sample of metric @p name from the `serve --metrics 127.0.0.1:0`
 * whose log @p log names its port ("metrics on port N"; waited for up to
 * 10 s); UINT64_MAX when serve does not export it. */
static inline uint64_t lt_metric(const char *log, const char *name)
{
	unsigned port = 0;
	for (int i = 0; i < 500 && !port; i++) {
		FILE *f = fopen(log, "r");
		char line[1024];
		while (f && fgets(line, sizeof line, f)) {
			const char *p = strstr(line, "metrics on port ");
			if (p)
				port = (unsigned)strtoul(p + strlen("metrics on port "), NULL, 10);
		}
		if (f)
			fclose(f);
		if (!port)
			t_sleep_ms(20);
	}
	assert_true(port != 0);
	char *body = t_metrics_get((uint16_t)port);
	assert_non_null(body);
	uint64_t v = t_metrics_sample(body, name);
	free(body);
	return v;
}

#endif /* FLASH_LEASE_TESTUTIL_H */
