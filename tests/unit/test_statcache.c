/*
 * test_statcache.c - the persistent stat cache.
 *
 * The cache file records the moment it was written; to test the racy
 * rule exactly (an entry whose mtime second is >= that second must miss)
 * the tests rewrite that field and fix the trailing checksum, which is
 * the documented format (statcache.c head comment), instead of racing the
 * clock.  Damage of any kind must give an empty cache, never an error and
 * never a hit.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "scan/statcache.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/snap.h"

#include <ftw.h>

#define SEC    1000000000LL
#define SC_HDR 24

typedef testutil_fixture fixture;

static int setup(void **state)
{
	return testutil_scratch_setup(state, "sc", "statcache");
}

static int teardown(void **state)
{
	return testutil_scratch_teardown(state);
}

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

/* Rewrite the written_ns field of a saved cache and fix its checksum. */
static void set_written(const char *path, int64_t written_ns)
{
	buf b = BUF_INIT;
	oid sum;
	int fd;

	assert_int_equal(fs_read_path(path, &b), 0);
	assert_true(b.len >= SC_HDR + SHA256_LEN);
	put_u64le((unsigned char *)b.ptr + 8, (uint64_t)written_ns);
	sha256_buf(&sum, b.ptr, b.len - SHA256_LEN);
	memcpy(b.ptr + b.len - SHA256_LEN, sum.b, SHA256_LEN);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, b.ptr, b.len), 0);
	close(fd);
	buf_release(&b);
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

static bool lookup(statcache *c, const snap_entry *e, oid *id)
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

static void sample(snap *s, int64_t mtime)
{
	add(s, "a.txt", MODE_FILE, 10, mtime, 1);
	add(s, "bin/run", MODE_EXEC, 20, mtime + 5, 2);
	add(s, "dir/link", MODE_LINK, 3, mtime + 7, 3);
	add(s, "dir/sub/deep.c", MODE_FILE, 0, mtime - 3 * SEC, 4);
	add(s, "big.iso", MODE_SKIP, 1ull << 40, mtime, 0); /* never cached */
	add(s, "nostat", MODE_FILE, 5, 0, 6);		    /* no stat data */
	snap_sort(s);
}

/* --- tests
 * -------------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	int64_t old = fs_now_ns() - 100 * SEC;

	sample(&s, old);
	assert_int_equal(statcache_save(f->path, &s), 0);
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_non_null(c);
	for (size_t i = 0; i < s.n; i++) {
		const snap_entry *e = &s.v[i];
		bool cacheable = e->mode != MODE_SKIP && e->mtime_ns != 0;
		oid id;
		bool hit = lookup(c, e, &id);
		if (hit != cacheable)
			fail_msg("'%s': hit=%d, cacheable=%d", e->path, hit,
				 cacheable);
		if (hit)
			assert_memory_equal(id.b, e->id.b, SHA256_LEN);
	}
	/* unknown paths, and prefixes of known ones, miss */
	{
		snap_entry probe = s.v[0];
		oid id;
		assert_false(statcache_lookup(c, "a.tx", &probe, &id));
		assert_false(statcache_lookup(c, "a.txt/", &probe, &id));
		assert_false(statcache_lookup(c, "zzz", &probe, &id));
		assert_false(statcache_lookup(c, "", &probe, &id));
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

static void test_missing_is_empty(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;

	sample(&s, fs_now_ns() - 100 * SEC);
	decree_error_clear();
	assert_int_equal(statcache_load(&c, f->path), 0); /* does not exist */
	assert_non_null(c);
	assert_string_equal(decree_error_last(), "");
	assert_all_miss(c, &s);
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
	assert_int_equal(statcache_save(f->path, &s), 0);
	assert_int_equal(statcache_load(&c, f->path), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snap_entry probe = s.v[0];
		oid id;
		bool hit;
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
		if (hit != (cases[i].field == 0))
			fail_msg("%s: hit=%d", cases[i].what, hit);
	}
	statcache_free(c);
	snap_release(&s);
}

/* The racy rule, at exact second boundaries. */
static void test_racy(void **state)
{
	fixture *f = *state;
	const int64_t W = 1700000000LL * SEC + 123456789; /* cache written here
							   */
	static const struct {
		const char *what;
		int64_t mtime; /* relative to the start of W's second */
		bool hit;
	} cases[] = {
		{ "10 s before", -10 * SEC, true },
		{ "last ns of previous second", -1, true },
		{ "first ns of the same second", 0, false },
		{ "same second, before written", 100, false },
		{ "same second, after written", 900000000, false },
		{ "next second", SEC, false },
		{ "far future", 1000 * SEC, false },
	};
	snap s = SNAP_INIT;
	statcache *c;
	int64_t base = W / SEC * SEC;
	char name[16];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(name, sizeof(name), "f%zu", i);
		add(&s, name, MODE_FILE, 1, base + cases[i].mtime,
		    (unsigned)i + 1);
	}
	snap_sort(&s);
	assert_int_equal(statcache_save(f->path, &s), 0);
	set_written(f->path, W);
	assert_int_equal(statcache_load(&c, f->path), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snap_entry *e;
		oid id;
		snprintf(name, sizeof(name), "f%zu", i);
		e = snap_find(&s, name);
		assert_non_null(e);
		if (lookup(c, e, &id) != cases[i].hit)
			fail_msg("%s: expected %s", cases[i].what,
				 cases[i].hit ? "hit" : "miss");
	}
	statcache_free(c);

	/* a cache saved now: an entry modified this very second is racy */
	{
		snap t = SNAP_INIT;
		int64_t now = fs_now_ns();
		add(&t, "fresh", MODE_FILE, 1, now, 1);
		add(&t, "old", MODE_FILE, 1, now - 5 * SEC, 2);
		snap_sort(&t);
		assert_int_equal(statcache_save(f->path, &t), 0);
		assert_int_equal(statcache_load(&c, f->path), 0);
		{
			oid id;
			assert_false(lookup(c, snap_find(&t, "fresh"), &id));
			assert_true(lookup(c, snap_find(&t, "old"), &id));
		}
		statcache_free(c);
		snap_release(&t);
	}
	snap_release(&s);
}

/* Any damage gives an empty cache: flips, truncations, crafted counts. */
static void test_damage(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	buf good = BUF_INIT, bad = BUF_INIT;
	size_t hits_ok = 0;

	sample(&s, fs_now_ns() - 100 * SEC);
	assert_int_equal(statcache_save(f->path, &s), 0);
	assert_int_equal(fs_read_path(f->path, &good), 0);

	for (size_t pos = 0; pos < good.len; pos++) {
		buf_clear(&bad);
		buf_put(&bad, good.ptr, good.len);
		bad.ptr[pos] ^= 0x01;
		write_raw(f->path, bad.ptr, bad.len);
		assert_int_equal(statcache_load(&c, f->path), 0);
		assert_all_miss(c, &s);
		statcache_free(c);
	}
	for (size_t len = 0; len < good.len; len++) {
		write_raw(f->path, good.ptr, len);
		assert_int_equal(statcache_load(&c, f->path), 0);
		assert_all_miss(c, &s);
		statcache_free(c);
	}
	/* well-formed checksums around malformed contents */
	{
		static const struct {
			const char *what;
			size_t off;
			uint64_t val;
			int width; /* 2, 4 or 8 */
		} crafted[] = {
			{ "count + 1", 16, 5, 8 },
			{ "count - 1", 16, 3, 8 },
			{ "count huge", 16, 0x7fffffffffffffffull, 8 },
			{ "count 2^32", 16, 1ull << 32, 8 },
			{ "first path length too big", SC_HDR, 0xffff, 2 },
			{ "first path length short", SC_HDR, 1, 2 },
			{ "version 2", 4, 2, 4 },
		};
		for (size_t i = 0; i < ARRAY_SIZE(crafted); i++) {
			oid sum;
			unsigned char *p;
			buf_clear(&bad);
			buf_put(&bad, good.ptr, good.len);
			p = (unsigned char *)bad.ptr + crafted[i].off;
			if (crafted[i].width == 8)
				put_u64le(p, crafted[i].val);
			else if (crafted[i].width == 4)
				put_u32le(p, (uint32_t)crafted[i].val);
			else {
				p[0] = (unsigned char)crafted[i].val;
				p[1] = (unsigned char)(crafted[i].val >> 8);
			}
			sha256_buf(&sum, bad.ptr, bad.len - SHA256_LEN);
			memcpy(bad.ptr + bad.len - SHA256_LEN, sum.b,
			       SHA256_LEN);
			write_raw(f->path, bad.ptr, bad.len);
			assert_int_equal(statcache_load(&c, f->path), 0);
			for (size_t k = 0; k < s.n; k++) {
				oid id;
				if (lookup(c, &s.v[k], &id))
					fail_msg("%s: hit for '%s'",
						 crafted[i].what, s.v[k].path);
			}
			statcache_free(c);
		}
	}
	/* garbage and a directory in its place */
	write_raw(f->path, "not a stat cache at all, but long enough to parse",
		  50);
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_all_miss(c, &s);
	statcache_free(c);
	unlink(f->path);
	assert_int_equal(mkdir(f->path, 0755), 0);
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_all_miss(c, &s);
	statcache_free(c);
	rmdir(f->path);

	/* and the original still works */
	write_raw(f->path, good.ptr, good.len);
	assert_int_equal(statcache_load(&c, f->path), 0);
	for (size_t k = 0; k < s.n; k++) {
		oid id;
		hits_ok += lookup(c, &s.v[k], &id);
	}
	assert_int_equal(hits_ok, 4);
	statcache_free(c);
	buf_release(&good);
	buf_release(&bad);
	snap_release(&s);
}

/* Look every cacheable entry up the way a scan does. */
static size_t scan_like(statcache *c, const snap *s)
{
	size_t hits = 0;
	for (size_t i = 0; i < s->n; i++) {
		const snap_entry *e = &s->v[i];
		oid id;
		if (e->mode == MODE_SKIP)
			continue;
		hits += lookup(c, e, &id);
	}
	return hits;
}

static void test_unchanged(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	int64_t old = fs_now_ns() - 100 * SEC;

	/* empty cache, empty snap */
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_true(statcache_unchanged(c, &s));
	statcache_free(c);

	add(&s, "a", MODE_FILE, 1, old, 1);
	add(&s, "b/c", MODE_EXEC, 2, old, 2);
	add(&s, "d", MODE_FILE, 3, old, 3);
	add(&s, "skipped", MODE_SKIP, 1ull << 33, old, 0);
	snap_sort(&s);
	assert_int_equal(statcache_save(f->path, &s), 0);

	/* every entry hit: unchanged */
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_int_equal(scan_like(c, &s), 3);
	assert_true(statcache_unchanged(c, &s));
	statcache_free(c);

	/* nothing looked up yet: not known to be unchanged */
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_false(statcache_unchanged(c, &s));
	statcache_free(c);

	/* one file changed: its lookup misses */
	{
		snap t = SNAP_INIT;
		add(&t, "a", MODE_FILE, 1, old + 1, 1);
		add(&t, "b/c", MODE_EXEC, 2, old, 2);
		add(&t, "d", MODE_FILE, 3, old, 3);
		snap_sort(&t);
		assert_int_equal(statcache_load(&c, f->path), 0);
		assert_int_equal(scan_like(c, &t), 2);
		assert_false(statcache_unchanged(c, &t));
		statcache_free(c);
		snap_release(&t);
	}
	/* one file deleted: its record is never asked for again, so keeping
	 * it is harmless and no save is needed (it goes with the next base) */
	{
		snap t = SNAP_INIT;
		add(&t, "a", MODE_FILE, 1, old, 1);
		add(&t, "d", MODE_FILE, 3, old, 3);
		snap_sort(&t);
		assert_int_equal(statcache_load(&c, f->path), 0);
		assert_int_equal(scan_like(c, &t), 2);
		assert_true(statcache_unchanged(c, &t));
		statcache_free(c);
		snap_release(&t);
	}
	/* one file added: it misses */
	{
		snap t = SNAP_INIT;
		add(&t, "a", MODE_FILE, 1, old, 1);
		add(&t, "b/c", MODE_EXEC, 2, old, 2);
		add(&t, "d", MODE_FILE, 3, old, 3);
		add(&t, "e", MODE_FILE, 3, old, 4);
		snap_sort(&t);
		assert_int_equal(statcache_load(&c, f->path), 0);
		assert_int_equal(scan_like(c, &t), 3);
		assert_false(statcache_unchanged(c, &t));
		statcache_free(c);
		snap_release(&t);
	}
	/* a racy entry never counts as unchanged: the save refreshes it */
	{
		snap t = SNAP_INIT;
		add(&t, "a", MODE_FILE, 1, old, 1);
		add(&t, "racy", MODE_FILE, 1, fs_now_ns() + 10 * SEC, 2);
		snap_sort(&t);
		assert_int_equal(statcache_save(f->path, &t), 0);
		assert_int_equal(statcache_load(&c, f->path), 0);
		assert_int_equal(scan_like(c, &t), 1);
		assert_false(statcache_unchanged(c, &t));
		statcache_free(c);
		snap_release(&t);
	}
	snap_release(&s);
}

/*
 * statcache_save skips paths longer than its 16-bit length field but must
 * then not count them either: the header count has to match the records,
 * or the whole file reads back as damaged.
 */
/* Like a scan: look every entry up and remember where it hit. */
static void scan_marking(statcache *c, snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		snap_entry *e = &s->v[i];
		oid id;
		if (e->mode != MODE_SKIP)
			e->cached =
				(uint8_t)statcache_lookup(c, e->path, e, &id);
	}
}

static void test_delta(void **state)
{
	fixture *f = *state;
	char dpath[PATH_MAX];
	snap s = SNAP_INIT, t = SNAP_INIT;
	statcache *c;
	struct stat st;
	oid id;
	int64_t old = fs_now_ns() - 100 * SEC;
	char name[32];

	snprintf(dpath, sizeof(dpath), "%s.delta", f->path);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		add(&s, name, MODE_FILE, 10, old, (unsigned)i + 1);
		add(&t, name, MODE_FILE, 10, old, (unsigned)i + 1);
	}
	snap_sort(&s);
	assert_int_equal(statcache_save(f->path, &s), 0);

	/* one of 40 changed (below 1/16): only a delta is written */
	t.v[0].mtime_ns = old + SEC;
	memset(t.v[0].id.b, 0xee, SHA256_LEN);
	snap_sort(&t);
	assert_int_equal(statcache_load(&c, f->path), 0);
	scan_marking(c, &t);
	assert_int_equal(t.v[0].cached, 0);
	assert_int_equal(t.v[1].cached, STATCACHE_BASE);
	assert_int_equal(statcache_update(f->path, &t, c), 0);
	statcache_free(c);
	assert_int_equal(stat(dpath, &st), 0);

	/* the delta vouches for the new state, and hides the old record */
	assert_int_equal(statcache_load(&c, f->path), 0);
	assert_int_equal(statcache_lookup(c, t.v[0].path, &t.v[0], &id),
			 STATCACHE_DELTA);
	assert_memory_equal(id.b, t.v[0].id.b, SHA256_LEN);
	assert_int_equal(statcache_lookup(c, s.v[0].path, &s.v[0], &id), 0);
	assert_int_equal(statcache_lookup(c, t.v[5].path, &t.v[5], &id),
			 STATCACHE_BASE);
	statcache_free(c);

	/* many changes: folded into a new base, the delta goes */
	for (size_t i = 0; i < t.n; i++)
		t.v[i].mtime_ns = old + 2 * SEC;
	assert_int_equal(statcache_load(&c, f->path), 0);
	scan_marking(c, &t);
	assert_int_equal(statcache_update(f->path, &t, c), 0);
	statcache_free(c);
	assert_int_equal(stat(dpath, &st), -1);
	assert_int_equal(statcache_load(&c, f->path), 0);
	for (size_t i = 0; i < t.n; i++)
		assert_int_equal(statcache_lookup(c, t.v[i].path, &t.v[i], &id),
				 STATCACHE_BASE);
	statcache_free(c);
	snap_release(&s);
	snap_release(&t);
}

static void test_unencodable_path(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT;
	statcache *c;
	char *longp = malloc(70001);
	int64_t old = fs_now_ns() - 100 * SEC;
	oid id;
	bool hit;

	assert_non_null(longp);
	memset(longp, 'p', 70000);
	longp[70000] = '\0';
	add(&s, "a", MODE_FILE, 1, old, 1);
	add(&s, longp, MODE_FILE, 1, old, 2);
	snap_sort(&s);
	free(longp);
	assert_int_equal(statcache_save(f->path, &s), 0);
	assert_int_equal(statcache_load(&c, f->path), 0);
	hit = lookup(c, snap_find(&s, "a"), &id);
	statcache_free(c);
	snap_release(&s);
	if (!hit)
		fail_msg(
			"a snap with one path > 65535 bytes makes the saved cache "
			"unreadable (header count includes the skipped record)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_missing_is_empty, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fields_must_match, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_racy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unchanged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_delta, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unencodable_path, setup,
						teardown),
	};

	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
