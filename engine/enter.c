/*
 * enter.c -- the checks every public call starts with: the handle is one,
 * it was opened in this process (not inherited over fork), it is used by
 * the thread that opened it, and it may write if the call writes -- on a
 * segment that was not destroyed.
 * (fs_enter; the fork generation and the thread ids it compares.)
 */
#include <stddef.h>

#include "fs.h"

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
 * The destroyed word is read by every write call; it shares the header line
 * that every order reads anyway (durability_failed, order.c's order_check),
 * so the check adds a load of a line in cache, never a miss.
 */
_Static_assert(offsetof(struct fs_hdr, destroyed) / FS_LINE ==
               offsetof(struct fs_hdr, durability_failed) / FS_LINE,
               "destroyed shares durability_failed's cache line");

/*
 * A write call on a destroyed segment (flash_seg_destroy_checked).  The
 * consumer goes on: what the rings hold may still be drained into the WAL
 * (`flashstock destroy --force --wal`), and the consumer publishes nothing.
 * Every other handle is refused, changing nothing: an order placed now
 * would be acknowledged into memory that no daemon drains again.
 */
static __attribute__((noinline, cold)) int enter_destroyed(const flash_t *h)
{
	if (h->slot >= 0 &&
	    ck_pr_load_64(&h->hdr->consumer) == FS_CONSUMER(h->gen, (uint32_t)h->slot))
		return FLASH_OK;
	return FLASH_EDESTROYED;
}

/*
 * Every public call: a handle, opened by this process and owned by this
 * thread, writable if it writes, and -- if it writes -- on a segment not
 * destroyed.  The fork check comes first: a forked child inherits the
 * forking thread's id, and its answer is FLASH_EFORK.  Cost on the order
 * path: three loads of the handle (the fork generation, the thread id, the
 * header pointer), one of the segment's header line every order reads
 * anyway, and three compares; no system call, no store, no cache line the
 * order did not already read.
 *
 * The destroyed word is read relaxed: it is a one-way flag (only a destroy
 * that is refused after setting it puts the 0 back), and a call that read 0
 * just before the mark is one the destroyer waits out
 * (flash_seg_destroy_checked).  A handle
 * attached meanwhile claimed its slot with a full barrier before its first
 * call reads the word, and the destroyer reads the slots after a full
 * barrier that follows its mark: one of the two sees the other.
 */
int fs_enter(const flash_t *h, int write)
{
	if (h == NULL)
		return FLASH_EINVAL;
	if (h->fork_gen != fork_gen)
		return FLASH_EFORK;
	if (h->owner_thread != thread_me)
		return FLASH_EWRONG_THREAD;
	if (write) {
		if (h->rdonly)
			return FLASH_EREADONLY;
		if (__builtin_expect(ck_pr_load_32(&h->hdr->destroyed) != 0, 0))
			return enter_destroyed(h);
	}
	return FLASH_OK;
}
