/*
 * probe.h -- the one probe routine of the segment's open-addressing tables:
 * the keyed tables (user limits, request ids: ktab.c), tokens (token.c) and
 * the catalog indexes (catalog.c).
 *
 * Linear probing from the key's home entry, and a bounded chain: no insert
 * places a key more than FS_PROBE_MAX - 1 entries past its home (it reports
 * the table full instead), so no lookup ever reads more than FS_PROBE_MAX
 * entries, however long the segment has run.  Tables whose entries never go
 * back to never-used (keyed tables, catalog indexes) also end a search at the
 * first never-used entry; the token table, whose entries are reused and so
 * eventually all have been used, ends it at the longest distance any issue
 * has placed a token (fs_probe_recorded, raised by fs_probe_note).
 *
 * Every table is at most half full of keys a search must pass (capacities
 * are half the table, rounded up to a power of two), where a run of 256
 * occupied entries has odds below 1e-20 per entry: the bound never refuses a
 * key before the table's capacity is reached, in any table size allowed.
 *
 * Usage:
 *     struct fs_probe p;
 *     uint32_t i;
 *     fs_probe_init(&p, hash, mask, FS_PROBE_MAX);
 *     while (fs_probe_next(&p, &i)) { ... entry i ... }
 *
 * In test builds (FLASH_CRASHPOINTS) every entry handed out is counted in
 * fs_probe_reads, so a test asserts the bound as a count.
 */
#ifndef FLASH_PROBE_H
#define FLASH_PROBE_H

#include <stdint.h>
#include <ck_pr.h>

#define FS_PROBE_MAX 256u   /* entries one probe may read */

#ifdef FLASH_CRASHPOINTS
extern uint64_t fs_probe_reads;   /* ktab.c */
#define FS_PROBE_COUNT() (fs_probe_reads++)
#else
#define FS_PROBE_COUNT() ((void)0)
#endif

struct fs_probe {
	uint32_t pr_home;   /* entry the key hashes to */
	uint32_t pr_mask;   /* table size - 1 (a power of two) */
	uint32_t pr_n;      /* entries handed out so far */
	uint32_t pr_len;    /* entries this probe may hand out */
};

/* Start at @p hash's home in a table of @p mask + 1 entries, reading at most
 * @p len entries (and never more than the table holds). */
static inline void fs_probe_init(struct fs_probe *p, uint64_t hash, uint32_t mask, uint32_t len)
{
	p->pr_home = (uint32_t)hash & mask;
	p->pr_mask = mask;
	p->pr_n = 0;
	p->pr_len = len <= mask ? len : mask + 1;   /* tables have at most 2^27 entries */
}

/* The next entry to read into *idx; 0 once the chain's bound is reached. */
static inline int fs_probe_next(struct fs_probe *p, uint32_t *idx)
{
	if (p->pr_n >= p->pr_len)
		return 0;
	*idx = (p->pr_home + p->pr_n) & p->pr_mask;
	p->pr_n++;
	FS_PROBE_COUNT();
	return 1;
}

/* Hand the last entry out once more (it changed under the caller's CAS). */
static inline void fs_probe_again(struct fs_probe *p)
{
	p->pr_n--;
}

/* Distance from home of the last entry handed out. */
static inline uint32_t fs_probe_dist(const struct fs_probe *p)
{
	return p->pr_n - 1;
}

/*
 * Entries a lookup must read in a table whose longest chain is recorded in
 * *@p max: loaded once, and clamped, so a scribbled word still bounds it.
 */
static inline uint32_t fs_probe_recorded(const uint32_t *max)
{
	uint32_t m = ck_pr_load_32((uint32_t *)max);

	return m < FS_PROBE_MAX ? m + 1 : FS_PROBE_MAX;
}

/*
 * Record that an insert is about to place a key @p dist entries from its
 * home: raise *@p max to @p dist.  Called before the CAS that publishes the
 * entry; the raise is itself a CAS (a full barrier), so any lookup that can
 * know the key -- it learned it from the insert's caller, after the publish
 * -- loads a bound that covers the key.  Rarely writes: the plain load keeps
 * the line shared while nothing grows.
 */
static inline void fs_probe_note(uint32_t *max, uint32_t dist)
{
	uint32_t cur;

	while ((cur = ck_pr_load_32(max)) < dist)
		if (ck_pr_cas_32(max, cur, dist))
			break;
}

#endif /* FLASH_PROBE_H */
