/*
 * unidiff.h - format one file pair as a git-style unified diff record.
 *
 * Overview: the formatter of the diff core (xdiff.h).  It turns an old and
 * a new version of one path - content, mode, existence - into the text that
 * changes.diff and `decree checkpoint diff` show, in the exact syntax of
 * docs/diff-format.md: `diff --git`, mode lines, `index`, `---`/`+++`,
 * `@@` hunks with context, `\ No newline at end of file`, and decree's
 * base64 record for binary content (a NUL byte on either side).  GNU
 * `patch -p1` and `git apply` apply every text record forwards and with
 * -R; they skip (patch) or refuse (git apply) binary records.
 *
 * Calling sequence:
 *	unidiff_file f = UNIDIFF_FILE_INIT;
 *	f.old_path = f.new_path = "src/a.c";
 *	f.old_exists = f.new_exists = true; f.old_mode = f.new_mode = ...;
 *	f.old_data = ...; f.old_len = ...; f.new_data = ...; ...
 *	unidiff_format(&out, &f, NULL);	(appends to out)
 * Call it once per path, in path order, into the same buffer to build a
 * whole-tree diff.  Identical pairs append nothing.
 *
 * Errors: DECREE_ERROR (out of memory, sha1 failure), DECREE_EINVALID (no
 * path, or an invalid mode).  On error `out` may hold a partial record;
 * truncate it to its old length if that matters.
 *
 * Ownership: inputs are borrowed for the duration of the call.
 */
#ifndef DECREE_UNIDIFF_H
#define DECREE_UNIDIFF_H

#include "util/buf.h"
#include "diff/xdiff.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The modes a record can carry (git's). */
#define UNIDIFF_MODE_FILE 0100644u
#define UNIDIFF_MODE_EXEC 0100755u
#define UNIDIFF_MODE_LINK 0120000u

typedef struct {
	/* Worktree-relative, '/'-separated.  NULL means "the other one";
	 * when both are set and differ (both sides existing), the record is
	 * a rename. */
	const char *old_path, *new_path;
	bool old_exists, new_exists;
	uint32_t old_mode, new_mode; /* UNIDIFF_MODE_*; ignored if absent */
	const char *old_data;	     /* content; a symlink's target */
	size_t old_len;
	const char *new_data;
	size_t new_len;
} unidiff_file;

#define UNIDIFF_FILE_INIT                                        \
	{                                                        \
		NULL, NULL, false, false, 0, 0, NULL, 0, NULL, 0 \
	}

enum unidiff_flags {
	/* Leave out the `index <old>..<new>` lines (git blob names).
	 * GNU patch needs them to delete empty files and patch symlinks. */
	UNIDIFF_NO_INDEX = 1 << 0,
	/* The content is too big to diff (UNIDIFF_MAX_CONTENT): the data
	 * are not given; the record is the header and git's "Binary files
	 * a/x and b/x differ" line, which no tool applies. */
	UNIDIFF_TOO_BIG = 1 << 1,
};

/* Files this large or larger are not diffed (or patched) in memory:
 * above the default size limit, so a default configuration never meets
 * it (docs/diff-format.md). */
#define UNIDIFF_MAX_CONTENT ((uint64_t)64 << 20)

typedef struct {
	unsigned version; /* UNIDIFF_OPTIONS_VERSION */
	unsigned flags;	  /* enum unidiff_flags */
	unsigned context; /* lines of context around changes (3) */
	xdiff_params xdiff;
} unidiff_options;

#define UNIDIFF_OPTIONS_VERSION 1
#define UNIDIFF_OPTIONS_INIT                                     \
	{                                                        \
		UNIDIFF_OPTIONS_VERSION, 0, 3, XDIFF_PARAMS_INIT \
	}

/**
 * Append the record(s) for one file pair to `out`: nothing if the pair is
 * identical, two records (deletion, then creation) when the type changes
 * between symlink and regular file, one record otherwise.
 *
 * @param opts  NULL for the defaults
 * @return 0, DECREE_EINVALID or DECREE_ERROR
 */
int unidiff_format(buf *out, const unidiff_file *file,
		   const unidiff_options *opts);

/**
 * Append `prefix` + `path` as git writes a file name: verbatim, or, when
 * the name holds a control character, '"', '\\', DEL or a byte >= 0x80,
 * in double quotes with C escapes (\t \n \" \\ ... and \ooo octal).
 * @return 0 or DECREE_ERROR
 */
int unidiff_quote_path(buf *out, const char *prefix, const char *path);

/* True if the content counts as binary: it holds a NUL byte. */
bool unidiff_is_binary(const char *data, size_t len);

#endif
