/*
 * test_lock.c - the store lock across processes.
 *
 * flock(2) locks belong to open file descriptions, so a second lock from
 * the same process would succeed; the contenders here are forked children
 * that report through a pipe (cmocka asserts run in the parent only).
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "store/lock.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include <ftw.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

typedef testutil_fixture fixture;

static int setup(void **state)
{
	return testutil_scratch_setup(state, "lock", "lock");
}

static int teardown(void **state)
{
	return testutil_scratch_teardown(state);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What a contender child saw. */
struct attempt {
	int r;
	long waited_ms;
	char msg[400];
};

/* Fork a child that tries the lock once with `timeout_ms` and reports. */
static void try_from_child(struct attempt *out, const char *path,
			   int timeout_ms)
{
	int pfd[2], status;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		store_lock l = STORE_LOCK_INIT;
		struct attempt a;
		long t0 = now_ms();
		memset(&a, 0, sizeof(a));
		close(pfd[0]);
		a.r = lock_acquire(&l, path, timeout_ms);
		a.waited_ms = now_ms() - t0;
		snprintf(a.msg, sizeof(a.msg), "%s", decree_error_last());
		if (a.r == 0)
			lock_release(&l);
		if (fs_write_all(pfd[1], &a, sizeof(a)) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	memset(out, 0, sizeof(*out));
	assert_int_equal(fs_read_all(pfd[0], out, sizeof(*out)), sizeof(*out));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void read_ident(buf *out, const char *path)
{
	buf_clear(out);
	assert_int_equal(fs_read_path(path, out), 0);
}

static void test_reentrant(void **state)
{
	fixture *f = *state;
	store_lock l = STORE_LOCK_INIT;
	struct attempt a;
	buf id = BUF_INIT;
	char want[64];
	int fd;

	lock_release(&l); /* not held: a no-op */
	assert_int_equal(l.depth, 0);
	assert_int_equal(lock_acquire(&l, f->path, 1000), 0);
	assert_int_equal(l.depth, 1);
	fd = l.fd;
	assert_true(fd >= 0);
	assert_int_equal(lock_acquire(&l, f->path, 1000), 0);
	assert_int_equal(l.depth, 2);
	assert_int_equal(l.fd, fd);

	/* the owner's identity is in the file */
	read_ident(&id, f->path);
	snprintf(want, sizeof(want), "pid %d\nstart ", (int)getpid());
	assert_true(!strncmp(id.ptr, want, strlen(want)));
	assert_non_null(strstr(id.ptr, "\nhost "));

	lock_release(&l);
	assert_int_equal(l.depth, 1);
	try_from_child(&a, f->path, 50);
	assert_int_equal(a.r, DECREE_ELOCKED); /* still held after one release
						*/

	lock_release(&l);
	assert_int_equal(l.depth, 0);
	assert_int_equal(l.fd, -1);
	try_from_child(&a, f->path, 50);
	assert_int_equal(a.r, 0);

	/* released: the identity is gone, the file stays */
	read_ident(&id, f->path);
	assert_int_equal(id.len, 0);
	lock_release(&l);
	assert_int_equal(l.depth, 0);
	buf_release(&id);
}

static void test_contender_times_out(void **state)
{
	fixture *f = *state;
	store_lock l = STORE_LOCK_INIT;
	struct attempt a;
	char pid[32];

	assert_int_equal(lock_acquire(&l, f->path, 0), 0);
	snprintf(pid, sizeof(pid), "pid %d", (int)getpid());

	try_from_child(&a, f->path, 300);
	assert_int_equal(a.r, DECREE_ELOCKED);
	if (!strstr(a.msg, pid))
		fail_msg("message does not name the holder (%s): '%s'", pid,
			 a.msg);
	assert_true(a.waited_ms >= 290);
	assert_true(a.waited_ms < 5000);

	/* timeout 0: one try, no waiting */
	try_from_child(&a, f->path, 0);
	assert_int_equal(a.r, DECREE_ELOCKED);
	assert_non_null(strstr(a.msg, pid));
	assert_true(a.waited_ms < 1000);

	/* the holder is unaffected */
	assert_int_equal(l.depth, 1);
	lock_release(&l);
	try_from_child(&a, f->path, 0);
	assert_int_equal(a.r, 0);
}

/* A waiting contender gets the lock as soon as the holder lets go. */
static void test_waiter_gets_it(void **state)
{
	fixture *f = *state;
	store_lock l = STORE_LOCK_INIT;
	int pfd[2], ready[2], status;
	pid_t pid;
	struct attempt a;
	char c;

	assert_int_equal(lock_acquire(&l, f->path, 0), 0);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		store_lock cl = STORE_LOCK_INIT;
		long t0;
		memset(&a, 0, sizeof(a));
		close(pfd[0]);
		close(ready[0]);
		t0 = now_ms();
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		a.r = lock_acquire(&cl, f->path, 10000);
		a.waited_ms = now_ms() - t0;
		if (fs_write_all(pfd[1], &a, sizeof(a)) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1); /* the child is about to
						       wait */
	close(ready[0]);
	{
		struct timespec ts = { 0, 300 * 1000000L };
		nanosleep(&ts, NULL);
	}
	lock_release(&l);
	assert_int_equal(fs_read_all(pfd[0], &a, sizeof(a)), sizeof(a));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(a.r, 0);
	assert_true(a.waited_ms >= 250);
	assert_true(a.waited_ms < 5000);
}

static void test_killed_holder(void **state)
{
	fixture *f = *state;
	store_lock l = STORE_LOCK_INIT;
	int pfd[2], status;
	pid_t pid;
	char c, want[32];
	struct attempt a;
	long t0;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		store_lock cl = STORE_LOCK_INIT;
		close(pfd[0]);
		if (lock_acquire(&cl, f->path, 1000) < 0)
			_exit(1);
		if (write(pfd[1], "k", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);

	/* held by the child: the message names it */
	try_from_child(&a, f->path, 0);
	assert_int_equal(a.r, DECREE_ELOCKED);
	snprintf(want, sizeof(want), "pid %d", (int)pid);
	if (!strstr(a.msg, want))
		fail_msg("message does not name the holder (%s): '%s'", want,
			 a.msg);

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));

	/* taken over at once, no waiting at all */
	t0 = now_ms();
	assert_int_equal(lock_acquire(&l, f->path, 0), 0);
	assert_true(now_ms() - t0 < 2000);
	{
		buf id = BUF_INIT;
		char mine[32];
		read_ident(&id, f->path);
		snprintf(mine, sizeof(mine), "pid %d\n", (int)getpid());
		assert_true(!strncmp(id.ptr, mine, strlen(mine)));
		buf_release(&id);
	}
	lock_release(&l);
}

static void test_bad_paths(void **state)
{
	fixture *f = *state;
	store_lock l = STORE_LOCK_INIT;
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/missing/lock", f->dir);
	assert_int_equal(lock_acquire(&l, p, 0), DECREE_ERROR);
	assert_int_equal(l.depth, 0);
	assert_non_null(strstr(decree_error_last(), "missing/lock"));
	/* a symlink planted at the lock path is not followed */
	snprintf(p, sizeof(p), "%s/link", f->dir);
	assert_int_equal(symlink("target", p), 0);
	assert_int_equal(lock_acquire(&l, p, 0), DECREE_ERROR);
	snprintf(p, sizeof(p), "%s/target", f->dir);
	assert_int_equal(access(p, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reentrant, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_contender_times_out, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_waiter_gets_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_killed_holder, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_paths, setup,
						teardown),
	};

	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
