/*
 * test_treemerge.c - the per-path rules of the snapshot merge.
 *
 * Snaps are built in memory; a blob's id is the SHA-256 of its bytes and
 * load() finds it in a small table.  One test per rule of treemerge.h
 * (DESIGN "Workspaces"), each checking the action, the result (mode, id,
 * merged bytes) or the conflict reason, and that load() is not asked for
 * what the rule does not need.
 */
#include "util/common.h"
#include "merge/treemerge.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/sha256.h"

#include <setjmp.h>
#include <cmocka.h>

typedef struct {
	oid id;
	const char *data;
	size_t len;
} tblob;

static tblob blobs[64];
static size_t nblobs, nloads;
static int load_error;

static oid blob(const char *data, size_t len)
{
	oid id;

	sha256_buf(&id, data, len);
	assert_true(nblobs < 64);
	blobs[nblobs].id = id;
	blobs[nblobs].data = data;
	blobs[nblobs++].len = len;
	return id;
}

static int load(void *payload, const snap_entry *e, buf *out)
{
	size_t i;

	(void)payload;
	nloads++;
	if (load_error)
		return decree_error_set(load_error, "cannot read blob");
	for (i = 0; i < nblobs; i++)
		if (!oid_cmp(&blobs[i].id, &e->id))
			return buf_put(out, blobs[i].data, blobs[i].len);
	return decree_error_set(DECREE_ENOTFOUND, "no such blob");
}

/* Add path with mode and content (MODE_SKIP: content gives the size). */
static void put(snap *s, const char *path, uint32_t mode, const char *data)
{
	snap_entry *e = snap_add(s, path, strlen(path));

	assert_non_null(e);
	e->mode = mode;
	e->size = strlen(data);
	if (mode != MODE_SKIP)
		e->id = blob(data, strlen(data));
}

typedef struct {
	snap b, o, t;
	treemerge_plan plan;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	nblobs = nloads = 0;
	load_error = 0;
	*state = f;
	return f ? 0 : -1;
}

static int teardown(void **state)
{
	fx *f = *state;

	treemerge_plan_release(&f->plan);
	snap_release(&f->b);
	snap_release(&f->o);
	snap_release(&f->t);
	free(f);
	return 0;
}

static void run(fx *f)
{
	treemerge_opts o = TREEMERGE_OPTS_INIT;

	snap_sort(&f->b);
	snap_sort(&f->o);
	snap_sort(&f->t);
	o.ours_label = "project";
	o.theirs_label = "workspace";
	assert_int_equal(
		treemerge(&f->plan, &f->b, &f->o, &f->t, &o, load, NULL), 0);
}

static const treemerge_item *item(fx *f, const char *path)
{
	size_t i;

	for (i = 0; i < f->plan.n; i++)
		if (!strcmp(f->plan.v[i].path, path))
			return &f->plan.v[i];
	fail_msg("no item for '%s'", path);
	return NULL;
}

static void want_conflict(fx *f, const char *path, enum treemerge_reason r)
{
	const treemerge_item *it = item(f, path);

	if (it->action != TREEMERGE_CONFLICT || it->reason != r)
		fail_msg("'%s': action %d reason %s, wanted conflict %s", path,
			 it->action, treemerge_reason_name(it->reason),
			 treemerge_reason_name(r));
	assert_non_null(it->message);
	assert_null(strchr(it->message, '\n'));
}

static void test_different_files(void **state)
{
	fx *f = *state;
	const treemerge_item *it;

	put(&f->b, "a", MODE_FILE, "1\n");
	put(&f->b, "b", MODE_FILE, "2\n");
	put(&f->b, "same", MODE_FILE, "s\n");
	put(&f->o, "a", MODE_FILE, "1 ours\n");
	put(&f->o, "b", MODE_FILE, "2\n");
	put(&f->o, "same", MODE_FILE, "s\n");
	put(&f->t, "a", MODE_FILE, "1\n");
	put(&f->t, "b", MODE_FILE, "2 theirs\n");
	put(&f->t, "same", MODE_FILE, "s\n");
	put(&f->t, "new", MODE_EXEC, "#!/bin/sh\n");
	run(f);
	assert_int_equal(f->plan.n, 3); /* "same" is not an item */
	assert_int_equal(f->plan.nconflicts, 0);
	assert_int_equal(item(f, "a")->action, TREEMERGE_KEEP_OURS);
	it = item(f, "b");
	assert_int_equal(it->action, TREEMERGE_TAKE_THEIRS);
	assert_int_equal(oid_cmp(&it->id, &f->t.v[1].id), 0);
	it = item(f, "new");
	assert_int_equal(it->action, TREEMERGE_TAKE_THEIRS);
	assert_int_equal(it->mode, MODE_EXEC);
	assert_false(it->deleted);
	assert_int_equal(nloads, 0);
}

static void test_deletions_one_side(void **state)
{
	fx *f = *state;

	put(&f->b, "gone", MODE_FILE, "x\n");
	put(&f->b, "ours-gone", MODE_FILE, "y\n");
	put(&f->o, "gone", MODE_FILE, "x\n");
	put(&f->t, "ours-gone", MODE_FILE, "y\n");
	run(f);
	assert_int_equal(item(f, "gone")->action, TREEMERGE_TAKE_THEIRS);
	assert_true(item(f, "gone")->deleted);
	assert_int_equal(item(f, "ours-gone")->action, TREEMERGE_KEEP_OURS);
	assert_true(item(f, "ours-gone")->deleted);
}

static void test_text_merge_clean(void **state)
{
	fx *f = *state;
	const treemerge_item *it;

	put(&f->b, "t", MODE_FILE, "a\nb\nc\nd\ne\n");
	put(&f->o, "t", MODE_FILE, "A\nb\nc\nd\ne\n");
	put(&f->t, "t", MODE_FILE, "a\nb\nc\nd\nE\n");
	run(f);
	it = item(f, "t");
	assert_int_equal(it->action, TREEMERGE_WRITE_MERGED);
	assert_int_equal(it->mode, MODE_FILE);
	assert_int_equal(it->len, 10);
	assert_memory_equal(it->data, "A\nb\nc\nd\nE\n", 10);
	assert_int_equal(nloads, 3);
}

static void test_text_overlap(void **state)
{
	fx *f = *state;
	const treemerge_item *it;

	put(&f->b, "t", MODE_FILE, "a\nb\nc\n");
	put(&f->o, "t", MODE_FILE, "a\nB\nc\n");
	put(&f->t, "t", MODE_FILE, "a\nb\nC\n"); /* adjacent: conflict */
	run(f);
	want_conflict(f, "t", TREEMERGE_CONTENT);
	it = item(f, "t");
	assert_int_equal(it->text.nconflicts, 1);
	assert_non_null(strstr(it->text.ptr, "<<<<<<< project\n"));
	assert_non_null(strstr(it->text.ptr, ">>>>>>> workspace\n"));
	assert_non_null(strstr(it->message, "project"));
	assert_int_equal(f->plan.nconflicts, 1);
}

static void test_delete_modify(void **state)
{
	fx *f = *state;

	put(&f->b, "dm", MODE_FILE, "1\n");
	put(&f->b, "md", MODE_FILE, "2\n");
	put(&f->t, "dm", MODE_FILE, "1 changed\n");
	put(&f->o, "md", MODE_FILE, "2 changed\n");
	run(f);
	want_conflict(f, "dm", TREEMERGE_DELETE_MODIFY);
	want_conflict(f, "md", TREEMERGE_MODIFY_DELETE);
	assert_string_equal(item(f, "dm")->message,
			    "deleted in project, changed in workspace");
	assert_int_equal(f->plan.nconflicts, 2);
}

static void test_binary(void **state)
{
	fx *f = *state;
	static const char b[] = "bin\0base", o[] = "bin\0ours",
			  t[] = "bin\0theirs";
	snap_entry *e;

	e = snap_add(&f->b, "x.bin", 5);
	e->mode = MODE_FILE;
	e->id = blob(b, sizeof(b) - 1);
	e = snap_add(&f->o, "x.bin", 5);
	e->mode = MODE_FILE;
	e->id = blob(o, sizeof(o) - 1);
	e = snap_add(&f->t, "x.bin", 5);
	e->mode = MODE_FILE;
	e->id = blob(t, sizeof(t) - 1);
	/* changed on one side only: taken, never loaded */
	e = snap_add(&f->b, "y.bin", 5);
	e->mode = MODE_FILE;
	e->id = blob(b, sizeof(b) - 1);
	e = snap_add(&f->o, "y.bin", 5);
	*e = f->b.v[1];
	e->path = (char *)"y.bin";
	e = snap_add(&f->t, "y.bin", 5);
	e->mode = MODE_FILE;
	e->id = blob(t, sizeof(t) - 1);
	run(f);
	want_conflict(f, "x.bin", TREEMERGE_BINARY);
	assert_int_equal(item(f, "y.bin")->action, TREEMERGE_TAKE_THEIRS);
}

static void test_mode_and_content(void **state)
{
	fx *f = *state;
	const treemerge_item *it;

	/* ours: chmod +x; theirs: new content -> theirs' bytes, ours' mode */
	put(&f->b, "m1", MODE_FILE, "a\n");
	put(&f->o, "m1", MODE_EXEC, "a\n");
	put(&f->t, "m1", MODE_FILE, "b\n");
	/* ours: new content; theirs: chmod 600 -> ours' bytes, mode 600 */
	put(&f->b, "m2", MODE_FILE, "a\n");
	put(&f->o, "m2", MODE_FILE, "b\n");
	put(&f->t, "m2", MODE_REG | 0600, "a\n");
	/* modes changed differently -> conflict */
	put(&f->b, "m3", MODE_FILE, "a\n");
	put(&f->o, "m3", MODE_EXEC, "a\n");
	put(&f->t, "m3", MODE_REG | 0600, "a\n");
	/* both merged text and theirs' mode */
	put(&f->b, "m4", MODE_FILE, "1\n2\n3\n4\n");
	put(&f->o, "m4", MODE_FILE, "one\n2\n3\n4\n");
	put(&f->t, "m4", MODE_EXEC, "1\n2\n3\nfour\n");
	run(f);
	it = item(f, "m1");
	assert_int_equal(it->action, TREEMERGE_TAKE_THEIRS);
	assert_int_equal(it->mode, MODE_EXEC);
	assert_int_equal(oid_cmp(&it->id, &f->t.v[0].id), 0);
	it = item(f, "m2");
	assert_int_equal(it->action, TREEMERGE_CHMOD);
	assert_int_equal(it->mode, MODE_REG | 0600);
	want_conflict(f, "m3", TREEMERGE_MODE);
	it = item(f, "m4");
	assert_int_equal(it->action, TREEMERGE_WRITE_MERGED);
	assert_int_equal(it->mode, MODE_EXEC);
	assert_int_equal(it->len, strlen("one\n2\n3\nfour\n"));
	assert_memory_equal(it->data, "one\n2\n3\nfour\n", it->len);
}

static void test_same_change_both(void **state)
{
	fx *f = *state;

	put(&f->b, "s", MODE_FILE, "a\n");
	put(&f->o, "s", MODE_EXEC, "b\n");
	put(&f->t, "s", MODE_EXEC, "b\n");
	put(&f->b, "d", MODE_FILE, "a\n"); /* deleted on both */
	run(f);
	assert_int_equal(item(f, "s")->action, TREEMERGE_KEEP_OURS);
	assert_int_equal(item(f, "d")->action, TREEMERGE_KEEP_OURS);
	assert_true(item(f, "d")->deleted);
	assert_int_equal(f->plan.nconflicts, 0);
	assert_int_equal(nloads, 0);
}

static void test_add_add(void **state)
{
	fx *f = *state;
	const treemerge_item *it;

	put(&f->o, "same", MODE_FILE, "x\n");
	put(&f->t, "same", MODE_FILE, "x\n");
	put(&f->o, "diff", MODE_FILE, "a\nb\nc\n");
	put(&f->t, "diff", MODE_FILE, "a\nB\nc\n");
	put(&f->o, "empty", MODE_FILE, ""); /* git: the other side wins */
	put(&f->t, "empty", MODE_FILE, "t\n");
	put(&f->o, "modes", MODE_FILE, "m\n");
	put(&f->t, "modes", MODE_EXEC, "m\n");
	run(f);
	assert_int_equal(item(f, "same")->action, TREEMERGE_KEEP_OURS);
	want_conflict(f, "diff", TREEMERGE_ADD_ADD);
	/* the common lines a and c are left out of the conflict */
	assert_string_equal(item(f, "diff")->text.ptr,
			    "a\n<<<<<<< project\nb\n=======\nB\n>>>>>>> "
			    "workspace\nc\n");
	it = item(f, "empty");
	assert_int_equal(it->action, TREEMERGE_WRITE_MERGED);
	assert_int_equal(it->len, 2);
	assert_memory_equal(it->data, "t\n", 2);
	want_conflict(f, "modes", TREEMERGE_MODE);
}

static void test_types_and_symlinks(void **state)
{
	fx *f = *state;

	/* ours turns a file into a symlink, theirs edits it */
	put(&f->b, "ft", MODE_FILE, "a\n");
	put(&f->o, "ft", MODE_LINK, "target");
	put(&f->t, "ft", MODE_FILE, "b\n");
	/* created as a file and as a symlink */
	put(&f->o, "new", MODE_FILE, "a\n");
	put(&f->t, "new", MODE_LINK, "elsewhere");
	/* symlink retargeted differently */
	put(&f->b, "ln", MODE_LINK, "one");
	put(&f->o, "ln", MODE_LINK, "two");
	put(&f->t, "ln", MODE_LINK, "three");
	/* symlink retargeted on one side: taken */
	put(&f->b, "ln2", MODE_LINK, "one");
	put(&f->o, "ln2", MODE_LINK, "one");
	put(&f->t, "ln2", MODE_LINK, "two");
	run(f);
	want_conflict(f, "ft", TREEMERGE_TYPE);
	want_conflict(f, "new", TREEMERGE_TYPE);
	want_conflict(f, "ln", TREEMERGE_SYMLINK);
	assert_int_equal(item(f, "ln2")->action, TREEMERGE_TAKE_THEIRS);
	assert_int_equal(item(f, "ln2")->mode, MODE_LINK);
	assert_int_equal(nloads, 0);
}

static void test_skipped(void **state)
{
	fx *f = *state;

	/* the project's big file is not stored: theirs must not replace it,
	 * nor delete it */
	put(&f->b, "big1", MODE_SKIP, "12345");
	put(&f->o, "big1", MODE_SKIP, "12345");
	put(&f->t, "big1", MODE_FILE, "small\n");
	put(&f->b, "big2", MODE_SKIP, "12345");
	put(&f->o, "big2", MODE_SKIP, "12345");
	/* theirs' version is not stored: nothing to write */
	put(&f->b, "big3", MODE_FILE, "a\n");
	put(&f->o, "big3", MODE_FILE, "a\n");
	put(&f->t, "big3", MODE_SKIP, "1234567");
	/* both changed, base not stored: nothing to merge against */
	put(&f->b, "big4", MODE_SKIP, "12345");
	put(&f->o, "big4", MODE_FILE, "o\n");
	put(&f->t, "big4", MODE_FILE, "t\n");
	/* ours changed an unstored file, theirs did not: keep ours */
	put(&f->b, "big5", MODE_SKIP, "12345");
	put(&f->o, "big5", MODE_SKIP, "123456");
	put(&f->t, "big5", MODE_SKIP, "12345");
	run(f);
	want_conflict(f, "big1", TREEMERGE_SKIPPED);
	want_conflict(f, "big2", TREEMERGE_SKIPPED);
	assert_non_null(strstr(item(f, "big2")->message, "delete"));
	want_conflict(f, "big3", TREEMERGE_SKIPPED);
	want_conflict(f, "big4", TREEMERGE_SKIPPED);
	assert_int_equal(item(f, "big5")->action, TREEMERGE_KEEP_OURS);
	assert_int_equal(f->plan.nconflicts, 4);
	assert_int_equal(nloads, 0);
}

static void test_dir_file(void **state)
{
	fx *f = *state;

	put(&f->b, "keep", MODE_FILE, "k\n");
	put(&f->o, "keep", MODE_FILE, "k\n");
	put(&f->t, "keep", MODE_FILE, "k\n");
	put(&f->o, "a", MODE_FILE, "file\n");
	put(&f->t, "a/b", MODE_FILE, "below\n");
	put(&f->t, "a/c", MODE_FILE, "below too\n");
	/* theirs replaces file d by directory d/: consistent, clean */
	put(&f->b, "d", MODE_FILE, "x\n");
	put(&f->o, "d", MODE_FILE, "x\n");
	put(&f->t, "d/e", MODE_FILE, "y\n");
	run(f);
	want_conflict(f, "a", TREEMERGE_DIR_FILE);
	want_conflict(f, "a/b", TREEMERGE_DIR_FILE);
	want_conflict(f, "a/c", TREEMERGE_DIR_FILE);
	assert_int_equal(item(f, "d")->action, TREEMERGE_TAKE_THEIRS);
	assert_true(item(f, "d")->deleted);
	assert_int_equal(item(f, "d/e")->action, TREEMERGE_TAKE_THEIRS);
	assert_int_equal(f->plan.nconflicts, 3);
}

static void test_errors(void **state)
{
	fx *f = *state;
	treemerge_opts o = TREEMERGE_OPTS_INIT;

	put(&f->b, "t", MODE_FILE, "a\n");
	put(&f->o, "t", MODE_FILE, "b\n");
	put(&f->t, "t", MODE_FILE, "c\n");
	load_error = DECREE_ECORRUPT;
	assert_int_equal(treemerge(&f->plan, &f->b, &f->o, &f->t, NULL, load,
				   NULL),
			 DECREE_ECORRUPT);
	assert_string_equal(error_last(), "cannot read blob");
	assert_int_equal(f->plan.n, 0);
	load_error = 0;
	f->o.v[0].unhashed = 1;
	assert_int_equal(treemerge(&f->plan, &f->b, &f->o, &f->t, NULL, load,
				   NULL),
			 DECREE_EINVALID);
	f->o.v[0].unhashed = 0;
	o.version = 42;
	assert_int_equal(treemerge(&f->plan, &f->b, &f->o, &f->t, &o, load,
				   NULL),
			 DECREE_EINVALID);
	assert_string_equal(treemerge_reason_name(TREEMERGE_DELETE_MODIFY),
			    "delete/modify");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_different_files),  T(test_deletions_one_side),
		T(test_text_merge_clean), T(test_text_overlap),
		T(test_delete_modify),	  T(test_binary),
		T(test_mode_and_content), T(test_same_change_both),
		T(test_add_add),	  T(test_types_and_symlinks),
		T(test_skipped),	  T(test_dir_file),
		T(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
