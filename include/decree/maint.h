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

/**
 * Finish or roll back an interrupted transaction of this root (every
 * mutating operation also does this first).  *recovered (may be NULL) tells
 * whether there was one.  A rollback leaves alone any path that someone
 * changed after the interruption (it is neither in its old nor its new
 * state, and overwriting it would destroy bytes decree never captured);
 * *left_alone (may be NULL) counts them.
 */
DECREE_API int decree_recover(decree_store *s, bool *recovered,
			      size_t *left_alone);

typedef struct {
	uint64_t objects_freed;
	uint64_t bytes_freed;
	uint64_t objects_kept;
} decree_gc_stats;

/**
 * Delete every object no checkpoint record, undo/redo entry or unfinished
 * transaction of any root of this store references.  With dry_run, only
 * report.  Takes the store lock.
 */
DECREE_API int decree_gc(decree_store *s, bool dry_run, decree_gc_stats *stats);

/** Called by decree_fsck for each problem: what (object id, file) and why. */
typedef void (*decree_fsck_cb)(void *payload, const char *what,
			       const char *problem);

/**
 * Verify every object (re-hash), parse every record, resolve every
 * reference.  Returns 0 when clean, DECREE_ECORRUPT when anything is
 * damaged (each problem reported through cb), or another error.
 */
DECREE_API int decree_fsck(decree_store *s, decree_fsck_cb cb, void *payload);

DECREE_END_DECL

#endif
