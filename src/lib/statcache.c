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
#include "common.h"
#include "statcache.h"
#include "alloc.h"
#include "error.h"
#include "fs.h"

#define SC_MAGIC "DSTC"
#define SC_VERSION 1
#define SC_HDR 24
#define SC_REC_FIXED (4 + 8 + 8 + 8 + 8 + 8 + SHA256_LEN)

struct statcache {
	buf data;
	int64_t written_ns;
	uint64_t count;
	uint64_t *slots; /* (hash tag << 32) | (record offset + 1); 0 = empty */
	size_t nslots;
	uint64_t hits;   /* lookups that returned a clean entry */
};

/* The upper 32 bits of the path hash are kept in the slot so that a probe
 * touches the record (a cache miss in a large buffer) only when the tags
 * agree. */
#define SLOT_TAG(h) ((h) >> 32)

static uint64_t hash_path(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int parse(statcache *c)
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

int statcache_load(statcache **out, const char *path)
{
	statcache *c = decree_calloc(1, sizeof(*c));
	int r;

	*out = NULL;
	if (!c)
		return -1;
	buf_init(&c->data);
	r = fs_read_path(path, &c->data);
	if (r == 0)
		r = parse(c);
	if (r == -2) {
		statcache_free(c);
		return -1;
	}
	if (r < 0) { /* missing or damaged: start empty */
		decree_error_clear();
		buf_release(&c->data);
		decree_free(c->slots);
		c->slots = NULL;
		c->nslots = 0;
		c->count = 0;
	}
	*out = c;
	return 0;
}

void statcache_free(statcache *c)
{
	if (!c)
		return;
	buf_release(&c->data);
	decree_free(c->slots);
	decree_free(c);
}

static const unsigned char *find(const statcache *c, const char *path, size_t plen)
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
			const unsigned char *rec = p + (uint32_t)c->slots[i] - 1;
			if (get_u16le(rec) == plen && !memcmp(rec + 2, path, plen))
				return rec + 2 + plen;
		}
		i = (i + 1) & (c->nslots - 1);
	}
	return NULL;
}

bool statcache_lookup(statcache *c, const char *path, const snap_entry *e, oid *id)
{
	const unsigned char *f = find(c, path, strlen(path));
	int64_t mtime;

	if (!f)
		return false;
	mtime = (int64_t)get_u64le(f + 12);
	if (get_u32le(f) != e->mode || get_u64le(f + 4) != e->size ||
	    mtime != e->mtime_ns || (int64_t)get_u64le(f + 20) != e->ctime_ns ||
	    get_u64le(f + 28) != e->ino || get_u64le(f + 36) != e->dev)
		return false;
	/* racy: modified in the second the cache was written, or later */
	if (mtime / 1000000000 >= c->written_ns / 1000000000)
		return false;
	memcpy(id->b, f + 44, SHA256_LEN);
	__atomic_fetch_add(&c->hits, 1, __ATOMIC_RELAXED); /* scans are parallel */
	return true;
}

static bool cacheable(const snap_entry *e)
{
	/* the record stores the path length in 16 bits */
	return e->mode != MODE_SKIP && e->mtime_ns != 0 && strlen(e->path) <= 0xffff;
}

bool statcache_unchanged(const statcache *c, const snap *s)
{
	uint64_t n = 0;

	for (size_t k = 0; k < s->n; k++)
		n += cacheable(&s->v[k]);
	/* Every hit matched all stat fields and was not racy; if every entry
	 * of the scan hit and nothing else is cached, a save is a no-op. */
	return c->hits == n && n == c->count;
}

int statcache_save(const char *path, const snap *s)
{
	buf out = BUF_INIT;
	uint64_t count = 0;
	oid sum;
	int r = -1;

	for (size_t k = 0; k < s->n; k++)
		if (cacheable(&s->v[k]))
			count++;
	if (buf_put(&out, SC_MAGIC, 4) < 0 || buf_put_u32(&out, SC_VERSION) < 0 ||
	    buf_put_u64(&out, (uint64_t)fs_now_ns()) < 0 || buf_put_u64(&out, count) < 0)
		goto done;
	for (size_t k = 0; k < s->n; k++) {
		const snap_entry *e = &s->v[k];
		size_t plen = strlen(e->path);
		if (!cacheable(e))
			continue;
		if (buf_put_u16(&out, (unsigned)plen) < 0 || buf_put(&out, e->path, plen) < 0 ||
		    buf_put_u32(&out, e->mode) < 0 || buf_put_u64(&out, e->size) < 0 ||
		    buf_put_u64(&out, (uint64_t)e->mtime_ns) < 0 ||
		    buf_put_u64(&out, (uint64_t)e->ctime_ns) < 0 ||
		    buf_put_u64(&out, e->ino) < 0 || buf_put_u64(&out, e->dev) < 0 ||
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
