/*
 * test_checkpoint.c - what an app embedding libdecree relies on
 * (decree/checkpoint.h): create options of version 1 still accepted,
 * if_changed, the tree id, excludes and a size limit kept in the record
 * (and in the record cache) and honoured by every later restore,
 * decree_checkpoint_delete, decree_checkpoint_is_capture (restore, undo
 * and redo captures told from created checkpoints), the change counts
 * against the session's previous checkpoint, the notices and progress
 * reports a handle keeps and makes (decree_notice_at,
 * decree_store_set_progress), and the parts below them: size_parse
 * (K/M/G), size_format, and roots_in_use (what keeps a root's directory
 * in the store).
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "decree/decree.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/size.h"
#include "store/record.h"
#include "store/repo.h"
#include "store/roots.h"

typedef struct {
	char root[PATH_MAX];
	decree_store *s;
} fixture;

static int setup(void **state)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	fixture *f = calloc(1, sizeof(*f));
	char real[PATH_MAX];

	if (!f ||
	    testutil_mkdtemp(f->root, sizeof(f->root), "checkpoint") < 0 ||
	    !realpath(f->root, real))
		return -1;
	snprintf(f->root, sizeof(f->root), "%s", real);
	o.root = f->root;
	o.threads = 2;
	if (decree_store_open(&f->s, &o) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	decree_store_free(f->s);
	testutil_rm_rf(f->root);
	free(f);
	return 0;
}

static void put(const fixture *f, const char *rel, const char *data, size_t len)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(fs_write_atomic(p, data, len, 0644), 0);
}

static void puts_at(const fixture *f, const char *rel, const char *text)
{
	put(f, rel, text, strlen(text));
}

static bool exists(const fixture *f, const char *rel)
{
	char p[PATH_MAX + 64];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	return lstat(p, &st) == 0;
}

static void remove_at(const fixture *f, const char *rel)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(unlink(p), 0);
}

static void mkdir_at(const fixture *f, const char *rel)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(fs_mkdirs(p, 0755), 0);
}

/* The info of checkpoint `id` in a fresh listing (copied: no strings). */
static decree_checkpoint_info info_of(fixture *f, const char *id,
				      unsigned flags)
{
	decree_checkpoint_info out;
	decree_checkpoint_list *l;
	bool found = false;

	memset(&out, 0, sizeof(out));
	assert_int_equal(decree_checkpoint_list_get(&l, f->s, NULL, flags), 0);
	for (size_t i = 0; i < decree_checkpoint_list_count(l); i++) {
		const decree_checkpoint_info *c =
			decree_checkpoint_list_at(l, i);
		if (!strcmp(c->id, id)) {
			out = *c;
			found = true;
		}
	}
	decree_checkpoint_list_free(l);
	out.session = out.message = out.label = NULL;
	assert_true(found);
	return out;
}

/* An app built against the first version of the options struct. */
typedef struct {
	unsigned version;
	const char *session, *message, *label;
} create_options_v1;

static void test_options_version_1(void **state)
{
	fixture *f = *state;
	create_options_v1 v1 = { 1, "old-app", "m", "L" };
	decree_checkpoint_create_options bad =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	char id[DECREE_ID_HEXLEN + 1], again[DECREE_ID_HEXLEN + 1];
	bool created;

	puts_at(f, "a.txt", "a\n");
	assert_int_equal(
		decree_checkpoint_create(
			id, &created, f->s,
			(const decree_checkpoint_create_options *)(void *)&v1),
		0);
	assert_true(created);
	puts_at(f, "a.txt", "b\n");
	assert_int_equal(
		decree_checkpoint_create(
			again, &created, f->s,
			(const decree_checkpoint_create_options *)(void *)&v1),
		0);
	assert_false(created); /* the same (session, message) */
	assert_string_equal(id, again);
	bad.version = 3;
	assert_int_equal(decree_checkpoint_create(id, &created, f->s, &bad),
			 DECREE_EINVALID);
	bad.version = 0;
	assert_int_equal(decree_checkpoint_create(id, &created, f->s, &bad),
			 DECREE_EINVALID);
}

static void test_if_changed_and_tree(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created a, b, c;
	decree_checkpoint_info i;

	puts_at(f, "a.txt", "one\n");
	o.if_changed = true; /* nothing to compare with: creates */
	assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o), 0);
	assert_true(a.created);
	assert_int_equal(strlen(a.tree), DECREE_ID_HEXLEN);
	i = info_of(f, a.id, 0);
	assert_string_equal(i.tree, a.tree);
	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_false(b.created);
	assert_string_equal(b.id, a.id);
	assert_string_equal(b.tree, a.tree);
	o.if_changed = false;
	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_true(b.created);
	assert_string_not_equal(b.id, a.id);
	assert_string_equal(b.tree, a.tree); /* the same files */
	o.if_changed = true;
	puts_at(f, "a.txt", "two\n");
	assert_int_equal(decree_checkpoint_create_ext(&c, f->s, &o), 0);
	assert_true(c.created);
	assert_string_not_equal(c.tree, a.tree);
	/* the latest of the session, not any checkpoint with that tree */
	puts_at(f, "a.txt", "one\n");
	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_true(b.created);
	assert_string_equal(b.tree, a.tree);
}

static void test_counts(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created a, b, c;
	decree_checkpoint_info i;

	puts_at(f, "t.txt", "1\n2\n3\n");
	puts_at(f, "nonl.txt", "x");
	put(f, "bin.dat", "a\0b\n", 4);
	o.session = "s";
	assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o), 0);
	/* the root's first: every file new, the lines unknown (counting them
	 * would read the whole tree again) */
	assert_int_equal(a.files_changed, 3);
	assert_int_equal(a.insertions, -1);
	assert_int_equal(a.deletions, -1);
	puts_at(f, "t.txt", "1\nTWO\n3\n4\n");
	put(f, "bin.dat", "a\0c\n", 4);
	remove_at(f, "nonl.txt");
	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_int_equal(b.files_changed, 3);
	assert_int_equal(b.insertions, 2);
	assert_int_equal(b.deletions, 2);
	/* kept: a listing reads them from the record cache */
	i = info_of(f, b.id, 0);
	assert_int_equal(i.files_changed, 3);
	assert_int_equal(i.insertions, 2);
	assert_int_equal(i.deletions, 2);
	/* a session's first checkpoint: against the root's newest */
	o.session = "other";
	assert_int_equal(decree_checkpoint_create_ext(&c, f->s, &o), 0);
	assert_int_equal(c.files_changed, 0);
	assert_int_equal(c.insertions, 0);
	o.session = "s";
	assert_int_equal(decree_checkpoint_create_ext(&c, f->s, &o), 0);
	assert_int_equal(c.files_changed, 0);
	assert_int_equal(c.insertions, 0);
	assert_int_equal(c.deletions, 0);
	puts_at(f, "t.txt", "1\nTWO\n");
	o.session = "third";
	assert_int_equal(decree_checkpoint_create_ext(&c, f->s, &o), 0);
	assert_int_equal(c.files_changed, 1);
	assert_int_equal(c.insertions, 0);
	assert_int_equal(c.deletions, 2);
}

static void test_excludes_carried(void **state)
{
	fixture *f = *state;
	const char *const ex[] = { "out/", NULL };
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_restore_result res;
	decree_checkpoint_created a;
	decree_checkpoint_info i;
	record rec;
	char big[3000];

	memset(big, 'x', sizeof(big));
	puts_at(f, "keep.txt", "k\n");
	mkdir_at(f, "out");
	puts_at(f, "out/a.o", "a\n");
	o.excludes = ex;
	o.max_file_size = 2048;
	assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o), 0);
	assert_int_equal(a.files_changed, 1);
	/* the record says so, and the cache keeps it */
	assert_int_equal(record_resolve(&rec, f->s, a.id), 0);
	assert_non_null(rec.excludes);
	assert_string_equal(rec.excludes[0], "out/");
	assert_null(rec.excludes[1]);
	assert_int_equal(rec.max_file_size, 2048);
	record_release(&rec);
	/* later: in out/, too large, and one that is neither */
	puts_at(f, "out/b.o", "b\n");
	put(f, "huge.bin", big, sizeof(big));
	puts_at(f, "new.txt", "n\n");
	i = info_of(f, a.id, DECREE_LIST_HAS_CHANGES);
	assert_true(i.has_changes);
	assert_int_equal(decree_checkpoint_restore(&res, f->s, a.id, NULL), 0);
	assert_int_equal(res.deleted, 1);
	assert_false(exists(f, "new.txt"));
	assert_true(exists(f, "out/a.o"));
	assert_true(exists(f, "out/b.o"));
	assert_true(exists(f, "huge.bin"));
	/* the capture made before it carries the rules too */
	assert_int_equal(record_resolve(&rec, f->s, res.pre_checkpoint), 0);
	assert_non_null(rec.excludes);
	assert_string_equal(rec.excludes[0], "out/");
	assert_int_equal(rec.max_file_size, 2048);
	record_release(&rec);
	/* a pattern that JSON would not carry exactly is refused */
	{
		const char *const bad[] = { "a\nb", NULL };
		o.excludes = bad;
		assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o),
				 DECREE_EINVALID);
	}
}

static void test_delete(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created a, b;
	decree_checkpoint_list *l;
	char id[DECREE_ID_HEXLEN + 1];

	/* a store that does not exist yet has nothing to delete */
	assert_int_equal(decree_checkpoint_delete(f->s, "abcd"),
			 DECREE_ENOTFOUND);
	puts_at(f, "a.txt", "a\n");
	o.message = "one";
	assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o), 0);
	puts_at(f, "a.txt", "b\n");
	o.message = "two";
	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_int_equal(decree_checkpoint_delete(f->s, "zz"), DECREE_EINVALID);
	assert_int_equal(decree_checkpoint_delete(f->s, "default:nope"),
			 DECREE_ENOTFOUND);
	/* the newest of the session too */
	assert_int_equal(decree_checkpoint_delete(f->s, "default:two"), 0);
	assert_int_equal(decree_checkpoint_resolve(id, f->s, b.id),
			 DECREE_ENOTFOUND);
	assert_int_equal(decree_checkpoint_list_get(&l, f->s, NULL, 0), 0);
	assert_int_equal(decree_checkpoint_list_count(l), 1);
	assert_string_equal(decree_checkpoint_list_at(l, 0)->id, a.id);
	decree_checkpoint_list_free(l);
	assert_int_equal(decree_checkpoint_delete(f->s, a.id), 0);
	assert_int_equal(decree_checkpoint_delete(f->s, a.id),
			 DECREE_ENOTFOUND);
}

/* A whole id is resolved from its file, and gives what a prefix gives;
 * a damaged record, one a pending removal lists and a missing one say
 * what the listing says. */
static void test_resolve_whole_id(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created a, b;
	record whole, prefix;
	char path[PATH_MAX + 80], pre[9], want[512], gone[DECREE_ID_HEXLEN + 1];
	oid id;

	puts_at(f, "a.txt", "a\n");
	o.message = "one";
	assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o), 0);
	puts_at(f, "a.txt", "b\n");
	o.message = "two";
	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_int_equal(record_resolve(&whole, f->s, a.id), 0);
	snprintf(pre, sizeof(pre), "%.8s", a.id);
	assert_int_equal(record_resolve(&prefix, f->s, pre), 0);
	assert_string_equal(whole.info.id, prefix.info.id);
	assert_memory_equal(whole.tree.b, prefix.tree.b, SHA256_LEN);
	assert_string_equal(whole.session, prefix.session);
	assert_string_equal(whole.message, "one");
	assert_int_equal(whole.info.created_ns, prefix.info.created_ns);
	record_release(&whole);
	record_release(&prefix);
	/* damaged bytes */
	repo_file(path, f->s, "checkpoints");
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", a.id);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(fs_write_atomic(path, "{}", 2, 0644), 0);
	assert_int_equal(record_resolve(&prefix, f->s, pre), DECREE_ECORRUPT);
	snprintf(want, sizeof(want), "%s", error_last());
	assert_int_equal(record_resolve(&whole, f->s, a.id), DECREE_ECORRUPT);
	assert_string_equal(error_last(), want);
	/* listed by a removal that has not finished: gone already */
	assert_int_equal(oid_from_hex(&id, b.id), 0);
	assert_int_equal(record_drop_commit(f->s, &id, 1, 0), 0);
	assert_int_equal(record_resolve(&whole, f->s, b.id), DECREE_ENOTFOUND);
	/* no such record */
	snprintf(gone, sizeof(gone), "%s", b.id);
	gone[0] = gone[0] == 'f' ? '0' : 'f';
	assert_int_equal(record_resolve(&whole, f->s, gone), DECREE_ENOTFOUND);
}

static void test_size_parse(void **state)
{
	static const struct {
		const char *in;
		int r;
		uint64_t want;
	} cases[] = {
		{ "1", 0, 1 },
		{ "52428800", 0, 52428800 },
		{ "2K", 0, 2048 },
		{ "2k", 0, 2048 },
		{ "50M", 0, 50ull << 20 },
		{ "50MB", 0, 50ull << 20 },
		{ "50MiB", 0, 50ull << 20 },
		{ "1G", 0, 1ull << 30 },
		{ "7B", 0, 7 },
		{ "0", -1, 0 },
		{ "", -1, 0 },
		{ "-5", -1, 0 },
		{ " 5", -1, 0 },
		{ "+5", -1, 0 },
		{ "5X", -1, 0 },
		{ "5 M", -1, 0 },
		{ "5Mx", -1, 0 },
		{ "17179869184G", -1, 0 }, /* 2^34 G = 2^64 bytes */
		{ "99999999999999999999", -1, 0 },
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 12345;
		int r = size_parse(&v, cases[i].in);
		if (r != cases[i].r || (r == 0 && v != cases[i].want) ||
		    (r < 0 && v != 12345))
			fail_msg("size_parse(\"%s\") = %d, %llu", cases[i].in,
				 r, (unsigned long long)v);
	}
	{
		uint64_t v;
		assert_int_equal(size_parse(&v, "16777215T"), -1);
		assert_int_equal(size_parse(&v, "17179869183G"), 0);
		assert_int_equal(v, 17179869183ull << 30);
	}
}

static void test_size_format(void **state)
{
	static const struct {
		uint64_t n;
		const char *want;
	} cases[] = {
		{ 0, "0 bytes" },	   { 1, "1 byte" },
		{ 1023, "1023 bytes" },	   { 1024, "1 KiB" },
		{ 1536, "1.5 KiB" },	   { 50ull << 20, "50 MiB" },
		{ 3000000, "2.9 MiB" },	   { (10ull << 20) - 1, "10 MiB" },
		{ 1288490189, "1.2 GiB" }, { UINT64_MAX, "16 EiB" },
	};
	char out[SIZE_TEXT_MAX];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_string_equal(size_format(out, cases[i].n),
				    cases[i].want);
}

typedef struct {
	size_t calls, scan, write, check, verify;
	decree_progress last_scan;
	bool scan_final_seen, backwards;
	decree_progress prev;
} progress_log;

static void log_progress(void *payload, const decree_progress *p)
{
	progress_log *l = payload;

	if (l->calls && p->stage == l->prev.stage &&
	    (p->files < l->prev.files || p->bytes < l->prev.bytes))
		l->backwards = true; /* counts only grow within a stage */
	l->calls++;
	l->prev = *p;
	switch (p->stage) {
	case DECREE_PROGRESS_SCAN:
		l->scan++;
		l->last_scan = *p;
		break;
	case DECREE_PROGRESS_WRITE:
		l->write++;
		break;
	case DECREE_PROGRESS_CHECK:
		l->check++;
		break;
	case DECREE_PROGRESS_VERIFY:
		l->verify++;
		break;
	}
}

/* The progress of create, restore and fsck: each stage, counts that
 * only grow, and the final count of a scan equal to what it found. */
static void test_progress(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created res;
	decree_restore_result rr;
	progress_log l;
	char name[64];

	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "f%02d.txt", i);
		puts_at(f, name, "some content\n");
	}
	memset(&l, 0, sizeof(l));
	decree_store_set_progress(f->s, log_progress, &l);
	assert_int_equal(decree_checkpoint_create_ext(&res, f->s, &o), 0);
	assert_true(l.scan >= 2);
	assert_false(l.backwards);
	assert_true(l.last_scan.total_known);
	assert_int_equal(l.last_scan.files, 30);
	assert_int_equal(l.last_scan.files_total, 30);
	assert_int_equal(l.last_scan.bytes, 30 * 13);
	assert_int_equal(l.last_scan.bytes_total, 30 * 13);
	assert_int_equal(l.write, 0);

	remove_at(f, "f00.txt");
	puts_at(f, "new.txt", "new\n");
	memset(&l, 0, sizeof(l));
	assert_int_equal(decree_checkpoint_restore(&rr, f->s, res.id, NULL), 0);
	assert_false(l.backwards);
	assert_true(l.scan >= 2 && l.check >= 2 && l.write >= 2);
	assert_int_equal(l.prev.stage, DECREE_PROGRESS_CHECK); /* re-read */
	assert_int_equal(l.prev.files, 2);
	assert_int_equal(l.prev.files_total, 2);

	memset(&l, 0, sizeof(l));
	if (decree_fsck(f->s, NULL, NULL) != 0)
		fail_msg("fsck: %s", decree_error_last());
	assert_true(l.verify >= 1);
	assert_int_equal(l.prev.files, l.prev.files_total);

	/* off again: no more calls */
	decree_store_set_progress(f->s, NULL, NULL);
	memset(&l, 0, sizeof(l));
	assert_int_equal(decree_undo(&rr, f->s, NULL), 0);
	assert_int_equal(l.calls, 0);
}

/* The notices of create, undo and redo, and that the next such call
 * forgets them. */
static void test_notices(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created a, b;
	decree_restore_result rr;
	const decree_notice *n;
	char name[64];

	puts_at(f, ".gitignore", "*.tmp\n");
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "x%02d.tmp", i);
		puts_at(f, name, "t\n");
	}
	put(f, "big.bin", "0123456789abcdef", 16);
	o.max_file_size = 10;
	o.message = "m1";
	assert_int_equal(decree_checkpoint_create_ext(&a, f->s, &o), 0);
	assert_int_equal(decree_notice_count(f->s), 2);
	n = decree_notice_at(f->s, 0);
	assert_int_equal(n->kind, DECREE_NOTICE_MOSTLY_IGNORED);
	assert_int_equal(n->count, 20);
	assert_int_equal(n->files, 2);
	assert_string_equal(n->rule_source, ".gitignore");
	assert_string_equal(n->rule, "*.tmp");
	assert_int_equal(n->rule_count, 20);
	assert_string_equal(n->checkpoint, a.id);
	n = decree_notice_at(f->s, 1);
	assert_int_equal(n->kind, DECREE_NOTICE_TOO_LARGE);
	assert_int_equal(n->count, 1);
	assert_string_equal(n->path, "big.bin");
	assert_int_equal(n->size, 16);
	assert_int_equal(n->limit, 10);
	assert_null(decree_notice_at(f->s, 2));

	assert_int_equal(decree_checkpoint_create_ext(&b, f->s, &o), 0);
	assert_false(b.created);
	assert_int_equal(decree_notice_count(f->s), 1);
	n = decree_notice_at(f->s, 0);
	assert_int_equal(n->kind, DECREE_NOTICE_EXISTING);
	assert_string_equal(n->checkpoint, a.id);
	assert_string_equal(n->session, "default");
	assert_string_equal(n->msg, "m1");
	assert_true(n->message && strstr(n->message, "already exists"));

	/* restore a, edit what it wrote, undo: the edit is in pre-undo */
	puts_at(f, ".gitignore", "*.tmp\n# changed\n");
	assert_int_equal(decree_checkpoint_restore(&rr, f->s, a.id, NULL), 0);
	assert_int_equal(decree_notice_count(f->s), 0);
	puts_at(f, ".gitignore", "user edit\n");
	assert_int_equal(decree_undo(&rr, f->s, NULL), 0);
	assert_int_equal(decree_notice_count(f->s), 1);
	n = decree_notice_at(f->s, 0);
	assert_int_equal(n->kind, DECREE_NOTICE_EDITS_SAVED);
	assert_int_equal(n->npaths, 1);
	assert_string_equal(n->paths[0], ".gitignore");
	assert_string_equal(n->checkpoint, rr.pre_checkpoint);
	assert_string_equal(n->label, "pre-undo");
	{
		/* the capture holds the edit (the notice lives until the
		 * next call that can notice: copy what it says first) */
		const char *const only[] = { ".gitignore", NULL };
		decree_restore_options ro = DECREE_RESTORE_OPTIONS_INIT;
		char pre[DECREE_ID_HEXLEN + 1];
		memcpy(pre, n->checkpoint, sizeof(pre));
		ro.paths = only;
		assert_int_equal(decree_checkpoint_restore(&rr, f->s, pre, &ro),
				 0);
	}
	assert_int_equal(decree_notice_count(f->s), 0);
	{
		char p[PATH_MAX + 32];
		buf got = BUF_INIT;
		snprintf(p, sizeof(p), "%s/.gitignore", f->root);
		assert_int_equal(fs_read_path(p, &got), 0);
		assert_string_equal(got.ptr, "user edit\n");
		buf_release(&got);
	}
}

/* roots_in_use: what keeps a root's directory, what gc may remove. */
static void test_roots_in_use(void **state)
{
	fixture *f = *state;
	char dir[PATH_MAX + 32], p[PATH_MAX + 96];
	bool used;

	snprintf(dir, sizeof(dir), "%s/st/roots/k", f->root);
	assert_int_equal(roots_in_use(&used, dir), 0); /* none at all */
	assert_false(used);
	snprintf(p, sizeof(p), "%s/checkpoints", dir);
	assert_int_equal(fs_mkdirs(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/journal", dir);
	assert_int_equal(fs_mkdirs(p, 0755), 0);
	{
		static const char *const unused[] = { "ROOT",
						      "checkpoints.cache",
						      "statcache",
						      "statcache.delta",
						      ".oplog.tmp-abc",
						      "checkpoints/.x.tmp-1",
						      "journal/.y.tmp-2" };
		for (size_t i = 0; i < ARRAY_SIZE(unused); i++) {
			snprintf(p, sizeof(p), "%s/%s", dir, unused[i]);
			assert_int_equal(fs_write_atomic(p, "x", 1, 0644), 0);
		}
	}
	assert_int_equal(roots_in_use(&used, dir), 0);
	assert_false(used);
	{
		static const char *const keep[] = {
			"oplog",      "txn.wal",       "checkpoints.drop",
			"ROOT.next",  "something-new", "checkpoints/abc",
			"journal/abc"
		};
		for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
			snprintf(p, sizeof(p), "%s/%s", dir, keep[i]);
			assert_int_equal(fs_write_atomic(p, "x", 1, 0644), 0);
			assert_int_equal(roots_in_use(&used, dir), 0);
			if (!used)
				fail_msg("'%s' does not keep it", keep[i]);
			assert_int_equal(roots_remove_unused(dir),
					 DECREE_EEXISTS);
			assert_int_equal(unlink(p), 0);
		}
	}
	assert_int_equal(roots_remove_unused(dir), 0);
	assert_int_not_equal(access(dir, F_OK), 0);
	decree_error_clear();
}

/* Is the checkpoint `id` a capture (decree_checkpoint_is_capture)? */
static bool capture_of(fixture *f, const char *id)
{
	decree_checkpoint_list *l;
	bool found = false, capture = false;

	assert_int_equal(decree_checkpoint_list_get(&l, f->s, NULL, 0), 0);
	for (size_t i = 0; i < decree_checkpoint_list_count(l); i++) {
		const decree_checkpoint_info *c =
			decree_checkpoint_list_at(l, i);
		if (!strcmp(c->id, id)) {
			found = true;
			capture = decree_checkpoint_is_capture(c);
		}
	}
	decree_checkpoint_list_free(l);
	assert_true(found);
	return capture;
}

/* The captures decree makes (a restore's pre-restore, an undo's pre-undo
 * after later edits, a redo's pre-redo) are told apart from the
 * checkpoints made with create, whatever their labels. */
static void test_captures(void **state)
{
	fixture *f = *state;
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created one, labelled, plain;
	decree_restore_result res;
	char pre[DECREE_ID_HEXLEN + 1];

	assert_false(decree_checkpoint_is_capture(NULL));
	puts_at(f, "a.txt", "1\n");
	o.message = "one";
	assert_int_equal(decree_checkpoint_create_ext(&one, f->s, &o), 0);
	/* decree's label with a message: a checkpoint of the user's */
	puts_at(f, "a.txt", "2\n");
	o.message = "two";
	o.label = "pre-restore";
	assert_int_equal(decree_checkpoint_create_ext(&labelled, f->s, &o), 0);
	/* no message, another label */
	puts_at(f, "a.txt", "3\n");
	o.message = NULL;
	o.label = "mine";
	assert_int_equal(decree_checkpoint_create_ext(&plain, f->s, &o), 0);
	assert_false(capture_of(f, one.id));
	assert_false(capture_of(f, labelled.id));
	assert_false(capture_of(f, plain.id));
	/* a restore's capture */
	puts_at(f, "a.txt", "4\n");
	assert_int_equal(decree_checkpoint_restore(&res, f->s, one.id, NULL),
			 0);
	assert_true(capture_of(f, res.pre_checkpoint));
	/* an undo that finds a later edit keeps it in a capture */
	puts_at(f, "a.txt", "5\n");
	assert_int_equal(decree_undo(&res, f->s, NULL), 0);
	assert_int_equal(strlen(res.pre_checkpoint), DECREE_ID_HEXLEN);
	assert_true(capture_of(f, res.pre_checkpoint));
	memcpy(pre, res.pre_checkpoint, sizeof(pre));
	/* and a redo too */
	puts_at(f, "a.txt", "6\n");
	assert_int_equal(decree_redo(&res, f->s, NULL), 0);
	assert_int_equal(strlen(res.pre_checkpoint), DECREE_ID_HEXLEN);
	assert_string_not_equal(res.pre_checkpoint, pre);
	assert_true(capture_of(f, res.pre_checkpoint));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_options_version_1, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_if_changed_and_tree, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_excludes_carried, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_whole_id, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_captures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_parse, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_roots_in_use, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_size_format, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_progress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notices, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
