/*
 * mysql_testutil.h -- what the MariaDB tests share.  ctest's
 * mysql_server_start fixture (tests/sql/mysql_tests.cmake) starts one private
 * server and passes its directory in FLASH_MARIADB_DIR.
 */
#ifndef MDB_TESTUTIL_H
#define MDB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <mysql.h>

#include "mysql_apply.h"

/* The fixture's directory (its socket is <dir>/mysqld.sock); exits when the
 * test was not started through ctest. */
static inline const char *mariadb_dir(void)
{
	const char *d = getenv("FLASH_MARIADB_DIR");
	if (!d || !*d) {
		fprintf(stderr, "FLASH_MARIADB_DIR is not set: run through ctest (mysql_server_start)\n");
		exit(1);
	}
	return d;
}

/* A new, empty database @p db on the fixture's server (dropped first if a
 * previous run left it); its URL in @p url. */
static inline void mysql_fresh_db(char *url, size_t len, const char *db)
{
	char base[512], sql[128];
	snprintf(base, sizeof base, "mysql://root@localhost/flashstock?socket=%s/mysqld.sock",
	         mariadb_dir());
	struct mdb_opts o = { .url = base };
	mdb_t *m;
	assert_int_equal(mdb_open(&o, &m), FLASH_OK);
	MYSQL *c = mdb_conn(m);
	assert_non_null(c);
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", db);
	assert_int_equal(mysql_query(c, sql), 0);
	snprintf(sql, sizeof sql, "CREATE DATABASE `%s`", db);
	assert_int_equal(mysql_query(c, sql), 0);
	mdb_close(m);
	snprintf(url, len, "mysql://root@localhost/%s?socket=%s/mysqld.sock", db, mariadb_dir());
}

#endif /* MDB_TESTUTIL_H */
