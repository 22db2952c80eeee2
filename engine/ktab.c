/*
 * ktab.c -- lock-free keyed tables in the segment: per-user limit slots and
 * request ids.
 *
 * Open addressing over fixed-size entries {state, key}, probed by probe.h
 * (bounded chains).  Keys are permanent: once an entry leaves EMPTY it holds
 * its key for the life of its bank (below) and only its state moves (FREE <-> PEND(tag) -> DONE(value)
 * ...), so a key has one home for the life of the segment, two inserters of
 * one key always meet at the same entry, and EMPTY ends every chain.
 *
 * Insert of key K by slot X (fs_kt_claim):
 *   1. journal: K, the table, the intent index (kt_first)
 *   2. count +1, journaled as an intent (tagged CAS on hdr->*_fill; refuses
 *      past the table's capacity) -- only when an EMPTY entry is reached
 *   3. journal the entry's index; CAS EMPTY -> BUSY(X, fingerprint(K))
 *   4. journal kt_won; write K; store-release PEND(tag)
 *   5. a reservation not used (the CAS lost and K was found, or the chain
 *      ended) is given back, again as an intent
 * Crash points: "ktab_count" 1/2 around each count CAS, "ktab_insert" 1
 * after the CAS of step 3, 2 after step 4.
 *
 * Recovery of a dead X (fs_kt_recover) never moves an entry back to EMPTY
 * (a probe that passed it may have placed the same key further on): a BUSY
 * entry of X gets K from X's journal and becomes FREE -- a key nobody
 * holds, like any rolled-back insert.  The count is then settled to what
 * happened: +1 if X's CAS won an entry, else 0; the intents say exactly what
 * was applied (stock.c's rule).  So the fill count equals the keys held
 * after a kill at any store, and exactly capacity keys fit.
 *
 * Generation banks (gen.c).  A windowed segment's table is FS_GEN_BANKS
 * banks, each a whole table of its own (the mask is one bank's, journal
 * indices are bank * (mask + 1) + i, each bank has its own fill count).
 * Everything above holds inside a bank; reclamation never deletes a key
 * inside one: a whole bank goes EMPTY, after a grace period (grace.c) in
 * which every operation that could read it ended.  Why not tombstones: two
 * inserters of one fresh key meet at the first EMPTY entry of its chain; a
 * tombstone that appears between their probes lets one place the key before
 * it and the other at it -- the key twice -- and tombstones never give a
 * chain its EMPTY end back, so absent-key lookups grow to FS_PROBE_MAX reads.
 * A one-bank segment's claim is compiled with the bank a constant
 * (fs_kt_claim0): the order path pays nothing for the banks (callgrind,
 * flashstock-order-cost: 2409 -> 2422 instructions per order, the chain's one
 * branch on the segment's kind included).
 *
 * Waits (progress): an insert meeting BUSY with another key's fingerprint
 * passes it; one meeting its own fingerprint (the same key, or a 2^-48
 * collision) waits for that inserter, which is a few stores from publishing,
 * and recovers it if it died.  So a stalled process delays only an insert of
 * the key it is inserting, never another key's probe.
 */
#include <sched.h>

#include "fs.h"
#include "journal.h"
#include "probe.h"

/*
 * Journal intents an insert may need: its reservation, the give-back, and a
 * recoverer's settling change (one more in case a recoverer dies in it).  An
 * insert starts only with that many free, so no change it makes to the
 * count ever goes unjournaled.
 */
#define KT_INTENTS 4u

#ifdef FLASH_CRASHPOINTS
uint64_t fs_probe_reads;   /* entries handed out by fs_probe_next (probe.h) */
#endif

/* One bank of a keyed table, as its operations need it. */
struct kt {
	struct fs_kent *e;         /* the bank's first entry */
	uint32_t off;              /* its index in the table: journal indices are off + i */
	uint32_t mask;
	uint32_t cap;              /* keys it may hold (max_users / max_requests) */
	uint32_t target;           /* intent target of its fill count */
	struct fs_counter *fill;
	uint32_t *jidx;            /* the journal's index field for this table */
};

/* The fill count of bank @p bank of table @p tab (bank 0: the header's own). */
struct fs_counter *fs_kt_fill(flash_t *h, uint32_t tab, uint32_t bank)
{
	if (bank == 0)
		return tab == FS_KT_REQ ? &h->hdr->req_fill : &h->hdr->users_fill;
	return &h->hdr->gen[tab].fill[bank - 1];
}

/* Bank @p bank >= 1 of a windowed table (out of the order path's line). */
static __attribute__((noinline)) int kt_get_bank(flash_t *h, struct fs_journal *j, uint32_t tab,
                                                 uint32_t bank, struct kt *t)
{
	if (bank >= h->gen_banks || tab > FS_KT_USER)
		return 0;
	t->mask = tab == FS_KT_REQ ? h->req_mask : h->user_mask;
	t->off = bank * (t->mask + 1);
	t->e = (tab == FS_KT_REQ ? h->req : h->user) + t->off;
	t->cap = tab == FS_KT_REQ ? h->hdr->fx.opts.max_requests : h->hdr->fx.opts.max_users;
	t->target = FS_GEN_TARGET(tab, bank);
	t->fill = fs_kt_fill(h, tab, bank);
	t->jidx = tab == FS_KT_REQ ? &j->req_idx : &j->user_idx;
	return 1;
}

/*
 * Table @p tab's bank @p bank.  Bank 0 (every one-bank segment's only one)
 * costs what the one table did: inlined, no bank arithmetic.
 */
static inline __attribute__((always_inline)) int kt_get(flash_t *h, struct fs_journal *j, uint32_t tab,
                                                        uint32_t bank, struct kt *t)
{
	if (__builtin_expect(bank != 0, 0))
		return kt_get_bank(h, j, tab, bank, t);
	t->off = 0;
	if (tab == FS_KT_REQ) {
		t->e = h->req;
		t->mask = h->req_mask;
		t->cap = h->hdr->fx.opts.max_requests;
		t->target = FS_KT_TARGET_REQ;
		t->fill = &h->hdr->req_fill;
		t->jidx = &j->req_idx;
		return 1;
	}
	if (tab == FS_KT_USER) {
		t->e = h->user;
		t->mask = h->user_mask;
		t->cap = h->hdr->fx.opts.max_users;
		t->target = FS_KT_TARGET_USER;
		t->fill = &h->hdr->users_fill;
		t->jidx = &j->user_idx;
		return 1;
	}
	return 0;
}

static int key_eq(const struct fs_kent *e, const uint64_t key[3])
{
	return e->k[0] == key[0] && e->k[1] == key[1] && e->k[2] == key[2];
}

/*
 * Change table @p t's fill count by @p delta for slot @p slot (its owner, or
 * a recoverer finishing it), as an intent of journal @p j: the intent is
 * written before the 16-byte CAS that tags the count with (slot, seq), and
 * marked done after it, so recovery resolves it by stock.c's rule.  With
 * @p may_fail an increase past the capacity changes nothing and returns
 * FLASH_EFULL.  Returns FLASH_OK, FLASH_EFULL, or FLASH_EBUSY (journal full).
 */
static int kt_count(flash_t *h, struct fs_journal *j, uint32_t slot, const struct kt *t,
                    int64_t delta, int may_fail)
{
	int idx = fs_intent_add(j, t->target, delta, 0);
	struct fs_counter cur, set;
	struct fs_intent *in;

	if (idx < 0)
		return FLASH_EBUSY;
	in = &j->in[idx];
	fs_counter_load(t->fill, &cur);
	for (;;) {
		if (may_fail && delta > 0 && cur.value + (uint64_t)delta > t->cap) {
			in->done = 2;
			return FLASH_EFULL;
		}
		in->done = 0;
		in->seq = ck_pr_load_64(&h->proc[slot].seq) + 1;
		ck_pr_store_64(&h->proc[slot].seq, in->seq);
		fs_help_mark(h, cur.tag);
		set.value = cur.value + (uint64_t)delta;
		set.tag = FS_TAG(slot, in->seq);
		FS_CRASH("ktab_count", 1);
		/* lock cmpxchg16b is a full barrier: the intent is visible first */
		if (fs_cas2(t->fill, &cur, &set)) {
			FS_CRASH("ktab_count", 2);
			in->done = 1;
			return FLASH_OK;
		}
	}
}

/* Does the journal of @p slot name a keyed-table insert in flight? */
static int kt_in_flight(flash_t *h, uint32_t slot)
{
	const struct fs_journal *j = &h->jr[slot];

	return ck_pr_load_32(&j->phase) != FS_PH_IDLE && ck_pr_load_32(&j->kt_tab) != 0;
}

/*
 * Wait while *@p word reads @p seen, a BUSY entry of the same fingerprint:
 * its inserter is a few stores from publishing the key.  An inserter found
 * dead is recovered (its key published as FREE).  A BUSY word no journal
 * names can never move: FLASH_ECORRUPT instead of waiting forever.
 * Blocking while the inserter of this very key is alive and stalled.
 */
static int kt_wait(flash_t *h, const uint64_t *word, uint64_t seen)
{
	uint32_t slot = FS_TAG_SLOT(FS_VAL(seen));

	if (fs_check_slot(h, slot) != FLASH_OK || (int)slot == h->slot)
		return FLASH_ECORRUPT;   /* our own insert is never BUSY under us */
	for (unsigned spin = 0; ck_pr_load_64(word) == seen; spin++) {
		if (spin < 64) {
			ck_pr_stall();
			continue;
		}
		if ((spin & 63) == 0 &&
		    (!kt_in_flight(h, slot) ||
		     !fs_proc_alive(h, slot, ck_pr_load_64(&h->proc[slot].state)))) {
			flash_recover(h, NULL);
			if (ck_pr_load_64(word) == seen && !kt_in_flight(h, slot))
				return FLASH_ECORRUPT;
		}
		sched_yield();
	}
	return FLASH_OK;
}

/*
 * Find the entry of @p key in table @p tab (FS_KT_REQ, FS_KT_USER), inserting
 * it -- held PEND(op tag) by this handle's operation -- if absent.  The
 * entry's index goes to the journal's index field of the table before any
 * CAS on it.  Returns FS_KT_INSERTED (the entry is PEND(tag)), FS_KT_FOUND
 * (*state_out its keyed state as read), FLASH_EFULL (capacity keys held, or
 * no free entry within the probe bound), FLASH_ECORRUPT (a BUSY entry nobody
 * owns), FLASH_EBUSY (journal full).  On every return the count is settled.
 * At most one insert per table per operation (callers stop at INSERTED).
 */
static inline __attribute__((always_inline)) int kt_claim(flash_t *h, uint32_t tab, uint32_t bank,
                                                         const uint64_t key[3], uint64_t *state_out)
{
	struct fs_journal *j = h->j;
	uint32_t slot = (uint32_t)h->slot, i;
	uint64_t hash = fs_hash(key[0], key[1], key[2]);
	uint64_t busy = FS_KT_BUSY(slot, hash);
	int reserved = 0, rc = FLASH_EFULL;
	struct fs_probe p;
	struct kt t;

	if (!kt_get(h, j, tab, bank, &t))
		return FLASH_EINVAL;
	/* the journal first: kt_tab last, so a recoverer sees a whole record */
	j->kt_won = 0;
	j->kt_key[0] = key[0];
	j->kt_key[1] = key[1];
	j->kt_key[2] = key[2];
	j->kt_first = j->n_int;
	ck_pr_fence_store();
	ck_pr_store_32(&j->kt_tab, (tab + 1) | bank << 4);

	fs_probe_init(&p, hash, t.mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		struct fs_kent *e = &t.e[i];
		uint64_t s = ck_pr_load_64(&e->state);

		if (FS_KIND(s) == FS_K_EMPTY) {
			if (!reserved) {
				if (j->n_int + KT_INTENTS > FS_MAX_INTENTS) {
					rc = FLASH_EBUSY;   /* journal full: nothing changed */
					goto out;
				}
				if ((rc = kt_count(h, j, slot, &t, 1, 1)) != FLASH_OK)
					goto out;
				reserved = 1;
				rc = FLASH_EFULL;
			}
			ck_pr_store_32(t.jidx, t.off + i);
			/* lock cmpxchg is a full barrier: the journaled key, index and
			 * reservation are visible before the entry is ours */
			if (!ck_pr_cas_64(&e->state, s, busy)) {
				fs_probe_again(&p);     /* someone else took it: look again */
				continue;
			}
			ck_pr_store_32(&j->kt_won, 1);
			FS_CRASH("ktab_insert", 1);
			e->k[0] = key[0];
			e->k[1] = key[1];
			e->k[2] = key[2];
			ck_pr_fence_store();   /* the key before the state that publishes it */
			ck_pr_store_64(&e->state, FS_MK(FS_K_PEND, j->op_tag));
			FS_CRASH("ktab_insert", 2);
			ck_pr_store_32(&j->kt_tab, 0);
			return FS_KT_INSERTED;
		}
		if (FS_KIND(s) == FS_K_BUSY) {
			if (!fs_kt_busy_same(s, hash))
				continue;              /* another key being inserted: pass it */
			if ((rc = kt_wait(h, &e->state, s)) != FLASH_OK)
				goto out;
			rc = FLASH_EFULL;
			fs_probe_again(&p);
			continue;
		}
		ck_pr_fence_load();            /* state before key: the key is published */
		if (key_eq(e, key)) {
			ck_pr_store_32(t.jidx, t.off + i);
			*state_out = s;
			rc = FS_KT_FOUND;
			goto out;
		}
	}
out:
	if (reserved)
		kt_count(h, j, slot, &t, -1, 0);   /* the reservation was not used */
	ck_pr_store_32(&j->kt_tab, 0);
	return rc;
}

/* The claim in bank 0 (a one-bank segment's only bank): compiled with the
 * bank a constant, so it costs what the one table's claim did. */
int fs_kt_claim0(flash_t *h, uint32_t tab, const uint64_t key[3], uint64_t *state_out)
{
	return kt_claim(h, tab, 0, key, state_out);
}

int fs_kt_claim_bank(flash_t *h, uint32_t tab, uint32_t bank, const uint64_t key[3], uint64_t *state_out)
{
	return kt_claim(h, tab, bank, key, state_out);
}

/*
 * Look @p key up in bank @p bank of table @p tab without inserting it (the
 * re-check of the previous generation, gen.c).  A BUSY entry of the same
 * fingerprint is waited for (its inserter publishes it in a few stores, or
 * is recovered), so an insert that began before the look is seen.  Returns
 * FS_KT_FOUND (*idx its table index, *state_out its state), FLASH_OK (absent),
 * FLASH_ECORRUPT (a BUSY entry nobody owns), FLASH_EINVAL (no such bank).
 */
int fs_kt_find(flash_t *h, uint32_t tab, uint32_t bank, const uint64_t key[3], uint32_t *idx,
               uint64_t *state_out)
{
	uint64_t hash = fs_hash(key[0], key[1], key[2]);
	struct fs_probe p;
	struct kt t;
	uint32_t i;
	int rc;

	if (!kt_get(h, h->j, tab, bank, &t))
		return FLASH_EINVAL;
	fs_probe_init(&p, hash, t.mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		struct fs_kent *e = &t.e[i];
		uint64_t s = ck_pr_load_64(&e->state);

		if (FS_KIND(s) == FS_K_EMPTY)
			return FLASH_OK;
		if (FS_KIND(s) == FS_K_BUSY) {
			if (!fs_kt_busy_same(s, hash))
				continue;
			if ((rc = kt_wait(h, &e->state, s)) != FLASH_OK)
				return rc;
			fs_probe_again(&p);
			continue;
		}
		ck_pr_fence_load();            /* state before key: the key is published */
		if (key_eq(e, key)) {
			*idx = t.off + i;
			*state_out = s;
			return FS_KT_FOUND;
		}
	}
	return FLASH_OK;
}

/*
 * Finish the keyed-table insert a dead operation of @p slot had in flight
 * (journal @p j), if any; idempotent, so a recoverer that dies here is
 * finished by the next.  A BUSY entry of the slot at the journaled index is
 * the insert's own (a slot inserts one key at a time): it gets the key from
 * the journal and becomes FREE.  Then the count is settled to +1 if the
 * insert won an entry, else 0.  The owner's own failure path finds no insert
 * in flight: fs_kt_claim settles before it returns.
 */
void fs_kt_recover(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t tab = ck_pr_load_32(&j->kt_tab), i, n, first;
	uint64_t key[3], busy;
	int64_t net = 0, want;
	struct kt t;

	if (tab == 0)
		return;
	if (!kt_get(h, j, (tab & 15) - 1, tab >> 4, &t)) {
		ck_pr_store_32(&j->kt_tab, 0);   /* not a table: nothing was inserted */
		return;
	}
	key[0] = j->kt_key[0];
	key[1] = j->kt_key[1];
	key[2] = j->kt_key[2];
	busy = FS_KT_BUSY(slot, fs_hash(key[0], key[1], key[2]));
	i = ck_pr_load_32(t.jidx) - t.off;   /* loaded once, checked, then used */
	if (i <= t.mask && ck_pr_load_64(&t.e[i].state) == busy) {
		/* won before the key was published: say so first, so the next
		 * recoverer counts it even once the entry is FREE */
		ck_pr_store_32(&j->kt_won, 1);
		t.e[i].k[0] = key[0];
		t.e[i].k[1] = key[1];
		t.e[i].k[2] = key[2];
		ck_pr_fence_store();
		ck_pr_cas_64(&t.e[i].state, busy, FS_MK(FS_K_FREE, 0));
	}
	want = ck_pr_load_32(&j->kt_won) ? 1 : 0;
	n = fs_journal_nint(j);
	first = j->kt_first < n ? j->kt_first : n;
	for (uint32_t k = first; k < n; k++) {
		struct fs_intent *in = &j->in[k];

		if (in->shard != t.target)
			continue;
		if (in->done == 0)   /* only the last change can be in doubt */
			in->done = fs_intent_applied(h, slot, in) ? 1 : 2;
		if (in->done == 1)
			net += in->delta;
	}
	if (net != want)
		kt_count(h, j, slot, &t, want - net, 0);
	ck_pr_store_32(&j->kt_tab, 0);
}
