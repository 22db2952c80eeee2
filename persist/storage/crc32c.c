/*
 * crc32c.c -- CRC-32C with a hardware path and a table fallback.
 *
 * Divisions: the slicing-by-8 tables (built once), the table version, the
 * SSE4.2 version (compiled with a target attribute so the rest of the
 * project needs no -msse4.2), and the one-time dispatch.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define CRC32C_X86 1
#endif

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc32c_fn)(uint32_t, const void *, size_t);

static void crc32c_build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc32c_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^
			                     crc32c_table[0][crc32c_table[t - 1][i] & 0xff];
}

/* Slicing-by-8: eight bytes per step through eight tables (little endian). */
static uint32_t crc32c_sw_impl(uint32_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= c;
		c = crc32c_table[7][w & 0xff] ^
		    crc32c_table[6][(w >> 8) & 0xff] ^
		    crc32c_table[5][(w >> 16) & 0xff] ^
		    crc32c_table[4][(w >> 24) & 0xff] ^
		    crc32c_table[3][(w >> 32) & 0xff] ^
		    crc32c_table[2][(w >> 40) & 0xff] ^
		    crc32c_table[1][(w >> 48) & 0xff] ^
		    crc32c_table[0][w >> 56];
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

#ifdef CRC32C_X86
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_impl(uint32_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	uint64_t c = (uint32_t)~crc;
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

int crc32c_hw_available(void)
{
#ifdef CRC32C_X86
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
	return 0;
#endif
}

static void crc32c_init(void)
{
	crc32c_build_tables();
	crc32c_fn = crc32c_sw_impl;
#ifdef CRC32C_X86
	if (crc32c_hw_available())
		crc32c_fn = crc32c_hw_impl;
#endif
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&crc32c_once, crc32c_init);
	return crc32c_fn(crc, buf, n);
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&crc32c_once, crc32c_init);
	return crc32c_sw_impl(crc, buf, n);
}

uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t n)
{
#ifdef CRC32C_X86
	return crc32c_hw_impl(crc, buf, n);
#else
	return crc32c_sw(crc, buf, n);
#endif
}

const char *crc32c_impl(void)
{
	pthread_once(&crc32c_once, crc32c_init);
	return crc32c_fn == crc32c_sw_impl ? "table" : "sse4.2";
}
