/*
 * mysql_testutil.h -- what the MariaDB tests share.  ctest's
 * mysql_server_start fixture (tests/mysql_tests.cmake) starts one private
 * server and passes its directory in FLASH_MARIADB_DIR.
 */
#ifndef FLASH_MYSQL_TESTUTIL_H
#define FLASH_MYSQL_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>

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

#endif /* FLASH_MYSQL_TESTUTIL_H */
