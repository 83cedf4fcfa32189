/*
 * fs.h - the one place that talks to the file system.
 *
 * Every syscall wrapper loops on EINTR and short transfers and reports the
 * failing step ("cannot fsync '%s'").  Worktree paths are always resolved
 * below an open root directory fd, one component at a time with O_NOFOLLOW,
 * so a symlink planted anywhere on the way makes the operation fail instead
 * of escaping the root.
 *
 * Tests inject faults through fs_fault_hook: it is called with the name of
 * the step ("write", "fsync", "rename", "unlink", "mkdir", "open") before
 * the step runs, and a non-zero return is used as errno for a failure.
 */
#ifndef DECREE_FS_H
#define DECREE_FS_H

#include "util/buf.h"
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

extern int (*fs_fault_hook)(const char *step);

/* Raw, EINTR-safe helpers.  Return 0 or -1 with errno set (no error msg). */
int fs_write_all(int fd, const void *data, size_t len);
ssize_t fs_read_all(int fd, void *data, size_t len); /* bytes read, < len at EOF
						      */
int fs_close(int fd);

/* Read an open fd to EOF into `out` (appends).  fs_read_sized is the
 * same for a caller that has just fstat-ed it: `size` sizes the buffer
 * (the read still goes on to EOF). */
int fs_read_fd(int fd, buf *out, const char *name_for_errors);
int fs_read_sized(int fd, buf *out, const char *name_for_errors, size_t size);

/* Open `path` (absolute or cwd-relative) read-only and read it whole.
 * Returns DECREE_ENOTFOUND if it does not exist, DECREE_EINVALID if it is
 * not a regular file (a FIFO, socket or device is never opened for
 * reading: it could block forever). */
int fs_read_path(const char *path, buf *out);
int fs_read_at(int dirfd, const char *name, buf *out); /* O_NOFOLLOW */

/* Atomic replace of dirfd/name: temp + write + fsync + close + rename +
 * fsync(dirfd).  `name` is a single component. */
int fs_write_atomic_at(int dirfd, const char *name, const void *data,
		       size_t len, mode_t mode);
int fs_write_atomic(const char *path, const void *data, size_t len,
		    mode_t mode);
/* The same without either fsync, for a cache: after a crash its readers
 * find the old file, none, or a new one whose damage (torn, empty) they
 * detect and ignore; nothing is lost but speed.  The old file is removed
 * before the rename (fs_rename_unsynced). */
int fs_write_cache(const char *path, const void *data, size_t len);

/*
 * Put an unsynced file (a cache) in place of olddirfd/old: the file `name`
 * is removed first, then the rename makes no replacement.  ext4 (and
 * btrfs) flush the data of a file renamed over another at once
 * (auto_da_alloc): for a 2.2 MB file (a 20,000-file tree's stat cache)
 * the rename took 3.3-6.8 ms and the next fsync of a small file, such
 * as a checkpoint's record, 4.9 ms instead of 0.65 ms (ext4, 2026-11-28).
 * A reader in between finds no cache, which costs only speed.  -1 with
 * errno set.
 */
int fs_rename_unsynced(int olddirfd, const char *old, int newdirfd,
		       const char *name);

/*
 * An atomic replace whose fsyncs come later: fs_pending_create opens a
 * temp file next to `path` (fd: the caller writes it, with fs_write_all),
 * fs_pending_publish renames it into place, so readers see the whole new
 * file at once; the fsyncs of the file and of its directory happen later
 * (fs_pending_sync, possibly on another thread, then fs_pending_finish),
 * when the caller can overlap them with other work.  Until
 * fs_pending_finish returned 0 a crash may leave the file missing, empty
 * or torn: only for a file whose damage its readers detect (a JSON
 * document cut anywhere is invalid) and that can be rebuilt.  A failure
 * of create or publish leaves no temp file; fs_pending_abort removes it
 * before publish.  FS_PENDING_INIT is a valid empty state.
 */
typedef struct {
	int fd, dirfd;	       /* -1: none */
	int file_err, dir_err; /* errno of fs_pending_sync's fsyncs, or 0 */
	bool synced;
	size_t base;		/* offset of name's last component */
	char tmp[NAME_MAX + 1]; /* "": published */
	char name[PATH_MAX];
} fs_pending;
#define FS_PENDING_INIT                        \
	{                                      \
		-1, -1, 0, 0, false, 0, "", "" \
	}
int fs_pending_create(fs_pending *out, const char *path, mode_t mode);
int fs_pending_publish(fs_pending *p);
void fs_pending_abort(fs_pending *p);
/* For a file that must never be seen torn: fsync the temp, rename it into
 * place, fsync the directory, close (fs_write_atomic's order, its writing
 * done earlier: a caller writes the temp ahead of time, starts its
 * writeback, and publishes it when the time comes).  Resets *p; a failure
 * before the rename leaves no temp file. */
int fs_pending_publish_synced(fs_pending *p);
/* fsync the file, then its directory; only system calls, no error state,
 * no fault hook: safe on a thread of its own. */
void fs_pending_sync(fs_pending *p);
/* Sync if fs_pending_sync did not, close, and report a failed fsync (the
 * fault hook is asked here, in the calling thread, so an injected fault
 * falls at the same place in every run).  Resets *p to FS_PENDING_INIT. */
int fs_pending_finish(fs_pending *p);

int fs_fsync(int fd, const char *name_for_errors);
int fs_fsync_dir_path(const char *path);

/* mkdir -p for store directories (absolute path); existing dirs are fine. */
int fs_mkdirs(const char *path, mode_t mode);

/* Remove `path` whatever it is: a file, a symlink (not followed), or a
 * directory with everything in it.  A missing path is success. */
int fs_remove_path(const char *path);

/* True if `rel` is a safe worktree path: relative, no empty, ".", ".."
 * components, no NUL; with `refuse_meta`, also no ".git" component
 * anywhere and no ".decree" as the first component (only the root's
 * .decree is decree's; nested ones are ordinary directories).  On false an
 * error naming the path is set. */
bool fs_path_is_safe(const char *rel, bool refuse_meta);

/*
 * Open the directory holding `rel` below `rootfd`, resolving every
 * component with O_NOFOLLOW|O_DIRECTORY.  With `create`, missing
 * directories are created (mode 0755).  On success *dirfd_out is an fd the
 * caller closes (never rootfd itself) and *base_out points into `rel`.
 * On failure errno is that of the failing openat.
 * DECREE_ENOTFOUND if a component is missing and !create; DECREE_EINVALID
 * if a component is a symlink or not a directory.
 */
int fs_open_parent(int *dirfd_out, const char **base_out, int rootfd,
		   const char *rel, bool create);

/* lstat `rel` below rootfd without following a symlink on the way.
 * *exists false (and 0 returned) when it or an ancestor is missing, or an
 * ancestor is not a directory, or a name is longer than NAME_MAX (no
 * file has it); other failures set an error. */
int fs_lstat_beneath(bool *exists, struct stat *st, int rootfd,
		     const char *rel);

/* Open `rel` below rootfd with no symlink anywhere on the way (openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a component walk).  Returns the
 * fd or -1 with errno (ELOOP for a symlink); sets no error message. */
int fs_open_beneath(int rootfd, const char *rel, int flags);

/* Open directory `rel` itself below rootfd ("" is the root, dup'ed). */
int fs_open_dir(int *fd_out, int rootfd, const char *rel);

/* Registered temp files are unlinked at exit and on SIGINT/SIGTERM/SIGHUP,
 * only by the process that registered them. */
int tempfile_register(const char *path);
void tempfile_unregister(const char *path);
void tempfile_install_handlers(void);

/* Nanosecond timestamps of a stat buffer. */
static inline int64_t st_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}
static inline int64_t st_ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

int64_t fs_now_ns(void);

/* From /proc/<pid>/stat: the state letter ('Z' zombie), parent, process
 * group and session of a process.  0, or -1 when it cannot be read (no
 * such process; no error set). */
int fs_proc_stat(long pid, char *state, long *ppid, long *pgrp, long *session);

/* Fill `out` with n random bytes (getrandom). */
int fs_random(void *out, size_t n);

#endif
