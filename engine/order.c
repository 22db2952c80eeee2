/*
 * order.c -- the order chain, cancel and restock.
 *
 * Each operation runs in the handle's journal (journal.h):
 *
 *   begin (tag, phase RUN) -> shared changes, each attributable to the tag
 *   -> record into the journal -> phase PUBLISH -> ring publish (COMMIT)
 *   -> finish (move held entries to their final state, post-commit intents)
 *   -> phase IDLE
 *
 * Before the commit point an operation only decreases (stock taken, quota
 * reserved, token redeemed, order number held); after it, only increases and
 * state changes that cannot fail.  So recovery always can: roll back what
 * did not reach its ring, roll forward what did.  The same two functions
 * (fs_op_rollback, fs_op_finish_*) serve the owner's failure path and the
 * recoverer.
 *
 * Crash points: every FS_CRASH below (test builds only).
 */
#include <stddef.h>

#include "fs.h"
#include "journal.h"
#include "probe.h"

/* The business day: 86400 s long, or user_gen_s in a windowed segment
 * (one user-table generation lasts at least a day: gen.c). */
static inline __attribute__((always_inline)) uint32_t biz_day(const flash_t *h, const struct flash_activity *a,
                                                               int64_t now_ns, const int win)
{
	int64_t s = now_ns / 1000000000 + a->day_offset_s;

	if (s < 0)
		return 0;
	if (!win)
		return (uint32_t)(s / 86400);
	return (uint32_t)(s / h->hdr->fx.user_gen_s);
}

uint32_t fs_biz_day(const flash_t *h, const struct flash_activity *a, int64_t now_ns)
{
	return biz_day(h, a, now_ns, h->gen_banks != 1);
}

/* Move *w from @p from to @p to if it still reads @p from (idempotent). */
static inline void cas_state(uint64_t *w, uint64_t from, uint64_t to)
{
	ck_pr_cas_64(w, from, to);
}

/* ------------------------------------------------------------ roll forward / back */

/* The slots a cart claimed after its own, order_idx + 1 .. + cart_n - 1
 * (consecutive: cart_alloc), PEND(tag) -> LINE (@p fwd) or FREE, each only
 * if it still reads PEND(tag) -- idempotent, for the owner or a recoverer. */
static void cart_lines_end(flash_t *h, struct fs_journal *j, uint32_t oi, int fwd)
{
	uint32_t n = ck_pr_load_32(&j->cart_n);
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag);

	if (n > FLASH_CART_LINES_MAX || oi >= h->ord_cap)
		return;
	for (uint32_t i = 1; i < n && oi + i < h->ord_cap; i++) {
		struct fs_order *o = &h->ord[oi + i];

		cas_state(&o->state, pend, fwd ? FS_MK(FS_K_LINE, FS_LINE_VAL(i, n))
		                               : FS_MK(FS_K_FREE, ck_pr_load_64(&o->order_no) == j->ono + i));
	}
}

void fs_op_finish_order(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	/* journal indices: loaded once, checked, then used (no double fetch) */
	uint32_t oi = ck_pr_load_32(&j->order_idx), ui = ck_pr_load_32(&j->user_idx);
	uint32_t ti = ck_pr_load_32(&j->tok_idx), ri = ck_pr_load_32(&j->req_idx);
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag);

	fs_intents_run_post(h, j, slot);          /* the token's count, if any */
	if (__builtin_expect(j->op == FS_OP_CART, 0))
		cart_lines_end(h, j, oi, 1);      /* its lines, before the cart reads placed */
	if (oi < h->ord_cap)
		cas_state(&h->ord[oi].state, pend, j->rec.value > 0 ? FS_MK(FS_K_RESERVED, fs_pay_by_ms(j))
		                                                    : FS_MK(FS_K_ACTIVE, 0));
	FS_CRASH("order", 20);
	if (ui < h->user_n)
		cas_state(&h->user[ui].state, pend, FS_MK(FS_K_DONE, oi));
	FS_CRASH("order", 21);
	if (ti != FS_NONE)
		fs_token_move(h, ti, j->tok_id, pend, FS_MK(FS_K_USED, 0));
	FS_CRASH("order", 22);
	if (ri < h->req_n)
		cas_state(&h->req[ri].state, pend,
		          FS_MK(FS_K_DONE, FS_REQ_VAL(FLASH_OK, j->rec.limit_slot, j->rec.order_no)));
}

void fs_op_finish_cancel(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	/* the record is published: the units and the limit slot go back now
	 * (any order taking them is drained after it: ring.c) */
	/* journal indices: loaded once, checked, then used (no double fetch) */
	uint32_t oi = ck_pr_load_32(&j->order_idx), ui = ck_pr_load_32(&j->user_idx);
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag);

	fs_intents_run_post(h, j, slot);
	FS_CRASH("cancel", 20);
	if (j->quota_return && ui < h->user_n)
		cas_state(&h->user[ui].state, FS_MK(FS_K_DONE, oi), FS_MK(FS_K_FREE, 0));
	FS_CRASH("cancel", 21);
	if (oi < h->ord_cap)
		cas_state(&h->ord[oi].state, pend, j->rec.type == FLASH_REC_EXPIRE
		                                   ? FS_MK(FS_K_EXPIRED, fs_pay_by_ms(j)) : FS_MK(FS_K_CANCELLED, 0));
}

void fs_op_finish_confirm(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t oi = ck_pr_load_32(&j->order_idx);

	(void)slot;
	if (oi < h->ord_cap)
		cas_state(&h->ord[oi].state, FS_MK(FS_K_PEND, j->op_tag), FS_MK(FS_K_ACTIVE, 0));
}

void fs_op_finish_restock(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	fs_intents_run_post(h, j, slot);
}

/*
 * Undo an operation that did not reach its commit point.  @p crashed: the
 * owner died before its outcome became visible, so the client never saw an
 * answer: a redeemed token becomes live again and a request id is
 * forgotten.  Otherwise -- the owner's own failure path, outcome @p rc, or a
 * recoverer finishing that path for an owner that died after recording the
 * outcome in the request-id table (owner_undo) --
 * the token is burnt and the request id remembers the outcome, unless the
 * failure was one of capacity (EBUSY, EFULL, ECORRUPT): then both are left
 * for the retry (fs_token_unwind).  Every step is idempotent, so a
 * recoverer runs it again over whatever part the owner did.
 */
void fs_op_rollback(flash_t *h, struct fs_journal *j, uint32_t slot, int crashed)
{
	/* journal indices: loaded once, checked, then used (no double fetch) */
	uint32_t oi = ck_pr_load_32(&j->order_idx), ui = ck_pr_load_32(&j->user_idx);
	uint32_t ri = ck_pr_load_32(&j->req_idx);
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag);
	int rc = (int16_t)j->rec.flags;   /* outcome, stored there by the owner */

	switch (j->op) {
	case FS_OP_ORDER:
	case FS_OP_CART:
		fs_kt_recover(h, j, slot);   /* a key insert in flight: finished, count settled */
		fs_intents_undo(h, j);
		FS_CRASH("order_undo", 1);
		if (j->op == FS_OP_CART)
			cart_lines_end(h, j, oi, 0);
		/* the slot is free again (order_alloc): FREE(1) if it holds the
		 * rolled-back number, FREE(0) if its number was not written yet
		 * (it still names the slot's previous order, or none) */
		if (oi < h->ord_cap)
			cas_state(&h->ord[oi].state, pend,
			          FS_MK(FS_K_FREE, ck_pr_load_64(&h->ord[oi].order_no) == j->ono));
		if (ui < h->user_n) {
			struct fs_kent *e = &h->user[ui];

			cas_state(&e->state, pend, FS_MK(FS_K_FREE, 0));
		}
		FS_CRASH("order_undo", 2);
		fs_token_unwind(h, j, slot, crashed, rc);   /* burnt, or live again */
		FS_CRASH("order_undo", 3);
		if (ri < h->req_n) {
			struct fs_kent *e = &h->req[ri];
			int keep = !crashed && !fs_refusal_keeps(rc);

			/* Recording the outcome makes it visible (a retry reads it):
			 * from the mark on, a recoverer finishes this rollback as
			 * the owner's (token burnt) instead of a crash's, so a kill
			 * after this CAS never leaves the outcome remembered and
			 * the token live again.  The mark before the CAS: a kill
			 * between them finishes as the owner would have. */
			if (keep) {
				ck_pr_store_32(&j->owner_undo, 1);
				ck_pr_fence_store();
			}
			cas_state(&e->state, pend, keep ? FS_MK(FS_K_DONE, FS_REQ_VAL(rc, 0, 0))
			                                : FS_MK(FS_K_FREE, 0));
		}
		break;
	case FS_OP_CANCEL:
	case FS_OP_CONFIRM:
		/* back to what it was: ACTIVE, or RESERVED with its pay-by time */
		if (oi < h->ord_cap)
			cas_state(&h->ord[oi].state, pend, ck_pr_load_64(&j->ord_prior));
		break;
	case FS_OP_RESTOCK:
		fs_intents_undo(h, j);
		break;
	case FS_OP_RECLAIM:
		fs_gen_rollback(h, j, slot);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------ order numbers */

/*
 * Order numbers grow forever (fs.h: FS_ONO_MASK); number n lives in slot
 * ((n & FS_ONO_MASK) - 1) % max_orders, and a slot is reused only when it is
 * free.  Which slots number n may claim:
 *
 *   lap 0 (n <= max_orders): its slot EMPTY -- nobody else ever maps there
 *                            in lap 0, so numbers of a segment never
 *                            archived are what they always were;
 *   any lap:                 its slot FREE (the order there was archived,
 *                            or its placing rolled back) and holding a
 *                            smaller number (numbers in one slot only grow,
 *                            so a reader can tell an older number's fate);
 *   otherwise the slot is held by a live order of an earlier lap, or is
 *   kept for its own lap-0 number still in some handle's chunk: the number
 *   is skipped (numbers need not be dense), at most FS_ORDER_SKIP of them.
 *
 * The claim is one CAS free -> PEND(tag): two numbers of different laps
 * that map to one free slot never both take it.  Its ABA (the slot claimed,
 * placed, archived, FREE again between our load and CAS) cannot happen: an
 * archive waits out every operation open at its mark (fs_grace), ours too.
 */
static inline uint32_t ono_slot(flash_t *h, uint64_t n)
{
	if (n == h->ono_n)
		return h->ono_slot;   /* the handle's next number: no division */
	return (uint32_t)(((n & FS_ONO_MASK) - 1) % h->ord_cap);
}

/* May number @p n take its slot, whose state is @p s? (rule above) */
static inline int ono_claimable(const flash_t *h, const struct fs_order *o, uint64_t s, uint64_t n)
{
	if (FS_KIND(s) == FS_K_EMPTY)
		return (n & FS_ONO_MASK) <= h->ord_cap || h->replay != NULL;
	/* FREE: the number it held was written before the slot was freed (the
	 * freeing CAS is a full barrier), so this load sees it */
	if (FS_KIND(s) != FS_K_FREE)
		return 0;
	/* FREE(1) with n itself: n's own placing rolled back (a replay that
	 * was killed, re-applied) */
	return ck_pr_load_64(&o->order_no) < n ||
	       (s == FS_MK(FS_K_FREE, 1) && ck_pr_load_64(&o->order_no) == n);
}

/*
 * Order numbers are handed to slots in chunks: no shared counter per order.
 * A slot's unused numbers are [order_next, order_end); they outlive the
 * handle, and the slot's next handle goes on from them.  So every state a
 * refill can be killed in must leave that range holding only numbers of the
 * new chunk, or nothing:
 *
 *   FAA hdr->order_next -> N   killed after: the slot's range is the old,
 *                              empty one; [N, N + 64) is never handed out
 *   order_next = N             killed after: N >= the old order_end (chunks
 *                              are taken in order, each old chunk ends at or
 *                              before the next one starts): empty again
 *   order_end = N + 64         the whole new chunk, none of it used yet
 *
 * (order_end first, as it was, left [old end, N + 64): numbers of chunks
 * taken by live processes in between.)  The store fence keeps the two
 * stores in that order for an observer as well (on x86 a compiler barrier;
 * a dead process's stores are in program order anyway).  Crash points
 * "order_alloc" 1-3.  A chunk stops at the end of its lap (a multiple of
 * max_orders), so in lap 0 chunks are what they always were.
 */
static inline __attribute__((always_inline)) uint64_t order_next_number(flash_t *h)
{
	struct fs_proc *p = h->me;
	uint64_t n = p->order_next, c, lap_end;

	if (n == 0 || n >= p->order_end) {
		n = ck_pr_faa_64(&h->hdr->order_next, FS_ORDER_CHUNK);
		FS_CRASH("order_alloc", 1);
		c = n & FS_ONO_MASK;
		if (c == 0 || c >= FS_ONO_MASK - FS_ORDER_CHUNK)
			return 0;
		ck_pr_store_64(&p->order_next, n);
		ck_pr_fence_store();
		FS_CRASH("order_alloc", 2);
		/* the chunk stops at its lap's end (one division per refill) */
		lap_end = ((c - 1) / h->ord_cap + 1) * (uint64_t)h->ord_cap + 1;
		ck_pr_store_64(&p->order_end, (n - c) + (c + FS_ORDER_CHUNK > lap_end ? lap_end
		                                                                     : c + FS_ORDER_CHUNK));
		FS_CRASH("order_alloc", 3);
	}
	return n;
}

/*
 * Would a chunk taken from the counter now hold a number this handle may
 * claim?  Read-only, so that a full table refuses without moving the
 * counter: the FS_ORDER_SKIP numbers after the counter are looked at.  Only
 * an FAA of the counter issues a number, so if the counter has not moved
 * when the look ends, every slot it found held was held by an order of an
 * earlier number: the table is full.  If it moved, other handles took (and
 * may have placed) the numbers looked at: look again after it, and after a
 * few moves let a chunk of the handle's own decide (order_peek).
 */
static int order_room(flash_t *h)
{
	uint64_t c = ck_pr_load_64(&h->hdr->order_next), c2;

	for (int tries = 0; tries < 4; tries++, c = c2) {
		uint64_t n = c;

		FS_PARK("order_number");
		for (uint32_t k = 0; k < FS_ORDER_SKIP; k++, n++) {
			uint32_t i;

			if ((n & FS_ONO_MASK) == 0 || (n & FS_ONO_MASK) >= FS_ONO_MASK - FS_ORDER_CHUNK)
				return 0;
			i = ono_slot(h, n);
			if (ono_claimable(h, &h->ord[i], ck_pr_load_64(&h->ord[i].state), n))
				return 1;
		}
		ck_pr_fence_load();   /* the slots' states before the counter's second load */
		if ((c2 = ck_pr_load_64(&h->hdr->order_next)) == c)
			return 0;
	}
	return 1;
}

/*
 * Is there an order number left for this handle?  Checked before the
 * operation opens, so that a full table refuses the order before anything is
 * held.  Only the handle's own numbers decide -- its slot's range, and a new
 * chunk from the counter when that is used up and order_room sees room:
 * numbers of a chunk are nobody else's, so no other buyer can take one
 * between this look and order_alloc's claim.  (Deciding on the numbers after
 * the counter, which other handles take and place meanwhile, gave FLASH_EFULL
 * far below capacity with two buyers.)  A number whose slot is held is
 * skipped here for good (order_alloc would skip it too), FS_ORDER_SKIP at
 * most, so the range starts with a claimable number; on the usual path that
 * is the first: one load of a slot the order writes anyway.  The stores are
 * into the handle's own process slot and a refill's FAA of the counter: a
 * kill between them and the operation loses unused numbers, never hands one
 * out twice.  A table found full by order_room changes nothing.
 */
static inline __attribute__((always_inline)) int order_peek(flash_t *h)
{
	struct fs_proc *p = h->me;

	if (h->replay != NULL)
		return FLASH_OK;      /* the record's number: order_alloc checks its slot */
	for (uint32_t k = 0; k < FS_ORDER_SKIP; k++) {
		uint64_t n = ck_pr_load_64(&p->order_next);
		uint32_t i;

		if ((n == 0 || n >= ck_pr_load_64(&p->order_end)) &&
		    (!order_room(h) || (n = order_next_number(h)) == 0))
			return FLASH_EFULL;
		i = ono_slot(h, n);
		h->ono_n = n;
		h->ono_slot = i;
		if (ono_claimable(h, &h->ord[i], ck_pr_load_64(&h->ord[i].state), n))
			return FLASH_OK;
		ck_pr_store_64(&p->order_next, n + 1);   /* held: skip it */
	}
	return FLASH_EFULL;
}

/*
 * Take an order number and claim its slot (PEND(tag), slot index in the
 * journal first, for a recoverer), skipping numbers whose slot is not free
 * (see ono_claimable), FS_ORDER_SKIP at most: 0 then (FLASH_EFULL).  The
 * number goes into the slot right after the claim.  @p *slot: the slot.
 *
 * Replay takes the record's number and keeps the allocator past it; its
 * slot must be free (it was when the order was first placed).
 */
static inline __attribute__((always_inline)) uint64_t order_alloc(flash_t *h, uint32_t *slot)
{
	struct fs_journal *j = h->j;
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag);

	if (h->replay != NULL) {
		uint64_t want = h->replay->order_no, cur, s;
		uint32_t i;

		if ((want & FS_ONO_MASK) == 0)
			return 0;
		while ((cur = ck_pr_load_64(&h->hdr->order_next)) <= want)
			if (ck_pr_cas_64(&h->hdr->order_next, cur, want + 1))
				break;
		while ((cur = ck_pr_load_64(&h->hdr->order_replay_hi)) < want)
			if (ck_pr_cas_64(&h->hdr->order_replay_hi, cur, want))
				break;
		i = ono_slot(h, want);
		s = ck_pr_load_64(&h->ord[i].state);
		if (!ono_claimable(h, &h->ord[i], s, want))
			return 0;
		j->order_idx = i;
		j->ono = want;
		if (!ck_pr_cas_64(&h->ord[i].state, s, pend))
			return 0;
		ck_pr_store_64(&h->ord[i].order_no, want);
		*slot = i;
		return want;
	}
	for (uint32_t k = 0; k < FS_ORDER_SKIP; k++) {
		uint64_t n = order_next_number(h), s;
		uint32_t i;

		if (n == 0)
			return 0;
		i = ono_slot(h, n);
		ck_pr_store_64(&h->me->order_next, n + 1);   /* n is used, placed or skipped */
		h->ono_n = n + 1;
		h->ono_slot = i + 1 == h->ord_cap ? 0 : i + 1;
		s = ck_pr_load_64(&h->ord[i].state);
		if (!ono_claimable(h, &h->ord[i], s, n))
			continue;                                /* held: skip the number */
		/* the journal names the slot and the number before the claim: a
		 * recoverer gives the slot back (fs_op_rollback) */
		j->order_idx = i;
		j->ono = n;
		if (ck_pr_cas_64(&h->ord[i].state, s, pend)) {
			ck_pr_store_64(&h->ord[i].order_no, n);
			*slot = i;
			return n;
		}
		j->order_idx = FS_NONE;
	}
	return 0;
}

/*
 * The current order number with low FS_ONO_REQ_BITS bits @p low (a request-
 * table answer keeps only those): the largest issued number with those bits.
 * Exact while fewer than 2^44 orders are numbered during a request id's
 * life (days, not 2^44 orders).  0 stays 0 (no order).
 */
static uint64_t ono_widen(flash_t *h, uint64_t low)
{
	uint64_t top = ck_pr_load_64(&h->hdr->order_next), mask = (1ull << FS_ONO_REQ_BITS) - 1;
	uint64_t x = (top & FS_ONO_MASK) - 1;

	if (low == 0)
		return 0;
	return (top & ~FS_ONO_MASK) | (x - ((x - low) & mask));
}

/* ------------------------------------------------------------ the order chain */

/*
 * A retry of a finished request answers before anything else is checked
 * (even a full ring): read-only, no key inserted.  A bounded probe (probe.h)
 * that passes entries other keys are being inserted into.
 */
static inline int req_peek_bank(flash_t *h, const uint64_t key[3], uint64_t hash, uint32_t bank,
                                struct flash_order_res *res)
{
	const struct fs_kent *t = h->req + (uint64_t)bank * (h->req_mask + 1);
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, hash, h->req_mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		const struct fs_kent *e = &t[i];
		uint64_t s = ck_pr_load_64(&e->state);

		if (FS_KIND(s) == FS_K_EMPTY || fs_kt_busy_same(s, hash))
			return FLASH_OK;        /* absent, or being inserted: the claim decides */
		if (FS_KIND(s) == FS_K_BUSY)
			continue;               /* another key being inserted */
		ck_pr_fence_load();
		if (e->k[0] == key[0] && e->k[1] == key[1] && e->k[2] == key[2]) {
			if (FS_KIND(s) != FS_K_DONE)
				return FLASH_OK;
			if (res) {
				res->first_rc = FS_REQ_RC(FS_VAL(s));
				res->order_no = ono_widen(h, FS_REQ_ONO(FS_VAL(s)));
				res->limit_slot = FS_REQ_LSLOT(FS_VAL(s));
			}
			return FLASH_EDUPLICATE;
		}
	}
	return FLASH_OK;
}

/*
 * A windowed segment's peek reads the current generation's bank and the
 * previous one's.  It runs before the operation opens, so no grace period
 * covers it: an answer is used only if the generation did not move while
 * it read (the clear of a bank comes after two moves, and its stores after
 * them: a read that saw one of them sees the move in the second load of
 * cur, the loads kept in order by the fence).  Otherwise the claim decides.
 */
static int req_peek_gen(flash_t *h, const uint64_t key[3], uint64_t hash, struct flash_order_res *res)
{
	uint64_t g = fs_gen_cur(h, FS_KT_REQ);
	int rc = req_peek_bank(h, key, hash, fs_gen_bank_of(h, g), res);

	if (rc == FLASH_OK && g > 0)
		rc = req_peek_bank(h, key, hash, fs_gen_bank_of(h, g - 1), res);
	ck_pr_fence_load();
	if (rc != FLASH_OK && fs_gen_cur(h, FS_KT_REQ) != g) {
		if (res)
			memset(res, 0, sizeof(*res));
		return FLASH_OK;
	}
	return rc;
}

static inline __attribute__((always_inline)) int req_peek(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res,
                                                    const int win)
{
	uint64_t key[3] = { r->request_id, r->user_id, (uint64_t)r->activity_id << 32 | r->sku_id };
	uint64_t hash = fs_hash(key[0], key[1], key[2]);
	int rc = !win ? req_peek_bank(h, key, hash, 0, res) : req_peek_gen(h, key, hash, res);

	if (rc == FLASH_EDUPLICATE)
		fs_stat_inc(&h->me->st.duplicates);
	return rc;
}

/* Claim @p key in bank @p bank of the request table: FLASH_OK (held
 * PEND(tag), its index in j->req_idx), FLASH_EDUPLICATE (done before: the
 * first outcome in @p res), or a failure (nothing held). */
static inline __attribute__((always_inline)) int req_claim_bank(flash_t *h, const uint64_t key[3],
                                                                uint32_t bank, struct flash_order_res *res)
{
	struct fs_journal *j = h->j;
	uint64_t s = 0;
	int rc;

	uint32_t ri;

	rc = fs_kt_claim(h, FS_KT_REQ, bank, key, &s);
	if (rc < 0) {
		j->req_idx = FS_NONE;
		return rc;
	}
	if (rc == FS_KT_INSERTED)
		return FLASH_OK;
	/* the index the claim wrote into the journal (for a recoverer): loaded
	 * once, checked, then only the local is used */
	ri = ck_pr_load_32(&j->req_idx);
	if (ri >= h->req_n) {
		j->req_idx = FS_NONE;
		return FLASH_ECORRUPT;
	}
	for (struct fs_kent *e = &h->req[ri];; s = ck_pr_load_64(&e->state)) {
		switch (FS_KIND(s)) {
		case FS_K_DONE:
			if (res) {
				res->first_rc = FS_REQ_RC(FS_VAL(s));
				res->order_no = ono_widen(h, FS_REQ_ONO(FS_VAL(s)));
				res->limit_slot = FS_REQ_LSLOT(FS_VAL(s));
			}
			j->req_idx = FS_NONE;
			return FLASH_EDUPLICATE;
		case FS_K_PEND:
			if (fs_wait_tag(h, &e->state, s) != FLASH_OK) {
				j->req_idx = FS_NONE;
				return FLASH_ECORRUPT;
			}
			break;
		case FS_K_FREE:
			if (ck_pr_cas_64(&e->state, s, FS_MK(FS_K_PEND, j->op_tag)))
				return FLASH_OK;
			break;
		default:
			j->req_idx = FS_NONE;
			return FLASH_ECORRUPT;
		}
	}
}

/* Give back a keyed entry this operation holds PEND(tag) at @p idx of
 * @p e (a bank it must not use after all): FREE, a key nobody holds, as a
 * rollback leaves it; then the journal forgets it (a kill between: the
 * rollback's CAS finds it FREE already). */
static void kt_release(flash_t *h, struct fs_kent *e, uint32_t *jidx)
{
	cas_state(&e->state, FS_MK(FS_K_PEND, h->j->op_tag), FS_MK(FS_K_FREE, 0));
	ck_pr_store_32(jidx, FS_NONE);
}

/*
 * Look @p key up in bank @p bank (the previous generation's) after holding
 * it in the current one.  FLASH_OK: absent or FREE there (ours stands);
 * FS_K_DONE's value in *done_out and FLASH_EDUPLICATE: decided there; a
 * PEND holder there is waited for (it is a lagging claim that will either
 * decide or, seeing the generation moved, give its entry back).
 */
static int kt_recheck(flash_t *h, uint32_t tab, uint32_t bank, const uint64_t key[3], uint64_t *done_out)
{
	struct fs_kent *t = tab == FS_KT_REQ ? h->req : h->user;

	for (;;) {
		uint32_t i;
		uint64_t s;
		int rc = fs_kt_find(h, tab, bank, key, &i, &s);

		if (rc == FLASH_OK)
			return FLASH_OK;
		if (rc < 0)
			return rc;
		switch (FS_KIND(s)) {
		case FS_K_FREE:
			return FLASH_OK;
		case FS_K_DONE:
			*done_out = s;
			return FLASH_EDUPLICATE;
		case FS_K_PEND:
			if (fs_wait_tag(h, &t[i].state, s) != FLASH_OK)
				return FLASH_ECORRUPT;
			break;
		default:
			return FLASH_ECORRUPT;
		}
	}
}

/*
 * A windowed segment's request claim (gen.c): claim in the current
 * generation g; re-read g after the claim (its CAS is a full barrier) and
 * start again if it moved -- so an entry is used only in a bank that was
 * current after it was taken; then re-check g - 1: a claim made there
 * before the move is seen (it precedes our read of the new g), and a DONE
 * there is the first outcome.  So one key is never held in two banks.
 */
static __attribute__((noinline)) int req_claim_gen(flash_t *h, const uint64_t key[3],
                                                   struct flash_order_res *res)
{
	struct fs_journal *j = h->j;

	for (;;) {
		uint64_t g = fs_gen_cur(h, FS_KT_REQ), s = 0;
		int rc = req_claim_bank(h, key, fs_gen_bank_of(h, g), res);
		uint32_t ri;

		if (rc != FLASH_OK)
			return rc;
		ri = ck_pr_load_32(&j->req_idx);   /* checked by the claim */
		if (fs_gen_cur(h, FS_KT_REQ) != g) {
			kt_release(h, &h->req[ri], &j->req_idx);
			continue;
		}
		if (g == 0)
			return FLASH_OK;
		rc = kt_recheck(h, FS_KT_REQ, fs_gen_bank_of(h, g - 1), key, &s);
		if (rc == FLASH_OK)
			return FLASH_OK;
		kt_release(h, &h->req[ri], &j->req_idx);
		if (rc == FLASH_EDUPLICATE && res) {
			res->first_rc = FS_REQ_RC(FS_VAL(s));
			res->order_no = ono_widen(h, FS_REQ_ONO(FS_VAL(s)));
			res->limit_slot = FS_REQ_LSLOT(FS_VAL(s));
		}
		return rc;
	}
}

static inline __attribute__((always_inline)) int req_claim(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res,
                                                     const int win)
{
	uint64_t key[3] = { r->request_id, r->user_id, (uint64_t)r->activity_id << 32 | r->sku_id };

	if (!win)
		return req_claim_bank(h, key, 0, res);
	if (h->replay != NULL)   /* the bank the order used */
		return req_claim_bank(h, key, h->replay->flags & 0xf, res);
	return req_claim_gen(h, key, res);
}

static void limit_key(const struct flash_activity *a, const struct flash_order_req *r,
                      uint32_t day, uint32_t ls, uint64_t key[3])
{
	uint64_t scope_sku = a->scope == FLASH_SCOPE_SKU ? r->sku_id : 0;
	uint64_t scope_day = a->scope == FLASH_SCOPE_DAY ? day : 0;

	key[0] = (uint64_t)r->activity_id << 32 | scope_sku;
	key[1] = r->user_id;
	key[2] = scope_day << 8 | ls;
}

/*
 * Read-only look before anything is reserved: does the user have a limit
 * slot that could be free?  Lets a user at the limit get FLASH_ELIMIT, and a
 * sold-out sku FLASH_ESOLD_OUT, without either inserting a key into the
 * per-user table (keys are permanent: a flood of doomed orders must not fill
 * it).  The claim that follows decides for real.
 */
/* May limit key @p key be free in bank @p bank?  (absent, being inserted, or FREE) */
static inline int limit_peek_bank(flash_t *h, const uint64_t key[3], uint32_t bank)
{
	const struct fs_kent *t = h->user + (uint64_t)bank * (h->user_mask + 1);
	uint32_t i = (uint32_t)fs_hash(key[0], key[1], key[2]) & h->user_mask;

	for (uint32_t n = 0; n <= h->user_mask; n++, i = (i + 1) & h->user_mask) {
		const struct fs_kent *e = &t[i];
		uint64_t s = ck_pr_load_64(&e->state);

		if (FS_KIND(s) == FS_K_EMPTY || FS_KIND(s) == FS_K_BUSY)
			return 1;               /* absent (or being inserted): may be free */
		ck_pr_fence_load();
		if (e->k[0] == key[0] && e->k[1] == key[1] && e->k[2] == key[2])
			return FS_KIND(s) == FS_K_FREE;
	}
	return 1;
}

/*
 * Where a limit entry lives: bank *b, and *prev the previous generation's
 * bank to re-check (or FS_NONE).  One bank without reclamation; a per-day
 * entry in the user table's current generation and the one before; a
 * per-activity / per-sku entry in its activity's bank only (pinned: gen.c).
 */
static inline void limit_banks(flash_t *h, const struct fs_act *act, uint64_t *g, uint32_t *b, uint32_t *prev)
{
	*prev = FS_NONE;
	if (__builtin_expect(h->gen_banks == 1, 1)) {
		*b = 0;
		return;
	}
	if (h->replay != NULL) {
		*b = (h->replay->flags >> 4) & 0xf;
		return;
	}
	if (act->t[0].scope != FLASH_SCOPE_DAY) {   /* the same in both copies */
		*b = fs_gen_bank_of(h, ck_pr_load_32((uint32_t *)&act->ugen));
		return;
	}
	*g = fs_gen_cur(h, FS_KT_USER);
	*b = fs_gen_bank_of(h, *g);
	if (*g > 0)
		*prev = fs_gen_bank_of(h, *g - 1);
}

static __attribute__((noinline)) int limit_peek_gen(flash_t *h, const struct fs_act *act,
                                                    const struct flash_activity *a,
                                                    const struct flash_order_req *r, uint32_t day)
{
	uint32_t b, prev;
	uint64_t g = 0;

	limit_banks(h, act, &g, &b, &prev);
	for (uint32_t ls = 1; ls <= a->limit_per_user; ls++) {
		uint64_t key[3];

		limit_key(a, r, day, ls, key);
		if (limit_peek_bank(h, key, b) && (prev == FS_NONE || limit_peek_bank(h, key, prev)))
			return FLASH_OK;
	}
	return FLASH_ELIMIT;
}

static inline __attribute__((always_inline)) int limit_peek(flash_t *h, const struct fs_act *act,
                                                      const struct flash_activity *a, const struct flash_order_req *r,
                                                      uint32_t day, const int win)
{
	if (win)
		return limit_peek_gen(h, act, a, r, day);
	for (uint32_t ls = 1; ls <= a->limit_per_user; ls++) {
		uint64_t key[3];

		limit_key(a, r, day, ls, key);
		if (limit_peek_bank(h, key, 0))
			return FLASH_OK;
	}
	return FLASH_ELIMIT;
}

/* Has the pay-by time of RESERVED word @p s come (live; a replay does what
 * its record says, never judging a deadline again)? */
static int order_due(const flash_t *h, uint64_t s)
{
	return h->replay == NULL && (uint64_t)fs_now_ns() / 1000000u >= FS_VAL(s);
}

/* The state word of limit key @p key in bank @p bank; 0 if absent. */
static uint64_t limit_entry(flash_t *h, const uint64_t key[3], uint32_t bank)
{
	const struct fs_kent *t = h->user + (uint64_t)bank * (h->user_mask + 1);
	uint32_t i = (uint32_t)fs_hash(key[0], key[1], key[2]) & h->user_mask;

	for (uint32_t n = 0; n <= h->user_mask; n++, i = (i + 1) & h->user_mask) {
		uint64_t s = ck_pr_load_64(&t[i].state);

		if (FS_KIND(s) == FS_K_EMPTY)
			return 0;
		if (FS_KIND(s) == FS_K_BUSY)
			continue;               /* being inserted: not a slot held */
		ck_pr_fence_load();
		if (t[i].k[0] == key[0] && t[i].k[1] == key[1] && t[i].k[2] == key[2])
			return s;
	}
	return 0;
}

/*
 * An order refused FLASH_ELIMIT: does a reservation of the user past its
 * pay-by time hold one of its limit slots?  Their numbers go to
 * h->settle_no (order_settle expires them, then the order runs again).
 * Read-only; never in a replay, nor in the order's second run.
 */
static __attribute__((noinline)) int limit_due(flash_t *h, const struct fs_act *act,
                                              const struct flash_activity *a,
                                              const struct flash_order_req *r, uint32_t day, const int win)
{
	uint32_t b = 0, prev = FS_NONE;
	uint64_t g = 0;

	if (h->replay != NULL || h->settling)
		return 0;
	if (win)
		limit_banks(h, act, &g, &b, &prev);
	h->settle_n = 0;
	for (uint32_t ls = 1; ls <= a->limit_per_user && h->settle_n < FLASH_LIMIT_MAX; ls++) {
		uint64_t key[3];

		limit_key(a, r, day, ls, key);
		for (uint32_t bank = b, pass = 0; pass < 2 && h->settle_n < FLASH_LIMIT_MAX; pass++, bank = prev) {
			uint64_t s = pass && prev == FS_NONE ? 0 : limit_entry(h, key, bank);

			if (FS_KIND(s) != FS_K_DONE || FS_VAL(s) >= h->ord_cap)
				continue;
			const struct fs_order *o = &h->ord[FS_VAL(s)];
			uint64_t os = ck_pr_load_64(&o->state);

			ck_pr_fence_load();   /* the number after the state it goes with */
			if (FS_KIND(os) == FS_K_RESERVED && order_due(h, os))
				h->settle_no[h->settle_n++] = ck_pr_load_64(&o->order_no);
		}
	}
	return h->settle_n > 0;
}

static int stock_peek(flash_t *h, uint32_t base, uint32_t n, uint64_t qty)
{
	uint64_t sum = 0;

	for (uint32_t k = 0; k < n; k++)   /* range checked by the caller */
		sum += ck_pr_load_64(&h->shard[base + k].c.value);
	return sum >= qty ? FLASH_OK : FLASH_ESOLD_OUT;
}

/*
 * Reserve a limit slot of the user: the first of 1..K that is absent or
 * FREE.  On success *lslot is the slot number and *uidx the entry's index,
 * also in the journal (written there by the claim, before its CAS, for a
 * recoverer); the journal's copy is loaded once and checked, and the caller
 * uses *uidx, never the journal's field again.
 */
static __attribute__((noinline)) int limit_claim_gen(flash_t *h, const struct fs_act *act,
                                                     const struct flash_activity *a,
                                                     const struct flash_order_req *r, uint32_t day,
                                                     uint32_t *lslot, uint32_t *uidx)
{
	struct fs_journal *j = h->j;
	uint32_t first = 1, last = a->limit_per_user, b, prev;
	uint64_t g = 0;

	if (h->replay != NULL)
		first = last = h->replay->limit_slot;   /* the slot the order held */
again:
	limit_banks(h, act, &g, &b, &prev);
	for (uint32_t ls = first; ls <= last; ls++) {
		uint64_t key[3];
		uint64_t s = 0;
		uint32_t ui;
		int rc, got = 0;

		limit_key(a, r, day, ls, key);
		rc = fs_kt_claim(h, FS_KT_USER, b, key, &s);

		if (rc < 0) {
			j->user_idx = FS_NONE;
			return rc;
		}
		ui = ck_pr_load_32(&j->user_idx);
		if (ui >= h->user_n) {
			j->user_idx = FS_NONE;
			return FLASH_ECORRUPT;
		}
		if (rc == FS_KT_INSERTED)
			got = 1;
		while (!got && FS_KIND(s) == FS_K_FREE) {
			if (ck_pr_cas_64(&h->user[ui].state, s, FS_MK(FS_K_PEND, j->op_tag)))
				got = 1;
			else
				s = ck_pr_load_64(&h->user[ui].state);
		}
		if (!got)
			continue;   /* held (PEND by another in-flight order of this user) or DONE: next slot */
		if (__builtin_expect(prev != FS_NONE, 0)) {
			/* a per-day entry of a windowed segment: req_claim_gen's rule */
			if (fs_gen_cur(h, FS_KT_USER) != g) {
				kt_release(h, &h->user[ui], &j->user_idx);
				goto again;
			}
			rc = kt_recheck(h, FS_KT_USER, prev, key, &s);
			if (rc != FLASH_OK) {
				kt_release(h, &h->user[ui], &j->user_idx);
				if (rc == FLASH_EDUPLICATE)
					continue;       /* held in the previous generation */
				return rc;
			}
		}
		*lslot = ls;
		*uidx = ui;
		return FLASH_OK;
	}
	j->user_idx = FS_NONE;
	return FLASH_ELIMIT;
}

/* One bank (no reclamation): the claim as it always was. */
static inline __attribute__((always_inline)) int limit_claim(flash_t *h, const struct fs_act *act,
                                                       const struct flash_activity *a, const struct flash_order_req *r,
                                                       uint32_t day, uint32_t *lslot, uint32_t *uidx,
                                                       const int win)
{
	struct fs_journal *j = h->j;
	uint32_t first = 1, last = a->limit_per_user;

	if (win)
		return limit_claim_gen(h, act, a, r, day, lslot, uidx);
	if (h->replay != NULL)
		first = last = h->replay->limit_slot;   /* the slot the order held */
	for (uint32_t ls = first; ls <= last; ls++) {
		uint64_t key[3];
		uint64_t s = 0;
		uint32_t ui;
		int rc;

		limit_key(a, r, day, ls, key);
		rc = fs_kt_claim(h, FS_KT_USER, 0, key, &s);

		if (rc < 0) {
			j->user_idx = FS_NONE;
			return rc;
		}
		ui = ck_pr_load_32(&j->user_idx);
		if (ui >= h->user_n) {
			j->user_idx = FS_NONE;
			return FLASH_ECORRUPT;
		}
		if (rc == FS_KT_INSERTED) {
			*lslot = ls;
			*uidx = ui;
			return FLASH_OK;
		}
		while (FS_KIND(s) == FS_K_FREE) {
			if (ck_pr_cas_64(&h->user[ui].state, s, FS_MK(FS_K_PEND, j->op_tag))) {
				*lslot = ls;
				*uidx = ui;
				return FLASH_OK;
			}
			s = ck_pr_load_64(&h->user[ui].state);
		}
		/* held (PEND by another in-flight order of this user) or DONE: next slot */
	}
	j->user_idx = FS_NONE;
	return FLASH_ELIMIT;
}

/*
 * The order touches three random entries of large tables (token, request
 * id, user limit); each is a cache and TLB miss.  Ask for all three at once,
 * before the first is needed, so the misses overlap instead of adding up.
 */
static inline __attribute__((always_inline)) void order_prefetch(flash_t *h, const struct flash_order_req *r,
                                                                  const struct fs_act *act)
{
	const struct flash_activity *a = &act->t[0];   /* scope: the same in both copies */
	uint64_t key[3];

	if (r->token != 0)
		__builtin_prefetch(&h->tok[(uint32_t)fs_hash(r->token, 5, 6) & h->tok_mask], 1, 3);
	if (r->request_id != 0)
		__builtin_prefetch(&h->req[(uint32_t)fs_hash(r->request_id, r->user_id,
		                                              (uint64_t)r->activity_id << 32 | r->sku_id) &
		                           h->req_mask], 1, 3);
	if (a->scope != FLASH_SCOPE_DAY) {
		key[0] = (uint64_t)r->activity_id << 32 | (a->scope == FLASH_SCOPE_SKU ? r->sku_id : 0);
		key[1] = r->user_id;
		key[2] = 1;
		__builtin_prefetch(&h->user[(uint32_t)fs_hash(key[0], key[1], key[2]) & h->user_mask], 1, 3);
	}
}

/*
 * What the steps of one order hand on to each other: the catalog entries
 * found by order_check, then what order_claim and order_take hold.  Lives
 * in flash_order's frame; every step is static and called once, so the
 * compiler inlines them and the fields stay in registers as locals would.
 */
struct order_ctx {
	const struct fs_act *act;
	const struct flash_activity *t;  /* its terms: the copy act_st names (fs.h) */
	uint32_t si;               /* sku index */
	uint32_t base, nsh;        /* the sku's shard range, loaded once and checked */
	int64_t now;               /* the order's time (the record's, in replay) */
	uint32_t day;              /* business day */
	uint32_t lslot, uidx;      /* limit slot held, its user-table entry */
	uint32_t act_st, sku_st;   /* the entries' states read with them (fs_cat) */
	uint32_t oslot;            /* order-table slot held */
	uint64_t ono;              /* order number held */
	uint64_t home;             /* hash of the user: picks the home shard */
};

/*
 * Everything that can refuse the order before it changes anything (the
 * handle was checked by the caller): the arguments, the catalog, a retry of a finished request,
 * room in the ring and the order table, a failed WAL in sync durability.
 * Read-only but for the handle's own order numbers (order_peek may take a
 * chunk and skip held numbers); on FLASH_OK @p o has the catalog entries and
 * the time.
 */
static inline __attribute__((always_inline)) int order_check(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res,
                                                       struct order_ctx *o, const int win)
{
	const struct fs_sku *sku;
	int rc;

	if (r == NULL || r->user_id == 0 || r->qty == 0 || r->reserve_ms > FLASH_RESERVE_MS_MAX)
		return FLASH_EINVAL;
	if (res)
		memset(res, 0, sizeof(*res));
	if ((o->act = fs_act_find(h, r->activity_id, NULL)) == NULL)
		return FLASH_ENOT_FOUND;
	/* the entry's state, then its key again: fields read from here on are
	 * the state's, if fs_order_run's re-check finds the same word */
	o->act_st = ck_pr_load_32((uint32_t *)&o->act->state);
	ck_pr_fence_load();
	if (FS_CAT_KIND(o->act_st) != FS_CAT_LIVE || o->act->t[0].id != r->activity_id)
		return FS_CAT_KIND(o->act_st) == FS_CAT_ARCHIVING ? FLASH_EENDED : FLASH_ENOT_FOUND;
	o->t = fs_act_t(o->act, o->act_st);
	if (r->activity_version != 0 && r->activity_version != o->t->version)
		return FLASH_ESTALE;      /* the buyer saw other terms: nothing taken */
	order_prefetch(h, r, o->act);
	if ((sku = fs_sku_find(h, r->activity_id, r->sku_id, &o->si)) == NULL)
		return FLASH_ENOT_FOUND;
	o->sku_st = ck_pr_load_32((uint32_t *)&sku->state);
	ck_pr_fence_load();
	if (FS_CAT_KIND(o->sku_st) != FS_CAT_LIVE || sku->activity_id != r->activity_id ||
	    sku->sku_id != r->sku_id)
		return FS_CAT_KIND(o->sku_st) == FS_CAT_ARCHIVING ? FLASH_EENDED : FLASH_ENOT_FOUND;
	if (r->sku_version != 0 && r->sku_version != fs_sku_t(sku, o->sku_st)->version)
		return FLASH_ESTALE;
	/* replay: the terms it was judged by may have changed since (the
	 * window is not judged again either) */
	if (r->qty > o->t->max_qty && h->replay == NULL)
		return FLASH_EINVAL;
	if (!fs_sku_range(h, sku, &o->base, &o->nsh))
		return FLASH_ECORRUPT;
	if (r->request_id != 0 && h->replay == NULL) {
		if (win && (rc = fs_req_window_check(h, r->request_id)) != FLASH_OK)
			return rc;              /* expired (or dated ahead): nothing changes */
		if ((rc = req_peek(h, r, res, win)) != FLASH_OK)
			return rc;
	}
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	if ((rc = order_peek(h)) != FLASH_OK)
		return rc;
	if (ck_pr_load_32(&h->hdr->durability_failed) &&
	    h->hdr->fx.opts.durability == FLASH_DURABILITY_SYNC)
		return FLASH_EDURABILITY;
	if (h->replay != NULL)
		o->now = h->replay->ts_ns;
	else if (o->now == 0)
		o->now = fs_now_ns();     /* not a batch's (flash_order_many) */
	return FLASH_OK;
}

/*
 * The request id, first of the claims (the operation is open): a retry of
 * a finished request gets FLASH_EDUPLICATE with the first outcome in @p res.
 * On any failure the operation is ended here: the claim holds nothing.
 */
static inline __attribute__((always_inline)) int order_request(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res,
                                                         const int win)
{
	int rc = req_claim(h, r, res, win);

	if (rc != FLASH_OK) {
		fs_op_end(h->j);
		if (rc == FLASH_EDUPLICATE)
			fs_stat_inc(&h->me->st.duplicates);
	}
	return rc;
}

/* A look at more stock before the limit slot is claimed (a cart's other
 * lines): FLASH_OK or FLASH_ESOLD_OUT. */
typedef int (*order_more_fn)(flash_t *h, void *arg);

/*
 * The token (redeemed, PEND(tag)), the sale window, and a limit slot of
 * the user (PEND(tag)); a read-only look at the limit and the stock first
 * (and, for a cart, @p more's look at its other lines; NULL for an order:
 * folded away), so a doomed order inserts no key.  On failure the caller
 * rolls back.
 */
static inline __attribute__((always_inline)) int order_claim(flash_t *h, const struct flash_order_req *r, struct order_ctx *o,
                                                       const int win, order_more_fn more, void *more_arg)
{
	const struct flash_activity *a = o->t;
	struct fs_journal *j = h->j;
	int rc;

	/* replay: tokens are not durable, the window was checked when it was placed */
	if (h->replay == NULL && (r->token != 0 || (a->flags & FLASH_ACT_TOKEN_REQUIRED))) {
		j->tok_id = r->token;
		rc = r->token == 0 ? FLASH_EBAD_TOKEN
		                   : fs_token_take(h, r->activity_id, r->sku_id, r->user_id, r->token,
		                                   FS_MK(FS_K_PEND, j->op_tag), &j->tok_idx);
		if (rc != FLASH_OK) {
			fs_stat_inc(&h->me->st.token_rejects);
			return rc;
		}
	}
	FS_CRASH("order", 3);
	if (h->replay == NULL && o->now < a->start_ns)
		return FLASH_ENOT_STARTED;
	if (h->replay == NULL && o->now >= a->end_ns)
		return FLASH_EENDED;
	o->day = h->replay ? h->replay->biz_day : biz_day(h, a, o->now, win);
	if ((rc = limit_peek(h, o->act, a, r, o->day, win)) != FLASH_OK ||
	    (rc = stock_peek(h, o->base, o->nsh, r->qty)) != FLASH_OK ||
	    (more != NULL && (rc = more(h, more_arg)) != FLASH_OK)) {
		if (rc == FLASH_ELIMIT && limit_due(h, o->act, a, r, o->day, win))
			return FS_ESETTLE;      /* a due reservation holds a slot: settled first */
		if (rc == FLASH_ELIMIT)
			fs_stat_inc(&h->me->st.limit_hits);
		else
			fs_stat_inc(&h->me->st.sold_out);
		return rc;
	}
	if ((rc = limit_claim(h, o->act, a, r, o->day, &o->lslot, &o->uidx, win)) != FLASH_OK) {
		if (rc == FLASH_ELIMIT)
			fs_stat_inc(&h->me->st.limit_hits);
		return rc;
	}
	FS_CRASH("order", 4);
	return FLASH_OK;
}

/*
 * The units (journaled intents on the sku's shards) and an order number.
 * On failure the caller rolls back.
 */
static inline __attribute__((always_inline)) int order_take(flash_t *h, const struct flash_order_req *r, struct order_ctx *o)
{
	int rc;

	o->home = fs_hash(r->user_id, 3, 4);
	if ((rc = fs_stock_take(h, o->base, o->nsh, r->qty, o->home)) != FLASH_OK) {
		if (rc == FLASH_ESOLD_OUT)
			fs_stat_inc(&h->me->st.sold_out);
		return rc;
	}
	FS_CRASH("order", 5);
	o->ono = order_alloc(h, &o->oslot);
	FS_CRASH("order", 10);
	return o->ono == 0 ? FLASH_EFULL : FLASH_OK;
}

/*
 * Nothing can refuse the order any more: the order entry (PEND(tag)), the
 * record into the journal, the commit point (fs_commit publishes it), the
 * held entries to their final states, then the answer -- at once in async
 * durability, once the record is durable in sync (fs_ack).
 */
static inline __attribute__((always_inline)) int order_commit(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res,
                                                        const struct order_ctx *oc, const int win, const int ack)
{
	struct fs_journal *j = h->j;
	uint64_t ono = oc->ono;
	struct fs_order *o;

	/* the slot is ours since order_alloc's claim: PEND(tag), its number in */
	o = &h->ord[oc->oslot];
	o->user_id = r->user_id;
	o->activity_id = r->activity_id;
	o->sku_id = r->sku_id;
	o->qty = r->qty;
	o->limit_slot = oc->lslot;
	o->biz_day = oc->day;
	o->user_idx = oc->uidx;
	o->created_ns = oc->now;
	o->sku_idx = oc->si;
	o->shard = oc->base + (uint32_t)(oc->home % oc->nsh);
	FS_CRASH("order", 6);
	if (j->tok_idx != FS_NONE)
		fs_intent_add(j, FS_TL_TARGET, -1, 1);   /* the token leaves the count at commit */

	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_ORDER;
	j->rec.activity_id = r->activity_id;
	j->rec.sku_id = r->sku_id;
	j->rec.qty = r->qty;
	j->rec.order_no = ono;
	j->rec.user_id = r->user_id;
	j->rec.ts_ns = oc->now;
	j->rec.biz_day = oc->day;
	j->rec.limit_slot = (uint16_t)oc->lslot;
	j->rec.request_id = r->request_id;
	if (__builtin_expect(r->reserve_ms != 0, 0))
		/* a reservation: its pay-by time, whole milliseconds (the state
		 * word keeps ms); a replay keeps the one it was placed with */
		j->rec.value = h->replay ? h->replay->value
		                         : (oc->now / 1000000 + (int64_t)r->reserve_ms) * 1000000;
	if (win) {
		/* the banks its entries are in, for replay (gen.c) */
		uint32_t ri = j->req_idx;

		j->rec.flags = (uint16_t)(0x8000u | (ri < h->req_n ? ri / (h->req_mask + 1) : 0) |
		                          (oc->uidx / (h->user_mask + 1)) << 4);
	}
	FS_CRASH("order", 7);
	fs_commit(h);                             /* COMMIT */
	FS_CRASH("order", 8);
	fs_op_finish_order(h, j, (uint32_t)h->slot);
	FS_CRASH("order", 9);
	fs_op_end(j);
	fs_stat_inc(&h->me->st.orders);
	if (res) {
		res->order_no = ono;
		res->first_rc = FLASH_OK;
		res->limit_slot = oc->lslot;
		res->lsn = (uint64_t)j->ring_pos + 1;
	}
	return ack ? fs_ack(h) : FLASH_OK;
}

/* A refusal after the claims began: outcome @p rc into the journal (for a
 * recoverer), everything held given back, the operation ended. */
static int order_refuse(flash_t *h, int rc)
{
	struct fs_journal *j = h->j;

	j->rec.flags = (uint16_t)(int16_t)rc;   /* the outcome, for a recoverer */
	fs_op_rollback(h, j, (uint32_t)h->slot, 0);
	fs_op_end(j);
	return rc;
}

/*
 * The re-check found other state words: new terms if both entries are still
 * LIVE and still these ids' (an archived entry reused holds other ids: ids
 * are not added again, archive.c); else the activity was archived.
 */
static int order_terms_moved(flash_t *h, const struct flash_order_req *r, const struct order_ctx *o)
{
	const struct fs_sku *s = &h->sku[o->si];

	return FS_CAT_KIND(ck_pr_load_32((uint32_t *)&o->act->state)) == FS_CAT_LIVE &&
	       FS_CAT_KIND(ck_pr_load_32((uint32_t *)&s->state)) == FS_CAT_LIVE &&
	       o->act->t[0].id == r->activity_id && s->activity_id == r->activity_id && s->sku_id == r->sku_id;
}

static int order_settle(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res,
                        const int win, int64_t now, const int ack);

/*
 * The order chain (DESIGN.md section 4): check, claim, take, commit.  Each
 * step is one function above; see each for what it holds and how it fails.
 * The handle is checked (fs_enter) by the caller.
 */
static inline __attribute__((always_inline)) int order_run(flash_t *h, const struct flash_order_req *r,
                                                           struct flash_order_res *res, const int win,
                                                           int64_t now, const int ack)
{
	struct order_ctx o;
	int rc;

	o.now = now;
again:
	if ((rc = order_check(h, r, res, &o, win)) != FLASH_OK)
		return rc;                        /* refused before any change */
	FS_PARK("order_read");
	fs_op_begin(h, FS_OP_ORDER);
	/* The entries read by order_check are still those (the same state
	 * words), read after fs_op_begin's full barrier: an archive that marked
	 * the activity before it is seen here; one that marks it later waits
	 * for this operation (archive.c); a change of terms the same (fs.h:
	 * the terms read are whole, and stay so while this operation is
	 * open).  Two loads of lines in cache. */
	if (__builtin_expect(ck_pr_load_32((uint32_t *)&o.act->state) != o.act_st ||
	                     ck_pr_load_32(&h->sku[o.si].state) != o.sku_st, 0)) {
		fs_op_end(h->j);
		if (order_terms_moved(h, r, &o))
			goto again;               /* new terms: judged afresh */
		return FLASH_EENDED;              /* archived: nothing held */
	}
	h->j->sku_idx = o.si;
	FS_PARK("order_begun");
	FS_CRASH("order", 1);
	if (r->request_id != 0 && (rc = order_request(h, r, res, win)) != FLASH_OK)
		return rc;                        /* the operation ended, nothing held */
	FS_CRASH("order", 2);
	if ((rc = order_claim(h, r, &o, win, NULL, NULL)) != FLASH_OK || (rc = order_take(h, r, &o)) != FLASH_OK) {
		rc = order_refuse(h, rc);         /* everything held given back */
		return __builtin_expect(rc == FS_ESETTLE, 0) ? order_settle(h, r, res, win, now, ack) : rc;
	}
	return order_commit(h, r, res, &o, win, ack);
}

/*
 * The order met reservations of its user past their pay-by time holding
 * its limit slots (FS_ESETTLE: refused keeping its token and request id):
 * expire them -- whoever meets a due reservation settles it -- and run the
 * order once more, which then answers on its merits (FLASH_ELIMIT still,
 * if the activity keeps the quota of an expired reservation).
 */
static __attribute__((noinline)) int order_settle(flash_t *h, const struct flash_order_req *r,
                                                  struct flash_order_res *res, const int win, int64_t now,
                                                  const int ack)
{
	int rc;

	for (uint32_t i = 0; i < h->settle_n; i++)
		(void)fs_expire_run(h, h->settle_no[i], NULL);   /* or someone settled it first */
	h->settling = 1;
	rc = win ? order_run(h, r, res, 1, now, ack) : order_run(h, r, res, 0, now, ack);
	h->settling = 0;
	return rc;
}

/* The chain compiled for a windowed segment (gen.c: banks, request-id
 * windows), out of the one-bank chain's way. */
static __attribute__((noinline)) int order_run_windowed(flash_t *h, const struct flash_order_req *r,
                                                        struct flash_order_res *res, int64_t now, int ack)
{
	return order_run(h, r, res, 1, now, ack);
}

/*
 * The chain is compiled twice: for a one-bank segment exactly as it was
 * (win a constant 0: every reclamation step folds away), and for a
 * windowed one.  The order path pays one well-predicted branch for it.
 */
int fs_order_run(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res)
{
	if (__builtin_expect(h->gen_banks != 1, 0))
		return order_run_windowed(h, r, res, 0, 1);
	return order_run(h, r, res, 0, 0, 1);
}

/*
 * The public order: the handle checked, the previous call's figures into
 * the slot (fs_obs_flush), then the chain -- timed one order in
 * FS_OBS_ORDER_SAMPLE (two TSC reads and a multiply), counted always (the
 * outcome kept in the handle for the next flush).
 */
int flash_order(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res)
{
	uint64_t t0;
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	fs_obs_flush(h);
	if (__builtin_expect(h->obs_skip != 0, 1)) {
		h->obs_skip--;
		rc = fs_order_run(h, r, res);
		fs_obs_count(h, FLASH_OP_ORDER, rc);
		return rc;
	}
	h->obs_skip = FS_OBS_ORDER_SAMPLE - 1;
	t0 = fs_ticks();
	rc = fs_order_run(h, r, res);
	fs_obs_end(h, FLASH_OP_ORDER, rc, t0);
	return rc;
}

/*
 * A batch (flash_order_many): n chains, each its own journal entry and
 * commit point, in the order given -- what n calls of flash_order would do,
 * with what each call repeats paid once: the handle's check, the kept
 * figures' flush, one clock read (the batch's orders carry the time it
 * began), the next order's table entries asked for while this one runs
 * (order_prefetch: the misses of order i + 1 overlap the work of order i),
 * and in sync durability one wait, for the batch's last record.  The
 * consumer makes a handle's records durable in ring order (flash_ring_drain
 * moves one durable mark per ring), so that one durable means every earlier
 * one of the batch is.  Orders are counted (each outcome, after the wait),
 * not timed: a batch's time is no one order's latency.
 */
int flash_order_many(flash_t *h, const struct flash_order_req *r, uint32_t n,
                     struct flash_order_res *res, int *rcs)
{
	uint32_t last = 0;
	int64_t now;
	int rc, placed = 0;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (r == NULL || rcs == NULL || n == 0)
		return FLASH_EINVAL;
	fs_obs_flush(h);
	now = fs_now_ns();
	for (uint32_t i = 0; i < n; i++) {
		if (i + 1 < n) {
			const struct fs_act *next = fs_act_find(h, r[i + 1].activity_id, NULL);

			if (next != NULL)
				order_prefetch(h, &r[i + 1], next);
		}
		if (res != NULL)   /* zeros also for a request refused before its checks */
			memset(&res[i], 0, sizeof(res[i]));
		if (__builtin_expect(h->gen_banks != 1, 0))
			rcs[i] = order_run_windowed(h, &r[i], res ? &res[i] : NULL, now, 0);
		else
			rcs[i] = order_run(h, &r[i], res ? &res[i] : NULL, 0, now, 0);
		if (rcs[i] == FLASH_OK) {
			last = h->j->ring_pos;
			placed = 1;
		}
	}
	if (placed && h->hdr->fx.opts.durability == FLASH_DURABILITY_SYNC &&
	    (rc = fs_sync_wait(h, last, h->sync_wait_ms)) != FLASH_OK) {
		/* placed, every one: not durable within the bound (res filled) */
		for (uint32_t i = 0; i < n; i++)
			if (rcs[i] == FLASH_OK)
				rcs[i] = rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		unsigned c = (unsigned)-rcs[i];
		uint64_t *w = &h->my_obs->result[FLASH_OP_ORDER][c < FLASH_OBS_CODES ? c : FLASH_OBS_CODES - 1];

		ck_pr_store_64(w, *w + 1);   /* single writer: fs_obs_flush */
	}
	return FLASH_OK;
}

/* ------------------------------------------------------------ carts */

/*
 * A cart (flash_cart_order): n lines of one activity, one order.  The
 * chain is the order's -- check, claim, take, commit -- with the lines
 * folded in where the order has its one sku:
 *
 *   check   the activity and every line's sku (state, ids, version, qty)
 *   claim   the token, the window and ONE limit slot (order_claim, with
 *           line 0 standing for the cart, looks at every other line's
 *           stock too before it claims the slot: a doomed cart inserts no
 *           key)
 *   take    every line's units (journaled intents, as an order's), then n
 *           consecutive order numbers and their slots (cart_alloc): the
 *           cart's own, and one per later line (FS_K_LINE once placed)
 *   commit  the n records reach the ring by one p_tail store
 *           (fs_commit_lines): the one commit point.  Before it a
 *           recoverer undoes every intent and frees every slot the
 *           journal names (cart_n); after it, it finishes them all.
 *
 * The cart's slot is an order slot like any (its state word is the one
 * a cancel, a confirm and an expiry claim); its lines' slots only hold
 * (sku, shard, qty) for whoever ends the cart.
 */
struct cart_ctx {
	struct order_ctx o;        /* the cart's; si, base, nsh, sku_st: line 0's */
	uint32_t n;
	uint32_t bad;              /* the line a refusal names */
	struct {
		uint32_t si, base, nsh, sku_st;
	} l[FLASH_CART_LINES_MAX];
};

/* The order that stands for the cart in the steps shared with flash_order:
 * line 0 (token, request id, limit, the first stock look). */
static void cart_line0(const struct flash_cart_req *r, struct flash_order_req *q)
{
	memset(q, 0, sizeof(*q));
	q->activity_id = r->activity_id;
	q->sku_id = r->line[0].sku_id;
	q->user_id = r->user_id;
	q->qty = r->line[0].qty;
	q->reserve_ms = r->reserve_ms;
	q->token = r->token;
	q->request_id = r->request_id;
	q->activity_version = r->activity_version;
	q->sku_version = r->line[0].sku_version;
}

/* The arguments alone: FLASH_OK, or FLASH_EINVAL with the line in c->bad. */
static int cart_args(const struct flash_cart_req *r, struct cart_ctx *c)
{
	c->bad = 0;
	if (r == NULL || r->user_id == 0 || r->lines == 0 || r->lines > FLASH_CART_LINES_MAX ||
	    r->_reserved != 0 || r->reserve_ms > FLASH_RESERVE_MS_MAX)
		return FLASH_EINVAL;
	for (uint32_t i = 0; i < r->lines; i++) {
		c->bad = i;
		if (r->line[i].qty == 0)
			return FLASH_EINVAL;
		for (uint32_t k = 0; k < i; k++)
			if (r->line[k].sku_id == r->line[i].sku_id)
				return FLASH_EINVAL;       /* a sku twice */
	}
	c->bad = 0;
	c->n = r->lines;
	return FLASH_OK;
}

/* Line @p i's sku: found LIVE, its version, its qty, its shards. */
static int cart_sku(flash_t *h, const struct flash_cart_req *r, struct cart_ctx *c, uint32_t i)
{
	const struct fs_sku *sku;

	c->bad = i;
	if ((sku = fs_sku_find(h, r->activity_id, r->line[i].sku_id, &c->l[i].si)) == NULL)
		return FLASH_ENOT_FOUND;
	c->l[i].sku_st = ck_pr_load_32((uint32_t *)&sku->state);
	ck_pr_fence_load();
	if (FS_CAT_KIND(c->l[i].sku_st) != FS_CAT_LIVE || sku->activity_id != r->activity_id ||
	    sku->sku_id != r->line[i].sku_id)
		return FS_CAT_KIND(c->l[i].sku_st) == FS_CAT_ARCHIVING ? FLASH_EENDED : FLASH_ENOT_FOUND;
	if (r->line[i].sku_version != 0 && r->line[i].sku_version != fs_sku_t(sku, c->l[i].sku_st)->version)
		return FLASH_ESTALE;
	if (r->line[i].qty > c->o.t->max_qty && h->replay == NULL)
		return FLASH_EINVAL;
	if (!fs_sku_range(h, sku, &c->l[i].base, &c->l[i].nsh))
		return FLASH_ECORRUPT;
	c->bad = 0;
	return FLASH_OK;
}

/* What refuses the cart before it changes anything (order_check's part). */
static int cart_check(flash_t *h, const struct flash_cart_req *r, const struct flash_order_req *q,
                      struct flash_order_res *ores, struct cart_ctx *c, const int win)
{
	int rc;

	if ((c->o.act = fs_act_find(h, r->activity_id, NULL)) == NULL)
		return FLASH_ENOT_FOUND;
	c->o.act_st = ck_pr_load_32((uint32_t *)&c->o.act->state);
	ck_pr_fence_load();
	if (FS_CAT_KIND(c->o.act_st) != FS_CAT_LIVE || c->o.act->t[0].id != r->activity_id)
		return FS_CAT_KIND(c->o.act_st) == FS_CAT_ARCHIVING ? FLASH_EENDED : FLASH_ENOT_FOUND;
	c->o.t = fs_act_t(c->o.act, c->o.act_st);
	if (c->o.t->scope == FLASH_SCOPE_SKU)
		return FLASH_EINVAL;              /* one limit slot per cart: per user only */
	if (r->activity_version != 0 && r->activity_version != c->o.t->version)
		return FLASH_ESTALE;
	for (uint32_t i = 0; i < c->n; i++)
		if ((rc = cart_sku(h, r, c, i)) != FLASH_OK)
			return rc;
	c->o.si = c->l[0].si;
	c->o.base = c->l[0].base;
	c->o.nsh = c->l[0].nsh;
	c->o.sku_st = c->l[0].sku_st;
	if (r->request_id != 0 && h->replay == NULL) {
		if (win && (rc = fs_req_window_check(h, r->request_id)) != FLASH_OK)
			return rc;
		if ((rc = req_peek(h, q, ores, win)) != FLASH_OK)
			return rc;
	}
	if (!fs_ring_room(h, c->n))
		return FLASH_EBUSY;
	if ((rc = order_peek(h)) != FLASH_OK)
		return rc;
	if (ck_pr_load_32(&h->hdr->durability_failed) &&
	    h->hdr->fx.opts.durability == FLASH_DURABILITY_SYNC)
		return FLASH_EDURABILITY;
	if (h->replay != NULL)
		c->o.now = h->replay->ts_ns;
	else if (c->o.now == 0)
		c->o.now = fs_now_ns();
	return FLASH_OK;
}

/* After fs_op_begin: are the activity and every line's sku the entries
 * cart_check read (the same state words)?  0 if not. */
static int cart_same(flash_t *h, const struct cart_ctx *c)
{
	if (ck_pr_load_32((uint32_t *)&c->o.act->state) != c->o.act_st)
		return 0;
	for (uint32_t i = 0; i < c->n; i++)
		if (ck_pr_load_32(&h->sku[c->l[i].si].state) != c->l[i].sku_st)
			return 0;
	return 1;
}

/* New terms (every entry still LIVE and these ids'), or archived (0). */
static int cart_terms_moved(flash_t *h, const struct flash_cart_req *r, const struct cart_ctx *c)
{
	if (FS_CAT_KIND(ck_pr_load_32((uint32_t *)&c->o.act->state)) != FS_CAT_LIVE ||
	    c->o.act->t[0].id != r->activity_id)
		return 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct fs_sku *s = &h->sku[c->l[i].si];

		if (FS_CAT_KIND(ck_pr_load_32((uint32_t *)&s->state)) != FS_CAT_LIVE ||
		    s->activity_id != r->activity_id || s->sku_id != r->line[i].sku_id)
			return 0;
	}
	return 1;
}

/* Every line short of its qty now, as a mask (read-only). */
static uint32_t cart_short(flash_t *h, const struct flash_cart_req *r, const struct cart_ctx *c)
{
	uint32_t m = 0;

	for (uint32_t i = 0; i < c->n; i++)
		if (stock_peek(h, c->l[i].base, c->l[i].nsh, r->line[i].qty) != FLASH_OK)
			m |= 1u << i;
	return m;
}

/* The other lines' stock, looked at by order_claim before it claims the
 * limit slot (so a doomed cart inserts no key): @p arg the cart_peek. */
struct cart_peek {
	const struct flash_cart_req *r;
	struct cart_ctx *c;
};

static int cart_peek(flash_t *h, void *arg)
{
	const struct cart_peek *p = arg;

	for (uint32_t i = 1; i < p->c->n; i++)
		if (stock_peek(h, p->c->l[i].base, p->c->l[i].nsh, p->r->line[i].qty) != FLASH_OK) {
			p->c->bad = i;
			return FLASH_ESOLD_OUT;
		}
	return FLASH_OK;
}

/* Order number @p m's slot, by division (not the handle's cached next). */
static inline uint32_t ono_slot_of(const flash_t *h, uint64_t m)
{
	return (uint32_t)(((m & FS_ONO_MASK) - 1) % h->ord_cap);
}

/*
 * Numbers [@p from, @p to) of the handle's own chunk, skipped by a cart:
 * each slot still EMPTY gets its number and FREE(1), as a rolled-back
 * placing leaves it, so a later lap may use it (an EMPTY slot is only
 * ever its own lap-0 number's).  Killed half way, a slot stays EMPTY:
 * lost for later laps, as a chunk a kill cut short.
 */
static void ono_abandon(flash_t *h, uint64_t from, uint64_t to)
{
	for (uint64_t m = from; m < to; m++) {
		struct fs_order *o = &h->ord[ono_slot_of(h, m)];

		if (FS_KIND(ck_pr_load_64(&o->state)) != FS_K_EMPTY)
			continue;
		ck_pr_store_64(&o->order_no, m);
		ck_pr_fence_store();
		FS_CRASH("cart", 9);
		cas_state(&o->state, FS_MK(FS_K_EMPTY, 0), FS_MK(FS_K_FREE, 1));
	}
}

/* Replay: the record's numbers, the allocator kept past them. */
static uint64_t cart_numbers_replay(flash_t *h, uint32_t n)
{
	uint64_t want = h->replay->order_no, cur;

	if ((want & FS_ONO_MASK) == 0 || ono_slot_of(h, want) + n > h->ord_cap)
		return 0;
	while ((cur = ck_pr_load_64(&h->hdr->order_next)) <= want + n - 1)
		if (ck_pr_cas_64(&h->hdr->order_next, cur, want + n))
			break;
	while ((cur = ck_pr_load_64(&h->hdr->order_replay_hi)) < want + n - 1)
		if (ck_pr_cas_64(&h->hdr->order_replay_hi, cur, want + n - 1))
			break;
	for (uint32_t k = 0; k < n; k++) {
		const struct fs_order *o = &h->ord[ono_slot_of(h, want) + k];

		if (!ono_claimable(h, o, ck_pr_load_64(&o->state), want + k))
			return 0;
	}
	return want;
}

/* @p n consecutive numbers of the handle's own chunks whose slots may be
 * claimed (ono_claimable), or 0.  A chunk's tail too short for the cart,
 * and the numbers before a held slot, are skipped (ono_abandon).  Numbers
 * of one chunk are in one lap, so their slots are consecutive too. */
static uint64_t cart_numbers(flash_t *h, uint32_t n)
{
	struct fs_proc *p = h->me;

	for (uint32_t tries = 0; tries < FS_ORDER_SKIP; tries++) {
		uint64_t n0 = order_next_number(h), end = ck_pr_load_64(&p->order_end), skip_to;
		uint32_t k = 0;

		h->ono_n = 0;     /* the cached next number is not this one any more */
		if (n0 == 0)
			return 0;
		if (n0 + n <= end)
			for (k = 0; k < n; k++) {
				const struct fs_order *o = &h->ord[ono_slot_of(h, n0) + k];

				if (!ono_claimable(h, o, ck_pr_load_64(&o->state), n0 + k))
					break;
			}
		if (n0 + n <= end && k == n) {
			ck_pr_store_64(&p->order_next, n0 + n);
			return n0;
		}
		/* the range moves past them first: killed in ono_abandon, the
		 * handle's range never holds a number whose slot it changed */
		skip_to = n0 + n > end ? end : n0 + k + 1;
		ck_pr_store_64(&p->order_next, skip_to);
		ck_pr_fence_store();
		ono_abandon(h, n0, n0 + n > end ? end : n0 + k);
	}
	return 0;
}

/*
 * The cart's @p n slots, claimed PEND(tag) one by one, each number written
 * after its claim (order_alloc's rule).  The journal names them all --
 * the first slot, the first number, how many -- before the first claim,
 * so a recoverer frees whichever were claimed (cart_lines_end and the
 * order's own rollback).  @p *slot: the first; 0 when none can be had.
 */
static uint64_t cart_alloc(flash_t *h, uint32_t n, uint32_t *slot)
{
	struct fs_journal *j = h->j;
	uint64_t pend = FS_MK(FS_K_PEND, j->op_tag);
	uint64_t n0 = h->replay != NULL ? cart_numbers_replay(h, n) : cart_numbers(h, n);
	uint32_t i0;

	if (n0 == 0)
		return 0;
	i0 = ono_slot_of(h, n0);
	j->ono = n0;
	j->cart_n = n;
	ck_pr_fence_store();
	ck_pr_store_32(&j->order_idx, i0);
	ck_pr_fence_store();
	for (uint32_t k = 0; k < n; k++) {
		struct fs_order *o = &h->ord[i0 + k];
		uint64_t s = ck_pr_load_64(&o->state);

		if (!ono_claimable(h, o, s, n0 + k) || !ck_pr_cas_64(&o->state, s, pend))
			return 0;         /* the rollback frees those claimed */
		FS_CRASH("cart", 7);
		ck_pr_store_64(&o->order_no, n0 + k);
	}
	*slot = i0;
	return n0;
}

/* Every line's units, then the numbers.  On failure the caller rolls back. */
static int cart_take(flash_t *h, const struct flash_cart_req *r, struct cart_ctx *c)
{
	int rc;

	c->o.home = fs_hash(r->user_id, 3, 4);
	for (uint32_t i = 0; i < c->n; i++) {
		if ((rc = fs_stock_take(h, c->l[i].base, c->l[i].nsh, r->line[i].qty, c->o.home)) != FLASH_OK) {
			c->bad = i;
			if (rc == FLASH_ESOLD_OUT)
				fs_stat_inc(&h->me->st.sold_out);
			return rc;
		}
		FS_CRASH("cart", 1);
	}
	c->o.ono = cart_alloc(h, c->n, &c->o.oslot);
	FS_CRASH("cart", 2);
	return c->o.ono == 0 ? FLASH_EFULL : FLASH_OK;
}

/* Line @p i's record from line 0's (@p r0, in the journal): the line's sku
 * and qty, its line bits; the request id is line 0's alone. */
static void cart_line_rec(struct flash_record *out, const struct flash_record *r0, uint32_t i, uint32_t n,
                          uint32_t sku_id, uint32_t qty)
{
	*out = *r0;
	out->sku_id = sku_id;
	out->qty = qty;
	out->request_id = 0;
	out->flags = (uint16_t)((r0->flags & ~(FLASH_REC_F_LAST | FLASH_REC_F_LINE(15))) | FLASH_REC_F_LINE(i) |
	                        (i + 1 == n ? FLASH_REC_F_LAST : 0));
}

/* The cart's slots filled, its n records published in one step (COMMIT),
 * the held entries to their final states, the answer. */
static int cart_commit(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res,
                       const struct cart_ctx *c, const int win, const int ack)
{
	struct fs_journal *j = h->j;
	struct flash_record more[FLASH_CART_LINES_MAX - 1];
	uint32_t ls = c->o.lslot | c->n << 24;

	for (uint32_t i = 0; i < c->n; i++) {
		struct fs_order *o = &h->ord[c->o.oslot + i];

		o->user_id = r->user_id;
		o->activity_id = r->activity_id;
		o->sku_id = r->line[i].sku_id;
		o->qty = r->line[i].qty;
		o->limit_slot = ls;
		o->biz_day = c->o.day;
		o->user_idx = i == 0 ? c->o.uidx : FS_NONE;
		o->created_ns = c->o.now;
		o->sku_idx = c->l[i].si;
		o->shard = c->l[i].base + (uint32_t)(c->o.home % c->l[i].nsh);
	}
	FS_CRASH("cart", 3);
	if (j->tok_idx != FS_NONE)
		fs_intent_add(j, FS_TL_TARGET, -1, 1);
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_ORDER;
	j->rec.activity_id = r->activity_id;
	j->rec.sku_id = r->line[0].sku_id;
	j->rec.qty = r->line[0].qty;
	j->rec.order_no = c->o.ono;
	j->rec.user_id = r->user_id;
	j->rec.ts_ns = c->o.now;
	j->rec.biz_day = c->o.day;
	j->rec.limit_slot = (uint16_t)c->o.lslot;
	j->rec.request_id = r->request_id;
	if (r->reserve_ms != 0)
		j->rec.value = h->replay ? h->replay->value
		                         : (c->o.now / 1000000 + (int64_t)r->reserve_ms) * 1000000;
	if (win) {
		uint32_t ri = j->req_idx;

		j->rec.flags = (uint16_t)(0x8000u | (ri < h->req_n ? ri / (h->req_mask + 1) : 0) |
		                          (c->o.uidx / (h->user_mask + 1)) << 4);
	}
	j->rec.flags |= FLASH_REC_F_CART;
	for (uint32_t i = 1; i < c->n; i++)
		cart_line_rec(&more[i - 1], &j->rec, i, c->n, r->line[i].sku_id, r->line[i].qty);
	FS_CRASH("cart", 4);
	fs_commit_lines(h, more, c->n - 1);       /* COMMIT */
	FS_CRASH("cart", 5);
	fs_op_finish_order(h, j, (uint32_t)h->slot);
	FS_CRASH("cart", 6);
	fs_op_end(j);
	fs_stat_inc(&h->me->st.orders);
	if (res) {
		res->order_no = c->o.ono;
		res->first_rc = FLASH_OK;
		res->limit_slot = c->o.lslot;
		res->lsn = (uint64_t)j->ring_pos + c->n;
	}
	return ack ? fs_ack_n(h, c->n) : FLASH_OK;
}

/* The answer of a cart refused: @p rc, the line it names, a duplicate's
 * first outcome. */
static int cart_answer(struct flash_cart_res *res, int rc, const struct cart_ctx *c,
                       const struct flash_order_res *ores)
{
	if (res == NULL)
		return rc;
	if (rc == FLASH_ESOLD_OUT || rc == FLASH_ESTALE || rc == FLASH_ENOT_FOUND || rc == FLASH_EINVAL)
		res->line = c->bad;
	if (rc == FLASH_EDUPLICATE && ores != NULL) {
		res->order_no = ores->order_no;
		res->first_rc = ores->first_rc;
		res->limit_slot = ores->limit_slot;
	}
	return rc;
}

static int cart_run(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res, const int win,
                    int64_t now, const int ack);

/* As order_settle: the due reservations holding the user's slots expired,
 * then the cart once more. */
static __attribute__((noinline)) int cart_settle(flash_t *h, const struct flash_cart_req *r,
                                                 struct flash_cart_res *res, const int win, int64_t now,
                                                 const int ack)
{
	int rc;

	for (uint32_t i = 0; i < h->settle_n; i++)
		(void)fs_expire_run(h, h->settle_no[i], NULL);
	h->settling = 1;
	rc = cart_run(h, r, res, win, now, ack);
	h->settling = 0;
	return rc;
}

/* The cart's chain (the top of this section). */
static int cart_run(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res, const int win,
                    int64_t now, const int ack)
{
	struct cart_ctx c;
	struct cart_peek pk = { r, &c };
	struct flash_order_req q;
	struct flash_order_res ores;
	int rc;

	if (res)
		memset(res, 0, sizeof(*res));
	if ((rc = cart_args(r, &c)) != FLASH_OK)
		return cart_answer(res, rc, &c, NULL);
	cart_line0(r, &q);
	c.o.now = now;
again:
	memset(&ores, 0, sizeof(ores));
	if ((rc = cart_check(h, r, &q, &ores, &c, win)) != FLASH_OK)
		return cart_answer(res, rc, &c, &ores);
	fs_op_begin(h, FS_OP_CART);
	h->j->cart_n = 0;
	if (__builtin_expect(!cart_same(h, &c), 0)) {
		fs_op_end(h->j);
		if (cart_terms_moved(h, r, &c))
			goto again;               /* new terms: judged afresh */
		return FLASH_EENDED;
	}
	h->j->sku_idx = c.o.si;
	FS_CRASH("cart", 8);
	if (r->request_id != 0 && (rc = order_request(h, &q, &ores, win)) != FLASH_OK)
		return cart_answer(res, rc, &c, &ores);
	if ((rc = order_claim(h, &q, &c.o, win, cart_peek, &pk)) != FLASH_OK ||
	    (rc = cart_take(h, r, &c)) != FLASH_OK) {
		rc = order_refuse(h, rc);
		if (rc == FS_ESETTLE)
			return cart_settle(h, r, res, win, now, ack);
		if (rc == FLASH_ESOLD_OUT && res)
			res->sold_out = cart_short(h, r, &c) | 1u << c.bad;
		return cart_answer(res, rc, &c, &ores);
	}
	return cart_commit(h, r, res, &c, win, ack);
}

/* A cart of one line is a plain order (no line bits in its record). */
static int cart_one(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res)
{
	struct flash_order_req q;
	struct flash_order_res ores;
	int rc;

	if (res)
		memset(res, 0, sizeof(*res));
	if (r->_reserved != 0)
		return FLASH_EINVAL;
	cart_line0(r, &q);
	rc = fs_order_run(h, &q, &ores);
	if (res) {
		res->order_no = ores.order_no;
		res->first_rc = ores.first_rc;
		res->limit_slot = ores.limit_slot;
		res->lsn = ores.lsn;
		if (rc == FLASH_ESOLD_OUT)
			res->sold_out = 1;
	}
	return rc;
}

int fs_cart_run(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res)
{
	if (r == NULL) {
		if (res)
			memset(res, 0, sizeof(*res));
		return FLASH_EINVAL;
	}
	if (r->lines == 1)
		return cart_one(h, r, res);
	return cart_run(h, r, res, h->gen_banks != 1, 0, 1);
}

int flash_cart_order(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res)
{
	return FS_OBSERVED(h, FLASH_OP_ORDER, fs_cart_run(h, r, res));
}

/* ------------------------------------------------------------ cancel */

/*
 * Where order number @p n lives: FLASH_OK and its slot in *slot, or
 * FLASH_ENOT_FOUND for a number never issued (above flash_orders_max, or of
 * another box).
 */
static int ono_find(flash_t *h, uint64_t n, uint32_t *slot)
{
	uint64_t top = ck_pr_load_64(&h->hdr->order_next);

	if ((n & FS_ONO_MASK) == 0 || FS_ONO_BOX(n) != FS_ONO_BOX(top) || n > flash_orders_max(h))
		return FLASH_ENOT_FOUND;
	*slot = (uint32_t)(((n & FS_ONO_MASK) - 1) % h->ord_cap);
	return FLASH_OK;
}

/*
 * A slot read for number @p n holds number @p held (its order_no, read after
 * its state @p s): is n's order elsewhere than here?  Numbers in one slot
 * only grow (order_alloc), so a larger one means n's order, if it was ever
 * placed, was archived (FLASH_EARCHIVED); FREE(0) with n itself: archived.
 * Otherwise FLASH_OK (n is here, or was never placed in it).
 */
static inline int ono_gone(uint64_t s, uint64_t held, uint64_t n)
{
	if (held > n || (held == n && s == FS_MK(FS_K_FREE, 0)))
		return FLASH_EARCHIVED;
	return FLASH_OK;
}

/*
 * Ending an order: a cancel, an expiry, a confirm.  Each claims the order
 * with one CAS of its state word, ACTIVE or RESERVED(pay-by) ->
 * PEND(tag), with the word it replaced kept in the journal first
 * (ord_prior: what a rollback puts back), so of a confirm, a cancel and an
 * expiry racing on one reservation exactly one wins, also when the process
 * doing it dies at any point (recover.c finishes or undoes it).
 */

/* The state word of order @p order_no in @p o once no operation holds it:
 * FLASH_OK with ACTIVE or RESERVED in *sp, or the answer for a number not
 * there (FLASH_EARCHIVED, FLASH_ENOT_FOUND) or one that ended
 * (FLASH_ECANCELLED, FLASH_EEXPIRED).  The caller's operation is open. */
static int order_settled(flash_t *h, struct fs_order *o, uint64_t order_no, uint64_t *sp)
{
	for (;;) {
		uint64_t s = ck_pr_load_64(&o->state);

		ck_pr_fence_load();   /* the number after the state it goes with */
		uint64_t held = ck_pr_load_64(&o->order_no);
		unsigned k = FS_KIND(s);

		if (k != FS_K_PEND && (held != order_no || k == FS_K_FREE || k == FS_K_EMPTY || k == FS_K_LINE))
			return ono_gone(s, held, order_no) != FLASH_OK ? FLASH_EARCHIVED : FLASH_ENOT_FOUND;
		if (k == FS_K_CANCELLED)
			return FLASH_ECANCELLED;
		if (k == FS_K_EXPIRED)
			return FLASH_EEXPIRED;
		if (k == FS_K_PEND) {
			/* being placed, or ended by another handle */
			if (fs_wait_tag(h, &o->state, s) != FLASH_OK)
				return FLASH_ECORRUPT;
			continue;
		}
		if (k != FS_K_ACTIVE && k != FS_K_RESERVED)
			return FLASH_ECORRUPT;
		*sp = s;
		return FLASH_OK;
	}
}

/*
 * An order of an activity being archived is not changed: read after
 * fs_op_begin's full barrier, so an archive marked before it is seen, and
 * one marked after waits for this operation (archive.c).  ACTIVE and
 * RESERVED fields are the order's own: its activity_id is.
 */
static int order_archiving(flash_t *h, const struct fs_order *o)
{
	const struct fs_act *act;

	return h->replay == NULL && (act = fs_act_find(h, ck_pr_load_32(&o->activity_id), NULL)) != NULL &&
	       FS_CAT_KIND(ck_pr_load_32((uint32_t *)&act->state)) != FS_CAT_LIVE;
}

/* Begin operation @p op on order @p order_no: its slot in *oi and *o.
 * Nothing is begun on a refusal (FLASH_EINVAL, FLASH_ENOT_FOUND, FLASH_EBUSY). */
static int order_open(flash_t *h, uint64_t order_no, uint32_t op, uint32_t *oi, struct fs_order **o)
{
	int rc;

	if (order_no == 0)
		return FLASH_EINVAL;
	if ((rc = ono_find(h, order_no, oi)) != FLASH_OK)
		return rc;
	*o = &h->ord[*oi];
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	fs_op_begin(h, op);
	return FLASH_OK;
}

/* Claim the order in slot @p oi, read as @p s: its prior word into the
 * journal, then the one CAS.  Nonzero if it was won. */
static int order_grab(flash_t *h, struct fs_order *o, uint32_t oi, uint64_t s)
{
	struct fs_journal *j = h->j;

	j->order_idx = oi;
	ck_pr_store_64(&j->ord_prior, s);
	ck_pr_fence_store();   /* the prior word before the claim a recoverer undoes */
	return ck_pr_cas_64(&o->state, s, FS_MK(FS_K_PEND, j->op_tag));
}

/*
 * The order is ours: copy it once, check the copy, use only the copy.
 * Ours, but which?  The slot may have been archived and claimed by a later
 * number between our reads and the CAS (the same word): the number says
 * (an archive waits for us, so only if it ended before).  On a refusal the
 * claim is undone and the operation ended.
 */
static int order_copy(flash_t *h, struct fs_order *o, uint64_t order_no, uint64_t s, struct fs_order *oc,
                      const struct fs_act **act)
{
	/* every field but the state word, which other handles CAS: ours now,
	 * it is read atomically where it is read at all */
	_Static_assert(offsetof(struct fs_order, state) == 0, "the state word first");
	oc->state = 0;
	memcpy((char *)oc + sizeof oc->state, (const char *)o + sizeof o->state, sizeof *o - sizeof o->state);
	if (oc->order_no == order_no && oc->sku_idx < h->sku_cap && oc->shard < h->shard_cap &&
	    (oc->user_idx == FS_NONE || oc->user_idx < h->user_n) &&
	    (*act = fs_act_find(h, oc->activity_id, NULL)) != NULL)
		return FLASH_OK;
	cas_state(&o->state, FS_MK(FS_K_PEND, h->j->op_tag), s);
	fs_op_end(h->j);
	if (oc->order_no != order_no)
		return oc->order_no > order_no ? FLASH_EARCHIVED : FLASH_ENOT_FOUND;
	return FLASH_ECORRUPT;
}

/* The record of an operation on order @p oc (@p type), its fields. */
static void order_rec(struct fs_journal *j, uint16_t type, uint64_t order_no, const struct fs_order *oc)
{
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = type;
	j->rec.activity_id = oc->activity_id;
	j->rec.sku_id = oc->sku_id;
	j->rec.qty = oc->qty;
	j->rec.order_no = order_no;
	j->rec.user_id = oc->user_id;
	j->rec.ts_ns = fs_now_ns();
	j->rec.biz_day = oc->biz_day;
	j->rec.limit_slot = (uint16_t)oc->limit_slot;
}

/*
 * A cart's later lines, for an operation that ends or confirms the cart
 * (its state word claimed; @p oc, its copy, has @p n lines): every line
 * slot read and checked first -- LINE(i, n), the cart's number + i, its
 * activity -- then per line the units back as a post-commit intent (@p
 * give: a cancel, an expiry; *@p units counts them) and its record, from
 * line 0's in the journal (whose line bits this sets).  Nothing is added
 * on FLASH_ECORRUPT.
 */
static int cart_lines_rec(flash_t *h, uint32_t oi, uint64_t order_no, const struct fs_order *oc, uint32_t n,
                          int give, struct flash_record *more, uint32_t *units)
{
	struct fs_order lc[FLASH_CART_LINES_MAX];

	if (n > FLASH_CART_LINES_MAX || oi + n > h->ord_cap)
		return FLASH_ECORRUPT;
	if (!fs_ring_room(h, n))
		return FLASH_EBUSY;
	for (uint32_t i = 1; i < n; i++) {
		const struct fs_order *o = &h->ord[oi + i];
		uint64_t s = ck_pr_load_64(&o->state);

		ck_pr_fence_load();   /* the fields after the state they go with */
		memcpy(&lc[i], o, sizeof(lc[i]));
		if (s != FS_MK(FS_K_LINE, FS_LINE_VAL(i, n)) || lc[i].order_no != order_no + i ||
		    lc[i].activity_id != oc->activity_id || lc[i].sku_idx >= h->sku_cap ||
		    lc[i].shard >= h->shard_cap)
			return FLASH_ECORRUPT;
	}
	h->j->rec.flags |= FLASH_REC_F_CART;
	for (uint32_t i = 1; i < n; i++) {
		if (give) {
			fs_intent_add(h->j, lc[i].shard, (int64_t)lc[i].qty, 1);
			*units += lc[i].qty;
		}
		cart_line_rec(&more[i - 1], &h->j->rec, i, n, lc[i].sku_id, lc[i].qty);
	}
	return FLASH_OK;
}

/* The lines of the order copied in @p oc: 1 for a plain order. */
static inline uint32_t order_lines_of(const struct fs_order *oc)
{
	uint32_t n = FS_ORD_LINES(oc->limit_slot);

	return n == 0 ? 1 : n;
}

/* Give the claim of an order back (a refusal after order_grab). */
static int order_unclaim(flash_t *h, struct fs_order *o, uint64_t s, int rc)
{
	cas_state(&o->state, FS_MK(FS_K_PEND, h->j->op_tag), s);
	fs_op_end(h->j);
	return rc;
}

/*
 * A cancel (@p kind FLASH_REC_CANCEL) or an expiry (FLASH_REC_EXPIRE) of
 * the order in state @p s: the record it makes in *made, or the answer.
 * A reservation found due is expired whoever asks; an expiry of one not
 * due, or of an ACTIVE order, changes nothing.
 */
static int order_end_kind(const flash_t *h, uint64_t s, uint16_t kind, uint16_t *made)
{
	*made = kind;
	if (FS_KIND(s) == FS_K_ACTIVE)
		return kind == FLASH_REC_EXPIRE ? FLASH_ECONFIRMED : FLASH_OK;
	if (order_due(h, s))
		*made = FLASH_REC_EXPIRE;
	else if (kind == FLASH_REC_EXPIRE && h->replay == NULL)
		return FLASH_ENOT_DUE;
	return FLASH_OK;
}

/* A cancel or an expiry (@p kind), after the caller's fs_enter.  A cancel
 * that meets a reservation past its pay-by time expires it and answers
 * FLASH_EEXPIRED. */
static int order_end_run(flash_t *h, uint64_t order_no, uint16_t kind, uint32_t *units_returned)
{
	struct fs_journal *j;
	struct fs_order *o, oc;
	const struct fs_act *act;
	struct flash_record more[FLASH_CART_LINES_MAX - 1];
	uint32_t oi, n, units;
	uint64_t s;
	uint16_t made;
	int rc;

	if (units_returned)
		*units_returned = 0;
	if ((rc = order_open(h, order_no, FS_OP_CANCEL, &oi, &o)) != FLASH_OK)
		return rc;
	j = h->j;
	for (;;) {
		if ((rc = order_settled(h, o, order_no, &s)) != FLASH_OK ||
		    (rc = order_end_kind(h, s, kind, &made)) != FLASH_OK ||
		    (rc = order_archiving(h, o) ? FLASH_EARCHIVED : FLASH_OK) != FLASH_OK) {
			fs_op_end(j);
			return rc;
		}
		if (order_grab(h, o, oi, s))
			break;
	}
	FS_CRASH("cancel", 1);
	if ((rc = order_copy(h, o, order_no, s, &oc, &act)) != FLASH_OK)
		return rc;
	FS_CRASH("cancel", 5);
	j->sku_idx = oc.sku_idx;
	j->user_idx = oc.user_idx;
	/* the policy in force now; a replay does what its record did */
	j->quota_return = h->replay ? (h->replay->flags & 1u)
	                            : (fs_act_t(act, ck_pr_load_32((uint32_t *)&act->state))->flags &
	                               FLASH_ACT_CANCEL_RETURNS_QUOTA) != 0;
	fs_intent_add(j, oc.shard, (int64_t)oc.qty, 1);
	order_rec(j, made, order_no, &oc);
	if (h->replay != NULL)
		j->rec.ts_ns = h->replay->ts_ns;
	j->rec.flags = (uint16_t)(j->quota_return | (FS_KIND(s) == FS_K_RESERVED && made == FLASH_REC_CANCEL ? 2 : 0));
	if (FS_KIND(s) == FS_K_RESERVED)
		j->rec.value = (int64_t)(FS_VAL(s) * 1000000u);
	units = oc.qty;
	if ((n = order_lines_of(&oc)) > 1 &&
	    (rc = cart_lines_rec(h, oi, order_no, &oc, n, 1, more, &units)) != FLASH_OK)
		return order_unclaim(h, o, s, rc);
	FS_CRASH("cancel", 2);
	if (n > 1)
		fs_commit_lines(h, more, n - 1);  /* COMMIT: every line's record */
	else
		fs_commit(h);                     /* COMMIT */
	FS_CRASH("cancel", 3);
	fs_op_finish_cancel(h, j, (uint32_t)h->slot);
	FS_CRASH("cancel", 4);
	fs_op_end(h->j);
	fs_stat_inc(made == FLASH_REC_EXPIRE ? &h->me->st.expiries : &h->me->st.cancels);
	rc = fs_ack_n(h, n);
	if (made != kind)
		return FLASH_EEXPIRED;    /* a cancel too late: the reservation had expired */
	if (units_returned)
		*units_returned = units;
	return rc;
}

int fs_cancel_run(flash_t *h, uint64_t order_no, uint32_t *units_returned)
{
	return order_end_run(h, order_no, FLASH_REC_CANCEL, units_returned);
}

int fs_expire_run(flash_t *h, uint64_t order_no, uint32_t *units_returned)
{
	return order_end_run(h, order_no, FLASH_REC_EXPIRE, units_returned);
}

int flash_cancel(flash_t *h, uint64_t order_no, uint32_t *units_returned)
{
	return FS_OBSERVED(h, FLASH_OP_CANCEL, fs_cancel_run(h, order_no, units_returned));
}

int flash_expire(flash_t *h, uint64_t order_no, uint32_t *units_returned)
{
	int rc = fs_enter(h, 1);

	return rc != FLASH_OK ? rc : fs_expire_run(h, order_no, units_returned);
}

/* A confirm, after the caller's fs_enter: RESERVED -> ACTIVE before the
 * pay-by time; ACTIVE already is FLASH_OK (FLASH_EEXIST in a replay). */
int fs_confirm_run(flash_t *h, uint64_t order_no)
{
	struct fs_journal *j;
	struct fs_order *o, oc;
	const struct fs_act *act;
	struct flash_record more[FLASH_CART_LINES_MAX - 1];
	uint32_t oi, n, units = 0;
	uint64_t s;
	int rc;

	if ((rc = order_open(h, order_no, FS_OP_CONFIRM, &oi, &o)) != FLASH_OK)
		return rc;
	j = h->j;
	for (;;) {
		int due = 0;

		rc = order_settled(h, o, order_no, &s);
		if (rc == FLASH_OK && FS_KIND(s) == FS_K_ACTIVE)
			rc = h->replay ? FLASH_EEXIST : FLASH_OK;     /* paid already, or a plain order */
		else if (rc == FLASH_OK && (due = order_due(h, s)) != 0)
			rc = FLASH_EEXPIRED;
		else if (rc == FLASH_OK && order_archiving(h, o))
			rc = FLASH_EARCHIVED;
		else if (rc == FLASH_OK) {
			if (order_grab(h, o, oi, s))
				break;
			continue;
		}
		fs_op_end(j);
		if (!due)
			return rc;
		/* too late: settle it first (whoever meets it expires it); a
		 * confirm that won meanwhile means it was paid in time */
		rc = fs_expire_run(h, order_no, NULL);
		return rc == FLASH_ECONFIRMED ? FLASH_OK : rc == FLASH_OK ? FLASH_EEXPIRED : rc;
	}
	FS_CRASH("confirm", 1);
	if ((rc = order_copy(h, o, order_no, s, &oc, &act)) != FLASH_OK)
		return rc;
	order_rec(j, FLASH_REC_CONFIRM, order_no, &oc);
	if (h->replay != NULL)
		j->rec.ts_ns = h->replay->ts_ns;
	j->rec.value = (int64_t)(FS_VAL(s) * 1000000u);
	if ((n = order_lines_of(&oc)) > 1 &&
	    (rc = cart_lines_rec(h, oi, order_no, &oc, n, 0, more, &units)) != FLASH_OK)
		return order_unclaim(h, o, s, rc);
	FS_CRASH("confirm", 2);
	if (n > 1)
		fs_commit_lines(h, more, n - 1);  /* COMMIT: every line's record */
	else
		fs_commit(h);                     /* COMMIT */
	FS_CRASH("confirm", 3);
	fs_op_finish_confirm(h, j, (uint32_t)h->slot);
	FS_CRASH("confirm", 4);
	fs_op_end(j);
	fs_stat_inc(&h->me->st.confirms);
	return fs_ack_n(h, n);
}

int flash_confirm(flash_t *h, uint64_t order_no)
{
	int rc = fs_enter(h, 1);

	return rc != FLASH_OK ? rc : fs_confirm_run(h, order_no);
}

int flash_expire_due(flash_t *h, uint32_t max, uint32_t *expired)
{
	uint32_t n = 0;
	int rc, late = FLASH_OK;   /* an expiry done in memory, not known durable */

	if (expired)
		*expired = 0;
	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	for (uint32_t i = 0; i < h->ord_cap && (max == 0 || n < max); i++) {
		struct fs_order *o = &h->ord[i];
		uint64_t s = ck_pr_load_64(&o->state);

		if (FS_KIND(s) != FS_K_RESERVED || !order_due(h, s))
			continue;
		ck_pr_fence_load();
		rc = fs_expire_run(h, ck_pr_load_64(&o->order_no), NULL);
		if (rc == FLASH_OK || rc == FLASH_EFATE_UNKNOWN || rc == FLASH_EDURABILITY) {
			n++;                    /* expired: the scan goes on */
			if (rc != FLASH_OK && late == FLASH_OK)
				late = rc;
		} else if (rc != FLASH_EEXPIRED && rc != FLASH_ECONFIRMED && rc != FLASH_ECANCELLED &&
		         rc != FLASH_EARCHIVED && rc != FLASH_ENOT_FOUND)
			break;
		rc = FLASH_OK;
	}
	if (expired)
		*expired = n;
	return rc != FLASH_OK ? rc : late;
}

/* ------------------------------------------------------------ restock / adjust */

int flash_restock(flash_t *h, uint32_t activity_id, uint32_t sku_id, int64_t delta)
{
	return FS_OBSERVED(h, FLASH_OP_RESTOCK, fs_restock_run(h, activity_id, sku_id, delta));
}

/* The restock, after the caller's fs_enter. */
int fs_restock_run(flash_t *h, uint32_t activity_id, uint32_t sku_id, int64_t delta)
{
	const struct fs_sku *sku;
	struct fs_journal *j;
	uint32_t si, base, n, st;
	int rc;

	if (delta == 0 || delta > (1ll << 40) || delta < -(1ll << 40))
		return FLASH_EINVAL;
	if ((sku = fs_sku_find(h, activity_id, sku_id, &si)) == NULL)
		return FLASH_ENOT_FOUND;
	st = ck_pr_load_32((uint32_t *)&sku->state);
	ck_pr_fence_load();
	if (FS_CAT_KIND(st) != FS_CAT_LIVE || sku->activity_id != activity_id || sku->sku_id != sku_id)
		return FLASH_ENOT_FOUND;
	if (!fs_sku_range(h, sku, &base, &n))
		return FLASH_ECORRUPT;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	fs_op_begin(h, FS_OP_RESTOCK);
	j = h->j;
	/* the shard range read above is still this sku's: the same state word
	 * after fs_op_begin's full barrier (an archive marked after it waits
	 * for this restock; one that freed the sku before is seen: order.c's
	 * re-check, archive.c) */
	if (ck_pr_load_32((uint32_t *)&sku->state) != st) {
		fs_op_end(j);
		return FLASH_ENOT_FOUND;
	}
	j->sku_idx = si;
	if (delta < 0) {
		/* decreases first, before the commit point: undone on failure */
		if ((rc = fs_stock_take(h, base, n, (uint64_t)-delta, 0)) != FLASH_OK) {
			fs_op_rollback(h, j, (uint32_t)h->slot, 0);
			fs_op_end(h->j);
			return rc;
		}
		FS_CRASH("restock", 1);
		fs_intent_add(j, FS_TOTAL_BIT | si, delta, 1);
	} else {
		fs_intent_add(j, FS_TOTAL_BIT | si, delta, 1);
		for (uint32_t k = 0; k < n; k++) {
			int64_t part = delta / n + ((uint64_t)k < (uint64_t)delta % n ? 1 : 0);

			if (part > 0)
				fs_intent_add(j, base + k, part, 1);
		}
	}
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_RESTOCK;
	j->rec.activity_id = activity_id;
	j->rec.sku_id = sku_id;
	j->rec.value = delta;
	j->rec.ts_ns = fs_now_ns();
	FS_CRASH("restock", 2);
	fs_commit(h);                             /* COMMIT */
	FS_CRASH("restock", 3);
	fs_op_finish_restock(h, j, (uint32_t)h->slot);
	FS_CRASH("restock", 4);
	fs_op_end(h->j);
	return fs_ack(h);
}

/* ------------------------------------------------------------ reading orders */

uint64_t flash_orders_max(flash_t *h)
{
	uint64_t n;

	if (fs_enter(h, 0) != FLASH_OK)
		return 0;
	/* the highest number any handle has taken: each slot's last, and replay's */
	n = ck_pr_load_64(&h->hdr->order_replay_hi);
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		uint64_t next = ck_pr_load_64(&h->proc[i].order_next);

		if (next > 0 && next - 1 > n)
			n = next - 1;
	}
	return n;
}

int flash_order_get(flash_t *h, uint64_t order_no, struct flash_order_info *out)
{
	const struct fs_order *o;
	uint64_t s, held;
	uint32_t oi;
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL || order_no == 0)
		return FLASH_EINVAL;
	if ((rc = ono_find(h, order_no, &oi)) != FLASH_OK)
		return rc;
	o = &h->ord[oi];
	s = ck_pr_load_64(&o->state);
	ck_pr_fence_load();
	held = ck_pr_load_64(&o->order_no);
	memset(out, 0, sizeof(*out));
	out->order_no = order_no;
	if ((rc = ono_gone(s, held, order_no)) != FLASH_OK)
		return rc;
	if (held != order_no)
		return FLASH_OK;   /* issued, not placed (skipped, or being placed): NONE */
	if (FS_KIND(s) == FS_K_PEND) {
		/* in flight: placing (not yet an order), or being ended or
		 * confirmed (still what it was) */
		uint32_t slot = FS_TAG_SLOT(FS_VAL(s));
		const struct fs_journal *j = slot < h->proc_cap ? &h->jr[slot] : NULL;

		if (j && (j->op == FS_OP_CANCEL || j->op == FS_OP_CONFIRM) && j->op_tag == FS_VAL(s))
			s = ck_pr_load_64(&j->ord_prior);
	}
	switch (FS_KIND(s)) {
	case FS_K_ACTIVE:
		out->state = FLASH_ORDER_ACTIVE;
		break;
	case FS_K_CANCELLED:
		out->state = FLASH_ORDER_CANCELLED;
		break;
	case FS_K_RESERVED:
		out->state = FLASH_ORDER_RESERVED;
		out->pay_by_ns = (int64_t)(FS_VAL(s) * 1000000u);
		break;
	case FS_K_EXPIRED:
		out->state = FLASH_ORDER_EXPIRED;
		out->pay_by_ns = (int64_t)(FS_VAL(s) * 1000000u);
		break;
	case FS_K_PEND:
		/* being placed: no order yet, its fields still being written
		 * (a cart's lines too: flash_order_lines finds none) */
		out->state = FLASH_ORDER_NONE;
		return FLASH_OK;
	case FS_K_LINE:
		/* a cart's later line: not an order (flash_order_lines) */
		out->state = FLASH_ORDER_NONE;
		out->line = FS_LINE_I(FS_VAL(s));
		out->lines = FS_LINE_N(FS_VAL(s));
		return FLASH_OK;
	default:
		out->state = FLASH_ORDER_NONE;
		return FLASH_OK;
	}
	out->user_id = o->user_id;
	out->activity_id = o->activity_id;
	out->sku_id = o->sku_id;
	out->qty = o->qty;
	out->limit_slot = FS_ORD_SLOT(o->limit_slot);
	out->lines = order_lines_of(o);
	out->biz_day = o->biz_day;
	out->created_ns = o->created_ns;
	return FLASH_OK;
}

/*
 * Line @p i of the cart read in @p cart (flash_order_get's answer): its
 * slot, after the cart's, checked as a line of it (cart_lines_rec's rule).
 * A cart archived meanwhile (the slot freed or holding a later number):
 * FLASH_EARCHIVED.
 */
static int cart_line_get(flash_t *h, const struct flash_order_info *cart, uint32_t i,
                         struct flash_order_info *out)
{
	uint32_t oi;
	const struct fs_order *o;
	uint64_t s, held;

	if (ono_find(h, cart->order_no, &oi) != FLASH_OK || oi + i >= h->ord_cap)
		return FLASH_ECORRUPT;
	o = &h->ord[oi + i];
	s = ck_pr_load_64(&o->state);
	ck_pr_fence_load();
	held = ck_pr_load_64(&o->order_no);
	*out = *cart;
	out->line = i;
	out->sku_id = ck_pr_load_32(&o->sku_id);
	out->qty = ck_pr_load_32(&o->qty);
	if (held != cart->order_no + i || s != FS_MK(FS_K_LINE, FS_LINE_VAL(i, cart->lines)))
		return held > cart->order_no + i || FS_KIND(s) == FS_K_FREE ? FLASH_EARCHIVED : FLASH_ECORRUPT;
	return FLASH_OK;
}

int flash_order_lines(flash_t *h, uint64_t order_no, struct flash_order_info *out, uint32_t cap,
                      uint32_t *n)
{
	struct flash_order_info head;
	int rc;

	if (n == NULL || (out == NULL && cap != 0))
		return FLASH_EINVAL;
	*n = 0;
	if ((rc = flash_order_get(h, order_no, &head)) != FLASH_OK)
		return rc;
	if (head.line != 0 || head.lines == 0)
		return FLASH_ENOT_FOUND;      /* a cart's later line, or no order */
	*n = head.lines;
	for (uint32_t i = 0; i < head.lines && i < cap; i++)
		if (i == 0)
			out[0] = head;
		else if ((rc = cart_line_get(h, &head, i, &out[i])) != FLASH_OK)
			return rc;
	return head.lines > cap ? FLASH_EFULL : FLASH_OK;
}

/* ------------------------------------------------------------ box id */

/*
 * The box id goes into the top byte of the allocator itself: one CAS from
 * the fresh value 1 (no chunk taken, so no number issued), so every number
 * taken after it carries the id, and none was taken before it.
 */
int flash_box_id_set(flash_t *h, uint32_t box_id)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (box_id == 0 || box_id > 255)
		return FLASH_EINVAL;
	if (!ck_pr_cas_64(&h->hdr->order_next, 1, ((uint64_t)box_id << 56) | 1))
		return FLASH_EINVAL;
	return FLASH_OK;
}

/* ------------------------------------------------------------ listing orders */

int flash_order_at(flash_t *h, uint32_t index, struct flash_order_info *out)
{
	uint64_t no;
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	if (index >= h->ord_cap)
		return FLASH_ENOT_FOUND;
	memset(out, 0, sizeof(*out));
	no = ck_pr_load_64(&h->ord[index].order_no);
	/* the slot's number, read the way any reader reads it: NONE unless the
	 * slot holds it now (archived, rolled back, never used: free) */
	if (no == 0 || ((no & FS_ONO_MASK) - 1) % h->ord_cap != index ||
	    flash_order_get(h, no, out) != FLASH_OK) {
		memset(out, 0, sizeof(*out));
		return FLASH_OK;
	}
	if (out->state == FLASH_ORDER_NONE && out->line != 0) {
		/* a cart's later line: read as that line of the cart */
		struct flash_order_info cart;
		uint32_t i = out->line;

		if (flash_order_get(h, no - i, &cart) != FLASH_OK || cart.state == FLASH_ORDER_NONE ||
		    cart.lines != out->lines || cart_line_get(h, &cart, i, out) != FLASH_OK)
			memset(out, 0, sizeof(*out));
		return FLASH_OK;
	}
	if (out->state == FLASH_ORDER_NONE)
		memset(out, 0, sizeof(*out));
	return FLASH_OK;
}
