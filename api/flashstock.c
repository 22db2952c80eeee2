/*
 * flashstock.c -- the API layer: result codes, the checks every public call
 * starts with, and the statistics reader.  The engine files check the rest
 * of each call's arguments before touching the segment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs.h"

static const struct {
	int rc;
	const char *name;
	const char *text;
} rc_table[] = {
	{ FLASH_OK, "FLASH_OK", "success" },
	{ FLASH_ESOLD_OUT, "FLASH_ESOLD_OUT", "sold out" },
	{ FLASH_ELIMIT, "FLASH_ELIMIT", "per-user limit reached" },
	{ FLASH_ENOT_STARTED, "FLASH_ENOT_STARTED", "activity has not started" },
	{ FLASH_EENDED, "FLASH_EENDED", "activity has ended" },
	{ FLASH_ENOT_FOUND, "FLASH_ENOT_FOUND", "not found" },
	{ FLASH_EBAD_TOKEN, "FLASH_EBAD_TOKEN", "token missing, unknown, expired or already used" },
	{ FLASH_EDUPLICATE, "FLASH_EDUPLICATE", "duplicate request id (first outcome returned)" },
	{ FLASH_EFULL, "FLASH_EFULL", "table full" },
	{ FLASH_EINVAL, "FLASH_EINVAL", "invalid argument" },
	{ FLASH_EDURABILITY, "FLASH_EDURABILITY", "durability failed: the WAL cannot be written" },
	{ FLASH_EEXIST, "FLASH_EEXIST", "already exists" },
	{ FLASH_ENOSEG, "FLASH_ENOSEG", "no such segment" },
	{ FLASH_EOWNER, "FLASH_EOWNER", "segment is owned by another user" },
	{ FLASH_EMODE, "FLASH_EMODE", "segment has an unsafe or unexpected mode" },
	{ FLASH_ESIZE, "FLASH_ESIZE", "segment size does not match its header" },
	{ FLASH_EMAGIC, "FLASH_EMAGIC", "not a flashstock segment (bad magic)" },
	{ FLASH_EVERSION, "FLASH_EVERSION", "unsupported segment layout version" },
	{ FLASH_ECHECKSUM, "FLASH_ECHECKSUM", "segment header checksum mismatch" },
	{ FLASH_ELAYOUT, "FLASH_ELAYOUT", "segment region table is invalid" },
	{ FLASH_ECORRUPT, "FLASH_ECORRUPT", "segment data out of bounds (corrupt)" },
	{ FLASH_EREADONLY, "FLASH_EREADONLY", "handle is read-only" },
	{ FLASH_EFORK, "FLASH_EFORK", "handle used in a process other than its opener" },
	{ FLASH_ECANCELLED, "FLASH_ECANCELLED", "order already cancelled" },
	{ FLASH_ELOCKED, "FLASH_ELOCKED", "lock held by another owner" },
	{ FLASH_ENOT_OWNER, "FLASH_ENOT_OWNER", "lock not held by this owner" },
	{ FLASH_EBUSY, "FLASH_EBUSY",
	  "busy: record ring full, request in flight, or another live handle is the segment's consumer" },
	{ FLASH_ENOPROC, "FLASH_ENOPROC", "process table full" },
	{ FLASH_EPERM, "FLASH_EPERM", "permission denied" },
	{ FLASH_ENOMEM, "FLASH_ENOMEM", "out of memory" },
	{ FLASH_ESYS, "FLASH_ESYS", "system call failed" },
	{ FLASH_EWRONG_THREAD, "FLASH_EWRONG_THREAD", "handle used from a thread other than its owner" },
	{ FLASH_ENOTREG, "FLASH_ENOTREG", "not a regular file (a FIFO, directory or device has the segment's name)" },
	{ FLASH_EFATE_UNKNOWN, "FLASH_EFATE_UNKNOWN",
	  "not durable within the wait bound: the operation's fate is not known yet (wait again, or look it up by order number)" },
	{ FLASH_EMYSQL_RETRY, "FLASH_EMYSQL_RETRY", "MySQL down, slow or busy: nothing applied, retry" },
	{ FLASH_EMYSQL, "FLASH_EMYSQL", "MySQL refused a statement" },
	{ FLASH_EMYSQL_CONFIG, "FLASH_EMYSQL_CONFIG", "bad MySQL URL or option file, or access denied" },
	{ FLASH_EMYSQL_GAP, "FLASH_EMYSQL_GAP", "records missing between the applied LSN and a batch" },
};

const char *flash_strerror(int rc)
{
	for (size_t i = 0; i < sizeof(rc_table) / sizeof(rc_table[0]); i++)
		if (rc_table[i].rc == rc)
			return rc_table[i].text;
	return "unknown result code";
}

const char *flash_rcname(int rc)
{
	for (size_t i = 0; i < sizeof(rc_table) / sizeof(rc_table[0]); i++)
		if (rc_table[i].rc == rc)
			return rc_table[i].name;
	return "FLASH_E?";
}

/*
 * Fork detection without a system call per operation: a pthread_atfork child
 * handler bumps a process-local generation, and a handle remembers the
 * generation it was opened in.  (getpid() is a real system call in glibc.)
 */
static unsigned fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
	fork_gen++;
}

static void fork_hook(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

unsigned fs_fork_gen(void)
{
	pthread_once(&fork_once, fork_hook);
	return fork_gen;
}

/*
 * Thread ownership without a system call per operation: each thread that
 * opens a handle takes a process-unique nonzero id once, kept in
 * a thread-local variable, and the handle remembers its owner's id.  A
 * thread that never took one reads 0, which no handle carries.  Ids are
 * never reused within the process (unlike pthread_t or a tid, which a new
 * thread may inherit from a dead one), so a handle whose owner exited is
 * refused on every other thread (flash_close excepted).
 *
 * initial-exec: one %fs-relative load, also in the shared library (the
 * default model there calls __tls_get_addr).  It takes 8 bytes of the
 * static TLS block, which glibc reserves room for even when the library
 * is dlopen'ed (by a language binding, say).
 */
static __thread uint64_t thread_me __attribute__((tls_model("initial-exec")));
static uint64_t thread_next;

uint64_t fs_thread_id(void)
{
	/* relaxed: the counter only has to hand out distinct values; the id
	 * is read back only by this thread */
	if (thread_me == 0)
		thread_me = __atomic_add_fetch(&thread_next, 1, __ATOMIC_RELAXED);
	return thread_me;
}

/*
 * Every public call: a handle, opened by this process and owned by this
 * thread, writable if it writes.  The fork check comes first: a forked child
 * inherits the forking thread's id, and its answer is FLASH_EFORK.  Cost on
 * the order path: two loads (the fork generation, the thread id) and two
 * compares, no system call, no shared cache line.
 */
int fs_enter(const flash_t *h, int write)
{
	if (h == NULL)
		return FLASH_EINVAL;
	if (h->fork_gen != fork_gen)
		return FLASH_EFORK;
	if (h->owner_thread != thread_me)
		return FLASH_EWRONG_THREAD;
	if (write && h->rdonly)
		return FLASH_EREADONLY;
	return FLASH_OK;
}

int flash_stats_get(flash_t *h, struct flash_stats *out)
{
	const struct flash_seg_opts *o;
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	memset(out, 0, sizeof(*out));
	o = &h->hdr->fx.opts;
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		const struct fs_stats_slot *s = &h->proc[i].st;

		out->orders += ck_pr_load_64(&s->orders);
		out->cancels += ck_pr_load_64(&s->cancels);
		out->sold_out += ck_pr_load_64(&s->sold_out);
		out->limit_hits += ck_pr_load_64(&s->limit_hits);
		out->token_rejects += ck_pr_load_64(&s->token_rejects);
		out->duplicates += ck_pr_load_64(&s->duplicates);
		out->cas_retries += ck_pr_load_64(&s->cas_retries);
		out->recoveries += ck_pr_load_64(&s->recoveries);
		out->rolled_back += ck_pr_load_64(&s->rolled_back);
		out->rolled_forward += ck_pr_load_64(&s->rolled_forward);
		if (FS_PKIND(ck_pr_load_64(&h->proc[i].state)) != FS_P_FREE)
			out->procs++;
	}
	out->activities = ck_pr_load_32(&h->hdr->n_act);
	out->activities_cap = o->max_activities;
	out->skus = ck_pr_load_32(&h->hdr->n_sku);
	out->skus_cap = o->max_skus;
	out->shards = ck_pr_load_32(&h->hdr->n_shard);
	out->shards_cap = o->max_shards;
	out->users = ck_pr_load_32(&h->hdr->users_used);
	out->users_cap = o->max_users;
	{
		uint64_t now = fs_mono_ms();

		for (uint32_t i = 0; i <= h->tok_mask; i++)
			if (FS_KIND(ck_pr_load_64(&h->tok[i].state)) == FS_K_FREE &&
			    ck_pr_load_64(&h->tok[i].expiry_ms) > now)
				out->tokens++;
	}
	out->tokens_cap = o->max_tokens;
	out->requests = ck_pr_load_32(&h->hdr->req_used);
	out->requests_cap = o->max_requests;
	out->locks = ck_pr_load_32(&h->hdr->locks_used);
	out->locks_cap = o->max_locks;
	out->procs_cap = o->max_procs;
	out->orders_used = flash_orders_max(h);
	out->orders_cap = o->max_orders;
	out->segment_bytes = h->size;
	out->durability = o->durability;
	return FLASH_OK;
}

#ifdef FLASH_CRASHPOINTS
/*
 * Crash points (test builds, -DFLASH_CRASHPOINTS=ON or the flashstock_crash
 * library): every FS_CRASH(op, step) in the engine is one point.
 * flash_crash_arm(n) makes the n-th point reached from now on end the process
 * with _exit(FLASH_CRASH_EXIT); flash_crash_arm(0) disarms.  A test
 * enumerates an operation's points by arming n = 1, 2, ... in a forked child
 * until the operation completes without reaching the n-th.
 * flash_crash_last() names the last point reached (for reports).
 */
static int crash_countdown;
static const char *crash_last_op;
static int crash_last_step, crash_hits;

void flash_crash_arm(int n)
{
	crash_countdown = n;
	crash_hits = 0;
	crash_last_op = NULL;
}

int flash_crash_hits(void)
{
	return crash_hits;
}

const char *flash_crash_last(int *step)
{
	if (step)
		*step = crash_last_step;
	return crash_last_op ? crash_last_op : "";
}

void fs_crashpoint(const char *op, int step)
{
	crash_hits++;
	crash_last_op = op;
	crash_last_step = step;
	if (crash_countdown > 0 && --crash_countdown == 0)
		_exit(FLASH_CRASH_EXIT);
}
#endif
