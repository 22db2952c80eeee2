/*
 * fold.c -- the WAL fold (contract in fold.h): records -> per-(activity,
 * sku) totals and the orders, from the first record or from a snapshot's
 * fold section.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "snapshot.h"
#include "wal.h"

struct fold {
	struct fold_sku *ff_v;      /* insertion order */
	size_t    ff_n;
	size_t    ff_cap;
	uint32_t *ff_idx;                 /* open addressing: index + 1, 0 = empty */
	size_t    ff_idx_cap;
	struct fold_sku *ff_sorted; /* sorted copy for fold_skus() */
	int       ff_dirty;
	uint64_t *ff_okey;                /* orders: open addressing by number, 0 = empty */
	struct fold_order *ff_oval; /* ... the order of ff_okey[i] */
	size_t    ff_ocap;                /* slots (a power of two) */
	size_t    ff_on;                  /* slots used */
	uint64_t  ff_ord_max;             /* highest order number folded */
	uint64_t  ff_lsn;                 /* last LSN folded */
	uint64_t  ff_base_lsn;            /* seeded from a snapshot at this LSN (0: from the
	                                     first record): orders placed before it are not
	                                     in the fold, only their sums */
	uint32_t *ff_arch;                /* activities of ARCHIVE records, ascending */
	size_t    ff_arch_n;
	size_t    ff_arch_cap;
	struct fold_line *ff_open;        /* lines of carts whose last line is not folded yet,
	                                     in LSN order */
	size_t    ff_open_n;
	size_t    ff_open_cap;
	uint64_t  ff_torn;                /* lines of torn carts dropped so far */
};

/* A cart's line waiting for its last one (fold_cart). */
struct fold_line {
	uint64_t fl_lsn;
	struct flash_record fl_rec;
};

static uint64_t sku_key(uint32_t a, uint32_t s) { return (uint64_t)a << 32 | s; }

static size_t key_hash(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

int fold_new(fold_t **out)
{
	if (!out)
		return FLASH_EINVAL;
	*out = calloc(1, sizeof **out);
	return *out ? FLASH_OK : FLASH_ENOMEM;
}

void fold_free(fold_t *f)
{
	if (!f)
		return;
	free(f->ff_v);
	free(f->ff_idx);
	free(f->ff_sorted);
	free(f->ff_okey);
	free(f->ff_oval);
	free(f->ff_arch);
	free(f->ff_open);
	free(f);
}

/* Orders are kept by number in a hash table, not an array indexed by
 * number: a corrupt WAL may carry any number, and must not make the fold
 * allocate for it. */
static size_t ord_slot(const fold_t *f, uint64_t no)
{
	size_t j = key_hash(no, f->ff_ocap);
	while (f->ff_okey[j] && f->ff_okey[j] != no)
		j = (j + 1) & (f->ff_ocap - 1);
	return j;
}

static int ord_grow(fold_t *f)
{
	size_t cap = f->ff_ocap ? f->ff_ocap * 2 : 1024;
	uint64_t *k = calloc(cap, sizeof *k);
	/* zeroed like the keys: every slot reads as an order never seen (the
	 * static analyzer cannot follow that fold_order() zeroes a slot when
	 * it takes it) */
	struct fold_order *v = calloc(cap, sizeof *v);
	if (!k || !v) {
		free(k);
		free(v);
		return FLASH_ENOMEM;
	}
	fold_t nf = { .ff_okey = k, .ff_oval = v, .ff_ocap = cap };
	for (size_t i = 0; i < f->ff_ocap; i++) {
		if (!f->ff_okey[i])
			continue;
		size_t j = ord_slot(&nf, f->ff_okey[i]);
		k[j] = f->ff_okey[i];
		v[j] = f->ff_oval[i];
	}
	free(f->ff_okey);
	free(f->ff_oval);
	f->ff_okey = k;
	f->ff_oval = v;
	f->ff_ocap = cap;
	return FLASH_OK;
}

static struct fold_order *fold_order(fold_t *f, uint64_t no)
{
	if ((f->ff_on + 1) * 2 > f->ff_ocap && ord_grow(f))
		return NULL;
	size_t j = ord_slot(f, no);
	if (!f->ff_okey[j]) {
		f->ff_okey[j] = no;
		memset(&f->ff_oval[j], 0, sizeof f->ff_oval[j]);
		f->ff_on++;
	}
	if (no > f->ff_ord_max)
		f->ff_ord_max = no;
	return &f->ff_oval[j];
}

int fold_order_get(const fold_t *f, uint64_t no, struct fold_order *out)
{
	if (!f || !out || !no)
		return FLASH_EINVAL;
	if (!f->ff_ocap)
		return FLASH_ENOT_FOUND;
	size_t j = ord_slot(f, no);
	if (!f->ff_okey[j] || f->ff_oval[j].state == FLASH_ORDER_NONE)
		return FLASH_ENOT_FOUND;
	*out = f->ff_oval[j];
	return FLASH_OK;
}

uint64_t fold_orders_max(const fold_t *f) { return f ? f->ff_ord_max : 0; }

uint64_t fold_lsn(const fold_t *f) { return f ? f->ff_lsn : 0; }

static int fold_grow(fold_t *f)
{
	size_t cap = f->ff_idx_cap ? f->ff_idx_cap * 2 : 256;
	uint32_t *idx = calloc(cap, sizeof *idx);
	if (!idx)
		return FLASH_ENOMEM;
	for (size_t i = 0; i < f->ff_n; i++) {
		size_t j = key_hash(sku_key(f->ff_v[i].activity_id, f->ff_v[i].sku_id), cap);
		while (idx[j])
			j = (j + 1) & (cap - 1);
		idx[j] = (uint32_t)i + 1;
	}
	free(f->ff_idx);
	f->ff_idx = idx;
	f->ff_idx_cap = cap;
	return FLASH_OK;
}

static struct fold_sku *fold_get(fold_t *f, uint32_t a, uint32_t s)
{
	if ((f->ff_n + 1) * 2 > f->ff_idx_cap && fold_grow(f))
		return NULL;
	uint64_t k = sku_key(a, s);
	size_t j = key_hash(k, f->ff_idx_cap);
	for (;; j = (j + 1) & (f->ff_idx_cap - 1)) {
		uint32_t i = f->ff_idx[j];
		if (!i)
			break;
		if (sku_key(f->ff_v[i - 1].activity_id, f->ff_v[i - 1].sku_id) == k)
			return &f->ff_v[i - 1];
	}
	if (f->ff_n == f->ff_cap) {
		size_t cap = f->ff_cap ? f->ff_cap * 2 : 64;
		struct fold_sku *v = realloc(f->ff_v, cap * sizeof *v);
		if (!v)
			return NULL;
		f->ff_v = v;
		f->ff_cap = cap;
	}
	struct fold_sku *e = &f->ff_v[f->ff_n];
	memset(e, 0, sizeof *e);
	e->activity_id = a;
	e->sku_id = s;
	f->ff_idx[j] = (uint32_t)++f->ff_n;
	return e;
}

/* Note activity @p a archived (sorted insert; archives are rare). */
static int fold_archive(fold_t *f, uint32_t a)
{
	size_t i = 0;
	while (i < f->ff_arch_n && f->ff_arch[i] < a)
		i++;
	if (i < f->ff_arch_n && f->ff_arch[i] == a)
		return FLASH_OK;
	if (f->ff_arch_n == f->ff_arch_cap) {
		size_t cap = f->ff_arch_cap ? f->ff_arch_cap * 2 : 16;
		uint32_t *v = realloc(f->ff_arch, cap * sizeof *v);
		if (!v)
			return FLASH_ENOMEM;
		f->ff_arch = v;
		f->ff_arch_cap = cap;
	}
	memmove(f->ff_arch + i + 1, f->ff_arch + i, (f->ff_arch_n - i) * sizeof *f->ff_arch);
	f->ff_arch[i] = a;
	f->ff_arch_n++;
	return FLASH_OK;
}

int fold_archived(fold_t *f, const uint32_t **v, size_t *n)
{
	if (!f || !v || !n)
		return FLASH_EINVAL;
	*v = f->ff_arch;
	*n = f->ff_arch_n;
	return FLASH_OK;
}

/*
 * Order @p o after record @p r at @p lsn.  Each record moves the order
 * only from the state it names -- a cancel from ACTIVE (from RESERVED when
 * it says the order was unpaid, flags 2), a confirm or an expiry from
 * RESERVED -- like MariaDB's rows: one the order's state contradicts leaves
 * it as it was, and the comparison shows the difference.
 */
static void fold_order_step(const struct flash_record *r, struct fold_order *o, uint64_t lsn)
{
	uint8_t from = r->type == FLASH_REC_CANCEL && !(r->flags & 2u) ? FLASH_ORDER_ACTIVE : FLASH_ORDER_RESERVED;

	switch (r->type) {
	case FLASH_REC_ORDER:
		o->user_id = r->user_id;
		o->request_id = r->request_id;
		o->created_ns = r->ts_ns;
		o->lsn = lsn;
		o->cancel_lsn = 0;
		o->activity_id = r->activity_id;
		o->sku_id = r->sku_id;
		o->qty = r->qty;
		o->biz_day = r->biz_day;
		o->limit_slot = r->limit_slot;
		o->state = r->value != 0 ? FLASH_ORDER_RESERVED : FLASH_ORDER_ACTIVE;
		o->quota_returned = 0;
		o->pay_by_ns = r->value;
		o->confirm_lsn = 0;
		break;
	case FLASH_REC_CONFIRM:
		if (o->state == FLASH_ORDER_RESERVED) {
			o->state = FLASH_ORDER_ACTIVE;
			o->confirm_lsn = lsn;
		}
		break;
	case FLASH_REC_CANCEL:
	case FLASH_REC_EXPIRE:
		/* a cancel of an order the WAL never had leaves the number
		 * without an ORDER: the comparison shows it */
		if (o->state == from) {
			o->state = r->type == FLASH_REC_EXPIRE ? FLASH_ORDER_EXPIRED : FLASH_ORDER_CANCELLED;
			o->quota_returned = (r->flags & 1u) ? 1 : 0;
			o->cancel_lsn = lsn;
		}
		break;
	}
}

static int fold_one(fold_t *f, const struct flash_record *r, uint64_t lsn, unsigned lines);

/* ------------------------------------------------------------------------
 * Carts.  Every operation on a cart is one record per line, in line
 * order, its last flagged FLASH_REC_F_LAST, other handles' records maybe
 * between them (api/flashstock.h section 9).  The fold counts a cart's
 * operation only once its last line is read, every line then in its own
 * sku, so a cart a torn WAL tail cut -- never acknowledged, not placed in a
 * rebuilt segment nor applied to MariaDB -- counts nowhere.  Until then its
 * lines wait in ff_open (fold_cart_lines_open()).  A group is torn when
 * the handle slot that wrote it writes anything but its next line (a
 * slot's records reach the WAL in its ring's order, where a cart's lines
 * follow each other), when a line comes out of order, or when it stays
 * open over FOLD_CART_SPAN records (its lines reach the ring at once and
 * the WAL within a drain round or two: only a torn one stays open so long).
 * ------------------------------------------------------------------------ */

#define FOLD_CART_SPAN (UINT64_C(1) << 20)

static int rec_cart(const struct flash_record *r)
{
	return (r->flags & FLASH_REC_F_CART) &&
	       (r->type == FLASH_REC_ORDER || r->type == FLASH_REC_CANCEL ||
	        r->type == FLASH_REC_CONFIRM || r->type == FLASH_REC_EXPIRE);
}

static int line_of(const struct fold_line *l, const struct flash_record *r)
{
	return l->fl_rec.order_no == r->order_no && l->fl_rec.type == r->type &&
	       l->fl_rec.slot == r->slot;
}

/* Drop the open lines of every group that @p r at @p lsn proves torn;
 * @return the lines of @p r's own group still open. */
static unsigned fold_cart_torn(fold_t *f, const struct flash_record *r, uint64_t lsn)
{
	int cart = rec_cart(r);
	unsigned mine = 0;
	size_t k = 0;
	for (size_t i = 0; i < f->ff_open_n; i++) {
		const struct fold_line *l = &f->ff_open[i];
		int same = cart && line_of(l, r);
		/* a group's lines are dropped together (all of one slot, order
		 * and type); one left by the span rule alone is dropped by the
		 * next line, which then comes out of order */
		int torn = (!same && l->fl_rec.slot == r->slot) ||
		           (cart && !same && l->fl_rec.order_no == r->order_no &&
		            l->fl_rec.type == r->type) ||
		           lsn - l->fl_lsn > FOLD_CART_SPAN;
		if (torn) {
			f->ff_torn++;
			continue;
		}
		mine += same;
		f->ff_open[k++] = *l;
	}
	f->ff_open_n = k;
	return mine;
}

/* A cart's line: kept until its group is whole, then every line folded. */
static int fold_cart(fold_t *f, const struct flash_record *r, uint64_t lsn)
{
	unsigned line = FLASH_REC_LINE(r->flags), have = fold_cart_torn(f, r, lsn);
	if (line != have) {             /* out of order: its group torn; it too, but a line 0 */
		size_t k = 0;
		for (size_t i = 0; i < f->ff_open_n; i++)
			if (!line_of(&f->ff_open[i], r))
				f->ff_open[k++] = f->ff_open[i];
		f->ff_torn += f->ff_open_n - k + (line != 0);
		f->ff_open_n = k;
		if (line != 0)
			return FLASH_OK;
	}
	if (f->ff_open_n == f->ff_open_cap) {
		size_t cap = f->ff_open_cap ? f->ff_open_cap * 2 : 64;
		struct fold_line *v = realloc(f->ff_open, cap * sizeof *v);
		if (!v)
			return FLASH_ENOMEM;
		f->ff_open = v;
		f->ff_open_cap = cap;
	}
	f->ff_open[f->ff_open_n++] = (struct fold_line){ lsn, *r };
	if (!(r->flags & FLASH_REC_F_LAST))
		return FLASH_OK;
	/* whole: fold its lines in line order (they are in LSN order here) */
	struct fold_line g[FLASH_CART_LINES_MAX];
	size_t n = 0, k = 0;
	for (size_t i = 0; i < f->ff_open_n; i++) {
		if (line_of(&f->ff_open[i], r) && n < FLASH_CART_LINES_MAX)
			g[n++] = f->ff_open[i];
		else
			f->ff_open[k++] = f->ff_open[i];
	}
	f->ff_open_n = k;
	for (size_t i = 0; i < n; i++) {
		int rc = fold_one(f, &g[i].fl_rec, g[i].fl_lsn, (unsigned)n);
		if (rc != FLASH_OK)
			return rc;
	}
	return FLASH_OK;
}

uint64_t fold_cart_lines_open(const fold_t *f) { return f ? f->ff_open_n : 0; }

uint64_t fold_cart_lines_torn(const fold_t *f) { return f ? f->ff_torn : 0; }

int fold_record(fold_t *f, const struct flash_record *r, uint64_t lsn)
{
	if (!f || !r)
		return FLASH_EINVAL;
	if (rec_cart(r))
		return fold_cart(f, r, lsn);
	if (f->ff_open_n)
		(void)fold_cart_torn(f, r, lsn);
	return fold_one(f, r, lsn, 1);
}

/* One record (a cart's line: when its group is whole, of @p lines lines). */
static int fold_one(fold_t *f, const struct flash_record *r, uint64_t lsn, unsigned lines)
{
	if (r->type == FLASH_REC_ACTIVITY || r->type == FLASH_REC_GEN || r->type == FLASH_REC_PRICE)
		return FLASH_OK;        /* terms and tables: no units move */
	if (r->type == FLASH_REC_ARCHIVE)
		return fold_archive(f, r->activity_id);
	if ((r->type < FLASH_REC_ORDER || r->type > FLASH_REC_SKU) &&
	    r->type != FLASH_REC_CONFIRM && r->type != FLASH_REC_EXPIRE)
		return FLASH_EINVAL;
	/* the engine never writes more than 2^40 units in one record: larger
	 * values are a corrupt WAL, not something to add up (and overflow) */
	if ((r->type == FLASH_REC_SKU && (r->value < 0 || r->value > (1ll << 40))) ||
	    (r->type == FLASH_REC_RESTOCK && (r->value < -(1ll << 40) || r->value > (1ll << 40))))
		return FLASH_EINVAL;
	struct fold_sku *e = fold_get(f, r->activity_id, r->sku_id);
	if (!e)
		return FLASH_ENOMEM;
	/* order number 0 is never issued: such a record counts in its sku's
	 * sums (which then differ) but has no order to compare */
	struct fold_order none, *o = &none;
	memset(&none, 0, sizeof none);
	/* a cart is one order, its line 0's: its later lines move their units
	 * only (their numbers hold no order of their own) */
	int later = rec_cart(r) && FLASH_REC_LINE(r->flags) != 0;
	if (r->type != FLASH_REC_SKU && r->type != FLASH_REC_RESTOCK && r->order_no && !later &&
	    !(o = fold_order(f, r->order_no)))
		return FLASH_ENOMEM;
	int64_t d[3], t = e->total, a = e->available, rs = e->reserved, s = e->sold;
	wal_rec_moves(r, d);
	if (r->type == FLASH_REC_SKU || r->type == FLASH_REC_RESTOCK)
		d[0] = r->value;
	if (__builtin_add_overflow(t, (r->type == FLASH_REC_SKU || r->type == FLASH_REC_RESTOCK) ? r->value : 0, &t) ||
	    __builtin_add_overflow(a, d[0], &a) || __builtin_add_overflow(rs, d[1], &rs) ||
	    __builtin_add_overflow(s, d[2], &s))
		return FLASH_EINVAL;
	e->total = t;
	e->available = a;
	e->reserved = rs;
	e->sold = s;
	/* an ACTIVE order more or less: its units came into sold or left it */
	e->active_orders += d[2] > 0 ? 1 : d[2] < 0 ? -1 : 0;
	fold_order_step(r, o, lsn);
	if (r->type == FLASH_REC_ORDER)
		o->lines = (uint16_t)lines;
	e->last_lsn = lsn;
	f->ff_dirty = 1;
	return FLASH_OK;
}

int fold_seed(fold_t *f, const struct fold_sku *v, size_t n)
{
	if (!f || (!v && n))
		return FLASH_EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct fold_sku *e = fold_get(f, v[i].activity_id, v[i].sku_id);
		if (!e)
			return FLASH_ENOMEM;
		e->total += v[i].total;
		e->available += v[i].available;
		e->sold += v[i].sold;
		e->reserved += v[i].reserved;
		e->active_orders += v[i].active_orders;
		if (v[i].last_lsn > e->last_lsn)
			e->last_lsn = v[i].last_lsn;
		f->ff_dirty = 1;
	}
	return FLASH_OK;
}

struct fold_ctx {
	fold_t *fc_f;
	int fc_rc;
	uint64_t fc_upto;        /* stop after this LSN (0: never) */
	int fc_done;             /* fc_upto reached */
};

static int fold_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct fold_ctx *c = arg;
	if (lsn <= c->fc_f->ff_lsn)
		return 0;               /* folded already */
	if (c->fc_upto && lsn > c->fc_upto) {
		c->fc_done = 1;
		return 1;
	}
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec)) {
		c->fc_rc = FLASH_EWAL_TYPE;
		return 1;
	}
	struct wal_rec wr;
	memcpy(&wr, payload, sizeof wr);
	int rc = fold_record(c->fc_f, &wr.wr_rec, lsn);
	if (rc == FLASH_EINVAL)
		rc = FLASH_EWAL_TYPE;         /* a record of a type the fold does not know */
	c->fc_rc = rc;
	if (rc == FLASH_OK)
		c->fc_f->ff_lsn = lsn;
	if (rc == FLASH_OK && c->fc_upto && lsn == c->fc_upto) {
		c->fc_done = 1;
		return 1;
	}
	return rc != FLASH_OK;
}

/* The fold's outcome: its own failure, else the replay's (its stop cause as
 * it is: a CRC mismatch is FLASH_EWAL_CRC, not a general code beside it). */
static int fold_result(const struct fold_ctx *c, int wrc)
{
	if (c->fc_rc)
		return c->fc_rc;
	if (wrc == FLASH_EWAL_STOPPED && c->fc_done)
		return FLASH_OK;                /* stopped at upto_lsn, as asked */
	return wrc;
}

int fold_start(fold_t *f, const char *wal_dir, uint64_t upto_lsn)
{
	if (!f || !wal_dir)
		return FLASH_EINVAL;
	if (f->ff_lsn != 0 || f->ff_base_lsn != 0)
		return FLASH_OK;                      /* under way already */
	/* old WAL files removed: start from a snapshot's fold (snapshot.h) */
	uint64_t from = 0;
	int src = snap_fold_seed(wal_dir, f, upto_lsn, &from);
	if (src == FLASH_ESNAP_GAP || src == FLASH_ESNAP_CORRUPT)
		return FLASH_EWAL_GAP;          /* no snapshot bridges the removed files */
	if (src == FLASH_ENOMEM)
		return FLASH_ENOMEM;
	if (src != FLASH_OK)
		return FLASH_ESYS;
	if (from > 1)
		f->ff_lsn = f->ff_base_lsn = from - 1;
	return FLASH_OK;
}

uint64_t fold_base_lsn(const fold_t *f) { return f ? f->ff_base_lsn : 0; }

int fold_wal_upto(fold_t *f, const char *wal_dir, uint64_t upto_lsn)
{
	if (!f || !wal_dir)
		return FLASH_EINVAL;
	int src = fold_start(f, wal_dir, upto_lsn);
	if (src != FLASH_OK)
		return src;
	if (upto_lsn && f->ff_lsn >= upto_lsn)
		return FLASH_OK;
	struct fold_ctx c = { f, FLASH_OK, upto_lsn, 0 };
	struct wal_replay_report rep;
	return fold_result(&c, wal_replay(wal_dir, f->ff_lsn + 1, fold_frame, &c, 0, &rep));
}

int fold_wal(fold_t *f, const char *wal_dir)
{
	return fold_wal_upto(f, wal_dir, 0);
}

int fold_wal_live(fold_t *f, wal_t *w, uint64_t upto_lsn)
{
	if (!f || !w)
		return FLASH_EINVAL;
	if (upto_lsn && f->ff_lsn >= upto_lsn)
		return FLASH_OK;
	struct fold_ctx c = { f, FLASH_OK, upto_lsn, 0 };
	struct wal_replay_report rep;
	memset(&rep, 0, sizeof rep);
	return fold_result(&c, wal_read_durable(w, f->ff_lsn + 1, fold_frame, &c, &rep));
}

static int cmp_fold(const void *x, const void *y)
{
	const struct fold_sku *a = x, *b = y;
	uint64_t ka = sku_key(a->activity_id, a->sku_id), kb = sku_key(b->activity_id, b->sku_id);
	return ka < kb ? -1 : ka > kb;
}

int fold_skus(fold_t *f, const struct fold_sku **v, size_t *n)
{
	if (!f || !v || !n)
		return FLASH_EINVAL;
	if (f->ff_dirty || !f->ff_sorted) {
		free(f->ff_sorted);
		f->ff_sorted = malloc((f->ff_n ? f->ff_n : 1) * sizeof *f->ff_sorted);
		if (!f->ff_sorted)
			return FLASH_ENOMEM;
		if (f->ff_n)
			memcpy(f->ff_sorted, f->ff_v, f->ff_n * sizeof *f->ff_v);
		qsort(f->ff_sorted, f->ff_n, sizeof *f->ff_sorted, cmp_fold);
		f->ff_dirty = 0;
	}
	*v = f->ff_sorted;
	*n = f->ff_n;
	return FLASH_OK;
}

const struct fold_sku *fold_sku_find(fold_t *f, uint32_t a, uint32_t s)
{
	const struct fold_sku *v;
	size_t n;
	struct fold_sku key = { .activity_id = a, .sku_id = s };
	if (fold_skus(f, &v, &n) != FLASH_OK)
		return NULL;
	return bsearch(&key, v, n, sizeof *v, cmp_fold);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

int fold_order_numbers(const fold_t *f, uint64_t **out, size_t *n)
{
	size_t k = 0;
	uint64_t *v;

	if (f == NULL || out == NULL || n == NULL)
		return FLASH_EINVAL;
	if ((v = malloc((f->ff_on ? f->ff_on : 1) * sizeof *v)) == NULL)
		return FLASH_ENOMEM;
	for (size_t i = 0; i < f->ff_ocap; i++)
		if (f->ff_okey[i] && f->ff_oval[i].state != FLASH_ORDER_NONE)
			v[k++] = f->ff_okey[i];
	qsort(v, k, sizeof *v, cmp_u64);
	*out = v;
	*n = k;
	return FLASH_OK;
}
