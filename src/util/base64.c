/*
 * base64.c - RFC 4648 base64 encoder and strict decoder.
 */
#include "util/common.h"
#include "util/base64.h"
#include "util/error.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_encode(buf *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	if (buf_grow(out, (len + 2) / 3 * 4) < 0)
		return -1;
	for (i = 0; i + 3 <= len; i += 3) {
		char q[4] = { alphabet[p[i] >> 2],
			      alphabet[(p[i] & 3) << 4 | p[i + 1] >> 4],
			      alphabet[(p[i + 1] & 15) << 2 | p[i + 2] >> 6],
			      alphabet[p[i + 2] & 63] };
		buf_put(out, q, 4);
	}
	if (len - i == 1) {
		char q[4] = { alphabet[p[i] >> 2], alphabet[(p[i] & 3) << 4],
			      '=', '=' };
		buf_put(out, q, 4);
	} else if (len - i == 2) {
		char q[4] = { alphabet[p[i] >> 2],
			      alphabet[(p[i] & 3) << 4 | p[i + 1] >> 4],
			      alphabet[(p[i + 1] & 15) << 2], '=' };
		buf_put(out, q, 4);
	}
	return 0;
}

static int value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(buf *out, const char *s, size_t len)
{
	if (len % 4)
		return decree_error_set(DECREE_EINVALID,
					"base64 length is not a multiple of 4");
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		int pad = 0;
		unsigned char b[3];
		for (int k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = value(s[i + k])) < 0) {
				return decree_error_set(DECREE_EINVALID,
							"invalid base64 data");
			}
		}
		b[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		b[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		b[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
		if (buf_put(out, b, 3 - (size_t)pad) < 0)
			return -1;
	}
	return 0;
}

bool base64_is_char(char c)
{
	return value(c) >= 0;
}
