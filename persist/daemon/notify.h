/*
 * notify.h -- what the daemon tells its service manager (systemd's
 * sd_notify protocol, through libsystemd's sd_notify).
 *
 * Contract.  Nothing is sent unless the environment names a manager
 * (NOTIFY_SOCKET): run by hand or from a test, these calls do nothing.
 * Under a manager, `flashstock serve` sends, in this order:
 *   STATUS=...          while it starts (recovering, reading the WAL);
 *   READY=1 + STATUS=   once, after recovery (--recover's rebuild, the WAL
 *                       read through, a torn tail cut) AND the first drain
 *                       round: every record the rings held at start is in
 *                       the WAL, fdatasync'd and marked durable.  A unit
 *                       ordered After= the daemon starts when acknowledged
 *                       orders have a daemon, not before;
 *   WATCHDOG=1          from the drain loop, every quarter of WATCHDOG_USEC
 *                       (the manager acts after a whole one), and only while
 *                       the loop turns AND the fdatasync asked for last has
 *                       not been at work longer than half of WATCHDOG_USEC:
 *                       a drain stuck in a call, or a disk that no longer
 *                       returns from fdatasync (sync buyers wait forever),
 *                       stops the pings, and the manager restarts the
 *                       daemon -- which is the "after the daemon crashed"
 *                       restart: the same command, nothing lost;
 *   STOPPING=1          once the stop (SIGTERM, SIGINT) is seen; the daemon
 *                       then drains, syncs and exits 0.
 * The watchdog is on only when WATCHDOG_USEC is set and WATCHDOG_PID is
 * unset or this process (sd_watchdog_enabled).  The environment is left
 * as it is (the daemon starts no child that could answer in its name).
 *
 * Threads: one thread (the drain loop) owns a struct notify; no call blocks
 * longer than one sendmsg on a datagram socket, and a failed send is
 * ignored -- the manager's view is advisory, the WAL never waits on it.
 */
#ifndef FLASH_NOTIFY_H
#define FLASH_NOTIFY_H

#include <stdint.h>

struct notify {
	int      nf_on;          /* NOTIFY_SOCKET is set: send */
	uint64_t nf_wd_usec;     /* WATCHDOG_USEC for this process (0: no watchdog) */
	uint64_t nf_next_ms;     /* next WATCHDOG=1 due at (CLOCK_MONOTONIC ms) */
	int      nf_ready;       /* READY=1 sent */
	int      nf_stopping;    /* STOPPING=1 sent */
};

/* Read the environment into @p n (all zero when there is no manager). */
void notify_init(struct notify *n);

/* STATUS=@p fmt... (printf-style); nothing without a manager. */
void notify_status(struct notify *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* READY=1 with STATUS=@p fmt..., once; arms the watchdog pings. */
void notify_ready(struct notify *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The drain loop's tick at @p now_ms (CLOCK_MONOTONIC).  @p sync_age_ms:
 * how long the fdatasync asked for last has been at work (0: none at
 * work).  Sends WATCHDOG=1 when one is due, READY=1 has been sent and the
 * sync is younger than half of WATCHDOG_USEC; otherwise nothing.
 */
void notify_watchdog(struct notify *n, uint64_t now_ms, uint64_t sync_age_ms);

/* STOPPING=1 with STATUS=@p fmt..., once. */
void notify_stopping(struct notify *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* FLASH_NOTIFY_H */
