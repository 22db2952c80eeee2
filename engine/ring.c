/*
 * ring.c -- the per-handle record rings: single producer (the handle), single
 * consumer (the daemon, or a tool draining without one).
 *
 * The ring is laid out as ck_ring's SPSC ring (struct ck_ring: c_head and
 * p_tail on lines of their own), its buffer in the segment.  Its size and
 * mask are taken from the validated header, never from struct ck_ring in
 * shared memory: ck_ring_enqueue_spsc() indexes the buffer with the mask
 * stored there, and a scribbled mask would make the producer write outside
 * the buffer -- so publishing does the same two steps (copy the element,
 * store fence, p_tail + 1) with the trusted mask.  Publishing a record is an
 * operation's commit point: recovery asks "did p_tail move past the position
 * the journal recorded?", which only the dead producer could have done.
 *
 * The consumer reads without dequeueing and frees room in two steps.  Once
 * the records are written where its successor will find them (the WAL file,
 * in the page cache: a dead daemon's writes survive it) it calls
 * flash_ring_release(): proc[slot].taken_seq, the authoritative 64-bit count
 * of records taken, then c_head, its low 32 bits -- the producer may reuse
 * the room.  Once they are durable (fdatasync returned) it calls
 * flash_durable_advance(): proc[slot].cons_seq, which sync waiters wait for.
 * So an async producer waits for the consumer's writes, never for its disk.
 * A consumer that dies before releasing loses nothing: its successor reads
 * the records again from taken_seq (and skips what its WAL holds already);
 * records released but not yet durable are in the WAL's page cache, which
 * the successor makes durable when it opens the WAL, and then marks durable
 * (flash_ring_taken() tells it how far).  A consumer without a WAL calls
 * flash_durable_advance() alone, which releases too.
 *
 * Causal order across rings.  What a record announces -- units or a limit
 * slot given back, a new activity or sku, an order that may now be
 * cancelled -- becomes visible to other handles only after the record is
 * published; a handle acting on it publishes its own record later, but in
 * its own ring, which a consumer may well drain first: the WAL would then
 * hold an order before the cancel that freed its limit slot, or a cancel
 * before its order.  Each ring element therefore carries a ticket from the
 * segment-wide counter hdr->tick:
 *
 *   - a "source" (CANCEL, RESTOCK > 0, ACTIVITY, SKU) takes a fresh ticket,
 *     fetch-and-add, before it publishes -- so before anyone sees its effect;
 *   - any other record (ORDER, RESTOCK < 0: decreases, which commute) reads
 *     the counter after its last CAS on shared state, so after every effect
 *     it saw: its ticket exceeds the ticket of every source it depends on;
 *   - a cancel's ticket is at least its order's (the order is ACTIVE only
 *     after its record is published), and sorts after it on a tie.
 *
 * So the key (ticket, source) grows along every chain of cause and effect,
 * and along each ring.  A drain bumps the counter to G, then reads every
 * ring's tail, and takes only elements with ticket < G: those were ticketed
 * before the bump, so whatever they depend on was published before it and
 * lies within the tails read.  It hands them out in key order (a merge of the
 * rings); the rest waits for the next drain.  A ticket taken by a handle
 * killed before publishing is just a number nobody uses.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "journal.h"

/*
 * The rings' geometry is never read back from the segment: the header's
 * region table and struct ck_ring's size and mask live in writable shared
 * memory.  Attach accepted only the region table layout() makes, whose
 * FS_R_RING element is exactly RING_STRIDE bytes, and the handle keeps the
 * checked ring size (h->ring_size), so both are constants of the handle.
 */
#define RING_STRIDE (((uint64_t)sizeof(struct ck_ring) + FS_LINE - 1) & ~(uint64_t)(FS_LINE - 1))

static inline struct ck_ring *ring_of(flash_t *h, uint32_t slot)
{
	return (struct ck_ring *)((char *)h->ring + (uint64_t)slot * RING_STRIDE);
}

static inline struct fs_ringrec *buf_of(flash_t *h, uint32_t slot)
{
	return h->ringbuf + (uint64_t)slot * h->ring_size;
}

/* Room for one more record?  Only the producer fills, so room only grows. */
int fs_ring_space(flash_t *h)
{
	struct ck_ring *r = ring_of(h, (uint32_t)h->slot);

	if (h->replay != NULL)
		return 1;
	unsigned int used = ck_pr_load_uint(&r->p_tail) - ck_pr_load_uint(&r->c_head);

	return used < h->ring_size - 1;
}

/* Room for @p n records at once (a cart's lines: fs_commit_lines). */
int fs_ring_room(flash_t *h, uint32_t n)
{
	struct ck_ring *r = ring_of(h, (uint32_t)h->slot);

	if (h->replay != NULL)
		return 1;
	unsigned int used = ck_pr_load_uint(&r->p_tail) - ck_pr_load_uint(&r->c_head);

	return used + n < h->ring_size;
}

uint32_t fs_ring_pos(flash_t *h)
{
	return ck_pr_load_uint(&ring_of(h, (uint32_t)h->slot)->p_tail);
}

/* Does a record announce something other handles may act on? */
static inline int rec_is_source(const struct flash_record *r)
{
	/* an archive frees order slots a later order takes: drained before it */
	/* a confirm and an expiry too: drained after the reservation they end */
	return r->type == FLASH_REC_CANCEL || r->type == FLASH_REC_ACTIVITY ||
	       r->type == FLASH_REC_CONFIRM || r->type == FLASH_REC_EXPIRE ||
	       r->type == FLASH_REC_SKU || r->type == FLASH_REC_GEN ||
	       r->type == FLASH_REC_ARCHIVE || r->type == FLASH_REC_PRICE ||
	       (r->type == FLASH_REC_RESTOCK && r->value > 0);
}

/*
 * Publish the journal's record at ring position @p p, the producer's own
 * p_tail (loaded once by the caller): ticket, copy, store fence, p_tail + 1.
 * fs_ring_space() said there is room; p_tail is ours alone to move.
 */
static void ring_publish_at(flash_t *h, unsigned int p)
{
	uint32_t slot = (uint32_t)h->slot;
	struct fs_ringrec *e = &buf_of(h, slot)[p & (h->ring_size - 1)];

	e->rec = h->j->rec;
	e->rec.slot = (uint16_t)slot;
	if (rec_is_source(&e->rec)) {
		e->tick = ck_pr_faa_64(&h->hdr->tick, 1);
	} else {
		ck_pr_fence_load();   /* after the loads of this operation's CASes */
		e->tick = ck_pr_load_64(&h->hdr->tick);
	}
	ck_pr_fence_store();
	ck_pr_store_uint(&ring_of(h, slot)->p_tail, p + 1);
}

/*
 * A cart's records (the journal's, line 0, then @p n more) at ring
 * positions p .. p + n, published by ONE p_tail store: the operation's one
 * commit point.  They share one ticket, so the drain's merge keeps them
 * together (and head_key puts a group's rest first when a drain stopped
 * inside it): no other record comes between the lines of one operation.
 */
static void ring_publish_lines_at(flash_t *h, unsigned int p, const struct flash_record *more, uint32_t n)
{
	uint32_t slot = (uint32_t)h->slot;
	uint64_t tick;

	if (rec_is_source(&h->j->rec)) {
		tick = ck_pr_faa_64(&h->hdr->tick, 1);
	} else {
		ck_pr_fence_load();
		tick = ck_pr_load_64(&h->hdr->tick);
	}
	for (uint32_t i = 0; i <= n; i++) {
		struct fs_ringrec *e = &buf_of(h, slot)[(p + i) & (h->ring_size - 1)];

		e->rec = i == 0 ? h->j->rec : more[i - 1];
		e->rec.slot = (uint16_t)slot;
		e->tick = tick;
	}
	ck_pr_fence_store();
	ck_pr_store_uint(&ring_of(h, slot)->p_tail, p + 1 + n);
}

/*
 * The commit point of the operation in the handle's journal.  Normally: note
 * the ring position, phase PUBLISH, publish the record at that position --
 * from the publish on, recovery rolls the operation forward.  The position
 * is loaded once: the journal's ring_pos and the slot the record goes to are
 * the same number.  When re-applying a WAL record (flash_replay) the record
 * is already durable: no new one is emitted, and the decision "forward" is
 * written into the journal instead.
 */
void fs_commit(flash_t *h)
{
	struct fs_journal *j = h->j;
	uint32_t pos;

	if (h->replay != NULL) {
		fs_op_resolve(j, FS_DIR_FWD);
		return;
	}
	pos = fs_ring_pos(h);
	fs_op_publish(j, pos);
	ring_publish_at(h, pos);
}

/* fs_commit for a cart: the journal's record and @p n more, in one step;
 * ring_pos is the first one's position (fs_ring_room said there is room). */
void fs_commit_lines(flash_t *h, const struct flash_record *more, uint32_t n)
{
	struct fs_journal *j = h->j;
	uint32_t pos;

	if (h->replay != NULL) {
		fs_op_resolve(j, FS_DIR_FWD);
		return;
	}
	pos = fs_ring_pos(h);
	fs_op_publish(j, pos);
	ring_publish_lines_at(h, pos, more, n);
}

int fs_ring_published(flash_t *h, uint32_t slot, uint32_t pos)
{
	return ck_pr_load_uint(&ring_of(h, slot)->p_tail) != pos;
}

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/*
 * Sync durability: sleep until the consumer has made the record at ring
 * position @p pos durable (its seq's low 32 bits are pos + 1), at most
 * @p wait_ms.  A relaxed load of the durable mark is enough: the caller
 * reads nothing the consumer wrote but the mark itself, which only grows,
 * and a stale value costs one more round (the futex re-checks it).
 * The clock is read first when a sleep is due, so a record that is durable
 * already costs no clock read.  Past the bound: FLASH_EFATE_UNKNOWN -- the
 * operation is done in memory and its record waits in the ring, so it
 * becomes durable whenever a consumer drains it; only the caller's
 * knowledge of that is cut short.
 */
int fs_sync_wait(flash_t *h, uint32_t pos, uint32_t wait_ms)
{
	uint32_t *w = &h->me->durable_futex;
	uint64_t deadline_ms = 0, now_ms;

	for (;;) {
		uint32_t d = ck_pr_load_32(w);

		if ((int32_t)(d - (pos + 1)) >= 0)
			return FLASH_OK;
		if (ck_pr_load_32(&h->hdr->durability_failed))
			return FLASH_EDURABILITY;
		now_ms = fs_mono_ms();
		if (deadline_ms == 0)
			deadline_ms = now_ms + (wait_ms ? wait_ms : FLASH_SYNC_WAIT_MS_DEFAULT);
		else if (now_ms >= deadline_ms)
			return FLASH_EFATE_UNKNOWN;
		uint64_t left_ms = deadline_ms - now_ms;
		/* wake at least every 50 ms to look at durability_failed */
		const struct timespec tick = { 0, (long)(left_ms < 50 ? left_ms : 50) * 1000 * 1000 };
		/* announce the sleep before re-checking (the futex re-checks *w) */
		ck_pr_inc_32(&h->me->waiters);
		futex(w, FUTEX_WAIT, d, &tick);
		ck_pr_dec_32(&h->me->waiters);
	}
}

/*
 * Acknowledge the operation just committed by this handle: at once in async
 * durability (and when re-applying a WAL record: it is durable already), or
 * once the consumer has made its record durable in sync durability -- at
 * most the handle's wait bound.
 */
int fs_ack(flash_t *h)
{
	if (h->replay != NULL || h->hdr->fx.opts.durability != FLASH_DURABILITY_SYNC)
		return FLASH_OK;
	return fs_sync_wait(h, h->j->ring_pos, h->sync_wait_ms);
}

/* fs_ack for an operation that published @p n records (fs_commit_lines):
 * the last one's durability. */
int fs_ack_n(flash_t *h, uint32_t n)
{
	if (h->replay != NULL || h->hdr->fx.opts.durability != FLASH_DURABILITY_SYNC)
		return FLASH_OK;
	return fs_sync_wait(h, h->j->ring_pos + n - 1, h->sync_wait_ms);
}

int flash_sync_wait_set(flash_t *h, uint32_t wait_ms)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (wait_ms == 0)
		return FLASH_EINVAL;
	h->sync_wait_ms = wait_ms;
	return FLASH_OK;
}

int flash_durable_wait(flash_t *h, uint64_t lsn, uint32_t wait_ms)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (lsn == 0 || wait_ms == 0)
		return FLASH_EINVAL;
	/* res->lsn is the ring position + 1; positions wrap at 32 bits */
	return fs_sync_wait(h, (uint32_t)(lsn - 1), wait_ms);
}

/*
 * The last record this handle published is at p_tail - 1 (only this handle
 * moves p_tail, so the load reads its own last store), and the consumer
 * marks each ring in order: that record durable means all of them are.
 * Nothing published (p_tail 0) waits for position -1, which any durable
 * mark covers (pos + 1 wraps to 0).
 */
int flash_durable_wait_all(flash_t *h, uint32_t wait_ms)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (wait_ms == 0)
		return FLASH_EINVAL;
	return fs_sync_wait(h, fs_ring_pos(h) - 1, wait_ms);
}

/*
 * Where a consumer of @p slot starts: after the records taken (released)
 * by its predecessor, or after the durable ones when taken_seq is behind
 * them (a segment whose consumers never released) or is not a position of
 * the ring (past the tail or more than a ring behind it: a scribble; the
 * durable mark is then used).  Released records may be any number ahead
 * of the durable ones: their room came back at the write, and a slow disk
 * lets the producer and the drain run on.
 */
static uint64_t ring_taken(flash_t *h, uint32_t slot)
{
	uint64_t cons = ck_pr_load_64(&h->proc[slot].cons_seq);
	uint64_t taken = ck_pr_load_64(&h->proc[slot].taken_seq);
	unsigned int tail = ck_pr_load_uint(&ring_of(h, slot)->p_tail);

	if (taken > cons && (unsigned int)(tail - (unsigned int)taken) <= h->ring_size)
		return taken;
	return cons;
}

int flash_ring_taken(flash_t *h, uint32_t slot, uint64_t *durable, uint64_t *taken)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (slot >= h->proc_cap || durable == NULL || taken == NULL)
		return FLASH_EINVAL;
	*durable = ck_pr_load_64(&h->proc[slot].cons_seq);
	*taken = ring_taken(h, slot);
	return FLASH_OK;
}

/*
 * Each slot's p_tail is read once; the wait ends when every slot's durable
 * mark has reached what was read.  Marks and positions only grow (a slot
 * keeps both across owners), so a record published later never delays it.
 * A poll every millisecond, not a futex: the durable_futex waiters count
 * belongs to each slot's own handles (the consumer wakes only those).
 */
int flash_durable_wait_every(flash_t *h, uint32_t wait_ms)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (wait_ms == 0)
		return FLASH_EINVAL;
	uint64_t deadline_ms = fs_mono_ms() + wait_ms;
	for (uint32_t slot = 0; slot < h->proc_cap; slot++) {
		uint32_t want = ck_pr_load_uint(&ring_of(h, slot)->p_tail);

		while ((int32_t)(ck_pr_load_32(&h->proc[slot].durable_futex) - want) < 0) {
			if (ck_pr_load_32(&h->hdr->durability_failed))
				return FLASH_EDURABILITY;
			if (fs_mono_ms() >= deadline_ms)
				return FLASH_EFATE_UNKNOWN;
			const struct timespec ms = { 0, 1000 * 1000 };
			nanosleep(&ms, NULL);
		}
	}
	return FLASH_OK;
}

/* The merge key of @p slot's next element: its ticket, then sources after
 * the rest; UINT64_MAX when it was ticketed at or after @p g. */
static inline uint64_t head_key(flash_t *h, uint32_t slot, uint64_t g)
{
	const struct fs_ringrec *e = &buf_of(h, slot)[(uint32_t)h->cursor[slot] & (h->ring_size - 1)];
	uint64_t t = ck_pr_load_64(&e->tick);

	/* the rest of a cart's lines whose first ones were taken (a drain
	 * stopped inside the group): first, so nothing comes between them */
	if (__builtin_expect((e->rec.flags & FLASH_REC_F_CART) != 0, 0) && fs_rec_is_line(&e->rec) &&
	    FLASH_REC_LINE(e->rec.flags) != 0)
		return t >= g ? UINT64_MAX : 0;
	return t >= g ? UINT64_MAX : (t << 1) | (uint64_t)rec_is_source(&e->rec);
}

/*
 * One drain: the causal merge of the rings described at the top of this
 * file.  h->dlive holds the slots still to take from; a slot leaves it when
 * its ring is empty up to the tail read, or its head is ticketed too late.
 */
int flash_ring_drain(flash_t *h, flash_record_fn fn, void *arg, uint32_t max, uint32_t *drained)
{
	uint32_t total = 0, nlive = 0;
	uint64_t g;
	int rc;

	if (drained)
		*drained = 0;
	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (fn == NULL)
		return FLASH_EINVAL;
	/*
	 * One consumer per segment: a live claim that is not ours refuses the
	 * drain before it writes anything (cursor set-up, c_head, the tick).
	 * One relaxed load of the claim word; the holder (the daemon draining)
	 * and a segment nobody claimed (0: a tool or test draining) stop there.
	 * Relaxed is enough: the check keeps a drain away from a running daemon,
	 * it is not a lock -- a claim taken just after the load meets a drain
	 * that had already started, the case flash_ring_drain's contract covers
	 * (a record may reach both; nothing in the segment is corrupted).
	 */
	uint64_t claim = ck_pr_load_64(&h->hdr->consumer);
	if (claim != 0 && claim != FS_CONSUMER(h->gen, (uint32_t)h->slot)) {
		int32_t pid;

		if (fs_consumer_live(h, claim, &pid))
			return FLASH_EBUSY;
	}
	if (h->cursor == NULL) {
		h->cursor = calloc(h->proc_cap, sizeof(*h->cursor));
		h->dtail = calloc(h->proc_cap, sizeof(*h->dtail));
		h->dlive = calloc(h->proc_cap, sizeof(*h->dlive));
		if (h->cursor == NULL || h->dtail == NULL || h->dlive == NULL) {
			free(h->cursor);
			free(h->dtail);
			free(h->dlive);
			h->cursor = NULL;
			h->dtail = h->dlive = NULL;
			return FLASH_ENOMEM;
		}
		for (uint32_t s = 0; s < h->proc_cap; s++) {
			h->cursor[s] = ring_taken(h, s);
			ck_pr_store_uint(&ring_of(h, s)->c_head, (unsigned int)h->cursor[s]);
		}
	}
	/* bump first, then read the tails: see the top of this file */
	g = ck_pr_faa_64(&h->hdr->tick, 1) + 1;
	ck_pr_fence_memory();
	for (uint32_t s = 0; s < h->proc_cap; s++) {
		h->dtail[s] = ck_pr_load_uint(&ring_of(h, s)->p_tail);
		if ((uint32_t)h->cursor[s] != h->dtail[s])
			h->dlive[nlive++] = s;
	}
	ck_pr_fence_load();
	while (total < max && nlive > 0) {
		uint64_t best_key = UINT64_MAX, next_key = UINT64_MAX;
		uint32_t best_i = 0;
		int stop = 0;

		/* the ring with the least head, and the least head of the others */
		for (uint32_t i = 0; i < nlive; i++) {
			uint64_t k = head_key(h, h->dlive[i], g);

			if (k == UINT64_MAX) {  /* ticketed after the bump: next drain */
				h->dlive[i--] = h->dlive[--nlive];
				continue;
			}
			if (k < best_key) {
				next_key = best_key;
				best_key = k;
				best_i = i;
			} else if (k < next_key) {
				next_key = k;
			}
		}
		if (best_key == UINT64_MAX)
			break;
		/* take from it while its head is no later than the others' least
		 * (equal keys in two rings are not causally related) */
		uint32_t s = h->dlive[best_i];
		uint64_t k;

		do {
			struct flash_record rec = buf_of(h, s)[(uint32_t)h->cursor[s] & (h->ring_size - 1)].rec;
			uint64_t seq = ++h->cursor[s];

			total++;
			if (fn(arg, &rec, seq) != 0)
				stop = 1;
		} while (!stop && total < max && (uint32_t)h->cursor[s] != h->dtail[s] &&
		         (k = head_key(h, s, g)) != UINT64_MAX && k <= next_key);
		if ((uint32_t)h->cursor[s] == h->dtail[s])
			h->dlive[best_i] = h->dlive[--nlive];
		if (stop)
			break;
	}
	if (drained)
		*drained = total;
	return FLASH_OK;
}

/* taken_seq, then c_head (the producer's view of the room), forward only */
static void ring_take(flash_t *h, uint32_t slot, uint64_t seq)
{
	struct fs_proc *p = &h->proc[slot];

	if (seq <= ck_pr_load_64(&p->taken_seq))
		return;
	ck_pr_store_64(&p->taken_seq, seq);
	ck_pr_fence_store();
	ck_pr_store_uint(&ring_of(h, slot)->c_head, (unsigned int)seq);
}

/*
 * @p seq may be marked for @p slot: not before the durable mark, and either
 * released already or a position of the ring (at most the tail, at most a
 * ring past the released ones).
 */
static int ring_seq_ok(flash_t *h, uint32_t slot, uint64_t seq)
{
	uint64_t taken = ck_pr_load_64(&h->proc[slot].taken_seq);

	if (seq < ck_pr_load_64(&h->proc[slot].cons_seq))
		return 0;
	if (seq <= taken)
		return 1;
	return seq - taken <= h->ring_size &&
	       (unsigned int)(ck_pr_load_uint(&ring_of(h, slot)->p_tail) - (unsigned int)seq) <= h->ring_size;
}

int flash_ring_release(flash_t *h, uint32_t slot, uint64_t seq)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (slot >= h->proc_cap || !ring_seq_ok(h, slot, seq))
		return FLASH_EINVAL;
	ring_take(h, slot, seq);
	return FLASH_OK;
}

int flash_durable_advance(flash_t *h, uint32_t slot, uint64_t seq)
{
	struct fs_proc *p;
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (slot >= h->proc_cap)
		return FLASH_EINVAL;
	p = &h->proc[slot];
	if (!ring_seq_ok(h, slot, seq))
		return FLASH_EINVAL;
	ck_pr_store_64(&p->cons_seq, seq);
	ring_take(h, slot, seq);
	ck_pr_store_32(&p->durable_futex, (uint32_t)seq);
	ck_pr_fence_memory();   /* store durable_futex before reading waiters */
	if (ck_pr_load_32(&p->waiters) != 0)
		futex(&p->durable_futex, FUTEX_WAKE, INT32_MAX, NULL);
	return FLASH_OK;
}

int flash_durability_fail(flash_t *h)
{
	return flash_durability_fail_why(h, FLASH_WAL_STEP_UNKNOWN, 0);
}

/*
 * The reason first, a store fence, then the flag: a reader that loads the
 * flag set (flash_durability_get: load, load fence, reason) reads the
 * reason that goes with it.  While the flag is set the reason is left as it
 * is -- the first failure is the cause.  The waiters are woken every time:
 * a sleeping sync buyer must look at the flag now, not at its next tick.
 */
int flash_durability_fail_why(flash_t *h, uint32_t step, int err)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (step > FLASH_WAL_STEP_FILE)
		return FLASH_EINVAL;
	if (ck_pr_load_32(&h->hdr->durability_failed) == 0) {
		ck_pr_store_64((uint64_t *)&h->hdr->dur_fail_ns, (uint64_t)fs_now_ns());
		ck_pr_store_32(&h->hdr->dur_fail_step, step);
		ck_pr_store_32((uint32_t *)&h->hdr->dur_fail_err, (uint32_t)err);
		ck_pr_fence_store();
		ck_pr_store_32(&h->hdr->durability_failed, 1);
	}
	for (uint32_t s = 0; s < h->proc_cap; s++)
		futex(&h->proc[s].durable_futex, FUTEX_WAKE, INT32_MAX, NULL);
	return FLASH_OK;
}

int flash_durability_get(flash_t *h, struct flash_durability_info *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	memset(out, 0, sizeof(*out));
	if (ck_pr_load_32(&h->hdr->durability_failed) == 0)
		return FLASH_OK;
	ck_pr_fence_load();   /* the reason was stored before the flag */
	out->failed = 1;
	out->when_ns = (int64_t)ck_pr_load_64((const uint64_t *)&h->hdr->dur_fail_ns);
	out->step = ck_pr_load_32(&h->hdr->dur_fail_step);
	out->err = (int32_t)ck_pr_load_32((const uint32_t *)&h->hdr->dur_fail_err);
	if (out->step > FLASH_WAL_STEP_FILE)   /* a scribbled word says nothing */
		out->step = FLASH_WAL_STEP_UNKNOWN;
	return FLASH_OK;
}

/*
 * One store: the order path reads the flag alone (order.c, fs_sync_wait),
 * and what makes clearing safe -- a WAL proven whole and open -- is the
 * caller's, done before the call.  The claim check keeps any other handle
 * from ending a failure its daemon has not dealt with.
 */
int flash_durability_clear(flash_t *h)
{
	int rc;

	if ((rc = fs_enter(h, 1)) != FLASH_OK)
		return rc;
	if (ck_pr_load_64(&h->hdr->consumer) != FS_CONSUMER(h->gen, (uint32_t)h->slot))
		return FLASH_EBUSY;
	ck_pr_store_32(&h->hdr->durability_failed, 0);
	return FLASH_OK;
}

/*
 * A reader's view of the segment's activity (flashstock.h).  Relaxed loads
 * summed slot by slot, then a load fence: a caller that reads the segment
 * between two calls and finds both quiet and equal has read a state no
 * operation touched, because every operation raises its slot's seq before
 * its first shared change (fs_op_begin: seq store, store fence, phase RUN),
 * and that change is a CAS -- a full barrier -- so a change seen by the
 * reader implies the seq raise is visible to the reader's second call.
 */
int flash_quiet_get(flash_t *h, struct flash_quiet *out)
{
	int rc;

	if ((rc = fs_enter(h, 0)) != FLASH_OK)
		return rc;
	if (out == NULL)
		return FLASH_EINVAL;
	memset(out, 0, sizeof(*out));
	ck_pr_fence_load();
	for (uint32_t i = 0; i < h->proc_cap; i++) {
		struct ck_ring *r = ring_of(h, i);
		uint64_t cons = ck_pr_load_64(&h->proc[i].cons_seq);
		unsigned int used = ck_pr_load_uint(&r->p_tail) - (unsigned int)cons;

		out->ops += ck_pr_load_64(&h->proc[i].seq);
		out->consumed += cons;
		out->pending += used;   /* published, not yet durable */
		if (ck_pr_load_32(&h->jr[i].phase) != FS_PH_IDLE)
			out->in_flight++;
	}
	ck_pr_fence_load();
	return FLASH_OK;
}
