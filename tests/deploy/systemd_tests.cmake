# The daemon under systemd (systemd/, docs/systemd.md), without a running
# systemd (CI has none; PID 1 is not systemd):
#   systemd_unit              systemd-analyze verify of the unit (silent), its
#                             ExecStart= run as systemd expands it, and
#                             systemd-sysusers --root on the sysusers file
#   systemd_notify_protocol   READY=1 only after recovery and the first round,
#                             WATCHDOG=1 stopped by a stuck fdatasync and
#                             resumed, WATCHDOG_PID honoured, STOPPING=1 --
#                             on a datagram socket of the test's own
#   systemd_restart_recovers_if_absent  the unit's one command: a plain start
#                             after a crash, a rebuild after a reboot
if(TARGET flashstock)
  add_test(NAME systemd_unit
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/deploy/systemd_unit.sh
                   ${PROJECT_BINARY_DIR}/systemd/flashstock-serve@.service
                   ${PROJECT_SOURCE_DIR}/systemd/flashstock.sysusers $<TARGET_FILE:flashstock>)
  add_test(NAME systemd_notify_protocol
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/deploy/systemd_notify.py $<TARGET_FILE:flashstock>
                   protocol)
  add_test(NAME systemd_restart_recovers_if_absent
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/deploy/systemd_notify.py $<TARGET_FILE:flashstock>
                   restart)
  set_tests_properties(systemd_unit systemd_notify_protocol systemd_restart_recovers_if_absent
                       PROPERTIES LABELS "systemd" TIMEOUT 120)
endif()
