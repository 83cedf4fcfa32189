/*
 * arena.h - a bump allocator for many small strings freed all at once
 * (the paths of a snapshot or of a walk): one malloc per 64 KiB instead of
 * one per string.
 */
#ifndef DECREE_ARENA_H
#define DECREE_ARENA_H

#include <stddef.h>

typedef struct arena_chunk arena_chunk;

typedef struct {
	arena_chunk *head;
} arena;

#define ARENA_INIT   \
	{            \
		NULL \
	}

/* n bytes (unaligned: for strings), or NULL on out-of-memory. */
char *arena_alloc(arena *a, size_t n);

/* A NUL-terminated copy of the n bytes at s, or NULL. */
char *arena_strndup(arena *a, const char *s, size_t n);

/* Move every allocation of src into dst (src is left empty). */
void arena_adopt(arena *dst, arena *src);

/* Free every allocation at once. */
void arena_release(arena *a);

#endif
