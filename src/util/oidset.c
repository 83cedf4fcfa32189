/*
 * oidset.c - linear-probing hash set of object ids (load factor <= 1/2).
 */
#include "util/common.h"
#include "util/oidset.h"
#include "util/alloc.h"

static size_t slot_of(const oidset *s, const oid *id)
{
	uint64_t h;
	memcpy(&h, id->b, sizeof(h));
	return (size_t)h & (s->cap - 1);
}

static size_t find(const oidset *s, const oid *id, bool *found)
{
	size_t i = slot_of(s, id);
	while (s->used[i]) {
		if (!oid_cmp(&s->keys[i], id)) {
			*found = true;
			return i;
		}
		i = (i + 1) & (s->cap - 1);
	}
	*found = false;
	return i;
}

static int rehash(oidset *s, size_t ncap)
{
	oidset n = OIDSET_INIT;
	n.cap = ncap;
	n.keys = decree_malloc(ncap * sizeof(oid));
	n.vals = decree_malloc(ncap * sizeof(uint64_t));
	n.used = decree_calloc(ncap, 1);
	if (!n.keys || !n.vals || !n.used) {
		oidset_release(&n);
		return -1;
	}
	for (size_t i = 0; i < s->cap; i++) {
		bool f;
		size_t j;
		if (!s->used[i])
			continue;
		j = find(&n, &s->keys[i], &f);
		n.keys[j] = s->keys[i];
		n.vals[j] = s->vals[i];
		n.used[j] = 1;
	}
	n.count = s->count;
	oidset_release(s);
	*s = n;
	return 0;
}

int oidset_put(oidset *s, const oid *id, uint64_t val)
{
	bool found;
	size_t i;

	if ((s->count + 1) * 2 > s->cap &&
	    rehash(s, s->cap ? s->cap * 2 : 64) < 0)
		return -1;
	i = find(s, id, &found);
	if (!found) {
		s->keys[i] = *id;
		s->used[i] = 1;
		s->count++;
	}
	s->vals[i] = val;
	return 0;
}

int oidset_add(oidset *s, const oid *id, bool *added)
{
	bool found = false;

	if (s->cap)
		find(s, id, &found);
	if (added)
		*added = !found;
	if (found)
		return 0;
	return oidset_put(s, id, 0);
}

bool oidset_get(const oidset *s, const oid *id, uint64_t *val)
{
	bool found;
	size_t i;

	if (!s->cap)
		return false;
	i = find(s, id, &found);
	if (found && val)
		*val = s->vals[i];
	return found;
}

bool oidset_has(const oidset *s, const oid *id)
{
	return oidset_get(s, id, NULL);
}

void oidset_release(oidset *s)
{
	decree_free(s->keys);
	decree_free(s->vals);
	decree_free(s->used);
	s->keys = NULL;
	s->vals = NULL;
	s->used = NULL;
	s->cap = s->count = 0;
}
