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
#include "store/tree.h"

static char *absolute(const char *p)
{
	char cwd[PATH_MAX];
	size_t n;
	char *out;

	if (p[0] == '/')
		return decree_strdup(p);
	if (!getcwd(cwd, sizeof(cwd))) {
		decree_error_os("cannot get current directory");
		return NULL;
	}
	n = strlen(cwd) + strlen(p) + 2;
	if ((out = decree_malloc(n)))
		snprintf(out, n, "%s/%s", cwd, p);
	return out;
}

/*
 * A store inside the tree (other than .decree/store, which the scan always
 * skips) must never be scanned into itself: remember its path below the
 * root.  Called at open (if it exists) and after creating it.
 */
static int store_locate(decree_store *s)
{
	char sreal[PATH_MAX];
	size_t rl = strlen(s->root);

	if (s->store_rel || !realpath(s->dir, sreal))
		return 0;
	if (strncmp(sreal, s->root, rl) || sreal[rl] != '/')
		return 0;
	return (s->store_rel = decree_strdup(sreal + rl + 1)) ? 0 : -1;
}

int decree_store_open(decree_store **out, const decree_store_options *o)
{
	decree_store *s;
	char real[PATH_MAX], hex[SHA256_HEXLEN + 1], path[PATH_MAX + 64];
	struct stat st;
	oid key;
	size_t n = 0;
	int r = -1;

	*out = NULL;
	if (!o || o->version != DECREE_STORE_OPTIONS_VERSION || !o->root)
		return decree_error_set(DECREE_EINVALID,
					"invalid store options");
	if (!realpath(o->root, real)) {
		if (errno == ENOENT)
			return decree_error_set(
				DECREE_EINVALID,
				"project root '%s' does not exist", o->root);
		return decree_error_os("cannot resolve '%s'", o->root);
	}
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
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
	if ((s->rootfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = decree_error_os("cannot open '%s'", real);
		goto fail;
	}
	if (s->rootfd < 3) { /* keep data fds off 0-2 */
		int fd = fcntl(s->rootfd, F_DUPFD_CLOEXEC, 3);
		close(s->rootfd);
		s->rootfd = fd;
	}
	if (o->store_path) {
		s->dir = absolute(o->store_path);
	} else {
		snprintf(path, sizeof(path), "%s/.decree/store", real);
		s->dir = decree_strdup(path);
	}
	if (!s->dir)
		goto fail;
	if (store_locate(s) < 0)
		goto fail;
	sha256_buf(&key, real, strlen(real));
	oid_to_hex(hex, &key);
	snprintf(path, sizeof(path), "%s/roots/%.32s", s->dir, hex);
	if (!(s->rootdir = decree_strdup(path)))
		goto fail;
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
	}
	*out = s;
	return 0;
fail:
	decree_store_free(s);
	return r;
}

/* --- the tree cache ---------------------------------------------------------
 */

struct tree_cache {
	snap s;
	oid id;
};

static void tree_cache_free(decree_store *s)
{
	if (!s->tree_cache)
		return;
	snap_release(&s->tree_cache->s);
	decree_free(s->tree_cache);
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
	memset(sn, 0, sizeof(*sn));
}

int repo_tree(const snap **out, decree_store *s, const oid *id)
{
	snap sn = SNAP_INIT;
	odb *db;
	int r;

	if (s->tree_cache && !oid_cmp(&s->tree_cache->id, id)) {
		*out = &s->tree_cache->s;
		return 0;
	}
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

void decree_store_free(decree_store *s)
{
	if (!s)
		return;
	while (s->lock.depth > 0)
		repo_unlock(s);
	tree_cache_free(s);
	repo_damaged_clear(s);
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

int repo_ensure(decree_store *s)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "%s/%s", s->dir, REPO_MARKER);
	if (stat(path, &st) < 0) {
		if ((r = fs_mkdirs(s->dir, 0755)) < 0)
			return r;
		if ((r = fs_write_atomic(path, REPO_MARKER_MAGIC,
					 strlen(REPO_MARKER_MAGIC), 0644)) < 0)
			return r;
	}
	if ((r = store_locate(s)) < 0)
		return r;
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
	char path[PATH_MAX];
	int r;

	if (s->broken)
		return decree_error_set(
			DECREE_ERROR,
			"store handle is unusable after a failed recovery; reopen it");
	if ((r = repo_ensure(s)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/lock", s->dir);
	if ((r = lock_acquire(&s->lock, path, s->lock_timeout_ms)) < 0)
		return r;
	if (s->lock.depth == 1 &&
	    (r = lock_tree(&s->tree_lock_fd, s->rootfd, s->root,
			   s->lock_timeout_ms)) < 0) {
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
