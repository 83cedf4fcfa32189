/*
 * merge3.c - three-way line merge with git merge-file's answers.
 *
 * Steps (docs/merge.md has the rules with examples):
 *  1. Diff base -> ours and base -> theirs with xdiff.h, then compact each
 *     script the way git does before it merges: every change group slides
 *     up, then down as far as equal lines allow, and then back up to the
 *     last position where it lines up with a change group of the other
 *     file.  (xdiff's own slide does the first two; the third decides
 *     whether a deletion sits next to an insertion, which changes what
 *     touches what.)
 *  2. Walk both scripts in base order.  A change that ends before the
 *     other side's next change starts (strictly) is one side's alone; two
 *     changes that overlap or touch are a conflict unless they are the
 *     same change; a chunk that overlaps or touches the previous chunk is
 *     folded into it (and becomes a conflict if the two differ in kind).
 *  3. Default style only: refine each conflict by diffing its ours lines
 *     against its theirs lines (equal runs leave the conflict; no
 *     difference at all makes it clean), then join conflicts separated
 *     by at most 3 ours lines, or by lines with no ASCII letter or digit.
 *  4. Write ours' lines between chunks, each side's lines for one-sided
 *     chunks, and marker blocks for conflicts (CR LF markers when the
 *     surrounding lines use CR LF, as git decides it).
 *
 * Chunk coordinates are signed while chunks are built: git's arithmetic
 * for a conflict may start a range before the previous chunk's end, and
 * folding it into that chunk puts it right.  Every chunk is checked to be
 * inside its files and in order before anything is written.
 */
#include "util/common.h"
#include "merge/merge3.h"
#include "diff/xdiff.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct {
	const char *ptr;
	size_t len;
	xdiff_lines l;
} m3_file;

/* Lines [a0, a0 + an) of one file became lines [b0, b0 + bn) of the
 * other. */
typedef struct {
	size_t a0, an, b0, bn;
} m3_edit;

typedef struct {
	m3_edit *v;
	size_t n, cap;
} m3_script;

enum { M3_CONFLICT = 0, M3_OURS = 1, M3_THEIRS = 2, M3_SAME = 4 };

typedef struct {
	int mode;
	ptrdiff_t i0, c0; /* base */
	ptrdiff_t i1, c1; /* ours */
	ptrdiff_t i2, c2; /* theirs */
} m3_chunk;

typedef struct {
	m3_chunk *v;
	size_t n, cap;
} m3_chunks;

static const char *line_ptr(const m3_file *f, size_t i)
{
	return f->ptr + f->l.start[i];
}

static size_t line_len(const m3_file *f, size_t i)
{
	return f->l.start[i + 1] - f->l.start[i];
}

static bool line_eq(const m3_file *a, size_t i, const m3_file *b, size_t j)
{
	size_t n = line_len(a, i);

	return n == line_len(b, j) &&
	       !memcmp(line_ptr(a, i), line_ptr(b, j), n);
}

/* ---- diff with git's compaction --------------------------------------- */

/* One side of a diff: lines [off, off + n) of f, and their change map
 * (chg[-1] and chg[n] are zero sentinels). */
typedef struct {
	const m3_file *f;
	size_t off, n;
	char *chg;
} m3_side;

typedef struct {
	size_t start, end;
} m3_group;

static bool side_eq(const m3_side *s, size_t i, size_t j)
{
	return line_eq(s->f, s->off + i, s->f, s->off + j);
}

static void group_init(const m3_side *s, m3_group *g)
{
	g->start = g->end = 0;
	while (s->chg[g->end])
		g->end++;
}

static bool group_next(const m3_side *s, m3_group *g)
{
	if (g->end == s->n)
		return false;
	g->start = g->end + 1;
	for (g->end = g->start; s->chg[g->end]; g->end++)
		;
	return true;
}

static bool group_previous(const m3_side *s, m3_group *g)
{
	if (g->start == 0)
		return false;
	g->end = g->start - 1;
	for (g->start = g->end; g->start && s->chg[g->start - 1]; g->start--)
		;
	return true;
}

static bool group_slide_down(m3_side *s, m3_group *g)
{
	if (g->end < s->n && side_eq(s, g->start, g->end)) {
		s->chg[g->start++] = 0;
		s->chg[g->end++] = 1;
		while (s->chg[g->end])
			g->end++;
		return true;
	}
	return false;
}

static bool group_slide_up(m3_side *s, m3_group *g)
{
	if (g->start > 0 && side_eq(s, g->start - 1, g->end - 1)) {
		s->chg[--g->start] = 1;
		s->chg[--g->end] = 0;
		while (g->start && s->chg[g->start - 1])
			g->start--;
		return true;
	}
	return false;
}

/*
 * Slide the change groups of s: up as far as possible, then down as far
 * as possible (groups that meet merge), then back up to the lowest
 * position where the group faces a non-empty group of the other side o.
 * The groups of both sides correspond one to one (the unchanged lines
 * between them pair up), so go follows g.
 */
static int compact(m3_side *s, const m3_side *o)
{
	m3_group g, go;

	group_init(s, &g);
	group_init(o, &go);
	for (;;) {
		if (g.end != g.start) {
			size_t size, earliest_end;
			bool matched;

			do {
				size = g.end - g.start;
				matched = false;
				while (group_slide_up(s, &g))
					if (!group_previous(o, &go))
						goto broken;
				earliest_end = g.end;
				if (go.end > go.start)
					matched = true;
				while (group_slide_down(s, &g)) {
					if (!group_next(o, &go))
						goto broken;
					if (go.end > go.start)
						matched = true;
				}
			} while (size != g.end - g.start);

			if (g.end != earliest_end && matched) {
				while (go.end == go.start) {
					if (!group_slide_up(s, &g) ||
					    !group_previous(o, &go))
						goto broken;
				}
			}
		}
		if (!group_next(s, &g))
			break;
		if (!group_next(o, &go))
			goto broken;
	}
	return 0;
broken:
	return decree_error_set(DECREE_ERROR,
				"internal merge error: change groups out of "
				"step");
}

typedef struct {
	char *a, *b;
} m3_marks;

static int mark_edit(const xdiff_edit *e, void *payload)
{
	m3_marks *m = payload;

	memset(m->a + e->old_start, 1, e->old_count);
	memset(m->b + e->new_start, 1, e->new_count);
	return 0;
}

static int script_add(m3_script *s, size_t a0, size_t an, size_t b0, size_t bn)
{
	m3_edit *e;

	if (GROW(s->v, s->cap, s->n + 1) < 0)
		return DECREE_ERROR;
	e = &s->v[s->n++];
	e->a0 = a0;
	e->an = an;
	e->b0 = b0;
	e->bn = bn;
	return 0;
}

/*
 * The compacted script from lines [a0, a0 + an) of fa to lines
 * [b0, b0 + bn) of fb, in coordinates relative to a0 and b0.
 */
static int diff_lines(m3_script *out, const m3_file *fa, size_t a0, size_t an,
		      const m3_file *fb, size_t b0, size_t bn)
{
	char *ca = NULL, *cb = NULL;
	m3_side sa, sb;
	xdiff_params xp = XDIFF_PARAMS_INIT;
	m3_marks marks;
	size_t i, j;
	int r;

	out->n = 0;
	xp.flags = XDIFF_NO_SLIDE | XDIFF_GIT_PREPARE;
	if (!(ca = decree_calloc(an + 2, 1)) ||
	    !(cb = decree_calloc(bn + 2, 1))) {
		r = DECREE_ERROR;
		goto done;
	}
	marks.a = ca + 1;
	marks.b = cb + 1;
	r = xdiff_diff(line_ptr(fa, a0), fa->l.start[a0 + an] - fa->l.start[a0],
		       line_ptr(fb, b0), fb->l.start[b0 + bn] - fb->l.start[b0],
		       &xp, mark_edit, &marks);
	if (r < 0)
		goto done;
	sa.f = fa;
	sa.off = a0;
	sa.n = an;
	sa.chg = ca + 1;
	sb.f = fb;
	sb.off = b0;
	sb.n = bn;
	sb.chg = cb + 1;
	if ((r = compact(&sa, &sb)) < 0 || (r = compact(&sb, &sa)) < 0)
		goto done;

	i = j = 0;
	while (i < an || j < bn) {
		size_t si = i, sj = j;

		if (i < an && j < bn && !sa.chg[i] && !sb.chg[j]) {
			i++;
			j++;
			continue;
		}
		while (i < an && sa.chg[i])
			i++;
		while (j < bn && sb.chg[j])
			j++;
		if (i == si && j == sj) {
			r = decree_error_set(DECREE_ERROR,
					     "internal merge error: unpaired "
					     "lines");
			goto done;
		}
		if ((r = script_add(out, si, i - si, sj, j - sj)) < 0)
			goto done;
	}
done:
	decree_free(ca);
	decree_free(cb);
	return r;
}

/* ---- the merge -------------------------------------------------------- */

/* Add a chunk, folding it into the previous one when the two overlap or
 * touch on the ours or the theirs side. */
static int chunk_add(m3_chunks *c, int mode, ptrdiff_t i0, ptrdiff_t c0,
		     ptrdiff_t i1, ptrdiff_t c1, ptrdiff_t i2, ptrdiff_t c2)
{
	m3_chunk *m = c->n ? &c->v[c->n - 1] : NULL;

	if (m && (i1 <= m->i1 + m->c1 || i2 <= m->i2 + m->c2)) {
		if (mode != m->mode)
			m->mode = M3_CONFLICT;
		m->c0 = i0 + c0 - m->i0;
		m->c1 = i1 + c1 - m->i1;
		m->c2 = i2 + c2 - m->i2;
		return 0;
	}
	if (GROW(c->v, c->cap, c->n + 1) < 0)
		return DECREE_ERROR;
	m = &c->v[c->n++];
	m->mode = mode;
	m->i0 = i0;
	m->c0 = c0;
	m->i1 = i1;
	m->c1 = c1;
	m->i2 = i2;
	m->c2 = c2;
	return 0;
}

static bool same_lines(const m3_file *a, size_t i, const m3_file *b, size_t j,
		       size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (!line_eq(a, i + k, b, j + k))
			return false;
	return true;
}

#define P(x) ((ptrdiff_t)(x))

static int lay_over(m3_chunks *c, const m3_file *fo, const m3_file *ft,
		    const m3_file *fb, const m3_script *s1, const m3_script *s2)
{
	size_t p = 0, q = 0;
	int r;

	while (p < s1->n && q < s2->n) {
		const m3_edit *x = &s1->v[p], *y = &s2->v[q];
		ptrdiff_t e1 = P(x->a0 + x->an), e2 = P(y->a0 + y->an);

		if (e1 < P(y->a0)) {
			r = chunk_add(c, M3_OURS, P(x->a0), P(x->an), P(x->b0),
				      P(x->bn), P(y->b0) - P(y->a0) + P(x->a0),
				      P(x->an));
			if (r < 0)
				return r;
			p++;
			continue;
		}
		if (e2 < P(x->a0)) {
			r = chunk_add(c, M3_THEIRS, P(y->a0), P(y->an),
				      P(x->b0) - P(x->a0) + P(y->a0), P(y->an),
				      P(y->b0), P(y->bn));
			if (r < 0)
				return r;
			q++;
			continue;
		}
		if (x->a0 != y->a0 || x->an != y->an || x->bn != y->bn ||
		    !same_lines(fo, x->b0, ft, y->b0, x->bn)) {
			/* The union of both changes, each side's range
			 * stretched over the base lines only the other side
			 * changed (unchanged there, so one to one). */
			ptrdiff_t off = P(x->a0) - P(y->a0);
			ptrdiff_t ffo = e1 - e2;
			ptrdiff_t i0 = P(x->a0), i1 = P(x->b0), i2 = P(y->b0);
			ptrdiff_t c0, c1, c2;

			if (off > 0) {
				i0 -= off;
				i1 -= off;
			} else {
				i2 += off;
			}
			c0 = e1 - i0;
			c1 = P(x->b0 + x->bn) - i1;
			c2 = P(y->b0 + y->bn) - i2;
			if (ffo < 0) {
				c0 -= ffo;
				c1 -= ffo;
			} else {
				c2 += ffo;
			}
			if ((r = chunk_add(c, M3_CONFLICT, i0, c0, i1, c1, i2,
					   c2)) < 0)
				return r;
		}
		if (e1 >= e2)
			q++;
		if (e2 >= e1)
			p++;
	}
	for (; p < s1->n; p++) {
		const m3_edit *x = &s1->v[p];

		r = chunk_add(c, M3_OURS, P(x->a0), P(x->an), P(x->b0),
			      P(x->bn),
			      P(x->a0) + P(ft->l.nlines) - P(fb->l.nlines),
			      P(x->an));
		if (r < 0)
			return r;
	}
	for (; q < s2->n; q++) {
		const m3_edit *y = &s2->v[q];

		r = chunk_add(c, M3_THEIRS, P(y->a0), P(y->an),
			      P(y->a0) + P(fo->l.nlines) - P(fb->l.nlines),
			      P(y->an), P(y->b0), P(y->bn));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Check that the chunks lie inside their files, in order. */
static int check_chunks(const m3_chunks *c, const m3_file *fb,
			const m3_file *fo, const m3_file *ft)
{
	ptrdiff_t end1 = 0;
	size_t k;

	for (k = 0; k < c->n; k++) {
		const m3_chunk *m = &c->v[k];

		if (m->i0 < 0 || m->c0 < 0 || m->i0 + m->c0 > P(fb->l.nlines) ||
		    m->i1 < end1 || m->c1 < 0 ||
		    m->i1 + m->c1 > P(fo->l.nlines) || m->i2 < 0 || m->c2 < 0 ||
		    m->i2 + m->c2 > P(ft->l.nlines))
			return decree_error_set(DECREE_ERROR,
						"internal merge error: chunk "
						"out of range");
		end1 = m->i1 + m->c1;
	}
	return 0;
}

/*
 * Cut each conflict down to the lines where ours and theirs differ: one
 * conflict per change group of the diff ours -> theirs over the
 * conflict's lines, none (a clean chunk) when they are equal.  The pieces
 * keep the base range of the conflict they come from.
 */
static int refine(m3_chunks *out, const m3_chunks *in, const m3_file *fo,
		  const m3_file *ft)
{
	m3_script s = { NULL, 0, 0 };
	size_t k, e;
	int r = 0;

	for (k = 0; k < in->n; k++) {
		const m3_chunk *m = &in->v[k];

		if (m->mode != M3_CONFLICT || !m->c1 || !m->c2) {
			if (GROW(out->v, out->cap, out->n + 1) < 0) {
				r = DECREE_ERROR;
				goto done;
			}
			out->v[out->n++] = *m;
			continue;
		}
		if ((r = diff_lines(&s, fo, (size_t)m->i1, (size_t)m->c1, ft,
				    (size_t)m->i2, (size_t)m->c2)) < 0)
			goto done;
		if (!s.n) {
			if (GROW(out->v, out->cap, out->n + 1) < 0) {
				r = DECREE_ERROR;
				goto done;
			}
			out->v[out->n] = *m;
			out->v[out->n++].mode = M3_SAME;
			continue;
		}
		if (GROW(out->v, out->cap, out->n + s.n) < 0) {
			r = DECREE_ERROR;
			goto done;
		}
		for (e = 0; e < s.n; e++) {
			m3_chunk *n = &out->v[out->n++];

			*n = *m;
			n->i1 = m->i1 + P(s.v[e].a0);
			n->c1 = P(s.v[e].an);
			n->i2 = m->i2 + P(s.v[e].b0);
			n->c2 = P(s.v[e].bn);
		}
	}
done:
	decree_free(s.v);
	return r;
}

static bool lines_have_alnum(const m3_file *f, size_t i, size_t n)
{
	const char *p = line_ptr(f, i), *end = line_ptr(f, i + n);

	for (; p < end; p++) {
		unsigned char ch = (unsigned char)*p;

		if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= 'A' && ch <= 'Z'))
			return true;
	}
	return false;
}

/* Join neighbouring conflicts that only a few (<= 3) lines, or lines
 * without a letter or digit, keep apart. */
static void simplify(m3_chunks *c, const m3_file *fo)
{
	size_t k = 0, j;

	while (k + 1 < c->n) {
		m3_chunk *m = &c->v[k], *n = &c->v[k + 1];
		ptrdiff_t begin = m->i1 + m->c1, end = n->i1;

		if (m->mode != M3_CONFLICT || n->mode != M3_CONFLICT ||
		    (end - begin > 3 &&
		     lines_have_alnum(fo, (size_t)begin,
				      (size_t)(end - begin)))) {
			k++;
			continue;
		}
		m->c1 = n->i1 + n->c1 - m->i1;
		m->c2 = n->i2 + n->c2 - m->i2;
		if (n->i0 < m->i0) {
			m->c0 += m->i0 - n->i0;
			m->i0 = n->i0;
		}
		if (n->i0 + n->c0 > m->i0 + m->c0)
			m->c0 = n->i0 + n->c0 - m->i0;
		for (j = k + 1; j + 1 < c->n; j++)
			c->v[j] = c->v[j + 1];
		c->n--;
	}
}

/* ---- output ------------------------------------------------------------ */

/* Does line i of f end in CR LF?  -1 when f cannot tell (git's
 * is_eol_crlf): an empty file, or a lone last line without '\n'. */
static int eol_crlf(const m3_file *f, size_t i)
{
	size_t n;
	const char *p;

	if (!f->l.nlines)
		return -1;
	n = line_len(f, i);
	p = line_ptr(f, i);
	if (i + 1 < f->l.nlines)
		return n > 1 && p[n - 2] == '\r';
	if (n && p[n - 1] == '\n')
		return n > 1 && p[n - 2] == '\r';
	if (!i)
		return -1;
	n = line_len(f, i - 1);
	p = line_ptr(f, i - 1);
	return n > 1 && p[n - 2] == '\r';
}

static bool needs_cr(const m3_file *fb, const m3_file *fo, const m3_file *ft,
		     const m3_chunk *m)
{
	int cr = eol_crlf(fo, m->i1 ? (size_t)m->i1 - 1 : 0);

	if (cr)
		cr = eol_crlf(ft, m->i2 ? (size_t)m->i2 - 1 : 0);
	if (cr)
		cr = eol_crlf(fb, 0);
	return cr > 0;
}

/* Lines [i, i + n) of f; with add_nl, end them with a newline. */
static int put_lines(buf *b, const m3_file *f, size_t i, size_t n, bool cr,
		     bool add_nl)
{
	size_t len;

	if (!n)
		return 0;
	len = f->l.start[i + n] - f->l.start[i];
	if (buf_put(b, line_ptr(f, i), len) < 0)
		return DECREE_ERROR;
	if (add_nl && line_ptr(f, i)[len - 1] != '\n') {
		if (cr && buf_putc(b, '\r') < 0)
			return DECREE_ERROR;
		if (buf_putc(b, '\n') < 0)
			return DECREE_ERROR;
	}
	return 0;
}

static int put_marker(buf *b, char ch, unsigned size, const char *label,
		      bool cr)
{
	unsigned k;

	for (k = 0; k < size; k++)
		if (buf_putc(b, ch) < 0)
			return DECREE_ERROR;
	if (label && (buf_putc(b, ' ') < 0 || buf_puts(b, label) < 0))
		return DECREE_ERROR;
	if (cr && buf_putc(b, '\r') < 0)
		return DECREE_ERROR;
	return buf_putc(b, '\n');
}

static int fill(buf *b, const m3_chunks *c, const m3_file *fb,
		const m3_file *fo, const m3_file *ft, const merge3_params *p)
{
	unsigned size = p->marker_size ? p->marker_size : 7;
	size_t i = 0, k;

	for (k = 0; k < c->n; k++) {
		const m3_chunk *m = &c->v[k];
		size_t i1 = (size_t)m->i1, c1 = (size_t)m->c1;
		size_t i2 = (size_t)m->i2, c2 = (size_t)m->c2;

		if (m->mode == M3_SAME)
			continue;
		if (put_lines(b, fo, i, i1 - i, false, false) < 0)
			return DECREE_ERROR;
		if (m->mode == M3_CONFLICT) {
			bool cr = needs_cr(fb, fo, ft, m);

			if (put_marker(b, '<', size, p->ours_label, cr) < 0 ||
			    put_lines(b, fo, i1, c1, cr, true) < 0)
				return DECREE_ERROR;
			if (p->style == MERGE3_STYLE_DIFF3 &&
			    (put_marker(b, '|', size, p->base_label, cr) < 0 ||
			     put_lines(b, fb, (size_t)m->i0, (size_t)m->c0, cr,
				       true) < 0))
				return DECREE_ERROR;
			if (put_marker(b, '=', size, NULL, cr) < 0 ||
			    put_lines(b, ft, i2, c2, cr, true) < 0 ||
			    put_marker(b, '>', size, p->theirs_label, cr) < 0)
				return DECREE_ERROR;
		} else if (m->mode == M3_OURS) {
			if (put_lines(b, fo, i1, c1, false, false) < 0)
				return DECREE_ERROR;
		} else if (put_lines(b, ft, i2, c2, false, false) < 0) {
			return DECREE_ERROR;
		}
		i = i1 + c1;
	}
	return put_lines(b, fo, i, fo->l.nlines - i, false, false);
}

static int copy_result(merge3_result *out, const char *p, size_t len)
{
	buf b = BUF_INIT;

	if (buf_put(&b, p, len) < 0)
		return DECREE_ERROR;
	if (!(out->ptr = buf_detach(&b, &out->len)))
		return DECREE_ERROR;
	return 0;
}

static bool label_ok(const char *s)
{
	return !s || !strpbrk(s, "\r\n");
}

int merge3(merge3_result *out, const char *base, size_t base_len,
	   const char *ours, size_t ours_len, const char *theirs,
	   size_t theirs_len, const merge3_params *params)
{
	static const merge3_params defaults = MERGE3_PARAMS_INIT;
	m3_file fb = { 0 }, fo = { 0 }, ft = { 0 };
	m3_script s1 = { NULL, 0, 0 }, s2 = { NULL, 0, 0 };
	m3_chunks c = { NULL, 0, 0 }, rc = { NULL, 0, 0 }, *fin;
	buf b = BUF_INIT;
	size_t k, n;
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(base || !base_len);
	DECREE_ASSERT_ARG(ours || !ours_len);
	DECREE_ASSERT_ARG(theirs || !theirs_len);
	memset(out, 0, sizeof(*out));
	if (!params)
		params = &defaults;
	if (params->version != MERGE3_PARAMS_VERSION ||
	    params->style > MERGE3_STYLE_DIFF3 ||
	    !label_ok(params->ours_label) || !label_ok(params->base_label) ||
	    !label_ok(params->theirs_label))
		return decree_error_set(DECREE_EINVALID,
					"invalid merge parameters");
	fb.ptr = base_len ? base : "";
	fb.len = base_len;
	fo.ptr = ours_len ? ours : "";
	fo.len = ours_len;
	ft.ptr = theirs_len ? theirs : "";
	ft.len = theirs_len;
	if ((r = xdiff_lines_split(&fb.l, fb.ptr, fb.len)) < 0 ||
	    (r = xdiff_lines_split(&fo.l, fo.ptr, fo.len)) < 0 ||
	    (r = xdiff_lines_split(&ft.l, ft.ptr, ft.len)) < 0)
		goto done;
	if ((r = diff_lines(&s1, &fb, 0, fb.l.nlines, &fo, 0, fo.l.nlines)) <
		    0 ||
	    (r = diff_lines(&s2, &fb, 0, fb.l.nlines, &ft, 0, ft.l.nlines)) < 0)
		goto done;
	/* One side unchanged: the result is the other side. */
	if (!s1.n || !s2.n) {
		r = !s1.n ? copy_result(out, ft.ptr, ft.len)
			  : copy_result(out, fo.ptr, fo.len);
		goto done;
	}
	if ((r = lay_over(&c, &fo, &ft, &fb, &s1, &s2)) < 0 ||
	    (r = check_chunks(&c, &fb, &fo, &ft)) < 0)
		goto done;
	fin = &c;
	if (params->style == MERGE3_STYLE_MERGE) {
		if ((r = refine(&rc, &c, &fo, &ft)) < 0)
			goto done;
		simplify(&rc, &fo);
		if ((r = check_chunks(&rc, &fb, &fo, &ft)) < 0)
			goto done;
		fin = &rc;
	}
	for (n = k = 0; k < fin->n; k++)
		n += fin->v[k].mode == M3_CONFLICT;
	if (n &&
	    !(out->conflicts = decree_calloc(n, sizeof(*out->conflicts)))) {
		r = DECREE_ERROR;
		goto done;
	}
	for (k = 0; k < fin->n; k++) {
		const m3_chunk *m = &fin->v[k];
		merge3_conflict *x;

		if (m->mode != M3_CONFLICT)
			continue;
		x = &out->conflicts[out->nconflicts++];
		x->base_start = (size_t)m->i0;
		x->base_count = (size_t)m->c0;
		x->ours_start = (size_t)m->i1;
		x->ours_count = (size_t)m->c1;
		x->theirs_start = (size_t)m->i2;
		x->theirs_count = (size_t)m->c2;
	}
	if ((r = fill(&b, fin, &fb, &fo, &ft, params)) < 0)
		goto done;
	if (!(out->ptr = buf_detach(&b, &out->len)))
		r = DECREE_ERROR;
done:
	if (r < 0)
		merge3_result_release(out);
	buf_release(&b);
	decree_free(c.v);
	decree_free(rc.v);
	decree_free(s1.v);
	decree_free(s2.v);
	xdiff_lines_release(&fb.l);
	xdiff_lines_release(&fo.l);
	xdiff_lines_release(&ft.l);
	return r;
}

void merge3_result_release(merge3_result *r)
{
	if (!r)
		return;
	decree_free(r->ptr);
	decree_free(r->conflicts);
	memset(r, 0, sizeof(*r));
}
