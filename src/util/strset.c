/*
 * strset.c - open-addressing string set (FNV-1a, load factor <= 1/2).
 */
#include "util/common.h"
#include "util/strset.h"
#include "util/alloc.h"

static size_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return (size_t)h;
}

static size_t find(const strset *s, const char *key, bool *found)
{
	size_t i = hash_str(key) & (s->cap - 1);
	while (s->keys[i]) {
		if (!strcmp(s->keys[i], key)) {
			*found = true;
			return i;
		}
		i = (i + 1) & (s->cap - 1);
	}
	*found = false;
	return i;
}

static int grow(strset *s)
{
	strset n = STRSET_INIT;
	n.cap = s->cap ? s->cap * 2 : 32;
	n.keys = decree_calloc(n.cap, sizeof(char *));
	n.vals = decree_calloc(n.cap, sizeof(int));
	if (!n.keys || !n.vals) {
		decree_free(n.keys);
		decree_free(n.vals);
		return -1;
	}
	for (size_t i = 0; i < s->cap; i++) {
		bool f;
		size_t j;
		if (!s->keys[i])
			continue;
		j = find(&n, s->keys[i], &f);
		n.keys[j] = s->keys[i];
		n.vals[j] = s->vals[i];
	}
	n.count = s->count;
	decree_free(s->keys);
	decree_free(s->vals);
	*s = n;
	return 0;
}

int strset_put(strset *s, const char *key, int val)
{
	bool found;
	size_t i;

	if ((s->count + 1) * 2 > s->cap && grow(s) < 0)
		return -1;
	i = find(s, key, &found);
	if (!found) {
		if (!(s->keys[i] = decree_strdup(key)))
			return -1;
		s->count++;
	}
	s->vals[i] = val;
	return 0;
}

bool strset_get(const strset *s, const char *key, int *val)
{
	bool found;
	size_t i;

	if (!s->cap)
		return false;
	i = find(s, key, &found);
	if (found && val)
		*val = s->vals[i];
	return found;
}

void strset_release(strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		decree_free(s->keys[i]);
	decree_free(s->keys);
	decree_free(s->vals);
	s->keys = NULL;
	s->vals = NULL;
	s->cap = s->count = 0;
}
