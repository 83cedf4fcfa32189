/*
 * utc.c - RFC 3339 UTC times (utc.h).
 */
#include "util/common.h"
#include "util/utc.h"

#include <time.h>

/* Two digits of v (0..99) at p. */
static char *put2(char *p, int v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
	return p + 2;
}

/*
 * Days since 1970-01-01 to a proleptic Gregorian date: counted in eras of
 * 400 years (146,097 days) from 0000-03-01, so that the leap day ends a
 * year (the civil-from-days method).
 */
static void civil(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097; /* 0..146096 */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) /
		      365;				       /* 0..399 */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* 0..365 */
	int64_t mp = (5 * doy + 2) / 153; /* 0..11, from March */

	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

const char *utc_format(char out[UTC_TEXT_MAX], int64_t t)
{
	int64_t days = t / 86400, secs = t % 86400, y;
	int m, d;
	char *p = out;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	civil(days, &y, &m, &d);
	if (y < 0 || y > 9999) {
		time_t tt = (time_t)t;
		struct tm tm;

		out[0] = '\0';
		if ((int64_t)tt == t && gmtime_r(&tt, &tm))
			strftime(out, UTC_TEXT_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm);
		return out;
	}
	p = put2(p, (int)(y / 100));
	p = put2(p, (int)(y % 100));
	*p++ = '-';
	p = put2(p, m);
	*p++ = '-';
	p = put2(p, d);
	*p++ = 'T';
	p = put2(p, (int)(secs / 3600));
	*p++ = ':';
	p = put2(p, (int)(secs / 60 % 60));
	*p++ = ':';
	p = put2(p, (int)(secs % 60));
	*p++ = 'Z';
	*p = '\0';
	return out;
}

const char *utc_format_ns(char out[UTC_TEXT_MAX], int64_t ns)
{
	/* (toward minus infinity, as the second a time falls in) */
	int64_t s = ns / 1000000000;

	if (ns % 1000000000 < 0)
		s--;
	return utc_format(out, s);
}
