# Monitoring (dashboards/, docs/monitoring.md): the Prometheus alert rules and
# the Grafana dashboard for `flashstock serve --metrics`.  Both need the
# Debian package prometheus (prometheus and promtool; tools/run.sh installs it).
find_program(FLASH_PROMTOOL promtool REQUIRED)
find_program(FLASH_PROMETHEUS prometheus REQUIRED)

# promtool check rules + test rules (a unit test per alert, firing and quiet)
# and the rules' conventions (tests/deploy/monitoring_rules.sh).  No flashstock code
# runs: the plain build runs it, a sanitizer build would repeat it.
if(NOT FLASH_SANITIZE AND NOT FLASH_TSAN)
  add_test(NAME monitoring_rules_load_and_fire_as_their_unit_tests_say
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/monitoring_rules.sh ${FLASH_PROMTOOL}
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(monitoring_rules_load_and_fire_as_their_unit_tests_say
                       PROPERTIES LABELS "monitoring" TIMEOUT 60)
endif()

# A real Prometheus scraping a live `serve --mysql --metrics`: no alert in a
# healthy sale, FlashstockMariaDBDown fires while MariaDB is frozen (SIGSTOP)
# and goes when it is thawed, every dashboard expression returns data
# (tests/deploy/monitoring_live.sh; it starts its own MariaDB).  The plain build
# only: what it adds to the sanitizer stage's serve --mysql --metrics runs
# (test_mysql_dashboard, test_mysql_outage) is Prometheus's side, and it
# would take 40 s of that stage.
if(TARGET flashstock AND NOT FLASH_SANITIZE AND NOT FLASH_TSAN)
  add_executable(monitoring_traffic ${CMAKE_CURRENT_SOURCE_DIR}/deploy/monitoring_traffic.c)
  target_link_libraries(monitoring_traffic PRIVATE flashstock_static)
  add_test(NAME monitoring_live_mariadb_down_fires_and_every_dashboard_query_returns_data
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/monitoring_live.sh $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:monitoring_traffic> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/mariadb.sh
                   ${PROJECT_SOURCE_DIR} ${FLASH_PROMETHEUS})
  set_tests_properties(monitoring_live_mariadb_down_fires_and_every_dashboard_query_returns_data
                       PROPERTIES LABELS "monitoring;mysql" TIMEOUT 180)
endif()
