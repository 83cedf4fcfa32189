/*
 * test_scan.c - walking a project root into a snapshot.
 *
 * A hand-built scratch tree covers every kind of entry the walk meets
 * (files, the exec bit, symlinks to files, to directories and out of the
 * root, an empty directory, .git directories and files, nested .gitignore
 * files with negation, built-in and configured excludes, .decree at the
 * root only, a fifo, files at and above the size limit) and the snapshot
 * must equal a table, ids checked with sha256 of the bytes.  A seeded
 * random tree checks that threads=1 and threads=4 agree and that scanning
 * with the same root fd again and again gives the same answer.  The stat
 * cache is checked by planting a fake id for an unchanged file: it must
 * come back untouched (the file was not read), while a racy or changed
 * file is hashed again; and once the cache holds a settled tree (its
 * scan_ns moved ahead), a scan takes every directory listing from it
 * (an edited cached listing shows through) until the directory changes.
 * Random trees print their seed; DECREE_TEST_SEED=<n> replays.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "scan/scan.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/odb.h"
#include "store/snap.h"
#include "scan/statcache.h"

#include <dirent.h>
#include <ftw.h>
#include <time.h>

#define MAXSZ 1000

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return testutil_rnd(&rng_state);
}

static uint64_t test_seed(void)
{
	return testutil_seed("test_scan");
}

typedef struct {
	char base[PATH_MAX];
	char root[PATH_MAX + 16];
	int rootfd;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (testutil_mkdtemp(f->base, sizeof(f->base), "scan") < 0) {
		free(f);
		return -1;
	}
	snprintf(f->root, sizeof(f->root), "%s/root", f->base);
	if (mkdir(f->root, 0755) < 0)
		return -1;
	f->rootfd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->rootfd < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	close(f->rootfd);
	testutil_rm_rf(f->base);
	free(f);
	return 0;
}

/* mkdir -p for the parent of root/rel, then write the file. */
static void put_bytes(const fixture *f, const char *rel, const void *data,
		      size_t len, mode_t mode)
{
	char p[PATH_MAX * 2];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	*strrchr(p, '/') = '\0';
	assert_int_equal(fs_mkdirs(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, data, len), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void put(const fixture *f, const char *rel, const char *text,
		mode_t mode)
{
	put_bytes(f, rel, text, strlen(text), mode);
}

static void link_at(const fixture *f, const char *target, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void mkdir_at(const fixture *f, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(fs_mkdirs(p, 0755), 0);
}

/* Set the mtime of root/rel (not following a symlink). */
static void set_mtime(const fixture *f, const char *rel, time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	assert_int_equal(utimensat(f->rootfd, rel, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void scan_ok(snap *out, const fixture *f, scan_opts *o)
{
	int r = scan_tree(out, f->rootfd, o);
	if (r != 0)
		fail_msg("scan_tree: %d (%s)", r, decree_error_last());
	for (size_t i = 1; i < out->n; i++)
		if (path_cmp(out->v[i - 1].path, out->v[i].path) >= 0)
			fail_msg("not in canonical order: '%s' then '%s'",
				 out->v[i - 1].path, out->v[i].path);
}

static void dump(const snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		fprintf(stderr, "  %06o %8llu %s\n", s->v[i].mode,
			(unsigned long long)s->v[i].size, s->v[i].path);
}

/* --- the hand-built tree
 * ----------------------------------------------------------- */

static const struct want {
	const char *path;
	uint32_t mode;
	const char *content; /* file bytes or link target; NULL: MODE_SKIP */
	uint64_t size;	     /* MODE_SKIP only */
} want_entries[] = {
	{ ".gitignore", MODE_FILE, "*.log\nbuild/\n", 0 },
	{ "a/x", MODE_FILE, "in a", 0 },
	{ "a.c", MODE_FILE, "int main;\n", 0 },
	{ "a.txt", MODE_FILE, "hello\n", 0 },
	{ "a0", MODE_FILE, "", 0 },
	{ "big.bin", MODE_SKIP, NULL, MAXSZ + 1 },
	{ "bin/run.sh", MODE_EXEC, "#!/bin/sh\necho hi\n", 0 },
	{ "dirlink", MODE_LINK, "bin", 0 },
	{ "edge.bin", MODE_FILE, NULL, MAXSZ }, /* exactly the limit: stored */
	{ "link", MODE_LINK, "a.txt", 0 },
	{ "odd-exec", MODE_REG | 0700, "every permission bit is kept", 0 },
	{ "outlink", MODE_LINK, "../../../etc/passwd", 0 },
	{ "sub/.decree/x", MODE_FILE, "only the root's .decree is skipped", 0 },
	{ "sub/.gitignore", MODE_FILE, "secret\n!keep.log\n", 0 },
	{ "sub/file.c", MODE_FILE, "int x;\n", 0 },
	{ "sub/keep.log", MODE_FILE, "kept: whitelisted deeper", 0 },
	{ "uexec-only", MODE_REG | 0654, "0644 | S_IXGRP is kept as is", 0 },
};

static void build_tree(const fixture *f)
{
	static char edge[MAXSZ], big[MAXSZ + 1];
	char p[PATH_MAX * 2];

	memset(edge, 'e', sizeof(edge));
	memset(big, 'b', sizeof(big));
	put(f, ".gitignore", "*.log\nbuild/\n", 0644);
	put(f, "a/x", "in a", 0644);
	put(f, "a.c", "int main;\n", 0644);
	put(f, "a.txt", "hello\n", 0644);
	put(f, "a0", "", 0644);
	put_bytes(f, "big.bin", big, sizeof(big), 0644);
	put(f, "bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
	link_at(f, "bin", "dirlink");
	put_bytes(f, "edge.bin", edge, sizeof(edge), 0644);
	link_at(f, "a.txt", "link");
	put(f, "odd-exec", "every permission bit is kept", 0700);
	link_at(f, "../../../etc/passwd", "outlink");
	put(f, "sub/.decree/x", "only the root's .decree is skipped", 0644);
	put(f, "sub/.gitignore", "secret\n!keep.log\n", 0644);
	put(f, "sub/file.c", "int x;\n", 0644);
	put(f, "sub/keep.log", "kept: whitelisted deeper", 0644);
	put(f, "uexec-only", "0644 | S_IXGRP is kept as is", 0654);
	/* not recorded */
	mkdir_at(f, "empty");
	mkdir_at(f, "empty/nested/deeper");
	put(f, ".git/HEAD", "ref: refs/heads/main\n", 0644);
	put(f, ".git/objects/ab/cdef", "blob", 0444);
	put(f, "sub/.git", "gitdir: ../.git/modules/sub\n", 0644);
	put(f, "sub/deeper/.git/config", "[core]\n", 0644);
	put(f, "x.log", "ignored by the root .gitignore", 0644);
	put(f, "sub/deeper/y.log", "ignored from above", 0644);
	put(f, "sub/secret", "ignored by sub/.gitignore", 0644);
	put(f, "build/out.o", "ignored directory", 0644);
	put(f, "node_modules/pkg/index.js", "built-in ignore", 0644);
	put(f, "t.tmp", "configured exclude", 0644);
	put(f, ".decree/store/DECREE-STORE", "the store", 0644);
	snprintf(p, sizeof(p), "%s/fifo", f->root);
	assert_int_equal(mkfifo(p, 0644), 0);
}

static void check_against_table(const snap *s)
{
	static char edge[MAXSZ];
	snap w = SNAP_INIT;

	memset(edge, 'e', sizeof(edge));
	for (size_t i = 0; i < ARRAY_SIZE(want_entries); i++) {
		const struct want *x = &want_entries[i];
		snap_entry *e = snap_add(&w, x->path, strlen(x->path));
		assert_non_null(e);
		e->mode = x->mode;
		if (x->mode == MODE_SKIP) {
			e->size = x->size;
		} else if (!x->content) {
			e->size = sizeof(edge);
			sha256_buf(&e->id, edge, sizeof(edge));
		} else {
			e->size = strlen(x->content);
			sha256_buf(&e->id, x->content, strlen(x->content));
		}
	}
	snap_sort(&w);
	if (s->n != w.n) {
		fprintf(stderr, "scanned:\n");
		dump(s);
		snap_release(&w);
		fail_msg("%zu entries scanned, %zu expected", s->n,
			 ARRAY_SIZE(want_entries));
	}
	for (size_t i = 0; i < w.n; i++) {
		const snap_entry *a = &s->v[i], *b = &w.v[i];
		if (strcmp(a->path, b->path) || a->mode != b->mode ||
		    a->size != b->size || oid_cmp(&a->id, &b->id)) {
			fprintf(stderr, "scanned:\n");
			dump(s);
			fail_msg(
				"entry %zu: got '%s' %o %llu, want '%s' %o %llu",
				i, a->path, a->mode,
				(unsigned long long)a->size, b->path, b->mode,
				(unsigned long long)b->size);
		}
		if (a->mode == MODE_SKIP)
			assert_int_equal(a->mtime_ns, 0); /* never cached */
		else
			assert_true(a->mtime_ns != 0 && a->ino != 0);
	}
	snap_release(&w);
}

static void test_hand_tree(void **state)
{
	fixture *f = *state;
	static const char *const excludes[] = { "*.tmp", NULL };
	scan_opts o;
	snap s1 = SNAP_INIT, s4 = SNAP_INIT;

	umask(022);
	build_tree(f);
	memset(&o, 0, sizeof(o));
	o.max_file_size = MAXSZ;
	o.excludes = excludes;
	o.threads = 1;
	scan_ok(&s1, f, &o);
	check_against_table(&s1);
	o.threads = 4;
	scan_ok(&s4, f, &o);
	check_against_table(&s4);
	snap_release(&s1);
	snap_release(&s4);
}

/* With a writer every stored entry's bytes can be read back. */
static void test_store_contents(void **state)
{
	fixture *f = *state;
	static const char *const excludes[] = { "*.tmp", NULL };
	char packs[PATH_MAX * 2];
	scan_opts o;
	snap s = SNAP_INIT;
	odb *db;
	odb_writer *w;
	buf b = BUF_INIT;

	build_tree(f);
	snprintf(packs, sizeof(packs), "%s/packs", f->base);
	assert_int_equal(odb_open(&db, packs), 0);
	assert_int_equal(odb_writer_new(&w, db), 0);
	memset(&o, 0, sizeof(o));
	o.max_file_size = MAXSZ;
	o.excludes = excludes;
	o.threads = 3;
	o.store = w;
	scan_ok(&s, f, &o);
	assert_int_equal(odb_writer_commit(w), 0);
	odb_writer_free(w);
	check_against_table(&s);
	for (size_t i = 0; i < s.n; i++) {
		oid id;
		if (s.v[i].mode == MODE_SKIP) {
			continue;
		}
		assert_int_equal(odb_read(&b, NULL, db, &s.v[i].id), 0);
		sha256_buf(&id, b.ptr, b.len);
		assert_memory_equal(id.b, s.v[i].id.b, SHA256_LEN);
		assert_int_equal(b.len, s.v[i].size);
	}
	/* capture of one path */
	{
		snap_entry e;
		memset(&e, 0, sizeof(e));
		assert_int_equal(odb_writer_new(&w, db), 0);
		assert_int_equal(scan_capture_path(&e, f->rootfd, "x.log", w),
				 0);
		assert_int_equal(e.mode, MODE_FILE);
		assert_int_equal(e.size,
				 strlen("ignored by the root .gitignore"));
		assert_int_equal(
			scan_capture_path(&e, f->rootfd, "bin/run.sh", w), 0);
		assert_int_equal(e.mode, MODE_EXEC);
		assert_int_equal(scan_capture_path(&e, f->rootfd, "nope", w),
				 DECREE_ENOTFOUND);
		assert_true(scan_capture_path(&e, f->rootfd, "link", w) < 0);
		assert_true(scan_capture_path(&e, f->rootfd, "dirlink/run.sh",
					      w) < 0);
		assert_int_equal(scan_capture_path(&e, f->rootfd, "sub", w),
				 DECREE_EINVALID);
		assert_int_equal(odb_writer_commit(w), 0);
		odb_writer_free(w);
		assert_int_equal(odb_read(&b, NULL, db, &e.id), 0);
	}
	buf_release(&b);
	snap_release(&s);
	odb_free(db);
}

/* An empty root, and a root holding only ignored things. */
static void test_empty(void **state)
{
	fixture *f = *state;
	scan_opts o;
	snap s = SNAP_INIT;

	memset(&o, 0, sizeof(o));
	scan_ok(&s, f, &o);
	assert_int_equal(s.n, 0);
	mkdir_at(f, "a/b/c");
	put(f, ".git/x", "x", 0644);
	scan_ok(&s, f, &o);
	assert_int_equal(s.n, 0);
	snap_release(&s);
}

/* --- random trees: threads and repeated scans
 * ------------------------------------------- */

static void random_tree(const fixture *f, int nfiles)
{
	static const char *const dirs[] = {
		"",	"src/",	      "src/lib/", "src/lib/util/", "doc/",
		"a b/", "z/y/x/w/v/", "src.d/",	  "src0/"
	};
	buf data = BUF_INIT;

	for (int i = 0; i < nfiles; i++) {
		char rel[256];
		size_t len = rnd() % 4 == 0 ? (size_t)(rnd() % 300000)
					    : (size_t)(rnd() % 2000);
		int kind = (int)(rnd() % 10);
		snprintf(rel, sizeof(rel), "%sf%03d%s",
			 dirs[rnd() % ARRAY_SIZE(dirs)], i,
			 kind == 0 ? ".sh" : ".c");
		if (kind == 9) {
			char p[PATH_MAX * 2];
			put(f, rel, "", 0644); /* make the directory, then
						  replace */
			snprintf(p, sizeof(p), "%s/%s", f->root, rel);
			unlink(p);
			assert_int_equal(symlink(rnd() % 2 ? "src/lib"
							   : "../outside",
						 p),
					 0);
			continue;
		}
		buf_clear(&data);
		assert_int_equal(buf_grow(&data, len), 0);
		for (size_t k = 0; k < len; k++)
			data.ptr[k] =
				(char)(rnd() % 3 ? 'a' + rnd() % 26 : rnd());
		data.len = len;
		put_bytes(f, rel, data.ptr, data.len, kind == 0 ? 0755 : 0644);
	}
	buf_release(&data);
}

static void test_threads_agree(void **state)
{
	fixture *f = *state;
	scan_opts o;
	snap s1 = SNAP_INIT, s4 = SNAP_INIT, again = SNAP_INIT;

	rng_state = test_seed() ^ 0x5ca9;
	random_tree(f, 300);
	memset(&o, 0, sizeof(o));
	o.max_file_size = 250000;
	o.threads = 1;
	scan_ok(&s1, f, &o);
	assert_true(s1.n >= 250);
	o.threads = 4;
	scan_ok(&s4, f, &o);
	testutil_same_scan(&s1, &s4, "threads=1 vs threads=4");
	/* the same root fd, scanned again and again */
	for (int i = 0; i < 3; i++) {
		o.threads = (unsigned)(1 + i);
		scan_ok(&again, f, &o);
		testutil_same_scan(&s1, &again, "repeated scan");
		snap_release(&again);
	}
	/* the caller's fd offset does not matter either */
	{
		DIR *d;
		int fd = fcntl(f->rootfd, F_DUPFD_CLOEXEC, 3);
		assert_true(fd >= 0);
		d = fdopendir(fd);
		assert_non_null(d);
		while (readdir(d))
			;
		scan_ok(&again, f, &o);
		testutil_same_scan(&s1, &again,
				   "scan after the fd was read to its end");
		snap_release(&again);
		closedir(d);
	}
	/* every hashed id is right */
	for (size_t i = 0; i < s1.n; i++) {
		buf b = BUF_INIT;
		char p[PATH_MAX * 2];
		oid id;
		if (s1.v[i].mode == MODE_LINK || s1.v[i].mode == MODE_SKIP)
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->root, s1.v[i].path);
		assert_int_equal(fs_read_path(p, &b), 0);
		sha256_buf(&id, b.ptr, b.len);
		assert_memory_equal(id.b, s1.v[i].id.b, SHA256_LEN);
		buf_release(&b);
	}
	snap_release(&s1);
	snap_release(&s4);
}

/* --- the stat cache
 * ------------------------------------------------------------------------ */

static void test_cache_hits_skip_hashing(void **state)
{
	fixture *f = *state;
	char cpath[PATH_MAX * 2];
	scan_opts o;
	snap s = SNAP_INIT, t = SNAP_INIT;
	statcache *c;
	oid fake, real_old, real_racy;
	time_t old = 978307200; /* 2001-01-01 */

	snprintf(cpath, sizeof(cpath), "%s/statcache", f->base);
	put(f, "old.txt", "unchanged for years", 0644);
	put(f, "racy.txt", "written just now", 0644);
	put(f, "changed.txt", "will change", 0644);
	link_at(f, "old.txt", "oldlink");
	set_mtime(f, "old.txt", old);
	set_mtime(f, "changed.txt", old);
	set_mtime(f, "oldlink", old);
	/* in the future: racy whenever the cache is written */
	set_mtime(f, "racy.txt", time(NULL) + 3600);
	memset(&o, 0, sizeof(o));
	o.threads = 2;
	scan_ok(&s, f, &o);
	assert_int_equal(s.n, 4);
	real_old = snap_find(&s, "old.txt")->id;
	real_racy = snap_find(&s, "racy.txt")->id;
	/* plant a fake id for every entry */
	memset(&fake, 0xfa, sizeof(fake));
	for (size_t i = 0; i < s.n; i++)
		s.v[i].id = fake;
	assert_int_equal(statcache_save(cpath, &s), 0);

	/* changed.txt: same size, new bytes, mtime moved */
	put(f, "changed.txt", "has changed", 0644);
	assert_int_equal(statcache_load(&c, cpath), 0);
	o.cache = c;
	scan_ok(&t, f, &o);
	{
		const snap_entry *e = snap_find(&t, "old.txt");
		assert_non_null(e);
		if (oid_cmp(&e->id, &fake))
			fail_msg(
				"old.txt was hashed again despite a clean cache entry");
		e = snap_find(&t, "oldlink");
		assert_memory_equal(e->id.b, fake.b, SHA256_LEN);
		e = snap_find(&t, "racy.txt");
		if (!oid_cmp(&e->id, &fake))
			fail_msg(
				"racy.txt: the cached id was trusted although its mtime "
				"is not a second before the cache's scan_ns");
		assert_memory_equal(e->id.b, real_racy.b, SHA256_LEN);
		e = snap_find(&t, "changed.txt");
		{
			oid want;
			sha256_buf(&want, "has changed", 11);
			assert_memory_equal(e->id.b, want.b, SHA256_LEN);
		}
	}
	assert_false(statcache_unchanged(c, &t));
	statcache_free(c);
	UNUSED(real_old);
	snap_release(&s);
	snap_release(&t);
}

static void rewrite(const char *path, const buf *b)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, b->ptr, b->len), 0);
	close(fd);
}

/* Move the cache's scan_ns (header offset 8, then the header's check at
 * 24) to now + 10 s: directories made a moment ago count as settled, as
 * if the scan that wrote it had run later. */
static void settle_cache(const char *cpath)
{
	buf b = BUF_INIT;

	assert_int_equal(fs_read_path(cpath, &b), 0);
	assert_true(b.len >= 32 && !memcmp(b.ptr, "DSTC\2\0\0\0", 8));
	put_u64le((unsigned char *)b.ptr + 8,
		  (uint64_t)(fs_now_ns() + 10 * 1000000000LL));
	put_u64le((unsigned char *)b.ptr + 24,
		  statcache_check64((const unsigned char *)b.ptr, 24));
	rewrite(cpath, &b);
	buf_release(&b);
}

/* In the cached listing of directory `dir`, rename `from` to `to` (same
 * length, order kept) and reseal the record: a listing the walk can only
 * have from the cache. */
static void edit_listing(const char *cpath, const char *dir, const char *from,
			 const char *to)
{
	buf b = BUF_INIT;
	size_t off = 32, ndirs;
	bool done = false;

	assert_int_equal(strlen(from), strlen(to));
	assert_int_equal(fs_read_path(cpath, &b), 0);
	ndirs = (size_t)get_u64le((const unsigned char *)b.ptr + 16);
	for (size_t k = 0; k < ndirs && !done; k++) {
		unsigned char *r = (unsigned char *)b.ptr + off;
		size_t len = get_u32le(r), n = get_u32le(r + 4);
		size_t plen = get_u16le(r + 8);
		char *names = (char *)r + 44 + plen + n * 84;
		off += len;
		if (plen != strlen(dir) || memcmp(r + 44, dir, plen))
			continue;
		for (size_t i = 0; i < n; i++) {
			char *nm = names + get_u32le(r + 44 + plen + i * 84);
			if (!strcmp(nm, from)) {
				memcpy(nm, to, strlen(to));
				done = true;
			}
		}
		put_u64le(r + len - 8, statcache_check64(r, len - 8));
	}
	assert_true(done);
	rewrite(cpath, &b);
	buf_release(&b);
}

/* Is directory rel's cached listing trusted for its stat data now? */
static bool listing_trusted(statcache *c, const fixture *f, const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;
	statcache_dir d;

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(lstat(p, &st), 0);
	statcache_dir_open(c, &d, rel, strlen(rel), &st);
	return d.listing;
}

/*
 * A tree where every file is old.  The first scan writes the cache
 * (statcache_update); its directories, made a moment ago, are settled by
 * moving the cache's scan_ns.  The second scan then takes every listing
 * and every id from the cache: the same result, statcache_unchanged, and
 * nothing written.  A listing edited in the cache shows the walk did not
 * read the directory, until the directory changes.
 */
static void test_cache_unchanged(void **state)
{
	fixture *f = *state;
	char cpath[PATH_MAX * 2], dpath[PATH_MAX * 2 + 8];
	scan_opts o;
	snap s = SNAP_INIT, t = SNAP_INIT;
	statcache *c;
	struct stat st0, st1;
	time_t old = 978307200;
	static const char *const files[] = { "a", "d/b", "d/e/c" };
	static const char *const dirs[] = { "", "d", "d/e" };

	snprintf(cpath, sizeof(cpath), "%s/statcache", f->base);
	snprintf(dpath, sizeof(dpath), "%s.delta", cpath);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		put(f, files[i], files[i], 0644);
		set_mtime(f, files[i], old);
	}
	link_at(f, "a", "l");
	set_mtime(f, "l", old);
	put(f, "huge", "0123456789", 0644); /* skipped: never cached, never
					       matters */
	memset(&o, 0, sizeof(o));
	o.max_file_size = 5;
	o.threads = 2;

	/* the first scan: no cache yet; the update writes it */
	assert_int_equal(statcache_load(&c, cpath), 0);
	o.cache = c;
	scan_ok(&s, f, &o);
	assert_int_equal(s.n, 5);
	assert_false(statcache_unchanged(c, &s));
	assert_int_equal(statcache_update(cpath, &s, c), 0);
	statcache_free(c);
	settle_cache(cpath);
	assert_int_equal(stat(cpath, &st0), 0);

	/* the second: everything from the cache */
	assert_int_equal(statcache_load(&c, cpath), 0);
	o.cache = c;
	scan_ok(&t, f, &o);
	testutil_same_scan(&s, &t, "scan with a clean cache");
	for (size_t i = 0; i < t.n; i++)
		if (t.v[i].mode != MODE_SKIP && t.v[i].cached != STATCACHE_BASE)
			fail_msg("'%s' was not taken from the cache",
				 t.v[i].path);
	if (!statcache_unchanged(c, &t))
		fail_msg("every entry hit the cache but statcache_unchanged "
			 "is false");
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (!listing_trusted(c, f, dirs[i]))
			fail_msg("the listing of '%s' is not trusted", dirs[i]);
	assert_int_equal(statcache_update(cpath, &t, c), 0);
	statcache_free(c);
	assert_int_equal(stat(cpath, &st1), 0);
	if (st0.st_ino != st1.st_ino || st_mtime_ns(&st0) != st_mtime_ns(&st1))
		fail_msg("nothing changed, yet the stat cache was written");
	assert_int_equal(access(dpath, F_OK), -1);
	snap_release(&t);

	/* d/e's cached listing says "x", not "c": the walk believes it */
	edit_listing(cpath, "d/e", "c", "x");
	assert_int_equal(statcache_load(&c, cpath), 0);
	o.cache = c;
	scan_ok(&t, f, &o);
	statcache_free(c);
	if (snap_find(&t, "d/e/c"))
		fail_msg("'d/e' was read from the disk, not from the cache");
	assert_int_equal(t.n, s.n - 1);
	snap_release(&t);

	/* once d/e changes (a name added and removed), it is read again */
	{
		char p[PATH_MAX * 2], dp[PATH_MAX * 2];
		struct stat before, now;
		snprintf(p, sizeof(p), "%s/d/e/tmp", f->root);
		snprintf(dp, sizeof(dp), "%s/d/e", f->root);
		assert_int_equal(lstat(dp, &before), 0);
		do { /* until the clock has moved on (coarse timestamps) */
			put(f, "d/e/tmp", "t", 0644);
			assert_int_equal(unlink(p), 0);
			assert_int_equal(lstat(dp, &now), 0);
		} while (st_ctime_ns(&now) == st_ctime_ns(&before) &&
			 st_mtime_ns(&now) == st_mtime_ns(&before));
	}
	assert_int_equal(statcache_load(&c, cpath), 0);
	assert_false(listing_trusted(c, f, "d/e"));
	o.cache = c;
	scan_ok(&t, f, &o);
	statcache_free(c);
	testutil_same_scan(&s, &t, "scan after d/e changed");
	snap_release(&s);
	snap_release(&t);
}

/* skip_dir: a store living inside the root is never scanned. */
static void test_skip_dir(void **state)
{
	fixture *f = *state;
	scan_opts o;
	snap s = SNAP_INIT;

	put(f, "keep", "k", 0644);
	put(f, "var/store/packs/x", "store", 0644);
	put(f, "var/other", "o", 0644);
	put(f, "var/storeX", "s", 0644);
	memset(&o, 0, sizeof(o));
	o.skip_dir = "var/store";
	scan_ok(&s, f, &o);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.v[0].path, "keep");
	assert_string_equal(s.v[1].path, "var/other");
	assert_string_equal(s.v[2].path, "var/storeX");
	snap_release(&s);
}

/* Two walking threads per CPU by default, at least 2, at most 64. */
static void test_default_threads(void **state)
{
	(void)state;
	assert_int_equal(scan_default_threads(1), 2);
	assert_int_equal(scan_default_threads(2), 4);
	assert_int_equal(scan_default_threads(0), 2); /* sysconf failed */
	assert_int_equal(scan_default_threads(-1), 2);
	assert_int_equal(scan_default_threads(32), 64);
	assert_int_equal(scan_default_threads(33), 64);
	assert_int_equal(scan_default_threads(100000), 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hand_tree, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_contents, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_agree, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cache_hits_skip_hashing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_unchanged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_skip_dir, setup, teardown),
		cmocka_unit_test(test_default_threads),
	};

	test_seed();
	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
