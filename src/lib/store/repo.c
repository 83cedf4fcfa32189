/*
 * repo.c - opening a store for a project root (decree/store.h), and what
 * the handle keeps while it is open.
 *
 * Opening is read-only: nothing is created until a writing operation calls
 * repo_ensure().  So `decree checkpoint list` in a fresh directory leaves
 * no trace.  A store directory that exists but carries a marker of another
 * version is refused.
 *
 * The handle caches the flat snapshot of the last tree it read or that a
 * checkpoint created (repo_tree): trees are immutable, so the cache never
 * goes stale, and freeing the handle frees it.
 */
#include "util/common.h"
#include "store/repo.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/roots.h"
#include "store/tree.h"
#include "util/sha256.h"

#include <dirent.h>
#include <stdatomic.h>

/* A store inside the project keeps git out: `git add -A` must never stage
 * it (a .gitignore that ignores everything in its own directory, itself
 * included). */
#define STORE_GITIGNORE "# decree store: never commit it\n*\n"

/*
 * The canonical absolute form of `p` (PATH_MAX bytes into out): the part
 * that exists with its symlinks resolved (realpath), the rest with ".",
 * ".." and repeated slashes removed lexically -- what mkdir -p of the
 * canonical path creates.  So a store given as "link/st", "a/../st" or
 * not created yet is compared with the root by where it is or will be.
 */
int repo_canonical(char *out, const char *p)
{
	char tmp[PATH_MAX], rest[PATH_MAX];
	size_t n, rn = 0;

	if (p[0] == '/') {
		n = (size_t)snprintf(tmp, sizeof(tmp), "%s", p);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return decree_error_os("cannot get current directory");
		n = (size_t)snprintf(tmp, sizeof(tmp), "%s/%s", cwd, p);
	}
	if (n >= sizeof(tmp))
		return decree_error_set(DECREE_EINVALID, "path too long: '%s'",
					p);
	rest[0] = '\0';
	/* Peel components off the end until what is left exists. */
	while (!realpath(tmp, out)) {
		char *slash;
		if (errno != ENOENT && errno != ENOTDIR)
			return decree_error_os("cannot resolve '%s'", p);
		while (n > 1 && tmp[n - 1] == '/')
			tmp[--n] = '\0';
		if (!(slash = strrchr(tmp, '/')))
			return decree_error_os("cannot resolve '%s'", p);
		/* rest = last component + "/" + rest */
		{
			size_t cl = strlen(slash + 1);
			if (cl + 1 + rn >= sizeof(rest))
				return decree_error_set(DECREE_EINVALID,
							"path too long: '%s'",
							p);
			memmove(rest + cl + 1, rest, rn + 1);
			memcpy(rest, slash + 1, cl);
			rest[cl] = '/';
			rn += cl + 1;
		}
		n = (size_t)(slash - tmp);
		tmp[n ? n : 1] = '\0';
		n = n ? n : 1;
	}
	/* Append the missing components lexically. */
	n = strlen(out);
	for (char *c = rest, *e; *c; c = e + 1) {
		size_t cl;
		e = strchr(c, '/');
		cl = (size_t)(e - c);
		if (cl == 0 || (cl == 1 && c[0] == '.'))
			continue;
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			while (n > 1 && out[n - 1] != '/')
				n--;
			if (n > 1)
				n--;
			out[n] = '\0';
			continue;
		}
		if (n + 1 + cl >= PATH_MAX)
			return decree_error_set(DECREE_EINVALID,
						"path too long: '%s'", p);
		if (n > 1)
			out[n++] = '/';
		memcpy(out + n, c, cl);
		n += cl;
		out[n] = '\0';
	}
	return 0;
}

/*
 * The store is never part of the tree (DESIGN "Guarantees"): a store
 * that is the root or one of its ancestors would be scanned into itself
 * and deleted by a restore of the root, so it is refused; a store inside
 * the tree, at any depth, is remembered as store_rel, which every scan
 * skips and no transaction writes (repo_path_in_store).  `dir` is
 * canonical (canonical() above, or realpath once it exists).
 */
/* `path` is `dir` or below it (both canonical). */
static bool at_or_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1) /* "/" */
		return true;
	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* `root` is <dir>/workspaces/NAME or below it. */
static bool is_workspace_of(const char *root, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(root, dir, n) &&
	       !strncmp(root + n, "/workspaces/", 12) && root[n + 12] != '\0' &&
	       root[n + 12] != '.';
}

static int store_locate(decree_store *s, const char *dir)
{
	size_t rl = strlen(s->root);

	/* (a workspace of this store is a root inside it, beside the
	 * store's own files: ops/workspace.c) */
	if (at_or_below(s->root, dir) && !is_workspace_of(s->root, dir))
		return decree_error_set(
			DECREE_EINVALID,
			"cannot use '%s' as the store: it %s the project root '%s'",
			dir, strcmp(dir, s->root) ? "contains" : "is", s->root);
	decree_free(s->store_rel);
	s->store_rel = NULL;
	if (at_or_below(dir, s->root))
		return (s->store_rel =
				decree_strdup(dir + rl + (rl > 1 ? 1 : 0)))
			       ? 0
			       : -1;
	return 0;
}

bool repo_path_in_store(const decree_store *s, const char *path)
{
	size_t n;

	if (!s->store_rel)
		return false;
	n = strlen(s->store_rel);
	return !strncmp(path, s->store_rel, n) &&
	       (path[n] == '\0' || path[n] == '/');
}

/* The store `other_store` keeps, for `root`, a record that `rootdir`
 * has too: the two stores share history (one is a copy of the other),
 * rather than being two stores that happen to know the same root. */
static bool shares_a_record(const char *rootdir, const char *other_store,
			    const char *root)
{
	char path[PATH_MAX + 300], theirs[PATH_MAX];
	bool shared = false;
	struct stat st;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/checkpoints", rootdir);
	if (!(d = opendir(path)))
		return false;
	roots_dir(theirs, other_store, root);
	while (!shared && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/checkpoints/%s", theirs,
			 de->d_name);
		shared = lstat(path, &st) == 0;
	}
	closedir(d);
	return shared;
}

/*
 * A store inside the project follows it (docs/projects.md).  After `mv
 * proj proj2`, the store in proj2 still keys proj's checkpoints by
 * proj's path.  When this root has no attachment, look for the one it
 * came from: an attachment whose root no longer holds this store --
 * the root is gone (moved), or holds another store at the same place
 * that shares a checkpoint record with this one for that root (copied;
 * a store that merely also serves that root is not followed).  Exactly
 * one such attachment is followed: the handle reads it, and repo_lock()
 * re-attaches it to this root.  Several (the store
 * also served other roots that are gone): none is followed, `decree
 * projects move` decides.
 */
static int find_followed(decree_store *s)
{
	char path[PATH_MAX + 300];
	struct stat self, st;
	buf b = BUF_INIT;
	char *cand = NULL;
	size_t ncand = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/roots", s->dir);
	if (stat(s->dir, &self) < 0 || !(d = opendir(path)))
		return 0;
	while ((de = readdir(d)) != NULL) {
		char rootdir[PATH_MAX + 300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(rootdir, sizeof(rootdir), "%s/roots/%s", s->dir,
			 de->d_name);
		if (roots_path(&b, rootdir) < 0) {
			error_clear();
			continue;
		}
		if (stat(b.ptr, &st) == 0 && S_ISDIR(st.st_mode)) {
			/* still there: followed only if its own store at the
			 * same place is another one (a copy) */
			snprintf(path, sizeof(path), "%s/%s/%s", b.ptr,
				 s->store_rel, REPO_MARKER);
			if (stat(path, &st) < 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", b.ptr,
				 s->store_rel);
			if (stat(path, &st) < 0 ||
			    (st.st_dev == self.st_dev &&
			     st.st_ino == self.st_ino) ||
			    !shares_a_record(rootdir, path, b.ptr))
				continue;
		}
		if (++ncand == 1 && !(cand = decree_strdup(rootdir))) {
			closedir(d);
			buf_release(&b);
			return -1;
		}
	}
	closedir(d);
	buf_release(&b);
	if (ncand == 1) {
		s->follow_to = s->rootdir;
		s->rootdir = cand;
	} else {
		decree_free(cand);
	}
	return 0;
}

static int ensure_attachment(decree_store *s);

/* The re-attachment find_followed() prepared, under the store lock. */
static int follow(decree_store *s)
{
	struct stat st;
	int r;

	/* another process re-attached it (or gave this root its own
	 * attachment), or it vanished: this root's own key is the truth */
	if (stat(s->follow_to, &st) < 0 && stat(s->rootdir, &st) == 0 &&
	    (r = roots_move(s->dir, s->rootdir, s->root)) < 0)
		return r;
	decree_free(s->rootdir);
	s->rootdir = s->follow_to;
	s->follow_to = NULL;
	return ensure_attachment(s);
}

int decree_store_open(decree_store **out, const decree_store_options *o)
{
	decree_store *s;
	char real[PATH_MAX], path[PATH_MAX + 64];
	struct stat st;
	size_t n = 0;
	unsigned flags;
	bool missing = false;
	int r = -1;

	*out = NULL;
	if (!o ||
	    (o->version != 1 && o->version != DECREE_STORE_OPTIONS_VERSION) ||
	    !o->root)
		return decree_error_set(DECREE_EINVALID,
					"invalid store options");
	flags = o->version >= 2 ? o->flags : 0;
	if (!realpath(o->root, real)) {
		if (errno != ENOENT)
			return decree_error_os("cannot resolve '%s'", o->root);
		if (!(flags & DECREE_STORE_MISSING_ROOT))
			return decree_error_set(
				DECREE_EINVALID,
				"project root '%s' does not exist", o->root);
		if (!o->store_path) /* its store went with it */
			return decree_error_set(
				DECREE_ENOTFOUND,
				"project root '%s' does not exist", o->root);
		if ((r = repo_canonical(real, o->root)) < 0)
			return r;
		missing = true;
	}
	if (!missing && (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)))
		return decree_error_set(DECREE_EINVALID,
					"'%s' is not a directory", o->root);
	if (!(s = decree_calloc(1, sizeof(*s))))
		return -1;
	s->rootfd = -1;
	s->tree_lock_fd = -1;
	s->lock = (store_lock)STORE_LOCK_INIT;
	s->max_file_size = o->max_file_size;
	s->lock_timeout_ms = o->lock_timeout_ms;
	s->threads = o->threads;
	if (!(s->root = decree_strdup(real)))
		goto fail;
	if (!missing &&
	    (s->rootfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = decree_error_os("cannot open '%s'", real);
		goto fail;
	}
	if (!missing && s->rootfd < 3) { /* keep data fds off 0-2 */
		int fd = fcntl(s->rootfd, F_DUPFD_CLOEXEC, 3);
		close(s->rootfd);
		s->rootfd = fd;
	}
	snprintf(path, sizeof(path), "%s/.decree/store", real);
	{
		char dir[PATH_MAX];
		if ((r = repo_canonical(dir, o->store_path ? o->store_path
							   : path)) < 0 ||
		    (r = store_locate(s, dir)) < 0)
			goto fail;
		r = -1; /* what the allocation failures below return */
		if (!(s->dir = decree_strdup(dir)))
			goto fail;
	}
	roots_dir(path, s->dir, real);
	if (!(s->rootdir = decree_strdup(path)))
		goto fail;
	if (missing && (stat(s->rootdir, &st) < 0 || !S_ISDIR(st.st_mode))) {
		r = decree_error_set(DECREE_ENOTFOUND,
				     "project root '%s' does not exist and "
				     "store '%s' has no checkpoints for it",
				     real, s->dir);
		goto fail;
	}
	if (o->excludes) {
		while (o->excludes[n])
			n++;
		if (!(s->excludes = decree_calloc(n + 1, sizeof(char *))))
			goto fail;
		for (size_t i = 0; i < n; i++)
			if (!(s->excludes[i] = decree_strdup(o->excludes[i])))
				goto fail;
	}
	/* A store of an unknown version is refused up front. */
	snprintf(path, sizeof(path), "%s/%s", s->dir, REPO_MARKER);
	{
		buf m = BUF_INIT;
		int rr = fs_read_path(path, &m);
		if (rr == 0 && (m.len != strlen(REPO_MARKER_MAGIC) ||
				memcmp(m.ptr, REPO_MARKER_MAGIC, m.len))) {
			buf_release(&m);
			r = decree_error_set(
				DECREE_ECORRUPT,
				"'%s' is not a decree store of a known version "
				"(its marker '%s' is damaged or of another "
				"version)",
				s->dir, path);
			goto fail;
		}
		buf_release(&m);
		error_clear();
		if (rr == 0 && s->store_rel && stat(s->rootdir, &st) < 0 &&
		    find_followed(s) < 0)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	decree_store_free(s);
	return r;
}

/* --- the tree cache ---------------------------------------------------------
 */

/* The cached tree, shared with the snapshots that borrowed it
 * (repo_tree_borrow): one reference is the handle's, one each borrower's;
 * the last one dropped frees it.  Atomic: a borrower may drop its
 * reference on another thread than the handle's. */
struct tree_cache {
	snap s;
	oid id;
	atomic_uint refs;
};

void repo_tree_unref(struct tree_cache *tc)
{
	if (tc && atomic_fetch_sub(&tc->refs, 1) == 1) {
		snap_release(&tc->s);
		decree_free(tc);
	}
}

static void tree_cache_free(decree_store *s)
{
	repo_tree_unref(s->tree_cache);
	s->tree_cache = NULL;
}

void repo_tree_cache_put(decree_store *s, snap *sn, const oid *id)
{
	tree_cache_free(s);
	if (!(s->tree_cache = decree_calloc(1, sizeof(*s->tree_cache)))) {
		snap_release(sn); /* only a cache */
		return;
	}
	s->tree_cache->s = *sn;
	s->tree_cache->id = *id;
	atomic_init(&s->tree_cache->refs, 1);
	memset(sn, 0, sizeof(*sn));
}

int repo_tree_borrow(struct tree_cache **tc_out, const snap **out,
		     decree_store *s, const oid *id)
{
	int r;

	*tc_out = NULL;
	if ((r = repo_tree(out, s, id)) < 0)
		return r;
	atomic_fetch_add(&s->tree_cache->refs, 1);
	*tc_out = s->tree_cache;
	return 0;
}

const snap *repo_tree_cached(const decree_store *s, const oid *id)
{
	return s->tree_cache && !oid_cmp(&s->tree_cache->id, id)
		       ? &s->tree_cache->s
		       : NULL;
}

int repo_tree(const snap **out, decree_store *s, const oid *id)
{
	snap sn = SNAP_INIT;
	odb *db;
	int r;

	if ((*out = repo_tree_cached(s, id)) != NULL)
		return 0;
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = tree_read(&sn, db, id)) < 0) {
		snap_release(&sn);
		return r;
	}
	repo_tree_cache_put(s, &sn, id);
	if (!s->tree_cache)
		return decree_error_set(DECREE_ERROR, "out of memory");
	*out = &s->tree_cache->s;
	return 0;
}

void repo_damaged_clear(decree_store *s)
{
	for (size_t i = 0; i < s->ndamaged; i++) {
		decree_free(s->damaged[i].problem);
		decree_free(s->damaged[i].session);
	}
	decree_free(s->damaged);
	s->damaged = NULL;
	s->ndamaged = 0;
}

void repo_notices_clear(decree_store *s)
{
	for (size_t i = 0; i < s->nnotices; i++) {
		repo_notice *n = &s->notices[i];
		decree_free(n->message);
		decree_free(n->path);
		decree_free(n->rule_source);
		decree_free(n->rule);
		decree_free(n->session);
		decree_free(n->msg);
		decree_free(n->label);
		for (size_t k = 0; n->paths && k < n->pub.npaths; k++)
			decree_free(n->paths[k]);
		decree_free(n->paths);
	}
	decree_free(s->notices);
	s->notices = NULL;
	s->nnotices = 0;
}

/* *out = a copy of src (NULL stays NULL); false when out of memory. */
static bool dup_opt(char **out, const char *src)
{
	*out = src ? decree_strdup(src) : NULL;
	return !src || *out;
}

int repo_notice_add(decree_store *s, const decree_notice *src)
{
	repo_notice *n, *v;
	bool ok;

	v = decree_realloc(s->notices, (s->nnotices + 1) * sizeof(*v));
	if (!v)
		return -1;
	s->notices = v;
	n = &v[s->nnotices];
	memset(n, 0, sizeof(*n));
	n->pub = *src;
	n->pub.paths = NULL;
	n->pub.npaths = 0;
	ok = dup_opt(&n->message, src->message) &&
	     dup_opt(&n->path, src->path) &&
	     dup_opt(&n->rule_source, src->rule_source) &&
	     dup_opt(&n->rule, src->rule) &&
	     dup_opt(&n->session, src->session) && dup_opt(&n->msg, src->msg) &&
	     dup_opt(&n->label, src->label);
	if (ok && src->npaths) {
		if (!(n->paths = decree_calloc(src->npaths, sizeof(char *))))
			ok = false;
		for (size_t i = 0; ok && i < src->npaths; i++) {
			if (!(n->paths[i] = decree_strdup(src->paths[i])))
				ok = false;
			else
				n->pub.npaths = i + 1;
		}
	}
	s->nnotices++; /* kept even when incomplete: clear frees it */
	n->pub.message = n->message;
	n->pub.path = n->path;
	n->pub.rule_source = n->rule_source;
	n->pub.rule = n->rule;
	n->pub.session = n->session;
	n->pub.msg = n->msg;
	n->pub.label = n->label;
	n->pub.paths = (const char *const *)n->paths;
	return ok ? 0 : -1;
}

void decree_store_set_progress(decree_store *s, decree_progress_fn fn,
			       void *payload)
{
	if (!s)
		return;
	s->progress = fn;
	s->progress_payload = payload;
}

void decree_store_free(decree_store *s)
{
	if (!s)
		return;
	while (s->lock.depth > 0)
		repo_unlock(s);
	tree_cache_free(s);
	repo_damaged_clear(s);
	repo_notices_clear(s);
	odb_free(s->db);
	if (s->rootfd >= 0)
		close(s->rootfd);
	if (s->excludes)
		for (size_t i = 0; s->excludes[i]; i++)
			decree_free(s->excludes[i]);
	decree_free(s->excludes);
	decree_free(s->root);
	decree_free(s->dir);
	decree_free(s->rootdir);
	decree_free(s->follow_to);
	decree_free(s->store_rel);
	decree_free(s);
}

const char *decree_store_root(const decree_store *s)
{
	return s->root;
}

const char *decree_store_path(const decree_store *s)
{
	return s->dir;
}

bool decree_store_root_exists(const decree_store *s)
{
	return s->rootfd >= 0;
}

int repo_need_root(const decree_store *s)
{
	if (s->rootfd >= 0)
		return 0;
	return decree_error_set(DECREE_ENOTFOUND,
				"project root '%s' does not exist", s->root);
}

void repo_file(char *out, const decree_store *s, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", s->rootdir, name);
}

bool repo_exists(decree_store *s)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", s->dir, REPO_MARKER);
	return stat(path, &st) == 0;
}

/* This root's directory roots/<key>/ with checkpoints/ and ROOT. */
static int ensure_attachment(decree_store *s)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "%s/checkpoints", s->rootdir);
	if (stat(path, &st) < 0) {
		if ((r = fs_mkdirs(path, 0755)) < 0)
			return r;
		snprintf(path, sizeof(path), "%s/ROOT", s->rootdir);
		if ((r = fs_write_atomic(path, s->root, strlen(s->root),
					 0644)) < 0)
			return r;
		/* ROOT's write synced <key>/ (and so checkpoints/ in it);
		 * the new directories' own entries need their parents synced */
		snprintf(path, sizeof(path), "%s/roots", s->dir);
		if ((r = fs_fsync_dir_path(path)) < 0)
			return r;
		if ((r = fs_fsync_dir_path(s->dir)) < 0)
			return r;
	}
	return 0;
}

int repo_sweep_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char file[PATH_MAX + 300];
		if (de->d_name[0] != '.' || !strstr(de->d_name, ".tmp-"))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		if (unlink(file) < 0 && errno != ENOENT && r == 0)
			r = decree_error_os("cannot remove the leftover temp "
					    "file '%s'",
					    file);
	}
	closedir(d);
	return r;
}

/* Write `path` atomically unless it exists; another process writing it
 * at the same moment (it may even sweep our temp file) is fine once the
 * file is there. */
static int write_once(const char *path, const char *text)
{
	struct stat st;
	int r = fs_write_atomic(path, text, strlen(text), 0644);

	if (r < 0 && lstat(path, &st) == 0) {
		error_clear();
		r = 0;
	}
	return r;
}

/* The store's directory and marker (and .gitignore inside the project). */
static int ensure_store(decree_store *s)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "%s/%s", s->dir, REPO_MARKER);
	if (stat(path, &st) < 0) {
		if ((r = fs_mkdirs(s->dir, 0755)) < 0)
			return r;
		/* several processes may create the store at once (no lock
		 * can be taken before its directory exists): whoever
		 * renames first made it, and the others' failure is no
		 * failure.  The temp file of a creation killed while it
		 * wrote the marker is swept under the lock (repo_lock). */
		if ((r = write_once(path, REPO_MARKER_MAGIC)) < 0)
			return r;
	}
	/* now that it exists, locate it by what it is (a symlink on the way
	 * may have appeared since the handle was opened) */
	if (!realpath(s->dir, path))
		return decree_error_os("cannot resolve '%s'", s->dir);
	if ((r = store_locate(s, path)) < 0)
		return r;
	if (s->store_rel) {
		snprintf(path, sizeof(path), "%s/.gitignore", s->dir);
		if (lstat(path, &st) < 0 &&
		    (r = write_once(path, STORE_GITIGNORE)) < 0)
			return r;
	}
	return 0;
}

int repo_ensure(decree_store *s)
{
	int r = ensure_store(s);
	return r == 0 && s->rootfd >= 0 ? ensure_attachment(s) : r;
}

int repo_odb(odb **out, decree_store *s, bool refresh)
{
	char path[PATH_MAX];
	int r;

	if (!s->db) {
		snprintf(path, sizeof(path), "%s/packs", s->dir);
		if ((r = odb_open(&s->db, path)) < 0)
			return r;
	} else if (refresh && (r = odb_refresh(s->db)) < 0) {
		return r;
	}
	*out = s->db;
	return 0;
}

int repo_lock(decree_store *s)
{
	return repo_lock_flags(s, 0);
}

int repo_lock_flags(decree_store *s, unsigned flags)
{
	bool attach = s->rootfd >= 0 && !(flags & REPO_LOCK_NO_ATTACH);
	char path[PATH_MAX];
	int r;

	if (s->broken)
		return decree_error_set(
			DECREE_ERROR,
			"store handle is unusable after a failed recovery; reopen it");
	if ((r = ensure_store(s)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/lock", s->dir);
	if ((r = lock_acquire(&s->lock, path, s->lock_timeout_ms)) < 0)
		return r;
	/* what a creation killed while it wrote the marker or the
	 * .gitignore left (ensure_store): nobody else sweeps at this level
	 * while we hold the lock */
	if (s->lock.depth == 1)
		(void)repo_sweep_temps(s->dir);
	if (s->lock.depth > 1) {
		/* the outer lock may have been taken without attaching */
		if (attach && !s->follow_to && (r = ensure_attachment(s)) < 0) {
			lock_release(&s->lock);
			return r;
		}
		return 0;
	}
	/* under the store lock: follow a moved in-tree store, tidy after a
	 * move interrupted past its commit point (roots.c), attach this
	 * root (after the lock: gc may remove an attachment that holds
	 * nothing, under the lock) */
	if ((s->follow_to && (r = follow(s)) < 0) ||
	    (r = roots_finish(s->rootdir)) < 0 ||
	    (attach && (r = ensure_attachment(s)) < 0) ||
	    (s->rootfd >= 0 &&
	     (r = lock_tree(&s->tree_lock_fd, s->rootfd, s->root,
			    s->lock_timeout_ms)) < 0)) {
		lock_release(&s->lock);
		return r;
	}
	return 0;
}

void repo_unlock(decree_store *s)
{
	if (s->lock.depth == 1)
		unlock_tree(&s->tree_lock_fd);
	lock_release(&s->lock);
}
