/*
 * fuzz_ignore.c - libFuzzer target for the ignore-file parser and matcher.
 *
 * The input is an ignore file.  Its first line doubles as a path, so the
 * fuzzer also explores the matcher with odd paths, not only odd patterns.
 * The file is parsed at the root and below "d", matched against fixed
 * paths, then served by a loader as the root .gitignore and as
 * d/.decreeignore of a matcher that answers ignore_matcher_check() and
 * ignore_matcher_excluded().  Nothing is asserted beyond "no crash, no
 * leak, no undefined behaviour"; the answers are checked against git by
 * tests/unit/test_ignore.c.
 */
#include "util/common.h"
#include "scan/ignore.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	const char *data;
	size_t size;
};

static int load(void *payload, const char *dir, const char *name, buf *out,
		bool *found)
{
	const struct input *in = payload;

	*found = (!*dir && !strcmp(name, ".gitignore")) ||
		 (!strcmp(dir, "d") && !strcmp(name, ".decreeignore"));
	return *found ? buf_put(out, in->data, in->size) : 0;
}

static const char *const paths[] = {
	"a",	      "a.o",	      "d",
	"d/a.o",      "d/e/f",	      "x/y/z",
	"foo",	      "foo/bar",      ".git",
	"a b",	      "a*",	      "[a]",
	"#x",	      "!x",	      "d/.decreeignore",
	".gitignore", "node_modules", "a/b/c/d/e/f/g",
	"ab/cd/ef",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nl = memchr(text, '\n', size);
	size_t plen = nl ? (size_t)(nl - text) : size;
	struct input in = { text, size };
	ignore_list *l = NULL;
	ignore_matcher *m = NULL;
	const char *const extra[] = { "*.tmp", NULL };
	size_t i;
	bool ign;
	int d;

	for (d = 0; d < 2; d++) {
		if (ignore_list_parse(&l, d ? "d" : "", text, size) < 0)
			return 0;
		for (i = 0; i < ARRAY_SIZE(paths); i++) {
			(void)ignore_list_match(l, paths[i], strlen(paths[i]),
						false);
			(void)ignore_list_match(l, paths[i], strlen(paths[i]),
						true);
		}
		(void)ignore_list_match(l, text, plen, false);
		(void)ignore_list_match(l, text, plen, true);
		ignore_list_free(l);
		l = NULL;
	}

	if (ignore_matcher_new(&m, load, &in, size & 1 ? extra : NULL) < 0)
		return 0;
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		size_t n = strlen(paths[i]);

		(void)ignore_matcher_check(m, paths[i], n, i & 1, &ign);
		(void)ignore_matcher_excluded(m, paths[i], n, !(i & 1), &ign);
	}
	/* Invalid paths are refused with an error; that is fine too. */
	(void)ignore_matcher_check(m, text, plen, false, &ign);
	(void)ignore_matcher_excluded(m, text, plen, true, &ign);
	ignore_matcher_free(m);
	return 0;
}
