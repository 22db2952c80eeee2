/*
 * demo_check.c -- the audit at the end of `flashstock demo`.
 *
 * The figures the demo reports as its verdict are computed here from first
 * principles, never copied from the engine's counters:
 *   - the order table: every order 1..flash_orders_max(), summed per sku
 *     (active units) and grouped per user (active orders per limit key);
 *   - the stock: total and available of every sku;
 *   - the records drained from the rings while buyers ran: per sku, ORDER
 *     minus CANCEL units; per order number, exactly one ORDER record for
 *     every completed order and one CANCEL record for every cancelled one;
 *     per ring, a gapless run of sequence numbers;
 *   - the buyers' own tallies: units acknowledged minus units cancelled.
 * All four views must agree.
 */
#include "demo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ring records ------------------------------------------------------ */

int demo_rings_init(struct demo_rings *r, uint64_t orders_cap, uint32_t slots)
{
	memset(r, 0, sizeof *r);
	r->seen_cap = orders_cap + 1;   /* order numbers run from 1 */
	r->seen = calloc(r->seen_cap, 1);
	r->nslots = slots;
	r->last_seq = calloc(slots ? slots : 1, sizeof *r->last_seq);
	r->acked_seq = calloc(slots ? slots : 1, sizeof *r->acked_seq);
	if (!r->seen || !r->last_seq || !r->acked_seq) {
		demo_rings_free(r);
		return FLASH_ENOMEM;
	}
	return FLASH_OK;
}

void demo_rings_free(struct demo_rings *r)
{
	free(r->seen);
	free(r->last_seq);
	free(r->acked_seq);
	r->seen = NULL;
	r->last_seq = NULL;
	r->acked_seq = NULL;
}

static void demo_anomaly(struct demo_rings *r, const char *what,
                         const struct flash_record *rec, uint64_t seq)
{
	if (r->anomalies++ == 0)
		snprintf(r->first_anomaly, sizeof r->first_anomaly,
		         "%s (record type %u, slot %u, seq %llu, order %llu, sku %u)", what,
		         rec->type, rec->slot, (unsigned long long)seq,
		         (unsigned long long)rec->order_no, rec->sku_id);
}

/*
 * Account one drained record.  Runs in the parent while buyers run, so it
 * stays cheap: array updates only.  Never stops the drain: an anomaly is
 * counted and the record still consumed.
 */
int demo_rings_record(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct demo_rings *r = arg;
	uint32_t sku = rec->sku_id;

	r->records++;
	if (rec->slot >= r->nslots) {
		demo_anomaly(r, "slot out of range", rec, seq);
	} else {
		if (seq != r->last_seq[rec->slot] + 1)
			demo_anomaly(r, "sequence gap or repeat in a ring", rec, seq);
		r->last_seq[rec->slot] = seq;
	}
	if (rec->activity_id == DEMO_UNPAID_ACTIVITY) {
		/* the unpaid round's: counted apart (demo_unpaid_audit) */
		if (rec->type == FLASH_REC_ORDER && rec->value > 0)
			r->u_reserve++;
		else if (rec->type == FLASH_REC_ORDER)
			r->u_plain++;
		else if (rec->type == FLASH_REC_CONFIRM)
			r->u_confirm++;
		else if (rec->type == FLASH_REC_EXPIRE)
			r->u_expire++;
		else if (rec->type == FLASH_REC_CANCEL)
			r->u_cancel++;
		return 0;
	}
	switch (rec->type) {
	case FLASH_REC_ORDER:
	case FLASH_REC_CANCEL: {
		int is_order = rec->type == FLASH_REC_ORDER;
		uint8_t bit = is_order ? DEMO_SEEN_ORDER : DEMO_SEEN_CANCEL;
		if (rec->activity_id != DEMO_ACTIVITY || sku < 1 || sku > DEMO_SKUS_MAX) {
			demo_anomaly(r, "record for goods the demo does not sell", rec, seq);
			break;
		}
		if (rec->order_no < 1 || rec->order_no >= r->seen_cap) {
			demo_anomaly(r, "order number out of range", rec, seq);
			break;
		}
		if (r->seen[rec->order_no] & bit)
			demo_anomaly(r, is_order ? "two ORDER records for one order"
			                         : "two CANCEL records for one order", rec, seq);
		r->seen[rec->order_no] |= bit;
		if (is_order) {
			r->orders++;
			r->order_qty[sku - 1] += rec->qty;
		} else {
			r->cancels++;
			r->cancel_qty[sku - 1] += rec->qty;
		}
		break;
	}
	case FLASH_REC_ACTIVITY:
	case FLASH_REC_SKU:
	case FLASH_REC_RESTOCK:
	case FLASH_REC_GEN:        /* reclamation: no units move */
	case FLASH_REC_ARCHIVE:
		break;
	default:
		demo_anomaly(r, "unknown record type", rec, seq);
		break;
	}
	return 0;
}

/* ---- the audit --------------------------------------------------------- */

static void demo_problem(struct demo_audit *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void demo_problem(struct demo_audit *a, const char *fmt, ...)
{
	va_list ap;

	if (a->first_problem[0])
		return;
	va_start(ap, fmt);
	vsnprintf(a->first_problem, sizeof a->first_problem, fmt, ap);
	va_end(ap);
}

/* A per-user limit key (activity scope: the user alone). */
struct demo_key {
	uint64_t user;
	uint32_t sub;   /* sku or business day for those scopes; 0 otherwise */
	uint32_t _pad;
};

static int demo_key_cmp(const void *x, const void *y)
{
	const struct demo_key *a = x, *b = y;

	if (a->user != b->user)
		return a->user < b->user ? -1 : 1;
	if (a->sub != b->sub)
		return a->sub < b->sub ? -1 : 1;
	return 0;
}

/* Step 2: users over their limit -- the keys sorted, each run counted. */
static void demo_audit_limits(struct demo_key *keys, uint64_t nkeys, uint32_t limit,
                              struct demo_audit *out)
{
	uint64_t i, run;
	qsort(keys, nkeys, sizeof *keys, demo_key_cmp);
	for (i = 0; i < nkeys; i += run) {
		for (run = 1; i + run < nkeys && demo_key_cmp(&keys[i], &keys[i + run]) == 0; run++)
			;
		if (run > limit) {
			out->users_over_limit++;
			demo_problem(out, "user %llu holds %llu active orders, limit %u",
			             (unsigned long long)keys[i].user, (unsigned long long)run,
			             limit);
		}
	}
}

/* Step 3 for sku s + 1: its stock against its active orders, the records
 * drained and the buyers' tallies.  @return FLASH_OK or the read's code. */
static int demo_audit_sku(flash_t *h, const struct demo_cfg *cfg, const struct demo_rings *rings,
                          const struct demo_shared *sh, uint32_t s, struct demo_audit *out)
{
	uint64_t active = out->active_qty[s], used, client_acked = 0, client_cancelled = 0;
	uint32_t pi;

	struct flash_sku_info si;
	int rc = flash_sku_get(h, DEMO_ACTIVITY, s + 1, &si);
	if (rc != FLASH_OK)
		return rc;
	out->total[s] = si.total;
	out->available[s] = si.available;
	out->units_total += si.total;
	out->units_available += si.available;
	used = si.total >= si.available ? si.total - si.available : 0;
	out->sold += used;
	if (si.available > si.total) {
		out->leaked_units += si.available - si.total + active;
		demo_problem(out, "sku %u: available %llu above total %llu", s + 1,
		             (unsigned long long)si.available, (unsigned long long)si.total);
	} else if (used != active) {
		out->leaked_units += used > active ? used - active : active - used;
		demo_problem(out, "sku %u: total %llu - available %llu = %llu, active orders hold %llu",
		             s + 1, (unsigned long long)si.total, (unsigned long long)si.available,
		             (unsigned long long)used, (unsigned long long)active);
	}
	if (active > si.total) {
		out->oversold += active - si.total;
		demo_problem(out, "sku %u oversold: %llu active units, %llu loaded", s + 1,
		             (unsigned long long)active, (unsigned long long)si.total);
	}
	if (rings->order_qty[s] - rings->cancel_qty[s] != active ||
	    rings->cancel_qty[s] > rings->order_qty[s]) {
		out->ring_mismatches++;
		demo_problem(out, "sku %u: records say %llu ordered - %llu cancelled, table says %llu active",
		             s + 1, (unsigned long long)rings->order_qty[s],
		             (unsigned long long)rings->cancel_qty[s], (unsigned long long)active);
	}
	for (pi = 0; pi < cfg->procs; pi++) {
		client_acked += sh->ds_proc[pi].dp_acked_sku[s];
		client_cancelled += sh->ds_proc[pi].dp_cancelled_sku[s];
	}
	if (client_acked - client_cancelled != active || client_cancelled > client_acked) {
		out->client_mismatches++;
		demo_problem(out, "sku %u: buyers were acknowledged %llu and cancelled %llu, table says %llu active",
		             s + 1, (unsigned long long)client_acked,
		             (unsigned long long)client_cancelled, (unsigned long long)active);
	}
	return FLASH_OK;
}

int demo_audit_run(flash_t *h, const struct demo_cfg *cfg, const struct demo_rings *rings,
                   const struct demo_shared *sh, struct demo_audit *out)
{
	struct flash_activity act;
	struct flash_order_info oi;
	struct demo_key *keys = NULL;
	uint64_t nkeys = 0, o, omax;
	uint32_t s, idx;
	int rc;

	memset(out, 0, sizeof *out);

	/* The activity as the segment has it gives the scope (how a user's
	 * orders are grouped); the limit checked is the one the demo asked for,
	 * so a segment that stored another one cannot hide an excess. */
	for (idx = 0; (rc = flash_activity_at(h, idx, &act)) == FLASH_OK; idx++)
		if (act.id == DEMO_ACTIVITY)
			break;
	if (rc != FLASH_OK)
		return rc;
	if (act.limit_per_user != cfg->limit)
		demo_problem(out, "the segment holds limit %u, the demo set %u",
		             act.limit_per_user, cfg->limit);

	/* 1. Every order.  Active ones count toward stock and user limits. */
	omax = flash_orders_max(h);
	keys = malloc((omax ? omax : 1) * sizeof *keys);
	if (!keys)
		return FLASH_ENOMEM;
	for (o = 1; o <= omax; o++) {
		uint8_t seen = o < rings->seen_cap ? rings->seen[o] : 0;
		rc = flash_order_get(h, o, &oi);
		if (rc != FLASH_OK) {
			free(keys);
			return rc;
		}
		out->orders_scanned++;
		if (oi.state != FLASH_ORDER_NONE && oi.activity_id == DEMO_UNPAID_ACTIVITY)
			continue;       /* the unpaid round's: demo_unpaid_audit */
		switch (oi.state) {
		case FLASH_ORDER_ACTIVE:
			out->active_orders++;
			if (oi.activity_id != DEMO_ACTIVITY || oi.sku_id < 1 || oi.sku_id > cfg->nskus) {
				out->ring_mismatches++;
				demo_problem(out, "order %llu: unknown goods (activity %u sku %u)",
				             (unsigned long long)o, oi.activity_id, oi.sku_id);
				break;
			}
			out->active_qty[oi.sku_id - 1] += oi.qty;
			keys[nkeys].user = oi.user_id;
			keys[nkeys].sub = act.scope == FLASH_SCOPE_SKU ? oi.sku_id :
			                  act.scope == FLASH_SCOPE_DAY ? oi.biz_day : 0;
			keys[nkeys]._pad = 0;
			nkeys++;
			if (seen != DEMO_SEEN_ORDER) {
				out->ring_mismatches++;
				demo_problem(out, "active order %llu: %s", (unsigned long long)o,
				             seen & DEMO_SEEN_CANCEL ? "has a CANCEL record"
				                                     : "no ORDER record drained");
			}
			break;
		case FLASH_ORDER_CANCELLED:
			out->cancelled_orders++;
			if (seen != (DEMO_SEEN_ORDER | DEMO_SEEN_CANCEL)) {
				out->ring_mismatches++;
				demo_problem(out, "cancelled order %llu: ORDER and CANCEL records not both drained",
				             (unsigned long long)o);
			}
			break;
		default:
			out->none_orders++;
			if (seen) {
				out->ring_mismatches++;
				demo_problem(out, "order %llu never completed but has records",
				             (unsigned long long)o);
			}
			break;
		}
	}
	/* records for numbers past the table's end */
	for (o = omax + 1; o < rings->seen_cap; o++) {
		if (rings->seen[o]) {
			out->ring_mismatches++;
			demo_problem(out, "record for order %llu beyond the last order %llu",
			             (unsigned long long)o, (unsigned long long)omax);
		}
	}

	/* 2. Users over their limit: sort the keys, count each run. */
	demo_audit_limits(keys, nkeys, cfg->limit, out);
	free(keys);

	/* 3. Stock against orders, records and the buyers' tallies, per sku. */
	for (s = 0; s < cfg->nskus; s++) {
		if ((rc = demo_audit_sku(h, cfg, rings, sh, s, out)) != FLASH_OK)
			return rc;
	}
	if (rings->anomalies) {
		out->ring_mismatches += rings->anomalies;
		demo_problem(out, "ring: %s", rings->first_anomaly);
	}
	return FLASH_OK;
}
