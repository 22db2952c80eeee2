/*
 * test_api_loaded_once.c -- values the engine reads from the segment are
 * loaded once into a local, checked, then used: a field scribbled in shared
 * memory while an operation runs, or between operations, never makes an
 * access leave its table.
 *
 *   - ring geometry: the ring region's element size in the header and the
 *     size and mask inside struct ck_ring are all in shared memory; the
 *     handle publishes (and a drain reads) with the geometry attach checked;
 *   - journal indices: the per-user and request-id claims write the entry's
 *     index into the journal (so a recoverer finds it) and must not read it
 *     back unchecked.  The program is linked with -Wl,--wrap=fs_kt_claim
 *     (tests/unit/loaded_once.cmake): the wrapper scribbles the index the claim
 *     just wrote into the journal, the exact moment a scribbler racing the
 *     operation would have to hit.
 *
 * Each case runs in a forked child with its own handles, so an access far
 * outside the mapping (SIGSEGV) or one that ASan reports (-DFLASH_SANITIZE=ON)
 * fails the case with the signal named, instead of ending the whole program.
 * Children never call cmocka: they print what went wrong and exit non-zero.
 */
#include "helpers.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"

/* ---- the wrapper --------------------------------------------------------- */

static const struct fs_kent *g_tab;   /* armed: scribble claims on this table */
static uint32_t g_wild;               /* the value written into the journal */
static int g_hits;

int __real_fs_kt_claim0(flash_t *h, uint32_t tab, const uint64_t key[3], uint64_t *state_out);
int __wrap_fs_kt_claim0(flash_t *h, uint32_t tab, const uint64_t key[3], uint64_t *state_out);

int __wrap_fs_kt_claim0(flash_t *h, uint32_t tab, const uint64_t key[3], uint64_t *state_out)
{
	int rc = __real_fs_kt_claim0(h, tab, key, state_out);
	const struct fs_kent *t = tab == FS_KT_REQ ? h->req : h->user;
	uint32_t *jidx = tab == FS_KT_REQ ? &h->j->req_idx : &h->j->user_idx;

	if (t == g_tab && rc == FS_KT_FOUND) {
		ck_pr_store_32(jidx, g_wild);
		g_hits++;
	}
	return rc;
}

/* ---- children ------------------------------------------------------------ */

#define FAIL(...) do { fprintf(stderr, "  child: " __VA_ARGS__); fprintf(stderr, "\n"); \
		return 10 + __LINE__ % 200; } while (0)

typedef int (*child_fn)(const char *seg, uint32_t wild);

/* Run @p fn in a child; 0 when it exited 0, else fail naming how it ended. */
static void in_child(const char *what, child_fn fn, const char *seg, uint32_t wild)
{
	pid_t pid;
	int st = 0;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* die of a fault here, not in cmocka's handler (it would run on) */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		_exit(fn(seg, wild));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		printf("  %s, wild value %#x: child killed by signal %d\n", what, wild, WTERMSIG(st));
	else if (WEXITSTATUS(st) != 0)
		printf("  %s, wild value %#x: child exited %d\n", what, wild, WEXITSTATUS(st));
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int order(flash_t *h, uint64_t user, uint64_t req, uint64_t *no)
{
	struct flash_order_req r;
	struct flash_order_res res;
	int rc;

	memset(&r, 0, sizeof r);
	memset(&res, 0, sizeof res);
	r.activity_id = 1;
	r.sku_id = 10;
	r.user_id = user;
	r.qty = 1;
	r.request_id = req;
	rc = flash_order(h, &r, &res);
	if (no)
		*no = res.order_no;
	return rc;
}

static int avail(flash_t *h, uint64_t *out)
{
	struct flash_sku_info si;
	int rc = flash_sku_get(h, 1, 10, &si);

	*out = si.available;
	return rc;
}

static int drain_count(void *arg, const struct flash_record *rec, uint64_t seq)
{
	uint32_t *n = arg;

	(void)rec;
	(void)seq;
	(*n)++;
	return 0;
}

/*
 * Two handles, the second on slot 1 (a slot > 0: the ring's address depends
 * on the element size).  Scribble the header's ring element size, and the
 * ring's own size and mask, then order, cancel and drain on slot 1.
 */
static int ring_child(const char *seg, uint32_t wild)
{
	flash_t *a = NULL, *b = NULL;
	struct ck_ring *r;
	uint32_t n = 0, units = 0;
	uint64_t no = 0;
	int rc;

	if (flash_open(seg, 0, &a) != FLASH_OK || flash_open(seg, 0, &b) != FLASH_OK)
		FAIL("open");
	if (flash_slot(b) != 2)   /* the parent's handle holds slot 0 */
		FAIL("second handle on slot %d", flash_slot(b));
	r = (struct ck_ring *)((char *)b->ring + 2 * b->hdr->fx.region[FS_R_RING].elem_size);
	ck_pr_store_32(&b->hdr->fx.region[FS_R_RING].elem_size, wild);
	r->size = wild;
	r->mask = wild - 1;
	if ((rc = order(b, 77, 0, &no)) != FLASH_OK)
		FAIL("order: %s", flash_rcname(rc));
	if ((rc = flash_cancel(b, no, &units)) != FLASH_OK || units != 1)
		FAIL("cancel: %s", flash_rcname(rc));
	if ((rc = flash_ring_drain(a, drain_count, &n, 1000, NULL)) != FLASH_OK)
		FAIL("drain: %s", flash_rcname(rc));
	/* the catalog's two records, then the order and the cancel of slot 2 */
	if (n != 4)
		FAIL("drained %u records, want 4", n);
	return 0;
}

/*
 * A user whose limit entry is FREE again (ordered, cancelled with the quota
 * returned): the next order claims the existing entry (FS_KT_FOUND), and the
 * wrapper scribbles the index the claim wrote into the journal.
 */
static int user_idx_child(const char *seg, uint32_t wild)
{
	flash_t *h = NULL;
	uint64_t no = 0, before = 0, after = 0;
	int rc;

	if (flash_open(seg, 0, &h) != FLASH_OK)
		FAIL("open");
	if ((rc = order(h, 5, 0, &no)) != FLASH_OK || (rc = flash_cancel(h, no, NULL)) != FLASH_OK)
		FAIL("order + cancel: %s", flash_rcname(rc));
	if (avail(h, &before) != FLASH_OK)
		FAIL("sku_get");
	g_tab = h->user;
	g_wild = wild;
	rc = order(h, 5, 0, &no);
	g_tab = NULL;
	if (g_hits != 1)
		FAIL("the claim was not scribbled (%d)", g_hits);
	if (rc != FLASH_ECORRUPT)
		FAIL("order with a scribbled journal user_idx: %s, want FLASH_ECORRUPT", flash_rcname(rc));
	if (avail(h, &after) != FLASH_OK || after != before)
		FAIL("available %llu -> %llu", (unsigned long long)before, (unsigned long long)after);
	/* nothing was left held: the same user orders again */
	if ((rc = order(h, 5, 0, &no)) != FLASH_OK)
		FAIL("order after: %s", flash_rcname(rc));
	return 0;
}

/*
 * A request id whose entry is FREE (what a recoverer leaves for an order
 * that died before its commit: written here through fs.h, as it would): the
 * retry claims the existing entry and the wrapper scribbles its index.
 */
static int req_idx_child(const char *seg, uint32_t wild)
{
	flash_t *h = NULL;
	uint64_t no = 0;
	uint32_t freed = 0;
	int rc;

	if (flash_open(seg, 0, &h) != FLASH_OK)
		FAIL("open");
	if ((rc = order(h, 6, 900, &no)) != FLASH_OK)
		FAIL("order: %s", flash_rcname(rc));
	if ((rc = flash_cancel(h, no, NULL)) != FLASH_OK)
		FAIL("cancel: %s", flash_rcname(rc));
	for (uint32_t i = 0; i <= h->req_mask; i++)
		if (h->req[i].k[0] == 900 && h->req[i].k[1] == 6) {
			ck_pr_store_64(&h->req[i].state, FS_MK(FS_K_FREE, 0));
			freed++;
		}
	if (freed != 1)
		FAIL("request entry not found");
	g_tab = h->req;
	g_wild = wild;
	rc = order(h, 6, 900, &no);
	g_tab = NULL;
	if (g_hits != 1)
		FAIL("the claim was not scribbled (%d)", g_hits);
	if (rc != FLASH_ECORRUPT)
		FAIL("order with a scribbled journal req_idx: %s, want FLASH_ECORRUPT", flash_rcname(rc));
	if ((rc = order(h, 6, 901, &no)) != FLASH_OK)
		FAIL("order after: %s", flash_rcname(rc));
	return 0;
}

/* ---- the cases ----------------------------------------------------------- */

static flash_t *seg(char *name, size_t len)
{
	flash_t *h = t_seg_new(NULL, name, len);

	assert_int_equal(t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, FLASH_ACT_CANCEL_RETURNS_QUOTA),
	                 FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	return h;
}

static void test_scribbled_ring_geometry_never_moves_publish_or_drain_off_the_ring(void **state)
{
	const uint32_t wild[] = { 1u << 30, 0x80000000u, 64 * 3 + 16, 3 };

	for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
		char name[64];

		seg(name, sizeof name);
		in_child("ring element size, size and mask", ring_child, name, wild[i]);
	}
}

static void test_scribbled_journal_user_idx_gives_ecorrupt_not_an_access_off_the_table(void **state)
{
	for (int i = 0; i < 4; i++) {
		char name[64];
		flash_t *h = seg(name, sizeof name);
		const uint32_t wild[] = { h->user_mask + 1, h->user_mask + 64, 0x80000000u, UINT32_MAX - 1 };

		in_child("journal user_idx", user_idx_child, name, wild[i]);
	}
}

static void test_scribbled_journal_req_idx_gives_ecorrupt_not_an_access_off_the_table(void **state)
{
	for (int i = 0; i < 4; i++) {
		char name[64];
		flash_t *h = seg(name, sizeof name);
		const uint32_t wild[] = { h->req_mask + 1, h->req_mask + 64, 0x80000000u, UINT32_MAX - 1 };

		in_child("journal req_idx", req_idx_child, name, wild[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_scribbled_ring_geometry_never_moves_publish_or_drain_off_the_ring),
		T(test_scribbled_journal_user_idx_gives_ecorrupt_not_an_access_off_the_table),
		T(test_scribbled_journal_req_idx_gives_ecorrupt_not_an_access_off_the_table),
#undef T
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
