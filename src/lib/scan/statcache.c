/*
 * statcache.c - load, query and save the stat cache (see statcache.h).
 *
 * File layout (little endian), docs/format.md:
 *   "DSTC" u32 version(1) i64 written_ns u64 count
 *   count x { u16 path_len, path, u32 mode, u64 size, i64 mtime_ns,
 *             i64 ctime_ns, u64 ino, u64 dev, oid[32] }
 *   sha256 of everything before (32 bytes)
 * The whole file is read into memory; a hash table of path -> record
 * offset is built on load.
 */
#include "util/common.h"
#include "scan/statcache.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#define SC_MAGIC     "DSTC"
#define SC_VERSION   1
#define SC_HDR	     24
#define SC_REC_FIXED (4 + 8 + 8 + 8 + 8 + 8 + SHA256_LEN)

/* One cache file, parsed: the whole file and a hash table of its records. */
typedef struct {
	buf data;
	int64_t written_ns;
	uint64_t count;
	uint64_t *slots; /* (hash tag << 32) | (record offset + 1); 0 = empty */
	size_t nslots;
} sc_table;

/*
 * The cache is a base file plus a small delta file ("<path>.delta") with
 * the entries that changed since the base was written, so that a
 * checkpoint after a few changes in a large tree writes kilobytes, not the
 * whole cache.  Every record is a self-contained fact (this path with
 * these stat data had this content), so the two can never disagree in a
 * harmful way: a record whose stat data do not match the file is ignored.
 */
struct statcache {
	sc_table base, delta;
	uint64_t hits;	 /* lookups that returned a clean entry */
	uint64_t misses; /* lookups that did not */
};

/* The upper 32 bits of the path hash are kept in the slot so that a probe
 * touches the record (a cache miss in a large buffer) only when the tags
 * agree. */
#define SLOT_TAG(h)  ((h) >> 32)
#define DELTA_SUFFIX ".delta"

static uint64_t hash_path(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int parse(sc_table *c)
{
	const unsigned char *p = (const unsigned char *)c->data.ptr;
	size_t len = c->data.len, off;
	oid sum;

	if (len < SC_HDR + SHA256_LEN || memcmp(p, SC_MAGIC, 4) ||
	    get_u32le(p + 4) != SC_VERSION)
		return -1;
	sha256_buf(&sum, p, len - SHA256_LEN);
	if (memcmp(sum.b, p + len - SHA256_LEN, SHA256_LEN))
		return -1;
	c->written_ns = (int64_t)get_u64le(p + 8);
	c->count = get_u64le(p + 16);
	if (c->count > len / (2 + SC_REC_FIXED) || len > UINT32_MAX - 1)
		return -1;
	c->nslots = 16;
	while (c->nslots < c->count * 2)
		c->nslots *= 2;
	if (!(c->slots = decree_calloc(c->nslots, sizeof(uint64_t))))
		return -2;
	off = SC_HDR;
	for (uint64_t k = 0; k < c->count; k++) {
		size_t plen, i;
		if (off + 2 > len - SHA256_LEN)
			return -1;
		plen = get_u16le(p + off);
		if (off + 2 + plen + SC_REC_FIXED > len - SHA256_LEN)
			return -1;
		uint64_t h = hash_path((const char *)p + off + 2, plen);
		i = (size_t)h & (c->nslots - 1);
		while (c->slots[i])
			i = (i + 1) & (c->nslots - 1);
		c->slots[i] = SLOT_TAG(h) << 32 | (uint64_t)(off + 1);
		off += 2 + plen + SC_REC_FIXED;
	}
	return off == len - SHA256_LEN ? 0 : -1;
}

static void table_release(sc_table *t)
{
	buf_release(&t->data);
	decree_free(t->slots);
	memset(t, 0, sizeof(*t));
	buf_init(&t->data);
}

/* Load one file; missing or damaged = empty.  -1 only on out-of-memory. */
static int table_load(sc_table *t, const char *path)
{
	int r;

	buf_init(&t->data);
	r = fs_read_path(path, &t->data);
	if (r == 0)
		r = parse(t);
	if (r == -2)
		return -1;
	if (r < 0) {
		error_clear();
		table_release(t);
	}
	return 0;
}

int statcache_load(statcache **out, const char *path)
{
	char dpath[PATH_MAX];
	statcache *c = decree_calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -1;
	snprintf(dpath, sizeof(dpath), "%s%s", path, DELTA_SUFFIX);
	if (table_load(&c->base, path) < 0 ||
	    table_load(&c->delta, dpath) < 0) {
		statcache_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

void statcache_free(statcache *c)
{
	if (!c)
		return;
	table_release(&c->base);
	table_release(&c->delta);
	decree_free(c);
}

static const unsigned char *find(const sc_table *c, const char *path,
				 size_t plen)
{
	const unsigned char *p = (const unsigned char *)c->data.ptr;
	uint64_t h;
	size_t i;

	if (!c->nslots)
		return NULL;
	h = hash_path(path, plen);
	i = (size_t)h & (c->nslots - 1);
	while (c->slots[i]) {
		if (c->slots[i] >> 32 == SLOT_TAG(h)) {
			const unsigned char *rec =
				p + (uint32_t)c->slots[i] - 1;
			if (get_u16le(rec) == plen &&
			    !memcmp(rec + 2, path, plen))
				return rec + 2 + plen;
		}
		i = (i + 1) & (c->nslots - 1);
	}
	return NULL;
}

/* Does record f (stat data + id) vouch for e?  Racy records do not. */
static bool record_matches(const sc_table *t, const unsigned char *f,
			   const snap_entry *e)
{
	int64_t mtime = (int64_t)get_u64le(f + 12);

	if (get_u32le(f) != e->mode || get_u64le(f + 4) != e->size ||
	    mtime != e->mtime_ns || (int64_t)get_u64le(f + 20) != e->ctime_ns ||
	    get_u64le(f + 28) != e->ino || get_u64le(f + 36) != e->dev)
		return false;
	/* racy: modified in the second the cache was written, or later */
	return mtime / 1000000000 < t->written_ns / 1000000000;
}

int statcache_lookup(statcache *c, const char *path, const snap_entry *e,
		     oid *id)
{
	size_t plen = strlen(path);
	const unsigned char *f;
	int src = 0;

	/* the delta is newer: if it knows the path, the base is not asked */
	if ((f = find(&c->delta, path, plen)) != NULL) {
		if (record_matches(&c->delta, f, e))
			src = STATCACHE_DELTA;
	} else if ((f = find(&c->base, path, plen)) != NULL) {
		if (record_matches(&c->base, f, e))
			src = STATCACHE_BASE;
	}
	if (!src) {
		__atomic_fetch_add(&c->misses, 1, __ATOMIC_RELAXED); /* scans
									are
									parallel
								      */
		return 0;
	}
	memcpy(id->b, f + 44, SHA256_LEN);
	__atomic_fetch_add(&c->hits, 1, __ATOMIC_RELAXED);
	return src;
}

static bool cacheable(const snap_entry *e)
{
	/* the record stores the path length in 16 bits */
	return e->mode != MODE_SKIP && e->mtime_ns != 0 &&
	       strlen(e->path) <= 0xffff;
}

bool statcache_unchanged(const statcache *c, const snap *s)
{
	uint64_t n = 0;

	for (size_t k = 0; k < s->n; k++)
		n += cacheable(&s->v[k]);
	/* Every hit matched all stat fields and was not racy; if every entry
	 * of the scan hit, a save would write the same facts again.  (Records
	 * of deleted files may remain: they are never asked for.) */
	return c->misses == 0 && c->hits == n;
}

/* Write the cacheable entries of s (those with cached != skip_src when
 * skip_src is non-zero) as one cache file. */
static int write_table(const char *path, const snap *s, int skip_src)
{
	buf out = BUF_INIT;
	uint64_t count = 0;
	oid sum;
	int r = -1;

	for (size_t k = 0; k < s->n; k++)
		if (cacheable(&s->v[k]) &&
		    (!skip_src || s->v[k].cached != skip_src))
			count++;
	if (buf_put(&out, SC_MAGIC, 4) < 0 ||
	    buf_put_u32(&out, SC_VERSION) < 0 ||
	    buf_put_u64(&out, (uint64_t)fs_now_ns()) < 0 ||
	    buf_put_u64(&out, count) < 0)
		goto done;
	for (size_t k = 0; k < s->n; k++) {
		const snap_entry *e = &s->v[k];
		size_t plen = strlen(e->path);
		if (!cacheable(e) || (skip_src && e->cached == skip_src))
			continue;
		if (buf_put_u16(&out, (unsigned)plen) < 0 ||
		    buf_put(&out, e->path, plen) < 0 ||
		    buf_put_u32(&out, e->mode) < 0 ||
		    buf_put_u64(&out, e->size) < 0 ||
		    buf_put_u64(&out, (uint64_t)e->mtime_ns) < 0 ||
		    buf_put_u64(&out, (uint64_t)e->ctime_ns) < 0 ||
		    buf_put_u64(&out, e->ino) < 0 ||
		    buf_put_u64(&out, e->dev) < 0 ||
		    buf_put(&out, e->id.b, SHA256_LEN) < 0)
			goto done;
	}
	sha256_buf(&sum, out.ptr, out.len);
	if (buf_put(&out, sum.b, SHA256_LEN) < 0)
		goto done;
	r = fs_write_atomic(path, out.ptr, out.len, 0644);
done:
	buf_release(&out);
	return r;
}

int statcache_save(const char *path, const snap *s)
{
	char dpath[PATH_MAX];
	int r = write_table(path, s, 0);

	snprintf(dpath, sizeof(dpath), "%s%s", path, DELTA_SUFFIX);
	if (r == 0 && unlink(dpath) < 0 && errno != ENOENT)
		r = decree_error_os("cannot remove '%s'", dpath);
	return r;
}

int statcache_update(const char *path, const snap *s, const statcache *c)
{
	char dpath[PATH_MAX];
	uint64_t n = 0, outside_base = 0;

	if (c && statcache_unchanged(c, s))
		return 0;
	for (size_t k = 0; k < s->n; k++) {
		if (!cacheable(&s->v[k]))
			continue;
		n++;
		outside_base += s->v[k].cached != STATCACHE_BASE;
	}
	/* A delta beyond 1/16 of the tree is folded into a new base. */
	if (!c || !c->base.count || outside_base * 16 > n)
		return statcache_save(path, s);
	snprintf(dpath, sizeof(dpath), "%s%s", path, DELTA_SUFFIX);
	return write_table(dpath, s, STATCACHE_BASE);
}
