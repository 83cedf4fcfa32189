/*
 * merge3.h - line-based three-way merge of byte buffers.
 *
 * src/lib/merge holds decree's merges: merge3 (this file: one text, three
 * versions) and treemerge (three snapshots, path by path).  Like
 * src/lib/diff they are pure: (ptr, len) buffers and parameter structs in,
 * caller-owned results out; no file system, no store, no lock, no global
 * state.  They use src/util, src/lib/diff and the snapshot and object-id
 * types of src/lib/store, nothing else.
 *
 * Overview: the changes base -> ours and base -> theirs (line diffs,
 * xdiff.h) are laid over each other.  The contract is `git merge-file`
 * with its defaults: a merge that git calls clean gives exactly the bytes
 * of `git merge-file -p ours base theirs`, and a conflicting one has the
 * same number of conflicts (git's exit status) and, in the default style,
 * the same marker output as git given the same labels.  In particular:
 *  - changes to lines that do not touch merge; changes that overlap, or
 *    that touch (edits to adjacent lines, insertions at the same point,
 *    an insertion right next to an edit), conflict;
 *  - the same change on both sides (same base lines, same new lines) is
 *    clean;
 *  - lines compare byte-exact: CR LF is kept as it is, a last line
 *    without '\n' differs from the same line with one, and the output
 *    has the final newline (or not) that the side it comes from has;
 *  - conflicts are refined like git's "zealous" level: the part of a
 *    conflict that both sides changed alike is taken out of it, and two
 *    conflicts separated by at most three lines, or by lines without a
 *    letter or digit, become one (docs/merge.md).
 * Buffers are not checked for binary content (a NUL is an ordinary
 * byte): deciding that a file is binary is the caller's job (treemerge.h).
 *
 * Calling sequence:
 *	merge3_params p = MERGE3_PARAMS_INIT;
 *	merge3_result r = MERGE3_RESULT_INIT;
 *	p.ours_label = "ours"; p.theirs_label = "theirs";
 *	if (merge3(&r, base, blen, ours, olen, theirs, tlen, &p) < 0)
 *		fail;
 *	if (r.nconflicts) show r.conflicts / r.ptr; else write r.ptr, r.len
 *	merge3_result_release(&r);
 *
 * Errors: DECREE_ERROR (out of memory, a buffer of more than 2^31
 * lines), DECREE_EINVALID (bad params).  A conflict is not an error: the
 * call returns 0 and says so in nconflicts.
 *
 * Ownership: the result's memory belongs to the caller and is freed by
 * merge3_result_release(); nothing else is retained after merge3()
 * returns.  The labels are read during the call only.
 */
#ifndef DECREE_MERGE3_H
#define DECREE_MERGE3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum merge3_style {
	/* <<<<<<< ours / ======= / >>>>>>> theirs (git's default) */
	MERGE3_STYLE_MERGE = 0,
	/* also ||||||| base with the base lines (git's diff3 style); as in
	 * git, conflicts are then not refined (docs/merge.md) */
	MERGE3_STYLE_DIFF3 = 1,
};

typedef struct {
	unsigned version; /* MERGE3_PARAMS_VERSION */
	unsigned style;	  /* enum merge3_style */
	/* Text after the markers (<<<<<<< LABEL); NULL: the marker alone.
	 * A label must not contain a newline. */
	const char *ours_label;
	const char *base_label;
	const char *theirs_label;
	/* Length of the markers; 0 means 7 (git's default). */
	unsigned marker_size;
} merge3_params;

#define MERGE3_PARAMS_VERSION 1
#define MERGE3_PARAMS_INIT                                                     \
	{                                                                      \
		MERGE3_PARAMS_VERSION, MERGE3_STYLE_MERGE, NULL, NULL, NULL, 0 \
	}

/* One conflict as 0-based line ranges [start, start + count) of each
 * input.  ours and theirs are exactly the lines between the markers.
 * base is the base lines the overlapping changes replace; when a conflict
 * was refined (the default style) it is those of the whole overlapping
 * change it was cut from, so it may cover more than this conflict. */
typedef struct {
	size_t base_start, base_count;
	size_t ours_start, ours_count;
	size_t theirs_start, theirs_count;
} merge3_conflict;

typedef struct {
	/* The merged bytes when nconflicts == 0; otherwise the merge with
	 * conflict markers (for display).  Followed by a '\0' that len does
	 * not count; never NULL after a successful merge3(). */
	char *ptr;
	size_t len;
	size_t nconflicts;	    /* what git merge-file's status says */
	merge3_conflict *conflicts; /* nconflicts entries, in file order */
} merge3_result;

#define MERGE3_RESULT_INIT       \
	{                        \
		NULL, 0, 0, NULL \
	}

/**
 * Merge the changes base -> ours and base -> theirs.
 *
 * @param out     filled on success (its previous contents are not freed:
 *                pass a MERGE3_RESULT_INIT or released result)
 * @param params  may be NULL for the defaults (no labels)
 * @return 0 (clean or not: see out->nconflicts), DECREE_ERROR or
 *         DECREE_EINVALID; on error *out is left empty
 */
int merge3(merge3_result *out, const char *base, size_t base_len,
	   const char *ours, size_t ours_len, const char *theirs,
	   size_t theirs_len, const merge3_params *params);

/* Free the result's memory; it is left empty (MERGE3_RESULT_INIT).
 * Accepts NULL. */
void merge3_result_release(merge3_result *r);

#endif
