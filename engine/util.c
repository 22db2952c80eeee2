/*
 * util.c -- clocks, the byte hash and the small checks every engine file uses
 * (the word hashes are inline in fs.h).
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
