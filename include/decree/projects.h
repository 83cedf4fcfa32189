/*
 * decree/projects.h - the project roots a store serves, and moving a
 * project's checkpoints to the root's new path.
 *
 * Overview: a store keys the checkpoints, undo/redo history and caches of
 * each project root by the root's absolute path (one "attachment" per
 * root).  A project that is moved or renamed keeps its checkpoints in the
 * store under the old path: decree_projects_list shows them (the old root
 * no longer exists), decree_projects_move re-attaches them to the new
 * path.  A store inside the project follows a moved project by itself
 * (decree/store.h); docs/projects.md has the whole story.
 *
 * Calling sequence:
 *     decree_projects *l;
 *     if (decree_projects_list(&l, s) < 0) ...
 *     for (size_t i = 0; i < decree_projects_count(l); i++) {
 *             const decree_projects_info *p = decree_projects_at(l, i);
 *             ... p->root, p->exists, p->checkpoints, p->bytes ...
 *     }
 *     decree_projects_free(l);
 *
 *     decree_projects_move(s, "/old/path", "/new/path");
 *
 * Errors: see each function.  Ownership: the list is the caller's, freed
 * with decree_projects_free (NULL is fine); the entries and their strings
 * are borrowed from it.
 */
#ifndef DECREE_PROJECTS_H
#define DECREE_PROJECTS_H

#include "common.h"
#include "store.h"

DECREE_BEGIN_DECL

typedef struct decree_projects decree_projects;

/** One project root of a store. */
typedef struct {
	const char *root;   /**< absolute path the checkpoints are kept for */
	const char *key;    /**< the store's directory for it: roots/<key> */
	bool exists;	    /**< root is a directory now */
	bool is_current;    /**< root is the handle's own root */
	size_t checkpoints; /**< readable checkpoint records */
	size_t damaged;	    /**< records that cannot be read */
	size_t history;	    /**< undo + redo entries (0 if unreadable) */
	/** bytes of the root's own files in the store: its records, its
	 *  undo/redo history, its caches (objects are shared between roots
	 *  and checkpoints; `decree gc` frees those no record needs) */
	uint64_t bytes;
	/** created_ns of the newest checkpoint (Unix ns), 0: none */
	int64_t last_ns;
	/** its created_at, RFC 3339 UTC, "" when there is none */
	const char *last_at;
	/** root is a workspace of this store (docs/workspaces.md): its
	 *  name; else NULL */
	const char *workspace;
} decree_projects_info;

/**
 * Every project root the store of `s` serves, sorted by path.  Reads
 * only; takes no lock.  An attachment whose root path cannot be read
 * (ROOT damaged) is listed with root "" and its key.
 * @return 0, -1.
 */
DECREE_API int decree_projects_list(decree_projects **out, decree_store *s);
DECREE_API size_t decree_projects_count(const decree_projects *l);
DECREE_API const decree_projects_info *
decree_projects_at(const decree_projects *l, size_t i);
DECREE_API void decree_projects_free(decree_projects *l);

/**
 * Re-attach the checkpoints, undo/redo history and caches of the root
 * `old_root` to `new_root`, in the store of `s`, under the store lock.
 * Both paths are made absolute against the current directory and
 * normalised ("." and ".." and "//" removed; symlinks of the part that
 * exists resolved); `old_root` need not exist, `new_root` must be a
 * directory.  One rename is the commit point: a crash leaves the
 * checkpoints at the old root or at the new one, never split.  Records
 * are not rewritten (their ids stay); their "root" field keeps saying
 * where they were made.
 *
 * @return 0;
 *         DECREE_ENOTFOUND: the store has nothing for `old_root` (the
 *         message suggests the closest root it has);
 *         DECREE_EEXISTS: the store has checkpoints or history for
 *         `new_root` already (caches alone are replaced);
 *         DECREE_EINVALID: `new_root` is not a directory, the two are the
 *         same, the store is (inside) `new_root`'s tree in a way that is
 *         refused, or `old_root` still exists and has an unfinished
 *         transaction (recover it there first);
 *         DECREE_ELOCKED: the store is locked;
 *         -1: I/O.
 */
DECREE_API int decree_projects_move(decree_store *s, const char *old_root,
				    const char *new_root);

DECREE_END_DECL

#endif
