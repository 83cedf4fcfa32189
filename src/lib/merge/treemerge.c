/*
 * treemerge.c - the per-path rules of a three-way snapshot merge.
 *
 * One walk over the three sorted snaps visits each path present in any
 * of them; a path whose three entries agree is skipped, every other one
 * gets an item.  decide() applies the rules of treemerge.h in this order:
 * same change on both sides (or none) -> one side changed -> unstored
 * entries -> delete/modify -> type and symlink -> mode -> content.  The
 * unstored check comes before any content is looked at: a MODE_SKIP entry
 * has no blob to load or write, and the project's copy of it must never
 * be replaced.
 *
 * A second pass over the result (the path exists after the merge unless
 * the item deletes it; a conflict leaves the project's entry) finds a
 * file that the merged tree would also need as a directory: snaps hold
 * leaves only and canonical order puts "a/..." right after "a", so it is
 * one comparison per path.
 */
#include "util/common.h"
#include "merge/treemerge.h"
#include "util/alloc.h"
#include "util/error.h"

typedef struct {
	const treemerge_opts *opts;
	treemerge_load_fn load;
	void *payload;
	buf b, o, t;
} tm_ctx;

static const char *lbl(const char *s, const char *def)
{
	return s ? s : def;
}

#define OURS(c)	  lbl((c)->opts->ours_label, "ours")
#define THEIRS(c) lbl((c)->opts->theirs_label, "theirs")

static bool same(const snap_entry *a, const snap_entry *b)
{
	if (!a || !b)
		return !a && !b;
	return snap_entry_same(a, b);
}

static bool is_link(const snap_entry *e)
{
	return e && e->mode == MODE_LINK;
}

static bool is_skip(const snap_entry *e)
{
	return e && e->mode == MODE_SKIP;
}

static int conflict(treemerge_item *it, enum treemerge_reason reason,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int conflict(treemerge_item *it, enum treemerge_reason reason,
		    const char *fmt, ...)
{
	buf m = BUF_INIT;
	va_list ap;
	int r;

	decree_free(it->data);
	it->data = NULL;
	it->len = 0;
	it->action = TREEMERGE_CONFLICT;
	it->reason = reason;
	it->deleted = false;
	it->mode = 0;
	memset(&it->id, 0, sizeof(it->id));
	va_start(ap, fmt);
	r = buf_vprintf(&m, fmt, ap);
	va_end(ap);
	if (r < 0) {
		buf_release(&m);
		return DECREE_ERROR;
	}
	decree_free(it->message);
	if (!(it->message = buf_detach(&m, NULL)))
		return DECREE_ERROR;
	return 0;
}

static void take(treemerge_item *it, enum treemerge_action a,
		 const snap_entry *e, uint32_t mode)
{
	it->action = a;
	it->deleted = !e;
	it->mode = e ? mode : 0;
	if (e)
		it->id = e->id;
}

static bool has_nul(const buf *b)
{
	return memchr(b->ptr, '\0', b->len) != NULL;
}

static int load(tm_ctx *c, const snap_entry *e, buf *out)
{
	buf_clear(out);
	if (!e)
		return 0;
	return c->load(c->payload, e, out);
}

/* Both sides changed a regular file's content (base may be absent). */
static int merge_content(tm_ctx *c, treemerge_item *it, uint32_t mode)
{
	const snap_entry *b = it->base, *o = it->ours, *t = it->theirs;
	merge3_params p = MERGE3_PARAMS_INIT;
	merge3_result res = MERGE3_RESULT_INIT;
	int r;

	if ((r = load(c, b, &c->b)) < 0 || (r = load(c, o, &c->o)) < 0 ||
	    (r = load(c, t, &c->t)) < 0)
		return r;
	if (has_nul(&c->b) || has_nul(&c->o) || has_nul(&c->t)) {
		if (!b)
			return conflict(it, TREEMERGE_ADD_ADD,
					"binary file created in %s and in %s, "
					"different",
					OURS(c), THEIRS(c));
		return conflict(it, TREEMERGE_BINARY,
				"binary file changed in %s and in %s", OURS(c),
				THEIRS(c));
	}
	p.style = c->opts->style;
	p.ours_label = OURS(c);
	p.base_label = lbl(c->opts->base_label, "base");
	p.theirs_label = THEIRS(c);
	if ((r = merge3(&res, c->b.ptr, c->b.len, c->o.ptr, c->o.len, c->t.ptr,
			c->t.len, &p)) < 0)
		return r;
	if (res.nconflicts) {
		r = b ? conflict(it, TREEMERGE_CONTENT,
				 "changed in %s and in %s, overlapping "
				 "(%zu conflict%s)",
				 OURS(c), THEIRS(c), res.nconflicts,
				 res.nconflicts == 1 ? "" : "s")
		      : conflict(it, TREEMERGE_ADD_ADD,
				 "created in %s and in %s, different "
				 "(%zu conflict%s)",
				 OURS(c), THEIRS(c), res.nconflicts,
				 res.nconflicts == 1 ? "" : "s");
		it->text = res;
		return r;
	}
	if (res.len == c->o.len && !memcmp(res.ptr, c->o.ptr, res.len) &&
	    mode == o->mode) {
		merge3_result_release(&res);
		take(it, TREEMERGE_KEEP_OURS, o, mode);
		return 0;
	}
	it->action = TREEMERGE_WRITE_MERGED;
	it->deleted = false;
	it->mode = mode;
	it->data = res.ptr;
	it->len = res.len;
	res.ptr = NULL;
	merge3_result_release(&res);
	return 0;
}

static int decide(tm_ctx *c, treemerge_item *it)
{
	const snap_entry *b = it->base, *o = it->ours, *t = it->theirs;
	uint32_t mode;

	if (same(o, t)) {
		take(it, TREEMERGE_KEEP_OURS, o, o ? o->mode : 0);
		return 0;
	}
	if (same(o, b)) {
		if (is_skip(o))
			return conflict(it, TREEMERGE_SKIPPED,
					"not stored in %s (over the size "
					"limit): %s would %s it",
					OURS(c), THEIRS(c),
					t ? "replace" : "delete");
		if (is_skip(t))
			return conflict(it, TREEMERGE_SKIPPED,
					"changed in %s but not stored there "
					"(over the size limit)",
					THEIRS(c));
		take(it, TREEMERGE_TAKE_THEIRS, t, t ? t->mode : 0);
		return 0;
	}
	if (same(t, b)) {
		take(it, TREEMERGE_KEEP_OURS, o, o ? o->mode : 0);
		return 0;
	}

	/* Both sides changed the path, differently. */
	if (is_skip(b) || is_skip(o) || is_skip(t))
		return conflict(it, TREEMERGE_SKIPPED,
				"changed in %s and in %s, and a version is "
				"not stored (over the size limit)",
				OURS(c), THEIRS(c));
	if (!o)
		return conflict(it, TREEMERGE_DELETE_MODIFY,
				"deleted in %s, changed in %s", OURS(c),
				THEIRS(c));
	if (!t)
		return conflict(it, TREEMERGE_MODIFY_DELETE,
				"changed in %s, deleted in %s", OURS(c),
				THEIRS(c));
	if (is_link(o) != is_link(t) || (b && is_link(b) != is_link(o)))
		return conflict(it, TREEMERGE_TYPE, "%s in %s, %s in %s%s",
				is_link(o) ? "symlink" : "file", OURS(c),
				is_link(t) ? "symlink" : "file", THEIRS(c),
				b ? ", and changed on both sides" : "");
	if (is_link(o))
		return b ? conflict(it, TREEMERGE_SYMLINK,
				    "symlink changed to different targets in "
				    "%s and in %s",
				    OURS(c), THEIRS(c))
			 : conflict(it, TREEMERGE_ADD_ADD,
				    "symlink created in %s and in %s with "
				    "different targets",
				    OURS(c), THEIRS(c));

	/* Two regular files: the mode first, then the content. */
	if (o->mode == t->mode)
		mode = o->mode;
	else if (b && o->mode == b->mode)
		mode = t->mode;
	else if (b && t->mode == b->mode)
		mode = o->mode;
	else
		return conflict(it, TREEMERGE_MODE,
				"mode %s %o in %s, %o in %s",
				b ? "changed to" : "created as",
				(unsigned)(o->mode & 07777), OURS(c),
				(unsigned)(t->mode & 07777), THEIRS(c));
	if (!oid_cmp(&o->id, &t->id) || (b && !oid_cmp(&t->id, &b->id))) {
		take(it,
		     mode == o->mode ? TREEMERGE_KEEP_OURS : TREEMERGE_CHMOD, o,
		     mode);
		return 0;
	}
	if (b && !oid_cmp(&o->id, &b->id)) {
		take(it, TREEMERGE_TAKE_THEIRS, t, mode);
		return 0;
	}
	return merge_content(c, it, mode);
}

static const snap_entry *at(const snap *s, size_t i)
{
	return i < s->n ? &s->v[i] : NULL;
}

static bool result_exists(const treemerge_item *it)
{
	if (it->action == TREEMERGE_CONFLICT)
		return it->ours != NULL;
	return !it->deleted;
}

static int mark_dir_file(tm_ctx *c, treemerge_item *it, const char *file)
{
	if (it->action == TREEMERGE_CONFLICT)
		return 0;
	return conflict(it, TREEMERGE_DIR_FILE,
			"'%s' would be both a file and a directory after "
			"merging %s and %s",
			file, OURS(c), THEIRS(c));
}

/*
 * Walk every path of the merged tree (ours' paths, changed by the items)
 * in canonical order and find a leaf that another path is below.
 */
static int check_dir_file(tm_ctx *c, treemerge_plan *p, const snap *ours)
{
	size_t i = 0, k = 0;
	const char *root = NULL;
	treemerge_item *root_it = NULL;
	int r;

	while (i < ours->n || k < p->n) {
		const char *path;
		treemerge_item *it = NULL;
		bool exists;
		int cmp;

		if (i >= ours->n)
			cmp = 1;
		else if (k >= p->n)
			cmp = -1;
		else
			cmp = path_cmp(ours->v[i].path, p->v[k].path);
		if (cmp > 0 || (cmp == 0 && k < p->n)) {
			it = &p->v[k++];
			path = it->path;
			exists = result_exists(it);
			if (cmp == 0)
				i++;
		} else {
			path = ours->v[i++].path;
			exists = true;
		}
		if (!exists)
			continue;
		if (root && !strncmp(path, root, strlen(root)) &&
		    path[strlen(root)] == '/') {
			if (it && (r = mark_dir_file(c, it, root)) < 0)
				return r;
			if (root_it &&
			    (r = mark_dir_file(c, root_it, root)) < 0)
				return r;
			continue;
		}
		root = path;
		root_it = it;
	}
	return 0;
}

int treemerge(treemerge_plan *out, const snap *base, const snap *ours,
	      const snap *theirs, const treemerge_opts *opts,
	      treemerge_load_fn load_fn, void *payload)
{
	static const treemerge_opts defaults = TREEMERGE_OPTS_INIT;
	tm_ctx c = { 0 };
	size_t i = 0, j = 0, k = 0, n;
	int r = 0;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(base && ours && theirs && load_fn);
	memset(out, 0, sizeof(*out));
	if (!opts)
		opts = &defaults;
	if (opts->version != TREEMERGE_OPTS_VERSION ||
	    opts->style > MERGE3_STYLE_DIFF3)
		return decree_error_set(DECREE_EINVALID,
					"invalid merge options");
	c.opts = opts;
	c.load = load_fn;
	c.payload = payload;
	buf_init(&c.b);
	buf_init(&c.o);
	buf_init(&c.t);

	while (i < base->n || j < ours->n || k < theirs->n) {
		const snap_entry *e[3] = { at(base, i), at(ours, j),
					   at(theirs, k) };
		const char *path = NULL;
		treemerge_item *it;
		int w;

		for (w = 0; w < 3; w++)
			if (e[w] && (!path || path_cmp(e[w]->path, path) < 0))
				path = e[w]->path;
		for (w = 0; w < 3; w++) {
			if (e[w] && path_cmp(e[w]->path, path))
				e[w] = NULL;
			if (e[w] && e[w]->unhashed) {
				r = decree_error_set(DECREE_EINVALID,
						     "'%s' has no content id "
						     "(not hashed)",
						     path);
				goto done;
			}
		}
		i += e[0] != NULL;
		j += e[1] != NULL;
		k += e[2] != NULL;
		if (same(e[0], e[1]) && same(e[0], e[2]))
			continue;
		if (GROW(out->v, out->cap, out->n + 1) < 0) {
			r = DECREE_ERROR;
			goto done;
		}
		it = &out->v[out->n++];
		memset(it, 0, sizeof(*it));
		it->path = path;
		it->base = e[0];
		it->ours = e[1];
		it->theirs = e[2];
		if ((r = decide(&c, it)) < 0)
			goto done;
	}
	if ((r = check_dir_file(&c, out, ours)) < 0)
		goto done;
	for (n = i = 0; i < out->n; i++)
		n += out->v[i].action == TREEMERGE_CONFLICT;
	out->nconflicts = n;
done:
	if (r < 0)
		treemerge_plan_release(out);
	buf_release(&c.b);
	buf_release(&c.o);
	buf_release(&c.t);
	return r;
}

void treemerge_plan_release(treemerge_plan *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		decree_free(p->v[i].data);
		decree_free(p->v[i].message);
		merge3_result_release(&p->v[i].text);
	}
	decree_free(p->v);
	memset(p, 0, sizeof(*p));
}

const char *treemerge_reason_name(enum treemerge_reason r)
{
	switch (r) {
	case TREEMERGE_CLEAN:
		return "clean";
	case TREEMERGE_CONTENT:
		return "content";
	case TREEMERGE_BINARY:
		return "binary";
	case TREEMERGE_DELETE_MODIFY:
		return "delete/modify";
	case TREEMERGE_MODIFY_DELETE:
		return "modify/delete";
	case TREEMERGE_ADD_ADD:
		return "add/add";
	case TREEMERGE_MODE:
		return "mode";
	case TREEMERGE_TYPE:
		return "type";
	case TREEMERGE_SYMLINK:
		return "symlink";
	case TREEMERGE_SKIPPED:
		return "skipped";
	case TREEMERGE_DIR_FILE:
		return "directory/file";
	}
	return "unknown";
}
