/*
 * amqp_sink.c -- the RabbitMQ publisher with publisher confirms
 * (amqp_sink.h says what it guarantees).
 *
 * Divisions:
 *   1. The in-flight window   a FIFO of published messages by delivery tag
 *   2. Connection             connect, declare, drop
 *   3. Confirms               reading basic.ack / basic.nack frames
 *   4. Publishing             the message of a record
 */
#include "amqp_sink.h"
#include "wal.h"

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define SINK_CHANNEL 1

/* One published, not yet confirmed message. */
struct sink_slot {
	uint64_t ss_lsn;        /* LSN of its record */
	int64_t  ss_sent_ns;    /* CLOCK_MONOTONIC when published */
	int      ss_confirmed;  /* a basic.ack named it (single, out of order) */
};

struct amqp_sink {
	struct amqp_sink_opts    as_o;
	char                    *as_url;        /* owned copy; amqp_parse_url cuts it up */
	struct amqp_connection_info as_ci;      /* points into as_url */
	char                    *as_exchange;   /* owned copies of the names */
	char                    *as_type;
	char                    *as_queue;      /* NULL: none */
	amqp_connection_state_t  as_conn;       /* NULL while not connected */
	int                      as_up;         /* connected and usable */
	/* the window: as_cap slots, as_n in flight from as_head; the head's
	 * delivery tag is as_first_tag, the next publish gets as_first_tag + as_n */
	struct sink_slot        *as_win;
	uint32_t                 as_cap;
	uint32_t                 as_head;
	uint32_t                 as_n;
	uint64_t                 as_first_tag;
	uint64_t                 as_put_lsn;    /* highest LSN handed in */
	uint64_t                 as_confirmed;  /* see amqp_sink_confirmed_lsn() */
	struct amqp_sink_stats   as_st;
};

static int64_t sink_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *sink_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void amqp_sink_opts_default(struct amqp_sink_opts *o)
{
	memset(o, 0, sizeof *o);
	o->exchange = "flashstock.orders";
	o->exchange_type = "topic";
	o->window = 1024;
	o->confirm_timeout_ms = 15000;
	o->connect_timeout_ms = 5000;
	o->send_timeout_ms = 5000;
	o->heartbeat_s = 10;
}

int amqp_sink_new(const struct amqp_sink_opts *o, amqp_sink_t **out)
{
	struct amqp_sink_opts d;
	amqp_sink_t *s;

	if (o == NULL || out == NULL || o->url == NULL)
		return FLASH_EINVAL;
	amqp_sink_opts_default(&d);
	if (o->window > AMQP_SINK_WINDOW_MAX)
		return FLASH_EAMQP_CONFIG;
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return FLASH_ENOMEM;
	s->as_o = *o;
	if (!s->as_o.window)             s->as_o.window = d.window;
	if (!s->as_o.confirm_timeout_ms) s->as_o.confirm_timeout_ms = d.confirm_timeout_ms;
	if (!s->as_o.connect_timeout_ms) s->as_o.connect_timeout_ms = d.connect_timeout_ms;
	if (!s->as_o.send_timeout_ms)    s->as_o.send_timeout_ms = d.send_timeout_ms;
	if (!s->as_o.heartbeat_s)        s->as_o.heartbeat_s = d.heartbeat_s;
	s->as_url = strdup(o->url);
	s->as_exchange = strdup(o->exchange ? o->exchange : d.exchange);
	s->as_type = strdup(o->exchange_type ? o->exchange_type : d.exchange_type);
	s->as_queue = sink_strdup(o->queue);
	s->as_cap = s->as_o.window;
	s->as_win = calloc(s->as_cap, sizeof *s->as_win);
	if (s->as_url == NULL || s->as_exchange == NULL || s->as_type == NULL ||
	    (o->queue && s->as_queue == NULL) || s->as_win == NULL) {
		amqp_sink_free(s);
		return FLASH_ENOMEM;
	}
	s->as_o.url = NULL;             /* the copy is cut up by the parser */
	s->as_o.exchange = s->as_exchange;
	s->as_o.exchange_type = s->as_type;
	s->as_o.queue = s->as_queue;
	amqp_default_connection_info(&s->as_ci);
	if (amqp_parse_url(s->as_url, &s->as_ci) != AMQP_STATUS_OK) {
		amqp_sink_free(s);
		return FLASH_EAMQP_CONFIG;
	}
	s->as_first_tag = 1;
	*out = s;
	return FLASH_OK;
}

/* ------------------------------------------------------ 1. the in-flight window */

/* The i-th message in flight (0: the oldest).  as_cap is never 0
 * (amqp_sink_new); the test says so to the analyzer. */
static struct sink_slot *sink_at(amqp_sink_t *s, uint32_t i)
{
	uint32_t cap = s->as_cap ? s->as_cap : 1;
	return &s->as_win[(s->as_head + i) % cap];
}

/* Move the confirmed position over the prefix of confirmed messages. */
static void sink_advance(amqp_sink_t *s)
{
	while (s->as_n > 0 && sink_at(s, 0)->ss_confirmed) {
		s->as_head = (uint32_t)(sink_at(s, 1) - s->as_win);
		s->as_n--;
		s->as_first_tag++;
	}
	/* every record up to the oldest unconfirmed message's, exclusive, is
	 * confirmed or was no message; with nothing in flight, all put so far */
	s->as_confirmed = s->as_n ? sink_at(s, 0)->ss_lsn - 1 : s->as_put_lsn;
}

/* ------------------------------------------------------------- 2. connection */

static void sink_error(amqp_sink_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sink_error(amqp_sink_t *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->as_st.last_error, sizeof s->as_st.last_error, fmt, ap);
	va_end(ap);
}

/* Drop the connection without the close handshake (the broker may be gone). */
static void sink_drop(amqp_sink_t *s)
{
	if (s->as_conn != NULL)
		amqp_destroy_connection(s->as_conn);
	s->as_conn = NULL;
	if (s->as_up)
		s->as_st.conns_lost++;
	s->as_up = 0;
}

static int sink_lost(amqp_sink_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sink_lost(amqp_sink_t *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->as_st.last_error, sizeof s->as_st.last_error, fmt, ap);
	va_end(ap);
	sink_drop(s);
	return FLASH_EAMQP_RETRY;
}

/*
 * The outcome of the last RPC as a result code, with last_error set.  A
 * channel or connection closed by the broker with 403 (access refused) is a
 * configuration error, any other server close FLASH_EAMQP (a declare it
 * refused), a library or socket error FLASH_EAMQP_RETRY.
 */
static int sink_rpc_rc(amqp_sink_t *s, amqp_rpc_reply_t r, const char *what)
{
	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		return FLASH_OK;
	case AMQP_RESPONSE_NONE:
		sink_error(s, "%s: no reply", what);
		return FLASH_EAMQP_RETRY;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		sink_error(s, "%s: %s", what, amqp_error_string2(r.library_error));
		return r.library_error == AMQP_STATUS_NO_MEMORY ? FLASH_ENOMEM : FLASH_EAMQP_RETRY;
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
			const amqp_connection_close_t *c = r.reply.decoded;
			sink_error(s, "%s: connection closed by the broker: %u %.*s", what, c->reply_code,
			           (int)c->reply_text.len, (const char *)c->reply_text.bytes);
			return c->reply_code == 403 || c->reply_code == 530 ? FLASH_EAMQP_CONFIG
			                                                    : FLASH_EAMQP_RETRY;
		}
		if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
			const amqp_channel_close_t *c = r.reply.decoded;
			sink_error(s, "%s: channel closed by the broker: %u %.*s", what, c->reply_code,
			           (int)c->reply_text.len, (const char *)c->reply_text.bytes);
			return c->reply_code == 403 ? FLASH_EAMQP_CONFIG : FLASH_EAMQP;
		}
		sink_error(s, "%s: broker error (method 0x%08x)", what, (unsigned)r.reply.id);
		return FLASH_EAMQP;
	}
	sink_error(s, "%s: unknown reply", what);
	return FLASH_EAMQP_RETRY;
}

/*
 * Connect sequence: TCP (bounded), login (ACCESS_REFUSED is a config
 * error: the broker answers it with a connection close, or -- before 3.x
 * capabilities -- by closing the socket, which reads as a retry), channel,
 * confirm.select, exchange.declare (durable), queue.declare + queue.bind.
 * Every RPC is bounded by connect_timeout_ms.  The window restarts at tag 1
 * (delivery tags count per channel) and the put position goes back to the
 * confirmed one: the caller re-sends from there.
 */
int amqp_sink_connect(amqp_sink_t *s)
{
	struct timeval tv = { .tv_sec = s->as_o.connect_timeout_ms / 1000,
	                      .tv_usec = (s->as_o.connect_timeout_ms % 1000) * 1000 };
	amqp_socket_t *sock;
	int rc, st;

	sink_drop(s);
	s->as_n = 0;
	s->as_head = 0;
	s->as_first_tag = 1;
	s->as_put_lsn = s->as_confirmed;
	s->as_conn = amqp_new_connection();
	if (s->as_conn == NULL)
		return FLASH_ENOMEM;
	sock = amqp_tcp_socket_new(s->as_conn);
	if (sock == NULL) {
		sink_drop(s);
		return FLASH_ENOMEM;
	}
	st = amqp_socket_open_noblock(sock, s->as_ci.host, s->as_ci.port, &tv);
	if (st != AMQP_STATUS_OK) {
		sink_error(s, "connect %s:%d: %s", s->as_ci.host, s->as_ci.port, amqp_error_string2(st));
		sink_drop(s);
		return FLASH_EAMQP_RETRY;
	}
	amqp_set_handshake_timeout(s->as_conn, &tv);
	amqp_set_rpc_timeout(s->as_conn, &tv);
	rc = sink_rpc_rc(s, amqp_login(s->as_conn, s->as_ci.vhost, 0, AMQP_DEFAULT_FRAME_SIZE,
	                               (int)s->as_o.heartbeat_s, AMQP_SASL_METHOD_PLAIN,
	                               s->as_ci.user, s->as_ci.password), "login");
	if (rc == FLASH_OK) {
		amqp_channel_open(s->as_conn, SINK_CHANNEL);
		rc = sink_rpc_rc(s, amqp_get_rpc_reply(s->as_conn), "channel.open");
	}
	if (rc == FLASH_OK) {
		amqp_confirm_select(s->as_conn, SINK_CHANNEL);
		rc = sink_rpc_rc(s, amqp_get_rpc_reply(s->as_conn), "confirm.select");
	}
	if (rc == FLASH_OK) {
		amqp_exchange_declare(s->as_conn, SINK_CHANNEL, amqp_cstring_bytes(s->as_exchange),
		                      amqp_cstring_bytes(s->as_type), 0, 1, 0, 0, amqp_empty_table);
		rc = sink_rpc_rc(s, amqp_get_rpc_reply(s->as_conn), "exchange.declare");
	}
	if (rc == FLASH_OK && s->as_queue != NULL) {
		amqp_queue_declare(s->as_conn, SINK_CHANNEL, amqp_cstring_bytes(s->as_queue),
		                   0, 1, 0, 0, amqp_empty_table);
		rc = sink_rpc_rc(s, amqp_get_rpc_reply(s->as_conn), "queue.declare");
		if (rc == FLASH_OK) {
			amqp_queue_bind(s->as_conn, SINK_CHANNEL, amqp_cstring_bytes(s->as_queue),
			                amqp_cstring_bytes(s->as_exchange), amqp_cstring_bytes("#"),
			                amqp_empty_table);
			rc = sink_rpc_rc(s, amqp_get_rpc_reply(s->as_conn), "queue.bind");
		}
	}
	if (rc != FLASH_OK) {
		sink_drop(s);
		return rc;
	}
	s->as_up = 1;
	if (s->as_st.connects++ > 0)
		s->as_st.reconnects++;
	s->as_st.last_error[0] = '\0';
	return FLASH_OK;
}

/* ---------------------------------------------------------------- 3. confirms */

/* Mark tags as confirmed: @p tag alone, or every tag up to it. */
static int sink_ack(amqp_sink_t *s, uint64_t tag, int multiple)
{
	uint64_t end = s->as_first_tag + s->as_n;   /* first tag not published */

	if (tag >= end)
		return sink_lost(s, "basic.ack for tag %" PRIu64 ", never published (next %" PRIu64 ")",
		                 tag, end);
	if (tag < s->as_first_tag) {
		/* a multiple ack of tag 0 means "everything so far" (the spec);
		 * a tag below the head is confirmed already */
		if (!(multiple && tag == 0))
			return FLASH_OK;
		tag = end - 1;
	}
	if (multiple) {
		for (uint64_t t = s->as_first_tag; t <= tag; t++) {
			struct sink_slot *e = sink_at(s, (uint32_t)(t - s->as_first_tag));
			if (!e->ss_confirmed) {
				e->ss_confirmed = 1;
				s->as_st.acked++;
			}
		}
	} else {
		struct sink_slot *e = sink_at(s, (uint32_t)(tag - s->as_first_tag));
		if (!e->ss_confirmed) {
			e->ss_confirmed = 1;
			s->as_st.acked++;
		}
	}
	sink_advance(s);
	return FLASH_OK;
}

/* A nack: the broker could not take the message (e.g. a full queue that
 * rejects publishes).  Whatever was in flight is sent again from the
 * confirmed position, so the connection is dropped here. */
static int sink_nack(amqp_sink_t *s, uint64_t tag, int multiple)
{
	s->as_st.nacked++;
	return sink_lost(s, "basic.nack for tag %" PRIu64 "%s", tag, multiple ? " (multiple)" : "");
}

/*
 * Wait up to @p wait_ms for one frame and handle it.  basic.ack confirms;
 * basic.nack (the broker could not take the message: an internal error of
 * the queue) drops the connection, so the caller re-sends from the
 * confirmed position; a channel or connection close drops it too.  Any
 * other frame (heartbeats are handled by the library) is ignored.
 * @return FLASH_OK (a frame handled, or nothing within the wait);
 *         FLASH_EAMQP_RETRY.
 */
static int sink_read_frame(amqp_sink_t *s, uint32_t wait_ms)
{
	struct timeval tv = { .tv_sec = wait_ms / 1000, .tv_usec = (wait_ms % 1000) * 1000 };
	amqp_frame_t f;
	int st;

	if (!s->as_up)
		return FLASH_EAMQP_RETRY;
	st = amqp_simple_wait_frame_noblock(s->as_conn, &f, &tv);
	if (st == AMQP_STATUS_TIMEOUT)
		return FLASH_OK;
	if (st != AMQP_STATUS_OK)
		return sink_lost(s, "reading confirms: %s", amqp_error_string2(st));
	if (f.frame_type != AMQP_FRAME_METHOD)
		return FLASH_OK;
	switch (f.payload.method.id) {
	case AMQP_BASIC_ACK_METHOD: {
		const amqp_basic_ack_t *a = f.payload.method.decoded;
		st = sink_ack(s, a->delivery_tag, a->multiple);
		break;
	}
	case AMQP_BASIC_NACK_METHOD: {
		const amqp_basic_nack_t *n = f.payload.method.decoded;
		st = sink_nack(s, n->delivery_tag, n->multiple);
		break;
	}
	case AMQP_CHANNEL_CLOSE_METHOD: {
		const amqp_channel_close_t *c = f.payload.method.decoded;
		st = sink_lost(s, "channel closed by the broker: %u %.*s", c->reply_code,
		               (int)c->reply_text.len, (const char *)c->reply_text.bytes);
		break;
	}
	case AMQP_CONNECTION_CLOSE_METHOD: {
		const amqp_connection_close_t *c = f.payload.method.decoded;
		st = sink_lost(s, "connection closed by the broker: %u %.*s", c->reply_code,
		               (int)c->reply_text.len, (const char *)c->reply_text.bytes);
		break;
	}
	default:
		st = FLASH_OK;
		break;
	}
	if (s->as_up)
		amqp_maybe_release_buffers(s->as_conn);
	return st;
}

/* The oldest message in flight waited too long for its confirm. */
static int sink_overdue(amqp_sink_t *s)
{
	return s->as_n > 0 &&
	       sink_now_ns() - sink_at(s, 0)->ss_sent_ns > (int64_t)s->as_o.confirm_timeout_ms * 1000000;
}

int amqp_sink_poll(amqp_sink_t *s, uint32_t wait_ms)
{
	int rc;

	if (!s->as_up)
		return FLASH_EAMQP_RETRY;
	if (s->as_n == 0 && wait_ms > 0) {
		/* nothing to confirm: still read what comes (a close, heartbeats) */
		return sink_read_frame(s, 0);
	}
	rc = sink_read_frame(s, wait_ms);
	if (rc == FLASH_OK && sink_overdue(s))
		return sink_lost(s, "no confirm within %u ms for LSN %" PRIu64, s->as_o.confirm_timeout_ms,
		                 sink_at(s, 0)->ss_lsn);
	return rc;
}

/* -------------------------------------------------------------- 4. publishing */

const char *amqp_sink_event(const struct flash_record *r)
{
	switch (r->type) {
	case FLASH_REC_ORDER:   return r->value != 0 ? "order.reserved" : "order";
	/* a plain order's cancel keeps its key (queues bound to it); an
	 * unpaid reservation's is one of the reservation's events */
	case FLASH_REC_CANCEL:  return r->flags & 2 ? "order.cancelled" : "cancel";
	case FLASH_REC_CONFIRM: return "order.confirmed";
	case FLASH_REC_EXPIRE:  return "order.expired";
	/* a change of terms: a page showing the old ones is stale (an add,
	 * and a sku's, are no message, as before versions) */
	case FLASH_REC_ACTIVITY: return r->flags & 1 ? "activity.updated" : NULL;
	case FLASH_REC_PRICE:   return "sku.price";
	default:                return NULL;
	}
}

void amqp_sink_msgid(char *buf, size_t cap, const struct flash_record *r)
{
	if (r->flags & FLASH_REC_F_CART)
		snprintf(buf, cap, "%" PRIu64 "-%u", r->order_no, FLASH_REC_LINE(r->flags));
	else
		snprintf(buf, cap, "%" PRIu64, r->order_no);
}

size_t amqp_sink_body(char *buf, size_t cap, uint64_t lsn, const struct flash_record *r)
{
	char f[400];
	if (wal_rec_fields(f, sizeof f, r, 1) == 0)
		return 0;
	int n = snprintf(buf, cap, "{\"lsn\":%" PRIu64 ",\"type\":\"%s\",\"slot\":%u,%s}", lsn,
	                 wal_rec_type_name(r->type, "unknown"), r->slot, f);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/*
 * Publish one message.  Before the write the socket must take it within
 * send_timeout_ms: librabbitmq's publish waits for a full socket without a
 * bound, and a broker that stopped reading (frozen, or its host gone) would
 * hold the sink forever.  The window bounds what is in flight, so a socket
 * buffer fills only when the broker has stopped reading.
 */
static int sink_publish(amqp_sink_t *s, uint64_t lsn, const struct flash_record *r)
{
	char body[512], msgid[AMQP_SINK_MSGID_MAX];
	amqp_table_entry_t hdr[3];
	amqp_basic_properties_t p;
	struct pollfd pfd;
	size_t len = amqp_sink_body(body, sizeof body, lsn, r);
	int st;

	pfd.fd = amqp_get_sockfd(s->as_conn);
	pfd.events = POLLOUT;
	do
		st = poll(&pfd, 1, (int)s->as_o.send_timeout_ms);
	while (st < 0 && errno == EINTR);
	if (st == 0)
		return sink_lost(s, "broker took nothing for %u ms (socket full)", s->as_o.send_timeout_ms);
	if (st < 0 || (pfd.revents & (POLLERR | POLLHUP)))
		return sink_lost(s, "socket closed under the sink");

	amqp_sink_msgid(msgid, sizeof msgid, r);
	hdr[0].key = amqp_cstring_bytes("lsn");
	hdr[0].value.kind = AMQP_FIELD_KIND_I64;
	hdr[0].value.value.i64 = (int64_t)lsn;
	hdr[1].key = amqp_cstring_bytes("activity_id");
	hdr[1].value.kind = AMQP_FIELD_KIND_I64;
	hdr[1].value.value.i64 = r->activity_id;
	hdr[2].key = amqp_cstring_bytes("sku_id");
	hdr[2].value.kind = AMQP_FIELD_KIND_I64;
	hdr[2].value.value.i64 = r->sku_id;
	memset(&p, 0, sizeof p);
	p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
	           AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG;
	/* an ACTIVITY record's ts_ns is its window's end, not when: no timestamp */
	if (r->type != FLASH_REC_ACTIVITY)
		p._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
	p.content_type = amqp_cstring_bytes("application/json");
	p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
	p.message_id = amqp_cstring_bytes(msgid);
	p.type = amqp_cstring_bytes(amqp_sink_event(r));
	p.timestamp = r->ts_ns > 0 ? (uint64_t)(r->ts_ns / 1000000000) : 0;
	p.headers.num_entries = 3;
	p.headers.entries = hdr;
	st = amqp_basic_publish(s->as_conn, SINK_CHANNEL, amqp_cstring_bytes(s->as_exchange),
	                        amqp_cstring_bytes(amqp_sink_event(r)),
	                        0, 0, &p, (amqp_bytes_t){ .len = len, .bytes = body });
	if (st != AMQP_STATUS_OK)
		return sink_lost(s, "publish LSN %" PRIu64 ": %s", lsn, amqp_error_string2(st));
	s->as_st.published++;
	return FLASH_OK;
}

int amqp_sink_put(amqp_sink_t *s, uint64_t lsn, const struct flash_record *rec)
{
	int rc;

	if (rec == NULL)
		return FLASH_EINVAL;
	if (!s->as_up)
		return FLASH_EAMQP_RETRY;
	if (lsn <= s->as_put_lsn)
		return FLASH_EINVAL;
	if (amqp_sink_event(rec) == NULL) {
		s->as_put_lsn = lsn;
		if (s->as_n == 0)
			s->as_confirmed = lsn;
		return FLASH_OK;
	}
	/* a full window: read confirms until a slot frees (or the oldest is overdue) */
	while (s->as_n == s->as_cap) {
		rc = amqp_sink_poll(s, 100);
		if (rc != FLASH_OK)
			return rc;
	}
	rc = sink_publish(s, lsn, rec);
	if (rc != FLASH_OK)
		return rc;
	struct sink_slot *e = sink_at(s, s->as_n);
	e->ss_lsn = lsn;
	e->ss_sent_ns = sink_now_ns();
	e->ss_confirmed = 0;
	s->as_n++;
	s->as_put_lsn = lsn;
	/* take what has arrived, without waiting: keeps the window moving */
	if (amqp_data_in_buffer(s->as_conn) || amqp_frames_enqueued(s->as_conn))
		return sink_read_frame(s, 0);
	return FLASH_OK;
}

uint64_t amqp_sink_confirmed_lsn(const amqp_sink_t *s)
{
	return s->as_confirmed;
}

void amqp_sink_start_at(amqp_sink_t *s, uint64_t confirmed_lsn)
{
	s->as_confirmed = confirmed_lsn;
	s->as_put_lsn = confirmed_lsn;
	s->as_n = 0;
}

void amqp_sink_stats_get(const amqp_sink_t *s, struct amqp_sink_stats *out)
{
	*out = s->as_st;
	out->confirmed_lsn = s->as_confirmed;
	out->put_lsn = s->as_put_lsn;
	out->in_flight = s->as_n;
	out->connected = (uint32_t)s->as_up;
}

void amqp_sink_free(amqp_sink_t *s)
{
	if (s == NULL)
		return;
	if (s->as_up && s->as_conn != NULL) {
		/* a clean close; bounded by the RPC timeout set at connect */
		amqp_channel_close(s->as_conn, SINK_CHANNEL, AMQP_REPLY_SUCCESS);
		amqp_connection_close(s->as_conn, AMQP_REPLY_SUCCESS);
	}
	s->as_up = 0;
	if (s->as_conn != NULL)
		amqp_destroy_connection(s->as_conn);
	free(s->as_win);
	free(s->as_url);
	free(s->as_exchange);
	free(s->as_type);
	free(s->as_queue);
	free(s);
}

/* ------------------------------------------------------- tests of the window */

int amqp_sink_test_sent(amqp_sink_t *s, uint64_t lsn, int is_message)
{
	if (lsn <= s->as_put_lsn || s->as_n == s->as_cap)
		return FLASH_EINVAL;
	s->as_up = 1;   /* as if connected: the frame handlers drop it on loss */
	s->as_put_lsn = lsn;
	if (!is_message) {
		if (s->as_n == 0)
			s->as_confirmed = lsn;
		return FLASH_OK;
	}
	struct sink_slot *e = sink_at(s, s->as_n);
	e->ss_lsn = lsn;
	e->ss_sent_ns = sink_now_ns();
	e->ss_confirmed = 0;
	s->as_n++;
	return FLASH_OK;
}

int amqp_sink_test_confirm(amqp_sink_t *s, uint64_t tag, int multiple, int nack)
{
	return nack ? sink_nack(s, tag, multiple) : sink_ack(s, tag, multiple);
}
