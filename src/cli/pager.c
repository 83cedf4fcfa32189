/*
 * pager.c - long output through a pager when stdout is a terminal, as
 * git does (docs/cli/output.md).
 *
 * A command with long output (a diff, a checkpoint's files, a run's logs)
 * calls cli_pager_start just before its first byte, so that a failure
 * before any output is an ordinary error line on the terminal.  When
 * paging is allowed (no --no-pager, no --json), stdout is a terminal and
 * a pager is set -- $DECREE_PAGER, else $PAGER, else "less"; "" or "cat"
 * means none -- decree runs it with /bin/sh -c (so "less -S" works),
 * with LESS=FRX when LESS is unset (quit at once when the output fits on
 * one screen, pass colors through, leave the text on the screen) and
 * LV=-c, and a pipe to its stdin becomes decree's stdout, and stderr too
 * when that is the terminal, so notes keep their place in the text.
 *
 * The pager owns the terminal until it ends, so decree never ends first:
 * a shell prompt under a running less is a broken terminal.
 *  - cli_pager_finish (main, after the command; atexit for any other way
 *    out) closes decree's ends of the pipe and waits for the pager.
 *  - SIGINT and SIGQUIT are ignored while the pager runs, as system()
 *    ignores them: Ctrl-C at the terminal is the pager's (less stops
 *    waiting for input and shows what it has).
 *  - The user quitting the pager early makes decree's next write fail
 *    with EPIPE (SIGPIPE is ignored, main.c): the command stops at its
 *    next record (cli_output_closed) and decree exits as if the output
 *    had been read, 0 for a command that succeeded.
 *  - SIGTERM and SIGHUP close the pipe, wait for the pager, then take
 *    the action they had before (decree's temp files are removed and it
 *    dies by the signal).
 * A pager that cannot be run at all (sh: exit 126 or 127) showed nothing:
 * that is a failure of the command (exit 1), named on stderr.
 */
#include "util/common.h"
#include "cli.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

extern char **environ;

static bool allowed;
static pid_t pager_pid;
static int saved_stderr = -1; /* the terminal, while stderr feeds the pager */
static const char *pager_cmd_used;
static struct sigaction old_int, old_quit, old_term, old_hup;

void cli_pager_allow(bool on)
{
	allowed = on;
}

bool cli_pager_active(void)
{
	return pager_pid > 0;
}

bool cli_output_closed(void)
{
	return ferror(stdout) != 0;
}

bool cli_output_reader_gone(void)
{
	/* the write end of a pipe without a reader polls POLLERR (a regular
	 * file on a full disk polls writable) */
	struct pollfd p = { STDOUT_FILENO, POLLOUT, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

/* The pager to run, or NULL for none. */
static const char *pager_cmd(void)
{
	const char *p = getenv("DECREE_PAGER");

	if (!p)
		p = getenv("PAGER");
	if (!p)
		p = "less";
	while (*p == ' ' || *p == '\t')
		p++;
	return *p && strcmp(p, "cat") ? p : NULL;
}

/* The pager's environment: decree's, plus LESS=FRX and LV=-c when they
 * are unset.  Built before fork: the child only calls execve. */
static char **pager_env(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	if (!(env = calloc(n + 3, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		env[k++] = environ[i];
	if (!getenv("LESS"))
		env[k++] = (char *)"LESS=FRX";
	if (!getenv("LV"))
		env[k++] = (char *)"LV=-c";
	return env;
}

/* Give back the terminal's stderr and put /dev/null on stdout, so that
 * the pager sees the end of its input (async-signal-safe). */
static void close_pipe(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	} else {
		close(STDOUT_FILENO);
	}
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
}

static int wait_pager(void)
{
	int ws = 0;

	while (waitpid(pager_pid, &ws, 0) < 0 && errno == EINTR)
		;
	pager_pid = 0;
	return ws;
}

static void restore_signals(void)
{
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
}

/* SIGTERM, SIGHUP: the pager first, then the signal's previous action
 * (it is blocked while this handler runs, so it comes right after). */
static void on_signal(int sig)
{
	if (pager_pid > 0) {
		close_pipe();
		wait_pager();
	}
	restore_signals();
	raise(sig);
}

static void finish_at_exit(void)
{
	(void)cli_pager_finish(EXIT_OK);
}

void cli_pager_start(void)
{
	static bool registered;
	struct sigaction ign, sa;
	const char *cmd;
	char **env;
	int fds[2];
	pid_t pid;

	if (!allowed || pager_pid)
		return;
	/* one pager per run, and one look at stdout: a diff's writer calls
	 * this once per file */
	allowed = false;
	if (!isatty(STDOUT_FILENO) || !(cmd = pager_cmd()))
		return;
	fflush(stdout);
	fflush(stderr);
	if (!(env = pager_env()))
		return; /* out of memory: the terminal it is */
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(env);
		return;
	}
	pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)"sh", (char *)"-c", (char *)cmd,
				 NULL };
		/* decree ignores SIGPIPE; the pager gets the default */
		signal(SIGPIPE, SIG_DFL);
		if (dup2(fds[0], STDIN_FILENO) < 0)
			_exit(127);
		execve("/bin/sh", argv, env);
		_exit(127);
	}
	free(env);
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return;
	}
	pager_pid = pid;
	pager_cmd_used = cmd;
	dup2(fds[1], STDOUT_FILENO);
	if (isatty(STDERR_FILENO) &&
	    (saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)) >= 0)
		dup2(fds[1], STDERR_FILENO);
	close(fds[1]);

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	if (!registered) {
		atexit(finish_at_exit);
		registered = true;
	}
}

int cli_pager_finish(int status)
{
	int ws;

	if (pager_pid <= 0)
		return status;
	fflush(stdout);
	fflush(stderr);
	close_pipe();
	ws = wait_pager();
	restore_signals();
	if (WIFEXITED(ws) &&
	    (WEXITSTATUS(ws) == 126 || WEXITSTATUS(ws) == 127) &&
	    status == EXIT_OK)
		status = fail("cannot run the pager '%s' (exit %d); set "
			      "DECREE_PAGER or PAGER, or use --no-pager",
			      pager_cmd_used, WEXITSTATUS(ws));
	return status;
}
