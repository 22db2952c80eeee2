# Crash-point enumeration (tests/crash/crash_points.c).
#
# flashstock_crash is the engine built a second time from the same sources
# with FLASH_CRASHPOINTS=1: every FS_CRASH(op, step) can end the process with
# _exit(FLASH_CRASH_EXIT) at the n-th point reached.  Only this test links it.
# _exit is wrapped (--wrap=_exit) so a dying child can name the point it died
# at for the report.
# The library's share of persist/ (the WAL, the feed: FLASH_LIB_PERSIST_SRC)
# is in it too, so the WAL's crash points count here.
file(GLOB FLASH_CRASH_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/engine/*.c ${PROJECT_SOURCE_DIR}/api/*.c)
list(APPEND FLASH_CRASH_SRC ${FLASH_LIB_PERSIST_SRC})
if(NOT TARGET PkgConfig::MARIADB)
  pkg_check_modules(MARIADB REQUIRED QUIET IMPORTED_TARGET libmariadb)
endif()
add_library(flashstock_crash STATIC ${FLASH_CRASH_SRC})
target_compile_definitions(flashstock_crash PRIVATE FLASH_CRASHPOINTS=1)
target_include_directories(flashstock_crash PUBLIC ${PROJECT_SOURCE_DIR}/api ${PROJECT_SOURCE_DIR}/engine
                           PRIVATE ${FLASH_PERSIST_INCLUDE_DIRS})
target_link_libraries(flashstock_crash PUBLIC PkgConfig::CK Threads::Threads rt PkgConfig::MARIADB)

#
# The same program with the argument "stores" (ctest crash_stores) makes
# every store into the segment a crash point, no macro needed
# (tests/crash/storetrap.c: the segment mapped read-only, each write fault counted,
# --wrap=mmap so flash_open's own mapping is caught as it is made).
add_executable(crash_points ${CMAKE_CURRENT_SOURCE_DIR}/crash/crash_points.c ${CMAKE_CURRENT_SOURCE_DIR}/crash/storetrap.c)
target_compile_definitions(crash_points PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(crash_points PRIVATE flashstock_crash "-Wl,--wrap=_exit" "-Wl,--wrap=mmap" "-Wl,--wrap=munmap")
add_test(NAME crash_points COMMAND crash_points)
set_tests_properties(crash_points PROPERTIES LABELS "engine;crash" TIMEOUT 300)
add_test(NAME crash_stores COMMAND crash_points stores)
set_tests_properties(crash_stores PROPERTIES LABELS "engine;crash" TIMEOUT 600)
if(FLASH_SANITIZE)
  # every store of every operation still; the recoverers at the first and
  # the last victim state (the plain stage runs all 12): under ASan each
  # kill point costs about 15 ms (its fork and fresh segment, now that a
  # child fast-forwards to its store instead of trapping every store before
  # it): 92 s alone at 2 states, 81 s in the plain build at 12
  # and two recoverers in a row at the middle victim state of the three
  # victims that have them (the plain stage: at three states): 44 s
  # against 55 s at two states in the plain build, where the ASan stage,
  # CPU-bound, took 296 s of crash_stores in CI
  set_tests_properties(crash_stores PROPERTIES ENVIRONMENT "FLASH_CRASH_STATES=2;FLASH_CRASH_TWICE=1")
  # the FS_CRASH points likewise: every point of every operation, the
  # recoverers at four victim states each (first, last, two between); the
  # plain stage kills them at every one.  All of them took 123 s of a
  # 708-s ASan stage in CI, beside crash_stores' 275 s
  set_tests_properties(crash_points PROPERTIES ENVIRONMENT "FLASH_CRASH_STATES=4")
endif()

# tests/unit/test_perm_segment.c (made a program by the test_*.c glob) uses the
# shared fixtures.
if(TARGET test_perm_segment)
  target_link_libraries(test_perm_segment PRIVATE flash_test_helpers)
  set_tests_properties(test_perm_segment PROPERTIES LABELS engine TIMEOUT 60)
endif()

# The scribbler: random values in index/offset/tag fields of a live segment
# while another process calls every API; the caller must never leave its
# mapping.  Meant for the ASan+UBSan build too.
add_executable(scribble ${CMAKE_CURRENT_SOURCE_DIR}/crash/scribble.c)
target_link_libraries(scribble PRIVATE flashstock_static "-Wl,--wrap=mmap")
add_test(NAME scribble COMMAND scribble 1.0)
set_tests_properties(scribble PROPERTIES LABELS "engine;crash" TIMEOUT 120)

# Crash points in persist/ (tests/crash/crash_persist.c): the WAL's append, group
# commit and file roll-over, the daemon's round, the MySQL applier's batch.
# flashstock_persist_crash is persist/ built a second time with
# FLASH_CRASHPOINTS=1 over flashstock_crash, so PERSIST_CRASH (persist/storage/crash.h)
# and the engine's FS_CRASH share one counter.
if(TARGET flashstock_persist)
  get_target_property(FLASH_PERSIST_CRASH_SRC flashstock_persist SOURCES)
  get_target_property(FLASH_PERSIST_CRASH_LIBS flashstock_persist INTERFACE_LINK_LIBRARIES)
  get_target_property(FLASH_PERSIST_CRASH_DEFS flashstock_persist INTERFACE_COMPILE_DEFINITIONS)
  list(TRANSFORM FLASH_PERSIST_CRASH_LIBS REPLACE "^flashstock_static$" "flashstock_crash")
  # pkg-config targets are visible only in the directory that made them:
  # make persist/'s again here.
  if(NOT TARGET PkgConfig::MHD)
    pkg_check_modules(MHD REQUIRED QUIET IMPORTED_TARGET libmicrohttpd)
  endif()
  if(NOT TARGET PkgConfig::RABBITMQ)
    pkg_check_modules(RABBITMQ REQUIRED QUIET IMPORTED_TARGET librabbitmq)
  endif()
  if(NOT TARGET PkgConfig::LIBSYSTEMD)
    pkg_check_modules(LIBSYSTEMD REQUIRED QUIET IMPORTED_TARGET libsystemd)
  endif()
  add_library(flashstock_persist_crash STATIC ${FLASH_PERSIST_CRASH_SRC})
  target_compile_definitions(flashstock_persist_crash PRIVATE FLASH_CRASHPOINTS=1)
  if(FLASH_PERSIST_CRASH_DEFS)
    target_compile_definitions(flashstock_persist_crash PUBLIC ${FLASH_PERSIST_CRASH_DEFS})
  endif()
  target_include_directories(flashstock_persist_crash PUBLIC ${FLASH_PERSIST_INCLUDE_DIRS})
  target_link_libraries(flashstock_persist_crash PUBLIC ${FLASH_PERSIST_CRASH_LIBS})

  add_executable(crash_persist ${CMAKE_CURRENT_SOURCE_DIR}/crash/crash_persist.c)
  target_compile_definitions(crash_persist PRIVATE FLASH_CRASHPOINTS=1)
  target_link_libraries(crash_persist PRIVATE flashstock_persist_crash "-Wl,--wrap=_exit")
  add_test(NAME crash_persist_wal COMMAND crash_persist wal)
  set_tests_properties(crash_persist_wal PROPERTIES LABELS "persist;crash" TIMEOUT 600)
  # The applier's points need the private MariaDB of tests/sql/mysql_tests.cmake.
  add_test(NAME crash_persist_mysql COMMAND crash_persist mysql)
  set_tests_properties(crash_persist_mysql PROPERTIES LABELS "persist;crash;mysql" TIMEOUT 600
                       FIXTURES_REQUIRED mariadb RESOURCE_LOCK mariadb
                       ENVIRONMENT "FLASH_MARIADB_DIR=${CMAKE_BINARY_DIR}/mariadb-test")
endif()

# Available never below zero (tests/crash/stock_floor.c): the engine with crash
# points, fs_crashpoint() wrapped so that a second handle takes units between
# the stock CAS loop's check and its CAS -- the race every time, not by luck.
add_executable(stock_floor ${CMAKE_CURRENT_SOURCE_DIR}/crash/stock_floor.c)
target_compile_definitions(stock_floor PRIVATE FLASH_CRASHPOINTS=1)
target_link_libraries(stock_floor PRIVATE flashstock_crash PkgConfig::CMOCKA "-Wl,--wrap=fs_crashpoint")
add_test(NAME stock_floor COMMAND stock_floor)
set_tests_properties(stock_floor PROPERTIES LABELS "engine;crash" TIMEOUT 60)
