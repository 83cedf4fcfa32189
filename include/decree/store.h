/*
 * decree/store.h - opening a store for a project root.  Recovery, gc and
 * fsck are in decree/maint.h.
 *
 * Overview: a decree_store handle binds one store directory to one project
 * root.  Every operation (decree/checkpoint.h, restore.h, diff.h, apply.h,
 * maint.h) takes it.  Opening creates nothing on disk; the first writing
 * operation creates the store.
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

#define DECREE_STORE_OPTIONS_VERSION 2

/** decree_store_options.flags */
enum decree_store_flags {
	/** A root that does not exist is accepted when the store has
	 *  checkpoints for it (a moved or deleted project): listing, drop,
	 *  prune, gc and fsck work; what needs the tree (create, restore,
	 *  diff, compare, apply, undo, redo) fails with DECREE_ENOTFOUND. */
	DECREE_STORE_MISSING_ROOT = 1 << 0,
};

typedef struct {
	unsigned version;	     /**< DECREE_STORE_OPTIONS_VERSION */
	const char *root;	     /**< project root (required) */
	const char *store_path;	     /**< NULL: <root>/.decree/store */
	uint64_t max_file_size;	     /**< 0: 50 MiB; larger files are skipped */
	const char *const *excludes; /**< extra ignore patterns, NULL-terminated
				      */
	int lock_timeout_ms;	     /**< <0: default (30000); 0: do not wait */
	unsigned threads; /**< walking and hashing threads, 0: two per
			   online CPU (at most 64) */
	unsigned flags;	  /**< decree_store_flags (version 2) */
} decree_store_options;

#define DECREE_STORE_OPTIONS_INIT                                           \
	{                                                                   \
		DECREE_STORE_OPTIONS_VERSION, NULL, NULL, 0, NULL, -1, 0, 0 \
	}

/**
 * Open the store for a project root.  Options of version 1 (without
 * `flags`) are accepted.
 *
 * A store inside the project follows the project when it is moved or
 * copied (docs/projects.md): when the store has no checkpoints for this
 * root but exactly one other root it serves no longer holds it (that
 * root is gone, or holds another store), the handle reads that root's
 * checkpoints, and the first operation that takes the lock re-attaches
 * them to this root.
 *
 * @return 0, DECREE_EINVALID (bad root or options), DECREE_ENOTFOUND
 *         (DECREE_STORE_MISSING_ROOT: the root does not exist and the
 *         store has no checkpoints for it), DECREE_ECORRUPT (the store
 *         directory is not a decree store of a known version), -1.
 */
DECREE_API int decree_store_open(decree_store **out,
				 const decree_store_options *opts);

/** Close and free; NULL is fine. */
DECREE_API void decree_store_free(decree_store *s);

/** The absolute project root and store directory (borrowed). */
DECREE_API const char *decree_store_root(const decree_store *s);
DECREE_API const char *decree_store_path(const decree_store *s);

/** True when the project root exists (false only for a handle opened
 *  with DECREE_STORE_MISSING_ROOT on a root that does not). */
DECREE_API bool decree_store_root_exists(const decree_store *s);

/* --- progress -------------------------------------------------------------
 *
 * A call that may take long (a checkpoint of a big tree, a restore, undo,
 * redo or apply of many files, fsck) reports how far it is through the
 * handle's progress function, if one is set.  decree_progress_cb
 * (decree/restore.h) is another thing: one event per path of a
 * transaction, for a log of what was written.
 */

/** What a call is doing when it reports progress. */
typedef enum {
	/** Walking the tree and reading the files the stat cache cannot
	 *  vouch for (hashing them, and for a checkpoint or a restore's
	 *  capture storing them); undo and redo reading the paths they are
	 *  about to change.  A walk finds its totals as it goes. */
	DECREE_PROGRESS_SCAN = 1,
	/** A transaction reading back the stored copies it needs before it
	 *  writes anything, or re-reading what it wrote. */
	DECREE_PROGRESS_CHECK = 2,
	/** A transaction writing the tree: files written or deleted. */
	DECREE_PROGRESS_WRITE = 3,
	/** fsck re-hashing the store's objects (files: objects, counted a
	 *  pack at a time). */
	DECREE_PROGRESS_VERIFY = 4,
} decree_progress_stage;

/** "scan", "check", "write", "verify"; "other" otherwise.  Static. */
DECREE_API const char *decree_progress_stage_name(decree_progress_stage s);

/** How far a stage is.  Totals are 0 while unknown. */
typedef struct {
	decree_progress_stage stage;
	uint64_t files;	      /**< files (paths, packs) done */
	uint64_t files_total; /**< files known so far */
	uint64_t bytes;	      /**< bytes read or written so far */
	uint64_t bytes_total; /**< bytes known so far to read or write */
	/** The totals are final (a scan's walk is over; a transaction knows
	 *  its plan from the start). */
	bool total_known;
} decree_progress;

/** Called on the thread that made the call, from inside it.  `p` is
 * borrowed for the call. */
typedef void (*decree_progress_fn)(void *payload, const decree_progress *p);

/**
 * Report the progress of every later call on this handle to fn (NULL:
 * none, the default).  fn is called at the start and at the end of each
 * stage and in between as work gets done: as often as once per file or
 * directory, so it must be cheap (a display throttles itself, say to
 * 10 updates a second).  It must not call back into decree with this
 * handle.
 */
DECREE_API void decree_store_set_progress(decree_store *s,
					  decree_progress_fn fn, void *payload);

DECREE_END_DECL

#endif
