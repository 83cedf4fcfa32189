/*
 * quote.c - what reaches the terminal from a path, a label, a message or
 * an error never carries a raw control character.
 *
 * A name from the tree or from a user (path, session, label, message)
 * could hold ESC (a terminal escape sequence), a carriage return that
 * overwrites the line, or a newline that splits one plan line into two.
 * Every human output line prints such a name through cli_q(): a string
 * that needs it is C-quoted in double quotes as git quotes paths:
 *   \a \b \t \n \v \f \r  for those controls,  \" and \\  for the quote
 *   and the backslash,  \ooo (octal)  for every other control byte (below
 *   0x20, 0x7f), for the bytes of a C1 control (U+0080..U+009F as UTF-8)
 *   and for every byte that is not part of valid UTF-8.
 * Valid UTF-8 text is printed as it is (git's core.quotePath=false), so
 * "café.txt" stays readable; git's diff headers (unidiff.c) quote those
 * too.  A string without any of these bytes is printed unchanged.
 *
 * Error messages (decree: ... lines) are sentences that already quote
 * their names in '...': cli_sanitize() escapes the same bytes in them
 * without adding quotes.
 *
 * JSON output is not affected: json.c escapes everything itself.
 */
#include "util/common.h"
#include "cli.h"

/* Length of the valid, printable UTF-8 sequence at p (1..4), or 0 when
 * the byte at p must be escaped. */
static size_t printable_at(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned cp;

	if (c < 0x20 || c == 0x7f)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0; /* overlong, surrogate, out of range, C1 control */
	return n;
}

/* Append s with the bytes above escaped; quote_chars: also \" and \\. */
static int escape(buf *out, const char *s, bool quote_chars)
{
	static const char ctl[] = "\a\b\t\n\v\f\r";
	static const char let[] = "abtnvfr";
	const unsigned char *p = (const unsigned char *)s;
	int r = 0;

	while (*p && r == 0) {
		size_t n = printable_at(p);
		const char *e;
		if (n && !(quote_chars && (*p == '"' || *p == '\\'))) {
			r = buf_put(out, (const char *)p, n);
			p += n;
			continue;
		}
		if (*p && (e = strchr(ctl, *p)) != NULL)
			r = buf_printf(out, "\\%c", let[e - ctl]);
		else if (*p == '"' || *p == '\\')
			r = buf_printf(out, "\\%c", *p);
		else
			r = buf_printf(out, "\\%03o", *p);
		p++;
	}
	return r;
}

bool cli_needs_quote(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = printable_at(p);
		if (!n || *p == '"' || *p == '\\')
			return true;
		p += n;
	}
	return false;
}

int cli_quote(buf *out, const char *s)
{
	if (!cli_needs_quote(s))
		return buf_puts(out, s);
	if (buf_putc(out, '"') < 0 || escape(out, s, true) < 0 ||
	    buf_putc(out, '"') < 0)
		return -1;
	return 0;
}

int cli_sanitize(buf *out, const char *s)
{
	return escape(out, s, false);
}

/* A ring of buffers, so that one printf can quote several names. */
#define QUOTE_RING 8
static buf ring[QUOTE_RING];
static unsigned ring_next;

const char *cli_q(const char *s)
{
	buf *b;

	if (!s)
		return "";
	if (!cli_needs_quote(s))
		return s;
	b = &ring[ring_next++ % QUOTE_RING];
	if (!b->ptr)
		buf_init(b);
	buf_clear(b);
	if (cli_quote(b, s) < 0)
		return "\"?\""; /* out of memory: never the raw bytes */
	return b->ptr;
}
