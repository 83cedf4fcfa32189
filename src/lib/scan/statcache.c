/*
 * statcache.c - load, query and save the stat cache (see statcache.h).
 *
 * File layout (little endian), docs/format.md:
 *
 *   header   "DSTC" u32 version(2) i64 scan_ns u64 ndirs u64 check64 of
 *            the 24 bytes before
 *   ndirs x directory record:
 *     u32 len (the whole record, this field and the check included)
 *     u32 n (names)  u16 path_len  u8 flags (1: stat known, 2: tree)  u8 0
 *     i64 mtime_ns  i64 ctime_ns  u64 ino  u64 dev   (the directory's)
 *     path
 *     n x 84-byte name entry, in strcmp order of the names:
 *       u32 name_off  u16 name_len  u8 d_type
 *       u8 kind (0: nothing, 1: file facts, 2: a subdirectory in the tree)
 *       u32 mode  u64 size  i64 mtime_ns  i64 ctime_ns  u64 ino  u64 dev
 *       oid[32]
 *     the names, each NUL-terminated (name_off counts from the first)
 *     with flag 2: oid[32], the id of the directory's tree object
 *     check: u64 statcache_check64() of the record before it
 *
 * Fixed-size name entries let a lookup without a walk binary-search a
 * record.  Loading reads the file and indexes the directories by path
 * (one hash per directory, not per file); a record's check and bounds are
 * verified the first time a walk opens it, by that walk's thread.
 *
 * The cache is a base file plus a small delta file ("<path>.delta") with
 * the records of the directories that changed since the base was written,
 * so that a checkpoint after a few changes in a large tree writes
 * kilobytes, not the whole cache.  A record in the delta replaces the
 * base's.  Every file fact is self-contained (this path with these stat
 * data had this content) and every listing carries the directory stat
 * data it was read under, so neither can vouch for anything that changed.
 */
#include "util/common.h"
#include "scan/statcache.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#include <dirent.h>
#include <sys/mman.h>

#define SC_MAGIC     "DSTC"
#define SC_VERSION   2
#define SC_HDR	     32
#define SC_REC_HDR   44
#define SC_ENT	     84
#define SC_CHECK     8
#define SC_STAT_OK   1
#define SC_TREE	     2 /* record flag: the tree id ends the record */
#define SC_FACTS     1 /* name entry kinds */
#define SC_SUBDIR    2
#define SEC_NS	     1000000000LL
#define DELTA_SUFFIX ".delta"

enum { REC_UNCHECKED = 0, REC_GOOD = 1, REC_BAD = 2 };

/* One cache file: its bytes and an index of its directory records. */
typedef struct {
	const unsigned char *p; /* the file's bytes (mapped, or borrowed) */
	size_t len;
	void *map; /* the mapping to undo, or NULL */
	int64_t scan_ns;
	uint32_t *recs; /* record offsets */
	uint8_t *state; /* REC_*, per record (relaxed atomics) */
	size_t nrecs;
	uint64_t *slots; /* (path hash tag << 32) | (record index + 1) */
	size_t nslots;
	uint64_t names; /* names in all records (save policy) */
	bool damaged;	/* a record (or the whole file) was found damaged:
			   the next save writes a new base */
} sc_table;

struct statcache {
	sc_table base, delta;
	int64_t scan_ns; /* when loaded: the start of the scan */
	statcache_note *notes;
	size_t nnotes, cap;
	tree_ids hints; /* statcache_set_hints */
	oid *built;	/* statcache_trees_built: per hint, or NULL */
};

#define SLOT_TAG(h) ((h) >> 32)

/*
 * The check of a record: a 64-bit multiply-xorshift hash of its bytes,
 * eight at a time.  It catches damage (a flipped bit, a torn or zeroed
 * block); the cache guards against accidents, not against someone who can
 * write the store, and a cryptographic hash of every record would cost a
 * large part of a no-change scan.
 */
uint64_t statcache_check64(const void *data, size_t n)
{
	const unsigned char *p = data;
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t h = 0x2545f4914f6cdd1dull ^ (n * k);
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		h = (h ^ get_u64le(p + i)) * k;
		h ^= h >> 31;
	}
	for (; i < n; i++) {
		h = (h ^ p[i]) * k;
		h ^= h >> 31;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static uint64_t hash_path(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* --- loading -------------------------------------------------------------- */

static int table_index(sc_table *t)
{
	const unsigned char *p = t->p;
	size_t len = t->len, off = SC_HDR;
	uint64_t ndirs;

	if (len < SC_HDR || memcmp(p, SC_MAGIC, 4) ||
	    get_u32le(p + 4) != SC_VERSION || len > UINT32_MAX ||
	    statcache_check64(p, SC_HDR - SC_CHECK) !=
		    get_u64le(p + SC_HDR - SC_CHECK))
		return -1;
	t->scan_ns = (int64_t)get_u64le(p + 8);
	ndirs = get_u64le(p + 16);
	if (ndirs > (len - SC_HDR) / (SC_REC_HDR + SC_CHECK))
		return -1;
	t->nslots = 16;
	while (t->nslots < ndirs * 2)
		t->nslots *= 2;
	if (!(t->slots = decree_calloc(t->nslots, sizeof(uint64_t))) ||
	    (ndirs && !(t->recs = decree_calloc(ndirs, sizeof(uint32_t)))) ||
	    (ndirs && !(t->state = decree_calloc(ndirs, 1))))
		return -2;
	for (uint64_t k = 0; k < ndirs; k++) {
		size_t rlen, plen, i;
		uint64_t h;
		if (len - off < SC_REC_HDR + SC_CHECK)
			return -1;
		rlen = get_u32le(p + off);
		plen = get_u16le(p + off + 8);
		if (rlen > len - off || rlen < SC_REC_HDR + plen + SC_CHECK)
			return -1;
		h = hash_path((const char *)p + off + SC_REC_HDR, plen);
		i = (size_t)h & (t->nslots - 1);
		while (t->slots[i])
			i = (i + 1) & (t->nslots - 1);
		t->slots[i] = SLOT_TAG(h) << 32 | (k + 1);
		t->recs[k] = (uint32_t)off;
		t->names += get_u32le(p + off + 4);
		off += rlen;
	}
	t->nrecs = ndirs;
	return off == len ? 0 : -1;
}

static void table_release(sc_table *t)
{
	if (t->map)
		munmap(t->map, t->len);
	decree_free(t->slots);
	decree_free(t->recs);
	decree_free(t->state);
	memset(t, 0, sizeof(*t));
}

/*
 * Load one file; missing or damaged = empty.  -1 only on out-of-memory.
 * The file is mapped, not read: a no-change scan of a large tree touches
 * a fraction of it, and copying it would cost more than the lookups.
 * decree never writes a cache in place (a new one is renamed over it, and
 * the mapping keeps the old inode).
 */
static int table_load(sc_table *t, const char *path)
{
	struct stat st;
	int fd, r;

	memset(t, 0, sizeof(*t));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < SC_HDR ||
	    (uint64_t)st.st_size > UINT32_MAX) {
		close(fd);
		return 0;
	}
	t->map = mmap(NULL, (size_t)st.st_size, PROT_READ,
		      MAP_PRIVATE | MAP_POPULATE, fd, 0);
	close(fd);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		return 0;
	}
	t->p = t->map;
	t->len = (size_t)st.st_size;
	if ((r = table_index(t)) == -2)
		return -1;
	if (r < 0) {
		error_clear();
		table_release(t);
		t->damaged = true;
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
	c->scan_ns = fs_now_ns();
	snprintf(dpath, sizeof(dpath), "%s%s", path, DELTA_SUFFIX);
	if (table_load(&c->base, path) < 0 ||
	    table_load(&c->delta, dpath) < 0) {
		statcache_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

static void note_release(statcache_note *n)
{
	decree_free(n->path);
	decree_free(n->names);
	decree_free(n->names_block);
	memset(n, 0, sizeof(*n));
}

void statcache_free(statcache *c)
{
	if (!c)
		return;
	table_release(&c->base);
	table_release(&c->delta);
	for (size_t i = 0; i < c->nnotes; i++)
		note_release(&c->notes[i]);
	decree_free(c->notes);
	tree_ids_release(&c->hints);
	decree_free(c->built);
	decree_free(c);
}

/* --- records -------------------------------------------------------------- */

static const unsigned char *rec_ent(const unsigned char *rec, uint32_t i)
{
	return rec + SC_REC_HDR + get_u16le(rec + 8) + (size_t)i * SC_ENT;
}

static const char *rec_names(const unsigned char *rec)
{
	return (const char *)rec_ent(rec, get_u32le(rec + 4));
}

/* The bytes after a record's names: its tree id (flag SC_TREE), then the
 * check. */
static size_t rec_tail(const unsigned char *rec)
{
	return SC_CHECK + (rec[10] & SC_TREE ? SHA256_LEN : 0);
}

/* Are record k's bounds, names and check sound?  Verified once. */
static bool rec_good(sc_table *t, size_t k)
{
	uint8_t *st = &t->state[k];
	uint8_t s = __atomic_load_n(st, __ATOMIC_RELAXED);
	const unsigned char *rec = t->p + t->recs[k];
	size_t rlen, plen, n, nlen;
	const char *names, *prev = NULL;

	if (s != REC_UNCHECKED)
		return s == REC_GOOD;
	s = REC_BAD;
	rlen = get_u32le(rec);
	n = get_u32le(rec + 4);
	plen = get_u16le(rec + 8);
	if (rlen - SC_REC_HDR - plen < rec_tail(rec) ||
	    n > (rlen - SC_REC_HDR - plen - rec_tail(rec)) / SC_ENT)
		goto done;
	nlen = rlen - SC_REC_HDR - plen - n * SC_ENT - rec_tail(rec);
	if (statcache_check64(rec, rlen - SC_CHECK) !=
	    get_u64le(rec + rlen - SC_CHECK))
		goto done;
	names = rec_names(rec);
	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *e = rec_ent(rec, i);
		size_t off = get_u32le(e), l = get_u16le(e + 4);
		if (!l || off >= nlen || l >= nlen - off || names[off + l] ||
		    memchr(names + off, '\0', l) || memchr(names + off, '/', l))
			goto done;
		if (prev && strcmp(prev, names + off) >= 0)
			goto done; /* not in strcmp order: no merge */
		prev = names + off;
	}
	s = REC_GOOD;
done:
	if (s == REC_BAD)
		__atomic_store_n(&t->damaged, true, __ATOMIC_RELAXED);
	__atomic_store_n(st, s, __ATOMIC_RELAXED);
	return s == REC_GOOD;
}

/* Directory `path`'s sound record in t, or NULL. */
static const unsigned char *table_find(sc_table *t, const char *path,
				       size_t len)
{
	const unsigned char *p = t->p;
	uint64_t h;
	size_t i;

	if (!t->nslots)
		return NULL;
	h = hash_path(path, len);
	i = (size_t)h & (t->nslots - 1);
	while (t->slots[i]) {
		if (t->slots[i] >> 32 == SLOT_TAG(h)) {
			size_t k = (uint32_t)t->slots[i] - 1;
			const unsigned char *rec = p + t->recs[k];
			if (get_u16le(rec + 8) == len &&
			    !memcmp(rec + SC_REC_HDR, path, len))
				return rec_good(t, k) ? rec : NULL;
		}
		i = (i + 1) & (t->nslots - 1);
	}
	return NULL;
}

/* Was this time (a file's mtime, a directory's ctime) more than a clock
 * tick (a second; 3 s for whole-second times) before the scan that
 * recorded it began?  Then a change after the scan's
 * stat, even in the same clock tick, gave the file a later one.  (A file
 * whose mtime was set back, `touch -d`, has a new ctime, which must match
 * too.) */
static bool settled(int64_t scan_ns, int64_t time_ns)
{
	/* A whole second: a file system that keeps seconds only, or two
	 * (FAT): its clock ticks that coarsely, so wait longer. */
	int64_t margin = time_ns % SEC_NS ? SEC_NS : 3 * SEC_NS;

	if (scan_ns < INT64_MIN + margin)
		return false; /* (a damaged or hostile file: no overflow) */
	return time_ns < scan_ns - margin;
}

/* Does directory record rec hold the stat data *st (NULL: unknown)? */
static bool rec_stat_is(const unsigned char *rec, const struct stat *st)
{
	return st && (rec[10] & SC_STAT_OK) &&
	       (int64_t)get_u64le(rec + 12) == st_mtime_ns(st) &&
	       (int64_t)get_u64le(rec + 20) == st_ctime_ns(st) &&
	       get_u64le(rec + 28) == (uint64_t)st->st_ino &&
	       get_u64le(rec + 36) == (uint64_t)st->st_dev;
}

void statcache_dir_open(statcache *c, statcache_dir *d, const char *path,
			size_t len, const struct stat *st)
{
	sc_table *t = &c->delta;
	const unsigned char *rec;

	memset(d, 0, sizeof(*d));
	/* the delta is newer: if it knows the directory, the base is not
	 * asked */
	if (!(rec = table_find(t, path, len))) {
		t = &c->base;
		if (!(rec = table_find(t, path, len)))
			return;
	}
	d->t = t;
	d->rec = rec;
	d->n = get_u32le(rec + 4);
	d->src = t == &c->delta ? STATCACHE_DELTA : STATCACHE_BASE;
	for (uint32_t i = 0; i < d->n; i++) {
		unsigned kind = rec_ent(rec, i)[7];
		d->facts += kind == SC_FACTS;
		d->subs += kind == SC_SUBDIR;
	}
	if ((d->tree_known = rec[10] & SC_TREE))
		memcpy(d->tree.b, rec + get_u32le(rec) - SC_CHECK - SHA256_LEN,
		       SHA256_LEN);
	d->listing = rec_stat_is(rec, st) &&
		     settled(t->scan_ns, st_ctime_ns(st));
}

bool statcache_dir_clean(const statcache *c, const statcache_dir *d,
			 const struct stat *st, const statcache_name *names,
			 size_t n)
{
	const unsigned char *rec = d->rec;

	if (!rec || d->misses || d->hits != d->facts)
		return false;
	if (d->listing)
		return true;
	/* not trusted: the same directory, unchanged, but too new? */
	if (n != d->n || !rec_stat_is(rec, st))
		return false;
	if (settled(c->scan_ns, st_ctime_ns(st)))
		return false; /* written again, it will be trusted */
	for (uint32_t i = 0; i < d->n; i++) {
		statcache_name k = statcache_dir_name(d, i);
		if (k.type != names[i].type || k.len != names[i].len ||
		    memcmp(k.name, names[i].name, k.len))
			return false;
	}
	return true;
}

statcache_name statcache_dir_name(const statcache_dir *d, uint32_t i)
{
	const unsigned char *e = rec_ent(d->rec, i);
	statcache_name n;

	n.name = rec_names(d->rec) + get_u32le(e);
	n.len = (uint16_t)get_u16le(e + 4);
	n.type = e[6];
	n.sub = false;
	n.idx = STATCACHE_NO_ENTRY;
	return n;
}

/* Does name entry f (facts + id) vouch for probe? */
static bool ent_matches(const sc_table *t, const unsigned char *f,
			const snap_entry *e)
{
	return f[7] == SC_FACTS && get_u32le(f + 8) == e->mode &&
	       get_u64le(f + 12) == e->size &&
	       (int64_t)get_u64le(f + 20) == e->mtime_ns &&
	       (int64_t)get_u64le(f + 28) == e->ctime_ns &&
	       get_u64le(f + 36) == e->ino && get_u64le(f + 44) == e->dev &&
	       settled(t->scan_ns, e->mtime_ns);
}

/* Move d's cursor to the first name >= name: its entry if it is name. */
static const unsigned char *seek(statcache_dir *d, const char *name)
{
	const char *names = rec_names(d->rec);
	int c = 1;

	while (d->pos < d->n) {
		const char *at = names + get_u32le(rec_ent(d->rec, d->pos));
		/* a listing taken from the record holds these very names */
		if ((c = at == name ? 0 : strcmp(at, name)) >= 0)
			break;
		d->pos++;
	}
	return c == 0 ? rec_ent(d->rec, d->pos) : NULL;
}

bool statcache_dir_sub(statcache_dir *d, const char *name)
{
	const unsigned char *f;

	if (!d->rec || !(f = seek(d, name)) || f[7] != SC_SUBDIR)
		return false;
	d->sub_hits++;
	return true;
}

int statcache_dir_lookup(statcache_dir *d, const char *name,
			 const snap_entry *probe, oid *id)
{
	const unsigned char *f;

	if (!d->rec) {
		d->misses++;
		return 0;
	}
	if ((f = seek(d, name))) {
		if (ent_matches(d->t, f, probe)) {
			memcpy(id->b, f + 52, SHA256_LEN);
			d->hits++;
			return d->src;
		}
	}
	d->misses++;
	return 0;
}

int statcache_lookup(statcache *c, const char *path, const snap_entry *probe,
		     oid *id)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	statcache_dir d;
	uint32_t lo = 0, hi;

	statcache_dir_open(c, &d, path, slash ? (size_t)(slash - path) : 0,
			   NULL);
	if (!d.rec)
		return 0;
	hi = d.n;
	while (lo < hi) { /* the first name >= name */
		uint32_t mid = lo + (hi - lo) / 2;
		if (strcmp(statcache_dir_name(&d, mid).name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	d.pos = lo;
	return statcache_dir_lookup(&d, name, probe, id);
}

const char *statcache_verify(const void *data, size_t len)
{
	const unsigned char *p = data;
	const char *why = NULL;
	sc_table t;
	int r;

	/* (the first 24 bytes are laid out alike in both versions) */
	if (len < 24 || memcmp(p, SC_MAGIC, 4))
		return "bad header (magic)";
	if (get_u32le(p + 4) == 1) {
		/* an older decree's: checked as it was written, ignored */
		oid sum;
		if (len < 24 + SHA256_LEN)
			return "truncated";
		sha256_buf(&sum, p, len - SHA256_LEN);
		return memcmp(sum.b, p + len - SHA256_LEN, SHA256_LEN)
			       ? "checksum mismatch"
			       : NULL;
	}
	if (get_u32le(p + 4) != SC_VERSION)
		return "bad header (unknown version)";
	if (len < SC_HDR)
		return "bad header (magic)";
	if (statcache_check64(p, SC_HDR - SC_CHECK) !=
	    get_u64le(p + SC_HDR - SC_CHECK))
		return "bad header (check)";
	memset(&t, 0, sizeof(t));
	t.p = p;
	t.len = len;
	if ((r = table_index(&t)) == -2) {
		why = NULL;
	} else if (r < 0) {
		why = "damaged directory index";
	} else {
		for (size_t k = 0; k < t.nrecs && !why; k++)
			if (!rec_good(&t, k))
				why = "damaged directory record";
	}
	table_release(&t);
	error_clear();
	return why;
}

void statcache_set_hints(statcache *c, tree_ids *hints)
{
	tree_ids_release(&c->hints);
	decree_free(c->built);
	c->built = NULL;
	c->hints = *hints;
	memset(hints, 0, sizeof(*hints));
}

const tree_ids *statcache_tree_hints(const statcache *c)
{
	return &c->hints;
}

void statcache_trees_built(statcache *c, const tree_ids *ids)
{
	const tree_ids *h = &c->hints;

	decree_free(c->built);
	c->built = NULL;
	/* the same directories, or no ids at all */
	if (!ids || ids->n != h->n)
		return;
	for (size_t k = 0; k < h->n; k++)
		if (ids->v[k].first != h->v[k].first ||
		    ids->v[k].end != h->v[k].end ||
		    ids->v[k].plen != h->v[k].plen)
			return;
	if (!h->n || !(c->built = decree_calloc(h->n, sizeof(oid)))) {
		error_clear(); /* only a cache: no tree ids this time */
		return;
	}
	for (size_t k = 0; k < h->n; k++)
		c->built[k] = ids->v[k].id;
}

int statcache_note_dir(statcache *c, statcache_note *n)
{
	if (GROW(c->notes, c->cap, c->nnotes + 1) < 0) {
		note_release(n);
		return -1;
	}
	c->notes[c->nnotes++] = *n;
	memset(n, 0, sizeof(*n));
	return 0;
}

/* --- saving --------------------------------------------------------------- */

static bool cacheable(const snap_entry *e)
{
	return (mode_is_file(e->mode) || e->mode == MODE_LINK) &&
	       e->mtime_ns != 0 && !e->unhashed;
}

/* The snap entry of name i of note n into *e (NULL: it has none); false
 * when its index is beyond s (the snap is not the one stitched). */
static bool note_entry(const statcache_note *n, size_t i, const snap *s,
		       const snap_entry **e)
{
	uint32_t k = n->names[i].idx;

	*e = NULL;
	if (k == STATCACHE_NO_ENTRY)
		return true;
	if (k >= s->n)
		return false;
	*e = &s->v[k];
	return true;
}

/* Do the notes describe s (the snap their scan stitched, entries maybe
 * updated in place)?  Each indexed entry must be that name of that
 * directory. */
static bool notes_fit(const statcache *c, const snap *s)
{
	for (size_t k = 0; k < c->nnotes; k++) {
		const statcache_note *n = &c->notes[k];
		size_t plen = strlen(n->path);
		for (size_t i = 0; i < n->n; i++) {
			const snap_entry *e;
			const char *p;
			if (!note_entry(n, i, s, &e))
				return false;
			if (!e)
				continue;
			p = e->path;
			if (plen &&
			    (strncmp(p, n->path, plen) || p[plen] != '/'))
				return false;
			if (strcmp(p + (plen ? plen + 1 : 0), n->names[i].name))
				return false;
		}
	}
	return true;
}

/* The tree id to record for note n, or NULL: none (no ids built, or no
 * tree for it). */
static const oid *note_tree(const statcache *c, const statcache_note *n)
{
	if (!c->built || n->slot >= c->hints.n)
		return NULL;
	return &c->built[n->slot];
}

/* Is note n clean with respect to s: clean after its scan, and its facts
 * not changed since (an entry re-read after the scan loses `cached`)?
 * When the save records tree ids, its record must hold the same ones. */
static bool note_clean(const statcache *c, const statcache_note *n,
		       const snap *s)
{
	const oid *t = note_tree(c, n);

	if (!n->clean)
		return false;
	if (c->built && (!n->tree_same || (t && oid_cmp(t, &n->tree_old))))
		return false;
	for (size_t i = 0; i < n->n; i++) {
		const snap_entry *e;
		if (!note_entry(n, i, s, &e))
			return false;
		if (e && cacheable(e) && e->cached != n->src)
			return false;
	}
	return true;
}

static int put_i64(buf *b, int64_t v)
{
	return buf_put_u64(b, (uint64_t)v);
}

/* Does name i of note n fit its 16-bit length field?  (len is 16 bits:
 * a longer name does not match it.) */
static bool name_encodable(const statcache_note *n, size_t i)
{
	return strlen(n->names[i].name) == n->names[i].len;
}

/* Can note n be written (a path and a size that fit the record's
 * fields)?  A directory that cannot is left out: it is read and its files
 * hashed as if new. */
static bool note_encodable(const statcache_note *n)
{
	uint64_t size = SC_REC_HDR + SC_CHECK + strlen(n->path);

	if (strlen(n->path) > 0xffff || n->n > UINT32_MAX / SC_ENT)
		return false;
	for (size_t i = 0; i < n->n; i++)
		size += SC_ENT + n->names[i].len + 1u;
	return size <= UINT32_MAX / 2;
}

/* Append the record of note n (facts from s; its tree id when ids were
 * built) to out.  A name too long for its length field is left out, and
 * then the listing is incomplete: recorded as never to be trusted, and
 * with no tree id. */
static int put_record(buf *out, const statcache_note *n, const snap *s,
		      const oid *tree)
{
	size_t start = out->len, plen = strlen(n->path), noff = 0, nw = 0;
	bool complete = true;

	for (size_t i = 0; i < n->n; i++) {
		if (name_encodable(n, i))
			nw++;
		else
			complete = false;
	}
	if (!complete)
		tree = NULL;
	if (buf_put_u32(out, 0) < 0 || buf_put_u32(out, (uint32_t)nw) < 0 ||
	    buf_put_u16(out, (unsigned)plen) < 0 ||
	    buf_putc(out, (n->stat_ok && complete ? SC_STAT_OK : 0) |
				  (tree ? SC_TREE : 0)) < 0 ||
	    buf_putc(out, 0) < 0 || put_i64(out, n->mtime_ns) < 0 ||
	    put_i64(out, n->ctime_ns) < 0 || buf_put_u64(out, n->ino) < 0 ||
	    buf_put_u64(out, n->dev) < 0 || buf_put(out, n->path, plen) < 0)
		return -1;
	for (size_t i = 0; i < n->n; i++) {
		const snap_entry *e;
		size_t l = n->names[i].len;
		unsigned char ent[SC_ENT];
		if (!name_encodable(n, i))
			continue;
		/* (the notes fit s; an index beyond it would give no facts) */
		(void)note_entry(n, i, s, &e);
		memset(ent, 0, sizeof(ent));
		put_u32le(ent, (uint32_t)noff);
		ent[4] = (unsigned char)(l & 0xff);
		ent[5] = (unsigned char)(l >> 8);
		ent[6] = n->names[i].type;
		if (tree && n->names[i].sub)
			ent[7] = SC_SUBDIR;
		if (e && cacheable(e)) {
			ent[7] = SC_FACTS;
			put_u32le(ent + 8, e->mode);
			put_u64le(ent + 12, e->size);
			put_u64le(ent + 20, (uint64_t)e->mtime_ns);
			put_u64le(ent + 28, (uint64_t)e->ctime_ns);
			put_u64le(ent + 36, e->ino);
			put_u64le(ent + 44, e->dev);
			memcpy(ent + 52, e->id.b, SHA256_LEN);
		}
		if (buf_put(out, ent, sizeof(ent)) < 0)
			return -1;
		noff += l + 1;
	}
	for (size_t i = 0; i < n->n; i++)
		if (name_encodable(n, i) &&
		    buf_put(out, n->names[i].name, n->names[i].len + 1u) < 0)
			return -1;
	if (tree && buf_put(out, tree->b, SHA256_LEN) < 0)
		return -1;
	put_u32le((unsigned char *)out->ptr + start,
		  (uint32_t)(out->len - start + SC_CHECK));
	return buf_put_u64(
		out, statcache_check64((const unsigned char *)out->ptr + start,
				       out->len - start));
}

/* Write the notes (all, or with base_only those not clean against the
 * base) as one cache file at path. */
static int write_table(const char *path, int64_t scan_ns, const statcache *c,
		       const statcache_note *notes, size_t nn, const bool *skip,
		       const snap *s)
{
	buf out = BUF_INIT;
	uint64_t ndirs = 0;
	int r = -1;

	if (buf_put(&out, SC_MAGIC, 4) < 0 ||
	    buf_put_u32(&out, SC_VERSION) < 0 || put_i64(&out, scan_ns) < 0 ||
	    buf_put_u64(&out, 0) < 0 || buf_put_u64(&out, 0) < 0)
		goto done;
	for (size_t k = 0; k < nn; k++) {
		if ((skip && skip[k]) || !note_encodable(&notes[k]))
			continue;
		if (put_record(&out, &notes[k], s,
			       c ? note_tree(c, &notes[k]) : NULL) < 0)
			goto done;
		ndirs++;
	}
	put_u64le((unsigned char *)out.ptr + 16, ndirs);
	put_u64le((unsigned char *)out.ptr + 24,
		  statcache_check64((const unsigned char *)out.ptr,
				    SC_HDR - SC_CHECK));
	if (out.len > UINT32_MAX) {
		r = decree_error_set(DECREE_EINVALID, "stat cache too large");
		goto done;
	}
	r = fs_write_cache(path, out.ptr, out.len);
done:
	buf_release(&out);
	return r;
}

static int remove_delta(const char *path)
{
	char dpath[PATH_MAX];

	snprintf(dpath, sizeof(dpath), "%s%s", path, DELTA_SUFFIX);
	if (unlink(dpath) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove '%s'", dpath);
	return 0;
}

/* A (directory, name) of a snap entry, for grouping a snap by directory. */
typedef struct {
	const char *path;
	size_t dlen; /* the directory's length in path */
	uint32_t idx;
} sc_pair;

static int pair_cmp(const void *a, const void *b)
{
	const sc_pair *x = a, *y = b;
	size_t n = x->dlen < y->dlen ? x->dlen : y->dlen;
	int c = memcmp(x->path, y->path, n);

	if (c)
		return c;
	if (x->dlen != y->dlen)
		return x->dlen < y->dlen ? -1 : 1;
	return strcmp(x->path + x->dlen + !!x->dlen,
		      y->path + y->dlen + !!y->dlen);
}

int statcache_save(const char *path, const snap *s)
{
	sc_pair *v = NULL;
	statcache_note *notes = NULL;
	size_t nn = 0, cap = 0;
	int r = -1;

	if (s->n >= STATCACHE_NO_ENTRY)
		return decree_error_set(DECREE_EINVALID, "too many files");
	if (s->n && !(v = decree_calloc(s->n, sizeof(*v))))
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		const char *slash = strrchr(s->v[i].path, '/');
		v[i].path = s->v[i].path;
		v[i].dlen = slash ? (size_t)(slash - s->v[i].path) : 0;
		v[i].idx = (uint32_t)i;
	}
	if (s->n > 1)
		qsort(v, s->n, sizeof(*v), pair_cmp);
	for (size_t i = 0; i < s->n;) {
		size_t j = i;
		statcache_note *n;
		while (j < s->n && v[j].dlen == v[i].dlen &&
		       !memcmp(v[j].path, v[i].path, v[i].dlen))
			j++;
		if (GROW(notes, cap, nn + 1) < 0)
			goto done;
		n = &notes[nn++];
		memset(n, 0, sizeof(*n));
		if (!(n->path = decree_strndup(v[i].path, v[i].dlen)) ||
		    !(n->names = decree_calloc(j - i, sizeof(*n->names))))
			goto done;
		n->n = j - i;
		for (size_t k = i; k < j; k++) {
			statcache_name *nm = &n->names[k - i];
			nm->name = v[k].path + v[k].dlen + !!v[k].dlen;
			/* (a name too long for 16 bits is left out:
			 * put_record) */
			nm->len = (uint16_t)strlen(nm->name);
			nm->idx = v[k].idx;
			nm->type = s->v[v[k].idx].mode == MODE_LINK ? DT_LNK
								    : DT_REG;
		}
		i = j;
	}
	r = write_table(path, fs_now_ns(), NULL, notes, nn, NULL, s);
	if (r == 0)
		r = remove_delta(path);
done:
	for (size_t k = 0; k < nn; k++) {
		decree_free(notes[k].path);
		decree_free(notes[k].names);
	}
	decree_free(notes);
	decree_free(v);
	return r;
}

/* (A wrong answer here costs only speed: a record is never written from
 * a snap that does not fit, see statcache_update.) */
bool statcache_unchanged(const statcache *c, const snap *s)
{
	if (!c->nnotes)
		return false;
	for (size_t k = 0; k < c->nnotes; k++)
		if (!note_clean(c, &c->notes[k], s))
			return false;
	return true;
}

int statcache_update(const char *path, const snap *s, statcache *c)
{
	char dpath[PATH_MAX];
	uint64_t total = 0, outside = 0;
	bool *skip = NULL;
	int r;

	if (!c || !c->nnotes)
		return statcache_save(path, s);
	if (!c->base.damaged && !c->delta.damaged && statcache_unchanged(c, s))
		return 0;
	if (!notes_fit(c, s))
		return statcache_save(path, s);
	/* A record the scan never opened (its path damaged, or a directory
	 * gone) is checked now: a damaged base is written anew, not kept
	 * behind a delta. */
	for (size_t k = 0; k < c->base.nrecs && !c->base.damaged; k++)
		(void)rec_good(&c->base, k);
	if (!(skip = decree_calloc(c->nnotes, sizeof(bool))))
		return -1;
	for (size_t k = 0; k < c->nnotes; k++) {
		const statcache_note *n = &c->notes[k];
		skip[k] = n->src == STATCACHE_BASE && note_clean(c, n, s);
		total += n->n;
		outside += skip[k] ? 0 : n->n;
	}
	/* A delta beyond 1/16 of the tree (and beyond a few hundred names:
	 * in a small tree a change touches a large part) is folded into a
	 * new base. */
	if (!c->base.nrecs || c->base.damaged || c->delta.damaged ||
	    (outside * 16 > total && outside > 256)) {
		r = write_table(path, c->scan_ns, c, c->notes, c->nnotes, NULL,
				s);
		if (r == 0)
			r = remove_delta(path);
		goto done;
	}
	snprintf(dpath, sizeof(dpath), "%s%s", path, DELTA_SUFFIX);
	r = write_table(dpath, c->scan_ns, c, c->notes, c->nnotes, skip, s);
done:
	decree_free(skip);
	return r;
}
