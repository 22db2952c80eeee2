/*
 * test_api_liveness.c -- who is alive in the process table.
 *
 * A slot is judged by the identity of the process that holds it (pid plus
 * start time) in every state that names a process: CLAIM, ALIVE and
 * RECOVERING.  A process is alive while any of its threads runs, also after
 * its main thread has exited.  A process that cannot learn its own identity
 * is refused a slot rather than stored as one nobody can judge.
 *
 * The tests arrange the situations directly: a slot whose pid field names a
 * live, unrelated child with a different start time is exactly what a dead
 * holder whose pid has been reused looks like.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"   /* the process table, to arrange and read slot states */

/* Field 3 (state) and field 22 (start time) of /proc/PID/stat. */
static int t_proc_stat(pid_t pid, char *state, uint64_t *start)
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
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	for (int f = 3; f < 22; f++) {
		if ((p = strchr(p, ' ')) == NULL)
			return -1;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

/* A child that does nothing but wait until its pipe is closed. */
static pid_t t_idle_child(int *release_fd)
{
	int pfd[2];
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;

		close(pfd[1]);
		while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pfd[0]);
	*release_fd = pfd[1];
	return pid;
}

static void t_child_reap(pid_t pid, int release_fd)
{
	int st = 0;

	close(release_fd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

static void slot_set(flash_t *h, uint32_t slot, uint64_t state, uint64_t start)
{
	ck_pr_store_64(&h->proc[slot].start_time, start);
	ck_pr_store_64(&h->proc[slot].state, state);
}

/* ---------------------------------------------------------------- defect 3 */

static void test_claim_or_recovering_slot_of_dead_process_whose_pid_is_reused_is_recovered(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);   /* slot 0 */
	uint64_t cstart = 0;
	uint32_t n = 99;
	int release;
	pid_t c = t_idle_child(&release);
	char cst;

	assert_int_equal(t_proc_stat(c, &cst, &cstart), 0);
	/* slots 1 and 2: held by processes that died; their pid is now the
	 * unrelated child's (it started later: another start time) */
	slot_set(h, 1, FS_PSTATE(FS_P_CLAIM, 5, c), cstart + 1);
	slot_set(h, 2, FS_PSTATE(FS_P_RECOVERING, 5, c), cstart + 1);
	/* slots 3 and 4: held by the child itself: alive */
	slot_set(h, 3, FS_PSTATE(FS_P_CLAIM, 5, c), cstart);
	slot_set(h, 4, FS_PSTATE(FS_P_RECOVERING, 5, c), cstart);

	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	print_message("recovered %u; slot states %llx %llx %llx %llx\n", n,
	              (unsigned long long)h->proc[1].state, (unsigned long long)h->proc[2].state,
	              (unsigned long long)h->proc[3].state, (unsigned long long)h->proc[4].state);
	assert_int_equal(n, 2);
	assert_int_equal(FS_PKIND(h->proc[1].state), FS_P_FREE);
	assert_int_equal(FS_PKIND(h->proc[2].state), FS_P_FREE);
	assert_int_equal(h->proc[3].state, FS_PSTATE(FS_P_CLAIM, 5, c));
	assert_int_equal(h->proc[4].state, FS_PSTATE(FS_P_RECOVERING, 5, c));

	/* once the child is gone, its own slots are recovered too */
	t_child_reap(c, release);
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 2);
	assert_int_equal(FS_PKIND(h->proc[3].state), FS_P_FREE);
	assert_int_equal(FS_PKIND(h->proc[4].state), FS_P_FREE);
}

static void test_attach_records_its_pid_and_start_time(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	uint64_t mystart = 0;
	char st;
	pid_t c;
	int wst = 0;

	assert_int_equal(t_proc_stat(getpid(), &st, &mystart), 0);
	assert_int_equal(h->proc[0].state, FS_PSTATE(FS_P_ALIVE, FS_PGEN(h->proc[0].state), getpid()));
	assert_int_equal(h->proc[0].start_time, mystart);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		flash_t *hc = NULL;
		uint64_t cs = 0;
		char cst;

		if (flash_open(name, 0, &hc) != FLASH_OK || t_proc_stat(getpid(), &cst, &cs) != 0)
			_exit(1);
		_exit(hc->me->start_time == cs && cs != 0 ? 0 : 2);
	}
	assert_int_equal(waitpid(c, &wst, 0), c);
	assert_true(WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 0);
}

/* ---------------------------------------------------------------- defect 4 */

/*
 * In the calling process from now on, every open(2) for reading fails with
 * EMFILE -- what the kernel answers when the descriptor table is full.  A
 * read-write open (the segment's shm_open) still works, so the attach gets
 * exactly as far as reading its own identity.
 */
static int t_refuse_readonly_opens(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
#if defined(__x86_64__)
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
#elif defined(__aarch64__)
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_AARCH64, 1, 0),
#else
#error "add this architecture's AUDIT_ARCH"
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, O_ACCMODE),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, O_RDONLY, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EMFILE & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void test_attach_without_own_identity_is_refused_and_changes_nothing(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);   /* slot 0 */
	int res[2], go[2], out[2] = { 0, 0 };
	uint32_t n = 99;
	pid_t c;
	int wst = 0;

	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(go), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		flash_t *hc = NULL;
		char b;

		close(res[0]);
		close(go[1]);
		if (t_refuse_readonly_opens() != 0)
			_exit(3);
		/* the filter really is there: a read-only open now fails */
		if (open("/proc/self/stat", O_RDONLY | O_CLOEXEC) >= 0 || errno != EMFILE)
			_exit(4);
		out[0] = flash_open(name, 0, &hc);
		out[1] = out[0] == FLASH_OK ? flash_slot(hc) : -1;
		if (write(res[1], out, sizeof out) != (ssize_t)sizeof out)
			_exit(5);
		/* stay alive (a live process) until the parent has looked */
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(res[1]);
	close(go[0]);
	assert_int_equal(read(res[0], out, sizeof out), (ssize_t)sizeof out);
	print_message("attach without identity: %s, slot %d, start time stored %llu\n",
	              flash_rcname(out[0]), out[1],
	              out[1] > 0 ? (unsigned long long)h->proc[out[1]].start_time : 0ull);
	/* the live child is never taken for dead... */
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	print_message("recovered while the child lives: %u\n", n);
	assert_int_equal(n, 0);
	/* ...because it holds no slot: refused, nothing changed */
	assert_int_equal(out[0], FLASH_ESYS);
	for (uint32_t i = 1; i < h->proc_cap; i++)
		assert_int_equal(FS_PKIND(h->proc[i].state), FS_P_FREE);
	close(go[1]);
	close(res[0]);
	assert_int_equal(waitpid(c, &wst, 0), c);
	assert_true(WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 0);
}

/* ---------------------------------------------------------------- defect 8 */

struct zl {
	const char *name;
	int ready_w, go_r;
};

/* The worker of a process whose main thread has exited: hold a handle
 * across the leader's exit, report, then keep ordering. */
static void *zl_worker(void *arg)
{
	struct zl *z = arg;
	flash_t *hc = NULL;
	uint64_t start = 0;
	int msg[2] = { 0, 0 };
	char st = 0, b;

	if (flash_open(z->name, 0, &hc) != FLASH_OK)
		_exit(10);
	if (t_order(hc, 1, 10, 100, 1, 0, 0, NULL) != FLASH_OK)
		_exit(11);
	/* wait (without bound on time, only on progress) for the leader to be
	 * a zombie: that is the state in which it used to be taken for dead */
	for (;;) {
		if (t_proc_stat(getpid(), &st, &start) != 0)
			_exit(12);
		if (st == 'Z')
			break;
		sched_yield();
	}
	msg[0] = flash_slot(hc);
	if (write(z->ready_w, msg, sizeof msg) != (ssize_t)sizeof msg)
		_exit(13);
	while (read(z->go_r, &b, 1) < 0 && errno == EINTR)
		;
	/* the parent has run recovery: this thread goes on ordering */
	for (uint64_t u = 101; u < 111; u++)
		if (t_order(hc, 1, 10, u, 1, 0, 0, NULL) != FLASH_OK)
			_exit(20);
	if (flash_close(hc) != FLASH_OK)
		_exit(21);
	_exit(0);
}

static void test_process_whose_main_thread_exited_is_alive_and_never_recovered(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	int ready[2], go[2], msg[2] = { -1, 0 };
	uint32_t n = 99;
	uint64_t start = 0, slot_state;
	char st = 0;
	pid_t c;
	int wst = 0;

	assert_int_equal(t_activity(h, 1, 1, 1, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		static struct zl z;
		pthread_t t;

		close(ready[0]);
		close(go[1]);
		z.name = name;
		z.ready_w = ready[1];
		z.go_r = go[0];
		if (pthread_create(&t, NULL, zl_worker, &z) != 0)
			_exit(30);
		pthread_exit(NULL);     /* the main thread ends; the worker goes on */
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], msg, sizeof msg), (ssize_t)sizeof msg);
	assert_true(msg[0] > 0 && (uint32_t)msg[0] < h->proc_cap);
	/* the situation: /proc/PID/stat says zombie, a thread holds a handle */
	assert_int_equal(t_proc_stat(c, &st, &start), 0);
	assert_int_equal(st, 'Z');
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	slot_state = h->proc[msg[0]].state;
	print_message("zombie leader: recovered %u, child's slot %d kind %u\n", n, msg[0],
	              FS_PKIND(slot_state));
	assert_int_equal(n, 0);
	assert_int_equal(slot_state, FS_PSTATE(FS_P_ALIVE, FS_PGEN(slot_state), c));
	/* the worker keeps ordering and closes its handle itself */
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(c, &wst, 0), c);
	assert_true(WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 0);
	assert_int_equal(t_available(h, 1, 10), 100 - 11);
	assert_int_equal(FS_PKIND(h->proc[msg[0]].state), FS_P_FREE);
	/* and once it is gone, nothing is left to recover */
	assert_int_equal(flash_recover(h, &n), FLASH_OK);
	assert_int_equal(n, 0);
	close(ready[0]);
	close(go[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_claim_or_recovering_slot_of_dead_process_whose_pid_is_reused_is_recovered),
		T(test_attach_records_its_pid_and_start_time),
		T(test_attach_without_own_identity_is_refused_and_changes_nothing),
		T(test_process_whose_main_thread_exited_is_alive_and_never_recovered),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
