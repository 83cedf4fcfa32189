/*
 * fuzz_merge3.c - libFuzzer target for the three-way text merge.
 *
 * The input is split at FUZZ_SEP into base, ours and theirs (missing parts
 * are empty) and merged in both styles.  Invariants checked (a violation
 * aborts, which libFuzzer reports):
 *  - merging a side with an unchanged other side gives that side exactly;
 *  - merge(base, x, x) is clean and gives x;
 *  - a clean merge does not depend on which side is "ours": swapping the
 *    sides gives the same bytes (git's rule is symmetric when clean);
 *  - every conflict region lies inside its inputs and the regions are in
 *    order; the number of regions is nconflicts;
 *  - the diff3 style has at least as many base markers as conflicts, and
 *    the output holds a NUL only when an input does.
 */
#include "util/common.h"
#include "merge/merge3.h"
#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t nlines(const fuzz_part *p)
{
	size_t n = 0, i;

	for (i = 0; i < p->len; i++)
		n += p->ptr[i] == '\n';
	return n + (p->len && p->ptr[p->len - 1] != '\n');
}

static void check_regions(const merge3_result *r, const fuzz_part *f)
{
	size_t k, nb = nlines(&f[0]), no = nlines(&f[1]), nt = nlines(&f[2]);
	size_t prev_o = 0, prev_t = 0;

	for (k = 0; k < r->nconflicts; k++) {
		const merge3_conflict *c = &r->conflicts[k];

		fuzz_check(c->base_start + c->base_count <= nb);
		fuzz_check(c->ours_start + c->ours_count <= no);
		fuzz_check(c->theirs_start + c->theirs_count <= nt);
		fuzz_check(c->ours_start >= prev_o &&
			   c->theirs_start >= prev_t);
		prev_o = c->ours_start + c->ours_count;
		prev_t = c->theirs_start + c->theirs_count;
	}
}

static bool same(const merge3_result *r, const fuzz_part *p)
{
	return r->len == p->len && (!p->len || !memcmp(r->ptr, p->ptr, p->len));
}

#define M(r, b, o, t, p)                                                   \
	merge3((r), (const char *)(b).ptr, (b).len, (const char *)(o).ptr, \
	       (o).len, (const char *)(t).ptr, (t).len, (p))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_part f[3] = { { NULL, 0 }, { NULL, 0 }, { NULL, 0 } };
	merge3_params p = MERGE3_PARAMS_INIT;
	merge3_result r = MERGE3_RESULT_INIT, s = MERGE3_RESULT_INIT;
	size_t n, k, markers;
	bool nul;
	const char *q;

	if (size > 1 << 16)
		return 0;
	n = fuzz_split(f, 3, data, size);
	(void)n;
	p.ours_label = "o";
	p.base_label = "b";
	p.theirs_label = "t";

	fuzz_check(M(&r, f[0], f[1], f[2], &p) == 0);
	check_regions(&r, f);
	fuzz_check(M(&s, f[0], f[2], f[1], &p) == 0);
	fuzz_check(r.nconflicts == s.nconflicts ||
		   (r.nconflicts && s.nconflicts));
	if (!r.nconflicts && !s.nconflicts)
		fuzz_check(r.len == s.len && !memcmp(r.ptr, s.ptr, r.len));
	merge3_result_release(&r);
	merge3_result_release(&s);

	fuzz_check(M(&r, f[0], f[1], f[0], &p) == 0);
	fuzz_check(!r.nconflicts && same(&r, &f[1]));
	merge3_result_release(&r);
	fuzz_check(M(&r, f[0], f[0], f[2], &p) == 0);
	fuzz_check(!r.nconflicts && same(&r, &f[2]));
	merge3_result_release(&r);
	fuzz_check(M(&r, f[0], f[1], f[1], &p) == 0);
	fuzz_check(!r.nconflicts && same(&r, &f[1]));
	merge3_result_release(&r);

	p.style = MERGE3_STYLE_DIFF3;
	fuzz_check(M(&r, f[0], f[1], f[2], &p) == 0);
	check_regions(&r, f);
	for (markers = 0, q = r.ptr;
	     (q = memmem(q, r.len - (size_t)(q - r.ptr), "||||||| b", 9)); q++)
		markers++;
	/* the inputs may hold marker lines themselves */
	fuzz_check(markers >= r.nconflicts);
	/* the output is made of input bytes, markers and newlines */
	for (nul = false, k = 0; k < 3; k++)
		nul |= f[k].len && memchr(f[k].ptr, 0, f[k].len) != NULL;
	fuzz_check(nul || strlen(r.ptr) == r.len);
	merge3_result_release(&r);
	return 0;
}
