/*
 * suggest.h - "did you mean ...?": the closest of a few names to a word
 * that matched none of them.
 */
#ifndef DECREE_SUGGEST_H
#define DECREE_SUGGEST_H

#include <stddef.h>

/*
 * The candidate closest to `word`, or NULL when none is close enough to
 * be what was meant.  Distance: insertions, deletions, substitutions and
 * swaps of two neighbours (optimal string alignment), ASCII letters
 * compared without case.  Close enough: at most one edit per four bytes
 * of the longer name, rounded up (so "helo" -> "hello", "develp" ->
 * "develop"), or `word` (three bytes or more) starts the candidate ("dev"
 * -> "develop").  Ties go to the earlier candidate.  Names longer than
 * 64 bytes are never suggested.  Borrowed: the result is one of
 * candidates[].
 */
const char *suggest_closest(const char *word, const char *const *candidates,
			    size_t n);

#endif
