/*
 * test_wal_faults.c -- every I/O fault of the WAL's write path, each with
 * the exact error, the sticky state, what sync buyers are told, and the
 * state after a restart on the same directory with the fault gone.
 *
 * One table row per fault (write ENOSPC / EIO, a short write then ENOSPC,
 * fdatasync EIO / ENOSPC, rename EIO / ENOSPC and fallocate ENOSPC while the
 * next file is created).  Each row runs twice:
 *
 *  "wal: ..."    on a wal_t: A frames acknowledged (wal_submit OK), the
 *                fault armed, three more appended and committed:
 *                 (a) wal_commit returns FLASH_EWAL_FAILED and wal_failure() the
 *                     row's step (WAL_OP_WRITE / _SYNC / _CREATE) and errno;
 *                 (b) with the disk healthy again the WAL stays failed:
 *                     append, sync, commit and close return FLASH_EWAL_FAILED,
 *                     the durable LSN stays A, fdatasync is not called once;
 *                     no half-made next file (*.tmp) is left;
 *                 (d) a replay with truncation (a torn tail is cut) and
 *                     wal_open recover: LSNs 1..A with their exact payloads,
 *                     plus the three frames only where the row says they
 *                     reached the file (fdatasync failures: written, never
 *                     acknowledged), and appends go on after them.
 *  "serve: ..."  through the daemon on a sync-durability segment: orders
 *                acknowledged, the fault armed, the next order:
 *                 (c) the buyer gets FLASH_EDURABILITY, serve_run returns -1
 *                     with FLASH_EWAL_FAILED, a later order gets FLASH_EDURABILITY
 *                     at once; no acknowledgement after the fault; the
 *                     unacknowledged record is not marked durable;
 *                 (d) a new serve_run (fault gone) on the same segment and
 *                     directory: writes that record (still in the ring), or,
 *                     where the failed commit's write reached the file and
 *                     the daemon freed its ring room, finds it in the WAL
 *                     without being handed it again; marks it durable; the
 *                     WAL then holds every
 *                     record the buyer emitted exactly once, LSN 1..A+1,
 *                     the acknowledged ones unchanged at their LSNs.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>

#include "fs.h"
#include "helpers.h"
#include "pio.h"
#include "serve.h"
#include "wal_testutil.h"

#define SEG    4096u     /* tiny WAL files: roll-over faults need a full file */
#define PLEN   ((uint32_t)sizeof(struct wal_rec))

struct fault {
	const char *name;
	const char *call;      /* pio entry that fails */
	int         err;       /* its errno */
	int         shorts;    /* pwrite: calls that write half before it fails */
	int         roll;      /* the fault hits while the next file is created */
	int         written;   /* the failed commit's frames reached the file (a short
	                          write: the whole frames in its first half did) */
	enum wal_op op;        /* wal_failure() step */
	int         op_errno;  /* wal_failure() errno */
};

static const struct fault faults[] = {
	{ "write ENOSPC",                "pwrite",    ENOSPC, 0, 0, 0, WAL_OP_WRITE,  ENOSPC },
	{ "write EIO",                   "pwrite",    EIO,    0, 0, 0, WAL_OP_WRITE,  EIO },
	{ "short write then ENOSPC",     "pwrite",    ENOSPC, 1, 0, 0, WAL_OP_WRITE,  ENOSPC },
	{ "fdatasync EIO",               "fdatasync", EIO,    0, 0, 1, WAL_OP_SYNC,   EIO },
	{ "fdatasync ENOSPC",            "fdatasync", ENOSPC, 0, 0, 1, WAL_OP_SYNC,   ENOSPC },
	{ "rename EIO in roll-over",     "rename",    EIO,    0, 1, 0, WAL_OP_CREATE, EIO },
	{ "rename ENOSPC in roll-over",  "rename",    ENOSPC, 0, 1, 0, WAL_OP_CREATE, ENOSPC },
	{ "fallocate ENOSPC in roll-over", "fallocate", ENOSPC, 0, 1, 0, WAL_OP_CREATE, ENOSPC },
};
#define NFAULTS (sizeof faults / sizeof faults[0])

/* ---- the injected calls ---- */

static const struct fault *g_f;      /* armed row, or NULL */
static int g_shorts_left;
static unsigned g_sync_calls;        /* fdatasync calls since reset */
static unsigned g_fault_hits;        /* calls the fault failed */

typedef ssize_t (*pwrite_t)(int, const void *, size_t, off_t);
typedef int (*int1_t)(int);
typedef int (*rename_t)(const char *, const char *);
typedef int (*falloc_t)(int, off_t, off_t);

static int armed(const char *call)
{
	const struct fault *f = __atomic_load_n(&g_f, __ATOMIC_ACQUIRE);
	return f != NULL && strcmp(f->call, call) == 0;
}

static int fail_now(void)
{
	__atomic_fetch_add(&g_fault_hits, 1, __ATOMIC_SEQ_CST);
	errno = g_f->err;
	return -1;
}

static ssize_t f_pwrite(int fd, const void *b, size_t n, off_t off)
{
	if (armed("pwrite")) {
		if (g_shorts_left > 0 && n > 1) {
			g_shorts_left--;
			return ((pwrite_t)pio_default("pwrite"))(fd, b, n / 2, off);
		}
		return fail_now();
	}
	return ((pwrite_t)pio_default("pwrite"))(fd, b, n, off);
}

static int f_fdatasync(int fd)
{
	__atomic_fetch_add(&g_sync_calls, 1, __ATOMIC_SEQ_CST);
	if (armed("fdatasync"))
		return fail_now();
	return ((int1_t)pio_default("fdatasync"))(fd);
}

static int f_rename(const char *a, const char *b)
{
	if (armed("rename"))
		return fail_now();
	return ((rename_t)pio_default("rename"))(a, b);
}

static int f_fallocate(int fd, off_t off, off_t len)
{
	if (armed("fallocate"))
		return fail_now();
	return ((falloc_t)pio_default("fallocate"))(fd, off, len);
}

/* Route the four calls through the fault functions, nothing armed yet. */
static void faults_install(void)
{
	__atomic_store_n(&g_f, NULL, __ATOMIC_RELEASE);
	g_sync_calls = 0;
	g_fault_hits = 0;
	pio_override("pwrite", (pio_fn)f_pwrite, NULL);
	pio_override("fdatasync", (pio_fn)f_fdatasync, NULL);
	pio_override("rename", (pio_fn)f_rename, NULL);
	pio_override("fallocate", (pio_fn)f_fallocate, NULL);
}

static void fault_arm(const struct fault *f)
{
	g_shorts_left = f->shorts;
	__atomic_store_n(&g_f, f, __ATOMIC_RELEASE);
}

static void fault_disarm(void)
{
	__atomic_store_n(&g_f, NULL, __ATOMIC_RELEASE);
}

/* Frames one SEG-byte file holds. */
static uint64_t per_file(void)
{
	return (SEG - WAL_FILE_HDR_BYTES) / wal_frame_bytes(PLEN);
}

/* Files in @p dir whose name ends with @p ext. */
static int count_ext(const char *dir, const char *ext)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name), x = strlen(ext);
		if (l > x && strcmp(e->d_name + l - x, ext) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* ---- on a wal_t ---- */

static void wal_case(void **state)
{
	const struct fault *f = *state;
	char *dir = wt_mkdtemp();
	struct wal_opts o;
	wal_opts_default(&o);
	o.segment_bytes = SEG;
	wal_t *w;
	faults_install();
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);

	/* A frames acknowledged; for a roll-over fault the file is then full */
	uint64_t a = f->roll ? per_file() : 5;
	unsigned char p[PLEN];
	for (uint64_t l = 1; l <= a; l++) {
		uint64_t got;
		wt_payload(l, p, PLEN);
		assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, &got), FLASH_OK);
		assert_int_equal(got, l);
	}
	assert_int_equal(wal_durable_lsn(w), a);
	int files_before = count_ext(dir, ".log");

	/* (a) the fault: the exact error */
	fault_arm(f);
	for (uint64_t l = a + 1; l <= a + 3; l++) {
		wt_payload(l, p, PLEN);
		assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_OK);
	}
	assert_int_equal(wal_commit(w), FLASH_EWAL_FAILED);
	assert_int_equal(g_fault_hits, 1);
	assert_int_equal(g_shorts_left, 0);
	fault_disarm();
	enum wal_op op = WAL_OP_NONE;
	int e = 0;
	assert_int_equal(wal_failure(w, &op, &e), FLASH_EWAL_FAILED);
	assert_int_equal(op, f->op);
	assert_int_equal(e, f->op_errno);

	/* (b) sticky, with the disk healthy again */
	unsigned syncs = g_sync_calls;
	assert_int_equal(wal_durable_lsn(w), a);
	assert_int_equal(wal_append(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_EWAL_FAILED);
	assert_int_equal(wal_sync(w, a + 1), FLASH_EWAL_FAILED);
	assert_int_equal(wal_commit(w), FLASH_EWAL_FAILED);
	assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_EWAL_FAILED);
	assert_int_equal(wal_durable_lsn(w), a);
	struct wal_stats st;
	wal_stats_get(w, &st);
	assert_int_equal(st.durable_lsn, a);
	assert_int_equal(st.failed, FLASH_EWAL_FAILED);
	assert_int_equal(st.fail_op, f->op);
	assert_int_equal(st.fail_errno, f->op_errno);
	assert_int_equal(wal_close(w), FLASH_EWAL_FAILED);
	assert_int_equal(g_sync_calls, syncs);        /* fdatasync never called again */
	assert_int_equal(count_ext(dir, ".tmp"), 0);  /* no half-made next file */
	assert_int_equal(count_ext(dir, ".log"), files_before);
	pio_reset();

	/* (d) restart: replay (cutting a torn tail), open, go on */
	uint64_t want = f->written ? a + 3 : a;
	if (f->shorts)   /* the whole frames in the half the first pwrite wrote */
		want = a + (3 * wal_frame_bytes(PLEN) / 2) / wal_frame_bytes(PLEN);
	struct wt_seen s = { 0 };
	struct wal_replay_report rep;
	int rc = wal_replay(dir, 0, wt_collect, &s, WAL_REPLAY_TRUNCATE, &rep);
	if (f->shorts) {
		/* half a frame reached the file: a torn tail, cut */
		assert_true(rc <= FLASH_EWAL_ZERO_LEN && rc >= FLASH_EWAL_PREV);
		assert_true(rep.truncated_bytes > 0);
	} else {
		assert_int_equal(rc, FLASH_OK);
	}
	assert_int_equal(s.n, want);
	assert_int_equal(s.first, 1);
	assert_true(s.ordered);
	assert_int_equal(s.bad_payload, 0);
	assert_int_equal(wal_open(dir, &o, &w), FLASH_OK);
	assert_int_equal(wal_next_lsn(w), want + 1);
	assert_int_equal(wal_durable_lsn(w), want);
	wt_payload(want + 1, p, PLEN);
	assert_int_equal(wal_submit(w, WAL_T_RECORD, p, PLEN, NULL), FLASH_OK);
	assert_int_equal(wal_close(w), FLASH_OK);
	memset(&s, 0, sizeof s);
	assert_int_equal(wal_replay(dir, 0, wt_collect, &s, 0, &rep), FLASH_OK);
	assert_int_equal(s.n, want + 1);
	assert_int_equal(s.bad_payload, 0);
	wt_rmdir(dir);
}

/* ---- through the daemon ---- */

static void serve_opts_for(struct serve_opts *o, const char *seg, const char *dir)
{
	serve_opts_default(o);
	o->segment = seg;
	o->wal_dir = dir;
	o->wal_segment_bytes = SEG;
	o->log_level = -1;     /* the failure is the point: keep stderr quiet */
	o->idle_us_max = 200;
}

struct frames {
	uint64_t n;
	struct wal_rec v[256];
	uint64_t lsn[256];
};

static int frames_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct frames *f = arg;
	assert_int_equal(type, WAL_T_RECORD);
	assert_int_equal(len, PLEN);
	assert_true(f->n < 256);
	memcpy(&f->v[f->n], p, PLEN);
	f->lsn[f->n++] = lsn;
	return 0;
}

static void serve_case(void **state)
{
	const struct fault *f = *state;
	char name[64];
	struct flash_seg_opts so;
	t_opts_small(&so);
	so.durability = FLASH_DURABILITY_SYNC;
	flash_t *h = t_seg_new(&so, name, sizeof name);
	uint32_t slot = (uint32_t)flash_slot(h);
	char *dir = wt_mkdtemp();
	faults_install();

	struct serve_thread t;
	memset(&t, 0, sizeof t);
	serve_opts_for(&t.o, name, dir);
	t.o.stop = &t.stop;
	assert_int_equal(pthread_create(&t.th, NULL, serve_thread_main, &t), 0);

	/* A records acknowledged; for a roll-over fault they fill the file */
	assert_int_equal(t_activity(h, 1, 64, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 1, 100000, 1), FLASH_OK);
	uint64_t a = f->roll ? per_file() : 5;
	uint64_t nos[64];
	assert_true(a - 2 <= 64);
	for (uint64_t i = 0; i < a - 2; i++) {
		struct flash_order_res res;
		assert_int_equal(t_order(h, 1, 1, 100 + i, 1, 0, 0, &res), FLASH_OK);
		nos[i] = res.order_no;
	}
	assert_int_equal(ck_pr_load_64(&h->proc[slot].cons_seq), a);
	struct frames *before = calloc(1, sizeof *before);
	assert_non_null(before);
	struct wal_replay_report rep;
	assert_int_equal(wal_replay(dir, 0, frames_cb, before, 0, &rep), FLASH_OK);
	assert_int_equal(before->n, a);

	/* (c) the fault: the buyer is told, the daemon stops, nothing acked */
	fault_arm(f);
	struct flash_order_res res;
	assert_int_equal(t_order(h, 1, 1, 9001, 1, 0, 0, &res), FLASH_EDURABILITY);
	uint64_t failed_no = res.order_no;
	pthread_join(t.th, NULL);
	assert_int_equal(g_fault_hits, 1);
	fault_disarm();
	assert_int_equal(t.rc, -1);
	assert_int_equal(t.st.rc, FLASH_EWAL_FAILED);
	assert_int_equal(t.st.durable_lsn, a);
	assert_int_equal(t_order(h, 1, 1, 9002, 1, 0, 0, NULL), FLASH_EDURABILITY);
	/* the unacknowledged record is not marked durable */
	assert_int_equal(ck_pr_load_64(&h->proc[slot].cons_seq), a);
	pio_reset();

	/* (d) a new daemon on the same segment and directory */
	struct serve_opts o;
	struct serve_stats ss;
	serve_opts_for(&o, name, dir);
	o.once = 1;
	assert_int_equal(serve_run(&o, &ss), 0);
	assert_int_equal(ss.replayed, f->written ? a + 1 : a);
	assert_int_equal(ss.records, f->written ? 0 : 1);
	assert_int_equal(ss.skipped, 0);
	assert_int_equal(ss.durable_lsn, a + 1);
	assert_int_equal(ck_pr_load_64(&h->proc[slot].cons_seq), a + 1);

	struct frames *after = calloc(1, sizeof *after);
	assert_non_null(after);
	assert_int_equal(wal_replay(dir, 0, frames_cb, after, 0, &rep), FLASH_OK);
	assert_int_equal(after->n, a + 1);
	for (uint64_t i = 0; i < after->n; i++) {
		assert_int_equal(after->lsn[i], i + 1);
		assert_int_equal(after->v[i].wr_rec.slot, slot);
		assert_int_equal(after->v[i].wr_seq, i + 1);   /* each record once, in order */
	}
	for (uint64_t i = 0; i < a; i++)                /* the acknowledged ones unchanged */
		assert_memory_equal(&after->v[i], &before->v[i], PLEN);
	for (uint64_t i = 0; i < a - 2; i++)
		assert_int_equal(after->v[2 + i].wr_rec.order_no, nos[i]);
	assert_int_equal(after->v[a].wr_rec.type, FLASH_REC_ORDER);
	assert_int_equal(after->v[a].wr_rec.order_no, failed_no);
	assert_int_equal(after->v[a].wr_rec.user_id, 9001);
	/* the restart proved the WAL whole (it replayed, holds every record
	 * the rings released, and appends): the failure is cleared, so sync
	 * orders are acknowledged again under the next daemon */
	struct flash_durability_info d;
	assert_int_equal(flash_durability_get(h, &d), FLASH_OK);
	assert_int_equal(d.failed, 0);
	free(before);
	free(after);
	wt_rmdir(dir);
}

int main(void)
{
	static char names[2 * NFAULTS][64];
	struct CMUnitTest tests[2 * NFAULTS];
	for (size_t i = 0; i < NFAULTS; i++) {
		snprintf(names[2 * i], sizeof names[0], "wal: %s", faults[i].name);
		snprintf(names[2 * i + 1], sizeof names[0], "serve+restart: %s", faults[i].name);
		tests[2 * i] = (struct CMUnitTest){ names[2 * i], wal_case, NULL, t_teardown,
		                                    (void *)&faults[i] };
		tests[2 * i + 1] = (struct CMUnitTest){ names[2 * i + 1], serve_case, NULL, t_teardown,
		                                        (void *)&faults[i] };
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
