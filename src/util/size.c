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
