/*
 * test_error.c - the thread-local error slot: a message longer than the
 * slot (1024 bytes) keeps its reason.  A long path is shortened in its
 * middle; a message without a long quoted part loses its own middle; the
 * strerror of an OS error survives even a message beyond the scratch
 * buffer.  Messages that fit are kept byte for byte.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/error.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !memcmp(s + n - m, suffix, m);
}

static void test_fits_unchanged(void **state)
{
	char msg[1024];

	(void)state;
	memset(msg, 'x', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	assert_int_equal(decree_error_set(DECREE_EINVALID, "%s", msg),
			 DECREE_EINVALID);
	assert_string_equal(error_last(), msg);
	assert_int_equal(error_last_code(), DECREE_EINVALID);
	decree_error_set(DECREE_ENOTFOUND, "path '%s' is missing", "a/b");
	assert_string_equal(error_last(), "path 'a/b' is missing");
}

static void test_long_path_keeps_reason(void **state)
{
	char path[4824];
	const char *m;

	(void)state;
	for (size_t i = 0; i < sizeof(path) - 1; i++)
		path[i] = (i % 201 == 200) ? '/' : (char)('a' + i % 26);
	path[sizeof(path) - 1] = '\0';
	decree_error_set(DECREE_ENOTFOUND,
			 "path '%s' is neither in the checkpoint nor in the "
			 "working tree",
			 path);
	m = error_last();
	assert_true(strlen(m) < 1024);
	assert_true(strlen(m) > 1000); /* uses the room it has */
	assert_true(ends_with(m, "' is neither in the checkpoint nor in the "
				 "working tree"));
	assert_memory_equal(m, "path 'abcdefgh", 14);
	assert_non_null(strstr(m, "..."));
	/* the path's own tail is there, up to its closing quote */
	assert_non_null(strstr(m, path + sizeof(path) - 1 - 100));
	assert_int_equal(error_last_code(), DECREE_ENOTFOUND);

	/* an OS error: the strerror survives */
	errno = ENAMETOOLONG;
	decree_error_os("cannot open '%s'", path);
	m = error_last();
	assert_true(strlen(m) < 1024);
	assert_true(ends_with(m, ": File name too long"));
	assert_memory_equal(m, "cannot open 'abc", 16);
	assert_int_equal(errno, ENAMETOOLONG); /* errno is preserved */

	/* two paths: the longer one is shortened */
	decree_error_set(DECREE_ECONFLICT, "cannot move '%s' to '%s': busy",
			 "short/one", path);
	m = error_last();
	assert_non_null(strstr(m, "cannot move 'short/one' to 'abc"));
	assert_true(ends_with(m, "': busy"));
}

static void test_no_quotes_loses_middle(void **state)
{
	char word[3000];
	const char *m;

	(void)state;
	memset(word, 'w', sizeof(word) - 1);
	word[sizeof(word) - 1] = '\0';
	decree_error_set(DECREE_ERROR, "start %s end of the reason", word);
	m = error_last();
	assert_true(strlen(m) == 1023);
	assert_memory_equal(m, "start www", 9);
	assert_true(ends_with(m, "www end of the reason"));
	assert_non_null(strstr(m, "w...w"));
}

static void test_beyond_scratch_keeps_os_reason(void **state)
{
	static char huge[40000];
	const char *m;

	(void)state;
	memset(huge, 'h', sizeof(huge) - 1);
	errno = EACCES;
	decree_error_os("cannot read '%s'", huge);
	m = error_last();
	assert_true(strlen(m) < 1024);
	assert_true(ends_with(m, ": Permission denied"));
	assert_memory_equal(m, "cannot read 'hhh", 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits_unchanged),
		cmocka_unit_test(test_long_path_keeps_reason),
		cmocka_unit_test(test_no_quotes_loses_middle),
		cmocka_unit_test(test_beyond_scratch_keeps_os_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
