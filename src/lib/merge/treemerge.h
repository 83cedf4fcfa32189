/*
 * treemerge.h - three-way merge of snapshots, path by path.
 *
 * Overview: given base, ours (the project now) and theirs (a workspace),
 * treemerge() decides for every path whose entry differs between any two
 * of them what the merged tree holds there, or why it cannot say.  It
 * writes nothing: the caller applies the plan (or reports the conflicts
 * and writes nothing, as `decree workspace apply` does).  The rules
 * (docs/merge.md has examples):
 *  - a path changed on one side only takes that side (a deletion too);
 *    the same change on both sides is clean;
 *  - a regular file whose content changed on both sides is merged by
 *    merge3() (git merge-file's answers) unless one of the three versions
 *    holds a NUL byte (binary): then it is a conflict;
 *  - the mode merges on its own: changed on one side it is taken from
 *    that side, so a mode change merges with a content change on the
 *    other side; changed differently on both it is a conflict;
 *  - both sides create the path: identical is clean; two text files are
 *    merged against an empty base, as `git merge-file ours /dev/null
 *    theirs` does: clean when one of them is empty (the other wins),
 *    otherwise a conflict (the common lines are left out of it);
 *  - deleted on one side and changed on the other, file <-> symlink,
 *    two different symlink targets: conflicts;
 *  - an entry that is recorded but not stored (MODE_SKIP, above the size
 *    limit) is never overwritten, deleted or merged: any change that
 *    would need that is a conflict;
 *  - a file where the merged tree needs a directory (ours creates `a`,
 *    theirs creates `a/b`) is a conflict on both paths.
 *
 * Calling sequence:
 *	treemerge_plan plan = TREEMERGE_PLAN_INIT;
 *	treemerge_opts o = TREEMERGE_OPTS_INIT;
 *	o.ours_label = "project"; o.theirs_label = "workspace";
 *	if (treemerge(&plan, &base, &ours, &theirs, &o, load, payload) < 0)
 *		fail;
 *	if (plan.nconflicts) report each item with action CONFLICT
 *	else for each item: apply it (see treemerge_action)
 *	treemerge_plan_release(&plan);
 * The snaps must be sorted (snap_sort) and hashed (no `unhashed` entry).
 * load() is called only for regular files changed on both sides, with a
 * stored entry of one of the snaps; it appends the blob's bytes to `out`
 * (cleared before each call).
 *
 * Errors: DECREE_EINVALID (an unhashed entry, bad options), DECREE_ERROR
 * (out of memory), or what load() returned.  Conflicts are not errors.
 *
 * Ownership: the plan belongs to the caller (treemerge_plan_release).
 * Its items borrow paths and entries from the three snaps, which must
 * outlive it; merged bytes, messages and text results belong to the plan.
 */
#ifndef DECREE_TREEMERGE_H
#define DECREE_TREEMERGE_H

#include "merge/merge3.h"
#include "store/snap.h"
#include "util/buf.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum treemerge_action {
	/* The project already holds the result: write nothing. */
	TREEMERGE_KEEP_OURS = 0,
	/* deleted: remove the path.  Otherwise write theirs' blob `id`
	 * (file bytes or symlink target) with `mode` (theirs' mode, or
	 * ours' when only ours changed the mode). */
	TREEMERGE_TAKE_THEIRS,
	/* Write `data`/`len` (a merge3 result) with `mode`. */
	TREEMERGE_WRITE_MERGED,
	/* Keep the project's bytes, set the permission bits to `mode`. */
	TREEMERGE_CHMOD,
	/* No result: see reason and message. */
	TREEMERGE_CONFLICT,
};

enum treemerge_reason {
	TREEMERGE_CLEAN = 0,
	TREEMERGE_CONTENT,	 /* text changed on both, overlapping */
	TREEMERGE_BINARY,	 /* binary (NUL) changed on both, differently */
	TREEMERGE_DELETE_MODIFY, /* deleted in ours, changed in theirs */
	TREEMERGE_MODIFY_DELETE, /* changed in ours, deleted in theirs */
	TREEMERGE_ADD_ADD,	 /* created on both, different, not mergeable */
	TREEMERGE_MODE,		 /* permission bits changed differently */
	TREEMERGE_TYPE,	    /* file <-> symlink on one side, other changed */
	TREEMERGE_SYMLINK,  /* symlink target changed differently */
	TREEMERGE_SKIPPED,  /* would overwrite/delete/merge an unstored entry */
	TREEMERGE_DIR_FILE, /* a file where the merge needs a directory */
};

typedef struct {
	const char *path; /* borrowed from one of the snaps */
	/* The path's entry in each snap (borrowed), NULL when absent. */
	const snap_entry *base, *ours, *theirs;
	enum treemerge_action action;
	/* The result, for every action but CONFLICT: */
	bool deleted;  /* the path is gone */
	uint32_t mode; /* its mode */
	oid id;	       /* its blob (KEEP_OURS, CHMOD: ours'; TAKE_THEIRS:
			  theirs'); zero for WRITE_MERGED */
	char *data;    /* WRITE_MERGED: the merged bytes (owned) */
	size_t len;
	/* CONFLICT: */
	enum treemerge_reason reason;
	char *message; /* one line (owned), e.g. "deleted in ours, changed
			  in theirs" */
	/* CONTENT and text ADD_ADD: merge3's result, with markers and
	 * regions (owned); empty otherwise. */
	merge3_result text;
} treemerge_item;

typedef struct {
	treemerge_item *v; /* in canonical path order */
	size_t n, cap;
	size_t nconflicts; /* items with action CONFLICT */
} treemerge_plan;

#define TREEMERGE_PLAN_INIT   \
	{                     \
		NULL, 0, 0, 0 \
	}

typedef struct {
	unsigned version; /* TREEMERGE_OPTS_VERSION */
	/* Names in conflict messages and markers; NULL: "ours", "base",
	 * "theirs". */
	const char *ours_label, *base_label, *theirs_label;
	unsigned style; /* enum merge3_style, for the markers */
} treemerge_opts;

#define TREEMERGE_OPTS_VERSION 1
#define TREEMERGE_OPTS_INIT                                                  \
	{                                                                    \
		TREEMERGE_OPTS_VERSION, NULL, NULL, NULL, MERGE3_STYLE_MERGE \
	}

/* Append the bytes of e's blob to out; 0 or a negative error code. */
typedef int (*treemerge_load_fn)(void *payload, const snap_entry *e, buf *out);

/**
 * Plan the merge of base -> theirs onto ours.
 *
 * @param out   filled on success (pass TREEMERGE_PLAN_INIT)
 * @param opts  may be NULL for the defaults
 * @return 0 (see out->nconflicts), DECREE_EINVALID, DECREE_ERROR or the
 *         error load() returned; on error *out is left empty
 */
int treemerge(treemerge_plan *out, const snap *base, const snap *ours,
	      const snap *theirs, const treemerge_opts *opts,
	      treemerge_load_fn load, void *payload);

/* Free the plan's memory; it is left empty.  Accepts NULL. */
void treemerge_plan_release(treemerge_plan *p);

/* A stable lowercase name for a reason ("delete/modify", ...), for JSON
 * and messages. */
const char *treemerge_reason_name(enum treemerge_reason r);

#endif
