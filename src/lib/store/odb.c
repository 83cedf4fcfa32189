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
 *    were copied into a new durable pack;
 *  - an object may have several copies (a damaged one and the one stored
 *    again): reads try every copy until one verifies.
 *
 * Trust (docs/format.md, "Trusting stored objects"): a writer must not
 * skip an object because a damaged copy of it exists, but re-hashing the
 * store on every checkpoint is out of the question.  So a pack is
 * *sealed* when its bytes are known good and its files have not changed
 * since: the writer seals the pack it wrote, a full verification seals a
 * pack it found intact.  Sealing sets the mtime of the .pack and .idx ten
 * seconds into the past (so any later write, even within the same clock
 * tick, changes it) and records both files' size, mtime, ctime, inode
 * and device in packs/sealed.  A pack whose files no longer match, or that
 * packs/sealed does not list, is verified in full (every object re-hashed)
 * the first time a writer would dedup against it; what that finds damaged
 * is written again.  A pack whose index cannot be loaded is *broken*: its
 * objects are invisible, the rest of the store works, gc refuses to run,
 * and fsck names it.
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

#define SEAL_FILE  "sealed"
#define SEAL_MAGIC "DECRSEAL"
#define SEAL_HDR   16
#define SEAL_NAME  20 /* the 40 hex digits of a pack name, as bytes */
#define FILE_ID	   40
#define SEAL_ENTRY (SEAL_NAME + 2 * FILE_ID)
#define SEAL_BACKDATE                                           \
	10 /* seconds: a sealed file's mtime lies this far back \
	    */

enum { COMP_NONE = 0, COMP_ZSTD = 1 };

/* Trust of a pack (pack.trust, read without the lock: atomics). */
enum {
	TRUST_UNKNOWN = 0,  /* not verified since its files last changed */
	TRUST_SEALED = 1,   /* packs/sealed vouches for its files */
	TRUST_VERIFIED = 2, /* verified in full by this handle: seal it */
	TRUST_DAMAGED = 3,  /* verified: see `bad` and `damage` */
};

int odb_zstd_level = 1;

/* The identity of a file: any write to it changes one of these. */
typedef struct {
	uint64_t size, ino, dev;
	int64_t mtime_ns, ctime_ns;
} file_id;

typedef struct {
	char *name;	    /* "pack-<hex>" */
	int fd;		    /* the .pack */
	unsigned char *map; /* the .idx */
	size_t map_len;
	uint64_t count;
	file_id pack_id, idx_id; /* as loaded (or as sealed) */
	int trust;		 /* TRUST_*, atomic */
	oidset bad;		 /* objects whose copy here is damaged */
	char *damage; /* what is wrong with the pack itself, or NULL */
} pack;

/* A pack whose index could not be loaded. */
typedef struct {
	char *name, *why;
} broken_pack;

struct odb {
	char *dir;
	pack *packs;
	size_t npacks, cap;
	broken_pack *broken;
	size_t nbroken;
	/* packs/sealed names a pack that is gone (not by our gc) */
	bool seal_vanished;
	/* a pack was verified intact: packs/sealed should say so */
	bool seals_dirty;
	/* verification of a pack (odb_check from scan threads) */
	pthread_mutex_t tmu;
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
	char errmsg[512];   /* why it failed, for adds on other threads */
	const oidset *only; /* odb_writer_restrict */
	char name[64];	    /* of the pack committed ("" before) */
};

/* --- reading ------------------------------------------------------------ */

static void pack_release(pack *p)
{
	if (p->map)
		munmap(p->map, p->map_len);
	if (p->fd >= 0)
		close(p->fd);
	oidset_release(&p->bad);
	decree_free(p->damage);
	decree_free(p->name);
}

static const unsigned char *idx_entries(const pack *p)
{
	return p->map + IDX_HDR + IDX_FANOUT;
}

static void file_id_of(file_id *f, const struct stat *st)
{
	f->size = (uint64_t)st->st_size;
	f->ino = (uint64_t)st->st_ino;
	f->dev = (uint64_t)st->st_dev;
	f->mtime_ns = st_mtime_ns(st);
	f->ctime_ns = st_ctime_ns(st);
}

static bool file_id_eq(const file_id *a, const file_id *b)
{
	return a->size == b->size && a->ino == b->ino && a->dev == b->dev &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* Open a store file for reading: never blocks (a FIFO), never follows a
 * symlink, must be a regular file.  -1 with errno set on failure (EINVAL:
 * not a regular file). */
static int open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		int saved = S_ISREG(st->st_mode) ? errno : EINVAL;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int pack_load(pack *out, const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	pack p;
	int fd, r = 0;
	uint32_t prev = 0;

	memset(&p, 0, sizeof(p));
	p.fd = -1;
	snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
	if ((fd = open_regular(path, &st)) < 0) {
		if (errno == ENOENT)
			return DECREE_ENOTFOUND;
		if (errno == EINVAL || errno == ELOOP)
			return decree_error_set(DECREE_ECORRUPT,
						"index '%s' is not a file",
						path);
		return decree_error_os("cannot open '%s'", path);
	}
	file_id_of(&p.idx_id, &st);
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
		r = decree_error_set(DECREE_ECORRUPT,
				     "index '%s' has a bad header (not %s "
				     "version %d)",
				     path, "DECRIDX", FORMAT_VERSION);
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
	if ((p.fd = open_regular(path, &st)) < 0) {
		r = errno == ENOENT
			    ? decree_error_set(DECREE_ECORRUPT,
					       "pack '%s' is missing", path)
		    : errno == EINVAL || errno == ELOOP
			    ? decree_error_set(DECREE_ECORRUPT,
					       "pack '%s' is not a file", path)
			    : decree_error_os("cannot open '%s'", path);
		goto fail;
	}
	file_id_of(&p.pack_id, &st);
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

static void broken_release(odb *db)
{
	for (size_t i = 0; i < db->nbroken; i++) {
		decree_free(db->broken[i].name);
		decree_free(db->broken[i].why);
	}
	decree_free(db->broken);
	db->broken = NULL;
	db->nbroken = 0;
}

/* Remember a pack whose index cannot be loaded (the error says why). */
static int note_broken(odb *db, const char *name)
{
	broken_pack *v =
		decree_realloc(db->broken, (db->nbroken + 1) * sizeof(*v));
	if (!v)
		return -1;
	db->broken = v;
	v[db->nbroken].name = decree_strdup(name);
	v[db->nbroken].why = decree_strdup(error_last());
	if (!v[db->nbroken].name || !v[db->nbroken].why) {
		decree_free(v[db->nbroken].name);
		decree_free(v[db->nbroken].why);
		return -1;
	}
	db->nbroken++;
	error_clear();
	return 0;
}

static void seal_entry_encode(unsigned char *e, const pack *p)
{
	const file_id *f[2] = { &p->pack_id, &p->idx_id };
	/* "pack-" + 40 hex digits: the digits as 20 bytes */
	for (int i = 0; i < SEAL_NAME; i++) {
		unsigned hi = (unsigned)p->name[5 + 2 * i];
		unsigned lo = (unsigned)p->name[6 + 2 * i];
		hi = hi <= '9' ? hi - '0' : hi - 'a' + 10;
		lo = lo <= '9' ? lo - '0' : lo - 'a' + 10;
		e[i] = (unsigned char)(hi << 4 | lo);
	}
	for (int k = 0; k < 2; k++) {
		unsigned char *q = e + SEAL_NAME + k * FILE_ID;
		put_u64le(q, f[k]->size);
		put_u64le(q + 8, (uint64_t)f[k]->mtime_ns);
		put_u64le(q + 16, (uint64_t)f[k]->ctime_ns);
		put_u64le(q + 24, f[k]->ino);
		put_u64le(q + 32, f[k]->dev);
	}
}

static bool is_pack_name(const char *name)
{
	if (strlen(name) != 45 || strncmp(name, "pack-", 5))
		return false;
	for (int i = 5; i < 45; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/*
 * Read packs/sealed and mark the packs whose files it vouches for as
 * sealed.  A missing or damaged file seals nothing: it is only a record of
 * work done, and losing it costs one verification of each pack.
 */
static void seals_load(odb *db)
{
	char path[PATH_MAX];
	buf data = BUF_INIT;
	const unsigned char *d;
	struct stat st;
	uint32_t count;
	size_t matched = 0;
	oid sum;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", db->dir, SEAL_FILE);
	if ((fd = open_regular(path, &st)) < 0)
		goto done;
	if (fs_read_fd(fd, &data, path) < 0) {
		close(fd);
		goto done;
	}
	close(fd);
	d = (const unsigned char *)data.ptr;
	if (data.len < SEAL_HDR + SHA256_LEN || memcmp(d, SEAL_MAGIC, 8) ||
	    get_u32le(d + 8) != FORMAT_VERSION)
		goto done;
	count = get_u32le(d + 12);
	if ((data.len - SEAL_HDR - SHA256_LEN) / SEAL_ENTRY != count ||
	    (data.len - SEAL_HDR - SHA256_LEN) % SEAL_ENTRY)
		goto done;
	sha256_buf(&sum, d, data.len - SHA256_LEN);
	if (memcmp(sum.b, d + data.len - SHA256_LEN, SHA256_LEN))
		goto done;
	for (size_t i = 0; i < db->npacks; i++) {
		pack *p = &db->packs[i];
		unsigned char want[SEAL_ENTRY];
		if (!is_pack_name(p->name))
			continue;
		seal_entry_encode(want, p);
		for (uint32_t k = 0; k < count; k++) {
			const unsigned char *e = d + SEAL_HDR + k * SEAL_ENTRY;
			if (memcmp(e, want, SEAL_NAME))
				continue;
			matched++;
			if (!memcmp(e, want, SEAL_ENTRY))
				p->trust = TRUST_SEALED;
			break;
		}
	}
	/* an entry without its pack: a pack vanished behind our back */
	db->seal_vanished = matched != count;
done:
	error_clear();
	buf_release(&data);
}

/*
 * Replace dir/name by the bytes of b: temp file ("tmp-*", which gc removes
 * when a crash leaves it) + rename, without fsync.  Only for packs/sealed:
 * after a crash it may be old, empty or torn (its checksum fails), and
 * either way it vouches for no more than what is durable (a pack is sealed
 * after its bytes were synced); losing it costs one verification.  It is
 * written at every checkpoint that adds a pack, where a sync would cost
 * more than the rest of the bookkeeping.
 */
static int write_unsynced(const char *dir, const char *name, const buf *b)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	unsigned char rnd[6];
	int fd, r;

	if (fs_random(rnd, sizeof(rnd)) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/tmp-%s-%02x%02x%02x%02x%02x%02x", dir,
		 name, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	if (fd < 0)
		return decree_error_os("cannot create '%s'", tmp);
	r = fs_write_all(fd, b->ptr, b->len);
	if (fs_close(fd) < 0 || r < 0 ||
	    fs_rename_unsynced(AT_FDCWD, tmp, AT_FDCWD, path) < 0) {
		r = decree_error_os("cannot write '%s'", path);
		unlink(tmp);
	}
	return r;
}

/*
 * Seal the packs verified intact: move their files' mtime back (so that a
 * later write cannot leave it unchanged), take their identity, and write
 * packs/sealed listing every sealed pack.  Caller holds the store lock.
 * Failures only cost a later verification: a note in the warning slot.
 */
static void seals_save(odb *db)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	size_t n = 0;
	oid sum;

	for (size_t i = 0; i < db->npacks; i++) {
		pack *p = &db->packs[i];
		struct timespec ts[2];
		struct stat pst, ist;
		file_id now;
		if (p->trust != TRUST_VERIFIED)
			continue;
		ts[0].tv_sec = 0;
		ts[0].tv_nsec = UTIME_OMIT;
		ts[1].tv_sec =
			(time_t)(fs_now_ns() / 1000000000) - SEAL_BACKDATE;
		ts[1].tv_nsec = 0;
		snprintf(path, sizeof(path), "%s/%s.idx", db->dir, p->name);
		/* unchanged since it was loaded (and verified)? */
		if (fstat(p->fd, &pst) < 0 || stat(path, &ist) < 0)
			continue;
		file_id_of(&now, &pst);
		if (!file_id_eq(&now, &p->pack_id))
			continue;
		file_id_of(&now, &ist);
		if (!file_id_eq(&now, &p->idx_id))
			continue;
		if (futimens(p->fd, ts) < 0 ||
		    utimensat(AT_FDCWD, path, ts, 0) < 0 ||
		    fstat(p->fd, &pst) < 0 || stat(path, &ist) < 0)
			continue;
		file_id_of(&p->pack_id, &pst);
		file_id_of(&p->idx_id, &ist);
		p->trust = TRUST_SEALED;
	}
	if (buf_put(&b, SEAL_MAGIC, 8) < 0 ||
	    buf_put_u32(&b, FORMAT_VERSION) < 0 || buf_put_u32(&b, 0) < 0)
		goto done;
	for (size_t i = 0; i < db->npacks; i++) {
		unsigned char e[SEAL_ENTRY];
		if (db->packs[i].trust != TRUST_SEALED ||
		    !is_pack_name(db->packs[i].name))
			continue;
		seal_entry_encode(e, &db->packs[i]);
		if (buf_put(&b, e, sizeof(e)) < 0)
			goto done;
		n++;
	}
	put_u32le((unsigned char *)b.ptr + 12, (uint32_t)n);
	sha256_buf(&sum, b.ptr, b.len);
	if (buf_put(&b, sum.b, SHA256_LEN) < 0)
		goto done;
	if (write_unsynced(db->dir, SEAL_FILE, &b) == 0) {
		db->seals_dirty = false;
		db->seal_vanished = false;
	} else {
		warning_set(0, "%s; intact packs will be verified again",
			    error_last());
	}
done:
	error_clear();
	buf_release(&b);
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
	broken_release(db);
	db->seal_vanished = db->seals_dirty = false;
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
		if (lr == DECREE_ECORRUPT) /* blocks only its own objects */
			r = note_broken(db, names[i]);
		else if (lr < 0)
			r = lr;
		else
			db->npacks++;
	}
	for (size_t i = 0; i < n; i++)
		decree_free(names[i]);
	decree_free(names);
	if (r == 0)
		seals_load(db);
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
	pthread_mutex_init(&db->tmu, NULL);
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
	broken_release(db);
	for (size_t i = 0; i < db->ndctx; i++)
		ZSTD_freeDCtx(db->dctx[i]);
	pthread_mutex_destroy(&db->zmu);
	pthread_mutex_destroy(&db->tmu);
	decree_free(db->packs);
	decree_free(db->dir);
	decree_free(db);
}

size_t odb_pack_count(odb *db)
{
	return db->npacks;
}

/* Bytes 1-8 of an id (byte 0 picks the fanout bucket), big endian: a
 * number in the order of the ids. */
static uint64_t id_key(const unsigned char *b)
{
	uint64_t k = 0;
	for (int i = 1; i < 9; i++)
		k = k << 8 | b[i];
	return k;
}

/*
 * Ids are SHA-256 values, spread evenly over their bucket, so the place of
 * an id is guessed from its value (interpolation search), which finds it
 * in two or three probes where halving takes log2(bucket).  After a few
 * guesses halving takes over, which bounds the probes of an unlucky
 * bucket.  Each probe into a big index is a cache miss, and lookups are
 * much of what writing and reading trees costs.
 */
static const unsigned char *pack_find(const pack *p, const oid *id)
{
	unsigned first = id->b[0];
	size_t lo = first ? get_u32le(p->map + IDX_HDR + 4 * (first - 1)) : 0;
	size_t hi = get_u32le(p->map + IDX_HDR + 4 * first);
	const unsigned char *ents = idx_entries(p);
	uint64_t want = id_key(id->b), klo = 0, khi = UINT64_MAX;
	int guesses = 6;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const unsigned char *e;
		int c;
		if (guesses > 0 && hi - lo > 4 && want >= klo && want <= khi &&
		    khi > klo) {
			/* klo <= every key in [lo, hi) <= khi */
			double f = (double)(want - klo) / (double)(khi - klo);
			size_t at = lo + (size_t)(f * (double)(hi - lo));
			mid = at < hi ? at : hi - 1;
			guesses--;
		}
		e = ents + mid * IDX_ENTRY;
		c = memcmp(e, id->b, SHA256_LEN);
		if (c == 0)
			return e;
		if (c < 0) {
			lo = mid + 1;
			klo = id_key(e);
		} else {
			hi = mid;
			khi = id_key(e);
		}
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

void odb_prefetch(odb *db, const oid *id)
{
	pack *p;
	const unsigned char *raw = odb_find(db, id, &p);
	idx_entry e;

	if (!raw)
		return;
	entry_decode(&e, raw);
	/* (an entry beyond the pack is reported by the read, not here; a
	 * streamed object is read in order, which the kernel's own
	 * readahead serves) */
	if (e.stored_len < ODB_STREAM_MIN && e.offset <= p->pack_id.size &&
	    e.stored_len <= p->pack_id.size - e.offset)
		(void)posix_fadvise(p->fd, (off_t)e.offset,
				    (off_t)(e.stored_len + ENTRY_HDR),
				    POSIX_FADV_WILLNEED);
}

/* ENOTFOUND for `id`, naming a pack whose index is damaged: the object
 * may be in it (an index is checked whole only here, on this error path;
 * loading it checks its size and fanout table). */
static int not_found(odb *db, const char *hex)
{
	if (db->nbroken)
		return decree_error_set(
			DECREE_ENOTFOUND,
			"object %s not found (%s; its objects cannot be read)",
			hex, db->broken[0].why);
	for (size_t i = 0; i < db->npacks; i++) {
		pack *p = &db->packs[i];
		oid sum;
		sha256_buf(&sum, p->map, p->map_len - SHA256_LEN);
		if (memcmp(sum.b, p->map + p->map_len - SHA256_LEN, SHA256_LEN))
			return decree_error_set(
				DECREE_ENOTFOUND,
				"object %s not found (index '%s/%s.idx' is "
				"damaged: checksum mismatch)",
				hex, db->dir, p->name);
	}
	return decree_error_set(DECREE_ENOTFOUND, "object %s not found", hex);
}

int odb_size(uint64_t *size_out, odb *db, const oid *id)
{
	const unsigned char *e = odb_find(db, id, NULL);
	char hex[SHA256_HEXLEN + 1];

	if (!e) {
		oid_to_hex(hex, id);
		return not_found(db, hex);
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
	 * within the pack (its size as loaded: packs never change once
	 * published) before its length is used. */
	if (e->offset > p->pack_id.size ||
	    p->pack_id.size - e->offset < ENTRY_HDR ||
	    e->stored_len > p->pack_id.size - e->offset - ENTRY_HDR) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: entry beyond the end of '%s'", hex,
			p->name);
	}
	/* header and bytes in one read (a diff reads thousands of objects) */
	buf_clear(out);
	if (e->stored_len > SIZE_MAX / 2 - ENTRY_HDR ||
	    e->offset > (uint64_t)INT64_MAX ||
	    buf_grow(out, ENTRY_HDR + (size_t)e->stored_len) < 0) {
		if (e->stored_len <= SIZE_MAX / 2 - ENTRY_HDR &&
		    e->offset <= (uint64_t)INT64_MAX)
			return -1;
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: bad index entry in '%s'",
					hex, p->name);
	}
	want = ENTRY_HDR + (size_t)e->stored_len;
	n = pread(p->fd, out->ptr, want, (off_t)e->offset);
	if (n < 0)
		return decree_error_os("cannot read '%s'", p->name);
	hdr = (const unsigned char *)out->ptr;
	if (n < ENTRY_HDR) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: pack '%s' is truncated",
					hex, p->name);
	}
	if (memcmp(hdr, e->id.b, SHA256_LEN) ||
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

/* Decompress the stored bytes `tmp` of entry e into out. */
static int decompress(buf *out, odb *db, const buf *tmp, const idx_entry *e,
		      const char *where)
{
	char hex[SHA256_HEXLEN + 1];
	ZSTD_DCtx *dc = NULL;
	size_t got;

	buf_clear(out);
	/* Nor is the raw length trusted: the frame records its content size
	 * (decree always writes it), which must agree, and which cannot
	 * exceed 32768 bytes per stored byte (a zstd block yields at most
	 * 128 KiB and takes at least 4 bytes). */
	if (ZSTD_getFrameContentSize(tmp->ptr, tmp->len) != e->raw_len ||
	    e->raw_len / 32768 > tmp->len) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: bad compressed frame in '%s'", hex, where);
	}
	if (e->raw_len > SIZE_MAX / 2) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: bad size in '%s'", hex,
					where);
	}
	if (buf_grow(out, (size_t)e->raw_len) < 0)
		return -1;
	pthread_mutex_lock(&db->zmu);
	if (db->ndctx)
		dc = db->dctx[--db->ndctx];
	pthread_mutex_unlock(&db->zmu);
	if (!dc)
		dc = ZSTD_createDCtx();
	got = dc ? ZSTD_decompressDCtx(dc, out->ptr, (size_t)e->raw_len + 1,
				       tmp->ptr, tmp->len)
		 : ZSTD_decompress(out->ptr, (size_t)e->raw_len + 1, tmp->ptr,
				   tmp->len);
	pthread_mutex_lock(&db->zmu);
	if (dc && db->ndctx < ARRAY_SIZE(db->dctx)) {
		db->dctx[db->ndctx++] = dc;
		dc = NULL;
	}
	pthread_mutex_unlock(&db->zmu);
	ZSTD_freeDCtx(dc);
	if (ZSTD_isError(got) || got != e->raw_len) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: cannot decompress in '%s' (%s)", hex, where,
			ZSTD_isError(got) ? ZSTD_getErrorName(got)
					  : "wrong size");
	}
	out->len = got;
	out->ptr[got] = '\0';
	return 0;
}

/* Read and verify the copy of entry e held by pack p.  (The hex form of
 * the id is made only for a message: every tree read goes through here.) */
static int read_copy(buf *out, odb *db, const pack *p, const idx_entry *e)
{
	char hex[SHA256_HEXLEN + 1];
	oid check;
	int r;

	if (e->comp == COMP_NONE) {
		if ((r = read_stored(out, p, e)) < 0)
			return r;
	} else if (e->comp == COMP_ZSTD) {
		buf tmp = BUF_INIT;
		if ((r = read_stored(&tmp, p, e)) == 0)
			r = decompress(out, db, &tmp, e, p->name);
		buf_release(&tmp);
		if (r < 0)
			return r;
	} else {
		oid_to_hex(hex, &e->id);
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: unknown compression %u in '%s'", hex,
			e->comp, p->name);
	}
	if (out->len != e->raw_len) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: wrong size in '%s'", hex,
					p->name);
	}
	if (e->type != ODB_BLOB && e->type != ODB_TREE) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: unknown type %u in '%s'",
					hex, e->type, p->name);
	}
	sha256_buf(&check, out->ptr, out->len);
	if (oid_cmp(&check, &e->id)) {
		oid_to_hex(hex, &e->id);
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s is corrupt (hash mismatch in '%s')", hex,
			p->name);
	}
	return 0;
}

/* --- streaming: objects of any size in bounded memory ----------------------
 *
 * An object of ODB_STREAM_MIN bytes or more is never held in memory:
 * stream_copy decompresses it in chunks of STREAM_CHUNK, hashing as it
 * goes, into a file or nowhere (verification).  Writing to a file keeps it
 * sparse: runs of all-zero 4 KiB blocks are skipped with lseek, and the
 * file is cut to its size at the end, so a sparse file comes back sparse.
 */
#define STREAM_CHUNK ((size_t)1 << 20)
#define HOLE_BLOCK   4096

static bool all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

/* Write n bytes at the current offset of fd, seeking over zero blocks. */
static int write_sparse(int fd, const unsigned char *p, size_t n,
			const char *name)
{
	while (n) {
		size_t run = 0;
		bool zero = all_zero(p, n < HOLE_BLOCK ? n : HOLE_BLOCK);
		while (run < n) {
			size_t b = n - run < HOLE_BLOCK ? n - run : HOLE_BLOCK;
			if (all_zero(p + run, b) != zero)
				break;
			run += b;
		}
		if (zero) {
			if (lseek(fd, (off_t)run, SEEK_CUR) < 0)
				return decree_error_os("cannot seek in '%s'",
						       name);
		} else if (fs_write_all(fd, p, run) < 0) {
			return decree_error_os("cannot write '%s'", name);
		}
		p += run;
		n -= run;
	}
	return 0;
}

typedef struct {
	sha256_ctx *h;
	int fd; /* -1: verify only */
	const char *name;
	uint64_t total;
} stream_sink;

static int sink_put(stream_sink *k, const unsigned char *p, size_t n)
{
	sha256_update(k->h, p, n);
	k->total += n;
	return k->fd >= 0 ? write_sparse(k->fd, p, n, k->name) : 0;
}

/* Verify the copy of entry e in pack p, streaming it into k->fd. */
static int stream_copy(const pack *p, const idx_entry *e, stream_sink *k)
{
	char hex[SHA256_HEXLEN + 1];
	unsigned char hdr[ENTRY_HDR];
	unsigned char *in = NULL, *outb = NULL;
	ZSTD_DCtx *dc = NULL;
	uint64_t pos, left;
	size_t last = 1; /* ZSTD_decompressStream: 0 once the frame is done */
	oid check;
	int r = 0;

	oid_to_hex(hex, &e->id);
	if (e->offset > p->pack_id.size ||
	    p->pack_id.size - e->offset < ENTRY_HDR ||
	    e->stored_len > p->pack_id.size - e->offset - ENTRY_HDR ||
	    e->offset > (uint64_t)INT64_MAX)
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: entry beyond the end of '%s'", hex,
			p->name);
	if (pread(p->fd, hdr, ENTRY_HDR, (off_t)e->offset) != ENTRY_HDR ||
	    memcmp(hdr, e->id.b, SHA256_LEN) ||
	    get_u64le(hdr + 40) != e->raw_len ||
	    get_u64le(hdr + 48) != e->stored_len)
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: bad entry header in '%s'",
					hex, p->name);
	if (e->type != ODB_BLOB && e->type != ODB_TREE)
		return decree_error_set(DECREE_ECORRUPT,
					"object %s: unknown type %u in '%s'",
					hex, e->type, p->name);
	if (e->comp != COMP_NONE && e->comp != COMP_ZSTD)
		return decree_error_set(
			DECREE_ECORRUPT,
			"object %s: unknown compression %u in '%s'", hex,
			e->comp, p->name);
	if (!(in = decree_malloc(STREAM_CHUNK)) ||
	    !(outb = decree_malloc(STREAM_CHUNK))) {
		r = -1;
		goto done;
	}
	if (e->comp == COMP_ZSTD && !(dc = ZSTD_createDCtx())) {
		r = decree_error_set(DECREE_ERROR, "out of memory");
		goto done;
	}
	pos = e->offset + ENTRY_HDR;
	left = e->stored_len;
	while (left) {
		size_t want = left < STREAM_CHUNK ? (size_t)left : STREAM_CHUNK;
		ssize_t n = pread(p->fd, in, want, (off_t)pos);
		ZSTD_inBuffer ib = { in, 0, 0 };
		if (n < 0) {
			r = decree_error_os("cannot read '%s'", p->name);
			goto done;
		}
		if ((size_t)n != want) {
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s: pack '%s' is truncated", hex,
				p->name);
			goto done;
		}
		if (pos == e->offset + ENTRY_HDR && dc &&
		    (ZSTD_getFrameContentSize(in, want) != e->raw_len ||
		     e->raw_len / 32768 > e->stored_len)) {
			/* as decompress(): the frame must state the size */
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s: bad compressed frame in '%s'", hex,
				p->name);
			goto done;
		}
		pos += want;
		left -= want;
		if (!dc) {
			if ((r = sink_put(k, in, want)) < 0)
				goto done;
			continue;
		}
		ib.size = want;
		while (ib.pos < ib.size) {
			ZSTD_outBuffer ob = { outb, STREAM_CHUNK, 0 };
			size_t z = ZSTD_decompressStream(dc, &ob, &ib);
			if (ZSTD_isError(z) || k->total + ob.pos > e->raw_len ||
			    (z == 0 && ib.pos < ib.size)) {
				r = decree_error_set(
					DECREE_ECORRUPT,
					"object %s: cannot decompress in '%s' "
					"(%s)",
					hex, p->name,
					ZSTD_isError(z) ? ZSTD_getErrorName(z)
							: "wrong size");
				goto done;
			}
			if ((r = sink_put(k, outb, ob.pos)) < 0)
				goto done;
			last = z;
		}
	}
	/* a frame's last block may still sit in the context */
	while (dc && last != 0) {
		ZSTD_inBuffer ib = { in, 0, 0 };
		ZSTD_outBuffer ob = { outb, STREAM_CHUNK, 0 };
		size_t z = ZSTD_decompressStream(dc, &ob, &ib);
		if (ZSTD_isError(z) || (z != 0 && ob.pos == 0)) {
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s: cannot decompress in '%s' "
				"(truncated frame)",
				hex, p->name);
			goto done;
		}
		if ((r = sink_put(k, outb, ob.pos)) < 0)
			goto done;
		last = z;
	}
	if (k->total != e->raw_len) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "object %s: wrong size in '%s'", hex,
				     p->name);
		goto done;
	}
	if (k->fd >= 0 && ftruncate(k->fd, (off_t)k->total) < 0) {
		r = decree_error_os("cannot write '%s'", k->name);
		goto done;
	}
	sha256_final(k->h, &check);
	if (oid_cmp(&check, &e->id))
		r = decree_error_set(
			DECREE_ECORRUPT,
			"object %s is corrupt (hash mismatch in '%s')", hex,
			p->name);
done:
	ZSTD_freeDCtx(dc);
	decree_free(in);
	decree_free(outb);
	return r;
}

int odb_read_to_fd(odb *db, const oid *id, int fd, const char *name)
{
	char hex[SHA256_HEXLEN + 1], first[512];
	bool damaged = false;
	sha256_ctx *h = sha256_new();
	int r = 0;

	if (!h)
		return -1;
	for (size_t i = db->npacks; i-- > 0;) {
		const unsigned char *raw = pack_find(&db->packs[i], id);
		stream_sink k = { h, fd, name, 0 };
		idx_entry e;
		if (!raw)
			continue;
		entry_decode(&e, raw);
		if (fd >= 0 && damaged &&
		    (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)) {
			r = decree_error_os("cannot write '%s'", name);
			goto done;
		}
		sha256_final(h, &(oid){ { 0 } }); /* reset */
		r = stream_copy(&db->packs[i], &e, &k);
		if (r == 0) {
			error_clear(); /* an earlier damaged copy */
			goto done;
		}
		if (r != DECREE_ECORRUPT)
			goto done;
		if (!damaged)
			snprintf(first, sizeof(first), "%s", error_last());
		damaged = true;
	}
	if (damaged) {
		r = decree_error_set(DECREE_ECORRUPT, "%s", first);
	} else {
		oid_to_hex(hex, id);
		r = not_found(db, hex);
	}
done:
	sha256_free(h);
	return r;
}

int odb_read(buf *out, int *type_out, odb *db, const oid *id)
{
	char hex[SHA256_HEXLEN + 1], first[512];
	bool damaged = false;

	/* every copy, newest pack first, until one verifies */
	for (size_t i = db->npacks; i-- > 0;) {
		const unsigned char *raw = pack_find(&db->packs[i], id);
		idx_entry e;
		int r;
		if (!raw)
			continue;
		entry_decode(&e, raw);
		r = read_copy(out, db, &db->packs[i], &e);
		if (r == 0) {
			if (type_out)
				*type_out = e.type;
			error_clear(); /* an earlier damaged copy */
			return 0;
		}
		if (r != DECREE_ECORRUPT)
			return r;
		if (!damaged)
			snprintf(first, sizeof(first), "%s", error_last());
		damaged = true;
	}
	if (damaged)
		return decree_error_set(DECREE_ECORRUPT, "%s", first);
	oid_to_hex(hex, id);
	return not_found(db, hex);
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

/* --- verification and trust --------------------------------------------- */

static void report(odb_damage_fn fn, void *payload, const char *what,
		   const char *msg)
{
	if (fn)
		fn(payload, what, msg);
}

/*
 * Verify pack p in full: its header, its index checksum and order, every
 * object re-hashed.  Sets p->trust to TRUST_VERIFIED or TRUST_DAMAGED
 * (with p->bad and p->damage) and reports each problem through fn.
 * Fails only on I/O errors and out-of-memory (trust stays unknown).
 * Caller holds db->tmu.
 */
static int verify_pack(odb *db, pack *p, odb_damage_fn fn, void *payload)
{
	char what[PATH_MAX], hex[SHA256_HEXLEN + 1];
	unsigned char hdr[PACK_HDR];
	const unsigned char *prev = NULL;
	buf data = BUF_INIT;
	bool damaged = false;
	ssize_t n;
	oid sum;
	int r = 0;

	oidset_release(&p->bad);
	decree_free(p->damage);
	p->damage = NULL;
	snprintf(what, sizeof(what), "%s/%s.pack", db->dir, p->name);
	n = pread(p->fd, hdr, sizeof(hdr), 0);
	if (n < 0)
		return decree_error_os("cannot read '%s'", what);
	if (n != PACK_HDR || memcmp(hdr, PACK_MAGIC, 8) ||
	    get_u32le(hdr + 8) != FORMAT_VERSION || get_u32le(hdr + 12)) {
		p->damage = decree_strdup("bad pack header (magic, version)");
		report(fn, payload, what,
		       n != PACK_HDR ? "pack is truncated before its header"
				     : "bad pack header (not DECRPACK "
				       "version 1)");
		damaged = true;
	}
	snprintf(what, sizeof(what), "%s/%s.idx", db->dir, p->name);
	sha256_buf(&sum, p->map, p->map_len - SHA256_LEN);
	if (memcmp(sum.b, p->map + p->map_len - SHA256_LEN, SHA256_LEN)) {
		if (!p->damage)
			p->damage = decree_strdup("index checksum mismatch");
		report(fn, payload, what, "index checksum mismatch");
		damaged = true;
	}
	for (uint64_t k = 0; k < p->count; k++) {
		const unsigned char *e = idx_entries(p) + k * IDX_ENTRY;
		if (prev && memcmp(prev, e, SHA256_LEN) >= 0) {
			if (!p->damage)
				p->damage = decree_strdup(
					"index entries out of order");
			report(fn, payload, what, "index entries out of order");
			damaged = true;
			break;
		}
		prev = e;
	}
	for (uint64_t k = 0; k < p->count; k++) {
		idx_entry e;
		entry_decode(&e, idx_entries(p) + k * IDX_ENTRY);
		if (e.raw_len >= ODB_STREAM_MIN) {
			/* a big object is never held in memory */
			sha256_ctx *h = sha256_new();
			stream_sink sk = { h, -1, NULL, 0 };
			r = h ? stream_copy(p, &e, &sk) : -1;
			sha256_free(h);
		} else {
			r = read_copy(&data, db, p, &e);
		}
		if (r == DECREE_ECORRUPT) {
			oid_to_hex(hex, &e.id);
			report(fn, payload, hex, error_last());
			error_clear();
			damaged = true;
			if ((r = oidset_add(&p->bad, &e.id, NULL)) < 0)
				break;
		} else if (r < 0) {
			break;
		}
	}
	buf_release(&data);
	if (r < 0) {
		__atomic_store_n(&p->trust, TRUST_UNKNOWN, __ATOMIC_RELEASE);
		return r;
	}
	if (!damaged)
		db->seals_dirty = true;
	__atomic_store_n(&p->trust, damaged ? TRUST_DAMAGED : TRUST_VERIFIED,
			 __ATOMIC_RELEASE);
	return 0;
}

/* The trust of pack p, verifying it first if it is unknown. */
static int pack_trust(odb *db, pack *p)
{
	int t = __atomic_load_n(&p->trust, __ATOMIC_ACQUIRE), r = 0;

	if (t != TRUST_UNKNOWN)
		return t;
	pthread_mutex_lock(&db->tmu);
	if (__atomic_load_n(&p->trust, __ATOMIC_ACQUIRE) == TRUST_UNKNOWN)
		r = verify_pack(db, p, NULL, NULL);
	pthread_mutex_unlock(&db->tmu);
	return r < 0 ? r : __atomic_load_n(&p->trust, __ATOMIC_ACQUIRE);
}

/* Is the copy of `id` in pack p intact?  Verifies p first if needed. */
static int copy_trusted(odb *db, pack *p, const oid *id)
{
	int t = pack_trust(db, p);

	if (t < 0)
		return t;
	return t != TRUST_DAMAGED || !oidset_has(&p->bad, id);
}

int odb_check(odb *db, const oid *id)
{
	for (size_t i = db->npacks; i-- > 0;) {
		int r;
		if (!pack_find(&db->packs[i], id))
			continue;
		if ((r = copy_trusted(db, &db->packs[i], id)) != 0)
			return r;
	}
	return 0;
}

bool odb_all_trusted(odb *db)
{
	if (db->nbroken || db->seal_vanished)
		return false;
	for (size_t i = 0; i < db->npacks; i++) {
		int t = __atomic_load_n(&db->packs[i].trust, __ATOMIC_ACQUIRE);
		if (t != TRUST_SEALED && t != TRUST_VERIFIED)
			return false;
	}
	return true;
}

int odb_verify(odb *db, odb_damage_fn fn, void *payload)
{
	return odb_verify_progress(db, fn, payload, NULL, NULL);
}

int odb_verify_progress(odb *db, odb_damage_fn fn, void *payload,
			decree_progress_fn progress, void *progress_payload)
{
	decree_progress pr;
	int damaged = 0, r;

	memset(&pr, 0, sizeof(pr));
	pr.stage = DECREE_PROGRESS_VERIFY;
	pr.total_known = true;
	for (size_t i = 0; i < db->npacks; i++)
		pr.files_total += db->packs[i].count;
	if (progress)
		progress(progress_payload, &pr);

	for (size_t i = 0; i < db->nbroken; i++) {
		char what[PATH_MAX];
		snprintf(what, sizeof(what), "%s/%s.idx", db->dir,
			 db->broken[i].name);
		report(fn, payload, what, db->broken[i].why);
		damaged++;
	}
	for (size_t i = 0; i < db->npacks; i++) {
		pack *p = &db->packs[i];
		pthread_mutex_lock(&db->tmu);
		r = verify_pack(db, p, fn, payload);
		pthread_mutex_unlock(&db->tmu);
		if (r < 0)
			return r;
		damaged += p->trust == TRUST_DAMAGED;
		pr.files += p->count;
		if (progress)
			progress(progress_payload, &pr);
	}
	return damaged;
}

void odb_seal(odb *db)
{
	if (db->seals_dirty || db->seal_vanished)
		seals_save(db);
}

size_t odb_broken_count(const odb *db)
{
	return db->nbroken;
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

int odb_writer_check(odb_writer *w, const oid *id)
{
	return odb_check(w->db, id);
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
	if (w->only && !oidset_has(w->only, &id))
		return 0;
	/* an object is written again unless an intact copy exists */
	if ((r = odb_check(w->db, &id)) != 0)
		return r < 0 ? r : 0;
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

/*
 * The streaming add: `size` bytes of fd, from its current offset, go
 * into the pack as one zstd frame (its content size pledged, as every
 * frame decree writes states it) or raw with compression off, in chunks,
 * under the writer's lock (other threads wait for a big file; the pack
 * is one sequential file).  The entry header is written last, with the id
 * hashed on the way.  `known`: the id a first pass hashed; the object is
 * not written when an intact copy of it exists.  If the bytes changed
 * since that pass, the new id is returned (and the copy kept unless that
 * id is stored already).
 */
int odb_writer_add_fd(odb_writer *w, int type, int fd, uint64_t size,
		      const oid *known, oid *id_out, const char *name)
{
	unsigned char hdr[ENTRY_HDR];
	unsigned char *in = NULL, *zb = NULL;
	size_t zcap = ZSTD_CStreamOutSize();
	ZSTD_CCtx *cc = NULL;
	sha256_ctx *h = NULL;
	uint64_t start = 0, stored = 0, got = 0;
	int comp = odb_zstd_level != 0 ? COMP_ZSTD : COMP_NONE, r;
	bool locked = false, added, keep = true;
	oid id = *known;

	*id_out = *known;
	if (w->only && !oidset_has(w->only, known))
		return 0;
	if ((r = odb_check(w->db, known)) != 0)
		return r < 0 ? r : 0;
	if (!(in = decree_malloc(STREAM_CHUNK)) ||
	    !(zb = decree_malloc(zcap)) || !(h = sha256_new())) {
		r = -1;
		goto done;
	}
	if (comp == COMP_ZSTD &&
	    (!(cc = ZSTD_createCCtx()) ||
	     ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
						 odb_zstd_level)) ||
	     ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cc, size)))) {
		r = decree_error_set(DECREE_ERROR, "out of memory");
		goto done;
	}
	pthread_mutex_lock(&w->mu);
	locked = true;
	if (w->failed) {
		r = decree_error_set(DECREE_ERROR, "%s", w->errmsg);
		goto done;
	}
	if (oidset_has(&w->seen, known)) {
		r = 0;
		goto done;
	}
	if ((w->fd < 0 && (r = writer_open(w)) < 0) ||
	    (r = writer_flush(w)) < 0)
		goto fail;
	start = w->offset;
	memset(hdr, 0, sizeof(hdr));
	if (fs_write_all(w->fd, hdr, ENTRY_HDR) < 0) {
		r = decree_error_os("cannot write '%s'", w->tmp_path);
		goto fail;
	}
	while (got < size || comp == COMP_ZSTD) {
		size_t want = size - got < STREAM_CHUNK ? (size_t)(size - got)
							: STREAM_CHUNK;
		ssize_t n = want ? fs_read_all(fd, in, want) : 0;
		ZSTD_inBuffer ib = { in, 0, 0 };
		size_t z;
		if (n < 0) {
			r = decree_error_os("cannot read '%s'", name);
			goto fail;
		}
		if ((size_t)n != want) {
			r = decree_error_set(DECREE_ERROR,
					     "'%s' shrank while it was read",
					     name);
			goto fail;
		}
		sha256_update(h, in, want);
		got += want;
		if (comp == COMP_NONE) {
			if (fs_write_all(w->fd, in, want) < 0) {
				r = decree_error_os("cannot write '%s'",
						    w->tmp_path);
				goto fail;
			}
			stored += want;
			continue;
		}
		ib.size = want;
		do {
			ZSTD_outBuffer ob = { zb, zcap, 0 };
			z = ZSTD_compressStream2(cc, &ob, &ib,
						 got == size ? ZSTD_e_end
							     : ZSTD_e_continue);
			if (ZSTD_isError(z)) {
				r = decree_error_set(DECREE_ERROR,
						     "cannot compress '%s': %s",
						     name,
						     ZSTD_getErrorName(z));
				goto fail;
			}
			if (fs_write_all(w->fd, zb, ob.pos) < 0) {
				r = decree_error_os("cannot write '%s'",
						    w->tmp_path);
				goto fail;
			}
			stored += ob.pos;
		} while (got == size ? z != 0 : ib.pos < ib.size);
		if (got == size)
			break;
	}
	sha256_final(h, &id);
	*id_out = id;
	if (oid_cmp(&id, known)) {
		/* changed since the first pass: this is what we read */
		if ((r = oidset_has(&w->seen, &id) ? 1
						   : odb_check(w->db, &id)) < 0)
			goto fail;
		keep = r == 0;
	}
	if (!keep) {
		if (ftruncate(w->fd, (off_t)start) < 0 ||
		    lseek(w->fd, (off_t)start, SEEK_SET) < 0) {
			r = decree_error_os("cannot write '%s'", w->tmp_path);
			goto fail;
		}
		r = 0;
		goto done;
	}
	memcpy(hdr, id.b, SHA256_LEN);
	hdr[32] = (unsigned char)type;
	hdr[33] = (unsigned char)comp;
	put_u64le(hdr + 40, size);
	put_u64le(hdr + 48, stored);
	if (pwrite(w->fd, hdr, ENTRY_HDR, (off_t)start) != ENTRY_HDR) {
		r = decree_error_os("cannot write '%s'", w->tmp_path);
		goto fail;
	}
	if (GROW(w->ents, w->cap, w->nents + 1) < 0 ||
	    (r = oidset_add(&w->seen, &id, &added)) < 0) {
		r = -1;
		goto fail;
	}
	{
		idx_entry *e = &w->ents[w->nents++];
		e->id = id;
		e->offset = start;
		e->raw_len = size;
		e->stored_len = stored;
		e->type = (unsigned char)type;
		e->comp = (unsigned char)comp;
	}
	w->offset = start + ENTRY_HDR + stored;
	r = 0;
	goto done;
fail:
	/* the pack's end is unknown now: the writer is done for */
	if (!w->failed) {
		w->failed = true;
		snprintf(w->errmsg, sizeof(w->errmsg), "%s", error_last());
	}
done:
	if (locked)
		pthread_mutex_unlock(&w->mu);
	ZSTD_freeCCtx(cc);
	sha256_free(h);
	decree_free(in);
	decree_free(zb);
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
	if (w->nents == 0 || w->committed) {
		odb_seal(w->db); /* what the writer's checks verified */
		return 0;
	}
	if ((r = writer_flush(w)) < 0 || (r = fs_fsync(w->fd, w->tmp_path)) < 0)
		goto done;
	if ((r = build_index(&idx, w->ents, w->nents)) < 0)
		goto done;
	sha256_buf(&sum, idx.ptr, idx.len);
	oid_to_hex(hex, &sum);
	snprintf(name, sizeof(name), "pack-%.40s", hex);
	/* (a pack rewritten with the same objects at the same offsets gets
	 * the name it had: callers must not delete it afterwards) */
	snprintf(w->name, sizeof(w->name), "%s", name);
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
	/* every byte of it was hashed by whoever handed it over (or copied
	 * from a verified pack): seal it */
	w->db->packs[w->db->npacks].trust = TRUST_VERIFIED;
	w->db->seals_dirty = true;
	w->db->npacks++;
	seals_save(w->db);
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

void odb_writer_restrict(odb_writer *w, const oidset *only)
{
	w->only = only;
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

/*
 * Delete a pack whose objects are durable elsewhere: the .idx first (that
 * makes it invisible), and the .pack only when the .idx is gone, so that a
 * failure never leaves an index without its data (a broken pack).  A
 * failure is a note in the warning slot, not an error: the objects were
 * copied, the pack only takes space (and a .pack left without .idx is an
 * orphan the next gc removes).
 */
static void remove_pack_files(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
	if (unlink(path) < 0 && errno != ENOENT) {
		warning_set(0,
			    "cannot delete the old pack '%s' (%s); its objects "
			    "are kept, the next gc tries again",
			    path, strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/%s.pack", dir, name);
	if (unlink(path) < 0 && errno != ENOENT)
		warning_set(0,
			    "cannot delete '%s' (%s); the next gc tries again",
			    path, strerror(errno));
}

/* Sync the deletions of old packs: a failure is a note, not an error
 * (an old pack that comes back after a crash only holds copies). */
static void sync_deletions(const char *dir)
{
	if (fs_fsync_dir_path(dir) < 0) {
		warning_set(0,
			    "the old packs are deleted, but %s; they may come "
			    "back after a crash (harmless: the next gc deletes "
			    "them)",
			    error_last());
		error_clear();
	}
}

/* The temp files of pack writers: "tmp-<16 hex>.pack" (a pack being
 * written), "tmp-sealed-*" (packs/sealed) and ".pack-<40 hex>.idx.tmp-*"
 * (an index, fs_write_atomic_at). */
static bool is_temp_name(const char *name)
{
	return !strncmp(name, "tmp-", 4) || !strncmp(name, ".pack-", 6);
}

void odb_sweep_temps(odb *db)
{
	DIR *d = opendir(db->dir);
	struct dirent *de;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!is_temp_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", db->dir, de->d_name);
		unlink(path);
	}
	closedir(d);
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
		if (is_temp_name(de->d_name)) {
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

/*
 * Copy the objects of the packs marked in `rewrite` that are in `keep`
 * (NULL: all) into one new pack, make it durable, then delete the marked
 * packs.  An object also held by an unmarked pack is not copied.
 */
static int rewrite_packs(odb *db, const bool *rewrite, const oidset *keep)
{
	odb_writer *w = NULL;
	buf tmp = BUF_INIT;
	oidset copied = OIDSET_INIT;
	size_t nold = db->npacks;
	int r;

	/* copies are sealed as written: copy only from packs known intact
	 * (damage is for fsck --repair to deal with, never carried on) */
	for (size_t i = 0; i < nold; i++) {
		pack *p = &db->packs[i];
		if (!rewrite[i])
			continue;
		if ((r = pack_trust(db, p)) < 0)
			return r;
		if (r == TRUST_DAMAGED)
			return decree_error_set(
				DECREE_ECORRUPT,
				"pack '%s' is damaged (%s); nothing was deleted",
				p->name,
				p->damage ? p->damage
					  : "objects fail to verify");
	}
	if ((r = odb_writer_new(&w, db)) < 0)
		return r;
	for (size_t i = 0; i < nold; i++) {
		const pack *p = &db->packs[i];
		if (!rewrite[i])
			continue;
		for (uint64_t k = 0; k < p->count; k++) {
			idx_entry e;
			bool added, elsewhere = false;
			entry_decode(&e, idx_entries(p) + k * IDX_ENTRY);
			if (keep && !oidset_has(keep, &e.id))
				continue;
			if ((r = oidset_add(&copied, &e.id, &added)) < 0)
				goto done;
			if (!added)
				continue;
			/* a kept copy stands in only if it is intact: never
			 * drop the good copy for a damaged one */
			for (size_t j = 0; j < nold && !elsewhere; j++) {
				if (rewrite[j] ||
				    !pack_find(&db->packs[j], &e.id))
					continue;
				if ((r = copy_trusted(db, &db->packs[j],
						      &e.id)) < 0)
					goto done;
				elsewhere = r;
			}
			if (elsewhere)
				continue;
			/* stored bytes are copied as they are: no recompression
			 */
			if ((r = read_stored(&tmp, p, &e)) < 0 ||
			    (r = writer_append(w, &e.id, e.type, e.comp,
					       e.raw_len, tmp.ptr, tmp.len)) <
				    0)
				goto done;
		}
	}
	/* packs/sealed, written by the commit, must not name them */
	for (size_t i = 0; i < nold; i++)
		if (rewrite[i])
			db->packs[i].trust = TRUST_UNKNOWN;
	if ((r = odb_writer_commit(w)) < 0)
		goto done;
	/* The new pack is durable: the old ones may go. */
	for (size_t i = 0; i < nold; i++)
		if (rewrite[i] && strcmp(db->packs[i].name, w->name))
			remove_pack_files(db->dir, db->packs[i].name);
	sync_deletions(db->dir);
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
	/* objects of a pack whose index is damaged are invisible: whatever
	 * is decided without them may be wrong */
	if (db->nbroken)
		return decree_error_set(DECREE_ECORRUPT,
					"%s; nothing was deleted",
					db->broken[0].why);
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
			/* a damaged pack stays as it is, for fsck */
			int t = pack_trust(db, &db->packs[i]);
			if (t < 0) {
				r = t;
				break;
			}
			if (t == TRUST_DAMAGED)
				continue;
			rewrite[i] = true;
			nsmall++;
		}
	}
	if (r == 0 && nsmall > 1)
		r = rewrite_packs(db, rewrite, NULL);
	decree_free(rewrite);
	return r;
}

/* --- salvage (fsck --repair) -------------------------------------------- */

/* Is there an intact copy of `id` outside the packs being salvaged? */
static bool intact_elsewhere(odb *db, const oid *id)
{
	for (size_t i = 0; i < db->npacks; i++) {
		int t = db->packs[i].trust;
		if ((t == TRUST_SEALED || t == TRUST_VERIFIED) &&
		    pack_find(&db->packs[i], id))
			return true;
	}
	return false;
}

/* Copy one candidate entry of pack p into w if it verifies and is needed
 * (`done`: the ids tried so far).  *kept counts copies made, *lost the
 * damaged copies left behind. */
static int salvage_one(odb *db, odb_writer *w, const pack *p,
		       const idx_entry *e, oidset *done, size_t *kept,
		       size_t *lost)
{
	buf data = BUF_INIT, stored = BUF_INIT;
	bool added;
	int r;

	if ((r = oidset_add(done, &e->id, &added)) < 0 || !added)
		return r; /* tried already (through the index, say) */
	if (intact_elsewhere(db, &e->id)) {
		*lost += p->map && oidset_has(&p->bad, &e->id);
		return 0;
	}
	r = read_copy(&data, db, p, e);
	if (r == DECREE_ECORRUPT) {
		error_clear();
		(*lost)++;
		r = 0;
		goto done;
	}
	if (r < 0)
		goto done;
	/* stored bytes are copied as they are (they just verified) */
	if ((r = read_stored(&stored, p, e)) < 0 ||
	    (r = writer_append(w, &e->id, e->type, e->comp, e->raw_len,
			       stored.ptr, stored.len)) < 0)
		goto done;
	(*kept)++;
done:
	buf_release(&data);
	buf_release(&stored);
	return r;
}

/* Every entry found by walking the .pack from its first entry, up to the
 * first header that cannot be one. */
static int salvage_walk(odb *db, odb_writer *w, const pack *p, oidset *done,
			size_t *kept, size_t *lost)
{
	struct stat st;
	uint64_t off = PACK_HDR;
	int r = 0;

	if (fstat(p->fd, &st) < 0)
		return decree_error_os("cannot stat '%s'", p->name);
	while (r == 0 && off + ENTRY_HDR <= (uint64_t)st.st_size) {
		unsigned char h[ENTRY_HDR];
		idx_entry e;
		if (pread(p->fd, h, sizeof(h), (off_t)off) != ENTRY_HDR)
			break;
		memcpy(e.id.b, h, SHA256_LEN);
		e.type = h[32];
		e.comp = h[33];
		e.raw_len = get_u64le(h + 40);
		e.stored_len = get_u64le(h + 48);
		e.offset = off;
		if ((e.type != ODB_BLOB && e.type != ODB_TREE) ||
		    e.comp > COMP_ZSTD ||
		    e.stored_len > (uint64_t)st.st_size - off - ENTRY_HDR)
			break;
		r = salvage_one(db, w, p, &e, done, kept, lost);
		off += ENTRY_HDR + e.stored_len;
	}
	return r;
}

int odb_salvage(odb *db, odb_damage_fn fn, void *payload)
{
	odb_writer *w = NULL;
	oidset done = OIDSET_INIT;
	char **gone = NULL; /* names of the packs to delete */
	size_t ngone = 0, cap = 0;
	char path[PATH_MAX], msg[256];
	DIR *d;
	struct dirent *de;
	int r;

	if ((r = odb_writer_new(&w, db)) < 0)
		return r;
	/* damaged packs: through their index, then by walking them */
	for (size_t i = 0; i < db->npacks; i++) {
		pack *p = &db->packs[i];
		size_t kept = 0, lost = 0;
		int t = pack_trust(db, p);
		if (t < 0) {
			r = t;
			goto done;
		}
		if (t != TRUST_DAMAGED)
			continue;
		for (uint64_t k = 0; r == 0 && k < p->count; k++) {
			idx_entry e;
			entry_decode(&e, idx_entries(p) + k * IDX_ENTRY);
			r = salvage_one(db, w, p, &e, &done, &kept, &lost);
		}
		if (r < 0 ||
		    (r = salvage_walk(db, w, p, &done, &kept, &lost)) < 0)
			goto done;
		if ((r = GROW(gone, cap, ngone + 1)) < 0 ||
		    !(gone[ngone] = decree_strdup(p->name))) {
			r = -1;
			goto done;
		}
		ngone++;
		snprintf(path, sizeof(path), "%s/%s.pack", db->dir, p->name);
		snprintf(msg, sizeof(msg),
			 "rewritten: %zu intact object(s) kept, %zu damaged "
			 "copy(ies) dropped",
			 kept, lost);
		report(fn, payload, path, msg);
	}
	/* packs without a usable index: broken ones and .pack files whose
	 * .idx is gone */
	if (!(d = opendir(db->dir))) {
		r = decree_error_os("cannot open '%s'", db->dir);
		goto done;
	}
	while (r == 0 && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name), kept = 0, lost = 0;
		bool listed = false;
		struct stat st;
		pack p;
		if (len < 10 || strncmp(de->d_name, "pack-", 5) ||
		    strcmp(de->d_name + len - 5, ".pack"))
			continue;
		for (size_t i = 0; i < db->npacks && !listed; i++)
			listed = strlen(db->packs[i].name) == len - 5 &&
				 !strncmp(db->packs[i].name, de->d_name,
					  len - 5);
		if (listed)
			continue;
		memset(&p, 0, sizeof(p));
		snprintf(path, sizeof(path), "%s/%s", db->dir, de->d_name);
		if ((p.fd = open_regular(path, &st)) < 0)
			continue; /* nothing to read: only deleted below */
		file_id_of(&p.pack_id, &st); /* its size bounds every read */
		p.name = de->d_name;
		r = salvage_walk(db, w, &p, &done, &kept, &lost);
		close(p.fd);
		if (r < 0)
			break;
		if ((r = GROW(gone, cap, ngone + 1)) < 0 ||
		    !(gone[ngone] = decree_strndup(de->d_name, len - 5))) {
			r = -1;
			break;
		}
		ngone++;
		snprintf(msg, sizeof(msg),
			 "its index is damaged or missing; rewritten: %zu "
			 "intact object(s) kept, %zu damaged copy(ies) dropped",
			 kept, lost);
		report(fn, payload, path, msg);
	}
	closedir(d);
	if (r < 0)
		goto done;
	/* the copies are durable before anything is deleted */
	for (size_t i = 0; i < db->npacks; i++)
		for (size_t k = 0; k < ngone; k++)
			if (!strcmp(db->packs[i].name, gone[k]))
				db->packs[i].trust = TRUST_UNKNOWN;
	if ((r = odb_writer_commit(w)) < 0)
		goto done;
	for (size_t k = 0; k < ngone; k++)
		if (strcmp(gone[k], w->name)) /* not the new one itself */
			remove_pack_files(db->dir, gone[k]);
	if (ngone)
		sync_deletions(db->dir);
	if ((r = odb_refresh(db)) == 0)
		odb_seal(db);
done:
	for (size_t k = 0; k < ngone; k++)
		decree_free(gone[k]);
	decree_free(gone);
	oidset_release(&done);
	odb_writer_free(w);
	return r < 0 ? r : (int)ngone;
}
