/*
 * test_patch.c - parsing and applying unified diffs.
 *
 *  - Tables: foreign formats (diff -u, diff -ruN, git diff with renames,
 *    copies, quoted names, mode changes), malformed and unsafe input with
 *    the expected error code and message, conflicts.
 *  - Property: thousands of seeded random file pairs (repeating line
 *    vocabularies, CRLF, missing final newlines, binary, symlinks, modes,
 *    creations, deletions, renames) must survive
 *    unidiff_format -> patch_parse -> patch_apply, forwards and reversed.
 *  - Oracles: whole random trees are diffed by decree and applied by GNU
 *    `patch -p1` and `git apply`, forwards and with -R; `diff -ruN`,
 *    `diff -u` and `git diff --no-index` output is parsed and applied by
 *    decree.  Missing tools fail the test.
 *  - decree_patch_files (decree/diff.h): the file records of a patch,
 *    their status, modes, line counts and texts.
 *  - The fuzz corpus is replayed through the libFuzzer entry point.
 * Random tests print their seed; DECREE_TEST_SEED=<n> replays a run.
 */
#include "util/common.h"
#include "decree/diff.h"
#include "diff/patch.h"
#include "diff/unidiff.h"
#include "diff/xdiff.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <dirent.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "testutil.h"

/* The fuzz target, so that the corpus replay runs the very same code. */
#include "../../fuzz/fuzz_patch.c"

#define F UNIDIFF_MODE_FILE
#define X UNIDIFF_MODE_EXEC
#define L UNIDIFF_MODE_LINK

/* ---- random inputs ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return testutil_rnd(&rng_state);
}

static size_t rndn(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static uint64_t test_seed(const char *what)
{
	const char *s = getenv("DECREE_TEST_SEED");
	uint64_t seed;

	if (s && *s)
		seed = strtoull(s, NULL, 0);
	else
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	print_message("%s: DECREE_TEST_SEED=%" PRIu64 "\n", what, seed);
	rng_state = seed;
	return seed;
}

typedef char vocab_t[16];

/* Short lines: repeats, tabs, CR before LF, bytes >= 0x80. */
static void make_vocab(vocab_t *vocab, size_t n)
{
	size_t i, j, len;

	for (i = 0; i < n; i++) {
		len = rndn(7);
		for (j = 0; j < len; j++) {
			size_t r = rndn(24);
			vocab[i][j] = r == 0   ? (char)0xc3
				      : r == 1 ? '\t'
				      : r == 2 ? ' '
					       : (char)('a' + rndn(5));
		}
		if (rndn(6) == 0)
			vocab[i][len++] = '\r';
		vocab[i][len] = '\0';
	}
}

static void make_text(buf *out, vocab_t *vocab, size_t nv, size_t nlines)
{
	size_t i;

	buf_clear(out);
	for (i = 0; i < nlines; i++) {
		buf_puts(out, vocab[rndn(nv)]);
		buf_putc(out, '\n');
	}
	if (out->len && rndn(4) == 0)
		buf_truncate(out, out->len - 1);
}

static void mutate(buf *out, const buf *old, vocab_t *vocab, size_t nv)
{
	xdiff_lines l = XDIFF_LINES_INIT;
	size_t i, k;

	assert_int_equal(xdiff_lines_split(&l, old->ptr, old->len), 0);
	buf_clear(out);
	for (i = 0; i <= l.nlines; i++) {
		size_t r = rndn(12);
		if (r == 0)
			for (k = rndn(4) + 1; k; k--) {
				buf_puts(out, vocab[rndn(nv)]);
				buf_putc(out, '\n');
			}
		if (i == l.nlines)
			break;
		if (r == 1 || r == 2)
			continue;
		if (r == 3) {
			buf_puts(out, vocab[rndn(nv)]);
			buf_putc(out, '\n');
			continue;
		}
		buf_put(out, old->ptr + l.start[i],
			l.start[i + 1] - l.start[i]);
	}
	if (out->len && rndn(4) == 0) {
		if (out->ptr[out->len - 1] == '\n')
			buf_truncate(out, out->len - 1);
		else
			buf_putc(out, '\n');
	}
	xdiff_lines_release(&l);
}

/* ---- applying a whole patch set to files in memory --------------------- */

typedef struct {
	char path[96];
	bool exists;
	uint32_t mode;
	buf data;
} tfile;

typedef struct {
	tfile *v;
	size_t n, cap;
} tree;

static tfile *tree_get(tree *t, const char *path, bool add)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].path, path))
			return &t->v[i];
	if (!add)
		return NULL;
	assert_int_equal(GROW(t->v, t->cap, t->n + 1), 0);
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	assert_true(strlen(path) < sizeof(t->v[0].path));
	snprintf(t->v[t->n].path, sizeof(t->v[0].path), "%s", path);
	buf_init(&t->v[t->n].data);
	return &t->v[t->n++];
}

static void tree_free(tree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		buf_release(&t->v[i].data);
	decree_free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

static void tree_copy(tree *dst, const tree *src)
{
	size_t i;

	for (i = 0; i < src->n; i++) {
		tfile *f = tree_get(dst, src->v[i].path, true);
		f->exists = src->v[i].exists;
		f->mode = src->v[i].mode;
		buf_clear(&f->data);
		buf_put(&f->data, src->v[i].data.ptr, src->v[i].data.len);
	}
}

/* Apply every file patch in order (reverse order with PATCH_REVERSE). */
static int tree_apply(tree *t, const patch_set *ps, unsigned flags)
{
	bool rev = (flags & PATCH_REVERSE) != 0;
	size_t k;

	for (k = 0; k < ps->nfiles; k++) {
		const patch_file *fp = &ps->files[rev ? ps->nfiles - 1 - k : k];
		const char *src = patch_file_source(fp, rev);
		const char *dst = patch_file_target(fp, rev);
		tfile *sf = tree_get(t, src, true), *df;
		patch_result res = PATCH_RESULT_INIT;
		uint32_t mode = sf->exists ? sf->mode : F;
		int r;

		r = patch_apply(&res, fp, sf->data.ptr, sf->data.len,
				sf->exists, flags);
		if (r < 0) {
			patch_result_release(&res);
			return r;
		}
		if (fp->is_rename)
			sf->exists = false;
		if (rev && fp->is_copy) {
			sf->exists = false;
			patch_result_release(&res);
			continue;
		}
		df = tree_get(t, dst, true);
		df->exists = res.exists;
		df->mode = res.mode ? res.mode : mode;
		buf_clear(&df->data);
		buf_put(&df->data, res.data.ptr, res.data.len);
		patch_result_release(&res);
	}
	return 0;
}

static void tree_expect(const tree *got, const tree *want, const char *what)
{
	size_t i;

	for (i = 0; i < want->n; i++) {
		const tfile *w = &want->v[i];
		const tfile *g = tree_get((tree *)got, w->path, false);
		bool gexists = g && g->exists;

		if (gexists != w->exists)
			fail_msg("%s: '%s' %s", what, w->path,
				 w->exists ? "missing" : "should not exist");
		if (!w->exists)
			continue;
		if (g->data.len != w->data.len ||
		    memcmp(g->data.ptr, w->data.ptr, w->data.len))
			fail_msg("%s: '%s' content differs", what, w->path);
		if (g->mode != w->mode)
			fail_msg("%s: '%s' mode %o, expected %o", what, w->path,
				 g->mode, w->mode);
	}
	for (i = 0; i < got->n; i++)
		if (got->v[i].exists &&
		    !tree_get((tree *)want, got->v[i].path, false))
			fail_msg("%s: unexpected '%s'", what, got->v[i].path);
}

/* ---- round trip of one pair ------------------------------------------- */

static void check_pair(const unidiff_file *f, const unidiff_options *o,
		       const char *what)
{
	tree a = { NULL, 0, 0 }, b = { NULL, 0, 0 }, t = { NULL, 0, 0 };
	const char *np = f->new_path ? f->new_path : f->old_path;
	const char *op = f->old_path ? f->old_path : f->new_path;
	buf out = BUF_INIT;
	patch_set *ps = NULL;
	tfile *x;
	int r;

	x = tree_get(&a, op, true);
	x->exists = f->old_exists;
	x->mode = f->old_mode;
	buf_put(&x->data, f->old_data, f->old_len);
	x = tree_get(&b, np, true);
	x->exists = f->new_exists;
	x->mode = f->new_mode;
	buf_put(&x->data, f->new_data, f->new_len);
	if (strcmp(op, np)) {
		tree_get(&a, np, true);
		tree_get(&b, op, true);
	}

	assert_int_equal(unidiff_format(&out, f, o), 0);
	if (!out.len) {
		assert_true(f->old_exists == f->new_exists);
		goto done;
	}
	if ((r = patch_parse(&ps, "t.diff", out.ptr, out.len, NULL)) < 0)
		fail_msg("%s: parse: %s\n%s", what, decree_error_last(),
			 out.ptr);
	tree_copy(&t, &a);
	if (tree_apply(&t, ps, 0) < 0)
		fail_msg("%s: apply: %s\n%s", what, decree_error_last(),
			 out.ptr);
	tree_expect(&t, &b, what);
	tree_free(&t);
	tree_copy(&t, &b);
	if (tree_apply(&t, ps, PATCH_REVERSE) < 0)
		fail_msg("%s: reverse: %s\n%s", what, decree_error_last(),
			 out.ptr);
	tree_expect(&t, &a, what);
done:
	patch_set_free(ps);
	buf_release(&out);
	tree_free(&a);
	tree_free(&b);
	tree_free(&t);
}

/* A random pair; the buffers hold the contents. */
static bool allow_typechange = true;

static void random_pair(unidiff_file *f, buf *a, buf *b, bool text_only,
			bool links)
{
	static vocab_t vocab[16];
	size_t nv = rndn(15) + 1, kind = rndn(100);

	make_vocab(vocab, nv);
	make_text(a, vocab, nv, rndn(40));
	mutate(b, a, vocab, nv);
	f->old_exists = f->new_exists = true;
	f->old_mode = f->new_mode = rndn(8) ? F : X;
	if (kind < 8) {
		make_text(b, vocab, nv, rndn(40));
	} else if (kind < 16) {
		f->old_exists = false;
	} else if (kind < 24) {
		f->new_exists = false;
	} else if (kind < 28) {
		buf_clear(rndn(2) ? a : b);
	} else if (kind < 30) {
		buf_clear(a);
		buf_clear(b);
		f->old_exists = rndn(2);
		f->new_exists = !f->old_exists;
	} else if (kind < 36) {
		f->new_mode = f->old_mode == F ? X : F;
		if (rndn(2))
			buf_put(b, a->ptr, a->len), buf_truncate(b, a->len);
	} else if (kind < 40) {
		buf_clear(b);
		buf_put(b, a->ptr, a->len);
	} else if (kind < 48 && !text_only) {
		if (rndn(3))
			buf_put(a, "\0x\n", 3);
		if (rndn(3))
			buf_put(b, "\0y", 2);
		else
			buf_putc(b, '\0');
	} else if (kind < 54 && links) {
		buf_clear(a);
		buf_clear(b);
		buf_puts(a, rndn(2) ? "target/one" : "../t two");
		buf_puts(b, rndn(2) ? "target/\xc3\xa9" : "t3");
		f->old_mode = rndn(5) ? L : F;
		f->new_mode = rndn(5) ? L : F;
		if (!allow_typechange)
			f->new_mode = f->old_mode;
		if (f->old_mode != L && rndn(2))
			buf_putc(a, '\n');
	}
	f->old_data = a->ptr;
	f->old_len = f->old_exists ? a->len : 0;
	f->new_data = b->ptr;
	f->new_len = f->new_exists ? b->len : 0;
}

static void test_random_roundtrip(void **state)
{
	buf a = BUF_INIT, b = BUF_INIT;
	char what[64];
	int iter;

	UNUSED(state);
	test_seed("test_random_roundtrip");
	for (iter = 0; iter < 4000; iter++) {
		unidiff_file f = UNIDIFF_FILE_INIT;
		unidiff_options o = UNIDIFF_OPTIONS_INIT;

		random_pair(&f, &a, &b, false, true);
		f.old_path = rndn(10) ? "dir/file.txt" : "sp ace/\"q\"\t.c";
		if (rndn(20) == 0 && f.old_exists && f.new_exists)
			f.new_path = "moved/file.txt";
		o.context = (unsigned)rndn(6);
		if (rndn(2))
			o.flags |= UNIDIFF_NO_INDEX;
		if (rndn(10) == 0)
			o.xdiff.max_cost = 1;
		snprintf(what, sizeof(what), "iteration %d", iter);
		check_pair(&f, &o, what);
	}
	buf_release(&a);
	buf_release(&b);
}

/* ---- foreign formats -------------------------------------------------- */

struct apply_case {
	const char *name;
	const char *patch;
	const char *path; /* file the patch targets */
	const char *old;  /* NULL: absent */
	const char *new;  /* NULL: absent */
	uint32_t new_mode;
};

static void test_formats(void **state)
{
	static const struct apply_case cases[] = {
		{ "diff -u two files",
		  "--- old.txt\t2024-05-01 10:00:00.000000000 +0200\n"
		  "+++ new.txt\t2024-05-01 10:00:01.000000000 +0200\n"
		  "@@ -1,3 +1,3 @@\n"
		  " a\n"
		  "-b\n"
		  "+B\n"
		  " c\n",
		  "new.txt", "a\nb\nc\n", "a\nB\nc\n", 0 },
		{ "diff -ruN new file (epoch)",
		  "diff -ruN a/n.txt b/n.txt\n"
		  "--- a/n.txt\t1970-01-01 00:00:00.000000000 +0000\n"
		  "+++ b/n.txt\t2024-05-01 10:00:00.000000000 +0000\n"
		  "@@ -0,0 +1,2 @@\n"
		  "+x\n"
		  "+y\n",
		  "n.txt", NULL, "x\ny\n", 0 },
		{ "diff -ruN deleted file (epoch, other zone)",
		  "diff -ruN a/d/g b/d/g\n"
		  "--- a/d/g\t2024-05-01 10:00:00.000000000 -0500\n"
		  "+++ b/d/g\t1969-12-31 19:00:00.000000000 -0500\n"
		  "@@ -1 +0,0 @@\n"
		  "-x\n",
		  "d/g", "x\n", NULL, 0 },
		{ "diff -u with subdir, same top dir",
		  "--- src/f.c.orig\n"
		  "+++ src/f.c\n"
		  "@@ -1 +1 @@\n"
		  "-x\n"
		  "+y\n",
		  "src/f.c", "x\n", "y\n", 0 },
		{ "diff -u no newline, localized marker",
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1 +1 @@\n"
		  "-x\n"
		  "\\ Kein Zeilenumbruch am Dateiende.\n"
		  "+x\n",
		  "f", "x", "x\n", 0 },
		{ "git diff with index and mail text",
		  "From 123 Mon Sep 17 00:00:00 2001\n"
		  "Subject: [PATCH] fix\n"
		  "\n"
		  "---\n"
		  " f | 2 +-\n"
		  "\n"
		  "diff --git a/f b/f\n"
		  "index 587be6b..975fbec 100755\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,2 +1,2 @@\n"
		  "-x\n"
		  "+y\n"
		  " -- \n"
		  "-- \n"
		  "2.39.5\n",
		  "f", "x\n-- \n", "y\n-- \n", X },
		{ "git new file",
		  "diff --git a/n b/n\n"
		  "new file mode 100755\n"
		  "index 0000000..8ba3a16\n"
		  "--- /dev/null\n"
		  "+++ b/n\n"
		  "@@ -0,0 +1 @@\n"
		  "+n\n",
		  "n", NULL, "n\n", X },
		{ "git empty new file",
		  "diff --git a/e b/e\n"
		  "new file mode 100644\n"
		  "index 0000000..e69de29\n",
		  "e", NULL, "", F },
		{ "git deleted empty file",
		  "diff --git a/e b/e\n"
		  "deleted file mode 100644\n"
		  "index e69de29..0000000\n",
		  "e", "", NULL, 0 },
		{ "git mode change",
		  "diff --git a/s.sh b/s.sh\n"
		  "old mode 100644\n"
		  "new mode 100755\n",
		  "s.sh", "#!/bin/sh\n", "#!/bin/sh\n", X },
		{ "git quoted names",
		  "diff --git \"a/t\\tab\" \"b/t\\tab\"\n"
		  "--- \"a/t\\tab\"\n"
		  "+++ \"b/t\\tab\"\n"
		  "@@ -1 +1 @@\n"
		  "-a\n"
		  "+b\n",
		  "t\tab", "a\n", "b\n", 0 },
		{ "git octal names",
		  "diff --git \"a/\\303\\274\" \"b/\\303\\274\"\n"
		  "old mode 100644\n"
		  "new mode 100755\n",
		  "\xc3\xbc", "", "", X },
		{ "git space in name",
		  "diff --git a/my file b/my file\n"
		  "old mode 100644\n"
		  "new mode 100755\n",
		  "my file", "x\n", "x\n", X },
		{ "git space in name, tab after label",
		  "diff --git a/my file b/my file\n"
		  "--- a/my file\t\n"
		  "+++ b/my file\t\n"
		  "@@ -1 +1 @@\n"
		  "-a\n"
		  "+b\n",
		  "my file", "a\n", "b\n", 0 },
		{ "git --no-prefix --no-index",
		  "diff --git a/f b/f\n"
		  "index 587be6b..975fbec 100644\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1 +1 @@\n"
		  "-x\n"
		  "+y\n",
		  "f", "x\n", "y\n", F },
		{ "empty context line without its space",
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,3 +1,3 @@\n"
		  " a\n"
		  "\n"
		  "-b\n"
		  "+c\n",
		  "f", "a\n\nb\n", "a\n\nc\n", 0 },
		{ "crlf content",
		  "--- a/w\n"
		  "+++ b/w\n"
		  "@@ -1,2 +1,2 @@\n"
		  " a\r\n"
		  "-b\r\n"
		  "+c\r\n",
		  "w", "a\r\nb\r\n", "a\r\nc\r\n", 0 },
		{ "symlink via index mode",
		  "diff --git a/ln b/ln\n"
		  "index 1234567..89abcde 120000\n"
		  "--- a/ln\n"
		  "+++ b/ln\n"
		  "@@ -1 +1 @@\n"
		  "-t1\n"
		  "\\ No newline at end of file\n"
		  "+t2\n"
		  "\\ No newline at end of file\n",
		  "ln", "t1", "t2", L },
		{ "unified=0 insertion",
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,0 +2 @@\n"
		  "+b\n"
		  "@@ -3 +3,0 @@\n"
		  "-d\n",
		  "f", "a\nc\nd\n", "a\nb\nc\n", 0 },
		{ "decree binary",
		  "diff --git a/b b/b\n"
		  "index 1587bdc..0ae8040 100644\n"
		  "GIT binary patch\n"
		  "decree-base64 old 7\n"
		  "b2xkAGJpbg==\n"
		  "decree-base64 new 7\n"
		  "bmV3AGJpbg==\n"
		  "\n"
		  "diff --git a/z b/z\n"
		  "new file mode 100644\n"
		  "--- /dev/null\n"
		  "+++ b/z\n"
		  "@@ -0,0 +1 @@\n"
		  "+z\n",
		  "b", "old\0bin", "new\0bin", F },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct apply_case *c = &cases[i];
		size_t olen = c->old ? (strstr(c->name, "binary")
						? 7
						: strlen(c->old))
				     : 0;
		size_t nlen = c->new ? (strstr(c->name, "binary")
						? 7
						: strlen(c->new))
				     : 0;
		patch_set *ps = NULL;
		patch_result res = PATCH_RESULT_INIT;
		const patch_file *fp;

		if (patch_parse(&ps, c->name, c->patch, strlen(c->patch),
				NULL) < 0)
			fail_msg("%s: %s", c->name, decree_error_last());
		fp = &ps->files[0];
		assert_string_equal(patch_file_source(fp, false), c->path);
		assert_string_equal(patch_file_target(fp, false), c->path);
		if (patch_apply(&res, fp, c->old, olen, c->old != NULL, 0) < 0)
			fail_msg("%s: %s", c->name, decree_error_last());
		assert_int_equal(res.exists, c->new != NULL);
		assert_int_equal(res.data.len, nlen);
		assert_memory_equal(res.data.ptr, c->new ? c->new : "", nlen);
		assert_int_equal(res.mode, c->new_mode);
		if (patch_apply(&res, fp, c->new, nlen, c->new != NULL,
				PATCH_REVERSE) < 0)
			fail_msg("%s: reverse: %s", c->name,
				 decree_error_last());
		assert_int_equal(res.exists, c->old != NULL);
		assert_int_equal(res.data.len, olen);
		assert_memory_equal(res.data.ptr, c->old ? c->old : "", olen);
		patch_result_release(&res);
		patch_set_free(ps);
	}
}

static void test_rename_and_copy(void **state)
{
	static const char ren[] = "diff --git a/old name.c b/new name.c\n"
				  "similarity index 80%\n"
				  "rename from old name.c\n"
				  "rename to new name.c\n"
				  "index 1111111..2222222 100644\n"
				  "--- a/old name.c\n"
				  "+++ b/new name.c\n"
				  "@@ -1,2 +1,2 @@\n"
				  " a\n"
				  "-b\n"
				  "+c\n"
				  "diff --git a/x b/y\n"
				  "similarity index 100%\n"
				  "copy from x\n"
				  "copy to y\n";
	tree t = { NULL, 0, 0 }, want = { NULL, 0, 0 }, orig = { NULL, 0, 0 };
	patch_set *ps = NULL;
	tfile *f;

	UNUSED(state);
	assert_int_equal(patch_parse(&ps, "ren", ren, strlen(ren), NULL), 0);
	assert_int_equal(ps->nfiles, 2);
	assert_true(ps->files[0].is_rename);
	assert_string_equal(ps->files[0].old_path, "old name.c");
	assert_string_equal(ps->files[0].new_path, "new name.c");
	assert_true(ps->files[1].is_copy);
	assert_string_equal(patch_file_target(&ps->files[1], true), "y");

	f = tree_get(&orig, "old name.c", true);
	f->exists = true;
	f->mode = F;
	buf_puts(&f->data, "a\nb\n");
	f = tree_get(&orig, "x", true);
	f->exists = true;
	f->mode = X;
	buf_puts(&f->data, "xx\n");
	tree_get(&orig, "new name.c", true);
	tree_get(&orig, "y", true);
	tree_copy(&want, &orig);
	tree_get(&want, "old name.c", false)->exists = false;
	f = tree_get(&want, "new name.c", false);
	f->exists = true;
	f->mode = F;
	buf_puts(&f->data, "a\nc\n");
	f = tree_get(&want, "y", false);
	f->exists = true;
	f->mode = X;
	buf_puts(&f->data, "xx\n");

	tree_copy(&t, &orig);
	assert_int_equal(tree_apply(&t, ps, 0), 0);
	tree_expect(&t, &want, "rename forwards");
	assert_int_equal(tree_apply(&t, ps, PATCH_REVERSE), 0);
	tree_expect(&t, &orig, "rename reversed");
	tree_free(&t);
	tree_free(&want);
	tree_free(&orig);
	patch_set_free(ps);
}

/* ---- errors ----------------------------------------------------------- */

struct err_case {
	const char *name, *patch;
	int code;
	const char *msg; /* substring of the message */
};

static void test_parse_errors(void **state)
{
	static const struct err_case cases[] = {
		{ "empty", "", DECREE_EINVALID, "p.diff: no diff found" },
		{ "only text", "hello\nworld\n", DECREE_EINVALID,
		  "no diff found" },
		{ "hunk without header", "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "p.diff:1: hunk without a file header" },
		{ "absolute path",
		  "--- /etc/passwd\n+++ /etc/passwd\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "p.diff:3: unsafe path '/etc/passwd'" },
		/* git apply: "invalid path '/tmp/x/new.txt'" */
		{ "absolute after the prefix",
		  "--- /dev/null\n+++ b//tmp/x/new.txt\n"
		  "@@ -0,0 +1 @@\n+hi\n",
		  DECREE_EINVALID, "p.diff:3: unsafe path '/tmp/x/new.txt'" },
		{ "absolute after the prefix, git record",
		  "diff --git a//tmp/x b//tmp/x\nnew file mode 100644\n"
		  "--- /dev/null\n+++ b//tmp/x\n@@ -0,0 +1 @@\n+hi\n",
		  DECREE_EINVALID, "unsafe path '/tmp/x'" },
		{ "absolute after two components",
		  "--- a/d//etc/passwd\n+++ b/d//etc/passwd\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "unsafe path 'd//etc/passwd'" },
		/* a type change needs content: git apply refuses it too */
		{ "file to symlink by mode alone",
		  "diff --git a/x b/x\nold mode 100644\nnew mode 120000\n",
		  DECREE_EINVALID,
		  "p.diff:1: new mode 120000 of 'x' does not match old mode "
		  "100644" },
		{ "symlink to file by mode alone",
		  "diff --git a/l b/l\nold mode 120000\nnew mode 100755\n",
		  DECREE_EINVALID, "does not match old mode 120000" },
		{ "file to symlink with a hunk",
		  "diff --git a/x b/x\nold mode 100644\nnew mode 120000\n"
		  "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-hello\n+target\n"
		  "\\ No newline at end of file\n",
		  DECREE_EINVALID, "a change of file type is a deletion" },
		{ "dotdot",
		  "diff --git a/../x b/../x\n--- a/../x\n+++ b/../x\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "unsafe path '../x'" },
		{ "inner dotdot",
		  "--- a/d/../../x\n+++ b/d/../../x\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "unsafe path 'd/../../x'" },
		{ "dot git",
		  "diff --git a/.git/config b/.git/config\n"
		  "old mode 100644\nnew mode 100755\n",
		  DECREE_EINVALID, "path '.git/config' is inside '.git'" },
		/* only the root .decree is decree's; x/.decree is user data */
		{ "root dot decree",
		  "--- a/.decree/config.yml\n+++ b/.decree/config.yml\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "is inside '.decree'" },
		{ "rename into .git",
		  "diff --git a/x b/.git/hooks/pre-commit\n"
		  "rename from x\n"
		  "rename to .git/hooks/pre-commit\n",
		  DECREE_EINVALID, "inside '.git'" },
		{ "quoted nul",
		  "diff --git \"a/x\\000y\" \"b/x\\000y\"\n"
		  "old mode 100644\nnew mode 100755\n",
		  DECREE_EINVALID, "NUL byte" },
		{ "truncated hunk",
		  "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n",
		  DECREE_EINVALID, "p.diff:6: hunk #1 ends early" },
		{ "too many lines",
		  "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n-b\n+c\n",
		  DECREE_EINVALID, "has more lines than its header says" },
		{ "bad header", "--- a/f\n+++ b/f\n@@ -x +1 @@\n",
		  DECREE_EINVALID, "p.diff:3: malformed hunk header" },
		{ "line zero", "--- a/f\n+++ b/f\n@@ -0,1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "line 0" },
		{ "overlap",
		  "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n"
		  "@@ -2 +2 @@\n-c\n+d\n",
		  DECREE_EINVALID, "p.diff:7: hunk #2 overlaps" },
		{ "inconsistent new start",
		  "--- a/f\n+++ b/f\n"
		  "@@ -1 +1,2 @@\n-a\n+b\n+c\n"
		  "@@ -5 +5 @@\n-e\n+f\n",
		  DECREE_EINVALID, "hunk #2: new line 5 contradicts" },
		{ "marker mid-hunk",
		  "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n"
		  "\\ No newline at end of file\n-b\n+c\n+d\n",
		  DECREE_EINVALID, "line without newline before its end" },
		{ "unexpected line", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n*a\n",
		  DECREE_EINVALID, "p.diff:4: unexpected line in hunk #1" },
		{ "no final newline", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b",
		  DECREE_EINVALID, "middle of a line" },
		{ "binary files differ",
		  "diff --git a/b b/b\n"
		  "index 1111111..2222222 100644\n"
		  "Binary files a/b and b/b differ\n",
		  DECREE_EINVALID, "p.diff:3: binary change without content" },
		{ "plain binary differ", "Binary files a/b and b/b differ\n",
		  DECREE_EINVALID, "binary change without content" },
		{ "git literal with a damaged line",
		  "diff --git a/b b/b\n"
		  "index 1111111..2222222 100644\n"
		  "GIT binary patch\nliteral 7\nOcmb1QFGovu\n\n",
		  DECREE_EINVALID,
		  "p.diff:5: malformed binary patch data: base85 line for 15 "
		  "bytes has 10 characters, not 20" },
		{ "bad base64",
		  "diff --git a/b b/b\nGIT binary patch\n"
		  "decree-base64 old 1\nA===\n"
		  "decree-base64 new 1\nAA==\n\n",
		  DECREE_EINVALID, "malformed base64" },
		{ "base64 size",
		  "diff --git a/b b/b\nGIT binary patch\n"
		  "decree-base64 old 2\nAA==\n"
		  "decree-base64 new 1\nAA==\n\n",
		  DECREE_EINVALID, "p.diff:3: binary content has 1 bytes, 2" },
		{ "binary new file with old",
		  "diff --git a/b b/b\n"
		  "new file mode 100644\n"
		  "GIT binary patch\n"
		  "decree-base64 old 1\nAA==\n"
		  "decree-base64 new 1\nAA==\n\n",
		  DECREE_EINVALID, "does not match the file's existence" },
		{ "submodule",
		  "diff --git a/m b/m\nnew file mode 160000\n"
		  "index 0000000..1234567\n",
		  DECREE_EINVALID, "submodule" },
		{ "setuid mode",
		  "diff --git a/m b/m\nold mode 104755\n"
		  "new mode 100644\n",
		  DECREE_EINVALID, "unsupported file mode 104755" },
		{ "half mode", "diff --git a/m b/m\nold mode 100644\n",
		  DECREE_EINVALID, "must come together" },
		{ "empty git record", "diff --git a/m b/m\n", DECREE_EINVALID,
		  "changes nothing" },
		{ "names differ",
		  "diff --git a/x b/y\n--- a/x\n+++ b/y\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "differ without a rename header" },
		{ "new file not /dev/null",
		  "diff --git a/n b/n\n"
		  "new file mode 100644\n"
		  "--- a/n\n+++ b/n\n"
		  "@@ -0,0 +1 @@\n+x\n",
		  DECREE_EINVALID, "needs /dev/null" },
		{ "new file removes lines",
		  "--- /dev/null\n+++ b/n\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "hunk of a new file removes lines" },
		{ "unterminated quote", "diff --git \"a/x b/x\n",
		  DECREE_EINVALID, "unterminated quoted file name" },
		{ "--- without +++", "diff --git a/f b/f\n--- a/f\nfoo\n",
		  DECREE_EINVALID, "without \"+++\" line" },
		{ "strip too far", "--- f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
		  0, NULL },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct err_case *c = &cases[i];
		patch_set *ps = NULL;
		int r = patch_parse(&ps, "p.diff", c->patch, strlen(c->patch),
				    NULL);

		if (r != c->code)
			fail_msg("%s: returned %d (%s), expected %d", c->name,
				 r, decree_error_last(), c->code);
		if (c->msg && !strstr(decree_error_last(), c->msg))
			fail_msg("%s: message '%s' lacks '%s'", c->name,
				 decree_error_last(), c->msg);
		if (r < 0)
			assert_null(ps);
		patch_set_free(ps);
	}
}

/* Adversarial header lines stay cheap and give clear errors. */
static void test_long_lines(void **state)
{
	static const char spaced[] = "diff --git a/a b c b/a b c\n"
				     "old mode 100644\nnew mode 100755\n";
	buf text = BUF_INIT;
	patch_set *ps = NULL;
	size_t i;

	UNUSED(state);
	assert_int_equal(patch_parse(&ps, "s", spaced, strlen(spaced), NULL),
			 0);
	assert_string_equal(ps->files[0].new_path, "a b c");
	patch_set_free(ps);
	buf_puts(&text, "diff --git a/");
	for (i = 0; i < 200000; i++)
		buf_puts(&text, i % 3 ? " " : "b/");
	buf_puts(&text, "\nold mode 100644\nnew mode 100755\n");
	assert_int_equal(patch_parse(&ps, "s", text.ptr, text.len, NULL),
			 DECREE_EINVALID);
	assert_non_null(strstr(decree_error_last(), "s:1: cannot tell the "
						    "file name"));
	buf_release(&text);
}

static void test_strip_option(void **state)
{
	static const char text[] =
		"--- x/y/f\n+++ x/y/f\n@@ -1 +1 @@\n-a\n+b\n";
	patch_parse_options o = PATCH_PARSE_OPTIONS_INIT;
	patch_set *ps = NULL;

	UNUSED(state);
	o.strip = 2;
	assert_int_equal(patch_parse(&ps, "s", text, strlen(text), &o), 0);
	assert_string_equal(ps->files[0].new_path, "f");
	patch_set_free(ps);
	o.strip = 3;
	assert_int_equal(patch_parse(&ps, "s", text, strlen(text), &o),
			 DECREE_EINVALID);
	assert_non_null(strstr(decree_error_last(), "cannot strip 3"));
	o.strip = -1;
	assert_int_equal(patch_parse(&ps, "s", text, strlen(text), &o), 0);
	assert_string_equal(ps->files[0].new_path, "x/y/f");
	patch_set_free(ps);
}

struct conflict_case {
	const char *name, *patch, *old;
	bool old_exists;
	unsigned flags;
	int code;
	size_t hunk;
	const char *msg;
};

static void test_conflicts(void **state)
{
	static const char two[] = "--- a/f\n+++ b/f\n"
				  "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
				  "@@ -6,2 +6,2 @@\n f\n-g\n+G\n";
	static const struct conflict_case cases[] = {
		{ "second hunk", two, "a\nb\nc\nd\ne\nf\nX\n", true, 0,
		  DECREE_ECONFLICT, 2,
		  "c.diff:8: hunk #2 does not apply to 'f' at line 7: "
		  "expected \"g\", found \"X\"" },
		{ "short file", two, "a\nb\nc\nd\ne\n", true, 0,
		  DECREE_ECONFLICT, 2,
		  "hunk #2 does not apply to 'f': expected \"f\" at line 6, "
		  "found the end of the file" },
		{ "newline differs", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
		  "a", true, 0, DECREE_ECONFLICT, 1,
		  "(they differ in the final newline)" },
		{ "crlf differs", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
		  "a\r\n", true, 0, DECREE_ECONFLICT, 1, "found \"a\\x0d\"" },
		{ "reverse mismatch", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
		  "a\n", true, PATCH_REVERSE, DECREE_ECONFLICT, 1,
		  "expected \"b\", found \"a\"" },
		{ "create existing",
		  "--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n", "", true, 0,
		  DECREE_ECONFLICT, 0, "cannot create 'n': it already exists" },
		{ "patch missing", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
		  NULL, false, 0, DECREE_ECONFLICT, 0,
		  "cannot patch 'f': it does not exist" },
		{ "delete leaves content",
		  "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", "a\nb\n", true,
		  0, DECREE_ECONFLICT, 0, "cannot delete 'f'" },
		{ "binary differs",
		  "diff --git a/b b/b\nGIT binary patch\n"
		  "decree-base64 old 1\nAA==\n"
		  "decree-base64 new 1\nAQ==\n\n",
		  "\2", true, 0, DECREE_ECONFLICT, 0,
		  "binary file 'b' is not" },
		{ "append after no-eol line",
		  "--- a/f\n+++ b/f\n"
		  "@@ -1,0 +2 @@\n+b\n",
		  "a", true, 0, DECREE_EAPPLY, 0, "line without newline" },
		{ "offset refused", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-c\n+C\n",
		  "a\nb\nc\n", true, 0, DECREE_ECONFLICT, 1, "at line 1" },
		{ "offset allowed", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-c\n+C\n",
		  "a\nb\nc\n", true, PATCH_ALLOW_OFFSET, 0, 0, NULL },
		/* no context after the change: at the end of the file only
		 * (as git apply); so a second application is refused */
		{ "end anchor",
		  "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+b\n",
		  "a\nb\nb\n", true, PATCH_ALLOW_OFFSET, DECREE_ECONFLICT, 1,
		  "must match at the end of the file" },
		{ "start anchor",
		  "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+a\n b\n",
		  "a\na\nb\n", true, PATCH_ALLOW_OFFSET, DECREE_ECONFLICT, 1,
		  "at line 2: expected \"b\", found \"a\"" },
		{ "no context: anywhere",
		  "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-c\n+C\n", "a\nc\n", true,
		  PATCH_ALLOW_OFFSET, 0, 0, NULL },
		{ "beyond end", "--- a/f\n+++ b/f\n@@ -9,0 +10 @@\n+x\n", "a\n",
		  true, 0, DECREE_ECONFLICT, 1,
		  "it starts at line 10, the file has 1 lines" },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct conflict_case *c = &cases[i];
		patch_set *ps = NULL;
		patch_result res = PATCH_RESULT_INIT;
		int r;

		if (patch_parse(&ps, "c.diff", c->patch, strlen(c->patch),
				NULL) < 0)
			fail_msg("%s: %s", c->name, decree_error_last());
		r = patch_apply(&res, &ps->files[0], c->old,
				c->old ? strlen(c->old) : 0, c->old_exists,
				c->flags);
		if (r != c->code)
			fail_msg("%s: returned %d (%s)", c->name, r,
				 decree_error_last());
		if (c->msg && !strstr(decree_error_last(), c->msg))
			fail_msg("%s: message '%s' lacks '%s'", c->name,
				 decree_error_last(), c->msg);
		assert_int_equal(res.conflict_hunk, c->hunk);
		if (r < 0)
			assert_int_equal(res.data.len, 0);
		patch_result_release(&res);
		patch_set_free(ps);
	}
}

static void test_alloc_failure(void **state)
{
	static const char text[] =
		"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n"
		"-b\n+c\n"
		"diff --git a/b b/b\nnew file mode 100644\nGIT binary patch\n"
		"decree-base64 new 1\nAA==\n\n"
		"--- a/g\t2024-01-01 00:00:00 +0000\n+++ b/g\n"
		"@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n";
	unsigned long n;

	UNUSED(state);
	for (n = 1; n < 500; n++) {
		patch_set *ps = NULL;
		patch_result res = PATCH_RESULT_INIT;
		int r;

		alloc_fail_at(n);
		r = patch_parse(&ps, "a.diff", text, sizeof(text) - 1, NULL);
		if (r == 0)
			r = patch_apply(&res, &ps->files[0], "a\nb\n", 4, true,
					0);
		alloc_fail_at(0);
		patch_result_release(&res);
		patch_set_free(ps);
		if (r == 0)
			break;
		assert_int_equal(r, DECREE_ERROR);
	}
	assert_true(n < 500);
}

/* ---- oracles: GNU patch, git apply, diff -ruN, git diff --no-index ---- */

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run(const char *fmt, ...)
{
	buf cmd = BUF_INIT;
	va_list ap;
	int st;

	va_start(ap, fmt);
	assert_int_equal(buf_vprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	st = system(cmd.ptr);
	buf_release(&cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	if (len)
		assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static void read_file(buf *out, const char *path)
{
	FILE *fp = fopen(path, "rb");
	char tmp[4096];
	size_t n;

	assert_non_null(fp);
	buf_clear(out);
	while ((n = fread(tmp, 1, sizeof(tmp), fp)) > 0)
		buf_put(out, tmp, n);
	fclose(fp);
}

static void mkdirs_for(const char *path)
{
	char tmp[512];
	char *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(tmp, 0755);
		*p = '/';
	}
}

static void tree_write(const char *dir, const tree *t)
{
	size_t i;

	mkdir(dir, 0755);
	for (i = 0; i < t->n; i++) {
		const tfile *f = &t->v[i];
		char path[512];

		if (!f->exists)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, f->path);
		mkdirs_for(path);
		if (f->mode == L) {
			assert_int_equal(symlink(f->data.ptr, path), 0);
			continue;
		}
		write_file(path, f->data.ptr, f->data.len);
		assert_int_equal(chmod(path, f->mode == X ? 0755 : 0644), 0);
	}
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char path[512];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		assert_int_equal(lstat(path, &st), 0);
		n += S_ISDIR(st.st_mode) ? count_files(path) : 1;
	}
	closedir(d);
	return n;
}

/* The directory must hold exactly the existing files of `want`. */
static void tree_check_disk(const char *dir, const tree *want, const char *what)
{
	buf data = BUF_INIT;
	size_t i, n = 0;

	for (i = 0; i < want->n; i++) {
		const tfile *w = &want->v[i];
		char path[512], target[512];
		struct stat st;
		int r;

		snprintf(path, sizeof(path), "%s/%s", dir, w->path);
		r = lstat(path, &st);
		if (!w->exists) {
			if (r == 0)
				fail_msg("%s: '%s' should not exist", what,
					 w->path);
			continue;
		}
		n++;
		if (r != 0)
			fail_msg("%s: '%s' is missing", what, w->path);
		if (w->mode == L) {
			ssize_t k;
			if (!S_ISLNK(st.st_mode))
				fail_msg("%s: '%s' is not a symlink", what,
					 w->path);
			k = readlink(path, target, sizeof(target));
			assert_true(k >= 0);
			if ((size_t)k != w->data.len ||
			    memcmp(target, w->data.ptr, (size_t)k))
				fail_msg("%s: symlink '%s' points elsewhere",
					 what, w->path);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			fail_msg("%s: '%s' is not a file", what, w->path);
		if (((st.st_mode & 0100) != 0) != (w->mode == X))
			fail_msg("%s: '%s' has the wrong mode", what, w->path);
		read_file(&data, path);
		if (data.len != w->data.len ||
		    memcmp(data.ptr, w->data.ptr, data.len))
			fail_msg("%s: '%s' content differs", what, w->path);
	}
	if (count_files(dir) != n)
		fail_msg("%s: %zu files on disk, %zu expected (leftovers?)",
			 what, count_files(dir), n);
	buf_release(&data);
}

/* Two random trees; `text_only` leaves out binary content. */
static void random_trees(tree *a, tree *b, size_t n, bool links,
			 bool special_names)
{
	buf x = BUF_INIT, y = BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++) {
		unidiff_file f = UNIDIFF_FILE_INIT;
		char name[96];
		tfile *fa, *fb;

		if (special_names && i % 17 == 3)
			snprintf(name, sizeof(name), "sp ace/%03zu x", i);
		else if (special_names && i % 17 == 5)
			snprintf(name, sizeof(name), "q\"t\tab\\%03zu", i);
		else if (i % 5 == 1)
			snprintf(name, sizeof(name), "d%zu/sub/f%03zu", i % 3,
				 i);
		else
			snprintf(name, sizeof(name), "f%03zu", i);
		random_pair(&f, &x, &y, true, links);
		fa = tree_get(a, name, true);
		fb = tree_get(b, name, true);
		fa->exists = f.old_exists;
		fa->mode = f.old_mode;
		buf_put(&fa->data, f.old_data, f.old_len);
		fb->exists = f.new_exists;
		fb->mode = f.new_mode;
		buf_put(&fb->data, f.new_data, f.new_len);
	}
	buf_release(&x);
	buf_release(&y);
}

static void decree_diff_trees(buf *out, const tree *a, const tree *b)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		const tfile *fa = &a->v[i], *fb = &b->v[i];
		unidiff_file f = UNIDIFF_FILE_INIT;

		f.old_path = fa->path;
		f.old_exists = fa->exists;
		f.new_exists = fb->exists;
		f.old_mode = fa->mode;
		f.new_mode = fb->mode;
		f.old_data = fa->data.ptr;
		f.old_len = fa->data.len;
		f.new_data = fb->data.ptr;
		f.new_len = fb->data.len;
		assert_int_equal(unidiff_format(out, &f, NULL), 0);
	}
}

static char tmpdir[64];

static int setup_tmp(void **state)
{
	UNUSED(state);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/decree-patch-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int teardown_tmp(void **state)
{
	UNUSED(state);
	if (!getenv("DECREE_TEST_KEEP"))
		run("rm -rf '%s'", tmpdir);
	return 0;
}

static void require_tools(void)
{
	if (run("command -v patch >/dev/null 2>&1") != 0)
		fail_msg("GNU patch is required for the oracle tests");
	if (run("command -v git >/dev/null 2>&1") != 0)
		fail_msg("git is required for the oracle tests");
	if (run("command -v diff >/dev/null 2>&1") != 0)
		fail_msg("diff is required for the oracle tests");
}

#define GIT_ENV "HOME='%s' GIT_CONFIG_NOSYSTEM=1 GIT_CEILING_DIRECTORIES='%s' "

/* decree writes, GNU patch and git apply read, both directions. */
static void test_oracle_apply(void **state)
{
	tree a = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	buf diff = BUF_INIT;
	char path[256];
	int round;

	UNUSED(state);
	require_tools();
	test_seed("test_oracle_apply");
	for (round = 0; round < 2; round++) {
		const char *d = tmpdir;

		run("rm -rf '%s'/a '%s'/b '%s'/w*", d, d, d);
		tree_free(&a);
		tree_free(&b);
		/* GNU patch -R cannot undo a type change written as
		 * deletion + creation (it reverses records in file
		 * order): round 0 has them and skips patch -R. */
		allow_typechange = round == 0;
		random_trees(&a, &b, 160, true, true);
		allow_typechange = true;
		snprintf(path, sizeof(path), "%s/a", d);
		tree_write(path, &a);
		snprintf(path, sizeof(path), "%s/b", d);
		tree_write(path, &b);
		buf_clear(&diff);
		decree_diff_trees(&diff, &a, &b);
		snprintf(path, sizeof(path), "%s/decree.diff", d);
		write_file(path, diff.ptr, diff.len);

		assert_int_equal(run("cp -a '%s/a' '%s/w1' && cp -a '%s/b' "
				     "'%s/w2' && cp -a '%s/a' '%s/w3' && cp -a "
				     "'%s/b' '%s/w4'",
				     d, d, d, d, d, d, d, d),
				 0);
		if (run("cd '%s/w1' && patch -p1 -f -s --no-backup-if-mismatch "
			"-i ../decree.diff >../patch.log 2>&1",
			d) != 0)
			fail_msg("GNU patch failed, see %s/patch.log", d);
		snprintf(path, sizeof(path), "%s/w1", d);
		tree_check_disk(path, &b, "patch -p1");
		if (round && run("cd '%s/w2' && patch -p1 -R -f -s "
				 "--no-backup-if-mismatch -i ../decree.diff "
				 ">../patch-R.log 2>&1",
				 d) != 0)
			fail_msg("GNU patch -R failed, see %s/patch-R.log", d);
		snprintf(path, sizeof(path), "%s/w2", d);
		tree_check_disk(path, round ? &a : &b, "patch -p1 -R");
		if (run("cd '%s/w3' && " GIT_ENV "git apply ../decree.diff "
			">../git.log 2>&1",
			d, d, d) != 0)
			fail_msg("git apply failed, see %s/git.log", d);
		snprintf(path, sizeof(path), "%s/w3", d);
		tree_check_disk(path, &b, "git apply");
		if (run("cd '%s/w4' && " GIT_ENV "git apply -R ../decree.diff "
			">../git-R.log 2>&1",
			d, d, d) != 0)
			fail_msg("git apply -R failed, see %s/git-R.log", d);
		snprintf(path, sizeof(path), "%s/w4", d);
		tree_check_disk(path, &a, "git apply -R");
	}
	tree_free(&a);
	tree_free(&b);
	buf_release(&diff);
}

static void apply_foreign(const char *file, const tree *a, const tree *b,
			  const char *what)
{
	tree t = { NULL, 0, 0 };
	patch_set *ps = NULL;
	buf text = BUF_INIT;

	read_file(&text, file);
	if (patch_parse(&ps, what, text.ptr, text.len, NULL) < 0)
		fail_msg("%s: %s", what, decree_error_last());
	tree_copy(&t, a);
	if (tree_apply(&t, ps, 0) < 0)
		fail_msg("%s: %s", what, decree_error_last());
	tree_expect(&t, b, what);
	if (tree_apply(&t, ps, PATCH_REVERSE) < 0)
		fail_msg("%s -R: %s", what, decree_error_last());
	tree_expect(&t, a, what);
	tree_free(&t);
	patch_set_free(ps);
	buf_release(&text);
}

/*
 * git apply as the oracle for what must be refused: each patch is given
 * to `git apply --check` in a tree holding x (a regular file "hello\n")
 * and l (a symlink to "target"); git must refuse it (or the case is
 * wrong), and decree must refuse it too.  The last case is one both
 * accept, so that a broken harness cannot pass.
 */
static void test_oracle_refusals(void **state)
{
	static const struct {
		const char *name, *patch;
		bool refused;
	} cases[] = {
		{ "absolute after the prefix",
		  "--- /dev/null\n+++ b//tmp/x/new.txt\n@@ -0,0 +1 @@\n+hi\n",
		  true },
		{ "absolute after the prefix, git record",
		  "diff --git a//tmp/x b//tmp/x\nnew file mode 100644\n"
		  "--- /dev/null\n+++ b//tmp/x\n@@ -0,0 +1 @@\n+hi\n",
		  true },
		{ "file to symlink by mode alone",
		  "diff --git a/x b/x\nold mode 100644\nnew mode 120000\n",
		  true },
		{ "symlink to file by mode alone",
		  "diff --git a/l b/l\nold mode 120000\nnew mode 100644\n",
		  true },
		{ "file to symlink with a hunk",
		  "diff --git a/x b/x\nold mode 100644\nnew mode 120000\n"
		  "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-hello\n+target\n"
		  "\\ No newline at end of file\n",
		  true },
		{ "a mode change within the type",
		  "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n",
		  false },
	};
	const char *d = tmpdir;
	char path[256];

	UNUSED(state);
	require_tools();
	run("rm -rf '%s/o'", d);
	assert_int_equal(run("mkdir '%s/o' && echo hello >'%s/o/x' && "
			     "ln -s target '%s/o/l'",
			     d, d, d),
			 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		patch_set *ps = NULL;
		int git_rc, r;

		snprintf(path, sizeof(path), "%s/o.diff", d);
		write_file(path, cases[i].patch, strlen(cases[i].patch));
		git_rc = run("cd '%s/o' && " GIT_ENV "git apply --check "
			     "../o.diff >../o.log 2>&1",
			     d, d, d);
		if ((git_rc != 0) != cases[i].refused)
			fail_msg("%s: git apply --check exited %d",
				 cases[i].name, git_rc);
		r = patch_parse(&ps, "o.diff", cases[i].patch,
				strlen(cases[i].patch), NULL);
		if ((r < 0) != cases[i].refused)
			fail_msg("%s: decree %s it (%s)", cases[i].name,
				 r < 0 ? "refused" : "accepted",
				 r < 0 ? decree_error_last() : "");
		patch_set_free(ps);
	}
}

/* diff -ruN and git diff --no-index write, decree reads. */
static void test_oracle_parse(void **state)
{
	tree a = { NULL, 0, 0 }, b = { NULL, 0, 0 }, pa = { NULL, 0, 0 },
	     pb = { NULL, 0, 0 };
	const char *d = tmpdir;
	char path[256];
	size_t i;

	UNUSED(state);
	require_tools();
	test_seed("test_oracle_parse");
	run("rm -rf '%s'/a '%s'/b '%s'/w*", d, d, d);

	/* git diff --no-index: links, modes, type changes. */
	random_trees(&a, &b, 200, true, true);
	snprintf(path, sizeof(path), "%s/a", d);
	tree_write(path, &a);
	snprintf(path, sizeof(path), "%s/b", d);
	tree_write(path, &b);
	assert_int_equal(run("cd '%s' && " GIT_ENV "git diff --no-index "
			     "--no-renames --no-prefix --no-color a b "
			     ">git.diff",
			     d, d, d),
			 1);
	snprintf(path, sizeof(path), "%s/git.diff", d);
	apply_foreign(path, &a, &b, "git diff --no-index");

	/* diff -ruN follows symlinks and ignores modes: plain files. */
	run("rm -rf '%s'/a '%s'/b", d, d);
	random_trees(&pa, &pb, 200, false, false);
	for (i = 0; i < pa.n; i++) {
		pa.v[i].mode = pb.v[i].mode = F;
		/* To diff -N an absent file is an empty one. */
		if (!pa.v[i].exists && !pb.v[i].data.len)
			pa.v[i].exists = pb.v[i].exists;
		if (!pb.v[i].exists && !pa.v[i].data.len)
			pb.v[i].exists = pa.v[i].exists;
	}
	snprintf(path, sizeof(path), "%s/a", d);
	tree_write(path, &pa);
	snprintf(path, sizeof(path), "%s/b", d);
	tree_write(path, &pb);
	assert_int_equal(
		run("cd '%s' && LC_ALL=C diff -ruN a b >plain.diff", d), 1);
	snprintf(path, sizeof(path), "%s/plain.diff", d);
	apply_foreign(path, &pa, &pb, "diff -ruN");

	/* diff -u of single files, with and without -U0. */
	for (i = 0; i < 40; i++) {
		buf x = BUF_INIT, y = BUF_INIT, text = BUF_INIT;
		unidiff_file f = UNIDIFF_FILE_INIT;
		patch_set *ps = NULL;
		patch_result res = PATCH_RESULT_INIT;
		int st;

		random_pair(&f, &x, &y, true, false);
		snprintf(path, sizeof(path), "%s/old.txt", d);
		write_file(path, x.ptr, x.len);
		snprintf(path, sizeof(path), "%s/new.txt", d);
		write_file(path, y.ptr, y.len);
		st = run("cd '%s' && LC_ALL=C diff %s old.txt new.txt >u.diff",
			 d, i % 4 ? "-u" : "-U0");
		assert_true(st == 0 || st == 1);
		if (st == 1) {
			snprintf(path, sizeof(path), "%s/u.diff", d);
			read_file(&text, path);
			if (patch_parse(&ps, "u.diff", text.ptr, text.len,
					NULL) < 0)
				fail_msg("diff -u: %s", decree_error_last());
			assert_int_equal(ps->nfiles, 1);
			assert_string_equal(ps->files[0].new_path, "new.txt");
			if (patch_apply(&res, &ps->files[0], x.ptr, x.len, true,
					0) < 0)
				fail_msg("diff -u: %s", decree_error_last());
			assert_int_equal(res.data.len, y.len);
			assert_memory_equal(res.data.ptr, y.ptr, y.len);
			assert_int_equal(patch_apply(&res, &ps->files[0], y.ptr,
						     y.len, true,
						     PATCH_REVERSE),
					 0);
			assert_int_equal(res.data.len, x.len);
			assert_memory_equal(res.data.ptr, x.ptr, x.len);
		}
		patch_result_release(&res);
		patch_set_free(ps);
		buf_release(&x);
		buf_release(&y);
		buf_release(&text);
	}
	tree_free(&a);
	tree_free(&b);
	tree_free(&pa);
	tree_free(&pb);
}

/* Binary records: git apply refuses the whole patch, GNU patch skips. */
static void test_oracle_binary(void **state)
{
	tree a = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	const char *d = tmpdir;
	buf diff = BUF_INIT, log = BUF_INIT;
	char path[256];
	tfile *f;

	UNUSED(state);
	require_tools();
	run("rm -rf '%s'/a '%s'/b '%s'/w*", d, d, d);
	f = tree_get(&a, "bin", true);
	f->exists = true;
	f->mode = F;
	buf_put(&f->data, "o\0ld", 4);
	f = tree_get(&a, "new.bin", true);
	f = tree_get(&a, "txt", true);
	f->exists = true;
	f->mode = F;
	buf_puts(&f->data, "a\n");
	tree_copy(&b, &a);
	f = tree_get(&b, "bin", false);
	f->mode = X;
	buf_clear(&f->data);
	buf_put(&f->data, "n\0ew", 4);
	f = tree_get(&b, "new.bin", false);
	f->exists = true;
	f->mode = F;
	buf_put(&f->data, "\0", 1);
	f = tree_get(&b, "txt", false);
	buf_clear(&f->data);
	buf_puts(&f->data, "b\n");

	snprintf(path, sizeof(path), "%s/a", d);
	tree_write(path, &a);
	decree_diff_trees(&diff, &a, &b);
	snprintf(path, sizeof(path), "%s/decree.diff", d);
	write_file(path, diff.ptr, diff.len);
	assert_int_equal(run("cp -a '%s/a' '%s/w1' && cp -a '%s/a' '%s/w2'", d,
			     d, d, d),
			 0);

	assert_int_not_equal(run("cd '%s/w1' && " GIT_ENV "git apply "
				 "../decree.diff >../git.log 2>&1",
				 d, d, d),
			     0);
	snprintf(path, sizeof(path), "%s/w1", d);
	tree_check_disk(path, &a, "git apply leaves the tree alone");
	snprintf(path, sizeof(path), "%s/git.log", d);
	read_file(&log, path);
	assert_non_null(strstr(log.ptr, "unrecognized binary patch"));

	assert_int_equal(run("cd '%s/w2' && patch -p1 -f "
			     "--no-backup-if-mismatch -i ../decree.diff "
			     ">../patch.log 2>&1",
			     d),
			 1);
	snprintf(path, sizeof(path), "%s/patch.log", d);
	read_file(&log, path);
	assert_non_null(strstr(log.ptr, "File bin: git binary diffs are not "
					"supported"));
	assert_non_null(strstr(log.ptr, "File new.bin: git binary diffs are "
					"not supported"));
	/* Only the text file changed. */
	tree_get(&a, "txt", false)->data.len = 0;
	buf_puts(&tree_get(&a, "txt", false)->data, "b\n");
	snprintf(path, sizeof(path), "%s/w2", d);
	tree_check_disk(path, &a, "patch skips binary records");

	/* decree itself applies both ways. */
	{
		tree t = { NULL, 0, 0 }, a0 = { NULL, 0, 0 };
		patch_set *ps = NULL;

		tree_get(&a, "txt", false)->data.len = 0;
		buf_puts(&tree_get(&a, "txt", false)->data, "a\n");
		assert_int_equal(patch_parse(&ps, "b.diff", diff.ptr, diff.len,
					     NULL),
				 0);
		tree_copy(&t, &a);
		tree_copy(&a0, &a);
		assert_int_equal(tree_apply(&t, ps, 0), 0);
		tree_expect(&t, &b, "decree binary");
		assert_int_equal(tree_apply(&t, ps, PATCH_REVERSE), 0);
		tree_expect(&t, &a0, "decree binary -R");
		tree_free(&t);
		tree_free(&a0);
		patch_set_free(ps);
	}
	tree_free(&a);
	tree_free(&b);
	buf_release(&diff);
	buf_release(&log);
}

/* ---- fuzz corpus replay ----------------------------------------------- */

/* --- decree_patch_files ------------------------------------------------- */

typedef struct {
	char got[2048];
} files_seen;

static int on_patch_file(void *payload, const decree_diff_file *f)
{
	files_seen *fs = payload;
	size_t n = strlen(fs->got);

	snprintf(fs->got + n, sizeof(fs->got) - n,
		 "%s %c %o %o %s +%u -%u [%.*s]\n", f->path, f->status,
		 f->old_mode, f->new_mode, f->binary ? "bin" : "txt",
		 (unsigned)f->added, (unsigned)f->removed,
		 f->text ? (int)strcspn(f->text, "\n") : 4,
		 f->text ? f->text : "NULL");
	return 0;
}

static void test_patch_files(void **state)
{
	static const struct {
		const char *patch;
		int want_r;
		const char *want;
	} cases[] = {
		{ "", 0, "" },
		{ "diff --git a/a.txt b/a.txt\n"
		  "index 1111111..2222222 100644\n"
		  "--- a/a.txt\n+++ b/a.txt\n"
		  "@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
		  "diff --git a/key b/key\n"
		  "old mode 100600\nnew mode 100644\n"
		  "diff --git a/n.txt b/n.txt\n"
		  "new file mode 100755\n"
		  "index 0000000..3333333\n"
		  "--- /dev/null\n+++ b/n.txt\n"
		  "@@ -0,0 +1,2 @@\n+x\n+y\n"
		  "diff --git a/ln b/ln\n"
		  "deleted file mode 120000\n"
		  "index 4444444..0000000\n"
		  "--- a/ln\n+++ /dev/null\n"
		  "@@ -1 +0,0 @@\n-t\n\\ No newline at end of file\n"
		  "diff --git a/b.bin b/b.bin\n"
		  "index 5555555..6666666 100644\n"
		  "GIT binary patch\n"
		  "decree-base64 old 3\nYQBi\n"
		  "decree-base64 new 3\nYQBj\n\n",
		  0,
		  "a.txt M 644 644 txt +1 -1 [diff --git a/a.txt b/a.txt]\n"
		  "key M 600 644 txt +0 -0 [diff --git a/key b/key]\n"
		  "n.txt A 0 755 txt +2 -0 [diff --git a/n.txt b/n.txt]\n"
		  "ln D 120000 0 txt +0 -1 [diff --git a/ln b/ln]\n"
		  "b.bin M 644 644 bin +0 -0 [diff --git a/b.bin b/b.bin]\n" },
		/* a plain diff -u: no modes; the text from its first line */
		{ "Only in x: y\n--- f.c\t2026-01-01\n+++ f.c\t2026-01-02\n"
		  "@@ -1 +1 @@\n-a\n+b\n",
		  0, "f.c M 0 0 txt +1 -1 [--- f.c\t2026-01-01]\n" },
		{ "diff --git a/old b/new\nsimilarity index 100%\n"
		  "rename from old\nrename to new\n",
		  0, "new R 0 0 txt +0 -0 [diff --git a/old b/new]\n" },
		{ "no diff here\n", DECREE_EINVALID, "" },
		{ "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n",
		  DECREE_EINVALID, "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		files_seen fs = { "" };
		int r = decree_patch_files("t.diff", cases[i].patch,
					   strlen(cases[i].patch), -1,
					   on_patch_file, &fs);
		if (r != cases[i].want_r || strcmp(fs.got, cases[i].want))
			fail_msg("case %zu: r=%d (want %d)\n%s--- want:\n%s", i,
				 r, cases[i].want_r, fs.got, cases[i].want);
	}
}

static void test_corpus_replay(void **state)
{
	const char *env = getenv("DECREE_SRCDIR");
	char dir[512];
	DIR *dh;
	struct dirent *e;
	size_t n = 0;
	buf data = BUF_INIT;

	UNUSED(state);
	if (env)
		snprintf(dir, sizeof(dir), "%s/fuzz/corpus/patch", env);
	else
		snprintf(dir, sizeof(dir), "fuzz/corpus/patch");
	if (!(dh = opendir(dir))) {
		/* Run from elsewhere: find the tree through this file. */
		const char *f = __FILE__, *s = strstr(f, "tests/unit/");
		snprintf(dir, sizeof(dir), "%.*sfuzz/corpus/patch",
			 s ? (int)(s - f) : 0, f);
		dh = opendir(dir);
	}
	if (!dh)
		fail_msg("fuzz corpus not found (set DECREE_SRCDIR)");
	while ((e = readdir(dh)) != NULL) {
		char path[1024];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		read_file(&data, path);
		LLVMFuzzerTestOneInput((const uint8_t *)data.ptr, data.len);
		n++;
	}
	closedir(dh);
	buf_release(&data);
	print_message("replayed %zu corpus files\n", n);
	assert_true(n >= 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_rename_and_copy),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_strip_option),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_alloc_failure),
		cmocka_unit_test(test_random_roundtrip),
		cmocka_unit_test(test_oracle_refusals),
		cmocka_unit_test(test_oracle_apply),
		cmocka_unit_test(test_oracle_parse),
		cmocka_unit_test(test_oracle_binary),
		cmocka_unit_test(test_patch_files),
		cmocka_unit_test(test_corpus_replay),
	};

	if (getenv("DECREE_TEST_FILTER"))
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
