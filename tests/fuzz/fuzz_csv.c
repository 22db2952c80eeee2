/*
 * fuzz_csv.c -- fuzz target for the CSV reader of `flashstock load`
 * (tools/csv.c).
 *
 * LLVMFuzzerTestOneInput() parses any bytes with every column count from 1
 * to 13 and checks what the reader promises: it either fails with a line
 * number inside the input, or returns rows whose fields lie inside the
 * buffer, in input order, with line numbers that grow; the typed readers
 * accept or refuse each field without reading past it.  The header reader
 * (csv_parse_first) gives at most one row, the same first row csv_parse
 * gives at its width, and csv_header_map maps a header to distinct known
 * names or refuses it, always when it is wider than the names.  The input is copied
 * to an exactly sized buffer so AddressSanitizer sees any overread.
 *
 * Built two ways:
 *   - with -DFLASH_LIBFUZZER (clang -fsanitize=fuzzer): a libFuzzer target;
 *   - otherwise: a program that feeds the target a fixed set of seeds and
 *     a deterministic stream of mutations of them (a ctest test; under
 *     -DFLASH_SANITIZE=ON it runs with ASan and UBSan).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_csv: broken promise: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[13] = {
		"activity_id", "sku_id", "units", "shards", "start", "end", "limit",
		"max_qty", "scope", "cancel_returns_quota", "token_required",
		"day_offset_s", "x"
	};
	char *buf = malloc(size ? size : 1);
	size_t ncols, lines = 1, i;

	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	for (i = 0; i < size; i++)
		lines += buf[i] == '\n';

	{
		struct csv_doc h, d;
		struct csv_error e;
		size_t map[14], n, c, j;

		memset(&e, 0, sizeof e);
		if (csv_parse_first(buf, size, &h, &e) != 0) {
			fuzz_check(e.line >= 1 && e.line <= lines, "header error line inside the input");
			fuzz_check(h.nrows == 0 && h.rows == NULL, "no header after an error");
		} else if (h.nrows == 0) {
			fuzz_check(csv_parse(buf, size, 1, &d, &e) == 0 && d.nrows == 0,
			           "no header means no rows");
			csv_free(&d);
		} else {
			fuzz_check(h.nrows == 1, "one header row");
			fuzz_check(h.ncols >= 1 && h.ncols <= CSV_COLS_MAX, "header width in range");
			if (csv_parse(buf, size, h.ncols, &d, &e) == 0) {
				fuzz_check(d.nrows >= 1 && d.rows[0].line == h.rows[0].line,
				           "header is the first row");
				for (c = 0; c < h.ncols; c++)
					fuzz_check(d.rows[0].f[c].p == h.rows[0].f[c].p &&
					           d.rows[0].f[c].len == h.rows[0].f[c].len,
					           "header fields are the first row's");
				csv_free(&d);
			}
			n = h.ncols < 14 ? h.ncols : 14;
			if (csv_header_map(&h.rows[0], n, names, 13, map, &e) == 0) {
				fuzz_check(h.ncols <= 13, "a header wider than the names is refused");
				for (c = 0; c < n; c++) {
					fuzz_check(map[c] < 13, "mapped to a name");
					for (j = 0; j < c; j++)
						fuzz_check(map[j] != map[c], "each name mapped once");
				}
			} else {
				fuzz_check(e.line == h.rows[0].line && e.column >= 1 && e.column <= n,
				           "header error names a header column");
			}
		}
		csv_free(&h);
	}

	for (ncols = 1; ncols <= 13; ncols++) {
		struct csv_doc d;
		struct csv_error e;
		size_t r, c, prev_line = 0;

		memset(&e, 0, sizeof e);
		if (csv_parse(buf, size, ncols, &d, &e) != 0) {
			fuzz_check(e.line >= 1 && e.line <= lines, "error line inside the input");
			fuzz_check(d.nrows == 0 && d.rows == NULL, "no rows after an error");
			fuzz_check(memchr(e.msg, '\0', sizeof e.msg) != NULL, "message terminated");
			continue;
		}
		fuzz_check(d.ncols == ncols, "column count kept");
		fuzz_check(d.nrows <= lines, "no more rows than lines");
		for (r = 0; r < d.nrows; r++) {
			const struct csv_row *row = &d.rows[r];
			fuzz_check(row->line > prev_line && row->line <= lines, "line numbers grow");
			prev_line = row->line;
			for (c = 0; c < ncols; c++) {
				const struct csv_field *f = &row->f[c];
				uint64_t u;
				int64_t v;
				int b;
				char tmp[16];
				fuzz_check(f->p >= buf && f->p + f->len <= buf + size, "field inside buffer");
				fuzz_check(memchr(f->p, '"', f->len) == NULL, "no quote in a field");
				fuzz_check(memchr(f->p, ',', f->len) == NULL, "no comma in a field");
				if (csv_field_u64(f, 0, UINT64_MAX, &u, row->line, c + 1, &e) == 0)
					fuzz_check(f->len > 0, "an empty field is no number");
				(void)csv_field_i64(f, INT64_MIN, INT64_MAX, &v, row->line, c + 1, &e);
				(void)csv_field_bool(f, &b, row->line, c + 1, &e);
				(void)csv_field_copy(f, tmp, sizeof tmp);
				fuzz_check(strlen(tmp) <= f->len, "copy no longer than the field");
			}
			(void)csv_header_check(row, ncols, names, &e);
		}
		csv_free(&d);
	}
	free(buf);
	return 0;
}

#ifndef FLASH_LIBFUZZER
/* Seeds: the loader's own dialect, good and bad. */
static const char *const fuzz_seeds[] = {
	"activity_id,sku_id,units\n31,1,1000\n31,2,250\n",
	"# warm-up\n\n sku_id , units,activity_id,sku_id\n1,2,3,4\n",
	"activity_id,sku_id,units,shards,start,end,limit,max_qty,scope,"
	"cancel_returns_quota,token_required,day_offset_s\n"
	"7,1,5000,4,now,+3600,1,1,activity,0,1,0\n7,2,3000,,,,,,,,,\n",
	"a,b\r\n1,2\r\n\r\n# c\r\n 3 ,\t4\t\r\n",
	"a,b\n1,\"2\"\n",
	"\xef\xbb\xbf" "a,b\n18446744073709551616,-9223372036854775809\n",
	"a,b\n1,2\r3\n,\n",
	",,,,,,,,,,,,\n,\n\n\n#\n",
	"",
};

/* A small deterministic generator: runs are repeatable. */
static uint64_t fuzz_rng = 0x243f6a8885a308d3ULL;

static uint64_t fuzz_next(void)
{
	fuzz_rng ^= fuzz_rng << 13;
	fuzz_rng ^= fuzz_rng >> 7;
	fuzz_rng ^= fuzz_rng << 17;
	return fuzz_rng;
}

int main(int argc, char **argv)
{
	static const char alphabet[] = ",\n\r\"#0123456789-+ \tabyesno\0\xef\xbb\xbf";
	size_t nseeds = sizeof fuzz_seeds / sizeof fuzz_seeds[0];
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
	uint8_t buf[512];
	unsigned long i;
	size_t s;

	for (s = 0; s < nseeds; s++)
		LLVMFuzzerTestOneInput((const uint8_t *)fuzz_seeds[s], strlen(fuzz_seeds[s]));
	for (i = 0; i < rounds; i++) {
		const char *seed = fuzz_seeds[fuzz_next() % nseeds];
		size_t len = strlen(seed), edits = 1 + fuzz_next() % 8, k;
		if (len > sizeof buf)
			len = sizeof buf;
		memcpy(buf, seed, len);
		for (k = 0; k < edits; k++) {
			uint64_t x = fuzz_next();
			size_t at = len ? (size_t)(x >> 8) % len : 0;
			uint8_t ch = (uint8_t)alphabet[(x >> 40) % (sizeof alphabet - 1)];
			switch (x % 4) {
			case 0:                                   /* overwrite */
				if (len)
					buf[at] = ch;
				break;
			case 1:                                   /* insert */
				if (len < sizeof buf) {
					memmove(buf + at + 1, buf + at, len - at);
					buf[at] = ch;
					len++;
				}
				break;
			case 2:                                   /* delete */
				if (len) {
					memmove(buf + at, buf + at + 1, len - at - 1);
					len--;
				}
				break;
			default:                                  /* truncate */
				len = at;
				break;
			}
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("fuzz_csv: %zu seeds and %lu mutations, every promise held\n", nseeds, rounds);
	return 0;
}
#endif
