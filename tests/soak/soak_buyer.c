/*
 * soak_buyer.c -- one buyer process of one simulated day of the soak (see
 * soak.h).
 *
 * The buyer makes its share of the day's order attempts, each drawn from
 * (seed, day, buyer, attempt), so a run with the same seed makes the same
 * requests:
 *   - which activity: the per-day-limit ones still running (added today or
 *     on the SOAK_DAY_ACT_DAYS - 1 days before), today's once-per-user one,
 *     today's token one, or -- now and then -- yesterday's once-per-user
 *     one, which has ended (must answer FLASH_EENDED, or FLASH_ENOT_FOUND
 *     once the daemon archived it: soak_ended_ok);
 *   - a user of the shared pool (other buyers race for the same limits);
 *   - a token for the token activity (issued just before); sometimes the
 *     used token is offered again with a new request id (must answer
 *     FLASH_EBAD_TOKEN);
 *   - a fresh request id (soak_mint_request_id); sometimes the same request
 *     is sent again at once (must answer FLASH_EDUPLICATE with the first
 *     outcome);
 *   - some successful orders are cancelled (every unit back; a second
 *     cancel FLASH_ECANCELLED), some of those under a leased lock whose
 *     fencing token must grow.
 * Every first outcome goes to the buyer's outcome file as one record
 * written with one write(2), before the next request: what a SIGKILL leaves
 * is whole records, and every order the buyer was told about is in the file.
 * FLASH_EBUSY (the ring is full while the daemon restarts) is waited out
 * and the same request sent again, as the API allows.
 */
#include "soak.h"
#include "soak_reclaim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SOAK_BUSY_TRIES 100000u   /* EBUSY waits (100 us apart) before giving up: 10 s */

struct soak_buyer {
	flash_t               *h;
	const struct soak_cfg *cfg;
	struct soak_proc      *p;
	struct soak_idgen      ids;
	int                    fd;
	uint32_t               day;
	uint64_t               fence[SOAK_LOCKS];  /* the highest fence this process was granted */
};

uint64_t soak_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void soak_bad(struct soak_buyer *b, int rc, const char *fmt, ...)
{
	struct soak_proc *p = b->p;
	va_list ap;

	if (rc == FLASH_EFULL)
		p->sp_full++;
	if (p->sp_unexpected++ == 0) {
		p->sp_first_bad_rc = rc;
		va_start(ap, fmt);
		vsnprintf(p->sp_first_bad, sizeof p->sp_first_bad, fmt, ap);
		va_end(ap);
	}
}

static void soak_pause_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

/* One whole record, or the buyer stops (a short write is a full disk). */
static int soak_write(struct soak_buyer *b, const struct soak_out *o)
{
	ssize_t w;

	do
		w = write(b->fd, o, sizeof *o);
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)sizeof *o) {
		soak_bad(b, FLASH_ESYS, "write the outcome file: %s", w < 0 ? strerror(errno) : "short");
		return -1;
	}
	return 0;
}

/* flash_order, waiting out a full ring (the request is not recorded then). */
static int soak_order(struct soak_buyer *b, const struct flash_order_req *r,
                      struct flash_order_res *res)
{
	uint32_t tries = 0;
	int rc;

	for (;;) {
		b->p->sp_calls++;
		rc = flash_order(b->h, r, res);
		if (rc != FLASH_EBUSY || ++tries >= SOAK_BUSY_TRIES)
			return rc;
		b->p->sp_busy++;
		soak_pause_us(100);
	}
}

/* CLOCK_MONOTONIC in ms: the lock leases' clock (not shifted, soak.h). */
static uint64_t soak_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define SOAK_LEASE_MS 2000u

/* Cancel @p o, sometimes under a leased lock; check the second cancel. */
static void soak_cancel(struct soak_buyer *b, const struct soak_out *o, uint64_t r)
{
	uint32_t back = 0, li = (uint32_t)(r % SOAK_LOCKS);
	uint64_t owner = ((uint64_t)getpid() << 16) | 1u, fence = 0, t0 = 0;
	char name[32];
	int locked = 0, rc;

	if ((r >> 8) % 2 == 0) {
		snprintf(name, sizeof name, "soak-lock-%u", li);
		rc = flash_lock_acquire(b->h, name, owner, SOAK_LEASE_MS, &fence);
		t0 = soak_mono_ms();      /* after the lease began: a lapse counted is real */
		if (rc == FLASH_OK) {
			if (fence <= b->fence[li])
				soak_bad(b, rc, "lock %s: fence %llu after %llu", name,
				         (unsigned long long)fence, (unsigned long long)b->fence[li]);
			b->fence[li] = fence;
			locked = 1;
		} else if (rc == FLASH_ELOCKED) {
			b->p->sp_locked++;
		} else {
			soak_bad(b, rc, "lock_acquire %s", name);
		}
	}
	rc = flash_cancel(b->h, o->so_order_no, &back);
	if (rc == FLASH_EFATE_UNKNOWN) {
		b->p->sp_fate_unknown++;   /* sync: cancelled, not yet durable */
		rc = FLASH_OK;
	}
	if (rc != FLASH_OK || back != o->so_qty) {
		soak_bad(b, rc, "cancel order %llu (%u units): %u back",
		         (unsigned long long)o->so_order_no, o->so_qty, back);
	} else {
		struct soak_out c = *o;
		c.so_kind = SOAK_OUT_CANCEL;
		b->p->sp_cancels++;
		if (soak_write(b, &c) != 0)
			return;
		rc = flash_cancel(b->h, o->so_order_no, &back);
		if (rc == FLASH_ECANCELLED && back == 0)
			b->p->sp_cancel_twice_ok++;
		else
			soak_bad(b, rc, "second cancel of order %llu", (unsigned long long)o->so_order_no);
	}
	if (locked) {
		rc = flash_lock_release(b->h, name, owner);
		if (rc == FLASH_OK)
			b->p->sp_locks++;
		else if (rc == FLASH_ENOT_OWNER && soak_mono_ms() - t0 >= SOAK_LEASE_MS)
			b->p->sp_lock_lapsed++;   /* the lease ran out while the cancels waited */
		else
			soak_bad(b, rc, "lock_release %s", name);
	}
}

/* One attempt: @p r is its random word. */
static void soak_attempt(struct soak_buyer *b, uint64_t r)
{
	const struct soak_cfg *c = b->cfg;
	uint32_t day = b->day, pick = (uint32_t)(r % 100), kind, aday = day;
	struct flash_order_req q;
	struct flash_order_res res, res2;
	struct soak_out o;
	int expect_ended = 0, rc;

	if (pick < 45) {
		kind = SOAK_KIND_DAY;   /* one of the per-day activities still running */
		uint32_t back = (uint32_t)((r >> 8) % SOAK_DAY_ACT_DAYS);
		aday = back <= day ? day - back : day;
	} else if (pick < 75) {
		kind = SOAK_KIND_ONCE;
	} else if (pick < 97 || day == 0) {
		kind = SOAK_KIND_TOKEN;
	} else {
		kind = SOAK_KIND_ONCE;  /* yesterday's: ended */
		aday = day - 1;
		expect_ended = 1;
	}
	memset(&q, 0, sizeof q);
	q.activity_id = soak_act_id(aday, kind);
	q.sku_id = (r >> 16) % 4 < 2 ? 1u : 2u + (uint32_t)((r >> 18) % (SOAK_SKUS_PER_ACT - 1));
	q.user_id = 1 + (r >> 24) % c->users;
	q.qty = (r >> 40) % 4 == 0 ? 2u : 1u;
	if (kind == SOAK_KIND_TOKEN) {
		rc = flash_token_issue(b->h, q.activity_id, q.sku_id, q.user_id, SOAK_TOKEN_TTL_MS,
		                       &q.token);
		if (rc != FLASH_OK) {
			soak_bad(b, rc, "token_issue a%u s%u u%llu", q.activity_id, q.sku_id,
			         (unsigned long long)q.user_id);
			return;
		}
	}
	q.request_id = soak_mint_request_id(&b->ids);
	rc = soak_order(b, &q, &res);
	if (rc == FLASH_EFATE_UNKNOWN) {
		/* sync: placed, its record not durable within the wait bound (the
		 * daemon restarting): an order like any other (the checks find it
		 * in the WAL), and its retry answers FLASH_OK first */
		b->p->sp_fate_unknown++;
		rc = FLASH_OK;
	}

	memset(&o, 0, sizeof o);
	o.so_kind = SOAK_OUT_ORDER;
	o.so_rc = rc;
	o.so_request_id = q.request_id;
	o.so_order_no = rc == FLASH_OK ? res.order_no : 0;
	o.so_user = q.user_id;
	o.so_token = q.token;
	o.so_activity = q.activity_id;
	o.so_sku = q.sku_id;
	o.so_qty = q.qty;
	o.so_day = day;
	o.so_slot = rc == FLASH_OK ? res.limit_slot : 0;

	if (expect_ended ? !soak_ended_ok(rc)
	                 : (rc != FLASH_OK && rc != FLASH_ESOLD_OUT && rc != FLASH_ELIMIT)) {
		soak_bad(b, rc, "order a%u s%u u%llu q%u%s", q.activity_id, q.sku_id,
		         (unsigned long long)q.user_id, q.qty, expect_ended ? " (ended: FLASH_EENDED or, archived, FLASH_ENOT_FOUND)" : "");
		return;
	}
	if (soak_write(b, &o) != 0)
		return;
	if (rc == FLASH_OK)
		b->p->sp_acked++;
	else if (rc == FLASH_ESOLD_OUT)
		b->p->sp_sold_out++;
	else if (rc == FLASH_ELIMIT)
		b->p->sp_limit++;
	else
		b->p->sp_ended_ok++;

	/* the same request again at once: the first outcome */
	if ((r >> 44) % 10 == 0) {
		int rc2 = soak_order(b, &q, &res2);
		if (rc2 == FLASH_EFATE_UNKNOWN)
			rc2 = FLASH_OK;    /* cannot be: a retry changes nothing; judged below */
		b->p->sp_retries++;
		if (soak_retry_ok(SOAK_RETRY_FIRST, rc2, &res2, rc, o.so_order_no)) {
			b->p->sp_retry_ok++;
		} else {
			b->p->sp_retry_bad++;
			soak_bad(b, rc2, "retry of request %llx (first %s, order %llu): first_rc %s, "
			         "order %llu", (unsigned long long)q.request_id, flash_rcname(rc),
			         (unsigned long long)o.so_order_no, flash_rcname(res2.first_rc),
			         (unsigned long long)res2.order_no);
		}
	}
	/* a used token offered again, as a new request: refused */
	if (kind == SOAK_KIND_TOKEN && (r >> 48) % 20 == 0) {
		q.request_id = soak_mint_request_id(&b->ids);
		int rc3 = soak_order(b, &q, &res2);
		b->p->sp_token_reuse++;
		if (rc3 == FLASH_EBAD_TOKEN)
			b->p->sp_token_reuse_ok++;
		else
			soak_bad(b, rc3, "used token %llx again", (unsigned long long)q.token);
	}
	if (rc == FLASH_OK && (r >> 52) % 100 < 12)
		soak_cancel(b, &o, r >> 56);
}

int soak_buyer_run(const struct soak_cfg *cfg, struct soak_shared *sh, uint32_t day,
                   uint32_t idx, const char *out_path)
{
	struct soak_buyer b;
	uint32_t n, i;
	int rc;

	memset(&b, 0, sizeof b);
	b.cfg = cfg;
	b.p = &sh->ss_proc[idx];
	b.day = day;
	b.ids.day = day;
	b.ids.proc = idx + 1;
	b.fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (b.fd < 0) {
		b.p->sp_open_rc = FLASH_ESYS;
		__atomic_store_n(&b.p->sp_ready, 1, __ATOMIC_RELEASE);
		return 1;
	}
	rc = flash_open(cfg->name, 0, &b.h);
	b.p->sp_open_rc = rc;
	/* release: the parent reads sp_open_rc after it sees sp_ready */
	__atomic_store_n(&b.p->sp_ready, 1, __ATOMIC_RELEASE);
	if (rc != FLASH_OK) {
		close(b.fd);
		return 1;
	}
	while (__atomic_load_n(&sh->ss_go, __ATOMIC_ACQUIRE) == 0)
		soak_pause_us(200);
	if (sh->ss_go < 0) {
		flash_close(b.h);
		close(b.fd);
		return 1;
	}
	n = cfg->orders_per_day / cfg->procs + (idx < cfg->orders_per_day % cfg->procs);
	for (i = 0; i < n && b.p->sp_unexpected < 100; i++) {
		uint64_t r = soak_mix(cfg->seed ^ soak_mix(((uint64_t)day << 40) ^
		                                           ((uint64_t)idx << 32) ^ i));
		soak_attempt(&b, r);
	}
	flash_close(b.h);
	close(b.fd);
	b.p->sp_done = 1;
	return 0;
}
