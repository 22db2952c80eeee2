/*
 * plog.h -- persist/'s one logger.
 *
 * Every module of persist/ logs through a plog_fn its caller hands it (one
 * line, a level of enum plog_level), formats with plogf()/plog_v(), and the
 * daemon's services write their lines with plog_vline(): the daemon's stderr
 * format, "<UTC time> serve [<level>] <prefix><message>".  Nothing here keeps
 * state; a caller filters the levels it does not want.
 */
#ifndef FLASH_PLOG_H
#define FLASH_PLOG_H

#include <stdarg.h>

enum plog_level { PLOG_ERROR = 0, PLOG_WARN, PLOG_INFO, PLOG_DEBUG };

/* One line at @p level; @p arg is the caller's. */
typedef void (*plog_fn)(void *arg, int level, const char *msg);

/* Format one line and hand it to @p fn (nothing when @p fn is NULL); a line
 * longer than 6 KiB is cut. */
__attribute__((format(printf, 4, 5)))
void plogf(plog_fn fn, void *arg, int level, const char *fmt, ...);
void plog_v(plog_fn fn, void *arg, int level, const char *fmt, va_list ap);

/* One line on stderr in the daemon's format (see the file comment). */
void plog_vline(int level, const char *prefix, const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4)))
void plog_line(int level, const char *prefix, const char *fmt, ...);

/* A plog_fn writing daemon lines with the prefix "mysql: "; @p arg points at
 * the most verbose level printed (an int), or is NULL for every level. */
void plog_mysql_line(void *arg, int level, const char *msg);

#endif
