/*
 * projects.c - the project roots a store serves and moving one
 * (decree/projects.h).
 *
 * A root's data in the store is the directory roots/<key>/ (its
 * "attachment", store/roots.h).  Listing reads every attachment without
 * the lock (records through their cache, like `checkpoint list`).  Moving
 * renames one attachment to the new root's key under the store lock; the
 * rename is the commit point (roots.c).  What a move carries: records,
 * record cache, undo/redo history, stat cache (its entries are relative
 * paths and are used only when inode, device, size, mtime and ctime all
 * still match, so after a move to another file system they miss and the
 * next checkpoint re-hashes, and within one file system they stay valid),
 * and an unfinished transaction's log when the old root is gone (its
 * paths are relative and its temp files moved with the tree).
 */
#include "util/common.h"
#include "decree/projects.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/suggest.h"
#include "store/oplog.h"
#include "store/record.h"
#include "store/repo.h"
#include "store/roots.h"
#include "ops/workspace.h"

#include <dirent.h>

typedef struct {
	decree_projects_info pub;
	char *root, *key;
	char last_at[40];
	char workspace[NAME_MAX + 1];
} entry;

struct decree_projects {
	entry *v;
	size_t n, cap;
};

void decree_projects_free(decree_projects *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		decree_free(l->v[i].root);
		decree_free(l->v[i].key);
	}
	decree_free(l->v);
	decree_free(l);
}

size_t decree_projects_count(const decree_projects *l)
{
	return l ? l->n : 0;
}

const decree_projects_info *decree_projects_at(const decree_projects *l,
					       size_t i)
{
	return l && i < l->n ? &l->v[i].pub : NULL;
}

/* Bytes of the regular files directly in `dir`. */
static uint64_t dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX + 300];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	return sum;
}

/* Fill e from the attachment `rootdir`: records are read through the
 * handle with its root directory pointed there for the call. */
static int describe(entry *e, decree_store *s, const char *rootdir)
{
	char path[PATH_MAX + 32], *saved = s->rootdir;
	buf root = BUF_INIT;
	struct stat st;
	record *v = NULL;
	size_t n = 0;
	oplog l = OPLOG_INIT;
	int r;

	if (roots_path(&root, rootdir) < 0)
		error_clear(); /* listed by key, root "" */
	if (!(e->root = buf_detach(&root, NULL)))
		return -1;
	e->pub.root = e->root;
	e->pub.exists = e->root[0] && stat(e->root, &st) == 0 &&
			S_ISDIR(st.st_mode);
	e->pub.is_current = !strcmp(rootdir, s->rootdir);
	/* (e->workspace stays "" for a project; pub.workspace: at the end) */
	(void)workspace_name_of(e->workspace, sizeof(e->workspace), s, e->root);
	s->rootdir = (char *)rootdir;
	r = record_load_all(&v, &n, s);
	e->pub.damaged = s->ndamaged;
	repo_damaged_clear(s);
	s->rootdir = saved;
	if (r < 0)
		return r;
	e->pub.checkpoints = n;
	if (n) {
		e->pub.last_ns = v[n - 1].info.created_ns;
		snprintf(e->last_at, sizeof(e->last_at), "%s",
			 v[n - 1].info.created_at);
	}
	record_free_all(v, n);
	snprintf(path, sizeof(path), "%s/oplog", rootdir);
	if (oplog_load_all(&l, path) == 0)
		e->pub.history = l.nundo + l.nredo;
	else
		error_clear();
	oplog_release(&l);
	snprintf(path, sizeof(path), "%s/checkpoints", rootdir);
	e->pub.bytes = dir_bytes(rootdir) + dir_bytes(path);
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const entry *x = a, *y = b;
	int c = strcmp(x->pub.root, y->pub.root);
	return c ? c : strcmp(x->pub.key, y->pub.key);
}

int decree_projects_list(decree_projects **out, decree_store *s)
{
	char dir[PATH_MAX];
	decree_projects *l;
	DIR *d;
	struct dirent *de;
	int r = 0;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(s);
	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	snprintf(dir, sizeof(dir), "%s/roots", s->dir);
	if (!(d = opendir(dir))) {
		if (errno == ENOENT) {
			*out = l;
			return 0;
		}
		decree_projects_free(l);
		return decree_error_os("cannot open '%s'", dir);
	}
	while ((de = readdir(d)) != NULL) {
		char rootdir[PATH_MAX + 300];
		struct stat st;
		entry *e;
		if (de->d_name[0] == '.')
			continue;
		snprintf(rootdir, sizeof(rootdir), "%s/%s", dir, de->d_name);
		if (lstat(rootdir, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if ((r = GROW(l->v, l->cap, l->n + 1)) < 0)
			break;
		e = &l->v[l->n++];
		memset(e, 0, sizeof(*e));
		e->pub.last_at = e->last_at;
		if (!(e->key = decree_strdup(de->d_name))) {
			r = -1;
			break;
		}
		e->pub.key = e->key;
		if ((r = describe(e, s, rootdir)) < 0)
			break;
	}
	closedir(d);
	if (r < 0) {
		decree_projects_free(l);
		return r;
	}
	/* entries point into themselves (last_at, workspace): fix up after
	 * the moves GROW and qsort make */
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_entry);
	for (size_t i = 0; i < l->n; i++) {
		l->v[i].pub.last_at = l->v[i].last_at;
		l->v[i].pub.workspace = l->v[i].workspace[0] ? l->v[i].workspace
							     : NULL;
	}
	*out = l;
	return 0;
}

/* --- move ------------------------------------------------------------------
 */

/* DECREE_ENOTFOUND for an unknown old root, naming the closest known
 * root that no longer exists (what a moved project leaves), else the
 * closest known root. */
static int unknown_root(decree_store *s, const char *old)
{
	decree_projects *l = NULL;
	const char *best = NULL;
	size_t bd = SIZE_MAX;
	bool best_gone = false;
	int r;

	if (decree_projects_list(&l, s) < 0)
		error_clear();
	for (size_t i = 0; i < decree_projects_count(l); i++) {
		const decree_projects_info *p = decree_projects_at(l, i);
		size_t dd;
		if (!p->root[0])
			continue;
		dd = suggest_distance(old, p->root);
		if (best && (best_gone && p->exists))
			continue;
		if (!best || (!p->exists && !best_gone) || dd < bd) {
			best = p->root;
			bd = dd;
			best_gone = !p->exists;
		}
	}
	if (best)
		r = decree_error_set(DECREE_ENOTFOUND,
				     "store '%s' has no checkpoints for '%s' "
				     "(did you mean '%s'?)",
				     s->dir, old, best);
	else
		r = decree_error_set(DECREE_ENOTFOUND,
				     "store '%s' has no checkpoints for '%s'",
				     s->dir, old);
	decree_projects_free(l);
	return r;
}

int decree_projects_move(decree_store *s, const char *old_root,
			 const char *new_root)
{
	char oldp[PATH_MAX], newp[PATH_MAX], from[PATH_MAX], to[PATH_MAX],
		path[PATH_MAX + 16];
	struct stat st;
	bool used;
	int r;

	DECREE_ASSERT_ARG(s);
	DECREE_ASSERT_ARG(old_root);
	DECREE_ASSERT_ARG(new_root);
	if ((r = repo_canonical(oldp, old_root)) < 0)
		return r;
	if (!realpath(new_root, newp) || stat(newp, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		return decree_error_set(DECREE_EINVALID,
					"cannot move checkpoints to '%s': not "
					"a directory",
					new_root);
	if (!strcmp(oldp, newp))
		return decree_error_set(DECREE_EINVALID,
					"'%s' and '%s' are the same root",
					old_root, new_root);
	if (!repo_exists(s))
		return unknown_root(s, oldp);
	roots_dir(from, s->dir, oldp);
	roots_dir(to, s->dir, newp);
	snprintf(path, sizeof(path), "%s/lock", s->dir);
	if ((r = lock_acquire(&s->lock, path, s->lock_timeout_ms)) < 0)
		return r;
	if (lstat(from, &st) < 0 || !S_ISDIR(st.st_mode)) {
		r = unknown_root(s, oldp);
		goto done;
	}
	snprintf(path, sizeof(path), "%s/txn.wal", from);
	if (lstat(path, &st) == 0 && stat(oldp, &st) == 0) {
		r = decree_error_set(DECREE_EINVALID,
				     "'%s' has an unfinished transaction; "
				     "recover it there first",
				     oldp);
		goto done;
	}
	if (lstat(to, &st) == 0) {
		if ((r = roots_in_use(&used, to)) < 0)
			goto done;
		if (used) {
			r = decree_error_set(
				DECREE_EEXISTS,
				"store '%s' has checkpoints or undo history "
				"for '%s' already",
				s->dir, newp);
			goto done;
		}
		if ((r = roots_remove_unused(to)) < 0)
			goto done;
	}
	if ((r = roots_move(s->dir, from, newp)) < 0)
		goto done;
	/* a handle following this very attachment (an in-tree store) or on
	 * the new root now reads it at its key */
	if (s->follow_to && !strcmp(s->follow_to, to)) {
		decree_free(s->rootdir);
		s->rootdir = s->follow_to;
		s->follow_to = NULL;
	}
done:
	lock_release(&s->lock);
	return r;
}
