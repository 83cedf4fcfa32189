/*
 * test_unidiff.c - the exact text of diff records.
 *
 * Table-driven: each case is one file pair and the bytes unidiff_format()
 * must append, written out in full so that a change of format shows up as
 * a readable test failure.  The index lines are checked against blob names
 * computed by `git hash-object` once, by hand.  Round trips through the
 * parser and the external oracles (GNU patch, git apply) live in
 * test_patch.c.
 */
#include "util/common.h"
#include "diff/unidiff.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <setjmp.h>
#include <cmocka.h>

#define F UNIDIFF_MODE_FILE
#define X UNIDIFF_MODE_EXEC
#define L UNIDIFF_MODE_LINK

struct fmt_case {
	const char *name;
	const char *old_path, *new_path;
	bool old_exists, new_exists;
	uint32_t old_mode, new_mode;
	const char *old_data;
	size_t old_len; /* 0: strlen */
	const char *new_data;
	size_t new_len;
	unsigned context; /* 0: default */
	const char *expect;
};

static void run_case(const struct fmt_case *c, unsigned flags)
{
	unidiff_options o = UNIDIFF_OPTIONS_INIT;
	unidiff_file f = UNIDIFF_FILE_INIT;
	buf out = BUF_INIT;

	o.flags = flags;
	if (c->context)
		o.context = c->context == 99 ? 0 : c->context;
	f.old_path = c->old_path;
	f.new_path = c->new_path;
	f.old_exists = c->old_exists;
	f.new_exists = c->new_exists;
	f.old_mode = c->old_mode;
	f.new_mode = c->new_mode;
	f.old_data = c->old_data;
	f.old_len = c->old_len ? c->old_len
			       : (c->old_data ? strlen(c->old_data) : 0);
	f.new_data = c->new_data;
	f.new_len = c->new_len ? c->new_len
			       : (c->new_data ? strlen(c->new_data) : 0);
	assert_int_equal(unidiff_format(&out, &f, &o), 0);
	if (strcmp(out.ptr, c->expect))
		fail_msg("%s: got\n%s\n--- expected\n%s", c->name, out.ptr,
			 c->expect);
	buf_release(&out);
}

static void test_records(void **state)
{
	static const struct fmt_case cases[] = {
		{ "identical", "a", NULL, true, true, F, F, "x\n", 0, "x\n", 0,
		  0, "" },
		{ "both absent", "a", NULL, false, false, F, F, NULL, 0, NULL,
		  0, 0, "" },
		{ "one line", "a.txt", NULL, true, true, F, F, "hello\n", 0,
		  "world\n", 0, 0,
		  "diff --git a/a.txt b/a.txt\n"
		  "--- a/a.txt\n"
		  "+++ b/a.txt\n"
		  "@@ -1 +1 @@\n"
		  "-hello\n"
		  "+world\n" },
		{ "new file", "d/n.txt", NULL, false, true, 0, F, NULL, 0,
		  "a\nb\n", 0, 0,
		  "diff --git a/d/n.txt b/d/n.txt\n"
		  "new file mode 100644\n"
		  "--- /dev/null\n"
		  "+++ b/d/n.txt\n"
		  "@@ -0,0 +1,2 @@\n"
		  "+a\n"
		  "+b\n" },
		{ "deleted file", "gone", NULL, true, false, X, 0, "a\n", 0,
		  NULL, 0, 0,
		  "diff --git a/gone b/gone\n"
		  "deleted file mode 100755\n"
		  "--- a/gone\n"
		  "+++ /dev/null\n"
		  "@@ -1 +0,0 @@\n"
		  "-a\n" },
		{ "new empty file", "e", NULL, false, true, 0, F, NULL, 0, "",
		  0, 0,
		  "diff --git a/e b/e\n"
		  "new file mode 100644\n" },
		{ "deleted empty file", "e", NULL, true, false, F, 0, "", 0,
		  NULL, 0, 0,
		  "diff --git a/e b/e\n"
		  "deleted file mode 100644\n" },
		{ "mode only", "run.sh", NULL, true, true, F, X, "x\n", 0,
		  "x\n", 0, 0,
		  "diff --git a/run.sh b/run.sh\n"
		  "old mode 100644\n"
		  "new mode 100755\n" },
		{ "mode and content", "run.sh", NULL, true, true, X, F, "x\n",
		  0, "y\n", 0, 0,
		  "diff --git a/run.sh b/run.sh\n"
		  "old mode 100755\n"
		  "new mode 100644\n"
		  "--- a/run.sh\n"
		  "+++ b/run.sh\n"
		  "@@ -1 +1 @@\n"
		  "-x\n"
		  "+y\n" },
		{ "empty to content", "f", NULL, true, true, F, F, "", 0, "a\n",
		  0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -0,0 +1 @@\n"
		  "+a\n" },
		{ "content to empty", "f", NULL, true, true, F, F, "a\nb\n", 0,
		  "", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,2 +0,0 @@\n"
		  "-a\n"
		  "-b\n" },
		{ "no newline old", "f", NULL, true, true, F, F, "a\nb", 0,
		  "a\nb\n", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,2 +1,2 @@\n"
		  " a\n"
		  "-b\n"
		  "\\ No newline at end of file\n"
		  "+b\n" },
		{ "no newline both", "f", NULL, true, true, F, F, "a\nb", 0,
		  "a\nc", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,2 +1,2 @@\n"
		  " a\n"
		  "-b\n"
		  "\\ No newline at end of file\n"
		  "+c\n"
		  "\\ No newline at end of file\n" },
		{ "no newline context", "f", NULL, true, true, F, F, "a\nz", 0,
		  "b\nz", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,2 +1,2 @@\n"
		  "-a\n"
		  "+b\n"
		  " z\n"
		  "\\ No newline at end of file\n" },
		{ "crlf", "w.txt", NULL, true, true, F, F, "a\r\nb\r\n", 0,
		  "a\r\nc\r\n", 0, 0,
		  "diff --git a/w.txt b/w.txt\n"
		  "--- a/w.txt\n"
		  "+++ b/w.txt\n"
		  "@@ -1,2 +1,2 @@\n"
		  " a\r\n"
		  "-b\r\n"
		  "+c\r\n" },
		{ "non-utf8", "l1", NULL, true, true, F, F, "caf\xe9\n", 0,
		  "caf\xe8\n", 0, 0,
		  "diff --git a/l1 b/l1\n"
		  "--- a/l1\n"
		  "+++ b/l1\n"
		  "@@ -1 +1 @@\n"
		  "-caf\xe9\n"
		  "+caf\xe8\n" },
		{ "new symlink", "ln", NULL, false, true, 0, L, NULL, 0,
		  "../target", 0, 0,
		  "diff --git a/ln b/ln\n"
		  "new file mode 120000\n"
		  "--- /dev/null\n"
		  "+++ b/ln\n"
		  "@@ -0,0 +1 @@\n"
		  "+../target\n"
		  "\\ No newline at end of file\n" },
		{ "symlink retarget", "ln", NULL, true, true, L, L, "t1", 0,
		  "t2", 0, 0,
		  "diff --git a/ln b/ln\n"
		  "--- a/ln\n"
		  "+++ b/ln\n"
		  "@@ -1 +1 @@\n"
		  "-t1\n"
		  "\\ No newline at end of file\n"
		  "+t2\n"
		  "\\ No newline at end of file\n" },
		{ "file becomes symlink", "p", NULL, true, true, F, L, "x\n", 0,
		  "x", 0, 0,
		  "diff --git a/p b/p\n"
		  "deleted file mode 100644\n"
		  "--- a/p\n"
		  "+++ /dev/null\n"
		  "@@ -1 +0,0 @@\n"
		  "-x\n"
		  "diff --git a/p b/p\n"
		  "new file mode 120000\n"
		  "--- /dev/null\n"
		  "+++ b/p\n"
		  "@@ -0,0 +1 @@\n"
		  "+x\n"
		  "\\ No newline at end of file\n" },
		{ "binary", "b.bin", NULL, true, true, F, F, "old\0bin", 7,
		  "new\0bin", 7, 0,
		  "diff --git a/b.bin b/b.bin\n"
		  "GIT binary patch\n"
		  "decree-base64 old 7\n"
		  "b2xkAGJpbg==\n"
		  "decree-base64 new 7\n"
		  "bmV3AGJpbg==\n"
		  "\n" },
		{ "binary new", "b.bin", NULL, false, true, 0, X, NULL, 0, "\0",
		  1, 0,
		  "diff --git a/b.bin b/b.bin\n"
		  "new file mode 100755\n"
		  "GIT binary patch\n"
		  "decree-base64 new 1\n"
		  "AA==\n"
		  "\n" },
		{ "binary to empty", "b", NULL, true, true, F, F, "\0\1", 2, "",
		  0, 0,
		  "diff --git a/b b/b\n"
		  "GIT binary patch\n"
		  "decree-base64 old 2\n"
		  "AAE=\n"
		  "decree-base64 new 0\n"
		  "\n" },
		{ "text to binary", "t", NULL, true, true, F, F, "a\n", 0,
		  "a\n\0", 3, 0,
		  "diff --git a/t b/t\n"
		  "GIT binary patch\n"
		  "decree-base64 old 2\n"
		  "YQo=\n"
		  "decree-base64 new 3\n"
		  "YQoA\n"
		  "\n" },
		{ "quoted name", "t\tab \"q\"/\xc3\xbc", NULL, true, true, F, F,
		  "a\n", 0, "b\n", 0, 0,
		  "diff --git \"a/t\\tab \\\"q\\\"/\\303\\274\" "
		  "\"b/t\\tab \\\"q\\\"/\\303\\274\"\n"
		  "--- \"a/t\\tab \\\"q\\\"/\\303\\274\"\t\n"
		  "+++ \"b/t\\tab \\\"q\\\"/\\303\\274\"\t\n"
		  "@@ -1 +1 @@\n"
		  "-a\n"
		  "+b\n" },
		{ "space in name", "my file", NULL, true, true, F, F, "a\n", 0,
		  "b\n", 0, 0,
		  "diff --git \"a/my file\" \"b/my file\"\n"
		  "--- a/my file\t\n"
		  "+++ b/my file\t\n"
		  "@@ -1 +1 @@\n"
		  "-a\n"
		  "+b\n" },
		{ "rename", "old.c", "new.c", true, true, F, F, "a\nb\nc\n", 0,
		  "a\nB\nc\n", 0, 0,
		  "diff --git a/old.c b/new.c\n"
		  "rename from old.c\n"
		  "rename to new.c\n"
		  "--- a/old.c\n"
		  "+++ b/new.c\n"
		  "@@ -1,3 +1,3 @@\n"
		  " a\n"
		  "-b\n"
		  "+B\n"
		  " c\n" },
		{ "pure rename", "o", "n", true, true, F, F, "a\n", 0, "a\n", 0,
		  0,
		  "diff --git a/o b/n\n"
		  "rename from o\n"
		  "rename to n\n" },
		{ "context merge (gap 6)", "f", NULL, true, true, F, F,
		  "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", 0,
		  "1\n2\nX\n4\n5\n6\n7\n8\n9\nY\n11\n12\n", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,12 +1,12 @@\n"
		  " 1\n 2\n-3\n+X\n 4\n 5\n 6\n 7\n 8\n 9\n-10\n+Y\n"
		  " 11\n 12\n" },
		{ "context split (gap 7)", "f", NULL, true, true, F, F,
		  "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n", 0,
		  "1\n2\nX\n4\n5\n6\n7\n8\n9\n10\nY\n12\n13\n", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,6 +1,6 @@\n"
		  " 1\n 2\n-3\n+X\n 4\n 5\n 6\n"
		  "@@ -8,6 +8,6 @@\n"
		  " 8\n 9\n 10\n-11\n+Y\n 12\n 13\n" },
		{ "context 1", "f", NULL, true, true, F, F, "1\n2\n3\n4\n5\n",
		  0, "1\n2\nX\n4\n5\n", 0, 1,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -2,3 +2,3 @@\n"
		  " 2\n-3\n+X\n 4\n" },
		{ "context 0", "f", NULL, true, true, F, F, "1\n2\n3\n", 0,
		  "1\n3\n", 0, 99,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -2 +1,0 @@\n"
		  "-2\n" },
		{ "insert at top", "f", NULL, true, true, F, F, "b\nc\n", 0,
		  "a\nb\nc\n", 0, 0,
		  "diff --git a/f b/f\n"
		  "--- a/f\n"
		  "+++ b/f\n"
		  "@@ -1,2 +1,3 @@\n"
		  "+a\n b\n c\n" },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i], UNIDIFF_NO_INDEX);
}

/* Blob names as `git hash-object` prints them. */
static void test_index_lines(void **state)
{
	static const struct fmt_case cases[] = {
		{ "index", "t.txt", NULL, true, true, F, F, "hello\n", 0,
		  "world\n", 0, 0,
		  "diff --git a/t.txt b/t.txt\n"
		  "index ce01362..cc628cc 100644\n"
		  "--- a/t.txt\n"
		  "+++ b/t.txt\n"
		  "@@ -1 +1 @@\n"
		  "-hello\n"
		  "+world\n" },
		{ "index new empty", "e", NULL, false, true, 0, F, NULL, 0, "",
		  0, 0,
		  "diff --git a/e b/e\n"
		  "new file mode 100644\n"
		  "index 0000000..e69de29\n" },
		{ "index deleted", "t", NULL, true, false, F, 0, "hello\n", 0,
		  NULL, 0, 0,
		  "diff --git a/t b/t\n"
		  "deleted file mode 100644\n"
		  "index ce01362..0000000\n"
		  "--- a/t\n"
		  "+++ /dev/null\n"
		  "@@ -1 +0,0 @@\n"
		  "-hello\n" },
		{ "index mode change", "t", NULL, true, true, F, X, "hello\n",
		  0, "world\n", 0, 0,
		  "diff --git a/t b/t\n"
		  "old mode 100644\n"
		  "new mode 100755\n"
		  "index ce01362..cc628cc\n"
		  "--- a/t\n"
		  "+++ b/t\n"
		  "@@ -1 +1 @@\n"
		  "-hello\n"
		  "+world\n" },
		{ "index mode only", "t", NULL, true, true, F, X, "hello\n", 0,
		  "hello\n", 0, 0,
		  "diff --git a/t b/t\n"
		  "old mode 100644\n"
		  "new mode 100755\n" },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i], 0);
}

static void test_quote_path(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain/name.c", "a/plain/name.c" },
		{ "sp ace", "a/sp ace" },
		{ "nl\nx", "\"a/nl\\nx\"" },
		{ "bs\\x", "\"a/bs\\\\x\"" },
		{ "\x01\x7f", "\"a/\\001\\177\"" },
		{ "\a\b\v\f\r", "\"a/\\a\\b\\v\\f\\r\"" },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		buf b = BUF_INIT;

		assert_int_equal(unidiff_quote_path(&b, "a/", cases[i].in), 0);
		assert_string_equal(b.ptr, cases[i].out);
		buf_release(&b);
	}
}

static void test_errors(void **state)
{
	unidiff_file f = UNIDIFF_FILE_INIT;
	buf out = BUF_INIT;

	UNUSED(state);
	f.old_exists = f.new_exists = true;
	f.old_mode = f.new_mode = F;
	assert_int_equal(unidiff_format(&out, &f, NULL), DECREE_EINVALID);
	f.old_path = "x";
	f.new_mode = 0104755; /* setuid: not a mode decree keeps */
	assert_int_equal(unidiff_format(&out, &f, NULL), DECREE_EINVALID);
	assert_int_equal(out.len, 0);
	assert_true(unidiff_is_binary("a\0", 2));
	assert_false(unidiff_is_binary("a", 1));
	assert_false(unidiff_is_binary(NULL, 0));
	buf_release(&out);
}

/* Big binary content wraps at 76 base64 characters. */
static void test_binary_wrapping(void **state)
{
	unidiff_file f = UNIDIFF_FILE_INIT;
	char data[200];
	buf out = BUF_INIT;
	const char *p;
	size_t i, lines = 0;

	UNUSED(state);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)i;
	f.new_path = "b";
	f.new_exists = true;
	f.new_mode = F;
	f.new_data = data;
	f.new_len = sizeof(data);
	assert_int_equal(unidiff_format(&out, &f, NULL), 0);
	p = strstr(out.ptr, "decree-base64 new 200\n");
	assert_non_null(p);
	p += strlen("decree-base64 new 200\n");
	while (*p && *p != '\n') {
		const char *nl = strchr(p, '\n');
		assert_non_null(nl);
		assert_true(nl - p <= 76);
		assert_int_equal((nl - p) % 4, 0);
		if (nl[1] != '\n')
			assert_int_equal(nl - p, 76);
		p = nl + 1;
		lines++;
	}
	assert_int_equal(lines, 4); /* 57 * 3 = 171 < 200 */
	buf_release(&out);
}

static void test_alloc_failure(void **state)
{
	unidiff_file f = UNIDIFF_FILE_INIT;
	unsigned long n;

	UNUSED(state);
	f.old_path = "f";
	f.old_exists = f.new_exists = true;
	f.old_mode = f.new_mode = F;
	f.old_data = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
	f.old_len = strlen(f.old_data);
	f.new_data = "a\nB\nc\nd\ne\nf\ng\nH\ni\nj";
	f.new_len = strlen(f.new_data);
	for (n = 1; n < 200; n++) {
		buf out = BUF_INIT;
		int r;

		alloc_fail_at(n);
		r = unidiff_format(&out, &f, NULL);
		alloc_fail_at(0);
		buf_release(&out);
		if (r == 0)
			break;
		assert_int_equal(r, DECREE_ERROR);
	}
	assert_true(n < 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_index_lines),
		cmocka_unit_test(test_quote_path),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_binary_wrapping),
		cmocka_unit_test(test_alloc_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
