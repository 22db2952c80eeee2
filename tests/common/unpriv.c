/*
 * unpriv.c -- run a check as one of the fixture's unprivileged users
 * (see unpriv.h).
 */
#include "unpriv.h"
#include "helpers.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const t_user_env[] = { "FLASH_TEST_USER_A", "FLASH_TEST_USER_B",
	                                   "FLASH_TEST_USER_C" };

static const char *user_name(int which)
{
	const char *n;

	assert_true(which >= T_USER_A && which <= T_USER_C);
	if (geteuid() != 0)
		fail_msg("the permission tests start as root and become the fixture's users "
		         "(CI runs as root); euid is %ld", (long)geteuid());
	n = getenv(t_user_env[which]);
	if (n == NULL || n[0] == '\0')
		fail_msg("%s is not set: run under ctest, whose fixture test_users_start "
		         "(tests/fixtures/users.sh) creates the users", t_user_env[which]);
	return n;
}

uid_t t_user_uid(int which)
{
	const char *n = user_name(which);
	struct passwd *pw = getpwnam(n);

	if (pw == NULL)
		fail_msg("user %s (%s) does not exist", n, t_user_env[which]);
	assert_true(pw->pw_uid != 0);
	return pw->pw_uid;
}

gid_t t_test_gid(void)
{
	const char *n = getenv("FLASH_TEST_GROUP");
	struct group *g;

	if (n == NULL || n[0] == '\0')
		fail_msg("FLASH_TEST_GROUP is not set: run under ctest (fixture test_users_start)");
	g = getgrnam(n);
	if (g == NULL)
		fail_msg("group %s (FLASH_TEST_GROUP) does not exist", n);
	return g->gr_gid;
}

/* In the child: become @p name for good, or say why not. */
static int become(const char *name)
{
	struct passwd *pw = getpwnam(name);

	if (pw == NULL) {
		fprintf(stderr, "t_run_as: no user %s\n", name);
		return -1;
	}
	if (initgroups(name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
	    setuid(pw->pw_uid) != 0) {
		fprintf(stderr, "t_run_as: cannot become %s: %s\n", name, strerror(errno));
		return -1;
	}
	if (geteuid() != pw->pw_uid || getuid() != pw->pw_uid || setuid(0) == 0) {
		fprintf(stderr, "t_run_as: %s is not unprivileged\n", name);
		return -1;
	}
	return 0;
}

int t_run_as(int which, int (*fn)(void *), void *arg)
{
	const char *name = user_name(which);
	pid_t pid;
	int st = 0;

	(void)t_user_uid(which);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(become(name) == 0 ? fn(arg) : 90);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}
