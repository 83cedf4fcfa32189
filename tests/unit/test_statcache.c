/*
 * test_statcache.c - the persistent stat cache, format version 2.
 *
 * Checked against the layout and rules of statcache.{c,h} (head comments)
 * and docs/format.md:
 *
 *   - the bytes statcache_save and statcache_update write, field by field:
 *     a hand encoder in this file builds the expected file;
 *   - the racy rule at its exact boundary: a file fact hits only when its
 *     mtime < scan_ns - 1 s, a directory listing is trusted only when the
 *     directory's ctime < scan_ns - 1 s.  The tests move scan_ns by
 *     rewriting the header (offset 8) and its check instead of racing the
 *     clock;
 *   - what a listing needs: the directory's mtime, ctime, inode and device
 *     all equal and the record's "stat known" flag;
 *   - damage: no flipped byte or cut ever gives a wrong hit, a bad record
 *     is absent while the other records still serve, a bad header or
 *     index empties the table, and well-sealed records with bad contents
 *     are refused; statcache_verify (fsck) says which, for v2 and v1;
 *   - the update policy on a real tree scanned with scan_tree: nothing
 *     written when nothing changed, a delta for few changes (up to 1/16
 *     of the names, exactly at the boundary), a new base for more, a delta
 *     record overriding the base's for its directory, and a damaged delta
 *     falling back to the base's (self-consistent) facts.
 *
 * To seal records around bad contents the test uses statcache_check64(),
 * the library's record and header check.  If the layout changes,
 * test_format fails first and says where.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "scan/scan.h"
#include "scan/statcache.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/snap.h"

#include <dirent.h>

#define SEC 1000000000LL

/* The version 2 layout (statcache.c head comment). */
#define V1_HDR	   24
#define V2_HDR	   32
#define V2_REC_HDR 44
#define V2_ENT	   84
#define V2_CHECK   8
#define V2_STAT_OK 1

#define OK(x) assert_int_equal((x), 0)

typedef testutil_fixture fixture;

static int setup(void **state)
{
	return testutil_scratch_setup(state, "sc", "statcache");
}

static int teardown(void **state)
{
	return testutil_scratch_teardown(state);
}

/* --- snaps and files ------------------------------------------------------ */

static snap_entry *add(snap *s, const char *path, uint32_t mode, uint64_t size,
		       int64_t mtime_ns, unsigned tag)
{
	snap_entry *e = snap_add(s, path, strlen(path));

	assert_non_null(e);
	e->mode = mode;
	e->size = size;
	memset(e->id.b, (int)tag, SHA256_LEN);
	e->mtime_ns = mtime_ns;
	e->ctime_ns = mtime_ns + 17;
	e->ino = 1000 + tag;
	e->dev = 2049;
	return e;
}

/* What the format says is cached: files and symlinks with stat data and
 * a known id (the test's own statement of the rule). */
static bool is_cacheable(const snap_entry *e)
{
	return ((e->mode & ~MODE_PERM) == MODE_REG || e->mode == MODE_LINK) &&
	       e->mtime_ns != 0 && !e->unhashed;
}

/* A new inode each time: truncating in place makes ext4 flush on close. */
static void write_raw(const char *path, const void *data, size_t len)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, data, len), 0);
	close(fd);
}

static void read_raw(const char *path, buf *b)
{
	buf_clear(b);
	if (fs_read_path(path, b) < 0)
		fail_msg("cannot read '%s': %s", path, decree_error_last());
}

static int64_t get_scan_ns(const char *path)
{
	buf b = BUF_INIT;
	int64_t v;

	read_raw(path, &b);
	assert_true(b.len >= V2_HDR);
	v = (int64_t)get_u64le((const unsigned char *)b.ptr + 8);
	buf_release(&b);
	return v;
}

static void reseal_header(buf *b);

/* Rewrite the header's scan_ns (and its check). */
static void set_scan_ns(const char *path, int64_t ns)
{
	buf b = BUF_INIT;

	read_raw(path, &b);
	assert_true(b.len >= V2_HDR);
	assert_memory_equal(b.ptr, "DSTC\2\0\0\0", 8);
	put_u64le((unsigned char *)b.ptr + 8, (uint64_t)ns);
	reseal_header(&b);
	write_raw(path, b.ptr, b.len);
	buf_release(&b);
}

/* The record offsets of a well-formed v2 file (the test's own parse). */
static size_t rec_offsets(const buf *b, size_t *off, size_t max)
{
	const unsigned char *p = (const unsigned char *)b->ptr;
	size_t n = (size_t)get_u64le(p + 16), at = V2_HDR;

	assert_true(n <= max);
	for (size_t k = 0; k < n; k++) {
		off[k] = at;
		at += get_u32le(p + at);
	}
	assert_int_equal(at, b->len);
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The directory paths of the records of the file at path, sorted and
 * joined by ',' ("" for the root) into out. */
static void file_dirs(const char *path, char *out, size_t cap)
{
	buf b = BUF_INIT;
	size_t off[64], n;
	char *names[64];

	read_raw(path, &b);
	n = rec_offsets(&b, off, ARRAY_SIZE(off));
	for (size_t k = 0; k < n; k++) {
		const unsigned char *r = (const unsigned char *)b.ptr + off[k];
		names[k] =
			strndup((const char *)r + V2_REC_HDR, get_u16le(r + 8));
		assert_non_null(names[k]);
	}
	qsort(names, n, sizeof(names[0]), cmp_str);
	out[0] = '\0';
	for (size_t k = 0; k < n; k++) {
		size_t l = strlen(out);
		snprintf(out + l, cap - l, "%s%s", k ? "," : "", names[k]);
		free(names[k]);
	}
	buf_release(&b);
}

/* Identity of a file: a rewrite (temp file + rename) changes it. */
typedef struct {
	bool exists;
	uint64_t ino;
	int64_t mtime, ctime;
} file_id;

static file_id id_of(const char *path)
{
	struct stat st;
	file_id r;

	memset(&r, 0, sizeof(r));
	if (stat(path, &st) == 0) {
		r.exists = true;
		r.ino = st.st_ino;
		r.mtime = st_mtime_ns(&st);
		r.ctime = st_ctime_ns(&st);
	} else {
		assert_int_equal(errno, ENOENT);
	}
	return r;
}

static void assert_same_file(file_id a, file_id b, const char *what)
{
	if (a.exists != b.exists || a.ino != b.ino || a.mtime != b.mtime ||
	    a.ctime != b.ctime)
		fail_msg("%s was written (exists %d->%d, inode %llu->%llu)",
			 what, a.exists, b.exists, (unsigned long long)a.ino,
			 (unsigned long long)b.ino);
}

/* --- directories: notes (the library's writer) and a hand encoder -------- */

/* A directory as the tests describe it.  ls: its listing in the order to
 * write, each "T:name" with T one of f (DT_REG), d (DT_DIR), l (DT_LNK);
 * NULL-terminated. */
typedef struct {
	const char *path;
	bool stat_ok;
	int64_t mtime, ctime;
	uint64_t ino, dev;
	const char *ls[8];
} tdir;

static unsigned char type_of(const char *spec)
{
	switch (spec[0]) {
	case 'd':
		return DT_DIR;
	case 'l':
		return DT_LNK;
	default:
		return DT_REG;
	}
}

static size_t ls_count(const tdir *d)
{
	size_t n = 0;
	while (n < ARRAY_SIZE(d->ls) && d->ls[n])
		n++;
	return n;
}

/* The snap entry of name `name` of directory d, or NULL. */
static const snap_entry *entry_of(const snap *s, const tdir *d,
				  const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s%s", d->path, d->path[0] ? "/" : "", name);
	return snap_find(s, p);
}

static struct stat dir_stat(const tdir *d)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR | 0755;
	st.st_mtim.tv_sec = (time_t)(d->mtime / SEC);
	st.st_mtim.tv_nsec = (long)(d->mtime % SEC);
	st.st_ctim.tv_sec = (time_t)(d->ctime / SEC);
	st.st_ctim.tv_nsec = (long)(d->ctime % SEC);
	st.st_ino = (ino_t)d->ino;
	st.st_dev = (dev_t)d->dev;
	return st;
}

/* Hand the listing of d to c as a scan would (statcache_note_dir): read
 * from table src (0: none), clean or not.  idx0: when not NULL, the entry
 * name 0 is said to be (a note that does not describe s). */
static void note_ex(statcache *c, const snap *s, const tdir *d, int src,
		    bool clean, const snap_entry *idx0)
{
	statcache_note n;
	size_t cnt = ls_count(d);

	memset(&n, 0, sizeof(n));
	n.path = decree_strdup(d->path);
	n.names = decree_calloc(cnt ? cnt : 1, sizeof(*n.names));
	assert_non_null(n.path);
	assert_non_null(n.names);
	n.n = cnt;
	for (size_t i = 0; i < cnt; i++) {
		const snap_entry *e = entry_of(s, d, d->ls[i] + 2);
		if (i == 0 && idx0)
			e = idx0;
		n.names[i].name = d->ls[i] + 2;
		n.names[i].len = (uint16_t)strlen(d->ls[i] + 2);
		n.names[i].type = type_of(d->ls[i]);
		n.names[i].idx = e ? (uint32_t)(e - s->v) : STATCACHE_NO_ENTRY;
	}
	n.stat_ok = d->stat_ok;
	n.mtime_ns = d->mtime;
	n.ctime_ns = d->ctime;
	n.ino = d->ino;
	n.dev = d->dev;
	n.src = src;
	n.clean = clean;
	OK(statcache_note_dir(c, &n));
}

static void note(statcache *c, const snap *s, const tdir *d)
{
	note_ex(c, s, d, 0, false, NULL);
}

/* Write a new base at path from the listings dirs[] and the facts of s,
 * through the library: notes on an empty cache, then statcache_update. */
static void write_noted(const char *path, const snap *s, const tdir *dirs,
			size_t nd)
{
	char dpath[PATH_MAX + 32];
	statcache *c;

	snprintf(dpath, sizeof(dpath), "%s.delta", path);
	unlink(path);
	unlink(dpath);
	OK(statcache_load(&c, path));
	for (size_t k = 0; k < nd; k++)
		note(c, s, &dirs[k]);
	OK(statcache_update(path, s, c));
	statcache_free(c);
}

static void enc_header(buf *b, int64_t scan_ns, uint64_t ndirs)
{
	buf_clear(b);
	OK(buf_put(b, "DSTC", 4));
	OK(buf_put_u32(b, 2));
	OK(buf_put_u64(b, (uint64_t)scan_ns));
	OK(buf_put_u64(b, ndirs));
	OK(buf_put_u64(b,
		       statcache_check64((const unsigned char *)b->ptr, 24)));
}

/* Recompute the header's check (after editing scan_ns or the count). */
static void reseal_header(buf *b)
{
	put_u64le((unsigned char *)b->ptr + 24,
		  statcache_check64((const unsigned char *)b->ptr, 24));
}

/* Recompute the check of the record at offset rec (its length field as
 * it stands). */
static void reseal(buf *b, size_t rec)
{
	unsigned char *p = (unsigned char *)b->ptr + rec;
	size_t len = get_u32le(p);

	put_u64le(p + len - V2_CHECK, statcache_check64(p, len - V2_CHECK));
}

/* Append the record of d (facts from s) exactly as the format says;
 * returns its offset. */
static size_t enc_dir(buf *b, const tdir *d, const snap *s)
{
	size_t start = b->len, cnt = ls_count(d), noff = 0;
	size_t plen = strlen(d->path);

	OK(buf_put_u32(b, 0)); /* the length, set below */
	OK(buf_put_u32(b, (uint32_t)cnt));
	OK(buf_put_u16(b, (unsigned)plen));
	OK(buf_put_u8(b, d->stat_ok ? V2_STAT_OK : 0));
	OK(buf_put_u8(b, 0));
	OK(buf_put_u64(b, (uint64_t)d->mtime));
	OK(buf_put_u64(b, (uint64_t)d->ctime));
	OK(buf_put_u64(b, d->ino));
	OK(buf_put_u64(b, d->dev));
	OK(buf_put(b, d->path, plen));
	for (size_t i = 0; i < cnt; i++) {
		const char *name = d->ls[i] + 2;
		const snap_entry *e = entry_of(s, d, name);
		bool facts = e && is_cacheable(e);
		OK(buf_put_u32(b, (uint32_t)noff));
		OK(buf_put_u16(b, (unsigned)strlen(name)));
		OK(buf_put_u8(b, type_of(d->ls[i])));
		OK(buf_put_u8(b, facts));
		OK(buf_put_u32(b, facts ? e->mode : 0));
		OK(buf_put_u64(b, facts ? e->size : 0));
		OK(buf_put_u64(b, facts ? (uint64_t)e->mtime_ns : 0));
		OK(buf_put_u64(b, facts ? (uint64_t)e->ctime_ns : 0));
		OK(buf_put_u64(b, facts ? e->ino : 0));
		OK(buf_put_u64(b, facts ? e->dev : 0));
		if (facts) {
			OK(buf_put(b, e->id.b, SHA256_LEN));
		} else {
			static const unsigned char zero[SHA256_LEN];
			OK(buf_put(b, zero, SHA256_LEN));
		}
		noff += strlen(name) + 1;
	}
	for (size_t i = 0; i < cnt; i++)
		OK(buf_put(b, d->ls[i] + 2, strlen(d->ls[i] + 2) + 1));
	put_u32le((unsigned char *)b->ptr + start,
		  (uint32_t)(b->len - start + V2_CHECK));
	OK(buf_put_u64(b, 0));
	reseal(b, start);
	return start;
}

/* --- lookups -------------------------------------------------------------- */

static int lookup(statcache *c, const snap_entry *e, oid *id)
{
	memset(id, 0, sizeof(*id));
	return statcache_lookup(c, e->path, e, id);
}

static void assert_all_miss(statcache *c, const snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		oid id;
		if (lookup(c, &s->v[i], &id))
			fail_msg("unexpected hit for '%s'", s->v[i].path);
	}
}

/* Every cacheable entry of directory d hits from `src` with its id. */
static void assert_dir_hits(statcache *c, const snap *s, const tdir *d, int src,
			    const char *what)
{
	for (size_t i = 0; i < ls_count(d); i++) {
		const snap_entry *e = entry_of(s, d, d->ls[i] + 2);
		oid id;
		int r;
		if (!e)
			continue;
		r = lookup(c, e, &id);
		if (r != (is_cacheable(e) ? src : 0))
			fail_msg("%s: '%s' gave %d", what, e->path, r);
		if (r && memcmp(id.b, e->id.b, SHA256_LEN))
			fail_msg("%s: '%s' hit with a wrong id", what, e->path);
	}
}

/* The record of d is open in sd with exactly d's listing. */
static void assert_listing(const statcache_dir *sd, const tdir *d,
			   const char *what)
{
	size_t cnt = ls_count(d);

	if (!sd->rec || sd->n != cnt)
		fail_msg("%s: '%s' has %s %u names, want %zu", what, d->path,
			 sd->rec ? "a record of" : "no record,", sd->n, cnt);
	for (uint32_t i = 0; i < sd->n; i++) {
		statcache_name nm = statcache_dir_name(sd, i);
		if (strcmp(nm.name, d->ls[i] + 2) ||
		    nm.len != strlen(d->ls[i] + 2) ||
		    nm.type != type_of(d->ls[i]) ||
		    nm.idx != STATCACHE_NO_ENTRY)
			fail_msg("%s: '%s' name %u is '%s' type %u", what,
				 d->path, i, nm.name, nm.type);
	}
}

/* Does c trust d's listing, given d's own stat data? */
static bool trusted(statcache *c, const tdir *d, statcache_dir *sd)
{
	struct stat st = dir_stat(d);

	statcache_dir_open(c, sd, d->path, strlen(d->path), &st);
	return sd->listing;
}

/* --- the sample -------------------------------------------------------- */

static void sample(snap *s, int64_t mtime)
{
	add(s, "a.txt", MODE_FILE, 10, mtime, 1);
	add(s, "bin/run", MODE_EXEC, 20, mtime + 5, 2);
	add(s, "dir/link", MODE_LINK, 3, mtime + 7, 3);
	add(s, "dir/sub/deep.c", MODE_FILE, 0, mtime - 3 * SEC, 4);
	add(s, "big.iso", MODE_SKIP, 1ull << 40, mtime, 0); /* never cached */
	add(s, "nostat", MODE_FILE, 5, 0, 6);		    /* no stat data */
	add(s, "lazy.c", MODE_FILE, 7, mtime, 8)->unhashed = 1; /* no id */
	snap_sort(s);
}

/* The sample's directories with full listings (names the snap does not
 * have: subdirectories and ignored files), each some 50 s old at `now`. */
static void sample_dirs(tdir *d, int64_t now)
{
	static const tdir proto[] = {
		{ "",
		  true,
		  0,
		  0,
		  0,
		  0,
		  { "f:a.txt", "f:big.iso", "d:bin", "d:dir", "f:ignored.log",
		    "f:lazy.c", "f:nostat", NULL } },
		{ "bin", true, 0, 0, 0, 0, { "f:run", NULL } },
		{ "dir", true, 0, 0, 0, 0, { "l:link", "d:sub", NULL } },
		{ "dir/sub", true, 0, 0, 0, 0, { "f:deep.c", "f:zz", NULL } },
	};
	for (size_t k = 0; k < ARRAY_SIZE(proto); k++) {
		d[k] = proto[k];
		d[k].mtime = now - (int64_t)(50 + k) * SEC - 123;
		d[k].ctime = d[k].mtime + 456;
		d[k].ino = 500 + k;
		d[k].dev = 2049;
	}
}
#define NSAMPLE_DIRS 4

/* --- tests ---------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	int64_t old = fs_now_ns() - 100 * SEC;

	sample(&s, old);
	OK(statcache_save(f->path, &s));
	OK(statcache_load(&c, f->path));
	assert_non_null(c);
	for (size_t i = 0; i < s.n; i++) {
		const snap_entry *e = &s.v[i];
		oid id;
		int hit = lookup(c, e, &id);
		if (hit != (is_cacheable(e) ? STATCACHE_BASE : 0))
			fail_msg("'%s': lookup %d, cacheable=%d", e->path, hit,
				 is_cacheable(e));
		if (hit)
			assert_memory_equal(id.b, e->id.b, SHA256_LEN);
	}
	/* unknown paths, and prefixes of known ones, miss */
	{
		snap_entry probe = *snap_find(&s, "a.txt");
		oid id;
		assert_int_equal(statcache_lookup(c, "a.tx", &probe, &id), 0);
		assert_int_equal(statcache_lookup(c, "a.txt/", &probe, &id), 0);
		assert_int_equal(statcache_lookup(c, "zzz", &probe, &id), 0);
		assert_int_equal(statcache_lookup(c, "", &probe, &id), 0);
		assert_int_equal(statcache_lookup(c, "x/a.txt", &probe, &id),
				 0);
	}
	statcache_free(c);

	/* no temp files next to it */
	{
		char names[PATH_MAX + 32];
		snprintf(names, sizeof(names),
			 "ls -A '%s' | grep -v '^statcache$' | wc -l", f->dir);
		FILE *p = popen(names, "r");
		int n = -1;
		assert_non_null(p);
		assert_int_equal(fscanf(p, "%d", &n), 1);
		pclose(p);
		assert_int_equal(n, 0);
	}
	snap_release(&s);
}

/*
 * The bytes on disk, field by field: statcache_save's (no listings known:
 * flag 0, zero directory stat data, d_type DT_REG or DT_LNK, names with no
 * facts for skipped, stat-less and unhashed entries) and statcache_update's
 * after a scan (the listings and directory stat data noted).  Records come
 * in the byte order of their paths; scan_ns is the save time, or for an
 * update the moment the cache was loaded (the start of the scan).
 */
static void test_format(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	buf got = BUF_INIT, want = BUF_INIT;
	statcache *c;
	tdir dirs[NSAMPLE_DIRS];
	int64_t now = fs_now_ns(), t0, t1, scan_ns;
	static const tdir saved[] = {
		{ "",
		  false,
		  0,
		  0,
		  0,
		  0,
		  { "f:a.txt", "f:big.iso", "f:lazy.c", "f:nostat", NULL } },
		{ "bin", false, 0, 0, 0, 0, { "f:run", NULL } },
		{ "dir", false, 0, 0, 0, 0, { "l:link", NULL } },
		{ "dir/sub", false, 0, 0, 0, 0, { "f:deep.c", NULL } },
	};

	sample(&s, now - 100 * SEC);
	t0 = fs_now_ns();
	OK(statcache_save(f->path, &s));
	t1 = fs_now_ns();
	read_raw(f->path, &got);
	scan_ns = get_scan_ns(f->path);
	if (scan_ns < t0 || scan_ns > t1)
		fail_msg("save: scan_ns %lld outside [%lld, %lld]",
			 (long long)scan_ns, (long long)t0, (long long)t1);
	enc_header(&want, scan_ns, ARRAY_SIZE(saved));
	for (size_t k = 0; k < ARRAY_SIZE(saved); k++)
		enc_dir(&want, &saved[k], &s);
	assert_int_equal(got.len, want.len);
	for (size_t i = 0; i < got.len; i++)
		if (got.ptr[i] != want.ptr[i])
			fail_msg("save: byte %zu is %02x, the format says %02x",
				 i, (unsigned char)got.ptr[i],
				 (unsigned char)want.ptr[i]);

	/* after a scan: the listings and directory stat data */
	sample_dirs(dirs, now);
	dirs[2].stat_ok = false; /* its stat data unknown: flag 0 */
	unlink(f->path);
	t0 = fs_now_ns();
	OK(statcache_load(&c, f->path));
	t1 = fs_now_ns();
	for (size_t k = 0; k < NSAMPLE_DIRS; k++)
		note(c, &s, &dirs[k]);
	OK(statcache_update(f->path, &s, c));
	statcache_free(c);
	read_raw(f->path, &got);
	scan_ns = get_scan_ns(f->path);
	if (scan_ns < t0 || scan_ns > t1)
		fail_msg("update: scan_ns %lld is not the load time [%lld, "
			 "%lld]",
			 (long long)scan_ns, (long long)t0, (long long)t1);
	enc_header(&want, scan_ns, NSAMPLE_DIRS);
	for (size_t k = 0; k < NSAMPLE_DIRS; k++)
		enc_dir(&want, &dirs[k], &s);
	assert_int_equal(got.len, want.len);
	for (size_t i = 0; i < got.len; i++)
		if (got.ptr[i] != want.ptr[i])
			fail_msg("update: byte %zu is %02x, the format says "
				 "%02x",
				 i, (unsigned char)got.ptr[i],
				 (unsigned char)want.ptr[i]);
	assert_null(statcache_verify(got.ptr, got.len));
	buf_release(&got);
	buf_release(&want);
	snap_release(&s);
}

static void test_missing_is_empty(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	statcache_dir d;
	tdir dirs[NSAMPLE_DIRS];

	sample(&s, fs_now_ns() - 100 * SEC);
	sample_dirs(dirs, fs_now_ns());
	decree_error_clear();
	OK(statcache_load(&c, f->path)); /* does not exist */
	assert_non_null(c);
	assert_string_equal(decree_error_last(), "");
	assert_all_miss(c, &s);
	for (size_t k = 0; k < NSAMPLE_DIRS; k++) {
		assert_false(trusted(c, &dirs[k], &d));
		assert_null(d.rec);
		assert_int_equal(d.n, 0);
	}
	assert_false(statcache_unchanged(c, &s)); /* nothing noted */
	statcache_free(c);
	statcache_free(NULL);
	snap_release(&s);
}

/* A hit needs every stat field to match. */
static void test_fields_must_match(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *what;
		int field;
		int64_t delta;
	} cases[] = {
		{ "same", 0, 0 },	  { "mode", 1, 0 },
		{ "size +1", 2, 1 },	  { "size -1", 2, -1 },
		{ "mtime +1ns", 3, 1 },	  { "mtime -1ns", 3, -1 },
		{ "mtime -1s", 3, -SEC }, { "ctime +1ns", 4, 1 },
		{ "ctime -1s", 4, -SEC }, { "inode", 5, 1 },
		{ "device", 6, 1 },
	};
	snap s = SNAP_INIT;
	statcache *c;
	int64_t old = fs_now_ns() - 100 * SEC;

	add(&s, "f", MODE_FILE, 100, old, 7);
	OK(statcache_save(f->path, &s));
	OK(statcache_load(&c, f->path));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snap_entry probe = s.v[0];
		oid id;
		int hit;
		switch (cases[i].field) {
		case 1:
			probe.mode = MODE_EXEC;
			break;
		case 2:
			probe.size = (uint64_t)((int64_t)probe.size +
						cases[i].delta);
			break;
		case 3:
			probe.mtime_ns += cases[i].delta;
			break;
		case 4:
			probe.ctime_ns += cases[i].delta;
			break;
		case 5:
			probe.ino += 1;
			break;
		case 6:
			probe.dev += 1;
			break;
		}
		hit = statcache_lookup(c, "f", &probe, &id);
		if (hit != (cases[i].field == 0 ? STATCACHE_BASE : 0))
			fail_msg("%s: hit=%d", cases[i].what, hit);
	}
	statcache_free(c);
	snap_release(&s);
}

/* The racy rule for file facts: mtime < scan_ns - 1 s, at its boundary. */
static void test_racy_facts(void **state)
{
	fixture *f = *state;
	const int64_t W = 1700000000LL * SEC + 123456789; /* scan_ns */
	static const struct {
		const char *what;
		int64_t mtime; /* relative to W - 1 s */
		bool hit;
	} cases[] = {
		{ "100 s before", -99 * SEC, true },
		{ "1 ns before W - 1 s", -1, true },
		{ "exactly W - 1 s", 0, false },
		{ "1 ns after W - 1 s", 1, false },
		{ "W - 1 ns", SEC - 1, false },
		{ "W", SEC, false },
		{ "1 s after W", 2 * SEC, false },
		{ "far future", 1000 * SEC, false },
		{ "before 1970", -W + SEC - 5 * SEC, true },
	};
	snap s = SNAP_INIT;
	statcache *c;
	char name[16];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snap_entry *e;
		snprintf(name, sizeof(name), "f%zu", i);
		e = add(&s, name, MODE_FILE, 1, W - SEC + cases[i].mtime,
			(unsigned)i + 1);
		e->ctime_ns = e->mtime_ns; /* only the rule's own input */
	}
	snap_sort(&s);
	OK(statcache_save(f->path, &s));
	set_scan_ns(f->path, W);
	OK(statcache_load(&c, f->path));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		oid id;
		int r;
		snprintf(name, sizeof(name), "f%zu", i);
		r = lookup(c, snap_find(&s, name), &id);
		if (r != (cases[i].hit ? STATCACHE_BASE : 0))
			fail_msg("%s: lookup gave %d, expected %s",
				 cases[i].what, r,
				 cases[i].hit ? "a hit" : "a miss");
	}
	statcache_free(c);

	/* a cache saved now carries the save time: the rule applies to
	 * it, whatever that time turned out to be */
	{
		snap t = SNAP_INIT;
		int64_t t0 = fs_now_ns(), t1, S;
		snap_entry *e;
		oid id;
		e = add(&t, "settled", MODE_FILE, 1, t0 - SEC - 1, 1);
		e->ctime_ns = e->mtime_ns;
		e = add(&t, "fresh", MODE_FILE, 1, t0, 2);
		e->ctime_ns = e->mtime_ns;
		snap_sort(&t);
		OK(statcache_save(f->path, &t));
		t1 = fs_now_ns();
		S = get_scan_ns(f->path);
		assert_true(S >= t0 && S <= t1);
		OK(statcache_load(&c, f->path));
		assert_int_equal(lookup(c, snap_find(&t, "settled"), &id),
				 STATCACHE_BASE);
		assert_int_equal(lookup(c, snap_find(&t, "fresh"), &id),
				 t0 < S - SEC ? STATCACHE_BASE : 0);
		statcache_free(c);
		snap_release(&t);
	}
	snap_release(&s);
}

/* The racy rule for listings: the directory's ctime < scan_ns - 1 s. */
static void test_racy_listing(void **state)
{
	fixture *f = *state;
	const int64_t W = 1700000000LL * SEC + 987654321; /* scan_ns */
	static const struct {
		const char *what;
		int64_t ctime; /* relative to W - 1 s */
		bool trusted;
	} cases[] = {
		{ "100 s before", -99 * SEC, true },
		{ "1 ns before W - 1 s", -1, true },
		{ "exactly W - 1 s", 0, false },
		{ "1 ns after W - 1 s", 1, false },
		{ "W", SEC, false },
		{ "5 s after W", 6 * SEC, false },
	};
	tdir dirs[ARRAY_SIZE(cases)];
	snap s = SNAP_INIT;
	statcache *c;
	char paths[ARRAY_SIZE(cases)][8];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(paths[i], sizeof(paths[i]), "c%zu", i);
		memset(&dirs[i], 0, sizeof(dirs[i]));
		dirs[i].path = paths[i];
		dirs[i].stat_ok = true;
		dirs[i].ctime = W - SEC + cases[i].ctime;
		dirs[i].mtime = dirs[i].ctime; /* only the rule's own input */
		dirs[i].ino = 700 + i;
		dirs[i].dev = 2050;
		dirs[i].ls[0] = "f:x";
		dirs[i].ls[1] = "d:y";
	}
	write_noted(f->path, &s, dirs, ARRAY_SIZE(dirs));
	set_scan_ns(f->path, W);
	OK(statcache_load(&c, f->path));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		statcache_dir d;
		bool t = trusted(c, &dirs[i], &d);
		if (t != cases[i].trusted)
			fail_msg("%s: listing %s", cases[i].what,
				 t ? "trusted" : "not trusted");
		/* trusted or not, the record is there, from the base */
		assert_listing(&d, &dirs[i], cases[i].what);
		assert_int_equal(d.src, STATCACHE_BASE);
	}
	statcache_free(c);
	snap_release(&s);
}

/* A listing needs the directory's mtime, ctime, inode and device, all
 * known (flag) and equal. */
static void test_listing_trust(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	statcache_dir d;
	tdir dirs[NSAMPLE_DIRS];
	int64_t now = fs_now_ns();
	static const struct {
		const char *what;
		int field;
		int64_t delta;
	} cases[] = {
		{ "mtime +1 ns", 1, 1 }, { "mtime -1 ns", 1, -1 },
		{ "ctime +1 ns", 2, 1 }, { "ctime -1 ns", 2, -1 },
		{ "inode +1", 3, 1 },	 { "inode -1", 3, -1 },
		{ "device +1", 4, 1 },
	};

	sample(&s, now - 100 * SEC);
	sample_dirs(dirs, now);
	write_noted(f->path, &s, dirs, NSAMPLE_DIRS);
	OK(statcache_load(&c, f->path));
	for (size_t k = 0; k < NSAMPLE_DIRS; k++) {
		/* all equal: trusted, with its names, types and facts */
		if (!trusted(c, &dirs[k], &d))
			fail_msg("'%s': listing not trusted", dirs[k].path);
		assert_listing(&d, &dirs[k], "equal stat data");
		assert_int_equal(d.src, STATCACHE_BASE);
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			tdir x = dirs[k];
			switch (cases[i].field) {
			case 1:
				x.mtime += cases[i].delta;
				break;
			case 2:
				x.ctime += cases[i].delta;
				break;
			case 3:
				x.ino += (uint64_t)cases[i].delta;
				break;
			case 4:
				x.dev += (uint64_t)cases[i].delta;
				break;
			}
			if (trusted(c, &x, &d))
				fail_msg("'%s', %s: listing trusted",
					 dirs[k].path, cases[i].what);
			/* the record still serves its file facts */
			assert_listing(&d, &dirs[k], cases[i].what);
		}
		/* stat data unknown */
		statcache_dir_open(c, &d, dirs[k].path, strlen(dirs[k].path),
				   NULL);
		assert_false(d.listing);
		assert_listing(&d, &dirs[k], "no stat");
		assert_dir_hits(c, &s, &dirs[k], STATCACHE_BASE, "no stat");
	}
	/* a directory the cache does not know */
	{
		tdir x = dirs[1];
		x.path = "bi";
		assert_false(trusted(c, &x, &d));
		assert_null(d.rec);
	}
	statcache_free(c);

	/* a note whose stat data were not known: flag 0, never trusted,
	 * even with the data it carries */
	dirs[1].stat_ok = false;
	write_noted(f->path, &s, dirs, NSAMPLE_DIRS);
	OK(statcache_load(&c, f->path));
	assert_false(trusted(c, &dirs[1], &d));
	assert_listing(&d, &dirs[1], "stat not known");
	assert_true(trusted(c, &dirs[2], &d)); /* the others are */
	statcache_free(c);

	/* statcache_save knows no listings: its records are never trusted,
	 * not even for stat data equal to the zeros they hold */
	OK(statcache_save(f->path, &s));
	OK(statcache_load(&c, f->path));
	for (size_t k = 0; k < NSAMPLE_DIRS; k++) {
		tdir x = dirs[k];
		assert_false(trusted(c, &x, &d));
		assert_non_null(d.rec);
		x.mtime = x.ctime = 0;
		x.ino = x.dev = 0;
		assert_false(trusted(c, &x, &d));
		assert_non_null(d.rec);
		assert_dir_hits(c, &s, &dirs[k], STATCACHE_BASE, "save");
	}
	statcache_free(c);
	snap_release(&s);
}

/* The per-directory picture of what a loaded cache serves: record k
 * serves when its listing is trusted with exactly its names and every
 * fact hits with its id. */
static bool dir_serves(statcache *c, const snap *s, const tdir *d)
{
	statcache_dir sd;

	if (!trusted(c, d, &sd))
		return false;
	assert_listing(&sd, d, "serving");
	assert_dir_hits(c, s, d, STATCACHE_BASE, "serving");
	return true;
}

/* No hit may be wrong, and a listing given must be the right one. */
static void assert_no_wrong_answer(statcache *c, const snap *s,
				   const tdir *dirs, size_t nd,
				   const char *what, size_t pos)
{
	for (size_t i = 0; i < s->n; i++) {
		oid id;
		int r = lookup(c, &s->v[i], &id);
		if (r && (!is_cacheable(&s->v[i]) ||
			  memcmp(id.b, s->v[i].id.b, SHA256_LEN)))
			fail_msg("%s at %zu: wrong hit for '%s'", what, pos,
				 s->v[i].path);
	}
	for (size_t k = 0; k < nd; k++) {
		statcache_dir sd;
		if (trusted(c, &dirs[k], &sd) || sd.rec)
			assert_listing(&sd, &dirs[k], what);
	}
}

static bool all_absent(statcache *c, const snap *s, const tdir *dirs, size_t nd)
{
	for (size_t i = 0; i < s->n; i++) {
		oid id;
		if (lookup(c, &s->v[i], &id))
			return false;
	}
	for (size_t k = 0; k < nd; k++) {
		statcache_dir sd;
		trusted(c, &dirs[k], &sd);
		if (sd.rec)
			return false;
	}
	return true;
}

/*
 * Flip bits of every byte and cut at every length: never a wrong hit or a
 * wrong listing; a damaged record is absent while every other record still
 * serves (listing and facts); damage to the header's magic, version or
 * count, or any cut, empties the table; and fsck's statcache_verify names
 * every such file (scan_ns excepted: version 2 has no header check).
 */
static void test_damage(void **state)
{
	fixture *f = *state;
	static const unsigned char masks[] = { 0x01, 0x80, 0xff };
	snap s = SNAP_INIT;
	statcache *c;
	buf good = BUF_INIT, bad = BUF_INIT;
	tdir dirs[NSAMPLE_DIRS];
	size_t off[NSAMPLE_DIRS], nrec, served_other = 0, loads = 0;
	const tdir *owner[NSAMPLE_DIRS];
	int64_t now = fs_now_ns();

	sample(&s, now - 100 * SEC);
	sample_dirs(dirs, now);
	write_noted(f->path, &s, dirs, NSAMPLE_DIRS);
	read_raw(f->path, &good);
	nrec = rec_offsets(&good, off, NSAMPLE_DIRS);
	assert_int_equal(nrec, NSAMPLE_DIRS);
	/* which directory each record is (records in file order) */
	for (size_t k = 0; k < nrec; k++) {
		const unsigned char *r =
			(const unsigned char *)good.ptr + off[k];
		size_t j = 0;
		while (j < NSAMPLE_DIRS &&
		       (get_u16le(r + 8) != strlen(dirs[j].path) ||
			memcmp(r + V2_REC_HDR, dirs[j].path,
			       strlen(dirs[j].path))))
			j++;
		assert_true(j < NSAMPLE_DIRS);
		owner[k] = &dirs[j];
	}
	/* the control: everything serves */
	OK(statcache_load(&c, f->path));
	for (size_t k = 0; k < NSAMPLE_DIRS; k++)
		assert_true(dir_serves(c, &s, &dirs[k]));
	statcache_free(c);

	for (size_t pos = 0; pos < good.len; pos++) {
		for (size_t m = 0; m < ARRAY_SIZE(masks); m++) {
			size_t k = nrec, rel = 0;
			const char *why;
			buf_clear(&bad);
			OK(buf_put(&bad, good.ptr, good.len));
			bad.ptr[pos] ^= (char)masks[m];
			why = statcache_verify(bad.ptr, bad.len);
			if (!why)
				fail_msg("verify: byte %zu ^ %02x not seen",
					 pos, masks[m]);
			write_raw(f->path, bad.ptr, bad.len);
			OK(statcache_load(&c, f->path));
			loads++;
			assert_no_wrong_answer(c, &s, dirs, NSAMPLE_DIRS,
					       "flip", pos);
			while (k > 0 && off[k - 1] > pos)
				k--;
			if (pos < V2_HDR) {
				/* any header byte (its check): an empty
				 * table */
				if (!all_absent(c, &s, dirs, NSAMPLE_DIRS))
					fail_msg("header byte %zu ^ %02x: "
						 "not empty",
						 pos, masks[m]);
				statcache_free(c);
				continue;
			}
			k--; /* the record holding pos */
			rel = pos - off[k];
			/* record k is absent (its length field aside: that
			 * breaks the index) */
			if (rel >= 4) {
				statcache_dir sd;
				trusted(c, owner[k], &sd);
				if (sd.rec)
					fail_msg("byte %zu ^ %02x (record "
						 "'%s' +%zu): still served",
						 pos, masks[m], owner[k]->path,
						 rel);
				for (size_t i = 0; i < ls_count(owner[k]);
				     i++) {
					const snap_entry *e =
						entry_of(&s, owner[k],
							 owner[k]->ls[i] + 2);
					oid id;
					if (e && lookup(c, e, &id))
						fail_msg("byte %zu: '%s' hit",
							 pos, e->path);
				}
				/* (a path length may break the index) */
				if (rel != 8 && rel != 9 &&
				    (!why ||
				     strcmp(why, "damaged directory record")))
					fail_msg("verify: byte %zu ^ %02x: "
						 "'%s'",
						 pos, masks[m],
						 why ? why : "(sound)");
			}
			/* ... and every other record serves */
			if (rel >= 4 && rel != 8 && rel != 9) {
				for (size_t j = 0; j < nrec; j++)
					if (&dirs[j] != owner[k] &&
					    !dir_serves(c, &s, &dirs[j]))
						fail_msg("byte %zu ^ %02x in "
							 "'%s': '%s' no "
							 "longer serves",
							 pos, masks[m],
							 owner[k]->path,
							 dirs[j].path);
				served_other++;
			}
			statcache_free(c);
		}
	}
	/* the bulk of the bytes are in records whose damage is contained */
	assert_true(served_other > good.len);

	/* cut at every length, or one byte too many: an empty table */
	for (size_t len = 0; len <= good.len; len++) {
		buf_clear(&bad);
		OK(buf_put(&bad, good.ptr, good.len));
		if (len == good.len)
			OK(buf_putc(&bad, '\0'));
		else
			bad.len = len;
		if (!statcache_verify(bad.ptr, bad.len))
			fail_msg("verify: a cut at %zu not seen", len);
		write_raw(f->path, bad.ptr, bad.len);
		OK(statcache_load(&c, f->path));
		loads++;
		if (!all_absent(c, &s, dirs, NSAMPLE_DIRS))
			fail_msg("cut at %zu: not empty", len);
		statcache_free(c);
	}

	/* a whole record zeroed (a lost block): only that directory goes */
	buf_clear(&bad);
	OK(buf_put(&bad, good.ptr, good.len));
	for (size_t k = 0; k < nrec; k++)
		if (owner[k] == &dirs[1]) /* "bin" */
			memset(bad.ptr + off[k] + 4, 0,
			       get_u32le((unsigned char *)bad.ptr + off[k]) -
				       4);
	assert_string_equal(statcache_verify(bad.ptr, bad.len),
			    "damaged directory record");
	write_raw(f->path, bad.ptr, bad.len);
	OK(statcache_load(&c, f->path));
	assert_false(dir_serves(c, &s, &dirs[1]));
	{
		oid id;
		assert_int_equal(lookup(c, snap_find(&s, "bin/run"), &id), 0);
	}
	assert_true(dir_serves(c, &s, &dirs[0]));
	assert_true(dir_serves(c, &s, &dirs[2]));
	assert_true(dir_serves(c, &s, &dirs[3]));
	statcache_free(c);

	/* garbage and a directory in its place */
	write_raw(f->path, "not a stat cache at all, but long enough to parse",
		  50);
	OK(statcache_load(&c, f->path));
	assert_true(all_absent(c, &s, dirs, NSAMPLE_DIRS));
	statcache_free(c);
	unlink(f->path);
	assert_int_equal(mkdir(f->path, 0755), 0);
	OK(statcache_load(&c, f->path));
	assert_true(all_absent(c, &s, dirs, NSAMPLE_DIRS));
	statcache_free(c);
	rmdir(f->path);
	print_message("%zu damaged files loaded\n", loads);

	buf_release(&good);
	buf_release(&bad);
	snap_release(&s);
}

/*
 * Records whose check is right but whose contents are not (written by
 * this test's encoder and resealed): each bad record is refused while the
 * other record serves; a bad index or header empties the table.  The
 * control case shows the encoder's file is accepted as it is.
 */
enum { V_NONE, V_RECORD, V_INDEX, V_MAGIC, V_VERSION, V_V1 };
static const char *const verdicts[] = {
	NULL,
	"damaged directory record",
	"damaged directory index",
	"bad header (magic)",
	"bad header (unknown version)",
	"checksum mismatch",
};

static void test_crafted(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *what;
		const char *names[3]; /* the bad record's listing */
		int edit;
		long a, b; /* the edit's arguments */
		int verdict;
	} cases[] = {
		{ "control", { "f:a", "f:b" }, 0, 0, 0, V_NONE },
		{ "name offset past the names",
		  { "f:a", "f:b" },
		  1,
		  1,
		  4,
		  V_RECORD },
		{ "name offset at the last NUL",
		  { "f:a", "f:b" },
		  1,
		  1,
		  3,
		  V_RECORD },
		{ "name offset far away",
		  { "f:a", "f:b" },
		  1,
		  0,
		  0x7fffffff,
		  V_RECORD },
		{ "name length 0", { "f:a", "f:b" }, 2, 0, 0, V_RECORD },
		{ "name length short: no NUL after it",
		  { "f:ab", "f:c" },
		  2,
		  0,
		  1,
		  V_RECORD },
		{ "name length over its NUL",
		  { "f:a", "f:b" },
		  2,
		  0,
		  2,
		  V_RECORD },
		{ "name length past the names",
		  { "f:a", "f:b" },
		  2,
		  1,
		  0xffff,
		  V_RECORD },
		{ "names out of strcmp order",
		  { "f:b", "f:a" },
		  0,
		  0,
		  0,
		  V_RECORD },
		{ "a name twice", { "f:a", "f:a" }, 0, 0, 0, V_RECORD },
		{ "'/' in a name", { "f:a", "f:b/c" }, 0, 0, 0, V_RECORD },
		{ "'/' alone", { "f:/", "f:a" }, 0, 0, 0, V_RECORD },
		{ "more names than fit", { "f:a", "f:b" }, 3, 3, 0, V_RECORD },
		{ "name count 2^32-1",
		  { "f:a", "f:b" },
		  3,
		  0xffffffffL,
		  0,
		  V_RECORD },
		{ "directory count + 1", { "f:a", "f:b" }, 4, 3, 0, V_INDEX },
		{ "directory count - 1", { "f:a", "f:b" }, 4, 1, 0, V_INDEX },
		{ "directory count 2^63", { "f:a", "f:b" }, 4, -1, 0, V_INDEX },
		{ "record length past the end",
		  { "f:a", "f:b" },
		  5,
		  8,
		  0,
		  V_INDEX },
		{ "record length below header + path",
		  { "f:a", "f:b" },
		  5,
		  0,
		  V2_REC_HDR + 3 + V2_CHECK - 1,
		  V_INDEX },
		{ "path length past the record",
		  { "f:a", "f:b" },
		  6,
		  0xffff,
		  0,
		  V_INDEX },
		{ "a byte after the last record",
		  { "f:a", "f:b" },
		  7,
		  0,
		  0,
		  V_INDEX },
		{ "magic", { "f:a", "f:b" }, 8, 0, 'd', V_MAGIC },
		{ "version 3", { "f:a", "f:b" }, 8, 4, 3, V_VERSION },
		{ "version 0", { "f:a", "f:b" }, 8, 4, 0, V_VERSION },
		{ "version 1 (an older decree's)",
		  { "f:a", "f:b" },
		  8,
		  4,
		  1,
		  V_V1 },
	};
	int64_t now = fs_now_ns(), old = now - 100 * SEC;
	snap s = SNAP_INIT;
	buf b = BUF_INIT;
	statcache *c;
	statcache_dir sd;

	add(&s, "ok/f", MODE_FILE, 1, old, 1);
	add(&s, "bad/a", MODE_FILE, 2, old, 2);
	add(&s, "bad/b", MODE_FILE, 3, old, 3);
	add(&s, "bad/ab", MODE_FILE, 4, old, 4);
	snap_sort(&s);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		tdir good = { "ok", true, old, old, 40, 2049, { "f:f", NULL } };
		tdir badd = { "bad", true, old, old, 41, 2049, { NULL } };
		size_t rec;
		unsigned char *p, *e;
		const char *why;
		bool empty;
		memcpy(badd.ls, cases[i].names, sizeof(cases[i].names));
		enc_header(&b, now, 2);
		enc_dir(&b, &good, &s);
		rec = enc_dir(&b, &badd, &s);
		p = (unsigned char *)b.ptr;
		e = p + rec + V2_REC_HDR + 3; /* the bad record's entries */
		switch (cases[i].edit) {
		case 1: /* entry a's name offset = b */
			put_u32le(e + (size_t)cases[i].a * V2_ENT,
				  (uint32_t)cases[i].b);
			reseal(&b, rec);
			break;
		case 2: /* entry a's name length = b */
			e[(size_t)cases[i].a * V2_ENT + 4] =
				(unsigned char)cases[i].b;
			e[(size_t)cases[i].a * V2_ENT + 5] =
				(unsigned char)(cases[i].b >> 8);
			reseal(&b, rec);
			break;
		case 3: /* name count = a */
			put_u32le(p + rec + 4, (uint32_t)cases[i].a);
			reseal(&b, rec);
			break;
		case 4: /* directory count = a (header check right) */
			put_u64le(p + 16, (uint64_t)cases[i].a);
			reseal_header(&b);
			break;
		case 5: /* record length += a, or = b */
			put_u32le(p + rec,
				  cases[i].b ? (uint32_t)cases[i].b
					     : get_u32le(p + rec) +
						       (uint32_t)cases[i].a);
			break;
		case 6: /* path length = a */
			p[rec + 8] = (unsigned char)cases[i].a;
			p[rec + 9] = (unsigned char)(cases[i].a >> 8);
			reseal(&b, rec);
			break;
		case 7:
			OK(buf_putc(&b, '\0'));
			break;
		case 8: /* header byte a = b */
			p[cases[i].a] = (unsigned char)cases[i].b;
			break;
		}
		why = statcache_verify(b.ptr, b.len);
		if (why != verdicts[cases[i].verdict] &&
		    (!why || !verdicts[cases[i].verdict] ||
		     strcmp(why, verdicts[cases[i].verdict])))
			fail_msg("%s: verify says '%s', want '%s'",
				 cases[i].what, why ? why : "(sound)",
				 verdicts[cases[i].verdict]
					 ? verdicts[cases[i].verdict]
					 : "(sound)");
		write_raw(f->path, b.ptr, b.len);
		OK(statcache_load(&c, f->path));
		/* the bad record: absent, its facts miss */
		statcache_dir_open(c, &sd, "bad", 3, NULL);
		if ((sd.rec != NULL) != (cases[i].verdict == V_NONE))
			fail_msg("%s: the record is %s", cases[i].what,
				 sd.rec ? "served" : "absent");
		{
			oid id;
			int r = lookup(c, snap_find(&s, "bad/a"), &id);
			if (r !=
			    (cases[i].verdict == V_NONE ? STATCACHE_BASE : 0))
				fail_msg("%s: bad/a gave %d", cases[i].what, r);
		}
		if (cases[i].verdict == V_NONE)
			assert_true(trusted(c, &badd, &sd));
		/* the other record serves unless the table is empty */
		empty = cases[i].verdict >= V_INDEX;
		if (dir_serves(c, &s, &good) == empty)
			fail_msg("%s: the good record %s", cases[i].what,
				 empty ? "still serves" : "no longer serves");
		statcache_free(c);
	}
	buf_release(&b);
	snap_release(&s);
}

/* An older decree's version 1 file (docs/format.md's old layout): fsck
 * checks it with its SHA-256 and accepts it; loading ignores it. */
static void build_v1(buf *b, const snap *s, int64_t written)
{
	oid sum;

	buf_clear(b);
	OK(buf_put(b, "DSTC", 4));
	OK(buf_put_u32(b, 1));
	OK(buf_put_u64(b, (uint64_t)written));
	OK(buf_put_u64(b, s->n));
	for (size_t i = 0; i < s->n; i++) {
		const snap_entry *e = &s->v[i];
		OK(buf_put_u16(b, (unsigned)strlen(e->path)));
		OK(buf_puts(b, e->path));
		OK(buf_put_u32(b, e->mode));
		OK(buf_put_u64(b, e->size));
		OK(buf_put_u64(b, (uint64_t)e->mtime_ns));
		OK(buf_put_u64(b, (uint64_t)e->ctime_ns));
		OK(buf_put_u64(b, e->ino));
		OK(buf_put_u64(b, e->dev));
		OK(buf_put(b, e->id.b, SHA256_LEN));
	}
	sha256_buf(&sum, b->ptr, b->len);
	OK(buf_put(b, sum.b, SHA256_LEN));
}

static void test_verify(void **state)
{
	fixture *f = *state;
	static const unsigned char masks[] = { 0x01, 0x80, 0xff };
	snap s = SNAP_INIT, none = SNAP_INIT;
	buf good = BUF_INIT, bad = BUF_INIT;
	statcache *c;
	tdir dirs[NSAMPLE_DIRS];
	int64_t now = fs_now_ns();

	sample(&s, now - 100 * SEC);
	sample_dirs(dirs, now);

	/* sound version 2 files: saved, updated, empty */
	OK(statcache_save(f->path, &s));
	read_raw(f->path, &good);
	assert_null(statcache_verify(good.ptr, good.len));
	write_noted(f->path, &s, dirs, NSAMPLE_DIRS);
	read_raw(f->path, &good);
	assert_null(statcache_verify(good.ptr, good.len));
	OK(statcache_save(f->path, &none));
	read_raw(f->path, &good);
	assert_int_equal(good.len, V2_HDR);
	assert_null(statcache_verify(good.ptr, good.len));
	assert_string_equal(statcache_verify(good.ptr, V2_HDR - 1),
			    "bad header (magic)");
	assert_string_equal(statcache_verify("", 0), "bad header (magic)");

	/* version 1 */
	build_v1(&good, &s, now - 5 * SEC);
	assert_null(statcache_verify(good.ptr, good.len));
	write_raw(f->path, good.ptr, good.len);
	decree_error_clear();
	OK(statcache_load(&c, f->path)); /* ignored: nothing from it */
	assert_string_equal(decree_error_last(), "");
	assert_all_miss(c, &s);
	statcache_free(c);
	for (size_t pos = 0; pos < good.len; pos++) {
		for (size_t m = 0; m < ARRAY_SIZE(masks); m++) {
			const char *why, *want;
			buf_clear(&bad);
			OK(buf_put(&bad, good.ptr, good.len));
			bad.ptr[pos] ^= (char)masks[m];
			why = statcache_verify(bad.ptr, bad.len);
			want = pos < 4	 ? "bad header (magic)"
			       : pos < 8 ? "bad header (unknown version)"
					 : "checksum mismatch";
			if (!why || strcmp(why, want))
				fail_msg("v1 byte %zu ^ %02x: '%s', want '%s'",
					 pos, masks[m], why ? why : "(sound)",
					 want);
		}
	}
	for (size_t len = 0; len < good.len; len++) {
		const char *why = statcache_verify(good.ptr, len);
		const char *want = len < V1_HDR ? "bad header (magic)"
				   : len < V1_HDR + SHA256_LEN
					   ? "truncated"
					   : "checksum mismatch";
		if (!why || strcmp(why, want))
			fail_msg("v1 cut at %zu: '%s', want '%s'", len,
				 why ? why : "(sound)", want);
	}
	/* an empty version 1 file is sound too */
	build_v1(&good, &none, now);
	assert_int_equal(good.len, V1_HDR + SHA256_LEN);
	assert_null(statcache_verify(good.ptr, good.len));
	buf_release(&good);
	buf_release(&bad);
	snap_release(&s);
}

/* Set where the cache vouched for path's entry, as a scan does. */
static void mark(snap *s, const char *path, int src)
{
	snap_entry *e = snap_find(s, path);
	assert_non_null(e);
	e->cached = (uint8_t)src;
}

/*
 * statcache_unchanged and the "nothing to write" rule, with the notes a
 * scan hands over: unchanged only when every noted directory was clean
 * and every cacheable entry still carries the vouching of its note's
 * table (an entry re-read after the scan lost it).  Skipped, stat-less
 * and unhashed entries never matter.
 */
static void test_unchanged(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *what;
		int src;	 /* the notes' table */
		int a_cached;	 /* a's vouching */
		bool root_clean; /* the root's note */
		bool unchanged;	 /* expected */
	} cases[] = {
		{ "all clean, from the base", STATCACHE_BASE, STATCACHE_BASE,
		  true, true },
		{ "all clean, from the delta", STATCACHE_DELTA, STATCACHE_DELTA,
		  true, true },
		{ "a re-read after the scan", STATCACHE_BASE, 0, true, false },
		{ "a vouched by the other table", STATCACHE_BASE,
		  STATCACHE_DELTA, true, false },
		{ "the root not clean", STATCACHE_BASE, STATCACHE_BASE, false,
		  false },
	};
	int64_t old = fs_now_ns() - 100 * SEC;
	tdir root = { "",
		      true,
		      old,
		      old,
		      9,
		      2049,
		      { "f:a", "d:b", "f:lazy", "f:nostat", "f:skipped",
			NULL } };
	tdir sub = { "b", true, old, old, 10, 2049, { "f:c", NULL } };
	char dpath[PATH_MAX + 32];
	snap s = SNAP_INIT;
	statcache *c;
	statcache_dir d;

	snprintf(dpath, sizeof(dpath), "%s.delta", f->path);
	add(&s, "a", MODE_FILE, 1, old, 1);
	add(&s, "b/c", MODE_EXEC, 2, old, 2);
	add(&s, "skipped", MODE_SKIP, 1ull << 33, 0, 0);
	add(&s, "nostat", MODE_FILE, 5, 0, 6);
	add(&s, "lazy", MODE_FILE, 7, old, 8)->unhashed = 1;
	snap_sort(&s);

	/* nothing noted (no scan): not known to be unchanged; an update
	 * writes a plain base */
	unlink(f->path);
	OK(statcache_load(&c, f->path));
	assert_false(statcache_unchanged(c, &s));
	OK(statcache_update(f->path, &s, c));
	statcache_free(c);
	assert_true(id_of(f->path).exists);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool got;
		unlink(f->path);
		unlink(dpath);
		OK(statcache_load(&c, f->path));
		note_ex(c, &s, &root, cases[i].src, cases[i].root_clean, NULL);
		note_ex(c, &s, &sub, cases[i].src, true, NULL);
		for (size_t k = 0; k < s.n; k++)
			s.v[k].cached = 0;
		mark(&s, "a", cases[i].a_cached);
		mark(&s, "b/c", cases[i].src);
		got = statcache_unchanged(c, &s);
		if (got != cases[i].unchanged)
			fail_msg("%s: statcache_unchanged %d", cases[i].what,
				 got);
		/* unchanged: the update writes nothing at all; else (no
		 * base yet) a new base */
		OK(statcache_update(f->path, &s, c));
		if (id_of(f->path).exists == cases[i].unchanged ||
		    id_of(dpath).exists)
			fail_msg("%s: the update %s", cases[i].what,
				 cases[i].unchanged ? "wrote"
						    : "wrote no base");
		statcache_free(c);
	}

	/* notes that do not describe the snap handed to the update (b's
	 * name "c" said to be entry "a"): a plain save, no listing
	 * trusted, the snap's facts kept */
	unlink(f->path);
	OK(statcache_load(&c, f->path));
	note(c, &s, &root);
	note_ex(c, &s, &sub, 0, false, snap_find(&s, "a"));
	OK(statcache_update(f->path, &s, c));
	statcache_free(c);
	OK(statcache_load(&c, f->path));
	assert_false(trusted(c, &root, &d));
	assert_non_null(d.rec);
	assert_false(trusted(c, &sub, &d));
	assert_non_null(d.rec);
	assert_dir_hits(c, &s, &sub, STATCACHE_BASE, "plain save");
	assert_dir_hits(c, &s, &root, STATCACHE_BASE, "plain save");
	statcache_free(c);
	snap_release(&s);
}

/* --- a real tree, scanned with scan_tree ---------------------------------- */

typedef struct {
	char root[PATH_MAX + 16];
	int fd;
	const char *cpath;
	char dpath[PATH_MAX + 32];
} tree;

static void tree_open(tree *t, const fixture *f)
{
	snprintf(t->root, sizeof(t->root), "%s/root", f->dir);
	assert_int_equal(mkdir(t->root, 0755), 0);
	t->fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(t->fd >= 0);
	t->cpath = f->path;
	snprintf(t->dpath, sizeof(t->dpath), "%s.delta", f->path);
}

/* Write root/rel (making its directory) and set its mtime (seconds). */
static void tree_put(const tree *t, const char *rel, const char *text,
		     time_t mtime_s)
{
	struct timespec ts[2] = { { mtime_s, 0 }, { mtime_s, 0 } };
	char p[PATH_MAX * 2];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", t->root, rel);
	*strrchr(p, '/') = '\0';
	OK(fs_mkdirs(p, 0755));
	snprintf(p, sizeof(p), "%s/%s", t->root, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	OK(fs_write_all(fd, text, strlen(text)));
	close(fd);
	assert_int_equal(utimensat(t->fd, rel, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* Scan the tree, with the cache at t->cpath when `cached` (returned with
 * the scan's notes; the caller updates and frees it).  *t0, *t1: around
 * the load. */
static statcache *tree_scan(snap *out, const tree *t, bool cached, int64_t *t0,
			    int64_t *t1)
{
	statcache *c = NULL;
	scan_opts o;
	int r;

	memset(&o, 0, sizeof(o));
	o.threads = 2;
	if (cached) {
		if (t0)
			*t0 = fs_now_ns();
		OK(statcache_load(&c, t->cpath));
		if (t1)
			*t1 = fs_now_ns();
		o.cache = c;
	}
	if ((r = scan_tree(out, t->fd, &o)) != 0)
		fail_msg("scan_tree: %d (%s)", r, decree_error_last());
	return c;
}

/* Open directory rel's record with its real stat data. */
static void tree_dir_open(statcache *c, const tree *t, const char *rel,
			  statcache_dir *sd)
{
	char p[PATH_MAX * 2];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", t->root, rel);
	assert_int_equal(lstat(p, &st), 0);
	statcache_dir_open(c, sd, rel, strlen(rel), &st);
}

#define NDIRS 16 /* d00..d15, one file f each: 16 + 16 names noted */

static void change(const tree *t, int dir, int gen, time_t old)
{
	char rel[16], text[16];

	snprintf(rel, sizeof(rel), "d%02d/f", dir);
	snprintf(text, sizeof(text), "v%02d-%d", dir, gen);
	tree_put(t, rel, text, old + gen);
}

static void assert_vouched(statcache *c, const snap *s, const char *path,
			   int src, const char *text)
{
	const snap_entry *e = snap_find(s, path);
	oid id, want;
	int r;

	assert_non_null(e);
	r = lookup(c, e, &id);
	if (r != src)
		fail_msg("'%s' (%s): lookup gave %d, want %d", path,
			 text ? text : "-", r, src);
	if (text) {
		sha256_buf(&want, text, strlen(text));
		assert_memory_equal(id.b, want.b, SHA256_LEN);
	}
}

static void assert_scan_ns_in(const char *path, int64_t t0, int64_t t1)
{
	int64_t v = get_scan_ns(path);

	if (v < t0 || v > t1)
		fail_msg("'%s': scan_ns %lld is not the load time [%lld, "
			 "%lld]",
			 path, (long long)v, (long long)t0, (long long)t1);
}

static void assert_file_dirs(const char *path, const char *want)
{
	char got[512];

	file_dirs(path, got, sizeof(got));
	if (strcmp(got, want))
		fail_msg("'%s' holds directories '%s', want '%s'", path, got,
			 want);
}

/*
 * Base and delta, hand-encoded: a directory in the delta is answered by
 * the delta's record only (the base's facts and listing for it are not
 * asked), other directories by the base; each table's racy rule uses its
 * own scan_ns.
 */
static void test_delta_tables(void **state)
{
	fixture *f = *state;
	const int64_t W = 1700000000LL * SEC + 555555555; /* the delta's */
	const int64_t B = W + 1000 * SEC;		  /* the base's */
	char dpath[PATH_MAX + 32];
	snap sb = SNAP_INIT, sd = SNAP_INIT;
	buf b = BUF_INIT;
	statcache *c;
	statcache_dir d;
	/* in both: x (the base's record holds other facts and stat data) */
	tdir bx = { "x",
		    true,
		    W - 100 * SEC,
		    W - 100 * SEC,
		    60,
		    7,
		    { "f:old", "f:same", NULL } };
	tdir dx = { "x",
		    true,
		    W - SEC,
		    W - SEC,
		    61,
		    7,
		    { "f:new", "f:racy", "f:same", NULL } };
	/* only in the base: y; only in the delta: z */
	tdir by = { "y", true, W, W, 62, 7, { "f:f", NULL } };
	tdir dz = {
		"z", true, W - SEC - 1, W - SEC - 1, 63, 7, { "f:f", NULL }
	};

	snprintf(dpath, sizeof(dpath), "%s.delta", f->path);
	add(&sb, "x/old", MODE_FILE, 1, W - 50 * SEC, 1);
	add(&sb, "x/same", MODE_FILE, 2, W - 50 * SEC, 2);
	add(&sb, "y/f", MODE_FILE, 3, W - SEC, 3); /* settled for B only */
	snap_sort(&sb);
	add(&sd, "x/new", MODE_FILE, 4, W - SEC - 1, 4);
	add(&sd, "x/racy", MODE_FILE, 5, W - SEC, 5); /* settled for B */
	add(&sd, "x/same", MODE_FILE, 2, W - 50 * SEC, 2);
	add(&sd, "z/f", MODE_FILE, 6, W - 2 * SEC, 6);
	snap_sort(&sd);
	enc_header(&b, B, 2);
	enc_dir(&b, &bx, &sb);
	enc_dir(&b, &by, &sb);
	write_raw(f->path, b.ptr, b.len);
	enc_header(&b, W, 2);
	enc_dir(&b, &dx, &sd);
	enc_dir(&b, &dz, &sd);
	write_raw(dpath, b.ptr, b.len);

	OK(statcache_load(&c, f->path));
	/* x: the delta's record, under the delta's scan_ns */
	assert_false(trusted(c, &bx, &d)); /* the base's stat data */
	assert_listing(&d, &dx, "x");
	assert_int_equal(d.src, STATCACHE_DELTA);
	assert_false(trusted(c, &dx, &d)); /* ctime W - 1 s: racy for W */
	assert_int_equal(d.facts, 3);
	assert_vouched(c, &sd, "x/new", STATCACHE_DELTA, NULL);
	assert_vouched(c, &sd, "x/racy", 0, NULL);
	assert_vouched(c, &sd, "x/same", STATCACHE_DELTA, NULL);
	assert_vouched(c, &sb, "x/old", 0, NULL); /* the base's, not asked */
	/* y: the base's, under the base's scan_ns */
	assert_true(trusted(c, &by, &d));
	assert_int_equal(d.src, STATCACHE_BASE);
	assert_vouched(c, &sb, "y/f", STATCACHE_BASE, NULL);
	/* z: only in the delta */
	assert_true(trusted(c, &dz, &d));
	assert_int_equal(d.src, STATCACHE_DELTA);
	assert_vouched(c, &sd, "z/f", STATCACHE_DELTA, NULL);
	statcache_free(c);

	/* with the delta's x damaged, x is the base's again */
	read_raw(dpath, &b);
	b.ptr[V2_HDR + V2_REC_HDR + 1] ^= 0x40; /* the first name entry */
	write_raw(dpath, b.ptr, b.len);
	OK(statcache_load(&c, f->path));
	assert_true(trusted(c, &bx, &d));
	assert_int_equal(d.src, STATCACHE_BASE);
	assert_listing(&d, &bx, "x from the base");
	assert_vouched(c, &sb, "x/old", STATCACHE_BASE, NULL);
	assert_vouched(c, &sd, "x/new", 0, NULL);
	assert_vouched(c, &sd, "z/f", STATCACHE_DELTA, NULL);
	statcache_free(c);

	/* a delta without a base serves alone */
	unlink(f->path);
	OK(statcache_load(&c, f->path));
	assert_vouched(c, &sd, "z/f", STATCACHE_DELTA, NULL);
	assert_vouched(c, &sb, "y/f", 0, NULL);
	statcache_free(c);
	buf_release(&b);
	snap_release(&sb);
	snap_release(&sd);
}

/*
 * The save policy on a real tree of 16 directories of one file each (32
 * names noted: 16 in the root, one in each directory):
 *   nothing changed             nothing written (the base keeps its inode)
 *   1 directory changed         a delta with it; the base untouched
 *   nothing changed, delta      nothing written
 *   1 more (2 of 32 = 1/16)     a delta with both (the delta's directories
 *                               are always carried)
 *   1 more (3 of 32 > 1/16)     a new base, the delta removed
 *   a damaged delta             its directory falls back to the base
 * The directories were made a moment ago; each written file has its
 * scan_ns moved 10 s ahead so that they count as settled.
 */
static void test_update_policy(void **state)
{
	fixture *f = *state;
	char rel[16], text[16], all[256], cpy[PATH_MAX + 32];
	time_t old = time(NULL) - 1000;
	snap s0 = SNAP_INIT, s = SNAP_INIT, plain = SNAP_INIT;
	statcache *c;
	statcache_dir sd;
	file_id base, delta;
	int64_t t0, t1;
	buf b = BUF_INIT;
	tree t;

	tree_open(&t, f);
	all[0] = '\0';
	for (int i = 0; i < NDIRS; i++) {
		size_t l = strlen(all);
		snprintf(rel, sizeof(rel), "d%02d/f", i);
		snprintf(text, sizeof(text), "v%02d-0", i);
		tree_put(&t, rel, text, old);
		snprintf(all + l, sizeof(all) - l, ",d%02d", i);
	}

	/* the first scan (no cache yet): its update writes a base of every
	 * directory, scan_ns the load time */
	c = tree_scan(&s0, &t, true, &t0, &t1);
	assert_int_equal(s0.n, NDIRS);
	assert_false(statcache_unchanged(c, &s0));
	OK(statcache_update(t.cpath, &s0, c));
	statcache_free(c);
	assert_file_dirs(t.cpath, all);
	assert_scan_ns_in(t.cpath, t0, t1);
	assert_false(id_of(t.dpath).exists);
	set_scan_ns(t.cpath, fs_now_ns() + 10 * SEC);

	/* nothing changed: every listing trusted, every fact hit, nothing
	 * written */
	base = id_of(t.cpath);
	c = tree_scan(&s, &t, true, NULL, NULL);
	testutil_same_scan(&s0, &s, "with the cache");
	for (size_t i = 0; i < s.n; i++)
		assert_int_equal(s.v[i].cached, STATCACHE_BASE);
	assert_true(statcache_unchanged(c, &s));
	tree_dir_open(c, &t, "", &sd);
	assert_true(sd.listing);
	for (int i = 0; i < NDIRS; i++) {
		snprintf(rel, sizeof(rel), "d%02d", i);
		tree_dir_open(c, &t, rel, &sd);
		assert_true(sd.listing);
	}
	OK(statcache_update(t.cpath, &s, c));
	statcache_free(c);
	assert_same_file(base, id_of(t.cpath), "the base");
	assert_false(id_of(t.dpath).exists);
	snap_release(&s);

	/* one directory changed (1 name of 32): a delta, the base as it
	 * was */
	change(&t, 3, 1, old);
	c = tree_scan(&s, &t, true, &t0, &t1);
	assert_int_equal(snap_find(&s, "d03/f")->cached, 0);
	assert_int_equal(snap_find(&s, "d04/f")->cached, STATCACHE_BASE);
	assert_false(statcache_unchanged(c, &s));
	OK(statcache_update(t.cpath, &s, c));
	statcache_free(c);
	assert_same_file(base, id_of(t.cpath), "the base");
	assert_file_dirs(t.dpath, "d03");
	assert_scan_ns_in(t.dpath, t0, t1);
	set_scan_ns(t.dpath, fs_now_ns() + 10 * SEC);
	read_raw(t.dpath, &b);
	assert_null(statcache_verify(b.ptr, b.len));
	/* the delta's record replaces the base's for d03: the base still
	 * vouches for d03/f's old stat data (loaded alone), not with the
	 * delta there */
	OK(statcache_load(&c, t.cpath));
	assert_vouched(c, &s, "d03/f", STATCACHE_DELTA, "v03-1");
	assert_vouched(c, &s0, "d03/f", 0, NULL);
	assert_vouched(c, &s0, "d04/f", STATCACHE_BASE, "v04-0");
	tree_dir_open(c, &t, "d03", &sd);
	assert_true(sd.listing);
	assert_int_equal(sd.src, STATCACHE_DELTA);
	statcache_free(c);
	snprintf(cpy, sizeof(cpy), "%s/base-alone", f->dir);
	read_raw(t.cpath, &b);
	write_raw(cpy, b.ptr, b.len);
	OK(statcache_load(&c, cpy));
	assert_vouched(c, &s0, "d03/f", STATCACHE_BASE, "v03-0");
	statcache_free(c);
	snap_release(&s);

	/* nothing changed, with a delta: nothing written */
	delta = id_of(t.dpath);
	c = tree_scan(&s, &t, true, NULL, NULL);
	assert_int_equal(snap_find(&s, "d03/f")->cached, STATCACHE_DELTA);
	assert_true(statcache_unchanged(c, &s));
	OK(statcache_update(t.cpath, &s, c));
	statcache_free(c);
	assert_same_file(base, id_of(t.cpath), "the base");
	assert_same_file(delta, id_of(t.dpath), "the delta");
	snap_release(&s);

	/* a second directory: d03 (carried) + d07 = 2 of 32 names: still a
	 * delta */
	change(&t, 7, 1, old);
	c = tree_scan(&s, &t, true, NULL, NULL);
	OK(statcache_update(t.cpath, &s, c));
	statcache_free(c);
	assert_same_file(base, id_of(t.cpath), "the base");
	assert_file_dirs(t.dpath, "d03,d07");
	set_scan_ns(t.dpath, fs_now_ns() + 10 * SEC);
	snap_release(&s);

	/* a third directory, d11, which also gains 300 names: more than
	 * 256 and more than 1/16 of the tree changed, so a new base of
	 * everything, no delta.  (Fewer than 257 names never fold: in a
	 * small tree one change is a large part of it.) */
	change(&t, 11, 1, old);
	for (int i = 0; i < 300; i++) {
		snprintf(rel, sizeof(rel), "d11/g%03d", i);
		tree_put(&t, rel, "g", old);
	}
	c = tree_scan(&s, &t, true, &t0, &t1);
	OK(statcache_update(t.cpath, &s, c));
	statcache_free(c);
	assert_false(id_of(t.dpath).exists);
	assert_file_dirs(t.cpath, all);
	assert_scan_ns_in(t.cpath, t0, t1);
	set_scan_ns(t.cpath, fs_now_ns() + 10 * SEC);
	OK(statcache_load(&c, t.cpath));
	assert_vouched(c, &s, "d03/f", STATCACHE_BASE, "v03-1");
	assert_vouched(c, &s, "d07/f", STATCACHE_BASE, "v07-1");
	assert_vouched(c, &s, "d11/f", STATCACHE_BASE, "v11-1");
	assert_vouched(c, &s, "d05/f", STATCACHE_BASE, "v05-0");
	statcache_free(c);
	snap_release(&s);

	/* a damaged delta: its directory falls back to the base, whose
	 * record still says what was true of its stat data */
	change(&t, 5, 1, old);
	c = tree_scan(&s, &t, true, NULL, NULL);
	OK(statcache_update(t.cpath, &s, c));
	statcache_free(c);
	assert_file_dirs(t.dpath, "d05");
	set_scan_ns(t.dpath, fs_now_ns() + 10 * SEC);
	read_raw(t.dpath, &b);
	/* one bit of d05/f's id (the first entry's oid) */
	b.ptr[V2_HDR + V2_REC_HDR + 3 + 52] ^= 0x01;
	assert_string_equal(statcache_verify(b.ptr, b.len),
			    "damaged directory record");
	write_raw(t.dpath, b.ptr, b.len);
	OK(statcache_load(&c, t.cpath));
	tree_dir_open(c, &t, "d05", &sd);
	assert_int_equal(sd.src, STATCACHE_BASE);
	assert_true(sd.listing); /* d05 itself did not change */
	assert_vouched(c, &s, "d05/f", 0, NULL);
	assert_vouched(c, &s0, "d05/f", STATCACHE_BASE, "v05-0");
	statcache_free(c);
	snap_release(&s);
	c = tree_scan(&s, &t, true, NULL, NULL);
	statcache_free(c);
	tree_scan(&plain, &t, false, NULL, NULL);
	testutil_same_scan(&plain, &s, "with a damaged delta");
	assert_int_equal(snap_find(&s, "d05/f")->cached, 0);
	{
		oid want;
		sha256_buf(&want, "v05-1", 5);
		assert_memory_equal(snap_find(&s, "d05/f")->id.b, want.b,
				    SHA256_LEN);
	}

	close(t.fd);
	buf_release(&b);
	snap_release(&s0);
	snap_release(&s);
	snap_release(&plain);
}

/*
 * A directory path longer than the format's 16-bit path length: that
 * directory cannot have a record, but the rest of the tree must still be
 * cached (the cache is an accelerator: one odd path must not switch it off
 * for the whole tree).
 */
static void test_unencodable_path(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	char *longp = malloc(70003);
	int64_t old = fs_now_ns() - 100 * SEC;
	buf b = BUF_INIT;
	const char *why = NULL;
	char err[256] = "";
	oid id;
	int r, hit = -1;

	assert_non_null(longp);
	memset(longp, 'p', 70000);
	memcpy(longp + 70000, "/f", 3);
	add(&s, "a", MODE_FILE, 1, old, 1);
	add(&s, longp, MODE_FILE, 1, old, 2);
	snap_sort(&s);
	free(longp);
	r = statcache_save(f->path, &s);
	snprintf(err, sizeof(err), "%s", decree_error_last());
	if (r == 0) {
		read_raw(f->path, &b);
		why = statcache_verify(b.ptr, b.len);
		OK(statcache_load(&c, f->path));
		hit = lookup(c, snap_find(&s, "a"), &id);
		statcache_free(c);
	}
	buf_release(&b);
	snap_release(&s);
	if (r != 0)
		fail_msg("statcache_save of a snap with a directory path > "
			 "65535 bytes failed (%d: %s): nothing is cached",
			 r, err);
	if (why)
		fail_msg("the file saved is '%s'", why);
	assert_int_equal(hit, STATCACHE_BASE);
}

/* The same for a name longer than the 16-bit name length: what decree
 * writes, its own fsck must accept, and the directory's other names must
 * still be served. */
static void test_unencodable_name(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	char *longn = malloc(70001);
	int64_t old = fs_now_ns() - 100 * SEC;
	buf b = BUF_INIT;
	const char *why;
	oid id;
	int hit;

	assert_non_null(longn);
	memset(longn, 'n', 70000);
	longn[70000] = '\0';
	add(&s, "a", MODE_FILE, 1, old, 1);
	add(&s, longn, MODE_FILE, 1, old, 2);
	snap_sort(&s);
	free(longn);
	OK(statcache_save(f->path, &s));
	read_raw(f->path, &b);
	why = statcache_verify(b.ptr, b.len);
	OK(statcache_load(&c, f->path));
	hit = lookup(c, snap_find(&s, "a"), &id);
	statcache_free(c);
	buf_release(&b);
	snap_release(&s);
	if (why)
		fail_msg("statcache_save with a name > 65535 bytes wrote a "
			 "file fsck calls '%s' (and 'a' in the same directory "
			 "%s)",
			 why, hit ? "hits" : "misses");
	assert_int_equal(hit, STATCACHE_BASE);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_roundtrip),	  T(test_format),
		T(test_missing_is_empty), T(test_fields_must_match),
		T(test_racy_facts),	  T(test_racy_listing),
		T(test_listing_trust),	  T(test_damage),
		T(test_crafted),	  T(test_verify),
		T(test_unchanged),	  T(test_delta_tables),
		T(test_update_policy),	  T(test_unencodable_path),
		T(test_unencodable_name),
	};
#undef T

	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_racy*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
