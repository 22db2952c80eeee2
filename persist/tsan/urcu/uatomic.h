/*
 * persist/tsan/urcu/uatomic.h -- liburcu's read-modify-writes as
 * ThreadSanitizer sees them (the -DFLASH_TSAN=ON build only; see system.h
 * beside it).
 *
 * The x86 header of liburcu 0.13 writes uatomic_xchg, uatomic_cmpxchg,
 * uatomic_add_return, ... in LOCK-prefixed assembly, which ThreadSanitizer
 * does not see: a wfcqueue's tail exchange would order nothing.  liburcu's
 * own generic header implements the same operations with the compiler's
 * __sync builtins when no architecture header defines them; this header
 * includes only that one.  __sync builtins are full barriers, i.e. what a
 * LOCK-prefixed instruction is on x86-64: the same protocol, now visible.
 */
#ifndef _URCU_UATOMIC_H
#define _URCU_UATOMIC_H

#include <urcu/arch.h>
#include <urcu/system.h>

#define UATOMIC_HAS_ATOMIC_BYTE
#define UATOMIC_HAS_ATOMIC_SHORT

#include <urcu/uatomic/generic.h>

#endif /* _URCU_UATOMIC_H */
