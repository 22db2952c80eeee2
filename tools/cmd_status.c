/*
 * cmd_status.c -- `flashstock status`: a read-only look at a segment: the
 * catalog, stock per sku, table fill levels and counters, as text or as one
 * JSON object, and the identity it shares with its WAL (incarnation, the
 * WAL LSN it reflects, the daemon holding its consumer claim).  It attaches
 * with FLASH_RDONLY: it takes no process slot and cannot change anything.
 */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_apply.h"
#include "reconcile_sql.h"

static void status_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock status --name NAME [--json] [--mysql URL | --mysql-defaults F]\n"
	        "\n"
	        "Show segment NAME read-only: activities, stock per sku, table fill levels,\n"
	        "counters and archiving: the ended activities not archived yet (what\n"
	        "`flashstock archive --ended` would take once MariaDB has applied them), the\n"
	        "order table's fill (slots held by activities still in the segment), and with\n"
	        "--mysql the activities archived so far (MariaDB remembers them; the segment\n"
	        "forgets them).  --json prints one JSON object with these stable keys:\n"
	        "  name, segment_bytes, durability (\"async\"|\"sync\"),\n"
	        "  durability_failed (null, or the WAL failure that makes sync orders\n"
	        "    answer FLASH_EDURABILITY: {at (ISO 8601 UTC), at_ns, step (\"write\"|\n"
	        "    \"fdatasync\"|\"new_file\"|\"unknown\"), errno, error}; the daemon's\n"
	        "    restart clears it once it has proven the WAL whole),\n"
	        "  destroyed (true: marked destroyed with its name kept, closed to every\n"
	        "    write: a `destroy --force --wal` whose drain failed; text: CLOSED),\n"
	        "  incarnation (16 hex digits: the identity every file of its WAL carries),\n"
	        "  wal_lsn (the highest WAL LSN the segment reflects; 0: never served),\n"
	        "  daemon_pid (the live daemon holding the segment's consumer claim, or null),\n"
	        "  activities: [{id, start, end (ISO 8601 UTC), start_ns, end_ns, limit,\n"
	        "                max_qty, scope (\"activity\"|\"sku\"|\"day\"),\n"
	        "                cancel_returns_quota, token_required (booleans), day_offset_s,\n"
	        "                version (of its terms: `flashstock terms`)}],\n"
	        "  skus: [{activity_id, sku_id, shards, total, available, sold, price,\n"
	        "          version}] (sold = total - available),\n"
	        "  units_total, units_available, units_sold (sums over skus),\n"
	        "  reservations, units_reserved (reservations not paid, expired or\n"
	        "    cancelled yet, and the units they hold: part of units_sold; a cart\n"
	        "    is one reservation holding the units of all its lines),\n"
	        "  tables: {activities, skus, shards, users, tokens, orders, requests, locks,\n"
	        "           procs: {used, cap, pct}},\n"
	        "  counters: {orders, cancels, sold_out, limit_hits, token_rejects,\n"
	        "             duplicates, cas_retries, recoveries, rolled_back, rolled_forward,\n"
	        "             confirms, expiries (reservations paid, and expired unpaid)},\n"
	        "  generations: {requests, users: {banks, gen_s, gen, gen_start_ns, reclaimed,\n"
	        "                wait (\"none\"|\"not_due\"|\"pinned\"|\"not_cleared\"),\n"
	        "                wait_activity, bank: [{gen, keys, cap, state (\"clear\"|\n"
	        "                \"current\"|\"previous\"|\"old\"|\"clearing\"|\"pinned\"),\n"
	        "                pinned_by}]}} (banks 1: a segment without reclamation)\n"
	        "  archiving: {ended (ended activities still in the segment), archived\n"
	        "              (activities MariaDB marks archived; null without --mysql),\n"
	        "              orders_used, orders_cap (the order table)}\n"
	        "\n"
	        "exit: 0 shown; 1 failed (no segment, bad segment); 2 usage error\n");
}

struct status_table {
	const char *name;
	uint64_t    used, cap;
};

static const char *const gen_state_name[] = { "clear", "current", "previous", "old", "clearing", "pinned" };
static const char *const gen_wait_name[] = { "none", "not_due", "pinned", "not_cleared" };

static const char *gen_name(const char *const *v, size_t n, uint32_t i)
{
	return i < n ? v[i] : "?";
}

/* The generations of both keyed tables (flashstock.h section 11). */
static void status_gens_text(const struct flash_gen_info *g)
{
	static const char *const tab[2] = { "requests", "users" };

	printf("\ngenerations\n");
	for (int t = 0; t < 2; t++) {
		if (g[t].banks == 1) {
			printf("  %-9s one bank, never reclaimed\n", tab[t]);
			continue;
		}
		printf("  %-9s gen %llu (length %u s), reclaimed %llu keys, next: %s", tab[t],
		       (unsigned long long)g[t].gen, g[t].gen_s, (unsigned long long)g[t].reclaimed,
		       gen_name(gen_wait_name, 4, g[t].wait));
		if (g[t].wait == FLASH_GEN_WAIT_PINNED)
			printf(" by activity %u", g[t].wait_activity);
		printf("\n");
		for (uint32_t b = 0; b < g[t].banks; b++) {
			const struct flash_gen_bank *k = &g[t].bank[b];

			printf("    bank %u  gen %-8llu %-9s %10u / %-10u %5.1f%%", b, (unsigned long long)k->gen,
			       gen_name(gen_state_name, 6, k->state), k->keys, k->capacity,
			       k->capacity ? 100.0 * k->keys / k->capacity : 0.0);
			if (k->pinned_by)
				printf("  pinned by activity %u", k->pinned_by);
			printf("\n");
		}
	}
}

static void status_gens_json(const struct flash_gen_info *g)
{
	static const char *const tab[2] = { "requests", "users" };

	printf(",\"generations\":{");
	for (int t = 0; t < 2; t++) {
		printf("%s\"%s\":{\"banks\":%u,\"gen_s\":%u,\"gen\":%llu,\"gen_start_ns\":%lld,"
		       "\"reclaimed\":%llu,\"wait\":\"%s\",\"wait_activity\":%u,\"bank\":[",
		       t ? "," : "", tab[t], g[t].banks, g[t].gen_s, (unsigned long long)g[t].gen,
		       (long long)g[t].gen_start_ns, (unsigned long long)g[t].reclaimed,
		       gen_name(gen_wait_name, 4, g[t].wait), g[t].wait_activity);
		for (uint32_t b = 0; b < g[t].banks; b++) {
			const struct flash_gen_bank *k = &g[t].bank[b];

			printf("%s{\"gen\":%llu,\"keys\":%u,\"cap\":%u,\"state\":\"%s\",\"pinned_by\":%u}",
			       b ? "," : "", (unsigned long long)k->gen, k->keys, k->capacity,
			       gen_name(gen_state_name, 6, k->state), k->pinned_by);
		}
		printf("]}");
	}
	printf("}");
}

static double status_pct(uint64_t used, uint64_t cap)
{
	return cap ? 100.0 * (double)used / (double)cap : 0.0;
}

/* Read the whole catalog into arrays (caller frees). */
static int status_read_catalog(flash_t *h, struct flash_activity **acts, uint32_t *nacts,
                               struct flash_sku_info **skus, uint32_t *nskus)
{
	struct flash_activity a, *na;
	struct flash_sku_info s, *ns;
	uint32_t i, cap;
	int rc;

	*acts = NULL;
	*skus = NULL;
	*nacts = *nskus = 0;
	/* entries an archive freed read FLASH_ENOT_FOUND between live ones:
	 * walk the whole capacity */
	struct flash_seg_opts so;
	if ((rc = flash_seg_opts_get(h, &so)) != FLASH_OK)
		return rc;
	for (i = 0, cap = 0; i < so.max_activities; i++) {
		/* past the end, or an entry an archive freed */
		if ((rc = flash_activity_at(h, i, &a)) == FLASH_ENOT_FOUND || rc == FLASH_EARCHIVED)
			continue;
		if (rc != FLASH_OK)
			return rc;
		if (*nacts == cap) {
			cap = cap ? cap * 2 : 16;
			na = realloc(*acts, cap * sizeof *na);
			if (!na)
				return FLASH_ENOMEM;
			*acts = na;
		}
		(*acts)[(*nacts)++] = a;
	}
	for (i = 0, cap = 0; i < so.max_skus; i++) {
		if ((rc = flash_sku_at(h, i, &s)) == FLASH_ENOT_FOUND || rc == FLASH_EARCHIVED)
			continue;
		if (rc != FLASH_OK)
			return rc;
		if (*nskus == cap) {
			cap = cap ? cap * 2 : 16;
			ns = realloc(*skus, cap * sizeof *ns);
			if (!ns)
				return FLASH_ENOMEM;
			*skus = ns;
		}
		(*skus)[(*nskus)++] = s;
	}
	return FLASH_OK;
}

/* What archiving has left to do and has done. */
struct status_arch {
	uint32_t ended;          /* ended activities still in the segment */
	int64_t  archived;       /* activities MariaDB marks archived; -1: not asked */
};

/* Reservations held now (RESERVED orders) and their units: a walk of the
 * order table, a moment's view like the stock beside it.  Counted here,
 * not kept in the segment: status is the one reader that wants them.  A
 * cart's later lines have slots of their own, which read as that line of
 * the cart (line != 0): the cart is one reservation, counted at its line
 * 0, and holds the units of every line. */
struct status_resv {
	uint64_t orders;
	uint64_t units;
};

static int status_reserved(flash_t *h, uint64_t cap, struct status_resv *rv)
{
	struct flash_order_info oi;

	rv->orders = rv->units = 0;
	for (uint32_t i = 0; i < cap; i++) {   /* a table holds at most 2^26 */
		int rc = flash_order_at(h, i, &oi);
		if (rc == FLASH_ENOT_FOUND)
			break;
		if (rc != FLASH_OK)
			return rc;
		if (oi.state == FLASH_ORDER_RESERVED) {
			rv->orders += oi.line == 0;
			rv->units += oi.qty;
		}
	}
	return FLASH_OK;
}

/* sold = total - available; a reading taken while orders run may see
 * available above total for an instant (restock in flight): clamp at 0. */
static uint64_t status_sold(const struct flash_sku_info *s)
{
	return s->total >= s->available ? s->total - s->available : 0;
}

static const char *const dur_step_name[] = { "unknown", "write", "fdatasync", "new_file" };

/* The failure in words, and what to do: the daemon that failed has
 * exited, and its log may be gone. */
static void status_dur_text(const struct flash_durability_info *d)
{
	char at[40];

	if (!d->failed)
		return;
	printf("durability FAILED at %s: %s%s%s; sync orders answer FLASH_EDURABILITY: fix the "
	       "cause (free space, a failing disk), then restart the daemon, which clears this once "
	       "it has proven the WAL whole\n",
	       d->when_ns > 0 ? tool_fmt_time(d->when_ns, at, sizeof at) : "an unknown time",
	       flash_wal_step_str(d->step), d->err ? ": " : "", d->err ? strerror(d->err) : "");
}

static void status_dur_json(const struct flash_durability_info *d)
{
	char at[40];

	printf(",\"durability_failed\":");
	if (!d->failed) {
		printf("null");
		return;
	}
	printf("{\"at\":");
	if (d->when_ns > 0)
		printf("\"%s\"", tool_fmt_time(d->when_ns, at, sizeof at));
	else
		printf("null");
	printf(",\"at_ns\":%lld,\"step\":\"%s\",\"errno\":%d,\"error\":", (long long)d->when_ns,
	       gen_name(dur_step_name, 4, d->step), (int)d->err);
	if (d->err)
		tool_json_str(stdout, strerror(d->err));
	else
		printf("null");
	printf("}");
}

static void status_text(const char *name, const struct flash_stats *st,
                        const struct flash_durability_info *dur, uint32_t destroyed,
                        const struct flash_ident *id,
                        const struct flash_activity *acts, uint32_t nacts,
                        const struct flash_sku_info *skus, uint32_t nskus,
                        const struct status_table *tabs, size_t ntabs,
                        const struct status_arch *ar, const struct status_resv *rv)
{
	uint64_t tot = 0, avail = 0, sold = 0;
	char b1[40], b2[40];
	uint32_t i;
	size_t t;

	printf("segment %s: %llu bytes, durability %s\n", name,
	       (unsigned long long)st->segment_bytes,
	       st->durability == FLASH_DURABILITY_SYNC ? "sync" : "async");
	status_dur_text(dur);
	if (destroyed)
		printf("CLOSED: marked destroyed, its name kept (a `flashstock destroy --force --wal` whose "
		       "drain did not finish): every write answers FLASH_EDESTROYED; `flashstock destroy "
		       "--name %s --force --wal DIR` with its own WAL drains its rings and removes it\n", name);
	printf("identity incarnation %016llx, reflects WAL LSN %llu%s, ",
	       (unsigned long long)id->incarnation, (unsigned long long)id->wal_lsn,
	       id->wal_lsn ? "" : " (never served)");
	if (id->consumer_pid)
		printf("daemon pid %d\n", (int)id->consumer_pid);
	else
		printf("daemon none\n");
	printf("\nactivities (%u)\n", nacts);
	if (nacts)
		printf("  %10s  %-20s  %-20s  %5s  %7s  %-8s  %8s  %s\n",
		       "id", "start", "end", "limit", "max_qty", "scope", "version", "flags");
	for (i = 0; i < nacts; i++) {
		const struct flash_activity *a = &acts[i];
		printf("  %10u  %-20s  %-20s  %5u  %7u  %-8s  %8llu  %s%s%s",
		       a->id, tool_fmt_time(a->start_ns, b1, sizeof b1),
		       tool_fmt_time(a->end_ns, b2, sizeof b2), a->limit_per_user,
		       a->max_qty, tool_scope_name(a->scope), (unsigned long long)a->version,
		       a->flags & FLASH_ACT_TOKEN_REQUIRED ? "token-required" : "",
		       (a->flags & FLASH_ACT_TOKEN_REQUIRED) &&
		       (a->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA) ? "," : "",
		       a->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? "cancel-returns-quota" :
		       a->flags ? "" : "-");
		if (a->day_offset_s)
			printf(" day-offset %ds", a->day_offset_s);
		putchar('\n');
	}
	printf("\nskus (%u)\n", nskus);
	if (nskus)
		printf("  %10s  %10s  %6s  %14s  %14s  %14s  %14s  %8s\n",
		       "activity", "sku", "shards", "total", "available", "sold", "price", "version");
	for (i = 0; i < nskus; i++) {
		const struct flash_sku_info *s = &skus[i];
		printf("  %10u  %10u  %6u  %14llu  %14llu  %14llu  %14llu  %8llu\n",
		       s->activity_id, s->sku_id, s->shards,
		       (unsigned long long)s->total, (unsigned long long)s->available,
		       (unsigned long long)status_sold(s), (unsigned long long)s->price,
		       (unsigned long long)s->version);
		tot += s->total;
		avail += s->available;
		sold += status_sold(s);
	}
	if (nskus)
		printf("  %10s  %10s  %6s  %14llu  %14llu  %14llu\n", "all", "", "",
		       (unsigned long long)tot, (unsigned long long)avail,
		       (unsigned long long)sold);
	if (rv->orders)
		printf("  reserved: %llu reservations hold %llu of the units sold until paid or expired\n",
		       (unsigned long long)rv->orders, (unsigned long long)rv->units);

	printf("\ntables          used         cap      %%\n");
	for (t = 0; t < ntabs; t++)
		printf("  %-10s %10llu  %10llu  %5.1f\n", tabs[t].name,
		       (unsigned long long)tabs[t].used, (unsigned long long)tabs[t].cap,
		       status_pct(tabs[t].used, tabs[t].cap));

	printf("\ncounters\n"
	       "  orders         %12llu\n  cancels        %12llu\n"
	       "  sold_out       %12llu\n  limit_hits     %12llu\n"
	       "  token_rejects  %12llu\n  duplicates     %12llu\n"
	       "  cas_retries    %12llu\n  recoveries     %12llu\n"
	       "  rolled_back    %12llu\n  rolled_forward %12llu\n"
	       "  confirms       %12llu\n  expiries       %12llu\n",
	       (unsigned long long)st->orders, (unsigned long long)st->cancels,
	       (unsigned long long)st->sold_out, (unsigned long long)st->limit_hits,
	       (unsigned long long)st->token_rejects, (unsigned long long)st->duplicates,
	       (unsigned long long)st->cas_retries, (unsigned long long)st->recoveries,
	       (unsigned long long)st->rolled_back, (unsigned long long)st->rolled_forward,
	       (unsigned long long)st->confirms, (unsigned long long)st->expiries);
	printf("\narchiving\n"
	       "  ended, not archived  %10u  (flashstock archive --ended)\n", ar->ended);
	if (ar->archived >= 0)
		printf("  archived (MariaDB)   %10lld\n", (long long)ar->archived);
	else
		printf("  archived (MariaDB)   %10s  (give --mysql URL)\n", "-");
	printf("  order table          %10llu / %llu  (%.1f %%)\n", (unsigned long long)st->orders_used,
	       (unsigned long long)st->orders_cap, status_pct(st->orders_used, st->orders_cap));
}

static void status_json(const char *name, const struct flash_stats *st,
                        const struct flash_durability_info *dur, uint32_t destroyed,
                        const struct flash_ident *id,
                        const struct flash_activity *acts, uint32_t nacts,
                        const struct flash_sku_info *skus, uint32_t nskus,
                        const struct status_table *tabs, size_t ntabs,
                        const struct status_arch *ar, const struct status_resv *rv)
{
	uint64_t tot = 0, avail = 0, sold = 0;
	char b1[40], b2[40];
	uint32_t i;
	size_t t;

	printf("{\"name\":");
	tool_json_str(stdout, name);
	printf(",\"segment_bytes\":%llu,\"durability\":\"%s\"", (unsigned long long)st->segment_bytes,
	       st->durability == FLASH_DURABILITY_SYNC ? "sync" : "async");
	status_dur_json(dur);
	printf(",\"destroyed\":%s", destroyed ? "true" : "false");
	printf(",\"incarnation\":\"%016llx\",\"wal_lsn\":%llu,\"daemon_pid\":",
	       (unsigned long long)id->incarnation, (unsigned long long)id->wal_lsn);
	if (id->consumer_pid)
		printf("%d", (int)id->consumer_pid);
	else
		printf("null");
	printf(",\"activities\":[");
	for (i = 0; i < nacts; i++) {
		const struct flash_activity *a = &acts[i];
		printf("%s{\"id\":%u,\"start\":\"%s\",\"end\":\"%s\",\"start_ns\":%lld,"
		       "\"end_ns\":%lld,\"limit\":%u,\"max_qty\":%u,\"scope\":\"%s\","
		       "\"cancel_returns_quota\":%s,\"token_required\":%s,\"day_offset_s\":%d,"
		       "\"version\":%llu}",
		       i ? "," : "", a->id, tool_fmt_time(a->start_ns, b1, sizeof b1),
		       tool_fmt_time(a->end_ns, b2, sizeof b2), (long long)a->start_ns,
		       (long long)a->end_ns, a->limit_per_user, a->max_qty,
		       tool_scope_name(a->scope),
		       a->flags & FLASH_ACT_CANCEL_RETURNS_QUOTA ? "true" : "false",
		       a->flags & FLASH_ACT_TOKEN_REQUIRED ? "true" : "false",
		       a->day_offset_s, (unsigned long long)a->version);
	}
	printf("],\"skus\":[");
	for (i = 0; i < nskus; i++) {
		const struct flash_sku_info *s = &skus[i];
		printf("%s{\"activity_id\":%u,\"sku_id\":%u,\"shards\":%u,\"total\":%llu,"
		       "\"available\":%llu,\"sold\":%llu,\"price\":%llu,\"version\":%llu}",
		       i ? "," : "", s->activity_id, s->sku_id, s->shards,
		       (unsigned long long)s->total, (unsigned long long)s->available,
		       (unsigned long long)status_sold(s), (unsigned long long)s->price,
		       (unsigned long long)s->version);
		tot += s->total;
		avail += s->available;
		sold += status_sold(s);
	}
	printf("],\"units_total\":%llu,\"units_available\":%llu,\"units_sold\":%llu,\"reservations\":%llu,"
	       "\"units_reserved\":%llu,\"tables\":{", (unsigned long long)tot, (unsigned long long)avail,
	       (unsigned long long)sold, (unsigned long long)rv->orders, (unsigned long long)rv->units);
	for (t = 0; t < ntabs; t++)
		printf("%s\"%s\":{\"used\":%llu,\"cap\":%llu,\"pct\":%.2f}", t ? "," : "",
		       tabs[t].name, (unsigned long long)tabs[t].used,
		       (unsigned long long)tabs[t].cap, status_pct(tabs[t].used, tabs[t].cap));
	printf("},\"counters\":{\"orders\":%llu,\"cancels\":%llu,\"sold_out\":%llu,"
	       "\"limit_hits\":%llu,\"token_rejects\":%llu,\"duplicates\":%llu,"
	       "\"cas_retries\":%llu,\"recoveries\":%llu,\"rolled_back\":%llu,"
	       "\"rolled_forward\":%llu,\"confirms\":%llu,\"expiries\":%llu}",
	       (unsigned long long)st->orders, (unsigned long long)st->cancels,
	       (unsigned long long)st->sold_out, (unsigned long long)st->limit_hits,
	       (unsigned long long)st->token_rejects, (unsigned long long)st->duplicates,
	       (unsigned long long)st->cas_retries, (unsigned long long)st->recoveries,
	       (unsigned long long)st->rolled_back, (unsigned long long)st->rolled_forward,
	       (unsigned long long)st->confirms, (unsigned long long)st->expiries);
	printf(",\"archiving\":{\"ended\":%u,\"archived\":", ar->ended);
	if (ar->archived >= 0)
		printf("%lld", (long long)ar->archived);
	else
		printf("null");
	printf(",\"orders_used\":%llu,\"orders_cap\":%llu}", (unsigned long long)st->orders_used,
	       (unsigned long long)st->orders_cap);
}

/* The segment's counters, identity, durability failure and destroyed mark.
 * @return TOOL_OK, or the failure said on stderr. */
static int status_read(flash_t *h, struct flash_stats *st, struct flash_ident *id,
                       struct flash_durability_info *dur, uint32_t *destroyed, struct status_resv *rv)
{
	int rc = flash_stats_get(h, st);
	if (rc != FLASH_OK)
		return tool_fail("status: read counters", rc);
	if ((rc = flash_ident_get(h, id)) != FLASH_OK)
		return tool_fail("status: read identity", rc);
	if ((rc = flash_durability_get(h, dur)) != FLASH_OK)
		return tool_fail("status: read the durability failure", rc);
	if ((rc = flash_destroyed_get(h, destroyed)) != FLASH_OK)
		return tool_fail("status: read the destroyed mark", rc);
	if ((rc = status_reserved(h, st->orders_cap, rv)) != FLASH_OK)
		return tool_fail("status: read the reservations", rc);
	return TOOL_OK;
}

/* --mysql: how many activities MariaDB holds archived (ar->archived).
 * @return TOOL_OK, or the failure said on stderr. */
static int status_archived(const struct mdb_opts *mo, struct status_arch *ar)
{
	mdb_t *m = NULL;
	uint32_t *ids = NULL;
	size_t nids = 0;
	int rc = mdb_open(mo, &m);
	if (rc == FLASH_OK)
		rc = rsql_archived(m, &ids, &nids);
	if (rc == FLASH_OK)
		ar->archived = (int64_t)nids;
	else
		rc = tool_failf("status: MariaDB %s: %s", mdb_where(m), flash_strerror(rc));
	free(ids);
	mdb_close(m);
	return rc == FLASH_OK ? TOOL_OK : rc;
}

int cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument,       NULL, 'h' },
		{ "name", required_argument, NULL, 'n' },
		{ "json", no_argument,       NULL, 'j' },
		{ "mysql", required_argument, NULL, 'M' },
		{ "mysql-defaults", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0], *name = NULL;
	struct flash_activity *acts = NULL;
	struct flash_sku_info *skus = NULL;
	uint32_t nacts = 0, nskus = 0;
	struct flash_stats st;
	struct flash_durability_info dur;
	uint32_t destroyed = 0;
	struct flash_ident id;
	flash_t *h = NULL;
	char what[300];
	int c, rc, json = 0;
	struct mdb_opts mo;
	struct status_arch ar = { 0, -1 };
	struct status_resv rv = { 0, 0 };

	memset(&mo, 0, sizeof mo);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			status_help(stdout);
			return TOOL_OK;
		case 'n':
			name = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'M':
			mo.url = optarg;
			break;
		case 'D':
			mo.defaults_file = optarg;
			break;
		default:
			return tool_bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (!name)
		return tool_usage_err(cmd, "--name is required");
	if (mo.url && mo.defaults_file)
		return tool_usage_err(cmd, "give --mysql or --mysql-defaults, not both");
	if (tool_opt_mysql_url(cmd, mo.url) != 0)
		return TOOL_USAGE;
	mo.require_db = 1;

	rc = flash_open(name, FLASH_RDONLY, &h);
	if (rc != FLASH_OK) {
		snprintf(what, sizeof what, "status: open %s", name);
		return tool_fail(what, rc);
	}
	if ((rc = status_read(h, &st, &id, &dur, &destroyed, &rv)) != TOOL_OK)
		goto out;
	rc = status_read_catalog(h, &acts, &nacts, &skus, &nskus);
	if (rc != FLASH_OK) {
		rc = tool_fail("status: read catalog", rc);
		goto out;
	}
	{
		int64_t now = tool_realtime_ns();
		for (uint32_t i = 0; i < nacts; i++)
			ar.ended += acts[i].end_ns <= now;
	}
	if ((mo.url || mo.defaults_file) && (rc = status_archived(&mo, &ar)) != TOOL_OK)
		goto out;
	{
		const struct status_table tabs[] = {
			{ "activities", st.activities, st.activities_cap },
			{ "skus",       st.skus,       st.skus_cap },
			{ "shards",     st.shards,     st.shards_cap },
			{ "users",      st.users,      st.users_cap },
			{ "tokens",     st.tokens,     st.tokens_cap },
			{ "orders",     st.orders_used, st.orders_cap },
			{ "requests",   st.requests,   st.requests_cap },
			{ "locks",      st.locks,      st.locks_cap },
			{ "procs",      st.procs,      st.procs_cap },
		};
		size_t ntabs = sizeof tabs / sizeof tabs[0];
		struct flash_gen_info gi[2];

		for (int t = 0; t < 2; t++)
			if ((rc = flash_gen_get(h, (uint32_t)t, &gi[t])) != FLASH_OK) {
				rc = tool_fail("status: read generations", rc);
				goto out;
			}
		if (json) {
			status_json(name, &st, &dur, destroyed, &id, acts, nacts, skus, nskus, tabs, ntabs, &ar, &rv);
			status_gens_json(gi);
			printf("}\n");
		} else {
			status_text(name, &st, &dur, destroyed, &id, acts, nacts, skus, nskus, tabs, ntabs, &ar, &rv);
			status_gens_text(gi);
		}
	}
	rc = TOOL_OK;        /* main() checks that stdout took it all */
out:
	free(acts);
	free(skus);
	flash_close(h);
	return rc;
}
