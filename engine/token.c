/*
 * token.c -- one-time anti-replay tokens.
 *
 * An entry is {state, id} plus its payload; state and id change together by
 * one 16-byte CAS, so an entry reused for another token can never be
 * mistaken for the one a slow reader looked at (no ABA).
 *
 *   EMPTY/USED --issue--> BUSY(tag) --payload written--> FREE (live)
 *   FREE --redeem--> PEND(tag) --> USED(tag)     (flash_token_redeem: GETDEL)
 *   FREE --order--> PEND(tag) --commit--> USED
 *                             --refused on the order's merits--> USED(tag)
 *                             --refused for capacity (EBUSY, EFULL, ECORRUPT)--> FREE
 *   FREE, expired --sweep--> PEND(tag) --> USED(tag) (only when the table is full)
 *
 * A token is used up only by a call that returned: an operation that dies
 * before it returns told nobody anything, so recovery gives its token back
 * (PEND(tag) or USED(tag) -> FREE, fs_token_recover).  That is why the
 * operation's tag stays in USED(tag) while its journal is open, and why an
 * issue does not reuse such an entry until that journal is closed: the way
 * back to FREE is always there.
 *
 * hdr->tokens_live counts the entries that are BUSY, FREE or PEND; it is
 * changed only through journaled intents, before the entry moves into the
 * counted states and before it leaves them, so after any crash recovery
 * settles it to the entry's final state (fs_token_recover): the count is
 * exact, and max_tokens live tokens fit, never one more.
 *
 * Token numbers: a secret keyed permutation of (slot, sequence) -- never
 * issued twice, since the input never repeats in a segment and a
 * permutation maps distinct inputs to distinct numbers; and unguessable,
 * since without the key the numbers of the past say nothing about the next
 * (see "Token numbers" below).  Expired tokens are retired only when an
 * issue finds the table full; nothing sweeps on the order path.
 *
 * Entries are reused (USED -> BUSY), so after a while none is never-used and
 * no chain ends at EMPTY: lookups are bounded by the longest distance from
 * home at which an issue placed a token (hdr->tok_probe_max, probe.h).
 */
#include <errno.h>
#include <sys/random.h>

#include "fs.h"
#include "journal.h"
#include "probe.h"

/* ---------------------------------------------------------------- token numbers */

/*
 * The permutation is a 10-round Feistel network on the two 32-bit halves of
 * the 64-bit input, whose round function is SipHash-2-4 (a keyed PRF, the
 * one libsodium's crypto_shorthash is) of (round, right half) under the
 * segment's 128-bit key.  A Feistel network is a bijection whatever its
 * round function; with a PRF for that function and enough rounds it is a
 * pseudorandom permutation (Luby-Rackoff; Patarin for the bound with many
 * rounds), so one who saw any number of tokens -- far fewer than 2^32 -- can
 * predict the next no better than by guessing one of 2^64.  The key is drawn
 * from getrandom(2) when the segment is created and never leaves it.
 * Cost: 10 SipHash calls per issue (a few hundred ns); nothing on the order
 * path.
 */
#define TOKEN_ROUNDS 10

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3) do { \
		v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32); \
		v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2; \
		v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0; \
		v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32); \
	} while (0)

/* SipHash-2-4 of the 8-byte little-endian message @p m under @p key
 * (key[0] = bytes 0..7 of the 16-byte key, key[1] = bytes 8..15). */
uint64_t fs_siphash24_u64(const uint64_t key[2], uint64_t m)
{
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
	const uint64_t last = 8ull << 56;   /* message length 8, no bytes left over */

	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v3 ^= last;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The keyed permutation of 64-bit words (Feistel, above). */
uint64_t fs_token_permute(const uint64_t key[2], uint64_t x)
{
	uint32_t l = (uint32_t)(x >> 32), r = (uint32_t)x;

	for (uint32_t i = 0; i < TOKEN_ROUNDS; i++) {
		uint32_t f = (uint32_t)fs_siphash24_u64(key, (uint64_t)i << 32 | r);
		uint32_t t = l ^ f;

		l = r;
		r = t;
	}
	return (uint64_t)l << 32 | r;
}

/*
 * A fresh key from the kernel's random pool (getrandom(2), blocking until
 * the pool is ready, as at boot).  No fallback: a key made from the time or
 * the pid would be guessable, so failing to get one fails the creation
 * (FLASH_ESYS).
 */
int fs_token_keygen(uint64_t key[2])
{
	char *p = (char *)key;
	size_t got = 0;

	while (got < 2 * sizeof(uint64_t)) {
		ssize_t n = getrandom(p + got, 2 * sizeof(uint64_t) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FLASH_ESYS;
		got += (size_t)n;
	}
	return FLASH_OK;
}

static uint64_t token_number(flash_t *h)
{
	/* input (slot, slot sequence): unique per segment, the slot's sequence
	 * persists across handles and restores */
	uint64_t x = fs_next_seq(h) | (uint64_t)h->slot << FS_SEQ_BITS;

	return fs_token_permute(h->hdr->fx.token_key, x);
}

/* ---------------------------------------------------------------- the table */

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
 * May an issue reuse an entry that reads USED (@p st)?  Not while the
 * operation named in it is still open: its process may die before
 * returning, and recovery then makes the token live again in this entry.
 * The journal's tag moves on only after the phase was IDLE, so "open" read
 * here can only be too cautious, never too late.
 */
static int token_used_final(flash_t *h, uint64_t st)
{
	uint64_t tag = FS_VAL(st);
	uint32_t slot = FS_TAG_SLOT(tag);

	if (tag == 0 || fs_check_slot(h, slot) != FLASH_OK)
		return 1;
	return !fs_op_names(&h->jr[slot], tag);
}

/*
 * Recovery of a dead handle's token operation (issue, redeem, sweep, or the
 * token part of an order being rolled back).  The dead call never returned,
 * so its caller learned nothing:
 *   issue:  the number never reached the caller: the entry (BUSY(tag), or
 *           FREE if the issue got that far) is retired.
 *   redeem, sweep, order: the token is live again, whether the entry still
 *           reads PEND(tag) or already USED(tag) (the call died after
 *           using it up, before returning): -> FREE.
 * Then the live-token count is settled to "no change" (fs_intents_settle):
 * every case above leaves the count where it was before the operation.
 * Each step is a CAS from a state naming the dead tag, or a journaled
 * intent, so a recoverer that dies here is finished by the next one.
 */
void fs_token_recover(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint64_t st = 0, id = 0, tag = j->op_tag;
	uint32_t ti = ck_pr_load_32(&j->tok_idx);

	if (token_read(h, ti, &st, &id) && id == j->tok_id) {
		if (j->op == FS_OP_TOKEN) {
			/* the caller never got the number: nobody can redeem it */
			if (st == FS_MK(FS_K_BUSY, tag) || st == FS_MK(FS_K_FREE, 0))
				fs_token_move(h, ti, id, st, FS_MK(FS_K_USED, 0));
		} else if (st == FS_MK(FS_K_PEND, tag) || st == FS_MK(FS_K_USED, tag)) {
			fs_token_move(h, ti, id, st, FS_MK(FS_K_FREE, 0));
		}
	}
	fs_intents_settle(h, j, slot, FS_TL_TARGET, 0);
}

/*
 * The token part of an order rolled back before its commit point.
 * @p crashed: the order's process died before deciding; the token is live
 * again (fs_token_recover).  Otherwise the failure path with outcome @p rc
 * (the owner's, or a recoverer finishing it): a refusal for capacity puts
 * the token back (PEND(tag) -> FREE, the count never moved); any other burns
 * it: the count first, then the entry (-> USED(tag)).  Idempotent: run
 * again over a part already done, it does nothing twice.
 * Crash points: "order_undo" 4 (between the two).
 */
void fs_token_unwind(flash_t *h, struct fs_journal *j, uint32_t slot, int crashed, int rc)
{
	uint32_t ti = ck_pr_load_32(&j->tok_idx);
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag), st = 0, id = 0;

	if (ti == FS_NONE)
		return;
	if (crashed) {
		fs_token_recover(h, j, slot);
		return;
	}
	if (!token_read(h, ti, &st, &id) || id != j->tok_id)
		return;                          /* not ours: the take failed */
	if (st == FS_MK(FS_K_USED, j->op_tag)) {
		/* burnt by the owner, which died after: settle its count */
		fs_intents_settle(h, j, slot, FS_TL_TARGET, -1);
		return;
	}
	if (st != pend)
		return;
	if (fs_refusal_keeps(rc)) {
		fs_token_move(h, ti, id, pend, FS_MK(FS_K_FREE, 0));
		return;
	}
	/* the count first (settled from the journal: run again by a
	 * recoverer, it changes nothing twice), then the entry */
	fs_intents_settle(h, j, slot, FS_TL_TARGET, -1);
	FS_CRASH("order_undo", 4);
	fs_token_move(h, ti, id, pend, FS_MK(FS_K_USED, j->op_tag));
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
		fs_op_end(j);
		return FLASH_EBAD_TOKEN;        /* used meanwhile, or reclaimed */
	}
	FS_CRASH("token_take", 2);
	fs_counter_change(h, j, (uint32_t)h->slot, FS_TL_TARGET, -1, 0);
	FS_CRASH("token_take", 3);
	/* used up, but still named by this open journal: a death before the
	 * phase store below gives the token back (fs_token_recover) */
	fs_token_move(h, idx, id, set[0], FS_MK(FS_K_USED, j->op_tag));
	FS_CRASH("token_take", 4);
	fs_op_end(j);
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

/*
 * Retire every live, unexpired token of activity @p act (flash_archive, once
 * the activity is marked ARCHIVING and its grace period passed): each by its
 * own journaled retire, as a redeem would, so a crash leaves each token live
 * or retired and the count exact.  Expired ones are left to the sweep (no
 * order can use them).  Returns how many were retired.
 */
uint32_t fs_token_retire_activity(flash_t *h, uint32_t act)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= h->tok_mask; i++) {
		const struct fs_token *e = &h->tok[i];
		uint64_t st = 0, id = 0;

		if (token_read(h, i, &st, &id) && st == FS_MK(FS_K_FREE, 0) &&
		    ck_pr_load_32((uint32_t *)&e->activity_id) == act &&
		    token_retire(h, i, id, act, e->sku_id, e->user_id, 0) == FLASH_OK)
			n++;
	}
	return n;
}

/* The issue, after the caller's fs_enter. */
static int token_issue_run(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                           uint32_t ttl_ms, uint64_t *token)
{
	struct fs_journal *j;
	struct fs_probe p;
	uint64_t id, now, tag;
	uint32_t i;
	int rc;

	if (token == NULL || user_id == 0 || ttl_ms == 0)
		return FLASH_EINVAL;
	if (fs_sku_find(h, activity_id, sku_id, NULL) == NULL)
		return FLASH_ENOT_FOUND;
	do
		id = token_number(h);
	while (id == 0);
	j = h->j;
	for (int pass = 0;; pass++) {
		const struct fs_act *act;

		fs_op_begin(h, FS_OP_TOKEN);
		/* not for an activity being archived: read after fs_op_begin's
		 * full barrier, so an archive marked before is seen, and one
		 * marked after waits for this issue and then retires its token
		 * (archive.c) */
		if ((act = fs_act_find(h, activity_id, NULL)) == NULL ||
		    FS_CAT_KIND(ck_pr_load_32((uint32_t *)&act->state)) != FS_CAT_LIVE) {
			fs_op_end(j);
			return FLASH_ENOT_FOUND;
		}
		j->tok_id = id;
		rc = fs_counter_change(h, j, (uint32_t)h->slot, FS_TL_TARGET, 1, 1);
		if (rc == FLASH_OK)
			break;
		fs_op_end(j);
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
		if (FS_KIND(cur[0]) != FS_K_EMPTY &&
		    (FS_KIND(cur[0]) != FS_K_USED || !token_used_final(h, cur[0])))
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
		fs_op_end(j);
		*token = id;
		return FLASH_OK;
	}
	/* no reusable entry within the probe bound (odds in probe.h): undo it */
	fs_intents_settle(h, j, (uint32_t)h->slot, FS_TL_TARGET, 0);
	fs_op_end(j);
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

/* The public issue: checked, timed, counted (fs_obs_end). */
int flash_token_issue(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                      uint32_t ttl_ms, uint64_t *token)
{
	return FS_OBSERVED(h, FLASH_OP_TOKEN_ISSUE,
	                   token_issue_run(h, activity_id, sku_id, user_id, ttl_ms, token));
}

static int token_redeem_run(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                            uint64_t token)
{
	uint32_t i;
	int rc;

	if (user_id == 0)
		return FLASH_EINVAL;
	rc = FLASH_EBAD_TOKEN;
	if (token != 0 && (i = token_find(h, token)) != FS_NONE)
		rc = token_retire(h, i, token, activity_id, sku_id, user_id, 0);
	if (rc == FLASH_EBAD_TOKEN)
		fs_stat_inc(&h->me->st.token_rejects);
	return rc;
}

/* The public redeem: checked, timed, counted (fs_obs_end). */
int flash_token_redeem(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t user_id,
                       uint64_t token)
{
	return FS_OBSERVED(h, FLASH_OP_TOKEN_REDEEM, token_redeem_run(h, activity_id, sku_id, user_id, token));
}
