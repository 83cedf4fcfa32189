/*
 * fuzz_patch.c - libFuzzer target for the patch parser and applier.
 *
 * Build with clang from Debian (UTIL = the .c files of src/lib/util):
 *   clang -g -O1 -fsanitize=fuzzer,address -Iinclude -Isrc/lib \
 *	-Isrc/lib/util fuzz/fuzz_patch.c src/lib/patch.c src/lib/xdiff.c \
 *	src/lib/unidiff.c $UTIL -lcrypto -o fuzz_patch
 *   ./fuzz_patch -max_total_time=60 fuzz/corpus/patch
 * tests/unit/test_patch.c includes this file and replays the corpus, so
 * every input that once crashed stays a regression test.
 *
 * For every parsed file patch the target applies it, forwards and in
 * reverse, to a fixed buffer (mostly conflicts) and to an "old" file built
 * from the patch's own old-side lines (so applies succeed and the deep
 * paths run; for a git binary patch, the literal of the other direction).
 * It checks one invariant: when a forward apply at exact positions
 * succeeds, applying in reverse to its result gives back the input byte
 * for byte.  (For a git binary patch this rests on its blob ids, so it is
 * checked when both are full 40-digit ids - shorter prefixes can collide,
 * and the fuzzer is good at finding a 7-digit collision - and the patch
 * has a reverse block.)
 *
 * The whole input is also read as a git delta (gitbin.h) and applied to
 * a source of the size it announces: the delta check and the apply must
 * agree, a delta that applies gives exactly its announced size, and the
 * wrong source size is a conflict.  A violation aborts, which libFuzzer
 * reports.
 */
#include "util/common.h"
#include "diff/patch.h"
#include "diff/gitbin.h"
#include "util/buf.h"
#include "util/error.h"

#define FUZZ_MAX_FILL 4096 /* lines of filler before a hunk, at most */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The old side of `fp` as a file, with "=\n" filler between hunks. */
static bool build_old(buf *out, const patch_file *fp, bool rev)
{
	size_t i, j, line = 0;

	buf_clear(out);
	if (fp->is_git_binary) {
		/* the pre-image is what the other direction's block gives */
		const patch_git_block *b = rev ? &fp->git_fwd : &fp->git_rev;
		if ((!rev && !fp->has_git_rev) || b->is_delta)
			return false;
		return !b->len || buf_put(out, b->data, b->len) == 0;
	}
	if (fp->is_binary) {
		const char *p = rev ? fp->bin_new : fp->bin_old;
		size_t n = rev ? fp->bin_new_len : fp->bin_old_len;
		return !n || buf_put(out, p, n) == 0;
	}
	for (i = 0; i < fp->nhunks; i++) {
		const patch_hunk *h = &fp->hunks[i];
		size_t s = rev ? h->new_start : h->old_start;
		size_t c = rev ? h->new_count : h->old_count;
		size_t pos = c ? s - 1 : s;
		char del = rev ? '+' : '-';

		if (pos < line || pos - line > FUZZ_MAX_FILL ||
		    out->len > FUZZ_MAX_FILL * 64)
			return false;
		for (; line < pos; line++)
			if (buf_puts(out, "=\n") < 0)
				return false;
		for (j = h->first; j < h->first + h->nlines; j++) {
			const patch_line *l = &fp->lines[j];
			if (l->op != ' ' && l->op != del)
				continue;
			if (buf_put(out, l->ptr, l->len) < 0)
				return false;
			line++;
		}
	}
	return true;
}

static void round_trip(const patch_file *fp, const char *old, size_t len,
		       bool exists, bool rev)
{
	patch_result fwd = PATCH_RESULT_INIT, back = PATCH_RESULT_INIT;
	unsigned flags = rev ? PATCH_REVERSE : 0;

	/* a git binary patch goes back only with a reverse block, and
	 * exactly only by full ids */
	bool weak_ids = fp->is_git_binary &&
			(!fp->has_git_rev || strlen(fp->old_id) < 40 ||
			 strlen(fp->new_id) < 40);

	if (patch_apply(&fwd, fp, old, len, exists, flags) == 0 &&
	    !fp->is_copy && !weak_ids) {
		if (patch_apply(&back, fp, fwd.data.ptr, fwd.data.len,
				fwd.exists, flags ^ PATCH_REVERSE) != 0 ||
		    back.exists != exists ||
		    (exists && (back.data.len != len ||
				(len && memcmp(back.data.ptr, old, len)))))
			abort();
	}
	patch_result_release(&fwd);
	patch_result_release(&back);
	/* Offsets may move hunks: only check that nothing breaks. */
	(void)patch_apply(&fwd, fp, old, len, exists,
			  flags | PATCH_ALLOW_OFFSET);
	patch_result_release(&fwd);
}

/* The input as a git delta, against a source of the size it names. */
static void fuzz_delta(const char *d, size_t n)
{
	size_t src_size, dst_size;
	buf out = BUF_INIT;
	char *src;
	bool valid;
	int r;

	if (gitbin_delta_sizes(&src_size, &dst_size, d, n) < 0 ||
	    src_size > (1u << 20) || dst_size > (1u << 20)) {
		decree_error_clear();
		return;
	}
	if (!(src = malloc(src_size + 1)))
		return;
	for (size_t i = 0; i <= src_size; i++)
		src[i] = (char)(i * 131 + 7);
	valid = gitbin_delta_check(d, n) == 0;
	r = gitbin_delta_apply(&out, src, src_size, d, n);
	if ((r == 0) != valid || (r == 0 && out.len != dst_size) ||
	    (r != 0 && r != DECREE_EINVALID))
		abort();
	if (gitbin_delta_apply(&out, src, src_size + 1, d, n) !=
		    DECREE_ECONFLICT ||
	    out.len)
		abort();
	buf_release(&out);
	free(src);
	decree_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char fixed[] = "a\nb\nc\nd\ne\nf\ng\nh\n\nx\r\ny";
	patch_set *ps = NULL;
	buf old = BUF_INIT;
	size_t i;
	int rev;

	fuzz_delta((const char *)data, size);
	if (patch_parse(&ps, "fuzz", (const char *)data, size, NULL) < 0) {
		decree_error_clear();
		return 0;
	}
	for (i = 0; i < ps->nfiles; i++) {
		const patch_file *fp = &ps->files[i];

		for (rev = 0; rev < 2; rev++) {
			bool exists = rev ? fp->new_exists : fp->old_exists;

			round_trip(fp, fixed, sizeof(fixed) - 1, true, rev);
			round_trip(fp, NULL, 0, false, rev);
			if (build_old(&old, fp, rev))
				round_trip(fp, old.ptr, old.len, exists, rev);
			(void)patch_file_source(fp, rev);
			(void)patch_file_target(fp, rev);
		}
	}
	buf_release(&old);
	patch_set_free(ps);
	decree_error_clear();
	return 0;
}
