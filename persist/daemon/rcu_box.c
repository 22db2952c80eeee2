/*
 * rcu_box.c -- an RCU-published value (contract in rcu_box.h).
 *
 * The box's lifetime: a reference for its owner and one per snapshot
 * handed to call_rcu() and not yet freed (rb_refs).  Whoever drops the last
 * one frees the box: rbox_free() never waits for liburcu's call_rcu thread
 * (rcu_barrier() would, and its own hand-off is one ThreadSanitizer cannot
 * see).
 *
 * ThreadSanitizer: in the -DFLASH_TSAN=ON build liburcu's pointer exchange
 * and rcu_dereference() are atomics it understands (persist/tsan/urcu/), so
 * it sees a snapshot written before it is published and read after.  The
 * grace period it cannot see: liburcu's synchronize_rcu() runs inside the
 * (uninstrumented) library and orders the readers' last reads before the
 * free through membarrier or fences, and call_rcu() hands the snapshot to
 * its thread through the library's own queue.  So each reader releases on
 * the snapshot it read before it leaves its critical section, the writer
 * releases on the snapshot it retires, and the free acquires on it first:
 * the order the grace period and call_rcu() guarantee, told to
 * ThreadSanitizer.  Outside that build the annotations are nothing.
 */
#include "rcu_box.h"
#include "flashstock.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* rcu_dereference and rcu_xchg_pointer inline (ThreadSanitizer sees them,
 * see above); the read-side lock from the library: liburcu 0.13's inline
 * one accesses its reader through a type it declares 128-byte aligned in
 * an arena that is not, which UBSan reports on every read. */
#define _LGPL_SOURCE
#include <urcu/pointer.h>
#undef _LGPL_SOURCE
#include <urcu-bp.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define RBOX_TSAN_RELEASE(p) __tsan_release(p)
#define RBOX_TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
#define RBOX_TSAN_RELEASE(p) ((void)(p))
#define RBOX_TSAN_ACQUIRE(p) ((void)(p))
#endif

/* clang's static analyzer does not see through liburcu's x86 assembly
 * exchange and would report every published snapshot leaked: for it, the
 * same exchange (full barrier) as a builtin. */
#ifdef __clang_analyzer__
#define RBOX_XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#else
#define RBOX_XCHG(p, v) rcu_xchg_pointer((p), (v))
#endif

struct rbox_snap {
	struct rcu_head rs_rcu;          /* for call_rcu() */
	struct rbox    *rs_box;          /* for its reference */
	max_align_t     rs_data[];       /* the value, rb_size bytes */
};

struct rbox {
	struct rbox_snap *rb_cur;        /* published with rcu_xchg_pointer() */
	size_t            rb_size;
	uint64_t          rb_refs;       /* atomic: owner + snapshots awaiting their free */
};

/* Drop one reference; the last frees the box.  acq_rel: every access to
 * the box made under a reference comes before the free. */
static void rbox_unref(struct rbox *b)
{
	if (__atomic_sub_fetch(&b->rb_refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(b);
}

static pthread_once_t rbox_fork_once = PTHREAD_ONCE_INIT;

static void rbox_fork_handlers(void)
{
	pthread_atfork(call_rcu_before_fork, call_rcu_after_fork_parent, call_rcu_after_fork_child);
}

static struct rbox_snap *snap_new(const struct rbox *b)
{
	return malloc(sizeof(struct rbox_snap) + b->rb_size);
}

/* call_rcu's callback, on liburcu's call_rcu thread: no reader can see
 * the snapshot any more. */
static void snap_reclaim(struct rcu_head *h)
{
	struct rbox_snap *s = caa_container_of(h, struct rbox_snap, rs_rcu);
	RBOX_TSAN_ACQUIRE(s);
	struct rbox *b = s->rs_box;
	free(s);
	rbox_unref(b);
}

int rbox_new(size_t size, rbox_t **out)
{
	pthread_once(&rbox_fork_once, rbox_fork_handlers);
	struct rbox *b = calloc(1, sizeof *b);
	if (b == NULL)
		return FLASH_ENOMEM;
	b->rb_size = size;
	b->rb_refs = 1;
	struct rbox_snap *s = snap_new(b);
	if (s == NULL) {
		free(b);
		return FLASH_ENOMEM;
	}
	s->rs_box = b;
	memset(s->rs_data, 0, size);
	b->rb_cur = s;
	*out = b;
	return FLASH_OK;
}

int rbox_publish(rbox_t *b, const void *src)
{
	struct rbox_snap *s = snap_new(b);
	if (s == NULL)
		return FLASH_ENOMEM;
	s->rs_box = b;
	memcpy(s->rs_data, src, b->rb_size);
	/* a full barrier before the exchange: the copy is visible before the
	 * pointer to it (rcu_assign_pointer's guarantee) */
	struct rbox_snap *old = RBOX_XCHG(&b->rb_cur, s);
	/* relaxed: the owner's reference is held, so this cannot be the
	 * last; call_rcu() publishes it to the callback */
	__atomic_add_fetch(&b->rb_refs, 1, __ATOMIC_RELAXED);
	RBOX_TSAN_RELEASE(old);
	call_rcu(&old->rs_rcu, snap_reclaim);
	return FLASH_OK;
}

void rbox_read(rbox_t *b, void *dst)
{
	rcu_read_lock();
	/* dependency-ordered load: the snapshot's bytes are read after the
	 * pointer, and the snapshot is not freed before rcu_read_unlock() */
	struct rbox_snap *s = rcu_dereference(b->rb_cur);
	memcpy(dst, s->rs_data, b->rb_size);
	RBOX_TSAN_RELEASE(s);
	rcu_read_unlock();
}

void rbox_free(rbox_t *b)
{
	if (b == NULL)
		return;
	/* no reader is left (contract): the current snapshot goes now; the
	 * retired ones, and then the box, when call_rcu() frees them */
	free(b->rb_cur);
	rbox_unref(b);
}
