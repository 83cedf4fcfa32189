/*
 * odb.c - pack-based content-addressed object store (see odb.h).
 *
 * Why packs and not one file per object: a checkpoint of the Linux tree
 * creates ~80,000 objects; creating that many files costs more than
 * hashing and compressing them, and each small file wastes a block.  One
 * pack per operation keeps writes sequential and the store compact.
 *
 * Invariants:
 *  - a pack is visible iff "pack-<name>.idx" exists; the .pack is renamed
 *    into place (after fsync) before the .idx is written atomically;
 *  - the .idx ends with the SHA-256 of everything before it (checked by
 *    fsck; open only checks the size and the fanout table);
 *  - every read decompresses and re-hashes the object; a mismatch is
 *    DECREE_ECORRUPT naming the object and the pack;
 *  - packs are never modified, only deleted by gc after their live objects
 *    were copied into a new durable pack.
 */
#include "util/common.h"
#include "store/odb.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/oidset.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/mman.h>
#include <zstd.h>

#define PACK_MAGIC     "DECRPACK"
#define IDX_MAGIC      "DECRIDX\0"
#define FORMAT_VERSION 1
#define PACK_HDR       16
#define ENTRY_HDR      56
#define IDX_HDR	       24
#define IDX_FANOUT     (256 * 4)
#define IDX_ENTRY      64

enum { COMP_NONE = 0, COMP_ZSTD = 1 };

int odb_zstd_level = 1;

typedef struct {
	char *name;	    /* "pack-<hex>" */
	int fd;		    /* the .pack */
	uint64_t pack_len;  /* its size: packs never change once published */
	unsigned char *map; /* the .idx */
	size_t map_len;
	uint64_t count;
} pack;

struct odb {
	char *dir;
	pack *packs;
	size_t npacks, cap;
	/* decompression contexts, reused: creating one per object costs more
	 * than decompressing a small object; one per concurrent reader */
	pthread_mutex_t zmu;
	ZSTD_DCtx *dctx[8];
	size_t ndctx;
};

typedef struct {
	oid id;
	uint64_t offset, raw_len, stored_len;
	unsigned char type, comp;
} idx_entry;

struct odb_writer {
	odb *db;
	pthread_mutex_t mu;
	int fd;
	char *tmp_path;
	uint64_t offset;
	buf out; /* write buffer */
	idx_entry *ents;
	size_t nents, cap;
	oidset seen;
	bool committed, failed;
	char errmsg[512]; /* why it failed, for adds on other threads */
};

/* --- reading ------------------------------------------------------------ */

static void pack_release(pack *p)
{
	if (p->map)
		munmap(p->map, p->map_len);
	if (p->fd >= 0)
		close(p->fd);
	decree_free(p->name);
}

static const unsigned char *idx_entries(const pack *p)
{
	return p->map + IDX_HDR + IDX_FANOUT;
}

static int pack_load(pack *out, const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	pack p = { NULL, -1, 0, NULL, 0, 0 };
	int fd, r = 0;
	uint32_t prev = 0;

	snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT
			       ? DECREE_ENOTFOUND
			       : decree_error_os("cannot open '%s'", path);
	if (fstat(fd, &st) < 0) {
		r = decree_error_os("cannot stat '%s'", path);
		close(fd);
		return r;
	}
	p.map_len = (size_t)st.st_size;
	if (p.map_len < IDX_HDR + IDX_FANOUT + SHA256_LEN) {
		close(fd);
		return decree_error_set(DECREE_ECORRUPT,
					"index '%s' is truncated", path);
	}
	p.map = mmap(NULL, p.map_len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p.map == MAP_FAILED) {
		p.map = NULL;
		return decree_error_os("cannot map '%s'", path);
	}
	if (memcmp(p.map, IDX_MAGIC, 8) ||
	    get_u32le(p.map + 8) != FORMAT_VERSION) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"'%s' is not a decree pack index (version %u)", path,
			get_u32le(p.map + 8));
		goto fail;
	}
	p.count = get_u64le(p.map + 16);
	if (p.count > (p.map_len - IDX_HDR - IDX_FANOUT - SHA256_LEN) /
			      IDX_ENTRY ||
	    IDX_HDR + IDX_FANOUT + p.count * IDX_ENTRY + SHA256_LEN !=
		    p.map_len) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "index '%s' has a bad size", path);
		goto fail;
	}
	for (int i = 0; i < 256; i++) {
		uint32_t f = get_u32le(p.map + IDX_HDR + 4 * i);
		if (f < prev || f > p.count) {
			r = decree_error_set(
				DECREE_ECORRUPT,
				"index '%s' has a bad fanout table", path);
			goto fail;
		}
		prev = f;
	}
	if (prev != p.count) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "index '%s' has a bad fanout table", path);
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/%s.pack", dir, name);
	if ((p.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		r = errno == ENOENT
			    ? decree_error_set(DECREE_ECORRUPT,
					       "pack '%s' is missing", path)
			    : decree_error_os("cannot open '%s'", path);
		goto fail;
	}
	if (fstat(p.fd, &st) < 0) {
		r = decree_error_os("cannot stat '%s'", path);
		goto fail;
	}
	p.pack_len = (uint64_t)st.st_size;
	if (!(p.name = decree_strdup(name))) {
		r = -1;
		goto fail;
	}
	*out = p;
	return 0;
fail:
	pack_release(&p);
	return r;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int odb_refresh(odb *db)
{
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	for (size_t i = 0; i < db->npacks; i++)
		pack_release(&db->packs[i]);
	db->npacks = 0;
	if (!(d = opendir(db->dir)))
		return decree_error_os("cannot open '%s'", db->dir);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 10 || strncmp(de->d_name, "pack-", 5) ||
		    strcmp(de->d_name + len - 4, ".idx"))
			continue;
		if (GROW(names, cap, n + 1) < 0 ||
		    !(names[n] = decree_strndup(de->d_name, len - 4))) {
			r = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (r == 0 && n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; r == 0 && i < n; i++) {
		int lr;
		if ((r = GROW(db->packs, db->cap, db->npacks + 1)) < 0)
			break;
		lr = pack_load(&db->packs[db->npacks], db->dir, names[i]);
		if (lr == DECREE_ENOTFOUND) /* removed by a concurrent gc */
			continue;
		if (lr < 0)
			r = lr;
		else
			db->npacks++;
	}
	for (size_t i = 0; i < n; i++)
		decree_free(names[i]);
	decree_free(names);
	return r;
}

int odb_open(odb **out, const char *packdir)
{
	odb *db;
	int r;

	*out = NULL;
	if (fs_mkdirs(packdir, 0755) < 0)
		return -1;
	if (!(db = decree_calloc(1, sizeof(*db))))
		return -1;
	pthread_mutex_init(&db->zmu, NULL);
	if (!(db->dir = decree_strdup(packdir))) {
		odb_free(db);
		return -1;
	}
	if ((r = odb_refresh(db)) < 0) {
		odb_free(db);
		return r;
	}
	*out = db;
	return 0;
}

void odb_free(odb *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < db->npacks; i++)
		pack_release(&db->packs[i]);
	for (size_t i = 0; i < db->ndctx; i++)
		ZSTD_freeDCtx(db->dctx[i]);
	pthread_mutex_destroy(&db->zmu);
	decree_free(db->packs);
	decree_free(db->dir);
	decree_free(db);
}

size_t odb_pack_count(odb *db)
{
	return db->npacks;
}

static const unsigned char *pack_find(const pack *p, const oid *id)
{
	unsigned first = id->b[0];
	size_t lo = first ? get_u32le(p->map + IDX_HDR + 4 * (first - 1)) : 0;
	size_t hi = get_u32le(p->map + IDX_HDR + 4 * first);
	const unsigned char *ents = idx_entries(p);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(ents + mid * IDX_ENTRY, id->b, SHA256_LEN);
		if (c == 0)
			return ents + mid * IDX_ENTRY;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const unsigned char *odb_find(odb *db, const oid *id, pack **pack_out)
{
	/* Newest packs last; recent objects are looked up most. */
	for (size_t i = db->npacks; i-- > 0;) {
		const unsigned char *e = pack_find(&db->packs[i], id);
		if (e) {
			if (pack_out)
				*pack_out = &db->packs[i];
			return e;
		}
	}
	return NULL;
}

bool odb_has(odb *db, const oid *id)
{
	return odb_find(db, id, NULL) != NULL;
}

static void entry_decode(idx_entry *e, const unsigned char *p)
{
	memcpy(e->id.b, p, SHA256_LEN);
	e->offset = get_u64le(p + 32);
	e->raw_len = get_u64le(p + 40);
	e->stored_len = get_u64le(p + 48);
	e->type = p[56];
	e->comp = p[57];
}

int odb_size(uint64_t *size_out, odb *db, const oid *id)
{
	const unsigned char *e = odb_find(db, id, NULL);
	char hex[SHA256_HEXLEN + 1];

	if (!e) {
		oid_to_hex(hex, id);
		return decree_error_set(DECREE_ENOTFOUND, "object %s not found",
					hex);
	}
	*size_out = get_u64le(e + 40);
	return 0;
}

/* Read the stored (possibly compressed) bytes of an entry. */
static int read_stored(buf *out, const pack *p, const idx_entry *e)
{
	const unsigned char *hdr;
	char hex[SHA256_HEXLEN + 1];
	size_t want;
	ssize_t n;

	/* The index is not trusted with the allocation: an entry must lie
	 * within the pack before its length is used. */
	if (e->offset > p->pack_len || p->pack_len - e->offset < ENTRY_HDR ||
	    e->stored_len > p->pack_len - e->offset - ENTRY_HDR) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: entry beyond the end of '%s'", hex,
			p->name);
	}
	/* header and bytes in one read (a diff reads thousands of objects) */
	buf_clear(out);
	if (e->stored_len > SIZE_MAX / 2 - ENTRY_HDR ||
	    buf_grow(out, ENTRY_HDR + (size_t)e->stored_len) < 0)
		return -1;
	want = ENTRY_HDR + (size_t)e->stored_len;
	n = pread(p->fd, out->ptr, want, (off_t)e->offset);
	if (n < 0)
		return decree_error_os("cannot read '%s'", p->name);
	hdr = (const unsigned char *)out->ptr;
	if (n < ENTRY_HDR || memcmp(hdr, e->id.b, SHA256_LEN) ||
	    get_u64le(hdr + 40) != e->raw_len ||
	    get_u64le(hdr + 48) != e->stored_len) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: bad entry header in '%s'",
					hex, p->name);
	}
	if ((size_t)n != want) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: pack '%s' is truncated",
					hex, p->name);
	}
	memmove(out->ptr, out->ptr + ENTRY_HDR, (size_t)e->stored_len);
	out->len = (size_t)e->stored_len;
	out->ptr[out->len] = '\0';
	return 0;
}

/* Read, decompress and verify one entry of pack p. */
static int read_entry(buf *out, odb *db, const pack *p, const idx_entry *e)
{
	char hex[SHA256_HEXLEN + 1];
	oid check;
	int r;

	oid_to_hex(hex, &e->id);
	if (e->comp == COMP_NONE) {
		if ((r = read_stored(out, p, e)) < 0)
			return r;
	} else if (e->comp == COMP_ZSTD) {
		buf tmp = BUF_INIT;
		size_t got;
		if ((r = read_stored(&tmp, p, e)) < 0) {
			buf_release(&tmp);
			return r;
		}
		/* Nor is the raw length: the frame records its content size
		 * (decree always writes it), which must agree, and which
		 * cannot exceed 32768 bytes per stored byte (a zstd block
		 * yields at most 128 KiB and takes at least 4 bytes). */
		if (ZSTD_getFrameContentSize(tmp.ptr, tmp.len) != e->raw_len ||
		    e->raw_len / 32768 > tmp.len) {
			buf_release(&tmp);
			return decree_error_set(
				DECREE_ECORRUPT,
				"object %s: bad compressed frame in '%s'", hex,
				p->name);
		}
		buf_clear(out);
		if (e->raw_len > SIZE_MAX / 2 ||
		    buf_grow(out, (size_t)e->raw_len) < 0) {
			buf_release(&tmp);
			return -1;
		}
		ZSTD_DCtx *dc = NULL;
		pthread_mutex_lock(&db->zmu);
		if (db->ndctx)
			dc = db->dctx[--db->ndctx];
		pthread_mutex_unlock(&db->zmu);
		if (!dc)
			dc = ZSTD_createDCtx();
		got = dc ? ZSTD_decompressDCtx(dc, out->ptr,
					       (size_t)e->raw_len + 1, tmp.ptr,
					       tmp.len)
			 : ZSTD_decompress(out->ptr, (size_t)e->raw_len + 1,
					   tmp.ptr, tmp.len);
		pthread_mutex_lock(&db->zmu);
		if (dc && db->ndctx < ARRAY_SIZE(db->dctx)) {
			db->dctx[db->ndctx++] = dc;
			dc = NULL;
		}
		pthread_mutex_unlock(&db->zmu);
		ZSTD_freeDCtx(dc);
		buf_release(&tmp);
		if (ZSTD_isError(got) || got != e->raw_len)
			return decree_error_set(
				DECREE_ECORRUPT,
				"object %s: cannot decompress (%s)", hex,
				ZSTD_isError(got) ? ZSTD_getErrorName(got)
						  : "wrong size");
		out->len = got;
		out->ptr[got] = '\0';
	} else {
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: unknown compression %u",
					hex, e->comp);
	}
	if (out->len != e->raw_len)
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: wrong size", hex);
	sha256_buf(&check, out->ptr, out->len);
	if (oid_cmp(&check, &e->id))
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s is corrupt (hash mismatch in '%s')", hex,
			p->name);
	return 0;
}

int odb_read(buf *out, int *type_out, odb *db, const oid *id)
{
	char hex[SHA256_HEXLEN + 1], first[512];
	int r = DECREE_ENOTFOUND;

	/* Newest packs first.  An object is normally in one pack; when it is
	 * in several (gc keeps a good copy beside a damaged one), a copy that
	 * fails to verify is passed over for the next, and the first error is
	 * the one reported. */
	for (size_t i = db->npacks; i-- > 0;) {
		const unsigned char *raw = pack_find(&db->packs[i], id);
		idx_entry e;
		int rr;

		if (!raw)
			continue;
		entry_decode(&e, raw);
		if ((rr = read_entry(out, db, &db->packs[i], &e)) == 0) {
			if (r != DECREE_ENOTFOUND)
				error_clear();
			if (type_out)
				*type_out = e.type;
			return 0;
		}
		if (r == DECREE_ENOTFOUND) {
			r = rr;
			snprintf(first, sizeof(first), "%s", error_last());
		}
	}
	if (r == DECREE_ENOTFOUND) {
		oid_to_hex(hex, id);
		return decree_error_set(DECREE_ENOTFOUND, "object %s not found",
					hex);
	}
	return decree_error_set(r, "%s", first);
}

int odb_foreach(odb *db, odb_foreach_fn fn, void *payload)
{
	for (size_t i = 0; i < db->npacks; i++) {
		const pack *p = &db->packs[i];
		for (uint64_t k = 0; k < p->count; k++) {
			idx_entry e;
			int r;
			entry_decode(&e, idx_entries(p) + k * IDX_ENTRY);
			if ((r = fn(payload, &e.id, e.type, e.raw_len,
				    p->name)) != 0)
				return r;
		}
	}
	return 0;
}

int odb_verify_indexes(odb *db, odb_damage_fn fn, void *payload)
{
	int damaged = 0;

	for (size_t i = 0; i < db->npacks; i++) {
		const pack *p = &db->packs[i];
		const unsigned char *prev = NULL;
		oid sum;
		sha256_buf(&sum, p->map, p->map_len - SHA256_LEN);
		if (memcmp(sum.b, p->map + p->map_len - SHA256_LEN,
			   SHA256_LEN)) {
			fn(payload, p->name, "index checksum mismatch");
			damaged++;
			continue;
		}
		for (uint64_t k = 0; k < p->count; k++) {
			const unsigned char *e = idx_entries(p) + k * IDX_ENTRY;
			if (prev && memcmp(prev, e, SHA256_LEN) >= 0) {
				fn(payload, p->name,
				   "index entries out of order");
				damaged++;
				break;
			}
			prev = e;
		}
	}
	return damaged;
}

/* --- writing ------------------------------------------------------------ */

/* Per-thread compression state: the context and an output buffer that is
 * reused across objects (fresh large buffers cost a page fault per page). */
typedef struct {
	ZSTD_CCtx *cctx;
	void *out;
	size_t cap;
} zstate;

static pthread_key_t zstate_key;
static pthread_once_t zstate_once = PTHREAD_ONCE_INIT;

static void zstate_destroy(void *p)
{
	zstate *z = p;
	ZSTD_freeCCtx(z->cctx);
	decree_free(z->out);
	decree_free(z);
}

static void zstate_key_init(void)
{
	pthread_key_create(&zstate_key, zstate_destroy);
}

static zstate *thread_zstate(size_t need)
{
	zstate *z;
	pthread_once(&zstate_once, zstate_key_init);
	if ((z = pthread_getspecific(zstate_key)) == NULL) {
		if (!(z = decree_calloc(1, sizeof(*z))))
			return NULL;
		if (!(z->cctx = ZSTD_createCCtx())) {
			decree_free(z);
			decree_error_set(DECREE_ERROR, "out of memory");
			return NULL;
		}
		pthread_setspecific(zstate_key, z);
	}
	if (z->cap < need) {
		void *n = decree_realloc(z->out, need);
		if (!n)
			return NULL;
		z->out = n;
		z->cap = need;
	}
	return z;
}

int odb_writer_new(odb_writer **out, odb *db)
{
	const char *lvl = getenv("DECREE_ZSTD_LEVEL");
	odb_writer *w;

	if (lvl && *lvl) /* tuning knob, see docs/format.md */
		odb_zstd_level = (int)strtol(lvl, NULL, 10);

	*out = NULL;
	if (!(w = decree_calloc(1, sizeof(*w))))
		return -1;
	w->db = db;
	w->fd = -1;
	buf_init(&w->out);
	pthread_mutex_init(&w->mu, NULL);
	*out = w;
	return 0;
}

static int writer_open(odb_writer *w)
{
	unsigned char rnd[8], hdr[PACK_HDR];
	char path[PATH_MAX];

	if (fs_random(rnd, sizeof(rnd)) < 0)
		return -1;
	snprintf(path, sizeof(path),
		 "%s/tmp-%02x%02x%02x%02x%02x%02x%02x%02x.pack", w->db->dir,
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6],
		 rnd[7]);
	if (!(w->tmp_path = decree_strdup(path)))
		return -1;
	w->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (w->fd < 0)
		return decree_error_os("cannot create '%s'", path);
	tempfile_register(path);
	memcpy(hdr, PACK_MAGIC, 8);
	put_u32le(hdr + 8, FORMAT_VERSION);
	put_u32le(hdr + 12, 0);
	w->offset = PACK_HDR;
	return buf_put(&w->out, hdr, PACK_HDR);
}

static int writer_flush(odb_writer *w)
{
	if (!w->out.len)
		return 0;
	if (fs_write_all(w->fd, w->out.ptr, w->out.len) < 0)
		return decree_error_os("cannot write '%s'", w->tmp_path);
	buf_clear(&w->out);
	return 0;
}

/* Append one already-encoded entry; caller holds w->mu. */
static int writer_append(odb_writer *w, const oid *id, int type, int comp,
			 uint64_t raw_len, const void *stored,
			 size_t stored_len)
{
	unsigned char hdr[ENTRY_HDR];
	idx_entry *e;
	int r;

	if (w->fd < 0 && (r = writer_open(w)) < 0)
		return r;
	memcpy(hdr, id->b, SHA256_LEN);
	hdr[32] = (unsigned char)type;
	hdr[33] = (unsigned char)comp;
	memset(hdr + 34, 0, 6);
	put_u64le(hdr + 40, raw_len);
	put_u64le(hdr + 48, stored_len);
	if (GROW(w->ents, w->cap, w->nents + 1) < 0)
		return -1;
	if (buf_put(&w->out, hdr, ENTRY_HDR) < 0)
		return -1;
	if (stored_len >= (1u << 20)) {
		if ((r = writer_flush(w)) < 0)
			return r;
		if (fs_write_all(w->fd, stored, stored_len) < 0)
			return decree_error_os("cannot write '%s'",
					       w->tmp_path);
	} else {
		if (buf_put(&w->out, stored, stored_len) < 0)
			return -1;
		if (w->out.len >= (1u << 20) && (r = writer_flush(w)) < 0)
			return r;
	}
	e = &w->ents[w->nents++];
	e->id = *id;
	e->offset = w->offset;
	e->raw_len = raw_len;
	e->stored_len = stored_len;
	e->type = (unsigned char)type;
	e->comp = (unsigned char)comp;
	w->offset += ENTRY_HDR + stored_len;
	return 0;
}

int odb_writer_add(odb_writer *w, int type, const void *data, size_t len,
		   const oid *known, oid *id_out)
{
	oid id;
	bool added;
	void *cbuf = NULL;
	size_t clen = 0;
	int comp = COMP_NONE, r;

	if (known)
		id = *known;
	else
		sha256_buf(&id, data, len);
	if (id_out)
		*id_out = id;
	if (odb_has(w->db, &id))
		return 0;
	pthread_mutex_lock(&w->mu);
	if (w->failed)
		r = decree_error_set(DECREE_ERROR, "%s", w->errmsg);
	else
		r = oidset_add(&w->seen, &id, &added);
	pthread_mutex_unlock(&w->mu);
	if (r < 0)
		return r;
	if (!added)
		return 0;
	/* Compress outside the lock: this is where the CPU time goes. */
	if (len >= 64 && odb_zstd_level != 0) {
		size_t bound = ZSTD_compressBound(len);
		zstate *z = thread_zstate(bound);
		if (z) {
			cbuf = z->out;
			clen = ZSTD_compressCCtx(z->cctx, cbuf, bound, data,
						 len, odb_zstd_level);
			if (!ZSTD_isError(clen) && clen < len - len / 32)
				comp = COMP_ZSTD;
		} else {
			error_clear(); /* no memory to compress: store as is */
		}
	}
	pthread_mutex_lock(&w->mu);
	if (comp == COMP_ZSTD)
		r = writer_append(w, &id, type, comp, len, cbuf, clen);
	else
		r = writer_append(w, &id, type, comp, len, data, len);
	if (r < 0 && !w->failed) {
		w->failed = true;
		snprintf(w->errmsg, sizeof(w->errmsg), "%s", error_last());
	}
	pthread_mutex_unlock(&w->mu);
	return r;
}

static int ent_cmp(const void *a, const void *b)
{
	return oid_cmp(&((const idx_entry *)a)->id,
		       &((const idx_entry *)b)->id);
}

static int build_index(buf *idx, idx_entry *ents, size_t n)
{
	unsigned char hdr[IDX_HDR];
	uint32_t fan[256] = { 0 };
	oid sum;

	qsort(ents, n, sizeof(*ents), ent_cmp);
	memcpy(hdr, IDX_MAGIC, 8);
	put_u32le(hdr + 8, FORMAT_VERSION);
	put_u32le(hdr + 12, 0);
	put_u64le(hdr + 16, n);
	if (buf_put(idx, hdr, IDX_HDR) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		fan[ents[i].id.b[0]]++;
	for (int i = 1; i < 256; i++)
		fan[i] += fan[i - 1];
	for (int i = 0; i < 256; i++)
		if (buf_put_u32(idx, fan[i]) < 0)
			return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char e[IDX_ENTRY];
		memcpy(e, ents[i].id.b, SHA256_LEN);
		put_u64le(e + 32, ents[i].offset);
		put_u64le(e + 40, ents[i].raw_len);
		put_u64le(e + 48, ents[i].stored_len);
		e[56] = ents[i].type;
		e[57] = ents[i].comp;
		memset(e + 58, 0, 6);
		if (buf_put(idx, e, IDX_ENTRY) < 0)
			return -1;
	}
	sha256_buf(&sum, idx->ptr, idx->len);
	return buf_put(idx, sum.b, SHA256_LEN);
}

int odb_writer_commit(odb_writer *w)
{
	buf idx = BUF_INIT;
	char hex[SHA256_HEXLEN + 1], name[64], path[PATH_MAX];
	oid sum;
	int dfd = -1, r;

	if (w->failed)
		return decree_error_set(DECREE_ERROR, "%s", w->errmsg);
	if (w->nents == 0 || w->committed)
		return 0;
	if ((r = writer_flush(w)) < 0 || (r = fs_fsync(w->fd, w->tmp_path)) < 0)
		goto done;
	if ((r = build_index(&idx, w->ents, w->nents)) < 0)
		goto done;
	sha256_buf(&sum, idx.ptr, idx.len);
	oid_to_hex(hex, &sum);
	snprintf(name, sizeof(name), "pack-%.40s", hex);
	snprintf(path, sizeof(path), "%s/%s.pack", w->db->dir, name);
	if (fs_close(w->fd) < 0) {
		w->fd = -1;
		r = decree_error_os("cannot close '%s'", w->tmp_path);
		goto done;
	}
	w->fd = -1;
	if (rename(w->tmp_path, path) < 0) {
		r = decree_error_os("cannot rename '%s'", w->tmp_path);
		goto done;
	}
	tempfile_unregister(w->tmp_path);
	decree_free(w->tmp_path);
	w->tmp_path = NULL;
	if ((dfd = open(w->db->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = decree_error_os("cannot open '%s'", w->db->dir);
		goto done;
	}
	snprintf(path, sizeof(path), "%s.idx", name);
	if ((r = fs_write_atomic_at(dfd, path, idx.ptr, idx.len, 0444)) < 0) {
		/* no index, no pack: do not leave the data behind */
		struct stat st;
		if (fstatat(dfd, path, &st, 0) < 0) {
			snprintf(path, sizeof(path), "%s.pack", name);
			unlinkat(dfd, path, 0);
		}
		goto done;
	}
	w->committed = true;
	if ((r = GROW(w->db->packs, w->db->cap, w->db->npacks + 1)) < 0)
		goto done;
	if ((r = pack_load(&w->db->packs[w->db->npacks], w->db->dir, name)) < 0)
		goto done;
	w->db->npacks++;
done:
	if (dfd >= 0)
		close(dfd);
	buf_release(&idx);
	if (r < 0 && !w->failed) {
		w->failed = true;
		snprintf(w->errmsg, sizeof(w->errmsg), "%s", error_last());
	}
	return r;
}

void odb_writer_free(odb_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp_path) {
		unlink(w->tmp_path);
		tempfile_unregister(w->tmp_path);
		decree_free(w->tmp_path);
	}
	buf_release(&w->out);
	decree_free(w->ents);
	oidset_release(&w->seen);
	pthread_mutex_destroy(&w->mu);
	decree_free(w);
}

/* --- gc ----------------------------------------------------------------- */

static void remove_pack_files(const char *dir, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.pack", dir, name);
	unlink(path);
}

static void remove_orphans(odb *db, bool dry_run)
{
	DIR *d = opendir(db->dir);
	struct dirent *de;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		bool orphan = false;
		if (!strncmp(de->d_name, "tmp-", 4) ||
		    !strncmp(de->d_name, ".pack-", 6)) {
			orphan = true;
		} else if (len > 5 && !strcmp(de->d_name + len - 5, ".pack")) {
			struct stat st;
			snprintf(path, sizeof(path), "%s/%.*s.idx", db->dir,
				 (int)(len - 5), de->d_name);
			orphan = stat(path, &st) < 0 && errno == ENOENT;
		}
		if (orphan && !dry_run) {
			snprintf(path, sizeof(path), "%s/%s", db->dir,
				 de->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

/* Does the copy of `id` in pack p (if it holds one) read and verify? */
static bool copy_verifies(odb *db, const pack *p, const oid *id, buf *tmp)
{
	const unsigned char *raw = pack_find(p, id);
	idx_entry e;

	if (!raw)
		return false;
	entry_decode(&e, raw);
	if (read_entry(tmp, db, p, &e) == 0)
		return true;
	error_clear();
	return false;
}

/*
 * Copy the objects of the packs marked in `rewrite` that are in `keep`
 * (NULL: all) into one new pack, make it durable, then delete the marked
 * packs.  Stored bytes are copied as they are (no recompression), from
 * the first copy that verifies: an object is normally in one pack, but a
 * damaged store may hold a good copy beside a bad one, and gc must not
 * keep the bad one and delete the good.  So an object also held by an
 * unmarked pack is not copied only if that copy verifies, and when no
 * copy verifies the first is copied as it is (for fsck to report).
 */
static int rewrite_packs(odb *db, const bool *rewrite, const oidset *keep)
{
	odb_writer *w = NULL;
	buf tmp = BUF_INIT;
	oidset copied = OIDSET_INIT;
	size_t nold = db->npacks;
	int r;

	if ((r = odb_writer_new(&w, db)) < 0)
		return r;
	for (size_t i = 0; i < nold; i++) {
		const pack *p = &db->packs[i];
		if (!rewrite[i])
			continue;
		for (uint64_t k = 0; k < p->count; k++) {
			const pack *from = p;
			idx_entry e;
			bool added, elsewhere = false;
			entry_decode(&e, idx_entries(p) + k * IDX_ENTRY);
			if (keep && !oidset_has(keep, &e.id))
				continue;
			if ((r = oidset_add(&copied, &e.id, &added)) < 0)
				goto done;
			if (!added)
				continue;
			for (size_t j = 0; j < nold && !elsewhere; j++)
				elsewhere = !rewrite[j] &&
					    copy_verifies(db, &db->packs[j],
							  &e.id, &tmp);
			if (elsewhere)
				continue;
			/* packs before i held no copy (it would be in copied)
			 */
			for (size_t j = i; j < nold; j++) {
				if (rewrite[j] &&
				    copy_verifies(db, &db->packs[j], &e.id,
						  &tmp)) {
					from = &db->packs[j];
					break;
				}
			}
			entry_decode(&e, pack_find(from, &e.id));
			if ((r = read_stored(&tmp, from, &e)) < 0 ||
			    (r = writer_append(w, &e.id, e.type, e.comp,
					       e.raw_len, tmp.ptr, tmp.len)) <
				    0)
				goto done;
		}
	}
	if ((r = odb_writer_commit(w)) < 0)
		goto done;
	/* The new pack is durable: the old ones may go. */
	for (size_t i = 0; i < nold; i++)
		if (rewrite[i])
			remove_pack_files(db->dir, db->packs[i].name);
	if ((r = fs_fsync_dir_path(db->dir)) < 0)
		goto done;
	r = odb_refresh(db);
done:
	odb_writer_free(w);
	oidset_release(&copied);
	buf_release(&tmp);
	return r;
}

int odb_gc(odb *db, const oidset *keep, bool dry_run, uint64_t *objects_freed,
	   uint64_t *bytes_freed)
{
	bool *rewrite = NULL, any = false;
	size_t nold = db->npacks;
	int r = 0;

	*objects_freed = *bytes_freed = 0;
	if (nold && !(rewrite = decree_calloc(nold, sizeof(bool))))
		return -1;
	for (size_t i = 0; i < nold; i++) {
		const pack *p = &db->packs[i];
		for (uint64_t k = 0; k < p->count; k++) {
			idx_entry e;
			entry_decode(&e, idx_entries(p) + k * IDX_ENTRY);
			if (!oidset_has(keep, &e.id)) {
				rewrite[i] = any = true;
				(*objects_freed)++;
				*bytes_freed += e.stored_len + ENTRY_HDR;
			}
		}
	}
	if (!dry_run && any)
		r = rewrite_packs(db, rewrite, keep);
	if (r == 0)
		remove_orphans(db, dry_run);
	decree_free(rewrite);
	return r;
}

int odb_repack_small(odb *db, size_t max_packs, uint64_t small_bytes)
{
	bool *rewrite;
	size_t nsmall = 0;
	int r = 0;

	if (db->npacks <= max_packs)
		return 0;
	if (!(rewrite = decree_calloc(db->npacks, sizeof(bool))))
		return -1;
	for (size_t i = 0; i < db->npacks; i++) {
		struct stat st;
		if (fstat(db->packs[i].fd, &st) == 0 &&
		    (uint64_t)st.st_size < small_bytes) {
			rewrite[i] = true;
			nsmall++;
		}
	}
	if (nsmall > 1)
		r = rewrite_packs(db, rewrite, NULL);
	decree_free(rewrite);
	return r;
}
