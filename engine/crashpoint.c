/*
 * crashpoint.c -- the crash-point counter of test builds: FS_CRASH(op, step)
 * in the engine and PERSIST_CRASH(op, step) in persist/ both count here.
 * Without FLASH_CRASHPOINTS this file compiles to nothing.
 */
#include <unistd.h>

#include "fs.h"

#ifdef FLASH_CRASHPOINTS
/*
 * Crash points (test builds, -DFLASH_CRASHPOINTS=ON or the flashstock_crash
 * library): every FS_CRASH(op, step) in the engine is one point.
 * crash_arm(n) makes the n-th point reached from now on end the process
 * with _exit(FLASH_CRASH_EXIT); crash_arm(0) disarms.  A test
 * enumerates an operation's points by arming n = 1, 2, ... in a forked child
 * until the operation completes without reaching the n-th.
 * fs_crash_last() names the last point reached (for reports).
 */
void (*fs_park_fn)(const char *where);

static int crash_countdown;
static const char *crash_last_op;
static int crash_last_step, crash_hits;

void crash_arm(int n)
{
	crash_countdown = n;
	crash_hits = 0;
	crash_last_op = NULL;
}

int fs_crash_hits(void)
{
	return crash_hits;
}

const char *fs_crash_last(int *step)
{
	if (step)
		*step = crash_last_step;
	return crash_last_op ? crash_last_op : "";
}

void fs_crashpoint(const char *op, int step)
{
	crash_hits++;
	crash_last_op = op;
	crash_last_step = step;
	if (crash_countdown > 0 && --crash_countdown == 0)
		_exit(FLASH_CRASH_EXIT);
}
#endif
