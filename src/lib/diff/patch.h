/*
 * patch.h - parse unified diffs and apply them to bytes in memory.
 *
 * Overview: the first two of the three phases of `decree apply` (parse ->
 * check every hunk against the current bytes -> write through txn).  This
 * module never touches the file system: the caller reads the current
 * bytes of each path, calls patch_apply() for every file patch, and only
 * when all of them succeeded writes the results as one transaction.
 *
 * Accepted input (docs/diff-format.md has the details): decree's own
 * records, `diff -u FILE1 FILE2`, `diff -ruN DIR1 DIR2`, and `git diff`
 * (also --no-index, renames and copies, mode changes, new/deleted files,
 * quoted names, and git's binary patches: `git diff --binary`, literal
 * and delta).  Text around the records (mail headers, "diff -ruN ..."
 * lines, "Only in" lines) is ignored.  Refused with DECREE_EINVALID:
 * hunks without a file header, truncated or miscounted hunks, hunk headers
 * that contradict each other, binary changes without content ("Binary
 * files ... differ"), damaged binary data (base85, zlib, delta), git
 * binary patches without the index line that names both blobs, submodules,
 * unsafe paths (absolute, "..", empty components, anything inside ".git"
 * or ".decree").  Nothing is partially returned: a patch set parses whole
 * or not at all.
 *
 * Calling sequence:
 *	patch_set *ps;
 *	if ((err = patch_parse(&ps, "changes.diff", text, len, NULL)) < 0)
 *		...
 *	for (i = 0; i < ps->nfiles; i++) {
 *		const patch_file *fp = &ps->files[i];
 *		read the current bytes of patch_file_source(fp, reverse);
 *		patch_apply(&res[i], fp, old, old_len, old_exists, flags);
 *	}
 *	if every apply succeeded: write all res[i] to
 *	patch_file_target(fp, reverse) as one transaction; for a rename
 *	also remove the source path.
 *	patch_set_free(ps);
 * The caller checks what only it can see: that the target of a rename or
 * copy does not exist yet, and, if it cares, that the current mode is
 * res.expect_mode.  A path may appear in several file patches (git writes
 * a change between symlink and regular file as a deletion followed by a
 * creation): apply the file patches in order (in reverse order with
 * PATCH_REVERSE), feeding the result for a path into its next patch.
 *
 * Errors: negative decree_error_code; the message is one line that names
 * the patch and the line in it ("changes.diff:12: ...").  DECREE_EINVALID
 * for malformed patches, DECREE_ECONFLICT when the current bytes are not
 * what the patch expects (the message says which hunk and why),
 * DECREE_EAPPLY when the patch cannot describe the result (a hunk ending
 * without newline in the middle of the file, a git binary patch without
 * its reverse block applied in reverse), DECREE_ERROR for memory.
 *
 * Ownership: patch_parse() copies the input; everything in a patch_set
 * belongs to it and lives until patch_set_free().  patch_result owns its
 * buffer; release it with patch_result_release().
 */
#ifndef DECREE_PATCH_H
#define DECREE_PATCH_H

#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line of a hunk.  ptr/len are the bytes as they are in the file:
 * with the '\n', unless a "\ No newline at end of file" marker followed. */
typedef struct {
	char op; /* ' ' context, '-' old only, '+' new only */
	const char *ptr;
	size_t len;
} patch_line;

typedef struct {
	size_t old_start, old_count; /* as written in "@@ -s,c +s,c @@" */
	size_t new_start, new_count;
	size_t first;  /* index of its first line in patch_file.lines */
	size_t nlines; /* number of lines (markers excluded) */
	size_t lineno; /* line of the "@@" header in the patch text */
} patch_hunk;

/* One block of a git binary patch, inflated: the whole new content
 * ("literal N") or a delta against the current content ("delta N"). */
typedef struct {
	bool is_delta;
	char *data;
	size_t len;
} patch_git_block;

typedef struct {
	/* Worktree-relative paths after stripping.  Equal unless the record
	 * is a rename or a copy (or a plain diff naming two files, see
	 * docs/diff-format.md). */
	char *old_path, *new_path;
	bool old_exists; /* false: the patch creates the file */
	bool new_exists; /* false: the patch deletes the file */
	bool is_rename, is_copy;
	bool is_git;		     /* came with a "diff --git" header */
	uint32_t old_mode, new_mode; /* 0100000 | perm, 0120000, 0 unknown */
	bool is_binary; /* decree's base64 record or git's binary patch */
	char *bin_old, *bin_new; /* decree's: both contents */
	size_t bin_old_len, bin_new_len;
	/* git's: the forward block, the reverse one if has_git_rev, and the
	 * blob ids of the "index" line (lowercase hex, 7 to 40 digits; all
	 * zeros for an absent side), which patch_apply checks the current
	 * content and the result against */
	bool is_git_binary, has_git_rev;
	patch_git_block git_fwd, git_rev;
	char old_id[41], new_id[41];
	patch_hunk *hunks;
	size_t nhunks;
	patch_line *lines;
	size_t nlines;
	size_t lineno;		/* first line of the record */
	const char *patch_name; /* for messages, owned by the set */
} patch_file;

typedef struct {
	char *name; /* the name given to patch_parse() */
	char *text; /* private copy of the input */
	size_t len;
	patch_file *files;
	size_t nfiles;
	size_t cap;
} patch_set;

typedef struct {
	unsigned version; /* PATCH_PARSE_OPTIONS_VERSION */
	/* Leading components to strip from names, as `patch -pN`; -1 (the
	 * default) strips git's a/ b/ and guesses for plain diffs. */
	int strip;
} patch_parse_options;

#define PATCH_PARSE_OPTIONS_VERSION 1
#define PATCH_PARSE_OPTIONS_INIT                \
	{                                       \
		PATCH_PARSE_OPTIONS_VERSION, -1 \
	}

/**
 * Parse a unified diff.
 *
 * @param out   the new patch set (caller frees with patch_set_free)
 * @param name  how messages call the patch ("changes.diff", "<stdin>")
 * @param opts  NULL for the defaults
 * @return 0, DECREE_EINVALID (malformed, unsafe path, no diff at all) or
 *         DECREE_ERROR
 */
int patch_parse(patch_set **out, const char *name, const char *text, size_t len,
		const patch_parse_options *opts);

/* Free a patch set and everything in it; NULL is fine. */
void patch_set_free(patch_set *ps);

enum patch_apply_flags {
	PATCH_REVERSE = 1 << 0, /* apply new -> old (patch -R) */
	/* Look for a hunk's context elsewhere when it does not match at
	 * its line (as patch and git apply do); never fuzz. */
	PATCH_ALLOW_OFFSET = 1 << 1,
};

typedef struct {
	bool exists;	      /* false: the file is to be deleted */
	uint32_t mode;	      /* mode to set; 0: keep current (new: 0644) */
	uint32_t expect_mode; /* mode the patch says the file has now, or 0 */
	buf data;	      /* new content (a symlink's target) */
	size_t conflict_hunk; /* on ECONFLICT: 1-based hunk, 0 = header */
} patch_result;

#define PATCH_RESULT_INIT                \
	{                                \
		false, 0, 0, BUF_INIT, 0 \
	}

/**
 * Check one file patch against the current bytes and compute the result.
 * Every hunk must match exactly at its line (see PATCH_ALLOW_OFFSET).
 *
 * @param old         current content, or NULL/0 if the file is absent
 * @param old_exists  whether the source path exists now
 * @return 0, DECREE_ECONFLICT, DECREE_EAPPLY or DECREE_ERROR; on error
 *         `out` holds no data but may name the conflicting hunk
 */
int patch_apply(patch_result *out, const patch_file *fp, const char *old,
		size_t old_len, bool old_exists, unsigned flags);

void patch_result_release(patch_result *res);

/* The path a patch reads from / writes to in the given direction. */
const char *patch_file_source(const patch_file *fp, bool reverse);
const char *patch_file_target(const patch_file *fp, bool reverse);

#endif
