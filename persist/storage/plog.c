/* plog.c -- persist/'s one logger (plog.h). */
#include "plog.h"

#include <stdio.h>
#include <time.h>

static const char *plog_level_name[] = { "error", "warn", "info", "debug" };

void plog_v(plog_fn fn, void *arg, int level, const char *fmt, va_list ap)
{
	if (fn == NULL)
		return;
	char msg[6144];
	vsnprintf(msg, sizeof msg, fmt, ap);
	fn(arg, level, msg);
}

void plogf(plog_fn fn, void *arg, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	plog_v(fn, arg, level, fmt, ap);
	va_end(ap);
}

void plog_vline(int level, const char *prefix, const char *fmt, va_list ap)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	int lv = level < PLOG_ERROR ? PLOG_ERROR : level > PLOG_DEBUG ? PLOG_DEBUG : level;
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ serve [%s] %s%s\n",
	        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	        tm.tm_sec, ts.tv_nsec / 1000000, plog_level_name[lv], prefix, msg);
}

void plog_line(int level, const char *prefix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	plog_vline(level, prefix, fmt, ap);
	va_end(ap);
}

void plog_mysql_line(void *arg, int level, const char *msg)
{
	const int *max_level = arg;
	if (max_level != NULL && level > *max_level)
		return;
	plog_line(level > PLOG_INFO ? PLOG_INFO : level, "mysql: ", "%s", msg);
}
