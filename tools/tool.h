/*
 * tool.h -- what the `flashstock` command's parts share: the command
 * table's entry type, every command's entry point, exit codes, and small
 * helpers for options, times and messages (tools/tool.c).  The helpers are
 * the library flashstock_tool, which the soak (tests/soak/, a test tool,
 * not a command) links too.
 *
 * Adding a command: write tools/cmd_<name>.c with
 *     int cmd_<name>(int argc, char **argv);
 * declare it below and add one line to the table in tools/flashstock.c:
 *     { "<name>", cmd_<name>, "one-line help" },
 * tools/CMakeLists.txt picks up every tools/cmd_*.c by itself.
 *
 * A command receives argv[0] = its own name.  It prints its usage to stdout
 * and returns TOOL_OK for --help, and returns one of the exit codes below.
 */
#ifndef FLASH_TOOLS_TOOL_H
#define FLASH_TOOLS_TOOL_H

#include <stdint.h>
#include <stdio.h>

#include "flashstock.h"

/* Exit codes of every command (documented in `flashstock --help`). */
#define TOOL_OK     0   /* success; for checks: no difference found */
#define TOOL_FAIL   1   /* failure, or a check found a difference */
#define TOOL_USAGE  2   /* bad command line or bad input file; nothing changed */

struct tool_cmd {
	const char *name;                    /* as typed: `flashstock <name>` */
	int (*fn)(int argc, char **argv);    /* argv[0] is the name */
	const char *help;                    /* one line for `flashstock --help` */
};

/* Commands (tools/cmd_<name>.c). */
int cmd_create(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_wal(int argc, char **argv);
int cmd_lease(int argc, char **argv);   /* tools/cmd_lease.c */
int cmd_bench(int argc, char **argv);   /* bench/cmd_bench.c (library flashstock_bench) */
int cmd_reconcile(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_feed(int argc, char **argv);
int cmd_order(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_confirm(int argc, char **argv);
int cmd_expire(int argc, char **argv);
int cmd_terms(int argc, char **argv);
int cmd_feed_to(int argc, char **argv);  /* `feed --to amqp://...`: the RabbitMQ sink (cmd_feed_to.c) */

/* ---- messages ---------------------------------------------------------- */

/** The program every message below names ("flashstock" unless set): a test
 *  tool built on these helpers sets its own, once, first thing in main(). */
void tool_prog_set(const char *prog);

/** Print "flashstock: <what>: <flash_strerror(rc)>" to stderr; @return TOOL_FAIL. */
/*
 * The signals that ask a long-running command to stop: SIGINT and SIGTERM,
 * and SIGHUP too with @p hup, run @p on_stop (which sets the flag the
 * command's loop reads); SIGPIPE is ignored, so a reader that goes away
 * makes writes fail instead of killing the command before it cleans up.
 */
void tool_stop_signals(void (*on_stop)(int), int hup);

int tool_fail(const char *what, int rc);

/** Print "flashstock: <formatted>" to stderr; @return TOOL_FAIL. */
int tool_failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * End of a command: flush and close stdout.  Output that could not all be
 * written (a full disk, /dev/full, a closed pipe with SIGPIPE ignored) must
 * not pass for complete, so a failure prints "flashstock: <cmd>: write error
 * on standard output: <reason>" (no "<cmd>: " when @p cmd is NULL).  main()
 * calls it for every command; nothing may print to stdout after it.
 * @return @p rc, or TOOL_FAIL when the output failed and @p rc was TOOL_OK.
 */
int tool_close_stdout(const char *cmd, int rc);

/** Print "flashstock <cmd>: <formatted>" and a --help hint to stderr (a
 *  program of its own, no command: @p cmd NULL); @return TOOL_USAGE. */
int tool_usage_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- option values ----------------------------------------------------- */

/** After getopt_long() (optstring starting with ':') returned '?' or ':':
 *  print which option was wrong.  @return TOOL_USAGE. */
int tool_bad_option(const char *cmd, int c, char **argv);

/** Parse a decimal unsigned integer in [min, max] given for option @p opt of
 *  command @p cmd.  @return 0, or -1 after printing a usage error. */
int tool_opt_u64(const char *cmd, const char *opt, const char *s,
                 uint64_t min, uint64_t max, uint64_t *out);
int tool_opt_u32(const char *cmd, const char *opt, const char *s,
                 uint32_t min, uint32_t max, uint32_t *out);
int tool_opt_i64(const char *cmd, const char *opt, const char *s,
                 int64_t min, int64_t max, int64_t *out);

/**
 * Check the value of --mysql of command @p cmd as the applier would parse
 * it, without connecting: a malformed URL is a bad command line, refused
 * before anything is made.  Every command that takes --mysql calls this.
 * @return 0 (well formed, or NULL: not given); -1 after printing a usage
 *         error that shows the URL with its user info masked and says why.
 */
int tool_opt_mysql_url(const char *cmd, const char *url);
/* A comma-separated list of 1..16 MySQL URLs (--lease, lease --mysql): 0, or
 * -1 after a usage message naming the bad one (its user info masked). */
int tool_opt_url_list(const char *cmd, const char *opt, const char *urls);

/**
 * A point in time for an activity window, as CLOCK_REALTIME ns:
 *   "now"; "+S" or "-S" (seconds from @p now_ns); or ISO 8601
 *   "YYYY-MM-DDTHH:MM:SS[.frac][Z|+HH:MM|-HH:MM]" (a space may replace
 *   the 'T'; no zone means UTC).
 * Times run from 1970-01-01T00:00:00Z to 2262-04-11T23:47:15Z (int64 ns).
 * @return 0, or -1 when @p s is none of these; then @p why (@p cap bytes,
 *         may be NULL) says why, in words that follow the quoted input:
 *         "'<s>' <why>" (nothing printed).
 */
int tool_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, char *why, size_t cap);

/** Format CLOCK_REALTIME ns as "YYYY-MM-DDTHH:MM:SSZ" into @p buf (>= 32). */
const char *tool_fmt_time(int64_t ns, char *buf, size_t cap);
/** ... as "YYYY-MM-DDTHH:MM:SS.mmmZ" (>= 40): a reservation's pay-by time,
 *  whose precision is the millisecond, and reservations of a few hundred ms. */
const char *tool_fmt_time_ms(int64_t ns, char *buf, size_t cap);

/** enum flash_scope <-> "activity" | "sku" | "day".  parse: -1 if unknown. */
int tool_scope_parse(const char *s);
const char *tool_scope_name(uint32_t scope);

/** Write @p s as a JSON string (quotes included, escapes as needed). */
void tool_json_str(FILE *out, const char *s);

/* The fields of a record per type, as `wal dump` and `feed` print them
 * (wal_rec_fields in persist/storage/wal.c; the names of --json, and of text where
 * activity, sku, order, user stand for activity_id, sku_id, order_no,
 * user_id), for their --help. */
#define TOOL_REC_FIELDS_HELP \
	"  order     activity_id sku_id qty (units) order_no user_id ts_ns biz_day\n" \
	"            limit_slot request_id flags (windowed segments: 0x8000 | banks);\n" \
	"            a reservation (not paid yet) also pay_by_ns\n" \
	"  cancel    activity_id sku_id qty (units given back) order_no user_id ts_ns\n" \
	"            biz_day limit_slot quota_returned (0 or 1); reservation=1 when\n" \
	"            the order was a reservation not paid\n" \
	"  confirm   a reservation paid: the order's fields without request_id and\n" \
	"            flags, pay_by_ns; ts_ns when paid\n" \
	"  expire    a reservation not paid in time: a cancel's fields, pay_by_ns\n" \
	"  (a cart)  each of its orders, cancels, confirms and expiries is one\n" \
	"            record per line: the line's sku_id and qty, the cart's order_no\n" \
	"            and other fields, and also line (0..15) and last (1 on its last\n" \
	"            line, else 0); flags and quota_returned keep their meaning\n" \
	"  restock   activity_id sku_id delta (units, + or -) ts_ns\n" \
	"  activity  activity_id start_ns end_ns limit_per_user scope flags max_qty\n" \
	"            day_offset_s version (of its terms) update (1: new terms of an\n" \
	"            activity added before: flash_activity_update, `flashstock terms`)\n" \
	"  sku       activity_id sku_id units (loaded) shards ts_ns version\n" \
	"  price     activity_id sku_id price version (the new one) ts_ns\n" \
	"  gen       table bank op (advance or clear) generation start_ns (advance) or\n" \
	"            keys_cleared (clear) ts_ns\n" \
	"  archive   activity_id orders skus shards tokens (what was reclaimed) ts_ns\n"

/* ---- clocks ------------------------------------------------------------ */

int64_t tool_realtime_ns(void);
int64_t tool_monotonic_ns(void);

#endif /* FLASH_TOOLS_TOOL_H */
