/*
 * arena.c - see arena.h.
 */
#include "util/common.h"
#include "util/arena.h"
#include "util/alloc.h"

struct arena_chunk {
	arena_chunk *next;
	size_t used, cap;
	char data[];
};

#define ARENA_CHUNK 65536

char *arena_alloc(arena *a, size_t n)
{
	arena_chunk *c = a->head;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		if (!(c = decree_malloc(sizeof(*c) + cap)))
			return NULL;
		c->next = a->head;
		c->used = 0;
		c->cap = cap;
		a->head = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

void arena_adopt(arena *dst, arena *src)
{
	arena_chunk *last = src->head;

	if (!last)
		return;
	while (last->next)
		last = last->next;
	/* src's newest chunk stays in front: its free space is used first */
	last->next = dst->head;
	dst->head = src->head;
	src->head = NULL;
}

void arena_release(arena *a)
{
	arena_chunk *c = a->head;

	while (c) {
		arena_chunk *n = c->next;
		decree_free(c);
		c = n;
	}
	a->head = NULL;
}
