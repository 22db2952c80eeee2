/*
 * amqp_consumer.c -- the RabbitMQ tests' consumer: what arrived at the
 * broker's far side, written down for a shell test to check
 * (tests/cli/cli_feed_amqp.sh).
 *
 *   amqp_consumer probe HOST PORT
 *       exit 0 once an AMQP login as guest succeeds (the fixture's
 *       readiness check, tests/fixtures/rabbitmq.sh), 1 otherwise
 *   amqp_consumer consume PORT EXCHANGE QUEUE OUT READY
 *       declare the durable topic EXCHANGE and the durable QUEUE bound to
 *       it with '#', create the file READY, then consume with manual acks:
 *       each delivery is one line in OUT, written and flushed BEFORE its
 *       basic.ack:  <type> <message-id> <lsn header> <redelivered 0|1>
 *       The broker going away (killed, restarted) is not an end: the
 *       consumer reconnects every 200 ms and goes on (unacked deliveries
 *       come again: duplicates, which the test counts).  SIGTERM: exit 0.
 *       With MAXLEN the queue holds at most MAXLEN messages and refuses
 *       more (x-overflow reject-publish): the broker nacks them.
 *   amqp_consumer declare PORT EXCHANGE QUEUE MAXLEN
 *       only declare and bind (as consume with MAXLEN would), then exit 0
 */
#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static long maxlen;   /* 0: an ordinary queue; else x-max-length with reject-publish */

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int ok(amqp_rpc_reply_t r)
{
	return r.reply_type == AMQP_RESPONSE_NORMAL;
}

/* Connect and log in; NULL if the broker is not there (yet). */
static amqp_connection_state_t connect_login(const char *host, int port)
{
	struct timeval tv = { .tv_sec = 2 };
	amqp_connection_state_t c = amqp_new_connection();
	amqp_socket_t *s = c ? amqp_tcp_socket_new(c) : NULL;

	if (s == NULL || amqp_socket_open_noblock(s, host, port, &tv) != AMQP_STATUS_OK)
		goto fail;
	amqp_set_handshake_timeout(c, &tv);
	amqp_set_rpc_timeout(c, &tv);
	if (!ok(amqp_login(c, "/", 0, AMQP_DEFAULT_FRAME_SIZE, 10, AMQP_SASL_METHOD_PLAIN,
	                   "guest", "guest")))
		goto fail;
	return c;
fail:
	if (c)
		amqp_destroy_connection(c);
	return NULL;
}

static int64_t header_i64(const amqp_table_t *t, const char *key)
{
	for (int i = 0; i < t->num_entries; i++) {
		const amqp_table_entry_t *e = &t->entries[i];
		if (e->key.len == strlen(key) && memcmp(e->key.bytes, key, e->key.len) == 0) {
			switch (e->value.kind) {
			case AMQP_FIELD_KIND_I64: return e->value.value.i64;
			case AMQP_FIELD_KIND_U64: return (int64_t)e->value.value.u64;
			case AMQP_FIELD_KIND_I32: return e->value.value.i32;
			case AMQP_FIELD_KIND_U32: return e->value.value.u32;
			default: return -1;
			}
		}
	}
	return -1;
}

/* One session: set up, then consume until the connection goes or a signal.
 * @return 0 after a signal, 1 when the connection went (reconnect). */
static int session(amqp_connection_state_t c, const char *exchange, const char *queue, FILE *out,
                   const char *ready)
{
	amqp_channel_open(c, 1);
	if (!ok(amqp_get_rpc_reply(c)))
		return 1;
	amqp_exchange_declare(c, 1, amqp_cstring_bytes(exchange), amqp_cstring_bytes("topic"), 0, 1, 0,
	                      0, amqp_empty_table);
	if (!ok(amqp_get_rpc_reply(c)))
		return 1;
	amqp_table_entry_t qa[2];
	amqp_table_t args = amqp_empty_table;
	if (maxlen > 0) {
		qa[0].key = amqp_cstring_bytes("x-max-length");
		qa[0].value.kind = AMQP_FIELD_KIND_I64;
		qa[0].value.value.i64 = maxlen;
		qa[1].key = amqp_cstring_bytes("x-overflow");
		qa[1].value.kind = AMQP_FIELD_KIND_UTF8;
		qa[1].value.value.bytes = amqp_cstring_bytes("reject-publish");
		args.num_entries = 2;
		args.entries = qa;
	}
	amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, args);
	if (!ok(amqp_get_rpc_reply(c)))
		return 1;
	amqp_queue_bind(c, 1, amqp_cstring_bytes(queue), amqp_cstring_bytes(exchange),
	                amqp_cstring_bytes("#"), amqp_empty_table);
	if (!ok(amqp_get_rpc_reply(c)))
		return 1;
	if (ready == NULL)
		return 0;   /* declare only */
	amqp_basic_qos(c, 1, 0, 256, 0);
	if (!ok(amqp_get_rpc_reply(c)))
		return 1;
	amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
	                   amqp_empty_table);
	if (!ok(amqp_get_rpc_reply(c)))
		return 1;
	FILE *r = fopen(ready, "w");
	if (r)
		fclose(r);
	while (!stop) {
		struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
		amqp_envelope_t env;
		amqp_rpc_reply_t rep;

		amqp_maybe_release_buffers(c);
		rep = amqp_consume_message(c, &env, &tv, 0);
		if (rep.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
		    rep.library_error == AMQP_STATUS_TIMEOUT)
			continue;
		if (rep.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
		    rep.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
			/* a frame that is not a delivery: a close ends the session */
			amqp_frame_t f;
			if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK)
				return 1;
			if (f.frame_type == AMQP_FRAME_METHOD &&
			    (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
			     f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD))
				return 1;
			continue;
		}
		if (rep.reply_type != AMQP_RESPONSE_NORMAL)
			return 1;
		const amqp_basic_properties_t *p = &env.message.properties;
		fprintf(out, "%.*s %.*s %" PRId64 " %d\n",
		        (p->_flags & AMQP_BASIC_TYPE_FLAG) ? (int)p->type.len : 1,
		        (p->_flags & AMQP_BASIC_TYPE_FLAG) ? (const char *)p->type.bytes : "?",
		        (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) ? (int)p->message_id.len : 1,
		        (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) ? (const char *)p->message_id.bytes : "?",
		        (p->_flags & AMQP_BASIC_HEADERS_FLAG) ? header_i64(&p->headers, "lsn") : -1,
		        env.redelivered ? 1 : 0);
		fflush(out);
		int st = amqp_basic_ack(c, 1, env.delivery_tag, 0);
		amqp_destroy_envelope(&env);
		if (st != AMQP_STATUS_OK)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "probe") == 0) {
		amqp_connection_state_t c = connect_login(argv[2], atoi(argv[3]));
		if (c == NULL)
			return 1;
		amqp_connection_close(c, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(c);
		return 0;
	}
	if (argc == 6 && strcmp(argv[1], "declare") == 0) {
		amqp_connection_state_t c = connect_login("127.0.0.1", atoi(argv[2]));
		maxlen = atol(argv[5]);
		if (c == NULL || session(c, argv[3], argv[4], NULL, NULL) != 0)
			return 1;
		amqp_connection_close(c, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(c);
		return 0;
	}
	if ((argc != 7 && argc != 8) || strcmp(argv[1], "consume") != 0) {
		fprintf(stderr, "usage: amqp_consumer probe HOST PORT\n"
		                "       amqp_consumer consume PORT EXCHANGE QUEUE OUT READY [MAXLEN]\n"
		                "       amqp_consumer declare PORT EXCHANGE QUEUE MAXLEN\n");
		return 2;
	}
	if (argc == 8)
		maxlen = atol(argv[7]);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	FILE *out = fopen(argv[5], "a");
	if (out == NULL) {
		perror(argv[5]);
		return 1;
	}
	unsigned sessions = 0;
	while (!stop) {
		amqp_connection_state_t c = connect_login("127.0.0.1", atoi(argv[2]));
		if (c == NULL) {
			usleep(200000);
			continue;
		}
		sessions++;
		int again = session(c, argv[3], argv[4], out, argv[6]);
		if (!again) {
			amqp_connection_close(c, AMQP_REPLY_SUCCESS);
			amqp_destroy_connection(c);
			break;
		}
		amqp_destroy_connection(c);
		usleep(200000);
	}
	fclose(out);
	fprintf(stderr, "amqp_consumer: %u sessions\n", sessions);
	return 0;
}
