/*
 * torture.c -- the kill loop (`flashstock-torture`): buyer processes and the
 * WAL daemon are killed with SIGKILL at random instants and restarted, over
 * and over; at the end the daemon drains, MySQL catches up, and every
 * invariant of DESIGN.md section 2 is counted from the order records, the
 * WAL and MySQL.  The program exits 1 if any figure is not zero or fewer
 * kills were done than asked.
 *
 * Divisions:
 *   1. Odds and ends         clock, random numbers, messages
 *   2. The buyer's log       what a buyer KNOWS was acknowledged
 *   3. The buyer             one process: tokens, orders and reservations, retries,
 *                            payments, cancels, ...
 *   4. Processes             MariaDB fixture, the daemon, buyers, the killer
 *   5. The audit             WAL, segment, MySQL, logs, reconciler
 *   6. Phases and main
 *
 * What a buyer knows.  A buyer appends one fixed 64-byte entry to its own
 * log with write(2) AFTER each acknowledgement (order number, cancel).  A
 * kill between the acknowledgement and the write loses only that knowledge;
 * the check is "every order number a buyer knows was acknowledged is in the
 * WAL and, after catch-up, in MySQL".  Entries never straddle a page (64
 * divides 4096), so a kill never leaves half an entry behind.  An order with
 * a request id is announced first (INTENT); a buyer restarted after a kill
 * retries its unanswered INTENT with the same request id and token: the
 * engine must answer the first outcome, or place it once if the first died
 * before its commit point.  Two ORDER records with one request id in the WAL
 * are an exactly-once violation.
 *
 * Phases: one segment in async durability, one in sync (the second is where
 * "acknowledged => durable" is at stake), each with its own WAL and its own
 * MySQL database in one private MariaDB (tests/fixtures/mariadb.sh).
 *
 * Usage: flashstock-torture [--kills N] [--long SECONDS] [--phase-s S]
 *        [--buyers N] [--seed N] [--mode async|sync|both]
 *        [--flashstock PATH] [--fixture PATH] [--keep]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>

#include <mysql.h>

#include "fixture_run.h"
#include "flashstock.h"
#include "mysql_apply.h"
#include "reconcile.h"
#include "reconcile_sql.h"
#include "wal.h"

#if defined(__SANITIZE_ADDRESS__)
#define TT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_SANITIZED 1
#endif
#endif
#ifndef TT_SANITIZED
#define TT_SANITIZED 0
#endif

/* ======================================================================
 * 1. Odds and ends
 * ====================================================================== */

#define TT_MAX_BUYERS 32
#define TT_OPS_S 2500   /* operations a second per buyer, at most */
#define TT_SPIN_US 60   /* refused orders between two operations, at most (us) */

/* The catalog (exact figures are read back from the segment, never assumed). */
#define ACT_ONE   1u   /* K = 1, a cancel keeps the quota, token optional */
#define ACT_TWO   2u   /* K = 2, a cancel returns the quota, token required */
#define SKU_HOT   1u   /* in both activities, 8 shards */
#define SKU_A1    2u   /* activity 1, 1 shard */
#define SKU_A2    3u   /* activity 2, 2 shards */
#define ACT_SPIN  3u   /* K = 2, a cancel returns the quota: orders that must fail */
#define SKU_ZERO  9u   /* activity 3, no units: every order takes a limit slot, finds
                          no stock and undoes the slot -- kills land inside calls */
#define SPIN_USERS 64u
#define A2_USERS  2000u   /* activity 2: users shared by every buyer (they race) */
#define A1_USERS  150000u /* activity 1: users per buyer index (each holds K = 1 for good) */

static int64_t tt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void tt_sleep_us(long us)
{
	struct timespec ts = { us / 1000000L, (us % 1000000L) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* xorshift64*: cheap, per process, seeded from the run seed. */
static uint64_t tt_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 2685821657736338717ULL;
}

static uint64_t tt_below(uint64_t *s, uint64_t n)
{
	return n ? tt_rand(s) % n : 0;
}

/* A duration spread evenly on a log scale between lo_us and hi_us: many
 * short gaps and some long ones, so kills land in every part of a call. */
static long tt_log_us(uint64_t *s, double lo_us, double hi_us)
{
	double u = (double)(tt_rand(s) >> 11) / 9007199254740992.0;
	double lo = __builtin_log(lo_us), hi = __builtin_log(hi_us);

	return (long)__builtin_exp(lo + u * (hi - lo));
}

static void tt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void tt_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("torture: ", stdout);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
}

static void tt_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void tt_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("torture: FATAL: ", stdout);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
	exit(2);
}

/* ======================================================================
 * 2. The buyer's log
 * ====================================================================== */

enum tt_kind {
	L_INTENT = 1,   /* about to place an order with a request id (not yet answered) */
	L_ORDER  = 2,   /* acknowledged order: order_no */
	L_FAIL   = 3,   /* the answered outcome of an INTENT was a refusal (aux = rc) */
	L_CANCEL = 4,   /* acknowledged cancel of order_no */
	L_VIOL   = 5,   /* the engine broke a promise in front of the buyer (aux = what) */
	L_CONFIRM = 6   /* acknowledged confirm (payment) of order_no */
};

enum tt_viol {
	V_RETRY_NOT_DUP   = 1,  /* same request id retried: not FLASH_EDUPLICATE */
	V_RETRY_OTHER_NO  = 2,  /* ... or another order number / first outcome */
	V_CANCEL_TWICE    = 3,  /* a second cancel returned units */
	V_NO_TOKEN_OK     = 4,  /* token-required activity accepted an order without one */
	V_REUSED_TOKEN_OK = 5,  /* a redeemed token was accepted again */
	V_ORDER_READBACK  = 6,  /* flash_order_get disagrees with the acknowledged order */
	V_NKINDS          = 7
};

static const char *const tt_viol_name[V_NKINDS] = {
	"", "retry-not-duplicate", "retry-other-order", "cancel-twice-returned",
	"no-token-accepted", "reused-token-accepted", "order-readback"
};

/* One log entry: 64 bytes, so an entry never crosses a page of the file. */
struct tt_entry {
	uint32_t te_kind;
	uint32_t te_activity;
	uint32_t te_sku;
	uint32_t te_qty;
	uint64_t te_user;
	uint64_t te_order_no;
	uint64_t te_request_id;
	uint64_t te_token;
	int64_t  te_aux;
	uint64_t te_pad;
};
_Static_assert(sizeof(struct tt_entry) == 64, "log entries are 64 bytes");

/* Counters every process adds to (an anonymous shared mapping). */
struct tt_shared {
	uint64_t ops;
	uint64_t acked_orders;
	uint64_t acked_cancels;
	uint64_t reservations;    /* orders placed as reservations (acknowledged) */
	uint64_t carts;           /* carts of two lines (acknowledged) */
	uint64_t confirms;        /* confirms acknowledged */
	uint64_t too_late;        /* confirms and cancels answered FLASH_EEXPIRED */
	uint64_t refused;         /* orders refused (sold out, limit, token, ...) */
	uint64_t cross_retries;   /* INTENTs retried by a restarted buyer */
	uint64_t cross_dup;       /* ... answered with the first outcome */
	uint64_t cross_new;       /* ... placed anew (the first died before its commit) */
	uint64_t same_retries;    /* retries in the same life */
	uint64_t restocks;
	uint64_t token_ops;
	uint64_t lock_ops;
	uint64_t efull;
	uint64_t busy;            /* FLASH_EBUSY, FLASH_EFATE_UNKNOWN: the daemon was down */
	uint64_t other_rc;        /* unexpected codes (printed, and they fail the run) */
	int32_t  last_other_rc;
	uint32_t viol[V_NKINDS];
	uint64_t other_by_rc[64];  /* unexpected codes by -rc */
	int32_t  other_line[64];   /* torture.c line that last got it */
};

static struct tt_shared *tt_sh;

static void tt_add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* Append one entry.  A write(2) of 64 bytes to a regular file at an offset
 * that is a multiple of 64 is whole or absent after a SIGKILL. */
static void tt_log(int fd, const struct tt_entry *e)
{
	ssize_t w = write(fd, e, sizeof *e);

	if (w != (ssize_t)sizeof *e)
		_exit(3);
}

/* ======================================================================
 * 3. The buyer
 * ====================================================================== */

struct tt_cfg {
	char        seg[64];
	char        dir[PATH_MAX + 16]; /* phase directory: logs, WAL, daemon.log */
	char        wal[PATH_MAX + 32];
	int         sync;
	unsigned    buyers;
	uint64_t    seed;
};

#define TT_ACTIVE_MAX 512

struct tt_buyer {
	flash_t  *h;
	int       fd;
	unsigned  idx;
	uint64_t  rng;
	uint64_t  rid_next;
	int       no_rids;          /* the request table is full: stop using ids */
	uint64_t  active[TT_ACTIVE_MAX];
	unsigned  nactive;
};

static void tt_viol(struct tt_buyer *b, int what, uint64_t order_no, int64_t rc)
{
	struct tt_entry e;

	memset(&e, 0, sizeof e);
	e.te_kind = L_VIOL;
	e.te_order_no = order_no;
	e.te_aux = what | (rc << 8);
	tt_log(b->fd, &e);
	__atomic_fetch_add(&tt_sh->viol[what], 1, __ATOMIC_RELAXED);
}

/* An unexpected result code: counted per code, with the line that got it. */
static void tt_other_at(int rc, int line)
{
	if (rc == FLASH_EBUSY || rc == FLASH_EFATE_UNKNOWN) {
		/* documented: the ring is full while no daemon drains it (killed,
		 * restarting), or a sync wait outlived its bound for the same
		 * reason (the operation stands; it is not acknowledged); counted
		 * and printed, not a failure */
		tt_add(&tt_sh->busy, 1);
		return;
	}
	tt_add(&tt_sh->other_rc, 1);
	if (rc < 0 && -rc < 64) {
		tt_add(&tt_sh->other_by_rc[-rc], 1);
		__atomic_store_n(&tt_sh->other_line[-rc], line, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&tt_sh->last_other_rc, rc, __ATOMIC_RELAXED);
}
#define tt_other(rc) tt_other_at((rc), __LINE__)

static void tt_active_add(struct tt_buyer *b, uint64_t no)
{
	if (b->nactive < TT_ACTIVE_MAX)
		b->active[b->nactive++] = no;
	else
		b->active[tt_below(&b->rng, TT_ACTIVE_MAX)] = no;
}

/* Remember an acknowledged order: the log first (that is the knowledge the
 * audit checks), then the buyer's own list of orders it may cancel. */
static void tt_acked(struct tt_buyer *b, const struct flash_order_req *r, uint64_t no)
{
	struct tt_entry e;
	struct flash_order_info oi;

	memset(&e, 0, sizeof e);
	e.te_kind = L_ORDER;
	e.te_activity = r->activity_id;
	e.te_sku = r->sku_id;
	e.te_qty = r->qty;
	e.te_user = r->user_id;
	e.te_order_no = no;
	e.te_request_id = r->request_id;
	e.te_aux = r->reserve_ms;       /* a reservation: its pay window */
	tt_log(b->fd, &e);
	tt_add(&tt_sh->acked_orders, 1);
	if (r->reserve_ms)
		tt_add(&tt_sh->reservations, 1);
	tt_active_add(b, no);
	if ((tt_rand(&b->rng) & 15) == 0) {
		int rc = flash_order_get(b->h, no, &oi);
		if (rc != FLASH_OK || oi.user_id != r->user_id || oi.activity_id != r->activity_id ||
		    oi.sku_id != r->sku_id || oi.qty != r->qty || oi.state == FLASH_ORDER_NONE)
			tt_viol(b, V_ORDER_READBACK, no, rc);
	}
}

static void tt_refused(struct tt_buyer *b, int rc)
{
	switch (rc) {
	case FLASH_ESOLD_OUT: case FLASH_ELIMIT: case FLASH_EBAD_TOKEN:
		tt_add(&tt_sh->refused, 1);
		break;
	case FLASH_EFULL:
		tt_add(&tt_sh->efull, 1);
		b->no_rids = 1;   /* most likely the request table; orders go on without ids */
		break;
	default:
		tt_other(rc);
	}
}

/* Retry an INTENT left unanswered by a killed earlier life: same request
 * id, same goods, same token.  Either the first attempt committed (then the
 * answer must be FLASH_EDUPLICATE with its order number) or it was rolled
 * back and forgotten (then this is a fresh attempt). */
static void tt_retry_intent(struct tt_buyer *b, const struct tt_entry *in)
{
	struct flash_order_req r;
	struct flash_order_res res;
	struct tt_entry e;
	int rc;

	memset(&r, 0, sizeof r);
	r.activity_id = in->te_activity;
	r.sku_id = in->te_sku;
	r.qty = in->te_qty;
	r.user_id = in->te_user;
	r.token = in->te_token;
	r.request_id = in->te_request_id;
	r.reserve_ms = (uint32_t)in->te_pad;
	memset(&res, 0, sizeof res);
	tt_add(&tt_sh->cross_retries, 1);
	rc = flash_order(b->h, &r, &res);
	if (rc == FLASH_EDUPLICATE) {
		tt_add(&tt_sh->cross_dup, 1);
		rc = res.first_rc;
	} else if (rc == FLASH_OK) {
		tt_add(&tt_sh->cross_new, 1);
	}
	if (rc == FLASH_OK) {
		tt_acked(b, &r, res.order_no);
		return;
	}
	memset(&e, 0, sizeof e);
	e.te_kind = L_FAIL;
	e.te_request_id = r.request_id;
	e.te_aux = rc;
	tt_log(b->fd, &e);
	tt_refused(b, rc);
}

/* Read the tail of this buyer's log: its recent acknowledged orders (to
 * cancel some) and an INTENT that was never answered (to retry it). */
static void tt_buyer_resume(struct tt_buyer *b)
{
	enum { TAIL = 4096 };
	static struct tt_entry v[TAIL];
	struct tt_entry last;
	off_t end = lseek(b->fd, 0, SEEK_END), from;
	ssize_t got;
	size_t n, i;

	if (end < (off_t)sizeof(struct tt_entry))
		return;
	end -= end % (off_t)sizeof(struct tt_entry);
	from = end > (off_t)sizeof v ? end - (off_t)sizeof v : 0;
	got = pread(b->fd, v, (size_t)(end - from), from);
	if (got <= 0)
		return;
	n = (size_t)got / sizeof v[0];
	for (i = 0; i < n; i++) {
		if (v[i].te_kind == L_ORDER) {
			tt_active_add(b, v[i].te_order_no);
		} else if (v[i].te_kind == L_CANCEL) {
			for (unsigned k = 0; k < b->nactive; k++)
				if (b->active[k] == v[i].te_order_no) {
					b->active[k] = b->active[--b->nactive];
					break;
				}
		}
	}
	last = v[n - 1];
	if (last.te_kind == L_INTENT)
		tt_retry_intent(b, &last);
}

static uint32_t tt_pick_sku(struct tt_buyer *b, uint32_t act)
{
	if (tt_below(&b->rng, 10) < 7)
		return SKU_HOT;
	return act == ACT_ONE ? SKU_A1 : SKU_A2;
}

static int tt_confirm(struct tt_buyer *b, uint64_t no);

/* One order attempt, with the checks a buyer can make on the spot. */
static void tt_op_order(struct tt_buyer *b, uint32_t act)
{
	struct flash_order_req r;
	struct flash_order_res res, res2;
	struct tt_entry e;
	uint64_t tok = 0;
	int rc, want_token = act == ACT_TWO || (tt_rand(&b->rng) & 1);

	memset(&r, 0, sizeof r);
	r.activity_id = act;
	r.sku_id = tt_pick_sku(b, act);
	if (act == ACT_ONE) {
		r.user_id = 1 + (uint64_t)b->idx * 1000000u + tt_below(&b->rng, A1_USERS);
		r.qty = 1 + (uint32_t)tt_below(&b->rng, 2);
	} else {
		r.user_id = 1 + tt_below(&b->rng, A2_USERS);
		r.qty = 1 + (uint32_t)tt_below(&b->rng, 3);
	}
	if (tt_below(&b->rng, 4) == 0)
		r.reserve_ms = 20 + (uint32_t)tt_below(&b->rng, 300);   /* paid or not, later */
	if (act == ACT_TWO && tt_below(&b->rng, 40) == 0) {
		/* no token on a token-required activity: must be refused */
		rc = flash_order(b->h, &r, &res);
		if (rc == FLASH_OK) {
			tt_viol(b, V_NO_TOKEN_OK, res.order_no, rc);
			tt_acked(b, &r, res.order_no);
		} else if (rc != FLASH_EBAD_TOKEN) {
			tt_refused(b, rc);
		}
		return;
	}
	if (want_token) {
		tt_add(&tt_sh->token_ops, 1);
		rc = flash_token_issue(b->h, act, r.sku_id, r.user_id, 60000, &tok);
		if (rc != FLASH_OK) {
			tt_refused(b, rc);
			return;
		}
		r.token = tok;
	}
	if (!b->no_rids && (tt_rand(&b->rng) & 1)) {
		r.request_id = b->rid_next++;
		memset(&e, 0, sizeof e);
		e.te_kind = L_INTENT;
		e.te_activity = r.activity_id;
		e.te_sku = r.sku_id;
		e.te_qty = r.qty;
		e.te_user = r.user_id;
		e.te_request_id = r.request_id;
		e.te_token = r.token;
		e.te_pad = r.reserve_ms;
		tt_log(b->fd, &e);
	}
	memset(&res, 0, sizeof res);
	rc = flash_order(b->h, &r, &res);
	if (rc == FLASH_OK) {
		tt_acked(b, &r, res.order_no);
		/* half of the reservations are paid at once, in time */
		if (r.reserve_ms && (tt_rand(&b->rng) & 1))
			(void)tt_confirm(b, res.order_no);
		if (r.request_id != 0 && tt_below(&b->rng, 7) == 0) {
			/* the same request again: the first outcome, nothing taken twice */
			tt_add(&tt_sh->same_retries, 1);
			memset(&res2, 0, sizeof res2);
			rc = flash_order(b->h, &r, &res2);
			if (rc != FLASH_EDUPLICATE)
				tt_viol(b, V_RETRY_NOT_DUP, res.order_no, rc);
			else if (res2.first_rc != FLASH_OK || res2.order_no != res.order_no)
				tt_viol(b, V_RETRY_OTHER_NO, res.order_no, res2.first_rc);
		}
		if (r.token != 0 && tt_below(&b->rng, 20) == 0) {
			/* its token again, under a new request id: must be refused */
			r.request_id = 0;
			rc = flash_order(b->h, &r, &res2);
			if (rc == FLASH_OK) {
				tt_viol(b, V_REUSED_TOKEN_OK, res2.order_no, rc);
				tt_acked(b, &r, res2.order_no);
			}
		}
		return;
	}
	if (r.request_id != 0) {
		memset(&e, 0, sizeof e);
		e.te_kind = L_FAIL;
		e.te_request_id = r.request_id;
		e.te_aux = rc;
		tt_log(b->fd, &e);
	}
	tt_refused(b, rc);
}

/*
 * A cart: both skus of the activity in one order, all or nothing (one of
 * them a reservation now and then).  Acknowledged as the order of its line
 * 0 (its number is what a cancel or a payment names); every line is read
 * back now and then: the cart is whole, one state.
 */
static void tt_op_cart(struct tt_buyer *b, uint32_t act)
{
	struct flash_cart_req r;
	struct flash_cart_res res;
	struct flash_order_req o;
	uint64_t tok = 0;
	int rc, swap = tt_rand(&b->rng) & 1;

	memset(&r, 0, sizeof r);
	r.activity_id = act;
	r.lines = 2;
	r.line[swap].sku_id = SKU_HOT;
	r.line[!swap].sku_id = act == ACT_ONE ? SKU_A1 : SKU_A2;
	r.line[0].qty = 1 + (uint32_t)tt_below(&b->rng, 2);
	r.line[1].qty = 1 + (uint32_t)tt_below(&b->rng, 2);
	r.user_id = act == ACT_ONE ? 1 + (uint64_t)b->idx * 1000000u + tt_below(&b->rng, A1_USERS)
	                           : 1 + tt_below(&b->rng, A2_USERS);
	if (tt_below(&b->rng, 4) == 0)
		r.reserve_ms = 20 + (uint32_t)tt_below(&b->rng, 300);
	if (act == ACT_TWO) {
		tt_add(&tt_sh->token_ops, 1);
		rc = flash_token_issue(b->h, act, r.line[0].sku_id, r.user_id, 60000, &tok);
		if (rc != FLASH_OK) {
			tt_refused(b, rc);
			return;
		}
		r.token = tok;
	}
	memset(&res, 0, sizeof res);
	rc = flash_cart_order(b->h, &r, &res);
	if (rc != FLASH_OK) {
		tt_refused(b, rc);
		return;
	}
	memset(&o, 0, sizeof o);
	o.activity_id = act;
	o.sku_id = r.line[0].sku_id;
	o.qty = r.line[0].qty;
	o.user_id = r.user_id;
	o.reserve_ms = r.reserve_ms;
	tt_add(&tt_sh->carts, 1);
	tt_acked(b, &o, res.order_no);
	if ((tt_rand(&b->rng) & 7) == 0) {
		struct flash_order_info l[2];
		uint32_t n = 0;

		rc = flash_order_lines(b->h, res.order_no, l, 2, &n);
		if (rc != FLASH_OK || n != 2 || l[1].sku_id != r.line[1].sku_id || l[1].qty != r.line[1].qty ||
		    l[1].state != l[0].state)
			tt_viol(b, V_ORDER_READBACK, res.order_no, rc);
	}
	if (r.reserve_ms && (tt_rand(&b->rng) & 1))
		(void)tt_confirm(b, res.order_no);
}

static void tt_op_cancel(struct tt_buyer *b)
{
	struct tt_entry e;
	uint32_t units = 0;
	unsigned k;
	uint64_t no;
	int rc;

	if (b->nactive == 0)
		return;
	k = (unsigned)tt_below(&b->rng, b->nactive);
	no = b->active[k];
	b->active[k] = b->active[--b->nactive];
	rc = flash_cancel(b->h, no, &units);
	if (rc == FLASH_OK) {
		memset(&e, 0, sizeof e);
		e.te_kind = L_CANCEL;
		e.te_order_no = no;
		e.te_aux = units;
		tt_log(b->fd, &e);
		tt_add(&tt_sh->acked_cancels, 1);
		if (tt_below(&b->rng, 8) == 0) {
			rc = flash_cancel(b->h, no, &units);
			if (rc == FLASH_EBUSY)
				tt_other(rc);     /* ring full: nothing was done */
			else if (rc != FLASH_ECANCELLED)
				tt_viol(b, V_CANCEL_TWICE, no, rc);
		}
	} else if (rc == FLASH_EEXPIRED) {
		tt_add(&tt_sh->too_late, 1);   /* a reservation not paid in time: expired first */
	} else if (rc != FLASH_ECANCELLED) {
		/* ECANCELLED: an earlier life cancelled it and died before logging */
		tt_other(rc);
	}
}

/* Pay order @p no: a reservation becomes ACTIVE (or, too late, is found
 * expired), a plain order is ACTIVE already.  Nonzero when it has ended
 * (expired, or cancelled by an earlier life): the buyer forgets it. */
static int tt_confirm(struct tt_buyer *b, uint64_t no)
{
	struct tt_entry e;
	int rc = flash_confirm(b->h, no);

	if (rc == FLASH_OK) {
		memset(&e, 0, sizeof e);
		e.te_kind = L_CONFIRM;
		e.te_order_no = no;
		tt_log(b->fd, &e);
		tt_add(&tt_sh->confirms, 1);
		return 0;
	}
	if (rc == FLASH_EEXPIRED || rc == FLASH_ECANCELLED) {
		tt_add(&tt_sh->too_late, rc == FLASH_EEXPIRED);
		return 1;
	}
	tt_other(rc);
	return 0;
}

/* Pay one of the buyer's orders, later. */
static void tt_op_confirm(struct tt_buyer *b)
{
	unsigned k;

	if (b->nactive == 0)
		return;
	k = (unsigned)tt_below(&b->rng, b->nactive);
	if (tt_confirm(b, b->active[k]))
		b->active[k] = b->active[--b->nactive];
}

static void tt_op_restock(struct tt_buyer *b)
{
	uint32_t act = (tt_rand(&b->rng) & 1) ? ACT_ONE : ACT_TWO;
	int64_t delta = tt_below(&b->rng, 4) == 0 ? -1 : 1 + (int64_t)tt_below(&b->rng, 6);
	int rc = flash_restock(b->h, act, tt_pick_sku(b, act), delta);

	tt_add(&tt_sh->restocks, 1);
	if (rc != FLASH_OK && !(rc == FLASH_ESOLD_OUT && delta < 0))
		tt_other(rc);
}

/* A token redeemed outside the order path may not buy anything afterwards. */
static void tt_op_token(struct tt_buyer *b)
{
	struct flash_order_req r;
	struct flash_order_res res;
	uint64_t tok;
	int rc;

	memset(&r, 0, sizeof r);
	r.activity_id = ACT_TWO;
	r.sku_id = tt_pick_sku(b, ACT_TWO);
	r.user_id = 1 + tt_below(&b->rng, A2_USERS);
	r.qty = 1;
	tt_add(&tt_sh->token_ops, 1);
	rc = flash_token_issue(b->h, r.activity_id, r.sku_id, r.user_id, 60000, &tok);
	if (rc != FLASH_OK) {
		tt_refused(b, rc);
		return;
	}
	rc = flash_token_redeem(b->h, r.activity_id, r.sku_id, r.user_id, tok);
	if (rc != FLASH_OK) {
		tt_other(rc);
		return;
	}
	r.token = tok;
	rc = flash_order(b->h, &r, &res);
	if (rc == FLASH_OK) {
		tt_viol(b, V_REUSED_TOKEN_OK, res.order_no, rc);
		tt_acked(b, &r, res.order_no);
	} else if (rc != FLASH_EBAD_TOKEN) {
		tt_refused(b, rc);
	}
}

static void tt_op_lock(struct tt_buyer *b)
{
	char name[32];
	uint64_t owner = ((uint64_t)getpid() << 8) | 1, fence;
	int rc;

	snprintf(name, sizeof name, "torture-%u", (unsigned)tt_below(&b->rng, 4));
	tt_add(&tt_sh->lock_ops, 1);
	rc = flash_lock_acquire(b->h, name, owner, 50, &fence);
	if (rc == FLASH_ELOCKED)
		return;
	if (rc != FLASH_OK) {
		tt_other(rc);
		return;
	}
	if (tt_rand(&b->rng) & 1) {
		rc = flash_lock_renew(b->h, name, owner, 50);
		if (rc != FLASH_OK && rc != FLASH_ENOT_OWNER)   /* the lease may have run out */
			tt_other(rc);
	}
	rc = flash_lock_release(b->h, name, owner);
	if (rc != FLASH_OK && rc != FLASH_ENOT_OWNER)
		tt_other(rc);
}

/* An order that must be refused for want of stock: it walks the journaled
 * steps (limit slot taken, stock CAS fails, slot given back), so a kill in
 * it leaves an operation for recovery to roll back. */
static void tt_op_spin(struct tt_buyer *b)
{
	struct flash_order_req r;
	struct flash_order_res res;
	int rc;

	memset(&r, 0, sizeof r);
	r.activity_id = ACT_SPIN;
	r.sku_id = SKU_ZERO;
	r.user_id = 1 + tt_below(&b->rng, SPIN_USERS);
	r.qty = 1;
	rc = flash_order(b->h, &r, &res);
	if (rc == FLASH_OK)
		tt_acked(b, &r, res.order_no);   /* the audit counts it oversold */
	else if (rc != FLASH_ESOLD_OUT && rc != FLASH_ELIMIT)
		tt_other(rc);
}

/* The body of a buyer process: attach (which recovers the dead), resume from
 * the log, then operate until killed. */
static void __attribute__((noreturn)) tt_buyer_main(const struct tt_cfg *c, unsigned idx, uint64_t gen)
{
	struct tt_buyer b;
	char path[PATH_MAX + 64];
	int64_t life0, nops = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* busy buyers on two cores must not starve the killer and the daemon */
	if (nice(5) == -1 && errno != 0)
		_exit(6);
	memset(&b, 0, sizeof b);
	b.idx = idx;
	b.rng = (c->seed ^ ((uint64_t)idx << 40) ^ (gen * 0x9E3779B97F4A7C15ULL)) | 1;
	/* request ids: buyer, life and a counter; never reused by another life */
	b.rid_next = ((uint64_t)(idx + 1) << 56) | (gen << 24) | 1;
	snprintf(path, sizeof path, "%s/buyer-%u.log", c->dir, idx);
	b.fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (b.fd < 0)
		_exit(4);
	rc = flash_open(c->seg, 0, &b.h);
	if (rc != FLASH_OK) {
		fprintf(stderr, "torture: buyer %u: flash_open: %s\n", idx, flash_rcname(rc));
		_exit(5);
	}
	tt_buyer_resume(&b);
	life0 = tt_now_ns();
	for (;;) {
		uint64_t r = tt_below(&b.rng, 100);

		/* a buyer with many orders cancels more: stock and quota keep moving */
		if (b.nactive > 48 && (tt_rand(&b.rng) & 3) == 0)
			r = 70;

		tt_add(&tt_sh->ops, 1);
		if (r < 45)
			tt_op_order(&b, ACT_TWO);
		else if (r < 70)
			tt_op_order(&b, ACT_ONE);
		else if (r < 74)
			tt_op_cancel(&b);
		else if (r < 77)
			tt_op_confirm(&b);
		else if (r < 79)
			tt_op_restock(&b);
		else if (r < 88)
			tt_op_token(&b);
		else if (r < 95)
			tt_op_lock(&b);
		else if (r < 98)
			tt_op_cart(&b, (tt_rand(&b.rng) & 1) ? ACT_ONE : ACT_TWO);
		/* at most TT_OPS_S operations a second per buyer, so that a long run's
		 * WAL and MySQL stay within reach of the final catch-up, and refusals
		 * (which never wait for the fdatasync) do not spin.  Half of the time
		 * left over goes to refused orders (kills land inside calls), at most
		 * TT_SPIN_US of it: six buyers spinning on two cores starve the
		 * killer and the daemon. */
		{
			int64_t due = life0 + (int64_t)(++nops * (1000000000LL / TT_OPS_S));
			int64_t now = tt_now_ns();
			if (due > now && (tt_rand(&b.rng) & 1)) {
				int64_t stop = due - now > TT_SPIN_US * 1000LL ? now + TT_SPIN_US * 1000LL : due;
				while ((now = tt_now_ns()) < stop)
					tt_op_spin(&b);
			}
			if (due > now)
				tt_sleep_us((long)((due - now) / 1000));
		}
	}
}

/* ======================================================================
 * 4. Processes
 * ====================================================================== */

struct tt_opts {
	const char *flashstock;      /* the `flashstock` command (serve) */
	const char *fixture;         /* tests/fixtures/mariadb.sh */
	unsigned    kills;           /* kills to reach over all phases */
	double      phase_s;         /* least seconds per phase */
	double      long_s;          /* --long: seconds over all phases (0: CI size) */
	unsigned    buyers;
	uint64_t    seed;
	int         modes;           /* 1 async, 2 sync, 3 both */
	int         keep;
};

static char tt_root[PATH_MAX];       /* private directory of the run */
static char tt_dbdir[PATH_MAX + 16]; /* MariaDB's directory inside it */
static char tt_socket[PATH_MAX + 32];
static int  tt_db_started;
static volatile sig_atomic_t tt_interrupted;

static void tt_on_signal(int sig)
{
	(void)sig;
	tt_interrupted = 1;
}

/* Run `sh FIXTURE CMD DBDIR` for the run's server (tests/fixtures/fixture_run.h).
 * @return its exit status, or -1. */
static int tt_fixture(const struct tt_opts *o, const char *cmd, char *out, size_t cap)
{
	return fixture_run(o->fixture, cmd, tt_dbdir, out, cap);
}

static void tt_mysql_url(char *buf, size_t cap, const char *db)
{
	snprintf(buf, cap, "mysql://root@localhost/%s?socket=%s", db, tt_socket);
}

/* Start the private MariaDB and make one database per phase. */
static void tt_mariadb_start(const struct tt_opts *o)
{
	char env[4096], url[PATH_MAX + 128];
	struct mdb_opts mo;
	mdb_t *m = NULL;
	int rc;

	snprintf(tt_dbdir, sizeof tt_dbdir, "%s/mariadb", tt_root);
	tt_say("starting a private MariaDB in %s (no TCP port)", tt_dbdir);
	tt_db_started = 1;
	rc = tt_fixture(o, "start", env, sizeof env);
	if (rc != 0)
		tt_die("%s start failed (exit %d)", o->fixture, rc);
	if (fixture_export(env, "FLASH_MYSQL_SOCKET", tt_socket, sizeof tt_socket) != 0)
		tt_die("%s start printed no usable FLASH_MYSQL_SOCKET", o->fixture);

	tt_mysql_url(url, sizeof url, "flashstock");
	memset(&mo, 0, sizeof mo);
	mo.url = url;
	mo.log_level = PLOG_WARN;
	rc = mdb_open(&mo, &m);
	if (rc != FLASH_OK)
		tt_die("connect to the private MariaDB as root: %s", flash_strerror(rc));
	if (mysql_query(mdb_conn(m), "CREATE DATABASE torture_async") != 0 ||
	    mysql_query(mdb_conn(m), "CREATE DATABASE torture_sync") != 0)
		tt_die("create the phase databases: %s", mysql_error(mdb_conn(m)));
	mdb_close(m);
}

static void tt_mariadb_stop(const struct tt_opts *o)
{
	if (!tt_db_started)
		return;
	tt_db_started = 0;
	tt_say("stopping MariaDB");
	if (tt_fixture(o, "stop", NULL, 0) != 0)
		tt_say("WARNING: %s stop %s failed", o->fixture, tt_dbdir);
}

/* `flashstock serve` on the phase's segment and WAL, applying to MySQL;
 * its log lines are appended to DIR/daemon.log. */
static pid_t tt_daemon_start(const struct tt_opts *o, const struct tt_cfg *c, const char *url)
{
	char log[PATH_MAX + 64];
	pid_t pid;

	snprintf(log, sizeof log, "%s/daemon.log", c->dir);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		tt_die("fork the daemon: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		execl(o->flashstock, "flashstock", "serve", "--name", c->seg, "--wal", c->wal,
		      "--mysql", url, "--log-level", "warn", "--recover-ms", "200",
		      "--wal-file-mb", "8", "--snapshot-every", "3", "--keep-wal", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static pid_t tt_buyer_start(const struct tt_cfg *c, unsigned idx, uint64_t gen)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		tt_die("fork a buyer: %s", strerror(errno));
	if (pid == 0)
		tt_buyer_main(c, idx, gen);
	return pid;
}

/* Wait for @p pid; @return its status (or -1). */
static int tt_reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

static void tt_print_tail(const char *path, int lines)
{
	char cmd[2 * PATH_MAX];

	snprintf(cmd, sizeof cmd, "tail -n %d '%s' | sed 's/^/    | /'", lines, path);
	fflush(stdout);
	if (system(cmd) != 0)
		tt_say("(cannot show %s)", path);
}

/* ======================================================================
 * 5. The audit
 * ====================================================================== */

struct tt_fig {
	/* the run */
	uint64_t kills_buyer, kills_daemon, kills_final;
	uint64_t buyer_fail, daemon_fail;       /* exits that were not our SIGKILL */
	int      daemon_status;                 /* final SIGTERM: exit status */
	uint64_t acked_orders, acked_cancels;   /* known from the logs */
	uint64_t recoveries, rolled_back, rolled_forward, recovered_at_end;
	uint64_t seg_orders, seg_cancelled, orders_max, seg_carts, wal_cart_lines;
	uint64_t wal_records, wal_orders, wal_cancels, wal_restocks, wal_last_lsn;
	uint64_t mysql_applied_lsn, mysql_orders, mysql_conflicts, mysql_late;
	/* the invariants: every one must be 0 */
	uint64_t oversold, oversold_mysql;
	uint64_t lost_wal, lost_mysql, lost_cancel_wal, lost_cancel_mysql;
	uint64_t dup_wal, dup_cancel_wal, dup_request, dup_acked;
	uint64_t leaked_units, leaked_units_wal;
	uint64_t over_limit, over_limit_mysql;
	uint64_t state_mismatch;                /* segment order state vs the WAL's records */
	uint64_t ended_twice;                   /* an order with two of CANCEL, EXPIRE (or two of one) */
	uint64_t confirm_and_expire;            /* a reservation both paid and expired */
	uint64_t lost_confirm_wal, lost_confirm_mysql;   /* acked payments of reservations */
	uint64_t seg_reserved, seg_expired, wal_confirms, wal_expires;
	uint64_t reconcile_diffs;
	int      reconcile_status;
	uint64_t violations, other_rc, lsn_behind;
};

struct tt_word {               /* one order number as the WAL has it */
	uint32_t activity_id, sku_id, qty;
	uint8_t  norder, ncancel, nconfirm, nexpire;
	uint64_t user_id;
	uint8_t  resv;             /* its ORDER record names a pay-by time */
};

struct tt_sku {
	uint32_t activity_id, sku_id;
	int64_t  wal_total, wal_sold;
	uint64_t total, available, active_qty;
};

struct tt_audit {
	uint64_t        maxno;
	struct tt_word *w;           /* [maxno + 1] */
	uint8_t        *sql;         /* [maxno + 1]: MySQL state + 1, 0 if absent */
	uint64_t       *rids;
	size_t          nrids, caprids;
	struct tt_sku   sku[32];
	unsigned        nsku;
	uint64_t        out_of_range;
	struct tt_fig  *f;
};

static struct tt_sku *tt_sku_of(struct tt_audit *a, uint32_t act, uint32_t sku)
{
	for (unsigned i = 0; i < a->nsku; i++)
		if (a->sku[i].activity_id == act && a->sku[i].sku_id == sku)
			return &a->sku[i];
	if (a->nsku == sizeof a->sku / sizeof a->sku[0])
		tt_die("more skus than the audit holds");
	memset(&a->sku[a->nsku], 0, sizeof a->sku[0]);
	a->sku[a->nsku].activity_id = act;
	a->sku[a->nsku].sku_id = sku;
	return &a->sku[a->nsku++];
}

/* WAL frame -> per-order counts, per-sku WAL totals, request ids. */
static int tt_wal_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct tt_audit *a = arg;
	const struct flash_record *r = &((const struct wal_rec *)payload)->wr_rec;
	struct tt_sku *s;

	(void)lsn;
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec)) {
		a->out_of_range++;
		return 0;
	}
	a->f->wal_records++;
	switch (r->type) {
	case FLASH_REC_SKU:
		tt_sku_of(a, r->activity_id, r->sku_id)->wal_total += r->value;
		break;
	case FLASH_REC_RESTOCK:
		a->f->wal_restocks++;
		tt_sku_of(a, r->activity_id, r->sku_id)->wal_total += r->value;
		break;
	case FLASH_REC_ORDER:
	case FLASH_REC_CANCEL:
	case FLASH_REC_CONFIRM:
	case FLASH_REC_EXPIRE:
		s = tt_sku_of(a, r->activity_id, r->sku_id);
		if (r->order_no == 0 || r->order_no > a->maxno) {
			a->out_of_range++;
			break;
		}
		if ((r->flags & FLASH_REC_F_CART) && FLASH_REC_LINE(r->flags) != 0) {
			/* a cart's later line: its sku's units; the order is its line 0 */
			if (r->type == FLASH_REC_ORDER)
				s->wal_sold += r->qty;
			else if (r->type == FLASH_REC_CANCEL || r->type == FLASH_REC_EXPIRE)
				s->wal_sold -= r->qty;
			a->f->wal_cart_lines += r->type == FLASH_REC_ORDER;
			break;
		}
		if (r->type == FLASH_REC_ORDER) {
			struct tt_word *w = &a->w[r->order_no];
			a->f->wal_orders++;
			s->wal_sold += r->qty;
			if (w->norder < 255)
				w->norder++;
			w->activity_id = r->activity_id;
			w->sku_id = r->sku_id;
			w->qty = r->qty;
			w->user_id = r->user_id;
			w->resv = r->value > 0;
			if (r->request_id != 0) {
				if (a->nrids == a->caprids) {
					a->caprids = a->caprids ? 2 * a->caprids : 65536;
					a->rids = realloc(a->rids, a->caprids * sizeof *a->rids);
					if (!a->rids)
						tt_die("out of memory");
				}
				a->rids[a->nrids++] = r->request_id;
			}
		} else if (r->type == FLASH_REC_CONFIRM) {
			a->f->wal_confirms++;          /* units stay where they are: sold */
			if (a->w[r->order_no].nconfirm < 255)
				a->w[r->order_no].nconfirm++;
		} else if (r->type == FLASH_REC_EXPIRE) {
			a->f->wal_expires++;
			s->wal_sold -= r->qty;         /* back in stock, as a cancel's */
			if (a->w[r->order_no].nexpire < 255)
				a->w[r->order_no].nexpire++;
		} else {
			a->f->wal_cancels++;
			s->wal_sold -= r->qty;
			if (a->w[r->order_no].ncancel < 255)
				a->w[r->order_no].ncancel++;
		}
		break;
	default:
		break;
	}
	return 0;
}

static int tt_cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int tt_sql_order(void *arg, const struct rsql_order *o)
{
	struct tt_audit *a = arg;

	if (o->order_no >= 1 && o->order_no <= a->maxno)
		a->sql[o->order_no] = (uint8_t)(o->state + 1);
	else
		a->out_of_range++;
	return 0;
}

/* Count the (activity, user) keys of @p v (sorted here) held more than @p k times. */
static uint64_t tt_over(uint64_t *v, size_t n, unsigned k)
{
	uint64_t over = 0;
	size_t i = 0;

	qsort(v, n, sizeof *v, tt_cmp_u64);
	while (i < n) {
		size_t j = i;
		while (j < n && v[j] == v[i])
			j++;
		if (j - i > k)
			over++;
		i = j;
	}
	return over;
}

/* The segment's order records: active units per sku, users over their
 * limit, and each order's state against the WAL. */
static void tt_audit_segment(struct tt_audit *a, flash_t *h)
{
	struct tt_fig *f = a->f;
	uint64_t *u1 = malloc((a->maxno + 1) * sizeof *u1), *u2 = malloc((a->maxno + 1) * sizeof *u2);
	size_t n1 = 0, n2 = 0;
	struct flash_order_info oi;
	struct flash_sku_info si;

	if (!u1 || !u2)
		tt_die("out of memory");
	for (uint32_t i = 0; flash_sku_at(h, i, &si) == FLASH_OK; i++) {
		struct tt_sku *s = tt_sku_of(a, si.activity_id, si.sku_id);
		s->total = si.total;
		s->available = si.available;
	}
	for (uint64_t no = 1; no <= a->maxno; no++) {
		const struct tt_word *w = &a->w[no];
		int rc = flash_order_get(h, no, &oi);

		if (rc != FLASH_OK)
			tt_die("flash_order_get(%" PRIu64 "): %s", no, flash_rcname(rc));
		if (oi.state == FLASH_ORDER_NONE) {
			if (w->norder || w->ncancel || w->nconfirm || w->nexpire)
				f->state_mismatch++;
			continue;
		}
		f->seg_orders++;
		int held = oi.state == FLASH_ORDER_ACTIVE || oi.state == FLASH_ORDER_RESERVED;
		if (w->norder != 1 || w->ncancel != (oi.state == FLASH_ORDER_CANCELLED) ||
		    w->nexpire != (oi.state == FLASH_ORDER_EXPIRED) || w->qty != oi.qty ||
		    w->sku_id != oi.sku_id || w->user_id != oi.user_id ||
		    /* paid once if a reservation now ACTIVE; only a reservation is
		     * RESERVED or EXPIRED, or paid at all */
		    (oi.state == FLASH_ORDER_ACTIVE && w->nconfirm != w->resv) ||
		    (!w->resv && (w->nconfirm || oi.state == FLASH_ORDER_RESERVED || oi.state == FLASH_ORDER_EXPIRED)) ||
		    (oi.state == FLASH_ORDER_RESERVED && w->nconfirm))
			f->state_mismatch++;
		f->seg_reserved += oi.state == FLASH_ORDER_RESERVED;
		f->seg_expired += oi.state == FLASH_ORDER_EXPIRED;
		if (held)
			tt_sku_of(a, oi.activity_id, oi.sku_id)->active_qty += oi.qty;
		else
			f->seg_cancelled++;
		if (oi.lines > 1) {
			/* a cart: its later lines, each whole and in the cart's state */
			struct flash_order_info l[FLASH_CART_LINES_MAX];
			uint32_t nl = 0;

			f->seg_carts++;
			if (flash_order_lines(h, no, l, FLASH_CART_LINES_MAX, &nl) != FLASH_OK || nl != oi.lines)
				f->state_mismatch++;
			for (uint32_t x = 1; x < nl && x < FLASH_CART_LINES_MAX; x++) {
				if (l[x].state != oi.state)
					f->state_mismatch++;
				if (held)
					tt_sku_of(a, l[x].activity_id, l[x].sku_id)->active_qty += l[x].qty;
			}
		}
		/* limit slots held: activity 1 keeps the quota on cancel, activity 2 returns it */
		if (oi.activity_id == ACT_ONE) {
			u1[n1++] = oi.user_id;
			if (oi.limit_slot != 1)
				f->over_limit++;
		} else if (held) {
			u2[n2++] = oi.user_id | (uint64_t)oi.activity_id << 56;
			if (oi.limit_slot < 1 || oi.limit_slot > 2)
				f->over_limit++;
		}
	}
	f->over_limit += tt_over(u1, n1, 1) + tt_over(u2, n2, 2);
	free(u1);
	free(u2);
	for (unsigned i = 0; i < a->nsku; i++) {
		struct tt_sku *s = &a->sku[i];
		int64_t d = (int64_t)s->total - (int64_t)s->available - (int64_t)s->active_qty;
		int64_t dw = (s->wal_total - s->wal_sold) - (int64_t)s->available;

		if (s->active_qty > s->total)
			f->oversold += s->active_qty - s->total;
		f->leaked_units += (uint64_t)(d < 0 ? -d : d);
		f->leaked_units_wal += (uint64_t)(dw < 0 ? -dw : dw);
		if (s->wal_total != (int64_t)s->total)
			f->leaked_units_wal += (uint64_t)llabs(s->wal_total - (int64_t)s->total);
	}
	if (a->out_of_range)
		f->state_mismatch += a->out_of_range;
	qsort(a->rids, a->nrids, sizeof *a->rids, tt_cmp_u64);
	for (size_t i = 1; i < a->nrids; i++)
		if (a->rids[i] == a->rids[i - 1])
			f->dup_request++;
	for (uint64_t no = 1; no <= a->maxno; no++) {
		if (a->w[no].norder > 1)
			f->dup_wal += a->w[no].norder - 1u;
		if (a->w[no].ncancel > 1)
			f->dup_cancel_wal += a->w[no].ncancel - 1u;
		/* a reservation ends once: one of CANCEL and EXPIRE at most, and
		 * paid at most once, never paid and expired */
		if (a->w[no].ncancel + a->w[no].nexpire > 1 || a->w[no].nconfirm > 1)
			f->ended_twice++;
		if (a->w[no].nconfirm && a->w[no].nexpire)
			f->confirm_and_expire++;
	}
}

/* What the buyers know against the WAL and MySQL. */
static void tt_audit_logs(struct tt_audit *a, const struct tt_cfg *c)
{
	struct tt_fig *f = a->f;
	uint8_t *seen = calloc(a->maxno + 1, 1);

	if (!seen)
		tt_die("out of memory");
	for (unsigned b = 0; b < c->buyers; b++) {
		char path[PATH_MAX + 64];
		struct tt_entry e;
		FILE *fp;

		snprintf(path, sizeof path, "%s/buyer-%u.log", c->dir, b);
		fp = fopen(path, "rb");
		if (!fp)
			continue;
		while (fread(&e, sizeof e, 1, fp) == 1) {
			uint64_t no = e.te_order_no;
			const struct tt_word *w = no >= 1 && no <= a->maxno ? &a->w[no] : NULL;

			switch (e.te_kind) {
			case L_ORDER:
				f->acked_orders++;
				if (!w) {
					f->lost_wal++;
					f->lost_mysql++;
					break;
				}
				if (seen[no] & 1)
					f->dup_acked++;
				seen[no] |= 1;
				if (w->norder == 0 || w->qty != e.te_qty || w->sku_id != e.te_sku ||
				    w->activity_id != e.te_activity || w->user_id != e.te_user ||
				    w->resv != (e.te_aux != 0))
					f->lost_wal++;
				if (a->sql[no] == 0)
					f->lost_mysql++;
				break;
			case L_CONFIRM:
				/* a plain order is ACTIVE already: a confirm writes nothing */
				if (!w || !w->resv)
					break;
				if (w->nconfirm != 1)
					f->lost_confirm_wal++;
				if (a->sql[no] != FLASH_ORDER_ACTIVE + 1 && a->sql[no] != FLASH_ORDER_CANCELLED + 1)
					f->lost_confirm_mysql++;   /* paid: ACTIVE (or cancelled since) */
				break;
			case L_CANCEL:
				f->acked_cancels++;
				if (!w || w->ncancel == 0)
					f->lost_cancel_wal++;
				if (!w || a->sql[no] != FLASH_ORDER_CANCELLED + 1)
					f->lost_cancel_mysql++;
				break;
			case L_VIOL:
				f->violations++;
				tt_say("  buyer %u saw a broken promise: %s (order %" PRIu64 ", rc %s)", b,
				       tt_viol_name[(e.te_aux & 0xff) < V_NKINDS ? (e.te_aux & 0xff) : 0], no,
				       flash_rcname((int)(e.te_aux >> 8)));
				break;
			default:
				break;
			}
		}
		fclose(fp);
	}
	free(seen);
}

/* reconcile_compare over the segment, the WAL and MySQL (every order too),
 * and reconcile_run as `flashstock reconcile` runs it. */
static void tt_audit_reconcile(struct tt_fig *f, flash_t *h, mdb_t *m,
                               const struct tt_cfg *c, const char *url)
{
	struct reconcile_report rep;
	struct reconcile_run_opts ro;
	struct mdb_opts mo;
	fold_t *fold = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if ((rc = fold_new(&fold)) != FLASH_OK ||
	    (rc = fold_wal(fold, c->wal)) != FLASH_OK)
		tt_die("reconcile: fold the WAL: %s", flash_strerror(rc));
	memset(&rep, 0, sizeof rep);
	rc = reconcile_compare(h, m, fold, RECONCILE_ORDERS, &rep);
	fold_free(fold);
	if (rc != FLASH_OK)
		tt_die("reconcile: %s", flash_strerror(rc));
	f->reconcile_diffs = rep.found;
	if (rep.found) {
		struct reconcile_report head = rep;
		if (head.n > 20)
			head.n = 20;
		tt_say("  reconciler differences (first %zu of %" PRIu64 "):", head.n, rep.found);
		reconcile_print(&head, stdout, 0);
	}
	reconcile_report_free(&rep);

	memset(&mo, 0, sizeof mo);
	mo.url = url;
	mo.log_level = PLOG_WARN;
	memset(&ro, 0, sizeof ro);
	ro.segment = c->seg;
	ro.wal_dir = c->wal;
	ro.mysql = &mo;
	ro.flags = RECONCILE_ORDERS;
	mem = open_memstream(&text, &len);
	if (!mem)
		tt_die("open_memstream");
	f->reconcile_status = reconcile_run(&ro, mem, mem);
	fclose(mem);
	/* its summary lines only: the differences were listed above */
	for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
		if (strncmp(line, "reconcile:", 10) == 0)
			tt_say("  %s", line);
	free(text);
}

/* ======================================================================
 * 6. Phases and main
 * ====================================================================== */

/* A new, empty segment sized for the phase. */
static void tt_segment_make(const struct tt_cfg *c, double phase_max_s)
{
	struct flash_seg_opts so;
	uint64_t big;
	int rc;

	flash_seg_opts_default(&so);
	/* numbers: every killed life wastes the rest of its chunk of 64 */
	big = (uint64_t)(phase_max_s * 20000.0) + (1u << 19);
	if (big > (1u << 24))
		big = 1u << 24;
	so.max_orders = (uint32_t)big;
	so.max_requests = (uint32_t)big;
	so.max_users = 1u << 21;
	so.max_tokens = 1u << 16;
	so.max_activities = 8;
	so.max_skus = 16;
	so.max_shards = 64;
	so.max_locks = 64;
	so.max_procs = 128;
	so.durability = c->sync ? FLASH_DURABILITY_SYNC : FLASH_DURABILITY_ASYNC;
	flash_seg_destroy(c->seg);
	if ((rc = flash_seg_create(c->seg, &so)) != FLASH_OK)
		tt_die("create segment %s: %s", c->seg, flash_rcname(rc));
}

/* The two activities and four skus.  In sync durability each add returns
 * once the daemon has made its record durable: the daemon runs already. */
static void tt_catalog_add(const struct tt_cfg *c)
{
	struct flash_activity a;
	struct timespec ts;
	flash_t *h;
	int rc;

	if ((rc = flash_open(c->seg, 0, &h)) != FLASH_OK)
		tt_die("open segment %s: %s", c->seg, flash_rcname(rc));
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.start_ns = ((int64_t)ts.tv_sec - 3600) * 1000000000LL;
	a.end_ns = ((int64_t)ts.tv_sec + 30 * 86400) * 1000000000LL;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.id = ACT_ONE;
	a.limit_per_user = 1;
	a.max_qty = 2;
	a.flags = 0;
	if ((rc = flash_activity_add(h, &a)) != FLASH_OK)
		tt_die("activity 1: %s", flash_rcname(rc));
	a.id = ACT_TWO;
	a.limit_per_user = 2;
	a.max_qty = 3;
	a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA | FLASH_ACT_TOKEN_REQUIRED;
	if ((rc = flash_activity_add(h, &a)) != FLASH_OK)
		tt_die("activity 2: %s", flash_rcname(rc));
	a.id = ACT_SPIN;
	a.limit_per_user = 2;
	a.max_qty = 1;
	a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA;
	if ((rc = flash_activity_add(h, &a)) != FLASH_OK)
		tt_die("activity 3: %s", flash_rcname(rc));
	if ((rc = flash_sku_add(h, ACT_SPIN, SKU_ZERO, 0, 2)) != FLASH_OK ||
	    (rc = flash_sku_add(h, ACT_ONE, SKU_HOT, 3000, 8)) != FLASH_OK ||
	    (rc = flash_sku_add(h, ACT_ONE, SKU_A1, 400, 1)) != FLASH_OK ||
	    (rc = flash_sku_add(h, ACT_TWO, SKU_HOT, 4000, 8)) != FLASH_OK ||
	    (rc = flash_sku_add(h, ACT_TWO, SKU_A2, 600, 2)) != FLASH_OK)
		tt_die("skus: %s", flash_rcname(rc));
	flash_close(h);
}

static void tt_progress(const char *mode, double t, const struct tt_fig *f)
{
	tt_say("[%s %6.1fs] kills buyers %" PRIu64 " daemon %" PRIu64 " | ops %" PRIu64
	       " acked orders %" PRIu64 " cancels %" PRIu64 " refused %" PRIu64
	       " | retried after kill %" PRIu64 " (first outcome %" PRIu64 ", placed anew %" PRIu64
	       ") | broken promises %u | unexpected rc %" PRIu64,
	       mode, t, f->kills_buyer, f->kills_daemon, tt_sh->ops, tt_sh->acked_orders,
	       tt_sh->acked_cancels, tt_sh->refused, tt_sh->cross_retries, tt_sh->cross_dup,
	       tt_sh->cross_new,
	       tt_sh->viol[1] + tt_sh->viol[2] + tt_sh->viol[3] + tt_sh->viol[4] + tt_sh->viol[5] +
	       tt_sh->viol[6], tt_sh->other_rc);
}

#define FIG(name, v) tt_say("  %-44s %" PRIu64, name, (uint64_t)(v))

/* Print a phase's figures; @return the number of failing figures. */
static int tt_report(const char *mode, const struct tt_fig *f)
{
	int bad = 0;

	tt_say("== %s: figures ==", mode);
	FIG("kills of buyers (SIGKILL, random instants)", f->kills_buyer);
	FIG("kills of the daemon (SIGKILL)", f->kills_daemon);
	FIG("final SIGKILL of the running buyers", f->kills_final);
	FIG("orders acknowledged (known to the buyers)", f->acked_orders);
	FIG("cancels acknowledged (known)", f->acked_cancels);
	FIG("reservations acknowledged", tt_sh->reservations);
	FIG("  paid (confirms acknowledged)", tt_sh->confirms);
	FIG("  found expired by a confirm or cancel", tt_sh->too_late);
	FIG("  RESERVED in the segment at the end", f->seg_reserved);
	FIG("  EXPIRED in the segment at the end", f->seg_expired);
	FIG("carts of two lines acknowledged", tt_sh->carts);
	FIG("  carts in the segment at the end", f->seg_carts);
	FIG("  their later lines' ORDER records (WAL)", f->wal_cart_lines);
	FIG("retries of a killed life's request id", tt_sh->cross_retries);
	FIG("  answered with the first outcome", tt_sh->cross_dup);
	FIG("  placed anew (first rolled back)", tt_sh->cross_new);
	FIG("same-life retries of a request id", tt_sh->same_retries);
	FIG("FLASH_EBUSY or FLASH_EFATE_UNKNOWN (daemon down)", tt_sh->busy);
	FIG("FLASH_EFULL (a table of the segment full)", tt_sh->efull);
	FIG("recoveries run (dead handles recovered)", f->recoveries);
	FIG("  operations rolled back", f->rolled_back);
	FIG("  operations rolled forward", f->rolled_forward);
	FIG("  recovered by the audit's own open", f->recovered_at_end);
	FIG("orders in the segment (active+cancelled)", f->seg_orders);
	FIG("  of which cancelled", f->seg_cancelled);
	FIG("order numbers taken (flash_orders_max)", f->orders_max);
	FIG("WAL records", f->wal_records);
	FIG("  ORDER", f->wal_orders);
	FIG("  CANCEL", f->wal_cancels);
	FIG("  CONFIRM", f->wal_confirms);
	FIG("  EXPIRE", f->wal_expires);
	FIG("  RESTOCK", f->wal_restocks);
	FIG("WAL last LSN", f->wal_last_lsn);
	FIG("MySQL applied LSN", f->mysql_applied_lsn);
	FIG("MySQL orders rows", f->mysql_orders);
	FIG("  records applied by the final catch-up", f->mysql_late);
	tt_say("  -- invariants (each must be 0) --");
#define CHK(name, v) do { FIG(name, v); if ((v) != 0) { bad++; tt_say("  ^^^ FAIL: %s", name); } } while (0)
	CHK("oversold units (order records: active > total)", f->oversold);
	CHK("oversold units (MySQL)", f->oversold_mysql);
	CHK("acked orders missing from the WAL", f->lost_wal);
	CHK("acked orders missing from MySQL", f->lost_mysql);
	CHK("acked cancels missing from the WAL", f->lost_cancel_wal);
	CHK("acked cancels not CANCELLED in MySQL", f->lost_cancel_mysql);
	CHK("duplicate ORDER records in the WAL", f->dup_wal);
	CHK("duplicate CANCEL records in the WAL", f->dup_cancel_wal);
	CHK("request ids with two ORDER records (WAL)", f->dup_request);
	CHK("order numbers acknowledged twice", f->dup_acked);
	CHK("leaked units (total-available-active qty)", f->leaked_units);
	CHK("leaked units (WAL-derived)", f->leaked_units_wal);
	CHK("users over limit (segment)", f->over_limit);
	CHK("users over limit (MySQL)", f->over_limit_mysql);
	CHK("order states differing segment vs WAL", f->state_mismatch);
	CHK("orders ended twice (CANCEL/EXPIRE) or paid twice", f->ended_twice);
	CHK("reservations both paid and expired", f->confirm_and_expire);
	CHK("acked payments missing from the WAL", f->lost_confirm_wal);
	CHK("acked payments not ACTIVE in MySQL", f->lost_confirm_mysql);
	CHK("MySQL apply conflicts", f->mysql_conflicts);
	CHK("MySQL applied LSN short of the WAL's", f->lsn_behind);
	CHK("reconciler differences (reconcile_compare)", f->reconcile_diffs);
	CHK("reconcile run exit status", (uint64_t)f->reconcile_status);
	CHK("broken promises seen by buyers", f->violations);
	CHK("unexpected result codes", f->other_rc);
	CHK("buyer exits not caused by our kill", f->buyer_fail);
	CHK("daemon exits not caused by our kill", f->daemon_fail);
	CHK("daemon exit status at SIGTERM", (uint64_t)f->daemon_status);
#undef CHK
	return bad;
}

/* One phase: make the segment, run daemon + buyers + killer, stop, audit. */
static int tt_phase(const struct tt_opts *o, int sync, unsigned kill_target, double min_s,
                    double max_s, struct tt_fig *f)
{
	const char *mode = sync ? "sync" : "async";
	struct tt_cfg c;
	char url[PATH_MAX + 128], dlog[PATH_MAX + 64];
	pid_t buyer[TT_MAX_BUYERS], daemon;
	uint64_t gen[TT_MAX_BUYERS], rng = o->seed ^ (sync ? 0x5bd1e995u : 0x1b873593u);
	int64_t t0, next_dkill, next_progress;
	struct flash_stats fs;
	flash_t *h;
	mdb_t *m = NULL;
	struct mdb_opts mo;
	struct apply_result tot;
	struct rsql_totals st;
	struct wal_replay_report rep;
	struct tt_audit a;
	uint32_t nrec = 0;
	int rc, bad;

	memset(f, 0, sizeof *f);
	memset(tt_sh, 0, sizeof *tt_sh);
	memset(&c, 0, sizeof c);
	snprintf(c.seg, sizeof c.seg, "/flash-torture-%d-%s", (int)getpid(), mode);
	snprintf(c.dir, sizeof c.dir, "%s/%s", tt_root, mode);
	snprintf(c.wal, sizeof c.wal, "%s/wal", c.dir);
	snprintf(dlog, sizeof dlog, "%s/daemon.log", c.dir);
	c.sync = sync;
	c.buyers = o->buyers;
	c.seed = o->seed ^ (uint64_t)sync;
	if (mkdir(c.dir, 0700) != 0)
		tt_die("mkdir %s: %s", c.dir, strerror(errno));
	tt_mysql_url(url, sizeof url, sync ? "torture_sync" : "torture_async");
	tt_say("== phase %s: segment %s, %u buyers, >= %u kills, %.0f..%.0f s ==", mode, c.seg,
	       o->buyers, kill_target, min_s, max_s);
	tt_segment_make(&c, max_s);

	daemon = tt_daemon_start(o, &c, url);
	tt_catalog_add(&c);
	/* The buyers are forked from here.  With the segment mapped here, each
	 * life's flash_open uses the mapping it inherits (engine/segment.c,
	 * "Handle mappings") and faults in only the pages it touches, instead
	 * of mapping and pre-faulting the whole segment (750 MB at the CI size)
	 * and tearing it down at its kill: that was a third of this program's
	 * CPU (126 s of CPU for 1,000 kills in the plain build).  The slot
	 * claim, the kill and the recovery are the same.  The daemon is exec'd
	 * and maps its own. */
	flash_t *keep = NULL;
	if ((rc = flash_open(c.seg, 0, &keep)) != FLASH_OK)
		tt_die("open the segment for the buyers to inherit: %s", flash_rcname(rc));
	for (unsigned i = 0; i < o->buyers; i++) {
		gen[i] = 1;
		buyer[i] = tt_buyer_start(&c, i, gen[i]);
	}
	t0 = tt_now_ns();
	next_dkill = t0 + 1000LL * tt_log_us(&rng, 300000, 3000000);
	next_progress = t0 + 5000000000LL;
	for (;;) {
		int64_t now = tt_now_ns();
		double t = (double)(now - t0) / 1e9;
		int status;
		pid_t p;

		/* anything that exited on its own is a finding */
		while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
			if (p == daemon) {
				f->daemon_fail++;
				tt_say("the daemon exited by itself (status %#x); its log:", status);
				tt_print_tail(dlog, 15);
				daemon = tt_daemon_start(o, &c, url);
				continue;
			}
			for (unsigned i = 0; i < o->buyers; i++)
				if (buyer[i] == p) {
					f->buyer_fail++;
					tt_say("buyer %u exited by itself (status %#x)", i, status);
					buyer[i] = tt_buyer_start(&c, i, ++gen[i]);
				}
		}
		if (tt_interrupted || (t >= min_s && f->kills_buyer >= kill_target) || t >= max_s)
			break;
		if (now >= next_progress) {
			tt_progress(mode, t, f);
			next_progress += 5000000000LL;
		}
		tt_sleep_us(tt_log_us(&rng, 300, 40000));

		unsigned i = (unsigned)tt_below(&rng, o->buyers);
		kill(buyer[i], SIGKILL);
		status = tt_reap(buyer[i]);
		if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
			f->buyer_fail++;
			tt_say("buyer %u was gone before the kill (status %#x)", i, status);
		}
		f->kills_buyer++;
		buyer[i] = tt_buyer_start(&c, i, ++gen[i]);

		if (tt_now_ns() >= next_dkill) {
			kill(daemon, SIGKILL);
			status = tt_reap(daemon);
			if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
				f->daemon_fail++;
				tt_say("the daemon was gone before the kill (status %#x); its log:", status);
				tt_print_tail(dlog, 15);
			}
			f->kills_daemon++;
			tt_sleep_us((long)tt_below(&rng, 50000));
			daemon = tt_daemon_start(o, &c, url);
			next_dkill = tt_now_ns() + 1000LL * tt_log_us(&rng, 300000, 3000000);
		}
	}
	tt_progress(mode, (double)(tt_now_ns() - t0) / 1e9, f);

	/* stop: buyers die where they stand; recover; the daemon drains and exits */
	for (unsigned i = 0; i < o->buyers; i++) {
		kill(buyer[i], SIGKILL);
		tt_reap(buyer[i]);
		f->kills_final++;
	}
	if ((rc = flash_open(c.seg, 0, &h)) != FLASH_OK)
		tt_die("open the segment for the audit: %s", flash_rcname(rc));
	if ((rc = flash_recover(h, &nrec)) != FLASH_OK)
		tt_die("flash_recover: %s", flash_rcname(rc));
	f->recovered_at_end = nrec;
	/* The daemon may have been restarted by the kill loop an instant ago:
	 * a SIGTERM before it has set its handler (under ASan, while it loads,
	 * or connects to MySQL to check its URL) ends it by the default action,
	 * the rings undrained, and the audit then finds the segment ahead of
	 * the WAL (seen once: two orders, in a sync phase).  Wait until it has
	 * drained and made durable all there is: it is in its loop then, and
	 * the stop below is the drain, sync and exit that it means. */
	{
		struct flash_quiet q;
		int64_t end = tt_now_ns() + 120 * 1000000000LL;
		for (;;) {
			if ((rc = flash_quiet_get(h, &q)) != FLASH_OK)
				tt_die("flash_quiet_get: %s", flash_rcname(rc));
			if (q.pending == 0 && q.in_flight == 0)
				break;
			if (tt_now_ns() > end)
				tt_die("the daemon did not drain the rings within 120 s (pending %" PRIu64
				       ", in flight %u)", q.pending, q.in_flight);
			tt_sleep_us(10000);
		}
	}
	tt_say("stopping the daemon (SIGTERM: drain, sync, exit)");
	kill(daemon, SIGTERM);
	{
		int status = tt_reap(daemon);
		f->daemon_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (f->daemon_status != 0) {
			tt_say("the daemon's exit at SIGTERM: status %#x; its log:", status);
			tt_print_tail(dlog, 20);
		}
	}

	/* MySQL catches up with the whole WAL */
	memset(&mo, 0, sizeof mo);
	mo.url = url;
	mo.log_level = PLOG_WARN;
	if ((rc = mdb_open(&mo, &m)) != FLASH_OK)
		tt_die("connect to MySQL: %s", flash_strerror(rc));
	memset(&tot, 0, sizeof tot);
	rc = mdb_catch_up(m, c.wal, 0, 60000, &tot);
	if (rc != FLASH_OK)
		tt_die("catch MySQL up: %s", flash_strerror(rc));
	f->mysql_late = tot.applied;

	/* the WAL */
	memset(&a, 0, sizeof a);
	a.f = f;
	a.maxno = f->orders_max = flash_orders_max(h);
	a.w = calloc(a.maxno + 1, sizeof *a.w);
	a.sql = calloc(a.maxno + 1, 1);
	if (!a.w || !a.sql)
		tt_die("out of memory");
	rc = wal_replay(c.wal, 0, tt_wal_frame, &a, 0, &rep);
	if (rc != FLASH_OK)
		tt_die("read the WAL: %s at %s offset %" PRIu64, flash_strerror(rc), rep.file, rep.offset);
	f->wal_last_lsn = rep.last_lsn;

	/* MySQL */
	if ((rc = rsql_totals_get(m, &st)) != FLASH_OK)
		tt_die("MySQL totals: %s", flash_strerror(rc));
	f->mysql_applied_lsn = st.applied_lsn;
	f->mysql_orders = st.orders;
	f->mysql_conflicts = st.conflicts;
	f->lsn_behind = st.applied_lsn < rep.last_lsn ? rep.last_lsn - st.applied_lsn : 0;
	if ((rc = rsql_orders_scan(m, 1, a.maxno, tt_sql_order, &a)) != FLASH_OK)
		tt_die("MySQL orders: %s", flash_strerror(rc));
	{
		struct rsql_sku *ss = NULL;
		struct rsql_user_excess *ux = NULL;
		size_t n = 0;

		if ((rc = rsql_skus(m, &ss, &n)) != FLASH_OK)
			tt_die("MySQL skus: %s", flash_strerror(rc));
		for (size_t i = 0; i < n; i++)
			if (ss[i].active_qty > ss[i].total)
				f->oversold_mysql += ss[i].active_qty - ss[i].total;
		free(ss);
		if ((rc = rsql_users_over_limit(m, &ux, &n)) != FLASH_OK)
			tt_die("MySQL users over limit: %s", flash_strerror(rc));
		f->over_limit_mysql = n;
		free(ux);
	}

	/* the segment, the logs, the reconciler */
	tt_audit_segment(&a, h);
	tt_audit_logs(&a, &c);
	tt_audit_reconcile(f, h, m, &c, url);
	if ((rc = flash_stats_get(h, &fs)) != FLASH_OK)
		tt_die("flash_stats_get: %s", flash_rcname(rc));
	f->recoveries = fs.recoveries;
	f->rolled_back = fs.rolled_back;
	f->rolled_forward = fs.rolled_forward;
	f->other_rc = tt_sh->other_rc;
	for (int k = 1; k < 64; k++)
		if (tt_sh->other_by_rc[k])
			tt_say("  unexpected result code %s: %" PRIu64 " times (last at torture.c:%d)",
			       flash_rcname(-k), tt_sh->other_by_rc[k], tt_sh->other_line[k]);

	bad = tt_report(mode, f);
	free(a.w);
	free(a.sql);
	free(a.rids);
	mdb_close(m);
	flash_close(h);
	flash_close(keep);
	flash_seg_destroy(c.seg);
	return bad;
}

static int tt_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Default paths: next to this program in a build tree
 * (BUILD/tests/flashstock-torture -> BUILD/tools/flashstock). */
static const char *tt_near_exe(const char *rel, char *buf, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(buf, cap, "%s/%s", dirname(exe), rel);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

static void tt_usage(void)
{
	fputs("usage: flashstock-torture [--kills N] [--long SECONDS] [--phase-s S] [--buyers N]\n"
	      "         [--seed N] [--mode async|sync|both] [--flashstock PATH] [--fixture PATH] [--keep]\n"
	      "  --kills N       buyer kills to reach over all phases (default 2000)\n"
	      "  --long SECONDS  run this long in all (split over the phases)\n"
	      "  --phase-s S     least seconds per phase (default 20)\n", stderr);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "kills", required_argument, NULL, 'k' },
		{ "long", required_argument, NULL, 'l' },
		{ "phase-s", required_argument, NULL, 'p' },
		{ "buyers", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "flashstock", required_argument, NULL, 'f' },
		{ "fixture", required_argument, NULL, 'x' },
		{ "keep", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static char fsbuf[PATH_MAX + 64], fxbuf[PATH_MAX + 64];
	struct tt_opts o;
	struct tt_fig fa, fsy;
	const char *tmp = getenv("TMPDIR");
	struct sigaction sa;
	unsigned phases, target;
	double min_s, max_s;
	int c, bad = 0, ran_a = 0, ran_s = 0;
	int64_t t0 = tt_now_ns();

	memset(&o, 0, sizeof o);
	o.kills = 2000;
	o.phase_s = 20;
	o.buyers = 6;
	o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	o.modes = 3;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'k': o.kills = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l': o.long_s = strtod(optarg, NULL); break;
		case 'p': o.phase_s = strtod(optarg, NULL); break;
		case 'b': o.buyers = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'm':
			o.modes = strcmp(optarg, "async") == 0 ? 1 : strcmp(optarg, "sync") == 0 ? 2
			        : strcmp(optarg, "both") == 0 ? 3 : 0;
			break;
		case 'f': o.flashstock = optarg; break;
		case 'x': o.fixture = optarg; break;
		case 'K': o.keep = 1; break;
		default: tt_usage(); return 2;
		}
	}
	if (optind < argc || o.modes == 0 || o.buyers < 1 || o.buyers > TT_MAX_BUYERS || o.phase_s <= 0) {
		tt_usage();
		return 2;
	}
	if (!o.flashstock && !(o.flashstock = tt_near_exe("../tools/flashstock", fsbuf, sizeof fsbuf)))
		tt_die("cannot find the flashstock command next to this program: give --flashstock PATH");
	if (!o.fixture && !(o.fixture = tt_near_exe("../../tests/fixtures/mariadb.sh", fxbuf, sizeof fxbuf)))
		tt_die("cannot find tests/fixtures/mariadb.sh: give --fixture PATH");
	if (o.seed == 0)
		o.seed = 1;
	phases = (o.modes & 1) + ((o.modes >> 1) & 1);
	target = (o.kills + phases - 1) / phases;
	min_s = o.long_s > 0 ? o.long_s / phases : o.phase_s;
	/* a phase ends at its kill target, or at max_s; a loaded machine
	 * kills more slowly: the CI size gets 180 s a phase for the same target */
	max_s = o.long_s > 0 ? min_s + 120 : min_s * 9;
	tt_say("seed %" PRIu64 "; %s; %u buyers; kill target %u (%u per phase); %s",
	       o.seed, TT_SANITIZED ? "sanitizer build" : "plain build", o.buyers, o.kills, target,
	       o.long_s > 0 ? "long run" : "CI size");

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tt_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	tt_sh = mmap(NULL, sizeof *tt_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tt_sh == MAP_FAILED)
		tt_die("mmap: %s", strerror(errno));
	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(tt_root, sizeof tt_root, "%s/flashstock-torture.XXXXXX", tmp);
	if (!mkdtemp(tt_root))
		tt_die("mkdtemp %s: %s", tt_root, strerror(errno));
	tt_mariadb_start(&o);

	if (o.modes & 1) {
		bad += tt_phase(&o, 0, target, min_s, max_s, &fa);
		ran_a = 1;
	}
	if ((o.modes & 2) && !tt_interrupted) {
		bad += tt_phase(&o, 1, target, min_s, max_s, &fsy);
		ran_s = 1;
	}
	tt_mariadb_stop(&o);

	{
		uint64_t kills = (ran_a ? fa.kills_buyer + fa.kills_daemon : 0) +
		                 (ran_s ? fsy.kills_buyer + fsy.kills_daemon : 0);
		uint64_t acked = (ran_a ? fa.acked_orders : 0) + (ran_s ? fsy.acked_orders : 0);

		tt_say("== total: %" PRIu64 " kills (target %u), %" PRIu64 " acknowledged orders, "
		       "%.1f s, %d failing figure(s) ==", kills, o.kills, acked,
		       (double)(tt_now_ns() - t0) / 1e9, bad);
		if (kills < o.kills) {
			tt_say("FAIL: fewer kills than the target");
			bad++;
		}
		if (tt_interrupted) {
			tt_say("FAIL: interrupted");
			bad++;
		}
	}
	if (bad == 0 && !o.keep)
		nftw(tt_root, tt_rm, 16, FTW_DEPTH | FTW_PHYS);
	else
		tt_say("kept %s (logs, WAL, daemon.log)", tt_root);
	tt_say("%s", bad ? "FAILED" : "PASSED");
	return bad ? 1 : 0;
}
