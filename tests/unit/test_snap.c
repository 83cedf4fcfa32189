/*
 * test_snap.c - flat snapshots: canonical order, lookup, diff, totals.
 *
 * Canonical order is checked against a table of hand-picked pairs and
 * against an oracle on random paths: comparing the component lists
 * lexicographically (each component with strcmp) is what a depth-first
 * walk with sorted children produces, and path_cmp must agree with it.
 * Random tests print their seed; DECREE_TEST_SEED=<n> replays.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "store/snap.h"
#include "util/alloc.h"
#include "util/sha256.h"
#include "util/strset.h"

#include <time.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return testutil_rnd(&rng_state);
}

static uint64_t test_seed(void)
{
	return testutil_seed("test_snap");
}

static int sign(int v)
{
	return v < 0 ? -1 : v > 0;
}

/* --- path_cmp ----------------------------------------------------------------
 */

static const struct {
	const char *a, *b;
	int want; /* sign of path_cmp(a, b) */
	int line;
} cmp_cases[] = {
#define C(a, b, w)                \
	{                         \
		a, b, w, __LINE__ \
	}
	C("a/x", "a.c", -1), /* '/' sorts before '.' */
	C("a.c", "a0", -1),
	C("a/x", "a0", -1),
	C("a", "a/x", -1), /* a directory's name before its contents */
	C("a", "a.c", -1),
	C("a", "a", 0),
	C("", "", 0),
	C("", "a", -1),
	C("a/b/c", "a/b.c", -1),
	C("a/b/c", "a/b/c", 0),
	C("a-b", "a/b", 1), /* '-' (0x2d) < '/' in ASCII, not here */
	C("a b", "a/b", 1), /* ' ' too */
	C("a!", "a/", 1),
	C("a/z", "a!", -1),
	C("ab/c", "a/c", 1),
	C("a/b/z", "a/ba", -1),
	C("Z", "a", -1),     /* byte order, not case folding */
	C("a\x80", "a~", 1), /* bytes compare unsigned */
	C("a\xff/x", "a\xff", 1),
	C("dir/sub/file", "dir/sub.txt", -1),
	C("dir/sub.txt", "dir/sub0/x", -1),
	C(".hidden", "a", -1),
	C("x/.a", "x/a", -1),
#undef C
};

static void test_path_cmp_table(void **state)
{
	UNUSED(state);
	for (size_t i = 0; i < ARRAY_SIZE(cmp_cases); i++) {
		int got = sign(path_cmp(cmp_cases[i].a, cmp_cases[i].b));
		int rev = sign(path_cmp(cmp_cases[i].b, cmp_cases[i].a));
		if (got != cmp_cases[i].want || rev != -cmp_cases[i].want)
			fail_msg(
				"line %d: path_cmp(\"%s\", \"%s\") = %d (reverse %d), want %d",
				cmp_cases[i].line, cmp_cases[i].a,
				cmp_cases[i].b, got, rev, cmp_cases[i].want);
	}
}

/* The oracle: component lists compared lexicographically with strcmp. */
static int oracle_cmp(const char *a, const char *b)
{
	for (;;) {
		const char *ea = strchr(a, '/'), *eb = strchr(b, '/');
		size_t na = ea ? (size_t)(ea - a) : strlen(a);
		size_t nb = eb ? (size_t)(eb - b) : strlen(b);
		size_t n = na < nb ? na : nb;
		int c = memcmp(a, b, n);
		if (c)
			return sign(c);
		if (na != nb)
			return na < nb ? -1 : 1;
		if (!ea && !eb)
			return 0;
		if (!ea)
			return -1; /* a ends: a is the directory itself / a
				      prefix */
		if (!eb)
			return 1;
		a = ea + 1;
		b = eb + 1;
	}
}

static void random_path(char *out, size_t outlen)
{
	static const char alphabet[] = "ab.-/0 \x7f\xc3";
	size_t len = 1 + rnd() % 8, k = 0;

	for (size_t i = 0; i < len && k + 1 < outlen; i++) {
		char c = alphabet[rnd() % (sizeof(alphabet) - 1)];
		if (c == '/' && (k == 0 || out[k - 1] == '/'))
			c = 'a';
		out[k++] = c;
	}
	if (out[k - 1] == '/')
		out[k - 1] = 'b';
	out[k] = '\0';
}

static void test_path_cmp_oracle(void **state)
{
	char a[32], b[32];

	UNUSED(state);
	rng_state = test_seed() ^ 0x1111;
	for (int i = 0; i < 200000; i++) {
		random_path(a, sizeof(a));
		if (rnd() % 4 == 0) { /* share a prefix often */
			size_t n = strlen(a);
			snprintf(b, sizeof(b), "%.*s", (int)(rnd() % (n + 1)),
				 a);
			random_path(b + strlen(b), sizeof(b) - strlen(b));
		} else {
			random_path(b, sizeof(b));
		}
		if (sign(path_cmp(a, b)) != oracle_cmp(a, b))
			fail_msg(
				"path_cmp(\"%s\", \"%s\") = %d, component order says %d",
				a, b, path_cmp(a, b), oracle_cmp(a, b));
	}
}

/* --- snap_sort / snap_find
 * ------------------------------------------------------ */

static void add_entry(snap *s, const char *path, uint32_t mode, uint64_t size,
		      unsigned tag)
{
	snap_entry *e = snap_add(s, path, strlen(path));

	assert_non_null(e);
	assert_string_equal(e->path, path);
	e->mode = mode;
	e->size = size;
	memset(e->id.b, (int)tag, SHA256_LEN);
}

static void test_sort_and_find(void **state)
{
	snap s = SNAP_INIT;
	strset seen = STRSET_INIT;
	char path[32];
	size_t added = 0;

	UNUSED(state);
	rng_state = test_seed() ^ 0x2222;
	/* random distinct paths (a file may also be a "directory" prefix here:
	 * snaps do not care, trees do), added in random order */
	for (int i = 0; i < 3000; i++) {
		random_path(path, sizeof(path));
		if (strset_has(&seen, path))
			continue;
		assert_int_equal(strset_put(&seen, path, 1), 0);
		add_entry(&s, path, MODE_FILE, (uint64_t)i, (unsigned)i);
		added++;
	}
	strset_release(&seen);
	snap_sort(&s);
	assert_int_equal(s.n, added);
	for (size_t i = 1; i < s.n; i++)
		assert_true(path_cmp(s.v[i - 1].path, s.v[i].path) < 0);
	for (size_t i = 0; i < s.n; i++) {
		char copy[32];
		snap_entry *e;
		snprintf(copy, sizeof(copy), "%s", s.v[i].path);
		e = snap_find(&s, copy);
		assert_ptr_equal(e, &s.v[i]);
	}
	for (int i = 0; i < 3000; i++) {
		snap_entry *e;
		random_path(path, sizeof(path));
		e = snap_find(&s, path);
		if (e)
			assert_string_equal(e->path, path);
		else
			for (size_t k = 0; k < s.n; k++)
				assert_string_not_equal(s.v[k].path, path);
	}
	snap_release(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.v);
	/* an empty snap */
	assert_null(snap_find(&s, "a"));
	snap_sort(&s);
	snap_release(&s);
}

/* Paths longer than an arena chunk, many of them. */
static void test_arena(void **state)
{
	snap s = SNAP_INIT;
	char *big = malloc(100001);

	UNUSED(state);
	assert_non_null(big);
	memset(big, 'x', 100000);
	big[100000] = '\0';
	for (int i = 0; i < 5000; i++) {
		char p[32];
		snprintf(p, sizeof(p), "dir%d/file", i);
		add_entry(&s, p, MODE_FILE, 1, 1);
		if (i == 2500)
			add_entry(&s, big, MODE_FILE, 1, 1);
	}
	assert_int_equal(s.n, 5001);
	assert_string_equal(s.v[0].path, "dir0/file");
	assert_int_equal(strlen(s.v[2501].path), 100000);
	assert_string_equal(s.v[5000].path, "dir4999/file");
	snap_release(&s);
	free(big);
}

/* --- snap_entry_same / snap_diff
 * --------------------------------------------------- */

struct diff_rec {
	char path[32];
	int a, b; /* tag of the id, -1: absent */
};

struct diff_log {
	struct diff_rec v[32];
	size_t n;
	size_t stop_at; /* return 7 at this call (0: never) */
};

static int diff_fn(void *payload, const char *path, const snap_entry *a,
		   const snap_entry *b)
{
	struct diff_log *l = payload;

	assert_true(l->n < ARRAY_SIZE(l->v));
	assert_true(a || b);
	if (a)
		assert_string_equal(a->path, path);
	if (b)
		assert_string_equal(b->path, path);
	snprintf(l->v[l->n].path, sizeof(l->v[0].path), "%s", path);
	l->v[l->n].a = a ? a->id.b[0] : -1;
	l->v[l->n].b = b ? b->id.b[0] : -1;
	l->n++;
	return l->stop_at && l->n == l->stop_at ? 7 : 0;
}

static void test_diff(void **state)
{
	snap a = SNAP_INIT, b = SNAP_INIT;
	struct diff_log log;
	static const struct diff_rec want[] = {
		{ "dir/new", -1, 9 }, { "dir/x", 3, 3 }, /* mode changed, same
							    id */
		{ "dir.c", 4, -1 },   { "exec", 5, 6 },	 { "gone", 7, -1 },
		{ "skip2", 0, 0 }, /* skipped, size differs */
		{ "z", -1, 8 },
	};

	UNUSED(state);
	/* a */
	add_entry(&a, "dir/x", MODE_FILE, 1, 3);
	add_entry(&a, "dir.c", MODE_FILE, 1, 4);
	add_entry(&a, "exec", MODE_EXEC, 1, 5);
	add_entry(&a, "gone", MODE_FILE, 1, 7);
	add_entry(&a, "same", MODE_LINK, 1, 2);
	add_entry(&a, "skip1", MODE_SKIP, 100, 0);
	add_entry(&a, "skip2", MODE_SKIP, 100, 0);
	/* b */
	add_entry(&b, "z", MODE_FILE, 1, 8);
	add_entry(&b, "dir/new", MODE_FILE, 1, 9);
	add_entry(&b, "dir/x", MODE_EXEC, 1, 3);
	add_entry(&b, "dir.c/inner", MODE_FILE, 1, 4); /* dir.c became a dir */
	add_entry(&b, "exec", MODE_EXEC, 1, 6);
	add_entry(&b, "same", MODE_LINK, 1, 2);
	add_entry(&b, "skip1", MODE_SKIP, 100, 1); /* skipped: size only */
	add_entry(&b, "skip2", MODE_SKIP, 101, 0);
	snap_sort(&a);
	snap_sort(&b);

	memset(&log, 0, sizeof(log));
	assert_int_equal(snap_diff(&a, &b, diff_fn, &log), 0);
	/* dir.c/inner appears right after dir.c: expected order is canonical */
	assert_int_equal(log.n, ARRAY_SIZE(want) + 1);
	{
		size_t k = 0;
		for (size_t i = 0; i < log.n; i++) {
			if (!strcmp(log.v[i].path, "dir.c/inner")) {
				assert_int_equal(log.v[i].a, -1);
				assert_int_equal(log.v[i].b, 4);
				assert_string_equal(log.v[i - 1].path, "dir.c");
				continue;
			}
			assert_string_equal(log.v[i].path, want[k].path);
			assert_int_equal(log.v[i].a, want[k].a);
			assert_int_equal(log.v[i].b, want[k].b);
			k++;
		}
	}

	/* a snap against itself: no calls */
	memset(&log, 0, sizeof(log));
	assert_int_equal(snap_diff(&a, &a, diff_fn, &log), 0);
	assert_int_equal(log.n, 0);

	/* empty against full: every entry once, b side */
	{
		snap e = SNAP_INIT;
		memset(&log, 0, sizeof(log));
		assert_int_equal(snap_diff(&e, &b, diff_fn, &log), 0);
		assert_int_equal(log.n, b.n);
		for (size_t i = 0; i < log.n; i++)
			assert_int_equal(log.v[i].a, -1);
		memset(&log, 0, sizeof(log));
		assert_int_equal(snap_diff(&a, &e, diff_fn, &log), 0);
		assert_int_equal(log.n, a.n);
	}

	/* a non-zero return stops the walk and is returned */
	memset(&log, 0, sizeof(log));
	log.stop_at = 3;
	assert_int_equal(snap_diff(&a, &b, diff_fn, &log), 7);
	assert_int_equal(log.n, 3);

	snap_release(&a);
	snap_release(&b);
}

static void test_entry_same_and_totals(void **state)
{
	static const struct {
		uint32_t ma, mb;
		uint64_t sa, sb;
		unsigned ia, ib;
		bool same;
	} cases[] = {
		{ MODE_FILE, MODE_FILE, 1, 1, 1, 1, true },
		{ MODE_FILE, MODE_FILE, 1, 2, 1, 1, true }, /* size follows id
							     */
		{ MODE_FILE, MODE_FILE, 1, 1, 1, 2, false },
		{ MODE_FILE, MODE_EXEC, 1, 1, 1, 1, false },
		{ MODE_FILE, MODE_LINK, 1, 1, 1, 1, false },
		{ MODE_SKIP, MODE_SKIP, 5, 5, 1, 2, true },
		{ MODE_SKIP, MODE_SKIP, 5, 6, 1, 1, false },
		{ MODE_SKIP, MODE_FILE, 5, 5, 1, 1, false },
	};
	snap s = SNAP_INIT;
	uint64_t files, bytes;

	UNUSED(state);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snap_entry a, b;
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		a.mode = cases[i].ma;
		b.mode = cases[i].mb;
		a.size = cases[i].sa;
		b.size = cases[i].sb;
		memset(a.id.b, (int)cases[i].ia, SHA256_LEN);
		memset(b.id.b, (int)cases[i].ib, SHA256_LEN);
		if (snap_entry_same(&a, &b) != cases[i].same)
			fail_msg("case %zu: snap_entry_same != %d", i,
				 cases[i].same);
		assert_true(snap_entry_same(&b, &a) == cases[i].same);
	}
	snap_totals(&s, &files, &bytes);
	assert_int_equal(files, 0);
	assert_int_equal(bytes, 0);
	add_entry(&s, "a", MODE_FILE, 10, 1);
	add_entry(&s, "b", MODE_EXEC, 20, 1);
	add_entry(&s, "c", MODE_LINK, 3, 1);
	add_entry(&s, "d", MODE_SKIP, 1000, 0);
	snap_totals(&s, &files, &bytes);
	assert_int_equal(files, 3);
	assert_int_equal(bytes, 33);
	assert_true(snap_entry_is_stored(&s.v[0]));
	assert_false(snap_entry_is_stored(&s.v[3]));
	snap_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_cmp_table),
		cmocka_unit_test(test_path_cmp_oracle),
		cmocka_unit_test(test_sort_and_find),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_entry_same_and_totals),
	};

	test_seed();
	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
