/*
 * workspace.h - what other operations use of workspace.c: undo and redo
 * of a discard (restore.c), and telling a workspace's root.
 */
#ifndef DECREE_OPS_WORKSPACE_H
#define DECREE_OPS_WORKSPACE_H
#include "decree/restore.h"
#include "store/oplog.h"
#include "store/repo.h"

/* Is the handle's root a workspace of its store? */
bool workspace_root_is_one(const decree_store *s);

/* Is `root` a workspace of the store of s (its directory's direct
 * child)?  Its name, NUL-terminated, to name[size] (cut to fit). */
bool workspace_name_of(char *name, size_t size, const decree_store *s,
		       const char *root);

/* Undo (make the workspace again from the capture) or redo (discard it
 * again) the OPLOG_WORKSPACE entry `e` on top of its stack, and move it
 * to the other stack.  The caller holds the lock (it may be released and
 * taken again); res (may be NULL) counts the workspace as created or
 * deleted. */
int workspace_replay(decree_store *s, const oplog_entry *e, bool undo,
		     decree_restore_result *res);
#endif
