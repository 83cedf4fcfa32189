/*
 * sha256.h - SHA-256 through OpenSSL's libcrypto (hardware accelerated),
 * plus hex conversion.  Object names in decree are raw 32-byte digests
 * internally and 64 lowercase hex digits on the outside.
 */
#ifndef DECREE_SHA256_H
#define DECREE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN    32
#define SHA256_HEXLEN 64

typedef struct {
	unsigned char b[SHA256_LEN];
} oid;

typedef struct sha256_ctx sha256_ctx;

sha256_ctx *sha256_new(void);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, oid *out); /* also resets for reuse */
void sha256_free(sha256_ctx *c);

void sha256_buf(oid *out, const void *data, size_t len);

/* Hash the rest of an open fd; *size_out gets the byte count. */
int sha256_fd(oid *out, uint64_t *size_out, int fd, const char *name);

void oid_to_hex(char out[SHA256_HEXLEN + 1], const oid *id);
int oid_from_hex(oid *out, const char *hex); /* exactly 64 hex digits */
bool oid_is_zero(const oid *id);
static inline int oid_cmp(const oid *a, const oid *b)
{
	extern int memcmp(const void *, const void *, size_t);
	return memcmp(a->b, b->b, SHA256_LEN);
}
bool is_hex_prefix(const char *s, size_t min_len);

#endif
