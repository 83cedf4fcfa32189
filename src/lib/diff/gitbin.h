/*
 * gitbin.h - the pieces of git's binary patches: what follows a
 * "GIT binary patch" line in `git diff --binary` output.
 *
 * Overview: a git binary patch is one or two blocks (forward, then
 * reverse), each "literal N" or "delta N" followed by lines of base85 and
 * an empty line.  The base85 lines carry a zlib stream; inflated it is N
 * bytes: the new content (literal) or a delta in git's pack format against
 * the current content (delta).  The patch's "index <old>..<new>" line names
 * both versions by git blob id.  patch.c parses the blocks with these
 * functions and applies them; docs/diff-format.md section 2.4 describes the
 * format byte by byte.  Nothing here is git's code: the format is
 * documented in git's Documentation/gitformat-pack.txt ("Deltified
 * representation") and base85.c's alphabet.
 *
 * Calling sequence (one block):
 *	buf z = BUF_INIT, data = BUF_INIT;
 *	for each line: gitbin_base85_line(&z, line, len_without_newline);
 *	gitbin_inflate(&data, z.ptr, z.len, N);
 *	delta: gitbin_delta_check(data.ptr, data.len), later
 *	       gitbin_delta_apply(&out, cur, cur_len, data.ptr, data.len).
 *
 * Errors: DECREE_EINVALID with a one-line reason (no file or line name:
 * the caller adds those) for malformed input, DECREE_ECONFLICT from
 * gitbin_delta_apply when the source is not the size the delta was made
 * for, DECREE_ERROR for memory.
 *
 * Ownership: inputs are borrowed; output goes into the caller's buf.
 */
#ifndef DECREE_GITBIN_H
#define DECREE_GITBIN_H

#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Contents (and delta sources and targets) of this size or more are
 * refused, as files that large are never patched (UNIDIFF_MAX_CONTENT). */
#define GITBIN_MAX_SIZE ((size_t)64 << 20)
/* A delta's own size limit: every byte inserted costs at most 128/127
 * bytes of delta, plus copies and the header. */
#define GITBIN_MAX_DELTA (2 * GITBIN_MAX_SIZE)

#define GITBIN_ID_HEXLEN 40 /* a SHA-1 git blob id in hex */

/**
 * Decode one base85 line of a binary patch (without its newline) and
 * append the bytes to `out`.  The first character gives the byte count
 * ('A'..'Z' 1..26, 'a'..'z' 27..52); then 5 characters per 4 bytes.
 * @return 0, DECREE_EINVALID or DECREE_ERROR
 */
int gitbin_base85_line(buf *out, const char *line, size_t len);

/**
 * Inflate the zlib stream z into `out` (cleared first); it must hold
 * exactly `want` bytes (at most GITBIN_MAX_DELTA) and nothing may follow
 * the stream.
 * @return 0, DECREE_EINVALID (damaged, truncated, too long or too short)
 *         or DECREE_ERROR
 */
int gitbin_inflate(buf *out, const char *z, size_t zlen, size_t want);

/**
 * The source and target sizes a delta announces (its two varints).
 * @return 0 or DECREE_EINVALID
 */
int gitbin_delta_sizes(size_t *src_size, size_t *dst_size, const char *delta,
		       size_t len);

/**
 * Check a delta's structure: sizes within GITBIN_MAX_SIZE, every copy
 * inside the source, every insert inside the delta, no reserved opcode,
 * and the ops produce exactly the target size.
 * @return 0 or DECREE_EINVALID
 */
int gitbin_delta_check(const char *delta, size_t len);

/**
 * Apply a delta to src (src_len must be the source size it announces);
 * the target goes into `out` (cleared first).  Checks everything
 * gitbin_delta_check does.
 * @return 0, DECREE_ECONFLICT (the source has another size),
 *         DECREE_EINVALID or DECREE_ERROR
 */
int gitbin_delta_apply(buf *out, const char *src, size_t src_len,
		       const char *delta, size_t len);

/**
 * The git blob id of `data`: SHA-1 of "blob <len>" NUL <data>, in
 * lowercase hex.
 * @return 0 or DECREE_ERROR
 */
int gitbin_blob_id(char hex[GITBIN_ID_HEXLEN + 1], const char *data,
		   size_t len);

#endif
