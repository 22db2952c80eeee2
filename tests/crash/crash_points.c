/*
 * crash_points.c -- every crash point of every operation, then recovery, then
 * the invariants of DESIGN.md section 2, counted from the order table and the
 * records -- not from the stock counters.
 *
 * Linked with flashstock_crash (the engine built with FLASH_CRASHPOINTS=1).
 * For each scenario and each n = 1, 2, ...:
 *
 *   parent: a fresh segment, a handle, the scenario's setup (catalog, earlier
 *           orders, tokens, locks);
 *   child:  opens its own handle, arms crash point n, runs the operation; it
 *           ends with _exit(77) at the n-th point, or 0 when the operation
 *           completed before reaching it;
 *   parent: flash_recover(), then check_all(): a second recovery finds
 *           nothing; no slot, journal, order, key, token or lock is left in
 *           flight; every counter of table fill matches the table; every
 *           order has exactly the records its state says, and every record an
 *           order in that state; per sku total (from SKU + RESTOCK records) ==
 *           available + sum of active quantities; no user above K, no limit
 *           slot held twice, each active order's limit entry names it.
 *           Then the scenario's verify(): the exact outcome the crash point
 *           allows (token usable again iff the order was rolled back, a
 *           request-id retry returns DUPLICATE with the order number iff the
 *           order exists, ...) and a retry of the operation, which must
 *           complete; then check_all() again.
 *
 * The enumeration of one scenario ends at the first n the child survives.
 * Recovery itself is enumerated too: a victim killed at each of its points,
 * a recoverer killed at each of its own, then a second recovery.  WAL replay
 * (flash_replay) is enumerated like any operation; a replayed record emits
 * nothing into a ring, so it joins the ledger once its effect shows.
 *
 * Scenarios: orders (token + request id with K = 2 and a borrow across
 * shards; the home shard empty; SOLD_OUT and LIMIT after the token and the
 * request id were taken), cancels (quota returned or kept), reservations
 * (placed, confirmed, expired, confirmed too late, cancelled unpaid), restock + and -,
 * token issue and redeem, lock acquire (first use of a name, and again),
 * renew, release, activity and sku add, attach, replay of an order and of a
 * cancel, an archive of an ended activity (active and cancelled orders,
 * live tokens, limit entries, two skus over four shards; another activity
 * selling on) and the replay of its record -- each must leave the activity
 * wholly there (marked at most, finished by the retry) or wholly gone, the
 * other activity untouched, and its ids reusable; an activity add into the
 * entry an archive freed, in a windowed segment (a user bank is pinned only
 * by an activity that exists, and the user table moves on without one); and
 * the recovery of a victim of most of them.
 *
 * Two modes.  "crash_points" (ctest crash_points): the points are the
 * engine's FS_CRASH(op, step) macros, named in the report.  "crash_points
 * stores" (ctest crash_stores): every store into the segment is a point,
 * by construction (tests/crash/storetrap.c: the child maps the segment read-only,
 * each write fault is counted, the N-th ends the process before it
 * happens) -- plain and atomic stores, CAS, FAA, cmpxchg16b, memcpy and
 * memset, in the engine, in ck and in libc, with no macro written.  Each
 * operation is first run once counted, its stores recorded (instruction,
 * offset); the child killed at store n then runs to it with a breakpoint on
 * that instruction (its k-th store into the segment) instead of trapping
 * the n-1 stores before it, and must die in the region recorded; the last
 * run, which completes, is trapped and counted again (the same count).  The
 * recoverer is killed at each of its stores over a sample of about twelve
 * victim states per victim (FLASH_CRASH_STATES; two in the ASan build, where
 * each is four times slower; every victim state is recovered once by the
 * single enumeration already), and for three victims two recoverers are
 * killed in a row, at three of their states (the first, the last, the
 * middle one; FLASH_CRASH_TWICE=1: the middle one only, as in the ASan
 * build).  In points mode the recoverer is killed at every victim state,
 * unless FLASH_CRASH_STATES asks for a sample (four in the ASan build; the
 * plain build runs them all).  More starting states in both modes: the
 * chunk boundary of order numbers, a user table one key from full, another slot stopped
 * in mid-order (then killed) or mid-acquire (then resumed: its fence must
 * exceed every earlier grant), an expired token, a ring one record from
 * full, a lock held by a dead owner, a request-id table one key from full,
 * a token table full of expired tokens (the issue sweeps them first); store
 * mode adds the consumer (flash_ring_drain + flash_durable_advance, and
 * flash_ring_drain + flash_ring_release, killed at each store, then a second
 * drain delivers every record once), its claim
 * (flash_consumer_claim of a free claim and of a dead holder's,
 * flash_consumer_release, flash_close of the holder: the claim word is old,
 * new or free, a dead holder's claim reads free and is taken, a live one
 * refuses a second claimant) and the identity (flash_ident_adopt,
 * flash_ident_lsn_set: each word old or new, never torn).  flash_sync_wait_set
 * stores only into the handle; flash_durable_wait only the count of sleepers
 * in its slot (then no slot recovered counts any).  The FS_CRASH macros stay:
 * they name steps in this report, crash_persist.c shares their counter for
 * persist/'s points and stock_floor.c wraps fs_crashpoint().
 *
 * The program prints, per scenario, how many crash points (stores) it
 * visited, and where (FS_CRASH names, or the regions stored into), then a
 * total with the failed checks, and fails if a scenario visited none or any
 * check failed.  A failure names the store: its number, region and offset,
 * and the function and line that made it (addr2line).
 * Usage: crash_points [stores|points [FILTER]], FILTER a part of scenario
 * names.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "storetrap.h"

/*
 * Under AddressSanitizer: a quarantine of 1 MiB instead of 256.  The parent
 * forks a child for every kill point, thousands of them, and a fork copies
 * the page tables of all the parent's private memory -- which the
 * quarantine of freed heap grows to tens of MiB over the run.  Measured
 * alone in the ASan build (machine CPU from /proc/stat), crash_stores took
 * 119 s wall and 104 s CPU (40 user, 64 system) by default, 94-103 s and
 * 80-89 s with this; crash_points 58 s and 49 s, then 49 s and 41 s.  A use after free of a block freed more than
 * 1 MiB of frees ago goes unseen here (every other test keeps the default);
 * what this program checks lives in the segment, not on the heap.  An
 * ASAN_OPTIONS quarantine_size_mb in the environment still wins.
 */
#if defined(__SANITIZE_ADDRESS__)
#define CP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CP_ASAN 1
#endif
#endif
#ifdef CP_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=1";
}
#endif

#define MAX_N       (g_stores ? 2000 : 200)  /* more points than any operation has: a runaway guard */
#define ARM_BEFORE_OPEN 0x1u  /* the operation is flash_open itself */
#define SELF_ARM        0x2u  /* run() arms after its own preparation */
#define NO_PRECHECK     0x4u  /* setup leaves records undrained, a dead slot or a
                                 helper in mid-operation on purpose */
#define SMALL_USERS     0x8u  /* a user table of 4 keys */
#define STORES_ONLY     0x10u /* no FS_CRASH on this path: store mode only */
#define MAY_LEAVE_NONE  0x20u /* completed, the operation leaves no slot to recover */
#define SMALL_REQS      0x40u /* a request-id table of 4 keys */
#define SMALL_TOKENS    0x80u /* a token table of 4 tokens */
#define WINDOWED        0x100u /* request and user tables in generation banks (gen.c) */

/* ------------------------------------------------------------------ child results */

/* What a child leaves for its parent (a MAP_SHARED page). */
struct child_out {
	int rc;                       /* the operation's result */
	int hits;                     /* points passed by a child that completed */
	int exit_step;                /* the point _exit was called from */
	char exit_op[32];
	uint64_t v[2];                /* token issued, fence granted, units returned */
	volatile int die;             /* a stopped helper: die when resumed */
	struct flash_order_res res;
	struct st_store st;           /* store mode: the store the child died before */
	int rcs[3];                   /* a batch's outcomes (flash_order_many) */
	struct flash_order_res mres[3];
};

static struct child_out *g_out;
static struct child_out *g_help;      /* the helper's (a MAP_SHARED page) */

/* Records a draining child delivered (its "WAL"), before it advanced. */
struct drained {
	int n;
	struct { uint32_t slot; int again; uint64_t seq; struct flash_record r; } e[128];
};
static struct drained *g_drained;
static flash_t *g_child_handle;       /* keeps the child's handle reachable */
static int g_stores;                  /* every store is a point (storetrap.c), not FS_CRASH */
static int g_states = 12;             /* store mode: victim states sampled per victim
                                         (FLASH_CRASH_STATES: 2 in the ASan build) */
static int g_states_set;              /* FLASH_CRASH_STATES given: points mode samples too
                                         (4 in the ASan build; else every state) */
static int g_twice = 3;               /* victim states with two recoverers killed in a row:
                                         first, last and middle; 1: the middle one only
                                         (FLASH_CRASH_TWICE: 1 in the ASan build) */

/*
 * Store mode: the stores of one run of a child, recorded (st_record), by
 * which the children killed at each of them fast-forward (st_arm_at): a
 * breakpoint on the instruction of store n instead of a trap at each of
 * the n-1 before it, which made an operation of N stores cost N*N/2 traps.
 * Every recorded run is a count-only run that also completes and recovers.
 */
#define TRACE_MAX 2000
struct trace {
	int n;
	struct st_rec e[TRACE_MAX];
};
static struct trace *g_rec;           /* MAP_SHARED: the recording child writes it */
static const struct trace *g_child_ff; /* in a child: the trace its arm() fast-forwards by */

/* Arm point @p n of the mode running (0: count only, the operation completes). */
static void arm(int n)
{
	if (g_stores && g_child_ff != NULL) {
		uint64_t occ = 0;

		/* store n is the occ-th store into the segment by its instruction */
		for (int k = 0; k < n; k++)
			occ += g_child_ff->e[k].rip == g_child_ff->e[n - 1].rip;
		st_arm_at((uint64_t)n, g_child_ff->e[n - 1].rip, occ, FLASH_CRASH_EXIT);
	} else if (g_stores) {
		st_arm((uint64_t)n, ST_DIE, FLASH_CRASH_EXIT, 0, 0);
	} else {
		crash_arm(n);
	}
}

/* Points passed so far by a child that completed. */
static int hits(void)
{
	return g_stores ? (int)st_count() : fs_crash_hits();
}

void __wrap__exit(int status) __attribute__((noreturn));
void __real__exit(int status) __attribute__((noreturn));

/* Every _exit of the process passes here: a crash point's too (--wrap=_exit). */
void __wrap__exit(int status)
{
	if (g_out != NULL && status == FLASH_CRASH_EXIT) {
		int step = 0;
		const char *op = fs_crash_last(&step);

		snprintf(g_out->exit_op, sizeof g_out->exit_op, "%s", op);
		g_out->exit_step = step;
	}
	__real__exit(status);
}

/* ------------------------------------------------------------------ context */

struct scen;

struct ctx {
	const struct scen *sc;
	int n;                        /* armed point */
	char name[64];                /* segment */
	uint32_t act, sku, qty;
	uint64_t user, token, req, order_no, fence;
	int want_rc;                  /* the rejection a failing order must get */
	int crashed;                  /* the operation's child died at its point */
	char point[96];               /* "order 5", "store 12 (shard+64)" */
	struct child_out out;         /* the operation's child */
	int rcrashed;                 /* recover scenarios: the recoverer */
	int rn;                       /* its armed point */
	char rpoint[96];
	uint64_t rip, rrip;           /* store mode: where the child / recoverer died */
	pid_t helper;                 /* another slot, stopped in mid-operation (or 0) */
	int helper_cont;              /* let it run on after the case (else kill it) */
	struct flash_record *rec;     /* every record drained so far */
	size_t nrec, caprec;
	/* replay scenarios: WAL records re-applied with flash_replay emit no
	 * ring record; check_all adds each to the ledger once it took effect */
	struct flash_record rep[2];
	int nrep, rep_in[2];
	/* the identity and the consumer claim as setup left them */
	uint64_t inc0, lsn0, claim0;
	uint64_t toks[4];             /* expired tokens of the sweep scenario */
	/* generation scenarios: the request ids placed, the keys of the bank
	 * to clear, the clock handed to flash_gen_advance */
	uint64_t rids[4];
	uint64_t bank_keys;
	int64_t clk;
};

struct scen {
	const char *name;
	void (*setup)(flash_t *h, struct ctx *c);
	int (*run)(flash_t *h, struct ctx *c, struct child_out *o);
	void (*verify)(flash_t *h, struct ctx *c);
	unsigned flags;
};

static int g_failures;                /* failed checks */
static int g_case_failures;           /* of the case running */
static int g_failed_cases;
static const struct ctx *g_cur;
static flash_t *g_parent;             /* the consumer: drains and advances the rings */
static char g_segname[64];            /* the segment of the case running */
static pid_t g_main_pid;

/* Killed from outside (ctest timeout, ^C, a closed pipe): leave nothing in /dev/shm. */
static void on_signal(int sig)
{
	if (getpid() == g_main_pid && g_segname[0])
		shm_unlink(g_segname);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ------------------------------------------------------------------ naming a store */

static const char *const region_names[FS_R_COUNT] = {
	[FS_R_ACT] = "act", [FS_R_ACT_IDX] = "act_idx", [FS_R_SKU] = "sku",
	[FS_R_SKU_IDX] = "sku_idx", [FS_R_SHARD] = "shard", [FS_R_USER] = "user",
	[FS_R_TOKEN] = "token", [FS_R_REQ] = "req", [FS_R_ORDER] = "order", [FS_R_LOCK] = "lock",
	[FS_R_PROC] = "proc", [FS_R_JOURNAL] = "journal", [FS_R_RING] = "ring",
	[FS_R_RINGBUF] = "ringbuf", [FS_R_OBS] = "obs", [FS_R_ARCHIVED] = "archived",
	[FS_R_USER_BANKS] = "user_banks", [FS_R_REQ_BANKS] = "req_banks",
};

/* The region holding segment offset @p off ("hdr" before the first). */
static int region_at(uint64_t off)
{
	int best = -1;

	if (g_parent == NULL)
		return -1;
	for (int r = 0; r < FS_R_COUNT; r++)
		if (g_parent->hdr->fx.region[r].off <= off &&
		    (best < 0 || g_parent->hdr->fx.region[r].off > g_parent->hdr->fx.region[best].off))
			best = r;
	return best;
}

static const char *region_name(uint64_t off)
{
	int r = region_at(off);

	return r < 0 ? "hdr" : region_names[r];
}

static uint64_t region_off(uint64_t off)
{
	int r = region_at(off);

	return r < 0 ? off : off - g_parent->hdr->fx.region[r].off;
}

/* function:line of an instruction (an offset in this executable), for a
 * failure report; addr2line runs only when a check failed */
static const char *code_name(uint64_t rip_off)
{
	static char buf[256];
	char cmd[128];
	FILE *f;
	size_t n = 0;

	snprintf(cmd, sizeof cmd, "addr2line -f -s -i -e /proc/%ld/exe 0x%llx 2>/dev/null",
	         (long)getpid(), (unsigned long long)rip_off);
	buf[0] = '\0';
	if ((f = popen(cmd, "r")) != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		pclose(f);
	}
	buf[n] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = p[1] ? ' ' : '\0';
	return buf[0] ? buf : "?";
}

static void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(int line, const char *fmt, ...)
{
	va_list ap;

	g_failures++;
	if (g_case_failures++ == 0)
		g_failed_cases++;
	if (g_case_failures > 2)
		return;   /* the first two of each case say enough */
	fprintf(stderr, "FAIL [%s n=%d at %s", g_cur && g_cur->sc ? g_cur->sc->name : "?",
	        g_cur ? g_cur->n : 0, g_cur && g_cur->crashed ? g_cur->point : "completion");
	if (g_stores && g_cur && g_cur->crashed)
		fprintf(stderr, " in %s", code_name(g_cur->rip));
	if (g_cur && g_cur->rcrashed) {
		fprintf(stderr, "; recoverer n=%d at %s", g_cur->rn, g_cur->rpoint);
		if (g_stores)
			fprintf(stderr, " in %s", code_name(g_cur->rrip));
	}
	fprintf(stderr, "] line %d: ", line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK(cond, ...) do { if (!(cond)) failf(__LINE__, __VA_ARGS__); } while (0)
#define CHECK_RC(got, want) do { int g_ = (got), w_ = (want); \
		if (g_ != w_) failf(__LINE__, "%s gave %s, want %s", #got, flash_rcname(g_), \
		                    flash_rcname(w_)); } while (0)

/* ------------------------------------------------------------------ small helpers */

static void opts(struct flash_seg_opts *o)
{
	flash_seg_opts_default(o);
	o->max_activities = 16;
	o->max_skus = 32;
	o->max_shards = 64;
	o->max_users = 256;
	o->max_tokens = 64;
	o->max_orders = 512;
	o->max_requests = 64;
	o->max_locks = 8;
	o->max_procs = 8;
	o->ring_records = 64;
	o->mode = 0600;
	o->gid = -1;
	o->durability = FLASH_DURABILITY_ASYNC;
}

static int add_act(flash_t *h, uint32_t id, uint32_t k, uint32_t flags)
{
	struct flash_activity a;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.id = id;
	a.limit_per_user = k;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.flags = flags;
	a.start_ns = (int64_t)ts.tv_sec * 1000000000 - 3600ll * 1000000000;
	a.end_ns = (int64_t)ts.tv_sec * 1000000000 + 3600ll * 1000000000;
	return flash_activity_add(h, &a);
}

static int order(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint32_t qty,
                 uint64_t token, uint64_t req, struct flash_order_res *res)
{
	struct flash_order_req r;

	memset(&r, 0, sizeof r);
	r.activity_id = act;
	r.sku_id = sku;
	r.user_id = user;
	r.qty = qty;
	r.token = token;
	r.request_id = req;
	return flash_order(h, &r, res);
}

static uint64_t issue(flash_t *h, uint32_t act, uint32_t sku, uint64_t user)
{
	uint64_t t = 0;

	CHECK_RC(flash_token_issue(h, act, sku, user, 600000, &t), FLASH_OK);
	return t;
}

/* The ORDER record of request id @p req (0: none). */
static uint64_t rec_order_by_req(const struct ctx *c, uint64_t req)
{
	uint64_t ono = 0;
	int n = 0;

	for (size_t i = 0; i < c->nrec; i++)
		if (c->rec[i].type == FLASH_REC_ORDER && c->rec[i].request_id == req) {
			ono = c->rec[i].order_no;
			n++;
		}
	CHECK(n <= 1, "request id %llu has %d ORDER records", (unsigned long long)req, n);
	return ono;
}

static int rec_count(const struct ctx *c, uint16_t type, uint32_t act, uint32_t sku)
{
	int n = 0;

	for (size_t i = 0; i < c->nrec; i++)
		if (c->rec[i].type == type && c->rec[i].activity_id == act &&
		    (type == FLASH_REC_ACTIVITY || c->rec[i].sku_id == sku))
			n++;
	return n;
}

static void rec_append(struct ctx *c, const struct flash_record *r);

/* Has activity @p act an ARCHIVE record (flash_archive took effect)? */
static int rec_archived(const struct ctx *c, uint32_t act)
{
	for (size_t i = 0; i < c->nrec; i++)
		if (c->rec[i].type == FLASH_REC_ARCHIVE && c->rec[i].activity_id == act)
			return 1;
	return 0;
}

/* Was the activity of record @p r (one of c->rec) archived after it? */
static int rec_archived_after(const struct ctx *c, const struct flash_record *r)
{
	for (size_t i = (size_t)(r - c->rec) + 1; i < c->nrec; i++)
		if (c->rec[i].type == FLASH_REC_ARCHIVE && c->rec[i].activity_id == r->activity_id)
			return 1;
	return 0;
}

static int drain_one(void *arg, const struct flash_record *r, uint64_t seq)
{
	struct ctx *c = arg;

	/* delivered by a consumer that died before its durable mark landed: at
	 * least once, so again here -- counted once */
	for (int i = 0; i < g_drained->n; i++)
		if (g_drained->e[i].slot == r->slot && g_drained->e[i].seq == seq && !g_drained->e[i].again) {
			g_drained->e[i].again = 1;
			return flash_durable_advance(g_parent, r->slot, seq) != FLASH_OK;
		}
	rec_append(c, r);
	/* no WAL here: durable at once, which frees the ring space */
	return flash_durable_advance(g_parent, r->slot, seq) != FLASH_OK;
}

/* ------------------------------------------------------------------ invariants */

static int drain_all(flash_t *h, struct ctx *c)
{
	uint32_t d = 0;

	return flash_ring_drain(h, drain_one, c, UINT32_MAX, &d);
}

struct uacc { uint32_t act; uint64_t user; uint32_t active; uint64_t slots; };

static void rec_append(struct ctx *c, const struct flash_record *r)
{
	if (c->nrec == c->caprec) {
		c->caprec = c->caprec ? 2 * c->caprec : 256;
		c->rec = realloc(c->rec, c->caprec * sizeof *c->rec);
		if (c->rec == NULL) {
			perror("realloc");
			exit(2);
		}
	}
	c->rec[c->nrec++] = *r;
}

/* A replayed record is in the WAL: it joins the ledger once its effect shows. */
static void replayed_to_ledger(flash_t *h, struct ctx *c)
{
	for (int i = 0; i < c->nrep; i++) {
		struct flash_order_info oi;

		if (!c->rep_in[i] && c->rep[i].type == FLASH_REC_ARCHIVE) {
			/* an archive shows once its activity is gone */
			if (fs_act_find(h, c->rep[i].activity_id, NULL) == NULL) {
				rec_append(c, &c->rep[i]);
				c->rep_in[i] = 1;
			}
			continue;
		}
		if (c->rep_in[i] || flash_order_get(h, c->rep[i].order_no, &oi) != FLASH_OK)
			continue;
		if ((c->rep[i].type == FLASH_REC_ORDER && oi.state != FLASH_ORDER_NONE) ||
		    (c->rep[i].type == FLASH_REC_CANCEL && oi.state == FLASH_ORDER_CANCELLED) ||
		    (c->rep[i].type == FLASH_REC_EXPIRE && oi.state == FLASH_ORDER_EXPIRED) ||
		    (c->rep[i].type == FLASH_REC_CONFIRM && oi.state == FLASH_ORDER_ACTIVE)) {
			rec_append(c, &c->rep[i]);
			c->rep_in[i] = 1;
		}
	}
}

/*
 * Invariants 1-6 after recovery, from the order table and the records.
 * Nothing here reads a stock counter except to compare it with the ledger.
 */
/*
 * A cart (@p oi, its line 0, whose ORDER record is @p r0): every line is
 * there (flash_order_lines), each with the state of the cart, and has
 * exactly the records line 0 has -- the same types, each once, in line
 * order right after line 0's, with the line's sku and qty and the line
 * bits; a plain order has no line bits.
 */
static void check_cart(flash_t *h, const struct ctx *c, const struct flash_order_info *oi,
                       const struct flash_record *r0)
{
	struct flash_order_info l[FLASH_CART_LINES_MAX];
	uint32_t n = 0;
	int rc = flash_order_lines(h, oi->order_no, l, FLASH_CART_LINES_MAX, &n);

	CHECK_RC(rc, FLASH_OK);
	if (rc != FLASH_OK)
		return;
	if (!(r0->flags & FLASH_REC_F_CART)) {
		CHECK(n == 1 && oi->lines == 1, "plain order %llu reads %u lines", (unsigned long long)oi->order_no, n);
		return;
	}
	CHECK(n >= 2 && n == oi->lines, "cart %llu: %u lines, its line 0 says %u", (unsigned long long)oi->order_no,
	      n, oi->lines);
	for (uint32_t i = 0; i < n; i++)
		CHECK(l[i].state == oi->state && l[i].line == i, "cart %llu line %u: state %u line %u, the cart %u",
		      (unsigned long long)oi->order_no, i, l[i].state, l[i].line, oi->state);
	for (size_t k = 0; k < c->nrec; k++) {
		const struct flash_record *x = &c->rec[k];

		if (x->order_no != oi->order_no || !(x->flags & FLASH_REC_F_CART) || FLASH_REC_LINE(x->flags) != 0)
			continue;
		for (uint32_t i = 1; i < n; i++) {
			const struct flash_record *y = k + i < c->nrec ? &c->rec[k + i] : NULL;

			CHECK(y && y->type == x->type && y->order_no == x->order_no && FLASH_REC_LINE(y->flags) == i &&
			      (y->flags & FLASH_REC_F_CART) && ((y->flags & FLASH_REC_F_LAST) != 0) == (i + 1 == n) &&
			      y->sku_id == l[i].sku_id && y->qty == l[i].qty,
			      "cart %llu: the record after line %u's (type %u) is not its line %u", (unsigned long long)oi->order_no,
			      i - 1, x->type, i);
		}
	}
}

static void check_all(flash_t *h, struct ctx *c)
{
	uint32_t again = 99, nact = 0, nsku = 0, nshard = 0;
	uint64_t omax;
	int rc;

	/* no operation left in flight: a second recovery finds nothing */
	CHECK_RC(flash_recover(h, &again), FLASH_OK);
	CHECK(again == 0, "a second recovery recovered %u handles", again);

	/* raw: slots, journals and every state word are at rest */
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		uint64_t s = ck_pr_load_64(&h->proc[i].state);

		if ((int)i == h->slot)
			CHECK(FS_PKIND(s) == FS_P_ALIVE, "own slot %u in state %u", i, FS_PKIND(s));
		else
			CHECK(FS_PKIND(s) == FS_P_FREE, "slot %u of a dead process in state %u",
			      i, FS_PKIND(s));
		CHECK(ck_pr_load_32(&h->jr[i].phase) == FS_PH_IDLE, "journal %u in phase %u", i,
		      h->jr[i].phase);
		/* nobody sleeps on a durable mark now: a count left by a dead
		 * waiter would cost the consumer a futex wake per advance */
		CHECK(ck_pr_load_32(&h->proc[i].waiters) == 0, "slot %u counts %u sync waiters", i,
		      h->proc[i].waiters);
	}
	for (uint32_t i = 0; i < h->ord_cap; i++) {
		unsigned k = FS_KIND(ck_pr_load_64(&h->ord[i].state));

		/* FREE: a placing rolled back (order.c), or an archived order */
		CHECK(k == FS_K_EMPTY || k == FS_K_FREE || k == FS_K_ACTIVE || k == FS_K_CANCELLED ||
		      k == FS_K_RESERVED || k == FS_K_EXPIRED || k == FS_K_LINE, "order %u stuck in kind %u",
		      i + 1, k);
	}
	{
		uint32_t live = 0, locks = 0;

		/* every bank of both keyed tables: no entry in flight, the fill
		 * count equals the keys held, a CLEAR bank holds none, no bank is
		 * left CLEARING, the current generation's bank is USED by it */
		for (uint32_t t = 0; t < 2; t++) {
			const struct fs_kent *e = t == FS_KT_REQ ? h->req : h->user;
			uint32_t per = (t == FS_KT_REQ ? h->req_mask : h->user_mask) + 1;
			uint64_t cur = h->hdr->gen[t].cur, cw;
			uint32_t nb = h->gen_banks;

			if (nb == 0) {
				CHECK(0, "a handle with no generation bank");
				continue;
			}
			for (uint32_t b = 0; b < nb; b++) {
				uint32_t used = 0;
				uint64_t w = h->hdr->gen[t].bank[b];

				for (uint32_t i = b * per; i < (b + 1) * per; i++) {
					unsigned k = FS_KIND(e[i].state);

					CHECK(k == FS_K_EMPTY || k == FS_K_FREE || k == FS_K_DONE,
					      "%s entry %u stuck in kind %u", t ? "user" : "request", i, k);
					used += k != FS_K_EMPTY;
					CHECK(k != FS_K_EMPTY || (e[i].k[0] == 0 && e[i].k[1] == 0 && e[i].k[2] == 0) ||
					      FS_BANK_KIND(w) != FS_BANK_CLEAR,
					      "%s entry %u of a clear bank keeps a key", t ? "user" : "request", i);
				}
				CHECK(used == fs_kt_fill(h, t, b)->value, "%s bank %u: fill %llu, %u keys held",
				      t ? "user" : "request", b, (unsigned long long)fs_kt_fill(h, t, b)->value, used);
				CHECK(FS_BANK_KIND(w) != FS_BANK_CLEARING, "%s bank %u left CLEARING",
				      t ? "user" : "request", b);
				CHECK(FS_BANK_KIND(w) != FS_BANK_CLEAR || used == 0, "%s bank %u clear with %u keys",
				      t ? "user" : "request", b, used);
			}
			cw = h->hdr->gen[t].bank[cur % nb];
			CHECK(FS_BANK_KIND(cw) == FS_BANK_USED && FS_BANK_GEN(cw) == cur,
			      "%s generation %llu, its bank reads kind %u generation %llu", t ? "user" : "request",
			      (unsigned long long)cur, FS_BANK_KIND(cw), (unsigned long long)FS_BANK_GEN(cw));
		}
		for (uint32_t i = 0; i <= h->tok_mask; i++) {
			unsigned k = FS_KIND(h->tok[i].state);

			CHECK(k == FS_K_EMPTY || k == FS_K_FREE || k == FS_K_USED,
			      "token entry %u stuck in kind %u", i, k);
			live += k == FS_K_FREE;
		}
		for (uint32_t i = 0; i <= h->lock_mask; i++)
			locks += h->lock[i].used != 0;
		CHECK(live == h->hdr->tokens_live.value, "tokens_live %" PRIu64 ", %u live tokens in the table",
		      h->hdr->tokens_live.value, live);
		CHECK(locks == h->hdr->locks_used, "locks_used %u, %u names in the table",
		      h->hdr->locks_used, locks);
	}

	if ((rc = drain_all(h, c)) != FLASH_OK)
		CHECK(0, "flash_ring_drain: %s", flash_rcname(rc));
	replayed_to_ledger(h, c);

	/* the catalog is exactly what its records say: without archives the
	 * dense counts; with them, the entries not freed by an ARCHIVE record
	 * that came after their own (archived entries are reused) */
	{
		uint32_t lact = 0, lsku = 0, lshard = 0, archives = 0;

		for (size_t i = 0; i < c->nrec; i++) {
			const struct flash_record *r = &c->rec[i];
			int gone = rec_archived_after(c, r);

			archives += r->type == FLASH_REC_ARCHIVE;
			if (r->type == FLASH_REC_ACTIVITY && (r->flags & 1u))
				continue;   /* new terms of an activity added before */
			nact += r->type == FLASH_REC_ACTIVITY;
			nsku += r->type == FLASH_REC_SKU;
			if (r->type == FLASH_REC_SKU)
				nshard += r->qty;
			lact += r->type == FLASH_REC_ACTIVITY && !gone;
			lsku += r->type == FLASH_REC_SKU && !gone;
			if (r->type == FLASH_REC_SKU && !gone)
				lshard += r->qty;
		}
		if (archives == 0) {
			CHECK(h->hdr->n_act == nact, "%u activities, %u ACTIVITY records", h->hdr->n_act, nact);
			CHECK(h->hdr->n_sku == nsku, "%u skus, %u SKU records", h->hdr->n_sku, nsku);
			CHECK(h->hdr->n_shard == nshard, "%u shards handed out, SKU records say %u",
			      h->hdr->n_shard, nshard);
		} else {
			uint32_t eact = 0, esku = 0, eshard = 0;

			for (uint32_t i = 0; i < h->hdr->n_act; i++)
				eact += FS_CAT_KIND(h->act[i].state) != FS_CAT_FREE;
			for (uint32_t i = 0; i < h->hdr->n_sku; i++)
				esku += FS_CAT_KIND(h->sku[i].state) != FS_CAT_FREE;
			for (uint32_t i = 0; i < h->hdr->n_shard; i++)
				eshard += h->shard[i].owner != 0;
			CHECK(eact == lact, "%u activity entries in use, records say %u", eact, lact);
			CHECK(esku == lsku, "%u sku entries in use, records say %u", esku, lsku);
			CHECK(eshard == lshard, "%u shards owned, records say %u", eshard, lshard);
		}
	}

	/* no order number held twice: every slot's unused chunk [order_next,
	 * order_end) lies below the allocator, is unused, and overlaps no other */
	{
		uint64_t top = ck_pr_load_64(&h->hdr->order_next);

		for (uint32_t i = 0; i < h->proc_cap; i++) {
			uint64_t a = h->proc[i].order_next, b = h->proc[i].order_end;

			if (a == 0 || a >= b)
				continue;
			CHECK(b <= top, "slot %u holds order numbers [%llu, %llu) past the allocator %llu", i,
			      (unsigned long long)a, (unsigned long long)b, (unsigned long long)top);
			/* a lap-0 number's slot is its own: still EMPTY (order.c) */
			for (uint64_t no = a; no < b && no <= h->ord_cap; no++)
				if (FS_KIND(h->ord[no - 1].state) != FS_K_EMPTY) {
					CHECK(0, "slot %u will hand out order %llu again (its chunk [%llu, %llu))",
					      i, (unsigned long long)no, (unsigned long long)a,
					      (unsigned long long)b);
					break;
				}
			for (uint32_t k = i + 1; k < h->proc_cap; k++) {
				uint64_t a2 = h->proc[k].order_next, b2 = h->proc[k].order_end;

				if (a2 != 0 && a2 < b2)
					CHECK(b2 <= a || b <= a2, "slots %u and %u both hold order numbers "
					      "[%llu, %llu) and [%llu, %llu)", i, k, (unsigned long long)a,
					      (unsigned long long)b, (unsigned long long)a2, (unsigned long long)b2);
			}
		}
	}

	/* orders against records */
	omax = flash_orders_max(h);
	{
		uint32_t *nord = calloc(omax + 2, sizeof *nord), *ncan = calloc(omax + 2, sizeof *ncan);
		uint32_t *nexp = calloc(omax + 2, sizeof *nexp), *ncon = calloc(omax + 2, sizeof *ncon);
		const struct flash_record **orec = calloc(omax + 2, sizeof *orec);
		struct uacc *ua = calloc(omax + 2, sizeof *ua);
		size_t nua = 0;

		if (!nord || !ncan || !nexp || !ncon || !orec || !ua) {
			perror("calloc");
			exit(2);
		}
		for (size_t i = 0; i < c->nrec; i++) {
			const struct flash_record *r = &c->rec[i];

			if (r->type != FLASH_REC_ORDER && r->type != FLASH_REC_CANCEL &&
			    r->type != FLASH_REC_EXPIRE && r->type != FLASH_REC_CONFIRM)
				continue;
			if (r->order_no == 0 || r->order_no > omax) {
				CHECK(0, "record for order %llu, orders_max %llu",
				      (unsigned long long)r->order_no, (unsigned long long)omax);
				continue;
			}
			if ((r->flags & FLASH_REC_F_CART) && FLASH_REC_LINE(r->flags) != 0)
				continue;   /* a cart's later line: check_cart */
			if (r->type == FLASH_REC_ORDER) {
				nord[r->order_no]++;
				orec[r->order_no] = r;
			} else if (r->type == FLASH_REC_CANCEL) {
				ncan[r->order_no]++;
			} else if (r->type == FLASH_REC_EXPIRE) {
				nexp[r->order_no]++;
			} else {
				ncon[r->order_no]++;
			}
		}
		for (uint64_t no = 1; no <= omax; no++) {
			struct flash_order_info oi;
			const struct fs_order *o = &h->ord[((no & FS_ONO_MASK) - 1) % h->ord_cap];

			rc = flash_order_get(h, no, &oi);
			/* an archived activity's order: its slot free, the number kept */
			if (rc == FLASH_EARCHIVED && orec[no] != NULL && rec_archived_after(c, orec[no])) {
				CHECK(FS_KIND(o->state) == FS_K_FREE && o->order_no == no,
				      "archived order %llu: slot kind %u, number %llu", (unsigned long long)no,
				      FS_KIND(o->state), (unsigned long long)o->order_no);
				continue;
			}
			CHECK_RC(rc, FLASH_OK);
			if (rc != FLASH_OK)
				continue;
			if (oi.state == FLASH_ORDER_NONE) {
				CHECK(nord[no] == 0 && ncan[no] == 0 && nexp[no] == 0 && ncon[no] == 0,
				      "order %llu NONE with %u ORDER / %u CANCEL / %u EXPIRE / %u CONFIRM records",
				      (unsigned long long)no, nord[no], ncan[no], nexp[no], ncon[no]);
				continue;
			}
			CHECK(nord[no] == 1, "order %llu (state %u) has %u ORDER records",
			      (unsigned long long)no, oi.state, nord[no]);
			CHECK(ncan[no] == (oi.state == FLASH_ORDER_CANCELLED),
			      "order %llu (state %u) has %u CANCEL records", (unsigned long long)no,
			      oi.state, ncan[no]);
			CHECK(nexp[no] == (oi.state == FLASH_ORDER_EXPIRED),
			      "order %llu (state %u) has %u EXPIRE records", (unsigned long long)no,
			      oi.state, nexp[no]);
			/* confirmed once if a reservation now ACTIVE; never if RESERVED or
			 * EXPIRED; at most once if it was cancelled after */
			if (nord[no] == 1) {
				uint32_t resv = orec[no]->value != 0;

				CHECK(oi.state == FLASH_ORDER_ACTIVE ? ncon[no] == resv :
				      oi.state == FLASH_ORDER_CANCELLED ? ncon[no] <= resv : ncon[no] == 0,
				      "order %llu (state %u%s) has %u CONFIRM records", (unsigned long long)no,
				      oi.state, resv ? ", a reservation" : "", ncon[no]);
				CHECK(resv || (oi.state != FLASH_ORDER_RESERVED && oi.state != FLASH_ORDER_EXPIRED),
				      "order %llu in state %u without a pay-by time in its record",
				      (unsigned long long)no, oi.state);
			}
			if (nord[no] == 1) {
				const struct flash_record *r = orec[no];

				CHECK(r->user_id == oi.user_id && r->activity_id == oi.activity_id &&
				      r->sku_id == oi.sku_id && r->qty == oi.qty &&
				      r->limit_slot == oi.limit_slot,
				      "order %llu differs from its record", (unsigned long long)no);
				check_cart(h, c, &oi, r);
			}
			/* its limit entry: held (DONE = its index) while active; after a
			 * cancel only if the activity keeps the quota */
			{
				uint32_t ui = o->user_idx, flags = 0;
				uint64_t want = FS_MK(FS_K_DONE, (uint64_t)(o - h->ord));
				const struct fs_act *a = fs_act_find(h, oi.activity_id, NULL);

				if (a)
					flags = fs_act_t(a, a->state)->flags;
				CHECK(ui < h->user_n, "order %llu: user entry %u", (unsigned long long)no, ui);
				/* a per-day entry may have gone with its bank (gen.c): once the
				 * user table reclaimed anything, such entries are not judged */
				if (ui < h->user_n &&
				    !(a && a->t[0].scope == FLASH_SCOPE_DAY && h->hdr->gen[FS_KT_USER].reclaimed.value)) {
					uint64_t s = h->user[ui].state;

					if (oi.state == FLASH_ORDER_ACTIVE || oi.state == FLASH_ORDER_RESERVED ||
					    !(flags & FLASH_ACT_CANCEL_RETURNS_QUOTA))
						CHECK(s == want, "order %llu (state %u): its limit entry reads kind %u",
						      (unsigned long long)no, oi.state, FS_KIND(s));
					else
						CHECK(s != want, "cancelled order %llu still holds its quota",
						      (unsigned long long)no);
				}
			}
			if (oi.state == FLASH_ORDER_ACTIVE || oi.state == FLASH_ORDER_RESERVED) {
				size_t u;

				for (u = 0; u < nua; u++)
					if (ua[u].act == oi.activity_id && ua[u].user == oi.user_id)
						break;
				if (u == nua) {
					ua[nua].act = oi.activity_id;
					ua[nua].user = oi.user_id;
					nua++;
				}
				ua[u].active++;
				CHECK(oi.limit_slot >= 1 && oi.limit_slot <= 64 &&
				      !(ua[u].slots & (1ull << (oi.limit_slot - 1))),
				      "user %llu: limit slot %u held twice or out of range",
				      (unsigned long long)oi.user_id, oi.limit_slot);
				if (oi.limit_slot >= 1 && oi.limit_slot <= 64)
					ua[u].slots |= 1ull << (oi.limit_slot - 1);
			}
		}
		/* no user over K (K from the ACTIVITY record) */
		for (size_t u = 0; u < nua; u++) {
			uint32_t k = 0;

			for (size_t i = 0; i < c->nrec; i++)
				if (c->rec[i].type == FLASH_REC_ACTIVITY && c->rec[i].activity_id == ua[u].act)
					k = c->rec[i].biz_day & 0xff;
			CHECK(ua[u].active <= k, "user %llu holds %u active orders of activity %u, K %u",
			      (unsigned long long)ua[u].user, ua[u].active, ua[u].act, k);
		}
		free(nord);
		free(ncan);
		free(nexp);
		free(ncon);
		free(orec);
		free(ua);
	}

	/* per sku: total (records) == available + active quantity (records and table) */
	for (size_t i = 0; i < c->nrec; i++) {
		const struct flash_record *s = &c->rec[i];
		struct flash_sku_info si;
		int64_t total = 0, active_rec = 0, active_tab = 0;

		if (s->type != FLASH_REC_SKU)
			continue;
		if (rec_archived_after(c, s)) {
			/* wholly gone with its activity, or this is an older incarnation */
			continue;
		}
		/* its records come after it (an earlier sku of the same ids was
		 * archived before it) */
		for (size_t k = i; k < c->nrec; k++) {
			const struct flash_record *r = &c->rec[k];

			if (r->activity_id != s->activity_id || r->sku_id != s->sku_id)
				continue;
			if (r->type == FLASH_REC_SKU || r->type == FLASH_REC_RESTOCK)
				total += r->value;
			else if (r->type == FLASH_REC_ORDER)
				active_rec += r->qty;
			else if (r->type == FLASH_REC_CANCEL || r->type == FLASH_REC_EXPIRE)
				active_rec -= r->qty;
		}
		for (uint64_t no = 1; no <= omax; no++) {
			struct flash_order_info l[FLASH_CART_LINES_MAX];
			uint32_t n = 0;

			/* every line of an order (a cart's later numbers are none) */
			if (flash_order_lines(h, no, l, FLASH_CART_LINES_MAX, &n) != FLASH_OK)
				continue;
			for (uint32_t x = 0; x < n; x++)
				if ((l[x].state == FLASH_ORDER_ACTIVE || l[x].state == FLASH_ORDER_RESERVED) &&
				    l[x].activity_id == s->activity_id && l[x].sku_id == s->sku_id)
					active_tab += l[x].qty;
		}
		rc = flash_sku_get(h, s->activity_id, s->sku_id, &si);
		CHECK_RC(rc, FLASH_OK);
		if (rc != FLASH_OK)
			continue;
		CHECK(active_rec == active_tab, "sku %u/%u: records say %lld active units, orders %lld",
		      s->activity_id, s->sku_id, (long long)active_rec, (long long)active_tab);
		CHECK((int64_t)si.total == total, "sku %u/%u: total %llu, records say %lld",
		      s->activity_id, s->sku_id, (unsigned long long)si.total, (long long)total);
		CHECK((int64_t)si.available == total - active_tab,
		      "sku %u/%u: available %llu != total %lld - active %lld (%s)",
		      s->activity_id, s->sku_id, (unsigned long long)si.available, (long long)total,
		      (long long)active_tab,
		      (int64_t)si.available > total - active_tab ? "units created" : "units leaked");
	}
}

/* ------------------------------------------------------------------ orders */

#define U1 1001u

static void setup_order_borrow(flash_t *h, struct ctx *c)
{
	uint64_t t0;

	/* K = 2, token required; the user holds slot 1 already (on another sku) */
	CHECK_RC(add_act(h, 1, 2, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 1, 10, 3, 3), FLASH_OK);   /* 1 unit per shard */
	CHECK_RC(flash_sku_add(h, 1, 11, 10, 1), FLASH_OK);
	t0 = issue(h, 1, 11, U1);
	CHECK_RC(order(h, 1, 11, U1, 1, t0, 0, NULL), FLASH_OK);
	c->act = 1;
	c->sku = 10;
	c->user = U1;
	c->qty = 2;                    /* no shard has 2: taken from two shards */
	c->token = issue(h, 1, 10, U1);
	c->req = 5001;
}

static void setup_order_home_empty(flash_t *h, struct ctx *c)
{
	uint64_t u = 2001;

	CHECK_RC(add_act(h, 2, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 2, 20, 2, 2), FLASH_OK);
	/* a removal takes from shard 0 first (hint 0): shard 0 is now empty */
	CHECK_RC(flash_restock(h, 2, 20, -1), FLASH_OK);
	{
		const struct fs_sku *s = fs_sku_find(h, 2, 20, NULL);

		CHECK(s && h->shard[s->shard0].c.value == 0 && h->shard[s->shard0 + 1].c.value == 1,
		      "setup: shard 0 not the emptied one");
	}
	while (fs_hash(u, 3, 4) % 2 != 0)   /* a user whose home is shard 0 */
		u++;
	c->act = 2;
	c->sku = 20;
	c->user = u;
	c->qty = 1;
	c->token = 0;
	c->req = 5002;
}

static int run_order(flash_t *h, struct ctx *c, struct child_out *o)
{
	return order(h, c->act, c->sku, c->user, c->qty, c->token, c->req, &o->res);
}

/* An order that succeeds when it completes. */
static void verify_order_ok(flash_t *h, struct ctx *c)
{
	struct flash_order_res res;
	uint64_t ono = rec_order_by_req(c, c->req);
	int rc;

	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(ono != 0 && ono == c->out.res.order_no, "completed order %llu, record %llu",
		      (unsigned long long)c->out.res.order_no, (unsigned long long)ono);
	}
	if (ono != 0) {
		struct flash_order_info oi;

		CHECK_RC(flash_order_get(h, ono, &oi), FLASH_OK);
		CHECK(oi.state == FLASH_ORDER_ACTIVE && oi.user_id == c->user && oi.qty == c->qty,
		      "committed order %llu reads state %u", (unsigned long long)ono, oi.state);
	}
	/* the client retries with the same request id (and token) */
	memset(&res, 0, sizeof res);
	rc = order(h, c->act, c->sku, c->user, c->qty, c->token, c->req, &res);
	if (ono != 0) {
		CHECK_RC(rc, FLASH_EDUPLICATE);
		CHECK(res.first_rc == FLASH_OK && res.order_no == ono,
		      "retry: first_rc %d order %llu, want OK %llu", res.first_rc,
		      (unsigned long long)res.order_no, (unsigned long long)ono);
	} else {
		/* rolled back: token live again, quota and request id free */
		CHECK_RC(rc, FLASH_OK);
	}
	if (c->token != 0)
		CHECK_RC(flash_token_redeem(h, c->act, c->sku, c->user, c->token), FLASH_EBAD_TOKEN);
}

static void setup_order_sold_out(flash_t *h, struct ctx *c)
{
	uint64_t t;

	CHECK_RC(add_act(h, 3, 1, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 3, 30, 1, 1), FLASH_OK);
	t = issue(h, 3, 30, 3002);
	CHECK_RC(order(h, 3, 30, 3002, 1, t, 0, NULL), FLASH_OK);
	c->act = 3;
	c->sku = 30;
	c->user = 3001;
	c->qty = 1;
	c->token = issue(h, 3, 30, 3001);
	c->req = 5003;
	c->want_rc = FLASH_ESOLD_OUT;
}

static void setup_order_limit(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 4, 2, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 4, 40, 10, 2), FLASH_OK);
	for (int i = 0; i < 2; i++) {
		uint64_t t = issue(h, 4, 40, 4001);

		CHECK_RC(order(h, 4, 40, 4001, 1, t, 0, NULL), FLASH_OK);
	}
	c->act = 4;
	c->sku = 40;
	c->user = 4001;
	c->qty = 1;
	c->token = issue(h, 4, 40, 4001);
	c->req = 5004;
	c->want_rc = FLASH_ELIMIT;
}

/* Does the request-id table hold the outcome of this case's request? */
static int req_done(flash_t *h, const struct ctx *c)
{
	for (uint32_t i = 0; i <= h->req_mask; i++)
		if (h->req[i].k[0] == c->req && h->req[i].k[1] == c->user &&
		    FS_KIND(h->req[i].state) == FS_K_DONE)
			return 1;
	return 0;
}

static int token_burnt(flash_t *h, uint64_t id)
{
	for (uint32_t i = 0; i <= h->tok_mask; i++)
		if (h->tok[i].id == id && FS_KIND(h->tok[i].state) == FS_K_USED)
			return 1;
	return 0;
}

/*
 * An order rejected after its token and request id were taken.  Completed:
 * the token is burnt and the request id remembers the rejection.  Killed:
 * recovery rolls back: the token is live again and the request id forgotten,
 * so the retry is rejected for the same reason (not BAD_TOKEN) -- also when
 * the owner had already burnt the token on its failure path (point
 * order_undo 3): the call never returned, so nobody learned the token was used.
 */
static void verify_order_fail(flash_t *h, struct ctx *c)
{
	struct flash_order_res res;
	int want = c->want_rc, rc;

	CHECK(rec_order_by_req(c, c->req) == 0, "a rejected order has an ORDER record");
	if (!c->crashed) {
		CHECK_RC(c->out.rc, want);
	} else if (req_done(h, c)) {
		/* the owner's failure path had recorded its outcome: it stands */
		CHECK(want == FLASH_EBAD_TOKEN || token_burnt(h, c->token),
		      "request id remembers %s, token not burnt", flash_rcname(want));
	} else {
		rc = order(h, c->act, c->sku, c->user, c->qty, c->token, c->req, &res);
		CHECK_RC(rc, want);
	}
	memset(&res, 0, sizeof res);
	rc = order(h, c->act, c->sku, c->user, c->qty, c->token, c->req, &res);
	CHECK_RC(rc, FLASH_EDUPLICATE);
	CHECK(res.first_rc == want, "retry: first outcome %s", flash_rcname(res.first_rc));
	CHECK_RC(flash_token_redeem(h, c->act, c->sku, c->user, c->token), FLASH_EBAD_TOKEN);
}

/* ------------------------------------------------------------------ cancel */

static void setup_cancel(flash_t *h, struct ctx *c, uint32_t act, uint32_t flags)
{
	struct flash_order_res res;

	CHECK_RC(add_act(h, act, 1, flags), FLASH_OK);
	CHECK_RC(flash_sku_add(h, act, act * 10, 4, 2), FLASH_OK);
	CHECK_RC(order(h, act, act * 10, 5001, 2, 0, 0, &res), FLASH_OK);
	c->act = act;
	c->sku = act * 10;
	c->user = 5001;
	c->qty = 2;
	c->order_no = res.order_no;
}

static void setup_cancel_quota(flash_t *h, struct ctx *c)
{
	setup_cancel(h, c, 5, FLASH_ACT_CANCEL_RETURNS_QUOTA);
}

static void setup_cancel_keep(flash_t *h, struct ctx *c)
{
	setup_cancel(h, c, 6, 0);
}

static int run_cancel(flash_t *h, struct ctx *c, struct child_out *o)
{
	uint32_t units = 0;
	int rc = flash_cancel(h, c->order_no, &units);

	o->v[0] = units;
	return rc;
}

static void verify_cancel(flash_t *h, struct ctx *c)
{
	struct flash_order_info oi;
	const struct fs_act *a = fs_act_find(h, c->act, NULL);
	int quota = a && (fs_act_t(a, a->state)->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA);
	uint32_t units = 99;
	int cancelled;

	CHECK_RC(flash_order_get(h, c->order_no, &oi), FLASH_OK);
	CHECK(oi.state == FLASH_ORDER_ACTIVE || oi.state == FLASH_ORDER_CANCELLED,
	      "order %llu in state %u", (unsigned long long)c->order_no, oi.state);
	cancelled = oi.state == FLASH_ORDER_CANCELLED;
	CHECK(cancelled == rec_count(c, FLASH_REC_CANCEL, c->act, c->sku),
	      "cancelled %d, %d CANCEL records", cancelled, rec_count(c, FLASH_REC_CANCEL, c->act, c->sku));
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(cancelled && c->out.v[0] == 2, "completed cancel: state %u, units %llu",
		      oi.state, (unsigned long long)c->out.v[0]);
	}
	/* retry: exactly once */
	if (cancelled) {
		CHECK_RC(flash_cancel(h, c->order_no, &units), FLASH_ECANCELLED);
		CHECK(units == 0, "second cancel returned %u units", units);
	} else {
		CHECK_RC(flash_cancel(h, c->order_no, &units), FLASH_OK);
		CHECK(units == 2, "cancel returned %u units, want 2", units);
	}
	/* the quota policy held through the crash */
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, 0, 0, NULL), quota ? FLASH_OK : FLASH_ELIMIT);
}

/* ------------------------------------------------------------------ carts */

/* Cart lines of the cases: activity act, skus act*10 + 0..2, qty 2, 1, 3. */
static const uint32_t cart_qty[3] = { 2, 1, 3 };

static int cart_order(flash_t *h, struct ctx *c, uint32_t reserve_ms, struct flash_cart_res *res)
{
	struct flash_cart_req r;

	memset(&r, 0, sizeof r);
	r.activity_id = c->act;
	r.user_id = c->user;
	r.lines = 3;
	r.token = c->token;
	r.request_id = c->req;
	r.reserve_ms = reserve_ms;
	for (uint32_t i = 0; i < 3; i++) {
		r.line[i].sku_id = c->act * 10 + i;
		r.line[i].qty = cart_qty[i];
	}
	return flash_cart_order(h, &r, res);
}

/* Activity @p act (K 2, token required, @p flags): line 0's sku has 3 units
 * on 3 shards (its 2 are borrowed across two), line 1's 10 on one, line 2's
 * @p units2 on two; the user holds one slot already. */
static void setup_cart_act(flash_t *h, struct ctx *c, uint32_t act, uint32_t flags, uint64_t units2)
{
	uint64_t t;

	CHECK_RC(add_act(h, act, 2, FLASH_ACT_TOKEN_REQUIRED | flags), FLASH_OK);
	CHECK_RC(flash_sku_add(h, act, act * 10, 3, 3), FLASH_OK);
	CHECK_RC(flash_sku_add(h, act, act * 10 + 1, 10, 1), FLASH_OK);
	CHECK_RC(flash_sku_add(h, act, act * 10 + 2, units2, 2), FLASH_OK);
	t = issue(h, act, act * 10 + 1, 6001);
	CHECK_RC(order(h, act, act * 10 + 1, 6001, 1, t, 0, NULL), FLASH_OK);
	c->act = act;
	c->sku = act * 10;
	c->user = 6001;
	c->qty = 2;
	c->token = issue(h, act, act * 10, 6001);
	c->req = 6101;
}

static void setup_cart(flash_t *h, struct ctx *c) { setup_cart_act(h, c, 41, 0, 5); }

static void setup_cart_short(flash_t *h, struct ctx *c)
{
	setup_cart_act(h, c, 42, 0, 2);       /* line 2 wants 3 */
	c->want_rc = FLASH_ESOLD_OUT;
}

static int run_cart(flash_t *h, struct ctx *c, struct child_out *o)
{
	struct flash_cart_res res;
	int rc = cart_order(h, c, 0, &res);

	o->res.order_no = res.order_no;
	o->v[0] = res.line;
	o->v[1] = res.sold_out;
	return rc;
}

/* Each line's available units: @p placed, or all there. */
static void cart_units(flash_t *h, const struct ctx *c, int placed)
{
	const uint64_t units[3] = { 3, 10, 5 };

	for (uint32_t i = 0; i < 3; i++) {
		uint64_t want = units[i] - (i == 1) - (placed ? cart_qty[i] : 0);
		uint64_t got = 0;
		struct flash_sku_info si;

		if (flash_sku_get(h, c->act, c->act * 10 + i, &si) == FLASH_OK)
			got = si.available;
		if (i == 2 && c->want_rc == FLASH_ESOLD_OUT)
			want = 2;
		CHECK(got == want, "cart line %u: %llu units available, want %llu (%s)", i, (unsigned long long)got,
		      (unsigned long long)want, placed ? "placed" : "not placed");
	}
}

/* A cart that succeeds when it completes: placed whole (3 lines, every
 * line's units gone, its records) or not at all (every unit there, the
 * token live, the request id free): the retry tells which. */
static void verify_cart_ok(flash_t *h, struct ctx *c)
{
	struct flash_cart_res res;
	uint64_t ono = rec_order_by_req(c, c->req);
	int rc;

	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(ono != 0 && ono == c->out.res.order_no, "completed cart %llu, record %llu",
		      (unsigned long long)c->out.res.order_no, (unsigned long long)ono);
	}
	cart_units(h, c, ono != 0);
	if (ono != 0) {
		struct flash_order_info l[3];
		uint32_t n;

		CHECK_RC(flash_order_lines(h, ono, l, 3, &n), FLASH_OK);
		CHECK(n == 3 && l[0].state == FLASH_ORDER_ACTIVE && l[2].sku_id == c->act * 10 + 2,
		      "committed cart %llu: %u lines, state %u", (unsigned long long)ono, n, l[0].state);
	}
	memset(&res, 0, sizeof res);
	rc = cart_order(h, c, 0, &res);
	if (ono != 0) {
		CHECK_RC(rc, FLASH_EDUPLICATE);
		CHECK(res.first_rc == FLASH_OK && res.order_no == ono, "retry: first_rc %d cart %llu, want OK %llu",
		      res.first_rc, (unsigned long long)res.order_no, (unsigned long long)ono);
	} else {
		CHECK_RC(rc, FLASH_OK);
	}
	cart_units(h, c, 1);
	CHECK_RC(flash_token_redeem(h, c->act, c->sku, c->user, c->token), FLASH_EBAD_TOKEN);
	/* one limit slot: the user (K 2) is at K now */
	CHECK_RC(order(h, c->act, c->act * 10 + 1, c->user, 1, issue(h, c->act, c->act * 10 + 1, c->user), 0, NULL),
	         FLASH_ELIMIT);
}

/* A cart refused for its short line 2 after its token and request id were
 * taken: nothing of it taken, whatever the kill; as verify_order_fail. */
static void verify_cart_fail(flash_t *h, struct ctx *c)
{
	struct flash_cart_res res;
	int rc;

	CHECK(rec_order_by_req(c, c->req) == 0, "a refused cart has an ORDER record");
	cart_units(h, c, 0);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_ESOLD_OUT);
		CHECK(c->out.v[0] == 2 && c->out.v[1] == 4, "refused cart names line %llu, short lines %llx",
		      (unsigned long long)c->out.v[0], (unsigned long long)c->out.v[1]);
	} else if (!req_done(h, c)) {
		CHECK_RC(cart_order(h, c, 0, &res), FLASH_ESOLD_OUT);
	}
	memset(&res, 0, sizeof res);
	rc = cart_order(h, c, 0, &res);
	CHECK_RC(rc, FLASH_EDUPLICATE);
	CHECK(res.first_rc == FLASH_ESOLD_OUT, "retry: first outcome %s", flash_rcname(res.first_rc));
	CHECK_RC(flash_token_redeem(h, c->act, c->sku, c->user, c->token), FLASH_EBAD_TOKEN);
	cart_units(h, c, 0);
	/* the limit slot was never taken: one more order of the user goes through */
	CHECK_RC(order(h, c->act, c->act * 10 + 1, c->user, 1, issue(h, c->act, c->act * 10 + 1, c->user), 0, NULL),
	         FLASH_OK);
}

/* A placed cart (a reservation with @p ms) to be ended by the case. */
static void setup_cart_placed(flash_t *h, struct ctx *c, uint32_t act, uint32_t flags, uint32_t ms)
{
	struct flash_cart_res res;

	setup_cart_act(h, c, act, flags, 5);
	c->token = issue(h, act, act * 10, 6001);
	c->req = 0;
	CHECK_RC(cart_order(h, c, ms, &res), FLASH_OK);
	c->order_no = res.order_no;
	if (ms != 0 && ms < 100)
		usleep((ms + 2) * 1000);
}

/* A cart at the tail of its handle's chunk of numbers: the slot's last
 * two numbers are too few for its three lines, so they are skipped (their
 * slots made reusable for later laps) and the cart takes the next chunk. */
static void setup_cart_chunk_tail(flash_t *h, struct ctx *c)
{
	flash_t *h2 = NULL;

	setup_cart_act(h, c, 46, 0, 5);
	CHECK_RC(add_act(h, 47, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 47, 470, 100, 1), FLASH_OK);
	CHECK_RC(flash_open(c->name, 0, &h2), FLASH_OK);
	if (h2 == NULL)
		return;
	for (uint32_t i = 0; i + 2 < FS_ORDER_CHUNK; i++) {
		CHECK_RC(order(h2, 47, 470, 47001 + i, 1, 0, 0, NULL), FLASH_OK);
		if (i % 32 == 31)
			(void)drain_all(h, c);
	}
	CHECK(h2->me->order_next + 2 == h2->me->order_end, "setup: slot %d has %llu numbers left, not 2",
	      flash_slot(h2), (unsigned long long)(h2->me->order_end - h2->me->order_next));
	CHECK_RC(flash_close(h2), FLASH_OK);
}

static void setup_cart_cancel(flash_t *h, struct ctx *c)
{
	setup_cart_placed(h, c, 43, FLASH_ACT_CANCEL_RETURNS_QUOTA, 0);
}

static void setup_cart_confirm(flash_t *h, struct ctx *c) { setup_cart_placed(h, c, 44, 0, 3600000); }
static void setup_cart_expire(flash_t *h, struct ctx *c) { setup_cart_placed(h, c, 45, 0, 1); }

/* The cart's state, every line the same: one of @p a, @p b. */
static uint32_t cart_state(flash_t *h, const struct ctx *c, uint32_t a, uint32_t b)
{
	struct flash_order_info l[3];
	uint32_t n = 0;

	CHECK_RC(flash_order_lines(h, c->order_no, l, 3, &n), FLASH_OK);
	CHECK(n == 3, "cart %llu reads %u lines", (unsigned long long)c->order_no, n);
	for (uint32_t i = 1; i < n; i++)
		CHECK(l[i].state == l[0].state, "cart line %u in state %u, line 0 in %u", i, l[i].state, l[0].state);
	CHECK(l[0].state == a || l[0].state == b, "cart in state %u, not %u or %u", l[0].state, a, b);
	return l[0].state;
}

/* Records of type @p type for the cart: one per line, or none. */
static int cart_recs(const struct ctx *c, uint16_t type)
{
	int n = 0;

	for (size_t i = 0; i < c->nrec; i++)
		n += c->rec[i].type == type && c->rec[i].order_no == c->order_no;
	CHECK(n == 0 || n == 3, "cart %llu has %d records of type %u", (unsigned long long)c->order_no, n, type);
	return n / 3;
}

static void verify_cart_cancel(flash_t *h, struct ctx *c)
{
	uint32_t units = 99;
	uint32_t st = cart_state(h, c, FLASH_ORDER_ACTIVE, FLASH_ORDER_CANCELLED);
	int cancelled = st == FLASH_ORDER_CANCELLED;

	CHECK(cancelled == cart_recs(c, FLASH_REC_CANCEL), "state %u, %d CANCEL records per line", st,
	      cart_recs(c, FLASH_REC_CANCEL));
	cart_units(h, c, !cancelled);
	if (!c->crashed)
		CHECK(c->out.rc == FLASH_OK && cancelled && c->out.v[0] == 6, "completed cancel: %s, state %u, units %llu",
		      flash_rcname(c->out.rc), st, (unsigned long long)c->out.v[0]);
	CHECK_RC(flash_cancel(h, c->order_no, &units), cancelled ? FLASH_ECANCELLED : FLASH_OK);
	CHECK(units == (cancelled ? 0u : 6u), "the retry's cancel returned %u units", units);
	cart_units(h, c, 0);
	/* the quota came back (K 2, one held by the first order): one more goes through */
	CHECK_RC(order(h, c->act, c->act * 10 + 1, c->user, 1, issue(h, c->act, c->act * 10 + 1, c->user), 0, NULL),
	         FLASH_OK);
	CHECK_RC(order(h, c->act, c->act * 10 + 1, c->user, 1, issue(h, c->act, c->act * 10 + 1, c->user), 0, NULL),
	         FLASH_ELIMIT);
}

static void verify_cart_confirm(flash_t *h, struct ctx *c)
{
	uint32_t st = cart_state(h, c, FLASH_ORDER_RESERVED, FLASH_ORDER_ACTIVE);

	CHECK((st == FLASH_ORDER_ACTIVE) == cart_recs(c, FLASH_REC_CONFIRM), "state %u, %d CONFIRM records per line",
	      st, cart_recs(c, FLASH_REC_CONFIRM));
	if (!c->crashed)
		CHECK(c->out.rc == FLASH_OK && st == FLASH_ORDER_ACTIVE, "completed confirm: %s, state %u",
		      flash_rcname(c->out.rc), st);
	CHECK_RC(flash_confirm(h, c->order_no), FLASH_OK);
	cart_state(h, c, FLASH_ORDER_ACTIVE, FLASH_ORDER_ACTIVE);
	cart_units(h, c, 1);
	CHECK_RC(flash_expire(h, c->order_no, NULL), FLASH_ECONFIRMED);
}

static void verify_cart_expire(flash_t *h, struct ctx *c)
{
	uint32_t units = 99;
	uint32_t st = cart_state(h, c, FLASH_ORDER_RESERVED, FLASH_ORDER_EXPIRED);
	int expired = st == FLASH_ORDER_EXPIRED;

	CHECK(expired == cart_recs(c, FLASH_REC_EXPIRE), "state %u, %d EXPIRE records per line", st,
	      cart_recs(c, FLASH_REC_EXPIRE));
	cart_units(h, c, !expired);
	if (!c->crashed)
		CHECK(expired && c->out.rc == FLASH_OK && c->out.v[0] == 6, "completed expiry: %s, state %u, units %llu",
		      flash_rcname(c->out.rc), st, (unsigned long long)c->out.v[0]);
	CHECK_RC(flash_confirm(h, c->order_no), FLASH_EEXPIRED);   /* settles it if not yet */
	CHECK_RC(flash_expire(h, c->order_no, &units), FLASH_EEXPIRED);
	CHECK(units == 0, "a second expiry returned %u units", units);
	cart_state(h, c, FLASH_ORDER_EXPIRED, FLASH_ORDER_EXPIRED);
	cart_units(h, c, 0);
}

/* ------------------------------------------------------------------ restock */

static void setup_restock(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 7, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 7, 70, 3, 3), FLASH_OK);
	c->act = 7;
	c->sku = 70;
}

static int run_restock_plus(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_restock(h, c->act, c->sku, 5);
}

static int run_restock_minus(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_restock(h, c->act, c->sku, -2);   /* one unit from each of two shards */
}

static void verify_restock(flash_t *h, struct ctx *c, int64_t delta)
{
	int done = rec_count(c, FLASH_REC_RESTOCK, c->act, c->sku);
	struct flash_sku_info si;

	CHECK(done == 0 || done == 1, "%d RESTOCK records", done);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(done == 1, "completed restock without its record");
	}
	CHECK_RC(flash_sku_get(h, c->act, c->sku, &si), FLASH_OK);
	CHECK((int64_t)si.total == 3 + (done ? delta : 0) && (int64_t)si.available == (int64_t)si.total,
	      "total %llu available %llu after restock %lld (%s)", (unsigned long long)si.total,
	      (unsigned long long)si.available, (long long)delta, done ? "committed" : "rolled back");
	/* retry */
	if (delta < 0 && done)
		CHECK_RC(flash_restock(h, c->act, c->sku, delta), FLASH_ESOLD_OUT);
	else
		CHECK_RC(flash_restock(h, c->act, c->sku, delta), FLASH_OK);
}

static void verify_restock_plus(flash_t *h, struct ctx *c)
{
	verify_restock(h, c, 5);
}

static void verify_restock_minus(flash_t *h, struct ctx *c)
{
	verify_restock(h, c, -2);
}

/* ------------------------------------------------------------------ tokens */

static void setup_token(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 8, 1, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 8, 80, 5, 1), FLASH_OK);
	c->act = 8;
	c->sku = 80;
	c->user = 8001;
}

static void setup_token_redeem(flash_t *h, struct ctx *c)
{
	setup_token(h, c);
	c->token = issue(h, 8, 80, 8001);
}

static int run_token_issue(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_token_issue(h, c->act, c->sku, c->user, 600000, &o->v[0]);
}

static int run_token_redeem(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_token_redeem(h, c->act, c->sku, c->user, c->token);
}

static void verify_token_issue(flash_t *h, struct ctx *c)
{
	struct flash_stats st;
	uint64_t t;

	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(st.tokens == 1, "%u live tokens after one issue", st.tokens);
		CHECK_RC(order(h, c->act, c->sku, c->user, 1, c->out.v[0], 0, NULL), FLASH_OK);
	} else {
		/* never handed out: a half-issued entry is retired, not left live */
		CHECK(st.tokens == 0, "%u live tokens after a killed issue", st.tokens);
		t = issue(h, c->act, c->sku, c->user);
		CHECK_RC(order(h, c->act, c->sku, c->user, 1, t, 0, NULL), FLASH_OK);
	}
	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	CHECK(st.tokens == 0, "%u live tokens after the order used it", st.tokens);
}

static void verify_token_redeem(flash_t *h, struct ctx *c)
{
	/* A redeem holds the token (PEND) until its last step moves it to USED;
	 * every crash point lies before that step, so a killed redeem is undone
	 * by recovery -- like an order that died before its commit point -- and
	 * the token redeems again.  Used iff the redeem returned. */
	int used = !c->crashed;
	struct flash_stats st;

	if (!c->crashed)
		CHECK_RC(c->out.rc, FLASH_OK);
	CHECK_RC(flash_token_redeem(h, c->act, c->sku, c->user, c->token),
	         used ? FLASH_EBAD_TOKEN : FLASH_OK);
	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	CHECK(st.tokens == 0, "%u live tokens counted after the token was used", st.tokens);
	/* the table still issues and redeems */
	{
		uint64_t t = issue(h, c->act, c->sku, c->user);

		CHECK_RC(flash_token_redeem(h, c->act, c->sku, c->user, t), FLASH_OK);
	}
}

/* ------------------------------------------------------------------ locks */

#define LOCK "sale-42"

static void setup_lock_none(flash_t *h, struct ctx *c)
{
	c->fence = 0;
}

static void setup_lock_used(flash_t *h, struct ctx *c)
{
	CHECK_RC(flash_lock_acquire(h, LOCK, 3, 60000, &c->fence), FLASH_OK);
	CHECK_RC(flash_lock_release(h, LOCK, 3), FLASH_OK);
}

static int run_lock_acquire(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_lock_acquire(h, LOCK, 7, 60000, &o->v[0]);
}

static int run_lock_renew(flash_t *h, struct ctx *c, struct child_out *o)
{
	int rc = flash_lock_acquire(h, LOCK, 7, 60000, &o->v[0]);

	if (rc != FLASH_OK)
		return 100;
	arm(c->n);
	return flash_lock_renew(h, LOCK, 7, 60000);
}

static int run_lock_release(flash_t *h, struct ctx *c, struct child_out *o)
{
	int rc = flash_lock_acquire(h, LOCK, 7, 60000, &o->v[0]);

	if (rc != FLASH_OK)
		return 100;
	arm(c->n);
	return flash_lock_release(h, LOCK, 7);
}

/* A lock whose taker died is free at once; fences only grow; one name, one entry. */
static void verify_lock(flash_t *h, struct ctx *c)
{
	uint64_t f = 0;
	struct flash_stats st;

	if (!c->crashed)
		CHECK_RC(c->out.rc, FLASH_OK);
	CHECK_RC(flash_lock_acquire(h, LOCK, 9, 60000, &f), FLASH_OK);
	CHECK(f > c->fence, "fence %llu not above the earlier %llu", (unsigned long long)f,
	      (unsigned long long)c->fence);
	if (!c->crashed || c->out.v[0] != 0)
		CHECK(f > c->out.v[0], "fence %llu not above the dead holder's %llu",
		      (unsigned long long)f, (unsigned long long)c->out.v[0]);
	CHECK_RC(flash_lock_renew(h, LOCK, 9, 60000), FLASH_OK);
	CHECK_RC(flash_lock_acquire(h, LOCK, 10, 60000, &f), FLASH_ELOCKED);
	CHECK_RC(flash_lock_release(h, LOCK, 9), FLASH_OK);
	CHECK_RC(flash_lock_release(h, LOCK, 9), FLASH_ENOT_OWNER);
	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	CHECK(st.locks == 1, "%u lock names after using one", st.locks);
}

/* ------------------------------------------------------------------ catalog */

static void setup_nothing(flash_t *h, struct ctx *c)
{
}

static void setup_act9(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 9, 1, 0), FLASH_OK);
}

static int run_activity_add(flash_t *h, struct ctx *c, struct child_out *o)
{
	return add_act(h, 9, 1, 0);
}

static int run_sku_add(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_sku_add(h, 9, 90, 7, 3);
}

static void verify_catalog(flash_t *h, struct ctx *c, int sku)
{
	struct flash_activity a;
	struct flash_sku_info si;
	struct flash_stats st;
	int exists, nrec;

	if (!sku) {
		exists = flash_activity_at(h, 0, &a) == FLASH_OK && a.id == 9;
		nrec = rec_count(c, FLASH_REC_ACTIVITY, 9, 0);
	} else {
		exists = flash_sku_get(h, 9, 90, &si) == FLASH_OK;
		nrec = rec_count(c, FLASH_REC_SKU, 9, 90);
	}
	CHECK(nrec == exists, "%s exists %d with %d records", sku ? "sku" : "activity", exists, nrec);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(exists, "completed add, entry missing");
	}
	if (!sku) {
		CHECK_RC(add_act(h, 9, 1, 0), exists ? FLASH_EEXIST : FLASH_OK);
		CHECK_RC(flash_sku_add(h, 9, 90, 7, 3), FLASH_OK);
	} else {
		CHECK_RC(flash_sku_add(h, 9, 90, 7, 3), exists ? FLASH_EEXIST : FLASH_OK);
	}
	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	CHECK(st.activities == 1 && st.skus == 1 && st.shards == 3,
	      "catalog %u activities %u skus %u shards, want 1 1 3", st.activities, st.skus, st.shards);
	CHECK_RC(flash_sku_get(h, 9, 90, &si), FLASH_OK);
	CHECK(si.total == 7 && si.available == 7, "sku total %llu available %llu",
	      (unsigned long long)si.total, (unsigned long long)si.available);
	CHECK_RC(order(h, 9, 90, 9001, 1, 0, 0, NULL), FLASH_OK);
}

static void verify_activity_add(flash_t *h, struct ctx *c)
{
	verify_catalog(h, c, 0);
}

static void verify_sku_add(flash_t *h, struct ctx *c)
{
	verify_catalog(h, c, 1);
}

/* ------------------------------------------------------------------ terms */

/* Activity 9 (K 1, max_qty 4) with sku 90 (7 units over 3 shards), one
 * order of user 9001 placed. */
static void setup_terms(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 9, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 9, 90, 7, 3), FLASH_OK);
	CHECK_RC(order(h, 9, 90, 9001, 1, 0, 0, NULL), FLASH_OK);
}

/* The new terms: K 2, max_qty 2, quota back on cancel. */
static struct flash_activity terms_new(flash_t *h)
{
	struct flash_activity a;

	memset(&a, 0, sizeof a);
	if (flash_activity_get(h, 9, &a) == FLASH_OK) {
		a.limit_per_user = 2;
		a.max_qty = 2;
		a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA;
	}
	return a;
}

static int run_terms_update(flash_t *h, struct ctx *c, struct child_out *o)
{
	struct flash_activity a = terms_new(h);

	return flash_activity_update(h, &a, NULL);
}

static int run_price_set(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_sku_price_set(h, 9, 90, 1234, NULL);
}

/* The last record of @p type (flags & @p flags) for activity 9 (sku 90). */
static const struct flash_record *terms_rec(const struct ctx *c, uint16_t type, int *n)
{
	const struct flash_record *last = NULL;

	*n = 0;
	for (size_t i = 0; i < c->nrec; i++) {
		const struct flash_record *r = &c->rec[i];

		if (r->type == type && r->activity_id == 9 &&
		    (type == FLASH_REC_PRICE ? r->sku_id == 90 : (r->flags & 1u) != 0)) {
			last = r;
			(*n)++;
		}
	}
	return last;
}

/*
 * The terms are wholly the old ones with no record, or wholly the new ones
 * with exactly one record carrying their version; then the retry changes
 * them (again), the version moves on, an order naming the old one is
 * refused FLASH_ESTALE taking nothing and one naming the new one sells.
 */
static void verify_terms(flash_t *h, struct ctx *c, int price)
{
	const struct flash_record *r;
	struct flash_activity a;
	struct flash_sku_info si;
	uint64_t v_before, v;
	int n;

	CHECK_RC(flash_activity_get(h, 9, &a), FLASH_OK);
	CHECK_RC(flash_sku_get(h, 9, 90, &si), FLASH_OK);
	r = terms_rec(c, price ? FLASH_REC_PRICE : FLASH_REC_ACTIVITY, &n);
	CHECK(n <= 1, "%d records of one change", n);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(n == 1, "a completed change without its record");
	}
	if (price) {
		v_before = si.version;
		if (n == 1 && r != NULL)
			CHECK(si.price == 1234 && si.version == r->order_no && r->value == 1234,
			      "price %llu version %llu, the record says 1234 version %llu",
			      (unsigned long long)si.price, (unsigned long long)si.version,
			      (unsigned long long)r->order_no);
		else
			CHECK(si.price == 0, "price %llu without a PRICE record", (unsigned long long)si.price);
		CHECK_RC(flash_sku_price_set(h, 9, 90, 1234, &v), FLASH_OK);
	} else {
		v_before = a.version;
		if (n == 1 && r != NULL)
			CHECK(a.limit_per_user == 2 && a.max_qty == 2 && a.flags == FLASH_ACT_CANCEL_RETURNS_QUOTA &&
			      a.version == r->order_no,
			      "terms K %u max_qty %u flags %u version %llu, the record says K 2 max_qty 2 version %llu",
			      a.limit_per_user, a.max_qty, a.flags, (unsigned long long)a.version,
			      (unsigned long long)r->order_no);
		else
			CHECK(a.limit_per_user == 1 && a.max_qty == 4 && a.flags == 0,
			      "terms K %u max_qty %u flags %u without an update record", a.limit_per_user, a.max_qty,
			      a.flags);
		a = terms_new(h);
		CHECK_RC(flash_activity_update(h, &a, &v), FLASH_OK);
	}
	CHECK(v > v_before, "retry's version %llu not above %llu", (unsigned long long)v,
	      (unsigned long long)v_before);
	{
		struct flash_order_req q = { .activity_id = 9, .sku_id = 90, .user_id = 9002, .qty = 1 };
		struct flash_order_res res;

		if (price)
			q.sku_version = v_before;
		else
			q.activity_version = v_before;
		CHECK_RC(flash_order(h, &q, &res), FLASH_ESTALE);
		CHECK_RC(flash_sku_get(h, 9, 90, &si), FLASH_OK);
		CHECK(si.available == 6, "a stale order took units: %llu available", (unsigned long long)si.available);
		if (price)
			q.sku_version = v;
		else
			q.activity_version = v;
		CHECK_RC(flash_order(h, &q, &res), FLASH_OK);
	}
	/* the new limit (2) holds for the user of the setup's order */
	if (!price)
		CHECK_RC(order(h, 9, 90, 9001, 1, 0, 0, NULL), FLASH_OK);
}

static void verify_terms_update(flash_t *h, struct ctx *c)
{
	verify_terms(h, c, 0);
}

static void verify_price_set(flash_t *h, struct ctx *c)
{
	verify_terms(h, c, 1);
}

/* ------------------------------------------------------------------ archive */

/*
 * Activity 14 has ended: two skus (3 shards and 1), three orders, one of
 * them cancelled, two live tokens.  Activity 15 sells on (one order).  The
 * window is closed by moving its end into the past (the test's own clock
 * shift: no wait).
 */
static void setup_archive(flash_t *h, struct ctx *c)
{
	struct flash_order_res res;
	uint32_t ai = 0;

	CHECK_RC(add_act(h, 14, 2, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 14, 140, 9, 3), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 14, 141, 5, 1), FLASH_OK);
	CHECK_RC(add_act(h, 15, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 15, 150, 5, 1), FLASH_OK);
	CHECK_RC(order(h, 14, 140, 1401, 1, 0, 0, NULL), FLASH_OK);
	CHECK_RC(order(h, 14, 141, 1402, 2, 0, 0, &res), FLASH_OK);
	CHECK_RC(flash_cancel(h, res.order_no, NULL), FLASH_OK);
	CHECK_RC(order(h, 14, 140, 1403, 1, 0, 0, NULL), FLASH_OK);
	CHECK_RC(order(h, 15, 150, 1501, 1, 0, 0, &res), FLASH_OK);
	c->order_no = res.order_no;
	(void)issue(h, 14, 140, 1404);
	(void)issue(h, 14, 141, 1405);
	if (fs_act_find(h, 14, &ai) != NULL)
		h->act[ai].t[0].end_ns = h->act[ai].t[1].end_ns = h->act[ai].t[0].start_ns + 1;
	c->act = 14;
}

static int run_archive(flash_t *h, struct ctx *c, struct child_out *o)
{
	struct flash_archive_info info;
	int rc = flash_archive(h, c->act, 0, &info);

	o->v[0] = info.orders;
	o->v[1] = (uint64_t)info.skus << 32 | info.shards;
	return rc;
}

/* Activity 14 wholly gone: no entry, index word, sku, shard or order slot;
 * its id remembered. */
static void check_archived(flash_t *h, struct ctx *c)
{
	struct flash_sku_info si;
	struct flash_order_info oi;
	uint32_t owned = 0;

	CHECK(fs_act_find(h, 14, NULL) == NULL, "archived activity 14 still found");
	CHECK_RC(flash_sku_get(h, 14, 140, &si), FLASH_ENOT_FOUND);
	CHECK_RC(flash_sku_get(h, 14, 141, &si), FLASH_ENOT_FOUND);
	for (uint32_t i = 0; i < h->ord_cap; i++)
		CHECK(FS_KIND(h->ord[i].state) == FS_K_EMPTY || FS_KIND(h->ord[i].state) == FS_K_FREE ||
		      h->ord[i].activity_id != 14, "order slot %u of activity 14 still held", i);
	for (uint32_t i = 0; i < h->hdr->n_shard; i++)
		owned += h->shard[i].owner != 0;
	CHECK(owned == 1, "%u shards owned, want 1 (activity 15's)", owned);
	for (uint32_t i = 0; i <= h->tok_mask; i++)
		CHECK(FS_KIND(h->tok[i].state) != FS_K_FREE || h->tok[i].activity_id != 14,
		      "token entry %u of activity 14 still live", i);
	CHECK_RC(flash_archive(h, 14, 0, NULL), FLASH_ENOT_FOUND);
	CHECK_RC(order(h, 14, 140, 1409, 1, 0, 0, NULL), FLASH_ENOT_FOUND);
	CHECK_RC(flash_activity_id_check(h, 14), FLASH_EARCHIVED);   /* remembered */
	/* the other activity untouched */
	CHECK_RC(flash_order_get(h, c->order_no, &oi), FLASH_OK);
	CHECK(oi.state == FLASH_ORDER_ACTIVE && oi.activity_id == 15, "activity 15's order: state %u",
	      oi.state);
}

static void verify_archive(flash_t *h, struct ctx *c)
{
	int archived = rec_archived(c, 14);
	const struct fs_act *a = fs_act_find(h, 14, NULL);

	/* whole (live or marked) without the record, gone with it */
	CHECK(archived == (a == NULL), "archive record %d, activity entry %s", archived,
	      a ? "present" : "gone");
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(c->out.v[0] == 3 && c->out.v[1] == (2ull << 32 | 4),
		      "completed archive freed %llu orders, skus<<32|shards %llx",
		      (unsigned long long)c->out.v[0], (unsigned long long)c->out.v[1]);
	}
	if (!archived) {
		struct flash_archive_info info;

		/* the retry finishes it, from the mark if there is one */
		CHECK_RC(flash_archive(h, 14, 0, &info), FLASH_OK);
		CHECK(info.orders == 3 && info.skus == 2 && info.shards == 4,
		      "retried archive freed %llu orders %u skus %u shards",
		      (unsigned long long)info.orders, info.skus, info.shards);
		CHECK_RC(drain_all(h, c), FLASH_OK);
	}
	check_archived(h, c);
	/* its id is remembered, whichever step the archiver died in: never an
	 * activity again; a new id serves a new activity in the freed entries */
	CHECK_RC(add_act(h, 14, 1, 0), FLASH_EARCHIVED);
	CHECK_RC(add_act(h, 16, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 16, 140, 4, 2), FLASH_OK);
	CHECK_RC(order(h, 16, 140, 1410, 1, 0, 0, NULL), FLASH_OK);
}

/* The same activity archived by replaying its WAL record (a rebuild). */
static void setup_replay_archive(flash_t *h, struct ctx *c)
{
	struct flash_record *r = &c->rep[0];

	setup_archive(h, c);
	memset(r, 0, sizeof *r);
	r->type = FLASH_REC_ARCHIVE;
	r->activity_id = 14;
	r->order_no = 3;
	r->qty = 2;
	r->value = 4;
	r->ts_ns = (int64_t)time(NULL) * 1000000000;
	c->nrep = 1;
}

static void verify_replay_archive(flash_t *h, struct ctx *c)
{
	int gone = fs_act_find(h, 14, NULL) == NULL;

	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(gone, "completed replay of the archive, activity 14 still there");
	}
	/* re-applied (the rebuild restarted): finished, or already done */
	CHECK_RC(flash_replay(h, &c->rep[0]), gone ? FLASH_EEXIST : FLASH_OK);
	replayed_to_ledger(h, c);
	check_archived(h, c);
}

/* ------------------------------------------------------------------ attach */

static int run_nothing(flash_t *h, struct ctx *c, struct child_out *o)
{
	return FLASH_OK;
}

static void verify_attach(flash_t *h, struct ctx *c)
{
	flash_t *h2 = NULL;
	struct flash_stats st;

	CHECK_RC(flash_open(c->name, 0, &h2), FLASH_OK);
	if (h2) {
		CHECK(flash_slot(h2) != flash_slot(h), "two handles in one slot");
		CHECK_RC(add_act(h2, 12, 1, 0), FLASH_OK);
		CHECK_RC(flash_close(h2), FLASH_OK);
	}
	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	CHECK(st.activities == 2, "%u activities, want 2", st.activities);
}

/* ------------------------------------------------------------------ replay */

/* The WAL's record of order 7: re-applied after a reboot, it keeps its number. */
static void setup_replay_order(flash_t *h, struct ctx *c)
{
	struct flash_record *r = &c->rep[0];

	CHECK_RC(add_act(h, 11, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 11, 110, 3, 3), FLASH_OK);
	memset(r, 0, sizeof *r);
	r->type = FLASH_REC_ORDER;
	r->activity_id = 11;
	r->sku_id = 110;
	r->qty = 2;                      /* from two shards */
	r->order_no = 7;
	r->user_id = 6001;
	r->ts_ns = (int64_t)time(NULL) * 1000000000;
	r->limit_slot = 1;
	r->request_id = 6100;
	c->nrep = 1;
	c->act = 11;
	c->sku = 110;
	c->user = 6001;
	c->qty = 2;
	c->req = 6100;
	c->order_no = 7;
}

static void setup_replay_cancel(flash_t *h, struct ctx *c)
{
	struct flash_record *r = &c->rep[1];

	setup_replay_order(h, c);
	CHECK_RC(flash_replay(h, &c->rep[0]), FLASH_OK);
	*r = c->rep[0];
	r->type = FLASH_REC_CANCEL;
	r->request_id = 0;
	c->nrep = 2;
}

static int run_replay_last(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_replay(h, &c->rep[c->nrep - 1]);
}

static void verify_replay(flash_t *h, struct ctx *c)
{
	const struct flash_record *last = &c->rep[c->nrep - 1];
	struct flash_order_info oi;
	struct flash_order_res res;
	struct flash_sku_info si;
	int applied, rc;

	memset(&oi, 0, sizeof oi);
	rc = flash_order_get(h, 7, &oi);
	/* before the replay took number 7, the number does not exist yet */
	CHECK(rc == FLASH_OK || (rc == FLASH_ENOT_FOUND && last->type == FLASH_REC_ORDER),
	      "flash_order_get(7): %s", flash_rcname(rc));
	if (last->type == FLASH_REC_ORDER) {
		CHECK(oi.state == FLASH_ORDER_NONE || oi.state == FLASH_ORDER_ACTIVE,
		      "replayed order in state %u", oi.state);
		applied = oi.state == FLASH_ORDER_ACTIVE;
		if (applied)
			CHECK(oi.user_id == 6001 && oi.qty == 2 && oi.limit_slot == 1,
			      "replayed order differs from its record");
	} else {
		CHECK(oi.state == FLASH_ORDER_ACTIVE || oi.state == FLASH_ORDER_CANCELLED,
		      "order of a replayed cancel in state %u", oi.state);
		applied = oi.state == FLASH_ORDER_CANCELLED;
	}
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(applied, "completed replay without its effect");
	}
	/* replaying the record again: exactly once */
	CHECK_RC(flash_replay(h, last), applied ? FLASH_EEXIST : FLASH_OK);
	/* the order's request id answers with its number; the user is at K */
	memset(&res, 0, sizeof res);
	CHECK_RC(order(h, 11, 110, 6001, 2, 0, 6100, &res), FLASH_EDUPLICATE);
	CHECK(res.first_rc == FLASH_OK && res.order_no == 7, "request id of the replayed order: %s %llu",
	      flash_rcname(res.first_rc), (unsigned long long)res.order_no);
	CHECK_RC(order(h, 11, 110, 6001, 1, 0, 0, NULL), FLASH_ELIMIT);
	CHECK_RC(flash_sku_get(h, 11, 110, &si), FLASH_OK);
	CHECK(si.available == (last->type == FLASH_REC_ORDER ? 1u : 3u),
	      "available %llu after the replay", (unsigned long long)si.available);
}

static flash_t *fresh(struct ctx *c);
static void finish(flash_t *h, struct ctx *c);

/* ------------------------------------------------------------------ plain order, close */

/* No token, no request id, one shard. */
static void setup_order_plain(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 19, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 19, 190, 3, 1), FLASH_OK);
	c->act = 19;
	c->sku = 190;
	c->user = 19001;
	c->qty = 1;
}

static void verify_order_plain(flash_t *h, struct ctx *c)
{
	int n = rec_count(c, FLASH_REC_ORDER, c->act, c->sku);

	CHECK(n <= 1, "%d ORDER records for one order", n);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(n == 1, "completed order without its record");
	}
	/* committed: the user is at K; rolled back: the order goes through */
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, 0, 0, NULL), n ? FLASH_ELIMIT : FLASH_OK);
}

static int run_close(flash_t *h, struct ctx *c, struct child_out *o)
{
	int rc = flash_close(h);

	g_child_handle = NULL;
	return rc;
}

static void verify_close(flash_t *h, struct ctx *c)
{
	if (!c->crashed)
		CHECK_RC(c->out.rc, FLASH_OK);
	verify_attach(h, c);
}

/* ------------------------------------------------------------------ reservations */

/* Reserve @p qty for @p user, to be paid within @p ms. */
static int reserve_order(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint32_t qty, uint32_t ms,
                         struct flash_order_res *res)
{
	struct flash_order_req r;

	memset(&r, 0, sizeof r);
	r.activity_id = act;
	r.sku_id = sku;
	r.user_id = user;
	r.qty = qty;
	r.reserve_ms = ms;
	return flash_order(h, &r, res);
}

/* Activity @p act (K 1, @p flags), sku act * 10 of 4 units; with @p ms, a
 * reservation of 2 units of user 3001 to be paid within @p ms, and, for a
 * short one, its pay-by time passed. */
static void setup_resv(flash_t *h, struct ctx *c, uint32_t act, uint32_t flags, uint32_t ms)
{
	struct flash_order_res res;

	CHECK_RC(add_act(h, act, 1, flags), FLASH_OK);
	CHECK_RC(flash_sku_add(h, act, act * 10, 4, 2), FLASH_OK);
	c->act = act;
	c->sku = act * 10;
	c->user = 3001;
	c->qty = 2;
	if (ms == 0)
		return;
	CHECK_RC(reserve_order(h, act, act * 10, 3001, 2, ms, &res), FLASH_OK);
	c->order_no = res.order_no;
	if (ms < 100)
		usleep((ms + 2) * 1000);
}

static void setup_reserve(flash_t *h, struct ctx *c) { setup_resv(h, c, 31, 0, 0); }
static void setup_confirm(flash_t *h, struct ctx *c) { setup_resv(h, c, 32, 0, 3600000); }
static void setup_expire(flash_t *h, struct ctx *c) { setup_resv(h, c, 33, FLASH_ACT_CANCEL_RETURNS_QUOTA, 1); }
static void setup_late(flash_t *h, struct ctx *c) { setup_resv(h, c, 34, 0, 1); }
static void setup_cancel_resv(flash_t *h, struct ctx *c) { setup_resv(h, c, 35, 0, 3600000); }

static int run_reserve(flash_t *h, struct ctx *c, struct child_out *o)
{
	return reserve_order(h, c->act, c->sku, c->user, c->qty, 3600000, &o->res);
}

static int run_confirm(flash_t *h, struct ctx *c, struct child_out *o)
{
	(void)o;
	return flash_confirm(h, c->order_no);
}

static int run_expire(flash_t *h, struct ctx *c, struct child_out *o)
{
	uint32_t units = 0;
	int rc = flash_expire(h, c->order_no, &units);

	o->v[0] = units;
	return rc;
}

/* The state of order @p no, checked to be one of the two @p a, @p b. */
static uint32_t resv_state(flash_t *h, uint64_t no, uint32_t a, uint32_t b)
{
	struct flash_order_info oi;

	CHECK_RC(flash_order_get(h, no, &oi), FLASH_OK);
	CHECK(oi.state == a || oi.state == b, "order %llu in state %u, not %u or %u", (unsigned long long)no,
	      oi.state, a, b);
	return oi.state;
}

static void verify_reserve(flash_t *h, struct ctx *c)
{
	struct flash_order_info oi;
	int n = rec_count(c, FLASH_REC_ORDER, c->act, c->sku);

	CHECK(n <= 1, "%d ORDER records for one reservation", n);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(n == 1, "completed reservation without its record");
		CHECK_RC(flash_order_get(h, c->out.res.order_no, &oi), FLASH_OK);
		CHECK(oi.state == FLASH_ORDER_RESERVED && oi.pay_by_ns > 0, "completed reservation: state %u",
		      oi.state);
	}
	/* placed: the user is at K; rolled back: the order goes through */
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, 0, 0, NULL), n ? FLASH_ELIMIT : FLASH_OK);
}

static void verify_confirm(flash_t *h, struct ctx *c)
{
	uint32_t st = resv_state(h, c->order_no, FLASH_ORDER_RESERVED, FLASH_ORDER_ACTIVE);

	CHECK((st == FLASH_ORDER_ACTIVE) == rec_count(c, FLASH_REC_CONFIRM, c->act, c->sku),
	      "state %u, %d CONFIRM records", st, rec_count(c, FLASH_REC_CONFIRM, c->act, c->sku));
	if (!c->crashed)
		CHECK(c->out.rc == FLASH_OK && st == FLASH_ORDER_ACTIVE, "completed confirm: %s, state %u",
		      flash_rcname(c->out.rc), st);
	/* the payment callback again: confirmed once */
	CHECK_RC(flash_confirm(h, c->order_no), FLASH_OK);
	CHECK_RC(flash_expire(h, c->order_no, NULL), FLASH_ECONFIRMED);
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, 0, 0, NULL), FLASH_ELIMIT);
}

/* An expiry (or a confirm too late, which expires it): EXPIRED with its
 * units back once, or still RESERVED and due -- then expired by the retry. */
static void verify_expired(flash_t *h, struct ctx *c)
{
	const struct fs_act *a = fs_act_find(h, c->act, NULL);
	int quota = a && (fs_act_t(a, a->state)->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA);
	uint32_t units = 99;
	uint32_t st = resv_state(h, c->order_no, FLASH_ORDER_RESERVED, FLASH_ORDER_EXPIRED);
	int expired = st == FLASH_ORDER_EXPIRED;

	CHECK(expired == rec_count(c, FLASH_REC_EXPIRE, c->act, c->sku), "state %u, %d EXPIRE records", st,
	      rec_count(c, FLASH_REC_EXPIRE, c->act, c->sku));
	CHECK(rec_count(c, FLASH_REC_CONFIRM, c->act, c->sku) == 0, "a CONFIRM record for a reservation due");
	if (!c->crashed)
		CHECK(expired && (c->sc->run == run_expire ? c->out.rc == FLASH_OK && c->out.v[0] == 2
		                                            : c->out.rc == FLASH_EEXPIRED),
		      "completed: %s, state %u, units %llu", flash_rcname(c->out.rc), st,
		      (unsigned long long)c->out.v[0]);
	CHECK_RC(flash_confirm(h, c->order_no), FLASH_EEXPIRED);          /* settles it if not yet */
	CHECK_RC(flash_expire(h, c->order_no, &units), FLASH_EEXPIRED);
	CHECK(units == 0, "a second expiry returned %u units", units);
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, 0, 0, NULL), quota ? FLASH_OK : FLASH_ELIMIT);
}

static void verify_cancel_resv(flash_t *h, struct ctx *c)
{
	uint32_t st = resv_state(h, c->order_no, FLASH_ORDER_RESERVED, FLASH_ORDER_CANCELLED);
	int cancelled = st == FLASH_ORDER_CANCELLED;

	CHECK(cancelled == rec_count(c, FLASH_REC_CANCEL, c->act, c->sku), "state %u, %d CANCEL records", st,
	      rec_count(c, FLASH_REC_CANCEL, c->act, c->sku));
	for (size_t i = 0; i < c->nrec; i++)
		if (c->rec[i].type == FLASH_REC_CANCEL)
			CHECK(c->rec[i].flags == 2, "the CANCEL of an unpaid reservation has flags %u",
			      c->rec[i].flags);
	if (!c->crashed)
		CHECK(c->out.rc == FLASH_OK && cancelled && c->out.v[0] == 2, "completed cancel: %s, state %u",
		      flash_rcname(c->out.rc), st);
	CHECK_RC(flash_confirm(h, c->order_no), cancelled ? FLASH_ECANCELLED : FLASH_OK);
}

/* An order of a user whose only limit slot a due reservation holds: it
 * settles (expires) the reservation, then places itself (token + request
 * id: neither may be burnt by the first pass). */
static void setup_settle(flash_t *h, struct ctx *c)
{
	setup_resv(h, c, 36, FLASH_ACT_CANCEL_RETURNS_QUOTA, 1);
	c->qty = 1;
	c->req = 3601;
	c->token = issue(h, 36, 360, 3001);
}

static void verify_settle(flash_t *h, struct ctx *c)
{
	uint64_t ono = rec_order_by_req(c, c->req);
	uint32_t st = resv_state(h, c->order_no, FLASH_ORDER_RESERVED, FLASH_ORDER_EXPIRED);

	CHECK(!ono || st == FLASH_ORDER_EXPIRED, "order %llu placed while the reservation is still %u",
	      (unsigned long long)ono, st);
	verify_order_ok(h, c);          /* its retry settles the reservation if the crash left it */
	resv_state(h, c->order_no, FLASH_ORDER_EXPIRED, FLASH_ORDER_EXPIRED);
}

/* ------------------------------------------------------------------ a batch (flash_order_many) */

/*
 * Three orders in one call: user A (request id 6001), user B who holds the
 * activity's limit already (refused, no request id), user C (request id
 * 6003).  Each order is its own commit point, in the order given: at any
 * kill, A's and C's each stand whole (record, ACTIVE order, the request id
 * answering EDUPLICATE) or are wholly undone (the retry places it), and C
 * never stands without A.
 */
#define MANY_A 6101u
#define MANY_B 6102u
#define MANY_C 6103u

static void setup_order_many(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 21, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 21, 210, 5, 2), FLASH_OK);
	CHECK_RC(order(h, 21, 210, MANY_B, 1, 0, 0, NULL), FLASH_OK);
	c->act = 21;
	c->sku = 210;
	c->qty = 1;
}

static int run_order_many(flash_t *h, struct ctx *c, struct child_out *o)
{
	struct flash_order_req r[3];

	memset(r, 0, sizeof r);
	for (int i = 0; i < 3; i++) {
		r[i].activity_id = c->act;
		r[i].sku_id = c->sku;
		r[i].qty = 1;
	}
	r[0].user_id = MANY_A;
	r[0].request_id = 6001;
	r[1].user_id = MANY_B;
	r[2].user_id = MANY_C;
	r[2].request_id = 6003;
	return flash_order_many(h, r, 3, o->mres, o->rcs);
}

static void verify_order_many(flash_t *h, struct ctx *c)
{
	const uint64_t users[2] = { MANY_A, MANY_C }, reqs[2] = { 6001, 6003 };
	uint64_t ono[2];

	for (int i = 0; i < 2; i++)
		ono[i] = rec_order_by_req(c, reqs[i]);
	CHECK(ono[1] == 0 || ono[0] != 0, "the batch's third order stands without its first");
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK_RC(c->out.rcs[0], FLASH_OK);
		CHECK_RC(c->out.rcs[1], FLASH_ELIMIT);
		CHECK_RC(c->out.rcs[2], FLASH_OK);
		CHECK(ono[0] == c->out.mres[0].order_no && ono[1] == c->out.mres[2].order_no,
		      "completed batch: orders %llu %llu, records %llu %llu",
		      (unsigned long long)c->out.mres[0].order_no,
		      (unsigned long long)c->out.mres[2].order_no, (unsigned long long)ono[0],
		      (unsigned long long)ono[1]);
	}
	CHECK_RC(order(h, c->act, c->sku, MANY_B, 1, 0, 0, NULL), FLASH_ELIMIT);
	for (int i = 0; i < 2; i++) {
		struct flash_order_res res;
		int rc;

		if (ono[i] != 0) {
			struct flash_order_info oi;

			CHECK_RC(flash_order_get(h, ono[i], &oi), FLASH_OK);
			CHECK(oi.state == FLASH_ORDER_ACTIVE && oi.user_id == users[i],
			      "committed order %llu reads state %u user %llu", (unsigned long long)ono[i],
			      oi.state, (unsigned long long)oi.user_id);
		}
		/* the client retries each order with its request id */
		memset(&res, 0, sizeof res);
		rc = order(h, c->act, c->sku, users[i], 1, 0, reqs[i], &res);
		if (ono[i] != 0) {
			CHECK_RC(rc, FLASH_EDUPLICATE);
			CHECK(res.first_rc == FLASH_OK && res.order_no == ono[i],
			      "retry: first_rc %d order %llu, want OK %llu", res.first_rc,
			      (unsigned long long)res.order_no, (unsigned long long)ono[i]);
		} else {
			CHECK_RC(rc, FLASH_OK);   /* rolled back: quota and request id free */
		}
	}
}

/* ------------------------------------------------------------------ another slot mid-operation */

enum { HELP_ORDER = 1, HELP_LOCK = 2 };

/*
 * Start a helper: another process that attaches and runs an order (or a
 * lock acquire) and stops (SIGSTOP): an order at its first store after its
 * first store into the shard region (its stock CAS done, the order not
 * committed); an acquire at its first store into the lock region, the
 * grant's CAS, before it happens (the lock read as free, not yet taken:
 * the window in which a fence taken apart from the grant went backwards).
 * It is left there, alive, for the operation under test to meet.
 */
static void helper_start(flash_t *h, struct ctx *c, int what)
{
	int region = what == HELP_ORDER ? FS_R_SHARD : FS_R_LOCK;
	uint64_t lo = h->hdr->fx.region[region].off, hi = lo + h->hdr->fx.region[region].size;
	int status;
	pid_t pid;

	memset(g_help, 0, sizeof *g_help);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		flash_t *hh = NULL;

		st_init(c->name, &g_help->st);
		st_track(h->base, h->size);
		if (flash_open(c->name, 0, &hh) != FLASH_OK)
			_exit(3);
		st_stop_flag(&g_help->die);
		st_arm(1, what == HELP_ORDER ? ST_STOP : ST_STOP | ST_IN, FLASH_CRASH_EXIT, lo, hi);
		if (what == HELP_ORDER)
			g_help->rc = order(hh, 13, 130, 13001, 1, 0, 0, &g_help->res);
		else
			g_help->rc = flash_lock_acquire(hh, LOCK, 5, 60000, &g_help->v[0]);
		g_help->hits = 1;
		st_disarm();
		_exit(0);
	}
	while (waitpid(pid, &status, WUNTRACED) < 0)
		if (errno != EINTR) {
			perror("waitpid");
			exit(2);
		}
	if (!WIFSTOPPED(status)) {
		CHECK(0, "helper did not stop in mid-operation (status 0x%x)", status);
		return;
	}
	c->helper = pid;
}

/* After the case: the helper dies where it stopped (recovery must settle
 * it, helping marks included), or runs on to its end first. */
static void helper_end(flash_t *h, struct ctx *c)
{
	uint32_t got = 0;
	int status = 0;

	/* not SIGKILL: its mapping must be writable when it dies, for the
	 * kernel's robust-futex cleanup (storetrap.c) */
	g_help->die = !c->helper_cont;
	kill(c->helper, SIGCONT);
	waitpid(c->helper, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == (c->helper_cont ? 0 : FLASH_CRASH_EXIT),
	      "helper ended with status 0x%x", status);
	c->helper = 0;
	CHECK_RC(flash_recover(h, &got), FLASH_OK);
	CHECK(got == 1, "the helper's slot: %u recovered", got);
	if (c->helper_cont && g_help->hits) {
		CHECK_RC(g_help->rc, FLASH_OK);
		/* fencing tokens strictly increase in the order of the grants */
		if (c->crashed == 0 || c->out.v[0] != 0)
			CHECK(g_help->v[0] > c->out.v[0], "fence %llu granted after fence %llu",
			      (unsigned long long)g_help->v[0], (unsigned long long)c->out.v[0]);
		if (g_help->v[0] > c->fence)
			c->fence = g_help->v[0];
	}
}

static void setup_order_mid(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 13, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 13, 130, 5, 1), FLASH_OK);   /* one shard: both CAS it */
	helper_start(h, c, HELP_ORDER);
	c->act = 13;
	c->sku = 130;
	c->user = 13002;
	c->qty = 1;
	c->req = 5013;
}

static void setup_lock_mid(flash_t *h, struct ctx *c)
{
	setup_lock_used(h, c);
	helper_start(h, c, HELP_LOCK);
	c->helper_cont = 1;
}

static int run_lock_acquire_release(flash_t *h, struct ctx *c, struct child_out *o)
{
	int rc = flash_lock_acquire(h, LOCK, 7, 60000, &o->v[0]);

	return rc != FLASH_OK ? rc : flash_lock_release(h, LOCK, 7);
}

/* ------------------------------------------------------------------ other starting states */

/* The chunk boundary of order numbers: the slot the child will claim has
 * used its whole chunk, and another slot holds the next one. */
static void setup_order_chunk(flash_t *h, struct ctx *c)
{
	flash_t *h2 = NULL;

	CHECK_RC(add_act(h, 12, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 12, 120, 100, 1), FLASH_OK);
	CHECK_RC(flash_open(c->name, 0, &h2), FLASH_OK);
	if (h2 == NULL)
		return;
	for (uint32_t i = 0; i < FS_ORDER_CHUNK; i++) {
		CHECK_RC(order(h2, 12, 120, 12001 + i, 1, 0, 0, NULL), FLASH_OK);
		if (i % 32 == 31)
			(void)drain_all(h, c);
	}
	CHECK(h2->me->order_next == h2->me->order_end, "setup: chunk of slot %d not used up",
	      flash_slot(h2));
	CHECK_RC(flash_close(h2), FLASH_OK);
	CHECK_RC(order(h, 12, 120, 12100, 1, 0, 0, NULL), FLASH_OK);   /* the next chunk */
	c->act = 12;
	c->sku = 120;
	c->user = 12200;
	c->qty = 1;
	c->req = 5012;
}

/* A user table one key from full (4 keys). */
static void setup_order_users_full(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 16, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 16, 160, 10, 2), FLASH_OK);
	for (uint32_t u = 0; u < 3; u++)
		CHECK_RC(order(h, 16, 160, 16001 + u, 1, 0, 0, NULL), FLASH_OK);
	c->act = 16;
	c->sku = 160;
	c->user = 16004;
	c->qty = 1;
	c->req = 5016;
}

/* An expired token. */
static void setup_order_token_expired(flash_t *h, struct ctx *c)
{
	uint64_t t0;

	CHECK_RC(add_act(h, 14, 1, FLASH_ACT_TOKEN_REQUIRED), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 14, 140, 5, 1), FLASH_OK);
	t0 = fs_mono_ms();
	CHECK_RC(flash_token_issue(h, 14, 140, 14001, 1, &c->token), FLASH_OK);
	while (fs_mono_ms() <= t0 + 2)
		usleep(1000);
	c->act = 14;
	c->sku = 140;
	c->user = 14001;
	c->qty = 1;
	c->req = 5014;
	c->want_rc = FLASH_EBAD_TOKEN;
}

/* A lock held by a dead owner: its taker exited without releasing. */
static void setup_lock_dead(flash_t *h, struct ctx *c)
{
	pid_t pid;

	memset(g_help, 0, sizeof *g_help);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		flash_t *hh = NULL;

		if (flash_open(c->name, 0, &hh) != FLASH_OK)
			_exit(3);
		g_help->rc = flash_lock_acquire(hh, LOCK, 3, 60000, &g_help->v[0]);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	CHECK_RC(g_help->rc, FLASH_OK);
	c->fence = g_help->v[0];
}

/* A ring one record from full: the slot the child will claim published
 * ring_records - 2 records nobody drained. */
static void setup_ring_nearly_full(flash_t *h, struct ctx *c)
{
	flash_t *h2 = NULL;

	CHECK_RC(add_act(h, 17, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 17, 170, 100, 1), FLASH_OK);
	CHECK_RC(flash_open(c->name, 0, &h2), FLASH_OK);
	if (h2 == NULL)
		return;
	for (uint32_t i = 0; i + 2 < h->ring_size; i++)
		CHECK_RC(order(h2, 17, 170, 17001 + i, 1, 0, 0, NULL), FLASH_OK);
	CHECK_RC(flash_close(h2), FLASH_OK);
	c->act = 17;
	c->sku = 170;
	c->user = 17100;
	c->qty = 1;
	c->req = 5017;
}

/* The last free record, then a full ring. */
static int run_order_ring(flash_t *h, struct ctx *c, struct child_out *o)
{
	int rc = run_order(h, c, o);

	o->v[1] = (uint64_t)(int64_t)order(h, c->act, c->sku, 17101, 1, 0, 5018, NULL);
	return rc;
}

static void verify_order_ring(flash_t *h, struct ctx *c)
{
	if (!c->crashed)
		CHECK((int)(int64_t)c->out.v[1] == FLASH_EBUSY, "order into a full ring: %s",
		      flash_rcname((int)(int64_t)c->out.v[1]));
	verify_order_ok(h, c);
}

/* ------------------------------------------------------------------ the consumer */

static void setup_drain(flash_t *h, struct ctx *c)
{
	flash_t *h2 = NULL;

	CHECK_RC(add_act(h, 18, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 18, 180, 10, 2), FLASH_OK);
	CHECK_RC(order(h, 18, 180, 18001, 1, 0, 0, NULL), FLASH_OK);
	CHECK_RC(flash_open(c->name, 0, &h2), FLASH_OK);
	if (h2 == NULL)
		return;
	CHECK_RC(order(h2, 18, 180, 18002, 2, 0, 0, NULL), FLASH_OK);
	CHECK_RC(flash_cancel(h2, 1, NULL), FLASH_OK);
	CHECK_RC(flash_close(h2), FLASH_OK);
}

/* The daemon's side: deliver (the "WAL", which outlives the child) ... */
static void child_record(const struct flash_record *r, uint64_t seq)
{
	int i = g_drained->n;

	if (i < (int)(sizeof g_drained->e / sizeof g_drained->e[0])) {
		g_drained->e[i].slot = r->slot;
		g_drained->e[i].seq = seq;
		g_drained->e[i].again = 0;
		g_drained->e[i].r = *r;
		g_drained->n = i + 1;
	}
}

/* ... then mark durable */
static int child_deliver(void *arg, const struct flash_record *r, uint64_t seq)
{
	(void)arg;
	child_record(r, seq);
	return flash_durable_advance(g_child_handle, r->slot, seq) != FLASH_OK;
}

static int run_drain_with(flash_t *h, struct child_out *o, flash_record_fn deliver)
{
	uint32_t d = 0;
	int rc = flash_ring_drain(h, deliver, NULL, UINT32_MAX, &d);

	o->v[0] = d;
	return rc;
}

static int run_drain(flash_t *h, struct ctx *c, struct child_out *o)
{
	(void)c;
	return run_drain_with(h, o, child_deliver);
}

/* The daemon's drain thread: deliver (the WAL's file), then free the ring
 * room (flash_ring_release), the durable mark left to a later sync: a
 * record released is never handed to the next consumer again. */
static int child_deliver_release(void *arg, const struct flash_record *r, uint64_t seq)
{
	(void)arg;
	child_record(r, seq);
	return flash_ring_release(g_child_handle, r->slot, seq) != FLASH_OK;
}

static int run_drain_release(flash_t *h, struct ctx *c, struct child_out *o)
{
	(void)c;
	return run_drain_with(h, o, child_deliver_release);
}

static void verify_drain(flash_t *h, struct ctx *c)
{
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(c->out.v[0] == 5, "the drain delivered %llu records, want 5",
		      (unsigned long long)c->out.v[0]);
	}
}

/* ------------------------------------------------------------------ the consumer claim and the identity */

/* What setup leaves: the identity words and the claim word, to compare with. */
static void note_ident(flash_t *h, struct ctx *c)
{
	c->inc0 = ck_pr_load_64(&h->hdr->incarnation);
	c->lsn0 = ck_pr_load_64(&h->hdr->wal_lsn);
	c->claim0 = ck_pr_load_64(&h->hdr->consumer);
}

static void setup_claim_free(flash_t *h, struct ctx *c)
{
	note_ident(h, c);
}

/* A claim whose holder died: its process claimed and exited without closing. */
static void setup_claim_dead(flash_t *h, struct ctx *c)
{
	pid_t pid;

	memset(g_help, 0, sizeof *g_help);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		flash_t *hh = NULL;

		if (flash_open(c->name, 0, &hh) != FLASH_OK)
			_exit(3);
		g_help->rc = flash_consumer_claim(hh, NULL);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	CHECK_RC(g_help->rc, FLASH_OK);
	note_ident(h, c);
	CHECK(c->claim0 != 0, "setup: the dead holder's claim is not in the segment");
}

static int run_claim(flash_t *h, struct ctx *c, struct child_out *o)
{
	o->v[0] = FS_CONSUMER(h->gen, (uint32_t)h->slot);   /* the claim word it will write */
	return flash_consumer_claim(h, NULL);
}

/* Claim, then give it up with flash_consumer_release (v[1] 0) or flash_close. */
static int run_claim_then(flash_t *h, struct ctx *c, struct child_out *o, int close)
{
	int rc = flash_consumer_claim(h, NULL);

	if (rc != FLASH_OK)
		return 100;
	o->v[0] = FS_CONSUMER(h->gen, (uint32_t)h->slot);
	arm(c->n);
	if (!close)
		return flash_consumer_release(h);
	rc = flash_close(h);
	g_child_handle = NULL;
	return rc;
}

static int run_claim_release(flash_t *h, struct ctx *c, struct child_out *o)
{
	return run_claim_then(h, c, o, 0);
}

static int run_claim_close(flash_t *h, struct ctx *c, struct child_out *o)
{
	return run_claim_then(h, c, o, 1);
}

/*
 * After any kill: the claim word is the old one, the child's or 0 (one
 * word, one CAS: never a mix); the identity is untouched; the child is dead,
 * so nobody holds the claim (flash_ident_get), a new claim succeeds, and a
 * second claimant is refused while that holder lives.
 */
static void verify_claim(flash_t *h, struct ctx *c, uint64_t want_done)
{
	uint64_t w = ck_pr_load_64(&h->hdr->consumer);
	struct flash_ident id;
	flash_t *h2 = NULL;
	int32_t holder = -1;

	CHECK(w == c->claim0 || w == c->out.v[0] || w == 0,
	      "claim word %#llx: neither the old %#llx, the child's %#llx nor free",
	      (unsigned long long)w, (unsigned long long)c->claim0, (unsigned long long)c->out.v[0]);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(w == (want_done ? c->out.v[0] : 0), "completed: claim word %#llx",
		      (unsigned long long)w);
	}
	CHECK(ck_pr_load_64(&h->hdr->incarnation) == c->inc0 && ck_pr_load_64(&h->hdr->wal_lsn) == c->lsn0,
	      "the consumer claim changed the identity");
	CHECK_RC(flash_ident_get(h, &id), FLASH_OK);
	CHECK(id.consumer_pid == 0, "a dead holder's claim reads as held by pid %d", id.consumer_pid);
	CHECK_RC(flash_consumer_claim(h, &holder), FLASH_OK);
	CHECK_RC(flash_open(c->name, 0, &h2), FLASH_OK);
	if (h2 != NULL) {
		CHECK_RC(flash_consumer_claim(h2, &holder), FLASH_EBUSY);
		CHECK(holder == (int32_t)getpid(), "a second claim names holder %d, want %d", holder,
		      (int)getpid());
		CHECK_RC(flash_close(h2), FLASH_OK);
	}
	CHECK_RC(flash_ident_get(h, &id), FLASH_OK);
	CHECK(id.consumer_pid == (int32_t)getpid() && id.consumer_slot == (uint32_t)flash_slot(h),
	      "the new claim reads pid %d slot %u", id.consumer_pid, id.consumer_slot);
	CHECK_RC(flash_consumer_release(h), FLASH_OK);
	CHECK(ck_pr_load_64(&h->hdr->consumer) == 0, "released claim word %#llx",
	      (unsigned long long)ck_pr_load_64(&h->hdr->consumer));
}

static void verify_claim_taken(flash_t *h, struct ctx *c)
{
	verify_claim(h, c, 1);
}

static void verify_claim_given_up(flash_t *h, struct ctx *c)
{
	/* the claim was made before the armed part: the word before it is the child's */
	c->claim0 = c->out.v[0];
	verify_claim(h, c, 0);
}

#define INC_NEW 0x1122334455667788ull
#define LSN_NEW 0x0000000700000009ull   /* both halves nonzero: a torn store shows */

static int run_ident_adopt(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_ident_adopt(h, INC_NEW);
}

static int run_ident_lsn(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_ident_lsn_set(h, LSN_NEW);
}

/* Each identity word is old or new, never torn; the operation then completes. */
static void verify_ident(flash_t *h, struct ctx *c)
{
	int adopt = c->sc->run == run_ident_adopt;
	struct flash_ident id;
	uint64_t want = adopt ? INC_NEW : LSN_NEW;

	CHECK_RC(flash_ident_get(h, &id), FLASH_OK);
	if (adopt)
		CHECK(id.incarnation == c->inc0 || id.incarnation == want, "incarnation %#llx: "
		      "neither %#llx nor %#llx", (unsigned long long)id.incarnation,
		      (unsigned long long)c->inc0, (unsigned long long)want);
	else
		CHECK(id.wal_lsn == c->lsn0 || id.wal_lsn == want, "wal_lsn %#llx: neither %#llx nor %#llx",
		      (unsigned long long)id.wal_lsn, (unsigned long long)c->lsn0,
		      (unsigned long long)want);
	CHECK((adopt ? id.wal_lsn == c->lsn0 : id.incarnation == c->inc0),
	      "the other identity word changed");
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK((adopt ? id.incarnation : id.wal_lsn) == want, "completed, the word is still old");
	}
	/* the retry completes; a served segment keeps its incarnation */
	CHECK_RC(adopt ? flash_ident_adopt(h, INC_NEW) : flash_ident_lsn_set(h, LSN_NEW), FLASH_OK);
	CHECK_RC(flash_ident_get(h, &id), FLASH_OK);
	CHECK((adopt ? id.incarnation : id.wal_lsn) == want, "retry: the word is still old");
	if (!adopt)
		CHECK_RC(flash_ident_adopt(h, INC_NEW), FLASH_EEXIST);
}

/* ------------------------------------------------------------------ a sync waiter */

/* An order whose record nobody marks durable, then a wait for it: the
 * waiter's count of sleepers is the only store (up, then down). */
static int run_durable_wait(flash_t *h, struct ctx *c, struct child_out *o)
{
	int rc = run_order(h, c, o);

	if (rc != FLASH_OK)
		return 100;
	arm(c->n);
	return flash_durable_wait(h, o->res.lsn, 1);
}

static void verify_durable_wait(flash_t *h, struct ctx *c)
{
	if (!c->crashed)
		CHECK_RC(c->out.rc, FLASH_EFATE_UNKNOWN);
	/* the order was placed before the wait: it stands */
	CHECK(rec_count(c, FLASH_REC_ORDER, c->act, c->sku) == 1, "%d ORDER records for one order",
	      rec_count(c, FLASH_REC_ORDER, c->act, c->sku));
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, 0, 0, NULL), FLASH_ELIMIT);
}

/* ------------------------------------------------------------------ full keyed tables */

/* A request-id table one key from full (4 keys). */
static void setup_order_reqs_full(flash_t *h, struct ctx *c)
{
	CHECK_RC(add_act(h, 21, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 21, 210, 10, 2), FLASH_OK);
	for (uint32_t u = 0; u < 3; u++)
		CHECK_RC(order(h, 21, 210, 21001 + u, 1, 0, 5201 + u, NULL), FLASH_OK);
	c->act = 21;
	c->sku = 210;
	c->user = 21004;
	c->qty = 1;
	c->req = 5204;
}

/* The retry took the last key (or found it taken): the next request id is refused. */
static void verify_order_reqs_full(flash_t *h, struct ctx *c)
{
	verify_order_ok(h, c);
	CHECK_RC(order(h, c->act, c->sku, 21005, 1, 0, 5205, NULL), FLASH_EFULL);
	CHECK_RC(order(h, c->act, c->sku, 21006, 1, 0, 0, NULL), FLASH_OK);
}

/* A token table full of expired tokens: the next issue sweeps them first. */
static void setup_token_expired_full(flash_t *h, struct ctx *c)
{
	uint64_t t0;

	setup_token(h, c);
	t0 = fs_mono_ms();
	for (uint32_t i = 0; i < 4; i++)
		CHECK_RC(flash_token_issue(h, 8, 80, 8100 + i, 1, &c->toks[i]), FLASH_OK);
	while (fs_mono_ms() <= t0 + 2)
		usleep(1000);
}

static void verify_token_expired_full(flash_t *h, struct ctx *c)
{
	struct flash_stats st;
	uint64_t t = c->out.v[0];

	CHECK_RC(flash_stats_get(h, &st), FLASH_OK);
	CHECK(st.tokens <= 4, "%u live tokens, table of 4", st.tokens);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(st.tokens == 1, "%u live tokens after a sweep and one issue", st.tokens);
	} else {
		t = 0;
		CHECK_RC(flash_token_issue(h, c->act, c->sku, c->user, 600000, &t), FLASH_OK);
	}
	CHECK_RC(order(h, c->act, c->sku, c->user, 1, t, 0, NULL), FLASH_OK);
	/* swept or not, an expired token never redeems */
	for (uint32_t i = 0; i < 4; i++)
		CHECK_RC(flash_token_redeem(h, c->act, c->sku, 8100 + i, c->toks[i]), FLASH_EBAD_TOKEN);
	/* and the table issues again: a sweep makes room for a full set */
	for (uint32_t i = 0; i < 4; i++) {
		t = 0;
		CHECK_RC(flash_token_issue(h, c->act, c->sku, 8200 + i, 600000, &t), FLASH_OK);
	}
}

/* ------------------------------------------------------------------ the trap itself */

/*
 * What storetrap.c counts as one store, on a scratch segment: a plain
 * store, a lock cmpxchg that fails, an unaligned store across a page
 * boundary, and rep stosb over three pages are one each, and each took
 * effect (or, for the CAS, left the word as it was); a store elsewhere
 * counts nothing.  Then the N-th store does not happen.
 */
static int trap_selftest(void)
{
	struct ctx *c = calloc(1, sizeof *c);
	long pg = sysconf(_SC_PAGESIZE);
	flash_t *h;
	int status, bad = 0;
	pid_t pid;

	if (c == NULL)
		return 1;
	h = fresh(c);
	if (h->size < 8 * (uint64_t)pg) {
		finish(h, c);
		free(c);
		return 1;
	}
	for (int die_at = 0; die_at <= 4; die_at += 4) {
		memset(h->base + 4 * pg, 0, 4 * (size_t)pg);   /* scratch: the segment is thrown away */
		memset(g_out, 0, sizeof *g_out);
		fflush(NULL);
		if ((pid = fork()) == 0) {
			char *p = h->base + 4 * pg, local[8];
			uint64_t want = 5, *w = (uint64_t *)(void *)(p + 64);
			size_t n = 3 * (size_t)pg;
			void *dst = p + pg;

			st_init(c->name, &g_out->st);
			st_track(h->base, h->size);
			st_arm((uint64_t)die_at, ST_DIE, FLASH_CRASH_EXIT, 0, 0);
			*(volatile char *)p = 1;                                   /* 1 */
			__asm__ __volatile__("lock cmpxchgq %2, %1"                /* 2: fails */
			                     : "+a"(want), "+m"(*w) : "r"((uint64_t)9) : "memory", "cc");
			__asm__ __volatile__("movq %1, %0"                        /* 3: two pages */
			                     : "=m"(*(uint64_t *)(void *)(p + pg - 4)) : "r"((uint64_t)-1)
			                     : "memory");
			__asm__ __volatile__("rep stosb"                          /* 4: three pages */
			                     : "+D"(dst), "+c"(n) : "a"(0x5a) : "memory");
			memset(local, 1, sizeof local);                            /* not counted */
			g_out->hits = (int)st_count();
			g_out->v[0] = (uint64_t)(unsigned char)p[0] | (uint64_t)(*w == 0) << 8 |
			              (uint64_t)(*(uint32_t *)(void *)(p + pg - 4) == UINT32_MAX) << 9 |
			              (uint64_t)((unsigned char)p[pg] == 0x5a &&
			                         (unsigned char)p[4 * pg - 1] == 0x5a) << 10;
			st_disarm();
			_exit(0);
		}
		waitpid(pid, &status, 0);
		if (die_at == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || g_out->hits != 4 ||
		                    g_out->v[0] != 0x701)) {
			fprintf(stderr, "FAIL storetrap: status 0x%x, %d stores counted (want 4), "
			        "effects 0x%llx (want 0x701)\n", status, g_out->hits,
			        (unsigned long long)g_out->v[0]);
			bad = 1;
		}
		if (die_at == 4 && (!WIFEXITED(status) || WEXITSTATUS(status) != FLASH_CRASH_EXIT ||
		                    g_out->st.n != 4 || (unsigned char)h->base[8 * pg - 1] != 0)) {
			fprintf(stderr, "FAIL storetrap: dying at store 4: status 0x%x, store %llu, "
			        "byte 0x%x (want 77, 4, 0: not written)\n", status,
			        (unsigned long long)g_out->st.n, (unsigned char)h->base[8 * pg - 1]);
			bad = 1;
		}
	}
	finish(h, c);
	free(c);
	printf("storetrap: plain, failed CAS, page-crossing store, rep stosb over 3 pages: "
	       "one store each%s\n", bad ? " -- FAILED" : "");
	return bad;
}

/* ------------------------------------------------------------------ the table */

/* ------------------------------------------------------------------ generations (gen.c) */

#define GEN_HOUR_NS (3600ll * 1000000000)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* GEN records of kind @p kind (1 advance, 2 clear) for table @p t */
static int gen_recs(const struct ctx *c, uint32_t t, uint32_t kind)
{
	int n = 0;

	for (size_t i = 0; i < c->nrec; i++)
		n += c->rec[i].type == FLASH_REC_GEN && c->rec[i].activity_id == t && c->rec[i].qty == kind;
	return n;
}

/*
 * A windowed segment with entries of every kind in generation 0 of both
 * tables: request ids DONE (an order, a sold-out, a limit refusal), FREE
 * (a retry's claim given back is not needed: a cancelled order's per-day
 * limit entry is FREE), user entries DONE and FREE.
 */
static void setup_gen(flash_t *h, struct ctx *c)
{
	struct flash_activity a;
	struct flash_order_res res;

	memset(&a, 0, sizeof a);
	a.id = 31;
	a.limit_per_user = 1;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_DAY;
	a.flags = FLASH_ACT_CANCEL_RETURNS_QUOTA;
	a.start_ns = now_ns() - GEN_HOUR_NS;
	a.end_ns = now_ns() + GEN_HOUR_NS;
	CHECK_RC(flash_activity_add(h, &a), FLASH_OK);
	CHECK_RC(flash_sku_add(h, 31, 310, 3, 1), FLASH_OK);
	c->act = 31;
	c->sku = 310;
	for (int i = 0; i < 4; i++)
		c->rids[i] = flash_request_id_new();
	CHECK_RC(order(h, 31, 310, 1, 1, 0, c->rids[0], NULL), FLASH_OK);
	CHECK_RC(order(h, 31, 310, 2, 1, 0, c->rids[1], &res), FLASH_OK);
	CHECK_RC(flash_cancel(h, res.order_no, NULL), FLASH_OK);
	CHECK_RC(order(h, 31, 310, 3, 4, 0, c->rids[2], NULL), FLASH_ESOLD_OUT);
	CHECK_RC(order(h, 31, 310, 1, 1, 0, c->rids[3], NULL), FLASH_ELIMIT);
	c->clk = now_ns();
}

/* setup_gen, then the table @p t two generations on: bank 0 is to clear */
static void setup_gen_old(flash_t *h, struct ctx *c, uint32_t t)
{
	struct flash_gen_info gi;

	setup_gen(h, c);
	for (int k = 0; k < 2; k++) {
		c->clk += 2 * GEN_HOUR_NS;
		CHECK_RC(flash_gen_advance(h, t, c->clk, &gi), FLASH_OK);
		CHECK(gi.advanced == 1, "setup: generation %d did not move", k + 1);
	}
	CHECK_RC(flash_gen_get(h, t, &gi), FLASH_OK);
	CHECK(gi.bank[0].state == FLASH_BANK_OLD && gi.bank[0].keys > 0,
	      "setup: bank 0 in state %u with %u keys", gi.bank[0].state, gi.bank[0].keys);
	c->bank_keys = gi.bank[0].keys;
}

static void setup_gen_old_req(flash_t *h, struct ctx *c)
{
	setup_gen_old(h, c, FLASH_TABLE_REQUESTS);
}

static void setup_gen_old_user(flash_t *h, struct ctx *c)
{
	setup_gen_old(h, c, FLASH_TABLE_USERS);
}

static int run_gen_advance(flash_t *h, struct ctx *c, struct child_out *o)
{
	struct flash_gen_info gi;

	return flash_gen_advance(h, FLASH_TABLE_REQUESTS, c->clk + 2 * GEN_HOUR_NS, &gi);
}

static void verify_gen_advance(flash_t *h, struct ctx *c)
{
	struct flash_gen_info gi;
	struct flash_order_res res;
	uint64_t cur;

	CHECK_RC(flash_gen_get(h, FLASH_TABLE_REQUESTS, &gi), FLASH_OK);
	cur = gi.gen;
	CHECK(cur <= 1, "generation %llu after one advance", (unsigned long long)cur);
	CHECK((int)cur == gen_recs(c, FLASH_TABLE_REQUESTS, 1), "generation %llu with %d GEN records",
	      (unsigned long long)cur, gen_recs(c, FLASH_TABLE_REQUESTS, 1));
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(cur == 1, "completed advance left generation %llu", (unsigned long long)cur);
	}
	/* the retry moves it iff it had not moved */
	CHECK_RC(flash_gen_advance(h, FLASH_TABLE_REQUESTS, c->clk + 2 * GEN_HOUR_NS, &gi), FLASH_OK);
	CHECK(gi.gen == 1 && gi.advanced == (cur == 0), "retry: generation %llu, advanced %u",
	      (unsigned long long)gi.gen, gi.advanced);
	CHECK(gi.gen_start_ns == c->clk + 2 * GEN_HOUR_NS, "generation 1 dated %lld",
	      (long long)gi.gen_start_ns);
	/* the first outcomes answer from generation 0 */
	memset(&res, 0, sizeof res);
	CHECK_RC(order(h, 31, 310, 1, 1, 0, c->rids[0], &res), FLASH_EDUPLICATE);
	CHECK_RC(res.first_rc, FLASH_OK);
	memset(&res, 0, sizeof res);
	CHECK_RC(order(h, 31, 310, 3, 4, 0, c->rids[2], &res), FLASH_EDUPLICATE);
	CHECK_RC(res.first_rc, FLASH_ESOLD_OUT);
	CHECK_RC(order(h, 31, 310, 4, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
}

static int run_gen_clear_req(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_gen_clear(h, FLASH_TABLE_REQUESTS, &o->v[0]);
}

static int run_gen_clear_user(flash_t *h, struct ctx *c, struct child_out *o)
{
	return flash_gen_clear(h, FLASH_TABLE_USERS, &o->v[0]);
}

/* Bank 0 is wholly there (rolled back) or wholly gone and counted once. */
static void verify_gen_clear(flash_t *h, struct ctx *c, uint32_t t)
{
	struct flash_gen_info gi;
	uint64_t n = 0;
	int cleared;

	CHECK_RC(flash_gen_get(h, t, &gi), FLASH_OK);
	cleared = gi.bank[0].state == FLASH_BANK_CLEAR;
	CHECK(cleared || (gi.bank[0].state == FLASH_BANK_OLD && gi.bank[0].keys == c->bank_keys),
	      "bank 0 in state %u with %u keys, want clear or its %llu keys", gi.bank[0].state,
	      gi.bank[0].keys, (unsigned long long)c->bank_keys);
	CHECK(gi.reclaimed == (cleared ? c->bank_keys : 0), "reclaimed %llu, cleared %d",
	      (unsigned long long)gi.reclaimed, cleared);
	CHECK(gen_recs(c, t, 2) == cleared, "%d clear records, cleared %d", gen_recs(c, t, 2), cleared);
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(cleared && c->out.v[0] == c->bank_keys, "completed clear: %d, %llu keys",
		      cleared, (unsigned long long)c->out.v[0]);
	}
	/* the next call finishes it; nothing is counted twice */
	CHECK_RC(flash_gen_clear(h, t, &n), FLASH_OK);
	CHECK(n == (cleared ? 0 : c->bank_keys), "retry cleared %llu", (unsigned long long)n);
	CHECK_RC(flash_gen_get(h, t, &gi), FLASH_OK);
	CHECK(gi.bank[0].state == FLASH_BANK_CLEAR && gi.bank[0].keys == 0 && gi.reclaimed == c->bank_keys,
	      "after the retry: bank 0 state %u, %u keys, %llu reclaimed", gi.bank[0].state,
	      gi.bank[0].keys, (unsigned long long)gi.reclaimed);
	/* and the table moves into it */
	CHECK_RC(flash_gen_advance(h, t, c->clk + 10 * GEN_HOUR_NS, &gi), FLASH_OK);
	CHECK(gi.advanced == 1 && gi.gen == 3, "advance into the cleared bank: %u, generation %llu",
	      gi.advanced, (unsigned long long)gi.gen);
	CHECK_RC(order(h, 31, 310, 5, 1, 0, flash_request_id_new(), NULL), FLASH_OK);
}

static void verify_gen_clear_req(flash_t *h, struct ctx *c)
{
	verify_gen_clear(h, c, FLASH_TABLE_REQUESTS);
}

static void verify_gen_clear_user(flash_t *h, struct ctx *c)
{
	verify_gen_clear(h, c, FLASH_TABLE_USERS);
}

/* ------------------------------------------------------------------ an add into a freed entry */

/*
 * An add into the entry an archive freed (issue 19): the add pins its user
 * bank before its commit point, so a kill there left the FREE entry pinning
 * bank 0 for an activity that never existed -- cleared never, the user
 * table stuck.  A windowed segment; activity 17 (one order, so a limit
 * entry in bank 0) ended and archived; the add of 18 takes its entry.
 */
#define FREED_OLD 17u
#define FREED_NEW 18u

static void setup_add_into_freed(flash_t *h, struct ctx *c)
{
	uint32_t ai = 0;

	CHECK_RC(add_act(h, FREED_OLD, 1, 0), FLASH_OK);
	CHECK_RC(flash_sku_add(h, FREED_OLD, 170, 3, 1), FLASH_OK);
	CHECK_RC(order(h, FREED_OLD, 170, 1701, 1, 0, 0, NULL), FLASH_OK);
	if (fs_act_find(h, FREED_OLD, &ai) != NULL)
		h->act[ai].t[0].end_ns = h->act[ai].t[1].end_ns = h->act[ai].t[0].start_ns + 1;
	CHECK_RC(flash_archive(h, FREED_OLD, 0, NULL), FLASH_OK);
	CHECK(ai == 0 && FS_CAT_KIND(h->act[0].state) == FS_CAT_FREE,
	      "setup: entry %u of the archived activity in state %u", ai, h->act[0].state);
	c->act = FREED_NEW;
	c->clk = now_ns();
}

static int run_add_into_freed(flash_t *h, struct ctx *c, struct child_out *o)
{
	return add_act(h, FREED_NEW, 1, 0);
}

/* A bank is pinned only by an activity that exists; without one the user
 * table moves two generations on and back into bank 0. */
static void verify_add_into_freed(flash_t *h, struct ctx *c)
{
	int exists = fs_act_find(h, FREED_NEW, NULL) != NULL;
	struct flash_gen_info gi;
	uint64_t n = 0;

	CHECK(rec_count(c, FLASH_REC_ACTIVITY, FREED_NEW, 0) == exists,
	      "activity %u exists %d with %d records", FREED_NEW, exists,
	      rec_count(c, FLASH_REC_ACTIVITY, FREED_NEW, 0));
	if (!c->crashed) {
		CHECK_RC(c->out.rc, FLASH_OK);
		CHECK(exists, "completed add, activity %u missing", FREED_NEW);
	}
	CHECK_RC(flash_gen_get(h, FLASH_TABLE_USERS, &gi), FLASH_OK);
	for (uint32_t b = 0; b < gi.banks; b++)
		CHECK(gi.bank[b].pinned_by == 0 || fs_act_find(h, gi.bank[b].pinned_by, NULL) != NULL,
		      "user bank %u pinned by activity %u, which does not exist", b, gi.bank[b].pinned_by);
	CHECK(gi.bank[0].pinned_by == (exists ? FREED_NEW : 0), "user bank 0 pinned by %u, activity %u %s",
	      gi.bank[0].pinned_by, FREED_NEW, exists ? "exists" : "does not exist");

	/* two generations on, bank 0 is cleared and taken again -- unless the
	 * activity added in it stands */
	for (int k = 1; k <= 2; k++) {
		CHECK_RC(flash_gen_advance(h, FLASH_TABLE_USERS, c->clk + 2 * k * GEN_HOUR_NS, &gi), FLASH_OK);
		CHECK(gi.advanced == 1, "user generation %d did not move", k);
	}
	CHECK_RC(flash_gen_clear(h, FLASH_TABLE_USERS, &n), FLASH_OK);
	CHECK_RC(flash_gen_advance(h, FLASH_TABLE_USERS, c->clk + 6 * GEN_HOUR_NS, &gi), FLASH_OK);
	if (exists)
		CHECK(gi.advanced == 0 && gi.wait == FLASH_GEN_WAIT_PINNED && gi.wait_activity == FREED_NEW,
		      "bank 0 of standing activity %u: advanced %u, wait %u for %u", FREED_NEW,
		      gi.advanced, gi.wait, gi.wait_activity);
	else
		CHECK(gi.advanced == 1 && gi.gen == 3, "user table stuck at generation %llu: wait %u for %u",
		      (unsigned long long)gi.gen, gi.wait, gi.wait_activity);

	/* the retry adds it (or finds it), and it sells */
	CHECK_RC(add_act(h, FREED_NEW, 1, 0), exists ? FLASH_EEXIST : FLASH_OK);
	CHECK_RC(flash_sku_add(h, FREED_NEW, 180, 3, 1), FLASH_OK);
	CHECK_RC(order(h, FREED_NEW, 180, 1801, 1, 0, 0, NULL), FLASH_OK);
	CHECK_RC(order(h, FREED_NEW, 180, 1801, 1, 0, 0, NULL), FLASH_ELIMIT);
}

static const struct scen scens[] = {
	{ "order_borrow_token_req_K2", setup_order_borrow, run_order, verify_order_ok, 0 },
	{ "order_home_shard_empty", setup_order_home_empty, run_order, verify_order_ok, 0 },
	{ "order_sold_out_after_token", setup_order_sold_out, run_order, verify_order_fail, 0 },
	{ "order_limit_after_token", setup_order_limit, run_order, verify_order_fail, 0 },
	{ "cancel_quota_returned", setup_cancel_quota, run_cancel, verify_cancel, 0 },
	{ "cancel_quota_kept", setup_cancel_keep, run_cancel, verify_cancel, 0 },
	{ "reserve", setup_reserve, run_reserve, verify_reserve, 0 },
	{ "confirm", setup_confirm, run_confirm, verify_confirm, 0 },
	{ "expire", setup_expire, run_expire, verify_expired, 0 },
	{ "confirm_too_late", setup_late, run_confirm, verify_expired, 0 },
	{ "cancel_reservation", setup_cancel_resv, run_cancel, verify_cancel_resv, 0 },
	{ "order_settles_due_reservation", setup_settle, run_order, verify_settle, 0 },
	{ "cart_token_req_borrow", setup_cart, run_cart, verify_cart_ok, 0 },
	{ "cart_short_line_after_token", setup_cart_short, run_cart, verify_cart_fail, 0 },
	{ "cart_cancel", setup_cart_cancel, run_cancel, verify_cart_cancel, 0 },
	{ "cart_chunk_tail", setup_cart_chunk_tail, run_cart, verify_cart_ok, 0 },
	{ "cart_confirm", setup_cart_confirm, run_confirm, verify_cart_confirm, 0 },
	{ "cart_expire", setup_cart_expire, run_expire, verify_cart_expire, 0 },
	{ "restock_plus", setup_restock, run_restock_plus, verify_restock_plus, 0 },
	{ "restock_minus", setup_restock, run_restock_minus, verify_restock_minus, 0 },
	{ "token_issue", setup_token, run_token_issue, verify_token_issue, 0 },
	{ "token_redeem", setup_token_redeem, run_token_redeem, verify_token_redeem, 0 },
	{ "lock_acquire_new_name", setup_lock_none, run_lock_acquire, verify_lock, 0 },
	{ "lock_acquire", setup_lock_used, run_lock_acquire, verify_lock, 0 },
	{ "lock_renew", setup_lock_used, run_lock_renew, verify_lock, SELF_ARM },
	{ "lock_release", setup_lock_used, run_lock_release, verify_lock, SELF_ARM },
	{ "activity_add", setup_nothing, run_activity_add, verify_activity_add, 0 },
	{ "sku_add", setup_act9, run_sku_add, verify_sku_add, 0 },
	{ "terms_update", setup_terms, run_terms_update, verify_terms_update, 0 },
	{ "price_set", setup_terms, run_price_set, verify_price_set, 0 },
	{ "attach", setup_act9, run_nothing, verify_attach, ARM_BEFORE_OPEN },
	{ "replay_order", setup_replay_order, run_replay_last, verify_replay, 0 },
	{ "replay_cancel", setup_replay_cancel, run_replay_last, verify_replay, 0 },
	{ "archive", setup_archive, run_archive, verify_archive, 0 },
	{ "replay_archive", setup_replay_archive, run_replay_last, verify_replay_archive, 0 },
	{ "order_plain_one_shard", setup_order_plain, run_order, verify_order_plain, 0 },
	{ "order_many", setup_order_many, run_order_many, verify_order_many, 0 },
	{ "close", setup_act9, run_close, verify_close, MAY_LEAVE_NONE | STORES_ONLY },
	/* starting states */
	{ "order_chunk_boundary", setup_order_chunk, run_order, verify_order_ok, 0 },
	{ "order_users_one_from_full", setup_order_users_full, run_order, verify_order_ok, SMALL_USERS },
	{ "order_other_slot_mid_order", setup_order_mid, run_order, verify_order_ok, NO_PRECHECK },
	{ "order_token_expired", setup_order_token_expired, run_order, verify_order_fail, 0 },
	{ "order_ring_one_from_full", setup_ring_nearly_full, run_order_ring, verify_order_ring,
	  NO_PRECHECK },
	{ "lock_acquire_dead_owner", setup_lock_dead, run_lock_acquire, verify_lock,
	  ARM_BEFORE_OPEN | NO_PRECHECK },
	{ "lock_acquire_other_mid_acquire", setup_lock_mid, run_lock_acquire_release, verify_lock,
	  NO_PRECHECK },
	/* the daemon's shared writes: durable marks, ring heads, the tick */
	{ "ring_drain", setup_drain, run_drain, verify_drain, NO_PRECHECK | STORES_ONLY },
	{ "ring_drain_release", setup_drain, run_drain_release, verify_drain, NO_PRECHECK | STORES_ONLY },
	/* the consumer claim (the daemon's registration) and the identity */
	{ "consumer_claim_free", setup_claim_free, run_claim, verify_claim_taken, STORES_ONLY },
	{ "consumer_claim_dead_holder", setup_claim_dead, run_claim, verify_claim_taken,
	  NO_PRECHECK | STORES_ONLY },
	{ "consumer_release", setup_claim_free, run_claim_release, verify_claim_given_up,
	  SELF_ARM | STORES_ONLY },
	{ "consumer_close", setup_claim_free, run_claim_close, verify_claim_given_up,
	  SELF_ARM | MAY_LEAVE_NONE | STORES_ONLY },
	{ "ident_adopt", setup_claim_free, run_ident_adopt, verify_ident, STORES_ONLY },
	{ "ident_lsn_set", setup_claim_free, run_ident_lsn, verify_ident, STORES_ONLY },
	/* a sync waiter: its count of sleepers, in its slot */
	{ "durable_wait_unmarked", setup_order_plain, run_durable_wait, verify_durable_wait,
	  SELF_ARM | STORES_ONLY },
	/* full keyed tables: the fill counts' journaled changes, the issue-time sweep */
	{ "order_requests_one_from_full", setup_order_reqs_full, run_order, verify_order_reqs_full,
	  SMALL_REQS },
	{ "token_issue_table_expired", setup_token_expired_full, run_token_issue,
	  verify_token_expired_full, SMALL_TOKENS },
	/* generations: a table moving on, a bank with entries of every kind cleared */
	{ "gen_advance", setup_gen, run_gen_advance, verify_gen_advance, WINDOWED },
	{ "gen_clear_requests", setup_gen_old_req, run_gen_clear_req, verify_gen_clear_req, WINDOWED },
	{ "gen_clear_users", setup_gen_old_user, run_gen_clear_user, verify_gen_clear_user, WINDOWED },
	{ "activity_add_into_freed_entry", setup_add_into_freed, run_add_into_freed, verify_add_into_freed,
	  WINDOWED },
};

/* victims whose recovery is itself enumerated (the first three also with
 * two recoverers killed in a row) */
static const char *const victims[] = {
	"order_borrow_token_req_K2", "order_sold_out_after_token", "cancel_quota_returned",
	"restock_plus", "restock_minus", "token_issue", "sku_add", "replay_order", "replay_cancel",
	"lock_acquire_new_name", "order_other_slot_mid_order", "order_chunk_boundary", "ring_drain",
	"order_requests_one_from_full", "token_issue_table_expired", "consumer_close",
	"gen_advance", "gen_clear_requests", "archive", "replay_archive", "confirm", "expire",
	"cancel_reservation", "cart_token_req_borrow", "cart_cancel",
};
#define NVICTIMS (sizeof victims / sizeof victims[0])

/* ------------------------------------------------------------------ driver */

/* Two runs' store n at offsets @p a and @p b: the same region.  Not the same
 * byte: a token's or a request id's entry follows its key's hash (a token is
 * random), an obs cell the latency bucket the call's time falls in. */
static int same_store(uint64_t a, uint64_t b)
{
	return region_at(a) == region_at(b);
}

/*
 * Fork a child that opens a handle, arms @p n and runs @p sc's operation.
 * Store mode: with @p ff holding store n, the child fast-forwards to it (and
 * must die there, at the recorded offset); with @p rec (and n 0), the child
 * records its stores there.
 */
static int run_child(struct ctx *c, const struct scen *sc, int n, const struct trace *ff,
                     struct trace *rec, int *crashed, char *point, size_t plen)
{
	int status;
	pid_t pid;

	if (!g_stores || ff == NULL || n < 1 || n > ff->n)
		ff = NULL;
	memset(g_out, 0, sizeof *g_out);
	c->n = n;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		flash_t *h = NULL;
		int rc;

		if (g_stores) {
			/* the parent's mapping too: a store through it would count */
			if (ff != NULL)
				st_init_ff(c->name, &g_out->st);
			else
				st_init(c->name, &g_out->st);
			st_track(g_parent->base, g_parent->size);
			if (rec != NULL)
				st_record(g_rec->e, TRACE_MAX);
		}
		g_child_ff = ff;
		if (sc->flags & ARM_BEFORE_OPEN)
			arm(n);
		rc = flash_open(c->name, 0, &h);
		if (rc != FLASH_OK) {
			g_out->rc = rc;
			_exit(3);
		}
		g_child_handle = h;
		if (!(sc->flags & (ARM_BEFORE_OPEN | SELF_ARM)))
			arm(n);
		g_out->rc = sc->run(h, c, g_out);
		g_out->hits = hits();
		if (g_stores)
			st_disarm();
		_exit(0);      /* the handle is left for recovery, like a process that exits */
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("waitpid");
			exit(2);
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == FLASH_CRASH_EXIT) {
		*crashed = 1;
		if (g_stores)
			snprintf(point, plen, "store %d (%s+%llu)", n, region_name(g_out->st.off),
			         (unsigned long long)region_off(g_out->st.off));
		else
			snprintf(point, plen, "%s %d", g_out->exit_op, g_out->exit_step);
		/* the run is deterministic, or the fast-forward would be wrong */
		CHECK(ff == NULL || same_store(g_out->st.off, ff->e[n - 1].off),
		      "%s: store %d fast-forwarded to %s+%llu, recorded at %s+%llu", sc->name, n,
		      region_name(g_out->st.off), (unsigned long long)region_off(g_out->st.off),
		      region_name(ff->e[n - 1].off), (unsigned long long)region_off(ff->e[n - 1].off));
		return 0;
	}
	*crashed = 0;
	point[0] = '\0';
	CHECK(ff == NULL, "%s: completed, not killed at its store %d of %d recorded", sc->name, n,
	      ff != NULL ? ff->n : 0);
	if (rec != NULL && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		CHECK(g_out->hits <= TRACE_MAX, "%s: %d stores, more than %d recorded", sc->name,
		      g_out->hits, TRACE_MAX);
		rec->n = g_out->hits < TRACE_MAX ? g_out->hits : TRACE_MAX;
		memcpy(rec->e, g_rec->e, (size_t)rec->n * sizeof rec->e[0]);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	CHECK(0, "child of %s ended with status 0x%x (rc %s)", sc->name, status, flash_rcname(g_out->rc));
	return -1;
}

struct tally {
	int points;
	char names[1024];
};

static void tally_add(struct tally *t, const char *point)
{
	char key[80];
	size_t l = strlen(t->names);

	char what[64];

	t->points++;
	/* "op step" once each, in order of first visit; stores by region */
	snprintf(what, sizeof what, "%s", point);
	if (g_stores && strchr(point, '(') != NULL) {
		snprintf(what, sizeof what, "%s", strchr(point, '(') + 1);
		what[strcspn(what, "+")] = '\0';
	}
	snprintf(key, sizeof key, "%s%s,", l ? " " : "", what);
	if (strstr(t->names, key + (l ? 1 : 0)) == NULL && l + strlen(key) + 1 < sizeof t->names)
		strcat(t->names, key);
}

static flash_t *fresh(struct ctx *c)
{
	struct flash_seg_opts o;
	flash_t *h = NULL;
	int rc;

	c->nrec = 0;
	c->nrep = 0;
	c->rep_in[0] = c->rep_in[1] = 0;
	snprintf(c->name, sizeof c->name, "/fs-crash-%ld", (long)getpid());
	snprintf(g_segname, sizeof g_segname, "%s", c->name);
	(void)flash_seg_destroy(c->name);
	opts(&o);
	if (c->sc != NULL && (c->sc->flags & SMALL_USERS))
		o.max_users = 4;
	if (c->sc != NULL && (c->sc->flags & SMALL_REQS))
		o.max_requests = 4;
	if (c->sc != NULL && (c->sc->flags & SMALL_TOKENS))
		o.max_tokens = 4;
	g_drained->n = 0;
	if ((rc = flash_seg_create(c->name, &o)) != FLASH_OK ||
	    (rc = flash_open(c->name, 0, &h)) != FLASH_OK) {
		fprintf(stderr, "segment %s: %s\n", c->name, flash_rcname(rc));
		exit(2);
	}
	if (c->sc != NULL && (c->sc->flags & WINDOWED)) {
		struct flash_reclaim_opts ro = { .req_window_s = 3600, .user_gen_s = 3600 };

		if ((rc = flash_seg_reclaim_set(h, &ro)) != FLASH_OK) {
			fprintf(stderr, "segment %s: reclaim_set: %s\n", c->name, flash_rcname(rc));
			exit(2);
		}
	}
	g_parent = h;
	return h;
}

static void finish(flash_t *h, struct ctx *c)
{
	if (c->helper > 0) {
		g_help->die = 1;
		kill(c->helper, SIGCONT);
		waitpid(c->helper, NULL, 0);
		c->helper = 0;
	}
	flash_close(h);
	flash_seg_destroy(c->name);
}

/*
 * Before recovery, with the child dead where it stopped (as a reader meets
 * a live process stopped there): every number in the order table reads
 * whole with flash_order_lines -- no order (a number not placed yet, or a
 * cart's later line), gone, or every line in the state of line 0.
 */
static void check_lines_mid(flash_t *h)
{
	struct flash_order_info l[FLASH_CART_LINES_MAX];

	for (uint32_t i = 0; i < h->ord_cap; i++) {
		uint64_t no = ck_pr_load_64(&h->ord[i].order_no);
		uint32_t n = 0;
		int rc;

		if (no == 0)
			continue;
		rc = flash_order_lines(h, no, l, FLASH_CART_LINES_MAX, &n);
		CHECK(rc == FLASH_OK || rc == FLASH_ENOT_FOUND || rc == FLASH_EARCHIVED,
		      "order %llu in mid-operation: flash_order_lines answers %s", (unsigned long long)no,
		      flash_rcname(rc));
		if (rc != FLASH_OK)
			continue;
		CHECK(n >= 1 && n <= FLASH_CART_LINES_MAX, "order %llu in mid-operation: %u lines",
		      (unsigned long long)no, n);
		for (uint32_t k = 0; k < n && k < FLASH_CART_LINES_MAX; k++)
			CHECK(l[k].state == l[0].state && l[k].line == k && l[k].lines == n,
			      "order %llu in mid-operation: line %u reads state %u (line %u of %u), line 0 state %u",
			      (unsigned long long)no, k, l[k].state, l[k].line, l[k].lines, l[0].state);
	}
}

/* Recover in the parent; the dead child's slot (and a dead recoverer's) is freed. */
static void recover_and_check(flash_t *h, struct ctx *c, uint32_t want_min)
{
	uint32_t got = 0;

	g_case_failures = 0;
	if (c->crashed)
		check_lines_mid(h);
	CHECK_RC(flash_recover(h, &got), FLASH_OK);
	CHECK(got >= want_min, "recovery recovered %u handles, want at least %u", got, want_min);
	if (c->helper > 0)
		helper_end(h, c);
	/* what a consumer child delivered joins the ledger first */
	for (int i = 0; i < g_drained->n; i++)
		rec_append(c, &g_drained->e[i].r);
	check_all(h, c);
	/* again only the last record the dead consumer delivered from a ring:
	 * every earlier one it had marked durable */
	for (int i = 0; i < g_drained->n; i++)
		for (int k = i + 1; k < g_drained->n && g_drained->e[i].again; k++)
			CHECK(g_drained->e[k].slot != g_drained->e[i].slot,
			      "record %llu of slot %u marked durable, then delivered again",
			      (unsigned long long)g_drained->e[i].seq, g_drained->e[i].slot);
	g_drained->n = 0;
	c->sc->verify(h, c);
	check_all(h, c);
}

/* Handles the parent must recover after the child: its own, unless a
 * store-mode attach died before its slot claim or a close completed. */
static uint32_t want_recovered(const struct scen *sc, int crashed)
{
	if (g_stores && crashed && (sc->flags & ARM_BEFORE_OPEN))
		return 0;
	return !crashed && (sc->flags & MAY_LEAVE_NONE) ? 0 : 1;
}

/*
 * Store mode: one count-only run of @p sc, its stores recorded into @p tr;
 * 0, or -1 when the child failed.
 */
static int record_run(const struct scen *sc, struct ctx *c, struct trace *tr)
{
	flash_t *h;
	int crashed, rc;

	tr->n = 0;
	memset(c, 0, offsetof(struct ctx, rec));
	c->sc = sc;
	g_cur = c;
	h = fresh(c);
	sc->setup(h, c);
	rc = run_child(c, sc, 0, NULL, tr, &crashed, c->point, sizeof c->point);
	if (rc == 0) {
		c->out = *g_out;
		CHECK(!crashed, "%s: a count-only run died", sc->name);
		recover_and_check(h, c, want_recovered(sc, crashed));
	}
	finish(h, c);
	return rc;
}

/*
 * One operation, every n until it completes.  Returns the points visited.
 * Store mode: its stores are recorded first (@p tr), and every kill
 * fast-forwards by the record.
 */
static int enumerate(const struct scen *sc, struct ctx *c, struct tally *t, struct trace *tr)
{
	int n, last_hits = -1;

	if (g_stores && record_run(sc, c, tr) != 0)
		return -1;
	for (n = 1; n <= MAX_N; n++) {
		flash_t *h;
		int crashed;

		memset(c, 0, offsetof(struct ctx, rec));
		c->sc = sc;
		c->n = n;
		g_cur = c;
		h = fresh(c);
		sc->setup(h, c);
		if (!(sc->flags & NO_PRECHECK))
			check_all(h, c);
		if (run_child(c, sc, n, tr, NULL, &crashed, c->point, sizeof c->point) != 0) {
			finish(h, c);
			return -1;
		}
		c->crashed = crashed;
		c->out = *g_out;
		c->rip = g_out->st.rip_off;
		if (crashed)
			tally_add(t, c->point);
		else
			last_hits = c->out.hits;
		recover_and_check(h, c, want_recovered(sc, crashed));
		finish(h, c);
		if (!crashed)
			break;
	}
	CHECK(n <= MAX_N, "%s did not complete within %d points", sc->name, MAX_N);
	CHECK(last_hits == n - 1, "%s: completed after %d points, but the run counted %d",
	      sc->name, n - 1, last_hits);
	/* the count is deterministic: the recorded run counted as many */
	CHECK(!g_stores || n > MAX_N || tr->n == n - 1, "%s: %d stores recorded, then %d counted",
	      sc->name, tr->n, n - 1);
	return n - 1;
}

static const struct scen recoverer = { "recover", NULL, run_nothing, NULL, ARM_BEFORE_OPEN };

/*
 * One victim state: the victim dies at its point m; recoverers die at their
 * points n[0], n[1], ... (nr of them, each a flash_open, which recovers);
 * then the parent's recovery finishes them all and the victim's checks run.
 * Returns 1 when the last recoverer completed, 0 when it died, -1 when a
 * child failed; *vdone when the victim completed (no state m).
 * Store mode: the victim fast-forwards by @p vtr, recoverer i by rtr[i]
 * (NULL: trapped); with @p rec the last recoverer (n 0) records its stores.
 */
static int recovery_case(const struct scen *victim, struct ctx *c, int m, const int *n, int nr,
                         const struct trace *vtr, const struct trace *const *rtr,
                         struct trace *rec, int *vdone, char *rpoint, size_t rlen)
{
	flash_t *h;
	int vcrashed = 0, rcrashed = 0;

	memset(c, 0, offsetof(struct ctx, rec));
	c->sc = victim;
	g_cur = c;
	h = fresh(c);
	victim->setup(h, c);
	if (run_child(c, victim, m, vtr, NULL, &vcrashed, c->point, sizeof c->point) != 0) {
		finish(h, c);
		return -1;
	}
	c->crashed = vcrashed;
	c->out = *g_out;
	c->rip = g_out->st.rip_off;
	*vdone = !vcrashed;
	if (!vcrashed) {
		finish(h, c);
		return 1;
	}
	for (int i = 0; i < nr; i++) {
		if (run_child(c, &recoverer, n[i], rtr != NULL ? rtr[i] : NULL, i == nr - 1 ? rec : NULL,
		              &rcrashed, rpoint, rlen) != 0) {
			finish(h, c);
			return -1;
		}
		if (!rcrashed)
			break;   /* a later recoverer has nothing left to do */
	}
	c->n = m;
	c->rcrashed = rcrashed;
	c->rrip = g_out->st.rip_off;
	c->rn = n[nr - 1];
	snprintf(c->rpoint, sizeof c->rpoint, "%s", rpoint);
	/* the recoverer completed: it recovered the victim, and left itself */
	recover_and_check(h, c, 1);
	finish(h, c);
	return !rcrashed;
}

/*
 * Recovery killed at each of its points: a victim dies at its point m, then
 * a recoverer (flash_open runs flash_recover) dies at its point n = 1, 2,
 * ... until one completes.  In store mode the victim's @p vpoints states are
 * sampled (about 12 of them, always the first and the last: the single
 * enumeration has already recovered every one of them once), and with
 * @p twice a first recoverer dies at a sample of its points and a second one
 * at each of its own, then the parent recovers.
 */
static int enumerate_recovery(const struct scen *victim, struct ctx *c, struct tally *t, int *states,
                              int vpoints, int twice, const struct trace *vtr)
{
	static struct trace rt, rt2;      /* store mode: the recoverers' records */
	const struct trace *ff1[1] = { &rt }, *ff2[2] = { &rt, &rt2 }, *rec2[2] = { &rt, NULL };
	int total = 0, stride = 1;
	char rpoint[96];

	if (!g_stores)
		vtr = NULL;
	*states = 0;
	if ((g_stores || g_states_set) && vpoints > g_states)
		stride = (vpoints + g_states - 1) / g_states;
	for (int m = 1; m <= MAX_N; m = (m < vpoints && m + stride > vpoints) ? vpoints : m + stride) {
		int vdone = 0, rc = 0, n, zero = 0;

		/* store mode: the recoverer of state m recorded, counted only */
		if (g_stores) {
			if (recovery_case(victim, c, m, &zero, 1, vtr, NULL, &rt, &vdone, rpoint,
			                  sizeof rpoint) < 0)
				return -1;
			if (vdone)
				break;
		}
		for (n = 1; n <= MAX_N; n++) {
			rc = recovery_case(victim, c, m, &n, 1, vtr, g_stores ? ff1 : NULL, NULL, &vdone,
			                   rpoint, sizeof rpoint);
			if (rc < 0)
				return -1;
			if (vdone)
				break;
			if (rc == 0) {
				tally_add(t, rpoint);
				total++;
			}
			if (rc == 1)
				break;
		}
		if (vdone)
			break;
		CHECK(!g_stores || rt.n == n - 1, "recover(%s): %d stores recorded, then %d counted",
		      victim->name, rt.n, n - 1);
		(*states)++;
		/* twice in a row: first recoverer at about 6 of its n-1 points */
		if (twice && ((g_twice > 1 && (m == 1 || m + stride > vpoints)) ||
		              m == 1 + stride * (vpoints / stride / 2))) {
			int r1 = n - 1, st1 = r1 > 6 ? (r1 + 5) / 6 : 1;

			for (int n1 = 1; n1 <= r1; n1 += st1) {
				int nn0[2] = { n1, 0 };

				/* the second recoverer after the first died at n1, recorded */
				if (g_stores && recovery_case(victim, c, m, nn0, 2, vtr, rec2, &rt2, &vdone,
				                              rpoint, sizeof rpoint) < 0)
					return -1;
				for (int n2 = 1; n2 <= MAX_N; n2++) {
					int nn[2] = { n1, n2 };

					rc = recovery_case(victim, c, m, nn, 2, vtr, g_stores ? ff2 : NULL, NULL,
					                   &vdone, rpoint, sizeof rpoint);
					if (rc < 0)
						return -1;
					if (rc == 0) {
						tally_add(t, rpoint);
						total++;
					}
					if (rc != 0)
						break;
				}
			}
		}
		if (m >= vpoints && g_stores)
			break;
	}
	return total;
}

int main(int argc, char **argv)
{
	static struct ctx c;
	static int vpoints[NVICTIMS];
	static struct trace vtr[NVICTIMS], scratch;   /* store mode: each victim's record */
	const char *filter;
	int grand = 0, zero = 0;
	struct timespec t0, t1;

	/* crash_points [stores|points [FILTER]]: FILTER picks scenarios by name */
	g_stores = argc > 1 && strcmp(argv[1], "stores") == 0;
	if (getenv("FLASH_CRASH_STATES") != NULL) {
		g_states = atoi(getenv("FLASH_CRASH_STATES"));
		g_states_set = 1;
		if (g_states < 2 || g_states > MAX_N) {
			fprintf(stderr, "FLASH_CRASH_STATES: want 2..%d victim states\n", MAX_N);
			return 2;
		}
	}
	if (getenv("FLASH_CRASH_TWICE") != NULL) {
		g_twice = atoi(getenv("FLASH_CRASH_TWICE"));
		if (g_twice != 1 && g_twice != 3) {
			fprintf(stderr, "FLASH_CRASH_TWICE: want 1 or 3 victim states\n");
			return 2;
		}
	}
	filter = argc > 2 ? argv[2] : NULL;
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_main_pid = getpid();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	signal(SIGHUP, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	g_out = mmap(NULL, sizeof *g_out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	g_help = mmap(NULL, sizeof *g_help, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	g_drained = mmap(NULL, sizeof *g_drained, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	                 -1, 0);
	g_rec = mmap(NULL, sizeof *g_rec, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_out == MAP_FAILED || g_help == MAP_FAILED || g_drained == MAP_FAILED || g_rec == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (g_stores && trap_selftest() != 0) {
		g_failures++;
		g_failed_cases++;
	}
	for (size_t i = 0; i < sizeof scens / sizeof scens[0]; i++) {
		struct tally t;
		int n;

		if ((filter != NULL && strstr(scens[i].name, filter) == NULL) ||
		    (!g_stores && (scens[i].flags & STORES_ONLY)))
			continue;
		struct trace *tr = &scratch;

		for (size_t v = 0; v < NVICTIMS; v++)
			if (strcmp(victims[v], scens[i].name) == 0)
				tr = &vtr[v];
		memset(&t, 0, sizeof t);
		n = enumerate(&scens[i], &c, &t, tr);
		for (size_t v = 0; v < NVICTIMS; v++)
			if (strcmp(victims[v], scens[i].name) == 0)
				vpoints[v] = n;
		printf("%-30s %4d %s: %s\n", scens[i].name, n, g_stores ? "stores" : "points", t.names);
		if (n <= 0)
			zero++;
		else
			grand += n;
	}
	for (size_t v = 0; v < NVICTIMS; v++) {
		const struct scen *victim = NULL;
		struct tally t;
		int n, states = 0;

		if (filter != NULL && strstr(victims[v], filter) == NULL)
			continue;
		for (size_t i = 0; i < sizeof scens / sizeof scens[0]; i++)
			if (strcmp(scens[i].name, victims[v]) == 0)
				victim = &scens[i];
		if (victim == NULL || (!g_stores && (victim->flags & STORES_ONLY)))
			continue;
		memset(&t, 0, sizeof t);
		n = enumerate_recovery(victim, &c, &t, &states, vpoints[v], v < 3, &vtr[v]);
		printf("recover(%s) %4d %s over %d victim states: %s\n", victims[v], n,
		       g_stores ? "stores" : "points", states, t.names);
		if (n <= 0 || (!g_stores && strstr(t.names, "recover ") == NULL))
			zero++;
		else
			grand += n;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("total: %d crash points (%s) visited, %d operations without any, %d failed checks "
	       "in %d cases (%.1f s)\n", grand, g_stores ? "every store" : "FS_CRASH", zero, g_failures,
	       g_failed_cases,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	free(c.rec);
	return (g_failures || zero) ? 1 : 0;
}
