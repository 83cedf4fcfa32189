/*
 * tree.h - stored snapshots: one tree object per directory.
 *
 * A tree object lists the entries of one directory sorted by name (strcmp):
 * files, symlinks, skipped files and subdirectories, each with its object
 * id.  Unchanged subtrees keep their id, so a checkpoint after a one-file
 * change writes O(depth) new tree objects.  Format: docs/format.md.
 */
#ifndef DECREE_TREE_H
#define DECREE_TREE_H

#include "store/odb.h"
#include "store/snap.h"

/* Write the trees of a sorted snap; *root gets the root tree id.  With
 * w == NULL only the ids are computed (nothing is stored). */
int tree_write(oid *root, odb_writer *w, const snap *s);

/*
 * The id of every directory of a snap, as tree_write_ids found them, in
 * canonical order of their paths (a directory before what lies below
 * it; the root first).  Directory k holds the snap's entries
 * [first, end), and its path plus '/' (nothing for the root) is the
 * first plen bytes of the path of entry `first`.
 */
typedef struct {
	size_t first, end, plen;
	oid id;
	bool known; /* (tree_write_known's hints: id vouched for) */
} tree_dir;

typedef struct {
	tree_dir *v;
	size_t n, cap;
} tree_ids;

#define TREE_IDS_INIT      \
	{                  \
		NULL, 0, 0 \
	}

/* tree_write, also filling *ids (emptied first; NULL: none). */
int tree_write_ids(oid *root, odb_writer *w, const snap *s, tree_ids *ids);

/*
 * tree_write_ids, taking the id of a directory from `known` instead of
 * building its tree when known holds it: the same directory (same first
 * entry, prefix length and end, in tree_write_ids' order) marked known,
 * every entry below it vouched for by the stat cache (`cached`, not
 * skipped), and, with w, its tree object intact in w's store.  The caller
 * promises that a known id is the tree of exactly those entries (the stat
 * cache's proof, statcache.h); anything else about the hint is checked,
 * and a hint that does not fit is built instead.  known == NULL:
 * tree_write_ids.
 */
int tree_write_known(oid *root, odb_writer *w, const snap *s, tree_ids *ids,
		     const tree_ids *known);
void tree_ids_release(tree_ids *ids);

/* Read a tree recursively into `out` (appended, canonical order). */
int tree_read(snap *out, odb *db, const oid *root);

/* tree_read, taking every subtree whose id is that of the same directory
 * of `like` (its ids from tree_write_ids) from `like` instead of the
 * store: the same result, reading only the directories that differ.
 * The entries taken carry path, mode, size and id only, as read ones
 * do.  like == NULL: tree_read. */
int tree_read_like(snap *out, odb *db, const oid *root, const snap *like,
		   const tree_ids *ids);

/* snap_diff(tree `root`, like) reading only the directories whose ids
 * differ from like's (ids from tree_write_ids): fn gets a from the tree
 * (held in *keep, which the caller releases with snap_release; it holds
 * only what was read), b from like. */
int tree_diff_like(snap *keep, odb *db, const oid *root, const snap *like,
		   const tree_ids *ids, snap_diff_fn fn, void *payload);

/* Parse one tree object (for fsck).  Calls fn per entry; validates. */
typedef int (*tree_entry_fn)(void *payload, const char *name, uint32_t mode,
			     uint64_t size, const oid *id);
int tree_parse(const char *data, size_t len, tree_entry_fn fn, void *payload);

#endif
