/*
 * grace.c -- waiting out the operations open now: the reclaimers' grace
 * period (DESIGN.md section 12, "Fixed memory for months").
 *
 * A reclaimer (a table generation moving on, an activity being archived)
 * first makes its change visible -- a new generation number, a catalog
 * entry marked ARCHIVING -- then calls fs_grace().  When that returns
 * FLASH_OK, every operation that was open in another slot at the call has
 * ended (or been recovered, its owner dead), so none of them still holds
 * what was read before the change.  Operations that began later read the
 * change: fs_op_begin publishes its phase with a full barrier (journal.h),
 * so an operation's reads of reclaimable state come after its phase store,
 * and the reclaimer's reads of the phases come after its change (the
 * fence below).  This is RCU's synchronize step with the journals as the
 * readers' announcements; buyers never wait for a reclaimer.
 *
 * Progress: blocking while an operation open at the call is alive and
 * stalled, bounded by @p timeout_ms (then FLASH_EBUSY: try again later).
 * A dead owner's operation is finished by flash_recover here.
 */
#include <sched.h>
#include <time.h>

#include "fs.h"
#include "journal.h"

int fs_grace(flash_t *h, uint32_t timeout_ms)
{
	uint64_t t_end = fs_mono_ms() + timeout_ms;
	uint32_t cap = h->proc_cap, spins = 0;

	ck_pr_fence_memory();   /* the caller's change before the phases we read */
	for (uint32_t s = 0; s < cap; s++) {
		const struct fs_journal *j = &h->jr[s];
		uint64_t tag;

		if ((int)s == h->slot || ck_pr_load_32(&j->phase) == FS_PH_IDLE)
			continue;
		tag = ck_pr_load_64(&j->op_tag);
		while (fs_op_names(j, tag)) {
			if (!fs_proc_alive(h, s, ck_pr_load_64(&h->proc[s].state))) {
				flash_recover(h, NULL);
				continue;
			}
			if (fs_mono_ms() >= t_end)
				return FLASH_EBUSY;
			if (++spins < 64) {
				ck_pr_stall();
			} else {
				struct timespec ts = { 0, 200000 };   /* 0.2 ms */

				nanosleep(&ts, NULL);
			}
		}
	}
	return FLASH_OK;
}
