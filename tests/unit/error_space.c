/*
 * error_space.c -- one error space: every result code a header of the
 * project defines (the table is generated from the headers by
 * tests/unit/error_space.cmake) is a distinct value of the FLASH_E* space, and
 * flash_rcname()/flash_strerror() know it.
 *
 * Every code has one name, its FLASH_E* name, defined in api/flashstock.h:
 * no component keeps aliases of its own (persist/storage/wal.h once had WAL_ECRC
 * for FLASH_EWAL_CRC).  So a value returned anywhere -- by the engine, the
 * WAL, the snapshotter or the applier -- names one outcome under one name,
 * and the bindings map that one space to typed errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define ERROR_SPACE_INCLUDES 1
#include "error_space_table.h"
#undef ERROR_SPACE_INCLUDES

#include "flashstock.h"

static const struct code {
	const char *name;
	int value;
	const char *header;
} codes[] = {
#include "error_space_table.h"
};
#define NCODES (sizeof codes / sizeof codes[0])

/* "FLASH_EWAL_CRC" -> "FLASH_EWAL_CRC"; a FLASH_ name is its own. */
static void flash_name_of(const char *name, char *out, size_t n)
{
	if (strncmp(name, "FLASH_", 6) == 0) {
		snprintf(out, n, "%s", name);
		return;
	}
	const char *e = strstr(name, "_E");
	snprintf(out, n, "FLASH_E%.*s_%s", (int)(e - name), name, e + 2);
}

static void every_code_is_named_by_flash_rcname(void **state)
{
	(void)state;
	assert_true(NCODES > 60);   /* the table really was read from the headers */
	unsigned bad = 0;
	for (size_t i = 0; i < NCODES; i++) {
		char want[96];
		flash_name_of(codes[i].name, want, sizeof want);
		const char *got = flash_rcname(codes[i].value);
		if (strcmp(got, want) != 0) {
			printf("%s (%s) = %d: flash_rcname says %s, want %s\n", codes[i].name,
			       codes[i].header, codes[i].value, got, want);
			bad++;
		}
		if (strcmp(flash_strerror(codes[i].value), "unknown result code") == 0) {
			printf("%s (%s) = %d: flash_strerror does not know it\n", codes[i].name,
			       codes[i].header, codes[i].value);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* Two names share a value only when one is the other's FLASH_E* name. */
static void no_two_outcomes_share_a_value(void **state)
{
	(void)state;
	unsigned bad = 0;
	for (size_t i = 0; i < NCODES; i++)
		for (size_t j = i + 1; j < NCODES; j++) {
			if (codes[i].value != codes[j].value)
				continue;
			char a[96], b[96];
			flash_name_of(codes[i].name, a, sizeof a);
			flash_name_of(codes[j].name, b, sizeof b);
			if (strcmp(a, b) != 0) {
				printf("%s (%s) and %s (%s) are both %d\n", codes[i].name, codes[i].header,
				       codes[j].name, codes[j].header, codes[i].value);
				bad++;
			}
		}
	assert_int_equal(bad, 0);
}

/* One name per outcome: every code is defined once, as FLASH_E*, in
 * api/flashstock.h; a header that defines another name for a code (an
 * alias such as WAL_ECRC) fails here. */
static void every_code_has_one_name_defined_in_the_public_header(void **state)
{
	(void)state;
	unsigned bad = 0;
	for (size_t i = 0; i < NCODES; i++)
		if (strncmp(codes[i].name, "FLASH_E", 7) != 0 ||
		    strcmp(codes[i].header, "api/flashstock.h") != 0) {
			printf("%s (%s) = %d: another name of %s\n", codes[i].name, codes[i].header,
			       codes[i].value, flash_rcname(codes[i].value));
			bad++;
		}
	assert_int_equal(bad, 0);
}

/* "Invalid argument", "out of memory" and "a system call failed" are one
 * code each (FLASH_EINVAL, FLASH_ENOMEM, FLASH_ESYS), whoever meets them: the
 * WAL and the snapshotter once had their own three (FLASH_EWAL_INVAL,
 * FLASH_ESNAP_IO, ...), synonyms a caller had to map back. */
static void generic_failures_have_one_code_each(void **state)
{
	(void)state;
	static const char *const generic[] = { "argument", "out of memory", "system call",
	                                       "I/O error" };
	static const int owner[] = { FLASH_EINVAL, FLASH_ENOMEM, FLASH_ESYS };
	unsigned bad = 0;
	for (size_t i = 0; i < NCODES; i++) {
		int own = 0;
		for (size_t k = 0; k < sizeof owner / sizeof owner[0]; k++)
			own |= codes[i].value == owner[k];
		const char *msg = flash_strerror(codes[i].value);
		for (size_t k = 0; !own && k < sizeof generic / sizeof generic[0]; k++)
			if (strstr(msg, generic[k]) != NULL) {
				printf("%s = %d says \"%s\": a generic failure, which has its own code\n",
				       codes[i].name, codes[i].value, msg);
				bad++;
			}
	}
	assert_int_equal(bad, 0);
}

static void unknown_codes_say_so(void **state)
{
	(void)state;
	assert_string_equal(flash_rcname(12345), "FLASH_E?");
	assert_string_equal(flash_rcname(-99999), "FLASH_E?");
	assert_string_equal(flash_strerror(-99999), "unknown result code");
	assert_string_equal(flash_rcname(FLASH_OK), "FLASH_OK");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_code_is_named_by_flash_rcname),
		cmocka_unit_test(no_two_outcomes_share_a_value),
		cmocka_unit_test(every_code_has_one_name_defined_in_the_public_header),
		cmocka_unit_test(generic_failures_have_one_code_each),
		cmocka_unit_test(unknown_codes_say_so),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
