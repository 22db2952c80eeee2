/*
 * expirer.c -- the daemon's reservation expirer (contract in expirer.h).
 *
 * Divisions:
 *   1. The heap      reservations by pay-by time, the thread's own memory
 *   2. The thread    seed from the order table once, then a pass every
 *                    every_ms: pop what is due, flash_expire each
 */
#include "expirer.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker.h"

/* ------------------------------------------------------------------------
 * 1. The heap
 * ------------------------------------------------------------------------ */

struct due {
	int64_t  pay_by_ns;
	uint64_t order_no;
};

struct expirer {
	struct expirer_opts  x_o;
	char                *x_segment;
	struct worker        x_w;
	flash_t             *x_h;        /* the thread's handle, opened on its first pass */
	pthread_mutex_t      x_mu;       /* guards the heap and x_st */
	struct due          *x_heap;     /* a binary min-heap by pay_by_ns */
	size_t               x_n, x_cap;
	struct expirer_stats x_st;
	int                  x_nomem_logged;
};

const uint64_t expirer_lag_le_ns[EXPIRER_LAG_BUCKETS] = {
	1000000ull, 2000000ull, 5000000ull, 10000000ull, 20000000ull, 50000000ull, 100000000ull,
	200000000ull, 500000000ull, 1000000000ull, 5000000000ull, UINT64_MAX,
};

__attribute__((format(printf, 3, 4)))
static void xlog(expirer_t *e, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	plog_v(e->x_o.log, e->x_o.log_arg, level, fmt, ap);
	va_end(ap);
}

/* Under x_mu.  0, or -1: no memory (the reservation is then found by the
 * next daemon's seed, or settled by whoever meets it). */
static int heap_push(expirer_t *e, int64_t pay_by_ns, uint64_t order_no)
{
	if (e->x_n == e->x_cap) {
		size_t cap = e->x_cap ? e->x_cap * 2 : 1024;
		struct due *v = realloc(e->x_heap, cap * sizeof *v);
		if (!v)
			return -1;
		e->x_heap = v;
		e->x_cap = cap;
	}
	size_t i = e->x_n++;
	while (i > 0 && e->x_heap[(i - 1) / 2].pay_by_ns > pay_by_ns) {
		e->x_heap[i] = e->x_heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	e->x_heap[i] = (struct due){ pay_by_ns, order_no };
	return 0;
}

/* Under x_mu: the earliest, removed; the heap not empty. */
static struct due heap_pop(expirer_t *e)
{
	struct due top = e->x_heap[0], last = e->x_heap[--e->x_n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= e->x_n)
			break;
		if (c + 1 < e->x_n && e->x_heap[c + 1].pay_by_ns < e->x_heap[c].pay_by_ns)
			c++;
		if (e->x_heap[c].pay_by_ns >= last.pay_by_ns)
			break;
		e->x_heap[i] = e->x_heap[c];
		i = c;
	}
	if (e->x_n > 0)
		e->x_heap[i] = last;
	return top;
}

static void note(expirer_t *e, int64_t pay_by_ns, uint64_t order_no)
{
	pthread_mutex_lock(&e->x_mu);
	int rc = heap_push(e, pay_by_ns, order_no);
	int say = rc != 0 && !e->x_nomem_logged;
	e->x_nomem_logged |= say;
	e->x_st.pending = e->x_n;
	pthread_mutex_unlock(&e->x_mu);
	if (say)
		xlog(e, PLOG_ERROR, "expirer: out of memory: reservation %llu (and later ones) will expire"
		     " when someone meets it, or at the next daemon's start", (unsigned long long)order_no);
}

void expirer_note(expirer_t *e, const struct flash_record *rec)
{
	/* a cart is one reservation: noted once, by its line 0 */
	if (e && rec->type == FLASH_REC_ORDER && rec->value > 0 &&
	    (!(rec->flags & FLASH_REC_F_CART) || FLASH_REC_LINE(rec->flags) == 0))
		note(e, rec->value, rec->order_no);
}

/* ------------------------------------------------------------------------
 * 2. The thread
 * ------------------------------------------------------------------------ */

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The reservations an earlier daemon drained: one read of the table. */
static void seed(expirer_t *e)
{
	struct flash_seg_opts so;
	if (flash_seg_opts_get(e->x_h, &so) != FLASH_OK)
		return;
	uint64_t n = 0;
	for (uint32_t i = 0; i < so.max_orders; i++) {
		struct flash_order_info oi;
		/* a slot holding line i >= 1 of a cart reads as the cart: its
		 * line 0 stands for it (flash_expire acts on the whole cart) */
		if (flash_order_at(e->x_h, i, &oi) == FLASH_OK && oi.state == FLASH_ORDER_RESERVED &&
		    oi.line == 0) {
			note(e, oi.pay_by_ns, oi.order_no);
			n++;
		}
	}
	if (n)
		xlog(e, PLOG_INFO, "expirer: %llu reservations await their pay-by time", (unsigned long long)n);
}

/* One expiry, @p lag_ns after its pay-by time.  Under x_mu. */
static void count_lag(expirer_t *e, uint64_t lag_ns)
{
	struct expirer_stats *st = &e->x_st;
	unsigned b = 0;
	while (lag_ns > expirer_lag_le_ns[b])
		b++;
	st->lag_hist[b]++;
	st->lag_count++;
	st->lag_ns_sum += lag_ns;
	if (lag_ns > st->lag_ns_max)
		st->lag_ns_max = lag_ns;
	st->expired++;
}

/* Expire @p d.  0, or -1: the engine refused for now (the pass stops). */
static int expire_one(expirer_t *e, struct due d)
{
	int rc = flash_expire(e->x_h, d.order_no, NULL);
	int64_t now = realtime_ns();
	pthread_mutex_lock(&e->x_mu);
	switch (rc) {
	case FLASH_OK:
	case FLASH_EFATE_UNKNOWN:   /* expired in memory; the drain makes it durable */
	case FLASH_EDURABILITY:     /* the same; the WAL's failure is the daemon's to report */
		count_lag(e, now > d.pay_by_ns ? (uint64_t)(now - d.pay_by_ns) : 0);
		break;
	case FLASH_EEXPIRED:
	case FLASH_ECONFIRMED:
	case FLASH_ECANCELLED:
	case FLASH_EARCHIVED:
	case FLASH_ENOT_FOUND:
		e->x_st.settled++;       /* ended by someone else (or noted twice) */
		break;
	default:                    /* FLASH_ENOT_DUE, FLASH_EBUSY (ring full), ...: again */
		(void)heap_push(e, d.pay_by_ns, d.order_no);
		e->x_st.failures += rc != FLASH_ENOT_DUE;
		break;
	}
	e->x_st.pending = e->x_n;
	pthread_mutex_unlock(&e->x_mu);
	if (rc != FLASH_OK && rc != FLASH_EFATE_UNKNOWN && rc != FLASH_EDURABILITY && rc != FLASH_EEXPIRED &&
	    rc != FLASH_ECONFIRMED && rc != FLASH_ECANCELLED && rc != FLASH_EARCHIVED && rc != FLASH_ENOT_FOUND &&
	    rc != FLASH_ENOT_DUE) {
		xlog(e, PLOG_WARN, "expirer: reservation %llu: %s (tried again next pass)",
		     (unsigned long long)d.order_no, flash_strerror(rc));
		return -1;
	}
	return 0;
}

static void expirer_pass(void *arg, int final)
{
	expirer_t *e = arg;
	if (final) {
		/* the handle is this thread's: closed here */
		if (e->x_h)
			flash_close(e->x_h);
		e->x_h = NULL;
		return;
	}
	if (!e->x_h) {
		int rc = flash_open(e->x_segment, 0, &e->x_h);
		if (rc != FLASH_OK) {
			xlog(e, PLOG_WARN, "expirer: open %s: %s (tried again next pass)", e->x_segment,
			     flash_strerror(rc));
			e->x_h = NULL;
			return;
		}
		/* nobody waits for an expiry's acknowledgement: in sync durability
		 * the drain makes it durable with the next commit */
		(void)flash_sync_wait_set(e->x_h, 1);
		seed(e);
	}
	for (;;) {
		int64_t now = realtime_ns();
		pthread_mutex_lock(&e->x_mu);
		int due = e->x_n > 0 && e->x_heap[0].pay_by_ns <= now;
		struct due d = due ? heap_pop(e) : (struct due){ 0, 0 };
		pthread_mutex_unlock(&e->x_mu);
		if (!due || expire_one(e, d) != 0)
			break;
	}
}

int expirer_start(const struct expirer_opts *o, expirer_t **out)
{
	if (!o || !o->segment || !out)
		return FLASH_EINVAL;
	expirer_t *e = calloc(1, sizeof *e);
	if (!e || !(e->x_segment = strdup(o->segment))) {
		free(e);
		return FLASH_ENOMEM;
	}
	e->x_o = *o;
	e->x_o.segment = e->x_segment;
	pthread_mutex_init(&e->x_mu, NULL);
	if (worker_start(&e->x_w, o->every_ms ? o->every_ms : 10, WORKER_NOW, expirer_pass, e) != 0) {
		pthread_mutex_destroy(&e->x_mu);
		free(e->x_segment);
		free(e);
		return FLASH_ESYS;
	}
	*out = e;
	return FLASH_OK;
}

void expirer_stats_get(expirer_t *e, struct expirer_stats *out)
{
	pthread_mutex_lock(&e->x_mu);
	*out = e->x_st;
	pthread_mutex_unlock(&e->x_mu);
}

void expirer_stop(expirer_t *e)
{
	if (!e)
		return;
	worker_stop(&e->x_w, 1);
	pthread_mutex_destroy(&e->x_mu);
	free(e->x_heap);
	free(e->x_segment);
	free(e);
}
