/*
 * recover.c -- finishing the operations of dead handles.
 *
 * A slot whose process died (its identity -- pid plus start time -- no longer
 * runs) is claimed by one recoverer with a 16-byte CAS to RECOVERING(recoverer
 * pid, recoverer start time): fs_proc_take_dead() (segment.c), so a recoverer
 * that dies is judged as any other holder, also after its pid is reused.
 * The recoverer reads the dead slot's journal and:
 *
 *   phase RUN, or PUBLISH with the record not in the ring  -> roll back
 *   phase PUBLISH with the record in the ring              -> roll forward
 *
 * Before acting it resolves every intent whose outcome is unknown (done = 0)
 * and writes the decision into the journal, then records its own decision
 * (phase RESOLVED + the direction), so a recoverer that dies half-way is
 * finished by the next one: every step is a CAS from a state that names the
 * dead operation's tag, or an intent that is marked done once applied.
 *
 * Crash points: "recover" 1..4.
 */
#include <unistd.h>

#include "fs.h"
#include "journal.h"


static void stat_inc(flash_t *h, int what)
{
	if (h->me == NULL)
		return;
	if (what == 0)
		fs_stat_inc(&h->me->st.recoveries);
	else if (what == 1)
		fs_stat_inc(&h->me->st.rolled_back);
	else
		fs_stat_inc(&h->me->st.rolled_forward);
}

/* Finish the dead slot's operation and free the slot. */
static void recover_slot(flash_t *h, uint32_t slot)
{
	struct fs_journal *j = &h->jr[slot];
	uint32_t phase;

	/* a catalog writer that died inside the admin mutex is repaired by the
	 * mutex's next owner; taking it here makes that happen now */
	if (fs_admin_lock(h) == FLASH_OK) {
		if (j->op == FS_OP_CATALOG || j->op == FS_OP_ARCHIVE)
			fs_catalog_repair(h, slot);
		fs_admin_unlock(h);
	}
	phase = ck_pr_load_32(&j->phase);
	if (phase == FS_PH_IDLE || j->op == FS_OP_CATALOG || j->op == FS_OP_ARCHIVE)
		goto done;
	if (j->op == FS_OP_TOKEN || j->op == FS_OP_TOKEN_RETIRE) {
		fs_intents_resolve(h, j, slot);
		FS_CRASH("recover", 5);
		fs_token_recover(h, j, slot);
		goto done;
	}
	if (phase != FS_PH_RESOLVED) {
		uint32_t dir = (phase == FS_PH_PUBLISH && fs_ring_published(h, slot, j->ring_pos))
		                   ? FS_DIR_FWD : FS_DIR_BACK;

		fs_intents_resolve(h, j, slot);
		j->dir = dir;
		FS_CRASH("recover", 1);
		ck_pr_fence_store();
		ck_pr_store_32(&j->phase, FS_PH_RESOLVED);
	} else {
		/* a recoverer died after resolving: intents it added are unknown */
		fs_intents_resolve(h, j, slot);
	}
	FS_CRASH("recover", 2);
	if (j->dir == FS_DIR_FWD) {
		if (j->op == FS_OP_ORDER || j->op == FS_OP_CART)
			fs_op_finish_order(h, j, slot);
		else if (j->op == FS_OP_CANCEL)
			fs_op_finish_cancel(h, j, slot);
		else if (j->op == FS_OP_CONFIRM)
			fs_op_finish_confirm(h, j, slot);
		else if (j->op == FS_OP_RESTOCK)
			fs_op_finish_restock(h, j, slot);
		else if (j->op == FS_OP_RECLAIM)
			fs_gen_finish(h, j, slot);
		stat_inc(h, 2);
	} else {
		/* a refusal the owner had decided is finished as the owner would
		 * have; anything else is rolled back as a crash */
		fs_op_rollback(h, j, slot, !ck_pr_load_32(&j->owner_undo));
		stat_inc(h, 1);
	}
	FS_CRASH("recover", 3);
done:
	fs_op_end(j);
	FS_CRASH("recover", 4);
	{
		uint64_t s = ck_pr_load_64(&h->proc[slot].state);

		/* a waiter killed asleep in fs_sync_wait left itself counted: the
		 * consumer would wake the slot's futex on every advance for nobody.
		 * The owner is dead, so nobody else writes the count; the store
		 * fence orders it before FREE, which the next owner's claim reads. */
		ck_pr_store_32(&h->proc[slot].waiters, 0);
		ck_pr_fence_store();
		ck_pr_store_64(&h->proc[slot].state, FS_PSTATE(FS_P_FREE, FS_PGEN(s), 0));
	}
	stat_inc(h, 0);
}

int flash_recover(flash_t *h, uint32_t *recovered)
{
	uint32_t n = 0;
	int rc;

	if (recovered)
		*recovered = 0;
	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		if ((int)i == h->slot)
			continue;
		if (!fs_proc_take_dead(h, i))
			continue;
		recover_slot(h, i);
		n++;
	}
	if (recovered)
		*recovered = n;
	return FLASH_OK;
}
