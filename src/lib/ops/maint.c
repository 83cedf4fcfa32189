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
#include "decree/maint.h"
#include "util/alloc.h"
#include "store/record.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/oidset.h"
#include "store/oplog.h"
#include "store/repo.h"
#include "store/tree.h"
#include "txn/txn.h"

#include <dirent.h>

typedef struct {
	decree_store *s;
	odb *db;
	oidset marks;
	decree_fsck_cb cb; /* fsck only */
	void *payload;
	size_t problems;
	bool fsck;
} marker;

static void report(marker *m, decree_fsck_problem kind, const char *what,
		   const char *detail)
{
	m->problems++;
	if (m->cb)
		m->cb(m->payload, kind, what, detail);
}

static void problem(marker *m, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Damage (DECREE_FSCK_DAMAGED), described by fmt. */
static void problem(marker *m, const char *what, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(m, DECREE_FSCK_DAMAGED, what, msg);
}

static int mark_tree(marker *m, const oid *id);

struct tree_walk {
	marker *m;
	int r;
};

static int mark_entry(void *payload, const char *name, uint32_t mode,
		      uint64_t size, const oid *id)
{
	struct tree_walk *tw = payload;
	(void)name;
	(void)size;
	if (mode == MODE_SKIP)
		return 0;
	if (mode == MODE_DIR)
		return mark_tree(tw->m, id);
	if (oidset_add(&tw->m->marks, id, NULL) < 0)
		return -1;
	if (tw->m->fsck && !odb_has(tw->m->db, id)) {
		char hex[SHA256_HEXLEN + 1];
		oid_to_hex(hex, id);
		problem(tw->m, hex, "missing blob (referenced by a tree)");
	}
	return 0;
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
		if (!m->fsck) /* never sweep on a damaged store */
			return decree_error_set(
				DECREE_ECORRUPT,
				"tree %s is missing or damaged; nothing was deleted",
				hex);
		problem(m, hex, "missing or damaged tree");
		error_clear();
		return 0;
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
	if (m->fsck && !odb_has(m->db, id)) {
		char hex[SHA256_HEXLEN + 1];
		oid_to_hex(hex, id);
		problem(m, hex, "missing object (referenced by %s)", what);
	}
	return 0;
}

static int mark_changes(marker *m, const txn_change *c, size_t n,
			const char *what)
{
	int r;
	for (size_t i = 0; i < n; i++) {
		if (c[i].has_old && (r = mark_id(m, &c[i].old_id, what)) < 0)
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

static int mark_root(marker *m, const char *rootdir)
{
	char path[PATH_MAX + 80];
	DIR *d;
	struct dirent *de;
	oplog l = OPLOG_INIT;
	int r = 0;

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
				if (!m->fsck)
					break;
				problem(m, file, "%s", error_last());
				error_clear();
				r = 0;
				continue;
			}
			r = mark_tree(m, &rec.tree);
			record_release(&rec);
		}
		closedir(d);
	}
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
		r = mark_changes(m, l.undo[i].changes, l.undo[i].n,
				 "the undo history");
	for (size_t i = 0; r == 0 && i < l.nredo; i++)
		r = mark_changes(m, l.redo[i].changes, l.redo[i].n,
				 "the redo history");
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

static int mark_all(marker *m)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int r = 0;

	snprintf(path, sizeof(path), "%s/roots", m->s->dir);
	if (!(d = opendir(path)))
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot open '%s'", path);
	while (r == 0 && (de = readdir(d)) != NULL) {
		char rootdir[PATH_MAX + 80];
		if (de->d_name[0] == '.')
			continue;
		snprintf(rootdir, sizeof(rootdir), "%s/%s", path, de->d_name);
		r = mark_root(m, rootdir);
	}
	closedir(d);
	return r;
}

static void drop_statcaches(decree_store *s)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/roots", s->dir);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d)) != NULL) {
		char file[PATH_MAX + 300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/statcache", path,
			 de->d_name);
		unlink(file);
		snprintf(file, sizeof(file), "%s/%s/statcache.delta", path,
			 de->d_name);
		unlink(file);
	}
	closedir(d);
}

/* Remove temp files of atomic writes that a killed process left in `dir`
 * (".<name>.tmp-<random>", see fs_write_atomic_at).  Under the store lock
 * no writer is live, so every such file is garbage. */
static void sweep_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char file[PATH_MAX + 300];
		if (de->d_name[0] != '.' || !strstr(de->d_name, ".tmp-"))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		unlink(file);
	}
	closedir(d);
}

static void sweep_store_temps(decree_store *s)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;

	sweep_temps(s->dir);
	snprintf(path, sizeof(path), "%s/roots", s->dir);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX + 300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		sweep_temps(sub);
		snprintf(sub, sizeof(sub), "%s/%s/checkpoints", path,
			 de->d_name);
		sweep_temps(sub);
	}
	closedir(d);
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
				  o->rollback ? TXN_ROLLBACK_DAMAGED : 0)) < 0)
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
	memset(&m, 0, sizeof(m));
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	m.s = s;
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
	}
	st->objects_kept = m.marks.count;
done:
	oidset_release(&m.marks);
	repo_unlock(s);
	return r;
}

struct obj_check {
	marker *m;
	size_t bad;
};

static int check_object(void *payload, const oid *id, int type,
			uint64_t raw_len, const char *pack)
{
	struct obj_check *c = payload;
	buf data = BUF_INIT;
	int r = odb_read(&data, NULL, c->m->db, id);
	(void)raw_len;
	if (r == DECREE_ECORRUPT || r == DECREE_ENOTFOUND) {
		char hex[SHA256_HEXLEN + 1];
		oid_to_hex(hex, id);
		problem(c->m, hex, "%s (pack %s)", error_last(), pack);
		error_clear();
		r = 0;
	} else if (r == 0 && type != ODB_BLOB && type != ODB_TREE) {
		char hex[SHA256_HEXLEN + 1];
		oid_to_hex(hex, id);
		problem(c->m, hex, "unknown object type %d", type);
	}
	buf_release(&data);
	return r;
}

static void index_damage(void *payload, const char *what, const char *msg)
{
	problem(payload, what, "%s", msg);
}

int decree_fsck(decree_store *s, decree_fsck_cb cb, void *payload)
{
	marker m;
	struct obj_check oc;
	int r;

	memset(&m, 0, sizeof(m));
	m.s = s;
	m.cb = cb;
	m.payload = payload;
	m.fsck = true;
	if (!repo_exists(s)) {
		/* nothing to check is not "store ok": say what is there */
		struct stat st;
		if (stat(s->dir, &st) < 0)
			return decree_error_set(DECREE_ENOTFOUND,
						"no decree store at '%s'",
						s->dir);
		return decree_error_set(DECREE_ENOTFOUND,
					"'%s' is not a decree store (it has "
					"no DECREE-STORE marker)",
					s->dir);
	}
	if ((r = repo_odb(&m.db, s, true)) < 0) {
		if (r != DECREE_ECORRUPT)
			return r;
		problem(&m, s->dir, "%s", error_last());
		return decree_error_set(DECREE_ECORRUPT, "store is damaged");
	}
	odb_verify_indexes(m.db, index_damage, &m);
	oc.m = &m;
	oc.bad = 0;
	if ((r = odb_foreach(m.db, check_object, &oc)) < 0)
		goto done;
	r = mark_all(&m);
done:
	oidset_release(&m.marks);
	if (r < 0)
		return r;
	if (m.problems)
		return decree_error_set(DECREE_ECORRUPT, "%zu problem(s) found",
					m.problems);
	return 0;
}
