/*
 * tool.c -- helpers shared by the `flashstock` commands (see tool.h):
 * messages, option values, times, scope names, clocks.
 */
#include "tool.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mysql_apply.h"

/* ---- messages ---------------------------------------------------------- */

/* The program every message names: the command, or a test tool built on
 * these helpers (tool_prog_set). */
static const char *tool_prog = "flashstock";

void tool_prog_set(const char *prog)
{
	tool_prog = prog;
}

int tool_fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s\n", tool_prog, what, flash_strerror(rc));
	return TOOL_FAIL;
}

int tool_failf(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return TOOL_FAIL;
}

/*
 * The last write error of stdout is the one that counts: printf() to a full
 * disk fails in a flush no caller looks at, so the check is made once, at
 * the end, on the stream's error flag and on the final flush and close
 * (whatever was still buffered is written there).  errno is only trusted
 * when the final flush or close itself failed; an earlier failure is
 * reported without a reason rather than with a stale one.
 */
int tool_close_stdout(const char *cmd, int rc)
{
	errno = 0;
	int bad = fflush(stdout) != 0;
	int e = bad ? errno : 0;
	bad |= ferror(stdout) != 0;
	if (fclose(stdout) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (!bad)
		return rc;
	fprintf(stderr, "%s: %s%swrite error on standard output%s%s\n", tool_prog, cmd ? cmd : "",
	        cmd ? ": " : "", e ? ": " : "", e ? strerror(e) : "");
	return rc == TOOL_OK ? TOOL_FAIL : rc;
}

int tool_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s%s%s: ", tool_prog, cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s%s%s --help'.\n", tool_prog, cmd ? " " : "", cmd ? cmd : "");
	return TOOL_USAGE;
}

/* ---- option values ----------------------------------------------------- */

int tool_bad_option(const char *cmd, int c, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		return tool_usage_err(cmd, "option '%s' needs a value", opt);
	if (optopt && optopt != '?')
		return tool_usage_err(cmd, "unknown option '-%c'", optopt);
	return tool_usage_err(cmd, "unknown option '%s'", opt);
}

int tool_opt_mysql_url(const char *cmd, const char *url)
{
	char why[256], masked[1024];

	if (url == NULL || mdb_url_check(url, why, sizeof why) != FLASH_EMYSQL_CONFIG)
		return 0;
	mdb_url_mask(url, masked, sizeof masked);
	tool_usage_err(cmd, "--mysql: bad URL %s: %s (want mysql://user:pass@localhost/db?socket=PATH)",
	               masked, why);
	return -1;
}

int tool_opt_url_list(const char *cmd, const char *opt, const char *urls)
{
	char why[256], masked[1024], one[1024];
	unsigned n = 0;

	for (const char *p = urls; p && *p;) {
		size_t len = strcspn(p, ",");
		if (len >= sizeof one)
			return tool_usage_err(cmd, "%s: URL %u is too long", opt, n + 1);
		if (len) {
			memcpy(one, p, len);
			one[len] = 0;
			n++;
			if (mdb_url_check(one, why, sizeof why) != FLASH_OK) {
				mdb_url_mask(one, masked, sizeof masked);
				tool_usage_err(cmd, "%s: bad URL %u %s: %s (want mysql://user:pass@host:port/db"
				               "[,URL...])", opt, n, masked, why);
				return -1;
			}
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (n == 0)
		return tool_usage_err(cmd, "%s: no URL given", opt);
	if (n > 16)
		return tool_usage_err(cmd, "%s: %u URLs; at most 16", opt, n);
	return 0;
}

int tool_opt_u64(const char *cmd, const char *opt, const char *s,
                 uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0')
		goto bad;
	if (v < min || v > max) {
		tool_usage_err(cmd, "%s: %s is out of range [%llu, %llu]", opt, s,
		               (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
bad:
	tool_usage_err(cmd, "%s: not a non-negative integer: '%s'", opt, s ? s : "");
	return -1;
}

int tool_opt_u32(const char *cmd, const char *opt, const char *s,
                 uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (tool_opt_u64(cmd, opt, s, min, max, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int tool_opt_i64(const char *cmd, const char *opt, const char *s,
                 int64_t min, int64_t max, int64_t *out)
{
	long long v;
	char *end;

	if (!s || !*s)
		goto bad;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end != '\0' || isspace((unsigned char)s[0]))
		goto bad;
	if (v < min || v > max) {
		tool_usage_err(cmd, "%s: %s is out of range [%lld, %lld]", opt, s,
		               (long long)min, (long long)max);
		return -1;
	}
	*out = v;
	return 0;
bad:
	tool_usage_err(cmd, "%s: not an integer: '%s'", opt, s ? s : "");
	return -1;
}

/* ---- times ------------------------------------------------------------- */

/* Read exactly @p n digits at *p; advance.  -1 if any is not a digit. */
static int tool_ndigits(const char **p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

/* The latest whole second an activity time holds: int64 ns since 1970. */
#define TOOL_TIME_MAX_S ((int64_t)(INT64_MAX / 1000000000LL) - 1)

#define TOOL_TIME_SHAPE "is not a time (now, +S, -S or ISO 8601 such as 2026-11-11T00:00:00Z)"

/* Say why a time was refused: "<why>" follows the quoted input. */
__attribute__((format(printf, 3, 4)))
static int tool_time_why(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (why && cap) {
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/*
 * ISO 8601 in the one shape operators type: date, 'T' or ' ', time with
 * seconds, optional fraction (up to 9 digits kept), optional zone.  Fields
 * are range-checked; the date is checked by round-tripping through timegm()
 * so "2026-02-30" is refused rather than silently moved to March.
 */
static int tool_parse_iso8601(const char *s, int64_t *out_ns, char *why, size_t cap)
{
	const char *p = s;
	int Y, M, D, h, m, sec, zh = 0, zm = 0, zsign = 0;
	int64_t frac_ns = 0, scale = 100000000;
	struct tm tm;
	time_t t;

	if (tool_ndigits(&p, 4, &Y) || *p++ != '-' || tool_ndigits(&p, 2, &M) ||
	    *p++ != '-' || tool_ndigits(&p, 2, &D))
		return tool_time_why(why, cap, TOOL_TIME_SHAPE);
	if (*p != 'T' && *p != 't' && *p != ' ')
		return tool_time_why(why, cap, TOOL_TIME_SHAPE);
	p++;
	if (tool_ndigits(&p, 2, &h) || *p++ != ':' || tool_ndigits(&p, 2, &m) ||
	    *p++ != ':' || tool_ndigits(&p, 2, &sec))
		return tool_time_why(why, cap, TOOL_TIME_SHAPE " (the seconds are required)");
	if (*p == '.' || *p == ',') {
		p++;
		if (!isdigit((unsigned char)*p))
			return tool_time_why(why, cap, TOOL_TIME_SHAPE);
		while (isdigit((unsigned char)*p)) {
			frac_ns += (*p - '0') * scale;
			scale /= 10;
			p++;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		zsign = *p == '-' ? -1 : 1;
		p++;
		if (tool_ndigits(&p, 2, &zh))
			return tool_time_why(why, cap, TOOL_TIME_SHAPE);
		if (*p == ':')
			p++;
		if (tool_ndigits(&p, 2, &zm))
			return tool_time_why(why, cap, TOOL_TIME_SHAPE);
		if (zh > 23 || zm > 59)
			return tool_time_why(why, cap, "has a zone offset beyond +-23:59");
	}
	if (*p != '\0')
		return tool_time_why(why, cap, TOOL_TIME_SHAPE " (unexpected '%.8s' at the end)", p);
	if (M < 1 || M > 12)
		return tool_time_why(why, cap, "has month %02d (01..12)", M);
	if (D < 1 || D > 31)
		return tool_time_why(why, cap, "has day %02d (01..31)", D);
	if (h > 23 || m > 59 || sec > 60)
		return tool_time_why(why, cap, "has time of day %02d:%02d:%02d (00:00:00..23:59:60)",
		                     h, m, sec);

	memset(&tm, 0, sizeof tm);
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1 || tm.tm_mday != D || tm.tm_mon != M - 1)
		return tool_time_why(why, cap, "names no such day (%04d-%02d has no day %02d)", Y, M, D);
	t -= (time_t)zsign * (zh * 3600 + zm * 60);
	if (t < 0)
		return tool_time_why(why, cap, "is before 1970-01-01T00:00:00Z, the earliest time "
		                     "flashstock holds");
	if (t > (time_t)TOOL_TIME_MAX_S) {
		char last[40];
		return tool_time_why(why, cap, "is after %s, the latest time flashstock holds "
		                     "(nanoseconds since 1970 in 64 bits)",
		                     tool_fmt_time(TOOL_TIME_MAX_S * 1000000000LL, last, sizeof last));
	}
	*out_ns = (int64_t)t * 1000000000LL + frac_ns;
	return 0;
}

int tool_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, char *why, size_t cap)
{
	if (!s || !*s)
		return tool_time_why(why, cap, TOOL_TIME_SHAPE);
	if (strcmp(s, "now") == 0) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '+' || s[0] == '-') {
		long long v;
		char *end;
		if (!isdigit((unsigned char)s[1]))
			return tool_time_why(why, cap, TOOL_TIME_SHAPE);
		errno = 0;
		v = strtoll(s + 1, &end, 10);
		if (*end != '\0')
			return tool_time_why(why, cap, TOOL_TIME_SHAPE " (+S and -S are whole seconds)");
		/* bounded to 100 years either way: no overflow below */
		if (errno || v > 100LL * 366 * 86400)
			return tool_time_why(why, cap, "is more than 100 years from now");
		*out_ns = now_ns + (s[0] == '-' ? -v : v) * 1000000000LL;
		return 0;
	}
	return tool_parse_iso8601(s, out_ns, why, cap);
}

const char *tool_fmt_time(int64_t ns, char *buf, size_t cap)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	if (ns < 0 || !gmtime_r(&t, &tm) ||
	    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, cap, "@%lld", (long long)ns);
	return buf;
}

const char *tool_fmt_time_ms(int64_t ns, char *buf, size_t cap)
{
	char s[40];
	size_t n = strlen(tool_fmt_time(ns, s, sizeof s));

	if (n == 0 || s[n - 1] != 'Z')
		snprintf(buf, cap, "%s", s);
	else
		snprintf(buf, cap, "%.*s.%03dZ", (int)(n - 1), s, (int)(ns / 1000000 % 1000));
	return buf;
}

int tool_scope_parse(const char *s)
{
	if (strcmp(s, "activity") == 0)
		return FLASH_SCOPE_ACTIVITY;
	if (strcmp(s, "sku") == 0)
		return FLASH_SCOPE_SKU;
	if (strcmp(s, "day") == 0)
		return FLASH_SCOPE_DAY;
	return -1;
}

const char *tool_scope_name(uint32_t scope)
{
	switch (scope) {
	case FLASH_SCOPE_ACTIVITY: return "activity";
	case FLASH_SCOPE_SKU:      return "sku";
	case FLASH_SCOPE_DAY:      return "day";
	default:                   return "unknown";
	}
}

void tool_json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* ---- clocks ------------------------------------------------------------ */

int64_t tool_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t tool_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void tool_stop_signals(void (*on_stop)(int), int hup)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (hup)
		sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
