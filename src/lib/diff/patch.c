/*
 * patch.c - unified diff parser and in-memory applier (see patch.h).
 *
 * The parser walks the text line by line.  A record starts at
 * "diff --git " (git or decree) or at a "--- " line directly followed by
 * "+++ " (diff -u / diff -ruN); every other line outside a record is
 * ignored, like patch(1) and git apply do with mail text.  Hunk bodies are
 * counted against their "@@" header, so a trailing "-- " mail signature
 * is never taken for a deletion.  A "\" line marks the line before it as
 * lacking its final newline; any text after "\ " is accepted because
 * localized diffs translate "No newline at end of file".
 *
 * Invariants of a parsed set:
 *  - every path passed fs_path_is_safe(path, true);
 *  - hunks of a file are in order, do not overlap, have bodies that match
 *    their counts, and their new-side positions agree with the old-side
 *    positions plus the running line delta, so one position check per
 *    direction is enough and reverse application is exact;
 *  - a line without '\n' is the last line of its side in its hunk.
 *
 * Positions: "@@ -s,c" names lines s..s+c-1 (1-based); with c == 0 it
 * names the gap after line s.  Internally pos = c ? s - 1 : s is the
 * 0-based index of the first line the hunk covers or inserts before.
 *
 * Applying never guesses: by default a hunk must match byte for byte at
 * its own position (CR, missing newlines and non-UTF-8 bytes included).
 * PATCH_ALLOW_OFFSET lets a hunk move to the nearest exact match.
 *
 * Binary content comes two ways: decree's base64 record carries both
 * sides whole; git's binary patch (gitbin.h) carries a literal or a delta
 * each way, inflated and checked at parse time, and is applied only to a
 * file with the index line's old blob id and only if the result has the
 * new one, which is what makes a delta as safe as a checked hunk.
 */
#include "util/common.h"
#include "diff/patch.h"
#include "diff/gitbin.h"
#include "util/base64.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "diff/xdiff.h"

typedef struct {
	const char *text;
	size_t len;
	size_t pos;    /* start of the current line */
	size_t lineno; /* its 1-based number */
	const char *name;
	int strip;
	patch_set *ps;
} parser;

/* ---- errors --------------------------------------------------------- */

static int perr_at(const char *name, size_t lineno, int code, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));

static int perr_at(const char *name, size_t lineno, int code, const char *fmt,
		   ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return decree_error_set(code, "%s:%zu: %s", name, lineno, msg);
}

#define perr(p, ...) \
	perr_at((p)->name, (p)->lineno, DECREE_EINVALID, __VA_ARGS__)

/* ---- lines ---------------------------------------------------------- */

static bool at_end(const parser *p)
{
	return p->pos >= p->len;
}

/* Length of the current line including its '\n' (if any). */
static size_t cur_len(const parser *p)
{
	const char *s = p->text + p->pos, *nl;

	if (at_end(p))
		return 0;
	nl = memchr(s, '\n', p->len - p->pos);
	return nl ? (size_t)(nl - s) + 1 : p->len - p->pos;
}

static const char *cur(const parser *p)
{
	return p->text + p->pos;
}

static void advance(parser *p)
{
	p->pos += cur_len(p);
	p->lineno++;
}

static bool has_prefix(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && !memcmp(s, lit, l);
}

static bool cur_is(const parser *p, const char *lit)
{
	return has_prefix(cur(p), cur_len(p), lit);
}

/* Length of the current line without "\n" (and without a CR before it). */
static size_t body_len(const char *s, size_t n)
{
	if (n && s[n - 1] == '\n')
		n--;
	if (n && s[n - 1] == '\r')
		n--;
	return n;
}

/* Print a line for a message: at most 40 bytes, escaped. */
static void show_line(char *out, size_t outsz, const char *s, size_t n)
{
	size_t o = 0, i;

	for (i = 0; i < n && o + 8 < outsz; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == 40) {
			o += (size_t)snprintf(out + o, outsz - o, "...");
			break;
		}
		if (c == '\n' && i == n - 1)
			break;
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

/* ---- numbers, modes, names ------------------------------------------- */

static bool parse_size(const char **s, const char *end, size_t *out)
{
	size_t v = 0;
	const char *q = *s;

	if (q >= end || *q < '0' || *q > '9')
		return false;
	while (q < end && *q >= '0' && *q <= '9') {
		if (v > (SIZE_MAX / 2 - 9) / 10)
			return false;
		v = v * 10 + (size_t)(*q - '0');
		q++;
	}
	*s = q;
	*out = v;
	return true;
}

static int parse_mode(parser *p, const char *s, size_t n, uint32_t *out)
{
	uint32_t v = 0;
	size_t i, e = body_len(s, n);

	if (!e)
		return perr(p, "missing file mode");
	for (i = 0; i < e; i++) {
		if (s[i] < '0' || s[i] > '7' || v > 0777777)
			return perr(p, "invalid file mode '%.*s'", (int)e, s);
		v = v * 8 + (uint32_t)(s[i] - '0');
	}
	if (v == 0160000)
		return perr(p, "submodule changes are not supported");
	/* any permission bits of a regular file: decree writes a 0600 file
	 * as 100600 (docs/diff-format.md) */
	if ((v & ~0777u) != 0100000 && v != 0120000)
		return perr(p, "unsupported file mode %06o", v);
	*out = v;
	return 0;
}

/*
 * C-style quoted name as git writes it; s[0] == '"'.  Appends the bytes to
 * `out` and sets *used to the length consumed including both quotes.
 */
static int unquote(parser *p, buf *out, const char *s, size_t n, size_t *used)
{
	size_t i = 1;

	while (i < n && s[i] != '"') {
		char c = s[i++];

		if (c == '\n')
			break;
		if (c == '\\') {
			if (i >= n)
				break;
			c = s[i++];
			switch (c) {
			case 'a':
				c = '\a';
				break;
			case 'b':
				c = '\b';
				break;
			case 't':
				c = '\t';
				break;
			case 'n':
				c = '\n';
				break;
			case 'v':
				c = '\v';
				break;
			case 'f':
				c = '\f';
				break;
			case 'r':
				c = '\r';
				break;
			case '"':
			case '\\':
				break;
			default:
				if (c >= '0' && c <= '3' && i + 1 < n &&
				    s[i] >= '0' && s[i] <= '7' &&
				    s[i + 1] >= '0' && s[i + 1] <= '7') {
					c = (char)((c - '0') << 6 |
						   (s[i] - '0') << 3 |
						   (s[i + 1] - '0'));
					i += 2;
					break;
				}
				return perr(p, "invalid escape in quoted name");
			}
			if (c == '\0')
				return perr(p, "file name contains a NUL byte");
		}
		if (buf_putc(out, c) < 0)
			return DECREE_ERROR;
	}
	if (i >= n || s[i] != '"')
		return perr(p, "unterminated quoted file name");
	*used = i + 1;
	return 0;
}

/* Pointer past `strip` leading components of `name`, or NULL. */
static const char *strip_components(const char *name, int strip)
{
	while (strip-- > 0) {
		const char *sl = strchr(name, '/');
		if (!sl)
			return NULL;
		/* "b//tmp/x" leaves "/tmp/x": absolute, refused by the
		 * caller (as git apply does), never quietly made relative */
		name = sl + 1;
	}
	return name;
}

static int set_path(parser *p, char **dst, const char *name, int strip)
{
	const char *s = strip_components(name, strip);
	char saved[1024];

	if (!s || !*s)
		return perr(p, "cannot strip %d component%s from '%s'", strip,
			    strip == 1 ? "" : "s", name);
	if (!fs_path_is_safe(s, true)) {
		snprintf(saved, sizeof(saved), "%s", error_last());
		return perr(p, "%s", saved);
	}
	decree_free(*dst);
	if (!(*dst = decree_strdup(s)))
		return DECREE_ERROR;
	return 0;
}

/* days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar */
static long days_since_epoch(long y, long m, long d)
{
	long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * diff -N marks an absent file with the epoch as its time stamp, in the
 * local zone of whoever ran it: "1970-01-01 00:00:00.000000000 +0000" or
 * "1969-12-31 19:00:00.000000000 -0500".
 */
static bool is_epoch(const char *s, size_t n)
{
	long f[7] = { 0 }, sign;
	const char *end = s + n;
	static const char seps[] = "-- ::";
	int i;

	for (i = 0; i < 6; i++) {
		size_t v;
		if (!parse_size(&s, end, &v) || v > 100000)
			return false;
		f[i] = (long)v;
		if (i < 5) {
			if (s >= end || *s != seps[i])
				return false;
			s++;
		}
	}
	if (s < end && *s == '.') {
		for (s++; s < end && *s >= '0' && *s <= '9'; s++)
			if (*s != '0')
				return false;
	}
	if (s >= end || *s++ != ' ' || s >= end || (*s != '+' && *s != '-'))
		return false;
	sign = *s++ == '-' ? -1 : 1;
	if (end - s < 4)
		return false;
	for (i = 0; i < 4; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	f[6] = ((s[0] - '0') * 10 + (s[1] - '0')) * 3600 +
	       ((s[2] - '0') * 10 + (s[3] - '0')) * 60;
	return days_since_epoch(f[0], f[1], f[2]) * 86400 + f[3] * 3600 +
		       f[4] * 60 + f[5] - sign * f[6] ==
	       0;
}

typedef struct {
	buf name;
	bool is_null; /* /dev/null, or the epoch time stamp of diff -N */
} label;

/* The name on a "--- " or "+++ " line (s points after the marker). */
static int parse_label(parser *p, label *lb, const char *s, size_t n)
{
	size_t e = n && s[n - 1] == '\n' ? n - 1 : n, used;
	const char *tab;

	buf_clear(&lb->name);
	lb->is_null = false;
	if (e && s[0] == '"') {
		int r = unquote(p, &lb->name, s, e, &used);
		if (r < 0)
			return r;
		tab = used < e && s[used] == '\t' ? s + used : NULL;
	} else {
		tab = memchr(s, '\t', e);
		used = tab ? (size_t)(tab - s) : body_len(s, e);
		if (buf_put(&lb->name, s, used) < 0)
			return DECREE_ERROR;
	}
	if (!lb->name.len)
		return perr(p, "missing file name");
	if (!strcmp(lb->name.ptr, "/dev/null") ||
	    (tab && is_epoch(tab + 1, (size_t)(s + e - tab - 1))))
		lb->is_null = true;
	return 0;
}

/* ---- file records ----------------------------------------------------- */

static patch_file *new_file(parser *p)
{
	patch_set *ps = p->ps;
	patch_file *f;

	if (GROW(ps->files, ps->cap, ps->nfiles + 1) < 0)
		return NULL;
	f = &ps->files[ps->nfiles++];
	memset(f, 0, sizeof(*f));
	f->old_exists = f->new_exists = true;
	f->lineno = p->lineno;
	f->patch_name = ps->name;
	return f;
}

static void file_release(patch_file *f)
{
	decree_free(f->old_path);
	decree_free(f->new_path);
	decree_free(f->bin_old);
	decree_free(f->bin_new);
	decree_free(f->git_fwd.data);
	decree_free(f->git_rev.data);
	decree_free(f->hunks);
	decree_free(f->lines);
}

static int push_line(patch_file *f, size_t *cap, char op, const char *s,
		     size_t n)
{
	patch_line *l;

	if (GROW(f->lines, *cap, f->nlines + 1) < 0)
		return DECREE_ERROR;
	l = &f->lines[f->nlines++];
	l->op = op;
	l->ptr = s;
	l->len = n;
	return 0;
}

/* "@@ -s[,c] +s[,c] @@..." */
static int parse_hunk_header(parser *p, patch_hunk *h)
{
	const char *s = cur(p), *end = s + cur_len(p);

	s += 4; /* "@@ -" */
	if (!parse_size(&s, end, &h->old_start))
		goto bad;
	h->old_count = 1;
	if (s < end && *s == ',') {
		s++;
		if (!parse_size(&s, end, &h->old_count))
			goto bad;
	}
	if (end - s < 2 || s[0] != ' ' || s[1] != '+')
		goto bad;
	s += 2;
	if (!parse_size(&s, end, &h->new_start))
		goto bad;
	h->new_count = 1;
	if (s < end && *s == ',') {
		s++;
		if (!parse_size(&s, end, &h->new_count))
			goto bad;
	}
	if (end - s < 3 || memcmp(s, " @@", 3))
		goto bad;
	if ((h->old_count && !h->old_start) || (h->new_count && !h->new_start))
		return perr(p, "hunk header names line 0");
	return 0;
bad:
	return perr(p, "malformed hunk header '%.*s'",
		    (int)body_len(cur(p), cur_len(p)), cur(p));
}

static int parse_hunk(parser *p, patch_file *f, size_t *hcap, size_t *lcap)
{
	patch_hunk h;
	size_t orem, nrem, i, hunkno = f->nhunks + 1;
	size_t last_old = SIZE_MAX, last_new = SIZE_MAX;
	int r;

	if ((r = parse_hunk_header(p, &h)) < 0)
		return r;
	h.lineno = p->lineno;
	h.first = f->nlines;
	orem = h.old_count;
	nrem = h.new_count;
	advance(p);
	while (orem || nrem) {
		const char *s = cur(p);
		size_t n = cur_len(p);
		char op;

		if (at_end(p))
			return perr(p,
				    "hunk #%zu ends early: %zu old and %zu "
				    "new lines missing",
				    hunkno, orem, nrem);
		if (s[0] == '\\') {
			patch_line *l = f->nlines > h.first
						? &f->lines[f->nlines - 1]
						: NULL;
			if (!l || !l->len || l->ptr[l->len - 1] != '\n' ||
			    l->len == 1)
				return perr(p, "misplaced \"\\ No newline\" "
					       "marker");
			l->len--;
			advance(p);
			continue;
		}
		if (s[n - 1] != '\n')
			return perr(p, "patch ends in the middle of a line");
		if (n == 1) {
			/* An empty context line whose space was eaten. */
			op = ' ';
		} else {
			op = s[0];
			s++;
			n--;
		}
		if (op != ' ' && op != '-' && op != '+')
			return perr(p,
				    "unexpected line in hunk #%zu (%zu old "
				    "and %zu new lines still expected)",
				    hunkno, orem, nrem);
		if ((op != '+' && !orem) || (op != '-' && !nrem))
			return perr(p,
				    "hunk #%zu has more lines than its "
				    "header says",
				    hunkno);
		if (op != '+')
			orem--;
		if (op != '-')
			nrem--;
		if ((r = push_line(f, lcap, op, s, n)) < 0)
			return r;
		advance(p);
	}
	if (!at_end(p) && cur(p)[0] == '\\') {
		patch_line *l = f->nlines > h.first ? &f->lines[f->nlines - 1]
						    : NULL;
		if (!l || l->len <= 1 || l->ptr[l->len - 1] != '\n')
			return perr(p, "misplaced \"\\ No newline\" marker");
		l->len--;
		advance(p);
	}
	h.nlines = f->nlines - h.first;

	/* A line without newline must end its side of the hunk. */
	for (i = h.first; i < f->nlines; i++) {
		if (f->lines[i].op != '+')
			last_old = i;
		if (f->lines[i].op != '-')
			last_new = i;
	}
	for (i = h.first; i < f->nlines; i++) {
		const patch_line *l = &f->lines[i];

		if (l->ptr[l->len - 1] == '\n')
			continue;
		if ((l->op != '+' && i != last_old) ||
		    (l->op != '-' && i != last_new))
			return perr_at(p->name, h.lineno, DECREE_EINVALID,
				       "hunk #%zu has a line without newline "
				       "before its end",
				       hunkno);
	}
	if (GROW(f->hunks, *hcap, f->nhunks + 1) < 0)
		return DECREE_ERROR;
	f->hunks[f->nhunks++] = h;
	return 0;
}

static int parse_hunks(parser *p, patch_file *f)
{
	size_t hcap = 0, lcap = 0, i, prev_end = 0;
	ptrdiff_t delta = 0;
	int r;

	while (!at_end(p) && cur_is(p, "@@ -"))
		if ((r = parse_hunk(p, f, &hcap, &lcap)) < 0)
			return r;
	if (!f->nhunks)
		return perr(p, "file header without hunks");
	for (i = 0; i < f->nhunks; i++) {
		const patch_hunk *h = &f->hunks[i];
		size_t opos = h->old_count ? h->old_start - 1 : h->old_start;
		size_t npos = h->new_count ? h->new_start - 1 : h->new_start;

		if (opos < prev_end)
			return perr_at(p->name, h->lineno, DECREE_EINVALID,
				       "hunk #%zu overlaps the one before",
				       i + 1);
		if ((ptrdiff_t)npos != (ptrdiff_t)opos + delta)
			return perr_at(p->name, h->lineno, DECREE_EINVALID,
				       "hunk #%zu: new line %zu contradicts "
				       "the hunks before it",
				       i + 1, h->new_start);
		delta += (ptrdiff_t)h->new_count - (ptrdiff_t)h->old_count;
		prev_end = opos + h->old_count;
	}
	if (!f->old_exists)
		for (i = 0; i < f->nhunks; i++)
			if (f->hunks[i].old_count)
				return perr_at(p->name, f->hunks[i].lineno,
					       DECREE_EINVALID,
					       "hunk of a new file removes "
					       "lines");
	if (!f->new_exists)
		for (i = 0; i < f->nhunks; i++)
			if (f->hunks[i].new_count)
				return perr_at(p->name, f->hunks[i].lineno,
					       DECREE_EINVALID,
					       "hunk of a deleted file adds "
					       "lines");
	return 0;
}

static bool is_b64_line(const char *s, size_t n)
{
	size_t i, e = n && s[n - 1] == '\n' ? n - 1 : n;

	if (!e)
		return false;
	for (i = 0; i < e; i++)
		if (!base64_is_char(s[i]) && s[i] != '=')
			return false;
	return true;
}

static bool is_blank(const parser *p)
{
	return !at_end(p) && !body_len(cur(p), cur_len(p));
}

/*
 * One block of git's binary patch: "literal N" or "delta N", base85
 * lines, an empty line (or the end of the patch).  The data is inflated
 * and, for a delta, its structure checked here, so a damaged block is a
 * parse error naming its line, never a half-done apply.
 */
static int parse_git_block(parser *p, patch_git_block *b)
{
	const char *s = cur(p), *end = s + cur_len(p);
	size_t want, start = p->lineno;
	buf z = BUF_INIT, data = BUF_INIT;
	const char *what = "data";
	char why[256];
	int r;

	b->is_delta = s[0] == 'd';
	s += b->is_delta ? strlen("delta ") : strlen("literal ");
	if (!parse_size(&s, end, &want) || body_len(s, (size_t)(end - s)))
		return perr(p, "malformed binary patch line '%.*s'",
			    (int)body_len(cur(p), cur_len(p)), cur(p));
	if (want >= (b->is_delta ? GITBIN_MAX_DELTA : GITBIN_MAX_SIZE))
		return perr(p, "binary patch of %zu bytes is too large", want);
	advance(p);
	while (!at_end(p) && !is_blank(p)) {
		if ((r = gitbin_base85_line(
			     &z, cur(p), body_len(cur(p), cur_len(p)))) < 0) {
			if (r == DECREE_EINVALID) {
				snprintf(why, sizeof(why), "%s", error_last());
				r = perr(p, "malformed binary patch data: %s",
					 why);
			}
			goto done;
		}
		advance(p);
	}
	if (!z.len) {
		r = perr_at(p->name, start, DECREE_EINVALID,
			    "binary patch block without data");
		goto done;
	}
	if (is_blank(p))
		advance(p);
	if ((r = gitbin_inflate(&data, z.ptr, z.len, want)) < 0) {
		what = "data";
	} else if (b->is_delta &&
		   (r = gitbin_delta_check(data.ptr, data.len)) < 0) {
		what = "delta";
	}
	if (r < 0) {
		if (r == DECREE_EINVALID) {
			snprintf(why, sizeof(why), "%s", error_last());
			r = perr_at(p->name, start, DECREE_EINVALID,
				    "damaged binary patch %s: %s", what, why);
		}
		goto done;
	}
	b->len = data.len;
	if (!(b->data = buf_detach(&data, NULL)))
		r = DECREE_ERROR;
done:
	buf_release(&z);
	buf_release(&data);
	return r;
}

/* The size a block gives: the literal's, or the delta's target size. */
static size_t git_block_result_len(const patch_git_block *b)
{
	size_t src, dst;

	if (!b->is_delta)
		return b->len;
	/* checked by parse_git_block */
	return gitbin_delta_sizes(&src, &dst, b->data, b->len) == 0 ? dst : 0;
}

/* git's binary patch: a forward block and, usually, a reverse one. */
static int parse_git_binary(parser *p, patch_file *f)
{
	int r;

	if ((r = parse_git_block(p, &f->git_fwd)) < 0)
		return r;
	if (cur_is(p, "literal ") || cur_is(p, "delta ")) {
		if ((r = parse_git_block(p, &f->git_rev)) < 0)
			return r;
		f->has_git_rev = true;
	}
	f->is_binary = f->is_git_binary = true;
	return 0;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/* "index <old>..<new>[ <mode>]": keep the two blob ids when both are 7 to
 * 40 hex digits (git's default abbreviation to its full length). */
static void parse_index_ids(patch_file *f, const char *s, size_t n)
{
	const char *end = s + body_len(s, n), *q = s, *dots;
	size_t a, b, i;

	while (q < end && is_hex(*q))
		q++;
	dots = q;
	a = (size_t)(dots - s);
	if (end - dots < 2 || memcmp(dots, "..", 2))
		return;
	q = dots + 2;
	while (q < end && is_hex(*q))
		q++;
	b = (size_t)(q - dots - 2);
	if (a < 7 || a > 40 || b < 7 || b > 40 || (q < end && *q != ' '))
		return;
	for (i = 0; i < a; i++)
		f->old_id[i] = (char)(s[i] | 0x20);
	f->old_id[a] = '\0';
	for (i = 0; i < b; i++)
		f->new_id[i] = (char)(dots[2 + i] | 0x20);
	f->new_id[b] = '\0';
}

static bool is_zero_id(const char *id)
{
	return *id && strspn(id, "0") == strlen(id);
}

/*
 * A git binary patch is checked against the blob ids of its "index" line
 * (git apply requires them too): both must be there, all zeros exactly
 * for an absent side; a deleted file's forward block and a created file's
 * reverse block give nothing.
 */
static int check_git_binary(parser *p, const patch_file *f, size_t start)
{
	const char *path = f->new_exists ? f->new_path : f->old_path;

	if (!*f->old_id || !*f->new_id)
		return perr_at(p->name, start, DECREE_EINVALID,
			       "git binary patch for '%s' without an index "
			       "line naming both blobs (7 to 40 hex digits)",
			       path);
	if (is_zero_id(f->old_id) == f->old_exists ||
	    is_zero_id(f->new_id) == f->new_exists)
		return perr_at(p->name, start, DECREE_EINVALID,
			       "the index line of '%s' contradicts which "
			       "sides of the file exist",
			       path);
	if ((!f->new_exists && git_block_result_len(&f->git_fwd)) ||
	    (!f->old_exists && f->has_git_rev &&
	     git_block_result_len(&f->git_rev)))
		return perr_at(p->name, start, DECREE_EINVALID,
			       "git binary patch gives content to the "
			       "absent side of '%s'",
			       path);
	return 0;
}

/* One "decree-base64 old|new N" section. */
static int parse_b64_section(parser *p, char **data, size_t *len)
{
	buf out = BUF_INIT;
	const char *s = cur(p), *end = s + cur_len(p);
	size_t want, start = p->lineno;
	bool ended = false;
	int r = DECREE_EINVALID;

	s += strlen("decree-base64 old ");
	if (!parse_size(&s, end, &want) || body_len(s, (size_t)(end - s)))
		return perr(p, "malformed binary section header");
	advance(p);
	while (!at_end(p) && is_b64_line(cur(p), cur_len(p))) {
		const char *q = cur(p);
		size_t n = body_len(q, cur_len(p));

		if (ended || n % 4) {
			perr(p, "malformed base64 line");
			goto fail;
		}
		/* only the last line of a section may carry '=' padding */
		if ((r = base64_decode(&out, q, n)) < 0) {
			if (r != DECREE_EINVALID)
				goto fail; /* out of memory */
			error_clear();
			r = DECREE_EINVALID;
			perr(p, "malformed base64 line");
			goto fail;
		}
		r = DECREE_EINVALID; /* for the checks below */
		if (n && q[n - 1] == '=')
			ended = true;
		if (out.len > want) {
			perr(p,
			     "binary content longer than the %zu bytes "
			     "announced",
			     want);
			goto fail;
		}
		advance(p);
	}
	if (out.len != want) {
		perr_at(p->name, start, DECREE_EINVALID,
			"binary content has %zu bytes, %zu announced", out.len,
			want);
		goto fail;
	}
	*len = out.len;
	if (!(*data = buf_detach(&out, NULL)))
		return DECREE_ERROR;
	return 0;
fail:
	buf_release(&out);
	return r;
}

static int parse_binary(parser *p, patch_file *f)
{
	bool have_old = false, have_new = false;
	size_t start = p->lineno;
	int r;

	advance(p); /* "GIT binary patch" */
	if (cur_is(p, "literal ") || cur_is(p, "delta "))
		return parse_git_binary(p, f);
	while (!at_end(p)) {
		if (cur_is(p, "decree-base64 old ") && !have_old && !have_new) {
			if ((r = parse_b64_section(p, &f->bin_old,
						   &f->bin_old_len)) < 0)
				return r;
			have_old = true;
		} else if (cur_is(p, "decree-base64 new ") && !have_new) {
			if ((r = parse_b64_section(p, &f->bin_new,
						   &f->bin_new_len)) < 0)
				return r;
			have_new = true;
		} else {
			break;
		}
	}
	if (!at_end(p) && cur_len(p) == 1 && cur(p)[0] == '\n')
		advance(p);
	if (!have_old && !have_new)
		return perr_at(p->name, start, DECREE_EINVALID,
			       "binary patch without content");
	if (have_old != f->old_exists || have_new != f->new_exists)
		return perr_at(p->name, start, DECREE_EINVALID,
			       "binary patch content does not match the "
			       "file's existence");
	f->is_binary = true;
	return 0;
}

/* Longest unquoted "diff --git" line whose names are split (2 paths). */
#define GIT_LINE_MAX (2 * PATH_MAX + 16)

/* Names on the "diff --git" line; *known is false when they cannot be
 * told apart (then rename or ---/+++ lines must name the file). */
static int parse_git_names(parser *p, const char *s, size_t n, buf *a, buf *b,
			   bool *known)
{
	size_t e = body_len(s, n), used, i, p1, k, strip;
	const char *sp;
	int r;

	*known = false;
	buf_clear(a);
	buf_clear(b);
	if (e && s[0] == '"') {
		if ((r = unquote(p, a, s, e, &used)) < 0)
			return r;
		if (used >= e || s[used] != ' ')
			return perr(p, "malformed diff --git line");
		s += used + 1;
		e -= used + 1;
		if (e && s[0] == '"') {
			if ((r = unquote(p, b, s, e, &used)) < 0)
				return r;
		} else if (buf_put(b, s, e) < 0) {
			return DECREE_ERROR;
		}
		*known = true;
		return 0;
	}
	for (i = 0; i + 1 < e; i++) {
		if (s[i] == ' ' && s[i + 1] == '"') {
			if (buf_put(a, s, i) < 0)
				return DECREE_ERROR;
			if ((r = unquote(p, b, s + i + 1, e - i - 1, &used)) <
			    0)
				return r;
			*known = true;
			return 0;
		}
	}
	/*
	 * Unquoted: take the split whose halves agree after stripping.  The
	 * stripped halves must have equal lengths, which leaves one place
	 * for the second prefix per candidate space; a running slash count
	 * checks that prefix in O(1), so a line full of spaces stays linear
	 * up to the final memcmp of real candidates.
	 */
	strip = p->strip < 0 ? 1 : (size_t)p->strip;
	for (p1 = 0, k = 0; k < strip && p1 < e; p1++)
		if (s[p1] == '/')
			k++;
	if (k == strip && e <= GIT_LINE_MAX) {
		size_t *cnt = decree_malloc((e + 1) * sizeof(*cnt));

		if (!cnt)
			return DECREE_ERROR;
		cnt[0] = 0;
		for (i = 0; i < e; i++)
			cnt[i + 1] = cnt[i] + (s[i] == '/');
		for (i = p1; i < e && !*known; i++) {
			size_t len = i - p1, p2 = e - len;

			if (s[i] != ' ' || p2 < i + 1 ||
			    cnt[p2] - cnt[i + 1] != strip ||
			    (strip && s[p2 - 1] != '/') ||
			    memcmp(s + p1, s + p2, len))
				continue;
			if (buf_put(a, s, i) < 0 ||
			    buf_put(b, s + i + 1, e - i - 1) < 0) {
				decree_free(cnt);
				return DECREE_ERROR;
			}
			*known = true;
		}
		decree_free(cnt);
		if (*known)
			return 0;
	}
	/* Different unquoted names are unambiguous with one space only. */
	sp = memchr(s, ' ', e);
	if (sp && !memchr(sp + 1, ' ', e - (size_t)(sp + 1 - s))) {
		buf_clear(a);
		buf_clear(b);
		if (buf_put(a, s, (size_t)(sp - s)) < 0 ||
		    buf_put(b, sp + 1, e - (size_t)(sp + 1 - s)) < 0)
			return DECREE_ERROR;
		*known = true;
	}
	return 0;
}

/* What the extended header of one "diff --git" record says. */
typedef struct {
	buf ga, gb;   /* names on the diff --git line */
	bool gknown;  /* ... and they could be told apart */
	label lo, ln; /* ---/+++ */
	bool have_labels;
	buf from, to; /* rename/copy from/to */
	bool has_from, has_to;
	bool have_old_mode, have_new_mode;
	uint32_t index_mode; /* the mode on an "index" line, or 0 */
} git_header;

#define GIT_HEADER_INIT                                                        \
	{                                                                      \
		BUF_INIT, BUF_INIT, false, { BUF_INIT, false },                \
			{ BUF_INIT, false }, false, BUF_INIT, BUF_INIT, false, \
			false, false, false, 0                                 \
	}

static void git_header_release(git_header *h)
{
	buf_release(&h->ga);
	buf_release(&h->gb);
	buf_release(&h->lo.name);
	buf_release(&h->ln.name);
	buf_release(&h->from);
	buf_release(&h->to);
}

/* A "rename from", "copy to", ... name: quoted or up to the line end. */
static int header_name(parser *p, buf *out, const char *s, size_t n)
{
	size_t used;

	buf_clear(out);
	if (n && s[0] == '"')
		return unquote(p, out, s, n, &used);
	return buf_put(out, s, body_len(s, n));
}

/*
 * The extended header lines after "diff --git", up to the ---/+++ pair
 * (then the hunks follow), a binary patch, or the first line that is none
 * of them.
 */
static int parse_git_header(parser *p, patch_file *f, git_header *h)
{
	int r;

	while (!at_end(p)) {
		const char *s = cur(p);
		size_t n = cur_len(p);

		if (has_prefix(s, n, "old mode ")) {
			r = parse_mode(p, s + 9, n - 9, &f->old_mode);
			h->have_old_mode = true;
		} else if (has_prefix(s, n, "new mode ")) {
			r = parse_mode(p, s + 9, n - 9, &f->new_mode);
			h->have_new_mode = true;
		} else if (has_prefix(s, n, "deleted file mode ")) {
			r = parse_mode(p, s + 18, n - 18, &f->old_mode);
			f->new_exists = false;
		} else if (has_prefix(s, n, "new file mode ")) {
			r = parse_mode(p, s + 14, n - 14, &f->new_mode);
			f->old_exists = false;
		} else if (has_prefix(s, n, "rename from ") ||
			   has_prefix(s, n, "copy from ") ||
			   has_prefix(s, n, "rename old ")) {
			size_t k = has_prefix(s, n, "rename from ") ? 12
				   : has_prefix(s, n, "copy from ") ? 10
								    : 11;

			if (s[0] == 'c')
				f->is_copy = true;
			else
				f->is_rename = true;
			r = header_name(p, &h->from, s + k, n - k);
			h->has_from = true;
		} else if (has_prefix(s, n, "rename to ") ||
			   has_prefix(s, n, "copy to ") ||
			   has_prefix(s, n, "rename new ")) {
			size_t k = has_prefix(s, n, "rename to ") ? 10
				   : has_prefix(s, n, "copy to ") ? 8
								  : 11;

			r = header_name(p, &h->to, s + k, n - k);
			h->has_to = true;
		} else if (has_prefix(s, n, "similarity index ") ||
			   has_prefix(s, n, "dissimilarity index ")) {
			r = 0;
		} else if (has_prefix(s, n, "index ")) {
			size_t e = body_len(s, n); /* >= 6: "index " */
			const char *sp = e > 6 ? memchr(s + 6, ' ', e - 6)
					       : NULL;

			r = 0;
			parse_index_ids(f, s + 6, n - 6);
			if (sp)
				r = parse_mode(p, sp + 1,
					       (size_t)(s + n - sp - 1),
					       &h->index_mode);
		} else if (has_prefix(s, n, "--- ")) {
			if ((r = parse_label(p, &h->lo, s + 4, n - 4)) < 0)
				return r;
			advance(p);
			if (at_end(p) || !cur_is(p, "+++ "))
				return perr(
					p, "\"---\" line without \"+++\" line");
			if ((r = parse_label(p, &h->ln, cur(p) + 4,
					     cur_len(p) - 4)) < 0)
				return r;
			advance(p);
			h->have_labels = true;
			return 0;
		} else if (has_prefix(s, n, "GIT binary patch")) {
			return parse_binary(p, f);
		} else if (has_prefix(s, n, "Binary files ")) {
			return perr(p,
				    "binary change without content (\"Binary "
				    "files ... differ\") cannot be applied");
		} else {
			return 0;
		}
		if (r < 0)
			return r;
		advance(p);
	}
	return 0;
}

/*
 * Which sides of the file exist, from the mode lines and the /dev/null
 * labels; refuse header lines that contradict each other.
 */
static int check_git_sides(parser *p, patch_file *f, const git_header *h,
			   size_t start)
{
	if (h->have_old_mode != h->have_new_mode)
		return perr_at(
			p->name, start, DECREE_EINVALID,
			"\"old mode\" and \"new mode\" must come together");
	if (h->has_from != h->has_to || (f->is_rename && f->is_copy))
		return perr_at(p->name, start, DECREE_EINVALID,
			       "incomplete rename or copy header");
	if (h->have_labels) {
		if (h->lo.is_null && f->old_exists && !h->has_from) {
			if (f->old_mode || h->have_old_mode)
				return perr_at(p->name, start, DECREE_EINVALID,
					       "\"--- /dev/null\" contradicts "
					       "the mode lines");
			f->old_exists = false;
		}
		if (h->ln.is_null && f->new_exists && !h->has_to) {
			if (h->have_new_mode)
				return perr_at(p->name, start, DECREE_EINVALID,
					       "\"+++ /dev/null\" contradicts "
					       "the mode lines");
			f->new_exists = false;
		}
		if ((!f->old_exists && !h->lo.is_null) ||
		    (!f->new_exists && !h->ln.is_null))
			return perr_at(p->name, start, DECREE_EINVALID,
				       "a created or deleted file needs "
				       "/dev/null on its absent side");
	}
	if (!f->old_exists && !f->new_exists)
		return perr_at(p->name, start, DECREE_EINVALID,
			       "a file cannot be both created and deleted");
	if ((h->has_from || h->has_to) && (!f->old_exists || !f->new_exists))
		return perr_at(p->name, start, DECREE_EINVALID,
			       "rename or copy of a created or deleted file");
	return 0;
}

/* The file's names: rename/copy headers, then ---/+++, then diff --git. */
static int set_git_paths(parser *p, patch_file *f, const git_header *h,
			 size_t start)
{
	int strip = p->strip < 0 ? 1 : p->strip, r;
	const char *o = NULL, *nw = NULL;

	if (h->has_from) {
		if ((r = set_path(p, &f->old_path, h->from.ptr, 0)) < 0 ||
		    (r = set_path(p, &f->new_path, h->to.ptr, 0)) < 0)
			return r;
		return 0;
	}
	if (h->have_labels) {
		o = h->lo.is_null ? NULL : h->lo.name.ptr;
		nw = h->ln.is_null ? NULL : h->ln.name.ptr;
	}
	if (h->gknown) {
		if (!o && f->old_exists)
			o = h->ga.ptr;
		if (!nw && f->new_exists)
			nw = h->gb.ptr;
	}
	if (!o)
		o = nw;
	if (!nw)
		nw = o;
	if (!o)
		return perr_at(p->name, start, DECREE_EINVALID,
			       "cannot tell the file name from the "
			       "diff --git line");
	if ((r = set_path(p, &f->old_path, o, strip)) < 0 ||
	    (r = set_path(p, &f->new_path, nw, strip)) < 0)
		return r;
	if (strcmp(f->old_path, f->new_path))
		return perr_at(p->name, start, DECREE_EINVALID,
			       "file names '%s' and '%s' differ without "
			       "a rename header",
			       f->old_path, f->new_path);
	return 0;
}

static int parse_git(parser *p)
{
	git_header h = GIT_HEADER_INIT;
	patch_file *f;
	size_t start = p->lineno;
	int r;

	if (!(f = new_file(p)))
		return DECREE_ERROR;
	f->is_git = true;
	if ((r = parse_git_names(p, cur(p) + 11, cur_len(p) - 11, &h.ga, &h.gb,
				 &h.gknown)) < 0)
		goto done;
	advance(p);
	if ((r = parse_git_header(p, f, &h)) < 0 ||
	    (r = check_git_sides(p, f, &h, start)) < 0 ||
	    (r = set_git_paths(p, f, &h, start)) < 0)
		goto done;
	if (f->is_git_binary && (r = check_git_binary(p, f, start)) < 0)
		goto done;
	if (h.index_mode && f->old_exists && f->new_exists && !h.have_old_mode)
		f->old_mode = f->new_mode = h.index_mode;
	/* A change of file type (regular file <-> symlink) needs the new
	 * content: git writes it as a deletion and a creation, and git apply
	 * refuses it in one record; so does decree, rather than turn a
	 * file's bytes into a link target. */
	if (f->old_exists && f->new_exists && f->old_mode && f->new_mode &&
	    ((f->old_mode ^ f->new_mode) & 0170000)) {
		r = perr_at(p->name, start, DECREE_EINVALID,
			    "new mode %06o of '%s' does not match old mode "
			    "%06o (a change of file type is a deletion and a "
			    "creation)",
			    (unsigned)f->new_mode, f->new_path,
			    (unsigned)f->old_mode);
		goto done;
	}
	if (h.have_labels) {
		r = parse_hunks(p, f);
	} else if (!f->is_binary && f->old_exists && f->new_exists &&
		   !h.have_old_mode && !h.has_from) {
		r = perr_at(p->name, start, DECREE_EINVALID,
			    "record for '%s' changes nothing", f->old_path);
	}
done:
	git_header_release(&h);
	return r;
}

/* How many components to strip from a plain diff's names. */
static int guess_strip(const label *lo, const label *ln)
{
	const char *a = lo->name.ptr, *b = ln->name.ptr, *sa, *sb;

	if (!strcmp(a, "/dev/null"))
		a = NULL;
	if (!strcmp(b, "/dev/null"))
		b = NULL;
	if (!a)
		a = b, b = NULL;
	if (!a)
		return 0;
	sa = strchr(a, '/');
	if (!b) /* one name: strip only git's a/ and b/ */
		return sa && sa - a == 1 && (a[0] == 'a' || a[0] == 'b');
	/* Two trees (a/x b/x, old/x new/x): their top directories differ. */
	sb = strchr(b, '/');
	return sa && sb &&
	       (sa - a != sb - b || memcmp(a, b, (size_t)(sa - a)) != 0);
}

static int parse_plain(parser *p)
{
	label lo = { BUF_INIT, false }, ln = { BUF_INIT, false };
	patch_file *f;
	const char *name;
	int r, strip;
	size_t start = p->lineno;

	if (!(f = new_file(p)))
		return DECREE_ERROR;
	if ((r = parse_label(p, &lo, cur(p) + 4, cur_len(p) - 4)) < 0)
		goto done;
	advance(p);
	if ((r = parse_label(p, &ln, cur(p) + 4, cur_len(p) - 4)) < 0)
		goto done;
	advance(p);
	f->old_exists = !lo.is_null;
	f->new_exists = !ln.is_null;
	if (!f->old_exists && !f->new_exists) {
		r = perr_at(p->name, start, DECREE_EINVALID,
			    "both sides of the diff are absent");
		goto done;
	}
	strip = p->strip >= 0 ? p->strip : guess_strip(&lo, &ln);
	/* The new name, unless the file goes away (see diff-format.md). */
	name = f->new_exists ? ln.name.ptr : lo.name.ptr;
	if (!strcmp(name, "/dev/null"))
		name = f->new_exists ? lo.name.ptr : ln.name.ptr;
	if ((r = set_path(p, &f->old_path, name, strip)) < 0 ||
	    (r = set_path(p, &f->new_path, name, strip)) < 0)
		goto done;
	r = parse_hunks(p, f);
done:
	buf_release(&lo.name);
	buf_release(&ln.name);
	return r;
}

static bool next_is(const parser *p, const char *lit)
{
	size_t n = cur_len(p), l = strlen(lit);

	return p->pos + n + l <= p->len && !memcmp(cur(p) + n, lit, l);
}

void patch_set_free(patch_set *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->nfiles; i++)
		file_release(&ps->files[i]);
	decree_free(ps->files);
	decree_free(ps->text);
	decree_free(ps->name);
	decree_free(ps);
}

int patch_parse(patch_set **out, const char *name, const char *text, size_t len,
		const patch_parse_options *opts)
{
	parser p;
	patch_set *ps;
	int r = 0;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(text || !len);
	*out = NULL;
	if (!name)
		name = "<patch>";
	if (!(ps = decree_calloc(1, sizeof(*ps))))
		return DECREE_ERROR;
	if (!(ps->name = decree_strdup(name)) ||
	    !(ps->text = decree_malloc(len + 1))) {
		patch_set_free(ps);
		return DECREE_ERROR;
	}
	if (len)
		memcpy(ps->text, text, len);
	ps->text[len] = '\0';
	ps->len = len;

	memset(&p, 0, sizeof(p));
	p.text = ps->text;
	p.len = len;
	p.lineno = 1;
	p.name = ps->name;
	p.strip = opts ? opts->strip : -1;
	p.ps = ps;

	while (!at_end(&p)) {
		const char *s = cur(&p);
		size_t n = cur_len(&p);

		if (has_prefix(s, n, "diff --git ")) {
			r = parse_git(&p);
		} else if (has_prefix(s, n, "--- ") && next_is(&p, "+++ ")) {
			r = parse_plain(&p);
		} else if (has_prefix(s, n, "@@ -")) {
			r = perr(&p, "hunk without a file header");
		} else if (has_prefix(s, n, "GIT binary patch") ||
			   (has_prefix(s, n, "Binary files ") &&
			    body_len(s, n) > 7 &&
			    !memcmp(s + body_len(s, n) - 7, " differ", 7))) {
			r = perr(&p, "binary change without content cannot be "
				     "applied");
		} else {
			advance(&p); /* text between records */
			continue;
		}
		if (r < 0)
			break;
	}
	if (r == 0 && !ps->nfiles)
		r = decree_error_set(DECREE_EINVALID, "%s: no diff found",
				     ps->name);
	if (r < 0) {
		patch_set_free(ps);
		return r;
	}
	*out = ps;
	return 0;
}

/* ---- applying --------------------------------------------------------- */

const char *patch_file_source(const patch_file *fp, bool reverse)
{
	return reverse ? fp->new_path : fp->old_path;
}

const char *patch_file_target(const patch_file *fp, bool reverse)
{
	return reverse && !fp->is_copy ? fp->old_path : fp->new_path;
}

void patch_result_release(patch_result *res)
{
	buf_release(&res->data);
	res->exists = false;
	res->mode = res->expect_mode = 0;
	res->conflict_hunk = 0;
}

/* Append bytes, refusing to glue anything after a line without '\n'. */
static int put_checked(buf *out, const char *s, size_t n, bool *joined)
{
	if (!n)
		return 0;
	if (out->len && out->ptr[out->len - 1] != '\n') {
		*joined = true;
		return 0;
	}
	return buf_put(out, s, n);
}

/* hunk_matches() *bad for a hunk that matches, but not where its missing
 * context says it must be (the start or the end of the file) */
#define BAD_ANCHOR (SIZE_MAX - 1)

/*
 * A hunk with context but none before its changes, starting at line 1,
 * must match at the start of the file; one with context but none after
 * its changes must match at the end (what git apply requires too).  A
 * hunk without any context (diff -U0) may match anywhere.
 */
static void hunk_anchors(const patch_file *fp, const patch_hunk *h, char del,
			 bool *at_start, bool *at_end)
{
	size_t trail = 0, i, ctx = 0;
	size_t fs = del == '+' ? h->new_start : h->old_start;

	for (i = h->nlines; i > 0 && fp->lines[h->first + i - 1].op == ' '; i--)
		trail++;
	for (i = 0; i < h->nlines; i++)
		ctx += fp->lines[h->first + i].op == ' ';
	*at_start = ctx && fs <= 1;
	*at_end = ctx && !trail;
}

static bool hunk_matches(const patch_file *fp, const patch_hunk *h, char del,
			 const char *old, const xdiff_lines *ol, size_t pos,
			 size_t *bad)
{
	size_t i, k = pos, len = 0;
	bool at_start, at_end;

	if (pos > ol->nlines) {
		*bad = SIZE_MAX;
		return false;
	}

	for (i = h->first; i < h->first + h->nlines; i++) {
		const patch_line *l = &fp->lines[i];
		size_t n;

		if (l->op != ' ' && l->op != del)
			continue;
		if (k >= ol->nlines) {
			*bad = i;
			return false;
		}
		n = ol->start[k + 1] - ol->start[k];
		if (n != l->len || memcmp(old + ol->start[k], l->ptr, n)) {
			*bad = i;
			return false;
		}
		k++;
		len++;
	}
	hunk_anchors(fp, h, del, &at_start, &at_end);
	if ((at_start && pos != 0) || (at_end && pos + len != ol->nlines)) {
		*bad = BAD_ANCHOR;
		return false;
	}
	return true;
}

static int conflict(patch_result *out, const patch_file *fp,
		    const patch_hunk *h, size_t hunkno, const char *old,
		    const xdiff_lines *ol, size_t pos, size_t bad, char del,
		    const char *path)
{
	char want[200], got[200];
	const char *note = "", *g;
	const patch_line *l;
	size_t k = pos, i, gn;

	out->conflict_hunk = hunkno;
	if (bad == BAD_ANCHOR) {
		bool at_start, at_end;
		hunk_anchors(fp, h, del, &at_start, &at_end);
		at_start = at_start && pos != 0; /* the anchor that failed */
		(void)at_end;
		return perr_at(
			fp->patch_name, h->lineno, DECREE_ECONFLICT,
			"hunk #%zu does not apply to '%s': it must match "
			"at the %s of the file (it has no context %s "
			"its changes)",
			hunkno, path, at_start ? "start" : "end",
			at_start ? "before" : "after");
	}
	if (bad == SIZE_MAX)
		return perr_at(fp->patch_name, h->lineno, DECREE_ECONFLICT,
			       "hunk #%zu does not apply to '%s': it starts "
			       "at line %zu, the file has %zu lines",
			       hunkno, path, pos + 1, ol->nlines);
	l = &fp->lines[bad];
	for (i = h->first; i < bad; i++)
		if (fp->lines[i].op == ' ' || fp->lines[i].op == del)
			k++;
	show_line(want, sizeof(want), l->ptr, l->len);
	if (k >= ol->nlines)
		return perr_at(fp->patch_name, h->lineno, DECREE_ECONFLICT,
			       "hunk #%zu does not apply to '%s': expected "
			       "\"%s\" at line %zu, found the end of the file",
			       hunkno, path, want, k + 1);
	g = old + ol->start[k];
	gn = ol->start[k + 1] - ol->start[k];
	show_line(got, sizeof(got), g, gn);
	if (!strcmp(want, got))
		note = (l->ptr[l->len - 1] == '\n') != (g[gn - 1] == '\n')
			       ? " (they differ in the final newline)"
			       : " (they differ after the first 40 bytes)";
	return perr_at(fp->patch_name, h->lineno, DECREE_ECONFLICT,
		       "hunk #%zu does not apply to '%s' at line %zu: expected "
		       "\"%s\", found \"%s\"%s",
		       hunkno, path, k + 1, want, got, note);
}

static int apply_text(patch_result *out, const patch_file *fp, const char *old,
		      size_t old_len, bool rev, bool offset, const char *path)
{
	xdiff_lines ol = XDIFF_LINES_INIT;
	char del = rev ? '+' : '-';
	size_t cursor = 0, i, j;
	bool joined = false;
	int r;

	if ((r = xdiff_lines_split(&ol, old, old_len)) < 0)
		return r;
	for (i = 0; i < fp->nhunks; i++) {
		const patch_hunk *h = &fp->hunks[i];
		size_t fs = rev ? h->new_start : h->old_start;
		size_t fc = rev ? h->new_count : h->old_count;
		size_t pos = fc ? fs - 1 : fs, bad = 0;

		if (!hunk_matches(fp, h, del, old, &ol, pos, &bad)) {
			size_t d, found = SIZE_MAX, b2;

			for (d = 1; offset && found == SIZE_MAX; d++) {
				bool any = false;
				if (pos + d + fc <= ol.nlines) {
					any = true;
					if (hunk_matches(fp, h, del, old, &ol,
							 pos + d, &b2))
						found = pos + d;
				}
				if (found == SIZE_MAX && pos >= cursor + d) {
					any = true;
					if (hunk_matches(fp, h, del, old, &ol,
							 pos - d, &b2))
						found = pos - d;
				}
				if (!any)
					break;
			}
			if (found == SIZE_MAX) {
				r = conflict(out, fp, h, i + 1, old, &ol, pos,
					     bad, del, path);
				goto done;
			}
			pos = found;
		}
		if (pos < cursor) {
			out->conflict_hunk = i + 1;
			r = perr_at(fp->patch_name, h->lineno, DECREE_ECONFLICT,
				    "hunk #%zu of '%s' matches before the "
				    "hunk ahead of it",
				    i + 1, path);
			goto done;
		}
		if ((r = put_checked(&out->data, old + ol.start[cursor],
				     ol.start[pos] - ol.start[cursor],
				     &joined)) < 0)
			goto done;
		for (j = h->first; j < h->first + h->nlines; j++) {
			const patch_line *l = &fp->lines[j];
			if (l->op == del)
				continue;
			if ((r = put_checked(&out->data, l->ptr, l->len,
					     &joined)) < 0)
				goto done;
		}
		cursor = pos + fc;
	}
	r = put_checked(&out->data, old + ol.start[cursor],
			old_len - ol.start[cursor], &joined);
	if (r == 0 && joined)
		r = perr_at(fp->patch_name, fp->lineno, DECREE_EAPPLY,
			    "patch for '%s' leaves a line without newline "
			    "before the end of the file",
			    path);
done:
	xdiff_lines_release(&ol);
	return r;
}

/* Does the git blob id of data start with the (maybe abbreviated) id? */
static int blob_is(bool *same, char hex[GITBIN_ID_HEXLEN + 1], const char *data,
		   size_t len, const char *id)
{
	if (gitbin_blob_id(hex, data, len) < 0)
		return DECREE_ERROR;
	*same = !strncmp(hex, id, strlen(id));
	return 0;
}

/*
 * git's binary patch: the current content must have the source side's
 * blob id, the block (literal, or delta against the current content)
 * gives the result, and the result must have the other side's id.
 * Either mismatch is a conflict, as a hunk that does not match is.
 */
static int apply_git_binary(patch_result *out, const patch_file *fp,
			    const char *old, size_t old_len, bool rev,
			    bool from_exists, bool to_exists, const char *path)
{
	const patch_git_block *b = rev ? &fp->git_rev : &fp->git_fwd;
	const char *want = rev ? fp->new_id : fp->old_id;
	const char *give = rev ? fp->old_id : fp->new_id;
	char hex[GITBIN_ID_HEXLEN + 1], why[256];
	bool same;
	int r;

	if (to_exists && rev && !fp->has_git_rev)
		return perr_at(fp->patch_name, fp->lineno, DECREE_EAPPLY,
			       "git binary patch for '%s' has no reverse "
			       "block: it cannot be applied in reverse",
			       path);
	if (from_exists) {
		if (blob_is(&same, hex, old, old_len, want) < 0)
			return DECREE_ERROR;
		if (!same)
			return perr_at(fp->patch_name, fp->lineno,
				       DECREE_ECONFLICT,
				       "binary file '%s' is not the one the "
				       "patch expects (its git blob id is "
				       "%.12s, the index line says %.12s)",
				       path, hex, want);
	}
	if (!to_exists)
		return 0; /* a deletion: the id check above is the whole check
			   */
	if (b->is_delta) {
		r = gitbin_delta_apply(&out->data, old, old_len, b->data,
				       b->len);
		if (r == DECREE_ECONFLICT || r == DECREE_EINVALID) {
			snprintf(why, sizeof(why), "%s", error_last());
			return perr_at(fp->patch_name, fp->lineno,
				       DECREE_ECONFLICT,
				       "binary delta for '%s' does not apply: "
				       "%s",
				       path, why);
		}
		if (r < 0)
			return r;
	} else if (b->len && buf_put(&out->data, b->data, b->len) < 0) {
		return DECREE_ERROR;
	}
	if (blob_is(&same, hex, out->data.ptr, out->data.len, give) < 0)
		return DECREE_ERROR;
	if (!same)
		return perr_at(fp->patch_name, fp->lineno, DECREE_ECONFLICT,
			       "binary patch for '%s' gives a file whose git "
			       "blob id %.12s is not the index line's %.12s",
			       path, hex, give);
	return 0;
}

int patch_apply(patch_result *out, const patch_file *fp, const char *old,
		size_t old_len, bool old_exists, unsigned flags)
{
	bool rev = (flags & PATCH_REVERSE) != 0;
	bool from_exists = rev ? fp->new_exists : fp->old_exists;
	bool to_exists = rev ? fp->old_exists : fp->new_exists;
	const char *path = patch_file_source(fp, rev);
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(fp);
	buf_clear(&out->data);
	out->exists = false;
	out->conflict_hunk = 0;
	out->expect_mode = from_exists ? (rev ? fp->new_mode : fp->old_mode)
				       : 0;
	out->mode = to_exists ? (rev ? fp->old_mode : fp->new_mode) : 0;
	if (rev && fp->is_copy)
		to_exists = false; /* undoing a copy removes the copy */

	if (!from_exists && old_exists)
		return perr_at(fp->patch_name, fp->lineno, DECREE_ECONFLICT,
			       "cannot create '%s': it already exists", path);
	if (from_exists && !old_exists)
		return perr_at(fp->patch_name, fp->lineno, DECREE_ECONFLICT,
			       "cannot patch '%s': it does not exist", path);
	if (!old_exists || !old) {
		old = "";
		old_len = 0;
	}

	if (fp->is_git_binary) {
		if ((r = apply_git_binary(out, fp, old, old_len, rev,
					  from_exists, to_exists, path)) < 0) {
			buf_clear(&out->data);
			return r;
		}
	} else if (fp->is_binary) {
		const char *want = rev ? fp->bin_new : fp->bin_old;
		size_t want_len = rev ? fp->bin_new_len : fp->bin_old_len;
		const char *give = rev ? fp->bin_old : fp->bin_new;
		size_t give_len = rev ? fp->bin_old_len : fp->bin_new_len;

		if (from_exists &&
		    (old_len != want_len ||
		     (want_len && memcmp(old, want, want_len)))) {
			return perr_at(fp->patch_name, fp->lineno,
				       DECREE_ECONFLICT,
				       "binary file '%s' is not the one the "
				       "patch expects",
				       path);
		}
		if (to_exists && !(rev && fp->is_copy) && give_len &&
		    buf_put(&out->data, give, give_len) < 0)
			return DECREE_ERROR;
	} else if (fp->nhunks) {
		if ((r = apply_text(out, fp, old, old_len, rev,
				    (flags & PATCH_ALLOW_OFFSET) != 0, path)) <
		    0) {
			buf_clear(&out->data);
			return r;
		}
	} else if (old_len && buf_put(&out->data, old, old_len) < 0) {
		return DECREE_ERROR;
	}

	if (rev && fp->is_copy) {
		buf_clear(&out->data);
	} else if (!to_exists && out->data.len) {
		buf_clear(&out->data);
		return perr_at(fp->patch_name, fp->lineno, DECREE_ECONFLICT,
			       "cannot delete '%s': its content differs "
			       "from the patch",
			       path);
	}
	out->exists = to_exists;
	return 0;
}
