/*
 * yaml.c - writing YAML scalars (see yaml.h).
 */
#include "util/common.h"
#include "util/yaml.h"

/* U+0085, U+2028, U+2029 and U+FEFF: valid UTF-8 that YAML treats as line
 * breaks or a byte order mark; written as \u escapes.  Returns the
 * escape, or NULL. */
static const char *yaml_special(const unsigned char *p)
{
	if (p[0] == 0xc2 && p[1] == 0x85)
		return "\\u0085";
	if (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xa8)
		return "\\u2028";
	if (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xa9)
		return "\\u2029";
	if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		return "\\ufeff";
	return NULL;
}

static bool plain_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || s[0] == ' ' || s[n - 1] == ' ' ||
	    strchr("-?:,[]{}#&*!|>'\"%@`~", s[0]))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\' ||
		    (c >= 0x80 && yaml_special((const unsigned char *)s + i)))
			return false;
		if (c == ':' && (s[i + 1] == ' ' || !s[i + 1]))
			return false;
		if (c == '#' && i && s[i - 1] == ' ')
			return false;
	}
	return true;
}

int yaml_scalar(buf *out, const char *s)
{
	if (plain_ok(s))
		return buf_puts(out, s);
	buf_putc(out, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			buf_puts(out, "\\\"");
			break;
		case '\\':
			buf_puts(out, "\\\\");
			break;
		case '\n':
			buf_puts(out, "\\n");
			break;
		case '\t':
			buf_puts(out, "\\t");
			break;
		case '\r':
			buf_puts(out, "\\r");
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				buf_printf(out, "\\x%02x", *p);
			} else if (*p >= 0x80 && yaml_special(p)) {
				buf_puts(out, yaml_special(p));
				p += *p == 0xc2 ? 1 : 2;
			} else {
				buf_putc(out, (char)*p);
			}
		}
	}
	return buf_putc(out, '"');
}
