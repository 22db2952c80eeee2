/*
 * metrics.c -- Prometheus text exposition of the daemon (see metrics.h).
 *
 * Divisions: a growable text buffer, rendering (segment, WAL, daemon), and
 * the libmicrohttpd glue.
 */
#include "metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashstock.h"
#include "backstop.h"
#include "mysql_probe.h"
#include "rcu_box.h"
#include "feed.h"
#include "serve_reconcile.h"
#include "archiver.h"
#include "expirer.h"
#include "lease.h"

struct metrics {
	struct MHD_Daemon *m_d;
	char              *m_segment;   /* owned copy */
	wal_t             *m_w;
	mdb_pump_t *m_pump;     /* or NULL */
	rbox_t            *m_st;        /* struct serve_stats: the daemon publishes one
	                                   per round, scrapes copy one out (RCU: the
	                                   drain loop never waits for a scrape) */
	pthread_mutex_t    m_mu;        /* guards m_recon and m_probe (set once, before scrapes) */
	serve_recon_t     *m_recon;     /* or NULL */
	archiver_t        *m_arch;      /* or NULL; guarded by m_mu */
	uint64_t           m_arch_done; /* archiver figures kept once it stopped (m_mu) */
	uint64_t           m_arch_orders;
	backstop_t        *m_backstop;  /* or NULL; guarded by m_mu */
	expirer_t         *m_expirer;   /* or NULL; guarded by m_mu */
	struct expirer_stats m_expire_done; /* its figures kept once it stopped (m_mu) */
	mdb_probe_t *m_probe;   /* or NULL; guarded by m_mu */
	char              *m_feed_dir;  /* WAL directory whose feed consumers are shown, or NULL */
	struct lease *m_lease;    /* lease agent, or NULL; guarded by m_mu */
};

/* ---- text buffer ---- */

struct mbuf {
	char  *b;
	size_t n, cap;
	int    oom;
};

__attribute__((format(printf, 2, 3)))
static void mb_printf(struct mbuf *mb, const char *fmt, ...)
{
	if (mb->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(mb->b + mb->n, mb->cap - mb->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			mb->oom = 1;
			return;
		}
		if ((size_t)k < mb->cap - mb->n) {
			mb->n += (size_t)k;
			return;
		}
		size_t nc = mb->cap * 2 + (size_t)k + 1;
		char *nb = realloc(mb->b, nc);
		if (nb == NULL) {
			mb->oom = 1;
			return;
		}
		mb->b = nb;
		mb->cap = nc;
	}
}

static void mb_metric(struct mbuf *mb, const char *name, const char *type, const char *help,
                      uint64_t v)
{
	mb_printf(mb, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
	          (unsigned long long)v);
}

/* ---- rendering ---- */

static void render_segment(struct metrics *m, struct mbuf *mb)
{
	flash_t *h;
	struct flash_stats s;
	struct flash_gen_info gi[2];
	int rc = flash_open(m->m_segment, FLASH_RDONLY, &h);
	if (rc == FLASH_OK) {
		rc = flash_stats_get(h, &s);
		for (uint32_t t = 0; rc == FLASH_OK && t < 2; t++)
			rc = flash_gen_get(h, t, &gi[t]);
		flash_close(h);
	}
	mb_metric(mb, "flashstock_segment_up", "gauge", "1 if the segment could be read.",
	          rc == FLASH_OK);
	if (rc != FLASH_OK)
		return;
	mb_metric(mb, "flashstock_orders_total", "counter", "Acknowledged orders.", s.orders);
	mb_metric(mb, "flashstock_cancels_total", "counter", "Cancelled orders.", s.cancels);
	mb_metric(mb, "flashstock_sold_out_total", "counter", "Orders refused: sold out.", s.sold_out);
	mb_metric(mb, "flashstock_limit_hits_total", "counter", "Orders refused: per-user limit.",
	          s.limit_hits);
	mb_metric(mb, "flashstock_token_rejects_total", "counter", "Orders refused: bad token.",
	          s.token_rejects);
	mb_metric(mb, "flashstock_duplicates_total", "counter", "Retried request ids answered.",
	          s.duplicates);
	mb_metric(mb, "flashstock_cas_retries_total", "counter", "Stock CAS retries.", s.cas_retries);
	mb_metric(mb, "flashstock_recoveries_total", "counter", "Dead handles recovered.",
	          s.recoveries);
	mb_metric(mb, "flashstock_rolled_back_total", "counter",
	          "Operations rolled back by recovery.", s.rolled_back);
	mb_metric(mb, "flashstock_rolled_forward_total", "counter",
	          "Operations rolled forward by recovery.", s.rolled_forward);
	mb_metric(mb, "flashstock_segment_bytes", "gauge", "Size of the segment.", s.segment_bytes);
	mb_metric(mb, "flashstock_durability_sync", "gauge", "1 in sync durability, 0 in async.",
	          s.durability == FLASH_DURABILITY_SYNC);
	const struct {
		const char *name;
		uint64_t    used, cap;
	} t[] = {
		{ "activities", s.activities, s.activities_cap }, { "skus", s.skus, s.skus_cap },
		{ "shards", s.shards, s.shards_cap },             { "users", s.users, s.users_cap },
		{ "tokens", s.tokens, s.tokens_cap },             { "requests", s.requests, s.requests_cap },
		{ "locks", s.locks, s.locks_cap },                { "procs", s.procs, s.procs_cap },
		{ "orders", s.orders_used, s.orders_cap },
	};
	mb_printf(mb, "# HELP flashstock_table_used Entries in use per segment table.\n"
	              "# TYPE flashstock_table_used gauge\n");
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		mb_printf(mb, "flashstock_table_used{table=\"%s\"} %llu\n", t[i].name,
		          (unsigned long long)t[i].used);
	mb_printf(mb, "# HELP flashstock_table_capacity Capacity per segment table.\n"
	              "# TYPE flashstock_table_capacity gauge\n");
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		mb_printf(mb, "flashstock_table_capacity{table=\"%s\"} %llu\n", t[i].name,
		          (unsigned long long)t[i].cap);
	/* the keyed tables' generation banks (engine/gen.c; one bank without reclamation) */
	static const char *const gname[2] = { "requests", "users" };
	mb_printf(mb, "# HELP flashstock_table_fill Keys held per keyed table and generation bank.\n"
	              "# TYPE flashstock_table_fill gauge\n");
	for (int k = 0; k < 2; k++)
		for (uint32_t b = 0; b < gi[k].banks; b++)
			mb_printf(mb, "flashstock_table_fill{table=\"%s\",bank=\"%u\"} %u\n", gname[k], b,
			          gi[k].bank[b].keys);
	mb_printf(mb, "# HELP flashstock_reclaimed_total Keys removed by clearing generation banks.\n"
	              "# TYPE flashstock_reclaimed_total counter\n");
	for (int k = 0; k < 2; k++)
		mb_printf(mb, "flashstock_reclaimed_total{table=\"%s\"} %llu\n", gname[k],
		          (unsigned long long)gi[k].reclaimed);
	mb_printf(mb, "# HELP flashstock_generation Current generation per keyed table.\n"
	              "# TYPE flashstock_generation gauge\n");
	for (int k = 0; k < 2; k++)
		mb_printf(mb, "flashstock_generation{table=\"%s\"} %llu\n", gname[k],
		          (unsigned long long)gi[k].gen);
}

static void render_wal(struct metrics *m, struct mbuf *mb)
{
	struct wal_stats w;
	wal_stats_get(m->m_w, &w);
	mb_metric(mb, "flashstock_wal_durable_lsn", "gauge", "Highest WAL LSN made durable.",
	          w.durable_lsn);
	mb_metric(mb, "flashstock_wal_pending_frames", "gauge",
	          "Frames appended but not yet durable (WAL lag).", w.next_lsn - 1 - w.durable_lsn);
	mb_metric(mb, "flashstock_wal_commits_total", "counter", "Group commits.", w.commits);
	mb_metric(mb, "flashstock_wal_frames_total", "counter", "Frames made durable.", w.frames);
	mb_metric(mb, "flashstock_wal_bytes_total", "counter", "Bytes written to the WAL.", w.bytes);
	mb_metric(mb, "flashstock_wal_group_max", "gauge", "Most frames in one group commit.",
	          w.max_group);
	mb_metric(mb, "flashstock_wal_files_created_total", "counter", "WAL files created.",
	          w.files_created);
	mb_metric(mb, "flashstock_wal_failed", "gauge",
	          "1 once a WAL write or fdatasync failed (sticky).", w.failed != 0);
	mb_printf(mb, "# HELP flashstock_wal_fdatasync_seconds fdatasync latency of group commits.\n"
	              "# TYPE flashstock_wal_fdatasync_seconds histogram\n");
	uint64_t cum = 0;
	for (int b = 0; b < WAL_HIST_BUCKETS; b++) {
		cum += w.sync_hist[b];
		/* bucket b holds [2^b, 2^(b+1)) us */
		mb_printf(mb, "flashstock_wal_fdatasync_seconds_bucket{le=\"%.6f\"} %llu\n",
		          (double)(2ull << b) / 1e6, (unsigned long long)cum);
	}
	mb_printf(mb, "flashstock_wal_fdatasync_seconds_bucket{le=\"+Inf\"} %llu\n"
	              "flashstock_wal_fdatasync_seconds_sum %.9f\n"
	              "flashstock_wal_fdatasync_seconds_count %llu\n",
	          (unsigned long long)cum, (double)w.sync_ns_total / 1e9, (unsigned long long)cum);
}

static void render_serve(struct metrics *m, struct mbuf *mb)
{
	struct serve_stats st;
	rbox_read(m->m_st, &st);   /* one whole round's figures */
	mb_metric(mb, "flashstock_serve_records_total", "counter",
	          "Records the daemon wrote to the WAL.", st.records);
	mb_metric(mb, "flashstock_serve_skipped_total", "counter",
	          "Records found in the WAL already at start (not written twice).", st.skipped);
	mb_metric(mb, "flashstock_serve_rounds_total", "counter", "Drain rounds.", st.rounds);
	mb_metric(mb, "flashstock_serve_recovered_total", "counter",
	          "Dead handles recovered by the daemon.", st.recovered);
	mb_metric(mb, "flashstock_snapshot_lsn", "gauge",
	          "LSN of the newest snapshot written or found (0: none).", st.snap_lsn);
	mb_metric(mb, "flashstock_snapshots_total", "counter", "Snapshots written.", st.snapshots);
	mb_metric(mb, "flashstock_snapshot_failures_total", "counter",
	          "Snapshot failures (sticky: snapshots stay off afterwards).", st.snap_failures);
	mb_metric(mb, "flashstock_wal_files_removed_total", "counter",
	          "WAL files removed behind snapshots and MySQL.", st.wal_removed);
	mb_printf(mb, "# HELP flashstock_durable_lag_seconds Age of the oldest record of each group "
	              "commit when it became durable (async: the loss window).\n"
	              "# TYPE flashstock_durable_lag_seconds histogram\n");
	uint64_t cum = 0;
	for (int b = 0; b < WAL_HIST_BUCKETS; b++) {
		cum += st.lag_hist[b];
		mb_printf(mb, "flashstock_durable_lag_seconds_bucket{le=\"%.6f\"} %llu\n",
		          (double)(2ull << b) / 1e6, (unsigned long long)cum);
	}
	mb_printf(mb, "flashstock_durable_lag_seconds_bucket{le=\"+Inf\"} %llu\n"
	              "flashstock_durable_lag_seconds_sum %.9f\n"
	              "flashstock_durable_lag_seconds_count %llu\n",
	          (unsigned long long)cum, (double)st.lag_ns_sum / 1e9, (unsigned long long)cum);
	mb_printf(mb, "# HELP flashstock_durable_lag_max_seconds Largest such age seen.\n"
	              "# TYPE flashstock_durable_lag_max_seconds gauge\n"
	              "flashstock_durable_lag_max_seconds %.9f\n", (double)st.lag_ns_max / 1e9);
}

static void render_mysql(struct metrics *m, struct mbuf *mb)
{
	struct mdb_pump_stats p;
	if (m->m_pump == NULL || mdb_pump_stats_get(m->m_pump, &p) != FLASH_OK)
		return;
	mb_metric(mb, "flashstock_mysql_applier_reached", "gauge",
	          "1 if the applier's last attempt reached MySQL.", p.connected != 0);
	mb_metric(mb, "flashstock_mysql_applied_lsn", "gauge", "Highest WAL LSN MySQL holds.",
	          p.applied_lsn);
	mb_metric(mb, "flashstock_mysql_lag_records", "gauge",
	          "Durable WAL records not yet in MySQL (applier lag).",
	          p.pushed_lsn > p.applied_lsn ? p.pushed_lsn - p.applied_lsn : 0);
	mb_metric(mb, "flashstock_mysql_applied_total", "counter", "Records applied to MySQL.",
	          p.mysql.applied);
	mb_metric(mb, "flashstock_mysql_conflicts_total", "counter",
	          "Records MySQL refused (all kinds; each logged with its order number).",
	          p.mysql.conflicts);
	mb_metric(mb, "flashstock_mysql_unique_conflicts_total", "counter",
	          "Duplicate order or per-user unique-key conflicts.", p.mysql.dup_conflicts);
	mb_metric(mb, "flashstock_mysql_stock_conflicts_total", "counter",
	          "Conditional stock updates refused (oversell or negative restock).",
	          p.mysql.stock_conflicts);
	mb_metric(mb, "flashstock_mysql_retryable_errors_total", "counter",
	          "Attempts that found MySQL down, slow or busy.", p.mysql.retryable_errors);
	mb_metric(mb, "flashstock_mysql_queue_records", "gauge", "Records queued for the applier.",
	          p.queued);
}

static void render_reconcile(struct metrics *m, struct mbuf *mb)
{
	struct serve_recon_stats r;
	pthread_mutex_lock(&m->m_mu);
	serve_recon_t *rc = m->m_recon;
	if (rc)
		serve_recon_stats_get(rc, &r);
	pthread_mutex_unlock(&m->m_mu);
	if (!rc)
		return;
	mb_metric(mb, "flashstock_reconcile_passes_total", "counter", "Periodic reconciler passes.",
	          r.passes);
	mb_metric(mb, "flashstock_reconcile_differences_last", "gauge",
	          "Differences found by the last reconciler pass.", r.diffs_last);
	mb_metric(mb, "flashstock_reconcile_differences_total", "counter",
	          "Differences found over every reconciler pass.", r.diffs_total);
	mb_metric(mb, "flashstock_reconcile_alert", "gauge",
	          "1 if the last pass found differing units past the threshold.", r.alert);
	mb_metric(mb, "flashstock_reconcile_skipped_busy_total", "counter",
	          "Passes whose segment vs WAL part found no quiet window (skipped).", r.skipped_busy);
	mb_metric(mb, "flashstock_reconcile_errors_total", "counter",
	          "Passes with a part that could not run (MySQL down, ...).", r.errors);
	mb_metric(mb, "flashstock_reconcile_last_lsn", "gauge",
	          "LSN the last pass compared at (MySQL's applied LSN).", r.last_lsn);
}

/* The archiver: what it archived (counters survive its stop at shutdown). */
static void render_archiver(struct metrics *m, struct mbuf *mb)
{
	struct archiver_stats a;
	memset(&a, 0, sizeof a);
	pthread_mutex_lock(&m->m_mu);
	int on = m->m_arch != NULL;
	if (on)
		archiver_stats_get(m->m_arch, &a);
	else {
		a.archived = m->m_arch_done;
		a.orders = m->m_arch_orders;
	}
	pthread_mutex_unlock(&m->m_mu);
	mb_metric(mb, "flashstock_archived_total", "counter",
	          "Activities this daemon archived (serve --archive-after-s).", a.archived);
	mb_metric(mb, "flashstock_archived_orders_total", "counter",
	          "Order-table slots freed by this daemon's archives.", a.orders);
	mb_metric(mb, "flashstock_archive_due", "gauge",
	          "Ended activities past --archive-after-s not archived yet (last pass).", a.due);
	mb_metric(mb, "flashstock_archive_waits_total", "counter",
	          "Archiver passes that waited for MariaDB (or the backstop) to take what the "
	          "segment reflects.", a.waits);
	mb_metric(mb, "flashstock_archive_failures_total", "counter",
	          "flash_archive() calls of the archiver that failed.", a.failures);
}

/* The reservation expirer: expiries and their lag after the pay-by time. */
static void render_expirer(struct metrics *m, struct mbuf *mb)
{
	struct expirer_stats x;
	pthread_mutex_lock(&m->m_mu);
	if (m->m_expirer)
		expirer_stats_get(m->m_expirer, &x);
	else
		x = m->m_expire_done;
	pthread_mutex_unlock(&m->m_mu);
	mb_metric(mb, "flashstock_reservations_expired_total", "counter",
	          "Reservations this daemon expired at their pay-by time (unpaid).", x.expired);
	mb_metric(mb, "flashstock_reservations_pending", "gauge",
	          "Reservations the expirer holds, waiting for their pay-by time.", x.pending);
	mb_metric(mb, "flashstock_reservations_settled_total", "counter",
	          "Due reservations the expirer found paid, cancelled or expired by someone else.",
	          x.settled);
	mb_metric(mb, "flashstock_expiry_failures_total", "counter",
	          "flash_expire() calls of the expirer that failed (tried again).", x.failures);
	mb_printf(mb, "# HELP flashstock_expiry_lag_seconds Time from a reservation's pay-by time to "
	              "its expiry by the daemon.\n# TYPE flashstock_expiry_lag_seconds histogram\n");
	uint64_t cum = 0;
	for (int b = 0; b < EXPIRER_LAG_BUCKETS - 1; b++) {
		cum += x.lag_hist[b];
		mb_printf(mb, "flashstock_expiry_lag_seconds_bucket{le=\"%.3f\"} %llu\n",
		          (double)expirer_lag_le_ns[b] / 1e9, (unsigned long long)cum);
	}
	cum += x.lag_hist[EXPIRER_LAG_BUCKETS - 1];
	mb_printf(mb, "flashstock_expiry_lag_seconds_bucket{le=\"+Inf\"} %llu\n"
	              "flashstock_expiry_lag_seconds_sum %.9f\n"
	              "flashstock_expiry_lag_seconds_count %llu\n",
	          (unsigned long long)cum, (double)x.lag_ns_sum / 1e9, (unsigned long long)cum);
	mb_printf(mb, "# HELP flashstock_expiry_lag_max_seconds Largest expiry lag seen.\n"
	              "# TYPE flashstock_expiry_lag_max_seconds gauge\n"
	              "flashstock_expiry_lag_max_seconds %.9f\n", (double)x.lag_ns_max / 1e9);
}

static void render_backstop(struct metrics *m, struct mbuf *mb)
{
	struct backstop_stats b;
	pthread_mutex_lock(&m->m_mu);
	backstop_t *bs = m->m_backstop;
	if (bs)
		backstop_stats_get(bs, &b);
	pthread_mutex_unlock(&m->m_mu);
	if (!bs)
		return;
	mb_metric(mb, "flashstock_backstop_conflicts_total", "counter",
	          "Second orders of a user across boxes refused by the central unique index.", b.conflicts);
	mb_metric(mb, "flashstock_backstop_compensated_total", "counter",
	          "Refused orders cancelled in this box's segment.", b.compensated);
	mb_metric(mb, "flashstock_backstop_records_total", "counter",
	          "Feed records written to the central database.", b.records);
	mb_metric(mb, "flashstock_backstop_retries_total", "counter",
	          "Central transactions rolled back and run again.", b.retries);
	mb_metric(mb, "flashstock_backstop_lsn", "gauge",
	          "Every record of this box's WAL up to this LSN is written centrally.", b.pos_lsn);
	mb_metric(mb, "flashstock_backstop_failed", "gauge",
	          "1 if the backstop stopped on an error it cannot retry.", b.failed != 0);
}

/* The lease agent (lease.h): units by where they are, operations, its state. */
static void render_lease(struct metrics *m, struct mbuf *mb)
{
	struct lease_stats l;
	pthread_mutex_lock(&m->m_mu);
	struct lease *a = m->m_lease;
	if (a)
		lease_stats_get(a, &l);
	pthread_mutex_unlock(&m->m_mu);
	if (!a)
		return;
	mb_printf(mb, "# HELP flashstock_lease_units Leased units of this box: leased (open leases, units"
	          " not returned), held (available in the segment), sold (total - available).\n"
	          "# TYPE flashstock_lease_units gauge\n"
	          "flashstock_lease_units{state=\"leased\"} %lld\n"
	          "flashstock_lease_units{state=\"held\"} %lld\n"
	          "flashstock_lease_units{state=\"sold\"} %lld\n"
	          "flashstock_lease_units{state=\"returned\"} %llu\n",
	          (long long)l.units_leased, (long long)l.units_held, (long long)l.units_sold,
	          (unsigned long long)l.return_units);
	mb_metric(mb, "flashstock_lease_takes_total", "counter", "Leases taken by this box's agent.", l.takes);
	mb_metric(mb, "flashstock_lease_returns_total", "counter", "Returns committed by this box's agent.",
	          l.returns);
	mb_metric(mb, "flashstock_lease_failures_total", "counter",
	          "Central statements that failed or were refused (MariaDB down, pool empty races, ...).",
	          l.failures);
	mb_metric(mb, "flashstock_lease_finished_total", "counter",
	          "Interrupted takes and returns finished at start.", l.finished);
	mb_metric(mb, "flashstock_lease_node_failovers_total", "counter",
	          "Moves to another node of the central cluster.", l.node_failovers);
	mb_metric(mb, "flashstock_lease_epoch", "gauge", "The box's lease epoch.", l.epoch);
	mb_metric(mb, "flashstock_lease_fenced", "gauge", "1 when MariaDB has fenced this box.",
	          l.state == LEASE_FENCED);
	mb_metric(mb, "flashstock_lease_suspended", "gauge",
	          "1 while the box is cut off from MariaDB and has stopped selling its leased stock.",
	          l.state == LEASE_SUSPENDED);
	mb_metric(mb, "flashstock_lease_last_heartbeat_ms", "gauge",
	          "Wall-clock time (ms since the Unix epoch) at which the last heartbeat MariaDB accepted was"
	          " sent; cut off, the box sells until at most 3 x --heartbeat-s + 2 s after it.",
	          (uint64_t)l.heartbeat_ms);
}

void metrics_set_lease(metrics_t *m, struct lease *a)
{
	pthread_mutex_lock(&m->m_mu);
	m->m_lease = a;
	pthread_mutex_unlock(&m->m_mu);
}

/* ---- the dashboard: per sku, per operation, locks, MySQL liveness ---- */

/* "sold_out" for FLASH_ESOLD_OUT, "ok" for FLASH_OK, "other" past the known codes. */
static void code_label(int rc, char *buf, size_t len)
{
	const char *n = flash_rcname(rc);
	size_t i = 0;
	if (strncmp(n, "FLASH_E", 7) == 0 && strcmp(n, "FLASH_E?") != 0)
		n += 7;
	else if (strcmp(n, "FLASH_OK") == 0)
		n = "ok";
	else
		n = "other";
	for (; n[i] && i + 1 < len; i++)
		buf[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
	buf[i] = 0;
}

static void hist_lines(struct mbuf *mb, const char *name, const char *labels,
                       const struct flash_hist *hi)
{
	uint64_t cum = 0;
	for (unsigned b = 0; b + 1 < FLASH_OBS_BUCKETS; b++) {
		cum += hi->bucket[b];
		mb_printf(mb, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name, labels, *labels ? "," : "",
		          (double)flash_obs_bucket_le_ns(b) / 1e9, (unsigned long long)cum);
	}
	mb_printf(mb, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, *labels ? "," : "",
	          (unsigned long long)hi->count);
	mb_printf(mb, "%s_sum%s%s%s %.9f\n%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels,
	          *labels ? "}" : "", (double)hi->sum_ns / 1e9, name, *labels ? "{" : "", labels,
	          *labels ? "}" : "", (unsigned long long)hi->count);
}

/* Per-operation latency histograms, results per code, lock wait and hold. */
static void render_obs(struct mbuf *mb, const struct flash_obs *o)
{
	char lab[64], code[32];
	mb_printf(mb, "# HELP flashstock_op_duration_seconds Time of engine calls, entry to "
	              "return (sync: the WAL wait included), measured inside the engine "
	              "(orders: one in 16 per handle; other operations: every call).\n"
	              "# TYPE flashstock_op_duration_seconds histogram\n");
	for (unsigned op = 0; op < FLASH_OP_COUNT; op++) {
		snprintf(lab, sizeof lab, "op=\"%s\"", flash_op_name(op));
		hist_lines(mb, "flashstock_op_duration_seconds", lab, &o->time[op]);
	}
	mb_printf(mb, "# HELP flashstock_results_total Engine calls by operation and result code "
	              "(code=\"ok\" for success; success rate = ok / sum over codes).\n"
	              "# TYPE flashstock_results_total counter\n");
	for (unsigned op = 0; op < FLASH_OP_COUNT; op++)
		for (unsigned c = 0; c < FLASH_OBS_CODES; c++) {
			if (c != 0 && o->results[op][c] == 0)
				continue;   /* every op shows "ok"; other codes once seen */
			code_label(-(int)c, code, sizeof code);
			mb_printf(mb, "flashstock_results_total{op=\"%s\",code=\"%s\"} %llu\n",
			          flash_op_name(op), code, (unsigned long long)o->results[op][c]);
		}
	mb_printf(mb, "# HELP flashstock_lock_wait_seconds Lock waits: first refused acquire of "
	              "a lock by an owner on a handle to its grant there (immediate grants not "
	              "counted).\n# TYPE flashstock_lock_wait_seconds histogram\n");
	hist_lines(mb, "flashstock_lock_wait_seconds", "", &o->time[FLASH_TIME_LOCK_WAIT]);
	mb_printf(mb, "# HELP flashstock_lock_hold_seconds Lock holds: grant to release, or to "
	              "the lease's end (holder's death) when a later acquire finds it over.\n"
	              "# TYPE flashstock_lock_hold_seconds histogram\n");
	hist_lines(mb, "flashstock_lock_hold_seconds", "", &o->time[FLASH_TIME_LOCK_HOLD]);
}

static const struct rsql_sku *sql_sku_find(const struct rsql_sku *v, size_t n,
                                                uint32_t a, uint32_t s)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].activity_id == a && v[i].sku_id == s)
			return &v[i];
	return NULL;
}

/* Stock per sku in memory, and against MySQL as the last reconciler pass read it. */
/*
 * The next sku entry at or after *i (below @p cap, the segment's max_skus):
 * entries an archive freed read FLASH_EARCHIVED between live ones, so the
 * walk skips them instead of stopping.  Returns 1 with *si, 0 at the end.
 */
static int sku_next(flash_t *h, uint32_t *i, uint32_t cap, struct flash_sku_info *si)
{
	for (; *i < cap; ++*i) {
		int rc = flash_sku_at(h, *i, si);
		if (rc == FLASH_OK)
			return 1;
		if (rc != FLASH_ENOT_FOUND && rc != FLASH_EARCHIVED)
			return 0;
	}
	return 0;
}

static uint32_t sku_cap(flash_t *h)
{
	struct flash_seg_opts so;
	return flash_seg_opts_get(h, &so) == FLASH_OK ? so.max_skus : 0;
}

struct rsv_sku {
	uint32_t activity_id, sku_id;
	uint64_t units;
};

static int rsv_cmp(const void *a, const void *b)
{
	const struct rsv_sku *x = a, *y = b;
	if (x->activity_id != y->activity_id)
		return x->activity_id < y->activity_id ? -1 : 1;
	return x->sku_id < y->sku_id ? -1 : x->sku_id > y->sku_id;
}

/*
 * Units held by reservations waiting for payment (RESERVED orders), per
 * sku: one read of the order table at scrape time, off the order path.
 * Every line of a cart counts: a slot holding a cart's line i >= 1 reads
 * as that line (its sku and qty, the cart's state), so no line is skipped.
 * Skipped while the expirer holds no reservation (every RESERVED order is
 * in its heap: seeded at its start, noted as it is drained), so a sale
 * without reservations pays nothing for it.
 */
static void render_reserved(struct metrics *m, struct mbuf *mb, flash_t *h)
{
	struct flash_seg_opts so;
	struct expirer_stats x = { 0 };
	int have_expirer;
	pthread_mutex_lock(&m->m_mu);
	if ((have_expirer = m->m_expirer != NULL))
		expirer_stats_get(m->m_expirer, &x);
	pthread_mutex_unlock(&m->m_mu);
	uint32_t cap = sku_cap(h), n = 0;
	struct rsv_sku *v = cap ? calloc(cap, sizeof *v) : NULL;
	struct flash_sku_info si;
	if (!v || flash_seg_opts_get(h, &so) != FLASH_OK) {
		free(v);
		return;
	}
	for (uint32_t i = 0; n < cap && sku_next(h, &i, cap, &si); i++)
		v[n++] = (struct rsv_sku){ si.activity_id, si.sku_id, 0 };
	qsort(v, n, sizeof *v, rsv_cmp);
	for (uint32_t i = 0; n > 0 && (!have_expirer || x.pending > 0) && i < so.max_orders; i++) {
		struct flash_order_info oi;
		if (flash_order_at(h, i, &oi) != FLASH_OK || oi.state != FLASH_ORDER_RESERVED)
			continue;
		struct rsv_sku key = { oi.activity_id, oi.sku_id, 0 };
		struct rsv_sku *e = bsearch(&key, v, n, sizeof *v, rsv_cmp);
		if (e)
			e->units += oi.qty;
	}
	mb_printf(mb, "# HELP flashstock_sku_reserved Units held per sku by reservations waiting for "
	              "their payment (RESERVED orders; part of flashstock_sku_sold).\n"
	              "# TYPE flashstock_sku_reserved gauge\n");
	for (uint32_t i = 0; i < n; i++)
		mb_printf(mb, "flashstock_sku_reserved{activity=\"%u\",sku=\"%u\"} %llu\n", v[i].activity_id,
		          v[i].sku_id, (unsigned long long)v[i].units);
	free(v);
}

static void render_skus(struct metrics *m, struct mbuf *mb, flash_t *h)
{
	struct rsql_sku *sql = NULL;
	size_t nsql = 0;
	int64_t when_ns = 0;
	uint64_t sql_lsn = 0;
	pthread_mutex_lock(&m->m_mu);
	if (m->m_recon)
		serve_recon_skus_get(m->m_recon, &sql, &nsql, &when_ns, &sql_lsn);
	pthread_mutex_unlock(&m->m_mu);

	static const char *const what[3][3] = {
		{ "flashstock_sku_available", "gauge", "Units available in memory per sku." },
		{ "flashstock_sku_sold", "gauge", "Units sold in memory per sku (total - available: "
		  "unpaid reservations' units included)." },
		{ "flashstock_sku_total", "gauge", "Units loaded plus restocked per sku." },
	};
	for (int k = 0; k < 3; k++) {
		struct flash_sku_info si;
		mb_printf(mb, "# HELP %s %s\n# TYPE %s %s\n", what[k][0], what[k][2], what[k][0],
		          what[k][1]);
		for (uint32_t i = 0, cap = sku_cap(h); sku_next(h, &i, cap, &si); i++) {
			uint64_t v = k == 0 ? si.available : k == 1 ? si.total - si.available : si.total;
			mb_printf(mb, "%s{activity=\"%u\",sku=\"%u\"} %llu\n", what[k][0], si.activity_id,
			          si.sku_id, (unsigned long long)v);
		}
	}
	if (m->m_recon != NULL) {
		struct flash_sku_info si;
		mb_printf(mb, "# HELP flashstock_sku_mysql_sold Units sold per sku in MySQL "
		              "(item_stock), as the last reconciler pass read it.\n"
		              "# TYPE flashstock_sku_mysql_sold gauge\n");
		for (size_t i = 0; i < nsql; i++)
			mb_printf(mb, "flashstock_sku_mysql_sold{activity=\"%u\",sku=\"%u\"} %llu\n",
			          sql[i].activity_id, sql[i].sku_id, (unsigned long long)sql[i].sold);
		mb_printf(mb, "# HELP flashstock_sku_mysql_diff_units Units sold in memory now minus "
		              "units sold in MySQL at the last reconciler pass, unpaid reservations' "
		              "units counted as sold on both sides (applier lag included; "
		              "0 at quiescence when they agree).\n"
		              "# TYPE flashstock_sku_mysql_diff_units gauge\n");
		for (uint32_t i = 0, cap = sku_cap(h); when_ns != 0 && sku_next(h, &i, cap, &si); i++) {
			const struct rsql_sku *q = sql_sku_find(sql, nsql, si.activity_id, si.sku_id);
			/* memory's total - available holds reserved units too (a
			 * reservation takes them at once): so must MySQL's side, or a
			 * reservation waiting for its payment reads as a difference */
			int64_t d = (int64_t)(si.total - si.available) -
			            (q ? (int64_t)(q->sold + q->reserved) : 0);
			mb_printf(mb, "flashstock_sku_mysql_diff_units{activity=\"%u\",sku=\"%u\"} %lld\n",
			          si.activity_id, si.sku_id, (long long)d);
		}
		mb_printf(mb, "# HELP flashstock_sku_mysql_timestamp_seconds When the last reconciler "
		              "pass read MySQL's per-sku figures (Unix time; 0: not yet).\n"
		              "# TYPE flashstock_sku_mysql_timestamp_seconds gauge\n"
		              "flashstock_sku_mysql_timestamp_seconds %.3f\n", (double)when_ns / 1e9);
		mb_metric(mb, "flashstock_sku_mysql_lsn", "gauge",
		          "MySQL's applied LSN the per-sku MySQL figures were read at.", sql_lsn);
	}
	free(sql);
}

static void render_probe(struct metrics *m, struct mbuf *mb)
{
	struct mdb_probe_stats ps;
	pthread_mutex_lock(&m->m_mu);
	mdb_probe_t *p = m->m_probe;
	if (p)
		mdb_probe_stats_get(p, &ps);
	pthread_mutex_unlock(&m->m_mu);
	if (!p)
		return;
	mb_metric(mb, "flashstock_mysql_connected", "gauge",
	          "1 if MySQL answered the daemon's last ping within its timeout (a hung server reads 0).",
	          ps.connected != 0);
	mb_metric(mb, "flashstock_mysql_pings_total", "counter", "Liveness pings sent to MySQL.",
	          ps.pings);
	mb_metric(mb, "flashstock_mysql_ping_failures_total", "counter",
	          "Liveness pings MySQL did not answer in time (or no connection).", ps.failures);
	mb_printf(mb, "# HELP flashstock_mysql_ping_seconds Round trip of the last answered ping.\n"
	              "# TYPE flashstock_mysql_ping_seconds gauge\n"
	              "flashstock_mysql_ping_seconds %.9f\n", (double)ps.last_rtt_ns / 1e9);
	mb_printf(mb, "# HELP flashstock_mysql_last_ping_ok_timestamp_seconds When MySQL last "
	              "answered a ping (Unix time; 0: never).\n"
	              "# TYPE flashstock_mysql_last_ping_ok_timestamp_seconds gauge\n"
	              "flashstock_mysql_last_ping_ok_timestamp_seconds %.3f\n",
	          (double)ps.last_ok_ns / 1e9);
}

static void render_dashboard(struct metrics *m, struct mbuf *mb)
{
	flash_t *h;
	if (flash_open(m->m_segment, FLASH_RDONLY, &h) == FLASH_OK) {
		struct flash_obs *o = malloc(sizeof *o);
		if (o && flash_obs_get(h, o) == FLASH_OK)
			render_obs(mb, o);
		free(o);
		render_skus(m, mb, h);
		render_reserved(m, mb, h);
		flash_close(h);
	}
	render_probe(m, mb);
}

void metrics_set_probe(metrics_t *m, struct mdb_probe *p)
{
	pthread_mutex_lock(&m->m_mu);
	m->m_probe = p;
	pthread_mutex_unlock(&m->m_mu);
}

void metrics_set_expirer(metrics_t *m, struct expirer *x)
{
	pthread_mutex_lock(&m->m_mu);
	if (m->m_expirer && !x)
		expirer_stats_get(m->m_expirer, &m->m_expire_done);
	m->m_expirer = x;
	pthread_mutex_unlock(&m->m_mu);
}

void metrics_set_archiver(metrics_t *m, struct archiver *a)
{
	pthread_mutex_lock(&m->m_mu);
	if (m->m_arch && !a) {
		struct archiver_stats s;
		archiver_stats_get(m->m_arch, &s);
		m->m_arch_done = s.archived;
		m->m_arch_orders = s.orders;
	}
	m->m_arch = a;
	pthread_mutex_unlock(&m->m_mu);
}

void metrics_set_backstop(metrics_t *m, struct backstop *b)
{
	pthread_mutex_lock(&m->m_mu);
	m->m_backstop = b;
	pthread_mutex_unlock(&m->m_mu);
}

void metrics_set_reconcile(metrics_t *m, struct serve_recon *r)
{
	pthread_mutex_lock(&m->m_mu);
	m->m_recon = r;
	pthread_mutex_unlock(&m->m_mu);
}

/*
 * The feed (feed.h): per registered consumer its lag in records and seconds
 * and whether it is lost, and the retention's count of losses.  Read from
 * the consumers' position files at each scrape (flash_feed_list: no lock).
 */
static void render_feed(struct metrics *m, struct mbuf *mb)
{
	struct feed_retain_stats rs;
	feed_retain_stats_get(&rs);
	mb_metric(mb, "flashstock_feed_lost_total", "counter",
	          "Feed consumers marked lost by WAL retention (past --feed-keep-bytes/--feed-keep-age).",
	          rs.lost_total);
	if (m->m_feed_dir == NULL)
		return;
	size_t n = 0;
	struct flash_feed_info *v = NULL;
	if (feed_list_all(m->m_feed_dir, &v, &n) != FLASH_OK || n == 0) {
		free(v);
		return;
	}
	static const struct { const char *name, *type, *help; } fm[] = {
		{ "flashstock_feed_lag_records", "gauge", "Durable WAL records the consumer has not committed." },
		{ "flashstock_feed_lag_seconds", "gauge",
		  "Age of the oldest record the consumer has not committed (0: caught up)." },
		{ "flashstock_feed_committed_lsn", "gauge", "The consumer's committed position." },
		{ "flashstock_feed_lost", "gauge",
		  "1 while WAL the consumer needs has been removed (state lost: refill it from MariaDB)." },
	};
	for (size_t k = 0; k < sizeof fm / sizeof fm[0]; k++) {
		mb_printf(mb, "# HELP %s %s\n# TYPE %s %s\n", fm[k].name, fm[k].help, fm[k].name, fm[k].type);
		for (size_t i = 0; i < n; i++) {
			if (k == 1)
				mb_printf(mb, "%s{consumer=\"%s\"} %.6f\n", fm[k].name, v[i].fi_name,
				          (double)v[i].fi_lag_ns / 1e9);
			else
				mb_printf(mb, "%s{consumer=\"%s\"} %llu\n", fm[k].name, v[i].fi_name,
				          (unsigned long long)(k == 0 ? v[i].fi_lag_records
				                               : k == 2 ? v[i].fi_committed_lsn
				                                        : v[i].fi_state == FLASH_FEED_LOST));
		}
	}
	free(v);
}

int metrics_set_feed(metrics_t *m, const char *wal_dir)
{
	char *d = wal_dir ? strdup(wal_dir) : NULL;
	if (wal_dir && d == NULL)
		return FLASH_ENOMEM;
	free(m->m_feed_dir);
	m->m_feed_dir = d;
	return FLASH_OK;
}

char *metrics_render(metrics_t *m)
{
	struct mbuf mb = { .cap = 8192 };
	mb.b = malloc(mb.cap);
	if (mb.b == NULL)
		return NULL;
	mb.b[0] = 0;
	render_segment(m, &mb);
	render_wal(m, &mb);
	render_serve(m, &mb);
	render_mysql(m, &mb);
	render_reconcile(m, &mb);
	render_archiver(m, &mb);
	render_expirer(m, &mb);
	render_backstop(m, &mb);
	render_lease(m, &mb);
	render_dashboard(m, &mb);
	render_feed(m, &mb);
	if (mb.oom) {
		free(mb.b);
		return NULL;
	}
	return mb.b;
}

/* ---- HTTP ---- */

static enum MHD_Result metrics_http(void *cls, struct MHD_Connection *c, const char *url,
                                    const char *method, const char *version,
                                    const char *upload, size_t *upload_size, void **con_cls)
{
	struct metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;
	char *body = NULL;
	static const char nf[] = "not found: try /metrics\n", na[] = "GET only\n";

	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = MHD_create_response_from_buffer(sizeof na - 1, (void *)na, MHD_RESPMEM_PERSISTENT);
	} else if (strcmp(url, "/metrics") != 0 && strcmp(url, "/") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
	} else {
		body = metrics_render(m);
		if (body == NULL)
			return MHD_NO;
		r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	}
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

int metrics_start(const char *addr_port, const char *segment, wal_t *w,
                  mdb_pump_t *pump, metrics_t **out, uint16_t *port,
                  char *err, size_t errlen)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	const char *colon = strrchr(addr_port, ':');
	const char *ps = colon ? colon + 1 : addr_port;
	if (colon && colon != addr_port) {
		char a[64];
		size_t n = (size_t)(colon - addr_port);
		if (n >= sizeof a) {
			snprintf(err, errlen, "bad address in '%s'", addr_port);
			return FLASH_EINVAL;
		}
		memcpy(a, addr_port, n);
		a[n] = 0;
		if (inet_pton(AF_INET, a, &sa.sin_addr) != 1) {
			snprintf(err, errlen, "'%s' is not an IPv4 address", a);
			return FLASH_EINVAL;
		}
	}
	char *end;
	unsigned long p = strtoul(ps, &end, 10);
	if (*ps == 0 || *end != 0 || p > 65535) {
		snprintf(err, errlen, "bad port in '%s'", addr_port);
		return FLASH_EINVAL;
	}
	sa.sin_port = htons((uint16_t)p);

	struct metrics *m = calloc(1, sizeof *m);
	if (m == NULL || (m->m_segment = strdup(segment)) == NULL ||
	    rbox_new(sizeof(struct serve_stats), &m->m_st) != FLASH_OK) {
		if (m)
			free(m->m_segment);
		free(m);
		snprintf(err, errlen, "out of memory");
		return FLASH_ENOMEM;
	}
	m->m_w = w;
	m->m_pump = pump;
	pthread_mutex_init(&m->m_mu, NULL);
	m->m_d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	                          metrics_http, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10, MHD_OPTION_END);
	if (m->m_d == NULL) {
		/* libmicrohttpd says why on stderr (MHD_USE_ERROR_LOG): the port in
		 * use, an address this host does not have */
		snprintf(err, errlen, "cannot listen on %s", addr_port);
		pthread_mutex_destroy(&m->m_mu);
		rbox_free(m->m_st);
		free(m->m_segment);
		free(m);
		return FLASH_ESYS;
	}
	if (port) {
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->m_d, MHD_DAEMON_INFO_BIND_PORT);
		*port = di ? di->port : (uint16_t)p;
	}
	*out = m;
	return FLASH_OK;
}

void metrics_publish(metrics_t *m, const struct serve_stats *st)
{
	/* out of memory: the scrapes serve the last round published */
	(void)rbox_publish(m->m_st, st);
}

void metrics_stop(metrics_t *m)
{
	if (m == NULL)
		return;
	MHD_stop_daemon(m->m_d);   /* joins the HTTP thread: no reader is left */
	pthread_mutex_destroy(&m->m_mu);
	rbox_free(m->m_st);
	free(m->m_feed_dir);
	free(m->m_segment);
	free(m);
}
