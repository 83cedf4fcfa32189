/*
 * decree/diff.h - diffs of checkpoints and the working tree, and atomic
 * application of unified diffs.
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
#include "checkpoint.h"
#include "store.h"

DECREE_BEGIN_DECL

/** One changed path of a diff. */
typedef struct {
	const char *path;
	char status; /**< 'A' added, 'D' deleted, 'M' modified */
	unsigned old_mode, new_mode; /**< 0644, 0755, 0120000; 0 if absent */
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

/** What apply does (or would do) to one path. */
typedef enum {
	DECREE_APPLY_CREATE = 1,
	DECREE_APPLY_MODIFY = 2,
	DECREE_APPLY_DELETE = 3,
	DECREE_APPLY_SKIP = 4,	   /**< already equal to the patch result */
	DECREE_APPLY_CONFLICT = 5, /**< does not apply; detail says why */
} decree_apply_action;

/** Per-path report, called for every path before anything is written
 * (detail: the conflict message, or NULL). */
typedef void (*decree_apply_report_cb)(void *payload, const char *path,
				       decree_apply_action action,
				       const char *detail);

/** Checks the final state of every path the patch touches before anything
 * is written (exists false: absent; mode 0644/0755/0120000; sha256 of the
 * content or link target).  Non-zero: the path is wrong, nothing is
 * written and decree_apply fails with DECREE_EVERIFY naming it. */
typedef int (*decree_apply_verify_cb)(void *payload, const char *path,
				      bool exists, unsigned mode,
				      const char *sha256_hex);

#define DECREE_APPLY_OPTIONS_VERSION 1
typedef struct {
	unsigned version;
	bool check_only; /**< check and report; write nothing */
	bool reverse;	 /**< apply new -> old (patch -R) */
	int strip;	 /**< leading components to strip (-pN); -1: auto */
	/** Run after the writes with /bin/sh -c in the root; if it fails the
	 * tree is put back as before the apply (see decree_apply). */
	const char *exec;
	bool exec_stdout_to_stderr; /**< keep stdout for machine output */
	const char *session;	    /**< session of safety captures
				       (NULL: "default") */
	decree_apply_report_cb report;
	decree_progress_cb progress;   /**< phase per path as it is written or
					  rolled back */
	decree_apply_verify_cb verify; /**< NULL: no check */
	void *payload;
} decree_apply_options;
#define DECREE_APPLY_OPTIONS_INIT                                            \
	{                                                                    \
		DECREE_APPLY_OPTIONS_VERSION, false, false, -1, NULL, false, \
			NULL, NULL, NULL, NULL, NULL                         \
	}

typedef struct {
	size_t created, modified, deleted, skipped, conflicts;
	bool exec_ran;
	int exec_status; /**< exit status, or 128 + signal number */
	/** The command failed and the tree was put back: */
	size_t restored, removed, swept;
	char exec_checkpoint[DECREE_ID_HEXLEN + 1]; /**< capture of the tree
						       the failed command left
						       ("" if none) */
} decree_apply_result;

/**
 * Apply a unified diff to the working tree as one transaction.  Every
 * file patch is checked against the current bytes first; a file whose
 * bytes already equal the result is skipped (not written).  Any conflict
 * (context mismatch, file to create exists, file to delete differs) is
 * reported per path and nothing is written.  Otherwise all files are
 * written all-or-nothing and crash-safe, and the change is pushed on the
 * undo history (decree_undo reverts it).
 *
 * With opts->exec the command runs after the commit; if it exits non-zero
 * (or is killed) the tree the command left is captured (checkpoint
 * labelled "exec-failed"), then put back in one transaction: files the
 * patch or the command changed are restored, files the patch created are
 * removed, files that appeared while the command ran are swept (ignored
 * files excepted); the apply moves to the redo history.
 *
 * @param name  how messages call the patch ("fix.diff", "<stdin>")
 * @return 0; DECREE_EINVALID (malformed or unsafe patch),
 *         DECREE_ECONFLICT (conflicts, or the tree changed meanwhile),
 *         DECREE_EVERIFY (opts->verify refused a result),
 *         DECREE_EAPPLY, DECREE_EEXEC (the command failed; rolled back),
 *         DECREE_ELOCKED, -1.
 */
DECREE_API int decree_apply(decree_apply_result *result, decree_store *s,
			    const char *name, const char *text, size_t len,
			    const decree_apply_options *opts);

DECREE_END_DECL

#endif
