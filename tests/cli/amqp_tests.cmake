# The RabbitMQ sink (`flashstock feed --to amqp://`, persist/feed/amqp_sink.c)
# against a private rabbitmq-server (tests/fixtures/rabbitmq.sh): its test
# consumer (manual acks, records what arrived), a buyer that records what
# was acknowledged, and the kill tests through the real binaries.
pkg_check_modules(RABBITMQ_T REQUIRED IMPORTED_TARGET librabbitmq)
find_program(FLASH_RABBITMQ_SERVER rabbitmq-server PATHS /usr/lib/rabbitmq/bin /usr/sbin
             REQUIRED NO_DEFAULT_PATH)
find_program(FLASH_EPMD epmd REQUIRED)

add_executable(amqp_consumer ${CMAKE_CURRENT_SOURCE_DIR}/cli/amqp_consumer.c)
target_link_libraries(amqp_consumer PRIVATE PkgConfig::RABBITMQ_T)
add_executable(amqp_buyer ${CMAKE_CURRENT_SOURCE_DIR}/cli/amqp_buyer.c)
target_link_libraries(amqp_buyer PRIVATE flashstock_static)

# the kill tests through the real binaries: NAME SCRIPT TIMEOUT
foreach(t amqp_sink_delivers_every_acked_order_across_broker_kill_and_hang_sink_kill_serve_kill:cli_feed_amqp.sh:300
          amqp_sink_delivers_every_line_of_every_cart_operation_as_its_own_message:cli_feed_amqp_carts.sh:180
          amqp_sink_resends_from_confirmed_lsn_after_nack_and_stops_on_refusals:cli_feed_amqp_nack.sh:300
          amqp_sink_started_before_serve_waits_for_the_wal_directory_then_delivers:cli_feed_amqp_boot.sh:180)
  string(REPLACE ":" ";" t ${t})
  list(GET t 0 name)
  list(GET t 1 script)
  list(GET t 2 timeout)
  add_test(NAME ${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/${script} $<TARGET_FILE:flashstock>
                   $<TARGET_FILE:amqp_consumer> $<TARGET_FILE:amqp_buyer>
                   ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/rabbitmq.sh)
  set_tests_properties(${name} PROPERTIES LABELS "amqp;cli" TIMEOUT ${timeout})
endforeach()

# The sink's window, position and refusals without a broker (cmocka).
if(TARGET test_amqp_sink)
  target_link_libraries(test_amqp_sink PRIVATE flashstock_persist)
  set_tests_properties(test_amqp_sink PROPERTIES LABELS "persist;amqp" TIMEOUT 60)
endif()
