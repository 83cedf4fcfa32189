/*
 * xdiff.c - line diff: Myers' O(ND) algorithm in linear space.
 *
 * Pipeline:
 *  1. Trim the common prefix and suffix at byte level, rounded to whole
 *     lines: an edit near one end of a big file costs one memcmp.
 *  2. Give each distinct line of the middle a class number (hash, then
 *     byte compare), so the core compares integers.
 *  3. A line whose class is absent from the other file cannot be common:
 *     it is marked changed and kept out of the core.  Complete rewrites
 *     become nearly free and the script stays shortest.
 *  4. Divide and conquer on the "middle snake" (Myers 1986, 4b): forward
 *     and backward searches run until they overlap on a diagonal, and the
 *     range is split there.  Ranges wait on an explicit stack: memory is
 *     O(N+M) and the C stack stays flat.
 *  5. Slide each change group up, then down as far as equal lines allow,
 *     merging groups that meet (a group [s,e) may move down when line s
 *     equals line e), so repeated blocks land last, as in git/GNU diff.
 *  6. Walk both change maps together and report the groups.
 *
 * Cost limit: after max_cost rounds without the searches meeting, the
 * furthest-reaching point of either search becomes the split.  Any split
 * gives a correct script; this bounds pathological inputs near
 * O((N+M) * max_cost) at the price of a longer script (XDIFF_MINIMAL: off).
 *
 * Core coordinates are indexes into the reduced sequences, diagonal
 * k = x - y.  V entries are clamped to the current rectangle; a point
 * pulled back onto the border stays reachable at the same cost.
 */
#include "util/common.h"
#include "diff/xdiff.h"
#include "util/alloc.h"
#include "util/error.h"

#define XD_MIN_COST  256
#define XD_MAX_LINES ((size_t)INT32_MAX - 8)

typedef struct {
	uint64_t hash;
	const char *ptr;
	size_t len;
	uint32_t count[2]; /* occurrences in the old and the new file */
} xd_class;

typedef struct {
	const char *ptr; /* start of the middle (untrimmed) part */
	size_t n;	 /* lines in the middle part */
	size_t *off;	 /* n + 1 line offsets relative to ptr */
	uint32_t *cls;	 /* class of each line */
	char *chg;	 /* 1 when the line is deleted (old) / added (new) */
	uint32_t *rcls;	 /* classes of the lines the core sees */
	size_t *ridx;	 /* their line numbers */
	size_t rn;
} xd_file;

typedef struct {
	size_t la, ha, lb, hb;
} xd_range;

typedef struct {
	xd_file f[2];
	xd_class *classes;
	size_t nclasses, cap;
	uint64_t *table; /* (hash >> 32) << 32 | (class + 1), 0 = empty */
	size_t mask;
	ptrdiff_t *kvd; /* storage for both V vectors */
	ptrdiff_t *kf, *kb;
	xd_range *stack;
	size_t nstack, stack_cap;
	size_t max_cost;
	bool minimal;
} xd_env;

static uint64_t xd_hash(const char *p, size_t len)
{
	uint64_t h = 0x243f6a8885a308d3ULL ^ (len * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 31;
		p += 8;
		len -= 8;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

static size_t count_lines(const char *p, size_t len)
{
	const char *end = p + len, *nl;
	size_t n = 0;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n++;
		if (!nl)
			break;
		p = nl + 1;
	}
	return n;
}

/* Line start offsets in one pass: off[0..*n], off[*n] == len. */
static int split_lines(size_t **off_out, size_t *n_out, const char *base,
		       size_t len)
{
	const char *p = base, *end = base + len, *nl;
	size_t *off = NULL, cap = 0, n = 0;

	if (GROW(off, cap, len / 32 + 16) < 0)
		return DECREE_ERROR;
	off[0] = 0;
	while (p < end) {
		if (n + 2 > cap && GROW(off, cap, n + 2) < 0) {
			decree_free(off);
			return DECREE_ERROR;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
		off[++n] = (size_t)(p - base);
	}
	*off_out = off;
	*n_out = n;
	return 0;
}

int xdiff_lines_split(xdiff_lines *out, const char *ptr, size_t len)
{
	out->nlines = 0;
	out->start = NULL;
	return split_lines(&out->start, &out->nlines, ptr, len);
}

void xdiff_lines_release(xdiff_lines *lines)
{
	decree_free(lines->start);
	lines->start = NULL;
	lines->nlines = 0;
}

static void xd_env_release(xd_env *e)
{
	int i;

	for (i = 0; i < 2; i++) {
		decree_free(e->f[i].off);
		decree_free(e->f[i].cls);
		decree_free(e->f[i].chg);
		decree_free(e->f[i].rcls);
		decree_free(e->f[i].ridx);
	}
	decree_free(e->classes);
	decree_free(e->table);
	decree_free(e->kvd);
	decree_free(e->stack);
}

static int xd_alloc_array(void *out, size_t n, size_t elsize)
{
	size_t bytes;
	void *p;

	if (decree_mul_overflow(&bytes, n ? n : 1, elsize) < 0)
		return DECREE_ERROR;
	if (!(p = decree_malloc(bytes)))
		return DECREE_ERROR;
	memcpy(out, &p, sizeof(p));
	return 0;
}

static int xd_file_init(xd_file *f, const char *ptr, size_t len)
{
	f->ptr = ptr;
	if (split_lines(&f->off, &f->n, ptr, len) < 0)
		return DECREE_ERROR;
	if (f->n > XD_MAX_LINES)
		return decree_error_set(DECREE_ERROR, "file too large to diff");
	if (xd_alloc_array(&f->cls, f->n, sizeof(*f->cls)) < 0 ||
	    xd_alloc_array(&f->rcls, f->n, sizeof(*f->rcls)) < 0 ||
	    xd_alloc_array(&f->ridx, f->n, sizeof(*f->ridx)) < 0 ||
	    !(f->chg = decree_calloc(f->n + 1, 1)))
		return DECREE_ERROR;
	return 0;
}

/*
 * The table is far bigger than the caches for big files and its probes are
 * random: hashing a whole file first lets us prefetch the slot of the line
 * XD_PREFETCH ahead, which overlaps the cache misses.
 */
#define XD_PREFETCH 16

static int xd_classify(xd_env *e)
{
	size_t total = e->f[0].n + e->f[1].n, size = 64, maxn;
	uint64_t *hs;
	int which;

	while (size < total + total / 4)
		size <<= 1;
	if (!(e->table = decree_calloc(size, sizeof(*e->table))))
		return DECREE_ERROR;
	e->mask = size - 1;
	maxn = e->f[0].n > e->f[1].n ? e->f[0].n : e->f[1].n;
	if (xd_alloc_array(&hs, maxn, sizeof(*hs)) < 0)
		return DECREE_ERROR;

	for (which = 0; which < 2; which++) {
		xd_file *f = &e->f[which];
		size_t i;

		for (i = 0; i < f->n; i++)
			hs[i] = xd_hash(f->ptr + f->off[i],
					f->off[i + 1] - f->off[i]);
		for (i = 0; i < f->n; i++) {
			const char *p = f->ptr + f->off[i];
			size_t len = f->off[i + 1] - f->off[i];
			uint64_t h = hs[i], tag = h >> 32 << 32;
			size_t slot = (size_t)h & e->mask;
			uint32_t c;

			if (i + XD_PREFETCH < f->n)
				__builtin_prefetch(
					&e->table[hs[i + XD_PREFETCH] &
						  e->mask]);

			for (;;) {
				uint64_t v = e->table[slot];
				xd_class *k;

				if (!v) {
					if (GROW(e->classes, e->cap,
						 e->nclasses + 1) < 0) {
						decree_free(hs);
						return DECREE_ERROR;
					}
					c = (uint32_t)e->nclasses++;
					k = &e->classes[c];
					k->hash = h;
					k->ptr = p;
					k->len = len;
					k->count[0] = k->count[1] = 0;
					e->table[slot] = tag |
							 (uint64_t)(c + 1);
					break;
				}
				if ((v >> 32 << 32) == tag) {
					c = (uint32_t)(v & 0xffffffffu) - 1;
					k = &e->classes[c];
					if (k->hash == h && k->len == len &&
					    !memcmp(k->ptr, p, len))
						break;
				}
				slot = (slot + 1) & e->mask;
			}
			f->cls[i] = c;
			e->classes[c].count[which]++;
		}
	}
	decree_free(hs);
	return 0;
}

/* Keep for the core only lines that occur in the other file too. */
static void xd_reduce(xd_env *e)
{
	int which;

	for (which = 0; which < 2; which++) {
		xd_file *f = &e->f[which];
		size_t i;

		f->rn = 0;
		for (i = 0; i < f->n; i++) {
			if (!e->classes[f->cls[i]].count[!which]) {
				f->chg[i] = 1;
				continue;
			}
			f->rcls[f->rn] = f->cls[i];
			f->ridx[f->rn++] = i;
		}
	}
}

/* git's xdl_bogosqrt: the power of two at least sqrt(n), roughly. */
static size_t bogosqrt(size_t n)
{
	size_t r = 1;

	for (; n > 0; n >>= 2)
		r <<= 1;
	return r;
}

#define XD_SIMSCAN_WINDOW 100
#define XD_KPDIS_RUN	  4
#define XD_MAX_EQLIMIT	  1024

/*
 * Line i has many matches (dis 2): keep it out of the core when it sits
 * in a run of lines that have no match (dis 0) or many (dis 2) on both
 * sides, and fewer than 1 in XD_KPDIS_RUN of that run have many: it would
 * only add ambiguous diagonals.  [lo, hi] bounds the scan (inclusive).
 */
static bool xd_discard_multi(const char *dis, size_t i, size_t lo, size_t hi)
{
	size_t r, none = 0, multi = 2;
	bool before = false, after = false;

	if (i - lo > XD_SIMSCAN_WINDOW)
		lo = i - XD_SIMSCAN_WINDOW;
	if (hi - i > XD_SIMSCAN_WINDOW)
		hi = i + XD_SIMSCAN_WINDOW;
	for (r = 1; r <= i - lo; r++) {
		if (dis[i - r] == 1)
			break;
		if (!dis[i - r]) {
			none++;
			before = true;
		} else {
			multi++;
		}
	}
	if (!before)
		return false;
	for (r = 1; r <= hi - i; r++) {
		if (dis[i + r] == 1)
			break;
		if (!dis[i + r]) {
			none++;
			after = true;
		} else {
			multi++;
		}
	}
	if (!after)
		return false;
	return multi * XD_KPDIS_RUN < multi + none;
}

/*
 * XDIFF_GIT_PREPARE: the whole files were classified; keep for the core
 * only lines [pre, n - suf) that occur in the other file, and of those
 * with many occurrences (at least bogosqrt of the file's line count) only
 * the ones xd_discard_multi() keeps.
 */
static int xd_reduce_git(xd_env *e, size_t pre, size_t suf)
{
	int which;

	for (which = 0; which < 2; which++) {
		xd_file *f = &e->f[which];
		size_t i, hi = f->n - suf, mlim = bogosqrt(f->n);
		char *dis;

		if (mlim > XD_MAX_EQLIMIT)
			mlim = XD_MAX_EQLIMIT;
		if (!(dis = decree_calloc(f->n + 1, 1)))
			return DECREE_ERROR;
		for (i = pre; i < hi; i++) {
			uint32_t nm = e->classes[f->cls[i]].count[!which];

			dis[i] = !nm ? 0 : nm >= mlim ? 2 : 1;
		}
		f->rn = 0;
		for (i = pre; i < hi; i++) {
			if (dis[i] == 1 ||
			    (dis[i] == 2 &&
			     !xd_discard_multi(dis, i, pre, hi - 1))) {
				f->rcls[f->rn] = f->cls[i];
				f->ridx[f->rn++] = i;
			} else {
				f->chg[i] = 1;
			}
		}
		decree_free(dis);
	}
	return 0;
}

static size_t isqrt(size_t n)
{
	size_t r = 1;

	while (r * r < n && r < ((size_t)1 << 31))
		r <<= 1;
	while (r * r > n) /* Newton from above converges quickly */
		r = (r + n / r) / 2;
	return r;
}

/*
 * Find a split point (*sx, *sy) of the range [la,ha) x [lb,hb) such that a
 * shortest script passes through it (unless the cost limit fires).  The
 * caller guarantees both sides non-empty and A[la] != B[lb],
 * A[ha-1] != B[hb-1], so the point is never a corner of the range.
 *
 * kf[k]: furthest x reached on diagonal k by the forward search from
 * (la,lb); kb[k]: smallest x reached by the backward search from (ha,hb).
 * Sentinels just outside the active diagonal ranges make the neighbour
 * comparison pick the only valid move.
 */
static void xd_split(xd_env *e, ptrdiff_t la, ptrdiff_t ha, ptrdiff_t lb,
		     ptrdiff_t hb, ptrdiff_t *sx, ptrdiff_t *sy)
{
	const uint32_t *A = e->f[0].rcls, *B = e->f[1].rcls;
	ptrdiff_t *kf = e->kf, *kb = e->kb;
	ptrdiff_t dmin = la - hb, dmax = ha - lb;
	ptrdiff_t fmid = la - lb, bmid = ha - hb;
	ptrdiff_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
	bool odd = ((fmid - bmid) & 1) != 0;
	ptrdiff_t k, x, y;
	size_t d;

	kf[fmid] = la;
	kb[bmid] = ha;
	for (d = 1;; d++) {
		/* Forward round d. */
		if (fmin > dmin)
			kf[--fmin - 1] = -1;
		else
			++fmin;
		if (fmax < dmax)
			kf[++fmax + 1] = -1;
		else
			--fmax;
		for (k = fmax; k >= fmin; k -= 2) {
			if (kf[k - 1] >= kf[k + 1])
				x = kf[k - 1] + 1;
			else
				x = kf[k + 1];
			/* A move off the right or bottom border is
			 * pulled back onto it: that point is reachable
			 * within the same cost. */
			if (x > ha)
				x = ha;
			y = x - k;
			if (y > hb) {
				y = hb;
				x = y + k;
			}
			while (x < ha && y < hb && A[x] == B[y]) {
				x++;
				y++;
			}
			kf[k] = x;
			if (odd && bmin <= k && k <= bmax && kb[k] <= x) {
				*sx = x;
				*sy = y;
				return;
			}
		}

		/* Backward round d. */
		if (bmin > dmin)
			kb[--bmin - 1] = PTRDIFF_MAX;
		else
			++bmin;
		if (bmax < dmax)
			kb[++bmax + 1] = PTRDIFF_MAX;
		else
			--bmax;
		for (k = bmax; k >= bmin; k -= 2) {
			if (kb[k - 1] < kb[k + 1])
				x = kb[k - 1];
			else
				x = kb[k + 1] - 1;
			if (x < la)
				x = la;
			y = x - k;
			if (y < lb) {
				y = lb;
				x = y + k;
			}
			while (x > la && y > lb && A[x - 1] == B[y - 1]) {
				x--;
				y--;
			}
			kb[k] = x;
			if (!odd && fmin <= k && k <= fmax && kf[k] >= x) {
				*sx = x;
				*sy = y;
				return;
			}
		}

		if (!e->minimal && d >= e->max_cost) {
			ptrdiff_t best = -1, bx = 0, by = 0, v;

			for (k = fmax; k >= fmin; k -= 2) {
				v = (kf[k] - la) + (kf[k] - k - lb);
				if (v > best) {
					best = v;
					bx = kf[k];
					by = kf[k] - k;
				}
			}
			for (k = bmax; k >= bmin; k -= 2) {
				v = (ha - kb[k]) + (hb - (kb[k] - k));
				if (v > best) {
					best = v;
					bx = kb[k];
					by = kb[k] - k;
				}
			}
			if ((bx == la && by == lb) || (bx == ha && by == hb)) {
				/* No progress possible from a corner:
				 * delete everything, then insert. */
				bx = ha;
				by = lb;
			}
			*sx = bx;
			*sy = by;
			return;
		}
	}
}

static int xd_push(xd_env *e, size_t la, size_t ha, size_t lb, size_t hb)
{
	xd_range *r;

	if (GROW(e->stack, e->stack_cap, e->nstack + 1) < 0)
		return DECREE_ERROR;
	r = &e->stack[e->nstack++];
	r->la = la;
	r->ha = ha;
	r->lb = lb;
	r->hb = hb;
	return 0;
}

static int xd_compare(xd_env *e)
{
	xd_file *fa = &e->f[0], *fb = &e->f[1];
	const uint32_t *A = fa->rcls, *B = fb->rcls;
	size_t nd, i;

	if (!fa->rn || !fb->rn) {
		for (i = 0; i < fa->rn; i++)
			fa->chg[fa->ridx[i]] = 1;
		for (i = 0; i < fb->rn; i++)
			fb->chg[fb->ridx[i]] = 1;
		return 0;
	}
	nd = fa->rn + fb->rn + 3;
	if (xd_alloc_array(&e->kvd, nd, 2 * sizeof(*e->kvd)) < 0)
		return DECREE_ERROR;
	e->kf = e->kvd + fb->rn + 1;
	e->kb = e->kf + nd;
	if (xd_push(e, 0, fa->rn, 0, fb->rn) < 0)
		return DECREE_ERROR;

	while (e->nstack) {
		xd_range r = e->stack[--e->nstack];
		ptrdiff_t sx, sy;

		while (r.la < r.ha && r.lb < r.hb && A[r.la] == B[r.lb]) {
			r.la++;
			r.lb++;
		}
		while (r.la < r.ha && r.lb < r.hb &&
		       A[r.ha - 1] == B[r.hb - 1]) {
			r.ha--;
			r.hb--;
		}
		if (r.la == r.ha) {
			for (i = r.lb; i < r.hb; i++)
				fb->chg[fb->ridx[i]] = 1;
			continue;
		}
		if (r.lb == r.hb) {
			for (i = r.la; i < r.ha; i++)
				fa->chg[fa->ridx[i]] = 1;
			continue;
		}
		xd_split(e, (ptrdiff_t)r.la, (ptrdiff_t)r.ha, (ptrdiff_t)r.lb,
			 (ptrdiff_t)r.hb, &sx, &sy);
		/* Left half on top: the stack stays shallow either way,
		 * but this order visits the file front to back. */
		if (xd_push(e, (size_t)sx, r.ha, (size_t)sy, r.hb) < 0 ||
		    xd_push(e, r.la, (size_t)sx, r.lb, (size_t)sy) < 0)
			return DECREE_ERROR;
	}
	return 0;
}

/* Slide the change groups of one file; see the head comment, step 5. */
static void xd_slide(xd_file *f)
{
	char *chg = f->chg;
	const uint32_t *cls = f->cls;
	size_t n = f->n, i = 0, start, end;

	while (i < n) {
		if (!chg[i]) {
			i++;
			continue;
		}
		start = i;
		end = i;
		while (end < n && chg[end])
			end++;
		/* Up: line start-1 may join when it equals line end-1. */
		while (start > 0 && !chg[start - 1] &&
		       cls[start - 1] == cls[end - 1]) {
			chg[--start] = 1;
			chg[--end] = 0;
			while (start > 0 && chg[start - 1])
				start--;
		}
		/* Down: line end may join when it equals line start. */
		while (end < n && cls[start] == cls[end]) {
			chg[start++] = 0;
			chg[end++] = 1;
			while (end < n && chg[end])
				end++;
		}
		i = end;
	}
}

static int xd_emit(xd_env *e, size_t pre, xdiff_edit_cb cb, void *payload)
{
	xd_file *fa = &e->f[0], *fb = &e->f[1];
	size_t i = 0, j = 0;
	int r;

	while (i < fa->n || j < fb->n) {
		xdiff_edit ed;

		if (i < fa->n && j < fb->n && !fa->chg[i] && !fb->chg[j]) {
			i++;
			j++;
			continue;
		}
		ed.old_start = i;
		ed.new_start = j;
		while (i < fa->n && fa->chg[i])
			i++;
		while (j < fb->n && fb->chg[j])
			j++;
		if (i == ed.old_start && j == ed.new_start)
			return decree_error_set(DECREE_ERROR,
						"internal diff error: unpaired "
						"lines at %zu/%zu",
						i, j);
		ed.old_count = i - ed.old_start;
		ed.new_count = j - ed.new_start;
		ed.old_start += pre;
		ed.new_start += pre;
		if ((r = cb(&ed, payload)) != 0)
			return r;
	}
	return 0;
}

/* Byte length of the common prefix, whole lines only. */
static size_t common_prefix(const char *a, size_t alen, const char *b,
			    size_t blen, size_t *lines)
{
	size_t n = alen < blen ? alen : blen, p = 0;
	const char *nl;

	while (p + 64 <= n && !memcmp(a + p, b + p, 64))
		p += 64;
	while (p < n && a[p] == b[p])
		p++;
	if (p == alen && p == blen) {
		*lines = alen ? count_lines(a, alen) : 0;
		return p;
	}
	/* Keep only the lines that ended inside the common bytes. */
	nl = p ? memrchr(a, '\n', p) : NULL;
	p = nl ? (size_t)(nl - a) + 1 : 0;
	*lines = p ? count_lines(a, p) : 0;
	return p;
}

/* Byte length of the common suffix, whole lines only, at most `limit`. */
static size_t common_suffix(const char *a, size_t alen, const char *b,
			    size_t blen, size_t limit)
{
	size_t s = 0;
	const char *nl;

	while (s + 64 <= limit &&
	       !memcmp(a + alen - s - 64, b + blen - s - 64, 64))
		s += 64;
	while (s < limit && a[alen - s - 1] == b[blen - s - 1])
		s++;
	if (!s)
		return 0;
	/* The suffix may start exactly at a line start in both files. */
	if ((alen == s || a[alen - s - 1] == '\n') &&
	    (blen == s || b[blen - s - 1] == '\n'))
		return s;
	/* Otherwise it starts after the first newline inside it. */
	nl = memchr(a + alen - s, '\n', s);
	if (!nl)
		return 0;
	return (size_t)(a + alen - (nl + 1));
}

int xdiff_diff(const char *old, size_t old_len, const char *new, size_t new_len,
	       const xdiff_params *params, xdiff_edit_cb cb, void *payload)
{
	static const xdiff_params defaults = XDIFF_PARAMS_INIT;
	xd_env e;
	size_t pre_bytes, pre_lines, suf_bytes, limit;
	int r;

	DECREE_ASSERT_ARG(cb);
	DECREE_ASSERT_ARG(old || !old_len);
	DECREE_ASSERT_ARG(new || !new_len);
	if (!params)
		params = &defaults;
	if (!old_len)
		old = "";
	if (!new_len)
		new = "";

	if (params->flags & XDIFF_GIT_PREPARE) {
		/* trimmed below, by lines, after counting every line */
		pre_bytes = pre_lines = suf_bytes = 0;
	} else {
		pre_bytes =
			common_prefix(old, old_len, new, new_len, &pre_lines);
		if (pre_bytes == old_len && pre_bytes == new_len)
			return 0;
		limit = (old_len < new_len ? old_len : new_len) - pre_bytes;
		suf_bytes = common_suffix(old, old_len, new, new_len, limit);
	}

	memset(&e, 0, sizeof(e));
	e.minimal = (params->flags & XDIFF_MINIMAL) != 0;
	if ((r = xd_file_init(&e.f[0], old + pre_bytes,
			      old_len - pre_bytes - suf_bytes)) < 0 ||
	    (r = xd_file_init(&e.f[1], new + pre_bytes,
			      new_len - pre_bytes - suf_bytes)) < 0 ||
	    (r = xd_classify(&e)) < 0)
		goto done;
	if (params->flags & XDIFF_GIT_PREPARE) {
		size_t n0 = e.f[0].n, n1 = e.f[1].n, lim = n0 < n1 ? n0 : n1;
		size_t pre = 0, suf = 0;

		while (pre < lim && e.f[0].cls[pre] == e.f[1].cls[pre])
			pre++;
		while (suf < lim - pre &&
		       e.f[0].cls[n0 - 1 - suf] == e.f[1].cls[n1 - 1 - suf])
			suf++;
		if ((r = xd_reduce_git(&e, pre, suf)) < 0)
			goto done;
	} else {
		xd_reduce(&e);
	}
	e.max_cost = params->max_cost;
	if (!e.max_cost) {
		e.max_cost = isqrt(e.f[0].rn + e.f[1].rn);
		if (e.max_cost < XD_MIN_COST)
			e.max_cost = XD_MIN_COST;
	}
	if ((r = xd_compare(&e)) < 0)
		goto done;
	if (!(params->flags & XDIFF_NO_SLIDE)) {
		xd_slide(&e.f[0]);
		xd_slide(&e.f[1]);
	}
	r = xd_emit(&e, pre_lines, cb, payload);
done:
	xd_env_release(&e);
	return r;
}
