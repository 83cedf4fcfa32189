/*
 * decree/diff.h - diffs of checkpoints and the working tree.  Applying a
 * diff is in decree/apply.h.
 *
 * The diff text is the format of docs/diff-format.md: git-style records
 * that GNU `patch -p1` and `git apply` accept for text files, plus a
 * base64 record for binary files so one diff applies in both directions.
 *
 * Ownership: everything passed to a callback is borrowed for the duration
 * of the call.
 *
 * Errors: 0 or a negative decree_error_code; decree_error_last() has the
 * one-line message.
 */
#ifndef DECREE_DIFF_H
#define DECREE_DIFF_H

#include "common.h"
#include "store.h"

DECREE_BEGIN_DECL

/** One changed path of a diff. */
typedef struct {
	const char *path;
	char status; /**< 'A' added, 'D' deleted, 'M' modified */
	unsigned old_mode, new_mode; /**< a file's permission bits (0644, 0600,
					...), 0120000 (symlink); 0 if absent */
	bool binary;		     /**< a NUL byte on either side */
	bool skipped; /**< larger than max_file_size: not stored, no text */
	uint64_t added, removed; /**< lines (0 for binary and skipped) */
	const char *text; /**< the record(s), NUL-terminated, no NUL inside
			     (binary content is base64); NULL with
			     no_text/skipped */
	size_t len;
} decree_diff_file;

/** Called per changed path in canonical path order; non-zero stops. */
typedef int (*decree_diff_cb)(void *payload, const decree_diff_file *f);

#define DECREE_DIFF_OPTIONS_VERSION 1
typedef struct {
	unsigned version;
	unsigned context; /**< lines of context around changes (3) */
	bool no_text;	  /**< statuses only: no contents are read (fastest) */
	const char *const *paths; /**< NULL-terminated; NULL = whole tree */
} decree_diff_options;
#define DECREE_DIFF_OPTIONS_INIT                            \
	{                                                   \
		DECREE_DIFF_OPTIONS_VERSION, 3, false, NULL \
	}

/**
 * Diff checkpoint `ref` against the working tree (ref2 NULL) or against
 * checkpoint ref2.  Only the scanned part of the tree takes part
 * (docs/scanning.md).  @return 0, what the callback returned, or
 * DECREE_ENOTFOUND, DECREE_EAMBIGUOUS, DECREE_EINVALID, -1.
 */
DECREE_API int decree_checkpoint_diff(decree_store *s, const char *ref,
				      const char *ref2,
				      const decree_diff_options *opts,
				      decree_diff_cb cb, void *payload);

/**
 * The file records of a unified diff, without applying it: the format
 * decree_checkpoint_diff writes (a pipeline run's changes.diff), or any
 * patch decree_apply reads (decree/apply.h).  For each file patch, in the
 * patch's order, `cb` gets:
 *  - path: the new path (the old one for a deletion);
 *  - status: 'A' created, 'D' deleted, 'M' modified, 'R' renamed, 'C'
 *    copied;
 *  - old_mode, new_mode: as decree_checkpoint_diff gives them, 0 for an
 *    absent side and when the patch does not say (a plain diff -u);
 *  - binary, added, removed (lines; 0 for binary content); skipped is
 *    always false;
 *  - text, len: the record as it stands in the patch, from its first line
 *    up to the next record (NULL when it holds a NUL byte).
 *
 * An empty text has no records (cb is not called); any other text without
 * a record is malformed, as for decree_apply.
 *
 * @param name   how error messages call the patch ("changes.diff")
 * @param strip  leading path components to strip (-pN); -1: automatic
 * @return 0, what the callback returned, DECREE_EINVALID (malformed or
 *         unsafe: the message names the patch line), -1.
 */
DECREE_API int decree_patch_files(const char *name, const char *text,
				  size_t len, int strip, decree_diff_cb cb,
				  void *payload);

DECREE_END_DECL

#endif
