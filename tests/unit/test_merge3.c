/*
 * test_merge3.c - the three-way text merge on its own.
 *
 * The table's expected outputs and conflict counts are what
 * `git merge-file -p [--diff3] -L ours -L base -L theirs` printed and
 * returned for the same inputs (git 2.39); tests/cli/merge_oracle.sh
 * asks git again on 50 fixtures and on random triples.  Here: the table
 * in both styles, conflict regions, labels and marker sizes, bad
 * parameters, and every allocation failing in turn.
 */
#include "util/common.h"
#include "merge/merge3.h"
#include "util/alloc.h"
#include "util/error.h"

#include <setjmp.h>
#include <cmocka.h>

typedef struct {
	const char *name;
	int diff3;
	const char *base, *ours, *theirs, *want;
	int conflicts;
} m3_case;

static const m3_case cases[] = {
	{ "different hunks merge", 0, "a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n",
	  "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", 0 },
	{ "different hunks merge", 1, "a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n",
	  "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", 0 },
	{ "adjacent lines conflict", 0, "a\nb\nc\nd\n", "a\nB\nc\nd\n",
	  "a\nb\nC\nd\n",
	  "a\n<<<<<<< ours\nB\nc\n=======\nb\nC\n>>>>>>> theirs\nd\n", 1 },
	{ "adjacent lines conflict", 1, "a\nb\nc\nd\n", "a\nB\nc\nd\n",
	  "a\nb\nC\nd\n",
	  "a\n<<<<<<< ours\nB\nc\n||||||| base\nb\nc\n=======\nb\nC\n>>>>>>> theirs\nd\n",
	  1 },
	{ "same hunk conflict", 0, "a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n",
	  "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\nc\n", 1 },
	{ "same hunk conflict", 1, "a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n",
	  "a\n<<<<<<< ours\nX\n||||||| base\nb\n=======\nY\n>>>>>>> theirs\nc\n",
	  1 },
	{ "identical change clean", 0, "a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\n",
	  "a\nX\nc\n", 0 },
	{ "identical change clean", 1, "a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\n",
	  "a\nX\nc\n", 0 },
	{ "insertions at one point", 0, "a\nb\n", "a\nx\nb\n", "a\ny\nb\n",
	  "a\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\nb\n", 1 },
	{ "insertions at one point", 1, "a\nb\n", "a\nx\nb\n", "a\ny\nb\n",
	  "a\n<<<<<<< ours\nx\n||||||| base\n=======\ny\n>>>>>>> theirs\nb\n",
	  1 },
	{ "insert start and end", 0, "a\nb\n", "x\na\nb\n", "a\nb\ny\n",
	  "x\na\nb\ny\n", 0 },
	{ "insert start and end", 1, "a\nb\n", "x\na\nb\n", "a\nb\ny\n",
	  "x\na\nb\ny\n", 0 },
	{ "crlf kept", 0, "a\r\nb\r\nc\r\nd\r\n", "A\r\nb\r\nc\r\nd\r\n",
	  "a\r\nb\r\nc\r\nD\r\n", "A\r\nb\r\nc\r\nD\r\n", 0 },
	{ "crlf kept", 1, "a\r\nb\r\nc\r\nd\r\n", "A\r\nb\r\nc\r\nd\r\n",
	  "a\r\nb\r\nc\r\nD\r\n", "A\r\nb\r\nc\r\nD\r\n", 0 },
	{ "crlf markers", 0, "a\r\nb\r\nc\r\n", "a\r\nX\r\nc\r\n",
	  "a\r\nY\r\nc\r\n",
	  "a\r\n<<<<<<< ours\r\nX\r\n=======\r\nY\r\n>>>>>>> theirs\r\nc\r\n",
	  1 },
	{ "crlf markers", 1, "a\r\nb\r\nc\r\n", "a\r\nX\r\nc\r\n",
	  "a\r\nY\r\nc\r\n",
	  "a\r\n<<<<<<< ours\r\nX\r\n||||||| base\r\nb\r\n=======\r\nY\r\n>>>>>>> theirs\r\nc\r\n",
	  1 },
	{ "no final newline theirs", 0, "a\nb\nc\nd\n", "A\nb\nc\nd\n",
	  "a\nb\nc\nd", "A\nb\nc\nd", 0 },
	{ "no final newline theirs", 1, "a\nb\nc\nd\n", "A\nb\nc\nd\n",
	  "a\nb\nc\nd", "A\nb\nc\nd", 0 },
	{ "no final newline conflict", 0, "a\nb", "a\nc", "a\nd",
	  "a\n<<<<<<< ours\nc\n=======\nd\n>>>>>>> theirs\n", 1 },
	{ "no final newline conflict", 1, "a\nb", "a\nc", "a\nd",
	  "a\n<<<<<<< ours\nc\n||||||| base\nb\n=======\nd\n>>>>>>> theirs\n",
	  1 },
	{ "empty base add/add", 0, "", "a\nb\nc\n", "a\nx\nc\n",
	  "a\n<<<<<<< ours\nb\n=======\nx\n>>>>>>> theirs\nc\n", 1 },
	{ "empty base add/add", 1, "", "a\nb\nc\n", "a\nx\nc\n",
	  "<<<<<<< ours\na\nb\nc\n||||||| base\n=======\na\nx\nc\n>>>>>>> theirs\n",
	  1 },
	{ "empty base one side empty", 0, "", "", "a\n", "a\n", 0 },
	{ "empty base one side empty", 1, "", "", "a\n", "a\n", 0 },
	{ "delete all vs untouched", 0, "a\nb\n", "", "a\nb\n", "", 0 },
	{ "delete all vs untouched", 1, "a\nb\n", "", "a\nb\n", "", 0 },
	{ "zealous join", 0, "a\nb\nc\nd\ne\n", "a\nX\nc\nY\ne\n",
	  "a\nP\nc\nQ\ne\n",
	  "a\n<<<<<<< ours\nX\nc\nY\n=======\nP\nc\nQ\n>>>>>>> theirs\ne\n",
	  1 },
	{ "zealous join", 1, "a\nb\nc\nd\ne\n", "a\nX\nc\nY\ne\n",
	  "a\nP\nc\nQ\ne\n",
	  "a\n<<<<<<< ours\nX\n||||||| base\nb\n=======\nP\n>>>>>>> theirs\nc\n<<<<<<< ours\nY\n||||||| base\nd\n=======\nQ\n>>>>>>> theirs\ne\n",
	  2 },
	{ "common lines leave the conflict", 0, "a\nb\nc\n", "a\nX\nZ\nc\n",
	  "a\nY\nZ\nc\n",
	  "a\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> theirs\nZ\nc\n", 1 },
	{ "common lines leave the conflict", 1, "a\nb\nc\n", "a\nX\nZ\nc\n",
	  "a\nY\nZ\nc\n",
	  "a\n<<<<<<< ours\nX\nZ\n||||||| base\nb\n=======\nY\nZ\n>>>>>>> theirs\nc\n",
	  1 },
};

static int run(merge3_result *r, const char *b, const char *o, const char *t,
	       int diff3)
{
	merge3_params p = MERGE3_PARAMS_INIT;

	p.ours_label = "ours";
	p.base_label = "base";
	p.theirs_label = "theirs";
	p.style = diff3 ? MERGE3_STYLE_DIFF3 : MERGE3_STYLE_MERGE;
	return merge3(r, b, strlen(b), o, strlen(o), t, strlen(t), &p);
}

static void test_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const m3_case *c = &cases[i];
		merge3_result r = MERGE3_RESULT_INIT;

		assert_int_equal(run(&r, c->base, c->ours, c->theirs, c->diff3),
				 0);
		if (r.nconflicts != (size_t)c->conflicts ||
		    r.len != strlen(c->want) || memcmp(r.ptr, c->want, r.len))
			fail_msg("%s%s: got %zu conflicts:\n%s\nwanted %d:\n%s",
				 c->name, c->diff3 ? " (diff3)" : "",
				 r.nconflicts, r.ptr, c->conflicts, c->want);
		assert_int_equal(r.ptr[r.len], '\0');
		merge3_result_release(&r);
		assert_null(r.ptr);
	}
}

static void test_regions(void **state)
{
	merge3_result r = MERGE3_RESULT_INIT;

	(void)state;
	/* zealous: the shared "Z" leaves the conflict; base line 1 (b) is
	 * what the overlapping changes replaced */
	assert_int_equal(
		run(&r, "a\nb\nc\n", "a\nX\nZ\nc\n", "a\nY\nZ\nc\n", 0), 0);
	assert_int_equal(r.nconflicts, 1);
	assert_int_equal(r.conflicts[0].base_start, 1);
	assert_int_equal(r.conflicts[0].base_count, 1);
	assert_int_equal(r.conflicts[0].ours_start, 1);
	assert_int_equal(r.conflicts[0].ours_count, 1);
	assert_int_equal(r.conflicts[0].theirs_start, 1);
	assert_int_equal(r.conflicts[0].theirs_count, 1);
	merge3_result_release(&r);

	/* two separate conflicts, far apart */
	assert_int_equal(run(&r, "a\nb\nc\nd\ne\nf\ng\nh\n",
			     "A\nb\nc\nd\ne\nf\ng\nH\n",
			     "a1\nb\nc\nd\ne\nf\ng\nh1\n", 0),
			 0);
	assert_int_equal(r.nconflicts, 2);
	assert_int_equal(r.conflicts[0].ours_start, 0);
	assert_int_equal(r.conflicts[1].base_start, 7);
	assert_int_equal(r.conflicts[1].ours_start, 7);
	assert_int_equal(r.conflicts[1].theirs_start, 7);
	merge3_result_release(&r);

	/* diff3: the base lines are shown and reported */
	assert_int_equal(
		run(&r, "a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n", 1), 0);
	assert_int_equal(r.nconflicts, 1);
	assert_int_equal(r.conflicts[0].base_start, 1);
	assert_int_equal(r.conflicts[0].base_count, 2);
	assert_int_equal(r.conflicts[0].ours_count, 2);
	assert_int_equal(r.conflicts[0].theirs_count, 2);
	assert_non_null(strstr(r.ptr, "||||||| base\nb\nc\n=======\n"));
	merge3_result_release(&r);
}

static void test_labels_and_markers(void **state)
{
	merge3_params p = MERGE3_PARAMS_INIT;
	merge3_result r = MERGE3_RESULT_INIT;

	(void)state;
	/* no labels: bare markers; marker_size 3 */
	p.marker_size = 3;
	assert_int_equal(merge3(&r, "a\n", 2, "b\n", 2, "c\n", 2, &p), 0);
	assert_string_equal(r.ptr, "<<<\nb\n===\nc\n>>>\n");
	merge3_result_release(&r);
	/* NULL params: defaults; empty inputs give an empty, owned string */
	assert_int_equal(merge3(&r, NULL, 0, NULL, 0, NULL, 0, NULL), 0);
	assert_non_null(r.ptr);
	assert_int_equal(r.len, 0);
	assert_int_equal(r.nconflicts, 0);
	merge3_result_release(&r);
	merge3_result_release(NULL);
}

static void test_bad_params(void **state)
{
	merge3_params p = MERGE3_PARAMS_INIT;
	merge3_result r = MERGE3_RESULT_INIT;

	(void)state;
	p.version = 99;
	assert_int_equal(merge3(&r, "", 0, "", 0, "", 0, &p), DECREE_EINVALID);
	assert_null(r.ptr);
	p.version = MERGE3_PARAMS_VERSION;
	p.ours_label = "two\nlines";
	assert_int_equal(merge3(&r, "", 0, "", 0, "", 0, &p), DECREE_EINVALID);
	assert_non_null(strstr(error_last(), "invalid"));
	p.ours_label = NULL;
	p.style = 7;
	assert_int_equal(merge3(&r, "", 0, "", 0, "", 0, &p), DECREE_EINVALID);
}

/* Every allocation of a conflicting merge fails in turn: an error, no
 * leak (ASan), and the result left empty. */
static void test_alloc_failures(void **state)
{
	unsigned long k, total;
	merge3_result r = MERGE3_RESULT_INIT;
	const char *b = "a\nb\nc\nd\ne\nf\n", *o = "a\nX\nc\nd\nY\nf\n",
		   *t = "a\nP\nc\nd\nQ\nf\nz\n";

	(void)state;
	alloc_fail_at(0);
	k = alloc_count();
	assert_int_equal(run(&r, b, o, t, 0), 0);
	total = alloc_count() - k;
	merge3_result_release(&r);
	assert_true(total > 5);
	for (k = 1; k <= total; k++) {
		alloc_fail_at(k);
		assert_int_equal(run(&r, b, o, t, 0), DECREE_ERROR);
		alloc_fail_at(0);
		assert_null(r.ptr);
		assert_null(r.conflicts);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_regions),
		cmocka_unit_test(test_labels_and_markers),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
