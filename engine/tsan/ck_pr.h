/*
 * engine/tsan/ck_pr.h -- ck's atomics as ThreadSanitizer sees them (the
 * -DFLASH_TSAN=ON build only; CMakeLists.txt puts this directory first on
 * the include path there, so every `#include <ck_pr.h>`, ck_ring.h's too,
 * comes here).
 *
 * ck on x86-64 implements its loads, stores and read-modify-writes in inline
 * assembly.  ThreadSanitizer does not see inside assembly: to it those
 * accesses do not exist, so they neither race nor order anything, and every
 * plain access published through them (a table entry's key written before
 * the release store of its state and read after the acquire load of it, a
 * ring record before the ring's tail) is reported as a data race.  Here the
 * same operations become the compiler's __atomic builtins, which it models:
 *
 *   ck_pr_load_*     acquire load      ck_pr_store_*   release store
 *   ck_pr_cas_*, ck_pr_faa_*, ck_pr_inc_*, ck_pr_dec_*    seq_cst
 *
 * Why that is the same protocol and not a stronger one: on x86-64 (TSO) ck's
 * loads and stores are plain MOVs with a "memory" clobber -- no compiler
 * reordering, and the hardware gives every load acquire and every store
 * release order -- and its read-modify-writes are LOCK-prefixed, i.e.
 * sequentially consistent.  The fences (ck_pr_fence_*) stay ck's own: on top
 * of acquire/release accesses ThreadSanitizer would learn nothing from them.
 *
 * The 16-byte CAS stays ck's CMPXCHG16B (ThreadSanitizer's own 128-bit
 * atomics take a process-local lock, which other processes attached to the
 * segment would not honour); it is wrapped in __tsan_release before and
 * __tsan_acquire after, on both halves, so an acquire load of either half
 * orders after the CAS.  The release is made before the attempt, also for an
 * attempt that fails: this can hide a race of the failing thread's earlier
 * writes, never report one that is not there.
 */
#ifndef FLASH_TSAN_CK_PR_H
#define FLASH_TSAN_CK_PR_H

#include_next <ck_pr.h>

#include <sanitizer/tsan_interface.h>

#define FS_TSAN_LOAD(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define FS_TSAN_STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define FS_TSAN_CAS(t, c, s) __extension__({                                        \
	__typeof__(*(t)) fs_c_ = (c);                                               \
	__atomic_compare_exchange_n((t), &fs_c_, (s), 0, __ATOMIC_SEQ_CST,          \
	                            __ATOMIC_SEQ_CST);                              \
})
#define FS_TSAN_CAS_VALUE(t, c, s, v) __extension__({                               \
	__typeof__(*(t)) fs_c_ = (c);                                               \
	_Bool fs_ok_ = __atomic_compare_exchange_n((t), &fs_c_, (s), 0,             \
	                                           __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
	*(v) = fs_c_;                                                               \
	fs_ok_;                                                                     \
})

#undef ck_pr_load_64
#undef ck_pr_load_32
#undef ck_pr_load_uint
#undef ck_pr_store_64
#undef ck_pr_store_32
#undef ck_pr_store_uint
#define ck_pr_load_64(p)          FS_TSAN_LOAD(p)
#define ck_pr_load_32(p)          FS_TSAN_LOAD(p)
#define ck_pr_load_uint(p)        FS_TSAN_LOAD(p)
#define ck_pr_store_64(p, v)      FS_TSAN_STORE(p, v)
#define ck_pr_store_32(p, v)      FS_TSAN_STORE(p, v)
#define ck_pr_store_uint(p, v)    FS_TSAN_STORE(p, v)

#undef ck_pr_cas_64
#undef ck_pr_cas_32
#undef ck_pr_cas_uint
#undef ck_pr_cas_64_value
#undef ck_pr_cas_32_value
#undef ck_pr_cas_uint_value
#undef ck_pr_faa_64
#undef ck_pr_faa_32
#undef ck_pr_inc_32
#undef ck_pr_dec_32
#undef ck_pr_inc_64
#undef ck_pr_dec_64
#define ck_pr_cas_64(t, c, s)     FS_TSAN_CAS(t, c, s)
#define ck_pr_cas_32(t, c, s)     FS_TSAN_CAS(t, c, s)
#define ck_pr_cas_uint(t, c, s)   FS_TSAN_CAS(t, c, s)
#define ck_pr_cas_64_value(t, c, s, v)   FS_TSAN_CAS_VALUE(t, c, s, v)
#define ck_pr_cas_32_value(t, c, s, v)   FS_TSAN_CAS_VALUE(t, c, s, v)
#define ck_pr_cas_uint_value(t, c, s, v) FS_TSAN_CAS_VALUE(t, c, s, v)

#define ck_pr_faa_64(t, d)        __atomic_fetch_add((t), (d), __ATOMIC_SEQ_CST)
#define ck_pr_faa_32(t, d)        __atomic_fetch_add((t), (d), __ATOMIC_SEQ_CST)
#define ck_pr_inc_32(t)           ((void)__atomic_fetch_add((t), 1, __ATOMIC_SEQ_CST))
#define ck_pr_dec_32(t)           ((void)__atomic_fetch_sub((t), 1, __ATOMIC_SEQ_CST))
#define ck_pr_inc_64(t)           ((void)__atomic_fetch_add((t), 1, __ATOMIC_SEQ_CST))
#define ck_pr_dec_64(t)           ((void)__atomic_fetch_sub((t), 1, __ATOMIC_SEQ_CST))

static inline _Bool fs_tsan_cas_64_2(uint64_t t[2], uint64_t c[2], uint64_t s[2])
{
	_Bool ok;

	__tsan_release(&t[0]);
	__tsan_release(&t[1]);
	ok = ck_pr_cas_64_2(t, c, s);
	__tsan_acquire(&t[0]);
	__tsan_acquire(&t[1]);
	return ok;
}

static inline _Bool fs_tsan_cas_64_2_value(uint64_t t[2], uint64_t c[2], uint64_t s[2],
                                           uint64_t v[2])
{
	_Bool ok;

	__tsan_release(&t[0]);
	__tsan_release(&t[1]);
	ok = ck_pr_cas_64_2_value(t, c, s, v);
	__tsan_acquire(&t[0]);
	__tsan_acquire(&t[1]);
	return ok;
}

#define ck_pr_cas_64_2(t, c, s)          fs_tsan_cas_64_2((t), (c), (s))
#define ck_pr_cas_64_2_value(t, c, s, v) fs_tsan_cas_64_2_value((t), (c), (s), (v))

#endif /* FLASH_TSAN_CK_PR_H */
