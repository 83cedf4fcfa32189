/*
 * size.c - parsing sizes with K/M/G suffixes (size.h).
 */
#include "util/common.h"
#include "util/size.h"

int size_parse(uint64_t *out, const char *s)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9') /* strtoull takes " -5" too */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *size_format(char *out, uint64_t n)
{
	static const char *const units[] = { "KiB", "MiB", "GiB",
					     "TiB", "PiB", "EiB" };
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(out, SIZE_TEXT_MAX, "%" PRIu64 " byte%s", n,
			 n == 1 ? "" : "s");
		return out;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (v < 10 && (uint64_t)(v * 10 + 0.5) % 10)
		snprintf(out, SIZE_TEXT_MAX, "%.1f %s", v, units[u]);
	else
		snprintf(out, SIZE_TEXT_MAX, "%.0f %s", v, units[u]);
	return out;
}
