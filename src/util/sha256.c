/*
 * sha256.c - SHA-256 through OpenSSL's libcrypto.
 *
 * The low-level SHA256_* functions are used instead of EVP: they run the
 * same hardware-accelerated code (SHA-NI, AVX2), but need no provider
 * initialisation, which costs ~0.5 ms at the start of every process and
 * matters for commands that must finish in a few milliseconds.  They are
 * deprecated in OpenSSL 3 only in favour of EVP, not removed.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "util/common.h"
#include "util/sha256.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#include <openssl/sha.h>

struct sha256_ctx {
	SHA256_CTX c;
};

sha256_ctx *sha256_new(void)
{
	sha256_ctx *c = decree_malloc(sizeof(*c));
	if (!c)
		return NULL;
	SHA256_Init(&c->c);
	return c;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
	SHA256_Update(&c->c, data, len);
}

void sha256_final(sha256_ctx *c, oid *out)
{
	SHA256_Final(out->b, &c->c);
	SHA256_Init(&c->c);
}

void sha256_free(sha256_ctx *c)
{
	decree_free(c);
}

void sha256_buf(oid *out, const void *data, size_t len)
{
	SHA256_CTX c; /* not SHA256(): in OpenSSL 3 that goes through EVP */
	SHA256_Init(&c);
	SHA256_Update(&c, data, len);
	SHA256_Final(out->b, &c);
}

int sha256_fd(oid *out, uint64_t *size_out, int fd, const char *name)
{
	const size_t CHUNK = 1 << 17;
	unsigned char *chunk = decree_malloc(CHUNK);
	sha256_ctx *c = sha256_new();
	uint64_t total = 0;
	int r = 0;

	if (!chunk || !c) {
		r = -1;
		goto done;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = decree_error_os("cannot read '%s'", name);
			goto done;
		}
		if (n == 0)
			break;
		sha256_update(c, chunk, (size_t)n);
		total += (uint64_t)n;
	}
	sha256_final(c, out);
	if (size_out)
		*size_out = total;
done:
	decree_free(chunk);
	sha256_free(c);
	return r;
}

void oid_to_hex(char out[SHA256_HEXLEN + 1], const oid *id)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = hex[id->b[i] >> 4];
		out[2 * i + 1] = hex[id->b[i] & 15];
	}
	out[SHA256_HEXLEN] = '\0';
}

/* The value of each hex digit, 0..15; 16 for every other byte.  (Ids
 * are parsed by the thousand when records are listed: a lookup, not a
 * chain of comparisons.) */
/* clang-format off */
static const unsigned char hex_digit[256] = {
#define X16 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16
	X16, X16, X16,						/* 0x00-0x2f */
	 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 16, 16, 16, 16, 16, 16, /* '0'- */
	16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16, /* '@'- */
	X16,							/* 0x50-0x5f */
	16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16, /* '`'- */
	X16, X16, X16, X16, X16, X16, X16, X16, X16,		/* 0x70-0xff */
#undef X16
};
/* clang-format on */

static int hexval(char c)
{
	unsigned v = hex_digit[(unsigned char)c];
	return v < 16 ? (int)v : -1;
}

int oid_from_hex(oid *out, const char *hex)
{
	for (int i = 0; i < SHA256_LEN; i++) {
		unsigned hi = hex_digit[(unsigned char)hex[2 * i]];
		unsigned lo = hi < 16 ? hex_digit[(unsigned char)hex[2 * i + 1]]
				      : 16; /* (not past a NUL) */
		if ((hi | lo) & 16)
			return decree_error_set(DECREE_EINVALID,
						"invalid object id '%.64s'",
						hex);
		out->b[i] = (unsigned char)(hi << 4 | lo);
	}
	if (hex[SHA256_HEXLEN] != '\0')
		return decree_error_set(DECREE_EINVALID,
					"invalid object id '%s'", hex);
	return 0;
}

bool oid_is_zero(const oid *id)
{
	for (int i = 0; i < SHA256_LEN; i++)
		if (id->b[i])
			return false;
	return true;
}

bool is_hex_prefix(const char *s, size_t min_len)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (hexval(s[n]) < 0)
			return false;
	return n >= min_len && n <= SHA256_HEXLEN;
}
