/*
 * checkpoint.c - create, list, resolve, show, compare, prune and drop
 * checkpoints (decree/checkpoint.h).
 *
 * A checkpoint = stored objects (blobs + trees) + one record.  The record
 * is written last, atomically, after the pack holding every object it
 * needs is durable; so a crash leaves either no checkpoint or a complete
 * one (an orphan pack at worst, removed by gc).
 *
 * One checkpoint per (session, message): creating it again returns the
 * existing id, which makes "checkpoint before each user message" safe to
 * retry.
 */
#include "util/common.h"
#include "ops/checkpoint.h"
#include "store/record.h"
#include "scan/worktree.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/repo.h"
#include "scan/scan.h"
#include "scan/statcache.h"
#include "store/tree.h"
#include "txn/txn.h"

/* Merge packs under 8 MiB once there are more than 16 (one per checkpoint
 * otherwise; each costs an open and a lookup). */
#define REPACK_MAX_PACKS   16
#define REPACK_SMALL_BYTES (8u << 20)

/* --- scanning and writing ---------------------------------------------------
 */

int checkpoint_read_path(buf *out, int rootfd, const char *path, uint32_t mode)
{
	struct stat st;
	int fd, r;

	buf_clear(out);
	if (mode == MODE_LINK) {
		const char *base;
		char target[PATH_MAX + 1];
		ssize_t n;
		int dfd;
		if ((r = fs_open_parent(&dfd, &base, rootfd, path, false)) <
		    0) {
			if (r == DECREE_ENOTFOUND || r == DECREE_EINVALID) {
				error_clear();
				return DECREE_ENOTFOUND;
			}
			return r;
		}
		n = readlinkat(dfd, base, target, sizeof(target) - 1);
		close(dfd);
		if (n < 0)
			return errno == ENOENT || errno == EINVAL
				       ? DECREE_ENOTFOUND
				       : decree_error_os(
						 "cannot read link '%s'", path);
		return buf_put(out, target, (size_t)n);
	}
	fd = fs_open_beneath(rootfd, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
			       ? DECREE_ENOTFOUND
			       : decree_error_os("cannot open '%s'", path);
	if (fstat(fd, &st) < 0) {
		r = decree_error_os("cannot stat '%s'", path);
	} else if (!S_ISREG(st.st_mode)) {
		r = DECREE_ENOTFOUND;
	} else {
		r = fs_read_fd(fd, out, path);
	}
	close(fd);
	return r;
}

/*
 * The stat cache vouched for the ids of the entries marked `cached`, so
 * their bytes were not read and the writer never saw them.  When the
 * store is not known intact (odb_all_trusted), each such id must have an
 * intact copy; one that has not (its copy is damaged or gone) is stored
 * again from the tree, or the checkpoint would name bytes it cannot give
 * back.
 */
static int store_uncached(decree_store *s, odb_writer *w, snap *cur)
{
	buf data = BUF_INIT;
	odb *db;
	int r;

	if ((r = repo_odb(&db, s, false)) < 0)
		return r;
	if (odb_all_trusted(db))
		return 0;
	for (size_t i = 0; i < cur->n; i++) {
		snap_entry *e = &cur->v[i];
		char hex[SHA256_HEXLEN + 1];
		oid now;
		if (!e->cached || !snap_entry_is_stored(e))
			continue;
		if ((r = odb_check(db, &e->id)) < 0)
			goto done;
		if (r > 0)
			continue;
		if (mode_is_file(e->mode) && e->size >= ODB_STREAM_MIN) {
			/* a big file: streamed (scan_capture_path), never
			 * read whole */
			snap_entry got;
			memset(&got, 0, sizeof(got));
			r = scan_capture_path(&got, s->rootfd, e->path, w);
			if (r == 0 && oid_cmp(&got.id, &e->id)) {
				e->id = got.id;
				e->size = got.size;
				e->cached = 0;
			}
			if (r == 0)
				continue;
			if (r != DECREE_ENOTFOUND)
				goto done;
			error_clear();
			oid_to_hex(hex, &e->id);
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s ('%s') is damaged or missing, and "
				"'%s' vanished before it could be stored again",
				hex, e->path, e->path);
			goto done;
		}
		r = checkpoint_read_path(&data, s->rootfd, e->path, e->mode);
		if (r == DECREE_ENOTFOUND) {
			oid_to_hex(hex, &e->id);
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s ('%s') is damaged or missing, and "
				"'%s' vanished before it could be stored again",
				hex, e->path, e->path);
		}
		if (r < 0)
			goto done;
		sha256_buf(&now, data.ptr, data.len);
		if (oid_cmp(&now, &e->id)) { /* changed meanwhile: take it */
			e->id = now;
			e->size = data.len;
			e->cached = 0;
		}
		if ((r = odb_writer_add(w, ODB_BLOB, data.ptr, data.len, &now,
					NULL)) < 0)
			goto done;
	}
	r = 0;
done:
	buf_release(&data);
	return r;
}

int checkpoint_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		     odb_writer *w, snap *cur, const char *session,
		     const char *message, const char *label)
{
	oid root;
	int r;

	if ((r = store_uncached(s, w, cur)) < 0 ||
	    (r = tree_write(&root, w, cur)) < 0 ||
	    (r = odb_writer_commit(w)) < 0)
		return r;
	return record_save(id_out, s, &root, cur, session, message, label);
}

/* --- public API -------------------------------------------------------------
 */

int decree_checkpoint_create(char id_out[DECREE_ID_HEXLEN + 1], bool *created,
			     decree_store *s,
			     const decree_checkpoint_create_options *o)
{
	decree_checkpoint_create_options def =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	const char *session;
	odb_writer *w = NULL;
	snap cur = SNAP_INIT;
	statcache *cache = NULL;
	odb *db;
	int r;

	if (created)
		*created = false;
	if (!o)
		o = &def;
	if (o->version != DECREE_CHECKPOINT_CREATE_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid checkpoint options");
	session = o->session && *o->session ? o->session
					    : RECORD_DEFAULT_SESSION;
	if (strchr(session, ':') || strchr(session, '\n'))
		return decree_error_set(
			DECREE_EINVALID,
			"session name '%s' must not contain ':' or newlines",
			session);
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	if (o->message) {
		record *v;
		size_t n;
		if ((r = record_load_all(&v, &n, s)) < 0)
			goto done;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(v[i].session, session) && v[i].message &&
			    !strcmp(v[i].message, o->message)) {
				memcpy(id_out, v[i].info.id,
				       DECREE_ID_HEXLEN + 1);
				record_free_all(v, n);
				goto done;
			}
		}
		record_free_all(v, n);
	}
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0)
		goto done;
	if ((r = worktree_scan(&cur, s, w, &cache, NULL, false)) < 0)
		goto done;
	if ((r = checkpoint_write(id_out, s, w, &cur, session, o->message,
				  o->label)) < 0)
		goto done;
	if (created)
		*created = true;
	/* The checkpoint is complete; a stale cache or a missed repack only
	 * costs speed. */
	if (worktree_save_statcache(s, &cur, cache) < 0)
		error_clear();
	cache = NULL;
	if (odb_repack_small(db, REPACK_MAX_PACKS, REPACK_SMALL_BYTES) < 0)
		error_clear();
	{
		/* what was just scanned is that tree: keep it for the show or
		 * diff that often follows (the pipeline's manifest and diff) */
		record rec;
		if (record_resolve(&rec, s, id_out) == 0) {
			for (size_t i = 0; i < cur.n; i++) {
				/* stat data is not part of a tree */
				snap_entry *e = &cur.v[i];
				e->mtime_ns = e->ctime_ns = 0;
				e->ino = e->dev = 0;
				e->cached = 0;
			}
			repo_tree_cache_put(s, &cur, &rec.tree);
			record_release(&rec);
		} else {
			error_clear();
		}
	}
done:
	statcache_free(cache);
	odb_writer_free(w);
	snap_release(&cur);
	repo_unlock(s);
	return r;
}

struct decree_checkpoint_list {
	record *v;
	size_t n;
};

/* Tree id of the working tree now (nothing stored). */
static int worktree_tree(oid *out, decree_store *s)
{
	snap cur = SNAP_INIT;
	int r = worktree_scan(&cur, s, NULL, NULL, NULL, false);
	if (r == 0)
		r = tree_write(out, NULL, &cur);
	snap_release(&cur);
	return r;
}

int decree_checkpoint_list_get(decree_checkpoint_list **out, decree_store *s,
			       const char *session, unsigned flags)
{
	decree_checkpoint_list *l;
	oid now;
	bool have_now = false;
	size_t k = 0;
	int r;

	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	if ((r = record_load_all(&l->v, &l->n, s)) < 0)
		goto fail;
	for (size_t i = 0; i < l->n; i++) {
		if (session && strcmp(l->v[i].session, session)) {
			record_release(&l->v[i]);
			continue;
		}
		l->v[k++] = l->v[i];
	}
	l->n = k;
	if (flags & DECREE_LIST_HAS_CHANGES) {
		for (size_t i = 0; i < l->n; i++) {
			size_t j;
			for (j = i + 1; j < l->n; j++)
				if (!strcmp(l->v[j].session, l->v[i].session))
					break;
			if (j < l->n) {
				l->v[i].info.has_changes =
					oid_cmp(&l->v[i].tree, &l->v[j].tree) !=
					0;
				continue;
			}
			if (!have_now) {
				if ((r = worktree_tree(&now, s)) < 0)
					goto fail;
				have_now = true;
			}
			l->v[i].info.has_changes =
				oid_cmp(&l->v[i].tree, &now) != 0;
		}
	}
	*out = l;
	return 0;
fail:
	decree_checkpoint_list_free(l);
	return r;
}

size_t decree_checkpoint_damaged_count(const decree_store *s)
{
	return s ? s->ndamaged : 0;
}

const decree_damaged_record *decree_checkpoint_damaged_at(const decree_store *s,
							  size_t i)
{
	return s && i < s->ndamaged ? &s->damaged[i].pub : NULL;
}

size_t decree_checkpoint_list_count(const decree_checkpoint_list *l)
{
	return l ? l->n : 0;
}

const decree_checkpoint_info *
decree_checkpoint_list_at(const decree_checkpoint_list *l, size_t i)
{
	return l && i < l->n ? &l->v[i].info : NULL;
}

void decree_checkpoint_list_free(decree_checkpoint_list *l)
{
	if (!l)
		return;
	record_free_all(l->v, l->n);
	decree_free(l);
}

int decree_checkpoint_resolve(char id_out[DECREE_ID_HEXLEN + 1],
			      decree_store *s, const char *ref)
{
	record rec;
	int r = record_resolve(&rec, s, ref);
	if (r == 0) {
		memcpy(id_out, rec.info.id, DECREE_ID_HEXLEN + 1);
		record_release(&rec);
	}
	return r;
}

/* --- show -------------------------------------------------------------------
 */

struct decree_snapshot {
	snap s;
	record rec;
};

int decree_checkpoint_show(decree_snapshot **out,
			   decree_checkpoint_info *info_out, decree_store *s,
			   const char *ref)
{
	decree_snapshot *sn;
	const snap *tree;
	int r;

	*out = NULL;
	if (!(sn = decree_calloc(1, sizeof(*sn))))
		return -1;
	if ((r = record_resolve(&sn->rec, s, ref)) < 0 ||
	    (r = repo_tree(&tree, s, &sn->rec.tree)) < 0 ||
	    (r = snap_copy(&sn->s, tree)) < 0) {
		decree_snapshot_free(sn);
		return r;
	}
	if (info_out)
		*info_out = sn->rec.info;
	*out = sn;
	return 0;
}

size_t decree_snapshot_count(const decree_snapshot *sn)
{
	return sn ? sn->s.n : 0;
}

void decree_snapshot_at(decree_file_info *out, const decree_snapshot *sn,
			size_t i)
{
	const snap_entry *e = &sn->s.v[i];
	memset(out, 0, sizeof(*out));
	out->path = e->path;
	out->size = e->size;
	if (mode_is_file(e->mode)) {
		out->mode = e->mode & MODE_PERM;
	} else if (e->mode == MODE_LINK) {
		out->mode = 0120000;
	} else {
		out->mode = 0;
		out->skip_reason = "too large";
	}
	if (e->mode != MODE_SKIP)
		oid_to_hex(out->sha256, &e->id);
}

void decree_snapshot_free(decree_snapshot *sn)
{
	if (!sn)
		return;
	snap_release(&sn->s);
	record_release(&sn->rec);
	decree_free(sn);
}

/* --- compare ----------------------------------------------------------------
 */

struct cmp_ctx {
	decree_change_cb cb;
	void *payload;
};

static int cmp_one(void *payload, const char *path, const snap_entry *a,
		   const snap_entry *b)
{
	struct cmp_ctx *c = payload;
	char st = !a ? 'A' : !b ? 'D' : 'M';
	return c->cb(c->payload, path, st);
}

int decree_checkpoint_compare(decree_store *s, const char *ref,
			      const char *ref2, decree_change_cb cb,
			      void *payload)
{
	record a, b;
	snap sa = SNAP_INIT, sb = SNAP_INIT;
	struct cmp_ctx c = { cb, payload };
	odb *db;
	int r;

	memset(&b, 0, sizeof(b));
	if ((r = record_resolve(&a, s, ref)) < 0)
		return r;
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = tree_read(&sa, db, &a.tree)) < 0)
		goto done;
	if (ref2) {
		if ((r = record_resolve(&b, s, ref2)) < 0 ||
		    (r = tree_read(&sb, db, &b.tree)) < 0)
			goto done;
	} else if ((r = worktree_scan(&sb, s, NULL, NULL, &sa, false)) < 0) {
		goto done;
	}
	r = snap_diff(&sa, &sb, cmp_one, &c);
done:
	snap_release(&sa);
	snap_release(&sb);
	record_release(&a);
	record_release(&b);
	return r;
}

/* --- prune and drop
 * -----------------------------------------------------------
 * Both remove all they remove at once (record_drop_commit): a failure
 * before that changes nothing and fails; after it the removal has happened
 * and the call succeeds, with a warning if deleting the files fails (the
 * next recovery finishes it).
 */

/* A damaged record the last listing noted that belongs to `session`
 * (NULL: every one, also those whose session cannot be read). */
static bool damaged_in(const repo_damaged_record *d, const char *session)
{
	return d->pub.damaged &&
	       (!session || (d->session && !strcmp(d->session, session)));
}

/* Add the damaged records of `session`: one that can never be restored
 * goes too. */
static int add_damaged(buf *ids, size_t *count, decree_store *s,
		       const char *session)
{
	for (size_t i = 0; i < s->ndamaged; i++) {
		const repo_damaged_record *d = &s->damaged[i];
		oid id;
		if (!damaged_in(d, session))
			continue;
		if (oid_from_hex(&id, d->pub.id) < 0 ||
		    buf_put(ids, id.b, SHA256_LEN) < 0)
			return -1;
		(*count)++;
	}
	return 0;
}

/* Remove the `count` records in `ids` (and with RECORD_DROP_ALL the
 * history and stat cache): all or nothing.  The damaged records of
 * `session` among them are marked removed (for the caller's report). */
static int remove_records(decree_store *s, const buf *ids, size_t count,
			  unsigned flags, const char *session)
{
	bool done;
	int r;

	if ((r = record_drop_commit(s, (const oid *)(const void *)ids->ptr,
				    count, flags)) < 0)
		return r;
	for (size_t i = 0; i < s->ndamaged; i++)
		if (damaged_in(&s->damaged[i], session))
			s->damaged[i].pub.removed = true;
	if (record_drop_finish(&done, s) < 0) {
		warning_set(DECREE_EUNFINISHED,
			    "the checkpoints were removed, but deleting their "
			    "files failed (%s); the next decree command "
			    "finishes that",
			    error_last());
		error_clear();
	}
	return 0;
}

int decree_checkpoint_prune(size_t *removed, decree_store *s,
			    const char *session, long keep,
			    long older_than_days)
{
	record *v = NULL;
	size_t n = 0, count = 0;
	int64_t now = fs_now_ns();
	buf ids = BUF_INIT;
	int r;

	*removed = 0;
	if (keep <= 0 && older_than_days < 0)
		return decree_error_set(
			DECREE_EINVALID,
			"prune needs keep > 0 or older_than_days >= 0");
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	if ((r = record_load_all(&v, &n, s)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		size_t newer = 0;
		bool last = true, drop = false;
		oid id;
		if (session && strcmp(v[i].session, session))
			continue;
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(v[j].session, v[i].session)) {
				newer++;
				last = false;
			}
		if (last)
			continue; /* never the newest of a session */
		if (keep > 0 && newer >= (size_t)keep)
			drop = true;
		if (older_than_days >= 0 &&
		    now - v[i].info.created_ns >
			    (int64_t)older_than_days * 86400 * 1000000000LL)
			drop = true;
		if (!drop)
			continue;
		if ((r = oid_from_hex(&id, v[i].info.id)) < 0 ||
		    (r = buf_put(&ids, id.b, SHA256_LEN)) < 0)
			goto done;
		count++;
	}
	/* a damaged record can never be restored: pruning takes it too */
	if ((r = add_damaged(&ids, &count, s, session)) < 0)
		goto done;
	if (count && (r = remove_records(s, &ids, count, 0, session)) == 0)
		*removed = count;
done:
	buf_release(&ids);
	record_free_all(v, n);
	repo_unlock(s);
	return r;
}

int decree_checkpoint_drop(size_t *removed, decree_store *s,
			   const char *session)
{
	record *v = NULL;
	size_t n = 0, count = 0;
	buf ids = BUF_INIT;
	int r;

	*removed = 0;
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	if ((r = record_load_all(&v, &n, s)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		oid id;
		if (session && strcmp(v[i].session, session))
			continue;
		if ((r = oid_from_hex(&id, v[i].info.id)) < 0 ||
		    (r = buf_put(&ids, id.b, SHA256_LEN)) < 0)
			goto done;
		count++;
	}
	if ((r = add_damaged(&ids, &count, s, session)) < 0)
		goto done;
	/* every session: the history and the stat cache go too */
	if ((count || !session) &&
	    (r = remove_records(s, &ids, count, session ? 0 : RECORD_DROP_ALL,
				session)) == 0)
		*removed = count;
done:
	buf_release(&ids);
	record_free_all(v, n);
	repo_unlock(s);
	return r;
}
