/*
 * fuzz_tree.c - libFuzzer target for the tree object parser.
 *
 * Build with clang (UTIL = the .c files of src/lib/util):
 *   clang -g -O1 -fsanitize=fuzzer,address -Iinclude -Isrc/lib \
 *	-Isrc/lib/util fuzz/fuzz_tree.c src/lib/tree.c src/lib/odb.c \
 *	src/lib/snap.c $UTIL -lcrypto -lzstd -o fuzz_tree
 *   ./fuzz_tree -max_total_time=60 fuzz/corpus/tree
 * `make check` replays fuzz/corpus/tree through fuzz/replay.c.
 *
 * A tree object from a damaged or hostile store must never make a restore
 * write outside the root.  Beyond "no crash" the target aborts when
 * tree_parse accepts anything a restore could not trust:
 *   - every name it reports is non-empty, at most NAME_MAX bytes, without
 *     '/' or NUL, not "." or "..", strictly increasing (strcmp);
 *   - every mode is one of the five known ones, or (version 2 only) a
 *     regular file with any permission bits (0100000 | 0..0777);
 *   - an accepted object is canonical: re-encoding the reported entries
 *     gives back the input byte for byte (no slack a second reader might
 *     interpret differently);
 *   - a callback that stops the parse stops it: the code comes back and
 *     no further entry is reported.
 */
#include "util/common.h"
#include "store/tree.h"
#include "util/buf.h"
#include "util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

struct ctx {
	buf body;
	uint32_t count, version;
	char prev[NAME_MAX + 1];
	uint32_t stop_at; /* 0: never */
};

static int entry(void *payload, const char *name, uint32_t mode, uint64_t size,
		 const oid *id)
{
	struct ctx *c = payload;
	size_t n = strlen(name);

	check(n > 0 && n <= NAME_MAX);
	check(!strchr(name, '/') && strcmp(name, ".") && strcmp(name, ".."));
	check(mode == MODE_FILE || mode == MODE_EXEC || mode == MODE_LINK ||
	      mode == MODE_DIR || mode == MODE_SKIP ||
	      (c->version == 2 && mode_is_file(mode)));
	check(c->count == 0 || strcmp(c->prev, name) < 0);
	memcpy(c->prev, name, n + 1);
	c->count++;
	check(buf_put_u32(&c->body, mode) == 0 &&
	      buf_put_u64(&c->body, size) == 0 &&
	      buf_put(&c->body, id->b, SHA256_LEN) == 0 &&
	      buf_put_u16(&c->body, (unsigned)n) == 0 &&
	      buf_put(&c->body, name, n) == 0);
	return c->stop_at && c->count == c->stop_at ? 99 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c;
	buf whole = BUF_INIT;
	int r;

	memset(&c, 0, sizeof(c));
	buf_init(&c.body);
	if (size >= 8)
		c.version = (uint32_t)data[4] | (uint32_t)data[5] << 8 |
			    (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24;
	r = tree_parse((const char *)data, size, entry, &c);
	if (r == 0) {
		check(buf_put(&whole, "DTRE", 4) == 0 &&
		      buf_put_u32(&whole, c.version) == 0 &&
		      buf_put_u32(&whole, c.count) == 0 &&
		      buf_put(&whole, c.body.ptr, c.body.len) == 0);
		check(whole.len == size && !memcmp(whole.ptr, data, size));
		if (c.count) {
			/* stop at the last entry: its code comes back */
			uint32_t total = c.count;
			buf_clear(&c.body);
			c.count = 0;
			c.stop_at = total;
			check(tree_parse((const char *)data, size, entry, &c) ==
			      99);
			check(c.count == total);
		}
	} else {
		check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
	}
	buf_release(&c.body);
	buf_release(&whole);
	decree_error_clear();
	return 0;
}
