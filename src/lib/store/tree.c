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

static int build(oid *out, uint64_t *bytes_out, odb_writer *w, const snap *s,
		 size_t *i, const char *prefix, size_t plen, int depth)
{
	buf body = BUF_INIT, obj = BUF_INIT;
	uint32_t count = 0, version = TREE_VERSION;
	uint64_t total = 0;
	int r = 0;

	if (depth > MAX_DEPTH)
		return decree_error_set(DECREE_EINVALID,
					"directory tree too deep");
	while (*i < s->n && !strncmp(s->v[*i].path, prefix, plen)) {
		const snap_entry *e = &s->v[*i];
		const char *name = e->path + plen;
		const char *slash = strchr(name, '/');
		size_t nlen = slash ? (size_t)(slash - name) : strlen(name);
		uint32_t mode;
		uint64_t size;
		oid id;

		if (nlen == 0 || nlen > NAME_MAX) {
			r = decree_error_set(DECREE_EINVALID, "bad path '%s'",
					     e->path);
			goto done;
		}
		if (slash) {
			/* prefix + name + "/" of the subdirectory */
			size_t sublen = plen + nlen + 1;
			if ((r = build(&id, &size, w, s, i, e->path, sublen,
				       depth + 1)) < 0)
				goto done;
			mode = MODE_DIR;
		} else {
			mode = e->mode;
			size = e->size;
			id = e->id;
			(*i)++;
		}
		if ((r = buf_put_u32(&body, mode)) < 0 ||
		    (r = buf_put_u64(&body, size)) < 0 ||
		    (r = buf_put(&body, id.b, SHA256_LEN)) < 0 ||
		    (r = buf_put_u16(&body, (unsigned)nlen)) < 0 ||
		    (r = buf_put(&body, name, nlen)) < 0)
			goto done;
		if (mode != MODE_SKIP)
			total += size;
		if (mode_is_file(mode) && mode != MODE_FILE &&
		    mode != MODE_EXEC)
			version = TREE_VERSION_MODES;
		count++;
	}
	if ((r = buf_put(&obj, TREE_MAGIC, 4)) < 0 ||
	    (r = buf_put_u32(&obj, version)) < 0 ||
	    (r = buf_put_u32(&obj, count)) < 0 ||
	    (r = buf_put(&obj, body.ptr, body.len)) < 0)
		goto done;
	if (w)
		r = odb_writer_add(w, ODB_TREE, obj.ptr, obj.len, NULL, out);
	else
		sha256_buf(out, obj.ptr, obj.len);
	*bytes_out = total;
done:
	buf_release(&body);
	buf_release(&obj);
	return r;
}

int tree_write(oid *root, odb_writer *w, const snap *s)
{
	size_t i = 0;
	uint64_t bytes;
	return build(root, &bytes, w, s, &i, "", 0, 0);
}

int tree_parse(const char *data, size_t len, tree_entry_fn fn, void *payload)
{
	const unsigned char *p = (const unsigned char *)data, *end = p + len;
	char name[NAME_MAX + 1], prev[NAME_MAX + 1];
	uint32_t count, version;
	bool any_perm = false;
	int r;

	if (len < 12 || memcmp(p, TREE_MAGIC, 4))
		return decree_error_set(DECREE_ECORRUPT, "not a tree object");
	version = get_u32le(p + 4);
	if (version != TREE_VERSION && version != TREE_VERSION_MODES)
		return decree_error_set(DECREE_ECORRUPT,
					"unknown tree version %u", version);
	count = get_u32le(p + 8);
	p += 12;
	for (uint32_t k = 0; k < count; k++) {
		uint32_t mode;
		uint64_t size;
		oid id;
		size_t nlen;

		if ((size_t)(end - p) < 4 + 8 + SHA256_LEN + 2)
			return decree_error_set(DECREE_ECORRUPT,
						"truncated tree object");
		mode = get_u32le(p);
		size = get_u64le(p + 4);
		memcpy(id.b, p + 12, SHA256_LEN);
		nlen = get_u16le(p + 12 + SHA256_LEN);
		p += 4 + 8 + SHA256_LEN + 2;
		if ((size_t)(end - p) < nlen || nlen > NAME_MAX)
			return decree_error_set(DECREE_ECORRUPT,
						"truncated tree object");
		memcpy(name, p, nlen);
		name[nlen] = '\0';
		p += nlen;
		if (nlen == 0 || memchr(name, '/', nlen) ||
		    memchr(name, '\0', nlen) || !strcmp(name, ".") ||
		    !strcmp(name, ".."))
			return decree_error_set(DECREE_ECORRUPT,
						"bad name in tree object");
		if (mode != MODE_FILE && mode != MODE_EXEC &&
		    mode != MODE_LINK && mode != MODE_DIR &&
		    mode != MODE_SKIP &&
		    !(version == TREE_VERSION_MODES && mode_is_file(mode)))
			return decree_error_set(DECREE_ECORRUPT,
						"bad mode %o in tree object",
						mode);
		any_perm |= mode_is_file(mode) && mode != MODE_FILE &&
			    mode != MODE_EXEC;
		if (k > 0 && strcmp(prev, name) >= 0)
			return decree_error_set(DECREE_ECORRUPT,
						"tree entries out of order");
		memcpy(prev, name, nlen + 1);
		if ((r = fn(payload, name, mode, size, &id)) != 0)
			return r;
	}
	if (p != end)
		return decree_error_set(DECREE_ECORRUPT,
					"trailing bytes in tree object");
	/* one encoding per tree: the writer uses version 2 only when needed */
	if (version == TREE_VERSION_MODES && !any_perm)
		return decree_error_set(DECREE_ECORRUPT,
					"version 2 tree object without modes "
					"beyond 0644 and 0755");
	return 0;
}

struct read_ctx {
	snap *out;
	odb *db;
	buf *prefix;
	int depth;
};

static int read_rec(struct read_ctx *c, const oid *id);

static int read_entry(void *payload, const char *name, uint32_t mode,
		      uint64_t size, const oid *id)
{
	struct read_ctx *c = payload;
	size_t plen = c->prefix->len;
	int r;

	if (buf_puts(c->prefix, name) < 0)
		return -1;
	if (mode == MODE_DIR) {
		if ((r = buf_putc(c->prefix, '/')) < 0)
			return r;
		r = read_rec(c, id);
	} else {
		snap_entry *e =
			snap_add(c->out, c->prefix->ptr, c->prefix->len);
		r = e ? 0 : -1;
		if (e) {
			e->mode = mode;
			e->size = size;
			e->id = *id;
		}
	}
	buf_truncate(c->prefix, plen);
	return r;
}

static int read_rec(struct read_ctx *c, const oid *id)
{
	buf obj = BUF_INIT;
	int r;

	if (++c->depth > MAX_DEPTH) {
		r = decree_error_set(DECREE_ECORRUPT, "tree too deep");
		goto done;
	}
	/* The stored type is not checked: names are hashes of the bytes, so a
	 * file whose bytes equal a tree object shares its object, and
	 * whichever was stored first decided the recorded type.  The bytes
	 * are what matters, and tree_parse validates them. */
	if ((r = odb_read(&obj, NULL, c->db, id)) < 0)
		goto done;
	r = tree_parse(obj.ptr, obj.len, read_entry, c);
done:
	c->depth--;
	buf_release(&obj);
	return r;
}

int tree_read(snap *out, odb *db, const oid *root)
{
	buf prefix = BUF_INIT;
	struct read_ctx c = { out, db, &prefix, 0 };
	int r = read_rec(&c, root);
	buf_release(&prefix);
	return r;
}
