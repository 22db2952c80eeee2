/*
 * cmd_lease.c -- `flashstock lease`: the operator's side of the central
 * lease database (persist/mysql/central.h): create it, load pools, read its
 * state, fence a box, and reclaim a dead box's units.
 *
 *   lease init    --mysql URL[,URL...]
 *   lease pool    --mysql URLS --activity A --sku S --total N
 *   lease status  --mysql URLS
 *   lease fence   --mysql URLS --box N [--stale-s S] [--force]
 *   lease reclaim --mysql URLS --box N --wal DIR [--name SEG] [--box-mysql URL]
 *   lease reclaim --mysql URLS --box N --from-mysql-only [--box-mysql URL] [--accept-unknown]
 *
 * Every change is one of central.c's conditional statements: a refusal
 * changes nothing and says why.
 */
#include "tool.h"

#include <dirent.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

#include "central.h"
#include "mysql_apply.h"
#include "wal.h"

static void lease_help(FILE *out)
{
	fprintf(out,
	        "usage: flashstock lease init|pool|status|fence|reclaim --mysql URL[,URL...] [options]\n"
	        "\n"
	        "The central lease database (flash_central on a MariaDB Galera cluster; URL is\n"
	        "mysql://user:pass@host:port/flash_central, one per node).  Boxes run\n"
	        "`flashstock serve --lease URLS --box-id N` and take their stock from it.\n"
	        "\n"
	        "  init                 create the database and its tables (idempotent)\n"
	        "  pool --activity A --sku S --total N\n"
	        "                       load a pool of N units, or change its total; refused\n"
	        "                       (nothing changed) below what is leased or sold\n"
	        "  status               pools, boxes (epoch, state, heartbeat age), leases per\n"
	        "                       box, and stranded units (fenced leases not reclaimed)\n"
	        "  fence --box N [--stale-s S] [--force]\n"
	        "                       fence box N: its epoch moves on, its open leases become\n"
	        "                       'fenced', MariaDB refuses its takes, returns and\n"
	        "                       heartbeats from then on.  Refused while its heartbeat is\n"
	        "                       younger than S seconds (default 30; a cut-off box has\n"
	        "                       stopped selling by itself 3 heartbeat periods + 2 s\n"
	        "                       after its last accepted one); --force drops that\n"
	        "                       condition\n"
	        "  reclaim --box N --wal DIR [--name SEG] [--box-mysql URL]\n"
	        "                       give a fenced box's unsold units back: sold per sku is\n"
	        "                       read from its WAL (DIR; no serve may hold it), applied\n"
	        "                       first to its database when --box-mysql is given, and\n"
	        "                       each fenced lease is closed with its unsold rest going\n"
	        "                       back to the pool.  Idempotent by lease id.  When the\n"
	        "                       box's segment is on this machine (--name SEG, or the\n"
	        "                       segment the WAL's identity names), the reclaimed skus'\n"
	        "                       stock is first taken out of it, so nothing returned\n"
	        "                       can be sold there, and sold is the segment's own\n"
	        "                       figure (it includes orders not yet in the WAL)\n"
	        "  reclaim --box N --from-mysql-only [--box-mysql URL] [--accept-unknown]\n"
	        "                       only MariaDB is left: sold is what the box's database\n"
	        "                       (default flash_box<N> next to flash_central) has\n"
	        "                       applied; orders the box acknowledged after its applied\n"
	        "                       LSN are unknown.  Prints the backlog by lease and LSN;\n"
	        "                       returns units only with --accept-unknown\n"
	        "\n"
	        "exit: 0 done; 1 refused or failed (nothing changed); 2 usage error\n");
}

struct lease_args {
	const char *urls, *wal, *box_mysql, *name;
	uint32_t    activity, sku, box, stale_s;
	uint64_t    total;
	int         have_total, force, from_mysql_only, accept_unknown;
};

static int lease_open(const char *cmd, const struct lease_args *a, int create, central_t **c)
{
	if (!a->urls)
		return tool_usage_err(cmd, "--mysql URL[,URL...] is required");
	struct central_opts o = { .urls = a->urls, .create_db = create, .retry_ms = 10000 };
	int rc = central_open(&o, c);
	if (rc != FLASH_OK)
		return tool_fail("lease: --mysql", rc);
	return TOOL_OK;
}

static int lease_init(const char *cmd, const struct lease_args *a)
{
	central_t *c = NULL;
	int rc = lease_open(cmd, a, 1, &c);
	if (rc != TOOL_OK)
		return rc;
	rc = central_init(c);
	if (rc != FLASH_OK) {
		fprintf(stderr, "flashstock lease init: %s: %s\n", flash_strerror(rc), central_error(c));
		central_close(c);
		return TOOL_FAIL;
	}
	printf("lease init: tables fs_box, fs_pool, fs_lease ready\n");
	central_close(c);
	return TOOL_OK;
}

static int lease_pool(const char *cmd, const struct lease_args *a)
{
	if (!a->activity || !a->sku || !a->have_total)
		return tool_usage_err(cmd, "pool needs --activity A --sku S --total N");
	central_t *c = NULL;
	int rc = lease_open(cmd, a, 0, &c);
	if (rc != TOOL_OK)
		return rc;
	rc = central_pool_set(c, a->activity, a->sku, (int64_t)a->total);
	struct pool_row p;
	int grc = central_pool_get(c, a->activity, a->sku, &p);
	if (rc == FLASH_ESOLD_OUT) {
		fprintf(stderr, "flashstock lease pool: refused: total %" PRIu64 " is below what is leased or"
		        " sold (%" PRId64 " of %" PRId64 "); nothing changed\n", a->total,
		        grc == FLASH_OK ? p.total - p.unleased : -1, grc == FLASH_OK ? p.total : -1);
		central_close(c);
		return TOOL_FAIL;
	}
	if (rc != FLASH_OK || grc != FLASH_OK) {
		fprintf(stderr, "flashstock lease pool: %s %s\n", flash_strerror(rc ? rc : grc),
		        central_error(c));
		central_close(c);
		return TOOL_FAIL;
	}
	printf("pool %u/%u: total %" PRId64 ", unleased %" PRId64 ", in leases %" PRId64 "\n", a->activity,
	       a->sku, p.total, p.unleased, p.leased);
	central_close(c);
	return TOOL_OK;
}

static int lease_status(const char *cmd, const struct lease_args *a)
{
	central_t *c = NULL;
	int rc = lease_open(cmd, a, 0, &c);
	if (rc != TOOL_OK)
		return rc;
	MYSQL *m = central_conn(c);
	if (!m || mysql_query(m, "SELECT activity_id, sku_id FROM fs_pool ORDER BY activity_id, sku_id")) {
		fprintf(stderr, "flashstock lease status: %s\n", m ? mysql_error(m) : central_error(c));
		central_close(c);
		return TOOL_FAIL;
	}
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row;
	printf("pools:\n");
	while (r && (row = mysql_fetch_row(r))) {
		struct pool_row p;
		uint32_t act = (uint32_t)strtoul(row[0], NULL, 10), sku = (uint32_t)strtoul(row[1], NULL, 10);
		if (central_pool_get(c, act, sku, &p) != FLASH_OK)
			continue;
		printf("  %u/%u  total %" PRId64 "  unleased %" PRId64 "  in leases %" PRId64 "  sold (closed"
		       " leases) %" PRId64 "  wanted %" PRId64 "%s\n", act, sku, p.total, p.unleased, p.leased,
		       p.sold_closed, p.wanted,
		       p.unleased + p.leased + p.sold_closed == p.total ? "" : "  MISMATCH");
	}
	if (r)
		mysql_free_result(r);
	struct box_row *b = NULL;
	size_t nb = 0;
	struct lease_row *l = NULL;
	size_t nl = 0;
	if ((rc = central_boxes(c, &b, &nb)) != FLASH_OK ||
	    (rc = central_leases(c, 0, NULL, &l, &nl)) != FLASH_OK) {
		fprintf(stderr, "flashstock lease status: %s %s\n", flash_strerror(rc), central_error(c));
		free(b);
		central_close(c);
		return TOOL_FAIL;
	}
	printf("boxes:\n");
	int64_t stranded_all = 0;
	for (size_t i = 0; i < nb; i++) {
		int64_t open = 0, stranded = 0;
		size_t nopen = 0, nfenced = 0;
		for (size_t j = 0; j < nl; j++) {
			if (l[j].box_id != b[i].box_id)
				continue;
			if (!strcmp(l[j].state, "open")) {
				open += l[j].units - l[j].returned;
				nopen++;
			} else if (!strcmp(l[j].state, "fenced")) {
				stranded += l[j].units - l[j].returned;
				nfenced++;
			}
		}
		stranded_all += stranded;
		printf("  box %u  epoch %u  %s  heartbeat %.1f s ago  applied LSN %" PRIu64 "  open leases %zu"
		       " (%" PRId64 " units)  fenced leases %zu (%" PRId64 " units, sold part unknown until"
		       " reclaim)\n", b[i].box_id, b[i].epoch, b[i].state, (double)b[i].heartbeat_age_ms / 1000.0,
		       b[i].applied_lsn, nopen, open, nfenced, stranded);
	}
	printf("stranded: %" PRId64 " units in fenced leases (at most; `lease reclaim` returns the unsold"
	       " part)\n", stranded_all);
	free(b);
	free(l);
	central_close(c);
	return TOOL_OK;
}

static int lease_fence(const char *cmd, const struct lease_args *a)
{
	if (!a->box)
		return tool_usage_err(cmd, "fence needs --box N");
	central_t *c = NULL;
	int rc = lease_open(cmd, a, 0, &c);
	if (rc != TOOL_OK)
		return rc;
	uint32_t epoch = 0, leases = 0;
	rc = central_fence(c, a->box, a->stale_s, a->force, &epoch, &leases);
	central_close(c);
	switch (rc) {
	case FLASH_OK:
		printf("box %u fenced: epoch now %u, %u open leases fenced%s\n", a->box, epoch, leases,
		       a->force ? " (--force: the heartbeat condition was dropped; a box still running stops"
		                  " selling at its next heartbeat)" : "");
		printf("next: flashstock lease reclaim --box %u --wal DIR (or --from-mysql-only)\n", a->box);
		return TOOL_OK;
	case FLASH_EBUSY:
		fprintf(stderr, "flashstock lease fence: refused: box %u's heartbeat is younger than %u s (it"
		        " looks alive); nothing changed.  --force fences it anyway\n", a->box, a->stale_s);
		return TOOL_FAIL;
	case FLASH_EEXIST:
		fprintf(stderr, "flashstock lease fence: box %u is fenced already (epoch %u); nothing changed\n",
		        a->box, epoch);
		return TOOL_FAIL;
	case FLASH_ENOT_FOUND:
		fprintf(stderr, "flashstock lease fence: no box %u in fs_box; nothing changed\n", a->box);
		return TOOL_FAIL;
	default:
		return tool_fail("lease fence", rc);
	}
}

/* Sold per sku from a WAL: units out of the box's available, ORDER qty
 * minus CANCEL and EXPIRE qty.  A reservation not paid counts as sold: a
 * unit it holds must not be returned to the pool and sold again. */
struct sold_sku {
	uint32_t act, sku;
	int64_t  sold;
	uint64_t last_lsn;
};

struct sold_tab {
	struct sold_sku *v;
	size_t n, cap;
	int oom;
};

static struct sold_sku *sold_find(struct sold_tab *t, uint32_t act, uint32_t sku)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].act == act && t->v[i].sku == sku)
			return &t->v[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		void *p = realloc(t->v, cap * sizeof *t->v);
		if (!p) {
			t->oom = 1;
			return NULL;
		}
		t->v = p;
		t->cap = cap;
	}
	t->v[t->n] = (struct sold_sku){ act, sku, 0, 0 };
	return &t->v[t->n++];
}

static int sold_frame(void *arg, uint64_t lsn, uint16_t type, const void *payload, uint32_t len)
{
	struct sold_tab *t = arg;
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec))
		return 0;
	struct wal_rec wr;
	memcpy(&wr, payload, sizeof wr);
	const struct flash_record *r = &wr.wr_rec;
	int64_t d[3];
	wal_rec_moves(r, d);
	if (d[0] == 0)
		return 0;               /* no unit left or came back to available */
	struct sold_sku *s = sold_find(t, r->activity_id, r->sku_id);
	if (!s)
		return 1;
	s->sold -= d[0];
	s->last_lsn = lsn;
	return 0;
}

/* The box's database URL: the central URL (its first) with the database
 * flash_box<N>. */
static int box_url(const struct lease_args *a, char *out, size_t cap)
{
	if (a->box_mysql) {
		snprintf(out, cap, "%s", a->box_mysql);
		return 0;
	}
	size_t len = strcspn(a->urls, ",");
	const char *p = strstr(a->urls, "://");
	if (!p || (size_t)(p - a->urls) > len)
		return -1;
	const char *slash = memchr(p + 3, '/', len - (size_t)(p + 3 - a->urls));
	if (!slash)
		return -1;
	const char *q = slash + 1;
	size_t dlen = strcspn(q, "?,");
	snprintf(out, cap, "%.*sflash_box%u%.*s", (int)(slash + 1 - a->urls), a->urls, a->box,
	         (int)(len - (size_t)(q + dlen - a->urls)), q + dlen);
	return 0;
}

/*
 * The box's segment on this machine, writable: --name, or else the segment
 * in /dev/shm whose incarnation is the WAL's (each candidate validated
 * read-only first: no slot is taken in a segment that is not the box's).
 * @return FLASH_OK (*out set); FLASH_ENOSEG (not on this machine: *out
 *         NULL); FLASH_EWAL_IDENT (--name is another incarnation's
 *         segment); another flash_open() code for --name.
 */
static int box_segment(const struct lease_args *a, uint64_t incarnation, flash_t **out, char *name,
                       size_t cap)
{
	*out = NULL;
	if (a->name) {
		snprintf(name, cap, "%s", a->name);
		flash_t *h;
		int rc = flash_open(a->name, 0, &h);
		if (rc != FLASH_OK)
			return rc;
		struct flash_ident id;
		if (incarnation && (flash_ident_get(h, &id) != FLASH_OK || id.incarnation != incarnation)) {
			flash_close(h);
			return FLASH_EWAL_IDENT;
		}
		*out = h;
		return FLASH_OK;
	}
	if (!incarnation)
		return FLASH_ENOSEG;
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
			continue;
		snprintf(name, cap, "/%s", e->d_name);
		flash_t *h;
		struct flash_ident id;
		if (flash_open(name, FLASH_RDONLY, &h) != FLASH_OK)
			continue;
		found = flash_ident_get(h, &id) == FLASH_OK && id.incarnation == incarnation;
		flash_close(h);
	}
	if (d)
		closedir(d);
	if (!found)
		return FLASH_ENOSEG;
	return flash_open(name, 0, out);
}

/*
 * Take every available unit of (act, sku) out of the box's segment: restock
 * -available until it reads 0 (a buyer still attached may sell between the
 * read and the restock: that restock is refused, the next reads again).  A
 * full ring (no serve drains it) is waited out for at most 5 s; in sync
 * durability a restock not yet durable (FLASH_EFATE_UNKNOWN) is done in
 * memory and reaches the WAL when the box's serve next runs.
 * @param[out] taken  units taken out; *sold: total - available after
 * @return FLASH_OK; FLASH_ENOT_FOUND (the sku is not in the segment);
 *         FLASH_EBUSY; another flash_restock() code.
 */
static int segment_drain(flash_t *h, uint32_t act, uint32_t sku, int64_t *taken, int64_t *sold)
{
	*taken = 0;
	for (int i = 0; i < 5000; i++) {
		struct flash_sku_info si;
		int rc = flash_sku_get(h, act, sku, &si);
		if (rc != FLASH_OK)
			return rc;
		if (si.available == 0) {
			*sold = (int64_t)si.total;
			return FLASH_OK;
		}
		rc = flash_restock(h, act, sku, -(int64_t)si.available);
		if (rc == FLASH_OK || rc == FLASH_EFATE_UNKNOWN) {
			*taken += (int64_t)si.available;
		} else if (rc == FLASH_EBUSY) {
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
		} else if (rc != FLASH_ESOLD_OUT) {
			return rc;
		}
	}
	return FLASH_EBUSY;
}

/* Take every fenced sku out of the box's segment @p seg, so that nothing
 * returned stays sellable there; its figure of sold replaces the WAL's.
 * @return 0, or -1 (said on stderr). */
static int reclaim_drain(const struct lease_row *l, size_t nl, struct sold_tab *t,
                         flash_t *seg, const char *segname)
{
	/* the box's segment is here: nothing returned may stay sellable in
	 * it, and its figures count every order, the ones not yet in the WAL
	 * too.  Taken out under the WAL lock: no serve of the box runs. */
	for (size_t i = 0; seg && i < nl; i++) {
		struct sold_sku *s = sold_find(t, l[i].activity_id, l[i].sku_id);
		if (!s) {
			fprintf(stderr, "flashstock lease reclaim: out of memory; nothing changed\n");
			return -1;
		}
		if (s->last_lsn == UINT64_MAX)
			continue;       /* this sku is drained already */
		int64_t taken = 0, sold = 0;
		int drc = segment_drain(seg, l[i].activity_id, l[i].sku_id, &taken, &sold);
		if (drc == FLASH_ENOT_FOUND)
			continue;       /* not in the segment: the WAL's figure */
		if (drc != FLASH_OK) {
			fprintf(stderr, "flashstock lease reclaim: taking sku %u/%u out of segment %s: %s%s;"
			        " nothing returned\n", l[i].activity_id, l[i].sku_id, segname, flash_strerror(drc),
			        drc == FLASH_EBUSY ? " (its ring is full: start the box's serve, whose agent"
			        " reclaims at start)" : "");
			return -1;
		}
		printf("segment %s: %" PRId64 " units of sku %u/%u taken out (nothing can be sold from it);"
		       " sold by its figures %" PRId64 ", in the WAL %" PRId64 " (the rest reaches the WAL"
		       " when the box's serve next runs)\n", segname, taken, l[i].activity_id, l[i].sku_id,
		       sold, s->sold);
		s->sold = sold;
		s->last_lsn = UINT64_MAX;
	}
	return 0;
}

/* The sold units from the box's WAL (--wal), and from its segment when it
 * is on this machine (*seg: opened, for the caller to close); the box's
 * database caught up when --box-mysql names it.  @return 0 to return the
 * units, or -1: nothing changed (said on stderr). */
static int reclaim_from_wal(const struct lease_args *a, const struct lease_row *l, size_t nl,
                            struct sold_tab *t, flash_t **seg, char *segname,
                            size_t segname_len)
{
	int lk = wal_dir_lock(a->wal);
	if (lk < 0) {
		fprintf(stderr, "flashstock lease reclaim: %s: %s; nothing changed (a serve still holding"
		        " the WAL reclaims its fenced leases itself at its next start)\n", a->wal,
		        lk == FLASH_EWAL_BUSY ? "a serve holds this WAL" : flash_strerror(lk));
		return -1;
	}
	struct wal_replay_report rep;
	struct wal_ident wi = { 0 };
	int wrc = wal_replay(a->wal, 0, sold_frame, t, 0, &rep);
	if (t->oom || (wrc != FLASH_OK && !rep.torn)) {
		wal_dir_unlock(lk);
		fprintf(stderr, "flashstock lease reclaim: the WAL %s cannot be read to its end (%s at %s"
		        " offset %" PRIu64 "); nothing changed\n", a->wal, flash_strerror(wrc), rep.file,
		        rep.offset);
		return -1;
	}
	(void)wal_ident(a->wal, &wi);
	int src = box_segment(a, wi.wi_incarnation, seg, segname, segname_len);
	if (src != FLASH_OK && (a->name || src != FLASH_ENOSEG)) {
		wal_dir_unlock(lk);
		fprintf(stderr, "flashstock lease reclaim: --name %s: %s; nothing changed\n", segname,
		        src == FLASH_EWAL_IDENT ? "that segment is not the one this WAL belongs to"
		                                : flash_strerror(src));
		return -1;
	}
	if (*seg && reclaim_drain(l, nl, t, *seg, segname) != 0) {
		wal_dir_unlock(lk);
		return -1;
	}
	wal_dir_unlock(lk);
	if (!*seg)
		printf("box %u's segment is not on this machine (gone, e.g. after a reboot): sold is the"
		       " WAL's figure; a segment rebuilt from this WAL is drained by its agent (serve"
		       " --lease) at start, before it registers\n", a->box);
	if (rep.first_lsn > 1 && !*seg) {
		fprintf(stderr, "flashstock lease reclaim: the WAL %s starts at LSN %" PRIu64 " (older files"
		        " went behind a snapshot): the units sold before it are not in it; nothing changed."
		        "  Restart the box's serve (it reclaims from its segment), or use"
		        " --from-mysql-only\n", a->wal, rep.first_lsn);
		return -1;
	}
	if (a->box_mysql) {
		struct mdb_opts mo = { .url = a->box_mysql, .require_db = 1 };
		mdb_t *m = NULL;
		int mrc = mdb_open(&mo, &m);
		if (mrc == FLASH_OK)
			mrc = mdb_catch_up(m, a->wal, 0, 30000, NULL);
		mdb_close(m);
		if (mrc != FLASH_OK) {
			fprintf(stderr, "flashstock lease reclaim: applying the WAL to %s: %s; nothing changed\n",
			        "--box-mysql", flash_strerror(mrc));
			return -1;
		}
		printf("the box's database has applied its WAL to LSN %" PRIu64 "\n", rep.last_lsn);
	}
	return 0;
}

/* The sold units from the box's database alone (--from-mysql-only): known
 * up to its applied LSN, unknown after it, which --accept-unknown accepts.
 * @return -1 to return the units, or the command's result: nothing changed. */
static int reclaim_from_mysql(const char *cmd, const struct lease_args *a,
                              const struct lease_row *l, size_t nl, struct sold_tab *t)
{
	char burl[1200];
	uint64_t applied = 0;
	if (box_url(a, burl, sizeof burl) != 0) {
		return tool_usage_err(cmd, "cannot derive the box's database from --mysql; give --box-mysql");
	}
	MYSQL *bm = NULL;
	char why[300];
	if (mdb_connect_url(burl, 5, 0, &bm, why, sizeof why) != FLASH_OK) {
		fprintf(stderr, "flashstock lease reclaim: the box's database: %s; nothing changed\n", why);
		return TOOL_FAIL;
	}
	char sql[300];
	int qok = mysql_query(bm, "SELECT COALESCE(MAX(lsn), 0) FROM applied_lsn") == 0;
	MYSQL_RES *r = qok ? mysql_store_result(bm) : NULL;
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	applied = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
	if (r)
		mysql_free_result(r);
	for (size_t i = 0; qok && i < nl; i++) {
		struct sold_sku *s = sold_find(t, l[i].activity_id, l[i].sku_id);
		if (!s || s->last_lsn)
			continue;
		/* reserved units too: sold, as far as returning is concerned */
		snprintf(sql, sizeof sql, "SELECT COALESCE(SUM(qty), 0) FROM orders WHERE activity_id = %u"
		         " AND sku_id = %u AND status IN ('ACTIVE', 'RESERVED')", l[i].activity_id, l[i].sku_id);
		qok = mysql_query(bm, sql) == 0 && (r = mysql_store_result(bm)) != NULL;
		if (qok) {
			row = mysql_fetch_row(r);
			s->sold = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
			s->last_lsn = applied ? applied : 1;
			mysql_free_result(r);
		}
	}
	if (!qok) {
		fprintf(stderr, "flashstock lease reclaim: the box's database: %s; nothing changed\n",
		        mysql_error(bm));
		mysql_close(bm);
		return TOOL_FAIL;
	}
	mysql_close(bm);
	printf("only MariaDB is left: box %u's database has applied its WAL up to LSN %" PRIu64 ".\n"
	       "Orders the box acknowledged after that LSN are UNKNOWN: they may have sold units of the\n"
	       "leases below, which returning would sell a second time.  Backlog by lease:\n",
	       a->box, applied);
	for (size_t i = 0; i < nl; i++)
		printf("  lease %" PRIu64 "  sku %u/%u  epoch %u  units %" PRId64 "  returned %" PRId64
		       "  after LSN %" PRIu64 ": unknown\n", l[i].lease_id, l[i].activity_id, l[i].sku_id,
		       l[i].epoch, l[i].units, l[i].returned, applied);
	for (size_t i = 0; i < t->n; i++)
		printf("  sku %u/%u: sold up to LSN %" PRIu64 ": %" PRId64 "\n", t->v[i].act, t->v[i].sku,
		       applied, t->v[i].sold);
	if (!a->accept_unknown) {
		printf("nothing returned: run again with --accept-unknown to return leased - sold as known"
		       " at LSN %" PRIu64 "\n", applied);
		return TOOL_FAIL;
	}
	return -1;
}

/* Give back, per fenced sku, its leased units less what the box sold. */
static int reclaim_return(central_t *c, const struct lease_args *a, const struct lease_row *l,
                          size_t nl, struct sold_tab *t)
{
	int64_t back_all = 0;
	int ret = TOOL_OK;
	for (size_t i = 0; i < nl; i++) {
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			seen |= l[j].activity_id == l[i].activity_id && l[j].sku_id == l[i].sku_id;
		if (seen)
			continue;
		struct sold_sku *s = sold_find(t, l[i].activity_id, l[i].sku_id);
		int64_t sold = s ? s->sold : 0, back = 0;
		int rc = central_reclaim(c, a->box, l[i].activity_id, l[i].sku_id, sold < 0 ? 0 : sold, &back);
		if (rc != FLASH_OK) {
			fprintf(stderr, "flashstock lease reclaim: sku %u/%u (sold %" PRId64 "): %s %s\n",
			        l[i].activity_id, l[i].sku_id, sold, flash_strerror(rc), central_error(c));
			ret = TOOL_FAIL;
			continue;
		}
		back_all += back;
		printf("sku %u/%u: %" PRId64 " sold by box %u, %" PRId64 " units back to the pool\n",
		       l[i].activity_id, l[i].sku_id, sold, a->box, back);
	}
	printf("reclaimed: %" PRId64 " units back to the pool%s\n", back_all,
	       a->accept_unknown ? " (--accept-unknown: orders after the applied LSN were not counted)" : "");
	return ret;
}

static int lease_reclaim(const char *cmd, const struct lease_args *a)
{
	if (!a->box)
		return tool_usage_err(cmd, "reclaim needs --box N");
	if (!a->wal == !a->from_mysql_only)
		return tool_usage_err(cmd, "reclaim needs exactly one of --wal DIR and --from-mysql-only");
	if (a->accept_unknown && !a->from_mysql_only)
		return tool_usage_err(cmd, "--accept-unknown goes with --from-mysql-only");
	if (a->name && !a->wal)
		return tool_usage_err(cmd, "--name SEG goes with --wal DIR");
	central_t *c = NULL;
	int rc = lease_open(cmd, a, 0, &c);
	if (rc != TOOL_OK)
		return rc;
	struct lease_row *l = NULL;
	size_t nl = 0;
	if ((rc = central_leases(c, a->box, "fenced", &l, &nl)) != FLASH_OK) {
		central_close(c);
		return tool_fail("lease reclaim", rc);
	}
	if (nl == 0) {
		printf("box %u has no fenced lease: nothing to reclaim\n", a->box);
		free(l);
		central_close(c);
		return TOOL_OK;
	}
	struct sold_tab t = { 0 };
	int ret = TOOL_FAIL;
	flash_t *seg = NULL;
	char segname[512] = "";
	if (a->wal) {
		if (reclaim_from_wal(a, l, nl, &t, &seg, segname, sizeof segname) != 0)
			goto out;
	} else if ((ret = reclaim_from_mysql(cmd, a, l, nl, &t)) >= 0) {
		goto out;
	}
	ret = reclaim_return(c, a, l, nl, &t);
out:
	if (seg)
		flash_close(seg);
	free(t.v);
	free(l);
	central_close(c);
	return ret;
}

int cmd_lease(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",       no_argument,       NULL, 'h' },
		{ "mysql",      required_argument, NULL, 'M' },
		{ "activity",   required_argument, NULL, 'a' },
		{ "sku",        required_argument, NULL, 's' },
		{ "total",      required_argument, NULL, 't' },
		{ "box",        required_argument, NULL, 'b' },
		{ "stale-s",    required_argument, NULL, 'S' },
		{ "force",      no_argument,       NULL, 'f' },
		{ "wal",        required_argument, NULL, 'w' },
		{ "box-mysql",  required_argument, NULL, 'B' },
		{ "from-mysql-only", no_argument,  NULL, 'O' },
		{ "accept-unknown",  no_argument,  NULL, 'U' },
		{ "name",       required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = argv[0];
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		lease_help(argc < 2 ? stderr : stdout);
		return argc < 2 ? TOOL_USAGE : TOOL_OK;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "init") && strcmp(sub, "pool") && strcmp(sub, "status") && strcmp(sub, "fence") &&
	    strcmp(sub, "reclaim"))
		return tool_usage_err(cmd, "unknown subcommand '%s' (init, pool, status, fence, reclaim)", sub);
	struct lease_args a = { .stale_s = 30 };
	/* which options each subcommand takes: any other is a usage error */
	static const struct { const char *sub, *opts; } allowed[] = {
		{ "init", "M" }, { "pool", "Mast" }, { "status", "M" }, { "fence", "MbSf" },
		{ "reclaim", "MbwBOUn" },
	};
	const char *ok_opts = "";
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		if (!strcmp(allowed[i].sub, sub))
			ok_opts = allowed[i].opts;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, ":h", longopts, NULL)) != -1) {
		if (c != 'h' && c != '?' && c != ':' && !strchr(ok_opts, c)) {
			const char *name = "?";
			for (size_t i = 0; longopts[i].name; i++)
				if (longopts[i].val == c)
					name = longopts[i].name;
			return tool_usage_err(cmd, "%s does not take --%s", sub, name);
		}
		switch (c) {
		case 'h':
			lease_help(stdout);
			return TOOL_OK;
		case 'M':
			a.urls = optarg;
			break;
		case 'a':
			if (tool_opt_u32(cmd, "--activity", optarg, 1, UINT32_MAX, &a.activity) != 0)
				return TOOL_USAGE;
			break;
		case 's':
			if (tool_opt_u32(cmd, "--sku", optarg, 1, UINT32_MAX, &a.sku) != 0)
				return TOOL_USAGE;
			break;
		case 't':
			if (tool_opt_u64(cmd, "--total", optarg, 0, FLASH_UNITS_MAX, &a.total) != 0)
				return TOOL_USAGE;
			a.have_total = 1;
			break;
		case 'b':
			if (tool_opt_u32(cmd, "--box", optarg, 1, FLASH_BOX_ID_MAX, &a.box) != 0)
				return TOOL_USAGE;
			break;
		case 'S':
			if (tool_opt_u32(cmd, "--stale-s", optarg, 0, 86400, &a.stale_s) != 0)
				return TOOL_USAGE;
			break;
		case 'f':
			a.force = 1;
			break;
		case 'w':
			a.wal = optarg;
			break;
		case 'B':
			a.box_mysql = optarg;
			break;
		case 'O':
			a.from_mysql_only = 1;
			break;
		case 'U':
			a.accept_unknown = 1;
			break;
		case 'n':
			a.name = optarg;
			break;
		default:
			return tool_bad_option(cmd, c, argv + 1);
		}
	}
	if (optind < argc - 1)
		return tool_usage_err(cmd, "unexpected argument '%s'", argv[optind + 1]);
	if (a.urls && tool_opt_url_list(cmd, "--mysql", a.urls) != 0)
		return TOOL_USAGE;
	if (a.box_mysql && tool_opt_mysql_url(cmd, a.box_mysql) != 0)
		return TOOL_USAGE;
	if (!strcmp(sub, "init"))
		return lease_init(cmd, &a);
	if (!strcmp(sub, "pool"))
		return lease_pool(cmd, &a);
	if (!strcmp(sub, "status"))
		return lease_status(cmd, &a);
	if (!strcmp(sub, "fence"))
		return lease_fence(cmd, &a);
	return lease_reclaim(cmd, &a);
}
