/*
 * test_fs.c - the file-system layer: path safety, rooted resolution,
 * atomic replace and its fault seam.
 *
 * fs_path_is_safe is a table.  Rooted resolution is tried against a
 * scratch tree with symlinks planted on the way (to a directory inside,
 * to one outside, dangling), which must be refused without creating
 * anything through them; fs_open_beneath is also run with openat2 made to
 * fail (seccomp), so that the component-walk fallback answers the same.
 * fs_write_atomic is failed at every step through
 * fs_fault_hook: the target keeps its old bytes (or stays absent) and no
 * temp file is left.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "util/fs.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <dirent.h>
#include <ftw.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

typedef struct {
	char base[PATH_MAX];	     /* scratch */
	char root[PATH_MAX + 16];    /* <base>/root: the tree */
	char outside[PATH_MAX + 16]; /* <base>/outside */
	int rootfd;
} fixture;

static void mk(const fixture *f, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	int fd;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

static void ln(const fixture *f, const char *target, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(symlink(target, p), 0);
}

static bool exists(const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/*
 * root/
 *   d/            directory
 *   d/file        "in d"
 *   f             regular file
 *   s -> d        symlink to a directory inside
 *   out -> ../outside  symlink to a directory outside
 *   dangling -> nowhere
 *   d/up -> ..    symlink to the parent
 * outside/
 *   secret        "outside"
 */
static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (testutil_mkdtemp(f->base, sizeof(f->base), "fs") < 0) {
		free(f);
		return -1;
	}
	snprintf(f->root, sizeof(f->root), "%s/root", f->base);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->base);
	if (mkdir(f->root, 0755) < 0 || mkdir(f->outside, 0755) < 0)
		return -1;
	mk(f, "d");
	put(f->root, "d/file", "in d");
	put(f->root, "f", "a file");
	ln(f, "d", "s");
	ln(f, "../outside", "out");
	ln(f, "nowhere", "dangling");
	ln(f, "..", "d/up");
	put(f->outside, "secret", "outside");
	f->rootfd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->rootfd < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	fs_fault_hook = NULL;
	close(f->rootfd);
	testutil_rm_rf(f->base);
	free(f);
	return 0;
}

/* --- fs_path_is_safe
 * ------------------------------------------------------------- */

static void test_path_is_safe(void **state)
{
	static const struct {
		const char *path;
		bool safe;	/* refuse_meta = false */
		bool safe_meta; /* refuse_meta = true */
		int line;
	} cases[] = {
#define C(p, a, b) { p, a, b, __LINE__ }
		C("a", true, true),
		C("a/b/c", true, true),
		C("a.b", true, true),
		C("...", true, true),
		C(".a", true, true),
		C("a..", true, true),
		C("..a", true, true),
		C("a b/c d", true, true),
		C("-", true, true),
		C(".gitignore", true, true),
		C(".git.x", true, true),
		C("x.git", true, true),
		C(".gitx/y", true, true),
		C(".decreeignore", true, true),
		C(".decree-x", true, true),
		C(".GIT", true, true), /* case-sensitive file systems */
		C("", false, false),
		C("/", false, false),
		C("/a", false, false),
		C("//a", false, false),
		C(".", false, false),
		C("..", false, false),
		C("./a", false, false),
		C("a/.", false, false),
		C("a/./b", false, false),
		C("../a", false, false),
		C("a/..", false, false),
		C("a/../b", false, false),
		C("a//b", false, false),
		C("a/", false, false),
		C("a/b/", false, false),
		C("a//", false, false),
		C(".git", true, false),
		C(".git/config", true, false),
		C("a/.git", true, false),
		C("a/.git/b", true, false),
		C(".decree", true, false),
		C(".decree/store", true, false),
		C("x/.decree/y", true, true), /* only the root .decree is meta
					       */
#undef C
	};

	UNUSED(state);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool a, b;
		decree_error_clear();
		a = fs_path_is_safe(cases[i].path, false);
		if (!a)
			assert_true(decree_error_last()[0] != '\0');
		b = fs_path_is_safe(cases[i].path, true);
		if (a != cases[i].safe || b != cases[i].safe_meta)
			fail_msg(
				"line %d: '%s': safe=%d safe_meta=%d, want %d %d",
				cases[i].line, cases[i].path, a, b,
				cases[i].safe, cases[i].safe_meta);
		if (!b)
			assert_int_equal(decree_error_last_code(),
					 DECREE_EINVALID);
	}
}

/* --- rooted resolution
 * ------------------------------------------------------------------ */

static ino_t ino_of_fd(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

static ino_t ino_of(const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_ino;
}

static void test_open_parent(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *rel;
		bool create;
		int want;	 /* 0 or an error code */
		const char *dir; /* expected parent ("" root) */
		const char *base;
	} cases[] = {
		{ "x", false, 0, "", "x" },
		{ "f", false, 0, "", "f" },
		{ "d/file", false, 0, "d", "file" },
		{ "d/new", false, 0, "d", "new" },
		{ "s/file", false, DECREE_EINVALID, NULL, NULL },
		{ "s/file", true, DECREE_EINVALID, NULL, NULL },
		{ "out/secret", false, DECREE_EINVALID, NULL, NULL },
		{ "out/new/x", true, DECREE_EINVALID, NULL, NULL },
		{ "dangling/x", true, DECREE_EINVALID, NULL, NULL },
		{ "d/up/f", false, DECREE_EINVALID, NULL, NULL },
		{ "f/x", false, DECREE_EINVALID, NULL, NULL },
		{ "f/x", true, DECREE_EINVALID, NULL, NULL },
		{ "missing/x", false, DECREE_ENOTFOUND, NULL, NULL },
		{ "d/missing/x", false, DECREE_ENOTFOUND, NULL, NULL },
		{ "../outside/secret", false, DECREE_EINVALID, NULL, NULL },
		{ "/etc/passwd", false, DECREE_EINVALID, NULL, NULL },
		{ "d//file", false, DECREE_EINVALID, NULL, NULL },
		{ "", false, DECREE_EINVALID, NULL, NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int dfd = 12345;
		const char *base = NULL;
		int r = fs_open_parent(&dfd, &base, f->rootfd, cases[i].rel,
				       cases[i].create);
		if (r != cases[i].want)
			fail_msg("'%s' create=%d: got %d, want %d (%s)",
				 cases[i].rel, cases[i].create, r,
				 cases[i].want, decree_error_last());
		if (r < 0) {
			assert_int_equal(dfd, -1);
			continue;
		}
		assert_true(dfd >= 3);
		assert_int_not_equal(dfd, f->rootfd);
		assert_string_equal(base, cases[i].base);
		assert_ptr_equal(base, cases[i].rel + strlen(cases[i].rel) -
					       strlen(base));
		if (*cases[i].dir)
			assert_int_equal(ino_of_fd(dfd),
					 ino_of(f->root, cases[i].dir));
		else
			assert_int_equal(ino_of_fd(dfd), ino_of_fd(f->rootfd));
		close(dfd);
	}
	/* nothing was created through the symlinks */
	assert_false(exists(f->outside, "new"));
	assert_false(exists(f->base, "nowhere"));
	assert_false(exists(f->root, "nowhere"));
	assert_false(exists(f->root, "missing"));
}

static void test_open_parent_create(void **state)
{
	fixture *f = *state;
	int dfd;
	const char *base;

	assert_int_equal(fs_open_parent(&dfd, &base, f->rootfd, "n1/n2/n3/leaf",
					true),
			 0);
	assert_string_equal(base, "leaf");
	assert_true(exists(f->root, "n1/n2/n3"));
	assert_false(exists(f->root, "n1/n2/n3/leaf"));
	assert_int_equal(ino_of_fd(dfd), ino_of(f->root, "n1/n2/n3"));
	close(dfd);
	{
		char p[PATH_MAX * 2];
		struct stat st;
		snprintf(p, sizeof(p), "%s/n1/n2", f->root);
		assert_int_equal(stat(p, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
	}
	/* existing dirs are fine, partially existing too */
	assert_int_equal(fs_open_parent(&dfd, &base, f->rootfd,
					"n1/n2/other/leaf", true),
			 0);
	close(dfd);
	assert_true(exists(f->root, "n1/n2/other"));
	/* a symlink half way: refused, nothing created below its target */
	assert_int_equal(fs_open_parent(&dfd, &base, f->rootfd, "d/up/evil/x",
					true),
			 DECREE_EINVALID);
	assert_false(exists(f->base, "evil"));
	assert_int_equal(fs_open_parent(&dfd, &base, f->rootfd, "s/evil/x",
					true),
			 DECREE_EINVALID);
	assert_false(exists(f->root, "d/evil"));
}

static int fail_mkdir(const char *step)
{
	return strcmp(step, "mkdir") ? 0 : ENOSPC;
}

static void test_open_parent_mkdir_fault(void **state)
{
	fixture *f = *state;
	int dfd;
	const char *base;
	int r;

	fs_fault_hook = fail_mkdir;
	r = fs_open_parent(&dfd, &base, f->rootfd, "m1/m2/x", true);
	fs_fault_hook = NULL;
	assert_true(r < 0);
	assert_int_equal(dfd, -1);
	assert_false(exists(f->root, "m1"));
	assert_non_null(strstr(decree_error_last(), "m1"));
	assert_non_null(strstr(decree_error_last(), strerror(ENOSPC)));
}

static const struct {
	const char *rel;
	int want_errno; /* 0: opens */
	int alt_errno;	/* also acceptable */
} beneath_cases[] = {
	{ "f", 0, 0 },
	{ "d/file", 0, 0 },
	{ "s", ELOOP, ELOOP },	    /* the last component a symlink */
	{ "s/file", ELOOP, ELOOP }, /* a symlink on the way */
	{ "out/secret", ELOOP, ELOOP },
	{ "dangling", ELOOP, ELOOP },
	{ "d/up/f", ELOOP, ELOOP },
	{ "missing", ENOENT, ENOENT },
	{ "missing/x", ENOENT, ENOENT }, /* a missing directory is not a symlink
					  */
	{ "d/missing/x", ENOENT, ENOENT },
	{ "f/x", ENOTDIR, ELOOP },
	{ "../outside/secret", EXDEV, ELOOP },
	{ "d/../../outside/secret", EXDEV, ELOOP },
};

/* Run the table; returns the number of mismatches (printed). */
static int check_beneath(const fixture *f, const char *mode)
{
	int bad = 0;

	for (size_t i = 0; i < ARRAY_SIZE(beneath_cases); i++) {
		int fd;
		errno = 0;
		fd = fs_open_beneath(f->rootfd, beneath_cases[i].rel, O_RDONLY);
		if (beneath_cases[i].want_errno == 0) {
			if (fd < 0) {
				fprintf(stderr, "%s: '%s': %s\n", mode,
					beneath_cases[i].rel, strerror(errno));
				bad++;
			} else {
				close(fd);
			}
			continue;
		}
		if (fd >= 0) {
			close(fd);
			fprintf(stderr, "%s: '%s' opened\n", mode,
				beneath_cases[i].rel);
			bad++;
		} else if (errno != beneath_cases[i].want_errno &&
			   errno != beneath_cases[i].alt_errno) {
			fprintf(stderr, "%s: '%s': errno %d (%s), want %s\n",
				mode, beneath_cases[i].rel, errno,
				strerror(errno),
				strerror(beneath_cases[i].want_errno));
			bad++;
		}
	}
	/* an absolute path never opens (a root fd does not make it relative) */
	{
		char abs[PATH_MAX * 2];
		int fd;
		snprintf(abs, sizeof(abs), "%s/secret", f->outside);
		fd = fs_open_beneath(f->rootfd, abs, O_RDONLY);
		if (fd >= 0) {
			close(fd);
			fprintf(stderr, "%s: absolute path '%s' opened\n", mode,
				abs);
			bad++;
		}
	}
	return bad;
}

static void test_open_beneath(void **state)
{
	fixture *f = *state;

	assert_int_equal(check_beneath(f, "openat2"), 0);
}

/*
 * Kernels before 5.6 have no openat2: fs_open_beneath falls back to a
 * component walk.  A child process makes openat2 fail with ENOSYS through
 * a seccomp filter and runs the same table, so the fallback must give the
 * same answers.
 */
static void test_open_beneath_fallback(void **state)
{
	fixture *f = *state;
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sock_filter filt[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
			BPF_STMT(BPF_RET | BPF_K,
				 SECCOMP_RET_ERRNO |
					 (ENOSYS & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { (unsigned short)ARRAY_SIZE(filt),
					   filt };
		long fd;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(100);
		fd = syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0);
		if (fd >= 0 || errno != ENOSYS)
			_exit(101);
		_exit(check_beneath(f, "fallback") ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) >= 100)
		skip(); /* no seccomp here */
	if (WEXITSTATUS(status) != 0)
		fail_msg(
			"the component-walk fallback of fs_open_beneath disagrees with "
			"openat2 (see stderr)");
}

static void test_open_dir(void **state)
{
	fixture *f = *state;
	int fd;

	assert_int_equal(fs_open_dir(&fd, f->rootfd, ""), 0);
	assert_true(fd >= 3 && fd != f->rootfd);
	assert_int_equal(ino_of_fd(fd), ino_of_fd(f->rootfd));
	close(fd);
	assert_int_equal(fs_open_dir(&fd, f->rootfd, "d"), 0);
	assert_int_equal(ino_of_fd(fd), ino_of(f->root, "d"));
	close(fd);
	assert_int_equal(fs_open_dir(&fd, f->rootfd, "missing"),
			 DECREE_ENOTFOUND);
	assert_int_equal(fd, -1);
	assert_true(fs_open_dir(&fd, f->rootfd, "s") < 0);
	assert_true(fs_open_dir(&fd, f->rootfd, "s/x") < 0);
	assert_true(fs_open_dir(&fd, f->rootfd, "f") < 0);
	assert_int_equal(fd, -1);
}

/* --- atomic replace
 * ------------------------------------------------------------------- */

static char fault_step[16];
static int fault_n, fault_calls;

static int nth_fault(const char *step)
{
	if (strcmp(step, fault_step))
		return 0;
	return ++fault_calls == fault_n ? EIO : 0;
}

/* Names in `dir` other than the expected ones: temp files left behind. */
static size_t stray_files(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, keep))
			continue;
		fprintf(stderr, "stray file '%s'\n", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static void read_text(buf *out, const char *path)
{
	buf_clear(out);
	assert_int_equal(fs_read_path(path, out), 0);
}

static void test_write_atomic_faults(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *step;
		int n;
		bool target_new; /* after the failure */
	} cases[] = {
		{ "open", 1, false },
		{ "write", 1, false },
		{ "fsync", 1, false }, /* the file */
		{ "rename", 1, false },
		{ "fsync", 2, true }, /* the directory: already renamed */
	};
	char dir[PATH_MAX * 2], target[PATH_MAX * 3];
	buf text = BUF_INIT;

	snprintf(dir, sizeof(dir), "%s/atomic", f->base);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(target, sizeof(target), "%s/target", dir);
	for (int existing = 0; existing < 2; existing++) {
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			int r;
			unlink(target);
			if (existing)
				put(dir, "target", "old bytes");
			snprintf(fault_step, sizeof(fault_step), "%s",
				 cases[i].step);
			fault_n = cases[i].n;
			fault_calls = 0;
			fs_fault_hook = nth_fault;
			r = fs_write_atomic(target, "new bytes", 9, 0644);
			fs_fault_hook = NULL;
			if (r >= 0)
				fail_msg("%s #%d: no error", cases[i].step,
					 cases[i].n);
			assert_int_equal(fault_calls, cases[i].n);
			assert_true(strstr(decree_error_last(), "target") !=
				    NULL);
			assert_int_equal(stray_files(dir, "target"), 0);
			if (cases[i].target_new) {
				read_text(&text, target);
				assert_string_equal(text.ptr, "new bytes");
			} else if (existing) {
				read_text(&text, target);
				assert_string_equal(text.ptr, "old bytes");
			} else {
				assert_false(exists(dir, "target"));
			}
		}
	}
	/* and without faults: replaced, mode as asked, nothing else */
	assert_int_equal(fs_write_atomic(target, "final", 5, 0600), 0);
	read_text(&text, target);
	assert_string_equal(text.ptr, "final");
	{
		struct stat st;
		assert_int_equal(stat(target, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
	assert_int_equal(stray_files(dir, "target"), 0);
	/* a relative name in the current directory */
	{
		char cwd[PATH_MAX];
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(dir), 0);
		assert_int_equal(fs_write_atomic("target", "relative", 8, 0644),
				 0);
		assert_int_equal(chdir(cwd), 0);
		read_text(&text, target);
		assert_string_equal(text.ptr, "relative");
	}
	buf_release(&text);
}

/* fs_write_cache: no fsync, and the old file is removed before the
 * rename (fs_rename_unsynced), so that the rename replaces nothing; no
 * temp file is left, whatever fails. */
static void test_write_cache(void **state)
{
	fixture *f = *state;
	/* old_kept: the old file is still there after the failure (a failed
	 * rename leaves none: only a cache) */
	static const struct {
		const char *step;
		bool old_kept;
	} cases[] = {
		{ "open", true },
		{ "write", true },
		{ "rename", false },
	};
	char dir[PATH_MAX * 2], target[PATH_MAX * 3];
	buf text = BUF_INIT;
	struct stat before, after;

	snprintf(dir, sizeof(dir), "%s/cache", f->base);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(target, sizeof(target), "%s/target", dir);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		put(dir, "target", "old bytes");
		snprintf(fault_step, sizeof(fault_step), "%s", cases[i].step);
		fault_n = 1;
		fault_calls = 0;
		fs_fault_hook = nth_fault;
		if (fs_write_cache(target, "new bytes", 9) >= 0)
			fail_msg("%s: no error", cases[i].step);
		fs_fault_hook = NULL;
		assert_int_equal(stray_files(dir, "target"), 0);
		if (cases[i].old_kept) {
			read_text(&text, target);
			assert_string_equal(text.ptr, "old bytes");
		} else {
			assert_false(exists(dir, "target"));
		}
	}
	/* no fsync is asked for: a fault there is never reached */
	put(dir, "target", "old bytes");
	assert_int_equal(stat(target, &before), 0);
	snprintf(fault_step, sizeof(fault_step), "fsync");
	fault_n = 1;
	fault_calls = 0;
	fs_fault_hook = nth_fault;
	assert_int_equal(fs_write_cache(target, "new bytes", 9), 0);
	fs_fault_hook = NULL;
	assert_int_equal(fault_calls, 0);
	read_text(&text, target);
	assert_string_equal(text.ptr, "new bytes");
	assert_int_equal(stat(target, &after), 0);
	assert_int_equal(after.st_mode & 07777, 0644);
	assert_int_equal(stray_files(dir, "target"), 0);
	/* and where there is nothing to replace */
	assert_int_equal(unlink(target), 0);
	assert_int_equal(fs_write_cache(target, "first", 5), 0);
	read_text(&text, target);
	assert_string_equal(text.ptr, "first");
	buf_release(&text);
}

static void test_io_helpers(void **state)
{
	fixture *f = *state;
	char p[PATH_MAX * 2];
	buf b = BUF_INIT;
	int fd, pfd[2];
	static char big[200000];
	static char back[200000];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	snprintf(p, sizeof(p), "%s/io", f->base);
	fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, big, sizeof(big)), 0);
	assert_int_equal(fs_fsync(fd, "io"), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(fs_read_all(fd, back, sizeof(back)), sizeof(back));
	assert_memory_equal(big, back, sizeof(big));
	assert_int_equal(fs_read_all(fd, back, 10), 0); /* at EOF */
	assert_int_equal(fs_close(fd), 0);
	assert_int_equal(fs_read_path(p, &b), 0);
	assert_int_equal(b.len, sizeof(big));
	assert_memory_equal(b.ptr, big, sizeof(big));
	assert_int_equal(b.ptr[b.len], '\0');
	buf_clear(&b);
	assert_int_equal(fs_read_at(f->rootfd, "f", &b), 0);
	assert_string_equal(b.ptr, "a file");
	buf_clear(&b);
	/* a symlink: not followed */
	assert_int_equal(fs_read_at(f->rootfd, "s", &b), DECREE_EINVALID);
	assert_int_equal(fs_read_at(f->rootfd, "nope", &b), DECREE_ENOTFOUND);
	/* a FIFO is never opened (it would block until a writer comes), a
	 * directory is not read; alarm() turns a hang into a failure */
	snprintf(p, sizeof(p), "%s/root/fifo", f->base);
	assert_int_equal(mkfifo(p, 0644), 0);
	alarm(10);
	assert_int_equal(fs_read_path(p, &b), DECREE_EINVALID);
	assert_non_null(strstr(error_last(), "is not a regular file"));
	assert_int_equal(fs_read_at(f->rootfd, "fifo", &b), DECREE_EINVALID);
	alarm(0);
	assert_int_equal(fs_read_at(f->rootfd, "d", &b), DECREE_EINVALID);
	snprintf(p, sizeof(p), "%s/root/d", f->base);
	assert_int_equal(fs_read_path(p, &b), DECREE_EINVALID);
	assert_int_equal(b.len, 0);
	snprintf(p, sizeof(p), "%s/nope", f->base);
	assert_int_equal(fs_read_path(p, &b), DECREE_ENOTFOUND);
	/* a pipe: no size hint, read to EOF */
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(fs_write_all(pfd[1], "through a pipe", 14), 0);
	close(pfd[1]);
	buf_clear(&b);
	assert_int_equal(fs_read_fd(pfd[0], &b, "pipe"), 0);
	close(pfd[0]);
	assert_string_equal(b.ptr, "through a pipe");
	/* a failing write reports, and writes nothing */
	snprintf(fault_step, sizeof(fault_step), "write");
	fault_n = 1;
	fault_calls = 0;
	fs_fault_hook = nth_fault;
	assert_int_equal(fs_write_all(1, "x", 1), -1);
	assert_int_equal(errno, EIO);
	fs_fault_hook = NULL;
	buf_release(&b);
}

static void test_mkdirs(void **state)
{
	fixture *f = *state;
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/m/n/o", f->base);
	assert_int_equal(fs_mkdirs(p, 0755), 0);
	assert_true(exists(f->base, "m/n/o"));
	assert_int_equal(fs_mkdirs(p, 0755), 0); /* again: fine */
	snprintf(p, sizeof(p), "%s/f/below", f->root);
	assert_int_equal(fs_mkdirs(p, 0755), DECREE_EINVALID);
	snprintf(p, sizeof(p), "%s/m/n/o/", f->base); /* trailing slash */
	assert_int_equal(fs_mkdirs(p, 0755), 0);
}

static void test_tempfiles(void **state)
{
	fixture *f = *state;
	char p[PATH_MAX * 2];
	pid_t pid;
	int status;

	/* a child registers and exits: its temp is removed at exit */
	snprintf(p, sizeof(p), "%s/child.tmp", f->base);
	put(f->base, "child.tmp", "temp");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tempfile_install_handlers();
		tempfile_register(p);
		exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(exists(f->base, "child.tmp"));

	/* registered in the parent, the child's exit leaves it alone */
	put(f->base, "parent.tmp", "temp");
	snprintf(p, sizeof(p), "%s/parent.tmp", f->base);
	assert_int_equal(tempfile_register(p), 0);
	tempfile_install_handlers();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(exists(f->base, "parent.tmp"));
	tempfile_unregister(p);

	/* a child killed by SIGTERM still cleans up */
	snprintf(p, sizeof(p), "%s/term.tmp", f->base);
	put(f->base, "term.tmp", "temp");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tempfile_install_handlers();
		tempfile_register(p);
		raise(SIGTERM);
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_false(exists(f->base, "term.tmp"));
}

/* fs_pending_*: visible whole at publish, synced later; a fault at create,
 * write or rename leaves no temp file and the old target; one at either
 * fsync (asked at finish) is reported after the file is in place. */
static void test_write_pending(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *step;
		int n;
		bool target_new;
	} cases[] = {
		{ "open", 1, false },	{ "write", 1, false },
		{ "rename", 1, false }, { "fsync", 1, true },
		{ "fsync", 2, true },
	};
	char dir[PATH_MAX * 2], target[PATH_MAX * 3];
	fs_pending p = FS_PENDING_INIT;
	buf text = BUF_INIT;

	/* the empty state: nothing to finish or abort */
	assert_int_equal(fs_pending_finish(&p), 0);
	fs_pending_abort(&p);
	snprintf(dir, sizeof(dir), "%s/pending", f->base);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(target, sizeof(target), "%s/target", dir);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r;
		put(dir, "target", "old bytes");
		snprintf(fault_step, sizeof(fault_step), "%s", cases[i].step);
		fault_n = cases[i].n;
		fault_calls = 0;
		fs_fault_hook = nth_fault;
		r = fs_pending_create(&p, target, 0644);
		if (r == 0 && fs_write_all(p.fd, "new bytes", 9) < 0) {
			r = decree_error_os("cannot write '%s'", target);
			fs_pending_abort(&p);
		}
		if (r == 0 && (r = fs_pending_publish(&p)) == 0) {
			/* published: whole under its name before any fsync */
			read_text(&text, target);
			assert_string_equal(text.ptr, "new bytes");
			fs_pending_sync(&p); /* (what a thread would do) */
			r = fs_pending_finish(&p);
		}
		fs_fault_hook = NULL;
		if (r >= 0)
			fail_msg("%s #%d: no error", cases[i].step, cases[i].n);
		assert_int_equal(fault_calls, cases[i].n);
		if (!strstr(decree_error_last(), "target"))
			fail_msg("%s #%d: error '%s'", cases[i].step,
				 cases[i].n, decree_error_last());
		assert_int_equal(p.fd, -1); /* closed, reset */
		assert_int_equal(stray_files(dir, "target"), 0);
		read_text(&text, target);
		assert_string_equal(text.ptr, cases[i].target_new
						      ? "new bytes"
						      : "old bytes");
	}
	/* without faults; then an abort before publish removes the temp */
	assert_int_equal(fs_pending_create(&p, target, 0600), 0);
	assert_int_equal(fs_write_all(p.fd, "final", 5), 0);
	assert_int_equal(fs_pending_publish(&p), 0);
	assert_int_equal(fs_pending_finish(&p), 0);
	read_text(&text, target);
	assert_string_equal(text.ptr, "final");
	assert_int_equal(fs_pending_create(&p, target, 0600), 0);
	assert_int_equal(fs_write_all(p.fd, "dropped", 7), 0);
	fs_pending_abort(&p);
	assert_int_equal(stray_files(dir, "target"), 0);
	read_text(&text, target);
	assert_string_equal(text.ptr, "final");
	buf_release(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_is_safe),
		cmocka_unit_test_setup_teardown(test_open_parent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_parent_create, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_parent_mkdir_fault,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_beneath, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_beneath_fallback,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_atomic_faults, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_cache, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_pending, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_io_helpers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mkdirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tempfiles, setup,
						teardown),
	};

	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
