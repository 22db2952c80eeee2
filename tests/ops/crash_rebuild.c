/*
 * crash_rebuild.c -- `serve --recover` killed at every crash point of the
 * rebuild (and of the engine's replay under it, and of the daemon after
 * it), then run again: the segment name is at every moment either the
 * empty placeholder or the complete rebuild, never a half-built segment,
 * and the next rebuild gives the same segment (every sku and every order
 * identical to a rebuild that was never interrupted), with no temporary
 * segment left over.
 *
 * Linked with flashstock_persist_crash (persist/ with FLASH_CRASHPOINTS=1
 * over flashstock_crash): PERSIST_CRASH and FS_CRASH share one counter.
 * For each n = 1, 2, ... a child runs serve_run(recover, once) armed to
 * _exit(77) at its n-th point; the enumeration ends at the first n the child
 * survives.  Setup: a segment with a catalog, orders, cancels and a restock,
 * its records made durable by a daemon into a WAL of tiny (4 KiB) files,
 * then the segment destroyed (a reboot).
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flashstock.h"
#include "fs.h"          /* crash_arm(), FLASH_CRASH_EXIT (test builds) */
#include "serve.h"

#define MAX_N    20000   /* a runaway guard: more points than a run has */
#define WAL_SEG  4096u
#define ACT      1u
#define NORD     24

static char g_seg[64], g_dir[256];
static int  g_failures;

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "crash_rebuild: %s: %s\n", what, detail);
	if (g_seg[0])
		flash_seg_destroy(g_seg);
	exit(2);
}

static void must(int rc, const char *what)
{
	if (rc != FLASH_OK)
		die(what, flash_rcname(rc));
}

#define CHECK(cond, ...) do { if (!(cond)) { g_failures++; fprintf(stderr, "crash_rebuild: " \
	"line %d: ", __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

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

static void serve_opts(struct serve_opts *o, int recover)
{
	serve_opts_default(o);
	o->segment = g_seg;
	o->wal_dir = g_dir;
	o->wal_segment_bytes = WAL_SEG;
	o->once = 1;
	o->recovery.on = recover;
	o->reconcile.every_ms = 0;
	o->log_level = -1;
}

/* A sale: catalog, orders, a cancel every fifth, a restock; then a daemon. */
static void setup(void)
{
	struct flash_seg_opts so;
	flash_t *h;
	struct flash_activity a;
	struct timespec ts;
	uint64_t nos[NORD];

	seg_opts(&so);
	must(flash_seg_create(g_seg, &so), "create");
	must(flash_open(g_seg, 0, &h), "open");
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&a, 0, sizeof a);
	a.id = ACT;
	a.limit_per_user = 2;
	a.max_qty = 4;
	a.scope = FLASH_SCOPE_ACTIVITY;
	a.start_ns = (int64_t)ts.tv_sec * 1000000000 - 3600ll * 1000000000;
	a.end_ns = (int64_t)ts.tv_sec * 1000000000 + 3600ll * 1000000000;
	must(flash_activity_add(h, &a), "activity");
	must(flash_sku_add(h, ACT, 1, 100, 2), "sku 1");
	must(flash_sku_add(h, ACT, 2, 40, 1), "sku 2");
	for (int i = 0; i < NORD; i++) {
		struct flash_order_req r;
		struct flash_order_res res;

		memset(&r, 0, sizeof r);
		r.activity_id = ACT;
		r.sku_id = 1 + (uint32_t)(i % 2);
		r.user_id = 1 + (uint64_t)i;
		r.qty = 1 + (uint32_t)(i % 3);
		must(flash_order(h, &r, &res), "order");
		nos[i] = res.order_no;
	}
	for (int i = 0; i < NORD; i += 5)
		must(flash_cancel(h, nos[i], NULL), "cancel");
	must(flash_restock(h, ACT, 2, 7), "restock");
	struct serve_opts o;
	struct serve_stats st;
	serve_opts(&o, 0);
	if (serve_run(&o, &st) != 0)
		die("serve", flash_rcname(st.rc));
	flash_close(h);
	must(flash_seg_destroy(g_seg), "destroy");
}

/* What a rebuild must reproduce: every sku and every order. */
struct state {
	uint32_t                nsku;
	struct flash_sku_info   sku[8];
	uint32_t                norder;
	struct flash_order_info order[64];
	int                     order_rc[64];
};

/* The state of the segment; 0 if it has no activity (the placeholder). */
static int state_of(struct state *s)
{
	flash_t *h;

	memset(s, 0, sizeof *s);
	must(flash_open(g_seg, FLASH_RDONLY, &h), "open state");
	struct flash_stats st;
	must(flash_stats_get(h, &st), "stats");
	int full = st.activities != 0;
	while (s->nsku < 8 && flash_sku_at(h, s->nsku, &s->sku[s->nsku]) == FLASH_OK)
		s->nsku++;
	for (uint32_t i = 0; i < 64; i++)
		s->order_rc[i] = flash_order_get(h, 1 + i, &s->order[i]);
	s->norder = 64;
	flash_close(h);
	return full;
}

static void placeholder(void)
{
	struct flash_seg_opts so;

	(void)flash_seg_destroy(g_seg);
	seg_opts(&so);
	must(flash_seg_create(g_seg, &so), "placeholder");
}

/* "<seg>.recover-<pid>" segments in /dev/shm. */
static int tmp_count(void)
{
	char pre[96];
	int n = 0;
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	snprintf(pre, sizeof pre, "%s.recover-", g_seg + 1);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, pre, strlen(pre)) == 0;
	closedir(d);
	return n;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

int main(void)
{
	const char *t = getenv("TMPDIR");
	static struct state ref, got;
	int points = 0, mid = 0, done = 0;

	snprintf(g_seg, sizeof g_seg, "/flash-crashrb-%ld", (long)getpid());
	snprintf(g_dir, sizeof g_dir, "%s/flash-crashrb-%ld-XXXXXX", t ? t : "/tmp", (long)getpid());
	if (mkdtemp(g_dir) == NULL)
		die("mkdtemp", strerror(errno));
	setup();

	/* the reference: one rebuild, never interrupted */
	struct serve_opts o;
	struct serve_stats st;
	placeholder();
	serve_opts(&o, 1);
	if (serve_run(&o, &st) != 0)
		die("reference rebuild", flash_rcname(st.rc));
	if (!state_of(&ref))
		die("reference rebuild", "empty");

	for (int n = 1; n <= MAX_N && !done; n++) {
		placeholder();
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			die("fork", strerror(errno));
		if (pid == 0) {
			crash_arm(n);
			_exit(serve_run(&o, &st) == 0 ? 0 : 3);
		}
		int status;
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid", strerror(errno));
		int crashed = WIFEXITED(status) && WEXITSTATUS(status) == FLASH_CRASH_EXIT;
		CHECK(crashed || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
		      "point %d: the rebuild ended with status 0x%x", n, status);
		if (!crashed)
			done = 1;
		/* the name: the placeholder, or the complete rebuild */
		if (state_of(&got)) {
			CHECK(memcmp(&got, &ref, sizeof got) == 0, "point %d: the segment is neither empty "
			      "nor the complete rebuild", n);
		} else {
			mid++;
			if (serve_run(&o, &st) != 0) {
				CHECK(0, "point %d: the rebuild after the crash failed: %s", n,
				      flash_rcname(st.rc));
				continue;
			}
			state_of(&got);
			CHECK(memcmp(&got, &ref, sizeof got) == 0, "point %d: the rebuild after the crash "
			      "differs from the reference", n);
		}
		CHECK(tmp_count() == 0, "point %d: a temporary segment outlived the next rebuild", n);
		points++;
	}
	CHECK(done, "the enumeration did not end within %d points", MAX_N);
	CHECK(mid > 0, "no point fell before the rename");
	flash_seg_destroy(g_seg);
	nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("crash_rebuild: %d points (%d before the rename: the name kept the placeholder); "
	       "every rebuild after a crash equals the uninterrupted one; %d failure(s)\n",
	       points, mid, g_failures);
	return g_failures ? 1 : 0;
}
