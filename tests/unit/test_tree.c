/*
 * test_tree.c - tree objects: write, read back, share, and refuse damage.
 *
 * Random snapshots (names chosen to stress the canonical order: "a",
 * "a.c", "a0", "a-b", ...; files, executables, symlinks and skipped
 * entries) are written through a real pack writer and read back; the
 * result must equal the sorted input, and tree_write without a writer must
 * give the same root id.  Changing one file must change exactly the ids of
 * its ancestors and store exactly that many new trees.  tree_parse is fed
 * hand-encoded objects: names with '/', ".", "..", NUL, empty, too long;
 * unsorted and duplicate entries; bad modes; every truncation.
 * Random tests print their seed; DECREE_TEST_SEED=<n> replays.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "store/tree.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "store/odb.h"
#include "store/snap.h"
#include "util/strset.h"

#include <ftw.h>
#include <time.h>

/* --- helpers ----------------------------------------------------------------
 */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return testutil_rnd(&rng_state);
}

static uint64_t test_seed(void)
{
	return testutil_seed("test_tree");
}

typedef struct {
	char dir[PATH_MAX];
	odb *db;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (testutil_mkdtemp(f->dir, sizeof(f->dir), "tree") < 0 ||
	    odb_open(&f->db, f->dir) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	odb_free(f->db);
	testutil_rm_rf(f->dir);
	free(f);
	return 0;
}

static snap_entry *add(snap *s, const char *path, uint32_t mode, uint64_t size,
		       const oid *id)
{
	snap_entry *e = snap_add(s, path, strlen(path));

	assert_non_null(e);
	e->mode = mode;
	e->size = size;
	if (id)
		e->id = *id;
	return e;
}

static void text_id(oid *id, const char *text)
{
	sha256_buf(id, text, strlen(text));
}

static void write_and_commit(oid *root, odb *db, const snap *s)
{
	odb_writer *w;

	assert_int_equal(odb_writer_new(&w, db), 0);
	assert_int_equal(tree_write(root, w, s), 0);
	assert_int_equal(odb_writer_commit(w), 0);
	odb_writer_free(w);
}

static void assert_snaps_equal(const snap *a, const snap *b)
{
	if (a->n != b->n)
		fail_msg("snaps differ in size: %zu vs %zu", a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const snap_entry *x = &a->v[i], *y = &b->v[i];
		if (strcmp(x->path, y->path) || x->mode != y->mode ||
		    x->size != y->size || oid_cmp(&x->id, &y->id))
			fail_msg("entry %zu: '%s' %o %llu vs '%s' %o %llu", i,
				 x->path, x->mode, (unsigned long long)x->size,
				 y->path, y->mode, (unsigned long long)y->size);
	}
}

/* --- random trees
 * ---------------------------------------------------------------- */

static const char *const vocab[] = {
	"a",	    "a.c", "a0",       "a-b",	  "a b", "a!",
	"b",	    "B",   "z",	       ".hidden", "...", "\xc3\xa9t\xc3\xa9",
	"Makefile", "src", "x.tar.gz", "~",
};

/* A random path that neither is nor contains an existing file or dir. */
static bool random_path(char *out, size_t outlen, strset *files, strset *dirs)
{
	size_t depth = 1 + rnd() % 4, k = 0;

	for (size_t d = 0; d < depth; d++) {
		const char *w = vocab[rnd() % ARRAY_SIZE(vocab)];
		int n = snprintf(out + k, outlen - k, "%s%s", d ? "/" : "", w);
		if (rnd() % 3 == 0)
			n += snprintf(out + k + (size_t)n,
				      outlen - k - (size_t)n, "%u",
				      (unsigned)(rnd() % 3));
		k += (size_t)n;
		out[k] = '\0';
		/* an ancestor must not be a file */
		if (d + 1 < depth && strset_has(files, out))
			return false;
	}
	if (strset_has(files, out) || strset_has(dirs, out))
		return false;
	return true;
}

static void mark_dirs(strset *dirs, const char *path)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		assert_int_equal(strset_put(dirs, tmp, 1), 0);
		*p = '/';
	}
}

static void random_snap(snap *s, size_t n)
{
	strset files = STRSET_INIT, dirs = STRSET_INIT;
	char path[256];

	for (size_t i = 0, tries = 0; i < n && tries < 50 * n; tries++) {
		static const uint32_t modes[] = { MODE_FILE, MODE_FILE,
						  MODE_EXEC, MODE_LINK,
						  MODE_SKIP };
		uint32_t mode;
		oid id;
		if (!random_path(path, sizeof(path), &files, &dirs))
			continue;
		mode = modes[rnd() % ARRAY_SIZE(modes)];
		memset(&id, 0, sizeof(id));
		if (mode != MODE_SKIP)
			for (int k = 0; k < SHA256_LEN; k++)
				id.b[k] = (unsigned char)rnd();
		add(s, path, mode,
		    mode == MODE_SKIP ? (100u << 20) + rnd() % 1000
				      : rnd() % 100000,
		    &id);
		assert_int_equal(strset_put(&files, path, 1), 0);
		mark_dirs(&dirs, path);
		i++;
	}
	strset_release(&files);
	strset_release(&dirs);
	snap_sort(s);
}

static void test_roundtrip_random(void **state)
{
	fixture *f = *state;

	rng_state = test_seed() ^ 0x7777;
	for (int iter = 0; iter < 40; iter++) {
		snap s = SNAP_INIT, back = SNAP_INIT;
		oid root, root2;
		random_snap(&s, (size_t)(iter == 0 ? 1 : 1 + rnd() % 120));
		write_and_commit(&root, f->db, &s);
		assert_int_equal(tree_write(&root2, NULL, &s), 0);
		assert_memory_equal(root.b, root2.b, SHA256_LEN);
		assert_int_equal(tree_read(&back, f->db, &root), 0);
		assert_snaps_equal(&s, &back);
		/* reading appends */
		assert_int_equal(tree_read(&back, f->db, &root), 0);
		assert_int_equal(back.n, 2 * s.n);
		snap_release(&s);
		snap_release(&back);
	}
}

/* The same entries added in another order give the same root. */
static void test_order_independent(void **state)
{
	fixture *f = *state;
	snap a = SNAP_INIT, b = SNAP_INIT;
	oid ra, rb;

	UNUSED(f);
	rng_state = test_seed() ^ 0x8888;
	random_snap(&a, 200);
	for (size_t i = a.n; i-- > 0;)
		add(&b, a.v[i].path, a.v[i].mode, a.v[i].size, &a.v[i].id);
	snap_sort(&b);
	assert_int_equal(tree_write(&ra, NULL, &a), 0);
	assert_int_equal(tree_write(&rb, NULL, &b), 0);
	assert_memory_equal(ra.b, rb.b, SHA256_LEN);
	snap_release(&a);
	snap_release(&b);
}

static void test_empty_and_edges(void **state)
{
	fixture *f = *state;
	snap s = SNAP_INIT, back = SNAP_INIT;
	oid root, id;
	buf obj = BUF_INIT;
	int type;

	/* the empty tree */
	write_and_commit(&root, f->db, &s);
	assert_int_equal(odb_read(&obj, &type, f->db, &root), 0);
	assert_int_equal(type, ODB_TREE);
	assert_int_equal(obj.len, 12);
	assert_memory_equal(obj.ptr, "DTRE\1\0\0\0\0\0\0\0", 12);
	assert_int_equal(tree_read(&back, f->db, &root), 0);
	assert_int_equal(back.n, 0);

	/* bad paths are refused by the writer */
	{
		static const char *const bad[] = { "", "a//b", "a/", "/a" };
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			snap t = SNAP_INIT;
			text_id(&id, "x");
			add(&t, bad[i], MODE_FILE, 1, &id);
			if (tree_write(&root, NULL, &t) != DECREE_EINVALID)
				fail_msg("tree_write accepted path '%s'",
					 bad[i]);
			snap_release(&t);
		}
	}
	/* a longest name works, one more byte does not */
	{
		char name[NAME_MAX + 2];
		snap t = SNAP_INIT;
		memset(name, 'n', NAME_MAX);
		name[NAME_MAX] = '\0';
		text_id(&id, "x");
		add(&t, name, MODE_FILE, 1, &id);
		write_and_commit(&root, f->db, &t);
		assert_int_equal(tree_read(&back, f->db, &root), 0);
		assert_int_equal(back.n, 1);
		assert_string_equal(back.v[0].path, name);
		snap_release(&t);
		snap_release(&back);
		name[NAME_MAX] = 'n';
		name[NAME_MAX + 1] = '\0';
		add(&t, name, MODE_FILE, 1, &id);
		assert_int_equal(tree_write(&root, NULL, &t), DECREE_EINVALID);
		snap_release(&t);
	}
	/* deep nesting: fine at 400 levels, refused beyond the limit */
	{
		buf p = BUF_INIT;
		snap t = SNAP_INIT;
		for (int i = 0; i < 400; i++)
			buf_puts(&p, "d/");
		buf_puts(&p, "f");
		add(&t, p.ptr, MODE_FILE, 1, &id);
		write_and_commit(&root, f->db, &t);
		assert_int_equal(tree_read(&back, f->db, &root), 0);
		assert_int_equal(back.n, 1);
		assert_string_equal(back.v[0].path, p.ptr);
		snap_release(&back);
		snap_release(&t);
		buf_clear(&p);
		for (int i = 0; i < 600; i++)
			buf_puts(&p, "d/");
		buf_puts(&p, "f");
		add(&t, p.ptr, MODE_FILE, 1, &id);
		assert_int_equal(tree_write(&root, NULL, &t), DECREE_EINVALID);
		snap_release(&t);
		buf_release(&p);
	}
	/* reading: a missing root, a blob as root */
	memset(&root, 0x42, sizeof(root));
	assert_int_equal(tree_read(&back, f->db, &root), DECREE_ENOTFOUND);
	{
		odb_writer *w;
		assert_int_equal(odb_writer_new(&w, f->db), 0);
		assert_int_equal(odb_writer_add(w, ODB_BLOB, "just a blob", 11,
						NULL, &root),
				 0);
		assert_int_equal(odb_writer_commit(w), 0);
		odb_writer_free(w);
		assert_int_equal(tree_read(&back, f->db, &root),
				 DECREE_ECORRUPT);
	}
	snap_release(&back);
	buf_release(&obj);
}

/* --- shared subtrees
 * --------------------------------------------------------------- */

struct dir_ids {
	char path[32][64];
	oid id[32];
	uint64_t size[32];
	size_t n;
	odb *db;
	char prefix[64];
};

static int collect_dirs_rec(struct dir_ids *d, const oid *tree);

static int dir_entry_fn(void *payload, const char *name, uint32_t mode,
			uint64_t size, const oid *id)
{
	struct dir_ids *d = payload;
	char saved[64];
	int r;

	if (mode != MODE_DIR)
		return 0;
	assert_true(d->n < 32);
	snprintf(d->path[d->n], sizeof(d->path[0]), "%s%s", d->prefix, name);
	d->id[d->n] = *id;
	d->size[d->n] = size;
	snprintf(saved, sizeof(saved), "%s", d->prefix);
	snprintf(d->prefix, sizeof(d->prefix), "%s/", d->path[d->n]);
	d->n++;
	r = collect_dirs_rec(d, id);
	snprintf(d->prefix, sizeof(d->prefix), "%s", saved);
	return r;
}

static int collect_dirs_rec(struct dir_ids *d, const oid *tree)
{
	buf obj = BUF_INIT;
	int r = odb_read(&obj, NULL, d->db, tree);

	if (r == 0)
		r = tree_parse(obj.ptr, obj.len, dir_entry_fn, d);
	buf_release(&obj);
	return r;
}

/* Every directory's tree id, "" for the root. */
static void collect_dirs(struct dir_ids *d, odb *db, const oid *root)
{
	memset(d, 0, sizeof(*d));
	d->db = db;
	snprintf(d->path[0], sizeof(d->path[0]), "%s", "");
	d->id[0] = *root;
	d->n = 1;
	assert_int_equal(collect_dirs_rec(d, root), 0);
}

static const oid *dir_id(const struct dir_ids *d, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->path[i], path))
			return &d->id[i];
	fail_msg("no directory '%s'", path);
	return NULL;
}

static int count_pack_fn(void *payload, const oid *id, int type,
			 uint64_t raw_len, const char *pack)
{
	size_t *counts = payload;
	UNUSED(id);
	UNUSED(raw_len);
	UNUSED(pack);
	counts[type == ODB_TREE ? 0 : 1]++;
	return 0;
}

static void test_shared_subtrees(void **state)
{
	fixture *f = *state;
	static const char *const paths[] = {
		"a/b/c/file1", "a/b/c/other", "a/b/d/file2", "a/e/file3",
		"a/top",       "f/file4",     "g.txt",
	};
	static const char *const changed[] = { "", "a", "a/b", "a/b/c" };
	static const char *const unchanged[] = { "a/b/d", "a/e", "f" };
	snap s = SNAP_INIT;
	struct dir_ids before, after;
	oid root1, root2, id;
	size_t counts1[2] = { 0, 0 }, counts2[2] = { 0, 0 };

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		text_id(&id, paths[i]);
		add(&s, paths[i], MODE_FILE, 10 * (i + 1), &id);
	}
	snap_sort(&s);
	write_and_commit(&root1, f->db, &s);
	collect_dirs(&before, f->db, &root1);
	assert_int_equal(before.n, 7); /* "", a, a/b, a/b/c, a/b/d, a/e, f */
	assert_int_equal(odb_foreach(f->db, count_pack_fn, counts1), 0);
	assert_int_equal(counts1[0], 7);
	/* directory sizes add up the bytes below them */
	for (size_t i = 0; i < before.n; i++) {
		if (!strcmp(before.path[i], "a"))
			assert_int_equal(before.size[i],
					 10 + 20 + 30 + 40 + 50);
		if (!strcmp(before.path[i], "a/b/c"))
			assert_int_equal(before.size[i], 10 + 20);
	}

	/* change one file deep down */
	text_id(&id, "new content of file1");
	snap_find(&s, "a/b/c/file1")->id = id;
	write_and_commit(&root2, f->db, &s);
	collect_dirs(&after, f->db, &root2);
	assert_int_equal(after.n, 7);
	for (size_t i = 0; i < ARRAY_SIZE(changed); i++)
		if (!oid_cmp(dir_id(&before, changed[i]),
			     dir_id(&after, changed[i])))
			fail_msg("tree id of '%s' did not change", changed[i]);
	for (size_t i = 0; i < ARRAY_SIZE(unchanged); i++)
		if (oid_cmp(dir_id(&before, unchanged[i]),
			    dir_id(&after, unchanged[i])))
			fail_msg("tree id of '%s' changed", unchanged[i]);
	/* exactly the four ancestors were stored anew */
	assert_int_equal(odb_foreach(f->db, count_pack_fn, counts2), 0);
	assert_int_equal(counts2[0], 7 + ARRAY_SIZE(changed));

	/* a mode change (no content change) also changes the ancestors only */
	snap_find(&s, "a/e/file3")->mode = MODE_EXEC;
	{
		oid root3;
		struct dir_ids third;
		assert_int_equal(tree_write(&root3, NULL, &s), 0);
		write_and_commit(&root3, f->db, &s);
		collect_dirs(&third, f->db, &root3);
		assert_true(oid_cmp(dir_id(&after, "a/e"),
				    dir_id(&third, "a/e")) != 0);
		assert_true(oid_cmp(dir_id(&after, "a"), dir_id(&third, "a")) !=
			    0);
		assert_false(oid_cmp(dir_id(&after, "a/b"),
				     dir_id(&third, "a/b")) != 0);
		assert_false(
			oid_cmp(dir_id(&after, "f"), dir_id(&third, "f")) != 0);
	}
	snap_release(&s);
}

/* --- tree_parse
 * ------------------------------------------------------------------- */

struct tent {
	uint32_t mode;
	const char *name;
	size_t nlen; /* 0: strlen(name) */
};

static void encode(buf *b, const struct tent *e, size_t n, long count_override)
{
	buf_clear(b);
	buf_put(b, "DTRE", 4);
	buf_put_u32(b, 1);
	buf_put_u32(b, count_override >= 0 ? (uint32_t)count_override
					   : (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		size_t nlen = e[i].nlen ? e[i].nlen : strlen(e[i].name);
		unsigned char id[SHA256_LEN];
		memset(id, (int)(i + 1), sizeof(id));
		buf_put_u32(b, e[i].mode);
		buf_put_u64(b, 1000 + i);
		buf_put(b, id, sizeof(id));
		buf_put_u16(b, (unsigned)nlen);
		buf_put(b, e[i].name, nlen);
	}
}

struct parse_log {
	size_t n;
	char names[8][NAME_MAX + 1];
	uint32_t modes[8];
	uint64_t sizes[8];
	int stop_with;
};

static int parse_fn(void *payload, const char *name, uint32_t mode,
		    uint64_t size, const oid *id)
{
	struct parse_log *l = payload;

	assert_true(l->n < 8);
	assert_int_equal(id->b[0], l->n + 1);
	snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
	l->modes[l->n] = mode;
	l->sizes[l->n] = size;
	l->n++;
	return l->stop_with;
}

/*
 * Permission bits: a tree of 0644/0755 files is version 1, byte for byte
 * what earlier releases wrote (so their stores read unchanged and old and
 * new checkpoints share trees); any other bits make it version 2.
 * Version 1 holds 0644/0755 only; version 2 must hold something more.
 */
static void test_versions_and_modes(void **state)
{
	static const uint32_t perms[] = { 0600, 0640, 0700, 0444,
					  0755, 0644, 0000, 0777 };
	struct tent v1[] = { { MODE_FILE, "a", 0 }, { MODE_EXEC, "b", 0 } };
	struct tent odd[] = { { MODE_FILE, "a", 0 }, { 0100600, "b", 0 } };
	struct parse_log log;
	snap s = SNAP_INIT, back = SNAP_INIT;
	oid id, root;
	buf b = BUF_INIT, obj = BUF_INIT;
	fixture *f = *state;

	/* old stores: version 1 bytes by the documented format */
	encode(&b, v1, 2, -1);
	memset(&log, 0, sizeof(log));
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log), 0);
	assert_int_equal(log.modes[0], MODE_FILE);
	assert_int_equal(log.modes[1], MODE_EXEC);
	/* ... and the writer still writes exactly those bytes */
	for (size_t i = 0; i < 2; i++) {
		unsigned char raw[SHA256_LEN];
		memset(raw, (int)(i + 1), sizeof(raw));
		memcpy(id.b, raw, SHA256_LEN);
		add(&s, v1[i].name, v1[i].mode, 1000 + i, &id);
	}
	write_and_commit(&root, f->db, &s);
	assert_int_equal(odb_read(&obj, NULL, f->db, &root), 0);
	assert_int_equal(obj.len, b.len);
	assert_memory_equal(obj.ptr, b.ptr, b.len);

	/* version 1 cannot hold other bits: an old tree never means 0600 */
	encode(&b, odd, 2, -1);
	memset(&log, 0, sizeof(log));
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log),
			 DECREE_ECORRUPT);
	/* version 2 can; version 2 with nothing beyond 0644/0755 is not
	 * canonical */
	b.ptr[4] = 2;
	memset(&log, 0, sizeof(log));
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log), 0);
	assert_int_equal(log.modes[1], 0100600);
	encode(&b, v1, 2, -1);
	b.ptr[4] = 2;
	memset(&log, 0, sizeof(log));
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log),
			 DECREE_ECORRUPT);
	/* a version 2 tree must not hold a setuid file or an unknown type */
	odd[1].mode = 0104755;
	encode(&b, odd, 2, -1);
	b.ptr[4] = 2;
	memset(&log, 0, sizeof(log));
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log),
			 DECREE_ECORRUPT);

	/* every permission bit round-trips through the writer and reader */
	snap_release(&s);
	for (size_t i = 0; i < ARRAY_SIZE(perms); i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%zu", i);
		text_id(&id, name);
		add(&s, name, MODE_REG | perms[i], 1, &id);
	}
	snap_sort(&s);
	write_and_commit(&root, f->db, &s);
	buf_clear(&obj);
	assert_int_equal(odb_read(&obj, NULL, f->db, &root), 0);
	assert_int_equal((unsigned char)obj.ptr[4], 2);
	assert_int_equal(tree_read(&back, f->db, &root), 0);
	assert_int_equal(back.n, s.n);
	for (size_t i = 0; i < s.n; i++)
		assert_int_equal(back.v[i].mode, s.v[i].mode);

	snap_release(&s);
	snap_release(&back);
	buf_release(&b);
	buf_release(&obj);
}

static void test_parse_accepts(void **state)
{
	static char longest[NAME_MAX + 1];
	struct tent ok[] = {
		{ MODE_DIR, "a", 0 },	   { MODE_FILE, "a b", 0 },
		{ MODE_EXEC, "a.c", 0 },   { MODE_LINK, "a0", 0 },
		{ MODE_SKIP, "...", 0 },   { MODE_FILE, ".a", 0 },
		{ MODE_FILE, longest, 0 },
	};
	struct parse_log log;
	buf b = BUF_INIT;

	UNUSED(state);
	memset(longest, 'z', NAME_MAX);
	longest[NAME_MAX] = '\0';
	/* strcmp order: ".a" < "..." would break it, so sort the table here */
	{
		struct tent sorted[ARRAY_SIZE(ok)];
		memcpy(sorted, ok, sizeof(ok));
		for (size_t i = 1; i < ARRAY_SIZE(sorted); i++)
			for (size_t j = i; j > 0 && strcmp(sorted[j - 1].name,
							   sorted[j].name) > 0;
			     j--) {
				struct tent t = sorted[j];
				sorted[j] = sorted[j - 1];
				sorted[j - 1] = t;
			}
		encode(&b, sorted, ARRAY_SIZE(sorted), -1);
		memset(&log, 0, sizeof(log));
		assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log), 0);
		assert_int_equal(log.n, ARRAY_SIZE(sorted));
		for (size_t i = 0; i < log.n; i++) {
			assert_string_equal(log.names[i], sorted[i].name);
			assert_int_equal(log.modes[i], sorted[i].mode);
			assert_int_equal(log.sizes[i], 1000 + i);
		}
	}
	/* empty tree */
	encode(&b, NULL, 0, -1);
	memset(&log, 0, sizeof(log));
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log), 0);
	assert_int_equal(log.n, 0);
	/* a callback's non-zero return stops the parse and comes back */
	encode(&b, ok, 2, -1);
	memset(&log, 0, sizeof(log));
	log.stop_with = 42;
	assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log), 42);
	assert_int_equal(log.n, 1);
	buf_release(&b);
}

static void test_parse_rejects(void **state)
{
	static char toolong[NAME_MAX + 2];
	static const struct {
		const char *what;
		struct tent e[3];
		size_t n;
		long count; /* -1: n */
	} cases[] = {
		{ "slash in name", { { MODE_FILE, "a/b", 0 } }, 1, -1 },
		{ "leading slash", { { MODE_FILE, "/a", 0 } }, 1, -1 },
		{ "trailing slash", { { MODE_DIR, "a/", 0 } }, 1, -1 },
		{ "dot", { { MODE_DIR, ".", 0 } }, 1, -1 },
		{ "dotdot", { { MODE_DIR, "..", 0 } }, 1, -1 },
		{ "dotdot file", { { MODE_FILE, "..", 0 } }, 1, -1 },
		{ "empty name", { { MODE_FILE, "", 0 } }, 1, -1 },
		{ "NUL in name", { { MODE_FILE, "a\0b", 3 } }, 1, -1 },
		{ "NUL at end", { { MODE_FILE, "ab\0", 3 } }, 1, -1 },
		{ "unsorted",
		  { { MODE_FILE, "b", 0 }, { MODE_FILE, "a", 0 } },
		  2,
		  -1 },
		{ "unsorted later",
		  { { MODE_FILE, "a", 0 },
		    { MODE_FILE, "c", 0 },
		    { MODE_FILE, "b", 0 } },
		  3,
		  -1 },
		{ "duplicate",
		  { { MODE_FILE, "a", 0 }, { MODE_FILE, "a", 0 } },
		  2,
		  -1 },
		{ "file and dir same name",
		  { { MODE_DIR, "a", 0 }, { MODE_FILE, "a", 0 } },
		  2,
		  -1 },
		{ "mode 0100600", { { 0100600, "a", 0 } }, 1, -1 },
		{ "mode 0100777", { { 0100777, "a", 0 } }, 1, -1 },
		{ "mode 0040755", { { 0040755, "a", 0 } }, 1, -1 },
		{ "mode 0120777", { { 0120777, "a", 0 } }, 1, -1 },
		{ "mode 0644", { { 0644, "a", 0 } }, 1, -1 },
		{ "mode 1", { { 1, "a", 0 } }, 1, -1 },
		{ "mode ~0", { { 0xffffffffu, "a", 0 } }, 1, -1 },
		{ "count too large", { { MODE_FILE, "a", 0 } }, 1, 2 },
		{ "count huge", { { MODE_FILE, "a", 0 } }, 1, 0x7fffffff },
		{ "count too small",
		  { { MODE_FILE, "a", 0 }, { MODE_FILE, "b", 0 } },
		  2,
		  1 },
		{ "count zero", { { MODE_FILE, "a", 0 } }, 1, 0 },
		{ "name too long", { { MODE_FILE, toolong, 0 } }, 1, -1 },
	};
	buf b = BUF_INIT;
	struct parse_log log;

	UNUSED(state);
	memset(toolong, 'y', NAME_MAX + 1);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r;
		encode(&b, cases[i].e, cases[i].n, cases[i].count);
		memset(&log, 0, sizeof(log));
		r = tree_parse(b.ptr, b.len, parse_fn, &log);
		if (r != DECREE_ECORRUPT)
			fail_msg("%s: tree_parse returned %d", cases[i].what,
				 r);
		assert_true(decree_error_last()[0] != '\0');
	}
	/* header damage */
	{
		static const struct tent one[] = { { MODE_FILE, "a", 0 } };
		static const size_t offs[] = { 0, 1, 2, 3, 4, 5, 7 };
		for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
			encode(&b, one, 1, -1);
			b.ptr[offs[i]] ^= 0x20;
			memset(&log, 0, sizeof(log));
			if (tree_parse(b.ptr, b.len, parse_fn, &log) !=
			    DECREE_ECORRUPT)
				fail_msg("header byte %zu flipped: accepted",
					 offs[i]);
		}
		/* trailing garbage */
		encode(&b, one, 1, -1);
		buf_putc(&b, 'x');
		memset(&log, 0, sizeof(log));
		assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log),
				 DECREE_ECORRUPT);
	}
	/* every truncation of a valid object */
	{
		static const struct tent three[] = {
			{ MODE_DIR, "dir", 0 },
			{ MODE_FILE, "file", 0 },
			{ MODE_LINK, "link", 0 },
		};
		encode(&b, three, 3, -1);
		memset(&log, 0, sizeof(log));
		assert_int_equal(tree_parse(b.ptr, b.len, parse_fn, &log), 0);
		for (size_t len = 0; len < b.len; len++) {
			char *copy = malloc(len ? len : 1); /* exact size: ASan
							       sees overreads */
			int r;
			assert_non_null(copy);
			memcpy(copy, b.ptr, len);
			memset(&log, 0, sizeof(log));
			r = tree_parse(copy, len, parse_fn, &log);
			free(copy);
			if (r != DECREE_ECORRUPT)
				fail_msg(
					"truncated to %zu of %zu: tree_parse returned %d",
					len, b.len, r);
		}
	}
	buf_release(&b);
}

/*
 * Objects are named by their bytes alone, so a project file whose content
 * happens to equal a tree object (a fixture of decree's own tests, say)
 * and a directory tree share one stored object.  Whichever type was
 * stored first wins; the snapshot must still read back.
 */
static void test_blob_with_tree_bytes(void **state)
{
	fixture *f = *state;
	snap inner = SNAP_INIT, s = SNAP_INIT, back = SNAP_INIT;
	odb_writer *w;
	oid fid, sub, blob, root;
	buf bytes = BUF_INIT;
	int r;

	/* the bytes of the tree of directory "d" = { f } */
	text_id(&fid, "content of d/f");
	add(&inner, "f", MODE_FILE, 14, &fid);
	assert_int_equal(tree_write(&sub, NULL, &inner), 0);
	{
		/* the same bytes by hand: "DTRE" 1 1 {mode size id 1 "f"} */
		buf_put(&bytes, "DTRE", 4);
		buf_put_u32(&bytes, 1);
		buf_put_u32(&bytes, 1);
		buf_put_u32(&bytes, MODE_FILE);
		buf_put_u64(&bytes, 14);
		buf_put(&bytes, fid.b, SHA256_LEN);
		buf_put_u16(&bytes, 1);
		buf_put(&bytes, "f", 1);
		sha256_buf(&blob, bytes.ptr, bytes.len);
		assert_memory_equal(blob.b, sub.b, SHA256_LEN);
	}
	/* the scan stores file contents before the trees are written */
	add(&s, "d/f", MODE_FILE, 14, &fid);
	add(&s, "x.bin", MODE_FILE, bytes.len, &blob);
	snap_sort(&s);
	assert_int_equal(odb_writer_new(&w, f->db), 0);
	assert_int_equal(odb_writer_add(w, ODB_BLOB, "content of d/f", 14, NULL,
					NULL),
			 0);
	assert_int_equal(odb_writer_add(w, ODB_BLOB, bytes.ptr, bytes.len, NULL,
					NULL),
			 0);
	assert_int_equal(tree_write(&root, w, &s), 0);
	assert_int_equal(odb_writer_commit(w), 0);
	odb_writer_free(w);
	r = tree_read(&back, f->db, &root);
	snap_release(&inner);
	buf_release(&bytes);
	if (r != 0) {
		snap_release(&s);
		snap_release(&back);
		fail_msg(
			"a snapshot holding a file with the bytes of one of its trees "
			"does not read back: %d (%s)",
			r, decree_error_last());
	}
	assert_snaps_equal(&s, &back);
	snap_release(&s);
	snap_release(&back);
}

/* A stored tree with a hostile entry is refused by tree_read too. */
static void test_read_hostile(void **state)
{
	fixture *f = *state;
	static const struct tent bad[] = { { MODE_FILE, "..", 0 } };
	static const struct tent sub[] = { { MODE_DIR, "sub", 0 } };
	buf b = BUF_INIT;
	odb_writer *w;
	oid id;
	snap out = SNAP_INIT;

	encode(&b, bad, 1, -1);
	assert_int_equal(odb_writer_new(&w, f->db), 0);
	assert_int_equal(odb_writer_add(w, ODB_TREE, b.ptr, b.len, NULL, &id),
			 0);
	assert_int_equal(odb_writer_commit(w), 0);
	odb_writer_free(w);
	assert_int_equal(tree_read(&out, f->db, &id), DECREE_ECORRUPT);
	snap_release(&out);
	/* a subtree that is not stored */
	encode(&b, sub, 1, -1);
	assert_int_equal(odb_writer_new(&w, f->db), 0);
	assert_int_equal(odb_writer_add(w, ODB_TREE, b.ptr, b.len, NULL, &id),
			 0);
	assert_int_equal(odb_writer_commit(w), 0);
	odb_writer_free(w);
	assert_int_equal(tree_read(&out, f->db, &id), DECREE_ENOTFOUND);
	snap_release(&out);
	buf_release(&b);
}

/* --- reading and comparing with a snapshot's directory ids ----------------
 */

typedef struct {
	snap got;
} diff_log;

static int log_diff(void *payload, const char *path, const snap_entry *a,
		    const snap_entry *b)
{
	diff_log *l = payload;
	snap_entry *e = snap_add(&l->got, path, strlen(path));

	assert_non_null(e);
	/* mode: what a had, size: what b had, id: a's (b's when absent) */
	e->mode = a ? a->mode : 0777;
	e->size = b ? b->size : UINT64_MAX;
	e->id = a ? a->id : b->id;
	return 0;
}

/* A copy of `s` with some files changed, removed and added. */
static void mutate_snap(snap *out, const snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const snap_entry *e = &s->v[i];
		unsigned k = (unsigned)(rnd() % 10);
		oid id = e->id;
		if (k == 0)
			continue; /* removed */
		if (k == 1)
			id.b[0] ^= 1; /* changed */
		add(out, e->path,
		    k == 2 && e->mode == MODE_FILE ? MODE_EXEC : e->mode,
		    e->size, &id);
		if (k == 3) { /* a new file beside it, and a new directory */
			char p[300];
			oid nid;
			text_id(&nid, e->path);
			snprintf(p, sizeof(p), "%s.new", e->path);
			add(out, p, MODE_FILE, 7, &nid);
			snprintf(p, sizeof(p), "%s.dir/x", e->path);
			add(out, p, MODE_FILE, 8, &nid);
		}
	}
	snap_sort(out);
}

static void test_read_and_diff_like(void **state)
{
	fixture *f = *state;

	rng_state = test_seed() ^ 0x9999;
	for (int iter = 0; iter < 40; iter++) {
		snap a = SNAP_INIT, b = SNAP_INIT, full = SNAP_INIT;
		snap like = SNAP_INIT, keep = SNAP_INIT;
		diff_log want, got;
		tree_ids ids = TREE_IDS_INIT;
		oid ra, rb, rb2;

		memset(&want, 0, sizeof(want));
		memset(&got, 0, sizeof(got));
		random_snap(&a, (size_t)(1 + rnd() % 150));
		if (iter % 4 == 0)
			assert_int_equal(snap_copy(&b, &a), 0); /* the same */
		else if (iter != 1) /* (1: b is empty) */
			mutate_snap(&b, &a);
		write_and_commit(&ra, f->db, &a);
		assert_int_equal(tree_write_ids(&rb, NULL, &b, &ids), 0);
		assert_int_equal(tree_write(&rb2, NULL, &b), 0);
		assert_memory_equal(rb.b, rb2.b, SHA256_LEN);
		/* the ids: the root first, each directory's range and id */
		assert_true(ids.n >= 1);
		assert_int_equal(ids.v[0].first, 0);
		assert_int_equal(ids.v[0].end, b.n);
		assert_int_equal(ids.v[0].plen, 0);
		assert_memory_equal(ids.v[0].id.b, rb.b, SHA256_LEN);
		for (size_t k = 1; k < ids.n; k++) {
			const tree_dir *d = &ids.v[k];
			const char *pre = b.v[d->first].path;
			snap sub = SNAP_INIT;
			oid sid;
			assert_true(d->first < d->end && d->plen > 0);
			assert_int_equal(pre[d->plen - 1], '/');
			for (size_t i = 0; i < b.n; i++) {
				bool in = !strncmp(b.v[i].path, pre, d->plen);
				assert_int_equal(in,
						 i >= d->first && i < d->end);
				if (in)
					add(&sub, b.v[i].path + d->plen,
					    b.v[i].mode, b.v[i].size,
					    &b.v[i].id);
			}
			assert_int_equal(tree_write(&sid, NULL, &sub), 0);
			assert_memory_equal(sid.b, d->id.b, SHA256_LEN);
			snap_release(&sub);
		}
		/* reading a like b: what reading a gives */
		assert_int_equal(tree_read(&full, f->db, &ra), 0);
		assert_int_equal(tree_read_like(&like, f->db, &ra, &b, &ids),
				 0);
		assert_snaps_equal(&full, &like);
		/* comparing with b: what snap_diff gives */
		assert_int_equal(snap_diff(&full, &b, log_diff, &want), 0);
		assert_int_equal(tree_diff_like(&keep, f->db, &ra, &b, &ids,
						log_diff, &got),
				 0);
		assert_snaps_equal(&want.got, &got.got);
		assert_true(keep.n <= full.n);
		if (iter % 4 == 0)
			assert_int_equal(keep.n, 0); /* nothing read */
		snap_release(&a);
		snap_release(&b);
		snap_release(&full);
		snap_release(&like);
		snap_release(&keep);
		snap_release(&want.got);
		snap_release(&got.got);
		tree_ids_release(&ids);
	}
}

/* Only the directories on the way to a change are read; an entry whose id
 * is not known (a lazy scan) never stands for its directory. */
static void test_diff_like_reads_little(void **state)
{
	fixture *f = *state;
	static const char *const paths[] = {
		"a/b/c/file1", "a/b/c/other", "a/b/d/file2", "a/e/file3",
		"a/top",       "f/file4",     "g.txt",
	};
	snap a = SNAP_INIT, b = SNAP_INIT, keep = SNAP_INIT;
	tree_ids ids = TREE_IDS_INIT;
	diff_log got;
	oid ra, rb, id;

	memset(&got, 0, sizeof(got));
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		text_id(&id, paths[i]);
		add(&a, paths[i], MODE_FILE, 1, &id);
		if (!strcmp(paths[i], "a/b/c/file1"))
			text_id(&id, "changed");
		add(&b, paths[i], MODE_FILE, 1, &id);
	}
	snap_sort(&a);
	snap_sort(&b);
	write_and_commit(&ra, f->db, &a);
	assert_int_equal(tree_write_ids(&rb, NULL, &b, &ids), 0);
	assert_int_equal(ids.n, 7); /* "", a, a/b, a/b/c, a/b/d, a/e, f */
	assert_int_equal(
		tree_diff_like(&keep, f->db, &ra, &b, &ids, log_diff, &got), 0);
	assert_int_equal(got.got.n, 1);
	assert_string_equal(got.got.v[0].path, "a/b/c/file1");
	/* the files of "", a, a/b and a/b/c: nothing of a/b/d, a/e, f */
	assert_int_equal(keep.n, 4);
	snap_release(&keep);
	snap_release(&got.got);
	/* a lazy scan's entry (its id unknown, the directory's id computed
	 * from a zero one): its directory is read, and it differs */
	b.v[3].unhashed = 1;
	assert_string_equal(b.v[3].path, "a/e/file3");
	memset(&got, 0, sizeof(got));
	assert_int_equal(
		tree_diff_like(&keep, f->db, &ra, &b, &ids, log_diff, &got), 0);
	assert_int_equal(got.got.n, 2);
	assert_string_equal(got.got.v[1].path, "a/e/file3");
	assert_int_equal(keep.n, 5);
	snap_release(&keep);
	snap_release(&got.got);
	tree_ids_release(&ids);
	snap_release(&a);
	snap_release(&b);
}

static void assert_ids_equal(const tree_ids *a, const tree_ids *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t k = 0; k < a->n; k++) {
		assert_int_equal(a->v[k].first, b->v[k].first);
		assert_int_equal(a->v[k].end, b->v[k].end);
		assert_int_equal(a->v[k].plen, b->v[k].plen);
		assert_memory_equal(a->v[k].id.b, b->v[k].id.b, SHA256_LEN);
	}
}

/* Does directory k of ids hold a skipped entry (never taken as known)? */
static bool dir_has_skip(const snap *s, const tree_dir *d)
{
	for (size_t i = d->first; i < d->end; i++)
		if (s->v[i].mode == MODE_SKIP)
			return true;
	return false;
}

/*
 * tree_write_known gives what tree_write_ids gives, whatever the hints
 * say, as long as a known hint names its directory's tree (the caller's
 * promise); a hint that does not fit (another range, an entry not vouched
 * for, a skipped file, an id not in the store) is built instead.  And a
 * fitting hint is really taken: one that names another stored tree shows.
 */
static void test_write_known(void **state)
{
	fixture *f = *state;

	rng_state = test_seed() ^ 0x4b4e;
	for (int iter = 0; iter < 60; iter++) {
		snap a = SNAP_INIT;
		tree_ids ids = TREE_IDS_INIT, got = TREE_IDS_INIT;
		tree_ids hints = TREE_IDS_INIT;
		odb_writer *w;
		oid ra, rk, other;
		size_t pick = SIZE_MAX;

		random_snap(&a, (size_t)(1 + rnd() % 120));
		for (size_t i = 0; i < a.n; i++)
			a.v[i].cached = 1; /* every entry a cache hit */
		write_and_commit(&ra, f->db, &a);
		assert_int_equal(tree_write_ids(&ra, NULL, &a, &ids), 0);
		hints.v = test_malloc(ids.n * sizeof(tree_dir));
		memcpy(hints.v, ids.v, ids.n * sizeof(tree_dir));
		hints.n = hints.cap = ids.n;
		for (size_t k = 0; k < hints.n; k++)
			hints.v[k].known = rnd() % 3 != 0;
		assert_int_equal(odb_writer_new(&w, f->db), 0);

		/* right hints, some known: the same trees and ids */
		assert_int_equal(tree_write_known(&rk, w, &a, &got, &hints), 0);
		assert_memory_equal(rk.b, ra.b, SHA256_LEN);
		assert_ids_equal(&got, &ids);
		assert_int_equal(tree_write_known(&rk, NULL, &a, &got, &hints),
				 0);
		assert_memory_equal(rk.b, ra.b, SHA256_LEN);
		assert_ids_equal(&got, &ids);

		/* a directory below the root without skipped files: its hint
		 * names the root's tree instead (stored, so it would be
		 * taken) */
		for (size_t k = 1; k < hints.n && pick == SIZE_MAX; k++)
			if (!dir_has_skip(&a, &hints.v[k]))
				pick = k;
		if (pick != SIZE_MAX) {
			tree_dir keep = hints.v[pick];
			for (size_t k = 0; k < hints.n; k++)
				hints.v[k].known = true;
			hints.v[0].known = false; /* the root is built */
			other = ra;
			hints.v[pick].id = other;
			/* taken: the root differs (the test can see a hint
			 * used) */
			assert_int_equal(
				tree_write_known(&rk, w, &a, &got, &hints), 0);
			assert_memory_not_equal(rk.b, ra.b, SHA256_LEN);
			/* not vouched for: one entry below it not cached */
			a.v[keep.first].cached = 0;
			assert_int_equal(
				tree_write_known(&rk, w, &a, &got, &hints), 0);
			assert_memory_equal(rk.b, ra.b, SHA256_LEN);
			assert_ids_equal(&got, &ids);
			a.v[keep.first].cached = 1;
			/* another range: not that directory's hint */
			hints.v[pick].end = keep.end - 1;
			assert_int_equal(
				tree_write_known(&rk, w, &a, &got, &hints), 0);
			assert_memory_equal(rk.b, ra.b, SHA256_LEN);
			hints.v[pick].end = keep.end;
			hints.v[pick].plen = keep.plen + 1;
			assert_int_equal(
				tree_write_known(&rk, w, &a, &got, &hints), 0);
			assert_memory_equal(rk.b, ra.b, SHA256_LEN);
			hints.v[pick].plen = keep.plen;
			/* an id the store does not hold */
			hints.v[pick].id.b[0] ^= 1;
			assert_int_equal(
				tree_write_known(&rk, w, &a, &got, &hints), 0);
			assert_memory_equal(rk.b, ra.b, SHA256_LEN);
			assert_ids_equal(&got, &ids);
		}
		odb_writer_free(w);
		test_free(hints.v);
		tree_ids_release(&ids);
		tree_ids_release(&got);
		snap_release(&a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip_random, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_order_independent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_edges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shared_subtrees, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_versions_and_modes, setup,
						teardown),
		cmocka_unit_test(test_parse_accepts),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test_setup_teardown(test_read_hostile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_blob_with_tree_bytes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_and_diff_like, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_known, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_diff_like_reads_little,
						setup, teardown),
	};

	test_seed();
	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
