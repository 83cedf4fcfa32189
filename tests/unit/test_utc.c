/*
 * test_utc.c - RFC 3339 UTC times (util/utc.h) against the C library's
 * gmtime_r + strftime as the oracle: every day boundary of 1900..2400
 * (leap years, the century rules, 2000), a million pseudo-random seconds
 * across years 1000..9999, negative times (before 1970, and a nanosecond
 * count that rounds down to the second before), and years past 9999.
 * Years below 1000 keep their four digits, as RFC 3339 has them (glibc's
 * %Y drops the zeros).
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <time.h>

#include "util/utc.h"

static void oracle(char out[UTC_TEXT_MAX], int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	assert_non_null(gmtime_r(&tt, &tm));
	strftime(out, UTC_TEXT_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void same(int64_t t)
{
	char want[UTC_TEXT_MAX], got[UTC_TEXT_MAX];

	oracle(want, t);
	utc_format(got, t);
	if (strcmp(want, got))
		fail_msg("%" PRId64 ": got %s, want %s", t, got, want);
}

/* seconds since 1970 of year y's 1 January (y >= 0) */
static int64_t year_start(int64_t y)
{
	int64_t days = 0;

	for (int64_t k = 1970; k < y; k++)
		days += 365 + ((k % 4 == 0 && k % 100) || k % 400 == 0);
	for (int64_t k = y; k < 1970; k++)
		days -= 365 + ((k % 4 == 0 && k % 100) || k % 400 == 0);
	return days * 86400;
}

static void test_day_boundaries(void **state)
{
	int64_t from = year_start(1900), to = year_start(2401);

	(void)state;
	for (int64_t t = from; t < to; t += 86400) {
		same(t);
		same(t - 1);
		same(t + 86399);
	}
}

static void test_random_seconds(void **state)
{
	int64_t lo = year_start(1000), span = year_start(10000) - lo;
	uint64_t x = 0x9e3779b97f4a7c15u;

	(void)state;
	for (int i = 0; i < 1000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		same(lo + (int64_t)(x % (uint64_t)span));
	}
}

static void test_edges(void **state)
{
	char got[UTC_TEXT_MAX], want[UTC_TEXT_MAX];

	(void)state;
	assert_string_equal(utc_format(got, 0), "1970-01-01T00:00:00Z");
	assert_string_equal(utc_format(got, 1764345302),
			    "2025-11-28T15:55:02Z");
	assert_string_equal(utc_format(got, 951782400), "2000-02-29T00:00:00Z");
	assert_string_equal(utc_format(got, -1), "1969-12-31T23:59:59Z");
	/* nanoseconds: down to the second, also before 1970 */
	assert_string_equal(utc_format_ns(got, 1999999999),
			    "1970-01-01T00:00:01Z");
	assert_string_equal(utc_format_ns(got, -1), "1969-12-31T23:59:59Z");
	assert_string_equal(utc_format_ns(got, -1000000000),
			    "1969-12-31T23:59:59Z");
	/* past 9999 and before year 0: the C library's text */
	for (int64_t t = year_start(10000) - 2; t < year_start(10000) + 2; t++)
		same(t);
	assert_string_equal(utc_format(got, year_start(866) + 86400 * 31),
			    "0866-02-01T00:00:00Z");
	assert_string_equal(utc_format(got, year_start(0)),
			    "0000-01-01T00:00:00Z");
	oracle(want, year_start(0) - 1);
	assert_string_equal(utc_format(got, year_start(0) - 1), want);
	/* a time no struct tm holds: empty, not garbage */
	assert_string_equal(utc_format(got, INT64_MAX), "");
	assert_string_equal(utc_format_ns(got, INT64_MIN),
			    utc_format(want, INT64_MIN / 1000000000 - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_day_boundaries),
		cmocka_unit_test(test_random_seconds),
		cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
