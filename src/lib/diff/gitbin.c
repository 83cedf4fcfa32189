/*
 * gitbin.c - base85 lines, zlib inflate, git's delta format and git blob
 * ids for git binary patches (see gitbin.h).
 *
 * Decisions worth knowing:
 *  - Everything is bounded before it is allocated: a block may announce
 *    at most GITBIN_MAX_DELTA bytes, a delta's source and target at most
 *    GITBIN_MAX_SIZE - 1, and inflating grows its buffer with the bytes
 *    that really come out, so a tiny stream announcing 64 MiB costs
 *    nothing until it delivers.
 *  - Strict where git's writer is exact: a base85 line holds exactly the
 *    characters its length needs, a group may not exceed 2^32 - 1, the
 *    zlib stream must end exactly at the end of the data, and a delta's
 *    size varints are at most 5 bytes (git writes the shortest form).
 *  - A delta is walked by one function for both the check and the apply,
 *    so what the parser accepts is exactly what applies (given a source
 *    of the announced size).
 *  - zlib allocates through decree_malloc, so allocation-failure tests
 *    reach it too.
 */
/* SHA1_* below: the EVP route costs ~1 ms of provider start-up per
 * process and a context allocation per blob (see util/sha256.c). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "util/common.h"
#include "diff/gitbin.h"
#include "util/alloc.h"
#include "util/error.h"

#include <limits.h>
#include <openssl/sha.h>
#include <zlib.h>

/* ---- base85 ------------------------------------------------------------ */

static const char b85_chars[] = "0123456789"
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				"abcdefghijklmnopqrstuvwxyz"
				"!#$%&()*+-;<=>?@^_`{|}~";

static int b85_value(unsigned char c)
{
	const char *p;

	if (!c)
		return -1;
	p = strchr(b85_chars, c);
	return p ? (int)(p - b85_chars) : -1;
}

int gitbin_base85_line(buf *out, const char *line, size_t len)
{
	size_t n, groups, g, i;
	unsigned char c;

	if (!len)
		return decree_error_set(DECREE_EINVALID, "empty base85 line");
	c = (unsigned char)line[0];
	if (c >= 'A' && c <= 'Z')
		n = (size_t)(c - 'A') + 1;
	else if (c >= 'a' && c <= 'z')
		n = (size_t)(c - 'a') + 27;
	else
		return decree_error_set(DECREE_EINVALID,
					"invalid base85 line length character "
					"'%c'",
					c >= 0x20 && c < 0x7f ? c : '?');
	groups = (n + 3) / 4;
	if (len - 1 != groups * 5)
		return decree_error_set(DECREE_EINVALID,
					"base85 line for %zu bytes has %zu "
					"characters, not %zu",
					n, len - 1, groups * 5);
	if (buf_grow(out, groups * 4) < 0)
		return DECREE_ERROR;
	for (g = 0; g < groups; g++) {
		const char *s = line + 1 + g * 5;
		uint64_t acc = 0;
		unsigned char word[4];
		size_t take = n - g * 4 < 4 ? n - g * 4 : 4;

		for (i = 0; i < 5; i++) {
			int v = b85_value((unsigned char)s[i]);
			if (v < 0)
				return decree_error_set(DECREE_EINVALID,
							"invalid base85 "
							"character");
			acc = acc * 85 + (uint64_t)v;
		}
		if (acc > 0xffffffffu)
			return decree_error_set(DECREE_EINVALID,
						"base85 group out of range");
		word[0] = (unsigned char)(acc >> 24);
		word[1] = (unsigned char)(acc >> 16);
		word[2] = (unsigned char)(acc >> 8);
		word[3] = (unsigned char)acc;
		if (buf_put(out, word, take) < 0)
			return DECREE_ERROR;
	}
	return 0;
}

/* ---- zlib ------------------------------------------------------------- */

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	(void)opaque;
	return decree_calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
	(void)opaque;
	decree_free(p);
}

#define INFLATE_STEP ((size_t)64 << 10)

int gitbin_inflate(buf *out, const char *z, size_t zlen, size_t want)
{
	z_stream s;
	size_t limit;
	int zr, r = 0;

	buf_clear(out);
	if (want > GITBIN_MAX_DELTA)
		return decree_error_set(DECREE_EINVALID,
					"%zu bytes is too large", want);
	if (zlen > UINT_MAX)
		return decree_error_set(DECREE_EINVALID,
					"compressed data too large");
	memset(&s, 0, sizeof(s));
	s.zalloc = z_alloc;
	s.zfree = z_free;
	s.next_in = (Bytef *)(uintptr_t)z;
	s.avail_in = (uInt)zlen;
	zr = inflateInit(&s);
	if (zr != Z_OK)
		return zr == Z_MEM_ERROR
			       ? DECREE_ERROR
			       : decree_error_set(DECREE_ERROR,
						  "cannot start zlib");
	limit = want + 1; /* one byte more shows a stream that is too long */
	for (;;) {
		size_t room = limit - out->len, step;

		if (!room) {
			r = decree_error_set(DECREE_EINVALID,
					     "inflates to more than the %zu "
					     "bytes announced",
					     want);
			break;
		}
		step = room < INFLATE_STEP ? room : INFLATE_STEP;
		if ((r = buf_grow(out, step)) < 0)
			break;
		s.next_out = (Bytef *)out->ptr + out->len;
		s.avail_out = (uInt)step;
		zr = inflate(&s, Z_NO_FLUSH);
		out->len += step - s.avail_out;
		out->ptr[out->len] = '\0';
		if (zr == Z_STREAM_END)
			break;
		if (zr == Z_OK)
			continue;
		if (zr == Z_MEM_ERROR)
			r = DECREE_ERROR;
		else if (zr == Z_BUF_ERROR && !s.avail_in)
			r = decree_error_set(DECREE_EINVALID,
					     "zlib data ends early");
		else
			r = decree_error_set(DECREE_EINVALID,
					     "damaged zlib data (%s)",
					     s.msg ? s.msg : "no detail");
		break;
	}
	inflateEnd(&s);
	if (r == 0 && s.avail_in)
		r = decree_error_set(DECREE_EINVALID,
				     "%u bytes after the end of the zlib data",
				     s.avail_in);
	if (r == 0 && out->len != want)
		r = decree_error_set(DECREE_EINVALID,
				     "inflates to %zu bytes, %zu announced",
				     out->len, want);
	if (r < 0)
		buf_clear(out);
	return r;
}

/* ---- deltas ------------------------------------------------------------ */

/* A size varint: 7 bits per byte, least significant first, the high bit
 * set on every byte but the last. */
static bool delta_varint(const unsigned char **p, const unsigned char *end,
			 size_t *out)
{
	size_t v = 0;
	unsigned shift = 0;
	unsigned char c;

	do {
		if (*p >= end || shift > 28)
			return false;
		c = *(*p)++;
		v |= (size_t)(c & 0x7f) << shift;
		shift += 7;
	} while (c & 0x80);
	*out = v;
	return true;
}

static int delta_header(const unsigned char **p, const unsigned char *end,
			size_t *src_size, size_t *dst_size)
{
	if (!delta_varint(p, end, src_size) || !delta_varint(p, end, dst_size))
		return decree_error_set(DECREE_EINVALID,
					"delta header is truncated or "
					"malformed");
	if (*src_size >= GITBIN_MAX_SIZE || *dst_size >= GITBIN_MAX_SIZE)
		return decree_error_set(DECREE_EINVALID,
					"delta sizes %zu and %zu exceed the "
					"limit",
					*src_size, *dst_size);
	return 0;
}

/*
 * Walk the ops of a delta.  With out == NULL only the structure is
 * checked; otherwise src (of the announced size) is read and the target
 * appended to out.
 */
static int delta_walk(buf *out, const char *src, const char *delta, size_t len,
		      bool check_src, size_t src_len)
{
	const unsigned char *p = (const unsigned char *)delta, *end = p + len;
	size_t src_size, dst_size, made = 0;
	int r, i;

	if ((r = delta_header(&p, end, &src_size, &dst_size)) < 0)
		return r;
	if (check_src && src_len != src_size)
		return decree_error_set(DECREE_ECONFLICT,
					"the file has %zu bytes, the delta "
					"was made for %zu",
					src_len, src_size);
	if (out && buf_grow(out, dst_size) < 0)
		return DECREE_ERROR;
	while (p < end) {
		unsigned c = *p++;

		if (c & 0x80) {
			size_t off = 0, size = 0;

			for (i = 0; i < 4; i++) {
				if (!(c & (1u << i)))
					continue;
				if (p >= end)
					goto truncated;
				off |= (size_t)*p++ << (8 * i);
			}
			for (i = 0; i < 3; i++) {
				if (!(c & (0x10u << i)))
					continue;
				if (p >= end)
					goto truncated;
				size |= (size_t)*p++ << (8 * i);
			}
			if (!size)
				size = 0x10000;
			if (off > src_size || size > src_size - off)
				return decree_error_set(
					DECREE_EINVALID,
					"delta copies bytes %zu..%zu of a "
					"%zu-byte source",
					off, off + size, src_size);
			if (size > dst_size - made)
				goto too_long;
			if (out && buf_put(out, src + off, size) < 0)
				return DECREE_ERROR;
			made += size;
		} else if (c) {
			if (c > (size_t)(end - p))
				goto truncated;
			if (c > dst_size - made)
				goto too_long;
			if (out && buf_put(out, p, c) < 0)
				return DECREE_ERROR;
			p += c;
			made += c;
		} else {
			return decree_error_set(DECREE_EINVALID,
						"delta uses the reserved "
						"opcode 0");
		}
	}
	if (made != dst_size)
		return decree_error_set(DECREE_EINVALID,
					"delta gives %zu bytes, %zu announced",
					made, dst_size);
	return 0;
truncated:
	return decree_error_set(DECREE_EINVALID, "delta is truncated");
too_long:
	return decree_error_set(DECREE_EINVALID,
				"delta gives more than the %zu bytes "
				"announced",
				dst_size);
}

int gitbin_delta_sizes(size_t *src_size, size_t *dst_size, const char *delta,
		       size_t len)
{
	const unsigned char *p = (const unsigned char *)delta;

	DECREE_ASSERT_ARG(src_size && dst_size);
	DECREE_ASSERT_ARG(delta || !len);
	return delta_header(&p, p + len, src_size, dst_size);
}

int gitbin_delta_check(const char *delta, size_t len)
{
	DECREE_ASSERT_ARG(delta || !len);
	return delta_walk(NULL, NULL, delta, len, false, 0);
}

int gitbin_delta_apply(buf *out, const char *src, size_t src_len,
		       const char *delta, size_t len)
{
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(src || !src_len);
	DECREE_ASSERT_ARG(delta || !len);
	buf_clear(out);
	if ((r = delta_walk(out, src ? src : "", delta, len, true, src_len)) <
	    0)
		buf_clear(out);
	return r;
}

/* ---- blob ids ----------------------------------------------------------- */

int gitbin_blob_id(char hex[GITBIN_ID_HEXLEN + 1], const char *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[SHA_DIGEST_LENGTH];
	char hdr[32];
	SHA_CTX c;
	int n, i;

	n = snprintf(hdr, sizeof(hdr), "blob %zu", len);
	if (!SHA1_Init(&c) || !SHA1_Update(&c, hdr, (size_t)n + 1) ||
	    (len && !SHA1_Update(&c, data, len)) || !SHA1_Final(md, &c))
		return decree_error_set(DECREE_ERROR, "cannot compute sha1");
	for (i = 0; i < SHA_DIGEST_LENGTH; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[GITBIN_ID_HEXLEN] = '\0';
	return 0;
}
