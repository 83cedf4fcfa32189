/*
 * test_suggest.c - "did you mean ...?" (util/suggest.h): a typo, a swap,
 * a missing letter and a prefix find their name; a word far from every
 * name finds none; ties go to the first candidate; case is ignored.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_names),
		cmocka_unit_test(test_far_names),
		cmocka_unit_test(test_ties_and_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
