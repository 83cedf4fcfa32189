/*
 * suggest.h - "did you mean ...?": the names nearest to a word that
 * matched none of them (an unknown command, option, value or routine),
 * and the edit distance behind it.
 *
 * Distance: optimal string alignment -- one edit inserts, deletes or
 * replaces a character or swaps two neighbours ("resore", "--sesion",
 * "hlelo" are one edit away) -- with ASCII letters compared without case.
 * Near: at most one edit per four bytes of the word, rounded up, and 3 at
 * most (1 for a word of up to 4 bytes, 2 up to 8, 3 beyond), and fewer
 * edits than the name has bytes; a word of 3 bytes or more that begins a
 * name is near it too, as one edit ("dev" -> "develop").  A far-fetched
 * guess misleads more than it helps: when nothing is near, nothing is
 * suggested.  Words and names longer than 64 bytes are never near.
 */
#ifndef DECREE_SUGGEST_H
#define DECREE_SUGGEST_H

#include <stddef.h>

/* The distance of a and b (any length), SIZE_MAX when out of memory. */
size_t suggest_distance(const char *a, const char *b);

/*
 * The names nearest to `word`: up to `max` of those near it at the
 * smallest distance any name has, in the order of names[], stored in
 * out[] (borrowed from names[]).  Returns how many (0: none is near).
 */
size_t suggest_nearest(const char **out, size_t max, const char *word,
		       const char *const *names, size_t n);

/* The nearest name (the first of a tie), or NULL when none is near. */
const char *suggest_closest(const char *word, const char *const *names,
			    size_t n);

#endif
