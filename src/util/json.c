/*
 * json.c - JSON string escaping (see json.h).
 */
#include "util/common.h"
#include "util/json.h"
#include "util/base64.h"

static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t need;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 4, cp = c & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return need;
}

int json_strn(buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	if (buf_putc(b, '"') < 0)
		return -1;
	while (i < n) {
		unsigned c = s[i];
		size_t k;
		int r;

		/* a run of plain printable ASCII goes in one piece */
		for (k = i; k < n && s[k] >= 0x20 && s[k] < 0x7f &&
			    s[k] != '"' && s[k] != '\\';
		     k++)
			;
		if (k > i) {
			if (buf_put(b, s + i, k - i) < 0)
				return -1;
			i = k;
			continue;
		}
		if (c == '"' || c == '\\')
			r = buf_printf(b, "\\%c", c);
		else if (c == '\n')
			r = buf_puts(b, "\\n");
		else if (c == '\t')
			r = buf_puts(b, "\\t");
		else if (c == '\r')
			r = buf_puts(b, "\\r");
		else if (c < 0x20 || c == 0x7f)
			r = buf_printf(b, "\\u%04x", c);
		else if ((k = utf8_valid_len(s + i, n - i)) > 0) {
			r = buf_put(b, s + i, k);
			i += k;
			if (r < 0)
				return -1;
			continue;
		} else
			r = buf_puts(b, "\\ufffd");
		if (r < 0)
			return -1;
		i++;
	}
	return buf_putc(b, '"');
}

int json_str(buf *b, const char *s)
{
	return json_strn(b, s, strlen(s));
}

bool json_is_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (!(k = utf8_valid_len(p + i, n - i)))
			return false;
		i += k;
	}
	return true;
}

int json_kv_str(buf *b, const char *key, const char *value, bool comma)
{
	if (buf_printf(b, "%s\"%s\":", comma ? "," : "", key) < 0)
		return -1;
	return value ? json_str(b, value) : buf_puts(b, "null");
}

int json_kv_path(buf *b, const char *key, const char *value, bool comma)
{
	if (!value)
		return json_kv_str(b, key, NULL, comma);
	return json_kv_bytes(b, key, value, strlen(value), comma);
}

int json_kv_bytes(buf *b, const char *key, const char *value, size_t n,
		  bool comma)
{
	if (buf_printf(b, "%s\"%s\":", comma ? "," : "", key) < 0 ||
	    json_strn(b, value, n) < 0)
		return -1;
	if (json_is_utf8(value, n))
		return 0;
	if (buf_printf(b, ",\"%s_base64\":\"", key) < 0 ||
	    base64_encode(b, value, n) < 0)
		return -1;
	return buf_putc(b, '"');
}
