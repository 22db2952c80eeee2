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
	{ FLASH_EMYSQL_RETRY, "FLASH_EMYSQL_RETRY", "MySQL down, slow or busy: nothing applied, retry" },
	{ FLASH_EMYSQL, "FLASH_EMYSQL", "MySQL refused a statement" },
	{ FLASH_EMYSQL_CONFIG, "FLASH_EMYSQL_CONFIG", "bad MySQL URL or option file, or access denied" },
	{ FLASH_EMYSQL_GAP, "FLASH_EMYSQL_GAP", "records missing between the applied LSN and a batch" },
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
