/*
 * cmocka_analyzer.h -- what clang's static analyzer must know about cmocka.
 *
 * A failed cmocka assertion does not return: it longjmps out of the test.
 * cmocka 1.1 declares its checkers as ordinary functions, so the analyzer
 * (scan-build, `bash tools/run.sh test`) follows the failing branch on and
 * reports what the assertion was there to rule out (a NULL row after
 * assert_non_null, an argument a failed call never wrote).  In analyzer runs
 * only, this header makes each checker a test that ends in a call the
 * analyzer knows does not return; compiled code is not touched.
 *
 * tests/CMakeLists.txt force-includes it (-include) into every test target.
 */
#ifndef FLASH_CMOCKA_ANALYZER_H
#define FLASH_CMOCKA_ANALYZER_H

#ifdef __clang_analyzer__
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* a failed check leaves the test: the analyzer stops the path there */
void _fail(const char *const file, const int line) __attribute__((analyzer_noreturn));

#undef _assert_true
#define _assert_true(r, expr, file, line) \
	((r) ? (void)0 : _fail((file), (line)))
#define _assert_int_equal(a, b, file, line) \
	((a) == (b) ? (void)0 : _fail((file), (line)))
#define _assert_int_not_equal(a, b, file, line) \
	((a) != (b) ? (void)0 : _fail((file), (line)))
#define _assert_in_range(v, lo, hi, file, line) \
	((v) >= (lo) && (v) <= (hi) ? (void)0 : _fail((file), (line)))
#endif /* __clang_analyzer__ */

#endif /* FLASH_CMOCKA_ANALYZER_H */
