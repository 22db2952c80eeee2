/*
 * csv.h -- a small, pure CSV reader for `flashstock load --csv`.
 *
 * The reader turns a buffer into rows of fields, or into one error that
 * names the line and the column.  It knows nothing of the segment, it never
 * reads outside [buf, buf + len), and it allocates only the row and field
 * tables it returns: it is safe to hand it any bytes (it is a fuzz target).
 *
 * The dialect (what `flashstock load --help` documents):
 *   - a UTF-8 byte-order mark at the very start is skipped;
 *   - lines end in "\n" or "\r\n"; the last line may lack its end;
 *   - fields are separated by ','; spaces and tabs around a field are
 *     dropped; a field may be empty;
 *   - blank lines and lines whose first non-blank character is '#' are
 *     skipped (their line numbers still count);
 *   - quoted fields are not supported: a '"' anywhere is an error, and so
 *     are a NUL byte and a '\r' that does not end a line;
 *   - every row has exactly the number of fields the caller asks for
 *     (csv_parse_first() takes it from the first row, a header).
 *
 * Fields point into the caller's buffer and are NOT NUL-terminated; keep the
 * buffer alive as long as the rows.
 */
#ifndef FLASH_TOOLS_CSV_H
#define FLASH_TOOLS_CSV_H

#include <stddef.h>
#include <stdint.h>

struct csv_field {
	const char *p;      /* first byte, inside the parsed buffer */
	size_t      len;    /* bytes; 0 for an empty field */
};

struct csv_row {
	size_t            line;   /* 1-based line number in the input */
	struct csv_field *f;      /* the row's fields, ncols of them */
};

struct csv_doc {
	struct csv_row   *rows;    /* in input order */
	size_t            nrows;
	size_t            ncols;   /* fields per row */
	struct csv_field *fields;  /* storage for every row's fields */
};

struct csv_error {
	size_t line;       /* 1-based; 0 when the error is not about one line */
	size_t column;     /* 1-based field number; 0 when about the whole line */
	char   msg[160];   /* why, in words */
};

/**
 * Parse @p len bytes of @p buf into rows of exactly @p ncols fields.
 * @return 0 and fills @p doc (release with csv_free());
 *         -1 and fills @p err (doc is left empty) on a syntax error, a row
 *         with the wrong number of fields, ncols == 0, or out of memory.
 */
int csv_parse(const char *buf, size_t len, size_t ncols,
              struct csv_doc *doc, struct csv_error *err);

/* The most fields a row may have. */
#define CSV_COLS_MAX 4096

/**
 * Parse the first row of @p buf alone (the first line that is neither blank
 * nor a comment), with as many fields as it has: a header whose width sets
 * the width of the rows after it.  The same dialect and the same errors as
 * csv_parse(); nothing after the first row is read.
 * @return 0 and fills @p doc with that row (doc->ncols is its width), or
 *         with no row when the input has none; -1 and fills @p err (doc is
 *         left empty) on a syntax error, more than CSV_COLS_MAX fields, or
 *         out of memory.
 */
int csv_parse_first(const char *buf, size_t len,
                    struct csv_doc *doc, struct csv_error *err);

/** Release what csv_parse() allocated; safe on an empty or zeroed doc. */
void csv_free(struct csv_doc *doc);

/**
 * Check that @p row holds exactly the names @p names[0..ncols-1] (case
 * sensitive, after trimming).
 * @return 0, or -1 with @p err naming the first column that differs.
 */
int csv_header_check(const struct csv_row *row, size_t ncols,
                     const char *const *names, struct csv_error *err);

/**
 * Map a header naming some of @p names[0..nnames-1], in any order: on
 * success @p map[c] is the index in @p names of column c, for c <
 * @p ncols.  Names match exactly (case sensitive, after trimming).
 * @return 0, or -1 with @p err naming the first column that is empty, not
 *         in @p names, or names what an earlier column already named.
 * @note A row of more than @p nnames columns always fails within its first
 *       nnames + 1, so a caller may map just those into a map that long.
 */
int csv_header_map(const struct csv_row *row, size_t ncols,
                   const char *const *names, size_t nnames,
                   size_t *map, struct csv_error *err);

/* Typed field readers.  Each returns 0 and sets *out, or -1 and fills @p err
 * (line from @p line, column from @p column) with a reason.  They read only
 * f->len bytes of the field. */

/** Decimal unsigned integer in [min, max]; no sign, no spaces inside. */
int csv_field_u64(const struct csv_field *f, uint64_t min, uint64_t max,
                  uint64_t *out, size_t line, size_t column, struct csv_error *err);

/** Decimal signed integer in [min, max]; an optional leading '-' or '+'. */
int csv_field_i64(const struct csv_field *f, int64_t min, int64_t max,
                  int64_t *out, size_t line, size_t column, struct csv_error *err);

/** A boolean: 0/1, true/false, yes/no (case insensitive). */
int csv_field_bool(const struct csv_field *f, int *out,
                   size_t line, size_t column, struct csv_error *err);

/** Does the field equal the NUL-terminated @p s exactly? */
int csv_field_eq(const struct csv_field *f, const char *s);

/** Copy the field into @p dst (size @p cap, NUL-terminated, truncated if longer).
 *  @return 0, or -1 when it did not fit (dst still holds a truncated copy). */
int csv_field_copy(const struct csv_field *f, char *dst, size_t cap);

#endif /* FLASH_TOOLS_CSV_H */
