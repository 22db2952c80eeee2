/*
 * crash_liveness.c -- a recoverer killed in the middle of a recovery leaves
 * the slot it was recovering in RECOVERING under its own identity (pid and
 * start time), and the next recovery judges that identity and finishes.
 *
 * A slot whose holder is dead is arranged directly (ALIVE under the pid of
 * a child already reaped, with a start time no process has); a forked
 * recoverer opens a handle -- which recovers -- and dies at the first
 * crash point of the recovery.  The parent reads the slot while the dead
 * recoverer is still a zombie, so its /proc/PID/stat (and start time) can
 * still be read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"

static char segname[64];

static int proc_start(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	p += 2;
	for (int f = 3; f < 22; f++) {
		if ((p = strchr(p, ' ')) == NULL)
			return -1;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

static void test_recoverer_killed_mid_recovery_is_recorded_with_its_start_time(void **state)
{
	char *name = segname;
	struct flash_seg_opts o;
	flash_t *h = NULL;
	uint64_t rstart = 0, s;
	uint32_t n = 0;
	siginfo_t si;
	pid_t gone, r;
	int wst = 0;

	snprintf(segname, sizeof segname, "/fs-crash-liveness-%ld", (long)getpid());
	shm_unlink(name);
	flash_seg_opts_default(&o);
	o.max_procs = 4;
	o.max_users = o.max_tokens = o.max_orders = o.max_requests = 64;
	o.max_activities = o.max_skus = o.max_shards = o.max_locks = 2;
	o.ring_records = 64;
	assert_int_equal(flash_seg_create(name, &o), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);   /* slot 0 */

	/* slot 1: held by a process that is gone */
	gone = fork();
	assert_true(gone >= 0);
	if (gone == 0)
		_exit(0);
	assert_int_equal(waitpid(gone, &wst, 0), gone);
	ck_pr_store_64(&h->proc[1].start_time, 12345);
	ck_pr_store_64(&h->proc[1].state, FS_PSTATE(FS_P_ALIVE, 3, gone));

	/* a recoverer that dies at the first crash point after its attach */
	r = fork();
	assert_true(r >= 0);
	if (r == 0) {
		flash_t *hr = NULL;

		crash_arm(2);    /* 1: "attach" 1; 2: the first of the recovery */
		flash_open(name, 0, &hr);
		_exit(0);
	}
	/* wait for its death, but leave it a zombie: its stat stays readable */
	memset(&si, 0, sizeof si);
	assert_int_equal(waitid(P_PID, (id_t)r, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(si.si_code, CLD_EXITED);
	assert_int_equal(si.si_status, FLASH_CRASH_EXIT);
	assert_int_equal(proc_start(r, &rstart), 0);
	s = ck_pr_load_64(&h->proc[1].state);
	print_message("slot 1: kind %u pid %d start %llu; the recoverer: pid %d start %llu\n",
	              FS_PKIND(s), FS_PPID(s), (unsigned long long)h->proc[1].start_time,
	              (int)r, (unsigned long long)rstart);
	assert_int_equal(s, FS_PSTATE(FS_P_RECOVERING, 3, r));
	assert_int_equal(h->proc[1].start_time, rstart);
	assert_int_equal(waitpid(r, &wst, 0), r);

	/* the next recovery takes over from the dead recoverer and finishes */
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_true(n >= 1);
	assert_int_equal(FS_PKIND(h->proc[1].state), FS_P_FREE);
	assert_int_equal(flash_close(h), FLASH_OK);
	shm_unlink(name);
}

/* A failed test leaves no segment behind. */
static int teardown(void **state)
{
	if (segname[0] != '\0')
		shm_unlink(segname);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_recoverer_killed_mid_recovery_is_recorded_with_its_start_time,
		                          teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
