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

/* Read a tree recursively into `out` (appended, canonical order). */
int tree_read(snap *out, odb *db, const oid *root);

/* Parse one tree object (for fsck).  Calls fn per entry; validates. */
typedef int (*tree_entry_fn)(void *payload, const char *name, uint32_t mode,
			     uint64_t size, const oid *id);
int tree_parse(const char *data, size_t len, tree_entry_fn fn, void *payload);

#endif
