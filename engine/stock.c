/*
 * stock.c -- tagged counters: stock shards and sku totals.
 *
 * Every change of a counter is a 16-byte CAS that writes the new value and
 * the tag of the change together, after the change was written into the
 * journal as an intent {target, delta, seq} (journal.h: fs_intent_add,
 * fs_intent_run).  So a recoverer can tell, for a dead operation, whether
 * each of its changes happened (the rule: journal.c).  This file holds the
 * counters themselves -- where each target's word is, the helping mark a
 * writer leaves before overwriting another slot's tag -- and taking stock
 * from a sku's shards.
 *
 * Crash points of a counter change: before the intent is written (nothing
 * happened), between intent and CAS (not applied), after the CAS (applied;
 * the tag says so), after the journal marks it done.
 */
#include "fs.h"
#include "journal.h"

struct fs_counter *fs_counter_at(flash_t *h, uint32_t target)
{
	if (target == FS_TL_TARGET)
		return &h->hdr->tokens_live;
	if (target == FS_KT_TARGET_USER)
		return &h->hdr->users_fill;
	if (target == FS_KT_TARGET_REQ)
		return &h->hdr->req_fill;
	if (target & FS_TOTAL_BIT) {
		uint32_t i = target & ~FS_TOTAL_BIT;

		return i < h->sku_cap ? &h->sku[i].total : NULL;
	}
	if (target < h->shard_cap)
		return &h->shard[target].c;
	if (target >= FS_GEN_TARGET(0, 0) && target <= FS_GEN_TARGET_RECL(1)) {
		/* the other banks' fills and the reclaimed counts (gen.c) */
		uint32_t tab = (target - FS_GEN_TARGET(0, 0)) / 4, b = (target - FS_GEN_TARGET(0, 0)) % 4;

		if (b == 3)
			return &h->hdr->gen[tab].reclaimed;
		return b >= 1 && b < FS_GEN_BANKS ? &h->hdr->gen[tab].fill[b - 1] : NULL;
	}
	return NULL;
}

/* Before overwriting @p tag of another slot, record that its change happened. */
void fs_help_mark(flash_t *h, uint64_t tag)
{
	uint32_t slot = FS_TAG_SLOT(tag);
	uint64_t seq = FS_TAG_SEQ(tag), cur;

	if ((int)slot == h->slot || seq == 0 || fs_check_slot(h, slot) != FLASH_OK)
		return;
	uint64_t *am = &h->proc[slot].applied_max;
	/* raise-to-max; a plain load first keeps the line shared when nothing to do */
	while ((cur = ck_pr_load_64(am)) < seq)
		if (ck_pr_cas_64(am, cur, seq))
			break;
}

/*
 * One journaled change of a counter by @p delta.  With @p may_fail, a
 * decrease that would go below zero returns FLASH_ESOLD_OUT and changes
 * nothing; without it (increases, post-commit total changes) it always
 * succeeds.  The intent is appended to the journal and marked done.
 */
static int counter_change(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                          int64_t delta, int may_fail, uint64_t *retries)
{
	int idx = fs_intent_add(j, target, delta, 0);

	if (idx < 0)
		return FLASH_EBUSY;
	return fs_intent_run(h, j, slot, (uint32_t)idx, may_fail, retries);
}

int fs_counter_change(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                      int64_t delta, int may_fail)
{
	return counter_change(h, j, slot, target, delta, may_fail, NULL);
}

int fs_counter_apply(flash_t *h, uint32_t target, int64_t delta, int may_fail)
{
	return counter_change(h, h->j, (uint32_t)h->slot, target, delta, may_fail,
	                      &h->me->st.cas_retries);
}

/*
 * Take @p qty units from the shards [@p base, @p base + @p n) of a sku (a range
 * the caller loaded once and checked with fs_sku_range): from the home shard (chosen by @p hint) if it
 * has them, else from the first shard that has them, else from several
 * shards together; never SOLD_OUT while the shards together hold qty.
 * On failure everything taken is given back (journaled too).
 */
int fs_stock_take(flash_t *h, uint32_t base, uint32_t n, uint64_t qty, uint64_t hint)
{
	uint32_t home;
	uint64_t sum, got;
	int rc;

	home = (uint32_t)(hint % n);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t sh = base + (home + k) % n;

		if (ck_pr_load_64(&h->shard[sh].c.value) < qty)
			continue;
		rc = fs_counter_apply(h, sh, -(int64_t)qty, 1);
		if (rc != FLASH_ESOLD_OUT)
			return rc;
	}
	/* no single shard has qty: borrow across shards */
	for (int pass = 0; pass < 4; pass++) {
		uint32_t first = h->j->n_int;

		sum = 0;
		for (uint32_t k = 0; k < n; k++)
			sum += ck_pr_load_64(&h->shard[base + k].c.value);
		if (sum < qty)
			return FLASH_ESOLD_OUT;
		got = 0;
		for (uint32_t k = 0; k < n && got < qty; k++) {
			uint32_t sh = base + (home + k) % n;
			uint64_t avail = ck_pr_load_64(&h->shard[sh].c.value);
			uint64_t want = qty - got < avail ? qty - got : avail;

			if (want == 0)
				continue;
			rc = fs_counter_apply(h, sh, -(int64_t)want, 1);
			if (rc == FLASH_OK)
				got += want;
			else if (rc != FLASH_ESOLD_OUT)
				return rc;
		}
		if (got == qty)
			return FLASH_OK;
		/* lost a race: give back what this pass took */
		for (uint32_t i = first, end = h->j->n_int; i < end; i++)
			if (h->j->in[i].done == 1 && h->j->in[i].delta < 0)
				fs_counter_apply(h, h->j->in[i].shard, -h->j->in[i].delta, 0);
	}
	return FLASH_ESOLD_OUT;
}
