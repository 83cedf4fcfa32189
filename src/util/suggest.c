/*
 * suggest.c - "did you mean ...?" (suggest.h): one distance and one rule
 * of nearness for every suggestion decree makes (the program's unknown
 * commands, options and values, the pipeline's unknown routines, an
 * unknown project root).
 */
#include "util/common.h"
#include "util/suggest.h"
#include "util/alloc.h"

#define SUGGEST_MAX 64 /* longer words and names are never near */

static unsigned char fold(char c)
{
	return (unsigned char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

size_t suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), r, *rows;
	size_t *pp, *p, *c; /* rows i-2, i-1 and i of the table */

	if (lb > SIZE_MAX / 3 - 1 ||
	    !(rows = decree_calloc(3 * (lb + 1), sizeof(*rows))))
		return SIZE_MAX;
	pp = rows, p = rows + lb + 1, c = rows + 2 * (lb + 1);
	for (size_t j = 0; j <= lb; j++)
		p[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *t;
		c[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
			size_t v = p[j] + 1;
			if (c[j - 1] + 1 < v)
				v = c[j - 1] + 1;
			if (p[j - 1] + cost < v)
				v = p[j - 1] + cost;
			if (i > 1 && j > 1 &&
			    fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) &&
			    pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1;
			c[j] = v;
		}
		t = pp, pp = p, p = c, c = t;
	}
	r = p[lb];
	decree_free(rows);
	return r;
}

static bool begins(const char *name, const char *word, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!name[i] || fold(name[i]) != fold(word[i]))
			return false;
	return true;
}

size_t suggest_nearest(const char **out, size_t max, const char *word,
		       const char *const *names, size_t n)
{
	size_t lw = strlen(word), best = SIZE_MAX, k = 0;
	size_t bound = (lw + 3) / 4 < 3 ? (lw + 3) / 4 : 3;

	if (!lw || lw > SUGGEST_MAX || !max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *c = names[i];
		size_t lc = strlen(c), d;
		if (!lc || lc > SUGGEST_MAX)
			continue;
		d = suggest_distance(word, c);
		/* a beginning of the name counts as one edit */
		if (lw >= 3 && lw < lc && d > 1 && begins(c, word, lw))
			d = 1;
		if (d > bound || d >= lc || d > best)
			continue;
		if (d < best) {
			best = d;
			k = 0;
		}
		if (k < max)
			out[k++] = c;
	}
	return k;
}

const char *suggest_closest(const char *word, const char *const *names,
			    size_t n)
{
	const char *best;

	return suggest_nearest(&best, 1, word, names, n) ? best : NULL;
}
