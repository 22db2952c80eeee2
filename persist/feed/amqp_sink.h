/*
 * amqp_sink.h -- the RabbitMQ publisher of the order feed: orders and
 * cancels, in LSN order, to a durable exchange, with publisher confirms.
 *
 * The sink is a feed consumer (`flashstock feed --to amqp://...`, its own
 * process): it never runs inside the daemon, so a slow or dead broker never
 * reaches the WAL's drain.  It owns one AMQP connection with one channel in
 * confirm mode (confirm.select).  Records go in with amqp_sink_put() in LSN
 * order; an ORDER or CANCEL record becomes one persistent message (delivery
 * mode 2), any other record is only noted as passed.  At most `window`
 * messages are in flight (published, not yet confirmed): a put into a full
 * window first reads confirms.
 *
 * Confirms.  librabbitmq 0.11 has no confirm-wait call, so the sink reads
 * the frames itself (amqp_simple_wait_frame_noblock with a timeout):
 * basic.ack and basic.nack carry a delivery tag -- the channel's publish
 * count, 1, 2, ... -- and `multiple` (every tag up to it, or that tag
 * alone).  Acks may come for single tags out of order, so each in-flight
 * message keeps its own confirmed bit, and the confirmed position moves
 * over a prefix of confirmed messages only.
 *
 * Position.  amqp_sink_confirmed_lsn() is the highest LSN L such that every
 * record with LSN <= L handed to amqp_sink_put() is confirmed by the broker
 * (or was not a message).  It is what the feed position may advance to --
 * never past an unconfirmed message.
 *
 * Failure.  A nack, a closed channel or connection, a socket error, a send
 * that does not complete within the send timeout, or a confirm that does not
 * come within confirm_timeout_ms: the connection is dropped and every call
 * returns FLASH_EAMQP_RETRY until amqp_sink_connect() succeeds again.  The
 * caller then re-sends from amqp_sink_confirmed_lsn() + 1 (at least once:
 * messages in flight when the connection went may have reached the queue,
 * and arrive twice).  The sink does not sleep or retry by itself; the
 * caller's loop backs off (tools/cmd_feed_to.c).
 *
 * Message (one per ORDER/CANCEL/CONFIRM/EXPIRE/PRICE record, and per ACTIVITY
 * record of new terms):
 *   exchange     o->exchange (durable, type o->exchange_type), declared at connect
 *   routing key  the event, amqp_sink_event(): "order" (a plain order, ACTIVE:
 *                ship it), "cancel", and for reservations "order.reserved"
 *                (not paid: do not ship), "order.confirmed" (paid: ship it),
 *                "order.expired" (never paid, its units back), "order.cancelled"
 *                (given up unpaid: the CANCEL record's flags & 2); for terms
 *                "activity.updated" (an ACTIVITY record with flags & 1: new
 *                window, limit, max_qty or flags) and "sku.price" (a PRICE
 *                record); an activity's or a sku's add is no message
 *   message-id   the order number, decimal ("42"): consumers drop duplicates
 *                by (type, message-id) -- an order and its cancel share the
 *                number; for terms the new version (one counter of the
 *                segment: never issued twice); a cart's line (flags
 *                FLASH_REC_F_CART) "<order_no>-<line>" ("42-0", "42-1"):
 *                the lines of one cart are several messages of one type
 *                (amqp_sink_msgid)
 *   type         the routing key
 *   headers      lsn (long), activity_id, sku_id (int)
 *   timestamp    the record's ts_ns in seconds (none for "activity.updated":
 *                an ACTIVITY record's ts_ns is its window's end)
 *   content-type application/json; the body is one JSON object with every
 *                field of the record plus its LSN (a cart's line: "line"
 *                and "last" too, wal_rec_fields)
 *   delivery     persistent (2)
 *
 * Unroutable messages are confirmed by RabbitMQ and dropped: bind a queue
 * before the first publish (o->queue declares a durable one and binds it).
 *
 * Synchronization: one thread per sink; no call may run concurrently with
 * another on the same sink.
 */
#ifndef FLASH_AMQP_SINK_H
#define FLASH_AMQP_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "flashstock.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMQP_SINK_WINDOW_MAX 65536u

struct amqp_sink_opts {
	const char *url;                /* amqp://user:pass@host:port/vhost (amqp_parse_url) */
	const char *exchange;           /* default "flashstock.orders" */
	const char *exchange_type;      /* default "topic" */
	const char *queue;              /* NULL: none; else a durable queue declared and
	                                   bound to the exchange with key "#" at connect */
	uint32_t window;                /* messages in flight at most; 0 = 1024 */
	uint32_t confirm_timeout_ms;    /* oldest unconfirmed message older than this: the
	                                   connection counts as lost; 0 = 15000 */
	uint32_t connect_timeout_ms;    /* TCP connect, login and every RPC of the
	                                   connect sequence; 0 = 5000 */
	uint32_t send_timeout_ms;       /* a publish blocked in send() longer (the broker
	                                   stopped reading): lost; 0 = 5000 */
	uint32_t heartbeat_s;           /* AMQP heartbeat; 0 = 10 */
};

void amqp_sink_opts_default(struct amqp_sink_opts *o);

typedef struct amqp_sink amqp_sink_t;

struct amqp_sink_stats {
	uint64_t confirmed_lsn;   /* amqp_sink_confirmed_lsn() */
	uint64_t put_lsn;         /* highest LSN handed to amqp_sink_put() */
	uint32_t in_flight;       /* published, not yet confirmed */
	uint32_t connected;       /* 1 while a connection is up */
	uint64_t published;       /* messages published (re-sends included) */
	uint64_t acked;           /* messages confirmed by basic.ack */
	uint64_t nacked;          /* basic.nack received (each one drops the connection) */
	uint64_t connects;        /* successful connects */
	uint64_t reconnects;      /* connects after the first */
	uint64_t conns_lost;      /* connections lost (broker gone, nack, confirm timeout) */
	char     last_error[160]; /* why the last connection was lost or refused ("" none) */
};

/**
 * Make a sink (not connected yet).
 * @return FLASH_OK; FLASH_EAMQP_CONFIG (bad URL, window above
 *         AMQP_SINK_WINDOW_MAX); FLASH_EINVAL (NULL); FLASH_ENOMEM.
 */
int amqp_sink_new(const struct amqp_sink_opts *o, amqp_sink_t **out);

/**
 * Connect, log in, open the channel, confirm.select, declare the exchange
 * (and the queue with its binding).  Drops a connection that is up first.
 * Messages in flight of an earlier connection are forgotten: the caller
 * re-sends from amqp_sink_confirmed_lsn() + 1, and the put position is set
 * back to it.
 * @return FLASH_OK; FLASH_EAMQP_RETRY (broker unreachable, or it closed the
 *         connection: try again later); FLASH_EAMQP_CONFIG (login refused:
 *         wrong user or password, vhost access); FLASH_EAMQP (the broker
 *         refused a declare, e.g. an exchange of that name and another
 *         type); FLASH_ENOMEM.  last_error in the stats says more.
 */
int amqp_sink_connect(amqp_sink_t *s);

/**
 * Hand over the record at @p lsn (LSNs strictly increasing since the last
 * connect, starting above amqp_sink_confirmed_lsn()).  ORDER and CANCEL are
 * published; others are passed.  Blocks reading confirms while the window
 * is full.
 * @return FLASH_OK; FLASH_EAMQP_RETRY (connection lost now or earlier:
 *         reconnect, re-send from confirmed + 1); FLASH_EINVAL (LSN not
 *         above the last one).
 */
int amqp_sink_put(amqp_sink_t *s, uint64_t lsn, const struct flash_record *rec);

/**
 * Read confirms for at most @p wait_ms (0: only what has arrived), returning
 * as soon as one frame was handled or nothing is in flight.
 * @return FLASH_OK; FLASH_EAMQP_RETRY (lost).
 */
int amqp_sink_poll(amqp_sink_t *s, uint32_t wait_ms);

/** See "Position" above.  0 before anything was confirmed. */
uint64_t amqp_sink_confirmed_lsn(const amqp_sink_t *s);

/** Set the confirmed position (the feed's committed position at start). */
void amqp_sink_start_at(amqp_sink_t *s, uint64_t confirmed_lsn);

void amqp_sink_stats_get(const amqp_sink_t *s, struct amqp_sink_stats *out);

/** Close the connection (if up) and free @p s; NULL is a no-op. */
void amqp_sink_free(amqp_sink_t *s);

/**
 * The event of @p rec: its message's routing key and type (see the file
 * comment), or NULL for a record that is no message (restock, the add of
 * an activity or a sku, a generation, an archive).
 * "order" and "cancel" are the keys of before reservations, kept so that
 * queues bound to them keep receiving; a reservation is not "order", so a
 * consumer that ships every "order" never ships one unpaid.
 */
const char *amqp_sink_event(const struct flash_record *rec);

/* The message-id of @p rec's message (see the file comment). */
#define AMQP_SINK_MSGID_MAX 32
void amqp_sink_msgid(char *buf, size_t cap, const struct flash_record *rec);

/**
 * Write the JSON body of @p rec at @p lsn into @p buf (@p cap bytes).
 * @return bytes written (without the NUL), or 0 if it does not fit.
 */
size_t amqp_sink_body(char *buf, size_t cap, uint64_t lsn, const struct flash_record *rec);

/*
 * For tests of the window alone (tests/unit/test_amqp_sink.c), without a broker:
 * amqp_sink_test_sent() records a message of @p lsn as published (the next
 * delivery tag) or, for a record that is no message, as passed;
 * amqp_sink_test_confirm() handles a basic.ack (nack 0) or basic.nack
 * (nack 1) of @p tag as if the broker had sent it.
 * @return FLASH_OK; FLASH_EAMQP_RETRY (the frame drops the connection: a
 *         nack, a tag never published); FLASH_EINVAL (LSN not increasing,
 *         window full).
 */
int amqp_sink_test_sent(amqp_sink_t *s, uint64_t lsn, int is_message);
int amqp_sink_test_confirm(amqp_sink_t *s, uint64_t tag, int multiple, int nack);

#ifdef __cplusplus
}
#endif
#endif /* FLASH_AMQP_SINK_H */
