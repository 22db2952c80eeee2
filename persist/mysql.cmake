# The MySQL side of persist/ (mysql_apply.c, reconcile_sql.c, reconcile.c)
# needs MariaDB Connector/C.  Included once, from persist/CMakeLists.txt or
# from tests/mysql_tests.cmake, whichever comes first.
include_guard(GLOBAL)
pkg_check_modules(MARIADB REQUIRED IMPORTED_TARGET GLOBAL libmariadb)
target_link_libraries(flashstock_persist PUBLIC PkgConfig::MARIADB)
