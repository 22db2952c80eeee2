/*
 * crash_persist.c -- every crash point of the WAL (append, group commit,
 * file roll-over), of the daemon's round and of the MySQL applier's batch;
 * after each, a restart as the daemon and the applier do it, then the checks
 * of DESIGN.md section 2 that concern them.
 *
 * Linked with flashstock_persist_crash (persist/ built with
 * FLASH_CRASHPOINTS=1 over flashstock_crash): every PERSIST_CRASH(op, step)
 * and every FS_CRASH(op, step) is one point of the same counter.  For each
 * n = 1, 2, ... a child runs the real code armed to _exit(77) at its n-th
 * point; the enumeration ends at the first n the child survives.
 *
 *   crash_persist wal     The daemon.  Setup: a segment whose three buyer
 *                         handles emitted the catalog and orders, a first
 *                         daemon (serve_run) that made them durable, then
 *                         more orders, a cancel and a restock in the rings --
 *                         more frames than one WAL file (4 KiB) holds.  The
 *                         child runs serve_run once over them (drain, append,
 *                         commit across a roll-over, durable marks, clean
 *                         stop).  Restart: serve_run once, as `flashstock
 *                         serve` starts (replay with truncation, wal_open,
 *                         first round).  Checks:
 *                          - before the restart the WAL replays cleanly (a
 *                            process crash never tears a frame), and every
 *                            record marked durable is in it;
 *                          - after the restart every record each handle
 *                            emitted is in the WAL exactly once (slot, seq
 *                            1..emitted), LSNs 1..N with no gap, the frames
 *                            that were there before the restart unchanged at
 *                            their LSNs, the new daemon wrote exactly the
 *                            records that were not marked durable (written +
 *                            skipped), every record is marked durable now,
 *                            the WAL opens;
 *                          - every unit accounted for from the WAL's records
 *                            (SKU + RESTOCK = available + active ORDER qty)
 *                            and every order of the order table matches the
 *                            WAL's ORDER/CANCEL records.
 *                         The same again where a daemon died between its
 *                         fdatasync and its durable marks, having written
 *                         half of those records ("wal-restart"): the child
 *                         is the restart, whose first round skips them.
 *   crash_persist mysql   The applier, on the private MariaDB of the ctest
 *                         fixture ($FLASH_MARIADB_DIR).  Setup once: a WAL
 *                         of real records (catalog, orders, cancels, a
 *                         restock) plus one duplicated ORDER frame, so one
 *                         batch takes the record-by-record path.  Per point:
 *                         a fresh database; the child catches up from the
 *                         WAL in batches; the parent checks what a crash may
 *                         leave (applied_lsn at a batch end, MySQL holding
 *                         exactly the WAL's orders up to it, stock balanced),
 *                         restarts the applier (a new handle, catch-up) and
 *                         checks the end state: applied_lsn = the WAL's last
 *                         LSN, each order exactly once with its WAL status,
 *                         item_stock = the WAL's figures, one conflict row.
 *
 * The program prints how many points it visited per operation and fails if
 * an operation it covers has none, or if any check failed.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "fs.h"
#include "mysql_apply.h"
#include "serve.h"
#include "wal.h"

#define MAX_N      4000   /* more points than any run has: a runaway guard */
#define NBUY       3      /* buyer handles */
#define WAL_SEG    4096u  /* tiny WAL files: the daemon's round rolls over */
#define APPLY_BATCH 16u   /* records per applier transaction */

/* ------------------------------------------------------------------ child results */

struct child_out {
	int  rc;            /* the run's result */
	int  hits;          /* points passed by a child that completed */
	int  exit_step;     /* the point _exit was called from */
	char exit_op[32];
};

static struct child_out *g_out;

void __wrap__exit(int status) __attribute__((noreturn));
void __real__exit(int status) __attribute__((noreturn));

/* Every _exit passes here (--wrap=_exit): a crash point names itself. */
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

/* ------------------------------------------------------------------ checks */

static int g_failures, g_case_failures, g_failed_cases;
static const char *g_scen = "?";
static int g_n;
static char g_point[64];
static char g_segname[64];
static pid_t g_main_pid;
static int g_verbose;            /* -v: one line per point */

static void on_signal(int sig)
{
	if (getpid() == g_main_pid && g_segname[0])
		shm_unlink(g_segname);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(int line, const char *fmt, ...)
{
	va_list ap;

	g_failures++;
	if (g_case_failures++ == 0)
		g_failed_cases++;
	if (g_case_failures > 3)
		return;
	fprintf(stderr, "FAIL [%s n=%d at %s] line %d: ", g_scen, g_n,
	        g_point[0] ? g_point : "completion", line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK(cond, ...) do { if (!(cond)) failf(__LINE__, __VA_ARGS__); } while (0)

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "crash_persist: %s: %s\n", what, detail);
	if (g_segname[0])
		shm_unlink(g_segname);
	exit(2);
}

/* ------------------------------------------------------------------ tally */

#define MAX_OPS 24

struct tally {
	int      n;
	char     op[MAX_OPS][32];
	int      points[MAX_OPS];
	unsigned steps[MAX_OPS];   /* bit s: step s seen */
};

static void tally_add(struct tally *t, const char *op, int step)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->op[i], op) == 0)
			break;
	if (i == t->n) {
		if (t->n == MAX_OPS)
			return;
		snprintf(t->op[t->n++], sizeof t->op[0], "%s", op);
	}
	t->points[i]++;
	if (step >= 0 && step < 32)
		t->steps[i] |= 1u << step;
}

static int tally_get(const struct tally *t, const char *op)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->op[i], op) == 0)
			return t->points[i];
	return 0;
}

static void tally_print(const struct tally *t, const char *scen, int total)
{
	printf("%-11s %4d points:", scen, total);
	for (int i = 0; i < t->n; i++) {
		printf(" %s %d (steps", t->op[i], t->points[i]);
		for (int s = 0; s < 32; s++)
			if (t->steps[i] & (1u << s))
				printf(" %d", s);
		printf(")%s", i + 1 < t->n ? "," : "");
	}
	printf("\n");
}

/* Fork, run @p fn armed at point @p n.  Returns 1 if the child died at a
 * crash point (g_point names it), 0 if it completed, -1 on anything else. */
static int run_child(int n, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	memset(g_out, 0, sizeof *g_out);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork", strerror(errno));
	if (pid == 0) {
		crash_arm(n);
		g_out->rc = fn(arg);
		g_out->hits = fs_crash_hits();
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == FLASH_CRASH_EXIT) {
		snprintf(g_point, sizeof g_point, "%s %d", g_out->exit_op, g_out->exit_step);
		return 1;
	}
	g_point[0] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	CHECK(0, "child ended with status 0x%x (rc %d)", status, g_out->rc);
	return -1;
}

/* ------------------------------------------------------------------ files */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void mk_tmpdir(char *buf, size_t len, const char *tag)
{
	const char *t = getenv("TMPDIR");

	snprintf(buf, len, "%s/flash-%s-%ld-XXXXXX", t ? t : "/tmp", tag, (long)getpid());
	if (mkdtemp(buf) == NULL)
		die("mkdtemp", strerror(errno));
}

/* Every valid frame of a WAL directory, in LSN order. */
struct frames {
	struct wal_rec *v;
	uint64_t       *lsn;
	size_t          n, cap;
	int             bad_type;
};

static int frames_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct frames *f = arg;

	if (type != WAL_T_RECORD || len != sizeof(struct wal_rec)) {
		f->bad_type++;
		return 0;
	}
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 256;
		f->v = realloc(f->v, f->cap * sizeof *f->v);
		f->lsn = realloc(f->lsn, f->cap * sizeof *f->lsn);
		if (f->v == NULL || f->lsn == NULL)
			die("realloc", "out of memory");
	}
	memcpy(&f->v[f->n], p, sizeof f->v[0]);
	f->lsn[f->n] = lsn;
	f->n++;
	return 0;
}

static int frames_read(const char *dir, struct frames *f)
{
	struct wal_replay_report rep;

	f->n = 0;
	f->bad_type = 0;
	return wal_replay(dir, 0, frames_cb, f, 0, &rep);
}

static void frames_free(struct frames *f)
{
	free(f->v);
	free(f->lsn);
	memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------------ the ledger of records */

/*
 * Units and orders as the records say, first occurrence of an order number
 * winning (the applier refuses a repeated one).  Nothing here reads a stock
 * counter.
 */
#define LEDGER_ORDERS 1024

struct ledger {
	int64_t  total;            /* SKU units + RESTOCK deltas */
	int      have_sku;
	uint32_t qty[LEDGER_ORDERS];    /* by order number; 0: no ORDER record */
	uint8_t  cancelled[LEDGER_ORDERS];
	uint64_t orders, dups;
	int64_t  sold;             /* active ORDER quantities */
};

static void ledger_add(struct ledger *l, const struct flash_record *r)
{
	switch (r->type) {
	case FLASH_REC_SKU:
		l->total += r->value;
		l->have_sku = 1;
		break;
	case FLASH_REC_RESTOCK:
		l->total += r->value;
		break;
	case FLASH_REC_ORDER:
		if (r->order_no == 0 || r->order_no >= LEDGER_ORDERS) {
			CHECK(0, "ORDER record with order number %" PRIu64, r->order_no);
			break;
		}
		if (l->qty[r->order_no] != 0) {
			l->dups++;
			break;
		}
		l->qty[r->order_no] = r->qty;
		l->orders++;
		l->sold += r->qty;
		break;
	case FLASH_REC_CANCEL:
		if (r->order_no == 0 || r->order_no >= LEDGER_ORDERS || l->qty[r->order_no] == 0 ||
		    l->cancelled[r->order_no]) {
			CHECK(0, "CANCEL record of order %" PRIu64 " without an active ORDER", r->order_no);
			break;
		}
		l->cancelled[r->order_no] = 1;
		l->sold -= l->qty[r->order_no];
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ segment helpers */

static void seg_opts(struct flash_seg_opts *o)
{
	flash_seg_opts_default(o);
	o->max_activities = 4;
	o->max_skus = 8;
	o->max_shards = 16;
	o->max_users = 512;
	o->max_tokens = 16;
	o->max_orders = 512;
	o->max_requests = 16;
	o->max_locks = 4;
	o->max_procs = 8;
	o->ring_records = 256;
	o->mode = 0600;
	o->gid = -1;
	o->durability = FLASH_DURABILITY_ASYNC;
}

#define ACT 1u
#define SKU 1u

static void must(int rc, const char *what)
{
	if (rc != FLASH_OK)
		die(what, flash_rcname(rc));
}

static void catalog(flash_t *h, uint64_t units)
{
	struct flash_activity a;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.id = ACT;
	a.limit_per_user = 2;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.start_ns = (int64_t)ts.tv_sec * 1000000000 - 3600ll * 1000000000;
	a.end_ns = (int64_t)ts.tv_sec * 1000000000 + 3600ll * 1000000000;
	must(flash_activity_add(h, &a), "activity");
	must(flash_sku_add(h, ACT, SKU, units, 2), "sku");
}

static uint64_t buy(flash_t *h, uint64_t user, uint32_t qty)
{
	struct flash_order_req r;
	struct flash_order_res res;

	memset(&r, 0, sizeof r);
	r.activity_id = ACT;
	r.sku_id = SKU;
	r.user_id = user;
	r.qty = qty;
	must(flash_order(h, &r, &res), "order");
	return res.order_no;
}

/* ================================================================== the daemon */

struct wcase {
	char     seg[64];
	char     dir[256];
	flash_t *h[NBUY];
	uint32_t slot[NBUY];
	uint64_t emitted[NBUY];  /* records each handle emitted (its seqs 1..emitted) */
	uint64_t mark[NBUY];     /* durable mark of its slot when the child died */
	uint64_t user;
};

static void serve_opts_for(struct serve_opts *o, const struct wcase *c)
{
	serve_opts_default(o);
	o->segment = c->seg;
	o->wal_dir = c->dir;
	o->wal_segment_bytes = WAL_SEG;
	o->once = 1;
	o->log_level = -1;       /* crashes and torn tails are the point here: quiet */
}

static void w_order(struct wcase *c, int k, uint32_t qty, uint64_t *no)
{
	uint64_t o = buy(c->h[k], ++c->user, qty);

	if (no)
		*no = o;
	c->emitted[k]++;
}

/* Frames one WAL file holds. */
static uint64_t frames_per_file(void)
{
	return (WAL_SEG - WAL_FILE_HDR_BYTES) / wal_frame_bytes(sizeof(struct wal_rec));
}

/* A daemon that died after its fdatasync, before any durable mark: it
 * wrote the first @p n records the rings held. */
static int dead_daemon_cb(void *arg, const struct flash_record *rec, uint64_t seq)
{
	return wal_append_record(arg, rec, seq, NULL) != FLASH_OK;
}

static void dead_daemon(struct wcase *c, uint32_t n)
{
	struct wal_opts wo;
	flash_t *cons;
	wal_t *w;
	uint32_t d = 0;
	int rc;

	must(flash_open(c->seg, 0, &cons), "open");
	wal_opts_default(&wo);
	wo.segment_bytes = WAL_SEG;
	if ((rc = wal_open(c->dir, &wo, &w)) != FLASH_OK)
		die("wal_open", flash_rcname(rc));
	must(flash_ring_drain(cons, dead_daemon_cb, w, n, &d), "drain");
	if (d != n)
		die("dead daemon", "drained fewer records than asked");
	if ((rc = wal_close(w)) != FLASH_OK)
		die("wal_close", flash_rcname(rc));
	flash_close(cons);
}

static void w_setup(struct wcase *c, int after_dead)
{
	struct flash_seg_opts so;
	struct serve_opts o;
	struct serve_stats st;
	uint64_t no, in_rings;
	int rc;

	memset(c, 0, sizeof *c);
	snprintf(c->seg, sizeof c->seg, "/fs-cpersist-%ld", (long)getpid());
	snprintf(g_segname, sizeof g_segname, "%s", c->seg);
	(void)flash_seg_destroy(c->seg);
	mk_tmpdir(c->dir, sizeof c->dir, "cpwal");
	seg_opts(&so);
	must(flash_seg_create(c->seg, &so), "segment");
	for (int k = 0; k < NBUY; k++) {
		must(flash_open(c->seg, 0, &c->h[k]), "open");
		c->slot[k] = (uint32_t)flash_slot(c->h[k]);
	}
	catalog(c->h[0], 1000);
	c->emitted[0] += 2;
	for (int i = 0; i < 2 * NBUY; i++)
		w_order(c, i % NBUY, 1 + (uint32_t)i % 3, NULL);
	/* a first daemon makes all of that durable */
	serve_opts_for(&o, c);
	rc = serve_run(&o, &st);
	if (rc != 0)
		die("first daemon", flash_rcname(st.rc));
	/* then more than one WAL file of records waits in the rings */
	in_rings = frames_per_file() + 4;
	for (uint64_t i = 0; i + 2 < in_rings; i++)
		w_order(c, (int)(i % NBUY), 1 + (uint32_t)i % 4, i == 1 ? &no : NULL);
	must(flash_cancel(c->h[1], no, NULL), "cancel");
	c->emitted[1]++;
	must(flash_restock(c->h[2], ACT, SKU, 7), "restock");
	c->emitted[2]++;
	/* the restart case: half of them are in the WAL already, unmarked */
	if (after_dead)
		dead_daemon(c, (uint32_t)(in_rings / 2));
}

static void w_teardown(struct wcase *c)
{
	for (int k = 0; k < NBUY; k++)
		flash_close(c->h[k]);
	flash_seg_destroy(c->seg);
	rm_tree(c->dir);
}

static int w_child(void *arg)
{
	struct wcase *c = arg;
	struct serve_opts o;
	struct serve_stats st;

	serve_opts_for(&o, c);
	return serve_run(&o, &st);
}

/* Which frame carries (slot, seq)?  -1: none. */
static long frames_find(const struct frames *f, uint32_t slot, uint64_t seq)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].wr_rec.slot == slot && f->v[i].wr_seq == seq)
			return (long)i;
	return -1;
}

static void w_check(struct wcase *c)
{
	struct frames pre = { 0 }, post = { 0 };
	struct serve_opts o;
	struct serve_stats st;
	uint64_t pending = 0, emitted = 0;
	int rc;

	/* -- before the restart: what the crash left -- */
	rc = frames_read(c->dir, &pre);
	CHECK(rc == FLASH_OK, "WAL after the crash: %s (a process crash never tears a frame)",
	      flash_rcname(rc));
	CHECK(pre.bad_type == 0, "%d frames of another type", pre.bad_type);
	for (int k = 0; k < NBUY; k++) {
		c->mark[k] = ck_pr_load_64(&c->h[k]->proc[c->slot[k]].cons_seq);
		CHECK(c->mark[k] <= c->emitted[k], "slot %u marked durable up to %" PRIu64
		      " of %" PRIu64 " records", c->slot[k], c->mark[k], c->emitted[k]);
		/* nothing reported durable that the WAL does not hold */
		for (uint64_t s = 1; s <= c->mark[k]; s++)
			CHECK(frames_find(&pre, c->slot[k], s) >= 0, "slot %u seq %" PRIu64
			      " marked durable but not in the WAL", c->slot[k], s);
		pending += c->emitted[k] - c->mark[k];
		emitted += c->emitted[k];
	}

	/* -- the restart, as the daemon starts -- */
	serve_opts_for(&o, c);
	rc = serve_run(&o, &st);
	CHECK(rc == 0, "restart: serve_run %d (%s)", rc, flash_rcname(st.rc));
	CHECK(st.records + st.skipped == pending, "restart wrote %" PRIu64 " and skipped %" PRIu64
	      " records; %" PRIu64 " were not marked durable", st.records, st.skipped, pending);

	/* -- after: every record exactly once, no gap, the old frames kept -- */
	rc = frames_read(c->dir, &post);
	CHECK(rc == FLASH_OK, "WAL after the restart: %s", flash_rcname(rc));
	CHECK(post.n == emitted, "WAL holds %zu records, %" PRIu64 " were emitted", post.n, emitted);
	CHECK(post.n == pre.n + st.records, "WAL grew from %zu by %zu, the restart wrote %" PRIu64,
	      pre.n, post.n - pre.n, st.records);
	for (size_t i = 0; i < post.n; i++)
		if (post.lsn[i] != i + 1) {
			CHECK(0, "frame %zu has LSN %" PRIu64, i, post.lsn[i]);
			break;
		}
	for (size_t i = 0; i < pre.n && i < post.n; i++)
		if (memcmp(&pre.v[i], &post.v[i], sizeof pre.v[i]) != 0 || pre.lsn[i] != post.lsn[i]) {
			CHECK(0, "frame LSN %" PRIu64 " changed across the restart", pre.lsn[i]);
			break;
		}
	for (int k = 0; k < NBUY; k++) {
		uint64_t *cnt = calloc(c->emitted[k] + 1, sizeof *cnt);

		if (cnt == NULL)
			die("calloc", "out of memory");
		for (size_t i = 0; i < post.n; i++) {
			const struct wal_rec *r = &post.v[i];

			if (r->wr_rec.slot != c->slot[k])
				continue;
			CHECK(r->wr_seq >= 1 && r->wr_seq <= c->emitted[k], "slot %u: seq %" PRIu64
			      " was never emitted", c->slot[k], r->wr_seq);
			if (r->wr_seq >= 1 && r->wr_seq <= c->emitted[k])
				cnt[r->wr_seq]++;
		}
		for (uint64_t s = 1; s <= c->emitted[k]; s++)
			CHECK(cnt[s] == 1, "slot %u seq %" PRIu64 " is in the WAL %" PRIu64 " times",
			      c->slot[k], s, cnt[s]);
		free(cnt);
		CHECK(ck_pr_load_64(&c->h[k]->proc[c->slot[k]].cons_seq) == c->emitted[k],
		      "slot %u durable up to %" PRIu64 " after the restart, emitted %" PRIu64,
		      c->slot[k], ck_pr_load_64(&c->h[k]->proc[c->slot[k]].cons_seq), c->emitted[k]);
	}
	for (size_t i = 0; i < post.n; i++) {
		uint32_t s = post.v[i].wr_rec.slot;

		CHECK(s == c->slot[0] || s == c->slot[1] || s == c->slot[2],
		      "record of slot %u, which emitted nothing", s);
	}

	/* -- the WAL opens for appending -- */
	{
		struct wal_opts wo;
		wal_t *w = NULL;

		wal_opts_default(&wo);
		wo.segment_bytes = WAL_SEG;
		rc = wal_open(c->dir, &wo, &w);
		CHECK(rc == FLASH_OK, "wal_open after the restart: %s", flash_rcname(rc));
		if (rc == FLASH_OK) {
			CHECK(wal_next_lsn(w) == post.n + 1, "wal_open continues at LSN %" PRIu64
			      ", the WAL ends at %zu", wal_next_lsn(w), post.n);
			CHECK(wal_close(w) == FLASH_OK, "wal_close");
		}
	}

	/* -- every unit accounted for, from the WAL's records -- */
	{
		static struct ledger l;
		struct flash_sku_info si;
		uint64_t omax;

		memset(&l, 0, sizeof l);
		for (size_t i = 0; i < post.n; i++)
			ledger_add(&l, &post.v[i].wr_rec);
		CHECK(l.dups == 0, "%" PRIu64 " ORDER records repeat an order number", l.dups);
		rc = flash_sku_get(c->h[0], ACT, SKU, &si);
		CHECK(rc == FLASH_OK, "flash_sku_get: %s", flash_rcname(rc));
		CHECK(l.have_sku && (int64_t)si.total == l.total, "sku total %" PRIu64
		      ", the WAL's SKU + RESTOCK records say %" PRId64, si.total, l.total);
		CHECK((int64_t)si.available == l.total - l.sold, "available %" PRIu64 ", the WAL says %"
		      PRId64 " - %" PRId64 " sold", si.available, l.total, l.sold);
		omax = flash_orders_max(c->h[0]);
		for (uint64_t no = 1; no <= omax && no < LEDGER_ORDERS; no++) {
			struct flash_order_info oi;
			uint32_t want = l.qty[no] == 0 ? FLASH_ORDER_NONE : l.cancelled[no] ?
			                FLASH_ORDER_CANCELLED : FLASH_ORDER_ACTIVE;

			rc = flash_order_get(c->h[0], no, &oi);
			CHECK(rc == FLASH_OK, "flash_order_get %" PRIu64 ": %s", no, flash_rcname(rc));
			if (rc != FLASH_OK)
				continue;
			CHECK(oi.state == want, "order %" PRIu64 " in state %u, the WAL says %u", no,
			      oi.state, want);
			CHECK(want == FLASH_ORDER_NONE || oi.qty == l.qty[no], "order %" PRIu64
			      " qty %u, the WAL says %u", no, oi.qty, l.qty[no]);
		}
	}
	frames_free(&pre);
	frames_free(&post);
}

/*
 * @p after_dead 0: the child is a daemon over fresh records in the rings.
 * 1: the child is the restart after a daemon that died between its
 * fdatasync and its durable marks (its first round skips what the WAL has).
 */
static int enumerate_wal(struct tally *t, int after_dead)
{
	static struct wcase c;
	int n, last_hits = -1;

	g_scen = after_dead ? "wal-restart" : "wal";
	for (n = 1; n <= MAX_N; n++) {
		int crashed;

		g_n = n;
		g_case_failures = 0;
		w_setup(&c, after_dead);
		crashed = run_child(n, w_child, &c);
		if (crashed < 0) {
			w_teardown(&c);
			return -1;
		}
		if (crashed)
			tally_add(t, g_out->exit_op, g_out->exit_step);
		if (g_verbose)
			printf("%s n=%d: %s\n", g_scen, n, crashed ? g_point : "completed");
		if (!crashed) {
			last_hits = g_out->hits;
			CHECK(g_out->rc == 0, "the daemon that was not stopped returned %d", g_out->rc);
		}
		w_check(&c);
		w_teardown(&c);
		if (!crashed)
			break;
	}
	g_point[0] = '\0';
	CHECK(n <= MAX_N, "the daemon did not complete within %d points", MAX_N);
	CHECK(last_hits == n - 1, "completed after %d points, but the run counted %d", n - 1,
	      last_hits);
	return n - 1;
}

/* ================================================================== the applier */

struct mcase {
	char     dir[256];          /* WAL */
	char     sock[512];
	struct lsn_record *recs;   /* the WAL's records, LSN i+1 at [i] */
	size_t   n;
	uint64_t dup_lsn;           /* the repeated ORDER frame */
	char     db[64];
	char     url[1024];
};

static int drain_keep(void *arg, const struct flash_record *r, uint64_t seq)
{
	struct mcase *m = arg;
	struct lsn_record *v = realloc(m->recs, (m->n + 2) * sizeof *v);

	(void)seq;
	if (v == NULL)
		return 1;
	m->recs = v;
	m->recs[m->n].rec = *r;
	m->recs[m->n].lsn = m->n + 1;
	m->n++;
	return 0;
}

static void quiet_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	(void)msg;
}

/* A WAL of real records: a segment's catalog, orders, cancels and a
 * restock, in drain order; one ORDER frame repeated further on. */
static void m_setup(struct mcase *m)
{
	struct flash_seg_opts so;
	flash_t *h[2], *cons;
	uint64_t nos[8];
	uint32_t d = 0;
	wal_t *w;
	int rc;

	memset(m, 0, sizeof *m);
	const char *mdir = getenv("FLASH_MARIADB_DIR");
	if (mdir == NULL || *mdir == '\0')
		die("FLASH_MARIADB_DIR", "not set: run through ctest (mysql_server_start)");
	snprintf(m->sock, sizeof m->sock, "%s/mysqld.sock", mdir);
	snprintf(g_segname, sizeof g_segname, "/fs-cpersist-m-%ld", (long)getpid());
	(void)flash_seg_destroy(g_segname);
	seg_opts(&so);
	must(flash_seg_create(g_segname, &so), "segment");
	must(flash_open(g_segname, 0, &h[0]), "open");
	must(flash_open(g_segname, 0, &h[1]), "open");
	must(flash_open(g_segname, 0, &cons), "open");
	catalog(h[0], 300);
	for (int i = 0; i < 40; i++) {
		uint64_t no = buy(h[i % 2], 5000 + (uint64_t)i, 1 + (uint32_t)i % 4);

		if (i % 9 == 0 && i / 9 < 8)
			nos[i / 9] = no;
		if (i == 12)
			must(flash_cancel(h[1], nos[0], NULL), "cancel");
		if (i == 30) {
			must(flash_cancel(h[0], nos[2], NULL), "cancel");
			must(flash_restock(h[1], ACT, SKU, 11), "restock");
		}
	}
	must(flash_ring_drain(cons, drain_keep, m, UINT32_MAX, &d), "drain");
	if (d != m->n)
		die("drain", "out of memory");
	flash_close(cons);
	flash_close(h[0]);
	flash_close(h[1]);
	flash_seg_destroy(g_segname);
	g_segname[0] = '\0';

	/* repeat an early ORDER in the second batch: that batch goes record by record */
	{
		size_t at = APPLY_BATCH + APPLY_BATCH / 2, src = 0;

		while (m->recs[src].rec.type != FLASH_REC_ORDER)
			src++;
		struct lsn_record *v = realloc(m->recs, (m->n + 1) * sizeof *v);
		if (v == NULL)
			die("realloc", "out of memory");
		m->recs = v;
		memmove(&m->recs[at + 1], &m->recs[at], (m->n - at) * sizeof *v);
		m->recs[at] = m->recs[src];
		m->n++;
		for (size_t i = 0; i < m->n; i++)
			m->recs[i].lsn = i + 1;
		m->dup_lsn = at + 1;
	}
	mk_tmpdir(m->dir, sizeof m->dir, "cpapply");
	if ((rc = wal_open(m->dir, NULL, &w)) != FLASH_OK)
		die("wal_open", flash_rcname(rc));
	for (size_t i = 0; i < m->n; i++)
		if ((rc = wal_append_record(w, &m->recs[i].rec, i + 1, NULL)) != FLASH_OK)
			die("wal_append", flash_rcname(rc));
	if ((rc = wal_close(w)) != FLASH_OK)
		die("wal_close", flash_rcname(rc));
}

static mdb_t *m_open(struct mcase *m)
{
	struct mdb_opts o;
	mdb_t *h = NULL;
	int rc;

	memset(&o, 0, sizeof o);
	o.url = m->url;
	o.log = quiet_log;
	rc = mdb_open(&o, &h);
	if (rc != FLASH_OK) {
		mdb_close(h);
		die("mdb_open", flash_strerror(rc));
	}
	return h;
}

static int m_child(void *arg)
{
	struct mcase *m = arg;
	mdb_t *h = NULL;
	struct mdb_opts o;
	int rc;

	/* the child's own connection; the crash counter starts at its first batch */
	crash_arm(0);
	memset(&o, 0, sizeof o);
	o.url = m->url;
	o.log = quiet_log;
	if ((rc = mdb_open(&o, &h)) != FLASH_OK)
		return rc;
	crash_arm(g_n);
	return mdb_catch_up(h, m->dir, APPLY_BATCH, 0, NULL);
}

static uint64_t q_u64(MYSQL *c, const char *sql)
{
	MYSQL_RES *r;
	MYSQL_ROW row;
	uint64_t v = UINT64_MAX;

	if (mysql_query(c, sql) != 0) {
		CHECK(0, "%s: %s", sql, mysql_error(c));
		return v;
	}
	if ((r = mysql_store_result(c)) == NULL) {
		CHECK(0, "%s: no result", sql);
		return v;
	}
	if ((row = mysql_fetch_row(r)) != NULL && row[0] != NULL)
		v = strtoull(row[0], NULL, 10);
	mysql_free_result(r);
	return v;
}

/* MySQL against the WAL's records with LSN <= @p upto. */
static void m_expect(MYSQL *c, const struct mcase *m, uint64_t upto, const char *when)
{
	static struct ledger l;
	MYSQL_RES *r;
	MYSQL_ROW row;
	uint64_t rows = 0;
	char sql[256];

	memset(&l, 0, sizeof l);
	for (size_t i = 0; i < m->n && m->recs[i].lsn <= upto; i++)
		ledger_add(&l, &m->recs[i].rec);
	/* each order exactly once, with its WAL status */
	if (mysql_query(c, "SELECT order_no, qty, status FROM orders ORDER BY order_no") != 0 ||
	    (r = mysql_store_result(c)) == NULL) {
		CHECK(0, "%s: orders: %s", when, mysql_error(c));
		return;
	}
	while ((row = mysql_fetch_row(r)) != NULL) {
		uint64_t no = strtoull(row[0], NULL, 10);
		uint32_t qty = (uint32_t)strtoul(row[1], NULL, 10);
		int canc = strcmp(row[2], "CANCELLED") == 0;

		rows++;
		if (no >= LEDGER_ORDERS || l.qty[no] == 0) {
			CHECK(0, "%s: MySQL holds order %" PRIu64 ", not in the WAL up to LSN %" PRIu64,
			      when, no, upto);
			continue;
		}
		CHECK(qty == l.qty[no] && canc == l.cancelled[no], "%s: order %" PRIu64
		      " qty %u %s, the WAL says qty %u %s", when, no, qty, row[2], l.qty[no],
		      l.cancelled[no] ? "CANCELLED" : "ACTIVE");
	}
	mysql_free_result(r);
	CHECK(rows == l.orders, "%s: MySQL holds %" PRIu64 " orders, the WAL up to LSN %" PRIu64
	      " has %" PRIu64, when, rows, upto, l.orders);
	/* every unit accounted for */
	if (l.have_sku) {
		snprintf(sql, sizeof sql, "SELECT total FROM item_stock WHERE activity_id=%u AND sku_id=%u",
		         ACT, SKU);
		CHECK((int64_t)q_u64(c, sql) == l.total, "%s: item_stock.total, WAL says %" PRId64,
		      when, l.total);
		snprintf(sql, sizeof sql, "SELECT sold FROM item_stock WHERE activity_id=%u AND sku_id=%u",
		         ACT, SKU);
		CHECK((int64_t)q_u64(c, sql) == l.sold, "%s: item_stock.sold, WAL says %" PRId64,
		      when, l.sold);
		snprintf(sql, sizeof sql, "SELECT available FROM item_stock WHERE activity_id=%u AND "
		         "sku_id=%u", ACT, SKU);
		CHECK((int64_t)q_u64(c, sql) == l.total - l.sold, "%s: item_stock.available, WAL says %"
		      PRId64, when, l.total - l.sold);
	} else {
		CHECK(q_u64(c, "SELECT COUNT(*) FROM item_stock") == 0, "%s: a stock row before its "
		      "SKU record was applied", when);
	}
	CHECK(q_u64(c, "SELECT COUNT(*) FROM apply_conflicts") == l.dups, "%s: conflict rows, the "
	      "WAL up to LSN %" PRIu64 " has %" PRIu64 " repeated orders", when, upto, l.dups);
}

static void m_drop(MYSQL *c, const char *db)
{
	char sql[128];

	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", db);
	if (c == NULL || mysql_query(c, sql) != 0)
		CHECK(0, "drop %s: %s", db, c ? mysql_error(c) : "no connection");
}

static int enumerate_mysql(struct tally *t)
{
	static struct mcase m;
	int n, last_hits = -1;
	uint64_t last;

	g_scen = "mysql";
	m_setup(&m);
	last = m.recs[m.n - 1].lsn;
	for (n = 1; n <= MAX_N; n++) {
		mdb_t *h0, *h1;
		MYSQL *c;
		uint64_t a;
		int crashed, rc;

		g_n = n;
		g_case_failures = 0;
		snprintf(m.db, sizeof m.db, "fcp_%ld_%d", (long)getpid(), n);
		snprintf(m.url, sizeof m.url, "mysql://root@localhost/%s?socket=%s", m.db, m.sock);
		h0 = m_open(&m);                /* creates the database and the schema */
		crashed = run_child(n, m_child, &m);
		if (crashed < 0) {
			m_drop(mdb_conn(h0), m.db);
			mdb_close(h0);
			break;
		}
		if (crashed)
			tally_add(t, g_out->exit_op, g_out->exit_step);
		if (g_verbose)
			printf("mysql n=%d: %s\n", n, crashed ? g_point : "completed");
		if (!crashed) {
			last_hits = g_out->hits;
			CHECK(g_out->rc == FLASH_OK, "the applier that was not stopped returned %d",
			      g_out->rc);
		}
		c = mdb_conn(h0);
		if (c == NULL)
			die("MySQL", "connection lost");
		/* what the crash left: whole batches, nothing else */
		a = q_u64(c, "SELECT lsn FROM applied_lsn WHERE stream='wal'");
		CHECK(a == last || a % APPLY_BATCH == 0, "applied_lsn %" PRIu64 " is not a batch end", a);
		m_expect(c, &m, a, "after the crash");
		/* the applier restarts */
		h1 = m_open(&m);
		rc = mdb_catch_up(h1, m.dir, APPLY_BATCH, 30000, NULL);
		CHECK(rc == FLASH_OK, "restart: catch-up %s", flash_rcname(rc));
		mdb_close(h1);
		a = q_u64(c, "SELECT lsn FROM applied_lsn WHERE stream='wal'");
		CHECK(a == last, "applied_lsn %" PRIu64 " after the restart, the WAL ends at %" PRIu64,
		      a, last);
		m_expect(c, &m, last, "after the restart");
		m_drop(c, m.db);
		mdb_close(h0);
		if (!crashed)
			break;
	}
	g_point[0] = '\0';
	CHECK(n <= MAX_N, "the applier did not complete within %d points", MAX_N);
	CHECK(last_hits == n - 1, "completed after %d points, but the run counted %d", n - 1,
	      last_hits);
	rm_tree(m.dir);
	free(m.recs);
	return n - 1;
}

/* ================================================================== main */

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: crash_persist [-v] wal|mysql\n"
	        "  -v     print the point each run died at\n"
	        "  wal    crash the daemon at every point of serve_round, wal_append, wal_commit\n"
	        "         and wal_roll; restart; check the WAL, the rings and the units\n"
	        "  mysql  crash the MySQL applier at every point of apply_batch; restart;\n"
	        "         check applied_lsn, the orders and the stock (needs $FLASH_MARIADB_DIR)\n");
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const wal_ops[] = { "wal_append", "wal_commit", "wal_roll", "serve_round" };
	static const char *const mysql_ops[] = { "apply_batch" };
	struct tally t;
	struct timespec t0, t1;
	int total, zero = 0;

	if (argc == 3 && strcmp(argv[1], "-v") == 0) {
		g_verbose = 1;
		argv++;
		argc--;
	}
	if (argc != 2)
		return usage(stderr, 2);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		return usage(stdout, 0);
	if (strcmp(argv[1], "wal") != 0 && strcmp(argv[1], "mysql") != 0) {
		fprintf(stderr, "crash_persist: unknown mode '%s'\n", argv[1]);
		return usage(stderr, 2);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_main_pid = getpid();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	signal(SIGHUP, on_signal);
	g_out = mmap(NULL, sizeof *g_out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_out == MAP_FAILED)
		die("mmap", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* each scenario: its points, and every operation it covers visited */
	{
		struct scen {
			const char *name;
			int after_dead;
			const char *const *ops;
			size_t nops;
		} scens[] = {
			{ "wal", 0, wal_ops, 4 },          /* fresh records, a roll-over */
			{ "wal-restart", 1, wal_ops, 4 },  /* a restart that skips, then rolls */
			{ "mysql", 0, mysql_ops, 1 },
		};

		total = 0;
		for (size_t s = 0; s < sizeof scens / sizeof scens[0]; s++) {
			int wal = strncmp(scens[s].name, "wal", 3) == 0, n;

			if (wal != (strcmp(argv[1], "wal") == 0))
				continue;
			memset(&t, 0, sizeof t);
			n = wal ? enumerate_wal(&t, scens[s].after_dead) : enumerate_mysql(&t);
			tally_print(&t, scens[s].name, n);
			if (n <= 0)
				zero++;
			total += n > 0 ? n : 0;
			for (size_t i = 0; i < scens[s].nops; i++)
				if (tally_get(&t, scens[s].ops[i]) == 0) {
					fprintf(stderr, "FAIL: %s: operation %s has no crash point\n",
					        scens[s].name, scens[s].ops[i]);
					zero++;
				}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("total: %d crash points visited, %d operations without any, %d failed checks "
	       "in %d cases (%.1f s)\n", total, zero, g_failures, g_failed_cases,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return (g_failures || zero) ? 1 : 0;
}
