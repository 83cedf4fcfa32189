/*
 * worktree.h - scanning the project root of a store the way every
 * operation must see it: the store's size limit and extra excludes, the
 * store directory skipped when it lies inside the tree, and the stat cache
 * of the root (<rootdir>/statcache) deciding what is hashed again.
 */
#ifndef DECREE_WORKTREE_H
#define DECREE_WORKTREE_H

#include "decree/store.h"
#include "store/odb.h"
#include "store/snap.h"
#include "util/buf.h"

struct statcache;

/* Scan the working tree with the stat cache; with w, contents are stored.
 * With cache_out the loaded cache is handed to the caller (for
 * worktree_save_statcache), else freed.  With `rules`, the ignore files
 * are those of that snapshot instead of the ones on disk: the tree as the
 * snapshot's rules see it (what a restore to it or a diff against it
 * must cover).  lazy_hash: see scan_opts. */
int worktree_scan(snap *out, decree_store *s, odb_writer *w,
		  struct statcache **cache_out, const snap *rules,
		  bool lazy_hash);

/* An ignore_load_fn reading .gitignore/.decreeignore from a snapshot. */
typedef struct {
	const snap *s;
	odb *db;
} worktree_rules;
int worktree_rules_load(void *payload, const char *dir, const char *name,
			buf *out, bool *found);

/* Save the stat cache from a scan made with `cache` unless nothing changed.
 * Frees the cache. */
int worktree_save_statcache(decree_store *s, const snap *cur,
			    struct statcache *cache);

#endif
