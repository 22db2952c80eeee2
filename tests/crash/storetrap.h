/*
 * storetrap.h -- every store into the shared segment is a crash point: the
 * test side of DESIGN.md section 12 (see storetrap.c for how and why).
 */
#ifndef FLASH_STORETRAP_H
#define FLASH_STORETRAP_H

#include <stddef.h>
#include <stdint.h>

/* What the trap saw of one store (the one it stopped at, or the last). */
struct st_store {
	uint64_t n;          /* 1-based number of the store */
	uint64_t off;        /* byte offset of the address in the segment */
	uint64_t rip_off;    /* instruction, as an offset in the executable */
};

/* A stopped process left this on SIGSTOP: */
enum { ST_DIE = 1, ST_STOP = 2, ST_IN = 4 };

/*
 * Install the SIGSEGV/SIGTRAP handlers and remember the segment's shm name
 * (mappings of that object made from now on are trapped).  Call once per
 * process, after fork.  @p out (a MAP_SHARED page) receives the report.
 */
void st_init(const char *shm_name, struct st_store *out);

/* Add an existing writable mapping of the segment (made before st_init):
 * it becomes read-only and every store through it is counted too. */
void st_track(void *base, size_t len);

/*
 * Start counting.  @p target > 0: the target-th store does not happen; the
 * process makes the segment writable again and _exits with @p exit_code
 * (how == ST_DIE), or raises SIGSTOP and then lets the store happen (how ==
 * ST_STOP).  With @p after_lo < @p after_hi the target counts only stores
 * after the first one into [after_lo, after_hi) (segment offsets); with
 * ST_IN or'ed into @p how, only the stores into that range, the first one
 * included.
 * @p target == 0: count only.
 */
void st_arm(uint64_t target, int how, int exit_code, uint64_t after_lo, uint64_t after_hi);

/* ST_STOP: when resumed, a nonzero *@p die (shared memory) ends the
 * process there, before the store, as ST_DIE would have. */
void st_stop_flag(volatile int *die);

/*
 * Fast-forward to one store, for a process that must die at store n of a
 * run already recorded once (st_record): instead of trapping every store
 * before it, the segment stays writable and a breakpoint (int3) sits on the
 * instruction of store n; each time it is reached the instruction runs once
 * with the segment read-only, and the @p occ-th time it writes the segment
 * the process dies there, before the store, as ST_DIE would.  Exact as
 * long as the run is deterministic (the driver compares the store it died
 * at with the record).  Call st_init_ff instead of st_init, then st_arm_at
 * where st_arm would have been called.
 */
struct st_rec {
	uint64_t rip;        /* the storing instruction (an address: children of one parent share them) */
	uint64_t off;        /* the byte offset it wrote */
};
void st_init_ff(const char *shm_name, struct st_store *out);
void st_arm_at(uint64_t n, uint64_t rip, uint64_t occ, int exit_code);

/* While counting, record store k into @p rec[k-1] (k <= @p cap). */
void st_record(struct st_rec *rec, size_t cap);

/* Stores counted since st_arm. */
uint64_t st_count(void);

/* Stop trapping: every tracked mapping writable again, nothing counted. */
void st_disarm(void);

#endif /* FLASH_STORETRAP_H */
