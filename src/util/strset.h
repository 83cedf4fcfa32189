/*
 * strset.h - a hash set of strings (copied), with an int value per key.
 */
#ifndef DECREE_STRSET_H
#define DECREE_STRSET_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	char **keys;
	int *vals;
	size_t cap, count;
} strset;

#define STRSET_INIT              \
	{                        \
		NULL, NULL, 0, 0 \
	}

int strset_put(strset *s, const char *key, int val); /* insert or update */
bool strset_get(const strset *s, const char *key, int *val);
static inline bool strset_has(const strset *s, const char *key)
{
	return strset_get(s, key, NULL);
}
void strset_release(strset *s);

#endif
