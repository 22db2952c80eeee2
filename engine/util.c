/*
 * util.c -- clocks, hashing and the small checks every engine file uses.
 */
#include <time.h>

#include "fs.h"

int64_t fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t fs_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* splitmix64's finalizer: a bijection of 64-bit words with full avalanche */
uint64_t fs_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t fs_hash(uint64_t a, uint64_t b, uint64_t c)
{
	return fs_mix64(a ^ fs_mix64(b ^ fs_mix64(c + 0x9e3779b97f4a7c15ull)));
}

uint64_t fs_fnv(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A slot number read from the segment must name a row of the process table. */
int fs_check_slot(const flash_t *h, uint32_t slot)
{
	return slot < h->proc_cap ? FLASH_OK : FLASH_ECORRUPT;
}
