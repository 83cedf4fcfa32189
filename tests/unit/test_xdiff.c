/*
 * test_xdiff.c - the line diff core on its own.
 *
 * Every edit script is checked by replaying it (old + edits == new, and
 * the lines it keeps are equal on both sides).  With XDIFF_MINIMAL the
 * script length is compared with an O(NM) dynamic-programming LCS, so the
 * Myers core is proven shortest on thousands of seeded random pairs; the
 * default mode and a tiny cost limit are checked for validity only.
 * Random tests print their seed; DECREE_TEST_SEED=<n> replays one run.
 */
#include "util/common.h"
#include "diff/xdiff.h"
#include "util/alloc.h"
#include "util/buf.h"

#include <setjmp.h>
#include <time.h>
#include <cmocka.h>

#include "testutil.h"

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

static uint64_t test_seed(void)
{
	const char *s = getenv("DECREE_TEST_SEED");
	uint64_t seed;

	if (s && *s)
		seed = strtoull(s, NULL, 0);
	else
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	return seed;
}

/* A vocabulary of short lines, some with CR, some non-UTF-8. */
static void make_vocab(char vocab[][16], size_t n)
{
	size_t i, j, len;

	for (i = 0; i < n; i++) {
		len = rndn(6);
		for (j = 0; j < len; j++) {
			size_t r = rndn(20);
			vocab[i][j] = r == 0   ? (char)0xe9
				      : r == 1 ? '\t'
					       : (char)('a' + rndn(4));
		}
		if (rndn(8) == 0)
			vocab[i][len++] = '\r';
		vocab[i][len] = '\0';
	}
}

static void make_text(buf *out, char vocab[][16], size_t nvocab, size_t nlines)
{
	size_t i;

	buf_clear(out);
	for (i = 0; i < nlines; i++) {
		assert_int_equal(buf_puts(out, vocab[rndn(nvocab)]), 0);
		assert_int_equal(buf_putc(out, '\n'), 0);
	}
	if (out->len && rndn(3) == 0)
		buf_truncate(out, out->len - 1);
}

/* New text: old with random runs deleted, replaced and inserted. */
static void mutate(buf *out, const buf *old, char vocab[][16], size_t nvocab)
{
	xdiff_lines l = XDIFF_LINES_INIT;
	size_t i, k;

	assert_int_equal(xdiff_lines_split(&l, old->ptr, old->len), 0);
	buf_clear(out);
	for (i = 0; i <= l.nlines; i++) {
		size_t r = rndn(10);
		if (r == 0) { /* insert */
			for (k = rndn(4) + 1; k; k--) {
				buf_puts(out, vocab[rndn(nvocab)]);
				buf_putc(out, '\n');
			}
		}
		if (i == l.nlines)
			break;
		if (r == 1 || r == 2) /* delete */
			continue;
		if (r == 3) { /* replace */
			buf_puts(out, vocab[rndn(nvocab)]);
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

/* ---- checking an edit script ----------------------------------------- */

typedef struct {
	xdiff_edit *v;
	size_t n, cap;
} edits;

static int collect(const xdiff_edit *e, void *payload)
{
	edits *es = payload;

	if (GROW(es->v, es->cap, es->n + 1) < 0)
		return -1;
	es->v[es->n++] = *e;
	return 0;
}

static bool line_eq(const char *a, const xdiff_lines *la, size_t i,
		    const char *b, const xdiff_lines *lb, size_t j)
{
	size_t n = la->start[i + 1] - la->start[i];

	return n == lb->start[j + 1] - lb->start[j] &&
	       !memcmp(a + la->start[i], b + lb->start[j], n);
}

/* Replays the script; returns its cost (lines deleted + inserted). */
static size_t check_script(const char *a, size_t alen, const char *b,
			   size_t blen, const edits *es)
{
	xdiff_lines la = XDIFF_LINES_INIT, lb = XDIFF_LINES_INIT;
	size_t i = 0, j = 0, k, cost = 0;
	buf out = BUF_INIT;

	assert_int_equal(xdiff_lines_split(&la, a, alen), 0);
	assert_int_equal(xdiff_lines_split(&lb, b, blen), 0);
	for (k = 0; k <= es->n; k++) {
		size_t os = k < es->n ? es->v[k].old_start : la.nlines;
		size_t ns = k < es->n ? es->v[k].new_start : lb.nlines;

		assert_true(os >= i && ns >= j);
		assert_int_equal(os - i, ns - j);
		for (; i < os; i++, j++) {
			assert_true(line_eq(a, &la, i, b, &lb, j));
			buf_put(&out, a + la.start[i],
				la.start[i + 1] - la.start[i]);
		}
		if (k == es->n)
			break;
		assert_true(es->v[k].old_count || es->v[k].new_count);
		if (k > 0) /* groups are separated by kept lines */
			assert_true(os > es->v[k - 1].old_start +
						 es->v[k - 1].old_count);
		assert_true(os + es->v[k].old_count <= la.nlines);
		assert_true(ns + es->v[k].new_count <= lb.nlines);
		i = os + es->v[k].old_count;
		j = ns + es->v[k].new_count;
		buf_put(&out, b + lb.start[ns], lb.start[j] - lb.start[ns]);
		cost += es->v[k].old_count + es->v[k].new_count;
	}
	assert_int_equal(out.len, blen);
	assert_memory_equal(out.ptr, b, blen);
	buf_release(&out);
	xdiff_lines_release(&la);
	xdiff_lines_release(&lb);
	return cost;
}

static size_t run_diff(const char *a, size_t alen, const char *b, size_t blen,
		       unsigned flags, size_t max_cost)
{
	xdiff_params p = XDIFF_PARAMS_INIT;
	edits es = { NULL, 0, 0 };
	size_t cost;

	p.flags = flags;
	p.max_cost = max_cost;
	assert_int_equal(xdiff_diff(a, alen, b, blen, &p, collect, &es), 0);
	cost = check_script(a, alen, b, blen, &es);
	decree_free(es.v);
	return cost;
}

/* Shortest script cost by dynamic programming (small inputs only). */
static size_t dp_cost(const char *a, size_t alen, const char *b, size_t blen)
{
	xdiff_lines la = XDIFF_LINES_INIT, lb = XDIFF_LINES_INIT;
	size_t *row, *prev, i, j, n, m, lcs;

	assert_int_equal(xdiff_lines_split(&la, a, alen), 0);
	assert_int_equal(xdiff_lines_split(&lb, b, blen), 0);
	n = la.nlines;
	m = lb.nlines;
	row = calloc(m + 1, sizeof(*row));
	prev = calloc(m + 1, sizeof(*prev));
	assert_non_null(row);
	assert_non_null(prev);
	for (i = 1; i <= n; i++) {
		size_t *t;
		for (j = 1; j <= m; j++) {
			if (line_eq(a, &la, i - 1, b, &lb, j - 1))
				row[j] = prev[j - 1] + 1;
			else
				row[j] = row[j - 1] > prev[j] ? row[j - 1]
							      : prev[j];
		}
		t = prev;
		prev = row;
		row = t;
	}
	lcs = prev[m];
	free(row);
	free(prev);
	xdiff_lines_release(&la);
	xdiff_lines_release(&lb);
	return n + m - 2 * lcs;
}

/* ---- table-driven edge cases ------------------------------------------ */

struct edit_case {
	const char *name, *a, *b;
	size_t nedits;
	xdiff_edit first;
};

static void test_table(void **state)
{
	static const struct edit_case cases[] = {
		{ "both empty", "", "", 0, { 0, 0, 0, 0 } },
		{ "identical", "a\nb\n", "a\nb\n", 0, { 0, 0, 0, 0 } },
		{ "all added", "", "a\nb\n", 1, { 0, 0, 0, 2 } },
		{ "all deleted", "a\nb\n", "", 1, { 0, 2, 0, 0 } },
		{ "one line changed", "a\n", "b\n", 1, { 0, 1, 0, 1 } },
		{ "eof newline added", "a", "a\n", 1, { 0, 1, 0, 1 } },
		{ "eof newline removed", "x\na\n", "x\na", 1, { 1, 1, 1, 1 } },
		{ "no newline both", "x\na", "x\nb", 1, { 1, 1, 1, 1 } },
		{ "crlf vs lf", "a\r\nb\r\n", "a\r\nb\n", 1, { 1, 1, 1, 1 } },
		{ "insert middle", "a\nc\n", "a\nb\nc\n", 1, { 1, 0, 1, 1 } },
		{ "delete middle", "a\nb\nc\n", "a\nc\n", 1, { 1, 1, 1, 0 } },
		{ "append after no-eol", "a", "a\nb", 1, { 0, 1, 0, 2 } },
		{ "slides down", "a\nb\n", "a\nb\na\nb\n", 1, { 2, 0, 2, 2 } },
		{ "repeat insert slides",
		  "x\nx\n",
		  "x\nx\nx\n",
		  1,
		  { 2, 0, 2, 1 } },
		{ "non-utf8", "\xff\xfe\n", "\xff\xfd\n", 1, { 0, 1, 0, 1 } },
		{ "two groups",
		  "a\nb\nc\nd\ne\n",
		  "A\nb\nc\nd\nE\n",
		  2,
		  { 0, 1, 0, 1 } },
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct edit_case *c = &cases[i];
		edits es = { NULL, 0, 0 };

		assert_int_equal(xdiff_diff(c->a, strlen(c->a), c->b,
					    strlen(c->b), NULL, collect, &es),
				 0);
		check_script(c->a, strlen(c->a), c->b, strlen(c->b), &es);
		if (es.n != c->nedits)
			fail_msg("%s: %zu edits, expected %zu", c->name, es.n,
				 c->nedits);
		if (es.n && memcmp(&es.v[0], &c->first, sizeof(c->first)))
			fail_msg("%s: first edit %zu,%zu %zu,%zu", c->name,
				 es.v[0].old_start, es.v[0].old_count,
				 es.v[0].new_start, es.v[0].new_count);
		decree_free(es.v);
	}
}

static void test_lines_split(void **state)
{
	xdiff_lines l = XDIFF_LINES_INIT;

	UNUSED(state);
	assert_int_equal(xdiff_lines_split(&l, "", 0), 0);
	assert_int_equal(l.nlines, 0);
	assert_int_equal(l.start[0], 0);
	xdiff_lines_release(&l);
	assert_int_equal(xdiff_lines_split(&l, "a\n\nbc", 5), 0);
	assert_int_equal(l.nlines, 3);
	assert_int_equal(l.start[1], 2);
	assert_int_equal(l.start[2], 3);
	assert_int_equal(l.start[3], 5);
	xdiff_lines_release(&l);
	assert_int_equal(xdiff_lines_split(&l, "\n", 1), 0);
	assert_int_equal(l.nlines, 1);
	xdiff_lines_release(&l);
}

static int stop_cb(const xdiff_edit *e, void *payload)
{
	UNUSED(e);
	(*(int *)payload)++;
	return -42;
}

static void test_callback_stops(void **state)
{
	int calls = 0;

	UNUSED(state);
	assert_int_equal(xdiff_diff("a\nb\nc\n", 6, "x\nb\ny\n", 6, NULL,
				    stop_cb, &calls),
			 -42);
	assert_int_equal(calls, 1);
}

static void test_alloc_failure(void **state)
{
	const char *a = "a\nb\nc\nd\n", *b = "a\nx\nc\ny\n";
	unsigned long n;
	edits es = { NULL, 0, 0 };

	UNUSED(state);
	for (n = 1; n < 40; n++) {
		int r;
		es.n = 0;
		alloc_fail_at(n);
		r = xdiff_diff(a, strlen(a), b, strlen(b), NULL, collect, &es);
		alloc_fail_at(0);
		if (r == 0)
			break;
		assert_true(r < 0);
	}
	assert_true(n < 40);
	decree_free(es.v);
}

/* ---- random property tests ------------------------------------------- */

static void test_random_minimal(void **state)
{
	uint64_t seed = test_seed();
	char vocab[12][16];
	buf a = BUF_INIT, b = BUF_INIT;
	int iter;

	UNUSED(state);
	print_message("test_random_minimal: DECREE_TEST_SEED=%" PRIu64 "\n",
		      seed);
	rng_state = seed;
	for (iter = 0; iter < 3000; iter++) {
		size_t nv = rndn(11) + 1, opt, got;

		make_vocab(vocab, nv);
		make_text(&a, vocab, nv, rndn(30));
		if (rndn(5) == 0)
			make_text(&b, vocab, nv, rndn(30));
		else
			mutate(&b, &a, vocab, nv);
		opt = dp_cost(a.ptr, a.len, b.ptr, b.len);
		got = run_diff(a.ptr, a.len, b.ptr, b.len, XDIFF_MINIMAL, 0);
		if (got != opt)
			fail_msg("seed %" PRIu64 " iter %d: cost %zu, optimum "
				 "%zu",
				 seed, iter, got, opt);
		got = run_diff(a.ptr, a.len, b.ptr, b.len,
			       XDIFF_MINIMAL | XDIFF_NO_SLIDE, 0);
		assert_int_equal(got, opt);
		/* Sliding never changes the cost either. */
		got = run_diff(a.ptr, a.len, b.ptr, b.len, 0, 0);
		assert_int_equal(got, opt);
		/* A tiny cost limit gives a valid, maybe longer script. */
		got = run_diff(a.ptr, a.len, b.ptr, b.len, 0, 1 + rndn(3));
		assert_true(got >= opt);
	}
	buf_release(&a);
	buf_release(&b);
}

static void test_random_large(void **state)
{
	uint64_t seed = test_seed() ^ 0x5555;
	char vocab[64][16];
	buf a = BUF_INIT, b = BUF_INIT;
	int iter;

	UNUSED(state);
	print_message("test_random_large: DECREE_TEST_SEED=%" PRIu64 "\n",
		      seed);
	rng_state = seed;
	for (iter = 0; iter < 20; iter++) {
		size_t nv = rndn(63) + 2;

		make_vocab(vocab, nv);
		make_text(&a, vocab, nv, 2000 + rndn(3000));
		mutate(&b, &a, vocab, nv);
		run_diff(a.ptr, a.len, b.ptr, b.len, 0, 0);
		run_diff(a.ptr, a.len, b.ptr, b.len, 0, 8);
		make_text(&b, vocab, nv, 2000 + rndn(3000));
		run_diff(a.ptr, a.len, b.ptr, b.len, 0, 0);
	}
	buf_release(&a);
	buf_release(&b);
}

/* A complete rewrite and a pathological repeat pattern stay fast. */
static void test_rewrite_is_fast(void **state)
{
	buf a = BUF_INIT, b = BUF_INIT;
	size_t i, cost;

	UNUSED(state);
	for (i = 0; i < 20000; i++) {
		buf_printf(&a, "old line %zu\n", i);
		buf_printf(&b, i % 3 ? "new line %zu\n" : "}\n", i);
	}
	cost = run_diff(a.ptr, a.len, b.ptr, b.len, 0, 0);
	assert_int_equal(cost, 40000);
	buf_clear(&a);
	buf_clear(&b);
	for (i = 0; i < 20000; i++) {
		buf_puts(&a, i % 2 ? "a\n" : "b\n");
		buf_puts(&b, i % 3 ? "a\n" : "b\n");
	}
	run_diff(a.ptr, a.len, b.ptr, b.len, 0, 0);
	buf_release(&a);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_lines_split),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_alloc_failure),
		cmocka_unit_test(test_random_minimal),
		cmocka_unit_test(test_random_large),
		cmocka_unit_test(test_rewrite_is_fast),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
