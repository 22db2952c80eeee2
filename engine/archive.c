/*
 * archive.c -- archiving an ended activity: its order-table slots, skus,
 * stock shards, catalog entries, index words and live tokens go back to the
 * segment for later activities (issue 13, "Fixed memory for months").
 *
 * Divisions:
 *   0. Archived ids                   the set that refuses an id added again
 *   1. The grace period's two halves  the mark, and who reads it
 *   2. Rolling forward                fs_archive_forward (owner, recoverer, replay)
 *   3. The operation                  flash_archive, fs_archive_run
 *
 * 0. An archived id is never an activity again in this segment.  The limit
 * keys, MariaDB's activities and item_stock rows and the backstop's cache
 * are keyed by the activity id alone, so a second activity under the id
 * would inherit the first one's buyers, rows and limits.  The segment keeps
 * every id it archived in an open-addressed set of uint32 (0: empty; it only
 * grows, so a search ends at the first empty word) and flash_activity_add
 * answers FLASH_EARCHIVED for them.  fs_archive_forward puts the id first
 * (one store, 0 -> id, under the admin mutex: a roll-forward or a replay
 * puts it once), so the id is remembered whenever the activity is gone; a
 * replay of ARCHIVE records, or a snapshot's image, rebuilds the set.  It
 * holds fs_arch_cap() ids in twice as many words; the mark refuses
 * FLASH_EFULL, changing nothing, while the ids kept and the archives under
 * way would fill it.
 *
 * 1. The mark.  The activity's state word goes LIVE(v) -> ARCHIVING(v), and
 * each of its skus' likewise, under the admin mutex; then fs_grace waits out
 * every operation open in another slot.  Every operation that may touch the
 * activity reads its state after its own fs_op_begin (a full barrier): an
 * order re-checks the activity and sku state words it read with them, a
 * restock the sku's (order.c), a cancel reads the activity's state before
 * its CAS on the order, a token issue the activity's (token.c).  So each such operation either began
 * before the mark -- the grace period waits for it -- or sees ARCHIVING (or
 * a later version) and refuses.  Past the grace period nothing of the
 * activity changes but by the archive.
 *
 * 2. The operation (FS_OP_ARCHIVE), under the admin mutex: the live tokens
 * are retired first (each its own journaled retire, token.c), then the
 * counts go into the record FLASH_REC_ARCHIVE, the record is published (the
 * commit point, as for catalog adds: fs_catalog_repair finishes a dead
 * archiver's published operation), and fs_archive_forward remembers the id
 * (0.) and frees: order slots
 * (ACTIVE/CANCELLED -> FREE(0), number kept), each sku (index word a
 * tombstone, shards' owner 0, state FREE), the limit-entry bank pin
 * (fs_gen_unpin), the activity (index word, state FREE).  Each step is a
 * store or CAS from the state it leaves, so running it again (a recoverer,
 * after the owner died in it) changes nothing twice.  A death before the
 * record leaves the activity marked and whole; the next flash_archive goes
 * on from the mark.
 *
 * Crash points: "archive" 1..6.
 */
#include "fs.h"
#include "journal.h"
#include "probe.h"

#define ARCHIVE_GRACE_MS 2000u

/* ------------------------------------------------------------ 0. archived ids */

uint32_t fs_arch_cap(const struct flash_seg_opts *o)
{
	uint64_t n = (uint64_t)FS_ARCH_PER_ACT * o->max_activities;

	if (n < FS_ARCH_MIN)
		n = FS_ARCH_MIN;
	return n > FLASH_CAP_MAX ? FLASH_CAP_MAX : (uint32_t)n;
}

/* Is @p id in the set?  If not, *room is the word it would take
 * (UINT32_MAX: none within the probe bound). */
static int arch_probe(flash_t *h, uint32_t id, uint32_t *room)
{
	struct fs_probe p;
	uint32_t i;

	*room = UINT32_MAX;
	fs_probe_init(&p, fs_hash(id, 7, 8), h->arch_mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		uint32_t v = ck_pr_load_32(&h->arch[i]);

		if (v == id)
			return 1;
		if (v == 0) {
			*room = i;
			return 0;
		}
	}
	return 0;
}

int fs_arch_has(flash_t *h, uint32_t id)
{
	uint32_t room;

	return id != 0 && arch_probe(h, id, &room);
}

/* Remember @p id (holder of the admin mutex; idempotent). */
static void arch_put(flash_t *h, uint32_t id)
{
	uint32_t room;

	if (!arch_probe(h, id, &room) && room != UINT32_MAX)
		ck_pr_store_32(&h->arch[room], id);
}

/*
 * May activity @p id at entry @p ai be marked?  (Holder of the admin mutex.)
 * Every activity marked and not yet freed will take a word, so the ids kept
 * and those archives together stay within the set's capacity: its put in
 * fs_archive_forward then always finds room.
 */
static int arch_room(flash_t *h, uint32_t id, uint32_t ai)
{
	uint32_t room, used = 0, top = ck_pr_load_32(&h->hdr->n_act);

	if (arch_probe(h, id, &room))
		return 1;
	if (room == UINT32_MAX)
		return 0;
	for (uint32_t i = 0; i <= h->arch_mask; i++)
		used += ck_pr_load_32(&h->arch[i]) != 0;
	for (uint32_t k = 0; k < top && k < h->act_cap; k++)
		used += k != ai && FS_CAT_KIND(ck_pr_load_32(&h->act[k].state)) == FS_CAT_ARCHIVING;
	return used < h->arch_cap;
}

/*
 * Mark the skus of activity @p id at entry @p ai ARCHIVING too (holder of
 * the admin mutex, before the grace period): an operation that reads a sku
 * alone -- a restock -- re-checks its state word after it began, so it
 * either began before the mark (waited for) or refuses.  Idempotent.
 */
static void archive_mark_skus(flash_t *h, uint32_t id, uint32_t ai)
{
	uint32_t top = ck_pr_load_32(&h->hdr->n_sku);

	for (uint32_t k = 0; k < top && k < h->sku_cap; k++) {
		struct fs_sku *s = &h->sku[k];
		uint32_t st = ck_pr_load_32(&s->state);

		if (FS_CAT_KIND(st) == FS_CAT_LIVE && s->activity_id == id && s->act_idx == ai)
			(void)ck_pr_fas_32(&s->state, FS_CAT(FS_CAT_ARCHIVING, FS_CAT_VER(st)));
	}
}

/* ------------------------------------------------------------ 2. rolling forward */

/* Order slots of activity @p id, ended or not (ACTIVE, CANCELLED, RESERVED,
 * EXPIRED, and a cart's LINE slots with it): counted, or (free) freed.  A reservation still unpaid when its
 * activity is archived is archived with it, as it stands. */
static uint64_t archive_orders(flash_t *h, uint32_t id, int free_them)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < h->ord_cap; i++) {
		struct fs_order *o = &h->ord[i];
		uint64_t s = ck_pr_load_64(&o->state);

		/* PEND: a placing of another activity (its fields not written
		 * yet) -- past the grace period nothing of this one is in flight */
		if (FS_KIND(s) != FS_K_ACTIVE && FS_KIND(s) != FS_K_CANCELLED && FS_KIND(s) != FS_K_RESERVED &&
		    FS_KIND(s) != FS_K_EXPIRED && FS_KIND(s) != FS_K_LINE)
			continue;
		ck_pr_fence_load();
		if (ck_pr_load_32(&o->activity_id) != id)
			continue;
		n++;
		/* the number stays in the slot: a reader tells it archived */
		if (free_them)
			ck_pr_cas_64(&o->state, s, FS_MK(FS_K_FREE, 0));
	}
	return n;
}

/* Skus of activity @p id at entry @p ai: counted (and their shards), or freed. */
static uint32_t archive_skus(flash_t *h, uint32_t id, uint32_t ai, int free_them, uint32_t *shards)
{
	uint32_t n = 0, top = ck_pr_load_32(&h->hdr->n_sku);

	for (uint32_t k = 0; k < top && k < h->sku_cap; k++) {
		struct fs_sku *s = &h->sku[k];
		uint32_t st = ck_pr_load_32(&s->state), base, ns;

		if (FS_CAT_KIND(st) == FS_CAT_FREE || s->activity_id != id || s->act_idx != ai)
			continue;
		n++;
		if (!fs_sku_range(h, s, &base, &ns))
			ns = 0;
		if (shards)
			*shards += ns;
		if (!free_them)
			continue;
		fs_index_tomb(h->sku_idx, h->sku_idx_mask, fs_hash(id, s->sku_id, 2), k);
		FS_CRASH("archive", 4);
		for (uint32_t x = 0; x < ns; x++)
			if (ck_pr_load_32(&h->shard[base + x].owner) == k + 1)
				ck_pr_store_32(&h->shard[base + x].owner, 0);
		ck_pr_store_32(&s->state, FS_CAT(FS_CAT_FREE, FS_CAT_VER(st)));
	}
	return n;
}

/*
 * Finish the archive in journal @p j (published): its owner, the next holder
 * of the admin mutex after the owner died (fs_catalog_repair), or a replay.
 * Holder of the admin mutex.  Idempotent.
 */
void fs_archive_forward(flash_t *h, struct fs_journal *j)
{
	uint32_t ai = ck_pr_load_32(&j->sku_idx), id = j->rec.activity_id, st;
	struct fs_act *a;

	if (ai >= h->act_cap)
		return;
	a = &h->act[ai];
	st = ck_pr_load_32(&a->state);
	if (a->t[0].id != id || FS_CAT_KIND(st) == FS_CAT_FREE)
		return;                                   /* finished already */
	arch_put(h, id);                              /* before anything is freed */
	archive_orders(h, id, 1);
	FS_CRASH("archive", 3);
	archive_skus(h, id, ai, 1, NULL);
	FS_CRASH("archive", 5);
	fs_gen_unpin(h, ai);
	fs_index_tomb(h->act_idx, h->act_idx_mask, fs_hash(id, 0, 1), ai);
	FS_CRASH("archive", 6);
	ck_pr_store_32(&a->state, FS_CAT(FS_CAT_FREE, FS_CAT_VER(st)));
}

/* ------------------------------------------------------------ 3. the operation */

/*
 * The archive after the caller's checks; flash_replay re-applies a record
 * through it (no window check, no grace period: nothing else runs).
 */
int fs_archive_run(flash_t *h, uint32_t activity_id, struct flash_archive_info *out)
{
	struct flash_archive_info info;
	struct fs_journal *j = h->j;
	const struct fs_act *act;
	uint32_t ai, st;
	int rc;

	memset(&info, 0, sizeof info);
	info.activity_id = activity_id;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	if ((act = fs_act_find(h, activity_id, &ai)) == NULL) {
		fs_admin_unlock(h);
		return h->replay ? FLASH_EEXIST : FLASH_ENOT_FOUND;
	}
	st = ck_pr_load_32(&h->act[ai].state);
	if (FS_CAT_KIND(st) == FS_CAT_LIVE) {
		if (h->replay == NULL && fs_now_ns() < fs_act_t(act, st)->end_ns) {
			fs_admin_unlock(h);
			return FLASH_ENOT_ENDED;
		}
		if (!arch_room(h, activity_id, ai)) {
			fs_admin_unlock(h);
			return FLASH_EFULL;
		}
		/* the mark: xchg, a full barrier before the grace period's reads
		 * of the journals (fs_grace fences again) */
		(void)ck_pr_fas_32(&h->act[ai].state, FS_CAT(FS_CAT_ARCHIVING, FS_CAT_VER(st)));
		FS_CRASH("archive", 1);
	}
	if (FS_CAT_KIND(ck_pr_load_32(&h->act[ai].state)) == FS_CAT_ARCHIVING)
		archive_mark_skus(h, activity_id, ai);   /* again on a retry: idempotent */
	fs_admin_unlock(h);

	/* outside the mutex: a dead operation's recovery may need it */
	if (h->replay == NULL && (rc = fs_grace(h, ARCHIVE_GRACE_MS)) != FLASH_OK)
		return rc;

	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	/* still ours to finish?  (another archiver may have done it meanwhile) */
	if (ck_pr_load_32(&h->act[ai].state) != FS_CAT(FS_CAT_ARCHIVING, FS_CAT_VER(st)) ||
	    h->act[ai].t[0].id != activity_id) {
		fs_admin_unlock(h);
		return h->replay ? FLASH_EEXIST : FLASH_ENOT_FOUND;
	}
	if (!fs_ring_space(h)) {
		fs_admin_unlock(h);
		return FLASH_EBUSY;
	}
	info.tokens = fs_token_retire_activity(h, activity_id);
	FS_CRASH("archive", 2);
	info.orders = archive_orders(h, activity_id, 0);
	info.skus = archive_skus(h, activity_id, ai, 0, &info.shards);

	fs_op_begin(h, FS_OP_ARCHIVE);
	j->sku_idx = ai;
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_ARCHIVE;
	j->rec.activity_id = activity_id;
	j->rec.order_no = info.orders;
	j->rec.qty = info.skus;
	j->rec.value = info.shards;
	j->rec.user_id = info.tokens;
	j->rec.ts_ns = h->replay ? h->replay->ts_ns : fs_now_ns();
	fs_commit(h);                             /* COMMIT */
	fs_archive_forward(h, j);
	fs_op_end(j);
	fs_admin_unlock(h);
	if (out)
		*out = info;
	return FLASH_OK;
}

int flash_archive(flash_t *h, uint32_t activity_id, uint32_t flags, struct flash_archive_info *out)
{
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (activity_id == 0 || flags != 0)
		return FLASH_EINVAL;
	return fs_archive_run(h, activity_id, out);
}
