/*
 * fuzz_statcache.c - libFuzzer target for the stat cache
 * (src/lib/scan/statcache.c: statcache_load, statcache_lookup).
 *
 *   make fuzz && build/fuzz/fuzz_statcache fuzz/corpus/statcache
 * `make check` replays fuzz/corpus/statcache through fuzz/replay.c.
 *
 * The input is the base file, optionally followed by FUZZ_SEP and the
 * delta file (fuzz/common.h).  They are written as <scratch>/statcache and
 * <scratch>/statcache.delta and loaded twice: as they are, and with the
 * last 32 bytes of each replaced by the SHA-256 of the bytes before them,
 * so that mutations reach the record parser instead of the checksum.
 *
 * A scan trusts the id the cache returns instead of hashing the file, so
 * beyond "no crash, no leak, no undefined behaviour" the target compares
 * every lookup with a reference model of docs/format.md ("Stat cache"):
 * a file is valid when its magic, version, checksum and count are right
 * and its records tile the space before the checksum exactly; the delta,
 * when valid and holding the path, answers alone; the first record of a
 * path answers; it vouches for an id only when mode, size, mtime, ctime,
 * inode and device all equal the probe and the mtime second is before the
 * second the file was written.  Every record is looked up with its own
 * stat data, and with one field changed.  statcache_unchanged() must say
 * false after any miss.
 */
#include "util/common.h"
#include "scan/statcache.h"
#include "util/buf.h"
#include "util/error.h"

#include "common.h"

#define HDR   24
#define FIXED (4 + 8 + 8 + 8 + 8 + 8 + SHA256_LEN)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
	const unsigned char *path; /* not NUL-terminated */
	size_t plen;
	snap_entry st; /* mode, size, mtime, ctime, ino, dev, id */
} ref_rec;

typedef struct {
	bool valid;
	int64_t written_ns;
	ref_rec *v;
	size_t n;
} ref_table;

static void ref_release(ref_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* The reference reading of one file. */
static void ref_parse(ref_table *t, const uint8_t *p, size_t len)
{
	uint64_t count;
	size_t off = HDR;
	oid sum;

	memset(t, 0, sizeof(*t));
	if (len < HDR + SHA256_LEN || memcmp(p, "DSTC", 4) ||
	    get_u32le(p + 4) != 1)
		return;
	sha256_buf(&sum, p, len - SHA256_LEN);
	if (memcmp(sum.b, p + len - SHA256_LEN, SHA256_LEN))
		return;
	count = get_u64le(p + 16);
	if (count > len / (2 + FIXED) || len > UINT32_MAX - 1)
		return;
	t->v = calloc(count ? count : 1, sizeof(*t->v));
	fuzz_check(t->v != NULL);
	for (uint64_t k = 0; k < count; k++) {
		ref_rec *r = &t->v[t->n];
		const unsigned char *f;
		if (len - SHA256_LEN - off < 2)
			return;
		r->plen = get_u16le(p + off);
		if (len - SHA256_LEN - off - 2 < r->plen + FIXED)
			return;
		r->path = p + off + 2;
		f = r->path + r->plen;
		r->st.mode = get_u32le(f);
		r->st.size = get_u64le(f + 4);
		r->st.mtime_ns = (int64_t)get_u64le(f + 12);
		r->st.ctime_ns = (int64_t)get_u64le(f + 20);
		r->st.ino = get_u64le(f + 28);
		r->st.dev = get_u64le(f + 36);
		memcpy(r->st.id.b, f + 44, SHA256_LEN);
		off += 2 + r->plen + FIXED;
		t->n++;
	}
	if (off != len - SHA256_LEN)
		return;
	t->written_ns = (int64_t)get_u64le(p + 8);
	t->valid = true;
}

static const ref_rec *ref_find(const ref_table *t, const char *path,
			       size_t plen)
{
	if (!t->valid)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].plen == plen && !memcmp(t->v[i].path, path, plen))
			return &t->v[i];
	return NULL;
}

static int ref_lookup(const ref_table *base, const ref_table *delta,
		      const char *path, const snap_entry *e, oid *id)
{
	size_t plen = strlen(path);
	const ref_table *t = delta;
	const ref_rec *r = ref_find(delta, path, plen);
	int src = STATCACHE_DELTA;

	if (!r) {
		t = base;
		r = ref_find(base, path, plen);
		src = STATCACHE_BASE;
	}
	if (!r || r->st.mode != e->mode || r->st.size != e->size ||
	    r->st.mtime_ns != e->mtime_ns || r->st.ctime_ns != e->ctime_ns ||
	    r->st.ino != e->ino || r->st.dev != e->dev ||
	    !(r->st.mtime_ns / 1000000000 < t->written_ns / 1000000000))
		return 0;
	*id = r->st.id;
	return src;
}

static void probe(statcache *c, const ref_table *base, const ref_table *delta,
		  const char *path, const snap_entry *e, bool *missed)
{
	oid got, want;
	int r = statcache_lookup(c, path, e, &got);
	int w = ref_lookup(base, delta, path, e, &want);

	fuzz_check(r == w);
	if (r)
		fuzz_check(!oid_cmp(&got, &want));
	else
		*missed = true;
}

static void probe_table(statcache *c, const ref_table *t, const ref_table *base,
			const ref_table *delta, bool *missed)
{
	buf path = BUF_INIT;

	for (size_t i = 0; i < t->n && i < 256; i++) {
		const ref_rec *r = &t->v[i];
		snap_entry e = r->st;
		if (memchr(r->path, '\0', r->plen))
			continue; /* a scan never asks for such a path */
		buf_clear(&path);
		fuzz_check(buf_put(&path, r->path, r->plen) == 0);
		probe(c, base, delta, path.ptr, &e, missed);
		e.mtime_ns ^= 1;
		probe(c, base, delta, path.ptr, &e, missed);
		e = r->st;
		e.ino++;
		probe(c, base, delta, path.ptr, &e, missed);
	}
	buf_release(&path);
}

static void load(const fuzz_part *base, const fuzz_part *delta)
{
	static char path[PATH_MAX], dpath[PATH_MAX];
	statcache *c = NULL;
	ref_table rb, rd;
	snap_entry e;
	snap s = SNAP_INIT;
	bool missed = false;

	if (!path[0]) {
		fuzz_path(path, "statcache");
		fuzz_path(dpath, "statcache.delta");
	}
	fuzz_write(path, base->ptr, base->len);
	if (delta)
		fuzz_write(dpath, delta->ptr, delta->len);
	else
		unlink(dpath);
	fuzz_check(statcache_load(&c, path) == 0 && c != NULL);
	ref_parse(&rb, base->ptr, base->len);
	if (delta)
		ref_parse(&rd, delta->ptr, delta->len);
	else
		memset(&rd, 0, sizeof(rd));

	probe_table(c, &rb, &rb, &rd, &missed);
	probe_table(c, &rd, &rb, &rd, &missed);
	memset(&e, 0, sizeof(e));
	e.mode = MODE_FILE;
	probe(c, &rb, &rd, "a", &e, &missed);
	probe(c, &rb, &rd, "", &e, &missed);

	/* one cacheable entry in the scan: a miss means "changed" */
	fuzz_check(snap_add(&s, "a", 1) != NULL);
	s.v[0].mode = MODE_FILE;
	s.v[0].mtime_ns = 1;
	if (missed)
		fuzz_check(!statcache_unchanged(c, &s));
	snap_release(&s);
	statcache_free(c);
	ref_release(&rb);
	ref_release(&rd);
	decree_error_clear();
}

static void fix_sum(buf *b, const fuzz_part *p)
{
	oid sum;

	buf_clear(b);
	fuzz_check(buf_put(b, p->ptr, p->len) == 0);
	if (p->len < SHA256_LEN)
		return;
	sha256_buf(&sum, b->ptr, p->len - SHA256_LEN);
	memcpy(b->ptr + p->len - SHA256_LEN, sum.b, SHA256_LEN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_part parts[2], fixed[2];
	buf fb = BUF_INIT, fd = BUF_INIT;
	size_t n = fuzz_split(parts, 2, data, size);

	load(&parts[0], n > 1 ? &parts[1] : NULL);
	fix_sum(&fb, &parts[0]);
	fixed[0].ptr = (const uint8_t *)fb.ptr;
	fixed[0].len = fb.len;
	if (n > 1) {
		fix_sum(&fd, &parts[1]);
		fixed[1].ptr = (const uint8_t *)fd.ptr;
		fixed[1].len = fd.len;
	}
	load(&fixed[0], n > 1 ? &fixed[1] : NULL);
	buf_release(&fb);
	buf_release(&fd);
	return 0;
}
