/*
 * txn.h - crash-safe transactions on the working tree.
 *
 * src/lib/txn writes the working tree (wal: the log format, txn: planning,
 * writing, rollback and recovery): every file an operation creates,
 * changes or deletes there goes through txn_run().  (The one other write:
 * after rolling back an apply whose command failed, ops/apply.c removes
 * the directories the apply had created if they are empty again.)  It
 * uses src/util, store/ and scan/.
 *
 * A transaction brings a set of paths from their current state ("old") to
 * a new state, all or nothing, surviving kill -9 and power loss at any
 * instant: after the next txn_lock() every path is exactly old or
 * exactly new, consistently for the whole transaction, and no temp file is
 * left.  Contents of both states must already be in the store.
 */
#ifndef DECREE_TXN_H
#define DECREE_TXN_H

#include "decree/restore.h"
#include "store/odb.h"
#include "store/oplog.h"

struct decree_store;

enum txn_history {
	TXN_HISTORY_NONE = 0,
	TXN_HISTORY_PUSH = 1, /* push `entry` on the undo stack, clear redo */
	TXN_HISTORY_UNDO = 2, /* move the top undo entry to the redo stack */
	TXN_HISTORY_REDO = 3, /* move the top redo entry to the undo stack */
};

typedef struct {
	const txn_change *changes; /* each path at most once */
	size_t n;
	unsigned history;	  /* enum txn_history */
	const oplog_entry *entry; /* PUSH: the entry (its id is set by txn_run)
				   */
	const char *moved_id;	  /* UNDO/REDO: id of the entry moved */
	decree_progress_cb progress;
	void *payload;
	bool *committed; /* out (may be NULL): true once COMMIT is durable */
	char *pushed_id; /* out (may be NULL, 17 bytes): PUSH: the entry's id */
	/* (may be NULL) polled between files until COMMIT: non-zero rolls
	 * everything back and txn_run fails with DECREE_ECANCELLED; once
	 * COMMIT is durable it is no longer looked at (the change is made) */
	const volatile int *cancel;
	/* (may be NULL) called once every path has its new state, before the
	 * COMMIT record is written: an error it returns (with its message
	 * set) rolls everything back, and txn_run fails with it */
	int (*before_commit)(void *arg);
	void *before_commit_arg;
} txn_spec;

/*
 * Capture what stands at t->path on disk now as the old side of *t
 * (has_old, mode, size, id): a file's bytes or a symlink's target, stored
 * through w (with w NULL only hashed; a regular file then gets no id).
 * Absent paths, directories and paths below a non-directory leave *t
 * alone with *present false.
 */
int txn_capture_old(txn_change *t, struct decree_store *s, odb_writer *w,
		    bool *present);

/*
 * Run a transaction; the caller holds the store lock (txn_lock).  Once
 * the COMMIT record is durable the call succeeds: a failure of the
 * bookkeeping after it (history, cleanup, removing the log) is a warning
 * (warning_last()), and the log stays for the next txn_lock() to finish
 * it.  Fails with DECREE_EUNFINISHED when a failure before COMMIT could
 * not be rolled back (the log stays and the handle is broken).
 */
int txn_run(struct decree_store *s, const txn_spec *spec);

/* What txn_run would refuse before writing anything, for a dry run: an
 * unsafe path, a path inside the store, a non-empty directory or another
 * file in the way (DECREE_EINVALID, DECREE_ECONFLICT).  Reads the tree,
 * writes nothing; needs no lock and no stored contents. */
int txn_plan_check(struct decree_store *s, const txn_spec *sp);

/*
 * Take the store lock for a mutation (repo_lock), then finish (committed)
 * or roll back (not committed) a transaction an earlier process left
 * unfinished, so that no mutation ever starts over a log.  *recovered
 * (may be NULL): there was one; *left_alone (may be NULL): paths its
 * rollback left as someone changed them after the interruption.  A log
 * that cannot be read makes the handle refuse further work.  Release with
 * repo_unlock().
 */
int txn_lock(bool *recovered, size_t *left_alone, struct decree_store *s);

/* txn_lock_recover flags */
enum txn_recover_flags {
	/* an unfinished log whose plan cannot be read whole: roll back what
	 * its readable records name and remove every transaction temp file
	 * in the tree, instead of refusing (DECREE_ELOGDAMAGED) */
	TXN_ROLLBACK_DAMAGED = 1 << 0,
	/* sweep every temp file of the store, not only after a dead owner
	 * (decree recover) */
	TXN_SWEEP_ALL = 1 << 1,
	/* do not create this root's directory in the store
	 * (REPO_LOCK_NO_ATTACH): for calls that only read or remove */
	TXN_NO_ATTACH = 1 << 2,
};

/* txn_lock with flags (decree_recover_ext); txn_lock(r, l, s) is
 * txn_lock_recover(r, l, s, 0).  A damaged log that is not rolled back
 * fails with DECREE_ELOGDAMAGED: the log stays and nothing is changed. */
int txn_lock_recover(bool *recovered, size_t *left_alone,
		     struct decree_store *s, unsigned flags);

/* Does the on-disk state of `path` equal (mode, id)?  has=false: absent. */
int txn_path_matches(bool *same, struct decree_store *s, const char *path,
		     bool has, uint32_t mode, const oid *id);

/* Call fn for every object the log at `path` names (both sides of each
 * file record, every readable record of a damaged log included): what gc
 * must keep while a transaction is unfinished.  *present: the log exists.
 * Returns 0, what fn returned, the error reading the log, or after the
 * calls DECREE_ELOGDAMAGED (an unfinished log whose plan cannot be read
 * whole: fn has not seen everything it named) or DECREE_ECORRUPT (a log
 * of another version). */
int txn_log_objects(bool *present, const char *path,
		    int (*fn)(void *payload, const oid *id), void *payload);

#endif
