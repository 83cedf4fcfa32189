/*
 * fs.c - syscall wrappers: EINTR loops, atomic replace, rooted path
 * resolution, temp-file cleanup on signals.
 *
 * Atomic replace order (never changed): open temp in the same directory with
 * O_CREAT|O_EXCL|O_CLOEXEC, write all, fsync, close, rename, fsync the
 * directory.  A failure at any step unlinks the temp and names the step.
 */
#include "util/common.h"
#include "util/fs.h"
#include "util/alloc.h"
#include "util/error.h"

#include <dirent.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>

int (*fs_fault_hook)(const char *step);

static int fault(const char *step)
{
	int e;
	if (fs_fault_hook && (e = fs_fault_hook(step)) != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

int fs_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	if (fault("write") < 0)
		return -1;
	while (len) {
		ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t fs_read_all(int fd, void *data, size_t len)
{
	char *p = data;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int fs_close(int fd)
{
	/* Linux closes the fd even when close() reports EINTR. */
	if (close(fd) < 0 && errno != EINTR)
		return -1;
	return 0;
}

int fs_read_fd(int fd, buf *out, const char *name)
{
	struct stat st;
	size_t hint = 0;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		hint = (size_t)st.st_size;
	return fs_read_sized(fd, out, name, hint);
}

int fs_read_sized(int fd, buf *out, const char *name, size_t hint)
{
	if (buf_grow(out, hint ? hint : 4096) < 0)
		return -1;
	for (;;) {
		ssize_t n;
		if (out->cap - out->len < 2 && buf_grow(out, 65536) < 0)
			return -1;
		n = read(fd, out->ptr + out->len, out->cap - out->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return decree_error_os("cannot read '%s'", name);
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
	}
	out->ptr[out->len] = '\0';
	return 0;
}

/*
 * Read dirfd/name whole if it is a regular file.  A FIFO, socket or device
 * is never opened for reading (opening a FIFO blocks until a writer comes,
 * reading a device may never end): it is refused after an lstat/stat, and
 * the open itself is O_NONBLOCK with an fstat after it, for the one that
 * takes the name's place in between.
 */
static int read_regular(int dirfd, const char *name, bool nofollow, buf *out)
{
	struct stat st;
	int fd, r;

	if (fstatat(dirfd, name, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0) < 0) {
		if (errno == ENOENT)
			return decree_error_set(DECREE_ENOTFOUND,
						"'%s' does not exist", name);
		return decree_error_os("cannot stat '%s'", name);
	}
	if (!S_ISREG(st.st_mode))
		goto not_regular;
	fd = openat(dirfd, name,
		    O_RDONLY | O_NONBLOCK | O_CLOEXEC |
			    (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0) {
		if (errno == ENOENT)
			return decree_error_set(DECREE_ENOTFOUND,
						"'%s' does not exist", name);
		return decree_error_os("cannot open '%s'", name);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		goto not_regular;
	}
	r = fs_read_sized(fd, out, name, (size_t)st.st_size);
	close(fd);
	return r;
not_regular:
	return decree_error_set(DECREE_EINVALID, "'%s' is not a regular file",
				name);
}

int fs_read_path(const char *path, buf *out)
{
	return read_regular(AT_FDCWD, path, false, out);
}

int fs_read_at(int dirfd, const char *name, buf *out)
{
	return read_regular(dirfd, name, true, out);
}

int fs_fsync(int fd, const char *name)
{
	if (fault("fsync") < 0 || fsync(fd) < 0)
		return decree_error_os("cannot fsync '%s'", name);
	return 0;
}

int fs_fsync_dir_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return decree_error_os("cannot open directory '%s'", path);
	r = fs_fsync(fd, path);
	close(fd);
	return r;
}

/* Create a new temp file ".NAME.tmp-<12 hex>" in dirfd, its name in tmp
 * (tmpsz bytes): its fd; -1 with errno set when it cannot be created; -2
 * when no random bytes could be had (a decree error is set). */
static int create_temp(int dirfd, const char *name, char *tmp, size_t tmpsz,
		       mode_t mode)
{
	unsigned char rnd[6];

	if (fs_random(rnd, sizeof(rnd)) < 0)
		return -2;
	snprintf(tmp, tmpsz, ".%s.tmp-%02x%02x%02x%02x%02x%02x", name, rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	if (fault("open") < 0)
		return -1;
	return openat(dirfd, tmp,
		      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		      mode);
}

/* Open the directory of `path` ("." for a bare name): its fd, *name its
 * last component; -1 with a decree error. */
static int open_parent(const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int dfd;

	*name = slash ? slash + 1 : path;
	if (!slash) {
		dir[0] = '.';
		dir[1] = '\0';
	} else {
		size_t n = (size_t)(slash - path);
		if (n >= sizeof(dir))
			return decree_error_set(DECREE_EINVALID,
						"path too long");
		memcpy(dir, path, n ? n : 1);
		dir[n ? n : 1] = '\0';
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return decree_error_os("cannot open directory '%s'", dir);
	return dfd;
}

int fs_rename_unsynced(int olddirfd, const char *old, int newdirfd,
		       const char *name)
{
	/* (an unlink that fails leaves the rename to replace the file) */
	(void)unlinkat(newdirfd, name, 0);
	if (fault("rename") < 0)
		return -1;
	return renameat(olddirfd, old, newdirfd, name);
}

/*
 * The end of an atomic write, the temp `tmp` in dirfd written through fd:
 * fsync it (sync), close it, rename it to `name` (without sync: a cache,
 * fs_rename_unsynced), fsync dirfd (sync).  fd is closed either way, and
 * the temp removed unless the rename was made.  0, or -1 with errno and
 * *step the step that failed ("fsync", "close", "rename", "fsync
 * directory of").
 */
static int finish_temp(int fd, int dirfd, const char *tmp, const char *name,
		       bool sync, const char **step)
{
	int saved;

	*step = "fsync";
	if (sync && (fault("fsync") < 0 || fsync(fd) < 0))
		goto fail;
	*step = "close";
	if (fs_close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	*step = "rename";
	if (sync ? fault("rename") < 0 || renameat(dirfd, tmp, dirfd, name) < 0
		 : fs_rename_unsynced(dirfd, tmp, dirfd, name) < 0)
		goto fail;
	*step = "fsync directory of";
	if (sync && (fault("fsync") < 0 || fsync(dirfd) < 0))
		return -1;
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	errno = saved;
	return -1;
}

static int write_atomic(int dirfd, const char *name, const void *data,
			size_t len, mode_t mode, bool sync)
{
	char tmp[PATH_MAX];
	const char *step;
	int fd, saved;

	step = "create";
	fd = create_temp(dirfd, name, tmp, sizeof(tmp), mode);
	if (fd == -2)
		return -1;
	if (fd < 0)
		return decree_error_os("cannot %s '%s'", step, name);
	if (fs_write_all(fd, data, len) < 0) {
		saved = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return decree_error_os("cannot write '%s'", name);
	}
	if (finish_temp(fd, dirfd, tmp, name, sync, &step) < 0)
		return decree_error_os("cannot %s '%s'", step, name);
	return 0;
}

int fs_write_atomic_at(int dirfd, const char *name, const void *data,
		       size_t len, mode_t mode)
{
	return write_atomic(dirfd, name, data, len, mode, true);
}

static int write_atomic_path(const char *path, const void *data, size_t len,
			     mode_t mode, bool sync)
{
	const char *name;
	int dfd = open_parent(path, &name), r;

	if (dfd < 0)
		return dfd;
	r = write_atomic(dfd, name, data, len, mode, sync);
	close(dfd);
	return r;
}

int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic_path(path, data, len, mode, true);
}

int fs_pending_create(fs_pending *out, const char *path, mode_t mode)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	int r;

	*out = (fs_pending)FS_PENDING_INIT;
	if (strlen(path) >= sizeof(out->name) ||
	    strlen(name) + 24 >= sizeof(out->tmp))
		return decree_error_set(DECREE_EINVALID, "path too long: '%s'",
					path);
	if ((r = open_parent(path, &name)) < 0)
		return r;
	out->dirfd = r;
	snprintf(out->name, sizeof(out->name), "%s", path);
	out->base = (size_t)(name - path);
	out->fd =
		create_temp(out->dirfd, name, out->tmp, sizeof(out->tmp), mode);
	if (out->fd == -2) {
		close(out->dirfd);
		*out = (fs_pending)FS_PENDING_INIT;
		return -1;
	}
	if (out->fd < 0) {
		int saved = errno;
		close(out->dirfd);
		*out = (fs_pending)FS_PENDING_INIT;
		errno = saved;
		return decree_error_os("cannot create '%s'", path);
	}
	return 0;
}

int fs_pending_publish(fs_pending *p)
{
	if (fault("rename") < 0 ||
	    renameat(p->dirfd, p->tmp, p->dirfd, p->name + p->base) < 0) {
		int r = decree_error_os("cannot rename '%s'", p->name);
		fs_pending_abort(p);
		return r;
	}
	p->tmp[0] = '\0';
	return 0;
}

void fs_pending_abort(fs_pending *p)
{
	if (p->fd < 0)
		return;
	if (p->tmp[0])
		unlinkat(p->dirfd, p->tmp, 0);
	close(p->fd);
	close(p->dirfd);
	*p = (fs_pending)FS_PENDING_INIT;
}

int fs_pending_publish_synced(fs_pending *p)
{
	const char *step;
	int r = 0;

	if (finish_temp(p->fd, p->dirfd, p->tmp, p->name + p->base, true,
			&step) < 0)
		r = decree_error_os("cannot %s '%s'", step, p->name);
	close(p->dirfd);
	*p = (fs_pending)FS_PENDING_INIT;
	return r;
}

void fs_pending_sync(fs_pending *p)
{
	if (p->synced || p->fd < 0)
		return;
	if (fsync(p->fd) < 0)
		p->file_err = errno ? errno : EIO;
	else if (fsync(p->dirfd) < 0)
		p->dir_err = errno ? errno : EIO;
	p->synced = true;
}

int fs_pending_finish(fs_pending *p)
{
	int r = 0;

	if (p->fd < 0)
		return 0;
	fs_pending_sync(p);
	if (fault("fsync") < 0 || (p->file_err && (errno = p->file_err)))
		r = decree_error_os("cannot fsync '%s'", p->name);
	else if (fault("fsync") < 0 || (p->dir_err && (errno = p->dir_err)))
		r = decree_error_os("cannot fsync directory of '%s'", p->name);
	if (fs_close(p->fd) < 0 && r == 0)
		r = decree_error_os("cannot close '%s'", p->name);
	close(p->dirfd);
	*p = (fs_pending)FS_PENDING_INIT;
	return r;
}

int fs_write_cache(const char *path, const void *data, size_t len)
{
	return write_atomic_path(path, data, len, 0644, false);
}

/* Empty the directory `fd` (closed here), never following a symlink. */
static int remove_contents(int fd)
{
	struct dirent *de;
	DIR *d = fdopendir(fd);
	int r = 0;

	if (!d) {
		close(fd);
		return -1;
	}
	while (r == 0 && (de = readdir(d)) != NULL) {
		int sub;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			r = -1;
			break;
		}
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || remove_contents(sub) < 0 ||
		    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
			r = -1;
	}
	closedir(d);
	return r;
}

int fs_remove_path(const char *path)
{
	int fd;

	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return decree_error_os("cannot remove '%s'", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || remove_contents(fd) < 0 ||
	    (rmdir(path) < 0 && errno != ENOENT))
		return decree_error_os("cannot remove '%s'", path);
	return 0;
}

int fs_mkdirs(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	struct stat st;

	if (n >= sizeof(tmp))
		return decree_error_set(DECREE_EINVALID, "path too long: '%s'",
					path);
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return decree_error_os("cannot create directory '%s'",
					       tmp);
		if (errno == EEXIST && stat(tmp, &st) == 0 &&
		    !S_ISDIR(st.st_mode))
			return decree_error_set(DECREE_EINVALID,
						"'%s' is not a directory", tmp);
		tmp[i] = path[i];
	}
	return 0;
}

bool fs_path_is_safe(const char *rel, bool refuse_meta)
{
	const char *p = rel, *e;

	if (!*rel || *rel == '/') {
		decree_error_set(DECREE_EINVALID, "unsafe path '%s'", rel);
		return false;
	}
	while (*p) {
		size_t n;
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			decree_error_set(DECREE_EINVALID, "unsafe path '%s'",
					 rel);
			return false;
		}
		if (refuse_meta &&
		    ((n == 4 && !memcmp(p, ".git", 4)) ||
		     (p == rel && n == 7 && !memcmp(p, ".decree", 7)))) {
			decree_error_set(DECREE_EINVALID,
					 "path '%s' is inside '%.*s'", rel,
					 (int)n, p);
			return false;
		}
		if (!e)
			break;
		p = e + 1;
		if (!*p) { /* trailing slash */
			decree_error_set(DECREE_EINVALID, "unsafe path '%s'",
					 rel);
			return false;
		}
	}
	return true;
}

/*
 * openat2(rel beneath rootfd, no symlink anywhere on the way): the fd, or
 * -1 with errno; -2 when the kernel has no openat2 (or a seccomp filter
 * refuses it), and then never again.
 */
static int openat2_beneath(int rootfd, const char *rel, int flags)
{
#ifdef SYS_openat2
	/* read and cleared by any thread (a diff's formatters open files
	 * here): relaxed atomics, the only state is "seen ENOSYS" */
	static int have_openat2 = 1;
	if (__atomic_load_n(&have_openat2, __ATOMIC_RELAXED)) {
		struct open_how how;
		long fd;
		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			      RESOLVE_NO_MAGICLINKS;
		do {
			fd = syscall(SYS_openat2, rootfd, rel, &how,
				     sizeof(how));
		} while (fd < 0 && (errno == EINTR || errno == EAGAIN));
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
			return (int)fd;
		__atomic_store_n(&have_openat2, 0, __ATOMIC_RELAXED);
	}
#else
	(void)rootfd;
	(void)rel;
	(void)flags;
#endif
	return -2;
}

int fs_open_parent(int *dirfd_out, const char **base_out, int rootfd,
		   const char *rel, bool create)
{
	const char *p = rel, *slash;
	char comp[NAME_MAX + 1];
	int cur = -1, next;

	*dirfd_out = -1;
	if (!fs_path_is_safe(rel, false)) {
		errno = EXDEV; /* what openat2 RESOLVE_BENEATH says for escapes
				*/
		return DECREE_EINVALID;
	}
	/* The parent in one step where it is simply there: openat2 refuses
	 * the same symlinks the walk below does.  Anything else (missing,
	 * to create, not a directory, a low fd) goes the walk's way, which
	 * says exactly what is wrong. */
	if ((slash = strrchr(rel, '/')) != NULL &&
	    (size_t)(slash - rel) < PATH_MAX) {
		char parent[PATH_MAX];
		int fd;
		memcpy(parent, rel, (size_t)(slash - rel));
		parent[slash - rel] = '\0';
		fd = openat2_beneath(rootfd, parent, O_RDONLY | O_DIRECTORY);
		if (fd >= 3) {
			*dirfd_out = fd;
			*base_out = slash + 1;
			return 0;
		}
		if (fd >= 0)
			close(fd);
		errno = 0;
	}
	if ((cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3)) < 0)
		return decree_error_os("cannot dup root fd");
	while ((slash = strchr(p, '/')) != NULL) {
		size_t n = (size_t)(slash - p);
		if (n > NAME_MAX) {
			close(cur);
			return decree_error_set(
				DECREE_EINVALID,
				"path component too long in '%s'", rel);
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = openat(cur, comp,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (fault("mkdir") < 0 ||
			    (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)) {
				int r = decree_error_os(
					"cannot create directory '%.*s'",
					(int)(slash - rel), rel);
				close(cur);
				return r;
			}
			next = openat(cur, comp,
				      O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					      O_CLOEXEC);
		}
		if (next < 0) {
			int e = errno, r;
			struct stat lst;
			/* O_DIRECTORY reports a symlink as ENOTDIR; say ELOOP
			 * like openat2 does */
			if (e == ENOTDIR &&
			    fstatat(cur, comp, &lst, AT_SYMLINK_NOFOLLOW) ==
				    0 &&
			    S_ISLNK(lst.st_mode))
				e = ELOOP;
			if (e == ENOENT)
				r = decree_error_set(DECREE_ENOTFOUND,
						     "'%.*s' does not exist",
						     (int)(slash - rel), rel);
			else if (e == ELOOP || e == ENOTDIR)
				r = decree_error_set(
					DECREE_EINVALID,
					"'%.*s' is a symlink or not a directory",
					(int)(slash - rel), rel);
			else
				r = decree_error_os("cannot open '%.*s'",
						    (int)(slash - rel), rel);
			close(cur);
			errno = e;
			return r;
		}
		close(cur);
		cur = next;
		p = slash + 1;
	}
	*dirfd_out = cur;
	*base_out = p;
	return 0;
}

int fs_open_dir(int *fd_out, int rootfd, const char *rel)
{
	const char *base;
	int dfd, fd, r;

	*fd_out = -1;
	if (!*rel) {
		if ((fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3)) < 0)
			return decree_error_os("cannot dup root fd");
		*fd_out = fd;
		return 0;
	}
	if ((r = fs_open_parent(&dfd, &base, rootfd, rel, false)) < 0)
		return r;
	fd = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0) {
		if (errno == ENOENT)
			return decree_error_set(DECREE_ENOTFOUND,
						"'%s' does not exist", rel);
		if (errno == ENOTDIR || errno == ELOOP)
			return decree_error_set(
				DECREE_EINVALID,
				"'%s' is a symlink or not a directory", rel);
		return decree_error_os("cannot open directory '%s'", rel);
	}
	*fd_out = fd;
	return 0;
}

/* --- temp files --------------------------------------------------------- */

#define MAX_TEMPS 64
static char *temp_paths[MAX_TEMPS];
static pid_t temp_owner[MAX_TEMPS];
static volatile sig_atomic_t handlers_installed;

static void temp_cleanup(void)
{
	pid_t me = getpid();
	for (int i = 0; i < MAX_TEMPS; i++)
		if (temp_paths[i] && temp_owner[i] == me)
			unlink(temp_paths[i]);
}

static void temp_signal(int sig)
{
	temp_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

void tempfile_install_handlers(void)
{
	if (handlers_installed)
		return;
	handlers_installed = 1;
	atexit(temp_cleanup);
	signal(SIGINT, temp_signal);
	signal(SIGTERM, temp_signal);
	signal(SIGHUP, temp_signal);
}

int tempfile_register(const char *path)
{
	for (int i = 0; i < MAX_TEMPS; i++) {
		if (!temp_paths[i]) {
			char *p = decree_strdup(path);
			if (!p)
				return -1;
			temp_owner[i] = getpid();
			temp_paths[i] = p;
			return 0;
		}
	}
	return 0; /* best effort: too many temps in flight */
}

void tempfile_unregister(const char *path)
{
	for (int i = 0; i < MAX_TEMPS; i++) {
		if (temp_paths[i] && !strcmp(temp_paths[i], path)) {
			char *p = temp_paths[i];
			temp_paths[i] = NULL;
			decree_free(p);
			return;
		}
	}
}

int64_t fs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int fs_random(void *out, size_t n)
{
	char *p = out;
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return decree_error_os("cannot get random bytes");
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* --- resolution below a root ------------------------------------------- */

int fs_open_beneath(int rootfd, const char *rel, int flags)
{
	int fd = openat2_beneath(rootfd, rel, flags);

	if (fd != -2)
		return fd;
	{
		const char *base;
		int dfd, saved;
		if (fs_open_parent(&dfd, &base, rootfd, rel, false) < 0) {
			/* errno is openat's (ENOENT, ENOTDIR, ELOOP), as
			 * openat2 would report; EINVAL for an unsafe path */
			int e = errno ? errno : EINVAL;
			error_clear();
			errno = e;
			return -1;
		}
		fd = openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC);
		saved = errno;
		close(dfd);
		errno = saved;
		return fd;
	}
}

int fs_lstat_beneath(bool *exists, struct stat *st, int rootfd,
		     const char *path)
{
	const char *base;
	int dfd, r;

	*exists = false;
	r = fs_open_parent(&dfd, &base, rootfd, path, false);
	if (r == DECREE_ENOTFOUND || r == DECREE_EINVALID) {
		error_clear();
		return 0; /* an ancestor is missing or not a directory */
	}
	if (r < 0)
		return r;
	if (fstatat(dfd, base, st, AT_SYMLINK_NOFOLLOW) == 0)
		*exists = true;
	else if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG)
		r = decree_error_os("cannot stat '%s'", path);
	close(dfd);
	return r;
}

int fs_proc_stat(long pid, char *state, long *ppid, long *pgrp, long *session)
{
	char path[64], text[512];
	const char *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	/* "pid (comm) state ppid pgrp session ...": comm may hold any byte,
	 * so the fields are counted after the last ')' */
	if (!(rp = strrchr(text, ')')) ||
	    sscanf(rp + 1, " %c %ld %ld %ld", state, ppid, pgrp, session) != 4)
		return -1;
	return 0;
}
