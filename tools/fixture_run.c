/*
 * fixture_run.c -- run the MariaDB fixture script and read its export lines
 * (contract in fixture_run.h).
 */
#include "fixture_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int fixture_run(const char *script, const char *cmd, const char *dir, char *out, size_t cap)
{
	int fd[2] = { -1, -1 }, status;
	size_t len = 0;
	pid_t pid;

	if (out && (cap == 0 || pipe(fd) != 0))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		if (out) {
			close(fd[0]);
			close(fd[1]);
		}
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (out) {
			close(fd[0]);
			dup2(fd[1], STDOUT_FILENO);
			close(fd[1]);
		} else {
			dup2(STDERR_FILENO, STDOUT_FILENO);
		}
		execlp("sh", "sh", script, cmd, dir, (char *)NULL);
		_exit(127);
	}
	if (out) {
		close(fd[1]);
		for (;;) {
			ssize_t r = len + 1 < cap ? read(fd[0], out + len, cap - 1 - len) : 0;
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			len += (size_t)r;
		}
		out[len] = '\0';
		close(fd[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int fixture_export(const char *text, const char *key, char *val, size_t cap)
{
	char pat[96];
	const char *p, *q;

	if (snprintf(pat, sizeof pat, "export %s='", key) >= (int)sizeof pat)
		return -1;
	p = strstr(text, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	q = strchr(p, '\'');
	if (!q || (size_t)(q - p) >= cap)
		return -1;
	memcpy(val, p, (size_t)(q - p));
	val[q - p] = '\0';
	return 0;
}
