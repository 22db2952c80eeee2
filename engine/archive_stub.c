/* TEMPORARY STUB: replaced by engine/archive.c at merge */
/*
 * archive_stub.c -- the least flash_archive() the persist and tools side
 * needs to be built and tested before the engine's archiving lands: it
 * refuses an activity that has not ended (FLASH_ENOT_ENDED), and otherwise
 * emits one FLASH_REC_ARCHIVE record through the ring, as catalog.c emits
 * its records (a catalog operation under the admin mutex: the record is the
 * commit point, and fs_catalog_repair finishes or forgets a holder that
 * died).  It reclaims nothing: every count of the record and of @p out is 0,
 * and the activity, its skus and orders stay readable; replay (snapshots,
 * --recover) of its record does nothing either.
 */
#include <string.h>

#include "fs.h"
#include "journal.h"

static int archive_locked(flash_t *h, uint32_t activity_id, struct flash_archive_info *out)
{
	const struct fs_act *a = fs_act_find(h, activity_id, NULL);
	struct fs_journal *j = h->j;
	int64_t now = fs_now_ns();

	if (a == NULL)
		return FLASH_ENOT_FOUND;
	if (a->a.end_ns > now)
		return FLASH_ENOT_ENDED;
	if (!fs_ring_space(h))
		return FLASH_EBUSY;
	memset(out, 0, sizeof(*out));
	out->activity_id = activity_id;
	out->archived_lsn = ck_pr_load_64(&h->hdr->wal_lsn);
	fs_op_begin(h, FS_OP_CATALOG);
	memset(&j->rec, 0, sizeof(j->rec));
	j->rec.type = FLASH_REC_ARCHIVE;
	j->rec.activity_id = activity_id;
	j->rec.ts_ns = now;
	fs_commit(h);
	fs_op_end(j);
	return FLASH_OK;
}

int flash_archive(flash_t *h, uint32_t activity_id, uint32_t flags, struct flash_archive_info *out)
{
	struct flash_archive_info tmp;
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (activity_id == 0 || flags != 0)
		return FLASH_EINVAL;
	if ((rc = fs_admin_lock(h)) != FLASH_OK)
		return rc;
	rc = archive_locked(h, activity_id, out ? out : &tmp);
	fs_admin_unlock(h);
	return rc;
}

/*
 * Replay does what the stub did live: nothing in the segment.  An ARCHIVE
 * record of an activity the segment does not know is FLASH_ENOT_FOUND, as
 * for any record that refers to an unknown activity.
 */
int fs_archive_replay(flash_t *h, const struct flash_record *rec)
{
	if (rec->activity_id == 0)
		return FLASH_EINVAL;
	return fs_act_find(h, rec->activity_id, NULL) ? FLASH_OK : FLASH_ENOT_FOUND;
}
