/*
 * serve.c -- the daemon loop: rings -> WAL -> durable mark (see serve.h).
 *
 * Divisions: logging, start-up checks (one daemon per segment, the WAL
 * must be the segment's), start-up (read the WAL's last record per slot,
 * open the WAL), one round (drain, append, commit, mark), the first round
 * (which also skips records already in the WAL), and serve_run().
 */
#include "serve.h"
#include "lease.h"
#include "feed.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crash.h"
#include "flashstock.h"
#include "flashstock_consumer.h"
#include "mysql_pump.h"
#include "notify.h"
#include "pio.h"
#include "rebuild.h"
#include "snapshot.h"
#include "serve_reconcile.h"
#include "archiver.h"
#include "backstop.h"
#include "expirer.h"
#include "wal.h"
#include "worker.h"
#ifdef FLASH_HAVE_MHD
#include "metrics.h"
#include "mysql_probe.h"
#endif

/*
 * Drained records waiting for their fdatasync: per touched slot the highest
 * seq, the records for the MySQL applier, the oldest record's time, and the
 * LSN the WAL must have made durable before any of it is marked.
 */
struct serve_marks {
	uint64_t                *mk_adv;      /* per slot: highest seq drained */
	uint32_t                *mk_touched;  /* slots with mk_adv set */
	uint32_t                 mk_ntouched;
	int64_t                  mk_oldest_ns;/* smallest record ts_ns (0: none) */
	struct lsn_record *mk_push;     /* records for the pump */
	size_t                   mk_npush, mk_cappush;
	uint64_t                 mk_lsn;      /* highest LSN they need durable */
};

struct serve_syncer;

struct serve {
	const struct serve_opts *sv_o;
	struct serve_stats      *sv_st;
	flash_t                 *sv_h;        /* the consumer's handle */
	wal_t                   *sv_w;
	uint32_t                 sv_cap;      /* slots in the process table */
	struct wal_rec          *sv_last;     /* per slot: last record in the WAL */
	uint8_t                 *sv_have;     /* per slot: sv_last is set */
	uint64_t                *sv_skip;     /* per slot: skip seqs <= this (first round) */
	struct serve_marks       sv_next;     /* what the rounds since the last sync drained */
	struct serve_marks       sv_sync;     /* what the sync at work will make durable */
	struct serve_syncer     *sv_syncer;   /* the fdatasync thread, or NULL (first round) */
	uint64_t                 sv_marked_lsn; /* the durable LSN when marks were last set */
	int                      sv_err;      /* wal_* code of a failed append */
	struct wal_rec          *sv_buf;      /* first round: drained records */
	size_t                   sv_nbuf, sv_capbuf;
	mdb_pump_t      *sv_pump;     /* MySQL applier, or NULL */
	uint64_t                 sv_snap_lsn; /* recover: the segment was restored at this LSN */
	snap_thread_t           *sv_snap;     /* snapshot thread, or NULL */
	serve_recon_t           *sv_recon;    /* periodic reconciler, or NULL */
	archiver_t              *sv_arch;     /* archiver thread, or NULL */
	expirer_t               *sv_expirer;  /* reservation expirer, or NULL */
	struct serve_reclaimer  *sv_reclaim;  /* reclaimer thread, or NULL */
	backstop_t              *sv_backstop; /* cross-box limit, or NULL */
	lease_t           *sv_lease;    /* lease agent, or NULL */
	int                      sv_lease_reported; /* its fence or failure was logged */
	uint32_t                 sv_durability; /* the segment's enum flash_durability */
	struct flash_durability_info sv_dur;  /* the WAL failure the segment carried at
	                                         start (failed 0: none), until cleared */
	struct notify            sv_notify;   /* the service manager (notify.h) */
	uint64_t                 sv_sync_asked_ms; /* when the sync of sv_sync was asked for */
	size_t                   sv_started;  /* services started (serve_services[]) */
#ifdef FLASH_HAVE_MHD
	metrics_t               *sv_metrics;  /* the metrics endpoint, or NULL */
	mdb_probe_t             *sv_probe;    /* its MySQL liveness ping, or NULL */
#endif
};

/* ------------------------------------------------------------------------
 * Logging
 * ------------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4)))
static void serve_log(const struct serve *s, int level, const char *fmt, ...)
{
	if (level > s->sv_o->log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	plog_vline(level, "", fmt, ap);
	va_end(ap);
}

/* The first failure's code into the stats: the one serve_run() failed
 * for (later ones follow from it, and are logged). */
static void serve_fail_rc(struct serve_stats *st, int rc)
{
	if (st->rc == 0)
		st->rc = rc;
}

static void serve_snap_log(void *arg, int level, const char *msg)
{
	serve_log(arg, level, "%s", msg);
}

/* The snapshot thread removes WAL files through the feed's retention:
 * consumers' positions are read and the files removed under the feed's
 * registry lock (feed.h). */
static int serve_wal_remove(void *arg, uint64_t cover, uint64_t floor, uint64_t *cover_out,
                            uint32_t *removed)
{
	struct serve *s = arg;
	struct feed_retain_opts fo = { .keep_bytes = s->sv_o->feed.keep_bytes,
	                               .keep_age_s = s->sv_o->feed.keep_age_s };
	return feed_retain_remove(s->sv_o->wal_dir, cover, floor, &fo, serve_snap_log, s, cover_out,
	                          removed);
}

/* The snapshot thread asks how far MySQL is (nothing is removed past it). */
static int serve_applied_lsn(void *arg, uint64_t *lsn)
{
	struct mdb_pump_stats ps;
	if (mdb_pump_stats_get(arg, &ps) != FLASH_OK || ps.applied_lsn == 0)
		return -1;
	*lsn = ps.applied_lsn;
	return 0;
}

/* The archiver asks how far the backstop is (it archives nothing past it). */
static int serve_backstop_lsn(void *arg, uint64_t *lsn)
{
	struct backstop_stats bs;
	backstop_stats_get(arg, &bs);
	*lsn = bs.pos_lsn;
	return 0;
}

static void serve_snap_stats(struct serve *s)
{
	struct snap_stats ss;
	if (s->sv_snap == NULL)
		return;
	snap_thread_stats(s->sv_snap, &ss);
	s->sv_st->snap_lsn = ss.snap_lsn;
	s->sv_st->snapshots = ss.snapshots;
	s->sv_st->snap_failures = ss.failures;
	s->sv_st->wal_removed = ss.wal_removed;
}

static uint64_t serve_now_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t serve_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void serve_opts_default(struct serve_opts *o)
{
	memset(o, 0, sizeof *o);
	o->drain_max = 65536;
	o->recover_ms = 1000;
	o->idle_us_max = 250;
	o->log_level = PLOG_INFO;
	o->reconcile.every_ms = 300000;
	o->feed.keep_bytes = FEED_KEEP_BYTES_DEFAULT;
	o->feed.keep_age_s = FEED_KEEP_AGE_S_DEFAULT;
}

/* ------------------------------------------------------------------------
 * Start-up checks
 *
 * Before anything is read or written: this daemon must be the segment's only
 * one (the consumer claim, held until flash_close), and the WAL must be the
 * segment's (its incarnation in every file header).  A refusal changes
 * nothing, says what to run instead, and sets st->refused (exit 2).
 * ------------------------------------------------------------------------ */

/* Refuse to start with @p rc, the code that says why (the log line says
 * what to do instead). */
static int serve_refuse(struct serve *s, int rc)
{
	serve_fail_rc(s->sv_st, rc);
	s->sv_st->refused = 1;
	return -1;
}

/* The WAL file durability of a segment's enum flash_durability. */
static uint32_t serve_wal_dur(uint32_t durability)
{
	return durability == FLASH_DURABILITY_SYNC ? WAL_DUR_SYNC : WAL_DUR_ASYNC;
}

static int serve_claim(struct serve *s)
{
	int32_t pid = 0;
	int rc = flash_consumer_claim(s->sv_h, &pid);
	if (rc == FLASH_OK)
		return 0;
	serve_fail_rc(s->sv_st, rc);
	if (rc != FLASH_EBUSY) {
		serve_log(s, PLOG_ERROR, "segment %s: consumer claim: %s", s->sv_o->segment,
		          flash_strerror(rc));
		return -1;
	}
	serve_log(s, PLOG_ERROR, "segment %s is served by the daemon pid %d: one daemon per "
	          "segment; stop that one first (kill -TERM %d); nothing was changed",
	          s->sv_o->segment, (int)pid, (int)pid);
	return serve_refuse(s, rc);
}

/*
 * What to run to rebuild the segment from the WAL after a reboot: the
 * segment as it is, if empty; else remove it first, and re-create it with
 * its own options when no snapshot in the WAL directory can restore it.
 */
static void serve_rebuild_cmd(struct serve *s, const struct flash_stats *fst, char *buf, size_t n)
{
	const struct serve_opts *o = s->sv_o;
	int empty = fst->activities == 0 && fst->skus == 0 && fst->orders_used == 0;
	uint64_t *snaps = NULL;
	size_t nsnap = 0;
	if (snap_list(o->wal_dir, &snaps, &nsnap) != FLASH_OK)
		nsnap = 0;
	free(snaps);
	size_t k = 0;
	if (!empty) {
		/* --force: what the segment holds is not this WAL's history and is
		 * given up on purpose (destroy prints it); a plain destroy refuses
		 * the records a load left in its rings */
		k += (size_t)snprintf(buf + k, n - k, "flashstock destroy --name %s --force && ", o->segment);
		struct flash_seg_opts so;
		if (nsnap == 0 && k < n && flash_seg_opts_get(s->sv_h, &so) == FLASH_OK) {
			k += (size_t)snprintf(buf + k, n - k, "flashstock create --name %s --activities %u "
			                      "--skus %u --shards %u --users %u --orders %u --tokens %u "
			                      "--requests %u --locks %u --procs %u --ring %u --mode %04o",
			                      o->segment, so.max_activities, so.max_skus, so.max_shards,
			                      so.max_users, so.max_orders, so.max_tokens, so.max_requests,
			                      so.max_locks, so.max_procs, so.ring_records, so.mode);
			if (so.gid >= 0 && k < n)
				k += (size_t)snprintf(buf + k, n - k, " --group %lld", (long long)so.gid);
			if (k < n)
				k += (size_t)snprintf(buf + k, n - k, " --durability %s && ",
				                      so.durability == FLASH_DURABILITY_SYNC ? "sync" : "async");
		}
	}
	if (k < n)
		snprintf(buf + k, n - k, "flashstock serve --recover --name %s --wal %s", o->segment,
		         o->wal_dir);
}

/* Log the refusal of a WAL of another incarnation (or of none). */
static int serve_refuse_foreign(struct serve *s, const struct flash_ident *id,
                                const struct wal_ident *wi, const struct flash_stats *fst)
{
	const struct serve_opts *o = s->sv_o;
	char whose[160];
	if (wi->wi_incarnation != 0)
		snprintf(whose, sizeof whose, "belongs to segment incarnation %016" PRIx64 ", not to",
		         wi->wi_incarnation);
	else
		snprintf(whose, sizeof whose, "records no segment incarnation (written by an older "
		         "flashstock), so it is not known to belong to");
	if (id->wal_lsn != 0) {
		serve_log(s, PLOG_ERROR, "WAL %s %s %s (incarnation %016" PRIx64 "), which "
		          "its own WAL has served up to LSN %" PRIu64 ": give serve the directory of that "
		          "WAL; nothing was changed", o->wal_dir, whose, o->segment, id->incarnation,
		          id->wal_lsn);
		return serve_refuse(s, FLASH_EWAL_IDENT);
	}
	char cmd[1024];
	serve_rebuild_cmd(s, fst, cmd, sizeof cmd);
	serve_log(s, PLOG_ERROR, "WAL %s %s %s (incarnation %016" PRIx64 "), which no "
	          "WAL has served yet: serving it would write a second history into the WAL; nothing "
	          "was changed; to rebuild the segment from this WAL after a reboot run: %s",
	          o->wal_dir, whose, o->segment, id->incarnation, cmd);
	return serve_refuse(s, FLASH_EWAL_IDENT);
}

/*
 * The WAL must be the segment's: an empty WAL takes the segment's identity
 * (if the segment never had a WAL), a WAL of another incarnation is refused.
 * --recover never meets that refusal: the rebuild (rebuild.c) gives the
 * segment its WAL's identity under the temporary name, after the last record
 * is applied, so a rebuild that stops half way leaves nothing with the name.
 * A change of durability is logged.
 */
static int serve_check_ident(struct serve *s, const struct flash_stats *fst)
{
	const struct serve_opts *o = s->sv_o;
	struct flash_ident id;
	struct wal_ident wi;
	int rc = flash_ident_get(s->sv_h, &id);
	if (rc != FLASH_OK) {
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	/* one daemon per WAL directory (wal_open's lock): said first, before
	 * whose WAL it is, as it is what stops this daemon in any case */
	if (wal_lock_held(o->wal_dir) == 1) {
		serve_log(s, PLOG_ERROR, "WAL %s is locked by another daemon: one daemon per WAL "
		          "directory; nothing was changed", o->wal_dir);
		return serve_refuse(s, FLASH_EWAL_BUSY);
	}
	rc = wal_ident(o->wal_dir, &wi);
	if (rc == FLASH_EWAL_IDENT) {
		serve_log(s, PLOG_ERROR, "WAL %s holds files of two segment incarnations (the "
		          "newest is %016" PRIx64 "): files of another WAL copied in?  Nothing was "
		          "changed", o->wal_dir, wi.wi_incarnation);
		return serve_refuse(s, rc);
	}
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "WAL %s: %s (%s)", o->wal_dir, flash_strerror(rc),
		          pio_strerror(errno));
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	if (wi.wi_files == 0) {
		if (id.wal_lsn != 0) {
			serve_log(s, PLOG_ERROR, "WAL %s is empty, but segment %s reflects LSN %" PRIu64
			          " of its WAL (incarnation %016" PRIx64 "): give serve the directory that "
			          "holds that WAL (moved? its new path); nothing was changed", o->wal_dir,
			          o->segment, id.wal_lsn, id.incarnation);
			return serve_refuse(s, FLASH_EWAL_GAP);
		}
		return 0;   /* a new WAL: its first file takes the segment's identity */
	}
	if (wi.wi_incarnation != id.incarnation)
		return serve_refuse_foreign(s, &id, &wi, fst);
	uint32_t dur = serve_wal_dur(fst->durability);
	if (wi.wi_durability != WAL_DUR_NONE && wi.wi_durability != dur)
		serve_log(s, dur == WAL_DUR_ASYNC ? PLOG_WARN : PLOG_INFO,
		          "durability changed: WAL %s was written in %s durability, segment %s is %s: "
		          "from now on an order is acknowledged %s", o->wal_dir,
		          wi.wi_durability == WAL_DUR_SYNC ? "sync" : "async", o->segment,
		          dur == WAL_DUR_SYNC ? "sync" : "async",
		          dur == WAL_DUR_SYNC ? "once its record is on disk" :
		          "before its record is on disk (create the segment with --durability sync "
		          "to keep the WAL's)");
	return 0;
}

/* ------------------------------------------------------------------------
 * Start-up: the last WAL record of each slot
 * ------------------------------------------------------------------------ */

static int serve_note_last(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct serve *s = arg;
	s->sv_st->replayed++;
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec))
		return 0;
	struct wal_rec r;
	memcpy(&r, p, sizeof r);
	if (r.wr_rec.slot < s->sv_cap) {
		s->sv_last[r.wr_rec.slot] = r;
		s->sv_have[r.wr_rec.slot] = 1;
	}
	(void)lsn;
	return 0;
}

/* Read the whole WAL (cutting a torn tail), then open it for appending. */
static int serve_open_wal(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	struct wal_replay_report rep;
	/* restored from a snapshot: only the frames after it */
	uint64_t from = s->sv_snap_lsn ? s->sv_snap_lsn + 1 : 0;
	/* the durable mark vouches too: a bad frame below it is never cut */
	int rc = wal_replay(o->wal_dir, from, serve_note_last, s, WAL_REPLAY_TRUNCATE | WAL_REPLAY_MARK,
	                    &rep);
	if (rc == FLASH_EWAL_STOPPED) {
		serve_fail_rc(s->sv_st, rc);
		return -1;     /* a record could not be applied (logged) */
	}
	if (rc == FLASH_EWAL_BUSY) {
		serve_log(s, PLOG_ERROR, "WAL %s is locked by another daemon: one daemon per WAL "
		          "directory; nothing was changed", o->wal_dir);
		return serve_refuse(s, rc);
	}
	if (rc != FLASH_OK) {
		int torn = rc == FLASH_EWAL_ZERO_LEN || rc == FLASH_EWAL_SHORT || rc == FLASH_EWAL_PAST_END ||
		           rc == FLASH_EWAL_LONG || rc == FLASH_EWAL_CRC || rc == FLASH_EWAL_LSN || rc == FLASH_EWAL_PREV ||
		           rc == FLASH_EWAL_TYPE;
		if (!torn) {
			serve_log(s, PLOG_ERROR, "WAL %s unreadable: %s (stop: %s at %s offset %" PRIu64
			          "%s%s)", o->wal_dir, flash_strerror(rc), flash_rcname(rep.stop), rep.file,
			          rep.offset, rep.err_no ? ", " : "", rep.err_no ? pio_strerror(rep.err_no) : "");
			if (rc == FLASH_EWAL_NOTTAIL)
				serve_log(s, PLOG_ERROR, "WAL %s: first bad LSN %" PRIu64 ", %" PRIu64 " valid "
				          "records follow; nothing cut (flashstock wal verify --wal %s says what "
				          "to do)", o->wal_dir, rep.bad_lsn, rep.after_frames, o->wal_dir);
			if (rc == FLASH_EWAL_NOTTAIL && rep.proof_lsn == 0 && rep.mark_lsn >= rep.bad_lsn)
				serve_log(s, PLOG_ERROR, "WAL %s: its " WAL_MARK_FILE " says every LSN "
				          "through %" PRIu64 " was made durable: LSN %" PRIu64 "..%" PRIu64 " were "
				          "acknowledged and are damaged; not a torn tail", o->wal_dir, rep.mark_lsn,
				          rep.bad_lsn, rep.mark_lsn);
			serve_fail_rc(s->sv_st, rc);
			return -1;
		}
		serve_log(s, PLOG_WARN, "WAL torn tail cut: %s at %s offset %" PRIu64 ", %" PRIu64
		          " bytes dropped, %u later files removed", flash_rcname(rc), rep.file, rep.offset,
		          rep.truncated_bytes, rep.files_removed);
	}
	serve_log(s, PLOG_INFO, "WAL %s: %" PRIu64 " frames in %" PRIu64 " files, last LSN %" PRIu64,
	          o->wal_dir, s->sv_st->replayed, rep.files, rep.last_lsn);
	/* Shorter than what it published durable (wal.h, the durable mark):
	 * acknowledged records are gone, and serving on would give their
	 * LSNs to other records. */
	if (rep.mark_lsn > rep.last_lsn) {
		serve_log(s, PLOG_ERROR, "WAL %s ends at LSN %" PRIu64 " (%s offset %" PRIu64 "), but its "
		          WAL_MARK_FILE " says every LSN through %" PRIu64 " was made durable: LSN %" PRIu64
		          "..%" PRIu64 " are missing (the end of the WAL was zeroed or cut, or it is an older "
		          "copy); not a torn tail, nothing cut", o->wal_dir, rep.last_lsn, rep.file, rep.offset,
		          rep.mark_lsn, rep.last_lsn + 1, rep.mark_lsn);
		serve_log(s, PLOG_ERROR, "WAL %s: restore its files from a copy, or give up every "
		          "record after LSN %" PRIu64 ": serve --recover --accept-loss-after %" PRIu64 " (into "
		          "an empty or absent segment; flashstock wal verify --wal %s says the same)",
		          o->wal_dir, rep.last_lsn, rep.last_lsn, o->wal_dir);
		serve_fail_rc(s->sv_st, FLASH_ECORRUPT);
		return -1;
	}
	struct flash_ident id;
	if ((rc = flash_ident_get(s->sv_h, &id)) != FLASH_OK) {
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	/* Same incarnation, yet shorter than what the segment reflects: an
	 * older copy of the WAL.  Records acknowledged from the segment are
	 * not in it; serving it would give their LSNs to other records. */
	if (id.wal_lsn > rep.last_lsn) {
		serve_log(s, PLOG_ERROR, "WAL %s ends at LSN %" PRIu64 ", but segment %s reflects "
		          "LSN %" PRIu64 " of it: records the segment has are missing from this WAL (an "
		          "older copy of the directory?); give serve the WAL it was served with; nothing "
		          "was changed", o->wal_dir, rep.last_lsn, o->segment, id.wal_lsn);
		return serve_refuse(s, FLASH_EWAL_GAP);
	}
	struct wal_opts wo;
	wal_opts_default(&wo);
	wo.incarnation = id.incarnation;
	wo.durability = serve_wal_dur(s->sv_durability);
	/* a WAL emptied by hand continues after the snapshot, never reusing its LSNs */
	if (s->sv_snap_lsn)
		wo.start_lsn = s->sv_snap_lsn + 1;
	if (o->wal_segment_bytes)
		wo.segment_bytes = o->wal_segment_bytes;
	rc = wal_open(o->wal_dir, &wo, &s->sv_w);
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "WAL %s: open: %s (%s)", o->wal_dir, flash_strerror(rc),
		          rc == FLASH_ESYS ? pio_strerror(errno) : flash_rcname(rc));
		serve_fail_rc(s->sv_st, rc);
		return rc == FLASH_EWAL_IDENT || rc == FLASH_EWAL_BUSY ? serve_refuse(s, rc) : -1;
	}
	/* Every record in the WAL is this segment's (same incarnation), and
	 * recovery has applied them: the segment reflects the whole WAL. */
	if ((rc = flash_ident_lsn_set(s->sv_h, wal_next_lsn(s->sv_w) - 1)) != FLASH_OK) {
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * One round
 * ------------------------------------------------------------------------ */

static void serve_touch(struct serve_marks *m, uint32_t slot, uint64_t seq)
{
	if (m->mk_adv[slot] == 0)
		m->mk_touched[m->mk_ntouched++] = slot;
	if (seq > m->mk_adv[slot])
		m->mk_adv[slot] = seq;
}

/*
 * Records the applier is handed after their sync.  At most SERVE_PUSH_MAX
 * wait in sv_next (72 MiB): past that the drain waits for the sync at work
 * (serve_round) -- only a disk that takes a second per fdatasync under a
 * full-speed drain gets there.
 */
#define SERVE_PUSH_MAX (1u << 20)

static int serve_push(struct serve *s, uint64_t lsn, const struct flash_record *rec)
{
	struct serve_marks *m = &s->sv_next;
	if (m->mk_npush == m->mk_cappush) {
		size_t nc = m->mk_cappush ? m->mk_cappush * 2 : 4096;
		struct lsn_record *nb = realloc(m->mk_push, nc * sizeof *nb);
		if (nb == NULL)
			return -1;
		m->mk_push = nb;
		m->mk_cappush = nc;
	}
	m->mk_push[m->mk_npush].lsn = lsn;
	m->mk_push[m->mk_npush].rec = *rec;
	m->mk_npush++;
	return 0;
}

/* Append one drained record, or skip it if the WAL has it already. */
static int serve_take(struct serve *s, const struct flash_record *rec, uint64_t seq)
{
	uint32_t slot = rec->slot;
	if (slot >= s->sv_cap) {
		s->sv_err = FLASH_EINVAL;
		return 1;
	}
	serve_touch(&s->sv_next, slot, seq);
	if (rec->type == FLASH_REC_ORDER && rec->value > 0)
		expirer_note(s->sv_expirer, rec);       /* a reservation: its pay-by time */
	if (seq <= s->sv_skip[slot]) {
		s->sv_st->skipped++;
		return 0;
	}
	if (rec->ts_ns > 0 && (s->sv_next.mk_oldest_ns == 0 || rec->ts_ns < s->sv_next.mk_oldest_ns))
		s->sv_next.mk_oldest_ns = rec->ts_ns;
	PERSIST_CRASH("serve_round", 1);
	uint64_t lsn;
	int rc = wal_append_record(s->sv_w, rec, seq, &lsn);
	if (rc != FLASH_OK) {
		s->sv_err = rc;
		return 1;
	}
	PERSIST_CRASH("serve_round", 2);
	s->sv_st->records++;
	s->sv_next.mk_lsn = lsn;
	if (s->sv_pump != NULL && serve_push(s, lsn, rec) != 0) {
		s->sv_err = FLASH_ENOMEM;
		return 1;
	}
	return 0;
}

static int serve_drain_cb(void *arg, const struct flash_record *rec, uint64_t seq)
{
	return serve_take(arg, rec, seq);
}

/* First round: keep everything, to compare with the WAL's last records. */
static int serve_buffer_cb(void *arg, const struct flash_record *rec, uint64_t seq)
{
	struct serve *s = arg;
	if (s->sv_nbuf == s->sv_capbuf) {
		size_t nc = s->sv_capbuf ? s->sv_capbuf * 2 : 4096;
		struct wal_rec *nb = realloc(s->sv_buf, nc * sizeof *nb);
		if (nb == NULL) {
			s->sv_err = FLASH_ENOMEM;
			return 1;
		}
		s->sv_buf = nb;
		s->sv_capbuf = nc;
	}
	s->sv_buf[s->sv_nbuf].wr_rec = *rec;
	s->sv_buf[s->sv_nbuf].wr_seq = seq;
	s->sv_nbuf++;
	return 0;
}

/*
 * The WAL failed (a write, an fdatasync, a new file): say which step, mark
 * the segment failed -- nothing more is acknowledged.  @return -1.
 */
static int serve_wal_failed(struct serve *s, int rc)
{
	enum wal_op op;
	int e = 0;
	wal_failure(s->sv_w, &op, &e);
	serve_log(s, PLOG_ERROR, "WAL commit failed (%s: %s); marking the segment failed, "
	          "nothing more is acknowledged", op == WAL_OP_SYNC ? "fdatasync" :
	          op == WAL_OP_WRITE ? "write" : "new file", strerror(e));
	serve_fail_rc(s->sv_st, rc);
	/* the reason goes into the segment: `status` shows it after this
	 * daemon has exited, and the next daemon logs what it clears */
	uint32_t step = op == WAL_OP_SYNC ? FLASH_WAL_STEP_SYNC : op == WAL_OP_WRITE ?
	                FLASH_WAL_STEP_WRITE : op == WAL_OP_CREATE ? FLASH_WAL_STEP_FILE :
	                FLASH_WAL_STEP_UNKNOWN;
	int frc = flash_durability_fail_why(s->sv_h, step, e);
	if (frc != FLASH_OK)
		serve_fail_rc(s->sv_st, frc);
	return -1;
}

/* One slot's mark in the segment (@p mark: flash_durable_advance or
 * flash_ring_release); a refusal is logged. */
static int serve_mark_slot(struct serve *s, int (*mark)(flash_t *, uint32_t, uint64_t),
                           const char *what, uint32_t slot, uint64_t seq)
{
	int frc = mark(s->sv_h, slot, seq);
	if (frc == FLASH_OK)
		return 0;
	serve_log(s, PLOG_ERROR, "%s slot %u seq %" PRIu64 ": %s", what, slot, seq, flash_strerror(frc));
	serve_fail_rc(s->sv_st, frc);
	return -1;
}

/*
 * Mark what @p m gathered, its fdatasync having returned: each touched slot
 * durable up to its highest drained seq (skipped records included: they are
 * in the WAL) -- strictly after the sync that covered them -- then hand the
 * records to the MySQL applier.  @p m is empty afterwards.
 */
static int serve_marks_apply(struct serve *s, struct serve_marks *m)
{
	PERSIST_CRASH("serve_round", 3);
	uint64_t durable = wal_durable_lsn(s->sv_w);
	if (durable != s->sv_marked_lsn) {
		s->sv_st->commits++;
		/* one store: the segment reflects the WAL up to here */
		(void)flash_ident_lsn_set(s->sv_h, durable);
		s->sv_marked_lsn = durable;
	}
	if (m->mk_oldest_ns > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		uint64_t lag = now > m->mk_oldest_ns ? (uint64_t)(now - m->mk_oldest_ns) : 0;
		uint64_t us = lag / 1000;
		int b = 0;
		while (us > 1 && b < WAL_HIST_BUCKETS - 1) {
			us >>= 1;
			b++;
		}
		s->sv_st->lag_hist[b]++;
		s->sv_st->lag_ns_sum += lag;
		if (lag > s->sv_st->lag_ns_max)
			s->sv_st->lag_ns_max = lag;
		m->mk_oldest_ns = 0;
	}
	for (uint32_t i = 0; i < m->mk_ntouched; i++) {
		uint32_t slot = m->mk_touched[i];
		if (serve_mark_slot(s, flash_durable_advance, "durable mark", slot, m->mk_adv[slot]) != 0)
			return -1;
		PERSIST_CRASH("serve_round", 4);
		m->mk_adv[slot] = 0;
	}
	m->mk_ntouched = 0;
	m->mk_lsn = 0;
	/* Durable now: MySQL may have them.  A full queue drops them; the pump
	 * reads them back from the WAL. */
	if (m->mk_npush > 0) {
		int prc = mdb_pump_push(s->sv_pump, m->mk_push, m->mk_npush);
		s->sv_st->mysql_pushed += m->mk_npush;
		if (prc == FLASH_EFULL)
			s->sv_st->mysql_dropped += m->mk_npush;
		else if (prc != FLASH_OK)
			serve_log(s, PLOG_WARN, "MySQL applier queue: %s", flash_strerror(prc));
		m->mk_npush = 0;
	}
	PERSIST_CRASH("serve_round", 5);
	return 0;
}

/*
 * The fdatasync thread.  Each drain round writes what it appended
 * (wal_write: the page cache, no disk wait) and frees those records' ring
 * room at once (flash_ring_release): a buyer's ring empties at the pace of
 * the writes, whatever the disk does -- an async buyer never waits for an
 * fdatasync (it did: the room came back only after the round's sync, and a
 * slow sync refused buyers with FLASH_EBUSY).  The round's marks gather in
 * sv_next; the drain thread asks this thread to sync up to their LSN and
 * moves them to sv_sync, and marks them durable -- waking sync buyers --
 * once the sync has returned (serve_sync_step), while the next rounds
 * gather the next batch.  A daemon killed between the release and the mark
 * loses nothing: the records are in the WAL's file, the next daemon's
 * wal_open syncs them and its first round marks them (flash_ring_taken).
 */
struct serve_syncer {
	wal_t          *sy_w;
	pthread_t       sy_thr;
	pthread_mutex_t sy_mu;
	pthread_cond_t  sy_ask;      /* to the syncer: a new target, or stop */
	pthread_cond_t  sy_done;     /* to the drain thread: a sync returned */
	uint64_t        sy_target;   /* under sy_mu: sync up to this LSN */
	uint64_t        sy_synced;   /* under sy_mu: the last target done */
	int             sy_rc;       /* under sy_mu: FLASH_OK, or the sticky failure */
	int             sy_stop;     /* under sy_mu */
};

static void *serve_syncer_main(void *arg)
{
	struct serve_syncer *y = arg;
	pthread_mutex_lock(&y->sy_mu);
	for (;;) {
		while (!y->sy_stop && y->sy_target <= y->sy_synced)
			pthread_cond_wait(&y->sy_ask, &y->sy_mu);
		if (y->sy_target <= y->sy_synced)
			break;   /* stopped, nothing asked */
		uint64_t t = y->sy_target;
		pthread_mutex_unlock(&y->sy_mu);
		int rc = wal_sync(y->sy_w, t);
		pthread_mutex_lock(&y->sy_mu);
		y->sy_synced = t;
		if (rc != FLASH_OK && y->sy_rc == FLASH_OK)
			y->sy_rc = rc;
		pthread_cond_broadcast(&y->sy_done);
	}
	pthread_mutex_unlock(&y->sy_mu);
	return NULL;
}

static int serve_syncer_start(struct serve *s)
{
	struct serve_syncer *y = calloc(1, sizeof *y);
	if (y == NULL)
		return ENOMEM;
	y->sy_w = s->sv_w;
	y->sy_synced = wal_durable_lsn(s->sv_w);
	y->sy_target = y->sy_synced;
	pthread_mutex_init(&y->sy_mu, NULL);
	pthread_cond_init(&y->sy_ask, NULL);
	pthread_cond_init(&y->sy_done, NULL);
	int rc = pthread_create(&y->sy_thr, NULL, serve_syncer_main, y);
	if (rc != 0) {
		pthread_cond_destroy(&y->sy_done);
		pthread_cond_destroy(&y->sy_ask);
		pthread_mutex_destroy(&y->sy_mu);
		free(y);
		return rc;
	}
	s->sv_syncer = y;
	return 0;
}

/* Stop the thread once the sync asked for last has returned. */
static void serve_syncer_stop(struct serve *s)
{
	struct serve_syncer *y = s->sv_syncer;
	if (y == NULL)
		return;
	pthread_mutex_lock(&y->sy_mu);
	y->sy_stop = 1;
	pthread_cond_signal(&y->sy_ask);
	pthread_mutex_unlock(&y->sy_mu);
	pthread_join(y->sy_thr, NULL);
	pthread_cond_destroy(&y->sy_done);
	pthread_cond_destroy(&y->sy_ask);
	pthread_mutex_destroy(&y->sy_mu);
	free(y);
	s->sv_syncer = NULL;
}

/*
 * The drain thread's side of the syncer: if the sync of sv_sync has
 * returned, mark it (serve_marks_apply); then, with no sync at work, ask
 * for one of what the rounds since gathered (sv_next becomes sv_sync).
 * @p wait_us > 0: wait up to that long for the sync at work (the drain has
 * nothing else to do).  @return 0, or -1 (the WAL or a mark failed).
 */
static int serve_sync_step(struct serve *s, uint32_t wait_us)
{
	struct serve_syncer *y = s->sv_syncer;
	if (s->sv_sync.mk_ntouched > 0) {
		pthread_mutex_lock(&y->sy_mu);
		if (wait_us > 0 && y->sy_synced < s->sv_sync.mk_lsn && y->sy_rc == FLASH_OK) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)wait_us * 1000;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			(void)pthread_cond_timedwait(&y->sy_done, &y->sy_mu, &ts);
		}
		uint64_t synced = y->sy_synced;
		int rc = y->sy_rc;
		pthread_mutex_unlock(&y->sy_mu);
		if (rc != FLASH_OK)
			return serve_wal_failed(s, rc);
		if (synced < s->sv_sync.mk_lsn)
			return 0;   /* still on its way to disk */
		if (serve_marks_apply(s, &s->sv_sync) != 0)
			return -1;
	}
	if (s->sv_next.mk_ntouched > 0) {
		struct serve_marks m = s->sv_sync;   /* empty: swap */
		s->sv_sync = s->sv_next;
		s->sv_next = m;
		s->sv_sync_asked_ms = serve_now_ms();
		pthread_mutex_lock(&y->sy_mu);
		if (s->sv_sync.mk_lsn > y->sy_target)
			y->sy_target = s->sv_sync.mk_lsn;
		pthread_cond_signal(&y->sy_ask);
		pthread_mutex_unlock(&y->sy_mu);
	}
	return 0;
}

/* Everything drained so far durable and marked (a stop, or --once). */
static int serve_sync_flush(struct serve *s)
{
	if (s->sv_syncer == NULL)
		return 0;
	while (s->sv_sync.mk_ntouched > 0 || s->sv_next.mk_ntouched > 0)
		if (serve_sync_step(s, 100000) != 0)
			return -1;
	return 0;
}

/*
 * After a drain.  Before the syncer runs (the first round): commit what the
 * round appended and mark it, in line.  Then: write it (wal_write), free
 * its ring room (flash_ring_release) and leave the sync and the marks to
 * the syncer (serve_sync_step).
 */
static int serve_commit_mark(struct serve *s)
{
	struct serve_marks *m = &s->sv_next;
	if (s->sv_err != 0) {
		serve_fail_rc(s->sv_st, s->sv_err);
		return -1;
	}
	if (s->sv_syncer == NULL) {
		if (m->mk_ntouched == 0)
			return 0;
		int rc = wal_commit(s->sv_w);
		if (rc != FLASH_OK)
			return serve_wal_failed(s, rc);
		return serve_marks_apply(s, m);
	}
	if (m->mk_ntouched > 0) {
		int rc = wal_write(s->sv_w, NULL);
		if (rc != FLASH_OK)
			return serve_wal_failed(s, rc);
		for (uint32_t i = 0; i < m->mk_ntouched; i++) {
			uint32_t slot = m->mk_touched[i];
			if (serve_mark_slot(s, flash_ring_release, "ring release", slot, m->mk_adv[slot]) != 0)
				return -1;
		}
		PERSIST_CRASH("serve_round", 6);
	}
	return serve_sync_step(s, 0);
}

/*
 * The reclaimer (engine/gen.c), both keyed tables: move the generation on
 * when due (the engine checks the time and the bank), then clear the bank two
 * back.  With a MySQL applier a clear waits until it has applied every record
 * the WAL held when the clear fell due: the orders of that generation (their
 * request ids and limits) are in MySQL before the segment forgets them.  A
 * clear that meets an operation not ending within the grace bound
 * (FLASH_EBUSY: a buyer stopped inside an order) is tried at the next step.
 *
 * It runs in a thread of its own with a handle of its own, never on the
 * drain thread: a clear's grace period waits for the operations open at its
 * start, up to a second for a stopped buyer, and the drain -- every sync
 * order's acknowledgement -- must never wait on a buyer (it did: a stopped
 * buyer made each sync order on the box take about a second).  The next step
 * is timed from the end of the last one.  Its counters are atomics the drain
 * thread copies into serve_stats (serve_reclaimer_stats).
 */
struct serve_reclaimer {
	struct serve    *rc_s;
	flash_t         *rc_h;          /* the thread's own writable handle */
	int              rc_no_handle;  /* it could not be opened: nothing is reclaimed */
	struct worker    rc_w;          /* the thread (worker.h) */
	uint64_t         rc_clear_lsn[2]; /* per table, the WAL LSN MySQL must reach
	                                     before the due clear (0: none due) */
	uint64_t         rc_advances, rc_clears, rc_cleared_keys, rc_waits;   /* atomics */
};

static void serve_reclaim(struct serve_reclaimer *r)
{
	struct serve *s = r->rc_s;

	for (uint32_t t = FLASH_TABLE_REQUESTS; t <= FLASH_TABLE_USERS; t++) {
		struct flash_gen_info gi;
		uint64_t n = 0;
		int rc, due = 0;

		if (flash_gen_get(r->rc_h, t, &gi) != FLASH_OK || gi.banks == 1)
			return;
		rc = flash_gen_advance(r->rc_h, t, (int64_t)serve_now_real_ns(), &gi);
		if (rc != FLASH_OK) {
			serve_log(s, PLOG_WARN, "reclaim: advance table %u: %s", t, flash_strerror(rc));
			continue;
		}
		if (gi.advanced) {
			__atomic_add_fetch(&r->rc_advances, 1, __ATOMIC_RELAXED);
			serve_log(s, PLOG_INFO, "reclaim: table %s in generation %" PRIu64,
			          t ? "users" : "requests", gi.gen);
		}
		for (uint32_t b = 0; b < gi.banks; b++)
			due |= gi.bank[b].state == FLASH_BANK_OLD;
		if (!due) {
			r->rc_clear_lsn[t] = 0;
			continue;
		}
		if (s->sv_pump != NULL) {
			uint64_t applied = 0;

			if (r->rc_clear_lsn[t] == 0)
				r->rc_clear_lsn[t] = wal_durable_lsn(s->sv_w) + 1;   /* 0 means none */
			if (serve_applied_lsn(s->sv_pump, &applied) != 0 || applied + 1 < r->rc_clear_lsn[t]) {
				/* MySQL has not applied that generation yet */
				__atomic_add_fetch(&r->rc_waits, 1, __ATOMIC_RELAXED);
				continue;
			}
		}
		rc = flash_gen_clear(r->rc_h, t, &n);
		if (rc == FLASH_EBUSY)
			continue;
		if (rc != FLASH_OK) {
			serve_log(s, PLOG_WARN, "reclaim: clear table %u: %s", t, flash_strerror(rc));
			continue;
		}
		r->rc_clear_lsn[t] = 0;
		__atomic_add_fetch(&r->rc_clears, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->rc_cleared_keys, n, __ATOMIC_RELAXED);
		serve_log(s, PLOG_INFO, "reclaim: table %s: a bank cleared, %" PRIu64 " keys",
		          t ? "users" : "requests", n);
	}
}

/* One pass of the worker (worker.h), from the start and then every
 * --reclaim-every-ms; the handle opened on the first one, by this thread. */
static void serve_reclaimer_pass(void *arg, int final)
{
	struct serve_reclaimer *r = arg;
	(void)final;
	if (r->rc_h == NULL && !r->rc_no_handle) {
		int rc = flash_open(r->rc_s->sv_o->segment, 0, &r->rc_h);
		if (rc != FLASH_OK) {
			serve_log(r->rc_s, PLOG_ERROR, "reclaim: open: %s: nothing is reclaimed",
			          flash_strerror(rc));
			r->rc_h = NULL;
			r->rc_no_handle = 1;
		}
	}
	if (r->rc_h)
		serve_reclaim(r);
}

/* Start the reclaimer of a windowed segment; NULL (nothing to reclaim, or
 * logged: it could not start -- the daemon serves on without it). */
static struct serve_reclaimer *serve_reclaimer_start(struct serve *s, uint32_t every_ms)
{
	struct flash_gen_info gi;
	struct serve_reclaimer *r;
	int rc;

	if (flash_gen_get(s->sv_h, FLASH_TABLE_REQUESTS, &gi) != FLASH_OK || gi.banks == 1)
		return NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		serve_log(s, PLOG_ERROR, "reclaim: out of memory: nothing is reclaimed");
		return NULL;
	}
	r->rc_s = s;
	if ((rc = worker_start(&r->rc_w, every_ms, WORKER_NOW, serve_reclaimer_pass, r)) != 0) {
		serve_log(s, PLOG_ERROR, "reclaim: no thread (%s): nothing is reclaimed", strerror(rc));
		free(r);
		return NULL;
	}
	return r;
}

/* The reclaimer's counters into @p st (the drain thread, before publishing). */
static void serve_reclaimer_stats(const struct serve_reclaimer *r, struct serve_stats *st)
{
	if (r == NULL)
		return;
	st->gen_advances = __atomic_load_n(&r->rc_advances, __ATOMIC_RELAXED);
	st->gen_clears = __atomic_load_n(&r->rc_clears, __ATOMIC_RELAXED);
	st->gen_cleared_keys = __atomic_load_n(&r->rc_cleared_keys, __ATOMIC_RELAXED);
	st->gen_clear_waits = __atomic_load_n(&r->rc_waits, __ATOMIC_RELAXED);
}

/* Stop and join it (a step in a grace period ends within its bound); its
 * records are in its ring, drained by the rounds that follow. */
static void serve_reclaimer_stop(struct serve_reclaimer *r, struct serve_stats *st)
{
	if (r == NULL)
		return;
	worker_stop(&r->rc_w, 0);
	serve_reclaimer_stats(r, st);
	if (r->rc_h)
		flash_close(r->rc_h);   /* from any thread */
	free(r);
}

/* One round: drain up to drain_max, append, commit, mark.  *n: drained. */
static int serve_round(struct serve *s, uint32_t *n)
{
	while (s->sv_syncer != NULL && s->sv_next.mk_npush >= SERVE_PUSH_MAX)
		if (serve_sync_step(s, 100000) != 0)
			return -1;
	int rc = flash_ring_drain(s->sv_h, serve_drain_cb, s, s->sv_o->drain_max, n);
	s->sv_st->rounds++;
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "drain: %s", flash_strerror(rc));
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	return serve_commit_mark(s);
}

/*
 * Before the first round: a predecessor that died (or failed) after writing
 * records and releasing their ring room, before their sync, left them only
 * in the WAL's file.  The WAL read at start must end with them; if it does
 * not -- a disk that reported a failed fdatasync and dropped the writes --
 * the segment holds the effects of records no log has, and is not served.
 */
static int serve_check_released(struct serve *s, const struct flash_stats *fst)
{
	for (uint32_t slot = 0; slot < s->sv_cap; slot++) {
		uint64_t durable, taken;
		if (flash_ring_taken(s->sv_h, slot, &durable, &taken) != FLASH_OK || taken <= durable)
			continue;
		uint64_t last = s->sv_have[slot] ? s->sv_last[slot].wr_seq : 0;
		if (last >= taken)
			continue;
		char cmd[1024];
		serve_rebuild_cmd(s, fst, cmd, sizeof cmd);
		serve_log(s, PLOG_ERROR, "slot %u: the previous daemon wrote records %" PRIu64 "..%"
		          PRIu64 " to WAL %s and freed their ring room, but the WAL ends that slot at %"
		          PRIu64 ": the disk lost writes it had accepted (did an fdatasync fail?); segment "
		          "%s has their effects and no log has them; it is not served; to rebuild it from "
		          "what the WAL holds run: %s", slot, durable + 1, taken, s->sv_o->wal_dir, last,
		          s->sv_o->segment, cmd);
		return serve_refuse(s, FLASH_EWAL_GAP);
	}
	return 0;
}

/* The failure @p d in words: the step, its error, when. */
static void serve_dur_why(const struct flash_durability_info *d, char *buf, size_t n)
{
	char at[40] = "";
	if (d->when_ns > 0) {
		time_t t = (time_t)(d->when_ns / 1000000000);
		struct tm tm;
		if (gmtime_r(&t, &tm) != NULL)
			strftime(at, sizeof at, " (at %Y-%m-%dT%H:%M:%SZ)", &tm);
	}
	snprintf(buf, n, "%s%s%s%s", flash_wal_step_str(d->step), d->err ? ": " : "",
	         d->err ? strerror(d->err) : "", at);
}

/*
 * A segment whose previous daemon's WAL failed (flash_durability_fail_why)
 * answers every sync order FLASH_EDURABILITY until a daemon clears it --
 * which this one does once it has proven the WAL whole: serve_open_wal read
 * every frame (a torn tail cut, damage refused), found the WAL as long as
 * its durable mark and as what the segment reflects, and opened it for
 * append (wal_open made what the file holds durable); serve_check_released
 * found in it every record the failed daemon took from the rings.  Any of
 * those refusing ends the start with the failure kept (serve_run says so).
 * Cleared before the first round, which writes what the rings still hold
 * and marks it durable only after its fdatasync: nobody is told a record is
 * durable that is not.  A kill before the clear leaves the failure for the
 * next daemon to check again; after it, the WAL it leaves is whole.
 */
static int serve_durability_clear(struct serve *s)
{
	if (!s->sv_dur.failed)
		return 0;
	char why[256];
	serve_dur_why(&s->sv_dur, why, sizeof why);
	int rc = flash_durability_clear(s->sv_h);
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "segment %s: durability failure not cleared: %s",
		          s->sv_o->segment, flash_strerror(rc));
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	serve_log(s, PLOG_WARN, "segment %s: durability failure cleared: %s; WAL %s is whole "
	          "through LSN %" PRIu64 " (as long as its durable mark and as what the segment "
	          "reflects, every record the failed daemon took from the rings in it) and open for "
	          "append: sync orders are acknowledged again", s->sv_o->segment, why,
	          s->sv_o->wal_dir, wal_next_lsn(s->sv_w) - 1);
	s->sv_dur.failed = 0;
	return 0;
}

/*
 * The first round drains every ring completely into memory, then decides
 * per slot which records the WAL holds already (see serve.h), appends the
 * rest, commits and marks.  The skip marks are cleared afterwards: later
 * rounds only ever see records newer than anything in the WAL.
 */
static int serve_first_round(struct serve *s, uint32_t *n)
{
	int rc = flash_ring_drain(s->sv_h, serve_buffer_cb, s, UINT32_MAX, n);
	s->sv_st->rounds++;
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "drain: %s", flash_strerror(rc));
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	if (s->sv_err)
		return serve_commit_mark(s);
	for (size_t i = 0; i < s->sv_nbuf; i++) {
		const struct wal_rec *b = &s->sv_buf[i];
		uint32_t slot = b->wr_rec.slot;
		if (slot < s->sv_cap && s->sv_have[slot] && b->wr_seq == s->sv_last[slot].wr_seq &&
		    memcmp(b, &s->sv_last[slot], sizeof *b) == 0)
			s->sv_skip[slot] = b->wr_seq;
	}
	for (size_t i = 0; i < s->sv_nbuf; i++)
		if (serve_take(s, &s->sv_buf[i].wr_rec, s->sv_buf[i].wr_seq) != 0)
			break;
	/* What a dead predecessor released but never marked durable is in
	 * the WAL (serve_check_released), which wal_open made durable: mark it
	 * with the rest. */
	for (uint32_t slot = 0; slot < s->sv_cap; slot++) {
		uint64_t durable, taken;
		if (flash_ring_taken(s->sv_h, slot, &durable, &taken) == FLASH_OK && taken > durable)
			serve_touch(&s->sv_next, slot, taken);
	}
	if (s->sv_st->skipped)
		serve_log(s, PLOG_WARN, "%" PRIu64 " records were in the WAL already but not marked "
		          "durable (previous daemon died after its fdatasync): not written again",
		          s->sv_st->skipped);
	rc = serve_commit_mark(s);
	memset(s->sv_skip, 0, s->sv_cap * sizeof *s->sv_skip);
	free(s->sv_buf);
	s->sv_buf = NULL;
	s->sv_nbuf = s->sv_capbuf = 0;
	return rc;
}

/* ------------------------------------------------------------------------
 * serve_run
 * ------------------------------------------------------------------------ */

#ifdef FLASH_HAVE_MHD
/*
 * The MySQL liveness ping behind flashstock_mysql_connected (mysql_probe.h):
 * with the metrics and a MySQL, one ping a second, each bounded by 2 s.
 * A probe that cannot start is logged and left out (the metric with it).
 */
static mdb_probe_t *serve_probe_start(const struct serve *s, const struct serve_opts *o)
{
	mdb_probe_t *p = NULL;
	if (o->mysql.url == NULL && o->mysql.defaults == NULL)
		return NULL;
	struct mdb_opts mo;
	memset(&mo, 0, sizeof mo);
	mo.url = o->mysql.url;
	mo.defaults_file = o->mysql.defaults;
	mo.require_db = o->mysql.require_db;
	int rc = mdb_probe_start(&mo, 1000, 2, &p);
	if (rc != FLASH_OK)
		serve_log(s, PLOG_WARN, "MySQL liveness ping: %s", flash_strerror(rc));
	return p;
}
#endif

/* Stop the archiver (if any) and keep its count. */
static void serve_arch_stop(struct serve *s)
{
	struct archiver_stats as;
	if (!s->sv_arch)
		return;
	archiver_stop(s->sv_arch, &as);
	s->sv_arch = NULL;
	s->sv_st->archived = as.archived;
}

/* Stop the backstop thread (if any) after it wrote what is durable, within
 * its drain bound; its figures go to the stats.  @return 1 if one ran. */
static int serve_backstop_stop(struct serve *s)
{
	if (!s->sv_backstop)
		return 0;
	struct backstop_stats bs;
	uint32_t ms = s->sv_o->backstop.drain_ms ? s->sv_o->backstop.drain_ms : 5000;
	backstop_stop(s->sv_backstop, ms, &bs);
	s->sv_backstop = NULL;
	s->sv_st->backstop_conflicts = bs.conflicts;
	return 1;
}

/* Report the lease agent's fence or failure once (the daemon keeps serving:
 * acknowledged orders still need their WAL). */
static void serve_lease_watch(struct serve *s)
{
	if (!s->sv_lease || s->sv_lease_reported)
		return;
	struct lease_stats ls;
	lease_stats_get(s->sv_lease, &ls);
	if (ls.state == LEASE_FENCED || ls.state == LEASE_FAILED) {
		serve_log(s, PLOG_ERROR, "lease agent %s: %s (box %u epoch %u); serving the WAL goes on",
		          lease_state_name(ls.state), flash_strerror(ls.rc), ls.box_id, ls.epoch);
		s->sv_lease_reported = 1;
	}
}

static void serve_sleep_us(uint32_t us)
{
	struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000 };
	nanosleep(&ts, NULL);   /* EINTR (a signal) ends it early: fine */
}

/* ------------------------------------------------------------------------
 * The services: the threads that run beside the drain loop, one entry each.
 * They start in the table's order and stop in the reverse order, and the
 * order is their dependencies:
 *   - the reconciler before the MySQL applier: its last pass (a clean stop)
 *     reads MariaDB after the applier has drained;
 *   - the applier before the snapshots, the lease agent and the archiver,
 *     which read its applied LSN;
 *   - the lease agent before the backstop: at a stop the backstop writes
 *     what is durable and makes its compensating cancels before the agent
 *     returns what the box holds (the drain loop runs that part: serve_at_stop);
 *   - the backstop before the archiver, which asks it how far it is;
 *   - the metrics last: they read every other service.
 * start: a service that is not configured starts nothing and returns 0; a
 * failure is logged, sets the stats' rc and returns -1 (serve then
 * stops what started).  stop: NULL-safe, @p clean for a clean stop.
 * show: hands the service's figures to the metrics endpoint, which walks the
 * table when it starts (NULL: no figures of its own, or built without
 * libmicrohttpd).
 * ------------------------------------------------------------------------ */

struct metrics;

struct serve_service {
	const char *name;
	int  (*start)(struct serve *s);
	void (*stop)(struct serve *s, int clean);
	void (*show)(struct serve *s, struct metrics *m);
};

#ifdef FLASH_HAVE_MHD
/* Every started service's figures on the metrics endpoint @p m. */
static void serve_services_show(struct serve *s, struct metrics *m);
#endif

/* A service's start failed: say so, keep the code. */
static int serve_svc_fail(struct serve *s, const char *name, int rc, const char *extra)
{
	serve_log(s, PLOG_ERROR, "%s: %s%s", name, flash_strerror(rc), extra);
	serve_fail_rc(s->sv_st, rc);
	return -1;
}

static int svc_recon_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->reconcile.every_ms == 0)
		return 0;
	struct serve_recon_opts ro = {
		.segment = o->segment, .wal = s->sv_w, .wal_dir = o->wal_dir, .mysql_url = o->mysql.url,
		.mysql_defaults = o->mysql.defaults, .mysql_require_db = o->mysql.require_db,
		.every_ms = o->reconcile.every_ms,
		.threshold = o->reconcile.threshold, .log_level = o->log_level,
		.hook = o->reconcile.hook, .hook_arg = o->reconcile.hook_arg,
	};
	int rc = serve_recon_start(&ro, &s->sv_recon);
	return rc == FLASH_OK ? 0 : serve_svc_fail(s, "reconciler", rc, "");
}

static void svc_recon_stop(struct serve *s, int clean)
{
	if (!s->sv_recon)
		return;
	/* a clean stop: one last pass, the applier drained */
	struct serve_recon_stats rs;
	serve_recon_stop(s->sv_recon, clean, &rs);
	s->sv_recon = NULL;
	s->sv_st->reconcile_passes = rs.passes;
	s->sv_st->reconcile_diffs = rs.diffs_total;
	s->sv_st->reconcile_busy = rs.skipped_busy;
}

static int svc_pump_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->mysql.url == NULL && o->mysql.defaults == NULL)
		return 0;
	struct mdb_pump_opts po;
	memset(&po, 0, sizeof po);
	po.mysql.url = o->mysql.url;
	po.mysql.defaults_file = o->mysql.defaults;
	po.mysql.require_db = o->mysql.require_db;
	po.mysql.log = plog_mysql_line;
	po.mysql.log_arg = (void *)&o->log_level;   /* read only */
	po.wal_dir = o->wal_dir;
	/* Everything in the WAL at start is durable (wal_open synced it):
	 * the pump may read it back for a MySQL that is behind. */
	po.start_durable_lsn = wal_durable_lsn(s->sv_w);
	int rc = mdb_pump_start(&po, &s->sv_pump);
	if (rc != FLASH_OK)
		return serve_svc_fail(s, "MySQL applier", rc, "");
	serve_log(s, PLOG_INFO, "MySQL applier started (it catches up from the WAL)");
	return 0;
}

static void svc_pump_stop(struct serve *s, int clean)
{
	(void)clean;
	if (!s->sv_pump)
		return;
	/* Records still queued are in the WAL: the next start catches up. */
	mdb_pump_stop(s->sv_pump, s->sv_o->mysql.drain_ms ? s->sv_o->mysql.drain_ms : 5000);
	s->sv_pump = NULL;
}

static int svc_snap_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (!o->snapshots.on)
		return 0;
	struct snap_opts so = {
		.segment = o->segment, .wal_dir = o->wal_dir, .wal = s->sv_w,
		.every_s = o->snapshots.every_s, .wal_bytes = o->snapshots.wal_bytes,
		.keep_wal = o->snapshots.keep_wal,
		.applied_lsn = s->sv_pump ? serve_applied_lsn : NULL, .applied_arg = s->sv_pump,
		.log = serve_snap_log, .log_arg = s,
		.wal_remove = serve_wal_remove, .wal_remove_arg = s,
	};
	int rc = snap_thread_start(&so, &s->sv_snap);
	if (rc == FLASH_OK)
		return 0;
	serve_svc_fail(s, "snapshot thread", rc, "");
	serve_fail_rc(s->sv_st, FLASH_ESYS);
	return -1;
}

static void svc_snap_stop(struct serve *s, int clean)
{
	if (!s->sv_snap)
		return;
	/* a clean stop writes a last snapshot of everything durable */
	struct snap_stats ss;
	snap_thread_stop(s->sv_snap, clean, &ss);
	s->sv_snap = NULL;
	s->sv_st->snap_lsn = ss.snap_lsn;
	s->sv_st->snapshots = ss.snapshots;
	s->sv_st->snap_failures = ss.failures;
	s->sv_st->wal_removed = ss.wal_removed;
}

static int svc_lease_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->lease.urls == NULL)
		return 0;
	struct lease_opts lo = {
		.segment = o->segment, .urls = o->lease.urls, .state_dir = o->wal_dir,
		.box_id = o->box_id, .lease_min = o->lease.min, .lease_max = o->lease.max,
		.lead_ms = o->lease.lead_ms, .heartbeat_s = o->lease.heartbeat_s, .log_level = o->log_level,
		.applied_lsn = s->sv_pump ? serve_applied_lsn : NULL, .applied_arg = s->sv_pump,
	};
	int rc = lease_start(&lo, &s->sv_lease);
	if (rc != FLASH_OK)
		return serve_svc_fail(s, "lease agent", rc, "");
	serve_log(s, PLOG_INFO, "lease agent started (box %u)", o->box_id);
	return 0;
}

static void svc_lease_stop(struct serve *s, int clean)
{
	(void)clean;
	if (!s->sv_lease)
		return;
	/* normally done already (the drain loop waited for it) */
	(void)lease_stop(s->sv_lease);   /* its end is logged: fenced or failed */
	s->sv_lease = NULL;
}

static int svc_backstop_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->backstop.urls == NULL)
		return 0;
	struct backstop_opts bo = {
		.segment = o->segment, .wal_dir = o->wal_dir, .urls = o->backstop.urls,
		.box_id = o->box_id, .log_level = o->log_level,
	};
	int rc = backstop_start(&bo, &s->sv_backstop);
	if (rc != FLASH_OK)
		return serve_svc_fail(s, "backstop", rc, o->box_id == 0 ? " (it needs --box-id)" : "");
	serve_log(s, PLOG_INFO, "backstop started (box %u): the per-user limit across boxes",
	          o->box_id);
	return 0;
}

static void svc_backstop_stop(struct serve *s, int clean)
{
	(void)clean;
	(void)serve_backstop_stop(s);
}

static int svc_expire_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->expire.off)
		return 0;
	struct expirer_opts xo = { .segment = o->segment, .every_ms = o->expire.every_ms,
	                           .log = serve_snap_log, .log_arg = s };
	int rc = expirer_start(&xo, &s->sv_expirer);
	return rc == FLASH_OK ? 0 : serve_svc_fail(s, "reservation expirer", rc, "");
}

/* Stop the expirer (if any), the metrics endpoint keeping its last figures. */
static void serve_expire_stop(struct serve *s)
{
	if (!s->sv_expirer)
		return;
#ifdef FLASH_HAVE_MHD
	if (s->sv_metrics)
		metrics_set_expirer(s->sv_metrics, NULL);
#endif
	struct expirer_stats xs;
	expirer_stats_get(s->sv_expirer, &xs);
	expirer_stop(s->sv_expirer);
	s->sv_expirer = NULL;
	s->sv_st->expired = xs.expired;
	_Static_assert(SERVE_EXPIRY_BUCKETS == EXPIRER_LAG_BUCKETS, "serve_stats' expiry buckets");
	memcpy(s->sv_st->expiry_lag_hist, xs.lag_hist, sizeof xs.lag_hist);
	s->sv_st->expiry_lag_ns_sum = xs.lag_ns_sum;
	s->sv_st->expiry_lag_ns_max = xs.lag_ns_max;
}

static void svc_expire_stop(struct serve *s, int clean)
{
	(void)clean;
	serve_expire_stop(s);
}

static int svc_arch_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->archive.after_s == 0)
		return 0;
	if (s->sv_pump == NULL) {
		serve_log(s, PLOG_INFO, "archiver off: archiving waits for MariaDB's applied LSN, "
		          "and there is no --mysql (archive by hand: flashstock archive --no-mysql-check)");
		return 0;
	}
	struct archiver_opts ao = {
		.segment = o->segment, .after_s = o->archive.after_s, .every_ms = o->archive.every_ms,
		.applied_lsn = serve_applied_lsn, .applied_arg = s->sv_pump,
		.backstop_lsn = s->sv_backstop ? serve_backstop_lsn : NULL,
		.backstop_arg = s->sv_backstop,
		.log = serve_snap_log, .log_arg = s,
	};
	int rc = archiver_start(&ao, &s->sv_arch);
	if (rc != FLASH_OK)
		return serve_svc_fail(s, "archiver", rc, "");
	serve_log(s, PLOG_INFO, "archiver: activities are archived %us after their end, "
	          "once MariaDB has applied them%s", o->archive.after_s,
	          s->sv_backstop ? " and the backstop has written their orders" : "");
	return 0;
}

static void svc_arch_stop(struct serve *s, int clean)
{
	(void)clean;
	serve_arch_stop(s);
}

#ifdef FLASH_HAVE_MHD
static int svc_metrics_start(struct serve *s)
{
	const struct serve_opts *o = s->sv_o;
	if (o->metrics == NULL)
		return 0;
	char err[256];
	uint16_t port = 0;
	int rc = metrics_start(o->metrics, o->segment, s->sv_w, s->sv_pump, &s->sv_metrics, &port,
	                       err, sizeof err);
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "metrics: %s", err);
		serve_fail_rc(s->sv_st, rc);
		return -1;
	}
	serve_services_show(s, s->sv_metrics);
	s->sv_probe = serve_probe_start(s, o);
	metrics_set_probe(s->sv_metrics, s->sv_probe);
	(void)metrics_set_feed(s->sv_metrics, o->wal_dir);
	__atomic_store_n(&s->sv_st->metrics_port, port, __ATOMIC_RELEASE);
	serve_log(s, PLOG_INFO, "metrics on port %u (GET /metrics)", port);
	return 0;
}

static void svc_metrics_stop(struct serve *s, int clean)
{
	(void)clean;
	metrics_stop(s->sv_metrics);
	mdb_probe_stop(s->sv_probe);
	s->sv_metrics = NULL;
	s->sv_probe = NULL;
}

static void show_recon(struct serve *s, struct metrics *m) { metrics_set_reconcile(m, s->sv_recon); }
static void show_arch(struct serve *s, struct metrics *m) { metrics_set_archiver(m, s->sv_arch); }
static void show_expire(struct serve *s, struct metrics *m) { metrics_set_expirer(m, s->sv_expirer); }
static void show_backstop(struct serve *s, struct metrics *m) { metrics_set_backstop(m, s->sv_backstop); }
static void show_lease(struct serve *s, struct metrics *m) { metrics_set_lease(m, s->sv_lease); }
#define SVC_SHOW(fn) fn

/* The figures of the last round, for the metrics endpoint. */
static void serve_publish(struct serve *s)
{
	if (s->sv_metrics)
		metrics_publish(s->sv_metrics, s->sv_st);
}

/* The archiver stops before the others: the endpoint stops reading it. */
static void serve_metrics_archiver_off(struct serve *s)
{
	if (s->sv_metrics)
		metrics_set_archiver(s->sv_metrics, NULL);
}
#else
static int svc_metrics_start(struct serve *s)
{
	if (s->sv_o->metrics == NULL)
		return 0;
	serve_log(s, PLOG_ERROR, "metrics: built without libmicrohttpd");
	serve_fail_rc(s->sv_st, FLASH_EINVAL);
	return -1;
}

static void svc_metrics_stop(struct serve *s, int clean)
{
	(void)s;
	(void)clean;
}

static void serve_publish(struct serve *s) { (void)s; }
static void serve_metrics_archiver_off(struct serve *s) { (void)s; }
#define SVC_SHOW(fn) NULL
#endif

static const struct serve_service serve_services[] = {
	{ "reconciler",    svc_recon_start,    svc_recon_stop,    SVC_SHOW(show_recon) },
	{ "MySQL applier", svc_pump_start,     svc_pump_stop,     NULL },  /* metrics_start() */
	{ "snapshots",     svc_snap_start,     svc_snap_stop,     NULL },
	{ "lease agent",   svc_lease_start,    svc_lease_stop,    SVC_SHOW(show_lease) },
	{ "backstop",      svc_backstop_start, svc_backstop_stop, SVC_SHOW(show_backstop) },
	{ "archiver",      svc_arch_start,     svc_arch_stop,     SVC_SHOW(show_arch) },
	{ "expirer",       svc_expire_start,   svc_expire_stop,   SVC_SHOW(show_expire) },
	{ "metrics",       svc_metrics_start,  svc_metrics_stop,  NULL },
};
#define SERVE_NSERVICES (sizeof serve_services / sizeof serve_services[0])

#ifdef FLASH_HAVE_MHD
static void serve_services_show(struct serve *s, struct metrics *m)
{
	for (size_t i = 0; i < s->sv_started; i++)
		if (serve_services[i].show)
			serve_services[i].show(s, m);
}
#endif

/* Start every service in order; @return 0, or -1 (serve_services_stop
 * stops the started ones, and the one that failed: its stop is NULL-safe
 * for whatever its start left behind). */
static int serve_services_start(struct serve *s)
{
	for (s->sv_started = 0; s->sv_started < SERVE_NSERVICES; s->sv_started++)
		if (serve_services[s->sv_started].start(s) != 0) {
			s->sv_started++;
			return -1;
		}
	return 0;
}

/* Stop the started services in the reverse order. */
static void serve_services_stop(struct serve *s, int clean)
{
	while (s->sv_started > 0)
		serve_services[--s->sv_started].stop(s, clean);
}

/* ------------------------------------------------------------------------
 * serve_run: set up, start the services, drain until stopped, stop them
 * ------------------------------------------------------------------------ */

/* --recover (or --recover-if-absent and no segment): rebuild the segment
 * (snapshot + WAL) under a temporary name; it takes its name only when
 * complete (rebuild.h), and is then served like any segment after a
 * restart.  @return 0 (rebuilt, or nothing to do), -1 (stats say why). */
static int serve_recover(struct serve *s, struct serve_opts *oo)
{
	const struct serve_opts *o = s->sv_o;
	struct serve_stats *st = s->sv_st;
	int recover = o->recovery.on;

	if (!recover && o->recovery.if_absent) {
		flash_t *h = NULL;
		int frc = flash_open(o->segment, FLASH_RDONLY, &h);
		flash_close(h);
		if (frc == FLASH_ENOSEG) {
			serve_log(s, PLOG_INFO, "segment %s does not exist: rebuilding it from WAL %s "
			          "(--recover-if-absent)", o->segment, o->wal_dir);
			recover = 1;
		}
	}
	if (!recover)
		return 0;
	notify_status(&s->sv_notify, "rebuilding segment %s from WAL %s", o->segment, o->wal_dir);
	struct rebuild_opts ro = {
		.segment = o->segment, .wal_dir = o->wal_dir, .accept_loss = o->recovery.accept_loss,
		.accept_after = o->recovery.accept_loss_after, .log = serve_snap_log, .log_arg = s,
	};
	struct rebuild_result rr;
	int brc = rebuild_run(&ro, &rr);
	st->recover_snap_lsn = rr.snap_lsn;
	st->applied = rr.applied;
	st->present = rr.present;
	if (brc != 0) {
		serve_fail_rc(st, rr.rc);
		/* no segment to rebuild into and no snapshot to make one:
		 * a usage error, nothing was changed */
		st->refused = rr.rc == FLASH_ENOSEG;
		return -1;
	}
	s->sv_snap_lsn = rr.snap_lsn;
	oo->recovery.on = 0;
	return 0;
}

/* Open the segment, claim it, check it against the WAL and open the WAL.
 * @return 0, or -1 (stats say why; what was opened is closed by the caller). */
static int serve_setup(struct serve *s, struct flash_stats *fst)
{
	const struct serve_opts *o = s->sv_o;
	struct serve_stats *st = s->sv_st;
	int rc = flash_open(o->segment, 0, &s->sv_h);
	if (rc != FLASH_OK) {
		serve_log(s, PLOG_ERROR, "segment %s: %s", o->segment, flash_strerror(rc));
		serve_fail_rc(st, rc);
		return -1;
	}
	if ((rc = flash_stats_get(s->sv_h, fst)) != FLASH_OK) {
		serve_fail_rc(st, rc);
		return -1;
	}
	if (serve_claim(s) != 0)
		return -1;
	if ((rc = flash_durability_get(s->sv_h, &s->sv_dur)) != FLASH_OK) {
		serve_fail_rc(st, rc);
		return -1;
	}
	if (s->sv_dur.failed) {
		char why[256];
		serve_dur_why(&s->sv_dur, why, sizeof why);
		serve_log(s, PLOG_INFO, "segment %s: durability failed: %s; sync orders answer "
		          "FLASH_EDURABILITY until this daemon has proven WAL %s whole", o->segment, why,
		          o->wal_dir);
	}
	s->sv_durability = fst->durability;
	if (serve_check_ident(s, fst) != 0)
		return -1;
	s->sv_cap = fst->procs_cap;
	s->sv_last = calloc(s->sv_cap, sizeof *s->sv_last);
	s->sv_have = calloc(s->sv_cap, sizeof *s->sv_have);
	s->sv_skip = calloc(s->sv_cap, sizeof *s->sv_skip);
	s->sv_next.mk_adv = calloc(s->sv_cap, sizeof *s->sv_next.mk_adv);
	s->sv_next.mk_touched = calloc(s->sv_cap, sizeof *s->sv_next.mk_touched);
	s->sv_sync.mk_adv = calloc(s->sv_cap, sizeof *s->sv_sync.mk_adv);
	s->sv_sync.mk_touched = calloc(s->sv_cap, sizeof *s->sv_sync.mk_touched);
	if (!s->sv_last || !s->sv_have || !s->sv_skip || !s->sv_next.mk_adv ||
	    !s->sv_next.mk_touched || !s->sv_sync.mk_adv || !s->sv_sync.mk_touched) {
		serve_fail_rc(st, FLASH_ENOMEM);
		return -1;
	}
	if (serve_open_wal(s) != 0)
		return -1;
	s->sv_marked_lsn = wal_durable_lsn(s->sv_w);
	serve_log(s, PLOG_INFO, "serving segment %s (%s durability, %u slots), WAL %s from LSN %" PRIu64,
	          o->segment, fst->durability == FLASH_DURABILITY_SYNC ? "sync" : "async", s->sv_cap,
	          o->wal_dir, wal_next_lsn(s->sv_w));
	notify_status(&s->sv_notify, "segment %s: WAL %s read through LSN %" PRIu64 "; starting",
	              o->segment, o->wal_dir, wal_next_lsn(s->sv_w) - 1);
	return 0;
}

/*
 * A stop was asked for: before each round, the services that make records
 * stop making them, in the order the drain needs.  The archiver, the
 * expirer and the reclaimer stop at once (the rounds drain their last records).  The
 * backstop goes first among the boxes' services: it writes what is durable
 * and makes its compensating cancels, whose units must be back in the
 * segment before the lease agent returns what the box holds.  Then the
 * agent: ask it, keep draining its restocks, stop once it has finished.
 * @return 1 while the lease agent still needs rounds.
 */
static int serve_at_stop(struct serve *s)
{
	notify_stopping(&s->sv_notify, "stopping: draining the rings into WAL %s", s->sv_o->wal_dir);
	if (s->sv_arch) {
		/* no archive after this: the rounds below drain its last records */
		serve_metrics_archiver_off(s);
		serve_arch_stop(s);
	}
	/* likewise: its last expiries are drained below */
	serve_expire_stop(s);
	if (s->sv_reclaim) {
		/* likewise: its last records are drained below */
		serve_reclaimer_stop(s->sv_reclaim, s->sv_st);
		s->sv_reclaim = NULL;
	}
	if (s->sv_lease && !s->sv_backstop)
		lease_stop_begin(s->sv_lease);
	return s->sv_backstop || !lease_done(s->sv_lease);
}

/* The loop's timers: dead handles recovered, the stats line. */
struct serve_timers {
	uint64_t next_recover, next_stats, last_records;
	struct wal_stats last_ws;
};

static void serve_timers_run(struct serve *s, struct serve_timers *t, uint64_t now)
{
	struct serve_stats *st = s->sv_st;
	if (now >= t->next_recover) {
		uint32_t rec = 0;
		int rc = flash_recover(s->sv_h, &rec);
		if (rc != FLASH_OK)
			serve_log(s, PLOG_WARN, "recover: %s", flash_strerror(rc));
		else if (rec) {
			st->recovered += rec;
			serve_log(s, PLOG_INFO, "recovered %u dead handles", rec);
		}
		t->next_recover = now + s->sv_o->recover_ms;
	}
	if (now >= t->next_stats) {
		struct wal_stats ws;
		wal_stats_get(s->sv_w, &ws);
		uint64_t dc = ws.commits - t->last_ws.commits;
		serve_log(s, PLOG_INFO, "%" PRIu64 " records (+%" PRIu64 "), durable LSN %" PRIu64
		          ", %" PRIu64 " commits (+%" PRIu64 ", mean group %.1f, largest %" PRIu64
		          "), fdatasync mean %.0f us, max %.0f us; oldest record durable after "
		          "at most %.0f us",
		          st->records, st->records - t->last_records, ws.durable_lsn, ws.commits, dc,
		          dc ? (double)(ws.frames - t->last_ws.frames) / (double)dc : 0.0, ws.max_group,
		          dc ? (double)(ws.sync_ns_total - t->last_ws.sync_ns_total) / (double)dc / 1e3 : 0.0,
		          (double)ws.sync_ns_max / 1e3, (double)st->lag_ns_max / 1e3);
		t->last_records = st->records;
		t->last_ws = ws;
		t->next_stats = now + s->sv_o->stats_ms;
	}
}

/*
 * The drain loop: rounds until a stop was asked for and a round that began
 * after it found the rings empty (what was emitted before the request is
 * written, synced and marked), or until the rings are empty in --once.
 * @p n: what the first round drained.  @return 0 (a clean stop), -1.
 */
static int serve_loop(struct serve *s, uint32_t n)
{
	const struct serve_opts *o = s->sv_o;
	struct serve_timers t = { .next_recover = serve_now_ms() + o->recover_ms,
	                          .next_stats = o->stats_ms ? serve_now_ms() + o->stats_ms : UINT64_MAX };
	uint32_t idle_us = 0;

	wal_stats_get(s->sv_w, &t.last_ws);
	for (;;) {
		/* Set by a signal handler, or by another thread (tests): an
		 * atomic load serves both. */
		int stopping = o->stop != NULL && __atomic_load_n(o->stop, __ATOMIC_ACQUIRE) != 0;
		if (n == 0 && o->once)
			return 0;
		int lease_busy = stopping && serve_at_stop(s);
		if (serve_round(s, &n) != 0)
			return -1;
		/* rings empty at a stop or in --once: all of it durable and marked */
		if (n == 0 && (stopping || o->once) && serve_sync_flush(s) != 0)
			return -1;
		serve_snap_stats(s);
		serve_reclaimer_stats(s->sv_reclaim, s->sv_st);
		serve_publish(s);
		serve_lease_watch(s);
		if (n == 0 && stopping && s->sv_backstop) {
			/* everything emitted before the stop is durable: the
			 * backstop writes it; the next rounds drain its cancels */
			(void)serve_backstop_stop(s);
			continue;
		}
		if (n == 0 && stopping && !lease_busy)
			return 0;
		if (n == 0 && !stopping && !o->once) {
			/* Nothing to do: back off from a yield to idle_us_max. */
			idle_us = idle_us ? idle_us * 2 : 20;
			if (idle_us > o->idle_us_max)
				idle_us = o->idle_us_max;
			if (s->sv_sync.mk_ntouched == 0)
				serve_sleep_us(idle_us);
			else if (serve_sync_step(s, idle_us) != 0)   /* or until the sync at work returns */
				return -1;
		} else {
			idle_us = 0;
		}
		uint64_t now = serve_now_ms();
		/* the loop turns: a ping, unless the sync at work is stuck */
		notify_watchdog(&s->sv_notify, now, s->sv_sync.mk_ntouched && now > s->sv_sync_asked_ms ?
		                now - s->sv_sync_asked_ms : 0);
		serve_timers_run(s, &t, now);
	}
}

/* Recovered, the services started: the first round, the fdatasync thread,
 * ready, the reclaimer, the loop.  @return 0 (a clean stop), -1. */
static int serve_drain(struct serve *s, const struct flash_stats *fst)
{
	const struct serve_opts *o = s->sv_o;
	uint32_t n;
	int rc;

	if (serve_check_released(s, fst) != 0 || serve_durability_clear(s) != 0 ||
	    serve_first_round(s, &n) != 0)
		return -1;
	if ((rc = serve_syncer_start(s)) != 0) {
		serve_log(s, PLOG_ERROR, "no fdatasync thread: %s", strerror(rc));
		serve_fail_rc(s->sv_st, FLASH_ENOMEM);
		return -1;
	}
	/* Recovered, and the first round made everything the rings held at
	 * start durable and marked: ready (notify.h) */
	notify_ready(&s->sv_notify, "serving segment %s: WAL %s durable through LSN %" PRIu64,
	             o->segment, o->wal_dir, wal_durable_lsn(s->sv_w));
	if (!o->reclaim.off)
		s->sv_reclaim = serve_reclaimer_start(s, o->reclaim.every_ms ? o->reclaim.every_ms : 1000);
	if (serve_loop(s, n) != 0)
		return -1;
	/* Clean stop: a last look for dead handles */
	uint32_t rec = 0;
	if (flash_recover(s->sv_h, &rec) == FLASH_OK)
		s->sv_st->recovered += rec;
	serve_log(s, PLOG_INFO, "stopping: %" PRIu64 " records written, durable LSN %" PRIu64,
	          s->sv_st->records, wal_durable_lsn(s->sv_w));
	return 0;
}

/* Stop what runs, in the reverse order of the start; close the WAL and the
 * segment.  @return @p ret, or -1 if a clean run's WAL failed to close. */
static int serve_teardown(struct serve *s, int ret)
{
	if (s->sv_dur.failed)
		serve_log(s, PLOG_ERROR, "segment %s stays failed: sync orders answer "
		          "FLASH_EDURABILITY until a daemon starts on a WAL it proves whole; do what the "
		          "lines above say, then start the daemon again", s->sv_o->segment);
	serve_reclaimer_stop(s->sv_reclaim, s->sv_st);
	s->sv_reclaim = NULL;
	serve_syncer_stop(s);
	serve_services_stop(s, ret == 0);
	if (s->sv_w) {
		s->sv_st->durable_lsn = wal_durable_lsn(s->sv_w);
		int rc = wal_close(s->sv_w);
		if (rc != FLASH_OK && ret == 0) {
			serve_fail_rc(s->sv_st, rc);
			ret = -1;
		}
	}
	free(s->sv_buf);
	free(s->sv_next.mk_push);
	free(s->sv_sync.mk_push);
	free(s->sv_last);
	free(s->sv_have);
	free(s->sv_skip);
	free(s->sv_next.mk_adv);
	free(s->sv_next.mk_touched);
	free(s->sv_sync.mk_adv);
	free(s->sv_sync.mk_touched);
	flash_close(s->sv_h);
	return ret;
}

int serve_run(const struct serve_opts *o, struct serve_stats *st_out)
{
	struct serve_stats st_local;
	struct serve_stats *st = st_out ? st_out : &st_local;
	memset(st, 0, sizeof *st);
	struct serve_opts oo = *o;
	if (oo.drain_max == 0)
		oo.drain_max = 65536;
	if (oo.recover_ms == 0)
		oo.recover_ms = 1000;
	if (oo.idle_us_max == 0)
		oo.idle_us_max = 250;
	struct serve s = { .sv_o = &oo, .sv_st = st };
	struct flash_stats fst;

	if (o->segment == NULL || o->wal_dir == NULL) {
		serve_fail_rc(st, FLASH_EINVAL);
		return -1;
	}
	notify_init(&s.sv_notify);
	if (serve_recover(&s, &oo) != 0)
		return -1;
	int ret = -1;
	if (serve_setup(&s, &fst) == 0 && serve_services_start(&s) == 0)
		ret = serve_drain(&s, &fst);
	return serve_teardown(&s, ret);
}
