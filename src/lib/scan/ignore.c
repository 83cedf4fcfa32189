/*
 * ignore.c - gitignore(5) matching with decree's precedence (see ignore.h).
 *
 * Patterns are compiled once, when a file is parsed, into one of five
 * kinds: a literal basename, a "*suffix" basename, a basename glob, a
 * literal path and a path glob.  Globs become token arrays (literal byte,
 * "?", a 256-bit class, "*", "/", "**"); a path glob is also cut into
 * segments at its slashes.  Matching never allocates and never recurses:
 * inside a segment "*" cannot cross "/", so the classic two-pointer
 * backtracking (restart at the last "*") is exact, and at the segment level
 * a "**" is a star over whole segments, so the same algorithm runs there.
 * Patterns that can never match (unterminated "[", unknown "[:class:]",
 * trailing "\") are dropped at parse time, as git's matcher aborts on them.
 *
 * One quirk of git is reproduced on purpose: git compares the literal head
 * of a path pattern first and runs its glob matcher on the rest, which then
 * sees a "**" right after the head as the start of a pattern.  So
 * "x/foo**" + "/bar" matches "x/foo/a/bar" and "x/foobar"
 * (PAT_PATH_GLOB with `quirk`).  git is the oracle of the unit tests.
 *
 * The matcher caches one node per directory in an open-addressing hash map
 * keyed by the directory path (FNV-1a); a node remembers both parsed files,
 * or that there is none.  The chain of ancestor nodes of the last parent
 * directory asked about is kept, so a walker asking about the entries of
 * one directory does no hashing at all.  Invariant: nodes are never freed
 * or moved before ignore_matcher_free, so chain pointers stay valid.
 *
 * Decision made here and not in git: a non-directory named .gitignore or
 * .decreeignore is never ignored by a pattern (decree tracks the rules it
 * needs to read an earlier state back); it is still hidden when an
 * ancestor directory is excluded.
 */
#include "util/common.h"
#include "scan/ignore.h"
#include "util/alloc.h"
#include "util/error.h"

const char *const ignore_builtin_patterns[] = {
	"node_modules/", "__pycache__/", ".venv/",    "venv/",
	".cache/",	 "*.pyc",	 ".DS_Store", NULL,
};

/* --- compiled patterns --------------------------------------------------- */

enum tok_kind { TK_LIT, TK_ANY, TK_CLASS, TK_STAR, TK_SLASH, TK_GLOBSTAR };

struct tok {
	unsigned char kind;
	unsigned char ch;  /* TK_LIT: the byte */
	unsigned char min; /* TK_GLOBSTAR: fewest whole segments it covers */
	size_t cls;	   /* TK_CLASS: index into pattern.classes */
};

struct seg {
	size_t start, end; /* token range, slashes excluded */
	bool globstar;
	unsigned char min;
};

enum pat_kind {
	PAT_BASE_LIT,	 /* basename == lit */
	PAT_BASE_SUFFIX, /* basename ends with lit ("*.o") */
	PAT_BASE_GLOB,	 /* basename matches toks */
	PAT_PATH_LIT,	 /* path below the base == lit */
	PAT_PATH_GLOB,	 /* path starts with lit, rest matches segs */
};

struct pattern {
	unsigned char kind;
	bool negated;
	bool dir_only;
	bool quirk;	 /* PATH_GLOB: lit, then a "**" glued to it */
	bool quirk_zero; /* ... which may also match nothing */
	bool quirk_tail; /* ... and ends the pattern */
	char *lit;
	size_t lit_len;
	size_t min_len; /* BASE_GLOB: tokens that are not "*" */
	struct tok *toks;
	size_t ntoks;
	struct seg *segs;
	size_t nsegs;
	bool fixed_depth; /* no "**" segment: the path has nsegs segments */
	unsigned char (*classes)[32];
	size_t nclasses;
	char *src; /* the line as written (trimmed), for messages */
};

/*
 * A list of INDEX_MIN or more patterns is indexed by the last byte a
 * basename needs to match: order[bucket[b] .. bucket[b + 1]) are the
 * patterns (ascending) that can only match a name ending in byte b, and
 * bucket NBUCKET - 2 holds those that may match any name.  A lookup merges
 * two short descending runs instead of testing every line.
 */
#define INDEX_MIN 4
#define ANY_LAST  256
#define NBUCKET	  258

struct ignore_list {
	char *base; /* "" for the root, no trailing slash */
	size_t base_len;
	struct pattern *pats;
	size_t npats, cap;
	size_t *order;	/* NULL: not indexed */
	size_t *bucket; /* NBUCKET entries */
};

#define TOK_INVALID 1 /* tokenize(): the pattern can never match */

static bool is_glob_special(char c)
{
	return c == '*' || c == '?' || c == '[' || c == '\\';
}

static void cls_set(unsigned char *bits, unsigned c)
{
	bits[c >> 3] |= (unsigned char)(1u << (c & 7));
}

/* The ASCII-only character classes of git's wildmatch; `space` is git's
 * set (no \v, no \f). */
static bool posix_class(unsigned char *bits, const char *name, size_t len)
{
	static const char *const names[] = {
		"alnum", "alpha", "blank", "cntrl", "digit", "graph",
		"lower", "print", "punct", "space", "upper", "xdigit",
	};
	size_t k;
	unsigned c;

	for (k = 0; k < ARRAY_SIZE(names); k++)
		if (strlen(names[k]) == len && !memcmp(names[k], name, len))
			break;
	if (k == ARRAY_SIZE(names))
		return false;
	for (c = 0; c < 128; c++) {
		bool up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z';
		bool dig = c >= '0' && c <= '9';
		bool graph = c > 32 && c < 127;
		bool hex = dig || (c >= 'a' && c <= 'f') ||
			   (c >= 'A' && c <= 'F');
		bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
		/* in the order of names[] */
		const bool in[] = {
			up || lo || dig,
			up || lo,
			c == ' ' || c == '\t',
			c < 32 || c == 127,
			dig,
			graph,
			lo,
			graph || c == ' ',
			graph && !up && !lo && !dig,
			space,
			up,
			hex,
		};

		if (in[k])
			cls_set(bits, c);
	}
	return true;
}

/*
 * Parse the bracket expression starting after "[" at s[*ip]; git's rules:
 * "!" or "^" negates, the first member may be "]", "a-z" ranges need a
 * member before the "-" and something other than "]" after it, "\" quotes,
 * "[:name:]" is a class and "[:" without ":]" is a plain "[".  Returns
 * false when the expression is unterminated or names an unknown class.
 */
static bool parse_class(unsigned char *bits, const char *s, size_t n,
			size_t *ip)
{
	size_t i = *ip, k;
	bool negated = false, first = true;
	int prev = -1; /* last single member, may start a range */

	memset(bits, 0, 32);
	if (i < n && (s[i] == '!' || s[i] == '^')) {
		negated = true;
		i++;
	}
	for (;;) {
		unsigned char c;

		if (i >= n)
			return false;
		c = (unsigned char)s[i];
		if (c == ']' && !first)
			break;
		first = false;
		if (c == '\\') {
			if (++i >= n)
				return false;
			c = (unsigned char)s[i++];
			cls_set(bits, c);
			prev = c;
		} else if (c == '-' && prev >= 0 && i + 1 < n &&
			   s[i + 1] != ']') {
			unsigned hi;

			i++;
			if (s[i] == '\\' && ++i >= n)
				return false;
			hi = (unsigned char)s[i++];
			for (unsigned x = (unsigned)prev; x <= hi; x++)
				cls_set(bits, x);
			prev = -1;
		} else if (c == '[' && i + 1 < n && s[i + 1] == ':') {
			size_t start = i + 2, end = start;

			while (end < n && s[end] != ']')
				end++;
			if (end >= n)
				return false;
			if (end == start || s[end - 1] != ':') {
				cls_set(bits, '[');
				prev = '[';
				i++;
				continue;
			}
			if (!posix_class(bits, s + start, end - 1 - start))
				return false;
			prev = -1;
			i = end + 1;
		} else {
			cls_set(bits, c);
			prev = c;
			i++;
		}
	}
	*ip = i + 1;
	if (negated)
		for (k = 0; k < 32; k++)
			bits[k] = (unsigned char)~bits[k];
	bits[(unsigned)'/' >> 3] &= (unsigned char)~(1u << ('/' & 7));
	return true;
}

/*
 * Turn s[0..n) into tokens.  With `pathname`, a run of two or more stars
 * that fills a whole segment ("**" between "/"s or the ends; an escaped
 * "\/" counts as "/") is TK_GLOBSTAR, every other run of stars is one
 * TK_STAR.  Returns 0, TOK_INVALID, or -1 (out of memory).
 */
static int tokenize(struct pattern *p, const char *s, size_t n, bool pathname)
{
	size_t i = 0, ccap = 0;

	if (!(p->toks = decree_calloc(n ? n : 1, sizeof(*p->toks))))
		return -1;
	while (i < n) {
		struct tok *t = &p->toks[p->ntoks];
		char c = s[i];

		memset(t, 0, sizeof(*t));
		if (c == '\\') {
			if (i + 1 >= n)
				return TOK_INVALID;
			t->kind = s[i + 1] == '/' ? TK_SLASH : TK_LIT;
			t->ch = (unsigned char)s[i + 1];
			i += 2;
		} else if (c == '?') {
			t->kind = TK_ANY;
			i++;
		} else if (c == '*') {
			size_t j = i;
			bool at_start, at_end;

			while (j < n && s[j] == '*')
				j++;
			at_start = !p->ntoks ||
				   p->toks[p->ntoks - 1].kind == TK_SLASH;
			at_end = j == n || s[j] == '/' ||
				 (s[j] == '\\' && j + 1 < n && s[j + 1] == '/');
			if (pathname && j - i >= 2 && at_start && at_end) {
				t->kind = TK_GLOBSTAR;
				t->min = j < n && s[j] == '\\';
			} else {
				t->kind = TK_STAR;
			}
			i = j;
		} else if (c == '[') {
			if (GROW(p->classes, ccap, p->nclasses + 1) < 0)
				return -1;
			i++;
			if (!parse_class(p->classes[p->nclasses], s, n, &i))
				return TOK_INVALID;
			t->kind = TK_CLASS;
			t->cls = p->nclasses++;
		} else {
			t->kind = c == '/' ? TK_SLASH : TK_LIT;
			t->ch = (unsigned char)c;
			i++;
		}
		p->ntoks++;
	}
	return 0;
}

static int build_segs(struct pattern *p)
{
	size_t i, n = 1, start = 0;

	for (i = 0; i < p->ntoks; i++)
		n += p->toks[i].kind == TK_SLASH;
	if (!(p->segs = decree_calloc(n, sizeof(*p->segs))))
		return -1;
	for (i = 0; i <= p->ntoks; i++) {
		struct seg *g;

		if (i < p->ntoks && p->toks[i].kind != TK_SLASH)
			continue;
		g = &p->segs[p->nsegs++];
		g->start = start;
		g->end = i;
		if (i - start == 1 && p->toks[start].kind == TK_GLOBSTAR) {
			g->globstar = true;
			g->min = p->toks[start].min;
		}
		start = i + 1;
	}
	p->fixed_depth = true;
	for (i = 0; i < p->nsegs; i++)
		p->fixed_depth &= !p->segs[i].globstar;
	return 0;
}

/* The tokens' bytes when they are all literal (a "/" token counts). */
static int literal_of(struct pattern *p, size_t from)
{
	size_t i;

	for (i = from; i < p->ntoks; i++)
		if (p->toks[i].kind != TK_LIT && p->toks[i].kind != TK_SLASH)
			return 1;
	if (!(p->lit = decree_malloc(p->ntoks - from + 1)))
		return -1;
	for (i = from; i < p->ntoks; i++)
		p->lit[i - from] = (char)p->toks[i].ch;
	p->lit_len = p->ntoks - from;
	p->lit[p->lit_len] = '\0';
	return 0;
}

static void pattern_release(struct pattern *p)
{
	decree_free(p->lit);
	decree_free(p->toks);
	decree_free(p->segs);
	decree_free(p->classes);
	decree_free(p->src);
	memset(p, 0, sizeof(*p));
}

/* For a basename glob: its length floor, and in `lit` the longest run of
 * literal bytes (two or more), which any matching name contains. */
static int glob_need(struct pattern *p)
{
	size_t i, run = 0, best = 0, best_end = 0;

	for (i = 0; i < p->ntoks; i++) {
		p->min_len += p->toks[i].kind != TK_STAR;
		run = p->toks[i].kind == TK_LIT ? run + 1 : 0;
		if (run > best) {
			best = run;
			best_end = i + 1;
		}
	}
	if (best < 2)
		return 0;
	if (!(p->lit = decree_malloc(best + 1)))
		return -1;
	for (i = 0; i < best; i++)
		p->lit[i] = (char)p->toks[best_end - best + i].ch;
	p->lit[best] = '\0';
	p->lit_len = best;
	return 0;
}

/* A literal kind keeps only `lit`. */
static int drop_tokens(struct pattern *p, enum pat_kind kind)
{
	p->kind = (unsigned char)kind;
	decree_free(p->toks);
	decree_free(p->classes);
	p->toks = NULL;
	p->classes = NULL;
	p->ntoks = p->nclasses = 0;
	return 0;
}

/* Compile s[0..n) (negation and trailing "/" already removed). */
static int compile(struct pattern *p, const char *s, size_t n)
{
	bool pathname = memchr(s, '/', n) != NULL;
	size_t head = 0, j;
	int r;

	if (!pathname) {
		if ((r = tokenize(p, s, n, false)) != 0)
			return r;
		if ((r = literal_of(p, 0)) <= 0)
			return r ? r : drop_tokens(p, PAT_BASE_LIT);
		if (p->toks[0].kind == TK_STAR && (r = literal_of(p, 1)) <= 0)
			return r ? r : drop_tokens(p, PAT_BASE_SUFFIX);
		p->kind = PAT_BASE_GLOB;
		return glob_need(p);
	}
	if (s[0] == '/') {
		s++;
		n--;
	}
	if (!n)
		return TOK_INVALID;
	while (head < n && !is_glob_special(s[head]))
		head++;
	p->kind = PAT_PATH_GLOB;
	j = head;
	while (j < n && s[j] == '*')
		j++;
	if (head && head < n && s[head - 1] != '/' && j - head >= 2 &&
	    (j == n || s[j] == '/' ||
	     (s[j] == '\\' && j + 1 < n && s[j + 1] == '/'))) {
		/* git's quirk: "**" glued to the literal head. */
		p->quirk = true;
		p->quirk_tail = j == n;
		p->quirk_zero = j == n || s[j] == '/';
		if (!p->quirk_tail) {
			j += s[j] == '/' ? 1 : 2;
			if ((r = tokenize(p, s + j, n - j, true)) != 0)
				return r;
		}
	} else {
		if ((r = tokenize(p, s, n, true)) != 0)
			return r;
		if ((r = literal_of(p, 0)) <= 0)
			return r ? r : drop_tokens(p, PAT_PATH_LIT);
	}
	if (!(p->lit = decree_strndup(s, head)))
		return -1;
	p->lit_len = head;
	return p->quirk_tail ? 0 : build_segs(p);
}

/* git's trimming: trailing spaces go unless quoted by a backslash. */
static size_t trim_spaces(const char *s, size_t n)
{
	size_t i = 0, cut = n;

	while (i < n) {
		if (s[i] == ' ') {
			if (cut == n)
				cut = i;
			i++;
		} else if (s[i] == '\\') {
			if (i + 1 >= n)
				return n;
			cut = n;
			i += 2;
		} else {
			cut = n;
			i++;
		}
	}
	return cut;
}

/* Add one line (no "\n") to `l`; blank lines and comments are skipped. */
static int list_add_line(ignore_list *l, const char *s, size_t n)
{
	struct pattern p;
	const char *nul, *line;
	size_t line_len;
	int r;

	if (!n || s[0] == '#')
		return 0;
	if (s[n - 1] == '\r')
		n--;
	if ((nul = memchr(s, '\0', n)))
		n = (size_t)(nul - s);
	n = trim_spaces(s, n);
	line = s;
	line_len = n;
	memset(&p, 0, sizeof(p));
	if (n && s[0] == '!') {
		p.negated = true;
		s++;
		n--;
	}
	if (n && s[n - 1] == '/') {
		p.dir_only = true;
		n--;
	}
	if (!n)
		return 0;
	if ((r = compile(&p, s, n)) != 0) {
		pattern_release(&p);
		return r < 0 ? r : 0;
	}
	if (!(p.src = decree_strndup(line, line_len)) ||
	    GROW(l->pats, l->cap, l->npats + 1) < 0) {
		pattern_release(&p);
		return -1;
	}
	l->pats[l->npats++] = p;
	return 0;
}

static int list_new(ignore_list **out, const char *base)
{
	ignore_list *l;
	size_t blen = base ? strlen(base) : 0;

	while (blen && base[blen - 1] == '/')
		blen--;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	if (!(l->base = decree_strndup(blen ? base : "", blen))) {
		decree_free(l);
		return -1;
	}
	l->base_len = blen;
	*out = l;
	return 0;
}

void ignore_list_free(ignore_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->npats; i++)
		pattern_release(&l->pats[i]);
	decree_free(l->pats);
	decree_free(l->order);
	decree_free(l->bucket);
	decree_free(l->base);
	decree_free(l);
}

/* The bytes a basename may end with for `p` to match (at most 4, as in
 * "*.[ch]"); 0 means any. */
static size_t last_byte_keys(const struct pattern *p, unsigned keys[4])
{
	const struct tok *t;
	size_t n = 0;
	unsigned c;

	switch (p->kind) {
	case PAT_BASE_LIT:
	case PAT_BASE_SUFFIX:
	case PAT_PATH_LIT:
		if (!p->lit_len)
			return 0;
		keys[0] = (unsigned char)p->lit[p->lit_len - 1];
		return 1;
	case PAT_BASE_GLOB:
		t = &p->toks[p->ntoks - 1];
		if (t->kind == TK_LIT) {
			keys[0] = t->ch;
			return 1;
		}
		if (t->kind != TK_CLASS)
			return 0;
		for (c = 0; c < 256; c++) {
			if (!(p->classes[t->cls][c >> 3] & (1u << (c & 7))))
				continue;
			if (n == 4)
				return 0;
			keys[n++] = c;
		}
		return n;
	default:
		return 0;
	}
}

static int list_index(ignore_list *l)
{
	unsigned keys[4];
	size_t i, b, k, n, total = 0;

	if (l->npats < INDEX_MIN)
		return 0;
	if (!(l->bucket = decree_calloc(NBUCKET, sizeof(*l->bucket))))
		return -1;
	for (i = 0; i < l->npats; i++) {
		if (!(n = last_byte_keys(&l->pats[i], keys)))
			keys[n++] = ANY_LAST;
		for (k = 0; k < n; k++)
			l->bucket[keys[k] + 1]++;
		total += n;
	}
	if (!(l->order = decree_calloc(total, sizeof(*l->order))))
		return -1;
	for (b = 1; b < NBUCKET; b++)
		l->bucket[b] += l->bucket[b - 1];
	for (i = 0; i < l->npats; i++) {
		if (!(n = last_byte_keys(&l->pats[i], keys)))
			keys[n++] = ANY_LAST;
		for (k = 0; k < n; k++)
			l->order[l->bucket[keys[k]]++] = i;
	}
	for (b = NBUCKET - 1; b > 0; b--)
		l->bucket[b] = l->bucket[b - 1];
	l->bucket[0] = 0;
	return 0;
}

int ignore_list_parse(ignore_list **out, const char *base, const char *data,
		      size_t len)
{
	ignore_list *l = NULL;
	size_t i = 0;
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(data || !len);
	*out = NULL;
	if ((r = list_new(&l, base)) < 0)
		return r;
	if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		i = 3; /* a UTF-8 byte order mark, as git skips it */
	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;

		if ((r = list_add_line(l, data + i, end - i)) < 0) {
			ignore_list_free(l);
			return r;
		}
		i = end + 1;
	}
	if ((r = list_index(l)) < 0) {
		ignore_list_free(l);
		return r;
	}
	*out = l;
	return 0;
}

static int list_from_array(ignore_list **out, const char *const *pats)
{
	ignore_list *l = NULL;
	int r;

	if ((r = list_new(&l, "")) < 0)
		return r;
	for (; *pats; pats++) {
		if ((r = list_add_line(l, *pats, strlen(*pats))) < 0) {
			ignore_list_free(l);
			return r;
		}
	}
	if ((r = list_index(l)) < 0) {
		ignore_list_free(l);
		return r;
	}
	*out = l;
	return 0;
}

/* --- matching ------------------------------------------------------------ */

static inline bool tok_eq(const struct pattern *p, const struct tok *t,
			  unsigned char c)
{
	switch (t->kind) {
	case TK_LIT:
		return t->ch == c;
	case TK_ANY:
		return c != '/';
	case TK_CLASS:
		return p->classes[t->cls][c >> 3] & (1u << (c & 7));
	default:
		return false;
	}
}

/* Tokens [ti, te) (no "/" or "**" among them) against s[0..n), which holds
 * no "/" either.  Two pointers, restarting after the last "*". */
static bool match_chars(const struct pattern *p, size_t ti, size_t te,
			const char *s, size_t n)
{
	size_t i = ti, k = 0, star_i = SIZE_MAX, star_k = 0;

	while (k < n) {
		if (i < te && p->toks[i].kind == TK_STAR) {
			star_i = ++i;
			star_k = k;
		} else if (i < te &&
			   tok_eq(p, &p->toks[i], (unsigned char)s[k])) {
			i++;
			k++;
		} else if (star_i != SIZE_MAX) {
			i = star_i;
			k = ++star_k;
		} else {
			return false;
		}
	}
	while (i < te && p->toks[i].kind == TK_STAR)
		i++;
	return i == te;
}

static size_t next_seg(const char *t, size_t n, size_t at)
{
	const char *sl = memchr(t + at, '/', n - at);

	return sl ? (size_t)(sl - t) + 1 : n + 1;
}

/*
 * All segments of `p` against t[0..n).  A text position `at` > n means
 * every text segment is used up.  A "**" segment covers `min` or more
 * whole segments, a last one covers at least one; the two-pointer restart
 * is the last "**" seen, which is exact because every other segment
 * covers exactly one text segment.
 */
static bool match_segs(const struct pattern *p, const char *t, size_t n)
{
	size_t si = 0, at = 0, rs = SIZE_MAX, rat = 0, e;

	for (;;) {
		const struct seg *g = &p->segs[si];

		if (si == p->nsegs) {
			if (at > n)
				return true;
		} else if (g->globstar && si + 1 == p->nsegs) {
			if (at <= n)
				return true;
		} else if (g->globstar) {
			unsigned char m;

			for (m = 0; m < g->min && at <= n; m++)
				at = next_seg(t, n, at);
			if (at <= n) {
				rs = ++si;
				rat = at;
				continue;
			}
		} else if (at <= n) {
			e = next_seg(t, n, at) - 1;
			if (match_chars(p, g->start, g->end, t + at, e - at)) {
				si++;
				at = e + 1;
				continue;
			}
		}
		if (rs == SIZE_MAX || rat > n)
			return false;
		rat = next_seg(t, n, rat);
		if (rat > n)
			return false;
		si = rs;
		at = rat;
	}
}

/* The rest of a quirk pattern after its literal head: "**" then segs. */
static bool match_quirk(const struct pattern *p, const char *t, size_t n)
{
	size_t at;

	if (p->quirk_tail)
		return true;
	if (p->quirk_zero && match_segs(p, t, n))
		return true;
	for (at = 0; (at = next_seg(t, n, at)) <= n;)
		if (match_segs(p, t + at, n - at))
			return true;
	return false;
}

static bool has_slashes(const char *s, size_t n, size_t want)
{
	const char *e = s + n;
	size_t k = 0;

	while ((s = memchr(s, '/', (size_t)(e - s)))) {
		if (++k > want)
			return false;
		s++;
	}
	return k == want;
}

static bool contains(const char *s, size_t n, const char *w, size_t wn)
{
	size_t i;

	for (i = 0; i + wn <= n; i++)
		if (s[i] == w[0] && !memcmp(s + i + 1, w + 1, wn - 1))
			return true;
	return false;
}

static bool pattern_match(const struct pattern *p, const char *rel, size_t rlen,
			  const char *bn, size_t blen)
{
	const struct tok *t;

	/* Cheap tests of the last byte come first: most lines of a big
	 * .gitignore fail there, without a call to memcmp. */
	switch (p->kind) {
	case PAT_BASE_LIT:
		return blen == p->lit_len && bn[blen - 1] == p->lit[blen - 1] &&
		       !memcmp(bn, p->lit, blen);
	case PAT_BASE_SUFFIX:
		if (!p->lit_len)
			return true;
		return blen >= p->lit_len &&
		       bn[blen - 1] == p->lit[p->lit_len - 1] &&
		       !memcmp(bn + blen - p->lit_len, p->lit, p->lit_len);
	case PAT_BASE_GLOB:
		if (blen < p->min_len)
			return false;
		t = &p->toks[p->ntoks - 1];
		if (t->kind != TK_STAR &&
		    !tok_eq(p, t, (unsigned char)bn[blen - 1]))
			return false;
		t = &p->toks[0];
		if (t->kind != TK_STAR && !tok_eq(p, t, (unsigned char)bn[0]))
			return false;
		if (p->lit_len && !contains(bn, blen, p->lit, p->lit_len))
			return false;
		return match_chars(p, 0, p->ntoks, bn, blen);
	case PAT_PATH_LIT:
		return rlen == p->lit_len &&
		       rel[rlen - 1] == p->lit[rlen - 1] &&
		       !memcmp(rel, p->lit, rlen);
	default:
		if (rlen < p->lit_len || memcmp(rel, p->lit, p->lit_len))
			return false;
		if (p->quirk)
			return match_quirk(p, rel + p->lit_len,
					   rlen - p->lit_len);
		if (p->fixed_depth && !has_slashes(rel, rlen, p->nsegs - 1))
			return false;
		return match_segs(p, rel, rlen);
	}
}

/* `rel` is the path below l's base, `bn` its last component. */
/* The last pattern of l that matches (it decides: ignore, or re-include
 * when negated), or NULL. */
static const struct pattern *list_match_rel(const ignore_list *l,
					    const char *rel, size_t rlen,
					    const char *bn, size_t blen,
					    bool is_dir)
{
	const size_t *a, *g;
	size_t i, na, ng;

	if (!l->order || !blen) {
		for (i = l->npats; i-- > 0;) {
			const struct pattern *p = &l->pats[i];

			if (p->dir_only && !is_dir)
				continue;
			if (pattern_match(p, rel, rlen, bn, blen))
				return p;
		}
		return NULL;
	}
	i = (unsigned char)bn[blen - 1];
	a = l->order + l->bucket[i];
	na = l->bucket[i + 1] - l->bucket[i];
	g = l->order + l->bucket[ANY_LAST];
	ng = l->bucket[ANY_LAST + 1] - l->bucket[ANY_LAST];
	while (na || ng) {
		const struct pattern *p;

		if (!ng || (na && a[na - 1] > g[ng - 1]))
			i = a[--na];
		else
			i = g[--ng];
		p = &l->pats[i];
		if (p->dir_only && !is_dir)
			continue;
		if (pattern_match(p, rel, rlen, bn, blen))
			return p;
	}
	return NULL;
}

static ignore_result result_of(const struct pattern *p)
{
	return !p ? IGNORE_NONE : p->negated ? IGNORE_WHITELIST : IGNORE_IGNORE;
}

static const char *basename_of(const char *path, size_t len)
{
	const char *s = path + len;

	while (s > path && s[-1] != '/')
		s--;
	return s;
}

ignore_result ignore_list_match(const ignore_list *l, const char *path,
				size_t len, bool is_dir)
{
	const char *bn;

	if (!l || !path)
		return IGNORE_NONE;
	if (l->base_len) {
		if (len <= l->base_len + 1 || path[l->base_len] != '/' ||
		    memcmp(path, l->base, l->base_len))
			return IGNORE_NONE;
		path += l->base_len + 1;
		len -= l->base_len + 1;
	}
	if (!len)
		return IGNORE_NONE;
	bn = basename_of(path, len);
	return result_of(list_match_rel(l, path, len, bn,
					len - (size_t)(bn - path), is_dir));
}

/* --- the matcher: per-directory cache and precedence --------------------- */

enum { LIST_GIT = 0, LIST_DECREE = 1 };
const char *const ignore_rules_files[IGNORE_RULES_FILES] = { ".gitignore",
							     ".decreeignore" };

struct dir_node {
	char *path;
	size_t len;
	uint64_t hash;
	bool loaded;
	ignore_list *lists[2];
	struct dir_node *parent; /* NULL for the root ("") */
	size_t depth;		 /* the root's is 0 */
};

/* One list in force for the entries of a directory, in precedence order
 * (force_build's): where its paths start (skip), and what it is (src, dir). */
struct in_force {
	const ignore_list *list;
	size_t skip;
	int src;
	const char *dir;
};

struct ignore_matcher {
	ignore_load_fn load;
	void *payload;
	ignore_list *builtin;
	ignore_list *extra; /* NULL without extra patterns */
	struct dir_node **slots;
	size_t nslots, nnodes;
	buf content;
	/* ancestors ("" first) of the directory chain_dir */
	buf chain_dir;
	struct dir_node **chain;
	size_t chain_len, chain_cap;
	bool chain_ok;
	/* the lists in force below the first force_ndirs nodes of the chain
	 * (all of them for the entries of chain_dir), built on the first
	 * check there (force_ok): most checks look at one list or two */
	struct in_force *force;
	size_t nforce, force_cap, force_ndirs;
	bool force_ok;
	/* the rule that decided the last check (ignore_matcher_last_rule):
	 * its pattern, its source (LIST_GIT, LIST_DECREE, SRC_EXTRA,
	 * SRC_BUILTIN) and the directory of its file */
	const struct pattern *hit;
	int hit_src;
	const char *hit_dir;
};

enum { SRC_EXTRA = 2, SRC_BUILTIN = 3 };

#define FNV_BASIS UINT64_C(14695981039346656037)
#define FNV_PRIME UINT64_C(1099511628211)

static void node_free(struct dir_node *d)
{
	if (!d)
		return;
	ignore_list_free(d->lists[0]);
	ignore_list_free(d->lists[1]);
	decree_free(d->path);
	decree_free(d);
}

void ignore_matcher_free(ignore_matcher *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nslots; i++)
		node_free(m->slots[i]);
	decree_free(m->slots);
	decree_free(m->chain);
	decree_free(m->force);
	ignore_list_free(m->builtin);
	ignore_list_free(m->extra);
	buf_release(&m->content);
	buf_release(&m->chain_dir);
	decree_free(m);
}

int ignore_matcher_new(ignore_matcher **out, ignore_load_fn load, void *payload,
		       const char *const *extra_patterns)
{
	ignore_matcher *m;
	int r;

	DECREE_ASSERT_ARG(out);
	*out = NULL;
	if (!(m = decree_calloc(1, sizeof(*m))))
		return -1;
	m->load = load;
	m->payload = payload;
	buf_init(&m->content);
	buf_init(&m->chain_dir);
	if (!(m->slots = decree_calloc(64, sizeof(*m->slots)))) {
		r = -1;
		goto fail;
	}
	m->nslots = 64;
	if ((r = list_from_array(&m->builtin, ignore_builtin_patterns)) < 0)
		goto fail;
	if (extra_patterns && *extra_patterns &&
	    (r = list_from_array(&m->extra, extra_patterns)) < 0)
		goto fail;
	*out = m;
	return 0;
fail:
	ignore_matcher_free(m);
	return r;
}

static int map_grow(ignore_matcher *m)
{
	size_t n = m->nslots * 2, i, k;
	struct dir_node **slots;

	if (!(slots = decree_calloc(n, sizeof(*slots))))
		return -1;
	for (i = 0; i < m->nslots; i++) {
		struct dir_node *d = m->slots[i];

		if (!d)
			continue;
		k = (size_t)d->hash & (n - 1);
		while (slots[k])
			k = (k + 1) & (n - 1);
		slots[k] = d;
	}
	decree_free(m->slots);
	m->slots = slots;
	m->nslots = n;
	return 0;
}

/* The node of directory dir[0..len), when a chain has made it. */
static struct dir_node *node_find(const ignore_matcher *m, const char *dir,
				  size_t len, uint64_t hash)
{
	struct dir_node *d;

	for (size_t k = (size_t)hash & (m->nslots - 1); (d = m->slots[k]);
	     k = (k + 1) & (m->nslots - 1))
		if (d->hash == hash && d->len == len &&
		    !memcmp(d->path, dir, len))
			return d;
	return NULL;
}

/* The node of dir[0..len), made (below `parent`) when there is none. */
static int node_get(struct dir_node **out, ignore_matcher *m, const char *dir,
		    size_t len, uint64_t hash, struct dir_node *parent)
{
	struct dir_node *d;
	size_t k;

	if ((*out = node_find(m, dir, len, hash)))
		return 0;
	if ((m->nnodes + 1) * 2 > m->nslots && map_grow(m) < 0)
		return -1;
	for (k = (size_t)hash & (m->nslots - 1); m->slots[k];
	     k = (k + 1) & (m->nslots - 1))
		;
	if (!(d = decree_calloc(1, sizeof(*d))))
		return -1;
	if (!(d->path = decree_strndup(dir, len))) {
		decree_free(d);
		return -1;
	}
	d->len = len;
	d->hash = hash;
	d->parent = parent;
	d->depth = parent ? parent->depth + 1 : 0;
	m->slots[k] = d;
	m->nnodes++;
	*out = d;
	return 0;
}

static int node_load(ignore_matcher *m, struct dir_node *d)
{
	int k, r;

	if (d->loaded)
		return 0;
	for (k = 0; k < 2 && m->load; k++) {
		bool found = false;

		buf_clear(&m->content);
		r = m->load(m->payload, d->path, ignore_rules_files[k],
			    &m->content, &found);
		if (r == 0 && found)
			r = ignore_list_parse(&d->lists[k], d->path,
					      m->content.ptr, m->content.len);
		if (r < 0) {
			ignore_list_free(d->lists[0]);
			d->lists[0] = NULL;
			return r;
		}
		if (d->lists[k] && !d->lists[k]->npats) {
			/* only comments: as good as no file */
			ignore_list_free(d->lists[k]);
			d->lists[k] = NULL;
		}
	}
	if (m->content.cap > 1 << 20)
		buf_release(&m->content);
	d->loaded = true;
	return 0;
}

static int bad_path(const char *path, size_t len)
{
	return decree_error_set(DECREE_EINVALID, "invalid path '%.*s'",
				len > 200 ? 200 : (int)len, path);
}

/* Make m->chain the ancestors of directory path[0..dlen) and itself, root
 * first.  A directory met before brings its ancestors along (parent);
 * otherwise each is looked up or made, hashes computed along the path. */
static int chain_get(ignore_matcher *m, const char *path, size_t dlen)
{
	uint64_t h = FNV_BASIS, hp = FNV_BASIS; /* of the path, its parent */
	struct dir_node *d, *up;
	size_t i, n = 1, plen = 0;
	int r;

	if (m->chain_ok && m->chain_dir.len == dlen &&
	    !memcmp(m->chain_dir.ptr, path, dlen))
		return 0;
	m->chain_ok = false;
	m->force_ok = false;
	for (i = 0; i < dlen; i++) {
		if (path[i] == '/') {
			if (i == 0 || path[i - 1] == '/')
				return bad_path(path, dlen);
			n++;
			hp = h;
			plen = i;
		}
		h = (h ^ (unsigned char)path[i]) * FNV_PRIME;
	}
	if (dlen && path[dlen - 1] == '/')
		return bad_path(path, dlen);
	n += dlen > 0;
	if (GROW(m->chain, m->chain_cap, n) < 0)
		return -1;
	d = node_find(m, path, dlen, h);
	if (!d && dlen && (up = node_find(m, path, plen, hp)) &&
	    up->depth + 2 == n && (r = node_get(&d, m, path, dlen, h, up)) < 0)
		return r; /* (a new directory below one met before) */
	if (d && d->depth + 1 == n) {
		for (i = n; d; d = d->parent)
			m->chain[--i] = d;
		m->chain_len = n;
	} else {
		h = FNV_BASIS;
		if ((r = node_get(&m->chain[0], m, path, 0, h, NULL)) < 0)
			return r;
		m->chain_len = 1;
		for (i = 0; i < dlen; i++) {
			if (path[i] == '/') {
				if ((r = node_get(&m->chain[m->chain_len], m,
						  path, i, h,
						  m->chain[m->chain_len - 1])) <
				    0)
					return r;
				m->chain_len++;
			}
			h = (h ^ (unsigned char)path[i]) * FNV_PRIME;
		}
		if (dlen) {
			r = node_get(&m->chain[m->chain_len], m, path, dlen, h,
				     m->chain[m->chain_len - 1]);
			if (r < 0)
				return r;
			m->chain_len++;
		}
	}
	buf_clear(&m->chain_dir);
	if ((r = buf_put(&m->chain_dir, path, dlen)) < 0)
		return r;
	m->chain_ok = true;
	return 0;
}

static int force_add(ignore_matcher *m, const ignore_list *l, size_t skip,
		     int src, const char *dir)
{
	struct in_force *f;

	if (!l)
		return 0;
	if (GROW(m->force, m->force_cap, m->nforce + 1) < 0)
		return -1;
	f = &m->force[m->nforce++];
	f->list = l;
	f->skip = skip;
	f->src = src;
	f->dir = dir;
	return 0;
}

/* m->force: the lists in force below the first `ndirs` chain nodes, in
 * precedence order: .decreeignore deepest first, the extra patterns,
 * .gitignore deepest first, the built-in list.  Loads those nodes' files. */
static int force_build(ignore_matcher *m, size_t ndirs)
{
	int k, r;

	m->force_ok = false;
	m->nforce = 0;
	for (size_t i = 0; i < ndirs; i++)
		if ((r = node_load(m, m->chain[i])) < 0)
			return r;
	for (k = LIST_DECREE; k >= LIST_GIT; k--) {
		for (size_t i = ndirs; i-- > 0;) {
			const struct dir_node *d = m->chain[i];

			if ((r = force_add(m, d->lists[k],
					   d->len ? d->len + 1 : 0, k,
					   d->path)) < 0)
				return r;
		}
		if (k == LIST_DECREE &&
		    (r = force_add(m, m->extra, 0, SRC_EXTRA, NULL)) < 0)
			return r;
	}
	if ((r = force_add(m, m->builtin, 0, SRC_BUILTIN, NULL)) < 0)
		return r;
	m->force_ndirs = ndirs;
	m->force_ok = true;
	return 0;
}

/*
 * Decide path[0..len) from the files of the first `ndirs` chain nodes (its
 * ancestors), the extra patterns and the built-in list, in force_build's
 * order.  The first answer that is not NONE wins.
 */
static int decide(ignore_result *res, ignore_matcher *m, const char *path,
		  size_t len, size_t bpos, bool is_dir, size_t ndirs)
{
	int err;

	if ((!m->force_ok || m->force_ndirs != ndirs) &&
	    (err = force_build(m, ndirs)) < 0)
		return err;
	m->hit = NULL;
	m->hit_src = SRC_BUILTIN;
	for (size_t i = 0; i < m->nforce && !m->hit; i++) {
		const struct in_force *f = &m->force[i];

		m->hit = list_match_rel(f->list, path + f->skip, len - f->skip,
					path + bpos, len - bpos, is_dir);
		m->hit_src = f->src;
		m->hit_dir = f->dir;
	}
	*res = result_of(m->hit);
	return 0;
}

bool ignore_is_rules_file(const char *bn, size_t blen)
{
	return (blen == 10 && !memcmp(bn, ".gitignore", 10)) ||
	       (blen == 13 && !memcmp(bn, ".decreeignore", 13));
}

/* Common entry: validate the path, set up the chain of its parent and
 * return where its basename starts in *bpos. */
static int prepare(size_t *bpos, ignore_matcher *m, const char *path,
		   size_t len)
{
	const char *bn;

	if (path[0] == '/' || path[len - 1] == '/')
		return bad_path(path, len);
	bn = basename_of(path, len);
	*bpos = (size_t)(bn - path);
	return chain_get(m, path, *bpos ? *bpos - 1 : 0);
}

int ignore_matcher_check(ignore_matcher *m, const char *path, size_t len,
			 bool is_dir, bool *ignored)
{
	ignore_result r;
	size_t bpos;
	int err;

	DECREE_ASSERT_ARG(ignored);
	*ignored = false;
	DECREE_ASSERT_ARG(m);
	DECREE_ASSERT_ARG(path || !len);
	if (!len)
		return 0; /* the root itself */
	if ((err = prepare(&bpos, m, path, len)) < 0)
		return err;
	if (!is_dir && ignore_is_rules_file(path + bpos, len - bpos))
		return 0;
	if ((err = decide(&r, m, path, len, bpos, is_dir, m->chain_len)) < 0)
		return err;
	*ignored = r == IGNORE_IGNORE;
	return 0;
}

int ignore_matcher_excluded(ignore_matcher *m, const char *path, size_t len,
			    bool is_dir, bool *ignored)
{
	ignore_result r;
	size_t i, bpos, start = 0, ndirs = 1;
	int err;

	DECREE_ASSERT_ARG(ignored);
	*ignored = false;
	DECREE_ASSERT_ARG(m);
	DECREE_ASSERT_ARG(path || !len);
	if (!len)
		return 0;
	if ((err = prepare(&bpos, m, path, len)) < 0)
		return err;
	for (i = 0; i < len; i++) {
		if (path[i] != '/')
			continue;
		err = decide(&r, m, path, i, start, true, ndirs++);
		if (err < 0)
			return err;
		if (r == IGNORE_IGNORE) {
			*ignored = true;
			return 0;
		}
		start = i + 1;
	}
	if (!is_dir && ignore_is_rules_file(path + bpos, len - bpos))
		return 0;
	if ((err = decide(&r, m, path, len, bpos, is_dir, ndirs)) < 0)
		return err;
	*ignored = r == IGNORE_IGNORE;
	return 0;
}

const void *ignore_matcher_last_rule(const ignore_matcher *m, buf *source,
				     const char **pattern)
{
	if (!m->hit)
		return NULL;
	if (source) {
		buf_clear(source);
		if (m->hit_src == SRC_BUILTIN)
			buf_puts(source, "built-in");
		else if (m->hit_src == SRC_EXTRA)
			buf_puts(source, "exclude");
		else
			buf_printf(source, "%s%s%s", m->hit_dir,
				   *m->hit_dir ? "/" : "",
				   ignore_rules_files[m->hit_src]);
	}
	if (pattern)
		*pattern = m->hit->src;
	return m->hit;
}
