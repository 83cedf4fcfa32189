/*
 * decree/workspace.h - isolated copies of a project's scanned tree: an
 * agent works there, the user reviews the difference, then applies it to
 * the project (merged with what changed there meanwhile) or discards it.
 * docs/workspaces.md has the layout, the copy modes and the merge rules.
 *
 * Overview: decree_workspace_create copies the tree of a base checkpoint
 * into <store>/workspaces/NAME, by reflink clone where the file system
 * really shares extents (checked, never assumed) and by copying
 * otherwise.  The workspace is a project root of its own in the same
 * store (its .decree/config.yml points at the store), so decree works
 * inside it as anywhere; its base checkpoint is recorded there too.
 * decree_workspace_apply carries base -> workspace onto the project as it
 * is now (a three-way merge per path) as one transaction on the
 * project's undo history; decree_workspace_discard removes it after
 * capturing it, and decree_undo brings it back.
 *
 * Calling sequence: every call takes the project's handle (a handle whose
 * root is a workspace is refused for create, apply and discard).
 *
 * Ownership: decree_workspace_info strings are owned by the info and
 * freed by decree_workspace_info_release (or _list_free); everything
 * passed to a callback is borrowed for the duration of the call.
 *
 * Errors: 0 or a negative decree_error_code; decree_error_last() has the
 * one-line message.
 */
#ifndef DECREE_WORKSPACE_H
#define DECREE_WORKSPACE_H

#include "common.h"
#include "apply.h"
#include "checkpoint.h"
#include "diff.h"
#include "store.h"

DECREE_BEGIN_DECL

/** How a workspace's files were made. */
typedef struct {
	uint64_t cloned;     /**< reflink clones of the project's files */
	uint64_t copied;     /**< byte copies of the project's files */
	uint64_t from_store; /**< written from the store (the file differed
				from the base in the project, or was gone) */
	uint64_t links;	     /**< symlinks */
	uint64_t dirs;	     /**< directories */
	uint64_t bytes;	     /**< of the regular files */
} decree_workspace_copy;

typedef struct {
	char *name;
	char *path;    /**< absolute directory of the workspace */
	char *project; /**< the project root it was made from */
	char base[DECREE_ID_HEXLEN + 1];      /**< base checkpoint (project) */
	char base_tree[DECREE_ID_HEXLEN + 1]; /**< its tree id */
	int64_t created_ns;		      /**< Unix time, nanoseconds */
	/** "reflink" (every non-empty file was cloned, and a clone was
	 *  verified), "copy" (none was), "mixed" */
	char mode[8];
	bool reflink_verified; /**< a clone was checked to share extents */
	decree_workspace_copy copy;
} decree_workspace_info;

DECREE_API void decree_workspace_info_release(decree_workspace_info *w);

#define DECREE_WORKSPACE_CREATE_OPTIONS_VERSION 1
typedef struct {
	unsigned version;
	const char *name; /**< NULL: ws-1, ws-2, ... (the first free) */
	const char *from; /**< base checkpoint REF; NULL: checkpoint the
			     project now (session "workspace") */
	/** Never clone, always copy (to measure, or for a file system
	 *  whose clones are not wanted). */
	bool no_reflink;
} decree_workspace_create_options;
#define DECREE_WORKSPACE_CREATE_OPTIONS_INIT                               \
	{                                                                  \
		DECREE_WORKSPACE_CREATE_OPTIONS_VERSION, NULL, NULL, false \
	}

/**
 * Make a workspace of the project.  Atomic: it is built under a temporary
 * name and renamed into place; a killed create leaves a temporary
 * directory that the next workspace call removes.
 * @return 0, DECREE_EINVALID (bad name), DECREE_EEXISTS (the name is
 *         taken), DECREE_ENOTFOUND (REF), DECREE_ELOCKED, -1.
 */
DECREE_API int
decree_workspace_create(decree_workspace_info *out, decree_store *s,
			const decree_workspace_create_options *o);

/** The workspaces of this project, by name.  Free with
 *  decree_workspace_list_free. */
DECREE_API int decree_workspace_list(decree_workspace_info **out, size_t *n,
				     decree_store *s);
DECREE_API void decree_workspace_list_free(decree_workspace_info *v, size_t n);

/** One workspace of this project.  DECREE_ENOTFOUND if there is none by
 *  that name. */
DECREE_API int decree_workspace_get(decree_workspace_info *out, decree_store *s,
				    const char *name);

/**
 * The workspace's changes: its base checkpoint against its working tree,
 * the same lossless records as decree_checkpoint_diff.
 */
DECREE_API int decree_workspace_diff(decree_store *s, const char *name,
				     const decree_diff_options *o,
				     decree_diff_cb cb, void *payload);

/**
 * Carry the workspace's changes (base -> workspace) onto the project as
 * it is now (base -> project), as decree_apply does with a patch: every
 * path is reported through o->report first (DECREE_APPLY_CONFLICT with
 * the reason for a path that cannot be merged), a conflict anywhere
 * writes nothing (DECREE_ECONFLICT), o->check_only stops after the
 * report, o->exec runs afterwards with the same rollback, and the
 * change is pushed on the project's undo history.
 */
DECREE_API int decree_workspace_apply(decree_apply_result *res, decree_store *s,
				      const char *name,
				      const decree_apply_options *o);

/**
 * Remove the workspace.  Its tree is captured first (a checkpoint of the
 * workspace root, label "discarded"), and the removal is pushed on the
 * project's undo history: decree_undo re-creates the workspace as it
 * was, decree_redo discards it again.  id_out (may be NULL): the capture.
 */
DECREE_API int decree_workspace_discard(char id_out[DECREE_ID_HEXLEN + 1],
					decree_store *s, const char *name);

/** decree_workspace_discard_ext flags */
enum decree_workspace_discard_flags {
	/** The workspace was applied (its changes are in the project and
	 *  on the undo history): remove it without a capture and without
	 *  an undo entry of its own, so that `decree undo` after a run in a
	 *  workspace undoes the apply, not the removal. */
	DECREE_WORKSPACE_DISCARD_APPLIED = 1 << 0,
};

/** decree_workspace_discard with flags; id_out is "" with
 *  DECREE_WORKSPACE_DISCARD_APPLIED (nothing is captured). */
DECREE_API int decree_workspace_discard_ext(char id_out[DECREE_ID_HEXLEN + 1],
					    decree_store *s, const char *name,
					    unsigned flags);

DECREE_END_DECL

#endif
