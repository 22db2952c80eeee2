/*
 * reconcile.c -- compare the segment, the WAL and MySQL (contract in
 * reconcile.h).
 *
 * Divisions (the WAL fold itself is fold.c):
 *   2. Gathering             each witness as an array sorted by (activity, sku)
 *   3. Orders                segment orders vs MySQL rows, in chunks of numbers
 *   4. Comparison            a three-way merge by (activity, sku)
 *
 * Archived activities (an ARCHIVE record in the WAL, or archived_lsn in
 * MySQL): the segment reclaimed their skus and orders, so their absence
 * from it is not a difference; the WAL and MySQL keep them and are still
 * compared with each other, sku by sku and order by order.
 *   5. Report                free, print
 *   6. One run               open the witnesses by name, compare, print, exit code
 *
 * Memory stays bounded by the number of skus plus one chunk of orders: the
 * order comparison walks order numbers CHUNK at a time, reading the segment's
 * orders of the chunk into an array and streaming MySQL's rows of the same
 * range against it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"
#include "wal.h"

/* ------------------------------------------------------------------------
 * 2. Gathering
 * ------------------------------------------------------------------------ */

static uint64_t sku_key(uint32_t a, uint32_t s) { return (uint64_t)a << 32 | s; }

/* The segment's view of one sku, with the sums over its order table. */
struct segsku {
	uint32_t activity_id;
	uint32_t sku_id;
	uint64_t total;
	uint64_t available;
	uint64_t active_qty;
	uint64_t active_orders;
	uint64_t reserved_qty;           /* units of its RESERVED orders */
};

static int cmp_seg(const void *x, const void *y)
{
	const struct segsku *a = x, *b = y;
	uint64_t ka = sku_key(a->activity_id, a->sku_id), kb = sku_key(b->activity_id, b->sku_id);
	return ka < kb ? -1 : ka > kb;
}

/* Every sku entry of the catalog.  Entries of archived activities are
 * free (FLASH_ENOT_FOUND) and may sit between live ones: the walk covers
 * the whole capacity. */
static int seg_skus(flash_t *h, struct segsku **out, size_t *n)
{
	size_t cap = 64, k = 0;
	struct flash_seg_opts so;
	int orc = flash_seg_opts_get(h, &so);
	if (orc)
		return orc;
	struct segsku *v = malloc(cap * sizeof *v);
	if (!v)
		return FLASH_ENOMEM;
	for (uint32_t i = 0; i < so.max_skus; i++) {
		struct flash_sku_info si;
		int rc = flash_sku_at(h, i, &si);
		if (rc == FLASH_ENOT_FOUND || rc == FLASH_EARCHIVED)
			continue;       /* past the end, or an entry an archive freed */
		if (rc) {
			free(v);
			return rc;
		}
		if (k == cap) {
			cap *= 2;
			struct segsku *nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				free(v);
				return FLASH_ENOMEM;
			}
			v = nv;
		}
		memset(&v[k], 0, sizeof v[k]);
		v[k].activity_id = si.activity_id;
		v[k].sku_id = si.sku_id;
		v[k].total = si.total;
		v[k].available = si.available;
		k++;
	}
	qsort(v, k, sizeof *v, cmp_seg);
	*out = v;
	*n = k;
	return FLASH_OK;
}

static struct segsku *seg_find(struct segsku *v, size_t n, uint32_t a, uint32_t s)
{
	struct segsku key = { .activity_id = a, .sku_id = s };
	return bsearch(&key, v, n, sizeof *v, cmp_seg);
}

/* The archived activities, ascending, unique: MySQL's and the WAL's. */
struct archset {
	uint32_t *v;
	size_t    n;
};

static int archived(const struct archset *a, uint32_t id)
{
	size_t lo = 0, hi = a ? a->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->v[mid] == id)
			return 1;
		if (a->v[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Merge @p add (ascending) into the set. */
static int archset_add(struct archset *a, const uint32_t *add, size_t n)
{
	if (!n)
		return FLASH_OK;
	uint32_t *v = malloc((a->n + n) * sizeof *v);
	if (!v)
		return FLASH_ENOMEM;
	size_t i = 0, j = 0, k = 0;
	while (i < a->n || j < n) {
		uint32_t x = j >= n || (i < a->n && a->v[i] <= add[j]) ? a->v[i] : add[j];
		while (i < a->n && a->v[i] == x)
			i++;
		while (j < n && add[j] == x)
			j++;
		v[k++] = x;
	}
	free(a->v);
	a->v = v;
	a->n = k;
	return FLASH_OK;
}

#define MAX_DIFFS (1u << 20)

/* Room for one more difference; past MAX_DIFFS (or without memory) it is
 * counted in rep->found but written to a scratch entry. */
static struct diff *diff_add(struct reconcile_report *rep, int kind, unsigned witnesses,
                                   uint32_t a, uint32_t s)
{
	static __thread struct diff scratch;
	struct diff *d = &scratch;
	rep->found++;
	if (rep->n < MAX_DIFFS) {
		if (rep->n == rep->cap) {
			size_t cap = rep->cap ? rep->cap * 2 : 32;
			struct diff *v = realloc(rep->diffs, cap * sizeof *v);
			if (v) {
				rep->diffs = v;
				rep->cap = cap;
			}
		}
		if (rep->n < rep->cap)
			d = &rep->diffs[rep->n++];
	}
	memset(d, 0, sizeof *d);
	d->kind = (uint16_t)kind;
	d->witnesses = (uint16_t)witnesses;
	d->activity_id = a;
	d->sku_id = s;
	d->seg = d->wal = d->sql = DIFF_NA;
	return d;
}

/* ------------------------------------------------------------------------
 * 3. Orders
 * ------------------------------------------------------------------------ */

#define CHUNK 65536u

struct ochunk {
	struct reconcile_report *rep;
	struct flash_order_info *seg;    /* orders from..from+len-1, as witness w has them */
	uint8_t *seen;
	uint64_t from;
	uint64_t len;
	unsigned w;                      /* FLASH_W_SEGMENT or FLASH_W_WAL */
	const struct archset *arch;      /* archived activities */
};

static const char *wname(unsigned w) { return w == FLASH_W_WAL ? "the WAL" : "the segment"; }

/* Put a value of witness @p w into the diff's matching field. */
static void wset(struct diff *d, unsigned w, int64_t v)
{
	if (w == FLASH_W_WAL)
		d->wal = v;
	else
		d->seg = v;
}

static void order_diff(struct reconcile_report *rep, unsigned w, const struct flash_order_info *so,
                       const struct rsql_order *mo)
{
	const char *field = NULL;
	int64_t sv = 0, mv = 0;
	if (so->state != mo->state)
		field = "state", sv = so->state, mv = mo->state;
	else if (so->qty != mo->qty)
		field = "qty", sv = so->qty, mv = mo->qty;
	else if (so->user_id != mo->user_id)
		field = "user_id", sv = (int64_t)so->user_id, mv = (int64_t)mo->user_id;
	else if (so->activity_id != mo->activity_id)
		field = "activity_id", sv = so->activity_id, mv = mo->activity_id;
	else if (so->sku_id != mo->sku_id)
		field = "sku_id", sv = so->sku_id, mv = mo->sku_id;
	else if (so->limit_slot != mo->limit_slot)
		field = "limit_slot", sv = so->limit_slot, mv = mo->limit_slot;
	else if (so->biz_day != mo->biz_day)
		field = "biz_day", sv = so->biz_day, mv = mo->biz_day;
	else if (so->lines && mo->lines && so->lines != mo->lines)
		field = "lines", sv = so->lines, mv = mo->lines;    /* a cart's, or a plain order's 1 */
	if (!field)
		return;
	struct diff *d = diff_add(rep, DIFF_ORDER, w | FLASH_W_MYSQL,
	                                so->activity_id, so->sku_id);
	d->order_no = so->order_no;
	d->user_id = so->user_id;
	wset(d, w, sv);
	d->sql = mv;
	snprintf(d->what, sizeof d->what, "order %" PRIu64 " %s differs", so->order_no, field);
}

static int ochunk_row(void *arg, const struct rsql_order *mo)
{
	struct ochunk *c = arg;
	if (mo->order_no < c->from || mo->order_no >= c->from + c->len)
		return 0;
	uint64_t i = mo->order_no - c->from;
	c->seen[i] = 1;
	const struct flash_order_info *so = &c->seg[i];
	if (so->state == FLASH_ORDER_NONE && archived(c->arch, mo->activity_id))
		return 0;               /* reclaimed by the segment: MySQL and the WAL keep it */
	if (so->state == FLASH_ORDER_NONE) {
		struct diff *d = diff_add(c->rep, DIFF_MISSING, c->w,
		                                mo->activity_id, mo->sku_id);
		d->order_no = mo->order_no;
		d->user_id = mo->user_id;
		d->sql = mo->state;
		snprintf(d->what, sizeof d->what, "order %" PRIu64 " in MySQL, %s", mo->order_no,
		         c->w == FLASH_W_WAL ? "not in the WAL" : "never completed in the segment");
		return 0;
	}
	order_diff(c->rep, c->w, so, mo);
	return 0;
}

struct orphan {
	struct reconcile_report *rep;
	unsigned w;
	const struct archset *arch;
};

static int orphan_row(void *arg, const struct rsql_order *mo)
{
	struct orphan *o = arg;
	if (archived(o->arch, mo->activity_id))
		return 0;               /* a segment rebuilt after the archive never numbered it */
	struct diff *d = diff_add(o->rep, DIFF_MISSING, o->w, mo->activity_id, mo->sku_id);
	d->order_no = mo->order_no;
	d->user_id = mo->user_id;
	d->sql = mo->state;
	snprintf(d->what, sizeof d->what, "order %" PRIu64 " in MySQL, beyond %s's numbers",
	         mo->order_no, wname(o->w));
	return 0;
}

/* After MySQL's rows of a chunk: the orders of witness c->w MySQL lacks. */
static void ochunk_missing(struct ochunk *c)
{
	for (uint64_t i = 0; i < c->len; i++) {
		const struct flash_order_info *o = &c->seg[i];
		if (c->seen[i] || o->state == FLASH_ORDER_NONE)
			continue;
		struct diff *d = diff_add(c->rep, DIFF_MISSING, FLASH_W_MYSQL,
		                                o->activity_id, o->sku_id);
		d->order_no = o->order_no;
		d->user_id = o->user_id;
		wset(d, c->w, o->state);
		snprintf(d->what, sizeof d->what, "order %" PRIu64 " missing in MySQL", o->order_no);
	}
}

struct wjoin {
	struct reconcile_report *rep;
	const fold_t *f;
	const uint64_t *nos;             /* the WAL's order numbers, ascending */
	size_t n, i;
};

static void wal_order_info(const fold_t *f, uint64_t no, struct flash_order_info *o)
{
	struct fold_order fo;
	memset(o, 0, sizeof *o);
	if (fold_order_get(f, no, &fo) != FLASH_OK)
		return;
	o->order_no = no;
	o->user_id = fo.user_id;
	o->activity_id = fo.activity_id;
	o->sku_id = fo.sku_id;
	o->qty = fo.qty;
	o->state = fo.state;
	o->limit_slot = fo.limit_slot;
	o->biz_day = fo.biz_day;
	o->created_ns = fo.created_ns;
	o->lines = fo.lines;
}

static void wal_missing_in_mysql(struct wjoin *w, uint64_t no)
{
	struct flash_order_info o;
	wal_order_info(w->f, no, &o);
	struct diff *d = diff_add(w->rep, DIFF_MISSING, FLASH_W_MYSQL, o.activity_id, o.sku_id);
	d->order_no = no;
	d->user_id = o.user_id;
	d->wal = o.state;
	snprintf(d->what, sizeof d->what, "order %" PRIu64 " missing in MySQL", no);
}

static int wjoin_row(void *arg, const struct rsql_order *mo)
{
	struct wjoin *w = arg;
	while (w->i < w->n && w->nos[w->i] < mo->order_no)
		wal_missing_in_mysql(w, w->nos[w->i++]);
	if (w->i < w->n && w->nos[w->i] == mo->order_no) {
		struct flash_order_info o;
		wal_order_info(w->f, mo->order_no, &o);
		order_diff(w->rep, FLASH_W_WAL, &o, mo);
		w->i++;
		return 0;
	}
	if (fold_base_lsn(w->f) != 0)
		return 0;   /* placed before the snapshot the fold started from: only its sums are known */
	struct diff *d = diff_add(w->rep, DIFF_MISSING, FLASH_W_WAL, mo->activity_id, mo->sku_id);
	d->order_no = mo->order_no;
	d->user_id = mo->user_id;
	d->sql = mo->state;
	snprintf(d->what, sizeof d->what, "order %" PRIu64 " in MySQL, not in the WAL", mo->order_no);
	return 0;
}

/*
 * Every order of the WAL fold against MySQL: the fold's numbers sorted,
 * merged with one scan of MySQL's rows in number order (streamed).
 */
static int wal_orders(fold_t *f, mdb_t *m, struct reconcile_report *rep)
{
	size_t n = 0;
	uint64_t *nos;
	int rc = fold_order_numbers(f, &nos, &n);
	if (rc != FLASH_OK)
		return rc;
	struct wjoin w = { rep, f, nos, n, 0 };
	rc = rsql_orders_scan(m, 1, UINT64_MAX >> 1, wjoin_row, &w);
	if (rc == FLASH_OK)
		while (w.i < w.n)
			wal_missing_in_mysql(&w, w.nos[w.i++]);
	rep->orders_checked += n;
	free(nos);
	return rc;
}

/*
 * Number @p no read as a cart's later line (FLASH_ORDER_NONE with line >=
 * 1, flash_order_get): the line itself, from its order-table slot
 * (flash_order_at: the line's sku and qty, the cart's state), into @p out.
 * @return 1 when @p out holds the line, else 0.
 */
static int seg_cart_line(flash_t *h, uint64_t no, const struct flash_order_info *o,
                         uint32_t max_orders, struct flash_order_info *out)
{
	if (o->state != FLASH_ORDER_NONE || o->line == 0 || o->line >= o->lines || !max_orders)
		return 0;
	uint64_t ctr = no & ((UINT64_C(1) << 56) - 1);
	if (!ctr || flash_order_at(h, (uint32_t)((ctr - 1) % max_orders), out) != FLASH_OK)
		return 0;
	return out->line == o->line && out->order_no + out->line == no;
}

/*
 * One pass over the segment's orders: sums of active orders per sku (for the
 * ORDER_SUM check) and, with @p m, the order-by-order comparison.  A cart is
 * compared as one order (its number's row, line 0) and summed line by line:
 * its later numbers count in their lines' skus (seg_cart_line).
 */
static int seg_orders(flash_t *h, mdb_t *m, struct segsku *skus, size_t nskus,
                      const struct archset *arch, struct reconcile_report *rep)
{
	uint64_t max = flash_orders_max(h);
	struct ochunk c = { .rep = rep, .w = FLASH_W_SEGMENT, .arch = arch };
	c.seg = malloc(CHUNK * sizeof *c.seg);
	c.seen = malloc(CHUNK);
	int rc = FLASH_OK;
	if (!c.seg || !c.seen) {
		rc = FLASH_ENOMEM;
		goto out;
	}
	/* numbers carry the segment's box id in their top byte (flash_box_id_set):
	 * this segment's run from that base up */
	uint64_t base = max & ~((UINT64_C(1) << 56) - 1);
	struct flash_seg_opts so;
	uint32_t max_orders = flash_seg_opts_get(h, &so) == FLASH_OK ? so.max_orders : 0;

	for (uint64_t from = base + 1; from <= max; from += CHUNK) {
		uint64_t len = max - from + 1 < CHUNK ? max - from + 1 : CHUNK;
		c.from = from;
		c.len = len;
		memset(c.seen, 0, len);
		for (uint64_t i = 0; i < len; i++) {
			rc = flash_order_get(h, from + i, &c.seg[i]);
			if (rc == FLASH_EARCHIVED) {
				/* its activity was reclaimed: read as no order here, and
				 * MySQL's row of an archived activity is no difference */
				memset(&c.seg[i], 0, sizeof c.seg[i]);
				rc = FLASH_OK;
			}
			if (rc)
				goto out;
			const struct flash_order_info *o = &c.seg[i];
			struct flash_order_info line;
			if (seg_cart_line(h, from + i, o, max_orders, &line))
				o = &line;
			if (o->state != FLASH_ORDER_ACTIVE && o->state != FLASH_ORDER_RESERVED)
				continue;
			struct segsku *s = seg_find(skus, nskus, o->activity_id, o->sku_id);
			if (s && o->state == FLASH_ORDER_RESERVED) {
				s->reserved_qty += o->qty;
			} else if (s) {
				s->active_qty += o->qty;
				s->active_orders++;
			} else {
				struct diff *d = diff_add(rep, DIFF_MISSING, FLASH_W_SEGMENT,
				                                o->activity_id, o->sku_id);
				d->order_no = o->order_no;
				snprintf(d->what, sizeof d->what, "order %" PRIu64 " of a sku the segment lacks",
				         o->order_no);
			}
		}
		if (!m)
			continue;
		rc = rsql_orders_scan(m, from, from + len - 1, ochunk_row, &c);
		if (rc)
			goto out;
		ochunk_missing(&c);
		rep->orders_checked += len;
	}
	if (m) {
		struct orphan orph = { rep, FLASH_W_SEGMENT, arch };
		rc = rsql_orders_scan(m, max + 1, UINT64_MAX >> 1, orphan_row, &orph);
	}
out:
	free(c.seg);
	free(c.seen);
	return rc;
}

/* ------------------------------------------------------------------------
 * 4. Comparison
 * ------------------------------------------------------------------------ */

static uint64_t absdiff(int64_t a, int64_t b) { return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a); }

/* Compare one field across the witnesses that have it; record a diff if they disagree. */
static uint64_t cmp_field(struct reconcile_report *rep, int kind, const char *name,
                          uint32_t a, uint32_t s, unsigned have, int64_t seg, int64_t wal, int64_t sql)
{
	int64_t vals[3];
	int64_t vseg = (have & FLASH_W_SEGMENT) ? seg : DIFF_NA;
	int64_t vwal = (have & FLASH_W_WAL) ? wal : DIFF_NA;
	int64_t vsql = (have & FLASH_W_MYSQL) ? sql : DIFF_NA;
	size_t k = 0;
	if (vseg != DIFF_NA) vals[k++] = vseg;
	if (vwal != DIFF_NA) vals[k++] = vwal;
	if (vsql != DIFF_NA) vals[k++] = vsql;
	uint64_t spread = 0;
	for (size_t i = 1; i < k; i++)
		for (size_t j = 0; j < i; j++)
			if (absdiff(vals[i], vals[j]) > spread)
				spread = absdiff(vals[i], vals[j]);
	if (!spread)
		return 0;
	struct diff *d = diff_add(rep, kind, have, a, s);
	d->seg = vseg;
	d->wal = vwal;
	d->sql = vsql;
	snprintf(d->what, sizeof d->what, "%s differs", name);
	return spread;
}

static void user_limits(struct reconcile_report *rep, const struct rsql_user_excess *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct diff *d = diff_add(rep, DIFF_USER_LIMIT, FLASH_W_MYSQL, v[i].activity_id,
		                                v[i].scope_sku);
		d->user_id = v[i].user_id;
		d->sql = v[i].holding;
		snprintf(d->what, sizeof d->what, "user %" PRIu64 " holds %u slot(s), highest %u, limit %u, day %u",
		         v[i].user_id, v[i].holding, v[i].max_slot, v[i].limit, v[i].scope_day);
	}
}

/* Inside each witness: the balance, and sold and reserved against the
 * units of the orders in those states. */
static void cmp_inside(struct reconcile_report *rep, uint32_t a, uint32_t s, const struct segsku *se,
                       const struct rsql_sku *qe, const struct fold_sku *we)
{
	int64_t sql_sold = qe ? (int64_t)qe->sold : 0;
	int64_t seg_sold = se ? (int64_t)se->total - (int64_t)se->available - (int64_t)se->reserved_qty : 0;

	if (we && (we->available + we->reserved + we->sold != we->total || we->available < 0 ||
	           we->sold < 0 || we->reserved < 0)) {
		struct diff *d = diff_add(rep, DIFF_BALANCE, FLASH_W_WAL, a, s);
		d->wal = we->available;
		snprintf(d->what, sizeof d->what, "WAL: available %" PRId64 " + reserved %" PRId64 " + sold %"
		         PRId64 " vs total %" PRId64, we->available, we->reserved, we->sold, we->total);
	}
	if (qe && qe->has_stock_row && qe->available + qe->reserved + qe->sold != qe->total) {
		struct diff *d = diff_add(rep, DIFF_BALANCE, FLASH_W_MYSQL, a, s);
		d->sql = (int64_t)qe->available;
		snprintf(d->what, sizeof d->what, "MySQL: available %" PRIu64 " + reserved %" PRIu64 " + sold %"
		         PRIu64 " vs total %" PRIu64, qe->available, qe->reserved, qe->sold, qe->total);
	}
	if (qe && qe->reserved_qty != qe->reserved) {
		struct diff *d = diff_add(rep, DIFF_ORDER_SUM, FLASH_W_MYSQL, a, s);
		d->sql = (int64_t)qe->reserved_qty;
		snprintf(d->what, sizeof d->what, "MySQL: reserved %" PRIu64 " vs reserved order units %" PRIu64,
		         qe->reserved, qe->reserved_qty);
	}
	if (qe && (int64_t)qe->active_qty != sql_sold) {
		struct diff *d = diff_add(rep, DIFF_ORDER_SUM, FLASH_W_MYSQL, a, s);
		d->sql = (int64_t)qe->active_qty;
		snprintf(d->what, sizeof d->what, "MySQL: sold %" PRId64 " vs active order units %" PRIu64,
		         sql_sold, qe->active_qty);
	}
	if (se && (int64_t)se->active_qty != seg_sold) {
		struct diff *d = diff_add(rep, DIFF_ORDER_SUM, FLASH_W_SEGMENT, a, s);
		d->seg = (int64_t)se->active_qty;
		snprintf(d->what, sizeof d->what, "segment: sold %" PRId64 " vs active order units %" PRIu64,
		         seg_sold, se->active_qty);
	}
}

/* One (activity, sku) as each witness has it (NULL: not there): the three
 * compared field by field, then each witness's own balance. */
static void cmp_sku(struct reconcile_report *rep, const struct archset *arch, uint32_t a,
                    uint32_t s, const struct segsku *se, const struct rsql_sku *qe,
                    const struct fold_sku *we)
{
	rep->skus++;

	unsigned have = (se ? FLASH_W_SEGMENT : 0) | (we ? FLASH_W_WAL : 0) |
	                (qe && qe->has_stock_row ? FLASH_W_MYSQL : 0);
	unsigned missing = rep->witnesses & ~have;
	if (!se && archived(arch, a))
		missing &= ~FLASH_W_SEGMENT;   /* reclaimed there; WAL vs MySQL still compared */
	/* the segment keeps no reserved figure: its RESERVED orders' units are
	 * out of available, and what remains of total is sold */
	int64_t seg_total = se ? (int64_t)se->total : 0, seg_avail = se ? (int64_t)se->available : 0;
	int64_t seg_resv = se ? (int64_t)se->reserved_qty : 0;
	int64_t seg_sold = seg_total - seg_avail - seg_resv;
	int64_t wal_total = we ? we->total : 0, wal_avail = we ? we->available : 0;
	int64_t wal_sold = we ? we->sold : 0, wal_resv = we ? we->reserved : 0;
	int64_t sql_total = qe ? (int64_t)qe->total : 0, sql_avail = qe ? (int64_t)qe->available : 0;
	int64_t sql_sold = qe ? (int64_t)qe->sold : 0, sql_resv = qe ? (int64_t)qe->reserved : 0;
	if (missing) {
		struct diff *d = diff_add(rep, DIFF_MISSING, missing, a, s);
		d->seg = se ? seg_total : DIFF_NA;
		d->wal = we ? wal_total : DIFF_NA;
		d->sql = qe && qe->has_stock_row ? sql_total : DIFF_NA;
		snprintf(d->what, sizeof d->what, "sku missing (values: total)");
	}
	uint64_t spread = 0, x;
	x = cmp_field(rep, DIFF_TOTAL, "total", a, s, have, seg_total, wal_total, sql_total);
	spread = x > spread ? x : spread;
	x = cmp_field(rep, DIFF_AVAILABLE, "available", a, s, have, seg_avail, wal_avail, sql_avail);
	spread = x > spread ? x : spread;
	x = cmp_field(rep, DIFF_RESERVED, "reserved", a, s, have, seg_resv, wal_resv, sql_resv);
	spread = x > spread ? x : spread;
	x = cmp_field(rep, DIFF_SOLD, "sold", a, s, have, seg_sold, wal_sold, sql_sold);
	spread = x > spread ? x : spread;
	rep->diff_units += spread;
	int64_t maxtotal = seg_total > wal_total ? seg_total : wal_total;
	maxtotal = sql_total > maxtotal ? sql_total : maxtotal;
	rep->units += maxtotal > 0 ? (uint64_t)maxtotal : 0;

	cmp_inside(rep, a, s, se, qe, we);
}

int reconcile_compare(flash_t *h, mdb_t *m, fold_t *wal, unsigned flags,
                    struct reconcile_report *rep)
{
	if (!rep || (!h && !m && !wal) || (flags & ~(RECONCILE_ORDERS | RECONCILE_WAL_ORDERS)) ||
	    ((flags & RECONCILE_WAL_ORDERS) && (!m || !wal)))
		return FLASH_EINVAL;
	memset(rep, 0, sizeof *rep);
	rep->witnesses = (h ? FLASH_W_SEGMENT : 0) | (wal ? FLASH_W_WAL : 0) | (m ? FLASH_W_MYSQL : 0);

	struct segsku *sv = NULL;
	size_t sn = 0, qn = 0, wn = 0;
	struct rsql_sku *qv = NULL;
	const struct fold_sku *wv = NULL;
	struct rsql_user_excess *uv = NULL;
	size_t un = 0;
	struct archset arch = { NULL, 0 };
	int rc = FLASH_OK;

	if (m) {
		uint32_t *av = NULL;
		size_t an = 0;
		if ((rc = rsql_archived(m, &av, &an)))
			goto out;
		rc = archset_add(&arch, av, an);
		free(av);
		if (rc)
			goto out;
	}
	if (wal) {
		const uint32_t *av;
		size_t an;
		if ((rc = fold_archived(wal, &av, &an)) || (rc = archset_add(&arch, av, an)))
			goto out;
	}
	if (h) {
		if ((rc = seg_skus(h, &sv, &sn)))
			goto out;
		if ((rc = seg_orders(h, (flags & RECONCILE_ORDERS) ? m : NULL, sv, sn, &arch, rep)))
			goto out;
	}
	if (flags & RECONCILE_WAL_ORDERS) {
		if ((rc = wal_orders(wal, m, rep)))
			goto out;
	}
	if (m) {
		if ((rc = rsql_skus(m, &qv, &qn)))
			goto out;
		if ((rc = rsql_users_over_limit(m, &uv, &un)))
			goto out;
		user_limits(rep, uv, un);
	}
	if (wal && (rc = fold_skus(wal, &wv, &wn)))
		goto out;

	/* Three-way merge by (activity, sku). */
	size_t i = 0, j = 0, k = 0;
	while (i < sn || j < qn || k < wn) {
		uint64_t key = UINT64_MAX;
		if (i < sn && sku_key(sv[i].activity_id, sv[i].sku_id) < key)
			key = sku_key(sv[i].activity_id, sv[i].sku_id);
		if (j < qn && sku_key(qv[j].activity_id, qv[j].sku_id) < key)
			key = sku_key(qv[j].activity_id, qv[j].sku_id);
		if (k < wn && sku_key(wv[k].activity_id, wv[k].sku_id) < key)
			key = sku_key(wv[k].activity_id, wv[k].sku_id);
		uint32_t a = (uint32_t)(key >> 32), s = (uint32_t)key;
		const struct segsku *se = i < sn && sku_key(sv[i].activity_id, sv[i].sku_id) == key ? &sv[i++] : NULL;
		const struct rsql_sku *qe = j < qn && sku_key(qv[j].activity_id, qv[j].sku_id) == key ? &qv[j++] : NULL;
		const struct fold_sku *we = k < wn && sku_key(wv[k].activity_id, wv[k].sku_id) == key ? &wv[k++] : NULL;
		cmp_sku(rep, &arch, a, s, se, qe, we);
	}
out:
	free(arch.v);
	free(sv);
	free(qv);
	free(uv);
	if (rc) {
		reconcile_report_free(rep);
		rep->witnesses = 0;
	}
	return rc;
}

/* ------------------------------------------------------------------------
 * 5. Report
 * ------------------------------------------------------------------------ */

const char *diff_name(int kind)
{
	switch (kind) {
	case DIFF_MISSING:    return "missing";
	case DIFF_TOTAL:      return "total";
	case DIFF_AVAILABLE:  return "available";
	case DIFF_SOLD:       return "sold";
	case DIFF_BALANCE:    return "balance";
	case DIFF_ORDER_SUM:  return "order_sum";
	case DIFF_USER_LIMIT: return "user_limit";
	case DIFF_ORDER:      return "order";
	case DIFF_RESERVED:   return "reserved";
	default:                    return "unknown";
	}
}

void reconcile_report_free(struct reconcile_report *rep)
{
	if (!rep)
		return;
	free(rep->diffs);
	rep->diffs = NULL;
	rep->n = rep->cap = 0;
	rep->found = 0;
}

static void witnesses_str(unsigned w, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", (w & FLASH_W_SEGMENT) ? "segment" : "",
	         (w & FLASH_W_SEGMENT) && (w & (FLASH_W_WAL | FLASH_W_MYSQL)) ? "," : "",
	         (w & FLASH_W_WAL) ? "wal" : "", (w & FLASH_W_WAL) && (w & FLASH_W_MYSQL) ? "," : "",
	         (w & FLASH_W_MYSQL) ? "mysql" : "");
}

static void val(FILE *out, const char *name, int64_t v, int json)
{
	if (v == DIFF_NA)
		fprintf(out, json ? ",\"%s\":null" : " %s=-", name);
	else
		fprintf(out, json ? ",\"%s\":%" PRId64 : " %s=%" PRId64, name, v);
}

static void fval(char *buf, size_t len, size_t *k, const char *name, int64_t v)
{
	if (*k >= len)
		return;
	int n = v == DIFF_NA ? snprintf(buf + *k, len - *k, " %s=-", name)
	                           : snprintf(buf + *k, len - *k, " %s=%" PRId64, name, v);
	*k += n > 0 ? (size_t)n : 0;
}

void diff_format(const struct diff *d, char *buf, size_t len)
{
	char w[32];
	size_t k = 0;
	int n;
	if (!len)
		return;
	witnesses_str(d->witnesses, w, sizeof w);
	n = snprintf(buf, len, "DIFF %s activity=%u sku=%u [%s]", diff_name(d->kind),
	             d->activity_id, d->sku_id, w);
	k = n > 0 ? (size_t)n : 0;
	if (d->order_no && k < len) {
		n = snprintf(buf + k, len - k, " order=%" PRIu64, d->order_no);
		k += n > 0 ? (size_t)n : 0;
	}
	if (d->user_id && k < len) {
		n = snprintf(buf + k, len - k, " user=%" PRIu64, d->user_id);
		k += n > 0 ? (size_t)n : 0;
	}
	fval(buf, len, &k, "segment", d->seg);
	fval(buf, len, &k, "wal", d->wal);
	fval(buf, len, &k, "mysql", d->sql);
	if (k < len)
		snprintf(buf + k, len - k, " (%s)", d->what);
}

void reconcile_print(const struct reconcile_report *rep, FILE *out, int json)
{
	size_t kept = rep->n;
	char w[32];
	if (json)
		fputs("{\"diffs\":[", out);
	for (size_t i = 0; i < kept; i++) {
		const struct diff *d = &rep->diffs[i];
		witnesses_str(d->witnesses, w, sizeof w);
		if (json) {
			fprintf(out, "%s{\"kind\":\"%s\",\"witnesses\":\"%s\",\"activity\":%u,\"sku\":%u",
			        i ? "," : "", diff_name(d->kind), w, d->activity_id, d->sku_id);
			if (d->order_no)
				fprintf(out, ",\"order\":%" PRIu64, d->order_no);
			if (d->user_id)
				fprintf(out, ",\"user\":%" PRIu64, d->user_id);
			val(out, "segment", d->seg, 1);
			val(out, "wal", d->wal, 1);
			val(out, "mysql", d->sql, 1);
			fprintf(out, ",\"what\":\"%s\"}", d->what);   /* fixed wording: no quotes inside */
		} else {
			char line[384];
			diff_format(d, line, sizeof line);
			fprintf(out, "%s\n", line);
		}
	}
	witnesses_str(rep->witnesses, w, sizeof w);
	if (json)
		fprintf(out, "],\"differences\":%" PRIu64 ",\"witnesses\":\"%s\",\"skus\":%" PRIu64
		        ",\"orders_checked\":%" PRIu64 ",\"units\":%" PRIu64 ",\"diff_units\":%" PRIu64 "}\n",
		        rep->found, w, rep->skus, rep->orders_checked, rep->units, rep->diff_units);
	else
		fprintf(out, "reconcile: %" PRIu64 " difference(s) over %" PRIu64 " sku(s), %" PRIu64
		        " order(s) checked; witnesses %s; %" PRIu64 " of %" PRIu64 " units differ\n",
		        rep->found, rep->skus, rep->orders_checked, w, rep->diff_units, rep->units);
}

/* ------------------------------------------------------------------------
 * 6. One run
 * ------------------------------------------------------------------------ */

int reconcile_run(const struct reconcile_run_opts *o, FILE *out, FILE *err)
{
	if (!o || !out || !err || (!o->segment && !o->wal_dir && !o->mysql)) {
		if (err)
			fprintf(err, "reconcile: name at least one of segment, WAL, MySQL\n");
		return 2;
	}
	if (o->repair && (!o->wal_dir || !o->mysql)) {
		fprintf(err, "reconcile: --repair needs the WAL and MySQL (the WAL is MySQL's authority)\n");
		return 2;
	}
	flash_t *h = NULL;
	mdb_t *m = NULL;
	fold_t *f = NULL;
	int rc, ret = 2;
	if (o->segment && (rc = flash_open(o->segment, FLASH_RDONLY, &h))) {
		fprintf(err, "reconcile: segment %s: %s\n", o->segment, flash_strerror(rc));
		goto out;
	}
	if (o->repair) {
		if ((rc = mdb_open(o->mysql, &m)) != FLASH_OK) {
			fprintf(err, "reconcile: MySQL %s: %s\n", m ? mdb_where(m) : "",
			        flash_strerror(rc));
			goto out;
		}
		ret = reconcile_repair(h, m, o, out, err);
		goto out;
	}
	if (o->wal_dir) {
		if ((rc = fold_new(&f)) || (rc = fold_wal(f, o->wal_dir))) {
			fprintf(err, "reconcile: WAL %s: %s\n", o->wal_dir, flash_strerror(rc));
			goto out;
		}
	}
	if (o->mysql && (rc = mdb_open(o->mysql, &m))) {
		fprintf(err, "reconcile: MySQL %s: %s\n", m ? mdb_where(m) : "", flash_strerror(rc));
		goto out;
	}
	struct reconcile_report rep;
	if ((rc = reconcile_compare(h, m, f, o->flags, &rep))) {
		fprintf(err, "reconcile: %s\n", flash_strerror(rc));
		goto out;
	}
	reconcile_print(&rep, out, o->json);
	double limit = o->alert_ratio > 0 ? o->alert_ratio : 0.001;
	if (rep.units && (double)rep.diff_units / (double)rep.units > limit)
		fprintf(err, "reconcile: ALERT %" PRIu64 " of %" PRIu64 " units differ (%.4f%%, threshold %.4f%%)\n",
		        rep.diff_units, rep.units, 100.0 * (double)rep.diff_units / (double)rep.units, 100.0 * limit);
	ret = rep.found ? 1 : 0;
	reconcile_report_free(&rep);
out:
	mdb_close(m);
	fold_free(f);
	if (h)
		flash_close(h);
	return ret;
}
