/*
 * flashstock.c -- the API layer: the result codes and their names, and the
 * checks of arguments that need nothing but the public header
 * (flash_activity_check).  It includes flashstock.h only: the engine
 * (engine/) includes the public header and does the work, this file knows
 * nothing of the segment -- no include or call goes from here into engine/.
 * The checks that read the handle (fs_enter) are the engine's: enter.c.
 */
/* engine/fs.h refuses to be included here (the cycle stays gone) */
#define FLASH_API_LAYER 1

#include <stddef.h>

#include "flashstock.h"

static const struct {
	int rc;
	const char *name;
	const char *text;
} rc_table[] = {
	{ FLASH_OK, "FLASH_OK", "success" },
	{ FLASH_ESOLD_OUT, "FLASH_ESOLD_OUT", "sold out" },
	{ FLASH_ELIMIT, "FLASH_ELIMIT", "per-user limit reached" },
	{ FLASH_ENOT_STARTED, "FLASH_ENOT_STARTED", "activity has not started" },
	{ FLASH_EENDED, "FLASH_EENDED", "activity has ended" },
	{ FLASH_ENOT_FOUND, "FLASH_ENOT_FOUND", "not found" },
	{ FLASH_EBAD_TOKEN, "FLASH_EBAD_TOKEN", "token missing, unknown, expired or already used" },
	{ FLASH_EDUPLICATE, "FLASH_EDUPLICATE", "duplicate request id (first outcome returned)" },
	{ FLASH_EFULL, "FLASH_EFULL", "table full" },
	{ FLASH_EINVAL, "FLASH_EINVAL", "invalid argument" },
	{ FLASH_EDURABILITY, "FLASH_EDURABILITY", "durability failed: the WAL cannot be written" },
	{ FLASH_EEXIST, "FLASH_EEXIST", "already exists" },
	{ FLASH_ENOSEG, "FLASH_ENOSEG", "no such segment" },
	{ FLASH_EOWNER, "FLASH_EOWNER", "segment is owned by another user" },
	{ FLASH_EMODE, "FLASH_EMODE", "segment has an unsafe or unexpected mode" },
	{ FLASH_ESIZE, "FLASH_ESIZE", "segment size does not match its header" },
	{ FLASH_EMAGIC, "FLASH_EMAGIC", "not a flashstock segment (bad magic)" },
	{ FLASH_EVERSION, "FLASH_EVERSION", "unsupported segment layout version" },
	{ FLASH_ECHECKSUM, "FLASH_ECHECKSUM", "segment header checksum mismatch" },
	{ FLASH_ELAYOUT, "FLASH_ELAYOUT", "segment region table is invalid" },
	{ FLASH_ECORRUPT, "FLASH_ECORRUPT", "segment data out of bounds (corrupt)" },
	{ FLASH_EREADONLY, "FLASH_EREADONLY", "handle is read-only" },
	{ FLASH_EFORK, "FLASH_EFORK", "handle used in a process other than its opener" },
	{ FLASH_ECANCELLED, "FLASH_ECANCELLED", "order already cancelled" },
	{ FLASH_ELOCKED, "FLASH_ELOCKED", "lock held by another owner" },
	{ FLASH_ENOT_OWNER, "FLASH_ENOT_OWNER", "lock not held by this owner" },
	{ FLASH_EBUSY, "FLASH_EBUSY",
	  "busy: record ring full, request in flight, or another live handle is the segment's consumer" },
	{ FLASH_ENOPROC, "FLASH_ENOPROC", "process table full" },
	{ FLASH_EPERM, "FLASH_EPERM", "permission denied" },
	{ FLASH_ENOMEM, "FLASH_ENOMEM", "out of memory" },
	{ FLASH_ESYS, "FLASH_ESYS", "system call failed" },
	{ FLASH_EWRONG_THREAD, "FLASH_EWRONG_THREAD", "handle used from a thread other than its owner" },
	{ FLASH_ENOTREG, "FLASH_ENOTREG", "not a regular file (a FIFO, directory or device has the segment's name)" },
	{ FLASH_EFATE_UNKNOWN, "FLASH_EFATE_UNKNOWN",
	  "not durable within the wait bound: the operation's fate is not known yet (wait again, or look it up by order number)" },
	{ FLASH_EREQ_EXPIRED, "FLASH_EREQ_EXPIRED",
	  "request id older than the window: its first outcome is no longer remembered; look the order up (flashstock order --request-id, MariaDB)" },
	{ FLASH_EARCHIVED, "FLASH_EARCHIVED",
	  "archived: the activity was reclaimed; its orders are in MariaDB and the WAL, and its id is not used again" },
	{ FLASH_ENOT_ENDED, "FLASH_ENOT_ENDED", "activity not ended yet: it cannot be archived" },
	{ FLASH_EDESTROYED, "FLASH_EDESTROYED",
	  "the segment was destroyed: nothing is acknowledged into it any more; close the handle" },
	{ FLASH_EEXPIRED, "FLASH_EEXPIRED",
	  "reservation expired unpaid: its units (and, per the activity, its limit slot) went back" },
	{ FLASH_ENOT_DUE, "FLASH_ENOT_DUE", "reservation not due: its pay-by time has not come" },
	{ FLASH_ECONFIRMED, "FLASH_ECONFIRMED", "order is ACTIVE (paid, or never a reservation): it does not expire" },
	{ FLASH_ESTALE, "FLASH_ESTALE",
	  "the terms changed since the version the buyer saw: nothing taken; show the new terms" },
	{ FLASH_EMYSQL_RETRY, "FLASH_EMYSQL_RETRY", "MySQL down, slow or busy: nothing applied, retry" },
	{ FLASH_EMYSQL, "FLASH_EMYSQL", "MySQL refused a statement" },
	{ FLASH_EMYSQL_CONFIG, "FLASH_EMYSQL_CONFIG", "bad MySQL URL or option file, or access denied" },
	{ FLASH_EMYSQL_GAP, "FLASH_EMYSQL_GAP", "records missing between the applied LSN and a batch" },
	{ FLASH_EWAL_ZERO_LEN, "FLASH_EWAL_ZERO_LEN", "frame length 0 where data follows" },
	{ FLASH_EWAL_SHORT, "FLASH_EWAL_SHORT", "frame length shorter than its type requires" },
	{ FLASH_EWAL_PAST_END, "FLASH_EWAL_PAST_END", "frame runs past the end of the file" },
	{ FLASH_EWAL_LONG, "FLASH_EWAL_LONG", "frame length above the maximum" },
	{ FLASH_EWAL_MAGIC, "FLASH_EWAL_MAGIC", "WAL file header: bad magic" },
	{ FLASH_EWAL_FILE_HDR, "FLASH_EWAL_FILE_HDR",
	  "WAL file header: bad version, size, checksum or start LSN" },
	{ FLASH_EWAL_CRC, "FLASH_EWAL_CRC", "frame CRC-32C mismatch" },
	{ FLASH_EWAL_LSN, "FLASH_EWAL_LSN", "frame LSN not consecutive" },
	{ FLASH_EWAL_PREV, "FLASH_EWAL_PREV", "frame previous-LSN does not match" },
	{ FLASH_EWAL_GAP, "FLASH_EWAL_GAP", "WAL files not contiguous, or the requested LSN is gone" },
	{ FLASH_EWAL_NOTTAIL, "FLASH_EWAL_NOTTAIL", "bad frame that is not a torn tail (a later commit, a later WAL "
	  "file or the durable mark vouches for it): corruption, not truncated" },
	{ FLASH_EWAL_TORN, "FLASH_EWAL_TORN", "last WAL file has a torn tail: replay with truncation first" },
	{ FLASH_EWAL_FAILED, "FLASH_EWAL_FAILED",
	  "the WAL failed earlier (write or fdatasync); nothing more is durable" },
	{ FLASH_EWAL_STOPPED, "FLASH_EWAL_STOPPED", "replay stopped by its callback" },
	{ FLASH_EWAL_BUSY, "FLASH_EWAL_BUSY", "the WAL directory is locked by another writer" },
	{ FLASH_EWAL_TYPE, "FLASH_EWAL_TYPE", "frame of an unknown type" },
	{ FLASH_EWAL_IDENT, "FLASH_EWAL_IDENT", "the WAL belongs to another segment incarnation" },
	{ FLASH_ESNAP_CORRUPT, "FLASH_ESNAP_CORRUPT",
	  "snapshot file corrupt (magic, version, size, offsets or CRC)" },
	{ FLASH_ESNAP_NOENT, "FLASH_ESNAP_NOENT", "no valid snapshot" },
	{ FLASH_ESNAP_GAP, "FLASH_ESNAP_GAP",
	  "the WAL does not continue the snapshot (records missing between them)" },
	{ FLASH_ESNAP_FAILED, "FLASH_ESNAP_FAILED", "snapshots failed earlier and are off" },
	{ FLASH_ESNAP_SEGMENT, "FLASH_ESNAP_SEGMENT", "the segment refused the snapshot" },
	{ FLASH_ESNAP_NOTEMPTY, "FLASH_ESNAP_NOTEMPTY", "recover: the segment exists and is not empty" },
	{ FLASH_ETIMEOUT, "FLASH_ETIMEOUT", "feed: no durable record arrived within the wait" },
	{ FLASH_ELOST, "FLASH_ELOST",
	  "feed: WAL retention removed records the consumer had not committed (open it with a MariaDB refill URL)" },
	{ FLASH_EAHEAD, "FLASH_EAHEAD", "feed: the consumer's position is past the WAL's durable end" },
	{ FLASH_EFEED_IDENT, "FLASH_EFEED_IDENT",
	  "feed: the WAL belongs to another segment incarnation than the consumer's" },
	{ FLASH_EREFILL, "FLASH_EREFILL", "feed: MariaDB has not applied the lost range: the refill cannot cover it" },
	{ FLASH_EAMQP_RETRY, "FLASH_EAMQP_RETRY",
	  "RabbitMQ down, slow or it refused a message: re-send from the confirmed position" },
	{ FLASH_EAMQP, "FLASH_EAMQP", "RabbitMQ refused a declare" },
	{ FLASH_EAMQP_CONFIG, "FLASH_EAMQP_CONFIG", "bad AMQP URL or option, or RabbitMQ login refused" },
	{ FLASH_EFENCED, "FLASH_EFENCED", "lease: the box's epoch is stale or fenced; MariaDB refused" },
	{ FLASH_ELEASE, "FLASH_ELEASE", "lease: unknown or closed lease, or a return larger than it holds" },
};

const char *flash_strerror(int rc)
{
	for (size_t i = 0; i < sizeof(rc_table) / sizeof(rc_table[0]); i++)
		if (rc_table[i].rc == rc)
			return rc_table[i].text;
	return "unknown result code";
}

const char *flash_rcname(int rc)
{
	for (size_t i = 0; i < sizeof(rc_table) / sizeof(rc_table[0]); i++)
		if (rc_table[i].rc == rc)
			return rc_table[i].name;
	return "FLASH_E?";
}

/* What flash_durability_get() reports, in the words `status` and the daemon use. */
const char *flash_wal_step_str(uint32_t step)
{
	static const char *const what[] = {
		[FLASH_WAL_STEP_UNKNOWN] = "the WAL failed (no reason recorded)",
		[FLASH_WAL_STEP_WRITE]   = "a write to the WAL file failed",
		[FLASH_WAL_STEP_SYNC]    = "an fdatasync of the WAL failed",
		[FLASH_WAL_STEP_FILE]    = "creating the next WAL file failed",
	};
	return step < sizeof(what) / sizeof(what[0]) ? what[step] : what[FLASH_WAL_STEP_UNKNOWN];
}

/* ------------------------------------------------------------ argument checks */

/* The one definition of a valid activity: flash_activity_add() and the
 * tools that check an input before loading it both ask here. */
int flash_activity_check(const struct flash_activity *a)
{
	if (a == NULL || a->id == 0 || a->limit_per_user == 0 || a->limit_per_user > FLASH_LIMIT_MAX ||
	    a->max_qty == 0 || a->max_qty > FLASH_QTY_MAX || a->scope > FLASH_SCOPE_DAY ||
	    (a->flags & ~(FLASH_ACT_CANCEL_RETURNS_QUOTA | FLASH_ACT_TOKEN_REQUIRED)) != 0 ||
	    a->end_ns <= a->start_ns || a->day_offset_s < -FLASH_DAY_OFFSET_MAX_S ||
	    a->day_offset_s > FLASH_DAY_OFFSET_MAX_S)
		return FLASH_EINVAL;
	return FLASH_OK;
}

/* ---- observation: names and bucket bounds (flash_obs_get is the engine's) ---- */

uint64_t flash_obs_bucket_le_ns(unsigned b)
{
	if (b + 1 >= FLASH_OBS_BUCKETS)
		return UINT64_MAX;
	return 1ull << (b + 6);
}

const char *flash_op_name(unsigned op)
{
	static const char *const names[FLASH_TIMES] = {
		[FLASH_OP_ORDER] = "order",
		[FLASH_OP_CANCEL] = "cancel",
		[FLASH_OP_RESTOCK] = "restock",
		[FLASH_OP_TOKEN_ISSUE] = "token_issue",
		[FLASH_OP_TOKEN_REDEEM] = "token_redeem",
		[FLASH_OP_LOCK_ACQUIRE] = "lock_acquire",
		[FLASH_OP_LOCK_RENEW] = "lock_renew",
		[FLASH_OP_LOCK_RELEASE] = "lock_release",
		[FLASH_TIME_LOCK_WAIT] = "lock_wait",
		[FLASH_TIME_LOCK_HOLD] = "lock_hold",
	};

	return op < FLASH_TIMES ? names[op] : "?";
}
