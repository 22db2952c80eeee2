/*
 * journal.c -- intents after the fact: was each change of an operation made,
 * and how to finish or give back the operation's changes.  Begin, end,
 * phases and the two intent steps every order takes (add, run) are static
 * inline in journal.h.
 *
 * An intent {target, delta, seq} is written into the slot's journal before
 * the 16-byte CAS that makes the change and tags the counter word with
 * TAG(slot, seq) (fs_intent_run).  So for a dead operation a recoverer can
 * tell whether each change happened:
 *
 *   applied(X, s)  <=>  word.tag == TAG(X, s)  ||  proc[X].applied_max >= s
 *
 * The second half holds because every writer that replaces a tag TAG(X, s)
 * of another slot first raises proc[X].applied_max to s (fs_help_mark,
 * stock.c).  It is only consulted for the last intent of an operation: the
 * earlier ones were marked done in the journal by their owner, who saw its
 * CAS succeed.
 *
 * Every function here is idempotent over a journal: a give-back or a
 * roll-forward is itself an intent of the same journal, marked done once
 * made, so a recoverer that dies half-way is finished by the next one.
 *
 * Divisions: resolve (applied, resolve), finish (run post), give back
 * (undo, settle).
 */
#include "fs.h"
#include "journal.h"

/* One more journaled change of @p target by @p delta that cannot fail
 * (a give-back, or a count brought to its due): add the intent, run it. */
static void journal_change(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                           int64_t delta)
{
	int idx = fs_intent_add(j, target, delta, 0);

	if (idx >= 0)
		fs_intent_run(h, j, slot, (uint32_t)idx, 0, NULL);
}

/* ------------------------------------------------------------ resolve */

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

/* Recoverer: decide every unresolved intent of a dead slot's journal. */
void fs_intents_resolve(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t n = fs_journal_nint(j);

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].done == 0)
			j->in[i].done = fs_intent_applied(h, slot, &j->in[i]) ? 1 : 2;
}

/* ------------------------------------------------------------ finish */

/* Run every post-commit intent not yet applied (owner, or a recoverer rolling forward). */
void fs_intents_run_post(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t n = fs_journal_nint(j);

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].post && j->in[i].done != 1)
			fs_intent_run(h, j, slot, i, 0, NULL);
}

/* ------------------------------------------------------------ give back */

/*
 * Give back the net stock change of the journal's intents (run by the owner
 * on a failure path, or by a recoverer after fs_intent_applied resolved every
 * intent into done = 1 or 2).  Net per shard is never positive before the
 * commit point: increases there only return what the same op took.
 */
void fs_intents_undo(flash_t *h, struct fs_journal *j)
{
	uint32_t n = fs_journal_nint(j);
	uint32_t slot = (uint32_t)(j - h->jr);

	for (uint32_t i = 0; i < n; i++) {
		int64_t net = 0;
		uint32_t t = j->in[i].shard;

		if (j->in[i].done != 1 || j->in[i].post || t == FS_TL_TARGET ||
		    t == FS_KT_TARGET_USER || t == FS_KT_TARGET_REQ)
			continue;   /* fill counts are settled by fs_intents_settle, fs_kt_recover */
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
			journal_change(h, j, slot, t, -net);
		}
seen:		;
	}
}

/*
 * Bring the net of the journal's applied intents on @p target to @p want
 * (the effect the operation's final state calls for; token.c settles the
 * live-token count this way): idempotent, so a recoverer that dies here is
 * finished by the next.
 */
void fs_intents_settle(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                       int64_t want)
{
	uint32_t n = fs_journal_nint(j);
	int64_t net = 0;

	for (uint32_t i = 0; i < n; i++)
		if (j->in[i].shard == target && j->in[i].done == 1)
			net += j->in[i].delta;
	if (net != want)
		journal_change(h, j, slot, target, want - net);
}
