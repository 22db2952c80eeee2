/*
 * notify.c -- the daemon's reports to its service manager (see notify.h).
 *
 * libsystemd's sd_notify does the protocol (the socket address forms, an
 * abstract socket, the credentials); this file decides what is sent when.
 */
#include "notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

void notify_init(struct notify *n)
{
	memset(n, 0, sizeof *n);
	const char *sock = getenv("NOTIFY_SOCKET");
	if (sock == NULL || *sock == '\0')
		return;
	n->nf_on = 1;
	uint64_t usec = 0;
	/* > 0: WATCHDOG_USEC is set and WATCHDOG_PID is unset or ours */
	if (sd_watchdog_enabled(0, &usec) > 0)
		n->nf_wd_usec = usec;
}

/* Send @p head (a line or two) and, if @p fmt, STATUS=fmt... after it. */
static void notify_send(struct notify *n, const char *head, const char *fmt, va_list ap)
{
	char status[512];
	if (!n->nf_on)
		return;
	if (fmt == NULL) {
		(void)sd_notify(0, head);
		return;
	}
	vsnprintf(status, sizeof status, fmt, ap);
	/* one line: a newline would start a field of the protocol */
	for (char *p = status; *p; p++)
		if (*p == '\n')
			*p = ' ';
	(void)sd_notifyf(0, "%s%sSTATUS=%s", head, *head ? "\n" : "", status);
}

void notify_status(struct notify *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	notify_send(n, "", fmt, ap);
	va_end(ap);
}

void notify_ready(struct notify *n, const char *fmt, ...)
{
	va_list ap;
	if (n->nf_ready)
		return;
	va_start(ap, fmt);
	notify_send(n, "READY=1", fmt, ap);
	va_end(ap);
	n->nf_ready = 1;
	n->nf_next_ms = 0;   /* the first ping at the next tick */
}

void notify_watchdog(struct notify *n, uint64_t now_ms, uint64_t sync_age_ms)
{
	if (!n->nf_on || n->nf_wd_usec == 0 || !n->nf_ready || now_ms < n->nf_next_ms)
		return;
	/* A sync at work for half the timeout: the disk does not return.
	 * No ping; the manager acts once the whole timeout has passed. */
	if (sync_age_ms * 1000 * 2 > n->nf_wd_usec)
		return;
	(void)sd_notify(0, "WATCHDOG=1");
	uint64_t every_ms = n->nf_wd_usec / 4000;
	n->nf_next_ms = now_ms + (every_ms ? every_ms : 1);
}

void notify_stopping(struct notify *n, const char *fmt, ...)
{
	va_list ap;
	if (n->nf_stopping)
		return;
	va_start(ap, fmt);
	notify_send(n, "STOPPING=1", fmt, ap);
	va_end(ap);
	n->nf_stopping = 1;
}
