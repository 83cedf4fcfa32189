/*
 * maint.c - recovery of an interrupted transaction (txn_lock), garbage
 * collection and integrity checking of a whole store (decree/maint.h).
 *
 * GC is mark-and-sweep under the store lock.  Roots, for every project
 * root of the store (not only the caller's): every checkpoint record's
 * tree, every object named by the undo/redo history, every object named by
 * an unfinished transaction log.  Marking walks trees once each (shared
 * subtrees are skipped on the second visit).  Sweeping rewrites only packs
 * that hold dead objects (odb_gc).  Because the stat caches of the roots
 * may name swept objects, they are deleted whenever anything was freed; the
 * next checkpoint re-hashes once.
 *
 * fsck re-hashes every object, checks every index checksum, parses every
 * record, history and log, and resolves every reference.
 */
#include "util/common.h"
#include "scan/statcache.h"
#include "decree/maint.h"
#include "ops/checkpoint.h"
#include "scan/worktree.h"
#include "util/alloc.h"
#include "store/record.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/oidset.h"
#include "store/oplog.h"
#include "journal/journal.h"
#include "store/repo.h"
#include "store/roots.h"
#include "store/tree.h"
#include "txn/txn.h"

#include <dirent.h>

/* A blob a tree names at `path` of the root `rootdir` (fsck --repair looks
 * for its bytes there first). */
typedef struct {
	char *rootdir, *path;
	uint32_t mode;
	oid id;
} candidate;

typedef struct {
	decree_store *s;
	odb *db;
	oidset marks;
	decree_fsck_cb cb; /* fsck only */
	void *payload;
	decree_fsck_problem kind; /* of what problem() reports */
	size_t problems;
	bool fsck;
	/* fsck --repair: objects referenced with no intact copy, and where
	 * the trees put the blobs among them */
	bool repair;
	oidset missing;
	candidate *cands;
	size_t ncands, capcands;
	const char *rootdir; /* being marked */
	buf prefix;	     /* path of the tree being walked */
} marker;

static void report(marker *m, decree_fsck_problem kind, const char *what,
		   const char *detail)
{
	if (kind != DECREE_FSCK_REPAIRED && kind != DECREE_FSCK_LOST)
		m->problems++;
	if (m->cb)
		m->cb(m->payload, kind, what, detail);
}

static void problem(marker *m, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Damage (m->kind: DECREE_FSCK_DAMAGED, or UNREPAIRED after a repair),
 * described by fmt. */
static void problem(marker *m, const char *what, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(m, m->kind, what, msg);
}

static void marker_init(marker *m, decree_store *s)
{
	memset(m, 0, sizeof(*m));
	m->s = s;
	m->kind = DECREE_FSCK_DAMAGED;
	buf_init(&m->prefix);
}

static void marker_release(marker *m)
{
	oidset_release(&m->marks);
	oidset_release(&m->missing);
	for (size_t i = 0; i < m->ncands; i++) {
		decree_free(m->cands[i].rootdir);
		decree_free(m->cands[i].path);
	}
	decree_free(m->cands);
	m->cands = NULL;
	m->ncands = m->capcands = 0;
	buf_release(&m->prefix);
}

/* fsck --repair: `id` has no intact copy; remember it (and, for a blob,
 * where the tree being walked puts it). */
static int want(marker *m, const oid *id, const char *name, uint32_t mode)
{
	candidate *c;
	int r;

	if (!m->repair)
		return 0;
	if ((r = oidset_add(&m->missing, id, NULL)) < 0)
		return r;
	if (!name || mode == MODE_DIR)
		return 0;
	if ((r = GROW(m->cands, m->capcands, m->ncands + 1)) < 0)
		return r;
	c = &m->cands[m->ncands];
	c->id = *id;
	c->mode = mode;
	c->rootdir = decree_strdup(m->rootdir);
	c->path = decree_malloc(m->prefix.len + strlen(name) + 1);
	if (!c->rootdir || !c->path) {
		decree_free(c->rootdir);
		decree_free(c->path);
		return -1;
	}
	memcpy(c->path, m->prefix.ptr, m->prefix.len);
	memcpy(c->path + m->prefix.len, name, strlen(name) + 1);
	m->ncands++;
	return 0;
}

static int mark_tree(marker *m, const oid *id);

struct tree_walk {
	marker *m;
	int r;
};

/* An object that must exist: missing is a problem; a damaged copy was
 * reported by odb_verify already.  fsck --repair wants both. */
static int need(marker *m, const oid *id, const char *name, uint32_t mode,
		const char *what)
{
	char hex[SHA256_HEXLEN + 1];
	int r;

	if (!m->fsck)
		return 0;
	if ((r = odb_check(m->db, id)) < 0)
		return r;
	if (r > 0)
		return 0;
	if (!odb_has(m->db, id) || m->kind == DECREE_FSCK_UNREPAIRED) {
		oid_to_hex(hex, id);
		if (name)
			problem(m, hex, "%s %s%s (referenced by %s)",
				odb_has(m->db, id) ? "damaged" : "missing",
				m->prefix.ptr, name, what);
		else
			problem(m, hex, "%s object (referenced by %s)",
				odb_has(m->db, id) ? "damaged" : "missing",
				what);
	}
	return want(m, id, name, mode);
}

static int mark_entry(void *payload, const char *name, uint32_t mode,
		      uint64_t size, const oid *id)
{
	struct tree_walk *tw = payload;
	marker *m = tw->m;
	size_t plen = m->prefix.len;
	int r;
	(void)size;
	if (mode == MODE_SKIP)
		return 0;
	if (mode == MODE_DIR) {
		if ((r = buf_puts(&m->prefix, name)) < 0 ||
		    (r = buf_putc(&m->prefix, '/')) < 0)
			return r;
		r = mark_tree(m, id);
		buf_truncate(&m->prefix, plen);
		return r;
	}
	if (oidset_add(&m->marks, id, NULL) < 0)
		return -1;
	return need(m, id, name, mode, "a tree");
}

static int mark_tree(marker *m, const oid *id)
{
	char hex[SHA256_HEXLEN + 1];
	struct tree_walk tw = { m, 0 };
	buf obj = BUF_INIT;
	bool added;
	int r;

	if ((r = oidset_add(&m->marks, id, &added)) < 0)
		return r;
	if (!added)
		return 0;
	r = odb_read(&obj, NULL, m->db, id); /* type not checked: see tree.c */
	if (r == DECREE_ENOTFOUND || r == DECREE_ECORRUPT) {
		oid_to_hex(hex, id);
		buf_release(&obj);
		if (!m->fsck) { /* never sweep on a damaged store */
			char why[512];
			snprintf(why, sizeof(why), "%s", error_last());
			return decree_error_set(
				DECREE_ECORRUPT,
				"tree %s is missing or damaged (%s); nothing was "
				"deleted",
				hex, why);
		}
		problem(m, hex, "%s tree%s%s",
			r == DECREE_ENOTFOUND ? "missing" : "damaged",
			m->prefix.len ? " " : "", m->prefix.ptr);
		error_clear();
		return want(m, id, NULL, MODE_DIR);
	}
	if (r < 0) {
		buf_release(&obj);
		return r;
	}
	r = tree_parse(obj.ptr, obj.len, mark_entry, &tw);
	buf_release(&obj);
	if (r == DECREE_ECORRUPT && m->fsck) {
		oid_to_hex(hex, id);
		problem(m, hex, "%s", error_last());
		error_clear();
		return 0;
	}
	return r;
}

static int mark_id(marker *m, const oid *id, const char *what)
{
	if (oidset_add(&m->marks, id, NULL) < 0)
		return -1;
	return need(m, id, NULL, 0, what);
}

/* The objects of one history entry.  A workspace entry's change names
 * the discarded workspace's whole tree (ops/workspace.c): walked, since
 * its undo makes every file again. */
static int mark_changes(marker *m, const oplog_entry *e, const char *what)
{
	const txn_change *c = e->changes;
	size_t n = e->n;
	int r;
	for (size_t i = 0; i < n; i++) {
		if (c[i].has_old && e->kind == OPLOG_WORKSPACE) {
			buf_clear(&m->prefix);
			r = mark_tree(m, &c[i].old_id);
			buf_clear(&m->prefix);
			if (r < 0)
				return r;
		} else if (c[i].has_old &&
			   (r = mark_id(m, &c[i].old_id, what)) < 0)
			return r;
		if (c[i].has_new && (r = mark_id(m, &c[i].new_id, what)) < 0)
			return r;
	}
	return 0;
}

/* Mark everything one project root of the store references. */
static int mark_unfinished(void *payload, const oid *id)
{
	return mark_id(payload, id, "an unfinished transaction");
}

/*
 * fsck: a file that starts with a magic and a version (1..max_version)
 * and ends with the SHA-256 of everything before (caches, packs/sealed),
 * or that `verify` (when given) finds sound.  A missing file is fine.
 * Reads without blocking on a FIFO.
 */
static void check_sum_file(marker *m, const char *path, const char *magic,
			   size_t mlen, uint32_t max_version,
			   const char *(*verify)(const void *, size_t),
			   bool (*removed)(marker *, const char *))
{
	buf data = BUF_INIT;
	struct stat st;
	oid sum;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	const char *why = NULL;

	if (fd < 0) {
		if (errno != ENOENT)
			why = "cannot be opened";
	} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		why = "not a regular file";
	} else if (fs_read_fd(fd, &data, path) < 0) {
		why = "cannot be read";
	} else if (verify) {
		why = verify(data.ptr, data.len);
	} else if (data.len < mlen + 4 + SHA256_LEN ||
		   memcmp(data.ptr, magic, mlen)) {
		why = "bad header (magic)";
	} else if (get_u32le((const unsigned char *)data.ptr + mlen) < 1 ||
		   get_u32le((const unsigned char *)data.ptr + mlen) >
			   max_version) {
		why = "bad header (unknown version)";
	} else {
		sha256_buf(&sum, data.ptr, data.len - SHA256_LEN);
		if (memcmp(sum.b, data.ptr + data.len - SHA256_LEN, SHA256_LEN))
			why = "checksum mismatch";
	}
	if (fd >= 0)
		close(fd);
	buf_release(&data);
	error_clear();
	if (!why)
		return;
	if (removed && removed(m, path))
		return;
	problem(m, path, "%s (a cache: 'decree fsck --repair' removes it)",
		why);
}

/* fsck --repair: a damaged cache is removed (it is rebuilt when needed). */
static bool remove_cache(marker *m, const char *path)
{
	if (fs_remove_path(path) < 0) {
		error_clear();
		return false;
	}
	report(m, DECREE_FSCK_REPAIRED, path,
	       "damaged cache removed (rebuilt when needed)");
	return true;
}

/* The agent-write journals of a root: lines that cannot be read are
 * reported; --repair rewrites the journal with the records it can read. */
static void check_journals(marker *m, const char *rootdir)
{
	char dir[PATH_MAX + 80];
	DIR *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s/" JOURNAL_DIR, rootdir);
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX + 160];
		journal j = JOURNAL_INIT;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (strlen(de->d_name) != 32 ||
		    !is_hex_prefix(de->d_name, 32)) {
			problem(m, path,
				"unexpected file in the journal directory");
			continue;
		}
		if (journal_read_path(&j, path) < 0) {
			problem(m, path, "%s", error_last());
		} else if (j.damaged) {
			if (m->repair && m->kind == DECREE_FSCK_DAMAGED &&
			    journal_rewrite(path, &j) == 0) {
				char msg[160];
				snprintf(msg, sizeof(msg),
					 "agent-write journal: %zu damaged "
					 "record(s) dropped, %zu kept",
					 j.damaged, j.n);
				report(m, DECREE_FSCK_REPAIRED, path, msg);
			} else {
				problem(m, path,
					"agent-write journal: %zu record(s) "
					"cannot be read ('decree fsck --repair' "
					"drops them)",
					j.damaged);
			}
		}
		error_clear();
		journal_release(&j);
	}
	closedir(d);
}

static int mark_root(marker *m, const char *rootdir)
{
	char path[PATH_MAX + 80];
	DIR *d;
	struct dirent *de;
	oplog l = OPLOG_INIT;
	bool (*rm)(marker *, const char *) =
		m->repair && m->kind == DECREE_FSCK_DAMAGED ? remove_cache
							    : NULL;
	int r = 0;

	m->rootdir = rootdir;
	if (m->fsck) {
		snprintf(path, sizeof(path), "%s/checkpoints.cache", rootdir);
		/* (a record cache of version 1 or 2 is an older decree's:
		 * intact, ignored by listings and written again) */
		check_sum_file(m, path, "DCKC", 4, 3, NULL, rm);
		snprintf(path, sizeof(path), "%s/statcache", rootdir);
		check_sum_file(m, path, "DSTC", 4, 2, statcache_verify, rm);
		snprintf(path, sizeof(path), "%s/statcache.delta", rootdir);
		check_sum_file(m, path, "DSTC", 4, 2, statcache_verify, rm);
		/* an unfinished prune or drop: the next recovery finishes
		 * it, unless its list is damaged */
		snprintf(path, sizeof(path), "%s/checkpoints.drop", rootdir);
		if ((r = record_drop_check(rootdir)) == DECREE_ECORRUPT)
			problem(m, path,
				"%s (the next decree command removes it and "
				"keeps the checkpoints it named)",
				error_last());
		error_clear();
		r = 0;
		check_journals(m, rootdir);
	}
	snprintf(path, sizeof(path), "%s/checkpoints", rootdir);
	if ((d = opendir(path)) != NULL) {
		while (r == 0 && (de = readdir(d)) != NULL) {
			char file[PATH_MAX + 160];
			record rec;
			if (de->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
			if (strlen(de->d_name) != SHA256_HEXLEN ||
			    !is_hex_prefix(de->d_name, 64)) {
				if (m->fsck)
					problem(m, file,
						"unexpected file in checkpoints directory");
				continue;
			}
			r = record_load_file(&rec, file, de->d_name);
			if (r < 0) {
				if (!m->fsck) { /* its objects are unknown */
					char msg[1024];
					snprintf(msg, sizeof(msg), "%s",
						 error_last());
					r = decree_error_set(
						r == DECREE_ECORRUPT
							? r
							: DECREE_ERROR,
						"%s; nothing was deleted", msg);
					break;
				}
				problem(m, file, "%s", error_last());
				error_clear();
				r = 0;
				continue;
			}
			buf_clear(&m->prefix);
			r = mark_tree(m, &rec.tree);
			record_release(&rec);
		}
		closedir(d);
	}
	buf_clear(&m->prefix);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/oplog", rootdir);
	if ((r = oplog_load(&l, path)) < 0) {
		if (!m->fsck)
			return r;
		problem(m, path, "%s", error_last());
		error_clear();
		r = 0;
	}
	for (size_t i = 0; r == 0 && i < l.nundo; i++)
		r = mark_changes(m, &l.undo[i], "the undo history");
	for (size_t i = 0; r == 0 && i < l.nredo; i++)
		r = mark_changes(m, &l.redo[i], "the redo history");
	oplog_release(&l);
	if (r < 0)
		return r;
	/* An unfinished transaction: every object its records name. */
	snprintf(path, sizeof(path), "%s/txn.wal", rootdir);
	{
		bool present;
		r = txn_log_objects(&present, path, mark_unfinished, m);
		if (r < 0 && m->fsck) {
			problem(m, path, "%s", error_last());
			error_clear();
			r = 0;
		}
		if (present && m->fsck)
			report(m, DECREE_FSCK_UNFINISHED, path,
			       "unfinished transaction");
	}
	return r;
}

/*
 * Call fn(payload, rootdir) for each root directory of the store
 * (<store>/roots/<key>), until one returns non-zero, which is returned.
 * A store without roots/ has none; one that cannot be read is an error
 * (callers that only tidy up ignore it).
 */
static int each_rootdir(const decree_store *s,
			int (*fn)(void *payload, const char *rootdir),
			void *payload)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int r = 0;

	snprintf(path, sizeof(path), "%s/roots", s->dir);
	if (!(d = opendir(path)))
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot open '%s'", path);
	while (r == 0 && (de = readdir(d)) != NULL) {
		char rootdir[PATH_MAX + 80];
		if (de->d_name[0] == '.')
			continue;
		snprintf(rootdir, sizeof(rootdir), "%s/%s", path, de->d_name);
		r = fn(payload, rootdir);
	}
	closedir(d);
	return r;
}

static int mark_one(void *m, const char *rootdir)
{
	return mark_root(m, rootdir);
}

static int mark_all(marker *m)
{
	return each_rootdir(m->s, mark_one, m);
}

static int drop_statcache(void *unused, const char *rootdir)
{
	char file[PATH_MAX + 300];

	(void)unused;
	snprintf(file, sizeof(file), "%s/statcache", rootdir);
	unlink(file);
	snprintf(file, sizeof(file), "%s/statcache.delta", rootdir);
	unlink(file);
	return 0;
}

static void drop_statcaches(decree_store *s)
{
	(void)each_rootdir(s, drop_statcache, NULL);
	error_clear();
}

static int sweep_root_temps(void *unused, const char *rootdir)
{
	char sub[PATH_MAX + 300];

	(void)unused;
	(void)repo_sweep_temps(rootdir);
	snprintf(sub, sizeof(sub), "%s/checkpoints", rootdir);
	(void)repo_sweep_temps(sub);
	return 0;
}

static void sweep_store_temps(decree_store *s)
{
	(void)repo_sweep_temps(s->dir);
	(void)each_rootdir(s, sweep_root_temps, NULL);
	error_clear();
}

/* Forget the roots left with nothing (every checkpoint dropped, no
 * history, no agent journal): `decree projects` no longer lists them.
 * Only tidying: a failure is a warning. */
static int remove_if_unused(void *unused, const char *rootdir)
{
	bool used;

	(void)unused;
	if (roots_in_use(&used, rootdir) < 0 || used ||
	    roots_remove_unused(rootdir) < 0) {
		if (*error_last())
			warning_set(0, "%s", error_last());
		error_clear();
	}
	return 0;
}

static void remove_unused_roots(decree_store *s)
{
	(void)each_rootdir(s, remove_if_unused, NULL);
	error_clear();
}

int decree_recover_ext(decree_recover_result *out, decree_store *s,
		       const decree_recover_options *o)
{
	decree_recover_options def = DECREE_RECOVER_OPTIONS_INIT;
	decree_recover_result dummy;
	int r;

	if (!o)
		o = &def;
	if (!out)
		out = &dummy;
	memset(out, 0, sizeof(*out));
	if (o->version != DECREE_RECOVER_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid recover options");
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock_recover(&out->recovered, &out->left_alone, s,
				  TXN_SWEEP_ALL | TXN_NO_ATTACH |
					  (o->rollback ? TXN_ROLLBACK_DAMAGED
						       : 0))) < 0)
		return r;
	repo_unlock(s);
	return 0;
}

int decree_recover(decree_recover_result *out, decree_store *s)
{
	return decree_recover_ext(out, s, NULL);
}

int decree_gc(decree_gc_stats *st, decree_store *s, bool dry_run)
{
	marker m;
	decree_gc_stats dummy;
	int r;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	marker_init(&m, s);
	if (!repo_exists(s))
		return 0;
	/* gc is store-wide: it registers no root of its own */
	if ((r = txn_lock_recover(NULL, NULL, s, TXN_NO_ATTACH)) < 0)
		return r;
	if ((r = repo_odb(&m.db, s, true)) < 0)
		goto done;
	if ((r = mark_all(&m)) < 0)
		goto done;
	if ((r = odb_gc(m.db, &m.marks, true, &st->objects_freed,
			&st->bytes_freed)) < 0)
		goto done;
	if (!dry_run) {
		sweep_store_temps(s);
		/* before the sweep: a cache must never name a freed object */
		if (st->objects_freed)
			drop_statcaches(s);
		r = odb_gc(m.db, &m.marks, false, &st->objects_freed,
			   &st->bytes_freed);
		if (r == 0)
			remove_unused_roots(s);
	}
	st->objects_kept = m.marks.count;
done:
	marker_release(&m);
	repo_unlock(s);
	return r;
}

/* --- fsck ----------------------------------------------------------------- */

static void odb_problem(void *payload, const char *what, const char *msg)
{
	marker *m = payload;
	problem(m, what, "%s", msg);
}

static void odb_repaired(void *payload, const char *what, const char *msg)
{
	report(payload, DECREE_FSCK_REPAIRED, what, msg);
}

/* The store's own files: the marker, packs/sealed. */
static void check_store_files(marker *m)
{
	char path[PATH_MAX];
	buf data = BUF_INIT;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", m->s->dir, REPO_MARKER);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    fs_read_fd(fd, &data, path) < 0 ||
	    data.len != strlen(REPO_MARKER_MAGIC) ||
	    memcmp(data.ptr, REPO_MARKER_MAGIC, data.len))
		problem(m, path, "%s",
			fd < 0 && errno == ENOENT
				? "missing: the store has no marker"
				: "not the marker of a version 1 store");
	if (fd >= 0)
		close(fd);
	buf_release(&data);
	error_clear();
	snprintf(path, sizeof(path), "%s/packs/sealed", m->s->dir);
	check_sum_file(m, path, "DECRSEAL", 8, 1, NULL,
		       m->repair && m->kind == DECREE_FSCK_DAMAGED
			       ? remove_cache
			       : NULL);
}

/* Every problem of the store, reported as m->kind. */
static int check_all(marker *m)
{
	int r;

	check_store_files(m);
	if ((r = odb_verify_progress(m->db, odb_problem, m, m->s->progress,
				     m->s->progress_payload)) < 0)
		return r;
	return mark_all(m);
}

/* The project root a root directory of the store serves, if it still
 * exists: a handle on it (s itself for s's own root).  NULL: none. */
static decree_store *open_root(decree_store *s, const char *rootdir)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	decree_store *h = NULL;
	buf root = BUF_INIT;

	if (!strcmp(rootdir, s->rootdir))
		return s->rootfd >= 0 ? s : NULL;
	if (roots_path(&root, rootdir) == 0) {
		o.root = root.ptr;
		o.store_path = s->dir;
		o.threads = s->threads;
		if (decree_store_open(&h, &o) < 0 ||
		    strcmp(h->rootdir, rootdir)) { /* moved: another key */
			decree_store_free(h);
			h = NULL;
		}
	}
	error_clear();
	buf_release(&root);
	return h;
}

struct restorer {
	marker *m;
	const oidset *still; /* wanted: no intact copy after the salvage */
	odb_writer *w;
	oidset restored; /* blobs stored again */
	buf data;
};

/* Store the bytes at `path` of root h if they are the wanted blob `id`
 * (id NULL: whatever they hash to, if it is wanted). */
static int restore_path(struct restorer *rs, decree_store *h, const char *path,
			uint32_t mode, const oid *id)
{
	char hex[SHA256_HEXLEN + 1], what[PATH_MAX + 300];
	oid got;
	bool added;
	int r;

	r = checkpoint_read_path(&rs->data, h->rootfd, path, mode);
	if (r < 0) { /* gone, or unreadable: another source may hold it */
		error_clear();
		return r == -1 && !strcmp(error_last(), "out of memory") ? r
									 : 0;
	}
	sha256_buf(&got, rs->data.ptr, rs->data.len);
	if ((id && oid_cmp(&got, id)) || !oidset_has(rs->still, &got) ||
	    oidset_has(&rs->restored, &got))
		return 0;
	if ((r = odb_writer_add(rs->w, ODB_BLOB, rs->data.ptr, rs->data.len,
				&got, NULL)) < 0 ||
	    (r = oidset_add(&rs->restored, &got, &added)) < 0)
		return r;
	oid_to_hex(hex, &got);
	snprintf(what, sizeof(what), "stored again from '%s/%s'", h->root,
		 path);
	report(rs->m, DECREE_FSCK_REPAIRED, hex, what);
	return 0;
}

/* Store again, from the working tree of root h, every missing object it
 * still holds: first where the trees put each blob, then anywhere in the
 * tree (a moved or copied file), and every directory whose tree object it
 * can build again. */
static int restore_from_root(struct restorer *rs, decree_store *h,
			     const char *rootdir)
{
	marker *m = rs->m;
	snap cur = SNAP_INIT;
	oid top;
	int r = 0;

	for (size_t i = 0; r == 0 && i < m->ncands; i++)
		if (!strcmp(m->cands[i].rootdir, rootdir))
			r = restore_path(rs, h, m->cands[i].path,
					 m->cands[i].mode, &m->cands[i].id);
	if (r < 0)
		return r;
	if ((r = worktree_scan(&cur, h, NULL, NULL, NULL, false)) < 0) {
		/* a tree that cannot be scanned holds nothing for us */
		error_clear();
		snap_release(&cur);
		return 0;
	}
	for (size_t i = 0; r == 0 && i < cur.n; i++) {
		const snap_entry *e = &cur.v[i];
		if (snap_entry_is_stored(e) && oidset_has(rs->still, &e->id) &&
		    !oidset_has(&rs->restored, &e->id))
			r = restore_path(rs, h, e->path, e->mode, &e->id);
	}
	/* the writer only takes wanted objects: the trees that are missing */
	if (r == 0)
		r = tree_write(&top, rs->w, &cur);
	snap_release(&cur);
	return r;
}

/* Take the wanted bytes from the root a root directory serves, if it
 * still exists. */
static int restore_from_rootdir(void *payload, const char *rootdir)
{
	struct restorer *rs = payload;
	decree_store *h = open_root(rs->m->s, rootdir);
	int r;

	if (!h)
		return 0;
	r = restore_from_root(rs, h, rootdir);
	if (h != rs->m->s)
		decree_store_free(h);
	return r;
}

static int restore_missing(marker *m)
{
	struct restorer rs = { m, NULL, NULL, OIDSET_INIT, BUF_INIT };
	oidset still = OIDSET_INIT;
	int r = 0;

	/* a copy in a pack whose index was damaged may be back */
	for (size_t i = 0; r == 0 && i < m->missing.cap; i++)
		if (m->missing.used[i] &&
		    (r = odb_check(m->db, &m->missing.keys[i])) == 0)
			r = oidset_add(&still, &m->missing.keys[i], NULL);
	if (r < 0 || !still.count)
		goto done;
	rs.still = &still;
	if ((r = odb_writer_new(&rs.w, m->db)) < 0)
		goto done;
	odb_writer_restrict(rs.w, &still);
	/* (mark_all read roots/ already: it is readable) */
	r = each_rootdir(m->s, restore_from_rootdir, &rs);
	if (r == 0)
		r = odb_writer_commit(rs.w);
	/* what tree_write stored again: trees */
	for (size_t i = 0; r == 0 && i < still.cap; i++) {
		char hex[SHA256_HEXLEN + 1];
		if (!still.used[i] || oidset_has(&rs.restored, &still.keys[i]))
			continue;
		if ((r = odb_check(m->db, &still.keys[i])) <= 0)
			continue;
		r = 0;
		oid_to_hex(hex, &still.keys[i]);
		report(m, DECREE_FSCK_REPAIRED, hex,
		       "tree stored again (built from a working tree)");
	}
done:
	odb_writer_free(rs.w);
	oidset_release(&rs.restored);
	oidset_release(&still);
	buf_release(&rs.data);
	return r;
}

/* --- what is beyond saving ---------------------------------------------- */

struct loss_walk {
	marker *m;
	oidset *complete; /* trees known to lack nothing */
	buf *prefix, *lost;
	size_t count;
	int r;
};

static int lost_in_tree(struct loss_walk *lw, const oid *id);

static void note_lost(struct loss_walk *lw, const char *name, const oid *id)
{
	char hex[SHA256_HEXLEN + 1];
	oid_to_hex(hex, id);
	buf_printf(lw->lost, "%s'%s%s' (%.12s)", lw->count ? ", " : "",
		   lw->prefix->ptr, name, hex);
	lw->count++;
}

static int lost_entry(void *payload, const char *name, uint32_t mode,
		      uint64_t size, const oid *id)
{
	struct loss_walk *lw = payload;
	size_t plen = lw->prefix->len;
	int r;
	(void)size;
	if (mode == MODE_SKIP)
		return 0;
	if (mode == MODE_DIR) {
		if ((r = buf_puts(lw->prefix, name)) < 0 ||
		    (r = buf_putc(lw->prefix, '/')) < 0)
			return r;
		r = lost_in_tree(lw, id);
		buf_truncate(lw->prefix, plen);
		return r;
	}
	if ((r = odb_check(lw->m->db, id)) < 0)
		return r;
	if (r == 0)
		note_lost(lw, name, id);
	return 0;
}

/* Append to lw->lost every object below tree `id` that has no intact copy
 * (a missing tree counts as its directory). */
static int lost_in_tree(struct loss_walk *lw, const oid *id)
{
	buf obj = BUF_INIT;
	size_t before = lw->count;
	int r;

	if (oidset_has(lw->complete, id))
		return 0;
	r = odb_read(&obj, NULL, lw->m->db, id);
	if (r == DECREE_ENOTFOUND || r == DECREE_ECORRUPT) {
		error_clear();
		note_lost(lw, "", id);
		r = 0;
	} else if (r == 0) {
		r = tree_parse(obj.ptr, obj.len, lost_entry, lw);
		if (r == DECREE_ECORRUPT) {
			error_clear();
			note_lost(lw, "", id);
			r = 0;
		}
	}
	buf_release(&obj);
	if (r == 0 && lw->count == before)
		r = oidset_add(lw->complete, id, NULL);
	return r;
}

/* Delete the records of root `rootdir` that are damaged or name an object
 * no readable source holds, reporting exactly what is lost with each. */
static int drop_lost_records(marker *m, const char *rootdir, oidset *complete)
{
	char dir[PATH_MAX + 80], file[PATH_MAX + 160];
	buf lost = BUF_INIT, prefix = BUF_INIT;
	size_t removed = 0;
	DIR *d;
	struct dirent *de;
	int r = 0;

	snprintf(dir, sizeof(dir), "%s/checkpoints", rootdir);
	if (!(d = opendir(dir)))
		return 0;
	while (r == 0 && (de = readdir(d)) != NULL) {
		struct loss_walk lw = { m, complete, &prefix, &lost, 0, 0 };
		record rec;
		if (strlen(de->d_name) != SHA256_HEXLEN ||
		    !is_hex_prefix(de->d_name, 64))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		r = record_load_file(&rec, file, de->d_name);
		if (r == DECREE_ECORRUPT) {
			char why[1024];
			snprintf(why, sizeof(why),
				 "%s; removed (what it recorded cannot be "
				 "read)",
				 error_last());
			error_clear();
			if (unlink(file) < 0) {
				r = decree_error_os("cannot remove '%s'", file);
				break;
			}
			removed++;
			report(m, DECREE_FSCK_LOST, file, why);
			r = 0;
			continue;
		}
		if (r < 0) { /* unreadable: left for the final check */
			error_clear();
			r = 0;
			continue;
		}
		buf_clear(&lost);
		buf_clear(&prefix);
		r = lost_in_tree(&lw, &rec.tree);
		if (r == 0 && lw.count) {
			buf why = BUF_INIT;
			buf_printf(
				&why,
				"checkpoint of session '%s'%s%s%s, created "
				"%s: removed; no readable copy or file holds "
				"%zu of its objects: %s",
				rec.session, rec.message ? " (message '" : "",
				rec.message ? rec.message : "",
				rec.message ? "')" : "", rec.info.created_at,
				lw.count, lost.ptr);
			if (unlink(file) < 0)
				r = decree_error_os("cannot remove '%s'", file);
			else {
				removed++;
				report(m, DECREE_FSCK_LOST, file, why.ptr);
			}
			buf_release(&why);
		}
		record_release(&rec);
	}
	closedir(d);
	buf_release(&lost);
	buf_release(&prefix);
	if (r == 0 && removed)
		r = fs_fsync_dir_path(dir);
	return r;
}

struct lost_walk {
	marker *m;
	oidset complete;
};

static int drop_lost_in(void *payload, const char *rootdir)
{
	struct lost_walk *lw = payload;
	return drop_lost_records(lw->m, rootdir, &lw->complete);
}

static int drop_lost(marker *m)
{
	struct lost_walk lw = { m, OIDSET_INIT };
	int r = each_rootdir(m->s, drop_lost_in, &lw);

	oidset_release(&lw.complete);
	return r;
}

/*
 * fsck --repair, under the store lock (not txn_lock: a damaged log must
 * not keep the objects from being repaired; the log is left alone):
 *  1. find every problem (reported DAMAGED), and every referenced object
 *     without an intact copy, and where the trees put it;
 *  2. rewrite damaged packs with the copies that still verify, delete
 *     damaged caches;
 *  3. store again what is missing from the working trees of the store's
 *     roots (where the trees put it, then anywhere in the tree);
 *  4. delete the records that are damaged or still lack an object,
 *     reporting what is lost with each (LOST);
 *  5. check again: what remains is reported UNREPAIRED.
 */
static int repair(marker *m)
{
	decree_store *s = m->s;
	int r;

	if ((r = repo_lock_flags(s, REPO_LOCK_NO_ATTACH)) < 0)
		return r;
	if ((r = repo_odb(&m->db, s, true)) < 0)
		goto done;
	m->repair = true;
	if ((r = check_all(m)) < 0)
		goto done;
	if ((r = odb_salvage(m->db, odb_repaired, m)) < 0)
		goto done;
	/* a stat cache may name an object that is gone now */
	if (r > 0 || m->missing.count)
		drop_statcaches(s);
	if ((r = restore_missing(m)) < 0 || (r = drop_lost(m)) < 0)
		goto done;
	/* what remains */
	marker_release(m);
	m->kind = DECREE_FSCK_UNREPAIRED;
	m->repair = false;
	m->problems = 0;
	buf_init(&m->prefix);
	if ((r = repo_odb(&m->db, s, true)) < 0)
		goto done;
	check_store_files(m);
	if (!odb_all_trusted(m->db) &&
	    (r = odb_verify_progress(m->db, odb_problem, m, m->s->progress,
				     m->s->progress_payload)) < 0)
		goto done;
	r = mark_all(m);
done:
	repo_unlock(s);
	return r;
}

int decree_fsck_ext(decree_store *s, const decree_fsck_options *o)
{
	decree_fsck_options def = DECREE_FSCK_OPTIONS_INIT;
	marker m;
	int r;

	if (!o)
		o = &def;
	if (o->version != DECREE_FSCK_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid fsck options");
	marker_init(&m, s);
	m.cb = o->cb;
	m.payload = o->payload;
	m.fsck = true;
	if (!repo_exists(s)) {
		struct stat st;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/packs", s->dir);
		if (stat(path, &st) < 0) {
			/* nothing to check is not "store ok": say what is
			 * there */
			snprintf(path, sizeof(path), "%s/roots", s->dir);
			if (stat(path, &st) == 0)
				;
			else if (stat(s->dir, &st) < 0)
				return decree_error_set(
					DECREE_ENOTFOUND,
					"no decree store at '%s'", s->dir);
			else
				return decree_error_set(
					DECREE_ENOTFOUND,
					"'%s' is not a decree store (it has no "
					"DECREE-STORE marker)",
					s->dir);
		}
		if (!(o->flags & DECREE_FSCK_REPAIR))
			check_store_files(&m);
	}
	if (o->flags & DECREE_FSCK_REPAIR) {
		char path[PATH_MAX];
		bool marked = repo_exists(s);
		r = repair(&m);
		snprintf(path, sizeof(path), "%s/%s", s->dir, REPO_MARKER);
		if (!marked && r >= 0 && repo_exists(s))
			report(&m, DECREE_FSCK_REPAIRED, path,
			       "the missing marker was written again");
	} else if ((r = repo_odb(&m.db, s, true)) == 0) {
		r = check_all(&m);
	}
	marker_release(&m);
	if (r < 0)
		return r;
	if (m.problems)
		return decree_error_set(DECREE_ECORRUPT,
					o->flags & DECREE_FSCK_REPAIR
						? "%zu problem(s) remain"
						: "%zu problem(s) found",
					m.problems);
	return 0;
}

int decree_fsck(decree_store *s, decree_fsck_cb cb, void *payload)
{
	decree_fsck_options o = DECREE_FSCK_OPTIONS_INIT;
	o.cb = cb;
	o.payload = payload;
	return decree_fsck_ext(s, &o);
}
