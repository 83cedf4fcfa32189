/*
 * workspace.c - decree/workspace.h: private copies of a project's scanned
 * tree under the store, their diff, apply (three-way merge) and discard.
 *
 * Layout (docs/workspaces.md):
 *   <store>/workspaces/NAME/                 the workspace (a root of its own)
 *   <store>/workspaces/NAME/.decree/config.yml   store: ../.. and the
 *                                                 project's scan rules
 *   <store>/workspaces/NAME/.decree/workspace.json   what it is (meta)
 *   <store>/workspaces/.tmp-NAME-XXXX/       a create or undo in progress
 *   <store>/workspaces/.discarded/ID.json    meta of a discarded one
 *
 * Create: under the store lock, every entry of the base tree is made in
 * the temporary directory -- a regular file by FICLONE from the project's
 * file when the stat cache vouches that it still holds the base's bytes
 * (and its stat data did not move while it was cloned), else by
 * copy_file_range or read/write, else from the store -- then syncfs, one
 * rename into place and a directory fsync: the workspace appears whole or
 * not at all.  The workspace's own root in the store then gets the base
 * checkpoint (so gc keeps its objects and `decree rollback` works inside)
 * and a stat cache of the copies, so the first diff hashes nothing.
 *
 * Apply: under the project's lock, the workspace and the project are
 * scanned with the base's rules, merged per path (merge/treemerge.h) and
 * handed to the apply engine (ops/apply.h) as final states: one
 * transaction on the project's undo history, with apply's --exec
 * rollback.
 *
 * Discard: the workspace is captured as a checkpoint of its root, its
 * meta moved to .discarded/, its directory renamed away and then removed;
 * the project's history gets an OPLOG_WORKSPACE entry whose one change
 * names the workspace (path = NAME, old_id = the capture's tree), which
 * workspace_replay() undoes (re-create from the capture) and redoes.
 */
#define _GNU_SOURCE
#include "util/common.h"
#include "decree/workspace.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strset.h"
#include "util/trace.h"
#include "ops/apply.h"
#include "ops/checkpoint.h"
#include "ops/diff.h"
#include "ops/workspace.h"
#include "merge/treemerge.h"
#include "scan/scan.h"
#include "scan/statcache.h"
#include "store/record.h"
#include "store/repo.h"
#include "store/tree.h"
#include "txn/txn.h"

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>

#define WS_DIR	     "workspaces"
#define WS_META	     ".decree/workspace.json"
#define WS_CONFIG    ".decree/config.yml"
#define WS_DISCARDED ".discarded"
#define WS_SESSION   "workspace"

/* --- names and places -------------------------------------------------------
 */

static int check_name(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > 64 || name[0] == '.' || name[0] == '-')
		goto bad;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			goto bad;
	}
	return 0;
bad:
	return decree_error_set(DECREE_EINVALID,
				"invalid workspace name '%s': use 1 to 64 "
				"letters, digits, '-', '_' or '.', not first "
				"'.' or '-'",
				name);
}

static void ws_dir(char out[PATH_MAX], const decree_store *s)
{
	snprintf(out, PATH_MAX, "%s/" WS_DIR, s->dir);
}

static void ws_path(char out[PATH_MAX], const decree_store *s, const char *name)
{
	snprintf(out, PATH_MAX, "%s/" WS_DIR "/%s", s->dir, name);
}

/* What follows "<workspaces dir>/" in `root`, or NULL when root is not
 * below the workspaces directory of s's store. */
static const char *below_ws_dir(const decree_store *s, const char *root)
{
	char dir[PATH_MAX];
	size_t n;

	ws_dir(dir, s);
	n = strlen(dir);
	return !strncmp(root, dir, n) && root[n] == '/' ? root + n + 1 : NULL;
}

bool workspace_root_is_one(const decree_store *s)
{
	return below_ws_dir(s, s->root) != NULL;
}

bool workspace_name_of(char *name, size_t size, const decree_store *s,
		       const char *root)
{
	const char *rest = below_ws_dir(s, root);

	if (!rest || !*rest || strchr(rest, '/'))
		return false;
	snprintf(name, size, "%s", rest);
	return true;
}

static int need_project(const decree_store *s)
{
	int r = repo_need_root(s);

	if (r == 0 && workspace_root_is_one(s))
		r = decree_error_set(DECREE_EINVALID,
				     "'%s' is a workspace; run this in its "
				     "project",
				     s->root);
	return r;
}

/* Remove what an interrupted create or undo left (the lock is held, so
 * no other one is running). */
static void sweep_temps(const decree_store *s)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	ws_dir(dir, s);
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX + 300];
		if (strncmp(de->d_name, ".tmp-", 5) &&
		    strncmp(de->d_name, ".trash-", 7))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (fs_remove_path(path) < 0)
			error_clear(); /* tried again next time */
	}
	closedir(d);
}

/* Is there anything for sweep_temps to remove? */
static bool has_temps(const decree_store *s)
{
	char dir[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	ws_dir(dir, s);
	if (!(d = opendir(dir)))
		return false;
	while (!found && (de = readdir(d)) != NULL)
		found = !strncmp(de->d_name, ".tmp-", 5) ||
			!strncmp(de->d_name, ".trash-", 7);
	closedir(d);
	return found;
}

/* Take a workspace out of sight at once (renamed to .trash-NAME-*; the
 * lock is held), then delete it.  When the rename cannot be made durable
 * it is renamed back: a failure leaves the workspace in place. */
static int unmake(const decree_store *s, const char *name, const char *path)
{
	char dir[PATH_MAX], trash[PATH_MAX + 100];
	unsigned char rnd[6];
	int r;

	ws_dir(dir, s);
	if ((r = fs_random(rnd, 6)) < 0)
		return r;
	snprintf(trash, sizeof(trash), "%s/.trash-%s-%02x%02x%02x%02x%02x%02x",
		 dir, name, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	if (rename(path, trash) < 0)
		return decree_error_os("cannot remove '%s'", path);
	if ((r = fs_fsync_dir_path(dir)) < 0) {
		/* not durably gone: failed, so back in place */
		if (rename(trash, path) < 0)
			error_clear(); /* gone then; the error stands */
		return r;
	}
	if (fs_remove_path(trash) < 0)
		error_clear(); /* out of sight; the next call sweeps it */
	return 0;
}

/* --- meta ---------------------------------------------------------------- */

typedef struct {
	decree_workspace_info info;
	oid base_tree;
	char **excludes; /* NULL-terminated, or NULL */
	uint64_t max_file_size;
} ws_meta;

void decree_workspace_info_release(decree_workspace_info *w)
{
	if (!w)
		return;
	decree_free(w->name);
	decree_free(w->path);
	decree_free(w->project);
	memset(w, 0, sizeof(*w));
}

static void meta_release(ws_meta *m)
{
	decree_workspace_info_release(&m->info);
	for (size_t i = 0; m->excludes && m->excludes[i]; i++)
		decree_free(m->excludes[i]);
	decree_free(m->excludes);
	memset(m, 0, sizeof(*m));
}

static int meta_encode(buf *b, const ws_meta *m)
{
	const decree_workspace_info *w = &m->info;
	const decree_workspace_copy *c = &w->copy;
	int e = 0;

	e |= buf_puts(b, "{\"version\":1,");
	e |= json_kv_str(b, "name", w->name, false);
	e |= json_kv_path(b, "project", w->project, true);
	e |= json_kv_str(b, "base", w->base, true);
	e |= json_kv_str(b, "base_tree", w->base_tree, true);
	e |= buf_printf(b, ",\"created_ns\":%lld,", (long long)w->created_ns);
	e |= json_kv_str(b, "mode", w->mode, false);
	e |= buf_printf(
		b,
		",\"reflink_verified\":%s,\"cloned\":%llu,"
		"\"copied\":%llu,\"from_store\":%llu,\"links\":%llu,"
		"\"dirs\":%llu,\"bytes\":%llu,\"max_file_size\":%llu,"
		"\"excludes\":[",
		w->reflink_verified ? "true" : "false",
		(unsigned long long)c->cloned, (unsigned long long)c->copied,
		(unsigned long long)c->from_store, (unsigned long long)c->links,
		(unsigned long long)c->dirs, (unsigned long long)c->bytes,
		(unsigned long long)m->max_file_size);
	for (size_t i = 0; m->excludes && m->excludes[i]; i++) {
		if (i)
			e |= buf_putc(b, ',');
		e |= json_str(b, m->excludes[i]);
	}
	e |= buf_puts(b, "]}\n");
	return e < 0 ? DECREE_ERROR : 0;
}

static uint64_t jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static int jstr(char **out, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return DECREE_ECORRUPT;
	return (*out = decree_strdup(json_string_value(v))) ? 0 : DECREE_ERROR;
}

static int jhex(char out[DECREE_ID_HEXLEN + 1], json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	if (strlen(s) != DECREE_ID_HEXLEN)
		return DECREE_ECORRUPT;
	memcpy(out, s, DECREE_ID_HEXLEN + 1);
	return 0;
}

/* Read the meta file at `file` (`dir`: the workspace's path). */
static int meta_load_file(ws_meta *m, const char *file, const char *dir)
{
	json_error_t je;
	json_t *o, *ex;
	buf b = BUF_INIT;
	const char *mode;
	int r;

	memset(m, 0, sizeof(*m));
	if ((r = fs_read_path(file, &b)) < 0)
		return r;
	o = json_loadb(b.ptr ? b.ptr : "", b.len, 0, &je);
	buf_release(&b);
	if (!o || json_integer_value(json_object_get(o, "version")) != 1)
		goto bad;
	if (jstr(&m->info.name, o, "name") < 0 ||
	    jstr(&m->info.project, o, "project") < 0 ||
	    jhex(m->info.base, o, "base") < 0 ||
	    jhex(m->info.base_tree, o, "base_tree") < 0 ||
	    oid_from_hex(&m->base_tree, m->info.base_tree) < 0)
		goto bad;
	if (!(m->info.path = decree_strdup(dir)))
		goto oom;
	m->info.created_ns = (int64_t)jnum(o, "created_ns");
	mode = json_string_value(json_object_get(o, "mode"));
	snprintf(m->info.mode, sizeof(m->info.mode), "%s",
		 mode ? mode : "copy");
	m->info.reflink_verified =
		json_is_true(json_object_get(o, "reflink_verified"));
	m->info.copy.cloned = jnum(o, "cloned");
	m->info.copy.copied = jnum(o, "copied");
	m->info.copy.from_store = jnum(o, "from_store");
	m->info.copy.links = jnum(o, "links");
	m->info.copy.dirs = jnum(o, "dirs");
	m->info.copy.bytes = jnum(o, "bytes");
	m->max_file_size = jnum(o, "max_file_size");
	ex = json_object_get(o, "excludes");
	if (json_is_array(ex) && json_array_size(ex)) {
		size_t n = json_array_size(ex);
		if (!(m->excludes = decree_calloc(n + 1, sizeof(char *))))
			goto oom;
		for (size_t i = 0; i < n; i++) {
			const char *p =
				json_string_value(json_array_get(ex, i));
			if (!p)
				goto bad;
			if (!(m->excludes[i] = decree_strdup(p)))
				goto oom;
		}
	}
	json_decref(o);
	return 0;
oom:
	json_decref(o);
	meta_release(m);
	return DECREE_ERROR;
bad:
	json_decref(o);
	meta_release(m);
	return decree_error_set(DECREE_ECORRUPT,
				"workspace description '%s' is damaged", file);
}

/* The workspace NAME of this project. */
static int meta_load(ws_meta *m, decree_store *s, const char *name)
{
	char dir[PATH_MAX], file[PATH_MAX + 32];
	struct stat st;
	int r;

	if ((r = check_name(name)) < 0)
		return r;
	ws_path(dir, s, name);
	snprintf(file, sizeof(file), "%s/" WS_META, dir);
	if (lstat(dir, &st) < 0 || lstat(file, &st) < 0)
		return decree_error_set(DECREE_ENOTFOUND,
					"no workspace '%s' in this store",
					name);
	if ((r = meta_load_file(m, file, dir)) < 0)
		return r;
	if (strcmp(m->info.project, s->root)) {
		r = decree_error_set(DECREE_ENOTFOUND,
				     "workspace '%s' belongs to '%s', not to "
				     "this project",
				     name, m->info.project);
		meta_release(m);
	}
	return r;
}

static void meta_view(worktree_view *v, const ws_meta *m)
{
	memset(v, 0, sizeof(*v)); /* (the config's excludes: the store's) */
	v->excludes = (const char *const *)m->excludes;
	v->max_file_size = m->max_file_size;
}

/* A handle on the workspace's root in the same store, with the
 * project's scan settings. */
static int ws_open(decree_store **out, const decree_store *s, const char *dir)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;

	o.root = dir;
	o.store_path = s->dir;
	o.max_file_size = s->max_file_size;
	o.excludes = (const char *const *)s->excludes;
	o.lock_timeout_ms = s->lock_timeout_ms;
	o.threads = s->threads;
	return decree_store_open(out, &o);
}

/* --- copying a tree ---------------------------------------------------------
 */

typedef struct {
	decree_store *s;  /* the project: source of files and objects */
	int dstfd;	  /* the directory being filled */
	snap *tree;	  /* entries to make; stat data filled as made */
	statcache *cache; /* the project's, to vouch for its files */
	odb *db;
	pthread_mutex_t mu; /* db, the error, first_clone */
	atomic_size_t next;
	atomic_bool reflink; /* still worth trying */
	bool share_ok;	     /* false: --no-reflink, never share extents */
	atomic_bool failed;
	atomic_ullong cloned, copied, from_store, links, bytes;
	atomic_ullong unshared; /* non-empty files copied, not cloned */
	char *first_clone;	/* a cloned non-empty file, to verify */
	int err;
	char errmsg[1024];
} copier;

/* Parent directory fds, kept across the entries of one batch. */
typedef struct {
	char dir[PATH_MAX];
	int fd;
} parent_fd;

static int parent_of(int *dfd, const char **base, int rootfd, parent_fd *pc,
		     const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dl = slash ? (size_t)(slash - path) : 0;
	int r;

	*base = slash ? slash + 1 : path;
	if (pc->fd >= 0 && strlen(pc->dir) == dl &&
	    !strncmp(pc->dir, path, dl)) {
		*dfd = pc->fd;
		return 0;
	}
	if (pc->fd >= 0 && pc->fd != rootfd)
		close(pc->fd);
	pc->fd = -1;
	if (!dl) {
		pc->dir[0] = '\0';
		pc->fd = rootfd;
	} else {
		const char *b;
		if ((r = fs_open_parent(&pc->fd, &b, rootfd, path, false)) < 0)
			return r;
		snprintf(pc->dir, sizeof(pc->dir), "%.*s", (int)dl, path);
	}
	*dfd = pc->fd;
	return 0;
}

static void parent_close(parent_fd *pc, int rootfd)
{
	if (pc->fd >= 0 && pc->fd != rootfd)
		close(pc->fd);
	pc->fd = -1;
}

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_ino == b->st_ino &&
	       a->st_dev == b->st_dev &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Does the stat cache vouch that the file with stat `st` holds e's bytes? */
/* Could the file with stat `st` hold e's bytes (a regular file of e's
 * mode and size)? */
static bool may_hold(const snap_entry *e, const struct stat *st)
{
	return S_ISREG(st->st_mode) && mode_of_file(st->st_mode) == e->mode &&
	       (uint64_t)st->st_size == e->size;
}

static bool vouched(copier *c, const snap_entry *e, const struct stat *st)
{
	snap_entry probe;
	oid id;

	if (!c->cache || !may_hold(e, st))
		return false;
	memset(&probe, 0, sizeof(probe));
	probe.path = e->path;
	probe.mode = e->mode;
	probe.size = e->size;
	snap_entry_set_stat(&probe, st);
	return statcache_lookup(c->cache, e->path, &probe, &id) &&
	       !oid_cmp(&id, &e->id);
}

/* Bytes of src into dst by copy_file_range (when `cfr`: on XFS or btrfs
 * the kernel may share the extents, as a clone), else read/write. */
static int copy_bytes(int dst, int src, uint64_t size, const char *path,
		      bool cfr)
{
	uint64_t done = 0;
	char tmp[65536];

	while (cfr && done < size) {
		ssize_t n = copy_file_range(src, NULL, dst, NULL,
					    (size_t)(size - done), 0);
		if (n > 0) {
			done += (uint64_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL &&
		    errno != EOPNOTSUPP)
			return decree_error_os("cannot copy '%s'", path);
		break; /* fall back to read/write from where it is */
	}
	while (done < size) {
		ssize_t n = pread(src, tmp, sizeof(tmp), (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return decree_error_os("cannot read '%s'", path);
		if (n == 0)
			break;
		if (pwrite(dst, tmp, (size_t)n, (off_t)done) != n)
			return decree_error_os("cannot write '%s'", path);
		done += (uint64_t)n;
	}
	return done == size ? 0
			    : decree_error_set(DECREE_ECONFLICT,
					       "'%s' changed while it was "
					       "copied",
					       path);
}

/* Make the regular file e at (ddfd, base): from the project's file when
 * it still holds e's bytes, else from the store.  Fills e's stat data. */
static int make_file(copier *c, snap_entry *e, int sdfd, const char *base,
		     int ddfd)
{
	struct stat before, after;
	bool from_tree = false, cloned = false, verify = false;
	int src = -1, dst, r = 0;

	if (sdfd >= 0 &&
	    (src = openat(sdfd, base,
			  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >=
		    0 &&
	    fstat(src, &before) == 0) {
		if (!snap_entry_is_stored(e))
			from_tree = S_ISREG(before.st_mode);
		else if (vouched(c, e, &before))
			from_tree = true;
		else /* a file the cache cannot vouch for yet (written in the
		      * second it was last saved): taken, then hashed */
			from_tree = verify = may_hold(e, &before);
	}
	dst = openat(ddfd, base, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (dst < 0) {
		r = decree_error_os("cannot create '%s' in the workspace",
				    e->path);
		goto done;
	}
	if (from_tree) {
		if (atomic_load(&c->reflink) && before.st_size > 0) {
			if (ioctl(dst, FICLONE, src) == 0)
				cloned = true;
			else if (errno == EOPNOTSUPP || errno == EXDEV ||
				 errno == EINVAL || errno == ENOTTY ||
				 errno == ENOSYS || errno == EPERM)
				atomic_store(&c->reflink, false);
		}
		if (!cloned &&
		    (r = copy_bytes(dst, src, (uint64_t)before.st_size, e->path,
				    c->share_ok)) < 0) {
			if (r != DECREE_ECONFLICT)
				goto done;
			error_clear();
			from_tree = false;
		}
		/* the bytes taken are e's only if nothing moved meanwhile */
		if (from_tree &&
		    (fstat(src, &after) < 0 || !same_stat(&before, &after)))
			from_tree = false;
		if (from_tree && verify) {
			oid got;
			if (lseek(dst, 0, SEEK_SET) < 0 ||
			    sha256_fd(&got, NULL, dst, e->path) < 0) {
				r = decree_error_os("cannot read '%s' in the "
						    "workspace",
						    e->path);
				goto done;
			}
			from_tree = !oid_cmp(&got, &e->id);
		}
		if (!from_tree) {
			cloned = false;
			/* (the copy moved the offset: the store's bytes go
			 * at 0, not after a hole) */
			if (ftruncate(dst, 0) < 0 ||
			    lseek(dst, 0, SEEK_SET) < 0) {
				r = decree_error_os("cannot truncate '%s'",
						    e->path);
				goto done;
			}
		}
	}
	if (!from_tree) {
		if (!snap_entry_is_stored(e))
			goto stat; /* too large: never stored; left empty */
		pthread_mutex_lock(&c->mu);
		r = odb_read_to_fd(c->db, &e->id, dst, e->path);
		pthread_mutex_unlock(&c->mu);
		if (r < 0)
			goto done;
		atomic_fetch_add(&c->from_store, 1);
		if (e->size > 0)
			atomic_fetch_add(&c->unshared, 1);
	} else if (cloned) {
		atomic_fetch_add(&c->cloned, 1);
		if (!c->first_clone) {
			pthread_mutex_lock(&c->mu);
			if (!c->first_clone)
				c->first_clone = decree_strdup(e->path);
			pthread_mutex_unlock(&c->mu);
		}
	} else {
		atomic_fetch_add(&c->copied, 1);
		if (before.st_size > 0)
			atomic_fetch_add(&c->unshared, 1);
	}
	if (fchmod(dst, e->mode & MODE_PERM) < 0) {
		r = decree_error_os("cannot set the mode of '%s'", e->path);
		goto done;
	}
	if (from_tree) {
		/* as cp -a: build tools see the project's times */
		struct timespec ts[2] = { before.st_atim, before.st_mtim };
		(void)futimens(dst, ts);
	}
stat:
	if (fstat(dst, &after) < 0) {
		r = decree_error_os("cannot stat '%s'", e->path);
		goto done;
	}
	atomic_fetch_add(&c->bytes, (unsigned long long)after.st_size);
	snap_entry_set_stat(e, &after);
done:
	if (src >= 0)
		close(src);
	if (dst >= 0 && close(dst) < 0 && r == 0)
		r = decree_error_os("cannot write '%s'", e->path);
	return r;
}

static int make_link(copier *c, snap_entry *e, int ddfd, const char *base)
{
	buf target = BUF_INIT;
	int type, r;

	pthread_mutex_lock(&c->mu);
	r = odb_read(&target, &type, c->db, &e->id);
	pthread_mutex_unlock(&c->mu);
	if (r == 0 && buf_putc(&target, '\0') < 0)
		r = DECREE_ERROR;
	if (r == 0 && symlinkat(target.ptr, ddfd, base) < 0)
		r = decree_error_os("cannot create link '%s' in the workspace",
				    e->path);
	buf_release(&target);
	if (r == 0)
		atomic_fetch_add(&c->links, 1);
	return r;
}

#define COPY_BATCH 64

static void *copy_worker(void *arg)
{
	copier *c = arg;
	parent_fd sp = { "", -1 }, dp = { "", -1 };
	int r = 0;

	while (r == 0 && !atomic_load(&c->failed)) {
		size_t at = atomic_fetch_add(&c->next, COPY_BATCH);
		if (at >= c->tree->n)
			break;
		for (size_t i = at;
		     r == 0 && i < at + COPY_BATCH && i < c->tree->n; i++) {
			snap_entry *e = &c->tree->v[i];
			const char *base;
			int sdfd = -1, ddfd;
			if ((r = parent_of(&ddfd, &base, c->dstfd, &dp,
					   e->path)) < 0)
				break;
			if (e->mode == MODE_LINK) {
				r = make_link(c, e, ddfd, base);
				continue;
			}
			if (parent_of(&sdfd, &base, c->s->rootfd, &sp,
				      e->path) < 0) {
				error_clear(); /* not in the project now */
				sdfd = -1;
			}
			r = make_file(c, e, sdfd, base, ddfd);
		}
	}
	parent_close(&sp, c->s->rootfd);
	parent_close(&dp, c->dstfd);
	if (r < 0) {
		pthread_mutex_lock(&c->mu);
		if (!c->err) {
			c->err = r;
			snprintf(c->errmsg, sizeof(c->errmsg), "%s",
				 error_last());
		}
		atomic_store(&c->failed, true);
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

/* The directories the entries need, parents first. */
static int make_dirs(int dstfd, const snap *t, uint64_t *ndirs)
{
	strset made = STRSET_INIT;
	int r = 0;

	for (size_t i = 0; r == 0 && i < t->n; i++) {
		const char *p = t->v[i].path;
		for (const char *sl = strchr(p, '/'); sl;
		     sl = strchr(sl + 1, '/')) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%.*s", (int)(sl - p), p);
			if (strset_has(&made, dir))
				continue;
			if (mkdirat(dstfd, dir, 0755) < 0 && errno != EEXIST) {
				r = decree_error_os("cannot create '%s' in the "
						    "workspace",
						    dir);
				break;
			}
			if ((r = strset_put(&made, dir, 1)) < 0)
				break;
			(*ndirs)++;
		}
	}
	strset_release(&made);
	return r;
}

/* Does the clone at `path` below dstfd share its extents?  (FIEMAP) */
static bool clone_shared(int dstfd, const char *path)
{
	size_t len = sizeof(struct fiemap) + 8 * sizeof(struct fiemap_extent);
	struct fiemap *fm = decree_calloc(1, len);
	bool shared = false;
	int fd = fm ? fs_open_beneath(dstfd, path, O_RDONLY) : -1;

	if (fd < 0) {
		error_clear();
		decree_free(fm);
		return false;
	}
	fm->fm_length = FIEMAP_MAX_OFFSET;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = 8;
	if (ioctl(fd, FS_IOC_FIEMAP, fm) == 0)
		for (unsigned i = 0; i < fm->fm_mapped_extents && i < 8; i++)
			shared |= (fm->fm_extents[i].fe_flags &
				   FIEMAP_EXTENT_SHARED) != 0;
	close(fd);
	decree_free(fm);
	return shared;
}

/* Make every entry of `t` below dstfd (an empty directory). */
static int copy_tree(decree_workspace_info *info, decree_store *s, int dstfd,
		     snap *t, bool reflink)
{
	copier c;
	statcache *cache = NULL;
	char path[PATH_MAX];
	pthread_t tids[16];
	unsigned nt, started = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int r;

	memset(&c, 0, sizeof(c));
	if ((r = make_dirs(dstfd, t, &info->copy.dirs)) < 0)
		return r;
	repo_file(path, s, "statcache");
	if ((r = statcache_load(&cache, path)) < 0)
		return r;
	c.s = s;
	c.dstfd = dstfd;
	c.tree = t;
	c.cache = cache;
	if ((r = repo_odb(&c.db, s, false)) < 0) {
		statcache_free(cache);
		return r;
	}
	pthread_mutex_init(&c.mu, NULL);
	atomic_init(&c.next, 0);
	atomic_init(&c.reflink, reflink);
	c.share_ok = reflink;
	atomic_init(&c.failed, false);
	nt = s->threads ? s->threads : ncpu > 0 ? (unsigned)ncpu : 1;
	if (nt > ARRAY_SIZE(tids) + 1)
		nt = ARRAY_SIZE(tids) + 1;
	while (started + 1 < nt && (started + 1) * COPY_BATCH < t->n &&
	       pthread_create(&tids[started], NULL, copy_worker, &c) == 0)
		started++;
	copy_worker(&c);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	pthread_mutex_destroy(&c.mu);
	statcache_free(cache);
	if (c.err) {
		decree_free(c.first_clone);
		return decree_error_set(c.err, "%s", c.errmsg);
	}
	info->copy.cloned = c.cloned;
	info->copy.copied = c.copied;
	info->copy.from_store = c.from_store;
	info->copy.links = c.links;
	info->copy.bytes = c.bytes;
	info->reflink_verified = c.first_clone &&
				 clone_shared(dstfd, c.first_clone);
	decree_free(c.first_clone);
	snprintf(info->mode, sizeof(info->mode), "%s",
		 !c.cloned				 ? "copy"
		 : c.unshared || !info->reflink_verified ? "mixed"
							 : "reflink");
	return 0;
}

/* --- the workspace's .decree/ ----------------------------------------------
 */

static int write_config(int dirfd, const ws_meta *m)
{
	buf b = BUF_INIT;
	int e = 0, r;

	e |= buf_printf(&b,
			"# decree workspace '%s' (docs/workspaces.md): its "
			"store is the project's\nstore: ../..\n",
			m->info.name);
	if (m->max_file_size || m->excludes)
		e |= buf_puts(&b, "checkpoint:\n");
	if (m->max_file_size)
		e |= buf_printf(&b, "  max_file_size: %llu\n",
				(unsigned long long)m->max_file_size);
	if (m->excludes) {
		e |= buf_puts(&b, "  exclude: [");
		for (size_t i = 0; m->excludes[i]; i++) {
			if (i)
				e |= buf_puts(&b, ", ");
			e |= json_str(&b, m->excludes[i]);
		}
		e |= buf_puts(&b, "]\n");
	}
	r = e < 0 ? DECREE_ERROR
		  : fs_write_atomic_at(dirfd, "config.yml", b.ptr, b.len, 0644);
	buf_release(&b);
	return r;
}

static int write_meta_files(int wsfd, const ws_meta *m)
{
	buf b = BUF_INIT;
	int dfd, r;

	if (mkdirat(wsfd, ".decree", 0755) < 0 && errno != EEXIST)
		return decree_error_os("cannot create the workspace's .decree");
	if ((r = fs_open_dir(&dfd, wsfd, ".decree")) < 0)
		return r;
	if ((r = meta_encode(&b, m)) == 0 && (r = write_config(dfd, m)) == 0)
		r = fs_write_atomic_at(dfd, "workspace.json", b.ptr, b.len,
				       0644);
	buf_release(&b);
	close(dfd);
	return r;
}

/* The scan rules the project's handle adds (for the workspace's config). */
static int meta_take_rules(ws_meta *m, const decree_store *s,
			   const record *base)
{
	worktree_view v;
	const char **ex = NULL;
	size_t n = 0;
	int r;

	checkpoint_view(&v, base);
	if ((r = worktree_excludes(&ex, s, &v)) < 0)
		return r;
	while (ex && ex[n])
		n++;
	if (n && !(m->excludes = decree_calloc(n + 1, sizeof(char *)))) {
		decree_free(ex);
		return DECREE_ERROR;
	}
	for (size_t i = 0; i < n; i++)
		if (!(m->excludes[i] = decree_strdup(ex[i]))) {
			decree_free(ex);
			return DECREE_ERROR;
		}
	decree_free(ex);
	m->max_file_size = base->max_file_size ? base->max_file_size
					       : s->max_file_size;
	return 0;
}

/*
 * Build the workspace `m` describes from tree `t` in a temporary
 * directory and rename it into place at m->info.path.  The caller holds
 * the project's lock.
 */
static int build(ws_meta *m, decree_store *s, snap *t, bool reflink)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 100];
	unsigned char rnd[6];
	int fd = -1, r;

	ws_dir(dir, s);
	if ((r = fs_mkdirs(dir, 0755)) < 0 || (r = fs_random(rnd, 6)) < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%02x%02x%02x%02x%02x%02x", dir,
		 m->info.name, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	if (mkdir(tmp, 0755) < 0)
		return decree_error_os("cannot create '%s'", tmp);
	if ((fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = decree_error_os("cannot open '%s'", tmp);
		goto fail;
	}
	if ((r = copy_tree(&m->info, s, fd, t, reflink)) < 0 ||
	    (r = write_meta_files(fd, m)) < 0)
		goto fail;
	trace_phase("workspace: copied");
	/* every file's bytes durable before the name appears */
	r = syncfs(fd);
	trace_phase("workspace: synced");
	if (r < 0) {
		r = decree_error_os("cannot sync the workspace");
		goto fail;
	}
	if (rename(tmp, m->info.path) < 0) {
		r = errno == EEXIST || errno == ENOTEMPTY
			    ? decree_error_set(DECREE_EEXISTS,
					       "workspace '%s' already exists",
					       m->info.name)
			    : decree_error_os("cannot rename '%s'", tmp);
		goto fail;
	}
	close(fd);
	if ((r = fs_fsync_dir_path(dir)) < 0) {
		/* not durable: made, but reported as failed; take it away */
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		if (unmake(s, m->info.name, m->info.path) < 0)
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
				 "; workspace '%s' stays at '%s' (%s)",
				 m->info.name, m->info.path, error_last());
		decree_error_set(r, "%s", msg);
	}
	return r;
fail:
	if (fd >= 0)
		close(fd);
	{
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		if (fs_remove_path(tmp) < 0)
			error_clear(); /* the next call sweeps it */
		decree_error_set(r, "%s", msg);
	}
	return r;
}

/*
 * The workspace's own root: its base as a checkpoint (gc keeps the
 * objects, `decree rollback` inside it works) and the stat data of the
 * copies.  Idempotent; also run by later calls in case a create was
 * killed before it.  t: the tree with the copies' stat data (NULL: none).
 */
static int attach_root(decree_store *s, const ws_meta *m, const snap *t,
		       const char *label)
{
	record_meta rm = RECORD_META_INIT;
	decree_store *sw = NULL;
	record *v = NULL;
	size_t n = 0;
	char id[DECREE_ID_HEXLEN + 1], path[PATH_MAX];
	const snap *base;
	bool have = false;
	int r;

	if ((r = ws_open(&sw, s, m->info.path)) < 0)
		return r;
	if ((r = txn_lock(NULL, NULL, sw)) < 0)
		goto done;
	if ((r = record_load_all(&v, &n, sw)) < 0)
		goto unlock;
	for (size_t i = 0; i < n; i++)
		have |= !oid_cmp(&v[i].tree, &m->base_tree) &&
			!strcmp(v[i].session, WS_SESSION);
	if (!have) {
		rm.session = WS_SESSION;
		rm.label = label;
		rm.excludes = (const char *const *)m->excludes;
		rm.max_file_size = m->max_file_size;
		if ((r = repo_tree(&base, sw, &m->base_tree)) < 0 ||
		    (r = record_save(id, sw, &m->base_tree, base, &rm)) < 0)
			goto unlock;
	}
	if (t) {
		repo_file(path, sw, "statcache");
		if (statcache_save(path, t) < 0)
			error_clear(); /* only a cache */
	}
unlock:
	repo_unlock(sw);
done:
	record_free_all(v, n);
	decree_store_free(sw);
	return r;
}

static int info_copy(decree_workspace_info *out,
		     const decree_workspace_info *in)
{
	*out = *in;
	out->name = decree_strdup(in->name);
	out->path = decree_strdup(in->path);
	out->project = decree_strdup(in->project);
	if (!out->name || !out->path || !out->project) {
		decree_workspace_info_release(out);
		return DECREE_ERROR;
	}
	return 0;
}

static int free_name(char out[80], const decree_store *s)
{
	for (unsigned i = 1; i < 100000; i++) {
		char path[PATH_MAX];
		struct stat st;
		snprintf(out, 80, "ws-%u", i);
		ws_path(path, s, out);
		if (lstat(path, &st) < 0)
			return 0;
	}
	return decree_error_set(DECREE_EEXISTS, "no free workspace name");
}

int decree_workspace_create(decree_workspace_info *out, decree_store *s,
			    const decree_workspace_create_options *o)
{
	decree_workspace_create_options def =
		DECREE_WORKSPACE_CREATE_OPTIONS_INIT;
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created made;
	ws_meta m;
	record base;
	snap t = SNAP_INIT;
	const snap *bt;
	char name[80], label[120], path[PATH_MAX];
	struct stat st;
	bool locked = false;
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(s);
	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	memset(&base, 0, sizeof(base));
	if (!o)
		o = &def;
	if (o->version != DECREE_WORKSPACE_CREATE_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid workspace options");
	if ((r = need_project(s)) < 0 ||
	    (o->name && (r = check_name(o->name)) < 0))
		return r;
	if (o->name) {
		ws_path(path, s, o->name);
		if (lstat(path, &st) == 0)
			return decree_error_set(DECREE_EEXISTS,
						"workspace '%s' already exists",
						o->name);
	}
	if (o->name)
		snprintf(name, sizeof(name), "%s", o->name);
	else if ((r = free_name(name, s)) < 0)
		return r;
	/* the base: a checkpoint of the project now, or REF */
	if (o->from) {
		if ((r = record_resolve(&base, s, o->from)) < 0)
			return r;
	} else {
		snprintf(label, sizeof(label), "workspace %s", name);
		co.session = WS_SESSION;
		co.label = label;
		if ((r = decree_checkpoint_create_ext(&made, s, &co)) < 0 ||
		    (r = record_resolve(&base, s, made.id)) < 0)
			return r;
	}
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		goto done;
	locked = true;
	sweep_temps(s);
	ws_path(path, s, name);
	if (lstat(path, &st) == 0) {
		r = decree_error_set(DECREE_EEXISTS,
				     "workspace '%s' already exists", name);
		goto done;
	}
	if (!(m.info.name = decree_strdup(name)) ||
	    !(m.info.path = decree_strdup(path)) ||
	    !(m.info.project = decree_strdup(s->root))) {
		r = DECREE_ERROR;
		goto done;
	}
	snprintf(m.info.base, sizeof(m.info.base), "%s", base.info.id);
	oid_to_hex(m.info.base_tree, &base.tree);
	m.base_tree = base.tree;
	m.info.created_ns = fs_now_ns();
	if ((r = meta_take_rules(&m, s, &base)) < 0 ||
	    (r = repo_tree(&bt, s, &base.tree)) < 0 ||
	    (r = snap_copy(&t, bt)) < 0 ||
	    (r = build(&m, s, &t, !o->no_reflink)) < 0)
		goto done;
	repo_unlock(s);
	locked = false;
	snprintf(label, sizeof(label), "base of workspace %s", name);
	if ((r = attach_root(s, &m, &t, label)) < 0 ||
	    (r = info_copy(out, &m.info)) < 0) {
		/* a failed create makes nothing */
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		if (txn_lock(NULL, NULL, s) < 0 ||
		    (locked = true, unmake(s, name, path)) < 0)
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
				 "; workspace '%s' stays at '%s' (%s)", name,
				 path, error_last());
		decree_error_set(r, "%s", msg);
		goto done;
	}
done:
	if (locked)
		repo_unlock(s);
	snap_release(&t);
	record_release(&base);
	meta_release(&m);
	return r;
}

/* --- list, get -------------------------------------------------------------
 */

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const decree_workspace_info *)a)->name,
		      ((const decree_workspace_info *)b)->name);
}

int decree_workspace_list(decree_workspace_info **out, size_t *n_out,
			  decree_store *s)
{
	decree_workspace_info *v = NULL;
	size_t n = 0, cap = 0;
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int r = 0;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(n_out);
	*out = NULL;
	*n_out = 0;
	/* what an interrupted create, discard or undo left: removed
	 * under the lock (no other one is running then) */
	if (has_temps(s)) {
		if (repo_lock_flags(s, REPO_LOCK_NO_ATTACH) == 0) {
			sweep_temps(s);
			repo_unlock(s);
		}
		error_clear(); /* only tidying */
	}
	ws_dir(dir, s);
	if (!(d = opendir(dir)))
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot open '%s'", dir);
	while ((de = readdir(d)) != NULL) {
		ws_meta m;
		if (de->d_name[0] == '.' || check_name(de->d_name) < 0) {
			error_clear();
			continue;
		}
		if (meta_load(&m, s, de->d_name) < 0) {
			error_clear(); /* another project's, or damaged */
			continue;
		}
		if (GROW(v, cap, n + 1) < 0) {
			meta_release(&m);
			r = DECREE_ERROR;
			break;
		}
		v[n++] = m.info;
		memset(&m.info, 0, sizeof(m.info));
		meta_release(&m);
	}
	closedir(d);
	if (r < 0) {
		decree_workspace_list_free(v, n);
		return r;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_info);
	*out = v;
	*n_out = n;
	return 0;
}

void decree_workspace_list_free(decree_workspace_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		decree_workspace_info_release(&v[i]);
	decree_free(v);
}

int decree_workspace_get(decree_workspace_info *out, decree_store *s,
			 const char *name)
{
	ws_meta m;
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(name);
	memset(out, 0, sizeof(*out));
	if ((r = meta_load(&m, s, name)) < 0)
		return r;
	*out = m.info;
	memset(&m.info, 0, sizeof(m.info));
	meta_release(&m);
	return 0;
}

/* --- diff ------------------------------------------------------------------
 */

int decree_workspace_diff(decree_store *s, const char *name,
			  const decree_diff_options *o, decree_diff_cb cb,
			  void *payload)
{
	decree_store *sw = NULL;
	worktree_view view;
	ws_meta m;
	int r;

	DECREE_ASSERT_ARG(name);
	DECREE_ASSERT_ARG(cb);
	if ((r = meta_load(&m, s, name)) < 0)
		return r;
	meta_view(&view, &m);
	if ((r = ws_open(&sw, s, m.info.path)) == 0)
		r = diff_tree_worktree(sw, &m.base_tree, &view, o, cb, payload);
	decree_store_free(sw);
	meta_release(&m);
	return r;
}

/* --- discard, and its undo --------------------------------------------------
 */

static void discarded_meta(char out[PATH_MAX + 64], const decree_store *s,
			   const char *entry_id)
{
	char dir[PATH_MAX];
	ws_dir(dir, s);
	snprintf(out, PATH_MAX + 64, "%s/" WS_DISCARDED "/%s.json", dir,
		 entry_id);
}

/* Push `e` (a new operation: the redo history is cleared) or move the
 * top entry with id `moved` from one stack to the other (undo: from the
 * undo stack), then save; idempotent (oplog_push, oplog_move). */
static int history_update(decree_store *s, const oplog_entry *e,
			  const char *moved, bool undo)
{
	char path[PATH_MAX];

	repo_file(path, s, "oplog");
	return oplog_update(path, e, undo, moved);
}

/* Remove workspace `m` (the caller holds the lock, and its history
 * already says so): renamed away at once, then deleted. */
static int remove_ws(decree_store *s, const ws_meta *m)
{
	return unmake(s, m->info.name, m->info.path);
}

/* Capture workspace m (a checkpoint of its root, label "discarded"):
 * the tree id goes to *tree, the checkpoint's id to id_out. */
static int capture_ws(oid *tree, char id_out[DECREE_ID_HEXLEN + 1],
		      decree_store *s, const ws_meta *m)
{
	decree_checkpoint_create_options co =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	decree_checkpoint_created made;
	decree_store *sw = NULL;
	int r;

	co.session = WS_SESSION;
	co.label = "discarded";
	co.excludes = (const char *const *)m->excludes;
	co.max_file_size = m->max_file_size;
	if ((r = ws_open(&sw, s, m->info.path)) == 0 &&
	    (r = decree_checkpoint_create_ext(&made, sw, &co)) == 0) {
		r = oid_from_hex(tree, made.tree);
		if (id_out)
			snprintf(id_out, DECREE_ID_HEXLEN + 1, "%s", made.id);
	}
	decree_store_free(sw);
	return r;
}

/* Discard m, captured as `tree`: `moved` NULL pushes a new entry, else
 * (redo) moves that entry back to the undo history.  Lock held. */
static int discard_locked(decree_store *s, const ws_meta *m, const oid *tree,
			  const char *moved)
{
	char id[17], file[PATH_MAX + 64], dir[PATH_MAX];
	unsigned char rnd[8];
	txn_change ch;
	oplog_entry e;
	buf b = BUF_INIT;
	char what[200];
	int r;

	if (moved) {
		snprintf(id, sizeof(id), "%s", moved);
	} else {
		if ((r = fs_random(rnd, 8)) < 0)
			return r;
		for (int i = 0; i < 8; i++)
			snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	}
	/* the description, for the undo that makes it again */
	ws_dir(dir, s);
	snprintf(file, sizeof(file), "%s/" WS_DISCARDED, dir);
	if ((r = fs_mkdirs(file, 0755)) < 0)
		return r;
	discarded_meta(file, s, id);
	if ((r = meta_encode(&b, m)) == 0)
		r = fs_write_atomic(file, b.ptr, b.len, 0644);
	buf_release(&b);
	if (r < 0)
		return r;
	/* the history first: a crash before the removal leaves the
	 * workspace, which the undo then finds in place */
	if (moved) {
		r = history_update(s, NULL, moved, false);
	} else {
		memset(&ch, 0, sizeof(ch));
		memset(&e, 0, sizeof(e));
		ch.path = m->info.name;
		ch.has_old = true;
		ch.old_mode = MODE_DIR;
		ch.old_id = *tree;
		snprintf(what, sizeof(what), "discard workspace %s",
			 m->info.name);
		e.kind = OPLOG_WORKSPACE;
		memcpy(e.id, id, 17);
		e.time_ns = fs_now_ns();
		e.session = (char *)WS_SESSION;
		e.what = what;
		e.changes = &ch;
		e.n = 1;
		r = history_update(s, &e, NULL, true);
	}
	return r < 0 ? r : remove_ws(s, m);
}

int decree_workspace_discard_ext(char id_out[DECREE_ID_HEXLEN + 1],
				 decree_store *s, const char *name,
				 unsigned flags)
{
	bool applied = (flags & DECREE_WORKSPACE_DISCARD_APPLIED) != 0;
	ws_meta m;
	oid tree;
	int r;

	DECREE_ASSERT_ARG(name);
	if (id_out)
		id_out[0] = '\0';
	if (flags & ~(unsigned)DECREE_WORKSPACE_DISCARD_APPLIED)
		return decree_error_set(DECREE_EINVALID,
					"invalid workspace discard flags");
	if ((r = need_project(s)) < 0 || (r = meta_load(&m, s, name)) < 0)
		return r;
	if ((applied || (r = capture_ws(&tree, id_out, s, &m)) == 0) &&
	    (r = txn_lock(NULL, NULL, s)) == 0) {
		r = applied ? remove_ws(s, &m)
			    : discard_locked(s, &m, &tree, NULL);
		repo_unlock(s);
	}
	meta_release(&m);
	return r;
}

int decree_workspace_discard(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
			     const char *name)
{
	return decree_workspace_discard_ext(id_out, s, name, 0);
}

/* Say what the undo or redo did (the tree did not change). */
static void replay_notice(decree_store *s, const char *name, const char *path,
			  bool made)
{
	decree_notice no;
	char msg[PATH_MAX + 200];

	memset(&no, 0, sizeof(no));
	no.kind = DECREE_NOTICE_WORKSPACE;
	no.label = name;
	no.path = path;
	no.count = made;
	if (made)
		snprintf(msg, sizeof(msg), "made workspace %s again at %s",
			 name, path);
	else
		snprintf(msg, sizeof(msg), "discarded workspace %s again",
			 name);
	no.message = msg;
	if (repo_notice_add(s, &no) < 0)
		error_clear(); /* only a notice */
}

int workspace_replay(decree_store *s, const oplog_entry *e, bool undo,
		     decree_restore_result *res)
{
	const txn_change *c = e->n == 1 ? &e->changes[0] : NULL;
	char file[PATH_MAX + 64], path[PATH_MAX];
	struct stat st;
	ws_meta m;
	snap t = SNAP_INIT;
	const snap *src;
	int r;

	if (!c || check_name(c->path) < 0)
		return decree_error_set(DECREE_ECORRUPT,
					"the history's workspace entry is "
					"damaged; nothing was changed");
	ws_path(path, s, c->path);
	if (!undo) {
		/* redo: discard it again, as it is now */
		oid tree;
		if (lstat(path, &st) < 0)
			return history_update(s, NULL, e->id, false);
		if ((r = meta_load(&m, s, c->path)) < 0)
			return r;
		repo_unlock(s); /* the capture takes the lock itself */
		r = capture_ws(&tree, NULL, s, &m);
		if (txn_lock(NULL, NULL, s) < 0 && r == 0)
			r = -1;
		if (r == 0)
			r = discard_locked(s, &m, &tree, e->id);
		meta_release(&m);
		if (r == 0)
			replay_notice(s, c->path, path, false);
		(void)res;
		return r;
	}
	if (lstat(path, &st) == 0) { /* made again before a crash */
		if ((r = history_update(s, NULL, e->id, true)) == 0)
			replay_notice(s, c->path, path, true);
		return r;
	}
	discarded_meta(file, s, e->id);
	if ((r = meta_load_file(&m, file, path)) < 0)
		return r;
	sweep_temps(s);
	if ((r = repo_tree(&src, s, &c->old_id)) == 0 &&
	    (r = snap_copy(&t, src)) == 0 && (r = build(&m, s, &t, true)) == 0)
		r = history_update(s, NULL, e->id, true);
	if (r == 0) {
		/* only a cache: the copies' stat data */
		decree_store *sw = NULL;
		if (ws_open(&sw, s, m.info.path) == 0) {
			repo_file(path, sw, "statcache");
			if (repo_ensure(sw) < 0 || statcache_save(path, &t) < 0)
				error_clear();
		} else {
			error_clear();
		}
		decree_store_free(sw);
		replay_notice(s, c->path, m.info.path, true);
	}
	snap_release(&t);
	meta_release(&m);
	return r;
}

/* --- apply ---------------------------------------------------------------- */

/*
 * The three sides of an apply, at the paths the workspace changed only
 * (base -> workspace): everywhere else the base, the project (which keeps
 * what it has there, so it is never read) and the workspace agree as far
 * as the merge is concerned, and treemerge would skip the path.  (Its
 * directory/file check needs no more either: a file the workspace did
 * not change cannot have a changed path below it, nor above it, since
 * the base and the workspace are each a tree.)
 */
typedef struct {
	decree_store *s, *sw; /* the project, the workspace */
	odb *db;
	snap scanned;		 /* the workspace, whole, as scanned */
	snap base, ours, theirs; /* at the changed paths */
	statcache *cache;	 /* the project's, to vouch for its files */
} merger;

/*
 * The project's state at `path` now, as a scan would record it (absent:
 * *present false).  Only the paths the workspace changed are looked at:
 * where the workspace did not change a path the project keeps what it
 * has, whatever that is, so the rest of the project is never walked.
 */
static int probe_ours(snap_entry *out, bool *present, merger *m,
		      const char *path, uint64_t limit, buf *data)
{
	struct stat st;
	int r;

	memset(out, 0, sizeof(*out));
	*present = false;
	if ((r = fs_lstat_beneath(present, &st, m->s->rootfd, path)) < 0)
		return r;
	if (!*present)
		return 0;
	if (S_ISLNK(st.st_mode))
		out->mode = MODE_LINK;
	else if (S_ISREG(st.st_mode))
		out->mode = mode_of_file(st.st_mode);
	else { /* a directory or a special file: the shape check decides */
		*present = false;
		return 0;
	}
	if (out->mode != MODE_LINK && (uint64_t)st.st_size > limit) {
		out->mode = MODE_SKIP;
		out->size = (uint64_t)st.st_size;
		return 0;
	}
	/* the project's stat cache vouches for its id, as for a scan (the
	 * bytes are read again, and checked, only if the merge needs them) */
	out->size = (uint64_t)st.st_size;
	snap_entry_set_stat(out, &st);
	if (m->cache && statcache_lookup(m->cache, path, out, &out->id))
		return 0;
	if ((r = checkpoint_read_path(data, m->s->rootfd, path, out->mode)) ==
	    DECREE_ENOTFOUND) {
		error_clear();
		*present = false;
		return 0;
	}
	if (r < 0)
		return r;
	out->size = data->len;
	sha256_buf(&out->id, data->ptr, data->len);
	return 0;
}

static int add_side(snap *s, const snap_entry *from, const char *path)
{
	snap_entry *e = snap_add(s, path, strlen(path));

	if (!e)
		return DECREE_ERROR;
	e->mode = from->mode;
	e->size = from->size;
	e->id = from->id;
	return 0;
}

/* The merger's three sides from the base b and the scanned workspace:
 * each path where they differ, with the project's state there. */
static int build_sides(merger *m, const snap *b, uint64_t limit)
{
	const snap *t = &m->scanned;
	size_t i = 0, k = 0;
	buf data = BUF_INIT;
	int r = 0;

	while (r == 0 && (i < b->n || k < t->n)) {
		int c = i >= b->n   ? 1
			: k >= t->n ? -1
				    : path_cmp(b->v[i].path, t->v[k].path);
		const snap_entry *eb = c <= 0 ? &b->v[i] : NULL;
		const snap_entry *et = c >= 0 ? &t->v[k] : NULL;
		const char *path = c <= 0 ? b->v[i].path : t->v[k].path;
		snap_entry eo;
		bool present;

		if (c <= 0)
			i++;
		if (c >= 0)
			k++;
		if (eb && et && snap_entry_same(eb, et))
			continue;
		if ((eb && (r = add_side(&m->base, eb, path)) < 0) ||
		    (et && (r = add_side(&m->theirs, et, path)) < 0) ||
		    (r = probe_ours(&eo, &present, m, path, limit, &data)) < 0)
			break;
		if (present && (r = add_side(&m->ours, &eo, path)) < 0)
			break;
	}
	buf_release(&data);
	return r;
}

static bool in_snap(const snap *s, const snap_entry *e)
{
	return s->n && e >= s->v && e < s->v + s->n;
}

/* treemerge's loader: the base's blobs from the store, the project's and
 * the workspace's from their disks, checked against what was seen. */
static int load_blob(void *payload, const snap_entry *e, buf *out)
{
	merger *m = payload;
	int rootfd = in_snap(&m->ours, e)     ? m->s->rootfd
		     : in_snap(&m->theirs, e) ? m->sw->rootfd
					      : -1;
	oid id;
	int type, r;

	if (rootfd < 0)
		return odb_read(out, &type, m->db, &e->id);
	if ((r = checkpoint_read_path(out, rootfd, e->path, e->mode)) < 0)
		return r == DECREE_ENOTFOUND
			       ? decree_error_set(DECREE_ECONFLICT,
						  "'%s' changed during the "
						  "apply; nothing was written",
						  e->path)
			       : r;
	sha256_buf(&id, out->ptr, out->len);
	if (oid_cmp(&id, &e->id))
		return decree_error_set(DECREE_ECONFLICT,
					"'%s' changed during the apply; "
					"nothing was written",
					e->path);
	return 0;
}

/* The plan as final states for the apply engine. */
static int plan_to_set(apply_set *set, merger *m, const treemerge_plan *p)
{
	buf data = BUF_INIT;
	int r = 0;

	for (size_t i = 0; r == 0 && i < p->n; i++) {
		const treemerge_item *it = &p->v[i];
		snap_entry want;
		switch (it->action) {
		case TREEMERGE_KEEP_OURS:
			break;
		case TREEMERGE_CONFLICT:
			buf_clear(&data);
			r = buf_printf(&data, "'%s': %s", it->path,
				       it->message) < 0
				    ? DECREE_ERROR
				    : apply_set_conflict(set, m->s, it->path,
							 data.ptr);
			break;
		case TREEMERGE_WRITE_MERGED:
			r = apply_set_path(set, m->s, it->path, true, it->mode,
					   it->data, it->len);
			break;
		case TREEMERGE_TAKE_THEIRS:
		case TREEMERGE_CHMOD:
			if (it->deleted) {
				r = apply_set_path(set, m->s, it->path, false,
						   0, NULL, 0);
				break;
			}
			/* the bytes of the side that holds them */
			memset(&want, 0, sizeof(want));
			buf_clear(&data);
			if ((r = load_blob(m,
					   it->action == TREEMERGE_CHMOD
						   ? it->ours
						   : it->theirs,
					   &data)) == 0)
				r = apply_set_path(set, m->s, it->path, true,
						   it->mode, data.ptr,
						   data.len);
			break;
		}
	}
	buf_release(&data);
	return r;
}

/*
 * Start saving the workspace's stat cache from the apply's scan of it, on
 * another thread while the merge and the transaction run, so the next
 * apply trusts its directory listings (no getdents) and file facts.  The
 * ids a cache holds must name stored objects (a checkpoint in the
 * workspace takes them without reading the file), and that scan stored
 * nothing: an id it hashed is kept only when the store holds it already
 * (a change an earlier apply carried over; the base's files); the others
 * (this apply's, stored only by its transaction, if at all) are left
 * without facts and hashed again next time, a few files.  Only a cache:
 * a failure costs speed.  Called under the store lock, which is held
 * until the saver is waited for.
 */
static void save_ws_cache_start(worktree_saver *sv, merger *m,
				statcache *wcache)
{
	snap *t = &m->scanned;

	for (size_t i = 0; i < t->n; i++) {
		snap_entry *e = &t->v[i];
		if (!e->cached && !e->unhashed &&
		    (mode_is_file(e->mode) || e->mode == MODE_LINK) &&
		    !odb_has(m->db, &e->id))
			e->unhashed = 1;
	}
	worktree_save_statcache_start(sv, m->sw, t, wcache);
}

int decree_workspace_apply(decree_apply_result *res, decree_store *s,
			   const char *name, const decree_apply_options *o)
{
	decree_apply_options def = DECREE_APPLY_OPTIONS_INIT;
	treemerge_opts to = TREEMERGE_OPTS_INIT;
	treemerge_plan plan = TREEMERGE_PLAN_INIT;
	worktree_view view;
	apply_set *set = NULL;
	ws_meta meta;
	merger mg;
	const snap *bt;
	statcache *wcache = NULL;
	worktree_saver saver = WORKTREE_SAVER_INIT;
	char label[120], what[200], path[PATH_MAX];
	bool locked = false;
	int r;

	DECREE_ASSERT_ARG(name);
	if (!o)
		o = &def;
	memset(&mg, 0, sizeof(mg));
	mg.scanned = (snap)SNAP_INIT;
	mg.base = (snap)SNAP_INIT;
	mg.ours = (snap)SNAP_INIT;
	mg.theirs = (snap)SNAP_INIT;
	if ((r = need_project(s)) < 0 || (r = meta_load(&meta, s, name)) < 0)
		return r;
	trace_phase("workspace apply: start");
	meta_view(&view, &meta);
	snprintf(label, sizeof(label), "base of workspace %s", name);
	/* a create killed after its rename left the root without its base */
	if ((r = attach_root(s, &meta, NULL, label)) < 0 ||
	    (r = ws_open(&mg.sw, s, meta.info.path)) < 0)
		goto done;
	trace_phase("workspace apply: root attached");
	if (!o->check_only) {
		if ((r = txn_lock(NULL, NULL, s)) < 0)
			goto done;
		locked = true;
	}
	trace_phase("workspace apply: locked");
	mg.s = s;
	repo_file(path, s, "statcache");
	/* the workspace scanned with the base's rules (an edited .gitignore
	 * cannot make the apply delete what was ignored), with its stat
	 * cache, which is saved afterwards when the lock is held (wcache).
	 * bt is the store's cached tree: used only until build_sides, before
	 * anything else reads a tree of s */
	if ((r = statcache_load(&mg.cache, path)) < 0 ||
	    (r = repo_odb(&mg.db, s, false)) < 0 ||
	    (r = repo_tree(&bt, s, &meta.base_tree)) < 0 ||
	    (r = worktree_scan_view(&mg.scanned, mg.sw, NULL,
				    locked ? &wcache : NULL, bt, false,
				    &view)) < 0)
		goto done;
	trace_phase("workspace apply: scanned");
	if ((r = build_sides(&mg, bt,
			     meta.max_file_size ? meta.max_file_size
			     : s->max_file_size ? s->max_file_size
						: SCAN_DEFAULT_MAX_SIZE)) < 0)
		goto done;
	trace_phase("workspace apply: changed paths");
	/* (mg.scanned is only read from here on) */
	if (locked && wcache) {
		save_ws_cache_start(&saver, &mg, wcache);
		wcache = NULL;
	}
	to.ours_label = "project";
	to.theirs_label = "workspace";
	if ((r = treemerge(&plan, &mg.base, &mg.ours, &mg.theirs, &to,
			   load_blob, &mg)) < 0 ||
	    (r = apply_set_new(&set)) < 0 ||
	    (r = plan_to_set(set, &mg, &plan)) < 0)
		goto done;
	trace_phase("workspace apply: merged");
	snprintf(label, sizeof(label), "workspace %s", name);
	snprintf(what, sizeof(what), "workspace apply %s", name);
	if (o->exec) /* (its command runs with the lock released) */
		worktree_save_statcache_wait(&saver);
	r = apply_set_run(res, s, set, label, what, o, &locked);
	trace_phase("workspace apply: written");
done:
	/* (before the lock goes: --exec released and took it again) */
	worktree_save_statcache_wait(&saver);
	statcache_free(wcache);
	statcache_free(mg.cache);
	if (locked)
		repo_unlock(s);
	treemerge_plan_release(&plan);
	apply_set_free(set);
	decree_store_free(mg.sw);
	snap_release(&mg.scanned);
	snap_release(&mg.base);
	snap_release(&mg.ours);
	snap_release(&mg.theirs);
	meta_release(&meta);
	return r;
}
