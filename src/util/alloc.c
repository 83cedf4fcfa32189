/*
 * alloc.c - allocation wrappers with an OOM error and a failure hook.
 */
#include "util/common.h"
#include "util/alloc.h"
#include "util/error.h"

static unsigned long fail_at; /* 0: never */
static unsigned long counter;

void alloc_fail_at(unsigned long nth)
{
	fail_at = nth ? counter + nth : 0;
}

unsigned long alloc_count(void)
{
	return counter;
}

static bool should_fail(void)
{
	counter++;
	return fail_at && counter == fail_at;
}

void *decree_malloc(size_t n)
{
	void *p = should_fail() ? NULL : malloc(n ? n : 1);
	if (!p)
		decree_error_set(DECREE_ERROR, "out of memory");
	return p;
}

void *decree_calloc(size_t nmemb, size_t size)
{
	void *p = should_fail() ? NULL
				: calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		decree_error_set(DECREE_ERROR, "out of memory");
	return p;
}

void *decree_realloc(void *ptr, size_t n)
{
	void *p = should_fail() ? NULL : realloc(ptr, n ? n : 1);
	if (!p)
		decree_error_set(DECREE_ERROR, "out of memory");
	return p;
}

int decree_grow(void **arr, size_t *cap, size_t want, size_t elsize)
{
	size_t ncap, bytes;
	void *p;

	if (want <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < want) {
		if (decree_mul_overflow(&ncap, ncap, 2) < 0)
			return -1;
	}
	if (decree_mul_overflow(&bytes, ncap, elsize) < 0)
		return -1;
	if (!(p = decree_realloc(*arr, bytes)))
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

char *decree_strndup(const char *s, size_t n)
{
	char *p = decree_malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

char *decree_strdup(const char *s)
{
	return decree_strndup(s, strlen(s));
}

void decree_free(void *p)
{
	free(p);
}

int decree_add_overflow(size_t *out, size_t a, size_t b)
{
	if (__builtin_add_overflow(a, b, out))
		return decree_error_set(DECREE_ERROR, "size overflow");
	return 0;
}

int decree_mul_overflow(size_t *out, size_t a, size_t b)
{
	if (__builtin_mul_overflow(a, b, out))
		return decree_error_set(DECREE_ERROR, "size overflow");
	return 0;
}
