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
 * Idempotence: an order, cancel, activity or sku already present is
 * FLASH_EEXIST and changes nothing.  A restock has no identity of its own;
 * the WAL's LSN makes its replay exactly-once.
 */
#include "fs.h"

static int replay_one(flash_t *h, const struct flash_record *rec)
{
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
		return flash_activity_add(h, &a);
	}
	case FLASH_REC_SKU:
		if (rec->value < 0)
			return FLASH_EINVAL;
		return flash_sku_add(h, rec->activity_id, rec->sku_id, (uint64_t)rec->value, rec->qty);
	case FLASH_REC_ORDER: {
		struct flash_order_req r = {
			.activity_id = rec->activity_id, .sku_id = rec->sku_id, .user_id = rec->user_id,
			.qty = rec->qty, .request_id = rec->request_id,
		};
		struct flash_order_res res;

		if (rec->order_no == 0 || rec->limit_slot == 0)
			return FLASH_EINVAL;
		if (rec->order_no > h->ord_cap)
			return FLASH_EFULL;
		if (FS_KIND(ck_pr_load_64(&h->ord[rec->order_no - 1].state)) != FS_K_EMPTY)
			return FLASH_EEXIST;
		return fs_order_run(h, &r, &res);
	}
	case FLASH_REC_CANCEL: {
		int rc;

		if (rec->order_no == 0)
			return FLASH_EINVAL;
		rc = fs_cancel_run(h, rec->order_no, NULL);
		return rc == FLASH_ECANCELLED ? FLASH_EEXIST : rc;
	}
	case FLASH_REC_RESTOCK:
		return fs_restock_run(h, rec->activity_id, rec->sku_id, rec->value);
	case FLASH_REC_ARCHIVE:
		return fs_archive_replay(h, rec);
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
