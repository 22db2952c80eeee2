/*
 * scribble.c -- a process scribbles random values into the index, offset,
 * counter and tag fields of a LIVE segment while another attached process
 * keeps calling every read and write call of the API.  The caller may get
 * error codes; it must never read or write outside its mapping.
 *
 * How an access outside the mapping is caught: before the caller attaches it
 * reserves PROT_NONE guard pages, and the engine's mmap of the segment
 * (wrapped: -Wl,--wrap=mmap) is placed between them (checked: the test says
 * whether the guards sit right against the mapping).  A stray access
 * just past either end faults; under ASan (-DFLASH_SANITIZE=ON) a stray
 * access to the heap is reported with its stack.  The caller's death by any
 * signal, or an exit other than 0, fails the test and names the call it was
 * in.
 *
 * Rounds: one per class of field (orders, catalog indexes, skus, journals,
 * state-word tags, ring and allocation counters, all at once), each on a
 * fresh segment, a given time long.  A caller that makes no progress for
 * HANG_MS is reported as stuck in its call and fails the test too: a word
 * naming an operation nobody runs must give FLASH_ECORRUPT, not a wait.
 *
 * Usage: scribble [seconds-per-round [class]]   (default 0.4, every class)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

#define HANG_MS 3000

enum { C_ORDERS, C_CATALOG_IDX, C_SKUS, C_JOURNALS, C_TAGS, C_COUNTERS, C_ALL, C_COUNT };
static const char *const class_name[C_COUNT] = {
	"order entries (sku_idx, user_idx, shard)", "catalog index arrays",
	"skus (shard0, nshards, act_idx)", "journals (indices, intents, phase)",
	"tags in state words", "ring and allocation counters", "all at once",
};

/* What the caller reports to the parent (MAP_SHARED). */
struct progress {
	volatile uint64_t calls;
	volatile uint64_t errors;
	volatile int guarded;      /* 1: guards at both ends of the mapping */
	volatile int stop;         /* the round is over: exit 0 at the next call */
	volatile char call[40];    /* the call in progress */
};

static struct progress *g_prog;

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* A value for an index field of capacity @p cap: near the range, or wild. */
static uint32_t wild32(uint32_t cap)
{
	switch (rnd() % 5) {
	case 0: return (uint32_t)(rnd() % (cap + 1u));
	case 1: return cap + (uint32_t)(rnd() % 64);
	case 2: return UINT32_MAX - (uint32_t)(rnd() % 4);
	case 3: return 0x80000000u | (uint32_t)rnd();   /* FS_TOTAL_BIT-like */
	default: return (uint32_t)rnd();
	}
}

static uint64_t wild_state(void)
{
	uint64_t slot = rnd() % 4 == 0 ? rnd() & 0xfff : rnd() % 8;
	uint64_t seq = rnd() % 3 == 0 ? rnd() & FS_SEQ_MASK : rnd() % 64;

	return FS_MK(rnd() % 16, rnd() % 2 ? FS_TAG(slot, seq) : rnd());
}

static void set_call(const char *c)
{
	size_t i;

	for (i = 0; c[i] && i + 1 < sizeof g_prog->call; i++)
		g_prog->call[i] = c[i];
	g_prog->call[i] = '\0';
}

/* ------------------------------------------------------------------ the scribbler */

/*
 * Half of the writes put a field back to its value when the scribbler
 * started, so fields flip between sane and wild: a reader that checks a field
 * and then reads it again (a double fetch) meets a wild value after a sane
 * check.
 */
static char *g_snap;
#define SET(p, v) do { __typeof__(&(p)) a_ = &(p); \
		if (rnd() % 2) *a_ = (v); \
		else *a_ = *(__typeof__(a_))(void *)(g_snap + ((char *)a_ - h->base)); } while (0)

static void scribble_once(flash_t *h, int cls)
{
	int c = cls == C_ALL ? (int)(rnd() % C_ALL) : cls;

	switch (c) {
	case C_ORDERS: {
		struct fs_order *o = &h->ord[rnd() % 64];   /* the orders in use */

		switch (rnd() % 4) {
		case 0: SET(o->sku_idx, wild32(h->sku_cap)); break;
		case 1: SET(o->user_idx, wild32(h->user_mask + 1)); break;
		case 2: SET(o->shard, wild32(h->shard_cap)); break;
		default: SET(o->qty, wild32(1000)); break;
		}
		break;
	}
	case C_CATALOG_IDX:
		if (rnd() % 2)
			SET(h->act_idx[rnd() % (h->act_idx_mask + 1)], wild32(h->act_cap));
		else
			SET(h->sku_idx[rnd() % (h->sku_idx_mask + 1)], wild32(h->sku_cap));
		break;
	case C_SKUS: {
		struct fs_sku *s = &h->sku[rnd() % 4];

		switch (rnd() % 3) {
		case 0: SET(s->shard0, wild32(h->shard_cap)); break;
		case 1: SET(s->nshards, wild32(FLASH_SHARDS_MAX)); break;
		default: SET(s->act_idx, wild32(h->act_cap)); break;
		}
		break;
	}
	case C_JOURNALS: {
		struct fs_journal *j = &h->jr[rnd() % h->proc_cap];

		switch (rnd() % 9) {
		case 0: SET(j->req_idx, wild32(h->req_mask + 1)); break;
		case 1: SET(j->tok_idx, wild32(h->tok_mask + 1)); break;
		case 2: SET(j->user_idx, wild32(h->user_mask + 1)); break;
		case 3: SET(j->order_idx, wild32(h->ord_cap)); break;
		case 4: SET(j->sku_idx, wild32(h->sku_cap)); break;
		case 5: SET(j->n_int, wild32(FS_MAX_INTENTS)); break;
		case 6: SET(j->in[rnd() % FS_MAX_INTENTS].shard, wild32(h->shard_cap)); break;
		case 7: SET(j->phase, (uint32_t)(rnd() % 5)); SET(j->op, (uint32_t)(rnd() % 7)); break;
		default: SET(j->ring_pos, (uint32_t)rnd()); break;
		}
		break;
	}
	case C_TAGS:
		switch (rnd() % 4) {
		case 0: SET(h->ord[rnd() % 64].state, wild_state()); break;
		case 1: SET(h->user[rnd() % (h->user_mask + 1)].state, wild_state()); break;
		case 2: SET(h->req[rnd() % (h->req_mask + 1)].state, wild_state()); break;
		default: SET(h->tok[rnd() % (h->tok_mask + 1)].state, wild_state()); break;
		}
		break;
	default: {
		uint32_t s = (uint32_t)(rnd() % h->proc_cap);
		struct ck_ring *r = (struct ck_ring *)((char *)h->ring +
		                    (uint64_t)s * h->hdr->fx.region[FS_R_RING].elem_size);

		switch (rnd() % 10) {
		case 8: SET(h->proc[s].taken_seq, rnd() % 2 ? rnd() : rnd() % 4096); break;
		case 0: SET(r->p_tail, (unsigned int)rnd()); break;
		case 1: SET(r->c_head, (unsigned int)rnd()); break;
		case 2: SET(h->proc[s].cons_seq, rnd() % 2 ? rnd() : rnd() % 4096); break;
		case 3: SET(h->hdr->n_act, wild32(h->act_cap)); break;
		case 4: SET(h->hdr->n_sku, wild32(h->sku_cap)); break;
		case 5: SET(h->hdr->n_shard, wild32(h->shard_cap)); break;
		case 6: SET(h->hdr->order_next, rnd() % 2 ? rnd() : rnd() % (h->ord_cap + 100)); break;
		case 7: SET(h->proc[s].order_next, rnd() % (h->ord_cap + 100)); break;
		default: SET(h->proc[s].order_end, rnd() % 2 ? rnd() : rnd() % (h->ord_cap + 100)); break;
		}
		break;
	}
	}
}

static int scribbler_main(const char *name, int cls, uint64_t seed)
{
	flash_t *h = NULL;

	rng_state = seed | 1;
	if (flash_open(name, 0, &h) != FLASH_OK)
		return 3;
	while (g_prog->calls == 0)      /* the caller is attached and running */
		usleep(1000);
	g_snap = malloc(h->size);
	if (g_snap == NULL)
		return 4;
	memcpy(g_snap, h->base, h->size);
	while (!g_prog->stop) {
		scribble_once(h, cls);
		if (rnd() % 16 == 0)
			usleep(50);
	}
	return 0;
}

/* ------------------------------------------------------------------ the caller */

/*
 * The engine's mmap calls come here (-Wl,--wrap=mmap): the caller's mapping
 * of the segment is placed between its guard pages, replacing the middle of
 * the PROT_NONE reservation.  Every other mapping is left alone.
 */
static char *g_hole;
static uint64_t g_hole_len;

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long pg = sysconf(_SC_PAGESIZE);

	if (g_hole != NULL && addr == NULL && fd >= 0 && (flags & MAP_SHARED) &&
	    ((len + (size_t)pg - 1) & ~((size_t)pg - 1)) == g_hole_len) {
		addr = g_hole;
		flags |= MAP_FIXED;
		g_hole = NULL;
	}
	return __real_mmap(addr, len, prot, flags, fd, off);
}

static int drain_fn(void *arg, const struct flash_record *rec, uint64_t seq)
{
	flash_t *h = arg;

	(void)flash_durable_advance(h, rec->slot, seq);
	return 0;
}

#define CALL(h, expr) do { int rc_; set_call(#expr); rc_ = (expr); g_prog->calls++; \
		if (rc_ < 0) g_prog->errors++; } while (0)

static int caller_main(const char *name, uint64_t seg_bytes, uint64_t seed)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t size = (seg_bytes + (uint64_t)pg - 1) & ~((uint64_t)pg - 1);
	uint64_t guard = 16 * (uint64_t)pg;
	char *res;
	flash_t *h = NULL, *ro = NULL;
	uint64_t n = 0;

	rng_state = seed | 1;
	/* PROT_NONE guards, and between them the place where the segment will
	 * be mapped: __wrap_mmap puts the engine's mapping of it there */
	res = mmap(NULL, size + 2 * guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return 4;
	g_hole = res + guard;
	g_hole_len = size;
	set_call("flash_open");
	if (flash_open(name, 0, &h) != FLASH_OK)
		return 3;
	g_prog->guarded = h->base == res + guard;
	for (;; n++) {
		if (g_prog->stop)
			return 0;
		struct flash_order_req r;
		struct flash_order_res out;
		struct flash_sku_info si;
		struct flash_activity a;
		struct flash_order_info oi;
		struct flash_stats st;
		struct flash_record rec;
		uint64_t tok = 0, fence = 0;
		uint32_t u = 0;
		uint32_t sku = 10 + (uint32_t)(rnd() % 4);

		memset(&r, 0, sizeof r);
		r.activity_id = 1;
		r.sku_id = sku;
		r.user_id = 1 + rnd() % 5000;
		r.qty = 1;
		r.request_id = rnd() % 3 ? 0 : 1 + rnd() % 100;
		CALL(h, flash_token_issue(h, 1, sku, r.user_id, 60000, &tok));
		r.token = rnd() % 2 ? tok : 0;
		CALL(h, flash_order(h, &r, &out));
		CALL(h, flash_cancel(h, 1 + rnd() % 80, &u));
		CALL(h, flash_restock(h, 1, sku, rnd() % 2 ? 3 : -1));
		CALL(h, flash_token_redeem(h, 1, sku, r.user_id, tok));
		CALL(h, flash_lock_acquire(h, rnd() % 2 ? "a" : "b", 5, 1000, &fence));
		CALL(h, flash_lock_renew(h, "a", 5, 1000));
		CALL(h, flash_lock_release(h, "b", 5));
		CALL(h, flash_sku_get(h, 1, sku, &si));
		CALL(h, flash_sku_at(h, (uint32_t)(rnd() % 40), &si));
		CALL(h, flash_activity_at(h, (uint32_t)(rnd() % 20), &a));
		CALL(h, flash_order_get(h, 1 + rnd() % 600, &oi));
		set_call("flash_orders_max");
		(void)flash_orders_max(h);
		CALL(h, flash_stats_get(h, &st));
		CALL(h, flash_ring_drain(h, drain_fn, h, 256, &u));
		CALL(h, flash_recover(h, &u));
		memset(&rec, 0, sizeof rec);
		rec.type = (uint16_t)(1 + rnd() % 5);
		rec.activity_id = 1;
		rec.sku_id = sku;
		rec.qty = 1;
		rec.order_no = 1 + rnd() % 600;
		rec.user_id = 1 + rnd() % 5000;
		rec.limit_slot = 1;
		rec.value = 1;
		CALL(h, flash_replay(h, &rec));
		if (n % 64 == 0) {
			CALL(h, flash_sku_add(h, 1, 100 + (uint32_t)(n / 64), 10, 2));
			CALL(h, flash_open(name, FLASH_RDONLY, &ro));
			if (ro) {
				CALL(ro, flash_sku_get(ro, 1, sku, &si));
				CALL(ro, flash_order_get(ro, 1 + rnd() % 600, &oi));
				CALL(ro, flash_close(ro));
				ro = NULL;
			}
		}
	}
}

/* ------------------------------------------------------------------ the rounds */

static void opts(struct flash_seg_opts *o)
{
	flash_seg_opts_default(o);
	o->max_activities = 8;
	o->max_skus = 64;
	o->max_shards = 256;
	o->max_users = 1024;
	o->max_tokens = 256;
	o->max_orders = 512;
	o->max_requests = 256;
	o->max_locks = 8;
	o->max_procs = 8;
	o->ring_records = 256;
	o->mode = 0600;
	o->gid = -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t spawn(int (*fn)(const char *, int, uint64_t), const char *name, int cls, uint64_t seed)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(fn(name, cls, seed));
	return pid;
}

static uint64_t g_seg_bytes;
static int g_stuck;
static char g_segname[64];
static pid_t g_main_pid;

/* Killed from outside (ctest timeout, ^C): leave nothing in /dev/shm. */
static void on_signal(int sig)
{
	if (getpid() == g_main_pid && g_segname[0])
		shm_unlink(g_segname);
	signal(sig, SIG_DFL);
	raise(sig);
}
static int g_errfd = -1;      /* the caller's stderr, a temporary file */

static int caller_entry(const char *name, int cls, uint64_t seed)
{
	(void)cls;
	if (g_errfd >= 0)
		dup2(g_errfd, 2);
	return caller_main(name, g_seg_bytes, seed);
}

/* One round; returns 0 if the caller survived, 1 if not. */
static int round_run(int cls, int64_t round_ms, uint64_t seed)
{
	char name[64];
	struct flash_seg_opts o;
	struct flash_activity a;
	struct flash_stats st;
	flash_t *h = NULL;
	pid_t caller, scrib;
	int64_t t0, last_change;
	uint64_t last_calls = 0;
	int st_c = 0, bad = 0, hung = 0;

	snprintf(name, sizeof name, "/fs-scribble-%ld", (long)getpid());
	snprintf(g_segname, sizeof g_segname, "%s", name);
	(void)flash_seg_destroy(name);
	opts(&o);
	if (flash_seg_create(name, &o) != FLASH_OK || flash_open(name, 0, &h) != FLASH_OK) {
		fprintf(stderr, "cannot create %s\n", name);
		return 1;
	}
	memset(&a, 0, sizeof a);
	a.id = 1;
	a.limit_per_user = 3;
	a.max_qty = 2;
	a.start_ns = 0;
	a.end_ns = INT64_MAX;
	flash_activity_add(h, &a);
	for (uint32_t s = 10; s < 14; s++)
		flash_sku_add(h, 1, s, 1000, 1 + s % 4);
	for (uint64_t u = 1; u <= 60; u++) {
		struct flash_order_req r;

		memset(&r, 0, sizeof r);
		r.activity_id = 1;
		r.sku_id = 10 + (uint32_t)(u % 4);
		r.user_id = u;
		r.qty = 1;
		r.request_id = u;
		flash_order(h, &r, NULL);
	}
	flash_stats_get(h, &st);
	g_seg_bytes = st.segment_bytes;
	memset((void *)g_prog, 0, sizeof *g_prog);

	{
		FILE *f = tmpfile();

		g_errfd = f ? dup(fileno(f)) : -1;
		if (f)
			fclose(f);
	}
	caller = spawn(caller_entry, name, cls, seed);
	scrib = spawn(scribbler_main, name, cls, seed * 7 + 1);
	t0 = last_change = now_ms();
	while (now_ms() - t0 < round_ms) {
		usleep(20000);
		if (g_prog->calls != last_calls) {
			last_calls = g_prog->calls;
			last_change = now_ms();
		} else if (now_ms() - last_change > HANG_MS) {
			hung = 1;
			break;
		}
		if (waitpid(caller, &st_c, WNOHANG) == caller) {
			caller = 0;
			break;
		}
	}
	/* stop both; a caller dying of a fault (ASan prints a stack first) is
	 * given time to finish dying, and only a stuck one is killed */
	g_prog->stop = 1;
	if (caller != 0 && !hung) {
		int64_t t1 = now_ms();
		struct stat sb;
		int done = 0;

		/* the current call ends within HANG_MS, unless it is stuck -- or the
		 * caller is busy printing a sanitizer report (its stderr grows) */
		while (!(done = waitpid(caller, &st_c, WNOHANG) == caller) &&
		       (now_ms() - t1 < HANG_MS ||
		        (now_ms() - t1 < 60000 && fstat(g_errfd, &sb) == 0 && sb.st_size > 0)))
			usleep(10000);
		if (done)
			caller = 0;
		else
			hung = 1;
	}
	if (caller != 0) {
		if (hung && getenv("SCRIBBLE_GDB")) {
			char cmd[128];

			snprintf(cmd, sizeof cmd, "gdb -p %d -batch -ex bt 2>/dev/null | grep '^#'", (int)caller);
			if (system(cmd) != 0)
				printf("  (no stack)\n");
		}
		kill(caller, SIGKILL);
		waitpid(caller, &st_c, 0);
		st_c = 0;
	}
	{
		int st_s = 0;
		int64_t t1 = now_ms();

		while (now_ms() - t1 < 3000 && waitpid(scrib, &st_s, WNOHANG) != scrib)
			usleep(10000);
		if (now_ms() - t1 >= 3000) {
			if (getenv("SCRIBBLE_GDB")) {
				char cmd[128];

				snprintf(cmd, sizeof cmd, "gdb -p %d -batch -ex bt 2>/dev/null | grep '^#'", (int)scrib);
				if (system(cmd) != 0)
					printf("  (no stack)\n");
			}
			kill(scrib, SIGKILL);
			waitpid(scrib, &st_s, 0);
		}
		if (st_s != 0) {
			printf("  SCRIBBLER ended with status 0x%x\n", st_s);
			bad = 1;
		}
	}
	if (g_errfd >= 0) {
		/* whatever the caller printed (a sanitizer report) */
		char buf[4096];
		ssize_t r;
		off_t off = 0;

		while ((r = pread(g_errfd, buf, sizeof buf, off)) > 0) {
			fwrite(buf, 1, (size_t)r, stderr);
			off += r;
		}
		close(g_errfd);
		g_errfd = -1;
	}
	if (hung) {
		printf("  STUCK: no progress for %d ms in %s\n", HANG_MS, (const char *)g_prog->call);
		g_stuck++;
		bad = 1;
	} else if (st_c != 0) {
		if (WIFSIGNALED(st_c))
			printf("  CALLER KILLED by signal %d in %s\n", WTERMSIG(st_c), (const char *)g_prog->call);
		else
			printf("  CALLER EXITED %d in %s\n", WEXITSTATUS(st_c), (const char *)g_prog->call);
		bad = 1;
	}
	printf("%-44s %8llu calls, %7llu errors, %5lld ms, guards %s: %s\n", class_name[cls],
	       (unsigned long long)g_prog->calls, (unsigned long long)g_prog->errors,
	       (long long)(now_ms() - t0),
	       g_prog->guarded ? "tight" : "loose", bad ? "FAIL" : hung ? "stuck" : "ok");
	flash_close(h);
	flash_seg_destroy(name);
	return bad;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.4;
	int64_t round_ms = (int64_t)(secs * 1000);
	int fails = 0;
	uint64_t seed = (uint64_t)time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);
	g_main_pid = getpid();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	signal(SIGHUP, on_signal);
	{
		const char *s = getenv("SCRIBBLE_SEED");

		if (s != NULL)
			seed = strtoull(s, NULL, 0);
	}
	printf("scribble: seed %llu (SCRIBBLE_SEED=... repeats a run), %lld ms per round\n",
	       (unsigned long long)seed, (long long)round_ms);
	g_prog = mmap(NULL, sizeof *g_prog, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_prog == MAP_FAILED)
		return 2;
	for (int c = 0; c < C_COUNT; c++)
		if (argc <= 2 || atoi(argv[2]) == c)
			fails += round_run(c, round_ms, seed + (uint64_t)c);
	printf("scribble: %d of %d rounds failed (%d of them stuck in a call)\n", fails, C_COUNT, g_stuck);
	return fails ? 1 : 0;
}
