/*
 * stats.c -- the statistics reader (flash_stats_get): each slot's counters
 * summed, the tables' fill and capacities.  Relaxed loads, each counter
 * on its own: a reader's view, not one instant of the whole segment.
 */
#include "fs.h"

int flash_stats_get(flash_t *h, struct flash_stats *out)
{
	const struct flash_seg_opts *o;
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	memset(out, 0, sizeof(*out));
	o = &h->hdr->fx.opts;
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		const struct fs_stats_slot *s = &h->proc[i].st;

		out->orders += ck_pr_load_64(&s->orders);
		out->cancels += ck_pr_load_64(&s->cancels);
		out->sold_out += ck_pr_load_64(&s->sold_out);
		out->limit_hits += ck_pr_load_64(&s->limit_hits);
		out->token_rejects += ck_pr_load_64(&s->token_rejects);
		out->duplicates += ck_pr_load_64(&s->duplicates);
		out->cas_retries += ck_pr_load_64(&s->cas_retries);
		out->recoveries += ck_pr_load_64(&s->recoveries);
		out->rolled_back += ck_pr_load_64(&s->rolled_back);
		out->rolled_forward += ck_pr_load_64(&s->rolled_forward);
		out->confirms += ck_pr_load_64(&s->confirms);
		out->expiries += ck_pr_load_64(&s->expiries);
		if (FS_PKIND(ck_pr_load_64(&h->proc[i].state)) != FS_P_FREE)
			out->procs++;
	}
	out->activities = ck_pr_load_32(&h->hdr->n_act);
	out->activities_cap = o->max_activities;
	out->skus = ck_pr_load_32(&h->hdr->n_sku);
	out->skus_cap = o->max_skus;
	out->shards = ck_pr_load_32(&h->hdr->n_shard);
	out->shards_cap = o->max_shards;
	/* keyed tables: every bank's keys, against every bank's room (gen.c) */
	for (uint32_t b = 0; b < h->gen_banks; b++) {
		out->users += (uint32_t)ck_pr_load_64(&fs_kt_fill(h, FS_KT_USER, b)->value);
		out->requests += (uint32_t)ck_pr_load_64(&fs_kt_fill(h, FS_KT_REQ, b)->value);
	}
	out->users_cap = o->max_users * h->gen_banks;
	{
		uint64_t now = fs_mono_ms();

		for (uint32_t i = 0; i <= h->tok_mask; i++)
			if (FS_KIND(ck_pr_load_64(&h->tok[i].state)) == FS_K_FREE &&
			    ck_pr_load_64(&h->tok[i].expiry_ms) > now)
				out->tokens++;
	}
	out->tokens_cap = o->max_tokens;
	out->requests_cap = o->max_requests * h->gen_banks;
	out->locks = ck_pr_load_32(&h->hdr->locks_used);
	out->locks_cap = o->max_locks;
	out->procs_cap = o->max_procs;
	/* numbers taken (box byte off), at most the table: numbers grow past
	 * it once archived slots are reused (order.c) */
	out->orders_used = flash_orders_max(h) & FS_ONO_MASK;
	if (out->orders_used > o->max_orders)
		out->orders_used = o->max_orders;
	out->orders_cap = o->max_orders;
	out->segment_bytes = h->size;
	out->durability = o->durability;
	return FLASH_OK;
}
