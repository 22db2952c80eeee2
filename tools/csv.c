/*
 * csv.c -- the CSV reader behind `flashstock load --csv` (see csv.h).
 *
 * Divisions:
 *   1. Errors and small helpers
 *   2. csv_parse(): lines -> rows -> fields
 *   3. Typed field readers
 *
 * Every index is checked against the buffer's length before it is read;
 * nothing here assumes the input is NUL-terminated or well formed.
 */
#include "csv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * 1. Errors and small helpers
 * ------------------------------------------------------------------------ */

static void csv_seterr(struct csv_error *err, size_t line, size_t column,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void csv_seterr(struct csv_error *err, size_t line, size_t column,
                       const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	err->line = line;
	err->column = column;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

/* A printable excerpt of a field for messages: at most 32 bytes, anything
 * outside printable ASCII shown as '?'. */
static void csv_excerpt(const struct csv_field *f, char *dst, size_t cap)
{
	size_t i, n = f->len;

	if (cap == 0)
		return;
	if (n > 32)
		n = 32;
	if (n > cap - 1)
		n = cap - 1;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)f->p[i];
		dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	dst[n] = '\0';
}

static int csv_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Append one row of fields; grows both tables geometrically. */
static int csv_push_row(struct csv_doc *doc, size_t *rows_cap, size_t *fields_cap,
                        size_t line, const struct csv_field *f)
{
	size_t ncols = doc->ncols;

	if (doc->nrows == *rows_cap) {
		size_t cap = *rows_cap ? *rows_cap * 2 : 16;
		struct csv_row *r;
		if (cap < *rows_cap || cap > SIZE_MAX / sizeof *r)
			return -1;
		r = realloc(doc->rows, cap * sizeof *r);
		if (!r)
			return -1;
		doc->rows = r;
		*rows_cap = cap;
	}
	if ((doc->nrows + 1) > *fields_cap / ncols) {
		size_t cap = *fields_cap ? *fields_cap * 2 : 16 * ncols;
		struct csv_field *nf;
		if (cap < *fields_cap || cap / ncols < doc->nrows + 1 ||
		    cap > SIZE_MAX / sizeof *nf)
			return -1;
		nf = realloc(doc->fields, cap * sizeof *nf);
		if (!nf)
			return -1;
		doc->fields = nf;
		*fields_cap = cap;
	}
	memcpy(doc->fields + doc->nrows * ncols, f, ncols * sizeof *f);
	doc->rows[doc->nrows].line = line;
	doc->rows[doc->nrows].f = NULL;   /* fixed up at the end: fields may move */
	doc->nrows++;
	return 0;
}

/* ------------------------------------------------------------------------
 * 2. csv_parse()
 * ------------------------------------------------------------------------ */

/*
 * One pass over the buffer, a line at a time.  For each line: find its end
 * ('\n' or the end of the buffer), drop one '\r' before the '\n', reject
 * '"', NUL and stray '\r' (naming the field they sit in), skip blank and
 * comment lines, then split on ',' and trim.  The field array of a row is
 * built in a small scratch array sized ncols + 1 so that a row with too many
 * fields is detected without writing past it.
 */
int csv_parse(const char *buf, size_t len, size_t ncols,
              struct csv_doc *doc, struct csv_error *err)
{
	struct csv_field *scratch = NULL;
	size_t rows_cap = 0, fields_cap = 0;
	size_t pos = 0, line = 0, i;

	if (!doc) {
		csv_seterr(err, 0, 0, "no output document");
		return -1;
	}
	memset(doc, 0, sizeof *doc);
	if (ncols == 0 || ncols > CSV_COLS_MAX) {
		csv_seterr(err, 0, 0, "bad column count %zu", ncols);
		return -1;
	}
	if (!buf && len) {
		csv_seterr(err, 0, 0, "no input buffer");
		return -1;
	}
	doc->ncols = ncols;
	scratch = calloc(ncols + 1, sizeof *scratch);
	if (!scratch) {
		csv_seterr(err, 0, 0, "out of memory");
		return -1;
	}

	/* A UTF-8 byte-order mark, as spreadsheets write it, is not data. */
	if (len >= 3 && (unsigned char)buf[0] == 0xef && (unsigned char)buf[1] == 0xbb &&
	    (unsigned char)buf[2] == 0xbf)
		pos = 3;

	while (pos < len) {
		size_t start = pos, end = pos, stop, next, nf, col;

		line++;
		while (end < len && buf[end] != '\n')
			end++;
		next = end < len ? end + 1 : len;
		stop = end;
		if (stop > start && buf[stop - 1] == '\r')
			stop--;

		/* Bytes the dialect refuses, reported with their field number. */
		col = 1;
		for (i = start; i < stop; i++) {
			char c = buf[i];
			if (c == ',')
				col++;
			else if (c == '"') {
				csv_seterr(err, line, col, "quoted fields are not supported");
				goto fail;
			} else if (c == '\0') {
				csv_seterr(err, line, col, "NUL byte in input");
				goto fail;
			} else if (c == '\r') {
				csv_seterr(err, line, col, "carriage return inside a line");
				goto fail;
			}
		}

		/* Blank or comment line. */
		i = start;
		while (i < stop && csv_blank(buf[i]))
			i++;
		if (i == stop || buf[i] == '#') {
			pos = next;
			continue;
		}

		/* Split and trim. */
		nf = 0;
		i = start;
		for (;;) {
			size_t fs = i, fe;
			while (i < stop && buf[i] != ',')
				i++;
			fe = i;
			while (fs < fe && csv_blank(buf[fs]))
				fs++;
			while (fe > fs && csv_blank(buf[fe - 1]))
				fe--;
			if (nf <= ncols) {
				scratch[nf].p = buf + fs;
				scratch[nf].len = fe - fs;
			}
			nf++;
			if (i >= stop)
				break;
			i++;   /* past the ',' */
		}
		if (nf != ncols) {
			csv_seterr(err, line, nf > ncols ? ncols + 1 : nf + 1,
			           "expected %zu fields, found %zu", ncols, nf);
			goto fail;
		}
		if (csv_push_row(doc, &rows_cap, &fields_cap, line, scratch) != 0) {
			csv_seterr(err, line, 0, "out of memory");
			goto fail;
		}
		pos = next;
	}

	for (i = 0; i < doc->nrows; i++)
		doc->rows[i].f = doc->fields + i * ncols;
	free(scratch);
	return 0;

fail:
	free(scratch);
	csv_free(doc);
	return -1;
}

/*
 * Find the first row the way csv_parse() does (after a byte-order mark,
 * past blank and comment lines), count its fields, and let csv_parse() read
 * the input up to the end of that row with that many: one reader, so the
 * header is held to the same dialect, with the same line numbers, as the
 * rows after it.  A '"', NUL or stray '\r' in a line skipped here is left
 * for csv_parse() to report.
 */
int csv_parse_first(const char *buf, size_t len,
                    struct csv_doc *doc, struct csv_error *err)
{
	size_t pos = 0, line = 0;

	if (!doc) {
		csv_seterr(err, 0, 0, "no output document");
		return -1;
	}
	memset(doc, 0, sizeof *doc);
	if (!buf && len) {
		csv_seterr(err, 0, 0, "no input buffer");
		return -1;
	}
	if (len >= 3 && (unsigned char)buf[0] == 0xef && (unsigned char)buf[1] == 0xbb &&
	    (unsigned char)buf[2] == 0xbf)
		pos = 3;

	while (pos < len) {
		size_t start = pos, end = pos, stop, next, i, nf = 1;

		line++;
		while (end < len && buf[end] != '\n')
			end++;
		next = end < len ? end + 1 : len;
		stop = end;
		if (stop > start && buf[stop - 1] == '\r')
			stop--;
		i = start;
		while (i < stop && csv_blank(buf[i]))
			i++;
		if (i == stop || buf[i] == '#') {
			pos = next;
			continue;
		}
		for (i = start; i < stop; i++)
			nf += buf[i] == ',';
		if (nf > CSV_COLS_MAX) {
			csv_seterr(err, line, CSV_COLS_MAX + 1, "more than %d fields", CSV_COLS_MAX);
			return -1;
		}
		return csv_parse(buf, next, nf, doc, err);
	}
	/* no row: an empty document of width 1, as csv_parse() would give */
	return csv_parse(buf, len, 1, doc, err);
}

void csv_free(struct csv_doc *doc)
{
	if (!doc)
		return;
	free(doc->rows);
	free(doc->fields);
	memset(doc, 0, sizeof *doc);
}

int csv_header_check(const struct csv_row *row, size_t ncols,
                     const char *const *names, struct csv_error *err)
{
	size_t c;

	for (c = 0; c < ncols; c++) {
		if (!csv_field_eq(&row->f[c], names[c])) {
			char got[40];
			csv_excerpt(&row->f[c], got, sizeof got);
			csv_seterr(err, row->line, c + 1,
			           "header: expected '%s', found '%s'", names[c], got);
			return -1;
		}
	}
	return 0;
}

int csv_header_map(const struct csv_row *row, size_t ncols,
                   const char *const *names, size_t nnames,
                   size_t *map, struct csv_error *err)
{
	size_t c, k, j;

	for (c = 0; c < ncols; c++) {
		const struct csv_field *f = &row->f[c];
		char got[40];

		csv_excerpt(f, got, sizeof got);
		if (f->len == 0) {
			csv_seterr(err, row->line, c + 1, "empty column name");
			return -1;
		}
		for (k = 0; k < nnames && !csv_field_eq(f, names[k]); k++)
			;
		if (k == nnames) {
			csv_seterr(err, row->line, c + 1, "unknown column '%s'", got);
			return -1;
		}
		for (j = 0; j < c; j++) {
			if (map[j] == k) {
				csv_seterr(err, row->line, c + 1, "'%s' is also column %zu", got, j + 1);
				return -1;
			}
		}
		map[c] = k;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * 3. Typed field readers
 * ------------------------------------------------------------------------ */

/* Digits only, no sign; sets *out or says why not (overflow, bad char). */
static int csv_digits(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned d;
		if (p[i] < '0' || p[i] > '9')
			return -1;
		d = (unsigned)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -2;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int csv_field_u64(const struct csv_field *f, uint64_t min, uint64_t max,
                  uint64_t *out, size_t line, size_t column, struct csv_error *err)
{
	char ex[40];
	uint64_t v = 0;
	int rc;

	csv_excerpt(f, ex, sizeof ex);
	if (f->len == 0) {
		csv_seterr(err, line, column, "empty field, expected a number");
		return -1;
	}
	rc = csv_digits(f->p, f->len, &v);
	if (rc == -1) {
		csv_seterr(err, line, column, "not a non-negative integer: '%s'", ex);
		return -1;
	}
	if (rc == -2 || v < min || v > max) {
		csv_seterr(err, line, column, "'%s' out of range [%llu, %llu]", ex,
		           (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int csv_field_i64(const struct csv_field *f, int64_t min, int64_t max,
                  int64_t *out, size_t line, size_t column, struct csv_error *err)
{
	char ex[40];
	const char *p = f->p;
	size_t n = f->len;
	uint64_t mag = 0;
	int neg = 0, rc;
	int64_t v;

	csv_excerpt(f, ex, sizeof ex);
	if (n == 0) {
		csv_seterr(err, line, column, "empty field, expected a number");
		return -1;
	}
	if (p[0] == '-' || p[0] == '+') {
		neg = p[0] == '-';
		p++;
		n--;
	}
	rc = csv_digits(p, n, &mag);
	if (rc == -1) {
		csv_seterr(err, line, column, "not an integer: '%s'", ex);
		return -1;
	}
	if (rc == -2 || (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX))
		goto range;
	if (neg)
		v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	else
		v = (int64_t)mag;
	if (v < min || v > max)
		goto range;
	*out = v;
	return 0;
range:
	csv_seterr(err, line, column, "'%s' out of range [%lld, %lld]", ex,
	           (long long)min, (long long)max);
	return -1;
}

/* Case-insensitive compare of a field with a lower-case literal. */
static int csv_field_ieq(const struct csv_field *f, const char *s)
{
	size_t i, n = strlen(s);

	if (f->len != n)
		return 0;
	for (i = 0; i < n; i++) {
		char c = f->p[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != s[i])
			return 0;
	}
	return 1;
}

int csv_field_bool(const struct csv_field *f, int *out,
                   size_t line, size_t column, struct csv_error *err)
{
	char ex[40];

	if (csv_field_ieq(f, "1") || csv_field_ieq(f, "true") || csv_field_ieq(f, "yes")) {
		*out = 1;
		return 0;
	}
	if (csv_field_ieq(f, "0") || csv_field_ieq(f, "false") || csv_field_ieq(f, "no")) {
		*out = 0;
		return 0;
	}
	csv_excerpt(f, ex, sizeof ex);
	csv_seterr(err, line, column, "not a boolean (0/1, true/false, yes/no): '%s'", ex);
	return -1;
}

int csv_field_eq(const struct csv_field *f, const char *s)
{
	size_t n = strlen(s);

	return f->len == n && (n == 0 || memcmp(f->p, s, n) == 0);
}

int csv_field_copy(const struct csv_field *f, char *dst, size_t cap)
{
	size_t n = f->len;

	if (cap == 0)
		return -1;
	if (n > cap - 1)
		n = cap - 1;
	if (n)
		memcpy(dst, f->p, n);
	dst[n] = '\0';
	return n == f->len ? 0 : -1;
}
