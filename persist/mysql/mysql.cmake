# The MySQL side of persist/: persist/CMakeLists.txt links MariaDB
# Connector/C into flashstock_persist; this adds the applier's throughput
# bench (bench/mysql_apply_bench.c).  Included from tests/sql/mysql_tests.cmake.
include_guard(GLOBAL)
if(EXISTS ${PROJECT_SOURCE_DIR}/bench/mysql_apply_bench.c)
  add_executable(mysql_apply_bench ${PROJECT_SOURCE_DIR}/bench/mysql_apply_bench.c)
  target_link_libraries(mysql_apply_bench PRIVATE flashstock_persist)
endif()
