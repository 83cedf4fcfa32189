/*
 * xdiff.h - the line diff core: which lines of an old buffer must go and
 * which lines of a new buffer must come so that one becomes the other.
 *
 * src/lib/diff holds the pure text algorithms: xdiff (this line diff),
 * unidiff (the record formatter) and patch (parser and in-memory
 * applier).  They take (ptr, len) buffers and parameter structs and answer
 * through results or callbacks: no file system, no store, no lock, no
 * global state, and nothing from src/lib outside this folder (src/util
 * only).  Reading files and writing results is the caller's job (ops/).
 *
 * Overview: a closed box.  Inputs are two (ptr, len) byte buffers and an
 * xdiff_params; the output is a sequence of edits (change groups) passed
 * to a callback in ascending order.  There is no file system access, no
 * formatting (unidiff.h does that) and no global state.
 *
 * Lines: a line is a run of bytes ending with '\n' (included); the last
 * line of a buffer may lack the '\n'.  Lines compare byte-exact, so
 * "a\r\n" differs from "a\n" and a final "a" differs from "a\n".
 *
 * Calling sequence:
 *	xdiff_params p = XDIFF_PARAMS_INIT;
 *	xdiff_diff(old, old_len, new, new_len, &p, on_edit, payload);
 * on_edit() sees, for every change group, the 0-based first line and the
 * line count on each side; between two groups the lines are unchanged.
 *
 * Errors: DECREE_ERROR (out of memory, more than 2^31 lines) or whatever
 * negative value the callback returned.  The callback's own error message
 * is left untouched.
 *
 * Ownership: nothing is retained after xdiff_diff() returns.
 * xdiff_lines_split() fills a caller-owned xdiff_lines that must be given
 * back to xdiff_lines_release().
 */
#ifndef DECREE_XDIFF_H
#define DECREE_XDIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum xdiff_flags {
	/* Never give up: always return a shortest edit script, whatever the
	 * time it takes (quadratic on pathological inputs). */
	XDIFF_MINIMAL = 1 << 0,
	/* Keep the change groups where the core puts them instead of
	 * sliding them down over equal lines (for tests). */
	XDIFF_NO_SLIDE = 1 << 1,
	/* Prepare the lines as git's xdiff does before its core runs:
	 * occurrences counted over the whole files (not only between the
	 * common prefix and suffix), and a line with many matches that sits
	 * in a run of changed lines kept out of the core (git's
	 * xdl_cleanup_records).  With XDIFF_NO_SLIDE the script is the one
	 * git's core gives, which git's three-way merge then compacts and
	 * lays over another script (merge/merge3.c): its answers depend on
	 * that exact script, not just on its length. */
	XDIFF_GIT_PREPARE = 1 << 2,
};

typedef struct {
	unsigned version; /* XDIFF_PARAMS_VERSION */
	unsigned flags;	  /* enum xdiff_flags */
	/* Rounds of the middle-snake search before the cost limit picks a
	 * split point; 0 picks max(256, sqrt(lines)). */
	size_t max_cost;
} xdiff_params;

#define XDIFF_PARAMS_VERSION 1
#define XDIFF_PARAMS_INIT                  \
	{                                  \
		XDIFF_PARAMS_VERSION, 0, 0 \
	}

/* One change group: old lines [old_start, old_start + old_count) are
 * replaced by new lines [new_start, new_start + new_count).  0-based.
 * One of the counts may be 0 (pure insertion or deletion); the start of
 * an empty side is the index of the line the change sits before. */
typedef struct {
	size_t old_start, old_count;
	size_t new_start, new_count;
} xdiff_edit;

/* Return 0 to continue, a negative error code to stop the diff. */
typedef int (*xdiff_edit_cb)(const xdiff_edit *edit, void *payload);

/**
 * Diff two buffers line by line and report the change groups in order.
 *
 * @param params  may be NULL for the defaults
 * @return 0, DECREE_ERROR, or the callback's negative return value
 */
int xdiff_diff(const char *old, size_t old_len, const char *new, size_t new_len,
	       const xdiff_params *params, xdiff_edit_cb cb, void *payload);

/* Line table of a buffer: line i is bytes [start[i], start[i + 1]).
 * start has nlines + 1 entries (start[nlines] is the buffer length). */
typedef struct {
	size_t nlines;
	size_t *start;
} xdiff_lines;

#define XDIFF_LINES_INIT \
	{                \
		0, NULL  \
	}

/**
 * Split a buffer into lines.  An empty buffer has no lines.
 * @return 0 or DECREE_ERROR (out of memory)
 */
int xdiff_lines_split(xdiff_lines *out, const char *ptr, size_t len);

/* Free the table; the struct is left empty (XDIFF_LINES_INIT). */
void xdiff_lines_release(xdiff_lines *lines);

#endif
