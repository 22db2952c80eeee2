/*
 * persist/tsan/urcu/system.h -- liburcu's shared accesses as ThreadSanitizer
 * sees them (the -DFLASH_TSAN=ON build only: CMakeLists.txt puts
 * persist/tsan first on the include path there, so every <urcu/system.h>,
 * liburcu's own headers' too, comes here; uatomic.h beside it does the same
 * for liburcu's read-modify-writes).
 *
 * liburcu 0.13 (Debian 12) publishes through volatile accesses with compiler
 * barriers (CMM_LOAD_SHARED / CMM_STORE_SHARED) and x86 assembly
 * (uatomic_xchg, uatomic_cmpxchg).  ThreadSanitizer sees a volatile access
 * as a plain one and does not see inside assembly, so every record handed
 * through a wfcqueue and every snapshot published with rcu_assign_pointer()
 * is reported as a data race.  Here the same accesses become the compiler's
 * __atomic builtins, which it models:
 *
 *   CMM_LOAD_SHARED    acquire load        CMM_STORE_SHARED   release store
 *
 * Why that is the same protocol and not a stronger one: on x86-64 (TSO) a
 * volatile load or store is a plain MOV, and the hardware gives every load
 * acquire and every store release order; the compiler barriers liburcu puts
 * around them (cmm_smp_rmc, cmm_smp_wmc) are kept.  The fences (cmm_smp_mb
 * & co.) stay liburcu's own.  (liburcu 0.14 makes this a configure option,
 * --enable-compiler-atomic-builtins; 0.13 has none.)
 */
#ifndef _URCU_SYSTEM_H
#define _URCU_SYSTEM_H

#include <urcu/compiler.h>
#include <urcu/arch.h>

#define _CMM_LOAD_SHARED(p)	__atomic_load_n(&(p), __ATOMIC_ACQUIRE)

#define CMM_LOAD_SHARED(p)				\
	__extension__					\
	({						\
		cmm_smp_rmc();				\
		_CMM_LOAD_SHARED(p);			\
	})

#define _CMM_STORE_SHARED(x, v)						\
	__extension__							\
	({								\
		__typeof__(x) _sv = (v);				\
		__atomic_store_n(&(x), _sv, __ATOMIC_RELEASE);		\
		_sv;							\
	})

#define CMM_STORE_SHARED(x, v)						\
	__extension__							\
	({								\
		__typeof__(x) _v = _CMM_STORE_SHARED(x, v);		\
		cmm_smp_wmc();						\
		_v = _v;						\
	})

#endif /* _URCU_SYSTEM_H */
