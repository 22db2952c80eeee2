/*
 * catalog.c -- activities and their skus.
 *
 * Both live in dense arrays (n_act, n_sku count the committed ones) with an
 * open-addressed index of uint32 (0 = empty, else dense index + 1) for
 * lookups.  Readers are lock-free: an entry's fields are written before the
 * index word that publishes it (store-release), and never change after.
 * Writers are rare and hold the robust admin mutex; their operation is
 * journaled like any other: the record is the commit point, and a writer that
 * dies is finished (record published) or forgotten (not published) by the
 * next holder of the mutex (fs_catalog_repair).
 *
 * The indexes are probed by probe.h: an entry is placed within FS_PROBE_MAX
 * of its home (an add checks there is room before it changes anything), so
 * every lookup reads at most that many words.
 *
 * Recycling (archive.c): an archived entry's index word becomes a tombstone
 * (FS_IDX_TOMB), which lookups pass and later adds reuse; its dense entry
 * goes FREE and is reused by a later add (the lowest FREE one), as are its
 * shards (the first run of free shards, by owner).  Adds and archives are
 * serialised by the admin mutex, so reusing a word under it is safe: lookups
 * are lock-free and compare the key after reading the index word.  Each
 * entry carries a state word (fs.h: FS_CAT) whose version grows on each
 * reuse; its fields change only while it is FREE, and an add makes it LIVE
 * again (catalog_forward) before the index word that publishes it.
 */
#include <stddef.h>

#include "fs.h"
#include "journal.h"
#include "probe.h"

const struct fs_act *fs_act_find(flash_t *h, uint32_t id, uint32_t *idx)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, fs_hash(id, 0, 1), h->act_idx_mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		uint32_t v = ck_pr_load_32(&h->act_idx[i]);

		if (v - 1 >= h->act_cap) {   /* 0, a tombstone, or corrupt (one compare) */
			if (v == FS_IDX_TOMB)
				continue;      /* an archived entry's word: the chain goes on */
			return NULL;   /* end of chain, or a corrupt index: not found */
		}
		ck_pr_fence_load();
		if (h->act[v - 1].t[0].id == id &&
		    FS_CAT_KIND(ck_pr_load_32(&h->act[v - 1].state)) != FS_CAT_FREE) {
			if (idx)
				*idx = v - 1;
			return &h->act[v - 1];
		}
	}
	return NULL;
}

const struct fs_sku *fs_sku_find(flash_t *h, uint32_t act, uint32_t sku, uint32_t *idx)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, fs_hash(act, sku, 2), h->sku_idx_mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		uint32_t v = ck_pr_load_32(&h->sku_idx[i]);

		if (v - 1 >= h->sku_cap) {
			if (v == FS_IDX_TOMB)
				continue;
			return NULL;
		}
		ck_pr_fence_load();
		if (h->sku[v - 1].activity_id == act && h->sku[v - 1].sku_id == sku &&
		    FS_CAT_KIND(ck_pr_load_32(&h->sku[v - 1].state)) != FS_CAT_FREE) {
			if (idx)
				*idx = v - 1;
			return &h->sku[v - 1];
		}
	}
	return NULL;
}

/*
 * Is there a free word for @p hash within the probe bound?  Asked by an add
 * before it changes anything; only the admin mutex's holder writes an index,
 * so the answer holds until its index_put.
 */
static int index_room(const uint32_t *index, uint32_t mask, uint64_t hash)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, hash, mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		uint32_t v = ck_pr_load_32((uint32_t *)&index[i]);

		if (v == 0 || v == FS_IDX_TOMB)
			return 1;
	}
	return 0;
}

/* Publish dense entry @p k in an index, in the first empty or tombstone word
 * (idempotent: a second call finds it there, before any later free word). */
static void index_put(uint32_t *index, uint32_t mask, uint64_t hash, uint32_t k)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, hash, mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		uint32_t v = ck_pr_load_32(&index[i]);

		if (v == k + 1)
			return;
		if (v == 0 || v == FS_IDX_TOMB) {
			ck_pr_fence_store();
			ck_pr_store_32(&index[i], k + 1);
			return;
		}
	}
}

static void store_max_32(uint32_t *p, uint32_t v)
{
	if (ck_pr_load_32(p) < v)
		ck_pr_store_32(p, v);   /* only the mutex holder writes */
}

/* Take the index word of dense entry @p k out (a tombstone; idempotent). */
void fs_index_tomb(uint32_t *index, uint32_t mask, uint64_t hash, uint32_t k)
{
	struct fs_probe p;
	uint32_t i;

	fs_probe_init(&p, hash, mask, FS_PROBE_MAX);
	while (fs_probe_next(&p, &i)) {
		uint32_t v = ck_pr_load_32(&index[i]);

		if (v == k + 1) {
			ck_pr_store_32(&index[i], FS_IDX_TOMB);
			return;
		}
		if (v == 0)
			return;
	}
}

/* A reused entry (FREE(v)) becomes LIVE(v + 1); a fresh or LIVE one stays. */
static void cat_live(uint32_t *state)
{
	uint32_t s = ck_pr_load_32(state);

	if (FS_CAT_KIND(s) == FS_CAT_FREE) {
		ck_pr_fence_store();   /* the fields, written while FREE, first */
		ck_pr_store_32(state, FS_CAT(FS_CAT_LIVE, FS_CAT_VER(s) + 1));
	}
}

/* A change of terms: LIVE(v) -> LIVE(v + 1), the copy of v + 1 written
 * before its record (idempotent: the word it moves from is in the journal). */
static void cat_next(uint32_t *state, uint64_t from)
{
	ck_pr_fence_store();
	ck_pr_cas_32(state, (uint32_t)from, FS_CAT(FS_CAT_LIVE, FS_CAT_VER((uint32_t)from) + 1));
}

/* Roll a published catalog operation forward (holder of the admin mutex). */
static void catalog_forward(flash_t *h, struct fs_journal *j)
{
	uint32_t k = j->sku_idx;

	if (j->rec.type == FLASH_REC_ACTIVITY && (j->rec.flags & 1u) && k < h->act_cap) {
		cat_next(&h->act[k].state, j->ord_prior);
	} else if (j->rec.type == FLASH_REC_PRICE && k < h->sku_cap) {
		cat_next(&h->sku[k].state, j->ord_prior);
	} else if (j->rec.type == FLASH_REC_ACTIVITY && k < h->act_cap) {
		cat_live(&h->act[k].state);
		index_put(h->act_idx, h->act_idx_mask, fs_hash(h->act[k].t[0].id, 0, 1), k);
		store_max_32(&h->hdr->n_act, k + 1);
	} else if (j->rec.type == FLASH_REC_SKU && k < h->sku_cap) {
		struct fs_sku *s = &h->sku[k];
		uint32_t base, n;

		if (fs_sku_range(h, s, &base, &n))
			for (uint32_t x = 0; x < n; x++)
				ck_pr_store_32(&h->shard[base + x].owner, k + 1);
		store_max_32(&h->hdr->n_shard, s->shard0 + s->nshards);
		cat_live(&s->state);
		index_put(h->sku_idx, h->sku_idx_mask, fs_hash(s->activity_id, s->sku_id, 2), k);
		store_max_32(&h->hdr->n_sku, k + 1);
	}
}

/*
 * The holder of the admin mutex died (EOWNERDEAD): finish its catalog
 * operation if its record was published, else forget it (nothing of it was
 * visible: the dense counters only move forward in catalog_forward).  A
 * forgotten activity add may leave its fields and its bank pin in the FREE
 * entry it reused: nobody reads them (fs_act_find and gen_pinned_by pass
 * FREE entries) until a later add writes them again.
 */
int fs_catalog_repair(flash_t *h, uint32_t slot)
{
	struct fs_journal *j = &h->jr[slot];

	if ((j->op != FS_OP_CATALOG && j->op != FS_OP_ARCHIVE) || j->phase == FS_PH_IDLE)
		return FLASH_OK;
	if ((j->phase == FS_PH_PUBLISH && fs_ring_published(h, slot, j->ring_pos)) ||
	    (j->phase == FS_PH_RESOLVED && j->dir == FS_DIR_FWD)) {
		if (j->op == FS_OP_ARCHIVE)
			fs_archive_forward(h, j);
		else
			catalog_forward(h, j);
	}
	fs_op_end(j);
	return FLASH_OK;
}

/* Common tail: publish the journal's record and make the entry visible. */
static void catalog_commit(flash_t *h)
{
	struct fs_journal *j = h->j;

	j->rec.ts_ns = j->rec.ts_ns ? j->rec.ts_ns : fs_now_ns();
	FS_CRASH("catalog", 1);
	fs_commit(h);
	FS_CRASH("catalog", 2);
	catalog_forward(h, j);
	FS_CRASH("catalog", 3);
	fs_op_end(j);
}

/* The dense entry an add takes: the lowest FREE one below @p n, else @p n
 * (deterministic, so a replay places every entry where the live add did). */
static uint32_t act_slot(flash_t *h, uint32_t n)
{
	for (uint32_t k = 0; k < n && k < h->act_cap; k++)
		if (FS_CAT_KIND(ck_pr_load_32(&h->act[k].state)) == FS_CAT_FREE)
			return k;
	return n;
}

static uint32_t sku_slot(flash_t *h, uint32_t n)
{
	for (uint32_t k = 0; k < n && k < h->sku_cap; k++)
		if (FS_CAT_KIND(ck_pr_load_32(&h->sku[k].state)) == FS_CAT_FREE)
			return k;
	return n;
}

/* The first run of @p want free shards (owner 0) below n_shard, else
 * n_shard itself (the caller checks room there). */
static uint32_t shard_run(flash_t *h, uint32_t n_shard, uint32_t want)
{
	uint32_t run = 0;

	for (uint32_t k = 0; k < n_shard && k < h->shard_cap; k++) {
		run = ck_pr_load_32(&h->shard[k].owner) == 0 ? run + 1 : 0;
		if (run == want)
			return k + 1 - want;
	}
	return n_shard;
}

static void act_rec(struct fs_journal *j, const struct flash_activity *a, int update);

/*
 * The version of new terms: the next of the segment's counter, or a
 * replayed record's own (the counter then kept at least as high).  A
 * number taken by an operation that dies before its record is skipped,
 * never issued again.
 */
static uint64_t terms_version(flash_t *h)
{
	uint64_t v = h->replay ? h->replay->order_no : 0;

	if (v == 0)
		v = ck_pr_load_64(&h->hdr->terms_ver) + 1;   /* a WAL from before versions too */
	if (v > ck_pr_load_64(&h->hdr->terms_ver))
		ck_pr_store_64(&h->hdr->terms_ver, v);
	return v;
}

int fs_activity_add_locked(flash_t *h, const struct flash_activity *a)
{
	uint32_t n = act_slot(h, ck_pr_load_32(&h->hdr->n_act));
	struct fs_journal *j = h->j;

	if (fs_act_find(h, a->id, NULL) != NULL)
		return FLASH_EEXIST;
	if (fs_arch_has(h, a->id))
		/* archived: never again (archive.c); a replayed record: applied */
		return h->replay ? FLASH_EEXIST : FLASH_EARCHIVED;
	if (n >= h->act_cap || !index_room(h->act_idx, h->act_idx_mask, fs_hash(a->id, 0, 1)))
		return FLASH_EFULL;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	fs_op_begin(h, FS_OP_CATALOG);
	/* a fresh entry, or a FREE one: nobody reads it; both copies alike */
	h->act[n].t[0] = *a;
	h->act[n].t[0].version = terms_version(h);
	h->act[n].t[1] = h->act[n].t[0];
	fs_gen_pin(h, &h->act[n]);
	j->sku_idx = n;
	act_rec(j, &h->act[n].t[0], 0);
	catalog_commit(h);
	return FLASH_OK;
}

/* The ACTIVITY record of terms @p a (@p update: new terms of an existing one). */
static void act_rec(struct fs_journal *j, const struct flash_activity *a, int update)
{
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_ACTIVITY;
	j->rec.activity_id = a->id;
	j->rec.value = a->start_ns;
	j->rec.ts_ns = a->end_ns;
	j->rec.biz_day = (a->limit_per_user & 0xff) | (a->scope & 0xff) << 8 | (a->flags & 0xffff) << 16;
	j->rec.limit_slot = (uint16_t)(a->max_qty > 0xffff ? 0xffff : a->max_qty);
	j->rec.request_id = (uint64_t)(int64_t)a->day_offset_s;
	j->rec.order_no = a->version;
	j->rec.flags = (uint16_t)(update ? 1 : 0);
}

/*
 * A change of terms waits out the operations open in other handles twice:
 * before it writes the spare copy (an operation still reading it, from two
 * changes ago, would read it torn) and after its state word moved on (so it
 * returns once every order judged against the old terms has ended).  Not
 * in a replay: nothing else runs.
 */
#define FS_TERMS_GRACE_MS 2000u

static int terms_grace(flash_t *h)
{
	return h->replay ? FLASH_OK : fs_grace(h, FS_TERMS_GRACE_MS);
}

int fs_activity_update_locked(flash_t *h, const struct flash_activity *a, uint64_t *version)
{
	struct fs_journal *j = h->j;
	const struct flash_activity *cur;
	struct flash_activity *next;
	struct fs_act *act;
	uint32_t ai, st;
	int rc;

	if ((act = (struct fs_act *)fs_act_find(h, a->id, &ai)) == NULL)
		/* a replayed update of an activity archived since: applied */
		return h->replay && fs_arch_has(h, a->id) ? FLASH_EEXIST : FLASH_ENOT_FOUND;
	st = ck_pr_load_32(&act->state);
	if (FS_CAT_KIND(st) != FS_CAT_LIVE)
		return FLASH_EENDED;      /* being archived */
	cur = fs_act_t(act, st);
	if (h->replay && h->replay->order_no != 0 && cur->version >= h->replay->order_no)
		return FLASH_EEXIST;      /* replayed already */
	if (a->scope != cur->scope || a->day_offset_s != cur->day_offset_s ||
	    a->limit_per_user < cur->limit_per_user)
		return FLASH_EINVAL;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	if ((rc = terms_grace(h)) != FLASH_OK)
		return rc;
	fs_op_begin(h, FS_OP_CATALOG);
	next = &act->t[(FS_CAT_VER(st) + 1) & 1u];   /* the spare copy: nobody reads it */
	*next = *a;
	next->version = terms_version(h);
	j->sku_idx = ai;
	j->ord_prior = st;
	act_rec(j, next, 1);
	FS_CRASH("terms", 1);
	catalog_commit(h);
	if (version)
		*version = next->version;
	(void)terms_grace(h);     /* the old terms' orders ended (see flashstock.h) */
	return FLASH_OK;
}

int fs_sku_price_locked(flash_t *h, uint32_t act_id, uint32_t sku_id, uint64_t price, uint64_t *version)
{
	struct fs_journal *j = h->j;
	struct fs_sku_terms *next;
	struct fs_sku *s;
	uint32_t si, st;
	int rc;

	if ((s = (struct fs_sku *)fs_sku_find(h, act_id, sku_id, &si)) == NULL)
		return h->replay && fs_arch_has(h, act_id) ? FLASH_EEXIST : FLASH_ENOT_FOUND;
	st = ck_pr_load_32(&s->state);
	if (FS_CAT_KIND(st) != FS_CAT_LIVE)
		return FLASH_EENDED;
	if (h->replay && h->replay->order_no != 0 && fs_sku_t(s, st)->version >= h->replay->order_no)
		return FLASH_EEXIST;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	if ((rc = terms_grace(h)) != FLASH_OK)
		return rc;
	fs_op_begin(h, FS_OP_CATALOG);
	next = &s->t[(FS_CAT_VER(st) + 1) & 1u];
	next->price = price;
	next->version = terms_version(h);
	j->sku_idx = si;
	j->ord_prior = st;
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_PRICE;
	j->rec.activity_id = act_id;
	j->rec.sku_id = sku_id;
	j->rec.value = (int64_t)price;
	j->rec.order_no = next->version;
	FS_CRASH("terms", 2);
	catalog_commit(h);
	if (version)
		*version = next->version;
	(void)terms_grace(h);
	return FLASH_OK;
}

int fs_sku_add_locked(flash_t *h, uint32_t act_id, uint32_t sku_id, uint64_t units, uint32_t shards)
{
	uint32_t n = sku_slot(h, ck_pr_load_32(&h->hdr->n_sku));
	uint32_t s0 = shard_run(h, ck_pr_load_32(&h->hdr->n_shard), shards);
	struct fs_journal *j = h->j;
	const struct fs_act *act;
	uint32_t ai;
	struct fs_sku *s;

	if ((act = fs_act_find(h, act_id, &ai)) == NULL)
		/* a replayed sku of an activity archived since: applied */
		return h->replay && fs_arch_has(h, act_id) ? FLASH_EEXIST : FLASH_ENOT_FOUND;
	if (FS_CAT_KIND(ck_pr_load_32((uint32_t *)&act->state)) != FS_CAT_LIVE)
		return FLASH_EENDED;      /* being archived */
	if (fs_sku_find(h, act_id, sku_id, NULL) != NULL)
		return FLASH_EEXIST;
	if (n >= h->sku_cap || s0 > h->shard_cap || shards > h->shard_cap - s0 ||
	    !index_room(h->sku_idx, h->sku_idx_mask, fs_hash(act_id, sku_id, 2)))
		return FLASH_EFULL;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	fs_op_begin(h, FS_OP_CATALOG);
	s = &h->sku[n];
	/* every field but the state word, which a reused entry keeps FREE(v)
	 * until catalog_forward: a stale reader never sees it LIVE meanwhile */
	memset(s, 0, offsetof(struct fs_sku, state));
	memset(&s->total, 0, sizeof(*s) - offsetof(struct fs_sku, total));
	s->activity_id = act_id;
	s->sku_id = sku_id;
	s->act_idx = ai;
	s->shard0 = s0;
	s->nshards = shards;
	s->total.value = units;
	s->total.tag = 0;
	s->t[0].version = terms_version(h);   /* price 0 until set */
	s->t[1] = s->t[0];
	for (uint32_t k = 0; k < shards; k++) {
		h->shard[s0 + k].c.value = units / shards + (k < units % shards ? 1 : 0);
		h->shard[s0 + k].c.tag = 0;
	}
	j->sku_idx = n;
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_SKU;
	j->rec.activity_id = act_id;
	j->rec.sku_id = sku_id;
	j->rec.qty = shards;
	j->rec.value = (int64_t)units;
	j->rec.order_no = s->t[0].version;
	catalog_commit(h);
	return FLASH_OK;
}

int flash_activity_add(flash_t *h, const struct flash_activity *a)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (flash_activity_check(a) != FLASH_OK)
		return FLASH_EINVAL;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	rc = fs_activity_add_locked(h, a);
	fs_admin_unlock(h);
	return rc;   /* no durable wait: see flash_activity_add in flashstock.h */
}

int flash_activity_id_check(flash_t *h, uint32_t id)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (id == 0)
		return FLASH_EINVAL;
	if (fs_act_find(h, id, NULL) != NULL)
		return FLASH_EEXIST;
	return fs_arch_has(h, id) ? FLASH_EARCHIVED : FLASH_OK;
}

int flash_sku_add(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t units, uint32_t shards)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (activity_id == 0 || sku_id == 0 || shards == 0 || shards > FLASH_SHARDS_MAX ||
	    units > FLASH_UNITS_MAX)
		return FLASH_EINVAL;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	rc = fs_sku_add_locked(h, activity_id, sku_id, units, shards);
	fs_admin_unlock(h);
	return rc;
}

int flash_activity_update(flash_t *h, const struct flash_activity *a, uint64_t *version)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (flash_activity_check(a) != FLASH_OK)
		return FLASH_EINVAL;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	rc = fs_activity_update_locked(h, a, version);
	fs_admin_unlock(h);
	return rc;
}

int flash_sku_price_set(flash_t *h, uint32_t activity_id, uint32_t sku_id, uint64_t price,
                        uint64_t *version)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (activity_id == 0 || sku_id == 0 || price > FLASH_PRICE_MAX)
		return FLASH_EINVAL;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	rc = fs_sku_price_locked(h, activity_id, sku_id, price, version);
	fs_admin_unlock(h);
	return rc;
}

/*
 * One whole set of an entry's terms, lock-free: the state, the copy it
 * names, the state again; a change in between (rare: an admin call) reads
 * again.  FLASH_EARCHIVED: the entry is FREE.
 */
static int act_read(const struct fs_act *act, struct flash_activity *out)
{
	for (;;) {
		uint32_t st = ck_pr_load_32((uint32_t *)&act->state);

		if (FS_CAT_KIND(st) == FS_CAT_FREE)
			return FLASH_EARCHIVED;
		ck_pr_fence_load();
		*out = *fs_act_t(act, st);
		ck_pr_fence_load();
		if (ck_pr_load_32((uint32_t *)&act->state) == st)
			return FLASH_OK;
	}
}

int flash_activity_at(flash_t *h, uint32_t index, struct flash_activity *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	if (index >= ck_pr_load_32(&h->hdr->n_act) || index >= h->act_cap)
		return FLASH_ENOT_FOUND;
	ck_pr_fence_load();
	return act_read(&h->act[index], out);   /* FLASH_EARCHIVED: an archived entry, not reused yet: go on */
}

int flash_activity_get(flash_t *h, uint32_t id, struct flash_activity *out)
{
	const struct fs_act *act;
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL || id == 0)
		return FLASH_EINVAL;
	if ((act = fs_act_find(h, id, NULL)) == NULL || act_read(act, out) != FLASH_OK || out->id != id)
		return FLASH_ENOT_FOUND;   /* or archived (and reused) meanwhile */
	return FLASH_OK;
}

static int sku_info(flash_t *h, const struct fs_sku *s, struct flash_sku_info *out)
{
	uint32_t base, n;

	if (!fs_sku_range(h, s, &base, &n))
		return FLASH_ECORRUPT;
	memset(out, 0, sizeof(*out));
	out->activity_id = s->activity_id;
	out->sku_id = s->sku_id;
	out->shards = n;
	out->total = ck_pr_load_64(&s->total.value);
	for (;;) {                /* the terms: as act_read */
		uint32_t st = ck_pr_load_32((uint32_t *)&s->state);
		const struct fs_sku_terms *t = fs_sku_t(s, st);

		ck_pr_fence_load();
		out->price = ck_pr_load_64((uint64_t *)&t->price);
		out->version = ck_pr_load_64((uint64_t *)&t->version);
		ck_pr_fence_load();
		if (ck_pr_load_32((uint32_t *)&s->state) == st)
			break;
	}
	for (uint32_t k = 0; k < out->shards; k++)
		out->available += ck_pr_load_64(&h->shard[base + k].c.value);
	return FLASH_OK;
}

int flash_sku_at(flash_t *h, uint32_t index, struct flash_sku_info *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	if (index >= ck_pr_load_32(&h->hdr->n_sku) || index >= h->sku_cap)
		return FLASH_ENOT_FOUND;
	ck_pr_fence_load();
	if (FS_CAT_KIND(ck_pr_load_32(&h->sku[index].state)) == FS_CAT_FREE)
		return FLASH_EARCHIVED;
	return sku_info(h, &h->sku[index], out);
}

int flash_sku_get(flash_t *h, uint32_t activity_id, uint32_t sku_id, struct flash_sku_info *out)
{
	const struct fs_sku *s;
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	if ((s = fs_sku_find(h, activity_id, sku_id, NULL)) == NULL)
		return FLASH_ENOT_FOUND;
	return sku_info(h, s, out);
}
