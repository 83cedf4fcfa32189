/*
 * suggest.c - "did you mean ...?" (suggest.h).
 */
#include "util/common.h"
#include "util/suggest.h"

#define SUGGEST_MAX 64

static unsigned char fold(char c)
{
	return (unsigned char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

/* Optimal string alignment distance of a[0..an) and b[0..bn), both at
 * most SUGGEST_MAX bytes. */
static size_t distance(const char *a, size_t an, const char *b, size_t bn)
{
	size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

	for (size_t i = 0; i <= an; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= bn; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= an; i++) {
		for (size_t j = 1; j <= bn; j++) {
			size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
			size_t best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 &&
			    fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[an][bn];
}

static bool starts_with(const char *s, const char *prefix, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || fold(s[i]) != fold(prefix[i]))
			return false;
	return true;
}

const char *suggest_closest(const char *word, const char *const *candidates,
			    size_t n)
{
	size_t wn = strlen(word), best_d = SIZE_MAX;
	const char *best = NULL;

	if (!wn || wn > SUGGEST_MAX)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *c = candidates[i];
		size_t cn = strlen(c), longer = cn > wn ? cn : wn, d;
		if (!cn || cn > SUGGEST_MAX)
			continue;
		d = distance(word, wn, c, cn);
		if (d > (longer + 3) / 4 &&
		    !(wn >= 3 && starts_with(c, word, wn)))
			continue;
		if (d < best_d) {
			best_d = d;
			best = c;
		}
	}
	return best;
}
