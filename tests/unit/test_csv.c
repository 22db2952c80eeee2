/*
 * test_csv.c -- the CSV reader of `flashstock load --csv` (tools/csv.c):
 * exact rows and fields for good input, exact line/column for each kind of
 * bad input, and bounds on every prefix of a tricky buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "csv.h"

/* Does field c of row r hold exactly s? */
static void assert_field(const struct csv_doc *d, size_t r, size_t c, const char *s)
{
	assert_true(r < d->nrows);
	assert_true(c < d->ncols);
	assert_int_equal(d->rows[r].f[c].len, strlen(s));
	assert_memory_equal(d->rows[r].f[c].p, s, strlen(s));
}

static void test_csv_parses_rows_fields_and_line_numbers(void **state)
{
	const char in[] = "a,b,c\n1,2,3\n\n# comment, with commas\n  4 ,\t5\t, 6\n";
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse(in, strlen(in), 3, &d, &e), 0);
	assert_int_equal(d.nrows, 3);
	assert_int_equal(d.rows[0].line, 1);
	assert_int_equal(d.rows[1].line, 2);
	assert_int_equal(d.rows[2].line, 5);
	assert_field(&d, 0, 0, "a");
	assert_field(&d, 0, 2, "c");
	assert_field(&d, 1, 1, "2");
	assert_field(&d, 2, 0, "4");
	assert_field(&d, 2, 1, "5");
	assert_field(&d, 2, 2, "6");
	csv_free(&d);
}

static void test_csv_accepts_crlf_and_missing_last_newline(void **state)
{
	const char in[] = "x,y\r\n1,\r\n,2";
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse(in, strlen(in), 2, &d, &e), 0);
	assert_int_equal(d.nrows, 3);
	assert_field(&d, 1, 0, "1");
	assert_field(&d, 1, 1, "");
	assert_field(&d, 2, 0, "");
	assert_field(&d, 2, 1, "2");
	assert_int_equal(d.rows[2].line, 3);
	csv_free(&d);
}

static void test_csv_skips_a_leading_byte_order_mark_only(void **state)
{
	const char in[] = "\xef\xbb\xbf" "id,n\n" "\xef\xbb\xbf" "1,2\n";
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse(in, strlen(in), 2, &d, &e), 0);
	assert_int_equal(d.nrows, 2);
	assert_field(&d, 0, 0, "id");
	assert_field(&d, 1, 0, "\xef\xbb\xbf" "1");   /* not at the start: data */
	csv_free(&d);
}

static void test_csv_empty_input_has_no_rows(void **state)
{
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse("", 0, 4, &d, &e), 0);
	assert_int_equal(d.nrows, 0);
	csv_free(&d);
	assert_int_equal(csv_parse(NULL, 0, 4, &d, &e), 0);
	assert_int_equal(d.nrows, 0);
	csv_free(&d);
}

/* Parse @p in expecting failure at (line, column) with @p needle in the message. */
static void expect_error(const char *in, size_t len, size_t ncols,
                         size_t line, size_t column, const char *needle)
{
	struct csv_doc d;
	struct csv_error e;

	memset(&e, 0, sizeof e);
	assert_int_equal(csv_parse(in, len, ncols, &d, &e), -1);
	assert_int_equal(d.nrows, 0);
	assert_null(d.rows);
	assert_int_equal(e.line, line);
	assert_int_equal(e.column, column);
	assert_non_null(strstr(e.msg, needle));
}

static void test_csv_wrong_field_count_names_line_and_column(void **state)
{
	(void)state;
	expect_error("a,b,c\n1,2\n", 10, 3, 2, 3, "expected 3 fields, found 2");
	expect_error("a,b,c\n1,2,3\n1,2,3,4,5\n", 22, 3, 3, 4, "expected 3 fields, found 5");
	expect_error("a,b,c\n1,2,3,\n", 13, 3, 2, 4, "found 4");
}

static void test_csv_rejects_quotes_nul_and_stray_cr(void **state)
{
	(void)state;
	expect_error("a,b\n1,\"2\"\n", 10, 2, 2, 2, "quoted fields are not supported");
	expect_error("a,b\n1\0,2\n", 8, 2, 2, 1, "NUL byte");
	expect_error("a,b\n1,2\r3\n", 10, 2, 2, 2, "carriage return");
	/* "\r\r\n": one '\r' is the line end, the other is stray */
	expect_error("a,b\r\r\n", 6, 2, 1, 2, "carriage return");
}

static void test_csv_rejects_bad_column_count_argument(void **state)
{
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse("a\n", 2, 0, &d, &e), -1);
	assert_int_equal(e.line, 0);
}

static void test_csv_header_check_names_first_differing_column(void **state)
{
	static const char *const names[3] = { "id", "qty", "scope" };
	const char in[] = "id, qty ,scop\n";
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse(in, strlen(in), 3, &d, &e), 0);
	assert_int_equal(csv_header_check(&d.rows[0], 3, names, &e), -1);
	assert_int_equal(e.line, 1);
	assert_int_equal(e.column, 3);
	assert_non_null(strstr(e.msg, "expected 'scope', found 'scop'"));
	csv_free(&d);
}

static void test_csv_parse_first_takes_the_width_of_the_first_row_only(void **state)
{
	/* a BOM, a comment and a blank line before the header; a row after it
	 * that csv_parse() would refuse is not read */
	const char in[] = "\xef\xbb\xbf# warm-up\n\r\n a , b,c\r\n1,\"2\"\n";
	struct csv_doc d;
	struct csv_error e;

	(void)state;
	assert_int_equal(csv_parse_first(in, strlen(in), &d, &e), 0);
	assert_int_equal(d.nrows, 1);
	assert_int_equal(d.ncols, 3);
	assert_int_equal(d.rows[0].line, 3);
	assert_field(&d, 0, 0, "a");
	assert_field(&d, 0, 1, "b");
	assert_field(&d, 0, 2, "c");
	csv_free(&d);
	assert_int_equal(csv_parse_first("x\n", 2, &d, &e), 0);
	assert_int_equal(d.ncols, 1);
	csv_free(&d);
}

static void test_csv_parse_first_of_no_rows_is_empty_and_errors_are_csv_parse_s(void **state)
{
	struct csv_doc d;
	struct csv_error e;
	char *wide;
	size_t i;

	(void)state;
	assert_int_equal(csv_parse_first("", 0, &d, &e), 0);
	assert_int_equal(d.nrows, 0);
	csv_free(&d);
	assert_int_equal(csv_parse_first("# c\n\n  \n", 8, &d, &e), 0);
	assert_int_equal(d.nrows, 0);
	csv_free(&d);
	/* a quote in a comment before the header, and in the header */
	assert_int_equal(csv_parse_first("#\"\na\n", 5, &d, &e), -1);
	assert_int_equal(e.line, 1);
	assert_int_equal(csv_parse_first("\na,\"b\"\n", 7, &d, &e), -1);
	assert_int_equal(e.line, 2);
	assert_int_equal(e.column, 2);
	assert_null(d.rows);
	/* CSV_COLS_MAX + 1 fields */
	wide = malloc(CSV_COLS_MAX + 1);
	assert_non_null(wide);
	for (i = 0; i < CSV_COLS_MAX; i++)
		wide[i] = ',';
	wide[CSV_COLS_MAX] = '\n';
	assert_int_equal(csv_parse_first(wide, CSV_COLS_MAX + 1, &d, &e), -1);
	assert_int_equal(e.line, 1);
	assert_int_equal(e.column, CSV_COLS_MAX + 1);
	free(wide);
}

static void test_csv_header_map_any_order_and_each_bad_name(void **state)
{
	static const char *const names[4] = { "id", "qty", "scope", "note" };
	const char in[] = "scope, id ,qty\nid,qty,id\nid,,qty\nid,Qty\n";
	struct csv_doc d;
	struct csv_error e;
	size_t map[4];

	(void)state;
	assert_int_equal(csv_parse(in, 14, 3, &d, &e), 0);
	assert_int_equal(csv_header_map(&d.rows[0], 3, names, 4, map, &e), 0);
	assert_int_equal(map[0], 2);
	assert_int_equal(map[1], 0);
	assert_int_equal(map[2], 1);
	csv_free(&d);

	assert_int_equal(csv_parse(in + 15, 18, 3, &d, &e), 0);
	assert_int_equal(csv_header_map(&d.rows[0], 3, names, 4, map, &e), -1);
	assert_int_equal(e.column, 3);
	assert_non_null(strstr(e.msg, "'id' is also column 1"));
	assert_int_equal(csv_header_map(&d.rows[1], 3, names, 4, map, &e), -1);
	assert_int_equal(e.line, 2);
	assert_int_equal(e.column, 2);
	assert_non_null(strstr(e.msg, "empty column name"));
	csv_free(&d);

	assert_int_equal(csv_parse(in + 33, 7, 2, &d, &e), 0);
	assert_int_equal(csv_header_map(&d.rows[0], 2, names, 4, map, &e), -1);
	assert_int_equal(e.column, 2);
	assert_non_null(strstr(e.msg, "unknown column 'Qty'"));
	csv_free(&d);
}

static struct csv_field fld(const char *s)
{
	struct csv_field f = { s, strlen(s) };
	return f;
}

static void test_csv_u64_reads_ranges_and_rejects_junk(void **state)
{
	struct csv_field f;
	struct csv_error e;
	uint64_t v = 7;

	(void)state;
	f = fld("18446744073709551615");
	assert_int_equal(csv_field_u64(&f, 0, UINT64_MAX, &v, 4, 2, &e), 0);
	assert_true(v == UINT64_MAX);
	f = fld("18446744073709551616");
	assert_int_equal(csv_field_u64(&f, 0, UINT64_MAX, &v, 4, 2, &e), -1);
	assert_non_null(strstr(e.msg, "out of range"));
	assert_int_equal(e.line, 4);
	assert_int_equal(e.column, 2);
	f = fld("12x");
	assert_int_equal(csv_field_u64(&f, 0, 100, &v, 1, 1, &e), -1);
	assert_non_null(strstr(e.msg, "not a non-negative integer: '12x'"));
	f = fld("-1");
	assert_int_equal(csv_field_u64(&f, 0, 100, &v, 1, 1, &e), -1);
	f = fld("");
	assert_int_equal(csv_field_u64(&f, 0, 100, &v, 1, 1, &e), -1);
	assert_non_null(strstr(e.msg, "empty field"));
	f = fld("0");
	assert_int_equal(csv_field_u64(&f, 1, 100, &v, 1, 1, &e), -1);
	f = fld("101");
	assert_int_equal(csv_field_u64(&f, 1, 100, &v, 1, 1, &e), -1);
	f = fld("100");
	assert_int_equal(csv_field_u64(&f, 1, 100, &v, 1, 1, &e), 0);
	assert_int_equal(v, 100);
	/* only len bytes are read: "5" out of "59" */
	f.p = "59";
	f.len = 1;
	assert_int_equal(csv_field_u64(&f, 0, 100, &v, 1, 1, &e), 0);
	assert_int_equal(v, 5);
}

static void test_csv_i64_and_bool(void **state)
{
	struct csv_field f;
	struct csv_error e;
	int64_t v = 0;
	int b = -1;

	(void)state;
	f = fld("-86400");
	assert_int_equal(csv_field_i64(&f, -86400, 86400, &v, 1, 1, &e), 0);
	assert_int_equal(v, -86400);
	f = fld("+3600");
	assert_int_equal(csv_field_i64(&f, -86400, 86400, &v, 1, 1, &e), 0);
	assert_int_equal(v, 3600);
	f = fld("-86401");
	assert_int_equal(csv_field_i64(&f, -86400, 86400, &v, 1, 1, &e), -1);
	f = fld("-9223372036854775808");
	assert_int_equal(csv_field_i64(&f, INT64_MIN, INT64_MAX, &v, 1, 1, &e), 0);
	assert_true(v == INT64_MIN);
	f = fld("9223372036854775808");
	assert_int_equal(csv_field_i64(&f, INT64_MIN, INT64_MAX, &v, 1, 1, &e), -1);
	f = fld("-");
	assert_int_equal(csv_field_i64(&f, INT64_MIN, INT64_MAX, &v, 1, 1, &e), -1);

	f = fld("TRUE");
	assert_int_equal(csv_field_bool(&f, &b, 1, 1, &e), 0);
	assert_int_equal(b, 1);
	f = fld("no");
	assert_int_equal(csv_field_bool(&f, &b, 1, 1, &e), 0);
	assert_int_equal(b, 0);
	f = fld("2");
	assert_int_equal(csv_field_bool(&f, &b, 3, 10, &e), -1);
	assert_int_equal(e.line, 3);
	assert_int_equal(e.column, 10);
}

/* Every prefix of a buffer mixing all the dialect's features parses or
 * fails cleanly; the copy is exactly sized so ASan catches any overread. */
static void test_csv_every_prefix_stays_in_bounds(void **state)
{
	const char src[] = "a,b,c\r\n#x,\"\n 1 ,, 3\n\n4,5,6\r\n7,8\n\"9\",1,2\r\r\n";
	size_t n, total = sizeof src - 1;

	(void)state;
	for (n = 0; n <= total; n++) {
		char *copy = malloc(n ? n : 1);
		struct csv_doc d;
		struct csv_error e;
		size_t r, c;
		assert_non_null(copy);
		memcpy(copy, src, n);
		if (csv_parse(copy, n, 3, &d, &e) == 0) {
			for (r = 0; r < d.nrows; r++)
				for (c = 0; c < 3; c++) {
					const struct csv_field *f = &d.rows[r].f[c];
					assert_true(f->p >= copy && f->p + f->len <= copy + n);
				}
			csv_free(&d);
		} else {
			assert_true(e.line >= 1);
		}
		free(copy);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_parses_rows_fields_and_line_numbers),
		cmocka_unit_test(test_csv_accepts_crlf_and_missing_last_newline),
		cmocka_unit_test(test_csv_skips_a_leading_byte_order_mark_only),
		cmocka_unit_test(test_csv_empty_input_has_no_rows),
		cmocka_unit_test(test_csv_wrong_field_count_names_line_and_column),
		cmocka_unit_test(test_csv_rejects_quotes_nul_and_stray_cr),
		cmocka_unit_test(test_csv_rejects_bad_column_count_argument),
		cmocka_unit_test(test_csv_header_check_names_first_differing_column),
		cmocka_unit_test(test_csv_parse_first_takes_the_width_of_the_first_row_only),
		cmocka_unit_test(test_csv_parse_first_of_no_rows_is_empty_and_errors_are_csv_parse_s),
		cmocka_unit_test(test_csv_header_map_any_order_and_each_bad_name),
		cmocka_unit_test(test_csv_u64_reads_ranges_and_rejects_junk),
		cmocka_unit_test(test_csv_i64_and_bool),
		cmocka_unit_test(test_csv_every_prefix_stays_in_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
