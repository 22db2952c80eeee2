/*
 * probe.h -- entries read by the tables' lookups, counted in test builds
 * (FLASH_CRASHPOINTS), so a test can assert a bound on them as a count.
 */
#ifndef FLASH_PROBE_H
#define FLASH_PROBE_H

#include <stdint.h>

#ifdef FLASH_CRASHPOINTS
extern uint64_t fs_probe_reads;   /* ktab.c */
#define FS_PROBE_COUNT() (fs_probe_reads++)
#else
#define FS_PROBE_COUNT() ((void)0)
#endif

#endif /* FLASH_PROBE_H */
