/*
 * testutil.h - helpers shared by the cmocka suites (header-only, so each
 * suite stays one self-contained program).
 *
 *   testutil_rm_rf(dir)        remove a scratch tree (no symlink followed)
 *   testutil_rnd(&state)       splitmix64: fast, seedable, good enough
 *   testutil_seed("suite")     the seed: DECREE_TEST_SEED, or time ^ pid;
 *                              printed once so a failure can be replayed
 *   testutil_scratch_setup/teardown   a cmocka fixture: a fresh scratch
 *                              directory (under $TMPDIR) and a file path in it
 *   testutil_same_scan(a, b, what)    two scans' snaps are equal, stat data
 *                              included (cmocka must be included first)
 */
#ifndef DECREE_TESTUTIL_H
#define DECREE_TESTUTIL_H

#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/snap.h"

static inline int testutil_rm_entry(const char *p, const struct stat *st,
				    int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void testutil_rm_rf(const char *dir)
{
	nftw(dir, testutil_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static inline uint64_t testutil_rnd(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t testutil_seed(const char *suite)
{
	static int done;
	static uint64_t seed;
	const char *s;

	if (done)
		return seed;
	s = getenv("DECREE_TEST_SEED");
	seed = s && *s ? strtoull(s, NULL, 0)
		       : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	printf("%s: DECREE_TEST_SEED=%llu\n", suite, (unsigned long long)seed);
	done = 1;
	return seed;
}

/* Make the scratch directory $TMPDIR/decree-<tag>-XXXXXX (/tmp without
 * TMPDIR) into out.  0, or -1 with errno set. */
static inline int testutil_mkdtemp(char *out, size_t len, const char *tag)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(out, len, "%s/decree-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
		 tag);
	return mkdtemp(out) ? 0 : -1;
}

/* The fixture of suites that test one file in a scratch directory. */
typedef struct {
	char dir[PATH_MAX];
	char path[PATH_MAX + 16]; /* <dir>/<file> */
} testutil_fixture;

static inline int testutil_scratch_setup(void **state, const char *tag,
					 const char *file)
{
	testutil_fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (testutil_mkdtemp(f->dir, sizeof(f->dir), tag) < 0) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, file);
	*state = f;
	return 0;
}

static inline int testutil_scratch_teardown(void **state)
{
	testutil_fixture *f = *state;

	testutil_rm_rf(f->dir);
	free(f);
	return 0;
}

static inline void testutil_same_scan(const snap *a, const snap *b,
				      const char *what)
{
	if (a->n != b->n)
		fail_msg("%s: %zu vs %zu entries", what, a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const snap_entry *x = &a->v[i], *y = &b->v[i];
		if (strcmp(x->path, y->path) || x->mode != y->mode ||
		    x->size != y->size || oid_cmp(&x->id, &y->id) ||
		    x->mtime_ns != y->mtime_ns || x->ctime_ns != y->ctime_ns ||
		    x->ino != y->ino || x->dev != y->dev)
			fail_msg("%s: entry %zu differs ('%s' vs '%s')", what,
				 i, x->path, y->path);
	}
}

#endif
