/*
 * rebuild.c -- the check of a WAL directory for a rebuild, and the atomic
 * rebuild of a segment from it (see rebuild.h).
 *
 * Divisions: 1. names, 2. the check, 3. accepting a loss
 * (cut, snapshots set aside, the durable mark lowered), 4. the temporary
 * segment (stale ones, room, the atomic rename), 5. rebuild_run().
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rebuild.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "crash.h"
#include "pio.h"
#include "plog.h"

/* ------------------------------------------------------------------------
 * 1. Names
 * ------------------------------------------------------------------------ */

/* The segment's name without its leading '/'. */
static const char *rb_base(const char *name)
{
	return name[0] == '/' ? name + 1 : name;
}

/* ------------------------------------------------------------------------
 * 2. The check
 * ------------------------------------------------------------------------ */

static int rb_count_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	(void)arg; (void)lsn; (void)type; (void)p; (void)len;
	return 0;
}

/* The file a missing range starting at @p lsn was in, by the WAL's naming. */
static void rb_missing_file(char *buf, size_t n, uint64_t lsn)
{
	snprintf(buf, n, "wal-%016" PRIx64 ".log", lsn);
}

/* The newest valid snapshot of @p dir into c.  @return -1 to go on, or the
 * verdict when the snapshots alone decide it. */
static int rb_check_snapshot(const char *dir, struct rebuild_check *c, plog_fn log, void *log_arg)
{
	uint64_t *lsns;
	size_t nsnap;
	int rc = snap_list(dir, &lsns, &nsnap);
	if (rc != FLASH_OK) {
		c->err_no = errno;
		snprintf(c->msg, sizeof c->msg, "snapshots in %.400s: %.400s: %.400s", dir, flash_strerror(rc),
		         pio_strerror(c->err_no));
		return c->verdict = REBUILD_EIO;
	}
	free(lsns);
	if (nsnap > 0) {
		struct snap_file f;
		rc = snap_open_newest(dir, 0, &f, log, log_arg);
		if (rc == FLASH_ESNAP_NOENT) {
			snprintf(c->msg, sizeof c->msg, "%zu snapshot(s) in %.400s, none valid: nothing rebuilt",
			         nsnap, dir);
			return c->verdict = REBUILD_NOSNAP;
		}
		if (rc != FLASH_OK) {
			c->err_no = errno;
			snprintf(c->msg, sizeof c->msg, "snapshots in %.400s: %.400s", dir, flash_strerror(rc));
			return c->verdict = REBUILD_EIO;
		}
		c->snap_lsn = f.sf_hdr->sh_lsn;
		snprintf(c->snap_file, sizeof c->snap_file, "%.400s", f.sf_path);
		snap_file_close(&f);
	}
	return -1;
}

/* The verdict on a WAL whose replay stopped at a bad frame, from the
 * replay's report: a torn tail (nothing vouches for it) or corruption. */
static int rb_check_stop(const char *dir, struct rebuild_check *c)
{
	const struct wal_replay_report *rep = &c->rep;
	c->keep_lsn = rep->bad_lsn ? rep->bad_lsn - 1 : 0;
	c->can_accept = rep->bad_lsn > c->from_lsn;
	if (rep->torn) {
		char after[160] = "";
		if (rep->after_frames)
			snprintf(after, sizeof after, "; the %" PRIu64 " valid records after it (LSN %" PRIu64
			         "..%" PRIu64 ") are not vouched for either", rep->after_frames,
			         rep->after_first_lsn, rep->after_last_lsn);
		snprintf(c->msg, sizeof c->msg, "torn tail at LSN %" PRIu64 " (%.400s at %.400s offset %" PRIu64
		         "): no later commit vouches for it%s", rep->bad_lsn, flash_rcname(rep->stop),
		         rep->file, rep->offset, after);
		return c->verdict = REBUILD_TORN;
	}
	char why[256];
	if (rep->proof_lsn)
		snprintf(why, sizeof why, "the commit at LSN %" PRIu64 " made it durable", rep->proof_lsn);
	else if (rep->mark_lsn >= rep->bad_lsn)
		snprintf(why, sizeof why, WAL_MARK_FILE " says every LSN through %" PRIu64 " was made "
		         "durable: LSN %" PRIu64 "..%" PRIu64 " were acknowledged", rep->mark_lsn,
		         rep->bad_lsn, rep->mark_lsn);
	else
		snprintf(why, sizeof why, "later WAL files follow it");
	char follow[128] = "";
	if (rep->after_frames)
		snprintf(follow, sizeof follow, " (LSN %" PRIu64 "..%" PRIu64 ")", rep->after_first_lsn,
		         rep->after_last_lsn);
	snprintf(c->msg, sizeof c->msg, "WAL %.400s is corrupt: first bad LSN %" PRIu64 " (%.400s: %.400s, at %.400s "
	         "offset %" PRIu64 "); %" PRIu64 " valid records follow%s; not a torn tail: %.400s", dir,
	         rep->bad_lsn, flash_rcname(rep->stop), flash_strerror(rep->stop), rep->file, rep->offset,
	         rep->after_frames, follow, why);
	return c->verdict = REBUILD_CORRUPT;
}

int rebuild_check(const char *dir, struct rebuild_check *c, plog_fn log, void *log_arg)
{
	memset(c, 0, sizeof *c);
	int v = rb_check_snapshot(dir, c, log, log_arg);
	if (v >= 0)
		return v;
	c->from_lsn = c->snap_lsn + 1;
	struct wal_replay_report *rep = &c->rep;
	/* the durable mark vouches as a later commit does (wal.h) */
	int rc = wal_replay(dir, c->from_lsn, rb_count_cb, NULL, WAL_REPLAY_MARK, rep);
	c->wal_last = rep->last_lsn;
	char miss[64];
	if (rc == FLASH_ESYS || rc == FLASH_ENOMEM || rc == FLASH_EINVAL) {
		c->err_no = rep->err_no;
		snprintf(c->msg, sizeof c->msg, "WAL %.400s unreadable: %.400s%s%s", dir, flash_strerror(rc),
		         rep->err_no ? ": " : "", rep->err_no ? pio_strerror(rep->err_no) : "");
		return c->verdict = REBUILD_EIO;
	}
	if (rc == FLASH_EWAL_GAP) {
		/* a file missing between two others, or after the snapshot */
		c->miss_first = rep->gap_first;
		c->miss_last = rep->gap_last;
		c->keep_lsn = rep->gap_first - 1;
		c->can_accept = c->keep_lsn >= c->from_lsn;
		rb_missing_file(miss, sizeof miss, rep->gap_first);
		snprintf(c->msg, sizeof c->msg, "WAL %.400s: missing LSN %" PRIu64 "..%" PRIu64 " (no file "
		         "holds them: %.400s is not there; the WAL goes on at %.400s)%s", dir, c->miss_first,
		         c->miss_last, miss, rep->file,
		         c->snap_lsn && !c->can_accept ? ": they follow the snapshot directly" : "");
		return c->verdict = REBUILD_MISSING;
	}
	/* the first LSN the WAL has where recovery starts reading: the first
	 * frame read, or the one the first stop should have held */
	uint64_t start = rep->frames > 0 ? rep->first_lsn : rc != FLASH_OK ? rep->bad_lsn : 0;
	if (start > c->from_lsn) {
		/* the first file(s) deleted: the WAL starts later than needed
		 * (whatever else is wrong further on) */
		c->miss_first = c->from_lsn;
		c->miss_last = start - 1;
		c->keep_lsn = c->snap_lsn;
		c->can_accept = 0;
		rb_missing_file(miss, sizeof miss, c->from_lsn);
		snprintf(c->msg, sizeof c->msg, "WAL %.400s: missing LSN %" PRIu64 "..%" PRIu64 ": the WAL "
		         "starts at LSN %" PRIu64 " and %.400s covers what is before it (%.400s is not there)", dir,
		         c->miss_first, c->miss_last, start,
		         c->snap_lsn ? "the snapshot no longer" : "no snapshot", miss);
		return c->verdict = REBUILD_MISSING;
	}
	if (c->snap_lsn != 0 && rep->files > 0 && rep->last_lsn < c->snap_lsn &&
	    (rc == FLASH_OK || rep->bad_lsn <= c->snap_lsn)) {
		c->keep_lsn = rep->last_lsn;
		c->can_accept = 1;
		snprintf(c->msg, sizeof c->msg, "snapshot %.400s (LSN %" PRIu64 ") is past the end of the WAL "
		         "(LSN %" PRIu64 "): LSN %" PRIu64 "..%" PRIu64 " are in the snapshot but missing "
		         "from the WAL %.400s (its end was cut, or it is an older copy)", c->snap_file,
		         c->snap_lsn, rep->last_lsn, rep->last_lsn + 1, c->snap_lsn, dir);
		return c->verdict = REBUILD_AHEAD;
	}
	if (rc == FLASH_OK && rep->mark_lsn > rep->last_lsn) {
		/* a clean end below what the WAL itself published durable: its
		 * last frames were zeroed or cut, or it is an older copy */
		c->miss_first = rep->last_lsn + 1;
		c->miss_last = rep->mark_lsn;
		c->keep_lsn = rep->last_lsn;
		c->can_accept = 1;
		snprintf(c->msg, sizeof c->msg, "WAL %.400s ends at LSN %" PRIu64 " (%.400s offset %" PRIu64
		         "), below its durable mark: %.400s/" WAL_MARK_FILE " says every LSN through %" PRIu64
		         " was made durable, and LSN %" PRIu64 "..%" PRIu64 " are in no file (the end of "
		         "the WAL was zeroed or cut, or it is an older copy); not a torn tail", dir,
		         rep->last_lsn, rep->file, rep->offset, dir, rep->mark_lsn, c->miss_first, c->miss_last);
		return c->verdict = REBUILD_SHORT;
	}
	if (rc == FLASH_OK)
		return c->verdict = REBUILD_OK;
	return rb_check_stop(dir, c);
}

/* ------------------------------------------------------------------------
 * 3. Accepting a loss
 * ------------------------------------------------------------------------ */

struct rb_drop {
	plog_fn log;
	void       *arg;
	uint64_t    next;      /* the LSN expected next (gaps are unreadable) */
	uint64_t    n;         /* records dropped */
	uint64_t    orders;
};

/* One line per dropped record, by order number; LSNs skipped over are unreadable. */
static int rb_drop_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct rb_drop *d = arg;
	if (lsn > d->next)
		plogf(d->log, d->arg, PLOG_WARN, "recover: dropped LSN %" PRIu64 "..%" PRIu64
		       ": unreadable", d->next, lsn - 1);
	if (lsn >= d->next)
		d->next = lsn + 1;
	d->n++;
	if (type == WAL_T_RECORD && len >= sizeof(struct wal_rec)) {
		struct wal_rec r;
		memcpy(&r, p, sizeof r);
		if (r.wr_rec.type == FLASH_REC_ORDER)
			d->orders++;
		plogf(d->log, d->arg, PLOG_WARN, "recover: dropped LSN %" PRIu64 ": %s, order %"
		       PRIu64 " (activity %u, sku %u, qty %u, user %" PRIu64 ")", lsn,
		       wal_rec_type_name(r.wr_rec.type, "record"), r.wr_rec.order_no, r.wr_rec.activity_id,
		       r.wr_rec.sku_id, r.wr_rec.qty, r.wr_rec.user_id);
	} else {
		plogf(d->log, d->arg, PLOG_WARN, "recover: dropped LSN %" PRIu64 ": frame type %u",
		       lsn, type);
	}
	return 0;
}

/* Snapshots past @p lsn describe the history dropped: rename them to
 * snap-<LSN>.dropped (kept for inspection, never read again). */
static int rb_set_aside_snapshots(const char *dir, uint64_t lsn, plog_fn log, void *arg)
{
	uint64_t *lsns;
	size_t n;
	if (snap_list(dir, &lsns, &n) != FLASH_OK)
		return -1;
	int rc = 0, moved = 0;
	for (size_t i = 0; i < n; i++) {
		if (lsns[i] <= lsn)
			continue;
		char from[4200], to[4200];
		snap_path(from, sizeof from, dir, lsns[i]);
		snprintf(to, sizeof to, "%s/snap-%016" PRIx64 ".dropped", dir, lsns[i]);
		if (pio_rename(from, to) != 0) {
			rc = -1;
			break;
		}
		moved++;
		plogf(log, arg, PLOG_WARN, "recover: snapshot %s (LSN %" PRIu64 ") set aside as %s: "
		       "its effects after LSN %" PRIu64 " are dropped", from, lsns[i], to, lsn);
	}
	free(lsns);
	if (moved && pio_fsync_dir(dir) != 0)
		rc = -1;
	return rc;
}

/*
 * Act on the check: refuse, or cut (a torn tail always; corruption, a gap,
 * a snapshot past the end or a WAL short of its durable mark only when the
 * loss is accepted at exactly c->keep_lsn), then check again.
 * @return 0 (c is OK now) or -1.
 */
static int rb_settle(const struct rebuild_opts *o, struct rebuild_check *c, int lockheld,
                     struct rebuild_result *r)
{
	const char *dir = o->wal_dir;
	for (int round = 0; round < 2; round++) {
		int v = rebuild_check(dir, c, o->log, o->log_arg);
		r->snap_lsn = c->snap_lsn;
		if (v == REBUILD_OK && round == 0 && o->accept_loss)
			plogf(o->log, o->log_arg, PLOG_WARN, "recover: --accept-loss-after %" PRIu64
			       ": nothing to give up, the WAL %s is whole (last LSN %" PRIu64 ")",
			       o->accept_after, dir, c->wal_last);
		if (v == REBUILD_OK)
			return 0;
		if (v == REBUILD_EIO || v == REBUILD_NOSNAP) {
			plogf(o->log, o->log_arg, PLOG_ERROR, "recover: %s", c->msg);
			r->rc = v == REBUILD_EIO ? FLASH_ESYS : FLASH_ECORRUPT;
			return -1;
		}
		int torn = v == REBUILD_TORN;
		if (!torn && !o->accept_loss) {
			plogf(o->log, o->log_arg, PLOG_ERROR, "recover: %s; nothing rebuilt, nothing "
			       "cut", c->msg);
			if (c->can_accept)
				plogf(o->log, o->log_arg, PLOG_ERROR, "recover: restore the missing or "
				       "damaged WAL files from a copy and run again, or give up every record "
				       "after LSN %" PRIu64 ": serve --recover --accept-loss-after %" PRIu64,
				       c->keep_lsn, c->keep_lsn);
			else
				plogf(o->log, o->log_arg, PLOG_ERROR, "recover: the start of the history "
				       "is missing; restore the missing WAL file(s) from a copy and run again");
			r->rc = v == REBUILD_CORRUPT ? FLASH_EWAL_NOTTAIL : v == REBUILD_MISSING ? FLASH_EWAL_GAP
			        : FLASH_ECORRUPT;
			return -1;
		}
		if (!torn && (!c->can_accept || o->accept_after != c->keep_lsn)) {
			plogf(o->log, o->log_arg, PLOG_ERROR, "recover: %s", c->msg);
			if (c->can_accept)
				plogf(o->log, o->log_arg, PLOG_ERROR, "recover: --accept-loss-after %"
				       PRIu64 " does not match: the last LSN that can be kept is %" PRIu64
				       "; nothing rebuilt, nothing cut", o->accept_after, c->keep_lsn);
			else
				plogf(o->log, o->log_arg, PLOG_ERROR, "recover: the start of the history "
				       "is missing: no --accept-loss-after can rebuild it; nothing cut");
			r->rc = c->can_accept ? FLASH_EINVAL : FLASH_ECORRUPT;
			return -1;
		}
		if (round == 1)
			break;       /* a cut did not settle it: refuse below */
		if (torn)
			plogf(o->log, o->log_arg, PLOG_WARN, "recover: %s: cutting it after LSN %" PRIu64,
			       c->msg, c->keep_lsn);
		else
			plogf(o->log, o->log_arg, PLOG_WARN, "recover: %s; --accept-loss-after %" PRIu64
			       ": dropping every record after it", c->msg, c->keep_lsn);
		if (v != REBUILD_AHEAD && v != REBUILD_SHORT) {     /* those have nothing to cut */
			struct rb_drop d = { o->log, o->log_arg, c->keep_lsn + 1, 0, 0 };
			struct wal_replay_report cr;
			int wrc = wal_cut_after(dir, c->keep_lsn, rb_drop_cb, &d,
			                        lockheld ? WAL_REPLAY_LOCKED : 0, &cr);
			if (wrc != FLASH_OK) {
				plogf(o->log, o->log_arg, PLOG_ERROR, "recover: cutting WAL %s after LSN %"
				       PRIu64 ": %s%s%s; nothing rebuilt", dir, c->keep_lsn, flash_strerror(wrc),
				       cr.err_no ? ": " : "", cr.err_no ? pio_strerror(cr.err_no) : "");
				r->rc = wrc;
				return -1;
			}
			r->dropped += d.n;
			plogf(o->log, o->log_arg, PLOG_WARN, "recover: WAL %s cut after LSN %" PRIu64
			       ": %" PRIu64 " readable records dropped (%" PRIu64 " orders), %" PRIu64
			       " bytes zeroed, %u later files removed", dir, c->keep_lsn, d.n, d.orders,
			       cr.truncated_bytes, cr.files_removed);
		}
		if (rb_set_aside_snapshots(dir, c->keep_lsn, o->log, o->log_arg) != 0) {
			plogf(o->log, o->log_arg, PLOG_ERROR, "recover: setting snapshots after LSN %"
			       PRIu64 " aside: %s", c->keep_lsn, strerror(errno));
			r->rc = FLASH_ESYS;
			return -1;
		}
		/* Last, once the WAL ends at keep_lsn: the mark says so too, or
		 * the next start would find the loss accepted here and refuse
		 * it again.  Killed before this, a run with the same LSN finds
		 * the WAL short of its mark at keep_lsn and ends the job. */
		uint64_t was;
		if (wal_mark_lower(dir, c->keep_lsn, &was) != FLASH_OK) {
			plogf(o->log, o->log_arg, PLOG_ERROR, "recover: lowering %s/" WAL_MARK_FILE
			       " to LSN %" PRIu64 ": %s; nothing rebuilt", dir, c->keep_lsn, strerror(errno));
			r->rc = FLASH_ESYS;
			return -1;
		}
		if (was > c->keep_lsn)
			plogf(o->log, o->log_arg, PLOG_WARN, "recover: %s/" WAL_MARK_FILE " lowered "
			       "from LSN %" PRIu64 " to %" PRIu64 ": LSN %" PRIu64 "..%" PRIu64 " are given up "
			       "for good", dir, was, c->keep_lsn, c->keep_lsn + 1, was);
	}
	plogf(o->log, o->log_arg, PLOG_ERROR, "recover: %s; nothing rebuilt", c->msg);
	r->rc = FLASH_ECORRUPT;
	return -1;
}

/* ------------------------------------------------------------------------
 * 4. The temporary segment
 * ------------------------------------------------------------------------ */

/*
 * Remove "<name>.recover-<pid>" segments whose process is gone (a rebuild
 * killed before its rename).  A live pid's is left alone: it is that
 * process's (the WAL lock keeps a second rebuild of the same WAL away).
 */
static void rb_remove_stale(const char *name, plog_fn log, void *arg)
{
	char pre[256];
	snprintf(pre, sizeof pre, "%s.recover-", rb_base(name));
	size_t npre = strlen(pre);
	DIR *d = pio_opendir("/dev/shm");
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = pio_readdir(d)) != NULL) {
		if (strncmp(e->d_name, pre, npre) != 0)
			continue;
		const char *p = e->d_name + npre;
		if (*p == 0 || strspn(p, "0123456789") != strlen(p))
			continue;
		long pid = strtol(p, NULL, 10);
		if (pid > 0 && pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		char seg[300];
		snprintf(seg, sizeof seg, "/%s", e->d_name);
		if (flash_seg_destroy(seg) == FLASH_OK)
			plogf(log, arg, PLOG_WARN, "recover: removed %s, the unfinished rebuild of an "
			       "earlier --recover (process %ld is gone)", seg, pid);
	}
	pio_closedir(d);
}

static void rb_shm_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "/dev/shm/%s", rb_base(name));
}

/* Is there room in /dev/shm for @p bytes more?  (A restore writes the
 * whole image at once: without room it would die of SIGBUS.) */
static int rb_room(uint64_t bytes)
{
	struct statvfs sv;
	if (statvfs("/dev/shm", &sv) != 0)
		return 1;     /* cannot tell: the reservation below still decides */
	return (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize >= bytes;
}

/* Reserve every page of segment @p name (fallocate on its shm object):
 * ENOSPC here instead of SIGBUS at the first store into an unbacked page. */
static int rb_reserve(const char *name, uint64_t *bytes)
{
	char path[300];
	rb_shm_path(path, sizeof path, name);
	int fd = pio_open(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	int rc = pio_fstat(fd, &st);
	if (rc == 0) {
		*bytes = (uint64_t)st.st_size;
		rc = pio_fallocate(fd, 0, st.st_size);
	}
	int e = errno;
	pio_close(fd);
	errno = e;
	return rc;
}

/*
 * Give the complete temporary segment its real name: over the empty
 * placeholder (checked empty again just before), or with RENAME_NOREPLACE
 * when there was none, so a segment created meanwhile is never replaced.
 */
static int rb_publish(const char *tmp, const char *name, int placeholder)
{
	char from[300], to[300];
	rb_shm_path(from, sizeof from, tmp);
	rb_shm_path(to, sizeof to, name);
	if (placeholder) {
		flash_t *h;
		int frc = flash_open(name, FLASH_RDONLY, &h);
		if (frc == FLASH_OK) {
			struct flash_stats st;
			frc = flash_stats_get(h, &st);
			flash_close(h);
			if (frc == FLASH_OK && (st.activities != 0 || st.skus != 0 || st.orders_used != 0))
				return FLASH_EEXIST;
		}
		if (frc != FLASH_OK && frc != FLASH_ENOSEG)
			return frc;
		if (pio_rename(from, to) != 0)
			return FLASH_ESYS;
		return FLASH_OK;
	}
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) != 0)
		return errno == EEXIST ? FLASH_EEXIST : FLASH_ESYS;
	return FLASH_OK;
}

/* ------------------------------------------------------------------------
 * 5. rebuild_run
 * ------------------------------------------------------------------------ */

struct rb_apply {
	flash_t              *h;
	struct rebuild_result *r;
	plog_fn           log;
	void                 *arg;
	uint64_t              last;
};

static int rb_apply_cb(void *arg, uint64_t lsn, uint16_t type, const void *p, uint32_t len)
{
	struct rb_apply *a = arg;
	if (type != WAL_T_RECORD || len < sizeof(struct wal_rec)) {
		a->last = lsn;
		return 0;
	}
	struct wal_rec r;
	memcpy(&r, p, sizeof r);
	int rc = flash_replay(a->h, &r.wr_rec);
	PERSIST_CRASH("rebuild", 3);
	if (rc == FLASH_OK) {
		a->r->applied++;
	} else if (rc == FLASH_EEXIST) {
		a->r->present++;
	} else {
		plogf(a->log, a->arg, PLOG_ERROR, "recover: LSN %" PRIu64 " (%s record, order %"
		       PRIu64 ", activity %u, sku %u) cannot be applied: %s", lsn,
		       wal_rec_type_name(r.wr_rec.type, "record"), r.wr_rec.order_no, r.wr_rec.activity_id,
		       r.wr_rec.sku_id, flash_strerror(rc));
		a->r->rc = rc;
		return 1;
	}
	a->last = lsn;
	return 0;
}

/*
 * The rebuilt segment carries its WAL's identity (serve refuses any other
 * WAL): one restored from a snapshot has it already, from the image; one
 * made fresh takes it here, after every record is applied and before the
 * rename, so nothing with the name ever holds half a history under the
 * WAL's identity.  A snapshot of another incarnation than the WAL's files
 * is refused: the two are not one history.
 */
static int rb_take_ident(flash_t *h, const struct rebuild_opts *o, const struct rebuild_check *c,
                         plog_fn log, void *la, struct rebuild_result *r)
{
	struct wal_ident wi;
	struct flash_ident id;
	int frc;

	if (wal_ident(o->wal_dir, &wi) != FLASH_OK) {
		plogf(log, la, PLOG_ERROR, "recover: WAL %s: its identity cannot be read: %s",
		       o->wal_dir, pio_strerror(errno));
		r->rc = FLASH_ESYS;
		return -1;
	}
	if (wi.wi_files == 0 || wi.wi_incarnation == 0)
		return 0;
	if ((frc = flash_ident_get(h, &id)) != FLASH_OK) {
		r->rc = frc;
		return -1;
	}
	if (id.incarnation == wi.wi_incarnation)
		return 0;
	if (c->snap_lsn != 0) {
		plogf(log, la, PLOG_ERROR, "recover: the snapshot at LSN %" PRIu64 " is of segment "
		       "incarnation %016" PRIx64 ", WAL %s of %016" PRIx64 ": a snapshot of another WAL? "
		       "nothing rebuilt", c->snap_lsn, id.incarnation, o->wal_dir, wi.wi_incarnation);
		r->rc = FLASH_ECORRUPT;
		return -1;
	}
	if ((frc = flash_ident_adopt(h, wi.wi_incarnation)) != FLASH_OK) {
		plogf(log, la, PLOG_ERROR, "recover: the rebuilt segment cannot take the identity of "
		       "WAL %s: %s", o->wal_dir, flash_strerror(frc));
		r->rc = frc;
		return -1;
	}
	plogf(log, la, PLOG_INFO, "recover: segment %s takes the identity of WAL %s "
	       "(incarnation %016" PRIx64 ")", o->segment, o->wal_dir, wi.wi_incarnation);
	return 0;
}

/*
 * Is the segment behind @p h one this WAL's rebuild (or daemon) made?  Its
 * incarnation is the WAL's: a rebuild takes it only once complete, just
 * before the rename (rb_take_ident), so a --recover run again after one
 * killed past its rename finds the work done -- recovery run twice gives
 * the same segment.
 */
static int rb_done_before(flash_t *h, const char *wal_dir)
{
	struct flash_ident id;
	struct wal_ident wi;

	return flash_ident_get(h, &id) == FLASH_OK && wal_ident(wal_dir, &wi) == FLASH_OK &&
	       wi.wi_files != 0 && wi.wi_incarnation != 0 && wi.wi_incarnation == id.incarnation;
}

/* Take the WAL directory's lock (a missing directory is an empty WAL:
 * nothing to lock; *lockfd is negative then).  @return 0, or -1 with r set. */
static int rb_lock(const struct rebuild_opts *o, int *lockfd, struct rebuild_result *r)
{
	*lockfd = wal_dir_lock(o->wal_dir);
	if (*lockfd == FLASH_ESYS && errno != ENOENT) {
		plogf(o->log, o->log_arg, PLOG_ERROR, "recover: WAL %s: cannot take its lock: %s; "
		      "nothing rebuilt", o->wal_dir, pio_strerror(errno));
		r->rc = FLASH_ESYS;
		return -1;
	}
	if (*lockfd == FLASH_EWAL_BUSY) {
		plogf(o->log, o->log_arg, PLOG_ERROR, "recover: WAL %s is in use (a serve or another "
		      "--recover holds it); nothing rebuilt", o->wal_dir);
		r->rc = FLASH_EWAL_BUSY;
		return -1;
	}
	return 0;
}

/* What the rebuild's target is: absent, or the empty placeholder `create`
 * made (its options, and its banks when it is windowed). */
struct rb_target {
	struct flash_seg_opts     so;
	struct flash_reclaim_opts ro;
	int                       placeholder, windowed;
};

/* @return 0 to rebuild, 1 when the segment carries the WAL's history already
 * (nothing to do), -1 with r set. */
static int rb_target_get(const struct rebuild_opts *o, struct rb_target *t, struct rebuild_result *r)
{
	const char *name = o->segment;
	memset(t, 0, sizeof *t);
	flash_t *h = NULL;
	int frc = flash_open(name, FLASH_RDONLY, &h);
	if (frc == FLASH_ENOSEG)
		return 0;
	if (frc == FLASH_OK) {
		struct flash_stats st;
		int done = rb_done_before(h, o->wal_dir);
		frc = flash_stats_get(h, &st);
		if (frc == FLASH_OK)
			frc = flash_seg_opts_get(h, &t->so);
		if (frc == FLASH_OK)   /* a windowed placeholder: rebuilt with its banks */
			frc = snap_reclaim_get(h, &t->ro, &t->windowed);
		flash_close(h);
		if (frc == FLASH_OK && done) {
			plogf(o->log, o->log_arg, PLOG_INFO, "recover: segment %s already carries the "
			      "history of WAL %s (an earlier --recover completed, or it was served): nothing "
			      "to rebuild", name, o->wal_dir);
			return 1;
		}
		if (frc == FLASH_OK && (st.activities != 0 || st.skus != 0 || st.orders_used != 0)) {
			plogf(o->log, o->log_arg, PLOG_ERROR, "segment %s is not empty: --recover rebuilds "
			      "only a freshly created (empty) or absent segment (if an earlier --recover "
			      "completed, the segment is rebuilt: run serve without --recover)", name);
			r->rc = FLASH_EEXIST;
			return -1;
		}
		t->placeholder = 1;
	}
	if (frc != FLASH_OK) {
		plogf(o->log, o->log_arg, PLOG_ERROR, "recover: segment %s: %s", name, flash_strerror(frc));
		r->rc = frc;
		return -1;
	}
	return 0;
}

/* Make @p tmp: restored from the check's snapshot, or created like the
 * placeholder; *bytes is the snapshot's segment size (0 when created).
 * @return 0, or -1 with r set and nothing left under @p tmp. */
static int rb_make_tmp(const struct rebuild_opts *o, const struct rebuild_check *c,
                       const struct rb_target *t, const char *tmp, uint64_t *bytes,
                       struct rebuild_result *r)
{
	plog_fn log = o->log;
	void *la = o->log_arg;
	int frc;
	*bytes = 0;
	if (c->snap_lsn != 0) {
		struct snap_file f;
		memset(&f, 0, sizeof f);
		if (snap_open_newest(o->wal_dir, c->snap_lsn, &f, NULL, NULL) != FLASH_OK ||
		    f.sf_hdr->sh_lsn != c->snap_lsn) {
			snap_file_close(&f);
			plogf(log, la, PLOG_ERROR, "recover: snapshot %s changed while in use",
			      c->snap_file);
			r->rc = FLASH_ECORRUPT;
			return -1;
		}
		*bytes = f.sf_hdr->sh_seg_bytes;
		frc = rb_room(*bytes) ? flash_seg_restore(tmp, &f.sf_hdr->sh_opts, f.sf_img, *bytes)
		                      : FLASH_ENOMEM;
		if (frc != FLASH_OK)
			plogf(log, la, PLOG_ERROR, "recover: restore of %s from %s: %s%s", tmp, f.sf_path,
			      flash_strerror(frc), frc == FLASH_ENOMEM ? " (no room in /dev/shm)" : "");
		else
			plogf(log, la, PLOG_INFO, "recover: segment %s restored from snapshot %s "
			      "(LSN %" PRIu64 ")", o->segment, f.sf_path, c->snap_lsn);
		snap_file_close(&f);
	} else {
		frc = flash_seg_create(tmp, &t->so);
		if (frc == FLASH_OK && t->windowed)
			frc = snap_reclaim_apply(tmp, &t->ro);
		if (frc == FLASH_ENOMEM)   /* create reserves every page first */
			plogf(log, la, PLOG_ERROR, "recover: no room in /dev/shm for segment %s "
			      "(creating %s: %s); nothing rebuilt, %s unchanged: free shared memory and "
			      "run again", o->segment, tmp, flash_strerror(frc), o->segment);
		else if (frc != FLASH_OK)
			plogf(log, la, PLOG_ERROR, "recover: creating %s: %s", tmp, flash_strerror(frc));
	}
	if (frc != FLASH_OK) {
		r->rc = frc;
		(void)flash_seg_destroy(tmp);
		return -1;
	}
	return 0;
}

/* Replay the WAL after the check's snapshot into @p tmp and give it the
 * WAL's identity.  @return 0, or -1 with r set. */
static int rb_fill(const struct rebuild_opts *o, const struct rebuild_check *c, const char *tmp,
                   struct rebuild_result *r)
{
	plog_fn log = o->log;
	void *la = o->log_arg;
	flash_t *h = NULL;
	int frc = flash_open(tmp, 0, &h);
	if (frc != FLASH_OK) {
		plogf(log, la, PLOG_ERROR, "recover: %s: %s", tmp, flash_strerror(frc));
		r->rc = frc;
		return -1;
	}
	struct rb_apply ap = { h, r, log, la, c->snap_lsn };
	struct wal_replay_report rep;
	int wrc = wal_replay(o->wal_dir, c->from_lsn, rb_apply_cb, &ap, 0, &rep);
	int irc = wrc == FLASH_OK ? rb_take_ident(h, o, c, log, la, r) : 0;
	flash_close(h);
	if (irc != 0)
		return -1;
	if (wrc != FLASH_OK) {
		if (wrc != FLASH_EWAL_STOPPED) {
			plogf(log, la, PLOG_ERROR, "recover: WAL %s changed while rebuilding: %s at %s "
			      "offset %" PRIu64, o->wal_dir, flash_rcname(rep.stop), rep.file, rep.offset);
			r->rc = wrc;
		} else if (r->rc == FLASH_EFULL) {
			plogf(log, la, PLOG_ERROR, "recover: a table of %s is too small for the WAL's "
			      "history: create it with its old capacities", o->segment);
		}
		return -1;
	}
	r->last_lsn = ap.last > rep.last_lsn ? ap.last : rep.last_lsn;
	return 0;
}

int rebuild_run(const struct rebuild_opts *o, struct rebuild_result *r)
{
	memset(r, 0, sizeof *r);
	if (o == NULL || o->segment == NULL || o->wal_dir == NULL || strlen(rb_base(o->segment)) > 180) {
		r->rc = FLASH_EINVAL;
		return -1;
	}
	plog_fn log = o->log;
	void *la = o->log_arg;
	const char *name = o->segment;

	/* the WAL stays ours from the check to the rename */
	int lockfd;
	if (rb_lock(o, &lockfd, r) != 0)
		return -1;
	struct rb_target t;
	int trc = rb_target_get(o, &t, r);
	if (trc != 0) {
		wal_dir_unlock(lockfd);
		return trc > 0 ? 0 : -1;
	}
	struct rebuild_check *c = malloc(sizeof *c);
	if (c == NULL) {
		r->rc = FLASH_ENOMEM;
		goto fail_unlock;
	}
	if (rb_settle(o, c, lockfd >= 0, r) != 0)
		goto fail_check;
	if (c->snap_lsn == 0 && !t.placeholder) {
		plogf(log, la, PLOG_ERROR, "recover: segment %s does not exist and WAL %s holds no "
		       "snapshot to restore it from: create it first with the options it had "
		       "(flashstock create --name %s ...), then run serve --recover again; nothing "
		       "was changed", name, o->wal_dir, name);
		r->rc = FLASH_ENOSEG;
		goto fail_check;
	}

	/* build under the temporary name */
	char tmp[256];
	snprintf(tmp, sizeof tmp, "/%s.recover-%ld", rb_base(name), (long)getpid());
	rb_remove_stale(name, log, la);
	(void)flash_seg_destroy(tmp);
	uint64_t bytes;
	if (rb_make_tmp(o, c, &t, tmp, &bytes, r) != 0)
		goto fail_check;
	PERSIST_CRASH("rebuild", 1);
	if (rb_reserve(tmp, &bytes) != 0) {
		int e = errno;
		plogf(log, la, PLOG_ERROR, "recover: no room in /dev/shm for segment %s (%" PRIu64
		       " bytes): %s; nothing rebuilt, %s unchanged: free shared memory and run again", name,
		       bytes, strerror(e), name);
		r->rc = e == ENOSPC || e == ENOMEM ? FLASH_ENOMEM : FLASH_ESYS;
		goto fail_tmp;
	}
	PERSIST_CRASH("rebuild", 2);
	if (rb_fill(o, c, tmp, r) != 0)
		goto fail_tmp;
	PERSIST_CRASH("rebuild", 4);
	int frc = rb_publish(tmp, name, t.placeholder);
	if (frc != FLASH_OK) {
		plogf(log, la, PLOG_ERROR, "recover: giving %s its name %s: %s%s", tmp, name,
		       flash_strerror(frc), frc == FLASH_EEXIST ? " (a segment of that name appeared "
		       "meanwhile and is not empty)" : "");
		r->rc = frc;
		goto fail_tmp;
	}
	PERSIST_CRASH("rebuild", 5);
	plogf(log, la, PLOG_INFO, "recover: snapshot LSN %" PRIu64 ", %" PRIu64 " records after it "
	       "applied to the segment, %" PRIu64 " were there already", c->snap_lsn, r->applied,
	       r->present);
	plogf(log, la, PLOG_INFO, "recover: segment %s rebuilt under %s and renamed, complete "
	       "through LSN %" PRIu64, name, tmp, r->last_lsn);
	free(c);
	wal_dir_unlock(lockfd);
	return 0;

fail_tmp:
	(void)flash_seg_destroy(tmp);
	plogf(log, la, PLOG_ERROR, "recover: the unfinished rebuild %s was removed; segment %s "
	       "is as it was (%s)", tmp, name, t.placeholder ? "empty" : "absent");
fail_check:
	free(c);
fail_unlock:
	wal_dir_unlock(lockfd);
	return -1;
}
