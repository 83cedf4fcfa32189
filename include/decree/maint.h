/*
 * decree/maint.h - looking after a store: recovering an interrupted
 * transaction, deleting unreferenced objects, verifying everything.
 *
 * Overview: none of these is needed for normal work (every mutating call
 * recovers first; the store only grows until decree_gc), but an
 * application that keeps checkpoints for long runs decree_gc after
 * pruning (decree/checkpoint.h), and decree_fsck when something reports
 * damage (DECREE_ECORRUPT).
 *
 * Ownership: results are plain structs filled by the call; strings passed
 * to a callback are borrowed for the call.
 *
 * Errors: every function returns 0 or a negative decree_error_code;
 * decree_error_last() has the message.
 */
#ifndef DECREE_MAINT_H
#define DECREE_MAINT_H

#include "common.h"
#include "store.h"

DECREE_BEGIN_DECL

/** What decree_recover found and did. */
typedef struct {
	bool recovered;	   /**< there was an interrupted transaction */
	size_t left_alone; /**< paths its rollback left as someone changed
			      them after the interruption */
} decree_recover_result;

/**
 * Finish or roll back an interrupted transaction of this root (every
 * mutating operation also does this first).  A rollback leaves alone any
 * path that someone changed after the interruption (it is neither in its
 * old nor its new state, and overwriting it would destroy bytes decree
 * never captured); out->left_alone counts them.
 *
 * A log whose records cannot all be read (damaged on disk) is finished
 * if it says the change was made (only bookkeeping is left then);
 * otherwise the tree may be partly changed at paths the log no longer
 * names, so nothing is done and the log stays: DECREE_ELOGDAMAGED, from
 * this call and from every mutating call, until the caller decides
 * (decree_recover_ext with rollback).
 * @param out  filled on success (may be NULL)
 * @return 0, DECREE_ELOCKED, DECREE_ELOGDAMAGED, DECREE_ECORRUPT (a log
 *         of an unknown version: the handle then refuses further work
 *         until reopened), -1.
 */
DECREE_API int decree_recover(decree_recover_result *out, decree_store *s);

#define DECREE_RECOVER_OPTIONS_VERSION 1
typedef struct {
	unsigned version;
	/** The log is damaged (DECREE_ELOGDAMAGED): roll back every path its
	 * readable records name (as an ordinary rollback does, leaving
	 * alone paths someone changed since), remove every transaction
	 * temp file in the tree, and remove the log.  Paths named only by
	 * the unreadable records stay as they are: decree_warning_last()
	 * says so.  No effect on a log that can be read. */
	bool rollback;
} decree_recover_options;
#define DECREE_RECOVER_OPTIONS_INIT                   \
	{                                             \
		DECREE_RECOVER_OPTIONS_VERSION, false \
	}

/**
 * decree_recover with options (NULL: the defaults, as decree_recover).
 * @return the codes of decree_recover; DECREE_EINVALID for options of
 *         another version.
 */
DECREE_API int decree_recover_ext(decree_recover_result *out, decree_store *s,
				  const decree_recover_options *opts);

typedef struct {
	uint64_t objects_freed;
	uint64_t bytes_freed;
	uint64_t objects_kept;
} decree_gc_stats;

/**
 * Delete every object no checkpoint record, undo/redo entry or unfinished
 * transaction of any root of this store references.  With dry_run, only
 * report.  Takes the store lock.
 * @param out  the counts (may be NULL)
 * @return 0, DECREE_ELOCKED, DECREE_ECORRUPT (a tree is missing or
 *         damaged: nothing is deleted), -1.
 */
DECREE_API int decree_gc(decree_gc_stats *out, decree_store *s, bool dry_run);

/** The kinds of problem decree_fsck reports. */
typedef enum {
	/** an object, index, record, history or log is damaged or missing,
	 * or a file that does not belong is in the store */
	DECREE_FSCK_DAMAGED = 1,
	/** an interrupted transaction: decree_recover finishes it */
	DECREE_FSCK_UNFINISHED = 2,
	/** DECREE_FSCK_REPAIR: what was put right, and how (an object
	 * stored again from a working tree, a damaged pack rewritten with
	 * its intact objects, a damaged cache removed) */
	DECREE_FSCK_REPAIRED = 3,
	/** DECREE_FSCK_REPAIR: a checkpoint record removed as beyond saving,
	 * with exactly what is lost (the paths and objects no readable copy
	 * or file holds) */
	DECREE_FSCK_LOST = 4,
	/** DECREE_FSCK_REPAIR: damage that is still there afterwards (the
	 * undo/redo history, a transaction log, unreadable files) */
	DECREE_FSCK_UNREPAIRED = 5,
} decree_fsck_problem;

/** "damaged", "unfinished", "repaired", "lost", "unrepaired" (`fsck
 * --json`'s kinds); "other" otherwise.  Static. */
DECREE_API const char *decree_fsck_problem_name(decree_fsck_problem k);

/** Called by decree_fsck for each problem: its kind, what (object id,
 * file) and why. */
typedef void (*decree_fsck_cb)(void *payload, decree_fsck_problem kind,
			       const char *what, const char *detail);

enum decree_fsck_flags {
	/** Repair what can be repaired; see decree_fsck_ext. */
	DECREE_FSCK_REPAIR = 1 << 0,
};

#define DECREE_FSCK_OPTIONS_VERSION 1
typedef struct {
	unsigned version;  /**< DECREE_FSCK_OPTIONS_VERSION */
	unsigned flags;	   /**< decree_fsck_flags */
	decree_fsck_cb cb; /**< each problem and repair (may be NULL) */
	void *payload;
} decree_fsck_options;
#define DECREE_FSCK_OPTIONS_INIT                           \
	{                                                  \
		DECREE_FSCK_OPTIONS_VERSION, 0, NULL, NULL \
	}

/**
 * Verify the store: the header of every file (the marker, packs,
 * indexes, records, caches, history, transaction logs), every copy of
 * every object (re-hashed), every record, every reference.  Each problem
 * goes to opts->cb (DECREE_FSCK_DAMAGED, DECREE_FSCK_UNFINISHED).
 *
 * With DECREE_FSCK_REPAIR (takes the store lock; never touches a working
 * tree, the undo/redo history or a transaction log): damaged packs are
 * rewritten with every copy that still verifies, damaged caches removed,
 * and every referenced object without an intact copy is stored again
 * from the working tree of a project root of the store that still holds
 * its bytes (where the checkpoint's tree puts it, then anywhere in the
 * tree); each is reported DECREE_FSCK_REPAIRED.  Checkpoint records that
 * are damaged or still lack an object are removed, each reported
 * DECREE_FSCK_LOST with what is lost.  Then the store is checked again
 * and what remains is reported DECREE_FSCK_UNREPAIRED.
 *
 * @param opts  NULL: check only, no callback
 * @return 0 when the store is clean (after the repair), DECREE_ECORRUPT
 *         when a problem was found (remains), DECREE_ENOTFOUND when the
 *         store directory does not exist or is not a decree store (no
 *         marker), DECREE_ELOCKED, DECREE_EINVALID, -1.
 */
DECREE_API int decree_fsck_ext(decree_store *s,
			       const decree_fsck_options *opts);

/** decree_fsck_ext without repair, reporting through cb. */
DECREE_API int decree_fsck(decree_store *s, decree_fsck_cb cb, void *payload);

DECREE_END_DECL

#endif
