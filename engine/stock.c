/*
 * stock.c -- tagged counters: stock shards and sku totals.
 *
 * Every change of a counter is a 16-byte CAS that writes the new value and
 * the tag of the change together, after the change was written into the
 * journal as an intent {target, delta, seq}.  So a recoverer can tell, for a
 * dead operation, whether each of its changes happened:
 *
 *   applied(X, s)  <=>  word.tag == TAG(X, s)  ||  proc[X].applied_max >= s
 *
 * The second half holds because every writer that replaces a tag TAG(X, s)
 * of another slot first raises proc[X].applied_max to s (fs_help_mark).  It
 * is only consulted for the last intent of an operation: the earlier ones
 * were marked done in the journal by their owner, who saw its CAS succeed.
 *
 * Crash points of a counter change: before the intent is written (nothing
 * happened), between intent and CAS (not applied), after the CAS (applied;
 * the tag says so), after the journal marks it done.
 */
#include "fs.h"

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
	return target < h->shard_cap ? &h->shard[target].c : NULL;
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
/*
 * Run intent @p idx of journal @p j (slot @p slot): CAS the target by the
 * intent's delta, tagging the word with a fresh sequence of the slot.  With
 * @p may_fail, a decrease that would go below zero marks the intent not
 * applied (done = 2) and returns FLASH_ESOLD_OUT; otherwise it always
 * succeeds (increases, post-commit total changes).
 */
static int intent_run(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t idx,
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
			(*retries)++;
	}
}

/* Append an intent to the journal; it counts (for recovery) from here on. */
int fs_intent_add(struct fs_journal *j, uint32_t target, int64_t delta, uint32_t post)
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

static int counter_change(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                          int64_t delta, int may_fail, uint64_t *retries)
{
	int idx = fs_intent_add(j, target, delta, 0);

	if (idx < 0)
		return FLASH_EBUSY;
	return intent_run(h, j, slot, (uint32_t)idx, may_fail, retries);
}

int fs_counter_change(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                      int64_t delta, int may_fail)
{
	return counter_change(h, j, slot, target, delta, may_fail, NULL);
}

/*
 * Bring the net of the journal's applied live-token intents to @p want (the
 * effect the operation's final token state calls for): idempotent, so a
 * recoverer that dies here is finished by the next.
 */
void fs_token_settle(flash_t *h, struct fs_journal *j, uint32_t slot, int64_t want)
{
	uint32_t n = j->n_int > FS_MAX_INTENTS ? FS_MAX_INTENTS : j->n_int;
	int64_t net = 0;

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].shard == FS_TL_TARGET && j->in[i].done == 1)
			net += j->in[i].delta;
	if (net != want)
		counter_change(h, j, slot, FS_TL_TARGET, want - net, 0, NULL);
}

/* Run every post-commit intent not yet applied (owner, or a recoverer rolling forward). */
void fs_intents_run_post(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t n = j->n_int > FS_MAX_INTENTS ? FS_MAX_INTENTS : j->n_int;

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].post && j->in[i].done != 1)
			intent_run(h, j, slot, i, 0, NULL);
}

/* Recoverer: decide every unresolved intent of a dead slot's journal. */
void fs_intents_resolve(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t n = j->n_int > FS_MAX_INTENTS ? FS_MAX_INTENTS : j->n_int;

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].done == 0)
			j->in[i].done = fs_intent_applied(h, slot, &j->in[i]) ? 1 : 2;
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

/*
 * Did intent @p in of slot @p slot happen?  Only meaningful for the slot's
 * operation in flight; see the rule at the top of this file.
 */
int fs_intent_applied(flash_t *h, uint32_t slot, const struct fs_intent *in)
{
	struct fs_counter *c = fs_counter_at(h, in->shard);
	struct fs_counter cur;

	if (in->done == 1)
		return 1;
	if (in->done == 2 || in->seq == 0 || c == NULL)
		return 0;
	fs_counter_load(c, &cur);
	if (cur.tag == FS_TAG(slot, in->seq))
		return 1;
	ck_pr_fence_load();
	return ck_pr_load_64(&h->proc[slot].applied_max) >= in->seq;
}

/*
 * Give back the net stock change of the journal's intents (run by the owner
 * on a failure path, or by a recoverer after fs_intent_applied resolved every
 * intent into done = 1 or 2).  Net per shard is never positive before the
 * commit point: increases there only return what the same op took.
 */
void fs_intents_undo(flash_t *h, struct fs_journal *j)
{
	uint32_t n = j->n_int > FS_MAX_INTENTS ? FS_MAX_INTENTS : j->n_int;
	uint32_t slot = (uint32_t)(j - h->jr);

	for (uint32_t i = 0; i < n; i++) {
		int64_t net = 0;
		uint32_t t = j->in[i].shard;

		if (j->in[i].done != 1 || j->in[i].post || t == FS_TL_TARGET ||
		    t == FS_KT_TARGET_USER || t == FS_KT_TARGET_REQ)
			continue;   /* fill counts are settled by fs_token_settle, fs_kt_recover */
		for (uint32_t k = 0; k < i; k++)
			if (j->in[k].shard == t && j->in[k].done == 1 && !j->in[k].post)
				goto seen;  /* shard handled at its first intent */
		for (uint32_t k = i; k < n; k++)
			if (j->in[k].shard == t && j->in[k].done == 1 && !j->in[k].post)
				net += j->in[k].delta;
		if (net < 0) {
			/* the give-back is itself an intent of this journal, so a
			 * recoverer that dies here is finished by the next one: it
			 * is marked done and then nets to zero */
			counter_change(h, j, slot, t, -net, 0, NULL);
		}
seen:		;
	}
}
