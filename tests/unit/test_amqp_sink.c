/*
 * test_amqp_sink.c -- the RabbitMQ sink's window and position
 * (persist/feed/amqp_sink.h) without a broker, and its refusals:
 *
 *  - the confirmed LSN moves only over a prefix of confirmed messages:
 *    single acks out of order leave it at the oldest unconfirmed one,
 *    a multiple ack confirms every tag up to it, records that are no
 *    message (restock, catalog) pass with the messages around them;
 *  - an ack for a tag never published and a nack drop the connection
 *    (FLASH_EAMQP_RETRY) and leave the confirmed LSN where it was, so the
 *    caller re-sends from there; a duplicate ack changes nothing;
 *  - a bad URL or window is FLASH_EAMQP_CONFIG, an unreachable broker
 *    FLASH_EAMQP_RETRY saying where, a put while disconnected moves nothing;
 *  - the body carries every field and the LSN; each order event (plain,
 *    reserved, confirmed, expired, cancelled) has its routing key; the
 *    codes have names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "amqp_sink.h"

static amqp_sink_t *new_sink(uint32_t window)
{
	struct amqp_sink_opts o;
	amqp_sink_t *s = NULL;

	amqp_sink_opts_default(&o);
	o.url = "amqp://guest:guest@127.0.0.1:1";
	o.window = window;
	assert_int_equal(amqp_sink_new(&o, &s), FLASH_OK);
	return s;
}

static void test_single_acks_out_of_order_move_only_over_a_confirmed_prefix(void **state)
{
	amqp_sink_t *s = new_sink(8);

	amqp_sink_start_at(s, 100);
	/* tags 1..4 are LSNs 101, 102, 104, 105; 103 is a restock (no message) */
	assert_int_equal(amqp_sink_test_sent(s, 101, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 102, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 103, 0), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 104, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 105, 1), FLASH_OK);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 100);
	assert_int_equal(amqp_sink_test_confirm(s, 3, 0, 0), FLASH_OK);   /* LSN 104 */
	assert_int_equal(amqp_sink_test_confirm(s, 2, 0, 0), FLASH_OK);   /* LSN 102 */
	assert_int_equal(amqp_sink_confirmed_lsn(s), 100);                /* 101 still out */
	assert_int_equal(amqp_sink_test_confirm(s, 1, 0, 0), FLASH_OK);   /* LSN 101 */
	assert_int_equal(amqp_sink_confirmed_lsn(s), 104);                /* 105 still out */
	assert_int_equal(amqp_sink_test_confirm(s, 3, 0, 0), FLASH_OK);   /* a duplicate */
	assert_int_equal(amqp_sink_confirmed_lsn(s), 104);
	assert_int_equal(amqp_sink_test_confirm(s, 4, 0, 0), FLASH_OK);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 105);
	/* a record that is no message, with nothing in flight, passes at once */
	assert_int_equal(amqp_sink_test_sent(s, 106, 0), FLASH_OK);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 106);
	struct amqp_sink_stats st;
	amqp_sink_stats_get(s, &st);
	assert_int_equal(st.acked, 4);
	assert_int_equal(st.in_flight, 0);
	amqp_sink_free(s);
}

static void test_multiple_ack_confirms_every_tag_up_to_it_across_the_ring(void **state)
{
	amqp_sink_t *s = new_sink(4);
	struct amqp_sink_stats st;

	/* go round the 4-slot ring twice: 10 messages, LSNs 1..10 */
	for (uint64_t l = 1; l <= 10; l++) {
		assert_int_equal(amqp_sink_test_sent(s, l, 1), FLASH_OK);
		if (l % 3 == 0)
			assert_int_equal(amqp_sink_test_confirm(s, l, 1, 0), FLASH_OK);
	}
	/* tags 1..9 confirmed by three multiple acks; 10 in flight */
	assert_int_equal(amqp_sink_confirmed_lsn(s), 9);
	amqp_sink_stats_get(s, &st);
	assert_int_equal(st.in_flight, 1);
	/* a full window refuses more (the real put reads confirms first) */
	assert_int_equal(amqp_sink_test_sent(s, 11, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 12, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 13, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_sent(s, 14, 1), FLASH_EINVAL);
	/* "multiple" with tag 0: everything so far */
	assert_int_equal(amqp_sink_test_confirm(s, 0, 1, 0), FLASH_OK);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 13);
	amqp_sink_free(s);
}

static void test_nack_and_unknown_tag_drop_the_connection_and_keep_the_position(void **state)
{
	amqp_sink_t *s = new_sink(8);
	struct amqp_sink_stats st;

	for (uint64_t l = 1; l <= 5; l++)
		assert_int_equal(amqp_sink_test_sent(s, l, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_confirm(s, 2, 1, 0), FLASH_OK);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 2);
	/* the broker nacks tag 4; tag 3 was never confirmed */
	assert_int_equal(amqp_sink_test_confirm(s, 4, 0, 1), FLASH_EAMQP_RETRY);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 2);
	amqp_sink_stats_get(s, &st);
	assert_int_equal(st.nacked, 1);
	assert_int_equal(st.connected, 0);
	assert_int_equal(st.conns_lost, 1);
	assert_non_null(strstr(st.last_error, "basic.nack for tag 4"));
	/* disconnected: a put is refused and moves nothing */
	struct flash_record r = { .type = FLASH_REC_ORDER, .order_no = 9 };
	assert_int_equal(amqp_sink_put(s, 6, &r), FLASH_EAMQP_RETRY);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 2);
	amqp_sink_free(s);

	/* an ack for a tag never published is a broken stream: drop it too */
	s = new_sink(8);
	assert_int_equal(amqp_sink_test_sent(s, 1, 1), FLASH_OK);
	assert_int_equal(amqp_sink_test_confirm(s, 2, 0, 0), FLASH_EAMQP_RETRY);
	assert_int_equal(amqp_sink_confirmed_lsn(s), 0);
	amqp_sink_free(s);
}

static void test_bad_urls_and_windows_are_config_errors(void **state)
{
	struct amqp_sink_opts o;
	amqp_sink_t *s = NULL;

	amqp_sink_opts_default(&o);
	assert_int_equal(amqp_sink_new(&o, &s), FLASH_EINVAL);   /* no URL */
	o.url = "http://127.0.0.1:5672/";
	assert_int_equal(amqp_sink_new(&o, &s), FLASH_EAMQP_CONFIG);
	o.url = "amqp://127.0.0.1:notaport";
	assert_int_equal(amqp_sink_new(&o, &s), FLASH_EAMQP_CONFIG);
	o.url = "amqp://127.0.0.1:5672";
	o.window = AMQP_SINK_WINDOW_MAX + 1;
	assert_int_equal(amqp_sink_new(&o, &s), FLASH_EAMQP_CONFIG);
	assert_null(s);
}

static void test_unreachable_broker_is_retry_and_says_where(void **state)
{
	amqp_sink_t *s = new_sink(8);   /* 127.0.0.1:1: nothing listens */
	struct amqp_sink_stats st;

	assert_int_equal(amqp_sink_connect(s), FLASH_EAMQP_RETRY);
	amqp_sink_stats_get(s, &st);
	assert_int_equal(st.connected, 0);
	assert_int_equal(st.connects, 0);
	assert_non_null(strstr(st.last_error, "connect 127.0.0.1:1"));
	assert_int_equal(amqp_sink_poll(s, 10), FLASH_EAMQP_RETRY);
	amqp_sink_free(s);
}

/* The body names each field for what it holds in the record's type, as
 * `feed --json` does: a cancel's flags are quota_returned, and the members
 * an order or a cancel leaves unused (a cancel's value and request_id) are
 * not in it. */
static void test_body_names_every_field_of_its_type_and_the_lsn(void **state)
{
	struct flash_record r = { .type = FLASH_REC_CANCEL, .slot = 3, .activity_id = 7, .sku_id = 11,
	                          .qty = 2, .order_no = 4242, .user_id = 99, .value = -5,
	                          .ts_ns = 1700000000123456789LL, .biz_day = 19000, .limit_slot = 1,
	                          .flags = 1, .request_id = 555 };
	char buf[512];
	size_t n = amqp_sink_body(buf, sizeof buf, 77, &r);

	assert_true(n > 0);
	assert_string_equal(buf,
	                    "{\"lsn\":77,\"type\":\"cancel\",\"slot\":3,\"activity_id\":7,\"sku_id\":11,"
	                    "\"qty\":2,\"order_no\":4242,\"user_id\":99,\"ts_ns\":1700000000123456789,"
	                    "\"biz_day\":19000,\"limit_slot\":1,\"quota_returned\":1}");
	r.type = FLASH_REC_ORDER;
	r.flags = 0x8012;
	r.value = 0;                /* a plain order (else a reservation's pay-by time) */
	n = amqp_sink_body(buf, sizeof buf, 78, &r);
	assert_true(n > 0);
	assert_string_equal(buf,
	                    "{\"lsn\":78,\"type\":\"order\",\"slot\":3,\"activity_id\":7,\"sku_id\":11,"
	                    "\"qty\":2,\"order_no\":4242,\"user_id\":99,\"ts_ns\":1700000000123456789,"
	                    "\"biz_day\":19000,\"limit_slot\":1,\"request_id\":555,\"flags\":32786}");
	assert_int_equal(amqp_sink_body(buf, 10, 77, &r), 0);   /* does not fit: nothing */
}

/* Each order event has its own routing key: a reservation is not "order",
 * so a consumer that ships every "order" never ships one unpaid; its
 * confirm ("order.confirmed") is what to ship, its expiry and a cancel give
 * it up; the keys of before reservations stay; other records are no message. */
static void test_each_order_event_has_its_own_routing_key(void **state)
{
	struct flash_record r = { .type = FLASH_REC_ORDER, .activity_id = 7, .sku_id = 11, .qty = 2,
	                          .order_no = 4242, .user_id = 99 };
	char buf[512];

	assert_string_equal(amqp_sink_event(&r), "order");
	r.value = 1700000900000000000LL;         /* a pay-by time: a reservation */
	assert_string_equal(amqp_sink_event(&r), "order.reserved");
	r.type = FLASH_REC_CONFIRM;
	assert_string_equal(amqp_sink_event(&r), "order.confirmed");
	assert_true(amqp_sink_body(buf, sizeof buf, 79, &r) > 0);
	assert_non_null(strstr(buf, "\"type\":\"confirm\","));
	assert_non_null(strstr(buf, "\"pay_by_ns\":1700000900000000000}"));
	r.type = FLASH_REC_EXPIRE;
	assert_string_equal(amqp_sink_event(&r), "order.expired");
	r.type = FLASH_REC_CANCEL;
	r.flags = 2;                               /* an unpaid reservation given up */
	assert_string_equal(amqp_sink_event(&r), "order.cancelled");
	r.flags = 1;                               /* a plain order's cancel keeps its key */
	assert_string_equal(amqp_sink_event(&r), "cancel");
	r.flags = 0;
	for (uint16_t t = FLASH_REC_RESTOCK; t <= FLASH_REC_ARCHIVE; t++) {
		if (t == FLASH_REC_CANCEL)
			continue;
		r.type = t;
		assert_null(amqp_sink_event(&r));
	}
	r.type = 11;
	assert_null(amqp_sink_event(&r));
	(void)state;
}

/* A cart's lines are one message each, under the routing key of their type
 * (as a plain order's); the body says which line and whether it is the last,
 * and the message-id adds the line, so a consumer dropping duplicates by
 * (type, message-id) drops no line of a cart.  A plain order shows neither. */
static void test_cart_lines_are_messages_with_line_last_and_a_message_id_each(void **state)
{
	struct flash_record r = { .type = FLASH_REC_ORDER, .slot = 2, .activity_id = 7, .sku_id = 12,
	                          .qty = 1, .order_no = 4242, .user_id = 99, .ts_ns = 5,
	                          .limit_slot = 1,
	                          .flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(2) | FLASH_REC_F_LAST };
	char buf[512], id0[AMQP_SINK_MSGID_MAX], id2[AMQP_SINK_MSGID_MAX];

	assert_string_equal(amqp_sink_event(&r), "order");
	assert_true(amqp_sink_body(buf, sizeof buf, 90, &r) > 0);
	assert_string_equal(buf, "{\"lsn\":90,\"type\":\"order\",\"slot\":2,\"activity_id\":7,"
	                         "\"sku_id\":12,\"qty\":1,\"order_no\":4242,\"user_id\":99,"
	                         "\"ts_ns\":5,\"biz_day\":0,\"limit_slot\":1,\"request_id\":0,"
	                         "\"flags\":2816,\"line\":2,\"last\":1}");
	amqp_sink_msgid(id2, sizeof id2, &r);
	assert_string_equal(id2, "4242-2");
	r.flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(0);
	amqp_sink_msgid(id0, sizeof id0, &r);
	assert_string_equal(id0, "4242-0");
	r.type = FLASH_REC_CANCEL;
	r.flags |= 1;                              /* the cart's quota came back */
	assert_string_equal(amqp_sink_event(&r), "cancel");
	assert_true(amqp_sink_body(buf, sizeof buf, 91, &r) > 0);
	assert_non_null(strstr(buf, "\"quota_returned\":1,\"line\":0,\"last\":0}"));
	r.type = FLASH_REC_EXPIRE;
	r.flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(15) | FLASH_REC_F_LAST | 1;
	r.value = 77;
	assert_string_equal(amqp_sink_event(&r), "order.expired");
	assert_true(amqp_sink_body(buf, sizeof buf, 92, &r) > 0);
	assert_non_null(strstr(buf, "\"pay_by_ns\":77,\"line\":15,\"last\":1}"));
	amqp_sink_msgid(id2, sizeof id2, &r);
	assert_string_equal(id2, "4242-15");
	r.flags = 1;                               /* a plain order: as before carts */
	assert_true(amqp_sink_body(buf, sizeof buf, 93, &r) > 0);
	assert_null(strstr(buf, "\"line\""));
	assert_null(strstr(buf, "\"last\""));
	amqp_sink_msgid(id2, sizeof id2, &r);
	assert_string_equal(id2, "4242");
	r.order_no = UINT64_MAX;                   /* the widest id fits */
	r.flags = FLASH_REC_F_CART | FLASH_REC_F_LINE(15);
	amqp_sink_msgid(id2, sizeof id2, &r);
	assert_string_equal(id2, "18446744073709551615-15");
	(void)state;
}

/* A change of terms is a message, as the order events are: new terms of an
 * activity (an ACTIVITY record with flags 1) are "activity.updated", a
 * sku's price "sku.price"; the add of an activity or a sku stays no
 * message.  The body names the fields as `wal dump` does. */
static void test_terms_changes_have_their_own_routing_keys_and_adds_none(void **state)
{
	struct flash_record r = { .type = FLASH_REC_ACTIVITY, .activity_id = 7, .order_no = 31,
	                          .biz_day = 2 | 0u << 8 | 1u << 16, .limit_slot = 3, .value = 1000,
	                          .ts_ns = 2000, .flags = 1 };
	char buf[512];

	assert_string_equal(amqp_sink_event(&r), "activity.updated");
	assert_true(amqp_sink_body(buf, sizeof buf, 80, &r) > 0);
	assert_string_equal(buf, "{\"lsn\":80,\"type\":\"activity\",\"slot\":0,\"activity_id\":7,"
	                         "\"start_ns\":1000,\"end_ns\":2000,\"limit_per_user\":2,\"scope\":0,"
	                         "\"flags\":1,\"max_qty\":3,\"day_offset_s\":0,\"version\":31,\"update\":1}");
	r.flags = 0;                               /* the add: no message, as before */
	assert_null(amqp_sink_event(&r));
	r.type = FLASH_REC_SKU;
	r.flags = 1;
	assert_null(amqp_sink_event(&r));
	struct flash_record p = { .type = FLASH_REC_PRICE, .activity_id = 7, .sku_id = 11, .value = 1999,
	                          .order_no = 32, .ts_ns = 1700000000000000000LL };
	assert_string_equal(amqp_sink_event(&p), "sku.price");
	assert_true(amqp_sink_body(buf, sizeof buf, 81, &p) > 0);
	assert_string_equal(buf, "{\"lsn\":81,\"type\":\"price\",\"slot\":0,\"activity_id\":7,\"sku_id\":11,"
	                         "\"price\":1999,\"version\":32,\"ts_ns\":1700000000000000000}");
	(void)state;
}

static void test_sink_codes_have_their_own_names(void **state)
{
	assert_string_equal(flash_rcname(FLASH_EAMQP_RETRY), "FLASH_EAMQP_RETRY");
	assert_string_equal(flash_rcname(FLASH_EAMQP), "FLASH_EAMQP");
	assert_string_equal(flash_rcname(FLASH_EAMQP_CONFIG), "FLASH_EAMQP_CONFIG");
	assert_string_not_equal(flash_strerror(FLASH_EAMQP_RETRY), flash_strerror(FLASH_EAMQP));
	assert_string_not_equal(flash_strerror(FLASH_EAMQP), flash_strerror(FLASH_EAMQP_CONFIG));
	assert_string_not_equal(flash_strerror(FLASH_EAMQP_CONFIG), "unknown result code");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_acks_out_of_order_move_only_over_a_confirmed_prefix),
		cmocka_unit_test(test_multiple_ack_confirms_every_tag_up_to_it_across_the_ring),
		cmocka_unit_test(test_nack_and_unknown_tag_drop_the_connection_and_keep_the_position),
		cmocka_unit_test(test_bad_urls_and_windows_are_config_errors),
		cmocka_unit_test(test_unreachable_broker_is_retry_and_says_where),
		cmocka_unit_test(test_body_names_every_field_of_its_type_and_the_lsn),
		cmocka_unit_test(test_each_order_event_has_its_own_routing_key),
		cmocka_unit_test(test_cart_lines_are_messages_with_line_last_and_a_message_id_each),
		cmocka_unit_test(test_terms_changes_have_their_own_routing_keys_and_adds_none),
		cmocka_unit_test(test_sink_codes_have_their_own_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
