/*
 * decree/store.h - opening a store for a project root; maintenance.
 *
 * Overview: a decree_store handle binds one store directory to one project
 * root.  All checkpoint operations (decree/checkpoint.h) take it.  Opening
 * creates nothing on disk; the first writing operation creates the store.
 *
 * Calling sequence:
 *     decree_store_options o = DECREE_STORE_OPTIONS_INIT;
 *     o.root = "/path/to/project";
 *     decree_store *s;
 *     if (decree_store_open(&s, &o) < 0) { puts(decree_error_last()); ... }
 *     ... decree_checkpoint_create(...) ...
 *     decree_store_free(s);
 *
 * Concurrency: a handle is used by one thread at a time.  Several processes
 * may use one store: mutating operations take the store lock (waiting up to
 * lock_timeout_ms, then DECREE_ELOCKED naming the owner).
 *
 * Ownership: the handle owns everything it allocates; decree_store_free(NULL)
 * is a no-op.
 */
#ifndef DECREE_STORE_H
#define DECREE_STORE_H

#include "common.h"

DECREE_BEGIN_DECL

typedef struct decree_store decree_store;

#define DECREE_STORE_OPTIONS_VERSION 1

typedef struct {
	unsigned version;	     /**< DECREE_STORE_OPTIONS_VERSION */
	const char *root;	     /**< project root (required) */
	const char *store_path;	     /**< NULL: <root>/.decree/store */
	uint64_t max_file_size;	     /**< 0: 50 MiB; larger files are skipped */
	const char *const *excludes; /**< extra ignore patterns, NULL-terminated
				      */
	int lock_timeout_ms;	     /**< <0: default (30000); 0: do not wait */
	unsigned threads;	     /**< hashing threads, 0: all cores */
} decree_store_options;

#define DECREE_STORE_OPTIONS_INIT                                        \
	{                                                                \
		DECREE_STORE_OPTIONS_VERSION, NULL, NULL, 0, NULL, -1, 0 \
	}

/**
 * Open the store for a project root.
 * @return 0, DECREE_EINVALID (bad root or options), DECREE_ECORRUPT (the
 *         store directory is not a decree store of a known version), -1.
 */
DECREE_API int decree_store_open(decree_store **out,
				 const decree_store_options *opts);

/** Close and free; NULL is fine. */
DECREE_API void decree_store_free(decree_store *s);

/** The absolute project root and store directory (borrowed). */
DECREE_API const char *decree_store_root(const decree_store *s);
DECREE_API const char *decree_store_path(const decree_store *s);

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
