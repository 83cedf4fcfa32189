/*
 * test_txn.c - working-tree transactions through the public API, under
 * injected I/O faults and allocation failures.
 *
 * Two pairs of tree states differ in every way a restore can differ:
 * modified bytes, a mode change, a retargeted symlink, files created and
 * deleted below directories that appear and disappear, and (second pair)
 * a file that becomes a directory and a directory that becomes a file.
 * For each step name of the fs.c seam ("write", "rename", "fsync",
 * "unlink", "mkdir") restore, undo, redo, and an apply of the diff that
 * does what the restore does (then its undo) run with the Nth such step
 * failing, for N = 1, 2, ... until the operation runs without reaching
 * the fault.  The return value must tell the truth:
 *   - an error leaves the tree exactly as it was (every path, type,
 *     permission bit, byte and link target, empty directories too), no
 *     temp file in the tree or the store, no txn.wal, the undo/redo
 *     history unchanged, and no new checkpoint record (restore.c drops
 *     its pre-restore capture; counted and reported at the end so that
 *     the loop goes on);
 *   - success with a warning (the failure hit the bookkeeping after the
 *     COMMIT record was durable) leaves the tree exactly in the new
 *     state, and the next call (decree_recover) finishes the bookkeeping:
 *     no log, no temp file, the history records the operation, and its
 *     inverse brings the tree back (then N goes on).
 * Allocation failures (alloc_fail_at) are injected at every allocation of
 * a small checkpoint create and of a restore with the same guarantees; the
 * store must stay usable, and nothing may leak (LeakSanitizer is asked at
 * the end of the test when the build has it).  A few restores that must
 * simply work close the file: shape changes, a ".decree" directory below
 * the root, a file whose bytes equal one of the snapshot's trees.
 *
 * The scratch directories live on /dev/shm when it exists (syncfs on a
 * disk file system costs ~100 ms, and these loops run hundreds of
 * transactions); DECREE_TEST_TMPDIR overrides.  DECREE_TEST_FILTER=<glob>
 * runs a subset.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "decree/decree.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/oplog.h"
#include "store/repo.h"
#include "util/sha256.h"
#include "store/snap.h"
#include "store/tree.h"

#include <dirent.h>
#include <ftw.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* --- scratch
 * ------------------------------------------------------------------------ */

typedef struct {
	char base[PATH_MAX];
	char root[PATH_MAX + 16];
	char store[PATH_MAX + 16];
	decree_store *s;
	char *before, *after, *now; /* tree images, freed by teardown */
} fixture;

static const char *scratch_parent(void)
{
	const char *t = getenv("DECREE_TEST_TMPDIR");
	struct stat st;

	if (t && *t)
		return t;
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

static const char *rm_keep; /* rm_contents: the directory itself stays */

static int rm_below(const char *p, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	UNUSED(st);
	UNUSED(flag);
	UNUSED(ftw);
	if (!strcmp(p, rm_keep))
		return 0;
	return remove(p);
}

static void rm_contents(const char *dir)
{
	rm_keep = dir;
	nftw(dir, rm_below, 16, FTW_DEPTH | FTW_PHYS);
}

static int open_store(decree_store **out, const fixture *f)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	o.root = f->root;
	o.store_path = f->store;
	o.threads = 2;
	o.lock_timeout_ms = 2000;
	return decree_store_open(out, &o);
}

/* The diff from ref_ckpt (below) to the tree before the restore: applied
 * in reverse it does what the restore does. */
static buf patch_text = BUF_INIT;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->base, sizeof(f->base), "%s/decree-txn-XXXXXX",
		 scratch_parent());
	if (!mkdtemp(f->base)) {
		free(f);
		return -1;
	}
	snprintf(f->root, sizeof(f->root), "%s/root", f->base);
	snprintf(f->store, sizeof(f->store), "%s/store", f->base);
	if (mkdir(f->root, 0755) < 0)
		return -1;
	umask(022);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	fs_fault_hook = NULL;
	alloc_fail_at(0);
	buf_release(&patch_text);
	decree_store_free(f->s);
	free(f->before);
	free(f->after);
	free(f->now);
	testutil_rm_rf(f->base);
	free(f);
	return 0;
}

/* --- tree states
 * ------------------------------------------------------------------------ */

enum kind { K_FILE, K_EXEC, K_LINK, K_DIR };

struct ent {
	const char *path;
	enum kind kind;
	const char *content; /* bytes or link target */
};

/* A -> B: modified bytes, a mode change, a retargeted link, files created
 * and deleted below directories that appear and disappear, an empty
 * directory that belongs to neither snapshot. */
static const struct ent state_a[] = {
	{ "a.txt", K_FILE, "alpha\n" },
	{ "dir/b.txt", K_FILE, "bravo\n" },
	{ "dir/sub/c.txt", K_FILE, "charlie\n" },
	{ "exec.sh", K_EXEC, "#!/bin/sh\necho exec\n" },
	{ "link", K_LINK, "a.txt" },
	{ "keep/untouched.txt", K_FILE, "same in both\n" },
	{ "gone/deep/away.txt", K_FILE, "only in A\n" },
	{ "emptydir", K_DIR, NULL },
	{ NULL, K_FILE, NULL },
};

static const struct ent state_b[] = {
	{ "a.txt", K_FILE, "alpha, modified\n" },
	{ "dir/b.txt", K_FILE, "bravo\n" },
	{ "exec.sh", K_FILE, "#!/bin/sh\necho exec\n" },
	{ "link", K_LINK, "dir/b.txt" },
	{ "keep/untouched.txt", K_FILE, "same in both\n" },
	{ "new/deep/file.txt", K_FILE, "created in B\n" },
	{ "emptydir", K_DIR, NULL },
	{ NULL, K_FILE, NULL },
};

/* C -> D: the same kinds of change plus a file that becomes a directory
 * and a directory that becomes a file. */
static const struct ent state_c[] = {
	{ "a.txt", K_FILE, "alpha\n" },
	{ "dir/sub/c.txt", K_FILE, "charlie\n" },
	{ "x", K_FILE, "x is a file here\n" },
	{ "link", K_LINK, "a.txt" },
	{ NULL, K_FILE, NULL },
};

static const struct ent state_d[] = {
	{ "a.txt", K_FILE, "alpha, modified\n" },
	{ "dir/sub", K_FILE, "dir/sub is a file here\n" },
	{ "x/y", K_FILE, "x is a directory here\n" },
	{ "link", K_LINK, "x/y" },
	{ NULL, K_FILE, NULL },
};

static void make_parent(const char *root, const char *rel)
{
	char p[PATH_MAX * 2], *slash;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	slash = strrchr(p, '/');
	*slash = '\0';
	assert_int_equal(fs_mkdirs(p, 0755), 0);
}

static void build_state(const fixture *f, const struct ent *st)
{
	rm_contents(f->root);
	for (; st->path; st++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof(p), "%s/%s", f->root, st->path);
		make_parent(f->root, st->path);
		if (st->kind == K_DIR) {
			assert_int_equal(mkdir(p, 0755), 0);
		} else if (st->kind == K_LINK) {
			assert_int_equal(symlink(st->content, p), 0);
		} else {
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			assert_true(fd >= 0);
			assert_int_equal(fs_write_all(fd, st->content,
						      strlen(st->content)),
					 0);
			assert_int_equal(fchmod(fd, st->kind == K_EXEC ? 0755
								       : 0644),
					 0);
			close(fd);
		}
	}
}

/*
 * The exact state of a directory tree as sorted text lines:
 * "path type perm content" (content: sha256 of the bytes, or the link
 * target).  Plain malloc only, so that allocation counting is undisturbed.
 */
struct lines {
	char **v;
	size_t n, cap;
	size_t skip; /* strlen(root) + 1 */
};

static struct lines *img_acc;

static int img_entry(const char *p, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	struct lines *l = img_acc;
	char line[PATH_MAX * 2], what[PATH_MAX + 1];
	const char *rel;

	UNUSED(flag);
	UNUSED(ftw);
	if (strlen(p) < l->skip)
		return 0; /* the root itself */
	rel = p + l->skip;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(p, what, sizeof(what) - 1);
		what[n < 0 ? 0 : n] = '\0';
		snprintf(line, sizeof(line), "%s L %s", rel, what);
	} else if (S_ISDIR(st->st_mode)) {
		snprintf(line, sizeof(line), "%s D %04o", rel,
			 (unsigned)(st->st_mode & 07777));
	} else if (S_ISREG(st->st_mode)) {
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		oid id;
		char hex[SHA256_HEXLEN + 1];
		if (fd < 0 || sha256_fd(&id, NULL, fd, p) < 0)
			snprintf(hex, sizeof(hex), "unreadable");
		else
			oid_to_hex(hex, &id);
		if (fd >= 0)
			close(fd);
		snprintf(line, sizeof(line), "%s F %04o %.16s", rel,
			 (unsigned)(st->st_mode & 07777), hex);
	} else {
		snprintf(line, sizeof(line), "%s ?", rel);
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n++] = strdup(line);
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Returns a malloc'ed image. */
static char *image(const char *root)
{
	struct lines l;
	size_t len = 1;
	char *out, *p;

	memset(&l, 0, sizeof(l));
	l.skip = strlen(root) + 1;
	img_acc = &l;
	nftw(root, img_entry, 16, FTW_PHYS);
	qsort(l.v, l.n, sizeof(*l.v), line_cmp);
	for (size_t i = 0; i < l.n; i++)
		len += strlen(l.v[i]) + 1;
	out = p = malloc(len);
	assert_non_null(out);
	*p = '\0';
	for (size_t i = 0; i < l.n; i++) {
		size_t k = strlen(l.v[i]);
		memcpy(p, l.v[i], k);
		p[k] = '\n';
		p += k + 1;
		*p = '\0';
		free(l.v[i]);
	}
	free(l.v);
	return out;
}

/* Temp files and logs anywhere below dir: names printed, count returned. */
static size_t leftovers_n;

static int leftover_entry(const char *p, const struct stat *st, int flag,
			  struct FTW *ftw)
{
	const char *name = p + ftw->base;
	UNUSED(st);
	UNUSED(flag);
	if (strstr(name, ".decree-tmp-") || !strncmp(name, "tmp-", 4) ||
	    strstr(name, ".tmp-") || !strcmp(name, "txn.wal")) {
		fprintf(stderr, "left over: %s\n", p);
		leftovers_n++;
	}
	return 0;
}

static size_t leftovers(const fixture *f)
{
	leftovers_n = 0;
	nftw(f->root, leftover_entry, 16, FTW_PHYS);
	nftw(f->store, leftover_entry, 16, FTW_PHYS);
	return leftovers_n;
}

static size_t checkpoint_count(decree_store *s)
{
	decree_checkpoint_list *l;
	size_t n;
	assert_int_equal(decree_checkpoint_list_get(&l, s, NULL, 0), 0);
	n = decree_checkpoint_list_count(l);
	decree_checkpoint_list_free(l);
	return n;
}

/* The undo/redo history as "nundo/nredo:top-undo-id,top-redo-id". */
static void history(char *out, size_t len, decree_store *s)
{
	char path[PATH_MAX];
	oplog l = OPLOG_INIT;

	repo_file(path, s, "oplog");
	assert_int_equal(oplog_load(&l, path), 0);
	snprintf(out, len, "%zu/%zu:%s,%s", l.nundo, l.nredo,
		 l.nundo ? l.undo[l.nundo - 1].id : "-",
		 l.nredo ? l.redo[l.nredo - 1].id : "-");
	oplog_release(&l);
}

static void assert_image(const char *got, const char *want, const char *what)
{
	if (strcmp(got, want))
		fail_msg("%s: the tree is\n%s\nbut should be\n%s", what, got,
			 want);
}

/* Take the image of the tree now into f->now. */
static const char *snapshot_now(fixture *f)
{
	free(f->now);
	f->now = image(f->root);
	return f->now;
}

/* --- the fault seam
 * ------------------------------------------------------------------------ */

static const char *f_step;
static int f_n, f_calls;

static int nth_fault(const char *step)
{
	if (!f_step || strcmp(step, f_step))
		return 0;
	/* (a restore saves its stat cache and its capture's record on other
	 * threads) */
	return __atomic_add_fetch(&f_calls, 1, __ATOMIC_SEQ_CST) == f_n ? EIO
									: 0;
}

enum op { OP_RESTORE, OP_UNDO, OP_REDO, OP_APPLY };

static const char *op_name(enum op op)
{
	return op == OP_RESTORE ? "restore"
	       : op == OP_UNDO	? "undo"
	       : op == OP_REDO	? "redo"
				: "apply";
}

static char ref_ckpt[DECREE_ID_HEXLEN + 1]; /* the checkpoint restored */

static int add_record(void *payload, const decree_diff_file *df)
{
	(void)payload;
	return df->text ? buf_put(&patch_text, df->text, df->len) : 0;
}

static int run_op(fixture *f, enum op op)
{
	decree_restore_result res;
	switch (op) {
	case OP_RESTORE:
		return decree_checkpoint_restore(&res, f->s, ref_ckpt, NULL);
	case OP_UNDO:
		return decree_undo(&res, f->s, NULL);
	case OP_REDO:
		return decree_redo(&res, f->s, NULL);
	default: {
		decree_apply_options o = DECREE_APPLY_OPTIONS_INIT;
		decree_apply_result ar;
		o.reverse = true;
		return decree_apply(&ar, f->s, "t.diff", patch_text.ptr,
				    patch_text.len, &o);
	}
	}
}

struct stats {
	int failures, applied, steps_seen;
	int extra_checkpoints; /* failed ops that left a checkpoint record */
	char first_extra[1400];
};

/* The undo and redo counts of the history. */
static void hist_counts(size_t *nundo, size_t *nredo, decree_store *s)
{
	char path[PATH_MAX];
	oplog l = OPLOG_INIT;

	repo_file(path, s, "oplog");
	assert_int_equal(oplog_load(&l, path), 0);
	*nundo = l.nundo;
	*nredo = l.nredo;
	oplog_release(&l);
}

/* The operation that takes the tree back after `op` succeeded. */
static enum op inverse_of(enum op op)
{
	return op == OP_UNDO ? OP_REDO : OP_UNDO;
}

/*
 * Run `op` with the nth `step` failing, n = 1, 2, ... until it runs
 * without reaching the fault.  `before`/`after` are the images of the
 * tree before and after the op.  A failure must leave the tree before; a
 * success (the fault hit the bookkeeping after the COMMIT record) must
 * leave it after, and then the next call (decree_recover) must finish the
 * bookkeeping: no log, no temp, and the history says the op happened, so
 * that its inverse brings the tree back for the next n.
 */
static void fault_loop(fixture *f, const char *step, enum op op,
		       const char *before, const char *after, struct stats *st)
{
	for (int n = 1; n <= 400; n++) {
		size_t nck = checkpoint_count(f->s), u0, r0, u1, r1;
		char msg[1200], where[1400], hist[96], hist_after[96];
		const char *img;
		int r;

		history(hist, sizeof(hist), f->s);
		hist_counts(&u0, &r0, f->s);
		f_step = step;
		f_n = n;
		f_calls = 0;
		decree_warning_clear();
		fs_fault_hook = nth_fault;
		r = run_op(f, op);
		fs_fault_hook = NULL;
		snprintf(msg, sizeof(msg), "%s",
			 r ? decree_error_last() : decree_warning_last());
		img = snapshot_now(f);
		if (r == 0 && f_calls < n) {
			assert_image(img, after, op_name(op));
			assert_int_equal(leftovers(f), 0);
			st->steps_seen += f_calls;
			return;
		}
		if (r == 0) {
			/* failed after COMMIT: done, with a warning */
			snprintf(where, sizeof(where),
				 "%s with %s #%d failing after commit (%s)",
				 op_name(op), step, n, msg);
			assert_image(img, after, where);
			/* every fault a call survives is said: a swallowed
			 * write of a cache (packs/sealed, the stat cache) is a
			 * note in the warning slot */
			if (!*decree_warning_last())
				fail_msg("%s: no warning", where);
			if (strstr(msg, "unusable"))
				fail_msg("%s: the store handle went broken",
					 where);
			st->applied++;
			assert_int_equal(decree_recover(NULL, f->s), 0);
			if (leftovers(f))
				fail_msg("%s: temp files or txn.wal left after "
					 "the next call",
					 where);
			hist_counts(&u1, &r1, f->s);
			if (op == OP_UNDO   ? (u1 + 1 != u0 || r1 != r0 + 1)
			    : op == OP_REDO ? (u1 != u0 + 1 || r1 + 1 != r0)
					    : (u1 != u0 + 1 || r1 != 0))
				fail_msg(
					"%s: the history was not finished: %zu/%zu "
					"before, %zu/%zu after",
					where, u0, r0, u1, r1);
			assert_int_equal(run_op(f, inverse_of(op)), 0);
			assert_image(snapshot_now(f), before,
				     "the inverse after a warning");
			continue;
		}
		if (f_calls < n)
			fail_msg("%s failed (%d) without an injected fault: %s",
				 op_name(op), r, msg);
		if (strstr(msg, "unusable"))
			fail_msg(
				"%s: the store handle went broken at %s #%d: %s",
				op_name(op), step, n, msg);
		st->failures++;
		snprintf(where, sizeof(where), "%s with %s #%d failing (%s)",
			 op_name(op), step, n, msg);
		/* the exit status tells the truth: failed = nothing changed */
		assert_image(img, before, where);
		if (strstr(msg, "its log stays until the next")) {
			/* a log that could not be removed after the rollback:
			 * the next call removes it */
			assert_int_equal(decree_recover(NULL, f->s), 0);
			assert_image(snapshot_now(f), before, where);
		}
		if (leftovers(f))
			fail_msg("%s: temp files or txn.wal left behind",
				 where);
		history(hist_after, sizeof(hist_after), f->s);
		if (strcmp(hist, hist_after))
			fail_msg(
				"%s: the undo/redo history changed from %s to %s",
				where, hist, hist_after);
		/* a failed restore drops its pre-restore capture (restore.c);
		 * counted, reported at the end, so the loop goes on */
		if (checkpoint_count(f->s) != nck &&
		    st->extra_checkpoints++ == 0)
			snprintf(st->first_extra, sizeof(st->first_extra), "%s",
				 where);
	}
	fail_msg("%s never succeeded with %s faults", op_name(op), step);
}

/* Checkpoint state `from`, then make the tree state `to`; images saved. */
static void prepare(fixture *f, const struct ent *from, const struct ent *to)
{
	bool created;
	build_state(f, from);
	if (!f->s)
		assert_int_equal(open_store(&f->s, f), 0);
	assert_int_equal(
		decree_checkpoint_create(ref_ckpt, &created, f->s, NULL), 0);
	free(f->after);
	f->after = image(f->root);
	build_state(f, to);
	free(f->before);
	f->before = image(f->root);
	assert_string_not_equal(f->before, f->after);
	buf_clear(&patch_text);
	assert_int_equal(decree_checkpoint_diff(f->s, ref_ckpt, NULL, NULL,
						add_record, NULL),
			 0);
	assert_true(patch_text.len > 0);
}

static void faults_between(fixture *f, const struct ent *from,
			   const struct ent *to)
{
	static const char *const steps[] = { "write", "rename", "fsync",
					     "unlink", "mkdir" };
	int extra = 0;
	char first_extra[1400] = "";

	prepare(f, from, to);
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		struct stats st;
		memset(&st, 0, sizeof(st));
		build_state(f, to);
		fault_loop(f, steps[i], OP_RESTORE, f->before, f->after, &st);
		fault_loop(f, steps[i], OP_UNDO, f->after, f->before, &st);
		fault_loop(f, steps[i], OP_REDO, f->before, f->after, &st);
		assert_int_equal(run_op(f, OP_UNDO), 0);
		fault_loop(f, steps[i], OP_APPLY, f->before, f->after, &st);
		fault_loop(f, steps[i], OP_UNDO, f->after, f->before, &st);
		printf("  %-6s: %3d injected failures (%d after commit), %3d steps\n",
		       steps[i], st.failures, st.applied, st.steps_seen);
		assert_true(st.failures > 0);
		if (st.extra_checkpoints && !extra)
			snprintf(first_extra, sizeof(first_extra), "%s",
				 st.first_extra);
		extra += st.extra_checkpoints;
	}
	if (extra)
		fail_msg(
			"%d failed operations left a new checkpoint record behind; the first: %s",
			extra, first_extra);
}

static void test_restore_faults(void **state)
{
	faults_between(*state, state_a, state_b);
}

/* The same with files turning into directories and back. */
static void test_restore_faults_shapes(void **state)
{
	faults_between(*state, state_c, state_d);
}

/* --- cancellation (Ctrl-C) ------------------------------------------------
 *
 * The host's cancel flag is set at the k-th progress call, k = 1, 2, ...
 * (before each file is staged or renamed, at COMMITTING, at DONE).  Before
 * the commit the call must fail with DECREE_ECANCELLED and leave the tree
 * exactly as it was, no temp file, no txn.wal, the history and the
 * checkpoint list unchanged; from the commit on it must complete and
 * return 0 with the tree in the new state.
 */
static volatile int c_flag;
static int c_at, c_calls;

static void cancel_at_k(void *payload, decree_phase ph, const char *path,
			const char *action)
{
	UNUSED(payload);
	UNUSED(ph);
	UNUSED(path);
	UNUSED(action);
	if (++c_calls == c_at)
		c_flag = 1;
}

static int run_op_cancel(fixture *f, enum op op)
{
	decree_restore_options ro = DECREE_RESTORE_OPTIONS_INIT;
	decree_apply_options ao = DECREE_APPLY_OPTIONS_INIT;
	decree_restore_result res;
	decree_apply_result ar;

	ro.progress = ao.progress = cancel_at_k;
	ro.cancel = ao.cancel = &c_flag;
	switch (op) {
	case OP_RESTORE:
		return decree_checkpoint_restore(&res, f->s, ref_ckpt, &ro);
	case OP_UNDO:
		return decree_undo(&res, f->s, &ro);
	case OP_REDO:
		return decree_redo(&res, f->s, &ro);
	default:
		ao.reverse = true;
		return decree_apply(&ar, f->s, "t.diff", patch_text.ptr,
				    patch_text.len, &ao);
	}
}

static void cancel_loop(fixture *f, enum op op, const char *before,
			const char *after, int *rolled_back, int *completed)
{
	for (int k = 1; k <= 400; k++) {
		size_t nck = checkpoint_count(f->s);
		char hist[96], hist_after[96], where[200];
		int r;

		history(hist, sizeof(hist), f->s);
		c_flag = 0;
		c_calls = 0;
		c_at = k;
		r = run_op_cancel(f, op);
		snprintf(where, sizeof(where), "%s cancelled at progress #%d",
			 op_name(op), k);
		if (r == DECREE_ECANCELLED) {
			assert_true(c_flag);
			assert_image(snapshot_now(f), before, where);
			if (leftovers(f))
				fail_msg("%s: temp files or txn.wal left",
					 where);
			history(hist_after, sizeof(hist_after), f->s);
			assert_string_equal(hist, hist_after);
			assert_int_equal(checkpoint_count(f->s), nck);
			(*rolled_back)++;
			continue;
		}
		if (r != 0)
			fail_msg("%s: failed with %d: %s", where, r,
				 decree_error_last());
		assert_image(snapshot_now(f), after, where);
		assert_int_equal(leftovers(f), 0);
		if (!c_flag)
			return; /* k past the last progress call: done */
		(*completed)++;
		assert_int_equal(run_op(f, inverse_of(op)), 0);
		assert_image(snapshot_now(f), before, "the inverse");
	}
	fail_msg("%s never ran to the end", op_name(op));
}

static void test_cancel(void **state)
{
	fixture *f = *state;
	int back = 0, done = 0;

	prepare(f, state_a, state_b);
	cancel_loop(f, OP_RESTORE, f->before, f->after, &back, &done);
	cancel_loop(f, OP_UNDO, f->after, f->before, &back, &done);
	cancel_loop(f, OP_REDO, f->before, f->after, &back, &done);
	assert_int_equal(run_op(f, OP_UNDO), 0);
	cancel_loop(f, OP_APPLY, f->before, f->after, &back, &done);
	printf("  %d cancels rolled back, %d came after the commit\n", back,
	       done);
	assert_true(back >= 4 * 3);
	assert_true(done >= 4);
}

/* Without faults: every shape change restores, undoes and redoes. */
static void test_restore_shape_changes(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *what;
		struct ent ckpt[3], now[3];
	} cases[] = {
		{ "a directory where the checkpoint has a file",
		  { { "x", K_FILE, "file\n" }, { NULL, K_FILE, NULL } },
		  { { "x/y", K_FILE, "below\n" }, { NULL, K_FILE, NULL } } },
		{ "a file where the checkpoint has a directory",
		  { { "d/sub/c", K_FILE, "deep\n" }, { NULL, K_FILE, NULL } },
		  { { "d/sub", K_FILE, "flat\n" }, { NULL, K_FILE, NULL } } },
		{ "a file where the checkpoint has a deep tree",
		  { { "a/b/c/d", K_FILE, "deep\n" }, { NULL, K_FILE, NULL } },
		  { { "a", K_FILE, "flat\n" }, { NULL, K_FILE, NULL } } },
		{ "a symlink where the checkpoint has a directory",
		  { { "l/f", K_FILE, "in a dir\n" }, { NULL, K_FILE, NULL } },
		  { { "l", K_LINK, "elsewhere" }, { NULL, K_FILE, NULL } } },
		{ "a directory where the checkpoint has a symlink",
		  { { "l", K_LINK, "target" }, { NULL, K_FILE, NULL } },
		  { { "l/f", K_FILE, "in a dir\n" }, { NULL, K_FILE, NULL } } },
	};
	int bad = 0;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		decree_restore_result res;
		int r;
		decree_store_free(f->s);
		f->s = NULL;
		rm_contents(f->store);
		prepare(f, cases[i].ckpt, cases[i].now);
		r = decree_checkpoint_restore(&res, f->s, ref_ckpt, NULL);
		if (r != 0) {
			fprintf(stderr, "restore with %s: %d (%s)\n",
				cases[i].what, r, decree_error_last());
			bad++;
			continue;
		}
		assert_image(snapshot_now(f), f->after, cases[i].what);
		assert_int_equal(decree_undo(&res, f->s, NULL), 0);
		assert_image(snapshot_now(f), f->before, cases[i].what);
		assert_int_equal(decree_redo(&res, f->s, NULL), 0);
		assert_image(snapshot_now(f), f->after, cases[i].what);
		assert_int_equal(leftovers(f), 0);
		/* the diff, applied in reverse, does the same */
		assert_int_equal(decree_undo(&res, f->s, NULL), 0);
		r = run_op(f, OP_APPLY);
		if (r != 0) {
			fprintf(stderr, "apply with %s: %d (%s)\n%s",
				cases[i].what, r, decree_error_last(),
				patch_text.ptr);
			bad++;
			continue;
		}
		assert_image(snapshot_now(f), f->after, cases[i].what);
		assert_int_equal(decree_undo(&res, f->s, NULL), 0);
		assert_image(snapshot_now(f), f->before, cases[i].what);
	}
	if (bad)
		fail_msg("%d of %zu shape changes do not restore (see above)",
			 bad, ARRAY_SIZE(cases));
}

/*
 * The scan records a ".decree" directory below the root (only the root's
 * is the store, scan.h); a checkpoint holding such a file must restore
 * like any other.
 */
static void test_restore_nested_meta_dir(void **state)
{
	fixture *f = *state;
	static const struct ent then[] = {
		{ "sub/.decree/x", K_FILE, "vendored project state\n" },
		{ "other.txt", K_FILE, "one\n" },
		{ NULL, K_FILE, NULL },
	};
	static const struct ent now[] = {
		{ "sub/.decree/x", K_FILE, "changed since\n" },
		{ "other.txt", K_FILE, "two\n" },
		{ NULL, K_FILE, NULL },
	};
	decree_snapshot *sn;
	decree_restore_result res;
	int r;

	prepare(f, then, now);
	assert_int_equal(decree_checkpoint_show(&sn, NULL, f->s, ref_ckpt), 0);
	assert_int_equal(decree_snapshot_count(sn), 2); /* it was recorded */
	decree_snapshot_free(sn);
	r = decree_checkpoint_restore(&res, f->s, ref_ckpt, NULL);
	if (r != 0)
		fail_msg(
			"a checkpoint holding 'sub/.decree/x' (recorded by the scan) does not "
			"restore: %d (%s)",
			r, decree_error_last());
	assert_image(snapshot_now(f), f->after, "restore");
}

/* A restore that needs nothing: no transaction, no error. */
static void test_restore_noop(void **state)
{
	fixture *f = *state;
	decree_restore_result res;
	bool created;

	build_state(f, state_a);
	assert_int_equal(open_store(&f->s, f), 0);
	assert_int_equal(
		decree_checkpoint_create(ref_ckpt, &created, f->s, NULL), 0);
	f->before = image(f->root);
	assert_int_equal(decree_checkpoint_restore(&res, f->s, ref_ckpt, NULL),
			 0);
	assert_int_equal(res.created + res.restored + res.deleted, 0);
	assert_image(snapshot_now(f), f->before, "no-op restore");
	assert_int_equal(leftovers(f), 0);
	assert_int_equal(decree_undo(&res, f->s, NULL), DECREE_ENOTFOUND);
}

/* --- allocation failures
 * ----------------------------------------------------------------- */

static int create_scenario(const fixture *f)
{
	decree_store *s = NULL;
	char id[DECREE_ID_HEXLEN + 1];
	int r = open_store(&s, f);
	if (r == 0)
		r = decree_checkpoint_create(id, NULL, s, NULL);
	decree_store_free(s);
	return r;
}

static void check_leaks(void)
{
#ifdef HAVE_LSAN
	if (__lsan_do_recoverable_leak_check())
		fail_msg("memory leaked (see the LeakSanitizer report above)");
#endif
}

static void test_alloc_failures_create(void **state)
{
	fixture *f = *state;
	static const struct ent small[] = {
		{ "one", K_FILE, "one" },	  { "d/two", K_EXEC, "two" },
		{ "d/e/three", K_FILE, "three" }, { "l", K_LINK, "one" },
		{ NULL, K_FILE, NULL },
	};
	unsigned long n, failures = 0, silent = 0;

	build_state(f, small);
	for (n = 1; n < 5000; n++) {
		unsigned long start;
		bool fired;
		int r;
		rm_contents(f->store);
		rmdir(f->store);
		start = alloc_count();
		alloc_fail_at(n);
		r = create_scenario(f);
		alloc_fail_at(0);
		fired = alloc_count() - start >= n;
		if (r == 0 && !fired)
			break;
		if (r == 0)
			continue; /* the failed allocation was handled (a cache,
				     say) */
		failures++;
		/* See test_odb's test_writer_error_other_thread: a failure in
		 * one hashing thread may surface without a message. */
		if (!decree_error_last()[0])
			silent++;
		if (leftovers(f))
			fail_msg("allocation %lu: temp files left behind", n);
		/* no checkpoint came out of the failed create */
		{
			decree_store *s;
			size_t nck;
			assert_int_equal(open_store(&s, f), 0);
			nck = checkpoint_count(s);
			decree_store_free(s);
			if (nck)
				fail_msg(
					"allocation %lu: a failed create left %zu checkpoint(s)",
					n, nck);
		}
		/* the store is usable afterwards */
		if (create_scenario(f) != 0)
			fail_msg(
				"allocation %lu: the store is unusable afterwards: %s",
				n, decree_error_last());
	}
	assert_true(n < 5000);
	printf("  checkpoint create: %lu allocations, %lu failed cleanly (%lu without a "
	       "message)\n",
	       n - 1, failures, silent);
	assert_true(failures > 20);
	check_leaks();
}

/* A fresh store holding checkpoint A, the tree in state B. */
static void reset_store(fixture *f)
{
	decree_store_free(f->s);
	f->s = NULL;
	rm_contents(f->store);
	prepare(f, state_a, state_b);
}

/* Fail every allocation of a restore (or of the apply doing the same) in
 * turn: clean failure, the tree as before, or applied and recoverable. */
static void alloc_failures(fixture *f, enum op op)
{
	unsigned long n, failures = 0, applied = 0, resets = 0;

	reset_store(f);
	for (n = 1; n < 20000; n++) {
		unsigned long start;
		bool fired;
		char msg[1200], where[1300], hist[96], hist_after[96];
		const char *img;
		int r;

		history(hist, sizeof(hist), f->s);
		decree_warning_clear();
		start = alloc_count();
		alloc_fail_at(n);
		r = run_op(f, op);
		alloc_fail_at(0);
		fired = alloc_count() - start >= n;
		snprintf(msg, sizeof(msg), "%s", decree_error_last());
		img = snapshot_now(f);
		if (r == 0) {
			assert_image(img, f->after, op_name(op));
			if (!fired)
				break;
			/* tolerated (a cache, say) or failed after COMMIT (a
			 * warning): the restore happened, and the next call
			 * finishes what is left */
			if (*decree_warning_last())
				applied++;
			assert_int_equal(decree_recover(NULL, f->s), 0);
			if (leftovers(f))
				fail_msg(
					"allocation %lu: temp files or txn.wal left after the next call",
					n);
			/* start over so that later runs allocate the same
			 * way */
			reset_store(f);
			resets++;
			continue;
		}
		if (!fired)
			fail_msg(
				"%s failed without an injected allocation failure: %s",
				op_name(op), msg);
		failures++;
		if (strstr(msg, "unusable"))
			fail_msg(
				"allocation %lu: the store handle went broken: %s",
				n, msg);
		snprintf(where, sizeof(where),
			 "%s with allocation %lu failing (%s)", op_name(op), n,
			 msg);
		assert_image(img, f->before, where);
		if (strstr(msg, "its log stays until the next"))
			assert_int_equal(decree_recover(NULL, f->s), 0);
		if (leftovers(f))
			fail_msg(
				"allocation %lu: temp files or txn.wal left behind",
				n);
		history(hist_after, sizeof(hist_after), f->s);
		if (strcmp(hist, hist_after))
			fail_msg(
				"%s: the undo/redo history changed from %s to %s",
				where, hist, hist_after);
	}
	assert_true(n < 20000);
	printf("  %s: %lu allocations, %lu failed (%lu after commit), %lu store resets\n",
	       op_name(op), n - 1, failures, applied, resets);
	check_leaks();
}

static void test_alloc_failures_restore(void **state)
{
	alloc_failures(*state, OP_RESTORE);
}

static void test_alloc_failures_apply(void **state)
{
	alloc_failures(*state, OP_APPLY);
}

/* --- content addressing and types
 * ----------------------------------------------------- */

/* Flip one byte in the payload of the first entry of the history file. */
static void damage_first_entry(decree_store *s)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	int fd;

	repo_file(path, s, "oplog");
	assert_int_equal(fs_read_path(path, &b), 0);
	assert_true(b.len > 24 + 4 + 30);
	b.ptr[24 + 4 + 20] ^= 0x01; /* inside entry 1 (time_ns) */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, b.ptr, b.len), 0);
	close(fd);
	buf_release(&b);
}

/*
 * A damaged undo entry blocks only itself: a restore still works (and
 * keeps it), the undo of that restore works, the undo that reaches the
 * damaged entry fails with nothing changed, and dropping the damaged
 * entries is the way past it.
 */
static void test_damaged_history_entry(void **state)
{
	fixture *f = *state;
	decree_restore_result res;
	size_t dropped, u, r;
	char *img_b;

	prepare(f, state_a, state_b);		    /* checkpoint A, tree B */
	assert_int_equal(run_op(f, OP_RESTORE), 0); /* entry 1: B -> A */
	assert_image(snapshot_now(f), f->after, "restore");
	assert_int_equal(run_op(f, OP_UNDO), 0); /* tree B, entry 1 redo */
	assert_int_equal(run_op(f, OP_REDO), 0); /* tree A, entry 1 undo */
	damage_first_entry(f->s);
	/* the undo that needs it: refused, nothing changed */
	img_b = image(f->root);
	assert_int_equal(decree_undo(&res, f->s, NULL), DECREE_ECORRUPT);
	assert_non_null(strstr(decree_error_last(), "oplog"));
	assert_non_null(strstr(decree_error_last(), "damaged"));
	assert_image(snapshot_now(f), img_b, "a refused undo");
	assert_int_equal(leftovers(f), 0);
	free(img_b);
	/* a restore needs no old entry: it works, and pushes its own */
	build_state(f, state_b);
	decree_warning_clear();
	assert_int_equal(run_op(f, OP_RESTORE), 0);
	assert_string_equal(decree_warning_last(), "");
	assert_image(snapshot_now(f), f->after, "restore over a damaged entry");
	assert_int_equal(run_op(f, OP_UNDO), 0);
	assert_image(snapshot_now(f), f->before, "undo of that restore");
	/* now the damaged one is on top again */
	assert_int_equal(decree_undo(&res, f->s, NULL), DECREE_ECORRUPT);
	assert_image(snapshot_now(f), f->before, "a refused undo");
	assert_int_equal(decree_history_drop_damaged(&dropped, f->s), 0);
	assert_int_equal(dropped, 1);
	hist_counts(&u, &r, f->s); /* strict load: no damage left */
	assert_int_equal(u, 0);
	assert_int_equal(r, 1); /* the undone restore */
	assert_int_equal(decree_undo(&res, f->s, NULL), DECREE_ENOTFOUND);
	assert_int_equal(decree_history_drop_damaged(&dropped, f->s), 0);
	assert_int_equal(dropped, 0);
}

/*
 * A project file whose bytes equal the tree object of one of its
 * directories: the checkpoint must still restore.
 */
static void test_file_with_tree_bytes(void **state)
{
	fixture *f = *state;
	snap sub = SNAP_INIT;
	buf bytes = BUF_INIT;
	char id[DECREE_ID_HEXLEN + 1], p[PATH_MAX * 2];
	decree_restore_result res;
	snap_entry *e;
	int fd, r;

	/* d/f with known content; the bytes of tree "d" by the documented
	 * format */
	e = snap_add(&sub, "f", 1);
	assert_non_null(e);
	e->mode = MODE_FILE;
	e->size = 8;
	sha256_buf(&e->id, "content\n", 8);
	buf_put(&bytes, "DTRE", 4);
	buf_put_u32(&bytes, 1);
	buf_put_u32(&bytes, 1);
	buf_put_u32(&bytes, MODE_FILE);
	buf_put_u64(&bytes, 8);
	buf_put(&bytes, e->id.b, SHA256_LEN);
	buf_put_u16(&bytes, 1);
	buf_put(&bytes, "f", 1);
	{
		oid t, b;
		assert_int_equal(tree_write(&t, NULL, &sub), 0);
		sha256_buf(&b, bytes.ptr, bytes.len);
		assert_memory_equal(t.b, b.b, SHA256_LEN); /* the format is as
							      documented */
	}
	make_parent(f->root, "d/f");
	snprintf(p, sizeof(p), "%s/d/f", f->root);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_int_equal(fs_write_all(fd, "content\n", 8), 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/fixture.bin", f->root);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_int_equal(fs_write_all(fd, bytes.ptr, bytes.len), 0);
	close(fd);
	snap_release(&sub);
	buf_release(&bytes);

	assert_int_equal(open_store(&f->s, f), 0);
	assert_int_equal(decree_checkpoint_create(id, NULL, f->s, NULL), 0);
	snprintf(p, sizeof(p), "%s/d/f", f->root);
	assert_int_equal(unlink(p), 0);
	r = decree_checkpoint_restore(&res, f->s, id, NULL);
	if (r != 0)
		fail_msg(
			"restoring a checkpoint that holds a file with the bytes of one of "
			"its directory trees fails: %d (%s)",
			r, decree_error_last());
	assert_int_equal(res.created, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_restore_noop, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_restore_shape_changes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_nested_meta_dir,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_faults, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_restore_faults_shapes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures_create,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures_apply,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures_restore,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_with_tree_bytes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_history_entry,
						setup, teardown),
	};

	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_alloc_*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
