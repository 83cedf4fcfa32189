/*
 * buf.c - growable NUL-terminated byte buffer (see buf.h for invariants).
 */
#include "util/common.h"
#include "util/buf.h"
#include "util/alloc.h"
#include "util/error.h"

char buf__empty[1];

void buf_init(buf *b)
{
	b->ptr = buf__empty;
	b->len = 0;
	b->cap = 0;
}

void buf_release(buf *b)
{
	if (b->cap)
		decree_free(b->ptr);
	buf_init(b);
}

void buf_clear(buf *b)
{
	b->len = 0;
	if (b->cap)
		b->ptr[0] = '\0';
}

int buf_grow(buf *b, size_t extra)
{
	size_t want, ncap;
	char *p;

	if (decree_add_overflow(&want, b->len, extra) < 0 ||
	    decree_add_overflow(&want, want, 1) < 0)
		return -1;
	if (want > BUF_MAX)
		return decree_error_set(DECREE_ERROR, "buffer too large");
	if (want <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < want)
		ncap = ncap / 2 * 3 + 64;
	p = decree_realloc(b->cap ? b->ptr : NULL, ncap);
	if (!p)
		return -1;
	if (!b->cap)
		p[0] = '\0';
	b->ptr = p;
	b->cap = ncap;
	return 0;
}

int buf_put(buf *b, const void *data, size_t len)
{
	if (buf_grow(b, len) < 0)
		return -1;
	if (len)
		memmove(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int buf_puts(buf *b, const char *s)
{
	return buf_put(b, s, strlen(s));
}

int buf_putc(buf *b, char c)
{
	return buf_put(b, &c, 1);
}

size_t fmt_uint(char num[24], uint64_t v, unsigned base)
{
	size_t n = 0;

	do {
		num[23 - n++] = (char)('0' + v % base);
		v /= base;
	} while (v);
	return n;
}

int buf_put_dec(buf *b, uint64_t v)
{
	char num[24];
	size_t n = fmt_uint(num, v, 10);

	return buf_put(b, num + sizeof(num) - n, n);
}

int buf_vprintf(buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return decree_error_set(DECREE_ERROR, "bad format");
	if (buf_grow(b, (size_t)n) < 0)
		return -1;
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_printf(buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

int buf_put_u8(buf *b, unsigned v)
{
	unsigned char c = (unsigned char)v;
	return buf_put(b, &c, 1);
}

int buf_put_u16(buf *b, unsigned v)
{
	unsigned char p[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
	return buf_put(b, p, 2);
}

int buf_put_u32(buf *b, uint32_t v)
{
	unsigned char p[4];
	put_u32le(p, v);
	return buf_put(b, p, 4);
}

int buf_put_u64(buf *b, uint64_t v)
{
	unsigned char p[8];
	put_u64le(p, v);
	return buf_put(b, p, 8);
}

void buf_truncate(buf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->ptr[len] = '\0';
	}
}

char *buf_detach(buf *b, size_t *len_out)
{
	char *p;

	if (len_out)
		*len_out = b->len;
	if (!b->cap) {
		p = decree_malloc(1);
		if (p)
			p[0] = '\0';
	} else {
		p = b->ptr;
	}
	buf_init(b);
	return p;
}
