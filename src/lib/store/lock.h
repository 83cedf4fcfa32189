/*
 * lock.h - the store lock.
 *
 * The lock is an flock(2) on <store>/lock, so the kernel releases it when
 * its owner dies (kill -9 included): a stale lock is taken over simply by
 * the next process that asks.  The owner writes its identity into the file
 * (pid, process start time, host) so a waiting process can say who holds it.
 * Waiting is bounded; then DECREE_ELOCKED names the owner.
 */
#ifndef DECREE_LOCK_H
#define DECREE_LOCK_H

#include <stdbool.h>

typedef struct {
	int fd;
	int depth;
	/* The last owner died holding the lock (its identity was still in
	 * the file, which a release empties): what it was writing may be
	 * left half-done.  Set by lock_acquire. */
	bool unclean;
} store_lock;

#define STORE_LOCK_INIT      \
	{                    \
		-1, 0, false \
	}

/* Acquire (re-entrant within the process).  timeout_ms < 0: 30 s. */
int lock_acquire(store_lock *l, const char *path, int timeout_ms);
void lock_release(store_lock *l);

/*
 * The tree lock: an flock on the project root directory itself (no file is
 * created in the tree), so two decree processes using *different* stores
 * on the same tree still exclude each other.  Taken after the store lock,
 * always in that order.  *fd_out is the fd to pass to unlock_tree.
 */
int lock_tree(int *fd_out, int rootfd, const char *root, int timeout_ms);
void unlock_tree(int *fd);

#endif
