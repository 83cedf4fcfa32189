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

typedef struct {
	int fd;
	int depth;
} store_lock;

#define STORE_LOCK_INIT { -1, 0 }

/* Acquire (re-entrant within the process).  timeout_ms < 0: 30 s. */
int lock_acquire(store_lock *l, const char *path, int timeout_ms);
void lock_release(store_lock *l);

#endif
