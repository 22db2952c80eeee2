/*
 * gen.c -- generations of the keyed tables: request-id windows and the
 * reclamation of limit entries (flashstock.h section 11, DESIGN.md section
 * 12 "Fixed memory for months").
 *
 * A windowed table is FS_GEN_BANKS banks, each a whole open-addressing
 * table of its own (one probe mask, its own fill count); generation n lives
 * in bank n % FS_GEN_BANKS (hdr->gen[tab], struct fs_gentab).  Inside a
 * bank keys are permanent, as ktab.c says; a bank is emptied only as a
 * whole, two generations back, after a grace period (grace.c): then no
 * operation can still read it, and it comes back with every entry EMPTY.
 * So no probe chain is ever broken and no tombstone is ever reused.
 *
 * The two steps, each a journaled operation (FS_OP_RECLAIM) whose record,
 * FLASH_REC_GEN, replay re-applies (fs_gen_replay):
 *
 *   advance (flash_gen_advance): generation g has lasted its length and
 *     bank (g + 1) % FS_GEN_BANKS is CLEAR.  Nothing changes before the
 *     commit point; after it (fs_gen_finish, also recovery's roll forward):
 *     bank word CLEAR -> USED(g + 1), cur_start_ns, then cur g -> g + 1 by
 *     CAS.  Every store is idempotent.  A "source" record (ring.c): every
 *     order that saw the new generation drains after it.
 *
 *   clear (flash_gen_clear): bank b = (g + 1) % FS_GEN_BANKS holds g - 2 and
 *     no activity pins it.  Under the admin mutex (activity adds pin banks
 *     under it) the bank word goes USED(g-2) -> CLEARING(slot, g-2), the op
 *     open; then fs_grace; then the fill n is read and two post intents
 *     journaled (fill(b) -= n, reclaimed += n: exactly once, stock.c's
 *     rule), the record, the commit point, and fs_gen_finish: every entry
 *     not already zero gets state 0 and key 0, the intents, bank word
 *     CLEARING -> CLEAR.  A kill before the commit is rolled back
 *     (fs_gen_rollback: CLEARING -> USED); after it, recovery finishes.
 *     Crash points "gen_advance" 1-3, "gen_clear" 1-5.
 *
 * Readers.  An order reads cur after its phase store (an xchg: journal.h),
 * so a generation a reclaimer has moved past is either read by an
 * operation the reclaimer's grace waits for, or not read at all.  The
 * claims that read g and g - 1 and the re-check that keeps one key out of
 * two banks are in order.c (req_claim_gen, limit_claim_gen).
 *
 * Per-activity / per-sku limit entries live in the bank of the generation
 * the activity was added in (fs_act.ugen, fs_gen_pin), found there only;
 * the bank is pinned -- never cleared -- until fs_gen_unpin (the archive);
 * a FREE catalog entry pins nothing (gen_pinned_by).
 */
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include "fs.h"
#include "journal.h"

#define GEN_GRACE_MS 1000u
#define GEN_FUTURE_S 60u    /* a request id may be dated this far ahead */

uint32_t fs_gen_bank_of(const flash_t *h, uint64_t gen)
{
	return (uint32_t)(gen % h->gen_banks);
}

/* The length of table @p tab's generations, and the least time one lasts:
 * a request id's entry is kept at least req_window_s after its id's time,
 * which may be up to GEN_FUTURE_S ahead of the insert. */
static uint32_t gen_len_s(const flash_t *h, uint32_t tab)
{
	return tab == FS_KT_REQ ? h->hdr->fx.req_window_s : h->hdr->fx.user_gen_s;
}

static int64_t gen_min_ns(const flash_t *h, uint32_t tab)
{
	uint64_t s = gen_len_s(h, tab);

	if (tab == FS_KT_REQ)
		s += s < GEN_FUTURE_S ? s : GEN_FUTURE_S;
	return (int64_t)s * 1000000000;
}

/* ------------------------------------------------------------ request ids */

/*
 * ms << 16 | 16 random bits, strictly increasing in each thread: an id not
 * above the thread's last one becomes last + 1 (the next of the same
 * millisecond, or -- 65536 ids into one millisecond -- the next
 * millisecond's first).  So one thread never mints an id twice (16 random
 * bits alone repeat after about 300 ids of one millisecond, and a repeated
 * id answers a new order FLASH_EDUPLICATE with another request's outcome);
 * ids of different threads and processes still differ by their random bits,
 * also a forked child's: fork bumps gen_fork_epoch in the child
 * (pthread_atfork), and a thread that sees it moved drops its buffered
 * bits and its last id, which the child inherited from the parent.
 */
static unsigned gen_fork_epoch;   /* only the child's forking thread writes it, before any other thread exists */
static pthread_once_t gen_fork_once = PTHREAD_ONCE_INIT;

static void gen_fork_child(void)
{
	gen_fork_epoch++;
}

static void gen_fork_init(void)
{
	(void)pthread_atfork(NULL, NULL, gen_fork_child);
}

uint64_t flash_request_id_new(void)
{
	static __thread uint16_t buf[64];
	static __thread unsigned left;
	static __thread uint64_t seq;
	static __thread uint64_t last;
	static __thread unsigned epoch;
	struct timespec ts;
	uint64_t ms, id;
	uint16_t r;

	(void)pthread_once(&gen_fork_once, gen_fork_init);
	if (epoch != gen_fork_epoch) {
		epoch = gen_fork_epoch;
		left = 0;
		last = 0;
	}

	if (left == 0) {
		if (getrandom(buf, sizeof(buf), 0) == (ssize_t)sizeof(buf)) {
			left = 64;
		} else {   /* no entropy now: a mix of time and a counter */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			buf[0] = (uint16_t)fs_mix64((uint64_t)ts.tv_nsec ^ (++seq << 32) ^ (uint64_t)getpid());
			left = 1;
		}
	}
	r = buf[--left];
	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	id = ms << 16 | r;
	if (id <= last)
		id = last + 1;
	last = id;
	return id;
}

/*
 * A windowed segment's check of a request id's time (order_check):
 * FLASH_EREQ_EXPIRED if older than req_window_s, FLASH_EINVAL if more than
 * GEN_FUTURE_S ahead.  Read-only.
 */
int fs_req_window_check(flash_t *h, uint64_t request_id)
{
	uint64_t id_ms = request_id >> 16;
	uint64_t now_ms = (uint64_t)fs_now_ns() / 1000000u;

	if (id_ms > now_ms + GEN_FUTURE_S * 1000u)
		return FLASH_EINVAL;
	if (id_ms + (uint64_t)h->hdr->fx.req_window_s * 1000u < now_ms)
		return FLASH_EREQ_EXPIRED;
	return FLASH_OK;
}

/* ------------------------------------------------------------ pins */

/*
 * Under the admin mutex (catalog add): the activity's limit entries go into
 * the user table's current generation, whose bank stays until the activity
 * is archived.  The clear checks pins under the same mutex, so a bank being
 * cleared is never pinned anew.
 */
void fs_gen_pin(flash_t *h, struct fs_act *act)
{
	ck_pr_store_32(&act->ugen, (uint32_t)fs_gen_cur(h, FS_KT_USER));
	ck_pr_store_32(&act->unpinned, 0);
}

/* The archive: activity @p act_idx no longer keeps its bank.  One store,
 * idempotent (a killed archive that runs again stores it again). */
void fs_gen_unpin(flash_t *h, uint32_t act_idx)
{
	if (act_idx < h->act_cap)
		ck_pr_store_32(&h->act[act_idx].unpinned, 1);
}

/*
 * The id of an activity that pins bank @p b of the user table, or 0.
 *
 * A FREE entry pins nothing.  An add pins before its commit point
 * (fs_activity_add_locked), so one killed there and forgotten by
 * fs_catalog_repair leaves a FREE entry it had reused with the pin set and
 * the id of an activity that never existed; the archive unpins before it
 * frees (fs_archive_forward), so no FREE entry of an archived activity
 * holds one.  Reading the state here rather than undoing the pin in the
 * repair adds no store to recovery, and frees a bank an existing segment
 * already holds this way.  The clear asks under the admin mutex, which an
 * add holds from its pin to its catalog_forward (FREE -> LIVE); a dead
 * add's repair, which makes the entry LIVE or forgets it, runs when the
 * mutex is next taken: the clear never meets a committed add still FREE.
 */
static uint32_t gen_pinned_by(flash_t *h, uint32_t tab, uint32_t b)
{
	uint32_t n = ck_pr_load_32(&h->hdr->n_act);

	if (tab != FS_KT_USER || h->gen_banks == 1)
		return 0;
	if (n > h->act_cap)
		n = h->act_cap;
	for (uint32_t i = 0; i < n; i++) {
		const struct fs_act *a = &h->act[i];

		if (FS_CAT_KIND(ck_pr_load_32((uint32_t *)&a->state)) == FS_CAT_FREE)
			continue;
		/* a per-day activity keeps nothing in its own bank: no pin */
		if (a->t[0].scope != FLASH_SCOPE_DAY && !ck_pr_load_32((uint32_t *)&a->unpinned) &&
		    ck_pr_load_32((uint32_t *)&a->ugen) % h->gen_banks == b)
			return a->t[0].id;
	}
	return 0;
}

/* ------------------------------------------------------------ finish and undo */

/* Empty every entry of bank @p b of table @p tab (skips those already zero:
 * a re-run after a kill stores only what is left). */
static void gen_empty_bank(flash_t *h, uint32_t tab, uint32_t b)
{
	uint32_t n = (tab == FS_KT_REQ ? h->req_mask : h->user_mask) + 1;
	struct fs_kent *e = (tab == FS_KT_REQ ? h->req : h->user) + (uint64_t)b * n;

	for (uint32_t i = 0; i < n; i++) {
		if (e[i].state == 0 && e[i].k[0] == 0 && e[i].k[1] == 0 && e[i].k[2] == 0)
			continue;
		ck_pr_store_64(&e[i].state, 0);
		ck_pr_store_64(&e[i].k[0], 0);
		ck_pr_store_64(&e[i].k[1], 0);
		ck_pr_store_64(&e[i].k[2], 0);
	}
}

/*
 * Roll a published FS_OP_RECLAIM forward (the owner after its commit point,
 * or recovery).  Every step is idempotent; journal fields loaded once and
 * checked.
 */
void fs_gen_finish(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t tab = ck_pr_load_32(&j->gc_tab), b = ck_pr_load_32(&j->gc_bank);
	uint32_t kind = ck_pr_load_32(&j->gc_kind);
	uint64_t gen = ck_pr_load_64(&j->gc_gen);
	struct fs_gentab *g;
	uint64_t w;

	if (tab > FS_KT_USER || b >= h->gen_banks)
		return;
	g = &h->hdr->gen[tab];
	if (kind == 1) {
		w = ck_pr_load_64(&g->bank[b]);
		if (FS_BANK_KIND(w) == FS_BANK_CLEAR)
			ck_pr_cas_64(&g->bank[b], w, FS_BANK(FS_BANK_USED, 0, gen));
		FS_CRASH("gen_advance", 4);
		if (ck_pr_load_64(&g->cur) + 1 == gen) {
			ck_pr_store_64((uint64_t *)&g->cur_start_ns, (uint64_t)j->gc_start_ns);
			ck_pr_fence_store();   /* the start before the generation it dates */
			ck_pr_cas_64(&g->cur, gen - 1, gen);
		}
		return;
	}
	if (kind == 2) {
		gen_empty_bank(h, tab, b);
		FS_CRASH("gen_clear", 6);
		fs_intents_run_post(h, j, slot);   /* fill(b) -= n, reclaimed += n */
		FS_CRASH("gen_clear", 7);
		ck_pr_cas_64(&g->bank[b], FS_BANK(FS_BANK_CLEARING, slot, gen), FS_BANK(FS_BANK_CLEAR, 0, gen));
	}
}

/* Undo an FS_OP_RECLAIM that did not reach its commit point: only a clear
 * changed something before it (its CLEARING mark). */
void fs_gen_rollback(flash_t *h, struct fs_journal *j, uint32_t slot)
{
	uint32_t tab = ck_pr_load_32(&j->gc_tab), b = ck_pr_load_32(&j->gc_bank);
	uint64_t gen = ck_pr_load_64(&j->gc_gen);

	if (ck_pr_load_32(&j->gc_kind) != 2 || tab > FS_KT_USER || b >= h->gen_banks)
		return;
	ck_pr_cas_64(&h->hdr->gen[tab].bank[b], FS_BANK(FS_BANK_CLEARING, slot, gen),
	             FS_BANK(FS_BANK_USED, 0, gen));
}

/* ------------------------------------------------------------ the steps */

static void gen_info_fill(flash_t *h, uint32_t tab, struct flash_gen_info *out);

/* Why can the table not move into bank @p nb now?  FLASH_GEN_WAIT_*. */
static uint32_t gen_why(flash_t *h, uint32_t tab, uint32_t nb, uint32_t *act)
{
	uint64_t w = ck_pr_load_64(&h->hdr->gen[tab].bank[nb]);

	if (FS_BANK_KIND(w) == FS_BANK_CLEAR)
		return FLASH_GEN_WAIT_NONE;
	if ((*act = gen_pinned_by(h, tab, nb)) != 0)
		return FLASH_GEN_WAIT_PINNED;
	return FLASH_GEN_WAIT_NOT_CLEARED;
}

/* Advance, under the admin mutex.  @p force: replay's generation (0: time
 * decides).  *moved says whether it did. */
static int gen_advance_locked(flash_t *h, uint32_t tab, int64_t now_ns, uint64_t force,
                              uint32_t *wait, uint32_t *wact, uint32_t *moved)
{
	struct fs_gentab *g = &h->hdr->gen[tab];
	uint64_t cur = ck_pr_load_64(&g->cur);
	uint32_t nb = fs_gen_bank_of(h, cur + 1);
	struct fs_journal *j = h->j;

	*moved = 0;
	*wait = FLASH_GEN_WAIT_NONE;
	if (force != 0) {
		if (force <= cur)
			return FLASH_EEXIST;
		if (force != cur + 1)
			return FLASH_EINVAL;
	} else if (now_ns < (int64_t)ck_pr_load_64((uint64_t *)&g->cur_start_ns) + gen_min_ns(h, tab)) {
		*wait = FLASH_GEN_WAIT_NOT_DUE;
		return FLASH_OK;
	}
	if ((*wait = gen_why(h, tab, nb, wact)) != FLASH_GEN_WAIT_NONE)
		return force ? FLASH_EINVAL : FLASH_OK;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	fs_op_begin(h, FS_OP_RECLAIM);
	j->gc_tab = tab;
	j->gc_kind = 1;
	j->gc_bank = nb;
	j->gc_gen = cur + 1;
	j->gc_start_ns = now_ns;
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_GEN;
	j->rec.activity_id = tab;
	j->rec.qty = 1;
	j->rec.sku_id = nb;
	j->rec.order_no = cur + 1;
	j->rec.value = now_ns;
	j->rec.ts_ns = h->replay ? h->replay->ts_ns : fs_now_ns();
	FS_CRASH("gen_advance", 1);
	fs_commit(h);                             /* COMMIT */
	FS_CRASH("gen_advance", 2);
	fs_gen_finish(h, j, (uint32_t)h->slot);
	FS_CRASH("gen_advance", 3);
	fs_op_end(j);
	*moved = 1;
	return FLASH_OK;
}

static int gen_args(flash_t *h, uint32_t table, int write)
{
	int rc;

	if ((rc = fs_enter(h, write)) != FLASH_OK)
		return rc;
	if (table > FLASH_TABLE_USERS)
		return FLASH_EINVAL;
	if (write && h->gen_banks == 1)
		return FLASH_EINVAL;
	if (write)
		fs_obs_flush(h);
	return FLASH_OK;
}

int flash_gen_advance(flash_t *h, uint32_t table, int64_t now_ns, struct flash_gen_info *out)
{
	uint32_t wait = 0, wact = 0, moved = 0;
	int rc;

	if ((rc = gen_args(h, table, 1)) != FLASH_OK)
		return rc;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	rc = gen_advance_locked(h, table, now_ns, 0, &wait, &wact, &moved);
	fs_admin_unlock(h);
	if (rc == FLASH_OK && out != NULL) {
		gen_info_fill(h, table, out);
		out->advanced = moved;
		out->wait = wait;
		out->wait_activity = wact;
	}
	return rc;
}

/*
 * The clear (see the head comment).  @p forced: replay, which clears
 * generation @p want (else the one two back, if due).  *cleared: keys removed.
 */
static int gen_clear_run(flash_t *h, uint32_t tab, int forced, uint64_t want, uint64_t *cleared)
{
	struct fs_gentab *g = &h->hdr->gen[tab];
	struct fs_journal *j = h->j;
	uint32_t slot = (uint32_t)h->slot, b;
	uint64_t cur, w, old, n;
	int rc, tries = 0;

	*cleared = 0;
again:
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	cur = ck_pr_load_64(&g->cur);
	if (cur < 2) {
		fs_admin_unlock(h);
		return forced ? FLASH_EINVAL : FLASH_OK;
	}
	old = cur - 2;
	b = fs_gen_bank_of(h, old);
	w = ck_pr_load_64(&g->bank[b]);
	if (forced && want != old) {
		fs_admin_unlock(h);
		return FS_BANK_KIND(w) == FS_BANK_CLEAR && FS_BANK_GEN(w) == want ? FLASH_EEXIST : FLASH_EINVAL;
	}
	if (FS_BANK_KIND(w) == FS_BANK_CLEARING) {
		/* another clearer: live (busy), or dead and not yet recovered */
		fs_admin_unlock(h);
		if (FS_BANK_SLOT(w) != slot && tries++ == 0) {
			flash_recover(h, NULL);
			goto again;
		}
		return FLASH_EBUSY;
	}
	if (FS_BANK_KIND(w) != FS_BANK_USED || FS_BANK_GEN(w) != old ||
	    gen_pinned_by(h, tab, b) != 0) {
		fs_admin_unlock(h);   /* clear already, or kept for an activity */
		return forced && FS_BANK_KIND(w) == FS_BANK_CLEAR ? FLASH_EEXIST : FLASH_OK;
	}
	if (!fs_ring_space(h)) {
		fs_admin_unlock(h);
		return FLASH_EBUSY;
	}
	fs_op_begin(h, FS_OP_RECLAIM);
	j->gc_tab = tab;
	j->gc_kind = 2;
	j->gc_bank = b;
	j->gc_gen = old;
	/* the CAS is a full barrier: the journal is visible before the mark */
	ck_pr_cas_64(&g->bank[b], w, FS_BANK(FS_BANK_CLEARING, slot, old));
	fs_admin_unlock(h);
	FS_CRASH("gen_clear", 1);
	if (fs_grace(h, GEN_GRACE_MS) != FLASH_OK) {
		fs_gen_rollback(h, j, slot);
		fs_op_end(j);
		return FLASH_EBUSY;
	}
	FS_CRASH("gen_clear", 2);
	/* nobody changes the bank's count any more: every insert into it has
	 * ended (or was recovered, its count settled) within the grace */
	n = ck_pr_load_64(&fs_kt_fill(h, tab, b)->value);
	fs_intent_add(j, b ? FS_GEN_TARGET(tab, b) : (tab == FS_KT_REQ ? FS_KT_TARGET_REQ : FS_KT_TARGET_USER),
	              -(int64_t)n, 1);
	fs_intent_add(j, FS_GEN_TARGET_RECL(tab), (int64_t)n, 1);
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_GEN;
	j->rec.activity_id = tab;
	j->rec.qty = 2;
	j->rec.sku_id = b;
	j->rec.order_no = old;
	j->rec.value = (int64_t)n;
	j->rec.ts_ns = h->replay ? h->replay->ts_ns : fs_now_ns();
	FS_CRASH("gen_clear", 3);
	fs_commit(h);                             /* COMMIT */
	FS_CRASH("gen_clear", 4);
	fs_gen_finish(h, j, slot);
	FS_CRASH("gen_clear", 5);
	fs_op_end(j);
	*cleared = n;
	return FLASH_OK;
}

int flash_gen_clear(flash_t *h, uint32_t table, uint64_t *cleared)
{
	uint64_t n = 0;
	int rc;

	if ((rc = gen_args(h, table, 1)) != FLASH_OK)
		return rc;
	rc = gen_clear_run(h, table, 0, 0, &n);
	if (cleared)
		*cleared = n;
	return rc;
}

/* FLASH_REC_GEN in replay (replay.c): the same step, at the record's
 * generation; FLASH_EEXIST if the segment is past it already. */
int fs_gen_replay(flash_t *h, const struct flash_record *rec)
{
	uint32_t tab = rec->activity_id, wait, wact, moved;
	uint64_t n;
	int rc;

	if (tab > FS_KT_USER || h->gen_banks == 1 || (rec->qty == 1 && rec->order_no == 0))
		return FLASH_EINVAL;
	if (rec->qty == 1) {
		if ((rc = fs_admin_lock(h)) != FLASH_OK)
			return rc;
		rc = gen_advance_locked(h, tab, rec->value, rec->order_no, &wait, &wact, &moved);
		fs_admin_unlock(h);
		return rc;
	}
	if (rec->qty == 2)
		return gen_clear_run(h, tab, 1, rec->order_no, &n);
	return FLASH_EINVAL;
}

/* ------------------------------------------------------------ reading */

static void gen_info_fill(flash_t *h, uint32_t tab, struct flash_gen_info *out)
{
	const struct fs_gentab *g = &h->hdr->gen[tab];
	uint64_t cur = ck_pr_load_64((uint64_t *)&g->cur);

	memset(out, 0, sizeof(*out));
	out->table = tab;
	out->banks = h->gen_banks;
	out->gen_s = h->gen_banks > 1 ? gen_len_s(h, tab) : 0;
	out->gen = cur;
	out->gen_start_ns = (int64_t)ck_pr_load_64((uint64_t *)&g->cur_start_ns);
	out->reclaimed = ck_pr_load_64((uint64_t *)&g->reclaimed.value);
	for (uint32_t b = 0; b < h->gen_banks; b++) {
		struct flash_gen_bank *o = &out->bank[b];
		uint64_t w = ck_pr_load_64((uint64_t *)&g->bank[b]);

		o->gen = FS_BANK_GEN(w);
		o->keys = (uint32_t)ck_pr_load_64(&fs_kt_fill(h, tab, b)->value);
		o->capacity = tab == FS_KT_REQ ? h->hdr->fx.opts.max_requests : h->hdr->fx.opts.max_users;
		if (FS_BANK_KIND(w) == FS_BANK_CLEAR)
			o->state = FLASH_BANK_CLEAR;
		else if (FS_BANK_KIND(w) == FS_BANK_CLEARING)
			o->state = FLASH_BANK_CLEARING;
		else if (o->gen == cur)
			o->state = FLASH_BANK_CURRENT;
		else if (o->gen + 1 == cur)
			o->state = FLASH_BANK_PREVIOUS;
		else
			o->state = FLASH_BANK_OLD;
		o->pinned_by = gen_pinned_by(h, tab, b);
		if (o->state == FLASH_BANK_OLD && o->pinned_by != 0)
			o->state = FLASH_BANK_PINNED;
	}
	if (h->gen_banks > 1) {
		uint32_t nb = fs_gen_bank_of(h, cur + 1);

		if (fs_now_ns() < out->gen_start_ns + gen_min_ns(h, tab))
			out->wait = FLASH_GEN_WAIT_NOT_DUE;
		else
			out->wait = gen_why(h, tab, nb, &out->wait_activity);
	}
}

int flash_gen_get(flash_t *h, uint32_t table, struct flash_gen_info *out)
{
	int rc;

	if ((rc = gen_args(h, table, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	gen_info_fill(h, table, out);
	return FLASH_OK;
}
