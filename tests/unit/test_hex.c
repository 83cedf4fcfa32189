/*
 * test_hex.c - object ids as text (util/sha256.h): oid_from_hex against a
 * reference parser on every byte value at every position (only 0-9, a-f
 * and A-F pass), short and long strings (never read past the NUL), and
 * the round trip through oid_to_hex; is_hex_prefix's bounds.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/error.h"
#include "util/sha256.h"

static bool is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

static void test_every_byte_everywhere(void **state)
{
	char hex[SHA256_HEXLEN + 1];
	oid id;

	(void)state;
	for (int pos = 0; pos < SHA256_HEXLEN; pos++) {
		for (int c = 1; c < 256; c++) {
			memset(hex, '7', SHA256_HEXLEN);
			hex[SHA256_HEXLEN] = '\0';
			hex[pos] = (char)c;
			int r = oid_from_hex(&id, hex);
			if (is_hex(c)) {
				int v = c <= '9' ? c - '0'
						 : (c | 0x20) - 'a' + 10;
				assert_int_equal(r, 0);
				assert_int_equal(pos % 2 ? id.b[pos / 2] & 15
							 : id.b[pos / 2] >> 4,
						 v);
				assert_int_equal(pos % 2 ? id.b[pos / 2] >> 4
							 : id.b[pos / 2] & 15,
						 7);
			} else {
				assert_int_equal(r, DECREE_EINVALID);
				assert_non_null(strstr(error_last(),
						       "invalid object id"));
				error_clear();
			}
		}
	}
}

static void test_lengths(void **state)
{
	/* each string ends exactly at its NUL: ASan finds any read past */
	char *s;
	oid id;

	(void)state;
	for (size_t n = 0; n <= SHA256_HEXLEN + 2; n++) {
		assert_non_null(s = malloc(n + 1));
		memset(s, 'a', n);
		s[n] = '\0';
		assert_int_equal(oid_from_hex(&id, s),
				 n == SHA256_HEXLEN ? 0 : DECREE_EINVALID);
		error_clear();
		assert_int_equal(is_hex_prefix(s, 4),
				 n >= 4 && n <= SHA256_HEXLEN);
		free(s);
	}
}

static void test_round_trip(void **state)
{
	char hex[SHA256_HEXLEN + 1], upper[SHA256_HEXLEN + 1];
	oid id, back;

	(void)state;
	for (int k = 0; k < 256; k++) {
		for (int i = 0; i < SHA256_LEN; i++)
			id.b[i] = (unsigned char)(k * 31 + i * 7);
		oid_to_hex(hex, &id);
		assert_int_equal(oid_from_hex(&back, hex), 0);
		assert_memory_equal(id.b, back.b, SHA256_LEN);
		for (int i = 0; i <= SHA256_HEXLEN; i++)
			upper[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
		assert_int_equal(oid_from_hex(&back, upper), 0);
		assert_memory_equal(id.b, back.b, SHA256_LEN);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_byte_everywhere),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
