/*
 * replay.c -- re-applying WAL records to a segment (rebuild after reboot).
 *
 * Each record runs through the same code as the live operation, with
 * h->replay set: no token and no window check (both were checked when the
 * operation was first made), the order keeps its number, limit slot and
 * business day, and the commit point writes "forward" into the journal
 * instead of emitting a record (it is in the WAL already).  So a replay
 * interrupted by a crash is recovered like any other operation.
 *
 * Idempotence: an order, cancel, confirm, expiry, activity or sku already present is
 * FLASH_EEXIST and changes nothing, as are terms (ACTIVITY flags 1, PRICE)
 * whose version the entry has reached already, as is an archive of an activity no
 * longer there, and an order or cancel whose slot holds a later number or
 * was archived.  An ACTIVITY or SKU record of an activity archived since
 * is FLASH_EEXIST too: the segment remembers archived ids (archive.c).  A
 * restock has no identity of its own; the WAL's LSN makes its replay
 * exactly-once.
 */
#include "fs.h"

/*
 * A cart's records -- one per line, together in the WAL (ring.c) -- are
 * gathered until its last line, then applied as the one operation they
 * are, with line 0 standing for the record.  FS_EGATHERED: the last came;
 * FLASH_OK: a line kept for the rest.  A cart whose last line never came
 * (a WAL cut inside it) is never applied: it was not acknowledged.  Lines
 * without their first (a snapshot taken with the cart in it, its first
 * lines at or before the snapshot's LSN): FLASH_EEXIST if the cart is
 * there.
 */
#define FS_EGATHERED (-98)

/* Order @p order_no's slot (order.c) holds a later number, or this one
 * (placed, or archived: not rolled back): it was re-applied already. */
static int replay_present(flash_t *h, uint64_t order_no)
{
	const struct fs_order *o = &h->ord[((order_no & FS_ONO_MASK) - 1) % h->ord_cap];
	uint64_t s = ck_pr_load_64(&o->state), held = ck_pr_load_64(&o->order_no);

	return held > order_no || (held == order_no && FS_KIND(s) != FS_K_EMPTY && s != FS_MK(FS_K_FREE, 1));
}

static int replay_gather(flash_t *h, const struct flash_record *rec)
{
	uint32_t i = FLASH_REC_LINE(rec->flags);

	if ((rec->order_no & FS_ONO_MASK) == 0)
		return FLASH_EINVAL;
	if (i == 0)
		h->rp_lines = 0;
	else if (h->rp_lines != i || h->rp_line[0].order_no != rec->order_no ||
	         h->rp_line[0].type != rec->type) {
		h->rp_lines = 0;
		return replay_present(h, rec->order_no) ? FLASH_EEXIST : FLASH_EINVAL;
	}
	h->rp_line[i] = *rec;
	h->rp_lines = i + 1;
	return (rec->flags & FLASH_REC_F_LAST) ? FS_EGATHERED : FLASH_OK;
}

/* The gathered cart placed again (fs_cart_run, h->replay its line 0). */
static int replay_cart(flash_t *h)
{
	struct flash_cart_req c;
	struct flash_cart_res res;
	const struct flash_record *r0 = &h->rp_line[0];

	memset(&c, 0, sizeof(c));
	c.activity_id = r0->activity_id;
	c.lines = h->rp_lines;
	c.user_id = r0->user_id;
	c.reserve_ms = r0->value != 0;
	c.request_id = r0->request_id;
	for (uint32_t i = 0; i < h->rp_lines; i++) {
		if (h->rp_line[i].activity_id != r0->activity_id || h->rp_line[i].user_id != r0->user_id)
			return FLASH_EINVAL;
		c.line[i].sku_id = h->rp_line[i].sku_id;
		c.line[i].qty = h->rp_line[i].qty;
	}
	return fs_cart_run(h, &c, &res);
}

static int replay_one(flash_t *h, const struct flash_record *rec)
{
	if ((rec->flags & FLASH_REC_F_CART) && fs_rec_is_line(rec)) {
		int rc = replay_gather(h, rec);

		if (rc != FS_EGATHERED)
			return rc;
		rec = h->replay = &h->rp_line[0];   /* the cart's operation, once */
	}
	switch (rec->type) {
	case FLASH_REC_ACTIVITY: {
		struct flash_activity a = {
			.id = rec->activity_id,
			.limit_per_user = rec->biz_day & 0xff,
			.scope = (rec->biz_day >> 8) & 0xff,
			.flags = rec->biz_day >> 16,
			.max_qty = rec->limit_slot,
			.day_offset_s = (int32_t)(int64_t)rec->request_id,
			.start_ns = rec->value,
			.end_ns = rec->ts_ns,
		};
		/* new terms (flags 1): applied once, by their version */
		return (rec->flags & 1u) ? flash_activity_update(h, &a, NULL) : flash_activity_add(h, &a);
	}
	case FLASH_REC_SKU:
		if (rec->value < 0)
			return FLASH_EINVAL;
		return flash_sku_add(h, rec->activity_id, rec->sku_id, (uint64_t)rec->value, rec->qty);
	case FLASH_REC_PRICE:
		if (rec->value < 0)
			return FLASH_EINVAL;
		return flash_sku_price_set(h, rec->activity_id, rec->sku_id, (uint64_t)rec->value, NULL);
	case FLASH_REC_ORDER: {
		struct flash_order_req r = {
			.activity_id = rec->activity_id, .sku_id = rec->sku_id, .user_id = rec->user_id,
			.qty = rec->qty, .request_id = rec->request_id,
			/* a reservation: its pay-by time is the record's (order.c) */
			.reserve_ms = rec->value != 0,
		};
		struct flash_order_res res;

		if ((rec->order_no & FS_ONO_MASK) == 0 || rec->limit_slot == 0 || rec->value < 0 ||
		    (uint64_t)rec->value / 1000000u >= (1ull << 60))
			return FLASH_EINVAL;
		{
			/* another box's number cannot be this segment's: placed, it
			 * would move the allocator into that box and leave the
			 * segment's own orders unfindable (ono_find).  A segment
			 * that has numbered nothing (order_next 1: box 0, fresh)
			 * takes the box of its first number, as a rebuild must */
			uint64_t top = ck_pr_load_64(&h->hdr->order_next);

			if (top != 1 && FS_ONO_BOX(rec->order_no) != FS_ONO_BOX(top))
				return FLASH_EINVAL;
			/* nor one the allocator never issues (order.c: the end of
			 * a box's counter): after it the counter is the next box's */
			if ((rec->order_no & FS_ONO_MASK) >= FS_ONO_MASK - FS_ORDER_CHUNK)
				return FLASH_EINVAL;
		}
		if (replay_present(h, rec->order_no))
			return FLASH_EEXIST;
		if (rec->flags & FLASH_REC_F_CART)
			return replay_cart(h);
		return fs_order_run(h, &r, &res);
	}
	case FLASH_REC_CANCEL: {
		int rc;

		if (rec->order_no == 0)
			return FLASH_EINVAL;
		rc = fs_cancel_run(h, rec->order_no, NULL);
		/* cancelled, or archived since (after its cancel): applied */
		return rc == FLASH_ECANCELLED || rc == FLASH_EARCHIVED ? FLASH_EEXIST : rc;
	}
	case FLASH_REC_EXPIRE: {
		int rc;

		if (rec->order_no == 0)
			return FLASH_EINVAL;
		rc = fs_expire_run(h, rec->order_no, NULL);
		return rc == FLASH_EEXPIRED || rc == FLASH_EARCHIVED ? FLASH_EEXIST : rc;
	}
	case FLASH_REC_CONFIRM: {
		int rc;

		if (rec->order_no == 0)
			return FLASH_EINVAL;
		rc = fs_confirm_run(h, rec->order_no);
		/* confirmed, or cancelled or archived since (after its confirm) */
		return rc == FLASH_ECANCELLED || rc == FLASH_EARCHIVED ? FLASH_EEXIST : rc;
	}
	case FLASH_REC_RESTOCK:
		return fs_restock_run(h, rec->activity_id, rec->sku_id, rec->value);
	case FLASH_REC_GEN:
		return fs_gen_replay(h, rec);
	case FLASH_REC_ARCHIVE:
		/* archived already: FLASH_EEXIST (archive.c) */
		return rec->activity_id == 0 ? FLASH_EINVAL : fs_archive_run(h, rec->activity_id, NULL);
	default:
		return FLASH_EINVAL;
	}
}

int flash_replay(flash_t *h, const struct flash_record *rec)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (rec == NULL)
		return FLASH_EINVAL;
	h->replay = rec;
	rc = replay_one(h, rec);
	h->replay = NULL;
	return rc;
}
