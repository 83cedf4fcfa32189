/*
 * diff.h - what other operations use of diff.c: a stored tree against the
 * working tree of a handle (workspace.c: a workspace's base against the
 * workspace).
 */
#ifndef DECREE_OPS_DIFF_H
#define DECREE_OPS_DIFF_H
#include "decree/diff.h"
#include "scan/worktree.h"
#include "util/sha256.h"

/* As decree_checkpoint_diff(s, ref, NULL, ...) for the checkpoint whose
 * tree is `tree` and scan rules `view` (may be NULL). */
int diff_tree_worktree(decree_store *s, const oid *tree,
		       const worktree_view *view, const decree_diff_options *o,
		       decree_diff_cb cb, void *payload);
#endif
