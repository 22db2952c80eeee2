/*
 * fixture_run.h -- run the project's MariaDB fixture script
 * (tests/fixtures/mariadb.sh) from C: the demo, the kill loop and the
 * MySQL outage test start, halt, resume and stop their private servers
 * through it.
 */
#ifndef FLASH_FIXTURE_RUN_H
#define FLASH_FIXTURE_RUN_H

#include <stddef.h>

/*
 * Run `sh SCRIPT CMD DIR` and wait for it.  The script runs in its own
 * process group with the default dispositions of SIGINT, SIGTERM, SIGHUP and
 * SIGPIPE, so a Ctrl-C meant for the caller never kills it half-way through
 * a start.  Its stdout goes to @p out (NUL-terminated; at most @p cap - 1
 * bytes kept) when @p out is given, else to the caller's stderr; its stderr
 * is the caller's.
 * @return the script's exit status; -1 if it could not be run or was killed.
 */
int fixture_run(const char *script, const char *cmd, const char *dir, char *out, size_t cap);

/*
 * From the script's export lines (`export KEY='value'`), copy the value of
 * @p key into @p val.
 * @return 0; -1 if the key is missing or its value does not fit in @p cap.
 */
int fixture_export(const char *text, const char *key, char *val, size_t cap);

#endif /* FLASH_FIXTURE_RUN_H */
