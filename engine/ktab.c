/*
 * ktab.c -- lock-free keyed tables in the segment: per-user limit slots and
 * request ids.
 *
 * Open addressing with linear probing over fixed-size entries {state, key},
 * probed by probe.h (no key is placed past FS_PROBE_MAX of its home).
 * Keys are permanent: once published, an entry keeps its key forever and only
 * its state moves (FREE <-> PEND(tag) -> DONE(value) ...), so a key has one
 * home for the life of the segment and two inserters of one key always meet
 * at the same entry.  Nothing is ever deleted, so probe chains never break.
 *
 * Insert: CAS EMPTY -> BUSY(tag), write the key, store-release PEND(tag).
 * The entry index is written into the caller's journal before the CAS, so a
 * recoverer finds a dead inserter's entry (BUSY -> EMPTY, PEND -> FREE).
 * A reader meeting BUSY waits for the key (its writer is a few stores away
 * from publishing it), or recovers the writer if it died.
 */
#include "fs.h"
#include "probe.h"

#ifdef FLASH_CRASHPOINTS
uint64_t fs_probe_reads;   /* entries handed out by fs_probe_next (probe.h) */
#endif

static int key_eq(const struct fs_kent *e, const uint64_t key[3])
{
	return e->k[0] == key[0] && e->k[1] == key[1] && e->k[2] == key[2];
}

/*
 * Find the entry of @p key, inserting it (held by @p tag) if absent.
 * Returns FS_KT_INSERTED (the entry is PEND(tag), *jidx its index),
 * FS_KT_FOUND (*jidx its index, *state_out its state as read), or
 * FLASH_EFULL when @p cap keys exist already or no entry is free within the
 * probe bound.
 */
int fs_kt_claim(flash_t *h, struct fs_kent *tab, uint32_t mask, uint32_t *used,
                uint32_t cap, const uint64_t key[3], uint64_t tag, uint32_t *jidx,
                uint64_t *state_out)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, fs_hash(key[0], key[1], key[2]), mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		struct fs_kent *e = &tab[i];
		uint64_t s = ck_pr_load_64(&e->state);

		if (FS_KIND(s) == FS_K_EMPTY) {
			if (ck_pr_faa_32(used, 1) >= cap) {
				ck_pr_dec_32(used);
				return FLASH_EFULL;
			}
			FS_CRASH("ktab_count", 1);   /* counted, entry not yet taken */
			ck_pr_store_32(jidx, i);
			if (ck_pr_cas_64(&e->state, s, FS_MK(FS_K_BUSY, tag))) {
				FS_CRASH("ktab_insert", 1);
				e->k[0] = key[0];
				e->k[1] = key[1];
				e->k[2] = key[2];
				ck_pr_fence_store();
				ck_pr_store_64(&e->state, FS_MK(FS_K_PEND, tag));
				return FS_KT_INSERTED;
			}
			ck_pr_dec_32(used);
			fs_probe_again(&p);     /* someone else took it: look again */
			continue;
		}
		if (FS_KIND(s) == FS_K_BUSY) {
			int rc = fs_wait_tag(h, &e->state, s);

			if (rc != FLASH_OK)
				return rc;
			fs_probe_again(&p);
			continue;
		}
		ck_pr_fence_load();
		if (key_eq(e, key)) {
			ck_pr_store_32(jidx, i);
			*state_out = s;
			return FS_KT_FOUND;
		}
	}
	return FLASH_EFULL;
}
