/*
 * tree.c - build tree objects from a flat snapshot and read them back.
 *
 * Tree object layout (little endian), see docs/format.md:
 *   "DTRE" u32 version(1 or 2) u32 count
 *   count x { u32 mode, u64 size, oid[32], u16 name_len, name bytes }
 * For directories `size` is the total byte count below it.  Names are
 * validated on read (at most NAME_MAX bytes, no "/", NUL, "." or "..", strictly
 * increasing), so a damaged or hostile store cannot make a restore write
 * outside the root.
 *
 * Versions: a tree whose files all have mode 0644 or 0755 is written as
 * version 1, byte for byte what earlier releases wrote, so its id does not
 * change and old and new checkpoints of the same tree share it.  A tree
 * holding any other permission bits (0600, 0640, 0444, ...) is version 2,
 * which an earlier release refuses by its version rather than take the
 * mode for damage.  Version 1 allows only 0100644 and 0100755 for files.
 */
#include "util/common.h"
#include "store/tree.h"
#include "util/alloc.h"
#include "util/error.h"

#define TREE_MAGIC	   "DTRE"
#define TREE_VERSION	   1 /* files 0644/0755 only */
#define TREE_VERSION_MODES 2 /* any permission bits */
#define MAX_DEPTH	   512

/* One tree object being built: the objects of a directory and of its
 * ancestors share one buffer, each appended after its parent's part and cut
 * off again once written (a stack), so building allocates nothing per
 * directory. */
typedef struct {
	odb_writer *w;
	const snap *s;
	size_t i;	       /* next entry of s */
	buf b;		       /* the objects on the way down, parent first */
	tree_ids *ids;	       /* or NULL */
	const tree_ids *known; /* or NULL */
	size_t k;	       /* the first of known not passed yet */
} builder;

/* Bytes of one encoded entry before its name. */
#define ENTRY_FIXED (4 + 8 + SHA256_LEN + 2)

/* Does path start with the first plen bytes of prefix? */
static bool under(const char *path, const char *prefix, size_t plen)
{
	return !strncmp(path, prefix, plen);
}

/*
 * The directory whose entries start at bd->i with prefix `prefix` (plen
 * bytes), taken from bd->known when it holds it (tree_write_known): 1 and
 * *out, *bytes_out set, bd->i past it and its directories' ids appended to
 * bd->ids; 0 when it must be built; -1 on error.
 */
static int take_known(builder *bd, oid *out, uint64_t *bytes_out,
		      const char *prefix, size_t plen)
{
	const tree_ids *kn = bd->known;
	const snap *s = bd->s;
	const tree_dir *d;
	uint64_t total = 0;
	size_t last;
	int r;

	/* the hints are in the order the builder meets directories: pass
	 * those before this one (a parent has a shorter prefix) */
	while (bd->k < kn->n &&
	       (kn->v[bd->k].first < bd->i ||
		(kn->v[bd->k].first == bd->i && kn->v[bd->k].plen < plen)))
		bd->k++;
	if (bd->k == kn->n)
		return 0;
	d = &kn->v[bd->k];
	if (!d->known || d->first != bd->i || d->plen != plen ||
	    d->end <= d->first || d->end > s->n ||
	    !under(s->v[d->end - 1].path, prefix, plen) ||
	    (d->end < s->n && under(s->v[d->end].path, prefix, plen)))
		return 0;
	for (size_t i = d->first; i < d->end; i++) {
		const snap_entry *e = &s->v[i];
		if (!e->cached || e->mode == MODE_SKIP)
			return 0;
		total += e->size;
	}
	/* the directories below it: known too (a directory is vouched for
	 * only with all of them) */
	for (last = bd->k + 1; last < kn->n && kn->v[last].first < d->end;
	     last++)
		if (!kn->v[last].known)
			return 0;
	if (bd->w && (r = odb_writer_check(bd->w, &d->id)) <= 0)
		return r; /* not in the store (or damaged): built */
	if (bd->ids) {
		size_t n = last - bd->k;
		if (GROW(bd->ids->v, bd->ids->cap, bd->ids->n + n) < 0)
			return -1;
		memcpy(bd->ids->v + bd->ids->n, d, n * sizeof(*d));
		bd->ids->n += n;
	}
	*out = d->id;
	*bytes_out = total;
	bd->i = d->end;
	bd->k = last;
	return 1;
}

static int build(builder *bd, oid *out, uint64_t *bytes_out, const char *prefix,
		 size_t plen, int depth)
{
	const snap *s = bd->s;
	size_t start = bd->b.len, slot = 0, first = bd->i;
	uint32_t count = 0, version = TREE_VERSION;
	uint64_t total = 0;
	unsigned char *hdr;
	int r = 0;

	if (depth > MAX_DEPTH)
		return decree_error_set(DECREE_EINVALID,
					"directory tree too deep");
	if (bd->known && (r = take_known(bd, out, bytes_out, prefix, plen)))
		return r < 0 ? r : 0;
	if (bd->ids) {
		/* pre-order: the directory before what lies below it */
		if (GROW(bd->ids->v, bd->ids->cap, bd->ids->n + 1) < 0)
			return -1;
		slot = bd->ids->n++;
	}
	/* "DTRE", version and count, filled in at the end */
	if (buf_grow(&bd->b, 12) < 0)
		return -1;
	bd->b.len += 12;
	while (bd->i < s->n && under(s->v[bd->i].path, prefix, plen)) {
		const snap_entry *e = &s->v[bd->i];
		const char *name = e->path + plen, *q = name;
		unsigned char *p;
		size_t nlen;
		bool slash;
		uint32_t mode;
		uint64_t size;
		oid id;

		while (*q && *q != '/') /* the name and whether a '/' ends it */
			q++;
		nlen = (size_t)(q - name);
		slash = *q == '/';
		if (nlen == 0 || nlen > NAME_MAX) {
			r = decree_error_set(DECREE_EINVALID, "bad path '%s'",
					     e->path);
			goto done;
		}
		if (slash) {
			/* prefix + name + "/" of the subdirectory */
			if ((r = build(bd, &id, &size, e->path, plen + nlen + 1,
				       depth + 1)) < 0)
				goto done;
			mode = MODE_DIR;
		} else {
			mode = e->mode;
			size = e->size;
			id = e->id;
			bd->i++;
		}
		/* (the buffer may have moved while the subdirectory was
		 * built: `name` points into the snap, not into it) */
		if ((r = buf_grow(&bd->b, ENTRY_FIXED + nlen)) < 0)
			goto done;
		p = (unsigned char *)bd->b.ptr + bd->b.len;
		put_u32le(p, mode);
		put_u64le(p + 4, size);
		memcpy(p + 12, id.b, SHA256_LEN);
		p[12 + SHA256_LEN] = (unsigned char)nlen;
		p[13 + SHA256_LEN] = (unsigned char)(nlen >> 8);
		memcpy(p + ENTRY_FIXED, name, nlen);
		bd->b.len += ENTRY_FIXED + nlen;
		if (mode != MODE_SKIP)
			total += size;
		if (mode_is_file(mode) && mode != MODE_FILE &&
		    mode != MODE_EXEC)
			version = TREE_VERSION_MODES;
		count++;
	}
	hdr = (unsigned char *)bd->b.ptr + start;
	memcpy(hdr, TREE_MAGIC, 4);
	put_u32le(hdr + 4, version);
	put_u32le(hdr + 8, count);
	if (bd->w)
		r = odb_writer_add(bd->w, ODB_TREE, hdr, bd->b.len - start,
				   NULL, out);
	else
		sha256_buf(out, hdr, bd->b.len - start);
	*bytes_out = total;
	if (r == 0 && bd->ids) {
		tree_dir *d = &bd->ids->v[slot];
		d->first = first;
		d->end = bd->i;
		d->plen = plen;
		d->id = *out;
		d->known = true;
	}
done:
	buf_truncate(&bd->b, start);
	return r;
}

int tree_write_known(oid *root, odb_writer *w, const snap *s, tree_ids *ids,
		     const tree_ids *known)
{
	builder bd;
	uint64_t bytes;
	int r;

	memset(&bd, 0, sizeof(bd));
	bd.w = w;
	bd.s = s;
	buf_init(&bd.b);
	bd.ids = ids;
	bd.known = known && known->n ? known : NULL;
	if (ids)
		ids->n = 0;
	r = build(&bd, root, &bytes, "", 0, 0);
	buf_release(&bd.b);
	if (r < 0 && ids)
		ids->n = 0;
	return r;
}

int tree_write_ids(oid *root, odb_writer *w, const snap *s, tree_ids *ids)
{
	return tree_write_known(root, w, s, ids, NULL);
}

int tree_write(oid *root, odb_writer *w, const snap *s)
{
	return tree_write_ids(root, w, s, NULL);
}

void tree_ids_release(tree_ids *ids)
{
	decree_free(ids->v);
	memset(ids, 0, sizeof(*ids));
}

/*
 * Walking one tree object's entries, each checked as it comes (so a
 * reader sees the entries before a damaged one, as it always did): the
 * one parser behind tree_parse and the reader.  Names point into the
 * object's bytes, not NUL-terminated.
 */
typedef struct {
	const unsigned char *p, *end;
	uint32_t count, k, version;
	bool any_perm;
	const unsigned char *prev;
	size_t prevlen;
} tree_iter;

typedef struct {
	uint32_t mode;
	uint64_t size;
	oid id;
	const char *name;
	size_t nlen;
} tree_item;

static int iter_start(tree_iter *it, const char *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;

	memset(it, 0, sizeof(*it));
	if (len < 12 || memcmp(p, TREE_MAGIC, 4))
		return decree_error_set(DECREE_ECORRUPT, "not a tree object");
	it->version = get_u32le(p + 4);
	if (it->version != TREE_VERSION && it->version != TREE_VERSION_MODES)
		return decree_error_set(DECREE_ECORRUPT,
					"unknown tree version %u", it->version);
	it->count = get_u32le(p + 8);
	it->p = p + 12;
	it->end = p + len;
	return 0;
}

/* strcmp of two names without NUL bytes. */
static int name_cmp(const unsigned char *a, size_t alen, const unsigned char *b,
		    size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* 1: *e is the next entry; 0: there is none (the object is whole);
 * DECREE_ECORRUPT: it is damaged there. */
static int iter_next(tree_iter *it, tree_item *e)
{
	const unsigned char *p = it->p, *name;
	size_t nlen;

	if (it->k == it->count) {
		if (p != it->end)
			return decree_error_set(
				DECREE_ECORRUPT,
				"trailing bytes in tree object");
		/* one encoding per tree: the writer uses version 2 only
		 * when needed */
		if (it->version == TREE_VERSION_MODES && !it->any_perm)
			return decree_error_set(
				DECREE_ECORRUPT,
				"version 2 tree object without modes "
				"beyond 0644 and 0755");
		return 0;
	}
	if ((size_t)(it->end - p) < ENTRY_FIXED)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated tree object");
	e->mode = get_u32le(p);
	e->size = get_u64le(p + 4);
	memcpy(e->id.b, p + 12, SHA256_LEN);
	nlen = get_u16le(p + 12 + SHA256_LEN);
	p += ENTRY_FIXED;
	if ((size_t)(it->end - p) < nlen || nlen > NAME_MAX)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated tree object");
	name = p;
	p += nlen;
	if (nlen == 0 || memchr(name, '/', nlen) || memchr(name, '\0', nlen) ||
	    (nlen == 1 && name[0] == '.') ||
	    (nlen == 2 && name[0] == '.' && name[1] == '.'))
		return decree_error_set(DECREE_ECORRUPT,
					"bad name in tree object");
	if (e->mode != MODE_FILE && e->mode != MODE_EXEC &&
	    e->mode != MODE_LINK && e->mode != MODE_DIR &&
	    e->mode != MODE_SKIP &&
	    !(it->version == TREE_VERSION_MODES && mode_is_file(e->mode)))
		return decree_error_set(DECREE_ECORRUPT,
					"bad mode %o in tree object", e->mode);
	it->any_perm |= mode_is_file(e->mode) && e->mode != MODE_FILE &&
			e->mode != MODE_EXEC;
	if (it->k > 0 && name_cmp(it->prev, it->prevlen, name, nlen) >= 0)
		return decree_error_set(DECREE_ECORRUPT,
					"tree entries out of order");
	it->prev = name;
	it->prevlen = nlen;
	it->k++;
	it->p = p;
	e->name = (const char *)name;
	e->nlen = nlen;
	return 1;
}

int tree_parse(const char *data, size_t len, tree_entry_fn fn, void *payload)
{
	char name[NAME_MAX + 1];
	tree_iter it;
	tree_item e;
	int r;

	if ((r = iter_start(&it, data, len)) < 0)
		return r;
	while ((r = iter_next(&it, &e)) > 0) {
		memcpy(name, e.name, e.nlen);
		name[e.nlen] = '\0';
		if ((r = fn(payload, name, e.mode, e.size, &e.id)) != 0)
			return r;
	}
	return r;
}

struct read_ctx {
	snap *out;
	odb *db;
	buf *prefix;
	int depth;
	buf *objs; /* one per depth (grown as needed): a tree object is
		      parsed while its subdirectories are read */
	size_t nobjs;
	const snap *like;
	const tree_ids *ids;
	/* tree_diff_like: what is as in `like` is left out of `out`, and
	 * the ranges of like's entries it covers are noted here */
	bool skip_like;
	size_t (*same)[2];
	size_t nsame, samecap;
};

static int read_rec(struct read_ctx *c, const oid *id);

/* Directory prefixes ("" or "a/b/") in canonical order, '/' first. */
static int prefix_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;

	for (size_t k = 0; k < n; k++) {
		unsigned char x = (unsigned char)a[k], y = (unsigned char)b[k];
		if (x == y)
			continue;
		if (x == '/')
			return -1;
		if (y == '/')
			return 1;
		return x < y ? -1 : 1;
	}
	return alen < blen ? -1 : alen > blen;
}

/* The directory of c->like at prefix c->prefix, when its id is `id`. */
static const tree_dir *like_dir(const struct read_ctx *c, const oid *id)
{
	const tree_ids *ids = c->ids;
	size_t lo = 0, hi = ids->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const tree_dir *d = &ids->v[mid];
		/* (the root of an empty snap has no entry to hold its "") */
		int k = prefix_cmp(d->plen ? c->like->v[d->first].path : "",
				   d->plen, c->prefix->ptr, c->prefix->len);
		if (k == 0) {
			if (oid_cmp(&d->id, id))
				return NULL;
			for (size_t i = d->first; i < d->end; i++)
				if (c->like->v[i].unhashed)
					return NULL; /* its ids say nothing */
			return d;
		}
		if (k < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int read_rec(struct read_ctx *c, const oid *id)
{
	const tree_dir *d;
	tree_iter it;
	tree_item e;
	size_t plen;
	buf *obj;
	int r;

	if (++c->depth > MAX_DEPTH) {
		r = decree_error_set(DECREE_ECORRUPT, "tree too deep");
		goto done;
	}
	/* A directory whose id is that of the same directory of `like` holds
	 * what `like` holds there: the bytes of a tree object are all its id
	 * covers. */
	if (c->ids && c->ids->n && (d = like_dir(c, id)) != NULL) {
		if (c->skip_like) {
			r = GROW(c->same, c->samecap, c->nsame + 1);
			if (r == 0) {
				c->same[c->nsame][0] = d->first;
				c->same[c->nsame++][1] = d->end;
			}
			goto done;
		}
		for (size_t i = d->first; i < d->end; i++) {
			const snap_entry *src = &c->like->v[i];
			snap_entry *dst =
				snap_add(c->out, src->path, strlen(src->path));
			if (!dst) {
				r = -1;
				goto done;
			}
			dst->mode = src->mode;
			dst->size = src->size;
			dst->id = src->id;
		}
		r = 0;
		goto done;
	}
	/* The stored type is not checked: names are hashes of the bytes, so a
	 * file whose bytes equal a tree object shares its object, and
	 * whichever was stored first decided the recorded type.  The bytes
	 * are what matters, and tree_parse validates them. */
	if ((size_t)c->depth >= c->nobjs) {
		size_t had = c->nobjs;
		if ((r = GROW(c->objs, c->nobjs, (size_t)c->depth + 1)) < 0)
			goto done;
		for (size_t i = had; i < c->nobjs; i++)
			buf_init(&c->objs[i]);
	}
	/* (the array may move while a subdirectory is read: the parse
	 * holds the bytes, which do not) */
	obj = &c->objs[c->depth];
	if ((r = odb_read(obj, NULL, c->db, id)) < 0 ||
	    (r = iter_start(&it, obj->ptr, obj->len)) < 0)
		goto done;
	plen = c->prefix->len;
	while ((r = iter_next(&it, &e)) > 0) {
		buf *pre = c->prefix;
		/* the entry's path: the prefix and its name (and a '/') */
		if ((r = buf_grow(pre, e.nlen + 1)) < 0)
			break;
		memcpy(pre->ptr + plen, e.name, e.nlen);
		pre->len = plen + e.nlen;
		if (e.mode == MODE_DIR) {
			pre->ptr[pre->len++] = '/';
			pre->ptr[pre->len] = '\0';
			r = read_rec(c, &e.id);
		} else {
			snap_entry *se = snap_add(c->out, pre->ptr, pre->len);
			if (se) {
				se->mode = e.mode;
				se->size = e.size;
				se->id = e.id;
			}
			r = se ? 0 : -1;
		}
		buf_truncate(c->prefix, plen);
		if (r < 0)
			break;
	}
done:
	c->depth--;
	return r;
}

static void ctx_release(struct read_ctx *c)
{
	for (size_t i = 0; i < c->nobjs; i++)
		buf_release(&c->objs[i]);
	decree_free(c->objs);
	c->objs = NULL;
	c->nobjs = 0;
}

/* Read tree `root` whose path is `at` ("" or "a/b/"), c->depth trees
 * deep, into c->out (c->objs are kept for the next read: ctx_release). */
static int read_tree_at(struct read_ctx *c, const oid *root, const char *at)
{
	buf prefix = BUF_INIT;
	int r;

	if (buf_puts(&prefix, at) < 0)
		return -1;
	c->prefix = &prefix;
	r = read_rec(c, root);
	c->prefix = NULL; /* (it goes now) */
	buf_release(&prefix);
	return r;
}

static int read_tree(struct read_ctx *c, const oid *root)
{
	int r = read_tree_at(c, root, "");
	ctx_release(c);
	return r;
}

int tree_read_like(snap *out, odb *db, const oid *root, const snap *like,
		   const tree_ids *ids)
{
	struct read_ctx c;

	memset(&c, 0, sizeof(c));
	c.out = out;
	c.db = db;
	c.like = like;
	c.ids = like ? ids : NULL;
	return read_tree(&c, root);
}

int tree_diff_like(snap *keep, odb *db, const oid *root, const snap *like,
		   const tree_ids *ids, snap_diff_fn fn, void *payload)
{
	struct read_ctx c;
	int r;

	memset(&c, 0, sizeof(c));
	c.out = keep;
	c.db = db;
	c.like = like;
	c.ids = ids;
	c.skip_like = true;
	/* snap_diff(keep, like) over what is left: the ranges of `like` noted
	 * are as the tree has them (and absent from keep); they come in
	 * order, one after the other */
	if ((r = read_tree(&c, root)) == 0)
		r = snap_diff_skip(keep, like, (const size_t(*)[2])c.same,
				   c.nsame, fn, payload);
	decree_free(c.same);
	return r;
}

int tree_read(snap *out, odb *db, const oid *root)
{
	return tree_read_like(out, db, root, NULL, NULL);
}
