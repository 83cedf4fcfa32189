/*
 * test_projects.c - the roots a store serves and moving one
 * (decree/projects.h, store/roots.h).
 *
 * The path an attachment serves is the one of ROOT / ROOT.next that
 * hashes to its key, so every intermediate state of a move reads as the
 * old attachment or the new one; a handle on a root that is gone opens
 * only with DECREE_STORE_MISSING_ROOT and a store that has checkpoints
 * for it, and refuses what needs the tree; a move refuses an unknown
 * old root (naming the closest), a new root with checkpoints of its own
 * or one that is not a directory, and carries records and history; an
 * in-tree store follows its moved project.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "decree/decree.h"
#include "util/buf.h"
#include "util/fs.h"
#include "store/repo.h"
#include "store/roots.h"

typedef struct {
	char dir[PATH_MAX], store[PATH_MAX + 8];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	char real[PATH_MAX];

	if (!f || testutil_mkdtemp(f->dir, sizeof(f->dir), "projects") < 0 ||
	    !realpath(f->dir, real))
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", real);
	snprintf(f->store, sizeof(f->store), "%s/st", real);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	testutil_rm_rf(f->dir);
	free(f);
	return 0;
}

static void at(char *out, const fixture *f, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", f->dir, rel);
}

static void put(const fixture *f, const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *fp;

	at(p, f, rel);
	assert_non_null(fp = fopen(p, "w"));
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static int open_root(decree_store **s, const fixture *f, const char *rel,
		     bool external, unsigned flags)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	char root[PATH_MAX];

	at(root, f, rel);
	o.root = root;
	o.store_path = external ? f->store : NULL;
	o.threads = 1;
	o.lock_timeout_ms = 2000;
	o.flags = flags;
	return decree_store_open(s, &o);
}

/* A project `rel` with one checkpoint. */
static void project(const fixture *f, const char *rel, bool external)
{
	char p[PATH_MAX], id[DECREE_ID_HEXLEN + 1];
	decree_store *s;
	bool created;

	at(p, f, rel);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/f.txt", rel);
	put(f, p, rel);
	assert_int_equal(open_root(&s, f, rel, external, 0), 0);
	assert_int_equal(decree_checkpoint_create(id, &created, s, NULL), 0);
	decree_store_free(s);
}

static size_t count(decree_store *s)
{
	decree_checkpoint_list *l;
	size_t n;

	assert_int_equal(decree_checkpoint_list_get(&l, s, NULL, 0), 0);
	n = decree_checkpoint_list_count(l);
	decree_checkpoint_list_free(l);
	return n;
}

static void write_file(const char *path, const char *text)
{
	assert_int_equal(fs_write_atomic(path, text, strlen(text), 0644), 0);
}

static void test_roots_path_follows_the_key(void **state)
{
	fixture *f = *state;
	char dir[PATH_MAX], p[PATH_MAX + 16];
	buf b = BUF_INIT;

	roots_dir(dir, f->store, "/x/old");
	assert_int_equal(fs_mkdirs(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/ROOT", dir);
	write_file(p, "/x/old");
	assert_int_equal(roots_path(&b, dir), 0);
	assert_string_equal(b.ptr, "/x/old");
	/* step 1 of a move: ROOT.next does not hash to this key */
	snprintf(p, sizeof(p), "%s/ROOT.next", dir);
	write_file(p, "/x/new");
	assert_int_equal(roots_path(&b, dir), 0);
	assert_string_equal(b.ptr, "/x/old");
	/* the commit point: under the new key, ROOT.next is the path */
	assert_int_equal(roots_move(f->store, dir, "/x/new"), 0);
	roots_dir(dir, f->store, "/x/new");
	assert_int_equal(roots_path(&b, dir), 0);
	assert_string_equal(b.ptr, "/x/new");
	/* a ROOT that names another root names nothing */
	snprintf(p, sizeof(p), "%s/ROOT", dir);
	write_file(p, "/x/other");
	assert_int_equal(roots_path(&b, dir), DECREE_ENOTFOUND);
	buf_release(&b);
}

static void test_missing_root(void **state)
{
	fixture *f = *state;
	char old[PATH_MAX], moved[PATH_MAX], id[DECREE_ID_HEXLEN + 1];
	decree_store_options v1 = DECREE_STORE_OPTIONS_INIT;
	decree_store *s;
	bool created;

	project(f, "a", true);
	at(old, f, "a");
	at(moved, f, "a2");
	assert_int_equal(rename(old, moved), 0);
	/* not without the flag, nor without the store, nor for a root the
	 * store does not know */
	assert_int_equal(open_root(&s, f, "a", true, 0), DECREE_EINVALID);
	assert_int_equal(open_root(&s, f, "a", false,
				   DECREE_STORE_MISSING_ROOT),
			 DECREE_ENOTFOUND);
	assert_int_equal(open_root(&s, f, "zz", true,
				   DECREE_STORE_MISSING_ROOT),
			 DECREE_ENOTFOUND);
	assert_non_null(strstr(decree_error_last(), "has no checkpoints"));
	assert_int_equal(open_root(&s, f, "a", true, DECREE_STORE_MISSING_ROOT),
			 0);
	assert_false(decree_store_root_exists(s));
	assert_int_equal(count(s), 1);
	assert_int_equal(decree_checkpoint_create(id, &created, s, NULL),
			 DECREE_ENOTFOUND);
	assert_non_null(strstr(decree_error_last(), "does not exist"));
	assert_int_equal(decree_undo(NULL, s, NULL), DECREE_ENOTFOUND);
	decree_store_free(s);
	/* options of version 1 (no flags) still open */
	v1.version = 1;
	v1.root = moved;
	v1.store_path = f->store;
	assert_int_equal(decree_store_open(&s, &v1), 0);
	assert_true(decree_store_root_exists(s));
	decree_store_free(s);
}

static void test_list_and_move(void **state)
{
	fixture *f = *state;
	char old[PATH_MAX], moved[PATH_MAX], dir[PATH_MAX];
	decree_projects *l;
	decree_store *s;
	struct stat st;

	project(f, "a", true);
	project(f, "b", true);
	at(old, f, "a");
	at(moved, f, "a2");
	assert_int_equal(rename(old, moved), 0);
	assert_int_equal(open_root(&s, f, "b", true, 0), 0);
	assert_int_equal(decree_projects_list(&l, s), 0);
	assert_int_equal(decree_projects_count(l), 2);
	assert_string_equal(decree_projects_at(l, 0)->root, old);
	assert_false(decree_projects_at(l, 0)->exists);
	assert_false(decree_projects_at(l, 0)->is_current);
	assert_int_equal(decree_projects_at(l, 0)->checkpoints, 1);
	assert_true(decree_projects_at(l, 0)->bytes > 0);
	assert_true(decree_projects_at(l, 0)->last_ns > 0);
	assert_true(decree_projects_at(l, 1)->exists);
	assert_true(decree_projects_at(l, 1)->is_current);
	assert_null(decree_projects_at(l, 2));
	decree_projects_free(l);

	assert_int_equal(decree_projects_move(s, moved, moved),
			 DECREE_EINVALID);
	at(dir, f, "ax");
	assert_int_equal(decree_projects_move(s, dir, moved), DECREE_ENOTFOUND);
	assert_non_null(strstr(decree_error_last(), "did you mean"));
	at(dir, f, "b");
	assert_int_equal(decree_projects_move(s, old, dir), DECREE_EEXISTS);
	at(dir, f, "nowhere");
	assert_int_equal(decree_projects_move(s, old, dir), DECREE_EINVALID);
	assert_int_equal(decree_projects_move(s, old, moved), 0);
	roots_dir(dir, f->store, old);
	assert_int_not_equal(stat(dir, &st), 0);
	decree_store_free(s);
	assert_int_equal(open_root(&s, f, "a2", true, 0), 0);
	assert_int_equal(count(s), 1);
	decree_store_free(s);
}

static void test_in_tree_store_follows(void **state)
{
	fixture *f = *state;
	char old[PATH_MAX], moved[PATH_MAX], dir[PATH_MAX],
		st_dir[PATH_MAX + 32];
	decree_store *s;
	struct stat st;

	project(f, "p", false);
	at(old, f, "p");
	at(moved, f, "q");
	assert_int_equal(rename(old, moved), 0);
	assert_int_equal(open_root(&s, f, "q", false, 0), 0);
	assert_int_equal(count(s), 1); /* read through the old attachment */
	snprintf(st_dir, sizeof(st_dir), "%s/.decree/store", moved);
	roots_dir(dir, st_dir, moved);
	assert_int_not_equal(stat(dir, &st), 0); /* nothing written yet */
	assert_int_equal(repo_lock(s), 0);	 /* re-attaches */
	repo_unlock(s);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(count(s), 1);
	decree_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roots_path_follows_the_key,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_root, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_list_and_move, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_in_tree_store_follows,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
