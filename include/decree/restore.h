/*
 * decree/restore.h - putting the working tree back: cascading restore of a
 * checkpoint, undo and redo of the last restore, apply or revert.
 *
 * Overview: each of these is one crash-safe transaction on the working
 * tree (docs/transactions.md): every path changes or none does, and a
 * crash at any instant is finished or rolled back by the next mutating
 * call (or decree_recover, decree/maint.h).  Every byte a restore
 * overwrites or deletes is captured in the store first, and the change is
 * pushed on the undo history.  The phases and the progress callback are
 * shared with decree_apply (decree/apply.h).
 *
 * Calling sequence: fill a decree_restore_options from
 * DECREE_RESTORE_OPTIONS_INIT; with dry_run the plan callback reports
 * each path and nothing is written.
 *
 * Ownership: paths passed to callbacks are borrowed for the call; the
 * result is a plain struct filled by the call.
 *
 * Errors: every function returns 0 or a negative decree_error_code;
 * decree_error_last() has the message.  A call that changes the tree
 * returns 0 once its change is made (its transaction committed), even if
 * recording it afterwards fails: that failure is a warning
 * (decree_warning_last(), decree/common.h), and the next mutating call
 * finishes the recording first.
 */
#ifndef DECREE_RESTORE_H
#define DECREE_RESTORE_H

#include "common.h"
#include "checkpoint.h"
#include "store.h"

DECREE_BEGIN_DECL

/** What a restore/undo/redo does to one path. */
typedef enum {
	DECREE_ACTION_CREATE = 1,
	DECREE_ACTION_RESTORE = 2, /**< overwrite with the checkpoint's
				      bytes/mode */
	DECREE_ACTION_DELETE = 3,
	DECREE_ACTION_REPLACE = 4, /**< a directory, FIFO, socket or device
				      stands where the checkpoint has a file
				      or symlink: it is removed (a directory
				      only once empty) and the file written;
				      counted in `restored` */
	/** agent_only: the agent changed this path, but the user changed it
	 *  after the agent's last write; it is left as it is (counted in
	 *  `skipped_user_edits`, never written) */
	DECREE_ACTION_SKIP_USER_EDIT = 5,
} decree_action;

/** The action's name as `--json` and the bindings give it: "create",
 * "restore", "delete", "replace", "skip-user-edit"; "other" for a value
 * this library does not know.  Static. */
DECREE_API const char *decree_action_name(decree_action a);

/** The steps of a transaction, as a progress callback sees them (path
 * and action are NULL for committing and done). */
typedef enum {
	DECREE_PHASE_STAGING = 1,
	DECREE_PHASE_APPLYING = 2,
	DECREE_PHASE_COMMITTING = 3,
	DECREE_PHASE_ROLLING_BACK = 4,
	DECREE_PHASE_DONE = 5,
} decree_phase;

/** "staging", "applying", "committing", "rolling_back", "done" (the
 * `phase` of `apply --json`'s events); "other" otherwise.  Static. */
DECREE_API const char *decree_phase_name(decree_phase p);

typedef void (*decree_plan_cb)(void *payload, const char *path,
			       decree_action action);
typedef void (*decree_progress_cb)(void *payload, decree_phase phase,
				   const char *path, const char *action);

/* Version 2 added `cancel`, version 3 `agent_only`; older structs are
 * still accepted. */
#define DECREE_RESTORE_OPTIONS_VERSION 3
typedef struct {
	unsigned version;
	const char *const *paths; /**< NULL-terminated; NULL = whole tree */
	bool dry_run;		  /**< only report the plan */
	decree_plan_cb plan; /**< called per path before anything is written */
	decree_progress_cb progress;
	void *payload;
	/** May be NULL.  Polled between files until the transaction commits
	 * (set it from a signal handler, another thread, a UI): non-zero
	 * rolls everything back (temp files removed, nothing changed) and
	 * the call fails with DECREE_ECANCELLED.  Once the commit record is
	 * durable it is no longer looked at: the call finishes and returns
	 * 0 (the change is made; see docs/transactions.md). */
	const volatile int *cancel;
	/** Restore only the paths an agent changed after the checkpoint
	 *  (the agent-write journal of the checkpoint's session,
	 *  decree/agent.h), and of those only the ones still as the agent
	 *  left them; the others are reported (DECREE_ACTION_SKIP_USER_EDIT)
	 *  and left alone.  With `paths`, only those of them. */
	bool agent_only;
} decree_restore_options;
#define DECREE_RESTORE_OPTIONS_INIT                                            \
	{                                                                      \
		DECREE_RESTORE_OPTIONS_VERSION, NULL, false, NULL, NULL, NULL, \
			NULL, false                                            \
	}

/** Result counts of a restore, undo or redo. */
typedef struct {
	size_t created, restored, deleted;
	size_t skipped_user_edits; /**< agent_only: paths left as the user
				      edited them */
	char pre_checkpoint[DECREE_ID_HEXLEN + 1]; /**< capture of the state
						      before ("" if none) */
} decree_restore_result;

/**
 * Cascading restore: afterwards the scanned part of the tree equals the
 * checkpoint (or, with paths, those paths do).  The current state is
 * captured first (checkpoint labelled "pre-restore") and the operation is
 * recorded for decree_undo.  Ignored and skipped files are never deleted.
 * @return 0, DECREE_ENOTFOUND, DECREE_EAMBIGUOUS, DECREE_ELOCKED,
 *         DECREE_ECONFLICT, DECREE_EVERIFY (paths in the message),
 *         DECREE_ECORRUPT (a stored copy is damaged; nothing was written),
 *         DECREE_ECANCELLED (opts->cancel was set: nothing changed),
 *         DECREE_EUNFINISHED (a failure whose rollback failed too: the
 *         log stays for decree_recover), -1.
 */
DECREE_API int decree_checkpoint_restore(decree_restore_result *result,
					 decree_store *s, const char *ref,
					 const decree_restore_options *opts);

/** Undo / redo the last restore, apply or revert.  DECREE_ENOTFOUND when
 * there is nothing to undo/redo; DECREE_ECORRUPT, with nothing changed,
 * when that entry of the history is damaged (a damaged entry blocks only
 * itself: decree_history_drop_damaged drops it, then the one before can
 * be undone); otherwise the codes of decree_checkpoint_restore. */
DECREE_API int decree_undo(decree_restore_result *result, decree_store *s,
			   const decree_restore_options *opts);
DECREE_API int decree_redo(decree_restore_result *result, decree_store *s,
			   const decree_restore_options *opts);

/**
 * Drop the damaged entries of the undo/redo history of this root (each
 * entry has its own checksum; the intact ones stay, in order).  Undo and
 * redo refuse a damaged entry; this is the way past it.  A history file
 * whose header is damaged is one damaged entry: dropping it empties the
 * history.  Restore, apply and revert work with damaged entries in the
 * history (they keep them).
 * @param dropped  how many were dropped (may be NULL)
 * @return 0, DECREE_ELOCKED, -1.
 */
DECREE_API int decree_history_drop_damaged(size_t *dropped, decree_store *s);

DECREE_END_DECL

#endif
