/*
 * lock.c - flock-based store lock with owner identity (see lock.h).
 *
 * The lock file is never deleted: deleting a lock file that another process
 * has open and locked would let a third process lock a new inode, and two
 * owners would exist.  Identity format (text): "pid N\nstart T\nhost H\n",
 * where T is the process start time in clock ticks since boot
 * (/proc/self/stat field 22), which with the pid identifies a process even
 * when pids are reused.
 */
#include "util/common.h"
#include "store/lock.h"
#include "util/error.h"
#include "util/fs.h"

#include <sys/file.h>
#include <time.h>

static unsigned long long proc_start_time(pid_t pid)
{
	char path[64], data[1024];
	unsigned long long start = 0;
	ssize_t n;
	int fd;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = fs_read_all(fd, data, sizeof(data) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	data[n] = '\0';
	/* The command name may contain spaces: fields start after ')'. */
	if (!(p = strrchr(data, ')')))
		return 0;
	p++;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		start = strtoull(p + 1, NULL, 10);
	return start;
}

static void describe_owner(int fd, char *out, size_t len)
{
	char data[512];
	ssize_t n = pread(fd, data, sizeof(data) - 1, 0);
	long pid = 0;
	unsigned long long start = 0;
	char host[256] = "?";

	if (n > 0) {
		data[n] = '\0';
		sscanf(data, "pid %ld\nstart %llu\nhost %255s", &pid, &start,
		       host);
	}
	if (pid > 0)
		snprintf(out, len, "pid %ld on host %s", pid, host);
	else
		snprintf(out, len, "another process");
}

/* flock(fd) with polling until timeout_ms; 1 if it timed out. */
static int wait_flock(int fd, int timeout_ms, const char *what)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned spin = 0;; spin++) {
		long waited;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return decree_error_os("cannot lock '%s'", what);
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (now.tv_sec - start.tv_sec) * 1000 +
			 (now.tv_nsec - start.tv_nsec) / 1000000;
		if (waited >= timeout_ms)
			return 1;
		{
			struct timespec ts = { 0, (spin < 20 ? 2 : 20) *
							  1000000L };
			nanosleep(&ts, NULL);
		}
	}
}

int lock_acquire(store_lock *l, const char *path, int timeout_ms)
{
	char ident[512], host[256] = "";
	int fd, r;

	if (l->depth > 0) {
		l->depth++;
		return 0;
	}
	if (timeout_ms < 0)
		timeout_ms = 30000;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return decree_error_os("cannot open lock '%s'", path);
	if ((r = wait_flock(fd, timeout_ms, path)) != 0) {
		if (r > 0) {
			char owner[400];
			describe_owner(fd, owner, sizeof(owner));
			r = decree_error_set(
				DECREE_ELOCKED,
				"store is locked by %s (waited %d ms)", owner,
				timeout_ms);
		}
		close(fd);
		return r;
	}
	/* a release empties the file: an identity in it is a dead owner's */
	{
		struct stat st;
		l->unclean = fstat(fd, &st) < 0 || st.st_size > 0;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(ident, sizeof(ident), "pid %d\nstart %llu\nhost %s\n",
		 (int)getpid(), proc_start_time(getpid()),
		 host[0] ? host : "unknown");
	/* Identity is informational; failing to write it is not fatal. */
	if (ftruncate(fd, 0) == 0 && pwrite(fd, ident, strlen(ident), 0) < 0)
		(void)0;
	l->fd = fd;
	l->depth = 1;
	return 0;
}

int lock_tree(int *fd_out, int rootfd, const char *root, int timeout_ms)
{
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	*fd_out = -1;
	if (fd < 0)
		return decree_error_os("cannot open '%s'", root);
	if (timeout_ms < 0)
		timeout_ms = 30000;
	if ((r = wait_flock(fd, timeout_ms, root)) != 0) {
		close(fd);
		if (r > 0)
			r = decree_error_set(
				DECREE_ELOCKED,
				"project '%s' is in use by another decree process "
				"(another store; waited %d ms)",
				root, timeout_ms);
		return r;
	}
	*fd_out = fd;
	return 0;
}

void unlock_tree(int *fd)
{
	if (*fd >= 0) {
		flock(*fd, LOCK_UN);
		close(*fd);
		*fd = -1;
	}
}

void lock_release(store_lock *l)
{
	if (l->depth <= 0)
		return;
	if (--l->depth > 0)
		return;
	if (ftruncate(l->fd, 0) < 0)
		(void)0;
	flock(l->fd, LOCK_UN);
	close(l->fd);
	l->fd = -1;
}
