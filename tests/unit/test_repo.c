/*
 * test_repo.c - where a store may live (DESIGN "The store is never part of
 * the tree").
 *
 * A store that is the project root or one of its ancestors is refused at
 * open, however it is named ("." , "sub/..", a symlink to the root, an
 * ancestor) and nothing is created.  A store inside the tree, at any depth,
 * is excluded from every scan and every restore: named with ".." or
 * through a symlink, not created yet when the handle is opened (another
 * handle creates it), and when a checkpoint record somehow lists files
 * inside it (a record written by a version without this rule): a restore
 * neither creates nor deletes anything there, and no transaction may
 * write a path inside it.
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
#include "util/error.h"
#include "util/fs.h"
#include "ops/checkpoint.h"
#include "store/odb.h"
#include "store/repo.h"
#include "store/snap.h"
#include "txn/txn.h"

#include <dirent.h>

typedef struct {
	char root[PATH_MAX];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	char real[PATH_MAX];

	if (!f || testutil_mkdtemp(f->root, sizeof(f->root), "repo") < 0)
		return -1;
	/* the handle's root is canonical: compare against the same */
	if (!realpath(f->root, real))
		return -1;
	snprintf(f->root, sizeof(f->root), "%s", real);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	testutil_rm_rf(f->root);
	free(f);
	return 0;
}

static void path_of(char *out, const fixture *f, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", f->root, rel);
}

static void put(const fixture *f, const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *fp;

	path_of(p, f, rel);
	assert_non_null(fp = fopen(p, "w"));
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void mkdir_at(const fixture *f, const char *rel)
{
	char p[PATH_MAX];
	path_of(p, f, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static bool exists(const fixture *f, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	path_of(p, f, rel);
	return lstat(p, &st) == 0;
}

static int open_at(decree_store **s, const fixture *f, const char *store)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	o.root = f->root;
	o.store_path = store;
	o.threads = 1;
	o.lock_timeout_ms = 2000;
	return decree_store_open(s, &o);
}

/* Entries of the root directory, to see that a refusal created nothing. */
static int count_entries(const fixture *f)
{
	DIR *d = opendir(f->root);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_store_at_or_above_root_refused(void **state)
{
	fixture *f = *state;
	char p[PATH_MAX], parent[PATH_MAX], cwd[PATH_MAX];
	decree_store *s;
	const char *names[6];
	int before;

	put(f, "a.txt", "a\n");
	mkdir_at(f, "sub");
	path_of(p, f, "rootlink");
	assert_int_equal(symlink(f->root, p), 0);
	snprintf(parent, sizeof(parent), "%s/..", f->root);
	names[0] = f->root;
	names[1] = parent;
	path_of(p, f, "sub/..");
	names[2] = p;
	names[3] = "/";
	names[4] = "rootlink"; /* relative to the cwd, set below */
	names[5] = ".";
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->root), 0);
	before = count_entries(f);
	for (size_t i = 0; i < 6; i++) {
		s = NULL;
		int r = open_at(&s, f, names[i]);
		if (r != DECREE_EINVALID)
			fail_msg("store '%s' was accepted (%d)", names[i], r);
		assert_null(s);
		assert_non_null(strstr(decree_error_last(), "project root"));
		assert_non_null(strstr(decree_error_last(), "as the store"));
	}
	assert_int_equal(count_entries(f), before);
	assert_false(exists(f, "DECREE-STORE"));
	assert_int_equal(chdir(cwd), 0);
}

/* The paths a checkpoint holds, one per line. */
static void snapshot_paths(buf *out, decree_store *s, const char *id)
{
	decree_snapshot *sn;
	decree_checkpoint_info info;

	buf_clear(out);
	assert_int_equal(decree_checkpoint_show(&sn, &info, s, id), 0);
	for (size_t i = 0; i < decree_snapshot_count(sn); i++) {
		decree_file_info fi;
		decree_snapshot_at(&fi, sn, i);
		buf_puts(out, fi.path);
		buf_putc(out, '\n');
	}
	decree_snapshot_free(sn);
}

static void create(char *id, decree_store *s)
{
	decree_checkpoint_create_options o =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	bool created;
	int r = decree_checkpoint_create(id, &created, s, &o);
	if (r < 0)
		fail_msg("create: %s", decree_error_last());
}

static void test_store_inside_named_with_dotdot(void **state)
{
	fixture *f = *state;
	char id[DECREE_ID_HEXLEN + 1], want[PATH_MAX];
	decree_store *s;
	buf b = BUF_INIT;

	put(f, "a.txt", "a\n");
	mkdir_at(f, "data");
	path_of(want, f, "data/new/../st");
	assert_int_equal(open_at(&s, f, want), 0);
	path_of(want, f, "data/st");
	assert_string_equal(decree_store_path(s), want);
	create(id, s);
	snapshot_paths(&b, s, id);
	assert_string_equal(b.ptr, "a.txt\n");
	assert_false(exists(f, "data/new")); /* mkdir -p of the canonical path
					      */
	assert_true(exists(f, "data/st/DECREE-STORE"));
	/* a second checkpoint (the store now has packs and records) */
	put(f, "b.txt", "b\n");
	create(id, s);
	snapshot_paths(&b, s, id);
	assert_string_equal(b.ptr, "a.txt\nb.txt\n");
	decree_store_free(s);
	buf_release(&b);
}

static void test_store_inside_through_symlink(void **state)
{
	fixture *f = *state;
	char id[DECREE_ID_HEXLEN + 1], p[PATH_MAX];
	decree_store *s;
	buf b = BUF_INIT;

	put(f, "a.txt", "a\n");
	mkdir_at(f, "real");
	path_of(p, f, "ln");
	assert_int_equal(symlink("real", p), 0);
	path_of(p, f, "ln/deep/st");
	assert_int_equal(open_at(&s, f, p), 0);
	create(id, s);
	create(id, s); /* the store exists by now: same answer */
	snapshot_paths(&b, s, id);
	assert_string_equal(b.ptr, "a.txt\nln\n");
	assert_true(exists(f, "real/deep/st/DECREE-STORE"));
	decree_store_free(s);
	buf_release(&b);
}

static int collect(void *payload, const char *path, char status)
{
	buf *b = payload;
	buf_printf(b, "%c %s\n", status, path);
	return 0;
}

/* Handle 1 is opened before the store exists; handle 2 creates it.  A
 * compare through handle 1 must not see the store's files. */
static void test_store_created_after_open(void **state)
{
	fixture *f = *state;
	char id[DECREE_ID_HEXLEN + 1], p[PATH_MAX];
	decree_store *s1, *s2;
	buf b = BUF_INIT;

	put(f, "a.txt", "a\n");
	path_of(p, f, "keep/st");
	assert_int_equal(open_at(&s1, f, p), 0);
	assert_int_equal(open_at(&s2, f, p), 0);
	create(id, s2);
	assert_true(exists(f, "keep/st/DECREE-STORE"));
	put(f, "b.txt", "b\n");
	assert_int_equal(decree_checkpoint_compare(s1, id, NULL, collect, &b),
			 0);
	assert_string_equal(b.ptr, "A b.txt\n");
	decree_store_free(s1);
	decree_store_free(s2);
	buf_release(&b);
}

/* A record that lists files inside the store: restore leaves the store
 * alone, and the transaction engine refuses to write there at all. */
static void test_restore_never_touches_store(void **state)
{
	fixture *f = *state;
	char id[DECREE_ID_HEXLEN + 1], p[PATH_MAX];
	decree_restore_options ro = DECREE_RESTORE_OPTIONS_INIT;
	decree_restore_result res;
	decree_store *s;
	snap sn = SNAP_INIT;
	snap_entry *e;
	odb_writer *w;
	odb *db;
	txn_change ch;
	txn_spec sp;
	static const char evil[] = "planted\n";
	static const char lock_text[] = "not the lock\n";

	put(f, "a.txt", "a\n");
	path_of(p, f, "st");
	assert_int_equal(open_at(&s, f, p), 0);
	create(id, s); /* the store exists now */
	assert_int_equal(repo_lock(s), 0);
	assert_int_equal(repo_odb(&db, s, false), 0);
	assert_int_equal(odb_writer_new(&w, db), 0);
	assert_non_null(e = snap_add(&sn, "a.txt", 5));
	e->mode = MODE_FILE;
	e->size = 2;
	assert_int_equal(odb_writer_add(w, ODB_BLOB, "a\n", 2, NULL, &e->id),
			 0);
	assert_non_null(e = snap_add(&sn, "st/evil", 7));
	e->mode = MODE_FILE;
	e->size = sizeof(evil) - 1;
	assert_int_equal(odb_writer_add(w, ODB_BLOB, evil, sizeof(evil) - 1,
					NULL, &e->id),
			 0);
	assert_non_null(e = snap_add(&sn, "st/lock", 7));
	e->mode = MODE_FILE;
	e->size = sizeof(lock_text) - 1;
	assert_int_equal(odb_writer_add(w, ODB_BLOB, lock_text,
					sizeof(lock_text) - 1, NULL, &e->id),
			 0);
	if (checkpoint_write(id, s, w, &sn, "default", "with store", NULL) < 0)
		fail_msg("checkpoint_write: %s", decree_error_last());
	odb_writer_free(w);
	repo_unlock(s);

	/* restore: nothing to do, the store's lock file untouched */
	if (decree_checkpoint_restore(&res, s, id, &ro) < 0)
		fail_msg("restore: %s", decree_error_last());
	assert_int_equal(res.created + res.restored + res.deleted, 0);
	assert_false(exists(f, "st/evil"));

	/* a transaction that names a path inside the store is refused */
	memset(&ch, 0, sizeof(ch));
	ch.path = (char *)"st/evil";
	ch.has_new = true;
	ch.new_mode = MODE_FILE;
	ch.new_size = sn.v[1].size;
	ch.new_id = sn.v[1].id;
	memset(&sp, 0, sizeof(sp));
	sp.changes = &ch;
	sp.n = 1;
	assert_int_equal(txn_lock(NULL, NULL, s), 0);
	assert_int_equal(txn_run(s, &sp), DECREE_EINVALID);
	assert_non_null(strstr(decree_error_last(), "inside the store"));
	repo_unlock(s);
	assert_false(exists(f, "st/evil"));
	snap_release(&sn);
	decree_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_store_at_or_above_root_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_inside_named_with_dotdot, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_inside_through_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_created_after_open,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_restore_never_touches_store, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
