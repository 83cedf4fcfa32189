/*
 * kvlist.c - ordered string pairs (see kvlist.h for the invariants).
 */
#include "util/common.h"
#include "util/kvlist.h"
#include "util/alloc.h"

int kvlist_set(kvlist *l, const char *key, const char *value)
{
	char *val = decree_strdup(value);

	if (!val)
		return -1;
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].key, key)) {
			decree_free(l->v[i].value);
			l->v[i].value = val;
			return 0;
		}
	if (GROW(l->v, l->cap, l->n + 1) < 0 ||
	    !(l->v[l->n].key = decree_strdup(key))) {
		decree_free(val);
		return -1;
	}
	l->v[l->n++].value = val;
	return 0;
}

const char *kvlist_get(const kvlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].key, key))
			return l->v[i].value;
	return NULL;
}

void kvlist_release(kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		decree_free(l->v[i].key);
		decree_free(l->v[i].value);
	}
	decree_free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}
