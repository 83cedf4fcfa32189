/*
 * test_gitbin.c - git binary patches: the pieces (base85 lines, inflate,
 * git's delta format, blob ids; diff/gitbin.h) and what the patch parser
 * and applier make of whole records (diff/patch.h).
 *
 *  - The encoders here (base85, deltas) are written from the format
 *    description, independently of the decoder, and zlib's compress()
 *    makes the streams; the blob ids are checked against ids that
 *    `git hash-object` printed once, by hand.
 *  - Property: seeded random deltas (copies of every encodable shape,
 *    the 0x10000 default size included, and inserts) give their target.
 *  - Records: creations, deletions, modifications by delta and literal,
 *    renames, mode changes, reverse application, conflicts (pre-image,
 *    result, source size), and every refusal with its message.
 *  - Allocation failures in parse and apply are clean.
 * `tests/cli/apply_gitbinary.sh` checks the same against real
 * `git diff --binary` output.  DECREE_TEST_SEED=<n> replays a run.
 */
#include "util/common.h"
#include "diff/gitbin.h"
#include "diff/patch.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <setjmp.h>
#include <zlib.h>
#include <cmocka.h>

#include "testutil.h"

static uint64_t rng_state;

static size_t rndn(size_t n)
{
	return n ? (size_t)(testutil_rnd(&rng_state) % n) : 0;
}

static void rnd_bytes(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)rndn(256);
}

/* ---- encoders, from the format description ------------------------------ */

static const char b85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "abcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/* One base85 line (with its newline) for 1..52 bytes. */
static void b85_line(buf *out, const unsigned char *p, size_t n)
{
	assert_true(n >= 1 && n <= 52);
	buf_putc(out, (char)(n <= 26 ? 'A' + n - 1 : 'a' + n - 27));
	for (size_t g = 0; g < n; g += 4) {
		uint32_t v = 0;
		char c[5];
		for (size_t i = 0; i < 4; i++)
			v = v << 8 | (g + i < n ? p[g + i] : 0);
		for (int i = 4; i >= 0; i--) {
			c[i] = b85[v % 85];
			v /= 85;
		}
		buf_put(out, c, 5);
	}
	buf_putc(out, '\n');
}

/* "literal N" or "delta N", the base85 lines of the deflated data, and
 * the empty line. */
static void put_block(buf *out, bool delta, const char *data, size_t len)
{
	uLongf zlen = compressBound((uLong)len);
	unsigned char *z = malloc(zlen);

	assert_non_null(z);
	assert_int_equal(compress(z, &zlen, (const Bytef *)data, (uLong)len),
			 Z_OK);
	buf_printf(out, "%s %zu\n", delta ? "delta" : "literal", len);
	for (size_t i = 0; i < zlen; i += 52)
		b85_line(out, z + i, zlen - i < 52 ? zlen - i : 52);
	buf_putc(out, '\n');
	free(z);
}

static void put_varint(buf *out, size_t v)
{
	do {
		unsigned char c = v & 0x7f;
		v >>= 7;
		buf_putc(out, (char)(v ? c | 0x80 : c));
	} while (v);
}

/* A copy op; size 0x10000 is written as no size bytes at all. */
static void put_copy(buf *out, size_t off, size_t size)
{
	unsigned char cmd = 0x80, args[7];
	size_t n = 0;

	for (int i = 0; i < 4; i++)
		if ((off >> (8 * i)) & 0xff) {
			cmd |= (unsigned char)(1u << i);
			args[n++] = (unsigned char)(off >> (8 * i));
		}
	if (size != 0x10000)
		for (int i = 0; i < 3; i++)
			if ((size >> (8 * i)) & 0xff) {
				cmd |= (unsigned char)(0x10u << i);
				args[n++] = (unsigned char)(size >> (8 * i));
			}
	buf_putc(out, (char)cmd);
	buf_put(out, args, n);
}

static void put_insert(buf *out, const char *p, size_t n)
{
	while (n) {
		size_t k = n > 127 ? 127 : n;
		buf_putc(out, (char)k);
		buf_put(out, p, k);
		p += k;
		n -= k;
	}
}

static void blob_hex(char hex[41], const char *p, size_t n)
{
	assert_int_equal(gitbin_blob_id(hex, p, n), 0);
}

/* ---- base85 -------------------------------------------------------------- */

static void test_base85(void **state)
{
	static const struct {
		const char *line;
		const char *why; /* NULL: decodes */
	} bad[] = {
		{ "", "empty base85 line" },
		{ "0abcde", "invalid base85 line length character '0'" },
		{ "Babcd", "base85 line for 2 bytes has 4 characters, not 5" },
		{ "Babcdef", "has 6 characters" },
		{ "Bab\"de", "invalid base85 character" },
		{ "Bab de", "invalid base85 character" },
		{ "B~~~~~", "base85 group out of range" },
		{ "B|NsC0", NULL }, /* 2^32 - 1: the largest group */
		{ "B|NsC1", "base85 group out of range" },
	};
	buf out = BUF_INIT, line = BUF_INIT;
	unsigned char data[52];

	UNUSED(state);
	/* git's zlib stream of nothing, as `git diff --binary` writes it */
	assert_int_equal(gitbin_base85_line(&out, "HcmV?d00001", 11), 0);
	assert_int_equal(out.len, 8);
	assert_memory_equal(out.ptr, "\x78\x01\x03\x00\x00\x00\x00\x01", 8);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r;

		buf_clear(&out);
		r = gitbin_base85_line(&out, bad[i].line, strlen(bad[i].line));
		if (!bad[i].why) {
			assert_int_equal(r, 0);
			continue;
		}
		assert_int_equal(r, DECREE_EINVALID);
		if (!strstr(error_last(), bad[i].why))
			fail_msg("'%s': got '%s', want '%s'", bad[i].line,
				 error_last(), bad[i].why);
		error_clear();
	}
	buf_clear(&out);
	assert_int_equal(gitbin_base85_line(&out, "B|NsC0", 6), 0);
	assert_memory_equal(out.ptr, "\xff\xff", 2);

	rng_state = testutil_seed("test_gitbin");
	for (size_t n = 1; n <= 52; n++) {
		for (int k = 0; k < 20; k++) {
			rnd_bytes((char *)data, n);
			buf_clear(&line);
			buf_clear(&out);
			b85_line(&line, data, n);
			assert_int_equal(gitbin_base85_line(&out, line.ptr,
							    line.len - 1),
					 0);
			assert_int_equal(out.len, n);
			assert_memory_equal(out.ptr, data, n);
		}
	}
	buf_release(&out);
	buf_release(&line);
}

/* ---- inflate ------------------------------------------------------------- */

static void test_inflate(void **state)
{
	char data[5000];
	unsigned char z[6000];
	uLongf zlen = sizeof(z);
	buf out = BUF_INIT;
	char *zeros;
	unsigned char *bomb;
	uLongf blen;

	UNUSED(state);
	rng_state = testutil_seed("test_gitbin") + 1;
	rnd_bytes(data, 2500);
	memset(data + 2500, 'x', 2500);
	assert_int_equal(compress(z, &zlen, (Bytef *)data, sizeof(data)), Z_OK);

	assert_int_equal(gitbin_inflate(&out, (char *)z, zlen, sizeof(data)),
			 0);
	assert_int_equal(out.len, sizeof(data));
	assert_memory_equal(out.ptr, data, sizeof(data));

#define INFLATE_FAILS(zp, zn, want, msg)                                      \
	do {                                                                  \
		assert_int_equal(gitbin_inflate(&out, (char *)(zp), (zn),     \
						(want)),                      \
				 DECREE_EINVALID);                            \
		if (!strstr(error_last(), (msg)))                             \
			fail_msg("got '%s', want '%s'", error_last(), (msg)); \
		assert_int_equal(out.len, 0);                                 \
		error_clear();                                                \
	} while (0)

	INFLATE_FAILS(z, zlen, sizeof(data) - 1,
		      "inflates to 5000 bytes, 4999 announced");
	INFLATE_FAILS(z, zlen, 100, "inflates to more than the 100 bytes");
	INFLATE_FAILS(z, zlen, sizeof(data) + 1,
		      "inflates to 5000 bytes, 5001 announced");
	INFLATE_FAILS(z, zlen - 10, sizeof(data), "zlib data ends early");
	INFLATE_FAILS(z, 0, 0, "zlib data ends early");
	z[zlen] = 0;
	INFLATE_FAILS(z, zlen + 1, sizeof(data),
		      "1 bytes after the end of the zlib data");
	INFLATE_FAILS(z, zlen, GITBIN_MAX_DELTA + 1, "too large");
	/* a byte changed mid-stream: damaged, or (random data decoding on
	 * differently) more bytes than announced; refused either way */
	z[zlen / 2] ^= 0x55;
	assert_int_equal(gitbin_inflate(&out, (char *)z, zlen, sizeof(data)),
			 DECREE_EINVALID);
	if (!strstr(error_last(), "damaged zlib data") &&
	    !strstr(error_last(), "inflates to more than the 5000 bytes"))
		fail_msg("got '%s', want 'damaged zlib data' or 'inflates to "
			 "more than the 5000 bytes'",
			 error_last());
	assert_int_equal(out.len, 0);
	error_clear();
	z[zlen / 2] ^= 0x55;
	z[zlen - 1] ^= 1; /* the adler32 check */
	INFLATE_FAILS(z, zlen, sizeof(data), "damaged zlib data");
	z[0] = 0x12; /* not a zlib header */
	INFLATE_FAILS(z, zlen, sizeof(data), "damaged zlib data");

	/* 32 MiB of zeros announced as 100 bytes: refused after 101 */
	zeros = calloc(1, 32u << 20);
	blen = compressBound(32u << 20);
	bomb = malloc(blen);
	assert_true(zeros && bomb);
	assert_int_equal(compress(bomb, &blen, (Bytef *)zeros, 32u << 20),
			 Z_OK);
	INFLATE_FAILS(bomb, blen, 100, "more than the 100 bytes");
	assert_true(out.cap < 1u << 20);
	free(zeros);
	free(bomb);
	buf_release(&out);
#undef INFLATE_FAILS
}

/* ---- deltas -------------------------------------------------------------- */

static void test_delta_ops(void **state)
{
	const char *src = "0123456789";
	buf d = BUF_INIT, out = BUF_INIT;
	size_t s, t;
	char *big;

	UNUSED(state);
	/* insert "abc", copy 4 bytes from offset 2 */
	put_varint(&d, 10);
	put_varint(&d, 7);
	put_insert(&d, "abc", 3);
	put_copy(&d, 2, 4);
	assert_int_equal(gitbin_delta_sizes(&s, &t, d.ptr, d.len), 0);
	assert_int_equal(s, 10);
	assert_int_equal(t, 7);
	assert_int_equal(gitbin_delta_check(d.ptr, d.len), 0);
	assert_int_equal(gitbin_delta_apply(&out, src, 10, d.ptr, d.len), 0);
	assert_int_equal(out.len, 7);
	assert_memory_equal(out.ptr, "abc2345", 7);

	/* the source is the wrong size: a conflict, not a damaged delta */
	assert_int_equal(gitbin_delta_apply(&out, src, 9, d.ptr, d.len),
			 DECREE_ECONFLICT);
	assert_non_null(strstr(error_last(), "the file has 9 bytes, the delta "
					     "was made for 10"));
	assert_int_equal(out.len, 0);
	error_clear();

	/* a copy without size bytes is 0x10000 bytes; offsets of 3 bytes,
	 * sparse offset bytes */
	big = malloc(0x30000);
	assert_non_null(big);
	rnd_bytes(big, 0x30000);
	buf_clear(&d);
	put_varint(&d, 0x30000);
	put_varint(&d, 0x10000 + 5 + 0x100);
	buf_put(&d, "\x80", 1);			/* offset 0, size 0x10000 */
	buf_put(&d, "\x97\x03\x02\x01\x05", 5); /* offset 0x010203, size 5 */
	buf_put(&d, "\xa4\x02\x01", 3); /* offset 0x020000, size 0x100 */
	assert_int_equal(gitbin_delta_check(d.ptr, d.len), 0);
	assert_int_equal(gitbin_delta_apply(&out, big, 0x30000, d.ptr, d.len),
			 0);
	assert_int_equal(out.len, 0x10000 + 5 + 0x100);
	assert_memory_equal(out.ptr, big, 0x10000);
	assert_memory_equal(out.ptr + 0x10000, big + 0x010203, 5);
	assert_memory_equal(out.ptr + 0x10005, big + 0x20000, 0x100);
	free(big);

	/* nothing from nothing: an empty file's delta */
	buf_clear(&d);
	put_varint(&d, 0);
	put_varint(&d, 0);
	assert_int_equal(gitbin_delta_apply(&out, NULL, 0, d.ptr, d.len), 0);
	assert_int_equal(out.len, 0);
	buf_release(&d);
	buf_release(&out);
}

static void test_delta_errors(void **state)
{
	static const struct {
		const char *name;
		const char *delta;
		size_t len;
		const char *why;
	} cases[] = {
		{ "empty", "", 0, "delta header is truncated" },
		{ "one varint", "\x0a", 1, "delta header is truncated" },
		{ "varint without end", "\x8a\x80", 2, "header is truncated" },
		{ "varint of 6 bytes", "\x80\x80\x80\x80\x80\x00\x00", 7,
		  "malformed" },
		{ "source too large", "\x80\x80\x80\x20\x00", 5,
		  "exceed the limit" },
		{ "target too large", "\x00\x80\x80\x80\x20", 5,
		  "exceed the limit" },
		{ "reserved opcode", "\x0a\x01\x00", 3, "reserved opcode 0" },
		{ "copy past the source", "\x0a\x02\x91\x09\x02", 5,
		  "delta copies bytes 9..11 of a 10-byte source" },
		{ "copy offset past the source", "\x0a\x01\x91\x0b\x01", 5,
		  "copies bytes 11..12" },
		{ "default size past a small source", "\x0a\x0a\x80", 3,
		  "copies bytes 0..65536" },
		{ "copy argument missing", "\x0a\x02\x91\x01", 4,
		  "delta is truncated" },
		{ "insert past the end",
		  "\x0a\x03\x03"
		  "ab",
		  5, "delta is truncated" },
		{ "insert longer than the target",
		  "\x0a\x01\x02"
		  "ab",
		  5, "more than the 1 bytes announced" },
		{ "copy longer than the target", "\x0a\x01\x90\x02", 4,
		  "more than the 1 bytes announced" },
		{ "target too short",
		  "\x0a\x03\x02"
		  "ab",
		  5, "delta gives 2 bytes, 3 announced" },
	};
	buf out = BUF_INIT;

	UNUSED(state);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *d = cases[i].delta;
		size_t n = cases[i].len, src_size = 10, t;

		assert_int_equal(gitbin_delta_check(d, n), DECREE_EINVALID);
		if (!strstr(error_last(), cases[i].why))
			fail_msg("%s: check says '%s', want '%s'",
				 cases[i].name, error_last(), cases[i].why);
		error_clear();
		if (gitbin_delta_sizes(&src_size, &t, d, n) < 0) {
			error_clear();
			src_size = 10;
		}
		assert_int_equal(gitbin_delta_apply(&out, "0123456789",
						    src_size, d, n),
				 DECREE_EINVALID);
		if (!strstr(error_last(), cases[i].why))
			fail_msg("%s: apply says '%s', want '%s'",
				 cases[i].name, error_last(), cases[i].why);
		assert_int_equal(out.len, 0);
		error_clear();
	}
	buf_release(&out);
}

/* Random targets made of random copies and inserts. */
static void test_delta_random(void **state)
{
	buf d = BUF_INIT, want = BUF_INIT, out = BUF_INIT;
	char *src = malloc(0x40000), ins[300];

	UNUSED(state);
	assert_non_null(src);
	rng_state = testutil_seed("test_gitbin") + 2;
	for (int round = 0; round < 300; round++) {
		size_t src_len = rndn(round % 10 ? 3000 : 0x40000) + 1;
		size_t pieces = rndn(20);

		rnd_bytes(src, src_len);
		buf_clear(&want);
		buf_clear(&d);
		/* the ops first, then the header with the known sizes */
		buf ops = BUF_INIT;
		for (size_t k = 0; k < pieces; k++) {
			if (rndn(2)) {
				size_t n = rndn(sizeof(ins)) + 1;
				rnd_bytes(ins, n);
				put_insert(&ops, ins, n);
				buf_put(&want, ins, n);
			} else {
				size_t off = rndn(src_len), n;
				size_t max = src_len - off;
				n = max >= 0x10000 && rndn(2)
					    ? 0x10000
					    : rndn(max < 0xffffff ? max
								  : 0xffffff) +
						      1;
				put_copy(&ops, off, n);
				buf_put(&want, src + off, n);
			}
		}
		put_varint(&d, src_len);
		put_varint(&d, want.len);
		buf_put(&d, ops.ptr, ops.len);
		buf_release(&ops);
		assert_int_equal(gitbin_delta_check(d.ptr, d.len), 0);
		assert_int_equal(gitbin_delta_apply(&out, src, src_len, d.ptr,
						    d.len),
				 0);
		assert_int_equal(out.len, want.len);
		assert_memory_equal(out.ptr, want.ptr, want.len);
		/* cut anywhere, it is refused */
		if (d.len > 2) {
			size_t cut = rndn(d.len - 1) + 1;
			if (gitbin_delta_check(d.ptr, cut) == 0)
				fail_msg("a delta cut at %zu of %zu passed",
					 cut, d.len);
			error_clear();
		}
	}
	free(src);
	buf_release(&d);
	buf_release(&want);
	buf_release(&out);
}

static void test_blob_id(void **state)
{
	char hex[41];

	UNUSED(state);
	/* git hash-object /dev/null; printf 'hello\n' | git hash-object
	 * --stdin; printf 'a\0b' | git hash-object --stdin */
	blob_hex(hex, "", 0);
	assert_string_equal(hex, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	blob_hex(hex, "hello\n", 6);
	assert_string_equal(hex, "ce013625030ba8dba906f756967f9e9ca394464a");
	blob_hex(hex, "a\0b", 3);
	assert_string_equal(hex, "20b5be91886d0b6f26dc98a225c0dac05fe2c86e");
}

/* ---- whole records ----------------------------------------------------- */

/* The record for old -> new (NULL: absent) with the given blocks. */
typedef struct {
	const char *head;    /* extra header lines, or NULL */
	int fwd, rev;	     /* 'l' literal, 'd' delta, 0 none */
	int idlen;	     /* hex digits of the ids (0: no index line) */
	const char *bad_new; /* a wrong new id, or NULL */
} rec_shape;

static const char OLD[] = "old\0content\0of the file, long enough to copy";
static const char NEW[] = "new\0content\0of the file, long enough to copy!";
#define OLD_LEN (sizeof(OLD) - 1)
#define NEW_LEN (sizeof(NEW) - 1)

/* A delta from a to b: a prefix copied, the rest inserted. */
static void make_delta(buf *d, const char *a, size_t alen, const char *b,
		       size_t blen)
{
	size_t k = 0;

	while (k < alen && k < blen && a[k] == b[k])
		k++;
	buf_clear(d);
	put_varint(d, alen);
	put_varint(d, blen);
	if (k)
		put_copy(d, 0, k);
	put_insert(d, b + k, blen - k);
}

static void make_record(buf *out, const char *path, const char *old,
			size_t olen, const char *nw, size_t nlen,
			const rec_shape *sh)
{
	char ho[41], hn[41];
	buf d = BUF_INIT;

	buf_clear(out);
	buf_printf(out, "diff --git a/%s b/%s\n", path, path);
	if (!old)
		buf_puts(out, "new file mode 100644\n");
	if (!nw)
		buf_puts(out, "deleted file mode 100644\n");
	if (sh->head)
		buf_puts(out, sh->head);
	if (old)
		blob_hex(ho, old, olen);
	else
		memset(ho, '0', 40);
	if (nw)
		blob_hex(hn, nw, nlen);
	else
		memset(hn, '0', 40);
	ho[40] = hn[40] = '\0';
	if (sh->idlen)
		buf_printf(out, "index %.*s..%.*s%s\n", sh->idlen, ho,
			   sh->idlen, sh->bad_new ? sh->bad_new : hn,
			   old && nw ? " 100644" : "");
	buf_puts(out, "GIT binary patch\n");
	if (sh->fwd == 'l') {
		put_block(out, false, nw ? nw : "", nw ? nlen : 0);
	} else if (sh->fwd == 'd') {
		make_delta(&d, old ? old : "", old ? olen : 0, nw ? nw : "",
			   nw ? nlen : 0);
		put_block(out, true, d.ptr, d.len);
	}
	if (sh->rev == 'l') {
		put_block(out, false, old ? old : "", old ? olen : 0);
	} else if (sh->rev == 'd') {
		make_delta(&d, nw ? nw : "", nw ? nlen : 0, old ? old : "",
			   old ? olen : 0);
		put_block(out, true, d.ptr, d.len);
	}
	buf_release(&d);
}

/* Apply file patch 0 of text to (cur, cur_len, exists); return the code
 * and leave the result in res. */
static int apply_to(patch_result *res, const char *text, size_t len,
		    const char *cur, size_t cur_len, bool exists, bool rev)
{
	patch_set *ps = NULL;
	int r = patch_parse(&ps, "p.diff", text, len, NULL);

	if (r < 0)
		fail_msg("parse: %s\n%s", error_last(), text);
	assert_int_equal(ps->nfiles, 1);
	assert_true(ps->files[0].is_binary && ps->files[0].is_git_binary);
	r = patch_apply(res, &ps->files[0], cur, cur_len, exists,
			rev ? PATCH_REVERSE : 0);
	patch_set_free(ps);
	return r;
}

static void expect_result(const patch_result *res, bool exists,
			  const char *data, size_t len)
{
	assert_int_equal(res->exists, exists);
	if (exists) {
		assert_int_equal(res->data.len, len);
		assert_memory_equal(res->data.ptr, data, len);
	}
}

static void test_records(void **state)
{
	static const rec_shape shapes[] = {
		{ NULL, 'd', 'd', 40, NULL }, { NULL, 'l', 'l', 40, NULL },
		{ NULL, 'd', 'l', 40, NULL }, { NULL, 'l', 'd', 7, NULL },
		{ NULL, 'd', 'd', 12, NULL },
	};
	patch_result res = PATCH_RESULT_INIT;
	buf t = BUF_INIT;

	UNUSED(state);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const rec_shape *sh = &shapes[i];

		/* modification, both ways */
		make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, sh);
		assert_int_equal(apply_to(&res, t.ptr, t.len, OLD, OLD_LEN,
					  true, false),
				 0);
		expect_result(&res, true, NEW, NEW_LEN);
		assert_int_equal(apply_to(&res, t.ptr, t.len, NEW, NEW_LEN,
					  true, true),
				 0);
		expect_result(&res, true, OLD, OLD_LEN);
		/* the pre-image differs (same size, so a delta would apply) */
		{
			char other[sizeof(OLD)];
			memcpy(other, OLD, sizeof(OLD));
			other[OLD_LEN - 1] = 'X';
			assert_int_equal(apply_to(&res, t.ptr, t.len, other,
						  OLD_LEN, true, false),
					 DECREE_ECONFLICT);
			assert_non_null(strstr(error_last(),
					       "p.diff:1: binary file 'f.bin' "
					       "is not the one the patch "
					       "expects (its git blob id is"));
			assert_int_equal(res.data.len, 0);
			error_clear();
		}
		/* creation and its reverse, a deletion */
		make_record(&t, "n.bin", NULL, 0, NEW, NEW_LEN, sh);
		assert_int_equal(
			apply_to(&res, t.ptr, t.len, NULL, 0, false, false), 0);
		expect_result(&res, true, NEW, NEW_LEN);
		assert_int_equal(apply_to(&res, t.ptr, t.len, NEW, NEW_LEN,
					  true, true),
				 0);
		expect_result(&res, false, NULL, 0);
		assert_int_equal(apply_to(&res, t.ptr, t.len, OLD, OLD_LEN,
					  true, false),
				 DECREE_ECONFLICT);
		assert_non_null(strstr(error_last(), "already exists"));
		error_clear();
		/* deletion and its reverse, a creation */
		make_record(&t, "d.bin", OLD, OLD_LEN, NULL, 0, sh);
		assert_int_equal(apply_to(&res, t.ptr, t.len, OLD, OLD_LEN,
					  true, false),
				 0);
		expect_result(&res, false, NULL, 0);
		assert_int_equal(
			apply_to(&res, t.ptr, t.len, NULL, 0, false, true), 0);
		expect_result(&res, true, OLD, OLD_LEN);
		assert_int_equal(apply_to(&res, t.ptr, t.len, NEW, NEW_LEN,
					  true, false),
				 DECREE_ECONFLICT);
		assert_non_null(strstr(error_last(), "is not the one"));
		error_clear();
		/* an empty file, both ways */
		make_record(&t, "e.bin", OLD, OLD_LEN, "", 0, sh);
		assert_int_equal(apply_to(&res, t.ptr, t.len, OLD, OLD_LEN,
					  true, false),
				 0);
		expect_result(&res, true, "", 0);
		assert_int_equal(
			apply_to(&res, t.ptr, t.len, "", 0, true, true), 0);
		expect_result(&res, true, OLD, OLD_LEN);
	}
	patch_result_release(&res);
	buf_release(&t);
}

static void test_record_variants(void **state)
{
	static const rec_shape fwd_only = { NULL, 'd', 0, 40, NULL };
	static const rec_shape wrong_new = {
		NULL, 'l', 'l', 40, "1234567890123456789012345678901234567890"
	};
	static const rec_shape mode = { "old mode 100644\nnew mode 100755\n",
					'd', 'd', 40, NULL };
	patch_result res = PATCH_RESULT_INIT;
	patch_set *ps = NULL;
	buf t = BUF_INIT;
	char *p;

	UNUSED(state);
	/* without a reverse block: forwards only */
	make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, &fwd_only);
	assert_int_equal(
		apply_to(&res, t.ptr, t.len, OLD, OLD_LEN, true, false), 0);
	expect_result(&res, true, NEW, NEW_LEN);
	assert_int_equal(apply_to(&res, t.ptr, t.len, NEW, NEW_LEN, true, true),
			 DECREE_EAPPLY);
	assert_non_null(strstr(error_last(), "has no reverse block"));
	error_clear();

	/* the result is not what the index line names */
	make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, &wrong_new);
	assert_int_equal(apply_to(&res, t.ptr, t.len, OLD, OLD_LEN, true,
				  false),
			 DECREE_ECONFLICT);
	assert_non_null(strstr(error_last(),
			       "binary patch for 'f.bin' gives a file whose "
			       "git blob id"));
	assert_non_null(strstr(error_last(), "is not the index line's "
					     "123456789012"));
	error_clear();

	/* ids in upper case */
	make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, &fwd_only);
	for (p = strstr(t.ptr, "index ") + 6; *p != ' '; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	assert_int_equal(
		apply_to(&res, t.ptr, t.len, OLD, OLD_LEN, true, false), 0);

	/* a mode change with it */
	make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, &mode);
	assert_int_equal(patch_parse(&ps, "p.diff", t.ptr, t.len, NULL), 0);
	assert_int_equal(ps->files[0].old_mode, 0100644);
	assert_int_equal(ps->files[0].new_mode, 0100755);
	assert_int_equal(
		patch_apply(&res, &ps->files[0], OLD, OLD_LEN, true, 0), 0);
	assert_int_equal(res.mode, 0100755);
	expect_result(&res, true, NEW, NEW_LEN);
	patch_set_free(ps);

	/* a rename with a change: reads the old path, writes the new */
	buf_clear(&t);
	{
		buf rec = BUF_INIT;
		static const rec_shape ren = {
			"similarity index 90%\nrename from a/x.bin\n"
			"rename to b/y.bin\n",
			'd', 'd', 40, NULL
		};
		make_record(&rec, "x.bin", OLD, OLD_LEN, NEW, NEW_LEN, &ren);
		/* the diff --git line names the two paths */
		p = strchr(rec.ptr, '\n');
		buf_puts(&t, "diff --git a/a/x.bin b/b/y.bin");
		buf_puts(&t, p);
		buf_release(&rec);
	}
	assert_int_equal(patch_parse(&ps, "p.diff", t.ptr, t.len, NULL), 0);
	assert_true(ps->files[0].is_rename);
	assert_string_equal(patch_file_source(&ps->files[0], false), "a/x.bin");
	assert_string_equal(patch_file_target(&ps->files[0], false), "b/y.bin");
	assert_int_equal(
		patch_apply(&res, &ps->files[0], OLD, OLD_LEN, true, 0), 0);
	expect_result(&res, true, NEW, NEW_LEN);
	assert_int_equal(patch_apply(&res, &ps->files[0], NEW, NEW_LEN, true,
				     PATCH_REVERSE),
			 0);
	expect_result(&res, true, OLD, OLD_LEN);
	patch_set_free(ps);

	patch_result_release(&res);
	buf_release(&t);
}

static void test_refusals(void **state)
{
	static const struct {
		const char *name;
		const char *text;
		const char *why;
	} cases[] = {
		{ "no index line",
		  "diff --git a/b b/b\nGIT binary patch\nliteral 0\n"
		  "HcmV?d00001\n\n",
		  "p.diff:1: git binary patch for 'b' without an index line "
		  "naming both blobs" },
		{ "short ids",
		  "diff --git a/b b/b\nindex 123456..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00001\n\n",
		  "without an index line" },
		{ "zero id for an existing side",
		  "diff --git a/b b/b\nindex 0000000..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00001\n\n",
		  "p.diff:1: the index line of 'b' contradicts which sides of "
		  "the file exist" },
		{ "id for a deleted side",
		  "diff --git a/b b/b\ndeleted file mode 100644\n"
		  "index 1234567..abcdef0\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00001\n\n",
		  "contradicts which sides" },
		{ "deletion with content",
		  "diff --git a/b b/b\ndeleted file mode 100644\n"
		  "index 1234567..0000000\n"
		  "GIT binary patch\nliteral 3\nKcmb<ms0083<N)#j\n\n",
		  "gives content to the absent side of 'b'" },
		{ "creation whose reverse has content",
		  "diff --git a/b b/b\nnew file mode 100644\n"
		  "index 0000000..1234567\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00001\n\n"
		  "literal 3\nKcmb<ms0083<N)#j\n\n",
		  "gives content to the absent side of 'b'" },
		{ "bad base85",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d0000\"\n\n",
		  "p.diff:5: malformed binary patch data: invalid base85 "
		  "character" },
		{ "base85 line too short",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d0000\n\n",
		  "p.diff:5: malformed binary patch data: base85 line for 8 "
		  "bytes has 9 characters, not 10" },
		{ "damaged zlib",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00002\n\n",
		  "p.diff:4: damaged binary patch data: damaged zlib data" },
		{ "wrong literal size",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 2\nKcmb<ms0083<N)#j\n\n",
		  "p.diff:4: damaged binary patch data: inflates to 3 bytes, "
		  "2 announced" },
		{ "not a delta",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\ndelta 3\nKcmb<ms0083<N)#j\n\n",
		  "p.diff:4: damaged binary patch delta: delta is "
		  "truncated" },
		{ "block without data",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\n\n",
		  "p.diff:4: binary patch block without data" },
		{ "junk after the size",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0 x\nHcmV?d00001\n\n",
		  "p.diff:4: malformed binary patch line 'literal 0 x'" },
		{ "no size",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\ndelta \nHcmV?d00001\n\n",
		  "p.diff:4: malformed binary patch line 'delta '" },
		{ "too large",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 67108864\nHcmV?d00001\n\n",
		  "p.diff:4: binary patch of 67108864 bytes is too large" },
		{ "damaged reverse block",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00001\n\n"
		  "literal 0\nHcmV?d00002\n\n",
		  "p.diff:7: damaged binary patch data" },
		{ "next record without the empty line",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "GIT binary patch\nliteral 0\nHcmV?d00001\n"
		  "diff --git a/c b/c\n",
		  "p.diff:6: malformed binary patch data" },
		{ "binary files differ",
		  "diff --git a/b b/b\nindex 1234567..abcdef0 100644\n"
		  "Binary files a/b and b/b differ\n",
		  "p.diff:3: binary change without content" },
	};
	patch_set *ps = NULL;

	UNUSED(state);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = patch_parse(&ps, "p.diff", cases[i].text,
				    strlen(cases[i].text), NULL);
		if (r != DECREE_EINVALID)
			fail_msg("%s: parse gave %d (%s)", cases[i].name, r,
				 error_last());
		if (!strstr(error_last(), cases[i].why))
			fail_msg("%s: got '%s', want '%s'", cases[i].name,
				 error_last(), cases[i].why);
		assert_null(ps);
		error_clear();
	}
}

/* A patch whose lines a mail client turned into CRLF, and one whose
 * final empty line was lost, still apply. */
static void test_crlf_and_eof(void **state)
{
	patch_result res = PATCH_RESULT_INIT;
	static const rec_shape sh = { NULL, 'd', 'd', 40, NULL };
	buf t = BUF_INIT, crlf = BUF_INIT;

	UNUSED(state);
	make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, &sh);
	for (size_t i = 0; i < t.len; i++) {
		if (t.ptr[i] == '\n')
			buf_putc(&crlf, '\r');
		buf_putc(&crlf, t.ptr[i]);
	}
	assert_int_equal(apply_to(&res, crlf.ptr, crlf.len, OLD, OLD_LEN, true,
				  false),
			 0);
	expect_result(&res, true, NEW, NEW_LEN);
	/* the final empty line left out */
	t.len--;
	assert_int_equal(apply_to(&res, t.ptr, t.len, NEW, NEW_LEN, true, true),
			 0);
	expect_result(&res, true, OLD, OLD_LEN);
	patch_result_release(&res);
	buf_release(&t);
	buf_release(&crlf);
}

static void test_alloc_failure(void **state)
{
	static const rec_shape sh = { NULL, 'd', 'l', 40, NULL };
	buf t = BUF_INIT;
	unsigned long n;

	UNUSED(state);
	make_record(&t, "f.bin", OLD, OLD_LEN, NEW, NEW_LEN, &sh);
	for (n = 1; n < 500; n++) {
		patch_set *ps = NULL;
		patch_result res = PATCH_RESULT_INIT;
		int r;

		alloc_fail_at(n);
		r = patch_parse(&ps, "a.diff", t.ptr, t.len, NULL);
		if (r == 0)
			r = patch_apply(&res, &ps->files[0], OLD, OLD_LEN, true,
					0);
		if (r == 0)
			r = patch_apply(&res, &ps->files[0], NEW, NEW_LEN, true,
					PATCH_REVERSE);
		alloc_fail_at(0);
		patch_result_release(&res);
		patch_set_free(ps);
		if (r == 0)
			break;
		if (r != DECREE_ERROR)
			fail_msg("allocation %lu: %d (%s)", n, r, error_last());
		error_clear();
	}
	assert_true(n < 500);
	buf_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base85),
		cmocka_unit_test(test_inflate),
		cmocka_unit_test(test_delta_ops),
		cmocka_unit_test(test_delta_errors),
		cmocka_unit_test(test_delta_random),
		cmocka_unit_test(test_blob_id),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_record_variants),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_crlf_and_eof),
		cmocka_unit_test(test_alloc_failure),
	};

	if (getenv("DECREE_TEST_FILTER"))
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
