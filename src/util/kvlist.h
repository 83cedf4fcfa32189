/*
 * kvlist.h - an ordered list of string pairs (frontmatter fields, the -v
 * variables of a run request).
 *
 * Invariants: keys are unique (setting an existing key replaces its value
 * in place, so the order is the order keys were first set); every key and
 * value is an owned NUL-terminated copy.  KVLIST_INIT is a valid empty
 * list.
 */
#ifndef DECREE_KVLIST_H
#define DECREE_KVLIST_H

#include <stddef.h>

typedef struct {
	char *key;
	char *value;
} kv_pair;

typedef struct {
	kv_pair *v;
	size_t n, cap;
} kvlist;

#define KVLIST_INIT        \
	{                  \
		NULL, 0, 0 \
	}

/* Set (replace in place, or append) a key.  0, or -1 out of memory. */
int kvlist_set(kvlist *l, const char *key, const char *value);
/* The value of `key`, or NULL. */
const char *kvlist_get(const kvlist *l, const char *key);
void kvlist_release(kvlist *l);

#endif
