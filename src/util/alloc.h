/*
 * alloc.h - every allocation of libdecree goes through these.  They set an
 * out-of-memory error on failure, check size arithmetic, and let tests make
 * the Nth allocation fail (alloc_fail_at).
 */
#ifndef DECREE_ALLOC_H
#define DECREE_ALLOC_H

#include <stddef.h>

void *decree_malloc(size_t n);
void *decree_calloc(size_t nmemb, size_t size);
void *decree_realloc(void *p, size_t n);
/* Grow an array to hold at least `want` elements of `elsize`; *cap updated. */
int decree_grow(void **arr, size_t *cap, size_t want, size_t elsize);
char *decree_strdup(const char *s);
char *decree_strndup(const char *s, size_t n);
void decree_free(void *p);

/* Checked arithmetic: 0 on success, -1 (with error set) on overflow. */
int decree_add_overflow(size_t *out, size_t a, size_t b);
int decree_mul_overflow(size_t *out, size_t a, size_t b);

/* Test hook: make the nth allocation from now fail (0 disables). */
void alloc_fail_at(unsigned long nth);
unsigned long alloc_count(void);

#define GROW(arr, cap, want) \
	decree_grow((void **)&(arr), &(cap), (want), sizeof(*(arr)))

#endif
