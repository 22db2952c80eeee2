/*
 * lock.c -- leased locks with fencing tokens.
 *
 * A lock's grant word is {fence, holder}, changed only by one 16-byte CAS:
 *   fence   the number of grants so far: a grant CASes {f, free} to
 *           {f + 1, taker} and returns f + 1; renew and release keep f;
 *   holder  slot (12 bits) | slot generation (12) | lease expiry (40, ms of
 *           CLOCK_MONOTONIC): who took it and until when; 0 when released.
 * A lock is free when holder is 0, its lease has expired, or its holder's
 * slot no longer belongs to the process that took it (dead: freed at once,
 * not after the lease).
 *
 * Fences.  Because the fence moves in the very CAS that grants, a grant's
 * fence is exactly one more than the grant before it (in CAS order), and a
 * release, keeping the fence, never writes a word an earlier reader could
 * still CAS from: an acquire that read the lock before another grant (and
 * its release) fails its CAS and reads again.  So every fence is strictly
 * greater than every earlier grant's of that name.
 *
 * Owners.  The caller's owner value (like the random value of a Redis lock)
 * does not fit the CAS'd word; the grant's winner stores it after its CAS as
 * {owner_fence = its fence, owner} (16-byte CAS, only ever to a higher
 * fence).  Renew and release read the grant word, then the owner pair, and
 * act only if the pair names the word's fence and their owner; their CAS on
 * the grant word fails if any grant came in between.  A winner killed before
 * storing its owner left a grant of a dead holder: free at once, renewed or
 * released by nobody.
 *
 * Names are inserted once, under the admin mutex, and never removed; lookups
 * are lock-free (the name is written before `used` is published).
 *
 * Times (observation, fs.h section 5).  Hold: from a grant to its release,
 * or -- when a later acquire finds the grant over -- to the lease's end (or
 * to that acquire, when the holder died first).  The grant's winner notes
 * its time as {grant_ns, grant_fence}, seqlock-style (grant_fence to 0,
 * grant_ns, grant_fence to the fence): a reader takes grant_ns only when it
 * read the same fence, its grant's, before and after it.  A winner that died
 * or stalled before noting it leaves that hold unmeasured.  Wait: per
 * handle, process-local: the first FLASH_ELOCKED of a (lock, owner) starts
 * it, the grant of that lock to that owner on that handle ends it; a refusal
 * for another lock or owner starts a new wait in its place (one at a time),
 * and acquires granted at once are not counted.  Both go into the histograms
 * of the handle that sees the end, on CLOCK_MONOTONIC.
 *
 * Crash points: "lock_name" 1-2, "lock_acquire" 1-2, "lock_renew" and
 * "lock_release" 1-2; the grant note's three stores (statistics only).
 */
#include <stddef.h>

#include "fs.h"

/* the two pairs changed by 16-byte CAS: each 16-byte aligned, in this order */
_Static_assert(offsetof(struct fs_lock, fence) == 0 && offsetof(struct fs_lock, holder) == 8 &&
               offsetof(struct fs_lock, owner_fence) == 16 && offsetof(struct fs_lock, owner) == 24,
               "struct fs_lock: {fence, holder} and {owner_fence, owner} pairs");

#define HOLDER(slot, gen, exp) (((uint64_t)(slot) << 52) | (((uint64_t)(gen) & 0xfff) << 40) | \
                                ((exp) & ((1ull << 40) - 1)))
#define H_SLOT(x) ((uint32_t)((x) >> 52))
#define H_GEN(x) ((uint32_t)(((x) >> 40) & 0xfff))
#define H_EXP(x) ((x) & ((1ull << 40) - 1))

static int name_ok(const char *name)
{
	size_t n;

	if (name == NULL)
		return 0;
	n = strnlen(name, FLASH_LOCK_NAME_MAX + 1);
	return n > 0 && n <= FLASH_LOCK_NAME_MAX;
}

static struct fs_lock *lock_find(flash_t *h, const char *name, uint32_t *slot_out)
{
	uint32_t i = (uint32_t)fs_fnv(name, strlen(name)) & h->lock_mask;

	for (uint32_t n = 0; n <= h->lock_mask; n++, i = (i + 1) & h->lock_mask) {
		struct fs_lock *l = &h->lock[i];

		if (!ck_pr_load_32(&l->used)) {
			if (slot_out)
				*slot_out = i;
			return NULL;
		}
		ck_pr_fence_load();
		if (strncmp(l->name, name, sizeof(l->name)) == 0)
			return l;
	}
	if (slot_out)
		*slot_out = UINT32_MAX;
	return NULL;
}

/*
 * The entry of @p name, inserting the name if it is new.  Inserts are
 * serialised by the admin mutex: the name is written, then `used` published
 * (lookups are lock-free), then counted in hdr->locks_used.  A holder killed
 * between the last two leaves a name published and not counted; the mutex's
 * next owner gets EOWNERDEAD and recounts (fs_lock_repair), so the count
 * equals the names in the table once a dead holder's mutex has been taken
 * over -- recovery of the dead slot takes it.  Crash points "lock_name" 1-2.
 */
static int lock_get(flash_t *h, const char *name, struct fs_lock **out)
{
	struct fs_lock *l;
	uint32_t free_i, used;
	int rc;

	if ((l = lock_find(h, name, NULL)) != NULL) {
		*out = l;
		return FLASH_OK;
	}
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	l = lock_find(h, name, &free_i);
	if (l == NULL) {
		/* only admin-mutex holders write the count: one load is the value */
		used = ck_pr_load_32(&h->hdr->locks_used);
		if (free_i == UINT32_MAX || used >= h->hdr->fx.opts.max_locks) {
			fs_admin_unlock(h);
			return FLASH_EFULL;
		}
		l = &h->lock[free_i];
		memset(l->name, 0, sizeof(l->name));
		memcpy(l->name, name, strlen(name));
		FS_CRASH("lock_name", 1);
		ck_pr_fence_store();   /* the name before `used`: lookups read it after */
		ck_pr_store_32(&l->used, 1);
		FS_CRASH("lock_name", 2);
		ck_pr_store_32(&h->hdr->locks_used, used + 1);
	}
	fs_admin_unlock(h);
	*out = l;
	return FLASH_OK;
}

/*
 * Make hdr->locks_used the number of names published in the table.  Called
 * with the admin mutex held by its new owner after EOWNERDEAD (segment.c,
 * fs_admin_lock): the only way the two can differ is an insert killed between
 * publishing `used` and counting it (lock_get).  Reads the whole lock table;
 * runs only when a holder died.
 */
void fs_lock_repair(flash_t *h)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= h->lock_mask; i++)
		n += ck_pr_load_32(&h->lock[i].used) != 0;
	ck_pr_store_32(&h->hdr->locks_used, n);
}

/* Does the process that took the lock still hold its slot? */
static int holder_alive(flash_t *h, uint64_t holder)
{
	uint32_t slot = H_SLOT(holder);
	uint64_t s;

	if (slot >= h->proc_cap)
		return 0;
	if ((int)slot == h->slot)
		return (h->gen & 0xfff) == H_GEN(holder);
	s = ck_pr_load_64(&h->proc[slot].state);
	if (FS_PKIND(s) != FS_P_ALIVE || (FS_PGEN(s) & 0xfff) != H_GEN(holder))
		return 0;
	return fs_proc_alive(h, slot, s);
}

/* The 16-byte pairs, addressed from the entry (they span two fields each). */
static inline uint64_t *grant_word(struct fs_lock *l)
{
	return (uint64_t *)(void *)l;
}

static inline uint64_t *owner_pair(struct fs_lock *l)
{
	return (uint64_t *)(void *)((char *)l + offsetof(struct fs_lock, owner_fence));
}

/*
 * Record @p owner as the owner value of grant @p fence.  A pair naming a
 * later grant, while the grant word has moved past ours too, was stored by
 * that grant's winner (we stalled after our CAS): ours is over, leave it.
 * A pair naming our fence or a later one while the word still holds ours
 * is no winner's -- a scribbled segment (seen by fuzz_attach: a fence set
 * back below its owner pair) -- and the word is the authority: ours
 * replaces it, so the holder can renew and release.  Lock-free: the CAS
 * fails only when another writer changed the pair, and the loop re-checks.
 */
static void owner_publish(struct fs_lock *l, uint64_t fence, uint64_t owner)
{
	uint64_t cur[2] = { ck_pr_load_64(&l->owner_fence), ck_pr_load_64(&l->owner) };
	uint64_t set[2] = { fence, owner };

	for (;;) {
		if (cur[0] == fence && cur[1] == owner)
			return;
		if (cur[0] >= fence && ck_pr_load_64(&l->fence) != fence)
			return;
		/* on failure cur receives the pair as it is */
		if (ck_pr_cas_64_2_value(owner_pair(l), cur, set, cur))
			return;
	}
}

/* The time of grant @p fence, or 0 when it is not (or no longer) noted. */
static uint64_t grant_ns_of(const struct fs_lock *l, uint64_t fence)
{
	uint64_t ns;

	if (ck_pr_load_64((uint64_t *)&l->grant_fence) != fence)
		return 0;
	ck_pr_fence_load();   /* grant_ns after the first fence read, before the second */
	ns = ck_pr_load_64((uint64_t *)&l->grant_ns);
	ck_pr_fence_load();
	return ck_pr_load_64((uint64_t *)&l->grant_fence) == fence ? ns : 0;
}

/* The winner of grant @p fence notes its time (see the top of this file);
 * a grant already overtaken is left alone. */
static void grant_note(struct fs_lock *l, uint64_t fence, uint64_t now_ns)
{
	if (ck_pr_load_64(&l->fence) != fence)
		return;
	ck_pr_store_64(&l->grant_fence, 0);
	ck_pr_fence_store();   /* readers see 0 before a changing grant_ns */
	ck_pr_store_64(&l->grant_ns, now_ns);
	ck_pr_fence_store();
	ck_pr_store_64(&l->grant_fence, fence);
}

/* A hold that ended at @p end_ns, if its grant's time is known. */
static void hold_add(flash_t *h, const struct fs_lock *l, uint64_t fence, uint64_t end_ns)
{
	uint64_t g = grant_ns_of(l, fence);

	if (g != 0 && end_ns >= g)
		fs_hist_add(&h->my_obs->time[FLASH_TIME_LOCK_HOLD], end_ns - g);
}

/*
 * Grant @p name to @p owner if it is free (see the top of this file).
 * Lock-free: a retry happens only when another handle changed the word.
 * The handle is checked by the caller.
 */
static int lock_acquire_run(flash_t *h, const char *name, uint64_t owner, uint32_t lease_ms,
                            uint64_t *fence)
{
	struct fs_lock *l;
	int rc;

	if (!name_ok(name) || owner == 0 || lease_ms == 0 || fence == NULL)
		return FLASH_EINVAL;
	if ((rc = lock_get(h, name, &l)) != FLASH_OK)
		return rc;
	for (;;) {
		/* two loads may mix two words: the CAS compares both, and a mixed
		 * pair fails it; "held" is decided on the holder load alone */
		uint64_t cur[2] = { ck_pr_load_64(&l->fence), ck_pr_load_64(&l->holder) };
		uint64_t now_ns = fs_mono_ns(), now = now_ns / 1000000u;

		if (cur[1] != 0 && H_EXP(cur[1]) > now && holder_alive(h, cur[1])) {
			if (h->lw_lock != l || h->lw_owner != owner) {
				h->lw_lock = l;          /* a wait begins (process-local) */
				h->lw_owner = owner;
				h->lw_t0_ns = now_ns;
			}
			return FLASH_ELOCKED;
		}
		/* now + lease_ms >= 1: a grant's holder is never 0 */
		uint64_t set[2] = { cur[0] + 1, HOLDER((uint32_t)h->slot, h->gen, now + lease_ms) };

		FS_CRASH("lock_acquire", 1);
		/* the fence moves with the grant: one CAS (a full barrier) */
		if (ck_pr_cas_64_2(grant_word(l), cur, set)) {
			FS_CRASH("lock_acquire", 2);
			owner_publish(l, set[0], owner);
			*fence = set[0];
			if (cur[1] != 0)   /* the grant before ours ended by expiry or death */
				hold_add(h, l, cur[0], H_EXP(cur[1]) <= now ? H_EXP(cur[1]) * 1000000u : now_ns);
			grant_note(l, set[0], now_ns);
			if (h->lw_lock == l && h->lw_owner == owner) {
				fs_hist_add(&h->my_obs->time[FLASH_TIME_LOCK_WAIT], now_ns - h->lw_t0_ns);
				h->lw_lock = NULL;
			}
			return FLASH_OK;
		}
	}
}

/* The public acquire: checked, timed, counted (fs_obs_end). */
int flash_lock_acquire(flash_t *h, const char *name, uint64_t owner, uint32_t lease_ms,
                       uint64_t *fence)
{
	return FS_OBSERVED(h, FLASH_OP_LOCK_ACQUIRE, lock_acquire_run(h, name, owner, lease_ms, fence));
}

static int lock_change(flash_t *h, const char *name, uint64_t owner, uint32_t lease_ms, int release)
{
	struct fs_lock *l;

	if (!name_ok(name) || owner == 0 || (!release && lease_ms == 0))
		return FLASH_EINVAL;
	if ((l = lock_find(h, name, NULL)) == NULL)
		return FLASH_ENOT_FOUND;
	for (;;) {
		uint64_t cur[2] = { ck_pr_load_64(&l->fence), ck_pr_load_64(&l->holder) };
		uint64_t of, ov, now, now_ns, set[2];

		/* the owner pair after the grant word: a pair naming cur's fence was
		 * stored by that grant's winner; a later grant's pair comes with a
		 * moved fence, and the CAS below fails */
		ck_pr_fence_load();
		of = ck_pr_load_64(&l->owner_fence);
		ov = ck_pr_load_64(&l->owner);
		now_ns = fs_mono_ns();
		now = now_ns / 1000000u;
		if (cur[1] == 0 || of != cur[0] || ov != owner || H_EXP(cur[1]) <= now ||
		    !holder_alive(h, cur[1]))
			return FLASH_ENOT_OWNER;
		set[0] = cur[0];   /* renew and release keep the fence */
		set[1] = release ? 0 : HOLDER(H_SLOT(cur[1]), H_GEN(cur[1]), now + lease_ms);
		FS_CRASH(release ? "lock_release" : "lock_renew", 1);
		if (ck_pr_cas_64_2(grant_word(l), cur, set)) {
			FS_CRASH(release ? "lock_release" : "lock_renew", 2);
			if (release)
				hold_add(h, l, cur[0], now_ns);
			return FLASH_OK;
		}
	}
}

/* The public renew and release: checked, timed, counted (fs_obs_end). */
int flash_lock_renew(flash_t *h, const char *name, uint64_t owner, uint32_t lease_ms)
{
	return FS_OBSERVED(h, FLASH_OP_LOCK_RENEW, lock_change(h, name, owner, lease_ms, 0));
}

int flash_lock_release(flash_t *h, const char *name, uint64_t owner)
{
	return FS_OBSERVED(h, FLASH_OP_LOCK_RELEASE, lock_change(h, name, owner, 0, 1));
}
