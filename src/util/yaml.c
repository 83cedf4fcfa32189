/*
 * yaml.c - writing YAML scalars (see yaml.h).
 */
#include "util/common.h"
#include "util/yaml.h"

/*
 * Characters YAML does not take as they are, though they are valid UTF-8:
 * the C1 controls U+0080..U+009F (libyaml refuses the file: "control
 * characters are not allowed"), U+0085, U+2028 and U+2029 (line breaks),
 * U+FEFF (a byte order mark), U+FFFE and U+FFFF (not characters).  Each
 * is written as a \u escape.  Returns the code point, or 0 (p points
 * into a NUL-terminated string, so reading on after a lead byte stops at
 * the terminator).
 */
static unsigned yaml_special(const unsigned char *p, size_t *len)
{
	unsigned cp;

	if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
		*len = 2;
		return p[1];
	}
	if ((p[0] != 0xe2 && p[0] != 0xef) || (p[1] & 0xc0) != 0x80 ||
	    (p[2] & 0xc0) != 0x80)
		return 0;
	*len = 3;
	cp = (p[0] & 0x0fu) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
	switch (cp) {
	case 0x2028: /* line separator */
	case 0x2029: /* paragraph separator */
	case 0xfeff: /* byte order mark */
	case 0xfffe:
	case 0xffff:
		return cp;
	}
	return 0;
}

static bool plain_ok(const char *s)
{
	size_t n = strlen(s), len;

	if (!n || s[0] == ' ' || s[n - 1] == ' ' ||
	    strchr("-?:,[]{}#&*!|>'\"%@`~", s[0]))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\' ||
		    (c >= 0x80 &&
		     yaml_special((const unsigned char *)s + i, &len)))
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
	unsigned cp;
	size_t len;

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
			} else if (*p >= 0x80 && (cp = yaml_special(p, &len))) {
				buf_printf(out, "\\u%04x", cp);
				p += len - 1;
			} else {
				buf_putc(out, (char)*p);
			}
		}
	}
	return buf_putc(out, '"');
}
