/*
 * unidiff.c - git-style unified diff records (see unidiff.h and
 * docs/diff-format.md for the syntax, byte by byte).
 *
 * Decisions worth knowing:
 *  - Hunks are built from xdiff's change groups: groups closer than
 *    2 * context unchanged lines share a hunk, exactly as git and GNU diff
 *    do, so our text matches theirs wherever the edit scripts agree.
 *  - Each line is written with its own bytes; a last line without '\n'
 *    gets "\n\\ No newline at end of file\n".  CR bytes are content.
 *  - `index` lines carry git blob names (SHA-1 of "blob <len>\0" + data,
 *    7 hex digits; 0000000 for an absent side).  They are not needed by
 *    decree's parser, but GNU patch uses them to tell "delete an empty
 *    file" from "empty a file" and to recognise symlinks.
 *  - Binary records start with git's "GIT binary patch" line so that git
 *    apply refuses the whole patch ("unrecognized binary patch") and GNU
 *    patch skips the file ("git binary diffs are not supported") instead
 *    of misapplying a mode change or creating an empty file.  The content
 *    follows in decree's own base64 sections, both sides, so one record
 *    applies forwards and in reverse.
 *  - A change between symlink and regular file is written as a deletion
 *    record followed by a creation record for the same path, like git.
 *  - Names are quoted as git quotes them (core.quotePath=true), and a name
 *    with a space gets a trailing TAB on its ---/+++ line, which is what
 *    GNU patch needs to find the end of the name.  On the "diff --git"
 *    line a name with a space is quoted as well (git leaves it bare):
 *    GNU patch cannot split the line otherwise, and records without
 *    ---/+++ lines (empty files, mode changes) have no other name.
 */
#include "util/common.h"
#include "diff/unidiff.h"
#include "diff/gitbin.h"
#include "util/base64.h"
#include "util/alloc.h"
#include "util/error.h"

#define B64_LINE_BYTES 57 /* 76 base64 characters per line */

bool unidiff_is_binary(const char *data, size_t len)
{
	return len && memchr(data, '\0', len) != NULL;
}

static bool needs_quote(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f;
}

static int put_escaped(buf *out, const char *s)
{
	static const char esc[] = "\a\b\t\n\v\f\r";
	static const char let[] = "abtnvfr";
	const unsigned char *p = (const unsigned char *)s;
	int r = 0;

	for (; *p && r == 0; p++) {
		const char *e = strchr(esc, *p);

		if (e)
			r = buf_printf(out, "\\%c", let[e - esc]);
		else if (*p == '"' || *p == '\\')
			r = buf_printf(out, "\\%c", *p);
		else if (needs_quote(*p))
			r = buf_printf(out, "\\%03o", *p);
		else
			r = buf_putc(out, (char)*p);
	}
	return r;
}

static int quote_path(buf *out, const char *prefix, const char *path,
		      bool quote_space)
{
	const unsigned char *p;
	bool quote = false;

	for (p = (const unsigned char *)path; *p; p++)
		if (needs_quote(*p) || (quote_space && *p == ' '))
			quote = true;
	if (!quote)
		return buf_puts(out, prefix) < 0 || buf_puts(out, path) < 0
			       ? DECREE_ERROR
			       : 0;
	if (buf_putc(out, '"') < 0 || put_escaped(out, prefix) < 0 ||
	    put_escaped(out, path) < 0 || buf_putc(out, '"') < 0)
		return DECREE_ERROR;
	return 0;
}

int unidiff_quote_path(buf *out, const char *prefix, const char *path)
{
	return quote_path(out, prefix, path, false);
}

/* "--- a/name" / "+++ b/name" or /dev/null, with git's TAB rule. */
static int put_label(buf *out, const char *marker, bool exists,
		     const char *prefix, const char *path)
{
	size_t start;

	if (buf_puts(out, marker) < 0)
		return DECREE_ERROR;
	if (!exists)
		return buf_puts(out, "/dev/null\n");
	start = out->len;
	if (unidiff_quote_path(out, prefix, path) < 0)
		return DECREE_ERROR;
	if (memchr(out->ptr + start, ' ', out->len - start) &&
	    buf_putc(out, '\t') < 0)
		return DECREE_ERROR;
	return buf_putc(out, '\n');
}

static int blob_name(char hex[8], bool exists, const char *data, size_t len)
{
	char full[GITBIN_ID_HEXLEN + 1];

	if (!exists) {
		memcpy(hex, "0000000", 8);
		return 0;
	}
	if (gitbin_blob_id(full, data, len) < 0)
		return DECREE_ERROR;
	memcpy(hex, full, 7);
	hex[7] = '\0';
	return 0;
}

static int put_base64(buf *out, const char *data, size_t len)
{
	/* RFC 4648 lines of 76 characters (57 bytes), each ending in "\n" */
	for (size_t i = 0; i < len; i += B64_LINE_BYTES) {
		size_t n = len - i < B64_LINE_BYTES ? len - i : B64_LINE_BYTES;
		if (base64_encode(out, data + i, n) < 0 ||
		    buf_putc(out, '\n') < 0)
			return DECREE_ERROR;
	}
	return 0;
}

static int put_binary(buf *out, const unidiff_file *f)
{
	if (buf_puts(out, "GIT binary patch\n") < 0)
		return DECREE_ERROR;
	if (f->old_exists &&
	    (buf_printf(out, "decree-base64 old %zu\n", f->old_len) < 0 ||
	     put_base64(out, f->old_data, f->old_len) < 0))
		return DECREE_ERROR;
	if (f->new_exists &&
	    (buf_printf(out, "decree-base64 new %zu\n", f->new_len) < 0 ||
	     put_base64(out, f->new_data, f->new_len) < 0))
		return DECREE_ERROR;
	return buf_putc(out, '\n');
}

/* ---- hunks -------------------------------------------------------------- */

typedef struct {
	xdiff_edit *v;
	size_t n, cap;
} edit_list;

static int collect_edit(const xdiff_edit *e, void *payload)
{
	edit_list *l = payload;

	if (GROW(l->v, l->cap, l->n + 1) < 0)
		return DECREE_ERROR;
	l->v[l->n++] = *e;
	return 0;
}

/* "-L,N" or "+L,N" of a hunk header ("-L" when N is 1); by hand: printf
 * took about 4% of a diff of 7,000 small files. */
static int put_range(buf *out, char sign, size_t lo, size_t count)
{
	if (buf_putc(out, sign) < 0 ||
	    buf_put_dec(out, count ? lo + 1 : lo) < 0)
		return DECREE_ERROR;
	if (count == 1)
		return 0;
	if (buf_putc(out, ',') < 0 || buf_put_dec(out, count) < 0)
		return DECREE_ERROR;
	return 0;
}

/*
 * Lines are located lazily: hunks come in file order, so a forward-only
 * cursor per file finds every line with one memchr pass over the part of
 * the file up to the last hunk, instead of indexing whole files.
 */
typedef struct {
	const char *data;
	size_t len;
	size_t line; /* number of the line starting at off */
	size_t off;
} line_walker;

static size_t walk_to(line_walker *w, size_t n)
{
	while (w->line < n && w->off < w->len) {
		const char *nl =
			memchr(w->data + w->off, '\n', w->len - w->off);

		w->off = nl ? (size_t)(nl - w->data) + 1 : w->len;
		w->line++;
	}
	return w->off;
}

/* How many of the lines [from, from + want) exist. */
static size_t lines_after(line_walker *w, size_t from, size_t want)
{
	size_t n = 0;

	walk_to(w, from);
	while (n < want && w->line == from + n && w->off < w->len)
		walk_to(w, from + ++n);
	return n;
}

static int put_lines(buf *out, char sign, line_walker *w, size_t from,
		     size_t to)
{
	size_t i, s = walk_to(w, from), e;

	for (i = from; i < to; i++, s = e) {
		e = walk_to(w, i + 1);
		if (buf_putc(out, sign) < 0 ||
		    buf_put(out, w->data + s, e - s) < 0)
			return DECREE_ERROR;
		if ((e == s || w->data[e - 1] != '\n') &&
		    buf_puts(out, "\n\\ No newline at end of file\n") < 0)
			return DECREE_ERROR;
	}
	return 0;
}

static int put_hunks(buf *out, const unidiff_file *f, const unidiff_options *o)
{
	line_walker wo = { f->old_data, f->old_len, 0, 0 };
	line_walker wn = { f->new_data, f->new_len, 0, 0 };
	line_walker probe = wo;
	edit_list el = { NULL, 0, 0 };
	size_t ctx = o->context, k = 0;
	int r;

	if ((r = xdiff_diff(f->old_data, f->old_len, f->new_data, f->new_len,
			    &o->xdiff, collect_edit, &el)) < 0)
		goto done;

	while (k < el.n) {
		const xdiff_edit *first = &el.v[k], *last = first, *e;
		size_t old_lo, old_hi, new_lo, new_hi, lead, end;

		while (last + 1 < el.v + el.n &&
		       last[1].old_start -
				       (last->old_start + last->old_count) <=
			       2 * ctx)
			last++;
		lead = first->old_start < ctx ? first->old_start : ctx;
		old_lo = first->old_start - lead;
		new_lo = first->new_start - lead;
		end = last->old_start + last->old_count;
		old_hi = end + lines_after(&probe, end, ctx);
		new_hi = last->new_start + last->new_count + (old_hi - end);

		r = DECREE_ERROR;
		if (buf_puts(out, "@@ ") < 0 ||
		    put_range(out, '-', old_lo, old_hi - old_lo) < 0 ||
		    buf_putc(out, ' ') < 0 ||
		    put_range(out, '+', new_lo, new_hi - new_lo) < 0 ||
		    buf_puts(out, " @@\n") < 0)
			goto done;
		for (e = first; e <= last; e++) {
			size_t prev =
				e == first ? old_lo
					   : e[-1].old_start + e[-1].old_count;

			if (put_lines(out, ' ', &wo, prev, e->old_start) < 0 ||
			    put_lines(out, '-', &wo, e->old_start,
				      e->old_start + e->old_count) < 0 ||
			    put_lines(out, '+', &wn, e->new_start,
				      e->new_start + e->new_count) < 0)
				goto done;
		}
		if (put_lines(out, ' ', &wo, end, old_hi) < 0)
			goto done;
		k = (size_t)(last - el.v) + 1;
	}
	r = 0;
done:
	decree_free(el.v);
	return r;
}

/* ---- records ------------------------------------------------------------ */

static bool valid_mode(uint32_t m)
{
	/* a regular file with any permission bits (git itself writes only
	 * 100644 and 100755), or a symlink */
	return (m & ~0777u) == 0100000u || m == UNIDIFF_MODE_LINK;
}

static int put_record(buf *out, const unidiff_file *f, const unidiff_options *o)
{
	const char *op = f->old_path, *np = f->new_path;
	bool same =
		f->old_exists && f->new_exists && f->old_len == f->new_len &&
		(!f->old_len || !memcmp(f->old_data, f->new_data, f->old_len));
	bool binary =
		(f->old_exists && unidiff_is_binary(f->old_data, f->old_len)) ||
		(f->new_exists && unidiff_is_binary(f->new_data, f->new_len));

	/* Unlike git, quote names with spaces here: GNU patch cannot split
	 * "diff --git a/x y b/x y" and needs it for header-only records. */
	if (buf_puts(out, "diff --git ") < 0 ||
	    quote_path(out, "a/", op, true) < 0 || buf_putc(out, ' ') < 0 ||
	    quote_path(out, "b/", np, true) < 0 || buf_putc(out, '\n') < 0)
		return DECREE_ERROR;
	if (!f->old_exists) {
		if (buf_printf(out, "new file mode %06o\n", f->new_mode) < 0)
			return DECREE_ERROR;
	} else if (!f->new_exists) {
		if (buf_printf(out, "deleted file mode %06o\n", f->old_mode) <
		    0)
			return DECREE_ERROR;
	} else {
		if (f->old_mode != f->new_mode &&
		    buf_printf(out, "old mode %06o\nnew mode %06o\n",
			       f->old_mode, f->new_mode) < 0)
			return DECREE_ERROR;
		if (strcmp(op, np) && (buf_puts(out, "rename from ") < 0 ||
				       unidiff_quote_path(out, "", op) < 0 ||
				       buf_puts(out, "\nrename to ") < 0 ||
				       unidiff_quote_path(out, "", np) < 0 ||
				       buf_putc(out, '\n') < 0))
			return DECREE_ERROR;
	}
	if (o->flags & UNIDIFF_TOO_BIG) {
		if (buf_puts(out, "Binary files ") < 0 ||
		    (f->old_exists ? quote_path(out, "a/", op, false)
				   : buf_puts(out, "/dev/null")) < 0 ||
		    buf_puts(out, " and ") < 0 ||
		    (f->new_exists ? quote_path(out, "b/", np, false)
				   : buf_puts(out, "/dev/null")) < 0 ||
		    buf_puts(out, " differ\n") < 0)
			return DECREE_ERROR;
		return 0;
	}
	if (same)
		return 0;
	if (!(o->flags & UNIDIFF_NO_INDEX)) {
		char h1[8], h2[8];

		if (blob_name(h1, f->old_exists, f->old_data, f->old_len) < 0 ||
		    blob_name(h2, f->new_exists, f->new_data, f->new_len) < 0 ||
		    buf_puts(out, "index ") < 0 || buf_puts(out, h1) < 0 ||
		    buf_puts(out, "..") < 0 || buf_puts(out, h2) < 0)
			return DECREE_ERROR;
		if (f->old_exists && f->new_exists &&
		    f->old_mode == f->new_mode &&
		    buf_printf(out, " %06o", f->old_mode) < 0)
			return DECREE_ERROR;
		if (buf_putc(out, '\n') < 0)
			return DECREE_ERROR;
	}
	if (binary)
		return put_binary(out, f);
	/* An empty file created or deleted: the header says it all. */
	if ((!f->old_exists && !f->new_len) || (!f->new_exists && !f->old_len))
		return 0;
	if (put_label(out, "--- ", f->old_exists, "a/", op) < 0 ||
	    put_label(out, "+++ ", f->new_exists, "b/", np) < 0)
		return DECREE_ERROR;
	return put_hunks(out, f, o);
}

int unidiff_format(buf *out, const unidiff_file *file,
		   const unidiff_options *opts)
{
	static const unidiff_options defaults = UNIDIFF_OPTIONS_INIT;
	unidiff_file f;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(file);
	if (!opts)
		opts = &defaults;
	f = *file;
	if (!f.old_path)
		f.old_path = f.new_path;
	if (!f.new_path)
		f.new_path = f.old_path;
	if (!f.old_path || !*f.old_path)
		return decree_error_set(DECREE_EINVALID, "diff without a path");
	if ((f.old_exists && !valid_mode(f.old_mode)) ||
	    (f.new_exists && !valid_mode(f.new_mode)))
		return decree_error_set(DECREE_EINVALID,
					"invalid mode %06o/%06o for '%s'",
					f.old_mode, f.new_mode, f.old_path);
	if (!f.old_exists) {
		f.old_data = NULL;
		f.old_len = 0;
	}
	if (!f.new_exists) {
		f.new_data = NULL;
		f.new_len = 0;
	}
	if (!f.old_exists && !f.new_exists)
		return 0;
	if (!f.old_data)
		f.old_data = "";
	if (!f.new_data)
		f.new_data = "";
	if (f.old_exists && f.new_exists &&
	    (f.old_mode == UNIDIFF_MODE_LINK) !=
		    (f.new_mode == UNIDIFF_MODE_LINK)) {
		unidiff_file del = f, add = f;
		int r;

		del.new_exists = false;
		del.new_path = del.old_path;
		del.new_data = "";
		del.new_len = 0;
		add.old_exists = false;
		add.old_path = add.new_path;
		add.old_data = "";
		add.old_len = 0;
		if ((r = put_record(out, &del, opts)) < 0)
			return r;
		return put_record(out, &add, opts);
	}
	if (!(opts->flags & UNIDIFF_TOO_BIG) && f.old_exists && f.new_exists &&
	    f.old_mode == f.new_mode && !strcmp(f.old_path, f.new_path) &&
	    f.old_len == f.new_len &&
	    (!f.old_len || !memcmp(f.old_data, f.new_data, f.old_len)))
		return 0;
	if (!f.old_exists)
		f.old_path = f.new_path;
	if (!f.new_exists)
		f.new_path = f.old_path;
	return put_record(out, &f, opts);
}
