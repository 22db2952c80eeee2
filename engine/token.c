/*
 * token.c -- one-time anti-replay tokens.
 *
 * An entry is {state, id} plus its payload; state and id change together by
 * one 16-byte CAS, so an entry reclaimed and reused for another token can
 * never be mistaken for the one a slow reader looked at (no ABA).
 *
 *   EMPTY/USED/expired --issue--> BUSY(tag) --payload written--> FREE (live)
 *   FREE --redeem--> USED               (flash_token_redeem: GETDEL)
 *   FREE --order--> PEND(tag) --commit--> USED, or back to FREE if the order's
 *                                       process died before its commit point
 *
 * Token numbers are a keyed permutation of a counter: never issued twice,
 * hard to guess.  Expired and used entries are reclaimed by later issues as
 * they probe past them; nothing sweeps, and the order path never scans.
 */
#include "fs.h"


static uint64_t token_number(flash_t *h)
{
	/* splitmix64's finalizer is a bijection of 64-bit words: distinct inputs,
	 * distinct tokens.  Input: (slot, slot sequence), unique per segment. */
	uint64_t x = fs_next_seq(h) | (uint64_t)h->slot << FS_SEQ_BITS;

	x ^= h->hdr->fx.token_secret;
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/*
 * Move entry @p idx from (from, id) to (to, id) if it still reads so.  Moving
 * into USED ends the token's life: it stops counting against max_tokens.
 */
void fs_token_move(flash_t *h, uint32_t idx, uint64_t id, uint64_t from, uint64_t to)
{
	uint64_t cmp[2] = { from, id }, set[2] = { to, id };

	if (idx > h->tok_mask)
		return;
	if (ck_pr_cas_64_2((uint64_t *)(void *)&h->tok[idx], cmp, set) && FS_KIND(to) == FS_K_USED)
		ck_pr_dec_32(&h->hdr->tokens_live);
}

/* Table full: retire every expired token (only on this slow path). */
static void token_sweep(flash_t *h, uint64_t now)
{
	for (uint32_t i = 0; i <= h->tok_mask; i++) {
		struct fs_token *e = &h->tok[i];
		uint64_t st = ck_pr_load_64(&e->state), id = ck_pr_load_64(&e->id);

		if (FS_KIND(st) == FS_K_FREE && ck_pr_load_64(&e->expiry_ms) <= now)
			fs_token_move(h, i, id, st, FS_MK(FS_K_USED, 0));
	}
}

/* Count one more live token against max_tokens. */
static int token_reserve(flash_t *h, uint64_t now)
{
	uint32_t max = h->hdr->fx.opts.max_tokens;

	for (int pass = 0; pass < 2; pass++) {
		if (ck_pr_faa_32(&h->hdr->tokens_live, 1) < max)
			return FLASH_OK;
		ck_pr_dec_32(&h->hdr->tokens_live);
		if (pass == 0)
			token_sweep(h, now);
	}
	return FLASH_EFULL;
}

int flash_token_issue(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                      uint32_t ttl_ms, uint64_t *token)
{
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
	now = fs_mono_ms();
	if ((rc = token_reserve(h, now)) != FLASH_OK)
		return rc;
	fs_op_begin(h, FS_OP_TOKEN);
	tag = h->j->op_tag;
	h->j->tok_id = id;
	i = (uint32_t)fs_hash(id, 5, 6) & h->tok_mask;
	for (uint32_t n = 0; n <= h->tok_mask; n++, i = (i + 1) & h->tok_mask) {
		struct fs_token *e = &h->tok[i];
		uint64_t cur[2] = { ck_pr_load_64(&e->state), ck_pr_load_64(&e->id) };
		unsigned k = FS_KIND(cur[0]);
		uint64_t set[2] = { FS_MK(FS_K_BUSY, tag), id };

		if (!(k == FS_K_EMPTY || k == FS_K_USED ||
		      (k == FS_K_FREE && ck_pr_load_64(&e->expiry_ms) <= now)))
			continue;
		ck_pr_store_32(&h->j->tok_idx, i);
		if (!ck_pr_cas_64_2((uint64_t *)(void *)e, cur, set))
			continue;
		if (k == FS_K_FREE)
			ck_pr_dec_32(&h->hdr->tokens_live);   /* the expired token it replaces */
		FS_CRASH("token_issue", 1);
		e->activity_id = activity_id;
		e->sku_id = sku_id;
		e->user_id = user_id;
		e->expiry_ms = now + ttl_ms;
		ck_pr_fence_store();
		ck_pr_store_64(&e->state, FS_MK(FS_K_FREE, 0));
		ck_pr_store_32(&h->j->phase, FS_PH_IDLE);
		*token = id;
		return FLASH_OK;
	}
	ck_pr_store_32(&h->j->phase, FS_PH_IDLE);
	ck_pr_dec_32(&h->hdr->tokens_live);
	return FLASH_EFULL;
}

/*
 * Move live token @p id, issued for (act, sku, user) and not expired, to
 * state @p to.  The entry index goes to *jidx before the CAS (journal).
 */
int fs_token_take(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint64_t id,
                  uint64_t to, uint32_t *jidx)
{
	uint32_t i = (uint32_t)fs_hash(id, 5, 6) & h->tok_mask;

	for (uint32_t n = 0; n <= h->tok_mask; n++, i = (i + 1) & h->tok_mask) {
		struct fs_token *e = &h->tok[i];
		uint64_t cur[2];

		cur[0] = ck_pr_load_64(&e->state);
		if (FS_KIND(cur[0]) == FS_K_EMPTY)
			return FLASH_EBAD_TOKEN;
		if (ck_pr_load_64(&e->id) != id)
			continue;
		for (;;) {
			uint64_t set[2] = { to, id };

			cur[1] = id;
			if (FS_KIND(cur[0]) != FS_K_FREE)
				return FLASH_EBAD_TOKEN;   /* used, or being redeemed */
			ck_pr_fence_load();
			if (e->activity_id != act || e->sku_id != sku || e->user_id != user ||
			    ck_pr_load_64(&e->expiry_ms) <= fs_mono_ms())
				return FLASH_EBAD_TOKEN;
			if (jidx)
				ck_pr_store_32(jidx, i);
			FS_CRASH("token_take", 1);
			if (ck_pr_cas_64_2((uint64_t *)(void *)e, cur, set)) {
				FS_CRASH("token_take", 2);
				if (FS_KIND(to) == FS_K_USED)
					ck_pr_dec_32(&h->hdr->tokens_live);
				return FLASH_OK;
			}
			cur[0] = ck_pr_load_64(&e->state);
			if (ck_pr_load_64(&e->id) != id)
				return FLASH_EBAD_TOKEN;   /* reclaimed: it had expired */
		}
	}
	return FLASH_EBAD_TOKEN;
}

int flash_token_redeem(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                       uint64_t token)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (user_id == 0)
		return FLASH_EINVAL;
	if (token == 0)
		return FLASH_EBAD_TOKEN;
	rc = fs_token_take(h, activity_id, sku_id, user_id, token, FS_MK(FS_K_USED, 0), NULL);
	if (rc == FLASH_EBAD_TOKEN)
		h->me->st.token_rejects++;
	return rc;
}
