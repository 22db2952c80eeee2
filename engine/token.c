/*
 * token.c -- one-time anti-replay tokens.
 *
 * An entry is {state, id} plus its payload; state and id change together by
 * one 16-byte CAS, so an entry reused for another token can never be
 * mistaken for the one a slow reader looked at (no ABA).
 *
 *   EMPTY/USED --issue--> BUSY(tag) --payload written--> FREE (live)
 *   FREE --redeem--> PEND(tag) --> USED          (flash_token_redeem: GETDEL)
 *   FREE --order--> PEND(tag) --commit--> USED, or back to FREE if the order's
 *                                       process died before its commit point
 *   FREE, expired --sweep--> PEND(tag) --> USED   (only when the table is full)
 *
 * hdr->tokens_live counts the entries that are BUSY, FREE or PEND; it is
 * changed only through journaled intents, before the entry moves into the
 * counted states and before it leaves them, so after any crash recovery
 * settles it to the entry's final state (fs_token_recover): the count is
 * exact, and max_tokens live tokens fit, never one more.
 *
 * Token numbers are a keyed permutation of (slot, sequence): never issued
 * twice, hard to guess.  Expired tokens are retired only when an issue finds
 * the table full; nothing sweeps on the order path.
 *
 * Entries are reused (USED -> BUSY), so after a while none is never-used and
 * no chain ends at EMPTY: lookups are bounded by the longest distance from
 * home at which an issue placed a token (hdr->tok_probe_max, probe.h).
 */
#include "fs.h"
#include "probe.h"

static uint64_t token_number(flash_t *h)
{
	/* fs_mix64 is a bijection of 64-bit words: distinct inputs, distinct
	 * tokens.  Input: (slot, slot sequence), unique per segment. */
	uint64_t x = fs_next_seq(h) | (uint64_t)h->slot << FS_SEQ_BITS;

	return fs_mix64(x ^ h->hdr->fx.token_secret);
}

/* Move entry @p idx from (from, id) to (to, id) if it still reads so. */
int fs_token_move(flash_t *h, uint32_t idx, uint64_t id, uint64_t from, uint64_t to)
{
	uint64_t cmp[2] = { from, id }, set[2] = { to, id };

	if (idx > h->tok_mask)
		return 0;
	return ck_pr_cas_64_2((uint64_t *)(void *)&h->tok[idx], cmp, set);
}

/* Read entry @p idx as {state, id} (two loads: callers compare, never trust). */
static int token_read(flash_t *h, uint32_t idx, uint64_t *state, uint64_t *id)
{
	if (idx > h->tok_mask)
		return 0;
	*state = ck_pr_load_64(&h->tok[idx].state);
	*id = ck_pr_load_64(&h->tok[idx].id);
	return 1;
}

/*
 * Recovery of a dead handle's token operation (issue, redeem, sweep, or the
 * token part of an order being rolled back): settle the live-token count to
 * what the entry's state says happened.
 *   issue:  the number never reached the caller: the entry (BUSY(tag), or
 *           FREE if the issue got that far) is retired -> 0.
 *   retire: the entry still PEND(tag) goes back to FREE -> 0; USED with the
 *           retire's decrement applied means it finished -> -1.
 *   order rollback: like retire (a burnt token is USED after its decrement).
 */
void fs_token_recover(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint64_t st = 0, id = 0, tag = j->op_tag;
	uint32_t n = j->n_int > FS_MAX_INTENTS ? FS_MAX_INTENTS : j->n_int;
	int64_t want = 0, dec_applied = 0;

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].shard == FS_TL_TARGET && j->in[i].done == 1 && j->in[i].delta < 0)
			dec_applied = 1;
	if (!token_read(h, j->tok_idx, &st, &id) || id != j->tok_id) {
		fs_token_settle(h, j, slot, 0);   /* never reached its entry */
		return;
	}
	if (j->op == FS_OP_TOKEN) {
		/* the caller never got the number: nobody can redeem it, retire it */
		if (st == FS_MK(FS_K_BUSY, tag) || st == FS_MK(FS_K_FREE, 0))
			fs_token_move(h, j->tok_idx, id, st, FS_MK(FS_K_USED, 0));
	} else {
		if (st == FS_MK(FS_K_PEND, tag))
			fs_token_move(h, j->tok_idx, id, st, FS_MK(FS_K_FREE, 0));
		else if (st == FS_MK(FS_K_USED, 0) && dec_applied)
			want = -1;
	}
	fs_token_settle(h, j, slot, want);
}

/*
 * Retire a live token: FREE -> PEND(tag) -> (count - 1) -> USED, as its own
 * journaled operation.  @p expired_only: the sweep, which takes only tokens
 * whose time is up; otherwise a redeem, which must match (act, sku, user).
 */
static int token_retire(flash_t *h, uint32_t idx, uint64_t id, uint32_t act, uint32_t sku,
                        uint64_t user, int expired_only)
{
	struct fs_journal *j = h->j;
	struct fs_token *e = &h->tok[idx];
	uint64_t cur[2] = { FS_MK(FS_K_FREE, 0), id }, set[2];
	uint64_t now = fs_mono_ms();

	ck_pr_fence_load();
	if (expired_only ? ck_pr_load_64(&e->expiry_ms) > now
	                 : (e->activity_id != act || e->sku_id != sku || e->user_id != user ||
	                    ck_pr_load_64(&e->expiry_ms) <= now))
		return FLASH_EBAD_TOKEN;
	fs_op_begin(h, FS_OP_TOKEN_RETIRE);
	j->tok_idx = idx;
	j->tok_id = id;
	set[0] = FS_MK(FS_K_PEND, j->op_tag);
	set[1] = id;
	FS_CRASH("token_take", 1);
	if (!ck_pr_cas_64_2((uint64_t *)(void *)e, cur, set)) {
		ck_pr_store_32(&j->phase, FS_PH_IDLE);
		return FLASH_EBAD_TOKEN;        /* used meanwhile, or reclaimed */
	}
	FS_CRASH("token_take", 2);
	fs_counter_change(h, j, (uint32_t)h->slot, FS_TL_TARGET, -1, 0);
	FS_CRASH("token_take", 3);
	fs_token_move(h, idx, id, set[0], FS_MK(FS_K_USED, 0));
	ck_pr_store_32(&j->phase, FS_PH_IDLE);
	return FLASH_OK;
}

/* Table full: retire every expired token (only on this slow path). */
static void token_sweep(flash_t *h)
{
	uint64_t now = fs_mono_ms();

	for (uint32_t i = 0; i <= h->tok_mask; i++) {
		uint64_t st = 0, id = 0;

		if (token_read(h, i, &st, &id) && st == FS_MK(FS_K_FREE, 0) &&
		    ck_pr_load_64(&h->tok[i].expiry_ms) <= now)
			token_retire(h, i, id, 0, 0, 0, 1);
	}
}

int flash_token_issue(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                      uint32_t ttl_ms, uint64_t *token)
{
	struct fs_journal *j;
	struct fs_probe p;
	uint64_t id, now, tag;
	uint32_t i;
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (token == NULL || user_id == 0 || ttl_ms == 0)
		return FLASH_EINVAL;
	if (fs_sku_find(h, activity_id, sku_id, NULL) == NULL)
		return FLASH_ENOT_FOUND;
	do
		id = token_number(h);
	while (id == 0);
	j = h->j;
	for (int pass = 0;; pass++) {
		fs_op_begin(h, FS_OP_TOKEN);
		j->tok_id = id;
		rc = fs_counter_change(h, j, (uint32_t)h->slot, FS_TL_TARGET, 1, 1);
		if (rc == FLASH_OK)
			break;
		ck_pr_store_32(&j->phase, FS_PH_IDLE);
		if (rc != FLASH_EFULL || pass > 0)
			return rc;
		token_sweep(h);
	}
	tag = j->op_tag;
	now = fs_mono_ms();
	fs_probe_init(&p, fs_hash(id, 5, 6), h->tok_mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		struct fs_token *e = &h->tok[i];
		uint64_t cur[2], set[2] = { FS_MK(FS_K_BUSY, tag), id };

		if (!token_read(h, i, &cur[0], &cur[1]))
			break;
		if (FS_KIND(cur[0]) != FS_K_EMPTY && FS_KIND(cur[0]) != FS_K_USED)
			continue;
		/* lookups of this token must read this far: before it is published */
		fs_probe_note(&h->hdr->tok_probe_max, fs_probe_dist(&p));
		ck_pr_store_32(&j->tok_idx, i);
		if (!ck_pr_cas_64_2((uint64_t *)(void *)e, cur, set))
			continue;
		FS_CRASH("token_issue", 1);
		e->activity_id = activity_id;
		e->sku_id = sku_id;
		e->user_id = user_id;
		e->expiry_ms = now + ttl_ms;
		ck_pr_fence_store();
		ck_pr_store_64(&e->state, FS_MK(FS_K_FREE, 0));
		FS_CRASH("token_issue", 2);
		ck_pr_store_32(&j->phase, FS_PH_IDLE);
		*token = id;
		return FLASH_OK;
	}
	/* no reusable entry within the probe bound (odds in probe.h): undo it */
	fs_token_settle(h, j, (uint32_t)h->slot, 0);
	ck_pr_store_32(&j->phase, FS_PH_IDLE);
	return FLASH_EFULL;
}

/*
 * Find live token @p id: its index, or FS_NONE.  Reads at most the longest
 * chain any issue made (hdr->tok_probe_max + 1, itself at most FS_PROBE_MAX)
 * and stops early at a never-used entry: an unknown token costs a few entries
 * however long the table has cycled.
 */
static uint32_t token_find(flash_t *h, uint64_t id)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, fs_hash(id, 5, 6), h->tok_mask, fs_probe_recorded(&h->hdr->tok_probe_max));
	while (fs_probe_next(&p, &i)) {
		uint64_t st = 0, eid = 0;

		token_read(h, i, &st, &eid);
		if (FS_KIND(st) == FS_K_EMPTY)
			return FS_NONE;
		if (eid == id)
			return i;
	}
	return FS_NONE;
}

/*
 * The order path's redeem: move live token @p id, issued for (act, sku, user)
 * and not expired, to @p to (PEND(tag)); its index goes to *jidx before the
 * CAS (journal).  The count changes only when the order ends (fs_op_finish_*
 * or fs_op_rollback).
 */
int fs_token_take(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint64_t id,
                  uint64_t to, uint32_t *jidx)
{
	uint32_t i = token_find(h, id);
	struct fs_token *e;
	uint64_t cur[2] = { FS_MK(FS_K_FREE, 0), id }, set[2] = { to, id };

	if (i == FS_NONE)
		return FLASH_EBAD_TOKEN;
	e = &h->tok[i];
	ck_pr_fence_load();
	if (e->activity_id != act || e->sku_id != sku || e->user_id != user ||
	    ck_pr_load_64(&e->expiry_ms) <= fs_mono_ms())
		return FLASH_EBAD_TOKEN;
	ck_pr_store_32(jidx, i);
	FS_CRASH("token_take", 1);
	if (!ck_pr_cas_64_2((uint64_t *)(void *)e, cur, set))
		return FLASH_EBAD_TOKEN;       /* used, being redeemed, or reclaimed */
	FS_CRASH("token_take", 2);
	return FLASH_OK;
}

int flash_token_redeem(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                       uint64_t token)
{
	uint32_t i;
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (user_id == 0)
		return FLASH_EINVAL;
	rc = FLASH_EBAD_TOKEN;
	if (token != 0 && (i = token_find(h, token)) != FS_NONE)
		rc = token_retire(h, i, token, activity_id, sku_id, user_id, 0);
	if (rc == FLASH_EBAD_TOKEN)
		h->me->st.token_rejects++;
	return rc;
}
