/*
 * diff.h - what other operations use of diff.c: a stored tree against the
 * working tree of a handle (workspace.c: a workspace's base against the
 * workspace), and which entries' bytes a diff reads (checkpoint.c's
 * change counts read the same ones).
 */
#ifndef DECREE_OPS_DIFF_H
#define DECREE_OPS_DIFF_H
#include "decree/diff.h"
#include "diff/unidiff.h"
#include "scan/worktree.h"
#include "util/sha256.h"

/* Are an entry's bytes read to show or count its lines: stored, and
 * below UNIDIFF_MAX_CONTENT (a bigger one is only said to differ)? */
static inline bool diff_entry_readable(const snap_entry *e)
{
	return snap_entry_is_stored(e) && e->size < UNIDIFF_MAX_CONTENT;
}

/* As decree_checkpoint_diff(s, ref, NULL, ...) for the checkpoint whose
 * tree is `tree` and scan rules `view` (may be NULL). */
int diff_tree_worktree(decree_store *s, const oid *tree,
		       const worktree_view *view, const decree_diff_options *o,
		       decree_diff_cb cb, void *payload);
#endif
