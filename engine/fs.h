/*
 * fs.h -- the engine's internal layout: the shared-memory segment, its
 * regions, the tagged words every shared change goes through, and the handle.
 *
 * Divisions:
 *   1. Tags and state words      who made a change, encoded in the word it changed
 *   2. The segment header        immutable part (checksummed) + mutable counters
 *   3. Regions                   catalog, stock shards, keyed tables, orders,
 *                                locks, process table, journals, rings
 *   4. The handle                process-local view of one attachment
 *   5. Observation               per-handle latency histograms and result counts
 *   6. Internal functions        one group per engine file (the journal's:
 *                                journal.h)
 *
 * Everything in the segment is addressed by offset or index: processes map it
 * at different addresses.  An index read from the segment is loaded once into
 * a local, bounds-checked, then used.
 */
#ifndef FLASH_FS_H
#define FLASH_FS_H

#ifdef FLASH_API_LAYER
#error "api/ includes the public header only; engine/fs.h is the engine's (no api <-> engine cycle)"
#endif

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <ck_pr.h>
#include <ck_ring.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "flashstock.h"
#include "flashstock_consumer.h"

#define FS_LINE 64
#define FS_ALIGNED __attribute__((aligned(FS_LINE)))

#define FS_MAGIC          0x4b434f5453485346ull /* "FSHSTOCK" */
#define FS_LAYOUT_VERSION 12u  /* 12: carts (fs_journal.cart_n, FS_K_LINE) */
#define FS_MAX_PROCS      4095u   /* slot numbers fit 12 bits */
#define FS_MAX_INTENTS    40u     /* stock changes journaled per operation */
#define FS_ORDER_CHUNK    64u     /* order numbers a handle takes at a time */
#define FS_GEN_BANKS      3u      /* generation banks of a windowed keyed table (gen.c) */
#define FS_ORDER_SKIP     64u     /* numbers an order may skip over held slots */

/*
 * Order numbers (order.c): bits 63..56 the segment's box id, bits 55..0 a
 * counter that grows forever.  Number n lives in order-table slot
 * ((n & FS_ONO_MASK) - 1) % max_orders; its lap is ((n & FS_ONO_MASK) - 1) /
 * max_orders.  Request-table answers keep the low FS_ONO_REQ_BITS bits.
 */
#define FS_ONO_MASK       ((1ull << 56) - 1)
#define FS_ONO_BOX(n)     ((uint32_t)((n) >> 56))
#define FS_ONO_REQ_BITS   44

/* ------------------------------------------------------------------------
 * 1. Tags and state words
 *
 * A tag names one operation of one handle: slot (12 bits) and that slot's
 * sequence number (48 bits).  Sequence numbers grow forever per slot, across
 * handles that reuse the slot, so a tag is never issued twice.
 *
 * Keyed-table entries, orders and tokens hold a 64-bit state word: the kind
 * in the top 4 bits, and either a tag (while an operation holds it) or a
 * value (once committed).
 * ------------------------------------------------------------------------ */

#define FS_SEQ_BITS 48
#define FS_SEQ_MASK ((1ull << FS_SEQ_BITS) - 1)
#define FS_TAG(slot, seq) (((uint64_t)(slot) << FS_SEQ_BITS) | ((seq) & FS_SEQ_MASK))
#define FS_TAG_SLOT(t) ((uint32_t)(((t) >> FS_SEQ_BITS) & 0xfffu))
#define FS_TAG_SEQ(t) ((t) & FS_SEQ_MASK)

enum fs_kind {
	FS_K_EMPTY = 0,  /* never used: ends a probe chain */
	FS_K_BUSY  = 1,  /* key being written: by tag (tokens), or by slot + key
	                    fingerprint (keyed tables: FS_KT_BUSY) */
	FS_K_FREE  = 2,  /* keyed, nobody holds it (user/request), or LIVE token */
	FS_K_PEND  = 3,  /* held by the in-flight operation tag */
	FS_K_DONE  = 4,  /* committed; low 60 bits are a value */
	FS_K_USED  = 5,  /* token used up; USED(tag): by tag, whose journal may still
	                    give it back (token.c); reclaimable once that is closed */
	FS_K_ACTIVE = 6, /* order active; FREE(0): an order slot whose order was
	                    archived, FREE(1): one whose placing was rolled back */
	FS_K_CANCELLED = 7, /* order cancelled */
	FS_K_RESERVED = 8, /* order reserved, not paid: low 60 bits its pay-by time
	                      (CLOCK_REALTIME ms) */
	FS_K_EXPIRED = 9,  /* reservation expired unpaid: low 60 bits the same */
	FS_K_LINE = 10     /* an order slot holding line i >= 1 of a cart (order.c):
	                      low 60 bits FS_LINE_VAL(i, lines); the cart is the
	                      slot's number - i, its state is the cart's */
};

#define FS_LINE_VAL(i, n) ((uint64_t)(i) | (uint64_t)(n) << 8)
#define FS_LINE_I(v) ((uint32_t)((v) & 0xffu))
#define FS_LINE_N(v) ((uint32_t)(((v) >> 8) & 0xffu))

#define FS_KIND(s) ((unsigned)((s) >> 60))
#define FS_VAL(s) ((s) & ((1ull << 60) - 1))
#define FS_MK(kind, v) (((uint64_t)(kind) << 60) | ((v) & ((1ull << 60) - 1)))

/* Request outcome packed in a DONE value: rc (8 bits, negated), slot (8), order_no (44). */
#define FS_REQ_VAL(rc, lslot, ono) ((((uint64_t)(uint8_t)(-(rc))) << 52) | (((uint64_t)(lslot) & 0xff) << 44) | ((ono) & ((1ull << 44) - 1)))
#define FS_REQ_RC(v) (-(int)(((v) >> 52) & 0xff))
#define FS_REQ_LSLOT(v) ((uint32_t)(((v) >> 44) & 0xff))
#define FS_REQ_ONO(v) ((v) & ((1ull << 44) - 1))

/*
 * A tagged counter: the value and the tag of the last change, changed
 * together by one 16-byte CAS (cmpxchg16b).  Recovery decides whether a dead
 * operation's change happened: it did iff the word still carries its tag, or
 * a later writer, before overwriting that tag, raised the dead slot's
 * applied_max to at least that sequence (helping, Harris-style).
 */
struct fs_counter {
	uint64_t value;
	uint64_t tag;
} __attribute__((aligned(16)));

/* ------------------------------------------------------------------------
 * 2. The segment header
 * ------------------------------------------------------------------------ */

enum fs_region_id {
	FS_R_ACT, FS_R_ACT_IDX, FS_R_SKU, FS_R_SKU_IDX, FS_R_SHARD,
	FS_R_USER, FS_R_TOKEN, FS_R_REQ, FS_R_ORDER, FS_R_LOCK,
	FS_R_PROC, FS_R_JOURNAL, FS_R_RING, FS_R_RINGBUF, FS_R_OBS,
	FS_R_ARCHIVED,                     /* archived activity ids (archive.c) */
	FS_R_USER_BANKS, FS_R_REQ_BANKS,   /* a windowed segment's tables (gen.c); empty otherwise */
	FS_R_COUNT
};

struct fs_region {
	uint64_t off;        /* from the segment start, FS_LINE aligned */
	uint64_t size;       /* bytes */
	uint32_t count;      /* elements */
	uint32_t elem_size;  /* bytes per element */
};

/*
 * A keyed table's generations (gen.c).  The table is cut into gen_banks
 * banks of equal size; generation number n lives in bank n % gen_banks.
 * Each bank's word says what it holds: FS_BANK(kind, slot, n) -- USED
 * (generation n's keys), CLEARING (being emptied by the clearer in slot,
 * generation n's keys), CLEAR (all EMPTY, fill 0).  cur moves on only into a
 * CLEAR bank; a bank is cleared only two generations back, after a grace
 * period.  Bank 0's fill count is hdr->req_fill / users_fill (the counts a
 * one-bank segment has always had), banks 1.. count in fill[].
 */
enum { FS_BANK_CLEAR = 0, FS_BANK_USED = 1, FS_BANK_CLEARING = 2 };
#define FS_BANK(kind, slot, n) (((uint64_t)(kind) << 60) | (((uint64_t)(slot) & 0xfffu) << 48) | ((n) & FS_SEQ_MASK))
#define FS_BANK_KIND(w) ((unsigned)((w) >> 60))
#define FS_BANK_SLOT(w) ((uint32_t)(((w) >> 48) & 0xfffu))
#define FS_BANK_GEN(w) ((w) & FS_SEQ_MASK)

struct fs_gentab {
	uint64_t cur;                      /* current generation number */
	int64_t  cur_start_ns;             /* when it became current (written before cur) */
	uint64_t bank[FS_GEN_BANKS];       /* FS_BANK words */
	uint64_t pad;
	struct fs_counter fill[FS_GEN_BANKS - 1];  /* keys held by banks 1.. */
	struct fs_counter reclaimed;       /* keys cleared so far (changed by intents) */
};

/* Immutable after creation; covered by the checksum. */
struct fs_hdr_fixed {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;          /* sizeof(struct fs_hdr) */
	uint64_t seg_size;          /* bytes of the whole object */
	uint32_t uid;               /* creator */
	uint32_t mode;              /* 0600 or 0660 */
	struct flash_seg_opts opts; /* capacities as asked */
	uint64_t token_key[2];      /* SipHash-2-4 key of the token-number permutation
	                               (token.c), from getrandom(2) at creation */
	int64_t  created_ns;
	uint64_t tsc_mult;          /* ns per fs_ticks() tick, times 2^32: measured at
	                               create and restore (obs.c), copied into each handle */
	/* reclamation (gen.c, flash_seg_reclaim_set): 1 bank per keyed table, or
	 * FS_GEN_BANKS with the generation lengths; the layout depends on it */
	uint32_t gen_banks;
	uint32_t req_window_s;
	uint32_t user_gen_s;
	uint32_t gen_pad;
	struct fs_region region[FS_R_COUNT];
	uint64_t checksum;          /* FNV-1a over the bytes above */
};

struct fs_hdr {
	struct fs_hdr_fixed fx;
	/* mutable part: each hot word on its own line */
	uint64_t order_next FS_ALIGNED;   /* next unallocated order number chunk start */
	uint64_t order_replay_hi;         /* highest number re-applied by flash_replay */
	uint32_t n_act FS_ALIGNED;        /* activities committed (dense) */
	uint32_t n_sku;                   /* skus committed (dense) */
	uint32_t n_shard;                 /* shards handed out */
	uint32_t durability_failed;       /* sticky WAL failure */
	uint32_t tok_probe_max;           /* farthest from its home any token was placed
	                                     (probe.h): bounds every token lookup */
	uint32_t destroyed;               /* 1: destroyed (flash_seg_destroy_checked): every
	                                     write call but the consumer's answers
	                                     FLASH_EDESTROYED (fs_enter).  On this line
	                                     because every order reads durability_failed:
	                                     the check costs a load, never a miss.  Was
	                                     padding: 0 in every older segment */
	/* keys held by the keyed tables (entries not EMPTY): tagged counters, changed
	 * only by ktab.c's journaled count; users_used and req_used name the low
	 * word of each value, for readers (the segment is little-endian, host-only) */
	union {
		struct fs_counter users_fill;
		uint32_t users_used;
	} FS_ALIGNED;
	union {
		struct fs_counter req_fill;
		uint32_t req_used;
	};
	struct fs_gentab gen[2] FS_ALIGNED;  /* FS_KT_REQ, FS_KT_USER (gen.c) */
	uint32_t locks_used FS_ALIGNED;
	uint32_t cat_holder;              /* slot+1 holding the admin mutex */
	uint64_t terms_ver;               /* the last terms version issued (catalog.c):
	                                     changed by the admin mutex's holder only */
	uint64_t tick FS_ALIGNED;         /* causal ticket counter (ring.c): bumped by records
	                                     others may depend on and by each drain */
	struct fs_counter tokens_live FS_ALIGNED; /* token entries BUSY, FREE or PEND: counted
	                                             against max_tokens, changed only by intents */
	/* identity shared with the WAL (flash_ident_get); off the order path,
	 * written by the consumer only (flash_seg_create sets incarnation) */
	uint64_t incarnation FS_ALIGNED;  /* nonzero; in every WAL file header too */
	uint64_t wal_lsn;                 /* highest WAL LSN the segment reflects (0: never served) */
	uint64_t consumer;                /* the daemon's claim: FS_CONSUMER(gen, slot), 0 = none */
	/* why durability_failed is set (flash_durability_fail_why, ring.c):
	 * written by the consumer before the flag, read after it.  They fill
	 * the identity line's spare bytes, so the layout is unchanged; a
	 * segment made before them reads zeros: "not said" */
	int64_t  dur_fail_ns;             /* CLOCK_REALTIME of the failure */
	uint32_t dur_fail_step;           /* enum flash_wal_step */
	int32_t  dur_fail_err;            /* errno of the failed step */
	pthread_mutex_t admin FS_ALIGNED; /* robust, process-shared: catalog and lock-name inserts */
	char pad[FS_LINE];
};

/* ------------------------------------------------------------------------
 * 3. Regions
 * ------------------------------------------------------------------------ */

/*
 * Catalog entry states (fs_act.state, fs_sku.state): the kind in the low 2
 * bits, a version above that grows each time the entry is reused.  A fresh
 * entry reads LIVE version 0 (zeroed memory).  LIVE(v) -> ARCHIVING(v) ->
 * FREE(v) -> LIVE(v + 1) (archive.c, catalog.c); an entry's fields change
 * only while it is FREE, so a reader that reads the state, the fields, then
 * the state again after a full barrier, and finds the same LIVE word, read
 * fields no reclaimer touched (the order path: order.c).
 */
enum fs_cat_kind { FS_CAT_LIVE = 0, FS_CAT_ARCHIVING = 1, FS_CAT_FREE = 2 };
#define FS_CAT(kind, ver) ((((uint32_t)(ver)) << 2) | (uint32_t)(kind))
#define FS_CAT_KIND(s) ((s) & 3u)
#define FS_CAT_VER(s) ((s) >> 2)
#define FS_IDX_TOMB UINT32_MAX     /* catalog index word of an archived entry */

/*
 * Terms that change (flash_activity_update, flash_sku_price_set) are kept
 * twice: the copy of the state word's version parity is the current one
 * (fs_act_t, fs_sku_t).  A change writes the other copy, publishes its
 * record, then moves the state word on (LIVE(v) -> LIVE(v + 1)): a reader
 * that read the state, the copy, then the state again and found the same
 * word read one whole set of terms.  The order path reads them inside its
 * operation, after its re-check; a change waits out the operations open
 * before it writes a copy (fs_grace), so no open operation reads a copy
 * being written.  Fields that never change (id, scope, day_offset_s) are
 * the same in both copies.
 */
struct fs_act {
	struct flash_activity t[2];  /* the terms, twice (above) */
	uint32_t state;            /* FS_CAT(kind, version) */
	uint32_t ugen;             /* user-table generation it was added in: its
	                              per-activity / per-sku limit entries live in
	                              that generation's bank (gen.c, fs_gen_pin) */
	uint32_t unpinned;         /* 1: archived, the bank no longer kept for it */
	uint32_t pad;
};

struct fs_sku {
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t act_idx;
	uint32_t shard0;           /* first shard index */
	uint32_t nshards;
	uint32_t state;            /* FS_CAT(kind, version) */
	struct fs_counter total;   /* units loaded + restocked */
	struct fs_sku_terms {
		uint64_t version;
		uint64_t price;
	} t[2];                    /* the terms, twice (as fs_act.t) */
};

static inline const struct flash_activity *fs_act_t(const struct fs_act *a, uint32_t st)
{
	return &a->t[FS_CAT_VER(st) & 1u];
}

static inline const struct fs_sku_terms *fs_sku_t(const struct fs_sku *s, uint32_t st)
{
	return &s->t[FS_CAT_VER(st) & 1u];
}

struct fs_shard {
	struct fs_counter c;       /* available units */
	uint32_t owner;            /* sku index + 1 using it; 0: free (catalog.c) */
	char pad[FS_LINE - sizeof(struct fs_counter) - sizeof(uint32_t)];
} FS_ALIGNED;

/* Keyed tables (user limits, requests): permanent keys, revivable entries. */
struct fs_kent {
	uint64_t state;
	uint64_t k[3];
};

/* Tokens: (state, id) change together by 16-byte CAS, so no ABA on reuse. */
struct fs_token {
	uint64_t state;
	uint64_t id;
	uint32_t activity_id;
	uint32_t sku_id;
	uint64_t user_id;
	uint64_t expiry_ms;        /* CLOCK_MONOTONIC ms */
	uint64_t pad;
} __attribute__((aligned(16)));

struct fs_order {
	uint64_t state;            /* FS_K_PEND(tag) -> ACTIVE -> PEND(tag) -> CANCELLED */
	uint64_t user_id;
	uint32_t activity_id;
	uint32_t sku_id;
	uint32_t qty;
	uint32_t limit_slot;       /* 1..K; a cart's slots (its own and its lines'):
	                              also its lines << 24 (FS_ORD_SLOT, FS_ORD_LINES) */
	uint32_t biz_day;
	uint32_t user_idx;         /* entry in the user table, or UINT32_MAX */
	int64_t  created_ns;
	uint32_t sku_idx;
	uint32_t shard;            /* shard the units came from (first) */
	uint64_t order_no;         /* the number the slot holds, written while the
	                              slot is PEND(tag) of its placing order; kept
	                              when the slot is freed (numbers in one slot
	                              only grow: order.c) */
};

/* May record @p r be a line of a cart (its flags then say: FLASH_REC_F_CART)? */
static inline int fs_rec_is_line(const struct flash_record *r)
{
	return r->type == FLASH_REC_ORDER || r->type == FLASH_REC_CANCEL || r->type == FLASH_REC_EXPIRE ||
	       r->type == FLASH_REC_CONFIRM;
}

#define FS_ORD_SLOT(ls) ((ls) & 0xffffu)
#define FS_ORD_LINES(ls) ((ls) >> 24)          /* 0: a plain order */

/* A ring element: the record and its causal ticket (ring.c).  The ticket
 * orders the drain across rings; it never reaches the WAL. */
struct fs_ringrec {
	struct flash_record rec;
	uint64_t tick;
};

/*
 * Leased lock (lock.c).  The grant word {fence, holder} changes only by
 * 16-byte CAS: a grant moves it from {f, anything free} to {f + 1, taker},
 * so the fence and the grant are one step and a fence never repeats or goes
 * back; renew and release keep the fence.  The owner value of a grant is
 * stored beside it, tagged with the grant's fence.
 */
struct fs_lock {
	uint64_t fence;            /* grants so far; CAS'd with holder */
	uint64_t holder;           /* slot(12) | gen(12) | expiry_ms(40); 0 = free */
	uint64_t owner_fence;      /* the grant whose owner value `owner` is */
	uint64_t owner;            /* caller's owner value (nonzero); CAS'd with owner_fence */
	uint32_t used;             /* name published */
	char     name[FLASH_LOCK_NAME_MAX + 1];
	uint32_t pad;
	uint64_t grant_ns;         /* CLOCK_MONOTONIC ns of the grant named by grant_fence:
	                              for the hold-time histogram only (lock.c) */
	uint64_t grant_fence;      /* stored after grant_ns; 0: none */
	uint64_t pad2;
} __attribute__((aligned(16)));

/* The consumer claim names the holder's slot and that slot's generation, so
 * a claim outlives neither its process nor the slot's next owner. */
#define FS_CONSUMER(gen, slot) ((((uint64_t)(gen) & 0xfffffffull) << 32) | ((uint64_t)(slot) + 1))
#define FS_CONSUMER_SLOT(c) ((uint32_t)(c) - 1)
#define FS_CONSUMER_GEN(c) ((uint32_t)((c) >> 32))

enum fs_proc_kind { FS_P_FREE = 0, FS_P_CLAIM = 1, FS_P_ALIVE = 2, FS_P_RECOVERING = 3 };
#define FS_PSTATE(kind, gen, pid) (((uint64_t)(kind) << 60) | (((uint64_t)(gen) & 0xfffffffull) << 32) | (uint32_t)(pid))
#define FS_PKIND(s) ((unsigned)((s) >> 60))
#define FS_PGEN(s) ((uint32_t)(((s) >> 32) & 0xfffffffu))
#define FS_PPID(s) ((int32_t)(uint32_t)(s))

struct fs_stats_slot {
	uint64_t orders, cancels, sold_out, limit_hits, token_rejects, duplicates,
	         cas_retries, recoveries, rolled_back, rolled_forward, confirms, expiries;
};

/*
 * One more in a counter of the handle's own slot.  Only the slot's owner
 * writes it, others read it (flash_stats_get, relaxed loads): a relaxed
 * load and store, no locked instruction -- on x86 the same two moves as a
 * plain ++, and no data race for the readers.
 */
static inline void fs_stat_inc(uint64_t *c)
{
	ck_pr_store_64(c, ck_pr_load_64(c) + 1);
}

struct fs_proc {
	uint64_t state FS_ALIGNED;  /* FS_PSTATE */
	uint64_t start_time;        /* /proc/PID/stat starttime of the pid in state: written
	                               with it by one 16-byte CAS (segment.c, Liveness) */
	uint64_t seq;               /* next sequence number: persists across reuse */
	uint64_t order_next;        /* unused order numbers [order_next, order_end) */
	uint64_t order_end;
	uint64_t applied_max FS_ALIGNED; /* written by other slots (helping) */
	struct fs_stats_slot st FS_ALIGNED;
	/* ring consumer side (written by the consumer only) */
	uint64_t cons_seq FS_ALIGNED;     /* records consumed = durable, per slot */
	uint32_t durable_futex;           /* low 32 bits of cons_seq, for futex waits */
	uint32_t waiters;                 /* sync waiters asleep on durable_futex: written by
	                                     the slot's owner, zeroed by its recoverer */
	uint64_t taken_seq;               /* records written where the next consumer finds
	                                     them (>= cons_seq): their ring room is free;
	                                     c_head is its low 32 bits */
};

enum fs_op { FS_OP_NONE = 0, FS_OP_ORDER, FS_OP_CANCEL, FS_OP_RESTOCK, FS_OP_CATALOG,
             FS_OP_TOKEN, FS_OP_TOKEN_RETIRE, FS_OP_RECLAIM, FS_OP_ARCHIVE, FS_OP_CONFIRM,
             FS_OP_CART };
enum fs_phase { FS_PH_IDLE = 0, FS_PH_RUN = 1, FS_PH_PUBLISH = 2, FS_PH_RESOLVED = 3 };

struct fs_intent {
	uint32_t shard;            /* shard index, or FS_TOTAL_BIT|sku index */
	int32_t  pad;
	int64_t  delta;
	uint64_t seq;              /* the tag's sequence used for this CAS; 0 = not tried */
	uint32_t done;             /* 0: unknown; 1: applied; 2: not applied */
	uint32_t post;             /* 1: runs after the commit point (roll forward) */
};
#define FS_TOTAL_BIT 0x80000000u
#define FS_TL_TARGET 0x7fffffffu   /* intent target: hdr->tokens_live */
#define FS_KT_TARGET_REQ  0x7ffffffeu  /* intent target: hdr->req_fill (ktab.c) */
#define FS_KT_TARGET_USER 0x7ffffffdu  /* intent target: hdr->users_fill (ktab.c) */
/* intent targets of the other banks' fills and the reclaimed counts (gen.c):
 * FS_GEN_TARGET(tab, bank) for bank >= 1, FS_GEN_TARGET_RECL(tab) */
#define FS_GEN_TARGET(tab, bank) (0x7ffffff0u + (uint32_t)(tab) * 4u + (uint32_t)(bank))
#define FS_GEN_TARGET_RECL(tab) (0x7ffffff0u + (uint32_t)(tab) * 4u + 3u)

#define FS_NONE UINT32_MAX
#define FS_DIR_BACK 1u
#define FS_DIR_FWD  2u

/*
 * The journal of one slot: single writer (the slot's handle, or the process
 * recovering it).  Every field is written before the shared change it
 * describes; the CAS that makes the change is a full barrier, so a recoverer
 * that finds the process dead sees the journal as it was.
 */
struct fs_journal {
	uint64_t op_tag FS_ALIGNED;
	uint32_t op;               /* enum fs_op */
	uint32_t phase;            /* enum fs_phase */
	uint32_t ring_pos;         /* ring p_tail before this op's record */
	uint32_t req_idx, tok_idx, user_idx, order_idx, sku_idx;
	uint32_t n_int;
	uint32_t quota_return;     /* cancel: give the limit slot back */
	uint32_t dir;              /* recovery's decision: 1 back, 2 forward */
	uint32_t owner_undo;       /* 1: the owner's rollback is recording its refusal
	                              (rc in rec.flags) for the request id; recovery
	                              finishes that rollback, not a crash's */
	uint64_t tok_id;
	uint64_t ono;              /* order: the number whose slot it claims (order.c),
	                              written before the claim */
	uint64_t ord_prior;        /* cancel (also an expiry), confirm: the order's state
	                              word before its claim, written before it -- what
	                              a rollback puts back (ACTIVE, or RESERVED(pay-by)) */
	uint32_t cart_n;           /* FS_OP_CART: the slots it claims from order_idx on
	                              (the cart's and its lines'), written before the
	                              first claim; the records it publishes */
	uint32_t cart_pad;
	/* the keyed-table insert in flight (ktab.c), one at a time */
	uint32_t kt_tab;           /* FS_KT_REQ + 1 or FS_KT_USER + 1, bank << 4; 0: none, or settled */
	uint32_t kt_won;           /* the EMPTY -> BUSY CAS at the table's index succeeded */
	uint32_t kt_first;         /* first intent of this insert (its count changes) */
	uint32_t kt_pad;
	uint64_t kt_key[3];        /* the key being inserted */
	/* FS_OP_RECLAIM (gen.c): what the generation step does */
	uint32_t gc_tab;           /* FS_KT_REQ or FS_KT_USER */
	uint32_t gc_kind;          /* 1: advance, 2: clear */
	uint32_t gc_bank;
	uint32_t gc_pad;
	uint64_t gc_gen;           /* advance: the new generation; clear: the one cleared */
	int64_t  gc_start_ns;      /* advance: its start */
	struct flash_record rec;   /* the record to publish */
	struct fs_intent in[FS_MAX_INTENTS];
};

/* ------------------------------------------------------------------------
 * 4. The handle
 * ------------------------------------------------------------------------ */

struct flash {
	char *base;                /* mapping */
	uint64_t size;
	char path[256];            /* the object's name (flash_seg_reclaim_set re-maps it) */
	struct fs_hdr *hdr;
	pid_t pid;                 /* opener */
	uint64_t start_time;       /* the opener's start time (its identity with pid) */
	unsigned fork_gen;         /* fs_fork_gen() at open: differs in a forked child */
	uint64_t owner_thread;     /* fs_thread_id() of the opening thread */
	int rdonly;
	int slot;                  /* -1 for read-only */
	uint32_t sync_wait_ms;     /* bound of each sync wait (flash_sync_wait_set) */
	uint32_t gen;
	struct fs_proc *me;
	struct fs_journal *j;
	uint64_t *cursor;          /* consumer: next seq to hand out, per slot */
	uint32_t *dtail;           /* consumer: each ring's tail read by this drain */
	uint32_t *dlive;           /* consumer: slots this drain still takes from */
	/* region pointers and masks, derived once at attach from the checked table */
	struct fs_act *act;   uint32_t act_cap;
	uint32_t *act_idx;    uint32_t act_idx_mask;
	struct fs_sku *sku;   uint32_t sku_cap;
	uint32_t *sku_idx;    uint32_t sku_idx_mask;
	struct fs_shard *shard; uint32_t shard_cap;
	struct fs_kent *user; uint32_t user_mask;   /* mask: of one bank */
	struct fs_token *tok; uint32_t tok_mask;
	struct fs_kent *req;  uint32_t req_mask;
	uint32_t user_n, req_n;    /* entries of all banks: journal indices are below */
	uint32_t gen_banks;        /* 1: no reclamation (the order path's one branch) */
	struct fs_order *ord; uint32_t ord_cap;
	struct fs_lock *lock; uint32_t lock_mask;
	struct fs_proc *proc; uint32_t proc_cap;
	struct fs_journal *jr;
	struct ck_ring *ring;
	struct fs_ringrec *ringbuf; uint32_t ring_size;
	const struct flash_record *replay;  /* flash_replay: the record being re-applied */
	uint64_t ono_n;            /* order number whose slot is ono_slot (order.c: */
	uint32_t ono_slot;         /* saves a division per order); ono_n 0: none */
	/* observation (section 5) */
	struct fs_obs *obs;   uint32_t obs_cap;   /* every slot's, for readers */
	struct fs_obs *my_obs;                    /* this slot's (writable handles) */
	uint64_t tsc_mult;                        /* copy of hdr->fx.tsc_mult */
	uint64_t *obs_res;                        /* the last call, not yet in my_obs
	                                             (fs_obs_flush): its result counter, */
	struct fs_hist *obs_hist;                 /* its histogram if it was timed, */
	uint64_t obs_ns;                          /* and its time; NULL, NULL: none */
	uint32_t obs_skip;                        /* orders until the next timed one */
	/* an order met due reservations of its user (FS_ESETTLE): their
	 * numbers, expired before it runs again, once (settling) */
	uint32_t settling, settle_n;
	uint64_t settle_no[FLASH_LIMIT_MAX];
	/* flash_replay of a cart: its lines' records so far (replay.c) */
	uint32_t rp_lines;
	struct flash_record rp_line[FLASH_CART_LINES_MAX];
	const struct fs_lock *lw_lock;            /* lock wait in progress (lock.c): the lock, */
	uint64_t lw_owner;                        /* the owner value refused, */
	uint64_t lw_t0_ns;                        /* and when it was first refused */
	/* cold: read by archive and catalog adds only, kept off the lines the
	 * order path reads */
	uint32_t *arch;       uint32_t arch_mask;   /* archived ids (archive.c) */
	uint32_t arch_cap;                          /* ids it holds: half its words */
};

/* ------------------------------------------------------------------------
 * 5. Observation (obs.c)
 *
 * Each slot owns one struct fs_obs on its own cache lines: a latency
 * histogram per public operation (enum flash_op) plus the lock wait and
 * hold times, and a count per result code per operation.  Only the slot's
 * handle writes it, with plain increments (no lock, no atomic RMW, nothing
 * shared); readers (flash_obs_get) sum every slot with relaxed loads.  A
 * process killed mid-update leaves one count missing or one sum without
 * its bucket: these figures are statistics, never read by recovery, and
 * every invariant holds whatever they contain.
 *
 * Time is read with fs_ticks() -- the TSC on x86-64 (rdtsc: about 20
 * cycles, no system call, no serialisation), CLOCK_MONOTONIC elsewhere --
 * and converted to ns with the segment's tsc_mult, measured once when the
 * segment is created.
 * ------------------------------------------------------------------------ */

struct fs_hist {
	uint64_t bucket[FLASH_OBS_BUCKETS];  /* bucket b: latency < 2^(b+6) ns (the last: any) */
	uint64_t sum_ns;
};

struct fs_obs {
	struct fs_hist time[FLASH_TIMES];
	uint64_t result[FLASH_OP_COUNT][FLASH_OBS_CODES];  /* [op][-rc] */
} FS_ALIGNED;

static inline uint64_t fs_ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Ticks to ns: one 64x64 multiply (no overflow for any duration). */
static inline uint64_t fs_ticks_ns(const flash_t *h, uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * h->tsc_mult) >> 32);
}

/* Count @p ns in histogram @p hi (owner only: plain stores). */
static inline void fs_hist_add(struct fs_hist *hi, uint64_t ns)
{
	uint64_t v = ns >> 6;
	unsigned b = v ? 64u - (unsigned)__builtin_clzll(v) : 0;

	if (b >= FLASH_OBS_BUCKETS)
		b = FLASH_OBS_BUCKETS - 1;
	/* single writer: a load and a store (ck_pr_store: one plain MOV on
	 * x86-64, no lock prefix) that readers may load at any time */
	ck_pr_store_64(&hi->bucket[b], hi->bucket[b] + 1);
	ck_pr_store_64(&hi->sum_ns, hi->sum_ns + ns);
}

/*
 * A measured public call ends: its time since @p t0 (fs_ticks), operation
 * and result are kept in the handle (process memory) and go into the
 * segment at the start of the handle's next call (fs_obs_flush), or at
 * flash_close / flash_obs_get.  Why not at once: a store into the segment
 * after an operation's last one would be a crash point at which the
 * operation is complete but its caller never learned it -- and a token
 * issue or redeem promises that a process killed before the call returns
 * leaves the token as it was.  Before a call's first change, a kill changes
 * nothing.  So each handle's newest call is missing from the figures until
 * its next one.
 */
/* A call counted but not timed (an order between samples). */
static inline void fs_obs_count(flash_t *h, unsigned op, int rc)
{
	unsigned c = (unsigned)-rc;

	h->obs_res = &h->my_obs->result[op][c < FLASH_OBS_CODES ? c : FLASH_OBS_CODES - 1];
}

static inline void fs_obs_end(flash_t *h, unsigned op, int rc, uint64_t t0)
{
	h->obs_ns = fs_ticks_ns(h, fs_ticks() - t0);
	h->obs_hist = &h->my_obs->time[op];
	fs_obs_count(h, op, rc);
}

/*
 * Orders are timed one in FS_OBS_ORDER_SAMPLE per handle (its first, then
 * every 16th); every order is counted.  Two TSC reads cost about 70 ns on
 * the project's 2-core VM (rdtsc ~36 ns there), a fifth of an order; one
 * in 16 brings that to ~4 ns an order, and a histogram of 1/16 of the
 * orders of every handle still shows the distribution.  Every other
 * operation is timed on every call.
 */
#define FS_OBS_ORDER_SAMPLE 16u

/*
 * Put the handle's kept call into its slot's figures.  Only on a handle
 * that passed fs_enter(h, 1) (or is being closed): writable and on its own
 * thread, so my_obs is this slot's and nobody else writes it.  Three plain
 * increments (bucket, sum, result).
 */
static inline void fs_obs_flush(flash_t *h)
{
	uint64_t *res = h->obs_res;

	if (res != NULL) {
		ck_pr_store_64(res, *res + 1);   /* single writer: see fs_hist_add */
		h->obs_res = NULL;
		if (h->obs_hist != NULL) {
			fs_hist_add(h->obs_hist, h->obs_ns);
			h->obs_hist = NULL;
		}
	}
}

/*
 * The public face of an observed call (every public write but the order,
 * which samples its timing: order.c): the handle checked (fs_enter), the
 * handle's kept call written (fs_obs_flush), then @p run timed and its result
 * kept for @p op (fs_obs_end).  Evaluates to the call's result code.
 */
#define FS_OBSERVED(h, op, run) __extension__ ({                 \
	int fs_rc_ = fs_enter((h), 1);                            \
	if (fs_rc_ == FLASH_OK) {                                 \
		fs_obs_flush(h);                                  \
		uint64_t fs_t0_ = fs_ticks();                     \
		fs_rc_ = (run);                                   \
		fs_obs_end((h), (op), fs_rc_, fs_t0_);            \
	}                                                         \
	fs_rc_; })

/* obs.c */
uint64_t fs_tsc_calibrate(void);
uint64_t fs_mono_ns(void);

/* ------------------------------------------------------------------------
 * 6. Internal functions
 * ------------------------------------------------------------------------ */

/* util.c */
int64_t fs_now_ns(void);         /* CLOCK_REALTIME */
uint64_t fs_mono_ms(void);       /* CLOCK_MONOTONIC */
uint64_t fs_fnv(const void *p, size_t n);
int fs_check_slot(const flash_t *h, uint32_t slot);

/* splitmix64's finalizer: a bijection of 64-bit words with full avalanche */
static inline __attribute__((const)) uint64_t fs_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/*
 * The hash of a key of three words.  Inline and const, not a call: an order
 * hashes its keys about a dozen times (where it prefetches an entry, where
 * it looks it up), words that are constants at the call fold (the table's
 * tag: fs_hash(id, 5, 6) is one fs_mix64 of the id at run time), and a
 * hash computed twice in one function is computed once.  The values are
 * the segment's: a change here is a layout change.
 */
static inline __attribute__((const)) uint64_t fs_hash(uint64_t a, uint64_t b, uint64_t c)
{
	return fs_mix64(a ^ fs_mix64(b ^ fs_mix64(c + 0x9e3779b97f4a7c15ull)));
}

/* segment.c */
int fs_proc_alive(flash_t *h, uint32_t slot, uint64_t state);
int fs_consumer_live(flash_t *h, uint64_t claim, int32_t *pid);
int fs_proc_take_dead(flash_t *h, uint32_t slot);
int fs_tag_alive(flash_t *h, uint64_t tag);
int fs_wait_tag(flash_t *h, const uint64_t *word, uint64_t seen);
int fs_admin_lock(flash_t *h);
void fs_admin_unlock(flash_t *h);

/* grace.c: every operation open in another slot now has ended (FLASH_OK),
 * or @p timeout_ms passed first (FLASH_EBUSY) */
int fs_grace(flash_t *h, uint32_t timeout_ms);

/* lock.c */
void fs_lock_repair(flash_t *h);

/* journal.h, journal.c: operation begin/end, phases, intents (include journal.h) */

/* stock.c */
void fs_help_mark(flash_t *h, uint64_t tag);
int fs_counter_apply(flash_t *h, uint32_t target, int64_t delta, int may_fail);
int fs_stock_take(flash_t *h, uint32_t base, uint32_t n, uint64_t qty, uint64_t hint);
int fs_counter_change(flash_t *h, struct fs_journal *j, uint32_t slot, uint32_t target,
                      int64_t delta, int may_fail);
struct fs_counter *fs_counter_at(flash_t *h, uint32_t target);

/* token.c */
void fs_token_recover(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_token_unwind(flash_t *h, struct fs_journal *j, uint32_t slot, int crashed, int rc);
int fs_token_keygen(uint64_t key[2]);
uint64_t fs_siphash24_u64(const uint64_t key[2], uint64_t m);
uint64_t fs_token_permute(const uint64_t key[2], uint64_t x);

/* ktab.c */
enum { FS_KT_FOUND = 1, FS_KT_INSERTED = 2 };
enum { FS_KT_REQ = 0, FS_KT_USER = 1 };   /* the keyed tables */
int fs_kt_claim0(flash_t *h, uint32_t tab, const uint64_t key[3], uint64_t *state_out);
int fs_kt_claim_bank(flash_t *h, uint32_t tab, uint32_t bank, const uint64_t key[3], uint64_t *state_out);
/* Insert-or-find @p key in bank @p bank of table @p tab (ktab.c); a constant
 * bank 0 picks the claim compiled for it */
static inline int fs_kt_claim(flash_t *h, uint32_t tab, uint32_t bank, const uint64_t key[3],
                              uint64_t *state_out)
{
	return bank == 0 ? fs_kt_claim0(h, tab, key, state_out) : fs_kt_claim_bank(h, tab, bank, key, state_out);
}
int fs_kt_find(flash_t *h, uint32_t tab, uint32_t bank, const uint64_t key[3], uint32_t *idx,
               uint64_t *state_out);
void fs_kt_recover(flash_t *h, struct fs_journal *j, uint32_t slot);
struct fs_counter *fs_kt_fill(flash_t *h, uint32_t tab, uint32_t bank);

/* gen.c */
void fs_gen_pin(flash_t *h, struct fs_act *act);
void fs_gen_unpin(flash_t *h, uint32_t act_idx);
void fs_gen_finish(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_gen_rollback(flash_t *h, struct fs_journal *j, uint32_t slot);
int fs_gen_replay(flash_t *h, const struct flash_record *rec);
uint32_t fs_gen_bank_of(const flash_t *h, uint64_t gen);
int fs_req_window_check(flash_t *h, uint64_t request_id);
/* the current generation of table @p tab (acquire: read after the
 * operation's phase store, a full barrier -- grace.c) */
static inline uint64_t fs_gen_cur(const flash_t *h, uint32_t tab)
{
	return ck_pr_load_64((uint64_t *)&h->hdr->gen[tab].cur);
}

/*
 * A keyed-table entry being inserted reads BUSY(slot, fingerprint): the
 * inserter's slot and 48 bits of the key's hash (the bits above those that
 * pick the home).  Only an insert of a key with the same fingerprint waits
 * for it; every other probe passes it.
 */
static inline uint64_t fs_kt_fp(uint64_t hash)
{
	return (hash >> 16) & FS_SEQ_MASK;
}

#define FS_KT_BUSY(slot, hash) FS_MK(FS_K_BUSY, FS_TAG((slot), fs_kt_fp(hash)))

/* Is @p s a BUSY entry whose key may be the one hashing to @p hash? */
static inline int fs_kt_busy_same(uint64_t s, uint64_t hash)
{
	return FS_KIND(s) == FS_K_BUSY && FS_TAG_SEQ(FS_VAL(s)) == fs_kt_fp(hash);
}

/* catalog.c */
void fs_index_tomb(uint32_t *index, uint32_t mask, uint64_t hash, uint32_t k);
const struct fs_act *fs_act_find(flash_t *h, uint32_t id, uint32_t *idx);
const struct fs_sku *fs_sku_find(flash_t *h, uint32_t act, uint32_t sku, uint32_t *idx);
int fs_catalog_repair(flash_t *h, uint32_t slot);
int fs_activity_add_locked(flash_t *h, const struct flash_activity *a);
int fs_activity_update_locked(flash_t *h, const struct flash_activity *a, uint64_t *version);
int fs_sku_price_locked(flash_t *h, uint32_t act_id, uint32_t sku_id, uint64_t price, uint64_t *version);
int fs_sku_add_locked(flash_t *h, uint32_t act_id, uint32_t sku_id, uint64_t units, uint32_t shards);

/* archive.c */
#define FS_ARCH_PER_ACT 256u     /* archived ids remembered per catalog entry, */
#define FS_ARCH_MIN     16384u   /* and at least this many */
uint32_t fs_arch_cap(const struct flash_seg_opts *o);
int fs_arch_has(flash_t *h, uint32_t id);
void fs_archive_forward(flash_t *h, struct fs_journal *j);
int fs_archive_run(flash_t *h, uint32_t activity_id, struct flash_archive_info *out);
uint32_t fs_token_retire_activity(flash_t *h, uint32_t act);   /* token.c */

/* ring.c */
int fs_ring_space(flash_t *h);
int fs_ring_published(flash_t *h, uint32_t slot, uint32_t pos);
int fs_sync_wait(flash_t *h, uint32_t pos, uint32_t wait_ms);
int fs_token_move(flash_t *h, uint32_t idx, uint64_t id, uint64_t from, uint64_t to);
int fs_token_take(flash_t *h, uint32_t act, uint32_t sku, uint64_t user, uint64_t id,
                  uint64_t to, uint32_t *jidx);
uint32_t fs_ring_pos(flash_t *h);
void fs_commit(flash_t *h);
void fs_commit_lines(flash_t *h, const struct flash_record *more, uint32_t n);
int fs_ring_room(flash_t *h, uint32_t n);
int fs_ack(flash_t *h);
int fs_ack_n(flash_t *h, uint32_t n);

/* enter.c: the checks every public call starts with */
int fs_enter(const flash_t *h, int write);
unsigned fs_fork_gen(void);
uint64_t fs_thread_id(void);

/* order.c */
void fs_op_finish_order(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_op_finish_cancel(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_op_finish_confirm(flash_t *h, struct fs_journal *j, uint32_t slot);

/* The pay-by time of the reservation in @p j's record (value, ns) in the
 * milliseconds an order's state word holds (FS_K_RESERVED, FS_K_EXPIRED). */
static inline uint64_t fs_pay_by_ms(const struct fs_journal *j)
{
	return (uint64_t)j->rec.value / 1000000u;
}
void fs_op_finish_restock(flash_t *h, struct fs_journal *j, uint32_t slot);
void fs_op_rollback(flash_t *h, struct fs_journal *j, uint32_t slot, int crashed);
uint32_t fs_biz_day(const flash_t *h, const struct flash_activity *a, int64_t now_ns);
/* the bodies of flash_order, flash_cancel, flash_restock after fs_enter, not
 * measured (flash_replay re-applies records through them) */
int fs_order_run(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res);
int fs_cart_run(flash_t *h, const struct flash_cart_req *r, struct flash_cart_res *res);
int fs_cancel_run(flash_t *h, uint64_t order_no, uint32_t *units_returned);
int fs_expire_run(flash_t *h, uint64_t order_no, uint32_t *units_returned);
int fs_confirm_run(flash_t *h, uint64_t order_no);
int fs_restock_run(flash_t *h, uint32_t activity_id, uint32_t sku_id, int64_t delta);
/* Replay of a FLASH_REC_ARCHIVE record (archive_stub.c until archive.c lands). */

/* crash points (tests) */
#ifdef FLASH_CRASHPOINTS
#define FLASH_CRASH_EXIT 77
void fs_crashpoint(const char *op, int step);
void crash_arm(int n);
int fs_crash_hits(void);
const char *fs_crash_last(int *step);
#define FS_CRASH(op, step) fs_crashpoint(op, step)
/* A test may park an operation at a named place (FS_PARK): called there
 * when set.  No store into the segment. */
extern void (*fs_park_fn)(const char *where);
#define FS_PARK(where) do { if (fs_park_fn) fs_park_fn(where); } while (0)
#else
#define FS_CRASH(op, step) ((void)0)
#define FS_PARK(where) ((void)0)
#endif

static inline struct fs_counter *fs_counter_load(struct fs_counter *c, struct fs_counter *out)
{
	out->value = ck_pr_load_64(&c->value);
	out->tag = ck_pr_load_64(&c->tag);
	return out;
}

static inline int fs_cas2(struct fs_counter *c, struct fs_counter *expect, const struct fs_counter *set)
{
	/* on failure, *expect receives the current value */
	return ck_pr_cas_64_2_value((uint64_t *)(void *)c, (uint64_t *)(void *)expect,
	                            (uint64_t *)(void *)set, (uint64_t *)(void *)expect);
}

/*
 * A sku's shard range, loaded once from the segment into locals and checked
 * there: callers use *base and *n, never the fields again (no double fetch).
 */
static inline int fs_sku_range(const flash_t *h, const struct fs_sku *s, uint32_t *base, uint32_t *n)
{
	*n = ck_pr_load_32((uint32_t *)&s->nshards);
	*base = ck_pr_load_32((uint32_t *)&s->shard0);
	return *n > 0 && *n <= FLASH_SHARDS_MAX && *base < h->shard_cap && *n <= h->shard_cap - *base;
}

/*
 * Which refusals of an order leave its token live and its request id
 * unrecorded?  Those for the engine's capacity, which say nothing about the
 * order: the ring is full (FLASH_EBUSY), a table is full (FLASH_EFULL), an
 * index is corrupt (FLASH_ECORRUPT); a retry of the same request with the
 * same token is judged afresh.  Every other refusal (window, limit, stock)
 * burns the token, as GETDEL does, and is remembered for the request id.
 */
/*
 * Internal, never returned: an order refused FLASH_ELIMIT while a
 * reservation of the same user that holds one of its limit slots is past
 * its pay-by time.  The refusal keeps the token and the request id, like
 * one of capacity; the reservation is expired (whoever meets a due
 * reservation settles it), and the order runs again (order.c).
 */
#define FS_ESETTLE (-99)

static inline int fs_refusal_keeps(int rc)
{
	return rc == FLASH_EBUSY || rc == FLASH_EFULL || rc == FLASH_ECORRUPT || rc == FS_ESETTLE;
}

static inline uint64_t fs_next_seq(flash_t *h)
{
	uint64_t s = h->me->seq + 1;
	ck_pr_store_64(&h->me->seq, s);
	return s;
}

#endif /* FLASH_FS_H */
