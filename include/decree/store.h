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
	unsigned threads;	     /**< hashing threads, 0: all cores */
	unsigned flags;		     /**< decree_store_flags (version 2) */
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

DECREE_END_DECL

#endif
