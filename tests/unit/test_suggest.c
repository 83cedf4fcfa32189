/*
 * test_suggest.c - "did you mean ...?" (util/suggest.h): a typo, a swap,
 * a missing letter and a prefix find their name; a word far from every
 * name finds none; ties go to the first candidate; case is ignored; the
 * bound grows with the word up to 3 edits; suggest_nearest gives every
 * name of a tie up to its max; the distance of long strings (project
 * roots).
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/suggest.h"

static const char *const names[] = { "develop", "hello", "pr-review", "review",
				     "lint" };

static const char *closest(const char *w)
{
	return suggest_closest(w, names, ARRAY_SIZE(names));
}

static void test_close_names(void **state)
{
	(void)state;
	assert_string_equal(closest("helo"), "hello");	/* deletion */
	assert_string_equal(closest("hellp"), "hello"); /* substitution */
	assert_string_equal(closest("hlelo"), "hello"); /* swap */
	assert_string_equal(closest("develp"), "develop");
	assert_string_equal(closest("Develop"), "develop"); /* case */
	assert_string_equal(closest("revew"), "review");
	assert_string_equal(closest("pr-reveiw"), "pr-review");
	assert_string_equal(closest("dev"), "develop"); /* a prefix */
	assert_string_equal(closest("lnt"), "lint");
}

static void test_far_names(void **state)
{
	(void)state;
	assert_null(closest("xyz"));
	assert_null(closest("deploy-everything"));
	assert_null(closest(""));
	assert_null(closest("de")); /* too short for a prefix */
	assert_null(suggest_closest("helo", NULL, 0));
}

static void test_ties_and_limits(void **state)
{
	static const char *const two[] = { "abcd", "abce" };
	char longword[80];

	(void)state;
	assert_string_equal(suggest_closest("abcf", two, 2), "abcd");
	memset(longword, 'a', sizeof(longword) - 1);
	longword[sizeof(longword) - 1] = '\0';
	assert_null(suggest_closest(longword, names, ARRAY_SIZE(names)));
}

/* {word, names ("," between), max, what suggest_nearest gives} */
static const struct {
	const char *word, *names;
	size_t max;
	const char *want;
} nearest_cases[] = {
	{ "rndo", "undo,redo,rewind", 3, "undo,redo" }, /* a tie: both */
	{ "rndo", "undo,redo,rewind", 1, "undo" },	/* max 1: the first */
	{ "rdo", "undo,redo", 3, "redo" },		/* 1 beats 2 */
	{ "chekpoint", "checkpoint,init", 3, "checkpoint" },
	{ "check", "checkpoint,apply", 3, "checkpoint" }, /* a prefix */
	{ "max", "max-file-size,message", 3, "max-file-size" },
	/* the bound: 1 up to 4 bytes, 2 up to 8, 3 beyond, never more */
	{ "abcx", "abcd", 3, "abcd" },
	{ "abxx", "abcd", 3, "" },
	{ "abcdefxx", "abcdefgh", 3, "abcdefgh" },
	{ "abcdexxx", "abcdefgh", 3, "" },
	{ "abcdefxxx", "abcdefghi", 3, "abcdefghi" },
	{ "abcdefghixxx", "abcdefghijkl", 3, "abcdefghijkl" },
	{ "abcdefghijklxxxx", "abcdefghijklmnop", 3, "" },
	/* fewer edits than the name has bytes */
	{ "xy", "C,q", 3, "" },
	{ "x", "C", 3, "" },
	{ "JSON", "json,quiet", 3, "json" }, /* case */
	{ "", "json", 3, "" },
};

static void test_nearest(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(nearest_cases); i++) {
		char list[128], got[128] = "";
		const char *cand[8], *out[8];
		size_t n = 0, k;
		snprintf(list, sizeof(list), "%s", nearest_cases[i].names);
		for (char *t = list, *e; t; t = e) {
			if ((e = strchr(t, ',')))
				*e++ = '\0';
			cand[n++] = t;
		}
		k = suggest_nearest(out, nearest_cases[i].max,
				    nearest_cases[i].word, cand, n);
		for (size_t j = 0; j < k; j++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 "%s%s", j ? "," : "", out[j]);
		if (strcmp(got, nearest_cases[i].want))
			fail_msg("'%s' in {%s}: got '%s', want '%s'",
				 nearest_cases[i].word, nearest_cases[i].names,
				 got, nearest_cases[i].want);
	}
}

static void test_distance(void **state)
{
	static char a[2001], b[2001];

	(void)state;
	assert_int_equal(suggest_distance("", ""), 0);
	assert_int_equal(suggest_distance("abc", ""), 3);
	assert_int_equal(suggest_distance("", "abc"), 3);
	assert_int_equal(suggest_distance("hlelo", "hello"), 1); /* swap */
	assert_int_equal(suggest_distance("Hello", "hello"), 0); /* case */
	assert_int_equal(suggest_distance("kitten", "sitting"), 3);
	assert_int_equal(suggest_distance("/w/prj", "/w/proj"), 1);
	/* long strings: the distance is not capped */
	memset(a, 'a', 2000);
	memset(b, 'a', 2000);
	b[0] = 'b';
	b[1999] = 'b';
	assert_int_equal(suggest_distance(a, b), 2);
	b[1000] = '\0';
	assert_int_equal(suggest_distance(a, b), 1001);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_names),
		cmocka_unit_test(test_far_names),
		cmocka_unit_test(test_ties_and_limits),
		cmocka_unit_test(test_nearest),
		cmocka_unit_test(test_distance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
