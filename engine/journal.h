/*
 * journal.h -- the per-slot journal: an operation's begin and end, its
 * phases, and its intents (the counter changes it makes, written down before
 * each is made).  The journal's layout is in fs.h (struct fs_journal, struct
 * fs_intent); the rules every writer and recoverer follow are here and in
 * journal.c.
 *
 * Divisions:
 *   1. Operation begin and end     fs_op_begin, fs_op_end, fs_op_names
 *   2. Phases                      fs_op_publish (the commit point's mark),
 *                                  fs_op_resolve (a decision already made)
 *   3. Intents                     fs_journal_nint, fs_intent_add, fs_intent_run
 *                                  (here: on every order), and in journal.c:
 *                                  applied, resolve, undo, run post, settle
 *
 * Life of one operation in its slot's journal:
 *
 *   IDLE --fs_op_begin--> RUN --fs_op_publish--> PUBLISH --fs_op_end--> IDLE
 *                          |                        |
 *                          +-- failure: rollback ---+-- recoverer: RESOLVED(dir)
 *
 * Single writer: the slot's handle, or the one process recovering the slot
 * (recover.c).  Other processes read a live slot's journal without writing
 * it: whether it names a tag (fs_op_names), its op (flash_order_get), its
 * keyed-table insert in flight (ktab.c), its phase (flash_quiet_get).
 *
 * The functions here run on every order, so they are static inline: moved
 * out of order.c and stock.c they cost no call (under -fPIC a global
 * function is never inlined, so before the move fs_op_begin and
 * fs_intent_add were each a call; now neither is).
 */
#ifndef FLASH_JOURNAL_H
#define FLASH_JOURNAL_H

#include "fs.h"

/* ------------------------------------------------------------------------
 * 1. Operation begin and end
 * ------------------------------------------------------------------------ */

/*
 * Open operation @p op in the handle's journal under a fresh tag: every
 * per-operation field is reset, then the phase reads RUN.  From the phase
 * store on, a recoverer that finds the process dead finishes the operation.
 * Always FLASH_OK.
 */
static inline int fs_op_begin(flash_t *h, uint32_t op)
{
	struct fs_journal *j = h->j;

	/* other processes read op_tag (fs_tag_alive) while we write it: one
	 * atomic store (a plain MOV on x86-64), no order needed -- a reader also
	 * needs phase != IDLE, which the fenced store of phase below publishes */
	ck_pr_store_64(&j->op_tag, FS_TAG((uint32_t)h->slot, fs_next_seq(h)));
	j->op = op;
	j->req_idx = j->tok_idx = j->user_idx = j->order_idx = j->sku_idx = FS_NONE;
	j->n_int = 0;
	j->quota_return = 0;
	j->dir = 0;
	j->owner_undo = 0;
	j->tok_id = 0;
	/* xchg: a full barrier, so what the operation reads next (a catalog
	 * entry's version, a table's generation) is read after its phase is
	 * visible -- the other half of a reclaimer's grace period (grace.c) */
	(void)ck_pr_fas_32(&j->phase, FS_PH_RUN);
	return FLASH_OK;
}

/*
 * Close the operation in journal @p j (its owner's, or a dead slot's by its
 * recoverer): phase IDLE.  The store fence keeps every store the operation
 * made before the phase store, so whoever reads IDLE (token_used_final, a
 * waiter in fs_wait_tag) sees the operation's final state; on x86-64 (TSO)
 * it is a compiler barrier only.
 */
static inline void fs_op_end(struct fs_journal *j)
{
	ck_pr_fence_store();
	ck_pr_store_32(&j->phase, FS_PH_IDLE);
}

/*
 * Does journal @p j name operation @p tag as open?  Another process's view:
 * relaxed loads, op_tag first.  A tag moves on only after the phase was
 * IDLE (fs_op_begin stores the tag, then RUN), so "open" can be stale only
 * towards too cautious.
 */
static inline int fs_op_names(const struct fs_journal *j, uint64_t tag)
{
	return ck_pr_load_64(&j->op_tag) == tag && ck_pr_load_32(&j->phase) != FS_PH_IDLE;
}

/* ------------------------------------------------------------------------
 * 2. Phases
 * ------------------------------------------------------------------------ */

/*
 * Just before the commit point: note ring position @p pos (where the
 * operation's record goes), then phase PUBLISH.  A recoverer that finds
 * PUBLISH asks whether the ring's tail moved past ring_pos (recover.c):
 * the store fence puts ring_pos first.
 */
static inline void fs_op_publish(struct fs_journal *j, uint32_t pos)
{
	j->ring_pos = pos;
	ck_pr_fence_store();
	ck_pr_store_32(&j->phase, FS_PH_PUBLISH);
}

/*
 * The direction is decided (FS_DIR_FWD or FS_DIR_BACK): write it, then
 * phase RESOLVED, so a recoverer that finds RESOLVED follows @p dir
 * instead of deciding again.
 */
static inline void fs_op_resolve(struct fs_journal *j, uint32_t dir)
{
	j->dir = dir;
	ck_pr_fence_store();
	ck_pr_store_32(&j->phase, FS_PH_RESOLVED);
}

/* ------------------------------------------------------------------------
 * 3. Intents
 * ------------------------------------------------------------------------ */

/* The intents journal @p j holds: n_int, clamped to the array (a recoverer
 * reads a dead process's journal, and a scribbled count must not take it
 * past the end). */
static inline uint32_t fs_journal_nint(const struct fs_journal *j)
{
	return j->n_int > FS_MAX_INTENTS ? FS_MAX_INTENTS : j->n_int;
}

/*
 * Append intent {@p target, @p delta} to journal @p j: its index, or -1
 * when the journal is full.  @p post: it runs after the commit point (rolled
 * forward by fs_intents_run_post).  The entry is written first and n_int
 * last, so it counts for recovery from the n_int store on, with seq 0 (not
 * tried) until fs_intent_run tags it.
 */
static inline int fs_intent_add(struct fs_journal *j, uint32_t target, int64_t delta, uint32_t post)
{
	uint32_t idx = j->n_int;

	if (idx >= FS_MAX_INTENTS)
		return -1;
	j->in[idx].shard = target;
	j->in[idx].delta = delta;
	j->in[idx].seq = 0;
	j->in[idx].done = 0;
	j->in[idx].post = post;
	ck_pr_store_32(&j->n_int, idx + 1);
	return (int)idx;
}

/*
 * Run intent @p idx of journal @p j (slot @p slot): CAS the target counter
 * by the intent's delta, tagging the word with a fresh sequence of the slot
 * (stock.c, the tagged-counter rule).  With @p may_fail, a decrease that
 * would go below zero marks the intent not applied (done = 2) and returns
 * FLASH_ESOLD_OUT, and an increase of the live-token count past max_tokens
 * FLASH_EFULL; otherwise it always succeeds (increases, post-commit total
 * changes).  @p retries, if not NULL, counts lost CASes.  FLASH_ECORRUPT
 * for a target that names no counter.
 * Crash points: "counter" 1 (intent tagged, CAS not made), 2 (CAS made,
 * done not yet written).
 */
static inline int fs_intent_run(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t idx,
                                int may_fail, uint64_t *retries)
{
	struct fs_intent *in = &j->in[idx];
	struct fs_counter *c = fs_counter_at(h, in->shard);
	struct fs_counter cur, set;

	if (c == NULL)
		return FLASH_ECORRUPT;
	fs_counter_load(c, &cur);
	for (;;) {
		if (may_fail && in->delta < 0 && cur.value < (uint64_t)-in->delta) {
			in->done = 2;
			return FLASH_ESOLD_OUT;
		}
		/* the live-token count has a ceiling as stock has a floor */
		if (may_fail && in->delta > 0 && in->shard == FS_TL_TARGET &&
		    cur.value + (uint64_t)in->delta > h->hdr->fx.opts.max_tokens) {
			in->done = 2;
			return FLASH_EFULL;
		}
		/* a retry -- or a recoverer re-running an intent found not applied --
		 * is unknown again until its CAS is known: a crash after the CAS
		 * must be resolved by the tag, never taken for "not applied" */
		in->done = 0;
		in->seq = h->proc[slot].seq + 1;
		ck_pr_store_64(&h->proc[slot].seq, in->seq);
		fs_help_mark(h, cur.tag);
		set.value = cur.value + (uint64_t)in->delta;
		set.tag = FS_TAG(slot, in->seq);
		FS_CRASH("counter", 1);
		/* lock cmpxchg16b is a full barrier: the intent is visible first */
		if (fs_cas2(c, &cur, &set)) {
			FS_CRASH("counter", 2);
			in->done = 1;
			return FLASH_OK;
		}
		if (retries)
			fs_stat_inc(retries);
	}
}

/* journal.c */
int fs_intent_applied(flash_t *h, uint32_t slot, const struct fs_intent *in);
void fs_intents_resolve(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_intents_undo(flash_t *h, struct fs_journal *j);
void fs_intents_run_post(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_intents_settle(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                       int64_t want);

#endif /* FLASH_JOURNAL_H */
