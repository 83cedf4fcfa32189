/*
 * buf.h - the one growable byte buffer.
 *
 * Invariants: after BUF_INIT or buf_init(), `ptr` is never NULL and
 * ptr[len] == '\0'.  A buffer refuses to grow past BUF_MAX.  buf_detach()
 * hands the memory to the caller and leaves the buffer empty.
 */
#ifndef DECREE_BUF_H
#define DECREE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define BUF_MAX ((size_t)1 << 40)

typedef struct {
	char *ptr;
	size_t len;
	size_t cap; /* 0: ptr points to the shared empty string */
} buf;

extern char buf__empty[1];
#define BUF_INIT                 \
	{                        \
		buf__empty, 0, 0 \
	}

void buf_init(buf *b);
void buf_release(buf *b);
void buf_clear(buf *b); /* len = 0, keeps memory */
int buf_grow(buf *b, size_t extra);
int buf_put(buf *b, const void *data, size_t len);
int buf_puts(buf *b, const char *s);
int buf_putc(buf *b, char c);
int buf_printf(buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap);
int buf_put_u8(buf *b, unsigned v);
int buf_put_u16(buf *b, unsigned v); /* little endian */
int buf_put_u32(buf *b, uint32_t v); /* little endian */
int buf_put_u64(buf *b, uint64_t v); /* little endian */
int buf_put_dec(buf *b, uint64_t v); /* decimal digits, as "%llu" */
/* v in `base` (8 or 10) as digits at the end of num[24]; returns how many
 * (they start at num + 24 - n).  Without printf, for hot formatters. */
size_t fmt_uint(char num[24], uint64_t v, unsigned base);
void buf_truncate(buf *b, size_t len);
char *buf_detach(buf *b, size_t *len_out);

static inline uint32_t get_u32le(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get_u64le(const unsigned char *p)
{
	return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32;
}

static inline unsigned get_u16le(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static inline void put_u32le(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void put_u64le(unsigned char *p, uint64_t v)
{
	put_u32le(p, (uint32_t)v);
	put_u32le(p + 4, (uint32_t)(v >> 32));
}

#endif
