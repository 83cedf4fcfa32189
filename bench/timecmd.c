/*
 * timecmd - time one command, or a short `&&` chain of commands, as whole
 * processes, with as little harness overhead as possible.
 *
 *   timecmd [--ok N] RESULTFILE CMD [ARG]... [--- CMD [ARG]...]...
 *
 * The commands run one after another (fork + execvp, no shell in between);
 * the chain stops at the first command that does not exit 0, like `a && b`.
 * --ok N makes exit status N count as success too (recorded as 0): `git
 * diff --no-index` and diff(1) exit 1 when the files differ.
 * One line is appended to RESULTFILE:
 *
 *   <elapsed ns> <max RSS KiB of the largest process> <exit status>
 *
 * Elapsed time is CLOCK_MONOTONIC from just before the first fork to just
 * after the last wait, so it contains process start-up and exit (the cost a
 * user or an agent harness pays), and nothing of the calling shell.  Max RSS
 * comes from wait4()'s rusage of each child (ru_maxrss, KiB on Linux).
 * Exit status is 128+N for a child killed by signal N, 127 when exec fails.
 *
 * stdin, stdout and stderr are inherited; bench/run.sh redirects them.
 * Deliberately standalone (no decree headers).
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int run_one(char **argv, long *maxrss)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("timecmd: fork");
		return 126;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "timecmd: cannot run '%s': %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("timecmd: wait4");
			return 126;
		}
	}
	if (ru.ru_maxrss > *maxrss)
		*maxrss = ru.ru_maxrss;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 126;
}

int main(int argc, char **argv)
{
	long long t0, t1;
	long maxrss = 0;
	int rc = 0, i, start, ok = 0;
	FILE *out;

	if (argc >= 3 && !strcmp(argv[1], "--ok")) {
		char *end;
		long n = strtol(argv[2], &end, 10);
		if (*end || end == argv[2] || n < 1 || n > 255) {
			fprintf(stderr, "timecmd: --ok needs a status 1-255\n");
			return 2;
		}
		ok = (int)n;
		argc -= 2;
		argv += 2;
	}
	if (argc < 3) {
		fprintf(stderr,
			"usage: timecmd [--ok N] RESULTFILE CMD [ARG]... "
			"[--- CMD...]\n");
		return 2;
	}
	out = fopen(argv[1], "a");
	if (!out) {
		fprintf(stderr, "timecmd: cannot open '%s': %s\n", argv[1],
			strerror(errno));
		return 2;
	}

	t0 = now_ns();
	start = 2;
	for (i = 2; i <= argc; i++) {
		if (i < argc && strcmp(argv[i], "---"))
			continue;
		/* argv[start..i) is one command; terminate it in place */
		argv[i == argc ? argc : i] = NULL;
		if (i > start)
			rc = run_one(argv + start, &maxrss);
		if (ok && rc == ok)
			rc = 0;
		if (rc)
			break;
		start = i + 1;
	}
	t1 = now_ns();

	fprintf(out, "%lld %ld %d\n", t1 - t0, maxrss, rc);
	if (fclose(out)) {
		perror("timecmd: write result");
		return 2;
	}
	return rc;
}
