/*
 * storetrap.c -- every store into the shared segment is a crash point, by
 * construction: no macro, no compiler pass, nothing in the engine.
 *
 * How: in the process under test every mapping of the segment is read-only
 * (mmap is wrapped with -Wl,--wrap=mmap, so the mapping flash_open makes is
 * caught as it is made; an older writable mapping is handed to st_track()).
 * Any instruction that writes the segment -- a plain or atomic store, a CAS
 * (lock cmpxchg writes even when it fails), an FAA, cmpxchg16b, the vector
 * stores and rep movs/stos of memcpy and memset -- takes a write fault.  The
 * SIGSEGV handler checks that the address lies in a tracked mapping, counts
 * the store, and then either
 *   - ends the process before the store happens (the N-th store): it makes
 *     every tracked mapping writable again first, so that the kernel's
 *     robust-futex cleanup at exit can still set the owner-died bit of a
 *     held admin mutex, and _exits; or
 *   - lets this one store happen: it makes the page writable, sets the trap
 *     flag (EFLAGS.TF) in the interrupted context and returns; the CPU runs
 *     the one instruction and raises SIGTRAP, whose handler makes the page
 *     read-only again and clears TF.  A second page touched by the same
 *     instruction (an unaligned store, a rep movs over a page boundary)
 *     faults again at the same instruction: it is unprotected too, not
 *     counted, and every such page is protected again on the SIGTRAP.  A rep
 *     string instruction traps after each iteration with the instruction
 *     pointer unchanged: it stays one store, stepped to its end.
 *
 * Why this and not an instrumentation pass: it needs no compiler work, it
 * sees the stores inside libc (memcpy, memset, pthread_mutex_lock on the
 * robust admin mutex) and inline assembly (ck's cmpxchg16b) that a
 * source-level pass would miss, and it runs on the very objects the
 * product ships.  The cost (two signals per store) only matters to tests.
 *
 * Fast-forward (st_arm_at): a process that must die at store n of a run
 * recorded once (st_record: each store's instruction and offset) need not
 * trap the n-1 before it, which made an enumeration of N stores cost N*N/2
 * traps.  The segment stays writable; an int3 replaces the first byte of
 * store n's instruction (its text page made private and writable).  Each
 * time it is reached, the byte goes back, the segment becomes read-only and
 * the instruction is single-stepped: a write fault in the segment is one of
 * its stores, and the k-th of them (k = how often that instruction stored
 * before, in the record) ends the process as ST_DIE does; else the step
 * ends, the segment is writable again and the int3 back in place.
 *
 * The count is deterministic: the process is single-threaded and the
 * engine's path through an operation depends on the segment's contents only
 * (the driver checks the count of every operation twice).
 *
 * Under ASan the runtime installs its own SIGSEGV handler at start-up; a
 * user handler installed later replaces it (allow_user_segv_handler
 * defaults to 1), and a fault that is not ours is handed back to the
 * handler we replaced.
 *
 * x86-64 Linux only (REG_RIP, REG_EFL).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "storetrap.h"

#define ST_MAX_MAPS  8
#define ST_MAX_STEP  8
#define ST_TF        0x100ull

struct st_map {
	char *base;
	size_t len;
};

static struct st_map g_map[ST_MAX_MAPS];
static int g_nmap;
static char g_name[128];            /* "/dev/shm/<name>": the object trapped */
static int g_prot;                  /* tracked mappings are read-only */
static struct st_store *g_out;
static size_t g_pg;

static int g_counting, g_how, g_in, g_exit_code;
static uint64_t g_n, g_target, g_after_lo, g_after_hi;
static int g_after_seen;

static char *g_step_pg[ST_MAX_STEP];
static int g_nstep;
static uintptr_t g_step_rip;

/* fast-forward (st_arm_at): one breakpoint, and the store it waits for */
static uintptr_t g_bp;              /* the breakpoint's instruction, 0: none */
static unsigned char g_bp_byte;     /* the byte the int3 replaces */
static uint64_t g_bp_left;          /* segment stores by it still to let happen */
static uint64_t g_bp_n;             /* the number of the store it dies at */
static int g_bp_probe;              /* its instruction running, the segment read-only */

static struct st_rec *g_rec;        /* st_record */
static size_t g_rec_cap;

static struct sigaction g_old_segv, g_old_trap;
static volatile int *g_die;         /* ST_STOP: read when resumed */

extern char __executable_start, etext;

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);
int __real_munmap(void *addr, size_t len);

static int map_of(const char *a)
{
	for (int i = 0; i < g_nmap; i++)
		if (a >= g_map[i].base && a < g_map[i].base + g_map[i].len)
			return i;
	return -1;
}

static void map_add(void *base, size_t len)
{
	if (g_nmap < ST_MAX_MAPS) {
		g_map[g_nmap].base = base;
		g_map[g_nmap].len = len;
		g_nmap++;
	}
}

/* Every tracked mapping writable (@p w) or read-only again. */
static void maps_prot(int w)
{
	for (int i = 0; i < g_nmap; i++)
		(void)mprotect(g_map[i].base, g_map[i].len, PROT_READ | (w ? PROT_WRITE : 0));
}

/* Is @p fd the segment?  /proc/self/fd names a POSIX shm object by its path
 * in /dev/shm.  Called from mmap, never from a signal handler. */
static int fd_is_segment(int fd)
{
	char link[64], path[256];
	ssize_t n;

	if (g_name[0] == '\0')
		return 0;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return strcmp(path, g_name) == 0;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;
	int mine = fd >= 0 && (flags & MAP_SHARED) && (prot & PROT_WRITE) && fd_is_segment(fd);

	p = __real_mmap(addr, len, (mine && g_prot) ? prot & ~PROT_WRITE : prot, flags, fd, off);
	if (mine && p != MAP_FAILED)
		map_add(p, len);
	return p;
}

int __wrap_munmap(void *addr, size_t len)
{
	for (int i = 0; i < g_nmap; i++)
		if (g_map[i].base == addr) {
			g_map[i] = g_map[--g_nmap];
			break;
		}
	return __real_munmap(addr, len);
}

/* Hand a fault or trap that is not ours to whoever handled it before. */
static void chain(const struct sigaction *old, int sig, siginfo_t *si, void *ctx)
{
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction != NULL) {
		old->sa_sigaction(sig, si, ctx);
		return;
	}
	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* default action: reinstate it and let the instruction fault again */
	signal(sig, SIG_DFL);
}

static void report(const char *a, const ucontext_t *uc)
{
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	int m = map_of(a);

	if (g_out == NULL)
		return;
	/* a store from libc (memcpy, memset, pthread): name its caller, whose
	 * return address is on top of the stack of the leaf function */
	if (rip < (uintptr_t)&__executable_start || rip >= (uintptr_t)&etext)
		rip = *(const uintptr_t *)(uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	g_out->n = g_n;
	g_out->off = m >= 0 ? (uint64_t)(a - g_map[m].base) : UINT64_MAX;
	g_out->rip_off = rip - (uintptr_t)&__executable_start;
}

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	char *a = si->si_addr;
	char *pg = (char *)((uintptr_t)a & ~(uintptr_t)(g_pg - 1));
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	int m = map_of(a);

	if (m < 0 || !g_prot || si->si_code != SEGV_ACCERR) {
		chain(&g_old_segv, sig, si, ctx);
		return;
	}
	if (g_bp_probe && g_nstep == 0 && --g_bp_left == 0) {
		/* the breakpoint's instruction writes the segment: store g_bp_n */
		g_n = g_bp_n;
		report(a, uc);
		maps_prot(1);
		g_prot = 0;
		_exit(g_exit_code);
	}
	if (g_nstep > 0 && rip == g_step_rip) {
		/* the instruction being stepped reached another page */
		if (g_nstep < ST_MAX_STEP)
			g_step_pg[g_nstep++] = pg;
		(void)mprotect(pg, g_pg, PROT_READ | PROT_WRITE);
		return;
	}
	if (g_counting) {
		uint64_t off = (uint64_t)(a - g_map[m].base);

		g_n++;
		if (g_rec != NULL && g_n <= g_rec_cap) {
			g_rec[g_n - 1].rip = rip;
			g_rec[g_n - 1].off = off;
		}
		if (g_target != 0 && (g_in ? off >= g_after_lo && off < g_after_hi : g_after_seen)) {
			if (--g_target == 0) {
				report(a, uc);
				if (g_how == ST_DIE) {
					maps_prot(1);
					g_prot = 0;
					_exit(g_exit_code);
				}
				raise(SIGSTOP);     /* resumed by SIGCONT: the store happens */
				if (g_die != NULL && *g_die) {
					/* told to die where it stopped, before the store */
					maps_prot(1);
					g_prot = 0;
					_exit(g_exit_code);
				}
			}
		}
		if (!g_after_seen && off >= g_after_lo && off < g_after_hi)
			g_after_seen = 1;
		if (g_out != NULL && g_target == 0)
			g_out->n = g_n;
	}
	g_step_pg[0] = pg;
	g_nstep = 1;
	g_step_rip = rip;
	(void)mprotect(pg, g_pg, PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] |= (greg_t)ST_TF;
}

/* The breakpoint in (@p on) or out.  Its page was made writable by st_arm_at. */
static void bp_put(int on)
{
	*(volatile unsigned char *)g_bp = on ? 0xcc : g_bp_byte;
}

/* The breakpoint's instruction ran: the segment writable again, the int3 back. */
static void bp_probe_end(ucontext_t *uc)
{
	maps_prot(1);
	g_prot = 0;
	g_bp_probe = 0;
	g_nstep = 0;
	bp_put(1);
	uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)ST_TF;
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	if (g_bp != 0 && !g_bp_probe && rip == g_bp + 1 && si->si_code == SI_KERNEL) {
		/* the int3: run the instruction once, the segment read-only */
		bp_put(0);
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)g_bp;
		g_bp_probe = 1;
		g_prot = 1;
		maps_prot(0);
		uc->uc_mcontext.gregs[REG_EFL] |= (greg_t)ST_TF;
		return;
	}
	if (g_bp_probe) {
		/* a rep string instruction between two iterations: step on */
		if (rip == g_bp)
			return;
		bp_probe_end(uc);
		return;
	}
	if (g_nstep == 0) {
		chain(&g_old_trap, sig, si, ctx);
		return;
	}
	/* a rep string instruction between two iterations: step on */
	if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] == g_step_rip)
		return;
	if (g_prot)
		for (int i = 0; i < g_nstep; i++)
			(void)mprotect(g_step_pg[i], g_pg, PROT_READ);
	g_nstep = 0;
	uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)ST_TF;
}

void st_init(const char *shm_name, struct st_store *out)
{
	struct sigaction sa;

	g_pg = (size_t)sysconf(_SC_PAGESIZE);
	snprintf(g_name, sizeof g_name, "/dev/shm%s", shm_name);
	g_out = out;
	g_prot = 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &g_old_segv);
	sa.sa_sigaction = on_trap;
	sigaction(SIGTRAP, &sa, &g_old_trap);
}

void st_init_ff(const char *shm_name, struct st_store *out)
{
	st_init(shm_name, out);
	g_prot = 0;
}

void st_arm_at(uint64_t n, uint64_t rip, uint64_t occ, int exit_code)
{
	char *pg = (char *)((uintptr_t)rip & ~(uintptr_t)(g_pg - 1));

	g_n = 0;
	g_counting = 0;
	g_exit_code = exit_code;
	g_bp = (uintptr_t)rip;
	g_bp_n = n;
	g_bp_left = occ;
	if (g_out != NULL)
		memset(g_out, 0, sizeof *g_out);
	/* the text page private to this process from here on */
	if (mprotect(pg, g_pg, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
		perror("storetrap: mprotect of the text page");
		_exit(4);
	}
	g_bp_byte = *(const unsigned char *)g_bp;
	bp_put(1);
}

void st_record(struct st_rec *rec, size_t cap)
{
	g_rec = rec;
	g_rec_cap = cap;
}

void st_track(void *base, size_t len)
{
	map_add(base, len);
	if (g_prot)
		(void)mprotect(base, len, PROT_READ);
}

void st_arm(uint64_t target, int how, int exit_code, uint64_t after_lo, uint64_t after_hi)
{
	g_n = 0;
	g_target = target;
	g_how = how & ~ST_IN;
	g_in = (how & ST_IN) != 0;
	g_exit_code = exit_code;
	g_after_lo = after_lo;
	g_after_hi = after_hi;
	g_after_seen = after_lo >= after_hi;
	g_counting = 1;
	if (g_out != NULL)
		memset(g_out, 0, sizeof *g_out);
}

void st_stop_flag(volatile int *die)
{
	g_die = die;
}

uint64_t st_count(void)
{
	return g_n;
}

void st_disarm(void)
{
	g_counting = 0;
	g_prot = 0;
	maps_prot(1);
}
